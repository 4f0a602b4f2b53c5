#!/usr/bin/env python3
"""Two tcsolve builds on the planner sweep's rows, interleaved row by row (A then B on each row),
so that both see the same machine state (a shared 2-core machine's load moves by minutes). Each
row as bench/planner_sweep.py runs it (--repeat: the median of N runs for a row under 1 s); no
explicit-method reruns and no reference errors (the sweep itself does those).

usage: /usr/bin/python3 bench/planner_sweep_ab.py TCSOLVE_A TCSOLVE_B MATRICES_DIR OUT_PREFIX
           [--device cpu] [--only SUBSTR] [--sizes small|large|both] [--repeat N] [--ks 1,6,32]
writes OUT_PREFIX.a.jsonl, OUT_PREFIX.b.jsonl (the sweep's row format, less error/explicit)
"""
import argparse
import importlib.util
import json
import os
import re
import tempfile

spec_ = importlib.util.spec_from_file_location("planner_sweep", os.path.join(os.path.dirname(__file__), "planner_sweep.py"))
ps = importlib.util.module_from_spec(spec_)
spec_.loader.exec_module(ps)


def row_of(d, spec, n, which, k, measured_all):
    s = d.get("seconds", {})
    reason = d.get("method_reason", "")
    return {"matrix": os.path.basename(spec), "n": n, "which": which, "k": k, "exit": d.get("exit"),
            "status": d.get("status", "error"), "plan": f"{d.get('method')}/{d.get('transform')}/{d.get('verification')}",
            "escalated": bool(re.search(r"went on with|switched after", reason)),
            "predicted_s": d.get("predicted_seconds", 0.0), "measured_s": ps.measured_of(d),
            "plan_s": s.get("plan", 0.0), "seconds": s, "measured_all": measured_all,
            "predicted_iterations": ps.predicted_iterations(reason), "iterations": d.get("iterations"),
            "reason": reason}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a"); ap.add_argument("b"); ap.add_argument("mdir"); ap.add_argument("prefix")
    ap.add_argument("--device", default="cpu"); ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--only", default=""); ap.add_argument("--sizes", default="both")
    ap.add_argument("--ks", default="1,6,32"); ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    specs = ps.symmetric_files(args.mdir)
    for fam, (small, large) in ps.FAMILIES.items():
        if args.sizes in ("small", "both"): specs.append(small)
        if args.sizes in ("large", "both"): specs.append(large)
    specs = [s for s in specs if args.only in s]
    tmp = tempfile.mkdtemp(prefix="planner_sweep_ab_")
    outs = {w: open(f"{args.prefix}.{w}.jsonl", "w") for w in ("a", "b")}
    for spec in specs:
        n = ps.load(args.a, spec, tmp).shape[0]
        for which in ("smallest", "largest"):
            for k in [int(x) for x in args.ks.split(",")]:
                if k >= n - 1:
                    continue
                for w in ("a", "b"):
                    args.tcsolve = getattr(args, w)
                    d, all_ = ps.median_run(args, spec, k, which)
                    r = row_of(d, spec, n, which, k, all_)
                    outs[w].write(json.dumps(r) + "\n"); outs[w].flush()
                    print(f"{w} {r['matrix']} {which} k={k}: {r['plan']} pred {r['predicted_s']:.3g} "
                          f"meas {r['measured_s']:.3g}", flush=True)


if __name__ == "__main__":
    main()
