#!/usr/bin/env python3
"""Issue 46: tcsolve.eigsh (default path, CPU) against SciPy's eigsh in one process, two rounds, at
SciPy's default end (LM, k = 6), the largest 16 (LA) and the smallest 6 (SA, no shift), on Matrix
Market files of 50k-300k rows (e.g. `tcsolve convert gen:lap3d:45 F.mtx`); prints both times,
the ratio and the largest difference of the values (SciPy's ARPACK may miss a copy of a multiple
eigenvalue: check such a row against a closed form).
usage: PYTHONPATH=build/python /usr/bin/python3 bench/python/eigsh_scipy_ends.py FILE.mtx ..."""
import sys, time, numpy as np, scipy.io as sio, scipy.sparse as sp, scipy.sparse.linalg as sl, tcsolve
cases = [('LM', 6), ('LA', 16), ('SA', 6)]
for f in sys.argv[1:]:
    a = sp.csr_matrix(sio.mmread(f))
    for which, k in cases:
        r = []
        for rep in range(2):
            t = time.perf_counter(); w, v, info = tcsolve.eigsh(a, k, which=which, return_info=True); tt = time.perf_counter() - t
            t = time.perf_counter()
            try:
                ws = sl.eigsh(a, k, which=which, return_eigenvectors=False, maxiter=20000)
            except Exception as e:
                ws = None
            ts = time.perf_counter() - t
            err = np.max(np.abs(np.sort(w) - np.sort(ws))) if ws is not None else float('nan')
            print('%s n=%d %s k=%d tcsolve %.2f s (%s) scipy %.2f s ratio %.2f max|dw| %.1e' % (f.split('/')[-1], a.shape[0], which, k, tt, info.method, ts, tt/ts, err), flush=True)
