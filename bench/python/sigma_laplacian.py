"""eigsh with sigma against SciPy's, same process (issue 46, B7): the 1-D Laplacian of n rows,
k = 6, sigma = 0.5, each `which`; best of `--repeat` calls of each, and the ratio.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/sigma_laplacian.py [--n 3000] [--repeat 5]

Also prints tcsolve's phases (Result.time_plan / setup / solve / verify / preprocess) of its last
call, and the method. 'SM' is left out by default: ARPACK does not converge on it (30001
iterations, 0 of 6), so there is nothing to compare with."""

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import tcsolve


def best(f, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return min(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--which", nargs="*", default=["LM", "LA", "SA", "BE"])
    args = ap.parse_args()
    a = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(args.n, args.n)).tocsr()
    for which in args.which:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_s = best(lambda: sla.eigsh(a, args.k, sigma=args.sigma, which=which), args.repeat)
            t_t = best(lambda: tcsolve.eigsh(a, args.k, sigma=args.sigma, which=which), args.repeat)
            w_s = np.sort(sla.eigsh(a, args.k, sigma=args.sigma, which=which)[0])
            w, _, r = tcsolve.eigsh(a, args.k, sigma=args.sigma, which=which, return_info=True)
        print(f"which={which}: SciPy {t_s:.4f} s, tcsolve {t_t:.4f} s, ratio {t_t / t_s:.1f}; "
              f"max |w - w_scipy| = {np.max(np.abs(w - w_s)):.1e}; tcsolve {r.method}: plan "
              f"{r.time_plan:.3f} setup {r.time_setup:.3f} solve {r.time_solve:.3f} verify "
              f"{r.time_verify:.3f} preprocess {r.time_preprocess:.3f} s", flush=True)


if __name__ == "__main__":
    main()
