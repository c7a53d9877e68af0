//! Selected inversion for blocks too large to stage in shared memory: each node's work
//! split into `64 x 64` output tiles spread over many thread blocks, so that the top
//! levels (few nodes, `n^3` work each) still fill the GPU. The equations are the staged
//! kernels' products-only form (see the section comment in the parent module):
//!
//! ```text
//! Linv = L_ii^-1                         (every block, before the sweep)
//! G_U = Linv^T L_li^T,  G_V = Linv^T L_ri^T                   (launch 1 of a level)
//! Sigma_il = -(G_U Sigma_ll + G_V Sigma_rl)
//! Sigma_ir = -(G_V Sigma_rr + G_U Sigma_lr)                   (launch 2)
//! Sigma_ii = Linv^T Linv - G_U Sigma_il^T - G_V Sigma_ir^T    (launch 3, lower tiles, mirrored)
//! ```
//!
//! `Linv` is built tile by tile: the `64 x 64` diagonal tiles inverted in shared memory
//! ([`selinv_tiled_invert_diag`], [`invert_lower_strips`]), then one launch per tile
//! distance `t` ([`selinv_tiled_invert_step`]): `Linv[a, a - t] = -Linv[a, a] L[a, a-t..a]
//! Linv[a-t..a, a - t]`, which only needs tiles of smaller distance. The tiles above the
//! diagonal are written as zeros, so every product runs over whole rows and columns.
//!
//! Products: FP64 tensor-core fragments straight from global memory
//! (`warp_product_sum`, `2 x 4` fragment tiles per warp, 8 warps per `64 x 64` tile)
//! when the tile's sizes are multiples of 8 (every tile when `n` is); scalar tile
//! products accumulated in shared memory otherwise. Each output entry is written by one
//! thread: no atomics, the same bits on every run.
//!
//! Buffers: [`SelinvTiledArgs::linv`] holds one block per block of the factor,
//! [`SelinvTiledArgs::work`] two per node of the widest level (level 0).

use super::{SelinvArgs, block_ptr, sigma_rl_as_stored};
use crate::layout::{left_of, node_number, nodes_in_level, right_of};
use crate::team::{Block, Team};
use crate::tile::fragment::{FRAG, Term, diagonal_reciprocals, fragment_ld, invert_lower_strips, padded, warp_product_sum_ahead};
use crate::tile::{MatRef, for_each_entry, product};
use crate::tiled::{TILE, lower_pair, tiles};
use blocktri_prims::{Real, block_idx_x, shared};

/// Threads of every tiled selected-inversion block: 8 warps, one `16 x 32` fragment
/// region each of a `64 x 64` output tile.
pub const SELINV_TILED_THREADS: u32 = 256;

/// Steps along `k` whose fragments are in flight in the products from global memory.
const AHEAD: usize = 2;

/// Leading dimension of the shared tiles (fragment reads conflict-free).
const LDS: usize = fragment_ld(TILE);

/// Dynamic shared memory of every tiled selected-inversion kernel in bytes: two `64 x 64`
/// tiles (the diagonal inversion's `L` and `X`; the inversion step's intermediate
/// product; the scalar products' accumulators) and 64 reciprocals.
pub const fn selinv_tiled_shared_bytes(elem_bytes: usize) -> usize {
    (2 * TILE * LDS + TILE) * elem_bytes
}

/// Arguments of the tiled selected-inversion kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SelinvTiledArgs<T> {
    /// The factor, the outputs and the level, as for the one-block-per-node kernels.
    pub base: SelinvArgs<T>,
    /// `L_ii^-1` per block: `systems * nblocks` blocks of `ld x n` (lower triangle; the
    /// tiles above the diagonal zero).
    pub linv: *mut T,
    /// `G_U`, `G_V` per node of the level: `2 * systems * nodes_in_level(nblocks, 0)`
    /// blocks of `ld x n`.
    pub work: *mut T,
    /// Tile distance of [`selinv_tiled_invert_step`] (at least 1).
    pub step: u32,
}

/// Rows of tile `t` of an `n`-row block.
#[inline(always)]
fn tile_rows(n: usize, t: usize) -> usize {
    TILE.min(n - t * TILE)
}

/// The view `v` from entry `(i0, j0)` on.
#[inline(always)]
fn sub<T: Real>(v: MatRef<T>, i0: usize, j0: usize) -> MatRef<T> {
    // SAFETY (of later reads): callers stay inside the viewed block.
    MatRef { ptr: unsafe { v.ptr.add(i0 * v.row_stride + j0 * v.col_stride) }, ..v }
}

/// `emit(r, c, sum_t f_t A_t B_t)` once for every entry of an `m x n` tile (`A_t`:
/// `m x kk`), on the thread that owns it: fragment products when `m`, `n`, `kk` are
/// multiples of 8, otherwise scalar products accumulated in `acc` (shared memory), with
/// barriers (the whole block calls it).
///
/// # Safety
/// The views cover their index ranges; `acc` holds `64 x LDS` elements of this block's
/// shared memory that nothing else uses during the call; `emit` is safe to call
/// concurrently for distinct entries; `m, n <= 64`, `kk >= 1`.
#[inline(always)]
unsafe fn tile_product<T: Real, const P: usize>(
    m: usize,
    n: usize,
    kk: usize,
    terms: [Term<T>; P],
    acc: *mut T,
    mut emit: impl FnMut(usize, usize, T),
) {
    let team = Block;
    // `%` as measured: `is_multiple_of` lays the branches out differently (sm_90 PTX).
    #[allow(clippy::manual_is_multiple_of)]
    if m % FRAG == 0 && n % FRAG == 0 && kk % FRAG == 0 {
        // SAFETY: whole fragment tiles, no padding needed; the caller's views.
        unsafe { warp_product_sum_ahead::<T, 2, 4, P, AHEAD>(team.group(), team.groups(), m, n, kk, terms, emit) };
        return;
    }
    // SAFETY (all): entries inside `acc`'s tile; `product` gives every entry to the same
    // thread on each call with the same sizes, so its read-modify-writes do not race.
    for_each_entry(team, m, n, |r, c| unsafe { *acc.add(c * LDS + r) = T::ZERO });
    team.sync();
    for (a, b, f) in terms {
        unsafe { product(team, m, n, kk, a, b, |r, c, v| *acc.add(c * LDS + r) = f.mul_add(v, *acc.add(c * LDS + r))) };
    }
    team.sync();
    for_each_entry(team, m, n, |r, c| emit(r, c, unsafe { *acc.add(c * LDS + r) }));
    team.sync();
}

/// The diagonal tiles of every `Linv`: one thread block per tile (grid `x` = `systems *
/// nblocks * tiles(n)`), `L`'s tile staged in shared memory and inverted in strips of 8
/// rows; the tiles above it zeroed.
///
/// # Safety
/// [`SELINV_TILED_THREADS`] threads, [`selinv_tiled_shared_bytes`]; the factor complete
/// and successful; `linv` as [`SelinvTiledArgs`] describes.
pub unsafe fn selinv_tiled_invert_diag<T: Real>(args: &SelinvTiledArgs<T>) {
    let team = Block;
    let a = &args.base;
    let (n, ld) = (a.n as usize, a.ld as usize);
    let nt = tiles(n);
    let (blk, t) = (block_idx_x() as usize / nt, block_idx_x() as usize % nt);
    let (t0, m) = (t * TILE, tile_rows(n, t));
    let np = padded(m);
    let sh = shared::dynamic_shared::<T>();
    // SAFETY (all): block `blk` inside the buffers (grid = blocks x tiles); shared tiles
    // of `TILE x LDS` and `TILE` reciprocals inside the dynamic shared memory.
    unsafe {
        let (l, x, inv) = (sh, sh.add(TILE * LDS), sh.add(2 * TILE * LDS));
        let (src, dst) = (a.diag.add(blk * ld * n).add(t0 * ld + t0), args.linv.add(blk * ld * n));
        // L's tile (lower triangle; padding and upper part zero), X zero, 1 / L_rr.
        for_each_entry(team, np, np, |r, c| {
            *l.add(c * LDS + r) = if r < m && r >= c { *src.add(c * ld + r) } else { T::ZERO };
            *x.add(c * LDS + r) = T::ZERO;
        });
        diagonal_reciprocals(team, src, ld, m, np, inv);
        team.sync();
        invert_lower_strips(team, l, x, LDS, np, inv);
        for_each_entry(team, m, m, |r, c| *dst.add((t0 + c) * ld + t0 + r) = *x.add(c * LDS + r));
        for_each_entry(team, t0, m, |r, c| *dst.add((t0 + c) * ld + r) = T::ZERO);
    }
}

/// The tiles of every `Linv` at tile distance `args.step` below the diagonal: one thread
/// block per tile (grid `x` = `systems * nblocks * (tiles(n) - step)`),
/// `Linv[a, c] = -Linv[a, a] (L[a, c..a] Linv[c..a, c])` with `c = a - step`.
///
/// # Safety
/// As [`selinv_tiled_invert_diag`], which ran before, as did the launches of every
/// smaller distance.
pub unsafe fn selinv_tiled_invert_step<T: Real>(args: &SelinvTiledArgs<T>) {
    let team = Block;
    let a = &args.base;
    let (n, ld, step) = (a.n as usize, a.ld as usize, args.step as usize);
    let per = tiles(n) - step;
    let (blk, c) = (block_idx_x() as usize / per, block_idx_x() as usize % per);
    let r = c + step;
    let (r0, c0, m) = (r * TILE, c * TILE, tile_rows(n, r));
    let sh = shared::dynamic_shared::<T>();
    // SAFETY (all): block `blk` inside the buffers; tiles of distance < step complete
    // (earlier launches); `x` is written only at tile (r, c), which no product here reads.
    unsafe {
        let (mid, acc) = (sh, sh.add(TILE * LDS));
        let (l, x) = (MatRef::col_major(a.diag.add(blk * ld * n), ld), args.linv.add(blk * ld * n));
        let xv = MatRef::col_major(x as *const T, ld);
        // Column tile c (not the last tile: 64 wide) of L[r, c..r] Linv[c..r, c].
        let put_mid = |i: usize, j: usize, v: T| *mid.add(j * LDS + i) = v;
        tile_product::<T, 1>(m, TILE, r0 - c0, [(sub(l, r0, c0), sub(xv, c0, c0), T::ONE)], acc, put_mid);
        team.sync();
        let put = |i: usize, j: usize, v: T| *x.add((c0 + j) * ld + r0 + i) = v;
        tile_product::<T, 1>(m, TILE, m, [(sub(xv, r0, r0), MatRef::col_major(mid as *const T, LDS), -T::ONE)], acc, put);
    }
}

/// A node of the launch's level and the tile this thread block computes, or `None` for
/// blocks past the last node (grid `x` = `systems * nodes * per_node`, tiles fastest).
struct NodeTile {
    /// System.
    s: usize,
    /// Index of the node within its level (and system).
    job: usize,
    /// 1-based block and neighbours.
    i: u32,
    li: Option<u32>,
    ri: Option<u32>,
    /// Tile index within the node.
    tile: usize,
}

impl NodeTile {
    /// `(side, row tile, column tile)` of a launch over both sides' `nt x nt` tiles
    /// (`per_node = 2 nt^2`, column-major tile order within a side).
    #[inline(always)]
    fn sided(&self, nt: usize) -> (usize, usize, usize) {
        (self.tile / (nt * nt), self.tile % nt, self.tile / nt % nt)
    }
}

#[inline(always)]
fn node_tile<T: Real>(a: &SelinvArgs<T>, per_node: usize) -> Option<NodeTile> {
    let (nb, m) = (a.nblocks, a.level);
    let count = nodes_in_level(nb, m) as usize;
    let (node, tile) = (block_idx_x() as usize / per_node, block_idx_x() as usize % per_node);
    if node >= a.systems as usize * count {
        return None;
    }
    let (s, t) = (node / count, node % count);
    let i = node_number(m, t as u32);
    Some(NodeTile { s, job: node, i, li: left_of(i, m), ri: right_of(i, m, nb), tile })
}

/// `G_U` (side 0) or `G_V` (side 1) of node `job`, in `work`.
#[inline(always)]
fn work_block<T: Real>(args: &SelinvTiledArgs<T>, job: usize, side: usize) -> *mut T {
    let a = &args.base;
    // SAFETY (of the callers' accesses): job < systems * nodes of the level <= level 0's.
    unsafe { args.work.add((2 * job + side) * a.ld as usize * a.n as usize) }
}

/// Launch 1 of a level: `G_U`, `G_V` of every node, one `64 x 64` tile per thread block
/// (grid `x` = `systems * nodes * 2 tiles(n)^2`); `G[a, b]` sums over `k >= 64 a` only
/// (`Linv^T` is upper triangular).
///
/// # Safety
/// [`SELINV_TILED_THREADS`] threads, [`selinv_tiled_shared_bytes`]; `Linv` complete;
/// the buffers as [`SelinvTiledArgs`] describes.
pub unsafe fn selinv_tiled_couplings<T: Real>(args: &SelinvTiledArgs<T>) {
    let a = &args.base;
    let (n, ld) = (a.n as usize, a.ld as usize);
    let nt = tiles(n);
    let Some(node) = node_tile(a, 2 * nt * nt) else { return };
    let (side, ta, tb) = node.sided(nt);
    let (coupling, neighbour) = if side == 0 { (a.left, node.li) } else { (a.right, node.ri) };
    if neighbour.is_none() {
        return;
    }
    let (a0, b0) = (ta * TILE, tb * TILE);
    let linv = MatRef::col_major(block_ptr(a, args.linv, node.s, node.i), ld);
    let l_xi = MatRef::col_major(block_ptr(a, coupling, node.s, node.i), ld);
    let g = work_block(args, node.job, side);
    // SAFETY: the blocks of this node; G's tile (a, b) written by this thread block alone.
    unsafe {
        let put = |r: usize, c: usize, v: T| *g.add((b0 + c) * ld + a0 + r) = v;
        let term = (sub(linv.t(), a0, a0), sub(l_xi.t(), a0, b0), T::ONE);
        tile_product::<T, 1>(tile_rows(n, ta), tile_rows(n, tb), n - a0, [term], acc_tile(), put);
    }
}

/// Launch 2 of a level: `Sigma_il` (side 0) and `Sigma_ir` (side 1) of every node, one
/// `64 x 64` tile per thread block (grid `x` as [`selinv_tiled_couplings`]).
///
/// # Safety
/// As [`selinv_tiled_couplings`], which ran before for this level; the higher levels'
/// blocks of `Sigma` complete.
pub unsafe fn selinv_tiled_neighbours<T: Real>(args: &SelinvTiledArgs<T>) {
    let a = &args.base;
    let (n, ld) = (a.n as usize, a.ld as usize);
    let nt = tiles(n);
    let Some(node) = node_tile(a, 2 * nt * nt) else { return };
    let (side, ta, tb) = node.sided(nt);
    let (near, far, out) = match (side, node.li, node.ri) {
        (0, Some(l), _) => (l, node.ri, a.sigma_left),
        (1, _, Some(r)) => (r, node.li, a.sigma_right),
        _ => return,
    };
    let (a0, b0) = (ta * TILE, tb * TILE);
    let (g_near, g_far) = (work_block(args, node.job, side), work_block(args, node.job, 1 - side));
    let (g_near, g_far) = (MatRef::col_major(g_near as *const T, ld), MatRef::col_major(g_far as *const T, ld));
    let sigma_near = MatRef::col_major(block_ptr(a, a.sigma_diag, node.s, near), ld);
    let x = block_ptr(a, out, node.s, node.i) as *mut T;
    let (m, w) = (tile_rows(n, ta), tile_rows(n, tb));
    // SAFETY: blocks of this node and its neighbours (complete); the output tile written
    // by this thread block alone.
    unsafe {
        let put = |r: usize, c: usize, v: T| *x.add((b0 + c) * ld + a0 + r) = v;
        let near_term = (sub(g_near, a0, 0), sub(sigma_near, 0, b0), -T::ONE);
        match far.and(sigma_rl_as_stored(a, node.s, node.li, node.ri)) {
            Some(rl) => {
                // Sigma_rl for side 0 (Sigma_il), its transpose Sigma_lr for side 1.
                let other = if side == 0 { rl } else { rl.t() };
                tile_product::<T, 2>(m, w, n, [near_term, (sub(g_far, a0, 0), sub(other, 0, b0), -T::ONE)], acc_tile(), put)
            }
            None => tile_product::<T, 1>(m, w, n, [near_term], acc_tile(), put),
        }
    }
}

/// Launch 3 of a level: `Sigma_ii` of every node, one lower `64 x 64` tile per thread
/// block and its mirror (grid `x` = `systems * nodes * tiles(n) (tiles(n) + 1) / 2`):
/// exactly symmetric.
///
/// # Safety
/// As [`selinv_tiled_neighbours`], which ran before for this level.
pub unsafe fn selinv_tiled_diagonal<T: Real>(args: &SelinvTiledArgs<T>) {
    let a = &args.base;
    let (n, ld) = (a.n as usize, a.ld as usize);
    let nt = tiles(n);
    let Some(node) = node_tile(a, nt * (nt + 1) / 2) else { return };
    let (ta, tb) = lower_pair(node.tile);
    let (a0, b0) = (ta * TILE, tb * TILE);
    let linv = MatRef::col_major(block_ptr(a, args.linv, node.s, node.i), ld);
    let view = |p: *mut T| MatRef::col_major(p as *const T, ld);
    let y = block_ptr(a, a.sigma_diag, node.s, node.i) as *mut T;
    let (m, w) = (tile_rows(n, ta), tile_rows(n, tb));
    let own = (sub(linv.t(), a0, 0), sub(linv, 0, b0), T::ONE);
    // - G Sigma^T with Sigma this node's output of side `side`.
    let coupled = |side: usize, out: *mut T| {
        let sigma = view(block_ptr(a, out, node.s, node.i) as *mut T).t();
        (sub(view(work_block(args, node.job, side)), a0, 0), sub(sigma, 0, b0), -T::ONE)
    };
    // SAFETY: blocks of this node (G and the off-diagonal outputs complete: earlier
    // launches); the tile and its mirror written by this thread block alone (on the
    // diagonal tile only entries r >= c are emitted, each writing both places).
    unsafe {
        let put = |r: usize, c: usize, v: T| {
            if ta > tb || r >= c {
                *y.add((b0 + c) * ld + a0 + r) = v;
                *y.add((a0 + r) * ld + b0 + c) = v;
            }
        };
        match (node.li, node.ri) {
            (Some(_), Some(_)) => {
                tile_product::<T, 3>(m, w, n, [own, coupled(0, a.sigma_left), coupled(1, a.sigma_right)], acc_tile(), put)
            }
            (Some(_), None) => tile_product::<T, 2>(m, w, n, [own, coupled(0, a.sigma_left)], acc_tile(), put),
            (None, Some(_)) => tile_product::<T, 2>(m, w, n, [own, coupled(1, a.sigma_right)], acc_tile(), put),
            (None, None) => tile_product::<T, 1>(m, w, n, [own], acc_tile(), put),
        }
    }
}

/// The scalar products' accumulator tile in this block's dynamic shared memory.
#[inline(always)]
fn acc_tile<T: Real>() -> *mut T {
    shared::dynamic_shared::<T>()
}
