//! Vendor-library peers, loaded at run time: the second paper's recursive Schur
//! complement and the sequential block Cholesky on cuSOLVER/cuBLAS batched kernels
//! ([`schur`]), NVIDIA cuDSS ([`cudss`]), and for selected inversion the dense inverse of
//! the assembled matrix by cuSOLVER `potrf` + `potri` ([`dense`]).

#[cfg(feature = "peers")]
pub mod cudss;
#[cfg(feature = "peers")]
pub mod dense;
#[cfg(feature = "peers")]
pub mod schur;

#[cfg(feature = "peers")]
use super::Row;
use super::peaks::Peaks;
use super::{Config, Emit, Problem};
use crate::cuda::Gpu;
use crate::error::Result;
use crate::scalar::Scalar;
use std::sync::Arc;

/// A [`Scalar`] with its cuBLAS/cuSOLVER entry points (`S`/`D` variants).
pub trait VendorScalar: Scalar {
    /// cuDSS/cuBLAS value type code (`CUDA_R_32F` = 0, `CUDA_R_64F` = 1).
    const CUDA_TYPE: i32;
    /// `cublas?gemm_v2`.
    ///
    /// # Safety
    /// Device pointers valid for the dimensions, host scalars.
    #[cfg(feature = "peers")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        h: cudarc::cublas::sys::cublasHandle_t,
        ta: bool,
        tb: bool,
        m: i32,
        n: i32,
        k: i32,
        alpha: Self,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        beta: Self,
        c: u64,
        ldc: i32,
    ) -> i32;
    /// `cublas?gemmBatched` with device pointer arrays.
    ///
    /// # Safety
    /// As [`Self::gemm`], for every matrix of the arrays.
    #[cfg(feature = "peers")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_batched(
        h: cudarc::cublas::sys::cublasHandle_t,
        ta: bool,
        tb: bool,
        m: i32,
        n: i32,
        k: i32,
        alpha: Self,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        beta: Self,
        c: u64,
        ldc: i32,
        count: i32,
    ) -> i32;
    /// `cublas?trsmBatched` (lower triangular, non-unit) with device pointer arrays.
    ///
    /// # Safety
    /// As [`Self::gemm`].
    #[cfg(feature = "peers")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn trsm_batched(
        h: cudarc::cublas::sys::cublasHandle_t,
        right: bool,
        trans: bool,
        m: i32,
        n: i32,
        a: u64,
        lda: i32,
        b: u64,
        ldb: i32,
        count: i32,
    ) -> i32;
    /// `cusolverDn?potrfBatched` (lower).
    ///
    /// # Safety
    /// As [`Self::gemm`]; `info` holds `count` ints.
    #[cfg(feature = "peers")]
    unsafe fn potrf_batched(h: cudarc::cusolver::sys::cusolverDnHandle_t, n: i32, a: u64, lda: i32, info: u64, count: i32) -> i32;
    /// Workspace elements of `cusolverDn?potrf` (`inverse` false) or `cusolverDn?potri`
    /// (true), lower, for an `n x n` matrix at `a`.
    ///
    /// # Safety
    /// As [`Self::gemm`]; `lwork` a host int.
    #[cfg(feature = "peers")]
    unsafe fn dense_work(h: cudarc::cusolver::sys::cusolverDnHandle_t, inverse: bool, n: i32, a: u64, lda: i32, lwork: &mut i32) -> i32;
    /// `cusolverDn?potrf` (`inverse` false: `A = L L^T`) or `cusolverDn?potri` (true:
    /// `A^-1` from `L`, lower triangle), lower, with `lwork` elements of workspace at `work`.
    ///
    /// # Safety
    /// As [`Self::gemm`]; `info` one device int.
    #[cfg(feature = "peers")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn dense_run(
        h: cudarc::cusolver::sys::cusolverDnHandle_t,
        inverse: bool,
        n: i32,
        a: u64,
        lda: i32,
        work: u64,
        lwork: i32,
        info: u64,
    ) -> i32;
}

#[cfg(feature = "peers")]
mod ffi {
    use cudarc::cublas::sys::{cublasDiagType_t as Diag, cublasFillMode_t as Fill, cublasOperation_t as Op, cublasSideMode_t as Side};
    pub fn op(t: bool) -> Op {
        if t { Op::CUBLAS_OP_T } else { Op::CUBLAS_OP_N }
    }
    pub fn side(right: bool) -> Side {
        if right { Side::CUBLAS_SIDE_RIGHT } else { Side::CUBLAS_SIDE_LEFT }
    }
    pub const LOWER: Fill = Fill::CUBLAS_FILL_MODE_LOWER;
    pub const NON_UNIT: Diag = Diag::CUBLAS_DIAG_NON_UNIT;
    pub const SOLVER_LOWER: cudarc::cusolver::sys::cublasFillMode_t = cudarc::cusolver::sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
}

macro_rules! vendor_scalar {
    ($t:ty, $code:expr, $gemm:ident, $gemm_b:ident, $trsm_b:ident, $potrf_b:ident, $potrf:ident, $potrf_w:ident, $potri:ident, $potri_w:ident) => {
        impl VendorScalar for $t {
            const CUDA_TYPE: i32 = $code;
            #[cfg(feature = "peers")]
            unsafe fn gemm(
                h: cudarc::cublas::sys::cublasHandle_t,
                ta: bool,
                tb: bool,
                m: i32,
                n: i32,
                k: i32,
                alpha: Self,
                a: u64,
                lda: i32,
                b: u64,
                ldb: i32,
                beta: Self,
                c: u64,
                ldc: i32,
            ) -> i32 {
                use cudarc::cublas::sys as b_;
                // SAFETY: forwarded from the caller.
                unsafe {
                    b_::$gemm(
                        h,
                        ffi::op(ta),
                        ffi::op(tb),
                        m,
                        n,
                        k,
                        &alpha,
                        a as *const $t,
                        lda,
                        b as *const $t,
                        ldb,
                        &beta,
                        c as *mut $t,
                        ldc,
                    ) as i32
                }
            }
            #[cfg(feature = "peers")]
            unsafe fn gemm_batched(
                h: cudarc::cublas::sys::cublasHandle_t,
                ta: bool,
                tb: bool,
                m: i32,
                n: i32,
                k: i32,
                alpha: Self,
                a: u64,
                lda: i32,
                b: u64,
                ldb: i32,
                beta: Self,
                c: u64,
                ldc: i32,
                count: i32,
            ) -> i32 {
                use cudarc::cublas::sys as b_;
                // SAFETY: forwarded from the caller.
                unsafe {
                    b_::$gemm_b(
                        h,
                        ffi::op(ta),
                        ffi::op(tb),
                        m,
                        n,
                        k,
                        &alpha,
                        a as *const *const $t,
                        lda,
                        b as *const *const $t,
                        ldb,
                        &beta,
                        c as *const *mut $t,
                        ldc,
                        count,
                    ) as i32
                }
            }
            #[cfg(feature = "peers")]
            unsafe fn trsm_batched(
                h: cudarc::cublas::sys::cublasHandle_t,
                right: bool,
                trans: bool,
                m: i32,
                n: i32,
                a: u64,
                lda: i32,
                b: u64,
                ldb: i32,
                count: i32,
            ) -> i32 {
                use cudarc::cublas::sys as b_;
                let one: $t = 1.0;
                // SAFETY: forwarded from the caller.
                unsafe {
                    b_::$trsm_b(
                        h,
                        ffi::side(right),
                        ffi::LOWER,
                        ffi::op(trans),
                        ffi::NON_UNIT,
                        m,
                        n,
                        &one,
                        a as *const *const $t,
                        lda,
                        b as *const *mut $t,
                        ldb,
                        count,
                    ) as i32
                }
            }
            #[cfg(feature = "peers")]
            unsafe fn potrf_batched(h: cudarc::cusolver::sys::cusolverDnHandle_t, n: i32, a: u64, lda: i32, info: u64, count: i32) -> i32 {
                // SAFETY: forwarded from the caller.
                unsafe { cudarc::cusolver::sys::$potrf_b(h, ffi::SOLVER_LOWER, n, a as *mut *mut $t, lda, info as *mut i32, count) as i32 }
            }
            #[cfg(feature = "peers")]
            unsafe fn dense_work(
                h: cudarc::cusolver::sys::cusolverDnHandle_t,
                inverse: bool,
                n: i32,
                a: u64,
                lda: i32,
                lwork: &mut i32,
            ) -> i32 {
                use cudarc::cusolver::sys as cs;
                // SAFETY: forwarded from the caller.
                unsafe {
                    if inverse {
                        cs::$potri_w(h, ffi::SOLVER_LOWER, n, a as *mut $t, lda, lwork) as i32
                    } else {
                        cs::$potrf_w(h, ffi::SOLVER_LOWER, n, a as *mut $t, lda, lwork) as i32
                    }
                }
            }
            #[cfg(feature = "peers")]
            unsafe fn dense_run(
                h: cudarc::cusolver::sys::cusolverDnHandle_t,
                inverse: bool,
                n: i32,
                a: u64,
                lda: i32,
                work: u64,
                lwork: i32,
                info: u64,
            ) -> i32 {
                use cudarc::cusolver::sys as cs;
                let (a, work, info) = (a as *mut $t, work as *mut $t, info as *mut i32);
                // SAFETY: forwarded from the caller.
                unsafe {
                    if inverse {
                        cs::$potri(h, ffi::SOLVER_LOWER, n, a, lda, work, lwork, info) as i32
                    } else {
                        cs::$potrf(h, ffi::SOLVER_LOWER, n, a, lda, work, lwork, info) as i32
                    }
                }
            }
        }
    };
}

vendor_scalar!(
    f64,
    1,
    cublasDgemm_v2,
    cublasDgemmBatched,
    cublasDtrsmBatched,
    cusolverDnDpotrfBatched,
    cusolverDnDpotrf,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotri,
    cusolverDnDpotri_bufferSize
);
vendor_scalar!(
    f32,
    0,
    cublasSgemm_v2,
    cublasSgemmBatched,
    cublasStrsmBatched,
    cusolverDnSpotrfBatched,
    cusolverDnSpotrf,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotri,
    cusolverDnSpotri_bufferSize
);

/// The vendor peers available in this process.
pub struct Peers {
    #[cfg(feature = "peers")]
    blas_ok: bool,
    #[cfg(feature = "peers")]
    cudss: Option<cudss::Library>,
    notes: Vec<String>,
}

impl Peers {
    /// Finds which vendor libraries load; records why the others do not.
    pub fn new(gpu: Option<&Arc<Gpu>>, config: &Config, notes: &mut Vec<String>) -> Self {
        #[cfg(feature = "peers")]
        {
            if gpu.is_none() {
                return Peers { blas_ok: false, cudss: None, notes: Vec::new() };
            }
            // SAFETY: only tries to dlopen the libraries.
            let blas_ok = unsafe { cudarc::cublas::sys::is_culib_present() && cudarc::cusolver::sys::is_culib_present() };
            if !blas_ok {
                notes.push("cuBLAS/cuSOLVER not found: the vendor recursive-Schur and sequential peers do not run".into());
            }
            let cudss = match cudss::Library::load(config.cudss.as_deref()) {
                Ok(l) => Some(l),
                Err(e) => {
                    notes.push(format!("cuDSS not available ({e}): its rows are skipped"));
                    None
                }
            };
            Peers { blas_ok, cudss, notes: Vec::new() }
        }
        #[cfg(not(feature = "peers"))]
        {
            let _ = (gpu, config);
            notes.push("built without the `peers` feature: vendor peers do not run".into());
            Peers { notes: Vec::new() }
        }
    }

    /// Messages collected while running.
    pub fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// Rows of every available vendor peer for one configuration.
    #[allow(unused_variables)]
    #[allow(clippy::too_many_arguments)] // the same context as every other method's bench, plus the sink
    pub fn bench<T: VendorScalar>(
        &mut self,
        config: &Config,
        suite: &str,
        cfg: (usize, usize, usize, usize),
        gpu: &Arc<Gpu>,
        peaks: &Peaks,
        problem: Problem<'_, T>,
        emit: Emit<'_>,
    ) -> Result<()> {
        #[cfg(feature = "peers")]
        {
            // A peer that fails is one skipped row saying why; the run goes on.
            let skipped = |name: &str, why: String| vec![Row::new(suite, name, T::PRECISION, cfg, "factor").skipped(why)];
            let or_failed = |name: &str, r: Result<Vec<Row>>| r.unwrap_or_else(|e| skipped(name, format!("failed: {e}")));
            if self.blas_ok {
                for (name, segment) in [("vendor-schur", Some(2usize)), ("vendor-seq", None)] {
                    if config.wants(name) {
                        emit(or_failed(name, schur::bench::<T>(config, suite, name, segment, cfg, gpu, peaks, problem)));
                    }
                }
            }
            if suite == "selinv" && config.wants("vendor-dense") {
                emit(or_failed("vendor-dense", dense::bench::<T>(config, suite, cfg, gpu, peaks, problem)));
            }
            if config.wants("cudss") {
                emit(match &self.cudss {
                    Some(lib) => or_failed("cudss", cudss::bench::<T>(lib, config, suite, cfg, gpu, peaks, problem)),
                    None => skipped("cudss", "libcudss.so.0 not found".into()),
                });
            }
        }
        #[cfg(not(feature = "peers"))]
        let _ = (config, suite, cfg, gpu, peaks, problem, emit);
        Ok(())
    }
}
