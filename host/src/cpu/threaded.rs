//! Multi-threaded CPU solver: the nested-dissection schedule of the GPU solver, with
//! faer's SIMD dense kernels per block and rayon across the nodes of a level.
//!
//! Each level runs in two phases, so no block is written by two tasks:
//! - A (one task per node): `L_ii = chol(D_i)`, `U_l = L_ii^-1 A[i,l]`,
//!   `U_r = L_ii^-1 A[i,r]`, and the fill `A[r,l] = -U_r^T U_l` into the slot of the node
//!   that consumes it (see `blocktri_device::layout::fill_slot`);
//! - B (one task per remaining block `j`): `D_j -= U^T U` for the (at most two) nodes of
//!   the level adjacent to `j`, in a fixed order, so results are deterministic.
//!
//! Storage per node: `L_ii`, and `U_l`, `U_r` (the transposes of `L_{l,i}`, `L_{r,i}`), all
//! `n x n` with leading dimension `n`; couplings are kept as `A[i, neighbour]` (rows of the
//! node itself).

use super::DisjointMut;
use crate::error::{Error, Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::Scalar;
use crate::solver::Factorization;
use blocktri_device::layout::{fill_slot, left_of, level_of, levels, node_number, nodes_in_level, right_of};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{solve_lower_triangular_in_place, solve_upper_triangular_in_place};
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;
use std::sync::Mutex;

/// Nested-dissection block Cholesky on the CPU threads (rayon's global pool, or a pool of
/// its own from [`ThreadedCholesky::with_threads`]).
///
/// Called from inside a rayon pool (a `par_iter` of solves, say), [`ThreadedCholesky::new`]
/// runs on that pool's threads, not on the global pool's: no extra threads, no
/// oversubscription, no deadlock (nested rayon work is stolen, never waited for by a
/// blocked thread). `Send` and `Sync`.
///
/// ```
/// use blocktri::{cpu::ThreadedCholesky, generate, Factorization};
/// let a = generate::random_spd::<f64>(1, 100, 4, 0).unwrap();
/// let b = generate::random_rhs(a.shape(), 2, 1).unwrap();
/// let mut chol = ThreadedCholesky::new();
/// let x = chol.factor_solve(&a, &b).unwrap();
/// assert!(blocktri::residual::accuracy(&a, &x, &b).unwrap().relative_residual < 1e-12);
/// ```
#[derive(Debug, Default)]
pub struct ThreadedCholesky<T: Scalar> {
    shape: Option<Shape>,
    diag: Vec<T>,
    ul: Vec<T>,
    ur: Vec<T>,
    pool: Option<rayon::ThreadPool>,
}

/// Views an `n x n` column-major block (leading dimension `n`) at `ptr`.
///
/// # Safety
/// `ptr` must point to `n * n` values that no other task accesses while the view lives.
unsafe fn block_mut<'a, T>(ptr: *mut T, n: usize) -> MatMut<'a, T> {
    unsafe { MatMut::from_raw_parts_mut(ptr, n, n, 1, n as isize) }
}

/// Read-only [`block_mut`].
///
/// # Safety
/// No task may write the block while the view lives.
unsafe fn block_ref<'a, T>(ptr: *const T, n: usize) -> MatRef<'a, T> {
    unsafe { MatRef::from_raw_parts(ptr, n, n, 1, n as isize) }
}

impl<T: Scalar> ThreadedCholesky<T> {
    /// A solver on rayon's global thread pool.
    pub fn new() -> Self {
        ThreadedCholesky { shape: None, diag: Vec::new(), ul: Vec::new(), ur: Vec::new(), pool: None }
    }

    /// A solver on a pool of its own with `threads` threads.
    pub fn with_threads(threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()
            .map_err(|e| Error::Unsupported(format!("cannot build a thread pool: {e}")))?;
        Ok(ThreadedCholesky { pool: Some(pool), ..Self::new() })
    }

    fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }

    fn factor_impl(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        let shape = a.shape();
        let (n, nb, ld, batch) = (shape.block, shape.nblocks, a.ld(), shape.batch);
        let blk = n * n;
        let mut diag = vec![T::zero(); batch * nb * blk];
        let mut ul = vec![T::zero(); batch * nb * blk];
        let mut ur = vec![T::zero(); batch * nb * blk];
        // Working diagonal blocks and the level-0 couplings A[i, i-1] = C_{i-1} and
        // A[i, i+1] = C_i^T.
        for s in 0..batch {
            for b in 0..nb {
                let dst = &mut diag[(s * nb + b) * blk..][..blk];
                let src = a.diag_block(s, b);
                for c in 0..n {
                    dst[c * n..c * n + n].copy_from_slice(&src[c * ld..c * ld + n]);
                }
                if level_of(b as u32 + 1) != 0 {
                    continue;
                }
                if b > 0 {
                    let src = a.sub_block(s, b - 1);
                    let dst = &mut ul[(s * nb + b) * blk..][..blk];
                    for c in 0..n {
                        dst[c * n..c * n + n].copy_from_slice(&src[c * ld..c * ld + n]);
                    }
                }
                if b + 1 < nb {
                    let src = a.sub_block(s, b);
                    let dst = &mut ur[(s * nb + b) * blk..][..blk];
                    for c in 0..n {
                        for r in 0..n {
                            dst[c * n + r] = src[r * ld + c];
                        }
                    }
                }
            }
        }
        let nbu = nb as u32;
        let failure: Mutex<Option<(usize, usize, usize)>> = Mutex::new(None);
        {
            let (d, l, r) = (DisjointMut::new(&mut diag), DisjointMut::new(&mut ul), DisjointMut::new(&mut ur));
            let scratch = cholesky_in_place_scratch::<T>(n, Par::Seq, Default::default());
            for m in 0..levels(nbu) {
                let count = nodes_in_level(nbu, m) as usize;
                // Phase A: eliminate the nodes of level m.
                (0..batch * count).into_par_iter().for_each(|job| {
                    let (s, t) = (job / count, job % count);
                    let i = node_number(m, t as u32);
                    let b = (i - 1) as usize;
                    let at = |blk_idx: usize| (s * nb + blk_idx) * blk;
                    // SAFETY: block b of `d`, `l`, `r` belongs to this node alone in phase A.
                    let mut lmat = unsafe { block_mut(d.at(at(b), blk), n) };
                    let mut mem = MemBuffer::new(scratch);
                    if cholesky_in_place(lmat.rb_mut(), Default::default(), Par::Seq, MemStack::new(&mut mem), Default::default()).is_err()
                    {
                        let mut f = failure.lock().unwrap_or_else(|e| e.into_inner());
                        let key = (s, m as usize, b);
                        if f.is_none_or(|old| key < old) {
                            *f = Some(key);
                        }
                        return;
                    }
                    let lref = lmat.rb();
                    let (left, right) = (left_of(i, m), right_of(i, m, nbu));
                    if left.is_some() {
                        // SAFETY: own block.
                        solve_lower_triangular_in_place(lref, unsafe { block_mut(l.at(at(b), blk), n) }, Par::Seq);
                    }
                    if right.is_some() {
                        // SAFETY: own block.
                        solve_lower_triangular_in_place(lref, unsafe { block_mut(r.at(at(b), blk), n) }, Par::Seq);
                    }
                    if let (Some(li), Some(ri)) = (left, right) {
                        // SAFETY: own blocks, read only from here on.
                        let (u_l, u_r) = unsafe { (block_ref(l.at(at(b), blk), n), block_ref(r.at(at(b), blk), n)) };
                        let (owner, is_left) = fill_slot(li, ri, m);
                        let target = at((owner - 1) as usize);
                        // SAFETY: each fill slot is written by exactly one node of level m and
                        // read only on level m + 1.
                        if is_left {
                            // A[r, l] = -U_r^T U_l.
                            matmul(unsafe { block_mut(l.at(target, blk), n) }, Accum::Replace, u_r.transpose(), u_l, -T::one(), Par::Seq);
                        } else {
                            // A[l, r] = -U_l^T U_r.
                            matmul(unsafe { block_mut(r.at(target, blk), n) }, Accum::Replace, u_l.transpose(), u_r, -T::one(), Par::Seq);
                        }
                    }
                });
                if failure.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
                    break;
                }
                // Phase B: update the remaining diagonal blocks next to level-m nodes.
                let step = 1usize << m;
                let targets = nb / (2 * step);
                (0..batch * targets).into_par_iter().for_each(|job| {
                    let (s, q) = (job / targets.max(1), job % targets.max(1));
                    let j = 2 * step * (q + 1); // block number, a multiple of 2^(m+1)
                    let at = |blk_idx: usize| (s * nb + blk_idx) * blk;
                    // SAFETY: D_j is written by this task only; U blocks are read-only now.
                    let mut dj = unsafe { block_mut(d.at(at(j - 1), blk), n) };
                    let left_child = j - step; // its right neighbour is j
                    let u = unsafe { block_ref(r.at(at(left_child - 1), blk), n) };
                    matmul(dj.rb_mut(), Accum::Add, u.transpose(), u, -T::one(), Par::Seq);
                    if j + step <= nb {
                        let u = unsafe { block_ref(l.at(at(j + step - 1), blk), n) };
                        matmul(dj.rb_mut(), Accum::Add, u.transpose(), u, -T::one(), Par::Seq);
                    }
                });
            }
        }
        if let Some((s, m, b)) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(Error::NotPositiveDefinite { system: s, block: b, level: m });
        }
        self.diag = diag;
        self.ul = ul;
        self.ur = ur;
        self.shape = Some(shape);
        Ok(())
    }

    fn solve_impl(&self, b: &mut BlockVec<T>) -> Result<()> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        let (n, nb, batch, k, dim) = (shape.block, shape.nblocks, shape.batch, b.ncols(), shape.dim());
        let (blk, nbu) = (n * n, nb as u32);
        let rhs = DisjointMut::new(b.as_mut_slice());
        // Segment of block `idx` of system `s`: n x k, column stride dim.
        let seg = |s: usize, idx: usize| (s * dim * k) + idx * n;
        // SAFETY (all uses): segments are disjoint row ranges of the right-hand side; a
        // phase writes each segment from one task and reads only segments it does not write.
        let seg_mut = |off: usize| unsafe { MatMut::from_raw_parts_mut(rhs.at(off, (k - 1) * dim + n), n, k, 1, dim as isize) };
        let seg_ref = |off: usize| unsafe { MatRef::from_raw_parts(rhs.at(off, (k - 1) * dim + n) as *const T, n, k, 1, dim as isize) };
        let fac = |arr: &Vec<T>, s: usize, idx: usize| unsafe { block_ref(arr.as_ptr().add((s * nb + idx) * blk), n) };
        let top = levels(nbu);
        for m in 0..top {
            let count = nodes_in_level(nbu, m) as usize;
            (0..batch * count).into_par_iter().for_each(|job| {
                let (s, t) = (job / count, job % count);
                let b = (node_number(m, t as u32) - 1) as usize;
                solve_lower_triangular_in_place(fac(&self.diag, s, b), seg_mut(seg(s, b)), Par::Seq);
            });
            let step = 1usize << m;
            let targets = nb / (2 * step);
            (0..batch * targets).into_par_iter().for_each(|job| {
                let (s, q) = (job / targets.max(1), job % targets.max(1));
                let j = 2 * step * (q + 1);
                let mut bj = seg_mut(seg(s, j - 1));
                let lc = j - step;
                matmul(bj.rb_mut(), Accum::Add, fac(&self.ur, s, lc - 1).transpose(), seg_ref(seg(s, lc - 1)), -T::one(), Par::Seq);
                if j + step <= nb {
                    let rc = j + step;
                    matmul(bj.rb_mut(), Accum::Add, fac(&self.ul, s, rc - 1).transpose(), seg_ref(seg(s, rc - 1)), -T::one(), Par::Seq);
                }
            });
        }
        for m in (0..top).rev() {
            let count = nodes_in_level(nbu, m) as usize;
            (0..batch * count).into_par_iter().for_each(|job| {
                let (s, t) = (job / count, job % count);
                let i = node_number(m, t as u32);
                let b = (i - 1) as usize;
                let mut xi = seg_mut(seg(s, b));
                if let Some(l) = left_of(i, m) {
                    matmul(xi.rb_mut(), Accum::Add, fac(&self.ul, s, b), seg_ref(seg(s, (l - 1) as usize)), -T::one(), Par::Seq);
                }
                if let Some(r) = right_of(i, m, nbu) {
                    matmul(xi.rb_mut(), Accum::Add, fac(&self.ur, s, b), seg_ref(seg(s, (r - 1) as usize)), -T::one(), Par::Seq);
                }
                solve_upper_triangular_in_place(fac(&self.diag, s, b).transpose(), xi, Par::Seq);
            });
        }
        Ok(())
    }
}

impl<T: Scalar> Factorization<T> for ThreadedCholesky<T> {
    fn factor(&mut self, a: &BlockTridiag<T>) -> Result<()> {
        self.shape = None;
        a.validate(T::symmetry_tolerance())?;
        let mut this = std::mem::take(self);
        let pool = this.pool.take();
        let result = match &pool {
            Some(p) => p.install(|| this.factor_impl(a)),
            None => this.factor_impl(a),
        };
        this.pool = pool;
        *self = this;
        result
    }

    fn solve_in_place(&mut self, b: &mut BlockVec<T>) -> Result<()> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        if b.shape() != shape {
            shape_err!("right-hand side shape {} does not match the factorization {shape}", b.shape());
        }
        b.validate()?;
        self.run(|| self.solve_impl(b))?;
        if let Err(Error::NonFinite { system, block, .. }) = b.validate() {
            return Err(Error::NonFiniteSolution { system, block });
        }
        Ok(())
    }

    fn log_determinant(&mut self) -> Result<Vec<f64>> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        let (nb, n) = (shape.nblocks, shape.block);
        Ok(self.diag.chunks_exact(nb * n * n).map(|system| crate::logdet::sum_of_diagonal_logs(system, nb, n, n)).collect())
    }

    fn selected_inverse(&mut self) -> Result<BlockTridiag<T>> {
        let shape = self.shape.ok_or(Error::NotFactored)?;
        self.run(|| super::selinv::nested_dissection(shape, &self.diag, &self.ul, &self.ur))
    }

    fn shape(&self) -> Option<Shape> {
        self.shape
    }

    fn name(&self) -> &'static str {
        "cpu-threaded"
    }
}
