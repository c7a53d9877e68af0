"""What the Python layer costs over the Rust call (issue #15: below 20 us at N = 4096,
n = 16, f64): the same factor + solve timed from Rust (inside the extension, no Python
in the loop) and from Python, alternately, in one process; numpy arrays in host memory
and, when torch sees a GPU, torch CUDA tensors.

    python python/examples/call_overhead.py [--nblocks 4096] [--block 16] [--runs 300]
"""

import argparse
import statistics
import time

import numpy as np

import blocktri
from blocktri import _blocktri


def python_times(factor, solve, factor_solve, runs):
    """``(factor, solve, factor_solve)`` microseconds of each of ``runs`` rounds (after a
    warm-up round), as the Rust reference times them."""
    factor(), solve(), factor_solve()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        factor()
        mid = time.perf_counter()
        solve()
        end = time.perf_counter()
        factor_solve()
        out.append(((mid - start) * 1e6, (end - mid) * 1e6, (time.perf_counter() - end) * 1e6))
    return out


def report(name, rust, py, calls):
    """One line per call: the medians of the Rust and Python times and their difference."""
    for i, call in calls:
        a, b = statistics.median(t[i] for t in rust), statistics.median(t[i] for t in py)
        print(f"{name:36} {call:22} {a:9.1f} {b:9.1f} {b - a:9.1f}")


def cuda_tensors(arrays):
    """The arrays as torch CUDA tensors, or None without torch or a GPU it sees."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    tensors = tuple(torch.from_numpy(v).cuda() for v in arrays)
    torch.cuda.synchronize()
    return tensors


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nblocks", type=int, default=4096)
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    N, n, seed = args.nblocks, args.block, 7
    solver = blocktri.Solver("gpu")
    diag, sub = (np.ascontiguousarray(v) for v in blocktri.random_spd(N, n, seed=seed))
    rhs = np.ascontiguousarray(blocktri.random_rhs(N, n, seed=seed))
    print(f"N = {N}, n = {n}, f64, one right-hand side; median us of {args.runs} calls x {args.rounds} rounds")
    print(f"{'inputs':36} {'call':22} {'Rust':>9} {'Python':>9} {'overhead':>9}")
    paths = [("numpy arrays (host memory)", False, lambda: (diag, sub, rhs))]
    # torch is imported only after the host-memory rows: its threads would share the cores
    # with the staging copies.
    paths.append(("torch CUDA tensors (device memory)", True, lambda: cuda_tensors((diag, sub, rhs))))
    for name, device, inputs in paths:
        arrays = inputs()
        if arrays is None:
            continue
        d, s, r = arrays
        x = solver.factor_solve(d, s, r)
        rust, py, py_out = [], [], []
        for _ in range(args.rounds):
            rust += _blocktri.time_rust_factor_solve("f64", 1, N, n, seed, args.runs, device)
            py += python_times(
                lambda: solver.factor(d, s), lambda: solver.solve(r), lambda: solver.factor_solve(d, s, r), args.runs
            )
            # The solution written into a reused array (`out=`; the Rust device reference
            # writes into a preallocated buffer too).
            py_out += python_times(
                lambda: solver.factor(d, s),
                lambda: solver.solve(r, out=x),
                lambda: solver.factor_solve(d, s, r, out=x),
                args.runs,
            )
        report(name, rust, py, [(0, "factor"), (1, "solve"), (2, "factor_solve")])
        report(name, rust, py_out, [(1, "solve, out="), (2, "factor_solve, out=")])


if __name__ == "__main__":
    main()
