//! The arrowhead suite (issue #13): factor + solve of block-tridiagonal systems with a
//! dense border of width [`WIDTH`] (`blocktri::arrow`), from host memory, against the
//! factor + solve of the same chain without its border in the same run, on the GPU and the
//! threaded CPU. (No dense peer: the assembled `(N n + a)^2` matrix of the default size
//! needs 550 GB.)

use super::peaks::Peaks;
use super::timing::time_cpu;
use super::{Config, Emit, Row, Sizes};
use crate::arrow::{ArrowSolver, ArrowVec, BlockTridiagArrow};
use crate::error::Result;
use crate::scalar::{Scalar, wide};
use crate::solver::{Backend, Solver};

/// The border's width in the suite (issue #13's `a = 8`).
pub const WIDTH: usize = 8;

/// `(N, n)` of the suite: issue #13's `N = 8192, n = 32` unless sizes are given.
///
/// ```
/// use blocktri::bench::{Config, arrow};
/// let mut config = Config::full();
/// assert_eq!(arrow::sizes(&config), vec![(8192, 32)]);
/// config.sizes.blocks = Some(vec![16, 64]);
/// assert_eq!(arrow::sizes(&config), vec![(8192, 16), (8192, 64)]);
/// ```
pub fn sizes(config: &Config) -> Vec<(usize, usize)> {
    let z = &config.sizes;
    let nbs = Sizes::pick(&z.nblocks, if config.quick { &[1024] } else { &[8192] });
    let ns = Sizes::pick(&z.blocks, &[32]);
    nbs.iter().flat_map(|&nb| ns.iter().map(move |&n| (nb, n))).collect()
}

/// Rows `factor+solve+transfer` (the chain alone) and `arrow-factor+solve+transfer` (with
/// its border) for `blocktri-gpu` (when there is a GPU) and `cpu-threaded` (within the CPU
/// budget), wall clock from host memory; the GPU rows against the time their bytes need on
/// the link at the measured pinned bandwidth.
pub fn bench<T: Scalar>(config: &Config, gpu: bool, peaks: &Peaks, emit: Emit<'_>) -> Result<()> {
    for (nb, n) in sizes(config) {
        for &s in Sizes::pick(&config.sizes.batches, &[1]) {
            let cfg = (s, nb, n, 1);
            let m = crate::generate::random_spd_arrow::<T>(s, nb, n, WIDTH, (nb * 31 + n) as u64)?;
            let ones =
                ArrowVec::new(crate::BlockVec::from_vec(m.shape(), 1, vec![T::one(); s * nb * n])?, WIDTH, vec![T::one(); s * WIDTH])?;
            let b = m.matvec(&ones)?;
            let flops = (s * nb) as f64 * (7.0 / 3.0) * (n as f64).powi(3);
            for (method, backend) in [("blocktri-gpu", Backend::Gpu), ("cpu-threaded", Backend::Cpu)] {
                if !config.wants(method) || (backend == Backend::Gpu && !gpu) {
                    continue;
                }
                let row = |phase: &str| Row::new("arrow", method, T::PRECISION, cfg, phase);
                if backend == Backend::Cpu && flops * 0.5 > config.cpu_flop_budget {
                    emit(vec![row("arrow-factor+solve+transfer").skipped(format!("estimated {flops:.1e} flops, over the CPU budget"))]);
                    continue;
                }
                let mut rows = measure(config, backend, &m, &b, row)?;
                if backend == Backend::Gpu {
                    // In: the chain (and the border), the right-hand side; out: the solution.
                    let (chain, rhs) = (m.chain().diag().len() + m.chain().sub().len(), b.chain().as_slice().len());
                    for (r, border) in rows.iter_mut().zip([0, m.arrow_values().len()]) {
                        let (bytes_in, bytes_out) = (((chain + border + rhs) * T::BYTES) as f64, (rhs * T::BYTES) as f64);
                        r.bytes = bytes_in + bytes_out;
                        r.floor_ms = peaks.transfer_floor_ms(bytes_in, bytes_out);
                        r.fraction_of_floor = r.floor_ms.map(|f| f / r.time.median_ms);
                    }
                }
                emit(rows);
            }
        }
    }
    Ok(())
}

/// The chain alone, then with its border, on `backend`; residuals of both.
fn measure<T: Scalar>(
    config: &Config,
    backend: Backend,
    m: &BlockTridiagArrow<T>,
    b: &ArrowVec<T>,
    row: impl Fn(&str) -> Row,
) -> Result<Vec<Row>> {
    let mut plain = Solver::<T>::new(backend)?;
    let mut x_plain = None;
    let t_plain = time_cpu(config.repeat, |_| {
        plain.factor(m.chain())?;
        x_plain = Some(plain.solve(b.chain())?);
        Ok(())
    })?;
    let mut arrow = ArrowSolver::<T>::new(backend)?;
    let mut x_arrow = None;
    let t_arrow = time_cpu(config.repeat, |_| {
        arrow.factor(m)?;
        x_arrow = Some(arrow.solve(b)?);
        Ok(())
    })?;
    let mut r = row("factor+solve+transfer");
    r.time = t_plain;
    if let Some(x) = &x_plain {
        r.residual = Some(crate::residual::accuracy(m.chain(), x, b.chain())?.relative_residual);
    }
    r.note = "the chain alone (no border), host memory in and out, wall clock".into();
    let mut ra = row("arrow-factor+solve+transfer");
    ra.time = t_arrow;
    if let Some(x) = &x_arrow {
        ra.residual = Some(relative_residual(m, x, b)?);
    }
    ra.note = format!(
        "border of width {WIDTH}: {:.2}x the chain alone in the same run; host memory in and out, wall clock",
        t_arrow.median_ms / t_plain.median_ms
    );
    Ok(vec![r, ra])
}

/// `||A x - b|| / ||b||` over the whole batch (chain and tip rows).
fn relative_residual<T: Scalar>(m: &BlockTridiagArrow<T>, x: &ArrowVec<T>, b: &ArrowVec<T>) -> Result<f64> {
    let ax = m.matvec(x)?;
    let sq = |v: &[T]| v.iter().map(|&x| wide(x) * wide(x)).sum::<f64>();
    let diff = |p: &[T], q: &[T]| p.iter().zip(q).map(|(&x, &y)| (wide(x) - wide(y)).powi(2)).sum::<f64>();
    let num = diff(ax.chain().as_slice(), b.chain().as_slice()) + diff(ax.tip_values(), b.tip_values());
    let den = sq(b.chain().as_slice()) + sq(b.tip_values());
    Ok((num / den.max(f64::MIN_POSITIVE)).sqrt())
}
