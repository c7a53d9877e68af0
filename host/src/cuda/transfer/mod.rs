//! Host <-> device transfers at pinned-memory speed.
//!
//! Copies from ordinary (pageable) host memory are staged by the driver through a small
//! bounce buffer and run at a fraction of the link (H100: 7 GB/s in, 13 GB/s out against
//! 52 GB/s pinned). [`Staging`] does that staging itself, faster, with the pitch
//! conversion between host and device layouts done in the same pass: uploads go through
//! one page-locked ring filled by several CPU threads while a single thread sends the
//! filled runs to the DMA engine, downloads the other way through the same ring
//! ([`ring`]). Data that are already page-locked ([`PinnedBuffer`], or memory the
//! caller registered with CUDA) skip the staging and go straight to the DMA engine.

use super::context::Gpu;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, result, sys};
use rayon::prelude::*;
use std::ptr::NonNull;
use std::sync::Arc;

mod panels;
mod ring;
pub(crate) use panels::{CHUNK_BYTES, PanelLink, PanelUnpack, plan_chunks};
pub(crate) use ring::Upload;

/// Element types a [`PinnedBuffer`] may hold: plain values for which all-zero bytes are
/// a valid value (the buffer starts zeroed).
pub trait Plain: Copy + Send + Sync + 'static + private::Sealed {}
impl Plain for f32 {}
impl Plain for f64 {}
impl Plain for u8 {}
impl Plain for u32 {}
impl Plain for u64 {}
mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for u8 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Page-locked ("pinned") host memory owned by a Rust value: the DMA engine reads and
/// writes it directly, at the full speed of the link, and copies from it can overlap with
/// kernels. Dereferences to a slice. Allocate the buffers a hot loop reuses once (pinning
/// is slow, and too much of it starves the operating system).
///
/// ```no_run
/// use blocktri::cuda::{Gpu, PinnedBuffer};
/// let gpu = Gpu::shared().unwrap();
/// let mut buf = PinnedBuffer::<f64>::zeroed(&gpu, 1 << 20).unwrap();
/// buf[0] = 1.0;
/// assert_eq!(buf.len(), 1 << 20);
/// ```
pub struct PinnedBuffer<T: Plain> {
    ptr: NonNull<T>,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the buffer owns its memory exclusively (like a Box<[T]>); page-locked memory is
// ordinary host memory to the CPU.
unsafe impl<T: Plain> Send for PinnedBuffer<T> {}
// SAFETY: shared references only give out `&[T]`.
unsafe impl<T: Plain> Sync for PinnedBuffer<T> {}

impl<T: Plain> PinnedBuffer<T> {
    /// `len` zeroed elements of page-locked memory on `gpu`'s context. Fails with
    /// [`Error::HostOutOfMemory`] when the system cannot pin that much.
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<Self> {
        Self::zeroed_in(gpu.context(), len)
    }

    pub(crate) fn zeroed_in(ctx: &Arc<CudaContext>, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or(Error::HostOutOfMemory { needed: usize::MAX })?;
        ctx.bind_to_thread()?;
        // SAFETY: the context is current; PORTABLE pins it for every context in the process.
        let raw = unsafe { result::malloc_host(bytes.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) }
            .map_err(|_| Error::HostOutOfMemory { needed: bytes })?;
        let ptr = NonNull::new(raw as *mut T).ok_or(Error::HostOutOfMemory { needed: bytes })?;
        // Zero in parallel: touching 1 GB on one thread takes a noticeable fraction of a second.
        // SAFETY: `bytes` freshly allocated bytes; all-zero is a valid `T` (Plain).
        let all = unsafe { std::slice::from_raw_parts_mut(raw as *mut u8, bytes) };
        all.par_chunks_mut(1 << 20).for_each(|c| c.fill(0));
        Ok(PinnedBuffer { ptr, len, ctx: ctx.clone() })
    }

    /// A page-locked copy of `data`.
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<Self> {
        let mut buf = Self::zeroed(gpu, data.len())?;
        parallel_copy(data, &mut buf);
        Ok(buf)
    }
}

impl<T: Plain> std::ops::Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialized elements owned by this value.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> std::ops::DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, borrowed mutably through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer").field("len", &self.len).finish()
    }
}

impl<T: Plain> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; a failure here leaks the pinned pages.
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by malloc_host in `zeroed_in`, freed once. Copies that used it
        // were completed by their owners before the buffer could be dropped (borrows).
        let _ = unsafe { result::free_host(self.ptr.as_ptr() as *mut std::ffi::c_void) };
    }
}

/// Host memory page-locked with the CUDA driver (`cuMemHostRegister`) for as long as this
/// value lives: the memory of a matrix or vector pinned by `pin_for_gpu`. The owner keeps
/// it in a field declared before its buffers, so that it unregisters before they are freed.
pub(crate) struct HostRegistration {
    addr: usize,
    ctx: Arc<CudaContext>,
}

impl HostRegistration {
    /// Registers the `bytes` bytes at `addr` (a live allocation of the caller).
    ///
    /// # Safety
    /// The range stays allocated, and is not moved, until the returned value is dropped.
    pub(crate) unsafe fn new(gpu: &Gpu, addr: usize, bytes: usize) -> Result<Self> {
        let ctx = gpu.context().clone();
        ctx.bind_to_thread()?;
        // SAFETY: the caller's contract; PORTABLE makes it page-locked for every context.
        unsafe { sys::cuMemHostRegister_v2(addr as *mut _, bytes, sys::CU_MEMHOSTREGISTER_PORTABLE) }
            .result()
            .map_err(|e| Error::Cuda(format!("page-locking {bytes} bytes of host memory: {e}")))?;
        Ok(HostRegistration { addr, ctx })
    }
}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; the pages then stay locked until exit.
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered in `new`, still allocated (the owner's field order).
        let _ = unsafe { sys::cuMemHostUnregister(self.addr as *mut _) };
    }
}

/// Whether `data` lies in page-locked memory the driver knows (allocated with
/// `cuMemHostAlloc`, as [`PinnedBuffer`], or registered with `cuMemHostRegister`): both
/// its first and its last byte are checked. Such data skip the staging copy. Always
/// false without a GPU driver.
///
/// ```
/// assert!(!blocktri::cuda::is_page_locked(&vec![1.0f64; 4]));
/// ```
pub fn is_page_locked<T>(data: &[T]) -> bool {
    is_page_locked_range(data.as_ptr() as usize, std::mem::size_of_val(data))
}

/// Whether the `bytes` bytes at host address `addr` are page-locked (see
/// [`is_page_locked`]); nothing is read from them (the range may be uninitialized).
pub(crate) fn is_page_locked_range(addr: usize, bytes: usize) -> bool {
    // SAFETY: only tries to dlopen the driver (calling into a missing one would panic).
    if bytes == 0 || !unsafe { sys::is_culib_present() } {
        return false;
    }
    [addr, addr + bytes - 1].iter().all(|&a| {
        let mut kind: u32 = 0;
        let mut attr = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
        let mut data = [&mut kind as *mut u32 as *mut std::ffi::c_void];
        // SAFETY: the plural query only reads the driver's tables and, unlike the singular
        // one, answers "unknown" (type 0) for pageable memory instead of an error return
        // (which compute-sanitizer would report on every staged copy).
        let r = unsafe { sys::cuPointerGetAttributes(1, &mut attr, data.as_mut_ptr(), a as sys::CUdeviceptr) };
        r == sys::CUresult::CUDA_SUCCESS && kind == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
    })
}

/// A host buffer of `len` values for results that will be written in full: allocated
/// without touching its pages (no zeroing pass), with transparent huge pages requested
/// on Linux so that the first writes fault in 2 MB at a time. Fails with
/// [`Error::HostOutOfMemory`]. The caller must write every element before `set_len`.
pub(crate) fn output_vec<T>(len: usize) -> Result<Vec<T>> {
    let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or(Error::HostOutOfMemory { needed: usize::MAX })?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::HostOutOfMemory { needed: bytes })?;
    crate::error::advise_huge_pages(v.as_ptr() as usize, bytes);
    Ok(v)
}

/// Copies `src` into `dst` (equal lengths) with non-temporal stores on x86-64, in
/// `threads` parts: the staged data then sit in DRAM, not dirty in the CPU caches, when
/// the DMA engine reads them (reading cache-resident lines through snoops is several
/// times slower than reading memory). Elsewhere a plain threaded copy.
pub(crate) fn copy_streaming<T: Copy + Send + Sync>(src: &[T], dst: &mut [T], threads: usize) {
    assert_eq!(src.len(), dst.len(), "copy_streaming: lengths differ");
    // Parts of whole 64-byte lines, at least 64 KiB each.
    let part_bytes = std::mem::size_of_val(src).div_ceil(threads.max(1)).next_multiple_of(64).max(1 << 16);
    let part = (part_bytes / std::mem::size_of::<T>().max(1)).max(1);
    dst.par_chunks_mut(part).zip(src.par_chunks(part)).for_each(|(d, s)| copy_streaming_here(s, d));
}

/// Copies `len` bytes with 16-byte non-temporal stores where the destination is aligned.
///
/// # Safety
/// Both ranges valid for `len` bytes and disjoint.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_bytes(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    // Head up to 16-byte alignment of the destination, plain.
    let head = (dst as usize).next_multiple_of(16) - dst as usize;
    let head = head.min(len);
    unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
    let (mut i, body) = (head, (len - head) / 16 * 16 + head);
    while i < body {
        // SAFETY: i..i+16 inside both ranges; dst + i is 16-byte aligned (SSE2 is baseline
        // on x86-64).
        unsafe { _mm_stream_si128(dst.add(i) as *mut __m128i, _mm_loadu_si128(src.add(i) as *const __m128i)) };
        i += 16;
    }
    unsafe {
        std::ptr::copy_nonoverlapping(src.add(body), dst.add(body), len - body);
        // Order the streaming stores before anything this thread does next (the DMA is
        // enqueued after the parallel copy has joined).
        _mm_sfence();
    }
}

/// Copies `src` into `dst` (equal lengths) in `threads` contiguous parts on rayon's pool.
/// The staging copies use a few threads only: the DMA engine reads the same host memory at
/// the same time, and a copy on every core starves it.
pub(crate) fn copy_with_threads<T: Copy + Send + Sync>(src: &[T], dst: &mut [T], threads: usize) {
    let part = src.len().div_ceil(threads.max(1)).max(1 << 12);
    if src.len() <= part {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(part).zip(src.par_chunks(part)).for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// Copies `src` into `dst` (equal lengths) on every thread of rayon's pool: one core
/// moves about 10 GB/s, the link 50.
pub(crate) fn parallel_copy<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
    copy_with_threads(src, dst, rayon::current_num_threads());
}

/// Bytes the solvers have moved between host and device memory in this process: matrices,
/// right-hand sides and results through `Staging` (staged or direct), not the few status
/// words each call reads back. Calls on data that stay on the device (device arrays,
/// `DeviceArray`) leave it unchanged, which is how tests check that no host round trip
/// happened.
///
/// ```
/// let before = blocktri::cuda::host_transfer_bytes();
/// assert!(blocktri::cuda::host_transfer_bytes() >= before);
/// ```
pub fn host_transfer_bytes() -> u64 {
    HOST_TRANSFER_BYTES.load(std::sync::atomic::Ordering::Relaxed)
}

static HOST_TRANSFER_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn count_transfer(bytes: usize) {
    HOST_TRANSFER_BYTES.fetch_add(bytes as u64, std::sync::atomic::Ordering::Relaxed);
}

/// A column layout: `cols` columns of `width` elements, `ld` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Columns {
    pub width: usize,
    pub cols: usize,
    pub ld: usize,
}

impl Columns {
    /// Contiguous elements.
    pub fn flat(len: usize) -> Self {
        Columns { width: len, cols: 1, ld: len }
    }
    fn is_dense(&self) -> bool {
        self.cols <= 1 || self.width == self.ld
    }
    /// Elements spanned: the last column ends at `(cols - 1) ld + width`.
    pub fn span(&self) -> usize {
        if self.cols == 0 { 0 } else { (self.cols - 1) * self.ld + self.width }
    }
}

/// Bytes of one staging slot: the largest piece a worker moves at once.
pub(crate) const SLOT_BYTES: usize = 2 << 20;
/// Workers of one staged copy, rayon tasks (at most the pool's threads). 16 on the
/// 16-core H100 machine: 1 GiB copies from DRAM 30-34 GB/s with 8, 40-41 with 16
/// (docs/perf-notes.md, entry 14).
const STAGING_WORKERS: usize = 16;
/// The upload ring holds this many slots' worth of bytes (32 MiB with the default slot).
const RING_SLOTS: usize = 16;
/// Largest piece of a ring upload: a worker's copy of it (~100 µs) is the first DMA's wait.
const MAX_RING_PIECE_BYTES: usize = 1 << 20;
/// Uploads below this run on the calling thread alone: waking the pool's threads costs
/// up to ~0.5 ms on the H100 machine's VM (`docs/perf-notes.md`, entry 14).
const POOL_MIN_BYTES: usize = 512 << 10;
/// Pieces are no smaller than this unless the whole copy is: the driver's per-copy cost
/// (a few µs) stays small against a piece's time on the link (~5 µs at 256 KiB).
const MIN_PIECE_BYTES: usize = 256 << 10;

/// One piece of a staged copy: whole columns, or a part of one column longer than a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    Columns { first: usize, count: usize },
    Part { col: usize, start: usize, len: usize },
}

impl Piece {
    /// Offset of the piece's first element in a layout with leading dimension `ld`.
    fn offset(self, ld: usize) -> usize {
        match self {
            Piece::Columns { first, .. } => first * ld,
            Piece::Part { col, start, .. } => col * ld + start,
        }
    }
}

/// Splits a copy of `cols` columns of `width` values, `ld` apart on the device, into
/// pieces of at most `max_values` values of the device layout (padding included, so that
/// a piece's columns keep their pitch in the slot); columns longer than that in parts.
fn plan_pieces(width: usize, cols: usize, ld: usize, max_values: usize) -> Vec<Piece> {
    let max_values = max_values.max(1);
    if ld <= max_values {
        let per = max_values / ld;
        (0..cols).step_by(per).map(|first| Piece::Columns { first, count: per.min(cols - first) }).collect()
    } else {
        (0..cols)
            .flat_map(|col| (0..width).step_by(max_values).map(move |start| Piece::Part { col, start, len: max_values.min(width - start) }))
            .collect()
    }
}

/// Fills a slot with `piece` of host `src` (layout `from`) in the device layout `to`
/// (the DMA engine then moves [`piece_values`] of it).
fn fill_piece<T: Scalar>(src: &[T], from: Columns, to: Columns, piece: Piece, slot: &mut [T], streaming: bool) {
    match piece {
        Piece::Columns { first, count } => pack_columns(&src[first * from.ld..], from, slot, to, count, streaming),
        Piece::Part { col, start, len } => {
            let at = col * from.ld + start;
            copy_values(&src[at..at + len], &mut slot[..len], streaming);
        }
    }
}

/// Values of the slot that `piece` occupies in the device layout `dev` (whole columns
/// with their padding).
fn piece_room(dev: Columns, piece: Piece) -> usize {
    match piece {
        Piece::Columns { count, .. } => count * dev.ld,
        Piece::Part { len, .. } => len,
    }
}

/// Values of the device layout `dev` that the DMA engine moves for `piece`.
fn piece_values(dev: Columns, piece: Piece) -> usize {
    match piece {
        Piece::Columns { count, .. } => (count - 1) * dev.ld + dev.width,
        Piece::Part { len, .. } => len,
    }
}

/// Copies `piece`, downloaded into `slot` in the device layout `from`, into `dst`: the
/// piece's own stretch of the host layout `to` (from its first value to its last, with
/// non-temporal stores when `streaming`).
fn empty_piece<T: Scalar>(slot: &[T], from: Columns, to: Columns, piece: Piece, dst: &mut [T], streaming: bool) {
    match piece {
        Piece::Columns { count, .. } => pack_columns(slot, from, dst, to, count, streaming),
        Piece::Part { len, .. } => copy_values(&slot[..len], &mut dst[..len], streaming),
    }
}

/// Page-locked staging memory, owned by one solver and reused by every call (allocated on
/// first use): one ring of [`RING_SLOTS`] slots' worth of bytes ([`ring`]) for both
/// directions. Rayon workers move pieces of a few hundred KiB between the ring and host
/// memory; the calling thread is the only one that calls the driver. Each copy continues
/// where the last one left the ring, so it does not wait for the last one's DMAs; a
/// matrix's diagonal and sub-diagonal blocks go up in one pass (`docs/perf-notes.md`,
/// entries 13, 37 and 38).
pub(crate) struct Staging {
    ctx: Arc<CudaContext>,
    slot_bytes: usize,
    workers: usize,
    /// Non-temporal stores into the ring ([`copy_streaming`]).
    streaming: bool,
    /// Non-temporal stores from the ring into the caller's memory.
    streaming_out: bool,
    /// The ring ([`ring`]), allocated on the first staged copy.
    ring: Option<PinnedBuffer<u8>>,
    /// Stream position in the ring where the next copy starts (each continues the last,
    /// so it need not wait for the last one's DMAs).
    ring_pos: usize,
    /// Every ring byte before this stream position is free.
    ring_freed: usize,
    /// `(event, end)` of the ring's DMAs not known to have finished, oldest first.
    in_flight: std::collections::VecDeque<(usize, usize)>,
    /// Fences of the ring's DMAs, reused once passed.
    events: Vec<CudaEvent>,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging").field("slot_bytes", &self.slot_bytes).field("ring_pos", &self.ring_pos).finish()
    }
}

impl Staging {
    pub fn new(ctx: &Arc<CudaContext>) -> Self {
        Self::with_chunk(ctx, SLOT_BYTES)
    }

    /// Pieces of at most `slot_bytes` in a ring of [`RING_SLOTS`] of them (tests force
    /// small ones to exercise the pipeline).
    pub fn with_chunk(ctx: &Arc<CudaContext>, slot_bytes: usize) -> Self {
        Staging {
            ctx: ctx.clone(),
            slot_bytes: slot_bytes.max(64),
            workers: STAGING_WORKERS,
            streaming: true,
            streaming_out: false,
            ring: None,
            ring_pos: 0,
            ring_freed: 0,
            in_flight: Default::default(),
            events: Vec::new(),
        }
    }

    /// The ring (allocated on first use), with the context current on this thread.
    fn ring_memory(&mut self) -> Result<ring::RingMemory> {
        let capacity = RING_SLOTS * self.slot_bytes.next_multiple_of(8);
        if self.ring.as_ref().is_none_or(|r| r.len() != capacity) {
            self.drain_ring();
            self.ring = None;
            self.ring = Some(PinnedBuffer::zeroed_in(&self.ctx, capacity)?);
        }
        self.ctx.bind_to_thread()?;
        let ring = self.ring.as_mut().expect("ring allocated");
        Ok(ring::RingMemory { base: ring.as_mut_ptr(), capacity })
    }

    /// Piece size for a copy of `total` bytes: about sixteen per worker, within
    /// [`MIN_PIECE_BYTES`] ..= [`MAX_RING_PIECE_BYTES`], a slot and a quarter of the ring.
    fn piece_bytes(&self, total: usize) -> usize {
        let threads = self.workers.min(rayon::current_num_threads()).max(1);
        let capacity = RING_SLOTS * self.slot_bytes.next_multiple_of(8);
        (total / (16 * threads)).clamp(MIN_PIECE_BYTES, MAX_RING_PIECE_BYTES).min(self.slot_bytes).min(capacity / 4)
    }

    /// Workers for a copy of `total` bytes in `pieces` pieces: none below
    /// [`POOL_MIN_BYTES`] (waking the pool costs more), else up to one per two pieces.
    fn workers_for(&self, total: usize, pieces: usize) -> usize {
        if total < POOL_MIN_BYTES { 0 } else { self.workers.min(rayon::current_num_threads()).min(pieces / 2) }
    }

    /// The ring's fences on `stream`: every event not behind an unfinished DMA is free.
    fn link<'a>(
        stream: &'a CudaStream,
        ring: ring::RingMemory,
        events: &'a mut Vec<CudaEvent>,
        in_flight: &std::collections::VecDeque<(usize, usize)>,
    ) -> CudaLink<'a> {
        let busy: std::collections::HashSet<usize> = in_flight.iter().map(|&(e, _)| e).collect();
        let free = (0..events.len()).filter(|e| !busy.contains(e)).collect();
        CudaLink { stream, ring, events, free }
    }

    /// Copies host `src` (layout `from`) to the device address `dst` (layout `to`, same
    /// `width` and `cols`), stream-ordered on `stream`. Returns once `src` has been read:
    /// the caller may change it right away; the device data are valid in stream order.
    ///
    /// # Safety
    /// `dst` must be valid for `to.span()` elements of `T` in stream order.
    pub unsafe fn upload<T: Scalar>(&mut self, stream: &CudaStream, src: &[T], from: Columns, dst: u64, to: Columns) -> Result<()> {
        // SAFETY: the caller's contract; the copy from page-locked memory is waited for.
        unsafe { self.upload_then(stream, src, from, dst, to, true) }
    }

    /// [`Self::upload`], or without `wait` a copy from page-locked memory is only
    /// enqueued: the DMA engine reads `src` while the host goes on to enqueue the launches
    /// that use it (a wait per copy costs a host round trip and leaves the GPU idle until
    /// the next launch arrives).
    ///
    /// # Safety
    /// As [`Self::upload`]; without `wait`, `src` also stays alive and unchanged until
    /// `stream` has been synchronized.
    pub unsafe fn upload_then<T: Scalar>(
        &mut self,
        stream: &CudaStream,
        src: &[T],
        from: Columns,
        dst: u64,
        to: Columns,
        wait: bool,
    ) -> Result<()> {
        // SAFETY: forwarded.
        unsafe { self.upload_all(stream, &[Upload::new(src, from, dst, to)], wait) }.map(|_| ())
    }

    /// [`Self::upload_then`] for several arrays in one pass: page-locked ones go straight
    /// to the DMA engine, the others through the ring together ([`ring`]), so the link
    /// stays busy from the first array to the last. Returns the first job (in order) with
    /// a non-finite value among those with `check_finite`, and the value's host index.
    ///
    /// # Safety
    /// As [`Self::upload_then`], for every upload.
    pub unsafe fn upload_all<T: Scalar>(
        &mut self,
        stream: &CudaStream,
        jobs: &[Upload<'_, T>],
        wait: bool,
    ) -> Result<Option<(usize, usize)>> {
        let (mut staged, mut staged_jobs) = (Vec::with_capacity(jobs.len()), Vec::with_capacity(jobs.len()));
        let mut direct = false;
        let mut to_scan = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            check_layouts(job.src.len(), job.from, job.to)?;
            if job.from.cols == 0 || job.from.width == 0 {
                continue;
            }
            count_transfer(job.from.cols * job.from.width * std::mem::size_of::<T>());
            if is_page_locked(job.src) {
                // SAFETY: the caller's contract; waited for below when asked.
                unsafe { copy_columns_htod(stream, job.src, job.from, job.dst, job.to)? };
                direct = true;
                if job.check_finite {
                    to_scan.push(i);
                }
            } else {
                staged.push(*job);
                staged_jobs.push(i);
            }
        }
        // No copy pass to scan in: a scan of their own, while their DMAs run. A value
        // found there only fails the call; the device copy is the solver's own buffer.
        // As many threads as staging workers (the pool's size stands for the cores: asking
        // the OS may read cgroup files, too slow for every small upload).
        let threads = self.workers.min(rayon::current_num_threads()).max(1);
        let mut non_finite =
            to_scan.iter().find_map(|&i| ring::first_non_finite_beside(jobs[i].src, jobs[i].from, threads).map(|at| (i, at)));
        if !staged.is_empty() {
            let found = self.upload_staged(stream, &staged)?.map(|(j, at)| (staged_jobs[j], at));
            non_finite = non_finite.into_iter().chain(found).min();
        }
        if direct && wait {
            // With `wait`, page-locked sources are free when we return.
            stream.synchronize()?;
        }
        Ok(non_finite)
    }

    /// Uploads pageable `jobs` through the ring: returns once every source value is in
    /// the ring (the caller may change the sources), with the first non-finite value the
    /// scanned jobs hold (job, host index); the copies finish in stream order.
    fn upload_staged<T: Scalar>(&mut self, stream: &CudaStream, jobs: &[Upload<'_, T>]) -> Result<Option<(usize, usize)>> {
        let size = std::mem::size_of::<T>();
        let total: usize = jobs.iter().map(|j| j.to.span() * size).sum();
        let memory = self.ring_memory()?;
        let layout: Vec<_> = jobs.iter().map(|j| (j.to, j.dst)).collect();
        let pieces = ring::plan_ring(&layout, size, self.piece_bytes(total), memory.capacity, self.ring_pos);
        let workers = self.workers_for(total, pieces.len());
        // SAFETY: the ring is page-aligned and `capacity` bytes long; the copies that may
        // still read it are those of `in_flight`, handed to the dispatcher; `pieces` were
        // planned for it from where the last upload ended.
        let pipeline = unsafe { ring::UploadPipeline::new(jobs, &pieces, memory, self.streaming, self.ring_freed) };
        let mut link = Self::link(stream, memory, &mut self.events, &self.in_flight);
        let in_flight = &mut self.in_flight;
        let sent = with_workers(workers, || pipeline.work(), || pipeline.dispatch(&mut link, memory.capacity / 8, in_flight));
        match sent {
            Ok(freed) => {
                self.ring_freed = freed;
                self.ring_pos = pieces.last().map_or(self.ring_pos, |p| p.end());
                // The scope has joined every worker: all scans are done.
                Ok(pipeline.first_non_finite())
            }
            Err(e) => {
                // Start over from an idle ring.
                self.drain_ring();
                Err(e)
            }
        }
    }

    /// Waits for every DMA that may use the ring and starts the next copy at its
    /// beginning.
    fn drain_ring(&mut self) {
        for (event, _) in self.in_flight.drain(..) {
            let _ = self.events[event].synchronize();
        }
        (self.ring_pos, self.ring_freed) = (0, 0);
    }

    /// Copies the device data at `src` (layout `from`) into host `out` (layout `to`) and
    /// waits for them: pageable `out` through the ring (the DMA of later pieces overlaps
    /// the workers' copies of earlier ones out of it), page-locked dense `out` directly.
    ///
    /// # Safety
    /// `src` must be valid for `from.span()` elements of `T`, and its producers enqueued on
    /// `stream` (or finished).
    pub unsafe fn download<T: Scalar>(&mut self, stream: &CudaStream, src: u64, from: Columns, out: &mut [T], to: Columns) -> Result<()> {
        check_layouts(out.len(), to, from)?;
        if from.cols == 0 || from.width == 0 {
            return Ok(());
        }
        let size = std::mem::size_of::<T>();
        count_transfer(from.cols * from.width * size);
        if is_page_locked(out) && to.is_dense() && from.is_dense() {
            // SAFETY: `out` has room for the span (checked); we wait before returning.
            unsafe {
                sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr() as *mut _, src, from.span() * size, stream.cu_stream()).result()?;
            }
            stream.synchronize()?;
            return Ok(());
        }
        let total = from.span() * size;
        let memory = self.ring_memory()?;
        let pieces = ring::plan_ring(&[(from, src)], size, self.piece_bytes(total), memory.capacity, self.ring_pos);
        let workers = self.workers_for(total, pieces.len());
        // SAFETY: the ring as for uploads (page-aligned, `capacity` bytes, the DMAs that may
        // still read it behind `in_flight`); the device range is the caller's contract.
        let pipeline = unsafe { ring::DownloadPipeline::new(&pieces, memory, from, out, to, self.streaming_out) };
        let mut link = Self::link(stream, memory, &mut self.events, &self.in_flight);
        let (in_flight, freed) = (&mut self.in_flight, self.ring_freed);
        // One DMA per piece: the workers start on the first piece after ~5 µs of link time.
        let max_batch = self.slot_bytes;
        let done = with_workers(workers, || pipeline.work(), || pipeline.dispatch(&mut link, max_batch, in_flight, freed));
        match done {
            Ok(freed) => {
                self.ring_freed = freed;
                self.ring_pos = pieces.last().map_or(self.ring_pos, |p| p.end());
                Ok(())
            }
            Err(e) => {
                // DMAs into the ring may still be running: let them end, then start over
                // from an idle ring.
                let _ = stream.synchronize();
                self.drain_ring();
                Err(e)
            }
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // The ring may still be the source of an upload's DMA: let those finish before
        // the pinned memory is freed.
        self.drain_ring();
    }
}

/// The ring's [`ring::Link`] on a CUDA stream: copies with `cuMemcpyHtoDAsync` and
/// `cuMemcpyDtoHAsync`, fences are events (reused once passed).
struct CudaLink<'a> {
    stream: &'a CudaStream,
    ring: ring::RingMemory,
    events: &'a mut Vec<CudaEvent>,
    /// Events not behind an unfinished fence.
    free: Vec<usize>,
}

impl ring::Link for CudaLink<'_> {
    fn send(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()> {
        debug_assert!(at + bytes <= self.ring.capacity);
        // SAFETY: the ring bytes are page-locked and stay unchanged until the fence
        // recorded after this copy has passed (the pipeline's room rule); the device range
        // lies in an upload's destination (plan_ring, the caller's contract).
        unsafe { sys::cuMemcpyHtoDAsync_v2(dev, self.ring.base.add(at) as *const _, bytes, self.stream.cu_stream()).result()? };
        Ok(())
    }

    fn fetch(&mut self, at: usize, dev: u64, bytes: usize) -> Result<()> {
        debug_assert!(at + bytes <= self.ring.capacity);
        // SAFETY: nobody reads or writes these ring bytes until the fence recorded after
        // this copy has passed (the download pipeline's arrival rule); the device range
        // lies in the download's source (plan_ring, the caller's contract).
        unsafe { sys::cuMemcpyDtoHAsync_v2(self.ring.base.add(at) as *mut _, dev, bytes, self.stream.cu_stream()).result()? };
        Ok(())
    }

    fn fence(&mut self) -> Result<usize> {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.events.push(self.stream.context().new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?);
                self.events.len() - 1
            }
        };
        self.events[i].record(self.stream)?;
        Ok(i)
    }

    fn passed(&mut self, fence: usize) -> Result<bool> {
        let done = self.events[fence].try_is_complete()?;
        if done {
            self.free.push(fence);
        }
        Ok(done)
    }
}

fn check_layouts(host_len: usize, host: Columns, device: Columns) -> Result<()> {
    if host.width != device.width || host.cols != device.cols || host.ld < host.width || device.ld < device.width {
        return Err(Error::Shape(format!("copy layouts differ: host {host:?}, device {device:?}")));
    }
    if host_len < host.span() {
        return Err(Error::Shape(format!("host slice of {host_len} elements is shorter than its layout {host:?}")));
    }
    Ok(())
}

/// Copies `cols` columns from `src` (layout `from`) to `dst` (layout `to`), zeroing the
/// destination padding rows, on the calling thread (a staging worker); dense layouts with
/// non-temporal stores when `streaming` (copies into slots that the DMA engine reads next).
fn pack_columns<T: Scalar>(src: &[T], from: Columns, dst: &mut [T], to: Columns, cols: usize, streaming: bool) {
    if from.ld == from.width && to.ld == to.width {
        let len = cols * to.width;
        copy_values(&src[..len], &mut dst[..len], streaming);
        return;
    }
    // The last column of the destination may end at its width (no padding after it).
    let end = (cols * to.ld).min(dst.len());
    for (c, col) in dst[..end].chunks_mut(to.ld).enumerate() {
        col[..to.width].copy_from_slice(&src[c * from.ld..c * from.ld + from.width]);
        col[to.width..].fill(T::ZERO);
    }
}

/// `dst = src` on the calling thread, with non-temporal stores when `streaming`.
fn copy_values<T: Copy + Send + Sync>(src: &[T], dst: &mut [T], streaming: bool) {
    if streaming {
        copy_streaming_here(src, dst);
    } else {
        dst.copy_from_slice(src);
    }
}

/// `dst = src` (equal lengths) on the calling thread with non-temporal stores on x86-64
/// ([`copy_streaming`] without the thread split), elsewhere a plain copy.
pub(crate) fn copy_streaming_here<T: Copy>(src: &[T], dst: &mut [T]) {
    assert_eq!(src.len(), dst.len(), "copy_streaming_here: lengths differ");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: two valid, disjoint slices of equal byte length (`dst` is a unique borrow).
    unsafe {
        stream_bytes(src.as_ptr() as *const u8, dst.as_mut_ptr() as *mut u8, std::mem::size_of_val(src))
    };
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Runs `dispatch` on this thread with `workers` rayon tasks running `work` beside it:
/// the pipelines' shape (workers move data, the calling thread talks to the driver).
pub(crate) fn with_workers<R>(workers: usize, work: impl Fn() + Sync, dispatch: impl FnOnce() -> R) -> R {
    rayon::in_place_scope(|s| {
        for _ in 0..workers {
            s.spawn(|_| work());
        }
        dispatch()
    })
}

/// Direct (unstaged) column copy from page-locked host memory to the device.
///
/// # Safety
/// `dst` valid for `to.span()` elements; `src` page-locked and unchanged until the copy
/// completes.
unsafe fn copy_columns_htod<T>(stream: &CudaStream, src: &[T], from: Columns, dst: u64, to: Columns) -> Result<()> {
    // SAFETY: forwarded.
    unsafe {
        super::memory::copy_2d(
            stream,
            super::memory::Loc::Host(src),
            from.ld,
            super::memory::Loc::Device(dst),
            to.ld,
            from.width,
            from.cols,
        )
    }
}

/// Host-path rates of this machine in GB/s, each the best of a few runs of `bytes`:
/// `(what, GB/s)` for the CPU copies the staging does, the link with page-locked memory,
/// the driver's own pageable copies and the staged copies of the solvers. What
/// `blocktri info --transfers` prints.
///
/// ```no_run
/// let gpu = blocktri::cuda::Gpu::shared().unwrap();
/// for (what, gbs) in blocktri::cuda::measure_transfers(&gpu, 64 << 20).unwrap() {
///     println!("{what}: {gbs:.1} GB/s");
/// }
/// ```
pub fn measure_transfers(gpu: &Arc<Gpu>, bytes: usize) -> Result<Vec<(String, f64)>> {
    let len = (bytes / 8).max(1);
    let stream = gpu.new_stream()?;
    let src: Vec<f64> = (0..len).map(|i| i as f64).collect();
    let mut dst = vec![0.0f64; len];
    let mut pinned = PinnedBuffer::<f64>::zeroed(gpu, len)?;
    let dev = super::DeviceBuffer::<f64>::poisoned(&stream, len)?;
    let addr = dev.ptr().addr();
    let mut staging = Staging::new(gpu.context());
    let best = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        f()?;
        let mut t = f64::INFINITY;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            f()?;
            t = t.min(start.elapsed().as_secs_f64());
        }
        Ok((len * 8) as f64 / t / 1e9)
    };
    let flat = Columns::flat(len);
    let mut out = Vec::new();
    out.push((
        "CPU copy, pageable to pageable (threads)".to_string(),
        best(&mut || {
            parallel_copy(&src, &mut dst);
            Ok(())
        })?,
    ));
    out.push((
        "CPU copy, pageable to pinned (threads)".to_string(),
        best(&mut || {
            parallel_copy(&src, &mut pinned);
            Ok(())
        })?,
    ));
    let h2d = |host: &[f64]| -> Result<()> {
        // SAFETY: `dev` holds `len` values; synchronized before `host` can change.
        unsafe { result::memcpy_htod_async(addr, host, stream.cu_stream())? };
        Ok(stream.synchronize()?)
    };
    out.push(("link H2D, pinned".to_string(), best(&mut || h2d(&pinned))?));
    out.push(("driver H2D, pageable".to_string(), best(&mut || h2d(&src))?));
    let d2h = |host: &mut [f64]| -> Result<()> {
        // SAFETY: as above.
        unsafe { result::memcpy_dtoh_async(host, addr, stream.cu_stream())? };
        Ok(stream.synchronize()?)
    };
    out.push(("link D2H, pinned".to_string(), best(&mut || d2h(&mut pinned))?));
    out.push(("driver D2H, pageable".to_string(), best(&mut || d2h(&mut dst))?));
    let mut back = vec![0.0f64; len];
    out.push((
        "CPU copy, pinned to pageable (threads)".to_string(),
        best(&mut || {
            parallel_copy(&pinned, &mut back);
            Ok(())
        })?,
    ));
    out.push((
        "CPU copy, pinned to pageable (one thread)".to_string(),
        best(&mut || {
            back.copy_from_slice(&pinned);
            Ok(())
        })?,
    ));
    let piece = ((8 << 20) / 8).min(len);
    out.push((
        "link H2D, pinned, in 8 MiB copies".to_string(),
        best(&mut || {
            for (i, c) in pinned.chunks(piece).enumerate() {
                // SAFETY: inside `dev`; synchronized below.
                unsafe { result::memcpy_htod_async(addr + (i * piece * 8) as u64, c, stream.cu_stream())? };
            }
            Ok(stream.synchronize()?)
        })?,
    ));
    out.push((
        "link H2D, pinned, 8 MiB copies, event each".to_string(),
        best(&mut || {
            let mut evs = Vec::new();
            for (i, c) in pinned.chunks(piece).enumerate() {
                // SAFETY: as above.
                unsafe { result::memcpy_htod_async(addr + (i * piece * 8) as u64, c, stream.cu_stream())? };
                evs.push(stream.record_event(None)?);
            }
            for e in evs {
                e.synchronize()?;
            }
            Ok(())
        })?,
    ));
    out.push((
        "CPU copy, pageable to pinned, streaming stores".to_string(),
        best(&mut || {
            copy_streaming(&src, &mut pinned, 8);
            Ok(())
        })?,
    ));
    // Registering the caller's pageable memory instead of copying it.
    let mut reg = vec![1.0f64; len];
    let reg_bytes = std::mem::size_of_val(&reg[..]);
    out.push((
        "register + unregister pageable memory".to_string(),
        best(&mut || {
            // SAFETY: our own allocation, unregistered right after.
            unsafe {
                sys::cuMemHostRegister_v2(reg.as_mut_ptr() as *mut _, reg_bytes, sys::CU_MEMHOSTREGISTER_PORTABLE).result()?;
                sys::cuMemHostUnregister(reg.as_mut_ptr() as *mut _).result()?;
            }
            Ok(())
        })?,
    ));
    // Slot size (the ring holds 16), workers, streaming stores into the ring and out of
    // it: the solvers' setting is (2 MiB, 16, yes, no).
    for (slot, workers, streaming, streaming_out) in [
        (2usize << 20, 16usize, false, false),
        (1 << 20, 16, true, false),
        (8 << 20, 16, true, false),
        (2 << 20, 8, true, false),
        (2 << 20, 4, true, false),
        (2 << 20, 16, true, true),
    ] {
        let mut other = Staging::with_chunk(gpu.context(), slot);
        other.workers = workers;
        other.streaming = streaming;
        other.streaming_out = streaming_out;
        let what = format!(
            "{} MiB slots, {workers} workers{}{}",
            slot >> 20,
            if streaming { ", streaming" } else { "" },
            if streaming_out { ", streaming out" } else { "" }
        );
        out.push((
            format!("staged H2D, {what}"),
            best(&mut || {
                // SAFETY: `dev` holds the flat layout.
                unsafe { other.upload(&stream, &src, flat, addr, flat)? };
                Ok(stream.synchronize()?)
            })?,
        ));
        out.push((
            format!("staged D2H, {what}"),
            // SAFETY: as above.
            best(&mut || unsafe { other.download(&stream, addr, flat, &mut dst, flat) })?,
        ));
    }
    // First touch of fresh host memory (what `invert` into a new `Vec` pays): the kernel
    // zeroes every page on its first write; huge pages as `output_vec` asks for them.
    for (threads, huge) in [(rayon::current_num_threads(), true), (rayon::current_num_threads(), false), (1, true)] {
        let mut t = f64::INFINITY;
        for _ in 0..3 {
            let mut fresh = if huge { output_vec::<f64>(len)? } else { Vec::with_capacity(len) };
            let base = fresh.as_mut_ptr() as usize;
            let start = std::time::Instant::now();
            let page = 4096 / 8;
            let touch = |range: std::ops::Range<usize>| {
                for i in range.step_by(page) {
                    // SAFETY: inside the allocation's capacity; the value is never read.
                    unsafe { (base as *mut f64).add(i).write(0.0) };
                }
            };
            if threads == 1 {
                touch(0..len);
            } else {
                let part = len.div_ceil(threads * 8).next_multiple_of(page);
                (0..len.div_ceil(part)).into_par_iter().for_each(|p| touch(p * part..((p + 1) * part).min(len)));
            }
            t = t.min(start.elapsed().as_secs_f64());
            drop(fresh);
        }
        out.push((
            format!("first touch of new memory, {threads} threads, {} pages", if huge { "huge" } else { "4 KiB" }),
            (len * 8) as f64 / t / 1e9,
        ));
    }
    // A caller's data cloned (`BlockVec::clone`: huge pages, every thread) against a plain
    // `to_vec` (4 KiB faults on one thread), which the out-of-core path's output copy paid.
    let v = crate::matrix::BlockVec::<f64>::from_vec(crate::matrix::Shape::new(1, len, 1)?, 1, vec![1.0; len])?;
    out.push((
        "clone of a right-hand side (BlockVec::clone)".to_string(),
        best(&mut || {
            std::hint::black_box(v.clone());
            Ok(())
        })?,
    ));
    out.push((
        "copy into a new Vec (to_vec, one thread)".to_string(),
        best(&mut || {
            std::hint::black_box(v.as_slice().to_vec());
            Ok(())
        })?,
    ));
    drop(v);
    out.push((
        "staged H2D (solver uploads)".to_string(),
        best(&mut || {
            // SAFETY: `dev` holds the flat layout.
            unsafe { staging.upload(&stream, &src, flat, addr, flat)? };
            Ok(stream.synchronize()?)
        })?,
    ));
    out.push((
        "staged D2H (solver downloads)".to_string(),
        // SAFETY: as above.
        best(&mut || unsafe { staging.download(&stream, addr, flat, &mut dst, flat) })?,
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_columns_converts_pitch_and_zeroes_padding() {
        let from = Columns { width: 3, cols: 4, ld: 5 };
        let to = Columns { width: 3, cols: 4, ld: 4 };
        let src: Vec<f64> = (0..20).map(|v| v as f64).collect();
        let mut dst = vec![f64::NAN; 16];
        pack_columns(&src, from, &mut dst, to, 4, false);
        for c in 0..4 {
            for r in 0..3 {
                assert_eq!(dst[c * 4 + r], (c * 5 + r) as f64);
            }
            assert_eq!(dst[c * 4 + 3], 0.0);
        }
    }

    #[test]
    fn pieces_cover_every_value_once_within_a_slot() {
        for (width, cols, ld, max) in [(3usize, 10usize, 4usize, 9usize), (8, 1, 8, 8), (100, 3, 128, 50), (5, 7, 5, 1000), (1, 1, 1, 1)] {
            let pieces = plan_pieces(width, cols, ld, max);
            let mut seen = vec![0u8; cols * ld];
            for p in &pieces {
                let (at, staged) = match *p {
                    Piece::Columns { first, count } => {
                        assert!(count * ld <= max, "{p:?} exceeds the slot");
                        for c in first..first + count {
                            (0..width).for_each(|r| seen[c * ld + r] += 1);
                        }
                        (first * ld, count * ld)
                    }
                    Piece::Part { col, start, len } => {
                        assert!(ld > max && len <= max && start + len <= width, "{p:?}");
                        (start..start + len).for_each(|r| seen[col * ld + r] += 1);
                        (col * ld + start, len)
                    }
                };
                assert_eq!(p.offset(ld), at);
                assert!(staged <= max.max(ld.min(max)));
            }
            for c in 0..cols {
                assert!((0..width).all(|r| seen[c * ld + r] == 1), "{width} {cols} {ld} {max}");
                assert!((width..ld).all(|r| seen[c * ld + r] == 0));
            }
            // In order of offset: each worker's run is a contiguous stretch of memory.
            assert!(pieces.windows(2).all(|w| w[0].offset(ld) < w[1].offset(ld)));
        }
    }

    /// `(width, cols, host ld, device ld)` of the layouts the staged copies meet: dense,
    /// padded on either side, columns longer than a slot, a single flat column.
    pub(super) const STAGING_LAYOUTS: [(usize, usize, usize, usize); 6] =
        [(8, 40, 11, 8), (65, 30, 65, 72), (16, 64, 16, 16), (130, 9, 130, 136), (5000, 1, 5000, 5000), (3, 1000, 5, 4)];

    #[test]
    fn layouts_are_checked() {
        let a = Columns { width: 3, cols: 4, ld: 5 };
        assert!(check_layouts(18, a, Columns { width: 3, cols: 4, ld: 3 }).is_ok());
        assert!(check_layouts(17, a, a).is_err());
        assert!(check_layouts(18, a, Columns { width: 2, cols: 4, ld: 3 }).is_err());
        assert_eq!(Columns::flat(7).span(), 7);
    }

    #[test]
    fn streaming_copies_handle_every_alignment_and_length() {
        let src: Vec<u8> = (0..300_000u32).map(|v| (v * 7 % 251) as u8).collect();
        for (off, len) in [(0usize, 0usize), (1, 15), (3, 17), (5, 70_000), (0, 131_072), (9, 299_000)] {
            let mut dst = vec![0u8; len + 16];
            copy_streaming(&src[off..off + len], &mut dst[1..1 + len], 3);
            assert_eq!(&dst[1..1 + len], &src[off..off + len], "off {off} len {len}");
            assert_eq!(dst[0], 0);
        }
        let f: Vec<f64> = (0..100_001).map(|v| v as f64).collect();
        let mut g = vec![0.0; f.len()];
        copy_streaming(&f, &mut g, 8);
        assert_eq!(f, g);
    }

    #[test]
    fn parallel_copy_copies_everything() {
        let src: Vec<u32> = (0..3_000_000).collect();
        let mut dst = vec![0u32; src.len()];
        parallel_copy(&src, &mut dst);
        assert_eq!(src, dst);
    }
}
