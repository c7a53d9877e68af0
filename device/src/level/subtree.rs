//! The backward sweep's lowest levels in one launch, one subtree per thread block.
//!
//! With `D` levels, the numbers `j 2^D + 1 .. (j + 1) 2^D - 1` (1-based, see
//! [`crate::layout`]) are the nodes of levels `0 .. D - 1` between the separators `j 2^D`
//! and `(j + 1) 2^D`: every neighbour such a node has at its elimination is another node of
//! the same range or one of those two separators. Once the levels from `D` up are solved
//! (earlier launches), thread block `j` solves its range top-down, level `D - 1` first,
//! with a block barrier between levels. That replaces `D` per-level launches, each a
//! round trip through the launch queue and a wave of short, latency-bound blocks, by one
//! launch that streams the factor (`docs/perf-notes.md`, entry 71: the lowest four levels'
//! backward kernel time 40-80 -> 18-20 µs at padded sizes 4 and 8; at 16 no faster in wall
//! time, so the crate builds it for 4 and 8).
//!
//! A node takes `NP` lanes (its padded size) and a shared region of its own: the lanes
//! copy `L_ii`, `L_li` and `L_ri` there with coalesced loads (lane `c` reading column `c`
//! straight from global memory instead was no faster than the per-level launches at
//! n = 16: sixteen lines per load), then lane `c` forms entry `c` of
//! `z = y_i - L_li^T x_l - L_ri^T x_r` (the neighbours' entries broadcast by shuffles) and
//! `L_ii^T x_i = z` is solved by shuffles, last row first. The arithmetic, and its order,
//! is that of [`super::solve_backward_rows`], so both give the same bits. Slot `t` of a
//! block (lanes `t NP ..`) takes node `t` of the range on every level that has one.

use super::node::{Node, node_at};
use super::rows::solve_lt_by_shuffles;
use super::{InfoCode, SolveArgs, info_key};
use blocktri_prims::memory::{load_coherent, load_readonly};
use blocktri_prims::warp::shfl_xor_u32;
use blocktri_prims::{Real, atomic, block_idx_x, shared, sync_threads, sync_warp, thread_idx_x};

/// Most threads of a subtree block.
pub const SUBTREE_MAX_THREADS: u32 = 256;

/// The most levels one subtree block covers at padded size `np` (4, 8 or 16): a node per
/// `np` lanes on level 0 within [`SUBTREE_MAX_THREADS`] threads (5 at `np = 16`, 6 at 8,
/// 7 at 4).
///
/// ```
/// use blocktri_device::level::subtree_max_levels;
/// assert_eq!(subtree_max_levels(16), 5);
/// assert_eq!(subtree_max_levels(4), 7);
/// ```
pub const fn subtree_max_levels(np: usize) -> u32 {
    (SUBTREE_MAX_THREADS as usize / np).trailing_zeros() + 1
}

/// Threads of a subtree block over `levels` levels at padded size `np`: `np` lanes per
/// node of level 0 (`2^(levels - 1)` of them), at least one warp.
///
/// ```
/// use blocktri_device::level::subtree_threads;
/// assert_eq!(subtree_threads(16, 4), 128);
/// assert_eq!(subtree_threads(8, 2), 32);
/// ```
pub const fn subtree_threads(np: usize, levels: u32) -> u32 {
    let t = (np << (levels - 1)) as u32;
    if t < 32 { 32 } else { t }
}

/// Shared memory of a subtree block over `levels` levels at padded size `np`: three
/// `np x (np + 1)` tiles per slot.
///
/// ```
/// use blocktri_device::level::subtree_shared_bytes;
/// assert_eq!(subtree_shared_bytes(16, 4, 8), 8 * 3 * 16 * 17 * 8);
/// ```
pub const fn subtree_shared_bytes(np: usize, levels: u32, elem_bytes: usize) -> usize {
    subtree_threads(np, levels) as usize / np * 3 * np * (np + 1) * elem_bytes
}

/// Thread blocks of a subtree launch over `levels` levels: one per system and range of
/// `2^levels` numbers.
///
/// ```
/// use blocktri_device::level::subtree_blocks;
/// assert_eq!(subtree_blocks(16, 3, 4), 3); // numbers 1..=15 and the separator 16
/// assert_eq!(subtree_blocks(17, 1, 4), 2); // 17 starts a second range
/// ```
pub const fn subtree_blocks(nblocks: u32, systems: u32, levels: u32) -> u32 {
    systems * nblocks.div_ceil(1 << levels)
}

/// Backward substitution of levels `args.level - 1` down to 0 (`args.level` = the depth
/// `D`, `1 ..= subtree_max_levels(NP)`), one subtree per thread block (module docs):
/// the same results and status words as [`super::solve_backward_rows`] launched once per
/// level. Honours [`SolveArgs::edge_from`] per warp: a warp with a node on an edge solves
/// every column.
///
/// # Safety
/// Grid `subtree_blocks(nblocks, systems, D)`, [`subtree_threads`]`(NP, D)` threads,
/// [`subtree_shared_bytes`]`(NP, D, T::BYTES)` of shared memory; `args.n <= NP <= 16`;
/// the factor is complete, the forward sweep done, and the backward sweep of the levels
/// from `D` up complete (stream order).
pub unsafe fn solve_backward_subtree_rows<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    let a = *args;
    let (n, k, nb, depth) = (a.n as usize, a.nrhs as usize, a.nblocks, a.level);
    let per_system = nb.div_ceil(1 << depth);
    let bx = block_idx_x();
    let (s, j) = (bx / per_system, bx % per_system);
    let tid = thread_idx_x() as usize;
    let (slot, c) = ((tid / NP) as u32, tid % NP);
    let base = (tid - c) as u32 % 32;
    let ldb = nb as usize * n;
    // The slot's tiles `[L_ii, L_li, L_ri]`, column-major with leading dimension NP + 1
    // (lane c reading column c hits a bank of its own).
    let t = NP + 1;
    // SAFETY: the slot's region inside the launch's subtree_shared_bytes.
    let tiles: [*mut T; 3] = core::array::from_fn(|q| unsafe { shared::dynamic_shared::<T>().add((slot as usize * 3 + q) * NP * t) });
    // SAFETY: system `s` of the right-hand sides (grid contract).
    let rhs = unsafe { a.rhs.add(s as usize * ldb * k) };
    for m in (0..depth).rev() {
        let i = (j << depth) + ((2 * slot + 1) << m);
        let live = slot < 1 << (depth - 1 - m) && i <= nb;
        let nd: Node = node_at(nb, m, s, if live { (i >> m) / 2 } else { 0 });
        let cols = if live { nd.columns(a.nrhs, a.edge_from) as u32 } else { 0 };
        // The shuffles below take the whole warp along: its slots loop together.
        let mut warp_cols = cols;
        for lanes in [16, 8, 4, 2, 1] {
            warp_cols = warp_cols.max(shfl_xor_u32(warp_cols, lanes));
        }
        if warp_cols > 0 {
            let mine = live && c < n;
            if live {
                // Consecutive lanes read consecutive rows of a column (identity padding
                // beyond n, zero for a missing neighbour), all loads before the stores.
                // What `node::FactorBlocks::entry` reads too, written out: its per-entry
                // null checks took this kernel from 94 to 115 registers (ptxas, sm_90).
                let off = (s as usize * nb as usize + nd.b) * a.ld as usize * n;
                let (has_l, has_r) = (nd.left.is_some(), nd.right.is_some());
                let vals: [(T, T, T); NP] = core::array::from_fn(|q| {
                    let (r, col) = (c, q);
                    if r >= n || col >= n {
                        return (if r == col { T::ONE } else { T::ZERO }, T::ZERO, T::ZERO);
                    }
                    let at = off + col * a.ld as usize + r;
                    // SAFETY: entry (r, col) of node nd's blocks, inside the factor arrays;
                    // read-only during the launch.
                    unsafe {
                        let lv = if has_l { load_readonly(a.left.add(at)) } else { T::ZERO };
                        let rv = if has_r { load_readonly(a.right.add(at)) } else { T::ZERO };
                        (load_readonly(a.diag.add(at)), lv, rv)
                    }
                });
                for (q, &(d, lv, rv)) in vals.iter().enumerate() {
                    // SAFETY: the slot's tiles.
                    unsafe {
                        *tiles[0].add(q * t + c) = d;
                        *tiles[1].add(q * t + c) = lv;
                        *tiles[2].add(q * t + c) = rv;
                    }
                }
            }
            sync_warp();
            // SAFETY (tile reads): the slot's tiles, written above (warp barrier).
            let at = |q: usize, r: usize, col: usize| unsafe { *tiles[q].add(col * t + r) };
            let inv = T::ONE / at(0, c, c);
            let seg = |blk: u32| unsafe { rhs.add((blk - 1) as usize * n) };
            let bi = seg(nd.b as u32 + 1);
            let mut bad = false;
            for col in 0..warp_cols as usize {
                // SAFETY (rhs reads): rows of blocks of system s, column col < k. The
                // neighbours' entries come from earlier launches or from this block's
                // earlier levels (ordered by the barrier below): read through L2.
                let neighbour = |nbr: Option<u32>| match nbr {
                    Some(blk) if mine => unsafe { load_coherent(seg(blk).add(col * ldb + c)) },
                    _ => T::ZERO,
                };
                let (xl, xr) = (neighbour(nd.left), neighbour(nd.right));
                let mut z = if mine { unsafe { load_readonly(bi.add(col * ldb + c)) } } else { T::ZERO };
                // Every slot of the warp runs both sums (the shuffles take all lanes); a
                // missing neighbour's column and entries are zero, and z - 0 * 0 is z.
                for p in 0..NP {
                    z = (-at(1, p, c)).mul_add(xl.shfl_idx(base + p as u32), z);
                }
                for p in 0..NP {
                    z = (-at(2, p, c)).mul_add(xr.shfl_idx(base + p as u32), z);
                }
                // Lane j's own 1 / L_jj scales the entry it broadcasts.
                let z = solve_lt_by_shuffles::<T, NP>(z, (c, base), |_| inv, |j| at(0, j, c));
                if mine && col < cols as usize {
                    bad |= !z.is_finite();
                    // SAFETY: this node's row c of column col.
                    unsafe { *bi.add(col * ldb + c) = z };
                }
            }
            // The next level's copy reuses the tiles.
            sync_warp();
            if bad {
                // SAFETY: system s's status word.
                unsafe { atomic::atomic_min_u64(a.info.add(s as usize), info_key(m, InfoCode::NonFiniteSolution, nd.b as u32)) };
            }
        }
        // Level m's solutions, written to global memory, before level m - 1 reads them.
        sync_threads();
    }
}
