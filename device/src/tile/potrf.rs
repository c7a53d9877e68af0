//! Cholesky factorization of a panel: `potrf` of the top `n x n` block fused with the
//! triangular solve (`trsm`, right side, lower transposed) of the rows below it.

use crate::team::Team;
use blocktri_prims::{Real, atomic};

/// Returned by [`potrf_panel`] when every pivot was positive.
pub const NO_FAILURE: u32 = u32::MAX;

/// Factors a `rows x n` panel `P = [D; B]` in place (`rows >= n`, column-major, leading
/// dimension `ldp`): afterwards the lower triangle of the top `n x n` block is `L` with
/// `D = L L^T`, and the rows below hold `B L^-T`. The strict upper triangle of `D` is
/// neither read nor written.
///
/// It is right-looking over the whole panel, one barrier per column: step `k` updates
/// `P[i][j] -= P[i][k] P[j][k] / d_k` for `i, j > k` using the unscaled column `k`; the
/// columns are scaled by `1 / sqrt(d_k)` at the end. Thread rank 0 computes each next
/// pivot's reciprocal square root right after its own update of that pivot.
///
/// `scratch` holds `2 n` values (per-pivot `1/sqrt(d)` and `sqrt(d)`); `status` is one
/// `u32` of scratch. Returns [`NO_FAILURE`], or the index of the first pivot that was not
/// positive and finite (the results are then meaningless). The return value is the same
/// on every thread.
///
/// # Safety
/// `p` must hold `rows x n` elements at leading dimension `ldp >= rows`, `scratch` `2 n`
/// elements and `status` one `u32`, all visible to the whole team (shared memory for a
/// `Block`), and no other thread may access them during the call. Every thread of the team
/// must call it with the same arguments.
pub unsafe fn potrf_panel<T: Real, M: Team>(
    team: M,
    p: *mut T,
    ldp: usize,
    n: usize,
    rows: usize,
    scratch: *mut T,
    status: *mut u32,
) -> u32 {
    let rsqrt = scratch;
    let sqrt = unsafe { scratch.add(n) };
    let at = move |i: usize, j: usize| unsafe { p.add(j * ldp + i) };
    // Record pivot k: its 1/sqrt and sqrt, or a failure.
    let pivot = move |k: usize| unsafe {
        let d = *at(k, k);
        if !(d > T::ZERO && d.is_finite()) {
            atomic::atomic_min_u32(status, k as u32);
        }
        // One short dependent chain (approximate rsqrt + Newton), not IEEE sqrt + div:
        // this runs once per column on the critical path while the block waits.
        let r = d.rsqrt_fast();
        *sqrt.add(k) = d * r;
        *rsqrt.add(k) = r;
    };
    if team.rank() == 0 {
        unsafe { *status = NO_FAILURE };
        pivot(0);
    }
    team.sync();
    for k in 0..n {
        let r = unsafe { *rsqrt.add(k) };
        let inv_d = r * r;
        let first = k + 1;
        // Trailing update of columns k+1..n over rows k+1..rows (lower part of D only).
        let mut j = first + team.group();
        while j < n {
            let ljk = unsafe { *at(j, k) } * inv_d;
            let mut i = first + team.lane();
            // Rows of D above the diagonal are skipped: start at j.
            if i < j {
                i += (j - i).div_ceil(team.lanes()) * team.lanes();
            }
            while i < rows {
                unsafe {
                    let dst = at(i, j);
                    *dst = (-*at(i, k)).mul_add(ljk, *dst);
                }
                i += team.lanes();
            }
            j += team.groups();
        }
        // Rank 0 updated entry (k+1, k+1) itself (lane 0 of group 0 starts there).
        if team.rank() == 0 && first < n {
            pivot(first);
        }
        team.sync();
    }
    // Scale: column j below the diagonal by 1/sqrt(d_j); the diagonal becomes sqrt(d_j).
    let mut j = team.group();
    while j < n {
        let (r, s) = unsafe { (*rsqrt.add(j), *sqrt.add(j)) };
        let mut i = j + team.lane();
        while i < rows {
            unsafe {
                let dst = at(i, j);
                *dst = if i == j { s } else { *dst * r };
            }
            i += team.lanes();
        }
        j += team.groups();
    }
    team.sync();
    unsafe { *status }
}
