//! Streamed device panels into fresh host memory, page faults overlapped with the link.
//!
//! The tridiagonal inverse streams its `n^2` output as column panels through a few
//! page-locked host panels. Into memory the caller has never touched (a new `Vec`), the
//! copy out of a host panel first pays a page fault per page, which on the H100 machine's
//! VM costs more than the copy itself (16 threads fault ~32 GB/s, the link moves 55). The
//! previous loop copied one panel at a time with a parallel region per panel, faults
//! included, while the next panel's DMA waited for the host panel: 140-240 ms for
//! `n = 16384` (2.1 GB), against 40 ms into page-locked memory.
//!
//! Here one parallel region covers the whole stream. Workers claim output chunks of a few
//! MiB in order; each first faults its chunk's pages in (its own chunk: nobody else writes
//! there), then waits until the chunk's panel has arrived in its host panel, copies it out
//! with non-temporal stores and counts the panel's chunks down. The calling thread alone
//! talks to the driver ([`PanelLink`]): it enqueues each panel once its host panel has been
//! emptied, learns of arrivals, and copies chunks itself when it has nothing else to do.
//! So the faults of the next panels overlap the DMA of the current one, and no chunk
//! waits for a pool wake-up.

use super::ring::{Claims, SharedPtr, StopWorkers, backoff};
use crate::error::Result;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Bytes of one output chunk: a few huge pages, small enough that sixteen workers stay
/// about two panels ahead of the link.
pub(crate) const CHUNK_BYTES: usize = 4 << 20;

/// The calling thread's side of the stream: panel production and copies into host panels.
pub(crate) trait PanelLink {
    /// Enqueues panel `p` and its copy into host panel `slot`. Panels are enqueued in
    /// order, and `slot`'s previous panel has been copied out of it.
    fn enqueue(&mut self, p: usize, slot: usize) -> Result<()>;
    /// Whether panel `p` is in its host panel; asked in order, each panel until it is.
    fn arrived(&mut self, p: usize) -> Result<bool>;
}

/// One piece of the output: values `src .. src + len` of its panel's host panel go to
/// `out[dst .. dst + len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub panel: usize,
    pub src: usize,
    pub dst: usize,
    pub len: usize,
}

/// The chunks of a stream of `panels` panels in which panel `p` holds `runs(p)`: its
/// `(host panel offset, output offset, values)` runs, each cut into pieces of at most
/// `max_len` values.
pub(crate) fn plan_chunks(panels: usize, runs: impl Fn(usize) -> Vec<(usize, usize, usize)>, max_len: usize) -> Vec<Chunk> {
    let max_len = max_len.max(1);
    let mut out = Vec::new();
    for panel in 0..panels {
        for (src, dst, len) in runs(panel) {
            for at in (0..len).step_by(max_len) {
                out.push(Chunk { panel, src: src + at, dst: dst + at, len: max_len.min(len - at) });
            }
        }
    }
    out
}

/// The state one stream's workers and calling thread share.
pub(crate) struct PanelUnpack<'a, T> {
    chunks: &'a [Chunk],
    panels: usize,
    /// The host panels (`slots[p % slots.len()]` holds panel `p`) and their length.
    slots: Vec<SharedPtr<T>>,
    slot_len: usize,
    out: SharedPtr<T>,
    out_len: usize,
    /// Chunks are claimed in order by the workers and the calling thread.
    claims: Claims,
    /// Panel `p` is in its host panel.
    arrived: Vec<AtomicBool>,
    /// Chunks of panel `p` not yet copied out.
    pending: Vec<AtomicUsize>,
    /// Chunks copied out.
    done: AtomicUsize,
    _out: std::marker::PhantomData<&'a mut [T]>,
}

impl<'a, T: Copy + Send + Sync + 'static> PanelUnpack<'a, T> {
    /// A stream of `panels` panels into `out` through the host panels `slots` (each
    /// `slot_len` values), cut into `chunks` (from [`plan_chunks`]).
    ///
    /// # Safety
    /// Every `slots[i]` is valid for reads of `slot_len` values, and between the arrival
    /// of a panel in it and the last of that panel's chunks nothing but the link's copy
    /// (before arrival) writes it. Every chunk lies inside its slot and inside `out`, and
    /// no two chunks overlap in `out`.
    pub unsafe fn new(chunks: &'a [Chunk], panels: usize, slots: &[*const T], slot_len: usize, out: &'a mut [T]) -> Self {
        let mut pending: Vec<usize> = vec![0; panels];
        for c in chunks {
            assert!(c.panel < panels && c.src + c.len <= slot_len && c.dst + c.len <= out.len(), "chunk {c:?} out of range");
            pending[c.panel] += 1;
        }
        PanelUnpack {
            chunks,
            panels,
            slots: slots.iter().map(|&s| SharedPtr(s as *mut T)).collect(),
            slot_len,
            out_len: out.len(),
            out: SharedPtr(out.as_mut_ptr()),
            claims: Claims::new(chunks.len()),
            arrived: (0..panels).map(|_| AtomicBool::new(false)).collect(),
            pending: pending.into_iter().map(AtomicUsize::new).collect(),
            done: AtomicUsize::new(0),
            _out: std::marker::PhantomData,
        }
    }

    /// Faults chunk `i`'s output pages in: one zero byte per 4 KiB, which its copy
    /// overwrites (a read would map the shared zero page and fault again on the write).
    fn fault_in(&self, i: usize) {
        let c = self.chunks[i];
        let (start, bytes) = (self.out.0.wrapping_add(c.dst) as *mut u8, c.len * std::mem::size_of::<T>());
        for at in (0..bytes).step_by(4096) {
            // SAFETY: inside `out` (checked in `new`), in the chunk this thread claimed;
            // volatile, so that the store is not dropped as dead before the copy.
            unsafe { std::ptr::write_volatile(start.add(at), 0u8) };
        }
    }

    /// Copies chunk `i` out of its host panel (which has arrived) and counts it.
    fn copy_out(&self, i: usize) {
        let c = self.chunks[i];
        let slot = self.slots[c.panel % self.slots.len()];
        debug_assert!(c.src + c.len <= self.slot_len && c.dst + c.len <= self.out_len);
        // SAFETY: the panel has arrived (acquired by the caller) and stays unchanged until
        // its pending count reaches zero; the output range is this thread's claim.
        let (src, dst) =
            unsafe { (std::slice::from_raw_parts(slot.0.add(c.src), c.len), std::slice::from_raw_parts_mut(self.out.0.add(c.dst), c.len)) };
        super::copy_streaming_here(src, dst);
        // Release: the reads of the host panel before the calling thread refills it.
        self.pending[c.panel].fetch_sub(1, Ordering::Release);
        self.done.fetch_add(1, Ordering::Release);
    }

    /// Whether chunk `i`'s panel is in its host panel.
    fn arrived(&self, i: usize) -> bool {
        self.arrived[self.chunks[i].panel].load(Ordering::Acquire)
    }

    /// A worker: claims chunks in order; faults each in, waits for its panel, copies it.
    pub fn work(&self) {
        self.claims.work_after(|i| self.fault_in(i), |i| self.arrived(i), |i| self.copy_out(i));
    }

    /// The calling thread takes the next unclaimed chunk when its panel is there; `false`
    /// when there is none to take (it never waits for a panel).
    fn help(&self) -> bool {
        self.claims.help(
            |i| self.arrived(i),
            |i| {
                self.fault_in(i);
                self.copy_out(i);
            },
        )
    }

    /// The calling thread: enqueues every panel as soon as its host panel is free, marks
    /// arrivals, copies chunks while it has nothing to enqueue. Returns once every chunk is
    /// in `out`; tells the workers to stop when it returns or fails.
    pub fn dispatch(&self, link: &mut impl PanelLink) -> Result<()> {
        let _stop = StopWorkers(&self.claims.abort);
        let slots = self.slots.len();
        let (mut enqueued, mut arrived, mut spins) = (0usize, 0usize, 0u32);
        while self.done.load(Ordering::Acquire) < self.chunks.len() || arrived < self.panels {
            while arrived < enqueued && link.arrived(arrived)? {
                // Release: the copy's completion before the workers read the host panel.
                self.arrived[arrived].store(true, Ordering::Release);
                arrived += 1;
            }
            let free = enqueued < slots || self.pending[enqueued - slots].load(Ordering::Acquire) == 0;
            if enqueued < self.panels && free {
                link.enqueue(enqueued, enqueued % slots)?;
                enqueued += 1;
                spins = 0;
            } else if self.claims.worker_panicked.load(Ordering::Relaxed) {
                // Never seen by the caller: the scope re-raises the worker's panic.
                return Err(crate::Error::Cuda("an unpacking worker panicked".into()));
            } else if !self.help() {
                backoff(&mut spins);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::with_workers;
    use super::*;
    use std::collections::VecDeque;

    /// A link whose "device" panels are slices of a host array: a panel lands in its host
    /// panel only a few questions after it was enqueued, so a chunk copied before its
    /// panel arrived, or a host panel refilled before its chunks were out, shows up as a
    /// wrong value.
    struct LateLink<'a> {
        source: &'a [f64],
        panel_len: usize,
        slots: Vec<*mut f64>,
        queued: VecDeque<(usize, usize)>,
        landed: usize,
        asks: usize,
    }

    impl PanelLink for LateLink<'_> {
        fn enqueue(&mut self, p: usize, slot: usize) -> Result<()> {
            assert_eq!(p, self.landed + self.queued.len(), "panels in order");
            self.queued.push_back((p, slot));
            Ok(())
        }
        fn arrived(&mut self, p: usize) -> Result<bool> {
            self.asks += 1;
            if self.asks.is_multiple_of(3)
                && let Some((q, slot)) = self.queued.pop_front()
            {
                let from = &self.source[q * self.panel_len..];
                let len = self.panel_len.min(from.len());
                // SAFETY: the slot holds `panel_len` values.
                unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), self.slots[slot], len) };
                self.landed += 1;
            }
            Ok(p < self.landed)
        }
    }

    #[test]
    fn streamed_panels_land_in_order_in_fresh_memory() {
        for (values, panel_len, chunk, slots, workers) in
            [(10_000usize, 1000usize, 128usize, 2usize, 4usize), (10_000, 999, 1000, 2, 0), (4096, 4096, 64, 3, 8), (5, 2, 1, 2, 3)]
        {
            let source: Vec<f64> = (0..values).map(|v| v as f64 + 0.5).collect();
            let panels = values.div_ceil(panel_len);
            let mut buffers: Vec<Vec<f64>> = (0..slots).map(|_| vec![f64::NAN; panel_len]).collect();
            let ptrs: Vec<*mut f64> = buffers.iter_mut().map(|b| b.as_mut_ptr()).collect();
            let runs = |p: usize| vec![(0, p * panel_len, panel_len.min(values - p * panel_len))];
            let chunks = plan_chunks(panels, runs, chunk);
            let mut out = vec![f64::NAN; values + 2];
            let consts: Vec<*const f64> = ptrs.iter().map(|&p| p as *const f64).collect();
            // SAFETY: the host panels live through the stream and only the link writes them.
            let unpack = unsafe { PanelUnpack::new(&chunks, panels, &consts, panel_len, &mut out[..values]) };
            let mut link = LateLink { source: &source, panel_len, slots: ptrs.clone(), queued: VecDeque::new(), landed: 0, asks: 0 };
            with_workers(workers, || unpack.work(), || unpack.dispatch(&mut link)).unwrap();
            drop(unpack);
            assert_eq!(&out[..values], &source[..], "{values} {panel_len} {chunk} {slots} {workers}");
            assert!(out[values..].iter().all(|v| v.is_nan()));
        }
    }
}
