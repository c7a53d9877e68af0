//! The nested-dissection schedule of a shape, made explicit: levels, each node's
//! neighbours at its elimination, where its fill goes, the device layout, flop counts;
//! and a CPU replay of the GPU algorithm with the kernels' own tile routines.

use crate::error::{Error, Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::{Precision, Scalar};
use blocktri_device::layout::{fill_slot, left_of, level_of, levels, node_number, nodes_in_level, right_of, round_up};
use blocktri_device::team::Solo;
use blocktri_device::tile::{MatRef, NO_FAILURE, potrf_panel, product, trsm};

/// Which coupling slot of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The coupling with the left neighbour.
    Left,
    /// The coupling with the right neighbour.
    Right,
}

/// One node (block) of a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// 0-based block index.
    pub block: usize,
    /// Left neighbour at elimination (0-based), if any.
    pub left: Option<usize>,
    /// Right neighbour at elimination (0-based), if any.
    pub right: Option<usize>,
    /// Where the fill `A[right, left]` created by this node is stored: the slot of the node
    /// (0-based) that consumes it on the next level.
    pub fill: Option<(usize, Side)>,
}

/// The nodes eliminated together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// Level number (0 = odd 1-based indices).
    pub index: usize,
    /// Its nodes in launch order.
    pub nodes: Vec<Node>,
}

/// Whether 0-based block `block` of a chain of `nblocks` blocks lies on an edge of the
/// nested-dissection tree: no left or no right neighbour at its elimination. These blocks
/// are exactly the first and the last block and their ancestors (tested below), so a
/// right-hand side that is zero elsewhere has a forward solution zero elsewhere, and the
/// backward solution on them needs only them: what the kernels' `edge_from` relies on
/// (`blocktri_device::level::SolveArgs::edge_from`).
pub(crate) fn on_edge(nblocks: usize, block: usize) -> bool {
    let (Ok(nb), Ok(i)) = (u32::try_from(nblocks), u32::try_from(block + 1)) else { return false };
    let m = level_of(i);
    block < nblocks && (left_of(i, m).is_none() || right_of(i, m, nb).is_none())
}

/// The schedule and device layout for one shape.
///
/// ```
/// use blocktri::{plan::Plan, Shape, Precision};
/// let plan = Plan::new(Shape::new(1, 5, 3).unwrap(), Precision::F64).unwrap();
/// assert_eq!(plan.levels().len(), 3); // ceil(log2(5 + 1))
/// assert_eq!(plan.ld(), 8);           // 3 rounded up to 64 bytes of f64
/// let blocks: Vec<_> = plan.levels()[0].nodes.iter().map(|n| n.block).collect();
/// assert_eq!(blocks, vec![0, 2, 4]);
/// ```
#[derive(Clone, Debug)]
pub struct Plan {
    shape: Shape,
    ld: usize,
    elem_bytes: usize,
    levels: Vec<Level>,
    chain: bool,
}

impl Plan {
    /// The schedule of `shape`; the leading dimension is padded to 8 (f64) or 16 (f32)
    /// elements.
    pub fn new(shape: Shape, precision: Precision) -> Result<Self> {
        let nb = u32::try_from(shape.nblocks).map_err(|_| Error::Shape(format!("{shape}: too many blocks")))?;
        let levels = (0..levels(nb))
            .map(|m| Level {
                index: m as usize,
                nodes: (0..nodes_in_level(nb, m))
                    .map(|t| {
                        let i = node_number(m, t);
                        let (l, r) = (left_of(i, m), right_of(i, m, nb));
                        let fill = match (l, r) {
                            (Some(l), Some(r)) => {
                                let (owner, is_left) = fill_slot(l, r, m);
                                Some(((owner - 1) as usize, if is_left { Side::Left } else { Side::Right }))
                            }
                            _ => None,
                        };
                        Node { block: (i - 1) as usize, left: l.map(|v| (v - 1) as usize), right: r.map(|v| (v - 1) as usize), fill }
                    })
                    .collect(),
            })
            .collect();
        Ok(Self::with_levels(shape, precision, levels, false))
    }

    /// A plan of `levels`, its device layout from `shape` and `precision`.
    fn with_levels(shape: Shape, precision: Precision, levels: Vec<Level>, chain: bool) -> Self {
        let elem_bytes = if precision == Precision::F64 { 8 } else { 4 };
        let ld = round_up(shape.block as u32, (64 / elem_bytes) as u32) as usize;
        Plan { shape, ld, elem_bytes, levels, chain }
    }

    /// The schedule of the chain engine (`blocktri_device::chain`): the blocks in natural
    /// order, one per "level", each with its right neighbour only and no fill; the
    /// couplings are the input sub-diagonal blocks. Same storage and replay as
    /// [`Plan::new`].
    ///
    /// ```
    /// use blocktri::{plan::Plan, Shape, Precision};
    /// let plan = Plan::chain(Shape::new(1, 5, 3).unwrap(), Precision::F64).unwrap();
    /// assert_eq!(plan.levels().len(), 5);
    /// assert_eq!(plan.levels()[1].nodes[0].right, Some(2));
    /// // Sequential block Cholesky: n^3 / 3 + 2 n^3 per block with a successor.
    /// assert_eq!(plan.factor_flops(), 4.0 * (9.0 + 54.0) + 9.0);
    /// ```
    pub fn chain(shape: Shape, precision: Precision) -> Result<Self> {
        let nb = shape.nblocks;
        u32::try_from(nb).map_err(|_| Error::Shape(format!("{shape}: too many blocks")))?;
        let levels = (0..nb)
            .map(|b| Level { index: b, nodes: vec![Node { block: b, left: None, right: (b + 1 < nb).then_some(b + 1), fill: None }] })
            .collect();
        Ok(Self::with_levels(shape, precision, levels, true))
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }
    /// Leading dimension of the device blocks.
    pub fn ld(&self) -> usize {
        self.ld
    }
    /// The levels in elimination order.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Device bytes: input blocks (`2N - 1`), the factor (`L_ii`, `L_li`, `L_ri`: `3N`),
    /// `nrhs` right-hand-side columns, status words.
    pub fn device_bytes(&self, nrhs: usize) -> usize {
        let s = self.shape;
        s.batch * ((5 * s.nblocks - 1) * self.ld * s.block * self.elem_bytes + s.dim() * nrhs * self.elem_bytes + 16)
    }

    /// Useful flops of the factorization: per node `n^3/3` (potrf), `n^3` per coupling
    /// for the triangular solve and for the diagonal update, `2 n^3` for the fill.
    pub fn factor_flops(&self) -> f64 {
        let n = self.shape.block as f64;
        let n3 = n * n * n;
        let per_level: f64 = self
            .levels
            .iter()
            .flat_map(|l| l.nodes.iter())
            .map(|node| {
                let couplings = node.left.is_some() as u8 as f64 + node.right.is_some() as u8 as f64;
                n3 / 3.0 + 2.0 * couplings * n3 + if node.fill.is_some() { 2.0 * n3 } else { 0.0 }
            })
            .sum();
        per_level * self.shape.batch as f64
    }

    /// Useful flops of a solve with `k` columns: per node two triangular solves
    /// (`2 n^2 k`) and `4 n^2 k` per coupling.
    pub fn solve_flops(&self, k: usize) -> f64 {
        let (n, k) = (self.shape.block as f64, k as f64);
        let per: f64 = self
            .levels
            .iter()
            .flat_map(|l| l.nodes.iter())
            .map(|node| 2.0 * n * n * k + 4.0 * n * n * k * (node.left.is_some() as u8 + node.right.is_some() as u8) as f64)
            .sum();
        per * self.shape.batch as f64
    }

    /// Bytes the factorization must move at least: read the input blocks, write the
    /// three factor blocks per node.
    pub fn factor_bytes(&self) -> f64 {
        let s = self.shape;
        (s.batch * (2 * s.nblocks - 1 + 3 * s.nblocks) * s.block * s.block * self.elem_bytes) as f64
    }

    /// Replays the GPU factorization on the CPU, node by node, with the kernels' tile
    /// routines (one CPU thread as the team) and the same storage scheme.
    pub fn replay_factor<T: Scalar>(&self, a: &BlockTridiag<T>) -> Result<PlanFactor<T>> {
        if a.shape() != self.shape {
            shape_err!("matrix shape {} does not match the plan {}", a.shape(), self.shape);
        }
        a.validate(T::symmetry_tolerance())?;
        let (n, ld, nb) = (self.shape.block, self.ld, self.shape.nblocks);
        let blk = ld * n;
        let total = self.shape.batch * nb * blk;
        let (mut diag, mut left, mut right) = (vec![T::zero(); total], vec![T::zero(); total], vec![T::zero(); total]);
        // diag starts as the input (the GPU adds input + accumulated updates; same sum).
        for s in 0..self.shape.batch {
            for b in 0..nb {
                let src = a.diag_block(s, b);
                for c in 0..n {
                    for r in 0..n {
                        diag[(s * nb + b) * blk + c * ld + r] = src[c * a.ld() + r];
                    }
                }
            }
        }
        let mut panel = vec![T::zero(); 3 * n * n];
        let mut piv = vec![T::zero(); 2 * n];
        let mut status = 0u32;
        for level in &self.levels {
            for s in 0..self.shape.batch {
                for node in &level.nodes {
                    let at = |b: usize| (s * nb + b) * blk;
                    let rows = n * (1 + node.left.is_some() as usize + node.right.is_some() as usize);
                    // The couplings are input blocks on level 0 and everywhere in a chain.
                    let input_couplings = level.index == 0 || self.chain;
                    let (lrow, rrow) = (n, n * (1 + node.left.is_some() as usize));
                    for c in 0..n {
                        for r in 0..n {
                            panel[c * rows + r] = diag[at(node.block) + c * ld + r];
                            if node.left.is_some() {
                                let v = if input_couplings {
                                    a.sub_block(s, node.block - 1)[c * a.ld() + r]
                                } else {
                                    left[at(node.block) + c * ld + r]
                                };
                                panel[r * rows + lrow + c] = v;
                            }
                            if node.right.is_some() {
                                let v = if input_couplings {
                                    a.sub_block(s, node.block)[c * a.ld() + r]
                                } else {
                                    right[at(node.block) + c * ld + r]
                                };
                                panel[c * rows + rrow + r] = v;
                            }
                        }
                    }
                    // SAFETY: buffers sized for a rows x n panel, 2n pivots, one status word.
                    let failed = unsafe { potrf_panel(Solo, panel.as_mut_ptr(), rows, n, rows, piv.as_mut_ptr(), &mut status) };
                    if failed != NO_FAILURE {
                        let level = if self.chain { 0 } else { level.index };
                        return Err(Error::NotPositiveDefinite { system: s, block: node.block, level });
                    }
                    for c in 0..n {
                        for r in 0..n {
                            diag[at(node.block) + c * ld + r] = if r >= c { panel[c * rows + r] } else { T::zero() };
                            if node.left.is_some() {
                                left[at(node.block) + c * ld + r] = panel[c * rows + lrow + r];
                            }
                            if node.right.is_some() {
                                right[at(node.block) + c * ld + r] = panel[c * rows + rrow + r];
                            }
                        }
                    }
                    let kl = MatRef::col_major(panel[lrow..].as_ptr(), rows);
                    let kr = MatRef::col_major(panel[rrow.min(panel.len())..].as_ptr(), rows);
                    // SAFETY (products): views inside `panel`; emits touch distinct entries.
                    if let Some(l) = node.left {
                        let dl = &mut diag[at(l)..at(l) + blk];
                        unsafe { product(Solo, n, n, n, kl, kl.t(), |r, c, v| dl[c * ld + r] -= v) };
                    }
                    if let Some(r) = node.right {
                        let dr = &mut diag[at(r)..at(r) + blk];
                        unsafe { product(Solo, n, n, n, kr, kr.t(), |rr, c, v| dr[c * ld + rr] -= v) };
                    }
                    if let Some((owner, side)) = node.fill {
                        let dst = if side == Side::Left { &mut left } else { &mut right };
                        let off = at(owner);
                        unsafe { product(Solo, n, n, n, kr, kl.t(), |rr, c, v| dst[off + c * ld + rr] = -v) };
                    }
                }
            }
        }
        Ok(PlanFactor { plan: self.clone(), diag, left, right })
    }
}

/// The result of [`Plan::replay_factor`]: the per-node factor blocks as the GPU stores
/// them.
#[derive(Clone, Debug)]
pub struct PlanFactor<T> {
    plan: Plan,
    /// `L_ii` per block (leading dimension [`Plan::ld`]).
    pub diag: Vec<T>,
    /// `L_{left,i}` per block.
    pub left: Vec<T>,
    /// `L_{right,i}` per block.
    pub right: Vec<T>,
}

impl<T: Scalar> PlanFactor<T> {
    /// Solves with the GPU's level order and the kernels' tile routines.
    pub fn solve(&self, b: &BlockVec<T>) -> Result<BlockVec<T>> {
        let shape = self.plan.shape;
        if b.shape() != shape {
            shape_err!("right-hand side shape {} does not match {shape}", b.shape());
        }
        let (n, ld, nb, k, dim) = (shape.block, self.plan.ld, shape.nblocks, b.ncols(), shape.dim());
        let blk = ld * n;
        let mut x = b.clone();
        let mut z = vec![T::zero(); n * k];
        let mut inv = vec![T::zero(); n];
        for s in 0..shape.batch {
            let xs = x.system_mut(s);
            let at = |b: usize| (s * nb + b) * blk;
            let load = |xs: &[T], z: &mut [T], b: usize| {
                for c in 0..k {
                    for r in 0..n {
                        z[c * n + r] = xs[c * dim + b * n + r];
                    }
                }
            };
            for level in &self.plan.levels {
                for node in &level.nodes {
                    load(xs, &mut z, node.block);
                    let l = self.diag[at(node.block)..].as_ptr();
                    // SAFETY: tiles inside the factor arrays and `z`.
                    unsafe {
                        trsm::invert_diagonal(Solo, l, ld, n, inv.as_mut_ptr());
                        trsm::trsm_lower(Solo, l, ld, n, z.as_mut_ptr(), n, k, inv.as_ptr());
                    }
                    let y = MatRef::col_major(z.as_ptr(), n);
                    for c in 0..k {
                        for r in 0..n {
                            xs[c * dim + node.block * n + r] = z[c * n + r];
                        }
                    }
                    for (nbr, arr) in [(node.left, &self.left), (node.right, &self.right)] {
                        if let Some(j) = nbr {
                            let kmat = MatRef::col_major(arr[at(node.block)..].as_ptr(), ld);
                            unsafe { product(Solo, n, k, n, kmat, y, |r, c, v| xs[c * dim + j * n + r] -= v) };
                        }
                    }
                }
            }
            for level in self.plan.levels.iter().rev() {
                for node in &level.nodes {
                    load(xs, &mut z, node.block);
                    for (nbr, arr) in [(node.left, &self.left), (node.right, &self.right)] {
                        if let Some(j) = nbr {
                            let kt = MatRef::col_major(arr[at(node.block)..].as_ptr(), ld).t();
                            let xj = MatRef::col_major(xs[j * n..].as_ptr(), dim);
                            unsafe { product(Solo, n, k, n, kt, xj, |r, c, v| z[c * n + r] -= v) };
                        }
                    }
                    let l = self.diag[at(node.block)..].as_ptr();
                    unsafe {
                        trsm::invert_diagonal(Solo, l, ld, n, inv.as_mut_ptr());
                        trsm::trsm_lower_transposed(Solo, l, ld, n, z.as_mut_ptr(), n, k, inv.as_ptr());
                    }
                    for c in 0..k {
                        for r in 0..n {
                            xs[c * dim + node.block * n + r] = z[c * n + r];
                        }
                    }
                }
            }
        }
        Ok(x)
    }

    /// The factor of system `s` as a dense lower-triangular matrix in elimination order,
    /// with that order (`order[p]` = block at position `p`): `L L^T = P A P^T`.
    pub fn permuted_dense(&self, s: usize) -> (Vec<usize>, nalgebra::DMatrix<T>) {
        let shape = self.plan.shape;
        let (n, ld, nb) = (shape.block, self.plan.ld, shape.nblocks);
        let order: Vec<usize> = self.plan.levels.iter().flat_map(|l| l.nodes.iter().map(|n| n.block)).collect();
        let mut pos = vec![0; nb];
        for (p, &b) in order.iter().enumerate() {
            pos[b] = p;
        }
        let mut l = nalgebra::DMatrix::zeros(nb * n, nb * n);
        let at = |b: usize| (s * nb + b) * ld * n;
        for level in &self.plan.levels {
            for node in &level.nodes {
                let pi = pos[node.block];
                for c in 0..n {
                    for r in 0..n {
                        l[(pi * n + r, pi * n + c)] = self.diag[at(node.block) + c * ld + r];
                        if let Some(j) = node.left {
                            l[(pos[j] * n + r, pi * n + c)] = self.left[at(node.block) + c * ld + r];
                        }
                        if let Some(j) = node.right {
                            l[(pos[j] * n + r, pi * n + c)] = self.right[at(node.block) + c * ld + r];
                        }
                    }
                }
            }
        }
        (order, l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks of every elimination-tree path from `from` to the root: `from` and,
    /// repeatedly, the neighbours at elimination (every one of them is an ancestor).
    fn ancestors(plan: &Plan, from: usize) -> Vec<bool> {
        let nb = plan.shape().nblocks;
        let mut node = vec![None; nb];
        for n in plan.levels().iter().flat_map(|l| &l.nodes) {
            node[n.block] = Some(*n);
        }
        let mut seen = vec![false; nb];
        let mut todo = vec![from];
        while let Some(b) = todo.pop() {
            if !std::mem::replace(&mut seen[b], true) {
                let n = node[b].expect("every block is a node");
                todo.extend(n.left.into_iter().chain(n.right));
            }
        }
        seen
    }

    #[test]
    fn the_edge_blocks_are_the_paths_of_the_first_and_last_block() {
        let sizes = (1..1500).chain([2047, 2048, 2049, 4095, 4096, 4097, 12289]);
        for nb in sizes {
            let plan = Plan::new(Shape::new(1, nb, 1).unwrap(), Precision::F64).unwrap();
            let (first, last) = (ancestors(&plan, 0), ancestors(&plan, nb - 1));
            for b in 0..nb {
                assert_eq!(on_edge(nb, b), first[b] || last[b], "N = {nb}, block {b}");
            }
            // The segment path pads a short segment in front: its first block is then
            // block 1, whose paths stay on the edge too.
            if nb > 1 {
                let second = ancestors(&plan, 1);
                assert!((0..nb).all(|b| !second[b] || on_edge(nb, b)), "N = {nb}: block 1 leaves the edge");
            }
        }
        assert!(!on_edge(5, 5) && !on_edge(0, 0));
    }
}
