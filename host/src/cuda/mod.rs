//! The CUDA side: device and module management ([`Gpu`], [`Module`], [`Kernel`]),
//! device memory ([`DeviceBuffer`]), and the GPU solvers ([`GpuCholesky`],
//! [`MixedCholesky`] (an `f32` factor refined to `f64` accuracy), [`GpuTridiagInverse`]).
//!
//! The driver is loaded at run time (cudarc's dynamic loading): this crate builds and its
//! CPU paths run on machines without CUDA; [`Gpu::new`] then returns [`Error::NoGpu`].
//!
//! [`Error::NoGpu`]: crate::Error::NoGpu

pub(crate) mod arrow;
mod cholesky;
mod context;
mod graph;
mod launch;
mod memory;
mod mixed;
pub(crate) mod transfer;
mod tridiag;

pub use cholesky::{DeviceArray, F32Products, GpuCholesky, GpuOptions, KernelFamily, LaunchTiming};
pub use context::{Gpu, GpuInfo};
pub use context::{MEMORY_LIMIT_ENV, PTX_ARCH_ENV};
pub use graph::Graph;
pub use launch::{
    DEPENDENT_LAUNCH_ENV, DevicePtr, EmbeddedPtx, Kernel, KernelParam, KernelParams, LaunchConfig, MODULE_LOADING_ENV, Module,
    embedded_ptx_text,
};
pub use memory::DeviceBuffer;
pub use mixed::{MixedCholesky, RefineOptions, RefineReport};
pub use transfer::{PinnedBuffer, Plain, host_transfer_bytes, is_page_locked, measure_transfers};
pub(crate) use transfer::{copy_streaming_here, parallel_copy};
pub use tridiag::{GpuTridiagInverse, TridiagJob};

/// A measurement override: the value of the environment variable `var`, where it is set
/// and parses as a `V`.
pub(crate) fn env_override<V: std::str::FromStr>(var: &str) -> Option<V> {
    std::env::var(var).ok().and_then(|v| v.parse().ok())
}
