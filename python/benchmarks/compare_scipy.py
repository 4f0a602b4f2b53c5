"""tcsolve's Python calls against scipy.sparse.linalg on the same inputs: time and answer.

    PYTHONPATH=build/python /usr/bin/python3 python/benchmarks/compare_scipy.py [--repeat 2] [--device cpu]

For each case: the best wall time of --repeat runs of each call (conversion from scipy.sparse
included for tcsolve), the largest eigenvalue difference relative to ‖A‖ (or the largest
relative solution difference for cg), and the largest true residual of each answer, recomputed
here in NumPy/SciPy (relative: ‖A·x − λ·x‖/(‖A‖·‖x‖), ‖b − A·x‖/‖b‖). Matrices: generated
Laplacians and SuiteSparse files from ../shared/matrices/suitesparse (cases skipped when absent).
Results are in docs/performance.md (Python).
"""
import argparse
import inspect
import os
import pathlib
import sys
import time

import numpy as np
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve

HERE = pathlib.Path(__file__).resolve().parent
MATRICES = pathlib.Path(os.environ.get("TCSOLVE_MATRICES", HERE.parents[2] / "shared" / "matrices" / "suitesparse"))


def lap1d(n):
    return sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])


def lap3d(n):
    i = sp.eye(n)
    t = lap1d(n)
    return sp.csr_matrix(sp.kron(sp.kron(i, i), t) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(t, i), i))


def graph_laplacian(name):
    a = sp.csr_matrix(sio.mmread(str(MATRICES / f"{name}.mtx")))
    a = (abs(a) + abs(a.T)).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    a.data[:] = 1.0
    return sp.csr_matrix(sp.diags(np.asarray(a.sum(axis=1)).ravel()) - a)


def suitesparse(name):
    return sp.csr_matrix(sio.mmread(str(MATRICES / f"{name}.mtx"))).astype(np.float64)


def best(fn, repeat):
    out, t = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return out, t


def guarded(case):
    """One row; a case that raises prints the error instead of stopping the table."""
    def run(label, a, *args, **kw):
        try:
            case(label, a, *args, **kw)
        except Exception as e:  # noqa: BLE001 - reported in the table
            print(f"| {label} | {a.shape[0]:,} / {a.nnz:,} | {case.__name__} {kw} | {type(e).__name__}: "
                  f"{str(e)[:120]} | | | | |", flush=True)
    return run


def as_input(a, cupy_input):
    if not cupy_input:
        return a, lambda: None
    import cupy
    import cupyx.scipy.sparse as csp
    return csp.csr_matrix(a), cupy.cuda.get_current_stream().synchronize


@guarded
def eig_case(label, a, repeat, device, cupy_input=False, **kw):
    nrm = float(abs(sl.eigsh(a, k=1, which="LM", return_eigenvectors=False))[0])
    ai, sync = as_input(a, cupy_input)

    def run_tc():
        out = tcsolve.eigsh(ai, device=device, return_info=True, **kw)
        sync()
        return out
    (w, v, info), t_tc = best(run_tc, repeat)
    if cupy_input:
        w, v = w.get(), v.get()
        label += " [CuPy input]"
    (ws, vs), t_sp = best(lambda: sl.eigsh(a, **kw), repeat)
    ws = np.sort(ws)
    res_tc = (np.linalg.norm(a @ v - v * w, axis=0) / nrm).max()
    res_sp = (np.linalg.norm(a @ vs - vs * np.sort(ws), axis=0) / nrm).max()
    diff = np.abs(w - ws).max() / nrm
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    print(f"| {label} | {a.shape[0]:,} / {a.nnz:,} | eigsh({args}) | {t_tc:.3f} s ({info.method}, "
          f"{info.iterations} it) | {t_sp:.3f} s | {diff:.1e} | {res_tc:.1e} | {res_sp:.1e} |", flush=True)


@guarded
def cg_case(label, a, s, repeat, device, rtol=1e-8, cupy_input=False):
    b = np.random.default_rng(0).standard_normal((a.shape[0], s))
    ai, sync = as_input(a, cupy_input)
    bi = b
    if cupy_input:
        import cupy
        bi = cupy.asarray(b)

    def run_tc():
        out = tcsolve.cg(ai, bi, rtol=rtol, device=device, return_info=True)
        sync()
        return out
    (x, info, res), t_tc = best(run_tc, repeat)
    if cupy_input:
        x = x.get()
        label += " [CuPy input]"

    def scipy_all():
        name = "rtol" if "rtol" in inspect.signature(sl.cg).parameters else "tol"  # SciPy >= 1.12: rtol
        return np.column_stack([sl.cg(a, b[:, j], atol=0.0, maxiter=100000, **{name: rtol})[0]
                                for j in range(s)])
    xs, t_sp = best(scipy_all, repeat)
    r_tc = (np.linalg.norm(b - a @ x, axis=0) / np.linalg.norm(b, axis=0)).max()
    r_sp = (np.linalg.norm(b - a @ xs, axis=0) / np.linalg.norm(b, axis=0)).max()
    diff = (np.linalg.norm(x - xs, axis=0) / np.linalg.norm(xs, axis=0)).max()
    print(f"| {label} | {a.shape[0]:,} / {a.nnz:,} | cg(B n×{s}, rtol={rtol:g}) | {t_tc:.3f} s (block CG, "
          f"{res.iterations} it) | {t_sp:.3f} s ({s} calls) | {diff:.1e} | {r_tc:.1e} | {r_sp:.1e} |", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--cupy", action="store_true", help="also run tcsolve on CuPy copies of the inputs")
    args = p.parse_args()
    variants = [False, True] if args.cupy else [False]
    print(f"tcsolve {tcsolve.__version__} (CUDA build: {tcsolve.built_with_cuda()}), device={args.device}, "
          f"best of {args.repeat}; columns: time tcsolve | time SciPy | max |Δ| (eigenvalues / ‖A‖, or "
          f"relative solution difference) | max relative residual tcsolve | SciPy")
    print("| matrix | n / nnz | call | tcsolve | SciPy | max diff | residual tcsolve | residual SciPy |")
    print("|---|---|---|---|---|---|---|---|")
    cases = [("lap3d 40³", lambda: lap3d(40), [("eig", dict(k=6, which="SA")), ("cg", 16)])]
    if (MATRICES / "luxembourg.mtx").exists():
        cases.append(("luxembourg (graph Laplacian)", lambda: graph_laplacian("luxembourg"),
                      [("eig", dict(k=6, which="LA"))]))
    if (MATRICES / "bcsstk08.mtx").exists():
        cases.append(("bcsstk08", lambda: suitesparse("bcsstk08"),
                      [("eig", dict(k=6, which="LA")), ("eig", dict(k=6, sigma=0.0))]))
    for label, make, calls in cases:
        a = make()
        for kind, arg in calls:
            for cupy_input in variants:
                if kind == "eig":
                    eig_case(label, a, args.repeat, args.device, cupy_input=cupy_input, **arg)
                else:
                    cg_case(label, a, arg, args.repeat, args.device, cupy_input=cupy_input)
    return 0


if __name__ == "__main__":
    sys.exit(main())
