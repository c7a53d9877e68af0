//! The block product of the tiled engine: one thread block computes a `64 x 64` tile of
//! `A B^T`, where `A` and `B` are row panels (64 rows, `k` columns) of column-major
//! matrices. Every product of the factorization has this form: the trailing updates
//! `P[I, J] -= P[I, K] P[J, K]^T`, the triangular solve as a product with the inverted
//! diagonal tile, the neighbour updates `D_l -= L_li L_li^T` and the fill `-L_ri L_li^T`.
//!
//! # Tiling
//! `k` is walked in chunks of [`BK`] columns, staged through two shared-memory buffers:
//! while the tensor cores work on chunk `c`, each thread holds its share of chunk `c + 1`
//! in registers and stores it into the other buffer afterwards (one barrier per chunk).
//! Out-of-range rows and columns are staged as zeros, so any `rows <= 64` and any `k`
//! work without special cases in the inner loop.
//!
//! # Thread mapping
//! [`PRODUCT_THREADS`] = 128 threads. Staging: thread `tid` loads row `tid % 64` of the
//! panels for columns `tid / 64 + 2q` (consecutive threads read consecutive rows: the
//! loads are coalesced). The multiply-add mapping is per precision ([`TileScalar`]):
//! - `f64`: FP64 tensor cores (`mma.sync.m8n8k4`, sm_80+). Warp `w` owns the `32 x 32`
//!   quadrant `(w % 2, w / 2)`: 4 x 4 DMMA tiles, 32 accumulators per lane.
//! - `f32`: FP32 FMA. Thread `tid` owns rows `tid % 8 + 8i` (`i < 8`) and columns
//!   `tid / 8 + 16j` (`j < 4`): 32 accumulators, 12 shared loads per 32 FMAs.
//!
//! # Shared memory
//! [`PRODUCT_SHARED_BYTES`]: two stages of `A` and `B` chunks, `BK x LDS` each, stored
//! `k`-major (`s[kk * LDS + row]`). `LDS = 64 + 4`: the DMMA fragment reads (`row = g`,
//! `kk = t` for lane `4g + t`) hit 16 distinct 8-byte slots per half-warp.

use blocktri_prims::mma::mma_m8n8k4_f64;
use blocktri_prims::{Real, thread_idx_x};

/// Rows and columns of the output tile; also the tile size of the engine.
pub const TILE: usize = 64;
/// Columns of `A` and `B` staged per step.
pub const BK: usize = 16;
/// Leading dimension of a staged chunk in shared memory.
pub const LDS: usize = TILE + 4;
/// Threads of a product block.
pub const PRODUCT_THREADS: u32 = 128;
/// Accumulators per thread.
pub const ACC: usize = 32;
/// Shared memory of one product, in elements (two stages of `A` and `B`).
pub const PRODUCT_SHARED_ELEMS: usize = 4 * BK * LDS;
/// Shared memory of one product in bytes for elements of `elem_bytes`.
pub const fn product_shared_bytes(elem_bytes: usize) -> usize {
    PRODUCT_SHARED_ELEMS * elem_bytes
}
/// [`product_shared_bytes`] for `f64` (the larger).
pub const PRODUCT_SHARED_BYTES: usize = product_shared_bytes(8);

/// A row panel: rows `0..rows` (at most [`TILE`]) of a column-major matrix starting at
/// `ptr` with leading dimension `ld`; column `c` of the panel is at `ptr + c * ld`.
#[derive(Clone, Copy, Debug)]
pub struct Panel<T> {
    /// Entry `(0, 0)`.
    pub ptr: *const T,
    /// Leading dimension.
    pub ld: usize,
    /// Valid rows (the rest of the 64 are zero).
    pub rows: usize,
}

/// The precision-specific inner loop of [`product_nt`].
pub trait TileScalar: Real {
    /// Adds the staged chunk's `A B^T` (`BK` columns, `s[kk * LDS + row]`) into this
    /// thread's accumulators.
    ///
    /// # Safety
    /// `a` and `b` point to staged chunks in shared memory; all [`PRODUCT_THREADS`] threads
    /// of the block call it together.
    unsafe fn mac_chunk(acc: &mut [Self; ACC], a: *const Self, b: *const Self);
    /// `(row, col)` in the output tile of accumulator `e` of thread `tid`.
    fn acc_coord(tid: usize, e: usize) -> (usize, usize);
}

impl TileScalar for f64 {
    #[inline(always)]
    unsafe fn mac_chunk(acc: &mut [f64; ACC], a: *const f64, b: *const f64) {
        let tid = thread_idx_x() as usize;
        let (warp, lane) = (tid / 32, tid % 32);
        let (g, t) = (lane / 4, lane % 4);
        let (row0, col0) = ((warp % 2) * 32 + g, (warp / 2) * 32 + g);
        let mut kk = 0;
        while kk < BK {
            let base = (kk + t) * LDS;
            // SAFETY: base + row < BK * LDS (rows < 64 < LDS): inside the staged chunk.
            let af: [f64; 4] = core::array::from_fn(|mi| unsafe { *a.add(base + row0 + 8 * mi) });
            let bf: [f64; 4] = core::array::from_fn(|ni| unsafe { *b.add(base + col0 + 8 * ni) });
            for mi in 0..4 {
                for ni in 0..4 {
                    let e = (mi * 4 + ni) * 2;
                    let d = mma_m8n8k4_f64(af[mi], bf[ni], [acc[e], acc[e + 1]]);
                    acc[e] = d[0];
                    acc[e + 1] = d[1];
                }
            }
            kk += 4;
        }
    }

    #[inline(always)]
    fn acc_coord(tid: usize, e: usize) -> (usize, usize) {
        let (warp, lane) = (tid / 32, tid % 32);
        let (g, t) = (lane / 4, lane % 4);
        let (tile, j) = (e / 2, e % 2);
        let (mi, ni) = (tile / 4, tile % 4);
        ((warp % 2) * 32 + mi * 8 + g, (warp / 2) * 32 + ni * 8 + 2 * t + j)
    }
}

impl TileScalar for f32 {
    #[inline(always)]
    unsafe fn mac_chunk(acc: &mut [f32; ACC], a: *const f32, b: *const f32) {
        let tid = thread_idx_x() as usize;
        let (tm, tn) = (tid % 8, tid / 8);
        for kk in 0..BK {
            let base = kk * LDS;
            // SAFETY: inside the staged chunk (rows < 64).
            let av: [f32; 8] = core::array::from_fn(|i| unsafe { *a.add(base + tm + 8 * i) });
            let bv: [f32; 4] = core::array::from_fn(|j| unsafe { *b.add(base + tn + 16 * j) });
            for i in 0..8 {
                for j in 0..4 {
                    acc[i * 4 + j] = av[i].mul_add(bv[j], acc[i * 4 + j]);
                }
            }
        }
    }

    #[inline(always)]
    fn acc_coord(tid: usize, e: usize) -> (usize, usize) {
        (tid % 8 + 8 * (e / 4), tid / 8 + 16 * (e % 4))
    }
}

/// Values one thread stages per chunk and operand.
const PER_THREAD: usize = TILE * BK / PRODUCT_THREADS as usize;

/// Loads this thread's share of chunk `c` (columns `c * BK ..`) of `p`, zero outside
/// `p.rows x k`.
#[inline(always)]
unsafe fn load_chunk<T: Real>(p: &Panel<T>, k: usize, c: usize, tid: usize) -> [T; PER_THREAD] {
    let row = tid % TILE;
    let k0 = c * BK + tid / TILE;
    core::array::from_fn(|q| {
        let col = k0 + 2 * q;
        // SAFETY: row < rows and col < k: inside the panel (caller's contract).
        if row < p.rows && col < k { unsafe { *p.ptr.add(col * p.ld + row) } } else { T::ZERO }
    })
}

#[inline(always)]
unsafe fn store_chunk<T: Real>(s: *mut T, vals: &[T; PER_THREAD], tid: usize) {
    let (row, kq) = (tid % TILE, tid / TILE);
    for q in 0..PER_THREAD {
        // SAFETY: (kq + 2q) < BK, row < TILE < LDS: inside the stage.
        unsafe { *s.add((kq + 2 * q) * LDS + row) = vals[q] };
    }
}

/// This thread's accumulators of `A B^T` for row panels `a`, `b` over `k` columns (use
/// [`TileScalar::acc_coord`] to place them). Ends with a barrier; the panels are read
/// completely before the function returns, so the caller may overwrite `a` or `b`.
///
/// # Safety
/// Launch with [`PRODUCT_THREADS`] threads, all calling with the same arguments; `smem`
/// holds [`PRODUCT_SHARED_ELEMS`] elements of shared memory not used by anyone else
/// during the call; the panels cover `rows x k` entries.
#[inline(always)]
pub unsafe fn product_nt<T: TileScalar>(a: Panel<T>, b: Panel<T>, k: usize, smem: *mut T) -> [T; ACC] {
    let tid = thread_idx_x() as usize;
    let mut acc = [T::ZERO; ACC];
    let chunks = k.div_ceil(BK);
    if chunks == 0 {
        return acc;
    }
    let stage = |s: usize| unsafe { (smem.add(2 * s * BK * LDS), smem.add((2 * s + 1) * BK * LDS)) };
    // SAFETY (all): stages inside `smem`; panel reads as in `load_chunk`.
    unsafe {
        let (sa, sb) = stage(0);
        store_chunk(sa, &load_chunk(&a, k, 0, tid), tid);
        store_chunk(sb, &load_chunk(&b, k, 0, tid), tid);
    }
    blocktri_prims::sync_threads();
    for c in 0..chunks {
        let next = c + 1 < chunks;
        let (na, nb) = if next {
            unsafe { (load_chunk(&a, k, c + 1, tid), load_chunk(&b, k, c + 1, tid)) }
        } else {
            ([T::ZERO; PER_THREAD], [T::ZERO; PER_THREAD])
        };
        let (sa, sb) = stage(c % 2);
        unsafe { T::mac_chunk(&mut acc, sa, sb) };
        if next {
            let (sa, sb) = stage((c + 1) % 2);
            unsafe {
                store_chunk(sa, &na, tid);
                store_chunk(sb, &nb, tid);
            }
        }
        blocktri_prims::sync_threads();
    }
    acc
}
