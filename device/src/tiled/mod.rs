//! The tiled engine: nested-dissection levels for block sizes of any `n` (the fused
//! kernels hold a node in one block's shared memory and stop near `n = 96`).
//!
//! A level is a sequence of launches over all its nodes (and all systems) at once, each
//! node split into `64 x 64` tiles spread over many thread blocks, so that even the top
//! level (one node) fills the GPU when `n` is large:
//!
//! 1. [`factor::prep`] (once per factorization): the working diagonal blocks (lower
//!    triangle of the input, upper zero), level 0's couplings in panel form, input checks;
//! 2. per column tile `k` of the node's panel `P = [D_i; A[l,i]; A[r,i]]` (left-looking
//!    blocked Cholesky): [`factor::update`] (column `k` minus the products of the finished
//!    columns, from `k = 1`), [`factor::potrf`] (diagonal tile and its inverse),
//!    [`factor::trsm`] (the rows below, as a product with the inverse). On levels with
//!    many nodes the update is split around the `potrf`: [`factor::update_diagonal`]
//!    before it, [`factor::update_trsm`] (update and solve of each row tile in one block)
//!    instead of the `trsm`; and at large `n` columns go in [`Wide`] pairs from step 6
//!    ([`factor::column_update`]);
//! 3. [`factor::neighbours`] twice (`side` 0, then 1): `D_l -= L_li L_li^T`, then
//!    `D_r -= L_ri L_ri^T` and the fill for the next level. Each neighbour block has
//!    exactly one writer per launch: no atomics, and the results are bitwise
//!    reproducible run to run.
//!
//! On the top levels of blocks of three tiles or more the factorization also forms the
//! inverse of each node's `L_ii` ([`inverse`]), which the solves apply as one product.
//!
//! The products run on [`product::product_nt`] (FP64 tensor cores for `f64`; FP32 FMA for
//! `f32`, or on request TF32 tensor cores, plain or split: the kernels' `M` parameter).
//!
//! Storage as in [`crate::layout`], with one difference inside the factorization: the
//! left coupling slot holds `A[l, i]` (the panel's orientation) instead of `A[i, l]`; the
//! factor blocks (`L_ii` lower with zero upper triangle, `L_li`, `L_ri`) are the same as
//! the fused kernels', plus `dinv`: the inverse of each `64 x 64` diagonal tile of every
//! `L_ii`, which the solves use.

pub mod factor;
pub mod inverse;
pub(crate) mod potrf;
pub mod product;
pub mod solve;

pub use product::{
    Dmma, Narrow, Native, PRODUCT_THREADS, ProductShape, TILE, Tall, Tf32, Tf32Region, Tf32x3, TileMac, WIDE_PRODUCT_THREADS, WIDE_TILE,
    Wide, Wide16, WideTf32, WideTf32x3,
};

use crate::layout::{left_of, node_number, nodes_in_level, right_of};
use crate::level::INFO_OK;
use blocktri_prims::{Real, block_idx_x, sync_threads, thread_idx_x};

/// Arguments of every tiled kernel (factor and solve). Pointers are device addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TiledArgs<T> {
    /// Input diagonal blocks (`nblocks` per system).
    pub diag_in: *const T,
    /// Input sub-diagonal blocks `A[b+1, b]` (`nblocks - 1` per system).
    pub sub: *const T,
    /// Working diagonal blocks, then `L_ii`.
    pub diag: *mut T,
    /// Left couplings (`A[l, i]`), then `L_li`.
    pub left: *mut T,
    /// Right couplings (`A[r, i]`), then `L_ri`.
    pub right: *mut T,
    /// Per block: [`dinv_elems`] values, the inverses of the diagonal tiles of `L_ii`.
    pub dinv: *mut T,
    /// Per-system status words (factor or solve).
    pub info: *mut u64,
    /// Right-hand sides, per system `nblocks * n` rows by `nrhs` columns (solves).
    pub rhs: *mut T,
    /// The split walks' ticket counter and completion flags of this level
    /// ([`solve::split_flag_offset`]; solves, null elsewhere).
    pub flags: *mut u32,
    /// One pass of the inverse solves' results ([`inverse::inverse_scratch_elems`];
    /// solves), or the column look-ahead's accumulators ([`factor::update`] with a
    /// `carry`: [`factor::carry_elems`] for the launch's grid); null elsewhere.
    pub scratch: *mut T,
    /// Symmetry tolerance of the input check.
    pub sym_tol: T,
    /// Leading dimension of every block.
    pub ld: u32,
    /// Block size.
    pub n: u32,
    /// Blocks per system.
    pub nblocks: u32,
    /// Systems in the batch.
    pub systems: u32,
    /// Level.
    pub level: u32,
    /// Column tile of the panel step (potrf, trsm, update).
    pub step: u32,
    /// 0: left neighbour, 1: right neighbour (neighbour updates, forward coupling).
    pub side: u32,
    /// First finished column tile that a column update subtracts ([`factor::update`];
    /// 0 everywhere else).
    pub from_col: u32,
    /// End (exclusive) of the finished column tiles that [`factor::update`] multiplies;
    /// 0 means `step` (all of them). Below `step` in the top levels' look-ahead
    /// ([`factor::CARRY_OUT`]), 0 everywhere else.
    pub to_col: u32,
    /// [`factor::update`]: [`factor::CARRY_OUT`] keeps the accumulators of the columns
    /// `from_col .. to_col` in `scratch` instead of subtracting them, [`factor::CARRY_IN`]
    /// starts from those and subtracts the sum; 0 (everywhere else) neither.
    pub carry: u32,
    /// Right-hand-side columns.
    pub nrhs: u32,
    /// Right-hand-side columns per pass of the solve kernels (at most [`solve::MAX_CHUNK`]).
    pub chunk: u32,
}

/// Tiles per block dimension.
#[inline(always)]
pub const fn tiles(n: usize) -> usize {
    n.div_ceil(TILE)
}

/// Rows of row tile `t` of an `n`-row block (the last tile may be partial).
#[inline(always)]
pub(crate) fn tile_rows(n: usize, t: usize) -> usize {
    TILE.min(n - t * TILE)
}

/// Elements of `dinv` per block: one `64 x 64` tile per diagonal tile.
#[inline(always)]
pub const fn dinv_elems(n: usize) -> usize {
    tiles(n) * TILE * TILE
}

/// The node of this thread block (grid `x` = `systems * nodes`).
#[derive(Clone, Copy)]
pub(crate) struct Node {
    /// System.
    pub s: usize,
    /// 0-based block.
    pub b: usize,
    /// 0-based neighbours at this level.
    pub left: Option<usize>,
    pub right: Option<usize>,
    /// 1-based numbers of the neighbours (for [`crate::layout::fill_slot`]).
    pub l1: Option<u32>,
    pub r1: Option<u32>,
}

impl<T: Real> TiledArgs<T> {
    /// The node of this thread block when the grid `x` is `systems * nodes`.
    #[inline(always)]
    pub(crate) fn node(&self) -> Node {
        self.node_at(block_idx_x())
    }

    /// The node and the tile of this thread block when each node has `per_node` tiles and
    /// grid `x` is `systems * nodes * per_node`, tiles fastest: the blocks that run at the
    /// same time work on the same node, whose panels then stay in L2.
    #[inline(always)]
    pub(crate) fn node_and_tile(&self, per_node: usize) -> (Node, usize) {
        let bx = block_idx_x();
        let per = per_node as u32;
        (self.node_at(bx / per), (bx % per) as usize)
    }

    #[inline(always)]
    fn node_at(&self, bx: u32) -> Node {
        let nodes = nodes_in_level(self.nblocks, self.level);
        let i = node_number(self.level, bx % nodes);
        let (l1, r1) = (left_of(i, self.level), right_of(i, self.level, self.nblocks));
        Node {
            s: (bx / nodes) as usize,
            b: (i - 1) as usize,
            left: l1.map(|v| (v - 1) as usize),
            right: r1.map(|v| (v - 1) as usize),
            l1,
            r1,
        }
    }

    #[inline(always)]
    pub(crate) fn n(&self) -> usize {
        self.n as usize
    }
    #[inline(always)]
    pub(crate) fn ld(&self) -> usize {
        self.ld as usize
    }

    /// Block `b` of system `s` in one of the block arrays.
    ///
    /// # Safety
    /// `base` is one of the `nblocks`-per-system arrays and `s`, `b` are in range.
    #[inline(always)]
    pub(crate) unsafe fn block(&self, base: *mut T, s: usize, b: usize) -> *mut T {
        unsafe { base.add((s * self.nblocks as usize + b) * self.ld() * self.n()) }
    }

    /// Diagonal-tile inverse `k` of block `b` of system `s`.
    ///
    /// # Safety
    /// As [`Self::block`], `k < tiles(n)`.
    #[inline(always)]
    pub(crate) unsafe fn dinv_tile(&self, s: usize, b: usize, k: usize) -> *mut T {
        unsafe { self.dinv.add((s * self.nblocks as usize + b) * dinv_elems(self.n()) + k * TILE * TILE) }
    }

    /// Whether system `s` already recorded a failure, the same answer on every thread of
    /// the block (thread 0 reads, a barrier publishes it through `flag` in shared memory).
    /// Other blocks of the same launch may record failures meanwhile; this keeps the exit
    /// uniform.
    ///
    /// # Safety
    /// `flag` is shared memory of this block; every thread calls it.
    #[inline(always)]
    pub(crate) unsafe fn failed(&self, s: usize, flag: *mut u32) -> bool {
        if thread_idx_x() == 0 {
            let v = unsafe { core::ptr::read_volatile(self.info.add(s)) };
            unsafe { *flag = (v != INFO_OK) as u32 };
        }
        sync_threads();
        let failed = unsafe { *flag } != 0;
        sync_threads();
        failed
    }
}

/// `(e % d, e / d)` in 32-bit arithmetic (a 64-bit division costs several times more in a
/// per-element loop).
#[inline(always)]
pub(crate) fn rem_div(e: usize, d: usize) -> (usize, usize) {
    let (e, d) = (e as u32, d as u32);
    ((e % d) as usize, (e / d) as usize)
}

/// Hands this thread's share of `total` values (entries `tid, tid + threads, ..` of a
/// block of `threads` threads) from `load(e)` to `store(e, v)`, `BATCH` loads before their
/// stores: a store after each load (the compiler may not move a load above a store to
/// memory it cannot tell apart) waits one global round trip per value, which the
/// memory-bound copies (the node walks' right-hand sides) cannot afford.
#[inline(always)]
pub(crate) fn batched<T: Real, const BATCH: usize>(
    total: usize,
    threads: usize,
    load: impl Fn(usize) -> T,
    mut store: impl FnMut(usize, T),
) {
    let mut e0 = thread_idx_x() as usize;
    while e0 < total {
        let v: [T; BATCH] = core::array::from_fn(|i| {
            let e = e0 + i * threads;
            if e < total { load(e) } else { T::ZERO }
        });
        for (i, &x) in v.iter().enumerate() {
            let e = e0 + i * threads;
            if e < total {
                store(e, x);
            }
        }
        e0 += BATCH * threads;
    }
}

/// `(i, j)` with `j <= i` of the `e`-th pair of the lower triangle of a `t x t` tile grid,
/// row by row: `e = i (i + 1) / 2 + j`.
#[inline(always)]
pub fn lower_pair(e: usize) -> (usize, usize) {
    // Float estimate, then exact fix-up (e < 2^24 here, so the estimate is off by <= 1).
    let mut i = ((Real::sqrt((8 * e + 1) as f64) - 1.0) / 2.0) as usize;
    while i * (i + 1) / 2 > e {
        i -= 1;
    }
    while (i + 1) * (i + 2) / 2 <= e {
        i += 1;
    }
    (i, e - i * (i + 1) / 2)
}

#[cfg(test)]
mod tests {
    use super::lower_pair;

    #[test]
    fn lower_pairs_enumerate_the_triangle() {
        let mut e = 0;
        for i in 0..300 {
            for j in 0..=i {
                assert_eq!(lower_pair(e), (i, j));
                e += 1;
            }
        }
    }
}
