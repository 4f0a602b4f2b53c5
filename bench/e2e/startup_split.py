#!/usr/bin/env python3
"""Where a command's wall time goes outside seconds.total (issue 16: wall − total ≤ 0.3 s).

Each run is started from here with TCSOLVE_TRACE=1; the trace's first line gives its zero on
CLOCK_MONOTONIC (the first static initializer of tcsolve_core), its last mark is "exit" (just
before _Exit). With this process's own CLOCK_MONOTONIC readings around the child:
  pre   = trace zero − spawn     exec, the dynamic loader, the libraries' static initializers
  init  = seconds.init            the wait for the CUDA context and the library handles
  post  = reaped − exit mark      the kernel's teardown of the process (its GPU context included)
Floors measured the same way: a bare python3 that exits, and a python3 that makes a CUDA context
(cudaFree(0)), a cuBLAS and a cuSOLVER handle through ctypes, then _exits.

usage: T=path/to/tcsolve REPS=5 startup_split.py [OUT.json]
"""
import json
import os
import statistics
import subprocess
import sys
import time

T = os.environ.get("T", "build/apps/tcsolve")
REPS = int(os.environ.get("REPS", "5"))

ROWS = [
    ("version", ["--version"], {}),
    ("lap2d200_k16", ["eigs", "gen:lap2d:200", "--k", "16", "--json"], {}),
    ("lap2d200_k16_blas1", ["eigs", "gen:lap2d:200", "--k", "16", "--json"], {"OPENBLAS_NUM_THREADS": "1"}),
    ("lap3d100_k16_largest", ["eigs", "gen:lap3d:100", "--k", "16", "--which", "largest", "--json"], {}),
    ("solve_lap3d100_32", ["solve", "gen:lap3d:100", "--rhs", "random:32", "--json"], {}),
]

PROBE = r"""
import ctypes, json, os, time
t = {"start": time.monotonic()}
def lib(names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    raise OSError(names)
rt = lib(["libcudart.so.13", "libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so"])
t["cudart_loaded"] = time.monotonic()
assert rt.cudaFree(ctypes.c_void_p(0)) == 0
t["context"] = time.monotonic()
cb = lib(["libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"])
t["cublas_loaded"] = time.monotonic()
h = ctypes.c_void_p()
assert cb.cublasCreate_v2(ctypes.byref(h)) == 0
t["cublas_handle"] = time.monotonic()
cs = lib(["libcusolver.so.12", "libcusolver.so.11", "/usr/local/cuda/lib64/libcusolver.so"])
t["cusolver_loaded"] = time.monotonic()
h2 = ctypes.c_void_p()
assert cs.cusolverDnCreate(ctypes.byref(h2)) == 0
t["cusolver_handle"] = time.monotonic()
print(json.dumps(t), flush=True)
t_exit = time.monotonic()
print(json.dumps({"exit": t_exit}), flush=True)
os._exit(0)
"""


def run(cmd, env):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    t1 = time.monotonic()
    return t0, t1, p


def tcsolve_row(name, args, extra):
    env = dict(os.environ, TCSOLVE_TRACE="1", **extra)
    out = []
    for _ in range(REPS):
        t0, t1, p = run([T] + args, env)
        if p.returncode != 0:
            print(name, "failed", p.returncode, p.stderr[-2000:])
            return None
        zero, marks = None, []
        for line in p.stderr.splitlines():
            if line.startswith("tcsolve trace clock "):
                zero = float(line.split()[3])
            elif line.startswith("tcsolve trace "):
                f = line.split(None, 4)
                marks.append((float(f[2]) / 1e3, f[4] if len(f) > 4 else ""))
        if zero is None or not marks or not marks[-1][1].endswith("exit"):
            print(name, "no trace clock or exit mark")
            return None
        sec = {}
        if args[-1] == "--json":
            j = json.loads(p.stdout)
            sec = j.get("seconds", {})
            steps = j.get("solve_steps", "")
        else:
            steps = ""
        main_at = next((m for m, w in marks if w.endswith("main")), 0.0)
        rec = {"wall": t1 - t0, "pre": zero - t0, "to_main": main_at, "exit_mark": marks[-1][0],
               "post": t1 - (zero + marks[-1][0]), "total": sec.get("total"), "init": sec.get("init"),
               "solve": sec.get("solve"), "steps": steps}
        out.append(rec)
    keys = ["wall", "pre", "to_main", "exit_mark", "post", "total", "init", "solve"]
    med = {k: statistics.median([r[k] for r in out]) for k in keys if out[0].get(k) is not None}
    if med.get("total") is not None:
        med["wall_minus_total"] = statistics.median([r["wall"] - r["total"] for r in out])
    print(f"{name:24s} " + "  ".join(f"{k} {v:.4f}" for k, v in med.items()), flush=True)
    if out[-1]["steps"]:
        print("   solve_steps", out[-1]["steps"])
    return {"row": name, "median": med, "runs": out}


def probe_rows():
    rows = []
    for name, code in (("python_bare", "import os, time; print(time.monotonic(), flush=True); os._exit(0)"),
                       ("python_cuda_probe", PROBE)):
        runs = []
        for _ in range(REPS):
            t0, t1, p = run([sys.executable, "-c", code], dict(os.environ))
            if p.returncode != 0:
                print(name, "failed", p.stderr[-1500:])
                break
            lines = p.stdout.strip().splitlines()
            if name == "python_bare":
                t_exit = float(lines[0])
                runs.append({"wall": t1 - t0, "post": t1 - t_exit, "pre": None})
            else:
                t = json.loads(lines[0])
                t_exit = json.loads(lines[1])["exit"]
                rec = {"wall": t1 - t0, "post": t1 - t_exit, "pre": t["start"] - t0,
                       "cudart_load": t["cudart_loaded"] - t["start"], "context": t["context"] - t["cudart_loaded"],
                       "cublas_load": t["cublas_loaded"] - t["context"],
                       "cublas_handle": t["cublas_handle"] - t["cublas_loaded"],
                       "cusolver_load": t["cusolver_loaded"] - t["cublas_handle"],
                       "cusolver_handle": t["cusolver_handle"] - t["cusolver_loaded"]}
                runs.append(rec)
        if runs:
            med = {k: statistics.median([r[k] for r in runs]) for k in runs[0] if runs[0][k] is not None}
            print(f"{name:24s} " + "  ".join(f"{k} {v:.4f}" for k, v in med.items()), flush=True)
            rows.append({"row": name, "median": med, "runs": runs})
    return rows


if __name__ == "__main__":
    rows = probe_rows()
    for name, args, extra in ROWS:
        r = tcsolve_row(name, args, extra)
        if r:
            rows.append(r)
    rows += probe_rows()  # again after the rows (a warm driver and page cache)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)
