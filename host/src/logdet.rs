//! `log det A = 2 sum log diag(L)` per system, from a factorization of any backend
//! ([`Factorization::log_determinant`](crate::Factorization::log_determinant)).
//!
//! The CPU backends sum the logarithms of their `L_ii` diagonals in `f64`; the GPU runs
//! one pass over its factored diagonal blocks (`blocktri_device::logdet`) that returns
//! each system's `prod diag(L)` as a mantissa and a power of two, and the host takes the
//! logarithm here.

use crate::scalar::{Scalar, wide};

/// `2 sum_j ln L_jj` over the diagonal blocks of one system: `blocks` consecutive blocks
/// of `n x n` with leading dimension `ld`, starting at `diag[0]`.
pub(crate) fn sum_of_diagonal_logs<T: Scalar>(diag: &[T], blocks: usize, n: usize, ld: usize) -> f64 {
    let mut sum = 0.0;
    for i in 0..blocks {
        for r in 0..n {
            sum += wide(diag[i * ld * n + r * ld + r]).ln();
        }
    }
    2.0 * sum
}

/// `2 (ln m + e ln 2)` of every system's `(m, e)` pair (`prod diag(L) = m 2^e`).
pub(crate) fn from_mantissa_exponent(parts: &[f64]) -> Vec<f64> {
    parts.chunks_exact(2).map(|p| 2.0 * (p[0].ln() + p[1] * std::f64::consts::LN_2)).collect()
}
