//! Solve kernels of the tiled engine. Per level, forward (levels upward):
//! [`forward_node`] (`y_i = L_ii^-1 b_i`, one block per node walking its diagonal tiles
//! with their inverses), then [`forward_couple`] (`b_l -= L_li y_i`, `b_r -= L_ri y_i`,
//! both sides in one launch, each target tile in one block; no atomics). Backward (levels
//! downward): [`backward_couple`] (`z_i = y_i - L_li^T x_l - L_ri^T x_r`), then
//! [`backward_node`] (`x_i = L_ii^-T z_i`).
//!
//! The node walks stream the node's tiles through a ring of shared-memory stages.
//! [`forward_diag`] / [`backward_diag`] are the same diagonal solves split into one launch
//! per tile step with one block per tile of the node: a launch per tile, but the reads of
//! `L_ii` spread over more SMs. [`walks_nodes`] picks per level (`docs/perf-notes.md`,
//! entries 21 and 47). [`forward_split`] / [`backward_split`] split each node's walk over
//! one block per tile row in one launch, the rows ordered by completion flags; they run
//! where [`splits_walks`] says (the top levels, entry 87) and give the walks' bits.
//!
//! Right-hand sides are processed `chunk` columns per pass (at most [`MAX_CHUNK`], held in
//! registers by the coupling kernels). The factor is read from global memory (it is
//! touched once per solve).

use super::rem_div;
use super::{TILE, TiledArgs, tile_rows, tiles};
use crate::layout::{levels, nodes_in_level};
use crate::level::dataflow::{publish, take_ticket, wait_for};
use crate::level::{InfoCode, info_key};
use blocktri_prims::index::opaque_u32;
use blocktri_prims::memory::{copy_async_commit, copy_async_wait, load_coherent};
use blocktri_prims::{Real, atomic, block_dim_x, shared, sync_threads, thread_idx_x};

/// Right-hand-side columns per pass, at most.
pub const MAX_CHUNK: usize = 8;
/// Threads of every solve kernel.
pub const SOLVE_THREADS: u32 = 256;
pub(super) const THREADS: usize = SOLVE_THREADS as usize;
const WARPS: usize = THREADS / 32;
/// Leading dimension of the diagonal-tile inverse in shared memory (odd: transposed reads
/// are conflict-free).
const LDW: usize = TILE + 1;

/// Shared memory of [`forward_diag`] / [`backward_diag`]: a diagonal-tile inverse and a
/// tile of `L_ii` (leading dimension `LDW`), a right-hand-side tile and a temporary
/// ([`MAX_CHUNK`] columns each).
pub const fn diag_solve_shared_bytes(elem_bytes: usize) -> usize {
    (2 * TILE * LDW + 2 * TILE * MAX_CHUNK) * elem_bytes
}

/// Most threads of [`forward_couple`] (see [`couple_threads`]).
pub const COUPLE_THREADS: u32 = 512;
const COUPLE_GROUPS: usize = COUPLE_THREADS as usize / TILE;

/// Threads of a [`forward_couple`] launch of `blocks` blocks on a device with
/// `multiprocessors` SMs. Each of a tile's 64 rows is split over `threads / 64` threads:
/// with at most one block per SM (the top levels) [`COUPLE_THREADS`], so that a block
/// waits for few load passes (`n / 8` terms per thread, `IN_FLIGHT` per pass); below,
/// [`SOLVE_THREADS`], which lets three blocks share an SM (measured on the H100:
/// 512 threads everywhere took the top-level launches at n = 1024 from 77 to 52 µs but
/// level 0 from 540 to 929 µs, one 512-thread block per SM by registers).
pub const fn couple_threads(blocks: u32, multiprocessors: u32) -> u32 {
    if blocks <= multiprocessors { COUPLE_THREADS } else { SOLVE_THREADS }
}

/// Blocks of [`backward_couple`] per tile of a node: one row per warp, so that a warp
/// waits for one row's loads, not for eight rows' one after the other.
pub const BACKWARD_ROW_GROUPS: u32 = (TILE / WARPS) as u32;

/// Shared memory of [`forward_couple`] (room for the partial sums of both sides' terms).
pub const fn couple_shared_bytes(elem_bytes: usize) -> usize {
    2 * COUPLE_GROUPS * TILE * MAX_CHUNK * elem_bytes
}

/// [`forward_couple`]'s `side` that does both sides in one launch (see there).
pub const BOTH_SIDES: u32 = 2;

/// The `side`s of a level's [`forward_couple`] launches, in order: [`BOTH_SIDES`] alone,
/// or with `split` one launch per side (0, then 1).
pub const fn couple_sides(split: bool) -> &'static [u32] {
    if split { &[0, 1] } else { &[BOTH_SIDES] }
}

/// The right-hand sides of system `s`: `(first row of block 0, rows per column)`.
#[inline(always)]
pub(super) unsafe fn system_rhs<T: Real>(a: &TiledArgs<T>, s: usize) -> (*mut T, usize) {
    let ldb = a.nblocks as usize * a.n();
    // SAFETY: system s of the right-hand sides (caller's contract).
    (unsafe { a.rhs.add(s * ldb * a.nrhs as usize) }, ldb)
}

/// Sum over a warp (butterfly: every lane gets the total).
#[inline(always)]
fn warp_total<T: Real>(v: T) -> T {
    let mut v = v;
    let mut m = 16;
    while m > 0 {
        v += v.shfl_xor(m);
        m /= 2;
    }
    v
}

/// Terms of a strided dot product whose loads one thread issues before their
/// multiply-adds. The top levels' solve launches have a block or two per node, so a
/// thread that waits for each load before the next spends the whole launch on memory
/// latency (`docs/perf-notes.md`, entry 16).
const IN_FLIGHT: usize = 8;

/// One thread's share of strided dot products: adds `m[p ms] * x[p + c ldx]` for
/// `p = from, from + step, .. < n` to `acc[c]`, `c < kc`, [`IN_FLIGHT`] terms per pass
/// (the terms past `n` of the last pass are predicated off).
///
/// # Safety
/// `m` holds `n` values at stride `ms`, `x` `kc` columns of `n` at `ldx`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // a strided dot with its shapes
unsafe fn strided_dot<T: Real>(
    m: *const T,
    ms: usize,
    x: *const T,
    ldx: usize,
    from: usize,
    step: usize,
    n: usize,
    kc: usize,
    acc: &mut [T; MAX_CHUNK],
) {
    let mut p = from;
    while p < n {
        let mut mv = [T::ZERO; IN_FLIGHT];
        for (u, v) in mv.iter_mut().enumerate() {
            let q = p + u * step;
            if q < n {
                // SAFETY: q < n (caller's contract).
                *v = unsafe { *m.add(q * ms) };
            }
        }
        for (c, acc_c) in acc.iter_mut().enumerate() {
            if c < kc {
                let mut xv = [T::ZERO; IN_FLIGHT];
                for (u, v) in xv.iter_mut().enumerate() {
                    let q = p + u * step;
                    if q < n {
                        *v = unsafe { *x.add(c * ldx + q) };
                    }
                }
                for u in 0..IN_FLIGHT {
                    *acc_c = mv[u].mul_add(xv[u], *acc_c);
                }
            }
        }
        p += IN_FLIGHT * step;
    }
}

/// Sums each `acc[c]` over the warp and lets lane 0 subtract it from `dst[c ldd]`.
///
/// # Safety
/// `dst` holds `kc` values at stride `ldd`; every lane of the warp calls it.
#[inline(always)]
unsafe fn subtract_warp_totals<T: Real>(acc: &[T; MAX_CHUNK], kc: usize, dst: *mut T, ldd: usize) {
    for c in 0..MAX_CHUNK {
        if c < kc {
            let total = warp_total(acc[c]);
            if thread_idx_x().is_multiple_of(32) {
                unsafe { *dst.add(c * ldd) -= total };
            }
        }
    }
}

/// `zt = W zt` (or `W^T zt` when `transposed`) for the `w x kc` tile `zt` (leading
/// dimension `ldz`) with the lower-triangular inverse `W` in `ws` (leading dimension
/// [`LDW`]), through `tmp`. Returns whether every value this thread wrote is finite.
/// Ends with a barrier.
///
/// # Safety
/// Shared areas as sized by [`diag_solve_shared_bytes`]; every thread calls it.
#[inline(always)]
unsafe fn apply_inverse<T: Real>(ws: *const T, zt: *mut T, ldz: usize, tmp: *mut T, w: usize, kc: usize, transposed: bool) -> bool {
    let tid = thread_idx_x() as usize;
    let mut e = tid;
    while e < w * kc {
        let (r, c) = rem_div(e, w);
        let mut acc = T::ZERO;
        // W[r][p] for p <= r, or W^T[r][p] = W[p][r] for p >= r.
        let (from, to) = if transposed { (r, w) } else { (0, r + 1) };
        for p in from..to {
            let wv = unsafe { if transposed { *ws.add(r * LDW + p) } else { *ws.add(p * LDW + r) } };
            acc = wv.mul_add(unsafe { *zt.add(c * ldz + p) }, acc);
        }
        unsafe { *tmp.add(c * TILE + r) = acc };
        e += THREADS;
    }
    sync_threads();
    let mut finite = true;
    let mut e = tid;
    while e < w * kc {
        let (r, c) = rem_div(e, w);
        let v = unsafe { *tmp.add(c * TILE + r) };
        finite &= v.is_finite();
        unsafe { *zt.add(c * ldz + r) = v };
        e += THREADS;
    }
    sync_threads();
    finite
}

/// Shared areas of the diagonal kernels: the inverse tile, the `L` tile, the right-hand-side
/// tile, a temporary.
#[inline(always)]
unsafe fn diag_areas<T: Real>() -> (*mut T, *mut T, *mut T, *mut T) {
    let ws = shared::dynamic_shared::<T>();
    // SAFETY: sized by diag_solve_shared_bytes.
    unsafe { (ws, ws.add(TILE * LDW), ws.add(2 * TILE * LDW), ws.add(2 * TILE * LDW + TILE * MAX_CHUNK)) }
}

/// Tile elements per thread, at most (a `64 x 64` tile over [`SOLVE_THREADS`]).
const TILE_SHARE: usize = TILE / COLS_PER_SLOT;

/// Columns of a tile that the block covers per slot of a share.
const COLS_PER_SLOT: usize = THREADS / TILE;

/// The tile element of this thread's slot `i`: row `tid % TILE`, column
/// `tid / TILE + i COLS_PER_SLOT` (consecutive threads on consecutive rows; no division,
/// whose zero-divisor check would put a branch between the slots' loads).
#[inline(always)]
fn slot_rc(i: usize) -> (usize, usize) {
    let tid = thread_idx_x() as usize;
    (tid % TILE, tid / TILE + i * COLS_PER_SLOT)
}

/// This thread's share of the column-major `rows x cols` tile at `src` (leading dimension
/// `lds`), slot `i` holding element [`slot_rc`]`(i)`: every load is issued before any is
/// used, so the tile costs one memory round trip instead of one per element.
///
/// # Safety
/// The tile is readable; `rows, cols <= TILE`.
#[inline(always)]
unsafe fn fetch_tile<T: Real>(src: *const T, lds: usize, rows: usize, cols: usize) -> [T; TILE_SHARE] {
    core::array::from_fn(|i| {
        let (r, c) = slot_rc(i);
        // SAFETY: r < rows, c < cols: inside the tile.
        if r < rows && c < cols { unsafe { *src.add(c * lds + r) } } else { T::ZERO }
    })
}

/// Stores a [`fetch_tile`] share into `dst` (leading dimension `ldd`; no barrier).
///
/// # Safety
/// `dst` holds the `rows x cols` tile; the share was fetched with the same shape.
#[inline(always)]
unsafe fn store_tile<T: Real>(v: &[T; TILE_SHARE], dst: *mut T, ldd: usize, rows: usize, cols: usize) {
    for (i, &value) in v.iter().enumerate() {
        let (r, c) = slot_rc(i);
        if r < rows && c < cols {
            // SAFETY: inside the destination tile.
            unsafe { *dst.add(c * ldd + r) = value };
        }
    }
}

/// Copies the column-major `rows x cols` tile at `src` (leading dimension `lds`) to `dst`
/// (leading dimension `ldd`) through a [`fetch_tile`] share: all of a thread's loads
/// before its stores. No barrier.
///
/// # Safety
/// Both tiles hold `rows x cols` (`rows, cols <= TILE`); no other thread of the block
/// writes `src` or touches this thread's entries of `dst` meanwhile.
#[inline(always)]
unsafe fn copy_tile<T: Real>(src: *const T, lds: usize, dst: *mut T, ldd: usize, rows: usize, cols: usize) {
    unsafe {
        let v = fetch_tile(src, lds, rows, cols);
        store_tile(&v, dst, ldd, rows, cols);
    }
}

/// Copies `kc` columns of `rows` rows between the right-hand sides (`g`, leading dimension
/// `ldb`) and the shared tile `z` (leading dimension `rows`); `to_shared` picks the
/// direction. Ends with a barrier.
///
/// The same copy as the node walks' `move_node_rhs` with `np = n = rows`, kept apart:
/// through `move_node_rhs` (a run-time division per element, eight loads at a time) the
/// per-step kernels took 89-92 registers instead of 128, but the solves that use them
/// were 0.4-1.6 % slower on the H100 (`docs/bench/move-rhs-h100/`).
#[inline(always)]
unsafe fn move_rhs<T: Real>(g: *mut T, ldb: usize, z: *mut T, rows: usize, kc: usize, to_shared: bool) {
    // SAFETY: rows <= TILE and kc <= MAX_CHUNK <= TILE.
    unsafe {
        if to_shared {
            copy_tile(g, ldb, z, rows, rows, kc);
        } else {
            copy_tile(z, rows, g, ldb, rows, kc);
        }
    }
    sync_threads();
}

/// Loads `rows x cols` of the column-major `src` (leading dimension `lds`) into `dst`
/// (leading dimension `LDW`). Ends with a barrier.
#[inline(always)]
unsafe fn load_tile<T: Real>(src: *const T, lds: usize, dst: *mut T, rows: usize, cols: usize) {
    // SAFETY: rows, cols <= TILE (caller's contract).
    unsafe { copy_tile(src, lds, dst, LDW, rows, cols) };
    sync_threads();
}

/// The node's solution of diagonal tile `t`, in place in the right-hand sides:
/// `W_t z_t` (forward) or `W_t^T z_t` (`transposed`, backward), `W_t = dinv[b][t]`.
/// Returns whether every value written is finite.
///
/// # Safety
/// As the diagonal kernels; `z_t` is final and no other block of the launch touches it.
#[inline(always)]
unsafe fn finish_tile<T: Real>(a: &TiledArgs<T>, nd: super::Node, t: usize, transposed: bool) -> bool {
    let (n, k, chunk) = (a.n(), a.nrhs as usize, a.chunk as usize);
    let (ws, _, zs, tmp) = unsafe { diag_areas::<T>() };
    let (bsys, ldb) = unsafe { system_rhs(a, nd.s) };
    let w = tile_rows(n, t);
    unsafe { load_tile(a.dinv_tile(nd.s, nd.b, t), TILE, ws, w, w) };
    let mut finite = true;
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        // SAFETY: rows b n + t TILE .. + w of columns c0 .. c0 + kc of system s.
        let g = unsafe { bsys.add(c0 * ldb + nd.b * n + t * TILE) };
        unsafe { move_rhs(g, ldb, zs, w, kc, true) };
        finite &= unsafe { apply_inverse(ws, zs, w, tmp, w, kc, transposed) };
        unsafe { move_rhs(g, ldb, zs, w, kc, false) };
        c0 += kc;
    }
    finite
}

/// `dst -= M x` for the `h x kc` right-hand-side rows `dst` (global, leading dimension
/// `ldb`), `M` the `h x w` tile in `ms` (leading dimension [`LDW`]; `transposed`: `M` is
/// stored as its `w x h` transpose) and `x` the `w x kc` tile in shared memory (leading
/// dimension `w`). Ends with a barrier.
///
/// # Safety
/// Shared areas as [`diag_areas`]; `dst` is written by this block only.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // a small gemv with its shapes
unsafe fn subtract_product<T: Real>(ms: *const T, transposed: bool, x: *const T, h: usize, w: usize, kc: usize, dst: *mut T, ldb: usize) {
    let mut e = thread_idx_x() as usize;
    while e < h * kc {
        let (r, c) = rem_div(e, h);
        let mut acc = T::ZERO;
        for p in 0..w {
            // SAFETY: r < h, p < w: inside the shared tiles.
            let m = unsafe { if transposed { *ms.add(r * LDW + p) } else { *ms.add(p * LDW + r) } };
            acc = m.mul_add(unsafe { *x.add(c * w + p) }, acc);
        }
        unsafe { *dst.add(c * ldb + r) -= acc };
        e += THREADS;
    }
    sync_threads();
}

/// A non-zero block of a diagonal solve step: `x_t = W_t z_t` (forward) or `W_t^T z_t`
/// (`transposed`, backward) from the node's right-hand sides into shared memory, then
/// row tile `dst` subtracts `L[dst, t] x_t` (forward, `dst > t`) or `L[t, dst]^T x_t`
/// (backward, `dst < t`). `z_t` is only read; `dst` is written by this block only.
///
/// # Safety
/// As the diagonal kernels; `t`, `dst < tiles(n)`, `z_t` final.
#[inline(always)]
unsafe fn eliminate_tile<T: Real>(a: &TiledArgs<T>, nd: super::Node, t: usize, dst: usize, transposed: bool) {
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let (ws, ls, zs, tmp) = unsafe { diag_areas::<T>() };
    let (bsys, ldb) = unsafe { system_rhs(a, nd.s) };
    let (w, h) = (tile_rows(n, t), tile_rows(n, dst));
    // SAFETY: tiles of block b; rows of system s.
    // One tile's loads in flight at a time (both at once need ~150 registers: one block
    // per multiprocessor at the lower levels), one barrier for both.
    unsafe {
        let l = a.block(a.diag, nd.s, nd.b) as *const T;
        copy_tile(a.dinv_tile(nd.s, nd.b, t), TILE, ws, LDW, w, w);
        // L[t, dst] (w rows of tile t by h columns of tile dst) or L[dst, t] (h by w).
        let (src, rows, cols) =
            if transposed { (l.add(dst * TILE * ld + t * TILE), w, h) } else { (l.add(t * TILE * ld + dst * TILE), h, w) };
        copy_tile(src, ld, ls, LDW, rows, cols);
    }
    sync_threads();
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        unsafe {
            let g = bsys.add(c0 * ldb + nd.b * n);
            move_rhs(g.add(t * TILE), ldb, zs, w, kc, true);
            apply_inverse(ws, zs, w, tmp, w, kc, transposed);
            subtract_product(ls, transposed, zs, h, w, kc, g.add(dst * TILE), ldb);
        }
        c0 += kc;
    }
}

/// Step `t` (= `args.step`) of `y_i = L_ii^-1 b_i` for every node of the level, in place:
/// grid `x` = `systems * nodes * (tiles - t)`, tiles fastest. Block 0 of a node writes
/// `y_{t-1} = W_{t-1} z_{t-1}` (and at the last step `y_t`), which no other block of this
/// launch reads; block `j >= 1` computes `y_t = W_t z_t` itself and subtracts
/// `L[t + j, t] y_t` from row tile `t + j`. Launch `t = 0, 1, ..` in order.
///
/// # Safety
/// [`SOLVE_THREADS`] threads, [`diag_solve_shared_bytes`]; the factor is complete, the
/// lower levels' forward kernels and this level's earlier steps have completed.
pub unsafe fn forward_diag<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (t, nt) = (a.step as usize, tiles(a.n()));
    let (nd, j) = a.node_and_tile(nt - t);
    if j == 0 {
        if t >= 1 {
            unsafe { finish_tile(&a, nd, t - 1, false) };
        }
        if t + 1 == nt {
            unsafe { finish_tile(&a, nd, t, false) };
        }
        return;
    }
    // SAFETY: t < t + j < tiles(n).
    unsafe { eliminate_tile(&a, nd, t, t + j, false) };
}

/// `b_nbr -= L_{nbr,i} y_i` for the neighbour on `side` (0 left, 1 right) of every node:
/// grid `x` = `systems * nodes * tiles`, one block per row tile of the neighbour's. Each
/// block: 64 rows, the sum over `L`'s columns split into `COUPLE_GROUPS` partial sums (one
/// per thread group, or several), reduced in shared memory in a fixed order.
///
/// `side` [`BOTH_SIDES`] does both in one launch, on `side` 1's grid, as the factor's
/// neighbour products do: the block of a row tile of `b_r` (`r` this node's right
/// neighbour) subtracts the term of the level's node `c = r + 2^level` beyond `r` (if it
/// exists: its left neighbour is `r`), then this node's. Every separator is some node's
/// right neighbour, so every target gets both terms, in the order of the two launches:
/// the same bits, one launch and one pass over `b_r` less per level.
///
/// # Safety
/// A multiple of 64 threads, at most [`COUPLE_THREADS`]; [`couple_shared_bytes`]; after
/// the diagonal solves of the level.
pub unsafe fn forward_couple<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (nd, tile) = a.node_and_tile(tiles(a.n()));
    let target = if a.side == 0 { nd.left } else { nd.right };
    let Some(target) = target else { return };
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let tid = thread_idx_x() as usize;
    let (rl, grp) = (tid % TILE, tid / TILE);
    let groups = block_dim_x() as usize / TILE;
    let r0 = tile * TILE;
    let h = TILE.min(n - r0);
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    // The terms in the order they are subtracted: (L_{target,j}, block j).
    let own = (if a.side == 0 { a.left } else { a.right }, nd.b);
    let beyond = target + (1usize << a.level);
    let (first, terms) = match a.side == BOTH_SIDES && beyond < a.nblocks as usize {
        true => ((a.left, beyond), 2),
        false => (own, 1),
    };
    let term = |q: usize| {
        let (slot, j) = if q + 1 < terms { first } else { own };
        // SAFETY: block j of system s, a node of this level.
        (unsafe { a.block(slot, nd.s, j) } as *const T, j)
    };
    let red = shared::dynamic_shared::<T>();
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        let dst = unsafe { bsys.add(c0 * ldb + target * n + r0) };
        // Always COUPLE_GROUPS partial sums per term (a group of threads takes several when
        // the block is narrower), added in a fixed order: the result's bits do not depend
        // on the launch width, which the host picks from the batch size (a chunked batch
        // gives the same bits as the whole).
        let mut part = grp;
        while part < terms * COUPLE_GROUPS {
            let (lmat, j) = term(part / COUPLE_GROUPS);
            let mut acc = [T::ZERO; MAX_CHUNK];
            if rl < h {
                // Row r0 + rl of L_{target,j} (stride ld), against y_j.
                let y = unsafe { bsys.add(c0 * ldb + j * n) };
                unsafe { strided_dot(lmat.add(r0 + rl), ld, y, ldb, part % COUPLE_GROUPS, COUPLE_GROUPS, n, kc, &mut acc) };
            }
            for c in 0..MAX_CHUNK {
                unsafe { *red.add((part * TILE + rl) * MAX_CHUNK + c) = acc[c] };
            }
            part += groups;
        }
        sync_threads();
        if grp == 0 && rl < h {
            for c in 0..kc {
                let mut value = unsafe { *dst.add(c * ldb + rl) };
                for q in 0..terms {
                    let mut total = T::ZERO;
                    for g in 0..COUPLE_GROUPS {
                        total += unsafe { *red.add(((q * COUPLE_GROUPS + g) * TILE + rl) * MAX_CHUNK + c) };
                    }
                    value -= total;
                }
                unsafe { *dst.add(c * ldb + rl) = value };
            }
        }
        sync_threads();
        c0 += kc;
    }
}

/// `z_i = y_i - L_li^T x_l - L_ri^T x_r` for every node, in place (grid `x` =
/// `systems * nodes * tiles * BACKWARD_ROW_GROUPS`: the row tiles of `z_i`, each in groups
/// of 8 rows, fastest); `x_l`, `x_r` are final (higher levels). A warp per output row,
/// lanes along the (contiguous) column of `L`, a butterfly sum.
///
/// # Safety
/// [`SOLVE_THREADS`] threads, no shared memory; after the higher levels' backward kernels.
pub unsafe fn backward_couple<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (nd, part) = a.node_and_tile(tiles(a.n()) * BACKWARD_ROW_GROUPS as usize);
    let (tile, group) = (part / BACKWARD_ROW_GROUPS as usize, part % BACKWARD_ROW_GROUPS as usize);
    if nd.left.is_none() && nd.right.is_none() {
        return;
    }
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let r0 = tile * TILE;
    let h = TILE.min(n - r0);
    // This warp's row of the tile.
    let r = group * WARPS + warp;
    if r >= h {
        return;
    }
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        let mut acc = [T::ZERO; MAX_CHUNK];
        // Column r0 + r of L_{j,i}, against x_j. Two calls, not a loop over an array of
        // both sides: that array lived on the stack (64 bytes, `ptxas -v`).
        let mut add = |nbr: Option<usize>, base: *mut T| {
            if let Some(j) = nbr {
                let (lcol, x) = unsafe { (a.block(base, nd.s, nd.b).add((r0 + r) * ld) as *const T, bsys.add(c0 * ldb + j * n)) };
                unsafe { strided_dot(lcol, 1, x, ldb, lane, 32, n, kc, &mut acc) };
            }
        };
        add(nd.left, a.left);
        add(nd.right, a.right);
        unsafe { subtract_warp_totals(&acc, kc, bsys.add(c0 * ldb + nd.b * n + r0 + r), ldb) };
        c0 += kc;
    }
}

/// Step `t` (= `args.step`) of `x_i = L_ii^-T z_i` for every node, in place: grid `x` =
/// `systems * nodes * (t + 1)`, tiles fastest. Block 0 of a node writes
/// `x_{t+1} = W_{t+1}^T z_{t+1}` (and at step 0 `x_0`), block `j >= 1` computes
/// `x_t = W_t^T z_t` itself and subtracts `L[t, j - 1]^T x_t` from row tile `j - 1`.
/// Launch `t = tiles - 1, .., 0` in order. Records `info_key(level, NonFiniteSolution, b)`
/// in `info` when a value of `x_i` is not finite.
///
/// # Safety
/// As [`forward_diag`], after [`backward_couple`] of the level and this level's earlier
/// steps.
pub unsafe fn backward_diag<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (t, nt) = (a.step as usize, tiles(a.n()));
    let (nd, j) = a.node_and_tile(t + 1);
    if j == 0 {
        let mut finite = true;
        if t + 1 < nt {
            finite &= unsafe { finish_tile(&a, nd, t + 1, true) };
        }
        if t == 0 {
            finite &= unsafe { finish_tile(&a, nd, 0, true) };
        }
        if !finite {
            unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
        }
        return;
    }
    // SAFETY: j - 1 < t < tiles(n).
    unsafe { eliminate_tile(&a, nd, t, j - 1, true) };
}

/// Stages of a node walk's ring of streamed tiles: one tile in use while the next
/// `WALK_STAGES - 1` are on their way. Four were no faster than two (one SM's reads are
/// what bounds a walk, entry 47), and two let two walks share an SM.
pub const WALK_STAGES: usize = 2;
/// Leading dimension of a staged tile in a node walk: `TILE + 8` keeps both of the walks'
/// reads conflict-free (a half-warp of `f64` lanes, or a warp of `f32` ones, reading down a
/// column, or eight consecutive entries of four consecutive columns) and every column
/// 16-byte aligned for the asynchronous copies.
pub(super) const WALK_LD: usize = TILE + 8;
/// Row groups of the forward walk: thread `tid` sums row `tid % 64` over the tile's
/// columns `16 (tid / 64) ..` (a warp reads 32 consecutive rows of a column).
const WALK_GROUPS: usize = THREADS / TILE;
/// Lanes per output column of the backward walk, along the tile's (contiguous) column.
const WALK_LANES: usize = 8;
/// Output entries per thread of the backward walk (rows `tid / 8` and `tid / 8 + 32`).
pub(super) const WALK_ROWS: usize = TILE * WALK_LANES / THREADS;

/// Shared memory of [`forward_node`] / [`backward_node`] for block size `n` and `chunk`
/// right-hand-side columns per pass: the flag words, the ring of [`WALK_STAGES`] staged
/// tiles, the node's right-hand-side rows (`chunk` columns of `tiles(n) 64`), and the
/// forward walk's partial sums.
pub const fn node_walk_shared_bytes(n: usize, chunk: usize, elem_bytes: usize) -> usize {
    walk_shared_bytes(WALK_STAGES, n, chunk, elem_bytes)
}

/// Shared memory of a walk that stages `stages` tiles: the flag words, the staged tiles,
/// the node's right-hand-side rows and the forward walk's partial sums.
const fn walk_shared_bytes(stages: usize, n: usize, chunk: usize, elem_bytes: usize) -> usize {
    super::factor::FLAG_BYTES + (stages * TILE * WALK_LD + (tiles(n) * TILE + WALK_GROUPS * TILE) * chunk) * elem_bytes
}

/// Right-hand-side columns per pass of a node walk: the most, up to `chunk`, whose
/// [`node_walk_shared_bytes`] fit in `smem`; 0 when not even one does (the diagonal
/// solves then go one launch per tile step).
pub const fn node_walk_chunk(n: usize, chunk: usize, elem_bytes: usize, smem: usize) -> usize {
    walk_chunk(WALK_STAGES, n, chunk, elem_bytes, smem)
}

/// The most columns, up to `chunk` and [`MAX_CHUNK`], whose [`walk_shared_bytes`] fit in
/// `smem`.
const fn walk_chunk(stages: usize, n: usize, chunk: usize, elem_bytes: usize, smem: usize) -> usize {
    let mut c = if chunk < MAX_CHUNK { chunk } else { MAX_CHUNK };
    while c > 0 && walk_shared_bytes(stages, n, c, elem_bytes) > smem {
        c -= 1;
    }
    c
}

/// Shared memory of [`forward_split`] / [`backward_split`]: as a node walk's, with room
/// for all `tiles(n)` tiles of a tile row (or column) staged at once.
pub const fn split_walk_shared_bytes(n: usize, chunk: usize, elem_bytes: usize) -> usize {
    walk_shared_bytes(tiles(n), n, chunk, elem_bytes)
}

/// Right-hand-side columns per pass of the split walks: the most, up to `chunk`, whose
/// [`split_walk_shared_bytes`] fit in `smem`; 0 when not even one does (the level then
/// runs the node walks or the per-step launches).
pub const fn split_walk_chunk(n: usize, chunk: usize, elem_bytes: usize, smem: usize) -> usize {
    walk_chunk(tiles(n), n, chunk, elem_bytes, smem)
}

/// Whether the diagonal solves of a level of `level_nodes` nodes (all systems) split each
/// node's walk over one block per tile row ([`forward_split`], [`backward_split`]), on a
/// device with `multiprocessors` SMs, where the split fits in shared memory
/// ([`split_walk_chunk`]): for nodes of two to [`SPLIT_MAX_TILES`] tiles on levels whose
/// blocks, one per tile row, all have an SM of their own. There a node walk reads its tiles one after
/// the other from one SM (~20 GB/s, `walks_nodes`), while the split blocks load theirs
/// all at once and wait only for the solutions of the tiles before theirs.
pub const fn splits_walks(n: usize, level_nodes: u32, multiprocessors: u32) -> bool {
    let nt = tiles(n);
    nt >= 2 && nt <= SPLIT_MAX_TILES && level_nodes as usize * nt <= multiprocessors as usize
}

/// Most tiles per block for which the diagonal solves split the walks: each tile row
/// waits for the one before it through global memory (~4-5 µs per tile row on the H200,
/// `docs/perf-notes.md` entry 87), so at 8 tiles (f32, n = 512) the chain cost more than
/// the per-step launches it replaced.
pub const SPLIT_MAX_TILES: usize = 4;

/// Flag words of one sweep of split walks over every level of `systems` systems of
/// `nblocks` blocks of size `n`: per level a ticket counter, then one completion flag per
/// tile row of each node ([`split_flag_offset`]).
pub const fn split_flag_words(systems: usize, nblocks: usize, n: usize) -> usize {
    levels(nblocks as u32) as usize + systems * nblocks * tiles(n)
}

/// The first flag word of `level` within a sweep's [`split_flag_words`]: the levels below
/// it come first, each `1 + systems * nodes * tiles(n)` words.
pub const fn split_flag_offset(systems: usize, nblocks: usize, n: usize, level: u32) -> usize {
    let mut offset = 0;
    let mut m = 0;
    while m < level {
        offset += 1 + systems * nodes_in_level(nblocks as u32, m) as usize * tiles(n);
        m += 1;
    }
    offset
}

/// Most tiles per block for which the diagonal solves walk the nodes on every level.
pub const NODE_WALK_TILES: usize = 4;

/// Whether the diagonal solves of a level with `level_nodes` nodes (all systems) take one
/// block per node walking its tiles ([`forward_node`], [`backward_node`]) rather than one
/// launch per tile step ([`forward_diag`], [`backward_diag`]), on a device with
/// `multiprocessors` SMs, where the walk fits in shared memory ([`node_walk_chunk`]).
/// Measured on the H100 (entries 21 and 47): one SM reads a node's tiles at ~20 GB/s
/// (~1.6 µs per `64 x 64` tile, with two or four tiles in flight), so beyond a few tiles a
/// walk is slower than the launches per tile step, which spread the reads over many
/// SMs: under graph replay the walk lost from 8 tiles (n = 512: solve 3.06 -> 3.32 ms),
/// although event-timed launch by launch it won there. It pays up to 4 tiles, and on the
/// levels whose nodes already occupy about every other SM.
pub const fn walks_nodes(n: usize, level_nodes: u32, multiprocessors: u32) -> bool {
    tiles(n) <= NODE_WALK_TILES || 2 * level_nodes >= multiprocessors
}

/// The ring of a node walk: tile `q` of the walk's sequence goes to stage
/// `q % WALK_STAGES`, `WALK_STAGES - 1` tiles ahead of the one in use.
pub(super) struct TileRing<T, F> {
    stages: *mut T,
    /// Tile `q` of the sequence: the panel and its valid columns.
    source: F,
    len: usize,
    next: usize,
}

impl<T: Real, F: Fn(usize) -> (super::product::Panel<T>, usize)> TileRing<T, F> {
    /// Starts the copies of the first tiles.
    ///
    /// # Safety
    /// `stages` holds [`WALK_STAGES`] tiles of `TILE x WALK_LD` in shared memory that no
    /// one else uses; every tile of `source` is readable and 16-byte aligned per column;
    /// every thread of the block calls it, then [`Self::next`] the same number of times.
    #[inline(always)]
    pub(super) unsafe fn start(stages: *mut T, len: usize, source: F) -> Self {
        let ring = Self { stages, source, len, next: 0 };
        for q in 0..WALK_STAGES - 1 {
            unsafe { ring.issue(q) };
        }
        ring
    }

    #[inline(always)]
    unsafe fn issue(&self, q: usize) {
        if q < self.len {
            let (panel, cols) = (self.source)(q);
            // SAFETY: the stage lies inside the ring; the contract of `start`.
            unsafe {
                super::product::issue_tile::<T, THREADS>(
                    self.stages.add((q % WALK_STAGES) * TILE * WALK_LD),
                    WALK_LD,
                    &panel,
                    cols,
                    thread_idx_x() as usize,
                )
            };
        }
        // One group per tile, empty past the end, so that the wait count holds.
        copy_async_commit();
    }

    /// The next tile of the sequence, staged and published to the block (ends with a
    /// barrier, behind which the stage of the tile before it is refilled).
    ///
    /// # Safety
    /// As [`Self::start`]; every thread calls it.
    #[inline(always)]
    pub(super) unsafe fn next(&mut self) -> *const T {
        copy_async_wait::<{ WALK_STAGES as u32 - 2 }>();
        sync_threads();
        let q = self.next;
        unsafe { self.issue(q + WALK_STAGES - 1) };
        self.next += 1;
        unsafe { self.stages.add((q % WALK_STAGES) * TILE * WALK_LD) }
    }

    /// Waits for the (empty) groups still pending at the end of the sequence.
    #[inline(always)]
    pub(super) fn finish(&self) {
        copy_async_wait::<0>();
    }
}

/// Copies the node's right-hand-side rows (columns `0..kc` at `g`, leading dimension
/// `ldb`) into `ys` (`np` rows per column, zero from row `n`) or back. Ends with a barrier.
///
/// # Safety
/// `g` holds `n` rows of `kc` columns; `ys` `np >= n` rows of `kc` columns in shared
/// memory; every thread calls it.
#[inline(always)]
pub(super) unsafe fn move_node_rhs<T: Real>(g: *mut T, ldb: usize, ys: *mut T, n: usize, np: usize, kc: usize, to_shared: bool) {
    // Eight values per thread in flight at a time (`batched`).
    let rows = if to_shared { np } else { n };
    super::batched::<T, 8>(
        rows * kc,
        THREADS,
        |e| {
            let (r, c) = rem_div(e, rows);
            // SAFETY: r < n rows of column c < kc of the node, or inside ys.
            unsafe {
                if !to_shared {
                    *ys.add(c * np + r)
                } else if r < n {
                    *g.add(c * ldb + r)
                } else {
                    T::ZERO
                }
            }
        },
        |e, value| {
            let (r, c) = rem_div(e, rows);
            unsafe {
                if to_shared {
                    *ys.add(c * np + r) = value;
                } else {
                    *g.add(c * ldb + r) = value;
                }
            }
        },
    );
    sync_threads();
}

/// Forward walks' product: row `tid % 64` of the staged tile (leading dimension
/// `WALK_LD`) times rows `16 (tid / 64) ..` of the right-hand-side tile `v` (columns `np`
/// apart), added to `acc` column by column.
///
/// # Safety
/// `tile` is a staged tile in shared memory, `v` 64 rows of `kc <= MAX_CHUNK` columns.
#[inline(always)]
pub(super) unsafe fn walk_row_times<T: Real>(tile: *const T, v: *const T, np: usize, kc: usize, acc: &mut [T; MAX_CHUNK]) {
    let tid = thread_idx_x() as usize;
    let (r, grp) = (tid % TILE, tid / TILE);
    // Four terms per pass of a loop that stays a loop: unrolled whole, the loads of all
    // sixteen were hoisted and took every register.
    let (passes, per) = (opaque_u32(4) as usize, TILE / WALK_GROUPS / 4);
    for pass in 0..passes {
        for i in 0..per {
            let p = grp * (TILE / WALK_GROUPS) + pass * per + i;
            // SAFETY: inside the stage and the right-hand-side rows.
            let m = unsafe { *tile.add(p * WALK_LD + r) };
            for (c, acc_c) in acc.iter_mut().enumerate() {
                if c < kc {
                    *acc_c = m.mul_add(unsafe { *v.add(c * np + p) }, *acc_c);
                }
            }
        }
    }
}

/// The forward walks' quarters' sums of row `tid % 64` in a fixed order (the bits do not
/// depend on timing), valid in the threads of group 0 (`tid < 64`), through `red`
/// (`WALK_GROUPS * chunk` columns of 64). Every thread calls it; the barrier after the
/// callers' use of the sums is theirs.
///
/// # Safety
/// `red` is shared memory that no thread reads or writes otherwise until that barrier.
#[inline(always)]
pub(super) unsafe fn walk_row_sums<T: Real>(red: *mut T, chunk: usize, acc: &[T; MAX_CHUNK], kc: usize) -> [T; MAX_CHUNK] {
    let tid = thread_idx_x() as usize;
    let (r, grp) = (tid % TILE, tid / TILE);
    for (c, &v) in acc.iter().enumerate() {
        if c < kc {
            unsafe { *red.add((grp * chunk + c) * TILE + r) = v };
        }
    }
    sync_threads();
    core::array::from_fn(|c| {
        let mut total = T::ZERO;
        if grp == 0 && c < kc {
            for g in 0..WALK_GROUPS {
                total += unsafe { *red.add((g * chunk + c) * TILE + r) };
            }
        }
        total
    })
}

/// Backward walks' product: columns `tid / 8` and `tid / 8 + 32` of the staged tile times
/// the right-hand-side tile `v` (columns `np` apart), over this lane's terms `tid % 8`,
/// `+ 8`, ..., added to `acc`.
///
/// # Safety
/// As [`walk_row_times`].
#[inline(always)]
pub(super) unsafe fn walk_col_times<T: Real>(tile: *const T, v: *const T, np: usize, kc: usize, acc: &mut [[T; MAX_CHUNK]; WALK_ROWS]) {
    let tid = thread_idx_x() as usize;
    let (pl, rr) = (tid % WALK_LANES, tid / WALK_LANES);
    // As in the forward walk: a loop of two passes of four terms.
    let (passes, per) = (opaque_u32(2) as usize, TILE / WALK_LANES / 2);
    for pass in 0..passes {
        for i in 0..per {
            let p = pl + (pass * per + i) * WALK_LANES;
            for (u, acc_u) in acc.iter_mut().enumerate() {
                // SAFETY: inside the stage and the right-hand-side rows.
                let m = unsafe { *tile.add((rr + u * (TILE / WALK_ROWS)) * WALK_LD + p) };
                for (c, acc_c) in acc_u.iter_mut().enumerate() {
                    if c < kc {
                        *acc_c = m.mul_add(unsafe { *v.add(c * np + p) }, *acc_c);
                    }
                }
            }
        }
    }
}

/// The backward walks' eight lanes' sums of each column (butterfly: a fixed order), then
/// in every lane of the eight.
#[inline(always)]
pub(super) fn walk_col_sums<T: Real>(acc: &mut [[T; MAX_CHUNK]; WALK_ROWS], kc: usize) {
    for acc_u in acc.iter_mut() {
        for (c, v) in acc_u.iter_mut().enumerate() {
            if c < kc {
                let mut m = 1;
                while m < WALK_LANES as u32 {
                    *v += v.shfl_xor(m);
                    m *= 2;
                }
            }
        }
    }
}

/// Tile `(row, col)` of a node's factor `L_ii` at `l` (`col < row`), as the walks stage
/// it: its rows, and 64 columns.
///
/// # Safety
/// `l` is the node's diagonal block (`n x n`, leading dimension `ld`); `row < tiles(n)`.
#[inline(always)]
unsafe fn factor_tile<T: Real>(l: *const T, ld: usize, n: usize, row: usize, col: usize) -> (super::product::Panel<T>, usize) {
    // SAFETY: inside the block (the caller's contract).
    let ptr = unsafe { l.add(col * TILE * ld + row * TILE) };
    (super::product::Panel { ptr, ld, rows: tile_rows(n, row) }, TILE)
}

/// The inverse `W_t = dinv[b][t]` of diagonal tile `t` of node `nd`, as the walks stage it:
/// `w x w` with `w` the tile's rows.
///
/// # Safety
/// `t < tiles(n)`; `nd` is a node of the launch's systems.
#[inline(always)]
unsafe fn dinv_panel<T: Real>(a: &TiledArgs<T>, nd: super::Node, t: usize) -> (super::product::Panel<T>, usize) {
    let w = tile_rows(a.n(), t);
    // SAFETY: dinv tile t of block b (the caller's contract).
    (super::product::Panel { ptr: unsafe { a.dinv_tile(nd.s, nd.b, t) } as *const T, ld: TILE, rows: w }, w)
}

/// Calls `f(column, row, sum)` for the forward walks' sums ([`walk_row_sums`]) that this
/// thread holds: group 0, rows below `w`, columns below `kc`.
#[inline(always)]
pub(super) fn each_row_sum<T: Real>(total: &[T; MAX_CHUNK], kc: usize, w: usize, mut f: impl FnMut(usize, usize, T)) {
    let tid = thread_idx_x() as usize;
    let (r, grp) = (tid % TILE, tid / TILE);
    if grp == 0 && r < w {
        for (c, &v) in total.iter().enumerate() {
            if c < kc {
                f(c, r, v);
            }
        }
    }
}

/// Calls `f(column, row, sum)` for the backward walks' sums ([`walk_col_sums`]) that this
/// thread holds: lane 0 of its eight, rows below `w`, columns below `kc`.
#[inline(always)]
pub(super) fn each_col_sum<T: Real>(acc: &[[T; MAX_CHUNK]; WALK_ROWS], kc: usize, w: usize, mut f: impl FnMut(usize, usize, T)) {
    let tid = thread_idx_x() as usize;
    let (pl, rr) = (tid % WALK_LANES, tid / WALK_LANES);
    for (u, acc_u) in acc.iter().enumerate() {
        let row = rr + u * (TILE / WALK_ROWS);
        if pl == 0 && row < w {
            for (c, &v) in acc_u.iter().enumerate() {
                if c < kc {
                    f(c, row, v);
                }
            }
        }
    }
}

/// `y_i = L_ii^-1 b_i` for every node of the level in one launch, in place: grid `x` =
/// `systems * nodes`, one block per node walking its diagonal tiles in order
/// (left-looking): `y_t = W_t (b_t - L[t, 0..t] y_{0..t})`, `W_t = dinv[b][t]`.
///
/// The node's tiles stream through a ring of [`WALK_STAGES`] shared-memory stages in the
/// order they are used (`L[t, 0], .., L[t, t-1], W_t` for `t = 0, 1, ..`: pair
/// [`super::lower_pair`] of the sequence number), while `b_i`, then `y_i`, stays in
/// shared memory. Thread `tid` owns row `tid % 64` of every tile product and a quarter of
/// its terms; the quarters are added in shared memory in a fixed order. Loops over the
/// right-hand-side columns run to [`MAX_CHUNK`] with `c < kc` inside: a bound of `kc` left
/// the accumulators in local memory.
///
/// # Safety
/// [`SOLVE_THREADS`] threads, [`node_walk_shared_bytes`]`(n, chunk)`; the factor is
/// complete and the lower levels' forward kernels have completed.
pub unsafe fn forward_node<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let nd = a.node();
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let (nt, np) = (tiles(n), tiles(n) * TILE);
    let (_, sh) = super::factor::shared_areas::<T>();
    // SAFETY (all shared pointers): inside node_walk_shared_bytes(n, chunk).
    let (stages, ys) = (sh, unsafe { sh.add(WALK_STAGES * TILE * WALK_LD) });
    let red = unsafe { ys.add(np * chunk) };
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    // SAFETY: block b of system s.
    let l = unsafe { a.block(a.diag, nd.s, nd.b) } as *const T;
    let source = |q: usize| {
        let (t, j) = super::lower_pair(q);
        // SAFETY: tiles of block b and its dinv (j <= t < tiles(n)).
        unsafe { if j < t { factor_tile(l, ld, n, t, j) } else { dinv_panel(&a, nd, t) } }
    };
    // SAFETY (both): inside the staged tile, the node's right-hand-side rows and `red`.
    let row_times = |tile: *const T, v: *const T, kc: usize, acc: &mut [T; MAX_CHUNK]| unsafe { walk_row_times(tile, v, np, kc, acc) };
    let reduce = |acc: &[T; MAX_CHUNK], kc: usize| unsafe { walk_row_sums(red, chunk, acc, kc) };
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        // SAFETY: the node's rows of columns c0 .. c0 + kc.
        let g = unsafe { bsys.add(c0 * ldb + nd.b * n) };
        unsafe { move_node_rhs(g, ldb, ys, n, np, kc, true) };
        let mut ring = unsafe { TileRing::start(stages, nt * (nt + 1) / 2, source) };
        for t in 0..nt {
            let w = tile_rows(n, t);
            let yt = unsafe { ys.add(t * TILE) };
            if t > 0 {
                let mut acc = [T::ZERO; MAX_CHUNK];
                for j in 0..t {
                    let tile = unsafe { ring.next() };
                    row_times(tile, unsafe { ys.add(j * TILE) }, kc, &mut acc);
                }
                // z_t = b_t - L[t, 0..t] y_{0..t}, in place.
                each_row_sum(&reduce(&acc, kc), kc, w, |c, r, v| unsafe { *yt.add(c * np + r) -= v });
                // Read after the ring's next barrier.
            }
            let tile = unsafe { ring.next() };
            let mut acc = [T::ZERO; MAX_CHUNK];
            row_times(tile, yt, kc, &mut acc);
            // y_t = W_t z_t (y_t's rows from w stay zero, as loaded).
            each_row_sum(&reduce(&acc, kc), kc, w, |c, r, v| unsafe { *yt.add(c * np + r) = v });
            // Read after the ring's next barrier (or the one below).
        }
        ring.finish();
        sync_threads();
        unsafe { move_node_rhs(g, ldb, ys, n, np, kc, false) };
        c0 += kc;
    }
}

/// `x_i = L_ii^-T z_i` for every node of the level in one launch, in place: grid `x` =
/// `systems * nodes`, one block per node walking its diagonal tiles last first:
/// `x_t = W_t^T (z_t - L[t+1.., t]^T x_{t+1..})`. Records
/// `info_key(level, NonFiniteSolution, b)` in `info` when a value of `x_i` is not finite.
///
/// The tiles stream as in [`forward_node`] (`L[t+1, t], .., L[nt-1, t], W_t` for
/// `t = nt-1, .., 0`); the products are with the tiles' transposes, so thread `tid` sums
/// eight consecutive terms of column `tid / 8` (and `+ 32`) of each, and the eight lanes
/// of a column add their sums by shuffles.
///
/// # Safety
/// As [`forward_node`], after [`backward_couple`] of the level.
pub unsafe fn backward_node<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let nd = a.node();
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let (nt, np) = (tiles(n), tiles(n) * TILE);
    let (_, sh) = super::factor::shared_areas::<T>();
    // SAFETY (all shared pointers): inside node_walk_shared_bytes(n, chunk).
    let (stages, xs) = (sh, unsafe { sh.add(WALK_STAGES * TILE * WALK_LD) });
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    // SAFETY: block b of system s.
    let l = unsafe { a.block(a.diag, nd.s, nd.b) } as *const T;
    let source = |q: usize| {
        // Sequence pair (u, i): t = nt - 1 - u; i < u is L[t + 1 + i, t], i = u is W_t.
        let (u, i) = super::lower_pair(q);
        let t = nt - 1 - u;
        // SAFETY: tiles of block b and its dinv (t < t + 1 + i < tiles(n)).
        unsafe { if i < u { factor_tile(l, ld, n, t + 1 + i, t) } else { dinv_panel(&a, nd, t) } }
    };
    // SAFETY: inside the staged tile and the node's right-hand-side rows.
    let col_times =
        |tile: *const T, v: *const T, kc: usize, acc: &mut [[T; MAX_CHUNK]; WALK_ROWS]| unsafe { walk_col_times(tile, v, np, kc, acc) };
    let reduce = walk_col_sums::<T>;
    let mut finite = true;
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        // SAFETY: the node's rows of columns c0 .. c0 + kc.
        let g = unsafe { bsys.add(c0 * ldb + nd.b * n) };
        unsafe { move_node_rhs(g, ldb, xs, n, np, kc, true) };
        let mut ring = unsafe { TileRing::start(stages, nt * (nt + 1) / 2, source) };
        for t in (0..nt).rev() {
            let w = tile_rows(n, t);
            let xt = unsafe { xs.add(t * TILE) };
            if t + 1 < nt {
                let mut acc = [[T::ZERO; MAX_CHUNK]; WALK_ROWS];
                for j in t + 1..nt {
                    let tile = unsafe { ring.next() };
                    col_times(tile, unsafe { xs.add(j * TILE) }, kc, &mut acc);
                }
                // z_t - L[t+1.., t]^T x_{t+1..}, in place (nobody reads z_t before the
                // ring's next barrier).
                reduce(&mut acc, kc);
                each_col_sum(&acc, kc, w, |c, row, v| unsafe { *xt.add(c * np + row) -= v });
            }
            let tile = unsafe { ring.next() };
            let mut acc = [[T::ZERO; MAX_CHUNK]; WALK_ROWS];
            col_times(tile, xt, kc, &mut acc);
            reduce(&mut acc, kc);
            // Every lane has read z_t before x_t replaces it.
            sync_threads();
            // x_t = W_t^T z_t (x_t's rows from w stay zero, as loaded).
            each_col_sum(&acc, kc, w, |c, row, v| {
                finite &= v.is_finite();
                unsafe { *xt.add(c * np + row) = v };
            });
            // Read after the ring's next barrier (or the one below).
        }
        ring.finish();
        sync_threads();
        unsafe { move_node_rhs(g, ldb, xs, n, np, kc, false) };
        c0 += kc;
    }
    if !finite {
        unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}

/// One right-hand-side tile of the node: `rows` rows of columns `0..kc` at `src` (leading
/// dimension `ldb`) into `dst` (columns `np` apart), zero from row `rows` to 64; through
/// L2 when `coherent` (values that other blocks of the launch wrote). No barrier.
///
/// # Safety
/// `src` holds `rows` rows of `kc` columns; `dst` 64 rows of `kc` columns in shared memory.
#[inline(always)]
unsafe fn load_rhs_tile<T: Real>(src: *const T, ldb: usize, dst: *mut T, np: usize, rows: usize, kc: usize, coherent: bool) {
    super::batched::<T, 8>(
        TILE * kc,
        THREADS,
        |e| {
            let (r, c) = (e % TILE, e / TILE);
            // SAFETY: row r < rows, column c < kc.
            match (r < rows, coherent) {
                (false, _) => T::ZERO,
                (true, true) => unsafe { load_coherent(src.add(c * ldb + r)) },
                (true, false) => unsafe { *src.add(c * ldb + r) },
            }
        },
        |e, value| unsafe { *dst.add((e / TILE) * np + e % TILE) = value },
    );
}

/// The split walks' block: its ticket's node and tile row (`reverse`: tile rows last
/// first, for the backward sweep), the flag of each tile row of that node, and where its
/// data lie.
struct SplitBlock<T> {
    nd: super::Node,
    t: usize,
    /// Rows of tile row `t`.
    w: usize,
    flags: *mut u32,
    /// The staged tiles (shared memory, `TILE x WALK_LD` each).
    stages: *mut T,
    /// The node's right-hand-side rows in shared memory (`np` per column), then the
    /// forward walk's partial sums.
    rows: *mut T,
    /// The system's right-hand sides and their leading dimension.
    rhs: (*mut T, usize),
    /// The node's diagonal block `L_ii`.
    l: *const T,
}

impl<T: Real> SplitBlock<T> {
    /// Takes the block's ticket (a barrier; every thread calls it).
    ///
    /// # Safety
    /// `a.flags` is this launch's ticket counter, zero before the launch, followed by one
    /// zero flag per tile row of each node of the level; the launch's shared memory is
    /// [`split_walk_shared_bytes`]`(n, chunk)`.
    #[inline(always)]
    unsafe fn take(a: &TiledArgs<T>, reverse: bool) -> Self {
        let nt = tiles(a.n());
        let ticket = unsafe { take_ticket(a.flags) } as usize;
        let (node, u) = (ticket / nt, ticket % nt);
        let t = if reverse { nt - 1 - u } else { u };
        let nd = a.node_at(node as u32);
        let (_, sh) = super::factor::shared_areas::<T>();
        SplitBlock {
            nd,
            t,
            w: tile_rows(a.n(), t),
            flags: a.flags.wrapping_add(1 + node * nt),
            stages: sh,
            // SAFETY: inside split_walk_shared_bytes(n, chunk).
            rows: unsafe { sh.add(nt * TILE * WALK_LD) },
            rhs: unsafe { system_rhs(a, nd.s) },
            // SAFETY: block b of system s.
            l: unsafe { a.block(a.diag, nd.s, nd.b) } as *const T,
        }
    }

    /// Staged tile `q` of this block.
    #[inline(always)]
    fn stage(&self, q: usize) -> *mut T {
        self.stages.wrapping_add(q * TILE * WALK_LD)
    }

    /// The completion flag of tile row `j` of this block's node.
    #[inline(always)]
    fn flag(&self, j: usize) -> *mut u32 {
        self.flags.wrapping_add(j)
    }
}

/// [`forward_node`] with each node's walk split over one block per tile row: grid `x` =
/// `systems * nodes * tiles(n)`. The block of tile row `t` stages all of its tiles
/// (`L[t, 0..t]`, `W_t`) at once, then adds `L[t, j] y_j` as the solution of each tile
/// row `j < t` is published, and publishes `y_t = W_t (b_t - L[t, 0..t] y_{0..t})`. The
/// products and sums are the node walk's, in the same order: the bits are the same.
///
/// Tiles rows take tickets in order (a completion flag per tile row, `args.flags`), so a
/// block only waits for blocks that are running or done (the reasoning of
/// [`crate::level::dataflow`]).
///
/// # Safety
/// [`SOLVE_THREADS`] threads, [`split_walk_shared_bytes`]`(n, chunk)`; `args.flags` as
/// [`split_flag_offset`] of this level, zeroed before the launch; otherwise as
/// [`forward_node`].
pub unsafe fn forward_split<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let np = tiles(n) * TILE;
    let block = unsafe { SplitBlock::take(&a, false) };
    let (nd, t, w, l, ys, (bsys, ldb)) = (block.nd, block.t, block.w, block.l, block.rows, block.rhs);
    let stage = |q| block.stage(q);
    let tid = thread_idx_x() as usize;
    // SAFETY: inside split_walk_shared_bytes(n, chunk).
    let red = unsafe { ys.add(np * chunk) };
    for q in 0..=t {
        // SAFETY: tiles of block b and its dinv (q <= t < tiles(n)).
        let (panel, cols) = unsafe { if q < t { factor_tile(l, ld, n, t, q) } else { dinv_panel(&a, nd, t) } };
        unsafe { super::product::issue_tile::<T, THREADS>(stage(q), WALK_LD, &panel, cols, tid) };
    }
    copy_async_commit();
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        // SAFETY: the node's rows of columns c0 .. c0 + kc.
        let g = unsafe { bsys.add(c0 * ldb + nd.b * n) };
        unsafe { load_rhs_tile(g.add(t * TILE), ldb, ys.add(t * TILE), np, w, kc, false) };
        let yt = unsafe { ys.add(t * TILE) };
        if t > 0 {
            let mut acc = [T::ZERO; MAX_CHUNK];
            for j in 0..t {
                if c0 == 0 {
                    unsafe { wait_for([block.flag(j), core::ptr::null(), core::ptr::null()]) };
                }
                // y_j, full rows (only the last tile row is partial).
                unsafe { load_rhs_tile(g.add(j * TILE), ldb, ys.add(j * TILE), np, TILE, kc, true) };
                copy_async_wait::<0>();
                sync_threads();
                unsafe { walk_row_times(stage(j), ys.add(j * TILE), np, kc, &mut acc) };
            }
            // z_t = b_t - L[t, 0..t] y_{0..t}, in place.
            let total = unsafe { walk_row_sums(red, chunk, &acc, kc) };
            each_row_sum(&total, kc, w, |c, r, v| unsafe { *yt.add(c * np + r) -= v });
        }
        copy_async_wait::<0>();
        sync_threads();
        let mut acc = [T::ZERO; MAX_CHUNK];
        unsafe { walk_row_times(stage(t), yt, np, kc, &mut acc) };
        // y_t = W_t z_t, straight to the right-hand sides.
        let total = unsafe { walk_row_sums(red, chunk, &acc, kc) };
        each_row_sum(&total, kc, w, |c, r, v| unsafe { *g.add(c * ldb + t * TILE + r) = v });
        // The next pass rewrites `ys` and `red`.
        sync_threads();
        c0 += kc;
    }
    unsafe { publish(block.flag(t)) };
}

/// [`backward_node`] with each node's walk split over one block per tile row: grid `x` =
/// `systems * nodes * tiles(n)`. The block of tile row `t` stages `L[t+1.., t]` and `W_t`
/// at once, then adds `L[j, t]^T x_j` for `j = t + 1, ..` as each is published, and
/// publishes `x_t = W_t^T (z_t - L[t+1.., t]^T x_{t+1..})`; the node walk's products and
/// sums in its order (the same bits, so the tiles wait for `x_{t+1}` first, the last to
/// be solved: what the split saves is the walk's one-at-a-time loads). Records
/// `info_key(level, NonFiniteSolution, b)` as [`backward_node`] does.
///
/// # Safety
/// As [`forward_split`], after [`backward_couple`] of the level.
pub unsafe fn backward_split<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let (nt, np) = (tiles(n), tiles(n) * TILE);
    let block = unsafe { SplitBlock::take(&a, true) };
    let (nd, t, w, l, xs, (bsys, ldb)) = (block.nd, block.t, block.w, block.l, block.rows, block.rhs);
    let stage = |q| block.stage(q);
    let tid = thread_idx_x() as usize;
    let below = nt - 1 - t;
    for q in 0..=below {
        // SAFETY: tiles of block b and its dinv (t < t + 1 + q < tiles(n)).
        let (panel, cols) = unsafe { if q < below { factor_tile(l, ld, n, t + 1 + q, t) } else { dinv_panel(&a, nd, t) } };
        unsafe { super::product::issue_tile::<T, THREADS>(stage(q), WALK_LD, &panel, cols, tid) };
    }
    copy_async_commit();
    let mut finite = true;
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        // SAFETY: the node's rows of columns c0 .. c0 + kc.
        let g = unsafe { bsys.add(c0 * ldb + nd.b * n) };
        unsafe { load_rhs_tile(g.add(t * TILE), ldb, xs.add(t * TILE), np, w, kc, false) };
        let xt = unsafe { xs.add(t * TILE) };
        if below > 0 {
            // x_{t+1} is published last: the blocks of tile rows t + 2 .. published before
            // it did (it waited for them), so one wait covers them all and their loads go
            // out together.
            if c0 == 0 {
                unsafe { wait_for([block.flag(t + 1), core::ptr::null(), core::ptr::null()]) };
            }
            for j in t + 1..nt {
                unsafe { load_rhs_tile(g.add(j * TILE), ldb, xs.add(j * TILE), np, tile_rows(n, j), kc, true) };
            }
            copy_async_wait::<0>();
            sync_threads();
            let mut acc = [[T::ZERO; MAX_CHUNK]; WALK_ROWS];
            for q in 0..below {
                unsafe { walk_col_times(stage(q), xs.add((t + 1 + q) * TILE), np, kc, &mut acc) };
            }
            walk_col_sums(&mut acc, kc);
            // z_t - L[t+1.., t]^T x_{t+1..}, in place (read behind the barrier below).
            each_col_sum(&acc, kc, w, |c, row, v| unsafe { *xt.add(c * np + row) -= v });
        }
        copy_async_wait::<0>();
        sync_threads();
        let mut acc = [[T::ZERO; MAX_CHUNK]; WALK_ROWS];
        unsafe { walk_col_times(stage(below), xt, np, kc, &mut acc) };
        walk_col_sums(&mut acc, kc);
        // x_t = W_t^T z_t, straight to the right-hand sides.
        each_col_sum(&acc, kc, w, |c, row, v| {
            finite &= v.is_finite();
            unsafe { *g.add(c * ldb + t * TILE + row) = v };
        });
        // The next pass rewrites `xs`.
        sync_threads();
        c0 += kc;
    }
    unsafe { publish(block.flag(t)) };
    if !finite {
        unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}
