#!/usr/bin/env python3
"""End-to-end benchmark of the path users run (issue 16): `tcsolve eigs|solve|batch` with default
options, and the Python calls, on a fixed table; CuPy and SciPy on the same machine; every answer
checked (closed forms, dense LAPACK, or an independent shift-invert run).

For each row: the process wall time, the command's --json phases (read, preprocess, plan, setup,
solve, verify, write, total), the plan it chose with its predicted seconds (the prediction is
compared with the measured plan + setup + solve + verify; seconds.operator, the operator's
build before the plan, is reported apart), and the anchors.

usage: run_e2e.py TCSOLVE OUTDIR [--rows a,b,...] [--no-anchors] [--skip-reference]
  TCSOLVE   the tcsolve binary;  OUTDIR  scratch files and results (e2e.json, e2e.csv)
Rows are named as in ROWS below. Anchors run in child processes with a time limit each.
Matrices of the shared collection are read from $TCSOLVE_MATRICES (or ../shared/matrices/suitesparse).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable

# ---- matrices ------------------------------------------------------------------------------------


def lap(dim, n):
    t = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    i = sp.identity(n, format="csr")
    if dim == 2:
        return (sp.kron(t, i) + sp.kron(i, t)).tocsr()
    return (sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t)).tocsr()


def lap_exact(dim, n, k, largest=False):
    e = 2 - 2 * np.cos(np.pi * np.arange(1, n + 1) / (n + 1))
    if largest:
        e = e[::-1]
    m = min(n, k)
    if dim == 2:
        s = (e[:m, None] + e[None, :m]).ravel()
    else:
        s = (e[:m, None, None] + e[None, :m, None] + e[None, None, :m]).ravel()
    s = np.sort(s)
    return (s[::-1] if largest else s)[:k]


def matrices_dir():
    d = os.environ.get("TCSOLVE_MATRICES")
    if d and os.path.isdir(d):
        return d
    return os.path.join(HERE, "..", "..", "..", "shared", "matrices", "suitesparse")


def graph_laplacian_file(name, out, mdir=None):
    """Graph Laplacian L = D − W of a pattern matrix of the shared collection (in mdir, else
    matrices_dir()), written once."""
    path = os.path.join(out, f"{name}_laplacian.mtx")
    if not os.path.exists(path):
        from scipy.sparse.csgraph import laplacian
        w = sio.mmread(os.path.join(mdir or matrices_dir(), name + ".mtx")).tocsr()
        w.data[:] = 1.0
        w = ((w + w.T) > 0).astype(float)
        w.setdiag(0)
        w.eliminate_zeros()
        sio.mmwrite(path, laplacian(w).tocsr(), symmetry="symmetric")
    return path


# ---- the table -------------------------------------------------------------------------------------
# kind: eigs | solve | batch; spec: the MATRIX argument (a path is resolved at run time);
# ref: how the answer is checked: ("lap", dim, n) closed form, "dense" LAPACK, "si" an independent
# shift-invert run (tcsolve --sigma), "scipy-si" SciPy's eigsh(sigma) (graphs).
ROWS = [
    # name, kind, spec, extra args, k, which, ref, target seconds (issue 16, H200)
    ("lap3d64_k256", "eigs", "gen:lap3d:64", [], 256, "smallest", ("lap", 3, 64), 1.0),
    ("elast3d40_k10", "eigs", "gen:elast3d:40", [], 10, "smallest", "si", 1.0),
    ("lap2d200_k16", "eigs", "gen:lap2d:200", [], 16, "smallest", ("lap", 2, 200), 0.08),
    ("lap2d1000_k32", "eigs", "gen:lap2d:1000", [], 32, "smallest", ("lap", 2, 1000), 2.8),
    ("lap3d100_k16_largest", "eigs", "gen:lap3d:100", [], 16, "largest", ("lap", 3, 100), 0.40),
    ("lap3d100_k16", "eigs", "gen:lap3d:100", [], 16, "smallest", ("lap", 3, 100), 0.40),
    ("lap3d100_k64", "eigs", "gen:lap3d:100", [], 64, "smallest", ("lap", 3, 100), 1.0),
    ("solve_lap3d100_32", "solve", "gen:lap3d:100", ["--rhs", "random:32"], 32, "", None, 0.60),
    ("solve_lap3d100_128", "solve", "gen:lap3d:100", ["--rhs", "random:128"], 128, "", None, 1.6),
    ("batch12_lap2d200", "batch", "gen:lap2d:200", [], 16, "largest", ("lap", 2, 200), 1.0),
    # the shared collection: stiffness matrices, a generalized pair, graphs, structures
    ("bcsstk21_k10", "eigs", "bcsstk21", [], 10, "smallest", "dense", None),
    ("bcsstk10_k10", "eigs", "bcsstk10", [], 10, "smallest", "dense", None),
    ("bcsstk19_m19_k10", "eigs", "bcsstk19", ["--mass", "bcsstm19"], 10, "smallest", "dense", None),
    ("dwt2680_k10", "eigs", "dwt_2680", [], 10, "smallest", "dense", None),
    ("crack_lap_k8", "eigs", "crack:laplacian", [], 8, "smallest", "scipy-si", None),
    ("fe4elt2_lap_k8", "eigs", "fe_4elt2:laplacian", [], 8, "smallest", "scipy-si", None),
    ("luxembourg_lap_k8", "eigs", "luxembourg:laplacian", [], 8, "smallest", "scipy-si", None),
    ("1138bus_k10_largest", "eigs", "1138_bus", [], 10, "largest", "dense", None),
]


def resolve(spec, out):
    if spec.startswith("gen:"):
        return spec
    if spec.endswith(":laplacian"):
        return graph_laplacian_file(spec.split(":")[0], out)
    return os.path.join(matrices_dir(), spec + ".mtx")


def matrix_file(spec, out):
    """A Matrix Market file of the matrix (anchors and references read it)."""
    if not spec.startswith("gen:"):
        return resolve(spec, out)
    path = os.path.join(out, spec.replace(":", "_") + ".mtx")
    if not os.path.exists(path):
        subprocess.run([ARGS.tcsolve, "generate", spec, path], check=True, capture_output=True)
    return path


def load(spec, out):
    """The matrix as SciPy CSR (for references and checks)."""
    if spec.startswith("gen:lap2d:"):
        return lap(2, int(spec.split(":")[2]))
    if spec.startswith("gen:lap3d:"):
        return lap(3, int(spec.split(":")[2]))
    return sio.mmread(matrix_file(spec, out)).tocsr()


# ---- running -----------------------------------------------------------------------------------------


def run_cli(args, timeout=600):
    t0 = time.perf_counter()
    p = subprocess.run([ARGS.tcsolve] + args, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    return p, wall


def run_child(code, payload, timeout):
    """Anchors and references in a child process with a time limit; returns its JSON or an error."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run([PY, "-c", code, json.dumps(payload)], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:160]}
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except Exception:  # noqa
        return {"error": "no result"}
    out.setdefault("wall", time.perf_counter() - t0)
    return out


CHILD_COMMON = r"""
import json, sys, time
import numpy as np, scipy.io as sio, scipy.sparse as sp
a = json.loads(sys.argv[1])
def mat(p):
    return sio.mmread(p).tocsr()
"""

SCIPY_EIGSH = CHILD_COMMON + r"""
import scipy.sparse.linalg as sla
A = mat(a["file"]); M = mat(a["mass"]) if a.get("mass") else None
kw = dict(k=a["k"], tol=a["tol"])
if a.get("sigma") is not None: kw.update(sigma=a["sigma"], which="LM")
else: kw.update(which="LA" if a["which"] == "largest" else "SA")
t0 = time.perf_counter(); w = sla.eigsh(A, M=M, return_eigenvectors=False, **kw); t = time.perf_counter() - t0
w = np.sort(w)
if a["which"] == "largest": w = w[::-1]
print(json.dumps({"seconds": t, "values": w.tolist()}))
"""

CUPY_EIGSH = CHILD_COMMON + r"""
import cupy as cp, cupyx.scipy.sparse as csp, cupyx.scipy.sparse.linalg as csla
A = csp.csr_matrix(mat(a["file"]))
csla.eigsh(csp.csr_matrix(sp.identity(64, format="csr") * 2.0), k=2); cp.cuda.Device().synchronize()  # warm
t0 = time.perf_counter(); w = csla.eigsh(A, k=a["k"], which="LA" if a["which"] == "largest" else "SA",
                                         tol=a["tol"], return_eigenvectors=False)
cp.cuda.Device().synchronize(); t = time.perf_counter() - t0
w = np.sort(cp.asnumpy(w))
if a["which"] == "largest": w = w[::-1]
print(json.dumps({"seconds": t, "values": w.tolist()}))
"""

CUPY_CG = CHILD_COMMON + r"""
import cupy as cp, cupyx.scipy.sparse as csp, cupyx.scipy.sparse.linalg as csla
A = csp.csr_matrix(mat(a["file"]))
rng = np.random.default_rng(7); B = cp.asarray(rng.uniform(-1, 1, size=(A.shape[0], a["s"])))
csla.cg(A, B[:, 0], rtol=1e-2); cp.cuda.Device().synchronize()  # warm
t0 = time.perf_counter()
X = cp.stack([csla.cg(A, B[:, j], rtol=a["tol"], maxiter=20000)[0] for j in range(a["s"])], axis=1)
cp.cuda.Device().synchronize(); t = time.perf_counter() - t0
rel = float(cp.max(cp.linalg.norm(B - A @ X, axis=0) / cp.linalg.norm(B, axis=0)))
print(json.dumps({"seconds": t, "max_rel_residual": rel}))
"""

DENSE_REF = CHILD_COMMON + r"""
import scipy.linalg as sl
A = mat(a["file"]).toarray(); M = mat(a["mass"]).toarray() if a.get("mass") else None
w = sl.eigh(A, M, eigvals_only=True)
w = np.sort(w)
if a["which"] == "largest": w = w[::-1]
print(json.dumps({"values": w[: a["k"]].tolist()}))
"""


def ref_values(row, out, js_k):
    name, kind, spec, extra, k, which, ref, _ = row
    if ref is None:
        return None, ""
    if isinstance(ref, tuple) and ref[0] == "lap":
        return lap_exact(ref[1], ref[2], k, which == "largest"), "closed form"
    path = matrix_file(spec, out)
    mass = None
    if "--mass" in extra:
        mass = resolve(extra[extra.index("--mass") + 1], out)
    if ref == "dense":
        r = run_child(DENSE_REF, {"file": path, "mass": mass, "k": k, "which": which}, 300)
        return (np.array(r["values"]) if "values" in r else None), "dense LAPACK" + (f" ({r['error']})" if "error" in r else "")
    if ref == "scipy-si":
        a = load(spec, out)
        sigma = -1e-6 * float(abs(a).sum(axis=1).max())
        r = run_child(SCIPY_EIGSH, {"file": path, "mass": mass, "k": k, "which": which, "tol": 1e-12,
                                    "sigma": sigma}, 300)
        return (np.array(r["values"]) if "values" in r else None), "SciPy eigsh(sigma) shift-invert" + (f" ({r['error']})" if "error" in r else "")
    if ref == "si":
        if ARGS.skip_reference:
            return None, "skipped (--skip-reference)"
        p, _ = run_cli(["eigs", spec, "--k", str(k), "--sigma", "0", "--method", "lanczos", "--no-recheck",
                        "--json"], timeout=400)
        try:
            j = json.loads(p.stdout.splitlines()[0])
            return np.array(j["eigenvalues"]), "independent shift-invert run (tcsolve --sigma 0)"
        except Exception:  # noqa
            return None, "shift-invert reference failed: " + p.stderr[-200:]
    return None, "no reference"


def check_values(vals, ref, scale):
    if ref is None or vals is None or len(vals) != len(ref):
        return None
    return float(np.max(np.abs(np.sort(vals) - np.sort(ref))) / max(scale, 1e-300))


def eigs_row(row, out):
    name, kind, spec, extra, k, which, ref, target = row
    args = ["eigs", resolve(spec, out), "--k", str(k)] + [resolve(x, out) if i > 0 and extra[i - 1] == "--mass" else x
                                                          for i, x in enumerate(extra)]
    if which != "smallest":
        args += ["--which", which]
    p, wall = run_cli(args + ["--json"])
    res = {"row": name, "kind": kind, "wall": wall, "rc": p.returncode, "target": target}
    try:
        j = json.loads(p.stdout.splitlines()[0])
    except Exception:  # noqa
        res["error"] = (p.stderr or p.stdout)[-300:]
        return res
    s = j["seconds"]
    res.update(n=j["n"], status=j["status"], method=j["method"], transform=j["transform"],
               verification=j["verification"], certified=j["certified"], kernel=j["kernel"],
               seconds=s, predicted=j["predicted_seconds"],
               measured=s["plan"] + s["setup"] + s["solve"] + s["verify"],
               # (the operator's build precedes the plan and is in no plan's prediction)
               operator_build=s.get("operator", 0.0),
               plan=j["method_reason"], certificate=j["certificate"])
    vals = np.array(j["eigenvalues"])
    rv, how = ref_values(row, out, k)
    scale = max(1.0, float(np.max(np.abs(rv)))) if rv is not None else 1.0
    res["ref"] = how
    res["max_abs_error_rel"] = check_values(vals, rv, scale)
    res["answer_ok"] = res["max_abs_error_rel"] is not None and res["max_abs_error_rel"] <= 1e-7 and j["status"] == "converged"
    if not ARGS.no_anchors:
        path = matrix_file(spec, out)
        mass = resolve(extra[extra.index("--mass") + 1], out) if "--mass" in extra else None
        if mass is None and not (name == "lap3d64_k256"):  # CuPy's eigsh needs ncv > k: skip k = 256
            c = run_child(CUPY_EIGSH, {"file": path, "k": k, "which": which, "tol": 1e-8}, 60)
            res["cupy_eigsh"] = {"seconds": c.get("seconds"), "error": c.get("error"),
                                 "max_abs_error_rel": check_values(np.array(c["values"]), rv, scale) if "values" in c else None}
        if j["n"] <= 120000:
            # stiffness matrices (smallest): SciPy needs sigma to converge, its sigma=0 call is the anchor
            sigma = 0.0 if (spec.startswith("bcsstk") and which == "smallest") else None
            c = run_child(SCIPY_EIGSH, {"file": path, "mass": mass, "k": k, "which": which, "tol": 1e-8,
                                        "sigma": sigma}, 60)
            res["scipy_eigsh"] = {"seconds": c.get("seconds"), "error": c.get("error"), "sigma": sigma,
                                  "max_abs_error_rel": check_values(np.array(c["values"]), rv, scale) if "values" in c else None}
    return res


def splitmix64(x):
    x = (x + np.uint64(0x9E3779B97F4A7C15))
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def random_rhs(n, s, seed):
    """tcsolve's `random:S` right-hand sides (solvers/random.hpp), to check the solutions."""
    with np.errstate(over="ignore"):
        i = splitmix64(np.arange(n, dtype=np.uint64))
        cols = []
        for j in range(s):
            h = splitmix64(np.uint64(seed) ^ splitmix64((np.uint64(j) * np.uint64(0x100000001B3)) ^ i))
            cols.append((h >> np.uint64(11)).astype(np.float64) * (2.0 / 9007199254740992.0) - 1.0)
    return np.stack(cols, axis=1)


def solve_row(row, out):
    name, kind, spec, extra, s, _, _, target = row
    h5 = os.path.join(out, name + ".h5")
    p, wall = run_cli(["solve", spec] + extra + ["--json"])  # timed as a user runs it: no file
    res = {"row": name, "kind": kind, "wall": wall, "rc": p.returncode, "target": target}
    try:
        j = json.loads(p.stdout.splitlines()[0])
    except Exception:  # noqa
        res["error"] = (p.stderr or p.stdout)[-300:]
        return res
    res.update(n=j["n"], status=j["status"], kernel=j["kernel"], seconds=j["seconds"],
               iterations=j["iterations"], method=j["method"])
    # Independent check (a second, untimed run that writes the solutions): b − A·x with the same
    # random right-hand sides.
    try:
        import h5py
        run_cli(["solve", spec] + extra + ["--quiet", "--out", h5])
        a = load(spec, out)
        with h5py.File(h5, "r") as f:
            x = np.asarray(f["solution"]).T
        b = random_rhs(a.shape[0], s, 1 + 1000)
        rel = np.linalg.norm(b - a @ x, axis=0) / np.linalg.norm(b, axis=0)
        res["max_rel_residual"] = float(rel.max())
        res["answer_ok"] = bool(rel.max() <= 1.01e-8) and j["status"] == "converged"
    except Exception as e:  # noqa
        res["answer_ok"] = False
        res["check_error"] = str(e)[:200]
    if not ARGS.no_anchors:
        path = matrix_file(spec, out)
        c = run_child(CUPY_CG, {"file": path, "s": s, "tol": 1e-8}, 300)
        res["cupy_cg"] = c
    return res


def batch_row(row, out):
    name, kind, spec, extra, k, which, ref, target = row
    jobs = os.path.join(out, "batch12.jobs")
    with open(jobs, "w") as f:
        for seed in range(1, 13):
            f.write(f"[job.s{seed}]\ntask = eigs\nmatrix = {spec}\nk = {k}\nwhich = {which}\nseed = {seed}\n"
                    f"out = batch_s{seed}.h5\n\n")
    # results land under --output-dir: a job's out may not leave it (the batch's own guard)
    p, wall = run_cli(["batch", jobs, "--output-dir", out])
    res = {"row": name, "kind": kind, "wall": wall, "rc": p.returncode, "target": target,
           "output": (p.stdout + p.stderr)[-1500:]}
    ex = lap_exact(ref[1], ref[2], k, which == "largest")
    worst, ok = 0.0, p.returncode == 0
    try:
        import h5py
        for seed in range(1, 13):
            with h5py.File(f"{out}/batch_s{seed}.h5", "r") as f:
                v = np.sort(np.asarray(f["eigenvalues"]))[::-1]
                ok = ok and f.attrs["status"] == "converged"
                worst = max(worst, float(np.max(np.abs(v - ex))))
    except Exception as e:  # noqa
        ok = False
        res["check_error"] = str(e)[:200]
    res["max_abs_error_rel"] = worst / max(1.0, float(np.max(np.abs(ex))))
    res["answer_ok"] = bool(ok and res["max_abs_error_rel"] <= 1e-7)
    res["seconds"] = {"total": wall}
    print(res["output"][-1200:], flush=True)
    return res


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("tcsolve")
    ap.add_argument("outdir")
    ap.add_argument("--rows", default="")
    ap.add_argument("--no-anchors", action="store_true")
    ap.add_argument("--skip-reference", action="store_true")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.outdir, exist_ok=True)
    rows = [r for r in ROWS if not ARGS.rows or r[0] in ARGS.rows.split(",")]
    results = []
    for r in rows:
        t0 = time.perf_counter()
        try:
            res = {"eigs": eigs_row, "solve": solve_row, "batch": batch_row}[r[1]](r, ARGS.outdir)
        except Exception as e:  # noqa
            res = {"row": r[0], "error": repr(e)[:300]}
        res["bench_seconds"] = time.perf_counter() - t0
        results.append(res)
        s = res.get("seconds", {})
        print(f"{r[0]:24s} status {res.get('status', res.get('error', '?'))!s:14s} wall {res.get('wall', 0):7.3f} "
              f"total {s.get('total', 0):7.3f} (plan {s.get('plan', 0):.3f} setup {s.get('setup', 0):.3f} "
              f"solve {s.get('solve', 0):.3f} verify {s.get('verify', 0):.3f} init {s.get('init', 0):.3f} "
              f"process {s.get('process', 0):.3f}) predicted {res.get('predicted', 0):7.3f} "
              f"measured {res.get('measured', 0):7.3f} (operator {s.get('operator', 0):.3f}) {res.get('method', '')}/{res.get('transform', '')}/"
              f"{res.get('verification', '')} ok={res.get('answer_ok')} err={res.get('max_abs_error_rel')}",
              flush=True)
        with open(os.path.join(ARGS.outdir, "e2e.json"), "w") as f:
            json.dump(results, f, indent=1, default=float)
    return 0


ARGS = None
if __name__ == "__main__":
    sys.exit(main())
