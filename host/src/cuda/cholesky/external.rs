//! Inputs and outputs in the caller's own layouts, without a layout pass on the host:
//! row-major blocks in host memory (numpy's and PyTorch's `(S, N, n, n)` arrays), and
//! arrays the caller keeps in device memory with any strides (PyTorch, CuPy or JAX tensors
//! reached through DLPack, or a Rust caller's own device buffers). The layout changes run
//! on the device ([`blocktri_device::copy::strided_copy`]), so data already on the GPU
//! never cross PCIe and host data cross it once, as they are.

use super::GpuCholesky;
use crate::cuda::launch::{DevicePtr, LaunchConfig};
use crate::error::{Error, Result, shape_err};
use crate::matrix::{Shape, check_block_arrays, check_rhs_finite};
use crate::scalar::Scalar;
use blocktri_device::copy::{COPY_THREADS, StridedCopyArgs};
use blocktri_device::kernels::{kernel_name, names};

/// An array in device memory that the caller owns, as four axes
/// `(system, block, row, column)`: a matrix's blocks (`column` = column of the block) or
/// right-hand sides and solutions (`column` = which right-hand side). A missing axis
/// (no batch, one right-hand side) has extent 1 and any stride.
///
/// ```
/// use blocktri::cuda::DeviceArray;
/// // (N, n, n) = (100, 8, 8) blocks in C order (numpy's, PyTorch's default).
/// let a = DeviceArray::row_major(0x7f00_0000_0000, 100, 8, 8);
/// assert_eq!(a.strides, [6400, 64, 8, 1]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceArray {
    /// Device address of the element at index `(0, 0, 0, 0)`.
    pub addr: u64,
    /// Element (not byte) strides of the axes `(system, block, row, column)`; negative and
    /// zero strides are allowed.
    pub strides: [i64; 4],
}

impl DeviceArray {
    /// A C-contiguous `(S, blocks, rows, cols)` array at `addr`.
    pub fn row_major(addr: u64, blocks: usize, rows: usize, cols: usize) -> Self {
        let (b, r, c) = (blocks as i64, rows as i64, cols as i64);
        DeviceArray { addr, strides: [b * r * c, r * c, c, 1] }
    }
}

/// Strides of the solver's blocks: column-major, leading dimension `ld`, `blocks` per system.
fn block_strides(blocks: usize, ld: usize, n: usize) -> [i64; 4] {
    let (b, ld, n) = (blocks as i64, ld as i64, n as i64);
    [b * ld * n, ld * n, 1, ld]
}

/// Strides of the solver's right-hand sides: per system `k` columns of `N n` rows.
fn rhs_strides(shape: Shape, k: usize) -> [i64; 4] {
    let (d, n) = (shape.dim() as i64, shape.block as i64);
    [k as i64 * d, n, 1, d]
}

impl<T: Scalar> GpuCholesky<T> {
    /// Copies the matrices from host arrays of row-major blocks (`diag[s][i][r][c] =
    /// A_ii[r, c]`, `sub[s][i][r][c] = A[i+1, i][r, c]`: C-order `(S, N, n, n)` and
    /// `(S, N-1, n, n)` arrays, numpy's layout) to the device plan without factoring; the
    /// blocks are transposed into the solver's layout on the device. Then
    /// [`Self::factor_uploaded`].
    ///
    /// ```no_run
    /// use blocktri::{cuda::GpuCholesky, Shape};
    /// let shape = Shape::new(1, 3, 2).unwrap();
    /// let diag = [4.0, 1.0, 1.0, 4.0].repeat(3);
    /// let sub = [1.0, 0.0, 0.5, 1.0].repeat(2); // A[i+1, i] = [[1, 0], [0.5, 1]]
    /// let mut g = GpuCholesky::<f64>::new().unwrap();
    /// g.upload_row_major(shape, &diag, &sub).unwrap();
    /// g.factor_uploaded().unwrap();
    /// ```
    pub fn upload_row_major(&mut self, shape: Shape, diag: &[T], sub: &[T]) -> Result<()> {
        let (s, nb, n) = (shape.batch, shape.nblocks, shape.block);
        check_block_arrays(shape, n, diag.len(), sub.len())?;
        self.plan_for_input(shape, None)?;
        let plan = self.plan.as_ref().expect("plan exists");
        let b = &plan.bufs;
        // The factor's working blocks serve as the landing area: the next factorization
        // overwrites them anyway.
        for (values, scratch, blocks, dst) in [(diag, &b.left, nb, &b.diag_in), (sub, &b.right, nb - 1, &b.sub_in)] {
            self.upload_to(values, scratch)?;
            let src = DeviceArray::row_major(scratch.ptr().addr(), blocks, n, n);
            // SAFETY: `scratch` holds the `S blocks n n` values just uploaded; `dst` is a plan
            // buffer of `S blocks` blocks of `ld x n`.
            unsafe { self.launch_copy(src, dst.ptr(), block_strides(blocks, b.ld, n), [s, blocks, b.ld, n], n)? };
        }
        Ok(())
    }

    /// [`Self::upload_row_major`] from arrays in device memory with any strides
    /// (`(system, block, row, column)` of the diagonal blocks and of the sub-diagonal blocks
    /// `A[i+1, i]`): a device-to-device copy into the plan, nothing through the host.
    /// Non-finite or asymmetric values are reported by the factorization, as for host input.
    ///
    /// # Safety
    /// Every element of both arrays that `shape` indexes is device memory of this solver's
    /// GPU holding a `T`, ready in the order of [`Self::stream`] (make that stream wait
    /// for the arrays' producers) and left unchanged until the factorization has run.
    pub unsafe fn upload_device(&mut self, shape: Shape, diag: DeviceArray, sub: DeviceArray) -> Result<()> {
        self.plan_for_input(shape, None)?;
        let b = &self.plan.as_ref().expect("plan exists").bufs;
        let (s, nb, n) = (shape.batch, shape.nblocks, shape.block);
        for (src, blocks, dst) in [(diag, nb, &b.diag_in), (sub, nb - 1, &b.sub_in)] {
            // SAFETY: the caller's contract for `src`; `dst` as in `upload_row_major`.
            unsafe { self.launch_copy(src, dst.ptr(), block_strides(blocks, b.ld, n), [s, blocks, b.ld, n], n)? };
        }
        Ok(())
    }

    /// Solves for right-hand sides in host memory laid out as a [`crate::BlockVec`]'s
    /// values (per system `k` columns of `N n` values; for `k = 1` the C-order `(S, N, n)`
    /// array itself) with the current factor, writing the solutions into `out` (same
    /// layout): no copy beside the pinned staging. Errors as [`crate::Factorization::solve`].
    ///
    /// ```no_run
    /// use blocktri::{cuda::GpuCholesky, generate, Factorization};
    /// let a = generate::random_spd::<f64>(1, 64, 4, 1).unwrap();
    /// let mut g = GpuCholesky::<f64>::new().unwrap();
    /// g.factor(&a).unwrap();
    /// let (rhs, mut x) = (vec![1.0; 256], vec![0.0; 256]);
    /// g.solve_slices(&rhs, 1, &mut x).unwrap();
    /// ```
    pub fn solve_slices(&mut self, rhs: &[T], k: usize, out: &mut [T]) -> Result<()> {
        let shape = self.factored_plan().ok_or(Error::NotFactored)?.bufs.shape;
        let len = shape.batch * shape.dim() * k;
        if k == 0 || rhs.len() != len || out.len() != len {
            shape_err!("{shape} with {k} right-hand sides needs {len} values in and out, got {} and {}", rhs.len(), out.len());
        }
        check_rhs_finite(shape, k, rhs)?;
        self.upload_rhs_slice(rhs, k)?;
        self.launch_solve()?;
        self.download_rhs_slice(out)?;
        self.check_solve()
    }

    /// Solves for `k` right-hand sides in device memory (`(system, block, row, column)`
    /// strides) with the current factor and writes the solutions into `out` (any strides,
    /// the same four axes): device-to-device copies around the solve, nothing through the
    /// host; returns once the solutions are written. A non-finite right-hand side is
    /// reported as [`Error::NonFiniteSolution`] of its system and block.
    ///
    /// # Safety
    /// As [`Self::upload_device`] for `rhs` (`S x N x n x k` elements) and for `out`, whose
    /// indexed elements must moreover be distinct. `out` may overlap `rhs` (even be the same
    /// array): `rhs` is copied whole into the solver's buffer before `out` is written, in
    /// the order of the solver's stream.
    pub unsafe fn solve_device(&mut self, rhs: DeviceArray, k: usize, out: DeviceArray) -> Result<()> {
        let shape = self.factored_plan().ok_or(Error::NotFactored)?.bufs.shape;
        // SAFETY: forwarded.
        unsafe {
            self.copy_rhs_in(shape, rhs, k)?;
            self.launch_solve()?;
            self.copy_solutions_out(shape, k, out)?;
        }
        self.check_solve()
    }

    /// [`Self::upload_device`], then the solve of `rhs` into `out` as
    /// [`Self::solve_device`], in one graph launch with one wait before the solutions are
    /// copied out: the device-array form of [`crate::Factorization::factor_solve`]. When
    /// the factorization fails, `out` is left as it was.
    ///
    /// ```no_run
    /// use blocktri::cuda::{DeviceArray, DeviceBuffer, GpuCholesky};
    /// use blocktri::Shape;
    /// let shape = Shape::new(1, 3, 2).unwrap();
    /// let mut g = GpuCholesky::<f64>::new().unwrap();
    /// let s = g.stream().clone();
    /// let diag = DeviceBuffer::from_host(&s, &[4.0, 1.0, 1.0, 4.0].repeat(3)).unwrap();
    /// let sub = DeviceBuffer::from_host(&s, &[1.0, 0.0, 0.5, 1.0].repeat(2)).unwrap();
    /// let rhs = DeviceBuffer::from_host(&s, &[1.0; 6]).unwrap();
    /// let x = DeviceBuffer::<f64>::poisoned(&s, 6).unwrap();
    /// let view = |b: &DeviceBuffer<f64>, blocks, cols| DeviceArray::row_major(b.ptr().addr(), blocks, 2, cols);
    /// // SAFETY: buffers of this solver's GPU, written on its stream, alive until it returns.
    /// unsafe { g.factor_solve_device(shape, (view(&diag, 3, 2), view(&sub, 2, 2)), view(&rhs, 3, 1), 1, view(&x, 3, 1)) }.unwrap();
    /// ```
    ///
    /// # Safety
    /// As [`Self::upload_device`] for `diag` and `sub`, and as [`Self::solve_device`] for
    /// `rhs` and `out` (`S x N x n x k` elements each).
    pub unsafe fn factor_solve_device(
        &mut self,
        shape: Shape,
        (diag, sub): (DeviceArray, DeviceArray),
        rhs: DeviceArray,
        k: usize,
        out: DeviceArray,
    ) -> Result<()> {
        // SAFETY: forwarded.
        unsafe {
            self.upload_device(shape, diag, sub)?;
            self.copy_rhs_in(shape, rhs, k)?;
        }
        self.launch_factor_solve()?;
        self.check_factor()?;
        // SAFETY: forwarded.
        unsafe { self.copy_solutions_out(shape, k, out)? };
        self.check_solve()
    }

    /// Enqueues the copy of `k` device right-hand sides (`S x N x n x k` of `shape`) into
    /// the solver's right-hand-side buffer.
    ///
    /// # Safety
    /// As [`Self::upload_device`] for `rhs`.
    unsafe fn copy_rhs_in(&mut self, shape: Shape, rhs: DeviceArray, k: usize) -> Result<()> {
        if k == 0 {
            shape_err!("no right-hand side");
        }
        let (dst, _) = self.rhs_buffer(k)?;
        let extents = [shape.batch, shape.nblocks, shape.block, k];
        // SAFETY: the caller's contract for `rhs`; the right-hand-side buffer holds
        // `S k N n` values at `rhs_strides`.
        unsafe { self.launch_copy(rhs, dst, rhs_strides(shape, k), extents, shape.block) }
    }

    /// Enqueues the copy of the solutions (the right-hand-side buffer, `k` columns) into
    /// `out`.
    ///
    /// # Safety
    /// As [`Self::solve_device`] for `out`; the buffer holds `k` columns of `shape`.
    unsafe fn copy_solutions_out(&self, shape: Shape, k: usize, out: DeviceArray) -> Result<()> {
        let plan = self.plan.as_ref().ok_or(Error::NotFactored)?;
        let src = plan.rhs.as_ref().expect("right-hand-side buffer").ptr();
        let mine = rhs_strides(shape, k);
        let extents = [shape.batch, shape.nblocks, shape.block, k];
        // SAFETY: the caller's contract for `out`; the buffer holds `S k N n` values.
        unsafe {
            self.launch_copy(
                DeviceArray { addr: src.addr(), strides: mine },
                DevicePtr::from_addr(out.addr),
                out.strides,
                extents,
                shape.block,
            )
        }
    }

    /// Makes the solver's stream wait for the work enqueued so far on another CUDA stream
    /// of the same context: `handle` is that `CUstream` (0 for the legacy default stream),
    /// as `torch.cuda.current_stream().cuda_stream` or CuPy's `Stream.ptr` give it. Device
    /// arrays produced on that stream may then go to [`Self::upload_device`] and
    /// [`Self::solve_device`]. Enqueues an event record and a wait; the host does not block.
    ///
    /// # Safety
    /// `handle` is 0 or a live stream of the context of [`Self::gpu`].
    pub unsafe fn wait_for_stream(&self, handle: usize) -> Result<()> {
        use cudarc::driver::sys;
        let event = match self.stream_event.get() {
            Some(e) => e,
            None => {
                let e = self.gpu.context().new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?;
                self.stream_event.get_or_init(|| e)
            }
        };
        // SAFETY: an event of this context; the caller vouches for the stream.
        unsafe { cudarc::driver::result::event::record(event.cu_event(), handle as sys::CUstream)? };
        self.stream.wait(event)?;
        Ok(())
    }

    /// Enqueues `dst[i] = src[i]` for every index below `extents` (`dst` at `dst_strides`;
    /// rows at or past `valid_rows` zero-filled) on the solver's stream.
    ///
    /// # Safety
    /// As [`blocktri_device::copy::strided_copy`] requires, for both arrays.
    unsafe fn launch_copy(
        &self,
        src: DeviceArray,
        dst: DevicePtr<T>,
        dst_strides: [i64; 4],
        extents: [usize; 4],
        valid_rows: usize,
    ) -> Result<()> {
        let count: usize = extents.iter().product();
        if count == 0 {
            return Ok(());
        }
        let extents = extents.map(|e| u32::try_from(e).unwrap_or(u32::MAX));
        let args = StridedCopyArgs {
            src: src.addr as *const T,
            dst: dst.as_mut_ptr(),
            extents,
            src_strides: src.strides,
            dst_strides,
            valid_rows: valid_rows as u32,
        };
        let kernel = self.gpu.kernel(kernel_name::<T>(names::STRIDED_COPY).as_str())?;
        // Grid-stride loop: a few waves of blocks are enough for a copy.
        let blocks = count.div_ceil(COPY_THREADS as usize).min(self.gpu.info().multiprocessors as usize * 32) as u32;
        // SAFETY: forwarded from the caller.
        unsafe { kernel.launch(&self.stream, LaunchConfig::linear(blocks, COPY_THREADS, 0), (args,)) }
    }
}
