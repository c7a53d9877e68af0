//! The diagonal-tile step of the tiled engine: `D_kk = L_kk L_kk^T` and `W = L_kk^-1` of
//! one `64 x 64` tile per node.
//!
//! # Why this shape
//! The previous kernel factored 16-column panels whose `16 x 16` diagonal block one warp
//! swept column by column while the other seven waited at a barrier: ~51 µs per launch
//! under `ncu`, half of the warps' cycles stalled on the barrier, and the largest kernel
//! of the top levels (`docs/perf-notes.md`, entries 12 and 16). Now:
//! - **Factor**: the blocked panel factor's 8-column strips
//!   ([`crate::tile::strip8::factor_strips`]): `8 x 8` diagonal tiles in one warp's
//!   registers with the next one factored ahead by the warp that updates it, the strip
//!   rows one thread each, the trailing update in `8 x 8` tensor-core tiles. Two barriers
//!   per strip; the serial part per strip is the look-ahead warp's update and its
//!   8-column factor in each lane's registers.
//! - **Inverse**, by `8 x 8` blocks with no barrier inside: warp `j` first inverts the
//!   diagonal block `L_jj` (forward substitution, one lane per column), then, after one
//!   barrier, computes its block column `W_ij = -W_ii (sum_{k=j}^{i-1} L_ik W_kj)` for
//!   `i = j + 1 ..` as two tensor-core tile products each (the sum over `k` is one product
//!   over `(i - j) 8` columns, because `W`'s block column `j` is stored contiguously).
//!
//! Rows and columns from `w` (the tile's valid width) to 64 are an identity block: they
//! factor to the identity and touch nothing else.

use super::factor::{FLAG_BYTES, WIDE_THREADS, shared_areas};
use super::{TILE, TiledArgs, rem_div};
use crate::level::{InfoCode, info_key};
use crate::tile::strip8::{KB, factor_strips, tile_minus_abt};
use blocktri_prims::index::opaque_u32;
use blocktri_prims::{Real, atomic, sync_threads, sync_warp, thread_idx_x};

/// Row stride of the tile (`P[r][c] = A(r, c)`) and of the inverse (stored transposed,
/// `WT[c][r] = W(r, c)`): `≡ 4 (mod 16)` for conflict-free tensor-core fragment reads.
pub(crate) const S: usize = TILE + 4;
/// Row stride of the row-major copies of the inverse's diagonal blocks.
pub(crate) const SD: usize = KB + 4;
/// Diagonal `8 x 8` blocks per tile: one per warp in the inverse.
const BLOCKS: usize = TILE / KB;
const _: () = assert!(BLOCKS * 32 == WIDE_THREADS as usize, "the inverse maps one warp per block column");

/// Shared memory of [`potrf`]: the flag words, the tile, its inverse (transposed), the
/// inverse's diagonal blocks and `1 / L_jj`.
pub const fn potrf_shared_bytes(elem_bytes: usize) -> usize {
    FLAG_BYTES + (2 * TILE * S + TILE * SD + TILE) * elem_bytes
}

/// Step `k` of every node's panel factorization, part 2: factors the diagonal tile
/// `D[k, k] = L_kk L_kk^T` (failure: `info_key(level, NotPositiveDefinite, b)`), stores
/// `L_kk` (zero above the diagonal) and its inverse `dinv[b][k]` (zero outside the tile's
/// `w x w` and above the diagonal). Grid `x` = `systems * nodes`.
///
/// # Safety
/// [`WIDE_THREADS`] threads, [`potrf_shared_bytes`]; [`super::factor::update`] of step `k`
/// (for `k >= 1`) has completed (stream order).
pub unsafe fn potrf<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let nd = a.node();
    let (flag, sh) = shared_areas::<T>();
    if unsafe { a.failed(nd.s, flag) } {
        return;
    }
    let (n, ld) = (a.n(), a.ld());
    let r0 = a.step as usize * TILE;
    let w = TILE.min(n - r0);
    let (tid, threads) = (thread_idx_x() as usize, WIDE_THREADS as usize);
    // SAFETY (all shared pointer arithmetic below): offsets inside potrf_shared_bytes; the
    // flag area holds four words, `failed` used the first and ended with a barrier.
    let bad = unsafe { flag.add(1) };
    let (p, wt) = (sh, unsafe { sh.add(TILE * S) });
    let (wd, rinv) = unsafe { (sh.add(2 * TILE * S), sh.add(2 * TILE * S + TILE * SD)) };
    // SAFETY: the tile lies inside block b (r0 + w <= n).
    let d = unsafe { a.block(a.diag, nd.s, nd.b).add(r0 * ld + r0) };

    // The lower triangle of the tile, row-major (zero above, identity beyond w). All of a
    // thread's loads are issued before the first store (a loop that stores after each load
    // waits one global round trip per element). Columns of the global tile are contiguous:
    // consecutive threads take consecutive rows.
    const PER_THREAD: usize = TILE * TILE / WIDE_THREADS as usize;
    let vals: [T; PER_THREAD] = core::array::from_fn(|i| {
        let (r, c) = rem_div(tid + i * threads, TILE);
        match (r < w && c < w, c <= r) {
            (true, true) => unsafe { *d.add(c * ld + r) },
            (false, _) if r == c => T::ONE,
            _ => T::ZERO,
        }
    });
    for (i, &v) in vals.iter().enumerate() {
        let (r, c) = rem_div(tid + i * threads, TILE);
        unsafe { *p.add(r * S + c) = v };
    }
    sync_threads();

    // The size passes through `opaque_u32` so that the strip loop stays a loop: unrolled,
    // its eight strips were 6400 SASS instructions, each executed once per launch, and
    // instruction-cache misses took a quarter of the cycles (`ncu`: Stall No Instruction).
    let size = opaque_u32(TILE as u32) as usize;
    // SAFETY: the tile, `rinv` and `bad` in shared memory as sized; every thread is here.
    unsafe { factor_strips(p, S, size, [None, None], rinv, bad) };
    if unsafe { core::ptr::read_volatile(bad) } != 0 {
        // Every thread read the same word after factor_strips' closing barrier.
        if tid == 0 {
            let key = info_key(a.level, InfoCode::NotPositiveDefinite, nd.b as u32);
            unsafe { atomic::atomic_min_u64(a.info.add(nd.s), key) };
        }
        return;
    }

    // SAFETY: every block of the tile and of the inverse lies inside the shared areas.
    unsafe { invert_factor(p, wt, wd, rinv) };
    sync_threads();

    // SAFETY: dinv tile `step` of block b; the factor tile as above.
    let inv = unsafe { a.dinv_tile(nd.s, nd.b, a.step as usize) };
    let pairs: [(T, T); PER_THREAD] = core::array::from_fn(|i| {
        let (r, c) = rem_div(tid + i * threads, TILE);
        if c <= r { unsafe { (*p.add(r * S + c), *wt.add(c * S + r)) } } else { (T::ZERO, T::ZERO) }
    });
    for (i, &(l, x)) in pairs.iter().enumerate() {
        let (r, c) = rem_div(tid + i * threads, TILE);
        let inside = r < w && c < w;
        unsafe {
            if inside {
                *d.add(c * ld + r) = l;
            }
            *inv.add(c * TILE + r) = if inside { x } else { T::ZERO };
        }
    }
}

/// `W = L^-1` of the factored tile `p` (lower triangle, row-major) into `wt` (transposed:
/// `wt[c S + r] = W(r, c)`, on and below the diagonal blocks), by 8 warps; `wd` receives
/// the diagonal blocks `W_jj` row-major and `rinv[j]` holds `1 / L_jj`.
///
/// # Safety
/// All threads of the 8-warp block call it together, after a barrier that ended the
/// factorization; the areas are in shared memory as sized by [`potrf_shared_bytes`].
#[inline(always)]
pub(crate) unsafe fn invert_factor<T: Real>(p: *const T, wt: *mut T, wd: *mut T, rinv: *const T) {
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    let j8 = warp * KB;
    // W_jj: lane c < 8 solves L_jj x = e_c by forward substitution (x_i = 0 for i < c).
    if lane < KB {
        let c = lane;
        let mut x = [T::ZERO; KB];
        for i in 0..KB {
            let l_row = unsafe { p.add((j8 + i) * S + j8) };
            let mut v = if i == c { T::ONE } else { T::ZERO };
            for k in 0..KB {
                // Rectangular with a condition, as in strip8: `x` stays in registers.
                if k < i {
                    v = (-unsafe { *l_row.add(k) }).mul_add(x[k], v);
                }
            }
            x[i] = v * unsafe { *rinv.add(j8 + i) };
        }
        for (i, &xi) in x.iter().enumerate() {
            unsafe {
                *wt.add((j8 + c) * S + j8 + i) = xi;
                *wd.add((j8 + i) * SD + c) = xi;
            }
        }
    }
    // Block column j reads the diagonal blocks W_ii of the other warps.
    sync_threads();
    for i in warp + 1..BLOCKS {
        let i8 = i * KB;
        // X = -sum_k L_ik W_kj over k = j..i: one product over the contiguous columns
        // j8..i8 of L's block row i and of W's (transposed) block column j.
        let x = unsafe { tile_minus_abt([T::ZERO; 2], p.add(i8 * S + j8), S, wt.add(j8 * S + j8), S, i8 - j8) };
        // X^T into W's slot for block (i, j), then W_ij = W_ii X = -(0 - W_ii X).
        let slot = |u: usize| unsafe { wt.add((j8 + 2 * t + u) * S + i8 + g) };
        for (u, &v) in x.iter().enumerate() {
            unsafe { *slot(u) = v };
        }
        sync_warp();
        let y = unsafe { tile_minus_abt([T::ZERO; 2], wd.add(i8 * SD), SD, wt.add(j8 * S + i8), S, KB) };
        sync_warp();
        for (u, &v) in y.iter().enumerate() {
            unsafe { *slot(u) = -v };
        }
        sync_warp();
    }
}
