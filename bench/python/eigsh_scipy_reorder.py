#!/usr/bin/env python3
"""Issue 46: tcsolve.eigsh (default path, CPU) against SciPy eigsh, 16 largest (which=LA), two rounds,
same process, on Matrix Market files (e.g. `tcsolve convert gen:rgg:55000 /tmp/rgg55k.mtx`);
says whether the RCM order of --reorder auto was taken.
usage: PYTHONPATH=build/python /usr/bin/python3 bench/python/eigsh_scipy_reorder.py FILE.mtx ..."""
import sys, time, numpy as np, scipy.io as sio, scipy.sparse as sp, scipy.sparse.linalg as sl, tcsolve
for f in sys.argv[1:]:
    a = sp.csr_matrix(sio.mmread(f))
    for rep in range(2):
        t = time.perf_counter(); w, v, info = tcsolve.eigsh(a, 16, which='LA', return_info=True); tt = time.perf_counter() - t
        t = time.perf_counter(); ws, vs = sl.eigsh(a, 16, which='LA'); ts = time.perf_counter() - t
        print(f, a.shape[0], 'tcsolve %.2f s  scipy %.2f s  ratio %.2f  max|dw| %.1e  reordered %s' % (tt, ts, tt / ts, np.max(np.abs(np.sort(w) - np.sort(ws))), 'Cuthill' in info.spmm_plan), flush=True)
