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
//! `sigma_right[l]`. Three implementations, [`selinv_launch`] chooses:
//! - the staged kernels ([`selinv_level_staged`], [`selinv_chain_staged`]): the node's
//!   operands in shared memory, products on tensor-core fragments; while a node's five
//!   tiles fit (n <= 72 in `f64` on the H100);
//! - the tiled kernels ([`tiled`]): level sweeps above that, a node's `64 x 64` output
//!   tiles over many thread blocks, products on fragments from global memory;
//! - the unstaged ones ([`selinv_chain`], and [`selinv_level`], which the host no longer
//!   launches: the one-block-per-node form, kept as the emulator tests' reference): every
//!   product reads global memory through the tile routines ([`crate::tile::product`],
//!   [`crate::tile::trsm_lower`]), one block per node or system, any `n`; the chain walk
//!   of a chain factor whose blocks do not fit.

pub mod tiled;

use crate::layout::{left_of, level_of, node_number, nodes_in_level, right_of};
use crate::team::{Block, Team, Warp};
use crate::tile::fragment::{FRAG, diagonal_reciprocals, fragment_ld, invert_lower_strips, padded, warp_product_sum};
use crate::tile::trsm::invert_diagonal;
use crate::tile::{MatRef, for_each_entry, for_each_index, for_each_rc, product, trsm_lower, trsm_lower_transposed, wait_copies};
use blocktri_prims::memory::copy_async_16;
use blocktri_prims::{Real, block_idx_x, shared, warp_id};

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
    /// Systems in the batch (the staged kernels' teams past the last job return).
    pub systems: u32,
}

/// Where `Sigma_{i+1,i}` of the original neighbours `i`, `i + 1` (1-based) ends up: with
/// whichever was eliminated first. `(i, true)`: `Sigma_{i,i+1}` in `sigma_right[i]`
/// (transpose it); `(i + 1, false)`: `Sigma_{i+1,i}` in `sigma_left[i + 1]` as it is.
#[inline(always)]
pub const fn sub_diagonal_slot(i: u32) -> (u32, bool) {
    if level_of(i) < level_of(i + 1) { (i, true) } else { (i + 1, false) }
}

/// Arguments of [`gather_sub_diagonal`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SelinvGatherArgs<T> {
    /// `Sigma_ii` per block as the sweep wrote it: its padding rows are zeroed here.
    pub sigma_diag: *mut T,
    /// `Sigma_{i,l}` per block (the sweep's).
    pub sigma_left: *const T,
    /// `Sigma_{i,r}` per block (the sweep's).
    pub sigma_right: *const T,
    /// Out: `Sigma_{i+1,i}` for `i < nblocks - 1` of every system, `systems (nblocks - 1)`
    /// blocks of `ld x n` (the block-tridiagonal layout), padding rows zero.
    pub sub: *mut T,
    /// Leading dimension of every block.
    pub ld: u32,
    /// Block size.
    pub n: u32,
    /// Blocks per system.
    pub nblocks: u32,
    /// 1 for the chain walk's output (`Sigma_{i,i+1}` always in `sigma_right[i]`), 0 for
    /// the level sweeps' ([`sub_diagonal_slot`]).
    pub chain: u32,
}

/// Threads of a [`gather_sub_diagonal`] block.
pub const GATHER_THREADS: u32 = 256;

/// The sweep's output in the block-tridiagonal layout, so that the host downloads it as it
/// is: thread block `(s, i)` (grid `x` = systems * nblocks, [`GATHER_THREADS`] threads)
/// zeroes the padding rows of `Sigma_ii` and, for `i + 1 < nblocks`, writes
/// `Sigma_{i+1,i}` (transposed from `sigma_right[i]` or copied from `sigma_left[i + 1]`)
/// into `sub`.
///
/// # Safety
/// The buffers as [`SelinvGatherArgs`] describes; the sweep has completed.
pub unsafe fn gather_sub_diagonal<T: Real>(args: &SelinvGatherArgs<T>) {
    let a = *args;
    let (ld, n, nb) = (a.ld as usize, a.n as usize, a.nblocks as usize);
    let (blk, at) = (ld * n, block_idx_x() as usize);
    let (s, i) = (at / nb, at % nb);
    let threads = GATHER_THREADS as usize;
    let mut e = blocktri_prims::thread_idx_x() as usize;
    while e < blk {
        let (c, r) = (e / ld, e % ld);
        if r >= n {
            // SAFETY: entry e of block `at` of `sigma_diag`.
            unsafe { *a.sigma_diag.add(at * blk + e) = T::ZERO };
        }
        if i + 1 < nb {
            let (slot, transposed) = if a.chain != 0 { (i as u32 + 1, true) } else { sub_diagonal_slot(i as u32 + 1) };
            let src = (s * nb + slot as usize - 1) * blk;
            let v = if r >= n {
                T::ZERO
            } else if transposed {
                // SAFETY: block `slot - 1` of system s, entry (c, r) transposed (both < n).
                unsafe { *a.sigma_right.add(src + r * ld + c) }
            } else {
                unsafe { *a.sigma_left.add(src + c * ld + r) }
            };
            // SAFETY: block (s, i) of the `systems (nblocks - 1)` sub-diagonal blocks.
            unsafe { *a.sub.add((s * (nb - 1) + i) * blk + e) = v };
        }
        e += threads;
    }
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
    // SAFETY: the caller's contract; node `i` of this launch's level.
    unsafe { selinv_node(args, s, i, li, ri, sigma_rl_as_stored(args, s, li, ri)) };
}

/// Where `Sigma_rl` of the neighbours `li`, `ri` of a node of system `s` is stored, when
/// both exist: `(block, transposed)`, `Sigma_{r,l}` in `sigma_left[r]` as it is, or
/// `Sigma_{l,r}` in `sigma_right[l]` (transposed), whichever of the two was eliminated
/// first.
#[inline(always)]
fn sigma_rl_stored<T: Real>(args: &SelinvArgs<T>, s: usize, li: Option<u32>, ri: Option<u32>) -> Option<(*const T, bool)> {
    match (li, ri) {
        (Some(l), Some(r)) if level_of(r) < level_of(l) => Some((block_ptr(args, args.sigma_left, s, r), false)),
        (Some(l), Some(_)) => Some((block_ptr(args, args.sigma_right, s, l), true)),
        _ => None,
    }
}

/// [`sigma_rl_stored`] as a view of `Sigma_rl`.
#[inline(always)]
fn sigma_rl_as_stored<T: Real>(args: &SelinvArgs<T>, s: usize, li: Option<u32>, ri: Option<u32>) -> Option<MatRef<T>> {
    sigma_rl_stored(args, s, li, ri).map(|(p, transposed)| {
        let v = MatRef::col_major(p, args.ld as usize);
        if transposed { v.t() } else { v }
    })
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
    MatRef::col_major(block_ptr(args, p, s, j), args.ld as usize)
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
    // Whole 8 x 8 tiles: the products on tensor-core fragments straight from global memory
    // (the blocks need no padding); otherwise scalar tile products.
    let fragments = n % FRAG == 0;
    let (warp, warps) = (team.group(), team.groups());
    // Sigma_il, Sigma_ir: the two products (same thread per entry in both, so no barrier
    // between them), then the transposed triangular solve.
    for (neighbour, out, near, far, far_sigma) in
        [(li, args.sigma_left, u, v, sigma_rl), (ri, args.sigma_right, v, u, sigma_rl.map(|x| x.t()))]
    {
        let Some(j) = neighbour else { continue };
        let x = unsafe { out.add(at(i)) };
        let near_sigma = view(args, args.sigma_diag, s, j);
        let put = |r: usize, c: usize, val: T| unsafe { *x.add(c * ld + r) = val };
        match (fragments, far_sigma) {
            (true, Some(other)) => unsafe {
                warp_product_sum::<T, 2, 4, 2>(warp, warps, n, n, n, [(near, near_sigma, -T::ONE), (far, other, -T::ONE)], put)
            },
            (true, None) => unsafe { warp_product_sum::<T, 2, 4, 1>(warp, warps, n, n, n, [(near, near_sigma, -T::ONE)], put) },
            (false, far_sigma) => {
                unsafe { product(team, n, n, n, near, near_sigma, |r, c, val| *x.add(c * ld + r) = -val) };
                if let Some(other) = far_sigma {
                    unsafe { product(team, n, n, n, far, other, |r, c, val| *x.add(c * ld + r) -= val) };
                }
            }
        }
        team.sync();
        unsafe { trsm_lower_transposed(team, l_ii, ld, n, x, ld, n, inv) };
    }
    // Y = L_ii^-1 - U Sigma_il^T - V Sigma_ir^T in Sigma_ii's slot, then L_ii^-T Y.
    let y = unsafe { args.sigma_diag.add(at(i)) };
    for_each_entry(team, n, n, |r, c| unsafe { *y.add(c * ld + r) = if r == c { T::ONE } else { T::ZERO } });
    team.sync();
    unsafe { trsm_lower(team, l_ii, ld, n, y, ld, n, inv) };
    let (il, ir) = ((u, view(args, args.sigma_left, s, i).t(), -T::ONE), (v, view(args, args.sigma_right, s, i).t(), -T::ONE));
    let add = |r: usize, c: usize, val: T| unsafe { *y.add(c * ld + r) += val };
    match (fragments, li, ri) {
        (true, Some(_), Some(_)) => unsafe { warp_product_sum::<T, 2, 4, 2>(warp, warps, n, n, n, [il, ir], add) },
        (true, Some(_), None) => unsafe { warp_product_sum::<T, 2, 4, 1>(warp, warps, n, n, n, [il], add) },
        (true, None, Some(_)) => unsafe { warp_product_sum::<T, 2, 4, 1>(warp, warps, n, n, n, [ir], add) },
        _ => {
            for (neighbour, (couple, sigma, _)) in [(li, il), (ri, ir)] {
                if neighbour.is_some() {
                    unsafe { product(team, n, n, n, couple, sigma, |r, c, val| *y.add(c * ld + r) -= val) };
                }
            }
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

// ---------------------------------------------------------------------------------------
// Staged kernels: the node's operands in shared memory, fragment products instead of
// row-by-row triangular solves.
//
// With `Linv = L_ii^-1` (inverted in strips of 8 rows), `G_U = Linv^T U` and
// `G_V = Linv^T V`, the equations of the module docs become products only:
//
//   Sigma_il = -(G_U Sigma_ll + G_V Sigma_rl)
//   Sigma_ir = -(G_V Sigma_rr + G_U Sigma_lr)
//   Sigma_ii = Linv^T Linv - G_U Sigma_il^T - G_V Sigma_ir^T
//
// (about 18 n^3 flops per node against 16 n^3 with the four triangular solves), all on
// `8 x 8` DMMA fragments in `f64` (`crate::tile::fragment`), the operands copied in with
// `cp.async`, a few copies in flight per thread.
// ---------------------------------------------------------------------------------------

/// Largest block size of the warp-per-node staged kernels.
pub const WARP_NODE_MAX_N: usize = 16;

/// Node teams (warps) per block of the warp-per-node staged kernels.
pub const WARP_TEAMS: u32 = 4;

/// Shared tiles of one staged node team.
const STAGED_TILES: usize = 5;

/// Shared-memory elements of one staged node team: five tiles of `padded(n)` columns at
/// the fragment leading dimension (rows and columns padded to whole `8 x 8` tiles, kept
/// zero) and `padded(n)` reciprocals.
pub const fn staged_elems(n: usize) -> usize {
    STAGED_TILES * padded(n) * fragment_ld(n) + padded(n)
}

/// How the selected inversion of block size `n` is launched (see [`selinv_launch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelinvLaunch {
    /// The staged kernels ([`selinv_level_staged`], [`selinv_chain_staged`]) when the
    /// node's tiles fit in shared memory; otherwise the [`tiled`] kernels (level sweeps)
    /// or [`selinv_chain`] (chain factors), with [`Self::threads`] and
    /// [`Self::shared_bytes`] those of [`selinv_chain`].
    pub staged: bool,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: usize,
    /// Jobs (nodes, or systems for the chain) per block: grid `x` = `ceil(jobs / this)`.
    pub jobs_per_block: u32,
}

/// Launch shape of the selected inversion for block size `n` and `elem_bytes`-byte
/// elements on a GPU whose blocks may use `max_shared` bytes of shared memory (the
/// opt-in limit): one warp per node for `n <= 16` ([`WARP_TEAMS`] per block), one block
/// of 128 (`n <= 32`) or 256 threads per node while [`staged_elems`] fit, the unstaged
/// kernels above (on the H100, 227 KiB: staged up to `n = 72` in `f64`, 104 in `f32`).
///
/// ```
/// use blocktri_device::selinv::selinv_launch;
/// let h100 = 232_448;
/// let l = selinv_launch(16, 8, h100);
/// assert!(l.staged && l.jobs_per_block == 4 && l.threads == 128);
/// assert!(selinv_launch(72, 8, h100).staged && !selinv_launch(73, 8, h100).staged);
/// assert!(!selinv_launch(64, 8, 101_376).staged); // sm_86: 99 KiB
/// ```
pub const fn selinv_launch(n: usize, elem_bytes: usize, max_shared: usize) -> SelinvLaunch {
    let per_team = staged_elems(n) * elem_bytes;
    if n <= WARP_NODE_MAX_N && WARP_TEAMS as usize * per_team <= max_shared {
        SelinvLaunch { staged: true, threads: 32 * WARP_TEAMS, shared_bytes: WARP_TEAMS as usize * per_team, jobs_per_block: WARP_TEAMS }
    } else if n > WARP_NODE_MAX_N && per_team <= max_shared {
        SelinvLaunch { staged: true, threads: if n <= 32 { 128 } else { 256 }, shared_bytes: per_team, jobs_per_block: 1 }
    } else {
        SelinvLaunch { staged: false, threads: selinv_threads(n), shared_bytes: selinv_shared_bytes(n, elem_bytes), jobs_per_block: 1 }
    }
}

/// [`selinv_level`] on staged tiles: the nodes of level `args.level`, one per team of
/// [`selinv_launch`] (grid `x` = `ceil(systems * nodes / jobs_per_block)`).
///
/// # Safety
/// As [`selinv_level`], launched with a staged [`selinv_launch`]`(n, size_of::<T>(), _)`;
/// the buffers 16-byte aligned and `ld * size_of::<T>()` a multiple of 16 (the copies
/// move 16 bytes).
pub unsafe fn selinv_level_staged<T: Real>(args: &SelinvArgs<T>) {
    // SAFETY: the caller's launch shape; one team per job.
    unsafe { staged_dispatch(args, level_job::<T, Warp, 2, 2>, level_job::<T, Block, 2, 2>, level_job::<T, Block, 2, 4>) }
}

/// [`selinv_chain`] on staged tiles: one team of [`selinv_launch`] per system walks its
/// blocks from the last.
///
/// # Safety
/// As [`selinv_chain`], with the launch shape and alignment of [`selinv_level_staged`].
pub unsafe fn selinv_chain_staged<T: Real>(args: &SelinvArgs<T>) {
    // SAFETY: as in selinv_level_staged.
    unsafe { staged_dispatch(args, chain_job::<T, Warp, 2, 2>, chain_job::<T, Block, 2, 2>, chain_job::<T, Block, 2, 4>) }
}

/// One job per team: a warp and `2 x 2` fragment regions for `n <= 16` (this warp's part
/// of the block's shared memory), a 128-thread block and `2 x 2` regions for `n <= 32`,
/// a 256-thread block and `2 x 4` regions above.
///
/// # Safety
/// The launch shape of [`selinv_launch`] (staged).
#[inline(always)]
unsafe fn staged_dispatch<T: Real>(
    args: &SelinvArgs<T>,
    warp_job: unsafe fn(Warp, &SelinvArgs<T>, usize, *mut T),
    small_job: unsafe fn(Block, &SelinvArgs<T>, usize, *mut T),
    large_job: unsafe fn(Block, &SelinvArgs<T>, usize, *mut T),
) {
    let n = args.n as usize;
    let sh = shared::dynamic_shared::<T>();
    // SAFETY (all three): each team gets its own staged_elems(n) of shared memory.
    unsafe {
        if n <= WARP_NODE_MAX_N {
            let w = warp_id() as usize;
            warp_job(Warp, args, block_idx_x() as usize * WARP_TEAMS as usize + w, sh.add(w * staged_elems(n)));
        } else if n <= 32 {
            small_job(Block, args, block_idx_x() as usize, sh);
        } else {
            large_job(Block, args, block_idx_x() as usize, sh);
        }
    }
}

/// Node `job` of the launch's level (systems outer, nodes inner) on `team`.
///
/// # Safety
/// `sh`: [`staged_elems`] elements of this team's own shared memory; as
/// [`selinv_level_staged`].
#[inline(always)]
unsafe fn level_job<T: Real, M: Team, const RT: usize, const CT: usize>(team: M, args: &SelinvArgs<T>, job: usize, sh: *mut T) {
    let (nb, m) = (args.nblocks, args.level);
    let count = nodes_in_level(nb, m) as usize;
    if job >= args.systems as usize * count {
        return; // the whole team: its barriers are its own
    }
    let (s, t) = (job / count, job % count);
    let i = node_number(m, t as u32);
    let (li, ri) = (left_of(i, m), right_of(i, m, nb));
    let sigma_rl = sigma_rl_stored(args, s, li, ri);
    // SAFETY: forwarded; the tiles zeroed first (staged_node's contract).
    unsafe {
        let tiles = StagedTiles::zeroed(team, args.n as usize, sh);
        staged_node::<T, M, RT, CT>(team, args, &tiles, s, i, (li, ri), sigma_rl);
    }
}

/// System `job`'s chain walk on `team`.
///
/// # Safety
/// As [`level_job`], for the chain factor.
#[inline(always)]
unsafe fn chain_job<T: Real, M: Team, const RT: usize, const CT: usize>(team: M, args: &SelinvArgs<T>, job: usize, sh: *mut T) {
    if job >= args.systems as usize {
        return;
    }
    let nb = args.nblocks;
    // SAFETY: forwarded; staged_node keeps the tiles' padding zero and ends with a team
    // barrier, so block i + 1's outputs are complete and visible before block i reads them.
    unsafe {
        let tiles = StagedTiles::zeroed(team, args.n as usize, sh);
        for i in (1..=nb).rev() {
            let ri = if i < nb { Some(i + 1) } else { None };
            staged_node::<T, M, RT, CT>(team, args, &tiles, job, i, (None, ri), None);
        }
    }
}

/// Block `j` (1-based) of system `s` in one of the buffers.
#[inline(always)]
fn block_ptr<T: Real>(args: &SelinvArgs<T>, p: *const T, s: usize, j: u32) -> *const T {
    // SAFETY (of the callers' dereferences): inside the buffer of `systems * nblocks` blocks.
    unsafe { p.add((s * args.nblocks as usize + (j - 1) as usize) * args.ld as usize * args.n as usize) }
}

/// A team's shared tiles: [`STAGED_TILES`] of `np` columns at leading dimension `ld`, and
/// `np` reciprocals. Their padding (rows and columns `n..np`) is zero and stays zero: the
/// copies zero-fill rows past `n` and touch no column past it, the products emit only
/// `n x n`, and the inverse's padded rows and columns are zero.
struct StagedTiles<T> {
    base: *mut T,
    inv: *mut T,
    n: usize,
    np: usize,
    ld: usize,
}

impl<T: Real> StagedTiles<T> {
    /// Zeroes the team's [`staged_elems`]`(n)` elements at `sh`, then a team barrier.
    ///
    /// # Safety
    /// `sh` holds [`staged_elems`]`(n)` elements of shared memory of this team alone.
    #[inline(always)]
    unsafe fn zeroed<M: Team>(team: M, n: usize, sh: *mut T) -> Self {
        let (np, ld) = (padded(n), fragment_ld(n));
        // SAFETY: inside the team's elements.
        for_each_index(team, staged_elems(n), |e| unsafe { *sh.add(e) = T::ZERO });
        team.sync();
        StagedTiles { base: sh, inv: unsafe { sh.add(STAGED_TILES * np * ld) }, n, np, ld }
    }

    /// Tile `k`.
    #[inline(always)]
    fn tile(&self, k: usize) -> *mut T {
        // SAFETY: k < STAGED_TILES (callers use constants).
        unsafe { self.base.add(k * self.np * self.ld) }
    }

    /// Tile `k` as a column-major view.
    #[inline(always)]
    fn view(&self, k: usize) -> MatRef<T> {
        MatRef::col_major(self.tile(k) as *const T, self.ld)
    }

    /// Starts copying the `n x n` block at `src` (global, leading dimension `ld`) into
    /// tile `k`, 16 bytes per copy, rows `n..np` filled with zeros. Waited for by
    /// [`wait_copies`].
    ///
    /// # Safety
    /// `src` 16-byte aligned, `ld * size_of::<T>()` a multiple of 16, `n` columns of `ld`
    /// readable; nobody else touches tile `k` until the wait and a barrier.
    #[inline(always)]
    unsafe fn stage<M: Team>(&self, team: M, src: *const T, ld: usize, k: usize) {
        let per = 16 / T::BYTES;
        let chunks = self.np / per; // np is a multiple of 8: whole chunks
        let dst = self.tile(k);
        for_each_rc(team, chunks, self.n, |q, c| {
            let r = q * per;
            let valid = self.n.saturating_sub(r).min(per);
            // SAFETY: the caller's contract; `dst + c ld + r` stays inside the tile and is
            // 16-byte aligned (ld and np multiples of 4, the tile base of 16).
            unsafe { copy_async_16(dst.add(c * self.ld + r) as *mut u8, src.add(c * ld + r) as *const u8, (valid * T::BYTES) as u32) };
        });
    }
}

/// The staged equations (section comment above) for node `i` of system `s`, neighbours
/// `(li, ri)`, and `Sigma_rl` as stored (`(block, transposed)`) when both exist. Tiles:
/// `0` L_ii, then G_V; `1` L_li, then Sigma_ll, Sigma_rr, Sigma_il; `2` L_ri, then
/// Sigma_rl, Sigma_ir; `3` Linv; `4` G_U. Ends with a team barrier.
///
/// # Safety
/// `tiles` are this team's, padding zero (as [`StagedTiles::zeroed`] leaves them); the
/// neighbours' blocks of `Sigma` complete and visible; this node's outputs written by this
/// team alone; the alignment of [`selinv_level_staged`].
#[inline(always)]
unsafe fn staged_node<T: Real, M: Team, const RT: usize, const CT: usize>(
    team: M,
    args: &SelinvArgs<T>,
    tiles: &StagedTiles<T>,
    s: usize,
    i: u32,
    (li, ri): (Option<u32>, Option<u32>),
    sigma_rl: Option<(*const T, bool)>,
) {
    let (ld, n, np) = (args.ld as usize, tiles.n, tiles.np);
    let (warp, warps) = (team.group(), team.groups());
    let (l_ii, linv, g_u, g_v) = (0, 3, 4, 0);
    let out = |buf: *mut T| block_ptr(args, buf as *const T, s, i) as *mut T;
    let v = |k| tiles.view(k);
    let (one, minus) = (T::ONE, -T::ONE);
    // SAFETY (all blocks below): global blocks of system `s` inside their buffers (the
    // caller's contract), shared tiles of this team; every product reads tiles that a
    // barrier separates from their writes, and emits to global memory or to a tile that
    // no product of the same phase reads.
    unsafe {
        // L_ii, L_li, L_ri in; Linv = L_ii^-1 in strips.
        tiles.stage(team, block_ptr(args, args.diag, s, i), ld, l_ii);
        if li.is_some() {
            tiles.stage(team, block_ptr(args, args.left, s, i), ld, 1);
        }
        if ri.is_some() {
            tiles.stage(team, block_ptr(args, args.right, s, i), ld, 2);
        }
        wait_copies(team);
        diagonal_reciprocals(team, tiles.tile(l_ii), tiles.ld, n, np, tiles.inv);
        invert_lower_strips(team, tiles.tile(l_ii), tiles.tile(linv), tiles.ld, np, tiles.inv);
        // G_U = Linv^T L_li^T, G_V = Linv^T L_ri^T (over L_ii, no longer needed).
        let lt = v(linv).t();
        let put = |k: usize| {
            let dst = tiles.tile(k);
            let ld = tiles.ld;
            move |r: usize, c: usize, x: T| *dst.add(c * ld + r) = x
        };
        if li.is_some() {
            warp_product_sum::<T, RT, CT, 1>(warp, warps, n, n, np, [(lt, v(1).t(), one)], put(g_u));
        }
        if ri.is_some() {
            warp_product_sum::<T, RT, CT, 1>(warp, warps, n, n, np, [(lt, v(2).t(), one)], put(g_v));
        }
        team.sync();
        // Sigma_il = -(G_U Sigma_ll + G_V Sigma_rl), Sigma_ll in tile 1, Sigma_rl in 2.
        let to_global = |buf: *mut T| {
            let x = out(buf);
            move |r: usize, c: usize, val: T| *x.add(c * ld + r) = val
        };
        let rl_view = |transposed: bool| if transposed { v(2).t() } else { v(2) };
        if let Some(l) = li {
            tiles.stage(team, block_ptr(args, args.sigma_diag, s, l), ld, 1);
            if let Some((rl, _)) = sigma_rl {
                tiles.stage(team, rl, ld, 2);
            }
            wait_copies(team);
            let put = to_global(args.sigma_left);
            match sigma_rl {
                Some((_, tr)) => {
                    warp_product_sum::<T, RT, CT, 2>(warp, warps, n, n, np, [(v(g_u), v(1), minus), (v(g_v), rl_view(tr), minus)], put)
                }
                None => warp_product_sum::<T, RT, CT, 1>(warp, warps, n, n, np, [(v(g_u), v(1), minus)], put),
            }
            team.sync();
        }
        // Sigma_ir = -(G_V Sigma_rr + G_U Sigma_lr), Sigma_rr in tile 1, Sigma_lr = Sigma_rl^T.
        if let Some(r) = ri {
            tiles.stage(team, block_ptr(args, args.sigma_diag, s, r), ld, 1);
            wait_copies(team);
            let put = to_global(args.sigma_right);
            match sigma_rl {
                Some((_, tr)) => {
                    warp_product_sum::<T, RT, CT, 2>(warp, warps, n, n, np, [(v(g_v), v(1), minus), (v(g_u), rl_view(!tr), minus)], put)
                }
                None => warp_product_sum::<T, RT, CT, 1>(warp, warps, n, n, np, [(v(g_v), v(1), minus)], put),
            }
            team.sync();
        }
        // Sigma_ii = Linv^T Linv - G_U Sigma_il^T - G_V Sigma_ir^T, with Sigma_il (written
        // above by this team) back in tile 1 and Sigma_ir in tile 2. Only the lower
        // triangle is kept, mirrored: exactly symmetric.
        if li.is_some() {
            tiles.stage(team, out(args.sigma_left), ld, 1);
        }
        if ri.is_some() {
            tiles.stage(team, out(args.sigma_right), ld, 2);
        }
        wait_copies(team);
        let y = out(args.sigma_diag);
        let put = |r: usize, c: usize, x: T| {
            if r >= c {
                *y.add(c * ld + r) = x;
                *y.add(r * ld + c) = x;
            }
        };
        let (own, il, ir) = ((lt, v(linv), one), (v(g_u), v(1).t(), minus), (v(g_v), v(2).t(), minus));
        match (li, ri) {
            (Some(_), Some(_)) => warp_product_sum::<T, RT, CT, 3>(warp, warps, n, n, np, [own, il, ir], put),
            (Some(_), None) => warp_product_sum::<T, RT, CT, 2>(warp, warps, n, n, np, [own, il], put),
            (None, Some(_)) => warp_product_sum::<T, RT, CT, 2>(warp, warps, n, n, np, [own, ir], put),
            (None, None) => warp_product_sum::<T, RT, CT, 1>(warp, warps, n, n, np, [own], put),
        }
        team.sync();
    }
}
