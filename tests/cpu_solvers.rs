//! The sequential and threaded CPU solvers against a dense nalgebra Cholesky, on random
//! sizes including the awkward ones (N = 1, 2, non powers of two, n = 1).

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::{Factorization, generate, residual};
use common::{dense_solution, error_vs_reference, fresh_seed, problem};

const SIZES: &[(usize, usize, usize, usize)] = &[
    // (batch, N, n, k)
    (1, 1, 1, 1),
    (1, 1, 5, 2),
    (1, 2, 1, 1),
    (1, 2, 3, 3),
    (1, 3, 4, 1),
    (2, 5, 2, 2),
    (1, 7, 6, 1),
    (3, 13, 3, 4),
    (1, 64, 8, 1),
    (1, 100, 1, 2),
    (2, 127, 5, 1),
];

fn check<F: Factorization<f64>>(mut solver: F, name: &str) {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in SIZES.iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        solver.factor(&a).unwrap();
        let x = solver.solve(&b).unwrap();
        let reference = dense_solution(&a, &b);
        let err = error_vs_reference(&x, &reference);
        assert!(err < 1e-12, "{name} S={s} N={nb} n={n} k={k}: error {err:e} (seed {seed})");
        let acc = residual::accuracy(&a, &x, &b).unwrap();
        assert!(acc.relative_residual < 1e-13, "{name}: residual {:e} (seed {seed})", acc.relative_residual);
    }
}

#[test]
fn sequential_matches_dense_cholesky() {
    check(SequentialCholesky::new(), "sequential");
}

#[test]
fn threaded_matches_dense_cholesky() {
    check(ThreadedCholesky::new(), "threaded");
}

#[test]
fn threaded_with_own_pool_and_f32() {
    let seed = fresh_seed();
    let mut solver = ThreadedCholesky::<f32>::with_threads(2).unwrap();
    for (nb, n) in [(1, 3), (9, 4), (33, 7)] {
        let (a, b) = problem::<f32>(2, nb, n, 2, seed);
        let x = solver.factor_solve(&a, &b).unwrap();
        let acc = residual::accuracy(&a, &x, &b).unwrap();
        assert!(acc.relative_residual < 1e-5, "N={nb} n={n}: {:e} (seed {seed})", acc.relative_residual);
    }
}

#[test]
fn ill_conditioned_family_is_solved_to_its_conditioning() {
    // kappa = 1e8: the backward error stays at rounding level; the forward error grows
    // with kappa.
    let a = generate::random_spd_conditioned::<f64>(1, 40, 6, 1e8, fresh_seed()).unwrap();
    let b = generate::random_rhs(a.shape(), 1, 3).unwrap();
    for mut solver in [Box::new(SequentialCholesky::new()) as Box<dyn Factorization<f64>>, Box::new(ThreadedCholesky::new())] {
        let x = solver.factor_solve(&a, &b).unwrap();
        let acc = residual::accuracy(&a, &x, &b).unwrap();
        assert!(acc.backward_error < 1e-14, "{}: {:e}", solver.name(), acc.backward_error);
    }
}

#[test]
fn conditioned_generator_hits_the_requested_condition_number() {
    for (nb, n, kappa) in [(1, 4, 1e3), (6, 3, 1e6), (10, 2, 10.0)] {
        let a = generate::random_spd_conditioned::<f64>(1, nb, n, kappa, 5).unwrap();
        let eig = a.to_dense(0).symmetric_eigenvalues();
        let (lo, hi) = (eig.min(), eig.max());
        assert!(lo > 0.0);
        assert!(((hi / lo) / kappa - 1.0).abs() < 1e-6, "N={nb} n={n}: {} vs {kappa}", hi / lo);
    }
}

#[test]
fn kalman_smoother_recovers_the_states() {
    let (a, b, truth) = generate::kalman_problem::<f64>(8, 16, 50, 3).unwrap();
    let mut solver = ThreadedCholesky::new();
    let x = solver.factor_solve(&a, &b).unwrap();
    let acc = residual::accuracy(&a, &x, &b).unwrap();
    assert!(acc.relative_residual < 1e-12);
    // The smoothed estimate is closer to the truth than zero is.
    let err: f64 = x.as_slice().iter().zip(&truth).map(|(p, q)| (p - q).powi(2)).sum::<f64>().sqrt();
    let norm: f64 = truth.iter().map(|q| q * q).sum::<f64>().sqrt();
    assert!(err < 0.5 * norm, "smoothing error {err} vs state norm {norm}");
}

#[test]
fn refactor_reuses_the_shape_and_rejects_another() {
    let (a, b) = problem::<f64>(1, 10, 3, 1, 1);
    let (a2, _) = problem::<f64>(1, 10, 3, 1, 2);
    let (a3, _) = problem::<f64>(1, 11, 3, 1, 3);
    let mut solver = ThreadedCholesky::new();
    solver.factor(&a).unwrap();
    solver.refactor(&a2).unwrap();
    let x = solver.solve(&b).unwrap();
    assert!(residual::accuracy(&a2, &x, &b).unwrap().relative_residual < 1e-13);
    assert!(matches!(solver.refactor(&a3), Err(blocktri::Error::ShapeChanged { .. })));
}

/// `factor_solve_in_place` (the trait's default on the CPU backends): the bits of
/// `factor` + `solve`, and a matrix that is not positive definite leaves the right-hand
/// side untouched.
#[test]
fn factor_solve_in_place_matches_and_keeps_the_rhs_on_failure() {
    let seed = fresh_seed();
    let bits = |x: &blocktri::BlockVec<f64>| x.as_slice().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    for (i, solver) in [&mut SequentialCholesky::new() as &mut dyn Factorization<f64>, &mut ThreadedCholesky::new()].into_iter().enumerate()
    {
        let (a, b) = problem::<f64>(3, 40, 5, 2, seed + i as u64);
        solver.factor(&a).unwrap();
        let expected = solver.solve(&b).unwrap();
        let mut x = b.clone();
        solver.factor_solve_in_place(&a, &mut x).unwrap();
        assert_eq!(bits(&x), bits(&expected), "{} (seed {seed})", solver.name());
        let mut bad = a.clone();
        bad.set_diag(2, 17, 1, 1, -1e3);
        let mut x = b.clone();
        assert!(matches!(
            solver.factor_solve_in_place(&bad, &mut x),
            Err(blocktri::Error::NotPositiveDefinite { system: 2, block: 17, .. })
        ));
        assert_eq!(bits(&x), bits(&b), "{}: the right-hand side was touched", solver.name());
    }
}
