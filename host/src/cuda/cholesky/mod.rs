//! [`GpuCholesky`]: the nested-dissection block Cholesky on the GPU.
//!
//! The executor is split by job:
//! - this file: the facade, the plan's device buffers (shared by every engine), uploads
//!   and downloads, graph capture and replay, status checks, multi-stream solves;
//! - [`schedule`]: a factorization or solve as a list of launch steps;
//! - [`fused`]: the fused engine (one launch per level, a node per thread block; rows,
//!   panel and generic families, `n <= 96` by default);
//! - [`tiled`]: the tiled engine (a node's tiles over many thread blocks, products on
//!   FP64 tensor cores; any `n`, the default above 64);
//! - [`chain`]: the chain engine (sequential block Cholesky, one warp or one thread block
//!   per system; the default for batches of six or more systems per SM with `n <= 16`);
//! - [`selinv`]: the selected-inversion sweep over any engine's factor.
//!
//! Per shape the solver owns a plan: device buffers for the input blocks, the factor
//! (`L_ii`, `L_li`, `L_ri` per node, leading dimension padded to 64 bytes; the tiled
//! engine adds the inverted diagonal tiles), the right-hand sides and the per-system
//! status words, plus CUDA graphs of the launch sequences. A factorization is one H2D
//! copy and one graph launch; `refactor` with new values and repeated `solve` calls reuse
//! everything.

mod chain;
mod chunked;
mod external;
mod fused;
mod schedule;
mod selinv;
mod tiled;

use super::context::Gpu;
use super::graph::Graph;
use super::launch::{DevicePtr, LaunchConfig};
use super::memory::DeviceBuffer;
use super::transfer::{Columns, Staging, Upload};
use crate::error::{Error, Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::Scalar;
use crate::solver::Factorization;
use crate::trace::timed;
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::layout::round_up;
use blocktri_device::level::{FactorArgs, InfoCode, SolveArgs, decode_info, factor_flag_words, solve_flag_words};
use blocktri_device::logdet::{LOGDET_SHARED_BYTES, LOGDET_THREADS, LogDetArgs};
use blocktri_device::tiled::inverse::inverse_scratch_elems;
use blocktri_device::tiled::solve::split_flag_words;
use chain::Chain;
use chunked::Deferred;
use cudarc::driver::CudaStream;
use fused::{Fused, Variant};
use schedule::{Lanes, Step, enqueue_all};
use std::sync::{Arc, Mutex};
use tiled::Tiled;

pub use external::DeviceArray;
pub(crate) use fused::max_fused_block;

/// Tuning and behaviour of [`GpuCholesky`].
///
/// ```
/// use blocktri::cuda::{GpuOptions, KernelFamily};
/// let options = GpuOptions { kernels: KernelFamily::Tiled, ..GpuOptions::default() };
/// assert!(options.graphs);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// Capture the launch sequences into CUDA graphs and replay them (default: true).
    pub graphs: bool,
    /// Threads per block of the generic factor kernels (default: chosen from `n`).
    pub factor_threads: Option<u32>,
    /// Right-hand-side columns processed per pass of a generic solve kernel (default 32).
    pub rhs_chunk: u32,
    /// Which kernel family runs (default: chosen from `n` and the precision).
    pub kernels: KernelFamily,
    /// At most this many systems of a batch on the device at once in
    /// [`Factorization::factor_solve`] (default: as many as fit; a batch larger than the
    /// device is always cut into chunks, see `chunked.rs`).
    pub chunk_systems: Option<usize>,
    /// How an `f32` factorization multiplies its tiles (default: FP32 FMA). The TF32
    /// choices run the tiled engine at every block size (the fused kernels have no tensor
    /// core path) and are an error for `f64` solvers and for the fused kernel families;
    /// [`F32Products::Auto`] takes 3xTF32 only where the tiled engine runs anyway.
    pub f32_products: F32Products,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            graphs: true,
            factor_threads: None,
            rhs_chunk: 32,
            kernels: KernelFamily::Auto,
            chunk_systems: None,
            f32_products: F32Products::Fma,
        }
    }
}

/// The arithmetic of the tile products in an `f32` factorization (the diagonal tiles'
/// Cholesky factors and inverses always run in FP32).
///
/// Measured accuracy and speed are in `BENCHMARKS.md`; as a guide, the relative residual
/// of a solve is about `1e-7` with [`Fma`](Self::Fma), [`Tf32x3`](Self::Tf32x3) and
/// [`Auto`](Self::Auto), and about `1e-4` with [`Tf32`](Self::Tf32) on well-conditioned
/// matrices.
///
/// ```
/// use blocktri::cuda::{F32Products, GpuOptions};
/// assert_eq!(GpuOptions::default().f32_products, F32Products::Fma);
/// let options = GpuOptions { f32_products: F32Products::Tf32x3, ..GpuOptions::default() };
/// assert_eq!(options.f32_products.kernel_suffix(), Some("tf32x3"));
/// assert_eq!(F32Products::Auto.in_tiled_engine(), F32Products::Tf32x3);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum F32Products {
    /// FP32 fused multiply-adds (full FP32 accuracy; the default, as issue #10 asks: the
    /// tensor-core forms are opt-in).
    #[default]
    Fma,
    /// [`Tf32x3`](Self::Tf32x3) where the tiled engine runs (large blocks, where the
    /// products dominate: the `f32` factor 1.2-1.5x faster than with FP32 FMAs at the same
    /// accuracy on the H200, `docs/perf-notes.md` entry 85), FP32 FMAs in the fused kernel
    /// families (which have no tensor-core path). Unlike the explicit TF32 choices it never
    /// changes the kernel family, and `f64` solvers accept it (it does nothing there): the
    /// opt-in for "the fastest `f32` products at FP32 accuracy" at any block size.
    Auto,
    /// TF32 tensor cores: operands rounded to 10 mantissa bits, FP32 accumulation.
    Tf32,
    /// TF32 tensor cores on split operands (`x = hi + lo`, three products per tile):
    /// about FP32 accuracy.
    Tf32x3,
}

impl F32Products {
    /// Suffix of the TF32 product kernels (`tiled_trsm_tf32`, ...), `None` for the FP32
    /// FMA ones and for [`Auto`](Self::Auto) (which names no kernel before the engine is
    /// known: see [`Self::in_tiled_engine`]).
    pub fn kernel_suffix(self) -> Option<&'static str> {
        match self {
            F32Products::Fma | F32Products::Auto => None,
            F32Products::Tf32 => Some(blocktri_device::kernels::names::TF32_SUFFIX),
            F32Products::Tf32x3 => Some(blocktri_device::kernels::names::TF32X3_SUFFIX),
        }
    }

    /// The products the tiled engine runs for this choice: [`Auto`](Self::Auto) is
    /// [`Tf32x3`](Self::Tf32x3) there, the others are themselves.
    pub fn in_tiled_engine(self) -> Self {
        match self {
            F32Products::Auto => F32Products::Tf32x3,
            other => other,
        }
    }
}

/// The level-kernel family.
///
/// ```
/// use blocktri::cuda::KernelFamily;
/// assert_eq!(KernelFamily::default(), KernelFamily::Auto);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelFamily {
    /// The family measured fastest for the block size (see `docs/perf-notes.md`):
    /// register-resident rows up to `n = 16`, shared-memory panels
    /// with the blocked tensor-core factor ([`KernelFamily::Blocked`]) up to `n = 64`, the
    /// tiled engine above.
    #[default]
    Auto,
    /// Always the generic fused shared-memory kernels (any `n` that fits in shared memory).
    Generic,
    /// The register-resident kernels (`blocktri_device::level::rows`; an error for `n > 32`),
    /// the top levels of each sweep in one launch (`blocktri_device::level::dataflow`).
    Rows,
    /// The register-resident kernels launched once per level and sweep (the schedule
    /// before the single-launch sweeps, kept for comparison; an error for `n > 32`).
    RowsLevels,
    /// The shared-memory panel kernels (`blocktri_device::level::panel`; an error for `n > 96`),
    /// up to `n = 64` the top levels of each sweep in one launch.
    Panel,
    /// The panel kernels' storage and solves with the factor blocked in 8-column strips,
    /// its tile updates and neighbour products on FP64 tensor cores in `f64`
    /// (`blocktri_device::level::blocked`; an error for `n > 64`), the top levels of each
    /// sweep in one launch.
    Blocked,
    /// The tiled engine (`blocktri_device::tiled`): `64 x 64` tiles over many thread blocks
    /// per node, FP64 tensor-core products; any `n`.
    Tiled,
    /// The chain kernels (`blocktri_device::chain`): sequential block Cholesky, no nested
    /// dissection; a lane group per system for the solves up to `n = 32` and the factor up to
    /// `n = 16` (two to eight systems per warp below `n = 17`), one thread block per system above
    /// (an error when the blocks do not fit in shared memory: `n` above about 120 in
    /// `f64`). `Auto` takes them for batches of at least four systems per multiprocessor
    /// with `n <= 16`, two with `16 < n <= 32` and one with `32 < n <= 64` (measured
    /// crossovers).
    Chain,
}

/// One launch of [`GpuCholesky::profile`]: `(kernel, level, grid, threads, shared bytes,
/// registers, microseconds)`.
pub type LaunchTiming = (String, u32, u32, u32, u32, i32, f64);

/// Where a solve reads its right-hand sides and writes its solution and status words.
#[derive(Clone, Copy, Debug)]
pub(super) struct SolveTarget<T> {
    rhs: *mut T,
    info: *mut u64,
    /// The single-launch solve's flags, behind the status words ([`solve_status_words`]).
    flags: *mut u32,
    /// The tiled engine's inverse solves' scratch area, behind the flags
    /// ([`solve_status_words`]).
    scratch: *mut T,
    k: usize,
    /// Columns from this one on are solved on the edge nodes only
    /// (`blocktri_device::level::SolveArgs::edge_from`); `k` for none.
    edge_from: usize,
}

impl<T> SolveTarget<T> {
    /// Right-hand sides at `rhs` (`k` columns, all solved everywhere), status words,
    /// flags and scratch area in `status` ([`solve_status_words`] long) for `shape`.
    fn new(rhs: *mut T, status: &DeviceBuffer<u64>, shape: Shape, k: usize) -> Self {
        let scratch = status.ptr().as_mut_ptr().wrapping_add(shape.batch + solve_flag_region_words(shape)) as *mut T;
        SolveTarget { rhs, info: status.ptr().as_mut_ptr(), flags: flags_behind_status(status, shape.batch), scratch, k, edge_from: k }
    }
}

/// The single-launch flags in a status buffer: behind its `systems` status words.
fn flags_behind_status(status: &DeviceBuffer<u64>, systems: usize) -> *mut u32 {
    status.ptr().as_mut_ptr().wrapping_add(systems) as *mut u32
}

/// Words of a factorization's status buffer: one status word per system, then the flags
/// of a single-launch factorization (`blocktri_device::level::dataflow`).
fn factor_status_words(shape: Shape) -> usize {
    shape.batch + factor_flag_words(shape.batch, shape.nblocks).div_ceil(2)
}

/// Words of a solve's status buffer: one status word per system, then the flags of a
/// single-launch solve, or of the tiled engine's split walks (both sweeps), whichever
/// is longer, then the tiled engine's inverse-solve scratch area.
fn solve_status_words(shape: Shape) -> usize {
    // The scratch area holds elements of at most 8 bytes.
    shape.batch + solve_flag_region_words(shape) + inverse_scratch_elems(shape.batch, shape.nblocks, shape.block)
}

/// 8-byte words of a solve status buffer's flag region ([`solve_status_words`]).
fn solve_flag_region_words(shape: Shape) -> usize {
    let split = 2 * split_flag_words(shape.batch, shape.nblocks, shape.block);
    solve_flag_words(shape.batch, shape.nblocks).max(split).div_ceil(2)
}

/// The device buffers of a plan, shared by every engine.
pub(super) struct Buffers<T> {
    shape: Shape,
    ld: usize,
    diag_in: DeviceBuffer<T>,
    sub_in: DeviceBuffer<T>,
    diag: DeviceBuffer<T>,
    left: DeviceBuffer<T>,
    right: DeviceBuffer<T>,
    /// Inverted diagonal tiles of `L_ii` (tiled engine only).
    dinv: Option<DeviceBuffer<T>>,
    info: DeviceBuffer<u64>,
    solve_info: DeviceBuffer<u64>,
    /// Per system `(m, e)` of `prod diag(L) = m 2^e` ([`GpuCholesky::log_determinant`]).
    logdet: DeviceBuffer<f64>,
    /// An `f64` matrix that the tiled `prep` of an `f32` plan rounds instead of reading
    /// `diag_in` / `sub_in` ([`GpuCholesky::round_input_from`]).
    rounding: Option<RoundingSource>,
}

/// Device addresses of an `f64` matrix at leading dimension `ld`: `S N` diagonal and
/// `S (N - 1)` sub-diagonal blocks, laid out as a plan's input buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RoundingSource {
    pub diag: u64,
    pub sub: u64,
    pub ld: usize,
}

impl<T: Scalar> Buffers<T> {
    /// Whether the plan's own input buffers are allocated (a plan is created with
    /// one-element stand-ins, `GpuCholesky::ensure_input_buffers`).
    fn has_input(&self) -> bool {
        self.diag_in.len() > 1
    }

    /// The arguments of the fused and chain factor kernels for `level`, with `rhs` for
    /// an interlaced forward substitution.
    fn factor_args(&self, level: u32, rhs: Option<&SolveTarget<T>>) -> FactorArgs<T> {
        FactorArgs {
            diag_in: self.diag_in.ptr().as_ptr(),
            diag: self.diag.ptr().as_mut_ptr(),
            left: self.left.ptr().as_mut_ptr(),
            right: self.right.ptr().as_mut_ptr(),
            sub: self.sub_in.ptr().as_ptr(),
            info: self.info.ptr().as_mut_ptr(),
            rhs: rhs.map_or(std::ptr::null_mut(), |r| r.rhs),
            sym_tol: T::symmetry_tolerance(),
            ld: self.ld as u32,
            n: self.shape.block as u32,
            nblocks: self.shape.nblocks as u32,
            systems: self.shape.batch as u32,
            level,
            nrhs: rhs.map_or(0, |r| r.k as u32),
            edge_from: rhs.map_or(0, |r| r.edge_from as u32),
            flags: std::ptr::null_mut(),
        }
    }

    /// The flags of a single-launch factorization, behind the status words.
    fn factor_flags(&self) -> *mut u32 {
        flags_behind_status(&self.info, self.shape.batch)
    }

    /// The arguments of the fused and chain solve kernels for `level`, `chunk` columns
    /// per pass.
    fn solve_args(&self, target: &SolveTarget<T>, level: u32, chunk: usize) -> SolveArgs<T> {
        SolveArgs {
            diag: self.diag.ptr().as_ptr(),
            left: self.left.ptr().as_ptr(),
            right: self.right.ptr().as_ptr(),
            rhs: target.rhs,
            info: target.info,
            ld: self.ld as u32,
            n: self.shape.block as u32,
            nblocks: self.shape.nblocks as u32,
            level,
            nrhs: target.k as u32,
            chunk: chunk as u32,
            edge_from: target.edge_from as u32,
            systems: self.shape.batch as u32,
            flags: std::ptr::null_mut(),
            sweeps: 0,
        }
    }
}

/// The engine a plan runs.
enum Engine {
    Fused(Box<Fused>),
    Tiled(Box<Tiled>),
    Chain(Box<Chain>),
}

impl Engine {
    /// Whether the factorization of `shape` can also do the forward substitution of `nrhs`
    /// columns.
    fn interlaces<T: Scalar>(&self, shape: Shape, nrhs: usize) -> bool {
        match self {
            Engine::Fused(f) => f.interlaces::<T>(shape, nrhs),
            Engine::Tiled(_) => false,
            Engine::Chain(c) => c.interlaces(shape.block, nrhs, T::BYTES),
        }
    }

    /// The factorization's steps; with `rhs` (only where [`Self::interlaces`]) also the
    /// forward substitution.
    fn factor_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, rhs: Option<&SolveTarget<T>>) -> Vec<Step<'k, T>> {
        match self {
            Engine::Fused(f) => f.factor_steps(b, rhs),
            Engine::Tiled(t) => t.factor_steps(b),
            Engine::Chain(c) => c.factor_steps(b, rhs),
        }
    }

    /// The steps of a factorization followed by a solve of `target`.
    fn factor_solve_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>) -> Vec<Step<'k, T>> {
        if let Engine::Tiled(t) = self {
            return t.factor_solve_steps(b, target);
        }
        let interlaced = self.interlaces::<T>(b.shape, target.k);
        let mut steps = self.factor_steps(b, interlaced.then_some(target));
        steps.extend(self.solve_steps(b, target, !interlaced));
        steps
    }

    /// The solve's steps; `forward` false when an interlaced factorization did that sweep.
    fn solve_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>, forward: bool) -> Vec<Step<'k, T>> {
        match self {
            Engine::Fused(f) => f.solve_steps(b, target, forward),
            Engine::Tiled(t) => t.solve_steps(b, target),
            Engine::Chain(c) => c.solve_steps(b, target, forward),
        }
    }

    /// The steps of one sweep of the solve alone (the forward one leaves `L^-1 P b` in the
    /// right-hand sides, the backward one turns that into `A^-1 b`).
    fn sweep_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>, sweep: Sweep) -> Vec<Step<'k, T>> {
        match (self, sweep) {
            (Engine::Fused(f), Sweep::Forward) => f.forward_steps(b, target),
            (Engine::Tiled(t), _) => t.sweep_steps(b, target, sweep),
            (Engine::Chain(c), Sweep::Forward) => c.forward_steps(b, target),
            (_, Sweep::Backward) => self.solve_steps(b, target, false),
        }
    }
}

/// One sweep of a solve with the factor `A = P^T L L^T P` (`P` the nested-dissection
/// order): [`Sweep::Forward`] overwrites `b` with `L^-1 P b`, [`Sweep::Backward`] a
/// vector `y` with `P^T L^-T y`. Callers that work between the two (the arrowhead's
/// border products, `blocktri::arrow`) see the same layout in both: the sweeps work in
/// place, block by block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sweep {
    /// `b -> L^-1 P b`.
    Forward,
    /// `y -> P^T L^-T y`.
    Backward,
}

struct Plan<T> {
    bufs: Buffers<T>,
    engine: Engine,
    rhs: Option<DeviceBuffer<T>>,
    rhs_cols: usize,
    /// The last `edge_cols` of the `rhs_cols` columns are solved on the edge nodes only
    /// (`SolveArgs::edge_from`): pass 1's coupling columns of the segment path, set
    /// around its launch ([`GpuCholesky::launch_factor_solve_edges`]); 0 otherwise.
    edge_cols: usize,
    factor_graph: Option<Graph>,
    /// Solve graphs by right-hand-side count and edge columns ([`KEYED_GRAPHS`] most
    /// recent): callers that alternate counts (the arrowhead solver: `a` columns, then
    /// `k`) replay both.
    solve_graph: Vec<(GraphKey, Graph)>,
    factor_solve_graph: Vec<(GraphKey, Graph)>,
    /// Graphs of the solve's sweeps alone ([`GpuCholesky::launch_sweep`]), likewise.
    forward_graph: Vec<(GraphKey, Graph)>,
    backward_graph: Vec<(GraphKey, Graph)>,
    /// The selected inversion's three output buffers ([`GpuCholesky::selinv_sweep`]),
    /// kept for repeated calls; empty until the first.
    sigma: Vec<DeviceBuffer<T>>,
    /// The tiled selected inversion's workspace (`Linv` per block, `G_U`, `G_V` per node
    /// of level 0), kept likewise; empty unless it ran.
    selinv_work: Vec<DeviceBuffer<T>>,
}

/// Graphs kept per kind for different right-hand-side counts.
const KEYED_GRAPHS: usize = 4;

/// What a solve graph was captured for: the right-hand-side columns and, of those, the
/// columns solved on the edge nodes only (kernel arguments baked into the graph).
type GraphKey = (usize, usize);

impl<T: Scalar> Plan<T> {
    fn target(&self) -> Result<SolveTarget<T>> {
        let rhs = self.rhs.as_ref().ok_or_else(|| Error::Shape("no right-hand sides uploaded".into()))?;
        let target = SolveTarget::new(rhs.ptr().as_mut_ptr(), &self.bufs.solve_info, self.bufs.shape, self.rhs_cols);
        Ok(SolveTarget { edge_from: self.rhs_cols - self.edge_cols.min(self.rhs_cols), ..target })
    }
}

/// Nested-dissection block Cholesky on the GPU (kernels written in Rust): fused level
/// kernels for small blocks, the tiled tensor-core engine for large ones.
///
/// `Send`, not `Sync` (its CUDA graphs are not shareable; every call takes `&mut self`).
/// Solvers made in several threads on the same [`Gpu`] run concurrently, each on streams
/// of its own.
///
/// ```no_run
/// use blocktri::{cuda::GpuCholesky, generate, Factorization};
/// let a = generate::random_spd::<f64>(1, 4096, 16, 1).unwrap();
/// let b = generate::random_rhs(a.shape(), 1, 2).unwrap();
/// let mut gpu = GpuCholesky::new().unwrap();
/// gpu.factor(&a).unwrap();
/// let x = gpu.solve(&b).unwrap();
/// gpu.refactor(&a).unwrap(); // same shape, new values: one copy and one graph launch
/// ```
pub struct GpuCholesky<T: Scalar> {
    gpu: Arc<Gpu>,
    stream: Arc<CudaStream>,
    options: GpuOptions,
    plan: Option<Plan<T>>,
    factored: bool,
    /// Pinned chunks through which host data move (see [`super::transfer`]).
    staging: Mutex<Staging>,
    /// Second solver for batches run in chunks and the segment path's second lane
    /// (`chunked.rs`), kept for its plan.
    partner: Option<Box<GpuCholesky<T>>>,
    /// A segment batch started on this solver's stream and not yet finished
    /// ([`crate::segmented::SegmentBackend::start`]): its copies may still use the
    /// caller's batch buffers.
    batch_in_flight: bool,
    /// The page-locked host batches of a chain run in segments (`chunked.rs`), kept for
    /// the next call of the same shape.
    segment_buffers: crate::segmented::BatchBuffers<T>,
    /// Set only while the segment path runs ([`Self::factor_solve_segmented`]): every
    /// right-hand side it hands this solver is built from values it has checked (the
    /// caller's `b` and the couplings), so [`Self::with_inputs`] skips the host's
    /// finiteness scan. The device still flags a non-finite solution.
    rhs_known_finite: bool,
    /// Graphs captured so far ([`GpuCholesky::graph_captures`]).
    captures: std::cell::Cell<u64>,
    /// The event [`GpuCholesky::wait_for_stream`] records on the caller's stream (made on
    /// first use, reused: a wait takes the event's state when it is enqueued).
    stream_event: std::sync::OnceLock<cudarc::driver::CudaEvent>,
    /// The streams of schedules that run work beside the main one ([`Step::Side`]), one
    /// per [`schedule::Lane`], made on first use.
    side_streams: [std::sync::OnceLock<Arc<CudaStream>>; 2],
}

impl<T: Scalar> std::fmt::Debug for GpuCholesky<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCholesky")
            .field("device", &self.gpu.info().name)
            .field("shape", &self.plan.as_ref().map(|p| p.bufs.shape))
            .field("factored", &self.factored)
            .finish()
    }
}

/// Device bytes of a plan: input blocks (`2N - 1`), the factor (`3N`), the inverted
/// diagonal tiles and the top levels' inverted diagonal blocks when `tiled`, `nrhs` right-hand-side columns, the status words with the
/// single-launch flags behind them, and the log-determinant parts (16 bytes per system).
fn plan_bytes<T: Scalar>(shape: Shape, nrhs: usize, tiled: bool) -> usize {
    let ld = GpuCholesky::<T>::padded_ld(shape.block);
    let blk = ld * shape.block * T::BYTES;
    let blocks = shape.batch * (5 * shape.nblocks - 1);
    let dinv = if tiled { tiled::dinv_len(shape.batch, shape.nblocks, shape.block, ld) * T::BYTES } else { 0 };
    let status = 8 * (factor_status_words(shape) + solve_status_words(shape));
    blocks * blk + dinv + shape.batch * shape.dim() * nrhs * T::BYTES + status + 16 * shape.batch
}

/// Elements of a plan's input buffers: `S N` diagonal and `S (N - 1)` sub-diagonal
/// blocks (at least one element each).
fn input_lens<T: Scalar>(shape: Shape) -> (usize, usize) {
    let blk = GpuCholesky::<T>::padded_ld(shape.block) * shape.block;
    (shape.batch * shape.nblocks * blk, (shape.batch * (shape.nblocks - 1) * blk).max(1))
}

/// Device bytes of a plan's input buffers ([`input_lens`]), part of [`plan_bytes`].
fn input_bytes<T: Scalar>(shape: Shape) -> usize {
    let (diag, sub) = input_lens::<T>(shape);
    (diag + sub) * T::BYTES
}

impl<T: Scalar> GpuCholesky<T> {
    /// A solver on the shared device ([`Gpu::shared`]) with a stream of its own.
    pub fn new() -> Result<Self> {
        Self::with_gpu(Gpu::shared()?, GpuOptions::default())
    }

    /// A solver on `gpu` with `options` and a stream of its own (so that several solvers
    /// run concurrently).
    pub fn with_gpu(gpu: Arc<Gpu>, options: GpuOptions) -> Result<Self> {
        let stream = gpu.new_stream()?;
        Self::with_stream(gpu, stream, options)
    }

    /// A solver that enqueues its work on the caller's `stream` (of `gpu`'s context): the
    /// `launch_*` calls return after enqueueing, ordered after whatever the caller put on
    /// the stream before.
    ///
    /// ```no_run
    /// use blocktri::cuda::{Gpu, GpuCholesky, GpuOptions};
    /// let gpu = Gpu::shared().unwrap();
    /// let stream = gpu.new_stream().unwrap();
    /// let solver = GpuCholesky::<f64>::with_stream(gpu, stream, GpuOptions::default()).unwrap();
    /// ```
    pub fn with_stream(gpu: Arc<Gpu>, stream: Arc<CudaStream>, options: GpuOptions) -> Result<Self> {
        let staging = Mutex::new(Staging::new(gpu.context()));
        let solver = GpuCholesky {
            gpu,
            stream,
            options,
            plan: None,
            factored: false,
            staging,
            partner: None,
            batch_in_flight: false,
            segment_buffers: Default::default(),
            rhs_known_finite: false,
            captures: Default::default(),
            stream_event: Default::default(),
            side_streams: Default::default(),
        };
        solver.family()?; // options that cannot work are an error now, not at the first factor
        Ok(solver)
    }

    /// Uses staging chunks of `bytes` (tests force small chunks to exercise the pipeline).
    #[doc(hidden)]
    pub fn set_staging_chunk(&mut self, bytes: usize) {
        self.staging = Mutex::new(Staging::with_chunk(self.gpu.context(), bytes));
    }

    fn staging(&self) -> std::sync::MutexGuard<'_, Staging> {
        // A panic while holding the lock leaves no broken invariant (slots are plain memory).
        self.staging.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The stream the solver's work runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The plan, when it holds a successful factorization.
    fn factored_plan(&self) -> Option<&Plan<T>> {
        self.plan.as_ref().filter(|_| self.factored)
    }

    /// How many launch graphs this solver has captured: one per kind of call (factor,
    /// solve, factor + solve) and shape, again only when the shape or the number of
    /// right-hand-side columns changes. A `refactor` + `solve` loop of one shape replays.
    ///
    /// ```no_run
    /// use blocktri::{cuda::GpuCholesky, generate, Factorization};
    /// let a = generate::random_spd::<f64>(1, 512, 8, 1).unwrap();
    /// let b = generate::random_rhs(a.shape(), 1, 2).unwrap();
    /// let mut gpu = GpuCholesky::new().unwrap();
    /// gpu.factor(&a).unwrap();
    /// gpu.solve(&b).unwrap();
    /// let captured = gpu.graph_captures();
    /// for _ in 0..10 {
    ///     gpu.refactor(&a).unwrap();
    ///     gpu.solve(&b).unwrap();
    /// }
    /// assert_eq!(gpu.graph_captures(), captured);
    /// ```
    pub fn graph_captures(&self) -> u64 {
        self.captures.get()
    }

    /// Largest block size `n` this device supports for `T` (the tiled engine's launch
    /// limits; device memory usually binds first, see [`Self::required_memory`]).
    pub fn max_block_size(&self) -> usize {
        let smem = self.gpu.info().max_shared_per_block;
        max_fused_block(smem, T::BYTES).max(tiled::max_tiled_block(smem, T::BYTES))
    }

    /// Device bytes a plan for `shape` needs with the default kernels (with `nrhs`
    /// right-hand-side columns).
    pub fn required_memory(shape: Shape, nrhs: usize) -> usize {
        let tiled = matches!(Variant::choose(KernelFamily::Auto, shape.block), Ok(None));
        plan_bytes::<T>(shape, nrhs, tiled)
    }

    /// The kernel family that runs: the options' family, except that TF32 products (which
    /// only the tiled engine has) turn `Auto` into `Tiled`.
    fn family(&self) -> Result<KernelFamily> {
        let products = self.options.f32_products;
        if matches!(products, F32Products::Fma | F32Products::Auto) {
            return Ok(self.options.kernels);
        }
        if T::BYTES != 4 {
            return Err(Error::Unsupported(format!("{products:?} products apply to f32 solvers, this one is {}", T::PRECISION)));
        }
        match self.options.kernels {
            KernelFamily::Auto | KernelFamily::Tiled => Ok(KernelFamily::Tiled),
            other => Err(Error::Unsupported(format!("{products:?} products run in the tiled engine only, not with the {other:?} kernels"))),
        }
    }

    /// Whether blocks of size `n` run on the tiled engine with this solver's options.
    fn is_tiled(&self, n: usize) -> Result<bool> {
        Ok(Variant::choose(self.family()?, n)?.is_none())
    }

    /// Whether a batch of `shape` runs on the chain engine with this solver's options.
    fn uses_chain(&self, shape: Shape) -> Result<bool> {
        let info = self.gpu.info();
        chain::prefers_chain(self.family()?, shape.batch, shape.block, info.multiprocessors, info.max_shared_per_block, T::BYTES)
    }

    /// Device bytes held by this solver's plans (its own and its chunk partner's).
    fn plan_footprint(&self) -> usize {
        let own = self.plan.as_ref().map_or(0, |p| {
            let tiled = matches!(p.engine, Engine::Tiled(_));
            let unallocated_input = if p.bufs.has_input() { 0 } else { input_bytes::<T>(p.bufs.shape) };
            plan_bytes::<T>(p.bufs.shape, p.rhs_cols.max(1), tiled) - unallocated_input
        });
        own + self.partner.as_ref().map_or(0, |p| p.plan_footprint())
    }

    /// Leading dimension of the device blocks: `n` rounded up to 64 bytes.
    pub fn padded_ld(n: usize) -> usize {
        round_up(n as u32, (64 / T::BYTES) as u32) as usize
    }

    fn ensure_plan(&mut self, shape: Shape) -> Result<()> {
        if self.plan.as_ref().is_some_and(|p| p.bufs.shape == shape) {
            return Ok(());
        }
        self.plan = None;
        self.factored = false;
        if shape.batch * shape.nblocks > u32::MAX as usize / 2 {
            shape_err!("{shape}: too many blocks for one launch grid");
        }
        let engine = if self.uses_chain(shape)? {
            Engine::Chain(Box::new(Chain::new::<T>(&self.gpu, shape.block, self.options.rhs_chunk)?))
        } else {
            match Variant::choose(self.family()?, shape.block)? {
                Some(variant) => Engine::Fused(Box::new(Fused::new::<T>(&self.gpu, &self.options, variant, shape.block)?)),
                None => Engine::Tiled(Box::new(Tiled::new::<T>(&self.gpu, shape.block, self.options.f32_products.in_tiled_engine())?)),
            }
        };
        let tiled = matches!(engine, Engine::Tiled(_));
        let nt = blocktri_device::tiled::tiles(shape.block);
        if tiled && shape.batch * shape.nblocks.div_ceil(2) * (nt * (nt + 1) / 2 + nt * nt) > i32::MAX as usize {
            shape_err!("{shape}: too many tiles for one launch grid of the tiled kernels");
        }
        // The input buffers are checked when they are allocated (`ensure_input_buffers`).
        self.make_room(plan_bytes::<T>(shape, 1, tiled) - input_bytes::<T>(shape))?;
        let ld = Self::padded_ld(shape.block);
        let blk = ld * shape.block;
        let (s, nb) = (shape.batch, shape.nblocks);
        let st = &self.stream;
        let bufs = Buffers {
            shape,
            ld,
            // The input buffers come with the first writer of the input (`plan_for_input`):
            // a plan that rounds another solver's matrix never needs them.
            diag_in: DeviceBuffer::poisoned(st, 1)?,
            sub_in: DeviceBuffer::poisoned(st, 1)?,
            diag: DeviceBuffer::poisoned(st, s * nb * blk)?,
            left: DeviceBuffer::poisoned(st, s * nb * blk)?,
            right: DeviceBuffer::poisoned(st, s * nb * blk)?,
            dinv: if tiled { Some(DeviceBuffer::poisoned(st, tiled::dinv_len(s, nb, shape.block, ld))?) } else { None },
            info: DeviceBuffer::poisoned(st, factor_status_words(shape))?,
            solve_info: DeviceBuffer::poisoned(st, solve_status_words(shape))?,
            logdet: DeviceBuffer::poisoned(st, 2 * s)?,
            rounding: None,
        };
        self.plan = Some(Plan {
            bufs,
            engine,
            rhs: None,
            rhs_cols: 0,
            edge_cols: 0,
            factor_graph: None,
            solve_graph: Vec::new(),
            factor_solve_graph: Vec::new(),
            forward_graph: Vec::new(),
            backward_graph: Vec::new(),
            sigma: Vec::new(),
            selinv_work: Vec::new(),
        });
        Ok(())
    }

    fn ensure_rhs(&mut self, k: usize) -> Result<()> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        if plan.rhs_cols == k {
            return Ok(());
        }
        let len = plan.bufs.shape.batch * plan.bufs.shape.dim() * k;
        if plan.rhs.as_ref().is_none_or(|r| r.len() < len) {
            self.make_room(len * T::BYTES)?;
            let plan = self.plan.as_mut().expect("checked above");
            plan.rhs = Some(DeviceBuffer::poisoned(&self.stream, len)?);
            // The graphs hold the old buffer's address.
            plan.solve_graph.clear();
            plan.factor_solve_graph.clear();
            plan.forward_graph.clear();
            plan.backward_graph.clear();
        }
        self.plan.as_mut().expect("checked above").rhs_cols = k;
        Ok(())
    }

    /// Fails with [`Error::OutOfMemory`] unless `bytes` more fit on the device. The chunk
    /// and segment paths keep their partner's plan for their next call; where it stands in
    /// the way of an allocation that fits without it, it goes (only an idle partner: no
    /// copy of its own may still use a caller's buffers; the chunk path allocates only
    /// before its first chunk, when the partner is idle).
    fn make_room(&mut self, bytes: usize) -> Result<()> {
        // (The check waits for the device's pending frees before it fails: of a plan just
        // replaced, of solvers dropped meanwhile.)
        let fits = self.gpu.check_memory(bytes);
        if fits.is_ok() || self.partner.as_ref().is_none_or(|p| p.batch_in_flight) {
            return fits;
        }
        self.partner = None;
        self.gpu.check_memory(bytes)
    }

    /// Copies the matrices to the device plan (creating it if the shape is new), without
    /// factoring. With [`Self::factor_uploaded`] this separates the transfer from the
    /// factorization (the benchmark times them apart). Host data move through pinned
    /// staging chunks (or directly, when they are page-locked); `a` may change as soon as
    /// this returns.
    pub fn upload(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.upload_systems(a.shape(), a.ld(), a.diag(), a.sub(), a.shape().batch, true)
    }

    /// Uploads `a` and `b` (where given), runs `then` (launches and checks) while both stay
    /// borrowed, and waits for the stream before returning, also when a step fails or
    /// panics. Copies from page-locked memory are only enqueued, so they run back to back
    /// with the launches: waiting for each (as [`Self::upload`] must, its caller may
    /// change the data when it returns) cost a host round trip and left the GPU idle until
    /// the next launch arrived.
    fn with_inputs<R>(
        &mut self,
        a: Option<&BlockTridiag<T>>,
        b: Option<&BlockVec<T>>,
        then: impl FnOnce(&mut Self) -> Result<R>,
    ) -> Result<R> {
        /// Waits for the stream when dropped: the DMA engine may read the inputs until then.
        struct WaitOnDrop(Arc<CudaStream>);
        impl Drop for WaitOnDrop {
            fn drop(&mut self) {
                let _ = self.0.synchronize();
            }
        }
        let wait = WaitOnDrop(self.stream.clone());
        // `b` is checked in its upload's own pass when the plan already has its shape: then
        // it goes first, so that a rejected `b` leaves the matrices and the factorization
        // as they were. Otherwise (a new shape) on the host before anything changes.
        let plan_shape = self.plan.as_ref().map(|p| p.bufs.shape);
        let to_check = b.filter(|_| !self.rhs_known_finite);
        let b_first = to_check.filter(|b| plan_shape == Some(b.shape()) && a.is_none_or(|a| a.shape() == b.shape()));
        if let Some(b) = b_first {
            // SAFETY: `b` stays borrowed until `wait` has synchronized the stream.
            timed("upload rhs and checks (enqueued)", || unsafe { self.upload_rhs_checked(b, false) })?;
        } else if let Some(b) = to_check {
            timed("rhs checks", || b.validate())?;
        }
        if let Some(a) = a {
            timed("upload (enqueued)", || self.upload_systems(a.shape(), a.ld(), a.diag(), a.sub(), a.shape().batch, false))?;
        }
        if let (Some(b), None) = (b, b_first) {
            // SAFETY: as above.
            timed("upload rhs (enqueued)", || unsafe { self.upload_rhs_then(b, false) })?;
        }
        let out = then(self)?;
        std::mem::forget(wait);
        self.stream.synchronize()?;
        Ok(out)
    }

    /// [`Self::upload`] from the caller's own buffers, laid out as in a
    /// [`BlockTridiag`] of `shape` with leading dimension `ld`: `diag` holds
    /// `S N ld n` values, `sub` `S (N - 1) ld n`. For matrices kept in page-locked memory
    /// ([`super::PinnedBuffer`], or registered with CUDA), which the DMA engine reads
    /// directly.
    ///
    /// ```no_run
    /// use blocktri::{cuda::{Gpu, GpuCholesky, PinnedBuffer}, generate, Shape};
    /// let a = generate::random_spd::<f64>(1, 4096, 16, 1).unwrap();
    /// let gpu = Gpu::shared().unwrap();
    /// let (diag, sub) = (PinnedBuffer::from_slice(&gpu, a.diag()).unwrap(), PinnedBuffer::from_slice(&gpu, a.sub()).unwrap());
    /// let mut solver = GpuCholesky::<f64>::new().unwrap();
    /// solver.upload_slices(a.shape(), a.ld(), &diag, &sub).unwrap();
    /// solver.factor_uploaded().unwrap();
    /// ```
    pub fn upload_slices(&mut self, shape: Shape, ld: usize, diag: &[T], sub: &[T]) -> Result<()> {
        crate::matrix::check_block_arrays(shape, ld, diag.len(), sub.len())?;
        self.upload_systems(shape, ld, diag, sub, shape.batch, true)
    }

    /// Copies the first `systems` systems of `diag`/`sub` (host layout of a
    /// [`BlockTridiag`] with leading dimension `ld`) into a plan for `plan_shape`; without
    /// `wait` only from [`Self::with_inputs`] (page-locked sources are read after return).
    fn upload_systems(&mut self, plan_shape: Shape, ld: usize, diag: &[T], sub: &[T], systems: usize, wait: bool) -> Result<()> {
        self.plan_for_input(plan_shape, None)?;
        let plan = self.plan.as_ref().expect("plan exists");
        let n = plan_shape.block;
        let cols = |blocks: usize| systems * blocks * n;
        let jobs =
            [(diag, plan_shape.nblocks, &plan.bufs.diag_in), (sub, plan_shape.nblocks - 1, &plan.bufs.sub_in)].map(|(src, blocks, dst)| {
                let from = Columns { width: n, cols: cols(blocks), ld };
                Upload::new(src, from, dst.ptr().addr(), Columns { ld: plan.bufs.ld, ..from })
            });
        // SAFETY: destinations are plan buffers sized for `plan_shape` (at least `systems`
        // systems) at pitch `ld`; without `wait`, `with_inputs` keeps the sources borrowed
        // until it has synchronized the stream.
        // The device checks the matrices (the factor's first kernels): no host scan.
        unsafe { self.staging().upload_all(&self.stream, &jobs, wait) }.map(|_| ())
    }

    /// The device input buffers of a plan for `shape` (created when the shape is new):
    /// `(diagonal blocks, sub-diagonal blocks, leading dimension)`, laid out as in a
    /// [`BlockTridiag`] at that leading dimension. Whoever writes the matrices there (on
    /// this solver's stream) then calls [`Self::factor_uploaded`].
    pub(crate) fn input_buffers(&mut self, shape: Shape) -> Result<(DevicePtr<T>, DevicePtr<T>, usize)> {
        self.plan_for_input(shape, None)?;
        let bufs = &self.plan.as_ref().expect("plan exists").bufs;
        Ok((bufs.diag_in.ptr(), bufs.sub_in.ptr(), bufs.ld))
    }

    /// Makes the plan for `shape` factor the `f64` matrix at `from` (a mixed-precision
    /// solver's, which keeps it on the device) instead of its own input buffers, rounding
    /// each value to `T` in the tiled engine's `prep`: the matrix is then read once, with
    /// no rounded copy written and read back. Returns whether the plan does so: only an
    /// `f32` plan on the tiled engine can; otherwise nothing changes and the caller writes
    /// the rounded matrix into [`Self::input_buffers`] as before. While set, the plan's own
    /// input buffers are not read; the factorization reads `from`, which must stay valid
    /// and hold the matrix when [`Self::factor_uploaded`] or a factor + solve runs.
    pub(crate) fn round_input_from(&mut self, shape: Shape, from: RoundingSource) -> Result<bool> {
        self.ensure_plan(shape)?;
        if T::BYTES != 4 || !matches!(self.plan.as_ref().expect("plan exists").engine, Engine::Tiled(_)) {
            return Ok(false);
        }
        self.plan_for_input(shape, Some(from))?;
        Ok(true)
    }

    /// The plan for `shape` (created when the shape is new), about to get a new matrix:
    /// not factored, and its factorization reading `rounding` (rounded by `prep`) or, with
    /// `None`, its own input buffers, which every other writer of the input fills. Every
    /// writer of the input calls this first. The factorization graphs bake `prep`'s
    /// arguments in: they are dropped when the source changes.
    fn plan_for_input(&mut self, shape: Shape, rounding: Option<RoundingSource>) -> Result<()> {
        self.ensure_plan(shape)?;
        self.factored = false;
        if rounding.is_none() {
            self.ensure_input_buffers()?;
        }
        let plan = self.plan.as_mut().expect("plan exists");
        if plan.bufs.rounding != rounding {
            plan.bufs.rounding = rounding;
            plan.factor_graph = None;
            plan.factor_solve_graph.clear();
        }
        Ok(())
    }

    /// Allocates the plan's own input buffers where it has none yet: a plan gets them from
    /// the first writer of its input, so that a plan whose `prep` rounds another solver's
    /// matrix ([`Self::round_input_from`]) holds none (a sixth of a mixed-precision
    /// solver's device memory). When they cannot be had, the plan goes too: nothing can
    /// then factor from input that was never written.
    fn ensure_input_buffers(&mut self) -> Result<()> {
        let bufs = &self.plan.as_ref().expect("plan exists").bufs;
        if bufs.has_input() {
            return Ok(());
        }
        let shape = bufs.shape;
        let (diag, sub) = input_lens::<T>(shape);
        let allocated = self.make_room(input_bytes::<T>(shape)).and_then(|()| {
            let st = &self.stream;
            Ok((DeviceBuffer::poisoned(st, diag)?, DeviceBuffer::poisoned(st, sub)?))
        });
        match allocated {
            Ok((diag_in, sub_in)) => {
                let bufs = &mut self.plan.as_mut().expect("plan exists").bufs;
                (bufs.diag_in, bufs.sub_in) = (diag_in, sub_in);
                Ok(())
            }
            Err(e) => {
                self.plan = None;
                Err(e)
            }
        }
    }

    /// The device right-hand-side buffer for `k` columns (allocated when needed) and the
    /// solve status words: whoever writes right-hand sides there (on this solver's stream)
    /// then calls [`Self::launch_solve`].
    pub(crate) fn rhs_buffer(&mut self, k: usize) -> Result<(DevicePtr<T>, DevicePtr<u64>)> {
        self.ensure_rhs(k)?;
        let plan = self.plan.as_ref().expect("plan exists");
        Ok((plan.rhs.as_ref().expect("rhs buffer").ptr(), plan.bufs.solve_info.ptr()))
    }

    /// Copies right-hand sides to the device (`b.ncols()` columns).
    pub fn upload_rhs(&mut self, b: &BlockVec<T>) -> Result<()> {
        // SAFETY: waited for.
        unsafe { self.upload_rhs_then(b, true) }
    }

    /// [`Self::upload_rhs`]; without `wait` (from [`Self::with_inputs`]) a page-locked
    /// `b` is only enqueued.
    ///
    /// # Safety
    /// Without `wait`, `b` stays alive and unchanged until the stream has been synchronized.
    unsafe fn upload_rhs_then(&mut self, b: &BlockVec<T>, wait: bool) -> Result<()> {
        self.check_rhs_shape(b)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.upload_rhs_values(b.as_slice(), b.ncols(), wait) }
    }

    fn check_rhs_shape(&self, b: &BlockVec<T>) -> Result<()> {
        let shape = self.plan.as_ref().ok_or(Error::NotFactored)?.bufs.shape;
        if b.shape() != shape {
            shape_err!("right-hand side shape {} does not match the factorization {shape}", b.shape());
        }
        Ok(())
    }

    /// [`Self::upload_rhs_then`] for a solve: a non-finite value of `b` is an error
    /// (`Error::NonFinite` with its system and block, as `BlockVec::validate`), found by
    /// the staging workers in the upload's own pass over `b`. The right-hand-side buffer
    /// may then hold part of `b`; nothing else changed.
    ///
    /// # Safety
    /// As [`Self::upload_rhs_then`].
    unsafe fn upload_rhs_checked(&mut self, b: &BlockVec<T>, wait: bool) -> Result<()> {
        self.check_rhs_shape(b)?;
        // SAFETY: forwarded from the caller.
        match unsafe { self.stage_rhs(b.as_slice(), b.ncols(), wait, true) }? {
            Some(at) => Err(crate::matrix::rhs_non_finite(b.shape(), b.ncols(), at)),
            None => Ok(()),
        }
    }

    /// Copies right-hand sides from the caller's buffer (`k` columns per system, laid
    /// out as in a [`BlockVec`]; the first systems when shorter) to the device: with
    /// [`Self::upload_slices`] for data in page-locked memory.
    pub fn upload_rhs_slice(&mut self, values: &[T], k: usize) -> Result<()> {
        // SAFETY: waited for.
        unsafe { self.upload_rhs_values(values, k, true) }
    }

    /// Copies `values` (the right-hand sides of the first systems, `k` columns each) to
    /// the start of the right-hand-side buffer ([`Self::upload_to_then`]).
    ///
    /// # Safety
    /// Without `wait`, `values` stays alive and unchanged until the stream has been
    /// synchronized.
    unsafe fn upload_rhs_values(&mut self, values: &[T], k: usize, wait: bool) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.stage_rhs(values, k, wait, false) }.map(|_| ())
    }

    /// [`Self::upload_rhs_values`], with `check_finite` also the index of the first
    /// non-finite value ([`Self::stage_into`]).
    ///
    /// # Safety
    /// As [`Self::upload_rhs_values`].
    unsafe fn stage_rhs(&mut self, values: &[T], k: usize, wait: bool, check_finite: bool) -> Result<Option<usize>> {
        self.ensure_rhs(k)?;
        let rhs = self.plan.as_ref().expect("plan exists").rhs.as_ref().expect("rhs buffer");
        // SAFETY: forwarded from the caller.
        unsafe { self.stage_into(values, rhs, wait, check_finite) }
    }

    /// Copies the device right-hand-side buffer (the solution after a solve) into `x`.
    pub fn download_rhs(&self, x: &mut BlockVec<T>) -> Result<()> {
        self.download_rhs_values(x.as_mut_slice())
    }

    /// Copies the first `out.len()` values of the device right-hand-side buffer (the
    /// solutions after a solve) into the caller's buffer.
    pub fn download_rhs_slice(&self, out: &mut [T]) -> Result<()> {
        self.download_rhs_values(out)
    }

    /// Copies the first `out.len()` values of the right-hand-side buffer into `out`.
    fn download_rhs_values(&self, out: &mut [T]) -> Result<()> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        self.download_from(plan.rhs.as_ref().ok_or(Error::NotFactored)?, out)
    }

    /// Copies `values` to the start of `dst` (a buffer used on this solver's stream)
    /// through the pinned staging chunks.
    pub(crate) fn upload_to(&self, values: &[T], dst: &DeviceBuffer<T>) -> Result<()> {
        // SAFETY: waited for.
        unsafe { self.upload_to_then(values, dst, true) }
    }

    /// [`Self::upload_to`]; without `wait` a page-locked `values` is only enqueued.
    ///
    /// # Safety
    /// Without `wait`, `values` stays alive and unchanged until the stream has been
    /// synchronized.
    unsafe fn upload_to_then(&self, values: &[T], dst: &DeviceBuffer<T>, wait: bool) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.stage_into(values, dst, wait, false) }.map(|_| ())
    }

    /// [`Self::upload_to_then`], with `check_finite` also the index of the first
    /// non-finite value of `values` (found in the staging pass).
    ///
    /// # Safety
    /// As [`Self::upload_to_then`].
    unsafe fn stage_into(&self, values: &[T], dst: &DeviceBuffer<T>, wait: bool, check_finite: bool) -> Result<Option<usize>> {
        if values.len() > dst.len() {
            shape_err!("{} values for a device buffer of {}", values.len(), dst.len());
        }
        let cols = Columns::flat(values.len());
        let job = Upload { check_finite, ..Upload::new(values, cols, dst.ptr().addr(), cols) };
        // SAFETY: inside the buffer (checked); the rest is the caller's contract.
        Ok(unsafe { self.staging().upload_all(&self.stream, &[job], wait) }?.map(|(_, at)| at))
    }

    /// Copies the first `out.len()` values of `src` (whose producers are on this solver's
    /// stream) into `out` through the pinned staging chunks.
    pub(crate) fn download_from(&self, src: &DeviceBuffer<T>, out: &mut [T]) -> Result<()> {
        if out.len() > src.len() {
            shape_err!("{} values requested from a device buffer of {}", out.len(), src.len());
        }
        let cols = Columns::flat(out.len());
        // SAFETY: inside the buffer (checked); its producers are on this stream.
        unsafe { self.staging().download(&self.stream, src.ptr().addr(), cols, out, cols) }
    }

    /// Copies the first `len` values of the right-hand-side buffer (the solutions after a
    /// solve) into `dst` on the device (stream-ordered).
    pub(crate) fn copy_rhs_to(&self, dst: &DeviceBuffer<T>, len: usize) -> Result<()> {
        let rhs = self.plan.as_ref().and_then(|p| p.rhs.as_ref()).ok_or(Error::NotFactored)?;
        dst.copy_from_device(rhs, len)
    }

    /// Copies the first `len` values of `src` into the right-hand-side buffer (sized
    /// beforehand by [`Self::rhs_buffer`]; stream-ordered).
    pub(crate) fn copy_to_rhs(&self, src: &DeviceBuffer<T>, len: usize) -> Result<()> {
        let rhs = self.plan.as_ref().and_then(|p| p.rhs.as_ref()).ok_or(Error::NotFactored)?;
        rhs.copy_from_device(src, len)
    }

    /// The first half of a solve from host memory: checks `b`, uploads it and enqueues the
    /// solve; the caller downloads the solutions and checks them.
    fn enqueue_host_solve(&mut self, b: &BlockVec<T>) -> Result<()> {
        if !self.factored {
            return Err(Error::NotFactored);
        }
        // SAFETY: waited for.
        timed("solve: upload and checks", || unsafe { self.upload_rhs_checked(b, true) })?;
        timed("solve: launch", || self.launch_solve())
    }

    /// The streams `steps` run on: the solver's, and a side stream for each lane they
    /// fork to (made here, before any capture).
    fn lanes(&self, steps: &[Step<'_, T>]) -> Result<Lanes<'_>> {
        let mut lanes = Lanes::single(&self.stream);
        for (lane, slot) in schedule::Lane::ALL.into_iter().zip(&self.side_streams) {
            if steps.iter().any(|s| s.forks() == Some(lane)) {
                let side = match slot.get() {
                    Some(side) => side,
                    None => {
                        let side = self.gpu.new_stream()?;
                        slot.get_or_init(|| side)
                    }
                };
                lanes.side[lane.index()] = Some(&**side);
            }
        }
        Ok(lanes)
    }

    /// Captures `steps` into a graph (their shared-memory limits raised first: setting a
    /// function attribute is not a stream operation).
    fn capture(&self, steps: &[Step<'_, T>]) -> Result<Graph> {
        for step in steps {
            step.reserve_shared()?;
        }
        let lanes = self.lanes(steps)?;
        self.captures.set(self.captures.get() + 1);
        // SAFETY: the steps were built from this solver's live plan buffers.
        Graph::capture(&self.stream, || unsafe { enqueue_all(steps, lanes) })
    }

    /// Runs the steps that `steps` builds directly (graphs off) or through the graph in
    /// `slot`, capturing it first when the slot is empty: a replay builds no step list.
    fn run<'k>(&self, steps: impl FnOnce() -> Vec<Step<'k, T>>, slot: &mut Option<Graph>) -> Result<()> {
        if !self.options.graphs {
            let steps = steps();
            // SAFETY: as in `capture`.
            return unsafe { enqueue_all(&steps, self.lanes(&steps)?) };
        }
        if slot.is_none() {
            *slot = Some(self.capture(&steps())?);
        }
        slot.as_ref().expect("graph").launch()
    }

    /// Enqueues the factorization of the uploaded matrices (graph replay when enabled)
    /// without waiting or checking: for timing with events. Check with [`Self::check_factor`].
    pub fn launch_factor(&mut self) -> Result<()> {
        let mut plan = self.plan.take().ok_or(Error::NotFactored)?;
        let mut graph = plan.factor_graph.take();
        let result = self.run(|| plan.engine.factor_steps(&plan.bufs, None), &mut graph);
        plan.factor_graph = graph;
        self.plan = Some(plan);
        result
    }

    /// Runs `steps_of(plan)` through the graph kept for the current right-hand-side count
    /// in `slot` (captured when there is none; the least recently used of more than
    /// [`KEYED_GRAPHS`] is dropped).
    fn run_keyed(
        &mut self,
        slot: fn(&mut Plan<T>) -> &mut Vec<(GraphKey, Graph)>,
        steps_of: impl for<'p> Fn(&'p Plan<T>, &SolveTarget<T>) -> Vec<Step<'p, T>>,
    ) -> Result<()> {
        let mut plan = self.plan.take().ok_or(Error::NotFactored)?;
        let result = (|| {
            let target = plan.target()?;
            let k = (plan.rhs_cols, plan.edge_cols);
            let graphs = slot(&mut plan);
            let mut graph = graphs.iter().position(|(gk, _)| *gk == k).map(|i| graphs.remove(i).1);
            let ran = self.run(|| steps_of(&plan, &target), &mut graph);
            let graphs = slot(&mut plan);
            if let Some(g) = graph {
                graphs.push((k, g));
                if graphs.len() > KEYED_GRAPHS {
                    graphs.remove(0);
                }
            }
            ran
        })();
        self.plan = Some(plan);
        result
    }

    /// Enqueues a solve of the uploaded right-hand sides with the current factor (graph
    /// replay when enabled), without waiting. Check with [`Self::check_solve`].
    pub fn launch_solve(&mut self) -> Result<()> {
        self.run_keyed(|p| &mut p.solve_graph, |plan, target| plan.engine.solve_steps(&plan.bufs, target, true))
    }

    /// Enqueues one sweep of a solve of the right-hand-side buffer ([`Sweep`]), without
    /// waiting (graph replay when enabled).
    pub(crate) fn launch_sweep(&mut self, sweep: Sweep) -> Result<()> {
        fn forward<T>(p: &mut Plan<T>) -> &mut Vec<(GraphKey, Graph)> {
            &mut p.forward_graph
        }
        fn backward<T>(p: &mut Plan<T>) -> &mut Vec<(GraphKey, Graph)> {
            &mut p.backward_graph
        }
        let slot = if sweep == Sweep::Forward { forward::<T> } else { backward::<T> };
        self.run_keyed(slot, |plan, target| plan.engine.sweep_steps(&plan.bufs, target, sweep))
    }

    /// Factor + solve up to the download: checks `b` against `a`, then either returns the
    /// chunk plan of a batch that does not fit at once (nothing enqueued) or uploads both,
    /// launches the factor + solve and checks the factorization (waits), so that a failure
    /// is reported before anything is written back.
    fn factor_solve_enqueue(&mut self, a: &BlockTridiag<T>, b: &BlockVec<T>) -> Result<Option<Deferred>> {
        if a.shape() != b.shape() {
            shape_err!("right-hand side shape {} does not match the matrix {}", b.shape(), a.shape());
        }
        let chunks = match timed("factor+solve: chunk plan", || self.chunk_plan(a.shape(), b.ncols())) {
            // Not even one system fits: its chain in segments, when it has blocks to cut.
            Err(Error::OutOfMemory { .. }) if a.shape().nblocks >= 3 => {
                let target = self.segment_target(a.shape(), b.ncols())?;
                timed("factor+solve: checks", || b.validate())?;
                return Ok(Some(Deferred::Segments(target)));
            }
            other => other?,
        };
        if chunks.chunks > 1 {
            // The chunks upload `b` piece by piece: check it whole first.
            timed("factor+solve: checks", || b.validate())?;
            return Ok(Some(Deferred::Chunks(chunks)));
        }
        self.with_inputs(Some(a), Some(b), |s| {
            timed("factor+solve: launch, check (waits)", || {
                s.launch_factor_solve()?;
                s.check_factor()
            })
        })?;
        Ok(None)
    }

    /// Enqueues the factorization of the uploaded matrices and the solve of the uploaded
    /// right-hand sides; the fused and chain engines interlace the forward substitution
    /// with the factorization where their shared memory allows, the tiled engine runs it
    /// beside the factorization, a level behind.
    pub fn launch_factor_solve(&mut self) -> Result<()> {
        self.run_keyed(|p| &mut p.factor_solve_graph, |plan, target| plan.engine.factor_solve_steps(&plan.bufs, target))
    }

    /// [`Self::launch_factor_solve`] with the last `edge_cols` right-hand-side columns
    /// solved on the edge nodes only (`SolveArgs::edge_from`): those columns must be zero
    /// outside the blocks of nodes with no left or no right neighbour, and their solution
    /// is right only in such blocks (the segment path's pass 1, `chunked.rs`).
    pub(super) fn launch_factor_solve_edges(&mut self, edge_cols: usize) -> Result<()> {
        let plan = self.plan.as_mut().ok_or(Error::NotFactored)?;
        plan.edge_cols = edge_cols;
        let launched = self.launch_factor_solve();
        if let Some(plan) = self.plan.as_mut() {
            plan.edge_cols = 0;
        }
        launched
    }

    /// Runs the factorization and a solve of the uploaded data kernel by kernel with an
    /// event pair around each launch, and returns `(kernel, level, grid, threads,
    /// shared bytes, registers, microseconds)` per launch: where the time goes.
    pub fn profile(&mut self) -> Result<Vec<LaunchTiming>> {
        self.profile_steps(false)
    }

    /// [`Self::profile`] for the launches of [`Self::launch_factor_solve`]: the factor with
    /// the forward substitution interlaced where the engine does that, then what is left of
    /// the solve (on one stream, in the order the graph would run them).
    pub fn profile_factor_solve(&mut self) -> Result<Vec<LaunchTiming>> {
        self.profile_steps(true)
    }

    fn profile_steps(&mut self, factor_solve: bool) -> Result<Vec<LaunchTiming>> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let target = plan.target().map_err(|_| Error::Shape("upload right-hand sides before profiling".into()))?;
        let steps = if factor_solve {
            plan.engine.factor_solve_steps(&plan.bufs, &target)
        } else {
            let mut steps = plan.engine.factor_steps(&plan.bufs, None);
            steps.extend(plan.engine.solve_steps(&plan.bufs, &target, true));
            steps
        };
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut out = Vec::new();
        for step in &steps {
            step.reserve_shared()?;
            let t0 = self.stream.record_event(flags)?;
            // SAFETY: built from this solver's live plan buffers.
            unsafe { step.enqueue(Lanes::single(&self.stream))? };
            let t1 = self.stream.record_event(flags)?;
            t1.synchronize()?;
            // Side steps run in list order here: timed as the others.
            let launch = if let Step::Side(_, inner) = step { &**inner } else { step };
            if let Step::Launch { kernel, level, cfg, .. } = launch {
                let micros = 1e3 * t0.elapsed_ms(&t1)? as f64;
                out.push((
                    kernel.name().to_string(),
                    *level,
                    cfg.grid.0 * cfg.grid.1,
                    cfg.block.0,
                    cfg.shared_bytes,
                    kernel.registers()?,
                    micros,
                ));
            }
        }
        Ok(out)
    }

    /// Waits for the stream and turns the factor status words into a result.
    pub fn check_factor(&mut self) -> Result<()> {
        let systems = self.plan.as_ref().ok_or(Error::NotFactored)?.bufs.shape.batch;
        self.check_factor_systems(systems, 0)
    }

    /// [`Self::check_factor`] over the first `systems` systems of the plan, reported as
    /// systems `first..` of the caller's batch.
    fn check_factor_systems(&mut self, systems: usize, first: usize) -> Result<()> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let mut info = vec![0u64; systems];
        plan.bufs.info.copy_to_host(&mut info)?;
        let tol = crate::scalar::wide(T::symmetry_tolerance());
        for (system, &key) in info.iter().enumerate() {
            let Some((level, code, block)) = decode_info(key) else { continue };
            self.factored = false;
            let (block, level, system) = (block as usize, level as usize, system + first);
            return Err(match InfoCode::from_u32(code) {
                Some(InfoCode::NonFinite) => {
                    Error::NonFinite { what: "a diagonal block or its adjacent sub-diagonal blocks", system, block }
                }
                Some(InfoCode::NotSymmetric) => Error::NotSymmetric { system, block, row: 0, col: 0, tol },
                Some(InfoCode::NonFiniteSolution) => Error::NonFiniteSolution { system, block },
                _ => Error::NotPositiveDefinite { system, block, level },
            });
        }
        self.factored = true;
        Ok(())
    }

    /// Waits for the stream and reports a non-finite solution, if any.
    pub fn check_solve(&self) -> Result<()> {
        let systems = self.plan.as_ref().ok_or(Error::NotFactored)?.bufs.shape.batch;
        self.check_solve_systems(systems, 0)
    }

    /// [`Self::check_solve`] over the first `systems` systems, reported from `first`.
    fn check_solve_systems(&self, systems: usize, first: usize) -> Result<()> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let mut info = vec![0u64; systems];
        plan.bufs.solve_info.copy_to_host(&mut info)?;
        for (system, &key) in info.iter().enumerate() {
            if let Some((_, _, block)) = decode_info(key) {
                return Err(Error::NonFiniteSolution { system: system + first, block: block as usize });
            }
        }
        Ok(())
    }

    /// Factors the uploaded matrices and checks the result.
    pub fn factor_uploaded(&mut self) -> Result<()> {
        self.launch_factor()?;
        self.check_factor()
    }

    /// Solves for several right-hand-side sets at once, each on a stream of its own: the
    /// streams wait for an event recorded after the factorization, then run concurrently
    /// on the shared factor with their own buffers. The sets may have different numbers of
    /// columns.
    pub fn solve_many(&mut self, sets: &[BlockVec<T>]) -> Result<Vec<BlockVec<T>>> {
        if !self.factored {
            return Err(Error::NotFactored);
        }
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let shape = plan.bufs.shape;
        for b in sets {
            if b.shape() != shape {
                shape_err!("right-hand side shape {} does not match the factorization {shape}", b.shape());
            }
            b.validate()?;
        }
        let ready = self.stream.record_event(None)?;
        let mut jobs = Vec::with_capacity(sets.len());
        for b in sets {
            let stream = self.gpu.new_stream()?;
            stream.wait(&ready)?;
            let rhs = DeviceBuffer::<T>::poisoned(&stream, b.as_slice().len())?;
            let cols = Columns::flat(b.as_slice().len());
            // SAFETY: the buffer was sized for these values right above.
            unsafe { self.staging().upload(&stream, b.as_slice(), cols, rhs.ptr().addr(), cols)? };
            let solve_info = DeviceBuffer::<u64>::poisoned(&stream, solve_status_words(shape))?;
            let target = SolveTarget::new(rhs.ptr().as_mut_ptr(), &solve_info, shape, b.ncols());
            let steps = plan.engine.solve_steps(&plan.bufs, &target, true);
            // SAFETY: the factor buffers of the live plan and this job's own buffers, kept
            // alive in `jobs` until the results are copied back.
            unsafe { enqueue_all(&steps, Lanes::single(&stream))? };
            jobs.push((rhs, solve_info, b, stream));
        }
        let mut outs = Vec::with_capacity(sets.len());
        for (rhs, solve_info, b, stream) in jobs {
            // Zero pages the download writes first: a clone of `b` would copy values the
            // download overwrites (docs/perf-notes.md entry 64).
            let mut x = BlockVec::zeros(b.shape(), b.ncols())?;
            let cols = Columns::flat(x.as_slice().len());
            // SAFETY: the job's own buffer; its solve is enqueued on `stream`.
            unsafe { self.staging().download(&stream, rhs.ptr().addr(), cols, x.as_mut_slice(), cols)? };
            let mut info = vec![0u64; shape.batch];
            solve_info.copy_to_host(&mut info)?;
            if let Some((system, (_, _, block))) = info.iter().enumerate().find_map(|(s, k)| decode_info(*k).map(|d| (s, d))) {
                return Err(Error::NonFiniteSolution { system, block: block as usize });
            }
            outs.push(x);
        }
        Ok(outs)
    }
}

impl<T: Scalar> Factorization<T> for GpuCholesky<T> {
    fn factor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.with_inputs(Some(a), None, |s| timed("factor: factor and check (waits)", || s.factor_uploaded()))
    }

    fn solve_in_place(&mut self, b: &mut BlockVec<T>) -> Result<()> {
        self.enqueue_host_solve(b)?;
        timed("solve: download (waits)", || self.download_rhs(b))?;
        self.check_solve()
    }

    fn solve(&mut self, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        self.enqueue_host_solve(b)?;
        // Not a clone of `b` that the download overwrites: fresh zero pages, first written
        // by the download's workers.
        let mut x = BlockVec::zeros(b.shape(), b.ncols())?;
        timed("solve: download (waits)", || self.download_rhs(&mut x))?;
        self.check_solve()?;
        Ok(x)
    }

    fn factor_solve(&mut self, a: &BlockTridiag<T>, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        match self.factor_solve_enqueue(a, b)? {
            Some(Deferred::Chunks(chunks)) => {
                // Fresh zero pages that each chunk's download writes first: a clone of `b`
                // would copy values the downloads overwrite (a one-thread clone here was
                // half of a 69 GB batch's time, docs/perf-notes.md entry 64).
                let mut x = BlockVec::zeros(b.shape(), b.ncols())?;
                self.factor_solve_chunked(a, Some(b), chunks, &mut x)?;
                return Ok(x);
            }
            Some(Deferred::Segments(target)) => return self.factor_solve_segmented(a, b, target),
            None => {}
        }
        let mut x = BlockVec::zeros(b.shape(), b.ncols())?;
        self.download_rhs(&mut x)?;
        self.check_solve()?;
        Ok(x)
    }

    fn factor_solve_in_place(&mut self, a: &BlockTridiag<T>, b: &mut BlockVec<T>) -> Result<()> {
        match self.factor_solve_enqueue(a, b)? {
            Some(Deferred::Chunks(chunks)) => {
                // Each chunk's rows are uploaded before its solutions come back over them,
                // so the chunks read `b` itself; the copy is what a failure in a later
                // chunk restores, after earlier chunks wrote their solutions.
                let rhs = b.clone();
                let result = self.factor_solve_chunked(a, None, chunks, b);
                if result.is_err() {
                    b.as_mut_slice().copy_from_slice(rhs.as_slice());
                }
                return result;
            }
            Some(Deferred::Segments(target)) => {
                // Into `b`'s own memory, which may be page-locked by the caller.
                let x = self.factor_solve_segmented(a, b, target)?;
                super::transfer::parallel_copy(x.as_slice(), b.as_mut_slice());
                return Ok(());
            }
            None => {}
        }
        timed("factor+solve: download (waits)", || self.download_rhs(b))?;
        self.check_solve()
    }

    fn log_determinant(&mut self) -> Result<Vec<f64>> {
        let plan = self.factored_plan().ok_or(Error::NotFactored)?;
        let b = &plan.bufs;
        let kernel = self.gpu.kernel(kernel_name::<T>(names::LOG_DET_PARTS).as_str())?;
        let args = LogDetArgs {
            diag: b.diag.ptr().as_ptr(),
            out: b.logdet.ptr().as_mut_ptr(),
            ld: b.ld as u32,
            n: b.shape.block as u32,
            nblocks: b.shape.nblocks as u32,
        };
        let cfg = LaunchConfig::linear(b.shape.batch as u32, LOGDET_THREADS, LOGDET_SHARED_BYTES as u32);
        // SAFETY: `diag` holds the plan's `S N` factored blocks of `ld x n` (factored: the
        // diagonals are positive and finite), `logdet` two values per system; the launch
        // shape is the kernel's.
        unsafe { kernel.launch(&self.stream, cfg, (args,))? };
        Ok(crate::logdet::from_mantissa_exponent(&b.logdet.to_vec()?))
    }

    fn selected_inverse(&mut self) -> Result<BlockTridiag<T>> {
        self.selinv_download()
    }

    fn shape(&self) -> Option<Shape> {
        self.factored_plan().map(|p| p.bufs.shape)
    }

    fn name(&self) -> &'static str {
        "gpu"
    }
}
