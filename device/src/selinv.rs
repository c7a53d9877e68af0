//! Selected inversion on the GPU: the blocks of `Sigma = A^-1` on the pattern of the
//! nested-dissection factor, one launch per level from the top level down, one thread
//! block per node (or, for the chain factor, one launch and one block per system walking
//! its blocks from the last: [`selinv_chain`]) (the host's `cpu::selinv` is the reference and derives the equations).
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
    let (nb, m) = (args.nblocks, args.level);
    let count = nodes_in_level(nb, m) as usize;
    let job = block_idx_x() as usize;
    let (s, t) = (job / count, job % count);
    let i = node_number(m, t as u32);
    let (li, ri) = (left_of(i, m), right_of(i, m, nb));
    // Sigma_rl of the two neighbours, from whichever was eliminated first.
    let sigma_rl = match (li, ri) {
        (Some(l), Some(r)) if level_of(r) < level_of(l) => Some(view(args, args.sigma_left, s, r)),
        (Some(l), Some(_)) => Some(view(args, args.sigma_right, s, l).t()),
        _ => None,
    };
    // SAFETY: the caller's contract; node `i` of this launch's level.
    unsafe { selinv_node(args, s, i, li, ri, sigma_rl) };
}

/// Selected inversion of the chain factor ([`crate::chain`]): one block per system (grid
/// `x` = systems) walks its blocks from the last to the first. Block `i` (1-based) has the
/// right neighbour `i + 1` only, so `Sigma_{i,i+1}` lands in `sigma_right[i]`.
///
/// # Safety
/// As [`selinv_level`], with the factor of [`crate::chain::factor_chain`]; one launch.
pub unsafe fn selinv_chain<T: Real>(args: &SelinvArgs<T>) {
    let nb = args.nblocks;
    let s = block_idx_x() as usize;
    for i in (1..=nb).rev() {
        let ri = if i < nb { Some(i + 1) } else { None };
        // SAFETY: the caller's contract; `selinv_node` ends with a barrier, so block
        // `i + 1`'s outputs are complete before block `i` reads them.
        unsafe { selinv_node(args, s, i, None, ri, None) };
    }
}

/// Block `j` (1-based) of system `s` in one of the buffers, as a column-major view.
#[inline(always)]
fn view<T: Real>(args: &SelinvArgs<T>, p: *const T, s: usize, j: u32) -> MatRef<T> {
    let at = (s * args.nblocks as usize + (j - 1) as usize) * args.ld as usize * args.n as usize;
    MatRef::col_major(unsafe { p.add(at) }, args.ld as usize)
}

/// The equations of the module docs for node `i` of system `s` with neighbours `li`,
/// `ri` (1-based) and `Sigma_rl` when both exist; ends with a barrier.
///
/// # Safety
/// As [`selinv_level`]: the neighbours' blocks of `Sigma` are complete, this node's are
/// written by this thread block alone.
#[inline(always)]
unsafe fn selinv_node<T: Real>(args: &SelinvArgs<T>, s: usize, i: u32, li: Option<u32>, ri: Option<u32>, sigma_rl: Option<MatRef<T>>) {
    let team = Block;
    let (ld, n, nb) = (args.ld as usize, args.n as usize, args.nblocks);
    // Block `j` (1-based) of system `s` in a buffer.
    let at = |j: u32| (s * nb as usize + (j - 1) as usize) * ld * n;
    let l_ii = unsafe { args.diag.add(at(i)) };
    let inv = shared::dynamic_shared::<T>();
    // SAFETY (all tile calls): every block is `n x n` at `ld` inside its buffer; the
    // blocks written here (this node's three outputs) are written by this block alone and
    // read by no other block of the launch; the blocks read from `sigma_*` belong to
    // nodes eliminated later, finished by earlier launches or earlier iterations.
    unsafe { invert_diagonal(team, l_ii, ld, n, inv) };
    let (u, v) = (view(args, args.left, s, i).t(), view(args, args.right, s, i).t());
    // Sigma_il, Sigma_ir: the two products (same thread per entry in both, so no barrier
    // between them), then the transposed triangular solve.
    for (neighbour, out, near, far, far_sigma) in
        [(li, args.sigma_left, u, v, sigma_rl), (ri, args.sigma_right, v, u, sigma_rl.map(|x| x.t()))]
    {
        let Some(j) = neighbour else { continue };
        let x = unsafe { out.add(at(i)) };
        unsafe { product(team, n, n, n, near, view(args, args.sigma_diag, s, j), |r, c, val| *x.add(c * ld + r) = -val) };
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
            unsafe { product(team, n, n, n, couple, view(args, sigma, s, i).t(), |r, c, val| *y.add(c * ld + r) -= val) };
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
