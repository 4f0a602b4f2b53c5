#!/usr/bin/env python3
"""Interior eigenvalues: the 20 nearest the middle of the spectrum of a generated matrix, from
`tcsolve eigs --which nearest --sigma MID` (shift-invert Lanczos, MUMPS LDL^T), checked against a
dense reference (torch.linalg.eigvalsh in float64 on the GPU when present, else numpy).

usage: interior_check.py TCSOLVE SPEC K DEVICE WORKDIR
"""
import json, subprocess, sys, time

import h5py
import numpy as np

tcsolve, spec, k, device, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
path = f"{work}/interior.h5"
subprocess.run([tcsolve, "generate", spec, path, "-q"], check=True)
with h5py.File(path, "r") as f:
    g = f["matrix"]
    import scipy.sparse as sp
    A = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=tuple(g.attrs["shape"]))
n = A.shape[0]
t = time.perf_counter()
try:
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    D = torch.from_numpy(A.toarray()).to(dev)
    w = torch.linalg.eigvalsh(D).cpu().numpy()
    del D
    ref_how = "torch.linalg.eigvalsh float64 on " + dev
except ImportError:
    w = np.linalg.eigvalsh(A.toarray())
    ref_how = "numpy.linalg.eigvalsh"
t_ref = time.perf_counter() - t
sigma = 0.5 * (w[0] + w[-1])
near = w[np.argsort(np.abs(w - sigma), kind="stable")][:k]
t = time.perf_counter()
r = subprocess.run([tcsolve, "eigs", path, "--which", "nearest", "--sigma", "%.17g" % sigma, "--k", str(k),
                    "--device", device, "--json", "--quiet"], capture_output=True, text=True)
wall = time.perf_counter() - t
if r.returncode not in (0, 1):
    sys.exit("tcsolve failed: " + r.stderr)
j = json.loads(r.stdout)
ours = np.array(j["eigenvalues"])
err = np.max(np.abs(ours - near)) / np.max(np.abs(w))
print(f"interior {spec} n={n} k={k} sigma={sigma:.6g}: tcsolve {j['status']} certified {j['certified']} "
      f"wall {wall:.2f} s (solve {j['seconds']['solve']:.2f} s); dense reference ({ref_how}) {t_ref:.1f} s; "
      f"max |lambda - ref| / |lambda_max| = {err:.2e}")
print("  certificate:", j["certificate"])
print("  factorization:", j["factorization"])
sys.exit(0 if j["status"] == "converged" and err < 1e-10 else 1)
