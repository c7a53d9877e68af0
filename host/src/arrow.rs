//! Block-tridiagonal systems with a dense **arrowhead**: `a` global unknowns (the tip)
//! coupled to every block, as in the precision matrices of spatio-temporal models with a
//! few shared parameters:
//!
//! ```text
//! A = [ T    B^T ]   T: block tridiagonal (N blocks of n), B = [B_0 .. B_{N-1}] (a x n
//!     [ B    C   ]   each, the border), C: the a x a tip.
//! ```
//!
//! The chain is eliminated first and the tip last: `T = L L^T` on any backend (the GPU's
//! nested dissection included), `G = T^-1 B^T` by one solve with `a` right-hand sides,
//! and the Schur complement `S = C - B G` factored densely (in `f64`, `a` is small). Then
//! `x_C = S^-1 (b_C - B T^-1 b_T)`, `x_T = T^-1 b_T - G x_C`; `log det A = log det T +
//! log det S`; and the blocks of `A^-1` are those of `T^-1` plus `G S^-1 G^T`'s, with
//! border `-S^-1 G^T` and tip `S^-1`.

use crate::cuda::arrow::GpuArrow;
use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::{Scalar, cast, wide};
use crate::solver::{Backend, Factorization, Solver};
use crate::trace::timed;
use nalgebra::DMatrix;
use rayon::prelude::*;

/// A batch of block-tridiagonal matrices with an arrowhead of width `a` (module docs).
/// The border block `B_i = A[tip, i]` of system `s` is `a x n`, column-major, at
/// `arrow[(s N + i) a n..]`; the tip `C` of system `s` is `a x a`, column-major, at
/// `tip[s a a..]`. Width 0 is the plain block-tridiagonal matrix.
///
/// ```
/// use blocktri::arrow::BlockTridiagArrow;
/// let chain = blocktri::generate::random_spd::<f64>(1, 16, 4, 3).unwrap();
/// let a = 2; // two global unknowns
/// let arrow = vec![0.01; 16 * a * 4];
/// let tip = vec![10.0, 0.0, 0.0, 10.0];
/// let m = BlockTridiagArrow::new(chain, a, arrow, tip).unwrap();
/// assert_eq!(m.to_dense(0).nrows(), 16 * 4 + 2);
/// ```
#[derive(Debug, PartialEq)]
pub struct BlockTridiagArrow<T> {
    chain: BlockTridiag<T>,
    width: usize,
    arrow: Vec<T>,
    tip: Vec<T>,
}

// Clone where the chain's types clone (they copy large values on every thread).
impl<T: Scalar> Clone for BlockTridiagArrow<T> {
    fn clone(&self) -> Self {
        BlockTridiagArrow { chain: self.chain.clone(), width: self.width, arrow: self.arrow.clone(), tip: self.tip.clone() }
    }
}

impl<T: Scalar> Clone for ArrowVec<T> {
    fn clone(&self) -> Self {
        ArrowVec { chain: self.chain.clone(), width: self.width, tip: self.tip.clone() }
    }
}

impl<T: Scalar> Clone for ArrowInverse<T> {
    fn clone(&self) -> Self {
        ArrowInverse { chain: self.chain.clone(), border: self.border.clone(), tip: self.tip.clone() }
    }
}

impl<T: Scalar> BlockTridiagArrow<T> {
    /// The chain `chain` with the border blocks `arrow` and tips `tip` of width `width`
    /// (layout in the type docs).
    pub fn new(chain: BlockTridiag<T>, width: usize, arrow: Vec<T>, tip: Vec<T>) -> Result<Self> {
        let sh = chain.shape();
        let (na, nt) = (sh.batch * sh.nblocks * width * sh.block, sh.batch * width * width);
        if arrow.len() != na || tip.len() != nt {
            return Err(Error::Shape(format!(
                "{sh} with an arrowhead of width {width} needs {na} border and {nt} tip values, got {} and {}",
                arrow.len(),
                tip.len()
            )));
        }
        Ok(BlockTridiagArrow { chain, width, arrow, tip })
    }

    /// The block-tridiagonal part `T`.
    pub fn chain(&self) -> &BlockTridiag<T> {
        &self.chain
    }
    /// The shape of the chain.
    pub fn shape(&self) -> Shape {
        self.chain.shape()
    }
    /// The arrowhead's width `a`.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Border block `B_i = A[tip, i]` of system `s` (`a x n`, column-major).
    pub fn arrow_block(&self, s: usize, i: usize) -> &[T] {
        let sh = self.shape();
        let len = self.width * sh.block;
        let at = (s * sh.nblocks + i) * len;
        &self.arrow[at..at + len]
    }
    /// The border blocks of every system (layout in the type docs).
    pub fn arrow_values(&self) -> &[T] {
        &self.arrow
    }
    /// The tips of every system.
    pub fn tip_values(&self) -> &[T] {
        &self.tip
    }
    /// The tip `C` of system `s` (`a x a`, column-major).
    pub fn tip(&self, s: usize) -> &[T] {
        let len = self.width * self.width;
        &self.tip[s * len..(s + 1) * len]
    }

    /// System `s` as a dense `(N n + a)` square matrix, the tip last.
    pub fn to_dense(&self, s: usize) -> DMatrix<T> {
        let sh = self.shape();
        let (d, a, n) = (sh.dim(), self.width, sh.block);
        let mut m = DMatrix::zeros(d + a, d + a);
        m.view_mut((0, 0), (d, d)).copy_from(&self.chain.to_dense(s));
        for i in 0..sh.nblocks {
            let b = self.arrow_block(s, i);
            for c in 0..n {
                for r in 0..a {
                    m[(d + r, i * n + c)] = b[c * a + r];
                    m[(i * n + c, d + r)] = b[c * a + r];
                }
            }
        }
        let t = self.tip(s);
        for c in 0..a {
            for r in 0..a {
                m[(d + r, d + c)] = t[c * a + r];
            }
        }
        m
    }

    /// `Y = A X` for every system.
    pub fn matvec(&self, x: &ArrowVec<T>) -> Result<ArrowVec<T>> {
        if x.width != self.width {
            return Err(Error::Shape(format!("a vector of width {} for a matrix of width {}", x.width, self.width)));
        }
        let mut chain = self.chain.matvec(&x.chain)?;
        let (sh, a, k) = (self.shape(), self.width, x.chain.ncols());
        let (n, d) = (sh.block, sh.dim());
        let mut tip = vec![T::zero(); x.tip.len()];
        for s in 0..sh.batch {
            let (xc, xt, c) = (x.chain.system(s), x.tip(s), self.tip(s));
            let (yc, yt) = (chain.system_mut(s), &mut tip[s * a * k..(s + 1) * a * k]);
            for col in 0..k {
                for i in 0..sh.nblocks {
                    let b = self.arrow_block(s, i);
                    for q in 0..n {
                        for r in 0..a {
                            // y_T += B^T x_C, y_C += B x_T.
                            yc[col * d + i * n + q] += b[q * a + r] * xt[col * a + r];
                            yt[col * a + r] += b[q * a + r] * xc[col * d + i * n + q];
                        }
                    }
                }
                for j in 0..a {
                    for r in 0..a {
                        yt[col * a + r] += c[j * a + r] * xt[col * a + j];
                    }
                }
            }
        }
        ArrowVec::new(chain, a, tip)
    }

    /// The border checks the chain's own checks do not cover: finite values (the first
    /// bad block). The GPU engine makes them on the device instead.
    fn validate_border(&self) -> Result<()> {
        let (sh, a) = (self.shape(), self.width);
        // In parallel (megabytes for one long system).
        if let Some(blk) = self.arrow.par_chunks((a * sh.block).max(1)).position_first(|b| b.iter().any(|v| !v.is_finite())) {
            return Err(Error::NonFinite { what: "border block", system: blk / sh.nblocks, block: blk % sh.nblocks });
        }
        Ok(())
    }

    /// The tip checks: finite values, symmetry (named as block `N`).
    fn validate_tip(&self) -> Result<()> {
        let sh = self.shape();
        let (a, nb, tol) = (self.width, sh.nblocks, wide(T::symmetry_tolerance()));
        for s in 0..sh.batch {
            let t = self.tip(s);
            if t.iter().any(|v| !v.is_finite()) {
                return Err(Error::NonFinite { what: "tip block", system: s, block: nb });
            }
            if let Some((row, col)) = crate::matrix::asymmetric_entry(t, a, a, tol) {
                return Err(Error::NotSymmetric { system: s, block: nb, row, col, tol });
            }
        }
        Ok(())
    }
}

/// Right-hand sides or solutions of an arrowhead system: the chain's part (`k` columns)
/// and the tip's, `a x k` column-major per system at `tip[s a k..]`.
#[derive(Debug, PartialEq)]
pub struct ArrowVec<T> {
    chain: BlockVec<T>,
    width: usize,
    tip: Vec<T>,
}

impl<T: Scalar> ArrowVec<T> {
    /// The chain part `chain` and the tip part `tip` (`S a k` values) of width `width`.
    pub fn new(chain: BlockVec<T>, width: usize, tip: Vec<T>) -> Result<Self> {
        let want = chain.shape().batch * width * chain.ncols();
        if tip.len() != want {
            return Err(Error::Shape(format!(
                "the tip part of {} columns of width {width} needs {want} values, got {}",
                chain.ncols(),
                tip.len()
            )));
        }
        Ok(ArrowVec { chain, width, tip })
    }
    /// The chain part.
    pub fn chain(&self) -> &BlockVec<T> {
        &self.chain
    }
    /// The arrowhead's width `a`.
    pub fn width(&self) -> usize {
        self.width
    }
    /// The tip parts of every system (`S a k` values).
    pub fn tip_values(&self) -> &[T] {
        &self.tip
    }
    /// The tip part of system `s` (`a x k`, column-major).
    pub fn tip(&self, s: usize) -> &[T] {
        let len = self.width * self.chain.ncols();
        &self.tip[s * len..(s + 1) * len]
    }
    /// The whole of system `s`, `(N n + a) x k`, as a dense matrix (chain rows first).
    pub fn to_dense(&self, s: usize) -> DMatrix<f64> {
        let (d, k, a) = (self.chain.shape().dim(), self.chain.ncols(), self.width);
        let (cs, ts) = (self.chain.system(s), self.tip(s));
        DMatrix::from_fn(d + a, k, |r, c| if r < d { wide(cs[c * d + r]) } else { wide(ts[c * a + r - d]) })
    }
}

/// The diagonal and sub-diagonal blocks of `A^-1` for an arrowhead system: the chain's
/// blocks, the border blocks `(A^-1)[tip, i]` (`a x n`, layout of
/// [`BlockTridiagArrow`]'s border) and the tips `(A^-1)[tip, tip]`.
#[derive(Debug, PartialEq)]
pub struct ArrowInverse<T> {
    /// Diagonal and sub-diagonal blocks of `A^-1` in the chain's rows and columns.
    pub chain: BlockTridiag<T>,
    /// `(A^-1)[tip, i]` for every system and block.
    pub border: Vec<T>,
    /// `(A^-1)[tip, tip]` for every system.
    pub tip: Vec<T>,
}

/// Factor and solve arrowhead systems on any [`Backend`] (module docs for the method).
///
/// ```
/// use blocktri::arrow::{ArrowSolver, ArrowVec, BlockTridiagArrow};
/// use blocktri::{generate, Backend};
/// let chain = generate::random_spd::<f64>(1, 32, 4, 5).unwrap();
/// let m = BlockTridiagArrow::new(chain, 1, vec![0.05; 32 * 4], vec![20.0]).unwrap();
/// let b = ArrowVec::new(generate::random_rhs(m.shape(), 1, 2).unwrap(), 1, vec![1.0]).unwrap();
/// let mut solver = ArrowSolver::new(Backend::Cpu).unwrap();
/// solver.factor(&m).unwrap();
/// let x = solver.solve(&b).unwrap();
/// let r = m.to_dense(0) * x.to_dense(0) - b.to_dense(0);
/// assert!(r.norm() < 1e-10);
/// ```
pub struct ArrowSolver<T: Scalar> {
    engine: Engine<T>,
    /// Why [`Backend::Auto`] chose the CPU, if it did.
    fallback_reason: Option<String>,
    width: usize,
    /// Per system, the lower Cholesky factor of `S = C - B G` (`a x a`, `f64`).
    tip_factor: Vec<DMatrix<f64>>,
    shape: Option<Shape>,
}

/// Where the chain and the border products run.
enum Engine<T: Scalar> {
    /// The GPU: the border and `W = L^-1 P B^T` stay on the device (`crate::cuda::arrow`).
    Gpu(Box<GpuArrow<T>>),
    /// A CPU backend's chain, the border products on the host.
    Host {
        chain: Solver<T>,
        /// `G = T^-1 B^T` (`a` columns); `None` for width 0.
        g: Option<BlockVec<T>>,
        /// `B^T` as `a` columns of the chain (for `B z` in the solves); `None` for width 0.
        border: Option<BlockVec<T>>,
    },
}

impl<T: Scalar> std::fmt::Debug for ArrowSolver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrowSolver")
            .field("backend", &self.backend_name())
            .field("width", &self.width)
            .field("shape", &self.shape)
            .finish()
    }
}

impl<T: Scalar> ArrowSolver<T> {
    /// A solver whose chain runs on `backend`; on the GPU the border stays on the device
    /// too, and only `a x a` and `a x k` numbers cross to the host between the copies of
    /// the chain's data.
    pub fn new(backend: Backend) -> Result<Self> {
        let host = |chain| Engine::Host { chain, g: None, border: None };
        let (engine, fallback_reason) = match backend {
            Backend::Gpu => (Engine::Gpu(Box::new(GpuArrow::new()?)), None),
            Backend::Auto => match GpuArrow::new() {
                Ok(gpu) => (Engine::Gpu(Box::new(gpu)), None),
                Err(e) => (host(Solver::new(Backend::Cpu)?), Some(e.to_string())),
            },
            cpu => (host(Solver::new(cpu)?), None),
        };
        Ok(ArrowSolver { engine, fallback_reason, width: 0, tip_factor: Vec::new(), shape: None })
    }

    /// The backend of the chain (`gpu`, `cpu-threaded`, `cpu-sequential`).
    pub fn backend_name(&self) -> &'static str {
        match &self.engine {
            Engine::Gpu(_) => "gpu",
            Engine::Host { chain, .. } => chain.backend_name(),
        }
    }

    /// Why [`Backend::Auto`] chose the CPU, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// The chain's factorization.
    fn chain(&mut self) -> &mut dyn Factorization<T> {
        match &mut self.engine {
            Engine::Gpu(gpu) => gpu.chain(),
            Engine::Host { chain, .. } => chain,
        }
    }

    /// Factors `m`. A chain that is not positive definite is reported as by the plain
    /// solver; a Schur complement of the tip that is not, as block `N` (the tip) of its
    /// system.
    pub fn factor(&mut self, m: &BlockTridiagArrow<T>) -> Result<()> {
        self.shape = None;
        timed("arrow factor: tip checks", || m.validate_tip())?;
        let (sh, a) = (m.shape(), m.width);
        self.width = a;
        // B G per system (a x a).
        let bg = match &mut self.engine {
            Engine::Gpu(gpu) => gpu.factor(m)?,
            Engine::Host { chain, g, border } => {
                timed("arrow factor: border checks", || m.validate_border())?;
                timed("arrow factor: chain factor", || chain.factor(m.chain()))?;
                if a == 0 {
                    (*g, *border) = (None, None);
                    Vec::new()
                } else {
                    let (bt, gv) = host_border_solve(chain, m, border.take(), g.take())?;
                    let bg = (0..sh.batch).map(|s| border_times(bt.system(s), a, gv.system(s), a)).collect();
                    (*g, *border) = (Some(gv), Some(bt));
                    bg
                }
            }
        };
        let _schur = crate::trace::phase("arrow factor: Schur complement");
        // S = C - B G, in f64, factored per system.
        let factors: Result<Vec<DMatrix<f64>>> = bg
            .into_par_iter()
            .enumerate()
            .map(|(s, bg)| {
                let t = m.tip(s);
                let schur = DMatrix::from_fn(a, a, |r, c| 0.5 * (wide(t[c * a + r]) + wide(t[r * a + c])) - bg[(r, c)]);
                schur.cholesky().map(|ch| ch.l()).ok_or(Error::NotPositiveDefinite { system: s, block: sh.nblocks, level: 0 })
            })
            .collect();
        self.tip_factor = factors?;
        self.shape = Some(sh);
        Ok(())
    }

    /// Solves `A x = b` for every system and column.
    pub fn solve(&mut self, b: &ArrowVec<T>) -> Result<ArrowVec<T>> {
        let sh = self.shape.ok_or(Error::NotFactored)?;
        if b.chain.shape() != sh || b.width != self.width {
            return Err(Error::Shape(format!(
                "right-hand sides of {} with width {} for a factorization of {sh} with width {}",
                b.chain.shape(),
                b.width,
                self.width
            )));
        }
        let (a, k, d) = (self.width, b.chain.ncols(), sh.dim());
        if a == 0 {
            let z = timed("arrow solve: chain solve", || self.chain().solve(&b.chain))?;
            return ArrowVec::new(z, 0, Vec::new());
        }
        let factors = &self.tip_factor;
        // x_C = S^-1 (b_C - B z) per system, from B z.
        let tip_solve = |bz: Vec<DMatrix<f64>>| -> Vec<DMatrix<f64>> {
            bz.into_iter()
                .enumerate()
                .map(|(s, bz)| {
                    let bt = b.tip(s);
                    solve_with_factor(&factors[s], DMatrix::from_fn(a, k, |j, c| wide(bt[c * a + j]) - bz[(j, c)]))
                })
                .collect()
        };
        let (chain, xc) = match &mut self.engine {
            Engine::Gpu(gpu) => gpu.solve(&b.chain, tip_solve)?,
            Engine::Host { chain, g, border } => {
                let mut z = timed("arrow solve: chain solve", || chain.solve(&b.chain))?;
                let _tip = crate::trace::phase("arrow solve: tip and correction");
                let (g, border) = (g.as_ref().expect("width > 0"), border.as_ref().expect("width > 0"));
                let xc = tip_solve((0..sh.batch).map(|s| border_times(border.system(s), a, z.system(s), k)).collect());
                // x_T = z - G x_C.
                z.as_mut_slice().par_chunks_mut(d * k).enumerate().for_each(|(s, zs)| {
                    let (gs, xc) = (g.system(s), &xc[s]);
                    for c in 0..k {
                        zs[c * d..(c + 1) * d].par_chunks_mut(BORDER_ROWS).enumerate().for_each(|(run, xs)| {
                            let first = run * BORDER_ROWS;
                            for (q, x) in xs.iter_mut().enumerate() {
                                let corr: f64 = (0..a).map(|j| wide(gs[j * d + first + q]) * xc[(j, c)]).sum();
                                *x = cast(wide(*x) - corr);
                            }
                        });
                    }
                });
                (z, xc)
            }
        };
        let tip = xc.iter().flat_map(|m| m.iter().map(|&v| cast(v))).collect();
        ArrowVec::new(chain, a, tip)
    }

    /// `log det A` of every system: the chain's plus the Schur complement's.
    pub fn log_determinant(&mut self) -> Result<Vec<f64>> {
        self.shape.ok_or(Error::NotFactored)?;
        let mut v = self.chain().log_determinant()?;
        for (s, l) in self.tip_factor.iter().enumerate() {
            v[s] += 2.0 * l.diagonal().iter().map(|x| x.ln()).sum::<f64>();
        }
        Ok(v)
    }

    /// The diagonal and sub-diagonal blocks of `A^-1`, the border and the tip (module docs).
    pub fn selected_inverse(&mut self) -> Result<ArrowInverse<T>> {
        let sh = self.shape.ok_or(Error::NotFactored)?;
        let mut chain = self.chain().selected_inverse()?;
        let downloaded;
        let g = match &mut self.engine {
            Engine::Gpu(gpu) => {
                downloaded = gpu.g()?;
                downloaded.as_ref()
            }
            Engine::Host { g, .. } => g.as_ref(),
        };
        let Some(g) = g else {
            return Ok(ArrowInverse { chain, border: Vec::new(), tip: Vec::new() });
        };
        let (a, n, nb, d, ld) = (self.width, sh.block, sh.nblocks, sh.dim(), chain.ld());
        // S^-1 per system: the tip of A^-1.
        let sinv: Vec<DMatrix<f64>> = self.tip_factor.iter().map(|l| solve_with_factor(l, DMatrix::identity(a, a))).collect();
        let tip: Vec<T> = sinv.iter().flat_map(|m| m.iter().map(|&v| cast(v))).collect();
        // M_i = G_i S^-1 (n x a, G_i the rows of block i of G) for every system and block:
        // the border of A^-1 is -M_i^T, and the chain's blocks gain M_i G_j^T.
        let m_blocks: Vec<Vec<f64>> = (0..sh.batch * nb)
            .into_par_iter()
            .map(|blk| {
                let (s, i, gs) = (blk / nb, blk % nb, g.system(blk / nb));
                let mut m = vec![0.0f64; n * a];
                for j in 0..a {
                    for l in 0..a {
                        let w = sinv[s][(l, j)];
                        let gl = &gs[l * d + i * n..l * d + (i + 1) * n];
                        for (v, &x) in m[j * n..(j + 1) * n].iter_mut().zip(gl) {
                            *v += wide(x) * w;
                        }
                    }
                }
                m
            })
            .collect();
        let mut border = vec![T::zero(); sh.batch * nb * a * n];
        border.par_chunks_mut(a * n).zip(&m_blocks).for_each(|(blk, m)| {
            for c in 0..n {
                for r in 0..a {
                    blk[c * a + r] = cast(-m[r * n + c]);
                }
            }
        });
        // Block (bi, bj) of system s gains M_bi G_bj^T.
        let add_correction = |blk: &mut [T], s: usize, bi: usize, bj: usize| {
            let (m, gs) = (&m_blocks[s * nb + bi], g.system(s));
            for c in 0..n {
                for r in 0..n {
                    let corr: f64 = (0..a).map(|j| m[j * n + r] * wide(gs[j * d + bj * n + c])).sum();
                    blk[c * ld + r] = cast(wide(blk[c * ld + r]) + corr);
                }
            }
        };
        let bl = chain.block_len();
        let (diag, sub) = chain.parts_mut();
        diag.par_chunks_mut(bl).enumerate().for_each(|(blk, block)| add_correction(block, blk / nb, blk % nb, blk % nb));
        if nb > 1 {
            sub.par_chunks_mut(bl).enumerate().for_each(|(blk, block)| {
                let (s, i) = (blk / (nb - 1), blk % (nb - 1));
                add_correction(block, s, i + 1, i);
            });
        }
        Ok(ArrowInverse { chain, border, tip })
    }
}

/// The host engine's `B^T` (as `a` columns of the chain) and `G = T^-1 B^T`, in the
/// buffers of the last factor of this shape when there are some: fresh memory costs a
/// page fault per page on first touch, more than the copies themselves.
fn host_border_solve<T: Scalar>(
    chain: &mut Solver<T>,
    m: &BlockTridiagArrow<T>,
    bt: Option<BlockVec<T>>,
    g: Option<BlockVec<T>>,
) -> Result<(BlockVec<T>, BlockVec<T>)> {
    let (sh, a) = (m.shape(), m.width);
    let (n, d) = (sh.block, sh.dim());
    let transpose = crate::trace::phase("arrow factor: B^T as columns");
    let reuse = |v: Option<BlockVec<T>>| match v {
        Some(v) if v.shape() == sh && v.ncols() == a => Ok(v),
        _ => BlockVec::zeros(sh, a),
    };
    let (mut bt, mut g) = (reuse(bt)?, reuse(g)?);
    // Column j of system s is row j of every B_i; in parallel over columns and runs of
    // blocks: one system may be all there is.
    bt.as_mut_slice().par_chunks_mut(d).enumerate().for_each(|(col, column)| {
        let (s, j) = (col / a, col % a);
        column.par_chunks_mut(n * BORDER_ROWS.div_ceil(n)).enumerate().for_each(|(run, part)| {
            let first = run * BORDER_ROWS.div_ceil(n);
            for (i, rows) in part.chunks_mut(n).enumerate() {
                let b = m.arrow_block(s, first + i);
                for (c, v) in rows.iter_mut().enumerate() {
                    *v = b[c * a + j];
                }
            }
        });
    });
    drop(transpose);
    timed("arrow factor: G = T^-1 B^T", || {
        crate::cuda::parallel_copy(bt.as_slice(), g.as_mut_slice());
        chain.solve_in_place(&mut g)
    })?;
    Ok((bt, g))
}

/// Rows of one task in the border products: fixed, so that the sums run in the same order
/// whatever the number of threads.
const BORDER_ROWS: usize = 4096;

/// `B z` (`a x k`) from `bt` = `B^T` (`a` columns of `d` values) and `z` (`k` columns):
/// partial products over runs of [`BORDER_ROWS`] rows in parallel, added in row order.
fn border_times<T: Scalar>(bt: &[T], a: usize, z: &[T], k: usize) -> DMatrix<f64> {
    let d = z.len() / k;
    let parts: Vec<Vec<f64>> = (0..d.div_ceil(BORDER_ROWS))
        .into_par_iter()
        .map(|run| {
            let rows = run * BORDER_ROWS..((run + 1) * BORDER_ROWS).min(d);
            // Every (j, c) sum has its own accumulator: independent chains, no latency bound.
            let mut acc = vec![0.0f64; a * k];
            for q in rows {
                for c in 0..k {
                    let zq = wide(z[c * d + q]);
                    for (j, v) in acc[c * a..(c + 1) * a].iter_mut().enumerate() {
                        *v += wide(bt[j * d + q]) * zq;
                    }
                }
            }
            acc
        })
        .collect();
    let mut sum = DMatrix::zeros(a, k);
    for part in parts {
        sum += DMatrix::from_vec(a, k, part);
    }
    sum
}

/// `L^-T L^-1 rhs` for the lower Cholesky factor `l`.
fn solve_with_factor(l: &DMatrix<f64>, rhs: DMatrix<f64>) -> DMatrix<f64> {
    let y = l.solve_lower_triangular(&rhs).expect("a Cholesky factor has a positive diagonal");
    l.transpose().solve_upper_triangular(&y).expect("a Cholesky factor has a positive diagonal")
}
