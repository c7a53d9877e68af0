//! What the rows and panel factor kernels share: which node a thread block eliminates,
//! where its inputs are, how an input entry is read (with the padding of the padded size)
//! and how it is checked.

use super::{FactorArgs, INFO_OK, InfoCode, info_key};
use crate::layout::{left_of, node_number, nodes_in_level, right_of};
use crate::team::Team;
use crate::tile::{copy_batched, for_each_rc};
use blocktri_prims::memory::{load_coherent, load_readonly};
use blocktri_prims::{Real, atomic, block_idx_x};

/// The node of this thread block: system `s`, 0-based block `b`, its 1-based neighbours at
/// this level.
pub(crate) struct Node {
    pub s: usize,
    pub b: usize,
    pub left: Option<u32>,
    pub right: Option<u32>,
}

impl Node {
    /// Whether the node has no left or no right neighbour at its elimination. Those nodes
    /// are exactly the blocks on the elimination-tree paths from the system's first and
    /// last block to the root: a node with no surviving neighbour on one side has every
    /// block of that side below it, and an ancestor of the first (last) block has nothing
    /// left (right) of it by the time it is eliminated (`plan.rs` tests it exhaustively).
    #[inline(always)]
    pub(crate) fn on_edge(&self) -> bool {
        self.left.is_none() || self.right.is_none()
    }

    /// The right-hand-side columns the node solves of `nrhs`: all on an edge
    /// ([`Self::on_edge`]), else the first `edge_from` ([`super::SolveArgs::edge_from`]).
    #[inline(always)]
    pub(crate) fn columns(&self, nrhs: u32, edge_from: u32) -> usize {
        let (all, edge_from) = (nrhs as usize, edge_from as usize);
        if self.on_edge() || edge_from >= all { all } else { edge_from }
    }
}

/// Block `s * nodes + t` of the grid is node `t` of level `level` of system `s`.
#[inline(always)]
pub(crate) fn node(nblocks: u32, level: u32) -> Node {
    let nodes = nodes_in_level(nblocks, level);
    let bx = block_idx_x();
    node_at(nblocks, level, bx / nodes, bx % nodes)
}

/// The node of slot `sub` of this thread block when `per` nodes share each block (the
/// packed rows kernels): node `block * per + sub` of the level, counted over all systems
/// as in [`node`]; `false` for a slot past the last node (its node is then the last one,
/// never written to).
#[inline(always)]
pub(crate) fn packed_node(nblocks: u32, systems: u32, level: u32, per: u32, sub: u32) -> (Node, bool) {
    let nodes = nodes_in_level(nblocks, level);
    let total = systems * nodes;
    let g = block_idx_x() * per + sub;
    let live = g < total;
    let g = g.min(total - 1);
    (node_at(nblocks, level, g / nodes, g % nodes), live)
}

/// Node `t` of level `level` of system `s`.
#[inline(always)]
pub(crate) fn node_at(nblocks: u32, level: u32, s: u32, t: u32) -> Node {
    let i = node_number(level, t);
    Node { s: s as usize, b: (i - 1) as usize, left: left_of(i, level), right: right_of(i, level, nblocks) }
}

/// Loads a value that earlier levels wrote: through L2 ([`load_coherent`]) when
/// `coherent` (the single-launch sweeps, where those levels are other blocks of the same
/// launch), else through the read-only cache (an earlier launch wrote it).
///
/// # Safety
/// `ptr` is valid and aligned in global memory, its writers ordered before this load.
#[inline(always)]
pub(crate) unsafe fn load_level_output<T: Real>(ptr: *const T, coherent: bool) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { if coherent { load_coherent(ptr) } else { load_readonly(ptr) } }
}

/// The inputs of a node's factorization: `D_i` (input plus the updates accumulated by
/// lower levels), the couplings to its left and right neighbours (`A[l, i]` transposed as
/// stored, `A[r, i]`), null when there is no neighbour.
#[derive(Clone, Copy)]
pub(crate) struct Sources<T> {
    d_in: *const T,
    d_acc: *const T,
    left: *const T,
    right: *const T,
    first_level: bool,
    /// Accumulators and fill written in this launch ([`load_level_output`]).
    coherent: bool,
    n: usize,
    ld: usize,
}

impl<T: Real> Sources<T> {
    /// The sources of node `nd` of `a`'s level.
    ///
    /// # Safety
    /// `a` satisfies [`super::factor_level`]'s contract and `nd` is a node of its level.
    #[inline(always)]
    pub(crate) unsafe fn of(a: &FactorArgs<T>, nd: &Node) -> Self {
        let (n, ld) = (a.n as usize, a.ld as usize);
        let blk = ld * n;
        let sys_blocks = nd.s * a.nblocks as usize;
        let first_level = a.level == 0;
        // SAFETY (all offsets): blocks of system `nd.s` inside the arrays (caller's contract).
        let block = |base: *mut T, idx: usize| unsafe { base.add((sys_blocks + idx) * blk) as *const T };
        let sub_block = |idx: usize| unsafe { a.sub.add((nd.s * (a.nblocks as usize - 1) + idx) * blk) };
        let left = match nd.left {
            Some(_) if first_level => sub_block(nd.b - 1),
            Some(_) => block(a.left, nd.b),
            None => core::ptr::null(),
        };
        let right = match nd.right {
            Some(_) if first_level => sub_block(nd.b),
            Some(_) => block(a.right, nd.b),
            None => core::ptr::null(),
        };
        let d_in = unsafe { a.diag_in.add((sys_blocks + nd.b) * blk) };
        Sources { d_in, d_acc: block(a.diag, nd.b), left, right, first_level, coherent: !a.flags.is_null(), n, ld }
    }

    /// Entry `(r, c)` of `(D_i, A[l, i]^T as stored, A[r, i])`; outside `n x n` the padding
    /// of a padded size: identity in `D`, zero in the couplings.
    ///
    /// # Safety
    /// As [`Sources::of`]; the accumulators of levels above 0 are complete (stream order).
    #[inline(always)]
    pub(crate) unsafe fn entry(&self, r: usize, c: usize) -> (T, T, T) {
        if r >= self.n || c >= self.n {
            return (if r == c { T::ONE } else { T::ZERO }, T::ZERO, T::ZERO);
        }
        let at = c * self.ld + r;
        // SAFETY: r, c < n: inside the blocks.
        unsafe {
            // Level 0 reads the input sub-diagonal (never written); above, the fill.
            let fill = self.coherent && !self.first_level;
            let acc = if self.first_level { T::ZERO } else { load_level_output(self.d_acc.add(at), self.coherent) };
            let lv = if self.left.is_null() { T::ZERO } else { load_level_output(self.left.add(at), fill) };
            let rv = if self.right.is_null() { T::ZERO } else { load_level_output(self.right.add(at), fill) };
            (load_readonly(self.d_in.add(at)) + acc, lv, rv)
        }
    }
}

/// The input check of entry `(r, c)`: `(d, lv, rv)` its values, `mirror` = `D(c, r)`,
/// `drr`, `dcc` the diagonal entries. `u32::MAX` when fine, else an [`InfoCode`]:
/// non-finite values, or an asymmetric `D` (`|D(r,c) - D(c,r)|^2 > tol^2 |D(r,r) D(c,c)|`,
/// no square root per entry; NaN counts as asymmetric).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the entry, its mirror and its two diagonal entries
pub(crate) fn entry_status<T: Real>(d: T, lv: T, rv: T, mirror: T, drr: T, dcc: T, r: usize, c: usize, tol: T) -> u32 {
    if !(d.is_finite() && lv.is_finite() && rv.is_finite()) {
        InfoCode::NonFinite as u32
    } else if r > c {
        let diff = d - mirror;
        let symmetric = diff * diff <= tol * tol * (drr * dcc).abs();
        if symmetric { u32::MAX } else { InfoCode::NotSymmetric as u32 }
    } else {
        u32::MAX
    }
}

/// Steps 1 and 2 of the rows, panel and blocked factor kernels, for any shared layout:
/// loads the node's entries `(D, A[l, i]^T as stored, A[r, i])` of the padded size `NP`
/// ([`Sources::entry`]) and hands each to `store`; returns `false` at once when an earlier
/// level of the system already failed; then checks every entry of the `n x n` block, read
/// back through `entry` (`D` alone through `d`), with [`entry_status`], and records the
/// first problem in the system's status word (then also `false`). `status` is one word of
/// shared memory. Contains its barriers (two, whatever the outcome): every thread of the
/// block calls it, as one of the block's teams ([`crate::team::Block`], or a
/// [`crate::team::LaneSlice`] per packed node). A team with `live` false (a packed slot
/// past the last node) only passes the barriers and gets `false`.
///
/// # Safety
/// `a` satisfies [`super::factor_level`]'s contract and `nd` is the team's node; `store`
/// writes where `entry` and `d` read, in the team's shared memory.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the team, its node and the three accessors of its layout
pub(crate) unsafe fn load_checked<T: Real, const NP: usize, M: Team>(
    team: M,
    live: bool,
    a: &FactorArgs<T>,
    nd: &Node,
    status: *mut u32,
    store: impl FnMut(usize, usize, (T, T, T)),
    entry: impl Fn(usize, usize) -> (T, T, T),
    d: impl Fn(usize, usize) -> T,
) -> bool {
    let (n, m) = (a.n as usize, a.level);
    let info = unsafe { a.info.add(nd.s) };
    // SAFETY: the team's node, `a` as the caller guarantees.
    let src = unsafe { Sources::of(a, nd) };
    if team.rank() == 0 {
        unsafe { *status = u32::MAX };
    }
    let recorded = unsafe { core::ptr::read_volatile(info) };
    let earlier_failed = recorded != INFO_OK && (recorded >> 40) < m as u64;
    if live {
        copy_batched(team, NP, NP, |r, c| unsafe { src.entry(r, c) }, store);
    }
    team.sync();
    let check = live && !earlier_failed;
    if check {
        for_each_rc(team, n, n, |r, c| {
            let (dv, lv, rv) = entry(r, c);
            let code = entry_status(dv, lv, rv, d(c, r), d(r, r), d(c, c), r, c, a.sym_tol);
            if code != u32::MAX {
                unsafe { atomic::atomic_min_u32(status, code) };
            }
        });
    }
    team.sync();
    if !check {
        return false;
    }
    let input_status = unsafe { *status };
    if input_status != u32::MAX {
        if team.rank() == 0 {
            let code = InfoCode::from_u32(input_status).unwrap_or(InfoCode::NonFinite);
            unsafe { atomic::atomic_min_u64(info, info_key(m, code, nd.b as u32)) };
        }
        return false;
    }
    true
}

/// Where a node's factor blocks are for the solves: `L_ii`, `L_li`, `L_ri` (the couplings
/// null when absent or not wanted).
#[derive(Clone, Copy)]
pub(crate) struct FactorBlocks<T> {
    diag: *const T,
    left: *const T,
    right: *const T,
    n: usize,
    ld: usize,
}

impl<T: Real> FactorBlocks<T> {
    /// The factor blocks of node `nd`; the couplings only when `couplings`.
    ///
    /// # Safety
    /// `a` satisfies [`super::solve_forward_level`]'s contract and `nd` is a node of its level.
    #[inline(always)]
    pub(crate) unsafe fn of(a: &super::SolveArgs<T>, nd: &Node, couplings: bool) -> Self {
        let (n, ld) = (a.n as usize, a.ld as usize);
        let off = (nd.s * a.nblocks as usize + nd.b) * ld * n;
        // SAFETY: block `nd.b` of system `nd.s` is inside each array (caller's contract).
        let (diag, left, right) = unsafe { (a.diag.add(off), a.left.add(off), a.right.add(off)) };
        let pick = |p: *const T, present: bool| if couplings && present { p } else { core::ptr::null() };
        FactorBlocks { diag, left: pick(left, nd.left.is_some()), right: pick(right, nd.right.is_some()), n, ld }
    }

    /// Entry `(r, c)` of `L_ri` (`right`) or `L_li`, read from global memory; zero outside
    /// `n x n` and for a missing (or not requested) coupling. Consecutive `r` on
    /// consecutive lanes read consecutive addresses (column-major blocks).
    ///
    /// # Safety
    /// As [`FactorBlocks::entry`].
    #[inline(always)]
    pub(crate) unsafe fn coupling(&self, right: bool, r: usize, c: usize) -> T {
        let base = if right { self.right } else { self.left };
        if r >= self.n || c >= self.n || base.is_null() {
            return T::ZERO;
        }
        // SAFETY: r, c < n: inside the block.
        unsafe { load_readonly(base.add(c * self.ld + r)) }
    }

    /// Entry `(r, c)` of `(L_ii, L_li, L_ri)`; outside `n x n` identity / zero padding.
    ///
    /// # Safety
    /// As [`FactorBlocks::of`]; the factorization is complete (stream order).
    #[inline(always)]
    pub(crate) unsafe fn entry(&self, r: usize, c: usize) -> (T, T, T) {
        // SAFETY: forwarded.
        unsafe { self.entry_from(r, c, true) }
    }

    /// [`FactorBlocks::entry`] with `L_ii` zero above its diagonal, not read: for the
    /// solves that use only its lower triangle, which saves the loads of the other
    /// (about a sixth of a node's bytes with both couplings).
    ///
    /// # Safety
    /// As [`FactorBlocks::entry`].
    #[inline(always)]
    pub(crate) unsafe fn lower_entry(&self, r: usize, c: usize) -> (T, T, T) {
        // SAFETY: forwarded.
        unsafe { self.entry_from(r, c, r >= c) }
    }

    /// [`FactorBlocks::entry`], `L_ii`'s entry read only where `diag_read`, else zero.
    ///
    /// # Safety
    /// As [`FactorBlocks::entry`].
    #[inline(always)]
    unsafe fn entry_from(&self, r: usize, c: usize, diag_read: bool) -> (T, T, T) {
        if r >= self.n || c >= self.n {
            return (if r == c { T::ONE } else { T::ZERO }, T::ZERO, T::ZERO);
        }
        let at = c * self.ld + r;
        // SAFETY: r, c < n: inside the blocks.
        unsafe {
            let lv = if self.left.is_null() { T::ZERO } else { load_readonly(self.left.add(at)) };
            let rv = if self.right.is_null() { T::ZERO } else { load_readonly(self.right.add(at)) };
            let d = if diag_read { load_readonly(self.diag.add(at)) } else { T::ZERO };
            (d, lv, rv)
        }
    }
}
