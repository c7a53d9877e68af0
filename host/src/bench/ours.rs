//! This project's GPU solver in the benchmark: factor, solve, and the interlaced
//! factor + solve, each from device-resident inputs, graph replays timed with events;
//! then the same calls from host memory (wall clock) against the link's pinned bandwidth.

use super::peaks::Peaks;
use super::timing::time_gpu;
use super::{Config, Problem, Row};
use crate::cuda::{F32Products, Gpu, GpuCholesky, GpuOptions, KernelFamily};
use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::plan::Plan;
use crate::residual::accuracy;
use crate::scalar::Scalar;
use std::sync::Arc;

/// Number of input copies to rotate among so that `bytes` per copy do not stay in L2.
pub fn rotation(gpu: &Gpu, bytes: usize) -> usize {
    (2 * gpu.info().l2_bytes).div_ceil(bytes.max(1)).clamp(1, 8)
}

/// Flops and minimum bytes of a solve with `k` columns.
pub fn solve_cost(plan: &Plan, shape: Shape, k: usize, elem: usize) -> (f64, f64) {
    let factor_blocks = (3 * shape.nblocks * shape.block * shape.block * shape.batch) as f64;
    (plan.solve_flops(k), (factor_blocks + 2.0 * (shape.batch * shape.dim() * k) as f64) * elem as f64)
}

/// `base` for the default products (FP32 FMA), else `base-auto`, `base-tf32` or
/// `base-tf32x3`.
fn method_name(base: &str, products: F32Products) -> String {
    match (products, products.kernel_suffix()) {
        (F32Products::Auto, _) => format!("{base}-auto"),
        (_, Some(suffix)) => format!("{base}-{suffix}"),
        (_, None) => base.to_string(),
    }
}

/// Rows `factor`, `solve`, `factor+solve` (and `factor+transfer`) for one configuration.
pub fn bench<T: Scalar>(
    config: &Config,
    suite: &str,
    cfg: (usize, usize, usize, usize),
    gpu: &Arc<Gpu>,
    peaks: &Peaks,
    problem: Problem<'_, T>,
) -> Result<Vec<Row>> {
    let (s, nb, n, k) = cfg;
    let shape = Shape::new(s, nb, n)?;
    let family = match config.kernels {
        KernelFamily::Auto => "blocktri-gpu",
        KernelFamily::Generic => "blocktri-gpu-generic",
        KernelFamily::Rows => "blocktri-gpu-rows",
        KernelFamily::RowsLevels => "blocktri-gpu-rows-levels",
        KernelFamily::Panel => "blocktri-gpu-panel",
        KernelFamily::Blocked => "blocktri-gpu-blocked",
        KernelFamily::Tiled => "blocktri-gpu-tiled",
        KernelFamily::Chain => "blocktri-gpu-chain",
    };
    // The f32 product choice applies to f32 rows only.
    let f32_products = if T::BYTES == 4 { config.f32_products } else { F32Products::Fma };
    let name = method_name(family, f32_products);
    let options = GpuOptions { kernels: config.kernels, f32_products, ..Default::default() };
    let row = |phase: &str| Row::new(suite, &name, T::PRECISION, cfg, phase);
    let phases = ["factor", "solve", "factor+solve"];
    let probe = GpuCholesky::<T>::with_gpu(gpu.clone(), options)?;
    if n > probe.max_block_size() {
        let why = format!("n = {n} > {} (largest block size of the GPU kernels)", probe.max_block_size());
        return Ok(phases.iter().map(|p| row(p).skipped(why.clone())).collect());
    }
    let bytes = GpuCholesky::<T>::required_memory(shape, k);
    let copies = rotation(gpu, bytes);
    if bytes * copies > config.max_bytes {
        return Ok(phases.iter().map(|p| row(p).skipped(format!("needs {:.1} GB", (bytes * copies) as f64 / 1e9))).collect());
    }
    let plan = Plan::new(shape, T::PRECISION)?;
    let mut inst = Vec::with_capacity(copies);
    let mut problems = Vec::with_capacity(copies);
    for i in 0..copies {
        let (a, b) = problem(i)?;
        let mut g = GpuCholesky::<T>::with_gpu(gpu.clone(), options)?;
        match g.upload(&a) {
            Err(Error::Unsupported(why)) => return Ok(phases.iter().map(|p| row(p).skipped(why.clone())).collect()),
            other => other?,
        }
        g.upload_rhs(&b)?;
        inst.push(g);
        problems.push((a, b));
    }
    let cell = std::cell::RefCell::new(inst);
    let stream = |i: usize| cell.borrow()[i % copies].stream().clone();
    // Each copy captures its graphs at its first launch: warm them all up.
    let repeat = config.repeat.rotating(copies);
    let mut rows = Vec::new();

    // Factor.
    let t = time_gpu(repeat, stream, |_| Ok(()), |i| cell.borrow_mut()[i % copies].launch_factor())?;
    let mut r = row("factor");
    r.time = t;
    r.flops = plan.factor_flops();
    r.bytes = plan.factor_bytes();
    for g in cell.borrow_mut().iter_mut() {
        if let Err(e) = g.check_factor() {
            r.note = format!("error: {e}");
        }
    }
    rows.push(r.with_floor(peaks, T::PRECISION));

    // Solve (the right-hand sides are restored before each timed run).
    let t = time_gpu(
        repeat,
        stream,
        |i| cell.borrow_mut()[i % copies].upload_rhs(&problems[i % copies].1),
        |i| cell.borrow_mut()[i % copies].launch_solve(),
    )?;
    let residual =
        |g: &mut GpuCholesky<T>, a: &BlockTridiag<T>, b: &BlockVec<T>, run: &dyn Fn(&mut GpuCholesky<T>) -> Result<()>| -> Result<f64> {
            g.upload(a)?;
            g.upload_rhs(b)?;
            run(g)?;
            let mut x = b.clone();
            g.download_rhs(&mut x)?;
            Ok(accuracy(a, &x, b)?.relative_residual)
        };
    let (flops, bytes) = solve_cost(&plan, shape, k, T::BYTES);
    let mut r = row("solve");
    r.time = t;
    r.flops = flops;
    r.bytes = bytes;
    {
        let mut inst = cell.borrow_mut();
        let (a, b) = &problems[0];
        r.residual = Some(residual(&mut inst[0], a, b, &|g| {
            g.factor_uploaded()?;
            g.launch_solve()?;
            g.check_solve()
        })?);
    }
    rows.push(r.with_floor(peaks, T::PRECISION));

    // Interlaced factor + forward substitution, then backward substitution.
    let t = time_gpu(
        repeat,
        stream,
        |i| cell.borrow_mut()[i % copies].upload_rhs(&problems[i % copies].1),
        |i| cell.borrow_mut()[i % copies].launch_factor_solve(),
    )?;
    let mut r = row("factor+solve");
    r.time = t;
    r.flops = plan.factor_flops() + flops;
    r.bytes = plan.factor_bytes() + bytes;
    {
        let mut inst = cell.borrow_mut();
        let (a, b) = &problems[0];
        r.residual = Some(residual(&mut inst[0], a, b, &|g| {
            g.launch_factor_solve()?;
            g.check_factor()?;
            g.check_solve()
        })?);
    }
    rows.push(r.with_floor(peaks, T::PRECISION));

    // End to end from host memory (what `factor(&a)`, `solve(&b)` and
    // `factor_solve(&a, &b)` cost a caller holding `Vec`s): wall clock, against the time
    // the bytes need on the link at the measured pinned bandwidth.
    {
        let mut inst = cell.borrow_mut();
        let g = &mut inst[0];
        let (a, b) = &problems[0];
        let a_bytes = ((a.diag().len() + a.sub().len()) * T::BYTES) as f64;
        let b_bytes = (b.as_slice().len() * T::BYTES) as f64;
        let mut host_row = |phase: &str, t: super::timing::Stats, bytes_in: f64, bytes_out: f64| {
            let mut r = row(phase);
            r.time = t;
            r.bytes = bytes_in + bytes_out;
            r.floor_ms = peaks.transfer_floor_ms(bytes_in, bytes_out);
            r.fraction_of_floor = r.floor_ms.map(|f| f / t.median_ms);
            r.note = "host memory in and out, wall clock; floor = bytes over pinned bandwidth".into();
            rows.push(r);
        };
        let t = super::timing::time_cpu(config.repeat, |_| crate::Factorization::factor(g, a))?;
        host_row("factor+transfer", t, a_bytes, 0.0);
        let t = super::timing::time_cpu(config.repeat, |_| crate::Factorization::solve(g, b).map(|_| ()))?;
        host_row("solve+transfer", t, b_bytes, b_bytes);
        let t = super::timing::time_cpu(config.repeat, |_| crate::Factorization::factor_solve(g, a, b).map(|_| ()))?;
        host_row("factor+solve+transfer", t, a_bytes + b_bytes, b_bytes);
        if suite == "selinv" {
            // Selected inversion from the factor (issue #13: at most twice the factor):
            // the GPU sweep, the blocks of A^-1 downloaded and assembled on the host.
            crate::Factorization::factor(g, a)?;
            // The sweep alone, device-resident (what the target compares with the factor).
            let t = super::timing::time_cpu(config.repeat, |_| {
                g.selinv_sweep()?;
                Ok(g.stream().synchronize()?)
            })?;
            let mut r = row("selinv");
            r.time = t;
            r.note = "blocks of A^-1 from a resident factor, device-resident (the sweep alone)".into();
            rows.push(r);
            let t = super::timing::time_cpu(config.repeat, |_| crate::Factorization::selected_inverse(g).map(|_| ()))?;
            let mut r = row("selinv+transfer");
            r.time = t;
            r.bytes = a_bytes;
            r.floor_ms = peaks.transfer_floor_ms(0.0, a_bytes);
            r.fraction_of_floor = r.floor_ms.map(|f| f / t.median_ms);
            r.note = "blocks of A^-1 into host memory, wall clock, from a resident factor".into();
            rows.push(r);
        }
    }
    Ok(rows)
}

/// Rows of [`crate::cuda::MixedCholesky`] (method `blocktri-gpu-mixed`, f64 problems):
/// `factor` (rounding to f32 on the GPU + the f32 factorization), `solve` (the refinement
/// to `f64` accuracy, host synchronizations between passes included), `factor+solve` (one
/// [`crate::cuda::MixedCholesky::factor_solve_uploaded`]); the
/// note gives the solves taken and any fallback. The refinement stops at `tolerance`
/// ([`crate::cuda::RefineOptions::tolerance`]; one other than the default is named in the
/// method). Device-resident, one input copy.
pub fn bench_mixed(
    config: &Config,
    suite: &str,
    cfg: (usize, usize, usize, usize),
    gpu: &Arc<Gpu>,
    peaks: &Peaks,
    tolerance: f64,
    problem: Problem<'_, f64>,
) -> Result<Vec<Row>> {
    use crate::cuda::{MixedCholesky, RefineOptions};
    use crate::scalar::Precision;
    let (s, nb, n, k) = cfg;
    let shape = Shape::new(s, nb, n)?;
    let products = config.f32_products;
    let mut name = method_name("blocktri-gpu-mixed", products);
    if tolerance != RefineOptions::default().tolerance {
        name = format!("{name}-tol{tolerance:e}");
    }
    let row = |phase: &str| Row::new(suite, &name, Precision::F64, cfg, phase);
    let phases = ["factor", "solve", "factor+solve"];
    let bytes =
        GpuCholesky::<f64>::required_memory(shape, k) + GpuCholesky::<f32>::required_memory(shape, k) + 32 * shape.batch * shape.dim() * k;
    if bytes > config.max_bytes {
        return Ok(phases.iter().map(|p| row(p).skipped(format!("needs {:.1} GB", bytes as f64 / 1e9))).collect());
    }
    let (a, b) = problem(0)?;
    let mut mixed = MixedCholesky::with_gpu(gpu.clone(), RefineOptions { products, tolerance, ..RefineOptions::default() })?;
    match mixed.upload(&a) {
        Err(Error::Unsupported(why)) => return Ok(phases.iter().map(|p| row(p).skipped(why.clone())).collect()),
        other => other?,
    }
    mixed.upload_rhs(&b)?;
    let plan = Plan::new(shape, Precision::F32)?;
    let (solve_flops, solve_bytes) = solve_cost(&plan, shape, k, 4);
    let cell = std::cell::RefCell::new(mixed);
    let stream = |_| cell.borrow().stream().clone();
    // Runs `work`, then the accuracy of the solution and what the refinement did.
    let outcome = |solved: bool| -> Result<(Option<f64>, String)> {
        let m = cell.borrow();
        let report = m.report();
        let mut note = format!("{} f32 solves", report.solves);
        if let Some(why) = &report.fallback {
            note = format!("f64 fallback: {why}");
        }
        if !solved {
            return Ok((None, note));
        }
        let mut x = b.clone();
        m.download(&mut x)?;
        Ok((Some(accuracy(&a, &x, &b)?.relative_residual), note))
    };
    let mut rows = Vec::new();
    let t = time_gpu(config.repeat, stream, |_| Ok(()), |_| cell.borrow_mut().factor_uploaded())?;
    let mut r = row("factor");
    (r.time, r.flops, r.bytes) = (t, plan.factor_flops(), plan.factor_bytes());
    (r.residual, r.note) = outcome(false)?;
    rows.push(r.with_floor(peaks, Precision::F32));
    let t = time_gpu(config.repeat, stream, |_| cell.borrow_mut().upload_rhs(&b), |_| cell.borrow_mut().solve_uploaded().map(|_| ()))?;
    let mut r = row("solve");
    (r.time, r.flops, r.bytes) = (t, solve_flops, solve_bytes);
    (r.residual, r.note) = outcome(true)?;
    rows.push(r.with_floor(peaks, Precision::F32));
    let t =
        time_gpu(config.repeat, stream, |_| cell.borrow_mut().upload_rhs(&b), |_| cell.borrow_mut().factor_solve_uploaded().map(|_| ()))?;
    let mut r = row("factor+solve");
    (r.time, r.flops, r.bytes) = (t, plan.factor_flops() + solve_flops, plan.factor_bytes() + solve_bytes);
    (r.residual, r.note) = outcome(true)?;
    rows.push(r.with_floor(peaks, Precision::F32));
    Ok(rows)
}
