//! The device's ceilings, measured at the start of a run: copy bandwidth (bytes read +
//! written by a device-to-device copy), write bandwidth (a memset), FP64 and FP32 matrix
//! product rates (cuBLAS `gemm`, 8192^3, default math mode).

use super::timing::{Repeat, time_gpu};
use crate::cuda::{DeviceBuffer, Gpu};
use crate::error::Result;
use crate::scalar::Precision;
use cudarc::driver::result;
use serde::Serialize;
use std::sync::Arc;

/// Measured ceilings (zero where they could not be measured).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Peaks {
    /// Device name.
    pub device: String,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Device-to-device copy, GB/s counting bytes read plus written.
    pub copy_gbs: f64,
    /// Memset, GB/s written.
    pub write_gbs: f64,
    /// FP64 matrix product, TFLOP/s.
    pub fp64_tflops: f64,
    /// FP32 matrix product, TFLOP/s.
    pub fp32_tflops: f64,
    /// PTX architecture loaded.
    pub ptx_arch: String,
    /// Host-to-device copy from page-locked memory, GB/s.
    pub h2d_gbs: f64,
    /// Device-to-host copy into page-locked memory, GB/s.
    pub d2h_gbs: f64,
}

impl Peaks {
    /// The measured matrix-product peak of `precision`, in flop/s (zero if not measured).
    pub(crate) fn product_flops(&self, precision: Precision) -> f64 {
        let tflops = match precision {
            Precision::F64 => self.fp64_tflops,
            Precision::F32 => self.fp32_tflops,
        };
        tflops * 1e12
    }

    /// Milliseconds to move `bytes_in` to the device and `bytes_out` back at the measured
    /// pinned bandwidths (`None` when they were not measured).
    pub fn transfer_floor_ms(&self, bytes_in: f64, bytes_out: f64) -> Option<f64> {
        (self.h2d_gbs > 0.0 && self.d2h_gbs > 0.0).then(|| (bytes_in / self.h2d_gbs + bytes_out / self.d2h_gbs) / 1e6)
    }
}

/// Measures the peaks on `gpu`; notes what could not be measured.
pub fn measure(gpu: &Arc<Gpu>, notes: &mut Vec<String>) -> Result<Peaks> {
    let stream = gpu.new_stream()?;
    let bytes: usize = 1 << 30;
    let a = DeviceBuffer::<u8>::poisoned(&stream, bytes)?;
    let b = DeviceBuffer::<u8>::poisoned(&stream, bytes)?;
    let rep = Repeat { warmup: 2, runs: 10, budget_ms: 1000.0 };
    let st = |_: usize| stream.clone();
    // SAFETY: both buffers hold `bytes` bytes.
    let copy = time_gpu(
        rep,
        st,
        |_| Ok(()),
        |_| Ok(unsafe { result::memcpy_dtod_async(b.ptr().addr(), a.ptr().addr(), bytes, stream.cu_stream()) }?),
    )?;
    // SAFETY: as above.
    let write =
        time_gpu(rep, st, |_| Ok(()), |_| Ok(unsafe { result::memset_d8_async(b.ptr().addr(), 0x3f, bytes, stream.cu_stream()) }?))?;
    // The link, page-locked host memory both ways (256 MiB).
    let link_bytes = 256usize << 20;
    let mut host = crate::cuda::PinnedBuffer::<u8>::zeroed(gpu, link_bytes)?;
    // SAFETY: `a` holds at least link_bytes; `host` is page-locked and outlives the timed
    // copies (time_gpu synchronizes).
    let h2d = time_gpu(rep, st, |_| Ok(()), |_| Ok(unsafe { result::memcpy_htod_async(a.ptr().addr(), &host[..], stream.cu_stream()) }?))?;
    // SAFETY: as above.
    let d2h =
        time_gpu(rep, st, |_| Ok(()), |_| Ok(unsafe { result::memcpy_dtoh_async(&mut host[..], a.ptr().addr(), stream.cu_stream()) }?))?;
    drop((a, b, host));
    let info = gpu.info();
    #[cfg_attr(not(feature = "peers"), allow(unused_mut))] // the gemm rates need cuBLAS
    let mut peaks = Peaks {
        device: info.name.clone(),
        multiprocessors: info.multiprocessors,
        copy_gbs: 2.0 * bytes as f64 / (copy.median_ms * 1e-3) / 1e9,
        write_gbs: bytes as f64 / (write.median_ms * 1e-3) / 1e9,
        fp64_tflops: 0.0,
        fp32_tflops: 0.0,
        ptx_arch: info.ptx_arch.clone(),
        h2d_gbs: link_bytes as f64 / (h2d.median_ms * 1e-3) / 1e9,
        d2h_gbs: link_bytes as f64 / (d2h.median_ms * 1e-3) / 1e9,
    };
    #[cfg(feature = "peers")]
    {
        // SAFETY: only tries to dlopen cuBLAS.
        if unsafe { cudarc::cublas::sys::is_culib_present() } {
            peaks.fp64_tflops = gemm_rate::<f64>(&stream, rep)?;
            peaks.fp32_tflops = gemm_rate::<f32>(&stream, rep)?;
        } else {
            notes.push("cuBLAS not found: matrix-product peaks unknown, flop fractions omitted".into());
        }
    }
    #[cfg(not(feature = "peers"))]
    notes.push("built without `peers`: matrix-product peaks unknown".into());
    Ok(peaks)
}

#[cfg(feature = "peers")]
fn gemm_rate<T: super::vendor::VendorScalar>(stream: &Arc<cudarc::driver::CudaStream>, rep: Repeat) -> Result<f64> {
    let m = 8192usize;
    let host: Vec<T> = (0..m * m).map(|i| crate::scalar::cast(((i * 7919) % 1000) as f64 / 1000.0 - 0.5)).collect();
    let a = DeviceBuffer::from_host(stream, &host)?;
    let c = DeviceBuffer::<T>::poisoned(stream, m * m)?;
    let blas = cudarc::cublas::CudaBlas::new(stream.clone()).map_err(|e| crate::Error::Cuda(format!("cuBLAS: {e:?}")))?;
    let h = *blas.handle();
    let mi = m as i32;
    let t = time_gpu(
        rep,
        |_| stream.clone(),
        |_| Ok(()),
        |_| {
            // SAFETY: m x m matrices in device buffers of that size.
            let status = unsafe {
                T::gemm(h, false, false, mi, mi, mi, T::one(), a.ptr().addr(), mi, a.ptr().addr(), mi, T::zero(), c.ptr().addr(), mi)
            };
            if status == 0 { Ok(()) } else { Err(crate::Error::Cuda(format!("gemm status {status}"))) }
        },
    )?;
    Ok(2.0 * (m as f64).powi(3) / (t.median_ms * 1e-3) / 1e12)
}
