//! One call shape for every backend: [`Factorization`], and [`Solver`], which picks a
//! backend at run time.

use crate::cpu::{SequentialCholesky, ThreadedCholesky};
use crate::cuda::GpuCholesky;
use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::Scalar;

/// Factor `A = L L^T` once, solve many times, refactor with new values of the same shape.
pub trait Factorization<T: Scalar> {
    /// Factors `a` (any shape; a new shape replaces the previous factorization). Validates
    /// the input first: shapes, finite values, symmetric diagonal blocks; a matrix that is
    /// not positive definite is reported with its system and block.
    fn factor(&mut self, a: &BlockTridiag<T>) -> Result<()>;

    /// Factors new values of the shape already factored (reusing buffers and, on the GPU,
    /// the captured launch graph). Fails with [`Error::ShapeChanged`] for another shape.
    fn refactor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        match self.shape() {
            Some(s) if s != a.shape() => Err(Error::ShapeChanged { factored: s.to_string(), given: a.shape().to_string() }),
            _ => self.factor(a),
        }
    }

    /// Overwrites `b` with `A^-1 b`.
    fn solve_in_place(&mut self, b: &mut BlockVec<T>) -> Result<()>;

    /// Returns `A^-1 b`.
    fn solve(&mut self, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        let mut x = b.clone();
        self.solve_in_place(&mut x)?;
        Ok(x)
    }

    /// Factors `a` and solves for `b` (the GPU interlaces the forward substitution with
    /// the factorization).
    fn factor_solve(&mut self, a: &BlockTridiag<T>, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        self.factor(a)?;
        self.solve(b)
    }

    /// Factors `a` and overwrites `b` with `A^-1 b`: [`Self::factor_solve`] without a new
    /// vector, for loops that refill the same matrix and right-hand side (Newton steps).
    /// On the GPU it is one upload, one graph launch (the forward substitution interlaced
    /// with the factorization where the kernels allow) and one download, where
    /// [`Self::refactor`] + [`Self::solve_in_place`] wait for the device twice. When the
    /// factorization fails, `b` is left as it was.
    ///
    /// ```
    /// use blocktri::{generate, Backend, Solver};
    /// let a = generate::random_spd::<f64>(2, 50, 4, 1).unwrap();
    /// let b = generate::random_rhs::<f64>(a.shape(), 1, 2).unwrap();
    /// let mut solver = Solver::<f64>::new(Backend::Auto).unwrap();
    /// let mut x = b.clone();
    /// for _ in 0..3 {
    ///     x.as_mut_slice().copy_from_slice(b.as_slice()); // a Newton loop refills both
    ///     solver.factor_solve_in_place(&a, &mut x).unwrap();
    /// }
    /// let r = blocktri::residual::accuracy(&a, &x, &b).unwrap();
    /// assert!(r.relative_residual < 1e-12);
    /// ```
    fn factor_solve_in_place(&mut self, a: &BlockTridiag<T>, b: &mut BlockVec<T>) -> Result<()> {
        self.factor(a)?;
        self.solve_in_place(b)
    }

    /// The estimated 1-norm condition number `||A||_1 ||A^-1||_1` of every system of the
    /// factored matrix `a` (pass the matrix that was factored), as LAPACK's `pocon`
    /// estimates it: `||A^-1||_1` from at most eleven single-column solves of the batch.
    /// The estimate never exceeds the true value and is nearly always within a factor of
    /// 3 of it. Multiplied by the unit roundoff
    /// ([`condition::expected_relative_error`](crate::condition::expected_relative_error))
    /// it bounds the relative error to expect in the solution.
    ///
    /// ```
    /// use blocktri::{generate, cpu::SequentialCholesky, Factorization};
    /// let a = generate::random_spd_conditioned::<f64>(2, 10, 3, 1e6, 7).unwrap();
    /// let mut f = SequentialCholesky::new();
    /// f.factor(&a).unwrap();
    /// let kappa = f.condition_estimate(&a).unwrap(); // 2-norm condition 1e6
    /// assert!(kappa.iter().all(|&k| k > 1e5 && k < 1e8));
    /// ```
    fn condition_estimate(&mut self, a: &BlockTridiag<T>) -> Result<Vec<f64>> {
        crate::condition::estimate(self, a)
    }

    /// `log det A` of every system of the current factorization: `2 sum log diag(L)`,
    /// computed where the factor lives (on the GPU, one pass over the factored diagonal
    /// blocks; no factor leaves the device). Fails with [`Error::NotFactored`] before a
    /// successful factorization.
    ///
    /// ```
    /// use blocktri::{generate, cpu::SequentialCholesky, Factorization};
    /// let a = generate::random_spd::<f64>(2, 50, 4, 3).unwrap();
    /// let mut f = SequentialCholesky::new();
    /// f.factor(&a).unwrap();
    /// let logdet = f.log_determinant().unwrap(); // one per system
    /// let dense = a.to_dense(1).cholesky().unwrap();
    /// let want: f64 = dense.l().diagonal().iter().map(|d| 2.0 * d.ln()).sum();
    /// assert!((logdet[1] - want).abs() < 1e-10 * want.abs());
    /// ```
    fn log_determinant(&mut self) -> Result<Vec<f64>>;

    /// Selected inversion: the diagonal blocks `(A^-1)_ii` and the sub-diagonal blocks
    /// `(A^-1)_{i+1,i}` of every system (a Kalman smoother's posterior covariances, a
    /// Gaussian Markov random field's marginal variances), in the [`BlockTridiag`] layout,
    /// from the current factorization without forming `A^-1`. Fails with
    /// [`Error::NotFactored`] before a successful factorization.
    ///
    /// ```
    /// use blocktri::{generate, cpu::ThreadedCholesky, Factorization};
    /// let a = generate::random_spd::<f64>(1, 30, 2, 9).unwrap();
    /// let mut f = ThreadedCholesky::new();
    /// f.factor(&a).unwrap();
    /// let sigma = f.selected_inverse().unwrap();
    /// let dense = a.to_dense(0).try_inverse().unwrap();
    /// assert!((sigma.get(0, 11, 9) - dense[(11, 9)]).abs() < 1e-12);
    /// ```
    fn selected_inverse(&mut self) -> Result<BlockTridiag<T>>;

    /// Shape of the current factorization, if any.
    fn shape(&self) -> Option<Shape>;

    /// Short backend name (`cpu-sequential`, `cpu-threaded`, `gpu`).
    fn name(&self) -> &'static str;
}

/// Which backend a [`Solver`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Backend {
    /// The GPU when one is usable, else the threaded CPU solver.
    #[default]
    Auto,
    /// The GPU; an error when none is usable.
    Gpu,
    /// The multi-threaded CPU solver.
    Cpu,
    /// The sequential CPU reference.
    CpuSequential,
}

impl std::str::FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Backend::Auto),
            "gpu" => Ok(Backend::Gpu),
            "cpu" => Ok(Backend::Cpu),
            "cpu-sequential" | "sequential" => Ok(Backend::CpuSequential),
            _ => Err(Error::Shape(format!("unknown backend {s:?} (auto, gpu, cpu, cpu-sequential)"))),
        }
    }
}

/// A solver on the backend chosen at construction: the same five lines run on the GPU or
/// the CPU.
///
/// `Send` (move it into the thread that uses it) but not `Sync`: every call takes
/// `&mut self`. Threads that solve at once each make their own; GPU solvers made in
/// several threads share the device context and each run on streams of their own.
///
/// ```
/// use blocktri::{generate, Backend, Solver};
/// let a = generate::random_spd::<f64>(1, 64, 8, 1).unwrap(); // 1 system, N = 64, n = 8
/// let b = generate::random_rhs(a.shape(), 1, 2).unwrap();
/// let mut solver = Solver::new(Backend::Cpu).unwrap(); // or Backend::Auto / Backend::Gpu
/// solver.factor(&a).unwrap();
/// let x = solver.solve(&b).unwrap();
/// assert!(blocktri::residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
/// ```
pub struct Solver<T: Scalar> {
    inner: Box<dyn Factorization<T> + Send>,
    fallback_reason: Option<String>,
}

impl<T: Scalar> std::fmt::Debug for Solver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solver").field("backend", &self.inner.name()).finish()
    }
}

impl<T: Scalar> Solver<T> {
    /// A solver on `backend`. [`Backend::Auto`] falls back to the CPU when no GPU is
    /// usable ([`Solver::fallback_reason`] says why).
    pub fn new(backend: Backend) -> Result<Self> {
        let cpu = || Box::new(ThreadedCholesky::<T>::new()) as Box<dyn Factorization<T> + Send>;
        Ok(match backend {
            Backend::Gpu => Solver { inner: Box::new(GpuCholesky::<T>::new()?), fallback_reason: None },
            Backend::Cpu => Solver { inner: cpu(), fallback_reason: None },
            Backend::CpuSequential => Solver { inner: Box::new(SequentialCholesky::<T>::new()), fallback_reason: None },
            Backend::Auto => match GpuCholesky::<T>::new() {
                Ok(g) => Solver { inner: Box::new(g), fallback_reason: None },
                Err(e) => Solver { inner: cpu(), fallback_reason: Some(e.to_string()) },
            },
        })
    }

    /// Why [`Backend::Auto`] chose the CPU, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &'static str {
        self.inner.name()
    }

    /// See [`Factorization::factor`].
    pub fn factor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.inner.factor(a)
    }
    /// See [`Factorization::refactor`].
    pub fn refactor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.inner.refactor(a)
    }
    /// See [`Factorization::solve`].
    pub fn solve(&mut self, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        self.inner.solve(b)
    }
    /// See [`Factorization::solve_in_place`].
    pub fn solve_in_place(&mut self, b: &mut BlockVec<T>) -> Result<()> {
        self.inner.solve_in_place(b)
    }
    /// See [`Factorization::factor_solve`].
    pub fn factor_solve(&mut self, a: &BlockTridiag<T>, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        self.inner.factor_solve(a, b)
    }
    /// See [`Factorization::factor_solve_in_place`].
    pub fn factor_solve_in_place(&mut self, a: &BlockTridiag<T>, b: &mut BlockVec<T>) -> Result<()> {
        self.inner.factor_solve_in_place(a, b)
    }
    /// See [`Factorization::condition_estimate`].
    pub fn condition_estimate(&mut self, a: &BlockTridiag<T>) -> Result<Vec<f64>> {
        self.inner.condition_estimate(a)
    }
    /// See [`Factorization::log_determinant`].
    pub fn log_determinant(&mut self) -> Result<Vec<f64>> {
        self.inner.log_determinant()
    }
    /// See [`Factorization::selected_inverse`].
    pub fn selected_inverse(&mut self) -> Result<BlockTridiag<T>> {
        self.inner.selected_inverse()
    }
    /// See [`Factorization::shape`].
    pub fn shape(&self) -> Option<Shape> {
        self.inner.shape()
    }
}

/// A [`Solver`] is a [`Factorization`] too, so code generic over backends takes either.
impl<T: Scalar> Factorization<T> for Solver<T> {
    fn factor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.inner.factor(a)
    }
    fn refactor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.inner.refactor(a)
    }
    fn solve_in_place(&mut self, b: &mut BlockVec<T>) -> Result<()> {
        self.inner.solve_in_place(b)
    }
    fn factor_solve(&mut self, a: &BlockTridiag<T>, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        self.inner.factor_solve(a, b)
    }
    fn factor_solve_in_place(&mut self, a: &BlockTridiag<T>, b: &mut BlockVec<T>) -> Result<()> {
        self.inner.factor_solve_in_place(a, b)
    }
    fn condition_estimate(&mut self, a: &BlockTridiag<T>) -> Result<Vec<f64>> {
        self.inner.condition_estimate(a)
    }
    fn log_determinant(&mut self) -> Result<Vec<f64>> {
        self.inner.log_determinant()
    }
    fn selected_inverse(&mut self) -> Result<BlockTridiag<T>> {
        self.inner.selected_inverse()
    }
    fn shape(&self) -> Option<Shape> {
        self.inner.shape()
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
}
