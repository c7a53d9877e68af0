//! Inverse of a tridiagonal matrix by recursive Sherman–Morrison (first paper), any `n`.
//!
//! `A` has diagonal `a` (`n`), sub-diagonal `b` (`A[i+1][i] = b[i]`, `n - 1`) and
//! super-diagonal `c` (`A[i][i+1] = c[i]`, `n - 1`).
//!
//! **Tree.** Indices are grouped in aligned dyadic intervals: height 1 holds the pairs
//! `[2q, 2q+1]` (the leaves, inverted directly), height `h >= 2` the intervals
//! `[q 2^h, (q+1) 2^h)` clipped to `n`. A height-`h` interval whose midpoint
//! `mid = q 2^h + 2^(h-1)` is below `n` merges its two halves `P = [lo, mid)` and
//! `Q = [mid, hi)`: with `u = c[mid-1] e_{mid-1} + b[mid-1] e_mid` and
//! `v = e_{mid-1} + e_mid`, the interval's matrix is `diag(P', Q') + u v^T`, where `P'`
//! and `Q'` have the diagonal entries at the junction reduced by their own row's coupling
//! (`a[mid-1] - c[mid-1]`, `a[mid] - b[mid-1]`: Step 1 of the paper, all junctions at once).
//! Row diagonal dominance of `A` carries over to `P'` and `Q'`. Sherman–Morrison gives
//! `W = Z - alpha (Z u)(v^T Z)` with `Z = diag(P'^-1, Q'^-1)` and
//! `alpha = 1 / (1 + c[mid-1] W_P[mid-1][mid-1] + b[mid-1] W_Q[mid][mid])` (Step 3).
//!
//! **Stagewise** ([`stagewise`]): the paper's GPU scheme: the 2x2 inverses are written into
//! the dense output (Step 2), then one launch per height merges all intervals of that
//! height in place, one thread per output entry.
//!
//! **Fused** ([`fused`]): each merge only needs the first/last rows and columns of the
//! halves' inverses, so the recursion runs on those `O(n)` boundary vectors, storing for
//! every height `U_h[i] = alpha (Z u)_i` and `V_h[j] = (v^T Z)_j`. Then every entry is
//! written once: `W[i][j] = base(i, j) - sum_{h >= h0} U_h[i] V_h[j]`, where `h0` is the
//! height of the smallest interval holding both `i` and `j` and `base` is the leaf inverse
//! when they share a leaf. Away from the diagonal `h0` is the top height for half the
//! entries, so the average entry costs about two multiply-adds: the write is the cost.

pub mod fused;
pub mod stagewise;

use blocktri_prims::Real;

/// Arguments of the tridiagonal-inverse kernels. Batch `k` uses `a[k n..]`,
/// `b[k (n-1)..]`, `c[k (n-1)..]`, `w[k n n..]` and `status[k]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TridiagArgs<T> {
    /// Diagonals.
    pub a: *const T,
    /// Sub-diagonals.
    pub b: *const T,
    /// Super-diagonals.
    pub c: *const T,
    /// Output inverses (column-major, leading dimension `n`).
    pub w: *mut T,
    /// Work space: [`fused::work_len`] values per matrix for the fused method, `2 n` for
    /// the stagewise one.
    pub work: *mut T,
    /// Per-matrix status: `u32::MAX`, or the smallest failing row (see [`status_key`]).
    pub status: *mut u32,
    /// Matrix size.
    pub n: u32,
    /// Number of matrices.
    pub batch: u32,
    /// Height being merged.
    pub height: u32,
    /// Top height `H` (`2^H >= n`).
    pub top: u32,
    /// First output column of an assembly panel (a multiple of
    /// [`fused::ASSEMBLE_TILE`]; 0 for the whole inverse).
    pub col0: u32,
    /// Columns of the panel (`n` for the whole inverse). Panel `k` of the batch is stored
    /// at `w[k n cols..]`, column-major with leading dimension `n`.
    pub cols: u32,
}

/// Status value for a zero pivot at row `row`: `2 * row` for a singular 2x2 leaf block
/// starting at `row`, `2 * row + 1` for a zero Sherman–Morrison denominator at the
/// junction `row - 1 | row`.
#[inline(always)]
pub const fn status_key(row: u32, merge: bool) -> u32 {
    2 * row + merge as u32
}

/// Heights of the tree for size `n`: `ceil(log2 n)` (0 for `n <= 1`).
#[inline(always)]
pub const fn top_height(n: u32) -> u32 {
    if n <= 1 { 0 } else { 32 - (n - 1).leading_zeros() }
}

/// Modified diagonal entry `a'[i]` (Step 1): reduced by `c[i]` when `i` ends a merged
/// half (`i` odd, `i + 1 < n`) and by `b[i-1]` when it starts one (`i` even, `i >= 2`).
///
/// # Safety
/// `a`, `b`, `c` hold `n`, `n - 1`, `n - 1` values and `i < n`.
#[inline(always)]
pub unsafe fn modified_diagonal<T: Real>(a: *const T, b: *const T, c: *const T, n: usize, i: usize) -> T {
    let mut d = unsafe { *a.add(i) };
    if i % 2 == 1 && i + 1 < n {
        d -= unsafe { *c.add(i) };
    }
    if i.is_multiple_of(2) && i >= 2 {
        d -= unsafe { *b.add(i - 1) };
    }
    d
}

/// Inverse of leaf `q` (`[2q, 2q+1]`, or `[2q]` at the end of an odd `n`), as
/// `[[w00, w01], [w10, w11]]` (`w01 = w10 = w11 = 0` for a 1x1 leaf), or `None` when the
/// leaf is singular.
///
/// # Safety
/// As [`modified_diagonal`], with `2q < n`.
#[inline(always)]
pub unsafe fn leaf_inverse<T: Real>(a: *const T, b: *const T, c: *const T, n: usize, q: usize) -> Option<[T; 4]> {
    let i = 2 * q;
    let d0 = unsafe { modified_diagonal(a, b, c, n, i) };
    if i + 1 >= n {
        return if d0 != T::ZERO && d0.is_finite() { Some([T::ONE / d0, T::ZERO, T::ZERO, T::ZERO]) } else { None };
    }
    let d1 = unsafe { modified_diagonal(a, b, c, n, i + 1) };
    let (up, lo) = unsafe { (*c.add(i), *b.add(i)) };
    let det = d0 * d1 - up * lo;
    if !(det != T::ZERO && det.is_finite()) {
        return None;
    }
    let r = T::ONE / det;
    Some([d1 * r, -up * r, -lo * r, d0 * r])
}

/// The merge at height `h` around index `i`: `(lo, mid, hi)` of its interval (`hi`
/// clipped to `n`), or `None` if the interval has no junction (`mid >= n`).
#[inline(always)]
pub const fn junction(i: u32, h: u32, n: u32) -> Option<(u32, u32, u32)> {
    let lo = (i >> h) << h;
    let mid = lo + (1 << (h - 1));
    if mid >= n {
        return None;
    }
    let hi = lo + (1 << h);
    Some((lo, mid, if hi < n { hi } else { n }))
}
