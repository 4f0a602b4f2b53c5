#!/usr/bin/env python3
"""Issue 43's GPU rows, one run: `tcsolve solve SPEC --rhs random:32 --method M --json` (the whole
command's wall clock, median of 3 after one warm-up run) against 32 sequential cupyx.scipy
gmres / minres calls on the same matrix and 32 right-hand sides of the same kind (uniform in
[-1, 1)), rtol 1e-8, each CuPy answer checked by its true residual.

Rows (SPEC METHOD CUPY): gen:convdiff3d:100 gmres gmres, gen:helmholtz3d:100 minres minres; the
matrix is written once by `tcsolve generate` to HDF5 and read by h5py for CuPy. The command also
runs with --method auto (what a user gets by default). Then, in this process, tcsolve's Python
call on the same CuPy arrays (M='poly', all 32 columns at once) against the same 32 cupyx calls.
usage: krylov_cupy_ratio.py TCSOLVE WORKDIR [SPEC METHOD ...]
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def command(tcsolve, spec, method, reps=3):
    cmd = [tcsolve, "solve", spec, "--rhs", "random:32", "--tol", "1e-8", "--json"]
    if method != "auto":
        cmd += ["--method", method]
    walls, last = [], None
    for i in range(reps + 1):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        w = time.perf_counter() - t0
        try:
            last = json.loads(p.stdout)
        except json.JSONDecodeError:
            last = {"status": f"exit {p.returncode}", "message": p.stderr[-400:]}
        if i > 0:
            walls.append(w)
    return statistics.median(walls), last


def cupy_calls(h5, method, nrhs=32, seed=7):
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    import h5py
    import scipy.sparse as sp
    with h5py.File(h5, "r") as f:
        g = f["matrix"]
        a = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
    ag = csp.csr_matrix(a)
    b = cp.asarray(np.random.default_rng(seed).uniform(-1, 1, size=(a.shape[0], nrhs)))
    fn = csla.gmres if method == "gmres" else csla.minres
    kw = {"restart": 30, "maxiter": 1000} if method == "gmres" else {"maxiter": 30000}
    import inspect
    tkw = "rtol" if "rtol" in inspect.signature(fn).parameters else "tol"  # CuPy ≥ 13 renamed it
    fn(ag, b[:, 0], **{tkw: 1e-2}, **kw)  # compile
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    xs, infos = [], []
    for j in range(nrhs):
        x, info = fn(ag, b[:, j], **{tkw: 1e-8}, **kw)
        xs.append(x)
        infos.append(int(info))
    cp.cuda.Device().synchronize()
    t = time.perf_counter() - t0
    x = cp.stack(xs, axis=1)
    rel = float(cp.max(cp.linalg.norm(b - ag @ x, axis=0) / cp.linalg.norm(b, axis=0)))
    return t, rel, infos, ag, b


def module_call(ag, b, method, reps=3):
    """tcsolve's Python call in this process on the same CuPy arrays (zero-copy), all 32 columns at
    once with M='poly' (the command's polynomial; GMRES restart 30 as the command's): median of
    `reps` after one warm-up, and the worst true relative residual (CuPy's own product)."""
    import cupy as cp
    import tcsolve
    fn = getattr(tcsolve, method)
    kw = {"restart": 30} if method == "gmres" else {}
    times, x, info, res = [], None, None, None
    for i in range(reps + 1):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        x, info, res = fn(ag, b, rtol=1e-8, M="poly", return_info=True, **kw)
        cp.cuda.Device().synchronize()
        if i > 0:
            times.append(time.perf_counter() - t0)
    rel = float(cp.max(cp.linalg.norm(b - ag @ x, axis=0) / cp.linalg.norm(b, axis=0)))
    return statistics.median(times), rel, info, res


def main():
    tcsolve, work = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:] or ["gen:convdiff3d:100", "gmres", "gen:helmholtz3d:100", "minres"]
    os.makedirs(work, exist_ok=True)
    # The floor of any command: a trivial solve (process start, CUDA context, libraries, exit).
    t_floor, _ = command(tcsolve, "gen:lap3d:6", "cg")
    print(f"floor: tcsolve solve gen:lap3d:6 --rhs random:32: {t_floor:.3f} s wall (median of 3)", flush=True)
    for spec, method in zip(rest[0::2], rest[1::2]):
        h5 = os.path.join(work, spec.replace(":", "_") + ".h5")
        if not os.path.exists(h5):
            subprocess.run([tcsolve, "generate", spec, h5, "-q"], check=True)
        t_m, d_m = command(tcsolve, spec, method)
        no_auto = os.environ.get("I43_NO_AUTO") == "1"
        t_a, d_a = (t_m, d_m) if no_auto else command(tcsolve, spec, "auto")
        print(f"{spec}: tcsolve --method {method}: {t_m:.3f} s wall (median of 3), status {d_m.get('status')}, "
              f"iterations {d_m.get('iterations')}, max rel residual {max(d_m.get('residual_norms') or [np.nan]):.2e}, "
              f"solve {d_m.get('seconds', {}).get('solve')} s", flush=True)
        ph = d_m.get("seconds", {})
        print(f"{spec}: phases (s): " + ", ".join(f"{k} {v:.3f}" for k, v in ph.items() if isinstance(v, (int, float))),
              flush=True)
        print(f"{spec}: tcsolve (auto): {t_a:.3f} s wall, method {d_a.get('method')}, status {d_a.get('status')}, "
              f"plan: {str(d_a.get('method_reason'))[:300]}", flush=True)
        try:
            t_c, rel_c, infos, ag, b = cupy_calls(h5, method)
            print(f"{spec}: 32 x cupyx {method}: {t_c:.3f} s, max rel residual {rel_c:.2e}, infos {sorted(set(infos))}; "
                  f"ratio {t_c / t_m:.1f}x (explicit method), {t_c / t_a:.1f}x (auto)", flush=True)
        except Exception as e:  # noqa: BLE001 (report, go on)
            print(f"{spec}: cupyx {method} failed: {type(e).__name__}: {e}", flush=True)
            continue
        try:  # the same process: tcsolve's module on CuPy's arrays (no process start, no copy)
            t_p, rel_p, info_p, res_p = module_call(ag, b, method)
            print(f"{spec}: tcsolve.{method}(A, B, M='poly') in this process: {t_p:.3f} s (median of 3), info {info_p}, "
                  f"max rel residual {rel_p:.2e}, iterations {res_p.iterations}, setup {res_p.time_setup:.3f} s, solve {res_p.time_solve:.3f} s; "
                  f"ratio {t_c / t_p:.1f}x against the 32 cupyx calls", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"{spec}: tcsolve.{method} in this process failed: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
