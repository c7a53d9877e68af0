//! The interior-point MPC example (`examples/mpc`): its optimum against a dense KKT solve
//! (inactive bounds), optimality of the constrained optimum (KKT residuals and no better
//! feasible neighbour), batched = one by one, and the GPU backend against the CPU one.

#[path = "../examples/mpc/ipm.rs"]
mod ipm;

mod common;

use blocktri::cpu::SequentialCholesky;
use blocktri::{Backend, Solver};
use rand::{Rng, SeedableRng};

fn x_init(model: &ipm::Model, systems: usize, scale: f64) -> Vec<f64> {
    let nx = model.nx();
    (0..systems).flat_map(|s| (0..nx).map(move |i| if i < nx / 2 { scale * (1.0 + 0.1 * (s + i) as f64) } else { 0.0 })).collect()
}

/// States of a control sequence from `x0` (the dynamics, exactly).
fn simulate(model: &ipm::Model, x0: &[f64], u: &[f64]) -> Vec<f64> {
    let (nx, nu) = (model.nx(), model.nu());
    let mut x = x0.to_vec();
    for k in 0..model.horizon {
        let xk = nalgebra::DVector::from_column_slice(&x[k * nx..(k + 1) * nx]);
        let uk = nalgebra::DVector::from_column_slice(&u[k * nu..(k + 1) * nu]);
        x.extend((&model.a * xk + &model.b * uk).iter());
    }
    x
}

#[test]
fn unconstrained_optimum_matches_the_dense_kkt_solve() {
    let mut model = ipm::mass_chain(3, 2, 12);
    model.u_max = 1e3; // the bounds never bind
    let x0 = x_init(&model, 1, 1.0);
    let (it, out) = ipm::solve(&model, &x0, &mut SequentialCholesky::new()).unwrap();
    let (x, u) = ipm::dense_unconstrained(&model, &x0);
    let diff = |a: &[f64], b: &[f64]| a.iter().zip(b).fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
    assert!(diff(&it.x, &x) < 1e-6 && diff(&it.u, &u) < 1e-6, "{out:?}: x {:e}, u {:e}", diff(&it.x, &x), diff(&it.u, &u));
}

#[test]
fn constrained_optimum_is_optimal() {
    let model = ipm::mass_chain(4, 2, 30);
    let x0 = x_init(&model, 1, 2.0);
    let (it, out) = ipm::solve(&model, &x0, &mut SequentialCholesky::new()).unwrap();
    assert!(out.primal <= ipm::TOLERANCE && out.dual <= ipm::TOLERANCE && out.gap <= ipm::TOLERANCE, "{out:?}");
    assert!(it.u.iter().all(|u| u.abs() <= model.u_max), "bounds");
    assert!(it.u.iter().any(|u| u.abs() > 0.99 * model.u_max), "the bounds bind in this instance");
    assert!(it.yl.iter().chain(&it.yh).all(|&y| y > 0.0), "multipliers");
    // No feasible neighbour is better (convex problem: KKT point = global optimum).
    let best = ipm::objective(&model, &it, 0);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(common::fresh_seed());
    for _ in 0..50 {
        let u: Vec<f64> = it.u.iter().map(|&v| (v + rng.random_range(-1e-3..1e-3)).clamp(-model.u_max, model.u_max)).collect();
        let x = simulate(&model, &x0, &u);
        let other = ipm::Iterate { x, u, ..it.clone() };
        assert!(ipm::objective(&model, &other, 0) >= best - 1e-9, "a feasible neighbour is better");
    }
}

#[test]
fn batch_equals_one_by_one() {
    let model = ipm::mass_chain(3, 3, 20);
    let x0 = x_init(&model, 4, 1.5);
    let (batch, _) = ipm::solve(&model, &x0, &mut SequentialCholesky::new()).unwrap();
    let (nx, xs) = (model.nx(), (model.horizon + 1) * model.nx());
    for s in 0..4 {
        let (one, _) = ipm::solve(&model, &x0[s * nx..(s + 1) * nx], &mut SequentialCholesky::new()).unwrap();
        let worst = one.x.iter().zip(&batch.x[s * xs..(s + 1) * xs]).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst < 1e-7, "system {s}: {worst:e}");
    }
}

/// The GPU backend (graph replays of `refactor` + `solve`) reaches the CPU's optimum.
#[test]
fn gpu_backend_matches_the_cpu() {
    let Some(_) = common::gpu() else { return };
    let model = ipm::mass_chain(12, 8, 300);
    let x0 = x_init(&model, 3, 1.0);
    let (cpu, _) = ipm::solve(&model, &x0, &mut Solver::<f64>::new(Backend::Cpu).unwrap()).unwrap();
    let (gpu, out) = ipm::solve(&model, &x0, &mut Solver::<f64>::new(Backend::Gpu).unwrap()).unwrap();
    let worst = cpu.u.iter().zip(&gpu.u).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst < 1e-6, "{out:?}: {worst:e}");
}
