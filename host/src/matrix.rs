//! Problem types: [`BlockTridiag`] (a batch of SPD block-tridiagonal matrices of one
//! shape) and [`BlockVec`] (right-hand sides or solutions, `k` columns).

use crate::error::{Error, Result, shape_err, zeroed_vec};
use crate::scalar::{Scalar, wide};
use nalgebra::DMatrix;
use nalgebra_sparse::{CooMatrix, CsrMatrix};

/// The shape shared by every system of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Number of independent systems `S`.
    pub batch: usize,
    /// Number of diagonal blocks `N` per system.
    pub nblocks: usize,
    /// Block size `n`.
    pub block: usize,
}

impl Shape {
    /// A validated shape: `batch, nblocks, block >= 1`, and `N * n` and the storage
    /// fit the index types the kernels use (`u32` counts, `i32` for vendor libraries).
    ///
    /// ```
    /// let s = blocktri::Shape::new(1, 100, 8).unwrap();
    /// assert_eq!(s.dim(), 800);
    /// assert!(blocktri::Shape::new(1, 0, 8).is_err());
    /// ```
    pub fn new(batch: usize, nblocks: usize, block: usize) -> Result<Self> {
        if batch == 0 || nblocks == 0 || block == 0 {
            shape_err!("batch ({batch}), number of blocks ({nblocks}) and block size ({block}) must all be >= 1");
        }
        let total = batch.checked_mul(nblocks).and_then(|v| v.checked_mul(block)).and_then(|v| v.checked_mul(block));
        if nblocks.checked_mul(block).is_none_or(|d| d > i32::MAX as usize) || total.is_none_or(|t| t > (1usize << 40)) {
            shape_err!("shape batch={batch}, N={nblocks}, n={block} is too large");
        }
        Ok(Shape { batch, nblocks, block })
    }

    /// Order of one system, `N * n`.
    pub fn dim(&self) -> usize {
        self.nblocks * self.block
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "S={} N={} n={}", self.batch, self.nblocks, self.block)
    }
}

/// A batch of `S` symmetric positive definite block-tridiagonal matrices with `N`
/// diagonal blocks `D_i` and `N - 1` sub-diagonal blocks `C_i = A[i+1, i]`, all `n x n`.
///
/// Blocks are column-major with leading dimension `ld >= n`; system `s` occupies
/// `diag[s*N*ld*n ..]` and `sub[s*(N-1)*ld*n ..]`, block `i` of it `ld*n` further per
/// block. Diagonal blocks are stored in full and must be symmetric (checked to a relative
/// tolerance of `sqrt(eps)`); the solvers use their lower triangle.
///
/// ```
/// use blocktri::BlockTridiag;
/// let mut a = BlockTridiag::<f64>::zeros(3, 2).unwrap(); // N = 3 blocks of 2x2
/// for i in 0..3 {
///     a.set_diag(0, i, 0, 0, 4.0);
///     a.set_diag(0, i, 1, 1, 4.0);
/// }
/// a.set_sub(0, 0, 0, 1, 1.0); // A[2][1] = 1 (row 0 of block 1, column 1 of block 0)
/// let dense = a.to_dense(0);
/// assert_eq!(dense[(2, 1)], 1.0);
/// assert_eq!(dense[(1, 2)], 1.0);
/// ```
#[derive(Debug, PartialEq)]
pub struct BlockTridiag<T> {
    /// Page-locking of `diag` and `sub` ([`BlockTridiag::pin_for_gpu`]); first, so that it
    /// is released before they are freed.
    pin: HostPin,
    shape: Shape,
    ld: usize,
    diag: Vec<T>,
    sub: Vec<T>,
}

impl<T: Scalar> BlockTridiag<T> {
    /// One system of `nblocks` zero blocks of size `block`.
    pub fn zeros(nblocks: usize, block: usize) -> Result<Self> {
        Self::zeros_batch(1, nblocks, block)
    }

    /// A batch of `batch` zero systems.
    pub fn zeros_batch(batch: usize, nblocks: usize, block: usize) -> Result<Self> {
        Self::zeros_padded(Shape::new(batch, nblocks, block)?, block)
    }

    /// Zero systems whose blocks have leading dimension `ld >= n` (padding rows are
    /// ignored by every solver).
    pub fn zeros_padded(shape: Shape, ld: usize) -> Result<Self> {
        if ld < shape.block {
            shape_err!("leading dimension {ld} is smaller than the block size {}", shape.block);
        }
        let blocks = |count: usize| shape.batch.checked_mul(count)?.checked_mul(ld)?.checked_mul(shape.block);
        Ok(BlockTridiag {
            pin: HostPin::default(),
            shape,
            ld,
            diag: zeroed_vec(blocks(shape.nblocks))?,
            sub: zeroed_vec(blocks(shape.nblocks - 1))?,
        })
    }

    /// Takes ownership of block arrays laid out as described in the type docs.
    pub fn from_parts(shape: Shape, ld: usize, diag: Vec<T>, sub: Vec<T>) -> Result<Self> {
        check_block_arrays(shape, ld, diag.len(), sub.len())?;
        Ok(BlockTridiag { pin: HostPin::default(), shape, ld, diag, sub })
    }

    /// A matrix from arrays of row-major blocks (`diag[s][i][r][c] = A_ii[r, c]`,
    /// `sub[s][i][r][c] = A[i+1, i][r, c]`: the C-order `(S, N, n, n)` and
    /// `(S, N-1, n, n)` arrays of numpy, PyTorch or `ndarray`), each block transposed into
    /// the column-major layout of the type docs (in parallel).
    ///
    /// ```
    /// use blocktri::{BlockTridiag, Shape};
    /// let shape = Shape::new(1, 2, 2).unwrap();
    /// let a = BlockTridiag::from_row_major(shape, &[4.0, 1.0, 1.0, 4.0, 5.0, 0.0, 0.0, 5.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    /// assert_eq!(a.sub_block(0, 0), &[1.0, 3.0, 2.0, 4.0]); // column-major [[1, 2], [3, 4]]
    /// ```
    pub fn from_row_major(shape: Shape, diag: &[T], sub: &[T]) -> Result<Self> {
        use rayon::prelude::*;
        let n = shape.block;
        check_block_arrays(shape, n, diag.len(), sub.len())?;
        let mut a = Self::zeros_padded(shape, n)?;
        for (dst, src) in [(&mut a.diag, diag), (&mut a.sub, sub)] {
            dst.par_chunks_mut(n * n).zip(src.par_chunks(n * n)).for_each(|(d, s)| {
                for c in 0..n {
                    for r in 0..n {
                        d[c * n + r] = s[r * n + c];
                    }
                }
            });
        }
        Ok(a)
    }

    /// Page-locks the matrix's own memory with the CUDA driver (`cuMemHostRegister`) until
    /// it is dropped: GPU solvers then move it by DMA at the link's full speed, without the
    /// staging copy through pinned buffers. For a matrix refilled in place and refactored
    /// many times (interior-point and MPC loops: assemble into it, `refactor`, repeat).
    /// Pinning costs about as much as one staged copy; clones are not pinned. Fails with
    /// [`Error::NoGpu`] without a GPU, [`Error::Cuda`] when the system refuses to pin.
    ///
    /// ```no_run
    /// use blocktri::{cuda::Gpu, generate, Factorization, cuda::GpuCholesky};
    /// let mut a = generate::random_spd::<f64>(1, 1000, 24, 1).unwrap();
    /// a.pin_for_gpu(&Gpu::shared().unwrap()).unwrap();
    /// let mut g = GpuCholesky::<f64>::new().unwrap();
    /// g.factor(&a).unwrap(); // one DMA, no staging
    /// assert!(a.is_pinned());
    /// ```
    pub fn pin_for_gpu(&mut self, gpu: &crate::cuda::Gpu) -> Result<()> {
        if self.is_pinned() {
            return Ok(());
        }
        let bytes = |v: &Vec<T>| (v.as_ptr() as usize, std::mem::size_of_val(&v[..]));
        // SAFETY: `diag` and `sub` are never reallocated by any method of this type, and
        // `pin` is declared first, so it is dropped before them.
        self.pin = unsafe { HostPin::lock(gpu, &[bytes(&self.diag), bytes(&self.sub)])? };
        Ok(())
    }

    /// Whether [`Self::pin_for_gpu`] page-locked this matrix.
    pub fn is_pinned(&self) -> bool {
        !self.pin.0.is_empty()
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }
    /// Leading dimension of the blocks.
    pub fn ld(&self) -> usize {
        self.ld
    }
    /// All diagonal blocks.
    pub fn diag(&self) -> &[T] {
        &self.diag
    }
    /// All sub-diagonal blocks.
    pub fn sub(&self) -> &[T] {
        &self.sub
    }
    /// All diagonal blocks, mutable.
    pub fn diag_mut(&mut self) -> &mut [T] {
        &mut self.diag
    }
    /// All sub-diagonal blocks, mutable.
    pub fn sub_mut(&mut self) -> &mut [T] {
        &mut self.sub
    }
    /// The diagonal and the sub-diagonal blocks, both mutable (to fill them together).
    pub(crate) fn parts_mut(&mut self) -> (&mut [T], &mut [T]) {
        (&mut self.diag, &mut self.sub)
    }
    /// Elements per block (`ld * n`).
    pub fn block_len(&self) -> usize {
        self.ld * self.shape.block
    }

    fn check(&self, system: usize, i: usize, count: usize) {
        assert!(system < self.shape.batch && i < count, "block ({system}, {i}) out of range for {}", self.shape);
    }

    /// Diagonal block `D_i` of system `s` (column-major, `ld * n` values).
    ///
    /// # Panics
    /// If `s` or `i` is out of range.
    pub fn diag_block(&self, s: usize, i: usize) -> &[T] {
        self.check(s, i, self.shape.nblocks);
        let b = self.block_len();
        let at = (s * self.shape.nblocks + i) * b;
        &self.diag[at..at + b]
    }

    /// Mutable [`Self::diag_block`].
    pub fn diag_block_mut(&mut self, s: usize, i: usize) -> &mut [T] {
        self.check(s, i, self.shape.nblocks);
        let b = self.block_len();
        let at = (s * self.shape.nblocks + i) * b;
        &mut self.diag[at..at + b]
    }

    /// Sub-diagonal block `C_i = A[i+1, i]` of system `s`, `i < N - 1`.
    ///
    /// # Panics
    /// If `s` or `i` is out of range.
    pub fn sub_block(&self, s: usize, i: usize) -> &[T] {
        self.check(s, i, self.shape.nblocks - 1);
        let b = self.block_len();
        let at = (s * (self.shape.nblocks - 1) + i) * b;
        &self.sub[at..at + b]
    }

    /// Mutable [`Self::sub_block`].
    pub fn sub_block_mut(&mut self, s: usize, i: usize) -> &mut [T] {
        self.check(s, i, self.shape.nblocks - 1);
        let b = self.block_len();
        let at = (s * (self.shape.nblocks - 1) + i) * b;
        &mut self.sub[at..at + b]
    }

    /// Sets entry `(r, c)` of `D_i` of system `s` and its mirror `(c, r)`.
    pub fn set_diag(&mut self, s: usize, i: usize, r: usize, c: usize, v: T) {
        let ld = self.ld;
        let d = self.diag_block_mut(s, i);
        d[c * ld + r] = v;
        d[r * ld + c] = v;
    }

    /// Sets entry `(r, c)` of `C_i = A[i+1, i]` of system `s`.
    pub fn set_sub(&mut self, s: usize, i: usize, r: usize, c: usize, v: T) {
        let ld = self.ld;
        self.sub_block_mut(s, i)[c * ld + r] = v;
    }

    /// Entry `(row, col)` of system `s` as a `N n x N n` matrix (zero outside the band).
    pub fn get(&self, s: usize, row: usize, col: usize) -> T {
        let n = self.shape.block;
        let (bi, bj) = (row / n, col / n);
        let (r, c) = (row % n, col % n);
        if bi == bj {
            self.diag_block(s, bi)[c * self.ld + r]
        } else if bi == bj + 1 {
            self.sub_block(s, bj)[c * self.ld + r]
        } else if bj == bi + 1 {
            self.sub_block(s, bi)[r * self.ld + c]
        } else {
            T::zero()
        }
    }

    /// System `s` as a dense nalgebra matrix (for references and small problems).
    pub fn to_dense(&self, s: usize) -> DMatrix<T> {
        let d = self.shape.dim();
        let n = self.shape.block;
        let mut m = DMatrix::zeros(d, d);
        for i in 0..self.shape.nblocks {
            let blk = self.diag_block(s, i);
            for c in 0..n {
                for r in 0..n {
                    m[(i * n + r, i * n + c)] = blk[c * self.ld + r];
                }
            }
            if i + 1 < self.shape.nblocks {
                let blk = self.sub_block(s, i);
                for c in 0..n {
                    for r in 0..n {
                        let v = blk[c * self.ld + r];
                        m[((i + 1) * n + r, i * n + c)] = v;
                        m[(i * n + c, (i + 1) * n + r)] = v;
                    }
                }
            }
        }
        m
    }

    /// A one-system matrix from a dense one; entries outside the block-tridiagonal band
    /// must be zero.
    pub fn from_dense(m: &DMatrix<T>, block: usize) -> Result<Self> {
        let d = m.nrows();
        if m.ncols() != d || block == 0 || !d.is_multiple_of(block) {
            shape_err!("a {}x{} matrix is not square with order divisible by block size {block}", m.nrows(), m.ncols());
        }
        let mut a = Self::zeros(d / block, block)?;
        for c in 0..d {
            for r in 0..d {
                let v = m[(r, c)];
                a.put(r, c, v, "dense matrix")?;
            }
        }
        Ok(a)
    }

    /// Stores entry `(r, c)` of a one-system matrix given entry by entry.
    fn put(&mut self, r: usize, c: usize, v: T, source: &str) -> Result<()> {
        let n = self.shape.block;
        let (bi, bj) = (r / n, c / n);
        let ld = self.ld;
        if bi == bj {
            self.diag_block_mut(0, bi)[(c % n) * ld + r % n] = v;
        } else if bi == bj + 1 {
            self.sub_block_mut(0, bj)[(c % n) * ld + r % n] = v;
        } else if bj == bi + 1 {
            // Upper band: must mirror the lower one; checked by the symmetric check below.
            let lower = self.sub_block(0, bi)[(r % n) * ld + c % n];
            if lower != T::zero() && (wide(lower) - wide(v)).abs() > wide(T::symmetry_tolerance()) * (wide(lower).abs() + wide(v).abs()) {
                shape_err!("{source}: entry ({r}, {c}) = {v} does not mirror ({c}, {r}) = {lower}");
            }
            // The lower triangle is what the solvers use: an agreeing mirror keeps it.
            if lower == T::zero() {
                self.sub_block_mut(0, bi)[(r % n) * ld + c % n] = v;
            }
        } else if v != T::zero() {
            shape_err!("{source}: entry ({r}, {c}) lies outside the block-tridiagonal band of block size {n}");
        }
        Ok(())
    }

    /// A one-system matrix from a sparse CSR matrix with the given block size. Both
    /// triangles may be given (they must agree), or only the lower one (the upper band is
    /// then the transpose of the sub-diagonal blocks). Entries outside the band are an
    /// error.
    pub fn from_csr(csr: &CsrMatrix<T>, block: usize) -> Result<Self> {
        let coo = CooMatrix::from(csr);
        Self::from_coo(&coo, block)
    }

    /// As [`Self::from_csr`], from COO triplets (duplicates are summed).
    pub fn from_coo(coo: &CooMatrix<T>, block: usize) -> Result<Self> {
        let d = coo.nrows();
        if coo.ncols() != d || block == 0 || !d.is_multiple_of(block) {
            shape_err!("a {}x{} sparse matrix is not square with order divisible by block size {block}", coo.nrows(), coo.ncols());
        }
        // Sum duplicates through CSR, then place lower entries first so that upper ones can
        // be checked against them.
        let csr = CsrMatrix::from(coo);
        let mut a = Self::zeros(d / block, block)?;
        let mut upper = Vec::new();
        for (r, c, &v) in csr.triplet_iter() {
            if c / block > r / block {
                upper.push((r, c, v));
            } else {
                a.put(r, c, v, "sparse matrix")?;
            }
        }
        // Upper triangle of the diagonal blocks: mirror lower entries where only the upper
        // half was given (a full symmetric input sets both).
        for (r, c, v) in upper {
            a.put(r, c, v, "sparse matrix")?;
        }
        a.symmetrize_diagonal_blocks("sparse matrix")?;
        Ok(a)
    }

    /// Fills the upper triangle of each diagonal block from the lower one where the
    /// upper entry is zero (inputs that give only the lower triangle), and the lower from
    /// the upper where only that was given; where both are given they must agree to the
    /// symmetry tolerance (as the off-diagonal band's mirror entries must, see
    /// [`Self::put`]) and the lower one is kept.
    fn symmetrize_diagonal_blocks(&mut self, source: &str) -> Result<()> {
        let (n, ld) = (self.shape.block, self.ld);
        let tol = wide(T::symmetry_tolerance());
        for s in 0..self.shape.batch {
            for i in 0..self.shape.nblocks {
                let blk = self.diag_block_mut(s, i);
                for c in 0..n {
                    for r in c + 1..n {
                        let (lo, up) = (blk[c * ld + r], blk[r * ld + c]);
                        if up == T::zero() {
                            blk[r * ld + c] = lo;
                        } else if lo == T::zero() {
                            blk[c * ld + r] = up;
                        } else if (wide(lo) - wide(up)).abs() > tol * (wide(lo).abs() + wide(up).abs()) {
                            // (Non-finite values pass here; `validate` names them.)
                            let (row, col) = (i * n + r, i * n + c);
                            shape_err!("{source}: entry ({col}, {row}) = {up} does not mirror ({row}, {col}) = {lo}");
                        } else {
                            // Agreeing to the tolerance: the lower triangle, which the
                            // solvers use, is the value.
                            blk[r * ld + c] = lo;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// System `s` as a sparse CSR matrix: the lower triangle only (`lower_only`), or both.
    pub fn to_csr(&self, s: usize, lower_only: bool) -> CsrMatrix<T> {
        let (n, nb, ld) = (self.shape.block, self.shape.nblocks, self.ld);
        let d = self.shape.dim();
        let mut row_offsets = Vec::with_capacity(d + 1);
        let mut cols = Vec::new();
        let mut vals = Vec::new();
        row_offsets.push(0);
        for row in 0..d {
            let (bi, r) = (row / n, row % n);
            if bi > 0 {
                let blk = self.sub_block(s, bi - 1);
                for c in 0..n {
                    cols.push((bi - 1) * n + c);
                    vals.push(blk[c * ld + r]);
                }
            }
            let blk = self.diag_block(s, bi);
            let last = if lower_only { r + 1 } else { n };
            for c in 0..last {
                cols.push(bi * n + c);
                // Lower triangle is the reference; mirror it into the upper half.
                vals.push(if c <= r { blk[c * ld + r] } else { blk[r * ld + c] });
            }
            if !lower_only && bi + 1 < nb {
                let blk = self.sub_block(s, bi);
                for c in 0..n {
                    cols.push((bi + 1) * n + c);
                    vals.push(blk[r * ld + c]);
                }
            }
            row_offsets.push(cols.len());
        }
        CsrMatrix::try_from_csr_data(d, d, row_offsets, cols, vals).expect("valid CSR by construction")
    }

    /// Checks every value is finite and every diagonal block symmetric within `tol`
    /// relative to `sqrt(|a_pp a_qq|)` (what the GPU kernels check too).
    pub fn validate(&self, tol: T) -> Result<()> {
        let (n, ld, nb) = (self.shape.block, self.ld, self.shape.nblocks);
        for s in 0..self.shape.batch {
            for i in 0..nb {
                let blk = self.diag_block(s, i);
                for c in 0..n {
                    for r in 0..n {
                        if !blk[c * ld + r].is_finite() {
                            return Err(Error::NonFinite { what: "diagonal block", system: s, block: i });
                        }
                    }
                }
                if let Some((row, col)) = asymmetric_entry(blk, n, ld, wide(tol)) {
                    return Err(Error::NotSymmetric { system: s, block: i, row, col, tol: wide(tol) });
                }
                if i + 1 < nb {
                    let blk = self.sub_block(s, i);
                    for c in 0..n {
                        for r in 0..n {
                            if !blk[c * ld + r].is_finite() {
                                return Err(Error::NonFinite { what: "sub-diagonal block", system: s, block: i });
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `Y = A X` for every system (lower triangle of the diagonal blocks, as the solvers).
    pub fn matvec(&self, x: &BlockVec<T>) -> Result<BlockVec<T>> {
        if x.shape() != self.shape {
            shape_err!("right-hand side shape {} does not match the matrix {}", x.shape(), self.shape);
        }
        let (n, ld, nb, k) = (self.shape.block, self.ld, self.shape.nblocks, x.ncols());
        let mut y = BlockVec::zeros(self.shape, k)?;
        let d = self.shape.dim();
        for s in 0..self.shape.batch {
            let xs = x.system(s);
            let ys = y.system_mut(s);
            for col in 0..k {
                let (xc, yc) = (&xs[col * d..(col + 1) * d], &mut ys[col * d..(col + 1) * d]);
                for i in 0..nb {
                    let dblk = self.diag_block(s, i);
                    for c in 0..n {
                        let xv = xc[i * n + c];
                        for r in 0..n {
                            let a = if r >= c { dblk[c * ld + r] } else { dblk[r * ld + c] };
                            yc[i * n + r] += a * xv;
                        }
                    }
                    if i + 1 < nb {
                        let sblk = self.sub_block(s, i);
                        for c in 0..n {
                            for r in 0..n {
                                let a = sblk[c * ld + r];
                                yc[(i + 1) * n + r] += a * xc[i * n + c];
                                yc[i * n + c] += a * xc[(i + 1) * n + r];
                            }
                        }
                    }
                }
            }
        }
        Ok(y)
    }

    /// Frobenius norm of system `s` (both triangles).
    pub fn norm_fro(&self, s: usize) -> f64 {
        let (n, ld, nb) = (self.shape.block, self.ld, self.shape.nblocks);
        let mut acc = 0.0;
        for i in 0..nb {
            let d = self.diag_block(s, i);
            for c in 0..n {
                for r in 0..n {
                    acc += wide(d[c * ld + r]).powi(2);
                }
            }
            if i + 1 < nb {
                let b = self.sub_block(s, i);
                for c in 0..n {
                    for r in 0..n {
                        acc += 2.0 * wide(b[c * ld + r]).powi(2);
                    }
                }
            }
        }
        acc.sqrt()
    }

    /// The same matrices in another precision.
    pub fn cast<U: Scalar>(&self) -> BlockTridiag<U> {
        BlockTridiag {
            pin: HostPin::default(),
            shape: self.shape,
            ld: self.ld,
            diag: self.diag.iter().map(|&v| crate::scalar::cast(wide(v))).collect(),
            sub: self.sub.iter().map(|&v| crate::scalar::cast(wide(v))).collect(),
        }
    }

    /// A copy with blocks at leading dimension `ld` (`ld >= n`; padding zero).
    pub fn repad(&self, ld: usize) -> Result<Self> {
        let mut out = Self::zeros_padded(self.shape, ld)?;
        let n = self.shape.block;
        for (dst, src) in [(&mut out.diag, &self.diag), (&mut out.sub, &self.sub)] {
            for (db, sb) in dst.chunks_exact_mut(ld * n).zip(src.chunks_exact(self.ld * n)) {
                for c in 0..n {
                    db[c * ld..c * ld + n].copy_from_slice(&sb[c * self.ld..c * self.ld + n]);
                }
            }
        }
        Ok(out)
    }

    /// Splits a batch into its systems.
    pub fn systems(&self) -> Vec<BlockTridiag<T>> {
        let (nb, blk) = (self.shape.nblocks, self.block_len());
        (0..self.shape.batch)
            .map(|s| BlockTridiag {
                pin: HostPin::default(),
                shape: Shape { batch: 1, ..self.shape },
                ld: self.ld,
                diag: self.diag[s * nb * blk..(s + 1) * nb * blk].to_vec(),
                sub: self.sub[s * (nb - 1) * blk..(s + 1) * (nb - 1) * blk].to_vec(),
            })
            .collect()
    }
}

impl<T: Scalar> Clone for BlockTridiag<T> {
    /// A copy in new memory, not page-locked; values of 8 MiB and more are copied on
    /// every thread into memory advised to use huge pages.
    fn clone(&self) -> Self {
        BlockTridiag {
            pin: HostPin::default(),
            shape: self.shape,
            ld: self.ld,
            diag: clone_values(&self.diag),
            sub: clone_values(&self.sub),
        }
    }
}

impl<T: Scalar> Clone for BlockVec<T> {
    /// A copy in new memory, not page-locked; values of 8 MiB and more are copied on
    /// every thread into memory advised to use huge pages.
    fn clone(&self) -> Self {
        BlockVec { pin: HostPin::default(), shape: self.shape, ncols: self.ncols, data: clone_values(&self.data) }
    }
}

/// Values of at least this many bytes are cloned on every thread.
const PARALLEL_CLONE_BYTES: usize = 8 << 20;

/// A copy of `values`. Large ones go into memory advised to use huge pages and are copied
/// on every thread of rayon's pool: a plain `to_vec` faults the new pages in 4 KiB at a
/// time on the calling thread, ~1 GB/s in the VMs measured (a 2.1 GB right-hand side took
/// 2.1 s, `docs/perf-notes.md` entry 64).
fn clone_values<T: Scalar>(values: &[T]) -> Vec<T> {
    if std::mem::size_of_val(values) < PARALLEL_CLONE_BYTES {
        return values.to_vec();
    }
    use rayon::prelude::*;
    // Uninitialized, not zeroed: memory the allocator recycles would be zeroed on this
    // thread first (calloc's memset).
    let mut copy = Vec::<T>::with_capacity(values.len());
    crate::error::advise_huge_pages(copy.as_mut_ptr() as usize, std::mem::size_of_val(values));
    let piece = (1 << 20) / T::BYTES;
    let spare = &mut copy.spare_capacity_mut()[..values.len()];
    spare.par_chunks_mut(piece).zip(values.par_chunks(piece)).for_each(|(d, s)| {
        d.write_copy_of_slice(s);
    });
    // SAFETY: the loop above initialized all `values.len()` elements of the capacity.
    unsafe { copy.set_len(values.len()) };
    copy
}

/// The page-locking of a matrix's or vector's own buffers (`pin_for_gpu`), or nothing. A
/// clone lives elsewhere and is not pinned; it does not take part in equality.
#[derive(Default)]
struct HostPin(Vec<crate::cuda::transfer::HostRegistration>);

impl HostPin {
    /// Page-locks each of `buffers` (skipping empty ones).
    ///
    /// # Safety
    /// The buffers stay allocated and in place as long as this value lives (their owner
    /// never reallocates them and drops this first).
    unsafe fn lock(gpu: &crate::cuda::Gpu, buffers: &[(usize, usize)]) -> Result<Self> {
        let mut held = Vec::new();
        for &(addr, bytes) in buffers.iter().filter(|b| b.1 > 0) {
            // SAFETY: forwarded.
            held.push(unsafe { crate::cuda::transfer::HostRegistration::new(gpu, addr, bytes)? });
        }
        Ok(HostPin(held))
    }
}

impl Clone for HostPin {
    fn clone(&self) -> Self {
        HostPin::default()
    }
}

impl PartialEq for HostPin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for HostPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", if self.0.is_empty() { "pageable" } else { "page-locked" })
    }
}

/// Checks that `diag` and `sub` values are what `shape`'s blocks at leading dimension `ld`
/// take: `S N ld n` and `S (N - 1) ld n` (and `ld >= n`).
pub(crate) fn check_block_arrays(shape: Shape, ld: usize, diag: usize, sub: usize) -> Result<()> {
    let (n, nb, s) = (shape.block, shape.nblocks, shape.batch);
    let (nd, ns) = (s * nb * ld * n, s * (nb - 1) * ld * n);
    if ld < n {
        shape_err!("leading dimension {ld} is smaller than the block size {n}");
    }
    if diag != nd || sub != ns {
        shape_err!("{shape} with leading dimension {ld} needs {nd} diagonal and {ns} sub-diagonal values, got {diag} and {sub}");
    }
    Ok(())
}

/// Checks that right-hand sides laid out as a [`BlockVec`]'s values (`k` columns per
/// system of `shape`) are finite; names the system and block of the first that is not.
pub(crate) fn check_rhs_finite<T: Scalar>(shape: Shape, k: usize, values: &[T]) -> Result<()> {
    match first_non_finite(values) {
        None => Ok(()),
        Some(p) => Err(rhs_non_finite(shape, k, p)),
    }
}

/// The error for a non-finite value at index `p` of right-hand sides of `shape` with `k`
/// columns (laid out as in a [`BlockVec`]).
pub(crate) fn rhs_non_finite(shape: Shape, k: usize, p: usize) -> Error {
    Error::NonFinite { what: "right-hand side", system: p / (shape.dim() * k), block: (p % shape.dim()) / shape.block }
}

/// The index of the first non-finite value of `values`, if any. Chunks are scanned
/// without branches (eight independent lanes of `v * 0`, which is zero exactly for finite
/// `v`, so the compiler vectorizes them); the position is searched only in a chunk that
/// has one. In parallel only for tens of megabytes: waking the thread pool costs up to
/// ~0.5 ms in the GPU machine's VM, more than a serial scan of a few megabytes
/// (`docs/perf-notes.md`, entry 14).
pub(crate) fn first_non_finite<T: Scalar>(values: &[T]) -> Option<usize> {
    if values.len() < 1 << 22 {
        first_non_finite_serial(values)
    } else {
        use rayon::prelude::*;
        values.par_chunks(SCAN_CHUNK).enumerate().find_map_first(|(i, chunk)| first_non_finite_serial(chunk).map(|p| i * SCAN_CHUNK + p))
    }
}

/// Values per branch-free chunk of [`first_non_finite_serial`].
const SCAN_CHUNK: usize = 1024;

/// [`first_non_finite`] on the calling thread alone.
pub(crate) fn first_non_finite_serial<T: Scalar>(values: &[T]) -> Option<usize> {
    let scan = |(i, chunk): (usize, &[T])| -> Option<usize> {
        let mut lanes = [T::ZERO; 8];
        let mut groups = chunk.chunks_exact(8);
        for g in &mut groups {
            for j in 0..8 {
                lanes[j] += g[j] * T::ZERO;
            }
        }
        let finite = lanes.iter().chain(groups.remainder()).all(|v| v.is_finite());
        if finite { None } else { chunk.iter().position(|v| !v.is_finite()).map(|p| i * SCAN_CHUNK + p) }
    };
    values.chunks(SCAN_CHUNK).enumerate().find_map(scan)
}

/// The first entry `(row, col)`, `row > col`, of the `n x n` column-major block `blk`
/// (leading dimension `ld`) that is not symmetric within `tol` relative to
/// `sqrt(|a_rr a_cc|)` (NaN counts as asymmetric); `None` when the block is symmetric.
pub(crate) fn asymmetric_entry<T: Scalar>(blk: &[T], n: usize, ld: usize, tol: f64) -> Option<(usize, usize)> {
    (0..n).flat_map(|c| (c + 1..n).map(move |r| (r, c))).find(|&(r, c)| {
        let (lo, up) = (wide(blk[c * ld + r]), wide(blk[r * ld + c]));
        let scale = (wide(blk[r * ld + r]) * wide(blk[c * ld + c])).abs().sqrt();
        let symmetric = (lo - up).abs() <= tol * scale; // false for NaN
        !symmetric
    })
}

/// Right-hand sides or solutions: for each system of a batch, an `N n x k` column-major
/// matrix (`k` columns), systems one after another.
///
/// ```
/// use blocktri::{BlockVec, Shape};
/// let shape = Shape::new(2, 4, 3).unwrap(); // 2 systems, N = 4, n = 3
/// let mut b = BlockVec::<f64>::zeros(shape, 1).unwrap();
/// b.set(1, 11, 0, 5.0);
/// assert_eq!(b.system(1)[11], 5.0);
/// ```
#[derive(Debug, PartialEq)]
pub struct BlockVec<T> {
    /// Page-locking of `data` ([`BlockVec::pin_for_gpu`]); first, as in [`BlockTridiag`].
    pin: HostPin,
    shape: Shape,
    ncols: usize,
    data: Vec<T>,
}

impl<T: Scalar> BlockVec<T> {
    /// Zeros with `ncols >= 1` columns.
    pub fn zeros(shape: Shape, ncols: usize) -> Result<Self> {
        if ncols == 0 {
            shape_err!("a right-hand side needs at least one column");
        }
        let len = shape.batch.checked_mul(shape.dim()).and_then(|l| l.checked_mul(ncols));
        Ok(BlockVec { pin: HostPin::default(), shape, ncols, data: zeroed_vec(len)? })
    }

    /// Takes ownership of `data` (`S * N n * k` values, layout in the type docs).
    pub fn from_vec(shape: Shape, ncols: usize, data: Vec<T>) -> Result<Self> {
        if ncols == 0 || data.len() != shape.batch * shape.dim() * ncols {
            shape_err!("{shape} with {ncols} columns needs {} values, got {}", shape.batch * shape.dim() * ncols, data.len());
        }
        Ok(BlockVec { pin: HostPin::default(), shape, ncols, data })
    }

    /// Page-locks the vector's own memory with the CUDA driver until it is dropped, as
    /// [`BlockTridiag::pin_for_gpu`] does for a matrix: for right-hand sides refilled and
    /// solved in place many times (`solve_in_place` then moves them by DMA both ways).
    ///
    /// ```no_run
    /// use blocktri::{cuda::Gpu, BlockVec, Shape};
    /// let mut b = BlockVec::<f64>::zeros(Shape::new(1, 1000, 24).unwrap(), 1).unwrap();
    /// b.pin_for_gpu(&Gpu::shared().unwrap()).unwrap();
    /// assert!(b.is_pinned());
    /// ```
    pub fn pin_for_gpu(&mut self, gpu: &crate::cuda::Gpu) -> Result<()> {
        if self.is_pinned() {
            return Ok(());
        }
        let range = (self.data.as_ptr() as usize, std::mem::size_of_val(&self.data[..]));
        // SAFETY: `data` is never reallocated by any method of this type, and `pin` is
        // declared first, so it is dropped before it.
        self.pin = unsafe { HostPin::lock(gpu, &[range])? };
        Ok(())
    }

    /// Whether [`Self::pin_for_gpu`] page-locked this vector.
    pub fn is_pinned(&self) -> bool {
        !self.pin.0.is_empty()
    }

    /// The shape of the systems.
    pub fn shape(&self) -> Shape {
        self.shape
    }
    /// Columns `k`.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// All values.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }
    /// All values, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }
    /// Consumes into the values.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }
    /// The `N n x k` matrix of system `s`.
    pub fn system(&self, s: usize) -> &[T] {
        let len = self.shape.dim() * self.ncols;
        &self.data[s * len..(s + 1) * len]
    }
    /// Mutable [`Self::system`].
    pub fn system_mut(&mut self, s: usize) -> &mut [T] {
        let len = self.shape.dim() * self.ncols;
        &mut self.data[s * len..(s + 1) * len]
    }
    /// Entry `(row, col)` of system `s`.
    pub fn get(&self, s: usize, row: usize, col: usize) -> T {
        self.system(s)[col * self.shape.dim() + row]
    }
    /// Sets entry `(row, col)` of system `s`.
    pub fn set(&mut self, s: usize, row: usize, col: usize, v: T) {
        let d = self.shape.dim();
        self.system_mut(s)[col * d + row] = v;
    }
    /// System `s` as a nalgebra matrix.
    pub fn to_dmatrix(&self, s: usize) -> DMatrix<T> {
        DMatrix::from_column_slice(self.shape.dim(), self.ncols, self.system(s))
    }
    /// Checks every value is finite; names the first offending system and block.
    pub fn validate(&self) -> Result<()> {
        check_rhs_finite(self.shape, self.ncols, &self.data)
    }
    /// The same values in another precision.
    pub fn cast<U: Scalar>(&self) -> BlockVec<U> {
        BlockVec {
            pin: HostPin::default(),
            shape: self.shape,
            ncols: self.ncols,
            data: self.data.iter().map(|&v| crate::scalar::cast(wide(v))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clones below and above the parallel threshold (not a whole number of pieces) carry
    /// every value, bit for bit, and the shape; a clone is never page-locked.
    #[test]
    fn clones_small_and_large_are_exact_copies() {
        for nblocks in [3, 30_000] {
            let a = crate::generate::random_spd::<f64>(1, nblocks, 7, nblocks as u64).unwrap();
            let b = crate::generate::random_rhs::<f32>(Shape::new(3, nblocks, 7).unwrap(), 5, 9).unwrap();
            let (a2, b2) = (a.clone(), b.clone());
            let large = nblocks > 3;
            for bytes in [std::mem::size_of_val(a.diag()), std::mem::size_of_val(b.as_slice())] {
                assert_eq!(bytes >= PARALLEL_CLONE_BYTES, large, "{bytes} bytes");
            }
            assert_eq!((a2.shape(), a2.ld(), b2.shape(), b2.ncols()), (a.shape(), a.ld(), b.shape(), b.ncols()));
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(a2.diag()), bits(a.diag()));
            assert_eq!(bits(a2.sub()), bits(a.sub()));
            assert!(b2.as_slice().iter().zip(b.as_slice()).all(|(x, y)| x.to_bits() == y.to_bits()));
            assert!(!a2.is_pinned() && !b2.is_pinned());
        }
    }
}
