//! Accuracy measures of a computed solution.

use crate::error::Result;
use crate::matrix::{BlockTridiag, BlockVec};
use crate::scalar::{Scalar, wide};

/// Accuracy of `X` for `A X = B`, the worst over the systems of a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Accuracy {
    /// `||A X - B||_F / ||B||_F`.
    pub relative_residual: f64,
    /// Normwise backward error `||A X - B||_F / (||A||_F ||X||_F + ||B||_F)`.
    pub backward_error: f64,
}

/// Computes [`Accuracy`] in `f64` (whatever `T` is).
///
/// ```
/// use blocktri::{generate, residual::accuracy, Solver, Backend};
/// let a = generate::random_spd::<f64>(1, 6, 3, 1).unwrap();
/// let b = generate::random_rhs(a.shape(), 2, 2).unwrap();
/// let mut solver = Solver::new(Backend::CpuSequential).unwrap();
/// solver.factor(&a).unwrap();
/// let x = solver.solve(&b).unwrap();
/// assert!(accuracy(&a, &x, &b).unwrap().relative_residual < 1e-13);
/// ```
pub fn accuracy<T: Scalar>(a: &BlockTridiag<T>, x: &BlockVec<T>, b: &BlockVec<T>) -> Result<Accuracy> {
    let (a64, x64, b64) = (a.cast::<f64>(), x.cast::<f64>(), b.cast::<f64>());
    let ax = a64.matvec(&x64)?;
    let mut worst = Accuracy { relative_residual: 0.0, backward_error: 0.0 };
    for s in 0..a.shape().batch {
        let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let r: Vec<f64> = ax.system(s).iter().zip(b64.system(s)).map(|(p, q)| p - q).collect();
        let (nr, nb, nx) = (norm(&r), norm(b64.system(s)), norm(x64.system(s)));
        let rel = if nb > 0.0 { nr / nb } else { nr };
        let back = nr / (a64.norm_fro(s) * nx + nb).max(f64::MIN_POSITIVE);
        worst.relative_residual = worst.relative_residual.max(rel);
        worst.backward_error = worst.backward_error.max(back);
    }
    Ok(worst)
}

/// Largest `|x - y|` over two equally shaped solutions, relative to `max |y|`.
pub fn relative_difference<T: Scalar>(x: &BlockVec<T>, y: &BlockVec<T>) -> f64 {
    let scale = y.as_slice().iter().fold(0.0f64, |m, &v| m.max(wide(v).abs())).max(f64::MIN_POSITIVE);
    x.as_slice().iter().zip(y.as_slice()).fold(0.0f64, |m, (&p, &q)| m.max((wide(p) - wide(q)).abs())) / scale
}
