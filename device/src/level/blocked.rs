//! The panel factorization blocked in 8-column strips, with the products on FP64 tensor
//! cores in `f64` (the sm_90 shapes `mma.sync.m16n8k16` / `m16n8k8` on Hopper builds,
//! `m8n8k4` on sm_80 builds): same storage, threads and solves as [`super::panel`], a
//! different step 3 and 5.
//!
//! [`super::panel::factor_panel`] spends one block barrier and a shared-memory load and
//! store per multiply-add on every column of the `3 NP x NP` panel, and its three
//! neighbour products run on scalar FMAs: at `n = 64` a lone node takes ~70 µs, bound by
//! the shared-memory pipe (`docs/perf-notes.md`, entry 15). Here the panel is factored in
//! 8-column strips by `crate::tile::strip8::factor_strips` (an `8 x 8` diagonal tile per
//! strip in one warp's registers, the strip rows one thread each, the trailing update in
//! tensor-core tiles with a look-ahead warp on the next diagonal tile).
//!
//! Two barriers per strip instead of eight. Then the neighbour products
//! `D_l -= K_l K_l^T`, `D_r -= K_r K_r^T` (lower tiles only, mirrored) and
//! `fill = -K_r K_l^T`, a warp per row tile and two column tiles in `f64` (`16 x 8` tiles
//! of one `m16n8k16` per 16 columns on sm_90, `8 x 8` tiles on `m8n8k4` on sm_80), one
//! `8 x 8` tile per warp in `f32`.
//!
//! `f32` has no DMMA: the same tiles on FP32 FMAs, lane `(g, t)` computing the two entries
//! that its DMMA fragment would hold.
//!
//! The panel's row stride is `NP + 4` (`≡ 4 mod 16`): the fragment reads of a half-warp
//! (lane `4g + t` reads row `g`, column `t`) hit distinct 8-byte bank pairs.
//!
//! [`factor_solve_blocked`] also does the forward substitution of up to a few right-hand-
//! side columns while the panel is in shared memory, so that a factor + solve call runs
//! only the backward sweep afterwards (`docs/perf-notes.md`, entry 78: -7 to -10 %).

use super::node::{Node, node};
use super::panel::{coupling_dot, forward_rows_in_warp, load_checked_panel, panel_threads, store_factor_panel};
use super::{FactorArgs, InfoCode, align_elems, info_key};
use crate::layout::fill_slot;
use crate::team::{Block, Team};
use crate::tile::FastDiv;
use crate::tile::strip8::{KB, factor_strips, tiles_minus_abt, tiles16_minus_abt};
use blocktri_prims::mma::has_sm90_dmma;
use blocktri_prims::{Real, atomic, shared};

/// Row stride of the shared panel (elements).
const fn stride(np: usize) -> usize {
    np + 4
}

/// Shared memory of [`factor_blocked`] in bytes with `nrhs` interlaced right-hand-side
/// columns: the panel, `1 / L_jj`, `np x nrhs` solution entries, two status words.
///
/// ```
/// use blocktri_device::level::factor_blocked_shared_bytes;
/// // One column more costs a column of the padded size.
/// assert_eq!(factor_blocked_shared_bytes(64, 1, 8) - factor_blocked_shared_bytes(64, 0, 8), 64 * 8);
/// ```
pub const fn factor_blocked_shared_bytes(np: usize, nrhs: usize, elem_bytes: usize) -> usize {
    (align_elems(3 * np * stride(np), elem_bytes) + align_elems(np, elem_bytes) + align_elems(np * nrhs, elem_bytes)) * elem_bytes + 16
}

/// Threads per block of the per-level launches of [`factor_blocked`] at padded size `np`
/// for elements of `elem_bytes` bytes, on a device whose blocks may opt in to
/// `max_shared` bytes of shared memory (the single-launch sweep,
/// [`super::factor_blocked_dataflow`], keeps [`panel_threads`]). The node body takes any
/// whole number of warps from two up; what decides the count is how many nodes share a
/// multiprocessor on the levels with many nodes, where each node's chain is
/// latency-bound. Measured on the H200 (`docs/perf-notes.md`, entry 72):
/// - `f64` at 64: 256 threads, the kernel capped at 128 registers (`build.rs`), two nodes
///   per multiprocessor instead of one (384 threads at 144 registers): level 0 of
///   `N = 4096` 652 -> 543 µs, the factor 1.57 -> 1.41 ms;
/// - `f64` at 32: 96 threads at 144 registers, four nodes per multiprocessor instead of
///   two: level 0 of `N = 8192` 274 -> 242 µs, the factor 0.673 -> 0.618 ms;
/// - `f32`: [`panel_threads`] with the kernels capped at 80 registers instead (two and
///   four nodes per multiprocessor instead of one and two): the factor 16-25 % faster.
///
/// Fewer warps per node pay only by fitting more nodes: where shared memory holds one
/// node per multiprocessor anyway (an A100's 163 KB at 64 in `f64`, 105 KB a node), the
/// node keeps every warp of [`panel_threads`] (not measured on an A100).
///
/// # Examples
/// ```
/// use blocktri_device::level::blocked::factor_blocked_threads;
/// assert_eq!(factor_blocked_threads(64, 8, 232_448), 256); // H100, H200
/// assert_eq!(factor_blocked_threads(64, 8, 166_912), 384); // A100
/// assert_eq!(factor_blocked_threads(32, 8, 166_912) % 32, 0);
/// ```
pub const fn factor_blocked_threads(np: usize, elem_bytes: usize, max_shared: usize) -> u32 {
    if 2 * factor_blocked_shared_bytes(np, 0, elem_bytes) > max_shared {
        return panel_threads(np);
    }
    match (elem_bytes, np) {
        (8, 64) => 256,
        (8, 32) => 96,
        _ => panel_threads(np),
    }
}

/// Eliminates one node: the panel of [`super::panel::factor_panel`], factored in strips
/// of 8 columns with tensor-core tile updates (see the module docs). Right-hand sides are
/// not touched ([`factor_solve_blocked`] interlaces them).
///
/// # Safety
/// As [`super::factor_level`] without right-hand sides, with a whole number of warps, at
/// least two ([`factor_blocked_threads`]`(NP)` measured best),
/// [`factor_blocked_shared_bytes`]`(NP, 0)` of shared memory and `args.n <= NP`, `NP` a
/// multiple of 32.
pub unsafe fn factor_blocked<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { factor_blocked_node::<T, NP, false>(args, &node(args.nblocks, args.level)) }
}

/// [`factor_blocked`] with the forward substitution of the `args.nrhs` right-hand-side
/// columns interlaced, like [`super::factor_level`]: warp 0 solves `L_ii y = b_i` while
/// the other warps run the neighbour products, then every warp subtracts `L_li y` and
/// `L_ri y` from the neighbours' right-hand sides. A kernel of its own, so that the
/// factor alone keeps its registers (with both in one kernel the factor alone was 0.7-2.3 %
/// slower on the H200, `docs/perf-notes.md` entry 78).
///
/// # Safety
/// As [`super::factor_level`] with `args.nrhs > 0` columns, with the threads of
/// [`factor_blocked`] and [`factor_blocked_shared_bytes`]`(NP, args.nrhs)` of shared
/// memory.
pub unsafe fn factor_solve_blocked<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { factor_blocked_node::<T, NP, true>(args, &node(args.nblocks, args.level)) }
}

/// [`factor_blocked`] (`RHS`: [`factor_solve_blocked`]) for node `nd` of level
/// `args.level` (the body shared with the single-launch sweeps, [`super::dataflow`]).
///
/// # Safety
/// As [`factor_blocked`] (or [`factor_solve_blocked`]); `nd` is a node of `args.level`
/// whose lower levels are complete and visible to the block.
// Inlined: left to LLVM it stayed a called function, which under the per-level kernels'
// 128-register cap spilled 52-96 bytes (and kept a 192-232-byte stack frame for the call)
// inside the strip loop; inlined, 126-128 registers and no spill at padded size 64, and
// 126 instead of 148 at 32 (f64 factor -4 to -9 %, `docs/perf-notes.md` entry 104).
#[inline(always)]
pub(crate) unsafe fn factor_blocked_node<T: Real, const NP: usize, const RHS: bool>(args: &FactorArgs<T>, nd: &Node) {
    let team = Block;
    let a = *args;
    let (n, m) = (a.n as usize, a.level);
    let s = stride(NP);
    let smem = shared::dynamic_shared::<T>();
    let p = smem;
    let inv = unsafe { smem.add(align_elems(3 * NP * s, T::BYTES)) };
    let nrhs = if RHS { a.nrhs as usize } else { 0 };
    let ybuf = unsafe { inv.add(align_elems(NP, T::BYTES)) };
    let status = unsafe { ybuf.add(align_elems(NP * nrhs, T::BYTES)) } as *mut u32;
    let failed = unsafe { status.add(1) };
    let (has_l, has_r) = (nd.left.is_some(), nd.right.is_some());

    // SAFETY: as the caller guarantees; the panel and status word are in shared memory.
    if !unsafe { load_checked_panel::<T, NP>(&a, nd, p, s, status) } {
        return;
    }
    // Strips cover the block size rounded up to 8: the padding is identity in D and zero
    // in the couplings, so its pivots are 1 and its multipliers 0.
    let tiles = n.div_ceil(KB);
    let nc = tiles * KB;
    // SAFETY: the panel's parts, `inv` and the status words in shared memory as sized;
    // every thread is here.
    let couplings = [has_l.then_some(NP), has_r.then_some(2 * NP)];
    unsafe { factor_strips(p, s, n, couplings, inv, failed) };
    if unsafe { core::ptr::read_volatile(failed) } != 0 {
        if team.rank() == 0 {
            unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(m, InfoCode::NotPositiveDefinite, nd.b as u32)) };
        }
        return;
    }

    // SAFETY: as the caller guarantees; the panel is factored.
    unsafe { store_factor_panel::<T, NP>(&a, nd, p, s) };
    // The interlaced forward substitution: warp 0 solves `L_ii y = b_i` while the other
    // warps run the neighbour products (both only read the panel), then every warp
    // subtracts `L_li y`, `L_ri y` from the neighbours' right-hand sides.
    let cols = if nrhs == 0 { 0 } else { nd.columns(a.nrhs, a.edge_from) };
    let warp = team.rank() / 32;
    let ldb = a.nblocks as usize * n;
    // System `nd.s` of the right-hand sides, when there are any.
    let rhs_sys = a.rhs.wrapping_add(nd.s * ldb * nrhs);
    let seg = |idx: usize| rhs_sys.wrapping_add(idx * n);
    if cols > 0 && warp == 0 {
        for col in 0..cols {
            // SAFETY: warp 0 alone writes `ybuf`; `L_ii` and `1 / L_jj` in the panel;
            // column `col` of the node's right-hand-side rows (its lower levels are done).
            unsafe { forward_rows_in_warp::<T, NP>(p, s, inv, ybuf.add(col * NP), seg(nd.b).add(col * ldb), n, !a.flags.is_null()) };
        }
    }
    // SAFETY: as the caller guarantees; nodes of one level write disjoint fills and add
    // into the neighbours' accumulators atomically.
    unsafe { neighbour_products::<T, NP>(&a, nd, p, s, nc, usize::from(cols > 0)) };
    if cols > 0 {
        team.sync();
        // Item (column, side, row): one row of a coupling times y, summed in column order
        // by one thread, one atomic add per neighbour entry and side (as the solves do).
        let items = cols * 2 * NP;
        let mut e = team.rank();
        while e < items {
            let (col, side, pr) = (e / (2 * NP), e / NP % 2, e % NP);
            let target = if side == 0 { nd.left } else { nd.right };
            if let (Some(j), true) = (target, pr < n) {
                let row = unsafe { p.add((NP * (1 + side) + pr) * s) };
                // SAFETY: the coupling's row inside the panel (columns up to NP); `ybuf`
                // column `col` holds y (barrier above).
                let acc = unsafe { coupling_dot(|c| *row.add(c), ybuf.add(col * NP), n) };
                unsafe { T::atomic_add_global(seg((j - 1) as usize).add(col * ldb + pr), -acc) };
            }
            e += team.size();
        }
    }
}

/// Step 5: `D_l -= K_l K_l^T`, `D_r -= K_r K_r^T` (atomic adds: two nodes update each
/// separator) and the fill `-K_r K_l^T` (stored), as tensor-core tiles over the warps
/// ([`product_items16`] on sm_90, [`product_items`] elsewhere); the symmetric updates
/// compute the tiles on and below the diagonal and add each entry below it at its mirror
/// too.
///
/// The warps from `first_warp` on take the work (warp 0 may be busy with the interlaced
/// substitution).
///
/// # Safety
/// As [`factor_blocked`]; the panel is factored and visible to every thread; the block has
/// more than `first_warp` warps.
#[inline(always)]
unsafe fn neighbour_products<T: Real, const NP: usize>(a: &FactorArgs<T>, nd: &Node, p: *const T, s: usize, nc: usize, first_warp: usize) {
    let team = Block;
    let (n, ld, m) = (a.n as usize, a.ld as usize, a.level);
    let (warp, lane) = (team.rank() / 32, team.rank() % 32);
    if warp < first_warp {
        return;
    }
    let (warp, warps) = (warp - first_warp, team.size() / 32 - first_warp);
    let (g, t) = (lane / 4, lane % 4);
    let sys_blocks = nd.s * a.nblocks as usize;
    let block = |base: *mut T, idx: usize| unsafe { base.add((sys_blocks + idx) * ld * n) };
    // Job j: (rows of the left factor, rows of the right factor, destination, symmetric
    // update). A match, not an array: an array indexed at run time lives on the stack.
    let job = |j: usize| -> Option<Job<T>> {
        match (j, nd.left, nd.right) {
            (0, Some(l), _) => Some((NP, NP, block(a.diag, (l - 1) as usize), true)),
            (1, _, Some(r)) => Some((2 * NP, 2 * NP, block(a.diag, (r - 1) as usize), true)),
            (2, Some(l), Some(r)) => {
                let (owner, is_left) = fill_slot(l, r, m);
                Some((2 * NP, NP, block(if is_left { a.left } else { a.right }, (owner - 1) as usize), false))
            }
            _ => None,
        }
    };
    // `16`-row tiles on the sm_90 DMMA shapes (entry 74); pairs of `8 x 8` column tiles
    // in `f64` elsewhere (entry 73); `f32`'s FMA tiles under their 80-register cap
    // measured slower paired.
    if T::BYTES == 8 && has_sm90_dmma() {
        unsafe { product_items16::<T, PRODUCT16_WIDTH>(p, s, (n, ld, nc), (warp, warps), (g, t), job) };
    } else if T::BYTES == 8 {
        unsafe { product_items::<T, 2>(p, s, (n, ld, nc), (warp, warps), (g, t), job) };
    } else {
        unsafe { product_items::<T, 1>(p, s, (n, ld, nc), (warp, warps), (g, t), job) };
    }
}

/// The work items of [`neighbour_products`] over warps `warp, warp + warps, ..`: a row
/// tile `ti` of job `j` and `W` consecutive column tiles, in one pass of
/// [`tiles_minus_abt`] (one `A` fragment, `2 W` independent DMMA chains, where one tile
/// per item left a warp's products waiting on a chain of two). A column past the last
/// repeats the last tile and drops the copy; symmetric jobs keep the tiles on and below
/// the diagonal.
///
/// # Safety
/// As [`neighbour_products`]; `job(j)` gives each job's row offsets in `p`, destination
/// block and whether it is symmetric (`None`: job absent).
#[inline(always)]
unsafe fn product_items<T: Real, const W: usize>(
    p: *const T,
    s: usize,
    (n, ld, nc): (usize, usize, usize),
    (warp, warps): (usize, usize),
    (g, t): (usize, usize),
    job: impl Fn(usize) -> Option<Job<T>>,
) {
    let tiles = nc / KB;
    for_each_item::<T, W>(tiles, tiles, (warp, warps), job, |(rows_a, rows_b, dst, symmetric), ti, tj0| {
        if symmetric && ti < tj0 {
            return;
        }
        let b: [*const T; W] =
            core::array::from_fn(|w| unsafe { p.add((rows_b + if w == 0 { tj0 } else { (tj0 + w).min(tiles - 1) } * KB) * s) });
        let acc = unsafe { tiles_minus_abt([[T::ZERO; 2]; W], p.add((rows_a + ti * KB) * s), s, b, s, nc) };
        let row = ti * KB + g;
        for (w, tile) in acc.iter().enumerate() {
            let tj = tj0 + w;
            // Tile 0 was checked above (at `W = 1` this is the loop as it was before the
            // pairs, which `f32` keeps).
            if w > 0 && (tj >= tiles || (symmetric && ti < tj)) {
                continue;
            }
            for (u, v) in tile.iter().enumerate() {
                let col = tj * KB + 2 * t + u;
                if row < n && col < n {
                    unsafe {
                        if symmetric {
                            T::atomic_add_global(dst.add(col * ld + row), *v);
                            if ti != tj {
                                T::atomic_add_global(dst.add(row * ld + col), *v);
                            }
                        } else {
                            *dst.add(col * ld + row) = *v;
                        }
                    }
                }
            }
        }
    });
}

/// A neighbour-product job: the rows of its two factors in the panel, its destination
/// block, and whether it is symmetric.
type Job<T> = (usize, usize, *mut T, bool);

/// Hands this warp's work items of [`neighbour_products`] to `item(job, ti, tj0)`: row
/// tile `ti < row_tiles` of each present job (`job(j)` for `j < 3`, `None`: absent) with
/// the `W` column tiles from `tj0` (of `tiles`), dealt round-robin over the warps. Index
/// math in u32 with multiply-high divisions (`usize` division is slow on the device).
#[inline(always)]
fn for_each_item<T, const W: usize>(
    row_tiles: usize,
    tiles: usize,
    (warp, warps): (usize, usize),
    job: impl Fn(usize) -> Option<Job<T>>,
    mut item: impl FnMut(Job<T>, usize, usize),
) {
    let items = tiles.div_ceil(W);
    let per_job = (row_tiles * items) as u32;
    let (by_job, by_items) = (FastDiv::new(per_job), FastDiv::new(items as u32));
    let mut e = warp as u32;
    while e < 3 * per_job {
        let (j, rem) = by_job.div_rem(e);
        let (ti, q) = by_items.div_rem(rem);
        e += warps as u32;
        if let Some(jb) = job(j as usize) {
            item(jb, ti as usize, W * q as usize);
        }
    }
}

/// Column tiles of `8` per work item of [`product_items16`].
const PRODUCT16_WIDTH: usize = 2;

/// [`product_items`] on the sm_90 DMMA shapes ([`tiles16_minus_abt`]): an item is a row
/// tile of 16 rows of job `j` and `W` consecutive column tiles of 8, one `m16n8k16` per
/// 16 columns of `k` and tile (eight `m8n8k4`s' work). Row tiles may reach past `nc` into
/// the panel's padding rows (inside the panel: `NP` is a multiple of 32), whose results
/// are dropped. Symmetric jobs skip items wholly above the diagonal and add each entry on
/// or below it, at its mirror too, so every entry of the destination gets one value.
///
/// # Safety
/// As [`product_items`], with `T = f64` and `has_sm90_dmma()`; each job's rows
/// `rows_a .. rows_a + 16 ceil(nc / 16)` lie inside the shared panel.
#[inline(always)]
unsafe fn product_items16<T: Real, const W: usize>(
    p: *const T,
    s: usize,
    (n, ld, nc): (usize, usize, usize),
    (warp, warps): (usize, usize),
    (g, t): (usize, usize),
    job: impl Fn(usize) -> Option<Job<T>>,
) {
    let tiles = nc / KB;
    for_each_item::<T, W>(nc.div_ceil(2 * KB), tiles, (warp, warps), job, |(rows_a, rows_b, dst, symmetric), ti, tj0| {
        let last_row = 2 * KB * ti + 2 * KB - 1;
        if symmetric && tj0 * KB > last_row {
            return;
        }
        let b: [*const T; W] = core::array::from_fn(|w| unsafe { p.add((rows_b + (tj0 + w).min(tiles - 1) * KB) * s) });
        let a_rows = unsafe { p.add((rows_a + 2 * KB * ti) * s) };
        let acc = unsafe { tiles16_minus_abt([[T::ZERO; 4]; W], [a_rows, a_rows.add(KB * s)], s, b, s, nc) };
        for (w, tile) in acc.iter().enumerate() {
            let tj = tj0 + w;
            if tj >= tiles || (symmetric && tj * KB > last_row) {
                continue;
            }
            for (i, v) in tile.iter().enumerate() {
                let (row, col) = (2 * KB * ti + g + KB * (i / 2), tj * KB + 2 * t + i % 2);
                if row >= n || col >= n {
                    continue;
                }
                unsafe {
                    if !symmetric {
                        *dst.add(col * ld + row) = *v;
                    } else if row >= col {
                        T::atomic_add_global(dst.add(col * ld + row), *v);
                        if row > col {
                            T::atomic_add_global(dst.add(row * ld + col), *v);
                        }
                    }
                }
            }
        }
    });
}
