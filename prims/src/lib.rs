//! GPU device primitives written in plain Rust.
//!
//! Every item compiles two ways:
//! - on `nvptx64-nvidia-cuda` it becomes the PTX instruction named in its docs
//!   (special-register reads, `bar.sync`, `shfl.sync`, `red`/`atom`, `mma.sync`, ...);
//! - on the host it runs inside the block emulator [`emu`], which executes every thread
//!   of a block as a coroutine with real barriers, shared memory, warp exchanges and
//!   atomics. Kernel code written against these primitives can therefore be unit-tested
//!   on a machine without a GPU, barriers and races included.
//!
//! ```
//! use blocktri_prims::{emu, thread_idx_x, block_dim_x, sync_threads, shared::dynamic_shared};
//! let mut out = vec![0u32; 64];
//! let out_ptr = emu::SyncPtr(out.as_mut_ptr());
//! emu::launch(1, 64, 64 * 4, || {
//!     let smem = dynamic_shared::<u32>();
//!     let t = thread_idx_x();
//!     // SAFETY: 64 threads, 64 slots of shared memory, one per thread, then a barrier.
//!     unsafe { *smem.add(t as usize) = t * 10 };
//!     sync_threads();
//!     let mirror = block_dim_x() - 1 - t;
//!     unsafe { *out_ptr.get().add(t as usize) = *smem.add(mirror as usize) };
//! });
//! assert_eq!(out[0], 630);
//! ```
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, asm_experimental_arch, core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod atomic;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
pub mod index;
pub mod memory;
pub mod mma;
#[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
mod panic;
pub mod real;
pub mod shared;
pub mod sync;
pub mod warp;

pub use index::*;
pub use real::Real;
pub use sync::{sync_threads, sync_warp};
