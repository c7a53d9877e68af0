//! The arrowhead's border on the GPU ([`crate::arrow::ArrowSolver`] with a GPU chain).
//!
//! With the chain factored as `T = P^T L L^T P` (`P` the nested-dissection order), the
//! border `B` is uploaded once per factorization (while the GPU factors the chain, and
//! checked for non-finite values on the device) and turned into `W = L^-1 P B^T` by one
//! forward sweep with `a` right-hand sides; `B T^-1 B^T = W^T W` is all the tip needs. A
//! solve is the chain's forward sweep `y = L^-1 P b`, `B T^-1 b = W^T y`, the tip's `a x a`
//! solve on the host, `y -= W x_C`, and the chain's backward sweep: the plain solve's work
//! plus two small kernels. The host sees only `a x a` and `a x k` numbers, summed from
//! fixed runs of rows in a fixed order (`blocktri_device::arrow`).

use super::cholesky::{GpuCholesky, Sweep};
use super::launch::{Kernel, LaunchConfig};
use super::memory::DeviceBuffer;
use crate::arrow::BlockTridiagArrow;
use crate::error::{Result, shape_err};
use crate::matrix::{BlockVec, Shape};
use crate::scalar::Scalar;
use crate::solver::Factorization;
use crate::trace::timed;
use blocktri_device::arrow::{ARROW_PAIRS, ARROW_PRODUCT_SHARED_BYTES, ARROW_THREADS, ArrowArgs, arrow_chunks};
use blocktri_device::kernels::{kernel_name, names};
use nalgebra::DMatrix;

/// The three border kernels.
struct Kernels {
    columns: Kernel,
    products: Kernel,
    correct: Kernel,
}

/// Device buffers of one shape and border width.
struct Border<T> {
    shape: Shape,
    width: usize,
    /// `B` as the host holds it (`S a d` values).
    values: DeviceBuffer<T>,
    /// `W = L^-1 P B^T` (`a` columns per system).
    w: DeviceBuffer<T>,
    /// Partial sums of `W^T Z` (grown to the largest `k` asked for).
    partials: DeviceBuffer<f64>,
    /// `x_C` of a solve (`S a k` values, grown likewise).
    tip: DeviceBuffer<f64>,
    /// The first non-finite border value ([`ArrowArgs::status`]).
    status: DeviceBuffer<u64>,
}

/// A GPU chain factorization with the border kept on the device (module docs).
pub(crate) struct GpuArrow<T: Scalar> {
    chain: GpuCholesky<T>,
    kernels: Kernels,
    border: Option<Border<T>>,
}

impl<T: Scalar> GpuArrow<T> {
    /// A solver on the shared device; [`crate::Error::NoGpu`] without one.
    pub(crate) fn new() -> Result<Self> {
        let chain = GpuCholesky::<T>::new()?;
        let k = |name: &str| chain.gpu().kernel(kernel_name::<T>(name).as_str());
        let kernels = Kernels {
            columns: k(names::ARROW_BORDER_COLUMNS)?,
            products: k(names::ARROW_BORDER_PRODUCTS)?,
            correct: k(names::ARROW_BORDER_CORRECT)?,
        };
        Ok(GpuArrow { chain, kernels, border: None })
    }

    /// The chain's solver (log-determinant, selected inversion).
    pub(crate) fn chain(&mut self) -> &mut GpuCholesky<T> {
        &mut self.chain
    }

    /// Factors the chain of `m` and forms `W` on the device; returns `B T^-1 B^T = W^T W`
    /// per system (`a x a`, `f64`). Nothing but the chain for width 0. Errors: the first
    /// non-finite border value (as [`crate::Error::NonFinite`] of a `"border block"`), then
    /// the chain's own.
    pub(crate) fn factor(&mut self, m: &BlockTridiagArrow<T>) -> Result<Vec<DMatrix<f64>>> {
        let (sh, a) = (m.shape(), m.width());
        if a == 0 {
            self.border = None;
            timed("arrow factor: chain factor", || self.chain.factor(m.chain()))?;
            return Ok(Vec::new());
        }
        timed("arrow factor: chain upload", || self.chain.upload(m.chain()))?;
        self.ensure_border(sh, a, a)?;
        let GpuArrow { chain, kernels, border } = self;
        let border = border.as_mut().expect("allocated above");
        chain.launch_factor()?;
        // The host's copies into the staging slots overlap the factorization.
        timed("arrow factor: border upload", || chain.upload_to(m.arrow_values(), &border.values))?;
        let _w = crate::trace::phase("arrow factor: W = L^-1 P B^T, W^T W (waits for the factor)");
        border.status.fill_bytes(0)?;
        let (rhs, _) = chain.rhs_buffer(a)?;
        let args = ArrowArgs { columns: rhs.as_mut_ptr(), ..base_args(border, a) };
        let len = sh.batch * a * sh.dim();
        // SAFETY: `values` and the right-hand-side buffer (sized for `a` columns by
        // `rhs_buffer`) hold `S a d` values, `status` one word; the grid covers them.
        unsafe { kernels.columns.launch(chain.stream(), LaunchConfig::for_count(len, ARROW_THREADS), (args,))? };
        chain.launch_sweep(Sweep::Forward)?;
        chain.copy_rhs_to(&border.w, len)?;
        let wtw = border_products(chain, &kernels.products, border, ArrowArgs { columns: border.w.ptr().as_mut_ptr(), ..args }, a)?;
        let mut status = [0u64];
        border.status.copy_to_host(&mut status)?;
        if status[0] != 0 {
            let blk = (u64::MAX - status[0]) as usize / (a * sh.block);
            return Err(crate::Error::NonFinite { what: "border block", system: blk / sh.nblocks, block: blk % sh.nblocks });
        }
        chain.check_factor()?;
        chain.check_solve()?;
        Ok(wtw)
    }

    /// Solves for `b` (the chain part of arrowhead right-hand sides): `y = L^-1 P b`, then
    /// `tip_solve` turns `B T^-1 b = W^T y` (`a x k` per system) into `x_C`, and the chain
    /// part `P^T L^-T (y - W x_C)` comes back with `x_C`.
    pub(crate) fn solve(
        &mut self,
        b: &BlockVec<T>,
        tip_solve: impl FnOnce(Vec<DMatrix<f64>>) -> Vec<DMatrix<f64>>,
    ) -> Result<(BlockVec<T>, Vec<DMatrix<f64>>)> {
        let Some(Border { shape, width, .. }) = self.border.as_ref() else {
            return Ok((self.chain.solve(b)?, Vec::new()));
        };
        let (sh, a, k) = (*shape, *width, b.ncols());
        if b.shape() != sh {
            shape_err!("right-hand side shape {} does not match the factorization {sh}", b.shape());
        }
        timed("arrow solve: checks", || b.validate())?;
        timed("arrow solve: upload", || self.chain.upload_rhs(b))?;
        self.ensure_border(sh, a, k)?;
        let GpuArrow { chain, kernels, border } = self;
        let border = border.as_mut().expect("allocated by the factorization");
        chain.launch_sweep(Sweep::Forward)?;
        let (rhs, _) = chain.rhs_buffer(k)?;
        let args = ArrowArgs { columns: rhs.as_mut_ptr(), k: k as u32, ..base_args(border, a) };
        let wty = timed("arrow solve: forward sweep and W^T y", || border_products(chain, &kernels.products, border, args, k))?;
        chain.check_solve()?;
        let xc = tip_solve(wty);
        let values: Vec<f64> = xc.iter().flat_map(|m| m.iter().copied()).collect();
        border.tip.copy_from_host(&values)?;
        // SAFETY: the right-hand sides (`k` columns), `W` (`a`), `x_C` (`S a k` values, just
        // copied); the grid covers the `S k d` entries.
        unsafe { kernels.correct.launch(chain.stream(), LaunchConfig::for_count(sh.batch * k * sh.dim(), ARROW_THREADS), (args,))? };
        chain.launch_sweep(Sweep::Backward)?;
        let mut x = BlockVec::zeros(sh, k)?;
        timed("arrow solve: backward sweep, download (waits)", || chain.download_rhs(&mut x))?;
        chain.check_solve()?;
        Ok((x, xc))
    }

    /// `G = T^-1 B^T = P^T L^-T W` of the last factorization, on the host (`None` for
    /// width 0): one backward sweep of `W`.
    pub(crate) fn g(&mut self) -> Result<Option<BlockVec<T>>> {
        let Some(border) = self.border.as_ref() else { return Ok(None) };
        let mut g = BlockVec::zeros(border.shape, border.width)?;
        self.chain.rhs_buffer(border.width)?;
        self.chain.copy_to_rhs(&border.w, g.as_slice().len())?;
        self.chain.launch_sweep(Sweep::Backward)?;
        self.chain.download_rhs(&mut g)?;
        self.chain.check_solve()?;
        Ok(Some(g))
    }

    /// Buffers for `shape` and width `a` with room for `k` columns in a product or solve,
    /// allocated (after a check against free device memory) when missing or too small.
    fn ensure_border(&mut self, shape: Shape, a: usize, k: usize) -> Result<()> {
        let chunks = arrow_chunks(shape.dim());
        if a * k > ARROW_PAIRS * 65535 {
            shape_err!("an arrowhead of width {a} with {k} right-hand sides needs more than 65535 product blocks");
        }
        let (partials, tip) = (shape.batch * chunks * a * k, shape.batch * a * k);
        let stream = self.chain.stream().clone();
        match self.border.as_mut() {
            Some(b) if b.shape == shape && b.width == a => {
                if b.partials.len() < partials {
                    self.chain.gpu().check_memory(8 * (partials + tip))?;
                    b.partials = DeviceBuffer::poisoned(&stream, partials)?;
                }
                if b.tip.len() < tip {
                    b.tip = DeviceBuffer::poisoned(&stream, tip)?;
                }
            }
            _ => {
                self.border = None; // free the old ones first
                let len = shape.batch * a * shape.dim();
                self.chain.gpu().check_memory(2 * len * T::BYTES + 8 * (partials + tip))?;
                self.border = Some(Border {
                    shape,
                    width: a,
                    values: DeviceBuffer::poisoned(&stream, len)?,
                    w: DeviceBuffer::poisoned(&stream, len)?,
                    partials: DeviceBuffer::poisoned(&stream, partials)?,
                    tip: DeviceBuffer::poisoned(&stream, tip)?,
                    status: DeviceBuffer::poisoned(&stream, 1)?,
                });
            }
        }
        Ok(())
    }
}

/// Arguments over `border`'s buffers with `k` columns and no vector set.
fn base_args<T: Scalar>(border: &Border<T>, k: usize) -> ArrowArgs<T> {
    ArrowArgs {
        border: border.values.ptr().as_ptr(),
        columns: std::ptr::null_mut(),
        w: border.w.ptr().as_ptr(),
        tip: border.tip.ptr().as_ptr(),
        partials: border.partials.ptr().as_mut_ptr(),
        status: border.status.ptr().as_mut_ptr(),
        width: border.width as u32,
        k: k as u32,
        dim: border.shape.dim() as u32,
        systems: border.shape.batch as u32,
    }
}

/// `W^T Z` per system (`a x k`, `f64`) for the `k` columns at `args.columns`: the device's
/// partial sums over runs of rows, added here in run order. Waits for the stream.
fn border_products<T: Scalar>(
    chain: &GpuCholesky<T>,
    kernel: &Kernel,
    border: &Border<T>,
    args: ArrowArgs<T>,
    k: usize,
) -> Result<Vec<DMatrix<f64>>> {
    let (sh, a) = (border.shape, border.width);
    let chunks = arrow_chunks(sh.dim());
    let cfg = LaunchConfig {
        grid: ((sh.batch * chunks) as u32, (a * k).div_ceil(ARROW_PAIRS) as u32, 1),
        block: (ARROW_THREADS, 1, 1),
        shared_bytes: ARROW_PRODUCT_SHARED_BYTES as u32,
    };
    // SAFETY: `w` holds `S a d` values, `args.columns` `k` columns of the shape,
    // `partials` at least `S chunks a k` values (`ensure_border`); the launch shape is the
    // kernel's.
    unsafe { kernel.launch(chain.stream(), cfg, (ArrowArgs { k: k as u32, ..args },))? };
    let mut partials = vec![0.0f64; sh.batch * chunks * a * k];
    border.partials.copy_to_host(&mut partials)?;
    Ok(partials
        .chunks_exact(chunks * a * k)
        .map(|runs| runs.chunks_exact(a * k).fold(DMatrix::zeros(a, k), |sum, run| sum + DMatrix::from_column_slice(a, k, run)))
        .collect())
}

impl<T: Scalar> std::fmt::Debug for GpuArrow<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuArrow").field("chain", &self.chain).field("width", &self.border.as_ref().map(|b| b.width)).finish()
    }
}
