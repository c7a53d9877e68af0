//! The boundary-vector recursion and the single-pass assembly of the inverse.
//!
//! Work layout per matrix (`n` values each): three sets of boundary vectors
//! `[fc, lc, fr, lr]` (first/last column, first/last row of the inverse of each index's
//! interval): the leaves' (height 1, kept for the assembly) and two ping-pong sets for
//! heights `>= 2`; then `U_h` and `V_h` for `h = 0..=top` (heights 0 and 1 stay unused so
//! that `h` indexes directly).

use super::{TridiagArgs, junction, leaf_inverse, status_key};
use crate::team::{Block, Team};
use blocktri_prims::{Real, atomic, block_dim_x, block_idx_x, block_idx_y, shared, thread_idx_x};

/// Values of `work` per matrix.
pub const fn work_len(n: usize, top: usize) -> usize {
    12 * n + 2 * (top + 1) * n
}

struct Work<T> {
    base: *mut T,
    n: usize,
}

impl<T: Real> Work<T> {
    /// Boundary vector `which` (0 fc, 1 lc, 2 fr, 3 lr) of height `h`.
    #[inline(always)]
    fn bound(&self, h: u32, which: usize) -> *mut T {
        let set = if h == 1 { 0 } else { 1 + h as usize % 2 };
        unsafe { self.base.add((set * 4 + which) * self.n) }
    }
    #[inline(always)]
    fn u(&self, h: u32) -> *mut T {
        unsafe { self.base.add((12 + 2 * h as usize) * self.n) }
    }
    #[inline(always)]
    fn v(&self, h: u32) -> *mut T {
        unsafe { self.base.add((13 + 2 * h as usize) * self.n) }
    }
}

#[inline(always)]
fn work_of<T: Real>(a: &TridiagArgs<T>, k: usize) -> Work<T> {
    let n = a.n as usize;
    Work { base: unsafe { a.work.add(k * work_len(n, a.top as usize)) }, n }
}

/// Steps 1-2: one thread per leaf writes the height-1 boundary vectors of its indices.
///
/// # Safety
/// Grid `x` covers `ceil(n / 2)` threads, `y` the batch.
pub unsafe fn leaves<T: Real>(args: &TridiagArgs<T>) {
    let a = *args;
    let (n, k) = (a.n as usize, block_idx_y() as usize);
    let q = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
    if 2 * q >= n {
        return;
    }
    let (av, bv, cv) = unsafe { (a.a.add(k * n), a.b.add(k * (n.max(1) - 1)), a.c.add(k * (n.max(1) - 1))) };
    let w = work_of(&a, k);
    let i = 2 * q;
    let Some([w00, w01, w10, w11]) = (unsafe { leaf_inverse(av, bv, cv, n, q) }) else {
        unsafe { atomic::atomic_min_u32(a.status.add(k), status_key(i as u32, false)) };
        return;
    };
    let set = |idx: usize, fc: T, lc: T, fr: T, lr: T| unsafe {
        *w.bound(1, 0).add(idx) = fc;
        *w.bound(1, 1).add(idx) = lc;
        *w.bound(1, 2).add(idx) = fr;
        *w.bound(1, 3).add(idx) = lr;
    };
    if i + 1 < n {
        set(i, w00, w01, w00, w10);
        set(i + 1, w10, w11, w01, w11);
    } else {
        set(i, w00, w00, w00, w00);
    }
}

/// Step 3 on boundary vectors: one thread per index computes its height-`h` boundary
/// values and `U_h`, `V_h` from height `h - 1`.
///
/// # Safety
/// Grid `x` covers `n` threads, `y` the batch; heights below `h` done.
pub unsafe fn merge<T: Real>(args: &TridiagArgs<T>) {
    let a = *args;
    let (n, h, k) = (a.n, a.height, block_idx_y() as usize);
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    if i >= n {
        return;
    }
    let w = work_of(&a, k);
    let iu = i as usize;
    let prev = |which: usize, idx: u32| unsafe { *w.bound(h - 1, which).add(idx as usize) };
    let Some((lo, mid, hi)) = junction(i, h, n) else {
        // No merge: the interval's inverse is its only child's.
        for which in 0..4 {
            unsafe { *w.bound(h, which).add(iu) = prev(which, i) };
        }
        unsafe {
            *w.u(h).add(iu) = T::ZERO;
            *w.v(h).add(iu) = T::ZERO;
        }
        return;
    };
    let nn = n as usize;
    let (bv, cv) = unsafe { (a.b.add(k * (nn - 1)), a.c.add(k * (nn - 1))) };
    let m = (mid - 1) as usize;
    let (ct, bt) = unsafe { (*cv.add(m), *bv.add(m)) };
    let last = hi - 1;
    // lc/lr of the left half are about its last index mid-1; fc/fr of the right half about mid.
    let denom = T::ONE + ct * prev(1, mid - 1) + bt * prev(0, mid);
    if !(denom != T::ZERO && denom.is_finite()) {
        if i == mid {
            unsafe { atomic::atomic_min_u32(a.status.add(k), status_key(mid, true)) };
        }
        return;
    }
    let alpha = T::ONE / denom;
    // (Z u)_x and (v^T Z)_x for any index x of the interval.
    let zu = |x: u32| if x < mid { ct * prev(1, x) } else { bt * prev(0, x) };
    let vz = |x: u32| if x < mid { prev(3, x) } else { prev(2, x) };
    let in_left = i < mid;
    let (zu_i, vz_i) = (alpha * zu(i), vz(i));
    unsafe {
        *w.u(h).add(iu) = zu_i;
        *w.v(h).add(iu) = vz_i;
        // First column: Z[i][lo] - alpha (Zu)_i (vZ)_lo; Z[i][lo] = fc_P[i] on the left half.
        *w.bound(h, 0).add(iu) = (-zu_i).mul_add(vz(lo), if in_left { prev(0, i) } else { T::ZERO });
        // Last column: Z[i][last] = lc_Q[i] on the right half.
        *w.bound(h, 1).add(iu) = (-zu_i).mul_add(vz(last), if in_left { T::ZERO } else { prev(1, i) });
        // First row: Z[lo][i] = fr_P[i] on the left half.
        *w.bound(h, 2).add(iu) = (-alpha * zu(lo)).mul_add(vz_i, if in_left { prev(2, i) } else { T::ZERO });
        // Last row: Z[last][i] = lr_Q[i] on the right half.
        *w.bound(h, 3).add(iu) = (-alpha * zu(last)).mul_add(vz_i, if in_left { T::ZERO } else { prev(3, i) });
    }
}

/// Rows and columns of the output tile of one [`assemble`] block.
pub const ASSEMBLE_TILE: u32 = 64;
/// Threads of one [`assemble`] block.
pub const ASSEMBLE_THREADS: u32 = 256;

/// Shared memory of [`assemble`]: `U` and `V` for the tile's rows and columns, all heights.
pub const fn assemble_shared_bytes(top: usize, elem_bytes: usize) -> usize {
    2 * (top + 1) * ASSEMBLE_TILE as usize * elem_bytes
}

/// Writes a 64x64 tile of the inverse: `W[i][j] = base(i, j) - sum_{h >= max(h0, 2)} U_h[i] V_h[j]`,
/// with `h0` the bit length of `i ^ j` and `base` the leaf inverse entry when `h0 <= 1`.
/// `U` and `V` of the tile are staged in shared memory; a warp writes 32 consecutive rows
/// of one column.
///
/// Only the column panel `[col0, col0 + cols)` is written, to `w` laid out as the
/// panel alone (`n x cols` per matrix): the host streams a large inverse to its memory
/// panel by panel.
///
/// # Safety
/// Grid `x` = row tiles times the panel's column tiles (tile row fastest), `y` the batch;
/// [`ASSEMBLE_THREADS`] threads; [`assemble_shared_bytes`]; all heights merged.
pub unsafe fn assemble<T: Real>(args: &TridiagArgs<T>) {
    let a = *args;
    let team = Block;
    let (n, top, k) = (a.n, a.top, block_idx_y() as usize);
    let tiles = n.div_ceil(ASSEMBLE_TILE);
    let (ti, tj) = (block_idx_x() % tiles, block_idx_x() / tiles);
    let (i0, j0) = (ti * ASSEMBLE_TILE, a.col0 + tj * ASSEMBLE_TILE);
    let col_end = n.min(a.col0 + a.cols);
    let w = work_of(&a, k);
    let tile = ASSEMBLE_TILE as usize;
    let smem = shared::dynamic_shared::<T>();
    let heights = top as usize + 1;
    let (su, sv) = (smem, unsafe { smem.add(heights * tile) });
    // The smallest height any pair of this tile can start at: equal for every pair of an
    // off-diagonal tile.
    let h_tile = if ti == tj { 0 } else { 32 - (i0 ^ j0).leading_zeros() };
    let h_first = if h_tile < 2 { 2 } else { h_tile };
    crate::tile::for_each_index(team, heights * tile, |e| unsafe {
        let (r, h) = (e % tile, (e / tile) as u32);
        if h >= h_first && h <= top {
            let (gi, gj) = (i0 as usize + r, j0 as usize + r);
            *su.add(e) = if gi < n as usize { *w.u(h).add(gi) } else { T::ZERO };
            *sv.add(e) = if gj < n as usize { *w.v(h).add(gj) } else { T::ZERO };
        }
    });
    team.sync();
    let nn = n as usize;
    let out = unsafe { a.w.add(k * nn * a.cols as usize) };
    let r = team.rank() % tile;
    let i = i0 + r as u32;
    if i >= n {
        return;
    }
    let mut c = team.rank() / tile;
    while c < tile {
        let j = j0 + c as u32;
        if j >= col_end {
            break;
        }
        let h0 = if i == j { 0 } else { 32 - (i ^ j).leading_zeros() };
        let mut acc = if h0 <= 1 {
            // Same leaf: the leaf inverse is the first (j even) or last (j odd) column.
            unsafe { *w.bound(1, (j % 2) as usize).add(i as usize) }
        } else {
            T::ZERO
        };
        let mut h = if h0 < 2 { 2 } else { h0 };
        while h <= top {
            let idx = h as usize * tile;
            acc = unsafe { (-*su.add(idx + r)).mul_add(*sv.add(idx + c), acc) };
            h += 1;
        }
        unsafe { *out.add((j - a.col0) as usize * nn + i as usize) = acc };
        c += ASSEMBLE_THREADS as usize / tile;
    }
}
