//! What an engine hands the executor: the launch sequence of a factorization or a solve as
//! a list of [`Step`]s over the plan's buffers. The executor enqueues them directly,
//! captures them into a graph, or times them one by one ([`super::GpuCholesky::profile`]),
//! without knowing which engine made them.
//!
//! A schedule may run part of its work beside the rest: [`Step::Side`] steps go to one of
//! two more streams ([`Lane`]), which waits where a [`Step::Fork`] of its lane says and is
//! waited for at a [`Step::Join`] of its lane (in a captured graph, more branches). Every
//! such list is also correct run in list order on one stream, which is what happens
//! without side streams ([`Lanes`]).

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

/// The side streams of a schedule: each its own order, forked from and joined to the
/// main stream independently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lane {
    /// Work that runs beside the rest of a factorization: the tiled engine's inverse steps
    /// and, in a factor + solve call, the forward sweep of the levels already factored.
    Side,
    /// The top levels' column look-ahead of the tiled engine (its join must not wait for
    /// the side lane's long forward sweeps).
    Ahead,
}

impl Lane {
    /// Both lanes, in [`Lanes::side`]'s order.
    pub(super) const ALL: [Lane; 2] = [Lane::Side, Lane::Ahead];

    pub(super) fn index(self) -> usize {
        self as usize
    }
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
    /// The lane's stream waits for everything enqueued on the main stream so far.
    Fork(Lane),
    /// A step on the lane's stream, in order with the lane's other steps.
    Side(Lane, Box<Step<'k, T>>),
    /// The main stream waits for everything enqueued on the lane's stream so far.
    Join(Lane),
}

/// The streams a schedule runs on: `main`, and `side[lane]` for [`Step::Side`] (without
/// one, that lane's steps run on `main` in list order, which keeps every dependency).
#[derive(Clone, Copy)]
pub(super) struct Lanes<'s> {
    pub main: &'s CudaStream,
    pub side: [Option<&'s CudaStream>; 2],
}

impl<'s> Lanes<'s> {
    /// Everything on one stream.
    pub fn single(main: &'s CudaStream) -> Self {
        Lanes { main, side: [None; 2] }
    }

    fn lane(&self, lane: Lane) -> Option<&'s CudaStream> {
        self.side[lane.index()]
    }
}

impl<T: Scalar> Step<'_, T> {
    /// The lane whose stream the step needs beside the main one, if any.
    pub(super) fn forks(&self) -> Option<Lane> {
        match self {
            Step::Fork(lane) => Some(*lane),
            _ => None,
        }
    }

    /// Enqueues the step on its stream of `lanes`.
    ///
    /// # Safety
    /// The step was built by an engine from the buffers of a live plan for this shape, so
    /// every pointer in its arguments is a device allocation of the size the kernel's
    /// contract names, and the grid and shared memory follow that contract; the buffers
    /// outlive the stream work. Its list puts every [`Step::Side`] after a [`Step::Fork`]
    /// of its lane that orders it behind what it reads, and a [`Step::Join`] of its lane
    /// before whatever reads what it writes.
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
            Step::Fork(lane) => Ok(lanes.lane(lane).map_or(Ok(()), |side| side.join(stream))?),
            Step::Join(lane) => Ok(lanes.lane(lane).map_or(Ok(()), |side| stream.join(side))?),
            // SAFETY: as for this step (the caller's contract covers the inner one).
            Step::Side(lane, ref step) => unsafe { step.enqueue(Lanes::single(lanes.lane(lane).unwrap_or(stream))) },
        }
    }

    /// The kernel's shared memory, raised before any capture (setting a function attribute
    /// is not a stream operation).
    pub(super) fn reserve_shared(&self) -> Result<()> {
        match self {
            Step::Launch { kernel, cfg, .. } => kernel.reserve_shared(cfg.shared_bytes),
            Step::Side(_, step) => step.reserve_shared(),
            Step::ResetStatus { .. } | Step::ClearFlags { .. } | Step::Fork(_) | Step::Join(_) => Ok(()),
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
