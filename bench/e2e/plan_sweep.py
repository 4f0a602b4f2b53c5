#!/usr/bin/env python3
"""The planner's predicted seconds against the measured ones on every shared real matrix (issue 16:
"predicted within 2x"), on the host: `tcsolve eigs M --k 10 --which largest|smallest --device cpu
--json`, the median of 3 runs (by measured seconds) per row.

measured = seconds.plan + setup + solve + verify (as bench/e2e/run_e2e.py counts it); the prediction
(method_reason) covers setup + solve + verify of the chosen plan. Rows the plan solves densely
(n <= 400 and the like) carry no prediction and are listed with ratio 0.

usage: python3 bench/e2e/plan_sweep.py TCSOLVE MATRICES_DIR [EXTRA.mtx ...] > OUT.txt
  VARIANTS="default;NAME=VALUE" compares settings row by row (e.g. TCSOLVE_PLAN_INTERPOLATED_GAP=0).
"""
import glob
import json
import os
import re
import subprocess
import sys


def predicted(reason):
    m = re.search(r"predicted ([0-9.e+-]+) s \(setup ([0-9.e+-]+) s, solve ([0-9.e+-]+) s, verify ([0-9.e+-]+) s\)",
                  reason or "")
    return [float(x) for x in m.groups()] if m else [0.0] * 4


def main():
    tcs, mdir = sys.argv[1], sys.argv[2]
    files = [f for f in sorted(glob.glob(os.path.join(mdir, "*.mtx"))) if "/bcsstm" not in f] + sys.argv[3:]
    variants = [v for v in os.environ.get("VARIANTS", "default").split(";") if v]
    for f in files:
        for which in ("largest", "smallest"):
            out = []
            for v in variants:
                env = dict(os.environ)
                if v != "default":
                    key, val = v.split("=", 1)
                    env[key] = val
                runs = []
                for _ in range(3):
                    p = subprocess.run([tcs, "eigs", f, "--k", "10", "--which", which, "--device", "cpu", "--json"],
                                       capture_output=True, text=True, env=env, timeout=300)
                    try:
                        d = json.loads(p.stdout)
                    except ValueError:
                        runs = None
                        break
                    s = d["seconds"]
                    meas = s["plan"] + s["setup"] + s["solve"] + s["verify"]
                    pr = predicted(d.get("method_reason"))
                    runs.append((meas, pr, d["status"], f"{d.get('method')}/{d.get('transform')}/{d.get('verification')}",
                                 [s["plan"], s["setup"], s["solve"], s["verify"]]))
                if not runs:
                    out.append(f"{v}: error {p.stderr[-160:]!r}")
                    continue
                runs.sort(key=lambda r: r[0])
                meas, pr, status, plan, parts = runs[1]
                ratio = pr[0] / meas if meas > 0 and pr[0] > 0 else 0.0
                ratio_np = pr[0] / (meas - parts[0]) if meas - parts[0] > 0 and pr[0] > 0 else 0.0
                out.append(f"{v}: ratio {ratio:.2f} (without plan {ratio_np:.2f}) measured {meas * 1e3:.2f} ms "
                           f"predicted {pr[0] * 1e3:.2f} ms {status} {plan} predicted setup/solve/verify "
                           f"{'/'.join('%.2f' % (x * 1e3) for x in pr[1:])} measured plan/setup/solve/verify "
                           f"{'/'.join('%.2f' % (x * 1e3) for x in parts)}")
            print(f"{os.path.basename(f)} {which} " + " | ".join(out), flush=True)


if __name__ == "__main__":
    main()
