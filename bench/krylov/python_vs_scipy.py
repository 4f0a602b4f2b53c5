#!/usr/bin/env python3
"""Issue 43's CPU row through Python: tcsolve.spsolve / gmres / minres against SciPy's on the
square matrices of ../shared/matrices/general, in one process, one right-hand side (b = A·x_true,
x_true uniform in [-1, 1)). Per call: the median of REPS timed calls after one warm-up, the true
relative residual, and 'wrong' = a call that reports success (info 0, or spsolve without a
warning) with a true residual above its tolerance (×10 for rounding). gmres: rtol 1e-8,
restart 30, maxiter 100 cycles; minres (symmetric ones): rtol 1e-8, maxiter 5n.
usage: PYTHONPATH=build/python /usr/bin/python3 bench/krylov/python_vs_scipy.py [MATRICES_DIR] [REPS]"""
import os
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve


def load(path):
    if path.endswith(".rua"):
        from scipy.io import hb_read
        return sp.csr_matrix(hb_read(path))
    return sp.csr_matrix(sio.mmread(path))


def timed(fn, reps):
    out = None
    for _ in range(1):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = fn()
    ts = []
    for _ in range(reps):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            out = fn()
            ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out, len(w) > 0


def rel(a, x, b):
    x = np.asarray(x).ravel()
    if not np.all(np.isfinite(x)):
        return float("inf")
    return float(np.linalg.norm(b - a @ x) / np.linalg.norm(b))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../../shared/matrices/general")
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rows = []
    for f in sorted(os.listdir(root)):
        if not f.endswith((".mtx", ".rua")):
            continue
        try:
            a = load(os.path.join(root, f))
        except Exception as e:  # (SciPy's Harwell-Boeing reader refuses 1P-scaled formats)
            print(f"{f:28s} skipped: SciPy cannot read it ({str(e)[:50]})")
            continue
        if a.shape[0] != a.shape[1]:
            continue
        n = a.shape[0]
        sym = abs(a - a.T).max() == 0
        xt = np.random.default_rng(3).uniform(-1, 1, n)
        b = a @ xt
        calls = [("spsolve", lambda: tcsolve.spsolve(a, b), lambda: sl.spsolve(a.tocsc(), b), 1e-10)]
        calls.append(("gmres", lambda: tcsolve.gmres(a, b, rtol=1e-8, restart=30, maxiter=100),
                      lambda: sl.gmres(a, b, tol=1e-8, atol=0, restart=30, maxiter=100), 1e-8))
        if sym:
            calls.append(("minres", lambda: tcsolve.minres(a, b, rtol=1e-8, maxiter=5 * n),
                          lambda: sl.minres(a, b, tol=1e-8, maxiter=5 * n), 1e-8))
        for name, ours, theirs, tol in calls:
            r = {}
            for who, fn in (("tcsolve", ours), ("scipy", theirs)):
                try:
                    t, out, warned = timed(fn, reps)
                except Exception as e:  # an error is an answer too: it is not a wrong one
                    r[who] = (float("nan"), float("nan"), f"error: {str(e)[:60]}")
                    continue
                x, info = (out, 0) if name == "spsolve" else (out[0], out[1])
                res = rel(a, x, b)
                ok = (info == 0 and not warned) if name == "spsolve" else info == 0
                state = "ok" if ok else (f"info {info}" if name != "spsolve" else "warned")
                if ok and res > 10 * tol:
                    state = "WRONG"
                r[who] = (t, res, state)
            ratio = r["tcsolve"][0] / r["scipy"][0] if r["scipy"][0] == r["scipy"][0] else float("nan")
            rows.append((f, n, name, r, ratio))
            print(f"{f:28s} {n:6d} {name:8s} tcsolve {r['tcsolve'][0]*1e3:8.2f} ms res {r['tcsolve'][1]:.1e} "
                  f"{r['tcsolve'][2]:10s} scipy {r['scipy'][0]*1e3:8.2f} ms res {r['scipy'][1]:.1e} "
                  f"{r['scipy'][2]:10s} ratio {ratio:5.2f}", flush=True)
    wrong = sum(1 for row in rows if row[3]["tcsolve"][2] == "WRONG")
    print(f"tcsolve calls labelled successful but wrong: {wrong} of {len(rows)}")


if __name__ == "__main__":
    main()
