//! Global-memory loads with explicit caching behaviour.

/// Loads `*ptr` through the read-only (non-coherent) data cache.
/// PTX: `ld.global.nc.b64` / `ld.global.nc.b32`.
///
/// # Safety
/// `ptr` must be valid, aligned, point to global memory, and the value must not be
/// written by any thread while the kernel runs (the cache is not kept coherent).
#[inline(always)]
pub unsafe fn load_readonly<T: crate::Real>(ptr: *const T) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        if T::BYTES == 8 {
            let bits: u64;
            // SAFETY: forwarded from the caller.
            unsafe {
                core::arch::asm!("ld.global.nc.b64 {0}, [{1}];", out(reg64) bits, in(reg64) ptr, options(pure, readonly, nostack));
                core::mem::transmute_copy::<u64, T>(&bits)
            }
        } else {
            let bits: u32;
            // SAFETY: forwarded from the caller.
            unsafe {
                core::arch::asm!("ld.global.nc.b32 {0}, [{1}];", out(reg32) bits, in(reg64) ptr, options(pure, readonly, nostack));
                core::mem::transmute_copy::<u32, T>(&bits)
            }
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: forwarded from the caller.
        unsafe { *ptr }
    }
}
