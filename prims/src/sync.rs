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
    crate::emu::with_ctx(|c| c.block().barrier.wait());
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
    crate::emu::with_ctx(|c| c.warp().barrier.wait());
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
