//! Batched Cholesky of independent tiles: the GPU smoke test of the tile routines.

use crate::team::{Block, Team};
use crate::tile::{NO_FAILURE, for_each_index, potrf_panel};
use blocktri_prims::{Real, atomic, block_idx_x, shared};

/// Arguments of [`potrf_batched`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PotrfBatchedArgs<T> {
    /// `count` tiles of `n x n`, leading dimension `ld`, `ld * n` apart; factored in place
    /// (lower triangle `L`, upper triangle zeroed).
    pub tiles: *mut T,
    /// Per tile: `u32::MAX`, or the first pivot that was not positive.
    pub info: *mut u32,
    /// Tile size.
    pub n: u32,
    /// Leading dimension.
    pub ld: u32,
}

/// Shared memory of [`potrf_batched`] in bytes.
pub const fn potrf_batched_shared_bytes(n: usize, elem_bytes: usize) -> usize {
    (n * n + 2 * n) * elem_bytes + 16
}

/// One block per tile: load, [`potrf_panel`] with `rows = n`, store.
///
/// # Safety
/// Grid `x` = number of tiles; block a multiple of 32 threads;
/// [`potrf_batched_shared_bytes`] of shared memory.
pub unsafe fn potrf_batched<T: Real>(args: &PotrfBatchedArgs<T>) {
    let team = Block;
    let (n, ld) = (args.n as usize, args.ld as usize);
    let t = block_idx_x() as usize;
    let g = unsafe { args.tiles.add(t * ld * n) };
    let p = shared::dynamic_shared::<T>();
    let piv = unsafe { p.add(n * n) };
    let status = unsafe { piv.add(2 * n) } as *mut u32;
    for_each_index(team, n * n, |e| unsafe { *p.add(e) = *g.add((e / n) * ld + e % n) });
    team.sync();
    let failed = unsafe { potrf_panel(team, p, n, n, n, piv, status) };
    for_each_index(team, n * n, |e| unsafe {
        let (r, c) = (e % n, e / n);
        *g.add(c * ld + r) = if r >= c { *p.add(e) } else { T::ZERO };
    });
    if team.rank() == 0 && failed != NO_FAILURE {
        unsafe { atomic::atomic_min_u32(args.info.add(t), failed) };
    }
}
