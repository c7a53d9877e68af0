//! A primal-dual interior-point method for box-constrained linear-quadratic optimal control,
//! batched: `S` problems with the same dynamics and costs (different initial states) are
//! solved together, one block-tridiagonal factorization of the batch per Newton step.
//!
//! Problem (per system): minimize `sum_k 1/2 (x_k' Q x_k + u_k' R u_k) + 1/2 x_N' Qf x_N`
//! subject to `x_0 = x_init`, `x_{k+1} = A x_k + B u_k` and `-u_max <= u_k <= u_max`, with
//! diagonal `Q`, `R`, `Qf`.
//!
//! Newton system: with `H` the (diagonal) Hessian of the barrier Lagrangian and `C` the
//! dynamics constraints, eliminating the primal step gives `(C H^-1 C') dlam = r`, which is
//! SPD and block-tridiagonal with `N + 1` blocks of `n_x`: `D_0 = Hx_0^-1`,
//! `D_{k+1} = A Hx_k^-1 A' + B Hu_k^-1 B' + Hx_{k+1}^-1`, `S_{k+1,k} = -A Hx_k^-1`. Every
//! iteration changes its values, never its shape, so the solver runs `factor_solve_in_place`
//! on the same buffers (on the GPU: graph replays).

#![allow(dead_code)] // each user (example, test) takes a part

use blocktri::cuda::Gpu;
use blocktri::{Backend, BlockTridiag, BlockVec, Factorization, Result, Shape, Solver};
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Dynamics, costs and bounds shared by every system of a batch.
#[derive(Clone, Debug)]
pub struct Model {
    pub a: DMatrix<f64>,
    pub b: DMatrix<f64>,
    /// Diagonals of `Q`, `R`, `Qf`.
    pub q: Vec<f64>,
    pub r: Vec<f64>,
    pub qf: Vec<f64>,
    /// `|u_k| <= u_max` componentwise.
    pub u_max: f64,
    /// Horizon `N`.
    pub horizon: usize,
}

impl Model {
    pub fn nx(&self) -> usize {
        self.a.nrows()
    }
    pub fn nu(&self) -> usize {
        self.b.ncols()
    }
}

/// A chain of `masses` unit masses joined by springs (stiffness `k`, ends fixed to walls),
/// the first `actuated` of them pushed by bounded forces; semi-implicit Euler with step
/// `dt`. States: positions then velocities (`n_x = 2 masses`), `n_u = actuated`.
pub fn mass_chain(masses: usize, actuated: usize, horizon: usize) -> Model {
    let (dt, k) = (0.1, 1.0);
    let m = masses;
    let stiffness = DMatrix::from_fn(m, m, |i, j| {
        if i == j {
            -2.0 * k
        } else if i.abs_diff(j) == 1 {
            k
        } else {
            0.0
        }
    });
    let eye = DMatrix::<f64>::identity(m, m);
    // v' = v + dt (K p + u), p' = p + dt v' = (I + dt^2 K) p + dt v + dt^2 u.
    let mut a = DMatrix::zeros(2 * m, 2 * m);
    a.view_mut((0, 0), (m, m)).copy_from(&(&eye + &stiffness * (dt * dt)));
    a.view_mut((0, m), (m, m)).copy_from(&(&eye * dt));
    a.view_mut((m, 0), (m, m)).copy_from(&(&stiffness * dt));
    a.view_mut((m, m), (m, m)).copy_from(&eye);
    let mut b = DMatrix::zeros(2 * m, actuated);
    for j in 0..actuated {
        b[(j, j)] = dt * dt;
        b[(m + j, j)] = dt;
    }
    Model { a, b, q: vec![1.0; 2 * m], r: vec![0.1; actuated], qf: vec![10.0; 2 * m], u_max: 0.5, horizon }
}

/// Primal-dual iterate of a batch: per system `x` (`(N + 1) n_x`), `u` (`N n_u`), the
/// dynamics multipliers `lam` (`(N + 1) n_x`), the bound multipliers `yl`, `yh` (`N n_u`).
#[derive(Clone, Debug)]
pub struct Iterate {
    pub x: Vec<f64>,
    pub u: Vec<f64>,
    pub lam: Vec<f64>,
    pub yl: Vec<f64>,
    pub yh: Vec<f64>,
}

/// One system's part of an [`Iterate`].
struct View<'a> {
    x: &'a [f64],
    u: &'a [f64],
    lam: &'a [f64],
    yl: &'a [f64],
    yh: &'a [f64],
}

impl Iterate {
    /// System `s`'s part of every vector.
    fn system(&self, d: &Dims, s: usize) -> View<'_> {
        let (xs, us) = (s * d.xs()..(s + 1) * d.xs(), s * d.us()..(s + 1) * d.us());
        View { x: &self.x[xs.clone()], u: &self.u[us.clone()], lam: &self.lam[xs], yl: &self.yl[us.clone()], yh: &self.yh[us] }
    }

    /// Replaces system `s`'s part of every vector by the one-system iterate `new`.
    fn set_system(&mut self, d: &Dims, s: usize, new: &Iterate) {
        let (xs, us) = (s * d.xs()..(s + 1) * d.xs(), s * d.us()..(s + 1) * d.us());
        self.x[xs.clone()].copy_from_slice(&new.x);
        self.lam[xs].copy_from_slice(&new.lam);
        self.u[us.clone()].copy_from_slice(&new.u);
        self.yl[us.clone()].copy_from_slice(&new.yl);
        self.yh[us].copy_from_slice(&new.yh);
    }
}

/// What [`solve`] did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub iterations: usize,
    /// Largest over the batch at the end: dynamics violation, stationarity residual,
    /// average complementarity `s y`.
    pub primal: f64,
    pub dual: f64,
    pub gap: f64,
    /// Seconds spent assembling Newton systems, in the first `factor` + `solve` (on the
    /// GPU with the plan's buffers and graph captures) and in every later `refactor` +
    /// `solve`.
    pub assembly_s: f64,
    pub first_linear_s: f64,
    pub linear_s: f64,
}

/// Convergence: every system's residuals and gap below this.
pub const TOLERANCE: f64 = 1e-8;
/// Newton steps before giving up.
pub const MAX_ITERATIONS: usize = 60;

/// Per-system views of the iterate's vectors.
struct Dims {
    nx: usize,
    nu: usize,
    n: usize,
}

impl Dims {
    fn of(m: &Model) -> Self {
        Dims { nx: m.nx(), nu: m.nu(), n: m.horizon }
    }
    fn xs(&self) -> usize {
        (self.n + 1) * self.nx
    }
    fn us(&self) -> usize {
        self.n * self.nu
    }
}

/// `C' lam` of one system: `(x part, u part)`.
fn constraint_transpose(m: &Model, d: &Dims, lam: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let (mut gx, mut gu) = (lam.to_vec(), vec![0.0; d.us()]);
    for k in 0..d.n {
        let next = nalgebra::DVectorView::from_slice(&lam[(k + 1) * d.nx..(k + 2) * d.nx], d.nx);
        let at = m.a.tr_mul(&next);
        let bt = m.b.tr_mul(&next);
        for i in 0..d.nx {
            gx[k * d.nx + i] -= at[i];
        }
        gu[k * d.nu..(k + 1) * d.nu].copy_from_slice(bt.as_slice());
        gu[k * d.nu..(k + 1) * d.nu].iter_mut().for_each(|v| *v = -*v);
    }
    (gx, gu)
}

/// `C z - d` of one system (`x_0 - x_init`, then `x_{k+1} - A x_k - B u_k`).
fn constraint(m: &Model, d: &Dims, x: &[f64], u: &[f64], x_init: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; d.xs()];
    for i in 0..d.nx {
        c[i] = x[i] - x_init[i];
    }
    for k in 0..d.n {
        let xk = nalgebra::DVectorView::from_slice(&x[k * d.nx..(k + 1) * d.nx], d.nx);
        let uk = nalgebra::DVectorView::from_slice(&u[k * d.nu..(k + 1) * d.nu], d.nu);
        let pred = &m.a * xk + &m.b * uk;
        for i in 0..d.nx {
            c[(k + 1) * d.nx + i] = x[(k + 1) * d.nx + i] - pred[i];
        }
    }
    c
}

/// The diagonal state Hessian at stage `k`.
fn hx(m: &Model, d: &Dims, k: usize, i: usize) -> f64 {
    if k < d.n { m.q[i] } else { m.qf[i] }
}

/// Solves the batch (`x_init`: `S n_x` initial states) with `solver`; returns the final
/// iterate and what happened. The solver sees one shape throughout: `S` systems of `N + 1`
/// blocks of `n_x`.
pub fn solve<F: Factorization<f64>>(m: &Model, x_init: &[f64], solver: &mut F) -> Result<(Iterate, Outcome)> {
    let d = Dims::of(m);
    let systems = x_init.len() / d.nx;
    let shape = Shape::new(systems, d.n + 1, d.nx)?;
    let mut it = Iterate {
        x: (0..systems)
            .flat_map(|s| {
                let mut x = vec![0.0; d.xs()];
                x[..d.nx].copy_from_slice(&x_init[s * d.nx..(s + 1) * d.nx]);
                x
            })
            .collect(),
        u: vec![0.0; systems * d.us()],
        lam: vec![0.0; systems * d.xs()],
        yl: vec![1.0; systems * d.us()],
        yh: vec![1.0; systems * d.us()],
    };
    let mut system = BlockTridiag::<f64>::zeros_batch(systems, d.n + 1, d.nx)?;
    let mut rhs = BlockVec::<f64>::zeros(shape, 1)?;
    if solver.name() == "gpu" {
        // Assembled in place every iteration: page-locked once, then moved by DMA at the
        // link's speed instead of being staged through pinned buffers on every call.
        let gpu = Gpu::shared()?;
        system.pin_for_gpu(&gpu)?;
        rhs.pin_for_gpu(&gpu)?;
    }
    let mut out = Outcome::default();
    let mut factored = false;
    for iteration in 0..=MAX_ITERATIONS {
        let t = std::time::Instant::now();
        // Per system: residuals, the Newton matrix's diagonal H, and the reduced gradient g.
        let per: Vec<Step> = (0..systems).into_par_iter().map(|s| newton_data(m, &d, &it, s, &x_init[s * d.nx..(s + 1) * d.nx])).collect();
        out.primal = per.iter().map(|p| p.primal).fold(0.0, f64::max);
        out.dual = per.iter().map(|p| p.dual).fold(0.0, f64::max);
        out.gap = per.iter().map(|p| p.gap).fold(0.0, f64::max);
        out.iterations = iteration;
        if out.primal <= TOLERANCE && out.dual <= TOLERANCE && out.gap <= TOLERANCE {
            break;
        }
        if iteration == MAX_ITERATIONS {
            return Err(blocktri::Error::Shape(format!(
                "the interior-point method did not converge in {MAX_ITERATIONS} iterations (primal {:e}, dual {:e}, gap {:e})",
                out.primal, out.dual, out.gap
            )));
        }
        // S dlam = r_p - C H^-1 g, per system.
        let rows: Vec<Schur> = per.par_iter().map(|p| schur_blocks(m, &d, p)).collect();
        for (s, row) in rows.into_iter().enumerate() {
            for (k, blk) in row.diag.iter().enumerate() {
                system.diag_block_mut(s, k)[..blk.len()].copy_from_slice(blk);
            }
            for (k, blk) in row.sub.iter().enumerate() {
                system.sub_block_mut(s, k)[..blk.len()].copy_from_slice(blk);
            }
            rhs.system_mut(s).copy_from_slice(&row.rhs);
        }
        out.assembly_s += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        // One call per Newton step: on the GPU one upload, one graph launch, one download
        // (`refactor` + `solve_in_place` would wait for the device twice).
        solver.factor_solve_in_place(&system, &mut rhs)?;
        if factored {
            out.linear_s += t.elapsed().as_secs_f64();
        } else {
            out.first_linear_s = t.elapsed().as_secs_f64();
        }
        factored = true;
        // Primal and bound-multiplier steps, step length, update (per system).
        let t = std::time::Instant::now();
        let updates: Vec<Iterate> = per.par_iter().enumerate().map(|(s, p)| step(m, &d, p, rhs.system(s), &it, s)).collect();
        for (s, new) in updates.iter().enumerate() {
            it.set_system(&d, s, new);
        }
        out.assembly_s += t.elapsed().as_secs_f64();
    }
    Ok((it, out))
}

/// One system's Newton data.
struct Step {
    /// Diagonal Hessian of the barrier Lagrangian: states then inputs.
    hx: Vec<f64>,
    hu: Vec<f64>,
    /// Reduced gradient `g = grad f + C' lam - tau / s_l + tau / s_h`.
    gx: Vec<f64>,
    gu: Vec<f64>,
    /// `C z - d`.
    rp: Vec<f64>,
    tau: f64,
    primal: f64,
    dual: f64,
    gap: f64,
}

fn newton_data(m: &Model, d: &Dims, it: &Iterate, s: usize, x_init: &[f64]) -> Step {
    let View { x, u, lam, yl, yh } = it.system(d, s);
    let rp = constraint(m, d, x, u, x_init);
    let (ctx, ctu) = constraint_transpose(m, d, lam);
    let gap = (0..d.us()).map(|j| (u[j] + m.u_max) * yl[j] + (m.u_max - u[j]) * yh[j]).sum::<f64>() / (2 * d.us()).max(1) as f64;
    let tau = 0.1 * gap;
    let mut hxv = vec![0.0; d.xs()];
    let mut gx = vec![0.0; d.xs()];
    let mut dual = 0.0f64;
    for k in 0..=d.n {
        for i in 0..d.nx {
            let j = k * d.nx + i;
            hxv[j] = hx(m, d, k, i);
            gx[j] = hxv[j] * x[j] + ctx[j];
            dual = dual.max(gx[j].abs());
        }
    }
    let (mut hu, mut gu) = (vec![0.0; d.us()], vec![0.0; d.us()]);
    for j in 0..d.us() {
        let (sl, sh) = (u[j] + m.u_max, m.u_max - u[j]);
        let r = m.r[j % d.nu];
        dual = dual.max((r * u[j] + ctu[j] - yl[j] + yh[j]).abs());
        hu[j] = r + yl[j] / sl + yh[j] / sh;
        gu[j] = r * u[j] + ctu[j] - tau / sl + tau / sh;
    }
    let primal = rp.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    Step { hx: hxv, hu, gx, gu, rp, tau, primal, dual, gap }
}

/// One system's Newton system `S dlam = rhs`: blocks column-major `n_x x n_x`.
struct Schur {
    diag: Vec<Vec<f64>>,
    sub: Vec<Vec<f64>>,
    rhs: Vec<f64>,
}

/// The Schur blocks and right-hand side of one system.
fn schur_blocks(m: &Model, d: &Dims, p: &Step) -> Schur {
    let nx = d.nx;
    // Stage k gives D_{k+1} and S_{k+1,k}; the stages are independent (in parallel: with
    // one long system, the stages are the only parallelism).
    let stages: Vec<(Vec<f64>, Vec<f64>)> = (0..d.n)
        .into_par_iter()
        .map(|k| {
            // A Hx_k^-1 and B Hu_k^-1: columns scaled (the Hessian is diagonal).
            let ahx = DMatrix::from_fn(nx, nx, |i, j| m.a[(i, j)] / p.hx[k * nx + j]);
            let bh = DMatrix::from_fn(nx, d.nu, |i, j| m.b[(i, j)] / p.hu[k * d.nu + j]);
            let mut dk = &ahx * m.a.transpose() + &bh * m.b.transpose();
            for i in 0..nx {
                dk[(i, i)] += 1.0 / p.hx[(k + 1) * nx + i];
            }
            // Symmetrize exactly (the solver checks symmetry).
            let dk = (&dk + dk.transpose()) * 0.5;
            (dk.as_slice().to_vec(), (-ahx).as_slice().to_vec())
        })
        .collect();
    let mut diag = Vec::with_capacity(d.n + 1);
    diag.push(DMatrix::from_fn(nx, nx, |i, j| if i == j { 1.0 / p.hx[i] } else { 0.0 }).as_slice().to_vec()); // D_0 = Hx_0^-1
    let mut sub = Vec::with_capacity(d.n);
    for (dk, sk) in stages {
        diag.push(dk);
        sub.push(sk);
    }
    // r = r_p - C w, w = H^-1 g.
    let wx: Vec<f64> = p.gx.iter().zip(&p.hx).map(|(g, h)| g / h).collect();
    let wu: Vec<f64> = p.gu.iter().zip(&p.hu).map(|(g, h)| g / h).collect();
    let cw = constraint(m, d, &wx, &wu, &vec![0.0; nx]);
    let rhs = p.rp.iter().zip(&cw).map(|(a, b)| a - b).collect();
    Schur { diag, sub, rhs }
}

/// The new iterate of one system from `dlam`.
fn step(m: &Model, d: &Dims, p: &Step, dlam: &[f64], it: &Iterate, s: usize) -> Iterate {
    let View { x, u, lam, yl, yh } = it.system(d, s);
    let (ctx, ctu) = constraint_transpose(m, d, dlam);
    let dx: Vec<f64> = (0..d.xs()).map(|j| -(p.gx[j] + ctx[j]) / p.hx[j]).collect();
    let du: Vec<f64> = (0..d.us()).map(|j| -(p.gu[j] + ctu[j]) / p.hu[j]).collect();
    let mut dyl = vec![0.0; d.us()];
    let mut dyh = vec![0.0; d.us()];
    // Fraction to the boundary: slacks and multipliers stay positive.
    let mut alpha = 1.0f64;
    let mut limit = |v: f64, dv: f64| {
        if dv < 0.0 {
            alpha = alpha.min(-0.995 * v / dv);
        }
    };
    for j in 0..d.us() {
        let (sl, sh) = (u[j] + m.u_max, m.u_max - u[j]);
        dyl[j] = (p.tau - sl * yl[j] - yl[j] * du[j]) / sl;
        dyh[j] = (p.tau - sh * yh[j] + yh[j] * du[j]) / sh;
        limit(sl, du[j]);
        limit(sh, -du[j]);
        limit(yl[j], dyl[j]);
        limit(yh[j], dyh[j]);
    }
    let add = |v: &[f64], dv: &[f64]| v.iter().zip(dv).map(|(a, b)| a + alpha * b).collect::<Vec<f64>>();
    Iterate { x: add(x, &dx), u: add(u, &du), lam: add(lam, dlam), yl: add(yl, &dyl), yh: add(yh, &dyh) }
}

/// Objective of system `s`.
pub fn objective(m: &Model, it: &Iterate, s: usize) -> f64 {
    let d = Dims::of(m);
    let View { x, u, .. } = it.system(&d, s);
    let fx: f64 = (0..d.xs()).map(|j| 0.5 * hx(m, &d, j / d.nx, j % d.nx) * x[j] * x[j]).sum();
    fx + (0..d.us()).map(|j| 0.5 * m.r[j % d.nu] * u[j] * u[j]).sum::<f64>()
}

/// The optimum of one system without the input bounds, from the dense KKT system
/// `[H C'; C 0] [z; lam] = [0; d]` (nalgebra LU): the reference of the tests.
pub fn dense_unconstrained(m: &Model, x_init: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let d = Dims::of(m);
    let (nz, nc) = (d.xs() + d.us(), d.xs());
    let mut kkt = DMatrix::<f64>::zeros(nz + nc, nz + nc);
    let mut rhs = nalgebra::DVector::<f64>::zeros(nz + nc);
    for j in 0..d.xs() {
        kkt[(j, j)] = hx(m, &d, j / d.nx, j % d.nx);
    }
    for j in 0..d.us() {
        kkt[(d.xs() + j, d.xs() + j)] = m.r[j % d.nu];
    }
    // Constraint rows: x_0 = x_init; x_{k+1} - A x_k - B u_k = 0.
    let mut put = |row: usize, col: usize, v: f64| {
        kkt[(nz + row, col)] += v;
        kkt[(col, nz + row)] += v;
    };
    for i in 0..d.nx {
        put(i, i, 1.0);
    }
    for k in 0..d.n {
        for i in 0..d.nx {
            let row = (k + 1) * d.nx + i;
            put(row, row, 1.0);
            for j in 0..d.nx {
                put(row, k * d.nx + j, -m.a[(i, j)]);
            }
            for j in 0..d.nu {
                put(row, d.xs() + k * d.nu + j, -m.b[(i, j)]);
            }
        }
    }
    rhs.rows_mut(nz, d.nx).copy_from_slice(x_init);
    let z = kkt.lu().solve(&rhs).expect("the KKT matrix of the LQ problem is nonsingular");
    (z.rows(0, d.xs()).iter().copied().collect(), z.rows(d.xs(), d.us()).iter().copied().collect())
}

/// Solves `systems` problems (different initial displacements) on the GPU if present and
/// on the threaded CPU backend, and prints iterations, times and the final residuals.
pub fn compare_backends(systems: usize, horizon: usize, masses: usize, actuated: usize) -> Result<()> {
    let model = mass_chain(masses, actuated, horizon);
    let (nx, nu) = (model.nx(), model.nu());
    println!(
        "mass chain: {masses} masses, {actuated} actuated (n_x = {nx}, n_u = {nu}), horizon N = {horizon}, |u| <= {}, {systems} system(s)",
        model.u_max
    );
    println!("Newton systems: {systems} x {} blocks of {nx} x {nx} (SPD block-tridiagonal)", horizon + 1);
    // Initial states: displaced positions, at rest; one per system.
    let x_init: Vec<f64> = (0..systems)
        .flat_map(|s| (0..nx).map(move |i| if i < masses { 1.0 + 0.5 * ((s * 7 + i) % 5) as f64 / 5.0 } else { 0.0 }))
        .collect();
    let mut backends = vec![Backend::Cpu];
    if Gpu::is_available() {
        backends.insert(0, Backend::Gpu);
    }
    for backend in backends {
        let mut solver = Solver::<f64>::new(backend)?;
        let start = std::time::Instant::now();
        let (it, out) = solve(&model, &x_init, &mut solver)?;
        let total = start.elapsed().as_secs_f64();
        let iters = out.iterations.max(1) as f64;
        println!(
            "{:<12} {:>3} iterations, {:8.3} ms per iteration: factor + solve {:7.3} ms (the first {:.3} ms), \
             assembly and step (CPU, rayon) {:7.3} ms; objective {:.6}; max dynamics violation {:.1e}, stationarity {:.1e}, \
             complementarity {:.1e}",
            solver.backend_name(),
            out.iterations,
            1e3 * total / iters,
            1e3 * out.linear_s / (iters - 1.0).max(1.0),
            1e3 * out.first_linear_s,
            1e3 * out.assembly_s / iters,
            objective(&model, &it, 0),
            out.primal,
            out.dual,
            out.gap
        );
        if systems > 1 {
            println!("{:<12} {:.0} systems per second (Newton solves to convergence)", "", systems as f64 / total);
        }
        let saturated = it.u.iter().filter(|u| u.abs() > 0.999 * model.u_max).count();
        println!("{:<12} inputs at their bound: {saturated} of {}", "", it.u.len());
    }
    Ok(())
}
