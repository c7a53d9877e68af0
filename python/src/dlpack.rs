//! DLPack (<https://dmlc.github.io/dlpack/latest/>) on both sides of the GPU path: the
//! caller's device arrays read through the capsules their `__dlpack__` returns (PyTorch,
//! CuPy, JAX), and solutions handed out as capsules that those libraries import without a
//! copy. Only the legacy unversioned ABI (`"dltensor"` capsules), which every producer
//! still returns when asked without `max_version`.

use blocktri::cuda::Gpu;
use blocktri::cuda::{DeviceArray, DeviceBuffer};
use blocktri::{Error, Scalar};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};
use std::ffi::{CStr, c_void};
use std::sync::Arc;

/// `kDLCUDA`: memory of one CUDA device.
const DEVICE_CUDA: i32 = 2;
/// `kDLCUDAManaged`: CUDA managed memory, addressable from the device.
const DEVICE_CUDA_MANAGED: i32 = 13;
/// `kDLFloat`.
const TYPE_FLOAT: u8 = 2;
const NAME: &CStr = c"dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// `Error::Shape` with `message` about the array `name`.
fn bad(name: &str, message: String) -> Error {
    Error::Shape(format!("{name}: {message}"))
}

/// A device array as the caller's library describes it: a DLPack tensor's fields, or the
/// same read off a PyTorch tensor's attributes ([`crate::torch::Tensor`], cheaper than a
/// capsule for torch).
pub struct View<'a> {
    pub addr: u64,
    pub device: (i32, i32),
    /// DLPack type code and bits.
    pub dtype: (u8, u8),
    pub shape: &'a [i64],
    /// Element strides; `None`: compact C order.
    pub strides: Option<&'a [i64]>,
}

/// `view` as the four axes `(system, block, row, column)` of `extents` (`S, blocks,
/// rows, cols`): its own axes are those without the ones `missing` names (`missing[0]`: no
/// system axis, `missing[3]`: no column axis), which get stride 0. Checks the device
/// (`ordinal`), the element type (`T`), the shape and the alignment.
pub fn check<T: Scalar>(
    view: &View<'_>,
    name: &str,
    ordinal: usize,
    extents: [usize; 4],
    missing: [bool; 4],
) -> Result<DeviceArray, Error> {
    let (kind, id) = view.device;
    if !matches!(kind, DEVICE_CUDA | DEVICE_CUDA_MANAGED) || id as usize != ordinal {
        return Err(bad(name, format!("on DLPack device ({kind}, {id}), the solver runs on CUDA device {ordinal}")));
    }
    let bits = 8 * T::BYTES as u8;
    if view.dtype != (TYPE_FLOAT, bits) {
        return Err(bad(
            name,
            format!("element type (code {}, {} bits) is not the solver's float{bits}; convert it first", view.dtype.0, view.dtype.1),
        ));
    }
    let axes: Vec<usize> = (0..4).filter(|&a| !missing[a]).collect();
    if view.shape.len() != axes.len() || view.strides.is_some_and(|s| s.len() != axes.len()) {
        return Err(bad(name, format!("expected {} dimensions, got {}", axes.len(), view.shape.len())));
    }
    let mut strides = [0i64; 4];
    let mut compact = 1i64;
    for (i, &axis) in axes.iter().enumerate().rev() {
        if view.shape[i] != extents[axis] as i64 {
            let want: Vec<usize> = axes.iter().map(|&a| extents[a]).collect();
            return Err(bad(name, format!("expected shape {want:?}, got {:?}", view.shape)));
        }
        strides[axis] = view.strides.map_or(compact, |s| s[i]);
        compact *= view.shape[i];
    }
    if !view.addr.is_multiple_of(T::BYTES as u64) {
        return Err(bad(name, "data are not aligned to their element size".into()));
    }
    Ok(DeviceArray { addr: view.addr, strides })
}

/// The array behind `obj`, a `"dltensor"` capsule (left owned by the caller, not renamed:
/// its producer frees the array when the capsule is collected, after this call). Checked
/// as [`check`] says.
pub fn device_array<T: Scalar>(
    obj: &Bound<'_, PyAny>,
    name: &str,
    ordinal: usize,
    extents: [usize; 4],
    missing: [bool; 4],
) -> Result<DeviceArray, Error> {
    let capsule = obj.cast::<PyCapsule>().map_err(|_| bad(name, "expected a DLPack capsule".into()))?;
    let ptr = capsule.pointer_checked(Some(NAME)).map_err(|_| bad(name, "not an unused \"dltensor\" capsule".into()))?;
    // SAFETY: a valid "dltensor" capsule points to a DLManagedTensor that lives at least
    // as long as the capsule, which the caller holds for this call; `shape` holds `ndim`
    // values, and `strides` too unless null (compact C order).
    let t = unsafe { &ptr.cast::<DlManagedTensor>().as_ref().dl_tensor };
    let ndim = t.ndim.max(0) as usize;
    let view = View {
        addr: t.data as u64 + t.byte_offset,
        device: (t.device.device_type, t.device.device_id),
        dtype: if t.dtype.lanes == 1 { (t.dtype.code, t.dtype.bits) } else { (u8::MAX, 0) },
        shape: unsafe { std::slice::from_raw_parts(t.shape, ndim) },
        strides: (!t.strides.is_null()).then(|| unsafe { std::slice::from_raw_parts(t.strides, ndim) }),
    };
    check::<T>(&view, name, ordinal, extents, missing)
}

/// What a capsule made by [`export`] owns: the device memory and the shape it describes.
struct Exported<T> {
    tensor: DlManagedTensor,
    shape: Vec<i64>,
    #[allow(dead_code)] // owned for its `Drop`: the device memory the tensor describes
    buffer: DeviceBuffer<T>,
    gpu: Arc<Gpu>,
}

/// The deleter of an exported tensor: frees the device memory (the context made current
/// first: a consumer may call it from any thread).
unsafe extern "C" fn delete_exported<T>(tensor: *mut DlManagedTensor) {
    // SAFETY: `manager_ctx` holds the pointer of the boxed `Exported<T>` that `tensor`
    // lives in ([`export`]); the protocol calls the deleter once.
    unsafe {
        let exported = Box::from_raw((*tensor).manager_ctx as *mut Exported<T>);
        let _ = exported.gpu.context().bind_to_thread();
        drop(exported);
    }
}

/// The capsule destructor: a capsule that no consumer took ("dltensor" still) owns its
/// tensor and deletes it; a consumed one ("used_dltensor") leaves it to the consumer.
unsafe extern "C" fn destroy_capsule(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let tensor = pyo3::ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) as *mut DlManagedTensor;
            if let Some(deleter) = (*tensor).deleter {
                deleter(tensor);
            }
        } else {
            // A consumer renamed it: clear the error that the failed check may have set.
            pyo3::ffi::PyErr_Clear();
        }
    }
}

/// A `"dltensor"` capsule owning `buffer`, a C-contiguous array of `shape` on `gpu`; importing it (e.g. `torch.from_dlpack`) takes no copy.
pub fn export<T: Scalar>(py: Python<'_>, buffer: DeviceBuffer<T>, shape: Vec<i64>, gpu: Arc<Gpu>) -> PyResult<Py<PyAny>> {
    let ordinal = gpu.info().ordinal;
    let mut exported = Box::new(Exported {
        tensor: DlManagedTensor {
            dl_tensor: DlTensor {
                data: buffer.ptr().addr() as *mut c_void,
                device: DlDevice { device_type: DEVICE_CUDA, device_id: ordinal as i32 },
                ndim: shape.len() as i32,
                dtype: DlDataType { code: TYPE_FLOAT, bits: 8 * T::BYTES as u8, lanes: 1 },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_exported::<T>),
        },
        shape,
        buffer,
        gpu,
    });
    exported.tensor.dl_tensor.shape = exported.shape.as_mut_ptr();
    let raw = Box::into_raw(exported);
    // SAFETY: `raw` is a live box; the tensor's fields point into it (the shape vector's
    // heap buffer does not move with the box).
    unsafe {
        (*raw).tensor.manager_ctx = raw as *mut c_void;
        let tensor = &raw mut (*raw).tensor;
        let capsule = pyo3::ffi::PyCapsule_New(tensor as *mut c_void, NAME.as_ptr(), Some(destroy_capsule));
        if capsule.is_null() {
            delete_exported::<T>(tensor);
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, capsule).unbind())
    }
}
