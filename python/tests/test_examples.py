"""The examples under python/examples run and agree with their references (skipped where
their dependencies, e.g. PyTorch, are not installed)."""

import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kalman_smoother_on_torch_tensors_matches_pure_pytorch():
    pytest.importorskip("torch")
    kalman = load("kalman_torch")
    res = kalman.run(S=3, N=50, n=4, m=2, device="cpu", backend="cpu", repeats=1)
    assert res["max_mean_difference"] < 1e-10
    assert res["residual"] < 1e-12
    assert res["covariance_shape"] == (3, 50, 4, 4)
    assert res["min_covariance_eigenvalue"] > 0


def test_kalman_smoother_on_cuda_tensors():
    torch = pytest.importorskip("torch")
    import blocktri

    if not torch.cuda.is_available() or blocktri.Solver("auto").backend != "gpu":
        pytest.skip("needs a CUDA GPU visible to torch and to blocktri")
    kalman = load("kalman_torch")
    res = kalman.run(S=8, N=200, n=6, m=3, device="cuda", backend="gpu", repeats=1)
    assert res["max_mean_difference"] < 1e-10
    assert res["residual"] < 1e-12
    assert res["min_covariance_eigenvalue"] > 0
