//! The dense peer of selected inversion (issue #13): a system assembled as one
//! `N n x N n` matrix on the device, factored by cuSOLVER `potrf` and inverted by `potri`
//! (the lower triangle of `A^-1`, which holds every block the selected inversion returns),
//! where it fits: `2 (N n)^2` values (the input kept for the timed repeats, and the
//! working copy) within the benchmark's memory cap and the device's free memory.

use super::super::peaks::Peaks;
use super::super::timing::time_gpu;
use super::super::{Config, Row};
use super::{Problem, VendorScalar};
use crate::Factorization;
use crate::cuda::{DeviceBuffer, Gpu};
use crate::error::{Error, Result};
use crate::scalar::wide;
use std::sync::Arc;

/// Rows `factor` (`potrf`) and `selinv` (`potrf` + `potri`), device-resident, of one
/// system; `selinv`'s residual is the largest relative difference between the dense
/// inverse's first diagonal block and the CPU recursion's.
pub fn bench<T: VendorScalar>(
    config: &Config,
    suite: &str,
    cfg: (usize, usize, usize, usize),
    gpu: &Arc<Gpu>,
    peaks: &Peaks,
    problem: Problem<'_, T>,
) -> Result<Vec<Row>> {
    let (s, nb, n, _) = cfg;
    let d = nb * n;
    let row = |phase: &str| Row::new(suite, "vendor-dense", T::PRECISION, cfg, phase);
    let bytes = 2 * d * d * T::BYTES;
    if s > 1 {
        return Ok(vec![row("selinv").skipped("one system per dense matrix: batches not run")]);
    }
    if bytes > config.max_bytes || d > i32::MAX as usize {
        return Ok(vec![row("selinv").skipped(format!("the dense {d} x {d} matrix needs {:.1} GB", bytes as f64 / 1e9))]);
    }
    if let Err(e) = gpu.check_memory(bytes) {
        return Ok(vec![row("selinv").skipped(e.to_string())]);
    }
    let (a, _) = problem(0)?;
    let stream = gpu.new_stream()?;
    let solver = cudarc::cusolver::safe::DnHandle::new(stream.clone()).map_err(|e| Error::Cuda(format!("cuSOLVER: {e:?}")))?;
    let h = solver.cu();
    let pristine = DeviceBuffer::from_host(&stream, a.to_dense(0).as_slice())?;
    let work_a = DeviceBuffer::<T>::poisoned(&stream, d * d)?;
    let info = DeviceBuffer::<i32>::poisoned(&stream, 1)?;
    let (n32, status) =
        (d as i32, |what: &str, code: i32| if code == 0 { Ok(()) } else { Err(Error::Cuda(format!("{what}: status {code}"))) });
    let mut lwork = [0i32; 2];
    for (inverse, l) in [false, true].into_iter().zip(lwork.iter_mut()) {
        // SAFETY: an `n32 x n32` matrix at `work_a` (leading dimension n32); `l` a host int.
        status("potrf/potri workspace query", unsafe { T::dense_work(h, inverse, n32, work_a.ptr().addr(), n32, l) })?;
    }
    let lwork = lwork[0].max(lwork[1]).max(1);
    let workspace = DeviceBuffer::<T>::poisoned(&stream, lwork as usize)?;
    let run = |inverse: bool| -> Result<()> {
        // SAFETY: the matrix, `lwork` elements of workspace and one info word on the
        // handle's stream.
        let code = unsafe { T::dense_run(h, inverse, n32, work_a.ptr().addr(), n32, workspace.ptr().addr(), lwork, info.ptr().addr()) };
        status(if inverse { "potri" } else { "potrf" }, code)
    };
    let restore = |_| work_a.copy_from_device(&pristine, d * d);
    let check = || -> Result<()> {
        let mut v = [0i32];
        info.copy_to_host(&mut v)?;
        if v[0] != 0 { Err(Error::Cuda(format!("potrf/potri info {}", v[0]))) } else { Ok(()) }
    };
    let tf = time_gpu(config.repeat, |_| stream.clone(), restore, |_| run(false))?;
    check()?;
    let ti = time_gpu(config.repeat, |_| stream.clone(), restore, |_| run(false).and_then(|()| run(true)))?;
    check()?;
    // The first diagonal block of A^-1 (lower triangle) against the CPU recursion.
    let mut first = vec![T::zero(); d * n];
    work_a.copy_to_host(&mut first)?;
    let mut reference = crate::cpu::ThreadedCholesky::<T>::new();
    reference.factor(&a)?;
    let sigma = reference.selected_inverse()?;
    let want = sigma.diag_block(0, 0);
    let (mut worst, mut scale) = (0.0f64, 0.0f64);
    for c in 0..n {
        for r in c..n {
            let w = wide(want[c * sigma.ld() + r]);
            worst = worst.max((wide(first[c * d + r]) - w).abs());
            scale = scale.max(w.abs());
        }
    }
    let d3 = (d as f64).powi(3);
    let mut rf = row("factor");
    (rf.time, rf.flops, rf.bytes) = (tf, d3 / 3.0, (2 * d * d * T::BYTES) as f64);
    rf.note = "cuSOLVER potrf of the assembled N n x N n matrix".into();
    let mut ri = row("selinv");
    (ri.time, ri.flops, ri.bytes) = (ti, d3, (2 * d * d * T::BYTES) as f64);
    ri.residual = Some(worst / scale.max(f64::MIN_POSITIVE));
    ri.note = "potrf + potri: the whole lower triangle of A^-1; residual = first diagonal block vs the CPU recursion".into();
    Ok(vec![rf.with_floor(peaks, T::PRECISION), ri.with_floor(peaks, T::PRECISION)])
}
