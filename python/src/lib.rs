//! `blocktri._blocktri`: the compiled half of the Python package.
//!
//! The Python half (`blocktri/__init__.py`) checks the arrays, converts them to the
//! library's layout with numpy (C-contiguous, aligned, the right dtype, each block
//! column-major) and passes each array here as the address of its data and its length. This
//! module turns those into slices ([`values`], [`values_mut`], the only `unsafe` here),
//! runs the library with the GIL released, and raises [`RawError`] with the error's kind
//! and fields, which the Python half maps onto its exception classes.

use blocktri::arrow::{ArrowSolver, ArrowVec, BlockTridiagArrow};
use blocktri::tridiag::{Method, Tridiagonal, invert};
use blocktri::{Backend, BlockTridiag, BlockVec, Error, Scalar, Shape, Solver, generate};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

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

/// Copies the arrays at `diag` and `sub` (column-major blocks, leading dimension `n`) into
/// a matrix.
///
/// # Safety
/// `diag` and `sub` as in [`values`] for the sizes of `shape`.
unsafe fn matrix<T: Scalar>(shape: Shape, diag: usize, sub: usize) -> blocktri::Result<BlockTridiag<T>> {
    let blk = shape.block * shape.block;
    // SAFETY: forwarded.
    let (d, s) =
        unsafe { (values::<T>(diag, shape.batch * shape.nblocks * blk), values::<T>(sub, shape.batch * (shape.nblocks - 1) * blk)) };
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

/// A solver in one of the two precisions.
enum Any {
    F32(Solver<f32>),
    F64(Solver<f64>),
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
}

impl PySolver {
    fn run<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Any) -> blocktri::Result<R> + Send) -> PyResult<R> {
        self.inner.run(py, f)
    }
}

#[pymethods]
impl PySolver {
    #[new]
    fn new(py: Python<'_>, backend: &str, precision: &str) -> PyResult<Self> {
        let (inner, precision) = Locked::build(py, backend, precision, |backend, precision| {
            Ok(if precision == "f32" { Any::F32(Solver::new(backend)?) } else { Any::F64(Solver::new(backend)?) })
        })?;
        Ok(PySolver { inner, precision })
    }

    #[getter]
    fn precision(&self) -> &'static str {
        self.precision
    }

    #[getter]
    fn backend(&self, py: Python<'_>) -> PyResult<String> {
        self.run(py, |any| Ok(with_solver!(Any, any, s, _T, s.backend_name().to_string())))
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

    /// Factors the matrix at `diag`/`sub` (`refactor`: same shape as before, buffers reused).
    #[allow(clippy::too_many_arguments)] // two arrays and their shape
    fn factor(&self, py: Python<'_>, diag: usize, sub: usize, batch: usize, nblocks: usize, block: usize, refactor: bool) -> PyResult<()> {
        let sh = shape(batch, nblocks, block)?;
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                // SAFETY: the Python half passes arrays of this shape (module docs).
                let a = unsafe { matrix::<T>(sh, diag, sub)? };
                if refactor { s.refactor(&a) } else { s.factor(&a) }
            })
        })
    }

    /// Solves for the `ncols` right-hand sides at `rhs` (layout `(S, k, N n)`), writing `out`.
    fn solve(&self, py: Python<'_>, rhs: usize, out: usize, ncols: usize) -> PyResult<()> {
        self.run(py, |any| {
            with_solver!(Any, any, s, T, {
                let sh = s.shape().ok_or(Error::NotFactored)?;
                let len = sh.batch * sh.dim() * ncols;
                // SAFETY: the Python half passes arrays of the factored shape (module docs).
                let b = BlockVec::from_vec(sh, ncols, unsafe { values::<T>(rhs, len) }.to_vec())?;
                let x = s.solve(&b)?;
                // SAFETY: as above, `out` has the same size.
                unsafe { values_mut::<T>(out, len) }.copy_from_slice(x.as_slice());
                Ok(())
            })
        })
    }

    /// `log det A` of every system of the factorization.
    fn log_determinant(&self, py: Python<'_>) -> PyResult<Vec<f64>> {
        self.run(py, |any| with_solver!(Any, any, s, _T, s.log_determinant()))
    }

    /// The diagonal and sub-diagonal blocks of `A^-1`, written to `diag` and `sub`.
    fn selected_inverse(&self, py: Python<'_>, diag: usize, sub: usize) -> PyResult<()> {
        self.run(py, |any| {
            with_solver!(Any, any, s, _T, {
                let inv = s.selected_inverse()?;
                // SAFETY: the Python half allocates both for the factored shape.
                unsafe { write_matrix(&inv, diag, sub) }
            })
        })
    }

    /// The 1-norm condition estimate of every system of `A` (which was factored).
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
                let a = unsafe { matrix::<T>(sh, diag, sub)? };
                s.condition_estimate(&a)
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

#[pymodule]
fn _blocktri(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySolver>()?;
    m.add_class::<PyArrowSolver>()?;
    m.add_function(wrap_pyfunction!(tridiag_inverse, m)?)?;
    m.add_function(wrap_pyfunction!(random_spd, m)?)?;
    m.add_function(wrap_pyfunction!(random_rhs, m)?)?;
    m.add("RawError", m.py().get_type::<RawError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
