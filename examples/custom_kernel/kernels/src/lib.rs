//! A fused SAXPY + dot product: `y <- a x + y` and `dot += x . y` (with the new `y`) in
//! one pass over memory, written against `blocktri-prims`.
//!
//! Each thread walks the vectors with a grid-stride loop and keeps a partial sum; the
//! partials are reduced with warp shuffles ([`warp_sum`]), one value per warp goes to
//! shared memory, warp 0 reduces those, and one atomic add per block reaches `dot`.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use blocktri_prims::shared::dynamic_shared;
use blocktri_prims::warp::warp_sum;
use blocktri_prims::{Real, block_dim_x, block_idx_x, grid_dim_x, lane_id, sync_threads, thread_idx_x, warp_id};

/// Dynamic shared memory [`saxpy_dot`] needs per block: one value per warp.
pub const fn shared_bytes(elem_bytes: usize) -> usize {
    32 * elem_bytes
}

/// `y[i] = a x[i] + y[i]` for `i < n`, then `*dot += sum_i x[i] y[i]`.
///
/// # Safety
/// `x` and `y` hold `n` elements on the device and `dot` one (zeroed by the caller before
/// the first block runs); the block size is a multiple of 32, at most 1024, with
/// [`shared_bytes`] of dynamic shared memory.
pub unsafe fn saxpy_dot<T: Real>(a: T, x: *const T, y: *mut T, dot: *mut T, n: u32) {
    let stride = (grid_dim_x() * block_dim_x()) as usize;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    let mut partial = T::ZERO;
    while i < n as usize {
        // SAFETY: i < n, inside both vectors (caller's contract).
        unsafe {
            let xi = *x.add(i);
            let yi = a.mul_add(xi, *y.add(i));
            *y.add(i) = yi;
            partial = xi.mul_add(yi, partial);
        }
        i += stride;
    }
    // Warp partials -> shared memory -> warp 0 -> one atomic per block.
    let per_warp = dynamic_shared::<T>();
    let warp_total = warp_sum(partial);
    if lane_id() == 0 {
        // SAFETY: at most 32 warps per block, `shared_bytes` reserved for 32 values.
        unsafe { *per_warp.add(warp_id() as usize) = warp_total };
    }
    sync_threads();
    if warp_id() == 0 {
        let warps = block_dim_x().div_ceil(32);
        // SAFETY: slots 0..warps were written before the barrier.
        let v = if lane_id() < warps { unsafe { *per_warp.add(lane_id() as usize) } } else { T::ZERO };
        let block_total = warp_sum(v);
        if lane_id() == 0 {
            // SAFETY: `dot` is one element of global memory (caller's contract).
            unsafe { T::atomic_add_global(dot, block_total) };
        }
    }
}

/// The exported entry points: `saxpy_dot_f32` and `saxpy_dot_f64` in the PTX.
#[cfg(target_arch = "nvptx64")]
mod entry {
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn saxpy_dot_f32(a: f32, x: *const f32, y: *mut f32, dot: *mut f32, n: u32) {
        // SAFETY: the host launches it as `saxpy_dot` requires.
        unsafe { super::saxpy_dot(a, x, y, dot, n) }
    }

    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn saxpy_dot_f64(a: f64, x: *const f64, y: *mut f64, dot: *mut f64, n: u32) {
        // SAFETY: as above.
        unsafe { super::saxpy_dot(a, x, y, dot, n) }
    }
}
