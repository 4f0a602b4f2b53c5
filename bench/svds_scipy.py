#!/usr/bin/python3
"""CPU timing of `tcsolve svds` against SciPy's svds (ARPACK and PROPACK) on one generated
single-cell-like count matrix (gen:counts), plain and centered (PCA), with the answers compared.

    /usr/bin/python3 bench/svds_scipy.py build/apps/tcsolve CELLS GENES K [OUTDIR]

The matrix is written once by `tcsolve generate` (HDF5) and read by SciPy from that file, so both
see the same bits. tcsolve runs as a child process (--device cpu --json; its `seconds.solve` +
`seconds.setup` + `seconds.verify` is compared, the read is not), SciPy in this process (svds
alone is timed; the centered run uses a LinearOperator with matvec/rmatvec for A − 1·μᵀ, as scanpy
does). Not the same process: the Python module's svds binding (python/, another session) is not
there yet. Both at tol 1e-8: SciPy's tol is on the Ritz values, tcsolve's on the residuals
relative to σ₁, which is the stricter test; the residuals of SciPy's answers are printed too.
"""
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("SCIPY_USE_PROPACK", "1")  # SciPy 1.10 hides PROPACK behind this flag
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as sla  # noqa: E402


def residuals(op, opt, u, s, vt):
    """max_j ‖A v_j − s_j u_j‖ / s_1 and max_j ‖Aᵀ u_j − s_j v_j‖ / s_1."""
    v = vt.T
    r1 = np.linalg.norm(op(v) - u * s, axis=0).max() / s.max()
    r2 = np.linalg.norm(opt(u) - v * s, axis=0).max() / s.max()
    return r1, r2


def run_tcsolve(tc, path, k, center):
    cmd = [tc, "svds", path, "--k", str(k), "--tol", "1e-8", "--device", "cpu", "--json"]
    if center:
        cmd.append("--center")
    t = time.perf_counter()
    out = subprocess.run(cmd, check=False, capture_output=True, text=True)
    wall = time.perf_counter() - t
    d = json.loads(out.stdout)
    sec = d["seconds"]
    return d, sec["setup"] + sec["solve"] + sec["verify"], wall


def main():
    tc, cells, genes, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    outdir = sys.argv[5] if len(sys.argv) > 5 else "/tmp"
    path = os.path.join(outdir, f"counts_{cells}x{genes}.h5")
    if not os.path.exists(path):
        subprocess.run([tc, "generate", f"gen:counts:{cells}:{genes}", path], check=True)
    with h5py.File(path, "r") as f:
        g = f["matrix"]
        a = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
    print(f"matrix gen:counts:{cells}:{genes}: {a.shape[0]} x {a.shape[1]}, nnz {a.nnz} "
          f"({100 * a.nnz / a.shape[0] / a.shape[1]:.2f} %), k = {k}")
    mu = np.asarray(a.mean(axis=0)).ravel()
    ones = np.ones(a.shape[0])
    centered = sla.LinearOperator(
        a.shape, dtype=np.float64,
        matvec=lambda x: a @ x - ones * (mu @ x),
        matmat=lambda x: a @ x - np.outer(ones, mu @ x),
        rmatvec=lambda y: a.T @ y - mu * y.sum(),
        rmatmat=lambda y: a.T @ y - np.outer(mu, y.sum(axis=0)))
    at = a.T.tocsr()
    for center in (False, True):
        op = centered if center else a
        fwd = (lambda x: centered.matmat(x)) if center else (lambda x: a @ x)
        bwd = (lambda y: centered.rmatmat(y)) if center else (lambda y: at @ y)
        d, t_tc, wall = run_tcsolve(tc, path, k, center)
        s_tc = np.array(d["singular_values"])
        print(f"\n{'centered' if center else 'plain'}: tcsolve {d['status']}, {d['method']}, "
              f"{d['iterations']} restarts, {d['operator_applies']} applies: {t_tc:.3f} s "
              f"(process wall {wall:.3f} s); max residuals/s1 "
              f"{max(d['residual_av']) / d['a_norm']:.2e}, {max(d['residual_atu']) / d['a_norm']:.2e}")
        for solver in ("arpack", "propack"):
            t = time.perf_counter()
            try:
                u, s, vt = sla.svds(op, k=k, tol=1e-8, solver=solver, random_state=1)
            except Exception as e:  # noqa: BLE001 -- a failure is a result here
                print(f"  scipy {solver}: failed: {e}")
                continue
            ts = time.perf_counter() - t
            order = np.argsort(s)[::-1]
            u, s, vt = u[:, order], s[order], vt[order]
            r1, r2 = residuals(fwd, bwd, u, s, vt)
            diff = np.abs(s - s_tc).max() / s_tc[0]
            print(f"  scipy {solver}: {ts:.3f} s ({ts / t_tc:.2f}x tcsolve's); max |s - s_tcsolve|/s1 "
                  f"{diff:.2e}; residuals/s1 {r1:.2e}, {r2:.2e}")


if __name__ == "__main__":
    main()
