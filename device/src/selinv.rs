//! Selected inversion on the GPU: the blocks of `Sigma = A^-1` on the pattern of the
//! nested-dissection factor, one launch per level from the top level down, one thread
//! block per node (the host's `cpu::selinv` is the reference and derives the equations).
//!
//! For node `i` eliminated on level `m`, with `L_ii`, `L_li`, `L_ri` from the
//! factorization and the neighbours `l`, `r` (eliminated on higher levels, so their blocks
//! of `Sigma` are known from earlier launches), writing `U = L_li^T`, `V = L_ri^T`:
//!
//! ```text
//! Sigma_il = -L_ii^-T (U Sigma_ll + V Sigma_rl)
//! Sigma_ir = -L_ii^-T (V Sigma_rr + U Sigma_lr)
//! Sigma_ii =  L_ii^-T (L_ii^-1 - U Sigma_il^T - V Sigma_ir^T)
//! ```
//!
//! `Sigma_rl` is stored with whichever of `l`, `r` was eliminated first (they are
//! adjacent one level up): `Sigma_{r,l}` in `sigma_left[r]`, or `Sigma_{l,r}` in
//! `sigma_right[l]`. Every product reads global memory directly through the tile routines
//! ([`crate::tile::product`], [`crate::tile::trsm_lower`]): a first version, correct for
//! any `n`, fast for small ones.

use crate::layout::{left_of, level_of, node_number, nodes_in_level, right_of};
use crate::team::{Block, Team};
use crate::tile::trsm::invert_diagonal;
use crate::tile::{MatRef, for_each_entry, product, trsm_lower, trsm_lower_transposed};
use blocktri_prims::{Real, block_idx_x, shared};

/// Arguments of [`selinv_level`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SelinvArgs<T> {
    /// `L_ii` (lower triangle), `systems * nblocks` blocks of `ld x n`.
    pub diag: *const T,
    /// `L_{l,i}` per block (blocks without a left neighbour: unused).
    pub left: *const T,
    /// `L_{r,i}` per block.
    pub right: *const T,
    /// Out: `Sigma_ii` per block.
    pub sigma_diag: *mut T,
    /// Out: `Sigma_{i,l}` per block that has a left neighbour on its level.
    pub sigma_left: *mut T,
    /// Out: `Sigma_{i,r}` per block that has a right neighbour on its level.
    pub sigma_right: *mut T,
    /// Leading dimension of every block.
    pub ld: u32,
    /// Block size.
    pub n: u32,
    /// Blocks per system.
    pub nblocks: u32,
    /// The level of this launch.
    pub level: u32,
}

/// Where `Sigma_{i+1,i}` of the original neighbours `i`, `i + 1` (1-based) ends up: with
/// whichever was eliminated first. `(i, true)`: `Sigma_{i,i+1}` in `sigma_right[i]`
/// (transpose it); `(i + 1, false)`: `Sigma_{i+1,i}` in `sigma_left[i + 1]` as it is.
#[inline(always)]
pub const fn sub_diagonal_slot(i: u32) -> (u32, bool) {
    if level_of(i) < level_of(i + 1) { (i, true) } else { (i + 1, false) }
}

/// Threads of a [`selinv_level`] block for block size `n`: more warps for larger blocks,
/// whose `n^3` products one block computes alone on the top levels.
pub const fn selinv_threads(n: usize) -> u32 {
    if n <= 32 {
        128
    } else if n <= 96 {
        256
    } else {
        512
    }
}

/// Shared memory of [`selinv_level`] in bytes: the reciprocals of `L_ii`'s diagonal.
pub const fn selinv_shared_bytes(n: usize, elem_bytes: usize) -> usize {
    n * elem_bytes
}

/// One block per node of level `args.level` (grid `x` = systems x nodes of the level).
///
/// # Safety
/// A 1-D block of a multiple of 32 threads; [`selinv_shared_bytes`] of dynamic shared
/// memory; the buffers as [`SelinvArgs`] describes, the factor successful, and the
/// launches of every higher level finished before this one starts.
pub unsafe fn selinv_level<T: Real>(args: &SelinvArgs<T>) {
    let team = Block;
    let (ld, n, nb, m) = (args.ld as usize, args.n as usize, args.nblocks, args.level);
    let count = nodes_in_level(nb, m) as usize;
    let job = block_idx_x() as usize;
    let (s, t) = (job / count, job % count);
    let i = node_number(m, t as u32);
    let (li, ri) = (left_of(i, m), right_of(i, m, nb));
    // Block `j` (1-based) of system `s` in a buffer.
    let at = |j: u32| (s * nb as usize + (j - 1) as usize) * ld * n;
    let view = |p: *const T, j: u32| MatRef::col_major(unsafe { p.add(at(j)) }, ld);
    let l_ii = unsafe { args.diag.add(at(i)) };
    let inv = shared::dynamic_shared::<T>();
    // SAFETY (all tile calls): every block is `n x n` at `ld` inside its buffer; the
    // blocks written here (this node's three outputs) are written by this block alone and
    // read by no other block of the launch; the blocks read from `sigma_*` belong to
    // higher levels, finished by earlier launches.
    unsafe { invert_diagonal(team, l_ii, ld, n, inv) };
    // Sigma_rl of the two neighbours, from whichever was eliminated first.
    let sigma_rl = match (li, ri) {
        (Some(l), Some(r)) if level_of(r) < level_of(l) => Some(view(args.sigma_left, r)),
        (Some(l), Some(_)) => Some(view(args.sigma_right, l).t()),
        _ => None,
    };
    let (u, v) = (view(args.left, i).t(), view(args.right, i).t());
    // Sigma_il, Sigma_ir: the two products (same thread per entry in both, so no barrier
    // between them), then the transposed triangular solve.
    for (neighbour, out, near, far, far_sigma) in
        [(li, args.sigma_left, u, v, sigma_rl), (ri, args.sigma_right, v, u, sigma_rl.map(|x| x.t()))]
    {
        let Some(j) = neighbour else { continue };
        let x = unsafe { out.add(at(i)) };
        unsafe { product(team, n, n, n, near, view(args.sigma_diag, j), |r, c, val| *x.add(c * ld + r) = -val) };
        if let Some(other) = far_sigma {
            unsafe { product(team, n, n, n, far, other, |r, c, val| *x.add(c * ld + r) -= val) };
        }
        team.sync();
        unsafe { trsm_lower_transposed(team, l_ii, ld, n, x, ld, n, inv) };
    }
    // Y = L_ii^-1 - U Sigma_il^T - V Sigma_ir^T in Sigma_ii's slot, then L_ii^-T Y.
    let y = unsafe { args.sigma_diag.add(at(i)) };
    for_each_entry(team, n, n, |r, c| unsafe { *y.add(c * ld + r) = if r == c { T::ONE } else { T::ZERO } });
    team.sync();
    unsafe { trsm_lower(team, l_ii, ld, n, y, ld, n, inv) };
    for (neighbour, couple, sigma) in [(li, u, args.sigma_left), (ri, v, args.sigma_right)] {
        if neighbour.is_some() {
            unsafe { product(team, n, n, n, couple, view(sigma, i).t(), |r, c, val| *y.add(c * ld + r) -= val) };
        }
    }
    team.sync();
    unsafe { trsm_lower_transposed(team, l_ii, ld, n, y, ld, n, inv) };
    // Exactly symmetric: each pair (r > c) averaged by one thread.
    for_each_entry(team, n, n, |r, c| {
        if r > c {
            unsafe {
                let (low, high) = (y.add(c * ld + r), y.add(r * ld + c));
                let mean = (*low + *high) * T::from_f64(0.5);
                *low = mean;
                *high = mean;
            }
        }
    });
    team.sync();
}
