//! The one error type of the crate.

/// Everything that can go wrong. Every public entry point validates its input and
/// returns one of these instead of panicking or producing NaN.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Dimensions are inconsistent or out of range.
    #[error("invalid shape: {0}")]
    Shape(String),

    /// An input value is NaN or infinite.
    #[error("non-finite value in {what} of system {system}, block {block}")]
    NonFinite {
        /// Which array ("diagonal block", "sub-diagonal block", "right-hand side", ...).
        what: &'static str,
        /// System index in the batch.
        system: usize,
        /// Block index (0-based).
        block: usize,
    },

    /// A diagonal block is not symmetric within tolerance.
    #[error("diagonal block {block} of system {system} is not symmetric within tolerance {tol:e} (entry ({row}, {col}))")]
    NotSymmetric {
        /// System index.
        system: usize,
        /// Block index (0-based).
        block: usize,
        /// Row of the offending entry within the block (0 when found on the GPU).
        row: usize,
        /// Column of the offending entry within the block (0 when found on the GPU).
        col: usize,
        /// The relative tolerance used.
        tol: f64,
    },

    /// The matrix is not (numerically) positive definite: the Cholesky pivot of this
    /// block, after the updates of the blocks eliminated before it, was not positive.
    #[error("matrix is not positive definite: system {system}, block {block} (elimination level {level}) has a non-positive pivot")]
    NotPositiveDefinite {
        /// System index.
        system: usize,
        /// Block index (0-based) whose factorization failed.
        block: usize,
        /// Elimination level of that block in the schedule that found it (0 for the
        /// sequential CPU solver).
        level: usize,
    },

    /// The solution has non-finite values (overflow).
    #[error("the solution of system {system} is not finite near block {block} (overflow?)")]
    NonFiniteSolution {
        /// System index.
        system: usize,
        /// Block index.
        block: usize,
    },

    /// The tridiagonal matrix is not diagonally dominant (and the check was not waived).
    #[error("matrix {matrix} is not diagonally dominant at row {row}: |a| = {diag:e} < |b| + |c| = {off:e}")]
    NotDiagonallyDominant {
        /// Matrix index in the batch.
        matrix: usize,
        /// First offending row.
        row: usize,
        /// |a_row|.
        diag: f64,
        /// |b_row| + |c_row|.
        off: f64,
    },

    /// A pivot of the tridiagonal inverse was zero (the matrix or one of its Step-1
    /// submatrices is singular).
    #[error("matrix {matrix}: zero pivot in the {stage} at row {row}")]
    SingularPivot {
        /// Matrix index in the batch.
        matrix: usize,
        /// Row of the pivot.
        row: usize,
        /// "2x2 inversion" or "Sherman-Morrison merge".
        stage: &'static str,
    },

    /// The operation needs a factorization first.
    #[error("no factorization: call factor() before solve()")]
    NotFactored,

    /// `refactor` was given a matrix of another shape.
    #[error("refactor with a different shape: factored {factored}, got {given}")]
    ShapeChanged {
        /// Shape of the existing factorization.
        factored: String,
        /// Shape passed to refactor.
        given: String,
    },

    /// The requested size is beyond what this backend supports.
    #[error("{0}")]
    Unsupported(String),

    /// Not enough GPU memory.
    #[error("not enough GPU memory: need {needed} bytes, {free} bytes free")]
    OutOfMemory {
        /// Bytes needed.
        needed: usize,
        /// Bytes free on the device.
        free: usize,
    },

    /// Not enough host memory for a result or an input copy.
    #[error("not enough host memory: need {needed} bytes")]
    HostOutOfMemory {
        /// Bytes needed (`usize::MAX` when the count overflows).
        needed: usize,
    },

    /// No usable CUDA GPU.
    #[error("no CUDA GPU available: {0}")]
    NoGpu(String),

    /// A CUDA call failed.
    #[error("CUDA error: {0}")]
    Cuda(String),

    /// File or I/O problem.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },

    /// A file's content is malformed.
    #[error("{path}: {msg}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        msg: String,
    },
}

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Self {
        Error::Cuda(e.to_string())
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns `Err(Error::Shape(..))` with a formatted message.
macro_rules! shape_err {
    ($($arg:tt)*) => { return Err($crate::error::Error::Shape(format!($($arg)*))) };
}
pub(crate) use shape_err;

/// `len` copies of `value`, or [`Error::HostOutOfMemory`] where the allocation fails
/// (instead of the abort of `vec![value; len]`). `len` is `None` when its computation
/// overflowed.
pub(crate) fn host_vec<T: Clone>(len: Option<usize>, value: T) -> Result<Vec<T>> {
    let bytes = len.and_then(|l| l.checked_mul(std::mem::size_of::<T>()));
    let (Some(len), Some(bytes)) = (len, bytes) else {
        return Err(Error::HostOutOfMemory { needed: usize::MAX });
    };
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::HostOutOfMemory { needed: bytes })?;
    v.resize(len, value);
    Ok(v)
}
