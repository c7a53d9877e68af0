//! Solve kernels of the tiled engine. Per level, forward (levels upward):
//! [`forward_diag`] (`y_i = L_ii^-1 b_i`, blocked with the inverted diagonal tiles), then
//! [`forward_couple`] twice (`side` 0: `b_l -= L_li y_i`, `side` 1: `b_r -= L_ri y_i`;
//! one writer per target, no atomics). Backward (levels downward): [`backward_couple`]
//! (`z_i = y_i - L_li^T x_l - L_ri^T x_r`), then [`backward_diag`] (`x_i = L_ii^-T z_i`).
//!
//! Right-hand sides are processed `chunk` columns per pass (at most [`MAX_CHUNK`], held in
//! registers by the coupling kernels). The factor is read from global memory (it is
//! touched once per solve); the diagonal kernels keep the node's right-hand sides in
//! shared memory.

use super::rem_div;
use super::{TILE, TiledArgs, tiles};
use crate::level::{InfoCode, info_key};
use blocktri_prims::{Real, atomic, shared, sync_threads, thread_idx_x};

/// Right-hand-side columns per pass, at most.
pub const MAX_CHUNK: usize = 8;
/// Threads of every solve kernel.
pub const SOLVE_THREADS: u32 = 256;
const THREADS: usize = SOLVE_THREADS as usize;
const WARPS: usize = THREADS / 32;
/// Leading dimension of the diagonal-tile inverse in shared memory (odd: transposed reads
/// are conflict-free).
const LDW: usize = TILE + 1;

/// Shared memory of [`forward_diag`] / [`backward_diag`] with `chunk` columns per pass.
pub const fn diag_solve_shared_bytes(n: usize, chunk: usize, elem_bytes: usize) -> usize {
    (n * chunk + TILE * LDW + TILE * chunk) * elem_bytes
}

/// Shared memory of [`forward_couple`].
pub const fn couple_shared_bytes(elem_bytes: usize) -> usize {
    4 * TILE * MAX_CHUNK * elem_bytes
}

/// The right-hand sides of system `s`: `(first row of block 0, rows per column)`.
#[inline(always)]
unsafe fn system_rhs<T: Real>(a: &TiledArgs<T>, s: usize) -> (*mut T, usize) {
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

/// One lane's share of a warp's dot products along a column of `L`: adds
/// `lcol[p] * x[p + c ldx]` for `p = from, from + 32, .. < n` to `acc[c]`, `c < kc`
/// (`from` = the first row plus the lane: the warp reads the column coalesced).
///
/// # Safety
/// `lcol` holds `n` values, `x` `kc` columns of `n` at `ldx`.
#[inline(always)]
unsafe fn column_dot<T: Real>(lcol: *const T, x: *const T, ldx: usize, from: usize, n: usize, kc: usize, acc: &mut [T; MAX_CHUNK]) {
    let mut p = from;
    while p < n {
        let lv = unsafe { *lcol.add(p) };
        for c in 0..MAX_CHUNK {
            if c < kc {
                acc[c] = lv.mul_add(unsafe { *x.add(c * ldx + p) }, acc[c]);
            }
        }
        p += 32;
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

/// Shared areas of the diagonal kernels: `z` (`n x chunk`), the inverse tile, a temporary.
#[inline(always)]
unsafe fn diag_areas<T: Real>(n: usize, chunk: usize) -> (*mut T, *mut T, *mut T) {
    let z = shared::dynamic_shared::<T>();
    // SAFETY: sized by diag_solve_shared_bytes.
    unsafe { (z, z.add(n * chunk), z.add(n * chunk + TILE * LDW)) }
}

/// Copies `kc` columns between the node's right-hand sides (`bi`, leading dimension
/// `ldb`) and `z` (leading dimension `n`); `to_shared` picks the direction. Ends with a
/// barrier.
#[inline(always)]
unsafe fn move_rhs<T: Real>(bi: *mut T, ldb: usize, z: *mut T, n: usize, kc: usize, to_shared: bool) {
    let mut e = thread_idx_x() as usize;
    while e < n * kc {
        let (r, c) = rem_div(e, n);
        // SAFETY: r < n, c < kc: inside both.
        unsafe {
            if to_shared {
                *z.add(c * n + r) = *bi.add(c * ldb + r);
            } else {
                *bi.add(c * ldb + r) = *z.add(c * n + r);
            }
        }
        e += THREADS;
    }
    sync_threads();
}

/// Loads the `w x w` inverse of diagonal tile `t` into `ws` (leading dimension [`LDW`]).
/// Ends with a barrier.
#[inline(always)]
unsafe fn load_inverse<T: Real>(src: *const T, ws: *mut T, w: usize) {
    let mut e = thread_idx_x() as usize;
    while e < w * w {
        let (r, c) = rem_div(e, w);
        // SAFETY: inside the 64 x 64 tile and the shared copy.
        unsafe { *ws.add(c * LDW + r) = *src.add(c * TILE + r) };
        e += THREADS;
    }
    sync_threads();
}

/// `y_i = L_ii^-1 b_i` for every node of the level (grid `x` = `systems * nodes`), in place.
/// Blocked forward substitution: per diagonal tile `t`, `y_t = dinv_t z_t`, then the rows
/// below subtract `L[below, t] y_t`.
///
/// # Safety
/// [`SOLVE_THREADS`] threads, [`diag_solve_shared_bytes`] for `args.chunk`; the factor is
/// complete and the lower levels' forward kernels have completed.
pub unsafe fn forward_diag<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let nd = a.node();
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let tid = thread_idx_x() as usize;
    let (z, ws, tmp) = unsafe { diag_areas::<T>(n, chunk) };
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    let l = unsafe { a.block(a.diag, nd.s, nd.b) } as *const T;
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        let bi = unsafe { bsys.add(c0 * ldb + nd.b * n) };
        unsafe { move_rhs(bi, ldb, z, n, kc, true) };
        for t in 0..tiles(n) {
            let r0 = t * TILE;
            let w = TILE.min(n - r0);
            unsafe { load_inverse(a.dinv_tile(nd.s, nd.b, t), ws, w) };
            unsafe { apply_inverse(ws, z.add(r0), n, tmp, w, kc, false) };
            // Rows below: z[r] -= L[r, tile t] y_t (reads coalesced along r).
            let mut r = r0 + w + tid;
            while r < n {
                let mut acc = [T::ZERO; MAX_CHUNK];
                for p in 0..w {
                    let lv = unsafe { *l.add((r0 + p) * ld + r) };
                    for c in 0..MAX_CHUNK {
                        if c < kc {
                            acc[c] = lv.mul_add(unsafe { *z.add(c * n + r0 + p) }, acc[c]);
                        }
                    }
                }
                for c in 0..MAX_CHUNK {
                    if c < kc {
                        unsafe { *z.add(c * n + r) -= acc[c] };
                    }
                }
                r += THREADS;
            }
            sync_threads();
        }
        unsafe { move_rhs(bi, ldb, z, n, kc, false) };
        c0 += kc;
    }
}

/// `b_nbr -= L_{nbr,i} y_i` for the neighbour on `side` (0 left, 1 right) of every node:
/// grid `x` = `systems * nodes * tiles`, one block per row tile of the neighbour's. Each block: 64 rows,
/// four thread groups splitting the sum over `L`'s columns, reduced in shared memory.
///
/// # Safety
/// [`SOLVE_THREADS`] threads, [`couple_shared_bytes`]; after [`forward_diag`] of the level.
pub unsafe fn forward_couple<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (nd, tile) = a.node_and_tile(tiles(a.n()));
    let target = if a.side == 0 { nd.left } else { nd.right };
    let Some(target) = target else { return };
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let tid = thread_idx_x() as usize;
    let (rl, grp) = (tid % TILE, tid / TILE);
    let r0 = tile * TILE;
    let h = TILE.min(n - r0);
    let lmat = unsafe { a.block(if a.side == 0 { a.left } else { a.right }, nd.s, nd.b) } as *const T;
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    let red = shared::dynamic_shared::<T>();
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        let (y, dst) = unsafe { (bsys.add(c0 * ldb + nd.b * n), bsys.add(c0 * ldb + target * n + r0)) };
        let mut acc = [T::ZERO; MAX_CHUNK];
        if rl < h {
            let mut p = grp;
            while p < n {
                let lv = unsafe { *lmat.add(p * ld + r0 + rl) };
                for c in 0..MAX_CHUNK {
                    if c < kc {
                        acc[c] = lv.mul_add(unsafe { *y.add(c * ldb + p) }, acc[c]);
                    }
                }
                p += THREADS / TILE;
            }
        }
        for c in 0..MAX_CHUNK {
            unsafe { *red.add((grp * TILE + rl) * MAX_CHUNK + c) = acc[c] };
        }
        sync_threads();
        if grp == 0 && rl < h {
            for c in 0..kc {
                let mut total = T::ZERO;
                for g in 0..THREADS / TILE {
                    total += unsafe { *red.add((g * TILE + rl) * MAX_CHUNK + c) };
                }
                unsafe { *dst.add(c * ldb + rl) -= total };
            }
        }
        sync_threads();
        c0 += kc;
    }
}

/// `z_i = y_i - L_li^T x_l - L_ri^T x_r` for every node (grid `x` = `systems * nodes * tiles`: the row tiles of `z_i`), in
/// place; `x_l`, `x_r` are final (higher levels). A warp per output row, lanes along the
/// (contiguous) column of `L`, a butterfly sum.
///
/// # Safety
/// [`SOLVE_THREADS`] threads, no shared memory; after the higher levels' backward kernels.
pub unsafe fn backward_couple<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let (nd, tile) = a.node_and_tile(tiles(a.n()));
    if nd.left.is_none() && nd.right.is_none() {
        return;
    }
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let r0 = tile * TILE;
    let h = TILE.min(n - r0);
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    let sources = [(nd.left, a.left), (nd.right, a.right)];
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        let mut r = warp;
        while r < h {
            let mut acc = [T::ZERO; MAX_CHUNK];
            for (nbr, base) in sources {
                let Some(j) = nbr else { continue };
                // Column r0 + r of L_{j,i}, against x_j.
                let (lcol, x) = unsafe { (a.block(base, nd.s, nd.b).add((r0 + r) * ld) as *const T, bsys.add(c0 * ldb + j * n)) };
                unsafe { column_dot(lcol, x, ldb, lane, n, kc, &mut acc) };
            }
            unsafe { subtract_warp_totals(&acc, kc, bsys.add(c0 * ldb + nd.b * n + r0 + r), ldb) };
            r += WARPS;
        }
        c0 += kc;
    }
}

/// `x_i = L_ii^-T z_i` for every node, in place; blocked backward substitution from the
/// last diagonal tile: `z_t -= L[below, t]^T x_below` (a warp per row), then
/// `x_t = dinv_t^T z_t`. Records `info_key(level, NonFiniteSolution, b)` in `info` when a
/// value of `x_i` is not finite.
///
/// # Safety
/// As [`forward_diag`], after [`backward_couple`] of the level.
pub unsafe fn backward_diag<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let nd = a.node();
    let (n, ld, k, chunk) = (a.n(), a.ld(), a.nrhs as usize, a.chunk as usize);
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (z, ws, tmp) = unsafe { diag_areas::<T>(n, chunk) };
    let (bsys, ldb) = unsafe { system_rhs(&a, nd.s) };
    let l = unsafe { a.block(a.diag, nd.s, nd.b) } as *const T;
    let mut finite = true;
    let mut c0 = 0;
    while c0 < k {
        let kc = chunk.min(k - c0);
        let bi = unsafe { bsys.add(c0 * ldb + nd.b * n) };
        unsafe { move_rhs(bi, ldb, z, n, kc, true) };
        for t in (0..tiles(n)).rev() {
            let r0 = t * TILE;
            let w = TILE.min(n - r0);
            let mut r = warp;
            while r < w {
                let mut acc = [T::ZERO; MAX_CHUNK];
                unsafe { column_dot(l.add((r0 + r) * ld), z, n, r0 + w + lane, n, kc, &mut acc) };
                unsafe { subtract_warp_totals(&acc, kc, z.add(r0 + r), n) };
                r += WARPS;
            }
            unsafe { load_inverse(a.dinv_tile(nd.s, nd.b, t), ws, w) };
            finite &= unsafe { apply_inverse(ws, z.add(r0), n, tmp, w, kc, true) };
        }
        unsafe { move_rhs(bi, ldb, z, n, kc, false) };
        c0 += kc;
    }
    if !finite {
        unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}
