//! Mixed precision on the GPU (`MixedCholesky`): an `f32` factor refined to `f64`
//! accuracy with `f64` residuals, and the fallback to an `f64` factor. Skips without a GPU.

mod common;

use blocktri::cuda::{F32Products, MixedCholesky, RefineOptions};
use blocktri::{BlockVec, Error, generate, residual};
use common::{fresh_seed, gpu, problem};

fn solver(products: F32Products) -> Option<MixedCholesky> {
    let g = gpu()?;
    Some(MixedCholesky::with_gpu(g, RefineOptions { products, ..RefineOptions::default() }).unwrap())
}

/// Small and large blocks (fused and tiled `f32` engines), batches, several columns:
/// relative residual below `1e-12` (the f64 solver's bound) from the `f32` factor, with at
/// least one correction and no fallback.
#[test]
fn refinement_reaches_f64_accuracy() {
    let seed = fresh_seed();
    let cases = [(1, 1, 1, 1), (7, 64, 8, 3), (1, 1000, 16, 1), (2, 3, 33, 2), (1, 64, 64, 1), (3, 5, 130, 3), (1, 64, 256, 1)];
    for products in [F32Products::Fma, F32Products::Tf32x3] {
        let Some(mut mixed) = solver(products) else { return };
        for (i, &(s, nb, n, k)) in cases.iter().enumerate() {
            let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
            mixed.factor(&a).unwrap();
            let x = mixed.solve(&b).unwrap();
            let acc = residual::accuracy(&a, &x, &b).unwrap();
            let report = mixed.report().clone();
            let what = format!("{products:?} S={s} N={nb} n={n} k={k} (seed {}): {report:?}", seed + i as u64);
            assert!(acc.relative_residual < 1e-12, "{what}: residual {:e}", acc.relative_residual);
            assert_eq!(report.fallback, None, "{what}");
            assert!(report.solves >= 2 && report.relative_residual <= 1e-13, "{what}");
            // Refactor with new values, same shape, and solve again.
            let (a2, b2) = problem::<f64>(s, nb, n, k, seed + 100 + i as u64);
            mixed.factor(&a2).unwrap();
            let x2 = mixed.solve(&b2).unwrap();
            assert!(residual::accuracy(&a2, &x2, &b2).unwrap().relative_residual < 1e-12, "{what}, refactored");
        }
    }
}

/// Plain TF32 products: more passes, or the fallback; the answer meets the f64 bound
/// either way.
#[test]
fn tf32_factor_refines_or_falls_back() {
    let Some(mut mixed) = solver(F32Products::Tf32) else { return };
    let (a, b) = problem::<f64>(1, 64, 130, 2, fresh_seed());
    mixed.factor(&a).unwrap();
    let x = mixed.solve(&b).unwrap();
    let report = mixed.report();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12, "{report:?}");
    assert!(report.fallback.is_some() || report.solves >= 2, "{report:?}");
}

/// Inputs the `f32` factor cannot take fall back to the `f64` factor and say why: a
/// condition number near `1/eps(f32)`, values beyond `f32`'s range.
#[test]
fn falls_back_to_f64_and_says_why() {
    let Some(mut mixed) = solver(F32Products::Fma) else { return };
    let seed = fresh_seed();
    let a = generate::random_spd_conditioned::<f64>(2, 16, 12, 1e9, seed).unwrap();
    let b = generate::random_rhs(a.shape(), 1, seed + 1).unwrap();
    mixed.factor(&a).unwrap();
    let x = mixed.solve(&b).unwrap();
    let report = mixed.report().clone();
    assert!(report.fallback.is_some(), "{report:?}");
    assert!(residual::accuracy(&a, &x, &b).unwrap().backward_error < 1e-14, "{report:?}");

    let (mut a, b) = problem::<f64>(1, 9, 20, 1, seed + 2);
    a.diag_mut().iter_mut().for_each(|v| *v *= 1e50);
    a.sub_mut().iter_mut().for_each(|v| *v *= 1e50);
    let b = BlockVec::from_vec(b.shape(), 1, b.as_slice().iter().map(|v| v * 1e50).collect()).unwrap();
    mixed.factor(&a).unwrap();
    assert!(mixed.report().fallback.as_deref().unwrap_or("").contains("f32 factorization failed"), "{:?}", mixed.report());
    let x = mixed.solve(&b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
}

/// Bad input: the errors of the f64 solver, naming system and block.
#[test]
fn bad_input_is_reported() {
    let Some(mut mixed) = solver(F32Products::Fma) else { return };
    let (mut a, b) = problem::<f64>(3, 9, 10, 1, 5);
    a.set_diag(1, 4, 3, 3, -1e6);
    match mixed.factor(&a) {
        Err(Error::NotPositiveDefinite { system: 1, block: 4, .. }) => {}
        other => panic!("expected NotPositiveDefinite at system 1 block 4, got {other:?}"),
    }
    let (mut a, _) = problem::<f64>(3, 9, 10, 1, 6);
    a.sub_block_mut(2, 3)[0] = f64::NAN;
    assert!(matches!(mixed.factor(&a), Err(Error::NonFinite { system: 2, .. })), "NaN input");
    let (a, _) = problem::<f64>(3, 9, 10, 1, 7);
    mixed.factor(&a).unwrap();
    let wrong = generate::random_rhs::<f64>(blocktri::Shape::new(3, 8, 10).unwrap(), 1, 1).unwrap();
    assert!(matches!(mixed.solve(&wrong), Err(Error::Shape(_))));
    let mut nan = b.clone();
    nan.as_mut_slice()[5] = f64::NAN;
    assert!(mixed.solve(&nan).is_err());
    assert!(matches!(MixedCholesky::new(RefineOptions { tolerance: 0.0, ..RefineOptions::default() }), Err(Error::Shape(_))));
}
