"""Issue 46 B7: eigsh(A, 6, sigma=0.5, which=...) on the 3000-row 1-D Laplacian, SciPy against
tcsolve (UMFPACK's solves of the indefinite A - sigma*I, the default) and tcsolve with MUMPS's
solves (TCSOLVE_SHIFT_LU=0), in one process, interleaved: one untimed call of each, then REPS
rounds; medians in ms, the ratio to SciPy, and the largest eigenvalue difference.
    /usr/bin/python3 bench/shift_invert/sigma_small.py BUILD/python [REPS]"""
import os, sys, time
import numpy as np, scipy.sparse as sp, scipy.sparse.linalg as sla
sys.path.insert(0, sys.argv[1])
import tcsolve

reps = int(sys.argv[2]) if len(sys.argv) > 2 else 9
n = 3000
A = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")


def tc(which, lu):
    os.environ["TCSOLVE_SHIFT_LU"] = "1" if lu else "0"
    try:
        return tcsolve.eigsh(A, 6, sigma=0.5, which=which)
    finally:
        del os.environ["TCSOLVE_SHIFT_LU"]


sides = {"scipy": lambda w: sla.eigsh(A, 6, sigma=0.5, which=w),
         "tcsolve": lambda w: tc(w, True), "tcsolve_mumps": lambda w: tc(w, False)}
print(f"n = {n}, k = 6, sigma = 0.5, {reps} rounds, medians (ms)")
for which in ["LM", "LA", "SA", "BE"]:
    vals = {s: np.sort(f(which)[0]) for s, f in sides.items()}  # untimed first calls
    times = {s: [] for s in sides}
    for _ in range(reps):
        for s, f in sides.items():
            t0 = time.perf_counter(); f(which); times[s].append(time.perf_counter() - t0)
    med = {s: 1e3 * float(np.median(t)) for s, t in times.items()}
    diff = max(float(np.max(np.abs(vals[s] - vals["scipy"]))) for s in ("tcsolve", "tcsolve_mumps"))
    print(f"which={which}: scipy {med['scipy']:.1f}  tcsolve {med['tcsolve']:.1f} ({med['tcsolve'] / med['scipy']:.2f}x)"
          f"  tcsolve+MUMPS solves {med['tcsolve_mumps']:.1f} ({med['tcsolve_mumps'] / med['scipy']:.2f}x)"
          f"  max |lambda - scipy| {diff:.1e}")
