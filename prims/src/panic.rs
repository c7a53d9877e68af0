//! A panic handler for kernels: a Rust panic on the GPU executes `trap`, which aborts the
//! kernel and makes the launch (or the next synchronisation) return
//! `CUDA_ERROR_LAUNCH_FAILED` on the host. Nothing is printed: formatting machinery would
//! bloat every kernel.

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` has no preconditions; it ends the thread's kernel.
    unsafe { core::arch::nvptx::trap() }
}
