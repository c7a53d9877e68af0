//! Solves of many right-hand-side columns at once, after the rows, panel or blocked factor,
//! for `n <= NP` (`NP` = 8, 16, 32 or 64: [`columns_size`]).
//!
//! The one-column node bodies ([`super::solve_forward_rows`] and
//! [`super::solve_backward_rows`] for `n <= 16`, [`super::solve_forward_panel`] and
//! [`super::solve_backward_panel`] above) take the columns one at a time: an `n`-step
//! triangular sweep and two block barriers per column, so `k` columns cost about `k`
//! single-column solves (~9 µs per column and level at `n = 64` in the segment path's pass
//! 1, `docs/perf-notes.md` entry 65). Here a node takes up to [`COLUMN_GROUP`] columns per
//! pass, and reads its factor blocks once per pass, not once per column:
//! - the group's rows of a right-hand side go to a shared tile of `NP` rows and
//!   [`group_width`] columns (an odd row stride: both the row-wise loads and the
//!   lane-per-column sweeps stay free of bank conflicts);
//! - **forward**: warp 0 solves `L_ii Y = B`, one lane per column, 8 rows at a time in
//!   registers with `L` read by broadcast; then every thread forms one row of `L_li Y` or
//!   `L_ri Y` for 8 columns and subtracts it from the neighbour's right-hand side (one
//!   atomic add per entry, as the single-column solve);
//! - **backward**: every thread forms one row of `Z = Y_i - L_li^T X_l - L_ri^T X_r` for 8
//!   columns, then warp 0 solves `L_ii^T X = Z` from the last row up, one lane per column.
//!
//! The couplings are read from global memory in the per-level kernels (coalesced along
//! their columns; a node then needs a third of the shared memory, so more nodes share an
//! SM), and staged in shared memory with `L_ii` in their `_staged` twins (for groups of 32
//! columns, where each entry would otherwise be read four times) and in the single-launch
//! sweep ([`super::solve_panel_columns_dataflow`]), whose nodes wait for each other.
//! Storage, arguments and status words are those of [`super::solve`], so these kernels
//! follow every fused factor (rows, panel, blocked); every launch form shares the node
//! bodies. A node off the tree's edges solves only the first `edge_from` columns
//! ([`super::SolveArgs::edge_from`]).

use super::node::{FactorBlocks, Node, load_level_output, node};
use super::panel::{coupling_entry, load_tiles, panel_solve_threads, panel_threads, stride as panel_stride, tiles_in_shared};
use super::{InfoCode, SolveArgs, align_elems, info_key};
use crate::team::{Block, Team};
use crate::tile::for_each_rc;
use blocktri_prims::{Real, atomic, lane_id, shared, warp_id};

/// Right-hand-side columns per pass of a node, at most: one per lane of the solving warp.
pub const COLUMN_GROUP: usize = 32;

/// Rows of the triangular sweeps' register block.
const RB: usize = 8;

/// Columns of one product item (accumulators per thread).
const CB: usize = 8;

/// The padded size of the column solves for block size `n`: 8, 16, 32 or 64 (a multiple
/// of the sweeps' register block of 8 rows); `None` above 64.
///
/// ```
/// use blocktri_device::level::columns::columns_size;
/// assert_eq!([1, 8, 9, 16, 17, 33, 64, 65].map(columns_size), [Some(8), Some(8), Some(16), Some(16), Some(32), Some(64), Some(64), None]);
/// ```
pub const fn columns_size(n: usize) -> Option<usize> {
    match n {
        0..=8 => Some(8),
        9..=16 => Some(16),
        17..=32 => Some(32),
        33..=64 => Some(64),
        _ => None,
    }
}

/// Threads per block of the column solves of padded size `np` for `nrhs` columns: with
/// `staged` couplings (the `_staged` kernels, the single launch) the panel factor's, else
/// the one-column panel solve's (several nodes per SM). Up to `np = 16`, where a node's
/// products are at most `16 x 8` items of 8 columns: two warps, four for groups of 32
/// columns (measured on the H200, `docs/perf-notes.md` entry 81: with 32 columns four
/// warps took 0.68-0.99x the time of two, with 8 columns 0.90-1.18x).
///
/// ```
/// use blocktri_device::level::columns::columns_threads;
/// assert_eq!([8, 16, 32, 64].map(|np| columns_threads(np, false, 8)), [64, 64, 96, 160]);
/// assert_eq!([8, 16, 32, 64].map(|np| columns_threads(np, true, 40)), [128, 128, 192, 384]);
/// ```
pub const fn columns_threads(np: usize, staged: bool, nrhs: usize) -> u32 {
    if np <= 16 {
        if group_width(nrhs) >= COLUMN_GROUP { 128 } else { 64 }
    } else if staged {
        panel_threads(np)
    } else {
        panel_solve_threads(np)
    }
}

/// Columns of a node's right-hand-side tiles for `nrhs` columns: `nrhs` rounded up to a
/// product item (8 columns), at most [`COLUMN_GROUP`].
///
/// ```
/// use blocktri_device::level::columns::group_width;
/// assert_eq!((group_width(2), group_width(9), group_width(70)), (8, 16, 32));
/// ```
pub const fn group_width(nrhs: usize) -> usize {
    let w = nrhs.div_ceil(CB) * CB;
    if w > COLUMN_GROUP {
        COLUMN_GROUP
    } else if w == 0 {
        CB
    } else {
        w
    }
}

/// Row stride of a right-hand-side tile of `width` columns (odd).
const fn tile_stride(width: usize) -> usize {
    width + 1
}

/// Shared memory of the column solves in bytes for `nrhs` columns: `L_ii` (with `staged`,
/// the `_staged` kernels and the single launch, also `L_li` and `L_ri`), `1 / L_jj` and
/// three right-hand-side tiles (the backward sweep's `Z`, `X_l`, `X_r`; the forward sweep
/// uses the first).
///
/// ```
/// use blocktri_device::level::columns::solve_panel_columns_shared_bytes;
/// // The single launch at padded size 64 in f64 fits an H200's 232 448 bytes with 32
/// // columns; the per-level kernels leave room for several nodes per SM.
/// assert!(solve_panel_columns_shared_bytes(64, 32, true, 8) < 232_448);
/// assert!(4 * solve_panel_columns_shared_bytes(64, 8, false, 8) < 232_448);
/// ```
pub const fn solve_panel_columns_shared_bytes(np: usize, nrhs: usize, staged: bool, elem_bytes: usize) -> usize {
    let tile = align_elems(np * tile_stride(group_width(nrhs)), elem_bytes);
    (align_elems(tiles_in_shared(staged) * np * panel_stride(np), elem_bytes) + align_elems(np, elem_bytes) + 3 * tile) * elem_bytes
}

/// The shared layout for `nrhs` columns: the factor tiles (as [`load_tiles`] stages
/// them), `1 / L_jj`, then the three right-hand-side tiles.
#[inline(always)]
fn shared_layout<T: Real, const NP: usize, const STAGED: bool>(nrhs: usize) -> (*mut T, *mut T, [*mut T; 3]) {
    let tiles = shared::dynamic_shared::<T>();
    // SAFETY (offsets): inside the launch's shared memory, solve_panel_columns_shared_bytes.
    let inv = unsafe { tiles.add(align_elems(tiles_in_shared(STAGED) * NP * panel_stride(NP), T::BYTES)) };
    let y0 = unsafe { inv.add(align_elems(NP, T::BYTES)) };
    let step = align_elems(NP * tile_stride(group_width(nrhs)), T::BYTES);
    (tiles, inv, [y0, unsafe { y0.add(step) }, unsafe { y0.add(2 * step) }])
}

/// Stages node `nd`'s factor tiles for the single-launch column solves: called before the
/// node waits (the factor is complete before the launch). Ends with a barrier.
///
/// # Safety
/// As [`solve_forward_panel_columns`], except that only the factorization needs to be
/// complete, with the shared memory of the staged layout.
pub(crate) unsafe fn solve_columns_load_node<T: Real, const NP: usize>(args: &SolveArgs<T>, nd: &Node) {
    let (tiles, inv, _) = shared_layout::<T, NP, true>(args.nrhs as usize);
    // SAFETY: forwarded from the caller.
    unsafe { load_tiles::<T, NP, true>(args, nd, tiles, inv) };
}

/// Forward substitution of one level, up to [`COLUMN_GROUP`] right-hand-side columns per
/// pass (see the module docs).
///
/// # Safety
/// As [`super::solve_forward_level`], with a whole number of warps (at least one),
/// [`solve_panel_columns_shared_bytes`]`(NP, args.nrhs, false)` of shared memory and
/// `args.n <= NP`, `NP` 8, 16, 32 or 64.
pub unsafe fn solve_forward_panel_columns<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { solve_forward_columns_node::<T, NP, false>(args, &node(args.nblocks, args.level), false) }
}

/// Backward substitution of one level, up to [`COLUMN_GROUP`] right-hand-side columns per
/// pass (see the module docs).
///
/// # Safety
/// As [`super::solve_backward_level`], with the threads and shared memory of
/// [`solve_forward_panel_columns`].
pub unsafe fn solve_backward_panel_columns<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { solve_backward_columns_node::<T, NP, false>(args, &node(args.nblocks, args.level), false) }
}

/// [`solve_forward_panel_columns`] with the couplings staged in shared memory with `L_ii`
/// (once per node instead of once per group of 8 columns from global memory: faster for
/// wide groups, one node per SM at padded size 64 in `f64`).
///
/// # Safety
/// As [`solve_forward_panel_columns`], with
/// [`solve_panel_columns_shared_bytes`]`(NP, args.nrhs, true)` of shared memory.
pub unsafe fn solve_forward_panel_columns_staged<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { solve_forward_columns_node::<T, NP, true>(args, &node(args.nblocks, args.level), false) }
}

/// [`solve_backward_panel_columns`] with the couplings staged in shared memory (see
/// [`solve_forward_panel_columns_staged`]).
///
/// # Safety
/// As [`solve_forward_panel_columns_staged`].
pub unsafe fn solve_backward_panel_columns_staged<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { solve_backward_columns_node::<T, NP, true>(args, &node(args.nblocks, args.level), false) }
}

/// One pass's columns: the first, how many (at most [`COLUMN_GROUP`]), the tiles' width
/// and row stride.
#[derive(Clone, Copy)]
struct Group {
    col0: usize,
    cols: usize,
    width: usize,
    stride: usize,
}

/// Copies rows `0..NP` of the group's columns of a right-hand-side segment (`src`, `None`:
/// no neighbour) into the shared tile `y`, zeros past `n` rows and the group's columns.
/// No barrier.
///
/// # Safety
/// `src` holds `n` rows of the group's columns at stride `ldb`, written before (read
/// through L2 when `coherent`); `y` is a shared tile of the layout.
#[inline(always)]
unsafe fn load_group<T: Real, const NP: usize>(src: Option<*const T>, ldb: usize, n: usize, g: Group, y: *mut T, coherent: bool) {
    for_each_rc(Block, NP, g.width, |i, c| {
        let v = match src {
            Some(src) if i < n && c < g.cols => unsafe { load_level_output(src.add((g.col0 + c) * ldb + i), coherent) },
            _ => T::ZERO,
        };
        unsafe { *y.add(i * g.stride + c) = v };
    });
}

/// The passes of `k` columns, in order, on tiles [`group_width`]`(k)` wide (no wider
/// than those of the launch's `nrhs`).
#[inline(always)]
fn groups(k: usize) -> impl Iterator<Item = Group> {
    let width = group_width(k);
    (0..k).step_by(COLUMN_GROUP).map(move |col0| Group { col0, cols: COLUMN_GROUP.min(k - col0), width, stride: tile_stride(width) })
}

/// Where both node bodies start: the shared layout for `k` columns (the factor tiles
/// loaded unless `loaded`), the node's factor blocks in global memory, its system's
/// right-hand sides (`ldb` rows per column), the columns it solves.
struct Start<T> {
    tiles: *mut T,
    inv: *mut T,
    bufs: [*mut T; 3],
    blocks: FactorBlocks<T>,
    rhs_sys: *mut T,
    ldb: usize,
    n: usize,
    /// The columns the node solves: all `k` of the right-hand side, or the first
    /// `edge_from` off the tree's edges ([`Node::columns`]).
    cols: usize,
    /// Right-hand sides written in this launch are read through L2 (single launch).
    coherent: bool,
}

/// The [`Start`] of node `nd`; loads the tiles (a barrier) unless `loaded`.
///
/// # Safety
/// As the node bodies.
#[inline(always)]
unsafe fn start<T: Real, const NP: usize, const STAGED: bool>(a: &SolveArgs<T>, nd: &Node, loaded: bool) -> Start<T> {
    let (n, k) = (a.n as usize, a.nrhs as usize);
    let (tiles, inv, bufs) = shared_layout::<T, NP, STAGED>(k);
    if !loaded {
        unsafe { load_tiles::<T, NP, STAGED>(a, nd, tiles, inv) };
    }
    let ldb = a.nblocks as usize * n;
    Start {
        tiles,
        inv,
        bufs,
        // SAFETY: forwarded from the caller.
        blocks: unsafe { FactorBlocks::of(a, nd, true) },
        // SAFETY: system `nd.s`'s right-hand sides (caller's contract).
        rhs_sys: unsafe { a.rhs.add(nd.s * ldb * k) },
        ldb,
        n,
        cols: nd.columns(a.nrhs, a.edge_from),
        coherent: !a.flags.is_null(),
    }
}

/// [`solve_forward_panel_columns`] for node `nd` of level `args.level` (the body shared
/// with the single-launch sweep, `STAGED`); `loaded`: [`solve_columns_load_node`] already
/// staged the tiles.
///
/// # Safety
/// As [`solve_forward_panel_columns`] (the staged layout's shared memory when `STAGED`);
/// the forward sweep of `nd`'s lower levels is complete and visible to the block.
// Inlined into the per-level kernels: as a called function it cost a 120-160-byte frame
// for its arguments and 82-86 registers (solves with 32 columns -9 to -23 % at N = 4096
// inlined, `docs/perf-notes.md` entry 104); the single launch calls it through a wrapper.
#[inline(always)]
pub(crate) unsafe fn solve_forward_columns_node<T: Real, const NP: usize, const STAGED: bool>(
    args: &SolveArgs<T>,
    nd: &Node,
    loaded: bool,
) {
    let team = Block;
    // SAFETY: forwarded from the caller.
    let Start { tiles, inv, bufs: [y, _, _], blocks, rhs_sys, ldb, n, cols, coherent } =
        unsafe { start::<T, NP, STAGED>(args, nd, loaded) };
    let s = panel_stride(NP);
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    let own = seg(nd.b);
    for g in groups(cols) {
        // SAFETY: the node's own segment, written by lower levels (or the input).
        unsafe { load_group::<T, NP>(Some(own), ldb, n, g, y, coherent) };
        team.sync();
        if warp_id() == 0 && (lane_id() as usize) < g.width {
            // SAFETY: warp 0 alone touches `y` until the barrier; `L_ii` is staged.
            unsafe { forward_columns_in_warp::<T>(tiles, s, inv, y.add(lane_id() as usize), g.stride, n) };
        }
        team.sync();
        // The solution back into the right-hand side.
        for_each_rc(team, n, g.cols, |i, c| unsafe { *own.add((g.col0 + c) * ldb + i) = *y.add(i * g.stride + c) });
        // Rows of `L_li Y` and `L_ri Y`, 8 columns per item (consecutive threads on
        // consecutive rows), subtracted from the neighbours.
        for_each_rc(team, n, 2 * g.cols.div_ceil(CB), |r, item| {
            let (right, chunk) = (item % 2 == 1, item / 2);
            let Some(j) = (if right { nd.right } else { nd.left }) else { return };
            // SAFETY: row `r` of the coupling; the solution rows in `y`.
            let l = |q| unsafe { coupling_entry::<T, NP, STAGED>(tiles, &blocks, right, r, q) };
            let minus = unsafe { minus_row_times_tile::<T>([T::ZERO; CB], l, y.add(chunk * CB), g.stride, n) };
            let dst = seg((j - 1) as usize);
            for (u, v) in minus.iter().enumerate() {
                let c = chunk * CB + u;
                if c < g.cols {
                    unsafe { T::atomic_add_global(dst.add((g.col0 + c) * ldb + r), *v) };
                }
            }
        });
        team.sync();
    }
}

/// `acc - sum_q l(q) Y[q][0..CB]` over `q` up to `n` rounded up to 8, `Y` a shared tile
/// from its column 0 (row stride `ys`), read by broadcast. Eight `l` loads go out before
/// their products: in the per-level kernels they come from global memory, and one load
/// in flight per step left each item waiting on its latency (`docs/perf-notes.md`,
/// entry 80).
///
/// # Safety
/// `y` holds `n` rounded up to 8 rows of `CB` readable entries, zero past `n` (or `l`
/// zero there); `l(q)` is readable for those `q`.
#[inline(always)]
unsafe fn minus_row_times_tile<T: Real>(mut acc: [T; CB], l: impl Fn(usize) -> T, y: *const T, ys: usize, n: usize) -> [T; CB] {
    let mut q0 = 0;
    while q0 < n {
        let lv: [T; RB] = core::array::from_fn(|u| -l(q0 + u));
        for (u, lu) in lv.iter().enumerate() {
            let row = unsafe { y.add((q0 + u) * ys) };
            for (c, a) in acc.iter_mut().enumerate() {
                *a = lu.mul_add(unsafe { *row.add(c) }, *a);
            }
        }
        q0 += RB;
    }
    acc
}

/// `L y = b` in place for one column of a shared tile (`col`: its row 0, row stride `ys`;
/// `b` in, `y` out), by one lane: 8 rows at a time in registers, first the products with
/// the rows already solved, then the `8 x 8` diagonal block. `l` holds `L` row-major (row
/// stride `s`, identity past `n`), read by broadcast when the lanes of a warp solve
/// columns side by side; `inv` the reciprocal pivots. Rows from `n` to the next multiple
/// of 8 hold zeros and stay zero.
///
/// # Safety
/// `l`, `inv` and the column are in shared memory that no other thread writes meanwhile;
/// `n` rounded up to 8 rows are readable.
#[inline(always)]
unsafe fn forward_columns_in_warp<T: Real>(l: *const T, s: usize, inv: *const T, col: *mut T, ys: usize, n: usize) {
    let mut jb = 0;
    while jb < n {
        let mut r: [T; RB] = core::array::from_fn(|u| unsafe { *col.add((jb + u) * ys) });
        for q in 0..jb {
            let yq = unsafe { *col.add(q * ys) };
            for (u, ru) in r.iter_mut().enumerate() {
                *ru = (-unsafe { *l.add((jb + u) * s + q) }).mul_add(yq, *ru);
            }
        }
        for u in 0..RB {
            r[u] *= unsafe { *inv.add(jb + u) };
            for v in 0..RB {
                // Rectangular, so that the nest unrolls and `r` stays in registers.
                if v > u {
                    r[v] = (-unsafe { *l.add((jb + v) * s + jb + u) }).mul_add(r[u], r[v]);
                }
            }
        }
        for (u, ru) in r.iter().enumerate() {
            unsafe { *col.add((jb + u) * ys) = *ru };
        }
        jb += RB;
    }
}

/// `L^T x = z` in place for one column of a shared tile, by one lane, from the last block
/// of 8 rows up (see [`forward_columns_in_warp`]).
///
/// # Safety
/// As [`forward_columns_in_warp`].
#[inline(always)]
unsafe fn backward_columns_in_warp<T: Real>(l: *const T, s: usize, inv: *const T, col: *mut T, ys: usize, n: usize) {
    let top = n.div_ceil(RB) * RB;
    let mut jb = top;
    while jb > 0 {
        jb -= RB;
        let mut r: [T; RB] = core::array::from_fn(|u| unsafe { *col.add((jb + u) * ys) });
        for q in jb + RB..top {
            let xq = unsafe { *col.add(q * ys) };
            let l_row = unsafe { l.add(q * s + jb) };
            for (u, ru) in r.iter_mut().enumerate() {
                *ru = (-unsafe { *l_row.add(u) }).mul_add(xq, *ru);
            }
        }
        for uu in 0..RB {
            let u = RB - 1 - uu;
            r[u] *= unsafe { *inv.add(jb + u) };
            for v in 0..RB {
                if v < u {
                    r[v] = (-unsafe { *l.add((jb + u) * s + jb + v) }).mul_add(r[u], r[v]);
                }
            }
        }
        for (u, ru) in r.iter().enumerate() {
            unsafe { *col.add((jb + u) * ys) = *ru };
        }
    }
}

/// [`solve_backward_panel_columns`] for node `nd` of level `args.level` (the body shared
/// with the single-launch sweep, `STAGED`); `loaded`: [`solve_columns_load_node`] already
/// staged the tiles.
///
/// # Safety
/// As [`solve_backward_panel_columns`] (the staged layout's shared memory when `STAGED`);
/// the backward sweep of `nd`'s neighbours and `nd`'s forward substitution are complete
/// and visible to the block.
// Inlined as `solve_forward_columns_node` is (entry 104).
#[inline(always)]
pub(crate) unsafe fn solve_backward_columns_node<T: Real, const NP: usize, const STAGED: bool>(
    args: &SolveArgs<T>,
    nd: &Node,
    loaded: bool,
) {
    let team = Block;
    // SAFETY: forwarded from the caller.
    let Start { tiles, inv, bufs: [z, xl, xr], blocks, rhs_sys, ldb, n, cols, coherent } =
        unsafe { start::<T, NP, STAGED>(args, nd, loaded) };
    let s = panel_stride(NP);
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    let own = seg(nd.b);
    let neighbour = |nb: Option<u32>| nb.map(|j| seg((j - 1) as usize) as *const T);
    let mut bad = false;
    for g in groups(cols) {
        // SAFETY: the node's forward result and the neighbours' solutions, complete.
        unsafe {
            load_group::<T, NP>(Some(own), ldb, n, g, z, coherent);
            load_group::<T, NP>(neighbour(nd.left), ldb, n, g, xl, coherent);
            load_group::<T, NP>(neighbour(nd.right), ldb, n, g, xr, coherent);
        }
        team.sync();
        // Z[q] -= L_li^T[q] X_l + L_ri^T[q] X_r, 8 columns per item; an item owns its
        // entries of Z.
        for_each_rc(team, n, g.cols.div_ceil(CB), |q, chunk| {
            let zq = unsafe { z.add(q * g.stride + chunk * CB) };
            let mut acc: [T; CB] = core::array::from_fn(|u| unsafe { *zq.add(u) });
            // SAFETY: column q of each coupling (rows p < n); the neighbours' solutions.
            if nd.left.is_some() {
                let l = |p| unsafe { coupling_entry::<T, NP, STAGED>(tiles, &blocks, false, p, q) };
                acc = unsafe { minus_row_times_tile::<T>(acc, l, xl.add(chunk * CB), g.stride, n) };
            }
            if nd.right.is_some() {
                let l = |p| unsafe { coupling_entry::<T, NP, STAGED>(tiles, &blocks, true, p, q) };
                acc = unsafe { minus_row_times_tile::<T>(acc, l, xr.add(chunk * CB), g.stride, n) };
            }
            for (u, v) in acc.iter().enumerate() {
                unsafe { *zq.add(u) = *v };
            }
        });
        team.sync();
        if warp_id() == 0 && (lane_id() as usize) < g.width {
            // SAFETY: warp 0 alone touches `z` until the barrier; `L_ii` is staged.
            unsafe { backward_columns_in_warp::<T>(tiles, s, inv, z.add(lane_id() as usize), g.stride, n) };
        }
        team.sync();
        for_each_rc(team, n, g.cols, |i, c| {
            let v = unsafe { *z.add(i * g.stride + c) };
            bad |= !v.is_finite();
            unsafe { *own.add((g.col0 + c) * ldb + i) = v };
        });
        // The next group's loads overwrite the tiles.
        team.sync();
    }
    if bad {
        unsafe { atomic::atomic_min_u64(args.info.add(nd.s), info_key(args.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}
