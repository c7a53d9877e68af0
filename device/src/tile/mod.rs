//! Tile routines on small column-major tiles held in shared memory (or, for [`Solo`]
//! teams, in ordinary memory).
//!
//! Each routine takes raw pointers, leading dimensions and a [`Team`]; it does no
//! allocation and contains every barrier it needs, so a block-wide caller only has to
//! keep all threads in the call. Rows go to lanes, columns to groups
//! ([`Team`] docs), which keeps shared-memory accesses bank-conflict free.
//!
//! [`Solo`]: crate::team::Solo
//! [`Team`]: crate::team::Team

pub mod gemm;
pub mod potrf;
pub mod trsm;

pub use gemm::{MatRef, product};
pub use potrf::{NO_FAILURE, potrf_panel};
pub use trsm::{trsm_lower, trsm_lower_transposed};

/// Calls `f(i, j)` for `i in 0..rows`, `j in 0..cols`, the pairs split over the team:
/// rows over lanes, columns over groups.
#[inline(always)]
pub fn for_each_entry<M: crate::team::Team>(team: M, rows: usize, cols: usize, mut f: impl FnMut(usize, usize)) {
    let mut j = team.group();
    while j < cols {
        let mut i = team.lane();
        while i < rows {
            f(i, j);
            i += team.lanes();
        }
        j += team.groups();
    }
}

/// Calls `f(e)` for `e in 0..count`, split over all threads of the team (strided by the
/// team size, so consecutive threads take consecutive `e`).
#[inline(always)]
pub fn for_each_index<M: crate::team::Team>(team: M, count: usize, mut f: impl FnMut(usize)) {
    let mut e = team.rank();
    while e < count {
        f(e);
        e += team.size();
    }
}
