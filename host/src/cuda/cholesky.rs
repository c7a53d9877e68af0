//! [`GpuCholesky`]: the nested-dissection block Cholesky on the GPU.
//!
//! Per shape the solver owns a plan: device buffers for the input blocks, the factor
//! (`L_ii`, `L_li`, `L_ri` per node, leading dimension padded to 64 bytes), the
//! right-hand sides and the per-system status words, plus CUDA graphs of the launch
//! sequences. A factorization is one H2D copy and one graph launch; `refactor` with new
//! values and repeated `solve` calls reuse everything.
//!
//! Launch sequence of a factorization (one graph): `factor_prep` (status words, update
//! accumulators), then `factor_level` for levels `0..L`. A solve: forward levels `0..L`,
//! backward levels `L-1..0`. The interlaced variant passes the right-hand sides to the
//! factor kernels, which then also do the forward substitution.

use super::context::Gpu;
use super::graph::Graph;
use super::launch::{Kernel, LaunchConfig};
use super::memory::{DeviceBuffer, Loc, copy_2d};
use crate::error::{Error, Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::Scalar;
use crate::solver::Factorization;
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::layout::{levels, nodes_in_level, round_up};
use blocktri_device::level::{
    FactorArgs, InfoCode, PANEL_SIZES, ROW_THREADS, SolveArgs, decode_info, factor_panel_shared_bytes, factor_rows_shared_bytes,
    factor_shared_bytes, panel_size, panel_threads, row_size, solve_panel_shared_bytes, solve_rows_shared_bytes, solve_shared_bytes,
};
use cudarc::driver::{CudaStream, result};
use std::sync::Arc;

/// Tuning and behaviour of [`GpuCholesky`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// Capture the launch sequences into CUDA graphs and replay them (default: true).
    pub graphs: bool,
    /// Threads per block of the factor kernels (default: chosen from `n`).
    pub factor_threads: Option<u32>,
    /// Right-hand-side columns processed per pass of a solve kernel (default 32).
    pub rhs_chunk: u32,
    /// Which kernel family runs (default: chosen from `n` and the precision).
    pub kernels: KernelFamily,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions { graphs: true, factor_threads: None, rhs_chunk: 32, kernels: KernelFamily::Auto }
    }
}

/// The level-kernel family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelFamily {
    /// The family measured fastest for the block size (see `docs/perf-notes.md`):
    /// register-resident rows up to `n = 16` (`n = 32` in `f32`), shared-memory panels up
    /// to `n = 96`, the generic kernels above.
    #[default]
    Auto,
    /// Always the generic shared-memory kernels (any `n` that fits in shared memory).
    Generic,
    /// The register-resident kernels (`blocktri_device::level::rows`; an error for `n > 32`).
    Rows,
    /// The shared-memory panel kernels (`blocktri_device::level::panel`; an error for `n > 96`).
    Panel,
}

/// The kernels a plan runs, with their padded block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Generic,
    Rows(usize),
    Panel(usize),
}

impl Variant {
    /// The variant `family` picks for block size `n` in precision `T`.
    fn choose<T: Scalar>(family: KernelFamily, n: usize) -> Result<Self> {
        let unsupported = |what: &str, max: usize| Error::Unsupported(format!("the {what} kernels support n <= {max}, got n = {n}"));
        Ok(match family {
            KernelFamily::Generic => Variant::Generic,
            KernelFamily::Rows => Variant::Rows(row_size(n).ok_or_else(|| unsupported("register-resident", 32))?),
            KernelFamily::Panel => Variant::Panel(panel_size(n).ok_or_else(|| unsupported("panel", 96))?),
            KernelFamily::Auto => {
                let rows_limit = if T::BYTES == 4 { 32 } else { 16 };
                match (row_size(n), panel_size(n)) {
                    (Some(np), _) if n <= rows_limit => Variant::Rows(np),
                    (_, Some(np)) => Variant::Panel(np),
                    _ => Variant::Generic,
                }
            }
        })
    }

    /// Interlaced right-hand sides in the factor kernels (the panel kernels factor only).
    fn interlaces(self) -> bool {
        !matches!(self, Variant::Panel(_))
    }
}

/// Threads per factor block: enough for the `3n x n` panel updates to keep every warp busy.
fn default_factor_threads(n: usize) -> u32 {
    match n {
        0..=8 => 64,
        9..=16 => 128,
        17..=32 => 256,
        _ => 512,
    }
}

fn solve_threads(n: usize) -> u32 {
    if n <= 16 {
        64
    } else if n <= 32 {
        128
    } else {
        256
    }
}

struct Plan<T> {
    shape: Shape,
    ld: usize,
    diag_in: DeviceBuffer<T>,
    sub_in: DeviceBuffer<T>,
    diag: DeviceBuffer<T>,
    left: DeviceBuffer<T>,
    right: DeviceBuffer<T>,
    info: DeviceBuffer<u64>,
    solve_info: DeviceBuffer<u64>,
    rhs: Option<DeviceBuffer<T>>,
    rhs_cols: usize,
    prep: Kernel,
    factor: Kernel,
    forward: Kernel,
    backward: Kernel,
    factor_threads: u32,
    /// Which kernels `factor`, `forward` and `backward` are.
    variant: Variant,
    /// Shared memory per block of the device, bytes.
    max_shared: u32,
    factor_graph: Option<Graph>,
    solve_graph: Option<(usize, Graph)>,
    factor_solve_graph: Option<(usize, Graph)>,
}

/// Shared memory of the factor kernel of a variant with `nrhs` interlaced right-hand-side
/// columns.
fn factor_smem(variant: Variant, n: usize, nrhs: usize, elem: usize) -> u32 {
    (match variant {
        Variant::Rows(np) => factor_rows_shared_bytes(np, nrhs, elem),
        Variant::Panel(np) => factor_panel_shared_bytes(np, elem),
        Variant::Generic => factor_shared_bytes(n, nrhs, elem),
    }) as u32
}

impl<T: Scalar> Plan<T> {
    /// Right-hand-side columns per pass of the generic solve kernels: the option, at most
    /// the columns there are and what fits in shared memory.
    fn chunk(&self, options: &GpuOptions) -> usize {
        let wanted = (self.rhs_cols as u32).min(options.rhs_chunk.max(1)).max(1) as usize;
        fitting_chunk(self.shape.block, wanted, T::BYTES, self.max_shared)
    }

    /// Launch shape of the factor kernel on level `m`.
    fn factor_config(&self, m: u32, nrhs: usize) -> LaunchConfig {
        let grid = self.shape.batch as u32 * nodes_in_level(self.shape.nblocks as u32, m);
        LaunchConfig::linear(grid, self.factor_threads, factor_smem(self.variant, self.shape.block, nrhs, T::BYTES))
    }

    /// Launch shape of the solve kernels on level `m`.
    fn solve_config(&self, m: u32, chunk: usize) -> LaunchConfig {
        let grid = self.shape.batch as u32 * nodes_in_level(self.shape.nblocks as u32, m);
        match self.variant {
            Variant::Rows(np) => LaunchConfig::linear(grid, ROW_THREADS, solve_rows_shared_bytes(np, T::BYTES) as u32),
            Variant::Panel(np) => LaunchConfig::linear(grid, panel_threads(np), solve_panel_shared_bytes(np, T::BYTES) as u32),
            Variant::Generic => {
                LaunchConfig::linear(grid, solve_threads(self.shape.block), solve_shared_bytes(self.shape.block, chunk, T::BYTES) as u32)
            }
        }
    }

    /// Raises the kernels' shared-memory limits before any capture (setting a function
    /// attribute is not a stream operation).
    fn reserve_shared(&self, nrhs: usize, chunk: usize) -> Result<()> {
        self.factor.reserve_shared(self.factor_config(0, nrhs).shared_bytes)?;
        let smem = self.solve_config(0, chunk).shared_bytes;
        self.forward.reserve_shared(smem)?;
        self.backward.reserve_shared(smem)
    }
}

/// One launch of [`GpuCholesky::profile`]: `(kernel, level, grid, threads, shared bytes,
/// registers, microseconds)`.
pub type LaunchTiming = (String, u32, u32, u32, u32, i32, f64);

/// Nested-dissection block Cholesky on the GPU (fused level kernels written in Rust).
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
}

impl<T: Scalar> std::fmt::Debug for GpuCholesky<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCholesky")
            .field("device", &self.gpu.info().name)
            .field("shape", &self.plan.as_ref().map(|p| p.shape))
            .field("factored", &self.factored)
            .finish()
    }
}

/// Largest block size the generic kernels support with `smem` bytes of shared memory per
/// block (factor without interlaced right-hand sides, solve one column per pass).
fn max_generic_block(smem: u32, elem_bytes: usize) -> usize {
    let fits = |n| factor_shared_bytes(n, 0, elem_bytes).max(solve_shared_bytes(n, 1, elem_bytes)) <= smem as usize;
    (1..=512).take_while(|&n| fits(n)).last().unwrap_or(0)
}

/// The largest number of right-hand-side columns per pass, at most `wanted`, for which the
/// generic solve kernels of block size `n` fit in `smem` bytes (at least 1).
fn fitting_chunk(n: usize, wanted: usize, elem_bytes: usize, smem: u32) -> usize {
    (1..=wanted.max(1)).rev().find(|&c| solve_shared_bytes(n, c, elem_bytes) <= smem as usize).unwrap_or(1)
}

/// Largest block size some kernel family supports with `smem` bytes of shared memory per
/// block.
pub(crate) fn max_fused_block(smem: u32, elem_bytes: usize) -> usize {
    let panel = PANEL_SIZES
        .iter()
        .copied()
        .filter(|&np| factor_panel_shared_bytes(np, elem_bytes).max(solve_panel_shared_bytes(np, elem_bytes)) <= smem as usize)
        .max()
        .unwrap_or(0);
    max_generic_block(smem, elem_bytes).max(panel)
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
        Ok(GpuCholesky { gpu, stream, options, plan: None, factored: false })
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The stream the solver's work runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Largest block size `n` this device supports for `T`.
    pub fn max_block_size(&self) -> usize {
        max_fused_block(self.gpu.info().max_shared_per_block, T::BYTES)
    }

    /// Device bytes a plan for `shape` needs (with `nrhs` right-hand-side columns).
    pub fn required_memory(shape: Shape, nrhs: usize) -> usize {
        let ld = Self::padded_ld(shape.block);
        let blk = ld * shape.block * T::BYTES;
        let blocks = shape.batch * (5 * shape.nblocks - 1);
        blocks * blk + shape.batch * shape.dim() * nrhs * T::BYTES + 16 * shape.batch
    }

    /// Leading dimension of the device blocks: `n` rounded up to 64 bytes.
    pub fn padded_ld(n: usize) -> usize {
        round_up(n as u32, (64 / T::BYTES) as u32) as usize
    }

    fn ensure_plan(&mut self, shape: Shape) -> Result<()> {
        if self.plan.as_ref().is_some_and(|p| p.shape == shape) {
            return Ok(());
        }
        self.plan = None;
        self.factored = false;
        let max_n = self.max_block_size();
        if shape.block > max_n {
            return Err(Error::Unsupported(format!(
                "block size n = {} is not yet supported on the GPU: the fused kernels hold a 3n x n panel in shared memory and fit n <= {max_n} for {} on this device ({} bytes per block); use a CPU backend",
                shape.block,
                T::PRECISION,
                self.gpu.info().max_shared_per_block
            )));
        }
        if shape.batch * shape.nblocks > u32::MAX as usize / 2 {
            shape_err!("{shape}: too many blocks for one launch grid");
        }
        self.gpu.check_memory(Self::required_memory(shape, 1))?;
        let ld = Self::padded_ld(shape.block);
        let blk = ld * shape.block;
        let (s, nb) = (shape.batch, shape.nblocks);
        let st = &self.stream;
        let k = |name: &str| self.gpu.kernel(kernel_name::<T>(name).as_str());
        let variant = Variant::choose::<T>(self.options.kernels, shape.block)?;
        let smem = self.gpu.info().max_shared_per_block;
        let needed = match variant {
            Variant::Rows(np) => factor_rows_shared_bytes(np, 0, T::BYTES).max(solve_rows_shared_bytes(np, T::BYTES)),
            Variant::Panel(np) => factor_panel_shared_bytes(np, T::BYTES).max(solve_panel_shared_bytes(np, T::BYTES)),
            Variant::Generic => factor_shared_bytes(shape.block, 0, T::BYTES).max(solve_shared_bytes(shape.block, 1, T::BYTES)),
        };
        if needed > smem as usize {
            return Err(Error::Unsupported(format!(
                "block size n = {} with the {variant:?} kernels needs {needed} bytes of shared memory per block, this device has {smem}; the largest supported n for {} is {max_n}",
                shape.block,
                T::PRECISION
            )));
        }
        let (factor, forward, backward) = match variant {
            Variant::Rows(np) => (
                k(&format!("{}{np}", names::FACTOR_ROWS))?,
                k(&format!("{}{np}", names::SOLVE_FORWARD_ROWS))?,
                k(&format!("{}{np}", names::SOLVE_BACKWARD_ROWS))?,
            ),
            Variant::Panel(np) => (
                k(&format!("{}{np}", names::FACTOR_PANEL))?,
                k(&format!("{}{np}", names::SOLVE_FORWARD_PANEL))?,
                k(&format!("{}{np}", names::SOLVE_BACKWARD_PANEL))?,
            ),
            Variant::Generic => (k(names::FACTOR_LEVEL)?, k(names::SOLVE_FORWARD)?, k(names::SOLVE_BACKWARD)?),
        };
        let hw_threads = factor.max_threads_per_block()?;
        let factor_threads = match variant {
            Variant::Rows(_) => ROW_THREADS,
            Variant::Panel(np) => panel_threads(np),
            Variant::Generic => {
                self.options.factor_threads.unwrap_or_else(|| default_factor_threads(shape.block)).min(hw_threads / 32 * 32).max(32)
            }
        };
        let plan = Plan {
            shape,
            ld,
            diag_in: DeviceBuffer::poisoned(st, s * nb * blk)?,
            sub_in: DeviceBuffer::poisoned(st, (s * (nb - 1) * blk).max(1))?,
            diag: DeviceBuffer::poisoned(st, s * nb * blk)?,
            left: DeviceBuffer::poisoned(st, s * nb * blk)?,
            right: DeviceBuffer::poisoned(st, s * nb * blk)?,
            info: DeviceBuffer::poisoned(st, s)?,
            solve_info: DeviceBuffer::poisoned(st, s)?,
            rhs: None,
            rhs_cols: 0,
            prep: k(names::FACTOR_PREP)?,
            factor,
            forward,
            backward,
            factor_threads,
            variant,
            max_shared: self.gpu.info().max_shared_per_block,
            factor_graph: None,
            solve_graph: None,
            factor_solve_graph: None,
        };
        self.plan = Some(plan);
        Ok(())
    }

    fn ensure_rhs(&mut self, k: usize) -> Result<()> {
        let plan = self.plan.as_mut().ok_or(Error::NotFactored)?;
        if plan.rhs_cols == k {
            return Ok(());
        }
        let len = plan.shape.batch * plan.shape.dim() * k;
        if plan.rhs.as_ref().is_none_or(|r| r.len() < len) {
            self.gpu.check_memory(len * T::BYTES)?;
            plan.rhs = Some(DeviceBuffer::poisoned(&self.stream, len)?);
        }
        plan.rhs_cols = k;
        plan.solve_graph = None;
        plan.factor_solve_graph = None;
        Ok(())
    }

    /// Copies the matrices to the device plan (creating it if the shape is new), without
    /// factoring. With [`Self::factor_uploaded`] this separates the transfer from the
    /// factorization (the benchmark times them apart).
    pub fn upload(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        let shape = a.shape();
        self.ensure_plan(shape)?;
        self.factored = false;
        let plan = self.plan.as_ref().expect("plan exists");
        let n = shape.block;
        // SAFETY: destinations are plan buffers sized for `shape` at pitch `ld`.
        unsafe {
            copy_2d(
                &self.stream,
                Loc::Host(a.diag()),
                a.ld(),
                Loc::Device(plan.diag_in.ptr().addr()),
                plan.ld,
                n,
                shape.batch * shape.nblocks * n,
            )?;
            copy_2d(
                &self.stream,
                Loc::Host(a.sub()),
                a.ld(),
                Loc::Device(plan.sub_in.ptr().addr()),
                plan.ld,
                n,
                shape.batch * (shape.nblocks - 1) * n,
            )?;
        }
        // The copies read pageable host memory; finishing them here keeps `a` free to change.
        self.stream.synchronize()?;
        Ok(())
    }

    /// Copies right-hand sides to the device (`b.ncols()` columns).
    pub fn upload_rhs(&mut self, b: &BlockVec<T>) -> Result<()> {
        let shape = self.plan.as_ref().ok_or(Error::NotFactored)?.shape;
        if b.shape() != shape {
            shape_err!("right-hand side shape {} does not match the factorization {shape}", b.shape());
        }
        self.ensure_rhs(b.ncols())?;
        let plan = self.plan.as_mut().expect("plan exists");
        plan.rhs.as_mut().expect("rhs buffer").copy_from_host(b.as_slice())?;
        self.stream.synchronize()?;
        Ok(())
    }

    /// Copies the device right-hand-side buffer (the solution after a solve) into `x`.
    pub fn download_rhs(&self, x: &mut BlockVec<T>) -> Result<()> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let rhs = plan.rhs.as_ref().ok_or(Error::NotFactored)?;
        rhs.copy_to_host(x.as_mut_slice())
    }

    fn factor_args(&self, plan: &Plan<T>, level: u32, with_rhs: bool) -> FactorArgs<T> {
        FactorArgs {
            diag_in: plan.diag_in.ptr().as_ptr(),
            diag: plan.diag.ptr().as_mut_ptr(),
            left: plan.left.ptr().as_mut_ptr(),
            right: plan.right.ptr().as_mut_ptr(),
            sub: plan.sub_in.ptr().as_ptr(),
            info: plan.info.ptr().as_mut_ptr(),
            rhs: if with_rhs { plan.rhs.as_ref().map_or(std::ptr::null_mut(), |r| r.ptr().as_mut_ptr()) } else { std::ptr::null_mut() },
            sym_tol: T::symmetry_tolerance(),
            ld: plan.ld as u32,
            n: plan.shape.block as u32,
            nblocks: plan.shape.nblocks as u32,
            systems: plan.shape.batch as u32,
            level,
            nrhs: if with_rhs { plan.rhs_cols as u32 } else { 0 },
        }
    }

    fn solve_args(&self, plan: &Plan<T>, level: u32) -> SolveArgs<T> {
        SolveArgs {
            diag: plan.diag.ptr().as_ptr(),
            left: plan.left.ptr().as_ptr(),
            right: plan.right.ptr().as_ptr(),
            rhs: plan.rhs.as_ref().map_or(std::ptr::null_mut(), |r| r.ptr().as_mut_ptr()),
            info: plan.solve_info.ptr().as_mut_ptr(),
            ld: plan.ld as u32,
            n: plan.shape.block as u32,
            nblocks: plan.shape.nblocks as u32,
            level,
            nrhs: plan.rhs_cols as u32,
            chunk: plan.chunk(&self.options) as u32,
        }
    }

    /// Enqueues the factor launches (with the forward substitution when `with_rhs`).
    fn enqueue_factor(&self, plan: &Plan<T>, with_rhs: bool) -> Result<()> {
        let shape = plan.shape;
        let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
        let nrhs = if with_rhs { plan.rhs_cols } else { 0 };
        let prep_grid = (s * (nb / 2)).max(1);
        // SAFETY (all launches): argument structs point to plan buffers sized for `shape`,
        // grids and shared memory follow each kernel's documented contract.
        unsafe {
            plan.prep.launch(&self.stream, LaunchConfig::linear(prep_grid, 128, 0), (self.factor_args(plan, 0, with_rhs),))?;
            for m in 0..levels(nb) {
                plan.factor.launch(&self.stream, plan.factor_config(m, nrhs), (self.factor_args(plan, m, with_rhs),))?;
            }
        }
        Ok(())
    }

    /// Enqueues the solve launches; `forward` false skips the forward sweep (after an
    /// interlaced factorization).
    fn enqueue_solve(&self, plan: &Plan<T>, forward: bool) -> Result<()> {
        let shape = plan.shape;
        let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
        let chunk = plan.chunk(&self.options);
        // SAFETY: the status words are plan buffers of `s` elements.
        unsafe { result::memset_d8_async(plan.solve_info.ptr().addr(), 0xff, s as usize * 8, self.stream.cu_stream()) }?;
        let top = levels(nb);
        // SAFETY (launches): as in `enqueue_factor`; the factor is complete in stream order.
        unsafe {
            if forward {
                for m in 0..top {
                    plan.forward.launch(&self.stream, plan.solve_config(m, chunk), (self.solve_args(plan, m),))?;
                }
            }
            for m in (0..top).rev() {
                plan.backward.launch(&self.stream, plan.solve_config(m, chunk), (self.solve_args(plan, m),))?;
            }
        }
        Ok(())
    }

    /// Shared memory the kernels will use, raised before any graph capture (setting a
    /// function attribute is not a stream operation).
    fn prepare_kernels(&self, plan: &Plan<T>, with_rhs: bool) -> Result<()> {
        plan.reserve_shared(if with_rhs { plan.rhs_cols } else { 0 }, plan.chunk(&self.options))
    }

    fn capture(&self, enqueue: impl FnOnce() -> Result<()>) -> Result<Graph> {
        Graph::capture(&self.stream, enqueue)
    }

    /// Enqueues the factorization of the uploaded matrices (graph replay when enabled)
    /// without waiting or checking: for timing with events. Check with [`Self::check_factor`].
    pub fn launch_factor(&mut self) -> Result<()> {
        let mut plan = self.plan.take().ok_or(Error::NotFactored)?;
        let result = (|| {
            self.prepare_kernels(&plan, false)?;
            if !self.options.graphs {
                return self.enqueue_factor(&plan, false);
            }
            if plan.factor_graph.is_none() {
                plan.factor_graph = Some(self.capture(|| self.enqueue_factor(&plan, false))?);
            }
            plan.factor_graph.as_ref().expect("graph").launch()
        })();
        self.plan = Some(plan);
        result
    }

    /// Enqueues a solve of the uploaded right-hand sides with the current factor (graph
    /// replay when enabled), without waiting. Check with [`Self::check_solve`].
    pub fn launch_solve(&mut self) -> Result<()> {
        let mut plan = self.plan.take().ok_or(Error::NotFactored)?;
        let result = (|| {
            if plan.rhs.is_none() {
                return Err(Error::Shape("no right-hand sides uploaded".into()));
            }
            self.prepare_kernels(&plan, false)?;
            if !self.options.graphs {
                return self.enqueue_solve(&plan, true);
            }
            let k = plan.rhs_cols;
            if plan.solve_graph.as_ref().is_none_or(|(gk, _)| *gk != k) {
                plan.solve_graph = Some((k, self.capture(|| self.enqueue_solve(&plan, true))?));
            }
            plan.solve_graph.as_ref().expect("graph").1.launch()
        })();
        self.plan = Some(plan);
        result
    }

    /// Enqueues the interlaced factorization + forward substitution and the backward
    /// substitution of the uploaded matrices and right-hand sides.
    pub fn launch_factor_solve(&mut self) -> Result<()> {
        let mut plan = self.plan.take().ok_or(Error::NotFactored)?;
        let result = (|| {
            if plan.rhs.is_none() {
                return Err(Error::Shape("no right-hand sides uploaded".into()));
            }
            // The panel kernels do not interlace: factor, then both sweeps.
            let interlaced = plan.variant.interlaces();
            self.prepare_kernels(&plan, interlaced)?;
            let run = |plan: &Plan<T>| -> Result<()> {
                self.enqueue_factor(plan, interlaced)?;
                self.enqueue_solve(plan, !interlaced)
            };
            if !self.options.graphs {
                return run(&plan);
            }
            let k = plan.rhs_cols;
            if plan.factor_solve_graph.as_ref().is_none_or(|(gk, _)| *gk != k) {
                plan.factor_solve_graph = Some((k, self.capture(|| run(&plan))?));
            }
            plan.factor_solve_graph.as_ref().expect("graph").1.launch()
        })();
        self.plan = Some(plan);
        result
    }

    /// Runs the factorization and a solve of the uploaded data kernel by kernel with an
    /// event pair around each launch, and returns `(kernel, level, grid, threads,
    /// shared bytes, registers, microseconds)` per launch: where the time goes.
    pub fn profile(&mut self) -> Result<Vec<LaunchTiming>> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        if plan.rhs.is_none() {
            return Err(Error::Shape("upload right-hand sides before profiling".into()));
        }
        self.prepare_kernels(plan, false)?;
        let shape = plan.shape;
        let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
        let mut out = Vec::new();
        let timed = |kernel: &Kernel,
                     level: u32,
                     cfg: LaunchConfig,
                     launch: &dyn Fn() -> Result<()>|
         -> Result<(String, u32, u32, u32, u32, i32, f64)> {
            let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            let t0 = self.stream.record_event(flags)?;
            launch()?;
            let t1 = self.stream.record_event(flags)?;
            t1.synchronize()?;
            Ok((
                kernel.name().to_string(),
                level,
                cfg.grid.0,
                cfg.block.0,
                cfg.shared_bytes,
                kernel.registers()?,
                1e3 * t0.elapsed_ms(&t1)? as f64,
            ))
        };
        let cfg = LaunchConfig::linear((s * (nb / 2)).max(1), 128, 0);
        // SAFETY (all launches): as in `enqueue_factor` / `enqueue_solve`.
        out.push(timed(&plan.prep, 0, cfg, &|| unsafe { plan.prep.launch(&self.stream, cfg, (self.factor_args(plan, 0, false),)) })?);
        for m in 0..levels(nb) {
            let cfg = plan.factor_config(m, 0);
            out.push(timed(&plan.factor, m, cfg, &|| unsafe {
                plan.factor.launch(&self.stream, cfg, (self.factor_args(plan, m, false),))
            })?);
        }
        let chunk = plan.chunk(&self.options);
        for m in 0..levels(nb) {
            let cfg = plan.solve_config(m, chunk);
            out.push(timed(&plan.forward, m, cfg, &|| unsafe { plan.forward.launch(&self.stream, cfg, (self.solve_args(plan, m),)) })?);
        }
        for m in (0..levels(nb)).rev() {
            let cfg = plan.solve_config(m, chunk);
            out.push(timed(&plan.backward, m, cfg, &|| unsafe { plan.backward.launch(&self.stream, cfg, (self.solve_args(plan, m),)) })?);
        }
        Ok(out)
    }

    /// Waits for the stream and turns the factor status words into a result.
    pub fn check_factor(&mut self) -> Result<()> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let mut info = vec![0u64; plan.shape.batch];
        plan.info.copy_to_host(&mut info)?;
        let tol = crate::scalar::wide(T::symmetry_tolerance());
        for (system, &key) in info.iter().enumerate() {
            let Some((level, code, block)) = decode_info(key) else { continue };
            self.factored = false;
            let (block, level) = (block as usize, level as usize);
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
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let mut info = vec![0u64; plan.shape.batch];
        plan.solve_info.copy_to_host(&mut info)?;
        for (system, &key) in info.iter().enumerate() {
            if let Some((_, _, block)) = decode_info(key) {
                return Err(Error::NonFiniteSolution { system, block: block as usize });
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
        let shape = plan.shape;
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
            let rhs = DeviceBuffer::from_host(&stream, b.as_slice())?;
            let solve_info = DeviceBuffer::<u64>::poisoned(&stream, shape.batch)?;
            PlanView { plan, rhs: &rhs, solve_info: &solve_info, k: b.ncols() }.enqueue(&stream, self.options)?;
            jobs.push((rhs, solve_info, b));
        }
        let mut outs = Vec::with_capacity(sets.len());
        for (rhs, solve_info, b) in jobs {
            let mut x = b.clone();
            rhs.copy_to_host(x.as_mut_slice())?;
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

/// A solve on another stream with its own right-hand sides and status words, reading the
/// factor of a plan.
struct PlanView<'a, T> {
    plan: &'a Plan<T>,
    rhs: &'a DeviceBuffer<T>,
    solve_info: &'a DeviceBuffer<u64>,
    k: usize,
}

impl<T: Scalar> PlanView<'_, T> {
    fn enqueue(&self, stream: &CudaStream, options: GpuOptions) -> Result<()> {
        let p = self.plan;
        let shape = p.shape;
        let (nb, s, n) = (shape.nblocks as u32, shape.batch as u32, shape.block);
        let chunk = (self.k as u32).min(options.rhs_chunk.max(1)).max(1);
        p.reserve_shared(0, chunk as usize)?;
        let args = |level| SolveArgs::<T> {
            diag: p.diag.ptr().as_ptr(),
            left: p.left.ptr().as_ptr(),
            right: p.right.ptr().as_ptr(),
            rhs: self.rhs.ptr().as_mut_ptr(),
            info: self.solve_info.ptr().as_mut_ptr(),
            ld: p.ld as u32,
            n: n as u32,
            nblocks: nb,
            level,
            nrhs: self.k as u32,
            chunk,
        };
        let top = levels(nb);
        // SAFETY: as in `GpuCholesky::enqueue_solve`, with this view's own buffers.
        unsafe {
            result::memset_d8_async(self.solve_info.ptr().addr(), 0xff, s as usize * 8, stream.cu_stream())?;
            for m in 0..top {
                p.forward.launch(stream, p.solve_config(m, chunk as usize), (args(m),))?;
            }
            for m in (0..top).rev() {
                p.backward.launch(stream, p.solve_config(m, chunk as usize), (args(m),))?;
            }
        }
        Ok(())
    }
}

impl<T: Scalar> Factorization<T> for GpuCholesky<T> {
    fn factor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.upload(a)?;
        self.factor_uploaded()
    }

    fn solve_in_place(&mut self, b: &mut BlockVec<T>) -> Result<()> {
        if !self.factored {
            return Err(Error::NotFactored);
        }
        b.validate()?;
        self.upload_rhs(b)?;
        self.launch_solve()?;
        self.download_rhs(b)?;
        self.check_solve()
    }

    fn factor_solve(&mut self, a: &BlockTridiag<T>, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        if a.shape() != b.shape() {
            shape_err!("right-hand side shape {} does not match the matrix {}", b.shape(), a.shape());
        }
        b.validate()?;
        let variant = Variant::choose::<T>(self.options.kernels, a.shape().block)?;
        let fits = factor_smem(variant, a.shape().block, b.ncols(), T::BYTES) <= self.gpu.info().max_shared_per_block;
        if !variant.interlaces() || !fits {
            self.factor(a)?;
            return self.solve(b);
        }
        self.upload(a)?;
        self.upload_rhs(b)?;
        self.launch_factor_solve()?;
        self.check_factor()?;
        let mut x = b.clone();
        self.download_rhs(&mut x)?;
        self.check_solve()?;
        Ok(x)
    }

    fn shape(&self) -> Option<Shape> {
        self.plan.as_ref().filter(|_| self.factored).map(|p| p.shape)
    }

    fn name(&self) -> &'static str {
        "gpu"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hopper's opt-in shared memory per block.
    const HOPPER_SMEM: u32 = 232_448;

    #[test]
    fn auto_picks_rows_then_panels_then_generic() {
        let auto = |n| Variant::choose::<f64>(KernelFamily::Auto, n).unwrap();
        assert_eq!(auto(1), Variant::Rows(4));
        assert_eq!(auto(16), Variant::Rows(16));
        assert_eq!(auto(17), Variant::Panel(32));
        assert_eq!(auto(96), Variant::Panel(96));
        assert_eq!(auto(97), Variant::Generic);
        assert_eq!(Variant::choose::<f32>(KernelFamily::Auto, 32).unwrap(), Variant::Rows(32));
        assert!(matches!(Variant::choose::<f64>(KernelFamily::Rows, 33), Err(Error::Unsupported(_))));
        assert!(matches!(Variant::choose::<f64>(KernelFamily::Panel, 97), Err(Error::Unsupported(_))));
        assert!(!Variant::Panel(64).interlaces() && Variant::Rows(8).interlaces() && Variant::Generic.interlaces());
    }

    #[test]
    fn the_largest_block_counts_every_kernel_that_must_fit() {
        // The generic solve holds three n x n tiles and a chunk of right-hand-side columns:
        // at n = 96 in f64 one column fits, sixteen do not (the chunk shrinks to fit).
        let generic = max_generic_block(HOPPER_SMEM, 8);
        assert!((96..128).contains(&generic));
        assert!(solve_shared_bytes(generic + 1, 1, 8).max(factor_shared_bytes(generic + 1, 0, 8)) > HOPPER_SMEM as usize);
        let chunk = fitting_chunk(96, 16, 8, HOPPER_SMEM);
        assert!(chunk < 16 && solve_shared_bytes(96, chunk, 8) <= HOPPER_SMEM as usize);
        assert!(solve_shared_bytes(96, chunk + 1, 8) > HOPPER_SMEM as usize);
        assert_eq!(fitting_chunk(8, 16, 8, HOPPER_SMEM), 16);
        assert_eq!(max_fused_block(HOPPER_SMEM, 8), generic);
        assert!(max_fused_block(HOPPER_SMEM, 4) > 96);
        assert_eq!(max_fused_block(0, 8), 0);
    }
}
