//! PyTorch CUDA tensors read straight off their attributes, from Rust: the hot path of
//! `factor`, `solve` and `factor_solve` on torch tensors is one extension call that
//! describes the tensors, asks torch for its current stream and runs the solver, with no
//! Python-level code in between (issue #15: the Python layer's cost over the Rust call).
//! Every other device array goes through DLPack capsules ([`crate::dlpack`]).

use crate::dlpack::View;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::{intern, types::PyTuple};

/// `kDLCUDA` and `kDLFloat`, as [`View`] names devices and element types.
const DEVICE_CUDA: i32 = 2;
const TYPE_FLOAT: u8 = 2;

/// What the fast path calls in torch, looked up once per process.
struct Api {
    float64: Py<PyAny>,
    float32: Py<PyAny>,
    /// `torch._C._cuda_getCurrentRawStream(device)`, the private accessor Triton uses (a
    /// plain integer; building a `torch.cuda.Stream` costs several µs), or `None` on a torch
    /// without it.
    raw_stream: Option<Py<PyAny>>,
    /// `torch.cuda.current_stream`, the public fallback.
    current_stream: Py<PyAny>,
}

static API: PyOnceLock<Api> = PyOnceLock::new();

fn api(py: Python<'_>) -> PyResult<&'static Api> {
    API.get_or_try_init(py, || {
        let torch = py.import("torch")?;
        Ok(Api {
            float64: torch.getattr("float64")?.unbind(),
            float32: torch.getattr("float32")?.unbind(),
            raw_stream: torch.getattr("_C")?.getattr("_cuda_getCurrentRawStream").ok().map(Bound::unbind),
            current_stream: torch.getattr("cuda")?.getattr("current_stream")?.unbind(),
        })
    })
}

/// A CUDA tensor's address, shape, strides (in elements), device index and element type.
pub struct Tensor {
    addr: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
    device: i32,
    dtype: (u8, u8),
}

impl Tensor {
    /// Reads `t`'s description (five attribute reads in torch's C++ bindings).
    pub fn read(t: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = t.py();
        let api = api(py)?;
        let dtype = t.getattr(intern!(py, "dtype"))?;
        let dtype = if dtype.is(&api.float64) {
            (TYPE_FLOAT, 64)
        } else if dtype.is(&api.float32) {
            (TYPE_FLOAT, 32)
        } else {
            (u8::MAX, 0)
        };
        Ok(Tensor {
            addr: t.call_method0(intern!(py, "data_ptr"))?.extract()?,
            shape: t.getattr(intern!(py, "shape"))?.extract()?,
            strides: t.call_method0(intern!(py, "stride"))?.extract()?,
            device: t.call_method0(intern!(py, "get_device"))?.extract()?,
            dtype,
        })
    }

    /// The description [`crate::dlpack::check`] takes (a CPU tensor, device `-1`, fails
    /// its device check).
    pub fn view(&self) -> View<'_> {
        View { addr: self.addr, device: (DEVICE_CUDA, self.device), dtype: self.dtype, shape: &self.shape, strides: Some(&self.strides) }
    }

    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The handle of torch's current stream on this tensor's device: the stream whose
    /// work produced the tensor as far as torch's ordering goes.
    pub fn producer_stream(&self, py: Python<'_>) -> PyResult<usize> {
        let api = api(py)?;
        match &api.raw_stream {
            Some(raw) => raw.bind(py).call1((self.device,))?.extract(),
            None => api.current_stream.bind(py).call1((self.device,))?.getattr(intern!(py, "cuda_stream"))?.extract(),
        }
    }
}

/// The tensor for the solutions: the caller's `out`, or else a new C-contiguous tensor
/// like `rhs` (shape, dtype, device), `rhs.new_empty(rhs.shape)`.
pub fn output_like<'py>(out: Option<Bound<'py, PyAny>>, rhs: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Some(out) = out {
        return Ok(out);
    }
    let py = rhs.py();
    let shape = rhs.getattr(intern!(py, "shape"))?;
    rhs.call_method1(intern!(py, "new_empty"), PyTuple::new(py, [shape])?)
}
