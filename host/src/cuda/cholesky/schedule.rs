//! What an engine hands the executor: the launch sequence of a factorization or a solve as
//! a list of [`Step`]s over the plan's buffers. The executor enqueues them directly,
//! captures them into a graph, or times them one by one ([`super::GpuCholesky::profile`]),
//! without knowing which engine made them.

use super::super::launch::{Kernel, LaunchConfig};
use crate::error::Result;
use crate::scalar::Scalar;
use blocktri_device::level::{FactorArgs, SolveArgs};
use blocktri_device::tiled::TiledArgs;
use cudarc::driver::{CudaStream, result};

/// The argument struct of a launch (each kernel takes one by value).
#[derive(Clone, Copy, Debug)]
pub(super) enum Args<T> {
    Factor(FactorArgs<T>),
    Solve(SolveArgs<T>),
    Tiled(TiledArgs<T>),
}

/// One stream operation of a schedule.
#[derive(Clone, Debug)]
pub(super) enum Step<'k, T> {
    /// A kernel launch on `level`.
    Launch { kernel: &'k Kernel, level: u32, cfg: LaunchConfig, args: Args<T> },
    /// Sets `systems` status words at device address `addr` to `INFO_OK` (all bits set).
    ResetStatus { addr: u64, systems: usize },
    /// Zeroes `words` flag words at device address `addr` (a single-launch sweep's ticket
    /// counter and completion flags).
    ClearFlags { addr: u64, words: usize },
}

impl<T: Scalar> Step<'_, T> {
    /// Enqueues the step on `stream`.
    ///
    /// # Safety
    /// The step was built by an engine from the buffers of a live plan for this shape, so
    /// every pointer in its arguments is a device allocation of the size the kernel's
    /// contract names, and the grid and shared memory follow that contract; the buffers
    /// outlive the stream work.
    pub(super) unsafe fn enqueue(&self, stream: &CudaStream) -> Result<()> {
        match *self {
            Step::Launch { kernel, cfg, args, .. } => unsafe {
                match args {
                    Args::Factor(a) => kernel.launch(stream, cfg, (a,)),
                    Args::Solve(a) => kernel.launch(stream, cfg, (a,)),
                    Args::Tiled(a) => kernel.launch(stream, cfg, (a,)),
                }
            },
            Step::ResetStatus { addr, systems } => {
                // SAFETY: `addr` holds `systems` u64 status words (caller's contract).
                unsafe { result::memset_d8_async(addr, 0xff, systems * 8, stream.cu_stream())? };
                Ok(())
            }
            Step::ClearFlags { addr, words } => {
                // SAFETY: `addr` holds `words` u32 flags (caller's contract).
                unsafe { result::memset_d8_async(addr, 0, words * 4, stream.cu_stream())? };
                Ok(())
            }
        }
    }

    /// The kernel's shared memory, raised before any capture (setting a function attribute
    /// is not a stream operation).
    pub(super) fn reserve_shared(&self) -> Result<()> {
        match self {
            Step::Launch { kernel, cfg, .. } => kernel.reserve_shared(cfg.shared_bytes),
            Step::ResetStatus { .. } | Step::ClearFlags { .. } => Ok(()),
        }
    }
}

/// Enqueues every step in order.
///
/// # Safety
/// As [`Step::enqueue`] for each step.
pub(super) unsafe fn enqueue_all<T: Scalar>(steps: &[Step<'_, T>], stream: &CudaStream) -> Result<()> {
    for step in steps {
        step.reserve_shared()?;
    }
    for step in steps {
        unsafe { step.enqueue(stream)? };
    }
    Ok(())
}
