//! Atomics on global or shared memory (generic addressing), relaxed ordering.
//!
//! Scopes: `_block` functions are atomic among the threads of one block (`.cta`), the
//! others among all threads of the device (`.gpu`). Float adds whose result is not used
//! become `red` (no return value); the others become `atom`.
//!
//! In the emulator every atomic is a sequentially consistent CPU atomic on the same
//! address (a compare-and-swap loop for floats).

#[cfg(not(target_arch = "nvptx64"))]
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

macro_rules! float_red {
    ($(#[$doc:meta])* $name:ident, $t:ty, $bits:ty, $atomic:ident, $ptx:literal, $reg:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` must be valid, aligned, and point to global or shared memory that every
        /// concurrent accessor reaches through atomics only.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, value: $t) {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: forwarded from the caller.
            unsafe {
                core::arch::asm!($ptx, in(reg64) ptr, in($reg) value, options(nostack));
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                // SAFETY: forwarded from the caller (valid and aligned).
                let cell = unsafe { $atomic::from_ptr(ptr as *mut $bits) };
                let _ = cell.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| {
                    Some((<$t>::from_bits(old) + value).to_bits())
                });
            }
        }
    };
}

float_red!(
    /// `*ptr += value`, device scope. PTX: `red.relaxed.gpu.add.f64 [ptr], value`.
    atomic_add_f64, f64, u64, AtomicU64, "red.relaxed.gpu.add.f64 [{0}], {1};", reg64
);
float_red!(
    /// `*ptr += value`, device scope. PTX: `red.relaxed.gpu.add.f32 [ptr], value`.
    atomic_add_f32, f32, u32, AtomicU32, "red.relaxed.gpu.add.f32 [{0}], {1};", reg32
);
float_red!(
    /// `*ptr += value` on global memory, device scope, without the generic-address
    /// space check. PTX: `red.relaxed.gpu.global.add.f64 [ptr], value`.
    atomic_add_global_f64, f64, u64, AtomicU64, "red.relaxed.gpu.global.add.f64 [{0}], {1};", reg64
);
float_red!(
    /// `*ptr += value` on global memory, device scope. PTX: `red.relaxed.gpu.global.add.f32`.
    atomic_add_global_f32, f32, u32, AtomicU32, "red.relaxed.gpu.global.add.f32 [{0}], {1};", reg32
);
float_red!(
    /// `*ptr += value`, block scope. PTX: `red.relaxed.cta.add.f64 [ptr], value`.
    atomic_add_f64_block, f64, u64, AtomicU64, "red.relaxed.cta.add.f64 [{0}], {1};", reg64
);
float_red!(
    /// `*ptr += value`, block scope. PTX: `red.relaxed.cta.add.f32 [ptr], value`.
    atomic_add_f32_block, f32, u32, AtomicU32, "red.relaxed.cta.add.f32 [{0}], {1};", reg32
);

macro_rules! int_atom {
    ($(#[$doc:meta])* $name:ident, $t:ty, $atomic:ident, $method:ident, $ptx:literal, $reg:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `ptr` must be valid, aligned, and point to global or shared memory that every
        /// concurrent accessor reaches through atomics only.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, value: $t) -> $t {
            #[cfg(target_arch = "nvptx64")]
            {
                let old: $t;
                // SAFETY: forwarded from the caller.
                unsafe {
                    core::arch::asm!($ptx, out($reg) old, in(reg64) ptr, in($reg) value, options(nostack));
                }
                old
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                // SAFETY: forwarded from the caller (valid and aligned).
                unsafe { $atomic::from_ptr(ptr) }.$method(value, Ordering::SeqCst)
            }
        }
    };
}

int_atom!(
    /// `old = *ptr; *ptr = min(old, value)`, device scope; returns `old`.
    /// PTX: `atom.relaxed.gpu.min.u64`.
    atomic_min_u64, u64, AtomicU64, fetch_min, "atom.relaxed.gpu.min.u64 {0}, [{1}], {2};", reg64
);
int_atom!(
    /// `old = *ptr; *ptr = max(old, value)`, device scope; returns `old`.
    /// PTX: `atom.relaxed.gpu.max.u64`.
    atomic_max_u64, u64, AtomicU64, fetch_max, "atom.relaxed.gpu.max.u64 {0}, [{1}], {2};", reg64
);
int_atom!(
    /// `old = *ptr; *ptr = min(old, value)`, device scope; returns `old`.
    /// PTX: `atom.relaxed.gpu.min.u32`.
    atomic_min_u32, u32, AtomicU32, fetch_min, "atom.relaxed.gpu.min.u32 {0}, [{1}], {2};", reg32
);
int_atom!(
    /// `old = *ptr; *ptr = max(old, value)`, device scope; returns `old`.
    /// PTX: `atom.relaxed.gpu.max.u32`.
    atomic_max_u32, u32, AtomicU32, fetch_max, "atom.relaxed.gpu.max.u32 {0}, [{1}], {2};", reg32
);
int_atom!(
    /// `old = *ptr; *ptr = old + value` (wrapping), device scope; returns `old`.
    /// PTX: `atom.relaxed.gpu.add.u32`.
    atomic_add_u32, u32, AtomicU32, fetch_add, "atom.relaxed.gpu.add.u32 {0}, [{1}], {2};", reg32
);
