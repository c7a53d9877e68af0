//! The sequential block Cholesky factorization and solve (second paper, Algorithms 1-2),
//! in nalgebra: the reference every other backend is checked against.

use crate::error::{Error, Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::Scalar;
use crate::solver::Factorization;
use nalgebra::DMatrix;

/// `A = L L^T` block by block: `L_0 = chol(D_0)`, then for `i = 1..N`:
/// `L_{i,i-1} = C_{i-1} L_{i-1}^-T`, `L_i = chol(D_i - L_{i,i-1} L_{i,i-1}^T)`.
///
/// ```
/// use blocktri::{cpu::SequentialCholesky, generate, Factorization};
/// let a = generate::random_spd::<f64>(1, 5, 3, 0).unwrap();
/// let b = generate::random_rhs(a.shape(), 1, 1).unwrap();
/// let mut chol = SequentialCholesky::new();
/// chol.factor(&a).unwrap();
/// let x = chol.solve(&b).unwrap();
/// assert_eq!(x.shape(), a.shape());
/// ```
#[derive(Clone, Debug, Default)]
pub struct SequentialCholesky<T: Scalar> {
    shape: Option<Shape>,
    diag: Vec<DMatrix<T>>,
    sub: Vec<DMatrix<T>>,
}

impl<T: Scalar> SequentialCholesky<T> {
    /// An empty solver.
    pub fn new() -> Self {
        SequentialCholesky { shape: None, diag: Vec::new(), sub: Vec::new() }
    }

    /// `L_ii` of system `s` (lower triangular).
    pub fn l_diag(&self, s: usize, i: usize) -> Option<&DMatrix<T>> {
        let shape = self.shape?;
        self.diag.get(s * shape.nblocks + i)
    }

    /// `L_{i+1,i}` of system `s`.
    pub fn l_sub(&self, s: usize, i: usize) -> Option<&DMatrix<T>> {
        let shape = self.shape?;
        self.sub.get(s * (shape.nblocks - 1) + i)
    }
}

fn block_to_matrix<T: Scalar>(blk: &[T], n: usize, ld: usize) -> DMatrix<T> {
    DMatrix::from_fn(n, n, |r, c| blk[c * ld + r])
}

impl<T: Scalar> Factorization<T> for SequentialCholesky<T> {
    fn factor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.shape = None;
        a.validate(T::symmetry_tolerance())?;
        let shape = a.shape();
        let (n, nb, ld) = (shape.block, shape.nblocks, a.ld());
        let mut diag = Vec::with_capacity(shape.batch * nb);
        let mut sub = Vec::with_capacity(shape.batch * (nb - 1));
        for s in 0..shape.batch {
            let mut prev: Option<DMatrix<T>> = None;
            for i in 0..nb {
                let mut d = block_to_matrix(a.diag_block(s, i), n, ld);
                if let Some(lp) = &prev {
                    // L_{i,i-1}^T = L_{i-1}^-1 C_{i-1}^T.
                    let mut xt = block_to_matrix(a.sub_block(s, i - 1), n, ld).transpose();
                    lp.solve_lower_triangular_mut(&mut xt);
                    let x = xt.transpose();
                    d -= &x * &xt;
                    sub.push(x);
                }
                let chol = nalgebra::Cholesky::new(d).ok_or(Error::NotPositiveDefinite { system: s, block: i, level: 0 })?;
                let l = chol.l();
                prev = Some(l.clone());
                diag.push(l);
            }
        }
        self.diag = diag;
        self.sub = sub;
        self.shape = Some(shape);
        Ok(())
    }

    fn solve_in_place(&mut self, b: &mut BlockVec<T>) -> Result<()> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        if b.shape() != shape {
            shape_err!("right-hand side shape {} does not match the factorization {shape}", b.shape());
        }
        b.validate()?;
        let (n, nb, k, dim) = (shape.block, shape.nblocks, b.ncols(), shape.dim());
        for s in 0..shape.batch {
            let sys = b.system_mut(s);
            let seg = |sys: &[T], i: usize| DMatrix::from_fn(n, k, |r, c| sys[c * dim + i * n + r]);
            let put = |sys: &mut [T], i: usize, m: &DMatrix<T>| {
                for c in 0..k {
                    for r in 0..n {
                        sys[c * dim + i * n + r] = m[(r, c)];
                    }
                }
            };
            let (ld_, ls_) = (&self.diag[s * nb..(s + 1) * nb], &self.sub[s * (nb - 1)..(s + 1) * (nb - 1)]);
            // Forward: y_i = L_i^-1 (b_i - L_{i,i-1} y_{i-1}).
            let mut y_prev: Option<DMatrix<T>> = None;
            for i in 0..nb {
                let mut y = seg(sys, i);
                if let Some(yp) = &y_prev {
                    y -= &ls_[i - 1] * yp;
                }
                ld_[i].solve_lower_triangular_mut(&mut y);
                put(sys, i, &y);
                y_prev = Some(y);
            }
            // Backward: x_i = L_i^-T (y_i - L_{i+1,i}^T x_{i+1}).
            let mut x_next: Option<DMatrix<T>> = None;
            for i in (0..nb).rev() {
                let mut x = seg(sys, i);
                if let Some(xn) = &x_next {
                    x -= ls_[i].tr_mul(xn);
                }
                ld_[i].tr_solve_lower_triangular_mut(&mut x);
                put(sys, i, &x);
                x_next = Some(x);
            }
        }
        if let Err(Error::NonFinite { system, block, .. }) = b.validate() {
            return Err(Error::NonFiniteSolution { system, block });
        }
        Ok(())
    }

    fn log_determinant(&mut self) -> Result<Vec<f64>> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        let nb = shape.nblocks;
        Ok((0..shape.batch)
            .map(|s| {
                self.diag[s * nb..(s + 1) * nb]
                    .iter()
                    .map(|l| crate::logdet::sum_of_diagonal_logs(l.as_slice(), 1, shape.block, shape.block))
                    .sum()
            })
            .collect())
    }

    fn selected_inverse(&mut self) -> Result<BlockTridiag<T>> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        super::selinv::sequential(shape, &self.diag, &self.sub)
    }

    fn shape(&self) -> Option<Shape> {
        self.shape
    }

    fn name(&self) -> &'static str {
        "cpu-sequential"
    }
}
