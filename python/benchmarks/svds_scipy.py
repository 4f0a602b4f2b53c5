#!/usr/bin/python3
"""tcsolve.svds / tcsolve.pca against scipy.sparse.linalg.svds (ARPACK, PROPACK) in one process on
the CPU, on a count matrix written by `tcsolve generate gen:counts:CELLS:GENES FILE.h5`.

    PYTHONPATH=build/python /usr/bin/python3 python/benchmarks/svds_scipy.py FILE.h5 K [TOL ...]

For each tol (default: 0, SciPy's and tcsolve's default, and 1e-8): tcsolve.svds, SciPy's arpack and
propack on A; then centered (PCA): tcsolve.pca and SciPy's arpack on the LinearOperator A − 1·μᵀ
(matvec/rmatvec/matmat/rmatmat, as scanpy builds it). Printed: seconds of the call, the
singular values' largest difference from tcsolve's (relative to s_1) and each answer's residuals
max_j ‖A v_j − s_j u_j‖/s_1, ‖Aᵀ u_j − s_j v_j‖/s_1 recomputed here with SciPy's products.
"""
import os
import sys
import time

os.environ.setdefault("SCIPY_USE_PROPACK", "1")  # SciPy 1.10 hides PROPACK behind this flag
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as sla  # noqa: E402

import tcsolve  # noqa: E402


def residuals(fwd, bwd, u, s, vt):
    v = vt.T
    return (np.linalg.norm(fwd(v) - u * s, axis=0).max() / s.max(),
            np.linalg.norm(bwd(u) - v * s, axis=0).max() / s.max())


def timed(label, f, fwd, bwd, ref):
    t = time.perf_counter()
    try:
        u, s, vt = f()
    except Exception as e:  # noqa: BLE001 -- a failure is a result here
        print(f"  {label}: failed after {time.perf_counter() - t:.1f} s: {e}", flush=True)
        return None
    dt = time.perf_counter() - t
    order = np.argsort(s)[::-1]
    u, s, vt = u[:, order], s[order], vt[order]
    r1, r2 = residuals(fwd, bwd, u, s, vt)
    diff = "" if ref is None else f"; max |s - s_tcsolve|/s1 {np.abs(s - ref).max() / ref[0]:.1e}"
    print(f"  {label}: {dt:.2f} s; residuals/s1 {r1:.1e}, {r2:.1e}{diff}", flush=True)
    return s


def main():
    path, k = sys.argv[1], int(sys.argv[2])
    tols = [float(t) for t in sys.argv[3:]] or [0.0, 1e-8]
    with h5py.File(path, "r") as f:
        g = f["matrix"]
        a = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
    m, n = a.shape
    print(f"{path}: {m} x {n}, nnz {a.nnz} ({100 * a.nnz / m / n:.2f} %), k = {k}, "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    at = a.T.tocsr()
    fwd, bwd = (lambda x: a @ x), (lambda y: at @ y)
    mu = np.asarray(a.mean(axis=0)).ravel()
    ones = np.ones(m)
    centered = sla.LinearOperator(
        a.shape, dtype=np.float64, matvec=lambda x: a @ x - ones * (mu @ x),
        matmat=lambda x: a @ x - np.outer(ones, mu @ x), rmatvec=lambda y: at @ y - mu * y.sum(),
        rmatmat=lambda y: at @ y - np.outer(mu, y.sum(axis=0)))
    for tol in tols:
        print(f"plain, tol={tol:g}:", flush=True)
        info = {}

        def ours():
            u, s, vt, r = tcsolve.svds(a, k, tol=tol, device="cpu", return_info=True)
            info["r"] = r
            return u, s, vt
        ref = timed("tcsolve.svds", ours, fwd, bwd, None)
        r = info.get("r")
        if r is not None:
            print(f"    ({r.method}, {r.iterations} restarts, {r.operator_applies} applied columns; setup "
                  f"{r.time_setup:.2f} s, solve {r.time_solve:.2f} s, verify {r.time_verify:.2f} s)")
        for solver in ("arpack", "propack"):
            timed(f"scipy {solver}", lambda s=solver: sla.svds(a, k, tol=tol, solver=s, random_state=1),
                  fwd, bwd, ref)
        print(f"centered, tol={tol:g}:", flush=True)
        pc = {}

        def pca():
            p = tcsolve.pca(a, k, tol=tol, device="cpu")
            pc["p"] = p
            return p.info.u, p.info.singular_values, p.info.vt
        ref = timed("tcsolve.pca", pca, centered.matmat, centered.rmatmat, None)
        timed("scipy arpack (LinearOperator)", lambda: sla.svds(centered, k, tol=tol, random_state=1),
              centered.matmat, centered.rmatmat, ref)


if __name__ == "__main__":
    main()
