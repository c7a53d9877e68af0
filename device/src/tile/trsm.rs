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
