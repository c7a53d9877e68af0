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

pub mod fragment;
pub mod gemm;
pub mod potrf;
pub(crate) mod strip8;
pub mod trsm;

#[cfg(test)]
mod tests {
    use super::FastDiv;

    #[test]
    fn fast_division_is_exact_in_range() {
        for d in 1..=300u32 {
            let f = FastDiv::new(d);
            let limit = (u32::MAX / d).min(200_000);
            for e in (0..limit).step_by(7).chain([limit.saturating_sub(1)]) {
                assert_eq!(f.div_rem(e), (e / d, e % d), "{e} / {d}");
            }
        }
    }
}

pub use gemm::{MatRef, product};
pub use potrf::{NO_FAILURE, potrf_panel};
pub use trsm::{trsm_lower, trsm_lower_by_warps, trsm_lower_transposed, trsm_lower_transposed_by_warps};

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

/// Division by a divisor fixed at run time, by a multiply-high: exact for dividends `e`
/// with `e * d < 2^32` (tile indices here), a few instructions instead of a division
/// routine.
#[derive(Clone, Copy, Debug)]
pub struct FastDiv {
    d: u32,
    m: u64,
}

impl FastDiv {
    /// A divider by `d >= 1`.
    #[inline(always)]
    pub const fn new(d: u32) -> Self {
        // floor(2^32 / d) from a 32-bit division: it equals floor((2^32 - 1) / d) unless d
        // divides 2^32. (A 64-bit division by a run-time value is a ~70-instruction
        // subroutine on the GPU: 11 % of a blocked panel factor's instructions, entry 15
        // of docs/perf-notes.md.)
        let q = (u32::MAX / d) as u64 + d.is_power_of_two() as u64;
        FastDiv { d, m: q + 1 }
    }

    /// `(e / d, e % d)`, for `e * d < 2^32`.
    #[inline(always)]
    pub fn div_rem(&self, e: u32) -> (u32, u32) {
        let q = ((e as u64 * self.m) >> 32) as u32;
        (q, e - q * self.d)
    }
}

/// Moves the `rows x cols` entries of a tile: for each entry `(r, c)`, `store(r, c, load(r, c))`.
/// Each thread first performs `BATCH` loads, then the `BATCH` stores, so that its loads are
/// in flight together (with loads and stores interleaved, a store through a generic pointer
/// that might alias the next load would make every load wait for the previous one).
/// Consecutive threads take consecutive rows.
/// `V` is whatever one entry carries (a value, or a tuple of values from several tiles).
#[inline(always)]
pub fn copy_batched<V: Copy + Default, M: crate::team::Team>(
    team: M,
    rows: usize,
    cols: usize,
    load: impl Fn(usize, usize) -> V,
    mut store: impl FnMut(usize, usize, V),
) {
    const BATCH: usize = 4;
    let total = rows * cols;
    let div = FastDiv::new(rows as u32);
    let (rank, size) = (team.rank(), team.size());
    let mut base = rank;
    while base < total {
        let mut vals = [V::default(); BATCH];
        let mut at = [(0usize, 0usize); BATCH];
        for u in 0..BATCH {
            let e = base + u * size;
            if e < total {
                let (c, r) = div.div_rem(e as u32);
                at[u] = (r as usize, c as usize);
                vals[u] = load(r as usize, c as usize);
            }
        }
        for u in 0..BATCH {
            if base + u * size < total {
                store(at[u].0, at[u].1, vals[u]);
            }
        }
        base += BATCH * size;
    }
}

/// Calls `f(r, c)` for every entry of a `rows x cols` tile, split over all threads of the
/// team (consecutive threads take consecutive rows; no division per entry).
#[inline(always)]
pub fn for_each_rc<M: crate::team::Team>(team: M, rows: usize, cols: usize, mut f: impl FnMut(usize, usize)) {
    let total = rows * cols;
    if total == 0 {
        return; // and no divider by zero rows
    }
    let div = FastDiv::new(rows as u32);
    let mut e = team.rank();
    while e < total {
        let (c, r) = div.div_rem(e as u32);
        f(r as usize, c as usize);
        e += team.size();
    }
}

/// Waits for this thread's asynchronous copies to shared memory (every committed group,
/// [`blocktri_prims::memory::copy_async_16`]), then a team barrier: every copy the team
/// started is complete and visible to all of it.
#[inline(always)]
pub(crate) fn wait_copies<M: crate::team::Team>(team: M) {
    blocktri_prims::memory::copy_async_commit();
    blocktri_prims::memory::copy_async_wait::<0>();
    team.sync();
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
