//! A kernel of your own, in Rust, next to blocktri's: `kernels/` is a `#![no_std]` crate
//! written against `blocktri-prims`, `build.rs` turns it into PTX with `blocktri-ptx`,
//! and this program loads the PTX and launches it with blocktri's typed launch helpers,
//! then checks the result against the CPU (in f64).
//!
//! ```text
//! cargo run --release -p custom-kernel -- [n]
//! ```
//!
//! Without a GPU the same kernel code runs in the CPU block emulator (`blocktri_prims::emu`).
//!
//! ```
//! let (x, y) = (vec![1.0f32; 1000], vec![2.0f32; 1000]);
//! let (y_new, dot) = custom_kernel::emulated(0.5, &x, &y);
//! assert_eq!(y_new[999], 2.5);
//! assert!((custom_kernel::compare(0.5, &x, &y, &y_new, dot).1) < 1e-6);
//! ```

use blocktri::cuda::{DeviceBuffer, Gpu, LaunchConfig, Module};
use blocktri_prims::emu::{self, SyncPtr};
use custom_kernel_kernels::{saxpy_dot, shared_bytes};

/// The example's PTX, embedded by `build.rs`: `PTX: &[(&str, &[u8])]` (architecture, the PTX
/// compressed as one zstd frame) and `KERNELS: &[&str]`.
pub mod ptx {
    include!(concat!(env!("OUT_DIR"), "/custom_kernel_kernels_ptx.rs"));
}
use ptx::PTX;
/// Threads per block of the launches.
pub const THREADS: u32 = 256;

/// `(y_new, dot)` on the GPU: one launch of `saxpy_dot_f32`.
pub fn on_gpu(gpu: &Gpu, a: f32, x: &[f32], y: &[f32]) -> blocktri::Result<(Vec<f32>, f32)> {
    // Load the embedded PTX (the best build for this device) and look the kernel up.
    let module = Module::from_embedded(gpu.context(), PTX, gpu.info().compute_capability)?;
    let kernel = module.kernel("saxpy_dot_f32")?;
    let stream = gpu.stream();
    let (dx, dy) = (DeviceBuffer::from_host(stream, x)?, DeviceBuffer::from_host(stream, y)?);
    let dot = DeviceBuffer::from_host(stream, &[0.0f32])?;
    // A few blocks per multiprocessor; the grid-stride loop covers the rest.
    let blocks = (x.len() as u32).div_ceil(THREADS).min(8 * gpu.info().multiprocessors).max(1);
    let cfg = LaunchConfig::linear(blocks, THREADS, shared_bytes(4) as u32);
    // SAFETY: x and y hold n elements, dot one zeroed element; 256 threads (a multiple
    // of 32) with `shared_bytes` of shared memory, as `saxpy_dot` requires.
    unsafe { kernel.launch(stream, cfg, (a, dx.ptr(), dy.ptr(), dot.ptr(), x.len() as u32))? };
    Ok((dy.to_vec()?, dot.to_vec()?[0]))
}

/// The same kernel in the CPU block emulator.
pub fn emulated(a: f32, x: &[f32], y: &[f32]) -> (Vec<f32>, f32) {
    let mut y = y.to_vec();
    let mut dot = [0.0f32];
    // Kernel arguments are raw pointers; `SyncPtr` lets the emulated threads share them.
    let (xp, yp, dp) = (SyncPtr(x.as_ptr() as *mut f32), SyncPtr(y.as_mut_ptr()), SyncPtr(dot.as_mut_ptr()));
    let n = x.len() as u32;
    emu::launch(4, THREADS, shared_bytes(4), || {
        // SAFETY: as on the GPU: n elements behind x and y, one zeroed dot.
        unsafe { saxpy_dot(a, xp.get(), yp.get(), dp.get(), n) }
    });
    (y, dot[0])
}

/// Compares with the f64 CPU reference: returns `(max |y_new - y_ref|, relative error of
/// dot against sum |x_i y_ref_i|)`.
pub fn compare(a: f32, x: &[f32], y: &[f32], y_new: &[f32], dot: f32) -> (f64, f64) {
    let reference: Vec<f64> = x.iter().zip(y).map(|(&xi, &yi)| (a as f64) * xi as f64 + yi as f64).collect();
    let max_err = y_new.iter().zip(&reference).map(|(&g, &r)| (g as f64 - r).abs()).fold(0.0, f64::max);
    let dot_ref: f64 = x.iter().zip(&reference).map(|(&xi, &r)| xi as f64 * r).sum();
    let scale: f64 = x.iter().zip(&reference).map(|(&xi, &r)| (xi as f64 * r).abs()).sum();
    (max_err, (dot as f64 - dot_ref).abs() / scale.max(f64::MIN_POSITIVE))
}
