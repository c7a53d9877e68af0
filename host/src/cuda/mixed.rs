//! Mixed precision: an `f32` factorization of an `f64` matrix, and solves that reach `f64`
//! accuracy by iterative refinement with `f64` residuals on the GPU
//! (`blocktri_device::refine`), falling back to an `f64` factorization when the refinement
//! does not converge.

use super::cholesky::{F32Products, GpuCholesky, GpuOptions};
use super::context::Gpu;
use super::launch::{Kernel, LaunchConfig};
use super::memory::DeviceBuffer;
use crate::error::{Error, Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::refine::{REFINE_THREADS, RESIDUAL_SHARED_BYTES, RefineArgs};
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
    /// Tile products of the `f32` factorization (default FP32 FMA).
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
    demote_rhs: Kernel,
    promote: Kernel,
}

/// The `f64` vectors of a solve with `k` columns.
struct Vectors {
    k: usize,
    x: DeviceBuffer<f64>,
    r: DeviceBuffer<f64>,
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
    /// Two words per system: the largest `|r|` and `|b|` (bits of non-negative `f64`s).
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
        if self.norms.as_ref().is_none_or(|n| n.len() != 2 * a.shape().batch) {
            self.norms = Some(DeviceBuffer::poisoned(&self.stream, 2 * a.shape().batch)?);
        }
        self.shape = Some(a.shape());
        Ok(())
    }

    /// Factors the uploaded matrix: rounded to `f32` and factored on the GPU; when that
    /// fails, factored in `f64` (see [`RefineReport::fallback`]). Errors are the `f64`
    /// factorization's: an input that is not positive definite in `f64` is reported with
    /// its system and block.
    pub fn factor_uploaded(&mut self) -> Result<()> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        self.fallback = None;
        let (diag, sub, ld) = self.high.input_buffers(shape)?;
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
        unsafe { self.kernels.demote_matrix.launch(&self.stream, LaunchConfig::linear(blocks as u32, REFINE_THREADS, 0), (args,))? };
        match self.low.factor_uploaded() {
            Ok(()) => {}
            Err(low @ (Error::NotPositiveDefinite { .. } | Error::NonFinite { .. } | Error::NotSymmetric { .. })) => {
                self.high.factor_uploaded()?;
                self.fallback = Some(format!("the f32 factorization failed: {low}"));
            }
            Err(other) => return Err(other),
        }
        self.report = RefineReport { solves: 0, relative_residual: f64::NAN, fallback: self.fallback.clone() };
        Ok(())
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
            let (x, r) = (DeviceBuffer::poisoned(&self.stream, len)?, DeviceBuffer::poisoned(&self.stream, len)?);
            self.vectors = Some(Vectors { k: b.ncols(), x, r });
        }
        Ok(())
    }

    /// Solves for the uploaded right-hand sides: refinement on the `f32` factor (or one
    /// `f64` solve after a fallback); the solution stays on the device until
    /// [`Self::download`].
    pub fn solve_uploaded(&mut self) -> Result<&RefineReport> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        let k = self.vectors.as_ref().ok_or_else(|| Error::Shape("no right-hand sides uploaded".into()))?.k;
        if self.fallback.is_none() {
            let (converged, report) = self.refine(shape, k)?;
            if converged {
                self.report = report;
                return Ok(&self.report);
            }
            // Not converging: the f64 factor from now on (A is still uploaded).
            let why = format!(
                "the refinement did not reach {:e} (relative residual {:e} after {} solves)",
                self.options.tolerance, report.relative_residual, report.solves
            );
            self.high.factor_uploaded()?;
            self.fallback = Some(why);
        }
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

    /// The refinement loop: whether it converged, and its report (solves taken, the last
    /// relative residual).
    fn refine(&mut self, shape: Shape, k: usize) -> Result<(bool, RefineReport)> {
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
            norms: norms.ptr().as_mut_ptr(),
            low: low_rhs.as_mut_ptr(),
            low_info: low_info.as_ptr(),
            ..self.vector_args(shape, k)
        };
        let entries = shape.batch * shape.dim() * k;
        let elementwise = LaunchConfig::for_count(entries, REFINE_THREADS);
        let rows = LaunchConfig {
            grid: ((shape.batch * shape.nblocks) as u32, k as u32, 1),
            block: (REFINE_THREADS, 1, 1),
            shared_bytes: RESIDUAL_SHARED_BYTES as u32,
        };
        let (kernels, stream) = (&self.kernels, &self.stream);
        // SAFETY (every launch): the matrices are the f64 plan's input blocks of `shape`,
        // the vectors hold `S k N n` entries, `norms` two words per system, the launch
        // shapes are the kernels' (`blocktri_device::refine`).
        let residual = |first: bool| -> Result<()> {
            norms.fill_bytes(0)?;
            unsafe { kernels.residual.launch(stream, rows, (RefineArgs { first: first as u32, ..base },)) }
        };
        residual(true)?;
        let mut previous = f64::INFINITY;
        let mut report = RefineReport { solves: 0, relative_residual: f64::INFINITY, fallback: None };
        loop {
            let relative = relative_residual(&norms.to_vec()?);
            report.relative_residual = relative;
            if report.solves > 0 && relative <= self.options.tolerance {
                return Ok((true, report));
            }
            let stalled = report.solves >= 2 && relative > 0.5 * previous;
            if report.solves > self.options.max_iterations || stalled || relative.is_nan() {
                return Ok((false, report));
            }
            previous = relative;
            unsafe { kernels.demote_rhs.launch(stream, elementwise, (base,))? };
            self.low.launch_solve()?;
            unsafe { kernels.promote.launch(stream, elementwise, (RefineArgs { first: (report.solves == 0) as u32, ..base },))? };
            report.solves += 1;
            residual(false)?;
        }
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
            norms: std::ptr::null_mut(),
            low: std::ptr::null_mut(),
            low_diag: std::ptr::null_mut(),
            low_sub: std::ptr::null_mut(),
            low_ld: 0,
            low_info: std::ptr::null(),
        }
    }
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
