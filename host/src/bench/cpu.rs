//! CPU methods in the benchmark: this project's sequential (reference) and threaded
//! solvers, and faer's sparse Cholesky (supernodal/simplicial with AMD ordering, the
//! CHOLMOD-class general sparse baseline) on the same matrix in CSC form.

use super::timing::time_cpu;
use super::{Config, Emit, Problem, Row};
use crate::cpu::{SequentialCholesky, ThreadedCholesky};
use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec};
use crate::residual::accuracy;
use crate::scalar::Scalar;
use crate::solver::Factorization;
use faer::linalg::solvers::SolveCore;
use faer::sparse::linalg::solvers::{Llt, SymbolicLlt};
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, Side};

/// Factor and solve rows of a CPU solver; with `selinv` also the selected inversion (after
/// the factor).
fn measure_dense<T: Scalar, F: Factorization<T>>(
    config: &Config,
    row: impl Fn(&str) -> Row,
    selinv: bool,
    mut solver: F,
    a: &BlockTridiag<T>,
    b: &BlockVec<T>,
    flops: f64,
) -> Result<Vec<Row>> {
    let mut rf = row("factor");
    rf.flops = flops;
    rf.time = time_cpu(config.repeat, |_| solver.factor(a))?;
    let mut rs = row("solve");
    rs.time = time_cpu(config.repeat, |_| solver.solve(b).map(|_| ()))?;
    let x = solver.solve(b)?;
    rs.residual = Some(accuracy(a, &x, b)?.relative_residual);
    let mut rows = vec![rf, rs];
    if selinv {
        let mut r = row("selinv");
        r.time = time_cpu(config.repeat, |_| solver.selected_inverse().map(|_| ()))?;
        r.note = "diagonal and sub-diagonal blocks of A^-1 from the factor".into();
        rows.push(r);
    }
    Ok(rows)
}

/// Rows of the CPU methods for one configuration (skipped beyond the flop budget).
pub fn bench<T: Scalar>(
    config: &Config,
    suite: &str,
    cfg: (usize, usize, usize, usize),
    problem: Problem<'_, T>,
    emit: Emit<'_>,
) -> Result<()> {
    let (s, nb, n, _) = cfg;
    let seq_flops = (s * nb) as f64 * (7.0 / 3.0) * (n as f64).powi(3);
    let mut rows = Vec::new();
    // A row maker for method `name`, or None when it is not selected or over its budget.
    type RowMaker = Box<dyn Fn(&str) -> Row>;
    let mut cpu = |name: &str, budget_factor: f64| -> Option<RowMaker> {
        if !config.wants(name) {
            return None;
        }
        let row = {
            let (suite, name) = (suite.to_string(), name.to_string());
            move |phase: &str| Row::new(&suite, &name, T::PRECISION, cfg, phase)
        };
        if seq_flops * budget_factor > config.cpu_flop_budget {
            rows.push(row("factor").skipped(format!("estimated {:.1e} flops, over the CPU budget", seq_flops * budget_factor)));
            return None;
        }
        Some(Box::new(row))
    };
    let seq = cpu("cpu-sequential", 1.0);
    let thr = cpu("cpu-threaded", 0.5);
    let sparse = cpu("faer-sparse", 1.0);
    emit(rows);
    if seq.is_none() && thr.is_none() && sparse.is_none() {
        return Ok(()); // Nothing to run: do not generate the problem (it may not fit).
    }
    let (a, b) = problem(0)?;
    if let Some(row) = seq {
        emit(measure_dense(config, row, suite == "selinv", SequentialCholesky::<T>::new(), &a, &b, seq_flops)?);
    }
    if let Some(row) = thr {
        emit(measure_dense(config, row, suite == "selinv", ThreadedCholesky::<T>::new(), &a, &b, seq_flops)?);
    }
    if let Some(row) = sparse {
        emit(bench_faer_sparse(config, row, &a, &b, seq_flops)?);
    }
    Ok(())
}

fn csc<T: Scalar>(a: &BlockTridiag<T>, s: usize) -> Result<SparseColMat<usize, T>> {
    // The lower triangle, as (row, column, value) triplets.
    let csr = a.to_csr(s, true);
    let triplets: Vec<Triplet<usize, usize, T>> = csr.triplet_iter().map(|(r, c, &v)| Triplet::new(r, c, v)).collect();
    let d = a.shape().dim();
    SparseColMat::try_new_from_triplets(d, d, &triplets).map_err(|e| Error::Unsupported(format!("faer sparse matrix: {e:?}")))
}

fn bench_faer_sparse<T: Scalar>(
    config: &Config,
    row: Box<dyn Fn(&str) -> Row>,
    a: &BlockTridiag<T>,
    b: &BlockVec<T>,
    flops: f64,
) -> Result<Vec<Row>> {
    let shape = a.shape();
    let mats: Vec<_> = (0..shape.batch).map(|s| csc(a, s)).collect::<Result<_>>()?;
    let err = |e: String| Error::Unsupported(format!("faer sparse Cholesky: {e}"));
    let mut symbolic = Vec::new();
    let ra = time_cpu(config.repeat, |_| {
        symbolic = mats
            .iter()
            .map(|m| SymbolicLlt::try_new(m.symbolic(), Side::Lower).map_err(|e| err(format!("{e:?}"))))
            .collect::<Result<_>>()?;
        Ok(())
    })?;
    let mut numeric = Vec::new();
    let rf = time_cpu(config.repeat, |_| {
        numeric = mats
            .iter()
            .zip(&symbolic)
            .map(|(m, sym)| Llt::try_new_with_symbolic(sym.clone(), m.as_ref(), Side::Lower).map_err(|e| err(format!("{e:?}"))))
            .collect::<Result<_>>()?;
        Ok(())
    })?;
    let d = shape.dim();
    let k = b.ncols();
    let mut x = b.clone();
    let solve_all = |x: &mut BlockVec<T>| {
        for (s, llt) in numeric.iter().enumerate() {
            let view = faer::MatMut::from_column_major_slice_mut(x.system_mut(s), d, k);
            llt.solve_in_place_with_conj(Conj::No, view);
        }
    };
    let rs = time_cpu(config.repeat, |_| {
        let mut y = b.clone();
        solve_all(&mut y);
        Ok(())
    })?;
    solve_all(&mut x);
    let mut out = Vec::new();
    let mut r = row("analysis");
    r.time = ra;
    out.push(r);
    let mut r = row("factor");
    r.time = rf;
    r.flops = flops;
    out.push(r);
    let mut r = row("solve");
    r.time = rs;
    r.residual = Some(accuracy(a, &x, b)?.relative_residual);
    out.push(r);
    Ok(out)
}
