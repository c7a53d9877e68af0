//! Strided copies between arrays that callers hold in device memory (PyTorch, CuPy and
//! JAX tensors, reached through DLPack, or a Rust caller's own buffers) and the solver's
//! layouts, so that data already on the GPU never cross PCIe.
//!
//! Every array here has four axes, `(system, block, row, column)`: a matrix's blocks
//! (`column` the block column), or right-hand sides (`column` the right-hand side). A
//! missing axis has extent 1 and any stride. One kernel covers every direction: the
//! caller's row-major `(S, N, n, n)` blocks into the solver's column-major blocks of
//! leading dimension `ld` (strides `(N ld n, ld n, 1, ld)`, rows `n..ld` zero-filled),
//! right-hand sides `(S, N, n, k)` into the solver's `(S, k, N n)` and the solutions back.

use blocktri_prims::{Real, block_dim_x, global_idx_x, grid_dim_x};

/// Threads of a [`strided_copy`] block.
pub const COPY_THREADS: u32 = 256;

/// Arguments of [`strided_copy`]: `dst[i] = src[i]` for every index `i = (a, b, r, c)`
/// below `extents`, each array at `sum(i[k] strides[k])` elements from its start.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StridedCopyArgs<T> {
    /// Source array (device address of the element at index 0).
    pub src: *const T,
    /// Destination array.
    pub dst: *mut T,
    /// Extents of the four axes; axis 2 (rows) counts the destination's rows, padding
    /// included.
    pub extents: [u32; 4],
    /// Element strides of the source (may be negative or zero).
    pub src_strides: [i64; 4],
    /// Element strides of the destination (no two indices may meet).
    pub dst_strides: [i64; 4],
    /// Rows at or past this index are padding: written as zero, the source not read.
    pub valid_rows: u32,
}

/// The offset of index `i` in an array with `strides`.
#[inline(always)]
fn offset(i: [u64; 4], strides: [i64; 4]) -> isize {
    (i[0] as i64 * strides[0] + i[1] as i64 * strides[1] + i[2] as i64 * strides[2] + i[3] as i64 * strides[3]) as isize
}

/// Copies as [`StridedCopyArgs`] says, one element per thread and grid-stride loop; rows
/// (axis 2) vary fastest between neighbouring threads, so that the solver's column-major
/// side is read or written in whole rows of memory.
///
/// # Safety
/// 1-D launch of any shape; every index below `extents` addresses an element inside
/// `src` (for rows below `valid_rows`) and inside `dst`, and no two indices address the
/// same `dst` element (otherwise the result depends on thread order). The arrays do not
/// overlap.
pub unsafe fn strided_copy<T: Real>(args: &StridedCopyArgs<T>) {
    let a = *args;
    let [e0, e1, e2, e3] = a.extents.map(|e| e as u64);
    let count = e0 * e1 * e2 * e3;
    let step = grid_dim_x() as u64 * block_dim_x() as u64;
    let mut i = global_idx_x() as u64;
    while i < count {
        let (r, rest) = (i % e2, i / e2);
        let (c, rest) = (rest % e3, rest / e3);
        let index = [rest / e1, rest % e1, r, c];
        // SAFETY: inside both arrays by the caller's contract; padding rows not read.
        unsafe {
            let v = if r < a.valid_rows as u64 { *a.src.offset(offset(index, a.src_strides)) } else { T::ZERO };
            *a.dst.offset(offset(index, a.dst_strides)) = v;
        }
        i += step;
    }
}
