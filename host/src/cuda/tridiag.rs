//! [`GpuTridiagInverse`]: the Sherman–Morrison tridiagonal inverse on the GPU.

use super::context::Gpu;
use super::launch::{Kernel, LaunchConfig};
use super::memory::DeviceBuffer;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::tridiag::{Inverse, Tridiagonal};
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::tridiag::fused::{ASSEMBLE_THREADS, ASSEMBLE_TILE, assemble_shared_bytes, work_len};
use blocktri_device::tridiag::{TridiagArgs, top_height};
use cudarc::driver::{CudaStream, result};
use std::sync::Arc;

/// Inverts batches of tridiagonal matrices on the GPU.
///
/// ```no_run
/// use blocktri::{cuda::GpuTridiagInverse, tridiag::{inverse_error, Tridiagonal}};
/// let t = Tridiagonal::<f64>::random_dominant(4096, 1, false, 1).unwrap();
/// let mut gpu = GpuTridiagInverse::new().unwrap();
/// let x = gpu.invert(&t, false, true).unwrap(); // fused method, dominance checked
/// assert!(inverse_error(&t, &x) < 1e-13);
/// ```
#[derive(Debug)]
pub struct GpuTridiagInverse {
    gpu: Arc<Gpu>,
    stream: Arc<CudaStream>,
}

/// Device buffers of one inversion: inputs, output, work, status words.
pub struct TridiagJob<T> {
    n: usize,
    batch: usize,
    a: DeviceBuffer<T>,
    b: DeviceBuffer<T>,
    c: DeviceBuffer<T>,
    w: DeviceBuffer<T>,
    work: DeviceBuffer<T>,
    status: DeviceBuffer<u32>,
    kernels: [Kernel; 6],
}

impl GpuTridiagInverse {
    /// On the shared device, with a stream of its own.
    pub fn new() -> Result<Self> {
        Self::with_gpu(Gpu::shared()?)
    }

    /// On `gpu`.
    pub fn with_gpu(gpu: Arc<Gpu>) -> Result<Self> {
        let stream = gpu.new_stream()?;
        Ok(GpuTridiagInverse { gpu, stream })
    }

    /// The stream its work runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Device bytes needed for `batch` inverses of size `n`.
    pub fn required_memory<T: Scalar>(n: usize, batch: usize) -> usize {
        batch * (n * n + 3 * n + work_len(n, top_height(n as u32) as usize)) * T::BYTES + 4 * batch
    }

    /// Validates `t`, allocates the device buffers (output poisoned with NaN) and copies
    /// the diagonals. Fails with [`Error::OutOfMemory`] when the `n^2` outputs do not fit.
    pub fn prepare<T: Scalar>(&mut self, t: &Tridiagonal<T>, check_dominance: bool) -> Result<TridiagJob<T>> {
        t.validate(check_dominance)?;
        let (n, batch) = (t.n(), t.batch_size());
        if batch > 65535 {
            return Err(Error::Shape(format!("at most 65535 matrices per call, got {batch}")));
        }
        if n > (1 << 30) {
            return Err(Error::Shape(format!("n = {n} is too large")));
        }
        self.gpu.check_memory(Self::required_memory::<T>(n, batch))?;
        let k = |name| self.gpu.kernel(kernel_name::<T>(name).as_str());
        let st = &self.stream;
        let top = top_height(n as u32) as usize;
        Ok(TridiagJob {
            n,
            batch,
            a: DeviceBuffer::from_host(st, t.a())?,
            b: DeviceBuffer::from_host(st, t.b())?,
            c: DeviceBuffer::from_host(st, t.c())?,
            w: DeviceBuffer::poisoned(st, batch * n * n)?,
            work: DeviceBuffer::poisoned(st, batch * work_len(n, top).max(2 * n))?,
            status: DeviceBuffer::poisoned(st, batch)?,
            kernels: [
                k(names::TRI_FUSED_LEAVES)?,
                k(names::TRI_FUSED_MERGE)?,
                k(names::TRI_FUSED_ASSEMBLE)?,
                k(names::TRI_STAGE_LEAVES)?,
                k(names::TRI_STAGE_EXTRACT)?,
                k(names::TRI_STAGE_MERGE)?,
            ],
        })
    }

    /// Enqueues the inversion of a prepared job (no wait): the fused method, or the
    /// paper's stagewise one.
    pub fn launch<T: Scalar>(&self, job: &TridiagJob<T>, stagewise: bool) -> Result<()> {
        let (n, batch) = (job.n as u32, job.batch as u32);
        let top = top_height(n);
        let args = |height| TridiagArgs::<T> {
            a: job.a.ptr().as_ptr(),
            b: job.b.ptr().as_ptr(),
            c: job.c.ptr().as_ptr(),
            w: job.w.ptr().as_mut_ptr(),
            work: job.work.ptr().as_mut_ptr(),
            status: job.status.ptr().as_mut_ptr(),
            n,
            batch,
            height,
            top,
        };
        let grid = |threads: u64, block: u32| ((threads.div_ceil(block as u64)).max(1) as u32, batch, 1);
        let cfg = |threads: u64| LaunchConfig { grid: grid(threads, 256), block: (256, 1, 1), shared_bytes: 0 };
        let [f_leaves, f_merge, f_assemble, s_leaves, s_extract, s_merge] = &job.kernels;
        // SAFETY: the buffers were sized in `prepare` for `batch` matrices of size `n`;
        // grids follow each kernel's documented contract.
        unsafe {
            result::memset_d8_async(job.status.ptr().addr(), 0xff, batch as usize * 4, self.stream.cu_stream())?;
            if stagewise {
                s_leaves.launch(&self.stream, cfg(n.div_ceil(2) as u64), (args(1),))?;
                for h in 2..=top {
                    s_extract.launch(&self.stream, cfg(n as u64), (args(h),))?;
                    let side = 1u64 << h;
                    s_merge.launch(&self.stream, cfg((n as u64).div_ceil(side) * side * side), (args(h),))?;
                }
            } else {
                f_leaves.launch(&self.stream, cfg(n.div_ceil(2) as u64), (args(1),))?;
                for h in 2..=top {
                    f_merge.launch(&self.stream, cfg(n as u64), (args(h),))?;
                }
                let tiles = n.div_ceil(ASSEMBLE_TILE);
                let smem = assemble_shared_bytes(top as usize, T::BYTES) as u32;
                let cfg = LaunchConfig { grid: (tiles * tiles, batch, 1), block: (ASSEMBLE_THREADS, 1, 1), shared_bytes: smem };
                f_assemble.launch(&self.stream, cfg, (args(top),))?;
            }
        }
        Ok(())
    }

    /// Waits and turns the status words into a result.
    pub fn check<T: Scalar>(&self, job: &TridiagJob<T>) -> Result<()> {
        let status = job.status.to_vec()?;
        if let Some((matrix, &key)) = status.iter().enumerate().find(|(_, s)| **s != u32::MAX) {
            let merge = key % 2 == 1;
            return Err(Error::SingularPivot {
                matrix,
                row: (key / 2) as usize,
                stage: if merge { "Sherman-Morrison merge" } else { "2x2 inversion" },
            });
        }
        Ok(())
    }

    /// Copies the inverses to the host.
    pub fn download<T: Scalar>(&self, job: &TridiagJob<T>) -> Result<Inverse<T>> {
        Inverse::from_vec(job.n, job.w.to_vec()?)
    }

    /// Validates, inverts and copies back every matrix of `t`.
    pub fn invert<T: Scalar>(&mut self, t: &Tridiagonal<T>, stagewise: bool, check_dominance: bool) -> Result<Inverse<T>> {
        let job = self.prepare(t, check_dominance)?;
        self.launch(&job, stagewise)?;
        self.check(&job)?;
        self.download(&job)
    }
}

impl<T: Scalar> TridiagJob<T> {
    /// The inverses on the device (column-major, `n * n` per matrix).
    pub fn output(&self) -> &DeviceBuffer<T> {
        &self.w
    }
}
