//! Fused level kernels: one launch per nested-dissection level, one thread block per
//! (system, node) pair, the node's blocks in shared memory.
//!
//! Grid: `x = systems * nodes_in_level`, block index `s * nodes + t` is node `t` of
//! system `s`. Memory of system `s` starts at `s * nblocks * ld * n` in the block arrays
//! (`s * (nblocks - 1) * ld * n` for the sub-diagonal input) and at
//! `s * nblocks * n * nrhs` in the right-hand sides.

pub mod blocked;
pub mod columns;
pub mod dataflow;
pub mod factor;
pub(crate) mod node;
pub mod panel;
pub mod rows;
pub mod solve;
pub mod subtree;

pub use blocked::{factor_blocked, factor_blocked_shared_bytes, factor_blocked_threads, factor_solve_blocked};
pub use dataflow::{
    SWEEP_BACKWARD, SWEEP_FORWARD, factor_blocked_dataflow, factor_flag_words, factor_panel_dataflow, factor_rows_dataflow,
    factor_solve_blocked_dataflow, factor_solve_rows_dataflow, nodes_from, solve_flag_words, solve_panel_columns_dataflow,
    solve_panel_dataflow, solve_rows_dataflow,
};
pub use factor::{FactorArgs, factor_level, factor_prep, factor_shared_bytes};
pub use panel::{
    PANEL_THREADS, factor_panel, factor_panel_shared_bytes, panel_groups, panel_solve_threads, panel_threads, solve_backward_panel,
    solve_forward_panel, solve_panel_dataflow_shared_bytes, solve_panel_shared_bytes,
};
pub use rows::{
    ROW_THREADS, SOLVE_WARPS_PER_BLOCK, factor_rows, factor_rows_shared_bytes, factor_solve_rows, rows_nodes_per_block,
    rows_solve_nodes_per_block, solve_backward_rows, solve_backward_rows_warps, solve_forward_rows, solve_forward_rows_warps,
    solve_rows_block, solve_rows_shared_bytes, solve_rows_warps_shared_bytes,
};
pub use solve::{SolveArgs, solve_backward_level, solve_forward_level, solve_shared_bytes};
pub use subtree::{
    SUBTREE_MAX_THREADS, solve_backward_subtree_rows, subtree_blocks, subtree_max_levels, subtree_shared_bytes, subtree_threads,
};

/// Status word of a system: `u64::MAX` while no problem was found; otherwise the smallest
/// [`info_key`] recorded (the earliest level first).
pub const INFO_OK: u64 = u64::MAX;

/// Why a block failed.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoCode {
    /// A value of the block (diagonal block or one of its couplings) is NaN or infinite.
    NonFinite = 1,
    /// The diagonal block is not symmetric within tolerance.
    NotSymmetric = 2,
    /// A pivot of the block's Cholesky factorization was not positive.
    NotPositiveDefinite = 3,
    /// A value of the block's solution is NaN or infinite (non-finite right-hand side, or
    /// overflow).
    NonFiniteSolution = 4,
}

impl InfoCode {
    /// The code stored in an info key.
    pub fn from_u32(code: u32) -> Option<Self> {
        match code {
            1 => Some(Self::NonFinite),
            2 => Some(Self::NotSymmetric),
            3 => Some(Self::NotPositiveDefinite),
            4 => Some(Self::NonFiniteSolution),
            _ => None,
        }
    }
}

/// Padded block sizes of the register-resident kernels ([`rows`]): a block size `n`
/// runs with the smallest of these `>= n`; larger `n` use the generic kernels.
pub const ROW_SIZES: [usize; 4] = [4, 8, 16, 32];

/// The padded size [`ROW_SIZES`] picks for `n`, if any.
pub const fn row_size(n: usize) -> Option<usize> {
    let mut i = 0;
    while i < ROW_SIZES.len() {
        if n <= ROW_SIZES[i] {
            return Some(ROW_SIZES[i]);
        }
        i += 1;
    }
    None
}

/// Padded block sizes of the shared-memory panel kernels ([`panel`]).
pub const PANEL_SIZES: [usize; 3] = [32, 64, 96];

/// The padded size [`PANEL_SIZES`] picks for `n`, if any.
pub const fn panel_size(n: usize) -> Option<usize> {
    let mut i = 0;
    while i < PANEL_SIZES.len() {
        if n <= PANEL_SIZES[i] {
            return Some(PANEL_SIZES[i]);
        }
        i += 1;
    }
    None
}

/// Orders failures by level, then code, then block: `level << 40 | code << 32 | block`,
/// `block` 0-based. The host decodes it with [`decode_info`].
#[inline(always)]
pub const fn info_key(level: u32, code: InfoCode, block: u32) -> u64 {
    ((level as u64) << 40) | ((code as u32 as u64) << 32) | block as u64
}

/// `(level, code, block)` of an info key, `None` for [`INFO_OK`].
pub fn decode_info(key: u64) -> Option<(u32, u32, u32)> {
    (key != INFO_OK).then_some(((key >> 40) as u32, ((key >> 32) & 0xff) as u32, key as u32))
}

/// Offsets in shared memory, in elements of `T`, rounded to keep 16-byte alignment.
#[inline(always)]
pub(crate) const fn align_elems(elems: usize, bytes_per_elem: usize) -> usize {
    let align = 16 / bytes_per_elem;
    elems.div_ceil(align) * align
}
