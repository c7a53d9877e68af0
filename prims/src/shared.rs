//! Shared memory.
//!
//! *Dynamic* shared memory is sized at launch (`shared_mem_bytes`); every call returns the
//! same base address for the whole block. Above 48 KB per block the host must raise the
//! kernel's `MAX_DYNAMIC_SHARED_SIZE_BYTES` attribute first (up to 227 KB on Hopper).
//!
//! *Static* shared memory ([`static_shared!`](crate::static_shared)) is a fixed-size array
//! declared in the kernel.

/// Base of the block's dynamic shared memory, aligned for `T` (ask for a 16-byte type
/// such as `[f64; 2]` before using 16-byte vector accesses).
///
/// On nvptx64 this is `core::intrinsics::gpu::gpu_launch_sized_workgroup_mem`, i.e. the
/// PTX `.extern .shared .align 16 .b8 name[]` array; loads and stores through it become
/// `ld.shared`/`st.shared` where LLVM can prove the address space. In the emulator it is
/// the block's buffer, filled with `0xff` bytes (NaN for floats) before the block starts so
/// that reads of never-written shared memory show up in results.
///
/// The pointer is valid for `shared_mem_bytes` of the launch; accesses must be
/// synchronised with [`sync_threads`](crate::sync_threads).
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::with_ctx(|c| c.block().shared_base() as *mut T)
    }
}

/// Size in bytes of the dynamic shared memory of this launch.
/// PTX: `mov.u32 %r, %dynamic_smem_size`.
#[inline(always)]
pub fn dynamic_shared_bytes() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let bytes: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {0}, %dynamic_smem_size;", out(reg32) bytes, options(nomem, nostack, pure));
        }
        bytes
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::with_ctx(|c| c.block().shared_len() as u32)
    }
}

/// Declares a fixed-size shared-memory array for the block and evaluates to a `*mut T`
/// to its first element: `static_shared!(f32, 256)`.
///
/// On nvptx64 each expansion site declares its own `.shared .align 16` array (named after
/// a hash of the site) inside the kernel's PTX body. In the emulator the array is carved
/// from a per-block arena, one per site, filled with `0xff` bytes.
#[macro_export]
macro_rules! static_shared {
    ($t:ty, $len:expr) => {{
        const BYTES: usize = ::core::mem::size_of::<$t>() * ($len);
        const SITE: u32 = $crate::shared::site_id(file!(), line!(), column!());
        $crate::shared::__static_shared::<$t, BYTES, SITE>()
    }};
}

/// A 32-bit FNV-1a hash of a source location, naming a `static_shared!` array.
#[doc(hidden)]
pub const fn site_id(file: &str, line: u32, column: u32) -> u32 {
    let bytes = file.as_bytes();
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < bytes.len() {
        h = (h ^ bytes[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    h = (h ^ line).wrapping_mul(0x0100_0193);
    (h ^ column).wrapping_mul(0x0100_0193)
}

#[doc(hidden)]
#[inline(always)]
pub fn __static_shared<T, const BYTES: usize, const SITE: u32>() -> *mut T {
    #[cfg(target_arch = "nvptx64")]
    {
        let p: u64;
        // SAFETY: declares a block-scoped .shared array and converts its address to a
        // generic pointer; the array lives for the whole kernel.
        unsafe {
            core::arch::asm!(
                "{{ .shared .align 16 .b8 __static_smem_{site}[{bytes}]; cvta.shared.u64 {p}, __static_smem_{site}; }}",
                p = out(reg64) p,
                site = const SITE,
                bytes = const BYTES,
                options(nomem, nostack, pure),
            );
        }
        p as *mut T
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::static_shared_site(SITE as usize, BYTES) as *mut T
    }
}
