//! Kernel entry points: one `extern "ptx-kernel"` function per kernel and precision,
//! named `<kernel>_f32` / `<kernel>_f64` (see [`kernel_name`]). They only exist when
//! compiling for nvptx64; each forwards its by-value argument struct to the generic body.
//! Each starts with [`blocktri_prims::sync::kernel_prologue`], so that the host may launch
//! it before the previous kernel of its stream has finished (programmatic dependent
//! launch on sm_90: the launch overlaps the previous kernel's tail, and the wait orders
//! every memory access after it).

use blocktri_prims::Real;

/// The exported name of `kernel` for element type `T`, e.g. `factor_level_f64`.
pub fn kernel_name<T: Real>(kernel: &str) -> KernelName {
    let mut name = KernelName { buf: [0; 48], len: 0 };
    for part in [kernel.as_bytes(), b"_", T::NAME.as_bytes()] {
        for &byte in part {
            if name.len < name.buf.len() {
                name.buf[name.len] = byte;
                name.len += 1;
            }
        }
    }
    name
}

/// A kernel name without allocation (`no_std`).
#[derive(Clone, Copy, Debug)]
pub struct KernelName {
    buf: [u8; 48],
    len: usize,
}

impl KernelName {
    /// The name.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

/// Base names of the kernels (without the `_f32`/`_f64` suffix).
pub mod names {
    /// [`crate::level::factor_prep`].
    pub const FACTOR_PREP: &str = "factor_prep";
    /// [`crate::level::factor_level`].
    pub const FACTOR_LEVEL: &str = "factor_level";
    /// [`crate::level::factor_rows`]; the padded size follows: `factor_rows16_f64`.
    pub const FACTOR_ROWS: &str = "factor_rows";
    /// [`crate::level::solve_forward_rows`] (`solve_forward_rows16_f64`).
    pub const SOLVE_FORWARD_ROWS: &str = "solve_forward_rows";
    /// [`crate::level::solve_backward_rows`] (`solve_backward_rows16_f64`).
    pub const SOLVE_BACKWARD_ROWS: &str = "solve_backward_rows";
    /// [`crate::level::solve_backward_subtree_rows`] (`solve_backward_subtree_rows8_f64`;
    /// padded sizes 4 and 8: at 16 the per-level launches were as fast, `docs/perf-notes.md`
    /// entry 71).
    pub const SOLVE_BACKWARD_SUBTREE_ROWS: &str = "solve_backward_subtree_rows";
    /// [`crate::level::solve_forward_rows_warps`], a warp per node (padded size 16:
    /// `solve_forward_warps16_f64`).
    pub const SOLVE_FORWARD_WARPS: &str = "solve_forward_warps";
    /// [`crate::level::solve_backward_rows_warps`], a warp per node (padded size 16:
    /// `solve_backward_warps16_f64`).
    pub const SOLVE_BACKWARD_WARPS: &str = "solve_backward_warps";
    /// [`crate::level::solve_rows_block`], one thread block per system for short chains
    /// (padded sizes 4 and 8: `solve_rows_block8_f64`; at 16 it was slower than the single
    /// launch, `docs/perf-notes.md` entry 106).
    pub const SOLVE_ROWS_BLOCK: &str = "solve_rows_block";
    /// [`crate::level::factor_rows_dataflow`] (`factor_rows_dataflow16_f64`).
    pub const FACTOR_ROWS_DATAFLOW: &str = "factor_rows_dataflow";
    /// [`crate::level::factor_solve_rows`] (`factor_solve_rows16_f64`).
    pub const FACTOR_SOLVE_ROWS: &str = "factor_solve_rows";
    /// [`crate::level::factor_solve_rows_dataflow`] (`factor_solve_rows_dataflow16_f64`).
    pub const FACTOR_SOLVE_ROWS_DATAFLOW: &str = "factor_solve_rows_dataflow";
    /// [`crate::level::solve_rows_dataflow`] (`solve_rows_dataflow16_f64`).
    pub const SOLVE_ROWS_DATAFLOW: &str = "solve_rows_dataflow";
    /// [`crate::level::factor_panel`]; the padded size follows: `factor_panel64_f64`.
    pub const FACTOR_PANEL: &str = "factor_panel";
    /// [`crate::level::factor_blocked`]; the padded size follows: `factor_blocked64_f64`.
    pub const FACTOR_BLOCKED: &str = "factor_blocked";
    /// [`crate::level::factor_solve_blocked`] (`factor_solve_blocked64_f64`).
    pub const FACTOR_SOLVE_BLOCKED: &str = "factor_solve_blocked";
    /// [`crate::level::solve_forward_panel`] (`solve_forward_panel64_f64`).
    pub const SOLVE_FORWARD_PANEL: &str = "solve_forward_panel";
    /// [`crate::level::solve_backward_panel`] (`solve_backward_panel64_f64`).
    pub const SOLVE_BACKWARD_PANEL: &str = "solve_backward_panel";
    /// [`crate::level::factor_panel_dataflow`] (`factor_panel_dataflow64_f64`).
    pub const FACTOR_PANEL_DATAFLOW: &str = "factor_panel_dataflow";
    /// [`crate::level::factor_blocked_dataflow`] (`factor_blocked_dataflow64_f64`).
    pub const FACTOR_BLOCKED_DATAFLOW: &str = "factor_blocked_dataflow";
    /// [`crate::level::factor_solve_blocked_dataflow`] (`factor_solve_blocked_dataflow64_f64`).
    pub const FACTOR_SOLVE_BLOCKED_DATAFLOW: &str = "factor_solve_blocked_dataflow";
    /// [`crate::level::solve_panel_dataflow`] (`solve_panel_dataflow64_f64`).
    pub const SOLVE_PANEL_DATAFLOW: &str = "solve_panel_dataflow";
    /// [`crate::level::columns::solve_forward_panel_columns`] (`solve_forward_panel_columns64_f64`).
    pub const SOLVE_FORWARD_PANEL_COLUMNS: &str = "solve_forward_panel_columns";
    /// [`crate::level::columns::solve_backward_panel_columns`] (`solve_backward_panel_columns64_f64`).
    pub const SOLVE_BACKWARD_PANEL_COLUMNS: &str = "solve_backward_panel_columns";
    /// [`crate::level::columns::solve_forward_panel_columns_staged`] (`solve_forward_panel_columns_staged64_f64`).
    pub const SOLVE_FORWARD_PANEL_COLUMNS_STAGED: &str = "solve_forward_panel_columns_staged";
    /// [`crate::level::columns::solve_backward_panel_columns_staged`] (`solve_backward_panel_columns_staged64_f64`).
    pub const SOLVE_BACKWARD_PANEL_COLUMNS_STAGED: &str = "solve_backward_panel_columns_staged";
    /// [`crate::level::solve_panel_columns_dataflow`] (`solve_panel_columns_dataflow64_f64`).
    pub const SOLVE_PANEL_COLUMNS_DATAFLOW: &str = "solve_panel_columns_dataflow";
    /// [`crate::chain::factor_chain`].
    pub const FACTOR_CHAIN: &str = "factor_chain";
    /// [`crate::chain::solve_forward_chain`].
    pub const SOLVE_FORWARD_CHAIN: &str = "solve_forward_chain";
    /// [`crate::chain::solve_backward_chain`].
    pub const SOLVE_BACKWARD_CHAIN: &str = "solve_backward_chain";
    /// [`crate::chain::factor_chain_strips`]; the padded size follows: `factor_chain_strips64_f64`.
    pub const FACTOR_CHAIN_STRIPS: &str = "factor_chain_strips";
    /// [`crate::chain::solve_forward_chain_inverse`].
    pub const SOLVE_FORWARD_CHAIN_INVERSE: &str = "solve_forward_chain_inverse";
    /// [`crate::chain::solve_backward_chain_inverse`].
    pub const SOLVE_BACKWARD_CHAIN_INVERSE: &str = "solve_backward_chain_inverse";
    /// [`crate::chain::factor_chain_rows`]; the padded size follows: `factor_chain_rows16_f64`.
    pub const FACTOR_CHAIN_ROWS: &str = "factor_chain_rows";
    /// [`crate::chain::factor_chain_rows`] with the interlaced forward substitution
    /// (`factor_solve_chain_rows16_f64`).
    pub const FACTOR_SOLVE_CHAIN_ROWS: &str = "factor_solve_chain_rows";
    /// [`crate::chain::solve_forward_chain_rows`] (`solve_forward_chain_rows16_f64`).
    pub const SOLVE_FORWARD_CHAIN_ROWS: &str = "solve_forward_chain_rows";
    /// [`crate::chain::solve_backward_chain_rows`] (`solve_backward_chain_rows16_f64`).
    pub const SOLVE_BACKWARD_CHAIN_ROWS: &str = "solve_backward_chain_rows";
    /// [`crate::selinv::selinv_chain`].
    pub const SELINV_CHAIN: &str = "selinv_chain";
    /// [`crate::selinv::selinv_chain_staged`].
    pub const SELINV_CHAIN_STAGED: &str = "selinv_chain_staged";
    /// [`crate::level::solve_forward_level`].
    pub const SOLVE_FORWARD: &str = "solve_forward";
    /// [`crate::level::solve_backward_level`].
    pub const SOLVE_BACKWARD: &str = "solve_backward";
    /// [`crate::arrow::border_columns`].
    pub const ARROW_BORDER_COLUMNS: &str = "arrow_border_columns";
    /// [`crate::arrow::border_products`].
    pub const ARROW_BORDER_PRODUCTS: &str = "arrow_border_products";
    /// [`crate::arrow::border_correct`].
    pub const ARROW_BORDER_CORRECT: &str = "arrow_border_correct";
    /// [`crate::refine::demote_matrix`].
    pub const REFINE_DEMOTE_MATRIX: &str = "refine_demote_matrix";
    /// [`crate::refine::residual`] with 256-row passes.
    pub const REFINE_RESIDUAL: &str = "refine_residual";
    /// [`crate::refine::residual`] with 128-row passes ([`crate::refine::residual_rows_per_lane`]).
    pub const REFINE_RESIDUAL_128: &str = "refine_residual128";
    /// [`crate::refine::residual_sum`].
    pub const REFINE_RESIDUAL_SUM: &str = "refine_residual_sum";
    /// [`crate::refine::demote_rhs`].
    pub const REFINE_DEMOTE_RHS: &str = "refine_demote_rhs";
    /// [`crate::refine::promote`].
    pub const REFINE_PROMOTE: &str = "refine_promote";
    /// [`crate::tiled::factor::prep`].
    pub const TILED_PREP: &str = "tiled_prep";
    /// [`crate::tiled::factor::prep_rounding`] (`f32` only: `tiled_prep_rounding_f32`).
    pub const TILED_PREP_ROUNDING: &str = "tiled_prep_rounding";
    /// [`crate::tiled::factor::potrf`].
    pub const TILED_POTRF: &str = "tiled_potrf";
    /// [`crate::tiled::factor::trsm`]. The three product kernels (trsm, update,
    /// neighbours) also exist for `f32` on TF32 tensor cores, named with the suffix
    /// [`TF32_SUFFIX`] or [`TF32X3_SUFFIX`] instead of `f32`: `tiled_trsm_tf32x3`.
    pub const TILED_TRSM: &str = "tiled_trsm";
    /// Suffix of the `f32` product kernels on TF32 tensor cores ([`crate::tiled::Tf32`]).
    pub const TF32_SUFFIX: &str = "tf32";
    /// Suffix of the `f32` product kernels on split-operand TF32 ([`crate::tiled::Tf32x3`]).
    pub const TF32X3_SUFFIX: &str = "tf32x3";
    /// [`crate::tiled::factor::update`].
    pub const TILED_UPDATE: &str = "tiled_update";
    /// [`crate::tiled::factor::update_diagonal`].
    pub const TILED_UPDATE_DIAGONAL: &str = "tiled_update_diagonal";
    /// [`crate::tiled::factor::update_trsm`].
    pub const TILED_UPDATE_TRSM: &str = "tiled_update_trsm";
    /// [`crate::tiled::factor::neighbours`].
    pub const TILED_NEIGHBOURS: &str = "tiled_neighbours";
    /// [`crate::tiled::factor::neighbours`] on [`crate::tiled::Wide`] products
    /// (`tiled_wide_neighbours_f64`), or for `f32` on [`crate::tiled::WideTf32`] /
    /// [`crate::tiled::WideTf32x3`] (`tiled_wide_neighbours_tf32`, `_tf32x3`).
    pub const TILED_WIDE_NEIGHBOURS: &str = "tiled_wide_neighbours";
    /// [`crate::tiled::factor::neighbours`] on [`crate::tiled::Wide16`] products (16 warps,
    /// 32 columns per barrier; `f64` only).
    pub const TILED_WIDE16_NEIGHBOURS: &str = "tiled_wide16_neighbours";
    /// [`crate::tiled::factor::update`] on [`crate::tiled::Tall`] products (`f64` only).
    pub const TILED_TALL_UPDATE: &str = "tiled_tall_update";
    /// [`crate::tiled::factor::update`] on [`crate::tiled::Wide`] products: two column
    /// tiles at once ([`crate::tiled::factor::ColumnUpdate::Pair`]; `f64` only).
    pub const TILED_WIDE_UPDATE: &str = "tiled_wide_update";
    /// [`crate::tiled::solve::forward_diag`].
    pub const TILED_FORWARD_DIAG: &str = "tiled_forward_diag";
    /// [`crate::tiled::solve::forward_couple`].
    pub const TILED_FORWARD_COUPLE: &str = "tiled_forward_couple";
    /// [`crate::tiled::solve::backward_couple`].
    pub const TILED_BACKWARD_COUPLE: &str = "tiled_backward_couple";
    /// [`crate::tiled::solve::backward_diag`].
    pub const TILED_BACKWARD_DIAG: &str = "tiled_backward_diag";
    /// [`crate::tiled::solve::forward_node`].
    pub const TILED_FORWARD_NODE: &str = "tiled_forward_node";
    /// [`crate::tiled::solve::backward_node`].
    pub const TILED_BACKWARD_NODE: &str = "tiled_backward_node";
    /// [`crate::tiled::solve::forward_split`].
    pub const TILED_FORWARD_SPLIT: &str = "tiled_forward_split";
    /// [`crate::tiled::solve::backward_split`].
    pub const TILED_BACKWARD_SPLIT: &str = "tiled_backward_split";
    /// [`crate::tiled::inverse::inverse_step`].
    pub const TILED_INVERSE_STEP: &str = "tiled_inverse_step";
    /// [`crate::tiled::inverse::forward_inverse`].
    pub const TILED_FORWARD_INVERSE: &str = "tiled_forward_inverse";
    /// [`crate::tiled::inverse::backward_inverse`].
    pub const TILED_BACKWARD_INVERSE: &str = "tiled_backward_inverse";
    /// [`crate::tiled::inverse::inverse_copy`].
    pub const TILED_INVERSE_COPY: &str = "tiled_inverse_copy";
    /// [`crate::batched::potrf_batched`].
    pub const POTRF_BATCHED: &str = "potrf_batched";
    /// [`crate::logdet::log_det_parts`].
    pub const LOG_DET_PARTS: &str = "log_det_parts";
    /// [`crate::copy::strided_copy`].
    pub const STRIDED_COPY: &str = "strided_copy";
    /// [`crate::selinv::selinv_level`].
    pub const SELINV_LEVEL: &str = "selinv_level";
    /// [`crate::selinv::gather_sub_diagonal`].
    pub const SELINV_GATHER: &str = "selinv_gather";
    /// [`crate::selinv::selinv_level_staged`].
    pub const SELINV_LEVEL_STAGED: &str = "selinv_level_staged";
    /// [`crate::selinv::tiled::selinv_tiled_invert_diag`].
    pub const SELINV_TILED_INVERT_DIAG: &str = "selinv_tiled_invert_diag";
    /// [`crate::selinv::tiled::selinv_tiled_invert_step`].
    pub const SELINV_TILED_INVERT_STEP: &str = "selinv_tiled_invert_step";
    /// [`crate::selinv::tiled::selinv_tiled_couplings`].
    pub const SELINV_TILED_COUPLINGS: &str = "selinv_tiled_couplings";
    /// [`crate::selinv::tiled::selinv_tiled_neighbours`].
    pub const SELINV_TILED_NEIGHBOURS: &str = "selinv_tiled_neighbours";
    /// [`crate::selinv::tiled::selinv_tiled_diagonal`].
    pub const SELINV_TILED_DIAGONAL: &str = "selinv_tiled_diagonal";
    /// [`crate::tridiag::fused::leaves`].
    pub const TRI_FUSED_LEAVES: &str = "tri_fused_leaves";
    /// [`crate::tridiag::fused::merge`].
    pub const TRI_FUSED_MERGE: &str = "tri_fused_merge";
    /// [`crate::tridiag::fused::assemble`].
    pub const TRI_FUSED_ASSEMBLE: &str = "tri_fused_assemble";
    /// [`crate::tridiag::stagewise::leaves`].
    pub const TRI_STAGE_LEAVES: &str = "tri_stage_leaves";
    /// [`crate::tridiag::stagewise::extract`].
    pub const TRI_STAGE_EXTRACT: &str = "tri_stage_extract";
    /// [`crate::tridiag::stagewise::merge`].
    pub const TRI_STAGE_MERGE: &str = "tri_stage_merge";
}

#[cfg(target_arch = "nvptx64")]
mod entry {
    use crate::arrow::{ArrowArgs, border_columns, border_correct, border_products};
    use crate::batched::{PotrfBatchedArgs, potrf_batched};
    use crate::chain::{
        factor_chain, factor_chain_rows, factor_chain_strips, solve_backward_chain, solve_backward_chain_inverse,
        solve_backward_chain_rows, solve_forward_chain, solve_forward_chain_inverse, solve_forward_chain_rows,
    };
    use crate::copy::{StridedCopyArgs, strided_copy};
    use crate::level::columns::{
        solve_backward_panel_columns, solve_backward_panel_columns_staged, solve_forward_panel_columns, solve_forward_panel_columns_staged,
    };
    use crate::level::{
        FactorArgs, SolveArgs, factor_blocked, factor_blocked_dataflow, factor_level, factor_panel, factor_panel_dataflow, factor_prep,
        factor_rows, factor_rows_dataflow, factor_solve_blocked, factor_solve_blocked_dataflow, factor_solve_rows,
        factor_solve_rows_dataflow, solve_backward_level, solve_backward_panel, solve_backward_rows, solve_backward_rows_warps,
        solve_backward_subtree_rows, solve_forward_level, solve_forward_panel, solve_forward_rows, solve_forward_rows_warps,
        solve_panel_columns_dataflow, solve_panel_dataflow, solve_rows_block, solve_rows_dataflow,
    };
    use crate::logdet::{LogDetArgs, log_det_parts};
    use crate::refine::{ROWS_PER_LANE, RefineArgs, demote_matrix, demote_rhs, promote, residual, residual_sum};
    use crate::selinv::tiled::{self as sel_tiled, SelinvTiledArgs};
    use crate::selinv::{
        SelinvArgs, SelinvGatherArgs, gather_sub_diagonal, selinv_chain, selinv_chain_staged, selinv_level, selinv_level_staged,
    };
    use crate::tiled::{
        Narrow, Native, Tall, Tf32, Tf32x3, TiledArgs, Wide, Wide16, WideTf32, WideTf32x3, factor as tf, inverse as ti, solve as ts,
    };
    use crate::tridiag::{TridiagArgs, fused, stagewise};

    use blocktri_prims::sync::kernel_prologue;

    /// One entry point: the prologue every kernel owes its dependent launch, then the body.
    /// Every entry goes through here, so that none can miss the prologue.
    macro_rules! entry {
        ($name:ident, $body:path, $args:ty) => {
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(args: $args) {
                kernel_prologue();
                // SAFETY: the host launches it as the body's docs require.
                unsafe { $body(&args) }
            }
        };
    }

    macro_rules! kernel {
        ($f64name:ident, $f32name:ident, $body:path, $args:ident) => {
            entry!($f64name, $body, $args<f64>);
            entry!($f32name, $body, $args<f32>);
        };
    }

    macro_rules! rows_kernels {
        ($np:literal, $f64f:ident, $f32f:ident, $f64s:ident, $f32s:ident, $f64b:ident, $f32b:ident) => {
            kernel!($f64f, $f32f, factor_rows::<_, $np>, FactorArgs);
            kernel!($f64s, $f32s, solve_forward_rows::<_, $np>, SolveArgs);
            kernel!($f64b, $f32b, solve_backward_rows::<_, $np>, SolveArgs);
        };
    }
    rows_kernels!(
        4,
        factor_rows4_f64,
        factor_rows4_f32,
        solve_forward_rows4_f64,
        solve_forward_rows4_f32,
        solve_backward_rows4_f64,
        solve_backward_rows4_f32
    );
    rows_kernels!(
        8,
        factor_rows8_f64,
        factor_rows8_f32,
        solve_forward_rows8_f64,
        solve_forward_rows8_f32,
        solve_backward_rows8_f64,
        solve_backward_rows8_f32
    );
    rows_kernels!(
        16,
        factor_rows16_f64,
        factor_rows16_f32,
        solve_forward_rows16_f64,
        solve_forward_rows16_f32,
        solve_backward_rows16_f64,
        solve_backward_rows16_f32
    );
    rows_kernels!(
        32,
        factor_rows32_f64,
        factor_rows32_f32,
        solve_forward_rows32_f64,
        solve_forward_rows32_f32,
        solve_backward_rows32_f64,
        solve_backward_rows32_f32
    );
    kernel!(solve_backward_subtree_rows4_f64, solve_backward_subtree_rows4_f32, solve_backward_subtree_rows::<_, 4>, SolveArgs);
    kernel!(solve_backward_subtree_rows8_f64, solve_backward_subtree_rows8_f32, solve_backward_subtree_rows::<_, 8>, SolveArgs);
    kernel!(solve_forward_warps16_f64, solve_forward_warps16_f32, solve_forward_rows_warps::<_, 16>, SolveArgs);
    kernel!(solve_backward_warps16_f64, solve_backward_warps16_f32, solve_backward_rows_warps::<_, 16>, SolveArgs);
    kernel!(solve_rows_block4_f64, solve_rows_block4_f32, solve_rows_block::<_, 4>, SolveArgs);
    kernel!(solve_rows_block8_f64, solve_rows_block8_f32, solve_rows_block::<_, 8>, SolveArgs);
    macro_rules! rows_dataflow_kernels {
        ($np:literal, $f64f:ident, $f32f:ident, $f64s:ident, $f32s:ident) => {
            kernel!($f64f, $f32f, factor_rows_dataflow::<_, $np>, FactorArgs);
            kernel!($f64s, $f32s, solve_rows_dataflow::<_, $np>, SolveArgs);
        };
    }
    rows_dataflow_kernels!(4, factor_rows_dataflow4_f64, factor_rows_dataflow4_f32, solve_rows_dataflow4_f64, solve_rows_dataflow4_f32);
    rows_dataflow_kernels!(8, factor_rows_dataflow8_f64, factor_rows_dataflow8_f32, solve_rows_dataflow8_f64, solve_rows_dataflow8_f32);
    rows_dataflow_kernels!(
        16,
        factor_rows_dataflow16_f64,
        factor_rows_dataflow16_f32,
        solve_rows_dataflow16_f64,
        solve_rows_dataflow16_f32
    );
    rows_dataflow_kernels!(
        32,
        factor_rows_dataflow32_f64,
        factor_rows_dataflow32_f32,
        solve_rows_dataflow32_f64,
        solve_rows_dataflow32_f32
    );
    // The rows factor with the interlaced forward substitution, per level and in one launch.
    kernel!(factor_solve_rows4_f64, factor_solve_rows4_f32, factor_solve_rows::<_, 4>, FactorArgs);
    kernel!(factor_solve_rows8_f64, factor_solve_rows8_f32, factor_solve_rows::<_, 8>, FactorArgs);
    kernel!(factor_solve_rows16_f64, factor_solve_rows16_f32, factor_solve_rows::<_, 16>, FactorArgs);
    kernel!(factor_solve_rows32_f64, factor_solve_rows32_f32, factor_solve_rows::<_, 32>, FactorArgs);
    kernel!(factor_solve_rows_dataflow4_f64, factor_solve_rows_dataflow4_f32, factor_solve_rows_dataflow::<_, 4>, FactorArgs);
    kernel!(factor_solve_rows_dataflow8_f64, factor_solve_rows_dataflow8_f32, factor_solve_rows_dataflow::<_, 8>, FactorArgs);
    kernel!(factor_solve_rows_dataflow16_f64, factor_solve_rows_dataflow16_f32, factor_solve_rows_dataflow::<_, 16>, FactorArgs);
    kernel!(factor_solve_rows_dataflow32_f64, factor_solve_rows_dataflow32_f32, factor_solve_rows_dataflow::<_, 32>, FactorArgs);
    macro_rules! chain_rows_kernels {
        ($np:literal, $f64f:ident, $f32f:ident, $f64fs:ident, $f32fs:ident, $f64s:ident, $f32s:ident, $f64b:ident, $f32b:ident) => {
            kernel!($f64f, $f32f, factor_chain_rows::<_, $np, false>, FactorArgs);
            kernel!($f64fs, $f32fs, factor_chain_rows::<_, $np, true>, FactorArgs);
            kernel!($f64s, $f32s, solve_forward_chain_rows::<_, $np>, SolveArgs);
            kernel!($f64b, $f32b, solve_backward_chain_rows::<_, $np>, SolveArgs);
        };
    }
    chain_rows_kernels!(
        4,
        factor_chain_rows4_f64,
        factor_chain_rows4_f32,
        factor_solve_chain_rows4_f64,
        factor_solve_chain_rows4_f32,
        solve_forward_chain_rows4_f64,
        solve_forward_chain_rows4_f32,
        solve_backward_chain_rows4_f64,
        solve_backward_chain_rows4_f32
    );
    chain_rows_kernels!(
        8,
        factor_chain_rows8_f64,
        factor_chain_rows8_f32,
        factor_solve_chain_rows8_f64,
        factor_solve_chain_rows8_f32,
        solve_forward_chain_rows8_f64,
        solve_forward_chain_rows8_f32,
        solve_backward_chain_rows8_f64,
        solve_backward_chain_rows8_f32
    );
    chain_rows_kernels!(
        16,
        factor_chain_rows16_f64,
        factor_chain_rows16_f32,
        factor_solve_chain_rows16_f64,
        factor_solve_chain_rows16_f32,
        solve_forward_chain_rows16_f64,
        solve_forward_chain_rows16_f32,
        solve_backward_chain_rows16_f64,
        solve_backward_chain_rows16_f32
    );
    chain_rows_kernels!(
        32,
        factor_chain_rows32_f64,
        factor_chain_rows32_f32,
        factor_solve_chain_rows32_f64,
        factor_solve_chain_rows32_f32,
        solve_forward_chain_rows32_f64,
        solve_forward_chain_rows32_f32,
        solve_backward_chain_rows32_f64,
        solve_backward_chain_rows32_f32
    );
    kernel!(factor_chain_strips32_f64, factor_chain_strips32_f32, factor_chain_strips::<_, 32>, FactorArgs);
    kernel!(factor_chain_strips64_f64, factor_chain_strips64_f32, factor_chain_strips::<_, 64>, FactorArgs);
    kernel!(solve_forward_chain_inverse_f64, solve_forward_chain_inverse_f32, solve_forward_chain_inverse, SolveArgs);
    kernel!(solve_backward_chain_inverse_f64, solve_backward_chain_inverse_f32, solve_backward_chain_inverse, SolveArgs);
    macro_rules! panel_kernels {
        ($np:literal, $f64f:ident, $f32f:ident, $f64s:ident, $f32s:ident, $f64b:ident, $f32b:ident) => {
            kernel!($f64f, $f32f, factor_panel::<_, $np>, FactorArgs);
            kernel!($f64s, $f32s, solve_forward_panel::<_, $np>, SolveArgs);
            kernel!($f64b, $f32b, solve_backward_panel::<_, $np>, SolveArgs);
        };
    }
    panel_kernels!(
        32,
        factor_panel32_f64,
        factor_panel32_f32,
        solve_forward_panel32_f64,
        solve_forward_panel32_f32,
        solve_backward_panel32_f64,
        solve_backward_panel32_f32
    );
    panel_kernels!(
        64,
        factor_panel64_f64,
        factor_panel64_f32,
        solve_forward_panel64_f64,
        solve_forward_panel64_f32,
        solve_backward_panel64_f64,
        solve_backward_panel64_f32
    );
    panel_kernels!(
        96,
        factor_panel96_f64,
        factor_panel96_f32,
        solve_forward_panel96_f64,
        solve_forward_panel96_f32,
        solve_backward_panel96_f64,
        solve_backward_panel96_f32
    );
    kernel!(factor_blocked32_f64, factor_blocked32_f32, factor_blocked::<_, 32>, FactorArgs);
    kernel!(factor_blocked64_f64, factor_blocked64_f32, factor_blocked::<_, 64>, FactorArgs);
    kernel!(factor_solve_blocked32_f64, factor_solve_blocked32_f32, factor_solve_blocked::<_, 32>, FactorArgs);
    kernel!(factor_solve_blocked64_f64, factor_solve_blocked64_f32, factor_solve_blocked::<_, 64>, FactorArgs);
    kernel!(factor_panel_dataflow32_f64, factor_panel_dataflow32_f32, factor_panel_dataflow::<_, 32>, FactorArgs);
    kernel!(factor_panel_dataflow64_f64, factor_panel_dataflow64_f32, factor_panel_dataflow::<_, 64>, FactorArgs);
    kernel!(factor_panel_dataflow96_f64, factor_panel_dataflow96_f32, factor_panel_dataflow::<_, 96>, FactorArgs);
    kernel!(factor_blocked_dataflow32_f64, factor_blocked_dataflow32_f32, factor_blocked_dataflow::<_, 32>, FactorArgs);
    kernel!(factor_blocked_dataflow64_f64, factor_blocked_dataflow64_f32, factor_blocked_dataflow::<_, 64>, FactorArgs);
    kernel!(factor_solve_blocked_dataflow32_f64, factor_solve_blocked_dataflow32_f32, factor_solve_blocked_dataflow::<_, 32>, FactorArgs);
    kernel!(factor_solve_blocked_dataflow64_f64, factor_solve_blocked_dataflow64_f32, factor_solve_blocked_dataflow::<_, 64>, FactorArgs);
    kernel!(solve_panel_dataflow32_f64, solve_panel_dataflow32_f32, solve_panel_dataflow::<_, 32>, SolveArgs);
    kernel!(solve_panel_dataflow64_f64, solve_panel_dataflow64_f32, solve_panel_dataflow::<_, 64>, SolveArgs);
    kernel!(solve_panel_dataflow96_f64, solve_panel_dataflow96_f32, solve_panel_dataflow::<_, 96>, SolveArgs);
    // The column solves of every padded size ([`crate::level::columns::columns_size`]).
    macro_rules! column_kernels {
        ($np:literal, $fl:ident, $fl32:ident, $bl:ident, $bl32:ident, $fs:ident, $fs32:ident, $bs:ident, $bs32:ident, $d:ident, $d32:ident) => {
            kernel!($fl, $fl32, solve_forward_panel_columns::<_, $np>, SolveArgs);
            kernel!($bl, $bl32, solve_backward_panel_columns::<_, $np>, SolveArgs);
            kernel!($fs, $fs32, solve_forward_panel_columns_staged::<_, $np>, SolveArgs);
            kernel!($bs, $bs32, solve_backward_panel_columns_staged::<_, $np>, SolveArgs);
            kernel!($d, $d32, solve_panel_columns_dataflow::<_, $np>, SolveArgs);
        };
    }
    column_kernels!(
        8,
        solve_forward_panel_columns8_f64,
        solve_forward_panel_columns8_f32,
        solve_backward_panel_columns8_f64,
        solve_backward_panel_columns8_f32,
        solve_forward_panel_columns_staged8_f64,
        solve_forward_panel_columns_staged8_f32,
        solve_backward_panel_columns_staged8_f64,
        solve_backward_panel_columns_staged8_f32,
        solve_panel_columns_dataflow8_f64,
        solve_panel_columns_dataflow8_f32
    );
    column_kernels!(
        16,
        solve_forward_panel_columns16_f64,
        solve_forward_panel_columns16_f32,
        solve_backward_panel_columns16_f64,
        solve_backward_panel_columns16_f32,
        solve_forward_panel_columns_staged16_f64,
        solve_forward_panel_columns_staged16_f32,
        solve_backward_panel_columns_staged16_f64,
        solve_backward_panel_columns_staged16_f32,
        solve_panel_columns_dataflow16_f64,
        solve_panel_columns_dataflow16_f32
    );
    column_kernels!(
        32,
        solve_forward_panel_columns32_f64,
        solve_forward_panel_columns32_f32,
        solve_backward_panel_columns32_f64,
        solve_backward_panel_columns32_f32,
        solve_forward_panel_columns_staged32_f64,
        solve_forward_panel_columns_staged32_f32,
        solve_backward_panel_columns_staged32_f64,
        solve_backward_panel_columns_staged32_f32,
        solve_panel_columns_dataflow32_f64,
        solve_panel_columns_dataflow32_f32
    );
    column_kernels!(
        64,
        solve_forward_panel_columns64_f64,
        solve_forward_panel_columns64_f32,
        solve_backward_panel_columns64_f64,
        solve_backward_panel_columns64_f32,
        solve_forward_panel_columns_staged64_f64,
        solve_forward_panel_columns_staged64_f32,
        solve_backward_panel_columns_staged64_f64,
        solve_backward_panel_columns_staged64_f32,
        solve_panel_columns_dataflow64_f64,
        solve_panel_columns_dataflow64_f32
    );
    kernel!(factor_prep_f64, factor_prep_f32, factor_prep, FactorArgs);
    kernel!(factor_level_f64, factor_level_f32, factor_level, FactorArgs);
    kernel!(solve_forward_f64, solve_forward_f32, solve_forward_level, SolveArgs);
    kernel!(solve_backward_f64, solve_backward_f32, solve_backward_level, SolveArgs);
    kernel!(log_det_parts_f64, log_det_parts_f32, log_det_parts, LogDetArgs);
    kernel!(selinv_level_f64, selinv_level_f32, selinv_level, SelinvArgs);
    kernel!(selinv_chain_f64, selinv_chain_f32, selinv_chain, SelinvArgs);
    kernel!(selinv_level_staged_f64, selinv_level_staged_f32, selinv_level_staged, SelinvArgs);
    kernel!(selinv_gather_f64, selinv_gather_f32, gather_sub_diagonal, SelinvGatherArgs);
    kernel!(selinv_chain_staged_f64, selinv_chain_staged_f32, selinv_chain_staged, SelinvArgs);
    kernel!(selinv_tiled_invert_diag_f64, selinv_tiled_invert_diag_f32, sel_tiled::selinv_tiled_invert_diag, SelinvTiledArgs);
    kernel!(selinv_tiled_invert_step_f64, selinv_tiled_invert_step_f32, sel_tiled::selinv_tiled_invert_step, SelinvTiledArgs);
    kernel!(selinv_tiled_couplings_f64, selinv_tiled_couplings_f32, sel_tiled::selinv_tiled_couplings, SelinvTiledArgs);
    kernel!(selinv_tiled_neighbours_f64, selinv_tiled_neighbours_f32, sel_tiled::selinv_tiled_neighbours, SelinvTiledArgs);
    kernel!(selinv_tiled_diagonal_f64, selinv_tiled_diagonal_f32, sel_tiled::selinv_tiled_diagonal, SelinvTiledArgs);
    kernel!(factor_chain_f64, factor_chain_f32, factor_chain, FactorArgs);
    kernel!(solve_forward_chain_f64, solve_forward_chain_f32, solve_forward_chain, SolveArgs);
    kernel!(solve_backward_chain_f64, solve_backward_chain_f32, solve_backward_chain, SolveArgs);
    kernel!(tiled_prep_f64, tiled_prep_f32, tf::prep, TiledArgs);
    /// [`tf::prep_rounding`]: an `f32` factorization's `prep` from an `f64` matrix.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn tiled_prep_rounding_f32(args: TiledArgs<f32>, input: tf::RoundingInput) {
        kernel_prologue();
        // SAFETY: the host launches it as the body's docs require.
        unsafe { tf::prep_rounding(&args, &input) }
    }
    kernel!(tiled_potrf_f64, tiled_potrf_f32, tf::potrf, TiledArgs);
    kernel!(tiled_trsm_f64, tiled_trsm_f32, tf::trsm::<_, Native>, TiledArgs);
    kernel!(tiled_update_f64, tiled_update_f32, tf::update::<_, Narrow<Native>>, TiledArgs);
    kernel!(tiled_update_diagonal_f64, tiled_update_diagonal_f32, tf::update_diagonal::<_, Native>, TiledArgs);
    kernel!(tiled_update_trsm_f64, tiled_update_trsm_f32, tf::update_trsm::<_, Native>, TiledArgs);
    kernel!(tiled_neighbours_f64, tiled_neighbours_f32, tf::neighbours::<_, Narrow<Native>>, TiledArgs);
    // `f64` only: the wide products are FP64 tensor-core tiles.
    entry!(tiled_wide_neighbours_f64, tf::neighbours::<f64, Wide>, TiledArgs<f64>);
    entry!(tiled_wide16_neighbours_f64, tf::neighbours::<f64, Wide16>, TiledArgs<f64>);
    entry!(tiled_tall_update_f64, tf::update::<f64, Tall>, TiledArgs<f64>);
    entry!(tiled_wide_update_f64, tf::update::<f64, Wide>, TiledArgs<f64>);

    macro_rules! tf32_kernels {
        ($mac:ty, $trsm:ident, $update:ident, $neighbours:ident) => {
            entry!($trsm, tf::trsm::<f32, $mac>, TiledArgs<f32>);
            entry!($update, tf::update::<f32, Narrow<$mac>>, TiledArgs<f32>);
            entry!($neighbours, tf::neighbours::<f32, Narrow<$mac>>, TiledArgs<f32>);
        };
    }
    tf32_kernels!(Tf32, tiled_trsm_tf32, tiled_update_tf32, tiled_neighbours_tf32);
    tf32_kernels!(Tf32x3, tiled_trsm_tf32x3, tiled_update_tf32x3, tiled_neighbours_tf32x3);
    entry!(tiled_wide_neighbours_tf32, tf::neighbours::<f32, WideTf32>, TiledArgs<f32>);
    entry!(tiled_wide_neighbours_tf32x3, tf::neighbours::<f32, WideTf32x3>, TiledArgs<f32>);
    kernel!(tiled_forward_diag_f64, tiled_forward_diag_f32, ts::forward_diag, TiledArgs);
    kernel!(tiled_forward_couple_f64, tiled_forward_couple_f32, ts::forward_couple, TiledArgs);
    kernel!(tiled_backward_couple_f64, tiled_backward_couple_f32, ts::backward_couple, TiledArgs);
    kernel!(tiled_backward_diag_f64, tiled_backward_diag_f32, ts::backward_diag, TiledArgs);
    kernel!(tiled_forward_node_f64, tiled_forward_node_f32, ts::forward_node, TiledArgs);
    kernel!(tiled_backward_node_f64, tiled_backward_node_f32, ts::backward_node, TiledArgs);
    kernel!(tiled_forward_split_f64, tiled_forward_split_f32, ts::forward_split, TiledArgs);
    kernel!(tiled_backward_split_f64, tiled_backward_split_f32, ts::backward_split, TiledArgs);
    kernel!(tiled_inverse_step_f64, tiled_inverse_step_f32, ti::inverse_step::<_, Native>, TiledArgs);
    kernel!(tiled_forward_inverse_f64, tiled_forward_inverse_f32, ti::forward_inverse, TiledArgs);
    kernel!(tiled_backward_inverse_f64, tiled_backward_inverse_f32, ti::backward_inverse, TiledArgs);
    kernel!(tiled_inverse_copy_f64, tiled_inverse_copy_f32, ti::inverse_copy, TiledArgs);
    kernel!(arrow_border_columns_f64, arrow_border_columns_f32, border_columns, ArrowArgs);
    kernel!(arrow_border_products_f64, arrow_border_products_f32, border_products, ArrowArgs);
    kernel!(arrow_border_correct_f64, arrow_border_correct_f32, border_correct, ArrowArgs);
    kernel!(refine_demote_matrix_f64, refine_demote_matrix_f32, demote_matrix, RefineArgs);
    kernel!(refine_residual_f64, refine_residual_f32, residual::<_, ROWS_PER_LANE>, RefineArgs);
    kernel!(refine_residual128_f64, refine_residual128_f32, residual::<_, { ROWS_PER_LANE / 2 }>, RefineArgs);
    kernel!(refine_residual_sum_f64, refine_residual_sum_f32, residual_sum, RefineArgs);
    kernel!(refine_demote_rhs_f64, refine_demote_rhs_f32, demote_rhs, RefineArgs);
    kernel!(refine_promote_f64, refine_promote_f32, promote, RefineArgs);
    kernel!(strided_copy_f64, strided_copy_f32, strided_copy, StridedCopyArgs);
    kernel!(potrf_batched_f64, potrf_batched_f32, potrf_batched, PotrfBatchedArgs);
    kernel!(tri_fused_leaves_f64, tri_fused_leaves_f32, fused::leaves, TridiagArgs);
    kernel!(tri_fused_merge_f64, tri_fused_merge_f32, fused::merge, TridiagArgs);
    kernel!(tri_fused_assemble_f64, tri_fused_assemble_f32, fused::assemble, TridiagArgs);
    kernel!(tri_stage_leaves_f64, tri_stage_leaves_f32, stagewise::leaves, TridiagArgs);
    kernel!(tri_stage_extract_f64, tri_stage_extract_f32, stagewise::extract, TridiagArgs);
    kernel!(tri_stage_merge_f64, tri_stage_merge_f32, stagewise::merge, TridiagArgs);
}
