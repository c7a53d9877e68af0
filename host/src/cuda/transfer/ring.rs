//! Staged copies through one page-locked ring, with one thread talking to the driver.
//!
//! A copy is cut into pieces of a few hundred KiB, laid out one after another in a ring
//! of page-locked memory in their device layout. Rayon workers move the pieces between
//! the ring and host memory (pitch conversion included); the calling thread, the
//! *dispatcher*, is the only one that calls the driver: it enqueues the DMAs, records an
//! event behind each and learns from the events when ring space may be reused. The
//! previous design (every worker enqueuing its own copies through its own slots) spent
//! 40-70 µs per driver call with sixteen threads contending for the stream
//! (`docs/perf-notes.md`, entries 13, 37 and 38).
//!
//! - Uploads ([`UploadPipeline`]): workers claim pieces in order and copy them into the
//!   ring (non-temporal stores); the dispatcher sends every run of finished, contiguous
//!   pieces as one DMA and releases the ring space when its event has passed.
//! - Downloads ([`DownloadPipeline`]): the dispatcher enqueues a DMA into the ring for
//!   each piece as soon as its ring bytes are free; workers claim pieces in order and
//!   copy each out to the host once its event has passed, which frees its ring bytes.
//!
//! The ring is one stream of bytes shared by both directions: each copy starts where the
//! last one left it, and its pieces wait for the copies of a lap earlier (an upload's
//! DMAs still reading the ring, say) before they overwrite them. The dispatcher never
//! waits while it could send, and moves pieces itself when it has nothing to send: a copy
//! finishes even when no worker ever runs (a pool whose threads are all busy, or a call
//! from inside the pool).

use super::{Columns, Piece, empty_piece, fill_piece, piece_room, piece_values, plan_pieces};
use crate::error::Result;
use crate::scalar::Scalar;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One host array to upload: `src` in host layout `from` to device byte address `dst` in
/// layout `to` (same `width` and `cols`); with `check_finite`, the upload also finds its
/// first non-finite value (the workers scan each piece right after copying it, from
/// cache, instead of a serial pass over the whole array before the upload).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Upload<'a, T> {
    pub src: &'a [T],
    pub from: Columns,
    pub dst: u64,
    pub to: Columns,
    pub check_finite: bool,
}

impl<'a, T> Upload<'a, T> {
    /// An upload without the finiteness scan.
    pub fn new(src: &'a [T], from: Columns, dst: u64, to: Columns) -> Self {
        Upload { src, from, dst, to, check_finite: false }
    }
}

/// The host index (layout `from`) of the first non-finite value of `piece` in `src`.
pub(super) fn first_non_finite_in<T: Scalar>(src: &[T], from: Columns, piece: Piece) -> Option<usize> {
    let scan = |at: usize, len: usize| crate::matrix::first_non_finite(&src[at..at + len]).map(|p| at + p);
    match piece {
        Piece::Columns { first, count } => (first..first + count).find_map(|c| scan(c * from.ld, from.width)),
        Piece::Part { col, start, len } => scan(col * from.ld + start, len),
    }
}

/// Values per thread of [`first_non_finite_beside`]: below this a thread's start costs
/// more than its share of the scan (8 MB take ~0.2 ms on one core).
const VALUES_PER_SCAN_THREAD: usize = 1 << 20;

/// The host index (layout `from`) of the first non-finite value of the whole array, found
/// by up to `threads` scoped threads of its own, each scanning a contiguous share (a range
/// of a dense layout, whole columns of a padded one). Not rayon's pool: a page-locked
/// input has no staging pass to scan in, and its caller may keep the pool busy meanwhile.
/// The segment path fills its next batch there, and the pool's scan of a ~150 MB batch
/// beside that fill took ~19 ms (`docs/perf-notes.md`, entry 60).
pub(super) fn first_non_finite_beside<T: Scalar>(src: &[T], from: Columns, threads: usize) -> Option<usize> {
    let shares = threads.min(from.cols * from.width / VALUES_PER_SCAN_THREAD).max(1);
    first_non_finite_in_shares(src, from, shares)
}

/// [`first_non_finite_beside`] in exactly `shares` shares (at least one), the first on
/// the calling thread (one share: no other thread).
fn first_non_finite_in_shares<T: Scalar>(src: &[T], from: Columns, shares: usize) -> Option<usize> {
    let shares = shares.max(1);
    let values = from.cols * from.width;
    let share = |i: usize| -> Option<usize> {
        let scan = |start: usize, len: usize| crate::matrix::first_non_finite_serial(&src[start..start + len]).map(|p| start + p);
        if from.is_dense() {
            let (start, end) = (i * values / shares, (i + 1) * values / shares);
            scan(start, end - start)
        } else {
            let (first, end) = (i * from.cols / shares, (i + 1) * from.cols / shares);
            (first..end).find_map(|c| scan(c * from.ld, from.width))
        }
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..shares).map(|i| scope.spawn(move || share(i))).collect();
        let mine = share(0);
        // The shares are in host order: the first one that found a value has the answer.
        let joined = others.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        std::iter::once(mine).chain(joined).flatten().next()
    })
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

/// The dispatcher's side of the link: enqueue copies between the ring and the device, and
/// fences that say when the copies enqueued before them have finished (in order).
pub(super) trait Link {
    /// Enqueues a copy of `bytes` bytes from ring offset `at` to device address `dev`.
    fn send(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()>;
    /// Enqueues a copy of `bytes` bytes from device address `dev` to ring offset `at`.
    fn fetch(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()>;
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

// SAFETY: a plain address; who may write where is the claim protocol of the pipelines.
unsafe impl Send for RingMemory {}
// SAFETY: as above.
unsafe impl Sync for RingMemory {}

/// The state one upload's workers and dispatcher share.
pub(super) struct UploadPipeline<'a, T> {
    jobs: &'a [Upload<'a, T>],
    pieces: &'a [RingPiece],
    ring: RingMemory,
    streaming: bool,
    claims: Claims,
    /// Piece `i` is in the ring (its non-temporal stores fenced before the flag is set).
    ready: Vec<AtomicBool>,
    /// Every ring byte before this stream position is free: its copy has finished
    /// (copies of earlier uploads included).
    freed: AtomicUsize,
    /// Per upload: the smallest host index of a non-finite value found (`usize::MAX`:
    /// none; only scanned with `check_finite`).
    non_finite: Vec<AtomicUsize>,
}

impl<'a, T: Scalar> UploadPipeline<'a, T> {
    /// # Safety
    /// `ring.base` is valid for writes of `ring.capacity` bytes, aligned for `T`, and not
    /// used by anything else (no unfinished copy reads it) until the pipeline is dropped.
    /// `pieces` come from [`plan_ring`] for `jobs` and `ring.capacity`; every ring byte
    /// before stream position `freed` is free, and the copies still reading later bytes
    /// are behind the fences the dispatcher is given.
    pub unsafe fn new(jobs: &'a [Upload<'a, T>], pieces: &'a [RingPiece], ring: RingMemory, streaming: bool, freed: usize) -> Self {
        UploadPipeline {
            jobs,
            pieces,
            ring,
            streaming,
            claims: Claims::new(pieces.len()),
            ready: (0..pieces.len()).map(|_| AtomicBool::new(false)).collect(),
            freed: AtomicUsize::new(freed),
            non_finite: jobs.iter().map(|_| AtomicUsize::new(usize::MAX)).collect(),
        }
    }

    /// The first upload (in order) with a non-finite value among those scanned, and the
    /// host index of its first one; for after the dispatcher has returned.
    pub fn first_non_finite(&self) -> Option<(usize, usize)> {
        self.non_finite.iter().enumerate().find_map(|(job, at)| Some((job, at.load(Ordering::Relaxed))).filter(|&(_, at)| at != usize::MAX))
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
        if job.check_finite {
            // After the hand-over: the scan reads the source from cache while the DMA runs.
            if let Some(at) = first_non_finite_in(job.src, job.from, p.piece) {
                self.non_finite[p.job].fetch_min(at, Ordering::Relaxed);
            }
        }
    }

    /// A worker: claims pieces in order and copies each into the ring once there is room.
    pub fn work(&self) {
        self.claims.work(|i| self.has_room(i), |i| self.fill(i));
    }

    /// The dispatcher copies the next unclaimed piece itself when the ring has room for
    /// it; `false` when there is none to take.
    fn help(&self) -> bool {
        self.claims.help(|i| self.has_room(i), |i| self.fill(i))
    }

    /// The dispatcher: sends every run of ready pieces in order, at most `max_batch` bytes
    /// per copy, releases ring space as the link's fences pass, and copies pieces itself
    /// while it has nothing to send. `in_flight` holds `(fence, end)` of the copies not
    /// known to have finished, oldest first (an earlier upload's on entry, this one's
    /// unfinished ones on return). Returns once every piece has been sent, with the
    /// position before which the ring is known free; tells the workers to stop when it
    /// fails.
    pub fn dispatch(&self, link: &mut impl Link, max_batch: usize, in_flight: &mut VecDeque<(usize, usize)>) -> Result<usize> {
        let _stop = StopWorkers(&self.claims.abort);
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
            } else if self.claims.worker_panicked.load(Ordering::Relaxed) {
                // Never seen by the caller: the scope re-raises the worker's panic.
                return Err(crate::Error::Cuda("a staging worker panicked".into()));
            } else if !self.help() {
                backoff(&mut spins);
            }
        }
        Ok(())
    }
}

/// The claim protocol both pipelines share: workers (and the dispatcher, when it has
/// nothing to send) claim pieces in order, each piece once, and move a piece (into the
/// ring or out of it) once it may be moved.
pub(super) struct Claims {
    pieces: usize,
    /// The first piece nobody has claimed yet.
    next: AtomicUsize,
    /// The dispatcher has returned or failed: workers stop.
    pub(super) abort: AtomicBool,
    /// A worker panicked: the dispatcher stops waiting for its piece.
    pub(super) worker_panicked: AtomicBool,
}

impl Claims {
    pub(super) fn new(pieces: usize) -> Self {
        Claims { pieces, next: AtomicUsize::new(0), abort: AtomicBool::new(false), worker_panicked: AtomicBool::new(false) }
    }

    /// A worker: claims pieces in order; waits until `ready(i)` for each, then `take(i)`.
    fn work(&self, ready: impl Fn(usize) -> bool, take: impl Fn(usize)) {
        self.work_after(|_| {}, ready, take);
    }

    /// [`Self::work`], running `claimed(i)` as soon as piece `i` is this worker's, before
    /// it waits for `ready(i)` (work on the piece that needs no data yet).
    pub(super) fn work_after(&self, claimed: impl Fn(usize), ready: impl Fn(usize) -> bool, take: impl Fn(usize)) {
        let _flag = FlagOnPanic(&self.worker_panicked);
        let mut spins = 0u32;
        while !self.abort.load(Ordering::Relaxed) {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.pieces {
                return;
            }
            claimed(i);
            while !ready(i) {
                if self.abort.load(Ordering::Relaxed) {
                    return;
                }
                backoff(&mut spins);
            }
            take(i);
        }
    }

    /// The dispatcher takes the next unclaimed piece itself if it is `ready`; `false`
    /// when there is none to take (it never waits for one).
    pub(super) fn help(&self, ready: impl Fn(usize) -> bool, take: impl Fn(usize)) -> bool {
        let i = self.next.load(Ordering::Relaxed);
        if i >= self.pieces || !ready(i) {
            return false;
        }
        if self.next.compare_exchange(i, i + 1, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return false;
        }
        take(i);
        true
    }
}

/// Tells the dispatcher when a worker unwinds, so that it does not wait forever for the
/// piece the worker held (the scope then re-raises the panic).
struct FlagOnPanic<'a>(&'a AtomicBool);

impl Drop for FlagOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Stops the workers when the dispatcher returns, fails or panics: a worker waiting for
/// ring space (or for its piece) would otherwise wait forever, and the scope for it.
pub(super) struct StopWorkers<'a>(pub(super) &'a AtomicBool);

impl Drop for StopWorkers<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Host memory a pipeline's workers share: each writes only the pieces it claimed (the
/// pieces' host ranges are disjoint), and reads only what the claim protocol hands over.
#[derive(Clone, Copy)]
pub(super) struct SharedPtr<T>(pub(super) *mut T);

// SAFETY: a plain address; who touches which values is the pipelines' claim protocol.
unsafe impl<T> Send for SharedPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedPtr<T> {}

/// The state one download's workers and dispatcher share: device layout `from` (the
/// pieces' addresses) into host memory `out` in layout `to`.
pub(super) struct DownloadPipeline<'a, T> {
    pieces: &'a [RingPiece],
    ring: RingMemory,
    from: Columns,
    to: Columns,
    out: SharedPtr<T>,
    /// Non-temporal stores into the host memory.
    streaming: bool,
    claims: Claims,
    /// Piece `i` is in the ring: the event behind its DMA has passed.
    arrived: Vec<AtomicBool>,
    /// Piece `i` has been copied out: its ring bytes may be reused.
    emptied: Vec<AtomicBool>,
    _out: std::marker::PhantomData<&'a mut [T]>,
}

impl<'a, T: Scalar> DownloadPipeline<'a, T> {
    /// A download of the pieces (from [`plan_ring`] for one array in device layout `from`)
    /// into `out`, host layout `to` (same `width` and `cols`; `out` holds its span).
    ///
    /// # Safety
    /// As [`UploadPipeline::new`]: `ring.base` is valid for `ring.capacity` bytes, aligned
    /// for `T`, and the only copies that may still touch it are behind the fences the
    /// dispatcher is given; the pieces' device ranges are valid and their producers
    /// ordered before the copies on the link's stream.
    pub unsafe fn new(pieces: &'a [RingPiece], ring: RingMemory, from: Columns, out: &'a mut [T], to: Columns, streaming: bool) -> Self {
        assert!(from.width == to.width && from.cols == to.cols && out.len() >= to.span(), "layouts checked by the caller");
        DownloadPipeline {
            pieces,
            ring,
            from,
            to,
            out: SharedPtr(out.as_mut_ptr()),
            streaming,
            claims: Claims::new(pieces.len()),
            arrived: (0..pieces.len()).map(|_| AtomicBool::new(false)).collect(),
            emptied: (0..pieces.len()).map(|_| AtomicBool::new(false)).collect(),
            _out: std::marker::PhantomData,
        }
    }

    /// Copies piece `i` out of the ring into the host memory and marks its ring bytes free.
    ///
    /// Only for the thread that claimed `i`, after `arrived[i]` was seen set.
    fn empty(&self, i: usize) {
        let p = self.pieces[i];
        let size = std::mem::size_of::<T>();
        let at = p.piece.offset(self.to.ld);
        // SAFETY: the ring bytes hold the piece (its DMA has finished: `arrived[i]`, acquired
        // by the caller) and nobody writes them before `emptied[i]` is set; `at + len` lies
        // inside `to.span() <= out.len()` and no other piece covers those host values
        // (plan_pieces: disjoint columns or column parts), so this range is ours.
        let (slot, dst) = unsafe {
            (
                std::slice::from_raw_parts(self.ring.base.add(p.pos % self.ring.capacity) as *const T, p.moved / size),
                std::slice::from_raw_parts_mut(self.out.0.add(at), piece_values(self.to, p.piece)),
            )
        };
        empty_piece(slot, self.from, self.to, p.piece, dst, self.streaming);
        // Release: the reads of the ring before the dispatcher lets a DMA overwrite it.
        self.emptied[i].store(true, Ordering::Release);
    }

    /// A worker: claims pieces in order and copies each out once it has arrived.
    pub fn work(&self) {
        self.claims.work(|i| self.arrived[i].load(Ordering::Acquire), |i| self.empty(i));
    }

    /// The dispatcher copies the next unclaimed piece out itself when it has arrived;
    /// `false` when there is none to take.
    fn help(&self) -> bool {
        self.claims.help(|i| self.arrived[i].load(Ordering::Acquire), |i| self.empty(i))
    }

    /// The dispatcher: enqueues the pieces' DMAs in order as their ring bytes become free
    /// (at most `max_batch` bytes per copy), tells the workers which have arrived, and
    /// copies pieces out itself while it has nothing to send. `prior` holds `(fence, end)`
    /// of earlier copies that may still read the ring, oldest first, and every ring byte
    /// before stream position `freed` is free. Returns once every piece is in host memory,
    /// with the new `freed` (`prior`'s last end moved past this download's bytes when
    /// some of it is still pending). Tells the workers to stop when it fails.
    pub fn dispatch(&self, link: &mut impl Link, max_batch: usize, prior: &mut VecDeque<(usize, usize)>, freed: usize) -> Result<usize> {
        let _stop = StopWorkers(&self.claims.abort);
        let pieces = self.pieces;
        let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
            return Ok(freed);
        };
        let mut freed = freed;
        // Ring bytes between the last copy's end and this one's first piece held nothing.
        match prior.back_mut() {
            Some((_, end)) => *end = (*end).max(first.pos),
            None => freed = freed.max(first.pos),
        }
        let capacity = self.ring.capacity;
        let room = |freed: usize, i: usize| freed >= pieces[i].end().saturating_sub(capacity);
        // This download's fences: `(fence, pieces before which all have arrived)`.
        let mut mine: VecDeque<(usize, usize)> = VecDeque::new();
        let (mut sent, mut arrived, mut emptied, mut spins) = (0usize, 0usize, 0usize, 0u32);
        while emptied < pieces.len() {
            while let Some(&(fence, end)) = prior.front() {
                if !link.passed(fence)? {
                    break;
                }
                freed = freed.max(end);
                prior.pop_front();
            }
            while let Some(&(fence, upto)) = mine.front() {
                if !link.passed(fence)? {
                    break;
                }
                // Release: the event's completion (the DMA's writes) before the workers read.
                (arrived..upto).for_each(|k| self.arrived[k].store(true, Ordering::Release));
                arrived = upto;
                mine.pop_front();
            }
            while emptied < pieces.len() && self.emptied[emptied].load(Ordering::Acquire) {
                emptied += 1;
            }
            if prior.is_empty() {
                // Everything before the first piece not yet copied out is free.
                freed = freed.max(pieces.get(emptied).map_or(last.end(), |p| p.pos));
            }
            if sent < pieces.len() && room(freed, sent) {
                let first = pieces[sent];
                let mut end = sent;
                while let Some(next) = pieces.get(end + 1) {
                    let fits = next.pos + next.moved - first.pos <= max_batch;
                    if !(fits && continues(&pieces[end], next, capacity) && room(freed, end + 1)) {
                        break;
                    }
                    end += 1;
                }
                let tail = &pieces[end];
                link.fetch(first.pos % capacity, first.dev, tail.pos + tail.moved - first.pos)?;
                mine.push_back((link.fence()?, end + 1));
                sent = end + 1;
                spins = 0;
            } else if self.claims.worker_panicked.load(Ordering::Relaxed) {
                // Never seen by the caller: the scope re-raises the worker's panic.
                return Err(crate::Error::Cuda("a staging worker panicked".into()));
            } else if !self.help() {
                backoff(&mut spins);
            }
        }
        // Every piece was copied out: this download's ring bytes are free once the earlier
        // copies still pending are.
        match prior.back_mut() {
            Some((_, end)) => *end = (*end).max(last.end()),
            None => freed = freed.max(last.end()),
        }
        Ok(freed)
    }
}

/// Busy-waits a little, then lets other threads run (the pool may have more workers than
/// free cores, and the dispatcher needs one).
pub(super) fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::super::with_workers;
    use super::*;

    /// A link whose copies land in a host array standing in for the device (or in the ring,
    /// from it), each one only when a later fence is asked about: a piece overwritten in
    /// the ring before its copy finished, or read from it before its copy arrived, shows
    /// up as a wrong value.
    struct HostLink {
        ring: RingMemory,
        device: Vec<u8>,
        /// `(ring offset, device address, bytes, towards the device)`.
        queued: VecDeque<(usize, u64, usize, bool)>,
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
            if let Some((at, dev, bytes, up)) = self.queued.pop_front() {
                let device = &mut self.device[dev as usize..dev as usize + bytes];
                // SAFETY: the dispatcher copies only bytes inside the ring.
                let ring = unsafe { std::slice::from_raw_parts_mut(self.ring.base.add(at), bytes) };
                if up {
                    device.copy_from_slice(ring)
                } else {
                    ring.copy_from_slice(device)
                }
                self.done += 1;
            }
        }

        fn enqueue(&mut self, at: usize, dev: u64, bytes: usize, up: bool) -> Result<()> {
            assert!(at + bytes <= self.ring.capacity, "copy past the ring's end");
            let start = dev as usize;
            assert!(self.arrays.iter().any(|r| r.start <= start && start + bytes <= r.end), "copy {start}+{bytes} outside one array");
            self.queued.push_back((at, dev, bytes, up));
            self.copies += 1;
            Ok(())
        }
    }

    impl Link for HostLink {
        fn send(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()> {
            self.enqueue(at, dev, bytes, true)
        }
        fn fetch(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()> {
            self.enqueue(at, dev, bytes, false)
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

    /// A test ring between copies: where the next copy starts, what is known free, the
    /// DMAs still in flight, and how copies through it are cut and run.
    struct TestRing {
        memory: RingMemory,
        piece: usize,
        workers: usize,
        batch: usize,
        start: usize,
        freed: usize,
        in_flight: VecDeque<(usize, usize)>,
    }

    impl TestRing {
        fn new(memory: RingMemory, piece: usize, workers: usize, batch: usize) -> Self {
            TestRing { memory, piece, workers, batch, start: 0, freed: 0, in_flight: VecDeque::new() }
        }

        /// One upload of `call` (one pass, as `Staging::upload_all`).
        fn upload(&mut self, link: &mut HostLink, call: &[Upload<'_, f64>]) {
            let layout: Vec<_> = call.iter().map(|j| (j.to, j.dst)).collect();
            let pieces = plan_ring(&layout, 8, self.piece, self.memory.capacity, self.start);
            // SAFETY: the ring's memory outlives the pipeline; the copies still using it
            // are behind `in_flight`.
            let pipeline = unsafe { UploadPipeline::new(call, &pieces, self.memory, true, self.freed) };
            let (batch, in_flight) = (self.batch, &mut self.in_flight);
            self.freed = with_workers(self.workers, || pipeline.work(), || pipeline.dispatch(link, batch, in_flight).unwrap());
            self.start = pieces.last().map_or(self.start, |p| p.end());
        }

        /// One download of device layout `dev` at device address 0 into `out` (layout
        /// `host`).
        fn download(&mut self, link: &mut HostLink, dev: Columns, out: &mut [f64], host: Columns, streaming: bool) {
            let pieces = plan_ring(&[(dev, 0)], 8, self.piece, self.memory.capacity, self.start);
            // SAFETY: as above; the device range is the link's first array.
            let pipeline = unsafe { DownloadPipeline::new(&pieces, self.memory, dev, out, host, streaming) };
            let (batch, freed, in_flight) = (self.batch, self.freed, &mut self.in_flight);
            self.freed = with_workers(self.workers, || pipeline.work(), || pipeline.dispatch(link, batch, in_flight, freed).unwrap());
            self.start = pieces.last().map_or(self.start, |p| p.end());
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
        let jobs = [Upload::new(&src[..], host, 0, dev), Upload::new(&other[..], host, second_at as u64, dev)];
        let mut ring = vec![0u64; capacity / 8];
        let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity };
        for calls in [&[&jobs[..]][..], &[&jobs[..1], &jobs[1..]]] {
            let mut link = HostLink::new(memory, second_at * 2 + 64, vec![0..second_at, second_at..2 * second_at]);
            let mut state = TestRing::new(memory, piece, workers, batch);
            for call in calls {
                state.upload(&mut link, call);
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

    /// Downloads one array through a ring of `capacity` bytes with `workers` threads,
    /// between two uploads whose copies the link completes late (the first still reading
    /// the ring when the download starts), and checks the host copy (poisoned before:
    /// every value, nothing past the layout), the uploads' device data (the download did
    /// not overwrite ring bytes an upload still needed, nor the reverse), and a second
    /// download right after the first.
    fn download_through_ring(host: Columns, dev: Columns, capacity: usize, piece: usize, workers: usize, batch: usize) {
        let region = dev.cols * dev.ld * 8;
        let mut link = HostLink::new(
            RingMemory { base: std::ptr::null_mut(), capacity },
            3 * region + 64,
            vec![0..region, region..2 * region, 2 * region..3 * region],
        );
        let stored = |c: usize, r: usize| (c * 1000 + r) as f64 + 0.125;
        for c in 0..dev.cols {
            for r in 0..dev.ld {
                let v = if r < dev.width { stored(c, r) } else { 1e300 };
                link.device[(c * dev.ld + r) * 8..][..8].copy_from_slice(&v.to_ne_bytes());
            }
        }
        let first: Vec<f64> = (0..host.span()).map(|v| v as f64 + 0.5).collect();
        let second: Vec<f64> = (0..host.span()).map(|v| -(v as f64) - 0.25).collect();
        let ups = [Upload::new(&first[..], host, region as u64, dev), Upload::new(&second[..], host, 2 * region as u64, dev)];
        let mut ring = vec![0u64; capacity / 8];
        let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity };
        link.ring = memory;
        let mut state = TestRing::new(memory, piece, workers, batch);
        let mut outs = [vec![f64::NAN; host.span() + 3], vec![f64::NAN; host.span() + 3]];
        // Upload, download, download, upload; the link lags behind all of them.
        state.upload(&mut link, &ups[..1]);
        for (i, out) in outs.iter_mut().enumerate() {
            state.download(&mut link, dev, out, host, i == 1);
        }
        state.upload(&mut link, &ups[1..]);
        while !link.queued.is_empty() {
            link.complete_one();
        }
        let case = format!("{host:?} {dev:?} ring {capacity} piece {piece} workers {workers} batch {batch}");
        for out in &outs {
            for c in 0..host.cols {
                for r in 0..host.width {
                    assert_eq!(out[c * host.ld + r], stored(c, r), "({r}, {c}): {case}");
                }
            }
            assert!(out[host.span()..].iter().all(|v| v.is_nan()), "nothing written past the layout: {case}");
        }
        let value = |at: usize| f64::from_ne_bytes(link.device[at..at + 8].try_into().unwrap());
        for (data, base) in [(&first, region), (&second, 2 * region)] {
            for c in 0..dev.cols {
                for r in 0..dev.width {
                    assert_eq!(value(base + (c * dev.ld + r) * 8), data[c * host.ld + r], "upload ({r}, {c}): {case}");
                }
            }
        }
    }

    #[test]
    fn ring_downloads_deliver_every_value_in_the_host_layout() {
        for (width, cols, host_ld, dev_ld) in super::super::tests::STAGING_LAYOUTS {
            let (host, dev) = (Columns { width, cols, ld: host_ld }, Columns { width, cols, ld: dev_ld });
            for (capacity, piece, workers, batch) in [
                (256usize, 64usize, 3usize, 128usize),
                (4096, 512, 8, 512),
                (4096, 1024, 0, 4096),
                (1 << 16, 4096, 8, 4096),
                (2048, 2048, 2, 1),
            ] {
                download_through_ring(host, dev, capacity, piece, workers, batch);
            }
        }
    }

    #[test]
    fn ring_uploads_find_the_first_non_finite_value() {
        for (width, cols, host_ld, dev_ld) in super::super::tests::STAGING_LAYOUTS {
            let (host, dev) = (Columns { width, cols, ld: host_ld }, Columns { width, cols, ld: dev_ld });
            let values = cols * width;
            // Positions (by value number) of a NaN and of a later infinity; none at all.
            for bad in [None, Some(0), Some(values / 2), Some(values - 1)] {
                for (capacity, piece, workers) in [(256usize, 64usize, 3usize), (4096, 512, 0), (1 << 16, 4096, 8)] {
                    // Padding of the host layout is not data: a NaN there is never reported.
                    let mut src = vec![f64::NAN; host.span()];
                    for c in 0..cols {
                        src[c * host_ld..c * host_ld + width].iter_mut().enumerate().for_each(|(r, v)| *v = (c * width + r) as f64);
                    }
                    let at = |v: usize| (v / width) * host_ld + v % width;
                    if let Some(v) = bad {
                        src[at(v)] = f64::NAN;
                        if v + 1 < values {
                            src[at(values - 1)] = f64::INFINITY;
                        }
                    }
                    let other: Vec<f64> = vec![f64::NAN; host.span()];
                    let second_at = dev.cols * dev.ld * 8;
                    // The second job is not scanned: its NaNs are not reported.
                    let jobs = [
                        Upload { check_finite: true, ..Upload::new(&src[..], host, 0, dev) },
                        Upload::new(&other[..], host, second_at as u64, dev),
                    ];
                    let mut ring = vec![0u64; capacity / 8];
                    let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity };
                    let mut link = HostLink::new(memory, 2 * second_at + 64, vec![0..second_at, second_at..2 * second_at]);
                    let layout: Vec<_> = jobs.iter().map(|j| (j.to, j.dst)).collect();
                    let pieces = plan_ring(&layout, 8, piece, capacity, 0);
                    // SAFETY: as in `upload_through_ring`.
                    let pipeline = unsafe { UploadPipeline::new(&jobs, &pieces, memory, true, 0) };
                    with_workers(workers, || pipeline.work(), || pipeline.dispatch(&mut link, capacity / 8, &mut VecDeque::new()).unwrap());
                    assert_eq!(pipeline.first_non_finite(), bad.map(|v| (0, at(v))), "{host:?} {dev:?} ring {capacity} piece {piece}");
                }
            }
        }
    }

    /// The page-locked inputs' scan on threads of its own: in any number of shares, even
    /// more than the values or the columns, it names the same first value as one serial
    /// pass, ignores NaNs in the host padding, and finds a value that only a later share
    /// holds.
    #[test]
    fn scans_in_shares_find_the_first_non_finite_value() {
        let mut layouts = super::super::tests::STAGING_LAYOUTS.to_vec();
        // One more dense layout (split by value ranges, not by columns).
        layouts.push((37, 41, 37, 37));
        for (width, cols, host_ld, _) in layouts {
            let from = Columns { width, cols, ld: host_ld };
            let values = cols * width;
            let at = |v: usize| (v / width) * host_ld + v % width;
            for bad in [None, Some(0), Some(1), Some(values / 3), Some(values - 1)].into_iter().filter(|b| b.is_none_or(|v| v < values)) {
                let mut src = vec![f32::NAN; from.span()];
                for v in 0..values {
                    src[at(v)] = v as f32;
                }
                if let Some(v) = bad {
                    src[at(v)] = f32::NEG_INFINITY;
                    if v + 1 < values {
                        // A later bad value must not win over the first.
                        src[at(values - 1)] = f32::NAN;
                    }
                }
                let serial = first_non_finite_in(&src, from, Piece::Columns { first: 0, count: cols });
                assert_eq!(serial, bad.map(at), "{from:?}");
                for shares in [1, 2, 3, 7, 16, cols + 1, values + 2] {
                    assert_eq!(first_non_finite_in_shares(&src, from, shares), serial, "{from:?} in {shares} shares, bad {bad:?}");
                }
            }
        }
        // The public entry takes one share below VALUES_PER_SCAN_THREAD values a thread.
        let small = vec![1.0f64; 1000];
        assert_eq!(first_non_finite_beside(&small, Columns::flat(1000), 16), None);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_panicking_worker_is_re_raised_not_waited_for() {
        // A source shorter than its layout (upload_all checks this; the pipeline alone
        // does not): the piece that reads past its end panics, in a worker or in the
        // dispatcher, and the upload must end in that panic instead of waiting forever.
        let src: Vec<f64> = (0..10_000).map(|v| v as f64).collect();
        let flat = Columns::flat(20_000);
        let jobs = [Upload::new(&src[..], flat, 0, flat)];
        let pieces = plan_ring(&[(flat, 0)], 8, 512, 4096, 0);
        let mut ring = vec![0u64; 512];
        let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity: 4096 };
        let mut link = HostLink::new(memory, 20_000 * 8, std::iter::once(0..20_000 * 8).collect());
        // SAFETY: as above.
        let pipeline = unsafe { UploadPipeline::new(&jobs, &pieces, memory, false, 0) };
        let _ = with_workers(4, || pipeline.work(), || pipeline.dispatch(&mut link, 4096, &mut VecDeque::new()));
    }

    #[test]
    fn a_failing_link_stops_the_workers() {
        struct Broken;
        impl Link for Broken {
            fn send(&mut self, _: usize, _: u64, _: usize) -> Result<()> {
                Err(crate::Error::Shape("link down".into()))
            }
            fn fetch(&mut self, _: usize, _: u64, _: usize) -> Result<()> {
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
        let jobs = [Upload::new(&src[..], flat, 0, flat)];
        let pieces = plan_ring(&[(flat, 0)], 8, 512, 2048, 0);
        let mut ring = vec![0u64; 256];
        let memory = RingMemory { base: ring.as_mut_ptr() as *mut u8, capacity: 2048 };
        // SAFETY: as above.
        let pipeline = unsafe { UploadPipeline::new(&jobs, &pieces, memory, false, 0) };
        let result = with_workers(4, || pipeline.work(), || pipeline.dispatch(&mut Broken, 4096, &mut VecDeque::new()));
        // Returns (the workers waiting for ring space gave up) with the link's error.
        assert!(result.is_err());
        // A download's workers, waiting for pieces that never arrive, give up too.
        let mut out = vec![0.0f64; src.len()];
        // SAFETY: as above (the link never copies).
        let pipeline = unsafe { DownloadPipeline::new(&pieces, memory, flat, &mut out, flat, false) };
        let result = with_workers(4, || pipeline.work(), || pipeline.dispatch(&mut Broken, 4096, &mut VecDeque::new(), 0));
        assert!(result.is_err());
    }
}
