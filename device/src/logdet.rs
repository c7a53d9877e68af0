//! The log-determinant of every factored system, `log det A = 2 sum log diag(L)`, as one
//! pass over the diagonal blocks `L_ii` after the factorization (any engine: all of them
//! leave `L_ii` in the lower triangle of the working diagonal blocks).
//!
//! No logarithm on the device (`no_std` PTX has none without libdevice): each thread
//! multiplies its diagonal entries as a floating-point mantissa in `[1, 2)` times a power
//! of two kept as an exact integer count, the block combines the threads' pairs, and the
//! host takes one logarithm per system: `ln det A = 2 (ln m + e ln 2)`. The product
//! cannot overflow or underflow whatever `N n` is, and its relative error grows like
//! `N n` units of `f64` rounding (an absolute error of about `1e-10` in `ln det A` for
//! `N n = 10^6`).

use blocktri_prims::{Real, block_idx_x, shared, sync_threads, thread_idx_x};

/// Threads of a [`log_det_parts`] block.
pub const LOGDET_THREADS: u32 = 256;

/// Shared memory of [`log_det_parts`] in bytes: a mantissa and an exponent per thread.
pub const LOGDET_SHARED_BYTES: usize = 2 * LOGDET_THREADS as usize * 8;

/// Arguments of [`log_det_parts`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LogDetArgs<T> {
    /// The factored diagonal blocks `L_ii`: `systems * nblocks` blocks of `ld x n`.
    pub diag: *const T,
    /// Per system: the mantissa `m` in `[1, 2)` and the exponent `e` (an integer held in
    /// an `f64`) of `prod diag(L) = m 2^e`.
    pub out: *mut f64,
    /// Leading dimension of a block.
    pub ld: u32,
    /// Block size.
    pub n: u32,
    /// Blocks per system.
    pub nblocks: u32,
}

/// `m 2^e` as a mantissa in `[1, 2)` and an exponent, for a positive finite `x`
/// (subnormals included).
#[inline(always)]
pub fn split(x: f64) -> (f64, i64) {
    let (x, shift) = if x < f64::MIN_POSITIVE { (x * 18_446_744_073_709_551_616.0, -64) } else { (x, 0) }; // 2^64
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mantissa = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    (mantissa, exponent + shift)
}

/// `(m1 2^e1) (m2 2^e2)` with the mantissa brought back into `[1, 2)`.
#[inline(always)]
pub fn multiply(a: (f64, i64), b: (f64, i64)) -> (f64, i64) {
    let m = a.0 * b.0; // in [1, 4)
    if m >= 2.0 { (m * 0.5, a.1 + b.1 + 1) } else { (m, a.1 + b.1) }
}

/// One block per system (grid `x` = systems): `prod diag(L)` of the system's blocks as
/// `(m, e)` into `out[2 s]`, `out[2 s + 1]`.
///
/// # Safety
/// [`LOGDET_THREADS`] threads, [`LOGDET_SHARED_BYTES`] of dynamic shared memory; the
/// buffers as [`LogDetArgs`] describes, the diagonal entries positive and finite (a
/// successful factorization).
pub unsafe fn log_det_parts<T: Real>(args: &LogDetArgs<T>) {
    let (ld, n, nb) = (args.ld as usize, args.n as usize, args.nblocks as usize);
    let (s, tid) = (block_idx_x() as usize, thread_idx_x() as usize);
    let threads = LOGDET_THREADS as usize;
    let mut acc = (1.0f64, 0i64);
    let mut k = tid;
    while k < nb * n {
        let (i, r) = (k / n, k % n);
        // SAFETY: block (s, i) and its diagonal entry r lie inside `diag`.
        let x = unsafe { *args.diag.add((s * nb + i) * ld * n + r * ld + r) }.to_f64();
        acc = multiply(acc, split(x));
        k += threads;
    }
    // Tree reduction of the pairs in shared memory (exponents exact in f64 below 2^53).
    let mantissas = shared::dynamic_shared::<f64>();
    // SAFETY (all shared accesses): indices below 2 * threads, within the dynamic window.
    let exponents = unsafe { mantissas.add(threads) };
    unsafe {
        *mantissas.add(tid) = acc.0;
        *exponents.add(tid) = acc.1 as f64;
    }
    sync_threads();
    let mut half = threads / 2;
    while half > 0 {
        if tid < half {
            unsafe {
                let other = (*mantissas.add(tid + half), *exponents.add(tid + half) as i64);
                let mine = (*mantissas.add(tid), *exponents.add(tid) as i64);
                let (m, e) = multiply(mine, other);
                *mantissas.add(tid) = m;
                *exponents.add(tid) = e as f64;
            }
        }
        sync_threads();
        half /= 2;
    }
    if tid == 0 {
        // SAFETY: two entries per system.
        unsafe {
            *args.out.add(2 * s) = *mantissas;
            *args.out.add(2 * s + 1) = *exponents;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_multiply_keep_the_value() {
        for x in [1.0, 1.5, 2.0, 3.75e300, 1e-300, 5e-324, f64::MIN_POSITIVE, 0.3] {
            let (m, e) = split(x);
            assert!((1.0..2.0).contains(&m), "{x}: {m}");
            assert_eq!(m * 2f64.powi(e as i32), x, "{x}");
        }
        let (m, e) = multiply(split(1e200), split(1e200));
        assert!(((m.ln() + e as f64 * 2f64.ln()) - 400.0 * 10f64.ln()).abs() < 1e-12);
    }
}
