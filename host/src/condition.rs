//! A cheap warning before an inaccurate answer: the 1-norm condition number of every
//! system, estimated from a factorization (LAPACK `pocon`), on every backend.
//!
//! `kappa_1(A) = ||A||_1 ||A^-1||_1`. `||A||_1` is read off the blocks; `||A^-1||_1` is
//! estimated by Hager's method with Higham's refinements (LAPACK `dlacn2`, Higham 1988,
//! Algorithm 4.1), which needs only solves with the factor (`A` is symmetric, so
//! `A^-T = A^-1`): at most eleven single-column solves of the whole batch, every system
//! running its own iteration in lockstep with the others. Each value the iteration sees
//! is `||A^-1 x||_1 / ||x||_1` for some `x`, so the estimate never exceeds the truth; in
//! practice it is almost always within a factor of 3 of it.

use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::{Precision, Scalar, cast, wide};
use crate::solver::Factorization;

/// Iterations of the power-method phase (LAPACK's `ITMAX`).
const MAX_ITERATIONS: usize = 5;

/// `||A_s||_1` (the largest absolute column sum) of every system of `a`, in `f64`.
///
/// ```
/// use blocktri::{condition, BlockTridiag};
/// let mut a = BlockTridiag::<f64>::zeros(2, 1).unwrap(); // [[2, -3], [-3, 5]]
/// a.set_diag(0, 0, 0, 0, 2.0);
/// a.set_diag(0, 1, 0, 0, 5.0);
/// a.set_sub(0, 0, 0, 0, -3.0);
/// assert_eq!(condition::norm1(&a), vec![8.0]);
/// ```
pub fn norm1<T: Scalar>(a: &BlockTridiag<T>) -> Vec<f64> {
    let Shape { batch, nblocks, block: n } = a.shape();
    let ld = a.ld();
    let abs = |v: T| -> f64 { wide(v).abs() };
    (0..batch)
        .map(|s| {
            let mut worst = 0.0f64;
            for i in 0..nblocks {
                let d = a.diag_block(s, i);
                for c in 0..n {
                    // Column c of block column i: D_i, the block below (C_i = A[i+1, i])
                    // and the block above (A[i-1, i] = C_{i-1}^T, whose column c is row c
                    // of C_{i-1}).
                    let mut sum: f64 = d[c * ld..c * ld + n].iter().map(|&v| abs(v)).sum();
                    if i + 1 < nblocks {
                        sum += a.sub_block(s, i)[c * ld..c * ld + n].iter().map(|&v| abs(v)).sum::<f64>();
                    }
                    if i > 0 {
                        let above = a.sub_block(s, i - 1);
                        sum += (0..n).map(|r| abs(above[r * ld + c])).sum::<f64>();
                    }
                    worst = worst.max(sum);
                }
            }
            worst
        })
        .collect()
}

/// Where one system's `||A^-1||_1` iteration stands: what the next solve is for.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// `x = ones / dim`.
    Uniform,
    /// `x = sign(A^-1 x)` after the uniform start: the result's largest entry picks `j`.
    FirstSigns,
    /// `x = e_j`, iteration `iter`.
    Unit {
        j: usize,
        iter: usize,
    },
    /// `x = sign(A^-1 e_j)`: the result's largest entry picks the next `j`.
    Signs {
        j: usize,
        iter: usize,
    },
    /// Higham's alternating vector `x_i = (-1)^i (1 + i / (dim - 1))`.
    Alternating,
    Done,
}

/// One system's iteration state.
struct Estimate {
    step: Step,
    /// The current lower bound of `||A^-1||_1`.
    est: f64,
    /// The last sign vector (`+1` for `>= 0`).
    signs: Vec<f64>,
}

fn sign(v: f64) -> f64 {
    if v >= 0.0 { 1.0 } else { -1.0 }
}

/// First index of the largest `|y_i|`.
fn argmax_abs(y: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in y.iter().enumerate() {
        if v.abs() > y[best].abs() {
            best = i;
        }
    }
    best
}

impl Estimate {
    /// The right-hand side this system's next solve needs.
    fn rhs(&self, x: &mut [f64]) {
        let dim = x.len();
        match self.step {
            Step::Uniform => x.fill(1.0 / dim as f64),
            Step::FirstSigns | Step::Signs { .. } => x.copy_from_slice(&self.signs),
            Step::Unit { j, .. } => {
                x.fill(0.0);
                x[j] = 1.0;
            }
            Step::Alternating => {
                for (i, v) in x.iter_mut().enumerate() {
                    let magnitude = 1.0 + i as f64 / (dim - 1) as f64;
                    *v = if i % 2 == 0 { magnitude } else { -magnitude };
                }
            }
            Step::Done => x.fill(0.0),
        }
    }

    /// Advances with `y = A^-1 x` of the right-hand side [`Self::rhs`] gave.
    fn advance(&mut self, y: &[f64]) {
        let dim = y.len();
        let norm = y.iter().map(|v| v.abs()).sum::<f64>();
        self.step = match self.step {
            Step::Uniform if dim == 1 => {
                self.est = y[0].abs();
                Step::Done
            }
            Step::Uniform => {
                self.est = norm;
                self.signs = y.iter().map(|&v| sign(v)).collect();
                Step::FirstSigns
            }
            Step::FirstSigns => Step::Unit { j: argmax_abs(y), iter: 2 },
            Step::Unit { j, iter } => {
                let previous = self.est;
                self.est = self.est.max(norm);
                let repeated = y.iter().zip(&self.signs).all(|(&v, &s)| sign(v) == s);
                // Converged (the same sign vector again) or cycling (no growth).
                if repeated || norm <= previous {
                    Step::Alternating
                } else {
                    self.signs = y.iter().map(|&v| sign(v)).collect();
                    Step::Signs { j, iter }
                }
            }
            Step::Signs { j, iter } => {
                let next = argmax_abs(y);
                if y[j].abs() != y[next].abs() && iter < MAX_ITERATIONS {
                    Step::Unit { j: next, iter: iter + 1 }
                } else {
                    Step::Alternating
                }
            }
            Step::Alternating => {
                self.est = self.est.max(2.0 * norm / (3 * dim) as f64);
                Step::Done
            }
            Step::Done => Step::Done,
        };
    }
}

/// A lower bound of `||A_s^-1||_1` for every system, from `solve`, which must overwrite
/// its argument (one column per system) with `A^-1` times it.
///
/// Each value is a true lower bound (the norm of `A^-1 x` over the norm of `x` for some
/// `x`), usually within a factor of 3 of the norm.
pub fn inverse_norm1_estimate<T: Scalar>(shape: Shape, mut solve: impl FnMut(&mut BlockVec<T>) -> Result<()>) -> Result<Vec<f64>> {
    let dim = shape.dim();
    let mut states: Vec<Estimate> = (0..shape.batch).map(|_| Estimate { step: Step::Uniform, est: 0.0, signs: vec![0.0; dim] }).collect();
    let (mut x, mut column) = (BlockVec::<T>::zeros(shape, 1)?, vec![0.0f64; dim]);
    while states.iter().any(|e| !matches!(e.step, Step::Done)) {
        for (s, state) in states.iter().enumerate() {
            state.rhs(&mut column);
            for (dst, &v) in x.system_mut(s).iter_mut().zip(&column) {
                *dst = cast(v);
            }
        }
        solve(&mut x)?;
        for (s, state) in states.iter_mut().enumerate() {
            for (dst, &v) in column.iter_mut().zip(x.system(s)) {
                *dst = wide(v);
            }
            state.advance(&column);
        }
    }
    Ok(states.into_iter().map(|e| e.est).collect())
}

/// The estimated 1-norm condition number `||A_s||_1 ||A_s^-1||_1` of every system of `a`,
/// from its factorization in `f` (LAPACK `pocon`, returned as the condition number rather
/// than its reciprocal). See [`Factorization::condition_estimate`].
pub(crate) fn estimate<T: Scalar, F: Factorization<T> + ?Sized>(f: &mut F, a: &BlockTridiag<T>) -> Result<Vec<f64>> {
    match f.shape() {
        None => return Err(Error::Shape("no factorization yet: call factor before condition_estimate".into())),
        Some(s) if s != a.shape() => {
            return Err(Error::ShapeChanged { factored: s.to_string(), given: a.shape().to_string() });
        }
        Some(_) => {}
    }
    let anorm = norm1(a);
    let inverse = inverse_norm1_estimate(a.shape(), |x| f.solve_in_place(x))?;
    Ok(anorm.iter().zip(&inverse).map(|(a, i)| a * i).collect())
}

/// The relative error the condition number `kappa` allows in `precision`:
/// `kappa * u` with `u` the unit roundoff.
///
/// ```
/// use blocktri::{condition::expected_relative_error, Precision};
/// assert!(expected_relative_error(1e4, Precision::F32) > 1e-4);
/// assert!(expected_relative_error(1e4, Precision::F64) < 1e-11);
/// ```
pub fn expected_relative_error(kappa: f64, precision: Precision) -> f64 {
    let unit_roundoff = match precision {
        Precision::F32 => f32::EPSILON as f64 / 2.0,
        Precision::F64 => f64::EPSILON / 2.0,
    };
    kappa * unit_roundoff
}
