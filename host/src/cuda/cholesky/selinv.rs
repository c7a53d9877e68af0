//! The selected-inversion sweep over the factor on the device: the staged kernels (a node
//! per team, its operands in shared memory) while a node's tiles fit, the tiled kernels
//! (a node's `64 x 64` output tiles over many thread blocks) above, the unstaged chain
//! walk for a chain factor whose blocks do not fit (`blocktri_device::selinv`).

use super::{Engine, GpuCholesky};
use crate::cuda::launch::LaunchConfig;
use crate::cuda::memory::DeviceBuffer;
use crate::error::{Error, Result};
use crate::matrix::BlockTridiag;
use crate::scalar::Scalar;
use crate::trace::timed;
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::layout::{levels, nodes_in_level};
use blocktri_device::selinv::tiled::{SELINV_TILED_THREADS, SelinvTiledArgs, selinv_tiled_shared_bytes};
use blocktri_device::selinv::{GATHER_THREADS, SelinvArgs, SelinvGatherArgs, selinv_launch};
use blocktri_device::tiled::tiles;

impl<T: Scalar> GpuCholesky<T> {
    /// The selected inverse in the block-tridiagonal layout, on the host: the sweep, the
    /// sub-diagonal blocks gathered on the device ([`blocktri_device::selinv::gather_sub_diagonal`]),
    /// and two downloads straight into the result's buffers.
    pub(crate) fn selinv_download(&mut self) -> Result<BlockTridiag<T>> {
        let chain = timed("selinv: sweep (enqueue)", || self.selinv_sweep())?;
        let plan = self.plan.as_ref().expect("factored");
        let (shape, ld) = (plan.bufs.shape, plan.bufs.ld);
        let [diag, left, right, sub] = &plan.sigma[..] else { unreachable!("the sweep made four buffers") };
        let args = SelinvGatherArgs {
            sigma_diag: diag.ptr().as_mut_ptr(),
            sigma_left: left.ptr().as_ptr(),
            sigma_right: right.ptr().as_ptr(),
            sub: sub.ptr().as_mut_ptr(),
            ld: ld as u32,
            n: shape.block as u32,
            nblocks: shape.nblocks as u32,
            chain: chain as u32,
        };
        let kernel = self.gpu.kernel(kernel_name::<T>(names::SELINV_GATHER).as_str())?;
        let blocks = (shape.batch * shape.nblocks) as u32;
        // SAFETY: the sweep's buffers hold `S N` blocks of `ld x n`, `sub` `S (N - 1)`; one
        // thread block per matrix block, after the sweep on the same stream.
        unsafe { kernel.launch(&self.stream, LaunchConfig::linear(blocks, GATHER_THREADS, 0), (args,))? };
        let _copy = crate::trace::phase("selinv: download (waits for the sweep)");
        let download = |buf: &DeviceBuffer<T>, len: usize| -> Result<Vec<T>> {
            // Fresh zero pages, first written by the staging workers.
            let mut out = crate::error::zeroed_vec(Some(len))?;
            self.download_from(buf, &mut out)?;
            Ok(out)
        };
        let blk = ld * shape.block;
        let (d, s) = (download(diag, shape.batch * shape.nblocks * blk)?, download(sub, shape.batch * (shape.nblocks - 1) * blk)?);
        BlockTridiag::from_parts(shape, ld, d, s)
    }

    /// Enqueues the selected-inversion sweep of the current factor into the plan's output
    /// buffers (`Sigma_ii`, `Sigma_{i,l}`, `Sigma_{i,r}` per block, and room for the
    /// gathered `Sigma_{i+1,i}`; poisoned first, allocated on first use): the levels top
    /// down, or the chain walk. Returns whether the factor is the chain engine's (its
    /// blocks are ordered along the chain).
    pub(crate) fn selinv_sweep(&mut self) -> Result<bool> {
        let plan = self.factored_plan().ok_or(Error::NotFactored)?;
        let (shape, ld) = (plan.bufs.shape, plan.bufs.ld);
        let (n, nb) = (shape.block, shape.nblocks as u32);
        let len = shape.batch * shape.nblocks * ld * n;
        let sub_len = (shape.batch * (shape.nblocks - 1) * ld * n).max(1);
        let chain = matches!(plan.engine, Engine::Chain(_));
        // Staged kernels (node operands in shared memory, several nodes per block for
        // n <= 16) while the node's tiles fit; the tiled ones above.
        let launch = selinv_launch(n, T::BYTES, self.gpu.info().max_shared_per_block as usize);
        let tiled = !launch.staged && !chain;
        // Linv per block, G_U and G_V per node of level 0 (the widest level).
        let work_len = [len, 2 * shape.batch * nodes_in_level(nb, 0) as usize * ld * n];
        let st = &self.stream;
        if plan.sigma.len() != 4 {
            self.gpu.check_memory((3 * len + sub_len) * T::BYTES)?;
            let bufs = [len, len, len, sub_len].iter().map(|&l| DeviceBuffer::<T>::poisoned(st, l)).collect::<Result<Vec<_>>>()?;
            self.plan.as_mut().expect("factored").sigma = bufs;
        } else {
            for buf in &plan.sigma {
                buf.fill_bytes(0xff)?;
            }
        }
        if tiled && self.plan.as_ref().expect("factored").selinv_work.is_empty() {
            self.gpu.check_memory(work_len.iter().sum::<usize>() * T::BYTES)?;
            let bufs = work_len.iter().map(|&l| DeviceBuffer::<T>::poisoned(st, l)).collect::<Result<Vec<_>>>()?;
            self.plan.as_mut().expect("factored").selinv_work = bufs;
        }
        let plan = self.plan.as_ref().expect("factored");
        let (b, [sigma_diag, sigma_left, sigma_right, _]) = (&plan.bufs, &plan.sigma[..]) else { unreachable!("four buffers") };
        let args = |level| SelinvArgs {
            diag: b.diag.ptr().as_ptr(),
            left: b.left.ptr().as_ptr(),
            right: b.right.ptr().as_ptr(),
            sigma_diag: sigma_diag.ptr().as_mut_ptr(),
            sigma_left: sigma_left.ptr().as_mut_ptr(),
            sigma_right: sigma_right.ptr().as_mut_ptr(),
            ld: ld as u32,
            n: n as u32,
            nblocks: nb,
            level,
            systems: shape.batch as u32,
        };
        if tiled {
            let [linv, work] = &plan.selinv_work[..] else { unreachable!("two workspace buffers") };
            let tiled_args =
                |level, step| SelinvTiledArgs { base: args(level), linv: linv.ptr().as_mut_ptr(), work: work.ptr().as_mut_ptr(), step };
            let kernel = |name| self.gpu.kernel(kernel_name::<T>(name).as_str());
            let cfg = |blocks: usize| LaunchConfig::linear(blocks as u32, SELINV_TILED_THREADS, selinv_tiled_shared_bytes(T::BYTES) as u32);
            let (nt, blocks) = (tiles(n), shape.batch * shape.nblocks);
            // SAFETY (all launches): the factor's buffers, the outputs and the workspace
            // hold the blocks the kernels' docs require (sized above); every launch is on
            // one stream, so each finds its predecessors' outputs complete: the diagonal
            // tiles of Linv, then the tile distances in order, then the levels top down
            // with their three launches in order.
            unsafe {
                kernel(names::SELINV_TILED_INVERT_DIAG)?.launch(st, cfg(blocks * nt), (tiled_args(0, 0),))?;
                for step in 1..nt {
                    kernel(names::SELINV_TILED_INVERT_STEP)?.launch(st, cfg(blocks * (nt - step)), (tiled_args(0, step as u32),))?;
                }
                for level in (0..levels(nb)).rev() {
                    let nodes = shape.batch * nodes_in_level(nb, level) as usize;
                    let a = (tiled_args(level, 0),);
                    kernel(names::SELINV_TILED_COUPLINGS)?.launch(st, cfg(nodes * 2 * nt * nt), a)?;
                    kernel(names::SELINV_TILED_NEIGHBOURS)?.launch(st, cfg(nodes * 2 * nt * nt), a)?;
                    kernel(names::SELINV_TILED_DIAGONAL)?.launch(st, cfg(nodes * nt * (nt + 1) / 2), a)?;
                }
            }
            return Ok(false);
        }
        let cfg = |jobs: u32| LaunchConfig::linear(jobs.div_ceil(launch.jobs_per_block), launch.threads, launch.shared_bytes as u32);
        if chain {
            let name = if launch.staged { names::SELINV_CHAIN_STAGED } else { names::SELINV_CHAIN };
            let kernel = self.gpu.kernel(kernel_name::<T>(name).as_str())?;
            // SAFETY: the chain factor's buffers and the three outputs hold `S N` blocks of
            // `ld x n`; one team per system walks its chain alone.
            unsafe { kernel.launch(st, cfg(shape.batch as u32), (args(0),))? };
        } else {
            let kernel = self.gpu.kernel(kernel_name::<T>(names::SELINV_LEVEL_STAGED).as_str())?;
            for level in (0..levels(nb)).rev() {
                // SAFETY: the factor's three buffers and the three outputs hold `S N` blocks
                // of `ld x n`; levels run top down on one stream, so every launch finds the
                // higher levels' blocks written; one team per node of the level.
                unsafe { kernel.launch(st, cfg(shape.batch as u32 * nodes_in_level(nb, level)), (args(level),))? };
            }
        }
        Ok(chain)
    }
}
