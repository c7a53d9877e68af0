//! The threaded CPU solver called from inside a caller's rayon pool: correct results, no
//! deadlock, and no second pool (its work runs on the caller's threads). Alone in its test
//! binary, because it checks that rayon's global pool was never started, which any other
//! test of the same process could do.

mod common;

use blocktri::cpu::ThreadedCholesky;
use blocktri::{Factorization, residual};
use common::{fresh_seed, problem, worst_in_pool};

#[test]
fn threaded_solver_inside_a_callers_pool_uses_that_pool() {
    let seed = fresh_seed();
    // 16 solves on 2 threads, each solve itself parallel over the nodes of its levels:
    // nested parallelism that deadlocks with a blocking inner pool of its own.
    let worst = worst_in_pool(2, 16, |i| {
        let (a, b) = problem::<f64>(1 + (i % 3) as usize, 200 + i as usize, 6, 2, seed + i);
        let mut chol = ThreadedCholesky::new();
        let x = chol.factor_solve(&a, &b).unwrap();
        residual::accuracy(&a, &x, &b).unwrap().relative_residual
    });
    assert!(worst < 1e-12, "worst residual {worst:e} (seed {seed})");
    // The global pool can still be configured: nothing above started it, so every parallel
    // loop of the solver (and of the generator) ran on the caller's two threads.
    assert!(rayon::ThreadPoolBuilder::new().num_threads(1).build_global().is_ok(), "the solver started rayon's global pool");
}
