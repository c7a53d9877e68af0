"""Writes the fixtures of tests/io_cli.rs with numpy and scipy, as a user's script would.

    python3 tests/data/make_fixtures.py   (numpy, scipy)

numpy_c.npz / numpy_f.npz: the same block-tridiagonal problem (N = 6, n = 3, k = 2) in C
and Fortran order (diag: N x n x n, sub: (N-1) x n x n with sub[i] = A[i+1, i], rhs: N n x k);
solution.npy: numpy.linalg.solve of the dense matrix; scipy.mtx: the matrix in Matrix Market
(symmetric, coordinate) form, rhs.npy its right-hand sides; numpy_f32.npz: float32 arrays.
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
