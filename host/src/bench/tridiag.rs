//! Tridiagonal inverse in the benchmark: the GPU (fused and the paper's stagewise scheme)
//! against the sequential and multi-threaded CPU recursion, `n = 2^10` up to the largest
//! size whose `n^2` output fits; the GPU floor is writing `n^2` values once at the measured
//! write bandwidth.

use super::peaks::Peaks;
use super::timing::{Repeat, time_cpu, time_gpu};
use super::{Config, Emit, Row};
use crate::cuda::{Gpu, GpuTridiagInverse};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tridiag::{Method, Tridiagonal, inverse_error, invert};
use std::sync::Arc;

/// Rows of every method and size.
pub fn bench<T: Scalar>(config: &Config, gpu: Option<&Arc<Gpu>>, peaks: &Peaks, emit: Emit<'_>) -> Result<()> {
    let max_pow = if config.quick { 12 } else { 16 };
    let default: Vec<usize> = (10..=max_pow).map(|p| 1usize << p).collect();
    for &n in config.sizes.tridiag.as_deref().unwrap_or(&default) {
        let mut rows = Vec::new();
        let bytes = n * n * T::BYTES;
        let cfg = (1, 1, n, 0);
        let row = |method: &str| Row::new("tridiag", method, T::PRECISION, cfg, "inverse");
        let t = Tridiagonal::<T>::random_dominant(n, 1, false, 1000 + n as u64)?;
        let check = n <= 1 << 14;
        if let Some(g) = gpu {
            let free = g.free_memory()?;
            if GpuTridiagInverse::required_memory::<T>(n, 1) > free * 9 / 10 {
                emit(vec![row("gpu-fused").skipped(format!("n^2 output needs {:.1} GB", bytes as f64 / 1e9))]);
                continue;
            }
            let mut inv = GpuTridiagInverse::with_gpu(g.clone())?;
            for (name, stagewise) in [("gpu-fused", false), ("gpu-stagewise", true)] {
                if !config.wants(name) {
                    continue;
                }
                let job = inv.prepare(&t, true)?;
                let st = |_: usize| inv.stream().clone();
                let stats = time_gpu(config.repeat, st, |_| Ok(()), |_| inv.launch(&job, stagewise))?;
                inv.check(&job)?;
                let mut r = row(name);
                r.time = stats;
                r.bytes = bytes as f64;
                r.flops = 2.0 * (n * n) as f64;
                if check || (name == "gpu-fused" && n <= 1 << 15) {
                    r.residual = Some(inverse_error(&t, &inv.download(&job)?));
                }
                if peaks.write_gbs > 0.0 {
                    let floor = bytes as f64 / (peaks.write_gbs * 1e9) * 1e3;
                    r.floor_ms = Some(floor);
                    r.fraction_of_floor = Some(floor / stats.median_ms);
                }
                rows.push(r);
            }
            if config.wants("gpu-fused") && n <= 1 << 15 {
                rows.extend(host_rows(config, g, &mut inv, &t, peaks)?);
            }
        }
        for (name, method) in [("cpu-sequential", Method::Sequential), ("cpu-threaded", Method::Threaded)] {
            if !config.wants(name) {
                continue;
            }
            // The CPU runs take seconds at the top sizes: fewer repetitions there.
            let rep = if n >= 1 << 14 { Repeat { warmup: 0, runs: 2, budget_ms: 0.0 } } else { config.repeat };
            if method == Method::Sequential && n > 1 << 15 {
                rows.push(row(name).skipped("sequential CPU beyond 2^15 takes minutes"));
                continue;
            }
            let mut last = None;
            let stats = time_cpu(rep, |_| {
                last = Some(invert(&t, method, true)?);
                Ok(())
            })?;
            let mut r = row(name);
            r.time = stats;
            r.bytes = bytes as f64;
            if let (true, Some(x)) = (check, &last) {
                r.residual = Some(inverse_error(&t, x));
            }
            rows.push(r);
        }
        emit(rows);
    }
    Ok(())
}

/// The fused inverse from host memory to host memory, wall clock: into a page-locked
/// buffer allocated once (`invert_into`), and into a fresh `Vec` (`invert`), against the
/// time the `n^2` output needs on the link at the measured pinned bandwidth.
fn host_rows<T: Scalar>(
    config: &Config,
    gpu: &Arc<Gpu>,
    inv: &mut GpuTridiagInverse,
    t: &Tridiagonal<T>,
    peaks: &Peaks,
) -> Result<Vec<Row>> {
    let n = t.n();
    let bytes = (n * n * T::BYTES) as f64;
    let rep = if n >= 1 << 14 { Repeat { warmup: 1, runs: 5, budget_ms: 0.0 } } else { config.repeat };
    let mut out = crate::cuda::PinnedBuffer::<T>::zeroed(gpu, n * n)?;
    let pinned = time_cpu(rep, |_| inv.invert_into(t, true, &mut out))?;
    let mut last = None;
    let fresh = time_cpu(rep, |_| {
        last = Some(inv.invert(t, false, true)?);
        Ok(())
    })?;
    let mut rows = Vec::new();
    for (name, stats, note) in [
        ("gpu-fused-pinned", pinned, "into a page-locked buffer (invert_into), host to host, wall clock"),
        ("gpu-fused-vec", fresh, "into a new Vec (invert), host to host, wall clock"),
    ] {
        let mut r = Row::new("tridiag", name, T::PRECISION, (1, 1, n, 0), "invert+transfer");
        r.time = stats;
        r.bytes = bytes;
        r.floor_ms = peaks.transfer_floor_ms(0.0, bytes);
        r.fraction_of_floor = r.floor_ms.map(|f| f / stats.median_ms);
        r.note = note.into();
        if n <= 1 << 12 {
            let x = if name == "gpu-fused-vec" { last.take().expect("ran") } else { crate::tridiag::Inverse::from_vec(n, out.to_vec())? };
            r.residual = Some(inverse_error(t, &x));
        }
        rows.push(r);
    }
    Ok(rows)
}
