//! Selected inversion on the CPU: the diagonal blocks `(A^-1)_ii` and the sub-diagonal
//! blocks `(A^-1)_{i+1,i}` of every system, from a block Cholesky factor, without forming
//! `A^-1` (the posterior covariances of a Kalman smoother, the marginal variances of a
//! Gaussian Markov random field).
//!
//! From `Sigma L = L^-T` (`Sigma = A^-1`, `L^-T` upper block triangular with diagonal
//! `L_ii^-T`), column `b` of a factor whose off-diagonal blocks of column `b` sit in rows
//! `l` and `r` gives, with `L_lb = U_l^T`, `L_rb = U_r^T`:
//!
//! ```text
//! Sigma_lb = -(Sigma_ll U_l^T + Sigma_lr U_r^T) L_bb^-1
//! Sigma_rb = -(Sigma_rl U_l^T + Sigma_rr U_r^T) L_bb^-1
//! Sigma_bb = L_bb^-T (L_bb^-1 - U_l Sigma_lb - U_r Sigma_rb)
//! ```
//!
//! so `Sigma` on the factor's pattern follows from the blocks of `Sigma` of the nodes
//! eliminated after `b`: a backward sweep, in elimination order reversed.
//! [`sequential`] runs it over the sequential factor (`l` absent, `r = b + 1`: the
//! classical block-tridiagonal recursion); [`nested_dissection`] over the nested-dissection
//! factor of the threaded backend, top level first, the nodes of a level in parallel
//! (the level order a GPU version follows).

use crate::error::Result;
use crate::matrix::{BlockTridiag, Shape};
use crate::scalar::{Scalar, cast};
use blocktri_device::layout::{left_of, level_of, levels, node_number, nodes_in_level, right_of};
use blocktri_device::selinv::sub_diagonal_slot;
use nalgebra::DMatrix;
use rayon::prelude::*;

/// A neighbour `n` of the column being inverted: its coupling and its diagonal block of
/// `Sigma`.
struct Neighbour<'a, T: Scalar> {
    /// `U` (`L_nb = U^T`).
    u: &'a DMatrix<T>,
    /// `Sigma_nn`.
    sigma: &'a DMatrix<T>,
}

/// `Sigma` on the pattern of one factor column: `(Sigma_lb, Sigma_rb, Sigma_bb)` from
/// `L_bb`, the couplings `U_l`, `U_r` (`L_lb = U_l^T`) and the neighbours' blocks of
/// `Sigma` (`Sigma_ll`, `Sigma_rr` and `Sigma_rl`; `None` where a neighbour is absent).
fn column<T: Scalar>(
    l_bb: &DMatrix<T>,
    left: Option<Neighbour<'_, T>>,
    right: Option<Neighbour<'_, T>>,
    sigma_rl: Option<&DMatrix<T>>,
) -> (Option<DMatrix<T>>, Option<DMatrix<T>>, DMatrix<T>) {
    let n = l_bb.nrows();
    // X = -(G) L_bb^-1 as the transpose of L_bb^-T (-G^T): one upper triangular solve.
    let times_inverse = |g: DMatrix<T>| -> DMatrix<T> {
        let mut xt = -g.transpose();
        l_bb.tr_solve_lower_triangular_mut(&mut xt);
        xt.transpose()
    };
    let sigma_lb = left.as_ref().map(|l| {
        let mut g = l.sigma * l.u.transpose();
        if let (Some(r), Some(rl)) = (&right, sigma_rl) {
            g += rl.transpose() * r.u.transpose();
        }
        times_inverse(g)
    });
    let sigma_rb = right.as_ref().map(|r| {
        let mut g = r.sigma * r.u.transpose();
        if let (Some(l), Some(rl)) = (&left, sigma_rl) {
            g += rl * l.u.transpose();
        }
        times_inverse(g)
    });
    // L_bb^-1, then Sigma_bb = L_bb^-T (L_bb^-1 - U_l Sigma_lb - U_r Sigma_rb).
    let mut inner = DMatrix::<T>::identity(n, n);
    l_bb.solve_lower_triangular_mut(&mut inner);
    if let (Some(l), Some(s)) = (&left, &sigma_lb) {
        inner -= l.u * s;
    }
    if let (Some(r), Some(s)) = (&right, &sigma_rb) {
        inner -= r.u * s;
    }
    l_bb.tr_solve_lower_triangular_mut(&mut inner);
    // Exactly symmetric (the two triangles differ by rounding).
    let sigma_bb = (&inner + inner.transpose()) * cast::<T>(0.5);
    (sigma_lb, sigma_rb, sigma_bb)
}

/// Stores `Sigma_bb` and `Sigma_{b+1,b}` into the output layout.
fn store<T: Scalar>(out: &mut BlockTridiag<T>, s: usize, b: usize, diag: &DMatrix<T>, sub: Option<&DMatrix<T>>) {
    let (n, ld) = (out.shape().block, out.ld());
    let d = out.diag_block_mut(s, b);
    for c in 0..n {
        for r in 0..n {
            d[c * ld + r] = diag[(r, c)];
        }
    }
    if let Some(sub) = sub {
        let blk = out.sub_block_mut(s, b);
        for c in 0..n {
            for r in 0..n {
                blk[c * ld + r] = sub[(r, c)];
            }
        }
    }
}

/// The classical recursion over the sequential factor: `l_diag[s N + i] = L_ii`,
/// `l_sub[s (N - 1) + i] = L_{i+1,i}`.
pub(crate) fn sequential<T: Scalar>(shape: Shape, l_diag: &[DMatrix<T>], l_sub: &[DMatrix<T>]) -> Result<BlockTridiag<T>> {
    let (nb, batch) = (shape.nblocks, shape.batch);
    let mut out = BlockTridiag::zeros_padded(shape, shape.block)?;
    for s in 0..batch {
        let mut next: Option<DMatrix<T>> = None; // Sigma_{i+1,i+1}
        for b in (0..nb).rev() {
            let u = (b + 1 < nb).then(|| l_sub[s * (nb - 1) + b].transpose());
            let right = match (&u, &next) {
                (Some(u), Some(sigma)) => Some(Neighbour { u, sigma }),
                _ => None,
            };
            let (_, sigma_rb, sigma_bb) = column(&l_diag[s * nb + b], None, right, None);
            store(&mut out, s, b, &sigma_bb, sigma_rb.as_ref());
            next = Some(sigma_bb);
        }
    }
    Ok(out)
}

/// The top-down sweep over the nested-dissection factor of the threaded backend: `diag`
/// holds `L_bb` and `ul`, `ur` the couplings `U_l`, `U_r` (`n x n`, leading dimension `n`,
/// block `s N + b`).
pub(crate) fn nested_dissection<T: Scalar>(shape: Shape, diag: &[T], ul: &[T], ur: &[T]) -> Result<BlockTridiag<T>> {
    let (n, nb, batch) = (shape.block, shape.nblocks, shape.batch);
    let block = |v: &[T], s: usize, b: usize| DMatrix::from_column_slice(n, n, &v[(s * nb + b) * n * n..][..n * n]);
    let nbu = nb as u32;
    // Per system and block: (Sigma_bb, Sigma_lb, Sigma_rb), filled top level first.
    type Column<T> = (DMatrix<T>, Option<DMatrix<T>>, Option<DMatrix<T>>);
    let mut sigma: Vec<Option<Column<T>>> = vec![None; batch * nb];
    for m in (0..levels(nbu)).rev() {
        let count = nodes_in_level(nbu, m) as usize;
        let done: Vec<(usize, Column<T>)> = (0..batch * count)
            .into_par_iter()
            .map(|job| {
                let (s, t) = (job / count, job % count);
                let i = node_number(m, t as u32);
                let b = (i - 1) as usize;
                let (li, ri) = (left_of(i, m), right_of(i, m, nbu));
                let at = |j: u32| sigma[s * nb + (j - 1) as usize].as_ref().expect("neighbours are on higher levels");
                let (u_l, u_r) = (li.map(|_| block(ul, s, b)), ri.map(|_| block(ur, s, b)));
                // Sigma_rl of the two neighbours, adjacent one level up: stored with the
                // one eliminated first (see `layout::fill_slot`).
                let sigma_rl = match (li, ri) {
                    (Some(l), Some(r)) if level_of(r) < level_of(l) => Some(at(r).1.as_ref().expect("left of r").transpose()),
                    (Some(l), Some(_)) => Some(at(l).2.as_ref().expect("right of l").clone()),
                    _ => None,
                };
                let left = li.zip(u_l.as_ref()).map(|(l, u)| Neighbour { u, sigma: &at(l).0 });
                let right = ri.zip(u_r.as_ref()).map(|(r, u)| Neighbour { u, sigma: &at(r).0 });
                let (sigma_lb, sigma_rb, sigma_bb) = column(&block(diag, s, b), left, right, sigma_rl.as_ref());
                (s * nb + b, (sigma_bb, sigma_lb, sigma_rb))
            })
            .collect();
        for (k, c) in done {
            sigma[k] = Some(c);
        }
    }
    let mut out = BlockTridiag::zeros_padded(shape, n)?;
    for s in 0..batch {
        for b in 0..nb {
            let (d, _, right) = sigma[s * nb + b].as_ref().expect("every block eliminated");
            // Sigma_{b+1,b}: with b when b goes first (b + 1 is its right neighbour, this
            // node's Sigma_rb), else the transpose of b + 1's Sigma_{l,b+1}.
            let sub = if b + 1 == nb {
                None
            } else if sub_diagonal_slot(b as u32 + 1).1 {
                right.clone()
            } else {
                sigma[s * nb + b + 1].as_ref().and_then(|c| c.1.as_ref()).map(|m| m.transpose())
            };
            store(&mut out, s, b, d, sub.as_ref());
        }
    }
    Ok(out)
}
