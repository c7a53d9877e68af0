//! The GPU kernels themselves, run in the CPU block emulator with the executor's launch
//! sequence: factor (plain and interlaced with the forward substitution) and solve
//! against the dense reference; failures reported with the right system and block.
//! Output buffers start poisoned (NaN).

mod common;

use blocktri::{BlockTridiag, BlockVec};
use blocktri_device::chain::{
    CHAIN_ROWS_WARPS, chain_rows_systems_per_block, chain_strip_size, chain_strip_threads, chain_threads, factor_chain, factor_chain_rows,
    factor_chain_rows_shared_bytes, factor_chain_shared_bytes, factor_chain_strips, factor_chain_strips_shared_bytes, solve_backward_chain,
    solve_backward_chain_inverse, solve_backward_chain_rows, solve_chain_shared_bytes, solve_forward_chain, solve_forward_chain_inverse,
    solve_forward_chain_rows,
};
use blocktri_device::layout::{levels, nodes_in_level};
use blocktri_device::level::columns::{
    columns_size, columns_threads, solve_backward_panel_columns, solve_backward_panel_columns_staged, solve_forward_panel_columns,
    solve_forward_panel_columns_staged, solve_panel_columns_shared_bytes,
};
use blocktri_device::level::{
    FactorArgs, INFO_OK, InfoCode, ROW_THREADS, SWEEP_BACKWARD, SWEEP_FORWARD, SolveArgs, decode_info, factor_blocked,
    factor_blocked_shared_bytes, factor_blocked_threads, factor_flag_words, factor_level, factor_panel, factor_panel_shared_bytes,
    factor_prep, factor_rows, factor_rows_dataflow, factor_rows_shared_bytes, factor_shared_bytes, factor_solve_blocked,
    factor_solve_blocked_dataflow, factor_solve_rows, factor_solve_rows_dataflow, panel_size, panel_solve_threads, panel_threads, row_size,
    rows_nodes_per_block, rows_solve_nodes_per_block, solve_backward_level, solve_backward_panel, solve_backward_rows, solve_flag_words,
    solve_forward_level, solve_forward_panel, solve_forward_rows, solve_panel_dataflow_shared_bytes, solve_panel_shared_bytes,
    solve_rows_dataflow, solve_rows_shared_bytes, solve_shared_bytes, subtree_blocks, subtree_max_levels, subtree_shared_bytes,
    subtree_threads,
};
use blocktri_device::level::{
    SOLVE_WARPS_PER_BLOCK, factor_blocked_dataflow, nodes_from, solve_backward_rows_warps, solve_backward_subtree_rows,
    solve_forward_rows_warps, solve_panel_columns_dataflow, solve_panel_dataflow, solve_rows_block, solve_rows_warps_shared_bytes,
};
use blocktri_prims::emu;
use common::{dense_solution, error_vs_reference, fresh_seed, problem};

struct Device {
    ld: usize,
    diag_in: Vec<f64>,
    sub_in: Vec<f64>,
    diag: Vec<f64>,
    left: Vec<f64>,
    right: Vec<f64>,
    info: Vec<u64>,
    solve_info: Vec<u64>,
    rhs: Vec<f64>,
    /// The kernels' `edge_from`: every column on every node unless a test lowers it.
    edge_from: u32,
}

fn upload(a: &BlockTridiag<f64>, b: &BlockVec<f64>, ld: usize) -> Device {
    let a = a.repad(ld).unwrap();
    let shape = a.shape();
    let len = shape.batch * shape.nblocks * ld * shape.block;
    Device {
        ld,
        diag_in: a.diag().to_vec(),
        sub_in: a.sub().to_vec(),
        diag: vec![f64::NAN; len],
        left: vec![f64::NAN; len],
        right: vec![f64::NAN; len],
        info: vec![0; shape.batch],
        solve_info: vec![0; shape.batch],
        rhs: b.as_slice().to_vec(),
        edge_from: u32::MAX,
    }
}

fn factor_args(d: &mut Device, a: &BlockTridiag<f64>, level: u32, nrhs: u32) -> FactorArgs<f64> {
    let shape = a.shape();
    FactorArgs {
        diag_in: d.diag_in.as_ptr(),
        diag: d.diag.as_mut_ptr(),
        left: d.left.as_mut_ptr(),
        right: d.right.as_mut_ptr(),
        sub: d.sub_in.as_ptr(),
        info: d.info.as_mut_ptr(),
        rhs: if nrhs > 0 { d.rhs.as_mut_ptr() } else { std::ptr::null_mut() },
        sym_tol: f64::EPSILON.sqrt(),
        ld: d.ld as u32,
        n: shape.block as u32,
        nblocks: shape.nblocks as u32,
        systems: shape.batch as u32,
        level,
        nrhs,
        edge_from: d.edge_from,
        flags: std::ptr::null_mut(),
    }
}

/// Which kernels run: the generic ones with `threads` threads, the register-resident
/// ones, the shared-memory panel ones, or the chain kernels (one block per system, no
/// levels).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Family {
    Generic(u32),
    Rows,
    /// The rows kernels' single-launch sweeps (`level::dataflow`) from this level up,
    /// the levels below launched one by one.
    RowsDataflow(u32),
    /// The rows kernels, the backward sweep's lowest levels (at most this many) by the
    /// subtree kernel (`level::subtree`), the levels above one launch each.
    RowsSubtree(u32),
    /// The rows kernels, the per-level solves a warp per node
    /// (`level::solve_forward_rows_warps`, `level::solve_backward_rows_warps`).
    RowsWarps,
    /// The rows kernels, both sweeps of the levels from `.0` up in one thread block per
    /// system of `.1` warps (`level::solve_rows_block`), the levels below one launch each.
    RowsBlock(u32, u32),
    /// The blocked panel factor and the panel solves, single-launch sweeps from this level.
    BlockedDataflow(u32),
    Panel,
    /// The panel solves after the blocked tensor-core factor (`level::blocked`).
    Blocked,
    /// The many-column solves (`level::columns`) after the rows factor (`n <= 16`) or the
    /// blocked one, one launch per level (`true`: the couplings staged in shared memory).
    Columns(bool),
    /// The rows or the blocked factor and the many-column solves, single-launch sweeps
    /// from this level.
    ColumnsDataflow(u32),
    Chain,
    ChainRows,
    /// The strip-blocked chain factor (`chain::factor_chain_strips`) and the chain solves
    /// the host pairs with it: one warp per system up to `n = 32`, above one block per
    /// system with the inverted diagonal blocks (`ChainInverse`).
    ChainStrips,
    /// The solves after the strip factor at padded size 64 (`W_bb = L_bb^-1` in `left`).
    ChainInverse,
}

const GENERIC: Family = Family::Generic(64);
const ROWS: Family = Family::Rows;
const ROWS_DATAFLOW: Family = Family::RowsDataflow(0);
const PANEL: Family = Family::Panel;
const BLOCKED: Family = Family::Blocked;
const CHAIN: Family = Family::Chain;
const CHAIN_ROWS: Family = Family::ChainRows;
const CHAIN_STRIPS: Family = Family::ChainStrips;

/// Runs the panel kernel of padded size `np` (32, 64 or 96).
macro_rules! panel_kernel {
    ($np:expr, $f:ident, $args:expr) => {
        match $np {
            32 => $f::<f64, 32>($args),
            64 => $f::<f64, 64>($args),
            _ => $f::<f64, 96>($args),
        }
    };
}

/// Runs the many-column kernel of padded size `np` (8, 16, 32 or 64).
macro_rules! columns_kernel {
    ($np:expr, $f:ident, $args:expr) => {
        match $np {
            8 => $f::<f64, 8>($args),
            16 => $f::<f64, 16>($args),
            32 => $f::<f64, 32>($args),
            _ => $f::<f64, 64>($args),
        }
    };
}

/// Runs the register-resident kernel of padded size `np` (4, 8, 16 or 32), with a
/// further const argument when given.
macro_rules! rows_kernel {
    ($np:expr, $f:ident, $args:expr) => {
        match $np {
            4 => $f::<f64, 4>($args),
            8 => $f::<f64, 8>($args),
            16 => $f::<f64, 16>($args),
            _ => $f::<f64, 32>($args),
        }
    };
    ($np:expr, $f:ident, $c:expr, $args:expr) => {
        match $np {
            4 => $f::<f64, 4, $c>($args),
            8 => $f::<f64, 8, $c>($args),
            16 => $f::<f64, 16, $c>($args),
            _ => $f::<f64, 32, $c>($args),
        }
    };
}

fn run_factor(d: &mut Device, a: &BlockTridiag<f64>, fam: Family, nrhs: u32) {
    // The subtree kernel is a backward solve: the factor is the rows family's; the column
    // solves follow the factor the host pairs them with (rows up to n = 16 in f64).
    let rows = a.shape().block <= 16;
    let fam = match fam {
        Family::RowsSubtree(_) | Family::RowsWarps | Family::RowsBlock(..) => ROWS,
        Family::Columns(_) if rows => ROWS,
        Family::Columns(_) => BLOCKED,
        Family::ColumnsDataflow(first) if rows => Family::RowsDataflow(first),
        Family::ColumnsDataflow(first) => Family::BlockedDataflow(first),
        other => other,
    };
    let shape = a.shape();
    let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
    let args = factor_args(d, a, 0, nrhs);
    if fam == CHAIN_ROWS {
        let np = row_size(shape.block).unwrap();
        let smem = factor_chain_rows_shared_bytes(np, 8);
        let grid = s.div_ceil(chain_rows_systems_per_block(np));
        // SAFETY: as below; a lane group per system.
        unsafe {
            emu::launch_unchecked(grid, 32 * CHAIN_ROWS_WARPS, smem, || {
                if nrhs > 0 { rows_kernel!(np, factor_chain_rows, true, &args) } else { rows_kernel!(np, factor_chain_rows, false, &args) }
            })
        };
        return;
    }
    if fam == CHAIN_STRIPS {
        assert_eq!(nrhs, 0, "the strip-blocked chain factor does not interlace right-hand sides");
        let np = chain_strip_size(shape.block).unwrap();
        let smem = factor_chain_strips_shared_bytes(np, 8);
        // SAFETY: as below; one block per system.
        unsafe {
            emu::launch_unchecked(s, chain_strip_threads(np), smem, || match np {
                32 => factor_chain_strips::<f64, 32>(&args),
                _ => factor_chain_strips::<f64, 64>(&args),
            })
        };
        return;
    }
    if fam == CHAIN {
        let smem = factor_chain_shared_bytes(shape.block, nrhs as usize, 8);
        // SAFETY: the arguments point to buffers sized for the shape; one block per system.
        unsafe { emu::launch_unchecked(s, chain_threads(shape.block), smem, || factor_chain(&args)) };
        return;
    }
    // SAFETY (all launches): the arguments point to buffers sized for the shape; the
    // closures only pass them to the kernels.
    unsafe { emu::launch_unchecked((s * (nb / 2)).max(1), 128, 0, || factor_prep(&args)) };
    let np = row_size(shape.block).unwrap_or(32);
    let pp = panel_size(shape.block).unwrap_or(96);
    if let Family::RowsDataflow(first) | Family::BlockedDataflow(first) | Family::ColumnsDataflow(first) = fam {
        // Levels below `first` one launch each, then one launch for the rest.
        let rows = matches!(fam, Family::RowsDataflow(_));
        let first = first.min(levels(nb) - 1);
        let (threads, smem) = if rows {
            (ROW_THREADS, factor_rows_shared_bytes(np, nrhs as usize, 8))
        } else {
            (panel_threads(pp), factor_blocked_shared_bytes(pp, nrhs as usize, 8))
        };
        // Both factors interlace right-hand sides in kernels of their own.
        let run = |args: &FactorArgs<f64>, dataflow: bool| unsafe {
            match (rows, dataflow, pp, nrhs > 0) {
                (true, false, _, false) => rows_kernel!(np, factor_rows, args),
                (true, true, _, false) => rows_kernel!(np, factor_rows_dataflow, args),
                (true, false, _, true) => rows_kernel!(np, factor_solve_rows, args),
                (true, true, _, true) => rows_kernel!(np, factor_solve_rows_dataflow, args),
                (false, false, 32, false) => factor_blocked::<f64, 32>(args),
                (false, false, _, false) => factor_blocked::<f64, 64>(args),
                (false, true, 32, false) => factor_blocked_dataflow::<f64, 32>(args),
                (false, true, _, false) => factor_blocked_dataflow::<f64, 64>(args),
                (false, false, 32, true) => factor_solve_blocked::<f64, 32>(args),
                (false, false, _, true) => factor_solve_blocked::<f64, 64>(args),
                (false, true, 32, true) => factor_solve_blocked_dataflow::<f64, 32>(args),
                (false, true, _, true) => factor_solve_blocked_dataflow::<f64, 64>(args),
            }
        };
        // The per-level rows kernel packs nodes into a block's lanes; the single launch
        // takes one node per block.
        let per = if rows { rows_nodes_per_block(np) } else { 1 };
        // The blocked factor's per-level launches take their own block size (the emulator's
        // shared memory has no limit).
        let level_threads = if rows { threads } else { factor_blocked_threads(pp, 8, usize::MAX) };
        for m in 0..first {
            let args = factor_args(d, a, m, nrhs);
            let grid = (s * nodes_in_level(nb, m)).div_ceil(per);
            unsafe { emu::launch_unchecked(grid, level_threads, smem * per as usize, || run(&args, false)) };
        }
        let mut flags = vec![0u32; factor_flag_words(shape.batch, shape.nblocks)];
        let args = FactorArgs { flags: flags.as_mut_ptr(), ..factor_args(d, a, first, nrhs) };
        let grid = nodes_from(nb, s, first);
        unsafe { emu::launch_unchecked(grid, threads, smem, || run(&args, true)) };
        assert_eq!(flags[0], grid, "every block took one ticket");
        assert_eq!(flags[1..].iter().filter(|&&f| f == 1).count(), grid as usize, "every node published");
        return;
    }
    for m in 0..levels(nb) {
        let args = factor_args(d, a, m, nrhs);
        let grid = s * nodes_in_level(nb, m);
        match fam {
            Family::Rows => {
                let per = rows_nodes_per_block(np);
                let smem = per as usize * factor_rows_shared_bytes(np, nrhs as usize, 8);
                // SAFETY: as the other launches.
                unsafe {
                    emu::launch_unchecked(grid.div_ceil(per), ROW_THREADS, smem, || {
                        if nrhs > 0 { rows_kernel!(np, factor_solve_rows, &args) } else { rows_kernel!(np, factor_rows, &args) }
                    })
                };
            }
            Family::Panel => {
                assert_eq!(nrhs, 0, "the panel kernels do not interlace right-hand sides");
                let smem = factor_panel_shared_bytes(pp, 8);
                unsafe { emu::launch_unchecked(grid, panel_threads(pp), smem, || panel_kernel!(pp, factor_panel, &args)) };
            }
            Family::Blocked => {
                let smem = factor_blocked_shared_bytes(pp, nrhs as usize, 8);
                // SAFETY: as the other launches.
                let run = || unsafe {
                    match (pp, nrhs > 0) {
                        (32, false) => factor_blocked::<f64, 32>(&args),
                        (_, false) => factor_blocked::<f64, 64>(&args),
                        (32, true) => factor_solve_blocked::<f64, 32>(&args),
                        (_, true) => factor_solve_blocked::<f64, 64>(&args),
                    }
                };
                unsafe { emu::launch_unchecked(grid, factor_blocked_threads(pp, 8, usize::MAX), smem, run) };
            }
            Family::Generic(threads) => {
                let smem = factor_shared_bytes(shape.block, nrhs as usize, 8);
                unsafe { emu::launch_unchecked(grid, threads, smem, || factor_level(&args)) };
            }
            Family::Chain
            | Family::ChainRows
            | Family::ChainStrips
            | Family::ChainInverse
            | Family::RowsDataflow(_)
            | Family::BlockedDataflow(_) => {
                unreachable!("launched above")
            }
            Family::RowsSubtree(_) | Family::RowsWarps | Family::RowsBlock(..) | Family::Columns(_) | Family::ColumnsDataflow(_) => {
                unreachable!("factored as the rows or the blocked family")
            }
        }
    }
}

fn run_solve(d: &mut Device, a: &BlockTridiag<f64>, k: usize, chunk: u32, forward: bool, fam: Family) {
    let shape = a.shape();
    let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
    d.solve_info.fill(INFO_OK);
    let args = |d: &mut Device, level| SolveArgs {
        diag: d.diag.as_ptr(),
        left: d.left.as_ptr(),
        right: d.right.as_ptr(),
        rhs: d.rhs.as_mut_ptr(),
        info: d.solve_info.as_mut_ptr(),
        ld: d.ld as u32,
        n: shape.block as u32,
        nblocks: nb,
        level,
        nrhs: k as u32,
        chunk,
        edge_from: d.edge_from,
        systems: s,
        flags: std::ptr::null_mut(),
        sweeps: 0,
    };
    let np = row_size(shape.block).unwrap_or(32);
    let pp = panel_size(shape.block).unwrap_or(96);
    let cp = columns_size(shape.block).unwrap_or(64);
    // The strip-blocked chain factor's solves: the register-resident ones where they exist.
    let fam = match fam {
        Family::ChainStrips if row_size(shape.block).is_some() => CHAIN_ROWS,
        Family::ChainStrips => Family::ChainInverse,
        other => other,
    };
    let (smem, threads) = match fam {
        Family::Rows | Family::RowsDataflow(_) | Family::RowsSubtree(_) | Family::RowsWarps | Family::RowsBlock(..) => {
            (solve_rows_shared_bytes(np, 8), ROW_THREADS)
        }
        Family::Panel | Family::Blocked | Family::BlockedDataflow(_) => (solve_panel_shared_bytes(pp, 8), panel_solve_threads(pp)),
        Family::Columns(staged) => (solve_panel_columns_shared_bytes(cp, k, staged, 8), columns_threads(cp, staged, k)),
        Family::ColumnsDataflow(_) => (solve_panel_columns_shared_bytes(cp, k, false, 8), columns_threads(cp, false, k)),
        Family::Generic(_) => (solve_shared_bytes(shape.block, chunk as usize, 8), 64),
        Family::Chain => (solve_chain_shared_bytes(shape.block, chunk as usize, 8), chain_threads(shape.block)),
        Family::ChainRows => (0, 32 * CHAIN_ROWS_WARPS),
        Family::ChainInverse => (solve_chain_shared_bytes(shape.block, chunk as usize, 8), chain_threads(shape.block)),
        Family::ChainStrips => unreachable!("mapped to its solves above"),
    };
    // The per-level rows solves pack nodes into a block's lanes up to padded size 8.
    let per = rows_solve_nodes_per_block(np);
    let launch = |a: &SolveArgs<f64>, grid: u32, forward: bool| match (fam, forward) {
        (Family::RowsWarps, forward) => unsafe {
            let smem = solve_rows_warps_shared_bytes(np, 8);
            emu::launch_unchecked(grid.div_ceil(SOLVE_WARPS_PER_BLOCK), 32 * SOLVE_WARPS_PER_BLOCK, smem, || match (np, forward) {
                (4, true) => solve_forward_rows_warps::<f64, 4>(a),
                (8, true) => solve_forward_rows_warps::<f64, 8>(a),
                (16, true) => solve_forward_rows_warps::<f64, 16>(a),
                (4, false) => solve_backward_rows_warps::<f64, 4>(a),
                (8, false) => solve_backward_rows_warps::<f64, 8>(a),
                (16, false) => solve_backward_rows_warps::<f64, 16>(a),
                _ => unreachable!("a warp per node up to padded size 16"),
            })
        },
        (Family::Rows | Family::RowsDataflow(_) | Family::RowsSubtree(_) | Family::RowsBlock(..), true) => unsafe {
            emu::launch_unchecked(grid.div_ceil(per), threads, per as usize * smem, || rows_kernel!(np, solve_forward_rows, a))
        },
        (Family::Rows | Family::RowsDataflow(_) | Family::RowsSubtree(_) | Family::RowsBlock(..), false) => unsafe {
            emu::launch_unchecked(grid.div_ceil(per), threads, per as usize * smem, || rows_kernel!(np, solve_backward_rows, a))
        },
        (Family::Panel | Family::Blocked | Family::BlockedDataflow(_), true) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || panel_kernel!(pp, solve_forward_panel, a))
        },
        (Family::Panel | Family::Blocked | Family::BlockedDataflow(_), false) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || panel_kernel!(pp, solve_backward_panel, a))
        },
        (Family::Columns(true), true) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || columns_kernel!(cp, solve_forward_panel_columns_staged, a))
        },
        (Family::Columns(true), false) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || columns_kernel!(cp, solve_backward_panel_columns_staged, a))
        },
        (Family::Columns(false) | Family::ColumnsDataflow(_), true) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || columns_kernel!(cp, solve_forward_panel_columns, a))
        },
        (Family::Columns(false) | Family::ColumnsDataflow(_), false) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || columns_kernel!(cp, solve_backward_panel_columns, a))
        },
        (Family::Generic(_), true) => unsafe { emu::launch_unchecked(grid, threads, smem, || solve_forward_level(a)) },
        (Family::Generic(_), false) => unsafe { emu::launch_unchecked(grid, threads, smem, || solve_backward_level(a)) },
        (Family::Chain, true) => unsafe { emu::launch_unchecked(grid, threads, smem, || solve_forward_chain(a)) },
        (Family::Chain, false) => unsafe { emu::launch_unchecked(grid, threads, smem, || solve_backward_chain(a)) },
        (Family::ChainRows, true) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || rows_kernel!(np, solve_forward_chain_rows, a))
        },
        (Family::ChainRows, false) => unsafe {
            emu::launch_unchecked(grid, threads, smem, || rows_kernel!(np, solve_backward_chain_rows, a))
        },
        (Family::ChainInverse, true) => unsafe { emu::launch_unchecked(grid, threads, smem, || solve_forward_chain_inverse(a)) },
        (Family::ChainInverse, false) => unsafe { emu::launch_unchecked(grid, threads, smem, || solve_backward_chain_inverse(a)) },
        (Family::ChainStrips, _) => unreachable!("mapped to its solves above"),
    };
    if let Family::RowsDataflow(first) | Family::BlockedDataflow(first) | Family::ColumnsDataflow(first) = fam {
        // Both sweeps of the levels from `first` up (or the backward one after an
        // interlaced factor) in one launch, the levels below one launch each.
        let first = first.min(levels(nb) - 1);
        if forward {
            for m in 0..first {
                launch(&args(d, m), s * nodes_in_level(nb, m), true);
            }
        }
        let mut flags = vec![0u32; solve_flag_words(shape.batch, shape.nblocks)];
        let sweeps = if forward { SWEEP_FORWARD | SWEEP_BACKWARD } else { SWEEP_BACKWARD };
        let a = SolveArgs { flags: flags.as_mut_ptr(), sweeps, ..args(d, first) };
        let grid = nodes_from(nb, s, first) * if forward { 2 } else { 1 };
        if matches!(fam, Family::RowsDataflow(_)) {
            unsafe { emu::launch_unchecked(grid, threads, smem, || rows_kernel!(np, solve_rows_dataflow, &a)) };
        } else if matches!(fam, Family::ColumnsDataflow(_)) {
            let smem = solve_panel_columns_shared_bytes(cp, k, true, 8);
            unsafe {
                emu::launch_unchecked(grid, columns_threads(cp, true, k), smem, || columns_kernel!(cp, solve_panel_columns_dataflow, &a))
            };
        } else {
            // The single launch stages the couplings, with the factor's thread count.
            let smem = solve_panel_dataflow_shared_bytes(pp, 8);
            unsafe { emu::launch_unchecked(grid, panel_threads(pp), smem, || panel_kernel!(pp, solve_panel_dataflow, &a)) };
        }
        assert_eq!(flags[0], grid, "every block took one ticket");
        assert_eq!(flags[1..].iter().filter(|&&f| f == 1).count(), grid as usize, "every node published");
        for m in (0..first).rev() {
            launch(&args(d, m), s * nodes_in_level(nb, m), false);
        }
        return;
    }
    if let Family::RowsBlock(first, warps) = fam {
        // As the host schedules it: the levels below `first` one launch each around one
        // launch of a block per system for both sweeps of the levels above.
        let first = first.min(levels(nb) - 1);
        if forward {
            for m in 0..first {
                launch(&args(d, m), s * nodes_in_level(nb, m), true);
            }
        }
        let sweeps = if forward { SWEEP_FORWARD | SWEEP_BACKWARD } else { SWEEP_BACKWARD };
        let a = SolveArgs { sweeps, ..args(d, first) };
        unsafe {
            emu::launch_unchecked(s, 32 * warps, warps as usize * smem, || match np {
                4 => solve_rows_block::<f64, 4>(&a),
                8 => solve_rows_block::<f64, 8>(&a),
                16 => solve_rows_block::<f64, 16>(&a),
                _ => unreachable!("a warp per node up to padded size 16"),
            })
        };
        for m in (0..first).rev() {
            launch(&args(d, m), s * nodes_in_level(nb, m), false);
        }
        return;
    }
    if let Family::RowsSubtree(most) = fam {
        // As the host schedules it: the levels from `depth` up one launch each, then one
        // subtree launch for the levels below.
        if forward {
            for m in 0..levels(nb) {
                launch(&args(d, m), s * nodes_in_level(nb, m), true);
            }
        }
        let depth = most.min(subtree_max_levels(np)).min(levels(nb));
        for m in (depth..levels(nb)).rev() {
            launch(&args(d, m), s * nodes_in_level(nb, m), false);
        }
        if depth > 0 {
            let a = args(d, depth);
            unsafe {
                emu::launch_unchecked(subtree_blocks(nb, s, depth), subtree_threads(np, depth), subtree_shared_bytes(np, depth, 8), || {
                    rows_kernel!(np, solve_backward_subtree_rows, &a)
                })
            };
        }
        return;
    }
    if matches!(fam, Family::Chain | Family::ChainRows | Family::ChainInverse) {
        // One launch per sweep: one block per system, or a lane group per system.
        let grid = if fam == CHAIN_ROWS { s.div_ceil(chain_rows_systems_per_block(np)) } else { s };
        if forward {
            launch(&args(d, 0), grid, true);
        }
        launch(&args(d, 0), grid, false);
        return;
    }
    if forward {
        for m in 0..levels(nb) {
            launch(&args(d, m), s * nodes_in_level(nb, m), true);
        }
    }
    for m in (0..levels(nb)).rev() {
        launch(&args(d, m), s * nodes_in_level(nb, m), false);
    }
}

const CASES: &[(usize, usize, usize, usize)] =
    &[(1, 1, 3, 1), (2, 2, 2, 2), (1, 3, 5, 1), (2, 5, 1, 3), (1, 8, 4, 2), (1, 9, 3, 5), (1, 6, 8, 1), (1, 5, 11, 2), (1, 4, 16, 1)];

#[test]
fn emulated_factor_and_solve_match_the_dense_reference() {
    for fam in [GENERIC, ROWS, ROWS_DATAFLOW] {
        check_factor_and_solve(fam, CASES);
    }
    // Longer chains for the single-launch sweeps: many levels, a batch, every padded size.
    check_factor_and_solve(ROWS_DATAFLOW, &[(3, 37, 2, 2), (1, 64, 7, 1), (2, 33, 16, 3), (1, 12, 29, 1)]);
    // The levels below 2 launched one by one, the rest in one launch.
    check_factor_and_solve(Family::RowsDataflow(2), &[(2, 37, 3, 2), (1, 9, 16, 1), (1, 2, 5, 1), (1, 64, 8, 2)]);
    // The backward sweep's lowest levels by subtrees: every depth the kernel takes, padded
    // sizes 4, 8 and 16, ranges cut short by the end of the chain, batches.
    for depth in [1, 2, 3, 7] {
        check_factor_and_solve(Family::RowsSubtree(depth), CASES);
    }
    // The top levels in one block per system: from level 0 and from level 2, one warp (a
    // warp takes every node of a level in turn), three and thirty-two, batches, chains
    // cut short, every padded size the kernel takes.
    for fam in [Family::RowsBlock(0, 1), Family::RowsBlock(0, 3), Family::RowsBlock(2, 32), Family::RowsBlock(1, 5)] {
        check_factor_and_solve(fam, CASES);
        check_factor_and_solve(fam, &[(3, 37, 2, 2), (2, 33, 16, 3), (1, 64, 7, 1), (2, 47, 9, 2)]);
    }
    // The host's rounds on level 0 (`docs/perf-notes.md` entry 108): 64 nodes in three
    // rounds of 22 warps, the last one short (f64 at padded size 4), 32 in two of 16 (at 8).
    check_factor_and_solve(Family::RowsBlock(0, 22), &[(1, 128, 4, 1), (2, 120, 3, 2)]);
    check_factor_and_solve(Family::RowsBlock(0, 16), &[(1, 64, 8, 1), (2, 61, 6, 1)]);
    // The solves a warp per node: every padded size they take, batches.
    check_factor_and_solve(Family::RowsWarps, CASES);
    check_factor_and_solve(Family::RowsWarps, &[(3, 37, 2, 2), (5, 9, 16, 1), (2, 33, 12, 3)]);
    check_factor_and_solve(Family::RowsSubtree(7), &[(3, 37, 2, 2), (1, 64, 7, 1), (2, 33, 16, 3), (1, 100, 4, 1), (2, 47, 9, 2)]);
    // The blocked factor and the panel solves, single launch from level 0 and from level 2.
    check_factor_and_solve(Family::BlockedDataflow(0), &[(2, 9, 33, 2), (1, 20, 20, 1), (1, 5, 64, 1)]);
    check_factor_and_solve(Family::BlockedDataflow(2), &[(1, 37, 40, 1), (2, 3, 17, 2)]);
    check_factor_and_solve(PANEL, CASES);
    check_factor_and_solve(PANEL, PANEL_CASES);
    check_factor_and_solve(BLOCKED, CASES);
    check_factor_and_solve(BLOCKED, BLOCKED_CASES);
    // The strip factor's and the blocked products' tiles on the sm_80 shape (`m8n8k4`;
    // sm_90 takes `m16n8k16` / `m16n8k8` on `16 x 8` tiles).
    emu::with_compute_capability(80, || {
        check_factor_and_solve(BLOCKED, BLOCKED_CASES);
        check_factor_and_solve(Family::BlockedDataflow(0), &[(2, 9, 33, 2), (1, 5, 64, 1)]);
        check_factor_and_solve(CHAIN_STRIPS, BLOCKED_CASES);
    });
    check_factor_and_solve(GENERIC, PANEL_CASES);
    check_factor_and_solve(CHAIN, CASES);
    check_factor_and_solve(CHAIN, PANEL_CASES);
    check_factor_and_solve(CHAIN_ROWS, CASES);
    // Every padded size, batches that leave warps of the last block idle.
    check_factor_and_solve(CHAIN_ROWS, &[(5, 4, 2, 1), (6, 7, 7, 2), (3, 3, 13, 3), (1, 6, 24, 1), (2, 3, 32, 2)]);
    // Both padded sizes, partial and whole strips, one block, warp and block solves.
    check_factor_and_solve(CHAIN_STRIPS, &[(1, 1, 3, 1), (2, 5, 8, 2), (1, 4, 17, 1)]);
    check_factor_and_solve(CHAIN_STRIPS, BLOCKED_CASES);
    check_factor_and_solve(CHAIN_STRIPS, &[(3, 6, 24, 2), (2, 4, 32, 1), (1, 1, 64, 1)]);
}

/// The many-column solves: one and two groups of columns (32 per pass), partial item
/// chunks, every padded size (after the rows factor at 8 and 16, the blocked one at 32 and
/// 64), every neighbour pattern, per level and in the single launch from level 0 and from
/// level 2.
#[test]
fn emulated_column_solves_match_the_dense_reference() {
    let cases: &[(usize, usize, usize, usize)] = &[
        (1, 5, 33, 2),
        (2, 3, 64, 9),
        (1, 7, 41, 40),
        (1, 2, 57, 3),
        (2, 4, 20, 33),
        (2, 9, 3, 5),
        (1, 6, 8, 32),
        (3, 5, 13, 40),
        (1, 12, 16, 7),
        (1, 1, 1, 3),
    ];
    check_factor_and_solve(Family::Columns(false), cases);
    check_factor_and_solve(Family::Columns(true), cases);
    check_factor_and_solve(Family::ColumnsDataflow(0), cases);
    check_factor_and_solve(Family::ColumnsDataflow(2), &[(1, 37, 40, 5), (2, 9, 17, 34), (2, 33, 16, 9), (1, 20, 5, 3)]);
    // After the interlaced factor, the backward sweep alone.
    check_interlaced(Family::Columns(false), &[(1, 9, 40, 5), (2, 5, 64, 3), (2, 9, 16, 4), (1, 7, 6, 3)]);
    check_interlaced(Family::ColumnsDataflow(1), &[(1, 9, 40, 5), (2, 5, 64, 3), (2, 9, 16, 4), (1, 7, 6, 3)]);
}

/// Block sizes that pick each padded panel size (32, 64, 96), including the edges.
const PANEL_CASES: &[(usize, usize, usize, usize)] = &[(1, 5, 33, 2), (2, 3, 64, 1), (1, 4, 65, 1), (1, 3, 96, 2)];

/// Block sizes of the blocked factor (padded sizes 32 and 64): partial and whole strips,
/// every neighbour pattern.
const BLOCKED_CASES: &[(usize, usize, usize, usize)] = &[(1, 5, 33, 2), (2, 3, 64, 1), (1, 4, 20, 1), (1, 7, 41, 1), (1, 2, 57, 3)];

fn check_factor_and_solve(fam: Family, cases: &[(usize, usize, usize, usize)]) {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in cases.iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let mut d = upload(&a, &b, n.div_ceil(8) * 8);
        run_factor(&mut d, &a, fam, 0);
        assert!(d.info.iter().all(|&x| x == INFO_OK), "info {:?}", d.info);
        run_solve(&mut d, &a, k, 2, true, fam);
        assert!(d.solve_info.iter().all(|&x| x == INFO_OK));
        let x = BlockVec::from_vec(a.shape(), k, d.rhs.clone()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < 1e-11, "{fam:?} S={s} N={nb} n={n} k={k}: {err:e} (seed {seed})");
    }
}

#[test]
fn emulated_interlaced_factor_forward_then_backward() {
    for fam in [Family::Generic(96), ROWS, ROWS_DATAFLOW, Family::RowsDataflow(2), Family::RowsSubtree(7), Family::RowsWarps, CHAIN] {
        check_interlaced(fam, CASES);
    }
    // The backward sweep alone in one block per system, from level 0 and from level 2.
    for fam in [Family::RowsBlock(0, 4), Family::RowsBlock(2, 2)] {
        check_interlaced(fam, CASES);
    }
    // The blocked factor: per-level launches (several warps of neighbour products beside
    // warp 0's substitution), the single launch from level 0 and from level 2.
    for fam in [BLOCKED, Family::BlockedDataflow(0), Family::BlockedDataflow(2)] {
        check_interlaced(fam, BLOCKED_CASES);
    }
    // The register-resident chain (one column): every padded size, several systems per
    // warp, batches that end inside a warp.
    check_interlaced(CHAIN_ROWS, &[(1, 1, 3, 1), (5, 4, 2, 1), (6, 7, 7, 1), (3, 3, 13, 1), (9, 5, 16, 1), (2, 3, 32, 1), (3, 4, 29, 1)]);
}

fn check_interlaced(fam: Family, cases: &[(usize, usize, usize, usize)]) {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in cases.iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, k, seed + 50 + i as u64);
        let mut d = upload(&a, &b, n.div_ceil(8) * 8);
        run_factor(&mut d, &a, fam, k as u32);
        run_solve(&mut d, &a, k, 32, false, fam);
        let x = BlockVec::from_vec(a.shape(), k, d.rhs.clone()).unwrap();
        let err = error_vs_reference(&x, &dense_solution(&a, &b));
        assert!(err < 1e-12, "S={s} N={nb} n={n} k={k}: {err:e} (seed {seed})");
    }
}

/// Columns from `edge_from` on, solved on the tree's edge nodes only (the segment path's
/// coupling columns, `docs/perf-notes.md` entry 65): right-hand sides zero except in the
/// first (or second) and the last block of each system give the reference solution in
/// those blocks, and the columns before `edge_from` everywhere. The edge columns stay
/// exactly zero in the blocks of nodes that share no thread block with an edge node: the
/// work there was skipped, not done, in the rows and the column kernels. The panel and
/// generic kernels ignore `edge_from` (checked for the solution only).
#[test]
fn emulated_edge_columns_are_solved_on_the_edges_only() {
    // (S, N, n, dense columns, edge columns)
    let rows_cases: &[(usize, usize, usize, usize, usize)] =
        &[(2, 37, 3, 1, 6), (1, 64, 7, 2, 14), (3, 21, 16, 1, 32), (1, 100, 5, 1, 3), (2, 2, 4, 1, 8), (1, 45, 29, 1, 5)];
    let panel_cases: &[(usize, usize, usize, usize, usize)] = &[(2, 37, 33, 1, 4), (1, 20, 64, 1, 3), (1, 9, 40, 2, 5)];
    let runs = [
        (ROWS, true, rows_cases),
        (ROWS, false, rows_cases),
        (ROWS_DATAFLOW, true, rows_cases),
        (Family::RowsDataflow(2), false, rows_cases),
        (Family::RowsDataflow(3), true, rows_cases),
        (Family::RowsSubtree(7), false, &rows_cases[..5]),
        (Family::RowsSubtree(2), true, &rows_cases[..5]),
        (PANEL, false, panel_cases),
        (BLOCKED, false, panel_cases),
        (BLOCKED, true, panel_cases),
        (Family::BlockedDataflow(2), false, panel_cases),
        (Family::BlockedDataflow(1), true, panel_cases),
        (GENERIC, true, &rows_cases[..3]),
        (Family::Columns(false), false, rows_cases),
        (Family::Columns(true), true, rows_cases),
        (Family::Columns(false), true, panel_cases),
        (Family::ColumnsDataflow(2), false, rows_cases),
        (Family::ColumnsDataflow(0), true, rows_cases),
        (Family::ColumnsDataflow(1), false, panel_cases),
    ];
    let seed = fresh_seed();
    for (fam, interlaced, cases) in runs {
        for (i, &(s, nb, n, k, e)) in cases.iter().enumerate() {
            let seed = seed + 100 * i as u64;
            let (a, dense) = problem::<f64>(s, nb, n, k + e, seed);
            let shape = a.shape();
            // The edge columns: zero except block `top` (0 or 1, by system) and the last.
            let mut b = dense.clone();
            for g in 0..s {
                let top = (g + i) % 2 * usize::from(nb > 2);
                for c in k..k + e {
                    for blk in 0..nb {
                        if blk != top && blk != nb - 1 {
                            (0..n).for_each(|r| b.set(g, blk * n + r, c, 0.0));
                        }
                    }
                }
            }
            let want = dense_solution(&a, &b);
            let mut d = upload(&a, &b, n.div_ceil(8) * 8);
            d.edge_from = k as u32;
            run_factor(&mut d, &a, fam, if interlaced { (k + e) as u32 } else { 0 });
            assert!(d.info.iter().all(|&x| x == INFO_OK), "info {:?}", d.info);
            run_solve(&mut d, &a, k + e, 2, !interlaced, fam);
            assert!(d.solve_info.iter().all(|&x| x == INFO_OK));
            let x = BlockVec::from_vec(shape, k + e, d.rhs.clone()).unwrap();
            let case = format!("{fam:?} interlaced {interlaced}, S={s} N={nb} n={n} k={k}+{e} (seed {seed})");
            let scale = want.as_slice().iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for g in 0..s {
                let top = (g + i) % 2 * usize::from(nb > 2);
                for c in 0..k + e {
                    let rows: Vec<usize> =
                        if c < k { (0..nb * n).collect() } else { (top * n..top * n + n).chain((nb - 1) * n..nb * n).collect() };
                    for r in rows {
                        let diff = (x.get(g, r, c) - want.get(g, r, c)).abs();
                        assert!(diff <= 1e-11 * scale, "{case}: system {g}, row {r}, column {c}: {diff:e}");
                    }
                }
            }
            if !matches!(fam, Family::Rows | Family::RowsDataflow(_) | Family::Columns(_) | Family::ColumnsDataflow(_)) {
                continue;
            }
            for g in 0..s {
                for blk in spared_blocks(fam, (s, nb, n), g) {
                    for c in k..k + e {
                        for r in blk * n..blk * n + n {
                            assert_eq!(x.get(g, r, c), 0.0, "{case}: system {g}, block {blk}, column {c} was solved off the edge");
                        }
                    }
                }
            }
        }
    }
}

/// The blocks of system `g` whose nodes share their solve's thread block with no edge
/// node (no left or no right neighbour) in `fam`'s launches: the per-level rows solves
/// pack nodes up to padded size 8, the single-launch sweeps and the column solves take one
/// node per block.
fn spared_blocks(fam: Family, (systems, nb, n): (usize, usize, usize), g: usize) -> Vec<usize> {
    use blocktri_device::layout::{left_of, node_number, right_of};
    let nbu = nb as u32;
    let edge = |m: u32, t: u32| {
        let i = node_number(m, t);
        left_of(i, m).is_none() || right_of(i, m, nbu).is_none()
    };
    let packed = rows_solve_nodes_per_block(row_size(n).unwrap_or(32));
    let mut out = Vec::new();
    for m in 0..levels(nbu) {
        let per = match fam {
            Family::Rows => packed,
            Family::RowsDataflow(first) if m < first.min(levels(nbu) - 1) => packed,
            _ => 1,
        };
        let nodes = nodes_in_level(nbu, m);
        let total = systems as u32 * nodes;
        for t in 0..nodes {
            let first = (g as u32 * nodes + t) / per * per;
            if !(first..(first + per).min(total)).any(|f| edge(m, f % nodes)) {
                out.push((node_number(m, t) - 1) as usize);
            }
        }
    }
    out
}

/// The subtree kernel gives the bits of the per-level backward launches at every depth,
/// and the same status words when an infinite right-hand side makes solutions non-finite.
#[test]
fn emulated_subtree_backward_matches_the_level_launches_bitwise() {
    let seed = fresh_seed();
    for (i, &(s, nb, n, k)) in [(2, 37, 3, 2), (1, 64, 16, 1), (3, 20, 8, 3), (1, 5, 1, 1), (1, 130, 4, 1)].iter().enumerate() {
        let (a, clean) = problem::<f64>(s, nb, n, k, seed + i as u64);
        for poison in [false, true] {
            let mut b = clean.clone();
            if poison {
                b.set(s - 1, nb / 2 * n, k - 1, f64::INFINITY);
            }
            let mut d = upload(&a, &b, n.div_ceil(8) * 8);
            run_factor(&mut d, &a, ROWS, 0);
            run_solve(&mut d, &a, k, 2, true, ROWS);
            let (want, want_info) = (d.rhs.clone(), d.solve_info.clone());
            assert_eq!(want_info.iter().any(|&x| x != INFO_OK), poison, "S={s} N={nb} n={n}: {want_info:?}");
            for depth in [1, 2, 3, 7] {
                d.rhs = b.as_slice().to_vec();
                run_solve(&mut d, &a, k, 2, true, Family::RowsSubtree(depth));
                let same = d.rhs.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "depth {depth}, S={s} N={nb} n={n} k={k}, poisoned {poison}: not the per-level bits (seed {seed})");
                assert_eq!(d.solve_info, want_info, "depth {depth}, S={s} N={nb} n={n}: status words");
            }
        }
    }
}

/// The warp-per-node backward solve gives the bits and status words of the three-warp
/// per-level kernel at padded size 16, where that holds one node per block as this one
/// does per warp: both start from the same forward solution (the rows factor's interlaced
/// substitution; the forward solves' atomic adds into a neighbour come in no fixed order,
/// so their warp-per-node twin is checked against the reference above). Batches whose
/// last block has idle warps, missing neighbours, an infinite right-hand side, and columns
/// restricted to the edge nodes.
#[test]
fn emulated_warp_backward_matches_the_three_warp_kernel_bitwise() {
    let seed = fresh_seed();
    let cases = [(2, 37, 12, 2), (1, 64, 16, 1), (3, 20, 9, 3), (1, 5, 16, 1), (1, 130, 10, 1), (3, 9, 13, 2), (1, 2, 16, 3)];
    for (i, &(s, nb, n, k)) in cases.iter().enumerate() {
        let (a, clean) = problem::<f64>(s, nb, n, k, seed + i as u64);
        for (poison, edge_from) in [(false, u32::MAX), (true, u32::MAX), (false, 1), (true, 1)] {
            let mut b = clean.clone();
            if poison {
                b.set(s - 1, nb / 2 * n, k - 1, f64::INFINITY);
            }
            let mut d = upload(&a, &b, n.div_ceil(8) * 8);
            d.edge_from = edge_from;
            run_factor(&mut d, &a, ROWS, k as u32);
            let y = d.rhs.clone();
            run_solve(&mut d, &a, k, 2, false, ROWS);
            let (want, want_info) = (d.rhs.clone(), d.solve_info.clone());
            d.rhs = y;
            run_solve(&mut d, &a, k, 2, false, Family::RowsWarps);
            let same = d.rhs.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "S={s} N={nb} n={n} k={k}, poisoned {poison}, edge_from {edge_from}: not the three-warp bits (seed {seed})");
            assert_eq!(d.solve_info, want_info, "S={s} N={nb} n={n}: status words");
            if poison && edge_from == u32::MAX {
                assert!(want_info.iter().any(|&x| x != INFO_OK), "S={s} N={nb} n={n}: the infinite entry went unreported");
            }
        }
    }
}

#[test]
fn emulated_failures_name_the_system_and_block() {
    for fam in
        [GENERIC, ROWS, ROWS_DATAFLOW, Family::RowsDataflow(1), PANEL, BLOCKED, Family::BlockedDataflow(0), CHAIN, CHAIN_ROWS, CHAIN_STRIPS]
    {
        check_failures(fam);
    }
    // The blocked factor: an indefinite pivot in the third strip of 0-based block 1
    // (level 1), found by the look-ahead factor of that strip's diagonal tile.
    let (mut a, b) = problem::<f64>(1, 5, 20, 1, 10);
    a.set_diag(0, 1, 17, 17, -1e3);
    let mut d = upload(&a, &b, 24);
    run_factor(&mut d, &a, BLOCKED, 0);
    assert_eq!(decode_info(d.info[0]), Some((1, InfoCode::NotPositiveDefinite as u32, 1)));
}

/// The register-resident chain kernels run two to eight systems per warp (a lane group
/// each), the per-level rows kernels two to eight nodes per block: a system that fails
/// must not stop or disturb the others of its warp, and the groups past the last system
/// (node) must not write. Every padded size below 32, batches that end inside a warp,
/// with and without the interlaced forward substitution.
#[test]
fn emulated_lane_groups_survive_a_failing_neighbour() {
    for fam in [CHAIN_ROWS, ROWS, Family::RowsWarps] {
        check_lane_groups_survive(fam);
    }
}

fn check_lane_groups_survive(fam: Family) {
    // The chain kernels record every failure on level 0; 0-based block 3 is on level 2.
    let level = if fam == CHAIN_ROWS { 0 } else { 2 };
    let seed = fresh_seed();
    // (S, N, n, failing system, factor with the interlaced forward substitution: one
    // right-hand side, the kernel's contract)
    let cases =
        [(5, 6, 16, 2, false), (7, 5, 7, 4, false), (11, 4, 3, 9, false), (3, 7, 12, 0, false), (5, 6, 16, 3, true), (11, 4, 5, 8, true)];
    for (i, &(s, nb, n, failing, interlaced)) in cases.iter().enumerate() {
        let k = if interlaced { 1 } else { 2 };
        let (mut a, b) = problem::<f64>(s, nb, n, k, seed + i as u64);
        let reference = dense_solution(&a, &b);
        a.set_diag(failing, 3, n - 1, n - 1, -1e3);
        let mut d = upload(&a, &b, n.div_ceil(8) * 8);
        run_factor(&mut d, &a, fam, if interlaced { 1 } else { 0 });
        for (sys, &info) in d.info.iter().enumerate() {
            if sys == failing {
                assert_eq!(decode_info(info), Some((level, InfoCode::NotPositiveDefinite as u32, 3)), "{fam:?} n={n} system {sys}");
            } else {
                assert_eq!(info, INFO_OK, "{fam:?} n={n} system {sys}");
            }
        }
        run_solve(&mut d, &a, k, 2, !interlaced, fam);
        // The other systems' solutions against their references (the failing system's
        // values are replaced by its reference: its factor is incomplete).
        let mut x = BlockVec::from_vec(a.shape(), k, d.rhs.clone()).unwrap();
        x.system_mut(failing).copy_from_slice(reference.system(failing));
        let err = error_vs_reference(&x, &reference);
        assert!(err < 1e-11, "{fam:?} S={s} N={nb} n={n}: {err:e} (seed {seed})");
    }
}

fn check_failures(fam: Family) {
    // The level of a failure; the chain kernels record every failure on level 0.
    let lv = |level: u32| if matches!(fam, Family::Chain | Family::ChainRows | Family::ChainStrips) { 0 } else { level };
    // System 1 of 2 gets an indefinite diagonal block 5 (level 1): reported there.
    let (mut a, b) = problem::<f64>(2, 9, 3, 1, 7);
    a.set_diag(1, 5, 1, 1, -100.0);
    let mut d = upload(&a, &b, 8);
    run_factor(&mut d, &a, fam, 0);
    assert_eq!(d.info[0], INFO_OK);
    let (level, code, block) = decode_info(d.info[1]).unwrap();
    assert_eq!((level, code, block), (lv(1), InfoCode::NotPositiveDefinite as u32, 5));

    // A NaN in sub-diagonal block 2 of system 0 (coupling of level-0 node block 2).
    let (mut a, b) = problem::<f64>(2, 6, 2, 1, 8);
    a.sub_block_mut(0, 2)[1] = f64::NAN;
    let mut d = upload(&a, &b, 8);
    run_factor(&mut d, &a, fam, 0);
    let (level, code, block) = decode_info(d.info[0]).unwrap();
    assert_eq!((level, code, block), (0, InfoCode::NonFinite as u32, 2));
    assert_eq!(d.info[1], INFO_OK);

    // An asymmetric diagonal block 3 (level 2).
    let (mut a, b) = problem::<f64>(1, 7, 3, 1, 9);
    a.diag_block_mut(0, 3)[1] += 0.5; // entry (1, 0) only
    let mut d = upload(&a, &b, 8);
    run_factor(&mut d, &a, fam, 0);
    let (level, code, block) = decode_info(d.info[0]).unwrap();
    assert_eq!((level, code, block), (lv(2), InfoCode::NotSymmetric as u32, 3));
}

/// Selected inversion (`blocktri_device::selinv`) after the emulated factor, level by level
/// from the top, against the CPU reference recursion; outputs poisoned with NaN. Both
/// kernel families: the unstaged ones and the staged ones (warp per node for n <= 16,
/// block per node above; fragment products over tiles padded to multiples of 8).
#[test]
fn emulated_selected_inversion_matches_the_cpu_recursion() {
    use blocktri_device::selinv::{
        SelinvArgs, selinv_chain, selinv_chain_staged, selinv_launch, selinv_level, selinv_level_staged, selinv_shared_bytes,
        selinv_threads,
    };
    let seed = fresh_seed();
    let cases = [
        (1usize, 1usize, 3usize),
        (2, 2, 4),
        (1, 7, 5),
        (3, 16, 2),
        (1, 45, 6),
        (5, 9, 16),
        (2, 6, 13),
        (1, 5, 21),
        (2, 3, 40),
        (1, 4, 35),
    ];
    let runs: Vec<_> =
        cases.iter().flat_map(|c| [(*c, GENERIC, false), (*c, CHAIN, false), (*c, GENERIC, true), (*c, CHAIN, true)]).collect();
    for (i, &((s, nb, n), fam, staged)) in runs.iter().enumerate() {
        if !staged && n > 16 {
            continue; // the unstaged kernels: the chain walk above the staged limit, and the level form as a reference; small cases cover them
        }
        let (a, b) = problem::<f64>(s, nb, n, 1, seed + i as u64);
        let ld = n + 1;
        let mut d = upload(&a, &b, ld);
        run_factor(&mut d, &a, fam, 0);
        let len = s * nb * ld * n;
        let (mut sd, mut sl, mut sr) = (vec![f64::NAN; len], vec![f64::NAN; len], vec![f64::NAN; len]);
        // Nested dissection: one launch per level from the top; chain: one launch.
        let launches: Vec<u32> = if fam == CHAIN { vec![0] } else { (0..levels(nb as u32)).rev().collect() };
        for m in launches {
            let args = SelinvArgs {
                diag: d.diag.as_ptr(),
                left: d.left.as_ptr(),
                right: d.right.as_ptr(),
                sigma_diag: sd.as_mut_ptr(),
                sigma_left: sl.as_mut_ptr(),
                sigma_right: sr.as_mut_ptr(),
                ld: ld as u32,
                n: n as u32,
                nblocks: nb as u32,
                level: m,
                systems: s as u32,
            };
            let jobs = if fam == CHAIN { s as u32 } else { s as u32 * nodes_in_level(nb as u32, m) };
            let shape = selinv_launch(n, 8, 232_448);
            // SAFETY: the buffers are sized for the shape; higher levels ran before; the
            // launch shapes are the ones the kernels document.
            unsafe {
                match (staged, fam == CHAIN) {
                    (false, true) => emu::launch_unchecked(jobs, selinv_threads(n), selinv_shared_bytes(n, 8), || selinv_chain(&args)),
                    (false, false) => emu::launch_unchecked(jobs, selinv_threads(n), selinv_shared_bytes(n, 8), || selinv_level(&args)),
                    (true, chain) => {
                        assert!(shape.staged, "n = {n} staged");
                        let grid = jobs.div_ceil(shape.jobs_per_block);
                        if chain {
                            emu::launch_unchecked(grid, shape.threads, shape.shared_bytes, || selinv_chain_staged(&args))
                        } else {
                            emu::launch_unchecked(grid, shape.threads, shape.shared_bytes, || selinv_level_staged(&args))
                        }
                    }
                }
            }
        }
        let worst = selinv_error(&a, ld, fam == CHAIN, [&sd, &sl, &sr]);
        assert!(worst < 1e-12, "{fam:?} staged={staged} S={s} N={nb} n={n}: {worst:e} (seed {seed})");
    }
}

/// Largest difference between the blocks of `A^-1` in the sweep's outputs (`diag`, `left`,
/// `right` at leading dimension `ld`) and the CPU reference recursion's.
fn selinv_error(a: &BlockTridiag<f64>, ld: usize, chain: bool, [sd, sl, sr]: [&[f64]; 3]) -> f64 {
    use blocktri::Factorization;
    use blocktri::cpu::SequentialCholesky;
    use blocktri_device::selinv::sub_diagonal_slot;
    let (s, nb, n) = (a.shape().batch, a.shape().nblocks, a.shape().block);
    let mut reference = SequentialCholesky::new();
    reference.factor(a).unwrap();
    let want = reference.selected_inverse().unwrap();
    let blk = |sys: usize, j: usize| (sys * nb + j) * ld * n;
    let mut worst = 0.0f64;
    for sys in 0..s {
        for j in 0..nb {
            for c in 0..n {
                for r in 0..n {
                    worst = worst.max((sd[blk(sys, j) + c * ld + r] - want.diag_block(sys, j)[c * n + r]).abs());
                    if j + 1 < nb {
                        let (slot, transposed) = if chain { (j as u32 + 1, true) } else { sub_diagonal_slot(j as u32 + 1) };
                        let got = if transposed {
                            sr[blk(sys, slot as usize - 1) + r * ld + c]
                        } else {
                            sl[blk(sys, slot as usize - 1) + c * ld + r]
                        };
                        worst = worst.max((got - want.sub_block(sys, j)[c * n + r]).abs());
                    }
                }
            }
        }
    }
    worst
}

/// The tiled selected inversion (`blocktri_device::selinv::tiled`: `64 x 64` output tiles
/// over many thread blocks) after the emulated factor, against the CPU reference
/// recursion; outputs and workspace poisoned with NaN. Fragment products (`n` a multiple
/// of 8: one, two and three tiles with a partial last one) and scalar ones (other `n`).
#[test]
fn emulated_tiled_selected_inversion_matches_the_cpu_recursion() {
    use blocktri_device::selinv::SelinvArgs;
    use blocktri_device::selinv::tiled::{
        SELINV_TILED_THREADS, SelinvTiledArgs, selinv_tiled_couplings, selinv_tiled_diagonal, selinv_tiled_invert_diag,
        selinv_tiled_invert_step, selinv_tiled_neighbours, selinv_tiled_shared_bytes,
    };
    use blocktri_device::tiled::tiles;
    let seed = fresh_seed();
    let cases = [(1usize, 1usize, 5usize), (2, 3, 16), (1, 7, 13), (1, 4, 72), (2, 3, 65), (1, 3, 136), (1, 2, 130)];
    for (i, &(s, nb, n)) in cases.iter().enumerate() {
        let (a, b) = problem::<f64>(s, nb, n, 1, seed + i as u64);
        let ld = n + 3;
        let mut d = upload(&a, &b, ld);
        run_factor(&mut d, &a, GENERIC, 0);
        let len = s * nb * ld * n;
        let (mut sd, mut sl, mut sr) = (vec![f64::NAN; len], vec![f64::NAN; len], vec![f64::NAN; len]);
        let mut linv = vec![f64::NAN; len];
        let mut work = vec![f64::NAN; 2 * s * nodes_in_level(nb as u32, 0) as usize * ld * n];
        let args = |level: u32, step: u32, out: [*mut f64; 3], linv: *mut f64, work: *mut f64| SelinvTiledArgs {
            base: SelinvArgs {
                diag: d.diag.as_ptr(),
                left: d.left.as_ptr(),
                right: d.right.as_ptr(),
                sigma_diag: out[0],
                sigma_left: out[1],
                sigma_right: out[2],
                ld: ld as u32,
                n: n as u32,
                nblocks: nb as u32,
                level,
                systems: s as u32,
            },
            linv,
            work,
            step,
        };
        let out = [sd.as_mut_ptr(), sl.as_mut_ptr(), sr.as_mut_ptr()];
        let (lp, wp) = (linv.as_mut_ptr(), work.as_mut_ptr());
        let nt = tiles(n) as u32;
        let launch = |blocks: u32, f: &dyn Fn()| {
            // SAFETY: the buffers are sized as `SelinvTiledArgs` requires; the launches run
            // in the host's order (inversion steps, then levels top down, three launches each).
            unsafe { emu::launch_unchecked(blocks, SELINV_TILED_THREADS, selinv_tiled_shared_bytes(8), f) }
        };
        let blocks = (s * nb) as u32;
        let x = args(0, 0, out, lp, wp);
        launch(blocks * nt, &|| unsafe { selinv_tiled_invert_diag(&x) });
        for step in 1..nt {
            let x = args(0, step, out, lp, wp);
            launch(blocks * (nt - step), &|| unsafe { selinv_tiled_invert_step(&x) });
        }
        for m in (0..levels(nb as u32)).rev() {
            let x = args(m, 0, out, lp, wp);
            let nodes = s as u32 * nodes_in_level(nb as u32, m);
            launch(nodes * 2 * nt * nt, &|| unsafe { selinv_tiled_couplings(&x) });
            launch(nodes * 2 * nt * nt, &|| unsafe { selinv_tiled_neighbours(&x) });
            launch(nodes * nt * (nt + 1) / 2, &|| unsafe { selinv_tiled_diagonal(&x) });
        }
        let worst = selinv_error(&a, ld, false, [&sd, &sl, &sr]);
        assert!(worst < 1e-12, "tiled S={s} N={nb} n={n}: {worst:e} (seed {seed})");
    }
}
