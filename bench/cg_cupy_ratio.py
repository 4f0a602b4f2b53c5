#!/usr/bin/env python3
"""Block CG from Python on CuPy input against 32 x cupyx cg, same run (issue 19's ratio).

lap3d:N (default 100: 1M rows), 32 uniform random right-hand sides, rtol 1e-8: tcsolve.cg with
M='jacobi' (precision 'auto' and 'fp64') and M='chebyshev' (warm median of 3 each, the first call
untimed), and
32 x cupyx.scipy.sparse.linalg.cg (one timed pass after a compile call); residuals checked.
usage: cg_cupy_ratio.py [N]
"""
import sys
import time

import numpy as np


def main():
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    import scipy.sparse as sp
    import tcsolve
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    i = sp.identity(n)
    a = (sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t)).tocsr()
    ag = csp.csr_matrix(a)
    b = cp.asarray(np.random.default_rng(7).uniform(-1, 1, size=(a.shape[0], 32)))
    sync = cp.cuda.Device().synchronize

    def rel(x):
        return float(cp.max(cp.linalg.norm(b - ag @ x, axis=0) / cp.linalg.norm(b, axis=0)))

    out = {}
    # precision 'auto' (the default): block CG's fp32 iterations inside fp64 refinement where they
    # apply (Jacobi or none, ≤ 32 columns, on the GPU); 'fp64': the fp64 iteration.
    for m, prec in (("jacobi", "auto"), ("jacobi", "fp64"), ("chebyshev", "auto")):
        tcsolve.cg(ag, b, rtol=1e-8, M=m, precision=prec)  # first call: handles, probe code paths
        ts = []
        for _ in range(3):
            sync()
            t0 = time.perf_counter()
            x, info, r = tcsolve.cg(ag, b, rtol=1e-8, M=m, precision=prec, return_info=True)
            sync()
            ts.append(time.perf_counter() - t0)
        out[f"{m}, precision={prec}"] = (float(np.median(ts)), info, rel(x), r.iterations,
                                         r.preconditioner + "; " + r.precision_used)
    csla.cg(ag, b[:, 0], rtol=1e-2)  # compile
    sync()
    t0 = time.perf_counter()
    xs = [csla.cg(ag, b[:, j], rtol=1e-8, maxiter=20000)[0] for j in range(32)]
    sync()
    t_cupy = time.perf_counter() - t0
    rel_c = rel(cp.stack(xs, axis=1))
    print(f"lap3d:{n} ({a.shape[0]} rows), 32 right-hand sides, rtol 1e-8")
    print(f"32 x cupyx cg: {t_cupy:.3f} s, max rel residual {rel_c:.2e}")
    for m, (tw, info, rr, it, pc) in out.items():
        print(f"tcsolve.cg M={m}: {tw:.3f} s warm median, info {info}, max rel residual {rr:.2e}, "
              f"{it} iterations, {pc}; {t_cupy / tw:.1f}x the 32 CuPy solves")


if __name__ == "__main__":
    main()
