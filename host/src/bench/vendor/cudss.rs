//! NVIDIA cuDSS (sparse direct solver), loaded at run time with `libloading`: the same
//! matrix in CSR (lower triangle, `CUDSS_MTYPE_SPD`); a batch is one block-diagonal
//! matrix. Analysis (reordering + symbolic factorization, host-heavy) is timed with the
//! wall clock; factorization and solve with CUDA events.

use super::super::peaks::Peaks;
use super::super::timing::{time_cpu, time_gpu};
use super::super::{Config, Row};
use super::{Problem, VendorScalar};
use crate::cuda::{DeviceBuffer, Gpu};
use crate::error::{Error, Result};
use crate::matrix::Shape;
use crate::residual::accuracy;
use std::ffi::c_void;
use std::sync::Arc;

type H = *mut c_void;
const PHASE_ANALYSIS: i32 = 3;
const PHASE_FACTORIZATION: i32 = 4;
const PHASE_SOLVE: i32 = 0x3f0;
const MTYPE_SPD: i32 = 3;
const MVIEW_LOWER: i32 = 1;
const BASE_ZERO: i32 = 0;
const LAYOUT_COL_MAJOR: i32 = 0;
const R_32I: i32 = 10;

type Create = unsafe extern "C" fn(*mut H) -> i32;
type Destroy = unsafe extern "C" fn(H) -> i32;
type SetStream = unsafe extern "C" fn(H, *mut c_void) -> i32;
type DataCreate = unsafe extern "C" fn(H, *mut H) -> i32;
type DataDestroy = unsafe extern "C" fn(H, H) -> i32;
type CreateCsr = unsafe extern "C" fn(
    *mut H,
    i64,
    i64,
    i64,
    *const c_void,
    *const c_void,
    *const c_void,
    *const c_void,
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
) -> i32;
type CreateDn = unsafe extern "C" fn(*mut H, i64, i64, i64, *const c_void, i32, i32) -> i32;
type Execute = unsafe extern "C" fn(H, i32, H, H, H, H, H) -> i32;

/// The loaded `libcudss.so.0`.
pub struct Library {
    lib: libloading::Library,
    path: String,
}

impl Library {
    /// Loads cuDSS from `path`, `$BLOCKTRI_CUDSS`, or the library search path.
    pub fn load(path: Option<&str>) -> std::result::Result<Self, String> {
        let env = std::env::var("BLOCKTRI_CUDSS").ok();
        let candidates: Vec<String> =
            path.map(String::from).into_iter().chain(env).chain(["libcudss.so.0".to_string(), "libcudss.so".to_string()]).collect();
        let mut errors = Vec::new();
        for c in &candidates {
            // SAFETY: loading cuDSS runs its initializers, which have no preconditions.
            match unsafe { libloading::Library::new(c) } {
                Ok(lib) => return Ok(Library { lib, path: c.clone() }),
                Err(e) => errors.push(format!("{c}: {e}")),
            }
        }
        Err(errors.join("; "))
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn sym<F: Copy>(&self, name: &[u8]) -> Result<F> {
        // SAFETY: the signature `F` matches cudss.h for every name used in this module.
        unsafe { self.lib.get::<F>(name).map(|s| *s) }
            .map_err(|e| Error::Cuda(format!("cuDSS symbol {}: {e}", String::from_utf8_lossy(name))))
    }
}

fn ok(what: &str, status: i32) -> Result<()> {
    if status == 0 { Ok(()) } else { Err(Error::Cuda(format!("{what} returned cuDSS status {status}"))) }
}

/// One cuDSS solver instance for a problem.
struct Solver<T> {
    handle: H,
    config: H,
    data: H,
    a: H,
    x: H,
    b: H,
    destroy: (Destroy, Destroy, DataDestroy, Destroy),
    execute: Execute,
    _bufs: (DeviceBuffer<i32>, DeviceBuffer<i32>, DeviceBuffer<T>),
    xb: DeviceBuffer<T>,
    bb: DeviceBuffer<T>,
}

impl<T> Drop for Solver<T> {
    fn drop(&mut self) {
        let (mat_destroy, cfg_destroy, data_destroy, destroy) = self.destroy;
        // SAFETY: handles created in `Solver::new`, destroyed once, in reverse order.
        unsafe {
            for m in [self.a, self.x, self.b] {
                mat_destroy(m);
            }
            data_destroy(self.handle, self.data);
            cfg_destroy(self.config);
            destroy(self.handle);
        }
    }
}

impl<T: VendorScalar> Solver<T> {
    fn new(lib: &Library, stream: &Arc<cudarc::driver::CudaStream>, a: &crate::BlockTridiag<T>, b: &crate::BlockVec<T>) -> Result<Self> {
        let shape = a.shape();
        let d = shape.dim();
        let total = d * shape.batch;
        // One block-diagonal CSR (lower triangle) for the whole batch.
        let (mut offsets, mut cols, mut vals) = (vec![0i32], Vec::new(), Vec::new());
        for s in 0..shape.batch {
            let csr = a.to_csr(s, true);
            for r in 0..d {
                let row = csr.row(r);
                cols.extend(row.col_indices().iter().map(|&c| (c + s * d) as i32));
                vals.extend_from_slice(row.values());
                offsets.push(cols.len() as i32);
            }
        }
        let k = b.ncols();
        // Right-hand sides as one (S d) x k column-major matrix.
        let mut rhs = vec![T::zero(); total * k];
        for s in 0..shape.batch {
            for c in 0..k {
                for r in 0..d {
                    rhs[c * total + s * d + r] = b.get(s, r, c);
                }
            }
        }
        let ob = DeviceBuffer::from_host(stream, &offsets)?;
        let cb = DeviceBuffer::from_host(stream, &cols)?;
        let vb = DeviceBuffer::from_host(stream, &vals)?;
        let xb = DeviceBuffer::<T>::poisoned(stream, total * k)?;
        let bb = DeviceBuffer::from_host(stream, &rhs)?;
        stream.synchronize()?;
        let create: Create = lib.sym(b"cudssCreate\0")?;
        let set_stream: SetStream = lib.sym(b"cudssSetStream\0")?;
        let cfg_create: Create = lib.sym(b"cudssConfigCreate\0")?;
        let data_create: DataCreate = lib.sym(b"cudssDataCreate\0")?;
        let create_csr: CreateCsr = lib.sym(b"cudssMatrixCreateCsr\0")?;
        let create_dn: CreateDn = lib.sym(b"cudssMatrixCreateDn\0")?;
        let destroy = (
            lib.sym(b"cudssMatrixDestroy\0")?,
            lib.sym(b"cudssConfigDestroy\0")?,
            lib.sym(b"cudssDataDestroy\0")?,
            lib.sym(b"cudssDestroy\0")?,
        );
        let execute: Execute = lib.sym(b"cudssExecute\0")?;
        let mut h: H = std::ptr::null_mut();
        let (mut config, mut data, mut am, mut xm, mut bm): (H, H, H, H, H) =
            (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: cudss.h signatures; device buffers outlive the matrices (kept in `_bufs`).
        unsafe {
            ok("cudssCreate", create(&mut h))?;
            ok("cudssSetStream", set_stream(h, stream.cu_stream() as *mut c_void))?;
            ok("cudssConfigCreate", cfg_create(&mut config))?;
            ok("cudssDataCreate", data_create(h, &mut data))?;
            let p = |b: u64| b as *const c_void;
            ok(
                "cudssMatrixCreateCsr",
                create_csr(
                    &mut am,
                    total as i64,
                    total as i64,
                    vals.len() as i64,
                    p(ob.ptr().addr()),
                    std::ptr::null(),
                    p(cb.ptr().addr()),
                    p(vb.ptr().addr()),
                    R_32I,
                    R_32I,
                    T::CUDA_TYPE,
                    MTYPE_SPD,
                    MVIEW_LOWER,
                    BASE_ZERO,
                ),
            )?;
            ok(
                "cudssMatrixCreateDn",
                create_dn(&mut xm, total as i64, k as i64, total as i64, p(xb.ptr().addr()), T::CUDA_TYPE, LAYOUT_COL_MAJOR),
            )?;
            ok(
                "cudssMatrixCreateDn",
                create_dn(&mut bm, total as i64, k as i64, total as i64, p(bb.ptr().addr()), T::CUDA_TYPE, LAYOUT_COL_MAJOR),
            )?;
        }
        Ok(Solver { handle: h, config, data, a: am, x: xm, b: bm, destroy, execute, _bufs: (ob, cb, vb), xb, bb })
    }

    fn phase(&self, phase: i32) -> Result<()> {
        // SAFETY: handles from `new`.
        ok("cudssExecute", unsafe { (self.execute)(self.handle, phase, self.config, self.data, self.a, self.x, self.b) })
    }
}

/// Rows `analysis`, `factor`, `solve` of cuDSS for one configuration.
pub fn bench<T: VendorScalar>(
    lib: &Library,
    config: &Config,
    suite: &str,
    cfg: (usize, usize, usize, usize),
    gpu: &Arc<Gpu>,
    peaks: &Peaks,
    problem: Problem<'_, T>,
) -> Result<Vec<Row>> {
    let (s, nb, n, k) = cfg;
    let shape = Shape::new(s, nb, n)?;
    let row = |phase: &str| Row::new(suite, "cudss", T::PRECISION, cfg, phase);
    let lower_nnz = s * (nb * n * (n + 1) / 2 + (nb - 1) * n * n);
    let estimate = lower_nnz * (T::BYTES + 4) * 12 + shape.batch * shape.dim() * k * T::BYTES * 4;
    if estimate > config.max_bytes {
        return Ok(vec![row("factor").skipped(format!("needs about {:.1} GB", estimate as f64 / 1e9))]);
    }
    let stream = gpu.new_stream()?;
    let (a, b) = problem(0)?;
    let solver = Solver::new(lib, &stream, &a, &b)?;
    let analysis_repeat = super::super::Repeat { warmup: 0, runs: 3.min(config.repeat.runs), budget_ms: config.repeat.budget_ms };
    let ta = time_cpu(analysis_repeat, |_| {
        solver.phase(PHASE_ANALYSIS)?;
        Ok(stream.synchronize()?)
    })?;
    let st = |_: usize| stream.clone();
    let tf = time_gpu(config.repeat, st, |_| Ok(()), |_| solver.phase(PHASE_FACTORIZATION))?;
    let ts = time_gpu(config.repeat, st, |_| Ok(()), |_| solver.phase(PHASE_SOLVE))?;
    let xs = solver.xb.to_vec()?;
    let _ = &solver.bb;
    let total = s * shape.dim();
    let mut x = b.clone();
    for sys in 0..s {
        for c in 0..k {
            for r in 0..shape.dim() {
                x.set(sys, r, c, xs[c * total + sys * shape.dim() + r]);
            }
        }
    }
    let plan = crate::plan::Plan::new(shape, T::PRECISION)?;
    let mut out = Vec::new();
    let mut r = row("analysis");
    r.time = ta;
    r.note = format!("wall clock; {}", lib.path());
    out.push(r);
    let mut r = row("factor");
    r.time = tf;
    r.flops = (s * nb) as f64 * (7.0 / 3.0) * (n as f64).powi(3);
    r.bytes = plan.factor_bytes();
    out.push(r.with_floor(peaks, T::PRECISION));
    let mut r = row("solve");
    r.time = ts;
    let (flops, bytes) = super::super::ours::solve_cost(&plan, shape, k, T::BYTES);
    r.flops = flops;
    r.bytes = bytes;
    r.residual = Some(accuracy(&a, &x, &b)?.relative_residual);
    out.push(r.with_floor(peaks, T::PRECISION));
    Ok(out)
}
