//! Mixed precision: an `f32` factorization of an `f64` matrix, and solves that reach `f64`
//! accuracy by iterative refinement with `f64` residuals on the GPU
//! (`blocktri_device::refine`), falling back to an `f64` factorization when the refinement
//! does not converge.

use super::cholesky::{F32Products, GpuCholesky, GpuOptions, RoundingSource};
use super::context::Gpu;
use super::launch::{Kernel, LaunchConfig};
use super::memory::DeviceBuffer;
use crate::error::{Error, Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::refine::{REFINE_THREADS, RESIDUAL_SHARED_BYTES, ROWS_PER_LANE, RefineArgs, residual_rows_per_lane};
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// Settings of [`MixedCholesky`].
///
/// ```
/// use blocktri::cuda::RefineOptions;
/// let options = RefineOptions { tolerance: 1e-14, ..RefineOptions::default() };
/// assert_eq!(options.max_iterations, 10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefineOptions {
    /// Stop when every system's relative residual `max |b - A x| / max |b|` is at most
    /// this (default `1e-13`).
    pub tolerance: f64,
    /// Correction passes before giving up and falling back to an `f64` factorization
    /// (default 10; the refinement also gives up earlier when a pass gains less than a
    /// factor of 2).
    pub max_iterations: usize,
    /// Tile products of the `f32` factorization (default FP32 FMA; [`F32Products::Auto`]
    /// takes 3xTF32 where the tiled engine runs, the fastest at the same accuracy).
    pub products: F32Products,
}

impl Default for RefineOptions {
    fn default() -> Self {
        RefineOptions { tolerance: 1e-13, max_iterations: 10, products: F32Products::Fma }
    }
}

/// What the last [`MixedCholesky`] factorization or solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RefineReport {
    /// Low-precision solves of the last solve (the first one included); 0 when the `f64`
    /// factor solved.
    pub solves: usize,
    /// The largest relative residual `max |b - A x| / max |b|` over the systems, computed
    /// in `f64` on the GPU after the last correction (`NaN` when the `f64` factor solved:
    /// its residual is not computed).
    pub relative_residual: f64,
    /// Why the `f64` factorization is in use, when it is (the `f32` one failed, or the
    /// refinement did not converge).
    pub fallback: Option<String>,
}

/// The refinement kernels.
struct Kernels {
    demote_matrix: Kernel,
    residual: Kernel,
    /// The residual with 128-row passes (block sizes up to 128).
    residual128: Kernel,
    residual_sum: Kernel,
    demote_rhs: Kernel,
    promote: Kernel,
}

/// The `f64` vectors of a solve with `k` columns: the solution, the residual, and the
/// residual kernel's two coupling products (`blocktri_device::refine::residual`).
struct Vectors {
    k: usize,
    x: DeviceBuffer<f64>,
    r: DeviceBuffer<f64>,
    lower_part: DeviceBuffer<f64>,
    upper_part: DeviceBuffer<f64>,
}

/// Block-tridiagonal Cholesky for `f64` systems with the factor kept in `f32`:
/// `factor` rounds `A` to `f32` on the GPU and factors it there; `solve` refines the
/// `f32` solution with `f64` residuals until it meets [`RefineOptions::tolerance`]. When
/// the `f32` factorization fails (a matrix too ill-conditioned or out of `f32`'s range) or
/// the refinement stops gaining, it factors `A` in `f64` and solves with that; the
/// [`report`](Self::report) says which happened, and how many solves it took.
///
/// Device memory: an `f64` plan (which holds `A`) plus an `f32` one.
///
/// ```no_run
/// use blocktri::{cuda::{MixedCholesky, RefineOptions}, generate, residual};
/// let a = generate::random_spd::<f64>(1, 1024, 256, 1).unwrap();
/// let b = generate::random_rhs(a.shape(), 1, 2).unwrap();
/// let mut solver = MixedCholesky::new(RefineOptions::default()).unwrap();
/// solver.factor(&a).unwrap();
/// let x = solver.solve(&b).unwrap();
/// assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
/// println!("{:?}", solver.report()); // solves taken, final residual, fallback if any
/// ```
pub struct MixedCholesky {
    stream: Arc<CudaStream>,
    low: GpuCholesky<f32>,
    high: GpuCholesky<f64>,
    options: RefineOptions,
    kernels: Kernels,
    shape: Option<Shape>,
    /// Whether the `f64` factor is the one in use (with the reason).
    fallback: Option<String>,
    vectors: Option<Vectors>,
    /// Per residual pass (slot `j` after `j` corrections), two words per system: the
    /// largest `|r|` and `|b|` (bits of non-negative `f64`s). One slot per pass lets the
    /// host read several passes with one synchronization.
    norms: Option<DeviceBuffer<u64>>,
    report: RefineReport,
}

impl MixedCholesky {
    /// A solver on the shared device ([`Gpu::shared`]).
    pub fn new(options: RefineOptions) -> Result<Self> {
        Self::with_gpu(Gpu::shared()?, options)
    }

    /// A solver on `gpu` with a stream of its own.
    pub fn with_gpu(gpu: Arc<Gpu>, options: RefineOptions) -> Result<Self> {
        if options.tolerance.is_nan() || options.tolerance <= 0.0 {
            return Err(Error::Shape(format!("refinement tolerance must be positive, got {}", options.tolerance)));
        }
        let stream = gpu.new_stream()?;
        let low_options = GpuOptions { f32_products: options.products, ..GpuOptions::default() };
        let low = GpuCholesky::<f32>::with_stream(gpu.clone(), stream.clone(), low_options)?;
        let high = GpuCholesky::<f64>::with_stream(gpu.clone(), stream.clone(), GpuOptions::default())?;
        let k = |name: &str| gpu.kernel(kernel_name::<f32>(name).as_str());
        let kernels = Kernels {
            demote_matrix: k(names::REFINE_DEMOTE_MATRIX)?,
            residual: k(names::REFINE_RESIDUAL)?,
            residual128: k(names::REFINE_RESIDUAL_128)?,
            residual_sum: k(names::REFINE_RESIDUAL_SUM)?,
            demote_rhs: k(names::REFINE_DEMOTE_RHS)?,
            promote: k(names::REFINE_PROMOTE)?,
        };
        Ok(MixedCholesky {
            stream,
            low,
            high,
            options,
            kernels,
            shape: None,
            fallback: None,
            vectors: None,
            norms: None,
            report: RefineReport::default(),
        })
    }

    /// The stream the solver's work runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// What the last factorization or solve did.
    pub fn report(&self) -> &RefineReport {
        &self.report
    }

    /// The shape of the current factorization, if any.
    pub fn shape(&self) -> Option<Shape> {
        self.shape
    }

    /// Copies `a` to the device (in `f64`, where the residuals read it), without
    /// factoring; [`Self::factor_uploaded`] factors it.
    pub fn upload(&mut self, a: &BlockTridiag<f64>) -> Result<()> {
        let same_shape = self.shape == Some(a.shape());
        self.shape = None;
        if !same_shape {
            self.vectors = None;
        }
        self.high.upload(a)?;
        let words = 2 * a.shape().batch * self.norm_slots();
        if self.norms.as_ref().is_none_or(|n| n.len() != words) {
            self.norms = Some(DeviceBuffer::poisoned(&self.stream, words)?);
        }
        self.shape = Some(a.shape());
        Ok(())
    }

    /// Factors the uploaded matrix: rounded to `f32` and factored on the GPU; when that
    /// fails, factored in `f64` (see [`RefineReport::fallback`]). Errors are the `f64`
    /// factorization's: an input that is not positive definite in `f64` is reported with
    /// its system and block.
    pub fn factor_uploaded(&mut self) -> Result<()> {
        self.demote_matrix()?;
        let low = self.traced("mixed: f32 factor (waits)", |m| m.low.factor_uploaded());
        self.after_low_factor(low)?;
        self.report = RefineReport { solves: 0, relative_residual: f64::NAN, fallback: self.fallback.clone() };
        Ok(())
    }

    /// Rounds the uploaded `f64` matrix into the `f32` plan's input (enqueued); on the
    /// tiled engine the `f32` plan's `prep` does it instead, reading `A` where the `f64`
    /// plan holds it (one read of `A` instead of a read, a write and a read of the rounded
    /// copy; `docs/perf-notes.md`, entry 86).
    fn demote_matrix(&mut self) -> Result<()> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        self.fallback = None;
        let (diag, sub, ld) = self.high.input_buffers(shape)?;
        let from = RoundingSource { diag: diag.addr(), sub: sub.addr(), ld };
        if self.low.round_input_from(shape, from)? {
            return Ok(());
        }
        let (low_diag, low_sub, low_ld) = self.low.input_buffers(shape)?;
        let args = RefineArgs::<f32> {
            diag: diag.as_ptr(),
            sub: sub.as_ptr(),
            ld: ld as u32,
            low_diag: low_diag.as_mut_ptr(),
            low_sub: low_sub.as_mut_ptr(),
            low_ld: low_ld as u32,
            ..self.vector_args(shape, 0)
        };
        let blocks = shape.batch * (2 * shape.nblocks - 1);
        // SAFETY: both input buffers hold `S N` diagonal and `S (N - 1)` sub-diagonal blocks
        // at their leading dimensions (plans of `shape`); one thread block per matrix block.
        self.traced("mixed: round A to f32", |m| unsafe {
            m.kernels.demote_matrix.launch(&m.stream, LaunchConfig::linear(blocks as u32, REFINE_THREADS, 0), (args,))
        })
    }

    /// Turns the outcome of the `f32` factorization into the fallback when the `f32`
    /// factor failed on the input (the `f64` factorization then runs, and its errors are
    /// the caller's).
    fn after_low_factor(&mut self, low: Result<()>) -> Result<()> {
        match low {
            Ok(()) => Ok(()),
            Err(low @ (Error::NotPositiveDefinite { .. } | Error::NonFinite { .. } | Error::NotSymmetric { .. })) => {
                self.traced("mixed: f64 factor after the f32 one failed (waits)", |m| m.high.factor_uploaded())?;
                self.fallback = Some(format!("the f32 factorization failed: {low}"));
                Ok(())
            }
            Err(other) => Err(other),
        }
    }

    /// Factors `a` ([`Self::upload`] and [`Self::factor_uploaded`]).
    pub fn factor(&mut self, a: &BlockTridiag<f64>) -> Result<()> {
        self.upload(a)?;
        self.factor_uploaded()
    }

    /// Copies right-hand sides to the device for [`Self::solve_uploaded`].
    pub fn upload_rhs(&mut self, b: &BlockVec<f64>) -> Result<()> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        if b.shape() != shape {
            shape_err!("right-hand side shape {} does not match the factorization {shape}", b.shape());
        }
        b.validate()?;
        self.high.upload_rhs(b)?;
        if self.vectors.as_ref().is_none_or(|v| v.k != b.ncols()) {
            let len = shape.batch * shape.dim() * b.ncols();
            self.vectors = None; // free before allocating the new ones
            let vector = || DeviceBuffer::poisoned(&self.stream, len);
            self.vectors = Some(Vectors { k: b.ncols(), x: vector()?, r: vector()?, lower_part: vector()?, upper_part: vector()? });
        }
        Ok(())
    }

    /// Solves for the uploaded right-hand sides: refinement on the `f32` factor (or one
    /// `f64` solve after a fallback); the solution stays on the device until
    /// [`Self::download`].
    pub fn solve_uploaded(&mut self) -> Result<&RefineReport> {
        let (shape, k) = self.solve_shape()?;
        if self.fallback.is_none() {
            let refined = self.refine(shape, k, false)?;
            if let Some(report) = self.converged_or_fall_back(refined)? {
                self.report = report;
                return Ok(&self.report);
            }
        }
        self.solve_f64()
    }

    /// Factors the uploaded matrix and solves for the uploaded right-hand sides in one
    /// pass over the device: the first `f32` solve's forward substitution runs with the
    /// `f32` factorization (as [`GpuCholesky::launch_factor_solve`] does), and the host
    /// waits only when it reads the first residuals. Falls back as [`Self::factor_uploaded`]
    /// and [`Self::solve_uploaded`] do; the solution stays on the device until
    /// [`Self::download`].
    ///
    /// ```no_run
    /// use blocktri::{cuda::{MixedCholesky, RefineOptions}, generate, BlockVec};
    /// let a = generate::random_spd::<f64>(1, 1024, 256, 1).unwrap();
    /// let b = generate::random_rhs(a.shape(), 1, 2).unwrap();
    /// let mut solver = MixedCholesky::new(RefineOptions::default()).unwrap();
    /// solver.upload(&a).unwrap();
    /// solver.upload_rhs(&b).unwrap();
    /// let report = solver.factor_solve_uploaded().unwrap();
    /// println!("{} f32 solves, residual {:e}", report.solves, report.relative_residual);
    /// let mut x = BlockVec::zeros(b.shape(), 1).unwrap();
    /// solver.download(&mut x).unwrap();
    /// ```
    pub fn factor_solve_uploaded(&mut self) -> Result<&RefineReport> {
        let (shape, k) = self.solve_shape()?;
        self.demote_matrix()?;
        let refined = self.refine(shape, k, true)?;
        if let Some(report) = self.converged_or_fall_back(refined)? {
            self.report = report;
            return Ok(&self.report);
        }
        self.solve_f64()
    }

    /// Factors `a` and returns `A^-1 b` to `f64` accuracy ([`Self::upload`],
    /// [`Self::upload_rhs`], [`Self::factor_solve_uploaded`], [`Self::download`]).
    ///
    /// ```no_run
    /// use blocktri::{cuda::{MixedCholesky, RefineOptions}, generate, residual};
    /// let a = generate::random_spd::<f64>(1, 512, 128, 1).unwrap();
    /// let b = generate::random_rhs(a.shape(), 2, 2).unwrap();
    /// let mut solver = MixedCholesky::new(RefineOptions::default()).unwrap();
    /// let x = solver.factor_solve(&a, &b).unwrap();
    /// assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
    /// ```
    pub fn factor_solve(&mut self, a: &BlockTridiag<f64>, b: &BlockVec<f64>) -> Result<BlockVec<f64>> {
        self.upload(a)?;
        self.upload_rhs(b)?;
        self.factor_solve_uploaded()?;
        let mut x = BlockVec::zeros(b.shape(), b.ncols())?; // every value downloaded
        self.download(&mut x)?;
        Ok(x)
    }

    /// The shape and column count of the uploaded right-hand sides.
    fn solve_shape(&self) -> Result<(Shape, usize)> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        let k = self.vectors.as_ref().ok_or_else(|| Error::Shape("no right-hand sides uploaded".into()))?.k;
        Ok((shape, k))
    }

    /// The report of a converged refinement, or `None` after switching to the `f64`
    /// factor (factored here) with the reason recorded.
    fn converged_or_fall_back(&mut self, refined: Refined) -> Result<Option<RefineReport>> {
        match refined {
            Refined::Converged(report) => Ok(Some(report)),
            Refined::LowFactorFailed(low) => self.after_low_factor(Err(low)).map(|()| None),
            Refined::Stalled(report) => {
                // Not converging: the f64 factor from now on (A is still uploaded).
                let why = format!(
                    "the refinement did not reach {:e} (relative residual {:e} after {} solves)",
                    self.options.tolerance, report.relative_residual, report.solves
                );
                self.traced("mixed: f64 factor after the refinement stalled (waits)", |m| m.high.factor_uploaded())?;
                self.fallback = Some(why);
                Ok(None)
            }
        }
    }

    /// One solve with the `f64` factor, from the right-hand sides as uploaded.
    fn solve_f64(&mut self) -> Result<&RefineReport> {
        self.high.launch_solve()?;
        self.high.check_solve()?;
        self.report = RefineReport { solves: 0, relative_residual: f64::NAN, fallback: self.fallback.clone() };
        Ok(&self.report)
    }

    /// Copies the solution of the last [`Self::solve_uploaded`] into `x`.
    pub fn download(&self, x: &mut BlockVec<f64>) -> Result<()> {
        if self.fallback.is_some() {
            return self.high.download_rhs(x);
        }
        let v = self.vectors.as_ref().ok_or(Error::NotFactored)?;
        if x.as_slice().len() != v.x.len() {
            shape_err!("a solution of {} values into a vector of {}", v.x.len(), x.as_slice().len());
        }
        v.x.copy_to_host(x.as_mut_slice())
    }

    /// Returns `A^-1 b` to `f64` accuracy ([`Self::upload_rhs`], [`Self::solve_uploaded`],
    /// [`Self::download`]).
    pub fn solve(&mut self, b: &BlockVec<f64>) -> Result<BlockVec<f64>> {
        self.upload_rhs(b)?;
        self.solve_uploaded()?;
        let mut x = BlockVec::zeros(b.shape(), b.ncols())?; // every value downloaded
        self.download(&mut x)?;
        Ok(x)
    }

    /// Residual slots of the norms buffer: one per pass the refinement may take, and the
    /// first (`r = b`).
    fn norm_slots(&self) -> usize {
        self.options.max_iterations + 2
    }

    /// The refinement loop, from `r = b`. With `with_factor`, the first `f32` solve is the
    /// `f32` factorization's interlaced factor + solve (the matrix rounded already). The
    /// host reads the residuals only where they can stop the loop: a solve on an `f32`
    /// factor leaves a relative residual near `f32`'s unit roundoff (6e-8) at best, so for
    /// tolerances below [`ONE_PASS_FLOOR`] the first read comes after the second pass.
    fn refine(&mut self, shape: Shape, k: usize, with_factor: bool) -> Result<Refined> {
        let (low_rhs, low_info) = self.low.rhs_buffer(k)?;
        let (b, _) = self.high.rhs_buffer(k)?;
        let (diag, sub, ld) = self.high.input_buffers(shape)?; // A, as uploaded (the f64 plan is not factored)
        let v = self.vectors.as_ref().expect("vectors uploaded");
        let norms = self.norms.as_ref().expect("norms allocated");
        let base = RefineArgs::<f32> {
            diag: diag.as_ptr(),
            sub: sub.as_ptr(),
            ld: ld as u32,
            b: b.as_ptr(),
            x: v.x.ptr().as_mut_ptr(),
            r: v.r.ptr().as_mut_ptr(),
            lower_part: v.lower_part.ptr().as_mut_ptr(),
            upper_part: v.upper_part.ptr().as_mut_ptr(),
            norms: norms.ptr().as_mut_ptr(),
            low: low_rhs.as_mut_ptr(),
            low_info: low_info.as_ptr(),
            ..self.vector_args(shape, k)
        };
        let words = 2 * shape.batch;
        // The arguments of the pass that corrects residual `slot` (its scale there).
        let at = |slot: usize| RefineArgs { norms: base.norms.wrapping_add(slot * words), ..base };
        norms.fill_bytes(0)?; // every slot, before its residual's maxima
        let launches = Launches {
            elementwise: LaunchConfig::for_count(shape.batch * shape.dim() * k, REFINE_THREADS),
            rows: LaunchConfig {
                grid: ((shape.batch * shape.nblocks) as u32, k as u32, 1),
                block: (REFINE_THREADS, 1, 1),
                shared_bytes: RESIDUAL_SHARED_BYTES as u32,
            },
        };
        // SAFETY: the matrices are the f64 plan's input blocks of `shape`, the vectors hold
        // `S k N n` entries, every slot two words per system (`norm_slots` of them, and
        // `at` stays below that: at most `max_iterations + 1` passes), the launch shapes
        // are the kernels' (`blocktri_device::refine`).
        unsafe { self.residual(RefineArgs { first: 1, ..at(0) }, launches)? };
        let max_solves = self.options.max_iterations + 1;
        let first_read = if self.options.tolerance < ONE_PASS_FLOOR { 2 } else { 1 };
        let mut solves = 0;
        let mut factor_checked = !with_factor;
        loop {
            // (`solves < max_solves` here: the loop returns when they run out.)
            let next_read = if solves == 0 { first_read.min(max_solves) } else { solves + 1 };
            while solves < next_read {
                let first = solves == 0;
                let (pass, next) = (at(solves), at(solves + 1));
                // SAFETY: as above.
                self.traced("mixed: one correction pass", |m| unsafe { m.correction(pass, next, launches, first && with_factor, first) })?;
                solves += 1;
            }
            if !factor_checked {
                factor_checked = true;
                if let Err(low) = self.low.check_factor() {
                    return Ok(Refined::LowFactorFailed(low));
                }
            }
            let mut host = vec![0u64; (solves + 1) * words];
            self.norms.as_ref().expect("norms allocated").copy_to_host(&mut host)?;
            let relative: Vec<f64> = host.chunks_exact(words).map(relative_residual).collect();
            if crate::trace::enabled() {
                let by_pass: Vec<String> = relative.iter().map(|r| format!("{r:.1e}")).collect();
                eprintln!("trace: mixed: relative residuals by pass [{}]", by_pass.join(", "));
            }
            let report = RefineReport { solves, relative_residual: relative[solves], fallback: None };
            if report.relative_residual <= self.options.tolerance {
                return Ok(Refined::Converged(report));
            }
            let stalled = solves >= 2 && report.relative_residual > 0.5 * relative[solves - 1];
            if solves >= max_solves || stalled || report.relative_residual.is_nan() {
                return Ok(Refined::Stalled(report));
            }
        }
    }

    /// Enqueues one correction: `pass`'s residual scaled and rounded to `f32`, the `f32`
    /// solve (the factorization's factor + solve when `with_factor`), `x += scale * d`
    /// (`x = scale * d` when `first`), and the new residual into `next`'s slot.
    ///
    /// # Safety
    /// `pass` and `next` as built by [`Self::refine`] for the uploaded shape.
    unsafe fn correction(
        &mut self,
        pass: RefineArgs<f32>,
        next: RefineArgs<f32>,
        launches: Launches,
        with_factor: bool,
        first: bool,
    ) -> Result<()> {
        let (kernels, stream) = (&self.kernels, &self.stream);
        // SAFETY: the caller's contract.
        unsafe { kernels.demote_rhs.launch(stream, launches.elementwise, (pass,))? };
        if with_factor {
            self.low.launch_factor_solve()?;
        } else {
            self.low.launch_solve()?;
        }
        let (kernels, stream) = (&self.kernels, &self.stream);
        // SAFETY: the caller's contract.
        unsafe {
            kernels.promote.launch(stream, launches.elementwise, (RefineArgs { first: first as u32, ..pass },))?;
            self.residual(next, launches)
        }
    }

    /// Enqueues `r = b - A x` with its maxima into `args.norms` (two kernels: the second
    /// adds the coupling products the first left in the parts).
    ///
    /// # Safety
    /// `args` as built by [`Self::refine`] for the uploaded shape.
    unsafe fn residual(&self, args: RefineArgs<f32>, launches: Launches) -> Result<()> {
        // SAFETY: the caller's contract; both kernels take the row launch shape.
        let kernel =
            if residual_rows_per_lane(args.n as usize) < ROWS_PER_LANE { &self.kernels.residual128 } else { &self.kernels.residual };
        unsafe {
            kernel.launch(&self.stream, launches.rows, (args,))?;
            self.kernels.residual_sum.launch(&self.stream, launches.rows, (args,))
        }
    }

    /// Runs `work`; with `BLOCKTRI_TRACE` set, also waits for the stream and prints the
    /// time taken under `label`.
    fn traced<R>(&mut self, label: &'static str, work: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        if !crate::trace::enabled() {
            return work(self);
        }
        let _phase = crate::trace::phase(label);
        let out = work(self)?;
        self.stream.synchronize()?;
        Ok(out)
    }

    /// Arguments with the shape and nothing else set.
    fn vector_args(&self, shape: Shape, k: usize) -> RefineArgs<f32> {
        RefineArgs {
            diag: std::ptr::null(),
            sub: std::ptr::null(),
            ld: 0,
            n: shape.block as u32,
            nblocks: shape.nblocks as u32,
            systems: shape.batch as u32,
            nrhs: k as u32,
            first: 0,
            b: std::ptr::null(),
            x: std::ptr::null_mut(),
            r: std::ptr::null_mut(),
            lower_part: std::ptr::null_mut(),
            upper_part: std::ptr::null_mut(),
            norms: std::ptr::null_mut(),
            low: std::ptr::null_mut(),
            low_diag: std::ptr::null_mut(),
            low_sub: std::ptr::null_mut(),
            low_ld: 0,
            low_info: std::ptr::null(),
        }
    }
}

/// Tolerances below this cannot be met by one solve on an `f32` factor (its solution
/// carries `f32` rounding: relative residuals of ~6e-8 and more), so the refinement reads
/// no residual before the second pass.
const ONE_PASS_FLOOR: f64 = 1e-9;

/// The launch shapes of the refinement kernels for one solve.
#[derive(Clone, Copy)]
struct Launches {
    elementwise: LaunchConfig,
    rows: LaunchConfig,
}

/// How a refinement ended.
enum Refined {
    /// The tolerance was met.
    Converged(RefineReport),
    /// The passes ran out, stopped gaining, or gave a NaN.
    Stalled(RefineReport),
    /// The interlaced `f32` factorization's check failed (its error: [`MixedCholesky`]'s
    /// `after_low_factor` falls back on an input the `f32` factor cannot take and returns
    /// any other error).
    LowFactorFailed(Error),
}

/// The largest `max |r| / max |b|` over the systems from the residual kernel's maxima
/// (`0 / 0` counts as 0; a NaN anywhere gives NaN).
fn relative_residual(norms: &[u64]) -> f64 {
    norms.chunks_exact(2).fold(0.0, |worst: f64, pair| {
        let (r, b) = (f64::from_bits(pair[0]), f64::from_bits(pair[1]));
        let rel = if r == 0.0 { 0.0 } else { r / b };
        if rel.is_nan() || worst.is_nan() { f64::NAN } else { worst.max(rel) }
    })
}

#[cfg(test)]
mod tests {
    use super::relative_residual;

    #[test]
    fn relative_residual_takes_the_worst_system() {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(relative_residual(&bits(&[1e-14, 1.0, 3e-10, 2.0])), 1.5e-10);
        assert_eq!(relative_residual(&bits(&[0.0, 0.0])), 0.0);
        assert!(relative_residual(&bits(&[f64::NAN, 1.0, 0.0, 1.0])).is_nan());
        assert_eq!(relative_residual(&bits(&[1.0, 0.0])), f64::INFINITY);
    }
}
