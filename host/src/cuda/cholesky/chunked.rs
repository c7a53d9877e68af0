//! Batches larger than the device (or than a chosen chunk): factor + solve chunk by chunk.
//!
//! The systems of a batch are independent, so a batch is cut into chunks of whole
//! systems. Two solvers (this one and a partner with its own stream, plan and staging
//! ring) take the chunks in turn: while the device factors and solves chunk `i` on one
//! stream, the host stages chunk `i + 1` into the other plan and copies the solution of
//! chunk `i - 1` out. Every chunk runs the same kernels on the same per-system data as
//! the single-shot path: per system, the results are those of one call on the whole
//! batch (bit for bit with the deterministic tiled engine).

use super::super::memory::{Place, copy_2d_bytes};
use super::super::transfer::is_page_locked;
use super::{GpuCholesky, GpuOptions, plan_bytes};
use crate::cuda::env_override;
use crate::error::{Error, Result};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::Scalar;
use crate::segmented::{BatchPass, SegmentBackend};
use crate::trace::timed;

/// The share of the usable device memory one segment's plan may take.
const SEGMENT_SHARE: usize = 8;

/// Lanes of the segment path: this solver and its partner, each with a plan of
/// `SEGMENT_SHARE / SEGMENT_LANES` segments, so that one batch's upload runs beside the
/// other's kernels (`docs/perf-notes.md`, entry 82).
const SEGMENT_LANES: usize = 2;

/// [`SEGMENT_LANES`], or 1 or 2 from `BLOCKTRI_SEGMENT_LANES` (to measure one against the
/// other in one build).
fn segment_lanes() -> usize {
    env_override("BLOCKTRI_SEGMENT_LANES").unwrap_or(SEGMENT_LANES).clamp(1, 2)
}

/// What a factor + solve that does not fit at once does instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deferred {
    /// The batch in chunks of whole systems.
    Chunks(ChunkPlan),
    /// Each chain in segments of about this many blocks.
    Segments(usize),
}

/// How a batch is cut: `systems` per chunk (the last chunk may hold fewer), run by
/// `solvers` plans in turn (2 to overlap transfers with compute, 1 when only one chunk
/// fits at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkPlan {
    pub systems: usize,
    pub chunks: usize,
    pub solvers: usize,
}

/// The most bytes that pass the memory check's 5 % margin in `free` (`bytes + bytes / 20
/// <= free`).
fn usable(free: usize) -> usize {
    free - free / 21
}

/// Cuts `batch` systems of `per_system` device bytes each: one chunk when the batch fits
/// in `free` (with the 5 % margin of the memory check) and no `cap` is smaller; else two
/// alternating plans of at most `cap` systems that fit together, or one plan when only
/// one fits. Fails with [`Error::OutOfMemory`] when not even one system fits.
pub(crate) fn plan_chunks(batch: usize, per_system: usize, free: usize, cap: Option<usize>) -> Result<ChunkPlan> {
    let usable = usable(free);
    let fit = |plans: usize| usable / (plans * per_system).max(1);
    let cap = cap.unwrap_or(usize::MAX).max(1);
    if batch <= cap && fit(1) >= batch {
        return Ok(ChunkPlan { systems: batch, chunks: 1, solvers: 1 });
    }
    let (systems, solvers) = match (fit(2).min(cap), fit(1).min(cap)) {
        (two, _) if two >= 1 => (two, 2),
        (_, one) if one >= 1 => (one, 1),
        _ => return Err(Error::OutOfMemory { needed: per_system, free }),
    };
    // Even chunks: the same work per chunk, the last one not a sliver.
    let chunks = batch.div_ceil(systems);
    let systems = batch.div_ceil(chunks);
    Ok(ChunkPlan { systems, chunks, solvers: if chunks == 1 { 1 } else { solvers } })
}

/// Whether `plan`, counted against the free memory of the moment, cuts `batch` into more
/// chunks than `cap` asks for (more than one without a cap) or found room for none: then
/// [`GpuCholesky::chunk_plan`] counts again once the device has settled.
fn short_of_room(plan: &Result<ChunkPlan>, batch: usize, cap: Option<usize>) -> bool {
    let fewest = batch.div_ceil(cap.unwrap_or(batch).max(1));
    !plan.as_ref().is_ok_and(|p| p.chunks <= fewest)
}

impl<T: Scalar> GpuCholesky<T> {
    /// The partner solver (made when missing or made with other options): the same
    /// options without a chunk cap, its own stream, plan and staging ring.
    fn partner_mut(&mut self) -> Result<&mut GpuCholesky<T>> {
        let options = GpuOptions { chunk_systems: None, ..self.options };
        if self.partner.as_ref().is_none_or(|p| p.options != options) {
            self.partner = Some(Box::new(GpuCholesky::with_gpu(self.gpu.clone(), options)?));
        }
        Ok(self.partner.as_deref_mut().expect("just made"))
    }

    /// The chunking of a factor + solve of `shape` with `k` right-hand-side columns.
    pub(super) fn chunk_plan(&self, shape: Shape, k: usize) -> Result<ChunkPlan> {
        // The live plan of this shape already holds the whole batch with `k` columns: one
        // chunk, without asking the driver for free memory (`cuMemGetInfo` on every call
        // of a Newton loop's factor + solve).
        let whole = ChunkPlan { systems: shape.batch, chunks: 1, solvers: 1 };
        let uncapped = self.options.chunk_systems.is_none_or(|cap| cap >= shape.batch);
        if let Some(plan) = &self.plan
            && uncapped
            && plan.bufs.shape == shape
            && plan.rhs.as_ref().is_some_and(|r| r.len() >= shape.batch * shape.dim() * k)
        {
            return Ok(whole);
        }
        let one = Shape { batch: 1, ..shape };
        let tiled = self.is_tiled(shape.block)?;
        let per_system = plan_bytes::<T>(one, k, tiled);
        let plan = plan_chunks(shape.batch, per_system, self.gpu.room_with(self.plan_footprint())?, self.options.chunk_systems);
        // Short of room for the chunks the cap allows (the whole batch without a cap), or for
        // any chunk: memory freed on other streams (a solver dropped just before) may still
        // be held until the device synchronizes, and cutting the batch finer for it would
        // cost every chunk's launches and transfers (or fail), so look again after waiting.
        if !short_of_room(&plan, shape.batch, self.options.chunk_systems) {
            return plan;
        }
        plan_chunks(shape.batch, per_system, self.gpu.settled_room_with(self.plan_footprint())?, self.options.chunk_systems)
    }

    /// Blocks per segment for one chain too long for the device (see `segmented.rs`): the
    /// longest segment whose plan with `k + 2n` right-hand-side columns takes at most an
    /// eighth of the usable memory, so that the chunked batches of segments run two plans
    /// of several segments each and the reduced system fits beside them; always shorter
    /// than the chain (`shape.nblocks >= 2`). Fails with [`Error::OutOfMemory`] when not
    /// even a segment of one block fits so.
    pub(super) fn segment_target(&self, shape: Shape, k: usize) -> Result<usize> {
        let tiled = self.is_tiled(shape.block)?;
        let free = self.gpu.room_with(self.plan_footprint())?;
        let budget = usable(free) / SEGMENT_SHARE;
        let bytes = |m: usize| plan_bytes::<T>(Shape { batch: 1, nblocks: m, block: shape.block }, k + 2 * shape.block, tiled);
        if bytes(1) > budget {
            return Err(Error::OutOfMemory { needed: SEGMENT_SHARE * bytes(1), free });
        }
        // The plan grows with `m`: the largest `m < nblocks` within the budget, by bisection.
        let (mut fits, mut too_big) = (1, shape.nblocks);
        while too_big - fits > 1 {
            let mid = fits + (too_big - fits) / 2;
            if bytes(mid) <= budget { fits = mid } else { too_big = mid }
        }
        Ok(fits)
    }

    /// Factor + solve of a batch in chunks (see the module docs): `x` receives the
    /// solutions of the right-hand sides `b`, or of its own values when `b` is `None` (a
    /// chunk's rows are uploaded, and waited for, before its solutions are written over
    /// them). The first failing system (in batch order of the chunks) is reported with its
    /// index in the whole batch; the chunks before it have written their solutions.
    pub(super) fn factor_solve_chunked(
        &mut self,
        a: &BlockTridiag<T>,
        b: Option<&BlockVec<T>>,
        plan: ChunkPlan,
        x: &mut BlockVec<T>,
    ) -> Result<()> {
        let shape = a.shape();
        let chunk_shape = Shape { batch: plan.systems, ..shape };
        let k = x.ncols();
        let (diag_len, sub_len) = (shape.nblocks * a.block_len(), (shape.nblocks - 1) * a.block_len());
        let rhs_len = shape.dim() * k;
        if plan.solvers == 2 {
            self.partner_mut()?;
        }
        if plan.solvers == 1 {
            self.partner = None;
        }
        // `pending`: the chunk enqueued last, whose results are still to be collected.
        let mut pending: Option<(usize, usize, bool)> = None; // (first system, systems, on partner)
        for c in 0..plan.chunks {
            let s0 = c * plan.systems;
            let count = plan.systems.min(shape.batch - s0);
            let on_partner = plan.solvers == 2 && c % 2 == 1;
            {
                let solver: &mut GpuCholesky<T> = if on_partner { self.partner_mut()? } else { self };
                let rhs = &b.unwrap_or(&*x).as_slice()[s0 * rhs_len..(s0 + count) * rhs_len];
                crate::trace::timed("chunk: upload", || {
                    solver.upload_systems(chunk_shape, a.ld(), &a.diag()[s0 * diag_len..], &a.sub()[s0 * sub_len..], count, true)?;
                    // SAFETY: waited for (the rows may be overwritten by this chunk's
                    // solutions once it is collected).
                    unsafe { solver.upload_rhs_values(rhs, k, true) }
                })?;
                solver.launch_factor_solve()?;
            }
            if let Some(done) = pending.replace((s0, count, on_partner)) {
                crate::trace::timed("chunk: collect the previous (waits)", || self.collect_chunk(done, rhs_len, x))?;
            }
            if plan.solvers == 1 {
                let done = pending.take().expect("just enqueued");
                self.collect_chunk(done, rhs_len, x)?;
            }
        }
        if let Some(done) = pending {
            self.collect_chunk(done, rhs_len, x)?;
        }
        // The plan holds the last chunk's factor, not the batch's: nothing to solve with.
        self.factored = false;
        Ok(())
    }

    /// Factor + solve of chains too long for the device, by segments of about `target`
    /// blocks (`segmented.rs`), for `a` and `b` that [`Self::factor_solve_enqueue`] has
    /// checked and deferred here. The plan is left holding the last batch's or the reduced
    /// system's factor, not `a`'s: nothing to solve with afterwards.
    pub(super) fn factor_solve_segmented(&mut self, a: &BlockTridiag<T>, b: &BlockVec<T>, target: usize) -> Result<BlockVec<T>> {
        // The batch buffers page-locked once, so that every batch moves by DMA.
        let gpu = self.gpu.clone();
        let pin = move |m: &mut BlockTridiag<T>, v: &mut BlockVec<T>| {
            m.pin_for_gpu(&gpu)?;
            v.pin_for_gpu(&gpu)
        };
        // The buffers stay with the solver for its next call (page-locked once per shape).
        let mut buffers = std::mem::take(&mut self.segment_buffers);
        // `factor_solve_enqueue` checked `b` whole before it deferred here: the batches'
        // right-hand sides are built from checked values only, so their host scans (~12-19
        // ms per 150 MB batch beside the next batch's fill, docs/perf-notes.md entry 60) go.
        self.rhs_known_finite = true;
        let x = crate::trace::timed("factor+solve: segments", || crate::segmented::factor_solve(self, a, b, target, &pin, &mut buffers));
        self.rhs_known_finite = false;
        if let Some(partner) = self.partner.as_deref_mut() {
            partner.rhs_known_finite = false;
        }
        self.segment_buffers = buffers;
        self.factored = false;
        x
    }

    /// Waits for a chunk, checks it and copies its solutions into `x`.
    fn collect_chunk(&mut self, (s0, count, on_partner): (usize, usize, bool), rhs_len: usize, x: &mut BlockVec<T>) -> Result<()> {
        let solver: &mut GpuCholesky<T> = if on_partner { self.partner.as_deref_mut().expect("partner") } else { self };
        solver.check_factor_systems(count, s0)?;
        solver.download_rhs_values(&mut x.as_mut_slice()[s0 * rhs_len..(s0 + count) * rhs_len])?;
        solver.check_solve_systems(count, s0)
    }
}

impl<T: Scalar> GpuCholesky<T> {
    /// Segment lane `lane`'s solver: this one or its partner (made on first use), which
    /// skips the host scans of right-hand sides as this one does in the segment path.
    fn segment_lane(&mut self, lane: usize) -> Result<&mut GpuCholesky<T>> {
        if lane == 0 {
            return Ok(self);
        }
        let known = self.rhs_known_finite;
        let partner = self.partner_mut()?;
        partner.rhs_known_finite = known;
        Ok(partner)
    }

    /// [`SegmentBackend::start`] on this solver's stream. Of a page-locked `b` (and a
    /// batch that fits one plan) the dense columns are uploaded, the rest of the device
    /// buffer is zeroed and the coupling blocks copied into it, then the factor + solve is
    /// launched and the rows named are copied back as 2-D copies straight into `b`: all
    /// enqueued, waited for in [`Self::finish_batch`]. The coupling columns are solved on
    /// the tree's edge nodes only when the blocks and rows lie there (entry 65). Any other
    /// `b` runs to the end here on the default path. The device still checks every row of
    /// the solution for non-finite values.
    ///
    /// # Safety
    /// As [`SegmentBackend::start`]: `a` and `b` stay alive and untouched until
    /// [`Self::finish_batch`] or [`Self::drain_batch`] has returned.
    unsafe fn start_batch(&mut self, a: &BlockTridiag<T>, b: &mut BlockVec<T>, pass: &BatchPass) -> Result<()> {
        pass.check(b.shape(), b.ncols())?;
        let one_chunk = a.shape() == b.shape() && self.chunk_plan(a.shape(), b.ncols()).is_ok_and(|p| p.chunks == 1);
        if !one_chunk || !is_page_locked(b.as_slice()) {
            timed("segment batch: the whole columns (zeroed on the host)", || pass.zero_the_rest(b));
            return crate::solver::Factorization::factor_solve_in_place(self, a, b);
        }
        if !self.rhs_known_finite {
            // The dense columns and the blocks are what the device reads; the rest is zeros.
            timed("segment batch: rhs checks", || {
                let mut dense = b.clone();
                pass.zero_the_rest(&mut dense);
                dense.validate()
            })?;
        }
        let (dim, cols) = (b.shape().dim(), b.ncols());
        let pitch = cols * dim * T::BYTES; // one system's columns
        let host = b.as_mut_slice().as_mut_ptr() as usize;
        let at = |offset: usize| offset * T::BYTES;
        // From the first copy on, the device may use `a` and `b` until the batch is
        // finished or drained.
        self.batch_in_flight = true;
        // Page-locked matrices (the segment path's batch buffers) are only enqueued.
        timed("segment batch: upload (enqueued)", || self.upload_systems(a.shape(), a.ld(), a.diag(), a.sub(), a.shape().batch, false))?;
        let rhs = timed("segment batch: rhs upload (enqueued)", || -> Result<u64> {
            let rhs = self.rhs_buffer(cols)?.0.addr();
            let stream = self.stream.clone();
            // SAFETY (the copies): every range lies inside system g's `cols` columns of
            // `dim` values on both ends (`pass.check`), the device buffer holds the whole
            // batch with `cols` columns (`rhs_buffer`), `b` is page-locked and, by this
            // function's contract, untouched until the stream has been synchronized.
            unsafe {
                if pass.dense < cols {
                    cudarc::driver::result::memset_d8_async(rhs, 0, b.shape().batch * pitch, stream.cu_stream())?;
                }
                let (src, dst) = (Place::Host(host as *mut std::ffi::c_void), Place::Device(rhs));
                copy_2d_bytes(&stream, src, pitch, dst, pitch, at(pass.dense * dim), b.shape().batch)?;
                for &(g, c0, r0) in &pass.blocks {
                    let off = at((g * cols + c0) * dim + r0);
                    let (src, dst) = (Place::Host((host + off) as *mut std::ffi::c_void), Place::Device(rhs + off as u64));
                    copy_2d_bytes(&stream, src, at(dim), dst, at(dim), at(pass.n), pass.n)?;
                }
            }
            Ok(rhs)
        })?;
        // The coupling columns on the tree's edges alone where the batch keeps them there
        // (`BatchPass::on_edges`; docs/perf-notes.md entry 65): a segment's `O(log len)`
        // path blocks instead of all of its blocks.
        let edge_cols = if pass.on_edges(a.shape().nblocks) { cols - pass.dense } else { 0 };
        timed("segment batch: launch", || self.launch_factor_solve_edges(edge_cols))?;
        let rows = pass.rows.iter().enumerate().flat_map(|(g, pair)| pair.iter().map(move |r| (g, r)));
        rows.filter(|(_, r)| !r.is_empty()).try_for_each(|(g, r)| {
            let off = at(g * cols * dim + r.start);
            let (src, dst) = (Place::Device(rhs + off as u64), Place::Host((host + off) as *mut std::ffi::c_void));
            // SAFETY: `cols` columns of `r.len()` values `dim` apart inside system g on both
            // ends (`pass.check`); `b` is page-locked and, by this function's contract, not
            // read before the batch is finished.
            unsafe { copy_2d_bytes(&self.stream, src, at(dim), dst, at(dim), at(r.len()), cols) }
        })
    }

    /// Waits for the batch started on this solver ([`Self::start_batch`]) and checks its
    /// factor and solution; `Ok` when none is in flight.
    fn finish_batch(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.batch_in_flight) {
            return Ok(());
        }
        timed("segment batch: wait", || self.stream.synchronize())?;
        self.check_factor()?;
        self.check_solve()
    }

    /// Waits for a batch in flight, dropping its results.
    fn drain_batch(&mut self) {
        if std::mem::take(&mut self.batch_in_flight) {
            let _ = self.stream.synchronize();
        }
    }
}

impl<T: Scalar> SegmentBackend<T> for GpuCholesky<T> {
    /// Four segments a lane: [`Self::segment_target`] sizes them so that each takes an
    /// eighth of the usable memory.
    fn max_batch(&self) -> usize {
        SEGMENT_SHARE / segment_lanes()
    }

    fn lanes(&self) -> usize {
        segment_lanes()
    }

    unsafe fn start(&mut self, lane: usize, a: &BlockTridiag<T>, b: &mut BlockVec<T>, pass: &BatchPass) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.segment_lane(lane)?.start_batch(a, b, pass) }
    }

    fn finish(&mut self, lane: usize) -> Result<()> {
        match lane {
            0 => self.finish_batch(),
            _ => self.partner.as_deref_mut().map_or(Ok(()), GpuCholesky::finish_batch),
        }
    }

    fn drain(&mut self) {
        self.drain_batch();
        if let Some(partner) = self.partner.as_deref_mut() {
            partner.drain_batch();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_that_fits_is_one_chunk() {
        assert_eq!(plan_chunks(100, 10, 2000, None).unwrap(), ChunkPlan { systems: 100, chunks: 1, solvers: 1 });
    }

    #[test]
    fn a_large_batch_alternates_two_plans_in_even_chunks() {
        // 1050 usable bytes: two plans of 52 systems of 10 bytes.
        let p = plan_chunks(1000, 10, 1100, None).unwrap();
        assert_eq!(p.solvers, 2);
        assert!(p.systems * 10 * 2 <= 1100 - 1100 / 21);
        assert_eq!(p.chunks, 1000usize.div_ceil(p.systems));
        assert!(p.chunks * p.systems >= 1000 && (p.chunks - 1) * p.systems < 1000);
    }

    #[test]
    fn a_cap_forces_chunks_and_the_last_is_not_a_sliver() {
        let p = plan_chunks(10, 1, 1 << 30, Some(4)).unwrap();
        assert_eq!(p, ChunkPlan { systems: 4, chunks: 3, solvers: 2 });
        let p = plan_chunks(9, 1, 1 << 30, Some(4)).unwrap();
        assert_eq!(p, ChunkPlan { systems: 3, chunks: 3, solvers: 2 });
    }

    /// The planner counts again after the device settles exactly when the room of the
    /// moment cut the batch finer than the cap (or than one chunk) or fit nothing; a cap
    /// alone, with room for its chunks, asks no wait (even chunks may hold fewer systems
    /// than the cap: 9 systems under a cap of 4 are three chunks of 3).
    #[test]
    fn the_planner_waits_only_when_room_not_the_cap_cut_the_batch() {
        let room = 1 << 30;
        for (batch, cap) in [(10, Some(4)), (9, Some(4)), (10, None), (10, Some(10)), (10, Some(20)), (1, Some(1))] {
            let plan = plan_chunks(batch, 1, room, cap);
            assert!(!short_of_room(&plan, batch, cap), "batch {batch}, cap {cap:?}: {plan:?}");
        }
        // Room for 3 systems per plan, two plans: a cap of 4 (or none) cut finer by room.
        for cap in [Some(4), None] {
            let plan = plan_chunks(10, 100, 630, cap);
            assert!(plan.as_ref().is_ok_and(|p| p.systems < 4), "{plan:?}");
            assert!(short_of_room(&plan, 10, cap), "cap {cap:?}: {plan:?}");
        }
        // Room for none, with and without a cap.
        for cap in [Some(4), None] {
            assert!(short_of_room(&plan_chunks(10, 100, 90, cap), 10, cap));
        }
    }

    #[test]
    fn one_plan_when_only_one_system_fits_and_an_error_when_none() {
        let p = plan_chunks(5, 100, 150, None).unwrap();
        assert_eq!(p, ChunkPlan { systems: 1, chunks: 5, solvers: 1 });
        assert!(matches!(plan_chunks(5, 100, 90, None), Err(Error::OutOfMemory { needed: 100, free: 90 })));
    }
}
