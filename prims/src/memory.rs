//! Global-memory loads with explicit caching behaviour, and asynchronous copies to shared memory.

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

/// Starts an asynchronous copy of 16 bytes from global memory at `src` to shared memory at
/// `dst`, reading only the first `src_bytes` (`0..=16`) and filling the rest with zeros.
/// The copy joins the thread's current group ([`copy_async_commit`]); its data may be read
/// after [`copy_async_wait`] let it complete and a barrier published it to the block.
/// PTX: `cp.async.cg.shared.global [dst], [src], 16, src_bytes` (sm_80+, bypasses L1).
///
/// On the host emulator the copy happens at once.
///
/// # Safety
/// `dst` points into shared memory and `src` into global memory, both 16-byte aligned;
/// `src .. src + src_bytes` is readable. Nobody reads or writes `dst .. dst + 16` until
/// the copy is waited for.
#[inline(always)]
pub unsafe fn copy_async_16(dst: *mut u8, src: *const u8, src_bytes: u32) {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: forwarded from the caller; the generic addresses are converted to the
        // shared and global windows the instruction expects.
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 s, g; cvta.to.shared.u64 s, {0}; cvta.to.global.u64 g, {1}; cp.async.cg.shared.global [s], [g], 16, {2}; }}",
                in(reg64) dst, in(reg64) src, in(reg32) src_bytes,
                options(nostack),
            );
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let n = (src_bytes as usize).min(16);
        // SAFETY: forwarded from the caller (byte copies: no alignment needed here).
        unsafe {
            core::ptr::copy_nonoverlapping(src, dst, n);
            core::ptr::write_bytes(dst.add(n), 0, 16 - n);
        }
    }
}

/// Closes the calling thread's current group of [`copy_async_16`] copies.
/// PTX: `cp.async.commit_group`.
#[inline(always)]
pub fn copy_async_commit() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands.
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack));
    }
}

/// Waits until at most `PENDING` of the calling thread's committed copy groups are still
/// in flight (the older ones are complete). Other threads' copies need a barrier after it.
/// PTX: `cp.async.wait_group PENDING`.
#[inline(always)]
pub fn copy_async_wait<const PENDING: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands besides the immediate.
    unsafe {
        core::arch::asm!("cp.async.wait_group {0};", const PENDING, options(nostack));
    }
}

/// Loads `*ptr` from the device-coherent level of the memory hierarchy (L2), bypassing
/// the multiprocessor's L1: for values that other thread blocks of the same kernel write
/// (made visible by a release/acquire pair such as [`crate::sync::store_release_u32`] and
/// [`crate::sync::load_acquire_u32`]). PTX: `ld.global.cg.b64` / `ld.global.cg.b32`.
///
/// # Safety
/// `ptr` must be valid, aligned and point to global memory; concurrent writers of the
/// value must be ordered before the load (no data race).
#[inline(always)]
pub unsafe fn load_coherent<T: crate::Real>(ptr: *const T) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        if T::BYTES == 8 {
            let bits: u64;
            // SAFETY: forwarded from the caller. Not `pure`: the value may change between
            // two loads of the same address (other blocks write it).
            unsafe {
                core::arch::asm!("ld.global.cg.b64 {0}, [{1}];", out(reg64) bits, in(reg64) ptr, options(readonly, nostack));
                core::mem::transmute_copy::<u64, T>(&bits)
            }
        } else {
            let bits: u32;
            // SAFETY: as above.
            unsafe {
                core::arch::asm!("ld.global.cg.b32 {0}, [{1}];", out(reg32) bits, in(reg64) ptr, options(readonly, nostack));
                core::mem::transmute_copy::<u32, T>(&bits)
            }
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: forwarded from the caller.
        unsafe { core::ptr::read_volatile(ptr) }
    }
}
