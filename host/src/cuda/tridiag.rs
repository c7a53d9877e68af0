//! [`GpuTridiagInverse`]: the Sherman–Morrison tridiagonal inverse on the GPU.

use super::context::Gpu;
use super::env_override;
use super::launch::{Kernel, LaunchConfig};
use super::memory::DeviceBuffer;
use super::memory::{Place, copy_2d_bytes};
use super::transfer::{CHUNK_BYTES, PanelLink, PanelUnpack, PinnedBuffer, is_page_locked_range, output_vec, plan_chunks, with_workers};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::tridiag::{Inverse, Tridiagonal};
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::tridiag::fused::{ASSEMBLE_THREADS, ASSEMBLE_TILE, assemble_shared_bytes, work_len};
use blocktri_device::tridiag::{TridiagArgs, top_height};
use cudarc::driver::{CudaEvent, CudaStream, result};
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
    /// Second stream: copies of output panels to the host overlap the next assembly.
    copy_stream: Option<Arc<CudaStream>>,
    /// Page-locked host panels for outputs that go to pageable memory, kept between calls.
    host_panels: Option<HostPanels>,
}

/// Target size of one output panel streamed to the host: large enough that the per-copy
/// overhead is small, small enough that the unoverlapped first and last panels are short
/// and that pinning the host panels stays cheap for a one-shot call. On the H100 machine
/// (`docs/perf-notes.md`, entry 42), 16 MiB against 32: pinning 21-29 ms instead of
/// 48-63, a one-shot `invert` of n = 16384 ~135 ms instead of ~150-165, the stream as fast.
const PANEL_BYTES: usize = 16 << 20;

/// [`PANEL_BYTES`], or `BLOCKTRI_INVERT_PANEL_MIB` MiB (measurements).
fn panel_bytes() -> usize {
    env_override::<usize>("BLOCKTRI_INVERT_PANEL_MIB").map_or(PANEL_BYTES, |m| m.max(1) << 20)
}

/// [`HOST_PANELS`], or `BLOCKTRI_INVERT_HOST_PANELS` (at least 2; measurements).
fn host_panel_count() -> usize {
    env_override::<usize>("BLOCKTRI_INVERT_HOST_PANELS").map_or(HOST_PANELS, |k| k.max(2))
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
        Ok(GpuTridiagInverse { gpu, stream, copy_stream: None, host_panels: None })
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
        self.prepare_parts(t, check_dominance, true)
    }

    /// [`Self::prepare`], with the `n^2` device output only when `full_output` (the
    /// streamed inversion writes panels instead).
    fn prepare_parts<T: Scalar>(&mut self, t: &Tridiagonal<T>, check_dominance: bool, full_output: bool) -> Result<TridiagJob<T>> {
        t.validate(check_dominance)?;
        let (n, batch) = (t.n(), t.batch_size());
        if batch > 65535 {
            return Err(Error::Shape(format!("at most 65535 matrices per call, got {batch}")));
        }
        if n > (1 << 30) {
            return Err(Error::Shape(format!("n = {n} is too large")));
        }
        let output = if full_output { batch * n * n } else { 0 };
        self.gpu.check_memory(Self::required_memory::<T>(n, batch) - (batch * n * n - output) * T::BYTES)?;
        let k = |name| self.gpu.kernel(kernel_name::<T>(name).as_str());
        let st = &self.stream;
        let top = top_height(n as u32) as usize;
        Ok(TridiagJob {
            n,
            batch,
            a: DeviceBuffer::from_host(st, t.a())?,
            b: DeviceBuffer::from_host(st, t.b())?,
            c: DeviceBuffer::from_host(st, t.c())?,
            w: DeviceBuffer::poisoned(st, output)?,
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
        let args = |height| job.args(height);
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
                if job.w.len() >= job.batch * job.n * job.n {
                    Self::launch_assembly(&self.stream, job, f_assemble, job.w.ptr().addr(), 0, n)?;
                }
            }
        }
        Ok(())
    }

    /// Enqueues the fused method's assembly of the column panel `[col0, col0 + cols)` of
    /// every inverse into `out` (`n x cols` per matrix).
    ///
    /// # Safety
    /// `out` must hold `batch n cols` elements; the recursion of `job` is enqueued before
    /// on `stream`; `col0` is a multiple of `ASSEMBLE_TILE`.
    unsafe fn launch_assembly<T: Scalar>(
        stream: &CudaStream,
        job: &TridiagJob<T>,
        kernel: &Kernel,
        out: u64,
        col0: u32,
        cols: u32,
    ) -> Result<()> {
        let (n, batch) = (job.n as u32, job.batch as u32);
        let args = TridiagArgs { w: out as *mut T, col0, cols, ..job.args(top_height(n)) };
        let (row_tiles, col_tiles) = (n.div_ceil(ASSEMBLE_TILE), cols.div_ceil(ASSEMBLE_TILE));
        let smem = assemble_shared_bytes(args.top as usize, T::BYTES) as u32;
        let cfg = LaunchConfig { grid: (row_tiles * col_tiles, batch, 1), block: (ASSEMBLE_THREADS, 1, 1), shared_bytes: smem };
        // SAFETY: forwarded contract; the grid covers the panel's tiles.
        unsafe { kernel.launch(stream, cfg, (args,)) }
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

    /// Validates, inverts and copies back every matrix of `t`. The fused method streams
    /// the output to host memory in column panels while later panels are computed (see
    /// [`Self::invert_into`]); the stagewise one builds the whole output on the device.
    pub fn invert<T: Scalar>(&mut self, t: &Tridiagonal<T>, stagewise: bool, check_dominance: bool) -> Result<Inverse<T>> {
        if stagewise {
            let job = self.prepare(t, check_dominance)?;
            self.launch(&job, stagewise)?;
            self.check(&job)?;
            return self.download(&job);
        }
        let len = t.batch_size().checked_mul(t.n() * t.n()).ok_or(Error::HostOutOfMemory { needed: usize::MAX })?;
        let mut out = crate::trace::timed("invert: allocate the output", || output_vec::<T>(len))?;
        // SAFETY: `out` has capacity for `len` values; on success every one was written.
        unsafe {
            self.stream_into(t, check_dominance, out.as_mut_ptr())?;
            out.set_len(len);
        }
        Inverse::from_vec(t.n(), out)
    }

    /// Inverts every matrix of `t` (fused method) into `out` (`batch n^2` values,
    /// column-major, one matrix after another), streaming: the device computes column
    /// panels of about 16 MB into two buffers while the copy engine moves the previous
    /// panel to the host, so the device needs only the panels, not the `n^2` output. When
    /// `out` is page-locked ([`PinnedBuffer`], or registered by the caller) the panels go
    /// straight into it at the link's full speed; otherwise they pass through three pinned
    /// host panels, which every CPU thread empties chunk by chunk, faulting fresh output
    /// pages in while the link is still busy. Nothing is written to `out` when the inputs
    /// fail a check or a pivot is singular.
    ///
    /// ```no_run
    /// use blocktri::cuda::{GpuTridiagInverse, PinnedBuffer};
    /// use blocktri::tridiag::Tridiagonal;
    /// let t = Tridiagonal::<f64>::random_dominant(16384, 1, false, 1).unwrap();
    /// let mut gpu = GpuTridiagInverse::new().unwrap();
    /// let gpu_device = blocktri::cuda::Gpu::shared().unwrap();
    /// let mut out = PinnedBuffer::<f64>::zeroed(&gpu_device, 16384 * 16384).unwrap();
    /// gpu.invert_into(&t, true, &mut out).unwrap();
    /// ```
    pub fn invert_into<T: Scalar>(&mut self, t: &Tridiagonal<T>, check_dominance: bool, out: &mut [T]) -> Result<()> {
        let need = t.batch_size() * t.n() * t.n();
        if out.len() != need {
            return Err(Error::Shape(format!(
                "{} inverses of size {} need {need} output values, got {}",
                t.batch_size(),
                t.n(),
                out.len()
            )));
        }
        // SAFETY: `out` holds exactly the output.
        unsafe { self.stream_into(t, check_dominance, out.as_mut_ptr()) }
    }

    /// Columns per streamed panel: a multiple of the assembly tile, about [`PANEL_BYTES`].
    fn panel_cols<T: Scalar>(n: usize, batch: usize) -> usize {
        let per_col = batch * n * T::BYTES;
        let tile = ASSEMBLE_TILE as usize;
        (panel_bytes() / per_col.max(1) / tile).max(1) * tile
    }

    /// Device bytes of a streamed inversion ([`Self::invert_into`]).
    pub fn streamed_memory<T: Scalar>(n: usize, batch: usize) -> usize {
        let cols = Self::panel_cols::<T>(n, batch).min(n);
        Self::required_memory::<T>(n, batch) - batch * n * n * T::BYTES + 2 * batch * n * cols * T::BYTES
    }

    /// The streamed fused inversion into host memory at `out`: straight into page-locked
    /// memory, else through [`HOST_PANELS`] page-locked host panels (one allocation) whose chunks the
    /// staging workers copy out, faulting fresh output pages in while the link is busy
    /// ([`PanelUnpack`]).
    ///
    /// # Safety
    /// `out` must be valid for `batch n^2` writes of `T`.
    unsafe fn stream_into<T: Scalar>(&mut self, t: &Tridiagonal<T>, check_dominance: bool, out: *mut T) -> Result<()> {
        let job = crate::trace::timed("invert: prepare", || self.prepare_parts(t, check_dominance, false))?;
        let (n, batch) = (job.n, job.batch);
        let cols = Self::panel_cols::<T>(n, batch).min(n);
        let panel_len = batch * n * cols;
        self.gpu.check_memory(2 * panel_len * T::BYTES)?;
        let panels = [DeviceBuffer::<T>::poisoned(&self.stream, panel_len)?, DeviceBuffer::<T>::poisoned(&self.stream, panel_len)?];
        crate::trace::timed("invert: launch, check (waits)", || -> Result<()> {
            self.launch(&job, false)?;
            // Errors surface before anything is written to `out`.
            self.check(&job)
        })?;
        let total = batch * n * n;
        let direct = is_page_locked_range(out as usize, total * T::BYTES);
        let (count, panel_bytes) = (host_panel_count(), panel_len * T::BYTES);
        // Pinning on a thread of its own beside the preparation was measured to gain ~2 ms:
        // the driver serialized the preparation's calls behind it (perf-notes entry 42).
        if !direct && !self.host_panels.as_ref().is_some_and(|p| p.fits(count, panel_bytes)) {
            let _first = crate::trace::phase("invert: page-locked host panels (first use)");
            // The old panels go first: both at once could exceed what the system pins.
            self.host_panels = None;
            self.host_panels = Some(HostPanels::new(&self.gpu, count, panel_bytes)?);
        }
        let slot_ptrs = if direct { Vec::new() } else { self.host_panels.as_ref().map_or_else(Vec::new, HostPanels::slots) };
        if self.copy_stream.is_none() {
            self.copy_stream = Some(self.gpu.new_stream()?);
        }
        let starts: Vec<usize> = (0..n).step_by(cols).collect();
        let mut link = InverseLink {
            stream: &self.stream,
            copy: self.copy_stream.clone().expect("copy stream"),
            job: &job,
            panels: [panels[0].ptr().addr(), panels[1].ptr().addr()],
            starts: &starts,
            cols,
            // Direct: each panel's runs go to their place in `out` (pitch `n^2`);
            // staged: contiguous into the host panel.
            targets: slot_ptrs.clone(),
            out: out as *mut u8,
            events: Vec::with_capacity(starts.len()),
            last_of: [None, None],
        };
        let streamed = if direct {
            (0..starts.len()).try_for_each(|p| link.enqueue(p, 0))
        } else {
            let runs = |p: usize| {
                let (c0, w) = (starts[p], cols.min(n - starts[p]));
                (0..batch).map(|k| (k * n * w, k * n * n + c0 * n, n * w)).collect()
            };
            let chunks = plan_chunks(starts.len(), runs, CHUNK_BYTES / T::BYTES);
            let slots: Vec<*const T> = slot_ptrs.iter().map(|&p| p as *const T).collect();
            // SAFETY: `out` holds `total` values (caller's contract); the host panels hold
            // `panel_len` values each and only the copy engine writes them, before the
            // panel's arrival; chunks are disjoint runs of `out` and inside their panel.
            let unpack = unsafe { PanelUnpack::new(&chunks, starts.len(), &slots, panel_len, std::slice::from_raw_parts_mut(out, total)) };
            // Every thread: 16 on the H100 machine unpack 2.1 GB in 96-98 ms, 8 in 114-122,
            // 4 in 162-175 (page faults are most of the work).
            let workers = rayon::current_num_threads();
            crate::trace::timed("invert: stream through host panels", || {
                with_workers(workers, || unpack.work(), || unpack.dispatch(&mut link))
            })
        };
        // Also after a failure: no copy or assembly may outlive this call's buffers.
        let synced = link.copy.synchronize().map_err(Error::from).and_then(|_| Ok(self.stream.synchronize()?));
        streamed.and(synced)
    }
}

/// Page-locked host panels of a streamed inverse into pageable memory: the copy engine
/// fills one while the workers empty the others.
const HOST_PANELS: usize = 3;

/// The page-locked host panels of a streamed inverse: `count` panels of `stride` bytes in
/// one allocation (each `cuMemHostAlloc` call costs a few ms on top of the bytes it pins
/// on the H100 machine's VM: `docs/perf-notes.md`, entry 42).
#[derive(Debug)]
struct HostPanels {
    buffer: PinnedBuffer<u8>,
    count: usize,
    stride: usize,
}

impl HostPanels {
    /// `count` panels of at least `bytes` each, page-aligned (a later call in the other
    /// precision may reuse them).
    fn new(gpu: &Gpu, count: usize, bytes: usize) -> Result<Self> {
        let stride = bytes.next_multiple_of(4096);
        Ok(HostPanels { buffer: PinnedBuffer::zeroed(gpu, count * stride)?, count, stride })
    }

    /// Whether these are `count` panels of at least `bytes` each.
    fn fits(&self, count: usize, bytes: usize) -> bool {
        self.count == count && self.stride >= bytes
    }

    /// The start of each panel.
    fn slots(&self) -> Vec<*mut u8> {
        let base = self.buffer.as_ptr() as *mut u8;
        // Inside the buffer: count * stride bytes.
        (0..self.count).map(|i| base.wrapping_add(i * self.stride)).collect()
    }
}

/// A streamed inverse's side of [`PanelLink`]: panel `p` is assembled into device panel
/// `p % 2` on the compute stream, then copied on the copy stream to the host (into host
/// panel `slot`, or straight into page-locked `out` when there are no `targets`).
struct InverseLink<'a, T: Scalar> {
    stream: &'a CudaStream,
    copy: Arc<CudaStream>,
    job: &'a TridiagJob<T>,
    panels: [u64; 2],
    starts: &'a [usize],
    cols: usize,
    targets: Vec<*mut u8>,
    out: *mut u8,
    /// One event per enqueued panel, recorded after its copy.
    events: Vec<CudaEvent>,
    /// The last panel assembled into each device panel.
    last_of: [Option<usize>; 2],
}

impl<T: Scalar> PanelLink for InverseLink<'_, T> {
    fn enqueue(&mut self, p: usize, slot: usize) -> Result<()> {
        let (n, batch, size) = (self.job.n, self.job.batch, T::BYTES);
        let (b, c0) = (p % 2, self.starts[p]);
        let w = self.cols.min(n - c0);
        if let Some(q) = self.last_of[b] {
            // The device panel is rewritten only after its previous copy.
            self.stream.wait(&self.events[q])?;
        }
        // SAFETY: device panel `b` holds batch n cols >= batch n w values; the recursion
        // was enqueued before on this stream; c0 is a multiple of the tile.
        unsafe { GpuTridiagInverse::launch_assembly(self.stream, self.job, &self.job.kernels[2], self.panels[b], c0 as u32, w as u32)? };
        self.copy.wait(&self.stream.record_event(None)?)?;
        let run = n * w * size;
        // SAFETY: page-locked destinations: `out` holds batch n^2 values (runs at pitch
        // n^2 from column c0), a host panel batch n cols values, refilled only once its
        // chunks are out (the pipeline's rule); both are read only after this copy's event.
        unsafe {
            match self.targets.get(slot) {
                None => copy_runs_dtoh(&self.copy, self.panels[b], run, self.out.add(c0 * n * size), n * n * size, batch)?,
                Some(&host) => copy_runs_dtoh(&self.copy, self.panels[b], run, host, run, batch)?,
            }
        }
        self.events.push(self.copy.record_event(None)?);
        self.last_of[b] = Some(p);
        Ok(())
    }

    fn arrived(&mut self, p: usize) -> Result<bool> {
        Ok(self.events[p].try_is_complete()?)
    }
}

/// Copies `height` runs of `run` bytes, `run` apart on the device and `dst_pitch` apart
/// on the host: one 2-D copy where the pitch allows it, else a copy per run.
///
/// # Safety
/// As [`copy_2d_bytes`].
unsafe fn copy_runs_dtoh(stream: &CudaStream, src: u64, run: usize, dst: *mut u8, dst_pitch: usize, height: usize) -> Result<()> {
    const MAX_PITCH: usize = (1 << 31) - 1;
    if height == 1 || dst_pitch == run {
        // SAFETY: forwarded; contiguous.
        unsafe { result::memcpy_dtoh_async(std::slice::from_raw_parts_mut(dst, run * height), src, stream.cu_stream())? };
        return Ok(());
    }
    if dst_pitch <= MAX_PITCH {
        // SAFETY: forwarded.
        return unsafe { copy_2d_bytes(stream, Place::Device(src), run, Place::Host(dst as *mut _), dst_pitch, run, height) };
    }
    for k in 0..height {
        // SAFETY: forwarded, run k.
        unsafe {
            result::memcpy_dtoh_async(
                std::slice::from_raw_parts_mut(dst.add(k * dst_pitch), run),
                src + (k * run) as u64,
                stream.cu_stream(),
            )?
        };
    }
    Ok(())
}

impl<T: Scalar> TridiagJob<T> {
    /// The kernels' arguments for merge height `height`, writing the whole inverse to `w`.
    fn args(&self, height: u32) -> TridiagArgs<T> {
        let n = self.n as u32;
        TridiagArgs {
            a: self.a.ptr().as_ptr(),
            b: self.b.ptr().as_ptr(),
            c: self.c.ptr().as_ptr(),
            w: self.w.ptr().as_mut_ptr(),
            work: self.work.ptr().as_mut_ptr(),
            status: self.status.ptr().as_mut_ptr(),
            n,
            batch: self.batch as u32,
            height,
            top: top_height(n),
            col0: 0,
            cols: n,
        }
    }

    /// The inverses on the device (column-major, `n * n` per matrix).
    pub fn output(&self) -> &DeviceBuffer<T> {
        &self.w
    }
}
