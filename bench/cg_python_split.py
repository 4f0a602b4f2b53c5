#!/usr/bin/env python3
"""Where the seconds of tcsolve.cg(A, B, M=...) on CuPy input go (lap3d:N, 32 columns): cProfile of
a warm call (device work is waited for inside _sync_cupy and the C++ call), and the C++ result's
time_setup / time_solve. usage: cg_python_split.py [N] [M]"""
import cProfile, pstats, sys, time
import numpy as np


def main():
    import cupy as cp, cupyx.scipy.sparse as csp, scipy.sparse as sp, tcsolve
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    m = sys.argv[2] if len(sys.argv) > 2 else "chebyshev"
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)); i = sp.identity(n)
    a = (sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t)).tocsr()
    ag = csp.csr_matrix(a)
    b = cp.asarray(np.random.default_rng(7).uniform(-1, 1, size=(a.shape[0], 32)))
    sync = cp.cuda.Device().synchronize
    for _ in range(2):
        tcsolve.cg(ag, b, rtol=1e-8, M=m)
    sync()
    ts = []
    for _ in range(5):
        sync(); t0 = time.perf_counter()
        x, info, r = tcsolve.cg(ag, b, rtol=1e-8, M=m, return_info=True)
        sync(); ts.append(time.perf_counter() - t0)
    print(f"M={m}: calls {', '.join(f'{v:.4f}' for v in ts)} s; time_setup {r.time_setup if hasattr(r, 'time_setup') else '?'} "
          f"time_solve {r.time_solve:.4f} time_preprocess {r.time_preprocess:.4f} iterations {r.iterations} {r.preconditioner}")
    pr = cProfile.Profile()
    sync(); pr.enable()
    tcsolve.cg(ag, b, rtol=1e-8, M=m)
    sync(); pr.disable()
    pstats.Stats(pr).sort_stats("cumulative").print_stats(28)


if __name__ == "__main__":
    main()
