//! Triangular solves with a lower-triangular `n x n` tile and `k` right-hand sides.

use crate::team::Team;
use blocktri_prims::Real;

/// Fills `inv[i] = 1 / L[i][i]` for `i in 0..n`, then a barrier.
///
/// # Safety
/// `l` holds an `n x n` tile at leading dimension `ldl`, `inv` `n` elements visible to the
/// team; all threads call it.
pub unsafe fn invert_diagonal<T: Real, M: Team>(team: M, l: *const T, ldl: usize, n: usize, inv: *mut T) {
    super::for_each_index(team, n, |i| unsafe { *inv.add(i) = T::ONE / *l.add(i * ldl + i) });
    team.sync();
}

/// Solves `L Y = B` in place (`B` is `n x k`, leading dimension `ldb`): forward
/// substitution, right-looking, one barrier per row. `inv` holds `1 / L[i][i]`
/// (see [`invert_diagonal`]).
///
/// # Safety
/// `l`: `n x n` at `ldl`; `b`: `n x k` at `ldb >= n`; `inv`: `n`; all shared by the team
/// and not accessed by others during the call; all threads call it.
#[allow(clippy::too_many_arguments)] // the BLAS trsm argument list
pub unsafe fn trsm_lower<T: Real, M: Team>(team: M, l: *const T, ldl: usize, n: usize, b: *mut T, ldb: usize, k: usize, inv: *const T) {
    for r in 0..n {
        // Rows below r: b[i] -= L[i][r] * (b[r] / L[r][r]); b[r] itself is scaled last.
        let inv_r = unsafe { *inv.add(r) };
        let mut c = team.group();
        while c < k {
            let yr = unsafe { *b.add(c * ldb + r) } * inv_r;
            let mut i = r + 1 + team.lane();
            while i < n {
                unsafe {
                    let dst = b.add(c * ldb + i);
                    *dst = (-*l.add(r * ldl + i)).mul_add(yr, *dst);
                }
                i += team.lanes();
            }
            c += team.groups();
        }
        team.sync();
    }
    unsafe { scale_rows(team, n, b, ldb, k, inv) };
}

/// Solves `L^T X = B` in place: backward substitution, one barrier per row.
///
/// # Safety
/// As [`trsm_lower`].
#[allow(clippy::too_many_arguments)] // the BLAS trsm argument list
pub unsafe fn trsm_lower_transposed<T: Real, M: Team>(
    team: M,
    l: *const T,
    ldl: usize,
    n: usize,
    b: *mut T,
    ldb: usize,
    k: usize,
    inv: *const T,
) {
    for r in (0..n).rev() {
        // Rows above r: b[i] -= L[r][i] * (b[r] / L[r][r]).
        let inv_r = unsafe { *inv.add(r) };
        let mut c = team.group();
        while c < k {
            let xr = unsafe { *b.add(c * ldb + r) } * inv_r;
            let mut i = team.lane();
            while i < r {
                unsafe {
                    let dst = b.add(c * ldb + i);
                    *dst = (-*l.add(i * ldl + r)).mul_add(xr, *dst);
                }
                i += team.lanes();
            }
            c += team.groups();
        }
        team.sync();
    }
    unsafe { scale_rows(team, n, b, ldb, k, inv) };
}

/// `b[i][c] *= inv[i]`, then a barrier.
unsafe fn scale_rows<T: Real, M: Team>(team: M, n: usize, b: *mut T, ldb: usize, k: usize, inv: *const T) {
    super::for_each_entry(team, n, k, |i, c| unsafe {
        let dst = b.add(c * ldb + i);
        *dst *= *inv.add(i);
    });
    team.sync();
}

/// [`trsm_lower`] with one warp per right-hand-side column and no block barrier inside:
/// the rows of a column are split over the warp's lanes and each row step costs two warp
/// syncs instead of a block barrier, so a block with few columns (a solve with `k = 1`)
/// is not paced by barriers its idle warps must join. `L` is read down its columns
/// (consecutive lanes, consecutive addresses). Ends with a block barrier.
///
/// # Safety
/// As [`trsm_lower`], for the whole block ([`crate::team::Block`]).
pub unsafe fn trsm_lower_by_warps<T: Real>(l: *const T, ldl: usize, n: usize, b: *mut T, ldb: usize, k: usize, inv: *const T) {
    // SAFETY: forwarded from the caller.
    unsafe { by_warps(l, ldl, n, b, ldb, k, inv, false) }
}

/// [`trsm_lower_transposed`] with one warp per right-hand-side column, as
/// [`trsm_lower_by_warps`]; `L^T` is read along rows of `L` (stride `ldl` between lanes:
/// keep `ldl` odd in shared memory).
///
/// # Safety
/// As [`trsm_lower`], for the whole block ([`crate::team::Block`]).
pub unsafe fn trsm_lower_transposed_by_warps<T: Real>(l: *const T, ldl: usize, n: usize, b: *mut T, ldb: usize, k: usize, inv: *const T) {
    // SAFETY: forwarded from the caller.
    unsafe { by_warps(l, ldl, n, b, ldb, k, inv, true) }
}

/// The body of [`trsm_lower_by_warps`] (`transposed` false: forward with `L`, rows below
/// each pivot) and [`trsm_lower_transposed_by_warps`] (backward with `L^T`, rows above).
#[allow(clippy::too_many_arguments)] // the BLAS trsm argument list and the direction
#[inline(always)]
unsafe fn by_warps<T: Real>(l: *const T, ldl: usize, n: usize, b: *mut T, ldb: usize, k: usize, inv: *const T, transposed: bool) {
    use crate::team::{Block, Team};
    use blocktri_prims::sync_warp;
    let team = Block;
    let lane = team.lane();
    let mut c = team.group();
    while c < k {
        let col = unsafe { b.add(c * ldb) };
        for step in 0..n {
            let r = if transposed { n - 1 - step } else { step };
            // SAFETY (all accesses): inside the tiles (caller's contract); each entry of
            // the column has one writer per step, separated from its readers by the syncs.
            let y = unsafe { *col.add(r) * *inv.add(r) };
            sync_warp(); // every lane has read b[r] before it is overwritten
            if lane == 0 {
                unsafe { *col.add(r) = y };
            }
            let (mut i, end) = if transposed { (lane, r) } else { (r + 1 + lane, n) };
            while i < end {
                unsafe {
                    let coef = if transposed { *l.add(i * ldl + r) } else { *l.add(r * ldl + i) };
                    let dst = col.add(i);
                    *dst = (-coef).mul_add(y, *dst);
                }
                i += 32;
            }
            sync_warp(); // the next pivot's row is updated before every lane reads it
        }
        c += team.groups();
    }
    team.sync();
}
