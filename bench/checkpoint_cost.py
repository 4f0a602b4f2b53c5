#!/usr/bin/env python3
"""Checkpoint cost and kill -9 recovery of one eigs run (issue 18 §3), end to end:

  1. the run without checkpoints (its solve seconds);
  2. the same run with --checkpoint every EVERY seconds, killed with SIGKILL at KILL_FRACTION of
     the first run's wall time (after at least one checkpoint), then --resume-from;
  3. checks: the resumed eigenvalues against the closed form of gen:lap3d:N (largest), and the
     time lost: (time of the killed run + time of the resumed run) - the first run's time.

Usage: checkpoint_cost.py TCSOLVE OUTDIR [N K EVERY KILL_FRACTION]. Prints one JSON object.
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np


def lap3d_largest(n, k):
    d = 2.0 - 2.0 * np.cos(np.arange(1, n + 1) * math.pi / (n + 1))
    # the k largest of d_i + d_j + d_l: from the top 2k of each axis (enough for any k here)
    top = np.sort(d)[::-1][: min(n, 2 * k + 2)]
    s = (top[:, None, None] + top[None, :, None] + top[None, None, :]).ravel()
    return np.sort(s)[::-1][:k]


def run(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, time.perf_counter() - t


def main():
    exe, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    every = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0
    frac = float(sys.argv[6]) if len(sys.argv) > 6 else 0.6
    os.makedirs(out, exist_ok=True)
    ck = os.path.join(out, "ck.h5")
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    base = [exe, "eigs", f"gen:lap3d:{n}", "--k", str(k), "--which", "largest", "--json"]
    exact = lap3d_largest(n, k)
    res = {"matrix": f"gen:lap3d:{n}", "k": k, "every": every}

    p, wall = run(base)
    d = json.loads(p.stdout)
    res["plain"] = {"rc": p.returncode, "wall": wall, "seconds": d["seconds"], "status": d["status"],
                    "err": float(np.max(np.abs(np.array(d["eigenvalues"]) - exact) / exact))}

    p, wall = run(base + ["--checkpoint", ck, "--checkpoint-every", str(every)])
    d = json.loads(p.stdout)
    res["checkpointed"] = {"rc": p.returncode, "wall": wall, "solve": d["seconds"]["solve"],
                           "checkpoints": d["checkpoints"]}
    os.remove(ck)

    t0 = time.perf_counter()
    q = subprocess.Popen(base + ["--checkpoint", ck, "--checkpoint-every", str(every)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while q.poll() is None and (time.perf_counter() - t0 < frac * res["plain"]["wall"] or not os.path.exists(ck)):
        time.sleep(0.01)
    killed_at = time.perf_counter() - t0
    q.send_signal(signal.SIGKILL)
    q.wait()
    res["killed"] = {"at": killed_at, "rc": q.returncode, "checkpoint_exists": os.path.exists(ck),
                     "temporaries_left": [f for f in os.listdir(out) if ".tmp-" in f]}
    p, wall = run(base + ["--resume-from", ck])
    d = json.loads(p.stdout)
    vals = np.array(d["eigenvalues"])
    res["resumed"] = {"rc": p.returncode, "wall": wall, "status": d["status"], "seconds": d["seconds"],
                      "message": d["message"], "err": float(np.max(np.abs(vals - exact) / exact))}
    res["lost_seconds"] = killed_at + wall - res["plain"]["wall"]
    # The split of that loss: solver progress after the last checkpoint (the killed run's solver
    # time at the kill, taking its start from the plain run's time before the solve, less the
    # checkpoint's solver seconds from the resumed run's message) and the restart (the resumed
    # run's wall less its solve and verification: process start, read, plan, set-up) against the
    # plain run's same part.
    sec = res["plain"]["seconds"]
    pre_solve = res["plain"]["wall"] - sec["solve"] - sec["verify"] - sec.get("write", 0.0)
    m = re.search(r"iteration (\d+), ([0-9.eE+-]+) s of solver time", d["message"])
    if m:
        res["checkpoint_iteration"] = int(m.group(1))
        res["progress_lost_seconds"] = (killed_at - pre_solve) - float(m.group(2))
    rs = d["seconds"]
    res["restart_seconds"] = wall - rs["solve"] - rs["verify"] - rs.get("write", 0.0)
    res["plain_pre_solve_seconds"] = pre_solve
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
