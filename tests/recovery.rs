//! After every kind of failure (a matrix that is not positive definite, non-finite
//! values, a right-hand side of the wrong shape, a refactor with another shape, too little
//! device memory) the same solver factors and solves the next valid input correctly.

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::{Gpu, GpuCholesky};
use blocktri::{BlockTridiag, BlockVec, Error, Factorization, Shape, residual};
use common::{fresh_seed, gpu, problem};

/// Solves `b` and checks the residual against `a`.
fn solves(solver: &mut dyn Factorization<f64>, a: &BlockTridiag<f64>, b: &BlockVec<f64>, what: &str) {
    let x = solver.solve(b).unwrap_or_else(|e| panic!("{} after {what}: {e}", solver.name()));
    let res = residual::accuracy(a, &x, b).unwrap().relative_residual;
    assert!(res < 1e-12, "{} after {what}: residual {res:e}", solver.name());
}

fn recovers(solver: &mut dyn Factorization<f64>, seed: u64) {
    let name = solver.name();
    let (s, nb, n) = (3, 40, 5);
    let fresh = |i: u64| problem::<f64>(s, nb, n, 2, seed + i);
    let (a, b) = fresh(0);
    solver.factor(&a).unwrap();
    solves(solver, &a, &b, "the first factor");

    // Not positive definite (system 1, block 7): refused; the next values factor.
    let (mut bad, _) = fresh(1);
    for r in 0..n {
        let v = bad.get(1, 7 * n + r, 7 * n + r);
        bad.set_diag(1, 7, r, r, v - 1e4);
    }
    assert!(matches!(solver.refactor(&bad), Err(Error::NotPositiveDefinite { system: 1, block: 7, .. })), "{name}");
    let (a, b) = fresh(2);
    solver.refactor(&a).unwrap();
    solves(solver, &a, &b, "a non-SPD refusal");

    // Non-finite values: refused; the next values factor.
    let (mut bad, _) = fresh(3);
    bad.set_sub(2, 11, 1, 0, f64::NAN);
    assert!(solver.refactor(&bad).is_err(), "{name}");
    let (a, b) = fresh(4);
    solver.factor(&a).unwrap();
    solves(solver, &a, &b, "a non-finite refusal");

    // Wrong shapes: a right-hand side of another shape, a refactor of another shape. The
    // factorization in place survives both.
    let wrong = BlockVec::zeros(Shape::new(s, nb + 1, n).unwrap(), 1).unwrap();
    assert!(matches!(solver.solve(&wrong), Err(Error::Shape(_))), "{name}");
    let (other, _) = problem::<f64>(s, nb + 3, n, 1, seed + 5);
    assert!(matches!(solver.refactor(&other), Err(Error::ShapeChanged { .. })), "{name}");
    solves(solver, &a, &b, "wrong shapes");

    // A non-finite right-hand side (system 2, block 13, second column): refused by the
    // solves, which leave it untouched; the factorization in place survives.
    let mut nan = b.clone();
    nan.set(2, 13 * n + 1, 1, f64::NAN);
    assert!(matches!(solver.solve(&nan), Err(Error::NonFinite { system: 2, block: 13, .. })), "{name}");
    let mut in_place = nan.clone();
    assert!(matches!(solver.solve_in_place(&mut in_place), Err(Error::NonFinite { system: 2, block: 13, .. })), "{name}");
    let bits = |v: &BlockVec<f64>| v.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&in_place), bits(&nan), "{name}: a rejected right-hand side was changed");
    solves(solver, &a, &b, "a non-finite right-hand side");

    // A new shape after all that.
    let (a, b) = problem::<f64>(2, 17, 9, 1, seed + 6);
    solver.factor(&a).unwrap();
    solves(solver, &a, &b, "a new shape");
}

#[test]
fn cpu_solvers_recover_after_every_failure() {
    let seed = fresh_seed();
    recovers(&mut SequentialCholesky::new(), seed);
    recovers(&mut ThreadedCholesky::new(), seed);
}

#[test]
fn gpu_solver_recovers_after_every_failure() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    let mut solver = GpuCholesky::<f64>::with_gpu(g, Default::default()).unwrap();
    recovers(&mut solver, seed);

    // factor + solve with a non-finite right-hand side: refused before the new matrix
    // replaces anything, so the factorization in place still solves (the GPU checks the
    // right-hand side in its upload, ahead of the matrices).
    let (a, b) = problem::<f64>(2, 33, 6, 1, seed + 7);
    solver.factor(&a).unwrap();
    let (other, mut nan) = problem::<f64>(2, 33, 6, 1, seed + 8);
    nan.set(1, 20 * 6 + 3, 0, f64::INFINITY);
    assert!(matches!(solver.factor_solve(&other, &nan), Err(Error::NonFinite { system: 1, block: 20, .. })));
    let mut in_place = nan.clone();
    assert!(matches!(solver.factor_solve_in_place(&other, &mut in_place), Err(Error::NonFinite { system: 1, block: 20, .. })));
    solves(&mut solver, &a, &b, "a non-finite right-hand side in factor + solve");
}

#[test]
fn gpu_solver_recovers_after_an_out_of_memory_refusal() {
    if gpu().is_none() {
        return;
    }
    // A context of its own: the memory cap must not reach the other tests' solvers.
    let g = Gpu::new().unwrap();
    let mut solver = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap();
    let seed = fresh_seed();
    let (small, small_b) = problem::<f64>(1, 50, 4, 1, seed);
    solver.factor(&small).unwrap();
    // One system of 4000 blocks of 32 x 32 (about 160 MB) against a 1 MiB cap.
    let (big, big_b) = problem::<f64>(1, 4000, 32, 1, seed + 1);
    g.set_memory_limit(Some(1 << 20));
    assert!(matches!(solver.factor(&big), Err(Error::OutOfMemory { .. })));
    // The refused call left the previous factorization or none: either way the next
    // valid factor works once memory is there.
    g.set_memory_limit(None);
    solver.factor(&big).unwrap();
    solves(&mut solver, &big, &big_b, "an out-of-memory refusal");
    solver.factor(&small).unwrap();
    solves(&mut solver, &small, &small_b, "an out-of-memory refusal and a shape change");
}
