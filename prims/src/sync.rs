//! Barriers.

/// Block-wide barrier: waits until every thread of the block arrives, and orders the
/// shared- and global-memory accesses before it against those after it, for the block.
/// PTX: `bar.sync 0` (`__syncthreads`).
///
/// Every non-exited thread of the block must reach the same barrier; the emulator,
/// like the hardware, counts exited threads as arrived.
#[inline(always)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a block-wide barrier; callers keep it in uniform control flow.
    unsafe {
        core::arch::nvptx::_syncthreads()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::wait_block();
}

/// Warp-wide barrier over all 32 lanes, with memory ordering among them.
/// PTX: `bar.warp.sync 0xffffffff` (`__syncwarp`).
#[inline(always)]
pub fn sync_warp() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: all lanes of the warp execute it (full mask).
    unsafe {
        core::arch::asm!("bar.warp.sync 0xffffffff;", options(nostack))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::wait_warp();
}

/// Memory fence at device scope: orders this thread's writes before later ones as seen
/// by every thread on the GPU. PTX: `fence.acq_rel.gpu` (`__threadfence`).
#[inline(always)]
pub fn fence_device() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence has no preconditions.
    unsafe {
        core::arch::asm!("fence.acq_rel.gpu;", options(nostack))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Loads a flag with acquire semantics at device scope: the writes that the flag's
/// writer made before its release ([`store_release_u32`]) are visible to this thread
/// afterwards. PTX: `ld.acquire.gpu.global.u32`.
///
/// # Safety
/// `ptr` must be valid, 4-byte aligned and point to global memory.
#[inline(always)]
pub unsafe fn load_acquire_u32(ptr: *const u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let v: u32;
        // SAFETY: forwarded from the caller.
        unsafe { core::arch::asm!("ld.acquire.gpu.global.u32 {0}, [{1}];", out(reg32) v, in(reg64) ptr, options(nostack)) };
        v
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: forwarded from the caller (valid and aligned).
        unsafe { std::sync::atomic::AtomicU32::from_ptr(ptr as *mut u32) }.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// Stores a flag with release semantics at device scope: every write this thread made
/// before (and, through an earlier block barrier, its block's) is visible to a thread
/// that reads the flag with [`load_acquire_u32`]. PTX: `st.release.gpu.global.u32`.
///
/// # Safety
/// `ptr` must be valid, 4-byte aligned and point to global memory.
#[inline(always)]
pub unsafe fn store_release_u32(ptr: *mut u32, value: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: forwarded from the caller.
    unsafe {
        core::arch::asm!("st.release.gpu.global.u32 [{0}], {1};", in(reg64) ptr, in(reg32) value, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: forwarded from the caller (valid and aligned).
    unsafe { std::sync::atomic::AtomicU32::from_ptr(ptr) }.store(value, std::sync::atomic::Ordering::Release);
}

/// Suspends the thread for about `ns` nanoseconds (a polite spin-wait step, so that
/// waiting warps leave issue slots to the warps they wait for). PTX: `nanosleep.u32`
/// (sm_70+); a yield in the emulator.
#[inline(always)]
pub fn sleep_ns(ns: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no memory operands.
    unsafe {
        core::arch::asm!("nanosleep.u32 {0};", in(reg32) ns, options(nomem, nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = ns;
        std::thread::yield_now();
    }
}

/// The start of a kernel that may have been launched before the previous kernel of its
/// stream finished (programmatic dependent launch, sm_90): waits until every kernel this
/// one depends on has completed and its writes are visible (`griddepcontrol.wait`).
///
/// Every thread of every kernel that the host launches with the programmatic attribute
/// must call it before its first access to global memory, and before any return: a kernel
/// that returned without waiting could complete before its predecessor, and its successor
/// would then wait for too little. A no-op for kernels launched without the attribute,
/// in builds for architectures before sm_90 (whose kernels the host never launches that
/// way), and in the emulator (whose launches run one after another).
///
/// There is no early `griddepcontrol.launch_dependents`: the next kernel launches as this
/// one's blocks exit, and waits here for the memory flush. An early trigger let the next
/// kernel's blocks sit beside this one's and cost the tiled solve 3 % at n = 256, where
/// the exit-time trigger gained as much (`docs/perf-notes.md`, entry 56).
#[inline(always)]
pub fn kernel_prologue() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    // SAFETY: no operands; `griddepcontrol` is valid on sm_90 and later, which this build
    // targets. Not `nomem`: the wait must order every later memory access after it.
    unsafe {
        core::arch::asm!("griddepcontrol.wait;", options(nostack))
    };
}
