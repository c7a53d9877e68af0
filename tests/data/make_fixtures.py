"""Writes the fixtures of tests/io_cli.rs with numpy and scipy, as a user's script would.

    python3 tests/data/make_fixtures.py   (numpy, scipy)

numpy_c.npz / numpy_f.npz: the same block-tridiagonal problem (N = 6, n = 3, k = 2) in C
and Fortran order (diag: N x n x n, sub: (N-1) x n x n with sub[i] = A[i+1, i], rhs: N n x k);
solution.npy: numpy.linalg.solve of the dense matrix; scipy.mtx: the matrix in Matrix Market
(symmetric, coordinate) form, rhs.npy its right-hand sides; numpy_f32.npz: float32 arrays.

tridiag_f32_f.npz: S = 3 non-symmetric, diagonally dominant tridiagonal matrices of size 7
as float32 (S, n) / (S, n-1) arrays in Fortran order (a: diagonal, b: sub-, c: super-diagonal);
tridiag_inverse.npy: numpy.linalg.inv of each (S, n, n), computed from the float32 values.
"""
import numpy as np
import scipy.io
import scipy.sparse

rng = np.random.default_rng(20261121)
N, n, k = 6, 3, 2
diag = np.empty((N, n, n))
sub = rng.uniform(-1, 1, (N - 1, n, n))
for i in range(N):
    m = rng.uniform(-1, 1, (n, n))
    diag[i] = m @ m.T + 4 * n * np.eye(n)
dense = np.zeros((N * n, N * n))
for i in range(N):
    dense[i * n:(i + 1) * n, i * n:(i + 1) * n] = diag[i]
for i in range(N - 1):
    dense[(i + 1) * n:(i + 2) * n, i * n:(i + 1) * n] = sub[i]
    dense[i * n:(i + 1) * n, (i + 1) * n:(i + 2) * n] = sub[i].T
rhs = rng.uniform(-1, 1, (N * n, k))
np.savez("numpy_c.npz", diag=diag, sub=sub, rhs=rhs)
np.savez("numpy_f.npz", diag=np.asfortranarray(diag), sub=np.asfortranarray(sub), rhs=np.asfortranarray(rhs))
np.savez("numpy_f32.npz", diag=diag.astype(np.float32), sub=sub.astype(np.float32), rhs=rhs.astype(np.float32))
np.save("solution.npy", np.linalg.solve(dense, rhs))
np.save("rhs.npy", rhs)
scipy.io.mmwrite("scipy.mtx", scipy.sparse.coo_matrix(dense), symmetry="symmetric")
# Not positive definite: block 4 gets a negative eigenvalue.
bad = diag.copy()
bad[4] -= 40 * np.eye(n)
np.savez("indefinite.npz", diag=bad, sub=sub, rhs=rhs)

# Tridiagonal batch for `blocktri invert` and io::read_tridiagonal.
S, m = 3, 7
tb = rng.uniform(-1, 1, (S, m - 1)).astype(np.float32)
tc = rng.uniform(-1, 1, (S, m - 1)).astype(np.float32)
ta = np.empty((S, m), dtype=np.float32)
for s in range(S):
    off = np.abs(np.concatenate([[0], tb[s]])) + np.abs(np.concatenate([tc[s], [0]]))
    ta[s] = (off + rng.uniform(0.5, 1.5, m)) * rng.choice([-1, 1], m)
np.savez("tridiag_f32_f.npz", a=np.asfortranarray(ta), b=np.asfortranarray(tb), c=np.asfortranarray(tc))
dense_t = np.zeros((S, m, m))
for s in range(S):
    dense_t[s] = np.diag(ta[s].astype(np.float64)) + np.diag(tb[s].astype(np.float64), -1) + np.diag(tc[s].astype(np.float64), 1)
np.save("tridiag_inverse.npy", np.linalg.inv(dense_t))
