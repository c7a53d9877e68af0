//! The chain engine (`blocktri_device::chain`): each system's blocks eliminated in natural
//! order by one warp (`n <= 32`, the blocks' rows in registers) or one thread block (the
//! blocks in shared memory; the forward substitution interlaced where it fits), one launch
//! for the factorization, one per solve sweep. Sequential block Cholesky
//! does 2.7x fewer flops than nested dissection and needs no atomics, but one system runs
//! on one SM: it pays where the batch alone fills the GPU ([`prefers_chain`]).

use super::schedule::{Args, Step};
use super::{Buffers, KernelFamily, SolveArgs, SolveTarget};
use crate::cuda::context::Gpu;
use crate::cuda::launch::{Kernel, LaunchConfig};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use blocktri_device::chain::{
    CHAIN_ROWS_WARPS, chain_threads, factor_chain_rows_shared_bytes, factor_chain_shared_bytes, solve_chain_shared_bytes,
};
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::level::row_size;

/// Systems per multiprocessor from which [`KernelFamily::Auto`] runs the chain engine:
/// below it, nested dissection's parallelism inside each system is worth its extra flops.
/// Measured on the H100 (`docs/perf-notes.md` entry 10, N = 64): at 4 per SM (S = 528)
/// the chain's factor + solve was 0.90x-1.15x as fast as nested dissection's, at 7.8 per
/// SM (S = 1024) 1.5x.
pub(super) const CHAIN_SYSTEMS_PER_SM: usize = 6;

/// Largest block size `Auto` runs on the chain engine: the register-resident kernels keep
/// two 16-value rows of `f64` per lane; at `n = 32` the f64 factor spills and lost to the
/// panel kernels (8.0 vs 5.3 ms at S = 1024, N = 64). f32 `n <= 32` is unmeasured, so
/// `Auto` keeps the same limit.
pub(super) const CHAIN_AUTO_MAX_N: usize = 16;

/// Largest block size the chain kernels take with `smem` bytes of shared memory per block
/// (factor without interlaced columns, solve one column per pass).
pub(super) fn max_chain_block(smem: u32, elem_bytes: usize) -> usize {
    let fits = |n: usize| factor_chain_shared_bytes(n, 0, elem_bytes).max(solve_chain_shared_bytes(n, 1, elem_bytes)) <= smem as usize;
    (1..=512).take_while(|&n| fits(n)).last().unwrap_or(0)
}

/// Whether `family` runs a batch of `systems` systems of block size `n` on the chain
/// engine, on a device with `multiprocessors` SMs and `smem` bytes of shared memory per
/// block. `Auto` picks it for batches of at least [`CHAIN_SYSTEMS_PER_SM`] systems per SM
/// with blocks up to [`CHAIN_AUTO_MAX_N`] (the register-resident kernels; the
/// shared-memory ones measured no faster than nested dissection); `Chain` insists (an
/// error when the blocks do not fit in shared memory).
pub(super) fn prefers_chain(family: KernelFamily, systems: usize, n: usize, multiprocessors: u32, smem: u32, elem: usize) -> Result<bool> {
    Ok(match family {
        KernelFamily::Chain => {
            let max = max_chain_block(smem, elem);
            if n > max {
                return Err(Error::Unsupported(format!("the chain kernels support n <= {max} on this device, got n = {n}")));
            }
            true
        }
        KernelFamily::Auto => n <= CHAIN_AUTO_MAX_N && systems >= CHAIN_SYSTEMS_PER_SM * multiprocessors as usize,
        _ => false,
    })
}

/// The chain engine of one plan: the register-resident kernels (one warp per system)
/// for `n <= 32`, the shared-memory ones (one block per system) above.
#[derive(Debug)]
pub(super) struct Chain {
    factor: Kernel,
    forward: Kernel,
    backward: Kernel,
    threads: u32,
    max_shared: u32,
    rhs_chunk: u32,
    /// The padded size of the register-resident kernels, when they run.
    rows: Option<usize>,
}

impl Chain {
    /// Loads the chain kernels for `T` and block size `n`.
    pub(super) fn new<T: Scalar>(gpu: &Gpu, n: usize, rhs_chunk: u32) -> Result<Self> {
        let k = |name: &str| gpu.kernel(kernel_name::<T>(name).as_str());
        let rows = row_size(n);
        let (factor, forward, backward) = match rows {
            Some(np) => (
                k(&format!("{}{np}", names::FACTOR_CHAIN_ROWS))?,
                k(&format!("{}{np}", names::SOLVE_FORWARD_CHAIN_ROWS))?,
                k(&format!("{}{np}", names::SOLVE_BACKWARD_CHAIN_ROWS))?,
            ),
            None => (k(names::FACTOR_CHAIN)?, k(names::SOLVE_FORWARD_CHAIN)?, k(names::SOLVE_BACKWARD_CHAIN)?),
        };
        let threads = if rows.is_some() { 32 * CHAIN_ROWS_WARPS } else { chain_threads(n) };
        Ok(Chain { factor, forward, backward, threads, max_shared: gpu.info().max_shared_per_block, rhs_chunk, rows })
    }

    /// Grid of a launch: one block per system, or per [`CHAIN_ROWS_WARPS`] systems.
    fn grid(&self, systems: usize) -> u32 {
        let per_block = if self.rows.is_some() { CHAIN_ROWS_WARPS as usize } else { 1 };
        systems.div_ceil(per_block) as u32
    }

    /// Whether the factor kernel can also do the forward substitution of `nrhs` columns
    /// (the shared-memory kernels only).
    pub(super) fn interlaces(&self, n: usize, nrhs: usize, elem: usize) -> bool {
        self.rows.is_none() && factor_chain_shared_bytes(n, nrhs, elem) <= self.max_shared as usize
    }

    /// The factorization: one launch, one block per system (each resets its own status).
    pub(super) fn factor_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, rhs: Option<&SolveTarget<T>>) -> Vec<Step<'k, T>> {
        let shape = b.shape;
        let nrhs = rhs.map_or(0, |r| r.k);
        let args = b.factor_args(0, rhs);
        let smem = match self.rows {
            Some(np) => factor_chain_rows_shared_bytes(np, T::BYTES),
            None => factor_chain_shared_bytes(shape.block, nrhs, T::BYTES),
        } as u32;
        vec![Step::Launch {
            kernel: &self.factor,
            level: 0,
            cfg: LaunchConfig::linear(self.grid(shape.batch), self.threads, smem),
            args: Args::Factor(args),
        }]
    }

    /// The solve of `target`'s right-hand sides; `forward` false skips the forward sweep
    /// (done by an interlaced factorization).
    pub(super) fn solve_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>, forward: bool) -> Vec<Step<'k, T>> {
        let (cfg, args) = self.solve_launch(b, target);
        let mut steps = vec![Step::ResetStatus { addr: target.info as u64, systems: b.shape.batch }];
        if forward {
            steps.push(Step::Launch { kernel: &self.forward, level: 0, cfg, args: Args::Solve(args) });
        }
        steps.push(Step::Launch { kernel: &self.backward, level: 0, cfg, args: Args::Solve(args) });
        steps
    }

    /// The forward substitution alone.
    pub(super) fn forward_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>) -> Vec<Step<'k, T>> {
        let (cfg, args) = self.solve_launch(b, target);
        vec![
            Step::ResetStatus { addr: target.info as u64, systems: b.shape.batch },
            Step::Launch { kernel: &self.forward, level: 0, cfg, args: Args::Solve(args) },
        ]
    }

    /// Launch shape and arguments of either solve kernel.
    fn solve_launch<T: Scalar>(&self, b: &Buffers<T>, target: &SolveTarget<T>) -> (LaunchConfig, SolveArgs<T>) {
        let n = b.shape.block;
        let chunk = super::fused::fitting_chunk(target.k, self.rhs_chunk, self.max_shared, |c| solve_chain_shared_bytes(n, c, T::BYTES));
        let smem = if self.rows.is_some() { 0 } else { solve_chain_shared_bytes(n, chunk, T::BYTES) as u32 };
        (LaunchConfig::linear(self.grid(b.shape.batch), self.threads, smem), b.solve_args(target, 0, chunk))
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
        assert!(auto(1024, 16) && auto(792, 8) && auto(4096, 1));
        assert!(!auto(791, 16) && !auto(1, 8) && !auto(4096, 17));
        assert!(prefers_chain(KernelFamily::Chain, 1, 8, 132, HOPPER_SMEM, 8).unwrap());
        assert!(!prefers_chain(KernelFamily::Panel, 4096, 64, 132, HOPPER_SMEM, 8).unwrap());
        let max = max_chain_block(HOPPER_SMEM, 8);
        assert!((96..200).contains(&max), "{max}");
        assert!(matches!(prefers_chain(KernelFamily::Chain, 1, max + 1, 132, HOPPER_SMEM, 8), Err(Error::Unsupported(_))));
    }
}
