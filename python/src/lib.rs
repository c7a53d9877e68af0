//! `blocktri._blocktri`: the compiled half of the Python package.
//!
//! The Python half (`blocktri/__init__.py`) checks the arrays, converts them to the
//! library's layout with numpy (C-contiguous, aligned, the right dtype, each block
//! column-major) and passes each array here as the address of its data and its length. This
//! module turns those into slices ([`values`], [`values_mut`], the only `unsafe` here),
//! runs the library with the GIL released, and raises [`RawError`] with the error's kind
//! and fields, which the Python half maps onto its exception classes.

use blocktri::arrow::{ArrowSolver, ArrowVec, BlockTridiagArrow};
use blocktri::cuda::{DeviceArray, DeviceBuffer, Gpu, GpuCholesky};
use blocktri::tridiag::{Method, Tridiagonal, invert};
use blocktri::{Backend, BlockTridiag, BlockVec, Error, Factorization, Scalar, Shape, Solver, generate};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

mod dlpack;
mod torch;

use torch::Tensor;

create_exception!(_blocktri, RawError, PyException, "An error of the library: (kind, message, fields).");

/// The values of a numpy array passed by the Python half.
///
/// # Safety
/// `addr` is the data of a live, C-contiguous, aligned numpy array of at least `len`
/// values of `T` that nothing writes while the returned slice is used (the Python half
/// keeps a reference to the array for the whole call).
unsafe fn values<'a, T>(addr: usize, len: usize) -> &'a [T] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(addr as *const T, len) }
}

/// A writeable numpy array passed by the Python half for a result.
///
/// # Safety
/// As [`values`], and the array is writeable and used by nothing else during the call (the
/// Python half allocates it for the result).
unsafe fn values_mut<'a, T>(addr: usize, len: usize) -> &'a mut [T] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(addr as *mut T, len) }
}

/// `Error` as `RawError((kind, message, fields))`.
fn raise(err: Error) -> PyErr {
    Python::attach(|py| {
        let fields = PyDict::new(py);
        let kind = match &err {
            Error::Shape(_) => "shape",
            Error::NonFinite { what, system, block } => {
                let _ = fields.set_item("what", *what);
                let _ = fields.set_item("system", *system);
                let _ = fields.set_item("block", *block);
                "non_finite"
            }
            Error::NotSymmetric { system, block, row, col, tol } => {
                let _ = fields.set_item("system", *system);
                let _ = fields.set_item("block", *block);
                let _ = fields.set_item("row", *row);
                let _ = fields.set_item("col", *col);
                let _ = fields.set_item("tol", *tol);
                "not_symmetric"
            }
            Error::NotPositiveDefinite { system, block, level } => {
                let _ = fields.set_item("system", *system);
                let _ = fields.set_item("block", *block);
                let _ = fields.set_item("level", *level);
                "not_positive_definite"
            }
            Error::NonFiniteSolution { system, block } => {
                let _ = fields.set_item("system", *system);
                let _ = fields.set_item("block", *block);
                "non_finite_solution"
            }
            Error::NotDiagonallyDominant { matrix, row, .. } => {
                let _ = fields.set_item("matrix", *matrix);
                let _ = fields.set_item("row", *row);
                "not_diagonally_dominant"
            }
            Error::SingularPivot { matrix, row, .. } => {
                let _ = fields.set_item("matrix", *matrix);
                let _ = fields.set_item("row", *row);
                "singular_pivot"
            }
            Error::NotFactored => "not_factored",
            Error::ShapeChanged { .. } => "shape",
            Error::Unsupported(_) => "unsupported",
            Error::OutOfMemory { needed, free } => {
                let _ = fields.set_item("needed", *needed);
                let _ = fields.set_item("free", *free);
                "gpu_out_of_memory"
            }
            Error::HostOutOfMemory { needed } => {
                let _ = fields.set_item("needed", *needed);
                "host_out_of_memory"
            }
            Error::NoGpu(_) => "no_gpu",
            Error::Cuda(_) => "cuda",
            _ => "other",
        };
        RawError::new_err((kind, err.to_string(), fields.unbind()))
    })
}

/// A shape the Python half read off the arrays.
fn shape(batch: usize, nblocks: usize, block: usize) -> PyResult<Shape> {
    Shape::new(batch, nblocks, block).map_err(raise)
}

/// The `S N n^2` diagonal and `S (N-1) n^2` sub-diagonal values of `shape`'s blocks at
/// `diag` and `sub` (the Python half's arrays, blocks in either order).
///
/// # Safety
/// `diag` and `sub` as in [`values`] for those sizes.
unsafe fn block_values<'a, T>(shape: Shape, diag: usize, sub: usize) -> (&'a [T], &'a [T]) {
    let blk = shape.block * shape.block;
    // SAFETY: forwarded.
    unsafe { (values::<T>(diag, shape.batch * shape.nblocks * blk), values::<T>(sub, shape.batch * (shape.nblocks - 1) * blk)) }
}

/// Copies the arrays at `diag` and `sub` (column-major blocks, leading dimension `n`) into
/// a matrix.
///
/// # Safety
/// `diag` and `sub` as in [`values`] for the sizes of `shape`.
unsafe fn matrix<T: Scalar>(shape: Shape, diag: usize, sub: usize) -> blocktri::Result<BlockTridiag<T>> {
    // SAFETY: forwarded.
    let (d, s) = unsafe { block_values::<T>(shape, diag, sub) };
    BlockTridiag::from_parts(shape, shape.block, d.to_vec(), s.to_vec())
}

/// Copies a matrix's blocks (at leading dimension `n`) into the arrays at `diag`, `sub`.
///
/// # Safety
/// As [`values_mut`] for the sizes of `a`'s shape.
unsafe fn write_matrix<T: Scalar>(a: &BlockTridiag<T>, diag: usize, sub: usize) -> blocktri::Result<()> {
    let shape = a.shape();
    let a = if a.ld() == shape.block { std::borrow::Cow::Borrowed(a) } else { std::borrow::Cow::Owned(a.repad(shape.block)?) };
    // SAFETY: forwarded.
    unsafe {
        values_mut::<T>(diag, a.diag().len()).copy_from_slice(a.diag());
        values_mut::<T>(sub, a.sub().len()).copy_from_slice(a.sub());
    }
    Ok(())
}

/// The error for `what` (e.g. "a device array") on the CPU backend `backend`.
fn needs_gpu(what: &str, backend: &str) -> Error {
    Error::Unsupported(format!("{what} needs the GPU backend; this solver runs on {backend}"))
}

/// `(shape, batched)` of a matrix whose diagonal blocks have the array shape `dims`
/// (`(N, n, n)` or `(S, N, n, n)`).
fn block_shape(dims: &[i64]) -> blocktri::Result<(Shape, bool)> {
    let square = dims.len() >= 3 && dims[dims.len() - 1] == dims[dims.len() - 2];
    if !matches!(dims.len(), 3 | 4) || !square || dims.iter().any(|&d| d <= 0) {
        return Err(Error::Shape(format!("diag: expected (N, n, n) or (S, N, n, n), got shape {dims:?}")));
    }
    let batched = dims.len() == 4;
    let batch = if batched { dims[0] as usize } else { 1 };
    Ok((Shape::new(batch, dims[dims.len() - 3] as usize, dims[dims.len() - 1] as usize)?, batched))
}

/// `(k, missing axes)` of right-hand sides of the array shape `dims` for the factored
/// `shape`: `(N, n[, k])`, with a leading `S` when `batched`.
fn rhs_axes(dims: &[i64], shape: Shape, batched: bool) -> blocktri::Result<(usize, [bool; 4])> {
    let lead = usize::from(batched);
    let single = dims.len() == lead + 2;
    if !single && dims.len() != lead + 3 {
        let want = if batched {
            format!("({}, {}, {}[, k])", shape.batch, shape.nblocks, shape.block)
        } else {
            format!("({}, {}[, k])", shape.nblocks, shape.block)
        };
        return Err(Error::Shape(format!("rhs: expected shape {want} for the factored matrix, got {dims:?}")));
    }
    let k = if single { 1 } else { dims[lead + 2].max(0) as usize };
    Ok((k, [!batched, false, false, single]))
}

/// A solver in one of the two precisions.
enum Any {
    F32(Engine<f32>),
    F64(Engine<f64>),
}

/// `refactor` keeps the factored shape: [`Error::ShapeChanged`] for another one.
fn check_refactor(refactor: bool, factored: Option<Shape>, given: Shape) -> blocktri::Result<()> {
    match factored {
        Some(old) if refactor && old != given => Err(Error::ShapeChanged { factored: old.to_string(), given: given.to_string() }),
        _ => Ok(()),
    }
}

/// What a Python `Solver` runs on: the GPU solver itself, whose entry points for
/// row-major host arrays and for device arrays skip every host-side layout pass, or the
/// library's `Solver` on a CPU backend (with the reason when `"auto"` fell back to it).
enum Engine<T: Scalar> {
    Gpu(Box<GpuCholesky<T>>),
    Host(Solver<T>),
}

impl<T: Scalar> Engine<T> {
    /// The engine for `backend`, as `Solver::new` chooses it.
    fn new(backend: Backend) -> blocktri::Result<Self> {
        Ok(match backend {
            Backend::Gpu => Engine::Gpu(Box::new(GpuCholesky::new()?)),
            Backend::Auto => match GpuCholesky::new() {
                Ok(g) => Engine::Gpu(Box::new(g)),
                Err(_) => Engine::Host(Solver::new(Backend::Auto)?),
            },
            other => Engine::Host(Solver::new(other)?),
        })
    }

    fn factorization(&mut self) -> &mut dyn Factorization<T> {
        match self {
            Engine::Gpu(g) => g.as_mut(),
            Engine::Host(s) => s,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Engine::Gpu(g) => g.name(),
            Engine::Host(s) => s.backend_name(),
        }
    }

    fn fallback_reason(&self) -> Option<&str> {
        match self {
            Engine::Gpu(_) => None,
            Engine::Host(s) => s.fallback_reason(),
        }
    }

    fn shape(&self) -> Option<Shape> {
        match self {
            Engine::Gpu(g) => g.shape(),
            Engine::Host(s) => s.shape(),
        }
    }

    /// The GPU solver, or an error naming `what` needs it.
    fn gpu(&mut self, what: &str) -> blocktri::Result<&mut GpuCholesky<T>> {
        match self {
            Engine::Gpu(g) => Ok(g),
            Engine::Host(s) => Err(needs_gpu(what, s.backend_name())),
        }
    }

    /// The GPU solver with its stream ordered after `producer_stream` (the current stream of
    /// the caller's array library, when the Python half passes one), or an error as
    /// [`Self::gpu`].
    fn gpu_after(&mut self, producer_stream: Option<usize>) -> blocktri::Result<&mut GpuCholesky<T>> {
        let g = self.gpu("a device array")?;
        if let Some(h) = producer_stream {
            // SAFETY: the Python half passes the current stream of the array's own library
            // on this device.
            unsafe { g.wait_for_stream(h)? };
        }
        Ok(g)
    }

    /// Factors row-major blocks (numpy's C order): uploaded as they are and transposed on
    /// the GPU, transposed once on the host for the CPU backends.
    fn factor_row_major(&mut self, shape: Shape, diag: &[T], sub: &[T], refactor: bool) -> blocktri::Result<()> {
        check_refactor(refactor, self.shape(), shape)?;
        match self {
            Engine::Gpu(g) => {
                g.upload_row_major(shape, diag, sub)?;
                g.factor_uploaded()
            }
            Engine::Host(s) => s.factor(&BlockTridiag::from_row_major(shape, diag, sub)?),
        }
    }
}

/// Runs `$body` with `$s` bound to the solver in `$any` (an `$enum` of the two
/// precisions) and `$t` to its scalar type.
macro_rules! with_solver {
    ($enum:ident, $any:expr, $s:ident, $t:ident, $body:expr) => {
        match $any {
            $enum::F32($s) => {
                type $t = f32;
                $body
            }
            $enum::F64($s) => {
                type $t = f64;
                $body
            }
        }
    };
}

/// A solver behind a lock: calls from several Python threads are serialized, and the GIL
/// is released while the solver works.
struct Locked<A>(Mutex<A>);

impl<A: Send> Locked<A> {
    /// A solver made by `make` from the parsed backend and precision names, with the GIL
    /// released (finding a GPU loads the driver and the kernels).
    fn build(
        py: Python<'_>,
        backend: &str,
        precision: &str,
        make: impl FnOnce(Backend, &'static str) -> blocktri::Result<A> + Send,
    ) -> PyResult<(Self, &'static str)> {
        let backend: Backend = backend.parse().map_err(raise)?;
        let precision = parse_precision(precision)?;
        let any = py.detach(|| make(backend, precision)).map_err(raise)?;
        Ok((Locked(Mutex::new(any)), precision))
    }

    /// Runs `f` on the solver with the GIL released.
    fn run<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut A) -> blocktri::Result<R> + Send) -> PyResult<R> {
        py.detach(|| {
            // A panic inside the library leaves no broken invariant behind the lock.
            let mut any = self.0.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut any)
        })
        .map_err(raise)
    }
}

/// The precision named by the Python half.
fn parse_precision(name: &str) -> PyResult<&'static str> {
    match name {
        "f32" => Ok("f32"),
        "f64" => Ok("f64"),
        other => Err(raise(Error::Shape(format!("unknown precision {other:?} (f32, f64)")))),
    }
}

/// The library's `Solver` for Python (`blocktri.Solver` wraps it).
#[pyclass(name = "_Solver", module = "blocktri._blocktri")]
struct PySolver {
    inner: Locked<Any>,
    precision: &'static str,
    /// The CUDA device ordinal of a GPU solver (fixed for its life), `None` on a CPU backend.
    gpu_ordinal: Option<usize>,
}

impl PySolver {
    fn run<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Any) -> blocktri::Result<R> + Send) -> PyResult<R> {
        self.inner.run(py, f)
    }

    /// The device right-hand sides `rhs` (`ncols` columns; no system axis unless
    /// `batched`, no column axis when `single`) checked against the factored shape, with the
    /// four axes' extents, which of them `rhs` lacks, and the GPU's ordinal.
    #[allow(clippy::type_complexity)] // a view and the three facts that came with checking it
    fn device_rhs(
        &self,
        py: Python<'_>,
        rhs: &Bound<'_, PyAny>,
        ncols: usize,
        batched: bool,
        single: bool,
    ) -> PyResult<(DeviceArray, [usize; 4], [bool; 4], usize)> {
        let sh = self.run(py, |any| with_solver!(Any, any, s, _T, s.shape().ok_or(Error::NotFactored)))?;
        let ordinal = self.ordinal(py)?;
        let extents = [sh.batch, sh.nblocks, sh.block, ncols];
        let missing = [!batched, false, false, single];
        Ok((self.device_array(rhs, "rhs", ordinal, extents, missing)?, extents, missing, ordinal))
    }

    /// The ordinal of the solver's GPU, or an error on a CPU backend.
    fn ordinal(&self, py: Python<'_>) -> PyResult<usize> {
        match self.gpu_ordinal {
            Some(ordinal) => Ok(ordinal),
            None => Err(raise(needs_gpu("a device array", &self.backend(py)?))),
        }
    }

    /// The device array behind a DLPack capsule, checked for the solver's precision (see
    /// [`dlpack::device_array`]).
    fn device_array(
        &self,
        capsule: &Bound<'_, PyAny>,
        name: &str,
        ordinal: usize,
        extents: [usize; 4],
        missing: [bool; 4],
    ) -> PyResult<DeviceArray> {
        if self.precision == "f32" {
            dlpack::device_array::<f32>(capsule, name, ordinal, extents, missing)
        } else {
            dlpack::device_array::<f64>(capsule, name, ordinal, extents, missing)
        }
        .map_err(raise)
    }
}

/// The diagonal and sub-diagonal tensors `d`, `u` of a matrix of `shape` as the solver's
/// device arrays, checked (device `ordinal`, element type `T`, extents).
fn torch_blocks<T: Scalar>(
    d: &Tensor,
    u: &Tensor,
    shape: Shape,
    batched: bool,
    ordinal: usize,
) -> blocktri::Result<(DeviceArray, DeviceArray)> {
    let missing = [!batched, false, false, false];
    let (s, nb, n) = (shape.batch, shape.nblocks, shape.block);
    Ok((
        dlpack::check::<T>(&d.view(), "diag", ordinal, [s, nb, n, n], missing)?,
        dlpack::check::<T>(&u.view(), "sub", ordinal, [s, nb - 1, n, n], missing)?,
    ))
}

/// `(k, rhs, out)`: the right-hand-side tensor `b` and the solution tensor `x` for the
/// factored `shape` as the solver's device arrays, checked as [`torch_blocks`].
fn torch_rhs<T: Scalar>(
    b: &Tensor,
    x: &Tensor,
    shape: Shape,
    batched: bool,
    ordinal: usize,
) -> blocktri::Result<(usize, DeviceArray, DeviceArray)> {
    let (k, missing) = rhs_axes(b.shape(), shape, batched)?;
    let extents = [shape.batch, shape.nblocks, shape.block, k];
    Ok((
        k,
        dlpack::check::<T>(&b.view(), "rhs", ordinal, extents, missing)?,
        dlpack::check::<T>(&x.view(), "out", ordinal, extents, missing)?,
    ))
}

/// Solutions in a new device array, in either precision, with the GPU that holds them.
enum Solution {
    F32((DeviceBuffer<f32>, Arc<Gpu>)),
    F64((DeviceBuffer<f64>, Arc<Gpu>)),
}

/// Solves for the device right-hand sides `b` (`extents` = `(S, N, n, k)`, produced on
/// `producer_stream` when given) into a new C-order device array of those extents.
fn solve_into_new<T: Scalar>(
    e: &mut Engine<T>,
    b: DeviceArray,
    extents: [usize; 4],
    producer_stream: Option<usize>,
) -> blocktri::Result<(DeviceBuffer<T>, Arc<Gpu>)> {
    let g = e.gpu_after(producer_stream)?;
    let out = DeviceBuffer::<T>::poisoned(g.stream(), extents.iter().product())?;
    let (sn, n, k) = ((extents[1] * extents[2] * extents[3]) as i64, extents[2] as i64, extents[3] as i64);
    let strides = [sn, n * k, k, 1];
    // SAFETY: `b` was checked against the factored shape (`device_array`) and is ready on
    // our stream; `out` is this call's own buffer of `S N n k` values at C-order strides.
    unsafe { g.solve_device(b, extents[3], DeviceArray { addr: out.ptr().addr(), strides })? };
    Ok((out, g.gpu().clone()))
}

#[pymethods]
impl PySolver {
    #[new]
    fn new(py: Python<'_>, backend: &str, precision: &str) -> PyResult<Self> {
        let (inner, precision) = Locked::build(py, backend, precision, |backend, precision| {
            Ok(if precision == "f32" { Any::F32(Engine::new(backend)?) } else { Any::F64(Engine::new(backend)?) })
        })?;
        let gpu_ordinal = inner.run(py, |any| {
            Ok(with_solver!(
                Any,
                any,
                s,
                _T,
                match s {
                    Engine::Gpu(g) => Some(g.gpu().info().ordinal),
                    Engine::Host(_) => None,
                }
            ))
        })?;
        Ok(PySolver { inner, precision, gpu_ordinal })
    }

    #[getter]
    fn precision(&self) -> &'static str {
        self.precision
    }

    #[getter]
    fn backend(&self, py: Python<'_>) -> PyResult<String> {
        self.run(py, |any| Ok(with_solver!(Any, any, s, _T, s.name().to_string())))
    }

    #[getter]
    fn fallback_reason(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.run(py, |any| Ok(with_solver!(Any, any, s, _T, s.fallback_reason().map(str::to_string))))
    }

    /// `(batch, nblocks, block)` of the factorization, or `None`.
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Option<(usize, usize, usize)>> {
        self.run(py, |any| Ok(with_solver!(Any, any, s, _T, s.shape().map(|sh| (sh.batch, sh.nblocks, sh.block)))))
    }

    /// `(CUDA stream handle, device ordinal)` of the GPU solver (the stream that device
    /// arrays must be ready on: the Python half passes it to `__dlpack__(stream=...)`), or
    /// `None` on a CPU backend.
    #[getter]
    fn cuda_stream(&self, py: Python<'_>) -> PyResult<Option<(usize, usize)>> {
        self.run(py, |any| {
            Ok(with_solver!(
                Any,
                any,
                s,
                _T,
                match s {
                    Engine::Gpu(g) => Some((g.stream().cu_stream() as usize, g.gpu().info().ordinal)),
                    Engine::Host(_) => None,
                }
            ))
        })
    }

    /// Factors the matrix of row-major (C-order) blocks at `diag`/`sub` (`refactor`: same
    /// shape as before, buffers reused).
    #[allow(clippy::too_many_arguments)] // two arrays and their shape
    fn factor(&self, py: Python<'_>, diag: usize, sub: usize, batch: usize, nblocks: usize, block: usize, refactor: bool) -> PyResult<()> {
        let sh = shape(batch, nblocks, block)?;
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                // SAFETY: the Python half passes C-order arrays of this shape (module docs).
                let (d, u) = unsafe { block_values::<T>(sh, diag, sub) };
                s.factor_row_major(sh, d, u, refactor)
            })
        })
    }

    /// Factors the matrix held in device arrays (DLPack capsules of `(S, N, n, n)` and
    /// `(S, N-1, n, n)` arrays, without the `S` axis unless `batched`), copied into the
    /// solver's layout on the device.
    #[allow(clippy::too_many_arguments)] // two arrays and their shape
    fn factor_device(
        &self,
        py: Python<'_>,
        diag: Bound<'_, PyAny>,
        sub: Bound<'_, PyAny>,
        batch: usize,
        nblocks: usize,
        block: usize,
        batched: bool,
        refactor: bool,
        producer_stream: Option<usize>,
    ) -> PyResult<()> {
        let sh = shape(batch, nblocks, block)?;
        let missing = [!batched, false, false, false];
        let ordinal = self.ordinal(py)?;
        let d = self.device_array(&diag, "diag", ordinal, [sh.batch, sh.nblocks, sh.block, sh.block], missing)?;
        let u = self.device_array(&sub, "sub", ordinal, [sh.batch, sh.nblocks - 1, sh.block, sh.block], missing)?;
        self.run(py, |any| {
            with_solver!(Any, any, s, _T, {
                check_refactor(refactor, s.shape(), sh)?;
                let g = s.gpu_after(producer_stream)?;
                // SAFETY: `device_array` checked device, element type and extents; our stream
                // waits for the producers (`__dlpack__(stream=...)`, or `producer_stream`), and
                // the Python half holds the arrays until this call returns, after the
                // factorization.
                unsafe { g.upload_device(sh, d, u)? };
                g.factor_uploaded()
            })
        })
    }

    /// Solves for right-hand sides in a device array (a DLPack capsule of `(S, N, n, k)`,
    /// without `S` unless `batched` and without `k` when `single`; `producer_stream` as in
    /// `factor_device`); returns a capsule of a new device array of the same shape (C
    /// order) holding the solutions.
    #[allow(clippy::too_many_arguments)] // an array, its shape and its stream
    fn solve_device(
        &self,
        py: Python<'_>,
        rhs: Bound<'_, PyAny>,
        ncols: usize,
        batched: bool,
        single: bool,
        producer_stream: Option<usize>,
    ) -> PyResult<Py<PyAny>> {
        let (b, extents, missing, _) = self.device_rhs(py, &rhs, ncols, batched, single)?;
        let dims: Vec<i64> = (0..4).filter(|&a| !missing[a]).map(|a| extents[a] as i64).collect();
        let solution = self.run(py, |any| {
            Ok(match any {
                Any::F32(e) => Solution::F32(solve_into_new(e, b, extents, producer_stream)?),
                Any::F64(e) => Solution::F64(solve_into_new(e, b, extents, producer_stream)?),
            })
        })?;
        match solution {
            Solution::F32((buffer, gpu)) => dlpack::export(py, buffer, dims, gpu),
            Solution::F64((buffer, gpu)) => dlpack::export(py, buffer, dims, gpu),
        }
    }

    /// Factors the matrix held in two PyTorch CUDA tensors (`(N, n, n)` and
    /// `(N-1, n, n)`, or batched `(S, ...)`, any strides): one call reads both tensors'
    /// attributes and torch's current stream, orders the solver's stream after it and
    /// factors. Returns whether the matrix is a batch.
    fn factor_torch(&self, py: Python<'_>, diag: Bound<'_, PyAny>, sub: Bound<'_, PyAny>, refactor: bool) -> PyResult<bool> {
        let ordinal = self.ordinal(py)?;
        let (d, u) = (Tensor::read(&diag)?, Tensor::read(&sub)?);
        let (sh, batched) = block_shape(d.shape()).map_err(raise)?;
        let stream = d.producer_stream(py)?;
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                let (dv, uv) = torch_blocks::<T>(&d, &u, sh, batched, ordinal)?;
                check_refactor(refactor, s.shape(), sh)?;
                let g = s.gpu_after(Some(stream))?;
                // SAFETY: `torch_blocks` checked device, element type and extents; our stream
                // waits for torch's current stream, and the caller holds the tensors until
                // this call returns, after the factorization.
                unsafe { g.upload_device(sh, dv, uv)? };
                g.factor_uploaded()
            })
        })?;
        Ok(batched)
    }

    /// Solves for the right-hand sides in a PyTorch CUDA tensor (`(N, n[, k])`, a leading
    /// `S` when `batched`) into `out` (a tensor of the same shape, which may be `rhs`
    /// itself) or a new C-contiguous tensor, returned.
    fn solve_torch<'py>(
        &self,
        py: Python<'py>,
        rhs: Bound<'py, PyAny>,
        out: Option<Bound<'py, PyAny>>,
        batched: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ordinal = self.ordinal(py)?;
        let out = torch::output_like(out, &rhs)?;
        let (b, x) = (Tensor::read(&rhs)?, Tensor::read(&out)?);
        let stream = b.producer_stream(py)?;
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                let sh = s.shape().ok_or(Error::NotFactored)?;
                let (k, bv, xv) = torch_rhs::<T>(&b, &x, sh, batched, ordinal)?;
                let g = s.gpu_after(Some(stream))?;
                // SAFETY: both checked against the factored shape on this GPU; `out`'s
                // elements are distinct (a tensor's are; `rhs` is read in full before `out`
                // is written, so `out` may be `rhs`); our stream waits for torch's.
                unsafe { g.solve_device(bv, k, xv) }
            })
        })?;
        Ok(out)
    }

    /// `factor_torch` and `solve_torch` in one call, one graph launch and one wait before
    /// the solutions are copied out (`out` untouched when the factorization fails).
    /// Returns the solutions and whether the matrix is a batch.
    fn factor_solve_torch<'py>(
        &self,
        py: Python<'py>,
        diag: Bound<'py, PyAny>,
        sub: Bound<'py, PyAny>,
        rhs: Bound<'py, PyAny>,
        out: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyAny>, bool)> {
        let ordinal = self.ordinal(py)?;
        let out = torch::output_like(out, &rhs)?;
        let (d, u, b, x) = (Tensor::read(&diag)?, Tensor::read(&sub)?, Tensor::read(&rhs)?, Tensor::read(&out)?);
        let (sh, batched) = block_shape(d.shape()).map_err(raise)?;
        let stream = d.producer_stream(py)?;
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                let blocks = torch_blocks::<T>(&d, &u, sh, batched, ordinal)?;
                let (k, bv, xv) = torch_rhs::<T>(&b, &x, sh, batched, ordinal)?;
                let g = s.gpu_after(Some(stream))?;
                // SAFETY: as in `factor_torch` and `solve_torch`.
                unsafe { g.factor_solve_device(sh, blocks, bv, k, xv) }
            })
        })?;
        Ok((out, batched))
    }

    /// Solves for the `ncols` right-hand sides at `rhs` (layout `(S, k, N n)`), writing `out`.
    fn solve(&self, py: Python<'_>, rhs: usize, out: usize, ncols: usize) -> PyResult<()> {
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                let sh = s.shape().ok_or(Error::NotFactored)?;
                let len = sh.batch * sh.dim() * ncols;
                // SAFETY: the Python half passes arrays of the factored shape (module docs).
                let (b, x) = unsafe { (values::<T>(rhs, len), values_mut::<T>(out, len)) };
                match s {
                    Engine::Gpu(g) => g.solve_slices(b, ncols, x),
                    Engine::Host(h) => {
                        x.copy_from_slice(h.solve(&BlockVec::from_vec(sh, ncols, b.to_vec())?)?.as_slice());
                        Ok(())
                    }
                }
            })
        })
    }

    /// `log det A` of every system of the factorization.
    fn log_determinant(&self, py: Python<'_>) -> PyResult<Vec<f64>> {
        self.run(py, |any| with_solver!(Any, any, s, _T, s.factorization().log_determinant()))
    }

    /// The diagonal and sub-diagonal blocks of `A^-1`, written to `diag` and `sub`.
    fn selected_inverse(&self, py: Python<'_>, diag: usize, sub: usize) -> PyResult<()> {
        self.run(py, |any| {
            with_solver!(Any, any, s, _T, {
                let inv = s.factorization().selected_inverse()?;
                // SAFETY: the Python half allocates both for the factored shape.
                unsafe { write_matrix(&inv, diag, sub) }
            })
        })
    }

    /// The 1-norm condition estimate of every system of `A` (which was factored; row-major
    /// blocks as for `factor`).
    fn condition_estimate(
        &self,
        py: Python<'_>,
        diag: usize,
        sub: usize,
        batch: usize,
        nblocks: usize,
        block: usize,
    ) -> PyResult<Vec<f64>> {
        let sh = shape(batch, nblocks, block)?;
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                // SAFETY: as in `factor`.
                let (d, u) = unsafe { block_values::<T>(sh, diag, sub) };
                s.factorization().condition_estimate(&BlockTridiag::from_row_major(sh, d, u)?)
            })
        })
    }
}

/// An arrowhead solver in one of the two precisions.
enum AnyArrow {
    F32(ArrowSolver<f32>),
    F64(ArrowSolver<f64>),
}

/// The library's `ArrowSolver` for Python (`blocktri.ArrowSolver` wraps it). Arrays as
/// for [`PySolver`]; the border `(S, N)` blocks of `a x n` and the tips `a x a`, each
/// column-major; the tip parts of right-hand sides `(S, k, a)`.
#[pyclass(name = "_ArrowSolver", module = "blocktri._blocktri")]
struct PyArrowSolver {
    inner: Locked<AnyArrow>,
}

#[pymethods]
impl PyArrowSolver {
    #[new]
    fn new(py: Python<'_>, backend: &str, precision: &str) -> PyResult<Self> {
        let (inner, _) = Locked::build(py, backend, precision, |backend, precision| {
            Ok(if precision == "f32" { AnyArrow::F32(ArrowSolver::new(backend)?) } else { AnyArrow::F64(ArrowSolver::new(backend)?) })
        })?;
        Ok(PyArrowSolver { inner })
    }

    #[getter]
    fn backend(&self, py: Python<'_>) -> PyResult<String> {
        self.inner.run(py, |any| Ok(with_solver!(AnyArrow, any, s, _T, s.backend_name().to_string())))
    }

    /// Factors the arrowhead matrix of `(batch, nblocks, block)` and width `width`.
    #[allow(clippy::too_many_arguments)] // four arrays and their shape
    fn factor(
        &self,
        py: Python<'_>,
        diag: usize,
        sub: usize,
        arrow: usize,
        tip: usize,
        batch: usize,
        nblocks: usize,
        block: usize,
        width: usize,
    ) -> PyResult<()> {
        let sh = shape(batch, nblocks, block)?;
        self.inner.run(py, |any| {
            with_solver!(AnyArrow, any, s, T, {
                // SAFETY: the Python half passes arrays of this shape (module docs).
                let m = unsafe {
                    let chain = matrix::<T>(sh, diag, sub)?;
                    let border = values::<T>(arrow, batch * nblocks * width * block).to_vec();
                    BlockTridiagArrow::new(chain, width, border, values::<T>(tip, batch * width * width).to_vec())?
                };
                s.factor(&m)
            })
        })
    }

    /// Solves for `ncols` right-hand sides (`rhs`: `(S, k, N n)`, `rhs_tip`: `(S, k, a)`),
    /// writing `out` and `out_tip` (same layouts).
    #[allow(clippy::too_many_arguments)] // two inputs, two outputs and their shape
    fn solve(
        &self,
        py: Python<'_>,
        rhs: usize,
        rhs_tip: usize,
        out: usize,
        out_tip: usize,
        ncols: usize,
        batch: usize,
        nblocks: usize,
        block: usize,
        width: usize,
    ) -> PyResult<()> {
        let sh = shape(batch, nblocks, block)?;
        self.inner.run(py, |any| {
            with_solver!(AnyArrow, any, s, T, {
                let (len, len_tip) = (batch * sh.dim() * ncols, batch * width * ncols);
                // SAFETY: the Python half passes arrays of these sizes (module docs).
                let b = unsafe {
                    ArrowVec::new(
                        BlockVec::from_vec(sh, ncols, values::<T>(rhs, len).to_vec())?,
                        width,
                        values::<T>(rhs_tip, len_tip).to_vec(),
                    )?
                };
                let x = s.solve(&b)?;
                // SAFETY: as above, the outputs have the same sizes.
                unsafe {
                    values_mut::<T>(out, len).copy_from_slice(x.chain().as_slice());
                    values_mut::<T>(out_tip, len_tip).copy_from_slice(x.tip_values());
                }
                Ok(())
            })
        })
    }

    fn log_determinant(&self, py: Python<'_>) -> PyResult<Vec<f64>> {
        self.inner.run(py, |any| with_solver!(AnyArrow, any, s, _T, s.log_determinant()))
    }

    /// The blocks of `A^-1`: chain diagonal and sub-diagonal, border, tip (layouts of
    /// `factor`'s inputs).
    fn selected_inverse(&self, py: Python<'_>, diag: usize, sub: usize, arrow: usize, tip: usize) -> PyResult<()> {
        self.inner.run(py, |any| {
            with_solver!(AnyArrow, any, s, T, {
                let inv = s.selected_inverse()?;
                // SAFETY: the Python half allocates the four for the factored shape.
                unsafe {
                    write_matrix(&inv.chain, diag, sub)?;
                    values_mut::<T>(arrow, inv.border.len()).copy_from_slice(&inv.border);
                    values_mut::<T>(tip, inv.tip.len()).copy_from_slice(&inv.tip);
                }
                Ok(())
            })
        })
    }
}

/// Runs `$body` with `$t` bound to the scalar type named by `$precision`.
macro_rules! with_precision {
    ($precision:expr, $t:ident, $body:expr) => {
        match $precision {
            "f32" => {
                type $t = f32;
                $body
            }
            "f64" => {
                type $t = f64;
                $body
            }
            other => Err(Error::Shape(format!("unknown precision {other:?} (f32, f64)"))),
        }
    };
}

/// Inverts `batch` tridiagonal matrices of size `n` (`a` diagonal, `b` sub-, `c`
/// super-diagonal), writing the column-major inverses to `out`.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // three arrays, their shape, the output and two options
fn tridiag_inverse(
    py: Python<'_>,
    precision: &str,
    a: usize,
    b: usize,
    c: usize,
    n: usize,
    batch: usize,
    method: &str,
    check_dominance: bool,
    out: usize,
) -> PyResult<()> {
    let method = match method {
        "direct" => Method::Direct,
        "sequential" => Method::Sequential,
        "threaded" => Method::Threaded,
        "gpu" => Method::GpuFused,
        "gpu-stagewise" => Method::GpuStagewise,
        other => return Err(raise(Error::Shape(format!("unknown method {other:?} (gpu, gpu-stagewise, threaded, sequential, direct)")))),
    };
    py.detach(|| {
        with_precision!(precision, T, {
            // SAFETY: the Python half passes arrays of these sizes (module docs).
            let (a, b, c) = unsafe { (values::<T>(a, batch * n), values::<T>(b, batch * (n - 1)), values::<T>(c, batch * (n - 1))) };
            let t = Tridiagonal::batch(n, a.to_vec(), b.to_vec(), c.to_vec())?;
            let inv = invert(&t, method, check_dominance)?;
            // SAFETY: as above, `out` holds batch n^2 values.
            unsafe { values_mut::<T>(out, batch * n * n) }.copy_from_slice(inv.as_slice());
            Ok(())
        })
    })
    .map_err(raise)
}

/// A random SPD batch (`generate::random_spd`), written to `diag` and `sub`.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the shape, a seed and two outputs
fn random_spd(
    py: Python<'_>,
    precision: &str,
    batch: usize,
    nblocks: usize,
    block: usize,
    seed: u64,
    diag: usize,
    sub: usize,
) -> PyResult<()> {
    py.detach(|| {
        with_precision!(precision, T, {
            let a = generate::random_spd::<T>(batch, nblocks, block, seed)?;
            // SAFETY: the Python half allocates both for this shape.
            unsafe { write_matrix(&a, diag, sub) }
        })
    })
    .map_err(raise)
}

/// Random right-hand sides (`generate::random_rhs`, layout `(S, k, N n)`) written to `out`.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the shape, a seed and the output
fn random_rhs(
    py: Python<'_>,
    precision: &str,
    batch: usize,
    nblocks: usize,
    block: usize,
    ncols: usize,
    seed: u64,
    out: usize,
) -> PyResult<()> {
    let sh = shape(batch, nblocks, block)?;
    py.detach(|| {
        with_precision!(precision, T, {
            let b = generate::random_rhs::<T>(sh, ncols, seed)?;
            // SAFETY: the Python half allocates it for this shape.
            unsafe { values_mut::<T>(out, b.as_slice().len()) }.copy_from_slice(b.as_slice());
            Ok(())
        })
    })
    .map_err(raise)
}

/// Wall-clock microseconds `(factor, solve, factor + solve in one call)` of each of `runs`
/// rounds of the Rust API (after one warm-up round) on
/// `generate::random_spd(batch, nblocks, block, seed)` and `generate::random_rhs(.., 1, seed)`,
/// on the GPU: the reference against which `python/examples/call_overhead.py` measures the
/// Python layer. `device = false`: `GpuCholesky::factor(&a)`, `solve(&b)` and
/// `factor_solve(&a, &b)` from host memory (a Rust caller with `Vec`s); `device = true`:
/// `upload_device` + `factor_uploaded`, `solve_device` and `factor_solve_device` on C-order
/// device buffers (a Rust caller whose data are on the GPU).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // a problem, a count and a path
fn time_rust_factor_solve(
    py: Python<'_>,
    precision: &str,
    batch: usize,
    nblocks: usize,
    block: usize,
    seed: u64,
    runs: usize,
    device: bool,
) -> PyResult<Vec<(f64, f64, f64)>> {
    py.detach(|| with_precision!(precision, T, time_factor_solve::<T>(Shape::new(batch, nblocks, block)?, seed, runs, device)))
        .map_err(raise)
}

fn micros(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn time_factor_solve<T: Scalar>(shape: Shape, seed: u64, runs: usize, device: bool) -> blocktri::Result<Vec<(f64, f64, f64)>> {
    let a = generate::random_spd::<T>(shape.batch, shape.nblocks, shape.block, seed)?;
    let b = generate::random_rhs::<T>(shape, 1, seed)?;
    let mut g = GpuCholesky::<T>::new()?;
    let mut times = Vec::with_capacity(runs);
    if !device {
        for i in 0..=runs {
            let start = std::time::Instant::now();
            g.factor(&a)?;
            let mid = std::time::Instant::now();
            std::hint::black_box(g.solve(&b)?);
            let end = std::time::Instant::now();
            std::hint::black_box(g.factor_solve(&a, &b)?);
            if i > 0 {
                times.push((micros(mid - start), micros(end - mid), micros(end.elapsed())));
            }
        }
        return Ok(times);
    }
    let (n, nb) = (shape.block, shape.nblocks);
    let stream = g.stream().clone();
    let row_major = |m: &[T], blocks: usize| -> Vec<T> {
        let a = m.chunks(n * n).flat_map(|blk| (0..n * n).map(move |e| blk[(e % n) * n + e / n])).collect::<Vec<T>>();
        debug_assert_eq!(a.len(), shape.batch * blocks * n * n);
        a
    };
    let a = a.repad(n)?;
    let d = DeviceBuffer::from_host(&stream, &row_major(a.diag(), nb))?;
    let u = DeviceBuffer::from_host(&stream, &row_major(a.sub(), nb - 1))?;
    let r = DeviceBuffer::from_host(&stream, b.as_slice())?;
    let x = DeviceBuffer::<T>::poisoned(&stream, b.as_slice().len())?;
    let view = |buf: &DeviceBuffer<T>, blocks: usize, cols: usize| DeviceArray::row_major(buf.ptr().addr(), blocks, n, cols);
    for i in 0..=runs {
        let start = std::time::Instant::now();
        // SAFETY: the four buffers hold the arrays the views describe, on the solver's stream.
        unsafe { g.upload_device(shape, view(&d, nb, n), view(&u, nb - 1, n))? };
        g.factor_uploaded()?;
        let mid = std::time::Instant::now();
        // SAFETY: as above.
        unsafe { g.solve_device(view(&r, nb, 1), 1, view(&x, nb, 1))? };
        let end = std::time::Instant::now();
        // SAFETY: as above.
        unsafe { g.factor_solve_device(shape, (view(&d, nb, n), view(&u, nb - 1, n)), view(&r, nb, 1), 1, view(&x, nb, 1))? };
        if i > 0 {
            times.push((micros(mid - start), micros(end - mid), micros(end.elapsed())));
        }
    }
    Ok(times)
}

/// Bytes the solvers have moved between host and device memory in this process
/// (`blocktri::cuda::host_transfer_bytes`): unchanged by calls on device arrays.
#[pyfunction]
fn host_transfer_bytes() -> u64 {
    blocktri::cuda::host_transfer_bytes()
}

#[pymodule]
fn _blocktri(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(host_transfer_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(time_rust_factor_solve, m)?)?;
    m.add_class::<PySolver>()?;
    m.add_class::<PyArrowSolver>()?;
    m.add_function(wrap_pyfunction!(tridiag_inverse, m)?)?;
    m.add_function(wrap_pyfunction!(random_spd, m)?)?;
    m.add_function(wrap_pyfunction!(random_rhs, m)?)?;
    m.add("RawError", m.py().get_type::<RawError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
