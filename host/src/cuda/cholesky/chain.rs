//! The chain engine (`blocktri_device::chain`): each system's blocks eliminated in natural
//! order, one launch for the factorization, one per solve sweep. The factor runs a group of
//! lanes per system for `n <= 16` (the blocks' rows in registers; 2-8 systems per warp), one thread block per system
//! with 8-column strips and tensor-core tiles for `n <= 64`, and the generic block-per-system
//! kernel above (which also interlaces the forward substitution where it fits); the solves
//! run a lane group per system for `n <= 32`, one block above. All write the same storage.
//! Sequential block Cholesky does 2.7x fewer flops than nested dissection and needs no
//! atomics, but one system runs on one SM: it pays where the batch alone fills the GPU
//! ([`prefers_chain`]).

use super::schedule::{Args, Step};
use super::{Buffers, KernelFamily, SolveArgs, SolveTarget};
use crate::cuda::context::Gpu;
use crate::cuda::launch::{Kernel, LaunchConfig};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use blocktri_device::chain::{
    CHAIN_INVERSE_SIZE, CHAIN_ROWS_WARPS, chain_rows_systems_per_block, chain_strip_size, chain_strip_threads, chain_threads,
    factor_chain_rows_shared_bytes, factor_chain_shared_bytes, factor_chain_strips_shared_bytes, solve_chain_shared_bytes,
};
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::level::row_size;

/// Systems per multiprocessor from which [`KernelFamily::Auto`] runs the chain engine for
/// block size `n`: below it, nested dissection's parallelism inside each system is worth
/// its extra flops. Measured factor + solve against nested dissection with `N = 64`
/// (`docs/perf-notes.md`):
/// - `n <= 16` (register-resident factor and solves, a lane group per system, entry 32):
///   at 3 per SM 0.91x-1.25x as fast, at 4 per SM 1.13x-1.54x (f64 and f32);
/// - `16 < n <= 32` (strip-blocked factor, register-resident solves, entry 31, f64): at 1
///   per SM 0.63x-0.71x, at 2 per SM 1.11x-1.24x, at 4 per SM 1.9x-2.1x;
/// - `32 < n <= 64` (strip-blocked factor with inverted diagonal blocks, product-only
///   solves, entry 31, f64 and f32): at 1 per SM already 1.2x-1.4x.
fn chain_systems_per_sm(n: usize) -> usize {
    match n {
        0..=16 => 4,
        17..=32 => 2,
        _ => 1,
    }
}

/// Largest block size `Auto` runs on the chain engine: the strip-blocked factor's limit;
/// above, the generic chain factor measured no faster than nested dissection
/// (`docs/perf-notes.md`, entry 10).
pub(super) const CHAIN_AUTO_MAX_N: usize = 64;

/// Largest block size the chain kernels take with `smem` bytes of shared memory per block
/// (factor without interlaced columns, solve one column per pass).
pub(super) fn max_chain_block(smem: u32, elem_bytes: usize) -> usize {
    let fits = |n: usize| factor_chain_shared_bytes(n, 0, elem_bytes).max(solve_chain_shared_bytes(n, 1, elem_bytes)) <= smem as usize;
    (1..=512).take_while(|&n| fits(n)).last().unwrap_or(0)
}

/// Whether `family` runs a batch of `systems` systems of block size `n` on the chain
/// engine, on a device with `multiprocessors` SMs and `smem` bytes of shared memory per
/// block. `Auto` picks it for batches of at least [`chain_systems_per_sm`] systems per SM
/// with blocks up to [`CHAIN_AUTO_MAX_N`]; `Chain` insists (an error when the blocks do not
/// fit in shared memory).
pub(super) fn prefers_chain(family: KernelFamily, systems: usize, n: usize, multiprocessors: u32, smem: u32, elem: usize) -> Result<bool> {
    Ok(match family {
        KernelFamily::Chain => {
            let max = max_chain_block(smem, elem);
            if n > max {
                return Err(Error::Unsupported(format!("the chain kernels support n <= {max} on this device, got n = {n}")));
            }
            true
        }
        KernelFamily::Auto => n <= CHAIN_AUTO_MAX_N && systems >= chain_systems_per_sm(n) * multiprocessors as usize,
        _ => false,
    })
}

/// Which factor kernel the chain engine runs for block size `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChainFactor {
    /// One warp per system, the blocks' rows in registers (padded size `4..=16`).
    Rows(usize),
    /// One block per system, 8-column strips with tensor-core tiles (padded size 32 or 64).
    Strips(usize),
    /// One block per system, the generic shared-memory tile routines (any `n` that fits).
    Generic,
}

impl ChainFactor {
    /// The factor for block size `n`: the register-resident one up to
    /// [`CHAIN_ROWS_FACTOR_MAX_N`], the strip-blocked one up to 64, the generic one above.
    pub(super) fn for_block(n: usize) -> Self {
        match (row_size(n), chain_strip_size(n)) {
            (Some(np), _) if n <= CHAIN_ROWS_FACTOR_MAX_N => Self::Rows(np),
            (_, Some(np)) => Self::Strips(np),
            _ => Self::Generic,
        }
    }
}

/// Largest block size whose chain factor runs a lane group per system: at `n = 32` the f64
/// rows spill (52 µs per step, `docs/perf-notes.md` entry 10), and from `n = 17` the
/// strip-blocked factor takes over (entry 31).
const CHAIN_ROWS_FACTOR_MAX_N: usize = 16;

/// A chain kernel with its launch shape: systems per block (1, or
/// [`chain_rows_systems_per_block`] for the register-resident kernels), threads.
#[derive(Debug)]
struct ChainKernel {
    kernel: Kernel,
    systems_per_block: u32,
    threads: u32,
}

impl ChainKernel {
    /// Blocks of a launch over `systems` systems.
    fn grid(&self, systems: usize) -> u32 {
        systems.div_ceil(self.systems_per_block as usize) as u32
    }
}

/// The chain engine of one plan: the factor of [`ChainFactor::for_block`]; the solves one
/// warp per system (`n <= 32`, the blocks' rows in registers) or one block per system
/// (after the strip factor at padded size 64 with the inverses it writes, else the generic ones).
#[derive(Debug)]
pub(super) struct Chain {
    factor_kind: ChainFactor,
    factor: ChainKernel,
    /// The register-resident factor with the interlaced forward substitution.
    factor_solve: Option<ChainKernel>,
    forward: ChainKernel,
    backward: ChainKernel,
    max_shared: u32,
    rhs_chunk: u32,
    /// The padded size of the register-resident solves, when they run.
    rows: Option<usize>,
}

impl Chain {
    /// Loads the chain kernels for `T` and block size `n`.
    pub(super) fn new<T: Scalar>(gpu: &Gpu, n: usize, rhs_chunk: u32) -> Result<Self> {
        let k = |name: &str| gpu.kernel(kernel_name::<T>(name).as_str());
        let warps =
            |kernel, np| ChainKernel { kernel, systems_per_block: chain_rows_systems_per_block(np), threads: 32 * CHAIN_ROWS_WARPS };
        let blocks = |kernel, threads| ChainKernel { kernel, systems_per_block: 1, threads };
        let factor_kind = ChainFactor::for_block(n);
        let factor = match factor_kind {
            ChainFactor::Rows(np) => warps(k(&format!("{}{np}", names::FACTOR_CHAIN_ROWS))?, np),
            ChainFactor::Strips(np) => blocks(k(&format!("{}{np}", names::FACTOR_CHAIN_STRIPS))?, chain_strip_threads(np)),
            ChainFactor::Generic => blocks(k(names::FACTOR_CHAIN)?, chain_threads(n)),
        };
        let factor_solve = match factor_kind {
            ChainFactor::Rows(np) => Some(warps(k(&format!("{}{np}", names::FACTOR_SOLVE_CHAIN_ROWS))?, np)),
            _ => None,
        };
        let rows = row_size(n);
        // The strip factor at padded size 64 (n > 32: no register-resident solves) writes
        // the inverted diagonal blocks the inverse solves read.
        let inverse = factor_kind == ChainFactor::Strips(CHAIN_INVERSE_SIZE);
        let threads = chain_threads(n);
        let (forward, backward) = match rows {
            Some(np) => (
                warps(k(&format!("{}{np}", names::SOLVE_FORWARD_CHAIN_ROWS))?, np),
                warps(k(&format!("{}{np}", names::SOLVE_BACKWARD_CHAIN_ROWS))?, np),
            ),
            None if inverse => {
                (blocks(k(names::SOLVE_FORWARD_CHAIN_INVERSE)?, threads), blocks(k(names::SOLVE_BACKWARD_CHAIN_INVERSE)?, threads))
            }
            None => (blocks(k(names::SOLVE_FORWARD_CHAIN)?, threads), blocks(k(names::SOLVE_BACKWARD_CHAIN)?, threads)),
        };
        Ok(Chain { factor_kind, factor, factor_solve, forward, backward, max_shared: gpu.info().max_shared_per_block, rhs_chunk, rows })
    }

    /// Whether the factor kernel can also do the forward substitution of `nrhs` columns:
    /// the register-resident one for one column (carried in a register; more would spill),
    /// the generic block-per-system one where their tile fits in shared memory, the strip
    /// factor not.
    pub(super) fn interlaces(&self, n: usize, nrhs: usize, elem: usize) -> bool {
        match self.factor_kind {
            ChainFactor::Rows(_) => nrhs == 1,
            ChainFactor::Strips(_) => false,
            ChainFactor::Generic => factor_chain_shared_bytes(n, nrhs, elem) <= self.max_shared as usize,
        }
    }

    /// The factorization: one launch, one block per system (each resets its own status).
    pub(super) fn factor_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, rhs: Option<&SolveTarget<T>>) -> Vec<Step<'k, T>> {
        let shape = b.shape;
        let nrhs = rhs.map_or(0, |r| r.k);
        let args = b.factor_args(0, rhs);
        let smem = match self.factor_kind {
            ChainFactor::Rows(np) => factor_chain_rows_shared_bytes(np, T::BYTES),
            ChainFactor::Strips(np) => factor_chain_strips_shared_bytes(np, T::BYTES),
            ChainFactor::Generic => factor_chain_shared_bytes(shape.block, nrhs, T::BYTES),
        } as u32;
        let f = match (&self.factor_solve, rhs) {
            (Some(interlaced), Some(_)) => interlaced,
            _ => &self.factor,
        };
        vec![Step::Launch {
            kernel: &f.kernel,
            level: 0,
            cfg: LaunchConfig::linear(f.grid(shape.batch), f.threads, smem),
            args: Args::Factor(args),
        }]
    }

    /// The solve of `target`'s right-hand sides; `forward` false skips the forward sweep
    /// (done by an interlaced factorization).
    pub(super) fn solve_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>, forward: bool) -> Vec<Step<'k, T>> {
        let (cfg, args) = self.solve_launch(b, target);
        let mut steps = vec![Step::ResetStatus { addr: target.info as u64, systems: b.shape.batch }];
        if forward {
            steps.push(Step::Launch { kernel: &self.forward.kernel, level: 0, cfg, args: Args::Solve(args) });
        }
        steps.push(Step::Launch { kernel: &self.backward.kernel, level: 0, cfg, args: Args::Solve(args) });
        steps
    }

    /// The forward substitution alone.
    pub(super) fn forward_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>) -> Vec<Step<'k, T>> {
        let (cfg, args) = self.solve_launch(b, target);
        vec![
            Step::ResetStatus { addr: target.info as u64, systems: b.shape.batch },
            Step::Launch { kernel: &self.forward.kernel, level: 0, cfg, args: Args::Solve(args) },
        ]
    }

    /// Launch shape and arguments of either solve kernel (both have the same shape).
    fn solve_launch<T: Scalar>(&self, b: &Buffers<T>, target: &SolveTarget<T>) -> (LaunchConfig, SolveArgs<T>) {
        let n = b.shape.block;
        let bytes = |c| solve_chain_shared_bytes(n, c, T::BYTES);
        let chunk = super::fused::fitting_chunk(target.k, self.rhs_chunk, self.max_shared, bytes);
        let smem = if self.rows.is_some() { 0 } else { bytes(chunk) as u32 };
        let solve = &self.forward;
        (LaunchConfig::linear(solve.grid(b.shape.batch), solve.threads, smem), b.solve_args(target, 0, chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hopper's opt-in shared memory per block.
    const HOPPER_SMEM: u32 = 232_448;

    #[test]
    fn auto_takes_the_chain_for_batches_that_fill_the_device() {
        let auto = |systems, n| prefers_chain(KernelFamily::Auto, systems, n, 132, HOPPER_SMEM, 8).unwrap();
        assert!(auto(1024, 16) && auto(528, 8) && auto(4096, 1));
        assert!(!auto(527, 16) && !auto(1, 8) && !auto(4096, 65));
        // The strip-blocked factor's range: from 2 systems per SM, 1 above n = 32.
        assert!(auto(264, 17) && auto(264, 32) && !auto(263, 24));
        assert!(auto(132, 33) && auto(132, 64) && !auto(131, 48));
        assert!(prefers_chain(KernelFamily::Chain, 1, 8, 132, HOPPER_SMEM, 8).unwrap());
        assert!(!prefers_chain(KernelFamily::Panel, 4096, 64, 132, HOPPER_SMEM, 8).unwrap());
        let max = max_chain_block(HOPPER_SMEM, 8);
        assert!((96..200).contains(&max), "{max}");
        assert!(matches!(prefers_chain(KernelFamily::Chain, 1, max + 1, 132, HOPPER_SMEM, 8), Err(Error::Unsupported(_))));
    }
}
