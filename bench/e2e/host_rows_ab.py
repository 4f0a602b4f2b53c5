#!/usr/bin/env python3
"""The host rows of the end-to-end table (shift-invert and single-vector Lanczos on the CPU) under
several thread settings, interleaved in one call: where their measured seconds part from the
planner's predicted ones (issue 16: "predicted within 2x").

For each row and setting: the median of REPS runs of seconds.{plan,setup,solve,verify} against the
plan's predicted setup/solve/verify (method_reason), and the ratio predicted / measured with the
measured plan + setup + solve + verify (as bench/e2e/run_e2e.py counts it).

usage: python3 bench/e2e/host_rows_ab.py TCSOLVE MATRICES_DIR [OUT.json]
  VARIANTS="default;TCSOLVE_FACTOR_THREADS=1;TCSOLVE_HOST_POOL=0" (';'-separated, ','-joined
  assignments), REPS=5. Each setting's engine rates are measured by a warm-up run first (the cache
  key holds the thread settings).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from plan_sweep import predicted  # noqa: E402
from run_e2e import graph_laplacian_file  # noqa: E402


def main():
    tcs, mdir = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else None
    reps = int(os.environ.get("REPS", "5"))
    variants = [v for v in os.environ.get("VARIANTS", "default;TCSOLVE_FACTOR_THREADS=1;TCSOLVE_HOST_POOL=0").split(";") if v]
    work = tempfile.mkdtemp()
    rows = [("bcsstk21_k10", [os.path.join(mdir, "bcsstk21.mtx"), "--k", "10"]),
            ("bcsstk10_k10", [os.path.join(mdir, "bcsstk10.mtx"), "--k", "10"]),
            ("dwt2680_k10", [os.path.join(mdir, "dwt_2680.mtx"), "--k", "10"]),
            ("crack_lap_k8", [graph_laplacian_file("crack", work, mdir), "--k", "8"]),
            ("1138bus_k10_largest", [os.path.join(mdir, "1138_bus.mtx"), "--k", "10", "--which", "largest"])]

    def env_of(v):
        e = dict(os.environ)
        if v != "default":
            for kv in v.split(","):
                k, val = kv.split("=", 1)
                e[k] = val
        return e

    for v in variants:  # each setting's rates, measured once (not timed)
        subprocess.run([tcs, "eigs", "gen:lap2d:40", "--k", "4", "-q"], env=env_of(v), capture_output=True)
    results = []
    for name, args in rows:
        runs = {v: [] for v in variants}
        for _ in range(reps):
            for v in variants:
                p = subprocess.run([tcs, "eigs"] + args + ["--json"], env=env_of(v), capture_output=True, text=True)
                d = json.loads(p.stdout)
                s = d["seconds"]
                runs[v].append({"plan": s["plan"], "setup": s["setup"], "solve": s["solve"], "verify": s["verify"],
                                "total": s["total"], "pred": predicted(d.get("method_reason")),
                                "status": d["status"], "method": d.get("method"), "transform": d.get("transform")})
        for v in variants:
            rs = runs[v]
            med = {k: statistics.median(r[k] for r in rs) for k in ("plan", "setup", "solve", "verify", "total")}
            pred = [statistics.median(r["pred"][i] for r in rs) for i in range(4)]
            measured = med["plan"] + med["setup"] + med["solve"] + med["verify"]
            row = {"row": name, "variant": v, **med, "pred_total": pred[0], "pred_setup": pred[1],
                   "pred_solve": pred[2], "pred_verify": pred[3], "measured": measured,
                   "ratio": pred[0] / measured if measured > 0 else 0,
                   "status": sorted({r["status"] for r in rs}), "plan_chosen": f"{rs[0]['method']}/{rs[0]['transform']}"}
            results.append(row)
            print(f"{name:20s} {v:34s} plan {med['plan']*1e3:6.2f} setup {med['setup']*1e3:6.2f} (pred {pred[1]*1e3:6.2f}) "
                  f"solve {med['solve']*1e3:6.2f} (pred {pred[2]*1e3:6.2f}) verify {med['verify']*1e3:6.2f} "
                  f"(pred {pred[3]*1e3:6.2f}) ms; predicted/measured {row['ratio']:.2f} {row['status']} {row['plan_chosen']}",
                  flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
