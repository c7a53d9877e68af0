//! Mixed-precision iterative refinement: the f64 side of a solve whose factor is kept in a
//! lower precision (`T`, in practice `f32`).
//!
//! With `A` in `f64` on the device and a factor of `A` rounded to `T`, a solve of
//! `A x = b` repeats: `r = b - A x` in `f64` ([`residual`] and [`residual_sum`], which also
//! records the largest `|r|` and `|b|` of each system), `r` scaled by its largest entry and rounded to `T`
//! ([`demote_rhs`]), `d = A^-1 r` with the `T` factor, `x += scale * d` ([`promote`]).
//! Each pass gains about as many digits as the low-precision factor carries (fewer for
//! an ill-conditioned `A`), until the `f64` residual stops the gain. The scaling keeps
//! the small residuals of later passes far above `T`'s underflow. [`demote_matrix`]
//! copies `A` into the low-precision factorization's input (and, for the `f64` fallback,
//! into an `f64` one).
//!
//! Vectors are laid out as the solver's right-hand sides: per system `nrhs` columns of
//! `nblocks * n` rows.

use crate::level::INFO_OK;
use crate::tiled::rem_div;
use blocktri_prims::{Real, atomic, block_idx_x, block_idx_y, lane_id, shared, sync_threads, thread_idx_x, warp};

/// Threads of every refinement kernel block.
pub const REFINE_THREADS: u32 = 256;
/// Most rows of a block row that [`residual`] handles per pass (`32 R` for its `R` rows
/// per lane, at most [`ROWS_PER_LANE`]).
const ROWS: usize = REFINE_THREADS as usize;
const WARPS: usize = REFINE_THREADS as usize / 32;
/// Rows of a pass each lane of [`residual`] owns at most: `lane + 32 m` for `m < R`.
pub const ROWS_PER_LANE: usize = ROWS / 32;
/// The residual's rows per lane for block size `n`: [`ROWS_PER_LANE`], or half as many
/// (128-row passes) for `n <= 128`, where a 256-row pass leaves most lanes on clamped rows
/// (n = 128, N = 2048: the mixed solve -9 %; n = 256 the same either way, n = 512 +3 %
/// with 128-row passes; `docs/perf-notes.md`, entry 86).
pub const fn residual_rows_per_lane(n: usize) -> usize {
    if n <= 128 { ROWS_PER_LANE / 2 } else { ROWS_PER_LANE }
}
/// Dynamic shared memory of [`residual`] and [`residual_sum`] in bytes: one partial sum
/// per warp and row of a pass ([`residual_sum`] uses the first `2 WARPS` words for the
/// two maxima).
pub const RESIDUAL_SHARED_BYTES: usize = WARPS * ROWS * 8;

/// Arguments of the refinement kernels (device addresses; unused ones may be null).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RefineArgs<T> {
    /// `A`'s diagonal blocks in `f64` (`systems * nblocks` blocks of `ld x n`).
    pub diag: *const f64,
    /// `A`'s sub-diagonal blocks `A[b+1, b]` in `f64` (`systems * (nblocks - 1)` blocks).
    pub sub: *const f64,
    /// Leading dimension of the `f64` blocks.
    pub ld: u32,
    /// Block size.
    pub n: u32,
    /// Blocks per system.
    pub nblocks: u32,
    /// Systems.
    pub systems: u32,
    /// Right-hand-side columns.
    pub nrhs: u32,
    /// 1 on the first pass: `x` is taken as zero (and not read), so `r = b`.
    pub first: u32,
    /// Right-hand sides (`f64`).
    pub b: *const f64,
    /// Solution (`f64`).
    pub x: *mut f64,
    /// Residual (`f64`).
    pub r: *mut f64,
    /// `A[b, b-1] x_{b-1}` at block row `b` (`f64`, laid out as the vectors), written by
    /// [`residual`]'s thread block of row `b - 1`, which reads that block anyway.
    pub lower_part: *mut f64,
    /// `A[b, b+1] x_{b+1}` at block row `b` (`f64`), written by [`residual`].
    pub upper_part: *mut f64,
    /// Per system: the bits of the largest `|r|` and of the largest `|b|` (non-negative
    /// `f64`s compare like their bits, so an integer maximum combines them). Zeroed
    /// before each [`residual`].
    pub norms: *mut u64,
    /// The low-precision vector: the scaled residual ([`demote_rhs`]), then the correction
    /// the low-precision solve wrote over it ([`promote`]).
    pub low: *mut T,
    /// Low-precision diagonal and sub-diagonal blocks ([`demote_matrix`]).
    pub low_diag: *mut T,
    pub low_sub: *mut T,
    /// Leading dimension of the low-precision blocks.
    pub low_ld: u32,
    /// Per system: the low-precision solve's status word; a system whose solve reported a
    /// failure is left unchanged by [`promote`].
    pub low_info: *const u64,
}

impl<T> RefineArgs<T> {
    fn dim(&self) -> usize {
        self.nblocks as usize * self.n as usize
    }
    /// Entries of one system's vector.
    fn per_system(&self) -> usize {
        self.dim() * self.nrhs as usize
    }
}

/// The `f64` matrix into the low-precision input blocks (rows `0..n` of every column;
/// the padding rows are not read by the factorizations). Grid `x`: one block per matrix
/// block, the `systems * nblocks` diagonal ones first, then the `systems * (nblocks - 1)`
/// sub-diagonal ones. Values beyond `T`'s range become infinite, which the factorization
/// then reports as non-finite input.
///
/// # Safety
/// [`REFINE_THREADS`] threads; the block arrays hold what the grid covers at their
/// leading dimensions.
pub unsafe fn demote_matrix<T: Real>(args: &RefineArgs<T>) {
    let a = *args;
    let (n, ld, low_ld) = (a.n as usize, a.ld as usize, a.low_ld as usize);
    let diag_blocks = a.systems as usize * a.nblocks as usize;
    let bx = block_idx_x() as usize;
    // SAFETY: block `bx` (or `bx - diag_blocks`) is inside its array (grid contract).
    let (src, dst) = unsafe {
        if bx < diag_blocks {
            (a.diag.add(bx * ld * n), a.low_diag.add(bx * low_ld * n))
        } else {
            let j = bx - diag_blocks;
            (a.sub.add(j * ld * n), a.low_sub.add(j * low_ld * n))
        }
    };
    let mut e = thread_idx_x() as usize;
    while e < n * n {
        let (r, c) = rem_div(e, n);
        // SAFETY: (r, c) inside the block.
        unsafe { *dst.add(c * low_ld + r) = T::from_f64(*src.add(c * ld + r)) };
        e += REFINE_THREADS as usize;
    }
}

/// The first half of `r = b - A x` in `f64`, for one block row `b` and one column (grid
/// `x` = `systems * nblocks`, `y` = `nrhs`): `r_b = b_b - D_b x_b`, and with
/// `L = A[b+1, b]` (when row `b + 1` exists) `upper_part_b = L^T x_{b+1}` and
/// `lower_part_{b+1} = L x_b`. So every stored block is read once: `D_b` and `L` by this
/// thread block, in one pass over their columns. [`residual_sum`] then subtracts the two
/// parts. With `first` set, `r = b` (`x` is not read) and nothing else is written.
///
/// A pass covers `32 R` rows (256, or 128 at small `n`: [`residual_rows_per_lane`]): lane
/// `l` of each warp owns rows `l + 32 m`, warp `w` the columns `w + 8 j`; the warps'
/// partial row sums meet in shared memory, and the column sums of `L^T x_{b+1}` are warp
/// sums, each column's kept by one lane.
///
/// # Safety
/// [`REFINE_THREADS`] threads, [`RESIDUAL_SHARED_BYTES`] of dynamic shared memory,
/// `R <= `[`ROWS_PER_LANE`]; the matrix and vector arrays (parts included) cover the grid.
pub unsafe fn residual<T: Real, const R: usize>(args: &RefineArgs<T>) {
    let rows_per_pass = 32 * R;
    let a = *args;
    let (n, ld, nb) = (a.n as usize, a.ld as usize, a.nblocks as usize);
    let (s, b) = (block_idx_x() as usize / nb, block_idx_x() as usize % nb);
    let col = block_idx_y() as usize;
    let tid = thread_idx_x() as usize;
    let (warp_id, lane) = (tid / 32, lane_id() as usize);
    let part = shared::dynamic_shared::<f64>();
    let v = s * a.per_system() + col * a.dim();
    // SAFETY (all pointer arithmetic below): blocks and vector entries of system `s`,
    // block rows `b` and `b + 1` (when it exists), inside the arrays (grid contract).
    let row_b = v + b * n;
    if a.first != 0 {
        let mut i = tid;
        while i < n {
            unsafe { *a.r.add(row_b + i) = *a.b.add(row_b + i) };
            i += REFINE_THREADS as usize;
        }
        return;
    }
    let block = |base: *const f64, j: usize| unsafe { base.add(j * ld * n) };
    let diag = block(a.diag, s * nb + b);
    let lower = (b + 1 < nb).then(|| block(a.sub, s * (nb - 1) + b));
    let x_at = |i: usize| unsafe { *a.x.add(row_b + i) };
    for r0 in (0..n).step_by(rows_per_pass) {
        let rows = rows_per_pass.min(n - r0);
        // A lane's rows past the block's last read that last row instead: the loads stay
        // unconditional (so they issue back to back), and what such rows sum is never
        // stored; their `x_{b+1}` weight is zero, so the column sums do not see them.
        let row = |m: usize| (r0 + lane + 32 * m).min(n - 1);
        let valid = |m: usize| r0 + lane + 32 * m < n;
        let (mut d, mut t) = ([0.0f64; R], [0.0f64; R]);
        let mut c = warp_id;
        match lower {
            Some(l) => {
                let mut x_next = [0.0f64; R];
                for (m, xn) in x_next.iter_mut().enumerate() {
                    if valid(m) {
                        *xn = x_at(n + row(m));
                    }
                }
                while c < n {
                    let xc = x_at(c);
                    let mut up = 0.0f64;
                    for m in 0..R {
                        let i = row(m);
                        let (dv, lv) = unsafe { (*diag.add(c * ld + i), *l.add(c * ld + i)) };
                        d[m] = dv.mul_add(xc, d[m]);
                        t[m] = lv.mul_add(xc, t[m]);
                        up = lv.mul_add(x_next[m], up);
                    }
                    let up = warp::warp_sum(up);
                    if lane == 0 {
                        // Column `c` is always this lane's: its sum over the passes.
                        unsafe {
                            let slot = a.upper_part.add(row_b + c);
                            *slot = if r0 == 0 { up } else { *slot + up };
                        }
                    }
                    c += WARPS;
                }
            }
            None => {
                while c < n {
                    let xc = x_at(c);
                    for (m, dm) in d.iter_mut().enumerate() {
                        *dm = unsafe { *diag.add(c * ld + row(m)) }.mul_add(xc, *dm);
                    }
                    c += WARPS;
                }
            }
        }
        // Row sums over the warps: `D_b x_b` into r, then `L x_b` into the next row's part.
        let reduce = |partial: &[f64; R]| -> f64 {
            for (m, &p) in partial.iter().enumerate() {
                unsafe { *part.add(warp_id * ROWS + lane + 32 * m) = p };
            }
            sync_threads();
            let mut sum = 0.0f64;
            if tid < rows {
                for w in 0..WARPS {
                    sum += unsafe { *part.add(w * ROWS + tid) };
                }
            }
            sync_threads();
            sum
        };
        let dx = reduce(&d);
        if tid < rows {
            unsafe { *a.r.add(row_b + r0 + tid) = *a.b.add(row_b + r0 + tid) - dx };
        }
        if lower.is_some() {
            let lx = reduce(&t);
            if tid < rows {
                unsafe { *a.lower_part.add(row_b + n + r0 + tid) = lx };
            }
        }
    }
}

/// The second half of `r = b - A x` (grid as [`residual`], after it): `r_b -=
/// lower_part_b + upper_part_b` (the parts that exist), and the largest `|r|` and `|b|` of
/// the system into `norms` (one atomic maximum per quantity and thread block). With
/// `first` set, `r` is left as it is (`= b`).
///
/// # Safety
/// As [`residual`]; `norms` zeroed before the launch.
pub unsafe fn residual_sum<T: Real>(args: &RefineArgs<T>) {
    let a = *args;
    let (n, nb) = (a.n as usize, a.nblocks as usize);
    let (s, b) = (block_idx_x() as usize / nb, block_idx_x() as usize % nb);
    let col = block_idx_y() as usize;
    let tid = thread_idx_x() as usize;
    let (warp_id, lane) = (tid / 32, lane_id() as usize);
    let slots = shared::dynamic_shared::<f64>();
    let row_b = s * a.per_system() + col * a.dim() + b * n;
    let (mut r_max, mut b_max) = (0.0f64, 0.0f64);
    let mut i = tid;
    while i < n {
        // SAFETY: entries of block row `b` of system `s`, column `col` (grid contract).
        unsafe {
            let mut acc = *a.r.add(row_b + i);
            if a.first == 0 {
                let lower = if b > 0 { *a.lower_part.add(row_b + i) } else { 0.0 };
                let upper = if b + 1 < nb { *a.upper_part.add(row_b + i) } else { 0.0 };
                acc -= lower + upper;
                *a.r.add(row_b + i) = acc;
            }
            r_max = max_abs(r_max, acc);
            b_max = max_abs(b_max, *a.b.add(row_b + i));
        }
        i += REFINE_THREADS as usize;
    }
    // Block maxima, then one atomic per quantity.
    let (r_max, b_max) = (warp::warp_max(r_max), warp::warp_max(b_max));
    if lane == 0 {
        unsafe {
            *slots.add(warp_id) = r_max;
            *slots.add(WARPS + warp_id) = b_max;
        }
    }
    sync_threads();
    if tid == 0 {
        let (mut r_all, mut b_all) = (0.0f64, 0.0f64);
        for w in 0..WARPS {
            unsafe {
                r_all = max_abs(r_all, *slots.add(w));
                b_all = max_abs(b_all, *slots.add(WARPS + w));
            }
        }
        // SAFETY: two words per system.
        unsafe {
            atomic::atomic_max_u64(a.norms.add(2 * s), r_all.to_bits());
            atomic::atomic_max_u64(a.norms.add(2 * s + 1), b_all.to_bits());
        }
    }
}

/// `max(m, |v|)`; a NaN `v` gives NaN bits above every finite value's, so the host sees it.
#[inline(always)]
fn max_abs(m: f64, v: f64) -> f64 {
    let v = v.abs();
    if v > m || v.is_nan() { v } else { m }
}

/// The largest `|r|` of system `s` recorded by [`residual_sum`] (0 for none).
///
/// # Safety
/// `norms` holds two words per system.
#[inline(always)]
unsafe fn residual_scale(norms: *const u64, s: usize) -> f64 {
    f64::from_bits(unsafe { *norms.add(2 * s) })
}

/// `low = r / max|r|` per system, rounded to `T` (zero where the residual is zero). Grid:
/// [`REFINE_THREADS`]-thread blocks covering `systems * nrhs * nblocks * n` entries.
///
/// # Safety
/// The vectors cover the grid; [`residual_sum`] of this `r` has completed.
pub unsafe fn demote_rhs<T: Real>(args: &RefineArgs<T>) {
    let a = *args;
    let i = blocktri_prims::global_idx_x() as usize;
    if i >= a.systems as usize * a.per_system() {
        return;
    }
    let scale = unsafe { residual_scale(a.norms, i / a.per_system()) };
    let r = unsafe { *a.r.add(i) };
    let scaled = if scale > 0.0 && scale.is_finite() { r / scale } else { 0.0 };
    unsafe { *a.low.add(i) = T::from_f64(scaled) };
}

/// `x += max|r| * low` per system (`x = max|r| * low` on the first pass), for systems whose
/// low-precision solve succeeded. Grid as [`demote_rhs`].
///
/// # Safety
/// As [`demote_rhs`]; the low-precision solve has completed and `low_info` holds its
/// status words.
pub unsafe fn promote<T: Real>(args: &RefineArgs<T>) {
    let a = *args;
    let i = blocktri_prims::global_idx_x() as usize;
    if i >= a.systems as usize * a.per_system() {
        return;
    }
    let s = i / a.per_system();
    if unsafe { *a.low_info.add(s) } != INFO_OK {
        return;
    }
    let scale = unsafe { residual_scale(a.norms, s) };
    let d = scale * unsafe { *a.low.add(i) }.to_f64();
    unsafe {
        let x = a.x.add(i);
        *x = if a.first != 0 { d } else { *x + d };
    }
}
