//! The arrowhead's border on the device (`blocktri::arrow` on the GPU): the border `B`
//! (`a x d` per system, `d = N n`) stays where it was uploaded, and only `a x a` or `a x k`
//! numbers go back to the host. With the chain factored as `T = P^T L L^T P`, the device
//! keeps `W = L^-1 P B^T` (the forward sweep of `B^T`): `B T^-1 B^T = W^T W`, and a solve
//! needs `B T^-1 b = W^T y` with `y = L^-1 P b` between its two sweeps.
//!
//! - [`border_columns`]: `B^T` as `a` right-hand-side columns of the chain solver (whose
//!   forward sweep then forms `W`); it also finds the first non-finite border value;
//! - [`border_products`]: `W^T Z` for `k` columns `Z` (`W^T W` for the Schur complement of
//!   the tip, `W^T y` in a solve) as partial sums over runs of [`ARROW_CHUNK_ROWS`] rows, in
//!   `f64`; the host adds the runs in order, so the sums are the same bits run to run;
//! - [`border_correct`]: `y -= W x_C` before the backward sweep.
//!
//! Layouts: `B` of system `s` as the host holds it (block `B_i` is `a x n` column-major at
//! `(s N + i) a n`), i.e. `a x d` column-major, entry `(j, q)` at `s a d + q a + j`;
//! vectors (and `W`) as the solver's right-hand sides, `k` columns of `d` rows per system;
//! `x_C` (`tip`) `a x k` column-major per system.

use blocktri_prims::{Real, atomic, block_idx_x, block_idx_y, global_idx_x, lane_id, shared, sync_threads, thread_idx_x, warp};

/// Threads of every arrowhead kernel block.
pub const ARROW_THREADS: u32 = 256;
/// Rows of one partial sum of [`border_products`] (one block's run).
pub const ARROW_CHUNK_ROWS: usize = 2048;
/// Entries of `W^T Z` one [`border_products`] block sums (grid `y` covers `a k` of them).
pub const ARROW_PAIRS: usize = 8;
const WARPS: usize = ARROW_THREADS as usize / 32;
/// Shared memory of [`border_products`] in bytes: one partial sum per warp and entry.
pub const ARROW_PRODUCT_SHARED_BYTES: usize = WARPS * ARROW_PAIRS * 8;

/// Arguments of the arrowhead kernels (device addresses; unused ones may be null).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ArrowArgs<T> {
    /// The border `B`: per system `a x d`, column-major (module docs).
    pub border: *const T,
    /// Vectors of `k` columns of `d` rows per system: written by [`border_columns`]
    /// (`k = a`), read by [`border_products`], corrected by [`border_correct`].
    pub columns: *mut T,
    /// `W = L^-1 P B^T`: `a` columns of `d` rows per system.
    pub w: *const T,
    /// `x_C`: `a x k` column-major per system, in `f64`.
    pub tip: *const f64,
    /// Partial sums of `W^T Z`: per system and run of rows, the `a x k` entries
    /// column-major (`(s chunks + chunk) a k + c a + j`).
    pub partials: *mut f64,
    /// One word, zeroed before [`border_columns`]: `u64::MAX - i` for the first (lowest)
    /// index `i` into `border` of a non-finite value, 0 when there is none.
    pub status: *mut u64,
    /// The border's width `a`.
    pub width: u32,
    /// Columns `k` of `columns`.
    pub k: u32,
    /// Rows `d = N n` of a system.
    pub dim: u32,
    /// Systems.
    pub systems: u32,
}

impl<T> ArrowArgs<T> {
    fn sizes(&self) -> (usize, usize, usize, usize) {
        (self.width as usize, self.k as usize, self.dim as usize, self.systems as usize)
    }
}

/// Runs of [`ARROW_CHUNK_ROWS`] rows in a system of `dim` rows (grid `x` of
/// [`border_products`] is `systems` times this).
pub fn arrow_chunks(dim: usize) -> usize {
    dim.div_ceil(ARROW_CHUNK_ROWS).max(1)
}

/// `columns[s][j d + q] = B[s](j, q)`: `B^T` as `a` columns (`k = a`), and the first
/// non-finite border value into `status`. Grid: [`ARROW_THREADS`]-thread blocks covering
/// `systems a d` entries.
///
/// # Safety
/// `border` holds `systems a d` values and `columns` as many (the layouts of the module
/// docs); `status` one word.
pub unsafe fn border_columns<T: Real>(args: &ArrowArgs<T>) {
    let (a, _, d, systems) = args.sizes();
    let i = global_idx_x() as usize;
    if i >= systems * a * d {
        return;
    }
    let (s, j, q) = (i / (a * d), i % (a * d) / d, i % d);
    let from = s * a * d + q * a + j;
    // SAFETY: both indices inside the system's `a d` values (checked above).
    let value = unsafe { *args.border.add(from) };
    unsafe { *args.columns.add(i) = value };
    if !value.to_f64().is_finite() {
        // SAFETY: one word; the largest `MAX - from` is the lowest index.
        unsafe { atomic::atomic_max_u64(args.status, u64::MAX - from as u64) };
    }
}

/// Partial sums of `W^T Z` over runs of rows. Grid: `x` = `systems * arrow_chunks(d)`
/// (system-major), `y` = `ceil(a k / ARROW_PAIRS)`; [`ARROW_THREADS`] threads,
/// [`ARROW_PRODUCT_SHARED_BYTES`] of dynamic shared memory. Block `(x, y)` sums the
/// entries `y ARROW_PAIRS ..` (column-major in `a x k`) over its run, each thread over
/// every `ARROW_THREADS`-th row, the warps' sums added in warp order: the same bits
/// for the same inputs.
///
/// # Safety
/// `w` and `columns` as the module docs (`a` and `k` columns), `partials` holds
/// `systems * arrow_chunks(d) * a * k` values; the launch as stated.
pub unsafe fn border_products<T: Real>(args: &ArrowArgs<T>) {
    let (a, k, d, _) = args.sizes();
    let chunks = arrow_chunks(d);
    let (s, chunk) = (block_idx_x() as usize / chunks, block_idx_x() as usize % chunks);
    let first = block_idx_y() as usize * ARROW_PAIRS;
    let (tid, lane) = (thread_idx_x() as usize, lane_id() as usize);
    let (w, columns) = (unsafe { args.w.add(s * a * d) }, unsafe { args.columns.add(s * k * d) });
    let mut acc = [0.0f64; ARROW_PAIRS];
    let rows = chunk * ARROW_CHUNK_ROWS..d.min((chunk + 1) * ARROW_CHUNK_ROWS);
    let mut q = rows.start + tid;
    while q < rows.end {
        for t in 0..ARROW_PAIRS {
            let p = first + t;
            if p < a * k {
                let (j, c) = (p % a, p / a);
                // SAFETY: row q < d, j < a, c < k: inside the system's values.
                let (wv, z) = unsafe { (*w.add(j * d + q), *columns.add(c * d + q)) };
                acc[t] = wv.to_f64().mul_add(z.to_f64(), acc[t]);
            }
        }
        q += ARROW_THREADS as usize;
    }
    let part = shared::dynamic_shared::<f64>();
    let warp_id = tid / 32;
    for t in 0..ARROW_PAIRS {
        let sum = warp::warp_sum(acc[t]);
        if lane == 0 {
            // SAFETY: WARPS * ARROW_PAIRS slots of dynamic shared memory.
            unsafe { *part.add(warp_id * ARROW_PAIRS + t) = sum };
        }
    }
    sync_threads();
    if tid < ARROW_PAIRS && first + tid < a * k {
        let mut sum = 0.0f64;
        for w in 0..WARPS {
            sum += unsafe { *part.add(w * ARROW_PAIRS + tid) };
        }
        // SAFETY: inside `partials` (block x = s chunks + chunk, entry < a k).
        unsafe { *args.partials.add(block_idx_x() as usize * a * k + first + tid) = sum };
    }
}

/// `columns -= W x_C`: every row of every column of every system, in `f64`. Grid:
/// [`ARROW_THREADS`]-thread blocks covering `systems k d` entries.
///
/// # Safety
/// `columns` holds `systems k d` values, `w` `systems a d`, `tip` `systems a k`.
pub unsafe fn border_correct<T: Real>(args: &ArrowArgs<T>) {
    let (a, k, d, systems) = args.sizes();
    let i = global_idx_x() as usize;
    if i >= systems * k * d {
        return;
    }
    let (s, c, q) = (i / (k * d), i % (k * d) / d, i % d);
    // SAFETY (all reads): inside system s's values of each array.
    let (w, tip) = unsafe { (args.w.add(s * a * d + q), args.tip.add((s * k + c) * a)) };
    let mut x = unsafe { *args.columns.add(i) }.to_f64();
    for j in 0..a {
        x = (-unsafe { *w.add(j * d) }.to_f64()).mul_add(unsafe { *tip.add(j) }, x);
    }
    unsafe { *args.columns.add(i) = T::from_f64(x) };
}
