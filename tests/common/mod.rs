//! Helpers shared by the integration tests.
#![allow(dead_code)]

use blocktri::{BlockTridiag, BlockVec, Scalar, generate};
use nalgebra::DMatrix;

/// Dense f64 reference solution of every system of a batch (nalgebra Cholesky).
pub fn dense_solution<T: Scalar>(a: &BlockTridiag<T>, b: &BlockVec<T>) -> BlockVec<f64> {
    let (a64, b64) = (a.cast::<f64>(), b.cast::<f64>());
    let shape = a.shape();
    let mut out = BlockVec::<f64>::zeros(shape, b.ncols()).unwrap();
    for s in 0..shape.batch {
        let dense = a64.to_dense(s);
        let chol = dense.cholesky().expect("reference matrix is SPD");
        let x = chol.solve(&b64.to_dmatrix(s));
        out.system_mut(s).copy_from_slice(x.as_slice());
    }
    out
}

/// Max relative difference between a solution and the f64 reference.
pub fn error_vs_reference<T: Scalar>(x: &BlockVec<T>, reference: &BlockVec<f64>) -> f64 {
    blocktri::residual::relative_difference(&x.cast::<f64>(), reference)
}

/// A random problem with fresh seeds.
pub fn problem<T: Scalar>(batch: usize, nblocks: usize, n: usize, k: usize, seed: u64) -> (BlockTridiag<T>, BlockVec<T>) {
    let a = generate::random_spd::<T>(batch, nblocks, n, seed).unwrap();
    let b = generate::random_rhs::<T>(a.shape(), k, seed.wrapping_add(1000)).unwrap();
    (a, b)
}

/// Random lower-triangular matrix with a well-conditioned diagonal.
pub fn random_lower(n: usize, seed: u64) -> DMatrix<f64> {
    use rand::{Rng, SeedableRng};
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    DMatrix::from_fn(n, n, |i, j| {
        if i > j {
            r.random_range(-1.0..1.0)
        } else if i == j {
            2.0 + r.random_range(0.0..1.0)
        } else {
            0.0
        }
    })
}

/// Random matrix with entries in (-1, 1).
pub fn random_matrix(rows: usize, cols: usize, seed: u64) -> DMatrix<f64> {
    use rand::{Rng, SeedableRng};
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    DMatrix::from_fn(rows, cols, |_, _| r.random_range(-1.0..1.0))
}

/// A seed that differs per run (tests draw fresh inputs; the seed is printed on failure).
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    t ^ (std::process::id() as u64).rotate_left(32)
}

/// The shared GPU, or `None` after printing why the calling test skips.
pub fn gpu() -> Option<std::sync::Arc<blocktri::cuda::Gpu>> {
    blocktri::cuda::Gpu::shared().map_err(|e| eprintln!("skipping: {e}")).ok()
}

/// The largest of `task(0)`, ..., `task(tasks - 1)`, run as the tasks of a pool of
/// `threads` threads of its own (not rayon's global pool): for library calls made from
/// inside a caller's rayon pool.
pub fn worst_in_pool(threads: usize, tasks: u64, task: impl Fn(u64) -> f64 + Send + Sync) -> f64 {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| (0..tasks).into_par_iter().map(task).reduce(|| 0.0, f64::max))
}
