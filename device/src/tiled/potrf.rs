//! The diagonal-tile step of the tiled engine: `D_kk = L_kk L_kk^T` and `W = L_kk^-1` of
//! one `64 x 64` tile per node.
//!
//! # Why this shape
//! The first kernel factored 16-column panels, one warp sweeping each `16 x 16` diagonal
//! block while seven waited (~51 µs under `ncu`, entries 12 and 16 of
//! `docs/perf-notes.md`). The second ran the blocked panel factor's 8-column strips
//! ([`crate::tile::strip8::factor_strips`], right-looking, two block barriers per strip,
//! each strip's rows solved by substitution) and then inverted the factor in a phase of
//! its own: ~13.6 µs per tile, 40 % of the warps' cycles at barriers (entry 45). Now one
//! pass, left-looking by `8 x 8` tiles, makes both ([`factor_invert_tile`]):
//! - warp `w` owns tile row `w`. In phase `k` the tiles of column `k - 1` below the
//!   diagonal are solved (`X = (A - sum X X^T) W^T`, two tensor-core tile products, the
//!   inverse `W` of the diagonal tile coming from the phase before), warp `k` forms its
//!   diagonal tile and factors and inverts it in each lane's registers, and the warps
//!   that are done fill in the inverse's row `k - 1`;
//! - one block barrier per phase, and the only serial work in a phase is warp `k`'s:
//!   three short products and the `8 x 8` factor.
//!
//! Rows and columns from `w` (the tile's valid width) to 64 are an identity block: they
//! factor to the identity and touch nothing else.

use super::factor::{FLAG_BYTES, WIDE_THREADS, shared_areas};
use super::{TILE, TiledArgs, rem_div};
use crate::level::{InfoCode, info_key};
use crate::tile::strip8::{KB, factor_invert_diag_tile, inverse_column, store_inverse_column, tile_minus_abt};
use blocktri_prims::index::opaque_u32;
use blocktri_prims::{Real, atomic, lane_id, sync_threads, sync_warp, thread_idx_x};

/// Row stride of the tile (`P[r][c] = A(r, c)`) and of the inverse (stored transposed,
/// `WT[c][r] = W(r, c)`): `≡ 4 (mod 16)` for conflict-free tensor-core fragment reads.
pub(crate) const S: usize = TILE + 4;
/// Row stride of the row-major copies of the inverse's diagonal blocks.
pub(crate) const SD: usize = KB + 4;
/// Diagonal `8 x 8` blocks per tile: one per warp in the inverse.
const BLOCKS: usize = TILE / KB;
const _: () = assert!(BLOCKS * 32 == WIDE_THREADS as usize, "the inverse maps one warp per block column");

/// Shared memory of [`potrf`]: the flag words, the tile, its inverse (transposed) and the
/// inverse's diagonal blocks.
pub const fn potrf_shared_bytes(elem_bytes: usize) -> usize {
    FLAG_BYTES + (2 * TILE * S + TILE * SD) * elem_bytes
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
    let (n, ld) = (a.n(), a.ld());
    let r0 = a.step as usize * TILE;
    let w = TILE.min(n - r0);
    let (tid, threads) = (thread_idx_x() as usize, WIDE_THREADS as usize);
    // SAFETY (all shared pointer arithmetic below): offsets inside potrf_shared_bytes; the
    // flag area holds four words, `failed` uses the first and ends with a barrier.
    let bad = unsafe { flag.add(1) };
    let (p, wt) = (sh, unsafe { sh.add(TILE * S) });
    let wd = unsafe { sh.add(2 * TILE * S) };
    // SAFETY: the tile lies inside block b (r0 + w <= n).
    let d = unsafe { a.block(a.diag, nd.s, nd.b).add(r0 * ld + r0) };

    // The lower triangle of the tile, row-major (zero above, identity beyond w). All of a
    // thread's loads are issued before the first store (a loop that stores after each load
    // waits one global round trip per element), and before the status check, whose load
    // would otherwise be a round trip of its own ahead of them. Columns of the global
    // tile are contiguous: consecutive threads take consecutive rows.
    const PER_THREAD: usize = TILE * TILE / WIDE_THREADS as usize;
    let vals: [T; PER_THREAD] = core::array::from_fn(|i| {
        let (r, c) = rem_div(tid + i * threads, TILE);
        match (r < w && c < w, c <= r) {
            (true, true) => unsafe { *d.add(c * ld + r) },
            (false, _) if r == c => T::ONE,
            _ => T::ZERO,
        }
    });
    // SAFETY: the flag area is this block's shared memory; every thread is here.
    if unsafe { a.failed(nd.s, flag) } {
        return;
    }
    for (i, &v) in vals.iter().enumerate() {
        let (r, c) = rem_div(tid + i * threads, TILE);
        unsafe { *p.add(r * S + c) = v };
    }
    sync_threads();

    // SAFETY: the tile, its inverse's areas and `bad` in shared memory as sized; every
    // thread is here, after the barrier that ended the stores.
    unsafe { factor_invert_tile(p, wt, wd, bad) };
    if unsafe { core::ptr::read_volatile(bad) } != 0 {
        // Every thread read the same word after factor_invert_tile's closing barrier.
        if tid == 0 {
            let key = info_key(a.level, InfoCode::NotPositiveDefinite, nd.b as u32);
            unsafe { atomic::atomic_min_u64(a.info.add(nd.s), key) };
        }
        return;
    }

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

/// Factors the `64 x 64` tile `p` (row stride [`S`], lower triangle valid; an identity
/// block beyond the valid width) in place, `L L^T`, and writes `W = L^-1` transposed into
/// `wt` (`wt[c S + r] = W(r, c)`, on and below the diagonal blocks) and its diagonal
/// blocks row-major into `wd` (row stride [`SD`]). `*failed` becomes nonzero when a pivot
/// is not positive and finite (the factor is then garbage). By 8 warps, left-looking by
/// `8 x 8` tiles; ends with a barrier.
///
/// Phase `k` (`0..=8`), after phase `k - 1`'s barrier, with `c = k - 1`:
/// - warps `w > c` (`w < 8`): `L_wc = (A_wc - sum_{i<c} L_wi L_ci^T) W_cc^T`, the sum one
///   product over the `8 c` finished columns (they lie side by side in row tile `w`);
/// - warp `k` then: `D = A_kk - sum_{i<k} L_ki L_ki^T`, factored and inverted in every
///   lane's registers (`factor_invert_diag_tile`);
/// - warps `j < c`: `W_cj = -W_cc sum_{m=j}^{c-1} L_cm W_mj` (rows `< c` of `W` are done).
///
/// The block barrier per phase is the only synchronization between warps; what a phase
/// waits for is warp `k`'s three short products and its `8 x 8` factor.
///
/// # Safety
/// All threads of the 8-warp block call it together, after a barrier that ended the
/// tile's stores; the areas are in shared memory as sized by [`potrf_shared_bytes`].
#[inline(always)]
pub(crate) unsafe fn factor_invert_tile<T: Real>(p: *mut T, wt: *mut T, wd: *mut T, failed: *mut u32) {
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    // Lane (g, t)'s two entries of an 8 x 8 tile at (r0, c0) of `p`.
    let cell = |r0: usize, c0: usize| unsafe { p.add((r0 + g) * S + c0 + 2 * t) };
    // The bound passes through `opaque_u32` so that the phase loop stays a loop (its
    // body holds the unrolled 8 x 8 factor; unrolled phases would not fit the
    // instruction cache, as with factor_strips).
    let phases = opaque_u32(BLOCKS as u32 + 1) as usize;
    // The next phase's diagonal warp prepares its sums one phase ahead, so that its own
    // phase holds only `8 x 8 x 8` products: `ahead_x = A_{w,w-1} - sum_{i<w-2} L_wi
    // L_{w-1,i}^T` and `ahead_d = A_ww - sum_{i<w-1} L_wi L_wi^T`.
    let (mut ahead_x, mut ahead_d) = ([T::ZERO; 2], [T::ZERO; 2]);
    for k in 0..phases {
        let c8 = k.saturating_sub(1) * KB;
        if warp == k {
            let k8 = k * KB;
            // SAFETY (this block): tiles inside the shared tile. The warp owns row tile k;
            // L_{c,c-1} and W_cc are finished (earlier phases).
            if k > 0 {
                let (at, diag) = (cell(k8, c8), cell(k8, k8));
                unsafe {
                    let x = match k {
                        1 => ahead_x,
                        _ => tile_minus_abt(ahead_x, p.add(k8 * S + c8 - KB), S, p.add(c8 * S + c8 - KB), S, KB),
                    };
                    solve_tile(at, x, p.add(k8 * S + c8), wd.add(c8 * SD));
                    let d = tile_minus_abt(ahead_d, p.add(k8 * S + c8), S, p.add(k8 * S + c8), S, KB);
                    *diag = d[0];
                    *diag.add(1) = d[1];
                }
                sync_warp();
            }
            // SAFETY: the diagonal tile and the inverse's slots of block k are this warp's.
            let ok = unsafe { factor_invert_diag_tile(p, S, k8, wt, wd, SD) };
            if lane == 0 {
                // Phase 0 writes the word first; later warps only ever set it.
                if k == 0 || !ok {
                    unsafe { *failed = u32::from(!ok) };
                }
            }
        } else if warp > k && warp < BLOCKS {
            let w8 = warp * KB;
            if k > 0 {
                // L_wc (c = k - 1) in place of A_wc.
                let at = cell(w8, c8);
                // SAFETY: the warp owns tile (w, c); the tiles it reads were finished in
                // earlier phases.
                unsafe {
                    let x = tile_minus_abt([*at, *at.add(1)], p.add(w8 * S), S, p.add(c8 * S), S, c8);
                    solve_tile(at, x, p.add(w8 * S + c8), wd.add(c8 * SD));
                }
            }
            if warp == k + 1 {
                // SAFETY: as above; row tile w's columns up to k are finished (just now).
                unsafe {
                    let (at, diag) = (cell(w8, k * KB), cell(w8, w8));
                    ahead_x = tile_minus_abt([*at, *at.add(1)], p.add(w8 * S), S, p.add(k * KB * S), S, c8);
                    ahead_d = tile_minus_abt([*diag, *diag.add(1)], p.add(w8 * S), S, p.add(w8 * S), S, k * KB);
                }
            }
        } else if k >= 2 && warp + 1 < k {
            // SAFETY: tile (c, warp) of W is this warp's; rows < c of W and row c of L are
            // finished.
            unsafe { inverse_tile(p, wt, wd, k - 1, warp) };
        }
        sync_threads();
    }
}

/// `L_wc = X W_cc^T` into the tile at `at` (lane `(g, t)`'s two entries, its tile at
/// `tile` with row stride [`S`]), from `x = A_wc - sum_{i<c} L_wi L_ci^T` in the DMMA
/// accumulator layout and `W_cc` row-major at `w` (row stride [`SD`]), by one warp.
/// Ends with a warp barrier.
///
/// # Safety
/// The warp owns the tile; `W_cc` is finished; all 32 lanes call it together.
#[inline(always)]
unsafe fn solve_tile<T: Real>(at: *mut T, x: [T; 2], tile: *const T, w: *const T) {
    unsafe {
        *at = x[0];
        *at.add(1) = x[1];
        sync_warp();
        // (X W^T)[g][j] = sum_m X[g][m] W[j][m]: the A B^T form with B = W's rows.
        let l = tile_minus_abt([T::ZERO; 2], tile, S, w, SD, KB);
        sync_warp();
        *at = -l[0];
        *at.add(1) = -l[1];
    }
    sync_warp();
}

/// `W_ij = -W_ii sum_{m=j}^{i-1} L_im W_mj` (`i > j`, block indices) into `wt`'s slot of
/// block `(i, j)`, by one warp: the sum is one product over the contiguous columns
/// `j..i` of `L`'s block row `i` and of `W`'s (transposed) block column `j`.
///
/// # Safety
/// Rows `..i` of `W`, `W_ii` (in `wd`) and row `i` of `L` are finished; the warp owns
/// the slot; all 32 lanes call it together.
#[inline(always)]
unsafe fn inverse_tile<T: Real>(p: *const T, wt: *mut T, wd: *const T, i: usize, j: usize) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let (i8, j8) = (i * KB, j * KB);
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
    let j8 = warp * KB;
    // W_jj: lane c < 8 solves L_jj x = e_c.
    if lane < KB {
        // SAFETY: L_jj and rinv[j8..j8 + 8] lie inside the shared areas.
        let x = inverse_column(lane, |i, k| unsafe { *p.add((j8 + i) * S + j8 + k) }, |i| unsafe { *rinv.add(j8 + i) });
        // SAFETY: column `lane` of block j is this lane's.
        unsafe { store_inverse_column(&x, lane, j8, (wt, S), (wd, SD)) };
    }
    // Block column j reads the diagonal blocks W_ii of the other warps.
    sync_threads();
    for i in warp + 1..BLOCKS {
        // SAFETY: block column `warp` is this warp's; its rows above i are done.
        unsafe { inverse_tile(p, wt, wd, i, warp) };
    }
}
