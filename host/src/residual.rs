//! Accuracy measures of a computed solution.

use crate::error::Result;
use crate::matrix::{BlockTridiag, BlockVec};
use crate::scalar::{Scalar, wide};
use rayon::prelude::*;

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
    let shape = a.shape();
    if x.shape() != shape || b.shape() != shape || x.ncols() != b.ncols() {
        return Err(crate::Error::Shape(format!(
            "accuracy of a {} x {} solution for a {} x {} right-hand side of {shape}",
            x.shape(),
            x.ncols(),
            b.shape(),
            b.ncols()
        )));
    }
    // System by system, in parallel, without an f64 copy of the whole batch (a batch may
    // fill most of the host's memory).
    let per_system: Vec<Accuracy> = (0..shape.batch)
        .into_par_iter()
        .map(|s| {
            let (nr, nb, nx) = residual_norms(a, x, b, s);
            Accuracy {
                relative_residual: if nb > 0.0 { nr / nb } else { nr },
                backward_error: nr / (a.norm_fro(s) * nx + nb).max(f64::MIN_POSITIVE),
            }
        })
        .collect();
    Ok(per_system.into_iter().fold(Accuracy { relative_residual: 0.0, backward_error: 0.0 }, |w, a| Accuracy {
        relative_residual: w.relative_residual.max(a.relative_residual),
        backward_error: w.backward_error.max(a.backward_error),
    }))
}

/// `(||A X - B||_F, ||B||_F, ||X||_F)` of system `s`, in `f64`.
fn residual_norms<T: Scalar>(a: &BlockTridiag<T>, x: &BlockVec<T>, b: &BlockVec<T>, s: usize) -> (f64, f64, f64) {
    let shape = a.shape();
    let (n, nblocks, ld, dim) = (shape.block, shape.nblocks, a.ld(), shape.dim());
    let (xs, bs) = (x.system(s), b.system(s));
    let (mut rr, mut bb, mut xx) = (0.0, 0.0, 0.0);
    let mut row = vec![0.0f64; n];
    for col in 0..x.ncols() {
        let (xc, bc) = (&xs[col * dim..(col + 1) * dim], &bs[col * dim..(col + 1) * dim]);
        for i in 0..nblocks {
            row.iter_mut().zip(&bc[i * n..(i + 1) * n]).for_each(|(r, &v)| *r = -wide(v));
            // D_i x_i (+ C_{i-1} x_{i-1}) (+ C_i^T x_{i+1}), blocks column-major at `ld`.
            let d = a.diag_block(s, i);
            for c in 0..n {
                let xv = wide(xc[i * n + c]);
                for r in 0..n {
                    row[r] += wide(d[c * ld + r]) * xv;
                }
            }
            if i > 0 {
                let lower = a.sub_block(s, i - 1);
                for c in 0..n {
                    let xv = wide(xc[(i - 1) * n + c]);
                    for r in 0..n {
                        row[r] += wide(lower[c * ld + r]) * xv;
                    }
                }
            }
            if i + 1 < nblocks {
                let upper = a.sub_block(s, i);
                for r in 0..n {
                    let col_r = &upper[r * ld..r * ld + n];
                    row[r] += col_r.iter().zip(&xc[(i + 1) * n..(i + 2) * n]).map(|(&u, &v)| wide(u) * wide(v)).sum::<f64>();
                }
            }
            rr += row.iter().map(|v| v * v).sum::<f64>();
        }
        bb += bc.iter().map(|&v| wide(v).powi(2)).sum::<f64>();
        xx += xc.iter().map(|&v| wide(v).powi(2)).sum::<f64>();
    }
    (rr.sqrt(), bb.sqrt(), xx.sqrt())
}

/// Largest `|x - y|` over two equally shaped solutions, relative to `max |y|`.
pub fn relative_difference<T: Scalar>(x: &BlockVec<T>, y: &BlockVec<T>) -> f64 {
    let scale = y.as_slice().iter().fold(0.0f64, |m, &v| m.max(wide(v).abs())).max(f64::MIN_POSITIVE);
    x.as_slice().iter().zip(y.as_slice()).fold(0.0f64, |m, (&p, &q)| m.max((wide(p) - wide(q)).abs())) / scale
}
