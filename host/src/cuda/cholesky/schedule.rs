//! What an engine hands the executor: the launch sequence of a factorization or a solve as
//! a list of [`Step`]s over the plan's buffers. The executor enqueues them directly,
//! captures them into a graph, or times them one by one ([`super::GpuCholesky::profile`]),
//! without knowing which engine made them.
//!
//! A schedule may run part of its work beside the rest: [`Step::Side`] steps go to a
//! second stream that waits where a [`Step::Fork`] says and is waited for at a
//! [`Step::Join`] (in a captured graph, two branches). Every such list is also correct run
//! in list order on one stream, which is what happens without a side stream ([`Lanes`]).

use super::super::launch::{Kernel, LaunchConfig};
use crate::error::Result;
use crate::scalar::Scalar;
use blocktri_device::level::{FactorArgs, SolveArgs};
use blocktri_device::tiled::TiledArgs;
use blocktri_device::tiled::factor::RoundingInput;
use cudarc::driver::{CudaStream, result};

/// The arguments of a launch (an argument struct by value, with a second one for the
/// rounding `prep`).
#[derive(Clone, Copy, Debug)]
pub(super) enum Args<T> {
    Factor(FactorArgs<T>),
    Solve(SolveArgs<T>),
    Tiled(TiledArgs<T>),
    /// The tiled `prep` of an `f32` plan that rounds an `f64` matrix (mixed precision).
    TiledRounding(TiledArgs<T>, RoundingInput),
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
    /// The side stream waits for everything enqueued on the main stream so far.
    Fork,
    /// A step on the side stream, in order with the side's other steps.
    Side(Box<Step<'k, T>>),
    /// The main stream waits for everything enqueued on the side stream so far.
    Join,
}

/// The streams a schedule runs on: `main`, and `side` for [`Step::Side`] (without one,
/// side steps run on `main` in list order, which keeps every dependency).
#[derive(Clone, Copy)]
pub(super) struct Lanes<'s> {
    pub main: &'s CudaStream,
    pub side: Option<&'s CudaStream>,
}

impl<'s> Lanes<'s> {
    /// Everything on one stream.
    pub fn single(main: &'s CudaStream) -> Self {
        Lanes { main, side: None }
    }
}

impl<T: Scalar> Step<'_, T> {
    /// Whether the step needs a side stream to run beside the main one.
    pub(super) fn forks(&self) -> bool {
        matches!(self, Step::Fork)
    }

    /// Enqueues the step on its stream of `lanes`.
    ///
    /// # Safety
    /// The step was built by an engine from the buffers of a live plan for this shape, so
    /// every pointer in its arguments is a device allocation of the size the kernel's
    /// contract names, and the grid and shared memory follow that contract; the buffers
    /// outlive the stream work. Its list puts every [`Step::Side`] after a [`Step::Fork`]
    /// that orders it behind what it reads, and a [`Step::Join`] before whatever reads
    /// what it writes.
    pub(super) unsafe fn enqueue(&self, lanes: Lanes<'_>) -> Result<()> {
        let stream = lanes.main;
        match *self {
            Step::Launch { kernel, cfg, args, .. } => unsafe {
                match args {
                    Args::Factor(a) => kernel.launch(stream, cfg, (a,)),
                    Args::Solve(a) => kernel.launch(stream, cfg, (a,)),
                    Args::Tiled(a) => kernel.launch(stream, cfg, (a,)),
                    Args::TiledRounding(a, input) => kernel.launch(stream, cfg, (a, input)),
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
            Step::Fork => Ok(lanes.side.map_or(Ok(()), |side| side.join(stream))?),
            Step::Join => Ok(lanes.side.map_or(Ok(()), |side| stream.join(side))?),
            // SAFETY: as for this step (the caller's contract covers the inner one).
            Step::Side(ref step) => unsafe { step.enqueue(Lanes::single(lanes.side.unwrap_or(stream))) },
        }
    }

    /// The kernel's shared memory, raised before any capture (setting a function attribute
    /// is not a stream operation).
    pub(super) fn reserve_shared(&self) -> Result<()> {
        match self {
            Step::Launch { kernel, cfg, .. } => kernel.reserve_shared(cfg.shared_bytes),
            Step::Side(step) => step.reserve_shared(),
            Step::ResetStatus { .. } | Step::ClearFlags { .. } | Step::Fork | Step::Join => Ok(()),
        }
    }
}

/// Enqueues every step in order.
///
/// # Safety
/// As [`Step::enqueue`] for each step.
pub(super) unsafe fn enqueue_all<T: Scalar>(steps: &[Step<'_, T>], lanes: Lanes<'_>) -> Result<()> {
    for step in steps {
        step.reserve_shared()?;
    }
    for step in steps {
        unsafe { step.enqueue(lanes)? };
    }
    Ok(())
}
