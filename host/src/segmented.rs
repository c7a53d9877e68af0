//! One chain longer than the device holds: factor + solve in segments joined by a Schur
//! complement on separator blocks.
//!
//! The chain is cut into `M` segments of consecutive blocks with one separator block
//! between neighbours (`seg 0 | sep 0 | seg 1 | ... | sep M-2 | seg M-1`). With the
//! separators ordered last, `A = [A_seg E; E^T A_sep]`, where `A_seg` is block diagonal
//! over the segments and `E` couples each segment's first and last block to its two
//! separators. Then
//!
//! - `S = A_sep - E^T A_seg^-1 E` is block tridiagonal over the separators (and SPD when
//!   `A` is): the reduced system;
//! - `S x_sep = b_sep - E^T A_seg^-1 b_seg`;
//! - `A_seg x_seg = b_seg - E x_sep`.
//!
//! The segments are independent systems, so they run as batches on any backend, padded
//! to one length with identity blocks (which decouple and leave the other blocks' results
//! unchanged). The padding (at most one block) goes in front, so that every segment's
//! last block is its padded system's last block: the coupling columns are then nonzero
//! only in blocks on the elimination-tree paths of the system's first two and last
//! block, where the GPU solves them alone (`docs/perf-notes.md`, entry 65). Pass 1
//! factors each batch and solves for `[b_seg, E_left, E_right]`, keeping only the first
//! and last block rows of the solutions: all that `S` and its right-hand side need. The
//! reduced system (one block per separator) is solved by the same backend.
//! Pass 2 factors the segments again and solves for the corrected right-hand sides: the
//! segments' factors are as large as the problem, so they are recomputed rather than kept.
//! The matrix therefore crosses to the device twice. Pass 1's `2n` coupling columns are
//! zero outside one block per segment and side, and only two block rows of its solution
//! are read: a backend may form those columns itself and return only those rows
//! ([`SegmentBackend`]; the GPU does, so they never cross the link). While the backend
//! works on one batch of segments, a host thread copies the next batch out of the
//! caller's arrays. A backend may run batches on several lanes ([`SegmentBackend::lanes`];
//! the GPU runs two, so that one batch's upload overlaps the other's kernels): each pass
//! then takes one batch of host memory more than it has lanes, and a caller may keep
//! both passes' batches for its next call ([`BatchBuffers`]).
//!
//! Errors name the system and block of the caller's chain: a segment's block `i` is the
//! block `start + i`, the reduced system's block `q` is separator `q`'s block.

use nalgebra::DMatrix;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec, Shape, asymmetric_entry};
use crate::scalar::{Scalar, cast, wide};
use crate::solver::Factorization;
use crate::trace::timed;
use std::ops::Range;

/// Host bytes of one batch of segments (matrix blocks and pass-1 right-hand sides), so
/// that two batches in flight stay small beside the problem.
const BATCH_BYTES: usize = 1 << 28;

/// The fewest segments per batch, unless the backend runs fewer ([`SegmentBackend::max_batch`]).
const MIN_BATCH: usize = 8;

/// The cut of a chain of `nblocks` blocks: segment `j` holds blocks
/// `starts[j] .. starts[j] + lens[j]`, separator `j` is the block right after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segments {
    starts: Vec<usize>,
    lens: Vec<usize>,
}

impl Segments {
    /// Segments of at most `target` blocks (two where `target` is one and `N` even), all of
    /// length `longest - 1` or `longest`; `None` when the chain is too short for two
    /// segments and a separator (`N <= target`).
    pub(crate) fn new(nblocks: usize, target: usize) -> Option<Self> {
        let target = target.max(1);
        // `count` segments of at most `target` blocks and `count - 1` separators cover
        // `count (target + 1) - 1 >= nblocks` blocks; each segment holds one or more.
        let count = (nblocks + 1).div_ceil(target + 1).min(nblocks.div_ceil(2));
        if count < 2 {
            return None;
        }
        let interior = nblocks - (count - 1);
        let (base, extra) = (interior / count, interior % count);
        let lens: Vec<usize> = (0..count).map(|j| base + usize::from(j < extra)).collect();
        let starts = lens
            .iter()
            .scan(0, |next, &len| {
                let start = *next;
                *next += len + 1;
                Some(start)
            })
            .collect();
        Some(Segments { starts, lens })
    }

    /// Number of segments `M`.
    pub(crate) fn count(&self) -> usize {
        self.lens.len()
    }

    /// Blocks of the longest segment (the padded length of every batch).
    pub(crate) fn longest(&self) -> usize {
        self.lens.iter().copied().max().unwrap_or(0)
    }

    /// The block of separator `q` (between segments `q` and `q + 1`).
    pub(crate) fn separator(&self, q: usize) -> usize {
        self.starts[q] + self.lens[q]
    }
}

/// Factor + solve of every system of `a` by segments of about `target` blocks (see the
/// module docs), on the backend `f`. The result matches a one-shot factor + solve to
/// rounding, not bit for bit: the elimination order differs.
/// `prepare` is called on each batch buffer pair before a pass uses it (the GPU
/// page-locks them); `buffers` keeps the pairs for the next call.
pub(crate) fn factor_solve<T: Scalar>(
    f: &mut dyn SegmentBackend<T>,
    a: &BlockTridiag<T>,
    b: &BlockVec<T>,
    target: usize,
    prepare: &Prepare<'_, T>,
    buffers: &mut BatchBuffers<T>,
) -> Result<BlockVec<T>> {
    let shape = a.shape();
    if b.shape() != shape {
        crate::error::shape_err!("right-hand side shape {} does not match the matrix {}", b.shape(), shape);
    }
    let Some(segs) = Segments::new(shape.nblocks, target) else {
        return f.factor_solve(a, b);
    };
    let (n, k) = (shape.block, b.ncols());
    let per_segment = segs.longest() * a.block_len() * 2 * T::BYTES + segs.longest() * n * (k + 2 * n) * T::BYTES;
    // At least `MIN_BATCH` segments per call: a backend's fixed cost per call (and, on the
    // GPU, per launch) spread over several segments.
    let batch = (BATCH_BYTES / per_segment.max(1)).max(MIN_BATCH).min(f.max_batch()).min(segs.count());
    let mut x = BlockVec::zeros(shape, k)?;
    for s in 0..shape.batch {
        Chain { a, b, s, segs: &segs, batch }.solve(f, prepare, buffers, &mut x)?;
    }
    Ok(x)
}

/// One system `s` of `a`, cut by `segs`, run `batch` segments at a time.
struct Chain<'a, T> {
    a: &'a BlockTridiag<T>,
    b: &'a BlockVec<T>,
    s: usize,
    segs: &'a Segments,
    batch: usize,
}

/// A batch's matrix and right-hand sides (kept in [`BatchBuffers`]).
type Batch<'a, T> = (&'a mut BlockTridiag<T>, &'a mut BlockVec<T>);

/// A segment backend that waits for its lanes when dropped: their device copies may
/// write into the batch buffers until then.
struct DrainOnDrop<'f, T: Scalar>(&'f mut dyn SegmentBackend<T>);

impl<T: Scalar> Drop for DrainOnDrop<'_, T> {
    fn drop(&mut self) {
        self.0.drain();
    }
}

/// Called on each batch buffer pair before a pass uses it (the GPU page-locks them; a
/// pair that is page-locked already costs nothing).
pub(crate) type Prepare<'a, T> = dyn Fn(&mut BlockTridiag<T>, &mut BlockVec<T>) -> Result<()> + Sync + 'a;

/// What a pass hands a backend with one batch, and what it reads back. The right-hand
/// side's first `dense` columns are written in full. In pass 1 the columns after them are
/// `[E_left, E_right]`: zero except one `n x n` coupling block per segment and side, and
/// only those blocks are written; the other values there are left from earlier batches.
/// Pass 1 then reads only each segment's first and last block rows; pass 2 (all columns
/// dense, no blocks) each segment's rows, the padding in front left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BatchPass {
    /// Columns `0..dense` of every system: written in full.
    pub dense: usize,
    /// Block size `n`.
    pub n: usize,
    /// `(system, first column, first row)` of each `n x n` block written after the
    /// dense columns.
    pub blocks: Vec<(usize, usize, usize)>,
    /// The rows read back, in every column, of the first `rows.len()` systems; the
    /// systems after them are not read.
    pub rows: Vec<[Range<usize>; 2]>,
}

impl BatchPass {
    /// Fails with [`Error::Shape`] unless every block and row range lies inside a
    /// right-hand side of `shape` with `cols` columns.
    pub(crate) fn check(&self, shape: Shape, cols: usize) -> Result<()> {
        let (dim, n) = (shape.dim(), self.n);
        let block_out = |&(g, c, r): &(usize, usize, usize)| g >= shape.batch || c < self.dense || c + n > cols || r + n > dim;
        let rows_out = |rows: &[Range<usize>; 2]| rows.iter().any(|r| r.start > r.end || r.end > dim);
        if self.dense > cols
            || n != shape.block
            || self.blocks.iter().any(block_out)
            || self.rows.len() > shape.batch
            || self.rows.iter().any(rows_out)
        {
            crate::error::shape_err!("a segment batch's blocks or rows lie outside its {shape} right-hand side of {cols} columns");
        }
        Ok(())
    }

    /// Whether every block and every row range read lies inside one block of a system of
    /// `nblocks` blocks that is on an edge of the nested-dissection tree
    /// ([`crate::plan::on_edge`]): the coupling columns are then zero off the edges and
    /// read only there, and a backend may solve them on the edge nodes alone.
    pub(crate) fn on_edges(&self, nblocks: usize) -> bool {
        let n = self.n.max(1);
        let edge_rows = |r: &Range<usize>| r.is_empty() || (r.start / n == (r.end - 1) / n && crate::plan::on_edge(nblocks, r.start / n));
        self.blocks.iter().all(|&(_, _, r0)| r0 % n == 0 && crate::plan::on_edge(nblocks, r0 / n))
            && self.rows.iter().flatten().all(edge_rows)
    }

    /// Writes the zeros of the columns after `dense` that pass 1 does not write: every
    /// value there outside `blocks` (for a backend that solves `b` as it is).
    pub(crate) fn zero_the_rest<T: Scalar>(&self, b: &mut BlockVec<T>) {
        let (dim, cols, n) = (b.shape().dim(), b.ncols(), self.n);
        let kept: Vec<Vec<T>> = self
            .blocks
            .iter()
            .map(|&(g, c0, r0)| (0..n).flat_map(|c| b.system(g)[(c0 + c) * dim + r0..][..n].to_vec()).collect())
            .collect();
        for g in 0..b.shape().batch {
            b.system_mut(g)[self.dense * dim..cols * dim].fill(T::zero());
        }
        for (&(g, c0, r0), vals) in self.blocks.iter().zip(&kept) {
            for (c, col) in vals.chunks(n).enumerate() {
                b.system_mut(g)[(c0 + c) * dim + r0..][..n].copy_from_slice(col);
            }
        }
    }
}

/// A backend of the segment path: [`Factorization`], plus a pass's factor + solve of a
/// batch described by a [`BatchPass`], started and finished apart so that a backend with
/// several lanes runs batches back to back. The GPU forms pass 1's coupling columns on the
/// device and moves only the rows read (`docs/perf-notes.md`, entry 62: the whole
/// `k + 2n` columns crossed the link both ways before, ~17 of a ~26 ms batch), and runs two
/// lanes, so that one batch's upload overlaps the other's kernels (entry 82).
pub(crate) trait SegmentBackend<T: Scalar>: Factorization<T> {
    /// The most segments it runs in one batch (at least one). The GPU sizes its segments
    /// so that eight fit its device plans at once, four on each lane; a larger batch was
    /// cut into chunks that moved every column (`docs/perf-notes.md` entry 62: under a
    /// 256 MB cap, 8-11x slower).
    fn max_batch(&self) -> usize {
        usize::MAX
    }

    /// Batches in flight at once, each on a lane of its own (at least one). With one,
    /// [`Self::start`] runs a batch to the end.
    fn lanes(&self) -> usize {
        1
    }

    /// Factors `a` and solves for `b` as `pass` describes it, on `lane` (below
    /// [`Self::lanes`]); the results are in `b` once [`Self::finish`] of the lane has
    /// returned `Ok`. Then only the rows `pass.rows` of `b` are sure to hold the solution;
    /// other values of `b` may be anything. The default writes the zeros and solves every
    /// row before it returns.
    ///
    /// # Safety
    /// The backend may read `a` and read and write `b` until [`Self::finish`] of `lane` or
    /// [`Self::drain`] has returned, also when this call fails: the caller neither reads,
    /// writes nor frees them before.
    unsafe fn start(&mut self, lane: usize, a: &BlockTridiag<T>, b: &mut BlockVec<T>, pass: &BatchPass) -> Result<()> {
        let _ = lane;
        pass.check(b.shape(), b.ncols())?;
        pass.zero_the_rest(b);
        self.factor_solve_in_place(a, b)
    }

    /// Waits for the batch started last on `lane` and reports how it went (`Ok` when no
    /// batch runs there).
    fn finish(&mut self, lane: usize) -> Result<()> {
        let _ = lane;
        Ok(())
    }

    /// Waits for every lane, dropping what they report: after a failure, before the
    /// batch buffers may be touched again.
    fn drain(&mut self) {}
}

impl<T: Scalar> SegmentBackend<T> for crate::cpu::SequentialCholesky<T> {}

/// The batch buffers of both passes, kept from one call to the next: a backend that
/// page-locks them (the GPU: 0.15-0.37 s per call on the H100, `docs/perf-notes.md`
/// entry 57) pays that once per shape. Both passes factor the same segments, so they
/// share the matrices; only the right-hand sides differ in width (entry 60). Every buffer
/// is refilled completely before each use, so what a previous call or pass left in it
/// never reaches a result.
pub(crate) struct BatchBuffers<T> {
    /// The batches' matrices, used by both passes.
    matrices: Vec<BlockTridiag<T>>,
    /// Pass 1's right-hand sides (`k + 2n` columns), then pass 2's (`k`).
    rhs: [Vec<BlockVec<T>>; 2],
}

impl<T> Default for BatchBuffers<T> {
    fn default() -> Self {
        BatchBuffers { matrices: Vec::new(), rhs: [Vec::new(), Vec::new()] }
    }
}

impl<T: Scalar> BatchBuffers<T> {
    /// `count` pairs of pass `pass` for batches of `shape` (matrix leading dimension
    /// `ld`, `cols` right-hand-side columns): the kept buffers when they have that shape,
    /// else new ones; each pair handed to `prepare`.
    fn pairs(
        &mut self,
        pass: usize,
        count: usize,
        (shape, ld, cols): (Shape, usize, usize),
        prepare: &Prepare<'_, T>,
    ) -> Result<Vec<Batch<'_, T>>> {
        let (matrices, rhs) = (&mut self.matrices, &mut self.rhs[pass]);
        keep_or_make(matrices, count, |m| m.shape() == shape && m.ld() == ld, || BlockTridiag::zeros_padded(shape, ld))?;
        keep_or_make(rhs, count, |v| v.shape() == shape && v.ncols() == cols, || BlockVec::zeros(shape, cols))?;
        let mut pairs: Vec<Batch<'_, T>> = matrices.iter_mut().zip(rhs.iter_mut()).take(count).collect();
        for pair in pairs.iter_mut() {
            timed("segments: prepare a batch buffer pair", || prepare(pair.0, pair.1))?;
        }
        Ok(pairs)
    }

    /// Host bytes held.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        let matrices: usize = self.matrices.iter().map(|m| m.diag().len() + m.sub().len()).sum();
        let rhs: usize = self.rhs.iter().flatten().map(|v| v.as_slice().len()).sum();
        (matrices + rhs) * T::BYTES
    }
}

/// Keeps the buffers of `kept` when there are at least `count` and all `fit`; otherwise
/// frees them (which unpins them) before making `count` new ones.
fn keep_or_make<B>(kept: &mut Vec<B>, count: usize, fit: impl Fn(&B) -> bool, make: impl Fn() -> Result<B>) -> Result<()> {
    if kept.len() < count || !kept.iter().all(fit) {
        kept.clear();
        for _ in 0..count {
            kept.push(make()?);
        }
    }
    Ok(())
}

/// Copies each `(offset, values)` of `pieces` to `out[offset..]`, in parts of at most
/// [`PIECE_BYTES`] over [`SCATTER_THREADS`] threads of its own. The offsets ascend and the
/// places do not overlap. `out` is a fresh vector on a first call: on one thread its
/// first-touch page faults held pass 2's copies to ~1.8 GB/s (`docs/perf-notes.md`,
/// entry 64). Not on rayon's pool: the next batch's fill holds every worker there, and a
/// copy queued behind it waited for the whole fill (entry 82).
fn scatter<T: Scalar>(out: &mut [T], pieces: &[(usize, &[T])]) {
    let part = (PIECE_BYTES / std::mem::size_of::<T>()).max(1);
    let mut jobs: Vec<(&mut [T], &[T])> = Vec::with_capacity(pieces.len());
    let (mut rest, mut at) = (out, 0);
    for &(offset, values) in pieces {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(offset - at);
        let (place, tail) = tail.split_at_mut(values.len());
        jobs.extend(place.chunks_mut(part).zip(values.chunks(part)));
        (rest, at) = (tail, offset + values.len());
    }
    let per_thread = jobs.len().div_ceil(SCATTER_THREADS).max(1);
    std::thread::scope(|scope| {
        for group in jobs.chunks_mut(per_thread) {
            scope.spawn(move || group.iter_mut().for_each(|(place, values)| place.copy_from_slice(values)));
        }
    });
}

/// Threads of [`scatter`]: beside the fill, which keeps every core of rayon's pool busy.
const SCATTER_THREADS: usize = 4;

/// Whether `BLOCKTRI_SEGMENT_FILL_PLAIN=1` asks [`copy_slots`] for plain stores (to measure
/// the non-temporal ones against them in one build); read once.
fn plain_fill() -> bool {
    static PLAIN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PLAIN.get_or_init(|| std::env::var("BLOCKTRI_SEGMENT_FILL_PLAIN").is_ok_and(|v| v == "1"))
}

/// Bytes of one task of [`copy_slots`].
const PIECE_BYTES: usize = 1 << 20;

/// Fills `out`, slots of `per_slot` blocks of `bl` values: slot `g`'s blocks
/// `at .. at + len` are `src`'s blocks `from ..` where `slot(g) = Some((from, len, at))`,
/// and `pad` writes the rest of it (all of it for `None`). In pieces of `piece` blocks
/// over every thread: one task per slot kept 8 of 16 cores busy, and the fill bound
/// pass 2 (`docs/perf-notes.md`, entry 62).
fn copy_slots<T: Scalar>(
    out: &mut [T],
    (bl, per_slot, piece): (usize, usize, usize),
    slot: impl Fn(usize) -> Option<(usize, usize, usize)> + Sync,
    src: &[T],
    pad: impl Fn(&mut [T]) + Sync,
) {
    if per_slot == 0 || bl == 0 {
        return;
    }
    let piece = piece.max(1);
    out.par_chunks_mut(piece * bl).enumerate().for_each(|(c, part)| {
        let mut done = 0; // blocks of `part` written
        while done < part.len() / bl {
            let at = c * piece + done;
            let (g, b) = (at / per_slot, at % per_slot);
            // The run of this slot inside `part`, blocks b .. end of slot g: padding, the
            // copied blocks lo .. hi (its blocks at .. at + len inside the run), padding.
            let end = b + (per_slot - b).min(part.len() / bl - done);
            let place = slot(g);
            let (lo, hi) = place.map_or((end, end), |(_, len, at)| (at.clamp(b, end), (at + len).clamp(b, end)));
            let run = &mut part[done * bl..][..(end - b) * bl];
            let (before, rest) = run.split_at_mut((lo - b) * bl);
            let (copied, after) = rest.split_at_mut((hi - lo) * bl);
            if let Some((from, _, at)) = place.filter(|_| hi > lo) {
                let from = &src[(from + lo - at) * bl..][..(hi - lo) * bl];
                // Non-temporal stores: the batch is far larger than the caches, and the DMA
                // engine reads it next (entry 82).
                match plain_fill() {
                    false => crate::cuda::copy_streaming_here(from, copied),
                    true => copied.copy_from_slice(from),
                }
            }
            pad(before);
            pad(after);
            done += end - b;
        }
    });
}

/// The first and the last block row (`n x (k + 2n)` each: `A_seg^-1 [b, E_left, E_right]`)
/// of one segment's pass-1 solution.
type Edges = (DMatrix<f64>, DMatrix<f64>);

impl<T: Scalar> Chain<'_, T> {
    fn n(&self) -> usize {
        self.a.shape().block
    }

    fn k(&self) -> usize {
        self.b.ncols()
    }

    /// Sub-diagonal block `C_i = A[i+1, i]` of the system as an `f64` matrix.
    fn coupling(&self, i: usize) -> DMatrix<f64> {
        let (n, ld) = (self.n(), self.a.ld());
        let c = self.a.sub_block(self.s, i);
        DMatrix::from_fn(n, n, |r, col| wide(c[col * ld + r]))
    }

    /// Rows `block * n ..` of the right-hand side, `n x k`.
    fn rhs_rows(&self, block: usize) -> DMatrix<f64> {
        let (n, dim) = (self.n(), self.a.shape().dim());
        let b = self.b.system(self.s);
        DMatrix::from_fn(n, self.k(), |r, c| wide(b[c * dim + block * n + r]))
    }

    /// Both passes; writes system `s` of `x`.
    fn solve(
        &self,
        f: &mut dyn SegmentBackend<T>,
        prepare: &Prepare<'_, T>,
        buffers: &mut BatchBuffers<T>,
        x: &mut BlockVec<T>,
    ) -> Result<()> {
        self.check_separators()?;
        let mut edges: Vec<Edges> = Vec::with_capacity(self.segs.count());
        self.run_batches(f, None, prepare, buffers, |first, sol| {
            edges.extend(self.edges(first, sol));
            Ok(())
        })?;
        let x_sep = timed("segments: the reduced system", || self.solve_reduced(f, &edges))?;
        drop(edges);
        let (n, k, dim) = (self.n(), self.k(), self.a.shape().dim());
        let out = x.system_mut(self.s);
        self.run_batches(f, Some(&x_sep), prepare, buffers, |first, sol| {
            let padded = sol.shape().dim();
            let real = self.segs.count() - first; // the slots after it are padding
            let parts: Vec<&[T]> = sol.as_slice().chunks(padded * k).take(real).collect();
            // Column by column, segments in chain order: ascending, disjoint places in `out`.
            let pieces: Vec<(usize, &[T])> = (0..k)
                .flat_map(|c| {
                    parts.iter().enumerate().map(move |(g, part)| {
                        let (start, len) = (self.segs.starts[first + g], self.segs.lens[first + g]);
                        (c * dim + start * n, &part[c * padded + self.first_block_row(first + g)..][..len * n])
                    })
                })
                .collect();
            scatter(out, &pieces);
            Ok(())
        })?;
        for (q, xq) in x_sep.iter().enumerate() {
            let p = self.segs.separator(q);
            for c in 0..k {
                for r in 0..n {
                    out[c * dim + p * n + r] = cast(xq[(r, c)]);
                }
            }
        }
        Ok(())
    }

    /// The separators' own input (diagonal blocks, their couplings, right-hand-side rows)
    /// checked as every backend checks its input: no segment batch holds them.
    fn check_separators(&self) -> Result<()> {
        let (n, ld, s) = (self.n(), self.a.ld(), self.s);
        let tol = wide(T::symmetry_tolerance());
        let finite = |blk: &[T]| (0..n).all(|c| blk[c * ld..c * ld + n].iter().all(|v| v.is_finite()));
        for q in 0..self.segs.count() - 1 {
            let p = self.segs.separator(q);
            let d = self.a.diag_block(s, p);
            if !finite(d) {
                return Err(Error::NonFinite { what: "diagonal block", system: s, block: p });
            }
            if let Some((row, col)) = asymmetric_entry(d, n, ld, tol) {
                return Err(Error::NotSymmetric { system: s, block: p, row, col, tol });
            }
            for i in [p - 1, p] {
                if !finite(self.a.sub_block(s, i)) {
                    return Err(Error::NonFinite { what: "sub-diagonal block", system: s, block: i });
                }
            }
            if self.rhs_rows(p).iter().any(|v| !v.is_finite()) {
                return Err(Error::NonFinite { what: "right-hand side", system: s, block: p });
            }
        }
        Ok(())
    }

    /// Runs the segments through `f` in batches (pass 1 when `x_sep` is `None`, else
    /// pass 2), handing each batch's solutions to `take` with the index of its first
    /// segment. Every batch has the same shape (the last one is padded with identity
    /// segments), so a backend reuses its plans. The batch buffers (kept in `buffers` from
    /// call to call, handed to `prepare`, which may page-lock them) are refilled in place:
    /// one more pair than `f` has lanes, so that while `f` runs batch `i` (and, with two
    /// lanes, `i - 1`), another thread fills batch `i + 1`. Iteration `i` starts batch `i`,
    /// fills batch `i + 1` beside, and finishes and takes batch `i + 1 - lanes`.
    fn run_batches(
        &self,
        f: &mut dyn SegmentBackend<T>,
        x_sep: Option<&[DMatrix<f64>]>,
        prepare: &Prepare<'_, T>,
        buffers: &mut BatchBuffers<T>,
        mut take: impl FnMut(usize, &BlockVec<T>) -> Result<()>,
    ) -> Result<()> {
        let firsts: Vec<usize> = (0..self.segs.count()).step_by(self.batch).collect();
        let shape = Shape::new(self.batch, self.segs.longest(), self.n())?;
        let cols = if x_sep.is_some() { self.k() } else { self.k() + 2 * self.n() };
        let pass = usize::from(x_sep.is_some());
        let lanes = f.lanes().max(1);
        let pairs = (lanes + 1).min(firsts.len());
        let mut slots: Vec<Option<Batch<'_, T>>> =
            buffers.pairs(pass, pairs, (shape, self.a.ld(), cols), prepare)?.into_iter().map(Some).collect();
        let fill = |pair: &mut Batch<'_, T>, first: usize| self.fill_batch(pair, first, x_sep);
        timed("segments: fill the first batch", || fill(slots[0].as_mut().expect("a pair"), firsts[0]));
        // A segment's block `i` in its padded system is the chain's `start + i - pad` (the
        // padding blocks are identities: they never fail).
        let relocated = |e: Error, first: usize| {
            self.relocate(e, |g: usize, block: usize| (self.segs.starts[first + g] + block).saturating_sub(self.pad(first + g)))
        };
        // From here the backend may use the buffers until its lanes are finished: drained
        // on every way out (an error, a panic of `take` or of a fill).
        let f = DrainOnDrop(f);
        for i in 0..firsts.len() + lanes - 1 {
            // Batch `i + 1` goes into the pair that batch `i + 1 - pairs` held, finished in
            // an earlier iteration.
            let mut next = firsts.get(i + 1).map(|&first| (first, slots[(i + 1) % pairs].take().expect("a free pair")));
            let done = (i + 1).checked_sub(lanes).filter(|&j| j < firsts.len());
            let ran = std::thread::scope(|scope| -> Result<()> {
                if let Some((first, pair)) = next.as_mut() {
                    let first = *first;
                    scope.spawn(move || timed("segments: fill the next batch (beside)", || fill(pair, first)));
                }
                if let Some(&first) = firsts.get(i) {
                    let (m, rhs) = slots[i % pairs].as_mut().expect("a filled pair");
                    let batch = match x_sep {
                        None => self.pass_one(first),
                        Some(_) => self.pass_two(first),
                    };
                    // SAFETY: the pair stays untouched until its lane is finished (below,
                    // `lanes - 1` iterations on) or drained: no fill takes it before
                    // (`pairs > lanes`), and `f` drains when dropped.
                    timed("segments: start a batch", || unsafe { f.0.start(i % lanes, m, rhs, &batch) })
                        .map_err(|e| relocated(e, first))?;
                }
                if let Some(j) = done {
                    timed("segments: finish a batch (waits)", || f.0.finish(j % lanes)).map_err(|e| relocated(e, firsts[j]))?;
                    let (_, rhs) = slots[j % pairs].as_ref().expect("a pair in use");
                    timed("segments: take the solutions", || take(firsts[j], rhs))?;
                }
                Ok(())
            });
            if let Some((_, pair)) = next {
                slots[(i + 1) % pairs] = Some(pair);
            }
            ran?;
        }
        Ok(())
    }

    /// Identity blocks in front of segment `j` in its padded system (0 or 1).
    fn pad(&self, j: usize) -> usize {
        self.segs.longest() - self.segs.lens[j]
    }

    /// The first row of segment `j`'s first block, in its padded system: where pass 1's
    /// `E_left` block goes and the first of the rows it reads.
    fn first_block_row(&self, j: usize) -> usize {
        self.pad(j) * self.n()
    }

    /// The first row of every segment's last block, in its padded system (the padded
    /// system's last block, the padding being in front): where pass 1's `E_right` block
    /// goes and the second of the rows it reads.
    fn last_block_row(&self) -> usize {
        (self.segs.longest() - 1) * self.n()
    }

    /// Pass 1's description of the batch of segments `first ..` (see [`BatchPass`]): the
    /// coupling blocks [`Self::fill_batch`] writes and the rows [`Self::edges`] reads.
    fn pass_one(&self, first: usize) -> BatchPass {
        let (n, k, last) = (self.n(), self.k(), self.segs.count() - 1);
        let real = first..(first + self.batch).min(self.segs.count());
        let (start, end) = (|j: usize| self.first_block_row(j), self.last_block_row());
        let blocks = real
            .clone()
            .enumerate()
            .flat_map(|(g, j)| [(j > 0).then_some((g, k, start(j))), (j < last).then_some((g, k + n, end))])
            .flatten()
            .collect();
        let rows = real.map(|j| [start(j)..start(j) + n, end..end + n]).collect();
        BatchPass { dense: k, n, blocks, rows }
    }

    /// Pass 2's description of the batch of segments `first ..`: the `k` columns written
    /// in full, each segment's rows read (the padding in front left out).
    fn pass_two(&self, first: usize) -> BatchPass {
        let padded = self.segs.longest() * self.n();
        let real = first..(first + self.batch).min(self.segs.count());
        let rows = real.map(|j| [self.first_block_row(j)..padded, padded..padded]).collect();
        BatchPass { dense: self.k(), n: self.n(), blocks: Vec::new(), rows }
    }

    /// Fills `pair` with segments `first ..` (at most `batch`; the slots beyond the last
    /// segment become identity systems with zero right-hand sides), each padded to the
    /// longest segment with identity blocks in front: pass 1's `[b, E_left, E_right]` when
    /// `x_sep` is `None` (of `E`, only the blocks that [`Self::pass_one`] names), else
    /// pass 2's `b - E x_sep`.
    fn fill_batch(&self, (m, rhs): &mut Batch<'_, T>, first: usize, x_sep: Option<&[DMatrix<f64>]>) {
        let (a, s, n, k) = (self.a, self.s, self.n(), self.k());
        let (ld, bl, nb) = (a.ld(), a.block_len(), a.shape().nblocks);
        let longest = self.segs.longest();
        // (start, len, pad) of slot `g`; `None` for a padding slot.
        let seg = |g: usize| {
            let j = first + g;
            (j < self.segs.count()).then(|| (self.segs.starts[j], self.segs.lens[j], self.pad(j)))
        };
        let identity = |blocks: &mut [T]| {
            blocks.fill(T::zero());
            for pad in blocks.chunks_mut(bl) {
                (0..n).for_each(|d| pad[d * ld + d] = T::one());
            }
        };
        let (diag, sub) = m.parts_mut();
        // Slot g's diagonal blocks `pad ..` come from the system's blocks `start ..`
        // (identity padding), its sub-diagonal blocks likewise (zero padding, which also
        // decouples the padding block in front); both at once.
        let piece = PIECE_BYTES / (bl * T::BYTES).max(1);
        rayon::join(
            || copy_slots(diag, (bl, longest, piece), |g| seg(g).map(|(start, len, pad)| (s * nb + start, len, pad)), a.diag(), identity),
            || {
                let sub_seg = |g| seg(g).map(|(start, len, pad)| (s * (nb - 1) + start, len - 1, pad));
                copy_slots(sub, (bl, longest - 1, piece), sub_seg, a.sub(), |blocks: &mut [T]| blocks.fill(T::zero()))
            },
        );
        let cols = rhs.ncols();
        let (dim, padded) = (a.shape().dim(), rhs.shape().dim());
        let b = self.b.system(s);
        let last = self.segs.count() - 1;
        rhs.as_mut_slice().par_chunks_mut(padded * cols).enumerate().for_each(|(g, out)| {
            // Pass 1's zeros of `E` are the backend's to write (`BatchPass`): ~290 MB a batch
            // at N = 1048576, n = 16.
            out[..padded * k].fill(T::zero());
            let Some((start, len, _)) = seg(g) else { return };
            let j = first + g;
            let (top, end) = (self.first_block_row(j), self.last_block_row());
            for c in 0..k {
                out[c * padded + top..][..len * n].copy_from_slice(&b[c * dim + start * n..][..len * n]);
            }
            match x_sep {
                None => {
                    // E_left: the first block row is C_{start-1} = A[start, start-1].
                    if j > 0 {
                        let cl = a.sub_block(s, start - 1);
                        for c in 0..n {
                            out[(k + c) * padded + top..][..n].copy_from_slice(&cl[c * ld..][..n]);
                        }
                    }
                    // E_right: the last block row is C_{end}^T = A[end, end+1] (end = the
                    // segment's last block).
                    if j < last {
                        let cr = a.sub_block(s, start + len - 1);
                        for c in 0..n {
                            for r in 0..n {
                                out[(k + n + c) * padded + end + r] = cr[r * ld + c];
                            }
                        }
                    }
                }
                Some(x_sep) => {
                    // b_seg - E x_sep, in f64.
                    let mut sub_from = |row0: usize, cp: DMatrix<f64>| {
                        for c in 0..k {
                            for r in 0..n {
                                let v = &mut out[c * padded + row0 + r];
                                *v = cast(wide(*v) - cp[(r, c)]);
                            }
                        }
                    };
                    if j > 0 {
                        sub_from(top, self.coupling(start - 1) * &x_sep[j - 1]);
                    }
                    if j < last {
                        sub_from(end, self.coupling(start + len - 1).transpose() * &x_sep[j]);
                    }
                }
            }
        });
    }

    /// The first and last block rows of each segment's pass-1 solution in `sol`.
    fn edges(&self, first: usize, sol: &BlockVec<T>) -> Vec<Edges> {
        let (n, cols, padded) = (self.n(), sol.ncols(), sol.shape().dim());
        (0..sol.shape().batch.min(self.segs.count() - first))
            .map(|g| {
                let v = sol.system(g);
                let rows = |row0: usize| DMatrix::from_fn(n, cols, |r, c| wide(v[c * padded + row0 + r]));
                (rows(self.first_block_row(first + g)), rows(self.last_block_row()))
            })
            .collect()
    }

    /// Assembles and solves `S x_sep = b_sep - E^T A_seg^-1 b_seg` on `f`: one `n x k`
    /// solution per separator.
    fn solve_reduced(&self, f: &mut dyn SegmentBackend<T>, edges: &[Edges]) -> Result<Vec<DMatrix<f64>>> {
        let (n, k, s) = (self.n(), self.k(), self.s);
        let seps = self.segs.count() - 1;
        let shape = Shape::new(1, seps, n)?;
        let mut m = BlockTridiag::<T>::zeros(seps, n)?;
        let mut rhs = BlockVec::<T>::zeros(shape, k)?;
        let (y, zl, zr) = (0..k, k..k + n, k + n..k + 2 * n);
        let ld = self.a.ld();
        // Each separator's blocks on their own (four `n x n` products each, on all cores).
        let parts: Vec<_> = (0..seps)
            .into_par_iter()
            .map(|q| {
                let p = self.segs.separator(q);
                let (left, right) = (self.coupling(p - 1), self.coupling(p));
                let (left_last, right_first) = (&edges[q].1, &edges[q + 1].0);
                let d = self.a.diag_block(s, p);
                let mut sq = DMatrix::from_fn(n, n, |r, c| wide(d[c * ld + r]));
                sq -= &left * left_last.columns_range(zr.clone()) + right.transpose() * right_first.columns_range(zl.clone());
                let sq = (&sq + sq.transpose()) * 0.5; // exactly symmetric
                let cq = self.rhs_rows(p)
                    - &left * left_last.columns_range(y.clone())
                    - right.transpose() * right_first.columns_range(y.clone());
                // S[q+1, q] = -C_{p'-1} (A_seg^-1 E_left)[last block] of segment q + 1.
                let sub =
                    (q + 1 < seps).then(|| -(self.coupling(self.segs.separator(q + 1) - 1) * edges[q + 1].1.columns_range(zl.clone())));
                (sq, cq, sub)
            })
            .collect();
        for (q, (sq, cq, sub)) in parts.into_iter().enumerate() {
            let to_block = |out: &mut [T], v: &DMatrix<f64>| out.iter_mut().zip(v.iter()).for_each(|(o, &v)| *o = cast(v));
            to_block(m.diag_block_mut(0, q), &sq); // `ld = n`: the same column-major order
            if let Some(sub) = sub {
                to_block(m.sub_block_mut(0, q), &sub);
            }
            for c in 0..k {
                for r in 0..n {
                    rhs.set(0, q * n + r, c, cast(cq[(r, c)]));
                }
            }
        }
        let x = f.factor_solve(&m, &rhs).map_err(|e| self.relocate(e, |_, q| self.segs.separator(q)))?;
        Ok((0..seps).map(|q| DMatrix::from_fn(n, k, |r, c| wide(x.get(0, q * n + r, c)))).collect())
    }

    /// `e` from a batch (or the reduced system) with its system and block those of the
    /// caller's chain: `block_of(system in the batch, block in it)`.
    fn relocate(&self, e: Error, block_of: impl Fn(usize, usize) -> usize) -> Error {
        let s = self.s;
        match e {
            Error::NotPositiveDefinite { system, block, level } => {
                Error::NotPositiveDefinite { system: s, block: block_of(system, block), level }
            }
            Error::NonFinite { what, system, block } => Error::NonFinite { what, system: s, block: block_of(system, block) },
            Error::NotSymmetric { system, block, row, col, tol } => {
                Error::NotSymmetric { system: s, block: block_of(system, block), row, col, tol }
            }
            Error::NonFiniteSolution { system, block } => Error::NonFiniteSolution { system: s, block: block_of(system, block) },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::SequentialCholesky;
    use crate::generate;

    #[test]
    fn segments_cover_the_chain_with_one_separator_between_neighbours() {
        for nblocks in 3..60 {
            for target in 1..12 {
                let Some(segs) = Segments::new(nblocks, target) else {
                    assert!(nblocks <= target, "N = {nblocks} > target {target} makes two segments or more");
                    continue;
                };
                let mut next = 0;
                for j in 0..segs.count() {
                    assert_eq!(segs.starts[j], next, "N = {nblocks}, target {target}");
                    assert!(segs.lens[j] >= 1 && segs.lens[j] + 1 >= segs.longest());
                    next = segs.starts[j] + segs.lens[j] + 1;
                }
                assert_eq!(next, nblocks + 1, "the last segment ends the chain");
                // Only segments of one block need a separator after the last block.
                assert!(segs.longest() <= target.max(2), "N = {nblocks}, target {target}");
            }
        }
        assert_eq!(Segments::new(2, 1), None);
        assert_eq!(Segments::new(100, 100), None);
    }

    /// Relative residual of system `s`.
    fn residual(a: &BlockTridiag<f64>, x: &BlockVec<f64>, b: &BlockVec<f64>) -> f64 {
        crate::residual::accuracy(a, x, b).unwrap().relative_residual
    }

    #[test]
    fn segmented_solves_match_the_reference_at_every_cut() {
        for (batch, nblocks, n, k, seed) in [(1, 40, 3, 1, 1), (2, 23, 4, 2, 2), (1, 7, 1, 3, 3), (3, 16, 2, 1, 4)] {
            let a = generate::random_spd::<f64>(batch, nblocks, n, seed).unwrap();
            let b = generate::random_rhs(a.shape(), k, seed + 10).unwrap();
            let want = SequentialCholesky::new().factor_solve(&a, &b).unwrap();
            for target in [1, 2, 3, 5, 8, 20] {
                let x = factor_solve(&mut SequentialCholesky::new(), &a, &b, target, &|_, _| Ok(()), &mut BatchBuffers::default()).unwrap();
                assert!(residual(&a, &x, &b) < 1e-12, "{} target {target}", a.shape());
                let diff = x.as_slice().iter().zip(want.as_slice()).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max);
                assert!(diff < 1e-9, "{} target {target}: {diff:e} from the one-shot solve", a.shape());
            }
        }
    }

    /// A backend that keeps only what [`BatchPass`] promises: the rows not named come back
    /// as NaN, so a segment path that read one would fail.
    struct OnlyTheRowsNamed(SequentialCholesky<f64>);

    /// [`Factorization`] of a test backend by its sequential backend in `$field`.
    macro_rules! factorization_by {
        ($backend:ty, $field:tt, $name:literal) => {
            impl Factorization<f64> for $backend {
                fn factor(&mut self, a: &BlockTridiag<f64>) -> Result<()> {
                    self.$field.factor(a)
                }
                fn solve_in_place(&mut self, b: &mut BlockVec<f64>) -> Result<()> {
                    self.$field.solve_in_place(b)
                }
                fn log_determinant(&mut self) -> Result<Vec<f64>> {
                    self.$field.log_determinant()
                }
                fn selected_inverse(&mut self) -> Result<BlockTridiag<f64>> {
                    self.$field.selected_inverse()
                }
                fn shape(&self) -> Option<Shape> {
                    Factorization::<f64>::shape(&self.$field)
                }
                fn name(&self) -> &'static str {
                    $name
                }
            }
        };
    }

    factorization_by!(OnlyTheRowsNamed, 0, "only the rows named");

    impl SegmentBackend<f64> for OnlyTheRowsNamed {
        unsafe fn start(&mut self, lane: usize, a: &BlockTridiag<f64>, b: &mut BlockVec<f64>, pass: &BatchPass) -> Result<()> {
            // SAFETY: forwarded (the sequential backend is done when it returns).
            unsafe { self.0.start(lane, a, b, pass) }?;
            let dim = b.shape().dim();
            for g in 0..b.shape().batch {
                let named = |r: usize| pass.rows.get(g).is_some_and(|pair| pair.iter().any(|range| range.contains(&r)));
                for (i, v) in b.system_mut(g).iter_mut().enumerate() {
                    if !named(i % dim) {
                        *v = f64::NAN;
                    }
                }
            }
            Ok(())
        }
    }

    /// Each pass reads only the rows it names: the same bits when every other row of its
    /// batches' solutions is garbage, at every cut, with batches of several segments (the
    /// last one padded). The blocks it names are checked by every other test here: the
    /// default backend zeroes the rest of `E` (a block written but not named would be lost,
    /// one named but not written would keep an earlier batch's values).
    #[test]
    fn each_pass_reads_only_the_rows_it_names() {
        for (nblocks, n, k, seed) in [(40, 3, 1, 1), (23, 4, 2, 2), (16, 2, 3, 4)] {
            let a = generate::random_spd::<f64>(2, nblocks, n, seed).unwrap();
            let b = generate::random_rhs(a.shape(), k, seed + 10).unwrap();
            for (target, batch) in [(2, 3), (3, 1), (5, 2), (8, 4)] {
                let segs = Segments::new(nblocks, target).unwrap();
                let run = |f: &mut dyn SegmentBackend<f64>| {
                    let mut x = BlockVec::zeros(a.shape(), k).unwrap();
                    let mut kept = BatchBuffers::default();
                    for s in [0, 1, 0] {
                        Chain { a: &a, b: &b, s, segs: &segs, batch }.solve(f, &|_, _| Ok(()), &mut kept, &mut x).unwrap();
                    }
                    x
                };
                let x = run(&mut OnlyTheRowsNamed(SequentialCholesky::new()));
                assert_eq!(x, run(&mut SequentialCholesky::new()), "{} target {target}, batches of {batch}", a.shape());
                assert!(residual(&a, &x, &b) < 1e-12);
            }
        }
    }

    /// A batch started on a lane of [`TwoLanes`]: its inputs and what it reads back.
    type InFlight = (*const BlockTridiag<f64>, *mut BlockVec<f64>, BatchPass);

    /// A backend of two lanes that works as a device would: `start` only records the
    /// batch, `finish` reads the inputs and writes the results. A segment path that took
    /// results before `finish`, or refilled a pair still in flight, would get other bits.
    #[derive(Default)]
    struct TwoLanes {
        inner: SequentialCholesky<f64>,
        pending: [Option<InFlight>; 2],
        most_in_flight: usize,
    }

    factorization_by!(TwoLanes, inner, "two lanes");

    impl SegmentBackend<f64> for TwoLanes {
        fn max_batch(&self) -> usize {
            2
        }
        fn lanes(&self) -> usize {
            2
        }
        unsafe fn start(&mut self, lane: usize, a: &BlockTridiag<f64>, b: &mut BlockVec<f64>, pass: &BatchPass) -> Result<()> {
            assert!(self.pending[lane].is_none(), "lane {lane} started while busy");
            self.pending[lane] = Some((a, b, pass.clone()));
            self.most_in_flight = self.most_in_flight.max(self.pending.iter().flatten().count());
            Ok(())
        }
        fn finish(&mut self, lane: usize) -> Result<()> {
            let Some((a, b, pass)) = self.pending[lane].take() else { return Ok(()) };
            // SAFETY: `start`'s contract keeps both alive and untouched until now.
            unsafe { self.inner.start(0, &*a, &mut *b, &pass) }
        }
        fn drain(&mut self) {
            self.pending = [None, None];
        }
    }

    /// Two lanes in flight give the bits of one lane, with batch buffers kept from call to
    /// call (three pairs a pass), and a failure is named in the chain with both lanes
    /// drained.
    #[test]
    fn two_lanes_in_flight_give_the_bits_of_one() {
        let a = generate::random_spd::<f64>(2, 61, 3, 41).unwrap();
        let b = generate::random_rhs(a.shape(), 2, 42).unwrap();
        let mut kept = BatchBuffers::default();
        let mut lanes = TwoLanes::default();
        for target in [2, 3, 5, 9, 30] {
            let one = factor_solve(&mut SequentialCholesky::new(), &a, &b, target, &|_, _| Ok(()), &mut BatchBuffers::default());
            for _ in 0..2 {
                let two = factor_solve(&mut lanes, &a, &b, target, &|_, _| Ok(()), &mut kept).unwrap();
                assert_eq!(&two, one.as_ref().unwrap(), "target {target}");
            }
        }
        assert_eq!(lanes.most_in_flight, 2, "the lanes never overlapped");
        let mut bad = a.clone();
        for d in 0..3 {
            bad.set_diag(1, 40, d, d, -50.0);
        }
        match factor_solve(&mut lanes, &bad, &b, 3, &|_, _| Ok(()), &mut kept) {
            Err(Error::NotPositiveDefinite { system: 1, block: 40, .. }) => {}
            other => panic!("expected a pivot failure at block 40 of system 1, got {other:?}"),
        }
        assert!(lanes.pending.iter().all(Option::is_none), "a lane left in flight after the failure");
    }

    #[test]
    fn pass_one_zeroes_all_but_its_blocks_and_checks_their_places() {
        let shape = Shape::new(2, 3, 2).unwrap(); // dim 6
        let (dense, cols) = (1, 5);
        let pass = BatchPass { dense, n: 2, blocks: vec![(0, 1, 0), (1, 3, 4)], rows: vec![[0..2, 4..6]] };
        pass.check(shape, cols).unwrap();
        let mut b = BlockVec::<f64>::zeros(shape, cols).unwrap();
        b.as_mut_slice().iter_mut().enumerate().for_each(|(i, v)| *v = 1.0 + i as f64);
        let before = b.clone();
        pass.zero_the_rest(&mut b);
        for g in 0..2 {
            for c in 0..cols {
                for r in 0..6 {
                    let in_block =
                        pass.blocks.iter().any(|&(bg, c0, r0)| bg == g && (c0..c0 + 2).contains(&c) && (r0..r0 + 2).contains(&r));
                    let want = if c < dense || in_block { before.get(g, r, c) } else { 0.0 };
                    assert_eq!(b.get(g, r, c), want, "system {g}, row {r}, column {c}");
                }
            }
        }
        let bad = [
            BatchPass { blocks: vec![(2, 1, 0)], ..pass.clone() }, // no system 2
            BatchPass { blocks: vec![(0, 0, 0)], ..pass.clone() }, // inside the dense columns
            BatchPass { blocks: vec![(0, 4, 0)], ..pass.clone() }, // past the last column
            BatchPass { blocks: vec![(0, 1, 5)], ..pass.clone() }, // past the last row
            BatchPass { rows: vec![[0..2, 4..7]], ..pass.clone() },
            BatchPass { rows: vec![[0..2, 0..2]; 3], ..pass.clone() },
            BatchPass { n: 3, ..pass.clone() },
        ];
        for p in bad {
            assert!(matches!(p.check(shape, cols), Err(Error::Shape(_))), "{p:?} accepted");
        }
    }

    /// Every batch's pass 1 keeps its coupling blocks and the rows it reads on the edges
    /// of the padded systems' tree (front padding), so the GPU may solve those columns on
    /// the edge nodes alone; a block moved off the edge is refused.
    #[test]
    fn pass_one_stays_on_the_edges_of_the_tree() {
        let a = generate::random_spd::<f64>(1, 300, 2, 3).unwrap();
        let b = generate::random_rhs(a.shape(), 1, 4).unwrap();
        for target in 1..40 {
            let segs = Segments::new(300, target).unwrap();
            for batch in [1, 3] {
                let chain = Chain { a: &a, b: &b, s: 0, segs: &segs, batch };
                for first in (0..segs.count()).step_by(batch) {
                    let pass = chain.pass_one(first);
                    assert!(pass.on_edges(segs.longest()), "target {target}, batch at {first}: {pass:?}");
                }
            }
        }
        // Seven blocks: 0-based blocks 2 and 4 have both neighbours at their elimination.
        let pass = BatchPass { dense: 1, n: 2, blocks: vec![(0, 1, 4)], rows: vec![[0..2, 12..14]] };
        assert!(!pass.on_edges(7), "block 2 of 7 is inside the tree");
        assert!(BatchPass { blocks: vec![(0, 1, 0), (0, 3, 12)], ..pass.clone() }.on_edges(7));
        assert!(!BatchPass { blocks: vec![(0, 1, 1)], ..pass.clone() }.on_edges(7), "a block not aligned to the blocks");
        assert!(!BatchPass { blocks: vec![], rows: vec![[0..2, 11..13]], ..pass.clone() }.on_edges(7), "rows across two blocks");
        assert!(!BatchPass { blocks: vec![], rows: vec![[8..10, 12..14]], ..pass.clone() }.on_edges(7), "rows inside the tree");
    }

    #[test]
    fn scattered_pieces_land_in_their_places_and_nothing_else_moves() {
        let src: Vec<f64> = (0..5000).map(|i| i as f64).collect();
        let pieces = [(0, &src[..3]), (10, &src[100..4000]), (4010, &src[7..7]), (4010, &src[4000..5000])];
        let mut out = vec![-1.0; 6000];
        super::scatter(&mut out, &pieces);
        let mut expected = vec![-1.0; 6000];
        for (offset, values) in pieces {
            expected[offset..offset + values.len()].copy_from_slice(values);
        }
        assert_eq!(out, expected);
    }

    #[test]
    fn slots_copied_in_pieces_match_one_slot_at_a_time() {
        let bl = 3;
        let src: Vec<f64> = (0..60 * bl).map(|i| i as f64).collect();
        for per_slot in 1..7 {
            for slots in 1..5 {
                // Slot g takes `len` blocks from `from` at block `at`; the last slot is padding.
                let slot = |g: usize| {
                    let len = 1 + (g * 5) % per_slot;
                    (g + 1 < slots).then(|| (7 * g + 1, len, (g * 3) % (per_slot - len + 1)))
                };
                let mut want = vec![f64::NAN; slots * per_slot * bl];
                for (g, out) in want.chunks_mut(per_slot * bl).enumerate() {
                    out.fill(-1.0);
                    if let Some((from, len, at)) = slot(g) {
                        out[at * bl..][..len * bl].copy_from_slice(&src[from * bl..][..len * bl]);
                    }
                }
                for piece in 1..9 {
                    let mut out = vec![f64::NAN; slots * per_slot * bl];
                    copy_slots(&mut out, (bl, per_slot, piece), slot, &src, |pad: &mut [f64]| {
                        assert_eq!(pad.len() % bl, 0, "padding cut inside a block");
                        pad.fill(-1.0)
                    });
                    assert_eq!(out, want, "{slots} slots of {per_slot} blocks, pieces of {piece}");
                }
            }
        }
    }

    #[test]
    fn batches_of_segments_give_the_same_bits_as_one_batch() {
        let a = generate::random_spd::<f64>(1, 50, 3, 7).unwrap();
        let b = generate::random_rhs(a.shape(), 2, 8).unwrap();
        let segs = Segments::new(50, 4).unwrap();
        let run = |batch: usize| {
            let mut x = BlockVec::zeros(a.shape(), 2).unwrap();
            Chain { a: &a, b: &b, s: 0, segs: &segs, batch }
                .solve(&mut SequentialCholesky::new(), &|_, _| Ok(()), &mut BatchBuffers::default(), &mut x)
                .unwrap();
            x
        };
        let whole = run(segs.count());
        for batch in [1, 2, 3] {
            assert_eq!(run(batch), whole, "batches of {batch} segments");
        }
    }

    #[test]
    fn kept_batch_buffers_are_reused_and_change_no_bit() {
        use std::sync::Mutex;
        // The addresses of the pairs handed to `prepare`, call by call.
        let seen = Mutex::new(Vec::new());
        let record = |m: &mut BlockTridiag<f64>, v: &mut BlockVec<f64>| {
            seen.lock().unwrap().push((m.diag().as_ptr() as usize, v.as_slice().as_ptr() as usize));
            Ok(())
        };
        let segs = Segments::new(50, 4).unwrap();
        // Batches of 3 segments: several batches per pass, both pairs of each pass in use.
        let run = |seed: u64, prepare: &Prepare<'_, f64>, buffers: &mut BatchBuffers<f64>| {
            let a = generate::random_spd::<f64>(1, 50, 3, seed).unwrap();
            let b = generate::random_rhs(a.shape(), 2, seed + 1).unwrap();
            let mut x = BlockVec::zeros(a.shape(), 2).unwrap();
            Chain { a: &a, b: &b, s: 0, segs: &segs, batch: 3 }.solve(&mut SequentialCholesky::new(), prepare, buffers, &mut x).unwrap();
            assert!(residual(&a, &x, &b) < 1e-12);
            x
        };
        // A first call leaves its last batches in the buffers; a second problem of the same
        // shape through them gives the bits of fresh buffers, in the same buffers.
        let mut kept = BatchBuffers::default();
        run(11, &record, &mut kept);
        let first = std::mem::take(&mut *seen.lock().unwrap());
        assert_eq!(first.len(), 4, "two pairs per pass");
        // Pass 2 factors the same segments in pass 1's matrix buffers; only the
        // right-hand sides are its own.
        assert_eq!((first[2].0, first[3].0), (first[0].0, first[1].0), "pass 2 made matrices of its own");
        assert!(first[2].1 != first[0].1 && first[3].1 != first[1].1);
        let held = kept.bytes();
        let again = run(21, &record, &mut kept);
        assert_eq!(again, run(21, &|_, _| Ok(()), &mut BatchBuffers::default()), "kept buffers change the result");
        assert_eq!(*seen.lock().unwrap(), first, "the second call of one shape made new buffers");
        assert_eq!(kept.bytes(), held);
        // Another shape replaces them: the buffers do not grow from call to call.
        let a = generate::random_spd::<f64>(1, 23, 3, 31).unwrap();
        let b = generate::random_rhs(a.shape(), 1, 32).unwrap();
        let x = factor_solve(&mut SequentialCholesky::new(), &a, &b, 4, &|_, _| Ok(()), &mut kept).unwrap();
        assert!(residual(&a, &x, &b) < 1e-12);
        assert!(kept.bytes() < held, "{} bytes kept after a smaller problem, {held} before", kept.bytes());
    }

    #[test]
    fn failures_name_the_block_of_the_chain() {
        let nblocks = 30;
        let segs = Segments::new(nblocks, 4).unwrap();
        let sep = segs.separator(2);
        for (bad, what) in [(sep + 2, "a segment's block"), (sep, "a separator")] {
            let mut a = generate::random_spd::<f64>(2, nblocks, 3, 5).unwrap();
            let b = generate::random_rhs(a.shape(), 1, 6).unwrap();
            for d in 0..3 {
                a.set_diag(1, bad, d, d, -50.0);
            }
            match factor_solve(&mut SequentialCholesky::new(), &a, &b, 4, &|_, _| Ok(()), &mut BatchBuffers::default()) {
                Err(Error::NotPositiveDefinite { system: 1, block, .. }) => assert_eq!(block, bad, "{what}"),
                other => panic!("{what}: expected a pivot failure in system 1, got {other:?}"),
            }
            a.set_diag(1, bad, 0, 1, f64::NAN);
            match factor_solve(&mut SequentialCholesky::new(), &a, &b, 4, &|_, _| Ok(()), &mut BatchBuffers::default()) {
                Err(Error::NonFinite { system: 1, block, .. }) => assert_eq!(block, bad, "{what}"),
                other => panic!("{what}: expected a non-finite value in system 1, got {other:?}"),
            }
        }
    }
}
