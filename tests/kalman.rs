//! The Kalman smoother as a block-tridiagonal problem (`examples/kalman.rs` at a small
//! size): on every backend, the solution of the MAP system equals the Rauch–Tung–Striebel
//! smoothed means, and the selected inverse's diagonal and sub-diagonal blocks equal the
//! smoothed covariances and lag-one cross-covariances (all in f64).

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::GpuCholesky;
use blocktri::{Factorization, generate};
use common::fresh_seed;

#[test]
fn block_tridiagonal_smoother_matches_rts_on_every_backend() {
    let seed = fresh_seed();
    let (n, m, nsteps) = (6, 10, 40);
    let model = generate::kalman_model(n, m, seed).unwrap();
    let (_, z) = model.simulate(nsteps, seed ^ 1);
    let (a, b) = model.smoothing_system::<f64>(&z).unwrap();
    let rts = model.rts_smoother(&z).unwrap();
    let mut backends: Vec<Box<dyn Factorization<f64>>> = vec![Box::new(SequentialCholesky::new()), Box::new(ThreadedCholesky::new())];
    match GpuCholesky::<f64>::new() {
        Ok(g) => backends.push(Box::new(g)),
        Err(e) => eprintln!("GPU backend skipped: {e}"),
    }
    let scale = |v: &[f64]| v.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
    for backend in &mut backends {
        let name = backend.name();
        let x = backend.factor_solve(&a, &b).unwrap();
        let means: Vec<f64> = rts.means.iter().flat_map(|v| v.iter().copied()).collect();
        let diff = x.as_slice().iter().zip(&means).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
        assert!(diff <= 1e-9 * scale(&means), "{name}: means differ by {diff:e} (seed {seed})");
        let sigma = backend.selected_inverse().unwrap();
        for k in 0..nsteps {
            let cov = &rts.covariances[k];
            for c in 0..n {
                for r in 0..n {
                    let got = sigma.diag_block(0, k)[c * sigma.ld() + r];
                    assert!((got - cov[(r, c)]).abs() <= 1e-9 * scale(cov.as_slice()), "{name}: covariance {k} ({r}, {c}) (seed {seed})");
                    if k + 1 < nsteps {
                        let cross = &rts.cross_covariances[k];
                        let got = sigma.sub_block(0, k)[c * sigma.ld() + r];
                        assert!(
                            (got - cross[(r, c)]).abs() <= 1e-9 * scale(cov.as_slice()),
                            "{name}: cross-covariance {k} ({r}, {c}) (seed {seed})"
                        );
                    }
                }
            }
        }
    }
}
