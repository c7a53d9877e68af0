//! The fused engine: one thread block per node holding the node's blocks in shared memory
//! or registers (`blocktri_device::level`), one launch per level and sweep for the lower
//! levels; the rows, panel and blocked families run each sweep's top levels (at most
//! [`Variant::dataflow_nodes_per_sm`] nodes per SM) in one launch
//! (`blocktri_device::level::dataflow`).
//! Families: register-resident rows, shared-memory panels (and their blocked factor), generic.

use super::schedule::{Args, Step};
use super::{Buffers, GpuOptions, KernelFamily, SolveTarget, Sweep};
use crate::cuda::context::Gpu;
use crate::cuda::env_override;
use crate::cuda::launch::{Kernel, LaunchConfig};
use crate::error::{Error, Result};
use crate::matrix::Shape;
use crate::scalar::Scalar;
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::layout::{levels, nodes_in_level};
use blocktri_device::level::columns::{COLUMN_GROUP, columns_size, columns_threads, group_width, solve_panel_columns_shared_bytes};
use blocktri_device::level::{
    FactorArgs, PANEL_SIZES, ROW_THREADS, SOLVE_WARPS_PER_BLOCK, SWEEP_BACKWARD, SWEEP_FORWARD, SolveArgs, factor_blocked_shared_bytes,
    factor_blocked_threads, factor_flag_words, factor_panel_shared_bytes, factor_rows_shared_bytes, factor_shared_bytes, nodes_from,
    panel_size, panel_solve_threads, panel_threads, row_size, rows_nodes_per_block, rows_solve_nodes_per_block, solve_flag_words,
    solve_panel_dataflow_shared_bytes, solve_panel_shared_bytes, solve_rows_shared_bytes, solve_rows_warps_shared_bytes,
    solve_shared_bytes, subtree_blocks, subtree_max_levels, subtree_shared_bytes, subtree_threads,
};
use std::sync::{Arc, OnceLock};

/// The largest block size `KernelFamily::Auto` gives the panel kernels (with the blocked
/// factor, 1.5-1.9x faster than the column-by-column one: `docs/perf-notes.md`, entry 15);
/// the tiled engine takes larger blocks. Measured on the H100 (entry 12): at n = 80 and
/// 96 the tiled engine's factor + solve is 1.1-1.3x faster in f64 and f32 (the panel
/// kernels pad 65..96 to 96), at n = 64 the panel kernels' is (their solve is 2x faster).
pub(super) const AUTO_PANEL_MAX_N: usize = 64;

/// The fused kernels a plan runs, with their padded block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Variant {
    Generic,
    Rows(usize),
    Panel(usize),
    /// The panel kernels with the blocked factor (padded size 32 or 64).
    Blocked(usize),
}

impl Variant {
    /// The fused variant `family` picks for block size `n` (the same in both precisions);
    /// `None` when `family` is [`KernelFamily::Tiled`] or `Auto` prefers the tiled engine.
    pub(super) fn choose(family: KernelFamily, n: usize) -> Result<Option<Self>> {
        let unsupported = |what: &str, max: usize| Error::Unsupported(format!("the {what} kernels support n <= {max}, got n = {n}"));
        Ok(match family {
            KernelFamily::Generic => Some(Variant::Generic),
            KernelFamily::Rows | KernelFamily::RowsLevels => {
                Some(Variant::Rows(row_size(n).ok_or_else(|| unsupported("register-resident", 32))?))
            }
            KernelFamily::Panel => Some(Variant::Panel(panel_size(n).ok_or_else(|| unsupported("panel", 96))?)),
            KernelFamily::Blocked => {
                Some(Variant::Blocked(panel_size(n).filter(|&np| np <= 64).ok_or_else(|| unsupported("blocked panel", 64))?))
            }
            KernelFamily::Tiled => None,
            // The executor picks the chain engine before asking (`chain::prefers_chain`);
            // answered for the buffer layout (`is_tiled`), which is the fused engine's.
            KernelFamily::Chain => Some(Variant::Generic),
            KernelFamily::Auto => {
                // f32 took the rows kernels up to 32 too, until the blocked factor: at n = 32
                // its factor + solve is 0.77 vs 0.91 ms (N = 8192) and 3.68 vs 5.33 ms
                // (S = 1024, N = 64) on the H100 (`docs/perf-notes.md`, entry 15).
                let rows_limit = 16;
                match (row_size(n), panel_size(n)) {
                    (Some(np), _) if n <= rows_limit => Some(Variant::Rows(np)),
                    (_, Some(np)) if n <= AUTO_PANEL_MAX_N => Some(Variant::Blocked(np)),
                    _ => None,
                }
            }
        })
    }

    /// Interlaced right-hand sides in the factor kernels of `nrhs` columns (the panel
    /// kernels factor only). The blocked factor takes at most
    /// [`BLOCKED_INTERLACE_MAX_COLUMNS`], which keep its nodes per multiprocessor.
    pub(super) fn interlaces(self, nrhs: usize) -> bool {
        match self {
            Variant::Panel(_) => false,
            Variant::Blocked(_) => nrhs <= BLOCKED_INTERLACE_MAX_COLUMNS,
            _ => true,
        }
    }

    /// Nodes per thread block of the per-level factor kernel (the rows kernels pack
    /// `32 / np` nodes into a block's lanes; the single-launch sweeps take one).
    fn factor_nodes_per_block(self) -> u32 {
        match self {
            Variant::Rows(np) => rows_nodes_per_block(np),
            _ => 1,
        }
    }

    /// Nodes per multiprocessor up to which a level joins the single-launch sweep: about
    /// as many as that launch holds at once, so that the levels it takes are one wave of
    /// it. The blocked single launch holds one node per SM at padded size 64 and two at 32
    /// (144-150 registers), while its per-level launches hold two and four since
    /// `docs/perf-notes.md` entry 72: starting the single launch at 4 per SM there left a
    /// level of four waves of lone nodes in it (H200, f64 factor: N = 2048, n = 64
    /// 0.857 -> 0.827 ms with 1, N = 4096 1.41 -> 1.38; n = 32 with 2 at most 1 %, with 1
    /// up to 8 % slower). The other families keep entry 18's 4.
    fn dataflow_nodes_per_sm(self) -> u32 {
        match self {
            Variant::Blocked(np) if np > 32 => 1,
            Variant::Blocked(_) => 2,
            _ => DATAFLOW_NODES_PER_SM,
        }
    }

    /// Nodes per multiprocessor up to which a level joins the single-launch solve: as for
    /// the factor, about as many as that launch holds at once. The blocked family's solve
    /// bodies are the panel ones, which hold more nodes per SM than its factor's (at 64 in
    /// `f64` two: 102 KB of shared memory, 72 registers; at 32 four). Measured on the H200
    /// against the factor's one and two (`docs/perf-notes.md`, entry 105): at 64 the
    /// per-level launch of 256 lone nodes (31 µs) joins the single launch, solve
    /// `N = 4096` 0.548 -> 0.539 ms, `N = 512` 0.245 -> 0.231, factor + solve -0.5 to
    /// -1.2 %; at 32 within the noise (-0.8 to 0 %). The other families keep the factor's.
    fn solve_dataflow_nodes_per_sm(self) -> u32 {
        match self {
            Variant::Blocked(np) if np > 32 => 2,
            Variant::Blocked(_) => 4,
            _ => self.dataflow_nodes_per_sm(),
        }
    }

    /// Shared memory of the factor kernel with `nrhs` interlaced right-hand-side columns,
    /// for one node.
    pub(super) fn factor_smem(self, n: usize, nrhs: usize, elem: usize) -> u32 {
        (match self {
            Variant::Rows(np) => factor_rows_shared_bytes(np, nrhs, elem),
            Variant::Panel(np) => factor_panel_shared_bytes(np, elem),
            Variant::Blocked(np) => factor_blocked_shared_bytes(np, nrhs, elem),
            Variant::Generic => factor_shared_bytes(n, nrhs, elem),
        }) as u32
    }

    /// Shared memory the variant needs at least (factor without right-hand sides, solve
    /// one column per pass).
    fn min_smem(self, n: usize, elem: usize) -> usize {
        match self {
            Variant::Rows(np) => factor_rows_shared_bytes(np, 0, elem).max(solve_rows_shared_bytes(np, elem)),
            Variant::Panel(np) => factor_panel_shared_bytes(np, elem).max(solve_panel_dataflow_shared_bytes(np, elem)),
            Variant::Blocked(np) => factor_blocked_shared_bytes(np, 0, elem).max(solve_panel_dataflow_shared_bytes(np, elem)),
            Variant::Generic => factor_shared_bytes(n, 0, elem).max(solve_shared_bytes(n, 1, elem)),
        }
    }
}

/// Threads per factor block of the generic kernels: enough for the `3n x n` panel
/// updates to keep every warp busy.
fn default_factor_threads(n: usize) -> u32 {
    match n {
        0..=8 => 64,
        9..=16 => 128,
        17..=32 => 256,
        _ => 512,
    }
}

fn generic_solve_threads(n: usize) -> u32 {
    if n <= 16 {
        64
    } else if n <= 32 {
        128
    } else {
        256
    }
}

/// Largest block size the generic kernels support with `smem` bytes of shared memory per
/// block (factor without interlaced right-hand sides, solve one column per pass).
pub(super) fn max_generic_block(smem: u32, elem_bytes: usize) -> usize {
    let fits = |n| Variant::Generic.min_smem(n, elem_bytes) <= smem as usize;
    (1..=512).take_while(|&n| fits(n)).last().unwrap_or(0)
}

/// The largest number of right-hand-side columns per pass, at most `k` and the option's
/// `rhs_chunk`, for which a solve kernel needing `bytes(columns)` of shared memory fits in
/// `smem` bytes (at least 1).
pub(super) fn fitting_chunk(k: usize, rhs_chunk: u32, smem: u32, bytes: impl Fn(usize) -> usize) -> usize {
    let wanted = (k as u32).min(rhs_chunk.max(1)).max(1) as usize;
    (1..=wanted).rev().find(|&c| bytes(c) <= smem as usize).unwrap_or(1)
}

/// Largest block size some fused family supports with `smem` bytes of shared memory per
/// block.
pub(crate) fn max_fused_block(smem: u32, elem_bytes: usize) -> usize {
    let panel = PANEL_SIZES.iter().copied().filter(|&np| Variant::Panel(np).min_smem(np, elem_bytes) <= smem as usize).max().unwrap_or(0);
    max_generic_block(smem, elem_bytes).max(panel)
}

/// The single-launch sweeps of a family (`blocktri_device::level::dataflow`).
#[derive(Debug)]
struct Dataflow {
    factor: Kernel,
    /// The factor with the interlaced forward substitution where that is a kernel of its
    /// own (the rows and blocked families); `None`: `factor` does both.
    factor_interlaced: Option<Kernel>,
    solve: Kernel,
}

/// The solves of many right-hand-side columns (`blocktri_device::level::columns`: 32
/// columns per pass of a node) after the rows, panel and blocked factors, padded sizes 8,
/// 16, 32 and 64.
#[derive(Debug)]
struct Columns {
    /// The per-level kernels (forward, backward) reading the couplings from global memory.
    levels: (Kernel, Kernel),
    /// The per-level kernels staging the couplings in shared memory (wide column groups).
    levels_staged: (Kernel, Kernel),
    /// Both sweeps' top levels in one launch, where the family has single-launch kernels.
    single: Option<Kernel>,
    np: usize,
    /// The narrowest column group whose per-level launches stage the couplings.
    staged_from: usize,
}

impl Columns {
    /// Whether the per-level launches of `k` columns stage the couplings: staged, a node of
    /// padded size 64 takes a whole SM in `f64`, which pays only where each coupling entry
    /// would otherwise be read from global memory for four groups of 8 columns
    /// ([`columns_staged_from`]).
    fn staged(&self, k: usize) -> bool {
        group_width(k) >= self.staged_from
    }

    /// The per-level kernels for `k` columns (forward, backward).
    fn level_kernels(&self, k: usize) -> (&Kernel, &Kernel) {
        let (f, b) = if self.staged(k) { &self.levels_staged } else { &self.levels };
        (f, b)
    }

    /// The launch shape of a per-level column solve over `grid` nodes, `k` columns
    /// ([`columns_threads`]: staged, the single launch's threads, a node then having an SM
    /// of its own at padded size 64; otherwise fewer, so that several nodes share an SM).
    fn level_config(&self, grid: u32, k: usize, elem: usize) -> LaunchConfig {
        let staged = self.staged(k);
        LaunchConfig::linear(grid, columns_threads(self.np, staged, k), solve_panel_columns_shared_bytes(self.np, k, staged, elem) as u32)
    }

    /// The launch shape of the single-launch column solve over `grid` node passes: the
    /// couplings staged, [`columns_threads`] for them.
    fn single_config(&self, grid: u32, k: usize, elem: usize) -> LaunchConfig {
        LaunchConfig::linear(grid, columns_threads(self.np, true, k), solve_panel_columns_shared_bytes(self.np, k, true, elem) as u32)
    }
}

/// [`Columns`] loaded the first time a solve has enough columns for them: each kernel is
/// compiled when first loaded (on a fresh machine ~0.3 s each, `docs/perf-notes.md`
/// entry 67), and most plans never solve more than one column.
#[derive(Debug)]
struct LazyColumns {
    gpu: Arc<Gpu>,
    np: usize,
    /// Kernel names: per level (forward, backward), staged (forward, backward), and the
    /// single launch where the family has one.
    names: [String; 4],
    single: Option<String>,
    /// Threads per block the kernels must take: the most any launch of them takes (the
    /// staged launches of 32-column groups).
    threads: u32,
    loaded: OnceLock<Option<Columns>>,
}

impl LazyColumns {
    /// The kernels, loaded on first use; `None` when one of them cannot take the block
    /// size or does not load (the solves then take the columns one at a time, as the
    /// other families do).
    fn get(&self) -> Option<&Columns> {
        self.loaded.get_or_init(|| self.load().ok().flatten()).as_ref()
    }

    fn load(&self) -> Result<Option<Columns>> {
        let k = |name: &String| self.gpu.kernel(name);
        let levels = (k(&self.names[0])?, k(&self.names[1])?);
        let levels_staged = (k(&self.names[2])?, k(&self.names[3])?);
        let single = self.single.as_ref().map(k).transpose()?;
        let mut fits = true;
        for kernel in [&levels.0, &levels.1, &levels_staged.0, &levels_staged.1].into_iter().chain(&single) {
            fits &= kernel.max_threads_per_block()? >= self.threads;
        }
        let staged_from = env_override("BLOCKTRI_PANEL_COLUMNS_STAGED").unwrap_or(columns_staged_from(self.np));
        Ok(fits.then(|| Columns { levels, levels_staged, single, np: self.np, staged_from }))
    }
}

/// The fewest right-hand-side columns that the panel solves take [`Columns`] for
/// (`BLOCKTRI_PANEL_COLUMNS_FROM` overrides it for measurements). Measured on the H200
/// (`docs/perf-notes.md`, entry 80): at two columns the column solves took 0.87-1.04x the
/// time of two column-by-column sweeps up to N = 4096 and 1.18-1.20x at N = 16384; from
/// three on less everywhere.
const PANEL_COLUMNS_FROM: usize = 3;

/// Blocks (all systems) up to which the column solves after the rows factor of padded
/// size 4 or 8 start at [`PANEL_COLUMNS_FROM`] columns (see [`rows_columns_from`]).
const ROWS_PACKED_FEW_BLOCKS: usize = 4096;

/// The fewest right-hand-side columns that take [`Columns`] after the rows factor of
/// padded size `np`, in precision of `elem` bytes, for `blocks` blocks in all (systems
/// times blocks per system). Measured on the H200 (`docs/perf-notes.md`, entry 81): the
/// one-column rows solves cost about a fixed part plus one per column, the column solves
/// about the same from 3 to 8 columns, so the crossover is where the lines meet:
/// - padded size 16: f64 from 3 columns (0.92-0.96x the column-by-column time at k = 3),
///   f32 from 4 (k = 3: 1.06-1.16x; k = 4: 0.76-0.97x);
/// - padded size 8, up to [`ROWS_PACKED_FEW_BLOCKS`] blocks: from 3 (0.87-0.98x at k = 3);
///   beyond, the per-level column launches over thousands of nodes lose to the rows
///   solves' four nodes per block and their subtree launch: at N = 16384 the column solves
///   take ~0.19 ms from k = 3 to 8, the rows solves +0.024 ms (f64) / +0.022 ms (f32) per
///   column from 0.148 / 0.131 ms at k = 3, meeting at k = 5 (f64) and 6 (f32).
const fn rows_columns_from(np: usize, elem: usize, blocks: usize) -> usize {
    let f32 = elem == 4;
    if np > 8 {
        if f32 { 4 } else { 3 }
    } else if blocks <= ROWS_PACKED_FEW_BLOCKS {
        3
    } else if f32 {
        6
    } else {
        5
    }
}

/// The most columns the rows factor interlaces where the column solves take them
/// (`BLOCKTRI_ROWS_INTERLACE_MAX` overrides it): the rows factor solves its columns one
/// at a time, so past a few a plain factor and the column solves' forward sweep are
/// faster. Measured on the H200 (`docs/perf-notes.md`, entry 81), f64 factor + solve,
/// n = 8 and 16: interlacing every column count took 1.6-1.9x the time at k = 32 and
/// 1.1-1.3x at k = 8; at k = 3 to 5 the two forms were within 8 % of each other.
const ROWS_INTERLACE_MAX_COLUMNS: usize = 4;

/// The narrowest column group ([`group_width`]) whose per-level column solves stage the
/// couplings (`BLOCKTRI_PANEL_COLUMNS_STAGED` overrides it for measurements), by padded
/// size. Measured on the H200: at padded size 64 staging from 16 columns was 22-44 %
/// slower (a node then holds an SM alone) and no faster at 32; at 32 columns staged was
/// 4-5 % faster at 64 and 19-25 % at 32 (`docs/perf-notes.md`, entry 80); at 16, 32
/// columns staged 1 % slower to 4 % faster, at 8 6 % faster at N = 512 but 6-22 % slower
/// from N = 4096 (entry 81), so padded sizes up to 8 never stage.
const fn columns_staged_from(np: usize) -> usize {
    if np <= 8 { usize::MAX } else { 32 }
}

/// The fused engine of one plan.
#[derive(Debug)]
pub(super) struct Fused {
    pub(super) variant: Variant,
    prep: Kernel,
    factor: Kernel,
    /// The per-level factor with the interlaced forward substitution where that is a
    /// kernel of its own (the rows and blocked families); `None`: `factor` does both.
    factor_interlaced: Option<Kernel>,
    forward: Kernel,
    backward: Kernel,
    /// The top levels of a sweep in one launch (rows unless [`KernelFamily::RowsLevels`],
    /// panels up to padded size 64, blocked); `None`: one launch per level.
    dataflow: Option<Dataflow>,
    /// The backward sweep's lowest levels in one launch, a subtree per thread block
    /// (`blocktri_device::level::subtree`), with the most levels it takes; rows kernels
    /// up to [`SUBTREE_MAX_PADDED`], unless [`KernelFamily::RowsLevels`].
    subtree: Option<(Kernel, u32)>,
    /// The per-level solves with a warp per node (`blocktri_device::level::
    /// solve_forward_rows_warps`, `solve_backward_rows_warps`), in place of `forward` and
    /// `backward` where the columns go one at a time: rows kernels at
    /// [`SOLVE_WARPS_PADDED`]. Each `None` where [`solve_warps`] turns it off.
    forward_warps: Option<Kernel>,
    backward_warps: Option<Kernel>,
    /// The whole solve in one thread block per system for short chains
    /// (`blocktri_device::level::solve_rows_block`); rows kernels up to
    /// [`BLOCK_MAX_PADDED`], unless [`KernelFamily::RowsLevels`].
    block: Option<BlockSolve>,
    /// The solves of many columns; `None` for the generic family, padded size 96 and where
    /// their shared memory does not fit.
    columns: Option<LazyColumns>,
    /// The fewest columns that take `columns`, where the environment sets it (for
    /// measurements); otherwise [`Fused::columns_from`] decides.
    columns_from: Option<usize>,
    /// The most columns the rows factor interlaces where the column solves take them.
    rows_interlace_max: usize,
    factor_threads: u32,
    /// Threads per block of the per-level factor launches (the single launch keeps
    /// `factor_threads`).
    level_threads: u32,
    max_shared: u32,
    rhs_chunk: u32,
    /// SMs of the device (where the single-launch sweep starts).
    multiprocessors: u32,
}

impl Fused {
    /// Loads the kernels of `variant` for block size `n`, or explains why they do not fit.
    pub(super) fn new<T: Scalar>(gpu: &Arc<Gpu>, options: &GpuOptions, variant: Variant, n: usize) -> Result<Self> {
        let smem = gpu.info().max_shared_per_block;
        let needed = variant.min_smem(n, T::BYTES);
        if needed > smem as usize {
            return Err(Error::Unsupported(format!(
                "block size n = {n} with the {variant:?} kernels needs {needed} bytes of shared memory per block, this device has {smem}; the tiled kernels (the default above n = 64) have no such limit",
            )));
        }
        let k = |name: &str| gpu.kernel(kernel_name::<T>(name).as_str());
        let sized = |base: &str, np: usize| k(&format!("{base}{np}"));
        // The per-level kernels (the factor's interlaced twin where the family has one: rows
        // and blocked), and the names of the single-launch ones (factor, its interlaced twin,
        // solve).
        let (factor, factor_interlaced, forward, backward, single) = match variant {
            Variant::Rows(np) => (
                sized(names::FACTOR_ROWS, np)?,
                Some(sized(names::FACTOR_SOLVE_ROWS, np)?),
                sized(names::SOLVE_FORWARD_ROWS, np)?,
                sized(names::SOLVE_BACKWARD_ROWS, np)?,
                (options.kernels != KernelFamily::RowsLevels).then_some((
                    names::FACTOR_ROWS_DATAFLOW,
                    Some(names::FACTOR_SOLVE_ROWS_DATAFLOW),
                    names::SOLVE_ROWS_DATAFLOW,
                    np,
                )),
            ),
            Variant::Panel(np) | Variant::Blocked(np) => {
                let blocked = matches!(variant, Variant::Blocked(_));
                let (factor, factor_single) = if blocked {
                    (names::FACTOR_BLOCKED, names::FACTOR_BLOCKED_DATAFLOW)
                } else {
                    (names::FACTOR_PANEL, names::FACTOR_PANEL_DATAFLOW)
                };
                (
                    sized(factor, np)?,
                    blocked.then(|| sized(names::FACTOR_SOLVE_BLOCKED, np)).transpose()?,
                    sized(names::SOLVE_FORWARD_PANEL, np)?,
                    sized(names::SOLVE_BACKWARD_PANEL, np)?,
                    Some((factor_single, blocked.then_some(names::FACTOR_SOLVE_BLOCKED_DATAFLOW), names::SOLVE_PANEL_DATAFLOW, np)),
                )
            }
            Variant::Generic => (k(names::FACTOR_LEVEL)?, None, k(names::SOLVE_FORWARD)?, k(names::SOLVE_BACKWARD)?, None),
        };
        let hw_threads = factor.max_threads_per_block()?;
        let factor_threads = match variant {
            Variant::Rows(_) => ROW_THREADS,
            Variant::Panel(np) | Variant::Blocked(np) => panel_threads(np),
            Variant::Generic => options.factor_threads.unwrap_or_else(|| default_factor_threads(n)).min(hw_threads / 32 * 32).max(32),
        };
        // The blocked factor's per-level launches take the block size measured best for
        // how many nodes share a multiprocessor there (the single launch keeps its own).
        let level_threads = match variant {
            Variant::Blocked(np) => blocked_threads().unwrap_or(factor_blocked_threads(np, T::BYTES, smem as usize)).min(hw_threads),
            _ => factor_threads,
        };
        // A single-launch kernel holds both node bodies (the solve) or the flag logic on top
        // of one: where its registers do not allow the per-level kernels' block size (the
        // panel kernels at padded size 96), the levels keep one launch each.
        let dataflow = match single {
            Some((factor_base, interlaced_base, solve_base, np)) => {
                let d = Dataflow {
                    factor: sized(factor_base, np)?,
                    factor_interlaced: interlaced_base.map(|base| sized(base, np)).transpose()?,
                    solve: sized(solve_base, np)?,
                };
                let interlaced_fits = match &d.factor_interlaced {
                    Some(k) => k.max_threads_per_block()? >= factor_threads,
                    None => true,
                };
                (d.factor.max_threads_per_block()? >= factor_threads
                    && d.solve.max_threads_per_block()? >= factor_threads
                    && interlaced_fits)
                    .then_some(d)
            }
            None => None,
        };
        let subtree = match variant {
            Variant::Rows(np) if np <= SUBTREE_MAX_PADDED && options.kernels != KernelFamily::RowsLevels => {
                // As many levels as the kernel takes and its shared memory fits.
                let fits = |d: &u32| subtree_shared_bytes(np, *d, T::BYTES) <= smem as usize;
                let most = subtree_levels().unwrap_or(u32::MAX).min(subtree_max_levels(np));
                match (1..=most).rev().find(fits) {
                    Some(depth) => Some((sized(names::SOLVE_BACKWARD_SUBTREE_ROWS, np)?, depth)),
                    None => None,
                }
            }
            _ => None,
        };
        let (forward_warps, backward_warps) = match variant {
            Variant::Rows(np) if np == SOLVE_WARPS_PADDED => {
                let sweeps = solve_warps();
                let pick = |bit: u32, name: &str| (sweeps & bit != 0).then(|| sized(name, np)).transpose();
                (pick(1, names::SOLVE_FORWARD_WARPS)?, pick(2, names::SOLVE_BACKWARD_WARPS)?)
            }
            _ => (None, None),
        };
        let block = match variant {
            Variant::Rows(np) if np <= BLOCK_MAX_PADDED && options.kernels != KernelFamily::RowsLevels => {
                let kernel = sized(names::SOLVE_ROWS_BLOCK, np)?;
                // Every warp a shared region of its own, within the registers' limit.
                let by_smem = smem as usize / solve_rows_shared_bytes(np, T::BYTES);
                let warps = (by_smem as u32).min(kernel.max_threads_per_block()? / 32).min(32);
                let rounds = env_override("BLOCKTRI_BLOCK_SOLVE_ROUNDS").unwrap_or(block_solve_rounds(np));
                let nodes = (rounds * warps).min(env_override("BLOCKTRI_BLOCK_SOLVE_NODES").unwrap_or(BLOCK_SOLVE_NODES));
                (nodes > 0).then_some(BlockSolve { kernel, warps, nodes })
            }
            _ => None,
        };
        let columns = match variant {
            Variant::Rows(np) | Variant::Panel(np) | Variant::Blocked(np) => columns_size(np),
            Variant::Generic => None,
        };
        let columns = match columns {
            // The widest tiles must fit (32 columns, staged couplings).
            Some(np) if solve_panel_columns_shared_bytes(np, 32, true, T::BYTES) <= smem as usize => {
                let name = |base: &str| kernel_name::<T>(&format!("{base}{np}")).as_str().to_string();
                Some(LazyColumns {
                    gpu: gpu.clone(),
                    np,
                    names: [
                        name(names::SOLVE_FORWARD_PANEL_COLUMNS),
                        name(names::SOLVE_BACKWARD_PANEL_COLUMNS),
                        name(names::SOLVE_FORWARD_PANEL_COLUMNS_STAGED),
                        name(names::SOLVE_BACKWARD_PANEL_COLUMNS_STAGED),
                    ],
                    single: dataflow.as_ref().map(|_| name(names::SOLVE_PANEL_COLUMNS_DATAFLOW)),
                    threads: columns_threads(np, true, COLUMN_GROUP),
                    loaded: OnceLock::new(),
                })
            }
            _ => None,
        };
        Ok(Fused {
            variant,
            prep: k(names::FACTOR_PREP)?,
            factor,
            factor_interlaced,
            forward,
            backward,
            dataflow,
            subtree,
            forward_warps,
            backward_warps,
            block,
            columns,
            columns_from: env_override(match variant {
                Variant::Rows(_) => "BLOCKTRI_ROWS_COLUMNS_FROM",
                _ => "BLOCKTRI_PANEL_COLUMNS_FROM",
            }),
            rows_interlace_max: env_override("BLOCKTRI_ROWS_INTERLACE_MAX").unwrap_or(ROWS_INTERLACE_MAX_COLUMNS),
            factor_threads,
            level_threads,
            max_shared: smem,
            rhs_chunk: options.rhs_chunk,
            multiprocessors: gpu.info().multiprocessors,
        })
    }

    /// Right-hand-side columns per pass of the generic solve kernels.
    fn chunk(&self, n: usize, k: usize, elem: usize) -> usize {
        fitting_chunk(k, self.rhs_chunk, self.max_shared, |c| solve_shared_bytes(n, c, elem))
    }

    /// The fewest right-hand-side columns that take the column solves for `shape`.
    fn columns_from<T: Scalar>(&self, shape: Shape) -> usize {
        self.columns_from.unwrap_or(match self.variant {
            Variant::Rows(np) => rows_columns_from(np, T::BYTES, shape.batch * shape.nblocks),
            _ => PANEL_COLUMNS_FROM,
        })
    }

    /// The solves of many columns, where the family has them and `k` columns of `shape`
    /// take them.
    fn columns_for<T: Scalar>(&self, shape: Shape, k: usize) -> Option<&Columns> {
        self.columns.as_ref().filter(|_| k >= self.columns_from::<T>(shape)).and_then(LazyColumns::get)
    }

    /// Whether the factor kernels can also do the forward substitution of `nrhs` columns.
    pub(super) fn interlaces<T: Scalar>(&self, shape: Shape, nrhs: usize) -> bool {
        let rows_cap =
            matches!(self.variant, Variant::Rows(_)) && nrhs > self.rows_interlace_max && self.columns_for::<T>(shape, nrhs).is_some();
        !rows_cap
            && self.variant.interlaces(nrhs)
            && self.variant.factor_smem(shape.block, nrhs, T::BYTES) * self.variant.factor_nodes_per_block() <= self.max_shared
    }

    /// The first level of the single-launch sweep for a shape (`None`: every level
    /// launched on its own). The levels below, where a level has more nodes than the GPU
    /// holds at once, keep one launch each: there the launch boundaries cost little and
    /// the per-level kernels need no flags; the levels from the first one that fits
    /// ([`Variant::dataflow_nodes_per_sm`] nodes per multiprocessor) go in one launch.
    fn dataflow_from(&self, nb: u32, systems: u32) -> Option<u32> {
        self.first_fitting(nb, systems, dataflow_nodes_per_sm(self.variant))
    }

    /// The first level of the single-launch solve ([`Fused::dataflow_from`] with
    /// [`Variant::solve_dataflow_nodes_per_sm`]): the solve's single launch holds other
    /// numbers of nodes per multiprocessor than the factor's.
    fn solve_dataflow_from(&self, nb: u32, systems: u32) -> Option<u32> {
        self.first_fitting(nb, systems, solve_dataflow_nodes_per_sm(self.variant))
    }

    /// The first level with at most `per_sm` nodes per multiprocessor, where the family
    /// has single-launch kernels.
    fn first_fitting(&self, nb: u32, systems: u32, per_sm: u32) -> Option<u32> {
        self.dataflow.as_ref()?;
        let fits = self.multiprocessors * per_sm;
        (0..levels(nb)).find(|&m| systems * nodes_in_level(nb, m) <= fits)
    }

    /// The warps of the solve in one thread block per system, where it runs: every level
    /// from 0, where the family has the kernel, level 0 has at most as many nodes as
    /// [`Fused::block`] takes (its warps take them in at most [`block_solve_rounds`]), the columns
    /// go one at a time (no `columns` kernels) and the systems fit one block per
    /// multiprocessor; `None` otherwise. Starting above level 0, with the levels below
    /// launched one by one, was measured slower than the single launch
    /// (`docs/perf-notes.md`, entry 106).
    fn block_warps(&self, nb: u32, systems: u32, columns: Option<&Columns>) -> Option<u32> {
        let b = self.block.as_ref()?;
        let warps = block_warps(nodes_in_level(nb, 0), systems, self.multiprocessors, b.nodes, b.warps)?;
        columns.is_none().then_some(warps)
    }

    /// The factorization: reset the status words, zero the update accumulators, one
    /// launch per level (the top levels in one launch where the family has single-launch
    /// kernels); with `rhs`, the factor kernels also do the forward substitution.
    pub(super) fn factor_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, rhs: Option<&SolveTarget<T>>) -> Vec<Step<'k, T>> {
        let shape = b.shape;
        let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
        let nrhs = rhs.map_or(0, |r| r.k);
        let smem = self.variant.factor_smem(shape.block, nrhs, T::BYTES);
        let mut steps = vec![Step::Launch {
            kernel: &self.prep,
            level: 0,
            cfg: LaunchConfig::linear((s * (nb / 2)).max(1), 128, 0),
            args: Args::Factor(b.factor_args(0, rhs)),
        }];
        let first = self.dataflow_from(nb, s);
        let per = self.variant.factor_nodes_per_block();
        let factor = factor_kernel(&self.factor, &self.factor_interlaced, nrhs);
        for m in 0..first.unwrap_or(levels(nb)) {
            let grid = (s * nodes_in_level(nb, m)).div_ceil(per);
            steps.push(Step::Launch {
                kernel: factor,
                level: m,
                cfg: LaunchConfig::linear(grid, self.level_threads, smem * per),
                args: Args::Factor(b.factor_args(m, rhs)),
            });
        }
        if let (Some(dataflow), Some(m)) = (&self.dataflow, first) {
            let flags = b.factor_flags();
            steps.push(Step::ClearFlags { addr: flags as u64, words: factor_flag_words(shape.batch, shape.nblocks) });
            steps.push(Step::Launch {
                kernel: factor_kernel(&dataflow.factor, &dataflow.factor_interlaced, nrhs),
                level: m,
                cfg: LaunchConfig::linear(nodes_from(nb, s, m), self.factor_threads, smem),
                args: Args::Factor(FactorArgs { flags, ..b.factor_args(m, rhs) }),
            });
        }
        steps
    }

    /// The solve of `target`'s right-hand sides; `forward` false skips the forward sweep
    /// (done by an interlaced factorization). The top levels run both sweeps in one launch
    /// where the family has single-launch kernels.
    pub(super) fn solve_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>, forward: bool) -> Vec<Step<'k, T>> {
        let shape = b.shape;
        let (n, nb, s) = (shape.block, shape.nblocks as u32, shape.batch as u32);
        let chunk = self.chunk(n, target.k, T::BYTES);
        let args = |level| b.solve_args(target, level, chunk);
        let columns = self.columns_for::<T>(shape, target.k);
        let (forward_kernel, backward_kernel, cfg) = self.level_solves::<T>(columns, n, target.k, chunk);
        let level_cfg = |m| cfg(s * nodes_in_level(nb, m));
        let mut steps = vec![Step::ResetStatus { addr: target.info as u64, systems: shape.batch }];
        // Every level in one block per system where that applies, else the top levels in the
        // single launch where the family has one.
        let block = self.block_warps(nb, s, columns);
        let first = if block.is_some() { None } else { self.solve_dataflow_from(nb, s) };
        let below = if block.is_some() { 0 } else { first.unwrap_or(levels(nb)) };
        if forward {
            steps.extend((0..below).map(|m| {
                let (kernel, cfg) = self.warps_or::<T>(Sweep::Forward, forward_kernel, level_cfg(m), columns, s * nodes_in_level(nb, m));
                Step::Launch { kernel, level: m, cfg, args: Args::Solve(args(m)) }
            }));
        }
        if let (Some(dataflow), Some(m)) = (&self.dataflow, first) {
            steps.push(Step::ClearFlags { addr: target.flags as u64, words: solve_flag_words(shape.batch, shape.nblocks) });
            let (sweeps, passes) = if forward { (SWEEP_FORWARD | SWEEP_BACKWARD, 2) } else { (SWEEP_BACKWARD, 1) };
            let grid = passes * nodes_from(nb, s, m);
            let (kernel, cfg) = match columns.and_then(|c| c.single.as_ref().map(|k| (k, c))) {
                Some((single, c)) => (single, c.single_config(grid, target.k, T::BYTES)),
                None => (&dataflow.solve, self.dataflow_solve_config::<T>(n, chunk, grid)),
            };
            steps.push(Step::Launch { kernel, level: m, cfg, args: Args::Solve(SolveArgs { flags: target.flags, sweeps, ..args(m) }) });
        }
        if let (Some(BlockSolve { kernel, .. }), Some(warps), Variant::Rows(np)) = (&self.block, block, self.variant) {
            let sweeps = if forward { SWEEP_FORWARD | SWEEP_BACKWARD } else { SWEEP_BACKWARD };
            let cfg = LaunchConfig::linear(s, 32 * warps, warps * solve_rows_shared_bytes(np, T::BYTES) as u32);
            steps.push(Step::Launch { kernel, level: 0, cfg, args: Args::Solve(SolveArgs { sweeps, ..args(0) }) });
        }
        // The lowest levels by subtrees, in one launch, where the family has that kernel
        // (it takes the columns one at a time: not with the column solves).
        let depth = match (&self.subtree, columns) {
            (Some((_, most)), None) => below.min(*most),
            _ => 0,
        };
        steps.extend((depth..below).rev().map(|m| {
            let (kernel, cfg) = self.warps_or::<T>(Sweep::Backward, backward_kernel, level_cfg(m), columns, s * nodes_in_level(nb, m));
            Step::Launch { kernel, level: m, cfg, args: Args::Solve(args(m)) }
        }));
        if let (Some((kernel, _)), Variant::Rows(np)) = (&self.subtree, self.variant)
            && depth > 0
        {
            steps.push(Step::Launch {
                kernel,
                level: 0,
                cfg: LaunchConfig::linear(
                    subtree_blocks(nb, s, depth),
                    subtree_threads(np, depth),
                    subtree_shared_bytes(np, depth, T::BYTES) as u32,
                ),
                // The kernel takes the number of levels in `level`.
                args: Args::Solve(args(depth)),
            });
        }
        steps
    }
}

impl Fused {
    /// The launch shape of a per-level solve kernel over `grid` nodes (`chunk` columns at
    /// a time; the rows kernels pack several nodes into a block).
    fn solve_config<T: Scalar>(&self, n: usize, chunk: usize, grid: u32) -> LaunchConfig {
        match self.variant {
            Variant::Rows(np) => {
                let per = rows_solve_nodes_per_block(np);
                LaunchConfig::linear(grid.div_ceil(per), ROW_THREADS, per * solve_rows_shared_bytes(np, T::BYTES) as u32)
            }
            Variant::Panel(np) | Variant::Blocked(np) => {
                LaunchConfig::linear(grid, panel_solve_threads(np), solve_panel_shared_bytes(np, T::BYTES) as u32)
            }
            Variant::Generic => LaunchConfig::linear(grid, generic_solve_threads(n), solve_shared_bytes(n, chunk, T::BYTES) as u32),
        }
    }

    /// The launch shape of the single-launch solve over `grid` node passes, one node per
    /// block: the per-level one, except the panel bodies, which stage the couplings there
    /// with more threads.
    fn dataflow_solve_config<T: Scalar>(&self, n: usize, chunk: usize, grid: u32) -> LaunchConfig {
        match self.variant {
            Variant::Rows(np) => LaunchConfig::linear(grid, ROW_THREADS, solve_rows_shared_bytes(np, T::BYTES) as u32),
            Variant::Panel(np) | Variant::Blocked(np) => {
                LaunchConfig::linear(grid, panel_threads(np), solve_panel_dataflow_shared_bytes(np, T::BYTES) as u32)
            }
            _ => self.solve_config::<T>(n, chunk, grid),
        }
    }

    /// The forward substitution alone, every level launched on its own (the single-launch
    /// kernels always finish with the backward sweep).
    pub(super) fn forward_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>) -> Vec<Step<'k, T>> {
        let shape = b.shape;
        let (nb, s) = (shape.nblocks as u32, shape.batch as u32);
        let chunk = self.chunk(shape.block, target.k, T::BYTES);
        let mut steps = vec![Step::ResetStatus { addr: target.info as u64, systems: shape.batch }];
        let columns = self.columns_for::<T>(shape, target.k);
        let (forward, _, cfg) = self.level_solves::<T>(columns, shape.block, target.k, chunk);
        steps.extend((0..levels(nb)).map(|m| {
            let grid = s * nodes_in_level(nb, m);
            let (kernel, cfg) = self.warps_or::<T>(Sweep::Forward, forward, cfg(grid), columns, grid);
            Step::Launch { kernel, level: m, cfg, args: Args::Solve(b.solve_args(target, m, chunk)) }
        }));
        steps
    }

    /// The warp-per-node kernel of `sweep` and its launch shape over `grid` nodes where the
    /// plan has it and the columns go one at a time (no `columns` kernels), else `kernel`
    /// with `cfg`.
    fn warps_or<'k, T: Scalar>(
        &'k self,
        sweep: Sweep,
        kernel: &'k Kernel,
        cfg: LaunchConfig,
        columns: Option<&Columns>,
        grid: u32,
    ) -> (&'k Kernel, LaunchConfig) {
        let warps = match sweep {
            Sweep::Forward => &self.forward_warps,
            Sweep::Backward => &self.backward_warps,
        };
        match (warps, columns) {
            (Some(warps), None) => {
                let smem = solve_rows_warps_shared_bytes(SOLVE_WARPS_PADDED, T::BYTES) as u32;
                (warps, LaunchConfig::linear(grid.div_ceil(SOLVE_WARPS_PER_BLOCK), 32 * SOLVE_WARPS_PER_BLOCK, smem))
            }
            _ => (kernel, cfg),
        }
    }

    /// The per-level solve kernels (forward, backward) for `k` columns and their launch
    /// shape over `grid` nodes: the column kernels' where `columns` are taken, else the
    /// family's own (`chunk` columns per pass).
    fn level_solves<'k, T: Scalar>(
        &'k self,
        columns: Option<&'k Columns>,
        n: usize,
        k: usize,
        chunk: usize,
    ) -> (&'k Kernel, &'k Kernel, impl Fn(u32) -> LaunchConfig + 'k) {
        let (forward, backward) = columns.map_or((&self.forward, &self.backward), |c| c.level_kernels(k));
        let cfg = move |grid| match columns {
            Some(c) => c.level_config(grid, k, T::BYTES),
            None => self.solve_config::<T>(n, chunk, grid),
        };
        (forward, backward, cfg)
    }
}

/// Nodes per multiprocessor up to which a level joins the single-launch sweep
/// ([`Variant::dataflow_nodes_per_sm`]). `BLOCKTRI_DATAFLOW_PER_SM` overrides it for
/// measurements (`0`: no single-launch sweep; a large value: every level).
fn dataflow_nodes_per_sm(variant: Variant) -> u32 {
    env_override("BLOCKTRI_DATAFLOW_PER_SM").unwrap_or(variant.dataflow_nodes_per_sm())
}

/// Nodes per multiprocessor up to which a level joins the single-launch solve
/// ([`Variant::solve_dataflow_nodes_per_sm`]); `BLOCKTRI_SOLVE_DATAFLOW_PER_SM` overrides it
/// for measurements, as `BLOCKTRI_DATAFLOW_PER_SM` does the factor's.
fn solve_dataflow_nodes_per_sm(variant: Variant) -> u32 {
    env_override("BLOCKTRI_SOLVE_DATAFLOW_PER_SM").unwrap_or(variant.solve_dataflow_nodes_per_sm())
}

/// Threads per block of the blocked family's per-level factor launches from
/// `BLOCKTRI_BLOCKED_THREADS`, for measurements (`docs/perf-notes.md`, entry 72): a whole
/// number of warps from two up; anything else is ignored.
fn blocked_threads() -> Option<u32> {
    let threads: u32 = env_override("BLOCKTRI_BLOCKED_THREADS")?;
    (threads >= 64 && threads.is_multiple_of(32)).then_some(threads)
}

/// The most nodes of level 0 (per system) for which a solve runs in one thread block per
/// system ([`Fused::block_warps`]: chains of up to 128 blocks, where the kernel's warps take
/// level 0 in at most [`block_solve_rounds`]). Measured on the H200 (`docs/perf-notes.md`,
/// entries 106 and 108): solves at N = 16 and 32 -28 to -35 %, factor + solve -9 to -13 %;
/// at N = 64 -17 to -29 %; at padded size 16 +15 % at N = 64, so the kernel is built for 4
/// and 8 only.
const BLOCK_SOLVE_NODES: u32 = 64;

/// Rounds of warps the solve in one thread block per system may take on level 0 at padded
/// size `np`: a warp takes up to this many of its nodes one after another where the
/// kernel's registers allow fewer warps than level 0 has nodes
/// (`BLOCKTRI_BLOCK_SOLVE_ROUNDS` for measurements). Measured on the H200
/// (`docs/perf-notes.md`, entry 108; the single launch against the block, ms):
/// - two rounds: f64 N = 64 solve 0.034 -> 0.024 at padded size 4, 0.036 -> 0.030 at 8,
///   f32 at 8 0.034 -> 0.027; f32 N = 128 at 4 0.037 -> 0.029;
/// - three: f64 N = 128 at 4 0.0375 -> 0.033, but at 8 0.041 -> 0.045 (f32 even);
/// - four and more (N = 256): slower at both sizes (+1 to +50 %).
const fn block_solve_rounds(np: usize) -> u32 {
    if np <= 4 { 3 } else { 2 }
}

/// The solve in one thread block per system (`blocktri_device::level::solve_rows_block`):
/// its kernel, the most warps its registers and shared memory allow, and the most nodes of
/// level 0 it takes (at most [`BLOCK_SOLVE_NODES`] and [`block_solve_rounds`] per warp;
/// `BLOCKTRI_BLOCK_SOLVE_NODES` for measurements, `0`: never).
#[derive(Debug)]
struct BlockSolve {
    kernel: Kernel,
    warps: u32,
    nodes: u32,
}

/// The warps of a solve in one thread block per system ([`Fused::block_warps`]): where
/// level 0 has at most `limit` nodes (`nodes`) and the `systems` blocks fit one per
/// multiprocessor, a warp per node, or where the kernel takes fewer than `nodes` warps
/// (`most`), the fewest warps that take level 0 in as few rounds as `most` warps would;
/// `None` otherwise.
fn block_warps(nodes: u32, systems: u32, multiprocessors: u32, limit: u32, most: u32) -> Option<u32> {
    let nodes = nodes.max(1);
    let rounds = nodes.div_ceil(most.max(1));
    (systems <= multiprocessors && nodes <= limit).then_some(nodes.div_ceil(rounds))
}

/// The largest padded size whose solve can run in one thread block per system
/// ([`BLOCK_SOLVE_NODES`]).
const BLOCK_MAX_PADDED: usize = 8;

/// The largest padded size whose backward sweep starts with the subtree launch. Measured
/// on the H200 (`docs/perf-notes.md`, entry 71): at padded sizes 4 and 8 the launch takes
/// the lowest four levels' backward kernel time from 40-80 µs to 18-20 µs (N = 16384 and
/// 50000), solves -5 to -8 %; at 16 from ~70 to ~61 µs, but the solve's wall time was 2 %
/// slower (0.174 -> 0.178 ms at N = 16384), so it keeps one launch per level there.
const SUBTREE_MAX_PADDED: usize = 8;

/// The padded size whose per-level solves run a warp per node (`docs/perf-notes.md`, entry
/// 90). At 4 and 8 the three-warp kernels already pack 8 and 4 nodes per block, and the
/// backward sweep's lowest levels run as subtrees.
const SOLVE_WARPS_PADDED: usize = 16;

/// Which per-level solves run a warp per node at [`SOLVE_WARPS_PADDED`]: bit 0 forward,
/// bit 1 backward; both unless `BLOCKTRI_SOLVE_WARPS` says otherwise (for measurements:
/// `0` keeps the three-warp kernels).
fn solve_warps() -> u32 {
    env_override("BLOCKTRI_SOLVE_WARPS").unwrap_or(3)
}

/// The most levels of the backward sweep's subtree launch, from `BLOCKTRI_SUBTREE_LEVELS`
/// (for measurements; `0`: one launch per level), else as many as the kernel takes.
fn subtree_levels() -> Option<u32> {
    env_override("BLOCKTRI_SUBTREE_LEVELS")
}

/// The factor kernel for `nrhs` interlaced columns: `plain`, or its interlaced twin where
/// the family has one (the blocked factor) and there are columns.
fn factor_kernel<'k>(plain: &'k Kernel, interlaced: &'k Option<Kernel>, nrhs: usize) -> &'k Kernel {
    match interlaced {
        Some(twin) if nrhs > 0 => twin,
        _ => plain,
    }
}

/// The most right-hand-side columns the blocked factor interlaces: each costs a column
/// of the padded size in shared memory, and eight keep two `f64` nodes of padded size 64
/// per Hopper multiprocessor (2 x (105 + 4) KB); more columns are solved by the sweeps.
const BLOCKED_INTERLACE_MAX_COLUMNS: usize = 8;

/// The default of [`Variant::dataflow_nodes_per_sm`] (entry 18, measured with the rows
/// family, whose single launch holds four blocks per multiprocessor).
const DATAFLOW_NODES_PER_SM: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    /// Hopper's opt-in shared memory per block.
    const HOPPER_SMEM: u32 = 232_448;

    #[test]
    fn auto_picks_rows_then_panels_then_the_tiled_engine_above_64() {
        let auto = |n| Variant::choose(KernelFamily::Auto, n).unwrap();
        assert_eq!(auto(1), Some(Variant::Rows(4)));
        assert_eq!(auto(16), Some(Variant::Rows(16)));
        assert_eq!(auto(17), Some(Variant::Blocked(32)));
        assert_eq!(auto(64), Some(Variant::Blocked(64)));
        assert_eq!(auto(65), None);
        assert_eq!(auto(96), None);
        assert_eq!(Variant::choose(KernelFamily::Panel, 96).unwrap(), Some(Variant::Panel(96)));
        assert_eq!(auto(2048), None);
        assert_eq!(Variant::choose(KernelFamily::Tiled, 8).unwrap(), None);
        assert_eq!(Variant::choose(KernelFamily::Generic, 200).unwrap(), Some(Variant::Generic));
        assert!(matches!(Variant::choose(KernelFamily::Rows, 33), Err(Error::Unsupported(_))));
        assert!(matches!(Variant::choose(KernelFamily::Panel, 97), Err(Error::Unsupported(_))));
        assert_eq!(Variant::choose(KernelFamily::Auto, 33).unwrap(), Some(Variant::Blocked(64)));
        assert_eq!(Variant::choose(KernelFamily::Auto, 32).unwrap(), Some(Variant::Blocked(32)));
        assert_eq!(Variant::choose(KernelFamily::Blocked, 20).unwrap(), Some(Variant::Blocked(32)));
        assert!(matches!(Variant::choose(KernelFamily::Blocked, 65), Err(Error::Unsupported(_))));
        assert!(!Variant::Panel(64).interlaces(1) && Variant::Blocked(32).interlaces(1));
        assert!(!Variant::Blocked(64).interlaces(BLOCKED_INTERLACE_MAX_COLUMNS + 1));
        assert!(Variant::Rows(8).interlaces(100) && Variant::Generic.interlaces(1));
        // The interlaced columns keep two f64 nodes of padded size 64 on a Hopper
        // multiprocessor (228 KB, 1 KB reserved per block).
        let node = Variant::Blocked(64).factor_smem(64, BLOCKED_INTERLACE_MAX_COLUMNS, 8) as usize;
        assert!(2 * (node + 1024) <= 233_472, "{node}");
    }

    #[test]
    fn rows_blocks_fill_their_lanes_with_nodes() {
        // The per-level factor packs 32 / np nodes (no padding lanes), the solves up to np = 8.
        assert_eq!([4, 8, 16, 32].map(|np| Variant::Rows(np).factor_nodes_per_block()), [8, 4, 2, 1]);
        assert_eq!([4, 8, 16, 32].map(rows_solve_nodes_per_block), [8, 4, 1, 1]);
        for np in blocktri_device::level::ROW_SIZES {
            assert_eq!(rows_nodes_per_block(np) as usize * np, 32);
        }
        assert_eq!(Variant::Blocked(32).factor_nodes_per_block(), 1);
        assert_eq!(Variant::Generic.factor_nodes_per_block(), 1);
    }

    #[test]
    fn blocked_nodes_keep_every_warp_where_shared_memory_holds_one() {
        const AMPERE_SMEM: usize = 166_912;
        let hopper = HOPPER_SMEM as usize;
        // Hopper: two f64 nodes of padded size 64 share a multiprocessor, on fewer warps each.
        assert!(factor_blocked_threads(64, 8, hopper) < panel_threads(64));
        // An A100 holds one: the node keeps all its warps.
        assert_eq!(factor_blocked_threads(64, 8, AMPERE_SMEM), panel_threads(64));
        // Padded size 32 and f32 nodes fit several times on both.
        for (np, elem) in [(32, 8), (64, 4), (32, 4)] {
            assert_eq!(factor_blocked_threads(np, elem, AMPERE_SMEM), factor_blocked_threads(np, elem, hopper));
        }
        assert!(factor_blocked_threads(32, 8, AMPERE_SMEM) < panel_threads(32));
    }

    #[test]
    fn the_blocked_single_launch_takes_the_levels_that_are_one_wave_of_it() {
        // One 384-thread node per SM at padded size 64, two 192-thread ones at 32; the
        // rows family's single launch holds four.
        assert_eq!(Variant::Blocked(64).dataflow_nodes_per_sm(), 1);
        assert_eq!(Variant::Blocked(32).dataflow_nodes_per_sm(), 2);
        assert_eq!(Variant::Rows(16).dataflow_nodes_per_sm(), DATAFLOW_NODES_PER_SM);
        assert_eq!(Variant::Panel(64).dataflow_nodes_per_sm(), DATAFLOW_NODES_PER_SM);
        // The solve's single launch holds more blocked nodes than the factor's.
        assert_eq!(Variant::Blocked(64).solve_dataflow_nodes_per_sm(), 2);
        assert_eq!(Variant::Blocked(32).solve_dataflow_nodes_per_sm(), 4);
        assert_eq!(Variant::Rows(16).solve_dataflow_nodes_per_sm(), DATAFLOW_NODES_PER_SM);
    }

    #[test]
    fn short_chains_solve_in_one_block_per_system() {
        // N = 64: 32 nodes on level 0, a warp each where the kernel takes 32 warps.
        assert_eq!(block_warps(nodes_in_level(64, 0), 1, 132, BLOCK_SOLVE_NODES, 32), Some(32));
        // N = 128: 64 nodes in two rounds of 32 warps; N = 129 has 65 and keeps the single
        // launch.
        assert_eq!(block_warps(nodes_in_level(128, 0), 1, 132, BLOCK_SOLVE_NODES, 32), Some(32));
        assert_eq!(block_warps(nodes_in_level(129, 0), 1, 132, BLOCK_SOLVE_NODES, 32), None);
        // Three rounds at padded size 4, two at 8 (`Fused::new` bounds the nodes by them).
        assert_eq!((block_solve_rounds(4), block_solve_rounds(8)), (3, 2));
        // One block (N = 1): its one node on level 0, one warp.
        assert_eq!(block_warps(nodes_in_level(1, 0), 7, 132, BLOCK_SOLVE_NODES, 32), Some(1));
        // More systems than multiprocessors, or the measurement switch at 0: never.
        assert_eq!(block_warps(4, 133, 132, BLOCK_SOLVE_NODES, 32), None);
        assert_eq!(block_warps(4, 1, 132, 0, 32), None);
        // Fewer warps than nodes: two rounds of 32 nodes take 16 warps, not 20.
        assert_eq!(block_warps(32, 1, 132, 64, 20), Some(16));
        assert_eq!(block_warps(30, 1, 132, 64, 20), Some(15));
        assert_eq!(block_warps(20, 1, 132, 64, 20), Some(20));
    }

    #[test]
    fn every_kernel_the_fused_engine_loads_is_built() {
        let built = |name: String| assert!(crate::ptx::KERNELS.contains(&name.as_str()), "{name} is not in the PTX");
        for precision in ["f32", "f64"] {
            for np in blocktri_device::level::ROW_SIZES {
                for base in [
                    names::FACTOR_ROWS,
                    names::SOLVE_FORWARD_ROWS,
                    names::SOLVE_BACKWARD_ROWS,
                    names::FACTOR_ROWS_DATAFLOW,
                    names::SOLVE_ROWS_DATAFLOW,
                    names::FACTOR_SOLVE_ROWS,
                    names::FACTOR_SOLVE_ROWS_DATAFLOW,
                ] {
                    built(format!("{base}{np}_{precision}"));
                }
            }
            for np in [4, SUBTREE_MAX_PADDED] {
                built(format!("{}{np}_{precision}", names::SOLVE_BACKWARD_SUBTREE_ROWS));
            }
            for base in [names::SOLVE_FORWARD_WARPS, names::SOLVE_BACKWARD_WARPS] {
                built(format!("{base}{SOLVE_WARPS_PADDED}_{precision}"));
            }
            for np in [4, BLOCK_MAX_PADDED] {
                built(format!("{}{np}_{precision}", names::SOLVE_ROWS_BLOCK));
            }
            for np in PANEL_SIZES {
                for base in [
                    names::FACTOR_PANEL,
                    names::SOLVE_FORWARD_PANEL,
                    names::SOLVE_BACKWARD_PANEL,
                    names::FACTOR_PANEL_DATAFLOW,
                    names::SOLVE_PANEL_DATAFLOW,
                ] {
                    built(format!("{base}{np}_{precision}"));
                }
            }
            for np in [8, 16, 32, 64] {
                for base in [
                    names::SOLVE_FORWARD_PANEL_COLUMNS,
                    names::SOLVE_BACKWARD_PANEL_COLUMNS,
                    names::SOLVE_PANEL_COLUMNS_DATAFLOW,
                    names::SOLVE_FORWARD_PANEL_COLUMNS_STAGED,
                    names::SOLVE_BACKWARD_PANEL_COLUMNS_STAGED,
                ] {
                    built(format!("{base}{np}_{precision}"));
                }
            }
            for np in [32, 64] {
                for base in [
                    names::FACTOR_BLOCKED,
                    names::FACTOR_BLOCKED_DATAFLOW,
                    names::FACTOR_SOLVE_BLOCKED,
                    names::FACTOR_SOLVE_BLOCKED_DATAFLOW,
                ] {
                    built(format!("{base}{np}_{precision}"));
                }
            }
            for base in [names::FACTOR_PREP, names::FACTOR_LEVEL, names::SOLVE_FORWARD, names::SOLVE_BACKWARD] {
                built(format!("{base}_{precision}"));
            }
        }
    }

    #[test]
    fn the_largest_block_counts_every_kernel_that_must_fit() {
        // The generic solve holds three n x n tiles and a chunk of right-hand-side columns:
        // at n = 96 in f64 one column fits, sixteen do not (the chunk shrinks to fit).
        let generic = max_generic_block(HOPPER_SMEM, 8);
        assert!((96..128).contains(&generic));
        assert!(Variant::Generic.min_smem(generic + 1, 8) > HOPPER_SMEM as usize);
        let chunk = fitting_chunk(16, 32, HOPPER_SMEM, |c| solve_shared_bytes(96, c, 8));
        assert!(chunk < 16 && solve_shared_bytes(96, chunk, 8) <= HOPPER_SMEM as usize);
        assert!(solve_shared_bytes(96, chunk + 1, 8) > HOPPER_SMEM as usize);
        assert_eq!(fitting_chunk(16, 32, HOPPER_SMEM, |c| solve_shared_bytes(8, c, 8)), 16);
        assert_eq!(max_fused_block(HOPPER_SMEM, 8), generic);
        assert!(max_fused_block(HOPPER_SMEM, 4) > 96);
        assert_eq!(max_fused_block(0, 8), 0);
    }
}
