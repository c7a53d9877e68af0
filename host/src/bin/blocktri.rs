//! `blocktri`: solve SPD block-tridiagonal systems, generate problems, invert tridiagonal
//! matrices, and benchmark against the peers.

use blocktri::arrow::{ArrowSolver, ArrowVec, BlockTridiagArrow};
use blocktri::bench::{self, report};
use blocktri::cuda::Gpu;
use blocktri::tridiag::{Method, Tridiagonal, inverse_error, invert};
use blocktri::{Backend, BlockTridiag, BlockVec, Error, Precision, Result, Scalar, Solver, condition, generate, io, residual};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "blocktri",
    version,
    about = "SPD block-tridiagonal solver (GPU nested-dissection Cholesky, CPU fallback) and tridiagonal inverse"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve A X = B from a .npz/.mtx file or a generated problem; prints residual and timings.
    Solve(SolveArgs),
    /// Write a random (or Kalman-smoothing) problem to .npz, or its matrix to .mtx.
    Generate(GenerateArgs),
    /// Invert diagonally dominant tridiagonal matrices (recursive Sherman-Morrison).
    Invert(InvertArgs),
    /// Selected inversion: the diagonal and sub-diagonal blocks of A^-1.
    Selinv(SelinvArgs),
    /// Compare this solver with cuSOLVER/cuBLAS, cuDSS and CPU solvers; tables, CSV, JSON, plots.
    Bench(BenchArgs),
    /// Show the GPU, the loaded kernels and the supported block sizes.
    Info(InfoArgs),
    /// Time every kernel launch of a factorization and solve (no graphs): where time goes.
    Profile(ProfileArgs),
}

#[derive(Args)]
struct SelinvArgs {
    /// Problem file: .npz (arrays diag, sub) or .mtx (needs --block-size).
    input: PathBuf,
    /// Block size n (for .mtx input).
    #[arg(long)]
    block_size: Option<usize>,
    /// Write the blocks of A^-1 here (.npz with arrays diag and sub, the input's layout;
    /// with an arrowhead also arrow and tip).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

/// Where and in which precision a command runs.
#[derive(Args)]
struct RunArgs {
    /// auto (GPU if present, else CPU), gpu, cpu (nested dissection on the CPU threads),
    /// cpu-sequential (the reference).
    #[arg(long, default_value = "auto")]
    backend: String,
    /// f64 or f32.
    #[arg(long, default_value = "f64")]
    precision: String,
}

#[derive(Args)]
struct InfoArgs {
    /// Also measure the host path: CPU copies, the link with pinned and pageable memory,
    /// the solvers' staged copies (MiB per copy given by --transfer-mib).
    #[arg(long)]
    transfers: bool,
    #[arg(long, default_value_t = 64)]
    transfer_mib: usize,
    /// Compile every GPU kernel now and say how long it took. Kernels are otherwise
    /// compiled on first use; the driver keeps them in its cache (CUDA_CACHE_PATH), so
    /// running this once (a container build step) spares later processes the compile.
    #[arg(long)]
    compile_all: bool,
}

#[derive(Args)]
struct SolveArgs {
    /// Problem file: .npz (arrays diag, sub, rhs) or .mtx (needs --block-size).
    input: Option<PathBuf>,
    /// Block size n (for .mtx input).
    #[arg(long)]
    block_size: Option<usize>,
    /// Generate the problem instead: "N,n" or "S,N,n" (batch of S systems).
    #[arg(long, value_name = "N,n")]
    generate: Option<String>,
    /// Right-hand sides (.npy), when the input has none.
    #[arg(long)]
    rhs: Option<PathBuf>,
    /// Columns of generated right-hand sides.
    #[arg(long, default_value_t = 1)]
    nrhs: usize,
    /// Write the solution here (.npy).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    /// Seed of generated problems.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also print log det A of every system (from the factor).
    #[arg(long)]
    logdet: bool,
    /// With --generate: add a dense arrowhead of this width (global unknowns coupled to
    /// every block; .npz inputs with arrays arrow and tip have one already).
    #[arg(long, default_value_t = 0)]
    arrow: usize,
}

#[derive(Args)]
struct GenerateArgs {
    /// Output file: .npz (matrix and right-hand sides) or .mtx (matrix of system 0).
    #[arg(long)]
    out: PathBuf,
    /// Number of diagonal blocks N.
    #[arg(long, default_value_t = 64)]
    nblocks: usize,
    /// Block size n.
    #[arg(long, default_value_t = 8)]
    block_size: usize,
    /// Systems in the batch.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// random (well conditioned), conditioned (--kappa), kalman (--obs m measurements).
    #[arg(long, default_value = "random")]
    kind: String,
    /// Condition number of the `conditioned` kind.
    #[arg(long, default_value_t = 1e6)]
    kappa: f64,
    /// Measurement dimension of the `kalman` kind.
    #[arg(long, default_value_t = 16)]
    obs: usize,
    /// Width of a dense arrowhead (`random` kind; .npz arrays arrow and tip).
    #[arg(long, default_value_t = 0)]
    arrow: usize,
    /// Right-hand-side columns.
    #[arg(long, default_value_t = 1)]
    nrhs: usize,
    /// f64 or f32.
    #[arg(long, default_value = "f64")]
    precision: String,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
struct InvertArgs {
    /// .npz with arrays a (n or S x n), b and c (n-1 or S x (n-1)).
    input: Option<PathBuf>,
    /// Generate a random diagonally dominant matrix of this size instead.
    #[arg(long)]
    generate: Option<usize>,
    /// Matrices in a generated batch.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Generate symmetric matrices (b = c).
    #[arg(long)]
    symmetric: bool,
    /// auto (GPU fused if a GPU is present, else threaded CPU), fused, stagewise, sequential, threaded, direct.
    #[arg(long, default_value = "auto")]
    method: String,
    /// f64 or f32.
    #[arg(long, default_value = "f64")]
    precision: String,
    /// Skip the diagonal-dominance check (for matrices known to be safely invertible).
    #[arg(long)]
    no_dominance_check: bool,
    /// Write the inverses here (.npy, shape (n, n) or (S, n, n), C order).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
struct ProfileArgs {
    /// Problem size "N,n" or "S,N,n".
    #[arg(long, default_value = "4096,16")]
    generate: String,
    /// f64 or f32.
    #[arg(long, default_value = "f64")]
    precision: String,
    /// Threads per factor block (default: chosen from n).
    #[arg(long)]
    threads: Option<u32>,
    /// Repetitions (the last one is printed).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Kernel family: auto, generic, rows, rows-levels, panel, blocked, tiled, chain.
    #[arg(long, default_value = "auto")]
    kernels: String,
    /// Tile products of an f32 profile: fma, auto (3xTF32 in the tiled engine), tf32, tf32x3.
    #[arg(long, default_value = "fma")]
    f32_products: String,
    /// Time the launches of one factor + solve call (the forward substitution interlaced
    /// with the factor where the kernels do that) instead of a factor, then a solve.
    #[arg(long)]
    factor_solve: bool,
}

#[derive(Args)]
struct BenchArgs {
    /// The full sweeps (default: the quick comparison, under a minute on an H100).
    #[arg(long)]
    full: bool,
    /// Sweeps to run (horizon, batch, fp64-sweep, kalman, tridiag, selinv, arrow), comma-separated.
    #[arg(long, value_delimiter = ',')]
    suites: Vec<String>,
    /// Methods to run (blocktri-gpu, vendor-schur, vendor-seq, vendor-dense (selinv suite), cudss, cpu-sequential, cpu-threaded, faer-sparse, gpu-fused, gpu-stagewise), comma-separated.
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Precisions, comma-separated (f64, f32).
    #[arg(long, value_delimiter = ',')]
    precision: Vec<String>,
    /// Timed runs per measurement.
    #[arg(long)]
    runs: Option<usize>,
    /// Directory for rows.csv, report.json, report.md and the SVG plots.
    #[arg(long, default_value = "bench-out")]
    out_dir: PathBuf,
    /// Path of libcudss.so.0 (default: $BLOCKTRI_CUDSS, then the library search path).
    #[arg(long)]
    cudss: Option<String>,
    /// Start no new configuration after this many minutes (the report says what was left out).
    #[arg(long)]
    max_minutes: Option<f64>,
    /// Largest device memory one configuration may use, in GB (default: 8 GiB quick, 24 GiB full;
    /// a configuration above it is reported as skipped). Raise it on a larger device to
    /// run the peers at the sizes they would otherwise skip.
    #[arg(long, value_parser = parse_gigabytes)]
    max_gb: Option<usize>,
    /// Level-kernel family of blocktri-gpu (auto, generic, rows, rows-levels, panel, blocked, tiled, chain).
    #[arg(long, default_value = "auto")]
    kernels: String,
    /// Tile products of the f32 rows of blocktri-gpu (and of the mixed rows' f32 factor):
    /// fma, auto (3xTF32 where the tiled engine runs, FMA elsewhere), tf32, tf32x3 (the
    /// TF32 choices run the tiled engine at every block size).
    #[arg(long, default_value = "fma")]
    f32_products: String,
    /// Systems per batch S, comma-separated: replaces the horizon and batch sweeps' lists.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    batches: Vec<u32>,
    /// Numbers of blocks N: replaces the horizon and batch sweeps' lists.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    nblocks: Vec<u32>,
    /// Block sizes n: replaces the horizon, batch and FP64 sweeps' lists (the FP64 sweep keeps N n = 262144).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    block_sizes: Vec<u32>,
    /// Orders of the tridiagonal inverse: replaces the tridiag sweep's list.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    tridiag_sizes: Vec<u32>,
    /// Right-hand-side columns k of the block-tridiagonal sweeps, comma-separated (default 1).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    nrhs: Vec<u32>,
    /// Stopping tolerances of the blocktri-gpu-mixed rows (max |b - A x| / max |b|),
    /// comma-separated, one set of rows each (default: the library's, 1e-13).
    #[arg(long, value_delimiter = ',', value_parser = parse_tolerance)]
    refine_tolerances: Vec<f64>,
}

/// `--max-gb`: a positive, finite number of gigabytes (10^9 bytes), as bytes.
fn parse_gigabytes(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<f64>() {
        Ok(gb) if gb.is_finite() && gb > 0.0 && gb < 1e9 => Ok((gb * 1e9) as usize),
        _ => Err(format!("expected a positive number of gigabytes, got `{s}`")),
    }
}

fn parse_precision(s: &str) -> Result<Precision> {
    match s {
        "f64" => Ok(Precision::F64),
        "f32" => Ok(Precision::F32),
        _ => Err(Error::Shape(format!("unknown precision {s:?} (f64 or f32)"))),
    }
}

fn parse_family(s: &str) -> Result<blocktri::cuda::KernelFamily> {
    use blocktri::cuda::KernelFamily;
    match s {
        "auto" => Ok(KernelFamily::Auto),
        "generic" => Ok(KernelFamily::Generic),
        "rows" => Ok(KernelFamily::Rows),
        "rows-levels" => Ok(KernelFamily::RowsLevels),
        "panel" => Ok(KernelFamily::Panel),
        "blocked" => Ok(KernelFamily::Blocked),
        "tiled" => Ok(KernelFamily::Tiled),
        "chain" => Ok(KernelFamily::Chain),
        other => {
            Err(Error::Shape(format!("unknown kernel family {other:?} (auto, generic, rows, rows-levels, panel, blocked, tiled, chain)")))
        }
    }
}

fn parse_products(s: &str) -> Result<blocktri::cuda::F32Products> {
    use blocktri::cuda::F32Products;
    match s {
        "auto" => Ok(F32Products::Auto),
        "fma" => Ok(F32Products::Fma),
        "tf32" => Ok(F32Products::Tf32),
        "tf32x3" => Ok(F32Products::Tf32x3),
        other => Err(Error::Shape(format!("unknown f32 products {other:?} (auto, fma, tf32, tf32x3)"))),
    }
}

/// A refinement tolerance: a finite number in (0, 1).
fn parse_tolerance(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t > 0.0 && t < 1.0 => Ok(t),
        Ok(t) => Err(format!("a refinement tolerance is between 0 and 1 (exclusive), not {t}")),
        Err(e) => Err(format!("{s:?} is not a number: {e}")),
    }
}

fn parse_dims(s: &str) -> Result<(usize, usize, usize)> {
    let v: Vec<usize> = s
        .split(',')
        .map(|p| p.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::Shape(format!("--generate expects N,n or S,N,n, got {s:?}")))?;
    match v.as_slice() {
        [nb, n] => Ok((1, *nb, *n)),
        [s, nb, n] => Ok((*s, *nb, *n)),
        _ => Err(Error::Shape(format!("--generate expects N,n or S,N,n, got {s:?}"))),
    }
}

/// Prints `log det A` per system (the first eight of a larger batch).
fn print_log_determinants(logdet: &[f64]) {
    const SHOWN: usize = 8;
    let values: Vec<String> = logdet.iter().take(SHOWN).map(|v| format!("{v:.12e}")).collect();
    let more = if logdet.len() > SHOWN { format!(", ... ({} systems)", logdet.len()) } else { String::new() };
    println!("log det A = {}{more}", values.join(", "));
}

/// Prints the worst condition estimate and, when it allows a relative error above 1e-6
/// in `precision`, a warning on stderr naming the system.
fn warn_if_ill_conditioned(kappa: &[f64], precision: Precision) {
    let Some((system, &worst)) = kappa.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) else { return };
    println!("condition number estimate (1-norm): {worst:.2e} (system {system}, the largest of {})", kappa.len());
    let error = condition::expected_relative_error(worst, precision);
    if error > 1e-6 {
        let advice = match precision {
            Precision::F32 => "; solve in f64 (--precision f64)",
            Precision::F64 => "; rescale or regularize the problem",
        };
        eprintln!(
            "warning: system {system} has an estimated condition number of {worst:.1e}: in {precision} expect relative errors in the solution up to {error:.1e}{advice}"
        );
    }
}

fn solve<T: Scalar>(args: &SolveArgs) -> Result<()> {
    if let Some(out) = &args.out {
        io::check_writable(out)?;
    }
    let backend: Backend = args.run.backend.parse()?;
    let arrow_input = match &args.input {
        Some(p) if p.extension().is_some_and(|e| e == "npz") => io::npz_has_arrow(p)?,
        _ => false,
    };
    if arrow_input || (args.arrow > 0 && args.generate.is_some()) {
        return solve_arrow::<T>(args, backend);
    }
    let (a, b): (BlockTridiag<T>, BlockVec<T>) = match (&args.input, &args.generate) {
        (Some(_), Some(_)) => return Err(Error::Shape("give an input file or --generate, not both".into())),
        (None, None) => return Err(Error::Shape("give an input file (.npz or .mtx) or --generate N,n".into())),
        (None, Some(g)) => {
            let (s, nb, n) = parse_dims(g)?;
            let a = generate::random_spd::<T>(s, nb, n, args.seed)?;
            let b = generate::random_rhs::<T>(a.shape(), args.nrhs, args.seed + 1)?;
            (a, b)
        }
        (Some(path), None) => {
            let (a, b) = io::read_problem::<T>(path, args.block_size)?;
            let b = match (b, &args.rhs) {
                (_, Some(r)) => io::read_rhs_npy::<T>(r, a.shape())?,
                (Some(b), None) => b,
                (None, None) => {
                    // No right-hand side given: B = A * ones, so the exact solution is ones.
                    eprintln!("no right-hand side in the input: solving for B = A * ones");
                    let ones = BlockVec::from_vec(a.shape(), 1, vec![T::one(); a.shape().batch * a.shape().dim()])?;
                    a.matvec(&ones)?
                }
            };
            (a, b)
        }
    };
    let shape = a.shape();
    let mut solver = Solver::<T>::new(backend)?;
    print_backend(solver.backend_name(), solver.fallback_reason())?;
    println!("problem: {shape}, {} right-hand side(s), {}", b.ncols(), T::PRECISION);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    // One call from host memory to host memory (a batch larger than the device runs in
    // chunks here), then the steady state of a refactor/solve loop where the factor stays.
    let t = Instant::now();
    let x = solver.factor_solve(&a, &b)?;
    let first = t.elapsed();
    let t = Instant::now();
    let _ = solver.factor_solve(&a, &b)?;
    let again = t.elapsed();
    println!("factor+solve: {:.3} ms (first call, includes setup), {:.3} ms (again)", ms(first), ms(again));
    if solver.shape().is_some() {
        let t = Instant::now();
        solver.refactor(&a)?;
        let refactor = t.elapsed();
        let t = Instant::now();
        let _ = solver.solve(&b)?;
        let resolve = t.elapsed();
        println!("refactor: {:.3} ms, solve: {:.3} ms (buffers and graphs reused)", ms(refactor), ms(resolve));
    } else if solver.backend_name() == "gpu" {
        println!(
            "(the problem is larger than the device memory: it ran in chunks of systems or segments of one chain; no factorization stays on the device)"
        );
    }
    println!("(wall-clock times from host memory, transfers included; `blocktri bench` times device work)");
    let acc = residual::accuracy(&a, &x, &b)?;
    println!("relative residual ||AX - B|| / ||B|| = {:.3e}, backward error = {:.3e}", acc.relative_residual, acc.backward_error);
    if solver.shape().is_some() {
        if args.logdet {
            print_log_determinants(&solver.log_determinant()?);
        }
        warn_if_ill_conditioned(&solver.condition_estimate(&a)?, T::PRECISION);
    } else if args.logdet {
        println!("log det A: not available (the batch ran in chunks; no factorization stays on the device)");
    }
    if let Some(out) = &args.out {
        io::write_npy(out, &x)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// `solve` of a problem with an arrowhead (`blocktri::arrow`).
fn solve_arrow<T: Scalar>(args: &SolveArgs, backend: Backend) -> Result<()> {
    let (m, b) = match (&args.input, &args.generate) {
        (Some(path), None) => {
            let (m, b) = io::read_arrow_npz::<T>(path)?;
            let b = match (b, &args.rhs) {
                (Some(b), None) => b,
                (_, Some(_)) => return Err(Error::Shape("--rhs is not supported with an arrowhead: put rhs in the .npz".into())),
                (None, None) => {
                    eprintln!("no right-hand side in the input: solving for B = A * ones");
                    ones_rhs(&m)?
                }
            };
            (m, b)
        }
        (None, Some(g)) => {
            let (s, nb, n) = parse_dims(g)?;
            let m = generate::random_spd_arrow::<T>(s, nb, n, args.arrow, args.seed)?;
            let b = m.matvec(&ones_rhs(&m)?)?;
            (m, b)
        }
        _ => return Err(Error::Shape("give an input file or --generate, not both".into())),
    };
    let mut solver = ArrowSolver::<T>::new(backend)?;
    print_backend(solver.backend_name(), solver.fallback_reason())?;
    println!("problem: {} with an arrowhead of width {}, {} right-hand side(s), {}", m.shape(), m.width(), b.chain().ncols(), T::PRECISION);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let t = Instant::now();
    solver.factor(&m)?;
    let x = solver.solve(&b)?;
    let first = t.elapsed();
    let t = Instant::now();
    solver.factor(&m)?;
    let _ = solver.solve(&b)?;
    println!("factor+solve: {:.3} ms (first call, includes setup), {:.3} ms (again)", ms(first), ms(t.elapsed()));
    println!("(wall-clock times from host memory, transfers included)");
    let r = m.matvec(&x)?;
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for s in 0..m.shape().batch {
        let bd = b.to_dense(s);
        num += (r.to_dense(s) - &bd).norm_squared();
        den += bd.norm_squared();
    }
    println!("relative residual ||AX - B|| / ||B|| = {:.3e}", (num / den.max(f64::MIN_POSITIVE)).sqrt());
    if args.logdet {
        print_log_determinants(&solver.log_determinant()?);
    }
    if let Some(out) = &args.out {
        io::write_arrow_npz(out, &m, Some(&x))?;
        println!("wrote {} (the problem with the solution as rhs: N n + a rows, the tip's last)", out.display());
    }
    Ok(())
}

/// The backend line of `solve`: the GPU's name, or why the CPU runs instead.
fn print_backend(name: &str, fallback: Option<&str>) -> Result<()> {
    match fallback {
        Some(why) => println!("backend: {name} (no GPU found: {why}; running on the CPU backend)"),
        None if name == "gpu" => {
            let g = Gpu::shared()?;
            println!("backend: gpu ({}, PTX {})", g.info().name, g.info().ptx_arch);
        }
        None => println!("backend: {name}"),
    }
    Ok(())
}

/// The all-ones vector of an arrowhead problem's shape.
fn ones_rhs<T: Scalar>(m: &BlockTridiagArrow<T>) -> Result<ArrowVec<T>> {
    let sh = m.shape();
    let chain = BlockVec::from_vec(sh, 1, vec![T::one(); sh.batch * sh.dim()])?;
    ArrowVec::new(chain, m.width(), vec![T::one(); sh.batch * m.width()])
}

fn generate_cmd<T: Scalar>(args: &GenerateArgs) -> Result<()> {
    io::check_writable(&args.out)?;
    if args.arrow > 0 {
        if args.kind != "random" || !args.out.extension().is_some_and(|e| e == "npz") {
            return Err(Error::Shape("--arrow works with --kind random and an .npz output".into()));
        }
        let m = generate::random_spd_arrow::<T>(args.batch, args.nblocks, args.block_size, args.arrow, args.seed)?;
        let chain = generate::random_rhs(m.shape(), args.nrhs, args.seed + 1)?;
        let tip = generate::random_rhs::<T>(blocktri::Shape::new(args.batch, 1, args.arrow)?, args.nrhs, args.seed + 2)?.into_vec();
        io::write_arrow_npz(&args.out, &m, Some(&ArrowVec::new(chain, args.arrow, tip)?))?;
        println!(
            "wrote {} ({} with an arrowhead of width {}, {} right-hand side(s))",
            args.out.display(),
            m.shape(),
            args.arrow,
            args.nrhs
        );
        return Ok(());
    }
    let (a, b) = match args.kind.as_str() {
        "random" => {
            let a = generate::random_spd::<T>(args.batch, args.nblocks, args.block_size, args.seed)?;
            let b = generate::random_rhs(a.shape(), args.nrhs, args.seed + 1)?;
            (a, b)
        }
        "conditioned" => {
            let a = generate::random_spd_conditioned::<T>(args.batch, args.nblocks, args.block_size, args.kappa, args.seed)?;
            let b = generate::random_rhs(a.shape(), args.nrhs, args.seed + 1)?;
            (a, b)
        }
        "kalman" => {
            let (a, b, _) = generate::kalman_problem::<T>(args.block_size, args.obs, args.nblocks, args.seed)?;
            (a, b)
        }
        other => return Err(Error::Shape(format!("unknown --kind {other:?} (random, conditioned, kalman)"))),
    };
    match args.out.extension().and_then(|e| e.to_str()) {
        Some("npz") => io::write_npz(&args.out, &a, Some(&b))?,
        Some("mtx") => io::write_mtx(&args.out, &a, 0)?,
        _ => return Err(Error::Shape("--out must end in .npz or .mtx".into())),
    }
    println!("wrote {} ({}, {} right-hand side(s))", args.out.display(), a.shape(), b.ncols());
    Ok(())
}

fn invert_cmd<T: Scalar>(args: &InvertArgs) -> Result<()> {
    if let Some(out) = &args.out {
        io::check_writable(out)?;
    }
    let t: Tridiagonal<T> = match (&args.input, args.generate) {
        (None, Some(n)) => Tridiagonal::random_dominant(n, args.batch, args.symmetric, args.seed)?,
        (Some(path), None) => io::read_tridiagonal(path)?,
        _ => return Err(Error::Shape("give an input .npz (arrays a, b, c) or --generate n".into())),
    };
    let method = match args.method.as_str() {
        "auto" if Gpu::is_available() => Method::GpuFused,
        "auto" => {
            println!("no GPU found: using the threaded CPU recursion");
            Method::Threaded
        }
        m => m.parse()?,
    };
    let start = Instant::now();
    let x = invert(&t, method, !args.no_dominance_check)?;
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    println!(
        "inverted {} matrix(es) of size {} with {method:?} in {elapsed:.2} ms (wall clock, transfers included)",
        t.batch_size(),
        t.n()
    );
    if t.n() <= 1 << 14 {
        println!("||A X - I|| / (||A|| ||X||) = {:.3e}", inverse_error(&t, &x));
    }
    if let Some(out) = &args.out {
        let n = t.n() as u64;
        let dims: Vec<u64> = if t.batch_size() > 1 { vec![t.batch_size() as u64, n, n] } else { vec![n, n] };
        // Column-major inverses written as C-order (n, n) arrays of the transpose's layout:
        // transpose so that out[i][j] = X[i][j].
        let mut vals = Vec::with_capacity(x.as_slice().len());
        for k in 0..t.batch_size() {
            let m = x.matrix(k);
            for i in 0..t.n() {
                for j in 0..t.n() {
                    vals.push(m[j * t.n() + i]);
                }
            }
        }
        io::write_npy_raw(out, &dims, vals)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

fn bench_cmd(args: &BenchArgs) -> Result<()> {
    report::prepare_dir(&args.out_dir)?;
    let mut config = if args.full { bench::Config::full() } else { bench::Config::quick() };
    if !args.suites.is_empty() {
        config.suites = args.suites.clone();
    }
    config.methods = args.methods.clone();
    if !args.precision.is_empty() {
        config.precisions = args.precision.iter().map(|p| parse_precision(p)).collect::<Result<_>>()?;
    }
    if let Some(r) = args.runs {
        config.repeat.runs = r.max(1);
    }
    config.cudss = args.cudss.clone();
    config.kernels = parse_family(&args.kernels)?;
    config.f32_products = parse_products(&args.f32_products)?;
    config.time_limit_s = args.max_minutes.map(|m| m * 60.0);
    if let Some(bytes) = args.max_gb {
        config.max_bytes = bytes;
    }
    let list = |v: &[u32]| (!v.is_empty()).then(|| v.iter().map(|&x| x as usize).collect());
    config.sizes = bench::Sizes {
        batches: list(&args.batches),
        nblocks: list(&args.nblocks),
        blocks: list(&args.block_sizes),
        tridiag: list(&args.tridiag_sizes),
        nrhs: list(&args.nrhs),
    };
    if !args.refine_tolerances.is_empty() {
        config.refine_tolerances = args.refine_tolerances.clone();
    }
    let bar = indicatif::ProgressBar::new(1);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    // Rows are printed as they are measured (a run cut short still shows them); the
    // residual flags need every method of a configuration, so they follow at the end.
    let mut report = bench::run(&config, |event| match event {
        bench::Progress::Device(peaks) => bar.suspend(|| print!("{}", report::table_header(peaks))),
        bench::Progress::Started { what, step, total } => {
            bar.set_length(total as u64);
            bar.set_position(step as u64);
            bar.set_message(what.to_string());
            // Without a terminal (a log file) the bar is hidden: say where the run is.
            if bar.is_hidden() {
                eprintln!("[{:7.1} s] {step}/{total} {what}", started.elapsed().as_secs_f64());
            }
        }
        bench::Progress::Rows(rows) => {
            bar.suspend(|| rows.iter().for_each(|r| print!("{}", report::table_row(r))));
            if let (true, Some(r)) = (bar.is_hidden(), rows.first()) {
                eprintln!("[{:7.1} s] {} done", started.elapsed().as_secs_f64(), r.method);
            }
        }
    })?;
    bar.finish_and_clear();
    report::flag_residuals(&mut report.rows);
    let flagged: Vec<_> = report.rows.iter().filter(|r| r.note.contains("FLAGGED")).collect();
    if !flagged.is_empty() {
        println!("residuals more than 100x off the best of their configuration:");
        flagged.iter().for_each(|r| print!("{}", report::table_row(r)));
    }
    for n in &report.notes {
        println!("note: {n}");
    }
    for f in report::write_all(&report, &args.out_dir)? {
        println!("wrote {f}");
    }
    Ok(())
}

fn info(args: &InfoArgs) -> Result<()> {
    println!("blocktri {} — kernels: {}", env!("CARGO_PKG_VERSION"), blocktri::ptx::KERNELS.len());
    let archs: Vec<&str> = blocktri::ptx::PTX.iter().map(|p| p.0).collect();
    println!("embedded PTX: {}", archs.join(", "));
    let opened = Instant::now();
    let g = Gpu::shared()?;
    let opened = opened.elapsed();
    let i = g.info();
    println!(
        "GPU {}: {} (compute {}.{}, {} SMs, {:.1} GB, L2 {} MB, {} KB shared/block), PTX {} loaded in {:.2} s{}",
        i.ordinal,
        i.name,
        i.compute_capability.0,
        i.compute_capability.1,
        i.multiprocessors,
        i.total_memory as f64 / 1e9,
        i.l2_bytes >> 20,
        i.max_shared_per_block / 1024,
        i.ptx_arch,
        opened.as_secs_f64(),
        if g.module().dependent_launch() { ", dependent launches" } else { "" }
    );
    if args.compile_all {
        let start = Instant::now();
        let count = g.module().load_all()?;
        println!("compiled {count} kernels in {:.2} s", start.elapsed().as_secs_f64());
    }
    let s64 = blocktri::cuda::GpuCholesky::<f64>::with_gpu(g.clone(), Default::default())?;
    let s32 = blocktri::cuda::GpuCholesky::<f32>::with_gpu(g, Default::default())?;
    println!("largest block size on the GPU: n <= {} (f64), n <= {} (f32)", s64.max_block_size(), s32.max_block_size());
    if args.transfers {
        for mib in [args.transfer_mib, 2] {
            println!("host path, {mib} MiB per copy:");
            for (what, gbs) in blocktri::cuda::measure_transfers(s64.gpu(), mib << 20)? {
                println!("  {what:<42} {gbs:>7.1} GB/s");
            }
        }
    }
    Ok(())
}

fn profile<T: Scalar>(args: &ProfileArgs) -> Result<()> {
    let (s, nb, n) = parse_dims(&args.generate)?;
    let a = generate::random_spd::<T>(s, nb, n, 1)?;
    let b = generate::random_rhs::<T>(a.shape(), 1, 2)?;
    let kernels = parse_family(&args.kernels)?;
    let f32_products = if T::BYTES == 4 { parse_products(&args.f32_products)? } else { blocktri::cuda::F32Products::Fma };
    let opts = blocktri::cuda::GpuOptions { graphs: false, factor_threads: args.threads, kernels, f32_products, ..Default::default() };
    let mut g = blocktri::cuda::GpuCholesky::<T>::with_gpu(Gpu::shared()?, opts)?;
    g.upload(&a)?;
    g.upload_rhs(&b)?;
    let mut rows = Vec::new();
    for _ in 0..args.repeat.max(1) {
        g.upload_rhs(&b)?;
        rows = if args.factor_solve { g.profile_factor_solve()? } else { g.profile()? };
    }
    println!("{:<20} {:>5} {:>7} {:>7} {:>7} {:>5} {:>10}", "kernel", "level", "grid", "threads", "smem", "regs", "us");
    let mut total = 0.0;
    for (k, lv, grid, th, smem, regs, us) in &rows {
        total += us;
        println!("{k:<20} {lv:>5} {grid:>7} {th:>7} {smem:>7} {regs:>5} {us:>10.2}");
    }
    println!("sum of kernel times: {total:.1} us ({} launches)", rows.len());
    Ok(())
}

fn selinv_cmd<T: Scalar>(args: &SelinvArgs) -> Result<()> {
    if let Some(out) = &args.out {
        io::check_writable(out)?;
    }
    if args.input.extension().is_some_and(|e| e == "npz") && io::npz_has_arrow(&args.input)? {
        return selinv_arrow::<T>(args);
    }
    let (a, _) = io::read_problem::<T>(&args.input, args.block_size)?;
    let mut solver = Solver::<T>::new(args.run.backend.parse()?)?;
    if let Some(why) = solver.fallback_reason() {
        println!("backend: {} (no GPU found: {why}; running on the CPU backend)", solver.backend_name());
    }
    let t = Instant::now();
    solver.factor(&a)?;
    let sigma = solver.selected_inverse()?;
    println!("problem: {}, {}", a.shape(), T::PRECISION);
    println!("factor + selected inversion ({}): {:.3} ms (from host memory)", solver.backend_name(), t.elapsed().as_secs_f64() * 1e3);
    if let Some(out) = &args.out {
        io::write_npz(out, &sigma, None)?;
        println!("wrote {} (diag: blocks (A^-1)_ii, sub: blocks (A^-1)_(i+1,i))", out.display());
    }
    Ok(())
}

/// `selinv` of a problem with an arrowhead: the chain's blocks, the border and the tip of
/// `A^-1`.
fn selinv_arrow<T: Scalar>(args: &SelinvArgs) -> Result<()> {
    let (m, _) = io::read_arrow_npz::<T>(&args.input)?;
    let mut solver = ArrowSolver::<T>::new(args.run.backend.parse()?)?;
    let t = Instant::now();
    solver.factor(&m)?;
    let inv = solver.selected_inverse()?;
    println!("problem: {} with an arrowhead of width {}, {}", m.shape(), m.width(), T::PRECISION);
    println!("factor + selected inversion ({}): {:.3} ms (from host memory)", solver.backend_name(), t.elapsed().as_secs_f64() * 1e3);
    if let Some(out) = &args.out {
        let sigma = BlockTridiagArrow::new(inv.chain, m.width(), inv.border, inv.tip)?;
        io::write_arrow_npz(out, &sigma, None)?;
        println!(
            "wrote {} (diag, sub: blocks of A^-1 on and below the diagonal; arrow: (A^-1)[tip, i]; tip: (A^-1)[tip, tip])",
            out.display()
        );
    }
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Solve(a) => match parse_precision(&a.run.precision)? {
            Precision::F64 => solve::<f64>(&a),
            Precision::F32 => solve::<f32>(&a),
        },
        Command::Generate(a) => match parse_precision(&a.precision)? {
            Precision::F64 => generate_cmd::<f64>(&a),
            Precision::F32 => generate_cmd::<f32>(&a),
        },
        Command::Invert(a) => match parse_precision(&a.precision)? {
            Precision::F64 => invert_cmd::<f64>(&a),
            Precision::F32 => invert_cmd::<f32>(&a),
        },
        Command::Selinv(a) => match parse_precision(&a.run.precision)? {
            Precision::F64 => selinv_cmd::<f64>(&a),
            Precision::F32 => selinv_cmd::<f32>(&a),
        },
        Command::Bench(a) => bench_cmd(&a),
        Command::Info(a) => info(&a),
        Command::Profile(a) => match parse_precision(&a.precision)? {
            Precision::F64 => profile::<f64>(&a),
            Precision::F32 => profile::<f32>(&a),
        },
    }
}

fn main() {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("internal error: {msg} (at {}); please report it", info.location().map(|l| l.to_string()).unwrap_or_default());
    }));
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
