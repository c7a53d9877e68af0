//! Device memory owned by Rust values, and the copies the solvers need.

use super::launch::DevicePtr;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr as _, DeviceRepr, DriverError, result, sys};
use std::sync::Arc;

/// An owned device array of `T`, freed (stream-ordered) on drop.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    slice: CudaSlice<T>,
    stream: Arc<CudaStream>,
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// `len` elements filled with `0xff` bytes (NaN for floats): never-written results show
    /// up as NaN instead of stale values.
    ///
    /// Fails with [`Error::OutOfMemory`] when the device has no room for them, also after
    /// the pending stream-ordered frees of the device have run.
    pub fn poisoned(stream: &Arc<CudaStream>, len: usize) -> Result<Self> {
        let elems = len.max(1);
        // SAFETY: the memory is initialized right below, before any read.
        let alloc = || unsafe { stream.alloc::<T>(elems) };
        let slice = match alloc() {
            Err(e) if is_out_of_memory(e) => {
                // Buffers freed on any stream return to the driver when the device gets there.
                stream.context().synchronize()?;
                alloc()
            }
            first => first,
        };
        let bytes = elems.saturating_mul(std::mem::size_of::<T>());
        let slice = slice.map_err(|e| allocation_error(e, bytes, || stream.context().mem_get_info().map_or(0, |(free, _)| free)))?;
        let buf = DeviceBuffer { slice, stream: stream.clone() };
        buf.fill_bytes(0xff)?;
        Ok(buf)
    }

    /// A copy of `data` on the device.
    pub fn from_host(stream: &Arc<CudaStream>, data: &[T]) -> Result<Self> {
        let buf = Self::poisoned(stream, data.len())?;
        buf.copy_from_host(data)?;
        Ok(buf)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.slice.len() == 0
    }

    /// The device address.
    pub fn ptr(&self) -> DevicePtr<T> {
        let (addr, _sync) = self.slice.device_ptr(&self.stream);
        DevicePtr::from_addr(addr)
    }

    /// Sets every byte to `value` (stream-ordered).
    pub fn fill_bytes(&self, value: u8) -> Result<()> {
        let bytes = self.slice.len() * std::mem::size_of::<T>();
        // SAFETY: the range is this allocation.
        unsafe { result::memset_d8_async(self.ptr().addr(), value, bytes, self.stream.cu_stream()) }?;
        Ok(())
    }

    /// Copies `data` to the start of the buffer (stream-ordered; `data` must stay alive and
    /// unchanged until the stream reaches the copy, which `copy_*` calls ensure by
    /// synchronizing when the source is pageable host memory).
    pub fn copy_from_host(&self, data: &[T]) -> Result<()> {
        if data.len() > self.len() {
            return Err(Error::Shape(format!("copying {} elements into a buffer of {}", data.len(), self.len())));
        }
        // SAFETY: destination range inside the allocation; the source outlives the copy
        // because cuMemcpyHtoDAsync from pageable memory returns after staging it.
        unsafe { result::memcpy_htod_async(self.ptr().addr(), data, self.stream.cu_stream()) }?;
        Ok(())
    }

    /// Copies the first `len` elements of `src` to the start of the buffer (stream-ordered).
    pub fn copy_from_device(&self, src: &DeviceBuffer<T>, len: usize) -> Result<()> {
        if len > self.len() || len > src.len() {
            return Err(Error::Shape(format!("copying {len} elements from a buffer of {} into one of {}", src.len(), self.len())));
        }
        // SAFETY: both ranges inside their allocations (checked); `src`'s producers are on
        // this buffer's stream or finished (the solvers keep one stream per plan).
        unsafe { result::memcpy_dtod_async(self.ptr().addr(), src.ptr().addr(), len * std::mem::size_of::<T>(), self.stream.cu_stream()) }?;
        Ok(())
    }

    /// Copies the first `out.len()` elements to the host and waits for them.
    pub fn copy_to_host(&self, out: &mut [T]) -> Result<()> {
        if out.len() > self.len() {
            return Err(Error::Shape(format!("copying {} elements out of a buffer of {}", out.len(), self.len())));
        }
        // SAFETY: source range inside the allocation; we synchronize before returning.
        unsafe { result::memcpy_dtoh_async(out, self.ptr().addr(), self.stream.cu_stream()) }?;
        self.stream.synchronize()?;
        Ok(())
    }

    /// The whole buffer on the host.
    pub fn to_vec(&self) -> Result<Vec<T>>
    where
        T: Default + Clone,
    {
        let mut v = crate::error::host_vec(Some(self.len()), T::default())?;
        self.copy_to_host(&mut v)?;
        Ok(v)
    }
}

/// Where a 2-D copy reads or writes: a host slice or a device address.
pub(crate) enum Loc<'a, T> {
    Host(&'a [T]),
    Device(u64),
}

fn is_out_of_memory(e: DriverError) -> bool {
    e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
}

/// The error of a failed device allocation of `bytes`: [`Error::OutOfMemory`] (with the
/// device's free bytes from `free`) when the driver ran out of memory, [`Error::Cuda`]
/// otherwise. The size checks keep a margin, but what a solver holds beyond its plans'
/// byte counts (a memory pool's granularity, graphs, another process) can still exhaust
/// the device after they passed.
fn allocation_error(e: DriverError, bytes: usize, free: impl FnOnce() -> usize) -> Error {
    if is_out_of_memory(e) {
        Error::OutOfMemory { needed: bytes, free: free() }
    } else {
        Error::Cuda(format!("allocating {bytes} bytes: {e}"))
    }
}

/// A 2-D copy (`cuMemcpy2DAsync`): `height` columns of `width` elements, source pitch
/// `src_ld`, destination pitch `dst_ld` (elements). Host sources must stay unchanged until
/// the stream reaches the copy; host destinations are valid after a synchronization.
///
/// # Safety
/// Device addresses must be valid for `height` columns at their pitch.
pub(crate) unsafe fn copy_2d<T>(
    stream: &CudaStream,
    src: Loc<'_, T>,
    src_ld: usize,
    dst: Loc<'_, T>,
    dst_ld: usize,
    width: usize,
    height: usize,
) -> Result<()> {
    if width == 0 || height == 0 {
        return Ok(());
    }
    let size = std::mem::size_of::<T>();
    let need = |ld: usize| (height - 1) * ld + width;
    let src = match src {
        Loc::Host(s) => {
            if s.len() < need(src_ld) {
                return Err(Error::Shape("2-D copy source too short".into()));
            }
            Place::Host(s.as_ptr() as *mut std::ffi::c_void)
        }
        Loc::Device(a) => Place::Device(a),
    };
    let dst = match dst {
        Loc::Host(_) => return Err(Error::Shape("2-D copy to a borrowed host slice is not supported".into())),
        Loc::Device(a) => Place::Device(a),
    };
    // SAFETY: host source validated above; device ranges are the caller's contract.
    unsafe { copy_2d_bytes(stream, src, src_ld * size, dst, dst_ld * size, width * size, height) }
}

/// One end of a [`copy_2d_bytes`]: a host address or a device address.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    Host(*mut std::ffi::c_void),
    Device(u64),
}

/// A 2-D copy (`cuMemcpy2DAsync`) in bytes, either direction: `height` rows of
/// `width_bytes`, `src_pitch` and `dst_pitch` bytes apart, stream-ordered.
///
/// # Safety
/// Both ends valid for the copy; host ends page-locked for an asynchronous copy, a host
/// source unchanged and a host destination unread until the stream reaches the copy's end.
pub(crate) unsafe fn copy_2d_bytes(
    stream: &CudaStream,
    src: Place,
    src_pitch: usize,
    dst: Place,
    dst_pitch: usize,
    width_bytes: usize,
    height: usize,
) -> Result<()> {
    if width_bytes == 0 || height == 0 {
        return Ok(());
    }
    if src_pitch == width_bytes && dst_pitch == width_bytes {
        // Both sides dense: one linear copy. The DMA engines move a 2-D copy row by row,
        // and rows of a block's column (e.g. 192 bytes at n = 24) run at a fraction of the
        // link (a 9.2 MB matrix: ~1 ms instead of ~0.2 ms on the H100, docs/perf-notes.md entry 30).
        let bytes = width_bytes * height;
        // SAFETY: the caller's contract, for the same bytes.
        let r = unsafe {
            match (src, dst) {
                (Place::Host(h), Place::Device(d)) => sys::cuMemcpyHtoDAsync_v2(d, h, bytes, stream.cu_stream()),
                (Place::Device(d), Place::Host(h)) => sys::cuMemcpyDtoHAsync_v2(h, d, bytes, stream.cu_stream()),
                (Place::Device(s), Place::Device(d)) => sys::cuMemcpyDtoDAsync_v2(d, s, bytes, stream.cu_stream()),
                (Place::Host(s), Place::Host(d)) => sys::cuMemcpyAsync(d as u64, s as u64, bytes, stream.cu_stream()),
            }
        };
        return r.result().map_err(|e| Error::Cuda(format!("linear copy: {e}")));
    }
    let split = |p: Place| match p {
        Place::Host(h) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, h, 0),
        Place::Device(a) => (sys::CUmemorytype::CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), a),
    };
    let ((src_type, src_host, src_device), (dst_type, dst_host, dst_device)) = (split(src), split(dst));
    let p = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: src_device,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: width_bytes,
        Height: height,
    };
    // SAFETY: the caller's contract.
    let r = unsafe { sys::cuMemcpy2DAsync_v2(&p, stream.cu_stream()) };
    r.result().map_err(|e| Error::Cuda(format!("2-D copy: {e}")))
}

#[cfg(test)]
mod tests {
    use super::{Error, allocation_error, is_out_of_memory};
    use cudarc::driver::{DriverError, sys::CUresult};

    #[test]
    fn a_driver_out_of_memory_is_an_out_of_memory_error() {
        let oom = allocation_error(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY), 1 << 20, || 4096);
        assert!(matches!(oom, Error::OutOfMemory { needed: 1048576, free: 4096 }), "{oom}");
        // (Formatting another error asks the driver for its text: not here, without one.)
        assert!(!is_out_of_memory(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE)));
    }
}
