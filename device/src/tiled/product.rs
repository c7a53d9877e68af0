//! The block product of the tiled engine: one thread block computes a `64 x 64` tile of
//! `A B^T`, where `A` and `B` are row panels (64 rows, `k` columns) of column-major
//! matrices. Every product of the factorization has this form: the trailing updates
//! `P[I, J] -= P[I, K] P[J, K]^T`, the triangular solve as a product with the inverted
//! diagonal tile, the neighbour updates `D_l -= L_li L_li^T` and the fill `-L_ri L_li^T`.
//!
//! # Tiling
//! `k` is walked in chunks of [`BK`] columns, staged through [`STAGES`] shared-memory
//! buffers by asynchronous 16-byte copies (`cp.async`): while the tensor cores work on
//! chunk `c`, chunks `c + 1` and `c + 2` are on their way, without passing through
//! registers (one barrier per chunk). Out-of-range rows and columns arrive as zeros (the
//! copies' zero fill), so any `rows <= 64` and any `k` work without special cases in the
//! inner loop. (Staging through registers, the first version, held 32 more registers
//! per thread: 2 instead of 3 blocks per multiprocessor with the sm_90 DMMA shape.)
//!
//! # Multiply-add strategies ([`TileMac`])
//! [`PRODUCT_THREADS`] = 128 threads. Staging: consecutive threads copy consecutive
//! 16-byte pieces of a column (coalesced). The multiply-add is a type parameter:
//! - [`Native`] for `f64`: FP64 tensor cores. Warp `w` owns the `32 x 32` quadrant
//!   `(w % 2, w / 2)`, 32 accumulators per lane: on sm_90 builds 2 x 4 `mma.sync.m16n8k16`
//!   tiles, on sm_80 builds 4 x 4 `mma.sync.m8n8k4` tiles ([`has_sm90_dmma`] picks at
//!   compile time).
//! - [`Native`] for `f32`: FP32 FMA. Thread `tid` owns rows `tid % 8 + 8i` (`i < 8`) and
//!   columns `tid / 8 + 16j` (`j < 4`): 32 accumulators, 12 shared loads per 32 FMAs.
//! - [`Tf32`] and [`Tf32x3`] (`f32` only, opt-in): TF32 tensor cores, `mma.sync.m16n8k8`,
//!   the f64 quadrants and accumulator layout. `Tf32` rounds both operands to TF32
//!   (10-bit mantissa: products carry relative errors near `2^-11`); `Tf32x3` splits each
//!   operand into a TF32 high part and a TF32 low part and adds `lo*hi + hi*lo + hi*hi`
//!   (the dropped `lo*lo` is below FP32 rounding), three tensor-core products for
//!   FP32-level accuracy.
//!
//! # Output shapes ([`ProductShape`])
//! The kernels that place a product's output are generic over its shape: [`Narrow`] (the
//! `64 x 64` product above, any multiply-add), and for `f64` with enough blocks to fill
//! the GPU [`Wide`] (`128 x 128`, 256 threads, the neighbour products at large `n`): half
//! the bytes streamed from L2 per flop. The TF32 choices have their own `128 x 128`
//! shapes ([`WideTf32`], [`WideTf32x3`]: half the operand splits per tensor-core product),
//! used from `n = 1024` (`docs/perf-notes.md`, entry 84).
//!
//! # Shared memory
//! [`product_shared_bytes`]: [`STAGES`] stages of `A` and `B` chunks, `BK x LDS` each,
//! stored `k`-major (`s[kk * LDS + row]`) with `LDS = `[`lds`]: the fragment reads
//! (`row = g`, `kk = t` for lane `4g + t`) hit distinct banks.

use blocktri_prims::memory::{copy_async_16, copy_async_commit, copy_async_wait};
use blocktri_prims::mma::{has_sm90_dmma, mma_m8n8k4_f64, mma_m16n8k8_f64, mma_m16n8k8_tf32, mma_m16n8k16_f64, split_tf32x3, to_tf32};
use blocktri_prims::{Real, thread_idx_x};

/// Rows and columns of the output tile; also the tile size of the engine.
pub const TILE: usize = 64;
/// Columns of `A` and `B` staged per step.
pub const BK: usize = 16;
/// Leading dimension of a staged chunk in shared memory, for elements of `elem_bytes`:
/// `TILE` plus 32 bytes, so that the tensor-core fragment reads (lane `4g + t` reads row
/// `g`, `k`-index `t`) hit 32 distinct banks: `68` for `f64`, `72` for `f32`.
pub const fn lds(elem_bytes: usize) -> usize {
    lds_rows(TILE, elem_bytes)
}

/// [`lds`] for stages of `rows` rows (the wide product's `128`): `rows` plus 32 bytes keeps
/// the fragment reads on distinct banks for any multiple of 64 rows.
pub const fn lds_rows(rows: usize, elem_bytes: usize) -> usize {
    rows + 32 / elem_bytes
}
/// Threads of a product block.
pub const PRODUCT_THREADS: u32 = 128;
/// Accumulators per thread.
pub const ACC: usize = 32;
/// Chunks in flight: the tensor cores work on one while the next `STAGES - 1` are copied.
pub const STAGES: usize = 3;
/// Shared memory of one product, in elements of `elem_bytes` ([`STAGES`] stages of `A` and
/// `B`).
pub const fn product_shared_elems(elem_bytes: usize) -> usize {
    staged_elems(TILE, TILE, BK, elem_bytes)
}
/// Shared memory of one product in bytes for elements of `elem_bytes`.
pub const fn product_shared_bytes(elem_bytes: usize) -> usize {
    product_shared_elems(elem_bytes) * elem_bytes
}

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

/// The inner loop of [`product_nt`] for elements `T`: how a staged chunk is multiplied
/// into the accumulators, and where each accumulator lands in the output tile.
pub trait TileMac<T: Real> {
    /// Adds the staged chunk's `A B^T` (`BK` columns, `s[kk * lds + row]`) into this
    /// thread's accumulators.
    ///
    /// # Safety
    /// `a` and `b` point to staged chunks in shared memory; all [`PRODUCT_THREADS`] threads
    /// of the block call it together.
    unsafe fn mac_chunk(acc: &mut [T; ACC], a: *const T, b: *const T);
    /// `(row, col)` in the output tile of accumulator `e` of thread `tid`.
    fn acc_coord(tid: usize, e: usize) -> (usize, usize);
    /// How the `k` loop around this multiply-add copies its chunks ([`CopyPlan`]).
    const COPIES: CopyPlan;
}

/// How a product's `k` loop issues the asynchronous copies of the chunks that lie inside
/// both panels (all rows, all columns `< k`: every chunk but a ragged last one of most
/// products). The checked copies spend ~25 instructions per 16-byte piece on bounds
/// (~200 per chunk of the wide product) between the barrier and the first tensor-core
/// operation; measured per multiply-add on the H200 (`docs/perf-notes.md`, entry 76).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CopyPlan {
    /// Every chunk through the bounds-checked copies (the TF32 products until their operand
    /// split got cheap, `docs/perf-notes.md` entry 84; kept for measurements and tests).
    Checked,
    /// One loop; a uniform branch takes the unchecked copies for interior chunks (the f32
    /// FMA products, -1 %: their multiply-add is ~800 instructions, and a second copy of
    /// it in a loop of its own made them 4-24 % slower).
    Branch,
    /// The steps whose next chunk is interior in a loop of their own, the ragged tail in a
    /// second loop: no bounds arithmetic left in the main loop (the FP64 tensor-core
    /// products: their multiply-add is ~130 instructions, factor -2 to -4 % at n >= 512;
    /// the TF32 ones since entry 84: 254 instead of 320 instructions per chunk in 3xTF32).
    Split,
}

/// The default multiply-add of each precision: FP64 tensor cores for `f64`, FP32 FMA for
/// `f32`.
pub struct Native;

/// `f32` products on TF32 tensor cores; `SPLIT` adds the low parts (see [`Tf32`] and
/// [`Tf32x3`]).
pub struct TensorTf32<const SPLIT: bool>;

/// `f32` products on TF32 tensor cores, both operands rounded to TF32 (opt-in: relative
/// errors near `2^-11` per product).
pub type Tf32 = TensorTf32<false>;

/// `f32` products on TF32 tensor cores with split operands (`x = hi + lo`, three products):
/// about FP32 accuracy (opt-in).
pub type Tf32x3 = TensorTf32<true>;

/// Where thread `tid` works in a tensor-core product: the origin `(row0, col0)` of its
/// warp's `32 x 32` quadrant `(w % 2, w / 2)` and its lane's fragment coordinates
/// `(g, t) = (lane / 4, lane % 4)`.
#[inline(always)]
fn warp_quadrant(tid: usize) -> (usize, usize, usize, usize) {
    let (warp, lane) = (tid / 32, tid % 32);
    ((warp % 2) * 32, (warp / 2) * 32, lane / 4, lane % 4)
}

/// Output coordinates of accumulator `e` of lane `(g, t)` for `16 x 8` tensor-core tiles
/// four to a row from `(row0, col0)`, 4 accumulators each: `c[i] = C[g + 8(i / 2)][2t + i
/// % 2]`; shared by the sm_90 FP64 shape and the TF32 shape.
#[inline(always)]
fn coord_16x8(row0: usize, col0: usize, g: usize, t: usize, e: usize) -> (usize, usize) {
    let (tile, i) = (e / 4, e % 4);
    let (mi, ni) = (tile / 4, tile % 4);
    (row0 + mi * 16 + g + 8 * (i / 2), col0 + ni * 8 + 2 * t + i % 2)
}

impl TileMac<f64> for Native {
    const COPIES: CopyPlan = CopyPlan::Split;

    #[inline(always)]
    unsafe fn mac_chunk(acc: &mut [f64; ACC], a: *const f64, b: *const f64) {
        let (row0, col0, g, t) = warp_quadrant(thread_idx_x() as usize);
        // SAFETY: forwarded contract; the quadrant lies inside the 64 x 64 stages.
        // The k loop issues the next chunk's copies before this multiply-add
        // (`product_nt_planned`).
        unsafe { dmma_region::<32, BK, ACC>(acc, a, b, (LDS64, LDS64), false, (row0 + g, col0 + g), t, &mut NoFill) }
    }

    #[inline(always)]
    fn acc_coord(tid: usize, e: usize) -> (usize, usize) {
        let (row0, col0, g, t) = warp_quadrant(tid);
        dmma_coord(row0, col0, g, t, e)
    }
}

const LDS64: usize = lds(8);
const LDS32: usize = lds(4);

/// Multiplies a staged chunk of `KC` columns into the accumulators of a warp's `RM x 32`
/// output region (`RM` of 32 or 64 rows: `N = RM` accumulators per lane) on FP64 tensor
/// cores; `A` and `B` are staged with leading dimensions `lda` and `ldb`; `(row, col)`
/// is the region's origin plus the lane's `g`. On sm_90 builds `RM / 16 x 4` `m16n8k16`
/// DMMAs per `k`-step of 16, on sm_80 builds `RM / 8 x 4` `m8n8k4` ones per `k`-step of 4
/// ([`has_sm90_dmma`] picks at compile time); `stream_b` (with `RM = 32`) loads the `B`
/// fragments one at a time (fewer live registers). The fragment reads (lane `4g + t` reads row
/// `g (+ 8)`, column `t (+ 4u)`) hit distinct banks for leading dimensions of 4 mod 16
/// ([`lds_rows`]). The next chunk's copies (`next`) go in parts after the row tiles of the
/// last `k`-step, not ahead of the chunk: the fragment loads and the first tensor-core
/// operations of both warps of a scheduler no longer queue behind them
/// (`docs/perf-notes.md`, entry 95). The `stream_b` form takes no parts: its callers
/// (`RM = 32`) issue their copies ahead of the chunk.
///
/// # Safety
/// `a` and `b` point to staged chunks of `KC` columns in shared memory that hold the
/// region's rows; every lane of the warp calls it together.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn dmma_region<const RM: usize, const KC: usize, const N: usize>(
    acc: &mut [f64; N],
    a: *const f64,
    b: *const f64,
    (lda, ldb): (usize, usize),
    stream_b: bool,
    (row, col): (usize, usize),
    t: usize,
    next: &mut impl FillParts,
) {
    const { assert!(N == RM && KC.is_multiple_of(16)) };
    let mut kk = 0;
    // SAFETY (all reads): (kk + t + 12) * LD + row + RM - 1 stays inside a staged chunk of
    // KC columns (caller's contract).
    if has_sm90_dmma() {
        while kk < KC {
            if stream_b && RM == 32 {
                // Two k-steps of 8 (`m16n8k8`): both A fragments of a step, then one B
                // fragment at a time: 20 operand registers instead of 48, for the shapes
                // capped at 128 registers.
                for k0 in [kk, kk + 8] {
                    let af: [[f64; 4]; 2] = core::array::from_fn(|mi| {
                        core::array::from_fn(|i| unsafe { *a.add((k0 + t + 4 * (i / 2)) * lda + row + 16 * mi + 8 * (i % 2)) })
                    });
                    for ni in 0..4 {
                        let bn: [f64; 2] = core::array::from_fn(|u| unsafe { *b.add((k0 + t + 4 * u) * ldb + col + 8 * ni) });
                        for (mi, am) in af.iter().enumerate() {
                            let e = (mi * 4 + ni) * 4;
                            let d = mma_m16n8k8_f64(*am, bn, [acc[e], acc[e + 1], acc[e + 2], acc[e + 3]]);
                            acc[e..e + 4].copy_from_slice(&d);
                        }
                    }
                }
            } else {
                // The B fragments of a k-step are read once and used by every 16-row slice.
                let bf: [[f64; 4]; 4] =
                    core::array::from_fn(|ni| core::array::from_fn(|u| unsafe { *b.add((kk + t + 4 * u) * ldb + col + 8 * ni) }));
                for mi in 0..RM / 16 {
                    let af: [f64; 8] =
                        core::array::from_fn(|i| unsafe { *a.add((kk + t + 4 * (i / 2)) * lda + row + 16 * mi + 8 * (i % 2)) });
                    for (ni, bn) in bf.iter().enumerate() {
                        let e = (mi * 4 + ni) * 4;
                        let d = mma_m16n8k16_f64(af, *bn, [acc[e], acc[e + 1], acc[e + 2], acc[e + 3]]);
                        acc[e..e + 4].copy_from_slice(&d);
                    }
                    if kk + 16 == KC {
                        next.part(mi, RM / 16);
                    }
                }
            }
            kk += 16;
        }
    } else {
        while kk < KC {
            let bf: [f64; 4] = core::array::from_fn(|ni| unsafe { *b.add((kk + t) * ldb + col + 8 * ni) });
            for mi in 0..RM / 8 {
                let af = unsafe { *a.add((kk + t) * lda + row + 8 * mi) };
                for (ni, bn) in bf.iter().enumerate() {
                    let e = (mi * 4 + ni) * 2;
                    let d = mma_m8n8k4_f64(af, *bn, [acc[e], acc[e + 1]]);
                    acc[e] = d[0];
                    acc[e + 1] = d[1];
                }
                if kk + 4 == KC {
                    next.part(mi, RM / 8);
                }
            }
            kk += 4;
        }
    }
}

/// `(row, col)` of accumulator `e` of lane `(g, t)` in a [`dmma_region`] at `(row0, col0)`:
/// `16 x 8` tiles (4 accumulators each, `c[i] = C[g + 8(i / 2)][2t + i % 2]`) on sm_90
/// builds, `8 x 8` tiles (2 each) on sm_80 builds; tiles four to a row of the region.
#[inline(always)]
fn dmma_coord(row0: usize, col0: usize, g: usize, t: usize, e: usize) -> (usize, usize) {
    if has_sm90_dmma() {
        coord_16x8(row0, col0, g, t, e)
    } else {
        let (tile, j) = (e / 2, e % 2);
        let (mi, ni) = (tile / 4, tile % 4);
        (row0 + mi * 8 + g, col0 + ni * 8 + 2 * t + j)
    }
}

impl TileMac<f32> for Native {
    const COPIES: CopyPlan = CopyPlan::Branch;

    #[inline(always)]
    unsafe fn mac_chunk(acc: &mut [f32; ACC], a: *const f32, b: *const f32) {
        let tid = thread_idx_x() as usize;
        let (tm, tn) = (tid % 8, tid / 8);
        for kk in 0..BK {
            let base = kk * LDS32;
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

/// An `f32` operand for the TF32 tensor cores: with `SPLIT` its 3xTF32 parts `hi` and
/// `lo` ([`split_tf32x3`]: integer rounding, `lo` truncated by the tensor cores), without
/// its TF32 rounding and zero. (`Tf32` keeps the `cvt`: with no `lo` to carry a NaN, the
/// integer rounding would turn the canonical NaN into a zero.)
#[inline(always)]
fn split_tf32<const SPLIT: bool>(x: f32) -> (u32, u32) {
    if SPLIT { split_tf32x3(x) } else { (to_tf32(x), 0) }
}

/// The TF32 forms on a warp's `RM x 32` output region (`RM` accumulators per lane): per
/// `k`-step of 8, `RM / 16 x 4` `m16n8k8` tiles; with `SPLIT` three products per tile
/// (`lo*hi + hi*lo` first, then `hi*hi`, so that the small terms are added while the
/// accumulator is still small relative to them). `A` and `B` are staged with leading
/// dimensions `lda` and `ldb`; `(row, col)` is the region's origin plus the lane's `g`.
///
/// # Safety
/// `a` and `b` point to staged chunks of `KC` columns in shared memory that hold the
/// region's rows; every lane of the warp calls it together.
#[inline(always)]
unsafe fn tf32_region<const SPLIT: bool, const RM: usize, const KC: usize>(
    acc: &mut [f32; RM],
    a: *const f32,
    b: *const f32,
    (lda, ldb): (usize, usize),
    (row, col): (usize, usize),
    t: usize,
) {
    const { assert!(RM.is_multiple_of(16) && KC.is_multiple_of(8)) };
    let mut kk = 0;
    while kk < KC {
        // SAFETY (all reads): (kk + t + 4) * LD + row + RM - 1 stays inside a staged chunk
        // (caller's contract). B[k][n] = b[k * ldb + n]: b[u] = B[t + 4u][g].
        let bf: [[(u32, u32); 2]; 4] = core::array::from_fn(|ni| {
            core::array::from_fn(|u| split_tf32::<SPLIT>(unsafe { *b.add((kk + t + 4 * u) * ldb + col + 8 * ni) }))
        });
        for mi in 0..RM / 16 {
            // a[i] = A[g + 8 (i % 2)][t + 4 (i / 2)].
            let af: [(u32, u32); 4] = core::array::from_fn(|i| {
                split_tf32::<SPLIT>(unsafe { *a.add((kk + t + 4 * (i / 2)) * lda + row + 16 * mi + 8 * (i % 2)) })
            });
            let (a_hi, a_lo) = (af.map(|x| x.0), af.map(|x| x.1));
            for (ni, bn) in bf.iter().enumerate() {
                let (b_hi, b_lo) = ([bn[0].0, bn[1].0], [bn[0].1, bn[1].1]);
                let e = (mi * 4 + ni) * 4;
                let mut c = [acc[e], acc[e + 1], acc[e + 2], acc[e + 3]];
                if SPLIT {
                    c = mma_m16n8k8_tf32(a_lo, b_hi, c);
                    c = mma_m16n8k8_tf32(a_hi, b_lo, c);
                }
                c = mma_m16n8k8_tf32(a_hi, b_hi, c);
                acc[e..e + 4].copy_from_slice(&c);
            }
        }
        kk += 8;
    }
}

impl<const SPLIT: bool> TileMac<f32> for TensorTf32<SPLIT> {
    const COPIES: CopyPlan = CopyPlan::Split;

    #[inline(always)]
    unsafe fn mac_chunk(acc: &mut [f32; ACC], a: *const f32, b: *const f32) {
        let (row0, col0, g, t) = warp_quadrant(thread_idx_x() as usize);
        // SAFETY: forwarded contract; the quadrant lies inside the 64 x 64 stages.
        unsafe { tf32_region::<SPLIT, ACC, BK>(acc, a, b, (LDS32, LDS32), (row0 + g, col0 + g), t) }
    }
    #[inline(always)]
    fn acc_coord(tid: usize, e: usize) -> (usize, usize) {
        let (row0, col0, g, t) = warp_quadrant(tid);
        coord_16x8(row0, col0, g, t, e)
    }
}

/// Elements per 16-byte asynchronous copy.
const fn piece<T: Real>() -> usize {
    16 / T::BYTES
}

/// Starts this thread's asynchronous copies of the whole `TILE x TILE` tile `p` (its first
/// `cols` columns; zeros beyond them and below `p.rows`) into the stage at `s`, column `c`
/// at `s + c * lds`, by `THREADS` threads: one stage of a streamed sequence of tiles (the
/// solve's node walks, [`super::solve::forward_node`]).
///
/// # Safety
/// As `issue_chunk_at` with `R = KC = TILE` and a stage of `TILE * lds` elements, `lds` a
/// multiple of 16 bytes.
#[inline(always)]
pub(super) unsafe fn issue_tile<T: Real, const THREADS: usize>(s: *mut T, lds: usize, p: &Panel<T>, cols: usize, tid: usize) {
    // SAFETY: forwarded contract.
    unsafe { issue_chunk_at::<T, TILE, THREADS, TILE>(s, lds, p, cols, 0, tid) }
}

/// Starts this thread's asynchronous copies of chunk `c` (columns `c * KC ..`) of `p` into
/// the stage at `s` (rows `0..R`, leading dimension `lds`), zero outside `p.rows x k`.
/// Thread `tid` of `THREADS` copies the 16-byte pieces `tid + q * THREADS` of the chunk,
/// numbered down each column then across: consecutive threads read consecutive addresses.
///
/// # Safety
/// `s` is a stage of `KC * lds` elements in shared memory, `lds >= R` a multiple of 16
/// bytes; the panel covers `rows x k` entries (`rows <= R`), its columns start 16-byte
/// aligned (`ptr` and `ld * size_of::<T>()` multiples of 16: the solver pads `ld` to 64
/// bytes and panels start at multiples of 64 rows).
#[inline(always)]
unsafe fn issue_chunk_at<T: Real, const R: usize, const THREADS: usize, const KC: usize>(
    s: *mut T,
    lds: usize,
    p: &Panel<T>,
    k: usize,
    c: usize,
    tid: usize,
) {
    for q in 0..copies_per_thread::<T, R, THREADS, KC>() {
        // SAFETY: forwarded contract.
        unsafe { checked_copy::<T, R, THREADS, KC>(s, lds, p, k, c, tid, q) };
    }
}

/// 16-byte copies per thread of a chunk of `KC` columns of an `R`-row panel by `THREADS`
/// threads (every thread copies the same number).
const fn copies_per_thread<T: Real, const R: usize, const THREADS: usize, const KC: usize>() -> usize {
    let pieces = KC * R / piece::<T>();
    assert!(pieces.is_multiple_of(THREADS));
    pieces / THREADS
}

/// Copy `q` of this thread's `issue_chunk_at`: piece `tid + q * THREADS` of the chunk.
///
/// # Safety
/// As `issue_chunk_at`; `q < copies_per_thread::<T, R, THREADS, KC>()`.
#[inline(always)]
unsafe fn checked_copy<T: Real, const R: usize, const THREADS: usize, const KC: usize>(
    s: *mut T,
    lds: usize,
    p: &Panel<T>,
    k: usize,
    c: usize,
    tid: usize,
    q: usize,
) {
    let vec = piece::<T>();
    let per_col = R / vec;
    let id = tid + q * THREADS;
    let (kk, row) = (id / per_col, (id % per_col) * vec);
    let col = c * KC + kk;
    let valid = if col < k { p.rows.saturating_sub(row).min(vec) } else { 0 };
    // SAFETY: `valid` entries from (row, col) are inside the panel; with none the source
    // is not read. The destination is inside the stage (kk < KC, row < R).
    unsafe {
        let src = if valid > 0 { p.ptr.add(col * p.ld + row) } else { p.ptr };
        copy_async_16(s.add(kk * lds + row) as *mut u8, src as *const u8, (valid * T::BYTES) as u32);
    }
}

/// Whether [`interior_copy`] can copy chunks of `KC` columns of `R`-row panels by
/// `THREADS` threads: each thread's pieces then lie in one row, a fixed number of columns
/// apart.
const fn interior_copies<T: Real, const R: usize, const THREADS: usize, const KC: usize>() -> bool {
    let per_col = R / piece::<T>();
    THREADS.is_multiple_of(per_col) && KC.is_multiple_of(THREADS / per_col)
}

/// This thread's copies of a chunk inside the panel (all `R` rows, columns `c * KC .. (c +
/// 1) * KC` all `< k`): `issue_chunk_at`'s copies without bounds checks, from one address
/// advanced by a fixed stride ([`CopyPlan`]).
///
/// # Safety
/// As `issue_chunk_at` (`lds = lds_rows(R, ..)`), with `p.rows >= R`, `(c + 1) * KC <= k`
/// and [`interior_copies`]`::<T, R, THREADS, KC>()`.
#[inline(always)]
unsafe fn issue_interior<T: Real, const R: usize, const THREADS: usize, const KC: usize>(s: *mut T, p: &Panel<T>, c: usize, tid: usize) {
    let (vec, lds) = (piece::<T>(), lds_rows(R, T::BYTES));
    let per_col = R / vec;
    let (kk0, row, cols) = (tid / per_col, (tid % per_col) * vec, THREADS / per_col);
    // SAFETY: rows `row .. row + vec <= R <= p.rows` and columns `c * KC + kk0 + q * cols <
    // (c + 1) * KC <= k` are inside the panel; the destinations inside the stage.
    unsafe {
        let src = p.ptr.add((c * KC + kk0) * p.ld + row);
        let dst = s.add(kk0 * lds + row);
        for q in 0..KC / cols {
            copy_async_16(dst.add(q * cols * lds) as *mut u8, src.add(q * cols * p.ld) as *const u8, 16);
        }
    }
}

/// Copy `q` of this thread's [`issue_interior`]: the copies one at a time, for a
/// multiply-add that issues them in parts ([`FillParts`]).
///
/// # Safety
/// As [`issue_interior`]; `q < copies_per_thread::<T, R, THREADS, KC>()`.
#[inline(always)]
unsafe fn interior_copy<T: Real, const R: usize, const THREADS: usize, const KC: usize>(
    s: *mut T,
    p: &Panel<T>,
    c: usize,
    tid: usize,
    q: usize,
) {
    let (vec, lds) = (piece::<T>(), lds_rows(R, T::BYTES));
    let per_col = R / vec;
    let (kk0, row, cols) = (tid / per_col, (tid % per_col) * vec, THREADS / per_col);
    // SAFETY: rows `row .. row + vec <= R <= p.rows` and columns `c * KC + kk0 + q * cols <
    // (c + 1) * KC <= k` are inside the panel; the destinations inside the stage.
    unsafe {
        let src = p.ptr.add((c * KC + kk0 + q * cols) * p.ld + row);
        copy_async_16(s.add((kk0 + q * cols) * lds + row) as *mut u8, src as *const u8, 16);
    }
}

/// Where a chunk's multiply-add lets the next chunk's copies go: [`staged_product`] hands
/// each multiply-add the copies of chunk `c + STAGES - 1`, and the multiply-add issues
/// them in parts between its tensor-core operations ([`FillParts::part`]) or all at once
/// ([`FillParts::finish`]). Issued right after the barrier, ahead of the chunk's first
/// fragment loads, the copies held the wide product's loop at 45 TFLOP/s on the H200; in
/// four parts after the last `k`-step's row tiles, 51-52, and with 32 columns per chunk
/// 53-56 (`docs/perf-notes.md`, entry 95).
pub(super) trait FillParts {
    /// Issues this thread's copies up to part `i` of `of` (`i < of`): the first
    /// `(i + 1) / of` of them, those before already issued.
    fn part(&mut self, i: usize, of: usize);
    /// Issues the copies not yet issued.
    fn finish(&mut self);
}

/// No copies to place: a multiply-add whose chunk's successor was issued before it.
struct NoFill;

impl FillParts for NoFill {
    #[inline(always)]
    fn part(&mut self, _: usize, _: usize) {}
    #[inline(always)]
    fn finish(&mut self) {}
}

/// The copies of one chunk of both panels into its stage, issued in parts ([`FillParts`]).
/// A chunk at or past the end copies nothing.
struct ChunkFill<'p, T, const RA: usize, const RB: usize, const THREADS: usize, const KC: usize> {
    a: &'p Panel<T>,
    b: &'p Panel<T>,
    k: usize,
    /// The chunk, its stage and the thread.
    c: usize,
    stage: (*mut T, *mut T),
    tid: usize,
    /// The chunk lies inside both panels (unchecked copies), or is a real chunk at all.
    inside: bool,
    live: bool,
    /// Copies issued so far: `A`'s first, then `B`'s.
    issued: usize,
}

impl<T: Real, const RA: usize, const RB: usize, const THREADS: usize, const KC: usize> ChunkFill<'_, T, RA, RB, THREADS, KC> {
    const COPIES_A: usize = copies_per_thread::<T, RA, THREADS, KC>();
    const COPIES: usize = Self::COPIES_A + copies_per_thread::<T, RB, THREADS, KC>();

    /// Issues this thread's copies `self.issued .. n`. One branch on the chunk's kind per
    /// call, not per copy (a branch per copy cost registers in every product).
    #[inline(always)]
    fn upto(&mut self, n: usize) {
        let (from, (sa, sb)) = (self.issued, self.stage);
        self.issued = n.max(from);
        let (a, b, c, tid) = (self.a, self.b, self.c, self.tid);
        // SAFETY: `staged_product`'s contract; `inside` only for chunks inside both panels
        // (`interior`), the copy indices below the per-thread counts.
        unsafe {
            if !self.live {
            } else if self.inside {
                for j in from..n {
                    if j < Self::COPIES_A {
                        interior_copy::<T, RA, THREADS, KC>(sa, a, c, tid, j);
                    } else {
                        interior_copy::<T, RB, THREADS, KC>(sb, b, c, tid, j - Self::COPIES_A);
                    }
                }
            } else {
                for j in from..n {
                    if j < Self::COPIES_A {
                        checked_copy::<T, RA, THREADS, KC>(sa, lds_rows(RA, T::BYTES), a, self.k, c, tid, j);
                    } else {
                        checked_copy::<T, RB, THREADS, KC>(sb, lds_rows(RB, T::BYTES), b, self.k, c, tid, j - Self::COPIES_A);
                    }
                }
            }
        }
    }
}

impl<T: Real, const RA: usize, const RB: usize, const THREADS: usize, const KC: usize> FillParts for ChunkFill<'_, T, RA, RB, THREADS, KC> {
    #[inline(always)]
    fn part(&mut self, i: usize, of: usize) {
        self.upto((i + 1) * Self::COPIES / of);
    }
    #[inline(always)]
    fn finish(&mut self) {
        self.upto(Self::COPIES);
    }
}

/// This thread's accumulators of `A B^T` for row panels `a`, `b` over `k` columns (use
/// [`TileMac::acc_coord`] to place them). Ends with a barrier; the panels are read
/// completely before the function returns, so the caller may overwrite `a` or `b`.
///
/// # Safety
/// Launch with [`PRODUCT_THREADS`] threads, all calling with the same arguments; `smem`
/// holds [`product_shared_elems`]`(T::BYTES)` elements of shared memory (16-byte aligned) not used by
/// anyone else during the call; the panels cover `rows x k` entries and their columns
/// start 16-byte aligned (see `issue_chunk_at`).
#[inline(always)]
pub unsafe fn product_nt<T: Real, M: TileMac<T>>(a: Panel<T>, b: Panel<T>, k: usize, smem: *mut T) -> [T; ACC] {
    // SAFETY: forwarded contract.
    unsafe { product_nt_from::<T, M>([T::ZERO; ACC], a, b, k, smem) }
}

/// [`product_nt`] continuing from the accumulators `init` instead of zeros: the `k` loop
/// is one accumulator chain per output element, so a product over columns `0..k1` whose
/// accumulators are handed to one over `k1..k2` of the same panels (`k1` a multiple of
/// the staged chunk) gives the bits of one product over `0..k2`.
///
/// # Safety
/// As [`product_nt`].
#[inline(always)]
pub unsafe fn product_nt_from<T: Real, M: TileMac<T>>(init: [T; ACC], a: Panel<T>, b: Panel<T>, k: usize, smem: *mut T) -> [T; ACC] {
    // SAFETY: forwarded contract (TILE rows, PRODUCT_THREADS threads).
    unsafe {
        staged_product::<T, TILE, TILE, { PRODUCT_THREADS as usize }, BK, ACC>(init, a, b, k, smem, M::COPIES, false, |acc, sa, sb, _| {
            M::mac_chunk(acc, sa, sb)
        })
    }
}

/// [`product_nt`] with the copy plan given instead of the multiply-add's own
/// ([`TileMac::COPIES`]): every plan must give the same bits (the emulated tiled tests
/// compare them).
///
/// # Safety
/// As [`product_nt`].
#[inline(always)]
pub unsafe fn product_nt_planned<T: Real, M: TileMac<T>>(a: Panel<T>, b: Panel<T>, k: usize, smem: *mut T, plan: CopyPlan) -> [T; ACC] {
    // SAFETY: forwarded contract (TILE rows, PRODUCT_THREADS threads).
    unsafe {
        staged_product::<T, TILE, TILE, { PRODUCT_THREADS as usize }, BK, ACC>(
            [T::ZERO; ACC],
            a,
            b,
            k,
            smem,
            plan,
            false,
            |acc, sa, sb, _| M::mac_chunk(acc, sa, sb),
        )
    }
}

/// Shared-memory elements of [`staged_product`] with stages of `ra` rows of `A` and `rb`
/// rows of `B`, `kc` columns each.
const fn staged_elems(ra: usize, rb: usize, kc: usize, elem_bytes: usize) -> usize {
    STAGES * kc * (lds_rows(ra, elem_bytes) + lds_rows(rb, elem_bytes))
}

/// The staged `k` loop of every product: chunks of `KC` columns of both panels (up to
/// `RA` rows of `a`, `RB` of `b`) through [`STAGES`] shared-memory stages, `mac`
/// multiplying each staged chunk into the `N` accumulators (starting from `init`: zeros,
/// or an earlier product's over the columns before these); `plan` says how interior chunks
/// are copied, `parts` whether the copies of the chunk `STAGES - 1` ahead go right after
/// the barrier (`false`) or to the multiply-add, which issues them in parts between its
/// tensor-core operations ([`FillParts`]); both constants at every call site.
///
/// # Safety
/// `THREADS` threads call it together with the same arguments; `smem` holds
/// `staged_elems(RA, RB, KC, T::BYTES)` elements of shared memory (16-byte aligned) not
/// used by anyone else during the call; panels as in `issue_chunk_at`; `mac` reads only the
/// staged chunks it is given.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // each one a choice of the call site, as the docs say
unsafe fn staged_product<T: Real, const RA: usize, const RB: usize, const THREADS: usize, const KC: usize, const N: usize>(
    init: [T; N],
    a: Panel<T>,
    b: Panel<T>,
    k: usize,
    smem: *mut T,
    plan: CopyPlan,
    parts: bool,
    mut mac: impl FnMut(&mut [T; N], *const T, *const T, &mut ChunkFill<'_, T, RA, RB, THREADS, KC>),
) -> [T; N] {
    let tid = thread_idx_x() as usize;
    let mut acc = init;
    let chunks = k.div_ceil(KC);
    if chunks == 0 {
        return acc;
    }
    // SAFETY (all): stages inside `smem`; panel reads as in `issue_chunk_at`.
    let (a_elems, b_elems) = (KC * lds_rows(RA, T::BYTES), KC * lds_rows(RB, T::BYTES));
    let stage = |s: usize| unsafe {
        let base = smem.add(s * (a_elems + b_elems));
        (base, base.add(a_elems))
    };
    // Chunks `0..interior` lie inside both panels (uniform over the block).
    let interior = if plan != CopyPlan::Checked
        && interior_copies::<T, RA, THREADS, KC>()
        && interior_copies::<T, RB, THREADS, KC>()
        && a.rows >= RA
        && b.rows >= RB
    {
        k / KC
    } else {
        0
    };
    let fill = |c: usize, inside: bool, live: bool| ChunkFill::<T, RA, RB, THREADS, KC> {
        a: &a,
        b: &b,
        k,
        c,
        stage: stage(c % STAGES),
        tid,
        inside,
        live,
        issued: 0,
    };
    // SAFETY (both): chunk c lies inside both panels when c < interior.
    let issue_inside = |c: usize| unsafe {
        let (sa, sb) = stage(c % STAGES);
        issue_interior::<T, RA, THREADS, KC>(sa, &a, c, tid);
        issue_interior::<T, RB, THREADS, KC>(sb, &b, c, tid);
    };
    let issue = |c: usize| {
        if c < interior {
            issue_inside(c);
        } else if c < chunks {
            let (sa, sb) = stage(c % STAGES);
            unsafe {
                issue_chunk_at::<T, RA, THREADS, KC>(sa, lds_rows(RA, T::BYTES), &a, k, c, tid);
                issue_chunk_at::<T, RB, THREADS, KC>(sb, lds_rows(RB, T::BYTES), &b, k, c, tid);
            }
        }
        // One group per chunk, empty past the end, so that the wait count below holds.
        copy_async_commit();
    };
    for c in 0..STAGES - 1 {
        issue(c);
    }
    // At the top of step c, chunk c is this thread's oldest pending group; the barrier makes
    // every thread's copies of it visible and frees the stage of chunk c - 1 (everyone is
    // past it) for chunk c + STAGES - 1: issued right there (`parts` false), or handed to
    // the multiply-add of chunk c, which issues it in parts between its tensor-core
    // operations. `Split`: the steps whose next chunk is interior run in a loop of their own.
    let split = if plan == CopyPlan::Split { interior.saturating_sub(STAGES - 1).min(chunks) } else { 0 };
    for c in 0..split {
        copy_async_wait::<{ STAGES as u32 - 2 }>();
        blocktri_prims::sync_threads();
        let (sa, sb) = stage(c % STAGES);
        if !parts {
            issue_inside(c + STAGES - 1);
            copy_async_commit();
        }
        let mut next = fill(c + STAGES - 1, true, parts);
        mac(&mut acc, sa, sb, &mut next);
        if parts {
            next.finish();
            copy_async_commit();
        }
    }
    for c in split..chunks {
        copy_async_wait::<{ STAGES as u32 - 2 }>();
        blocktri_prims::sync_threads();
        let (sa, sb) = stage(c % STAGES);
        if !parts {
            issue(c + STAGES - 1);
        }
        let mut next = fill(c + STAGES - 1, c + STAGES - 1 < interior, parts && c + STAGES - 1 < chunks);
        mac(&mut acc, sa, sb, &mut next);
        if parts {
            next.finish();
            copy_async_commit();
        }
    }
    copy_async_wait::<0>();
    blocktri_prims::sync_threads();
    acc
}

/// A product block as the kernels that place its output see it: the size of its output
/// tile (the rows of both panels), its threads, its shared memory and where each
/// accumulator lands.
pub trait ProductShape<T: Real> {
    /// Rows of the output tile (of panel `A`).
    const ROWS: usize;
    /// Columns of the output tile (rows of panel `B`).
    const COLS: usize;
    /// Accumulators whose old values the epilogue loads together (at most 32; fewer where
    /// the registers are capped).
    const EPILOGUE: usize = 32;
    /// Threads per block.
    const THREADS: u32;
    /// Shared memory of the product in bytes.
    const SHARED_BYTES: usize;
    /// A thread's accumulators.
    type Acc: Copy + AsRef<[T]> + AsMut<[T]>;
    /// Accumulators that hold zeros.
    fn zero_acc() -> Self::Acc;
    /// This thread's accumulators of `A B^T` (as [`product_nt`]).
    ///
    /// # Safety
    /// As [`product_nt`] for this shape's threads, shared memory and edge.
    #[inline(always)]
    unsafe fn product(a: Panel<T>, b: Panel<T>, k: usize, smem: *mut T) -> Self::Acc {
        // SAFETY: forwarded contract.
        unsafe { Self::product_from(Self::zero_acc(), a, b, k, smem) }
    }
    /// [`Self::product`] continuing from the accumulators `init` (as [`product_nt_from`]:
    /// the bits of one product over the columns of both calls).
    ///
    /// # Safety
    /// As [`Self::product`].
    unsafe fn product_from(init: Self::Acc, a: Panel<T>, b: Panel<T>, k: usize, smem: *mut T) -> Self::Acc;
    /// `(row, col)` in the output tile of accumulator `e` of thread `tid`.
    fn acc_coord(tid: usize, e: usize) -> (usize, usize);
}

/// The `64 x 64` product ([`product_nt`]) with the multiply-add `M`.
pub struct Narrow<M>(core::marker::PhantomData<M>);

impl<T: Real, M: TileMac<T>> ProductShape<T> for Narrow<M> {
    const ROWS: usize = TILE;
    const COLS: usize = TILE;
    const THREADS: u32 = PRODUCT_THREADS;
    const SHARED_BYTES: usize = product_shared_bytes(T::BYTES);
    type Acc = [T; ACC];
    #[inline(always)]
    fn zero_acc() -> Self::Acc {
        [T::ZERO; ACC]
    }
    #[inline(always)]
    unsafe fn product_from(init: Self::Acc, a: Panel<T>, b: Panel<T>, k: usize, smem: *mut T) -> Self::Acc {
        // SAFETY: forwarded contract.
        unsafe { product_nt_from::<T, M>(init, a, b, k, smem) }
    }
    #[inline(always)]
    fn acc_coord(tid: usize, e: usize) -> (usize, usize) {
        M::acc_coord(tid, e)
    }
}

/// Rows and columns of the wide product's output tile (`2 x 2` engine tiles).
pub const WIDE_TILE: usize = 2 * TILE;
/// Threads of a [`Wide`] product block.
pub const WIDE_PRODUCT_THREADS: u32 = 256;

/// An `f64` product on FP64 tensor cores with `RA x RB` output tiles per block of
/// `NTHREADS` threads: warp `w` owns the `RM x 32` region at `((w % (RA / RM)) RM,
/// (w / (RA / RM)) 32)`, `RM` accumulators per lane; `KC` columns staged per barrier.
/// Larger tiles stream fewer bytes from L2 per flop (the `64 x 64` product's 8 flop per
/// byte saturate it: `docs/perf-notes.md`, entries 8 and 20); fewer accumulators per
/// lane let more warps share a multiprocessor.
pub struct Dmma<const RA: usize, const RB: usize, const RM: usize, const KC: usize, const NTHREADS: usize>;

/// The wide product: `128 x 128` tiles, 8 warps of `64 x 32` (255 registers, one block
/// per multiprocessor), for launches with enough blocks to fill the GPU. Its next chunk's
/// copies go in parts between its tensor-core operations (`FillParts`). 32 columns per
/// chunk were faster in a microbenchmark but spilled here, and 9-14 % slower with the
/// `k`-steps kept a loop (`docs/perf-notes.md`, entry 95); with the `k`-steps kept apart
/// by a compiler barrier instead (no spill in the loop) they were no faster (entry 96).
pub type Wide = Dmma<WIDE_TILE, WIDE_TILE, 64, BK, { WIDE_PRODUCT_THREADS as usize }>;

/// `128 x 128` tiles on 16 warps of `32 x 32` (512 threads: at most 128 registers each),
/// 32 columns per barrier (203 KB of stages). As fast as [`Wide`] on the H100, not faster
/// (`docs/perf-notes.md`, entry 23); 16 columns per barrier was 8 % slower.
pub type Wide16 = Dmma<WIDE_TILE, WIDE_TILE, 32, 32, 512>;

/// `f32` products on TF32 tensor cores with `RA x RB` output tiles per block of `NTHREADS`
/// threads, warp regions of `RM x 32` as [`Dmma`]'s; `SPLIT` as in [`TensorTf32`]. A
/// `128 x 128` tile streams half the bytes per flop of the `64 x 64` one and splits each
/// staged operand value for twice the tensor-core products (`docs/perf-notes.md`, entry
/// 84).
pub struct Tf32Region<const SPLIT: bool, const RA: usize, const RB: usize, const RM: usize, const NTHREADS: usize>;

/// The wide 3xTF32 product: `128 x 128` tiles, 8 warps of `64 x 32`.
pub type WideTf32x3 = Tf32Region<true, WIDE_TILE, WIDE_TILE, 64, { WIDE_PRODUCT_THREADS as usize }>;
/// The wide TF32 product: `128 x 128` tiles, 8 warps of `64 x 32`.
pub type WideTf32 = Tf32Region<false, WIDE_TILE, WIDE_TILE, 64, { WIDE_PRODUCT_THREADS as usize }>;

impl<const SPLIT: bool, const RA: usize, const RB: usize, const RM: usize, const NTHREADS: usize> Tf32Region<SPLIT, RA, RB, RM, NTHREADS> {
    /// [`ProductShape::product`] with the copy plan given (every plan gives the same bits).
    ///
    /// # Safety
    /// As [`ProductShape::product`].
    #[inline(always)]
    pub unsafe fn product_planned(a: Panel<f32>, b: Panel<f32>, k: usize, smem: *mut f32, plan: CopyPlan) -> [f32; RM] {
        // SAFETY: forwarded contract.
        unsafe { Self::product_planned_from([0.0; RM], a, b, k, smem, plan) }
    }

    /// [`Self::product_planned`] continuing from the accumulators `init`.
    ///
    /// # Safety
    /// As [`ProductShape::product`].
    #[inline(always)]
    unsafe fn product_planned_from(init: [f32; RM], a: Panel<f32>, b: Panel<f32>, k: usize, smem: *mut f32, plan: CopyPlan) -> [f32; RM] {
        let (row0, col0, g, t) = Dmma::<RA, RB, RM, BK, NTHREADS>::region(thread_idx_x() as usize);
        let ld = (lds_rows(RA, 4), lds_rows(RB, 4));
        // SAFETY: forwarded contract; the region lies inside the stages.
        unsafe {
            staged_product::<f32, RA, RB, NTHREADS, BK, RM>(init, a, b, k, smem, plan, false, |acc, sa, sb, _| {
                tf32_region::<SPLIT, RM, BK>(acc, sa, sb, ld, (row0 + g, col0 + g), t)
            })
        }
    }
}

impl<const SPLIT: bool, const RA: usize, const RB: usize, const RM: usize, const NTHREADS: usize> ProductShape<f32>
    for Tf32Region<SPLIT, RA, RB, RM, NTHREADS>
{
    const ROWS: usize = RA;
    const COLS: usize = RB;
    const THREADS: u32 = NTHREADS as u32;
    const SHARED_BYTES: usize = staged_elems(RA, RB, BK, 4) * 4;
    type Acc = [f32; RM];
    #[inline(always)]
    fn zero_acc() -> Self::Acc {
        [0.0; RM]
    }
    #[inline(always)]
    unsafe fn product_from(init: Self::Acc, a: Panel<f32>, b: Panel<f32>, k: usize, smem: *mut f32) -> Self::Acc {
        // SAFETY: forwarded contract.
        unsafe { Self::product_planned_from(init, a, b, k, smem, <TensorTf32<SPLIT> as TileMac<f32>>::COPIES) }
    }
    #[inline(always)]
    fn acc_coord(tid: usize, e: usize) -> (usize, usize) {
        let (row0, col0, g, t) = Dmma::<RA, RB, RM, BK, NTHREADS>::region(tid);
        coord_16x8(row0, col0, g, t, e)
    }
}

/// `128 x 64` tiles on 8 warps of `32 x 32` (256 threads; two blocks per multiprocessor
/// within 128 registers): the column updates' output is 64 columns wide. As fast as the
/// `64 x 64` updates at n = 1024 on the H100, 7 % slower at n = 512 (entry 23).
pub type Tall = Dmma<WIDE_TILE, TILE, 32, BK, 256>;

impl<const RA: usize, const RB: usize, const RM: usize, const KC: usize, const NTHREADS: usize> Dmma<RA, RB, RM, KC, NTHREADS> {
    /// [`ProductShape::product`] with the copy plan given instead of the FP64 tensor-core
    /// products' own (`Native`'s [`TileMac::COPIES`]; every plan must give the same bits).
    ///
    /// # Safety
    /// As [`ProductShape::product`].
    #[inline(always)]
    pub unsafe fn product_planned(a: Panel<f64>, b: Panel<f64>, k: usize, smem: *mut f64, plan: CopyPlan) -> [f64; RM] {
        // SAFETY: forwarded contract.
        unsafe { Self::product_planned_from([0.0; RM], a, b, k, smem, plan) }
    }

    /// [`Self::product_planned`] continuing from the accumulators `init`.
    ///
    /// # Safety
    /// As [`ProductShape::product`].
    #[inline(always)]
    unsafe fn product_planned_from(init: [f64; RM], a: Panel<f64>, b: Panel<f64>, k: usize, smem: *mut f64, plan: CopyPlan) -> [f64; RM] {
        let (row0, col0, g, t) = Self::region(thread_idx_x() as usize);
        let ld = (lds_rows(RA, 8), lds_rows(RB, 8));
        // SAFETY: forwarded contract; the region lies inside the stages.
        unsafe {
            staged_product::<f64, RA, RB, NTHREADS, KC, RM>(init, a, b, k, smem, plan, RM > 32, |acc, sa, sb, next| {
                dmma_region::<RM, KC, RM>(acc, sa, sb, ld, RM <= 32, (row0 + g, col0 + g), t, next)
            })
        }
    }

    /// Origin of thread `tid`'s warp region and its lane's `(g, t)`.
    #[inline(always)]
    fn region(tid: usize) -> (usize, usize, usize, usize) {
        const { assert!(RA.is_multiple_of(RM) && RB.is_multiple_of(32) && NTHREADS == 32 * (RA / RM) * (RB / 32)) };
        let (warp, lane) = (tid / 32, tid % 32);
        ((warp % (RA / RM)) * RM, (warp / (RA / RM)) * 32, lane / 4, lane % 4)
    }
}

impl<const RA: usize, const RB: usize, const RM: usize, const KC: usize, const NTHREADS: usize> ProductShape<f64>
    for Dmma<RA, RB, RM, KC, NTHREADS>
{
    const ROWS: usize = RA;
    const COLS: usize = RB;
    // 32 old values next to 32 accumulators would need all 128 registers.
    const EPILOGUE: usize = if RM <= 32 { 8 } else { 32 };
    const THREADS: u32 = NTHREADS as u32;
    const SHARED_BYTES: usize = staged_elems(RA, RB, KC, 8) * 8;
    type Acc = [f64; RM];
    #[inline(always)]
    fn zero_acc() -> Self::Acc {
        [0.0; RM]
    }
    #[inline(always)]
    unsafe fn product_from(init: Self::Acc, a: Panel<f64>, b: Panel<f64>, k: usize, smem: *mut f64) -> Self::Acc {
        // The same multiply-add as the 64 x 64 f64 product, so the same plan.
        // SAFETY: forwarded contract.
        unsafe { Self::product_planned_from(init, a, b, k, smem, <Native as TileMac<f64>>::COPIES) }
    }
    #[inline(always)]
    fn acc_coord(tid: usize, e: usize) -> (usize, usize) {
        let (row0, col0, g, t) = Self::region(tid);
        dmma_coord(row0, col0, g, t, e)
    }
}
