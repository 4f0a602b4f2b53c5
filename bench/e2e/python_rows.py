#!/usr/bin/env python3
"""The Python rows of the end-to-end benchmark (issue 16), as a SciPy/CuPy user calls them.

gpu: tcsolve.cg(A, B, rtol=1e-8) with CuPy inputs (lap3d:80, 512,000 rows, 32 columns): the first
     call in the process (which creates the CUDA handles) and the next calls (median of 3), against
     32 × cupyx.scipy.sparse.linalg.cg on the same GPU; residuals checked.
cpu: tcsolve.eigsh(A, k, which) against scipy.sparse.linalg.eigsh with the same which and tol on
     the shared real matrices (graph Laplacians, stiffness matrices, a structure); where SciPy needs
     sigma to converge (stiffness matrices, smallest) its sigma=0 call is the anchor. Values checked
     against dense LAPACK (n ≤ 4000) or SciPy's shift-invert.
usage: python_rows.py gpu|cpu [OUT.json]
"""
import json
import os
import sys
import time

import numpy as np
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as sla

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_e2e import lap, matrices_dir  # noqa: E402


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def gpu_rows():
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    import tcsolve
    a = lap(3, 80)
    ag = csp.csr_matrix(a)
    rng = np.random.default_rng(7)
    b = cp.asarray(rng.uniform(-1, 1, size=(a.shape[0], 32)))
    cp.cuda.Device().synchronize()
    rows = []

    def ours():
        x, info = tcsolve.cg(ag, b, rtol=1e-8)
        cp.cuda.Device().synchronize()
        return x, info
    t_first, (x, info) = timed(ours)
    warm = []
    for _ in range(3):
        t, (x, info) = timed(ours)
        warm.append(t)
    rel = float(cp.max(cp.linalg.norm(b - ag @ x, axis=0) / cp.linalg.norm(b, axis=0)))
    x_, info_, res = tcsolve.cg(ag, b, rtol=1e-8, return_info=True)
    csla.cg(ag, b[:, 0], rtol=1e-2)  # CuPy's first call compiles its kernels: not timed
    cp.cuda.Device().synchronize()

    def theirs():
        xs = [csla.cg(ag, b[:, j], rtol=1e-8, maxiter=20000)[0] for j in range(32)]
        cp.cuda.Device().synchronize()
        return cp.stack(xs, axis=1)
    t_cupy, xc = timed(theirs)
    rel_c = float(cp.max(cp.linalg.norm(b - ag @ xc, axis=0) / cp.linalg.norm(b, axis=0)))
    rows.append({"row": "python_cg_cupy_lap3d80_32", "first_call": t_first, "warm_median": float(np.median(warm)),
                 "warm": warm, "info": int(info), "max_rel_residual": rel, "iterations": int(res.iterations),
                 "time_setup": res.time_setup, "time_solve": res.time_solve,
                 "cupy_cg_x32": t_cupy, "cupy_max_rel_residual": rel_c,
                 "speedup_warm": t_cupy / float(np.median(warm)), "answer_ok": bool(rel <= 1.01e-8 and info == 0),
                 "target": 0.25})
    return rows


CPU_CASES = [
    # name, loader, k, which, scipy_sigma (None: same which)
    ("crack_lap", "crack:laplacian", 8, "SA", None),
    ("fe4elt2_lap", "fe_4elt2:laplacian", 8, "SA", None),
    ("whitaker3_lap", "whitaker3:laplacian", 8, "SA", None),
    ("3elt_lap", "3elt:laplacian", 8, "SA", None),
    ("bcsstk21", "bcsstk21", 10, "SA", 0.0),
    ("bcsstk10", "bcsstk10", 10, "SA", 0.0),
    ("bcsstk19", "bcsstk19", 10, "SA", 0.0),
    ("dwt_2680", "dwt_2680", 10, "SA", None),
    ("1138_bus_LA", "1138_bus", 10, "LA", None),
    ("662_bus_SA", "662_bus", 6, "SA", None),
]


def load_case(spec):
    if spec.endswith(":laplacian"):
        from scipy.sparse.csgraph import laplacian
        w = sio.mmread(os.path.join(matrices_dir(), spec.split(":")[0] + ".mtx")).tocsr()
        w.data[:] = 1.0
        w = ((w + w.T) > 0).astype(float)
        w.setdiag(0)
        w.eliminate_zeros()
        return laplacian(w).tocsr()
    return sio.mmread(os.path.join(matrices_dir(), spec + ".mtx")).tocsr()


REPS = int(os.environ.get("REPS", "7"))


def cpu_rows():
    import tcsolve
    rows = []
    tcsolve.eigsh(lap(2, 20), k=2, which="SA")  # import-time work and the engine rates' first use
    for name, spec, k, which, sigma in CPU_CASES:
        a = load_case(spec)
        n = a.shape[0]
        if n <= 4000:
            import scipy.linalg as sl
            ref = np.sort(sl.eigh(a.toarray(), eigvals_only=True))
            ref = ref[:k] if which == "SA" else ref[::-1][:k]
        else:
            s0 = -1e-6 * float(abs(a).sum(axis=1).max())
            ref = np.sort(sla.eigsh(a, k=k, sigma=s0, which="LM", tol=1e-12, return_eigenvectors=False))
        scale = max(1.0, float(np.max(np.abs(ref))))
        kw = dict(k=k, tol=1e-8)
        if sigma is None:
            kw["which"] = which
        else:
            kw.update(sigma=sigma, which="LM")
        # Interleaved, REPS of each (milliseconds each: the 2-core machine's noise moves single runs).
        ts, tsc = [], []
        for _ in range(REPS):
            t, (w, v, info) = timed(lambda: tcsolve.eigsh(a, k=k, which=which, tol=1e-8, device="cpu",
                                                          return_info=True))
            ts.append(t)
            t, ws = timed(lambda: sla.eigsh(a, return_eigenvectors=False, **kw))
            tsc.append(t)
        w = np.sort(w)[:: (1 if which == "SA" else -1)]
        err = float(np.max(np.abs(np.sort(w) - np.sort(ref)))) / scale
        err_s = float(np.max(np.abs(np.sort(ws) - np.sort(ref)))) / scale
        rows.append({"row": name, "n": n, "k": k, "which": which, "tcsolve_s": float(np.median(ts)),
                     "scipy_s": float(np.median(tsc)), "scipy_call": "sigma=%g" % sigma if sigma is not None else which,
                     "ratio": float(np.median(ts) / np.median(tsc)), "err": err, "scipy_err": err_s,
                     "status": info.status, "method": info.method, "transform": info.transform,
                     "verification": info.verification, "plan": info.method_reason,
                     "answer_ok": bool(err <= 1e-7 and info.status == "converged")})
        r = rows[-1]
        print(f"{name:14s} n {n:7d} tcsolve {r['tcsolve_s']:.4f} s  scipy({r['scipy_call']}) {r['scipy_s']:.4f} s  "
              f"ratio {r['ratio']:.2f}  err {err:.1e}  {info.method}/{info.transform}/{info.verification}", flush=True)
    return rows


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "gpu"
    out = sys.argv[2] if len(sys.argv) > 2 else None
    rows = gpu_rows() if what == "gpu" else cpu_rows()
    for r in rows:
        print(json.dumps(r, default=float))
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1, default=float)
