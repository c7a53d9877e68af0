//! The condition estimate (`Factorization::condition_estimate`, LAPACK `pocon`) on every
//! backend against the exact 1-norm condition number of the dense matrix (nalgebra, f64),
//! on `generate::random_spd_conditioned` matrices of known 2-norm condition number.

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::GpuCholesky;
use blocktri::{BlockTridiag, Error, Factorization, Scalar, condition, generate};
use common::{fresh_seed, gpu};

/// `||A_s||_1 ||A_s^-1||_1` of every system, densely in f64.
fn exact_condition<T: Scalar>(a: &BlockTridiag<T>) -> Vec<f64> {
    let a = a.cast::<f64>();
    (0..a.shape().batch)
        .map(|s| {
            let dense = a.to_dense(s);
            let inverse = dense.clone().cholesky().expect("SPD").inverse();
            let norm1 = |m: &nalgebra::DMatrix<f64>| m.column_iter().map(|c| c.abs().sum()).fold(0.0, f64::max);
            norm1(&dense) * norm1(&inverse)
        })
        .collect()
}

/// Shapes `(S, N, n)` including a single scalar and a single block.
const SHAPES: &[(usize, usize, usize)] = &[(1, 1, 1), (2, 1, 5), (3, 12, 4), (1, 33, 2), (2, 7, 9)];

fn check_estimates<T: Scalar>(solver: &mut dyn Factorization<T>, kappas: &[f64]) {
    let seed = fresh_seed();
    for (i, &(s, nb, n)) in SHAPES.iter().enumerate() {
        for (j, &kappa) in kappas.iter().enumerate() {
            let a = generate::random_spd_conditioned::<T>(s, nb, n, kappa, seed + (10 * i + j) as u64).unwrap();
            solver.factor(&a).unwrap();
            let estimate = solver.condition_estimate(&a).unwrap();
            let exact = exact_condition(&a);
            assert_eq!(estimate.len(), s);
            for (sys, (&est, &truth)) in estimate.iter().zip(&exact).enumerate() {
                let what = format!("{} {} S={s} N={nb} n={n} kappa_2={kappa:e} system {sys} (seed {seed})", solver.name(), T::PRECISION);
                // A lower bound (up to the rounding of the solves) within 10x of the truth.
                assert!(est <= truth * 1.01, "{what}: estimate {est:e} above the exact {truth:e}");
                assert!(est >= truth / 10.0, "{what}: estimate {est:e} more than 10x below the exact {truth:e}");
            }
        }
    }
}

#[test]
fn cpu_estimates_are_within_10x_of_the_exact_condition_number() {
    let kappas_f64 = [1.0, 1e2, 1e6, 1e10];
    check_estimates::<f64>(&mut SequentialCholesky::new(), &kappas_f64);
    check_estimates::<f64>(&mut ThreadedCholesky::new(), &kappas_f64);
    // f32 solves carry errors of about kappa * 6e-8: moderate condition numbers only.
    check_estimates::<f32>(&mut SequentialCholesky::new(), &[1.0, 1e2, 1e4]);
    check_estimates::<f32>(&mut ThreadedCholesky::new(), &[1.0, 1e2, 1e4]);
}

#[test]
fn gpu_estimates_are_within_10x_of_the_exact_condition_number() {
    let Some(g) = gpu() else { return };
    check_estimates::<f64>(&mut GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap(), &[1.0, 1e2, 1e6, 1e10]);
    check_estimates::<f32>(&mut GpuCholesky::<f32>::with_gpu(g, Default::default()).unwrap(), &[1.0, 1e2, 1e4]);
}

#[test]
fn the_estimate_needs_the_factored_shape() {
    let a = generate::random_spd::<f64>(2, 5, 3, fresh_seed()).unwrap();
    let mut solver = SequentialCholesky::new();
    assert!(matches!(solver.condition_estimate(&a), Err(Error::Shape(_))));
    solver.factor(&a).unwrap();
    let other = generate::random_spd::<f64>(2, 6, 3, 1).unwrap();
    assert!(matches!(solver.condition_estimate(&other), Err(Error::ShapeChanged { .. })));
}

#[test]
fn norm1_matches_the_dense_matrix() {
    let a = generate::random_spd::<f64>(3, 6, 4, fresh_seed()).unwrap().repad(7).unwrap();
    for (s, &norm) in condition::norm1(&a).iter().enumerate() {
        let dense = a.to_dense(s);
        let want = dense.column_iter().map(|c| c.abs().sum()).fold(0.0, f64::max);
        assert!((norm - want).abs() <= 1e-12 * want, "system {s}: {norm} vs {want}");
    }
}
