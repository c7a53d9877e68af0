"""blocktri: symmetric positive definite block-tridiagonal systems on the GPU (or the CPU).

A matrix is given by its diagonal blocks ``diag`` (``(N, n, n)``, or ``(S, N, n, n)`` for
a batch of ``S`` systems) and its sub-diagonal blocks ``sub`` (``(N-1, n, n)`` or
``(S, N-1, n, n)``): ``sub[i]`` is the block ``A[i+1, i]``. Right-hand sides are
``(N, n)`` or ``(N, n, k)`` (``(S, N, n)`` or ``(S, N, n, k)`` for a batch). Any numpy
array, or anything ``numpy.asarray`` accepts (lists, CPU tensors through DLPack), in C
or Fortran order; float32 or float64.

>>> import numpy as np, blocktri
>>> diag, sub = blocktri.random_spd(64, 8, seed=1)        # N = 64 blocks of 8 x 8
>>> rhs = np.ones((64, 8))
>>> solver = blocktri.Solver(backend="cpu")              # "auto": the GPU when there is one
>>> x = solver.factor_solve(diag, sub, rhs)
>>> bool(np.allclose(blocktri.matvec(diag, sub, x), rhs))
True

Errors are exceptions carrying the system and block they concern, e.g.
:class:`NotPositiveDefinite` (a ``ValueError``) with ``.system`` and ``.block``.
"""

import numpy as np

from . import _blocktri

__version__ = _blocktri.__version__

__all__ = [
    "Solver",
    "ArrowSolver",
    "tridiag_inverse",
    "random_spd",
    "random_rhs",
    "matvec",
    "BlocktriError",
    "ShapeError",
    "NonFiniteError",
    "NotSymmetricError",
    "NotPositiveDefinite",
    "NonFiniteSolution",
    "NotDiagonallyDominant",
    "SingularPivot",
    "NotFactoredError",
    "UnsupportedError",
    "GpuOutOfMemory",
    "HostOutOfMemory",
    "NoGpuError",
    "CudaError",
]


class BlocktriError(Exception):
    """Base class of the errors raised by blocktri. ``str(e)`` is the library's message."""

    def __init__(self, message, **fields):
        super().__init__(message)
        for key, value in fields.items():
            setattr(self, key, value)


class ShapeError(BlocktriError, ValueError):
    """Arrays whose shapes, dtypes or sizes do not fit together."""


class NonFiniteError(BlocktriError, ValueError):
    """A NaN or infinite input value: ``.what`` (which array), ``.system``, ``.block``."""


class NotSymmetricError(BlocktriError, ValueError):
    """A diagonal block that is not symmetric: ``.system``, ``.block``, ``.row``, ``.col``, ``.tol``."""


class NotPositiveDefinite(BlocktriError, ValueError):
    """The matrix is not positive definite: the pivot of ``.block`` in ``.system`` failed
    (``.level``: the elimination level of the schedule that found it)."""


class NonFiniteSolution(BlocktriError, ArithmeticError):
    """The solution overflowed: ``.system``, ``.block``."""


class NotDiagonallyDominant(BlocktriError, ValueError):
    """A tridiagonal matrix that is not diagonally dominant: ``.matrix``, ``.row``."""


class SingularPivot(BlocktriError, ArithmeticError):
    """A zero pivot in the tridiagonal inverse: ``.matrix``, ``.row``."""


class NotFactoredError(BlocktriError, RuntimeError):
    """``solve`` (or another call that needs a factorization) before ``factor``."""


class UnsupportedError(BlocktriError, ValueError):
    """A size or option this backend does not support."""


class GpuOutOfMemory(BlocktriError, MemoryError):
    """Not enough GPU memory: ``.needed`` and ``.free`` bytes."""


class HostOutOfMemory(BlocktriError, MemoryError):
    """Not enough host memory: ``.needed`` bytes."""


class NoGpuError(BlocktriError, RuntimeError):
    """``backend="gpu"`` without a usable CUDA GPU."""


class CudaError(BlocktriError, RuntimeError):
    """A CUDA call failed."""


_KINDS = {
    "shape": ShapeError,
    "non_finite": NonFiniteError,
    "not_symmetric": NotSymmetricError,
    "not_positive_definite": NotPositiveDefinite,
    "non_finite_solution": NonFiniteSolution,
    "not_diagonally_dominant": NotDiagonallyDominant,
    "singular_pivot": SingularPivot,
    "not_factored": NotFactoredError,
    "unsupported": UnsupportedError,
    "gpu_out_of_memory": GpuOutOfMemory,
    "host_out_of_memory": HostOutOfMemory,
    "no_gpu": NoGpuError,
    "cuda": CudaError,
}


def _call(fn, *args):
    """Calls into the compiled module, turning its errors into this module's classes."""
    try:
        return fn(*args)
    except _blocktri.RawError as raw:
        kind, message, fields = raw.args
        raise _KINDS.get(kind, BlocktriError)(message, **fields) from None


_DTYPES = {"f32": np.float32, "f64": np.float64}


def _precision(precision):
    if precision in ("f64", "float64", np.float64, float):
        return "f64"
    if precision in ("f32", "float32", np.float32):
        return "f32"
    raise ShapeError(f"unknown precision {precision!r} (f32, f64)")


def _array(x, name, dtype):
    """``x`` as a numpy array of ``dtype`` (values only: checked for dtype kind)."""
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        device = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else 1
        if device != 1:  # kDLCPU
            raise UnsupportedError(
                f"{name}: arrays on a device (DLPack device type {device}) are not supported yet; "
                "copy them to the host first (e.g. tensor.cpu())"
            )
        x = np.from_dlpack(x)
    a = np.asarray(x)
    if a.dtype.kind not in "fiu":
        raise ShapeError(f"{name}: expected real numbers, got dtype {a.dtype}")
    return a.astype(dtype, copy=False)


def _ptr(a):
    """The data address of a C-contiguous, aligned array (what the compiled module reads)."""
    assert a.flags.c_contiguous and a.flags.aligned
    return a.ctypes.data


def _blocks(diag, sub, dtype, row_major=False):
    """Checks ``diag``/``sub`` and returns ``(shape, batched, diag, sub)``: C-contiguous,
    each block column-major, or as given (row-major, no copy for C-order input) when
    ``row_major``."""
    d = _array(diag, "diag", dtype)
    s = _array(sub, "sub", dtype)
    if d.ndim not in (3, 4):
        raise ShapeError(f"diag: expected (N, n, n) or (S, N, n, n), got shape {d.shape}")
    batched = d.ndim == 4
    if not batched:
        d = d[None]
        s = s[None] if s.ndim == 3 else s
    S, N, n, n2 = d.shape
    if n != n2 or n == 0 or N == 0 or S == 0:
        raise ShapeError(f"diag: blocks must be square and non-empty, got shape {np.shape(diag)}")
    if s.shape != (S, N - 1, n, n):
        want = (S, N - 1, n, n) if batched else (N - 1, n, n)
        raise ShapeError(f"sub: expected shape {want} for diag of shape {np.shape(diag)}, got {np.shape(sub)}")
    if row_major:
        return (S, N, n), batched, np.ascontiguousarray(d), np.ascontiguousarray(s)
    # The library stores each block column-major: the transpose of the block, C order.
    d = np.ascontiguousarray(np.swapaxes(d, -1, -2))
    s = np.ascontiguousarray(np.swapaxes(s, -1, -2))
    return (S, N, n), batched, d, s


_LIBRARIES = {np.ndarray: "numpy"}


def _library(x):
    """The top-level module of ``x``'s type (``"torch"``, ``"cupy"``, ``"jaxlib"``, ...),
    remembered per type: the solver's hot path asks it for every array."""
    kind = type(x)
    library = _LIBRARIES.get(kind)
    if library is None:
        library = _LIBRARIES[kind] = kind.__module__.split(".")[0]
    return library


def _torch_cuda(*arrays):
    """Whether every one of ``arrays`` is a PyTorch CUDA tensor: those take the compiled
    module's one-call path (attributes and torch's current stream read in Rust)."""
    return all(_library(a) == "torch" and a.is_cuda for a in arrays)


def _on_device(x):
    """Whether ``x`` is an array in GPU memory (DLPack device other than the CPU)."""
    if isinstance(x, np.ndarray) or not hasattr(x, "__dlpack_device__"):
        return False
    if _library(x) == "torch":
        return x.is_cuda
    return x.__dlpack_device__()[0] not in (1, 3)  # kDLCPU, kDLCUDAHost


class _Solution:
    """Solutions in a device array that blocktri allocated: a DLPack producer (``torch``,
    ``cupy`` and ``jax`` import it with ``from_dlpack``, without a copy). The data are
    complete when the solve returns, so any consumer stream may use them at once."""

    def __init__(self, capsule, ordinal):
        self._capsule, self._ordinal = capsule, ordinal

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self._capsule is None:
            raise BlocktriError("this DLPack array has already been imported")
        capsule, self._capsule = self._capsule, None
        return capsule

    def __dlpack_device__(self):
        return (2, self._ordinal)  # kDLCUDA


def _view(x, stream):
    """``(DLPack capsule of x, the stream blocktri must wait for or None)``: the producer
    makes our stream wait (``__dlpack__(stream=ours)``). PyTorch tensors do not come here
    (the protocol's synchronization costs torch ~30 us a call; see :func:`_torch_cuda`)."""
    try:
        return x.__dlpack__(stream=stream), None
    except (TypeError, NotImplementedError, BufferError):
        # A producer without stream support readies its data for the legacy default
        # stream (the protocol's stream=None), which our stream then waits for.
        return x.__dlpack__(), 0


def _import_like(template, solution):
    """``solution`` (a :class:`_Solution`) as an array of ``template``'s library."""
    library = _library(template)
    if library == "torch":
        import torch

        return torch.from_dlpack(solution)
    if library == "cupy":
        import cupy

        return cupy.from_dlpack(solution)
    if library in ("jax", "jaxlib"):
        import jax.numpy as jnp

        return jnp.from_dlpack(solution)
    return solution


def _plain_column(a, dtype, shape):
    """Whether ``a`` is a numpy array the library reads as it is: ``dtype``, C order,
    aligned, of ``shape`` (one right-hand side per system)."""
    return type(a) is np.ndarray and a.dtype == dtype and a.flags.c_contiguous and a.flags.aligned and a.shape == shape


def _from_blocks(d, s, batched):
    """Column-major blocks back to the user's layout (each block transposed back)."""
    d, s = np.swapaxes(d, -1, -2), np.swapaxes(s, -1, -2)
    return (d, s) if batched else (d[0], s[0])


def _to_columns(x, name, S, rows, batched, dtype):
    """Right-hand sides ``x`` of shape ``rows`` or ``rows + (k,)`` (a leading ``S`` when
    ``batched``) in the library's layout: ``(S, k) + rows``, C-contiguous. Returns the
    array and whether ``x`` was a single column."""
    a = _array(x, name, dtype)
    single = a.ndim == len(rows) + int(batched)
    if single:
        a = a[..., None]
    if not batched:
        a = a[None]
    if a.ndim != len(rows) + 2 or a.shape[0] != S or a.shape[1:-1] != rows or a.shape[-1] == 0:
        dims = ((S,) if batched else ()) + rows
        want = "(" + ", ".join(map(str, dims)) + "[, k])"
        raise ShapeError(f"{name}: expected shape {want} for the factored matrix, got {np.shape(x)}")
    return np.ascontiguousarray(np.moveaxis(a, -1, 1)), single


def _from_columns(cols, batched, single):
    """The inverse of :func:`_to_columns`: the caller's shape back."""
    x = np.moveaxis(cols, 1, -1)
    if not batched:
        x = x[0]
    return x[..., 0] if single else x


class _Factored:
    """What :class:`Solver` and :class:`ArrowSolver` share: the compiled solver made by
    ``make``, the precision, whether the factored matrix is a batch."""

    def __init__(self, make, backend, precision):
        self._precision = _precision(precision)
        self._dtype = _DTYPES[self._precision]
        self._inner = _call(make, backend, self._precision)
        self._batched = None

    @property
    def backend(self):
        """The backend in use: ``"gpu"``, ``"cpu-threaded"`` or ``"cpu-sequential"``."""
        return self._inner.backend

    @property
    def precision(self):
        """``"f32"`` or ``"f64"``."""
        return self._precision

    def logdet(self):
        """``log det A`` of the factored matrix (a float, or an array of ``S`` for a batch)."""
        v = np.array(_call(self._inner.log_determinant), dtype=np.float64)
        return v if self._batched else float(v[0])

    def __repr__(self):
        return f"blocktri.{type(self).__name__}(backend={self.backend!r}, precision={self._precision!r})"


class Solver(_Factored):
    """Factor ``A = L L^T`` once, solve many times.

    ``backend``: ``"auto"`` (the GPU when one is usable, else the threaded CPU solver;
    :attr:`fallback_reason` says why), ``"gpu"``, ``"cpu"`` or ``"cpu-sequential"``.
    ``precision``: ``"f64"`` or ``"f32"`` (inputs are converted).

    >>> import numpy as np, blocktri
    >>> diag, sub = blocktri.random_spd(32, 4, batch=3, seed=7)
    >>> s = blocktri.Solver(backend="cpu")
    >>> s.factor(diag, sub)
    >>> x = s.solve(np.ones((3, 32, 4)))
    >>> x.shape
    (3, 32, 4)
    """

    def __init__(self, backend="auto", precision="f64"):
        super().__init__(_blocktri._Solver, backend, precision)
        self._cuda = None  # (stream, ordinal) of the GPU solver, () on a CPU backend

    @property
    def fallback_reason(self):
        """Why ``backend="auto"`` chose the CPU, or ``None``."""
        return self._inner.fallback_reason

    @property
    def shape(self):
        """``(S, N, n)`` of the factorization, or ``None`` before the first ``factor``."""
        return self._inner.shape

    def _stream(self, what):
        """``(CUDA stream, device ordinal)`` of the GPU solver; device arrays need one."""
        if self._cuda is None:
            self._cuda = self._inner.cuda_stream or ()
        stream = self._cuda or None
        if stream is None:
            raise UnsupportedError(f"{what} is a device array: that needs backend \"gpu\" (this solver runs on {self.backend})")
        return stream

    def _factor(self, diag, sub, refactor):
        if _torch_cuda(diag, sub):
            self._batched = _call(self._inner.factor_torch, diag, sub, refactor)
            return
        on_device = (_on_device(diag), _on_device(sub))
        if any(on_device):
            return self._factor_device(diag, sub, refactor, on_device)
        # Row-major blocks as the caller holds them: the GPU transposes them on the device.
        (S, N, n), batched, d, s = _blocks(diag, sub, self._dtype, row_major=True)
        _call(self._inner.factor, _ptr(d), _ptr(s), S, N, n, refactor)
        self._batched = batched

    def _factor_device(self, diag, sub, refactor, on_device):
        """Device arrays (DLPack, any strides): copied into the solver's layout on the GPU."""
        stream, _ = self._stream("diag" if on_device[0] else "sub")
        if not all(on_device):
            raise ShapeError("diag and sub must both be in host memory or both in GPU memory")
        shape = tuple(diag.shape)
        if len(shape) not in (3, 4) or shape[-1] != shape[-2] or 0 in shape:
            raise ShapeError(f"diag: expected (N, n, n) or (S, N, n, n), got shape {shape}")
        batched = len(shape) == 4
        S, N, n = (shape[0] if batched else 1), shape[-3], shape[-1]
        (d, wait), (s, _) = _view(diag, stream), _view(sub, stream)
        _call(self._inner.factor_device, d, s, S, N, n, batched, refactor, wait)
        self._batched = batched

    def factor(self, diag, sub):
        """Factors ``A`` (validated: finite, symmetric diagonal blocks, positive definite)."""
        self._factor(diag, sub, False)

    def refactor(self, diag, sub):
        """Factors a new matrix of the same shape, reusing the buffers (the fast path of
        interior-point and MPC loops)."""
        self._factor(diag, sub, True)

    def solve(self, rhs, out=None):
        """The solution of ``A x = rhs``, in ``rhs``'s shape (``(N, n)``, ``(N, n, k)``,
        batched with a leading ``S``): a new array, or ``out`` (which may be ``rhs``
        itself) when given, for loops that reuse one, as a C-order numpy array of one
        right-hand side per system or a torch CUDA tensor, of ``rhs``'s shape and dtype."""
        if _torch_cuda(rhs):
            return _call(self._inner.solve_torch, rhs, self._torch_out(out), bool(self._batched))
        shape = self.shape
        if shape is None:
            raise NotFactoredError("no factorization: call factor() before solve()")
        S, N, n = shape
        if _plain_column(rhs, self._dtype, (S, N, n) if self._batched else (N, n)):
            # One column in C order is already the library's layout: no numpy pass at all.
            if out is None:
                out = np.empty(rhs.shape, self._dtype)
            elif not _plain_column(out, self._dtype, rhs.shape):
                raise ShapeError(f"out: expected a C-order {np.dtype(self._dtype).name} numpy array of shape {rhs.shape}")
            _call(self._inner.solve, rhs.ctypes.data, out.ctypes.data, 1)
            return out
        if _on_device(rhs):
            return self._solve_device(rhs, S, N, n, out)
        if out is not None:
            raise UnsupportedError(
                "out= takes a C-order numpy array of one right-hand side per system, or a torch CUDA tensor like rhs"
            )
        # The library's layout: per system, k columns of N n values (no copy for k = 1).
        cols, single = _to_columns(rhs, "rhs", S, (N, n), self._batched, self._dtype)
        out = np.empty_like(cols)
        _call(self._inner.solve, _ptr(cols), _ptr(out), cols.shape[1])
        return _from_columns(out, self._batched, single)

    def _solve_device(self, rhs, S, N, n, out=None):
        """Right-hand sides in GPU memory: solutions in a new device array of the same
        library (torch, cupy, jax; otherwise a DLPack-capable object) and shape."""
        stream, ordinal = self._stream("rhs")
        shape = tuple(rhs.shape)
        lead = 1 if self._batched else 0
        if len(shape) not in (lead + 2, lead + 3) or shape[: lead + 2] != ((S,) if lead else ()) + (N, n) or 0 in shape:
            want = ("(S, " if lead else "(") + f"{N}, {n}[, k])"
            raise ShapeError(f"rhs: expected shape {want} for the factored matrix, got {shape}")
        single = len(shape) == lead + 2
        k = 1 if single else shape[-1]
        view, wait = _view(rhs, stream)
        if out is not None:
            raise UnsupportedError("out= with device arrays takes torch tensors")
        capsule = _call(self._inner.solve_device, view, k, self._batched, single, wait)
        return _import_like(rhs, _Solution(capsule, ordinal))

    @staticmethod
    def _torch_out(out):
        """``out`` for the torch path: ``None`` or a tensor (checked there for shape,
        dtype and device)."""
        if out is not None and _library(out) != "torch":
            raise ShapeError(f"out: expected a torch CUDA tensor like rhs, got {type(out).__name__}")
        return out

    def factor_solve(self, diag, sub, rhs, out=None):
        """``factor`` then ``solve`` (``out`` as there). For torch CUDA tensors one call and
        one wait; a failed factorization leaves ``out`` as it was."""
        if _torch_cuda(diag, sub, rhs):
            x, self._batched = _call(self._inner.factor_solve_torch, diag, sub, rhs, self._torch_out(out))
            return x
        self.factor(diag, sub)
        return self.solve(rhs, out)

    def selected_inverse(self):
        """The diagonal blocks ``(A^-1)[i, i]`` and sub-diagonal blocks ``(A^-1)[i+1, i]``
        of the factored matrix, as ``(diag, sub)`` in the input's shapes."""
        shape = self.shape
        if shape is None:
            raise NotFactoredError("no factorization: call factor() before selected_inverse()")
        S, N, n = shape
        d = np.empty((S, N, n, n), self._dtype)
        s = np.empty((S, N - 1, n, n), self._dtype)
        _call(self._inner.selected_inverse, _ptr(d), _ptr(s))
        return _from_blocks(d, s, self._batched)

    def condition_estimate(self, diag, sub):
        """The 1-norm condition number estimate of each system of ``A`` (already factored)."""
        (S, N, n), batched, d, s = _blocks(diag, sub, self._dtype, row_major=True)
        v = np.array(_call(self._inner.condition_estimate, _ptr(d), _ptr(s), S, N, n), dtype=np.float64)
        return v if batched else float(v[0])


class ArrowSolver(_Factored):
    """A block-tridiagonal matrix with a dense arrowhead: ``a`` global unknowns (the tip,
    last) coupled to every block. ``arrow`` holds the border blocks ``A[tip, i]``
    (``(N, a, n)``, or ``(S, N, a, n)``), ``tip`` the ``(a, a)`` (or ``(S, a, a)``) corner;
    ``diag`` and ``sub`` as for :class:`Solver`. The chain is factored on the chosen backend,
    the tip's Schur complement last.

    >>> import numpy as np, blocktri
    >>> diag, sub = blocktri.random_spd(32, 4, seed=3)
    >>> arrow, tip = np.full((32, 2, 4), 0.01), 5.0 * np.eye(2)
    >>> s = blocktri.ArrowSolver(backend="cpu")
    >>> s.factor(diag, sub, arrow, tip)
    >>> x, x_tip = s.solve(np.ones((32, 4)), np.ones(2))
    >>> x.shape, x_tip.shape
    ((32, 4), (2,))
    """

    def __init__(self, backend="auto", precision="f64"):
        super().__init__(_blocktri._ArrowSolver, backend, precision)
        self._shape = None

    @property
    def shape(self):
        """``(S, N, n, a)`` of the factorization, or ``None``."""
        return self._shape

    def factor(self, diag, sub, arrow, tip):
        """Factors the arrowhead matrix (errors name the system and block; block ``N`` is
        the tip)."""
        (S, N, n), batched, d, s = _blocks(diag, sub, self._dtype)
        ar = _array(arrow, "arrow", self._dtype)
        tp = _array(tip, "tip", self._dtype)
        if not batched:
            ar, tp = ar[None], tp[None]
        if ar.ndim != 4 or ar.shape[:2] != (S, N) or ar.shape[3] != n:
            want = "(S, N, a, n)" if batched else "(N, a, n)"
            raise ShapeError(f"arrow: expected {want} with N = {N}, n = {n}, got shape {np.shape(arrow)}")
        a = ar.shape[2]
        if tp.shape != (S, a, a):
            want = (S, a, a) if batched else (a, a)
            raise ShapeError(f"tip: expected shape {want}, got {np.shape(tip)}")
        ar = np.ascontiguousarray(np.swapaxes(ar, -1, -2))
        tp = np.ascontiguousarray(np.swapaxes(tp, -1, -2))
        _call(self._inner.factor, _ptr(d), _ptr(s), _ptr(ar), _ptr(tp), S, N, n, a)
        self._shape, self._batched = (S, N, n, a), batched

    def _factored(self):
        if self._shape is None:
            raise NotFactoredError("no factorization: call factor() first")
        return self._shape

    def solve(self, rhs, rhs_tip):
        """``(x, x_tip)`` solving ``A [x; x_tip] = [rhs; rhs_tip]``: ``rhs`` ``(N, n[, k])``,
        ``rhs_tip`` ``(a[, k])``, with a leading ``S`` for a batch."""
        S, N, n, a = self._factored()
        cols, single = _to_columns(rhs, "rhs", S, (N, n), self._batched, self._dtype)
        tcols, single_tip = _to_columns(rhs_tip, "rhs_tip", S, (a,), self._batched, self._dtype)
        k = cols.shape[1]
        if (tcols.shape[1], single_tip) != (k, single):
            raise ShapeError(f"rhs_tip: expected {a} rows and {k} columns per system, got shape {np.shape(rhs_tip)}")
        out, out_tip = np.empty_like(cols), np.empty_like(tcols)
        _call(self._inner.solve, _ptr(cols), _ptr(tcols), _ptr(out), _ptr(out_tip), k, S, N, n, a)
        return _from_columns(out, self._batched, single), _from_columns(out_tip, self._batched, single)

    def selected_inverse(self):
        """``(diag, sub, arrow, tip)`` of ``A^-1``: the chain's diagonal and sub-diagonal
        blocks, the border blocks ``(A^-1)[tip, i]`` and the tip ``(A^-1)[tip, tip]``, in
        the input's shapes."""
        S, N, n, a = self._factored()
        d = np.empty((S, N, n, n), self._dtype)
        s = np.empty((S, N - 1, n, n), self._dtype)
        ar = np.empty((S, N, n, a), self._dtype)
        tp = np.empty((S, a, a), self._dtype)
        _call(self._inner.selected_inverse, _ptr(d), _ptr(s), _ptr(ar), _ptr(tp))
        d, s = _from_blocks(d, s, self._batched)
        ar, tp = np.swapaxes(ar, -1, -2), np.swapaxes(tp, -1, -2)
        return (d, s, ar, tp) if self._batched else (d, s, ar[0], tp[0])


def tridiag_inverse(a, b, c, method="auto", check_dominance=True, precision=None):
    """Inverses of diagonally dominant tridiagonal matrices: ``a`` the diagonal (``(n,)``
    or ``(batch, n)``), ``b`` the sub-diagonal and ``c`` the super-diagonal (``n - 1``
    each). Returns ``(n, n)`` or ``(batch, n, n)``.

    ``method``: ``"auto"`` (the GPU when there is one, else ``"threaded"``), ``"gpu"``,
    ``"gpu-stagewise"``, ``"threaded"``, ``"sequential"``, ``"direct"``.

    >>> import numpy as np, blocktri
    >>> x = blocktri.tridiag_inverse([4.0, 4.0, 4.0], [1.0, 1.0], [1.0, 1.0], method="sequential")
    >>> bool(np.allclose(x @ (np.diag([4.0] * 3) + np.diag([1.0] * 2, -1) + np.diag([1.0] * 2, 1)), np.eye(3)))
    True
    """
    a0 = np.asarray(a)
    prec = _precision(precision) if precision is not None else ("f32" if a0.dtype == np.float32 else "f64")
    dtype = _DTYPES[prec]
    av, bv, cv = (_array(v, name, dtype) for v, name in ((a, "a"), (b, "b"), (c, "c")))
    batched = av.ndim == 2
    if av.ndim not in (1, 2) or av.shape[-1] == 0:
        raise ShapeError(f"a: expected (n,) or (batch, n), got shape {av.shape}")
    if not batched:
        av, bv, cv = av[None], bv[None], cv[None]
    batch, n = av.shape
    for name, v in (("b", bv), ("c", cv)):
        if v.shape != (batch, n - 1):
            want = (batch, n - 1) if batched else (n - 1,)
            raise ShapeError(f"{name}: expected shape {want}, got {v.shape if batched else v.shape[1:]}")
    if method == "auto":
        method = "gpu" if _has_gpu() else "threaded"
    av, bv, cv = (np.ascontiguousarray(v) for v in (av, bv, cv))
    out = np.empty((batch, n, n), dtype)
    _call(_blocktri.tridiag_inverse, prec, _ptr(av), _ptr(bv), _ptr(cv), n, batch, method, check_dominance, _ptr(out))
    # Column-major inverses: each stored matrix is the transpose of the C-order view.
    x = np.swapaxes(out, -1, -2)
    return x if batched else x[0]


_GPU = None


def _has_gpu():
    global _GPU
    if _GPU is None:
        _GPU = Solver("auto").backend == "gpu"
    return _GPU


def random_spd(nblocks, block, batch=None, seed=0, precision="f64"):
    """A random SPD block-tridiagonal matrix ``(diag, sub)`` (the library's generator):
    ``(N, n, n)``/``(N-1, n, n)``, or with a leading ``batch``."""
    prec = _precision(precision)
    S = 1 if batch is None else batch
    d = np.empty((S, nblocks, block, block), _DTYPES[prec])
    s = np.empty((S, max(nblocks - 1, 0), block, block), _DTYPES[prec])
    _call(_blocktri.random_spd, prec, S, nblocks, block, seed, _ptr(d), _ptr(s))
    return _from_blocks(d, s, batch is not None)


def random_rhs(nblocks, block, ncols=None, batch=None, seed=0, precision="f64"):
    """Random right-hand sides: ``(N, n)``, ``(N, n, k)`` with ``ncols=k``, with a leading
    ``batch`` when given."""
    prec = _precision(precision)
    S, k = (1 if batch is None else batch), (1 if ncols is None else ncols)
    out = np.empty((S, k, nblocks, block), _DTYPES[prec])
    _call(_blocktri.random_rhs, prec, S, nblocks, block, k, seed, _ptr(out))
    x = np.moveaxis(out, 1, 3)
    if batch is None:
        x = x[0]
    return x[..., 0] if ncols is None else x


def matvec(diag, sub, x):
    """``A x`` for the block-tridiagonal ``A`` given by ``diag``, ``sub`` (numpy, any
    precision; for residual checks)."""
    d, s, x = np.asarray(diag), np.asarray(sub), np.asarray(x)
    batched = d.ndim == 4
    if not batched:
        d, s, x = d[None], s[None], x[None]
    single = x.ndim == 3
    if single:
        x = x[..., None]
    y = np.einsum("sirc,sick->sirk", d, x)
    y[:, 1:] += np.einsum("sirc,sick->sirk", s, x[:, :-1])
    y[:, :-1] += np.einsum("sicr,sick->sirk", s, x[:, 1:])
    if single:
        y = y[..., 0]
    return y if batched else y[0]
