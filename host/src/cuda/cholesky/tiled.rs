//! The tiled engine (`blocktri_device::tiled`): every level split into `64 x 64` tile
//! operations over many thread blocks per node, products on FP64 tensor cores. No block
//! size limit but device memory; the default above `n = 64`.
//!
//! Launches of a factorization: reset the status words, `prep`; per level and per column
//! tile `k` of the panel: `update` (from `k = 1`), `potrf`, `trsm` (on levels with many
//! nodes `update_diagonal`, `potrf`, `update_trsm`; at `n >= 512` a `wide_update` of two
//! columns from step 6 on every other step, `column_update`); then the neighbour
//! products, both sides in one launch (not on the top level, whose node has no
//! neighbours). On the levels with plain `update`s (at most 63 nodes, three tiles or
//! more), step `k`'s `update` multiplies column `k - 1` alone, continuing the
//! accumulators of the columns before it, which a launch beside step `k - 1` on the
//! look-ahead stream ([`Lane::Ahead`]) left in a carry area: the bits of one launch. On
//! the levels that [`inverts_level`] picks, each step's `potrf` is followed on a side stream
//! by `inverse_step` (column tile `k` of `L_ii^-T`). Solve:
//! per level upward `forward_node` + `forward_couple` (both sides in one launch); downward `backward_couple` +
//! `backward_node` (the diagonal solves, one block per node; on levels whose nodes' tile
//! rows all fit on the SMs at once one block per tile row, `forward_split` and
//! `backward_split`; where neither those nor the node walks fit, one launch per tile
//! step: `forward_diag`, `backward_diag`; on the levels with inverses (blocks of 3 tiles
//! or more) `forward_inverse` / `backward_inverse`, then `inverse_copy`).
//! Factor + solve: each level's forward sweep on a side stream beside the factorization
//! of the levels above, then the backward sweep.

use super::schedule::{Args, Lane, Step};
use super::{Buffers, F32Products, SolveTarget, Sweep};
use crate::cuda::context::Gpu;
use crate::cuda::env_override;
use crate::cuda::launch::{Kernel, LaunchConfig};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use blocktri_device::kernels::{kernel_name, names};
use blocktri_device::layout::{levels, nodes_in_level};
use blocktri_device::tiled::factor::{
    CARRY_IN, CARRY_OUT, ColumnUpdate, RoundingInput, WIDE_THREADS, carry_elems, column_update, neighbour_blocks, neighbour_sides,
    panel_blocks, potrf_shared_bytes, prep_shared_bytes, product_kernel_shared_bytes, shape_kernel_shared_bytes,
};
use blocktri_device::tiled::inverse::{inverse_elems, inverse_parts, inverse_solve_chunk, inverse_solve_shared_bytes, inverts_level};
use blocktri_device::tiled::solve::{
    BACKWARD_ROW_GROUPS, MAX_CHUNK, SOLVE_THREADS, couple_shared_bytes, couple_sides, couple_threads, diag_solve_shared_bytes,
    node_walk_chunk, node_walk_shared_bytes, split_flag_offset, split_flag_words, split_walk_chunk, split_walk_shared_bytes, splits_walks,
    walks_nodes,
};
use blocktri_device::tiled::{
    Narrow, Native, PRODUCT_THREADS, ProductShape, TILE, Tall, TiledArgs, Wide, Wide16, WideTf32, WideTf32x3, dinv_elems, tiles,
};

/// Largest grid `y` of a launch (the tile pairs of one node).
const MAX_GRID_Y: usize = 65_535;

/// Largest block size the tiled engine launches (grid and shared-memory limits; device
/// memory usually binds first).
pub(super) fn max_tiled_block(smem: u32, elem_bytes: usize) -> usize {
    // Every tiled kernel's shared memory is independent of `n`: a device that cannot give
    // the largest of them runs none (0: no block size).
    let kernels = [prep_shared_bytes, potrf_shared_bytes, product_kernel_shared_bytes, diag_solve_shared_bytes, couple_shared_bytes];
    if kernels.iter().map(|bytes| bytes(elem_bytes)).max().unwrap_or(0) > smem as usize {
        return 0;
    }
    // The tile pairs of one node's trailing update and neighbour products go on grid y.
    let fits = |n: usize| {
        let nt = tiles(n);
        nt * (nt + 1) / 2 + nt * nt <= MAX_GRID_Y
    };
    let mut n = 64;
    while fits(2 * n) {
        n *= 2;
    }
    while fits(n + 64) {
        n += 64;
    }
    n
}

/// Blocks per SM from which a neighbour launch takes the wide products: below, the
/// `64 x 64` products' four times as many blocks keep more SMs busy.
/// `BLOCKTRI_WIDE_WAVES` overrides it for measurements (0: always wide, where loaded).
const WIDE_WAVES: u32 = 2;

/// Smallest block size whose neighbour products may run wide: below, the short `K = n`
/// loop and one 8-warp block per SM made them slower than the `64 x 64` products on the
/// H100 (`docs/perf-notes.md`, entry 20). `BLOCKTRI_WIDE_MIN_BLOCK` overrides it (for the
/// sanitizer runs and measurements).
const WIDE_MIN_BLOCK: usize = 512;

/// [`WIDE_MIN_BLOCK`] for the TF32 products (`f32`): measured on the H200
/// (`docs/perf-notes.md`, entry 84), the wide ones were 3-9 % slower than the `64 x 64`
/// ones at n = 256 and 512 in 3xTF32 and 3.7-8 % faster at n = 1024 (one 8-warp block per
/// SM against three 4-warp ones). `BLOCKTRI_WIDE_MIN_BLOCK` overrides both.
const WIDE_TF32_MIN_BLOCK: usize = 1024;

/// [`WIDE_MIN_BLOCK`], or [`WIDE_TF32_MIN_BLOCK`] for the TF32 products, unless
/// `BLOCKTRI_WIDE_MIN_BLOCK` sets both.
fn wide_min_block(tf32: bool) -> usize {
    env_override("BLOCKTRI_WIDE_MIN_BLOCK").unwrap_or(if tf32 { WIDE_TF32_MIN_BLOCK } else { WIDE_MIN_BLOCK })
}

fn wide_waves() -> u32 {
    env_override("BLOCKTRI_WIDE_WAVES").unwrap_or(WIDE_WAVES)
}

/// The first column step that starts a [`Wide`] pair where a level takes pairs: with the
/// rows below the diagonal updated in [`update_trsm`](blocktri_device::tiled::factor::update_trsm),
/// a pair at step `k` streams `k + 9` column passes of the panel against `2 k + 5` for two
/// single steps (`docs/perf-notes.md`, entry 46). Steps of 128 columns (a `128 x 128`
/// diagonal factor, `k + 4` passes) were measured no faster in three forms (entry 97).
const FIRST_PAIR: usize = 6;

/// Fewest nodes (all systems) of a level whose column steps update the rows below the
/// diagonal tile in the same launch as their solve ([`Tiled::fused_update`]), for a
/// block of `nt` column tiles. The fused form saves a pass over column `k` of every panel
/// but puts the diagonal tile's update (`K = 64 k`, one block) in front of the `potrf`
/// and the other rows' after it, on the level's critical path. Measured per level on the
/// H100 (`docs/perf-notes.md`, entry 46): at `nt <= 4` it pays from 8 nodes; at
/// `nt = 8` from 64 (32 nodes: +15 µs), at `nt = 16` from 64 (32 nodes: +84 µs, 8 nodes:
/// +212 µs). `BLOCKTRI_UPDATE_TRSM_NODES` overrides it (for measurements).
fn fused_update_nodes(nt: usize) -> u32 {
    let measured = if nt <= 4 { 8 } else { 64 };
    env_override("BLOCKTRI_UPDATE_TRSM_NODES").unwrap_or(measured)
}

/// Smallest block size whose column updates may run in [`Wide`] pairs of columns
/// ([`ColumnUpdate::Pair`]): the neighbour products' rule ([`wide_min_block`]), unless
/// `BLOCKTRI_WIDE_UPDATE` sets it (`off`: never; for measurements).
fn wide_update_min_block() -> usize {
    match std::env::var("BLOCKTRI_WIDE_UPDATE").as_deref() {
        Ok("off") => usize::MAX,
        Ok(v) => v.parse().unwrap_or_else(|_| wide_min_block(false)),
        Err(_) => wide_min_block(false),
    }
}

/// A product kernel with its launch shape: threads, shared memory and the rows of its
/// output tiles.
#[derive(Debug)]
struct ProductKernel {
    kernel: Kernel,
    threads: u32,
    shared_bytes: u32,
    rows: usize,
}

impl ProductKernel {
    /// Loads `name` (full kernel name), launched as the product shape `S`.
    fn load<T: blocktri_prims::Real, S: ProductShape<T>>(gpu: &Gpu, name: &str) -> Result<Self> {
        Ok(Self { kernel: gpu.kernel(name)?, threads: S::THREADS, shared_bytes: shape_kernel_shared_bytes::<T, S>() as u32, rows: S::ROWS })
    }
}

/// The `f64` column-update kernel: the `64 x 64` products (161 registers, three blocks per
/// multiprocessor), or with `BLOCKTRI_UPDATE_PRODUCT=tall` `128 x 64` tiles on 8 warps
/// within 128 registers (two blocks), for measurements (`docs/perf-notes.md`, entry 23).
fn f64_update(gpu: &Gpu) -> Result<ProductKernel> {
    let name = |n: &str| format!("{n}_f64");
    match std::env::var("BLOCKTRI_UPDATE_PRODUCT").as_deref() {
        Ok("tall") => ProductKernel::load::<f64, Tall>(gpu, &name(names::TILED_TALL_UPDATE)),
        _ => ProductKernel::load::<f64, Narrow<Native>>(gpu, &name(names::TILED_UPDATE)),
    }
}

/// The wide `f64` neighbour-product kernel: 8 warps of `64 x 32`, or with
/// `BLOCKTRI_WIDE_PRODUCT=16` 16 warps of `32 x 32` within 128 registers, for
/// measurements (`docs/perf-notes.md`, entry 23).
fn f64_wide_neighbours(gpu: &Gpu) -> Result<ProductKernel> {
    let name = |n: &str| format!("{n}_f64");
    match std::env::var("BLOCKTRI_WIDE_PRODUCT").as_deref() {
        Ok("16") => ProductKernel::load::<f64, Wide16>(gpu, &name(names::TILED_WIDE16_NEIGHBOURS)),
        _ => ProductKernel::load::<f64, Wide>(gpu, &name(names::TILED_WIDE_NEIGHBOURS)),
    }
}

/// The wide `f32` neighbour-product kernel of a TF32 choice: 8 warps of `64 x 32` on TF32
/// tensor cores (`docs/perf-notes.md`, entry 84).
fn f32_wide_neighbours(gpu: &Gpu, products: F32Products, suffix: &str) -> Result<ProductKernel> {
    let name = format!("{}_{suffix}", names::TILED_WIDE_NEIGHBOURS);
    match products {
        F32Products::Tf32 => ProductKernel::load::<f32, WideTf32>(gpu, &name),
        _ => ProductKernel::load::<f32, WideTf32x3>(gpu, &name),
    }
}

/// How the tiled solve runs its diagonal solves: [`walks_nodes`] per level, unless
/// `BLOCKTRI_TILED_SOLVE` forces one form everywhere (`node` or `steps`, for measurements:
/// `docs/perf-notes.md` entries 21 and 47) but on the levels with explicit inverses
/// (those too with `BLOCKTRI_INVERSE_SOLVES=off`). The walks run only where their shared memory
/// fits ([`node_walk_chunk`]).
#[derive(Clone, Copy, Debug)]
enum DiagSolveChoice {
    PerLevel,
    AlwaysNode,
    AlwaysSteps,
}

impl DiagSolveChoice {
    fn from_env() -> Self {
        match std::env::var("BLOCKTRI_TILED_SOLVE").as_deref() {
            Ok("node") => Self::AlwaysNode,
            Ok("steps") => Self::AlwaysSteps,
            _ => Self::PerLevel,
        }
    }
}

/// The kernels of the top levels' explicit inverses.
#[derive(Debug)]
struct InverseKernels {
    step: Kernel,
    forward: Kernel,
    backward: Kernel,
    copy: Kernel,
}

/// Device elements of the inverted diagonal tiles of a shape and, behind them, the top
/// levels' inverted diagonal blocks at leading dimension `ld` and the column look-ahead's
/// carried accumulators (`dinv`).
pub(super) fn dinv_len(batch: usize, nblocks: usize, n: usize, ld: usize) -> usize {
    carry_offset(batch, nblocks, n, ld) + 2 * carry_half(batch, nblocks, n)
}

/// Where the column look-ahead's carry area starts in `dinv`.
fn carry_offset(batch: usize, nblocks: usize, n: usize, ld: usize) -> usize {
    batch * nblocks * dinv_elems(n) + inverse_elems(batch, nblocks, n, ld)
}

/// Levels of more nodes (all systems) than this take no column look-ahead: they are the
/// crowded ones, whose column updates fill the GPU by themselves, and the carry area
/// grows with the nodes.
const LOOKAHEAD_MAX_NODES: usize = 63;

/// Elements of one half of the look-ahead's carry area (steps alternate halves, so that
/// the launch beside step `k` never writes what step `k`'s own update reads): every node
/// of the largest level that [`LOOKAHEAD_MAX_NODES`] admits, the slots of step 2 (the
/// largest grid that carries) on output tiles of 64 or 128 rows, whichever is larger.
fn carry_half(batch: usize, nblocks: usize, n: usize) -> usize {
    if tiles(n) < LOOKAHEAD_MIN_TILES {
        return 0;
    }
    let nodes = (0..levels(nblocks as u32))
        .map(|m| batch * nodes_in_level(nblocks as u32, m) as usize)
        .filter(|&nodes| nodes <= LOOKAHEAD_MAX_NODES)
        .max()
        .unwrap_or(0);
    nodes * carry_elems(n, 2, TILE).max(carry_elems(n, 2, 2 * TILE))
}

/// Fewest tiles per block for the look-ahead: with two, step 1's update has one finished
/// column and nothing to take ahead.
const LOOKAHEAD_MIN_TILES: usize = 3;

/// The tiled engine of one plan.
#[derive(Debug)]
pub(super) struct Tiled {
    prep: Kernel,
    /// `prep` from an `f64` matrix (`f32` plans; [`Buffers::rounding`]).
    prep_rounding: Option<Kernel>,
    potrf: Kernel,
    trsm: Kernel,
    update: ProductKernel,
    neighbours: Kernel,
    /// The neighbour products on `128 x 128` tiles (`f64`, where the device has the
    /// shared memory, `n >= `[`wide_min_block`]) and the fewest blocks a launch of them
    /// takes ([`wide_waves`] per SM).
    wide_neighbours: Option<(ProductKernel, u32)>,
    /// The column updates in [`Wide`] pairs of columns (`f64`, where the device has the
    /// shared memory, `n >=` [`wide_update_min_block`]) and the fewest blocks a level's
    /// first pair launch takes to use them ([`wide_waves`] per SM).
    wide_update: Option<(ProductKernel, u32)>,
    /// The column update split around the `potrf` (`update_diagonal` before it,
    /// `update_trsm` after it instead of `trsm`) on levels of at least the given number
    /// of nodes ([`fused_update_nodes`]); FP32 / FP64 products only.
    fused_update: Option<(Kernel, Kernel, u32)>,
    /// The diagonal solves: one block per node walking its tiles (`forward_node`,
    /// `backward_node`), or one launch per tile step (`forward_diag`, `backward_diag`).
    forward_node: Kernel,
    backward_node: Kernel,
    /// The diagonal solves with one block per tile row of each node (`forward_split`,
    /// `backward_split`) on the levels [`splits_walks`] picks, unless
    /// `BLOCKTRI_SPLIT_WALKS=off` (for measurements: `docs/perf-notes.md`, entry 87).
    split: Option<(Kernel, Kernel)>,
    forward_diag: Kernel,
    backward_diag: Kernel,
    diag_solve: DiagSolveChoice,
    /// Whether factor + solve runs each level's forward sweep beside the factorization
    /// (`factor_solve_steps`); `BLOCKTRI_FORWARD_BESIDE=off`, for measurements, runs the
    /// factorization, then the solve (`docs/perf-notes.md`, entry 49).
    forward_beside: bool,
    /// The neighbour products' sides per level ([`neighbour_sides`]): both in one launch,
    /// or `BLOCKTRI_NEIGHBOURS=split`, for measurements, one launch per side.
    neighbour_sides: &'static [u32],
    forward_couple: Kernel,
    /// The forward couplings' sides per level ([`couple_sides`]): both in one launch, or
    /// `BLOCKTRI_COUPLE=split`, for measurements, one launch per side (entry 87).
    couple_sides: &'static [u32],
    backward_couple: Kernel,
    /// The top levels' explicit inverses ([`inverts_level`]): `inverse_step` in the
    /// factorization, then `forward_inverse`, `backward_inverse` and `inverse_copy` in the
    /// solves (`docs/perf-notes.md`, entry 98).
    inverse: InverseKernels,
    /// Whether the solves use those inverses; `BLOCKTRI_INVERSE_SOLVES=off`, for
    /// measurements and the sanitizer runs, solves those levels as before (the
    /// factorization still forms the inverses).
    inverse_solves: bool,
    /// Whether the levels on plain column updates (neither fused nor paired: the top
    /// levels) take the products of the columns before `k - 1` off step `k`'s chain, on
    /// the [`Lane::Ahead`] stream beside step `k - 1`; `BLOCKTRI_LOOKAHEAD=off`, for
    /// measurements, updates each column in one launch, with the same bits
    /// (`docs/perf-notes.md`, entries 99 and 100).
    lookahead: bool,
    /// SMs of the device (the forward coupling's block width depends on the grid).
    multiprocessors: u32,
    /// Shared memory a block may use (the node walks' depends on `n`).
    max_shared: usize,
}

impl Tiled {
    /// Loads the tiled kernels for `T` (the product kernels of `products` for `f32`); an
    /// error when `n` exceeds what they launch.
    pub(super) fn new<T: Scalar>(gpu: &Gpu, n: usize, products: F32Products) -> Result<Self> {
        let smem = gpu.info().max_shared_per_block;
        let max = max_tiled_block(smem, T::BYTES);
        if n > max {
            return Err(Error::Unsupported(format!(
                "the tiled kernels support n <= {max} for {} on this device, got n = {n}",
                T::PRECISION
            )));
        }
        let k = |name: &str| gpu.kernel(kernel_name::<T>(name).as_str());
        // The product kernels: `tiled_trsm_tf32` etc. for the TF32 choices (f32 only; the
        // executor checks the precision before).
        let product = |name: &str| match products.kernel_suffix() {
            Some(suffix) if T::BYTES == 4 => gpu.kernel(&format!("{name}_{suffix}")),
            _ => k(name),
        };
        let is_f64 = T::BYTES == 8;
        let update = if is_f64 {
            f64_update(gpu)?
        } else {
            let (threads, shared_bytes) = (PRODUCT_THREADS, product_kernel_shared_bytes(T::BYTES) as u32);
            ProductKernel { kernel: product(names::TILED_UPDATE)?, threads, shared_bytes, rows: TILE }
        };
        // The wide neighbour products: FP64 tensor cores, or for `f32` the TF32 choices (the
        // FP32 FMA products have no wide form).
        let wide_kernel = match products.kernel_suffix() {
            _ if is_f64 => (n >= wide_min_block(false)).then(|| f64_wide_neighbours(gpu)).transpose()?,
            Some(suffix) if n >= wide_min_block(true) => Some(f32_wide_neighbours(gpu, products, suffix)?),
            _ => None,
        };
        let wide =
            wide_kernel.and_then(|kernel| (kernel.shared_bytes <= smem).then(|| (kernel, wide_waves() * gpu.info().multiprocessors)));
        let wide_update = if is_f64 && n >= wide_update_min_block() {
            let kernel = ProductKernel::load::<f64, Wide>(gpu, &format!("{}_f64", names::TILED_WIDE_UPDATE))?;
            (kernel.shared_bytes <= smem).then(|| (kernel, wide_waves() * gpu.info().multiprocessors))
        } else {
            None
        };
        let fused_update = if is_f64 || products.kernel_suffix().is_none() {
            Some((k(names::TILED_UPDATE_DIAGONAL)?, k(names::TILED_UPDATE_TRSM)?, fused_update_nodes(tiles(n))))
        } else {
            None
        };
        Ok(Tiled {
            prep: k(names::TILED_PREP)?,
            prep_rounding: if is_f64 { None } else { Some(gpu.kernel(&format!("{}_f32", names::TILED_PREP_ROUNDING))?) },
            potrf: k(names::TILED_POTRF)?,
            trsm: product(names::TILED_TRSM)?,
            update,
            neighbours: product(names::TILED_NEIGHBOURS)?,
            wide_neighbours: wide,
            wide_update,
            fused_update,
            forward_node: k(names::TILED_FORWARD_NODE)?,
            backward_node: k(names::TILED_BACKWARD_NODE)?,
            split: match std::env::var("BLOCKTRI_SPLIT_WALKS").as_deref() {
                Ok("off") => None,
                _ => Some((k(names::TILED_FORWARD_SPLIT)?, k(names::TILED_BACKWARD_SPLIT)?)),
            },
            forward_diag: k(names::TILED_FORWARD_DIAG)?,
            backward_diag: k(names::TILED_BACKWARD_DIAG)?,
            diag_solve: DiagSolveChoice::from_env(),
            forward_beside: std::env::var("BLOCKTRI_FORWARD_BESIDE").as_deref() != Ok("off"),
            neighbour_sides: neighbour_sides(std::env::var("BLOCKTRI_NEIGHBOURS").as_deref() == Ok("split")),
            forward_couple: k(names::TILED_FORWARD_COUPLE)?,
            couple_sides: couple_sides(std::env::var("BLOCKTRI_COUPLE").as_deref() == Ok("split")),
            backward_couple: k(names::TILED_BACKWARD_COUPLE)?,
            inverse: InverseKernels {
                step: k(names::TILED_INVERSE_STEP)?,
                forward: k(names::TILED_FORWARD_INVERSE)?,
                backward: k(names::TILED_BACKWARD_INVERSE)?,
                copy: k(names::TILED_INVERSE_COPY)?,
            },
            inverse_solves: std::env::var("BLOCKTRI_INVERSE_SOLVES").as_deref() != Ok("off"),
            lookahead: std::env::var("BLOCKTRI_LOOKAHEAD").as_deref() != Ok("off"),
            multiprocessors: gpu.info().multiprocessors,
            max_shared: smem as usize,
        })
    }

    /// Right-hand-side columns per pass: at most `k` and [`MAX_CHUNK`].
    fn chunk(k: usize) -> usize {
        k.clamp(1, MAX_CHUNK)
    }

    fn args<T: Scalar>(b: &Buffers<T>, level: u32, step: u32, side: u32, target: Option<(&SolveTarget<T>, usize)>) -> TiledArgs<T> {
        Self::args_from(b, level, step, side, 0, target)
    }

    /// [`Self::args`] with the first finished column of a column update.
    fn args_from<T: Scalar>(
        b: &Buffers<T>,
        level: u32,
        step: u32,
        side: u32,
        from_col: u32,
        target: Option<(&SolveTarget<T>, usize)>,
    ) -> TiledArgs<T> {
        TiledArgs {
            diag_in: b.diag_in.ptr().as_ptr(),
            sub: b.sub_in.ptr().as_ptr(),
            diag: b.diag.ptr().as_mut_ptr(),
            left: b.left.ptr().as_mut_ptr(),
            right: b.right.ptr().as_mut_ptr(),
            dinv: b.dinv.as_ref().map_or(std::ptr::null_mut(), |d| d.ptr().as_mut_ptr()),
            info: target.map_or(b.info.ptr().as_mut_ptr(), |(t, _)| t.info),
            rhs: target.map_or(std::ptr::null_mut(), |(t, _)| t.rhs),
            flags: std::ptr::null_mut(),
            scratch: target.map_or(std::ptr::null_mut(), |(t, _)| t.scratch),
            sym_tol: T::symmetry_tolerance(),
            ld: b.ld as u32,
            n: b.shape.block as u32,
            nblocks: b.shape.nblocks as u32,
            systems: b.shape.batch as u32,
            level,
            step,
            side,
            from_col,
            to_col: 0,
            carry: 0,
            nrhs: target.map_or(0, |(t, _)| t.k as u32),
            chunk: target.map_or(0, |(_, c)| c as u32),
        }
    }

    pub(super) fn factor_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>) -> Vec<Step<'k, T>> {
        self.factor_steps_with(b, |_, _| {})
    }

    /// The factorization's steps with `after_columns(level, steps)` called where a level's
    /// panels are factored (before its neighbour updates).
    fn factor_steps_with<'k, T: Scalar>(
        &'k self,
        b: &Buffers<T>,
        mut after_columns: impl FnMut(u32, &mut Vec<Step<'k, T>>),
    ) -> Vec<Step<'k, T>> {
        let shape = b.shape;
        let (n, nb, s) = (shape.block, shape.nblocks as u32, shape.batch as u32);
        let nt = tiles(n);
        let product_smem = product_kernel_shared_bytes(T::BYTES) as u32;
        let launch_from = |kernel, level, grid: (u32, u32), threads, smem, step, side, from_col| Step::Launch {
            kernel,
            level,
            cfg: LaunchConfig { grid: (grid.0, grid.1, 1), block: (threads, 1, 1), shared_bytes: smem },
            args: Args::Tiled(Self::args_from(b, level, step, side, from_col, None)),
        };
        let launch = |kernel, level, grid, threads, smem, step, side| launch_from(kernel, level, grid, threads, smem, step, side, 0);
        let prep = match (b.rounding, &self.prep_rounding) {
            // The f32 plan of a mixed-precision solver: `prep` rounds the f64 matrix.
            (Some(from), Some(kernel)) => Step::Launch {
                kernel,
                level: 0,
                cfg: LaunchConfig { grid: (s * nb, nt as u32, 1), block: (WIDE_THREADS, 1, 1), shared_bytes: prep_shared_bytes(8) as u32 },
                args: Args::TiledRounding(
                    Self::args(b, 0, 0, 0, None),
                    RoundingInput { diag: from.diag as *const f64, sub: from.sub as *const f64, ld: from.ld as u32 },
                ),
            },
            _ => launch(&self.prep, 0, (s * nb, nt as u32), WIDE_THREADS, prep_shared_bytes(T::BYTES) as u32, 0, 0),
        };
        let mut steps = vec![Step::ResetStatus { addr: b.info.ptr().addr(), systems: shape.batch }, prep];
        let top = levels(nb);
        let mut inverses = false;
        // The look-ahead's carry slots of step j (halves by parity; sized for every level).
        let carry_base = b.dinv.as_ref().map_or(std::ptr::null_mut(), |d| d.ptr().as_mut_ptr());
        let carry_base = carry_base.wrapping_add(carry_offset(shape.batch, shape.nblocks, n, b.ld));
        let half = carry_half(shape.batch, shape.nblocks, n);
        let carry_at = |j: usize| carry_base.wrapping_add((j % 2) * half);
        for m in 0..top {
            let nodes = s * nodes_in_level(nb, m);
            // Pairs where the level's first pair launch fills the GPU.
            let pairs = self
                .wide_update
                .as_ref()
                .filter(|(w, min_blocks)| nt > FIRST_PAIR && nodes * panel_blocks(n, FIRST_PAIR, w.rows / TILE) >= *min_blocks);
            let fused = self.fused_update.as_ref().filter(|(_, _, min_nodes)| nodes >= *min_nodes);
            let trsm_blocks = |k: usize| (nodes * panel_blocks(n, k + 1, 1), 1);
            let inverts = inverts_level(n, nb, m);
            inverses |= inverts;
            // The look-ahead: where column k's update is one plain launch, the products of
            // the columns before k - 1 run beside step k - 1 (those columns are final once
            // its `trsm` of column k - 2 is done) and keep their accumulators in the carry
            // area; step k continues them over column k - 1 and subtracts the sum: the
            // same bits (one accumulator chain per entry), and a chain of a `K = 64` update,
            // the `potrf` and the `trsm` instead of a `K = 64 k` update first.
            let ahead =
                self.lookahead && fused.is_none() && pairs.is_none() && nt >= LOOKAHEAD_MIN_TILES && nodes as usize <= LOOKAHEAD_MAX_NODES;
            let u = &self.update;
            let update_blocks = |k: usize| (nodes * panel_blocks(n, k, u.rows / TILE), 1);
            for k in 0..nt {
                let step = k as u32;
                let mut update = column_update(k, nt, pairs.map(|_| FIRST_PAIR));
                let mut carried = false;
                if ahead && k >= 1 {
                    if k >= 2 {
                        // Column k's products of the columns before k - 1, forked at step
                        // k - 1, continued over column k - 1 below.
                        steps.push(Step::Join(Lane::Ahead));
                        update = ColumnUpdate::Narrow { from_col: k - 1 };
                        carried = true;
                    }
                    if k + 1 < nt {
                        // Column k + 1's products of the columns before k (final: the trsm
                        // of column k - 1 is enqueued above), beside step k.
                        let mut ahead = launch_from(&u.kernel, m, update_blocks(k + 1), u.threads, u.shared_bytes, step + 1, 0, 0);
                        if let Step::Launch { args: Args::Tiled(x), .. } = &mut ahead {
                            (x.to_col, x.carry, x.scratch) = (step, CARRY_OUT, carry_at(k + 1));
                        }
                        steps.push(Step::Fork(Lane::Ahead));
                        steps.push(Step::Side(Lane::Ahead, Box::new(ahead)));
                    }
                }
                // Before the potrf: the pair, the column's update, or (fused) its diagonal
                // tile's; `(kernel, grid, threads, shared bytes, first finished column)`.
                let before = match update {
                    ColumnUpdate::None => None,
                    // (A pair only where `pairs` holds the wide kernel.)
                    ColumnUpdate::Pair => {
                        pairs.map(|(w, _)| (&w.kernel, (nodes * panel_blocks(n, k, w.rows / TILE), 1), w.threads, w.shared_bytes, 0))
                    }
                    ColumnUpdate::Narrow { from_col } => Some(match fused {
                        Some((diagonal, _, _)) => (diagonal, (nodes, 1), PRODUCT_THREADS, product_smem, from_col as u32),
                        None => (&u.kernel, update_blocks(k), u.threads, u.shared_bytes, from_col as u32),
                    }),
                };
                if let Some((kernel, grid, threads, smem, from_col)) = before {
                    let mut update = launch_from(kernel, m, grid, threads, smem, step, 0, from_col);
                    if let (true, Step::Launch { args: Args::Tiled(x), .. }) = (carried, &mut update) {
                        (x.carry, x.scratch) = (CARRY_IN, carry_at(k));
                    }
                    steps.push(update);
                }
                steps.push(launch(&self.potrf, m, (nodes, 1), WIDE_THREADS, potrf_shared_bytes(T::BYTES) as u32, step, 0));
                if inverts {
                    // Column tile k of the inverses needs row tile k of `L_ii`, final from
                    // here: beside the rest of the factorization, which never writes it.
                    steps.push(Step::Fork(Lane::Side));
                    let inverse = launch(&self.inverse.step, m, (nodes * (step + 1), 1), PRODUCT_THREADS, product_smem, step, 0);
                    steps.push(Step::Side(Lane::Side, Box::new(inverse)));
                }
                steps.push(match (update, fused) {
                    (ColumnUpdate::Narrow { from_col }, Some((_, update_trsm, _))) => {
                        launch_from(update_trsm, m, trsm_blocks(k), PRODUCT_THREADS, product_smem, step, 0, from_col as u32)
                    }
                    _ => launch(&self.trsm, m, trsm_blocks(k), PRODUCT_THREADS, product_smem, step, 0),
                });
            }
            after_columns(m, &mut steps);
            if m + 1 < top {
                for &side in self.neighbour_sides {
                    let wide_blocks = |wide: &ProductKernel| nodes * neighbour_blocks(n, wide.rows, side);
                    steps.push(match &self.wide_neighbours {
                        Some((wide, min_blocks)) if wide_blocks(wide) >= *min_blocks => {
                            launch(&wide.kernel, m, (wide_blocks(wide), 1), wide.threads, wide.shared_bytes, 0, side)
                        }
                        _ => launch(
                            &self.neighbours,
                            m,
                            (nodes * neighbour_blocks(n, TILE, side), 1),
                            PRODUCT_THREADS,
                            product_smem,
                            0,
                            side,
                        ),
                    });
                }
            }
        }
        if inverses {
            steps.push(Step::Join(Lane::Side));
        }
        steps
    }

    /// Whether a level of `level_nodes` nodes (all systems) runs its diagonal solves as one
    /// block per node walking its tiles (where the walk fits in shared memory).
    fn walks_nodes(&self, n: usize, level_nodes: u32) -> bool {
        match self.diag_solve {
            DiagSolveChoice::PerLevel => walks_nodes(n, level_nodes, self.multiprocessors),
            DiagSolveChoice::AlwaysNode => true,
            DiagSolveChoice::AlwaysSteps => false,
        }
    }

    pub(super) fn solve_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>) -> Vec<Step<'k, T>> {
        let sweeps = SweepLaunches::new(self, b, target);
        let mut steps = sweeps.reset();
        steps.extend(sweeps.sweep(Sweep::Forward));
        steps.extend(sweeps.sweep(Sweep::Backward));
        steps
    }

    /// One sweep of the solve (each starts with a reset of the status words).
    pub(super) fn sweep_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>, sweep: Sweep) -> Vec<Step<'k, T>> {
        let sweeps = SweepLaunches::new(self, b, target);
        let mut steps = sweeps.reset();
        steps.extend(sweeps.sweep(sweep));
        steps
    }

    /// A factorization and a solve: the forward sweep of each level runs on a side stream
    /// once the level's panels are factored, beside the factorization of the levels above
    /// (it reads only the level's finished factor blocks and writes only the right-hand
    /// sides, which the factorization never touches); the backward sweep after both.
    /// Without [`Tiled::forward_beside`] one after the other.
    pub(super) fn factor_solve_steps<'k, T: Scalar>(&'k self, b: &Buffers<T>, target: &SolveTarget<T>) -> Vec<Step<'k, T>> {
        if !self.forward_beside {
            let mut steps = self.factor_steps(b);
            steps.extend(self.solve_steps(b, target));
            return steps;
        }
        let sweeps = SweepLaunches::new(self, b, target);
        let mut steps = sweeps.reset();
        steps.extend(self.factor_steps_with(b, |m, steps| {
            steps.push(Step::Fork(Lane::Side));
            steps.extend(sweeps.forward_level(m).into_iter().map(|s| Step::Side(Lane::Side, Box::new(s))));
        }));
        steps.push(Step::Join(Lane::Side));
        steps.extend(sweeps.sweep(Sweep::Backward));
        steps
    }
}

/// The launches of the solve's sweeps for one plan and right-hand-side target.
struct SweepLaunches<'k, 'b, T> {
    tiled: &'k Tiled,
    bufs: &'b Buffers<T>,
    target: &'b SolveTarget<T>,
    /// Right-hand-side columns per pass of the per-step kernels.
    chunk: usize,
    /// Columns per pass of the node walks (they keep the node's rows of them in shared
    /// memory); 0 where not even one fits.
    walk: usize,
    /// Columns per pass of the split walks; 0 where not even one fits or they are off.
    split: usize,
    /// Columns per pass of the inverse solves; 0 where not even one fits.
    inverse: usize,
}

impl<'k, 'b, T: Scalar> SweepLaunches<'k, 'b, T> {
    fn new(tiled: &'k Tiled, bufs: &'b Buffers<T>, target: &'b SolveTarget<T>) -> Self {
        let chunk = Tiled::chunk(target.k);
        let walk = node_walk_chunk(bufs.shape.block, chunk, T::BYTES, tiled.max_shared);
        let split = tiled.split.as_ref().map_or(0, |_| split_walk_chunk(bufs.shape.block, chunk, T::BYTES, tiled.max_shared));
        let inverse = inverse_solve_chunk(chunk, T::BYTES, tiled.max_shared);
        SweepLaunches { tiled, bufs, target, chunk, walk, split, inverse }
    }

    /// Sets the solve's status words, and clears the split walks' flags of both sweeps
    /// where a level runs them.
    fn reset(&self) -> Vec<Step<'k, T>> {
        let shape = self.bufs.shape;
        let mut steps = vec![Step::ResetStatus { addr: self.target.info as u64, systems: shape.batch }];
        if (0..levels(shape.nblocks as u32)).any(|m| self.splits(m)) {
            let words = 2 * split_flag_words(shape.batch, shape.nblocks, shape.block);
            steps.push(Step::ClearFlags { addr: self.target.flags as u64, words });
        }
        steps
    }

    /// The launches of one sweep over every level: upward for the forward sweep, downward
    /// for the backward one.
    fn sweep(&self, sweep: Sweep) -> Vec<Step<'k, T>> {
        let top = levels(self.bufs.shape.nblocks as u32);
        match sweep {
            Sweep::Forward => (0..top).flat_map(|m| self.forward_level(m)).collect(),
            Sweep::Backward => (0..top).rev().flat_map(|m| self.backward_level(m)).collect(),
        }
    }

    /// Whether `level`'s diagonal solves are split walks.
    fn splits(&self, level: u32) -> bool {
        self.split > 0 && splits_walks(self.bufs.shape.block, self.nodes(level), self.tiled.multiprocessors)
    }

    /// A split walk over `level` (one block per tile row of each node), with the flags of
    /// `sweep` (the forward sweep's words first, then the backward sweep's).
    fn split_launch(&self, kernel: &'k Kernel, level: u32, sweep: Sweep) -> Step<'k, T> {
        let shape = self.bufs.shape;
        let smem = split_walk_shared_bytes(shape.block, self.split, T::BYTES) as u32;
        let sweep_words = if sweep == Sweep::Forward { 0 } else { split_flag_words(shape.batch, shape.nblocks, shape.block) };
        let offset = sweep_words + split_flag_offset(shape.batch, shape.nblocks, shape.block, level);
        let args = TiledArgs { flags: self.target.flags.wrapping_add(offset), ..self.args(level, 0, 0, self.split) };
        self.launch(kernel, level, self.tiles(), SOLVE_THREADS, smem, args)
    }

    /// Nodes of `level`, all systems.
    fn nodes(&self, level: u32) -> u32 {
        self.bufs.shape.batch as u32 * nodes_in_level(self.bufs.shape.nblocks as u32, level)
    }

    /// The solve kernels' arguments for `level`, `step` and `side` on `chunk`
    /// right-hand-side columns per pass.
    fn args(&self, level: u32, step: u32, side: u32, chunk: usize) -> TiledArgs<T> {
        Tiled::args(self.bufs, level, step, side, Some((self.target, chunk)))
    }

    /// A launch of `per_node` blocks per node of `level` (tiles fastest).
    fn launch(&self, kernel: &'k Kernel, level: u32, per_node: u32, threads: u32, smem: u32, args: TiledArgs<T>) -> Step<'k, T> {
        Step::Launch {
            kernel,
            level,
            cfg: LaunchConfig { grid: (self.nodes(level) * per_node, 1, 1), block: (threads, 1, 1), shared_bytes: smem },
            args: Args::Tiled(args),
        }
    }

    /// The per-step kernels' launch (`SOLVE_THREADS`, `chunk` columns per pass).
    fn step_launch(&self, kernel: &'k Kernel, level: u32, per_node: u32, smem: u32, step: u32, side: u32) -> Step<'k, T> {
        self.launch(kernel, level, per_node, SOLVE_THREADS, smem, self.args(level, step, side, self.chunk))
    }

    /// A node walk over `level` (one block per node).
    fn walk_launch(&self, kernel: &'k Kernel, level: u32) -> Step<'k, T> {
        let smem = node_walk_shared_bytes(self.bufs.shape.block, self.walk, T::BYTES) as u32;
        self.launch(kernel, level, 1, SOLVE_THREADS, smem, self.args(level, 0, 0, self.walk))
    }

    /// Whether `level`'s diagonal solves are products with its nodes' explicit inverses
    /// (where a pass of at least one column fits in shared memory).
    fn inverts(&self, level: u32) -> bool {
        let shape = self.bufs.shape;
        self.tiled.inverse_solves && self.inverse > 0 && inverts_level(shape.block, shape.nblocks as u32, level)
    }

    /// The diagonal solves of an inverting `level` by `product` (`forward_inverse`, or
    /// with `backward` `backward_inverse`) as partial sums in the scratch area, then
    /// `inverse_copy` into the right-hand sides, pass by pass of [`Self::inverse`] columns.
    fn inverse_launches(&self, product: &'k Kernel, level: u32, backward: bool) -> Vec<Step<'k, T>> {
        let smem = inverse_solve_shared_bytes(self.inverse, T::BYTES) as u32;
        let (copy, parts) = (&self.tiled.inverse.copy, inverse_parts(self.bufs.shape.block) as u32);
        (0..self.target.k.div_ceil(self.inverse) as u32)
            .flat_map(|pass| {
                let args = self.args(level, pass, backward as u32, self.inverse);
                [
                    self.launch(product, level, self.tiles() * parts, SOLVE_THREADS, smem, args),
                    self.launch(copy, level, self.tiles(), SOLVE_THREADS, 0, args),
                ]
            })
            .collect()
    }

    /// Whether `level`'s diagonal solves are node walks.
    fn walks(&self, level: u32) -> bool {
        self.walk > 0 && self.tiled.walks_nodes(self.bufs.shape.block, self.nodes(level))
    }

    fn tiles(&self) -> u32 {
        tiles(self.bufs.shape.block) as u32
    }

    fn is_top(&self, level: u32) -> bool {
        level + 1 == levels(self.bufs.shape.nblocks as u32)
    }

    /// The forward sweep of `level`: the diagonal solves, then (below the top) the
    /// couplings into both neighbours.
    fn forward_level(&self, m: u32) -> Vec<Step<'k, T>> {
        let (t, nt) = (self.tiled, self.tiles());
        let diag_smem = diag_solve_shared_bytes(T::BYTES) as u32;
        let mut steps = match (&t.split, self.walks(m)) {
            _ if self.inverts(m) => self.inverse_launches(&t.inverse.forward, m, false),
            (Some((forward, _)), _) if self.splits(m) => vec![self.split_launch(forward, m, Sweep::Forward)],
            (_, true) => vec![self.walk_launch(&t.forward_node, m)],
            (_, false) => (0..nt).map(|k| self.step_launch(&t.forward_diag, m, nt - k, diag_smem, k, 0)).collect(),
        };
        if !self.is_top(m) {
            let threads = couple_threads(self.nodes(m) * nt, t.multiprocessors);
            let smem = couple_shared_bytes(T::BYTES) as u32;
            steps.extend(
                t.couple_sides.iter().map(|&side| self.launch(&t.forward_couple, m, nt, threads, smem, self.args(m, 0, side, self.chunk))),
            );
        }
        steps
    }

    /// The backward sweep of `level`: (below the top) the couplings from both neighbours,
    /// then the diagonal solves.
    fn backward_level(&self, m: u32) -> Vec<Step<'k, T>> {
        let (t, nt) = (self.tiled, self.tiles());
        let mut steps = Vec::new();
        if !self.is_top(m) {
            steps.push(self.step_launch(&t.backward_couple, m, nt * BACKWARD_ROW_GROUPS, 0, 0, 0));
        }
        match (&t.split, self.walks(m)) {
            _ if self.inverts(m) => steps.extend(self.inverse_launches(&t.inverse.backward, m, true)),
            (Some((_, backward)), _) if self.splits(m) => steps.push(self.split_launch(backward, m, Sweep::Backward)),
            (_, true) => steps.push(self.walk_launch(&t.backward_node, m)),
            (_, false) => {
                let diag_smem = diag_solve_shared_bytes(T::BYTES) as u32;
                steps.extend((0..nt).rev().map(|k| self.step_launch(&t.backward_diag, m, k + 1, diag_smem, k, 0)));
            }
        }
        steps
    }
}
