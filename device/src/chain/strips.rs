//! The chain factor for `16 < n <= 64`: one thread block per system, each step's panel
//! `[D_b; A[b+1, b]]` factored in 8-column strips with tensor-core tile updates
//! ([`crate::tile::strip8::factor_strips`], the blocked panel factor's routine), and the
//! next diagonal block `D_{b+1} = A_{b+1,b+1} - L_{b+1,b} L_{b+1,b}^T` as DMMA tiles
//! (`16 x 8` on the sm_90 shapes, `8 x 8` on `m8n8k4` on sm_80; FP32 FMAs in `f32`).
//!
//! Why a second block-per-system factor: the generic one ([`super::factor_chain`]) runs its
//! panel column by column (a barrier and a shared load and store per multiply-add) and
//! its product on scalar FMAs; at `n = 64` it took 14 µs per step and lost to nested
//! dissection even where the batch alone fills the GPU (`docs/perf-notes.md`, entries 10
//! and 31). Here a step is two barriers per strip plus five, and the products run on the
//! tensor cores. The storage is the chain's ([`super`]): `diag[b] = L_bb` (upper triangle
//! zero), `right[b] = L_{b+1,b}`, so the chain solves, selected inversion and
//! log-determinant read it unchanged. No interlaced right-hand sides.
//!
//! The panel is row-major with row stride `NP + 4` (conflict-free fragment reads, as in
//! [`crate::level::blocked`]): rows `0..NP` hold `D_b`, rows `NP..2 NP` the coupling.

use crate::level::node::entry_status;
use crate::level::{FactorArgs, INFO_OK, InfoCode, align_elems, info_key};
use crate::team::{Block, Team};
use crate::tile::strip8::{KB, factor_strips, tile_minus_abt, update_tiles16};
use crate::tile::{FastDiv, NO_FAILURE, copy_batched, for_each_index, for_each_rc};
use crate::tiled::potrf::{S, SD, invert_factor};
use blocktri_prims::memory::load_readonly;
use blocktri_prims::mma::has_sm90_dmma;
use blocktri_prims::{Real, atomic, block_idx_x, lane_id, shared};

/// Padded block sizes of [`factor_chain_strips`]: `n` runs with the smallest `>= n`.
pub const CHAIN_STRIP_SIZES: [usize; 2] = [32, 64];

/// The padded size of [`factor_chain_strips`] for block size `n`, if it has one.
pub const fn chain_strip_size(n: usize) -> Option<usize> {
    if n <= CHAIN_STRIP_SIZES[0] {
        Some(CHAIN_STRIP_SIZES[0])
    } else if n <= CHAIN_STRIP_SIZES[1] {
        Some(CHAIN_STRIP_SIZES[1])
    } else {
        None
    }
}

/// Row stride of the shared panel (elements): `≡ 4 (mod 16)`, see the module docs.
const fn stride(np: usize) -> usize {
    np + 4
}

// The inverse reuses the tiled engine's `64 x 64` routine: same row stride, 8 warps.
const _: () = assert!(stride(CHAIN_INVERSE_SIZE) == S && chain_strip_threads(CHAIN_INVERSE_SIZE) == 256);

/// Threads per block of [`factor_chain_strips`] of padded size `np`: one warp per `8 x 8`
/// strip-update tile of a `D` column at `np = 64` (the last warp is the look-ahead's).
pub const fn chain_strip_threads(np: usize) -> u32 {
    if np <= 32 { 128 } else { 256 }
}

/// Padded size from which [`factor_chain_strips`] also writes `W_bb = L_bb^-1` (to `left`,
/// for [`super::solve_forward_chain_inverse`] / [`super::solve_backward_chain_inverse`]): the block is one
/// `64 x 64` tile of the tiled engine's inverse (`invert_factor`). Below, the solves run
/// a lane group per system with the factor's rows in registers and need no inverse.
pub const CHAIN_INVERSE_SIZE: usize = 64;

/// Elements of the inverse's areas in shared memory: `W^T` (stride [`S`]) and its
/// diagonal `8 x 8` blocks (stride [`SD`]).
const fn inverse_elems(np: usize) -> usize {
    if np == CHAIN_INVERSE_SIZE { np * S + np * SD } else { 0 }
}

/// Shared memory of [`factor_chain_strips`] in bytes: the `2 NP x (NP + 4)` panel, at
/// `NP = 64` the inverse's areas, `1 / L_jj`, two status words.
pub const fn factor_chain_strips_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    (align_elems(2 * np * stride(np), elem_bytes) + align_elems(inverse_elems(np), elem_bytes) + align_elems(np, elem_bytes)) * elem_bytes
        + 16
}

/// Factors system `block_idx_x` (grid `x` = systems) along its chain: for `b = 0 .. N - 1`
///
/// 1. `D_b` is in the panel's top (the input block for `b = 0`, else computed by step
///    `b - 1`), its input checked (finite, symmetric within `sym_tol`); the coupling
///    `A[b+1, b]` is loaded below it and checked (finite);
/// 2. `factor_strips` gives `L_bb` and `L_{b+1,b} = A[b+1, b] L_bb^-T`, stored to
///    `diag[b]` and `right[b]`;
/// 3. at `NP = 64`, `W_bb = L_bb^-1` to `left[b]` (zero above the diagonal);
/// 4. `A_{b+1,b+1}` is loaded into the top and checked, then `L_{b+1,b} L_{b+1,b}^T`
///    subtracted from its lower tiles.
///
/// The block writes the system's status word (first [`INFO_OK`], then the key of the first
/// failure on level 0, after which it stops): no reset launch is needed.
///
/// # Safety
/// [`chain_strip_threads`]`(NP)` threads, grid `x` = `args.systems`,
/// [`factor_chain_strips_shared_bytes`]`(NP)` of dynamic shared memory, `args.n <= NP`, `NP`
/// one of [`CHAIN_STRIP_SIZES`], `args.nrhs == 0`; the arrays of [`FactorArgs`] with their
/// documented sizes (`left` is written only at `NP = 64`).
pub unsafe fn factor_chain_strips<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    let team = Block;
    let a = *args;
    let (n, ld, nb) = (a.n as usize, a.ld as usize, a.nblocks as usize);
    let sys = block_idx_x() as usize;
    let st = stride(NP);
    let smem = shared::dynamic_shared::<T>();
    let p = smem;
    // SAFETY (the four pointers): inside the dynamic shared memory as sized above.
    let coupling = unsafe { p.add(NP * st) };
    let wt = unsafe { p.add(align_elems(2 * NP * st, T::BYTES)) };
    let wd = unsafe { wt.add(NP * S) };
    let inv = unsafe { wt.add(align_elems(inverse_elems(NP), T::BYTES)) };
    let status = unsafe { inv.add(align_elems(NP, T::BYTES)) } as *mut u32;
    let failed = unsafe { status.add(1) };
    let info = unsafe { a.info.add(sys) };
    // Strips cover `n` rounded up to 8: the padding is identity in `D` and zero in the
    // coupling, so its pivots are 1, its multipliers 0, and the products leave it alone.
    let nc = n.div_ceil(KB) * KB;
    let tiles = nc / KB;
    let blk = ld * n;
    // SAFETY (the closures' pointers): blocks of system `sys` inside the arrays (caller's
    // contract: `b < nb`, and `b < nb - 1` for `sub`).
    let diag_in = |b: usize| unsafe { a.diag_in.add((sys * nb + b) * blk) };
    let sub = |b: usize| unsafe { a.sub.add((sys * (nb - 1) + b) * blk) };
    let fail = move |code: InfoCode, b: usize| {
        if team.rank() == 0 {
            unsafe { atomic::atomic_min_u64(info, info_key(0, code, b as u32)) };
        }
    };
    // Entry `(r, c)` of a padded input block at `src`: identity (`D`) or zero (coupling).
    let padded = |src: *const T, r: usize, c: usize, identity: bool| {
        if r < n && c < n {
            // SAFETY: inside the `n x n` block.
            unsafe { load_readonly(src.add(c * ld + r)) }
        } else if identity && r == c {
            T::ONE
        } else {
            T::ZERO
        }
    };
    // Loads input diagonal block `b` into the panel's top and records its input problems
    // in `status` (which thread 0 resets first). Contains its barriers. The padding is
    // identity up to `NP` (the inverse covers the whole tile).
    let load_diag = |b: usize| {
        if team.rank() == 0 {
            unsafe { *status = NO_FAILURE };
        }
        let src = diag_in(b);
        copy_batched(team, NP, NP, |r, c| padded(src, r, c, true), |r, c, v| unsafe { *p.add(r * st + c) = v });
        team.sync();
        for_each_rc(team, n, n, |r, c| unsafe {
            let at = |i: usize, j: usize| *p.add(i * st + j);
            let code = entry_status(at(r, c), T::ZERO, T::ZERO, at(c, r), at(r, r), at(c, c), r, c, a.sym_tol);
            if code != u32::MAX {
                atomic::atomic_min_u32(status, code);
            }
        });
        team.sync();
    };

    if team.rank() == 0 {
        unsafe { *info = INFO_OK };
    }
    // The strips write `1 / L_jj` for `j < nc`; the inverse reads the identity's beyond.
    for_each_index(team, NP, |j| {
        if j >= nc {
            unsafe { *inv.add(j) = T::ONE };
        }
    });
    load_diag(0);
    for b in 0..nb {
        let has_next = b + 1 < nb;
        // 1. The coupling, checked; then the step's input verdict.
        if has_next {
            let src = sub(b);
            copy_batched(
                team,
                nc,
                nc,
                |r, c| padded(src, r, c, false),
                |r, c, v| unsafe {
                    *coupling.add(r * st + c) = v;
                    if !v.is_finite() {
                        atomic::atomic_min_u32(status, InfoCode::NonFinite as u32);
                    }
                },
            );
        }
        team.sync();
        let input_status = unsafe { *status };
        if input_status != NO_FAILURE {
            fail(InfoCode::from_u32(input_status).unwrap_or(InfoCode::NonFinite), b);
            return;
        }

        // 2. Factor the panel (ends with a barrier), store L_bb and L_{b+1,b}.
        // SAFETY: the panel, `inv` and `failed` in shared memory as sized; every thread
        // is here.
        unsafe { factor_strips(p, st, n, [has_next.then_some(NP), None], inv, failed) };
        if unsafe { core::ptr::read_volatile(failed) } != 0 {
            fail(InfoCode::NotPositiveDefinite, b);
            return;
        }
        let (d_dst, r_dst) = unsafe { (a.diag.add((sys * nb + b) * blk), a.right.add((sys * nb + b) * blk)) };
        for_each_rc(team, n, n, |r, c| unsafe {
            *d_dst.add(c * ld + r) = if r >= c { *p.add(r * st + c) } else { T::ZERO };
            if has_next {
                *r_dst.add(c * ld + r) = *coupling.add(r * st + c);
            }
        });
        if NP == CHAIN_INVERSE_SIZE {
            // W_bb = L_bb^-1 to `left[b]` (zero above the diagonal), for the solves.
            // SAFETY: the factored tile (stride S = NP + 4) and the inverse's areas in shared
            // memory; 8 warps, after factor_strips' closing barrier.
            unsafe { invert_factor(p, wt, wd, inv) };
            team.sync();
            let w_dst = unsafe { a.left.add((sys * nb + b) * blk) };
            for_each_rc(team, n, n, |r, c| unsafe { *w_dst.add(c * ld + r) = if r >= c { *wt.add(c * S + r) } else { T::ZERO } });
        }
        if !has_next {
            break;
        }

        // 3. D_{b+1}: the input (once every thread has stored its part of L_bb from the
        //    top), minus L_{b+1,b} L_{b+1,b}^T on and below the diagonal tiles.
        team.sync();
        load_diag(b + 1);
        // SAFETY: the panel as sized; each tile has one warp, the coupling is only read.
        if T::BYTES == 8 && has_sm90_dmma() {
            unsafe { subtract_coupling_gram16::<T, 2>(p, coupling, st, tiles) };
        } else {
            unsafe { subtract_coupling_gram(p, coupling, st, tiles) };
        }
        team.sync(); // the coupling is read by every tile before the next one is loaded
    }
}

/// `D -= K K^T` on the `8 x 8` tiles on and below the diagonal of the `tiles x tiles` tile
/// grid, one warp per tile (`D` at `d`, `K` at `k`, both row-major with stride `st`, `K`
/// with `8 tiles` columns). No barrier.
///
/// # Safety
/// Both in shared memory with the rows and columns described; every thread of the block
/// calls it; nothing else writes `D` or `K` meanwhile.
#[inline(always)]
unsafe fn subtract_coupling_gram<T: Real>(d: *mut T, k: *const T, st: usize, tiles: usize) {
    let team = Block;
    let (warp, warps) = (team.rank() / 32, team.size() / 32);
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let by_tiles = FastDiv::new(tiles as u32);
    let mut e = warp as u32;
    while e < (tiles * tiles) as u32 {
        let (ti, tj) = by_tiles.div_rem(e);
        let (ti, tj) = (ti as usize, tj as usize);
        e += warps as u32;
        if ti < tj {
            continue;
        }
        // SAFETY: inside both matrices (caller's contract); this warp's tile.
        unsafe {
            let cell = d.add((ti * KB + g) * st + tj * KB + 2 * t);
            let acc = tile_minus_abt([*cell, *cell.add(1)], k.add(ti * KB * st), st, k.add(tj * KB * st), st, tiles * KB);
            *cell = acc[0];
            *cell.add(1) = acc[1];
        }
    }
}

/// [`subtract_coupling_gram`] on the sm_90 DMMA shapes ([`update_tiles16`]), `f64` where
/// `has_sm90_dmma()`: items of a row tile of 16 rows and `W` column tiles of 8, one
/// `m16n8k16` per 16 columns of `K` and tile. An odd tile count leaves a last row tile of 8
/// rows, so nothing past `D`'s and `K`'s `8 tiles` rows is read or written; entries above
/// the diagonal inside a kept tile are updated too (nothing reads `D`'s upper triangle).
///
/// # Safety
/// As [`subtract_coupling_gram`], with `T = f64` and `has_sm90_dmma()`.
#[inline(always)]
unsafe fn subtract_coupling_gram16<T: Real, const W: usize>(d: *mut T, k: *const T, st: usize, tiles: usize) {
    let team = Block;
    let (warp, warps) = (team.rank() / 32, team.size() / 32);
    let rows = tiles * KB;
    let items = tiles.div_ceil(W) as u32;
    let by_items = FastDiv::new(items);
    let mut e = warp as u32;
    while e < tiles.div_ceil(2) as u32 * items {
        let (ti, q) = by_items.div_rem(e);
        e += warps as u32;
        let (r0, tj0) = (2 * KB * ti as usize, W * q as usize);
        let full = r0 + 2 * KB <= rows;
        let last_row = if full { r0 + 2 * KB - 1 } else { r0 + KB - 1 };
        let keep: [bool; W] = core::array::from_fn(|w| tj0 + w < tiles && (tj0 + w) * KB <= last_row);
        if !keep[0] {
            continue;
        }
        let cols: [usize; W] = core::array::from_fn(|w| (tj0 + w).min(tiles - 1) * KB);
        // SAFETY: inside both matrices (caller's contract); this warp's tiles.
        unsafe { update_tiles16((d, k, k), st, (r0, full), cols, rows, keep) };
    }
}
