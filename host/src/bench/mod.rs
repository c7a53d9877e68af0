//! The comparison harness behind `blocktri bench`: this project and the solvers people
//! use instead, on the same matrices, in the same process.
//!
//! Method: warm-up runs, then the median of timed runs (CUDA events around device work, a
//! monotonic clock around CPU work); GPU inputs rotate among several copies when one
//! copy fits in L2, so that the cache does not flatter small problems; every method's
//! solution is checked (`||AX - B|| / ||B||` in `f64`) and reported next to its time; each
//! GPU row carries its floor `max(flops / peak, bytes / bandwidth)` from peaks measured at
//! the start of the run, and the fraction of that floor it reached.

pub mod arrow;
pub mod cpu;
pub mod ours;
pub mod peaks;
pub mod report;
pub mod timing;
pub mod tridiag;
pub mod vendor;

use crate::error::Result;
use crate::scalar::Precision;
use serde::Serialize;
pub use timing::{Repeat, Stats};

/// One measured (or skipped) configuration of one method.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Sweep name (`fp64-sweep`, `horizon`, `batch`, `selinv`, `arrow`, `kalman`, `tridiag`).
    pub suite: String,
    /// Method name.
    pub method: String,
    /// `f32` or `f64`.
    pub precision: String,
    /// Systems `S` (matrices, for the inverse).
    pub batch: usize,
    /// Blocks `N` (1 for the inverse).
    pub nblocks: usize,
    /// Block size `n` (matrix size for the inverse).
    pub block: usize,
    /// Right-hand-side columns.
    pub nrhs: usize,
    /// `factor`, `solve`, `factor+solve`, `analysis`, `inverse`, ...
    pub phase: String,
    /// Timing statistics (zero when skipped).
    pub time: Stats,
    /// Relative residual of the method's solution (or `||AX - I|| / ||A|| ||X||`).
    pub residual: Option<f64>,
    /// Useful flops of the phase.
    pub flops: f64,
    /// Bytes the phase must move at least.
    pub bytes: f64,
    /// `max(flops / peak, bytes / bandwidth)` in ms, GPU rows only.
    pub floor_ms: Option<f64>,
    /// `floor_ms / median`.
    pub fraction_of_floor: Option<f64>,
    /// Why a row was skipped, or a flag on its result.
    pub note: String,
}

impl Row {
    /// A row for `method` on a configuration, not yet timed.
    pub fn new(suite: &str, method: &str, precision: Precision, cfg: (usize, usize, usize, usize), phase: &str) -> Self {
        Row {
            suite: suite.into(),
            method: method.into(),
            precision: precision.to_string(),
            batch: cfg.0,
            nblocks: cfg.1,
            block: cfg.2,
            nrhs: cfg.3,
            phase: phase.into(),
            time: Stats::default(),
            residual: None,
            flops: 0.0,
            bytes: 0.0,
            floor_ms: None,
            fraction_of_floor: None,
            note: String::new(),
        }
    }

    /// The same row marked as skipped.
    pub fn skipped(mut self, why: impl Into<String>) -> Self {
        self.note = format!("skipped: {}", why.into());
        self
    }

    /// Fills the floor from the peaks (GPU rows).
    pub fn with_floor(mut self, peaks: &peaks::Peaks, precision: Precision) -> Self {
        let peak = peaks.product_flops(precision);
        if peak > 0.0 && peaks.copy_gbs > 0.0 && self.time.median_ms > 0.0 {
            let floor = (self.flops / peak).max(self.bytes / (peaks.copy_gbs * 1e9)) * 1e3;
            self.floor_ms = Some(floor);
            self.fraction_of_floor = Some(floor / self.time.median_ms);
        }
        self
    }
}

/// Which sweeps and sizes to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Sweeps to run.
    pub suites: Vec<String>,
    /// Methods to run (empty: all).
    pub methods: Vec<String>,
    /// Precisions.
    pub precisions: Vec<Precision>,
    /// Small sizes only (finishes in under a minute).
    pub quick: bool,
    /// Repetitions.
    pub repeat: Repeat,
    /// Largest device memory one configuration may use, bytes.
    pub max_bytes: usize,
    /// Largest flop count for the sequential CPU peers (beyond: skipped, too slow).
    pub cpu_flop_budget: f64,
    /// Path of `libcudss.so.0` (else searched on the library path).
    pub cudss: Option<String>,
    /// Stop starting new configurations after this many seconds (the rows so far are
    /// reported, with a note).
    pub time_limit_s: Option<f64>,
    /// Level-kernel family of this project's GPU solver (a non-default family is named
    /// in the method, e.g. `blocktri-gpu-panel`).
    pub kernels: crate::cuda::KernelFamily,
    /// Tile products of this project's `f32` rows (a non-default choice is named in the
    /// method, e.g. `blocktri-gpu-tf32x3`).
    pub f32_products: crate::cuda::F32Products,
    /// Sizes that replace the suites' own lists (`None`: the suite's list).
    pub sizes: Sizes,
    /// Stopping tolerances of the mixed-precision rows (`blocktri-gpu-mixed`), one set of
    /// rows each (default: the library's, [`crate::cuda::RefineOptions`]). A tolerance
    /// other than the library's default is named in the method, e.g.
    /// `blocktri-gpu-mixed-tol1e-12`.
    pub refine_tolerances: Vec<f64>,
}

/// Size lists given on the command line; each replaces the matching list of the suites
/// that vary it. The FP64 sweep keeps `N n = 262144` (its `N` follows `n`); the batch
/// sweep's `N = 64, n = 16` are replaced too when given.
#[derive(Clone, Debug, Default)]
pub struct Sizes {
    /// Systems per batch `S` (horizon, batch).
    pub batches: Option<Vec<usize>>,
    /// Numbers of blocks `N` (horizon, batch).
    pub nblocks: Option<Vec<usize>>,
    /// Block sizes `n` (horizon, batch, fp64-sweep).
    pub blocks: Option<Vec<usize>>,
    /// Orders of the tridiagonal inverse (tridiag).
    pub tridiag: Option<Vec<usize>>,
    /// Right-hand-side columns `k` of the block-tridiagonal configurations (`None`: one).
    pub nrhs: Option<Vec<usize>>,
}

impl Sizes {
    fn pick<'a>(given: &'a Option<Vec<usize>>, default: &'a [usize]) -> &'a [usize] {
        given.as_deref().unwrap_or(default)
    }
}

impl Config {
    /// The quick comparison (under a minute on an H100).
    pub fn quick() -> Self {
        Config {
            suites: ["horizon", "batch", "fp64-sweep", "tridiag"].map(String::from).to_vec(),
            methods: Vec::new(),
            precisions: vec![Precision::F64],
            quick: true,
            repeat: Repeat { warmup: 2, runs: 10, budget_ms: 500.0 },
            max_bytes: 8 << 30,
            cpu_flop_budget: 2e9,
            cudss: None,
            time_limit_s: None,
            kernels: crate::cuda::KernelFamily::Auto,
            f32_products: crate::cuda::F32Products::Fma,
            sizes: Sizes::default(),
            refine_tolerances: vec![crate::cuda::RefineOptions::default().tolerance],
        }
    }

    /// The full comparison.
    pub fn full() -> Self {
        Config {
            suites: ["horizon", "batch", "fp64-sweep", "kalman", "tridiag"].map(String::from).to_vec(),
            precisions: vec![Precision::F64, Precision::F32],
            quick: false,
            repeat: Repeat { warmup: 3, runs: 20, budget_ms: 1500.0 },
            max_bytes: 24 << 30,
            cpu_flop_budget: 5e9,
            ..Self::quick()
        }
    }

    /// Whether `method` is selected.
    pub fn wants(&self, method: &str) -> bool {
        self.methods.is_empty() || self.methods.iter().any(|m| method.starts_with(m.as_str()))
    }

    /// The block-tridiagonal configurations `(suite, S, N, n)` to run.
    ///
    /// ```
    /// use blocktri::bench::Config;
    /// let mut config = Config::full();
    /// config.suites = vec!["horizon".into()];
    /// config.sizes.batches = Some(vec![1024]);
    /// config.sizes.blocks = Some(vec![32, 64]);
    /// let configs = config.configurations();
    /// assert_eq!(configs.len(), 2 * 4); // n in {32, 64} x the horizon's four N
    /// assert!(configs.iter().all(|(_, s, _, n)| *s == 1024 && (*n == 32 || *n == 64)));
    /// // The selected-inversion sweep: issue #13's two sizes unless sizes are given.
    /// config.suites = vec!["selinv".into()];
    /// config.sizes = Default::default();
    /// let sel: Vec<_> = config.configurations().into_iter().map(|(_, s, nb, n)| (s, nb, n)).collect();
    /// assert_eq!(sel, vec![(1, 16384, 16), (1, 4096, 64)]);
    /// ```
    pub fn configurations(&self) -> Vec<(String, usize, usize, usize)> {
        let mut out = Vec::new();
        let q = self.quick;
        let z = &self.sizes;
        for suite in &self.suites {
            match suite.as_str() {
                "fp64-sweep" => {
                    // The second paper's Table 4.1: N n = 262144.
                    let ns = Sizes::pick(&z.blocks, if q { &[32, 64] } else { &[32, 64, 128, 256, 512, 1024] });
                    out.extend(ns.iter().map(|&n| (suite.clone(), 1, (262_144 / n).max(1), n)));
                }
                "horizon" => {
                    let ns = Sizes::pick(&z.blocks, if q { &[16, 32] } else { &[8, 16, 32, 64] });
                    let nbs = Sizes::pick(&z.nblocks, if q { &[64, 4096] } else { &[64, 512, 4096, 16384] });
                    let batches = Sizes::pick(&z.batches, if q { &[1] } else { &[1, 1024] });
                    for &s in batches {
                        for &n in ns {
                            out.extend(nbs.iter().map(|&nb| (suite.clone(), s, nb, n)));
                        }
                    }
                }
                "selinv" => {
                    // Issue #13's sizes: selected inversion against the factor of the same run.
                    let pairs: Vec<(usize, usize)> = match (&z.nblocks, &z.blocks) {
                        (None, None) if q => vec![(4096, 16)],
                        (None, None) => vec![(16384, 16), (4096, 64)],
                        _ => {
                            let nbs = Sizes::pick(&z.nblocks, &[16384, 4096]);
                            let ns = Sizes::pick(&z.blocks, &[16, 64]);
                            nbs.iter().flat_map(|&nb| ns.iter().map(move |&n| (nb, n))).collect()
                        }
                    };
                    for &s in Sizes::pick(&z.batches, &[1]) {
                        out.extend(pairs.iter().map(|&(nb, n)| (suite.clone(), s, nb, n)));
                    }
                }
                "batch" => {
                    let ss = Sizes::pick(&z.batches, if q { &[1, 256] } else { &[1, 4, 16, 64, 256, 1024, 4096] });
                    for &n in Sizes::pick(&z.blocks, &[16]) {
                        for &nb in Sizes::pick(&z.nblocks, &[64]) {
                            out.extend(ss.iter().map(|&s| (suite.clone(), s, nb, n)));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// Everything a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Device and measured peaks.
    pub peaks: peaks::Peaks,
    /// Every row, in run order.
    pub rows: Vec<Row>,
    /// Messages about peers that could not run.
    pub notes: Vec<String>,
    /// The command line that produced it.
    pub command: String,
    /// UTC date.
    pub date: String,
}

/// A problem generator of a configuration: copy `i` (different values per copy).
pub(crate) type Problem<'a, T> = &'a dyn Fn(usize) -> Result<(crate::BlockTridiag<T>, crate::BlockVec<T>)>;

/// Where measured rows go as soon as a method finishes.
pub(crate) type Emit<'a> = &'a mut dyn FnMut(Vec<Row>);

/// What [`run`] reports while it runs.
#[derive(Debug)]
pub enum Progress<'a> {
    /// The device and its measured peaks (zero without a GPU), before the first step.
    Device(&'a peaks::Peaks),
    /// Configuration `step` of `total` starts.
    Started {
        /// The configuration, e.g. `horizon f64 S=1 N=64 n=16`.
        what: &'a str,
        /// 1-based index.
        step: usize,
        /// Number of configurations.
        total: usize,
    },
    /// A method finished: its rows (also part of the final report).
    Rows(&'a [Row]),
}

/// Collects rows and forwards every event to the caller's callback.
struct Collector<F> {
    rows: Vec<Row>,
    progress: F,
}

impl<F: FnMut(Progress<'_>)> Collector<F> {
    fn emit(&mut self, rows: Vec<Row>) {
        if !rows.is_empty() {
            (self.progress)(Progress::Rows(&rows));
            self.rows.extend(rows);
        }
    }
}

/// Runs the configured sweeps; `progress` hears when each configuration starts and gets
/// each method's rows as soon as they are measured (so a run cut short still shows them).
///
/// ```no_run
/// use blocktri::bench::{Config, Progress, run};
/// let report = run(&Config::quick(), |p| {
///     if let Progress::Started { what, step, total } = p {
///         eprintln!("[{step}/{total}] {what}");
///     }
/// })?;
/// println!("{} rows", report.rows.len());
/// # Ok::<(), blocktri::Error>(())
/// ```
pub fn run(config: &Config, progress: impl FnMut(Progress<'_>)) -> Result<Report> {
    let gpu = crate::cuda::Gpu::shared();
    let mut notes = Vec::new();
    let peaks = match &gpu {
        Ok(g) => peaks::measure(g, &mut notes)?,
        Err(e) => {
            notes.push(format!("no GPU: {e}; only CPU methods run"));
            peaks::Peaks::default()
        }
    };
    let mut out = Collector { rows: Vec::new(), progress };
    (out.progress)(Progress::Device(&peaks));
    let configs = config.configurations();
    let kalman = config.suites.iter().any(|s| s == "kalman");
    let tri = config.suites.iter().any(|s| s == "tridiag");
    let arrowhead = config.suites.iter().any(|s| s == "arrow");
    let columns = Sizes::pick(&config.sizes.nrhs, &[1]).to_vec();
    let per_precision = configs.len() * columns.len() + usize::from(tri) + usize::from(arrowhead);
    let total = per_precision * config.precisions.len() + usize::from(kalman);
    let mut step = 0;
    let mut vendor_state = vendor::Peers::new(gpu.as_ref().ok(), config, &mut notes);
    let started = std::time::Instant::now();
    let out_of_time = |notes: &mut Vec<String>, what: &str| {
        let over = config.time_limit_s.is_some_and(|limit| started.elapsed().as_secs_f64() > limit);
        if over {
            notes.push(format!("time limit reached: {what} and later configurations not run"));
        }
        over
    };
    'sweeps: for &precision in &config.precisions {
        for ((suite, s, nb, n), k) in configs.iter().flat_map(|c| columns.iter().map(move |&k| (c, k))) {
            let what = if k == 1 {
                format!("{suite} {precision} S={s} N={nb} n={n}")
            } else {
                format!("{suite} {precision} S={s} N={nb} n={n} k={k}")
            };
            if out_of_time(&mut notes, &what) {
                break 'sweeps;
            }
            step += 1;
            (out.progress)(Progress::Started { what: &what, step, total });
            let cfg = (*s, *nb, *n, k);
            let (g, emit) = (gpu.as_ref().ok(), &mut |r| out.emit(r));
            match precision {
                Precision::F64 => bench_block_tridiag::<f64>(config, suite, cfg, g, &peaks, &mut vendor_state, emit)?,
                Precision::F32 => bench_block_tridiag::<f32>(config, suite, cfg, g, &peaks, &mut vendor_state, emit)?,
            }
        }
        if tri {
            let what = format!("tridiag {precision}");
            if out_of_time(&mut notes, &what) {
                break 'sweeps;
            }
            step += 1;
            (out.progress)(Progress::Started { what: &what, step, total });
            let (g, emit) = (gpu.as_ref().ok(), &mut |r| out.emit(r));
            match precision {
                Precision::F64 => tridiag::bench::<f64>(config, g, &peaks, emit)?,
                Precision::F32 => tridiag::bench::<f32>(config, g, &peaks, emit)?,
            }
        }
        if arrowhead {
            let what = format!("arrow {precision}");
            if out_of_time(&mut notes, &what) {
                break 'sweeps;
            }
            step += 1;
            (out.progress)(Progress::Started { what: &what, step, total });
            let emit = &mut |r| out.emit(r);
            match precision {
                Precision::F64 => arrow::bench::<f64>(config, gpu.is_ok(), &peaks, emit)?,
                Precision::F32 => arrow::bench::<f32>(config, gpu.is_ok(), &peaks, emit)?,
            }
        }
    }
    if kalman && !out_of_time(&mut notes, "kalman") {
        step += 1;
        (out.progress)(Progress::Started { what: "kalman", step, total });
        bench_kalman(config, gpu.as_ref().ok(), &peaks, &mut vendor_state, &mut |r| out.emit(r))?;
    }
    notes.extend(vendor_state.notes());
    Ok(Report { peaks, rows: out.rows, notes, command: std::env::args().collect::<Vec<_>>().join(" "), date: report::utc_date() })
}

/// All methods on one block-tridiagonal configuration.
fn bench_block_tridiag<T: vendor::VendorScalar>(
    config: &Config,
    suite: &str,
    cfg: (usize, usize, usize, usize),
    gpu: Option<&std::sync::Arc<crate::cuda::Gpu>>,
    peaks: &peaks::Peaks,
    vendor_state: &mut vendor::Peers,
    emit: Emit<'_>,
) -> Result<()> {
    let (s, nb, n, k) = cfg;
    let shape = crate::Shape::new(s, nb, n)?;
    let seed = (s * 1_000_003 + nb * 1009 + n) as u64;
    let problem = |i: usize| -> Result<(crate::BlockTridiag<T>, crate::BlockVec<T>)> {
        let a = crate::generate::random_spd::<T>(s, nb, n, seed + i as u64)?;
        let b = crate::generate::random_rhs::<T>(shape, k, seed + 7919 + i as u64)?;
        Ok((a, b))
    };
    bench_methods::<T>(config, suite, cfg, gpu, peaks, vendor_state, &problem, emit)
}

/// Every selected method (ours, the vendor peers, the CPU peers) on one problem.
#[allow(clippy::too_many_arguments)] // the context every method's bench takes, plus the sink
fn bench_methods<T: vendor::VendorScalar>(
    config: &Config,
    suite: &str,
    cfg: (usize, usize, usize, usize),
    gpu: Option<&std::sync::Arc<crate::cuda::Gpu>>,
    peaks: &peaks::Peaks,
    vendor_state: &mut vendor::Peers,
    problem: Problem<'_, T>,
    emit: Emit<'_>,
) -> Result<()> {
    if let Some(g) = gpu {
        if config.wants("blocktri-gpu") {
            emit(ours::bench::<T>(config, suite, cfg, g, peaks, problem)?);
        }
        // Mixed precision answers f64 problems; it is opt-in (named explicitly).
        if T::PRECISION == crate::scalar::Precision::F64 && config.methods.iter().any(|m| m == "blocktri-gpu-mixed") {
            let as_f64 = |i: usize| problem(i).map(|(a, b)| (a.cast::<f64>(), b.cast::<f64>()));
            for &tolerance in &config.refine_tolerances {
                emit(ours::bench_mixed(config, suite, cfg, g, peaks, tolerance, &as_f64)?);
            }
        }
        vendor_state.bench::<T>(config, suite, cfg, g, peaks, problem, emit)?;
    }
    cpu::bench::<T>(config, suite, cfg, problem, emit)
}

/// The Kalman-smoothing system (second paper, section 4.3), at the paper's size and at a
/// long horizon, on every method.
fn bench_kalman(
    config: &Config,
    gpu: Option<&std::sync::Arc<crate::cuda::Gpu>>,
    peaks: &peaks::Peaks,
    vendor_state: &mut vendor::Peers,
    emit: Emit<'_>,
) -> Result<()> {
    // A long horizon at a small latent size, then the second paper's experiment
    // (n = 256, m = 1024, N = 100; `examples/kalman.rs`).
    for (n, m, nb) in [(64, 256, 1000), (256, 1024, 100)] {
        let (a, b, _) = crate::generate::kalman_problem::<f64>(n, m, nb, 11)?;
        let problem = |_: usize| Ok((a.clone(), b.clone()));
        let cfg = (1, nb, n, 1);
        bench_methods::<f64>(config, "kalman", cfg, gpu, peaks, vendor_state, &problem, emit)?;
    }
    Ok(())
}
