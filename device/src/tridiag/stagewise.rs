//! The paper's scheme: dense 2x2 inverses, then one in-place merge launch per height with
//! one thread per output entry.

use super::{TridiagArgs, junction, leaf_inverse, status_key};
use blocktri_prims::{Real, atomic, block_dim_x, block_idx_x, block_idx_y, thread_idx_x};

/// Steps 1-2: one thread per leaf writes the leaf's inverse into `w`.
///
/// # Safety
/// Grid `x` covers `ceil(n / 2)` threads, `y` the batch; arrays as in [`TridiagArgs`].
pub unsafe fn leaves<T: Real>(args: &TridiagArgs<T>) {
    let a = *args;
    let (n, k) = (a.n as usize, block_idx_y() as usize);
    let q = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if 2 * q >= n {
        return;
    }
    let (av, bv, cv) = unsafe { (a.a.add(k * n), a.b.add(k * (n - 1)), a.c.add(k * (n - 1))) };
    let w = unsafe { a.w.add(k * n * n) };
    let i = 2 * q;
    match unsafe { leaf_inverse(av, bv, cv, n, q) } {
        Some(inv) => unsafe {
            *w.add(i * n + i) = inv[0];
            if i + 1 < n {
                *w.add((i + 1) * n + i) = inv[1];
                *w.add(i * n + i + 1) = inv[2];
                *w.add((i + 1) * n + i + 1) = inv[3];
            }
        },
        None => unsafe {
            atomic::atomic_min_u32(a.status.add(k), status_key(i as u32, false));
        },
    }
}

/// Step 3, part 1: copies the boundary column and row every index needs for the merge at
/// `args.height` into `work` (`col` then `row`, `n` each per matrix): for `i` in the left
/// half, `W[i][mid-1]` and `W[mid-1][i]`; in the right half, `W[i][mid]` and `W[mid][i]`.
///
/// # Safety
/// Grid `x` covers `n` threads, `y` the batch; `work` holds `2 n` per matrix.
pub unsafe fn extract<T: Real>(args: &TridiagArgs<T>) {
    let a = *args;
    let (n, k) = (a.n, block_idx_y() as usize);
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    if i >= n {
        return;
    }
    let Some((_, mid, _)) = junction(i, a.height, n) else { return };
    let nn = n as usize;
    let w = unsafe { a.w.add(k * nn * nn) };
    let (col, row) = unsafe { (a.work.add(k * 2 * nn), a.work.add(k * 2 * nn + nn)) };
    let pivot = if i < mid { mid - 1 } else { mid } as usize;
    let i = i as usize;
    unsafe {
        *col.add(i) = *w.add(pivot * nn + i);
        *row.add(i) = *w.add(i * nn + pivot);
    }
}

/// Step 3, part 2: one thread per entry `(i, j)` of the merged intervals of height
/// `args.height`: `W[i][j] = Z[i][j] - alpha (Z u)_i (v^T Z)_j`, in place (entries of the
/// two halves are updated, the coupling quadrants written for the first time).
///
/// # Safety
/// Grid `x` covers `n * 2^height` threads, `y` the batch; run after [`extract`].
pub unsafe fn merge<T: Real>(args: &TridiagArgs<T>) {
    let a = *args;
    let (n, h, k) = (a.n, a.height, block_idx_y() as usize);
    let e = block_idx_x() as u64 * block_dim_x() as u64 + thread_idx_x() as u64;
    let side = 1u64 << h;
    // Entry e: interval q = e / side^2, local row e % side, local column (e / side) % side.
    let (q, li, lj) = (e / (side * side), e % side, (e / side) % side);
    let (i, j) = (q * side + li, q * side + lj);
    if i >= n as u64 || j >= n as u64 {
        return;
    }
    let (i, j) = (i as u32, j as u32);
    let Some((_, mid, _)) = junction(i, h, n) else { return };
    let nn = n as usize;
    let w = unsafe { a.w.add(k * nn * nn) };
    let (col, row) = unsafe { (a.work.add(k * 2 * nn), a.work.add(k * 2 * nn + nn)) };
    let (bv, cv) = unsafe { (a.b.add(k * (nn - 1)), a.c.add(k * (nn - 1))) };
    let m = (mid - 1) as usize;
    let (ct, bt) = unsafe { (*cv.add(m), *bv.add(m)) };
    let denom = unsafe { T::ONE + ct * *col.add(m) + bt * *col.add(m + 1) };
    if !(denom != T::ZERO && denom.is_finite()) {
        if i == mid && j == mid {
            unsafe { atomic::atomic_min_u32(a.status.add(k), status_key(mid, true)) };
        }
        return;
    }
    let alpha = T::ONE / denom;
    let zu = (if i < mid { ct } else { bt }) * unsafe { *col.add(i as usize) };
    let vz = unsafe { *row.add(j as usize) };
    let dst = unsafe { w.add(j as usize * nn + i as usize) };
    let z = if (i < mid) == (j < mid) { unsafe { *dst } } else { T::ZERO };
    unsafe { *dst = (-alpha * zu).mul_add(vz, z) };
}
