//! The tiled engine's kernels run in the CPU block emulator with the executor's launch
//! sequence (`host/src/cuda/cholesky/tiled.rs`): factor and solve against the dense
//! reference in f64 (FP64 `mma.sync` emulated lane by lane) and f32; failures name the
//! system and block. Output buffers start poisoned (NaN).

mod common;

use blocktri::{BlockTridiag, BlockVec, Scalar};
use blocktri_device::layout::{levels, nodes_in_level};
use blocktri_device::level::{INFO_OK, InfoCode, decode_info};
use blocktri_device::tiled::factor::{
    CARRY_IN, CARRY_OUT, ColumnUpdate, RoundingInput, WIDE_THREADS, carry_elems, column_update, neighbour_blocks, neighbour_sides,
    neighbours, panel_blocks, potrf, potrf_shared_bytes, prep, prep_rounding, prep_shared_bytes, product_kernel_shared_bytes,
    shape_kernel_shared_bytes, trsm, update, update_diagonal, update_trsm, wide_product_kernel_shared_bytes,
};
use blocktri_device::tiled::inverse::{
    backward_inverse, forward_inverse, inverse_copy, inverse_elems, inverse_parts, inverse_scratch_elems, inverse_solve_chunk,
    inverse_solve_shared_bytes, inverse_step, inverts_level,
};
use blocktri_device::tiled::product::{ACC, CopyPlan, Panel, product_nt_planned, product_shared_bytes};
use blocktri_device::tiled::solve::{
    BACKWARD_ROW_GROUPS, MAX_CHUNK, SOLVE_THREADS, backward_couple, backward_diag, backward_node, backward_split, couple_shared_bytes,
    couple_sides, couple_threads, diag_solve_shared_bytes, forward_couple, forward_diag, forward_node, forward_split, node_walk_chunk,
    node_walk_shared_bytes, split_flag_offset, split_flag_words, split_walk_chunk, split_walk_shared_bytes, splits_walks, walks_nodes,
};
use blocktri_device::tiled::{
    Narrow, Native, PRODUCT_THREADS, ProductShape, TILE, Tall, Tf32, Tf32x3, TileMac, TiledArgs, WIDE_PRODUCT_THREADS, WIDE_TILE, Wide,
    Wide16, WideTf32x3, dinv_elems, tiles,
};
use blocktri_prims::emu;
use common::{dense_solution, error_vs_reference, fresh_seed, problem};

/// SMs the launch widths are chosen for: few, so that the cases run both forward
/// coupling widths (wide at the top levels, narrow below).
const EMULATED_SMS: u32 = 2;

struct Device<T> {
    ld: usize,
    diag_in: Vec<T>,
    sub_in: Vec<T>,
    diag: Vec<T>,
    left: Vec<T>,
    right: Vec<T>,
    dinv: Vec<T>,
    info: Vec<u64>,
    solve_info: Vec<u64>,
    rhs: Vec<T>,
    /// The inverse solves' scratch area.
    scratch: Vec<T>,
    /// The column look-ahead's carried accumulators (two halves: steps alternate).
    carry: Vec<T>,
}

fn upload<T: Scalar>(a: &BlockTridiag<T>, b: &BlockVec<T>) -> Device<T> {
    let ld = a.shape().block.div_ceil(8) * 8;
    let a = a.repad(ld).unwrap();
    let shape = a.shape();
    let len = shape.batch * shape.nblocks * ld * shape.block;
    Device {
        ld,
        diag_in: a.diag().to_vec(),
        sub_in: a.sub().to_vec(),
        diag: vec![T::NAN; len],
        left: vec![T::NAN; len],
        right: vec![T::NAN; len],
        dinv: vec![
            T::NAN;
            shape.batch * shape.nblocks * dinv_elems(shape.block) + inverse_elems(shape.batch, shape.nblocks, shape.block, ld)
        ],
        info: vec![INFO_OK; shape.batch],
        solve_info: vec![INFO_OK; shape.batch],
        rhs: b.as_slice().to_vec(),
        scratch: vec![T::NAN; inverse_scratch_elems(shape.batch, shape.nblocks, shape.block)],
        carry: vec![T::NAN; 2 * carry_half(shape.batch, shape.block)],
    }
}

fn args<T: Scalar>(
    d: &mut Device<T>,
    a: &BlockTridiag<T>,
    level: u32,
    step: u32,
    side: u32,
    solve: Option<(usize, usize)>,
) -> TiledArgs<T> {
    let shape = a.shape();
    TiledArgs {
        diag_in: d.diag_in.as_ptr(),
        sub: d.sub_in.as_ptr(),
        diag: d.diag.as_mut_ptr(),
        left: d.left.as_mut_ptr(),
        right: d.right.as_mut_ptr(),
        dinv: d.dinv.as_mut_ptr(),
        info: if solve.is_some() { d.solve_info.as_mut_ptr() } else { d.info.as_mut_ptr() },
        rhs: d.rhs.as_mut_ptr(),
        flags: std::ptr::null_mut(),
        scratch: d.scratch.as_mut_ptr(),
        sym_tol: T::symmetry_tolerance(),
        ld: d.ld as u32,
        n: shape.block as u32,
        nblocks: shape.nblocks as u32,
        systems: shape.batch as u32,
        level,
        step,
        side,
        from_col: 0,
        to_col: 0,
        carry: 0,
        nrhs: solve.map_or(0, |(k, _)| k as u32),
        chunk: solve.map_or(0, |(_, c)| c as u32),
    }
}

/// Rows of the `64 x 64` products' output tiles.
const TILE_EDGE: usize = blocktri_device::tiled::TILE;

/// Elements of one half of the look-ahead's carry area: up to 64 nodes per system of the
/// largest level, on output tiles of up to `128` rows.
fn carry_half(systems: usize, n: usize) -> usize {
    systems.max(1) * 64 * carry_elems(n, 2, 64).max(carry_elems(n, 2, 128))
}

/// The factor launches of `Tiled::factor_steps` at the levels with few nodes (plain column
/// updates with the look-ahead), in list order, with the `64 x 64` products of `M`.
fn run_factor<T: Scalar, M: TileMac<T>>(d: &mut Device<T>, a: &BlockTridiag<T>) {
    let steps = ColumnSteps { lookahead: true, ..ColumnSteps::default() };
    run_factor_with::<T, M, Narrow<M>>(d, a, steps, narrow_neighbours::<T, M>);
}

/// The neighbour launch of `side` on the `64 x 64` products of `M`, for a level of
/// `nodes` nodes.
fn narrow_neighbours<T: Scalar, M: TileMac<T>>(x: &TiledArgs<T>, nodes: u32, side: u32) {
    let blocks = nodes * neighbour_blocks(x.n as usize, TILE_EDGE, side);
    // SAFETY: as in run_factor_with.
    unsafe { emu::launch_unchecked(blocks, PRODUCT_THREADS, product_kernel_shared_bytes(T::BYTES), || neighbours::<T, Narrow<M>>(x)) }
}

/// The neighbour launch of `side` on the product shape `W` (the wide `128 x 128` ones:
/// [`Wide`], `Wide16`, `WideTf32x3`), for a level of `nodes` nodes.
fn shape_neighbours<T: Scalar, W: ProductShape<T>>(x: &TiledArgs<T>, nodes: u32, side: u32) {
    let blocks = nodes * neighbour_blocks(x.n as usize, W::ROWS, side);
    // SAFETY: as in run_factor_with.
    unsafe { emu::launch_unchecked(blocks, W::THREADS, shape_kernel_shared_bytes::<T, W>(), || neighbours::<T, W>(x)) }
}

/// The neighbour launch of `side` on the wide `128 x 128` products (`f64`).
fn wide_neighbours(x: &TiledArgs<f64>, nodes: u32, side: u32) {
    shape_neighbours::<f64, Wide>(x, nodes, side)
}

/// A launch of `(args, nodes of the level)`.
type LevelLaunch<'f, T> = &'f dyn Fn(&TiledArgs<T>, u32);

/// How [`run_factor_with`] runs the column updates (the executor's choices per level).
#[derive(Clone, Copy, Default)]
struct ColumnSteps<'f, T> {
    /// `Wide` pairs from this step, by this launch (`column_update`).
    pairs: Option<(usize, LevelLaunch<'f, T>)>,
    /// The rows below the diagonal tile updated with their solve (`update_diagonal`
    /// before the `potrf`, `update_trsm` after it).
    fused: bool,
    /// The neighbour products in one launch per side (`BLOCKTRI_NEIGHBOURS=split`)
    /// instead of both sides in one.
    split_neighbours: bool,
    /// Where the updates are plain (neither fused nor paired) and a block has three tiles
    /// or more: the look-ahead, column `k + 1`'s products of the columns before `k`
    /// launched before step `k`'s own update, their accumulators carried into step
    /// `k + 1`'s update of column `k` alone.
    lookahead: bool,
}

/// [`run_factor`] with the column updates on the product shape `U` (in pairs of columns
/// and fused with the solves as `steps` says) and the neighbour launches of
/// `neighbour_launch(args, nodes, side)` (both sides in one unless `steps` splits them).
fn run_factor_with<T: Scalar, M: TileMac<T>, U: ProductShape<T>>(
    d: &mut Device<T>,
    a: &BlockTridiag<T>,
    steps: ColumnSteps<T>,
    neighbour_launch: impl Fn(&TiledArgs<T>, u32, u32),
) {
    let shape = a.shape();
    let (n, nb, s) = (shape.block, shape.nblocks as u32, shape.batch as u32);
    let nt = tiles(n);
    let e = T::BYTES;
    let pa = args(d, a, 0, 0, 0, None);
    // SAFETY (all launches): argument pointers cover the emulated device arrays; grids,
    // threads and shared memory as the kernels' contracts state.
    unsafe { emu::launch_unchecked((s * nb, nt as u32), WIDE_THREADS, prep_shared_bytes(e), || prep(&pa)) };
    let top = levels(nb);
    let product_smem = product_kernel_shared_bytes(e);
    let ahead = steps.lookahead && !steps.fused && steps.pairs.is_none() && nt >= 3;
    // The carry slots of step j: the half of its parity, as the executor's.
    let half = carry_half(s as usize, n);
    let carry_at = |d: &mut Device<T>, j: usize| d.carry[(j % 2) * half..].as_mut_ptr();
    for m in 0..top {
        let nodes = s * nodes_in_level(nb, m);
        for k in 0..nt {
            let x = args(d, a, m, k as u32, 0, None);
            let mut plan = column_update(k, nt, steps.pairs.map(|(first, _)| first));
            let mut carried = false;
            if ahead && k >= 1 {
                if k >= 2 {
                    plan = ColumnUpdate::Narrow { from_col: k - 1 };
                    carried = true;
                }
                if k + 1 < nt {
                    let y = TiledArgs {
                        to_col: k as u32,
                        carry: CARRY_OUT,
                        scratch: carry_at(d, k + 1),
                        ..args(d, a, m, k as u32 + 1, 0, None)
                    };
                    let blocks = nodes * panel_blocks(n, k + 1, U::ROWS / TILE);
                    unsafe { emu::launch_unchecked(blocks, U::THREADS, shape_kernel_shared_bytes::<T, U>(), || update::<T, U>(&y)) };
                }
            }
            let from = match plan {
                ColumnUpdate::Narrow { from_col } if carried => {
                    Some(TiledArgs { from_col: from_col as u32, carry: CARRY_IN, scratch: carry_at(d, k), ..x })
                }
                ColumnUpdate::Narrow { from_col } => Some(TiledArgs { from_col: from_col as u32, ..x }),
                _ => None,
            };
            unsafe {
                match (plan, steps.pairs, &from) {
                    (ColumnUpdate::Pair, Some((_, pair)), _) => pair(&x, nodes),
                    (ColumnUpdate::Narrow { .. }, _, Some(y)) if steps.fused => {
                        emu::launch_unchecked(nodes, PRODUCT_THREADS, product_smem, || update_diagonal::<T, M>(y))
                    }
                    (ColumnUpdate::Narrow { .. }, _, Some(y)) => {
                        let blocks = nodes * panel_blocks(n, k, U::ROWS / TILE);
                        emu::launch_unchecked(blocks, U::THREADS, shape_kernel_shared_bytes::<T, U>(), || update::<T, U>(y));
                    }
                    (ColumnUpdate::None, ..) => {}
                    _ => unreachable!("pairs only with a pair launch"),
                }
                emu::launch_unchecked(nodes, WIDE_THREADS, potrf_shared_bytes(e), || potrf(&x));
                let trsm_blocks = nodes * panel_blocks(n, k + 1, 1);
                match &from {
                    Some(y) if steps.fused => emu::launch_unchecked(trsm_blocks, PRODUCT_THREADS, product_smem, || update_trsm::<T, M>(y)),
                    _ => emu::launch_unchecked(trsm_blocks, PRODUCT_THREADS, product_smem, || trsm::<T, M>(&x)),
                }
            }
        }
        if inverts_level(n, nb, m) {
            for k in 0..nt {
                let x = args(d, a, m, k as u32, 0, None);
                unsafe { emu::launch_unchecked(nodes * (k as u32 + 1), PRODUCT_THREADS, product_smem, || inverse_step::<T, M>(&x)) };
            }
        }
        if m + 1 < top {
            for &side in neighbour_sides(steps.split_neighbours) {
                neighbour_launch(&args(d, a, m, 0, side, None), nodes, side);
            }
        }
    }
}

/// Shared memory per block of the emulated device (the H100's opt-in limit).
const EMULATED_SHARED: usize = 232_448;

/// The solve launches of `Tiled::solve_steps`, `chunk` columns per pass, launch widths and
/// the form of the diagonal solves chosen for `sms` SMs as the executor does.
fn run_solve<T: Scalar>(d: &mut Device<T>, a: &BlockTridiag<T>, k: usize, chunk: usize, sms: u32) {
    let n = a.shape().block;
    let walk = node_walk_chunk(n, chunk, T::BYTES, EMULATED_SHARED);
    let split = split_walk_chunk(n, chunk, T::BYTES, EMULATED_SHARED);
    let walk = |nodes| if walks_nodes(n, nodes, sms) { walk } else { 0 };
    let split = |nodes| if splits_walks(n, nodes, sms) { split } else { 0 };
    let inverse = |m| inverts_level(n, a.shape().nblocks as u32, m);
    run_solve_forms(d, a, k, chunk, sms, walk, split, inverse, couple_sides(false))
}

/// [`run_solve`] with the diagonal solves of a level of `nodes` nodes as node walks of
/// `walk(nodes)` columns per pass, or one launch per tile step where that is 0.
fn run_solve_with<T: Scalar>(d: &mut Device<T>, a: &BlockTridiag<T>, k: usize, chunk: usize, sms: u32, walk: impl Fn(u32) -> usize) {
    run_solve_forms(d, a, k, chunk, sms, walk, |_| 0, |_| false, couple_sides(false))
}

/// [`run_solve_with`], with the diagonal solves of a level as split walks of
/// `split(nodes)` columns per pass where that is not 0 (each sweep's flags zeroed first,
/// as the executor's `ClearFlags` step does), as products with the explicit inverses on
/// the levels `m` where `inverse(m)` (before the other choices, as the executor), and the
/// forward couplings in one launch per side of `sides`.
#[allow(clippy::too_many_arguments)] // the solve's shape and one choice per kind of launch
fn run_solve_forms<T: Scalar>(
    d: &mut Device<T>,
    a: &BlockTridiag<T>,
    k: usize,
    chunk: usize,
    sms: u32,
    walk: impl Fn(u32) -> usize,
    split: impl Fn(u32) -> usize,
    inverse: impl Fn(u32) -> bool,
    sides: &[u32],
) {
    let shape = a.shape();
    let (n, nb, s) = (shape.block, shape.nblocks as u32, shape.batch as u32);
    let nt = tiles(n) as u32;
    let e = T::BYTES;
    let top = levels(nb);
    let diag_smem = diag_solve_shared_bytes(e);
    let sweep_words = split_flag_words(shape.batch, shape.nblocks, n);
    let mut flags = vec![0u32; 2 * sweep_words];
    let split_args = |d: &mut Device<T>, flags: &mut [u32], m: u32, sweep: usize, cols: usize| TiledArgs {
        flags: flags[sweep * sweep_words + split_flag_offset(shape.batch, shape.nblocks, n, m)..].as_mut_ptr(),
        ..args(d, a, m, 0, 0, Some((k, cols)))
    };
    // The inverse solves' passes: product into the scratch area, then the copy.
    let inverse_cols = inverse_solve_chunk(chunk, e, EMULATED_SHARED);
    let parts = inverse_parts(n) as u32;
    let inverse_passes = |d: &mut Device<T>, m: u32, nodes: u32, forward: bool| {
        for pass in 0..k.div_ceil(inverse_cols) as u32 {
            let x = args(d, a, m, pass, !forward as u32, Some((k, inverse_cols)));
            let smem = inverse_solve_shared_bytes(inverse_cols, e);
            unsafe {
                match forward {
                    true => emu::launch_unchecked(nodes * nt * parts, SOLVE_THREADS, smem, || forward_inverse(&x)),
                    false => emu::launch_unchecked(nodes * nt * parts, SOLVE_THREADS, smem, || backward_inverse(&x)),
                }
                emu::launch_unchecked(nodes * nt, SOLVE_THREADS, 0, || inverse_copy(&x));
            }
        }
    };
    for m in 0..top {
        let nodes = s * nodes_in_level(nb, m);
        let (walk, walk_smem) = (walk(nodes), node_walk_shared_bytes(n, walk(nodes), e));
        if inverse(m) {
            inverse_passes(d, m, nodes, true);
        } else if split(nodes) > 0 {
            let x = split_args(d, &mut flags, m, 0, split(nodes));
            let smem = split_walk_shared_bytes(n, split(nodes), e);
            unsafe { emu::launch_unchecked(nodes * nt, SOLVE_THREADS, smem, || forward_split(&x)) };
        } else if walk == 0 {
            for t in 0..nt {
                let x = args(d, a, m, t, 0, Some((k, chunk)));
                unsafe { emu::launch_unchecked(nodes * (nt - t), SOLVE_THREADS, diag_smem, || forward_diag(&x)) };
            }
        } else {
            let x = args(d, a, m, 0, 0, Some((k, walk)));
            unsafe { emu::launch_unchecked(nodes, SOLVE_THREADS, walk_smem, || forward_node(&x)) };
        }
        if m + 1 < top {
            for &side in sides {
                let x = args(d, a, m, 0, side, Some((k, chunk)));
                unsafe {
                    emu::launch_unchecked(nodes * nt, couple_threads(nodes * nt, sms), couple_shared_bytes(e), || forward_couple(&x))
                };
            }
        }
    }
    for m in (0..top).rev() {
        let nodes = s * nodes_in_level(nb, m);
        let (walk, walk_smem) = (walk(nodes), node_walk_shared_bytes(n, walk(nodes), e));
        if m + 1 < top {
            let x = args(d, a, m, 0, 0, Some((k, chunk)));
            unsafe { emu::launch_unchecked(nodes * nt * BACKWARD_ROW_GROUPS, SOLVE_THREADS, 0, || backward_couple(&x)) };
        }
        if inverse(m) {
            inverse_passes(d, m, nodes, false);
        } else if split(nodes) > 0 {
            let x = split_args(d, &mut flags, m, 1, split(nodes));
            let smem = split_walk_shared_bytes(n, split(nodes), e);
            unsafe { emu::launch_unchecked(nodes * nt, SOLVE_THREADS, smem, || backward_split(&x)) };
        } else if walk == 0 {
            for t in (0..nt).rev() {
                let x = args(d, a, m, t, 0, Some((k, chunk)));
                unsafe { emu::launch_unchecked(nodes * (t + 1), SOLVE_THREADS, diag_smem, || backward_diag(&x)) };
            }
        } else {
            let x = args(d, a, m, 0, 0, Some((k, walk)));
            unsafe { emu::launch_unchecked(nodes, SOLVE_THREADS, walk_smem, || backward_node(&x)) };
        }
    }
    // Every split level's blocks took their tickets and published every tile row.
    for sweep in 0..2 {
        for m in 0..top {
            let nodes = s * nodes_in_level(nb, m);
            if split(nodes) > 0 && !inverse(m) {
                let level = &flags[sweep * sweep_words + split_flag_offset(shape.batch, shape.nblocks, n, m)..];
                assert_eq!(level[0], nodes * nt, "level {m}: tickets taken");
                assert!(level[1..=(nodes * nt) as usize].iter().all(|&f| f == 1), "level {m}: a tile row never published");
            }
        }
    }
}

/// The split walks (one block per tile row of each node) at every level against the node
/// walks, bit for bit, and against the dense reference: two to five tiles with partial
/// last tiles (down to one row), batches, and more columns than one pass takes (9, with
/// 8 per pass, and 5 with 2 per pass).
#[test]
fn emulated_tiled_split_walks_match_the_node_walks_bit_for_bit() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k, cols)) in
        [(1, 3, 130, 1, 1), (2, 5, 200, 3, 3), (1, 4, 257, 9, 8), (3, 2, 100, 5, 2), (1, 1, 128, 2, 2)].iter().enumerate()
    {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let factored = factored(&a, &b);
        let walk = factored.solved(|e| run_solve_with(e, &a, k, cols, EMULATED_SMS, |_| cols));
        let split = factored.solved(|e| run_solve_forms(e, &a, k, cols, EMULATED_SMS, |_| cols, |_| cols, |_| false, couple_sides(false)));
        assert!(split.solve_info.iter().all(|&x| x == INFO_OK), "S={s} N={nb} n={n}: {:?}", split.solve_info);
        factored.assert_same_solutions(k, &split.rhs, &walk.rhs, &format!("S={s} N={nb} n={n} k={k} (seed {seed}), split walks"));
    }
}

/// The forward couplings of both sides in one launch per level (each target tile in one
/// block: the term of the node beyond it, then this node's) against one launch per side,
/// bit for bit, on chains whose last separator has a node beyond it or not (N = 6, 7, 8),
/// a batch, several passes of columns, one to three tiles.
#[test]
fn emulated_tiled_couplings_of_both_sides_in_one_launch_match_one_launch_per_side_bit_for_bit() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in [(1, 6, 70, 1), (2, 7, 33, 3), (1, 8, 130, 9), (1, 5, 64, 2)].iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let factored = factored(&a, &b);
        let chunk = k.min(MAX_CHUNK);
        let walk = node_walk_chunk(n, chunk, 8, EMULATED_SHARED);
        let solve =
            |sides: &[u32]| factored.solved(|e| run_solve_forms(e, &a, k, chunk, EMULATED_SMS, |_| walk, |_| 0, |_| false, sides)).rhs;
        let (both, per_side) = (solve(couple_sides(false)), solve(couple_sides(true)));
        factored.assert_same_solutions(k, &both, &per_side, &format!("S={s} N={nb} n={n} k={k} (seed {seed}), couplings in one launch"));
    }
}

/// Solves `S = 2, N = 3` systems of block size `n` by `solve` with an infinite right-hand
/// side in system 1, block 2 (the top node): the status words name system 1, and (the
/// value reaches every block of the system) the lowest level's lowest block.
fn assert_non_finite_reported(n: usize, solve: impl FnOnce(&mut Device<f64>, &BlockTridiag<f64>)) {
    let (a, mut b) = problem::<f64>(2, 3, n, 1, fresh_seed());
    let idx = b.as_slice().len() / 2 + 2 * n + 70;
    b.as_mut_slice()[idx] = f64::INFINITY;
    let factored = factored(&a, &b);
    let e = factored.solved(|e| solve(e, &a));
    assert_eq!(e.solve_info[0], INFO_OK, "n = {n}");
    assert_eq!(decode_info(e.solve_info[1]), Some((0, InfoCode::NonFiniteSolution as u32, 0)), "n = {n}");
}

/// A non-finite solution from a split backward walk is reported with its system and
/// block, as the node walk reports it; and from the inverse solves (every level of
/// n = 260 at N = 3), where the copy of the backward products' sums reports it.
#[test]
fn emulated_tiled_split_walks_and_inverse_solves_report_a_non_finite_solution() {
    assert_non_finite_reported(130, |e, a| run_solve_forms(e, a, 1, 1, EMULATED_SMS, |_| 1, |_| 1, |_| false, couple_sides(false)));
    assert_non_finite_reported(260, |e, a| run_solve(e, a, 1, 1, EMULATED_SMS));
}

fn check<T: Scalar, M: TileMac<T>>(cases: &[(usize, usize, usize, usize)], tol: f64) {
    check_with::<T, M>(cases, tol, run_factor::<T, M>)
}

fn check_with<T: Scalar, M: TileMac<T>>(
    cases: &[(usize, usize, usize, usize)],
    tol: f64,
    factor: impl Fn(&mut Device<T>, &BlockTridiag<T>),
) {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in cases.iter().enumerate() {
        let (a, b) = problem::<T>(s, nb, n, k, seed + i as u64);
        let mut d = upload(&a, &b);
        factor(&mut d, &a);
        assert!(d.info.iter().all(|&x| x == INFO_OK), "{} S={s} N={nb} n={n}: info {:?}", T::PRECISION, d.info);
        run_solve(&mut d, &a, k, k.min(MAX_CHUNK), EMULATED_SMS);
        assert!(d.solve_info.iter().all(|&x| x == INFO_OK));
        let x = BlockVec::from_vec(a.shape(), k, d.rhs.clone()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < tol, "{} {} S={s} N={nb} n={n} k={k}: {err:e} (seed {seed})", T::PRECISION, std::any::type_name::<M>());
    }
}

/// `(S, N, n, k)`: one, two and three tiles (with partial last tiles), single blocks,
/// batches, more columns than one solve pass takes.
const CASES: &[(usize, usize, usize, usize)] =
    &[(1, 1, 1, 1), (1, 3, 5, 2), (2, 3, 33, 3), (1, 2, 64, 1), (1, 4, 65, 9), (1, 2, 130, 2), (2, 1, 97, 1)];

#[test]
fn emulated_tiled_f64_matches_the_dense_reference() {
    check::<f64, Native>(CASES, 1e-11);
}

/// A factored problem, to solve several times from the same factor.
struct Factored<'a> {
    a: &'a BlockTridiag<f64>,
    b: &'a BlockVec<f64>,
    factor: Device<f64>,
}

/// `(a, b)` uploaded and factored (f64 tensor-core products).
fn factored<'a>(a: &'a BlockTridiag<f64>, b: &'a BlockVec<f64>) -> Factored<'a> {
    let mut factor = upload(a, b);
    run_factor::<f64, Native>(&mut factor, a);
    Factored { a, b, factor }
}

impl Factored<'_> {
    /// A fresh upload of the problem with the factor's blocks, after `solve` ran on it.
    fn solved(&self, solve: impl FnOnce(&mut Device<f64>)) -> Device<f64> {
        let mut e = upload(self.a, self.b);
        let f = &self.factor;
        (e.diag, e.left, e.right, e.dinv) = (f.diag.clone(), f.left.clone(), f.right.clone(), f.dinv.clone());
        solve(&mut e);
        e
    }

    /// Asserts that `x` (`k` columns, from one form of the solve) has the bits of `other`
    /// (another form's) and solves the problem (against the dense reference); `what` names
    /// the case.
    fn assert_same_solutions(&self, k: usize, x: &[f64], other: &[f64], what: &str) {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(x), bits(other), "{what}: the bits differ");
        let x = BlockVec::from_vec(self.a.shape(), k, x.to_vec()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(self.a, self.b));
        assert!(err < 1e-11, "{what}: error {err:e}");
    }
}

/// The forward coupling's launch width follows the number of blocks per SM (the batch
/// size); its sums must not: a chunked batch gives the same bits as the whole
/// (`tests/gpu_transfers.rs`). Every width (all wide, all narrow, mixed) against each other.
#[test]
fn emulated_tiled_solve_bits_do_not_depend_on_the_launch_widths() {
    let (a, b) = problem::<f64>(2, 5, 130, 3, fresh_seed());
    let factored = factored(&a, &b);
    let solve = |sms: u32| {
        let e = factored.solved(|e| run_solve(e, &a, 3, 3, sms));
        e.rhs.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    };
    let (wide, narrow, mixed) = (solve(u32::MAX), solve(0), solve(EMULATED_SMS));
    assert!(wide == narrow && wide == mixed, "the forward coupling's sums depend on its launch width");
}

/// The diagonal solves one launch per tile step at every level
/// (`BLOCKTRI_TILED_SOLVE=steps`) against the dense reference, on one to three tiles,
/// partial tiles, a batch and several passes of right-hand-side columns. The other cases
/// run the executor's choice, which at these sizes (at most 4 tiles) is one block per
/// node at every level.
#[test]
fn emulated_tiled_per_step_diagonal_solves_match_the_dense_reference() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in [(1, 3, 5, 2), (2, 3, 33, 3), (1, 4, 65, 9), (1, 2, 130, 2)].iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let mut d = upload(&a, &b);
        run_factor::<f64, Native>(&mut d, &a);
        run_solve_with(&mut d, &a, k, k.min(MAX_CHUNK), EMULATED_SMS, |_| 0);
        assert!(d.solve_info.iter().all(|&x| x == INFO_OK));
        let x = BlockVec::from_vec(a.shape(), k, d.rhs.clone()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < 1e-11, "S={s} N={nb} n={n} k={k}: {err:e} (seed {seed})");
    }
}

/// The node walks with fewer right-hand-side columns per pass than the other solve
/// kernels (the shared memory that a walk keeps them in is what limits them at large
/// `n`), five tiles with a partial last one (one row), a single tile, and a batch: against
/// the dense reference, and bit for bit against the walks of one pass.
#[test]
fn emulated_tiled_node_walks_in_several_passes_match_the_dense_reference() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in [(2, 3, 257, 5), (1, 4, 64, 3), (3, 2, 100, 4)].iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let factored = factored(&a, &b);
        let solve = |walk: usize| {
            let e = factored.solved(|e| run_solve_with(e, &a, k, k, EMULATED_SMS, |_| walk));
            assert!(e.solve_info.iter().all(|&x| x == INFO_OK));
            e.rhs
        };
        let (one_pass, rhs) = (solve(k), solve(2));
        factored.assert_same_solutions(k, &rhs, &one_pass, &format!("S={s} N={nb} n={n} k={k} (seed {seed}), two columns per pass"));
    }
}

/// The top levels' diagonal solves as products with explicit inverses (the executor's
/// choice from three tiles on levels of at most 256 tile rows per system: here every
/// level): five tiles with a partial last one (4 rows), four and three with a partial
/// last one (8 and 2 rows), exact tiles, batches, one block, and more columns than one
/// pass takes (9, and 5 at 2 per pass); against the dense reference and against the
/// per-step diagonal solves (the same factor, other sums: not bit for bit), and the same
/// bits whatever the columns per pass.
#[test]
fn emulated_tiled_inverse_solves_match_the_dense_reference() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in
        [(1, 3, 260, 2), (2, 2, 320, 9), (1, 1, 300, 1), (1, 4, 260, 5), (1, 5, 200, 3), (2, 3, 256, 1), (1, 6, 130, 4)].iter().enumerate()
    {
        assert!(inverts_level(n, nb as u32, 0), "case {i} must invert");
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let factored = factored(&a, &b);
        let what = format!("S={s} N={nb} n={n} k={k} (seed {seed})");
        let inverse = factored.solved(|e| run_solve(e, &a, k, k.min(MAX_CHUNK), EMULATED_SMS));
        assert!(inverse.solve_info.iter().all(|&x| x == INFO_OK), "{what}: {:?}", inverse.solve_info);
        let steps = factored.solved(|e| run_solve_with(e, &a, k, k.min(MAX_CHUNK), EMULATED_SMS, |_| 0)).rhs;
        let x = BlockVec::from_vec(a.shape(), k, inverse.rhs.clone()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < 1e-11, "{what}: error {err:e}");
        let gap = inverse.rhs.iter().zip(&steps).map(|(x, y)| (x - y).abs() / (1.0 + y.abs())).fold(0.0, f64::max);
        assert!(gap < 1e-9, "{what}: inverse against per-step solves {gap:e}");
        if k > 2 {
            let two = factored.solved(|e| run_solve(e, &a, k, 2, EMULATED_SMS)).rhs;
            factored.assert_same_solutions(k, &two, &inverse.rhs, &format!("{what}, two columns per pass"));
        }
    }
}

/// The default emulated device is an sm_90, whose products use `mma.m16n8k16`; the sm_80
/// build's `mma.m8n8k4` products on one, two and three tiles.
#[test]
fn emulated_tiled_f64_sm80_products_match_the_dense_reference() {
    emu::with_compute_capability(80, || check::<f64, Native>(&[CASES[2], CASES[5]], 1e-11));
}

/// The factor with every neighbour launch on the wide `128 x 128` products (`f64`).
fn run_factor_wide(d: &mut Device<f64>, a: &BlockTridiag<f64>) {
    run_factor_with::<f64, Native, Narrow<Native>>(d, a, ColumnSteps::default(), wide_neighbours);
}

/// The factor with the multiply-add `M`, the column updates on `U` and every neighbour
/// launch on the wide shape `W`.
fn run_factor_shapes<T: Scalar, M: TileMac<T>, U: ProductShape<T>, W: ProductShape<T>>(d: &mut Device<T>, a: &BlockTridiag<T>) {
    run_factor_with::<T, M, U>(d, a, ColumnSteps::default(), shape_neighbours::<T, W>);
}

/// The alternative product shapes (`BLOCKTRI_UPDATE_PRODUCT=tall`,
/// `BLOCKTRI_WIDE_PRODUCT=16`): `128 x 64` column updates with 16-warp `128 x 128`
/// neighbour products; partial tall tiles (an odd number of row tiles per band), a batch,
/// both DMMA shapes (sm_90: the `m16n8k8` fragments streamed one at a time).
#[test]
fn emulated_tiled_alternative_product_shapes_match_the_dense_reference() {
    let cases = [(2, 3, 33, 3), (1, 3, 150, 2), (1, 2, 200, 1)];
    check_with::<f64, Native>(&cases, 1e-11, run_factor_shapes::<f64, Native, Tall, Wide16>);
    emu::with_compute_capability(80, || check_with::<f64, Native>(&cases[2..], 1e-11, run_factor_shapes::<f64, Native, Tall, Wide16>));
}

/// The wide neighbour products: one wide tile (partial), two (the second partial), a
/// batch; both DMMA shapes.
#[test]
fn emulated_tiled_wide_neighbour_products_match_the_dense_reference() {
    let cases = [(2, 3, 33, 3), (1, 3, 150, 2)];
    check_with::<f64, Native>(&cases, 1e-11, run_factor_wide);
    emu::with_compute_capability(80, || check_with::<f64, Native>(&cases[1..], 1e-11, run_factor_wide));
}

/// The 3xTF32 factor with every neighbour launch on the wide `128 x 128` TF32 products
/// (`tiled_wide_neighbours_tf32x3`): one wide tile (partial), two (the second partial), a
/// batch; the FP32 bound of the split products.
#[test]
fn emulated_tiled_wide_tf32_neighbour_products_match_the_dense_reference() {
    let factor = run_factor_shapes::<f32, Tf32x3, Narrow<Tf32x3>, WideTf32x3>;
    check_with::<f32, Tf32x3>(&[(2, 3, 33, 3), (1, 3, 150, 2)], 1e-4, factor);
}

/// The neighbour products of both sides in one launch (`BOTH_SIDES`, the executor's
/// default) give the same bits as one launch per side (`BLOCKTRI_NEIGHBOURS=split`): each
/// separator's tile gets the same two products in the same order. Levels with several
/// nodes and separators with one and two contributors (N = 7, 6), one and two partial
/// tiles, a batch, the `64 x 64` and the wide `128 x 128` products.
#[test]
fn emulated_tiled_neighbours_in_one_launch_match_one_launch_per_side_bit_for_bit() {
    let seed = fresh_seed();
    type NeighbourLaunch = fn(&TiledArgs<f64>, u32, u32);
    let launches: [(&str, NeighbourLaunch); 2] = [("64 x 64", narrow_neighbours::<f64, Native>), ("128 x 128", wide_neighbours)];
    for (i, &(s, nb, n)) in [(2, 7, 33), (1, 6, 70)].iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, 1, seed + i as u64);
        for (shape, launch) in launches {
            let factor = |split_neighbours| {
                let mut d = upload(&a, &b);
                let steps = ColumnSteps { split_neighbours, ..ColumnSteps::default() };
                run_factor_with::<f64, Native, Narrow<Native>>(&mut d, &a, steps, launch);
                d
            };
            let (one, per_side) = (factor(false), factor(true));
            assert!(one.info.iter().all(|&x| x == INFO_OK), "S={s} N={nb} n={n} {shape}: info {:?}", one.info);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for (name, x, y) in
                [("diag", &one.diag, &per_side.diag), ("left", &one.left, &per_side.left), ("right", &one.right, &per_side.right)]
            {
                assert!(bits(x) == bits(y), "S={s} N={nb} n={n} {shape}: {name} differs (seed {seed})");
            }
            assert_eq!(bits(&one.dinv), bits(&per_side.dinv), "S={s} N={nb} n={n} {shape} (seed {seed})");
        }
    }
}

/// The column updates fused with the solves below the diagonal tile at every level
/// (`update_diagonal`, `update_trsm`), with `128 x 128` pairs of columns from step 2
/// where `pairs` (`ColumnUpdate::Pair`, then the second column's last `K = 64`).
fn run_factor_fused<T: Scalar>(d: &mut Device<T>, a: &BlockTridiag<T>, pairs: Option<LevelLaunch<T>>)
where
    Native: TileMac<T>,
{
    let steps = ColumnSteps { pairs: pairs.map(|p| (2, p)), fused: true, ..ColumnSteps::default() };
    run_factor_with::<T, Native, Narrow<Native>>(d, a, steps, narrow_neighbours::<T, Native>);
}

/// The wide pair launch of step `x.step` (`f64`).
fn pair_launch(x: &TiledArgs<f64>, nodes: u32) {
    let blocks = nodes * panel_blocks(x.n as usize, x.step as usize, WIDE_TILE / TILE);
    // SAFETY: as in run_factor_with.
    unsafe { emu::launch_unchecked(blocks, WIDE_PRODUCT_THREADS, wide_product_kernel_shared_bytes(), || update::<f64, Wide>(x)) }
}

/// Fused column steps with pairs: four tiles (one pair, the last column partial:
/// n = 200) and five (one pair, then a lone last column: n = 257), on the sm_90 DMMA shape
/// (the sm_80 one runs the same wide products in the neighbour test); fused without pairs
/// in f32 on three tiles, a batch.
#[test]
fn emulated_tiled_fused_column_steps_and_pairs_match_the_dense_reference() {
    check_with::<f64, Native>(&[(1, 2, 200, 1), (1, 3, 257, 2)], 1e-11, |d, a| run_factor_fused(d, a, Some(&pair_launch)));
    check_with::<f32, Native>(&[(2, 3, 150, 2)], 1e-4, |d, a| run_factor_fused(d, a, None));
}

/// The top levels' look-ahead (`update` carrying its accumulators of the columns before
/// `k - 1`, launched beside step `k - 1`) gives the bits of the plain column updates
/// (`BLOCKTRI_LOOKAHEAD=off`), so that where it runs (chosen by the batch's node count)
/// cannot change a result: three to five tiles with partial last tiles, a batch, the
/// `128 x 64` update tiles, `f32` on the FMA and 3xTF32 products; both also against the
/// dense reference.
#[test]
fn emulated_tiled_lookahead_gives_the_bits_of_the_plain_column_updates() {
    fn same_bits<T: Scalar, M: TileMac<T>, U: ProductShape<T>>(cases: &[(usize, usize, usize, usize)], tol: f64) {
        let seed = fresh_seed();
        for (i, &(s, nb, n, k)) in cases.iter().enumerate() {
            let (a, b) = problem::<T>(s, nb, n, k, seed + i as u64);
            let factored = |lookahead: bool| {
                let mut d = upload(&a, &b);
                let steps = ColumnSteps { lookahead, ..ColumnSteps::default() };
                run_factor_with::<T, M, U>(&mut d, &a, steps, narrow_neighbours::<T, M>);
                assert!(d.info.iter().all(|&x| x == INFO_OK), "S={s} N={nb} n={n}: info {:?}", d.info);
                d
            };
            let (mut on, off) = (factored(true), factored(false));
            let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
            let parts = [("diag", &on.diag, &off.diag), ("left", &on.left, &off.left), ("right", &on.right, &off.right)];
            for (name, x, y) in parts.into_iter().chain([("dinv", &on.dinv, &off.dinv)]) {
                assert!(bits(x) == bits(y), "{} {name} differs: S={s} N={nb} n={n} (seed {seed})", T::PRECISION);
            }
            run_solve(&mut on, &a, k, k.min(MAX_CHUNK), EMULATED_SMS);
            let x = BlockVec::from_vec(a.shape(), k, on.rhs.clone()).unwrap();
            let err = error_vs_reference(&x, &dense_solution(&a, &b));
            assert!(err < tol, "{} S={s} N={nb} n={n} k={k}: {err:e} (seed {seed})", T::PRECISION);
        }
    }
    same_bits::<f64, Native, Narrow<Native>>(&[(1, 3, 150, 1), (2, 2, 256, 2), (1, 3, 300, 1)], 1e-11);
    same_bits::<f64, Native, Tall>(&[(1, 3, 200, 1)], 1e-11);
    same_bits::<f32, Native, Narrow<Native>>(&[(2, 3, 200, 1)], 1e-4);
    same_bits::<f32, Tf32x3, Narrow<Tf32x3>>(&[(1, 3, 260, 1)], 1e-4);
}

#[test]
fn emulated_tiled_f32_matches_the_dense_reference() {
    check::<f32, Native>(&CASES[..6], 1e-4);
}

/// The opt-in TF32 products (`GpuOptions::f32_products`): split operands keep the FP32
/// bound; plain TF32 (10-bit operands) gets its own, looser one (measured 1e-5 to 6e-5
/// here). Partial tiles, batches and three tiles per block.
#[test]
fn emulated_tiled_tf32_products_match_the_dense_reference() {
    check::<f32, Tf32x3>(&[CASES[2], CASES[5]], 1e-4);
    check::<f32, Tf32>(&[CASES[1], CASES[4]], 1e-3);
}

/// The status words of an emulated tiled factorization of `a`, one per system.
fn factor_status(a: &BlockTridiag<f64>, b: &BlockVec<f64>) -> Vec<u64> {
    let mut d = upload(a, b);
    run_factor::<f64, Native>(&mut d, a);
    d.info
}

#[test]
fn emulated_tiled_failures_name_the_system_and_block() {
    // System 1 of 2 gets an indefinite diagonal block 5 (level 1), in its second tile.
    let (mut a, b) = problem::<f64>(2, 7, 66, 1, 7);
    a.set_diag(1, 5, 65, 65, -1e4);
    let info = factor_status(&a, &b);
    assert_eq!(info[0], INFO_OK);
    assert_eq!(decode_info(info[1]).unwrap(), (1, InfoCode::NotPositiveDefinite as u32, 5));

    // A pivot that fails in the third 16-column panel of a tile (row 40 of block 2, level 0).
    let (mut a, b) = problem::<f64>(1, 5, 66, 1, 10);
    a.set_diag(0, 2, 40, 40, -1e4);
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (0, InfoCode::NotPositiveDefinite as u32, 2));

    // In the fourth tile of the top node (block 3 of 7, level 2), whose update came in two
    // parts through the look-ahead.
    let (mut a, b) = problem::<f64>(1, 7, 220, 1, 12);
    a.set_diag(0, 3, 200, 200, -1e5);
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (2, InfoCode::NotPositiveDefinite as u32, 3));

    // A NaN in sub-diagonal block 2 of system 0 (right coupling of level-0 node 2), and
    // one in sub-diagonal block 3 (left coupling of level-0 node 4): the first reported.
    let (mut a, b) = problem::<f64>(2, 6, 3, 1, 8);
    a.sub_block_mut(0, 2)[1] = f64::NAN;
    a.sub_block_mut(0, 3)[2] = f64::INFINITY;
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (0, InfoCode::NonFinite as u32, 2));
    assert_eq!(info[1], INFO_OK);

    // An infinity above the diagonal only, in the upper tile of diagonal block 1 (level
    // 1): prep reads that tile only as the mirror of the lower one.
    let (mut a, b) = problem::<f64>(1, 3, 70, 1, 11);
    let ld = a.ld();
    a.diag_block_mut(0, 1)[66 * ld + 2] = f64::INFINITY; // entry (2, 66) only
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (1, InfoCode::NonFinite as u32, 1));

    // An asymmetric diagonal block 3 (level 2).
    let (mut a, b) = problem::<f64>(1, 7, 3, 1, 9);
    a.diag_block_mut(0, 3)[1] += 0.5; // entry (1, 0) only
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (2, InfoCode::NotSymmetric as u32, 3));

    // Faults in level 0's input, in its second column tile: an infinity above the
    // diagonal only, in the upper tile of level-0 block 2.
    let (mut a, b) = problem::<f64>(1, 5, 70, 1, 12);
    let ld = a.ld();
    a.diag_block_mut(0, 2)[67 * ld + 3] = f64::INFINITY; // entry (3, 67) only
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (0, InfoCode::NonFinite as u32, 2));
    // An asymmetric level-0 block 4, in its second column tile.
    let (mut a, b) = problem::<f64>(1, 5, 70, 1, 13);
    let ld = a.ld();
    a.diag_block_mut(0, 4)[66 * ld + 68] += 0.5; // entry (68, 66) only
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (0, InfoCode::NotSymmetric as u32, 4));
    // A NaN in column tile 1 of level-0 node 4's left coupling (sub-diagonal block 3,
    // row 66: the transposed copy), while node 0 is not positive definite in its first
    // tile and separator 3 is asymmetric (level 1): the input's non-finite value is the
    // one reported (the smallest key: level 0, and input checks before pivots).
    let (mut a, b) = problem::<f64>(1, 7, 70, 1, 14);
    let ld = a.ld();
    a.sub_block_mut(0, 3)[5 * ld + 66] = f64::NAN; // sub[3](66, 5) = A[4, 3](66, 5)
    a.set_diag(0, 0, 1, 1, -1e4);
    a.diag_block_mut(0, 3)[1] += 0.5;
    let info = factor_status(&a, &b);
    assert_eq!(decode_info(info[0]).unwrap(), (0, InfoCode::NonFinite as u32, 4));
}

/// `prep`'s outputs entry by entry, bit for bit, against the input: the lower triangle
/// of every diagonal block (zeros above), and for each level-0 node its right coupling
/// (`sub[b]`) and left coupling (`sub[b-1]^T`). Block sizes with partial tiles whose rows
/// end inside a 16-byte piece (odd `n` in f64, `n % 4 != 0` in f32), batches, odd and even
/// chain lengths.
fn check_prep<T: Scalar>() {
    for &(s, nb, n) in &[(1usize, 5usize, 33usize), (2, 4, 70), (1, 3, 129), (1, 6, 130), (2, 5, 64), (1, 4, 203)] {
        let (a, b) = problem::<T>(s, nb, n, 1, fresh_seed());
        let mut d = upload(&a, &b);
        let pa = args(&mut d, &a, 0, 0, 0, None);
        // SAFETY: the arrays cover the shape; grid, threads and shared memory as `prep` states.
        unsafe { emu::launch_unchecked(((s * nb) as u32, tiles(n) as u32), WIDE_THREADS, prep_shared_bytes(T::BYTES), || prep(&pa)) };
        assert_eq!(d.info, vec![INFO_OK; s], "S={s} N={nb} n={n}");
        let (ld, lda) = (d.ld, a.ld());
        let blk = ld * n;
        let bits = |v: T| v.to_f64().to_bits();
        for sys in 0..s {
            for blkno in 0..nb {
                let at = |r: usize, c: usize| (sys * nb + blkno) * blk + c * ld + r;
                let input = a.diag_block(sys, blkno);
                for c in 0..n {
                    for r in 0..n {
                        let want = if r >= c { input[c * lda + r] } else { T::zero() };
                        assert_eq!(bits(d.diag[at(r, c)]), bits(want), "diag S={s} N={nb} n={n} block {blkno} ({r}, {c})");
                    }
                }
                if blkno % 2 != 0 {
                    continue;
                }
                for c in 0..n {
                    for r in 0..n {
                        if blkno + 1 < nb {
                            let want = a.sub_block(sys, blkno)[c * lda + r];
                            assert_eq!(bits(d.right[at(r, c)]), bits(want), "right S={s} N={nb} n={n} block {blkno} ({r}, {c})");
                        }
                        if blkno >= 1 {
                            let want = a.sub_block(sys, blkno - 1)[r * lda + c];
                            assert_eq!(bits(d.left[at(r, c)]), bits(want), "left S={s} N={nb} n={n} block {blkno} ({r}, {c})");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn emulated_tiled_prep_copies_every_entry() {
    check_prep::<f64>();
    check_prep::<f32>();
}

/// The mixed-precision `prep` ([`prep_rounding`]: an `f32` plan's working blocks from an
/// `f64` matrix at its own leading dimension) against `prep` of the matrix rounded to
/// `f32` beforehand, bit for bit and status for status: clean inputs, an entry outside
/// `f32`'s range (non-finite once rounded) and an asymmetric block.
#[test]
fn emulated_tiled_rounding_prep_matches_prep_of_the_rounded_matrix() {
    for (i, &(s, nb, n)) in [(1usize, 5usize, 33usize), (2, 4, 70), (1, 6, 130), (1, 3, 203)].iter().enumerate() {
        for fault in 0..3 {
            let (mut a, b) = problem::<f64>(s, nb, n, 1, fresh_seed() + i as u64);
            let lda = a.ld();
            match fault {
                1 => a.sub_block_mut(s - 1, nb - 2)[(n - 1) * lda + 2] = 1e39,
                2 => {
                    let scale = a.diag_block(0, nb - 1)[0];
                    a.diag_block_mut(0, nb - 1)[(n / 2) * lda + n - 1] += scale;
                }
                _ => {}
            }
            // The f64 matrix at a leading dimension of its own (even: 16-byte columns).
            let wide = a.repad(n.div_ceil(2) * 2 + 2).unwrap();
            let mut want = upload(&a.cast::<f32>(), &b.cast::<f32>());
            let mut got = upload(&a.cast::<f32>(), &b.cast::<f32>());
            got.diag_in.fill(f32::NAN); // not read
            got.sub_in.fill(f32::NAN);
            let grid = ((s * nb) as u32, tiles(n) as u32);
            let pa = args(&mut want, &a.cast::<f32>(), 0, 0, 0, None);
            let input = RoundingInput { diag: wide.diag().as_ptr(), sub: wide.sub().as_ptr(), ld: wide.ld() as u32 };
            let pr = args(&mut got, &a.cast::<f32>(), 0, 0, 0, None);
            // SAFETY: the arrays cover the shape; grid, threads and shared memory as the
            // kernels state (the rounding one stages f64 tiles).
            unsafe {
                emu::launch_unchecked(grid, WIDE_THREADS, prep_shared_bytes(4), || prep(&pa));
                emu::launch_unchecked(grid, WIDE_THREADS, prep_shared_bytes(8), || prep_rounding(&pr, &input));
            }
            let case = format!("S={s} N={nb} n={n} fault {fault}");
            assert_eq!(got.info, want.info, "{case}");
            let faulted = match fault {
                1 => Some(s - 1),
                2 => Some(0),
                _ => None,
            };
            for (sys, &word) in got.info.iter().enumerate() {
                assert_eq!(word != INFO_OK, faulted == Some(sys), "{case}: system {sys}");
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for (what, g, w) in [("diag", &got.diag, &want.diag), ("left", &got.left, &want.left), ("right", &got.right, &want.right)] {
                assert!(bits(g) == bits(w), "{what}: {case}");
            }
        }
    }
}

/// Column-major `rows x k` panel data with leading dimension `ld`, random entries.
fn random_panel<T: Scalar>(rows: usize, ld: usize, k: usize, seed: u64) -> Vec<T> {
    use rand::{Rng, SeedableRng};
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..ld * k).map(|i| if i % ld < rows { <T as blocktri_prims::Real>::from_f64(r.random_range(-1.0..1.0)) } else { T::NAN }).collect()
}

/// Runs one product block per copy plan over the same panels and returns each plan's
/// accumulators (thread by thread); `product` is the block's body.
fn run_plans<T: Scalar, const N: usize>(
    threads: u32,
    shared: usize,
    product: impl Fn(Panel<T>, Panel<T>, usize, *mut T, CopyPlan) -> [T; N],
    (a, b): (Panel<T>, Panel<T>),
    k: usize,
) -> Vec<Vec<T>> {
    [CopyPlan::Checked, CopyPlan::Branch, CopyPlan::Split]
        .into_iter()
        .map(|plan| {
            let mut out = vec![T::NAN; threads as usize * N];
            let o = out.as_mut_ptr();
            // SAFETY: one block of `threads` threads with the product's shared memory; the
            // panels cover `rows x k`; each thread writes its own accumulators.
            unsafe {
                emu::launch_unchecked(1, threads, shared, || {
                    let acc = product(a, b, k, blocktri_prims::shared::dynamic_shared::<T>(), plan);
                    let tid = blocktri_prims::thread_idx_x() as usize;
                    std::ptr::copy_nonoverlapping(acc.as_ptr(), o.add(tid * N), N);
                })
            };
            out
        })
        .collect()
}

/// Every copy plan ([`CopyPlan`]) gives the same bits, and those are `A B^T`: full and
/// partial panels, `k` with and without a ragged last chunk, one chunk to many; the `64 x 64`
/// product with each multiply-add (FP64 tensor cores, f32 FMA, TF32) and the wide one.
#[test]
fn emulated_tiled_product_copy_plans_give_the_same_bits() {
    fn check<T: Scalar, const N: usize>(
        name: &str,
        (threads, shared, edge): (u32, usize, usize),
        product: impl Fn(Panel<T>, Panel<T>, usize, *mut T, CopyPlan) -> [T; N] + Copy,
        coord: impl Fn(usize, usize) -> (usize, usize),
        tol: f64,
    ) {
        let seed = fresh_seed();
        for (ra, rb, k) in [(edge, edge, 16), (edge, edge, 130), (edge, edge - 24, 48), (edge - 3, edge, 200), (edge, edge, 7)] {
            let ld = edge + 8;
            let (da, db) = (random_panel::<T>(ra, ld, k, seed), random_panel::<T>(rb, ld, k, seed ^ 1));
            let panels = (Panel { ptr: da.as_ptr(), ld, rows: ra }, Panel { ptr: db.as_ptr(), ld, rows: rb });
            let got = run_plans(threads, shared, product, panels, k);
            let bits = |v: &Vec<T>| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
            for (p, g) in got.iter().enumerate().skip(1) {
                assert_eq!(bits(g), bits(&got[0]), "{name} rows {ra}/{rb} k={k}: plan {p} differs from Checked (seed {seed})");
            }
            // Where each accumulator lands (the coordinates ask the emulated device's shape).
            let mut coords = vec![(0, 0); threads as usize * N];
            let cp = coords.as_mut_ptr();
            // SAFETY: each thread writes its own entries.
            unsafe {
                emu::launch_unchecked(1, threads, 0, || {
                    let tid = blocktri_prims::thread_idx_x() as usize;
                    for e in 0..N {
                        *cp.add(tid * N + e) = coord(tid, e);
                    }
                })
            };
            for tid in 0..threads as usize {
                for e in 0..N {
                    let (r, c) = coords[tid * N + e];
                    let want: f64 =
                        if r < ra && c < rb { (0..k).map(|q| da[q * ld + r].to_f64() * db[q * ld + c].to_f64()).sum() } else { 0.0 };
                    let v = got[0][tid * N + e].to_f64();
                    assert!((v - want).abs() <= tol * k as f64, "{name} rows {ra}/{rb} k={k} ({r}, {c}): {v} vs {want} (seed {seed})");
                }
            }
        }
    }
    let narrow = |bytes| (PRODUCT_THREADS, product_shared_bytes(bytes), TILE);
    // SAFETY (all): the products' contracts, as `run_plans` launches them.
    check::<f64, { ACC }>(
        "f64",
        narrow(8),
        |a, b, k, s, p| unsafe { product_nt_planned::<f64, Native>(a, b, k, s, p) },
        <Native as TileMac<f64>>::acc_coord,
        1e-14,
    );
    check::<f32, { ACC }>(
        "f32",
        narrow(4),
        |a, b, k, s, p| unsafe { product_nt_planned::<f32, Native>(a, b, k, s, p) },
        <Native as TileMac<f32>>::acc_coord,
        1e-5,
    );
    check::<f32, { ACC }>(
        "tf32",
        narrow(4),
        |a, b, k, s, p| unsafe { product_nt_planned::<f32, Tf32>(a, b, k, s, p) },
        <Tf32 as TileMac<f32>>::acc_coord,
        2e-3,
    );
    // 3xTF32: split operands (the low part truncated by the emulated tensor cores, as by
    // the device's) keep about f32 accuracy.
    check::<f32, { ACC }>(
        "tf32x3",
        narrow(4),
        |a, b, k, s, p| unsafe { product_nt_planned::<f32, Tf32x3>(a, b, k, s, p) },
        <Tf32x3 as TileMac<f32>>::acc_coord,
        1e-6,
    );
    let wide_tf32 = (WIDE_PRODUCT_THREADS, <WideTf32x3 as ProductShape<f32>>::SHARED_BYTES, WIDE_TILE);
    check::<f32, { WIDE_TILE / 2 }>(
        "wide tf32x3",
        wide_tf32,
        |a, b, k, s, p| unsafe { WideTf32x3::product_planned(a, b, k, s, p) },
        <WideTf32x3 as ProductShape<f32>>::acc_coord,
        1e-6,
    );
    let wide = (WIDE_PRODUCT_THREADS, <Wide as ProductShape<f64>>::SHARED_BYTES, WIDE_TILE);
    check::<f64, { WIDE_TILE / 2 }>(
        "wide",
        wide,
        |a, b, k, s, p| unsafe { Wide::product_planned(a, b, k, s, p) },
        <Wide as ProductShape<f64>>::acc_coord,
        1e-14,
    );
}
