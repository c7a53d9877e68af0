//! Mixed-precision iterative refinement: the f64 side of a solve whose factor is kept in a
//! lower precision (`T`, in practice `f32`).
//!
//! With `A` in `f64` on the device and a factor of `A` rounded to `T`, a solve of
//! `A x = b` repeats: `r = b - A x` in `f64` ([`residual`], which also records the largest
//! `|r|` and `|b|` of each system), `r` scaled by its largest entry and rounded to `T`
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
/// Rows of a block row that [`residual`] handles per pass (one per thread).
const ROWS: usize = REFINE_THREADS as usize;
/// Shared memory of [`residual`] in bytes: the transposed products of a pass and one
/// slot per warp for the two maxima.
pub const RESIDUAL_SHARED_BYTES: usize = (ROWS + 2 * WARPS) * 8;
const WARPS: usize = REFINE_THREADS as usize / 32;

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

/// `r = b - A x` in `f64` for one block row and one column (grid `x` = `systems *
/// nblocks`, `y` = `nrhs`), with the largest `|r|` and `|b|` of the system into `norms`.
/// The products with `D_b` and `A[b, b-1]` run one row per thread (coalesced column
/// reads); the one with `A[b, b+1] = A[b+1, b]^T` one row per warp (its row is a column of
/// the stored block).
///
/// # Safety
/// [`REFINE_THREADS`] threads, [`RESIDUAL_SHARED_BYTES`] of dynamic shared memory; the
/// matrix and vector arrays cover the grid; `norms` zeroed before the launch.
pub unsafe fn residual<T: Real>(args: &RefineArgs<T>) {
    let a = *args;
    let (n, ld, nb) = (a.n as usize, a.ld as usize, a.nblocks as usize);
    let (s, b) = (block_idx_x() as usize / nb, block_idx_x() as usize % nb);
    let col = block_idx_y() as usize;
    let tid = thread_idx_x() as usize;
    let (warp_id, lane) = (tid / 32, lane_id() as usize);
    let part = shared::dynamic_shared::<f64>();
    let v = s * a.per_system() + col * a.dim();
    // SAFETY (all pointer arithmetic below): blocks and vector entries of system `s`,
    // block row `b`, inside the arrays (grid contract).
    let block = |base: *const f64, j: usize| unsafe { base.add(j * ld * n) };
    let diag = block(a.diag, s * nb + b);
    let lower = (b > 0).then(|| block(a.sub, s * (nb - 1) + b - 1));
    let upper = (b + 1 < nb).then(|| block(a.sub, s * (nb - 1) + b));
    let x_at = |blk: usize, i: usize| unsafe { *a.x.add(v + blk * n + i) };
    let (mut r_max, mut b_max) = (0.0f64, 0.0f64);
    for r0 in (0..n).step_by(ROWS) {
        let rows = ROWS.min(n - r0);
        if a.first == 0 {
            if let Some(up) = upper {
                // Row j of A[b, b+1] is column j of A[b+1, b].
                let mut j = warp_id;
                while j < rows {
                    let mut sum = 0.0f64;
                    let mut c = lane;
                    while c < n {
                        sum = unsafe { *up.add((r0 + j) * ld + c) }.mul_add(x_at(b + 1, c), sum);
                        c += 32;
                    }
                    let sum = warp::warp_sum(sum);
                    if lane == 0 {
                        unsafe { *part.add(j) = sum };
                    }
                    j += WARPS;
                }
            }
            sync_threads();
        }
        if tid < rows {
            let j = r0 + tid;
            let bj = unsafe { *a.b.add(v + b * n + j) };
            let mut acc = bj;
            if a.first == 0 {
                if upper.is_some() {
                    acc -= unsafe { *part.add(tid) };
                }
                for c in 0..n {
                    acc = (-unsafe { *diag.add(c * ld + j) }).mul_add(x_at(b, c), acc);
                }
                if let Some(lo) = lower {
                    for c in 0..n {
                        acc = (-unsafe { *lo.add(c * ld + j) }).mul_add(x_at(b - 1, c), acc);
                    }
                }
            }
            unsafe { *a.r.add(v + b * n + j) = acc };
            r_max = max_abs(r_max, acc);
            b_max = max_abs(b_max, bj);
        }
        sync_threads();
    }
    // Block maxima, then one atomic per quantity.
    let (r_max, b_max) = (warp::warp_max(r_max), warp::warp_max(b_max));
    let slots = unsafe { part.add(ROWS) };
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

/// The largest `|r|` of system `s` recorded by [`residual`] (0 for none).
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
/// The vectors cover the grid; [`residual`] of this `r` has completed.
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
