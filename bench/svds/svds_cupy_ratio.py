#!/usr/bin/env python3
"""Issue 44's GPU row in one run: `tcsolve svds SPEC --k K --center --json` (the whole command's
wall clock and its phases, REPS runs after a warm-up run) against cupyx.scipy.sparse.linalg.svds
on the same matrix (written once by `tcsolve generate` to HDF5, read by h5py, uploaded), k = K.

CuPy is given the centered operator as a LinearOperator (x -> A x - 1 (mu^T x), y -> A^T y -
mu (1^T y)) when its svds takes one, else the uncentered A (said in the output). Each CuPy
answer is checked by its true residuals max_j ||A v_j - s_j u_j|| / s_1 and the same for A^T,
and its values against tcsolve's. CuPy's time excludes reading and uploading the matrix (its
best case); a warm-up call on a small matrix loads its kernels first.

usage: svds_cupy_ratio.py TCSOLVE WORKDIR [SPEC] [K] [REPS]
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def command(tcsolve, spec, k, reps):
    cmd = [tcsolve, "svds", spec, "--k", str(k), "--center", "--json"]
    walls, runs = [], []
    for i in range(reps + 1):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        w = time.perf_counter() - t0
        try:
            d = json.loads(p.stdout)
        except json.JSONDecodeError:
            d = {"status": f"exit {p.returncode}", "message": p.stderr[-600:]}
        print(f"tcsolve run {i}: wall {w:.2f} s status {d.get('status')} seconds {d.get('seconds')}", flush=True)
        if i == 0:
            print("  kernel:", d.get("kernel"), "|", str(d.get("kernel_reason"))[:600], flush=True)
        if i > 0:
            walls.append(w)
            runs.append(d)
    return statistics.median(walls), runs[-1]


def cupy_svds(h5, k, tol):
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    import h5py
    import scipy.sparse as sp
    t0 = time.perf_counter()
    with h5py.File(h5, "r") as f:
        g = f["matrix"]
        a = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
    ag = csp.csr_matrix(a)
    m, n = a.shape
    mu = cp.asarray(np.asarray(a.mean(axis=0)).ravel())
    del a
    cp.cuda.Device().synchronize()
    print(f"cupy: read and upload {time.perf_counter() - t0:.1f} s ({ag.nnz} entries)", flush=True)
    agt = ag.T.tocsr()
    ones = cp.ones(m)

    def mv(x):
        x = x.ravel()
        return ag @ x - ones * (mu @ x)

    def rmv(y):
        y = y.ravel()
        return agt @ y - mu * (ones @ y)

    op = csla.LinearOperator((m, n), matvec=mv, rmatvec=rmv, dtype=np.float64)
    small = csp.random(2000, 300, density=0.05, format="csr", dtype=np.float64)
    csla.svds(small, k=6)  # kernels loaded
    for what, arg in (("centered (LinearOperator)", op), ("uncentered A", ag)):
        try:
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            u, s, vt = csla.svds(arg, k=k, tol=tol)
            cp.cuda.Device().synchronize()
            t = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 (CuPy's refusal is a result)
            print(f"cupy svds {what}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        order = cp.argsort(-s)
        u, s, vt = u[:, order], s[order], vt[order]
        if what.startswith("centered"):
            av = cp.stack([mv(vt[j]) for j in range(k)], axis=1)
            atu = cp.stack([rmv(u[:, j]) for j in range(k)], axis=1)
        else:
            av = ag @ vt.T
            atu = agt @ u
        r1 = float(cp.max(cp.linalg.norm(av - u * s, axis=0)) / s[0])
        r2 = float(cp.max(cp.linalg.norm(atu - vt.T * s, axis=0)) / s[0])
        print(f"cupy svds {what}: {t:.2f} s, s1 {float(s[0]):.10g} s_k {float(s[-1]):.10g}, "
              f"max residual / s1: A v {r1:.2e}, A^T u {r2:.2e}", flush=True)
        return what, t, cp.asnumpy(s), max(r1, r2)
    return None, None, None, None


def main():
    tcsolve, work = sys.argv[1], sys.argv[2]
    spec = sys.argv[3] if len(sys.argv) > 3 else "gen:counts:1000000:30000"
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    reps = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    wall, d = command(tcsolve, spec, k, reps)
    sec = d.get("seconds", {})
    print(f"tcsolve: median wall {wall:.2f} s over {reps}; solve {sec.get('solve')} s; status {d.get('status')}", flush=True)
    h5 = os.path.join(work, "svds_matrix.h5")
    t0 = time.perf_counter()
    subprocess.run([tcsolve, "generate", spec, h5, "-q"], check=True, timeout=900)
    print(f"matrix written in {time.perf_counter() - t0:.1f} s", flush=True)
    what, t, s, res = cupy_svds(h5, k, 1e-8)
    os.remove(h5)
    if t is None:
        print("RESULT cupy svds failed on both forms", flush=True)
        return
    sv = np.array(d.get("singular_values") or [])
    if what.startswith("centered") and len(sv) == len(s):
        print(f"values: max |s_cupy - s_tcsolve| / s1 = {np.max(np.abs(s - sv)) / sv[0]:.2e}", flush=True)
    print(f"RESULT cupy {what} {t:.2f} s (residual {res:.1e}); tcsolve command wall {wall:.2f} s "
          f"(cupy/command {t / wall:.2f}x), tcsolve solve {sec.get('solve')} s "
          f"(cupy/solve {t / max(1e-9, float(sec.get('solve') or 1e-9)):.1f}x)", flush=True)


if __name__ == "__main__":
    main()
