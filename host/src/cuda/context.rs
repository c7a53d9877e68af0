//! [`Gpu`]: one CUDA device with blocktri's kernels loaded.

use super::launch::{Kernel, Module, embedded_ptx_text};
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream, sys};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// What the device is.
#[derive(Clone, Debug)]
pub struct GpuInfo {
    /// Device name.
    pub name: String,
    /// Device ordinal.
    pub ordinal: usize,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Largest dynamic shared memory one block may opt in to, in bytes.
    pub max_shared_per_block: u32,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// L2 cache in bytes.
    pub l2_bytes: usize,
    /// Architecture of the PTX build that was loaded (`sm_80`, `sm_90`).
    pub ptx_arch: String,
}

/// A CUDA device with the crate's kernels loaded, and a stream.
///
/// Creating it loads the driver, creates (or retains) the device's primary context and
/// indexes the embedded PTX by kernel; each kernel is JIT-compiled on its first use
/// ([`Module`]). Share one `Arc<Gpu>` between solvers ([`Gpu::shared`]).
/// Event tracking of cudarc is disabled on the context: the solvers order their work on
/// their streams explicitly, which also keeps graph capture clean.
///
/// ```no_run
/// let gpu = blocktri::cuda::Gpu::shared().expect("a CUDA GPU");
/// println!("{} ({} SMs)", gpu.info().name, gpu.info().multiprocessors);
/// ```
#[derive(Debug)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Module,
    info: GpuInfo,
    /// Cap on the free memory the size checks see (`usize::MAX`: none).
    memory_limit: AtomicUsize,
}

/// Environment variable capping the device memory the solvers plan with (bytes, or with a
/// `K`, `M` or `G` suffix): forces the chunked paths on small problems (tests), or leaves
/// room for other users of the GPU.
pub const MEMORY_LIMIT_ENV: &str = "BLOCKTRI_DEVICE_MEMORY_LIMIT";

/// Environment variable naming the PTX build to load (`sm_80`, `sm_90`) instead of the
/// newest one the device runs: tests and benchmarks of the sm_80 kernels on a Hopper.
pub const PTX_ARCH_ENV: &str = "BLOCKTRI_PTX_ARCH";

/// Parses `123`, `64K`, `512M`, `2G` (powers of 1024).
fn parse_bytes(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1usize << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

/// The compute capability of device `ordinal`, asked of the driver without a context.
fn device_capability(ordinal: usize) -> Result<(i32, i32)> {
    let no_gpu = |e: cudarc::driver::DriverError| Error::NoGpu(format!("cannot query device {ordinal}: {e}"));
    let dev = cudarc::driver::result::device::get(ordinal as i32).map_err(no_gpu)?;
    let attr = |a| {
        // SAFETY: `dev` is a device handle the driver returned; the attribute is read
        // into a local.
        unsafe { cudarc::driver::result::device::get_attribute(dev, a) }.map_err(no_gpu)
    };
    Ok((
        attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    ))
}

impl Gpu {
    /// Opens device `ordinal`. Fails with [`Error::NoGpu`] when no driver or device is
    /// found.
    pub fn with_ordinal(ordinal: usize) -> Result<Arc<Self>> {
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoGpu("the CUDA driver library (libcuda.so) was not found".into()));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoGpu(format!("the CUDA driver did not initialize: {e}")))?;
        if count <= 0 {
            return Err(Error::NoGpu("the CUDA driver reports no device".into()));
        }
        if ordinal >= count as usize {
            return Err(Error::NoGpu(format!("device {ordinal} requested, {count} present")));
        }
        // The PTX build is chosen from the device's compute capability before a context
        // exists and decompressed (~60 ms) on a second thread while the driver creates
        // the context: measured, the first load pays ~30 ms for the compressed PTX
        // instead of ~60 (docs/perf-notes.md entry 103).
        let build = Module::choose_embedded(crate::ptx::PTX, device_capability(ordinal)?)?;
        let (ctx, text) = std::thread::scope(|s| {
            let text = s.spawn(move || embedded_ptx_text(build));
            let ctx = CudaContext::new(ordinal).map_err(|e| Error::NoGpu(format!("cannot open device {ordinal}: {e}")));
            (ctx, text.join())
        });
        let ctx = ctx?;
        // A panic in the decompression is a bug; it is reported as an error all the same.
        text.unwrap_or_else(|_| Err(Error::Cuda("decompressing the embedded PTX panicked".into())))?;
        // SAFETY: nothing has been allocated or launched through this context by us yet;
        // every stream we use is ordered explicitly (see the type docs).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let cc = ctx.compute_capability()?;
        // The crate's kernels start with `kernel_prologue`: launched dependently on sm_90.
        let module = Module::from_embedded(&ctx, crate::ptx::PTX, cc)?.with_dependent_launch(cc);
        let attr = |a| ctx.attribute(a).map(|v| v.max(0) as u32);
        let info = GpuInfo {
            name: ctx.name()?,
            ordinal,
            compute_capability: cc,
            multiprocessors: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_shared_per_block: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            total_memory: ctx.total_mem()?,
            l2_bytes: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
            ptx_arch: module.arch().to_string(),
        };
        let limit = match std::env::var(MEMORY_LIMIT_ENV) {
            Ok(v) => parse_bytes(&v).ok_or_else(|| Error::Shape(format!("{MEMORY_LIMIT_ENV}={v:?} is not a byte count (e.g. 512M)")))?,
            Err(_) => usize::MAX,
        };
        Ok(Arc::new(Gpu { ctx, stream, module, info, memory_limit: AtomicUsize::new(limit) }))
    }

    /// Opens device 0.
    pub fn new() -> Result<Arc<Self>> {
        Self::with_ordinal(0)
    }

    /// Device 0, opened once per process and shared (the error is kept too, and each
    /// caller gets it again with its kind: a misnamed `BLOCKTRI_PTX_ARCH` stays a
    /// [`Error::Shape`], not "no GPU").
    pub fn shared() -> Result<Arc<Self>> {
        static SHARED: OnceLock<Result<Arc<Gpu>>> = OnceLock::new();
        match SHARED.get_or_init(Gpu::new) {
            Ok(g) => Ok(g.clone()),
            Err(e) => Err(e.replayed()),
        }
    }

    /// Whether a usable GPU is present (opens it).
    pub fn is_available() -> bool {
        Self::shared().is_ok()
    }

    /// Device properties.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }
    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// The default stream of this `Gpu`.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    /// A new stream on the device.
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        Ok(self.ctx.new_stream()?)
    }
    /// The crate's kernel module.
    pub fn module(&self) -> &Module {
        &self.module
    }
    /// A kernel of the crate's module by name.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        self.module.kernel(name)
    }
    /// Free device memory in bytes (at most the limit, see [`Self::set_memory_limit`]).
    pub fn free_memory(&self) -> Result<usize> {
        Ok(self.ctx.mem_get_info()?.0.min(self.memory_limit.load(Ordering::Relaxed)))
    }

    /// Device bytes a caller that holds `held` bytes of its own (which it would free to
    /// make room) can plan with: the free memory plus `held`, at most the limit (the limit
    /// caps all that the caller holds, not only what it allocates next).
    pub(crate) fn room_with(&self, held: usize) -> Result<usize> {
        Ok((self.ctx.mem_get_info()?.0 + held).min(self.memory_limit.load(Ordering::Relaxed)))
    }

    /// [`Self::room_with`] after waiting for the device (every stream of the context), for
    /// a caller that found too little room at first: buffers freed on a stream, a dropped
    /// solver's too, go back to the driver only at a synchronization (as in
    /// [`Self::check_memory`]).
    pub(crate) fn settled_room_with(&self, held: usize) -> Result<usize> {
        self.ctx.synchronize()?;
        self.room_with(held)
    }

    /// Caps the free memory the size checks see (`None`: the device's own). Batches
    /// larger than the cap then run in chunks; a single system that does not fit gets
    /// [`Error::OutOfMemory`]. Also set by the environment variable
    /// `BLOCKTRI_DEVICE_MEMORY_LIMIT` when the device is opened.
    ///
    /// ```no_run
    /// let gpu = blocktri::cuda::Gpu::new().unwrap();
    /// gpu.set_memory_limit(Some(256 << 20)); // plan as if 256 MiB were free
    /// assert!(gpu.free_memory().unwrap() <= 256 << 20);
    /// ```
    pub fn set_memory_limit(&self, bytes: Option<usize>) {
        self.memory_limit.store(bytes.unwrap_or(usize::MAX), Ordering::Relaxed);
    }
    /// Fails with [`Error::OutOfMemory`] unless `bytes` (plus a 5% margin) are free. Where
    /// they are not at first, it waits for the device (every stream of the context) and
    /// looks again: buffers freed on a stream, by this process's dropped solvers too, go
    /// back to the driver only at a synchronization.
    ///
    /// ```no_run
    /// let gpu = blocktri::cuda::Gpu::new().unwrap();
    /// assert!(gpu.check_memory(usize::MAX / 2).is_err());
    /// ```
    pub fn check_memory(&self, bytes: usize) -> Result<()> {
        let margin = bytes.saturating_add(bytes / 20);
        if margin <= self.free_memory()? {
            return Ok(());
        }
        self.ctx.synchronize()?;
        let free = self.free_memory()?;
        if margin > free {
            return Err(Error::OutOfMemory { needed: bytes, free });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_counts_parse_with_suffixes() {
        assert_eq!(super::parse_bytes("123"), Some(123));
        assert_eq!(super::parse_bytes(" 64K"), Some(64 << 10));
        assert_eq!(super::parse_bytes("512m"), Some(512 << 20));
        assert_eq!(super::parse_bytes("2G"), Some(2 << 30));
        assert_eq!(super::parse_bytes("lots"), None);
        assert_eq!(super::parse_bytes(""), None);
    }
}
