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

    /// Not enough GPU memory: a size check (which keeps a 5 % margin) failed, or the
    /// driver refused an allocation. In the second case `free` may exceed `needed`: the
    /// free bytes are not all usable in one piece (the memory pool's granularity,
    /// fragmentation). The solver keeps what it had and takes its next call.
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

impl Error {
    /// The same error again, for a caller that keeps one and reports it more than once
    /// (`Error` is not `Clone`: [`Error::Io`] holds an `io::Error`). The variants that
    /// opening a device returns keep their kind; any other becomes [`Error::NoGpu`] with
    /// its message.
    pub(crate) fn replayed(&self) -> Error {
        match self {
            Error::NoGpu(m) => Error::NoGpu(m.clone()),
            Error::Shape(m) => Error::Shape(m.clone()),
            Error::Cuda(m) => Error::Cuda(m.clone()),
            Error::Format { path, msg } => Error::Format { path: path.clone(), msg: msg.clone() },
            other => Error::NoGpu(other.to_string()),
        }
    }
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

/// `len` zeros, or [`Error::HostOutOfMemory`]: from the allocator's zeroed memory, so that
/// a large buffer is fresh zero pages that nobody writes twice (the first write of each
/// page, often by several threads, is the only pass) instead of a memset on one thread.
pub(crate) fn zeroed_vec<T: crate::Scalar>(len: Option<usize>) -> Result<Vec<T>> {
    let too_big = || Error::HostOutOfMemory { needed: usize::MAX };
    let len = len.ok_or_else(too_big)?;
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| too_big())?;
    // SAFETY: the layout has a non-zero size (len > 0, T is f32 or f64).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if ptr.is_null() {
        return Err(Error::HostOutOfMemory { needed: layout.size() });
    }
    advise_huge_pages(ptr as usize, layout.size());
    // SAFETY: allocated by the global allocator with T's layout for `len` values, all of
    // them initialized: zero bits are 0.0 for f32 and f64, the only Scalar types (sealed).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Asks for transparent huge pages on the untouched host range `addr..addr + bytes` (from
/// 4 MiB): its first writes then fault in 2 MB at a time (first touch ran at 37 GB/s with
/// huge pages and 20 GB/s without on 16 threads of the H100 machine; docs/perf-notes.md,
/// entry 14). Advice only: nothing happens elsewhere than on Linux or when it fails.
pub(crate) fn advise_huge_pages(addr: usize, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= 4 << 20 {
        const HUGE: usize = 2 << 20;
        let (start, end) = (addr.next_multiple_of(HUGE), (addr + bytes) / HUGE * HUGE);
        if end > start {
            // SAFETY: advice on whole pages inside the caller's own allocation; no memory
            // is read or written, and a failure is harmless.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, bytes);
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn a_replayed_error_keeps_its_kind_and_message() {
        let shape = Error::Shape("BLOCKTRI_PTX_ARCH=sm_70: no such PTX build".into());
        assert!(matches!(shape.replayed(), Error::Shape(ref m) if m.contains("sm_70")));
        let no_gpu = Error::NoGpu("the CUDA driver reports no device".into());
        assert_eq!(no_gpu.replayed().to_string(), no_gpu.to_string());
        let format = Error::Format { path: "<embedded PTX sm_90>".into(), msg: "damaged".into() };
        assert_eq!(format.replayed().to_string(), format.to_string());
        // A kind that opening a device does not return reads as "no GPU", message kept.
        let other = Error::OutOfMemory { needed: 2, free: 1 };
        assert!(matches!(other.replayed(), Error::NoGpu(ref m) if m.contains("need 2 bytes")));
    }
}
