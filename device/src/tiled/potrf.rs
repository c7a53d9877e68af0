//! The diagonal-tile step of the tiled engine: `D_kk = L_kk L_kk^T` and `W = L_kk^-1` of
//! one `64 x 64` tile per node, blocked in [`PW`]-column panels.
//!
//! # Why blocked
//! The previous kernel swept all 64 columns one by one, every thread updating its 32
//! entries of `L` and `W` per column behind one barrier each: ~36k FP64 warp instructions
//! and 64 barrier steps per tile, ~30 µs per launch and the largest kernel of the engine at
//! n = 64..128 (`docs/perf-notes.md`, entries 7 and 12). Here the column-by-column work
//! stays inside one warp (a `16 x 16` block in registers, broadcasts by shuffles, no
//! barrier), and everything else is a small product over the whole block: three barriers
//! per panel, 12 in all, and about a fifth of the instructions.
//!
//! # Per panel `p` (columns `c0 = 16 p ..`), three phases separated by barriers
//! - A (warp 0): Cholesky of the diagonal block `A_pp = L_pp L_pp^T` and its inverse
//!   `W_pp` in one register-resident sweep (see `diagonal_block`); both into shared memory.
//! - B (all threads): the panel below, `L_ip = A_ip W_pp^T` (into the scratch `pan`); the
//!   partial row block of the inverse, `T = L_p,0..p W_0..p,0..p` (into the scratch `tb`).
//!   Nothing read in this phase is written in it.
//! - C (all threads): `L_ip` into the tile; the trailing update `A_ij -= L_ip L_jp^T` (from
//!   `pan`); the inverse's row block `W_p,0..p = -W_pp T`.
//!
//! Rows and columns from `w` (the tile's valid width) to the next multiple of [`PW`] are
//! an identity block: they factor to the identity and touch nothing else.

use super::factor::{FLAG_BYTES, WIDE_THREADS, shared_areas};
use super::{TILE, TiledArgs, rem_div};
use crate::level::{InfoCode, info_key};
use crate::team::Block;
use crate::tile::for_each_rc;
use blocktri_prims::index::opaque_u32;
use blocktri_prims::{Real, atomic, sync_threads, sync_warp, thread_idx_x};

/// Columns per panel (and rows of a warp's register block).
pub const PW: usize = 16;
/// Leading dimension of the tile and of the inverse in shared memory. Every access runs
/// down columns (consecutive lanes, consecutive rows), so the padding is not needed for
/// the banks; it is the layout that was measured.
const LDS: usize = TILE + 1;
/// Most rows of a panel below its diagonal block.
const BELOW: usize = TILE - PW;
const _: () = assert!(PW * PW == WIDE_THREADS as usize, "the trailing update maps one thread per entry of a 16 x 16 block");

/// Shared memory of [`potrf`]: the flag words, the tile, its inverse, and the two
/// scratch blocks (`pan`: `BELOW x PW`, `tb`: `PW x BELOW`).
pub const fn potrf_shared_bytes(elem_bytes: usize) -> usize {
    FLAG_BYTES + (2 * TILE * LDS + 2 * BELOW * PW) * elem_bytes
}

/// Step `k` of every node's panel factorization, part 2: factors the diagonal tile
/// `D[k, k] = L_kk L_kk^T` (failure: `info_key(level, NotPositiveDefinite, b)`), stores
/// `L_kk` (zero above the diagonal) and its inverse `dinv[b][k]` (zero outside the tile's
/// `w x w` and above the diagonal). Grid `x` = `systems * nodes`.
///
/// # Safety
/// [`WIDE_THREADS`] threads, [`potrf_shared_bytes`]; [`super::factor::update`] of step `k`
/// (for `k >= 1`) has completed (stream order).
pub unsafe fn potrf<T: Real>(args: &TiledArgs<T>) {
    let a = *args;
    let nd = a.node();
    let (flag, sh) = shared_areas::<T>();
    if unsafe { a.failed(nd.s, flag) } {
        return;
    }
    let (n, ld) = (a.n(), a.ld());
    let r0 = a.step as usize * TILE;
    let w = TILE.min(n - r0);
    let panels = w.div_ceil(PW);
    let wp = panels * PW;
    let (tid, threads) = (thread_idx_x() as usize, WIDE_THREADS as usize);
    // SAFETY (all shared pointer arithmetic below): offsets inside potrf_shared_bytes; the
    // flag area holds four words, `failed` used the first and ended with a barrier.
    let bad = unsafe { flag.add(1) };
    let (sa, sw) = (sh, unsafe { sh.add(TILE * LDS) });
    let (pan, tb) = unsafe { (sh.add(2 * TILE * LDS), sh.add(2 * TILE * LDS + BELOW * PW)) };
    // SAFETY: the tile lies inside block b (r0 + w <= n).
    let d = unsafe { a.block(a.diag, nd.s, nd.b).add(r0 * ld + r0) };

    // The lower triangle of the tile (zero above, identity beyond w); the inverse zero.
    // All of a thread's loads are issued before the first store (a loop that stores after
    // each load waits one global round trip per element).
    const PER_THREAD: usize = TILE * TILE / WIDE_THREADS as usize;
    let vals: [T; PER_THREAD] = core::array::from_fn(|i| {
        let (r, c) = rem_div(tid + i * threads, TILE);
        match (r < w && c < w, c <= r) {
            (true, true) => unsafe { *d.add(c * ld + r) },
            (false, _) if r == c => T::ONE,
            _ => T::ZERO,
        }
    });
    for (i, &v) in vals.iter().enumerate() {
        let (r, c) = rem_div(tid + i * threads, TILE);
        unsafe {
            *sa.add(c * LDS + r) = v;
            *sw.add(c * LDS + r) = T::ZERO;
        }
    }
    if tid == 0 {
        unsafe { *bad = 0 };
    }
    sync_threads();

    for p in 0..panels {
        let c0 = p * PW;
        let below = wp - c0 - PW;
        // A: the diagonal block and its inverse, in warp 0.
        if tid < 32 {
            // SAFETY: the block at (c0, c0) of both tiles; `bad` in the flag area.
            unsafe { diagonal_block(sa.add(c0 * LDS + c0), sw.add(c0 * LDS + c0), tid, bad) };
        }
        sync_threads();
        if unsafe { *bad } != 0 {
            // Every thread read the same word: a uniform exit.
            if tid == 0 {
                let key = info_key(a.level, InfoCode::NotPositiveDefinite, nd.b as u32);
                unsafe { atomic::atomic_min_u64(a.info.add(nd.s), key) };
            }
            return;
        }

        // B: L_ip = A_ip W_pp^T (rows below the block, fastest) into `pan`; it replaces
        // A_ip in phase C, once nobody reads A_ip any more.
        for_each_rc(Block, below, PW, |rr, c| {
            let r = c0 + PW + rr;
            let mut acc = T::ZERO;
            for k in 0..PW {
                acc = unsafe { *sa.add((c0 + k) * LDS + r) }.mul_add(unsafe { *sw.add((c0 + k) * LDS + c0 + c) }, acc);
            }
            unsafe { *pan.add(c * BELOW + rr) = acc };
        });
        // B: T = L[c0.., 0..c0] W[0..c0, 0..c0]; W is lower triangular, so column c sums
        // from the start of c's panel: whole 16-column chunks (unrolled, loads in flight,
        // two partial sums), the same trip count for a whole warp.
        for_each_rc(Block, PW, c0, |r, c| {
            let (mut even, mut odd) = (T::ZERO, T::ZERO);
            for k0 in (c / PW..p).map(|q| q * PW) {
                for kk in (0..PW).step_by(2) {
                    let k = k0 + kk;
                    even = unsafe { *sa.add(k * LDS + c0 + r) }.mul_add(unsafe { *sw.add(c * LDS + k) }, even);
                    odd = unsafe { *sa.add((k + 1) * LDS + c0 + r) }.mul_add(unsafe { *sw.add(c * LDS + k + 1) }, odd);
                }
            }
            unsafe { *tb.add(c * PW + r) = even + odd };
        });
        sync_threads();

        // C: the panel into the tile; the trailing update from `pan`; W's row block p.
        for_each_rc(Block, below, PW, |rr, c| unsafe {
            *sa.add((c0 + c) * LDS + c0 + PW + rr) = *pan.add(c * BELOW + rr);
        });
        let (ti, tj) = (tid % PW, tid / PW);
        for bi in 0..below / PW {
            let li: [T; PW] = core::array::from_fn(|k| unsafe { *pan.add(k * BELOW + bi * PW + ti) });
            for bj in 0..=bi {
                let mut acc = T::ZERO;
                for (k, &x) in li.iter().enumerate() {
                    acc = x.mul_add(unsafe { *pan.add(k * BELOW + bj * PW + tj) }, acc);
                }
                // Whole 16 x 16 blocks, also above the diagonal of the diagonal blocks:
                // those entries are never read into a result (see `diagonal_block`).
                let at = (c0 + PW + bj * PW + tj) * LDS + c0 + PW + bi * PW + ti;
                unsafe { *sa.add(at) -= acc };
            }
        }
        for_each_rc(Block, PW, c0, |r, c| {
            let mut acc = T::ZERO;
            for q in 0..PW {
                acc = unsafe { *sw.add((c0 + q) * LDS + c0 + r) }.mul_add(unsafe { *tb.add(c * PW + q) }, acc);
            }
            unsafe { *sw.add(c * LDS + c0 + r) = -acc };
        });
        sync_threads();
    }

    // SAFETY: dinv tile `step` of block b; the factor tile as above.
    let inv = unsafe { a.dinv_tile(nd.s, nd.b, a.step as usize) };
    for_each_rc(Block, TILE, TILE, |r, c| {
        let inside = r < w && c < w;
        unsafe {
            if inside {
                *d.add(c * ld + r) = if c <= r { *sa.add(c * LDS + r) } else { T::ZERO };
            }
            *inv.add(c * TILE + r) = if inside { *sw.add(c * LDS + r) } else { T::ZERO };
        }
    });
}

/// Phase A for one warp: the `PW x PW` block at `blk` (leading dimension [`LDS`], lower
/// triangle valid) is replaced by its Cholesky factor (zero above the diagonal), and its
/// inverse is written at `inv`; `*bad` becomes nonzero when a pivot is not positive and
/// finite.
///
/// One sweep over the columns computes both. Lane `r < 16` holds row `r` of the block,
/// lane `16 + r` row `r` of `V` (starting as `e_r`; row `k` of `V` becomes row `k` of
/// `W = L^-1` at step `k`). Column `k`: the pivot from lane `k`; `L[r, k] = A[r, k] /
/// sqrt(d_k)` on both lanes of row `r`; lane `16 + k` scales its row into `W[k, :]`; then
/// for every `j` one shuffle serves both halves: lanes below 16 read `L[j, k]` from lane
/// `j` and update `A[r, j]` (`j > k`), lanes from 16 read `W[k, j]` from lane `16 + k`
/// and update `V[r, j]` (`r > k`). Entries above the diagonal of `A` get updates too, from
/// values that only ever reach entries above the diagonal. Every index is a constant after
/// unrolling, and no step's shuffles can be hoisted before the previous step: the block
/// stays in about 32 registers per lane (an earlier version computed the inverse in a
/// second pass whose 120 independent shuffles the compiler hoisted: 255 registers, one
/// block per multiprocessor).
///
/// The lane number passes through [`opaque_u32`]: inside the panel loop, LLVM otherwise
/// hoists every step's shuffle source lanes and predicates (256 loop-invariant values)
/// out of the loop, and they no longer fit in registers (255 registers and spills with
/// `ptxas -v`; a non-inlined function instead was spill-free but 1.5x slower per tile).
///
/// # Safety
/// Called by all 32 lanes of one warp; `blk`, `inv` valid for `PW` columns of `LDS`.
#[inline(always)]
unsafe fn diagonal_block<T: Real>(blk: *mut T, inv: *mut T, lane: usize, bad: *mut u32) {
    let lane = opaque_u32(lane as u32) as usize;
    let r = lane % PW;
    let upper = lane >= PW;
    // Selects, not branches: the unrolled sweep stays straight-line code.
    let mut v: [T; PW] = core::array::from_fn(|c| {
        let a = unsafe { *blk.add(c * LDS + r) };
        let e = if c == r { T::ONE } else { T::ZERO };
        if upper { e } else { a }
    });
    // Lanes 16.. read the rows that lanes ..16 overwrite at the end: order the reads first
    // (the shuffles in between synchronize the lanes, but not their memory accesses).
    sync_warp();
    let mut ok = true;
    for k in 0..PW {
        let dk = v[k].shfl_idx(k as u32);
        ok &= dk > T::ZERO && dk.is_finite();
        let rs = dk.rsqrt_fast();
        let l = v[k].shfl_idx(r as u32) * rs; // L[r, k]; sqrt(d_k) on lane k
        v[k] = if upper { v[k] } else { l };
        let scale = if upper && r == k { rs } else { T::ONE };
        for x in v.iter_mut() {
            *x *= scale;
        }
        // A rectangular loop with a condition (not `k + 1..PW`): a trip count that depends
        // on the outer index stops LLVM from unrolling the nest, and `v` would go to local
        // memory.
        for j in 0..PW {
            let give = if upper { v[j] } else { l };
            let s = give.shfl_idx(if upper { (PW + k) as u32 } else { j as u32 });
            let updated = (-l).mul_add(s, v[j]);
            let apply = if upper { r > k } else { j > k };
            v[j] = if apply { updated } else { v[j] };
        }
    }
    for (c, &x) in v.iter().enumerate() {
        // Lane r: row r of L (column-major: lanes write consecutive rows); lane 16 + r:
        // row r of W, zero above the diagonal by construction.
        let at = c * LDS + r;
        unsafe {
            if !upper {
                *blk.add(at) = if c <= r { x } else { T::ZERO };
            } else {
                *inv.add(at) = x;
            }
        }
    }
    if lane == 0 && !ok {
        unsafe { *bad = 1 };
    }
    sync_warp();
}
