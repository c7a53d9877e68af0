//! Staged uploads through one page-locked ring, with one thread talking to the driver.
//!
//! An upload (one or several host arrays) is cut into pieces of a few hundred KiB, laid
//! out one after another in a ring of page-locked memory in their device layout. Rayon
//! workers claim pieces in order and copy them into the ring (pitch conversion included,
//! non-temporal stores); the calling thread, the *dispatcher*, sends every run of
//! finished, contiguous pieces to the device as one DMA, records an event behind it and
//! releases the ring space when that event has passed. Only the dispatcher calls the
//! driver: the previous design (every worker enqueuing its own copies) spent 40-70 µs per
//! driver call with sixteen threads contending for the stream, and uploaded a solver's
//! matrices at 26-34 GB/s of the link's 52 (`docs/perf-notes.md`, entries 13 and 37).
//!
//! The dispatcher never waits while holding unsent pieces, and copies pieces itself when
//! it has nothing to send: the upload finishes even when no worker ever runs (a pool
//! whose threads are all busy, or a call from inside the pool).

use super::{Columns, Piece, fill_piece, piece_room, piece_values, plan_pieces};
use crate::error::Result;
use crate::scalar::Scalar;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One host array to upload: `src` in host layout `from` to device byte address `dst` in
/// layout `to` (same `width` and `cols`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Upload<'a, T> {
    pub src: &'a [T],
    pub from: Columns,
    pub dst: u64,
    pub to: Columns,
}

/// Where one piece of an upload sits in the ring and on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RingPiece {
    /// Index of its [`Upload`].
    job: usize,
    piece: Piece,
    /// Position in the endless stream of ring bytes; the ring offset is `pos % capacity`.
    pos: usize,
    /// Bytes it occupies in the ring (device layout, padding after its last column included).
    room: usize,
    /// Bytes the DMA moves for it: `room` less the padding after its last column.
    moved: usize,
    /// Device byte address of its first value.
    dev: u64,
}

impl RingPiece {
    /// One past its last byte in the stream of ring bytes.
    pub(super) fn end(&self) -> usize {
        self.pos + self.room
    }
}

/// Lays out the pieces of `jobs` (device layouts and addresses, values of `size` bytes,
/// pieces of at most `piece_bytes`) in a ring of `capacity` bytes from stream position
/// `start` (where the previous upload ended): each piece follows the previous one, or
/// starts the next lap when it would not fit before the ring's end.
pub(super) fn plan_ring(jobs: &[(Columns, u64)], size: usize, piece_bytes: usize, capacity: usize, start: usize) -> Vec<RingPiece> {
    let max_values = (piece_bytes / size).max(1);
    assert!(max_values * size <= capacity, "a piece must fit in the ring");
    let mut out = Vec::new();
    // Aligned for `T` whatever the previous upload's type was.
    let mut pos = start.next_multiple_of(size);
    for (job, &(to, dst)) in jobs.iter().enumerate() {
        if to.cols == 0 || to.width == 0 {
            continue;
        }
        for piece in plan_pieces(to.width, to.cols, to.ld, max_values) {
            let room = piece_room(to, piece) * size;
            if pos % capacity + room > capacity {
                pos = pos.next_multiple_of(capacity);
            }
            let dev = dst + (piece.offset(to.ld) * size) as u64;
            out.push(RingPiece { job, piece, pos, room, moved: piece_values(to, piece) * size, dev });
            pos += room;
        }
    }
    out
}

/// `b` continues `a` in the ring (not across its end) and in the same device array: one
/// DMA can move both. Two arrays may sit back to back on the device, but one copy over
/// two allocations is an invalid argument to the driver.
fn continues(a: &RingPiece, b: &RingPiece, capacity: usize) -> bool {
    a.job == b.job && b.pos == a.end() && !b.pos.is_multiple_of(capacity) && b.dev == a.dev + a.room as u64
}

/// The dispatcher's side of the link: enqueue copies from the ring, and fences that say
/// when the copies enqueued before them have finished (in order).
pub(super) trait Link {
    /// Enqueues a copy of `bytes` bytes from ring offset `at` to device address `dev`.
    fn send(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()>;
    /// A fence behind every copy sent so far.
    fn fence(&mut self) -> Result<usize>;
    /// Whether the copies before `fence` have finished; a fence that has passed is not
    /// asked about again.
    fn passed(&mut self, fence: usize) -> Result<bool>;
}

/// The ring's memory, shared by the workers (each writes only the pieces it claimed).
#[derive(Clone, Copy)]
pub(super) struct RingMemory {
    pub base: *mut u8,
    pub capacity: usize,
}

// SAFETY: a plain address; who may write where is the claim protocol of `Pipeline`.
unsafe impl Send for RingMemory {}
// SAFETY: as above.
unsafe impl Sync for RingMemory {}

/// The state one upload's workers and dispatcher share.
pub(super) struct Pipeline<'a, T> {
    jobs: &'a [Upload<'a, T>],
    pieces: &'a [RingPiece],
    ring: RingMemory,
    streaming: bool,
    /// The first piece nobody has claimed yet.
    next: AtomicUsize,
    /// Piece `i` is in the ring (its non-temporal stores fenced before the flag is set).
    ready: Vec<AtomicBool>,
    /// Every ring byte before this stream position is free: its copy has finished
    /// (copies of earlier uploads included).
    freed: AtomicUsize,
    /// The dispatcher has returned (every piece sent) or failed: workers stop.
    abort: AtomicBool,
    /// A worker panicked: the dispatcher stops waiting for its piece.
    worker_panicked: AtomicBool,
}

impl<'a, T: Scalar> Pipeline<'a, T> {
    /// # Safety
    /// `ring.base` is valid for writes of `ring.capacity` bytes, aligned for `T`, and not
    /// used by anything else (no unfinished copy reads it) until the pipeline is dropped.
    /// `pieces` come from [`plan_ring`] for `jobs` and `ring.capacity`; every ring byte
    /// before stream position `freed` is free, and the copies still reading later bytes
    /// are behind the fences the dispatcher is given.
    pub unsafe fn new(jobs: &'a [Upload<'a, T>], pieces: &'a [RingPiece], ring: RingMemory, streaming: bool, freed: usize) -> Self {
        Pipeline {
            jobs,
            pieces,
            ring,
            streaming,
            next: AtomicUsize::new(0),
            ready: (0..pieces.len()).map(|_| AtomicBool::new(false)).collect(),
            freed: AtomicUsize::new(freed),
            abort: AtomicBool::new(false),
            worker_panicked: AtomicBool::new(false),
        }
    }

    /// Whether piece `i` may be written: the bytes it takes in the ring were last used a
    /// lap earlier, by pieces whose copies have finished.
    fn has_room(&self, i: usize) -> bool {
        self.freed.load(Ordering::Acquire) >= self.pieces[i].end().saturating_sub(self.ring.capacity)
    }

    /// Copies piece `i` into the ring and marks it ready.
    ///
    /// Only for the thread that claimed `i`, after [`Self::has_room`] said yes.
    fn fill(&self, i: usize) {
        let p = self.pieces[i];
        let job = &self.jobs[p.job];
        let at = p.pos % self.ring.capacity;
        // SAFETY: `at + room <= capacity` (plan_ring) and `at` is a multiple of
        // size_of::<T>() (every room is whole values, every lap a multiple of them);
        // piece `i` is claimed by this thread alone, and no copy reads its bytes any more
        // (has_room), so the range is ours until `ready[i]` hands it to the dispatcher.
        let slot = unsafe { std::slice::from_raw_parts_mut(self.ring.base.add(at) as *mut T, p.room / std::mem::size_of::<T>()) };
        fill_piece(job.src, job.from, job.to, p.piece, slot, self.streaming);
        // Release: the piece's stores (non-temporal ones fenced by `stream_bytes`) before
        // the flag the dispatcher acquires.
        self.ready[i].store(true, Ordering::Release);
    }

    /// A worker: claims pieces in order and copies each into the ring once there is room.
    pub fn work(&self) {
        /// Tells the dispatcher when this worker unwinds, so that it does not wait forever
        /// for the piece the worker held (the scope then re-raises the panic).
        struct FlagOnPanic<'a>(&'a AtomicBool);
        impl Drop for FlagOnPanic<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
        }
        let _flag = FlagOnPanic(&self.worker_panicked);
        let mut spins = 0u32;
        while !self.abort.load(Ordering::Relaxed) {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.pieces.len() {
                return;
            }
            while !self.has_room(i) {
                if self.abort.load(Ordering::Relaxed) {
                    return;
                }
                backoff(&mut spins);
            }
            self.fill(i);
        }
    }

    /// The dispatcher copies the next unclaimed piece itself when the ring has room for
    /// it; `false` when there is none to take.
    fn help(&self) -> bool {
        let i = self.next.load(Ordering::Relaxed);
        if i >= self.pieces.len() || !self.has_room(i) {
            return false;
        }
        if self.next.compare_exchange(i, i + 1, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return false;
        }
        self.fill(i);
        true
    }

    /// The dispatcher: sends every run of ready pieces in order, at most `max_batch` bytes
    /// per copy, releases ring space as the link's fences pass, and copies pieces itself
    /// while it has nothing to send. `in_flight` holds `(fence, end)` of the copies not
    /// known to have finished, oldest first (an earlier upload's on entry, this one's
    /// unfinished ones on return). Returns once every piece has been sent, with the
    /// position before which the ring is known free; tells the workers to stop when it
    /// fails.
    pub fn dispatch(&self, link: &mut impl Link, max_batch: usize, in_flight: &mut VecDeque<(usize, usize)>) -> Result<usize> {
        /// Stops the workers when the dispatcher returns, fails or panics: a worker
        /// waiting for ring space would otherwise wait forever (and the scope for it).
        struct StopWorkers<'a>(&'a AtomicBool);
        impl Drop for StopWorkers<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = StopWorkers(&self.abort);
        self.dispatch_inner(link, max_batch, in_flight)?;
        Ok(self.freed.load(Ordering::Relaxed))
    }

    fn dispatch_inner(&self, link: &mut impl Link, max_batch: usize, in_flight: &mut VecDeque<(usize, usize)>) -> Result<()> {
        let pieces = self.pieces;
        // Ring bytes between the last upload's end and this one's first piece (a lap
        // skipped, or alignment) held nothing: free once what came before them is.
        if let Some(first) = pieces.first() {
            match in_flight.back_mut() {
                Some((_, end)) => *end = (*end).max(first.pos),
                None => _ = self.freed.fetch_max(first.pos, Ordering::Release),
            }
        }
        let (mut sent, mut spins) = (0usize, 0u32);
        while sent < pieces.len() {
            while let Some(&(fence, end)) = in_flight.front() {
                if !link.passed(fence)? {
                    break;
                }
                self.freed.store(end, Ordering::Release);
                in_flight.pop_front();
            }
            if self.ready[sent].load(Ordering::Acquire) {
                let first = pieces[sent];
                let mut last = sent;
                while let Some(next) = pieces.get(last + 1) {
                    let fits = next.pos + next.moved - first.pos <= max_batch;
                    if !(fits && continues(&pieces[last], next, self.ring.capacity) && self.ready[last + 1].load(Ordering::Acquire)) {
                        break;
                    }
                    last += 1;
                }
                let end = &pieces[last];
                link.send(first.pos % self.ring.capacity, first.dev, end.pos + end.moved - first.pos)?;
                // Up to the next piece: a lap's unused tail is free with the copy before it.
                in_flight.push_back((link.fence()?, pieces.get(last + 1).map_or(end.end(), |p| p.pos)));
                sent = last + 1;
                spins = 0;
            } else if self.worker_panicked.load(Ordering::Relaxed) {
                // Never seen by the caller: the scope re-raises the worker's panic.
                return Err(crate::Error::Cuda("a staging worker panicked".into()));
            } else if !self.help() {
                backoff(&mut spins);
            }
        }
        Ok(())
    }
}

/// Busy-waits a little, then lets other threads run (the pool may have more workers than
/// free cores, and the dispatcher needs one).
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link whose copies land in a host array standing in for the device, each one only
    /// when a later fence is asked about: a piece overwritten in the ring before its copy
    /// finished shows up as a wrong value on the "device".
    struct HostLink {
        ring: RingMemory,
        device: Vec<u8>,
        queued: VecDeque<(usize, u64, usize)>,
        /// Device byte ranges of the uploads: no copy may span two.
        arrays: Vec<std::ops::Range<usize>>,
        fences: Vec<usize>,
        done: usize,
        copies: usize,
    }

    impl HostLink {
        /// A link into a "device" of `bytes` bytes (all `0xAB`) holding `arrays`.
        fn new(ring: RingMemory, bytes: usize, arrays: Vec<std::ops::Range<usize>>) -> Self {
            HostLink { ring, device: vec![0xAB; bytes], queued: VecDeque::new(), arrays, fences: Vec::new(), done: 0, copies: 0 }
        }

        /// Performs the oldest queued copy.
        fn complete_one(&mut self) {
            if let Some((at, dev, bytes)) = self.queued.pop_front() {
                // SAFETY: the dispatcher sends only bytes inside the ring.
                let src = unsafe { std::slice::from_raw_parts(self.ring.base.add(at), bytes) };
                self.device[dev as usize..dev as usize + bytes].copy_from_slice(src);
                self.done += 1;
            }
        }
    }

    impl Link for HostLink {
        fn send(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()> {
            assert!(at + bytes <= self.ring.capacity, "copy past the ring's end");
            let start = dev as usize;
            assert!(self.arrays.iter().any(|r| r.start <= start && start + bytes <= r.end), "copy {start}+{bytes} outside one array");
            self.queued.push_back((at, dev, bytes));
            self.copies += 1;
            Ok(())
        }
        fn fence(&mut self) -> Result<usize> {
            self.fences.push(self.copies);
            Ok(self.fences.len() - 1)
        }
        fn passed(&mut self, fence: usize) -> Result<bool> {
            // One copy finishes per question: the link lags behind the dispatcher.
            self.complete_one();
            Ok(self.done >= self.fences[fence])
        }
    }

    #[test]
    fn ring_pieces_never_straddle_the_end_and_follow_each_other() {
        let jobs = [(Columns { width: 3, cols: 50, ld: 4 }, 0u64), (Columns { width: 700, cols: 2, ld: 704 }, 8000)];
        let pieces = plan_ring(&jobs, 8, 256, 1000, 0);
        for w in pieces.windows(2) {
            assert!(w[1].pos >= w[0].end());
            assert!(w[1].pos == w[0].end() || w[1].pos % 1000 == 0, "{w:?}");
        }
        for p in &pieces {
            assert!(p.pos % 1000 + p.room <= 1000 && p.moved <= p.room && p.room <= 256, "{p:?}");
        }
    }

    /// Uploads two arrays through a ring of `capacity` bytes with `workers` threads, first
    /// both in one upload, then one upload each (the second starting where the first
    /// left the ring, its copies still in flight), and checks every value on the host
    /// "device" (poisoned before) and that nothing past the layouts changed.
    fn upload_through_ring(host: Columns, dev: Columns, capacity: usize, piece: usize, workers: usize, batch: usize) {
        let src: Vec<f64> = (0..host.span()).map(|v| v as f64 + 0.5).collect();
        let other: Vec<f64> = (0..host.span()).map(|v| -(v as f64) - 0.25).collect();
        // Back to back, as two device allocations may be.
        let second_at = dev.cols * dev.ld * 8;
        let jobs =
            [Upload { src: &src[..], from: host, dst: 0, to: dev }, Upload { src: &other[..], from: host, dst: second_at as u64, to: dev }];
        let mut ring = vec![0u64; capacity / 8];
        let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity };
        for calls in [&[&jobs[..]][..], &[&jobs[..1], &jobs[1..]]] {
            let mut link = HostLink::new(memory, second_at * 2 + 64, vec![0..second_at, second_at..2 * second_at]);
            let (mut start, mut freed, mut in_flight) = (0usize, 0usize, VecDeque::new());
            for call in calls {
                let layout: Vec<_> = call.iter().map(|j| (j.to, j.dst)).collect();
                let pieces = plan_ring(&layout, 8, piece, capacity, start);
                // SAFETY: `ring` outlives the pipeline; the copies still reading it are
                // behind `in_flight`.
                let pipeline = unsafe { Pipeline::new(call, &pieces, memory, true, freed) };
                freed = rayon::in_place_scope(|s| {
                    for _ in 0..workers {
                        s.spawn(|_| pipeline.work());
                    }
                    pipeline.dispatch(&mut link, batch, &mut in_flight).unwrap()
                });
                start = pieces.last().map_or(start, |p| p.end());
            }
            while !link.queued.is_empty() {
                link.complete_one();
            }
            let value = |at: usize| f64::from_ne_bytes(link.device[at..at + 8].try_into().unwrap());
            for (j, (data, base)) in [(&src, 0usize), (&other, second_at)].into_iter().enumerate() {
                for c in 0..dev.cols {
                    for r in 0..dev.width {
                        let at = base + (c * dev.ld + r) * 8;
                        assert_eq!(value(at), data[c * host.ld + r], "job {j} ({r}, {c}): {host:?} {dev:?} ring {capacity} piece {piece}");
                    }
                }
                // Nothing after the last column's values: its padding, or past the end.
                let end = base + dev.span() * 8;
                let stop = if j == 0 { second_at } else { end + 8 };
                assert!(link.device[end..stop].iter().all(|&b| b == 0xAB), "nothing written past the layout");
            }
        }
    }

    #[test]
    fn ring_uploads_deliver_every_value_in_the_device_layout() {
        for (width, cols, host_ld, dev_ld) in super::super::tests::STAGING_LAYOUTS {
            let (host, dev) = (Columns { width, cols, ld: host_ld }, Columns { width, cols, ld: dev_ld });
            // (ring bytes, piece bytes, workers, batch bytes): tiny rings that lap many
            // times, a dispatcher alone, batches of one piece and of many.
            for (capacity, piece, workers, batch) in [
                (256usize, 64usize, 3usize, 128usize),
                (4096, 512, 8, 2048),
                (4096, 1024, 0, 4096),
                (1 << 16, 4096, 8, 1 << 20),
                (2048, 2048, 2, 1),
            ] {
                upload_through_ring(host, dev, capacity, piece, workers, batch);
            }
        }
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_panicking_worker_is_re_raised_not_waited_for() {
        // A source shorter than its layout (upload_all checks this; the pipeline alone
        // does not): the piece that reads past its end panics, in a worker or in the
        // dispatcher, and the upload must end in that panic instead of waiting forever.
        let src: Vec<f64> = (0..10_000).map(|v| v as f64).collect();
        let flat = Columns::flat(20_000);
        let jobs = [Upload { src: &src[..], from: flat, dst: 0, to: flat }];
        let pieces = plan_ring(&[(flat, 0)], 8, 512, 4096, 0);
        let mut ring = vec![0u64; 512];
        let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity: 4096 };
        let mut link = HostLink::new(memory, 20_000 * 8, std::iter::once(0..20_000 * 8).collect());
        // SAFETY: as above.
        let pipeline = unsafe { Pipeline::new(&jobs, &pieces, memory, false, 0) };
        let _ = rayon::in_place_scope(|s| {
            for _ in 0..4 {
                s.spawn(|_| pipeline.work());
            }
            pipeline.dispatch(&mut link, 4096, &mut VecDeque::new())
        });
    }

    #[test]
    fn a_failing_link_stops_the_workers() {
        struct Broken;
        impl Link for Broken {
            fn send(&mut self, _: usize, _: u64, _: usize) -> Result<()> {
                Err(crate::Error::Shape("link down".into()))
            }
            fn fence(&mut self) -> Result<usize> {
                Ok(0)
            }
            fn passed(&mut self, _: usize) -> Result<bool> {
                Ok(false)
            }
        }
        let src: Vec<f64> = (0..10_000).map(|v| v as f64).collect();
        let flat = Columns::flat(src.len());
        let jobs = [Upload { src: &src[..], from: flat, dst: 0, to: flat }];
        let pieces = plan_ring(&[(flat, 0)], 8, 512, 2048, 0);
        let mut ring = vec![0u64; 256];
        let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity: 2048 };
        // SAFETY: as above.
        let pipeline = unsafe { Pipeline::new(&jobs, &pieces, memory, false, 0) };
        let result = rayon::in_place_scope(|s| {
            for _ in 0..4 {
                s.spawn(|_| pipeline.work());
            }
            pipeline.dispatch(&mut Broken, 4096, &mut VecDeque::new())
        });
        // Returns (the workers waiting for ring space gave up) with the link's error.
        assert!(result.is_err());
    }
}
