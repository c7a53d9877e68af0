"""The Python package against dense numpy/scipy references: every call, f32 and f64,
batches, C and Fortran order, every error class. Runs on the CPU backends everywhere; the
"auto" backend takes the GPU where there is one."""

import threading
import zlib

import numpy as np
import pytest
import scipy.linalg

import blocktri

BACKENDS = ["cpu", "cpu-sequential", "auto"]


def dense(diag, sub):
    """The assembled matrix of one system."""
    N, n, _ = diag.shape
    a = np.zeros((N * n, N * n), dtype=np.float64)
    for i in range(N):
        a[i * n:(i + 1) * n, i * n:(i + 1) * n] = diag[i]
    for i in range(N - 1):
        a[(i + 1) * n:(i + 2) * n, i * n:(i + 1) * n] = sub[i]
        a[i * n:(i + 1) * n, (i + 1) * n:(i + 2) * n] = sub[i].T
    return a


def rng(request):
    """A fresh generator per test, seeded from its name (reproducible, different per test:
    `hash` of a string changes from one interpreter to the next)."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def random_problem(gen, N, n, S=None, dtype=np.float64):
    """A random SPD block-tridiagonal matrix built here (not by the library's generator)."""
    S1 = 1 if S is None else S
    sub = gen.standard_normal((S1, N - 1, n, n)) / np.sqrt(n)
    g = gen.standard_normal((S1, N, n, n)) / np.sqrt(n)
    diag = g @ np.swapaxes(g, -1, -2) + (2.0 + 2.5 * 2) * np.eye(n)  # dominant: well conditioned
    diag, sub = diag.astype(dtype), sub.astype(dtype)
    return (diag, sub) if S is not None else (diag[0], sub[0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-4)])
@pytest.mark.parametrize("N,n,k", [(1, 3, None), (2, 1, 2), (17, 4, None), (64, 8, 3)])
def test_solve_matches_dense(request, backend, dtype, tol, N, n, k):
    gen = rng(request)
    diag, sub = random_problem(gen, N, n, dtype=dtype)
    rhs = gen.standard_normal((N, n) if k is None else (N, n, k)).astype(dtype)
    solver = blocktri.Solver(backend=backend, precision="f32" if dtype == np.float32 else "f64")
    x = solver.factor_solve(diag, sub, rhs)
    assert x.shape == rhs.shape and x.dtype == dtype
    a = dense(diag.astype(np.float64), sub.astype(np.float64))
    ref = np.linalg.solve(a, rhs.reshape(N * n, -1).astype(np.float64)).reshape(rhs.shape)
    assert np.linalg.norm(x - ref) / np.linalg.norm(ref) < tol


@pytest.mark.parametrize("backend", BACKENDS)
def test_batches_and_fortran_order(request, backend):
    gen = rng(request)
    S, N, n, k = 5, 23, 6, 2
    diag, sub = random_problem(gen, N, n, S=S)
    rhs = gen.standard_normal((S, N, n, k))
    solver = blocktri.Solver(backend=backend)
    # Fortran-ordered and non-contiguous inputs give the same answer as C order.
    solver.factor(np.asfortranarray(diag), np.asfortranarray(sub))
    assert solver.shape == (S, N, n)
    x = solver.solve(np.asfortranarray(rhs))
    x_strided = solver.solve(np.repeat(rhs, 2, axis=-1)[..., ::2])
    # Equal up to the last bits: on the GPU the fused kernels add a separator's two updates
    # in arrival order (README, "Reproducibility").
    np.testing.assert_allclose(x, x_strided, rtol=1e-13, atol=1e-15)
    for s in range(S):
        ref = np.linalg.solve(dense(diag[s], sub[s]), rhs[s].reshape(N * n, k)).reshape(N, n, k)
        assert np.linalg.norm(x[s] - ref) / np.linalg.norm(ref) < 1e-12
    one_col = solver.solve(rhs[..., 0])
    assert one_col.shape == (S, N, n)
    np.testing.assert_allclose(one_col, x[..., 0], rtol=1e-12, atol=1e-13)


def test_banded_reference(request):
    """The same solution as scipy's banded Cholesky (the matrix as a band of width 2n - 1)."""
    gen = rng(request)
    N, n = 40, 3
    diag, sub = random_problem(gen, N, n)
    a = dense(diag, sub)
    bw = 2 * n - 1
    band = np.zeros((bw + 1, N * n))
    for d in range(bw + 1):
        band[bw - d, d:] = np.diagonal(a, d)
    b = gen.standard_normal(N * n)
    ref = scipy.linalg.cho_solve_banded((scipy.linalg.cholesky_banded(band), False), b)
    x = blocktri.Solver("cpu").factor_solve(diag, sub, b.reshape(N, n))
    np.testing.assert_allclose(x.reshape(-1), ref, rtol=1e-11, atol=1e-12)


def test_refactor_reuses_the_shape(request):
    gen = rng(request)
    diag, sub = random_problem(gen, 30, 5)
    solver = blocktri.Solver("cpu")
    solver.factor(diag, sub)
    diag2 = diag + 3.0 * np.eye(5)
    solver.refactor(diag2, sub)
    b = gen.standard_normal((30, 5))
    x = solver.solve(b)
    ref = np.linalg.solve(dense(diag2, sub), b.reshape(-1)).reshape(30, 5)
    np.testing.assert_allclose(x, ref, rtol=1e-11, atol=1e-12)
    with pytest.raises(blocktri.ShapeError):
        solver.refactor(diag[:10], sub[:9])


@pytest.mark.parametrize("backend", BACKENDS)
def test_logdet_selected_inverse_and_condition(request, backend):
    gen = rng(request)
    S, N, n = 3, 12, 4
    diag, sub = random_problem(gen, N, n, S=S)
    solver = blocktri.Solver(backend)
    solver.factor(diag, sub)
    logdet = solver.logdet()
    inv_d, inv_s = solver.selected_inverse()
    assert inv_d.shape == diag.shape and inv_s.shape == sub.shape
    cond = solver.condition_estimate(diag, sub)
    for s in range(S):
        a = dense(diag[s], sub[s])
        sign, ref = np.linalg.slogdet(a)
        assert sign > 0 and abs(logdet[s] - ref) < 1e-10 * abs(ref)
        ainv = np.linalg.inv(a)
        for i in range(N):
            np.testing.assert_allclose(inv_d[s, i], ainv[i * n:(i + 1) * n, i * n:(i + 1) * n], rtol=1e-10, atol=1e-12)
        for i in range(N - 1):
            np.testing.assert_allclose(inv_s[s, i], ainv[(i + 1) * n:(i + 2) * n, i * n:(i + 1) * n], rtol=1e-10, atol=1e-12)
        true = np.linalg.cond(a, 1)
        assert true / 10 <= cond[s] <= true * (1 + 1e-9)
    one = blocktri.Solver(backend)
    one.factor(diag[0], sub[0])
    assert isinstance(one.logdet(), float)
    assert abs(one.logdet() - logdet[0]) < 1e-10 * abs(logdet[0])


@pytest.mark.parametrize("backend", ["cpu", "cpu-sequential"])
def test_not_positive_definite_names_system_and_block(request, backend):
    gen = rng(request)
    S, N, n = 4, 33, 3
    diag, sub = random_problem(gen, N, n, S=S)
    diag[2, 17] -= 50.0 * np.eye(n)
    with pytest.raises(blocktri.NotPositiveDefinite) as e:
        blocktri.Solver(backend).factor(diag, sub)
    assert (e.value.system, e.value.block) == (2, 17)
    assert isinstance(e.value, ValueError) and "positive definite" in str(e.value)


def test_input_errors_are_named():
    diag, sub = blocktri.random_spd(10, 3, batch=2, seed=3)
    solver = blocktri.Solver("cpu")
    bad = diag.copy()
    bad[1, 4, 0, 2] = np.nan
    with pytest.raises(blocktri.NonFiniteError) as e:
        solver.factor(bad, sub)
    assert (e.value.system, e.value.block) == (1, 4)
    asym = diag.copy()
    asym[0, 7, 0, 1] += 1.0
    with pytest.raises(blocktri.NotSymmetricError) as e:
        solver.factor(asym, sub)
    assert (e.value.system, e.value.block) == (0, 7)
    with pytest.raises(blocktri.ShapeError, match="sub"):
        solver.factor(diag, sub[:, :-1])
    with pytest.raises(blocktri.ShapeError):
        solver.factor(diag[..., :2], sub)
    with pytest.raises(blocktri.ShapeError):
        solver.factor(diag.astype(complex), sub)
    with pytest.raises(blocktri.NotFactoredError):
        blocktri.Solver("cpu").solve(np.ones((10, 3)))
    solver.factor(diag, sub)
    with pytest.raises(blocktri.ShapeError, match="rhs"):
        solver.solve(np.ones((10, 3)))  # the factored matrix is a batch of 2
    with pytest.raises(blocktri.ShapeError):
        blocktri.Solver("cpu", precision="f16")
    with pytest.raises(blocktri.ShapeError):
        blocktri.Solver("quantum")


def test_gpu_backend_without_a_gpu_says_so():
    if blocktri.Solver("auto").backend == "gpu":
        pytest.skip("a GPU is present")
    with pytest.raises(blocktri.NoGpuError, match="GPU"):
        blocktri.Solver("gpu")
    assert "GPU" in blocktri.Solver("auto").fallback_reason


class _DLPackOnly:
    """An array that offers nothing but DLPack (as torch or JAX arrays do)."""

    def __init__(self, a, device=1):
        self._a, self._device = a, device

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (self._device, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_solve_into_out(request, backend):
    gen = rng(request)
    diag, sub = random_problem(gen, 12, 3)
    rhs = gen.standard_normal((12, 3))
    solver = blocktri.Solver(backend)
    solver.factor(diag, sub)
    x = solver.solve(rhs)
    out = np.empty_like(rhs)
    assert solver.solve(rhs, out=out) is out
    np.testing.assert_allclose(out, x, rtol=1e-13, atol=1e-15)
    b = rhs.copy()
    solver.solve(b, out=b)  # in place
    np.testing.assert_allclose(b, x, rtol=1e-13, atol=1e-15)
    with pytest.raises(blocktri.ShapeError, match="out"):
        solver.solve(rhs, out=np.empty((12, 4)))
    with pytest.raises(blocktri.UnsupportedError, match="out"):
        solver.solve(rhs[..., None], out=np.empty((12, 3, 1)))


def test_dlpack_inputs(request):
    gen = rng(request)
    diag, sub = random_problem(gen, 9, 2)
    b = gen.standard_normal((9, 2))
    x = blocktri.Solver("cpu").factor_solve(_DLPackOnly(diag), _DLPackOnly(sub), _DLPackOnly(b))
    np.testing.assert_allclose(x, np.linalg.solve(dense(diag, sub), b.reshape(-1)).reshape(9, 2), rtol=1e-12)
    with pytest.raises(blocktri.UnsupportedError, match="device"):
        blocktri.Solver("cpu").factor(_DLPackOnly(diag, device=2), sub)


def test_threads_share_nothing_but_the_answers(request):
    """Solvers in several Python threads at once (the GIL is released while they work)."""
    gen = rng(request)
    problems = [random_problem(gen, 50, 4) for _ in range(4)]
    rhs = [gen.standard_normal((50, 4)) for _ in range(4)]
    results = [None] * 4

    def work(i):
        results[i] = blocktri.Solver("cpu").factor_solve(*problems[i], rhs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (d, s), b, x in zip(problems, rhs, results):
        np.testing.assert_allclose(x, np.linalg.solve(dense(d, s), b.reshape(-1)).reshape(50, 4), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("method", ["auto", "threaded", "sequential", "direct"])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-4)])
def test_tridiag_inverse(request, method, dtype, tol):
    gen = rng(request)
    batch, n = 3, 50
    b = gen.uniform(-1, 1, (batch, n - 1))
    c = gen.uniform(-1, 1, (batch, n - 1))
    a = np.abs(np.pad(b, ((0, 0), (1, 0)))) + np.abs(np.pad(c, ((0, 0), (0, 1)))) + 1.0
    a *= gen.choice([-1.0, 1.0], a.shape)
    a, b, c = (v.astype(dtype) for v in (a, b, c))
    x = blocktri.tridiag_inverse(a, b, c, method=method)
    assert x.shape == (batch, n, n) and x.dtype == dtype
    for m in range(batch):
        t = np.diag(a[m].astype(np.float64)) + np.diag(b[m].astype(np.float64), -1) + np.diag(c[m].astype(np.float64), 1)
        ref = np.linalg.inv(t)
        assert np.linalg.norm(x[m] - ref) / np.linalg.norm(ref) < tol
    one = blocktri.tridiag_inverse(a[1], b[1], c[1], method=method)
    np.testing.assert_allclose(one, x[1], rtol=tol)


def test_tridiag_errors():
    with pytest.raises(blocktri.NotDiagonallyDominant) as e:
        blocktri.tridiag_inverse([[4.0, 4.0, 4.0], [4.0, 0.5, 4.0]], [[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], method="sequential")
    assert (e.value.matrix, e.value.row) == (1, 1)
    with pytest.raises(blocktri.ShapeError):
        blocktri.tridiag_inverse([4.0, 4.0, 4.0], [1.0], [1.0, 1.0])
    with pytest.raises(blocktri.ShapeError):
        blocktri.tridiag_inverse([4.0, 4.0], [1.0], [1.0], method="magic")


def test_generators_make_spd_problems():
    diag, sub = blocktri.random_spd(16, 5, batch=2, seed=11, precision="f32")
    assert diag.shape == (2, 16, 5, 5) and sub.shape == (2, 15, 5, 5) and diag.dtype == np.float32
    for s in range(2):
        assert np.linalg.eigvalsh(dense(diag[s].astype(np.float64), sub[s].astype(np.float64))).min() > 0
    b = blocktri.random_rhs(16, 5, ncols=3, batch=2, seed=2)
    assert b.shape == (2, 16, 5, 3)
    assert blocktri.random_rhs(16, 5).shape == (16, 5)
    again = blocktri.random_spd(16, 5, batch=2, seed=11, precision="f32")
    np.testing.assert_array_equal(again[0], diag)


def test_docstring_examples_run():
    import doctest

    failures, tried = doctest.testmod(blocktri)
    assert tried > 0 and failures == 0


def dense_arrow(diag, sub, arrow, tip):
    """The assembled arrowhead matrix of one system (the tip last)."""
    N, n, _ = diag.shape
    a = tip.shape[0]
    m = np.zeros((N * n + a, N * n + a))
    m[:N * n, :N * n] = dense(diag, sub)
    for i in range(N):
        m[N * n:, i * n:(i + 1) * n] = arrow[i]
        m[i * n:(i + 1) * n, N * n:] = arrow[i].T
    m[N * n:, N * n:] = tip
    return m


def random_arrow(gen, N, n, a, S=None):
    diag, sub = random_problem(gen, N, n, S=S)
    S1 = 1 if S is None else S
    arrow = gen.uniform(-1, 1, (S1, N, a, n)) / np.sqrt(N * n)
    r = gen.uniform(-1, 1, (S1, a, a)) / max(a, 1)
    tip = (a + 1.0) * np.eye(a) + 0.25 * (r + np.swapaxes(r, -1, -2))
    return (diag, sub, arrow, tip) if S is not None else (diag, sub, arrow[0], tip[0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("S,N,n,a,k", [(None, 1, 2, 1, None), (None, 40, 3, 4, 2), (3, 17, 2, 5, None)])
def test_arrowhead_matches_dense(request, backend, S, N, n, a, k):
    gen = rng(request)
    diag, sub, arrow, tip = random_arrow(gen, N, n, a, S=S)
    lead = () if S is None else (S,)
    tail = () if k is None else (k,)
    rhs = gen.standard_normal(lead + (N, n) + tail)
    rhs_tip = gen.standard_normal(lead + (a,) + tail)
    solver = blocktri.ArrowSolver(backend)
    solver.factor(diag, sub, arrow, tip)
    x, xt = solver.solve(rhs, rhs_tip)
    assert x.shape == rhs.shape and xt.shape == rhs_tip.shape
    logdet = solver.logdet()
    inv_d, inv_s, inv_a, inv_t = solver.selected_inverse()
    for s in range(1 if S is None else S):
        pick = (lambda v: v) if S is None else (lambda v: v[s])
        m = dense_arrow(pick(diag), pick(sub), pick(arrow), pick(tip))
        b = np.concatenate([pick(rhs).reshape(N * n, -1), pick(rhs_tip).reshape(a, -1)])
        ref = np.linalg.solve(m, b)
        got = np.concatenate([pick(x).reshape(N * n, -1), pick(xt).reshape(a, -1)])
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-12
        assert abs(np.atleast_1d(logdet)[s] - np.linalg.slogdet(m)[1]) < 1e-10 * abs(np.linalg.slogdet(m)[1]) + 1e-12
        minv = np.linalg.inv(m)
        np.testing.assert_allclose(pick(inv_t), minv[N * n:, N * n:], rtol=1e-10, atol=1e-13)
        for i in range(N):
            np.testing.assert_allclose(pick(inv_a)[i], minv[N * n:, i * n:(i + 1) * n], rtol=1e-10, atol=1e-13)
            np.testing.assert_allclose(pick(inv_d)[i], minv[i * n:(i + 1) * n, i * n:(i + 1) * n], rtol=1e-10, atol=1e-13)
            if i + 1 < N:
                np.testing.assert_allclose(pick(inv_s)[i], minv[(i + 1) * n:(i + 2) * n, i * n:(i + 1) * n], rtol=1e-10, atol=1e-13)


def test_arrowhead_errors(request):
    gen = rng(request)
    diag, sub, arrow, tip = random_arrow(gen, 10, 2, 3, S=2)
    solver = blocktri.ArrowSolver("cpu")
    bad = tip.copy()
    bad[1, 0, 0] = -1e6
    with pytest.raises(blocktri.NotPositiveDefinite) as e:
        solver.factor(diag, sub, arrow, bad)
    assert (e.value.system, e.value.block) == (1, 10)  # block N: the tip
    with pytest.raises(blocktri.ShapeError, match="arrow"):
        solver.factor(diag, sub, arrow[:, :, :, :1], tip)
    with pytest.raises(blocktri.ShapeError, match="tip"):
        solver.factor(diag, sub, arrow, tip[:, :2, :2])
    with pytest.raises(blocktri.NotFactoredError):
        solver.solve(np.ones((2, 10, 2)), np.ones((2, 3)))
    nan = arrow.copy()
    nan[0, 4, 1, 0] = np.nan
    with pytest.raises(blocktri.NonFiniteError) as e:
        solver.factor(diag, sub, nan, tip)
    assert (e.value.system, e.value.block, e.value.what) == (0, 4, "border block")
    solver.factor(diag, sub, arrow, tip)
    with pytest.raises(blocktri.ShapeError, match="rhs_tip"):
        solver.solve(np.ones((2, 10, 2)), np.ones((2, 4)))
