//! Single-launch sweeps: every level of a factorization, or both sweeps of a solve, in
//! one kernel launch, the nodes ordered by completion flags instead of launch boundaries.
//!
//! The per-level launches ([`super::factor_rows`] and the solves) pay a kernel's fixed
//! cost on each of the `log2 N + 1` levels, and each level's last wave leaves the GPU
//! idle. Here every thread block takes a *ticket* (an atomic counter, so the `k`-th block
//! to start gets `k`) and runs the `k`-th node in level order: level 0 first for the
//! factorization and the forward substitution, the top level first for the backward
//! substitution. It waits until the nodes its node depends on have published completion,
//! runs the same node body as the per-level kernel, then publishes its own. A solve node
//! stages its factor blocks into shared memory *before* it waits (the factor is complete
//! before the launch; only right-hand sides change during it), so that its largest load
//! is not on the sweep's critical path (`docs/perf-notes.md`, entry 43).
//!
//! **No deadlock**: a node waits only for nodes of lower tickets, and tickets go out in
//! the order blocks start, so every node a running block waits for belongs to a block that
//! is running or done; no resident block ever waits for one that cannot be scheduled.
//!
//! **Dependencies** (1-based block numbers; node `i` of level `m`):
//! - factorization and forward substitution: node `i` of level `m` is updated (its diagonal
//!   accumulator, its fill couplings, its right-hand-side segment) by exactly the nodes
//!   `i - 2^l` and `i + 2^l`, `l < m`, that exist: those have `i` as a neighbour on their
//!   level. It waits for two of them, [`upward_deps`]: the left child `i - 2^(m-1)` and, on
//!   the right, `i + 2^l` for the largest `l < m` inside the chain, which is the child
//!   `i + 2^(m-1)` unless the chain ends before it. Each of those waits the same way, so
//!   the waits reach every updater: on the left `i - 2^(m-1)` waits for `i - 2^(m-2)`, and so
//!   on; on the right `i + 2^l` waits for `i + 2^(l-1)`. (Waiting for the two children
//!   alone misses the right updaters when the chain ends inside the right subtree: node 8
//!   of N = 11 is updated by node 10 of level 1, whose own parent 12 does not exist.)
//!   Nodes of one level that update the same block do so with atomic adds, as in the
//!   per-level kernels.
//! - backward substitution: the neighbours `i - 2^m` and `i + 2^m` (their solutions), and
//!   `i`'s own forward substitution when the launch runs both sweeps.
//!
//! **Memory ordering**: a finished block passes a barrier, then thread 0 stores the flag
//! with release semantics (`st.release.gpu`: cumulative over the writes the barrier ordered
//! before it); a waiting block's thread 0 spins on the flags with acquire loads
//! (`ld.acquire.gpu`), then a barrier lets the block go on. No separate fences. Values that other blocks
//! of the launch wrote are read through L2 (`load_coherent`, chosen by the non-null `flags`
//! argument), never through the non-coherent read-only cache.
//!
//! **Flags** (`u32` words, zeroed by the host before each launch): word 0 is the ticket
//! counter, then one completion flag per (system, block) and sweep.

use super::blocked::factor_blocked_node;
use super::columns::{solve_backward_columns_node, solve_columns_load_node, solve_forward_columns_node};
use super::node::{Node, node_at};
use super::panel::{factor_panel_node, solve_backward_panel_node, solve_forward_panel_node, solve_panel_load_node};
use super::rows::{factor_rows_node, solve_backward_rows_node, solve_forward_rows_node, solve_rows_load_node};
use super::{FactorArgs, SolveArgs};
use crate::layout::{levels, node_number, nodes_in_level};
use blocktri_prims::sync::{load_acquire_u32, sleep_ns, store_release_u32};
use blocktri_prims::{Real, atomic, static_shared, sync_threads, thread_idx_x};

/// [`SolveArgs::sweeps`] bit: the launch runs the forward substitution.
pub const SWEEP_FORWARD: u32 = 1;
/// [`SolveArgs::sweeps`] bit: the launch runs the backward substitution (always set).
pub const SWEEP_BACKWARD: u32 = 2;

/// Flag words of a single-launch factorization: the ticket counter, one flag per block.
pub const fn factor_flag_words(systems: usize, nblocks: usize) -> usize {
    1 + systems * nblocks
}

/// Flag words of a single-launch solve: the ticket counter, one flag per block and sweep.
pub const fn solve_flag_words(systems: usize, nblocks: usize) -> usize {
    1 + 2 * systems * nblocks
}

/// Nodes of `systems` systems of `nblocks` blocks on levels `first` and above: the blocks
/// (one per node) of a single-launch sweep that starts at level `first`.
pub const fn nodes_from(nblocks: u32, systems: u32, first: u32) -> u32 {
    let mut count = 0;
    let mut m = first;
    while m < levels(nblocks) {
        count += nodes_in_level(nblocks, m);
        m += 1;
    }
    systems * count
}

/// The node of ticket `k` among the nodes of a sweep over levels `first..` of `systems`
/// systems: `(level, system, t)`, node `t` of that level. Levels go upward (`first`
/// first) or downward (to `first`); inside a level, system-major as in the per-level
/// grids. `k < nodes_from(nblocks, systems, first)`.
#[inline(always)]
pub fn ticket_node(k: u32, nblocks: u32, systems: u32, upward: bool, first: u32) -> (u32, u32, u32) {
    let top = levels(nblocks);
    let mut rest = k;
    let mut step = 0;
    while first + step < top {
        let m = if upward { first + step } else { top - 1 - step };
        let nodes = nodes_in_level(nblocks, m);
        if rest < systems * nodes {
            return (m, rest / nodes, rest % nodes);
        }
        rest -= systems * nodes;
        step += 1;
    }
    (top, 0, 0)
}

/// 1-based numbers of the nodes that node `t` of level `m` waits for in an upward sweep
/// that starts at level `first`, `0` for none (see the module docs): the left child
/// `i - 2^(m-1)` and the nearest right updater `i + 2^l`, `l < m` the largest with
/// `i + 2^l <= nblocks`; only those on levels `first..` (the others ran in earlier launches).
#[inline(always)]
pub fn upward_deps(m: u32, t: u32, nblocks: u32, first: u32) -> [u32; 2] {
    if m <= first {
        return [0, 0];
    }
    let i = node_number(m, t);
    let left = i - (1 << (m - 1));
    let right = if i < nblocks {
        // Largest l with 2^l <= nblocks - i, at most m - 1.
        let l = (31 - (nblocks - i).leading_zeros()).min(m - 1);
        if l >= first { i + (1 << l) } else { 0 }
    } else {
        0
    };
    [left, right]
}

/// Takes this block's ticket from `counter`; every thread gets it. Contains a barrier;
/// call once per block. (Tickets from the block index, relying on blocks starting in
/// index order, measured the same on the H100: `docs/perf-notes.md`, entry 18.)
///
/// # Safety
/// `counter` is a valid global word that only tickets touch during the launch.
#[inline(always)]
pub(crate) unsafe fn take_ticket(counter: *mut u32) -> u32 {
    let slot = static_shared!(u32, 1);
    if thread_idx_x() == 0 {
        // SAFETY: the caller's counter; `slot` is this block's shared word.
        unsafe { *slot = atomic::atomic_add_u32(counter, 1) };
    }
    sync_threads();
    // SAFETY: written above, before the barrier, and never again.
    unsafe { *slot }
}

/// Waits until every flag in `deps` (null: none) is set, then lets the block go on.
/// Contains a barrier; every thread calls it.
///
/// # Safety
/// Each non-null pointer is a flag of this launch set by a block of a lower ticket.
#[inline(always)]
pub(crate) unsafe fn wait_for(deps: [*const u32; 3]) {
    if thread_idx_x() == 0 {
        for flag in deps {
            if flag.is_null() {
                continue;
            }
            // The emulator runs blocks one after another in ticket order: a flag not yet set
            // would be a dependency on a later ticket, which on the device could deadlock.
            #[cfg(not(target_arch = "nvptx64"))]
            assert!(unsafe { load_acquire_u32(flag) } != 0, "a node waits for a node of a later ticket");
            // SAFETY: a valid flag (caller's contract).
            while unsafe { load_acquire_u32(flag) } == 0 {
                sleep_ns(32);
            }
        }
    }
    sync_threads();
}

/// Publishes the block's node as done: a barrier (every thread's writes are issued), then
/// thread 0 sets `flag` with release semantics. Every thread calls it.
///
/// # Safety
/// `flag` is this node's flag of the launch.
#[inline(always)]
pub(crate) unsafe fn publish(flag: *mut u32) {
    sync_threads();
    if thread_idx_x() == 0 {
        // SAFETY: the caller's flag.
        unsafe { store_release_u32(flag, 1) };
    }
}

/// `flags + 1 + index`, or null for `number == 0` (no node); `number` is 1-based within
/// system `s` of `nblocks` blocks, `base` the first flag of the sweep.
#[inline(always)]
fn flag_of(base: *mut u32, s: u32, nblocks: u32, number: u32) -> *const u32 {
    if number == 0 { core::ptr::null() } else { base.wrapping_add((s * nblocks + number - 1) as usize) }
}

/// Levels `args.level..` of a factorization in one launch, `body` eliminating each node
/// (a per-level kernel's node body).
///
/// # Safety
/// As [`factor_rows_dataflow`], for `body`'s kernel.
#[inline(always)]
unsafe fn factor_sweep<T: Real>(args: &FactorArgs<T>, body: impl Fn(&FactorArgs<T>, &Node)) {
    let a = *args;
    // SAFETY (flags): the launch's zeroed words (caller's contract).
    let ticket = unsafe { take_ticket(a.flags) };
    let (m, s, t) = ticket_node(ticket, a.nblocks, a.systems, true, a.level);
    let done = a.flags.wrapping_add(1);
    let [l, r] = upward_deps(m, t, a.nblocks, a.level);
    // SAFETY: flags of nodes of lower tickets (lower levels).
    unsafe { wait_for([flag_of(done, s, a.nblocks, l), flag_of(done, s, a.nblocks, r), core::ptr::null()]) };
    let nd = node_at(a.nblocks, m, s, t);
    // Every node that updates this one has published (above).
    body(&FactorArgs { level: m, ..a }, &nd);
    // SAFETY: this node's flag.
    unsafe { publish(flag_of(done, s, a.nblocks, nd.b as u32 + 1) as *mut u32) };
}

/// Levels `args.level..` of a solve in one launch, `forward` and `backward` solving for
/// each node (a per-level kernel's node bodies) after `load` brought the node's factor
/// blocks into shared memory. `load` runs before the block waits for the nodes it depends
/// on: the factor is complete before the launch, and only the right-hand sides are what
/// the other nodes of the launch write, so the node's largest load overlaps the wait
/// instead of lengthening the sweep's critical path.
///
/// # Safety
/// As [`solve_rows_dataflow`], for the bodies' kernels.
#[inline(always)]
unsafe fn solve_sweeps<T: Real>(
    args: &SolveArgs<T>,
    load: impl Fn(&SolveArgs<T>, &Node),
    forward: impl Fn(&SolveArgs<T>, &Node),
    backward: impl Fn(&SolveArgs<T>, &Node),
) {
    let a = *args;
    let (nb, systems) = (a.nblocks, a.systems);
    let with_forward = a.sweeps & SWEEP_FORWARD != 0;
    let per_sweep = nodes_from(nb, systems, a.level);
    let flags_per_sweep = systems * nb;
    let (forward_done, backward_done) = (a.flags.wrapping_add(1), a.flags.wrapping_add(1 + flags_per_sweep as usize));
    // SAFETY (flags): the launch's zeroed words (caller's contract).
    let ticket = unsafe { take_ticket(a.flags) };
    if with_forward && ticket < per_sweep {
        let (m, s, t) = ticket_node(ticket, nb, systems, true, a.level);
        let [l, r] = upward_deps(m, t, nb, a.level);
        let (nd, am) = (node_at(nb, m, s, t), SolveArgs { level: m, ..a });
        load(&am, &nd);
        // SAFETY: flags of nodes of lower tickets (lower levels).
        unsafe { wait_for([flag_of(forward_done, s, nb, l), flag_of(forward_done, s, nb, r), core::ptr::null()]) };
        // Every node that updates this one's segment has published.
        forward(&am, &nd);
        // SAFETY: this node's flag.
        unsafe { publish(flag_of(forward_done, s, nb, nd.b as u32 + 1) as *mut u32) };
        return;
    }
    let k = if with_forward { ticket - per_sweep } else { ticket };
    let (m, s, t) = ticket_node(k, nb, systems, false, a.level);
    let nd = node_at(nb, m, s, t);
    let own = if with_forward { flag_of(forward_done, s, nb, nd.b as u32 + 1) } else { core::ptr::null() };
    let (l, r) = (nd.left.unwrap_or(0), nd.right.unwrap_or(0));
    let am = SolveArgs { level: m, ..a };
    load(&am, &nd);
    // SAFETY: the neighbours are on higher levels (lower backward tickets); the node's own
    // forward ticket is below every backward ticket.
    unsafe { wait_for([flag_of(backward_done, s, nb, l), flag_of(backward_done, s, nb, r), own]) };
    // The neighbours' solutions and the node's forward result are visible.
    backward(&am, &nd);
    // SAFETY: this node's flag.
    unsafe { publish(flag_of(backward_done, s, nb, nd.b as u32 + 1) as *mut u32) };
}

/// Levels `args.level..` of the factorization in one launch of the register-resident
/// node body ([`super::factor_rows`]); `args.level = 0` is the whole factorization.
///
/// # Safety
/// As [`super::factor_rows`] for each of those levels, with `x` grid
/// [`nodes_from`]`(nblocks, systems, level)` and `args.flags` pointing to
/// [`factor_flag_words`] zeroed words; [`super::factor_prep`] and the levels below
/// `args.level` ran before (stream order).
pub unsafe fn factor_rows_dataflow<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: the caller's contract; each node runs after its updaters.
    unsafe { factor_sweep(args, |a, nd| factor_rows_node::<T, NP, false>(a, nd)) }
}

/// [`factor_rows_dataflow`] with the interlaced forward substitution
/// ([`super::factor_solve_rows`]'s node body): a node's right-hand-side segment is
/// updated by the same nodes as its diagonal block, so the same waits cover it.
///
/// # Safety
/// As [`super::factor_solve_rows`] for each level from `args.level`, with the grid and
/// flags of [`factor_rows_dataflow`].
pub unsafe fn factor_solve_rows_dataflow<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: the caller's contract; each node runs after its updaters.
    unsafe { factor_sweep(args, |a, nd| factor_rows_node::<T, NP, true>(a, nd)) }
}

/// [`factor_rows_dataflow`] with the shared-memory panel node body
/// ([`super::factor_panel`]; no interlaced right-hand sides).
///
/// # Safety
/// As [`super::factor_panel`] for each level from `args.level`, with the grid and flags
/// of [`factor_rows_dataflow`].
pub unsafe fn factor_panel_dataflow<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: the caller's contract; each node runs after its updaters.
    unsafe { factor_sweep(args, |a, nd| factor_panel_node::<T, NP>(a, nd)) }
}

/// [`factor_rows_dataflow`] with the blocked panel node body ([`super::factor_blocked`];
/// no interlaced right-hand sides).
///
/// # Safety
/// As [`super::factor_blocked`] for each level from `args.level`, with the grid and flags
/// of [`factor_rows_dataflow`].
pub unsafe fn factor_blocked_dataflow<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: the caller's contract; each node runs after its updaters.
    unsafe { factor_sweep(args, |a, nd| factor_blocked_node::<T, NP, false>(a, nd)) }
}

/// [`factor_blocked_dataflow`] with the interlaced forward substitution
/// ([`super::factor_solve_blocked`]'s node body): a node's right-hand-side segment is
/// updated by the same nodes as its diagonal block, so the same waits cover it.
///
/// # Safety
/// As [`super::factor_solve_blocked`] for each level from `args.level`, with the grid and
/// flags of [`factor_rows_dataflow`].
pub unsafe fn factor_solve_blocked_dataflow<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: the caller's contract; each node runs after its updaters.
    unsafe { factor_sweep(args, |a, nd| factor_blocked_node::<T, NP, true>(a, nd)) }
}

/// Levels `args.level..` of a solve in one launch: the forward substitution upward (with
/// [`SWEEP_FORWARD`] in `args.sweeps`), then the backward substitution down to
/// `args.level`, with the register-resident node bodies ([`super::solve_forward_rows`],
/// [`super::solve_backward_rows`]); `args.level = 0` is the whole solve.
///
/// # Safety
/// As those kernels for each of those levels, with `x` grid
/// [`nodes_from`]`(nblocks, systems, level)` per sweep and `args.flags` pointing to
/// [`solve_flag_words`] zeroed words; the factorization and the forward substitution of
/// the levels below `args.level` (of every level without [`SWEEP_FORWARD`]) complete
/// (stream order); the backward substitution of those levels follows (stream order).
pub unsafe fn solve_rows_dataflow<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: the caller's contract; each node runs after the nodes it reads.
    unsafe {
        solve_sweeps(
            args,
            |a, nd| solve_rows_load_node::<T, NP>(a, nd),
            |a, nd| solve_forward_rows_node::<T, NP>(a, nd),
            |a, nd| solve_backward_rows_node::<T, NP>(a, nd),
        )
    }
}

/// [`solve_rows_dataflow`] with the shared-memory panel node bodies
/// ([`super::solve_forward_panel`], [`super::solve_backward_panel`]).
///
/// # Safety
/// As those kernels for each level from `args.level`, with the grid and flags of
/// [`solve_rows_dataflow`], but [`super::panel_threads`]`(NP)` threads and
/// [`super::solve_panel_dataflow_shared_bytes`] of shared memory (the couplings staged).
pub unsafe fn solve_panel_dataflow<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: the caller's contract; each node runs after the nodes it reads.
    unsafe {
        solve_sweeps(
            args,
            |a, nd| solve_panel_load_node::<T, NP, true>(a, nd),
            |a, nd| solve_forward_panel_node::<T, NP, true>(a, nd, true),
            |a, nd| solve_backward_panel_node::<T, NP, true>(a, nd, true),
        )
    }
}

/// [`solve_panel_dataflow`] with the column node bodies ([`super::columns`]:
/// [`super::columns::COLUMN_GROUP`] right-hand-side columns per pass).
///
/// # Safety
/// As [`solve_panel_dataflow`], with [`super::columns::columns_threads`]`(NP, true,
/// args.nrhs)` threads, [`super::columns::solve_panel_columns_shared_bytes`]`(NP, args.nrhs, true)` of
/// shared memory and `NP` 8, 16, 32 or 64.
pub unsafe fn solve_panel_columns_dataflow<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: the caller's contract; each node runs after the nodes it reads.
    unsafe {
        solve_sweeps(
            args,
            |a, nd| solve_columns_load_node::<T, NP>(a, nd),
            |a, nd| forward_columns_called::<T, NP>(a, nd),
            |a, nd| backward_columns_called::<T, NP>(a, nd),
        )
    }
}

// The column node bodies are inlined into the per-level kernels (no call frame: solves with
// 32 columns at N = 4096 -9 to -23 %), but stay called functions here: both inlined into
// the one kernel made the single launch 14-34 % slower at N = 512 (`docs/perf-notes.md`,
// entry 104).

/// [`solve_forward_columns_node`] as a called function, for [`solve_panel_columns_dataflow`].
///
/// # Safety
/// As [`solve_forward_columns_node`] with the staged layout, the node's tiles loaded.
#[inline(never)]
unsafe fn forward_columns_called<T: Real, const NP: usize>(a: &SolveArgs<T>, nd: &Node) {
    // SAFETY: forwarded.
    unsafe { solve_forward_columns_node::<T, NP, true>(a, nd, true) }
}

/// [`solve_backward_columns_node`] as a called function, for [`solve_panel_columns_dataflow`].
///
/// # Safety
/// As [`solve_backward_columns_node`] with the staged layout, the node's tiles loaded.
#[inline(never)]
unsafe fn backward_columns_called<T: Real, const NP: usize>(a: &SolveArgs<T>, nd: &Node) {
    // SAFETY: forwarded.
    unsafe { solve_backward_columns_node::<T, NP, true>(a, nd, true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_visit_every_block_once_and_dependencies_come_first() {
        for nb in 1..70u32 {
            for (systems, first) in [(1u32, 0u32), (3, 0), (2, 1), (1, 3)] {
                for upward in [true, false] {
                    let count = nodes_from(nb, systems, first);
                    let mut when = std::vec![u32::MAX; (systems * nb) as usize];
                    for k in 0..count {
                        let (m, s, t) = ticket_node(k, nb, systems, upward, first);
                        assert!(m >= first && m < levels(nb) && t < nodes_in_level(nb, m));
                        let b = (s * nb + node_number(m, t) - 1) as usize;
                        assert_eq!(when[b], u32::MAX, "block visited twice");
                        when[b] = k;
                    }
                    // Exactly the blocks on levels `first..` (level of block number i: trailing zeros).
                    for (b, &k) in when.iter().enumerate() {
                        let level = ((b as u32 % nb) + 1).trailing_zeros();
                        assert_eq!(k != u32::MAX, level >= first, "block {b} of N = {nb}, first level {first}");
                    }
                    for k in 0..count {
                        let (m, s, t) = ticket_node(k, nb, systems, upward, first);
                        let at = |number: u32| when[(s * nb + number - 1) as usize];
                        if upward {
                            for c in upward_deps(m, t, nb, first).into_iter().filter(|&c| c != 0) {
                                assert!(at(c) < k, "dependency {c} of a level-{m} node after it (N = {nb})");
                            }
                        } else {
                            let nd = node_at(nb, m, s, t);
                            for nbr in [nd.left, nd.right].into_iter().flatten() {
                                assert!(at(nbr) < k, "neighbour {nbr} after level-{m} node (N = {nb})");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dependencies_are_the_children_or_the_nearest_right_updater() {
        // Block 8 (level 3) of 12: children 4 and 12 (level 2).
        assert_eq!(upward_deps(3, 0, 12, 0), [4, 12]);
        // Block 8 of 11: 12 is past the chain; 10 (level 1) updates 8 and is waited for.
        assert_eq!(upward_deps(3, 0, 11, 0), [4, 10]);
        // Block 8 of 9: only 9 (level 0) on the right.
        assert_eq!(upward_deps(3, 0, 9, 0), [4, 9]);
        assert_eq!(upward_deps(3, 0, 8, 0), [4, 0]);
        assert_eq!(upward_deps(0, 5, 12, 0), [0, 0]);
        assert_eq!(upward_deps(1, 1, 12, 0), [5, 7]);
        // A sweep from level 3: its first level waits for nothing (earlier launches).
        assert_eq!(upward_deps(3, 0, 12, 3), [0, 0]);
        // From level 1: 9 (level 0) ran before the launch, 10 (level 1) is in it.
        assert_eq!(upward_deps(3, 0, 11, 1), [4, 10]);
        assert_eq!(upward_deps(3, 0, 9, 1), [4, 0]);
    }

    /// Every node that updates node `i` (has `i` as a neighbour on its level, a level of
    /// the sweep) is reached by following the waits from `i`: the factorization never
    /// reads a block before its last update is published.
    #[test]
    fn the_waits_reach_every_updater() {
        for nb in 1..300u32 {
            for first in 0..levels(nb) {
                let level = |i: u32| i.trailing_zeros();
                let deps = |i: u32| {
                    let m = level(i);
                    upward_deps(m, ((i >> m) - 1) / 2, nb, first)
                };
                for i in 1..=nb {
                    if level(i) < first {
                        continue;
                    }
                    let mut reached = std::vec![false; nb as usize + 1];
                    let mut stack = std::vec![i];
                    while let Some(j) = stack.pop() {
                        for d in deps(j).into_iter().filter(|&d| d != 0) {
                            assert!(level(d) >= first && level(d) < level(j), "N = {nb}: {j} waits for {d}");
                            if !reached[d as usize] {
                                reached[d as usize] = true;
                                stack.push(d);
                            }
                        }
                    }
                    for j in 1..=nb {
                        let l = level(j);
                        let neighbour = l < level(i) && (j + (1 << l) == i || j == i + (1 << l));
                        if neighbour && l >= first {
                            assert!(reached[j as usize], "N = {nb}, first level {first}: {i} does not wait for its updater {j}");
                        }
                    }
                }
            }
        }
    }
}
