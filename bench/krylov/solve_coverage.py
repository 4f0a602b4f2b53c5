#!/usr/bin/env python3
"""Issue 43's coverage row: `tcsolve solve FILE --rhs random:16 --json` (no other option) on every
matrix of ../shared/matrices (symmetric ones and general/), as a new user would run it.

For each: the kind tcsolve saw, the method it chose (and any fallback), the status, the largest
backward error ‖b−Ax‖/(‖A‖_F‖x‖+‖b‖) (square) or optimality ‖Aᵀr‖/(‖A‖_F‖r‖) (rectangular), the
process wall clock, and the verdict: ok (converged, every column ≤ 1e-10), singular (status
breakdown naming "singular to working precision" with a least-squares answer), or FAIL.
Mass matrices (bcsstm*) are included: they are matrices users solve with too.
usage: solve_coverage.py TCSOLVE [OUT.md] [--device cpu|cuda]
"""
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.environ.get("TCSOLVE_MATRICES_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "matrices")


def run(tcsolve, path, device):
    t0 = time.perf_counter()
    p = subprocess.run([tcsolve, "solve", path, "--rhs", "random:16", "--json", "--device", device],
                       capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"status": f"exit {p.returncode}", "message": (p.stderr or p.stdout).strip()[-300:]}, wall
    return d, wall


def verdict(d):
    be = d.get("backward_errors") or []
    opt = d.get("optimality") or []
    worst = max(opt) if opt else (max(be) if be else float("nan"))
    st = d.get("status")
    msg = str(d.get("message", ""))
    if st == "converged" and worst <= 1e-10:
        return "ok", worst
    if st == "breakdown" and "singular to working precision" in msg and opt:
        return "singular", worst
    return "FAIL", worst


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    device = "cuda" if "--device=cuda" in sys.argv or ("--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] == "cuda") else "cpu"
    tcsolve = args[0]
    out = args[1] if len(args) > 1 else None
    sym = os.path.join(ROOT, "suitesparse") if os.path.isdir(os.path.join(ROOT, "suitesparse")) else ROOT
    files = sorted(glob.glob(os.path.join(sym, "*.mtx")) + glob.glob(os.path.join(sym, "*.rsa"))
                   + glob.glob(os.path.join(ROOT, "general", "*.mtx")) + glob.glob(os.path.join(ROOT, "general", "*.rua")))
    rows, counts = [], {}
    for f in files:
        d, wall = run(tcsolve, f, device)
        v, worst = verdict(d)
        counts[v] = counts.get(v, 0) + 1
        name = os.path.relpath(f, ROOT)
        row = (f"| {name} | {d.get('matrix_kind', '')} | {d.get('method', '')} | {d.get('status')} | {worst:.1e} | "
               f"{wall:.2f} | {v} | {str(d.get('method_reason', d.get('message', '')))[:160]} |")
        rows.append(row)
        print(row, flush=True)
    text = ["| matrix | kind | method | status | worst backward error / optimality | wall s | verdict | plan |",
            "|---|---|---|---|---|---|---|---|"] + rows
    text.append("")
    text.append("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (of {len(files)})")
    print(text[-1])
    if out:
        with open(out, "w") as fh:
            fh.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
