//! Matrix products `C = A B` over tiles with arbitrary strides (so `A^T`, `B^T` are free),
//! handing each entry of `C` to a callback: the caller decides whether it is stored,
//! subtracted, or added atomically to global memory. `syrk` is the case `B = A^T`.

use crate::team::Team;
use blocktri_prims::Real;

/// A read-only strided matrix view: element `(i, j)` is at `ptr[i * row_stride + j * col_stride]`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<T> {
    /// First element.
    pub ptr: *const T,
    /// Distance between consecutive rows.
    pub row_stride: usize,
    /// Distance between consecutive columns.
    pub col_stride: usize,
}

impl<T: Copy> MatRef<T> {
    /// A column-major matrix with leading dimension `ld`.
    #[inline(always)]
    pub fn col_major(ptr: *const T, ld: usize) -> Self {
        MatRef { ptr, row_stride: 1, col_stride: ld }
    }
    /// The transpose of this view.
    #[inline(always)]
    pub fn t(self) -> Self {
        MatRef { ptr: self.ptr, row_stride: self.col_stride, col_stride: self.row_stride }
    }
    /// Element `(i, j)`.
    ///
    /// # Safety
    /// `(i, j)` must be inside the viewed matrix.
    #[inline(always)]
    pub unsafe fn at(&self, i: usize, j: usize) -> T {
        unsafe { *self.ptr.add(i * self.row_stride + j * self.col_stride) }
    }
}

/// For every entry of `C = A B` (`A`: `m x kk`, `B`: `kk x n`), calls `emit(i, j, c_ij)`
/// exactly once, on the thread that computed it. Each thread computes a 2x2 block of
/// `C` at a time (rows `i, i + lanes`, columns `j, j + groups`), reusing each loaded `A`
/// and `B` value twice. No barrier.
///
/// # Safety
/// The views must cover the index ranges; `emit` must be safe to call concurrently for
/// distinct `(i, j)`.
#[inline(always)]
pub unsafe fn product<T: Real, M: Team>(
    team: M,
    m: usize,
    n: usize,
    kk: usize,
    a: MatRef<T>,
    b: MatRef<T>,
    mut emit: impl FnMut(usize, usize, T),
) {
    let (lanes, groups) = (team.lanes(), team.groups());
    let mut j0 = team.group();
    while j0 < n {
        let j1 = j0 + groups;
        let jb = if j1 < n { j1 } else { j0 };
        let mut i0 = team.lane();
        while i0 < m {
            let i1 = i0 + lanes;
            let ib = if i1 < m { i1 } else { i0 };
            let (mut c00, mut c10, mut c01, mut c11) = (T::ZERO, T::ZERO, T::ZERO, T::ZERO);
            for k in 0..kk {
                let (a0, a1, b0, b1) = unsafe { (a.at(i0, k), a.at(ib, k), b.at(k, j0), b.at(k, jb)) };
                c00 = a0.mul_add(b0, c00);
                c10 = a1.mul_add(b0, c10);
                c01 = a0.mul_add(b1, c01);
                c11 = a1.mul_add(b1, c11);
            }
            emit(i0, j0, c00);
            if i1 < m {
                emit(i1, j0, c10);
            }
            if j1 < n {
                emit(i0, j1, c01);
                if i1 < m {
                    emit(i1, j1, c11);
                }
            }
            i0 += 2 * lanes;
        }
        j0 += 2 * groups;
    }
}
