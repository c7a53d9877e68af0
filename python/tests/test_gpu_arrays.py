"""GPU arrays through DLPack (issue #15): torch CUDA tensors (and CuPy arrays where CuPy is
installed) in and out without a host round trip. Skipped without a CUDA GPU and torch."""

import numpy as np
import pytest

import blocktri

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or blocktri.Solver("auto").backend != "gpu":
    pytest.skip("needs a CUDA GPU visible to torch and to blocktri", allow_module_level=True)

from test_blocktri import dense, random_problem, rng  # noqa: E402


def cuda(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


@pytest.mark.parametrize("S,N,n,k", [(None, 1, 3, None), (None, 50, 8, None), (3, 20, 16, 2), (None, 9, 70, 3), (2, 33, 33, None)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_torch_tensors_in_and_out_without_host_copies(request, S, N, n, k, dtype):
    gen = rng(request)
    diag, sub = random_problem(gen, N, n, S, dtype=dtype)
    lead = () if S is None else (S,)
    rhs = gen.standard_normal(lead + (N, n) + (() if k is None else (k,))).astype(dtype)
    precision = "f64" if dtype == np.float64 else "f32"
    x_host = blocktri.Solver("gpu", precision).factor_solve(diag, sub, rhs)
    d_t, s_t, r_t = cuda(diag), cuda(sub), cuda(rhs)
    torch.cuda.synchronize()
    solver = blocktri.Solver("gpu", precision)
    moved = blocktri._blocktri.host_transfer_bytes()
    x = solver.factor_solve(d_t, s_t, r_t)
    # Nothing crossed PCIe (the result is a torch tensor that blocktri wrote in place).
    assert blocktri._blocktri.host_transfer_bytes() == moved
    assert isinstance(x, torch.Tensor) and x.is_cuda and tuple(x.shape) == rhs.shape and x.dtype == r_t.dtype
    # The host path's results (the same kernels; the fused ones add a separator's two
    # updates in arrival order, so the last bits may differ: README, "Reproducibility").
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(x.cpu().numpy(), x_host, rtol=tol, atol=tol * np.abs(x_host).max())
    # Inputs untouched; the result stays valid after the solver is gone.
    np.testing.assert_array_equal(d_t.cpu().numpy(), diag)
    kept = x.cpu().numpy()
    del solver
    torch.cuda.synchronize()
    np.testing.assert_array_equal(x.cpu().numpy(), kept)


def test_strided_views_and_batched_device_solves(request):
    gen = rng(request)
    diag, sub = random_problem(gen, 40, 8, 4)
    rhs = gen.standard_normal((4, 40, 8, 3))
    ref = blocktri.Solver("gpu").factor_solve(diag, sub, rhs)
    # Fortran-ordered blocks (each block transposed in memory), every other system of a
    # larger batch, a right-hand side that is a transposed view.
    d_t = cuda(np.swapaxes(diag, -1, -2)).transpose(-1, -2)
    interleaved = np.full((8,) + sub.shape[1:], np.nan)
    interleaved[0::2] = sub
    s_wide = cuda(interleaved)[0::2]
    r_t = cuda(np.moveaxis(rhs, -1, 0)).permute(1, 2, 3, 0)
    assert not d_t.is_contiguous() and not r_t.is_contiguous()
    solver = blocktri.Solver("gpu")
    solver.factor(d_t, s_wide)
    close = dict(rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(solver.solve(r_t).cpu().numpy(), ref, **close)
    # refactor + solve on the device, many times (the MPC loop's pattern).
    for _ in range(3):
        solver.refactor(d_t, s_wide)
        x = solver.solve(r_t)
    np.testing.assert_allclose(x.cpu().numpy(), ref, **close)
    # out= reuses a tensor (and may be the right-hand side itself).
    y = torch.empty_like(r_t.contiguous())
    assert solver.solve(r_t, out=y) is y
    np.testing.assert_allclose(y.cpu().numpy(), ref, **close)
    z = r_t.contiguous()
    solver.solve(z, out=z)
    np.testing.assert_allclose(z.cpu().numpy(), ref, **close)
    with pytest.raises(blocktri.ShapeError, match="out"):
        solver.solve(r_t, out=y[:, :-1])
    with pytest.raises(blocktri.ShapeError, match="out"):
        solver.solve(r_t, out=np.empty(rhs.shape))
    # factor + solve in one call (one graph launch, one wait), into a reused tensor.
    y.fill_(np.nan)
    assert solver.factor_solve(d_t, s_wide, r_t, out=y) is y
    np.testing.assert_allclose(y.cpu().numpy(), ref, **close)
    a = dense(diag[2], sub[2])
    np.testing.assert_allclose(x[2].cpu().numpy().reshape(-1, 3), np.linalg.solve(a, rhs[2].reshape(-1, 3)), rtol=1e-10)


def test_device_errors_are_clear(request):
    gen = rng(request)
    diag, sub = random_problem(gen, 30, 4, 2)
    solver = blocktri.Solver("gpu")
    with pytest.raises(blocktri.ShapeError, match="float64"):
        solver.factor(cuda(diag).float(), cuda(sub).float())
    with pytest.raises(blocktri.ShapeError, match="sub"):
        solver.factor(cuda(diag), cuda(sub[:, :-1]))
    with pytest.raises(blocktri.ShapeError, match="both"):
        solver.factor(cuda(diag), sub)
    bad = diag.copy()
    bad[1, 17] *= -1.0
    with pytest.raises(blocktri.NotPositiveDefinite) as err:
        solver.factor(cuda(bad), cuda(sub))
    assert err.value.system == 1
    # The same in one factor + solve call: the error, and the output left as it was.
    kept = cuda(np.full((2, 30, 4), 7.0))
    with pytest.raises(blocktri.NotPositiveDefinite) as err:
        solver.factor_solve(cuda(bad), cuda(sub), cuda(np.ones((2, 30, 4))), out=kept)
    assert err.value.system == 1 and err.value.block is not None
    assert (kept.cpu().numpy() == 7.0).all()
    solver.factor(cuda(diag), cuda(sub))
    rhs = np.ones((2, 30, 4))
    rhs[1, 12, 2] = np.nan
    with pytest.raises(blocktri.NonFiniteSolution) as err:
        solver.solve(cuda(rhs))
    assert err.value.system == 1
    with pytest.raises(blocktri.UnsupportedError, match="device array"):
        blocktri.Solver("cpu").factor(cuda(diag), cuda(sub))


class _DeviceDLPackOnly:
    """A device array that offers nothing but the DLPack protocol (as JAX arrays do)."""

    def __init__(self, t):
        self._t = t
        self.shape = tuple(t.shape)

    def __dlpack__(self, **kwargs):
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_any_dlpack_producer_gets_a_dlpack_result_without_copies(request):
    gen = rng(request)
    diag, sub = random_problem(gen, 60, 8, 2)
    rhs = gen.standard_normal((2, 60, 8, 2))
    ref = blocktri.Solver("gpu").factor_solve(diag, sub, rhs)
    solver = blocktri.Solver("gpu")
    d, s, r = (_DeviceDLPackOnly(cuda(v)) for v in (diag, sub, rhs))
    torch.cuda.synchronize()
    moved = blocktri._blocktri.host_transfer_bytes()
    solver.factor(d, s)
    result = solver.solve(r)
    assert blocktri._blocktri.host_transfer_bytes() == moved
    assert result.__dlpack_device__() == (2, 0)
    allocated = torch.cuda.memory_allocated()
    x = torch.from_dlpack(result)
    # Imported, not copied: torch allocated nothing for it.
    assert torch.cuda.memory_allocated() == allocated and x.is_cuda and tuple(x.shape) == rhs.shape
    np.testing.assert_allclose(x.cpu().numpy(), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    with pytest.raises(blocktri.BlocktriError, match="already"):
        result.__dlpack__()
    # The memory outlives the solver and is freed with the tensor.
    del solver, result
    torch.cuda.synchronize()
    np.testing.assert_allclose(x.cpu().numpy(), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_cupy_arrays_come_back_as_cupy(request):
    cupy = pytest.importorskip("cupy")
    gen = rng(request)
    diag, sub = random_problem(gen, 25, 6)
    rhs = gen.standard_normal((25, 6))
    ref = blocktri.Solver("gpu").factor_solve(diag, sub, rhs)
    x = blocktri.Solver("gpu").factor_solve(cupy.asarray(diag), cupy.asarray(sub), cupy.asarray(rhs))
    assert isinstance(x, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(x), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_jax_arrays_come_back_as_jax(request):
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to torch
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    gen = rng(request)
    diag, sub = random_problem(gen, 30, 5, 2)
    rhs = gen.standard_normal((2, 30, 5))
    ref = blocktri.Solver("gpu").factor_solve(diag, sub, rhs)
    gpu = [d for d in jax.devices() if d.platform == "gpu"][0]
    d, s, r = (jax.device_put(jnp.asarray(v), gpu) for v in (diag, sub, rhs))
    moved = blocktri._blocktri.host_transfer_bytes()
    x = blocktri.Solver("gpu").factor_solve(d, s, r)
    assert blocktri._blocktri.host_transfer_bytes() == moved
    assert isinstance(x, jax.Array) and x.shape == rhs.shape
    np.testing.assert_allclose(np.asarray(x), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
