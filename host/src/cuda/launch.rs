//! Typed kernel launches over the CUDA driver: load PTX once, look kernels up by name,
//! launch with Rust values as arguments.
//!
//! A kernel written in Rust as
//! `pub unsafe extern "ptx-kernel" fn saxpy(x: *const f32, y: *mut f32, a: f32, n: u32)`
//! is launched with `kernel.launch(&stream, cfg, (x.ptr(), y.ptr_mut(), 2.0f32, n))`; a
//! kernel that takes one `#[repr(C)]` argument struct by value takes `(args,)` after
//! `unsafe impl KernelParam for Args {}`.

use crate::error::{Error, Result};
use blocktri_ptx::split::{PtxIndex, entry_names};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, result, sys};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// A value that can be passed to a kernel parameter of the same layout.
///
/// # Safety
/// The type must be `Copy`, contain no host references, and have exactly the layout of
/// the kernel's parameter (`#[repr(C)]` structs whose fields match, primitives, device
/// addresses).
pub unsafe trait KernelParam: Copy {}

macro_rules! kernel_param {
    ($($t:ty),*) => { $(
        // SAFETY: plain values with the same layout on host and device.
        unsafe impl KernelParam for $t {}
    )* };
}
kernel_param!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize, f32, f64, bool);
// SAFETY: raw pointers holding device addresses are 64-bit values, as the kernel's.
unsafe impl<T> KernelParam for *const T {}
// SAFETY: as above.
unsafe impl<T> KernelParam for *mut T {}
// SAFETY: the device argument structs are #[repr(C)] and shared with the kernel crate.
unsafe impl<T: Copy> KernelParam for blocktri_device::level::FactorArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::level::SolveArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::tridiag::TridiagArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::tiled::TiledArgs<T> {}
// SAFETY: as above.
unsafe impl KernelParam for blocktri_device::tiled::factor::RoundingInput {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::batched::PotrfBatchedArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::logdet::LogDetArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::selinv::SelinvArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::selinv::tiled::SelinvTiledArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::refine::RefineArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::arrow::ArrowArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::selinv::SelinvGatherArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelParam for blocktri_device::copy::StridedCopyArgs<T> {}

/// A device address of a `T` array: passes as a `*const T` / `*mut T` kernel parameter.
#[repr(transparent)]
#[derive(Debug)]
pub struct DevicePtr<T> {
    addr: u64,
    _t: std::marker::PhantomData<*mut T>,
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}
// SAFETY: a 64-bit device address, the layout of a device pointer.
unsafe impl<T> KernelParam for DevicePtr<T> {}

impl<T> DevicePtr<T> {
    /// Wraps a raw device address.
    pub fn from_addr(addr: u64) -> Self {
        DevicePtr { addr, _t: std::marker::PhantomData }
    }
    /// The device address.
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// As a `*mut T` (for argument structs); dereferenceable only on the device.
    pub fn as_mut_ptr(&self) -> *mut T {
        self.addr as *mut T
    }
    /// As a `*const T` (for argument structs).
    pub fn as_ptr(&self) -> *const T {
        self.addr as *const T
    }
    /// The address `count` elements further.
    pub fn offset(&self, count: usize) -> Self {
        Self::from_addr(self.addr + (count * std::mem::size_of::<T>()) as u64)
    }
}

/// A tuple of kernel parameters.
pub trait KernelParams {
    /// Pointers to each parameter value, in order, for `cuLaunchKernel`.
    fn pointers(&mut self) -> Vec<*mut c_void>;
}

macro_rules! kernel_params {
    ($($name:ident),+) => {
        impl<$($name: KernelParam),+> KernelParams for ($($name,)+) {
            #[allow(non_snake_case)]
            fn pointers(&mut self) -> Vec<*mut c_void> {
                let ($($name,)+) = self;
                vec![$($name as *mut $name as *mut c_void),+]
            }
        }
    };
}
kernel_params!(A);
kernel_params!(A, B);
kernel_params!(A, B, C);
kernel_params!(A, B, C, D);
kernel_params!(A, B, C, D, E);
kernel_params!(A, B, C, D, E, F);
kernel_params!(A, B, C, D, E, F, G);
kernel_params!(A, B, C, D, E, F, G, H);

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `grid` blocks of `block` threads.
    pub fn linear(grid: u32, block: u32, shared_bytes: u32) -> Self {
        LaunchConfig { grid: (grid, 1, 1), block: (block, 1, 1), shared_bytes }
    }
    /// Enough 1-D blocks of `block` threads to cover `count` threads.
    pub fn for_count(count: usize, block: u32) -> Self {
        Self::linear((count.div_ceil(block as usize)).max(1) as u32, block, 0)
    }
}

/// A kernel of a loaded [`Module`].
#[derive(Debug, Clone)]
pub struct Kernel {
    func: CudaFunction,
    name: String,
    smem_limit: Arc<Mutex<u32>>,
    /// Launched with programmatic stream serialization ([`Module::dependent_launch`]).
    dependent: bool,
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers used per thread (from the driver).
    pub fn registers(&self) -> Result<i32> {
        Ok(self.func.num_regs()?)
    }

    /// Most threads per block this kernel can be launched with (registers permitting).
    pub fn max_threads_per_block(&self) -> Result<u32> {
        Ok(self.func.max_threads_per_block()?.max(32) as u32)
    }

    /// Raises the kernel's dynamic shared-memory limit to at least `bytes` (needed above
    /// 48 KB; done automatically by [`Self::launch`], but must happen before a stream
    /// capture that will use it).
    pub fn reserve_shared(&self, bytes: u32) -> Result<()> {
        self.ensure_shared(bytes)
    }

    /// Launches the kernel on `stream`. Dynamic shared memory above 48 KB raises the
    /// kernel's opt-in limit first (once per size).
    ///
    /// # Safety
    /// The parameters must match the kernel's signature and satisfy its documented
    /// contract (sizes of the arrays behind device pointers, launch shape).
    pub unsafe fn launch(&self, stream: &CudaStream, cfg: LaunchConfig, mut params: impl KernelParams) -> Result<()> {
        self.ensure_shared(cfg.shared_bytes)?;
        let mut ptrs = params.pointers();
        let launched = if self.dependent {
            // SAFETY: as below; the kernel starts with `kernel_prologue` (the module's
            // `dependent_launch` says so), which waits for the kernels it depends on.
            unsafe { launch_dependent(self.func.cu_function(), cfg, stream.cu_stream(), &mut ptrs) }
        } else {
            // SAFETY: forwarded from the caller; `ptrs` points into `params`, alive for the
            // call (cuLaunchKernel copies the values before returning).
            unsafe { result::launch_kernel(self.func.cu_function(), cfg.grid, cfg.block, cfg.shared_bytes, stream.cu_stream(), &mut ptrs) }
        };
        launched.map_err(|e| Error::Cuda(format!("launching {}: {e}", self.name)))
    }

    fn ensure_shared(&self, bytes: u32) -> Result<()> {
        let mut limit = self.smem_limit.lock().unwrap_or_else(|e| e.into_inner());
        if bytes > *limit {
            self.func
                .set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes as i32)
                .map_err(|e| Error::Cuda(format!("{}: cannot use {bytes} bytes of shared memory: {e}", self.name)))?;
            *limit = bytes;
        }
        Ok(())
    }
}

/// A loaded PTX module; kernels are looked up by name once and cached.
///
/// A module from [`Module::from_ptx`] is JIT-compiled whole when it is loaded. One from
/// [`Module::from_embedded`] is cut into one module per kernel and each is compiled the
/// first time [`Module::kernel`] asks for it, so that a process compiles only the kernels
/// it uses (the crate's 220 kernels took ~60 s on a fresh H200 machine when compiled
/// together; `docs/perf-notes.md` entry 67). [`Module::load_all`] compiles every kernel
/// ahead.
#[derive(Debug)]
pub struct Module {
    source: Source,
    /// The kernels (`.entry`) of the PTX, in module order.
    names: Vec<String>,
    /// One slot per kernel name asked for; a slot's lock is held while its kernel
    /// compiles, so a second caller of the same kernel waits for it, and callers of
    /// other kernels do not.
    kernels: Mutex<HashMap<String, Arc<Mutex<Option<Kernel>>>>>,
    arch: String,
    dependent_launch: bool,
}

/// Where a [`Module`]'s kernels come from.
#[derive(Debug)]
enum Source {
    /// One loaded module holding every kernel.
    Whole(Arc<CudaModule>),
    /// The PTX cut by kernel; each kernel's module is loaded on first use.
    PerKernel { ctx: Arc<CudaContext>, ptx: PtxIndex<'static> },
}

/// Environment variable that makes [`Module::from_embedded`] load its PTX whole
/// (`whole`), compiling every kernel at once as before kernels were compiled on first use:
/// A/B measurements, and a way out should a driver refuse the per-kernel modules.
pub const MODULE_LOADING_ENV: &str = "BLOCKTRI_MODULE_LOADING";

/// Runs `f` with this thread's stream-capture mode relaxed: loading a module while the
/// thread captures a graph is then allowed (the load enqueues nothing on any stream).
fn with_relaxed_capture<T>(f: impl FnOnce() -> T) -> T {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: exchanges a thread-local setting through a valid pointer; the previous
    // mode is put back below.
    let swapped = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) } == sys::CUresult::CUDA_SUCCESS;
    let out = f();
    if swapped {
        // SAFETY: as above.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
    }
    out
}

/// `90` for `sm_90`: the number of a PTX build's architecture name.
fn arch_number(arch: &str) -> Option<i32> {
    arch.strip_prefix("sm_").and_then(|v| v.parse().ok())
}

/// `90` for compute capability 9.0, comparable with [`arch_number`].
fn sm_number(capability: (i32, i32)) -> i32 {
    capability.0 * 10 + capability.1
}

/// Environment variable that turns programmatic dependent launches of the crate's
/// kernels off (`off`): every launch then waits for the previous kernel of its stream to
/// finish, as before sm_90 (A/B measurements, and a way out should a driver misbehave).
pub const DEPENDENT_LAUNCH_ENV: &str = "BLOCKTRI_DEPENDENT_LAUNCH";

/// Launches `func` with the programmatic-stream-serialization attribute: the driver may
/// start its blocks before the previous kernel of `stream` has completed (once that
/// kernel's blocks have exited, or all called `griddepcontrol.launch_dependents`, which
/// the crate's kernels do not), so its launch overlaps the previous kernel's completion.
///
/// # Safety
/// As `cuLaunchKernel` with these arguments, and every thread of `func` executes
/// `griddepcontrol.wait` before its first global-memory access and before it returns
/// ([`blocktri_device`]'s entry points do, through `kernel_prologue`).
unsafe fn launch_dependent(
    func: sys::CUfunction,
    cfg: LaunchConfig,
    stream: sys::CUstream,
    ptrs: &mut [*mut c_void],
) -> std::result::Result<(), result::DriverError> {
    // SAFETY: a plain C struct of integers and pointers, all-zero is a valid value; the
    // union member written is the one the attribute id names.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid.0,
        gridDimY: cfg.grid.1,
        gridDimZ: cfg.grid.2,
        blockDimX: cfg.block.0,
        blockDimY: cfg.block.1,
        blockDimZ: cfg.block.2,
        sharedMemBytes: cfg.shared_bytes,
        hStream: stream,
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: `config` and `attr` live through the call; the parameters as the caller
    // guarantees (the driver copies them before returning).
    unsafe { sys::cuLaunchKernelEx(&config, func, ptrs.as_mut_ptr(), std::ptr::null_mut()) }.result()
}

impl Module {
    /// Loads PTX source (JIT-compiled by the driver for the device).
    pub fn from_ptx(ctx: &Arc<CudaContext>, ptx: &str, arch: &str) -> Result<Self> {
        let module = load_ptx(ctx, ptx).map_err(|e| Error::Cuda(format!("loading the {arch} PTX module: {e}")))?;
        Ok(Self::with_source(Source::Whole(module), entry_names(ptx), arch))
    }

    fn with_source(source: Source, names: Vec<String>, arch: &str) -> Self {
        Module { source, names, kernels: Mutex::new(HashMap::new()), arch: arch.to_string(), dependent_launch: false }
    }

    /// Indexes `ptx` by kernel, to be compiled kernel by kernel; a PTX the index does not
    /// understand is loaded whole. The smallest kernel is compiled at once, so that a
    /// driver that cannot take the PTX at all says so here, as a whole load would.
    fn per_kernel(ctx: &Arc<CudaContext>, ptx: &'static str, arch: &str) -> Result<Self> {
        let whole = std::env::var(MODULE_LOADING_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("whole"));
        let index = if whole { None } else { PtxIndex::parse(ptx) };
        let Some(index) = index else { return Self::from_ptx(ctx, ptx, arch) };
        let smallest = index.entries().min_by_key(|k| index.entry_len(k)).map(str::to_string);
        let names = index.entries().map(str::to_string).collect();
        let module = Self::with_source(Source::PerKernel { ctx: ctx.clone(), ptx: index }, names, arch);
        if let Some(k) = smallest {
            module.kernel(&k)?;
        }
        Ok(module)
    }

    /// Loads the best of several embedded PTX builds `(arch, zstd frame)` (the `PTX` of a
    /// file generated by `blocktri-ptx`): the highest `sm_XY` not above the device's compute capability, or
    /// the build named by the environment variable `BLOCKTRI_PTX_ARCH`
    /// ([`PTX_ARCH_ENV`](super::context::PTX_ARCH_ENV)) when set. Its kernels are
    /// compiled one by one on first use (see the type docs), unless the environment
    /// variable [`MODULE_LOADING_ENV`] is `whole`. Only the chosen build is decompressed
    /// ([`embedded_ptx_text`]).
    pub fn from_embedded(ctx: &Arc<CudaContext>, builds: &[EmbeddedPtx], capability: (i32, i32)) -> Result<Self> {
        let best = Self::choose_embedded(builds, capability)?;
        Self::per_kernel(ctx, embedded_ptx_text(best)?, best.0)
    }

    /// The build [`Self::from_embedded`] loads for a device of compute capability
    /// `capability` (the highest `sm_XY` not above it, or the one `BLOCKTRI_PTX_ARCH`
    /// names). It needs no context: [`super::Gpu`] picks the build and decompresses it while
    /// the driver creates the context.
    pub(crate) fn choose_embedded(builds: &[EmbeddedPtx], capability: (i32, i32)) -> Result<EmbeddedPtx> {
        let forced = std::env::var(super::context::PTX_ARCH_ENV).ok().filter(|v| !v.trim().is_empty());
        let only = forced.as_deref().map(str::trim);
        let cc = sm_number(capability);
        let archs: Vec<_> = builds.iter().map(|b| b.0).collect();
        builds
            .iter()
            .filter(|(arch, _)| only.is_none_or(|o| o == *arch))
            .filter_map(|&(arch, packed)| arch_number(arch).map(|v| (v, (arch, packed))))
            .filter(|(v, _)| *v <= cc)
            .max_by_key(|(v, _)| *v)
            .map(|(_, build)| build)
            .ok_or_else(|| match only {
                Some(o) => Error::Shape(format!(
                    "{}={o}: no such PTX build for this device (compute capability {}.{}; builds {archs:?})",
                    super::context::PTX_ARCH_ENV,
                    capability.0,
                    capability.1
                )),
                None => Error::NoGpu(format!(
                    "the device (compute capability {}.{}) is older than every PTX build ({archs:?})",
                    capability.0, capability.1
                )),
            })
    }

    /// Marks the module as the crate's own kernels, which start with `kernel_prologue`:
    /// on an sm_90 (or newer) build and device they are launched with programmatic stream
    /// serialization, unless [`DEPENDENT_LAUNCH_ENV`] is `off`. Only [`super::Gpu`] calls
    /// it, on the module of `crate::ptx::PTX`, before any kernel is looked up: the kernels
    /// of any other module (the kernel kit's included) need not wait, so they are always
    /// launched plainly.
    pub(crate) fn with_dependent_launch(mut self, capability: (i32, i32)) -> Self {
        let build = arch_number(&self.arch).unwrap_or(0);
        let off = std::env::var(DEPENDENT_LAUNCH_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("off"));
        self.dependent_launch = build >= 90 && sm_number(capability) >= 90 && !off;
        self
    }

    /// Whether this module's kernels are launched with programmatic stream serialization:
    /// the crate's own kernels (the module [`super::Gpu`] loads) on sm_90 and later,
    /// unless [`DEPENDENT_LAUNCH_ENV`] is `off`; never a module loaded by
    /// [`Self::from_ptx`] or [`Self::from_embedded`]. Each such launch may start while
    /// the previous kernel of its stream is completing, and waits for it before touching
    /// memory.
    ///
    /// ```no_run
    /// let gpu = blocktri::cuda::Gpu::shared().expect("a CUDA GPU");
    /// println!("dependent launches: {}", gpu.module().dependent_launch());
    /// ```
    pub fn dependent_launch(&self) -> bool {
        self.dependent_launch
    }

    /// The architecture of the loaded PTX.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// The kernel named `name`, JIT-compiled on its first use when the module was cut by
    /// kernel ([`Self::from_embedded`]).
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let slot = {
            let mut slots = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
            slots.entry(name.to_string()).or_default().clone()
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let func = match &self.source {
            Source::Whole(module) => module.load_function(name),
            Source::PerKernel { ctx, ptx } => {
                let text = ptx.kernel_module(name).ok_or_else(|| Error::Cuda(format!("kernel {name} not found in the module")))?;
                let module = load_ptx(ctx, &text).map_err(|e| Error::Cuda(format!("compiling kernel {name} ({} PTX): {e}", self.arch)))?;
                module.load_function(name)
            }
        }
        .map_err(|e| Error::Cuda(format!("kernel {name} not found in the module: {e}")))?;
        let k = Kernel { func, name: name.to_string(), smem_limit: Arc::new(Mutex::new(48 * 1024)), dependent: self.dependent_launch };
        *slot = Some(k.clone());
        Ok(k)
    }

    /// The names of the module's kernels, in module order.
    ///
    /// ```no_run
    /// let gpu = blocktri::cuda::Gpu::shared().expect("a CUDA GPU");
    /// assert!(gpu.module().kernel_names().iter().any(|k| k.starts_with("factor_rows")));
    /// ```
    pub fn kernel_names(&self) -> &[String] {
        &self.names
    }

    /// Compiles every kernel not compiled yet and returns how many kernels the module
    /// has. A container image being built, or a process that will use many kernels, can
    /// call it once to fill the driver's compile cache (`CUDA_CACHE_PATH`): later
    /// processes then load each kernel in milliseconds. One thread does it: the driver
    /// compiles one module at a time (16 threads took 61 s for the crate's kernels, one
    /// thread 49 s; `docs/perf-notes.md` entry 67).
    ///
    /// ```no_run
    /// let gpu = blocktri::cuda::Gpu::shared().expect("a CUDA GPU");
    /// let count = gpu.module().load_all().expect("every kernel compiles");
    /// println!("{count} kernels compiled");
    /// ```
    pub fn load_all(&self) -> Result<usize> {
        for name in &self.names {
            self.kernel(name)?;
        }
        Ok(self.names.len())
    }
}

/// One embedded PTX build as `blocktri-ptx` generates it: the architecture (`sm_90`) and
/// the PTX as one zstd frame.
pub type EmbeddedPtx = (&'static str, &'static [u8]);

/// The PTX text of an embedded build, decompressed on its first use and kept for the rest
/// of the process, as the text was when it was embedded uncompressed: a build is
/// decompressed once however many [`Module`]s load it (~60 ms for the crate's 22 MB of
/// PTX per architecture on the H200 machine, `docs/perf-notes.md` entry 103;
/// [`super::Gpu`] runs it beside the context creation, which hides about half of that).
/// Bytes that are not one zstd frame of text are a [`Error::Format`].
///
/// ```
/// let (arch, packed) = blocktri::ptx::PTX[0];
/// let text = blocktri::cuda::embedded_ptx_text((arch, packed))?;
/// assert!(text.contains(".visible .entry"));
/// // The second call finds the same text.
/// assert!(std::ptr::eq(text, blocktri::cuda::embedded_ptx_text((arch, packed))?));
/// # Ok::<(), blocktri::Error>(())
/// ```
pub fn embedded_ptx_text((arch, packed): EmbeddedPtx) -> Result<&'static str> {
    /// Texts by the address and length of their compressed bytes (static data, so the
    /// list is bounded by the builds a program embeds).
    type Texts = Vec<((usize, usize), &'static str)>;
    static TEXTS: Mutex<Texts> = Mutex::new(Vec::new());
    let key = (packed.as_ptr() as usize, packed.len());
    // The lock is held while decompressing: a second caller of the same build waits for
    // the first instead of decompressing it again.
    let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, text)) = texts.iter().find(|(k, _)| *k == key) {
        return Ok(text);
    }
    let text = blocktri_ptx::decompress(packed)
        .map_err(|e| Error::Format { path: format!("the embedded {arch} PTX"), msg: format!("not a zstd frame of text: {e}") })?;
    let text: &'static str = Box::leak(text.into_boxed_str());
    texts.push((key, text));
    Ok(text)
}

/// Loads (and so JIT-compiles) PTX source into `ctx`.
fn load_ptx(ctx: &Arc<CudaContext>, ptx: &str) -> std::result::Result<Arc<CudaModule>, result::DriverError> {
    with_relaxed_capture(|| ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)))
}

#[cfg(test)]
mod tests {
    use blocktri_ptx::split::{PtxIndex, entry_names};

    /// The crate's own PTX cut by kernel, on the CPU: every kernel's module indexes again,
    /// holds exactly that kernel, and declares every item of the full module it names.
    #[test]
    fn the_crates_ptx_splits_into_self_contained_kernel_modules() {
        for &(arch, packed) in crate::ptx::PTX {
            let ptx = super::embedded_ptx_text((arch, packed)).unwrap();
            let ix = PtxIndex::parse(ptx).unwrap_or_else(|| panic!("the {arch} PTX does not index"));
            let entries: Vec<_> = ix.entries().collect();
            assert_eq!(entry_names(ptx), entries, "{arch}");
            let (mut sorted, mut kernels) = (entries.clone(), crate::ptx::KERNELS.to_vec());
            sorted.sort_unstable();
            kernels.sort_unstable();
            assert_eq!(sorted, kernels, "{arch}");
            let mut total = 0;
            for name in &entries {
                let m = ix.kernel_module(name).unwrap();
                total += m.len();
                let sub = PtxIndex::parse(&m).unwrap_or_else(|| panic!("{arch} {name}: the cut module does not index"));
                assert_eq!(sub.entries().collect::<Vec<_>>(), [*name], "{arch}");
                for ident in ix.items_named_in(&m) {
                    assert!(sub.declares(ident), "{arch} {name}: {ident} is used but not declared");
                }
            }
            // The cut repeats shared device functions, but each kernel compiles alone.
            assert!(total >= ptx.len() / 2, "{arch}: {total} bytes cut from {}", ptx.len());
        }
    }

    /// Bytes that are not a zstd frame are an error naming the build, not a panic.
    #[test]
    fn a_damaged_embedded_build_is_a_format_error() {
        static JUNK: [u8; 8] = *b"not zstd";
        let e = super::embedded_ptx_text(("sm_80", &JUNK)).unwrap_err();
        assert!(matches!(&e, crate::Error::Format { path, .. } if path.contains("sm_80")), "{e}");
    }
}
