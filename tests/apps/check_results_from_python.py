#!/usr/bin/env python3
"""tcsolve eigs/solve result files read back with h5py (docs/hdf5-schema.md sections 2-3).

usage: check_results_from_python.py TCSOLVE_BINARY WORK_DIR
Runs eigs and solve on a generated Laplacian, reads the outputs with h5py, checks the layout and
recomputes the residuals with scipy from the matrix that `tcsolve convert` wrote.
Exits 77 (CTest SKIP_RETURN_CODE) when numpy, h5py or scipy are missing.
"""
import os
import shutil
import subprocess
import sys

try:
    import h5py
    import numpy as np
    import scipy.sparse as sp
except ImportError as e:  # Debian: apt-get install python3-h5py python3-scipy
    print(f"SKIP: {e}")
    sys.exit(77)

tcsolve, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
spec, nx, ny = "gen:lap2d:14x9", 14, 9


def run(*args):
    r = subprocess.run([tcsolve, *args], capture_output=True, text=True)
    assert r.returncode == 0, f"{args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


run("convert", spec, f"{work}/A.h5", "-q")
with h5py.File(f"{work}/A.h5", "r") as f:
    g = f["matrix"]
    A = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
n = A.shape[0]
assert n == nx * ny

# eigs: [k] eigenvalues, [k][n] eigenvectors (row j = vector j), residuals, history, attributes
k = 5
run("eigs", spec, "--k", str(k), "--method", "lanczos", "--device", "cpu", "--out", f"{work}/eigs.h5", "-q")
with h5py.File(f"{work}/eigs.h5", "r") as f:
    lam = f["eigenvalues"][:]
    X = f["eigenvectors"][:]
    res = f["residual_norms"][:]
    assert f["error_bounds"].shape == (k,)
    assert lam.shape == (k,) and X.shape == (k, n) and res.shape == (k,), (lam.shape, X.shape)
    assert f.attrs["status"] == "converged", f.attrs["status"]
    assert f.attrs["task"] == "eigs" and f.attrs["method"] == "lanczos"
    for a in ("tolerance", "iterations", "precision", "device", "tcsolve_version", "matrix",
              "matrix_checksum", "time_read", "time_preprocess", "time_solve", "time_write",
              "certified", "certificate", "transform", "convergence_test", "time_verify"):
        assert a in f.attrs, a
    h = f["history"]
    m = h["iteration"].shape[0]
    assert m >= 1 and h["residual_norms"].shape[0] == m and h["converged"].shape == (m,)
i = np.arange(1, nx + 1)[:, None]
j = np.arange(1, ny + 1)[None, :]
exact = np.sort((4 - 2 * np.cos(i * np.pi / (nx + 1)) - 2 * np.cos(j * np.pi / (ny + 1))).ravel())[:k]
assert np.allclose(lam, exact, atol=1e-6), (lam, exact)
R = A @ X.T - X.T * lam  # columns: A x_j - lambda_j x_j
true_res = np.linalg.norm(R, axis=0)
assert np.all(true_res < 2e-7), true_res
assert np.allclose(true_res, res, rtol=1e-3, atol=1e-12), (true_res, res)

# solve: right-hand sides from a dataset [s][n]; /solution [s][n]
s = 3
rng = np.random.default_rng(5)
B = rng.standard_normal((s, n))
with h5py.File(f"{work}/rhs.h5", "w") as f:
    f["B"] = B
run("solve", spec, "--rhs", f"{work}/rhs.h5:B", "--device", "cpu", "--out", f"{work}/solve.h5", "-q")
with h5py.File(f"{work}/solve.h5", "r") as f:
    Xs = f["solution"][:]
    rs = f["residual_norms"][:]
    assert Xs.shape == (s, n) and rs.shape == (s,)
    assert f.attrs["status"] == "converged" and f.attrs["task"] == "solve"
rel = np.linalg.norm(B.T - A @ Xs.T, axis=0) / np.linalg.norm(B, axis=1)
assert np.all(rel <= 1.01e-8), rel
print("ok: eigs and solve results read back with h5py; residuals recomputed with scipy")
