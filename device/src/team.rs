//! [`Team`]: who executes a tile routine.
//!
//! Tile routines are written once against this trait: rows of a tile are spread over
//! `lanes` (consecutive rows on consecutive lanes, so column-major accesses are coalesced
//! and bank-conflict free) and columns over `groups`. [`Block`] is a CUDA thread block
//! (lanes = the 32 lanes of a warp, groups = its warps); [`Solo`] is one CPU thread, for
//! which the same code is an ordinary sequential loop nest.

use blocktri_prims as gpu;

/// A set of threads that run a tile routine together.
pub trait Team: Copy {
    /// Index of this thread among `size()`.
    fn rank(&self) -> usize;
    /// Number of threads.
    fn size(&self) -> usize;
    /// Barrier over the team, ordering shared-memory accesses.
    fn sync(&self);
    /// Position inside a group (rows are strided by `lanes()`).
    fn lane(&self) -> usize;
    /// Threads per group.
    fn lanes(&self) -> usize;
    /// Group index (columns are strided by `groups()`).
    fn group(&self) -> usize;
    /// Number of groups.
    fn groups(&self) -> usize;
}

/// The whole CUDA thread block (1-D, a multiple of 32 threads).
#[derive(Clone, Copy, Debug, Default)]
pub struct Block;

impl Team for Block {
    #[inline(always)]
    fn rank(&self) -> usize {
        gpu::thread_idx_x() as usize
    }
    #[inline(always)]
    fn size(&self) -> usize {
        gpu::block_dim_x() as usize
    }
    #[inline(always)]
    fn sync(&self) {
        gpu::sync_threads()
    }
    #[inline(always)]
    fn lane(&self) -> usize {
        gpu::thread_idx_x() as usize % 32
    }
    #[inline(always)]
    fn lanes(&self) -> usize {
        32
    }
    #[inline(always)]
    fn group(&self) -> usize {
        gpu::thread_idx_x() as usize / 32
    }
    #[inline(always)]
    fn groups(&self) -> usize {
        gpu::block_dim_x() as usize / 32
    }
}

/// The same `width` lanes of every warp of a 1-D CUDA block (`width` divides 32): thread
/// `lane` of warp `w` is rank `w * width + lane % width` of team `lane / width`. Several
/// teams (the rows kernels' packed nodes) share the block's warps; their barrier is the
/// block's, so every team of the block passes each [`Team::sync`] together. `width = 32`
/// is [`Block`].
#[derive(Clone, Copy, Debug)]
pub struct LaneSlice {
    /// Lanes of each warp in the team.
    pub width: usize,
}

impl Team for LaneSlice {
    #[inline(always)]
    fn rank(&self) -> usize {
        let tid = gpu::thread_idx_x() as usize;
        // `width` is a constant where this inlines: the whole-warp case is `Block`'s rank.
        if self.width == 32 { tid } else { tid / 32 * self.width + tid % 32 % self.width }
    }
    #[inline(always)]
    fn size(&self) -> usize {
        gpu::block_dim_x() as usize / 32 * self.width
    }
    #[inline(always)]
    fn sync(&self) {
        gpu::sync_threads()
    }
    #[inline(always)]
    fn lane(&self) -> usize {
        gpu::thread_idx_x() as usize % 32 % self.width
    }
    #[inline(always)]
    fn lanes(&self) -> usize {
        self.width
    }
    #[inline(always)]
    fn group(&self) -> usize {
        gpu::thread_idx_x() as usize / 32
    }
    #[inline(always)]
    fn groups(&self) -> usize {
        gpu::block_dim_x() as usize / 32
    }
}

/// One thread doing all the work (CPU reference use of the tile routines).
#[derive(Clone, Copy, Debug, Default)]
pub struct Solo;

impl Team for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn sync(&self) {}
    fn lane(&self) -> usize {
        0
    }
    fn lanes(&self) -> usize {
        1
    }
    fn group(&self) -> usize {
        0
    }
    fn groups(&self) -> usize {
        1
    }
}

/// One warp of a CUDA block: 32 lanes, one group. Warp `w` of the block is team `w`:
/// several teams run independent work in one block, synchronized with `__syncwarp` only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Warp;

impl Team for Warp {
    #[inline(always)]
    fn rank(&self) -> usize {
        gpu::lane_id() as usize
    }
    #[inline(always)]
    fn size(&self) -> usize {
        32
    }
    #[inline(always)]
    fn sync(&self) {
        gpu::sync_warp()
    }
    #[inline(always)]
    fn lane(&self) -> usize {
        gpu::lane_id() as usize
    }
    #[inline(always)]
    fn lanes(&self) -> usize {
        32
    }
    #[inline(always)]
    fn group(&self) -> usize {
        0
    }
    #[inline(always)]
    fn groups(&self) -> usize {
        1
    }
}
