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
            // Factor and solve in one call (the first f32 solve interlaced with the factor).
            let x3 = mixed.factor_solve(&a, &b).unwrap();
            let report = mixed.report().clone();
            let acc = residual::accuracy(&a, &x3, &b).unwrap();
            assert!(acc.relative_residual < 1e-12, "{what}, factor_solve: residual {:e}", acc.relative_residual);
            assert_eq!(report.fallback, None, "{what}, factor_solve");
            assert!(report.solves >= 2 && report.relative_residual <= 1e-13, "{what}, factor_solve: {report:?}");
            // A solve after it uses the same f32 factor.
            let x4 = mixed.solve(&b2).unwrap();
            assert!(residual::accuracy(&a, &x4, &b2).unwrap().relative_residual < 1e-12, "{what}, solve after factor_solve");
        }
    }
}

/// A loose tolerance stops the loop after one pass (its residual is read there); a tight
/// one takes more, and the report counts every pass taken and gives the residual reached.
#[test]
fn residuals_are_read_where_they_can_stop_the_loop() {
    let Some(g) = gpu() else { return };
    let (a, b) = problem::<f64>(2, 40, 24, 2, fresh_seed());
    for (tolerance, fewest) in [(1e-4, 1), (1e-13, 2)] {
        let mut mixed = MixedCholesky::with_gpu(g.clone(), RefineOptions { tolerance, ..RefineOptions::default() }).unwrap();
        for with_factor in [false, true] {
            let x = if with_factor {
                mixed.factor_solve(&a, &b).unwrap()
            } else {
                mixed.factor(&a).unwrap();
                mixed.solve(&b).unwrap()
            };
            let report = mixed.report().clone();
            let passes_right = if fewest == 1 { report.solves == 1 } else { report.solves >= fewest };
            assert!(passes_right && report.relative_residual <= tolerance, "{tolerance:e} {with_factor}: {report:?}");
            let measured = residual::accuracy(&a, &x, &b).unwrap().relative_residual;
            assert!(measured <= 10.0 * tolerance.max(1e-15), "{tolerance:e} {with_factor}: {measured:e}, {report:?}");
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
    // The same through factor + solve in one call: the f32 factor's failure is found
    // after its interlaced solve, and the f64 factor answers.
    let x = mixed.factor_solve(&a, &b).unwrap();
    assert!(mixed.report().fallback.as_deref().unwrap_or("").contains("f32 factorization failed"), "{:?}", mixed.report());
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
    let a = generate::random_spd_conditioned::<f64>(2, 16, 12, 1e9, seed + 3).unwrap();
    let b = generate::random_rhs(a.shape(), 2, seed + 4).unwrap();
    let x = mixed.factor_solve(&a, &b).unwrap();
    assert!(mixed.report().fallback.is_some(), "{:?}", mixed.report());
    assert!(residual::accuracy(&a, &x, &b).unwrap().backward_error < 1e-14, "{:?}", mixed.report());
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
    let (mut a, b1) = problem::<f64>(3, 9, 10, 1, 5);
    a.set_diag(2, 7, 1, 1, -1e6);
    match mixed.factor_solve(&a, &b1) {
        Err(Error::NotPositiveDefinite { system: 2, block: 7, .. }) => {}
        other => panic!("factor_solve: expected NotPositiveDefinite at system 2 block 7, got {other:?}"),
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

    // On the tiled engine the f32 plan's `prep` rounds A itself: a NaN is still the f64
    // solver's error, and an entry beyond f32's range (infinite once rounded) falls back
    // to the f64 factor, which solves.
    let Some(mut tiled) = solver(F32Products::Tf32x3) else { return };
    let (mut a, _) = problem::<f64>(2, 5, 130, 1, 8);
    a.sub_block_mut(1, 2)[3] = f64::NAN;
    assert!(matches!(tiled.factor(&a), Err(Error::NonFinite { system: 1, .. })), "NaN input, tiled");
    let (mut a, b) = problem::<f64>(2, 5, 130, 1, 9);
    a.set_diag(1, 3, 5, 5, 1e39);
    tiled.factor(&a).unwrap();
    assert!(tiled.report().fallback.as_deref().is_some_and(|why| why.contains("f32")), "{:?}", tiled.report());
    let x = tiled.solve(&b).unwrap();
    assert!(residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
}
