//! Chain kernels: one thread block per system eliminates the system's blocks in their
//! natural order, `0, 1, ..., N - 1` (sequential block Cholesky), its working blocks in
//! shared memory; the solves walk the chain forward and back the same way.
//!
//! Why: nested dissection buys parallelism inside one system with extra work. Every
//! interior node updates two neighbours and creates a fill block, so it executes about
//! `19/3 n^3` flops per block against `7/3 n^3` for the sequential order, plus one launch
//! per level. When the batch alone fills the GPU (many systems, `S` thread blocks or more
//! busy on every SM), that parallelism is not needed and the chain does 2.7x fewer flops
//! in one launch, with no atomics and no fill. (A chain *between* two separators would
//! not save flops: eliminating it creates a fill block coupling each of its blocks to a
//! separator, the same `19/3 n^3` per block as nested dissection; see
//! `docs/perf-notes.md`, entry 10.)
//!
//! Storage is that of the level kernels ([`crate::layout`]) for the elimination order
//! `0, 1, ..., N - 1`: at the elimination of block `b` its only remaining neighbour is
//! `b + 1`, so `diag[b] = L_bb`, `right[b] = L_{b+1,b}` and `left` is not used. Arguments
//! and status words are those of the level kernels ([`FactorArgs`], [`SolveArgs`];
//! `level` is ignored and failures are recorded on level 0), so the host treats both
//! alike, and the log-determinant reads the same `L_bb`.

mod strips;

pub use strips::{
    CHAIN_INVERSE_SIZE, CHAIN_STRIP_SIZES, chain_strip_size, chain_strip_threads, factor_chain_strips, factor_chain_strips_shared_bytes,
};

use crate::level::{FactorArgs, INFO_OK, InfoCode, SolveArgs, align_elems, info_key};
use crate::team::{Block, Team};
use crate::tile::trsm::invert_diagonal;
use crate::tile::{
    FastDiv, MatRef, NO_FAILURE, copy_batched, for_each_entry, for_each_rc, potrf_panel, product, trsm_lower, trsm_lower_by_warps,
    trsm_lower_transposed_by_warps,
};
use blocktri_prims::memory::load_readonly;
use blocktri_prims::{Real, atomic, block_idx_x, shared, sync_warp};

/// Threads per block of the chain kernels for block size `n`: the panel of a step is
/// `2n x n`; more threads than its columns can keep busy only wait at the barriers.
pub const fn chain_threads(n: usize) -> u32 {
    if n <= 8 {
        64
    } else if n <= 32 {
        128
    } else {
        256
    }
}

/// Shared memory of [`factor_chain`] in bytes: the `2n x n` panel `[D_b; A[b+1, b]]`,
/// `2n` pivot values, an `n x nrhs` right-hand-side tile, the status word.
pub const fn factor_chain_shared_bytes(n: usize, nrhs: usize, elem_bytes: usize) -> usize {
    (align_elems(2 * n * n, elem_bytes) + align_elems(2 * n, elem_bytes) + align_elems(n * nrhs, elem_bytes)) * elem_bytes + 16
}

/// Column stride of the factor blocks the chain solves stage in shared memory: odd, so
/// that lanes reading along a row of a column-major block hit distinct banks.
const fn staged_ld(n: usize) -> usize {
    n | 1
}

/// Shared memory of the block-per-system chain solves ([`solve_forward_chain`],
/// [`solve_forward_chain_inverse`] and their backward sweeps) in bytes: the block's
/// diagonal operand and coupling (column stride `staged_ld`), `n` reciprocal pivots,
/// three `n x chunk` right-hand-side tiles.
pub const fn solve_chain_shared_bytes(n: usize, chunk: usize, elem_bytes: usize) -> usize {
    (2 * align_elems(n * staged_ld(n), elem_bytes) + align_elems(n, elem_bytes) + 3 * align_elems(n * chunk, elem_bytes)) * elem_bytes
}

/// Factors system `block_idx_x` (grid `x` = systems): for `b = 0 .. N - 1`
///
/// 1. the panel holds `D_b = A_bb - L_{b,b-1} L_{b,b-1}^T` (computed by step `b - 1`);
///    the coupling `A[b+1, b]` is loaded below it; both are checked (finite, `D_b`
///    symmetric within `sym_tol`);
/// 2. [`potrf_panel`] gives `L_bb` and `L_{b+1,b} = A[b+1, b] L_bb^-T`, stored to
///    `diag[b]` and `right[b]`;
/// 3. with `nrhs > 0`, the forward substitution of the step: `y_b = L_bb^-1 r_b`,
///    `r_{b+1} -= L_{b+1,b} y_b`, in place in `rhs`;
/// 4. `D_{b+1} = A_{b+1,b+1} - L_{b+1,b} L_{b+1,b}^T` into the panel for the next step.
///
/// The block also writes the system's status word (first [`INFO_OK`], then the key of
/// the first failure, after which it stops): no reset launch is needed.
///
/// # Safety
/// A 1-D block of a multiple of 32 threads, grid `x` = `args.systems`,
/// [`factor_chain_shared_bytes`]`(n, nrhs)` of dynamic shared memory; the arrays of
/// [`FactorArgs`] with their documented sizes (`left` is not touched).
pub unsafe fn factor_chain<T: Real>(args: &FactorArgs<T>) {
    let team = Block;
    let a = *args;
    let (n, ld, nb, k) = (a.n as usize, a.ld as usize, a.nblocks as usize, a.nrhs as usize);
    let s = block_idx_x() as usize;
    let blk = ld * n;
    let ldp = 2 * n;
    let smem = shared::dynamic_shared::<T>();
    let p = smem;
    let piv = unsafe { smem.add(align_elems(2 * n * n, T::BYTES)) };
    let rhs_sh = unsafe { piv.add(align_elems(2 * n, T::BYTES)) };
    let status = unsafe { rhs_sh.add(align_elems(n * k, T::BYTES)) } as *mut u32;
    let info = unsafe { a.info.add(s) };
    // SAFETY (all pointers below): blocks of system `s` inside the arrays (caller's contract).
    let block = |base: *mut T, b: usize| unsafe { base.add((s * nb + b) * blk) };
    let diag_in = |b: usize| unsafe { a.diag_in.add((s * nb + b) * blk) };
    let sub = |b: usize| unsafe { a.sub.add((s * (nb - 1) + b) * blk) };
    let ldb = nb * n;
    let rhs_sys = if k > 0 { unsafe { a.rhs.add(s * ldb * k) } } else { core::ptr::null_mut() };
    let fail = move |code: InfoCode, b: usize| {
        if team.rank() == 0 {
            unsafe { atomic::atomic_min_u64(info, info_key(0, code, b as u32)) };
        }
    };
    if team.rank() == 0 {
        unsafe { *info = INFO_OK };
    }
    // D_0: the input block.
    let d0 = diag_in(0);
    copy_batched(team, n, n, |r, c| unsafe { load_readonly(d0.add(c * ld + r)) }, |r, c, v| unsafe { *p.add(c * ldp + r) = v });
    for b in 0..nb {
        let has_next = b + 1 < nb;
        let rows = if has_next { 2 * n } else { n };
        if has_next {
            let src = sub(b);
            copy_batched(
                team,
                n,
                n,
                |r, c| unsafe { load_readonly(src.add(c * ld + r)) },
                |r, c, v| unsafe { *p.add(c * ldp + n + r) = v },
            );
        }
        if team.rank() == 0 {
            unsafe { *status = NO_FAILURE };
        }
        team.sync();

        // 1. Checks (the same rule as the level kernels: `node::entry_status`).
        for_each_rc(team, n, n, |r, c| unsafe {
            let d = *p.add(c * ldp + r);
            let coupling = if has_next { *p.add(c * ldp + n + r) } else { T::ZERO };
            let code = crate::level::node::entry_status(
                d,
                coupling,
                T::ZERO,
                *p.add(r * ldp + c),
                *p.add(r * ldp + r),
                *p.add(c * ldp + c),
                r,
                c,
                a.sym_tol,
            );
            if code != u32::MAX {
                atomic::atomic_min_u32(status, code);
            }
        });
        team.sync();
        let input_status = unsafe { *status };
        if input_status != NO_FAILURE {
            fail(InfoCode::from_u32(input_status).unwrap_or(InfoCode::NonFinite), b);
            return;
        }
        team.sync(); // everyone has read `status` before potrf_panel resets it

        // 2. Factor the panel, store L_bb and L_{b+1,b}.
        if unsafe { potrf_panel(team, p, ldp, n, rows, piv, status) } != NO_FAILURE {
            fail(InfoCode::NotPositiveDefinite, b);
            return;
        }
        let (d_dst, r_dst) = (block(a.diag, b), block(a.right, b));
        for_each_rc(team, n, n, |r, c| unsafe {
            *d_dst.add(c * ld + r) = if r >= c { *p.add(c * ldp + r) } else { T::ZERO };
            if has_next {
                *r_dst.add(c * ld + r) = *p.add(c * ldp + n + r);
            }
        });
        let kr = MatRef::col_major(unsafe { p.add(n) } as *const T, ldp);

        // 3. Interlaced forward substitution (reads L_bb from the panel before step 4
        //    overwrites it).
        if k > 0 {
            let rb = unsafe { rhs_sys.add(b * n) };
            for_each_entry(team, n, k, |r, c| unsafe { *rhs_sh.add(c * n + r) = *rb.add(c * ldb + r) });
            team.sync();
            // L's diagonal is sqrt(d); its reciprocal is the pivot's 1/sqrt(d) in `piv`.
            unsafe { trsm_lower(team, p, ldp, n, rhs_sh, n, k, piv) };
            for_each_entry(team, n, k, |r, c| unsafe { *rb.add(c * ldb + r) = *rhs_sh.add(c * n + r) });
            if has_next {
                let next = unsafe { rb.add(n) };
                let y = MatRef::col_major(rhs_sh as *const T, n);
                // One writer per entry (this block owns the system), so no atomics.
                unsafe { product(team, n, k, n, kr, y, |r, c, v| *next.add(c * ldb + r) -= v) };
            }
        }

        // 4. D_{b+1} into the panel's top (the product reads only the rows below it),
        //    once every thread has stored its part of L_bb from there.
        team.sync();
        if has_next {
            let d_next = diag_in(b + 1);
            unsafe { product(team, n, n, n, kr, kr.t(), |r, c, v| *p.add(c * ldp + r) = load_readonly(d_next.add(c * ld + r)) - v) };
            team.sync(); // the coupling rows are read by the product before the next load
        }
    }
}

/// What the block-per-system solves read on the diagonal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Diagonal {
    /// `L_bb` from `diag`: a triangular solve per block, one warp per column.
    Factor,
    /// `W_bb = L_bb^-1` from `left` (written by [`factor_chain_strips`] at padded size
    /// [`CHAIN_INVERSE_SIZE`]): a product per block on every thread.
    Inverse,
}

/// The chain walk of the block-per-system solves: per column chunk and block `b` (forward
/// from the first, backward from the last), `z = r_b - C prev` with the coupling `C`
/// (`L_{b,b-1} = right[b - 1]` forward, `L_{b+1,b}^T = right[b]^T` backward) and the
/// previous block's result, then the block's result: the triangular solve with `L_bb` (or
/// `L_bb^T`) in place, or the product `W_bb z` (`W_bb^T z`). The result is stored and, in
/// the backward sweep, checked for non-finite values, as the level kernels do.
///
/// Each block's diagonal operand and coupling are staged in shared memory by one batched
/// copy, and the products keep every thread busy ([`split_product`]). The first version
/// read the coupling from global memory in a one-warp product and solved with a block
/// barrier per row: 18.7 ms at `n = 64, S = 1024, N = 64` against 4.1 with the inverses
/// (`docs/perf-notes.md`, entry 31).
///
/// # Safety
/// As [`solve_forward_chain`] (with [`Diagonal::Inverse`]: as
/// [`solve_forward_chain_inverse`]).
#[inline(always)]
unsafe fn solve_chain<T: Real>(a: &SolveArgs<T>, backward: bool, diagonal: Diagonal) {
    let team = Block;
    let (n, ld, nb, k) = (a.n as usize, a.ld as usize, a.nblocks as usize, a.nrhs as usize);
    let chunk = (a.chunk as usize).max(1);
    let s = block_idx_x() as usize;
    let (blk, ldb, ls) = (ld * n, nb * n, staged_ld(n));
    let smem = shared::dynamic_shared::<T>();
    // SAFETY (the pointers into shared memory): inside solve_chain_shared_bytes.
    let d_sh = smem;
    let c_sh = unsafe { d_sh.add(align_elems(n * ls, T::BYTES)) };
    let inv = unsafe { c_sh.add(align_elems(n * ls, T::BYTES)) };
    let tile = align_elems(n * chunk, T::BYTES);
    let scratch = unsafe { inv.add(align_elems(n, T::BYTES)) };
    let results = [unsafe { scratch.add(tile) }, unsafe { scratch.add(2 * tile) }];
    let rhs_sys = unsafe { a.rhs.add(s * ldb * k) };
    let diag_src = if diagonal == Diagonal::Inverse { a.left } else { a.diag };
    let (d, c) = (MatRef::col_major(d_sh as *const T, ls), MatRef::col_major(c_sh as *const T, ls));
    let (d, c) = if backward { (d.t(), c.t()) } else { (d, c) };
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        for step in 0..nb {
            let b = if backward { nb - 1 - step } else { step };
            // The result goes to `out`; the triangular solve works there in place.
            let (out, prev) = (results[step % 2], results[(step + 1) % 2]);
            let z = if diagonal == Diagonal::Inverse { scratch } else { out };
            let rb = unsafe { rhs_sys.add(c0 * ldb + b * n) };
            let db = unsafe { diag_src.add((s * nb + b) * blk) };
            let cb = match (step, backward) {
                (0, _) => core::ptr::null(),
                (_, false) => unsafe { a.right.add((s * nb + b - 1) * blk) },
                (_, true) => unsafe { a.right.add((s * nb + b) * blk) },
            };
            copy_batched(
                team,
                n,
                n,
                // SAFETY: inside the blocks (caller's contract); the coupling only after
                // the first step.
                |r, col| unsafe {
                    let cv = if cb.is_null() { T::ZERO } else { load_readonly(cb.add(col * ld + r)) };
                    (load_readonly(db.add(col * ld + r)), cv)
                },
                |r, col, (dv, cv)| unsafe {
                    *d_sh.add(col * ls + r) = dv;
                    *c_sh.add(col * ls + r) = cv;
                },
            );
            for_each_entry(team, n, kc, |r, col| unsafe { *z.add(col * n + r) = *rb.add(col * ldb + r) });
            team.sync();
            if step > 0 {
                // One writer per entry of `z`; `prev` and the coupling are only read.
                unsafe { split_product(n, kc, n, c, MatRef::col_major(prev, n), |r, col, v| *z.add(col * n + r) -= v) };
                team.sync();
            }
            match (diagonal, backward) {
                (Diagonal::Inverse, _) => {
                    unsafe { split_product(n, kc, n, d, MatRef::col_major(z, n), |r, col, v| *out.add(col * n + r) = v) };
                    team.sync();
                }
                // SAFETY (both): the staged factor, `inv` and `z` in shared memory; every
                // thread is here. Both end with a barrier.
                (Diagonal::Factor, false) => unsafe {
                    invert_diagonal(team, d_sh, ls, n, inv);
                    trsm_lower_by_warps(d_sh, ls, n, z, n, kc, inv);
                },
                (Diagonal::Factor, true) => unsafe {
                    invert_diagonal(team, d_sh, ls, n, inv);
                    trsm_lower_transposed_by_warps(d_sh, ls, n, z, n, kc, inv);
                },
            }
            let mut finite = true;
            for_each_entry(team, n, kc, |r, col| unsafe {
                let v = *out.add(col * n + r);
                finite &= v.is_finite();
                *rb.add(col * ldb + r) = v;
            });
            if backward && !finite {
                unsafe { atomic::atomic_min_u64(a.info.add(s), info_key(0, InfoCode::NonFiniteSolution, b as u32)) };
            }
            // No barrier: the next block's copies overwrite only what was read before the
            // last barrier, and its results go to the other tile.
        }
        c0 += kc;
    }
}

/// `emit(r, c, sum_k A(r, k) B(k, c))` for an `m x ncols` result with `kk` terms, by the
/// whole block: when the result has fewer entries than threads, `p` adjacent lanes (up
/// to 8) split the `k` range and add their parts by shuffles, so a matrix-vector product
/// keeps every warp busy. Every thread runs the same number of rounds (the shuffles need
/// the whole warp). No barrier.
///
/// # Safety
/// `A` (`m x kk`) and `B` (`kk x ncols`) are readable; `emit` is safe to call for each
/// result entry once; every thread of the block calls it.
#[inline(always)]
unsafe fn split_product<T: Real>(m: usize, ncols: usize, kk: usize, a: MatRef<T>, b: MatRef<T>, mut emit: impl FnMut(usize, usize, T)) {
    let team = Block;
    let threads = team.size();
    let outputs = m * ncols;
    let mut p = 1;
    while p < 8 && outputs * p * 2 <= threads {
        p *= 2;
    }
    let (part, first, per_round) = (team.rank() % p, team.rank() / p, threads / p);
    let span = kk.div_ceil(p);
    let (k0, k1) = ((part * span).min(kk), ((part + 1) * span).min(kk));
    let by_rows = FastDiv::new(m as u32);
    for round in 0..outputs.div_ceil(per_round) {
        let o = first + round * per_round;
        let valid = o < outputs;
        let (col, r) = by_rows.div_rem(if valid { o as u32 } else { 0 });
        let (r, col) = (r as usize, col as usize);
        let mut acc = T::ZERO;
        if valid {
            for kx in k0..k1 {
                // SAFETY: r < m, kx < kk, col < ncols (caller's contract).
                acc = unsafe { a.at(r, kx) }.mul_add(unsafe { b.at(kx, col) }, acc);
            }
        }
        let mut width = 1;
        while width < p {
            acc += acc.shfl_xor(width as u32);
            width *= 2;
        }
        if valid && part == 0 {
            emit(r, col, acc);
        }
    }
}

/// Forward substitution of system `block_idx_x` along its chain:
/// `y_b = L_bb^-1 (r_b - L_{b,b-1} y_{b-1})`, in place in `rhs`, `chunk` columns at a time.
///
/// # Safety
/// A 1-D block of a multiple of 32 threads, grid `x` = systems,
/// [`solve_chain_shared_bytes`]`(n, chunk)` of dynamic shared memory; the factor written
/// by a chain factor kernel (stream order) and the arrays of [`SolveArgs`] with their sizes.
pub unsafe fn solve_forward_chain<T: Real>(args: &SolveArgs<T>) {
    unsafe { solve_chain(args, false, Diagonal::Factor) }
}

/// Backward substitution of system `block_idx_x` along its chain (after the forward one):
/// `x_b = L_bb^-T (y_b - L_{b+1,b}^T x_{b+1})`; records
/// [`InfoCode::NonFiniteSolution`] for a non-finite `x_b`.
///
/// # Safety
/// As [`solve_forward_chain`].
pub unsafe fn solve_backward_chain<T: Real>(args: &SolveArgs<T>) {
    unsafe { solve_chain(args, true, Diagonal::Factor) }
}

/// [`solve_forward_chain`] after [`factor_chain_strips`] at padded size
/// [`CHAIN_INVERSE_SIZE`]: `y_b = W_bb (r_b - L_{b,b-1} y_{b-1})` with the inverses it
/// wrote to `left`, two products per block.
///
/// # Safety
/// As [`solve_forward_chain`], after that factor (stream order).
pub unsafe fn solve_forward_chain_inverse<T: Real>(args: &SolveArgs<T>) {
    unsafe { solve_chain(args, false, Diagonal::Inverse) }
}

/// [`solve_backward_chain`] with the inverses: `x_b = W_bb^T (y_b - L_{b+1,b}^T x_{b+1})`.
///
/// # Safety
/// As [`solve_forward_chain_inverse`], after it.
pub unsafe fn solve_backward_chain_inverse<T: Real>(args: &SolveArgs<T>) {
    unsafe { solve_chain(args, true, Diagonal::Inverse) }
}

// ---------------------------------------------------------------------------------------
// Register-resident chain kernels: a group of `min(NP, 32)` lanes per system, `n <= NP <= 32`.
// ---------------------------------------------------------------------------------------

/// Warps per thread block of the register-resident chain kernels.
pub const CHAIN_ROWS_WARPS: u32 = 4;

/// Lanes per system of the register-resident chain kernels at padded size `np`: lane `i`
/// of a system's group holds row `i` of its blocks, so below `np = 32` two (`np = 16`),
/// four or eight systems share a warp (one system per warp left half the lanes or more
/// idle, `docs/perf-notes.md` entry 32); at `np = 32` the whole warp.
pub const fn chain_rows_lanes(np: usize) -> usize {
    if np < 32 { np } else { 32 }
}

/// Systems per thread block of the register-resident chain kernels at padded size `np`.
pub const fn chain_rows_systems_per_block(np: usize) -> u32 {
    CHAIN_ROWS_WARPS * (32 / chain_rows_lanes(np)) as u32
}

/// Where a lane works in a register-resident chain kernel.
#[derive(Clone, Copy)]
struct LaneGroup {
    /// The row this lane holds (its index within the system's lane group).
    row: usize,
    /// The group's first lane: row `r` of the system is on lane `base + r`.
    base: u32,
    /// The group's index within the thread block (its slot of shared memory).
    slot: usize,
    /// The system whose arrays the lane addresses: its own, or for a group past the last
    /// system the warp's first (never read nor written: `live` is false).
    system: usize,
    /// Whether the group has a system. Groups past the last one run along without loads
    /// or stores, because the shuffles need every lane of the warp.
    live: bool,
}

/// This lane's [`LaneGroup`] for padded size `NP`, or `None` when the whole warp is past
/// the last system (it may return: no block barrier in these kernels).
#[inline(always)]
fn lane_group<const NP: usize>(systems: u32) -> Option<LaneGroup> {
    let lanes = chain_rows_lanes(NP) as u32;
    let (warp, lane) = (blocktri_prims::warp_id(), blocktri_prims::lane_id());
    let first = (block_idx_x() * CHAIN_ROWS_WARPS + warp) * (32 / lanes);
    if first >= systems {
        return None;
    }
    let group = lane / lanes;
    let own = first + group;
    let live = own < systems;
    Some(LaneGroup {
        row: (lane % lanes) as usize,
        base: group * lanes,
        slot: (warp * (32 / lanes) + group) as usize,
        system: if live { own } else { first } as usize,
        live,
    })
}

/// The smallest `u32` over each group of `LANES` consecutive lanes (a power of two).
#[inline(always)]
fn group_min_u32<const LANES: usize>(mut v: u32) -> u32 {
    let mut m = LANES / 2;
    while m > 0 {
        v = v.min(blocktri_prims::warp::shfl_xor_u32(v, m as u32));
        m /= 2;
    }
    v
}

/// Whether any lane of the warp has `flag` set.
#[inline(always)]
fn warp_any(flag: bool) -> bool {
    group_min_u32::<32>(u32::from(!flag)) == 0
}

/// Leading dimension of a warp's shared tile (`NP + 1`: column reads hit distinct banks).
const fn chain_ldt(np: usize) -> usize {
    np + 1
}

/// Shared memory of one system's group in [`factor_chain_rows`], in elements: an
/// `NP x NP` tile and `NP` reciprocal pivots.
const fn chain_rows_group_elems(np: usize, elem_bytes: usize) -> usize {
    align_elems(chain_ldt(np) * np, elem_bytes) + align_elems(np, elem_bytes)
}

/// Shared memory of [`factor_chain_rows`] in bytes: per system an `NP x NP` tile and `NP`
/// reciprocal pivots.
pub const fn factor_chain_rows_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    chain_rows_systems_per_block(np) as usize * chain_rows_group_elems(np, elem_bytes) * elem_bytes
}

/// Row `lane` of the `n x n` column-major block at `src` (leading dimension `ld`), or with
/// `transposed` its column `lane` (a row of the transpose), padded to `NP`: identity
/// (`identity`) or zero outside `n x n`. Rows: consecutive lanes read consecutive
/// addresses of each column (coalesced); columns: each lane reads its own column (strided
/// across lanes, served by L2 and L1).
///
/// With `lower_only` the entries above the diagonal are taken as zero without reading
/// them (a factor block `L_bb`, whose upper triangle the storage keeps zero).
///
/// # Safety
/// `src` holds an `n x n` block at `ld` (not read when `n == 0`).
#[inline(always)]
unsafe fn load_lane<T: Real, const NP: usize>(
    src: *const T,
    ld: usize,
    n: usize,
    lane: usize,
    identity: bool,
    transposed: bool,
    lower_only: bool,
) -> [T; NP] {
    let mut row = [T::ZERO; NP];
    for c in 0..NP {
        let above = if transposed { c < lane } else { c > lane };
        row[c] = if lane < n && c < n && !(lower_only && above) {
            let at = if transposed { lane * ld + c } else { c * ld + lane };
            unsafe { load_readonly(src.add(at)) }
        } else if identity && c == lane {
            T::ONE
        } else {
            T::ZERO
        };
    }
    row
}

/// Row `lane` of the block ([`load_lane`]).
///
/// # Safety
/// As [`load_lane`].
#[inline(always)]
unsafe fn load_row<T: Real, const NP: usize>(src: *const T, ld: usize, n: usize, lane: usize, identity: bool) -> [T; NP] {
    unsafe { load_lane(src, ld, n, lane, identity, false, false) }
}

/// Row `lane` of a factor block `L_bb` ([`load_lane`] with `lower_only`): the zero upper
/// triangle is not read, 37.5 % fewer sectors of the block at `n = 16`.
///
/// # Safety
/// As [`load_lane`].
#[inline(always)]
unsafe fn load_factor_row<T: Real, const NP: usize>(src: *const T, ld: usize, n: usize, lane: usize) -> [T; NP] {
    unsafe { load_lane(src, ld, n, lane, true, false, true) }
}

/// Column `lane` of the block ([`load_lane`]). A column is contiguous, so where the block
/// fills the padded size (`n == NP`) and its columns start 16-byte aligned, a column is
/// read as one aligned array (16-byte loads): the scalar loads of a warp touch a cache
/// line per lane each and made the backward chain solve L1-bound (`docs/perf-notes.md`,
/// entry 32).
///
/// # Safety
/// As [`load_lane`].
#[inline(always)]
unsafe fn load_column<T: Real, const NP: usize>(src: *const T, ld: usize, n: usize, lane: usize, identity: bool) -> [T; NP] {
    /// A whole column, 16-byte aligned: one read of it is a row of 16-byte loads.
    #[repr(C, align(16))]
    struct Column<T, const NP: usize>([T; NP]);
    if n == NP && ld.is_multiple_of(16 / T::BYTES) && (src as usize).is_multiple_of(16) {
        // SAFETY: column `lane < NP = n` of the block (caller's contract), 16-byte aligned
        // (checked: the block's start and the column stride).
        return unsafe { core::ptr::read(src.add(lane * ld) as *const Column<T, NP>) }.0;
    }
    unsafe { load_lane(src, ld, n, lane, identity, true, false) }
}

/// Lane `lane`'s row into the warp's tile (column-major, leading dimension `t`). Rows are
/// passed by value: a reference to a register array would move it to local memory.
///
/// # Safety
/// `tile` holds `NP` columns of `t >= NP` values, owned by this warp.
#[inline(always)]
unsafe fn store_row<T: Real, const NP: usize>(tile: *mut T, t: usize, lane: usize, row: [T; NP]) {
    if lane < NP {
        for c in 0..NP {
            unsafe { *tile.add(c * t + lane) = row[c] };
        }
    }
}

/// Whether the register-resident chain solves load the next block's rows during the
/// current one: up to 16 values of 64 bits per row (two rows more per lane); at 32 f64
/// values the registers would spill.
const fn prefetch_rows<T: Real, const NP: usize>() -> bool {
    NP * T::BYTES <= 128
}

/// `1 / L_rr` for every `r`, from the group's rows or columns of `L` (entry `r` of row `r`,
/// on lane `base + r`, is the diagonal).
#[inline(always)]
fn reciprocal_diagonal<T: Real, const NP: usize>(lane_values: [T; NP], base: u32) -> [T; NP] {
    let mut inv = [T::ZERO; NP];
    for r in 0..NP {
        inv[r] = T::ONE / lane_values[r].shfl_idx(base + r as u32);
    }
    inv
}

/// [`factor_chain`] with the step's blocks in registers, a group of
/// [`chain_rows_lanes`]`(NP)` lanes per system, lane `i` of the group holding row `i` of
/// `D_b` and of the coupling `A[b+1, b]` (the fused `rows` kernels' layout): the Cholesky
/// factorization broadcasts by shuffles, the triangular solve and
/// `D_{b+1} = A_{b+1,b+1} - L_{b+1,b} L_{b+1,b}^T` read the other rows from the group's
/// shared tile (broadcast reads), so a step needs no block barrier, only warp
/// synchronization; the next coupling is loaded while the step computes. With `SOLVE`
/// the step also does the forward substitution of one right-hand side in place
/// (`y_b = L_bb^-1 r_b`, `r_{b+1} -= L_{b+1,b} y_b`, as [`factor_chain`]'s step 3) from
/// the rows it holds, `r_{b+1}` carried in a register between steps, so the forward chain
/// solve and its second read of every factor block are not needed. (One column only: a
/// loop over `nrhs` columns raised the f64 `NP = 16` spill from 228 to 640 bytes, the
/// single column to 300.) Same storage, checks and status words as [`factor_chain`]
/// (`D_{b+1}`'s symmetry is checked as it is formed: the update is bitwise symmetric, so
/// this is the input's symmetry). A system that fails stops writing; its lanes run along
/// with the warp's other systems until all have failed or finished.
///
/// # Safety
/// A block of [`CHAIN_ROWS_WARPS`] warps, grid `x` =
/// `ceil(systems / `[`chain_rows_systems_per_block`]`(NP))`,
/// [`factor_chain_rows_shared_bytes`]`(NP)` of dynamic shared memory, `n <= NP <= 32`,
/// `NP` a power of two; `nrhs == 1` with `SOLVE`, else `0`; the arrays of [`FactorArgs`]
/// with their documented sizes (`rhs` with `SOLVE`).
pub unsafe fn factor_chain_rows<T: Real, const NP: usize, const SOLVE: bool>(args: &FactorArgs<T>) {
    let a = *args;
    let (n, ld, nb) = (a.n as usize, a.ld as usize, a.nblocks as usize);
    let Some(g) = lane_group::<NP>(a.systems) else { return };
    let (row, base, s) = (g.row, g.base, g.system);
    let mut live = g.live;
    let t = chain_ldt(NP);
    let tile = unsafe { shared::dynamic_shared::<T>().add(g.slot * chain_rows_group_elems(NP, T::BYTES)) };
    let inv = unsafe { tile.add(align_elems(t * NP, T::BYTES)) };
    let info = unsafe { a.info.add(s) };
    let blk = ld * n;
    // SAFETY (all block pointers): blocks of system `s` inside the arrays (caller's contract).
    let diag_in = |b: usize| unsafe { a.diag_in.add((s * nb + b) * blk) };
    let sub = |b: usize| unsafe { a.sub.add((s * (nb - 1) + b) * blk) };
    let out = |base: *mut T, b: usize| unsafe { base.add((s * nb + b) * blk) };
    let fail = move |code: InfoCode, b: usize| {
        if row == 0 {
            unsafe { atomic::atomic_min_u64(info, info_key(0, code, b as u32)) };
        }
    };
    if row == 0 && live {
        unsafe { *info = INFO_OK };
    }
    // Rows of a group without a system: none (identity / zero, nothing read).
    let rows = |live: bool| if live { n } else { 0 };
    // The interlaced substitution's right-hand side: block `b`, this lane's row at
    // `b * n + row` (only for rows `< n` of a live group).
    let rhs = if SOLVE { unsafe { a.rhs.add(s * nb * n) } } else { core::ptr::null_mut() };
    let value = |live: bool, b: usize| if row < rows(live) { unsafe { *rhs.add(b * n + row) } } else { T::ZERO };
    // `r_b`, already updated by step `b - 1`, carried in a register.
    let mut r_carry = if SOLVE { value(live, 0) } else { T::ZERO };
    let mut d: [T; NP] = unsafe { load_row(diag_in(0), ld, rows(live), row, true) };
    let mut cpl: [T; NP] = if nb > 1 { unsafe { load_row(sub(0), ld, rows(live), row, false) } } else { [T::ZERO; NP] };
    for b in 0..nb {
        let has_next = b + 1 < nb;
        // The next step's coupling, in flight during this step; not for 32 f64 values per
        // row, where a third row of registers per lane spills (measured 52 us per step).
        let prefetch = NP * T::BYTES <= 128;
        let cpl_next: [T; NP] =
            if prefetch && b + 2 < nb { unsafe { load_row(sub(b + 1), ld, rows(live), row, false) } } else { [T::ZERO; NP] };
        // The next block of the right-hand side, in flight during this step.
        let r_next_in = if SOLVE && has_next { value(live, b + 1) } else { T::ZERO };

        // 1. Checks: finite values; D_b symmetric (the mirror entry from the tile).
        unsafe { store_row(tile, t, row, d) };
        sync_warp();
        let mut code = u32::MAX;
        if row < n && live {
            let drr = unsafe { *tile.add(row * t + row) };
            for c in 0..NP {
                if c < n {
                    let (mirror, dcc) = unsafe { (*tile.add(row * t + c), *tile.add(c * t + c)) };
                    code = code.min(crate::level::node::entry_status(d[c], cpl[c], T::ZERO, mirror, drr, dcc, row, c, a.sym_tol));
                }
            }
        }
        let code = group_min_u32::<NP>(code);
        if code != u32::MAX {
            fail(InfoCode::from_u32(code).unwrap_or(InfoCode::NonFinite), b);
            live = false;
        }

        // 2. Cholesky of D_b by shuffles (the rows kernels' warp 0).
        let mut failed = false;
        let mut own_pivot = T::ONE; // 1 / L_rr of this lane's row `r`
        for k in 0..NP {
            let dk = d[k].shfl_idx(base + k as u32);
            failed |= !(dk > T::ZERO && dk.is_finite());
            let rs = dk.rsqrt_fast();
            if row == k {
                unsafe { *inv.add(k) = rs };
                own_pivot = rs;
            }
            let l = d[k] * rs;
            d[k] = l;
            for j in 0..NP {
                if j > k {
                    let ljk = l.shfl_idx(base + j as u32);
                    d[j] = (-l).mul_add(ljk, d[j]);
                }
            }
        }
        if failed && live {
            fail(InfoCode::NotPositiveDefinite, b);
            live = false;
        }
        if !warp_any(live) {
            return;
        }
        let l_dst = out(a.diag, b);
        for c in 0..NP {
            if row < n && c < n && live {
                unsafe { *l_dst.add(c * ld + row) = if c <= row { d[c] } else { T::ZERO } };
            }
        }
        // Interlaced: y_b = L_bb^-1 r_b by shuffles, lane `r` scaling its own entry by its
        // own pivot before the broadcast (no pivot array in registers: the f64 ones are full).
        let mut y = r_carry;
        if SOLVE {
            for r in 0..NP {
                if row == r {
                    y *= own_pivot;
                }
                let yr = y.shfl_idx(base + r as u32);
                if row > r {
                    y = (-d[r]).mul_add(yr, y);
                }
            }
            if row < n && live {
                unsafe { *rhs.add(b * n + row) = y };
            }
        }
        if !has_next {
            return;
        }

        // 3. L_{b+1,b} = A[b+1, b] L_bb^-T along each lane's row, L from the tile.
        sync_warp(); // everyone has read the tile's D_b
        unsafe { store_row(tile, t, row, d) };
        sync_warp();
        for c in 0..NP {
            let x = cpl[c] * unsafe { *inv.add(c) };
            cpl[c] = x;
            for q in 0..NP {
                if q > c {
                    cpl[q] = (-x).mul_add(unsafe { *tile.add(c * t + q) }, cpl[q]);
                }
            }
        }
        let r_dst = out(a.right, b);
        for c in 0..NP {
            if row < n && c < n && live {
                unsafe { *r_dst.add(c * ld + row) = cpl[c] };
            }
        }
        // Interlaced: r_{b+1} -= L_{b+1,b} y_b, this lane's row (y_b by shuffles).
        if SOLVE {
            let mut z = r_next_in;
            for j in 0..NP {
                z = (-cpl[j]).mul_add(y.shfl_idx(base + j as u32), z);
            }
            r_carry = z;
        }

        // 4. D_{b+1} = A_{b+1,b+1} - K K^T, K = L_{b+1,b}: row `row` against every row.
        sync_warp();
        unsafe { store_row(tile, t, row, cpl) };
        sync_warp();
        d = unsafe { load_row(diag_in(b + 1), ld, rows(live), row, true) };
        for j in 0..NP {
            let mut acc = T::ZERO;
            for q in 0..NP {
                acc = cpl[q].mul_add(unsafe { *tile.add(q * t + j) }, acc);
            }
            d[j] -= acc;
        }
        sync_warp(); // the tile is rewritten by the next step's check
        cpl = if prefetch || b + 2 >= nb { cpl_next } else { unsafe { load_row(sub(b + 1), ld, rows(live), row, false) } };
    }
}

/// [`solve_forward_chain`] with a lane group per system (grid and block as
/// [`factor_chain_rows`], no shared memory): per block `b` lane `i` of the group holds row
/// `i` of `L_bb` and of `L_{b,b-1}` in registers; per right-hand-side column,
/// `z = r_b - L_{b,b-1} y_{b-1}` and the forward substitution run by shuffles.
///
/// # Safety
/// As [`factor_chain_rows`], after it (stream order); the arrays of [`SolveArgs`].
pub unsafe fn solve_forward_chain_rows<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let a = *args;
    let (n, ld, nb, k) = (a.n as usize, a.ld as usize, a.nblocks as usize, a.nrhs as usize);
    let Some(g) = lane_group::<NP>(a.systems) else { return };
    let (row, base, s) = (g.row, g.base, g.system);
    let rows = if g.live { n } else { 0 }; // a group without a system reads and writes nothing
    let blk = ld * n;
    let ldb = nb * n;
    let rhs = unsafe { a.rhs.add(s * ldb * k) };
    // Block `b`'s rows of `L_bb` and `L_{b,b-1}`.
    let load = |b: usize| -> ([T; NP], [T; NP]) {
        let l = unsafe { load_factor_row(a.diag.add((s * nb + b) * blk), ld, rows, row) };
        let cpl = if b > 0 { unsafe { load_row(a.right.add((s * nb + b - 1) * blk), ld, rows, row, false) } } else { [T::ZERO; NP] };
        (l, cpl)
    };
    let mut next = if prefetch_rows::<T, NP>() { load(0) } else { ([T::ZERO; NP], [T::ZERO; NP]) };
    // One right-hand side (the common case): `y_{b-1}` stays in the lane's register and
    // `r_{b+1}` is loaded during step `b`, so no step waits on a load of the vector.
    let single = k == 1;
    let value = |b: usize| if row < rows { unsafe { *rhs.add(b * n + row) } } else { T::ZERO };
    let mut r_next = if single { value(0) } else { T::ZERO };
    let mut y_prev = T::ZERO;
    for b in 0..nb {
        let (l, cpl) = next;
        // The next block's rows, in flight during this one (not at 32 f64 values per
        // row: the registers would spill).
        if prefetch_rows::<T, NP>() && b + 1 < nb {
            next = load(b + 1);
        }
        let (l, cpl) = if prefetch_rows::<T, NP>() { (l, cpl) } else { load(b) };
        let r_b = r_next;
        if single && b + 1 < nb {
            r_next = value(b + 1);
        }
        let inv = reciprocal_diagonal(l, base);
        for c in 0..k {
            let col = unsafe { rhs.add(c * ldb) };
            let mut z = if single { r_b } else { value(c * nb + b) };
            if b > 0 {
                let yp = if single { y_prev } else { value(c * nb + b - 1) };
                for j in 0..NP {
                    z = (-cpl[j]).mul_add(yp.shfl_idx(base + j as u32), z);
                }
            }
            for r in 0..NP {
                let yr = z.shfl_idx(base + r as u32) * inv[r];
                if row > r {
                    z = (-l[r]).mul_add(yr, z);
                } else if row == r {
                    z = yr;
                }
            }
            y_prev = z;
            if row < rows {
                unsafe { *col.add(b * n + row) = z };
            }
        }
        sync_warp(); // y_b written by each lane is read by the others in the next step
    }
}

/// [`solve_backward_chain`] with a lane group per system: lane `i` of the group holds
/// column `i` of `L_bb` and of `L_{b+1,b}`; `z = y_b - L_{b+1,b}^T x_{b+1}`, then the
/// backward substitution by shuffles. Records [`InfoCode::NonFiniteSolution`] for a
/// non-finite `x_b`.
///
/// # Safety
/// As [`solve_forward_chain_rows`], after it.
pub unsafe fn solve_backward_chain_rows<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let a = *args;
    let (n, ld, nb, k) = (a.n as usize, a.ld as usize, a.nblocks as usize, a.nrhs as usize);
    let Some(g) = lane_group::<NP>(a.systems) else { return };
    let (row, base, s) = (g.row, g.base, g.system);
    let rows = if g.live { n } else { 0 }; // a group without a system reads and writes nothing
    let blk = ld * n;
    let ldb = nb * n;
    let rhs = unsafe { a.rhs.add(s * ldb * k) };
    // Block `b`'s columns of `L_bb` and `L_{b+1,b}`.
    let load = |b: usize| -> ([T; NP], [T; NP]) {
        let lcol = unsafe { load_column(a.diag.add((s * nb + b) * blk), ld, rows, row, true) };
        let ccol = if b + 1 < nb { unsafe { load_column(a.right.add((s * nb + b) * blk), ld, rows, row, false) } } else { [T::ZERO; NP] };
        (lcol, ccol)
    };
    let mut next = if prefetch_rows::<T, NP>() { load(nb - 1) } else { ([T::ZERO; NP], [T::ZERO; NP]) };
    // As in the forward sweep: with one right-hand side `x_{b+1}` stays in the lane's
    // register and `y_{b-1}` is loaded during step `b`.
    let single = k == 1;
    let value = |b: usize| if row < rows { unsafe { *rhs.add(b * n + row) } } else { T::ZERO };
    let mut y_next = if single { value(nb - 1) } else { T::ZERO };
    let mut x_prev = T::ZERO;
    for step in 0..nb {
        let b = nb - 1 - step;
        let (lcol, ccol) = next;
        // As in the forward sweep: the next block's columns in flight during this one.
        if prefetch_rows::<T, NP>() && b > 0 {
            next = load(b - 1);
        }
        let (lcol, ccol) = if prefetch_rows::<T, NP>() { (lcol, ccol) } else { load(b) };
        let y_b = y_next;
        if single && b > 0 {
            y_next = value(b - 1);
        }
        let inv = reciprocal_diagonal(lcol, base);
        let mut finite = true;
        for c in 0..k {
            let col = unsafe { rhs.add(c * ldb) };
            let mut z = if single { y_b } else { value(c * nb + b) };
            if b + 1 < nb {
                let xn = if single { x_prev } else { value(c * nb + b + 1) };
                for j in 0..NP {
                    z = (-ccol[j]).mul_add(xn.shfl_idx(base + j as u32), z);
                }
            }
            for r in (0..NP).rev() {
                let xr = z.shfl_idx(base + r as u32) * inv[r];
                if row < r {
                    z = (-lcol[r]).mul_add(xr, z);
                } else if row == r {
                    z = xr;
                }
            }
            x_prev = z;
            if row < rows {
                finite &= z.is_finite();
                unsafe { *col.add(b * n + row) = z };
            }
        }
        if !finite {
            unsafe { atomic::atomic_min_u64(a.info.add(s), info_key(0, InfoCode::NonFiniteSolution, b as u32)) };
        }
        sync_warp();
    }
}
