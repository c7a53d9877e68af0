//! Register-resident level kernels for block sizes `n <= NP <= 32`, `NP` a compile-time
//! constant (4, 8, 16 or 32; `n` is padded with identity rows and columns).
//!
//! A node's panel `[D; L_li; L_ri]` is spread over three warps, **one panel row per lane,
//! held in registers**: warp 0 has the rows of `D_i` (then `L_ii`), warp 1 those of
//! `A[l, i]` (then `L_li`), warp 2 those of `A[r, i]` (then `L_ri`). The per-level
//! factor packs [`rows_nodes_per_block`]`(NP) = 32 / NP` nodes into a block (the solves
//! [`rows_solve_nodes_per_block`]: the same up to `NP = 8`), node `s` on
//! lanes `s NP .. (s + 1) NP` of each warp (its own shared region, its shuffles within
//! those lanes, the block's barriers shared); the single-launch sweeps run one node per
//! block on lanes `0 .. NP`. With `NP` known at
//! compile time every loop unrolls and every register index is a constant, so the
//! instruction stream is almost only the arithmetic; the generic kernels of
//! [`super::factor`] spend most instructions on index arithmetic and loop control at
//! these sizes.
//!
//! - The Cholesky factorization of `D_i` runs in warp 0 alone, warp-synchronously: the
//!   pivot and the column are broadcast with shuffles, no block barrier per column.
//! - The triangular solves `A L^-T` run in warps 1 and 2 against `L` read from shared
//!   memory (every lane reads the same address: a broadcast). Meanwhile warp 0, otherwise
//!   idle, runs the interlaced forward substitution `y_i = L^-1 b_i` (when there are
//!   right-hand sides) with its row of `L` still in registers.
//! - The products `L_li L_li^T`, `L_ri L_ri^T`, `-L_ri L_li^T` go one to each warp; each lane
//!   produces one row of its product (in `f64` at `NP = 16` in the single launch, the
//!   whole warp's two `m16n8k16` tensor-core operations instead: `products_dmma16`).
//! - Global reads go through shared tiles with coalesced loads; global writes and atomic
//!   adds are coalesced (lane = row of a column-major block).
//!
//! Storage, arguments and status words are those of [`super::factor`] and
//! [`super::solve`], so both kernel families interoperate.

use super::dataflow::SWEEP_FORWARD;
use super::node::{FactorBlocks, Node, load_checked, load_level_output, node, node_at, packed_node};
use super::{FactorArgs, InfoCode, SolveArgs, align_elems, info_key};
use crate::layout::fill_slot;
use crate::layout::{levels, nodes_in_level};
use crate::team::{LaneSlice, Team, Warp};
use crate::tile::copy_batched;
use blocktri_prims::mma::{has_sm90_dmma, mma_m16n8k16_f64};
use blocktri_prims::{Real, atomic, block_dim_x, block_idx_x, lane_id, shared, sync_threads, sync_warp, warp_id};

/// Threads per block of every kernel here: three warps.
pub const ROW_THREADS: u32 = 96;

/// Leading dimension of the shared tiles (`NP + 1`: column reads across lanes then hit
/// different banks).
const fn ldt(np: usize) -> usize {
    np + 1
}

/// Nodes per thread block of the per-level rows factor ([`factor_rows`]): `32 / NP` for
/// `NP <= 16`, one at `NP = 32`. Node `sub` of a block holds lanes
/// `sub * NP .. (sub + 1) * NP` of each of the three warps, so no lane carries padding
/// rows (a lone node left `32 - NP` lanes of every warp idle, and registers, not lanes,
/// bound how many blocks an SM holds: `docs/perf-notes.md`, entry 36). The single-launch
/// sweeps run one node per block ([`super::dataflow`]).
pub const fn rows_nodes_per_block(np: usize) -> u32 {
    if np >= 32 { 1 } else { (32 / np) as u32 }
}

/// Nodes per thread block of the per-level rows solves ([`solve_forward_rows`],
/// [`solve_backward_rows`]): as the factor for `NP <= 8`, one above. A packed solve node
/// loads its three blocks with half (or fewer) of the block's threads, and at `NP = 16`
/// that latency cost more than the extra nodes per SM gained (H100: f32, N = 16384
/// solve 0.157 -> 0.200 ms; `docs/perf-notes.md`, entry 36).
pub const fn rows_solve_nodes_per_block(np: usize) -> u32 {
    if np <= 8 { rows_nodes_per_block(np) } else { 1 }
}

/// Where a node sits in its thread block: lanes `sub * width .. (sub + 1) * width` of each
/// warp (`width = 32 / nodes per block`); `live` false for a packed slot past the last
/// node, which only passes the block's barriers.
#[derive(Clone, Copy)]
struct Slot {
    width: usize,
    sub: usize,
    live: bool,
}

impl Slot {
    /// The only node of its block.
    const WHOLE: Slot = Slot { width: 32, sub: 0, live: true };

    /// The node and slot of this thread in a per-level launch with `per` nodes per block
    /// ([`Slot::WHOLE`] and the block's node for `per = 1`, so that nothing of the
    /// packing is left in those kernels).
    #[inline(always)]
    fn of_level(nblocks: u32, systems: u32, level: u32, per: u32) -> (Node, Slot) {
        if per == 1 {
            return (node(nblocks, level), Slot::WHOLE);
        }
        let width = 32 / per as usize;
        let sub = lane_id() as usize / width;
        let (nd, live) = packed_node(nblocks, systems, level, per, sub as u32);
        (nd, Slot { width, sub, live })
    }

    /// The right-hand-side columns of `nrhs` that the block's nodes solve
    /// ([`Node::columns`]) on `level` of `systems` systems of `nblocks` blocks, the same
    /// in every slot: the column loops pass the block's barriers and warp 0's shuffles,
    /// which take every slot along, so a packed block with a node on an edge solves all.
    /// The slots' nodes are looked at only when some columns are restricted.
    #[inline(always)]
    fn columns(self, nd: &Node, (nblocks, systems, level): (u32, u32, u32), nrhs: u32, edge_from: u32) -> usize {
        let per = (32 / self.width) as u32;
        let any_on_edge = || (0..per).any(|other| packed_node(nblocks, systems, level, per, other).0.on_edge());
        if edge_from < nrhs && per > 1 && any_on_edge() { nrhs as usize } else { nd.columns(nrhs, edge_from) }
    }

    /// The team of the slot's threads (`width` lanes of each warp).
    #[inline(always)]
    fn team(self) -> LaneSlice {
        LaneSlice { width: self.width }
    }

    /// First lane of the slot in each warp: shuffles read `base + row`.
    #[inline(always)]
    fn base(self) -> u32 {
        (self.sub * self.width) as u32
    }

    /// This thread's row within the node (its lane within the slot).
    #[inline(always)]
    fn row(self) -> usize {
        lane_id() as usize % self.width
    }
}

/// Shared memory of [`factor_rows`] in bytes for one node, `NP` and `nrhs` interlaced
/// columns (a per-level block holds [`rows_nodes_per_block`] of these).
pub const fn factor_rows_shared_bytes(np: usize, nrhs: usize, elem_bytes: usize) -> usize {
    (3 * align_elems(ldt(np) * np, elem_bytes) + align_elems(np, elem_bytes) + align_elems(np * nrhs, elem_bytes)) * elem_bytes + 16
}

/// Shared memory of [`solve_forward_rows`] / [`solve_backward_rows`] in bytes.
pub const fn solve_rows_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    (3 * align_elems(ldt(np) * np, elem_bytes) + 4 * align_elems(np, elem_bytes)) * elem_bytes + 16
}

/// Eliminates [`rows_nodes_per_block`]`(NP)` nodes of a level (see the module docs),
/// the factor alone: `args.nrhs` is not looked at ([`factor_solve_rows`] interlaces the
/// forward substitution).
///
/// # Safety
/// As [`super::factor_level`], but with a grid of `ceil(systems * nodes_in_level /`
/// [`rows_nodes_per_block`]`(NP))` blocks of [`ROW_THREADS`] threads,
/// `rows_nodes_per_block(NP) *` [`factor_rows_shared_bytes`] of shared memory and
/// `args.n <= NP <= 32`.
pub unsafe fn factor_rows<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    let (nd, slot) = Slot::of_level(args.nblocks, args.systems, args.level, rows_nodes_per_block(NP));
    // SAFETY: forwarded from the caller; the node of this lane slice.
    unsafe { factor_rows_slot::<T, NP, false>(args, &nd, slot) }
}

/// [`factor_rows`] with the forward substitution of the `args.nrhs` right-hand-side
/// columns interlaced, like [`super::factor_level`]: warp 0 solves `L_ii y = b_i` beside
/// warps 1 and 2's coupling solves, then warps 1 and 2 subtract `L_li y` and `L_ri y`
/// from the neighbours' right-hand sides. A kernel of its own, so that the factor alone
/// keeps its registers and schedule (with both in one kernel the factor alone was 0.5-1 %
/// slower on the H200 at n = 16, `docs/perf-notes.md` entry 92).
///
/// # Safety
/// As [`factor_rows`], with `args.nrhs` columns in `args.rhs` and
/// [`factor_rows_shared_bytes`] for those columns.
pub unsafe fn factor_solve_rows<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    let (nd, slot) = Slot::of_level(args.nblocks, args.systems, args.level, rows_nodes_per_block(NP));
    // SAFETY: forwarded from the caller; the node of this lane slice.
    unsafe { factor_rows_slot::<T, NP, true>(args, &nd, slot) }
}

/// [`factor_rows`] (`RHS`: [`factor_solve_rows`]) for node `nd` of level `args.level`,
/// the block's only node (the body shared with the single-launch sweep,
/// [`super::dataflow`]).
///
/// # Safety
/// As [`factor_rows`] (or [`factor_solve_rows`]) with one node per block; `nd` is a node
/// of `args.level` whose lower levels are complete and visible to the block.
pub(crate) unsafe fn factor_rows_node<T: Real, const NP: usize, const RHS: bool>(args: &FactorArgs<T>, nd: &Node) {
    // SAFETY: forwarded from the caller.
    unsafe { factor_rows_slot::<T, NP, RHS>(args, nd, Slot::WHOLE) }
}

/// The node body: node `nd` on the lanes of `slot`, with the interlaced forward
/// substitution of `args.nrhs` columns when `RHS` (none otherwise, whatever `args.nrhs`).
/// Every thread of the block calls it (every slot passes the same barriers, whether its
/// node failed or is absent).
///
/// # Safety
/// As [`factor_rows_node`] for `nd` when `slot.live`; the block's shared memory holds a
/// [`factor_rows_shared_bytes`] region per slot.
#[inline(always)]
unsafe fn factor_rows_slot<T: Real, const NP: usize, const RHS: bool>(args: &FactorArgs<T>, nd: &Node, slot: Slot) {
    let team = slot.team();
    let a = *args;
    let (n, ld) = (a.n as usize, a.ld as usize);
    let coherent = !a.flags.is_null();
    let (m, b) = (a.level, nd.b);
    let (has_l, has_r) = (nd.left.is_some(), nd.right.is_some());
    let info = unsafe { a.info.add(nd.s) };
    let blk = ld * n;
    let sys_blocks = nd.s * a.nblocks as usize;
    let block = |base: *mut T, idx: usize| unsafe { base.add((sys_blocks + idx) * blk) };
    let t = ldt(NP);
    let tile = align_elems(t * NP, T::BYTES);
    let region = factor_rows_shared_bytes(NP, a.nrhs as usize, T::BYTES) / T::BYTES;
    let smem = unsafe { shared::dynamic_shared::<T>().add(slot.sub * region) };
    let (sd, sl, sr) = (smem, unsafe { smem.add(tile) }, unsafe { smem.add(2 * tile) });
    let inv_diag = unsafe { smem.add(3 * tile) };
    let ybuf = unsafe { inv_diag.add(align_elems(NP, T::BYTES)) };
    let status = unsafe { ybuf.add(align_elems(NP * a.nrhs as usize, T::BYTES)) } as *mut u32;
    let (warp, lane, base) = (warp_id() as usize, slot.row(), slot.base());

    // 1.-2. Coalesced loads into the tiles (padding: identity in D, zero in the
    //    couplings), then the checks: finite values, symmetric D.
    let at = |tile: *mut T, r: usize, c: usize| unsafe { tile.add(c * t + r) };
    // SAFETY: as the caller guarantees; `at` stays inside the slot's tiles.
    let mut live = unsafe {
        load_checked::<T, NP, _>(
            team,
            slot.live,
            &a,
            nd,
            status,
            |r, c, (d, lv, rv)| {
                *at(sd, r, c) = d;
                *at(sl, r, c) = lv;
                *at(sr, r, c) = rv;
            },
            |r, c| (*at(sd, r, c), *at(sl, r, c), *at(sr, r, c)),
            |r, c| *at(sd, r, c),
        )
    };

    // 3. Each lane takes its panel row into registers.
    let mut row = [T::ZERO; NP];
    let active = live && lane < NP;
    if active {
        for c in 0..NP {
            row[c] = unsafe {
                match warp {
                    0 => *sd.add(c * t + lane),
                    // The stored left coupling is A[i, l]; the panel row p of A[l, i] is its column p.
                    1 => *sl.add(lane * t + c),
                    _ => *sr.add(c * t + lane),
                }
            };
        }
    }
    team.sync();

    // The interlaced forward substitution's right-hand sides (step 5a): the node's
    // segment is final when its body starts (its updaters ran before), so warp 0 issues
    // the first column's load here and the factorization below hides its latency.
    let nrhs = if RHS { a.nrhs as usize } else { 0 };
    let ldb = a.nblocks as usize * n;
    // SAFETY (`add`s): system `nd.s`'s right-hand sides, segment `idx`; formed only with `nrhs > 0`.
    let seg = |idx: usize| unsafe { a.rhs.add(nd.s * ldb * nrhs + idx * n) };
    let first_b = if nrhs > 0 && warp == 0 && live && lane < n {
        // SAFETY: entry `lane` of column 0 of the node's own segment.
        unsafe { load_level_output(seg(b).add(lane), coherent) }
    } else {
        T::ZERO
    };

    // 4. Warp 0: Cholesky of D, one column per step, broadcasts by shuffles (every lane
    //    of the warp takes part; the slots' shuffles read within their own lanes).
    if warp == 0 {
        let mut failed = u32::MAX;
        for k in 0..NP {
            let d = row[k].shfl_idx(base + k as u32);
            if !(d > T::ZERO && d.is_finite()) && failed == u32::MAX {
                failed = k as u32;
            }
            let rs = d.rsqrt_fast();
            let l = row[k] * rs; // l_ik for lanes below k; sqrt(d) on lane k
            row[k] = l;
            if active && lane == k {
                unsafe { *inv_diag.add(k) = rs };
            }
            // Rectangular loop with a condition, not `k + 1..NP`: a trip count that depends on
            // the outer index stops LLVM from unrolling the nest completely.
            for j in 0..NP {
                if j > k {
                    let ljk = l.shfl_idx(base + j as u32);
                    row[j] = (-l).mul_add(ljk, row[j]);
                }
            }
        }
        if active {
            for c in 0..NP {
                // L, lower triangle, into the D tile (now free).
                unsafe { *sd.add(c * t + lane) = if c <= lane { row[c] } else { T::ZERO } };
            }
        }
        if live && lane == 0 && failed != u32::MAX {
            unsafe { *status = failed };
        }
        sync_warp();
    }
    team.sync();
    if live && unsafe { *status } != u32::MAX {
        if team.rank() == 0 {
            unsafe { atomic::atomic_min_u64(info, info_key(m, InfoCode::NotPositiveDefinite, b as u32)) };
        }
        live = false;
    }
    let active = live && lane < NP;
    let cols = if nrhs > 0 { slot.columns(nd, (a.nblocks, a.systems, a.level), a.nrhs, a.edge_from) } else { 0 };

    // 5a. Warp 0, beside warps 1 and 2's step 5: the interlaced forward substitution
    //     y_i = L^-1 b_i, one right-hand-side column at a time, with its `L` row still in
    //     registers (entries above the diagonal are not read). Until entry 92 of
    //     `docs/perf-notes.md` this ran after the products, its load and shuffle chain and
    //     a barrier on the node's critical path while warps 1 and 2 waited.
    if warp == 0 && cols > 0 {
        let bi = seg(b);
        for col in 0..cols {
            let v = if col == 0 {
                first_b
            } else if live && lane < n {
                // SAFETY: entry `lane` of column `col` of the node's segment.
                unsafe { load_level_output(bi.add(col * ldb + lane), coherent) }
            } else {
                T::ZERO
            };
            // SAFETY (`inv_diag`): the slot's pivots, written in step 4.
            let v = solve_l_by_shuffles::<T, NP>(v, (lane, base), |j| unsafe { *inv_diag.add(j) }, |j| row[j]);
            if live && lane < n {
                // SAFETY: as the load.
                unsafe { *bi.add(col * ldb + lane) = v };
            }
            if active {
                // SAFETY: the slot's `NP x nrhs` staging of `y`, read by warps 1 and 2 in step
                // 8 after step 6's barrier.
                unsafe { *ybuf.add(col * NP + lane) = v };
            }
        }
    }

    // 5. Warps 1, 2: row <- row L^-T (forward substitution along the row).
    if live && warp > 0 && ((warp == 1 && has_l) || (warp == 2 && has_r)) {
        for c in 0..NP {
            let x = row[c] * unsafe { *inv_diag.add(c) };
            row[c] = x;
            for q in 0..NP {
                if q > c {
                    row[q] = (-x).mul_add(unsafe { *sd.add(c * t + q) }, row[q]);
                }
            }
        }
    }

    // 6. Store the factor blocks (lane = row: coalesced), and the K rows into their tiles.
    // (No reference to `row` is taken anywhere: that would move it to local memory.)
    let (dst, lower_only) = match warp {
        0 => (Some(block(a.diag, b)), true),
        1 if has_l => (Some(block(a.left, b)), false),
        2 if has_r => (Some(block(a.right, b)), false),
        _ => (None, false),
    };
    if let (Some(base), true) = (dst, live && lane < n) {
        for c in 0..NP {
            if c < n {
                let v = if lower_only && c > lane { T::ZERO } else { row[c] };
                unsafe { *base.add(c * ld + lane) = v };
            }
        }
    }
    if active && warp > 0 {
        let tile_k = if warp == 1 { sl } else { sr };
        for c in 0..NP {
            unsafe { *tile_k.add(c * t + lane) = row[c] };
        }
    }
    team.sync();

    // 7. Products, one per warp: D_l -= K_l K_l^T (warp 0), D_r -= K_r K_r^T (warp 1),
    //    fill = -K_r K_l^T (warp 2, with its own K_r row).
    let job: Option<(*mut T, *const T, *const T, bool)> = match warp {
        0 if has_l => Some((block(a.diag, (nd.left.unwrap_or(1) - 1) as usize), sl, sl, true)),
        1 if has_r => Some((block(a.diag, (nd.right.unwrap_or(1) - 1) as usize), sr, sr, true)),
        2 if has_l && has_r => {
            let (l, r) = (nd.left.unwrap_or(1), nd.right.unwrap_or(1));
            let (owner, is_left) = fill_slot(l, r, m);
            Some((block(if is_left { a.left } else { a.right }, (owner - 1) as usize), sr, sl, false))
        }
        _ => None,
    };
    if T::BYTES == 8 && NP == 16 && slot.width == 32 && has_sm90_dmma() {
        // SAFETY: the block's one node (the job is the same on every lane of the warp);
        // its `K` tiles are written (barrier above); the destinations as below.
        unsafe { products_dmma16::<T>(job.filter(|_| live), (n, a.ld as usize)) };
    } else if let Some((dst, rows_of, cols_of, atomic_sub)) = job
        && live
        && lane < n
    {
        let mut mine = [T::ZERO; NP];
        for c in 0..NP {
            mine[c] = unsafe { *rows_of.add(c * t + lane) };
        }
        // Four output columns at a time: four independent multiply-add chains. The outer
        // loop runs to the run-time `n`, so it stays a loop (unrolling all NP x NP
        // products keeps too many values live); the inner dot products unroll.
        let mut q0 = 0;
        while q0 < n {
            let mut acc = [T::ZERO; 4];
            for c in 0..NP {
                let v = mine[c];
                for u in 0..4 {
                    // Columns past n read padding (zero) and are not stored.
                    acc[u] = v.mul_add(unsafe { *cols_of.add(c * t + (q0 + u).min(NP - 1)) }, acc[u]);
                }
            }
            for u in 0..4 {
                let q = q0 + u;
                if q < n {
                    let at = unsafe { dst.add(q * ld + lane) };
                    if atomic_sub {
                        unsafe { T::atomic_add_global(at, -acc[u]) };
                    } else {
                        unsafe { *at = -acc[u] };
                    }
                }
            }
            q0 += 4;
        }
    }

    // 8. The interlaced forward substitution's coupling updates: b_l -= K_l y_i,
    //    b_r -= K_r y_i (warps 1, 2; `y_i` from step 5a, ordered by step 6's barrier),
    //    one column at a time. No barrier follows, so threads without columns leave.
    if cols == 0 {
        return;
    }
    let target = match warp {
        1 if has_l => Some(nd.left.unwrap_or(1)),
        2 if has_r => Some(nd.right.unwrap_or(1)),
        _ => None,
    };
    if let Some(j) = target
        && live
        && lane < n
    {
        let tile_k = if warp == 1 { sl } else { sr };
        let mut krow = [T::ZERO; NP];
        for c in 0..NP {
            krow[c] = unsafe { *tile_k.add(c * t + lane) };
        }
        let bj = seg((j - 1) as usize);
        for col in 0..cols {
            let mut acc = T::ZERO;
            for c in 0..NP {
                acc = krow[c].mul_add(unsafe { *ybuf.add(col * NP + c) }, acc);
            }
            unsafe { T::atomic_add_global(bj.add(col * ldb + lane), -acc) };
        }
    }
}

/// Step 7 of the rows factor for `f64` at padded size 16 on the sm_90 DMMA shapes, for
/// the lone node of a block (the single launch): the warp's product `P = K_a K_b^T`
/// (`16 x 16 x 16`) as two `m16n8k16` operations of the whole warp instead of a row of
/// 256 multiply-adds on each of 16 lanes. `job` is `(destination, K_a, K_b, atomic)`
/// (`None`: no job or no node); entry `(row, col)`, both below `n`, is added to (atomic)
/// or stored at `dst[col * ld + row]` negated, as in the FMA loop. In the per-level
/// launches, where two nodes share each warp, the same products slot after slot were
/// no faster overall (`docs/perf-notes.md`, entry 79), so they keep the FMA loop.
///
/// # Safety
/// All 32 lanes of the warp call it together with the same `job`; `T` is `f64` and
/// `has_sm90_dmma()`; the `K` tiles (column-major, leading dimension 17) are written and
/// visible to the warp; the destination is valid for the job.
#[inline(always)]
unsafe fn products_dmma16<T: Real>(job: Option<(*mut T, *const T, *const T, bool)>, (n, ld): (usize, usize)) {
    const T16: usize = ldt(16);
    let Some((dst, ka, kb, atomic_sub)) = job else { return };
    let lane = lane_id() as usize;
    let (g, q) = (lane / 4, lane % 4);
    // A fragment: K_a[g + 8 (i % 2)][q + 4 (i / 2)]; B: K_b[8 w + g][q + 4 u]
    // (entry (r, c) of a tile at c * 17 + r).
    // SAFETY (reads): inside the 16 x 16 tiles.
    let a: [f64; 8] = core::array::from_fn(|i| unsafe { *ka.add((q + 4 * (i / 2)) * T16 + g + 8 * (i % 2)) }.to_f64());
    for w in 0..2 {
        let b: [f64; 4] = core::array::from_fn(|u| unsafe { *kb.add((q + 4 * u) * T16 + 8 * w + g) }.to_f64());
        let c = mma_m16n8k16_f64(a, b, [0.0; 4]);
        for (i, v) in c.iter().enumerate() {
            let (row, col) = (g + 8 * (i / 2), 8 * w + 2 * q + i % 2);
            if row < n && col < n {
                // SAFETY: entry (row, col) of the job's destination block.
                unsafe {
                    let at = dst.add(col * ld + row);
                    if atomic_sub {
                        T::atomic_add_global(at, T::from_f64(-v));
                    } else {
                        *at = T::from_f64(-v);
                    }
                }
            }
        }
    }
}

/// Loads the node's `L_ii` (and, for the backward sweep, `L_li`, `L_ri`) into shared
/// tiles (padded: identity / zero) and `1 / L_jj` into `inv_diag`, for the lanes of
/// `slot` (nothing for a slot without a node). Ends with a barrier; every thread of the
/// block calls it.
unsafe fn load_factor<T: Real, const NP: usize>(
    a: &SolveArgs<T>,
    nd: &Node,
    slot: Slot,
    couplings: bool,
    tiles: [*mut T; 3],
    inv_diag: *mut T,
) {
    let team = slot.team();
    let t = ldt(NP);
    // SAFETY: forwarded from the caller.
    let blocks = unsafe { FactorBlocks::of(a, nd, couplings) };
    if slot.live {
        copy_batched(
            team,
            NP,
            NP,
            |r, c| unsafe { blocks.entry(r, c) },
            |r, c, (d, lv, rv)| unsafe {
                *tiles[0].add(c * t + r) = d;
                *tiles[1].add(c * t + r) = lv;
                *tiles[2].add(c * t + r) = rv;
            },
        );
    }
    team.sync();
    if slot.live {
        crate::tile::for_each_index(team, NP, |j| unsafe { *inv_diag.add(j) = T::ONE / *tiles[0].add(j * t + j) });
    }
    team.sync();
}

/// The shared tiles `[L_ii, L_li, L_ri]` and the four vectors after them of a solve
/// slot's region ([`solve_rows_shared_bytes`] each).
#[inline(always)]
fn solve_region<T: Real, const NP: usize>(slot: Slot) -> ([*mut T; 3], [*mut T; 4]) {
    let tile = align_elems(ldt(NP) * NP, T::BYTES);
    let vec = align_elems(NP, T::BYTES);
    let region = solve_rows_shared_bytes(NP, T::BYTES) / T::BYTES;
    // SAFETY (all `add`s): inside the slot's region of the block's dynamic shared memory.
    let smem = unsafe { shared::dynamic_shared::<T>().add(slot.sub * region) };
    let tiles = [smem, unsafe { smem.add(tile) }, unsafe { smem.add(2 * tile) }];
    let v0 = unsafe { smem.add(3 * tile) };
    (tiles, [v0, unsafe { v0.add(vec) }, unsafe { v0.add(2 * vec) }, unsafe { v0.add(3 * vec) }])
}

/// Forward substitution of one level (register-resident counterpart of
/// [`super::solve_forward_level`]), [`rows_solve_nodes_per_block`]`(NP)` nodes per block: warp
/// 0 solves `L_ii y = b_i` with shuffles, warps 1 and 2 subtract `L_li y` and `L_ri y`
/// from the neighbours (atomic adds).
///
/// # Safety
/// As [`super::solve_forward_level`], with a grid of `ceil(systems * nodes_in_level /`
/// [`rows_solve_nodes_per_block`]`(NP))` blocks of [`ROW_THREADS`] threads,
/// `rows_solve_nodes_per_block(NP) *` [`solve_rows_shared_bytes`] of shared memory and
/// `args.n <= NP <= 32`.
pub unsafe fn solve_forward_rows<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let (nd, slot) = Slot::of_level(args.nblocks, args.systems, args.level, rows_solve_nodes_per_block(NP));
    // SAFETY: forwarded from the caller; the node of this lane slice.
    unsafe { solve_forward_rows_slot::<T, NP>(args, &nd, slot, false) }
}

/// [`solve_forward_rows`] for node `nd` of level `args.level`, the block's only node, after
/// [`solve_rows_load_node`] of the same node.
///
/// # Safety
/// As [`solve_forward_rows`] with one node per block; the forward sweep of `nd`'s lower
/// levels is complete and visible to the block.
pub(crate) unsafe fn solve_forward_rows_node<T: Real, const NP: usize>(args: &SolveArgs<T>, nd: &Node) {
    // SAFETY: forwarded from the caller.
    unsafe { solve_forward_rows_slot::<T, NP>(args, nd, Slot::WHOLE, true) }
}

/// The factor blocks of node `nd` into the shared tiles of a one-node block, for
/// [`solve_forward_rows_node`] and [`solve_backward_rows_node`]: the single-launch solve
/// calls it *before* waiting for the nodes the solve depends on (the factor is complete
/// before the launch), so that a node's largest load is off the sweep's critical path.
/// Ends with a barrier; every thread of the block calls it.
///
/// # Safety
/// As [`solve_forward_rows_node`], except that only the factorization needs to be
/// complete.
pub(crate) unsafe fn solve_rows_load_node<T: Real, const NP: usize>(args: &SolveArgs<T>, nd: &Node) {
    let (tiles, [inv_diag, _, _, _]) = solve_region::<T, NP>(Slot::WHOLE);
    // SAFETY: forwarded from the caller; the region of the block's only node.
    unsafe { load_factor::<T, NP>(args, nd, Slot::WHOLE, true, tiles, inv_diag) };
}

/// The forward node body on the lanes of `slot`; every thread of the block calls it.
/// `loaded`: [`solve_rows_load_node`] already filled the slot's tiles.
///
/// # Safety
/// As [`solve_forward_rows_node`] for `nd` when `slot.live`; a
/// [`solve_rows_shared_bytes`] region per slot.
#[inline(always)]
unsafe fn solve_forward_rows_slot<T: Real, const NP: usize>(args: &SolveArgs<T>, nd: &Node, slot: Slot, loaded: bool) {
    let team = slot.team();
    let a = *args;
    let (n, k) = (a.n as usize, a.nrhs as usize);
    let coherent = !a.flags.is_null();
    let t = ldt(NP);
    let (tiles, [inv_diag, ybuf, _, _]) = solve_region::<T, NP>(slot);
    if !loaded {
        unsafe { load_factor::<T, NP>(&a, nd, slot, true, tiles, inv_diag) };
    }
    let (warp, lane, base, live) = (warp_id() as usize, slot.row(), slot.base(), slot.live);
    let ldb = a.nblocks as usize * n;
    let rhs_sys = unsafe { a.rhs.add(nd.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    // Lane row: L row (warp 0), K_l row (warp 1), K_r row (warp 2).
    let mut row = [T::ZERO; NP];
    let mine = match warp {
        0 => tiles[0],
        1 => tiles[1],
        _ => tiles[2],
    };
    if live && lane < NP {
        for c in 0..NP {
            row[c] = unsafe { *mine.add(c * t + lane) };
        }
    }
    let target = match warp {
        1 => nd.left,
        2 => nd.right,
        _ => None,
    };
    for col in 0..slot.columns(nd, (a.nblocks, a.systems, a.level), a.nrhs, a.edge_from) {
        if warp == 0 {
            let bi = seg(nd.b);
            let v = if live && lane < n { unsafe { load_level_output(bi.add(col * ldb + lane), coherent) } } else { T::ZERO };
            let v = solve_l_by_shuffles::<T, NP>(v, (lane, base), |j| unsafe { *inv_diag.add(j) }, |j| row[j]);
            if live && lane < n {
                unsafe { *bi.add(col * ldb + lane) = v };
            }
            if live && lane < NP {
                unsafe { *ybuf.add(lane) = v };
            }
        }
        team.sync();
        if let (Some(j), true) = (target, live && lane < n) {
            let mut acc = T::ZERO;
            for c in 0..NP {
                acc = row[c].mul_add(unsafe { *ybuf.add(c) }, acc);
            }
            unsafe { T::atomic_add_global(seg((j - 1) as usize).add(col * ldb + lane), -acc) };
        }
        team.sync();
    }
}

/// Backward substitution of one level (register-resident counterpart of
/// [`super::solve_backward_level`]), [`rows_solve_nodes_per_block`]`(NP)` nodes per block:
/// `z = y_i - L_li^T x_l - L_ri^T x_r`, lane `c` forming entry `c`; then `L_ii^T x_i = z`
/// in warp 0 with shuffles.
///
/// # Safety
/// As [`super::solve_backward_level`], with the grid, threads and shared memory of
/// [`solve_forward_rows`] and `args.n <= NP <= 32`.
pub unsafe fn solve_backward_rows<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let (nd, slot) = Slot::of_level(args.nblocks, args.systems, args.level, rows_solve_nodes_per_block(NP));
    // SAFETY: forwarded from the caller; the node of this lane slice.
    unsafe { solve_backward_rows_slot::<T, NP>(args, &nd, slot, false) }
}

/// [`solve_backward_rows`] for node `nd` of level `args.level`, the block's only node, after
/// [`solve_rows_load_node`] of the same node.
///
/// # Safety
/// As [`solve_backward_rows`] with one node per block; the backward sweep of `nd`'s
/// neighbours (the levels above) and `nd`'s forward substitution are complete and
/// visible to the block.
pub(crate) unsafe fn solve_backward_rows_node<T: Real, const NP: usize>(args: &SolveArgs<T>, nd: &Node) {
    // SAFETY: forwarded from the caller.
    unsafe { solve_backward_rows_slot::<T, NP>(args, nd, Slot::WHOLE, true) }
}

/// The backward node body on the lanes of `slot`; every thread of the block calls it.
///
/// # Safety
/// As [`solve_backward_rows_node`] for `nd` when `slot.live`; a
/// [`solve_rows_shared_bytes`] region per slot.
#[inline(always)]
unsafe fn solve_backward_rows_slot<T: Real, const NP: usize>(args: &SolveArgs<T>, nd: &Node, slot: Slot, loaded: bool) {
    let team = slot.team();
    let a = *args;
    let (n, k) = (a.n as usize, a.nrhs as usize);
    let coherent = !a.flags.is_null();
    let t = ldt(NP);
    let (tiles, [inv_diag, xl, xr, _]) = solve_region::<T, NP>(slot);
    if !loaded {
        unsafe { load_factor::<T, NP>(&a, nd, slot, true, tiles, inv_diag) };
    }
    let (warp, lane, base, live) = (warp_id() as usize, slot.row(), slot.base(), slot.live);
    let t_ = tiles;
    let ldb = a.nblocks as usize * n;
    let rhs_sys = unsafe { a.rhs.add(nd.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    // Lane c of warp 0 keeps column c of L (row c of L^T).
    let mut lcol = [T::ZERO; NP];
    if live && warp == 0 && lane < NP {
        for j in 0..NP {
            lcol[j] = unsafe { *t_[0].add(lane * t + j) };
        }
    }
    let mut bad = false;
    for col in 0..slot.columns(nd, (a.nblocks, a.systems, a.level), a.nrhs, a.edge_from) {
        // Neighbour solutions into shared memory (warps 1, 2), coalesced.
        if live && lane < NP {
            let (nb, dst) = match warp {
                1 => (nd.left, xl),
                2 => (nd.right, xr),
                _ => (None, core::ptr::null_mut()),
            };
            if let Some(j) = nb {
                let v =
                    if lane < n { unsafe { load_level_output(seg((j - 1) as usize).add(col * ldb + lane), coherent) } } else { T::ZERO };
                unsafe { *dst.add(lane) = v };
            }
        }
        team.sync();
        if warp == 0 {
            let bi = seg(nd.b);
            let mut z = if live && lane < n { unsafe { load_level_output(bi.add(col * ldb + lane), coherent) } } else { T::ZERO };
            if live && lane < NP {
                // z_c -= sum_p K_l[p][c] x_l[p] + K_r[p][c] x_r[p].
                if nd.left.is_some() {
                    for p in 0..NP {
                        z = (-unsafe { *t_[1].add(lane * t + p) }).mul_add(unsafe { *xl.add(p) }, z);
                    }
                }
                if nd.right.is_some() {
                    for p in 0..NP {
                        z = (-unsafe { *t_[2].add(lane * t + p) }).mul_add(unsafe { *xr.add(p) }, z);
                    }
                }
            }
            let z = solve_lt_by_shuffles::<T, NP>(z, (lane, base), |j| unsafe { *inv_diag.add(j) }, |j| lcol[j]);
            if live && lane < n {
                bad |= !z.is_finite();
                unsafe { *bi.add(col * ldb + lane) = z };
            }
        }
        team.sync();
    }
    if bad {
        unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}

/// The node of this warp in a warp-per-node solve launch (`None` past the level's last
/// node: the whole warp), with its `L_ii`, `L_li`, `L_ri` loaded into the shared tiles of
/// the warp's region (the per-level kernels' slot layout, padded as [`load_factor`] pads)
/// and `1 / L_jj` into its first vector, by the warp alone; the region's tiles and
/// vectors are returned written and visible to the warp. Every lane of the warp calls it.
///
/// # Safety
/// As [`solve_backward_rows_warps`].
#[inline(always)]
unsafe fn warp_node<T: Real, const NP: usize>(a: &SolveArgs<T>) -> Option<(Node, [*mut T; 3], [*mut T; 4])> {
    let warp = warp_id();
    let (nd, live) = packed_node(a.nblocks, a.systems, a.level, SOLVE_WARPS_PER_BLOCK, warp);
    if !live {
        return None;
    }
    // SAFETY: the caller's contract; `nd` is a node of the level.
    let (tiles, vectors) = unsafe { load_warp_node::<T, NP>(a, &nd, warp as usize) };
    Some((nd, tiles, vectors))
}

/// Loads node `nd`'s `L_ii`, `L_li`, `L_ri` into the shared tiles of warp region `sub`
/// (the per-level kernels' slot layout, padded as [`load_factor`] pads) and `1 / L_jj`
/// into its first vector, by the calling warp alone; returns the region's tiles and
/// vectors, written and visible to the warp. Every lane of the warp calls it, after the
/// warp's last read of the region (the node bodies end with `__syncwarp`).
///
/// # Safety
/// `a` satisfies [`super::solve_backward_level`]'s contract for `nd`'s level, and the
/// block's dynamic shared memory holds region `sub` ([`solve_rows_shared_bytes`] each).
#[inline(always)]
unsafe fn load_warp_node<T: Real, const NP: usize>(a: &SolveArgs<T>, nd: &Node, sub: usize) -> ([*mut T; 3], [*mut T; 4]) {
    let t = ldt(NP);
    let (tiles, vectors) = solve_region::<T, NP>(Slot { width: 32, sub, live: true });
    // SAFETY: the caller's contract; the blocks of `nd`.
    let blocks = unsafe { FactorBlocks::of(a, nd, true) };
    copy_batched(
        Warp,
        NP,
        NP,
        |r, c| unsafe { blocks.entry(r, c) },
        |r, c, (d, lv, rv)| unsafe {
            *tiles[0].add(c * t + r) = d;
            *tiles[1].add(c * t + r) = lv;
            *tiles[2].add(c * t + r) = rv;
        },
    );
    sync_warp();
    let lane = lane_id() as usize;
    if lane < NP {
        // SAFETY: inside the warp's tiles and vector.
        unsafe { *vectors[0].add(lane) = T::ONE / *tiles[0].add(lane * t + lane) };
    }
    sync_warp();
    (tiles, vectors)
}

/// Forward substitution of one level with one warp per node, [`SOLVE_WARPS_PER_BLOCK`]
/// independent warps per block, for `NP <= 16`: the arithmetic and its order are those
/// of [`solve_forward_rows`] (lanes `0 .. NP` solve `L_ii y = b_i` by shuffles, then
/// subtract `L_li y` from the left neighbour while lanes `NP .. 2 NP` subtract `L_ri y`
/// from the right one, with atomic adds), without the three-warp kernel's block barriers
/// (see [`solve_backward_rows_warps`]). The coupling rows are read from shared memory in
/// the product instead of held in registers, which keeps the warp within 64 registers.
///
/// # Safety
/// As [`solve_forward_rows`], with the grid, threads and shared memory of
/// [`solve_backward_rows_warps`] and `args.n <= NP <= 16`.
pub unsafe fn solve_forward_rows_warps<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let a = *args;
    // SAFETY: the caller's contract. A warp without a node leaves: no other warp waits for it.
    let Some((nd, tiles, vectors)) = (unsafe { warp_node::<T, NP>(&a) }) else { return };
    // SAFETY: the node's tiles are loaded; the caller's contract.
    unsafe { forward_warp_body::<T, NP>(&a, &nd, tiles, vectors, !a.flags.is_null()) }
}

/// The node body of [`solve_forward_rows_warps`] for node `nd` of `a`'s level, its tiles
/// and vectors loaded by [`load_warp_node`]; `coherent`: the right-hand sides are read
/// through L2 (other blocks or warps of this launch wrote them). Ends with `__syncwarp`.
///
/// # Safety
/// As [`solve_forward_rows_warps`] for `nd`; every node that updates `nd`'s segment is
/// done and ordered before this call.
#[inline(always)]
unsafe fn forward_warp_body<T: Real, const NP: usize>(
    a: &SolveArgs<T>,
    nd: &Node,
    tiles: [*mut T; 3],
    [inv_diag, ybuf, _, _]: [*mut T; 4],
    coherent: bool,
) {
    const { assert!(NP <= 16, "L_li y and L_ri y take NP lanes each") };
    let (n, k) = (a.n as usize, a.nrhs as usize);
    let t = ldt(NP);
    let lane = lane_id() as usize;
    // Lane r < NP keeps row r of L (the substitution's operand).
    let mut lrow = [T::ZERO; NP];
    if lane < NP {
        for c in 0..NP {
            lrow[c] = unsafe { *tiles[0].add(c * t + lane) };
        }
    }
    // Lanes 0 .. NP take row `r` of L_li (left neighbour), lanes NP .. 2 NP of L_ri.
    let (r, half) = (lane % NP, lane / NP);
    let (target, krows) = match half {
        0 => (nd.left, tiles[1]),
        1 => (nd.right, tiles[2]),
        _ => (None, tiles[2]),
    };
    let ldb = a.nblocks as usize * n;
    // SAFETY: system `nd.s` of the right-hand sides (caller's contract).
    let rhs_sys = unsafe { a.rhs.add(nd.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    let bi = seg(nd.b);
    for col in 0..nd.columns(a.nrhs, a.edge_from) {
        let v = if lane < n { unsafe { load_level_output(bi.add(col * ldb + lane), coherent) } } else { T::ZERO };
        // Lanes from NP hold zero rows of L: what they compute is never stored.
        let v = solve_l_by_shuffles::<T, NP>(v, (lane, 0), |j| unsafe { *inv_diag.add(j) }, |j| lrow[j]);
        if lane < n {
            unsafe { *bi.add(col * ldb + lane) = v };
        }
        if lane < NP {
            unsafe { *ybuf.add(lane) = v };
        }
        sync_warp();
        if let (Some(j), true) = (target, r < n) {
            let mut acc = T::ZERO;
            for c in 0..NP {
                acc = unsafe { *krows.add(c * t + r) }.mul_add(unsafe { *ybuf.add(c) }, acc);
            }
            unsafe { T::atomic_add_global(seg((j - 1) as usize).add(col * ldb + r), -acc) };
        }
        // The next column's substitution overwrites `ybuf`.
        sync_warp();
    }
}

/// Nodes (warps) per thread block of [`solve_forward_rows_warps`] and
/// [`solve_backward_rows_warps`].
pub const SOLVE_WARPS_PER_BLOCK: u32 = 4;

/// Shared memory of [`solve_forward_rows_warps`] and [`solve_backward_rows_warps`] in
/// bytes: a [`solve_rows_shared_bytes`] region per warp.
pub const fn solve_rows_warps_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    SOLVE_WARPS_PER_BLOCK as usize * solve_rows_shared_bytes(np, elem_bytes)
}

/// Backward substitution of one level with **one warp per node** and
/// [`SOLVE_WARPS_PER_BLOCK`] independent warps per block, for `NP <= 16`. The arithmetic,
/// and its order, is that of [`solve_backward_rows`] (the same bits and status words); what
/// changes is who waits: there, one node per three-warp block, warps 1 and 2 fetch the
/// neighbours' entries and then idle at a block barrier through warp 0's substitution
/// (31 % of the stall cycles under `ncu`, ten nodes per multiprocessor by registers,
/// `docs/perf-notes.md` entry 89). Here a node's warp loads its three factor blocks,
/// lanes `0 .. NP` fetch `x_l` and lanes `NP .. 2 NP` fetch `x_r` while all lanes below `n`
/// fetch `y_i`, and only `__syncwarp` orders them: no block barrier, and up to 32 nodes per
/// multiprocessor (64 registers, ~7 KB of shared memory per warp at `NP = 16` in `f64`).
///
/// # Safety
/// As [`solve_backward_rows`], with a grid of `ceil(systems * nodes_in_level /`
/// [`SOLVE_WARPS_PER_BLOCK`]`)` blocks of `32 *` [`SOLVE_WARPS_PER_BLOCK`] threads,
/// [`solve_rows_warps_shared_bytes`] of shared memory and `args.n <= NP <= 16`.
pub unsafe fn solve_backward_rows_warps<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let a = *args;
    // SAFETY: the caller's contract. A warp without a node leaves: no other warp waits for it.
    let Some((nd, tiles, vectors)) = (unsafe { warp_node::<T, NP>(&a) }) else { return };
    // SAFETY: the node's tiles are loaded; the caller's contract.
    unsafe { backward_warp_body::<T, NP>(&a, &nd, tiles, vectors, !a.flags.is_null()) }
}

/// The node body of [`solve_backward_rows_warps`] for node `nd` of `a`'s level, its tiles
/// and vectors loaded by [`load_warp_node`]; `coherent` as in [`forward_warp_body`]. Ends
/// with `__syncwarp`.
///
/// # Safety
/// As [`solve_backward_rows_warps`] for `nd`; its neighbours' solutions and its own
/// forward result are done and ordered before this call.
#[inline(always)]
unsafe fn backward_warp_body<T: Real, const NP: usize>(
    a: &SolveArgs<T>,
    nd: &Node,
    tiles: [*mut T; 3],
    [inv_diag, xl, xr, _]: [*mut T; 4],
    coherent: bool,
) {
    const { assert!(NP <= 16, "x_l and x_r take NP lanes each") };
    let (n, k) = (a.n as usize, a.nrhs as usize);
    let t = ldt(NP);
    let lane = lane_id() as usize;
    // Lane c keeps column c of L (row c of L^T), as warp 0 of the per-level kernel.
    let mut lcol = [T::ZERO; NP];
    if lane < NP {
        for j in 0..NP {
            lcol[j] = unsafe { *tiles[0].add(lane * t + j) };
        }
    }
    let ldb = a.nblocks as usize * n;
    // SAFETY: system `nd.s` of the right-hand sides (caller's contract).
    let rhs_sys = unsafe { a.rhs.add(nd.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    let bi = seg(nd.b);
    // Lanes 0 .. NP fetch x_l, lanes NP .. 2 NP x_r (entry `lane % NP`).
    let (nb, dst) = if lane < NP { (nd.left, xl) } else { (nd.right, xr) };
    let (c, fetches) = (lane % NP, lane < 2 * NP);
    let mut bad = false;
    for col in 0..nd.columns(a.nrhs, a.edge_from) {
        let z0 = if lane < n { unsafe { load_level_output(bi.add(col * ldb + lane), coherent) } } else { T::ZERO };
        if fetches && let Some(j) = nb {
            let v = if c < n { unsafe { load_level_output(seg((j - 1) as usize).add(col * ldb + c), coherent) } } else { T::ZERO };
            // SAFETY: entry c < NP of the warp's vector.
            unsafe { *dst.add(c) = v };
        }
        sync_warp();
        let mut z = z0;
        if lane < NP {
            // z_c -= sum_p K_l[p][c] x_l[p] + K_r[p][c] x_r[p], as the per-level kernel.
            if nd.left.is_some() {
                for p in 0..NP {
                    z = (-unsafe { *tiles[1].add(lane * t + p) }).mul_add(unsafe { *xl.add(p) }, z);
                }
            }
            if nd.right.is_some() {
                for p in 0..NP {
                    z = (-unsafe { *tiles[2].add(lane * t + p) }).mul_add(unsafe { *xr.add(p) }, z);
                }
            }
        }
        let z = solve_lt_by_shuffles::<T, NP>(z, (lane, 0), |j| unsafe { *inv_diag.add(j) }, |j| lcol[j]);
        if lane < n {
            bad |= !z.is_finite();
            unsafe { *bi.add(col * ldb + lane) = z };
        }
        // The next column's fetches overwrite x_l and x_r.
        sync_warp();
    }
    if bad {
        unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}

/// Both sweeps of the solve (or the backward one) on levels `args.level..`, **one thread
/// block per system**: the warps of the block take a level's nodes in turn (warp `w` the
/// nodes `w, w + warps, ..`, the node bodies of [`solve_forward_rows_warps`] and
/// [`solve_backward_rows_warps`], so the arithmetic and its order are theirs), and a block
/// barrier between levels orders each level's writes before the next level's reads. For
/// short chains: the single-launch sweep ([`super::solve_rows_dataflow`]) hands each node
/// on through a completion flag in global memory and a block of its own, ~5 µs a level
/// and sweep at N = 64, padded size 8; here a level costs the node body's own chain of
/// global round trips (~1.7 µs at padded size 8, ~3 µs at 16) and a barrier. Measured on
/// the H200 (`docs/perf-notes.md`, entry 106): solves at N = 16 and 32 -28 to -35 % at
/// padded sizes 4 and 8, but +15 % at 16 (N = 64) and slower from N = 512, where a warp
/// takes several nodes of a level one after another.
///
/// # Safety
/// As [`solve_backward_rows_warps`] for each of those levels, with a grid of
/// `args.systems` blocks of a whole number of warps and that many
/// [`solve_rows_shared_bytes`]`(NP)` regions of shared memory, `args.n <= NP <= 16`; with
/// [`super::SWEEP_FORWARD`] in `args.sweeps` the forward substitution of the levels below
/// `args.level` complete (stream order), without it the whole forward substitution; the
/// backward substitution of the levels below follows (stream order).
pub unsafe fn solve_rows_block<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let a = *args;
    let (nb, s, warp, warps) = (a.nblocks, block_idx_x(), warp_id(), block_dim_x() / 32);
    let top = levels(nb);
    // One level of one sweep: the warps' nodes, then the barrier before the next level.
    let level = |m: u32, forward: bool| {
        let am = SolveArgs { level: m, ..a };
        let mut t = warp;
        while t < nodes_in_level(nb, m) {
            let nd = node_at(nb, m, s, t);
            // SAFETY: the caller's contract; region `warp` is this warp's, and the previous
            // node body ended with `__syncwarp`. Every node that `nd` reads finished on a
            // lower level (forward) or a higher one (backward), before a block barrier; the
            // segments are read through L2 (`coherent`), as other warps wrote them.
            unsafe {
                let (tiles, vectors) = load_warp_node::<T, NP>(&am, &nd, warp as usize);
                if forward {
                    forward_warp_body::<T, NP>(&am, &nd, tiles, vectors, true);
                } else {
                    backward_warp_body::<T, NP>(&am, &nd, tiles, vectors, true);
                }
            }
            t += warps;
        }
        sync_threads();
    };
    if a.sweeps & SWEEP_FORWARD != 0 {
        for m in a.level..top {
            level(m, true);
        }
    }
    for m in (a.level..top).rev() {
        level(m, false);
    }
}

/// `L y = b` by one node's `NP` lanes of a warp, lane `r` holding entry `r` of `b` and
/// receiving entry `r` of `y`; `base` is the node's first lane in the warp, `inv(j)` is
/// `1 / L_jj` (read by lane `j`'s product) and `l(j)` is `L[r][j]` of this lane's `r`.
/// First row first: `y_j = b_j / L_jj`, then `b_r -= L[r][j] y_j` for `r > j`. Every lane
/// of the warp calls it together (full-warp shuffles). The forward twin of
/// [`solve_lt_by_shuffles`].
#[inline(always)]
pub(crate) fn solve_l_by_shuffles<T: Real, const NP: usize>(
    mut b: T,
    (r, base): (usize, u32),
    inv: impl Fn(usize) -> T,
    l: impl Fn(usize) -> T,
) -> T {
    for j in 0..NP {
        let y = (b * inv(j)).shfl_idx(base + j as u32);
        if r == j {
            b = y;
        } else if r > j {
            b = (-l(j)).mul_add(y, b);
        }
    }
    b
}

/// `L^T x = z` by one node's `NP` lanes of a warp, lane `c` holding entry `c` of `z` and
/// receiving entry `c` of `x`; `base` is the node's first lane in the warp, `inv(j)` is
/// `1 / L_jj` (read by lane `j`'s product) and `l(j)` is `L[j][c]` of this lane's `c`.
/// Last row first: `x_j = z_j / L_jj`, then `z_c -= L[j][c] x_j` for `c < j`. Every lane
/// of the warp calls it together (full-warp shuffles).
#[inline(always)]
pub(crate) fn solve_lt_by_shuffles<T: Real, const NP: usize>(
    mut z: T,
    (c, base): (usize, u32),
    inv: impl Fn(usize) -> T,
    l: impl Fn(usize) -> T,
) -> T {
    for jj in 0..NP {
        let j = NP - 1 - jj;
        let x = (z * inv(j)).shfl_idx(base + j as u32);
        if c == j {
            z = x;
        } else if c < j {
            z = (-l(j)).mul_add(x, z);
        }
    }
    z
}
