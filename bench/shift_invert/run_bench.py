#!/usr/bin/env python3
"""Shift-invert benchmark: `tcsolve eigs --which smallest` (auto: shift-invert Lanczos through
CHOLMOD, Sylvester-certified by MUMPS) against SciPy's eigsh(A, k, M, sigma=0) (shift-invert
ARPACK with SuperLU), same machine, same run, answers compared.

usage: run_bench.py TCSOLVE DEVICE(cpu|cuda) OUTDIR [--cases NAME,...] [--scipy-timeout S]
                    [--matrices DIR] [--scipy-only 1] [--no-scipy 1] [--repeat R]
Cases: bcsstkNN[/bcsstmNN]:K from the SuiteSparse folder, gen:SPEC[+lumped]:K generated
(+lumped: the mass matrix is the lumped diagonal B = diag(A)).
Prints one table; writes OUTDIR/shift_invert.csv. SciPy runs in a child process that is killed
at the timeout (then its time is reported as '> timeout').
"""
import csv, json, os, subprocess, sys, time

import numpy as np


def load(spec, tcsolve, work, matrices):
    """A (csr) and the path tcsolve reads, for a file name or a gen: spec."""
    import h5py
    import scipy.sparse as sp
    if spec.startswith("gen:"):
        path = os.path.join(work, spec.replace(":", "_").replace("+", "_") + ".h5")
        if not os.path.exists(path):
            subprocess.run([tcsolve, "generate", spec, path, "-q"], check=True)
    else:
        src = os.path.join(matrices, spec + ".mtx")
        path = os.path.join(work, spec + ".h5")
        if not os.path.exists(path):
            subprocess.run([tcsolve, "convert", src, path, "-q"], check=True)
    with h5py.File(path, "r") as f:
        g = f["matrix"]
        A = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
    return A, path


def write_diag_mtx(d, path):
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real symmetric\n")
        f.write("%d %d %d\n" % (len(d), len(d), len(d)))
        f.write("".join("%d %d %.17g\n" % (i + 1, i + 1, v) for i, v in enumerate(d)))


SCIPY_CHILD = r"""
import sys, time, numpy as np, scipy.sparse as sp, scipy.sparse.linalg as sla
d = np.load(sys.argv[1]); k = int(sys.argv[2])
A = sp.csc_matrix((d["a_data"], d["a_indices"], d["a_indptr"]), shape=tuple(d["a_shape"]))
M = None
if "m_data" in d:
    M = sp.csc_matrix((d["m_data"], d["m_indices"], d["m_indptr"]), shape=tuple(d["a_shape"]))
t = time.perf_counter()
w = sla.eigsh(A, k=k, M=M, sigma=0, which="LM", return_eigenvectors=False)
t = time.perf_counter() - t
print(repr((t, sorted(w.tolist()))))
"""


def run_scipy(A, M, k, timeout, work):
    import scipy.sparse as sp
    f = os.path.join(work, "scipy_input.npz")
    Ac = sp.csc_matrix(A)
    arrays = dict(a_data=Ac.data, a_indices=Ac.indices, a_indptr=Ac.indptr, a_shape=np.array(A.shape))
    if M is not None:
        Mc = sp.csc_matrix(M)
        arrays.update(m_data=Mc.data, m_indices=Mc.indices, m_indptr=Mc.indptr)
    np.savez(f, **arrays)
    try:
        r = subprocess.run([sys.executable, "-c", SCIPY_CHILD, f, str(k)], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, "timeout"
    if r.returncode != 0:
        return None, None, "error: " + r.stderr.strip().splitlines()[-1][:120]
    t, w = eval(r.stdout.strip().splitlines()[-1])
    return t, np.array(w), "ok"


def main():
    args = sys.argv[1:]
    tcsolve, device, out = args[0], args[1], args[2]
    opts = dict(zip(args[3::2], args[4::2]))
    cases = opts.get("--cases", "bcsstk08:10,bcsstk21:10").split(",")
    timeout = float(opts.get("--scipy-timeout", "300"))
    matrices = opts.get("--matrices", os.environ.get("TCSOLVE_MATRICES", "../shared/matrices/suitesparse"))
    os.makedirs(out, exist_ok=True)
    work = os.path.join(out, "work")
    os.makedirs(work, exist_ok=True)
    rows = []
    for case in cases:
        spec, k = case.rsplit(":", 1)
        k = int(k)
        mass_spec = None
        if "/" in spec:
            spec, mass_spec = spec.split("/")
        lumped = spec.endswith("+lumped")
        if lumped:
            spec = spec[: -len("+lumped")]
        A, apath = load(spec, tcsolve, work, matrices)
        M, mpath = None, None
        if mass_spec:
            M, mpath = load(mass_spec, tcsolve, work, matrices)
        elif lumped:
            import scipy.sparse as sp
            d = A.diagonal()
            M = sp.diags(d).tocsr()
            mpath = os.path.join(work, spec.replace(":", "_") + "_lumped.mtx")
            if not os.path.exists(mpath):
                write_diag_mtx(d, mpath)
        if opts.get("--scipy-only"):
            ts, tw, status = run_scipy(A, M, k, timeout, work)
            print("%-28s n %7d k %3d | scipy eigsh(sigma=0) %s; values %s" %
                  (case, A.shape[0], k, ("%.3f s" % ts) if ts is not None else
                   ("> %.0f s" % timeout if status == "timeout" else status),
                   None if tw is None else np.array2string(tw[:4], precision=12)), flush=True)
            continue
        cmd = [tcsolve, "eigs", apath, "--k", str(k), "--which", "smallest", "--device", device,
               "--json", "--quiet"]
        if mpath:
            cmd += ["--mass", mpath]
        repeat = int(opts.get("--repeat", "1"))
        j, wall = None, float("inf")
        for _ in range(repeat):  # the fastest of `repeat` runs (solve + preprocess)
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True)
            w = time.perf_counter() - t0
            try:
                jr = json.loads(r.stdout)
            except ValueError:
                print(case, "tcsolve failed:", r.stderr.strip()[:300], flush=True)
                break
            if j is None or (jr["seconds"]["preprocess"] + jr["seconds"]["solve"] <
                             j["seconds"]["preprocess"] + j["seconds"]["solve"]):
                j, wall = jr, w
        if j is None:
            continue
        if opts.get("--no-scipy"):
            ts, tw, status = None, None, "not run"
        else:
            ts, tw, status = run_scipy(A, M, k, timeout, work)
            for _ in range(repeat - 1):
                if ts is None or ts > 30:
                    break
                t2, _w, _s = run_scipy(A, M, k, timeout, work)
                if t2 is not None:
                    ts = min(ts, t2)
        ours = np.array(j["eigenvalues"])
        diff = float(np.max(np.abs(ours - tw) / np.abs(tw))) if tw is not None else float("nan")
        sec = j["seconds"]
        solve_total = sec["preprocess"] + sec["solve"]
        row = dict(case=case, n=A.shape[0], nnz=A.nnz, k=k, device=device, status=j["status"],
                   certified=j.get("certified"), method=j["method"], factorization=j.get("factorization", ""),
                   tcsolve_wall=wall, tcsolve_read=sec["read"], tcsolve_preprocess=sec["preprocess"],
                   tcsolve_solve=sec["solve"], tcsolve_verify=sec.get("verify", float("nan")),
                   scipy=ts if ts is not None else float("nan"), scipy_status=status,
                   rel_diff_vs_scipy=diff)
        row["speedup"] = (ts / solve_total) if ts else float("nan")
        row["tcsolve_setup"] = sec.get("setup", float("nan"))
        rows.append(row)
        print("    setup %.3f s; %s; %s" % (row["tcsolve_setup"], j.get("factorization", ""),
                                            j.get("certificate", "")[:160]), flush=True)
        print("%-28s n %7d k %3d | tcsolve %-9s cert %-3s wall %7.3f s (solve+pre %7.3f, verify %6.3f) | "
              "scipy %s | x %5.1f | max rel diff %.1e" %
              (case, A.shape[0], k, j["status"], j.get("certified"), wall, solve_total, row["tcsolve_verify"],
               ("%7.3f s" % ts) if ts is not None else ("> %.0f s" % timeout if status == "timeout" else status),
               row["speedup"], diff), flush=True)
    with open(os.path.join(out, "shift_invert.csv"), "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
