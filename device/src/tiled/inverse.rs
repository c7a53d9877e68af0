//! Explicit inverses of the top levels' diagonal blocks, for the solves.
//!
//! On the levels with few nodes of many tiles, each diagonal solve `L_ii^-1 b` was a chain
//! of one launch per tile step ([`super::solve::forward_diag`]; ~10 µs each, `tiles(n)`
//! of them per level and sweep, `docs/perf-notes.md` entry 98). Here the factorization
//! also forms `V_i = L_ii^-T` (upper triangular) for the nodes of those levels, beside
//! the factorization of the levels above ([`inverse_step`], one launch per column tile),
//! and a solve's diagonal step becomes one product over a few blocks per tile row:
//! [`forward_inverse`] (`y_i = V_i^T b_i`) and [`backward_inverse`] (`x_i = V_i z_i`).
//! Their partial sums go to a scratch area (the blocks read the right-hand sides that the
//! results replace), and [`inverse_copy`] adds them and moves them into place.
//!
//! Which levels: [`inverts_level`], from each system's node count and the block size
//! alone, so that a batch cut into chunks gives the bits of the whole batch. The inverses
//! live behind the diagonal-tile inverses in the `dinv` buffer ([`inverse_elems`]).

use super::factor::{for_each_acc, rows_panel, shared_areas, subtract_acc};
use super::product::Panel;
use super::solve::{
    MAX_CHUNK, THREADS, TileRing, WALK_LD, WALK_ROWS, WALK_STAGES, each_col_sum, each_row_sum, move_node_rhs, node_walk_chunk,
    node_walk_shared_bytes, system_rhs, walk_col_sums, walk_col_times, walk_row_sums, walk_row_times,
};
use super::{Narrow, ProductShape, TILE, TileMac, TiledArgs, dinv_elems, tile_rows, tiles};
use crate::layout::{levels, nodes_in_level};
use crate::level::{InfoCode, info_key};
use blocktri_prims::{Real, atomic, sync_threads, thread_idx_x};

/// Most tile rows (nodes per system times tiles per block) of a level whose diagonal
/// blocks get explicit inverses. An inverse costs `n^3 / 3` flops, which on the crowded
/// levels take throughput from the factorization they run beside, and `n^2` values: at
/// n = 1024 the levels of up to 32 nodes cost the factor 1.3 ms (+2.6 %) against 1.1 ms
/// saved per solve; from 256 tile rows the levels of up to 32 nodes at n = 512 (the
/// factor within noise, the solve -19 %) and of 16 at n = 1024 (`docs/perf-notes.md`,
/// entry 98).
pub const INVERSE_MAX_TILE_ROWS: usize = 256;

/// Fewest tiles per block whose top levels get explicit inverses. Measured against the
/// split walks (H200, f64, `docs/perf-notes.md` entry 99): at 4 tiles (n = 256,
/// N = 1024) the solve -12 % and the mixed factor + refinement -5 %, the factor +0.7 %;
/// at 3 (n = 192) the solve -7 %, mixed -2.6 %, the factor +0.9 %; at 2 (n = 128) the
/// solve -1.4 % for a factor +1 %, so 2-tile blocks keep the split walks.
pub const INVERSE_MIN_TILES: usize = 3;

/// Whether the nodes of `level` (of a system of `nblocks` blocks of size `n`) get explicit
/// inverses: blocks of at least [`INVERSE_MIN_TILES`] tiles (below, the split walks solve
/// the top levels) on levels of at most [`INVERSE_MAX_TILE_ROWS`] tile rows per system.
/// Depends on nothing else: the results' bits differ from the other diagonal solves'.
pub const fn inverts_level(n: usize, nblocks: u32, level: u32) -> bool {
    tiles(n) >= INVERSE_MIN_TILES && level < levels(nblocks) && nodes_in_level(nblocks, level) as usize * tiles(n) <= INVERSE_MAX_TILE_ROWS
}

/// The lowest level whose nodes get inverses (the levels above it have fewer nodes, so
/// they do too), if any.
pub const fn first_inverse_level(n: usize, nblocks: u32) -> Option<u32> {
    let mut m = 0;
    while m < levels(nblocks) {
        if inverts_level(n, nblocks, m) {
            return Some(m);
        }
        m += 1;
    }
    None
}

/// Inverse slots per system: one per block number that is a multiple of `2^m0`, `m0` the
/// [`first_inverse_level`] (the nodes of the levels from `m0`).
pub const fn inverse_slots(n: usize, nblocks: u32) -> usize {
    match first_inverse_level(n, nblocks) {
        Some(m0) => (nblocks >> m0) as usize,
        None => 0,
    }
}

/// Elements of the inverses of `systems` systems at leading dimension `ld` (an `n x n`
/// block per slot), stored behind the `systems * nblocks` diagonal-tile inverses.
pub const fn inverse_elems(systems: usize, nblocks: usize, n: usize, ld: usize) -> usize {
    systems * inverse_slots(n, nblocks as u32) * ld * n
}

/// Elements of one part's partial sums in the scratch area: `n` rows of [`MAX_CHUNK`]
/// columns.
const fn scratch_part_elems(n: usize) -> usize {
    n * MAX_CHUNK
}

/// Elements of the scratch area of one pass of the inverse solves: `n` rows of
/// [`MAX_CHUNK`] columns per part ([`inverse_parts`]) and node of the
/// [`first_inverse_level`] (the level with the most such nodes), all systems.
pub const fn inverse_scratch_elems(systems: usize, nblocks: usize, n: usize) -> usize {
    match first_inverse_level(n, nblocks as u32) {
        Some(m0) => systems * nodes_in_level(nblocks as u32, m0) as usize * inverse_parts(n) * scratch_part_elems(n),
        None => 0,
    }
}

/// The inverse `V = L_ii^-T` of block `b` of system `s` (`n x n`, leading dimension `ld`).
///
/// # Safety
/// Block `b + 1` is a multiple of `2^m0` (a node of an inverting level); `a.dinv` holds
/// [`inverse_elems`] behind the diagonal-tile inverses.
#[inline(always)]
unsafe fn inverse_block<T: Real>(a: &TiledArgs<T>, s: usize, b: usize) -> *mut T {
    let (n, nb) = (a.n(), a.nblocks as usize);
    let m0 = first_inverse_level(n, a.nblocks).unwrap_or_default();
    let slot = s * inverse_slots(n, a.nblocks) + ((b + 1) >> m0) - 1;
    // SAFETY: inside the inverses (the caller's contract).
    unsafe { a.dinv.add(a.systems as usize * nb * dinv_elems(n) + slot * a.ld() * n) }
}

/// Step `k` (= `args.step`) of `V_i = L_ii^-T` for every node of the level: column tile
/// `k` of `V`, from `V L^T = I` row tile by row tile, `V_jk = -(sum_{c=j}^{k-1} V_jc
/// L_kc^T) W_k^T` for `j < k` and `V_kk = W_k^T` (`W_k = dinv[b][k]`). Grid `x` =
/// `systems * nodes * (k + 1)`, the row tiles `j` fastest; the update and the product with
/// `W_k^T` are the column steps' ([`super::factor::update_trsm`]). Launch `k = 0, 1, ..`
/// in order. Tiles below the diagonal tiles are never written or read.
///
/// # Safety
/// [`super::PRODUCT_THREADS`] threads, [`super::factor::product_kernel_shared_bytes`]; the
/// level [`inverts_level`]; its column steps up to the `potrf` of step `k` have completed
/// (row tile `k` of `L_ii` and `dinv[b][k]` are final: no later launch writes them), and so
/// have the earlier steps of this launch sequence.
pub unsafe fn inverse_step<T: Real, M: TileMac<T>>(args: &TiledArgs<T>) {
    let a = *args;
    let (n, ld, k) = (a.n(), a.ld(), a.step as usize);
    let (nd, j) = a.node_and_tile(k + 1);
    let (flag, sh) = shared_areas::<T>();
    if unsafe { a.failed(nd.s, flag) } {
        return;
    }
    let v = unsafe { inverse_block(&a, nd.s, nd.b) };
    let w = tile_rows(n, k);
    // SAFETY (all tile pointers): inside block b and its dinv (j <= k < tiles(n)).
    let dst = unsafe { v.add(k * TILE * ld + j * TILE) };
    let inv = unsafe { a.dinv_tile(nd.s, nd.b, k) } as *const T;
    if j == k {
        // `W_k` is zero above the diagonal and outside `w x w`: its transpose is the
        // upper triangular `V_kk`, zero below the diagonal, as the products read it.
        let mut e = thread_idx_x() as usize;
        while e < TILE * TILE {
            let (r, c) = (e % TILE, e / TILE);
            if r < w && c < w {
                unsafe { *dst.add(c * ld + r) = *inv.add(r * TILE + c) };
            }
            e += super::PRODUCT_THREADS as usize;
        }
        return;
    }
    let l = unsafe { a.block(a.diag, nd.s, nd.b) };
    let c0 = j * TILE;
    let (pa, pb) = unsafe { (rows_panel(v, ld, n, j * TILE, c0, TILE), rows_panel(l, ld, n, k * TILE, c0, TILE)) };
    let acc = unsafe { Narrow::<M>::product(pa, pb, (k - j) * TILE, sh) };
    // SAFETY: the block's own tile (j, k); -acc (no old value).
    unsafe { subtract_acc::<T, Narrow<M>>(&acc, dst, ld, false, |r, c| r < pa.rows && c < pb.rows) };
    // The stores before the product's reads of the tile (through L2, as in `update_trsm`).
    sync_threads();
    let p = Panel { ptr: dst as *const T, ld, rows: pa.rows };
    let acc = unsafe { Narrow::<M>::product(p, Panel { ptr: inv, ld: TILE, rows: w }, w, sh) };
    for_each_acc::<T, Narrow<M>>(&acc, |r, c, x| {
        if r < p.rows && c < w {
            unsafe { *dst.add(c * ld + r) = x };
        }
    });
}

/// Tiles of `V` per block of the inverse solves: a tile row's product is split into parts
/// of this many tiles (each block streams few tiles: one SM reads ~20 GB/s, entry 47),
/// whose partial sums [`inverse_copy`] adds in a fixed order.
pub const PART_TILES: usize = 2;

/// Parts per tile row of the inverse solves for block size `n`.
pub const fn inverse_parts(n: usize) -> usize {
    tiles(n).div_ceil(PART_TILES)
}

/// Shared memory of [`forward_inverse`] / [`backward_inverse`] for `chunk` right-hand-side
/// columns per pass: a node walk's ([`node_walk_shared_bytes`]) for a block of one part's
/// rows (the ring of staged tiles, the part's right-hand-side rows, the row sums' partial
/// sums).
pub const fn inverse_solve_shared_bytes(chunk: usize, elem_bytes: usize) -> usize {
    node_walk_shared_bytes(PART_TILES * TILE, chunk, elem_bytes)
}

/// Right-hand-side columns per pass of the inverse solves: the most, up to `chunk` and
/// [`MAX_CHUNK`], whose [`inverse_solve_shared_bytes`] fit in `smem` (0: not one).
pub const fn inverse_solve_chunk(chunk: usize, elem_bytes: usize, smem: usize) -> usize {
    node_walk_chunk(PART_TILES * TILE, chunk, elem_bytes, smem)
}

/// The columns of this launch's pass: `(first, count)`, pass `args.step` of `args.chunk`
/// columns each.
#[inline(always)]
fn pass_columns<T>(a: &TiledArgs<T>) -> (usize, usize) {
    let (k, chunk) = (a.nrhs as usize, a.chunk as usize);
    let c0 = a.step as usize * chunk;
    (c0, chunk.min(k - c0))
}

/// Node `nd`'s partial sums of part `p` in the scratch area ([`scratch_part_elems`]; a
/// node's parts are consecutive).
///
/// # Safety
/// `a.scratch` holds [`inverse_scratch_elems`]; `nd` is a node of `a.level`, an inverting
/// level; `p < inverse_parts(n)`.
#[inline(always)]
unsafe fn scratch_part<T: Real>(a: &TiledArgs<T>, nd: super::Node, p: usize) -> *mut T {
    let idx = (nd.b + 1) >> (a.level + 1);
    let slot = (nd.s * nodes_in_level(a.nblocks, a.level) as usize + idx) * inverse_parts(a.n()) + p;
    // SAFETY: the caller's contract.
    unsafe { a.scratch.add(slot * scratch_part_elems(a.n())) }
}

/// [`forward_inverse`] (`BACKWARD = false`) or [`backward_inverse`]: the block of tile row
/// `r` and part `p` (grid `x` = `systems * nodes * tiles(n) * parts`, parts fastest) adds
/// the products of its tiles of row `r`'s sequence (`V[q, r]^T` for `q = 0..=r`, or
/// `V[r, q]` for `q = r..`), parts of [`PART_TILES`], into its partial sums.
///
/// # Safety
/// As [`forward_inverse`].
#[inline(always)]
unsafe fn inverse_part<T: Real, const BACKWARD: bool>(a: &TiledArgs<T>) {
    let (n, ld, chunk) = (a.n(), a.ld(), a.chunk as usize);
    let (nt, parts) = (tiles(n), inverse_parts(n));
    let (nd, e) = a.node_and_tile(nt * parts);
    let (r, p) = (e / parts, e % parts);
    let (c0, kc) = pass_columns(a);
    // The row's sequence of tiles q in [first, end), this part's [q0, q1).
    let (first, end) = if BACKWARD { (r, nt) } else { (0, r + 1) };
    let q0 = first + p * PART_TILES;
    let q1 = end.min(q0 + PART_TILES);
    let out = unsafe { scratch_part(a, nd, p).add(r * TILE) };
    let w = tile_rows(n, r);
    if q0 >= q1 {
        // An empty part adds zeros.
        let mut i = thread_idx_x() as usize;
        while i < w * kc {
            unsafe { *out.add((i / w) * n + i % w) = T::ZERO };
            i += THREADS;
        }
        return;
    }
    let (_, sh) = shared_areas::<T>();
    // SAFETY (shared pointers): inside inverse_solve_shared_bytes(chunk).
    let (stages, vs) = (sh, unsafe { sh.add(WALK_STAGES * TILE * WALK_LD) });
    let np = PART_TILES * TILE;
    let red = unsafe { vs.add(np * chunk) };
    let v = unsafe { inverse_block(a, nd.s, nd.b) } as *const T;
    let source = |i: usize| {
        let q = q0 + i;
        let (row, col) = if BACKWARD { (r, q) } else { (q, r) };
        (Panel { ptr: v.wrapping_add(col * TILE * ld + row * TILE), ld, rows: tile_rows(n, row) }, tile_rows(n, col))
    };
    let mut ring = unsafe { TileRing::start(stages, q1 - q0, source) };
    let (bsys, ldb) = unsafe { system_rhs(a, nd.s) };
    let rows = n.min(q1 * TILE) - q0 * TILE;
    // SAFETY: the node's rows of tiles q0..q1, columns c0 .. c0 + kc; ends with a barrier.
    unsafe { move_node_rhs(bsys.add(c0 * ldb + nd.b * n + q0 * TILE), ldb, vs, rows, np, kc, true) };
    if BACKWARD {
        let mut acc = [T::ZERO; MAX_CHUNK];
        for q in q0..q1 {
            let tile = unsafe { ring.next() };
            // SAFETY: the staged tile and the part's rows of tile q.
            unsafe { walk_row_times(tile, vs.add((q - q0) * TILE), np, kc, &mut acc) };
        }
        ring.finish();
        let total = unsafe { walk_row_sums(red, chunk, &acc, kc) };
        each_row_sum(&total, kc, w, |c, row, x| unsafe { *out.add(c * n + row) = x });
    } else {
        let mut acc = [[T::ZERO; MAX_CHUNK]; WALK_ROWS];
        for q in q0..q1 {
            let tile = unsafe { ring.next() };
            unsafe { walk_col_times(tile, vs.add((q - q0) * TILE), np, kc, &mut acc) };
        }
        ring.finish();
        walk_col_sums(&mut acc, kc);
        each_col_sum(&acc, kc, w, |c, row, x| unsafe { *out.add(c * n + row) = x });
    }
}

/// `y_i = V_i^T b_i` (`= L_ii^-1 b_i`) for every node of an inverting level, pass
/// `args.step` of its right-hand-side columns, as partial sums in the scratch area: grid
/// `x` = `systems * nodes * tiles(n) * `[`inverse_parts`], one block per tile row `r`
/// and part, streaming its tiles of `V[0..=r, r]` through a ring (their transposes times
/// the node's rows of `b`, held in shared memory). [`inverse_copy`] adds the parts.
///
/// # Safety
/// [`super::solve::SOLVE_THREADS`] threads, [`inverse_solve_shared_bytes`]`(chunk)`; the
/// level [`inverts_level`], its inverses are complete ([`inverse_step`]), the lower
/// levels' forward kernels have completed; `args.scratch` holds [`inverse_scratch_elems`],
/// which no other launch uses until [`inverse_copy`] of this pass.
pub unsafe fn forward_inverse<T: Real>(args: &TiledArgs<T>) {
    // SAFETY: forwarded contract.
    unsafe { inverse_part::<T, false>(args) }
}

/// `x_i = V_i z_i` (`= L_ii^-T z_i`) for every node of an inverting level, pass
/// `args.step`, as partial sums in the scratch area: as [`forward_inverse`], each tile
/// row `r` streaming its parts of `V[r, r..]`.
///
/// # Safety
/// As [`forward_inverse`], after [`super::solve::backward_couple`] of the level.
pub unsafe fn backward_inverse<T: Real>(args: &TiledArgs<T>) {
    // SAFETY: forwarded contract.
    unsafe { inverse_part::<T, true>(args) }
}

/// Adds the partial sums of pass `args.step` of [`forward_inverse`] or
/// [`backward_inverse`] in order of their parts and stores them into the right-hand
/// sides: grid `x` = `systems * nodes * tiles(n)`, one block per tile row of each node.
/// With `args.side == 1` (after [`backward_inverse`]) records `info_key(level,
/// NonFiniteSolution, b)` when a value of `x_i` is not finite.
///
/// # Safety
/// [`super::solve::SOLVE_THREADS`] threads, no shared memory; after the product launch of
/// the same level and pass.
pub unsafe fn inverse_copy<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let n = a.n();
    let (nd, r) = a.node_and_tile(tiles(n));
    let (c0, kc) = pass_columns(&a);
    let w = tile_rows(n, r);
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    // SAFETY: the node's rows of tile r, columns c0 .. c0 + kc, and their partial sums.
    let dst = unsafe { bsys.add(c0 * ldb + nd.b * n + r * TILE) };
    // The node's parts are consecutive slots (scratch_part).
    let (src, part_len) = (unsafe { scratch_part(&a, nd, 0).add(r * TILE) } as *const T, scratch_part_elems(n));
    let parts = inverse_parts(n);
    let mut finite = true;
    let mut i = thread_idx_x() as usize;
    while i < w * kc {
        let (row, c) = (i % w, i / w);
        let mut total = T::ZERO;
        for p in 0..parts {
            total += unsafe { *src.add(p * part_len + c * n + row) };
        }
        finite &= total.is_finite();
        unsafe { *dst.add(c * ldb + row) = total };
        i += THREADS;
    }
    if a.side == 1 && !finite {
        unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}
