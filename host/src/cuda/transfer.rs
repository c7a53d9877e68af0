//! Host <-> device transfers at pinned-memory speed.
//!
//! Copies from ordinary (pageable) host memory are staged by the driver through a small
//! bounce buffer and run at a fraction of the link (H100: 7 GB/s in, 13 GB/s out against
//! 52 GB/s pinned). [`Staging`] does that staging itself, faster: a ring of reusable
//! page-locked chunks, filled by several CPU threads at once while the DMA engine moves
//! the previous chunk, with the pitch conversion between host and device layouts done in
//! the same pass. Data that are already page-locked ([`PinnedBuffer`], or memory the
//! caller registered with CUDA) skip the staging and go straight to the DMA engine.

use super::context::Gpu;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, result, sys};
use rayon::prelude::*;
use std::ptr::NonNull;
use std::sync::Arc;

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
    #[cfg(target_os = "linux")]
    if bytes >= 4 << 20 {
        const HUGE: usize = 2 << 20;
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: advice on whole huge pages inside our own allocation; failure is harmless.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    Ok(v)
}

/// Copies `len` values from `src` to the host address `dst` with several threads.
///
/// # Safety
/// `dst` must be valid for `len` writes of `T` and not overlap `src`.
pub(crate) unsafe fn parallel_copy_to_raw<T: Copy + Send + Sync>(src: &[T], dst: *mut T) {
    const PIECE_BYTES: usize = 256 << 10;
    let piece = (PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    let base = dst as usize;
    src.par_chunks(piece).enumerate().for_each(|(i, s)| {
        // SAFETY: piece `i` of the destination range, disjoint from the others.
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), (base as *mut T).add(i * piece), s.len()) }
    });
}

/// Copies `src` into `dst` (equal lengths) with non-temporal stores on x86-64, in
/// `threads` parts: the staged data then sit in DRAM, not dirty in the CPU caches, when
/// the DMA engine reads them (reading cache-resident lines through snoops is several
/// times slower than reading memory). Elsewhere a plain threaded copy.
pub(crate) fn copy_streaming<T: Copy + Send + Sync>(src: &[T], dst: &mut [T], threads: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(src);
        assert_eq!(bytes, std::mem::size_of_val(dst), "copy_streaming: lengths differ");
        let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
        let part = bytes.div_ceil(threads.max(1)).next_multiple_of(64).max(1 << 16);
        (0..bytes.div_ceil(part)).into_par_iter().for_each(|p| {
            let (lo, hi) = (p * part, ((p + 1) * part).min(bytes));
            // SAFETY: disjoint byte ranges of the two slices (equal lengths, checked).
            unsafe { stream_bytes((s + lo) as *const u8, (d + lo) as *mut u8, hi - lo) };
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    copy_with_threads(src, dst, threads);
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

/// Default staging chunk (bytes) and number of chunks in the ring: large enough that the
/// per-copy overhead (~10 us) is small against a chunk's 160 us on the link, small enough
/// that the first chunk's CPU copy (not overlapped) stays short.
pub(crate) const CHUNK_BYTES: usize = 8 << 20;
const SLOTS: usize = 3;
/// Threads of the staging copies (see [`copy_with_threads`]).
const STAGING_THREADS: usize = 8;

/// A ring of page-locked chunks for staged copies, owned by one solver and reused by
/// every call. Allocated on first use.
pub(crate) struct Staging {
    ctx: Arc<CudaContext>,
    chunk_bytes: usize,
    /// Threads of the CPU copies into and out of the slots.
    threads: usize,
    /// Non-temporal stores into the slots ([`copy_streaming`]).
    streaming: bool,
    slots: Vec<(PinnedBuffer<u8>, Option<CudaEvent>)>,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging").field("chunk_bytes", &self.chunk_bytes).field("slots", &self.slots.len()).finish()
    }
}

impl Staging {
    pub fn new(ctx: &Arc<CudaContext>) -> Self {
        Self::with_chunk(ctx, CHUNK_BYTES)
    }

    /// A ring of `chunk_bytes` chunks (tests force small chunks to exercise the overlap).
    pub fn with_chunk(ctx: &Arc<CudaContext>, chunk_bytes: usize) -> Self {
        Staging { ctx: ctx.clone(), chunk_bytes: chunk_bytes.max(64), threads: STAGING_THREADS, streaming: true, slots: Vec::new() }
    }

    fn ensure_slots(&mut self) -> Result<()> {
        while self.slots.len() < SLOTS {
            self.slots.push((PinnedBuffer::zeroed_in(&self.ctx, self.chunk_bytes)?, None));
        }
        Ok(())
    }

    /// Waits until slot `i`'s previous copy has finished, so that it may be reused.
    fn free_slot(&mut self, i: usize) -> Result<()> {
        if let Some(ev) = self.slots[i].1.take() {
            ev.synchronize()?;
        }
        Ok(())
    }

    /// Copies host `src` (layout `from`) to the device address `dst` (layout `to`, same
    /// `width` and `cols`), stream-ordered on `stream`. Returns once `src` has been read:
    /// the caller may change it right away; the device data are valid in stream order.
    ///
    /// # Safety
    /// `dst` must be valid for `to.span()` elements of `T` in stream order.
    pub unsafe fn upload<T: Scalar>(&mut self, stream: &CudaStream, src: &[T], from: Columns, dst: u64, to: Columns) -> Result<()> {
        check_layouts(src.len(), from, to)?;
        if from.cols == 0 || from.width == 0 {
            return Ok(());
        }
        if is_page_locked(src) {
            // Straight to the DMA engine; wait so that `src` is free when we return.
            unsafe { copy_columns_htod(stream, src, from, dst, to)? };
            stream.synchronize()?;
            return Ok(());
        }
        self.ensure_slots()?;
        let size = std::mem::size_of::<T>();
        let per_chunk = (self.chunk_bytes / (to.ld * size)).max(1);
        if per_chunk * to.ld * size > self.chunk_bytes {
            // One column is larger than a chunk: stage a flat copy piece by piece.
            return unsafe { self.upload_wide(stream, src, from, dst, to) };
        }
        let mut c0 = 0;
        let mut slot = 0;
        while c0 < from.cols {
            let cols = per_chunk.min(from.cols - c0);
            self.free_slot(slot)?;
            let staged = &mut self.slots[slot].0;
            // SAFETY: the slot holds chunk_bytes >= cols * to.ld * size bytes, aligned for T
            // (page-aligned allocation).
            let out = unsafe { std::slice::from_raw_parts_mut(staged.as_mut_ptr() as *mut T, cols * to.ld) };
            pack_columns(&src[c0 * from.ld..], from, out, to, cols, self.threads, self.streaming);
            let bytes = ((cols - 1) * to.ld + to.width) * size;
            // SAFETY: destination inside the caller's range; the slot stays untouched until
            // its event (recorded right after) completes.
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(dst + (c0 * to.ld * size) as u64, out.as_ptr() as *const _, bytes, stream.cu_stream())
                    .result()?;
            }
            self.slots[slot].1 = Some(stream.record_event(None)?);
            c0 += cols;
            slot = (slot + 1) % SLOTS;
        }
        Ok(())
    }

    /// `upload` of columns longer than a chunk: each column in chunk-sized pieces.
    unsafe fn upload_wide<T: Scalar>(&mut self, stream: &CudaStream, src: &[T], from: Columns, dst: u64, to: Columns) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let piece = (self.chunk_bytes / size).max(1);
        let mut slot = 0;
        for c in 0..from.cols {
            let mut e0 = 0;
            while e0 < from.width {
                let len = piece.min(from.width - e0);
                self.free_slot(slot)?;
                let staged = &mut self.slots[slot].0;
                // SAFETY: len * size <= chunk_bytes.
                let out = unsafe { std::slice::from_raw_parts_mut(staged.as_mut_ptr() as *mut T, len) };
                copy_with_threads(&src[c * from.ld + e0..c * from.ld + e0 + len], out, self.threads);
                // SAFETY: as in `upload`.
                unsafe {
                    sys::cuMemcpyHtoDAsync_v2(
                        dst + ((c * to.ld + e0) * size) as u64,
                        out.as_ptr() as *const _,
                        len * size,
                        stream.cu_stream(),
                    )
                    .result()?;
                }
                self.slots[slot].1 = Some(stream.record_event(None)?);
                e0 += len;
                slot = (slot + 1) % SLOTS;
            }
        }
        Ok(())
    }

    /// Copies the device data at `src` (layout `from`) into host `out` (layout `to`) and
    /// waits for them. Chunks move through the ring: while the CPU copies chunk `i` out of
    /// its slot, the DMA engine fills the next ones.
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
        if is_page_locked(out) && to.is_dense() && from.is_dense() {
            // SAFETY: `out` has room for the span (checked); we wait before returning.
            unsafe {
                sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr() as *mut _, src, from.span() * size, stream.cu_stream()).result()?;
            }
            stream.synchronize()?;
            return Ok(());
        }
        self.ensure_slots()?;
        // Chunks as (first column, columns) or, for columns longer than a chunk, pieces of
        // a flat copy (dense layouts only; else one column at a time).
        let per_chunk = self.chunk_bytes / (from.ld * size);
        let pieces: Vec<(usize, usize)> = if per_chunk >= 1 {
            (0..from.cols).step_by(per_chunk).map(|c0| (c0, per_chunk.min(from.cols - c0))).collect()
        } else {
            Vec::new()
        };
        if pieces.is_empty() {
            // Wide columns: one column at a time through the ring, unpipelined (rare: a
            // single column of more than a chunk).
            for c in 0..from.cols {
                let piece = (self.chunk_bytes / size).max(1);
                let mut e0 = 0;
                while e0 < from.width {
                    let len = piece.min(from.width - e0);
                    let staged = &mut self.slots[0].0;
                    // SAFETY: len * size <= chunk_bytes; synchronized before reading.
                    let buf = unsafe { std::slice::from_raw_parts_mut(staged.as_mut_ptr() as *mut T, len) };
                    unsafe {
                        sys::cuMemcpyDtoHAsync_v2(
                            buf.as_mut_ptr() as *mut _,
                            src + ((c * from.ld + e0) * size) as u64,
                            len * size,
                            stream.cu_stream(),
                        )
                        .result()?;
                    }
                    stream.synchronize()?;
                    copy_with_threads(buf, &mut out[c * to.ld + e0..c * to.ld + e0 + len], self.threads);
                    e0 += len;
                }
            }
            return Ok(());
        }
        let enqueue = |this: &mut Self, slot: usize, (c0, cols): (usize, usize)| -> Result<()> {
            let staged = &mut this.slots[slot].0;
            let bytes = ((cols - 1) * from.ld + from.width) * size;
            // SAFETY: bytes <= chunk_bytes; the slot is not read until its event completes.
            unsafe {
                sys::cuMemcpyDtoHAsync_v2(staged.as_mut_ptr() as *mut _, src + (c0 * from.ld * size) as u64, bytes, stream.cu_stream())
                    .result()?;
            }
            this.slots[slot].1 = Some(stream.record_event(None)?);
            Ok(())
        };
        for (i, &p) in pieces.iter().take(SLOTS).enumerate() {
            self.free_slot(i)?;
            enqueue(self, i, p)?;
        }
        for (i, &(c0, cols)) in pieces.iter().enumerate() {
            let slot = i % SLOTS;
            self.free_slot(slot)?;
            {
                let staged = &self.slots[slot].0;
                // SAFETY: the slot's copy has completed (event synchronized).
                let buf = unsafe { std::slice::from_raw_parts(staged.as_ptr() as *const T, cols * from.ld) };
                pack_columns(buf, from, &mut out[c0 * to.ld..], to, cols, self.threads, false);
            }
            if let Some(&next) = pieces.get(i + SLOTS) {
                enqueue(self, slot, next)?;
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // A slot may still be the source or target of a copy: let those finish before the
        // pinned memory is freed.
        for (_, ev) in &mut self.slots {
            if let Some(ev) = ev.take() {
                let _ = ev.synchronize();
            }
        }
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
/// destination padding rows, on `threads` threads; dense layouts with non-temporal stores
/// when `streaming` (copies into staging slots that the DMA engine reads next).
#[allow(clippy::too_many_arguments)] // the two layouts, the count and how to copy
fn pack_columns<T: Scalar>(src: &[T], from: Columns, dst: &mut [T], to: Columns, cols: usize, threads: usize, streaming: bool) {
    if from.ld == from.width && to.ld == to.width {
        let len = cols * to.width;
        if streaming {
            copy_streaming(&src[..len], &mut dst[..len], threads);
        } else {
            copy_with_threads(&src[..len], &mut dst[..len], threads);
        }
        return;
    }
    let per_task = (cols.div_ceil(threads.max(1))).max(1);
    // The last column of the destination may end at its width (no padding after it).
    let end = (cols * to.ld).min(dst.len());
    dst[..end].par_chunks_mut(per_task * to.ld).enumerate().for_each(|(t, d)| {
        for (j, col) in d.chunks_mut(to.ld).enumerate() {
            let c = t * per_task + j;
            let s = &src[c * from.ld..c * from.ld + from.width];
            col[..to.width].copy_from_slice(s);
            col[to.width..].fill(T::ZERO);
            debug_assert!(col.len() >= to.width);
        }
    });
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
    let piece = (CHUNK_BYTES / 8).min(len);
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
    for (chunk, threads, streaming) in
        [(8usize << 20, 8usize, false), (8 << 20, 8, true), (8 << 20, 16, true), (2 << 20, 8, true), (32 << 20, 8, true)]
    {
        let mut other = Staging::with_chunk(gpu.context(), chunk);
        other.threads = threads;
        other.streaming = streaming;
        out.push((
            format!("staged H2D, {} MiB chunks, {threads} threads{}", chunk >> 20, if streaming { ", streaming" } else { "" }),
            best(&mut || {
                // SAFETY: `dev` holds the flat layout.
                unsafe { other.upload(&stream, &src, flat, addr, flat)? };
                Ok(stream.synchronize()?)
            })?,
        ));
        out.push((
            format!("staged D2H, {} MiB chunks, {threads} threads", chunk >> 20),
            // SAFETY: as above.
            best(&mut || unsafe { other.download(&stream, addr, flat, &mut dst, flat) })?,
        ));
    }
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
        pack_columns(&src, from, &mut dst, to, 4, 2, false);
        for c in 0..4 {
            for r in 0..3 {
                assert_eq!(dst[c * 4 + r], (c * 5 + r) as f64);
            }
            assert_eq!(dst[c * 4 + 3], 0.0);
        }
    }

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
