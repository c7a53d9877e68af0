//! Threads: which types may cross threads (checked at compile time), several solvers used
//! at once from several threads (CPU here, GPU where present: each GPU solver has its own
//! streams on the shared context), each giving the results it gives alone.

mod common;

use blocktri::cpu::{SequentialCholesky, ThreadedCholesky};
use blocktri::cuda::{Gpu, GpuCholesky, GpuTridiagInverse, PinnedBuffer};
use blocktri::tridiag::{Tridiagonal, inverse_error};
use blocktri::{Backend, BlockTridiag, BlockVec, Factorization, Solver, residual};
use common::{fresh_seed, gpu, problem};

fn send<T: Send>() {}
fn send_sync<T: Send + Sync>() {}

/// The documented thread-safety of the public types. A change that makes one of them
/// lose `Send` or `Sync` fails to compile here. (`Solver` and `GpuCholesky` are `Send`
/// but not `Sync`: every call takes `&mut self`; move one into a thread, or give each
/// thread its own.)
#[test]
fn public_types_are_send_and_the_shared_ones_sync() {
    send::<Solver<f64>>();
    send::<Solver<f32>>();
    send::<GpuCholesky<f64>>();
    send::<GpuTridiagInverse>();
    send_sync::<SequentialCholesky<f64>>();
    send_sync::<ThreadedCholesky<f64>>();
    send_sync::<Gpu>();
    send_sync::<PinnedBuffer<f64>>();
    send_sync::<BlockTridiag<f32>>();
    send_sync::<BlockVec<f64>>();
    send_sync::<blocktri::Error>();
}

/// Thread `t`'s problem shape `(S, N, n, k)`: different per thread so that the solvers'
/// buffers, plans and (on the GPU) kernel families differ.
fn shape_of(t: usize) -> (usize, usize, usize, usize) {
    [(1, 300, 8, 1), (3, 64, 16, 2), (2, 33, 5, 3), (1, 17, 40, 1), (4, 128, 3, 1), (1, 9, 130, 2)][t % 6]
}

/// `rounds` factor + solve cycles of fresh problems on `solver`, each checked.
fn cycles(solver: &mut dyn Factorization<f64>, t: usize, rounds: usize, seed: u64) {
    let (s, nb, n, k) = shape_of(t);
    for r in 0..rounds {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + (1000 * t + r) as u64);
        if r % 2 == 0 {
            solver.factor(&a).unwrap()
        } else {
            solver.refactor(&a).unwrap()
        }
        let x = solver.solve(&b).unwrap();
        let res = residual::accuracy(&a, &x, &b).unwrap().relative_residual;
        assert!(res < 1e-12, "{} thread {t} round {r}: residual {res:e} (seed {seed})", solver.name());
    }
}

#[test]
fn cpu_solvers_in_several_threads_at_once() {
    let seed = fresh_seed();
    std::thread::scope(|scope| {
        for t in 0..4 {
            scope.spawn(move || {
                if t % 2 == 0 {
                    cycles(&mut Solver::<f64>::new(Backend::Cpu).unwrap(), t, 8, seed)
                } else {
                    cycles(&mut SequentialCholesky::new(), t, 8, seed)
                }
            });
        }
    });
}

#[test]
fn gpu_solvers_in_several_threads_at_once() {
    let Some(g) = gpu() else { return };
    let seed = fresh_seed();
    std::thread::scope(|scope| {
        for t in 0..6 {
            let g = g.clone();
            scope.spawn(move || {
                let mut solver = GpuCholesky::<f64>::with_gpu(g, Default::default()).unwrap();
                cycles(&mut solver, t, 25, seed);
            });
        }
        // A tridiagonal inverse on its own stream at the same time.
        let g = g.clone();
        scope.spawn(move || {
            let mut inverse = GpuTridiagInverse::with_gpu(g).unwrap();
            for r in 0..10 {
                let t = Tridiagonal::<f64>::random_dominant(700 + r, 3, r % 2 == 0, seed + r as u64).unwrap();
                let x = inverse.invert(&t, r % 3 == 0, true).unwrap();
                let err = inverse_error(&t, &x);
                assert!(err < 1e-13, "inverse round {r}: error {err:e} (seed {seed})");
            }
        });
    });
}

/// A `Solver` moved into another thread keeps working there.
#[test]
fn a_solver_moves_between_threads() {
    let (a, b) = problem::<f64>(2, 50, 4, 1, fresh_seed());
    let mut solver = Solver::<f64>::new(Backend::Auto).unwrap();
    solver.factor(&a).unwrap();
    let x = solver.solve(&b).unwrap();
    let (x2, _solver) = std::thread::spawn(move || {
        let x = solver.solve(&b).unwrap();
        (x, solver)
    })
    .join()
    .unwrap();
    // The same factor and right-hand side: the same solution to rounding (the GPU solve
    // is not bitwise reproducible from call to call; measured differences ~1e-17).
    let diff = residual::relative_difference(&x, &x2);
    assert!(diff < 1e-14, "{diff:e}");
}
