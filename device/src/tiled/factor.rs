//! Factor kernels of the tiled engine (see [`super`] for the launch sequence).
//!
//! Grids: [`potrf`] one block per node (`x` = `systems * nodes of the level`, block
//! `s * nodes + t` is node `t` of system `s`); the product kernels `x` = that times the
//! node's tiles (pairs), tiles fastest (`TiledArgs::node_and_tile`). [`prep`]: `x` = block, `y` = column tile. Blocks whose tile
//! does not exist for their node (no left neighbour, say) return at once; blocks of a
//! system that already recorded a failure return after one barrier.

use super::product::{Narrow, Panel, ProductShape, TileMac, Wide, product_shared_bytes};
use super::{TILE, TiledArgs, lower_pair, tiles};
use crate::layout::{fill_slot, level_of};
use crate::level::{InfoCode, info_key};
use crate::team::Block;
use crate::tile::wait_copies;
use blocktri_prims::{Real, atomic, block_idx_x, block_idx_y, shared, sync_threads, thread_idx_x};

pub use super::potrf::{potrf, potrf_shared_bytes};

/// Threads of [`prep`] and [`potrf`].
pub const WIDE_THREADS: u32 = 256;

/// Bytes in front of every tiled kernel's shared data (the block-uniform failure flag).
pub(super) const FLAG_BYTES: usize = 16;

/// Shared memory of [`trsm`], [`update`] and [`neighbours`] on the `64 x 64` products.
pub const fn product_kernel_shared_bytes(elem_bytes: usize) -> usize {
    FLAG_BYTES + product_shared_bytes(elem_bytes)
}

/// Shared memory of [`neighbours`] on the [`Wide`] products (`f64`).
pub const fn wide_product_kernel_shared_bytes() -> usize {
    shape_kernel_shared_bytes::<f64, Wide>()
}

/// Shared memory of a product kernel ([`update`], [`neighbours`]) on the shape `S`.
pub const fn shape_kernel_shared_bytes<T: Real, S: ProductShape<T>>() -> usize {
    FLAG_BYTES + S::SHARED_BYTES
}

/// The flag word and the element area behind it.
#[inline(always)]
pub(super) fn shared_areas<T>() -> (*mut u32, *mut T) {
    /// Asks for a 16-byte aligned window: the products' asynchronous copies write 16-byte
    /// pieces (FLAG_BYTES keeps the element area aligned too).
    #[repr(C, align(16))]
    struct Align16([u8; 16]);
    let base = shared::dynamic_shared::<Align16>() as *mut u8;
    // SAFETY: every tiled kernel is launched with at least FLAG_BYTES of shared memory.
    (base as *mut u32, unsafe { base.add(FLAG_BYTES) } as *mut T)
}

/// Shared memory of [`prep`]: two staging tiles and two diagonal stretches.
pub const fn prep_shared_bytes(elem_bytes: usize) -> usize {
    FLAG_BYTES + (2 * TILE * stage_ld(elem_bytes) + 2 * TILE) * elem_bytes
}

/// Column stride of [`prep`]'s staging tiles: columns 16-byte aligned (the asynchronous
/// copies write 16-byte pieces).
const fn stage_ld(elem_bytes: usize) -> usize {
    TILE + 16 / elem_bytes
}

/// Tile columns one pass of [`WIDE_THREADS`] threads covers (`TILE` threads per column).
const TILE_STEP: usize = WIDE_THREADS as usize / TILE;

/// Prepares a factorization: block `b` of system `s` (grid `x` = `systems * nblocks`),
/// column tile `y` (grid `y` = `tiles(n)`):
/// - `diag[b]` = the lower triangle of the input block, zero above (the updates and the
///   factor only ever touch the lower triangle);
/// - for a level-0 node `b`: `left[b] = A[b-1, b] = sub[b-1]^T` (through a shared-memory
///   transposition) and `right[b] = sub[b]`;
/// - checks: every value finite, the input diagonal block symmetric within `sym_tol`;
///   a failure is recorded as `info_key(level of b, code, b)`.
///
/// Each input value is read once (the diagonal tiles twice): a lower tile with its
/// transpose as the mirror; the tiles above the diagonal are only written (zeros).
///
/// The copy is memory-bound, so what matters is the bytes in flight: a tile and its mirror
/// go to shared memory by asynchronous copies (`stage_region`), which hold no registers
/// while in flight, and the loops stay loops (unrolled, their hoisted addresses took
/// ~200 registers and one block per multiprocessor; now 64 in f64 and three blocks, each
/// with 64 KB of copies in flight; `docs/perf-notes.md`, entry 75).
///
/// # Safety
/// [`WIDE_THREADS`] threads, [`prep_shared_bytes`] of shared memory; arrays as in
/// [`TiledArgs`], with `ld` a multiple of `16 / T::BYTES` (the executor pads it to 64
/// bytes) and 16-byte aligned blocks; `info` reset to [`crate::level::INFO_OK`] before the
/// launch.
pub unsafe fn prep<T: Real>(args: &TiledArgs<T>) {
    // SAFETY: the caller's contract; the input is the plan's own, at its leading dimension.
    unsafe { prep_from::<T, T>(args, args.diag_in, args.sub, args.ld()) }
}

/// An `f64` matrix that a lower-precision factorization's [`prep_rounding`] reads instead
/// of its own input blocks: `systems * nblocks` diagonal and `systems * (nblocks - 1)`
/// sub-diagonal blocks at leading dimension `ld` (device addresses).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RoundingInput {
    pub diag: *const f64,
    pub sub: *const f64,
    pub ld: u32,
}

/// [`prep`] for an `f32` factorization of an `f64` matrix (mixed precision): reads
/// `input` and rounds each value to `f32` as it writes the working blocks, so the matrix is
/// read once in `f64` instead of rounded into `f32` input blocks by a kernel of its own and
/// read again. A value outside `f32`'s range becomes infinite and is reported as
/// non-finite, as the rounded input would have been; the symmetry check compares the `f64`
/// values (with `f32`'s tolerance).
///
/// # Safety
/// As [`prep`], with `prep_shared_bytes(8)` of shared memory and `input` in place of the
/// input blocks (its `ld` a multiple of 2, its blocks 16-byte aligned).
pub unsafe fn prep_rounding(args: &TiledArgs<f32>, input: &RoundingInput) {
    // SAFETY: the caller's contract.
    unsafe { prep_from::<f32, f64>(args, input.diag, input.sub, input.ld as usize) }
}

/// [`prep`] reading the input blocks (of element type `S`, leading dimension `ld_in`) from
/// `diag_in` and `sub_in` and writing `T`s.
#[inline(always)]
unsafe fn prep_from<T: Real, S: Real>(args: &TiledArgs<T>, diag_in: *const S, sub_in: *const S, ld_in: usize) {
    let a = *args;
    let (n, ld, nb) = (a.n(), a.ld(), a.nblocks as usize);
    let round = |v: S| T::from_f64(v.to_f64());
    let sym_tol = S::from_f64(a.sym_tol.to_f64());
    let bx = block_idx_x() as usize;
    let (s, b) = (bx / nb, bx % nb);
    let c0 = block_idx_y() as usize * TILE;
    let w = TILE.min(n - c0);
    let tid = thread_idx_x() as usize;
    let sld = stage_ld(S::BYTES);
    let (_, area) = shared_areas::<S>();
    // SAFETY (all pointer arithmetic): blocks of system `s` inside the arrays, entries
    // (r, c) with r < n, c < n at leading dimension ld (ld_in for the input); shared areas
    // as sized.
    let (own, far) = (area, unsafe { area.add(TILE * sld) });
    let (dr, dc) = unsafe { (area.add(2 * TILE * sld), area.add(2 * TILE * sld + TILE)) };
    let blk_in = ld_in * n;
    let mut bad = u32::MAX;
    let din = unsafe { diag_in.add((s * nb + b) * blk_in) };
    let d = unsafe { a.block(a.diag, s, b) };
    for r0 in (0..n).step_by(TILE) {
        let h = TILE.min(n - r0);
        if r0 < c0 {
            // Above the diagonal (tiles are aligned, so every r < c): zeros. Reading this
            // tile too, as the mirror of its transpose and for its own values, read the
            // input twice (a fifth of prep's traffic, which is memory-bound).
            for_share(tid, (h, w), |rl, cl| unsafe { *d.add((c0 + cl) * ld + r0 + rl) = T::ZERO });
            continue;
        }
        // own(rl, cl) = D(r0 + rl, c0 + cl) at own[cl sld + rl]; its mirror
        // D(c0 + cl, r0 + rl) at far[rl sld + cl] (column r0 + rl of D, rows c0..), so
        // that the symmetry check reads nothing strided from global memory.
        unsafe {
            stage_region(din, ld_in, (r0, h), (c0, w), own);
            stage_region(din, ld_in, (c0, w), (r0, h), far);
        }
        if tid < h {
            unsafe { *dr.add(tid) = *din.add((r0 + tid) * ld_in + r0 + tid) };
        }
        if tid < w {
            unsafe { *dc.add(tid) = *din.add((c0 + tid) * ld_in + c0 + tid) };
        }
        wait_copies(Block);
        for_share(tid, (h, w), |rl, cl| {
            let (r, c) = (r0 + rl, c0 + cl);
            let v = unsafe { *own.add(cl * sld + rl) };
            let vt = round(v);
            unsafe { *d.add(c * ld + r) = if r >= c { vt } else { T::ZERO } };
            // Below the diagonal, the mirror is the only read of its upper-triangle value:
            // it is checked for finiteness here too.
            let m = if r > c { unsafe { *far.add(rl * sld + cl) } } else { S::ZERO };
            let (drr, dcc) = unsafe { (*dr.add(rl), *dc.add(cl)) };
            let diff = v - m;
            // False for NaN; on and above the diagonal only finiteness is checked.
            let symmetric = r <= c || diff * diff <= sym_tol * sym_tol * (drr * dcc).abs();
            // The written value's finiteness: an input outside `T`'s range is non-finite.
            let code = if !vt.is_finite() || !m.is_finite() {
                InfoCode::NonFinite as u32
            } else if !symmetric {
                InfoCode::NotSymmetric as u32
            } else {
                u32::MAX
            };
            bad = bad.min(code);
        });
        // The staging tiles are free again.
        blocktri_prims::sync_threads();
    }
    let info = unsafe { a.info.add(s) };
    if bad != u32::MAX {
        let code = InfoCode::from_u32(bad).unwrap_or(InfoCode::NonFinite);
        unsafe { atomic::atomic_min_u64(info, info_key(level_of(b as u32 + 1), code, b as u32)) };
    }
    // Level-0 nodes are the even 0-based blocks; every sub-diagonal block belongs to one.
    if b % 2 != 0 {
        return;
    }
    let sub = |j: usize| unsafe { sub_in.add((s * (nb - 1) + j) * blk_in) };
    let (has_right, has_left) = (b + 1 < nb, b >= 1);
    let (right, left) = unsafe { (a.block(a.right, s, b), a.block(a.left, s, b)) };
    let mut finite = true;
    for r0 in (0..n).step_by(TILE) {
        let h = TILE.min(n - r0);
        // right[b] = sub[b]: tile (r0, c0) into `own`. left[b](r, c) = sub[b-1](c, r):
        // rows c0.. of columns r0.. of sub[b-1] into `far`, read back transposed.
        if has_right {
            unsafe { stage_region(sub(b), ld_in, (r0, h), (c0, w), own) };
        }
        if has_left {
            unsafe { stage_region(sub(b - 1), ld_in, (c0, w), (r0, h), far) };
        }
        wait_copies(Block);
        for_share(tid, (h, w), |rl, cl| {
            let at = (c0 + cl) * ld + r0 + rl;
            if has_right {
                let v = round(unsafe { *own.add(cl * sld + rl) });
                finite &= v.is_finite();
                unsafe { *right.add(at) = v };
            }
            if has_left {
                let v = round(unsafe { *far.add(rl * sld + cl) });
                finite &= v.is_finite();
                unsafe { *left.add(at) = v };
            }
        });
        blocktri_prims::sync_threads();
    }
    if !finite {
        unsafe { atomic::atomic_min_u64(info, info_key(0, InfoCode::NonFinite, b as u32)) };
    }
}

/// Starts asynchronous copies of rows `r0 .. r0 + h`, columns `c0 .. c0 + w` of the
/// column-major block `src` (leading dimension `ld`) into the staging tile `dst` (column
/// `c` at `dst + c stage_ld`): 16-byte pieces, consecutive threads on consecutive pieces of
/// a column. A last piece past row `h` reads only the rows inside (the rest of it is
/// zero-filled into the column's padding). [`wait_copies`] waits for them.
///
/// # Safety
/// `src`'s columns start 16-byte aligned (`ld` and `r0` multiples of `16 / T::BYTES`), the
/// region lies inside the block, `dst` is a staging tile of [`prep`] that nobody reads or
/// writes until the copies are waited for.
#[inline(always)]
unsafe fn stage_region<T: Real>(src: *const T, ld: usize, (r0, h): (usize, usize), (c0, w): (usize, usize), dst: *mut T) {
    let per = 16 / T::BYTES;
    let pieces = TILE / per;
    // A run-time trip count, so that the loop is not unrolled (see `prep`).
    let mut q = thread_idx_x() as usize;
    while q < w * pieces {
        let (col, row) = (q / pieces, q % pieces * per);
        if row < h {
            let bytes = ((h - row).min(per) * T::BYTES) as u32;
            // SAFETY: the caller's contract; the piece lies in column `col` of both.
            unsafe {
                blocktri_prims::memory::copy_async_16(
                    dst.add(col * stage_ld(T::BYTES) + row) as *mut u8,
                    src.add((c0 + col) * ld + r0 + row) as *const u8,
                    bytes,
                )
            };
        }
        q += WIDE_THREADS as usize;
    }
}

/// Calls `f(fast, slow)` for this thread's entries of a `fast_len x slow_len` tile:
/// `fast = tid % TILE` (consecutive threads, consecutive addresses) and `slow = tid / TILE`,
/// then every [`TILE_STEP`]; no division by a run-time size, and a run-time trip count
/// (see [`stage_region`]). Not [`crate::tile::for_each_rc`]: its per-entry divider and six
/// more registers made `prep` 8-10 % slower in f32 at n = 128 (five blocks per
/// multiprocessor instead of six; f64 within 2 %; `docs/bench/prep-shares-h200/call6`).
#[inline(always)]
fn for_share(tid: usize, (fast_len, slow_len): (usize, usize), mut f: impl FnMut(usize, usize)) {
    let fast = tid % TILE;
    if fast >= fast_len {
        return;
    }
    let mut slow = tid / TILE;
    while slow < slow_len {
        f(fast, slow);
        slow += TILE_STEP;
    }
}

/// The panel's three row bands: 0 = `D_i` (block `diag[b]`), 1 = the left coupling,
/// 2 = the right coupling; `None` when the node has no such neighbour.
#[inline(always)]
unsafe fn band<T: Real>(a: &TiledArgs<T>, s: usize, b: usize, which: usize, present: bool) -> Option<*mut T> {
    if !present {
        return None;
    }
    let base = match which {
        0 => a.diag,
        1 => a.left,
        _ => a.right,
    };
    // SAFETY: block b of system s (caller's contract).
    Some(unsafe { a.block(base, s, b) })
}

/// Blocks per node of a launch over the panel's row tiles of `h` engine tiles each
/// (`panel_tile`): those of `D_i` from row tile `first`, then every one of the left and
/// of the right coupling.
pub const fn panel_blocks(n: usize, first: usize, h: usize) -> u32 {
    let nt = tiles(n);
    ((nt - first).div_ceil(h) + 2 * nt.div_ceil(h)) as u32
}

/// The panel row tile of this product block (grid `x` = `systems * nodes *`
/// [`panel_blocks`], tiles fastest), `h` engine tiles (`64 h` rows) high: those of `D_i`
/// from row tile `first`, then every one of the left and of the right coupling. Returns
/// `(node, band, first engine row tile, band block)`, `None` when the node has no such
/// coupling.
///
/// # Safety
/// `a` satisfies the kernels' contract.
#[inline(always)]
unsafe fn panel_tile<T: Real>(a: &TiledArgs<T>, first: usize, h: usize) -> Option<(super::Node, usize, usize, *mut T)> {
    let nt = tiles(a.n());
    let (own, per_band) = ((nt - first).div_ceil(h), nt.div_ceil(h));
    let (nd, y) = a.node_and_tile(own + 2 * per_band);
    let (which, t) = if y < own { (0, first + h * y) } else { (1 + (y - own) / per_band, h * ((y - own) % per_band)) };
    let present = match which {
        0 => true,
        1 => nd.left.is_some(),
        _ => nd.right.is_some(),
    };
    unsafe { band(a, nd.s, nd.b, which, present) }.map(|blk| (nd, which, t, blk))
}

/// Row panel of engine tile row `t`, starting at column `c0`, of the column-major block
/// `blk`.
#[inline(always)]
unsafe fn panel<T>(blk: *mut T, ld: usize, n: usize, t: usize, c0: usize) -> Panel<T> {
    // SAFETY: forwarded (t < tiles(n)).
    unsafe { rows_panel(blk, ld, n, t * TILE, c0, TILE) }
}

/// Row panel of up to `rows` rows from row `row0`, starting at column `c0`, of the
/// column-major block `blk` (clipped to its `n` rows).
#[inline(always)]
pub(super) unsafe fn rows_panel<T>(blk: *mut T, ld: usize, n: usize, row0: usize, c0: usize, rows: usize) -> Panel<T> {
    // SAFETY: inside the block (row0 < n, c0 < n).
    Panel { ptr: unsafe { blk.add(c0 * ld + row0) } as *const T, ld, rows: rows.min(n - row0) }
}

/// Hands each accumulator of this thread with its `(row, col)` inside the tile.
#[inline(always)]
pub(super) fn for_each_acc<T: Real, S: ProductShape<T>>(acc: &S::Acc, mut f: impl FnMut(usize, usize, T)) {
    let tid = thread_idx_x() as usize;
    for (e, &v) in acc.as_ref().iter().enumerate() {
        let (r, c) = S::acc_coord(tid, e);
        f(r, c, v);
    }
}

/// `dst[r, c] = old - acc` for every accumulator whose `(row, col)` passes `keep`, with
/// `old` the entry's value when `subtract`, else zero. The old values of a group of
/// [`ProductShape::EPILOGUE`] accumulators are all loaded before the group's first store: a load
/// after each store (the compiler cannot tell the entries apart) waited one global round
/// trip per accumulator, ~15 µs of a top-level launch (`docs/perf-notes.md`, entry 16).
/// Groups, not all at once: the wide product's 64 accumulators and 64 old values would not
/// fit in the registers (entry 20).
///
/// # Safety
/// Every kept `(r, c)` is an entry of the tile at `dst` (leading dimension `ld`) that only
/// this thread touches in the launch.
#[inline(always)]
pub(super) unsafe fn subtract_acc<T: Real, S: ProductShape<T>>(
    acc: &S::Acc,
    dst: *mut T,
    ld: usize,
    subtract: bool,
    keep: impl Fn(usize, usize) -> bool,
) {
    let tid = thread_idx_x() as usize;
    let acc = acc.as_ref();
    const { assert!(S::EPILOGUE <= EPILOGUE_GROUP) };
    for (g, group) in acc.chunks(S::EPILOGUE).enumerate() {
        let at = |i: usize| S::acc_coord(tid, g * S::EPILOGUE + i);
        let old: [T; EPILOGUE_GROUP] = core::array::from_fn(|i| {
            let (r, c) = at(i);
            // SAFETY: a kept entry (caller's contract).
            if i < group.len() && subtract && keep(r, c) { unsafe { *dst.add(c * ld + r) } } else { T::ZERO }
        });
        for (i, &v) in group.iter().enumerate() {
            let (r, c) = at(i);
            if keep(r, c) {
                unsafe { *dst.add(c * ld + r) = old[i] - v };
            }
        }
    }
}

/// The most accumulators whose old values [`subtract_acc`] loads together.
const EPILOGUE_GROUP: usize = 32;

/// Step `k`, part 3: the rows of the panel below the diagonal tile, `X = P[rows, k] L_kk^-T`
/// as a product with `dinv[b][k]`, in place. Tiles per node (grid `x` = `systems * nodes * that`, tiles fastest):
/// `(tiles - k - 1) + 2 tiles`: the
/// `D_i` row tiles below `k`, then every tile of the left and of the right coupling.
///
/// # Safety
/// [`super::PRODUCT_THREADS`] threads, [`product_kernel_shared_bytes`]; [`potrf`] of the
/// same step has completed.
pub unsafe fn trsm<T: Real, M: TileMac<T>>(args: &TiledArgs<T>) {
    // SAFETY: forwarded contract (no update).
    unsafe { update_trsm_tiles::<T, M, false>(args) }
}

/// Step `k`, parts 1 and 3 for the rows below the diagonal tile, in one launch over
/// [`trsm`]'s grid: each block subtracts the products of the finished columns
/// `from_col .. k` from its row tile of column `k` (as [`update`]), then solves it with
/// `dinv[b][k]` (as [`trsm`]). The diagonal tile was updated before the `potrf` by
/// [`update_diagonal`].
///
/// Against the split [`update`] + [`trsm`], the updated tile goes from the block's stores
/// to its own reads through L2 instead of a DRAM round trip between two launches; on
/// levels with many nodes those two launches each streamed column `k` of every panel
/// (`docs/perf-notes.md`, entry 46).
///
/// # Safety
/// As [`trsm`]; [`update_diagonal`] and [`potrf`] of the same step have completed,
/// `from_col < k`.
pub unsafe fn update_trsm<T: Real, M: TileMac<T>>(args: &TiledArgs<T>) {
    // SAFETY: forwarded contract.
    unsafe { update_trsm_tiles::<T, M, true>(args) }
}

/// [`update_trsm`], or with `UPDATE = false` [`trsm`] (whose kernel then holds no update
/// code).
///
/// # Safety
/// As [`update_trsm`] (as [`trsm`] without `UPDATE`).
#[inline(always)]
unsafe fn update_trsm_tiles<T: Real, M: TileMac<T>, const UPDATE: bool>(args: &TiledArgs<T>) {
    let a = *args;
    let (n, ld, k) = (a.n(), a.ld(), a.step as usize);
    let Some((nd, which, t, blk)) = (unsafe { panel_tile(&a, k + 1, 1) }) else { return };
    let (flag, sh) = shared_areas::<T>();
    if unsafe { a.failed(nd.s, flag) } {
        return;
    }
    if UPDATE {
        // SAFETY: the block's own row tile of column k; the finished columns are final.
        unsafe { update_tile::<T, Narrow<M>>(&a, nd, which, t, blk, a.from_col as usize, sh) };
        // The block's stores of the tile before its reads of it below: a CTA barrier
        // orders them (the product reads through L2, where the stores went).
        sync_threads();
    }
    let c0 = k * TILE;
    let w = TILE.min(n - c0);
    let p = unsafe { panel(blk, ld, n, t, c0) };
    let inv = Panel { ptr: unsafe { a.dinv_tile(nd.s, nd.b, k) } as *const T, ld: TILE, rows: w };
    // SAFETY: product_nt reads the whole panel before returning; each block owns its tile.
    let acc = unsafe { Narrow::<M>::product(p, inv, w, sh) };
    let dst = p.ptr as *mut T;
    for_each_acc::<T, Narrow<M>>(&acc, |r, c, v| {
        if r < p.rows && c < w {
            unsafe { *dst.add(c * ld + r) = v };
        }
    });
}

/// Step `k`, part 1 (left-looking, `k >= 1`): the column tiles `k ..` of the panel
/// covered by the output tiles (`S::COLS / 64` of them) get the products of the finished
/// columns `j = from_col .. k`, `P[I, k..] -= P[I, j] P[k.., j]^T` (`K = 64 (k - from_col)`,
/// accumulated in registers and written once), for the `D_i` row tiles `I >= k` (only the
/// lower triangle of the diagonal tiles) and every row tile of the couplings, in output
/// tiles of `S::ROWS` rows. Blocks per node: [`panel_blocks`]`(n, k, S::ROWS / TILE)`.
///
/// [`column_update`] says which columns and shape each step takes: `64`-wide on all the
/// finished columns, or a `128 x 128` [`Wide`] pair of columns followed by the second
/// column's remaining `K = 64`; and where the rows below the diagonal tile are updated by
/// [`update_trsm`] instead (after [`update_diagonal`]).
///
/// Right-looking (every step rewriting the whole trailing panel with `K = 64`) ran at
/// about 10 TFLOP/s on the H100 against 25-27 for these long-`K` products
/// (`docs/perf-notes.md`, entry 5).
///
/// The look-ahead of the top levels takes the columns before `k - 1` off the critical
/// path of step `k`: beside step `k - 1`, on a second stream, a launch with `carry =`
/// [`CARRY_OUT`] and `to_col = k - 1` multiplies the columns `0 .. k - 1` and leaves each
/// block's accumulators in `scratch` (one slot of `S::ROWS x S::COLS` values per block
/// of the grid, [`carry_elems`]); step `k` then launches the same grid with `carry =`
/// [`CARRY_IN`] and `from_col = k - 1`, which continues those accumulators over column
/// `k - 1` and subtracts the sum. One accumulator chain per output element either way, so
/// the bits are those of one launch over all the columns ([`ProductShape::product_from`]):
/// where the look-ahead runs does not change the result.
///
/// # Safety
/// As [`trsm`] with `S::THREADS` threads and [`shape_kernel_shared_bytes`]; the columns
/// `from_col .. to_col` (`to_col` or `k`) have completed, `from_col < to_col <= k`, no
/// other launch writes column `k` meanwhile (with `from_col > 0` only after an update
/// that covered column `k` with the columns before `from_col`, or with `CARRY_IN` after
/// the `CARRY_OUT` launch of the same step, grid and `scratch`, which no other launch
/// touched between them).
pub unsafe fn update<T: Real, S: ProductShape<T>>(args: &TiledArgs<T>) {
    let a = *args;
    let k = a.step as usize;
    let Some((nd, which, it, blk)) = (unsafe { panel_tile(&a, k, S::ROWS / TILE) }) else { return };
    let (flag, sh) = shared_areas::<T>();
    if unsafe { a.failed(nd.s, flag) } {
        return;
    }
    // SAFETY: forwarded contract; the block's own output tile.
    unsafe { update_tile::<T, S>(&a, nd, which, it, blk, a.from_col as usize, sh) };
}

/// [`update`] of the diagonal tile `D_i[k, k]` alone (its lower triangle), one block per
/// node (grid `x` = `systems * nodes`), before the `potrf` of step `k` where
/// [`update_trsm`] updates the rows below it.
///
/// # Safety
/// As [`update`] with [`super::PRODUCT_THREADS`] threads and
/// [`product_kernel_shared_bytes`].
pub unsafe fn update_diagonal<T: Real, M: TileMac<T>>(args: &TiledArgs<T>) {
    let a = *args;
    let nd = a.node();
    let (flag, sh) = shared_areas::<T>();
    if unsafe { a.failed(nd.s, flag) } {
        return;
    }
    // SAFETY: block b of system s; the node's own diagonal tile.
    unsafe {
        let d = a.block(a.diag, nd.s, nd.b);
        update_tile::<T, Narrow<M>>(&a, nd, 0, a.step as usize, d, a.from_col as usize, sh);
    }
}

/// [`TiledArgs::carry`] of an [`update`] that keeps its accumulators in `scratch`.
pub const CARRY_OUT: u32 = 1;
/// [`TiledArgs::carry`] of an [`update`] that starts from the accumulators in `scratch`.
pub const CARRY_IN: u32 = 2;

/// Elements of `scratch` that an [`update`] launch at step `k` with a `carry` uses per
/// node, on output tiles of `rows x 64` (one slot per block of its grid, every thread's
/// accumulators).
pub const fn carry_elems(n: usize, k: usize, rows: usize) -> usize {
    panel_blocks(n, k, rows / TILE) as usize * rows * TILE
}

/// The output tile of [`update`] at row tile `it` of band `which` (block `blk`) of node
/// `nd`, step `k = a.step`, columns `from .. to` subtracted (`to = a.to_col`, or `k` where
/// that is 0), or with a [`TiledArgs::carry`] kept in (`CARRY_OUT`) or continued from
/// (`CARRY_IN`) `scratch`.
///
/// # Safety
/// `from < to <= k`; the columns `from .. to` are final; no other block touches the output tile;
/// `sh` is the kernel's shared area for `S`; with a carry as [`update`] says.
#[inline(always)]
unsafe fn update_tile<T: Real, S: ProductShape<T>>(
    a: &TiledArgs<T>,
    nd: super::Node,
    which: usize,
    it: usize,
    blk: *mut T,
    from: usize,
    sh: *mut T,
) {
    const { assert!(S::COLS.is_multiple_of(TILE) && S::ROWS.is_multiple_of(TILE)) };
    let (n, ld, k) = (a.n(), a.ld(), a.step as usize);
    let to = if a.to_col == 0 { k } else { a.to_col as usize };
    let d = unsafe { a.block(a.diag, nd.s, nd.b) };
    let c0 = from * TILE;
    let (pa, pb) = unsafe { (rows_panel(blk, ld, n, it * TILE, c0, S::ROWS), rows_panel(d, ld, n, k * TILE, c0, S::COLS)) };
    // This block's slot of the carried accumulators: value e of thread tid at
    // `e THREADS + tid` (coalesced; every shape's THREADS threads hold ROWS x COLS
    // accumulators between them); both launches of a step have the same grid.
    let threads = S::THREADS as usize;
    let (tid, slot) = (thread_idx_x() as usize, block_idx_x() as usize * S::ROWS * S::COLS);
    let mut init = S::zero_acc();
    if a.carry == CARRY_IN {
        for (e, v) in init.as_mut().iter_mut().enumerate() {
            // SAFETY: this block's slot, written by the CARRY_OUT launch (contract).
            *v = unsafe { *a.scratch.add(slot + e * threads + tid) };
        }
    }
    let acc = unsafe { S::product_from(init, pa, pb, (to - from) * TILE, sh) };
    if a.carry == CARRY_OUT {
        for (e, &v) in acc.as_ref().iter().enumerate() {
            // SAFETY: as above; only this thread writes the entry.
            unsafe { *a.scratch.add(slot + e * threads + tid) = v };
        }
        return;
    }
    // The diagonal tiles are the top of the first output tile of D_i's band (its rows
    // and columns both start at k): keep its lower triangle.
    let diagonal = which == 0 && it == k;
    // SAFETY: rows from tile it, column tiles from k of the band, rows/cols clipped to n.
    let dst = unsafe { blk.add(k * TILE * ld + it * TILE) };
    unsafe { subtract_acc::<T, S>(&acc, dst, ld, true, |r, c| r < pa.rows && c < pb.rows && (!diagonal || r >= c)) };
}

/// The column update that step `k` of a panel of `nt` column tiles starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnUpdate {
    /// None (`k = 0`).
    None,
    /// Column `k` on `64 x 64` (or [`Tall`](super::Tall)) tiles, minus the finished
    /// columns from `from_col` (`TiledArgs::from_col`).
    Narrow {
        /// First finished column tile subtracted.
        from_col: usize,
    },
    /// Columns `k` and `k + 1` on [`Wide`] `128 x 128` tiles, minus the columns
    /// `0 .. k`; step `k + 1` then starts with `Narrow { from_col: k }`.
    Pair,
}

/// The column update of step `k` of a panel of `nt` column tiles. `first_pair`: the first
/// step at which the level takes [`Wide`] pairs of columns, if it does; pairs start at
/// the even steps from there that have a next column. A pair reads each finished column
/// once for two columns updated; the left-looking updates stream every finished column of
/// every panel from DRAM at each step where many nodes run (`docs/perf-notes.md`,
/// entry 46), but the pair's second column costs one more pass over the panel, so pairs
/// pay only once the finished columns outweigh it.
pub const fn column_update(k: usize, nt: usize, first_pair: Option<usize>) -> ColumnUpdate {
    // Whether step k lies in the paired range, and where that range starts.
    let (paired, first) = match first_pair {
        Some(first) if k >= first => (true, first),
        _ => (false, 0),
    };
    if k == 0 {
        ColumnUpdate::None
    } else if paired && (k - first).is_multiple_of(2) && k + 1 < nt {
        ColumnUpdate::Pair
    } else if paired && k > first && !(k - first).is_multiple_of(2) {
        ColumnUpdate::Narrow { from_col: k - 1 }
    } else {
        ColumnUpdate::Narrow { from_col: 0 }
    }
}

/// [`neighbours`]' `side` that does both sides in one launch (see there).
pub const BOTH_SIDES: u32 = 2;

/// The `side`s of a level's [`neighbours`] launches, in order: [`BOTH_SIDES`] alone, or
/// with `split` one launch per side (0, then 1).
pub const fn neighbour_sides(split: bool) -> &'static [u32] {
    if split { &[0, 1] } else { &[BOTH_SIDES] }
}

/// Blocks per node of a [`neighbours`] launch on output tiles of `edge` rows: the lower
/// tile pairs for `side` 0, those plus the `tiles^2` fill tiles for `side` 1 and
/// [`BOTH_SIDES`].
pub const fn neighbour_blocks(n: usize, edge: usize, side: u32) -> u32 {
    let t = n.div_ceil(edge);
    (t * (t + 1) / 2 + if side >= 1 { t * t } else { 0 }) as u32
}

/// After a level's panels are factored: `side` 0 subtracts `L_li L_li^T` from `D_l`
/// (lower tile pairs, `tiles (tiles + 1) / 2` per node); `side` 1 subtracts
/// `L_ri L_ri^T` from `D_r` and writes the fill of the next level (that plus
/// `tiles^2`): `left[r] = -L_li L_ri^T` (`A[l, r]`, panel orientation) when `r` is on the
/// next level, else `right[l] = -L_ri L_li^T`. Tiles here are the output tiles of the
/// product shape `S` (`64 x 64`, or `128 x 128` for [`Wide`]: `tiled_wide_neighbours_f64`);
/// a block computes the whole `K = n` sum of its tile ([`neighbour_blocks`] per node).
/// Within one launch every target block has one writer.
///
/// [`BOTH_SIDES`] does both in one launch, on `side` 1's grid: the block of a tile of
/// `D_r` (`r` this node's right neighbour) first subtracts `L_lc L_lc^T` of the level's
/// node `c = r + 2^level` beyond `r` (if it exists: the tile side 0 gave it), then this
/// node's `L_ri L_ri^T`. Every separator of the level is some node's right neighbour
/// (its left neighbour on the level always exists), so every tile gets both terms, in
/// the order of the two launches: the same bits. `D_r` is read and written once from
/// DRAM instead of once per side (the second pass reads what the block just wrote,
/// from L2), and the level has one launch fewer.
///
/// # Safety
/// As [`trsm`] with `S::THREADS` threads and `FLAG_BYTES + S::SHARED_BYTES` of shared
/// memory, after the level's last [`trsm`].
pub unsafe fn neighbours<T: Real, S: ProductShape<T>>(args: &TiledArgs<T>) {
    const { assert!(S::ROWS == S::COLS) };
    let a = *args;
    let (n, ld) = (a.n(), a.ld());
    let nt = n.div_ceil(S::ROWS);
    let pairs = nt * (nt + 1) / 2;
    let (nd, y) = a.node_and_tile(neighbour_blocks(n, S::ROWS, a.side) as usize);
    let (s, b) = (nd.s, nd.b);
    // (first source, source A, source B, target, row tile, col tile, subtract into the
    // lower triangle?); a first source (BOTH_SIDES) is subtracted before A B^T.
    let job = unsafe {
        if a.side == 0 || y < pairs {
            let (src, target) = if a.side == 0 { (a.left, nd.left) } else { (a.right, nd.right) };
            target.map(|t| {
                let (i, j) = lower_pair(y);
                // The level's node beyond t (0-based t + 2^level), if any: its left coupling.
                let beyond = t + (1usize << a.level);
                let first = (a.side == BOTH_SIDES && beyond < a.nblocks as usize).then(|| a.block(a.left, s, beyond));
                (first, a.block(src, s, b), a.block(src, s, b), a.block(a.diag, s, t), i, j, true)
            })
        } else {
            match (nd.l1, nd.r1) {
                (Some(l1), Some(r1)) => {
                    let e = y - pairs;
                    let (owner, is_left) = fill_slot(l1, r1, a.level);
                    let (lb, rb) = (a.block(a.left, s, b), a.block(a.right, s, b));
                    let (pa, pb, dst) = if is_left { (lb, rb, a.left) } else { (rb, lb, a.right) };
                    Some((None, pa, pb, a.block(dst, s, (owner - 1) as usize), e / nt, e % nt, false))
                }
                _ => None,
            }
        }
    };
    let Some((first, src_a, src_b, target, it, jt, subtract)) = job else { return };
    let (flag, sh) = shared_areas::<T>();
    if unsafe { a.failed(s, flag) } {
        return;
    }
    let edge = S::ROWS;
    // SAFETY (panels): row tiles it, jt of n x n blocks of system s, clipped to n.
    let panels = |x: *mut T, y: *mut T| unsafe { (rows_panel(x, ld, n, it * edge, 0, edge), rows_panel(y, ld, n, jt * edge, 0, edge)) };
    let (pa, pb) = panels(src_a, src_b);
    let diagonal = subtract && it == jt;
    let keep = |r: usize, c: usize| r < pa.rows && c < pb.rows && (!diagonal || r >= c);
    let dst = unsafe { target.add(jt * edge * ld + it * edge) };
    if let Some(f) = first {
        let (fa, fb) = panels(f, f);
        let acc = unsafe { S::product(fa, fb, n, sh) };
        unsafe { subtract_acc::<T, S>(&acc, dst, ld, true, keep) };
        // The next product refills `sh`. Each thread reads back only the entries it wrote.
        sync_threads();
    }
    let acc = unsafe { S::product(pa, pb, n, sh) };
    unsafe { subtract_acc::<T, S>(&acc, dst, ld, subtract, keep) };
}

#[cfg(test)]
mod tests {
    use super::{ColumnUpdate, column_update};
    use std::vec;

    /// Every column `c` of every panel gets the products of the finished columns `0 .. c`
    /// exactly once over the steps of [`column_update`], pairs or not; a pair never
    /// reaches past the last column; step 0 updates nothing.
    #[test]
    fn column_updates_subtract_every_finished_column_once() {
        for nt in 1..40 {
            for first_pair in [None, Some(1), Some(2), Some(3), Some(6)] {
                // subtracted[c][j]: how many times column j was subtracted from column c.
                let mut subtracted = vec![vec![0u32; nt]; nt];
                for k in 0..nt {
                    match column_update(k, nt, first_pair) {
                        ColumnUpdate::None => assert_eq!(k, 0, "nt {nt}, pairs {first_pair:?}"),
                        ColumnUpdate::Narrow { from_col } => {
                            assert!(from_col < k);
                            (from_col..k).for_each(|j| subtracted[k][j] += 1);
                        }
                        ColumnUpdate::Pair => {
                            assert!(first_pair.is_some() && k + 1 < nt, "nt {nt}, k {k}");
                            for c in [k, k + 1] {
                                (0..k).for_each(|j| subtracted[c][j] += 1);
                            }
                        }
                    }
                }
                for (c, row) in subtracted.iter().enumerate() {
                    for (j, &times) in row.iter().enumerate() {
                        assert_eq!(times, u32::from(j < c), "nt {nt}, pairs {first_pair:?}: column {c} from {j}");
                    }
                }
            }
        }
    }
}
