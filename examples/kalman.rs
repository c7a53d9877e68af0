//! The Kalman smoother of the second paper (section 4.3) as a block-tridiagonal solve:
//! latent dimension `n = 256` of damped 2-D rotations, `m = 1024` observations per step,
//! `N = 100` steps, dense SPD `Q`, diagonal `R`. The MAP system is assembled, factored and
//! solved (the smoothed means), and its selected inverse gives the smoothed covariances;
//! both are checked against a Rauch–Tung–Striebel smoother on the CPU in f64, and two
//! latent coordinates are plotted with their 2-sigma band.
//!
//! ```text
//! cargo run --release --example kalman              # GPU if present, else CPU (n = 64, m = 256)
//! cargo run --release --example kalman -- 128 512 50  # n m N
//! ```
//!
//! Writes `kalman.svg` (or the path in `KALMAN_SVG`). Device-resident times with the
//! GPU peers in the same run: `blocktri bench --suites kalman`.

use blocktri::cuda::{Gpu, GpuCholesky};
use blocktri::generate::{self, RtsSmoothed};
use blocktri::{Backend, BlockTridiag, Result, Solver};
use plotters::prelude::*;
use std::time::{Duration, Instant};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Times `f` once after one warm-up call.
fn timed<R>(mut f: impl FnMut() -> Result<R>) -> Result<(R, Duration)> {
    f()?;
    let t = Instant::now();
    let r = f()?;
    Ok((r, t.elapsed()))
}

fn main() -> Result<()> {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let gpu = Gpu::shared().ok();
    let (n, m, nsteps) = match (sizes.as_slice(), &gpu) {
        ([n, m, nsteps], _) => (*n, *m, *nsteps),
        (_, Some(_)) => (256, 1024, 100),
        (_, None) => {
            println!("no GPU found: running on the CPU backend with n = 64, m = 256 (pass `n m N` to change)");
            (64, 256, 100)
        }
    };
    let model = generate::kalman_model(n, m, 7)?;
    let (states, z) = model.simulate(nsteps, 8);
    let t = Instant::now();
    let (a, b) = model.smoothing_system::<f64>(&z)?;
    let assembly = t.elapsed();

    // From host memory: factor, solve, selected inversion (each timed after a warm-up).
    let mut solver = Solver::<f64>::new(Backend::Auto)?;
    solver.factor(&a)?;
    let (_, factor) = timed(|| solver.refactor(&a))?;
    let (x, solve) = timed(|| solver.solve(&b))?;
    let (sigma, selinv) = timed(|| solver.selected_inverse())?;
    let t = Instant::now();
    let rts = model.rts_smoother(&z)?;
    let rts_time = t.elapsed();

    println!("Kalman smoother: n = {n}, m = {m}, N = {nsteps}, f64, backend {}", solver.backend_name());
    println!("  assembly (CPU)                    {:9.2} ms", ms(assembly));
    println!("  factor, from host memory          {:9.2} ms", ms(factor));
    println!("  solve, from host memory           {:9.2} ms", ms(solve));
    println!("  selected inversion (covariances)  {:9.2} ms", ms(selinv));
    if let Some(g) = &gpu {
        // Data already on the device: the kernels alone (a wall clock around launch + the
        // status check, graphs replayed).
        let mut dev = GpuCholesky::<f64>::with_gpu(g.clone(), Default::default())?;
        dev.upload(&a)?;
        dev.upload_rhs(&b)?;
        let (_, f) = timed(|| dev.launch_factor().and_then(|()| dev.check_factor()))?;
        let (_, s) = timed(|| dev.launch_solve().and_then(|()| dev.check_solve()))?;
        println!("  factor, device-resident           {:9.2} ms   (paper, H200: 13.3 ms; cuDSS 27.5 ms)", ms(f));
        println!("  solve, device-resident            {:9.2} ms   (paper, H200:  8.6 ms; cuDSS  1.8 ms)", ms(s));
    }
    println!("  RTS smoother (CPU, f64)           {:9.2} ms", ms(rts_time));

    let (mean_error, cov_error) = compare(x.as_slice(), &sigma, &rts, n);
    println!("max |mean - RTS mean| / max |RTS mean|       = {mean_error:.2e}");
    println!("max |covariance - RTS| / max |RTS covariance| = {cov_error:.2e}");
    let path = std::env::var("KALMAN_SVG").unwrap_or_else(|_| "kalman.svg".into());
    plot(&path, &states, x.as_slice(), &sigma, n).map_err(|e| blocktri::Error::Format { path: path.clone(), msg: e.to_string() })?;
    println!("wrote {path}");
    Ok(())
}

/// Largest relative differences of the means and of the covariance blocks (diagonal and
/// lag-one) from the RTS smoother's.
fn compare(x: &[f64], sigma: &BlockTridiag<f64>, rts: &RtsSmoothed, n: usize) -> (f64, f64) {
    let means: Vec<f64> = rts.means.iter().flat_map(|v| v.iter().copied()).collect();
    let max_abs = |v: &mut dyn Iterator<Item = f64>| v.fold(0.0f64, |acc, e| acc.max(e.abs()));
    let mean_error = max_abs(&mut x.iter().zip(&means).map(|(p, q)| p - q)) / max_abs(&mut means.iter().copied());
    let (mut worst, mut scale) = (0.0f64, 0.0f64);
    let ld = sigma.ld();
    for (k, cov) in rts.covariances.iter().enumerate() {
        for c in 0..n {
            for r in 0..n {
                worst = worst.max((sigma.diag_block(0, k)[c * ld + r] - cov[(r, c)]).abs());
                scale = scale.max(cov[(r, c)].abs());
                if let Some(cross) = rts.cross_covariances.get(k) {
                    worst = worst.max((sigma.sub_block(0, k)[c * ld + r] - cross[(r, c)]).abs());
                }
            }
        }
    }
    (mean_error, worst / scale)
}

/// True and smoothed trajectories of latent coordinates 0 and 1 with the 2-sigma band of
/// the smoothed covariances, one panel each.
fn plot(
    path: &str,
    states: &[nalgebra::DVector<f64>],
    x: &[f64],
    sigma: &BlockTridiag<f64>,
    n: usize,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((2, 1));
    let steps = states.len();
    for (coord, panel) in panels.iter().enumerate() {
        let truth: Vec<(f64, f64)> = states.iter().enumerate().map(|(k, s)| (k as f64, s[coord])).collect();
        let mean: Vec<(f64, f64)> = (0..steps).map(|k| (k as f64, x[k * n + coord])).collect();
        let sd: Vec<f64> = (0..steps).map(|k| sigma.diag_block(0, k)[coord * sigma.ld() + coord].sqrt()).collect();
        let (lo, hi) = truth
            .iter()
            .chain(&mean)
            .zip(sd.iter().chain(&sd))
            .fold((f64::MAX, f64::MIN), |(lo, hi), (p, s)| (lo.min(p.1 - 2.0 * s), hi.max(p.1 + 2.0 * s)));
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("latent coordinate {coord}: true, smoothed, 2-sigma band"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..(steps - 1) as f64, lo..hi)?;
        chart.configure_mesh().x_desc("step k").draw()?;
        let band: Vec<(f64, f64)> = mean
            .iter()
            .zip(&sd)
            .map(|(p, s)| (p.0, p.1 + 2.0 * s))
            .chain(mean.iter().zip(&sd).rev().map(|(p, s)| (p.0, p.1 - 2.0 * s)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(band, BLUE.mix(0.15))))?
            .label("2 sigma")
            .legend(|(x, y)| Rectangle::new([(x, y - 4), (x + 16, y + 4)], BLUE.mix(0.15).filled()));
        chart
            .draw_series(LineSeries::new(truth, BLACK.stroke_width(2)))?
            .label("true")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(mean, BLUE.stroke_width(2)))?
            .label("smoothed")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
        chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
