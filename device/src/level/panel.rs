//! Level kernels for larger blocks (`32 < n <= NP`, `NP` = 32, 64 or 96 at compile time):
//! the lane-owns-rows scheme of [`super::rows`], with the rows in **shared memory**
//! (row-major, odd row stride) instead of registers, so that `n` up to 96 fits.
//!
//! Each of the three warps of a column group owns one part of the panel
//! `[D; A[l,i]; A[r,i]]` and each lane `R = NP / 32` of its rows; the `NP / 16` column
//! groups split the columns of those rows. An update is a broadcast load of the pivot
//! row entry, then a multiply-add per lane row in shared memory. The factorization is
//! right-looking over the whole panel with one block barrier per column and the column
//! scaling deferred to the end (as [`crate::tile::potrf_panel`]). The products give one
//! output row per lane row, four columns at a time, the groups taking turns.
//!
//! Storage, arguments and status words are those of [`super::factor`] and
//! [`super::solve`]; the panel factor does not interlace the forward substitution (the
//! host factors, then solves); the blocked factor does ([`super::factor_solve_blocked`],
//! with this module's `forward_rows_in_warp` and `coupling_dot`).

use super::node::{FactorBlocks, Node, load_checked, load_level_output, node};
use super::{FactorArgs, InfoCode, SolveArgs, align_elems, info_key};
use crate::layout::fill_slot;
use crate::team::{Block, Team};
use crate::tile::{copy_batched, for_each_rc};
use blocktri_prims::{Real, atomic, lane_id, shared, sync_warp, warp_id};

/// Threads of one column group: three warps, one per panel part.
pub const PANEL_THREADS: u32 = 96;

/// Column groups of the padded size `np`: the factor splits each row's columns among
/// `np / 16` groups of [`PANEL_THREADS`] threads (more warps per node hide the shared
/// memory latency of the serial column loop; shared memory allows one or two nodes per SM
/// at `np` = 64 or 96 in `f64`).
pub const fn panel_groups(np: usize) -> usize {
    np / 16
}

/// Threads per block of the panel factor kernels of padded size `np` (the solves take
/// [`panel_solve_threads`]).
pub const fn panel_threads(np: usize) -> u32 {
    PANEL_THREADS * panel_groups(np) as u32
}

/// Row stride of the shared panel and of the staged solve tiles ([`load_tiles`], also the
/// column solves', [`super::columns`]); odd: lanes reading a column hit different banks.
pub(super) const fn stride(np: usize) -> usize {
    np + 1
}

/// Shared memory of [`factor_panel`] in bytes.
pub const fn factor_panel_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    (align_elems(3 * np * stride(np), elem_bytes) + 2 * align_elems(np, elem_bytes)) * elem_bytes + 16
}

/// Shared tiles of a solve node: `L_ii`, with `staged` also both couplings.
pub(super) const fn tiles_in_shared(staged: bool) -> usize {
    if staged { 3 } else { 1 }
}

/// Shared memory of [`solve_forward_panel`] / [`solve_backward_panel`] in bytes: `L_ii`
/// and four vectors (the couplings are read from global memory).
pub const fn solve_panel_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    solve_panel_node_shared_bytes(np, false, elem_bytes)
}

/// Shared memory of the panel solve bodies in the single-launch sweeps
/// ([`super::solve_panel_dataflow`]): the couplings staged too.
pub const fn solve_panel_dataflow_shared_bytes(np: usize, elem_bytes: usize) -> usize {
    solve_panel_node_shared_bytes(np, true, elem_bytes)
}

const fn solve_panel_node_shared_bytes(np: usize, staged: bool, elem_bytes: usize) -> usize {
    (align_elems(tiles_in_shared(staged) * np * stride(np), elem_bytes) + 4 * align_elems(np, elem_bytes)) * elem_bytes + 16
}

/// Threads per block of the per-level panel solves of padded size `np`: warp 0 for the
/// triangular loop and one warp per side and 32 rows of the coupling products (the
/// single-launch sweeps take [`panel_threads`]: more threads stage the tiles faster).
pub const fn panel_solve_threads(np: usize) -> u32 {
    32 * (1 + 2 * (np / 32)) as u32
}

/// Eliminates one node with the shared-memory panel (see the module docs).
///
/// # Safety
/// As [`super::factor_level`] without right-hand sides (`args.nrhs` must be 0), with
/// [`panel_threads`]`(NP)` threads, [`factor_panel_shared_bytes`] of shared memory and
/// `args.n <= NP`, `NP` a multiple of 32.
pub unsafe fn factor_panel<T: Real, const NP: usize>(args: &FactorArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { factor_panel_node::<T, NP>(args, &node(args.nblocks, args.level)) }
}

/// [`factor_panel`] for node `nd` of level `args.level` (the body shared with the single-launch
/// sweeps, [`super::dataflow`]).
///
/// # Safety
/// As [`factor_panel`]; `nd` is a node of `args.level` whose lower levels are complete and visible
/// to the block.
pub(crate) unsafe fn factor_panel_node<T: Real, const NP: usize>(args: &FactorArgs<T>, nd: &Node) {
    let team = Block;
    let a = *args;
    let (n, ld, m) = (a.n as usize, a.ld as usize, a.level);
    let b = nd.b;
    let (has_l, has_r) = (nd.left.is_some(), nd.right.is_some());
    let info = unsafe { a.info.add(nd.s) };
    let blk = ld * n;
    let sys_blocks = nd.s * a.nblocks as usize;
    let block = |base: *mut T, idx: usize| unsafe { base.add((sys_blocks + idx) * blk) };
    let s = stride(NP);
    let smem = shared::dynamic_shared::<T>();
    let p = smem;
    let rs = unsafe { smem.add(align_elems(3 * NP * s, T::BYTES)) };
    let sq = unsafe { rs.add(align_elems(NP, T::BYTES)) };
    let status = unsafe { sq.add(align_elems(NP, T::BYTES)) } as *mut u32;
    // Thread roles: column group `g`, warp (panel part) and lane within the group.
    let groups = panel_groups(NP);
    let tid = team.rank();
    let (g, warp, lane) = (tid / 96, tid % 96 / 32, tid % 32);
    let at = |row: usize, col: usize| unsafe { p.add(row * s + col) };

    // 1.-2. Load and check.
    // SAFETY: as the caller guarantees; the panel and status word are in shared memory.
    if !unsafe { load_checked_panel::<T, NP>(&a, nd, p, s, status) } {
        return;
    }

    // 3. Right-looking factorization of the tall panel: P[i][j] -= P[i][k] P[j][k] / d_k for
    //    j > k, columns scaled at the end. The loops run to `n` (a runtime bound) so the
    //    compiler keeps them rolled: fully unrolled, it hoists a whole pivot column into
    //    registers and spills. The upper triangle of D is updated too (uniform trip counts
    //    for all lanes); it is never read as L and is stored as zero.
    let rows_per_lane = NP / 32;
    let mut failed = false;
    for k in 0..n {
        let d = unsafe { *at(k, k) };
        failed |= !(d > T::ZERO && d.is_finite());
        let r_k = d.rsqrt_fast();
        let inv_d = r_k * r_k;
        // Multipliers of this lane's rows (D rows at or above the pivot are final: 0).
        let f: [T; 3] = core::array::from_fn(|rr| {
            let local = lane + 32 * rr;
            let live = rr < rows_per_lane && (warp > 0 || local > k);
            if live { unsafe { (*at(warp * NP + local, k)) * inv_d } } else { T::ZERO }
        });
        // This group's columns: j > k with j = g (mod groups).
        let mut j = k + 1 + (g + groups - (k + 1) % groups) % groups;
        while j < n {
            let pivot = unsafe { *at(j, k) };
            for rr in 0..rows_per_lane {
                let cell = at(warp * NP + lane + 32 * rr, j);
                unsafe { *cell = (-f[rr]).mul_add(pivot, *cell) };
            }
            j += groups;
        }
        if team.rank() == 0 {
            unsafe {
                *rs.add(k) = r_k;
                *sq.add(k) = d * r_k;
            }
        }
        team.sync();
    }
    if team.rank() == 0 {
        for k in n..NP {
            unsafe {
                *rs.add(k) = T::ONE;
                *sq.add(k) = T::ONE;
            }
        }
    }
    team.sync();
    if failed {
        if team.rank() == 0 {
            unsafe { atomic::atomic_min_u64(info, info_key(m, InfoCode::NotPositiveDefinite, b as u32)) };
        }
        return;
    }
    // Scaling: column c below the diagonal by 1/sqrt(d_c); the diagonal becomes sqrt(d_c).
    for rr in 0..rows_per_lane {
        let local = lane + 32 * rr;
        let row = warp * NP + local;
        for c in (g..NP).step_by(groups) {
            let below = warp > 0 || c < local;
            unsafe {
                if below {
                    *at(row, c) = *at(row, c) * *rs.add(c);
                } else if c == local {
                    *at(row, c) = *sq.add(c);
                }
            }
        }
    }
    team.sync();

    // 4. Store L_ii (upper triangle zero), L_li, L_ri.
    // SAFETY: as the caller guarantees; the panel is factored.
    unsafe { store_factor_panel::<T, NP>(&a, nd, p, s) };
    // 5. Products, one per warp: D_l -= K_l K_l^T, D_r -= K_r K_r^T, fill = -K_r K_l^T.
    let job: Option<(*mut T, usize, usize, bool)> = match warp {
        0 if has_l => Some((block(a.diag, (nd.left.unwrap_or(1) - 1) as usize), NP, NP, true)),
        1 if has_r => Some((block(a.diag, (nd.right.unwrap_or(1) - 1) as usize), 2 * NP, 2 * NP, true)),
        2 if has_l && has_r => {
            let (l, r) = (nd.left.unwrap_or(1), nd.right.unwrap_or(1));
            let (owner, is_left) = fill_slot(l, r, m);
            Some((block(if is_left { a.left } else { a.right }, (owner - 1) as usize), 2 * NP, NP, false))
        }
        _ => None,
    };
    if let Some((dst, rows_of, cols_of, subtract)) = job {
        for rr in 0..rows_per_lane {
            let pr = lane + 32 * rr;
            if pr < n {
                // Groups take turns over the four-column output chunks.
                let mut q0 = 4 * g;
                while q0 < n {
                    let mut acc = [T::ZERO; 4];
                    for c in 0..n {
                        let v = unsafe { *at(rows_of + pr, c) };
                        for u in 0..4 {
                            let q = if q0 + u < NP { q0 + u } else { NP - 1 };
                            acc[u] = v.mul_add(unsafe { *at(cols_of + q, c) }, acc[u]);
                        }
                    }
                    for u in 0..4 {
                        if q0 + u < n {
                            let g = unsafe { dst.add((q0 + u) * ld + pr) };
                            if subtract {
                                unsafe { T::atomic_add_global(g, -acc[u]) };
                            } else {
                                unsafe { *g = -acc[u] };
                            }
                        }
                    }
                    q0 += 4 * groups;
                }
            }
        }
    }
}

/// Steps 1 and 2 of a panel factorization: loads `D` (input plus updates) into rows
/// `0..NP`, `A[l, i]` (the transpose of the stored `A[i, l]`) into rows `NP..2NP` and
/// `A[r, i]` into rows `2NP..3NP` of the row-major shared panel `p` (row stride `s`),
/// identity / zero padding outside `n x n`, then checks the entries. Returns `false` when
/// the node has nothing to do: an earlier level already failed, or its input is bad (then
/// recorded in the system's status word). Contains the barriers it needs; every thread of
/// the block calls it.
///
/// # Safety
/// As [`factor_panel`]; `p` holds `3 NP s` elements and `status` one word, both in shared
/// memory.
pub(super) unsafe fn load_checked_panel<T: Real, const NP: usize>(
    a: &FactorArgs<T>,
    nd: &Node,
    p: *mut T,
    s: usize,
    status: *mut u32,
) -> bool {
    let at = |row: usize, col: usize| unsafe { p.add(row * s + col) };
    // SAFETY: as the caller guarantees; `at` stays inside the panel.
    unsafe {
        load_checked::<T, NP, _>(
            Block,
            true,
            a,
            nd,
            status,
            |r, c, (d, lv, rv)| {
                *at(r, c) = d;
                *at(NP + c, r) = lv;
                *at(2 * NP + r, c) = rv;
            },
            |r, c| (*at(r, c), *at(NP + c, r), *at(2 * NP + r, c)),
            |r, c| *at(r, c),
        )
    }
}

/// Step 4 of a panel factorization: stores `L_ii` (upper triangle zero), `L_li` and
/// `L_ri` from the factored shared panel `p` (row stride `s`) as column-major blocks
/// (coalesced writes). No barrier.
///
/// # Safety
/// As [`factor_panel`]; the panel is factored and visible to every thread.
pub(super) unsafe fn store_factor_panel<T: Real, const NP: usize>(a: &FactorArgs<T>, nd: &Node, p: *const T, s: usize) {
    let (n, ld) = (a.n as usize, a.ld as usize);
    let at = |row: usize, col: usize| unsafe { *p.add(row * s + col) };
    let off = (nd.s * a.nblocks as usize + nd.b) * ld * n;
    // SAFETY: block `nd.b` of system `nd.s` is inside each array (caller's contract).
    let (dd, dl, dr) = unsafe { (a.diag.add(off), a.left.add(off), a.right.add(off)) };
    let (has_l, has_r) = (nd.left.is_some(), nd.right.is_some());
    for_each_rc(Block, n, n, |r, c| unsafe {
        *dd.add(c * ld + r) = if r >= c { at(r, c) } else { T::ZERO };
        if has_l {
            *dl.add(c * ld + r) = at(NP + r, c);
        }
        if has_r {
            *dr.add(c * ld + r) = at(2 * NP + r, c);
        }
    });
}

/// Loads `L_ii` of a node into a row-major shared tile (padded with identity), with
/// `STAGED` also `L_li` and `L_ri` into the next two, and `1 / L_jj` into `inv`. Ends with
/// a barrier. Only `L_ii`'s lower triangle is read; zeros land above it, where no solve
/// reads (f64, n = 64: solve -2.8 % at `N = 4096`, -4.4 % at 16384; perf-notes entry 105).
///
/// Two ways to read the couplings, each where it is faster (perf-notes entry 35): staged
/// in shared memory by the whole block at once (the shortest latency per node: the
/// single-launch top levels, whose nodes wait for each other), or read once each straight
/// from global memory inside the products, which leaves a node a third of the shared
/// memory so that three times as many nodes share an SM and their loads overlap each
/// other's serial triangular loops (the per-level launches over many nodes).
pub(super) unsafe fn load_tiles<T: Real, const NP: usize, const STAGED: bool>(a: &SolveArgs<T>, nd: &Node, tiles: *mut T, inv: *mut T) {
    let team = Block;
    let s = stride(NP);
    // SAFETY: forwarded from the caller.
    let blocks = unsafe { FactorBlocks::of(a, nd, STAGED) };
    copy_batched(
        team,
        NP,
        NP,
        |r, c| unsafe { blocks.lower_entry(r, c) },
        |r, c, (d, lv, rv)| unsafe {
            *tiles.add(r * s + c) = d;
            if STAGED {
                *tiles.add((NP + r) * s + c) = lv;
                *tiles.add((2 * NP + r) * s + c) = rv;
            }
        },
    );
    team.sync();
    crate::tile::for_each_index(team, NP, |j| unsafe { *inv.add(j) = T::ONE / *tiles.add(j * s + j) });
    team.sync();
}

/// Entry `(r, c)` of `L_ri` (`right`) or `L_li`: from the staged tiles, or from global
/// memory (see [`load_tiles`]); zero outside `n x n` and for a missing coupling.
///
/// # Safety
/// `tiles` as [`load_tiles`] filled them, `blocks` of the same node.
#[inline(always)]
pub(super) unsafe fn coupling_entry<T: Real, const NP: usize, const STAGED: bool>(
    tiles: *const T,
    blocks: &FactorBlocks<T>,
    right: bool,
    r: usize,
    c: usize,
) -> T {
    if STAGED {
        // SAFETY: r, c < NP: inside the tiles (padding rows and columns hold zeros).
        unsafe { *tiles.add((NP * (1 + usize::from(right)) + r) * stride(NP) + c) }
    } else {
        // SAFETY: forwarded.
        unsafe { blocks.coupling(right, r, c) }
    }
}

/// The factor tiles of node `nd` (see [`load_tiles`]) at the place both panel solve bodies
/// use: the single-launch solve calls it *before* waiting for the nodes the solve depends
/// on (the factor is complete before the launch), so that a node's largest load is off the
/// sweep's critical path. Ends with a barrier; every thread of the block calls it.
///
/// # Safety
/// As [`solve_forward_panel_node`], except that only the factorization needs to be
/// complete.
pub(crate) unsafe fn solve_panel_load_node<T: Real, const NP: usize, const STAGED: bool>(args: &SolveArgs<T>, nd: &Node) {
    let s = stride(NP);
    let tile = shared::dynamic_shared::<T>();
    // SAFETY: the bodies' layout: the tiles, then `1 / L_jj`.
    let inv = unsafe { tile.add(align_elems(tiles_in_shared(STAGED) * NP * s, T::BYTES)) };
    // SAFETY: forwarded from the caller.
    unsafe { load_tiles::<T, NP, STAGED>(args, nd, tile, inv) };
}

/// Forward substitution of one level with shared-memory tiles: warp 0 solves
/// `L_ii y = b_i` (lane `l` owns rows `l + 32 r`), warps 1 and 2 subtract `L_li y`, `L_ri y`
/// from the neighbours.
///
/// # Safety
/// As [`super::solve_forward_level`], with [`panel_solve_threads`]`(NP)` threads,
/// [`solve_panel_shared_bytes`] of shared memory and `args.n <= NP`.
pub unsafe fn solve_forward_panel<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { solve_forward_panel_node::<T, NP, false>(args, &node(args.nblocks, args.level), false) }
}

/// [`solve_forward_panel`] for node `nd` of level `args.level` (the body shared with the single-launch
/// sweeps, [`super::dataflow`]); `loaded`: [`solve_panel_load_node`] already filled the tiles.
///
/// # Safety
/// As [`solve_forward_panel`]; the forward sweep of `nd`'s lower levels is complete and visible to the
/// block.
pub(crate) unsafe fn solve_forward_panel_node<T: Real, const NP: usize, const STAGED: bool>(args: &SolveArgs<T>, nd: &Node, loaded: bool) {
    let team = Block;
    let a = *args;
    let coherent = !a.flags.is_null();
    let (n, k) = (a.n as usize, a.nrhs as usize);
    let s = stride(NP);
    let smem = shared::dynamic_shared::<T>();
    let tile = smem;
    let inv = unsafe { smem.add(align_elems(tiles_in_shared(STAGED) * NP * s, T::BYTES)) };
    let ybuf = unsafe { inv.add(align_elems(NP, T::BYTES)) };
    if !loaded {
        unsafe { load_tiles::<T, NP, STAGED>(&a, nd, tile, inv) };
    }
    // SAFETY: forwarded from the caller.
    let blocks = unsafe { FactorBlocks::of(&a, nd, true) };
    let coupling = |right, r, c| unsafe { coupling_entry::<T, NP, STAGED>(tile, &blocks, right, r, c) };
    let (warp, lane) = (warp_id() as usize, lane_id() as usize);
    let ldb = a.nblocks as usize * n;
    let rhs_sys = unsafe { a.rhs.add(nd.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    // Warps 1.. each take one side (odd: left, even: right) and 32 rows of the coupling
    // products.
    let (right, half) = (warp % 2 == 0, warp.saturating_sub(1) / 2);
    let target = match (warp, right) {
        (0, _) => None,
        (_, false) => nd.left,
        (_, true) => nd.right,
    };
    for col in 0..k {
        if warp == 0 {
            // SAFETY: warp 0 alone; `L_ii` and `1 / L_jj` in the tiles, `ybuf` NP entries,
            // column `col` of the node's right-hand-side rows.
            unsafe { forward_rows_in_warp::<T, NP>(tile, s, inv, ybuf, seg(nd.b).add(col * ldb), n, coherent) };
        }
        team.sync();
        // Row `pr` of `L_li y` (or `L_ri y`), summed over the columns in order by one lane:
        // each neighbour entry gets one atomic add per side.
        let pr = lane + 32 * half;
        if let (Some(j), true) = (target, pr < n) {
            let bj = unsafe { seg((j - 1) as usize).add(col * ldb) };
            // SAFETY: `ybuf` holds y (barrier above).
            let acc = unsafe { coupling_dot(|c| coupling(right, pr, c), ybuf, n) };
            unsafe { T::atomic_add_global(bj.add(pr), -acc) };
        }
        team.sync();
    }
}

/// `L_ii y = b` for one right-hand-side column, by one warp (lane `l` owns rows
/// `l + 32 r`): `b`'s `n` entries into `y` (zero past `n`), the substitution row by row in
/// shared memory, and `y` back into `b`. `tile` holds `L_ii` row-major (row stride `s`),
/// `inv` the reciprocal pivots. Shared by the forward solves and the blocked factor's
/// interlaced substitution, so that both give the same bits.
///
/// # Safety
/// Every lane of one warp calls it; `tile`, `inv` and `y` (`NP` entries) are in shared
/// memory that no other warp writes meanwhile; `b` holds `n <= NP` entries, read through
/// L2 when `coherent`.
#[inline(always)]
pub(super) unsafe fn forward_rows_in_warp<T: Real, const NP: usize>(
    tile: *const T,
    s: usize,
    inv: *const T,
    y: *mut T,
    b: *mut T,
    n: usize,
    coherent: bool,
) {
    let lane = lane_id() as usize;
    let rows_per_lane = NP / 32;
    for rr in 0..rows_per_lane {
        let i = lane + 32 * rr;
        unsafe { *y.add(i) = if i < n { load_level_output(b.add(i), coherent) } else { T::ZERO } };
    }
    sync_warp();
    for j in 0..n {
        // The owner of row j finishes y_j; then every lane updates its rows below j.
        if lane == j % 32 {
            unsafe { *y.add(j) = *y.add(j) * *inv.add(j) };
        }
        sync_warp();
        let yj = unsafe { *y.add(j) };
        for rr in 0..rows_per_lane {
            let i = lane + 32 * rr;
            if i > j {
                unsafe { *y.add(i) = (-*tile.add(i * s + j)).mul_add(yj, *y.add(i)) };
            }
        }
        sync_warp();
    }
    for rr in 0..rows_per_lane {
        let i = lane + 32 * rr;
        if i < n {
            unsafe { *b.add(i) = *y.add(i) };
        }
    }
}

/// One row of `L_li y` (or `L_ri y`): `sum_c coupling(c) y_c` over `c < n`, in column
/// order, eight loads in flight (a fully unrolled `NP` loop hoists every load: 254
/// registers at NP = 64, one block per SM). `coupling` may be asked for columns up to
/// `n` rounded up to 8 (their products are dropped).
///
/// # Safety
/// `y` holds `n` readable entries.
#[inline(always)]
pub(super) unsafe fn coupling_dot<T: Real>(coupling: impl Fn(usize) -> T, y: *const T, n: usize) -> T {
    const BATCH: usize = 8;
    let mut acc = T::ZERO;
    let mut c0 = 0;
    while c0 < n {
        let mut l = [T::ZERO; BATCH];
        for u in 0..BATCH {
            l[u] = coupling(c0 + u);
        }
        for u in 0..BATCH {
            if c0 + u < n {
                acc = l[u].mul_add(unsafe { *y.add(c0 + u) }, acc);
            }
        }
        c0 += BATCH;
    }
    acc
}

/// Backward substitution of one level with shared-memory tiles:
/// `z = y_i - L_li^T x_l - L_ri^T x_r` (lane `l` owns entries `l + 32 r`), then
/// `L_ii^T x_i = z` from the last entry up, in warp 0.
///
/// # Safety
/// As [`super::solve_backward_level`], with [`panel_solve_threads`]`(NP)` threads,
/// [`solve_panel_shared_bytes`] of shared memory and `args.n <= NP`.
pub unsafe fn solve_backward_panel<T: Real, const NP: usize>(args: &SolveArgs<T>) {
    // SAFETY: forwarded from the caller; the node of this block.
    unsafe { solve_backward_panel_node::<T, NP, false>(args, &node(args.nblocks, args.level), false) }
}

/// [`solve_backward_panel`] for node `nd` of level `args.level` (the body shared with the single-launch
/// sweeps, [`super::dataflow`]); `loaded`: [`solve_panel_load_node`] already filled the tiles.
///
/// # Safety
/// As [`solve_backward_panel`]; the backward sweep of `nd`'s neighbours and `nd`'s forward substitution
/// are complete and visible to the block.
pub(crate) unsafe fn solve_backward_panel_node<T: Real, const NP: usize, const STAGED: bool>(args: &SolveArgs<T>, nd: &Node, loaded: bool) {
    let team = Block;
    let a = *args;
    let coherent = !a.flags.is_null();
    let (n, k) = (a.n as usize, a.nrhs as usize);
    let s = stride(NP);
    let smem = shared::dynamic_shared::<T>();
    let tile = smem;
    let inv = unsafe { smem.add(align_elems(tiles_in_shared(STAGED) * NP * s, T::BYTES)) };
    let xl = unsafe { inv.add(align_elems(NP, T::BYTES)) };
    let xr = unsafe { xl.add(align_elems(NP, T::BYTES)) };
    let z = unsafe { xr.add(align_elems(NP, T::BYTES)) };
    if !loaded {
        unsafe { load_tiles::<T, NP, STAGED>(&a, nd, tile, inv) };
    }
    // SAFETY: forwarded from the caller.
    let blocks = unsafe { FactorBlocks::of(&a, nd, true) };
    let coupling = |right, r, c| unsafe { coupling_entry::<T, NP, STAGED>(tile, &blocks, right, r, c) };
    let (warp, lane, warps) = (warp_id() as usize, lane_id() as usize, team.groups());
    let ldb = a.nblocks as usize * n;
    let rhs_sys = unsafe { a.rhs.add(nd.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    let rows_per_lane = NP / 32;
    let mut bad = false;
    for col in 0..k {
        let neighbour = |nb: Option<u32>, dst: *mut T| {
            let src = nb.map(|j| unsafe { seg((j - 1) as usize).add(col * ldb) });
            crate::tile::for_each_index(team, NP, |i| unsafe {
                *dst.add(i) = match src {
                    Some(src) if i < n => load_level_output(src.add(i), coherent),
                    _ => T::ZERO,
                }
            });
        };
        neighbour(nd.left, xl);
        neighbour(nd.right, xr);
        team.sync();
        // z_c = y_c - (L_li^T x_l + L_ri^T x_r)_c.
        let bi = unsafe { seg(nd.b).add(col * ldb) };
        if STAGED {
            // From shared memory: each lane its own entries, in warp 0, which solves next.
            if warp == 0 {
                for rr in 0..rows_per_lane {
                    let c = lane + 32 * rr;
                    let mut v = if c < n { unsafe { load_level_output(bi.add(c), coherent) } } else { T::ZERO };
                    for pp in 0..n {
                        unsafe {
                            v = (-coupling(false, pp, c)).mul_add(*xl.add(pp), v);
                            v = (-coupling(true, pp, c)).mul_add(*xr.add(pp), v);
                        }
                    }
                    unsafe { *z.add(c) = v };
                }
            }
        } else {
            // From global memory: column c of both couplings read by one warp along its rows
            // (coalesced), a fixed shuffle tree for the sum; the warps take the columns in
            // turn. (One column per pass: four in flight raised the registers from 40 to 86
            // and was slower, perf-notes entry 35.)
            let mut c = warp;
            while c < n {
                let mut part = T::ZERO;
                for rr in 0..rows_per_lane {
                    let pp = lane + 32 * rr;
                    unsafe {
                        part = coupling(false, pp, c).mul_add(*xl.add(pp), part);
                        part = coupling(true, pp, c).mul_add(*xr.add(pp), part);
                    }
                }
                let mut m = 16;
                while m > 0 {
                    part += part.shfl_xor(m);
                    m /= 2;
                }
                if lane == 0 {
                    unsafe { *z.add(c) = load_level_output(bi.add(c), coherent) - part };
                }
                c += warps;
            }
        }
        team.sync();
        if warp == 0 {
            for jj in 0..n {
                let j = n - 1 - jj;
                if lane == j % 32 {
                    unsafe { *z.add(j) = *z.add(j) * *inv.add(j) };
                }
                sync_warp();
                let x = unsafe { *z.add(j) };
                for rr in 0..rows_per_lane {
                    let c = lane + 32 * rr;
                    if c < j {
                        unsafe { *z.add(c) = (-*tile.add(j * s + c)).mul_add(x, *z.add(c)) };
                    }
                }
                sync_warp();
            }
            for rr in 0..rows_per_lane {
                let c = lane + 32 * rr;
                if c < n {
                    let v = unsafe { *z.add(c) };
                    bad |= !v.is_finite();
                    unsafe { *bi.add(c) = v };
                }
            }
        }
        team.sync();
    }
    if bad {
        unsafe { atomic::atomic_min_u64(a.info.add(nd.s), info_key(a.level, InfoCode::NonFiniteSolution, nd.b as u32)) };
    }
}
