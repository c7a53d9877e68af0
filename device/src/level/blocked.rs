//! The panel factorization blocked in 8-column strips, with the products on FP64 tensor
//! cores (`mma.sync.m8n8k4`) in `f64`: same storage, threads and solves as
//! [`super::panel`], a different step 3 and 5.
//!
//! [`super::panel::factor_panel`] spends one block barrier and a shared-memory load and
//! store per multiply-add on every column of the `3 NP x NP` panel, and its three
//! neighbour products run on scalar FMAs: at `n = 64` a lone node takes ~70 µs, bound by
//! the shared-memory pipe (`docs/perf-notes.md`, entry 15). Here, per strip of 8 columns
//! `kb..kb + 8`:
//! - **Diagonal tile**: one warp factors the `8 x 8` tile `D[kb.., kb..]` in registers
//!   (shuffles, no barrier) and writes `1 / L_jj`.
//! - **Strip rows**: every row below the tile (of `D`, `A[l, i]`, `A[r, i]`) solves its
//!   8 entries against the tile (one thread per row, the tile read by broadcast).
//! - **Trailing update**: `P[I, J] -= P[I, K] P[J, K]^T` over `8 x 8` output tiles, one
//!   warp per tile (two DMMAs per tile in `f64`). The warp that updates the next diagonal
//!   tile factors it at once (look-ahead), so the next strip starts without a barrier for
//!   it.
//!
//! Two barriers per strip instead of eight. Then the neighbour products
//! `D_l -= K_l K_l^T`, `D_r -= K_r K_r^T` (lower tiles only, mirrored) and
//! `fill = -K_r K_l^T` as `8 x 8` tiles, one warp each.
//!
//! `f32` has no DMMA: the same tiles on FP32 FMAs, lane `(g, t)` computing the two entries
//! that its DMMA fragment would hold.
//!
//! The panel's row stride is `NP + 4` (`≡ 4 mod 16`): the fragment reads of a half-warp
//! (lane `4g + t` reads row `g`, column `t`) hit distinct 8-byte bank pairs.

use super::node::{Node, node};
use super::panel::{load_checked_panel, store_factor_panel};
use super::{FactorArgs, InfoCode, align_elems, info_key};
use crate::layout::fill_slot;
use crate::team::{Block, Team};
use crate::tile::FastDiv;
use blocktri_prims::mma::mma_m8n8k4_f64;
use blocktri_prims::{Real, atomic, lane_id, shared, sync_warp};

/// Width of a strip and side of a tile.
const KB: usize = 8;

/// Row stride of the shared panel (elements).
const fn stride(np: usize) -> usize {
    np + 4
}

/// Shared memory of [`factor_blocked`] in bytes: the panel, `1 / L_jj`, two status words.
pub const fn factor_blocked_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    (align_elems(3 * np * stride(np), elem_bytes) + align_elems(np, elem_bytes)) * elem_bytes + 16
}

/// `c - A B^T` for one `8 x 8` tile, by one warp: `A` rows at `a + g s` and `B` rows at
/// `b + g s` (`g < 8`), `k` columns (a multiple of 8: a strip, or whole strips); lane
/// `4g + t` holds `c = [C[g][2t], C[g][2t + 1]]` (the DMMA accumulator layout).
///
/// # Safety
/// The 8 rows of `k` entries behind `a` and `b` are readable; all 32 lanes of the warp
/// call it together (the DMMA is warp-synchronous).
#[inline(always)]
unsafe fn tile_minus_abt<T: Real>(c: [T; 2], a: *const T, b: *const T, s: usize, k: usize) -> [T; 2] {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    if T::BYTES == 8 {
        // This lane's fragment entries: row g, columns kk + t and kk + 4 + t.
        // SAFETY (all reads): inside the rows (caller's contract).
        let (a_frag, b_frag) = unsafe { (a.add(g * s + t), b.add(g * s + t)) };
        // Two accumulators (even and odd 4-column steps) halve the dependent DMMA chain.
        let mut even = [c[0].to_f64(), c[1].to_f64()];
        let mut odd = [0.0f64; 2];
        let mut kk = 0;
        while kk < k {
            let (a0, b0, a1, b1) = unsafe {
                ((*a_frag.add(kk)).to_f64(), (*b_frag.add(kk)).to_f64(), (*a_frag.add(kk + 4)).to_f64(), (*b_frag.add(kk + 4)).to_f64())
            };
            even = mma_m8n8k4_f64(-a0, b0, even);
            odd = mma_m8n8k4_f64(-a1, b1, odd);
            kk += 8;
        }
        [T::from_f64(even[0] + odd[0]), T::from_f64(even[1] + odd[1])]
    } else {
        let mut acc = c;
        // SAFETY (all reads): as above.
        let (a_row, b0, b1) = unsafe { (a.add(g * s), b.add(2 * t * s), b.add((2 * t + 1) * s)) };
        for kk in 0..k {
            let av = unsafe { *a_row.add(kk) };
            acc[0] = (-av).mul_add(unsafe { *b0.add(kk) }, acc[0]);
            acc[1] = (-av).mul_add(unsafe { *b1.add(kk) }, acc[1]);
        }
        acc
    }
}

/// Updates the `8 x 8` tile of the panel at `(r0, c0)` by the strip `kb..kb + 8`:
/// `P[r0.., c0..] -= P[r0.., kb..] P[c0.., kb..]^T`, by one warp.
///
/// # Safety
/// As [`tile_minus_abt`]; no other thread touches the tile meanwhile.
#[inline(always)]
unsafe fn update_tile<T: Real>(p: *mut T, s: usize, r0: usize, c0: usize, kb: usize) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let cell = unsafe { p.add((r0 + g) * s + c0 + 2 * t) };
    let c = unsafe { [*cell, *cell.add(1)] };
    let d = unsafe { tile_minus_abt(c, p.add(r0 * s + kb), p.add(c0 * s + kb), s, KB) };
    unsafe {
        *cell = d[0];
        *cell.add(1) = d[1];
    }
}

/// Cholesky of the `8 x 8` diagonal tile at `(k0, k0)` in place by one warp (lane `r`
/// holds row `r % 8`; shuffles, no barrier): the lower triangle becomes `L`, the upper
/// zero, and `1 / L_jj` goes to `inv[k0 + j]`. Returns whether every pivot was positive
/// and finite (the same answer in every lane).
///
/// # Safety
/// The tile and `inv[k0..k0 + 8]` are in shared memory and no other thread touches them
/// meanwhile; all 32 lanes call it together.
#[inline(always)]
unsafe fn factor_diag_tile<T: Real>(p: *mut T, s: usize, k0: usize, inv: *mut T) -> bool {
    let lane = lane_id() as usize;
    let r = lane % KB;
    let row = unsafe { p.add((k0 + r) * s + k0) };
    let mut v: [T; KB] = core::array::from_fn(|c| unsafe { *row.add(c) });
    let mut ok = true;
    let mut l_rr = T::ONE;
    for j in 0..KB {
        let d = v[j].shfl_idx(j as u32);
        ok &= d > T::ZERO && d.is_finite();
        let r_d = d.rsqrt_fast();
        // Column j of L: sqrt(d) on the diagonal (lane j holds v[j] = d), the
        // multipliers below.
        let l_rj = v[j] * r_d;
        if r >= j {
            v[j] = l_rj;
        }
        if r == j {
            l_rr = l_rj; // not v[r] later: a run-time index would put v in local memory
        }
        // A rectangular loop with a condition (not `j + 1..KB`): a trip count that depends
        // on the outer index stops LLVM from unrolling the nest, and `v` would go to local
        // memory.
        for c in 0..KB {
            if c > j {
                let l_cj = l_rj.shfl_idx(c as u32);
                if r >= c {
                    v[c] = (-l_rj).mul_add(l_cj, v[c]);
                }
            }
        }
    }
    // Lanes 8.. read the same rows as lanes 0..8, which now overwrite them.
    sync_warp();
    if lane < KB {
        for (c, vc) in v.iter().enumerate() {
            unsafe { *row.add(c) = if c <= r { *vc } else { T::ZERO } };
        }
        unsafe { *inv.add(k0 + r) = T::ONE / l_rr };
    }
    sync_warp();
    ok
}

/// Row `i` of the strip `k0..k0 + 8` below the diagonal tile: `x = P[i, k0..] L_kk^-T`
/// (forward substitution with the factored tile, read by broadcast), in place.
///
/// # Safety
/// The tile is factored and `inv` written (barrier); no other thread touches the row's
/// strip entries meanwhile.
#[inline(always)]
unsafe fn solve_strip_row<T: Real>(p: *mut T, s: usize, k0: usize, inv: *const T, i: usize) {
    let row = unsafe { p.add(i * s + k0) };
    let mut x: [T; KB] = core::array::from_fn(|c| unsafe { *row.add(c) });
    for j in 0..KB {
        let l_row = unsafe { p.add((k0 + j) * s + k0) };
        let mut v = x[j];
        for c in 0..KB {
            // Rectangular, as in `factor_diag_tile`.
            if c < j {
                v = (-x[c]).mul_add(unsafe { *l_row.add(c) }, v);
            }
        }
        x[j] = v * unsafe { *inv.add(k0 + j) };
    }
    for (c, xc) in x.iter().enumerate() {
        unsafe { *row.add(c) = *xc };
    }
}

/// Eliminates one node: the panel of [`super::panel::factor_panel`], factored in strips
/// of 8 columns with tensor-core tile updates (see the module docs).
///
/// # Safety
/// As [`super::factor_level`] without right-hand sides (`args.nrhs` must be 0), with
/// [`super::panel_threads`]`(NP)` threads, [`factor_blocked_shared_bytes`] of shared
/// memory and `args.n <= NP`, `NP` a multiple of 32.
pub unsafe fn factor_blocked<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    let team = Block;
    let a = *args;
    let (n, m) = (a.n as usize, a.level);
    let nd = node(a.nblocks, m);
    let s = stride(NP);
    let smem = shared::dynamic_shared::<T>();
    let p = smem;
    let inv = unsafe { smem.add(align_elems(3 * NP * s, T::BYTES)) };
    let status = unsafe { inv.add(align_elems(NP, T::BYTES)) } as *mut u32;
    let failed = unsafe { status.add(1) };
    let (warp, lane) = (team.rank() / 32, team.rank() % 32);
    let warps = team.size() / 32;
    let (has_l, has_r) = (nd.left.is_some(), nd.right.is_some());
    // The look-ahead warp: updates and factors the next diagonal tile.
    let ahead = warps - 1;

    // SAFETY: as the caller guarantees; the panel and status word are in shared memory.
    if !unsafe { load_checked_panel::<T, NP>(&a, &nd, p, s, status) } {
        return;
    }
    // Strips cover the block size rounded up to 8: the padding is identity in D and zero
    // in the couplings, so its pivots are 1 and its multipliers 0.
    let tiles = n.div_ceil(KB);
    let nc = tiles * KB;
    if warp == ahead {
        let ok = unsafe { factor_diag_tile(p, s, 0, inv) };
        if lane == 0 {
            unsafe { *failed = u32::from(!ok) };
        }
    }
    team.sync();
    // Rows of each panel part below a strip: D from the strip's end, the couplings all
    // (only where the neighbour exists).
    let coupling_rows = |present: bool| if present { n } else { 0 };
    let (rows_l, rows_r) = (coupling_rows(has_l), coupling_rows(has_r));
    for kt in 0..tiles {
        let kb = kt * KB;
        // Strip rows.
        let rows_d = n.saturating_sub(kb + KB);
        let mut e = team.rank();
        while e < rows_d + rows_l + rows_r {
            let i = if e < rows_d {
                kb + KB + e
            } else if e < rows_d + rows_l {
                NP + e - rows_d
            } else {
                2 * NP + e - rows_d - rows_l
            };
            unsafe { solve_strip_row(p, s, kb, inv, i) };
            e += team.size();
        }
        team.sync();
        if kt + 1 == tiles {
            break;
        }
        // Trailing update: column tiles kt+1.., row tiles of D (on or below the diagonal
        // tile) and of the present couplings; the next diagonal tile is the look-ahead
        // warp's, first.
        let next = kb + KB;
        if warp == ahead {
            unsafe { update_tile(p, s, next, next, kb) };
            sync_warp();
            let ok = unsafe { factor_diag_tile(p, s, next, inv) };
            if lane == 0 && !ok {
                unsafe { *failed = 1 };
            }
        }
        // Row tiles: D's below the strip (kt+1..tiles), then those of the present
        // couplings. Index math in u32 with a multiply-high division: `usize` is 64-bit on
        // the device and its run-time divisions were half of this kernel's instructions
        // (`ncu`, entry 15).
        let col_tiles = (tiles - kt - 1) as u32;
        let coupling_tiles = |present: bool| if present { tiles as u32 } else { 0 };
        let (d_tiles, l_tiles) = (col_tiles, coupling_tiles(has_l));
        let row_tiles = d_tiles + l_tiles + coupling_tiles(has_r);
        let by_col = FastDiv::new(col_tiles);
        let mut e = warp as u32;
        while e < row_tiles * col_tiles {
            let (rt, c) = by_col.div_rem(e);
            let cj = kt + 1 + c as usize;
            let (r0, wanted) = if rt < d_tiles {
                // On or below the diagonal; the next diagonal tile is the look-ahead's.
                let ri = kt + 1 + rt as usize;
                (ri * KB, ri >= cj && ri != kt + 1)
            } else if rt < d_tiles + l_tiles {
                (NP + (rt - d_tiles) as usize * KB, true)
            } else {
                (2 * NP + (rt - d_tiles - l_tiles) as usize * KB, true)
            };
            if wanted {
                unsafe { update_tile(p, s, r0, cj * KB, kb) };
            }
            e += warps as u32;
        }
        team.sync();
    }
    if unsafe { core::ptr::read_volatile(failed) } != 0 {
        if team.rank() == 0 {
            unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(m, InfoCode::NotPositiveDefinite, nd.b as u32)) };
        }
        return;
    }

    // SAFETY: as the caller guarantees; the panel is factored.
    unsafe { store_factor_panel::<T, NP>(&a, &nd, p, s) };
    // SAFETY: as the caller guarantees; nodes of one level write disjoint fills and add
    // into the neighbours' accumulators atomically.
    unsafe { neighbour_products::<T, NP>(&a, &nd, p, s, nc) };
}

/// Step 5: `D_l -= K_l K_l^T`, `D_r -= K_r K_r^T` (atomic adds: two nodes update each
/// separator) and the fill `-K_r K_l^T` (stored), as `8 x 8` tiles over the warps; the
/// symmetric updates compute the tiles on and below the diagonal and add each
/// off-diagonal one at its mirror too.
///
/// # Safety
/// As [`factor_blocked`]; the panel is factored and visible to every thread.
#[inline(always)]
unsafe fn neighbour_products<T: Real, const NP: usize>(a: &FactorArgs<T>, nd: &Node, p: *const T, s: usize, nc: usize) {
    let team = Block;
    let (n, ld, m) = (a.n as usize, a.ld as usize, a.level);
    let (warp, lane) = (team.rank() / 32, team.rank() % 32);
    let (g, t) = (lane / 4, lane % 4);
    let warps = team.size() / 32;
    let tiles = nc / KB;
    let sys_blocks = nd.s * a.nblocks as usize;
    let block = |base: *mut T, idx: usize| unsafe { base.add((sys_blocks + idx) * ld * n) };
    // Job j: (rows of the left factor, rows of the right factor, destination, symmetric
    // update). A match, not an array: an array indexed at run time lives on the stack.
    let job = |j: usize| -> Option<(usize, usize, *mut T, bool)> {
        match (j, nd.left, nd.right) {
            (0, Some(l), _) => Some((NP, NP, block(a.diag, (l - 1) as usize), true)),
            (1, _, Some(r)) => Some((2 * NP, 2 * NP, block(a.diag, (r - 1) as usize), true)),
            (2, Some(l), Some(r)) => {
                let (owner, is_left) = fill_slot(l, r, m);
                Some((2 * NP, NP, block(if is_left { a.left } else { a.right }, (owner - 1) as usize), false))
            }
            _ => None,
        }
    };
    let per_job = (tiles * tiles) as u32;
    let (by_job, by_tiles) = (FastDiv::new(per_job), FastDiv::new(tiles as u32));
    let mut e = warp as u32;
    while e < 3 * per_job {
        let (j, rem) = by_job.div_rem(e);
        let (ti, tj) = by_tiles.div_rem(rem);
        let (j, ti, tj) = (j as usize, ti as usize, tj as usize);
        e += warps as u32;
        let Some((rows_a, rows_b, dst, symmetric)) = job(j) else { continue };
        if symmetric && ti < tj {
            continue;
        }
        let acc = unsafe { tile_minus_abt([T::ZERO; 2], p.add((rows_a + ti * KB) * s), p.add((rows_b + tj * KB) * s), s, nc) };
        let row = ti * KB + g;
        for (u, v) in acc.iter().enumerate() {
            let col = tj * KB + 2 * t + u;
            if row < n && col < n {
                unsafe {
                    if symmetric {
                        T::atomic_add_global(dst.add(col * ld + row), *v);
                        if ti != tj {
                            T::atomic_add_global(dst.add(row * ld + col), *v);
                        }
                    } else {
                        *dst.add(col * ld + row) = *v;
                    }
                }
            }
        }
    }
}
