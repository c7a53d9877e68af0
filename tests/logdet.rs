//! `Factorization::log_determinant` on every backend against the dense Cholesky of
//! nalgebra (f64), the GPU pass over the factored diagonals in the block emulator with
//! extreme values, and the CLI's `--logdet`.

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::GpuCholesky;
use blocktri::{BlockTridiag, Error, Factorization, Scalar, generate};
use blocktri_device::logdet::{LOGDET_SHARED_BYTES, LOGDET_THREADS, LogDetArgs, log_det_parts};
use blocktri_prims::emu;
use common::{fresh_seed, gpu};

/// `log det A_s` of every system, densely in f64.
fn dense_log_det<T: Scalar>(a: &BlockTridiag<T>) -> Vec<f64> {
    let a = a.cast::<f64>();
    (0..a.shape().batch).map(|s| a.to_dense(s).cholesky().expect("SPD").l().diagonal().iter().map(|d| 2.0 * d.ln()).sum()).collect()
}

/// Shapes `(S, N, n)`: one scalar, one block, batches, lengths that are not powers of two.
const SHAPES: &[(usize, usize, usize)] = &[(1, 1, 1), (2, 1, 6), (3, 17, 4), (1, 100, 8), (2, 33, 16)];

fn check<T: Scalar>(solver: &mut dyn Factorization<T>, shapes: &[(usize, usize, usize)], seed: u64) {
    assert!(matches!(solver.log_determinant(), Err(Error::NotFactored)), "{}", solver.name());
    for (i, &(s, nb, n)) in shapes.iter().enumerate() {
        // Conditioned matrices: eigenvalues from 1 to 1e3, so log det is far from 0.
        let a = generate::random_spd_conditioned::<T>(s, nb, n, 1e3, seed + i as u64).unwrap();
        solver.factor(&a).unwrap();
        let got = solver.log_determinant().unwrap();
        let want = dense_log_det(&a);
        let dim = (nb * n) as f64;
        // f32: every pivot carries a relative error of a few units of f32 rounding.
        let tol = if T::PRECISION == blocktri::Precision::F64 { 1e-11 * want[0].abs().max(dim) } else { 3e-5 * dim };
        for (sys, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= tol, "{} {} S={s} N={nb} n={n} system {sys}: {g} vs {w} (seed {seed})", solver.name(), T::PRECISION);
        }
    }
}

#[test]
fn cpu_log_determinants_match_the_dense_reference() {
    let seed = fresh_seed();
    check::<f64>(&mut SequentialCholesky::new(), SHAPES, seed);
    check::<f64>(&mut ThreadedCholesky::new(), SHAPES, seed);
    check::<f32>(&mut SequentialCholesky::new(), SHAPES, seed);
    check::<f32>(&mut ThreadedCholesky::new(), SHAPES, seed);
}

#[test]
fn gpu_log_determinants_match_the_dense_reference() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    // Fused kernels and, with n = 130, the tiled engine.
    let shapes: Vec<_> = SHAPES.iter().copied().chain([(2, 5, 130), (1, 3, 200)]).collect();
    check::<f64>(&mut GpuCholesky::<f64>::with_gpu(g.clone(), Default::default()).unwrap(), &shapes, seed);
    check::<f32>(&mut GpuCholesky::<f32>::with_gpu(g.clone(), Default::default()).unwrap(), &shapes, seed);
    // The chain engine's factor (natural order).
    let chain = blocktri::cuda::GpuOptions { kernels: blocktri::cuda::KernelFamily::Chain, ..Default::default() };
    check::<f64>(&mut GpuCholesky::<f64>::with_gpu(g.clone(), chain).unwrap(), SHAPES, seed);
    check::<f32>(&mut GpuCholesky::<f32>::with_gpu(g, chain).unwrap(), SHAPES, seed);
}

#[test]
fn a_failed_factorization_has_no_log_determinant() {
    let mut solvers: Vec<Box<dyn Factorization<f64>>> = vec![Box::new(SequentialCholesky::new()), Box::new(ThreadedCholesky::new())];
    if let Ok(g) = GpuCholesky::<f64>::new() {
        solvers.push(Box::new(g));
    }
    for solver in &mut solvers {
        let mut a = generate::random_spd::<f64>(1, 6, 3, fresh_seed()).unwrap();
        solver.factor(&a).unwrap();
        assert!(solver.log_determinant().is_ok());
        a.set_diag(0, 2, 1, 1, -1e6);
        assert!(solver.factor(&a).is_err());
        assert!(matches!(solver.log_determinant(), Err(Error::NotFactored)), "{}", solver.name());
    }
}

/// The device pass in the emulator: diagonal entries from 1e-300 to 1e300 (a plain product
/// would overflow and underflow), NaN everywhere off the diagonal (never read), padded
/// leading dimension, more diagonal entries than threads.
#[test]
fn emulated_pass_multiplies_without_overflow() {
    use rand::{Rng, SeedableRng};
    let seed = fresh_seed();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (systems, nb, n, ld) = (3usize, 70usize, 5usize, 8usize);
    let mut diag = vec![f64::NAN; systems * nb * ld * n];
    let mut want = vec![0.0f64; systems];
    for s in 0..systems {
        for i in 0..nb {
            for r in 0..n {
                let x = 10f64.powf(rng.random_range(-300.0..300.0));
                diag[(s * nb + i) * ld * n + r * ld + r] = x;
                want[s] += 2.0 * x.ln();
            }
        }
    }
    let mut out = vec![f64::NAN; 2 * systems];
    let args = LogDetArgs { diag: diag.as_ptr(), out: out.as_mut_ptr(), ld: ld as u32, n: n as u32, nblocks: nb as u32 };
    // SAFETY: the buffers are as LogDetArgs describes; the launch shape is the kernel's.
    unsafe { emu::launch_unchecked(systems as u32, LOGDET_THREADS, LOGDET_SHARED_BYTES, || log_det_parts(&args)) };
    for s in 0..systems {
        let (m, e) = (out[2 * s], out[2 * s + 1]);
        assert!((1.0..2.0).contains(&m) && e.fract() == 0.0, "system {s}: ({m}, {e})");
        let got = 2.0 * (m.ln() + e * std::f64::consts::LN_2);
        assert!((got - want[s]).abs() <= 1e-12 * want[s].abs().max(1e3), "system {s}: {got} vs {} (seed {seed})", want[s]);
    }
}
