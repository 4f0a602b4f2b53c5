#!/usr/bin/python3
"""The CPU SpMM and Chebyshev step rows of docs/performance.md, with SciPy's A @ X in the same session.

    /usr/bin/python3 bench/cpu_spmm_scipy.py [--build build] [--runs 7] [--cols 24,32] [--out FILE] SPEC...

Per matrix: runs build/bench/cpu_spmm_bench (tcsolve's CPU operator and fused step against a
multithreaded copy measured in the same rounds, medians), writes the matrix once with
`tcsolve generate SPEC FILE.h5` and times SciPy's `A @ X` on it for each column count: X
C-ordered (numpy's default: n x k row-major, SciPy's csr_matvecs reads it row by row) and
F-ordered (tcsolve's layout), median of the same number of runs after 2 warm-ups, single-threaded
as SciPy is. The bytes are the same formula (12 nnz + 8 rows + 16 rows k). Prints a table and,
with --out, writes the rows as JSON lines. `uptime`'s load is recorded before and after.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
import scipy
import scipy.sparse as sp


def load(build, spec, tmp):
    path = os.path.join(tmp, "a.h5")
    subprocess.run([os.path.join(build, "apps", "tcsolve"), "generate", spec, path], check=True,
                   stdout=subprocess.DEVNULL)
    with h5py.File(path, "r") as f:
        g = f["matrix"]
        n, m = (int(v) for v in g.attrs["shape"])
        a = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=(n, m))
    os.remove(path)
    return a


def median_time(fn, runs):
    for _ in range(2):
        fn()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return float(np.median(t)), float(min(t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cols", default="24,32")
    ap.add_argument("--out")
    ap.add_argument("specs", nargs="+")
    o = ap.parse_args()
    cols = [int(c) for c in o.cols.split(",")]
    rows = []
    load_before = os.getloadavg()
    bench = os.path.join(o.build, "bench", "cpu_spmm_bench")
    for spec in o.specs:
        out = subprocess.run([bench, "--runs", str(o.runs), "--cols", o.cols, spec], check=True,
                             capture_output=True, text=True).stdout
        tc = [json.loads(l[5:]) for l in out.splitlines() if l.startswith("JSON ")]
        rows += tc
        with tempfile.TemporaryDirectory() as tmp:
            a = load(o.build, spec, tmp)
        n = a.shape[0]
        rng = np.random.default_rng(1)
        for k in cols:
            copy = next(r for r in tc if r["cols"] == k and r["kernel"] == "copy")
            nbytes = 12.0 * a.nnz + 8.0 * n + 16.0 * n * k
            for order in "CF":
                x = np.asarray(rng.standard_normal((n, k)), order=order)
                med, best = median_time(lambda: a @ x, o.runs)
                rows.append({"matrix": spec, "rows": n, "nnz": int(a.nnz), "cols": k,
                             "kernel": "scipy A@X (%s-order X)" % order, "ms": 1e3 * med, "best_ms": 1e3 * best,
                             "bytes": nbytes, "gbs": nbytes / med * 1e-9, "copy_gbs": copy["copy_gbs"],
                             "threads": 1, "scipy": scipy.__version__})
    load_after = os.getloadavg()
    print("load average before %.2f, after %.2f (2 CPUs)" % (load_before[0], load_after[0]))
    print("%-18s %8s %9s %3s %-24s %9s %9s %7s %7s %7s" % ("matrix", "rows", "nnz", "k", "kernel", "ms",
                                                         "best ms", "GB/s", "copy", "of copy"))
    for r in rows:
        print("%-18s %8d %9d %3d %-24s %9.3f %9.3f %7.2f %7.2f %6.0f%%" % (
            r["matrix"], r["rows"], r["nnz"], r["cols"], r["kernel"], r["ms"], r["best_ms"], r["gbs"],
            r["copy_gbs"], 100 * r["gbs"] / r["copy_gbs"]))
    if o.out:
        with open(o.out, "w") as f:
            f.write(json.dumps({"load_before": load_before, "load_after": load_after,
                                "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
