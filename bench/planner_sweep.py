#!/usr/bin/env python3
"""The eigs planner on the default path (issue 42): every symmetric shared SuiteSparse matrix and the
issue's families (rgg with 2 and 3 components, neumann2d/3d, jump2d/3d, stiff) at two sizes, for the
smallest and the largest eigenvalues at k = 1, 6, 32, as a new user runs it:

    tcsolve eigs M --k K --which W --device DEV --json

Per row: the plan (method/transform/verification, escalations), predicted against measured seconds
(setup + solve + verify, as the plan prices them; the plan's own seconds apart) and iterations (the
filter's predicted outer iterations where it priced them), the exit status, and the largest error of
the returned values against a dense reference (numpy eigh, n <= 5000) or a closed form (neumann:
the grid's cosines; stiff: the constrained dofs' eigenvalue 1 for k <= M). A row that does not end
converged is run again with each explicit method (lanczos, lobpcg, chebyshev, dense where n <= 4000)
to say whether one would have succeeded. A converged row whose values miss the reference by more
than max(1e-6 |ref|, 1e3 u ||A||) counts as wrong.

usage: /usr/bin/python3 bench/planner_sweep.py TCSOLVE MATRICES_DIR OUT.jsonl SUMMARY.md
           [--device cpu|cuda] [--timeout S] [--only SUBSTR] [--sizes small|large|both] [--resume]
           [--rescore]   (the errors of OUT.jsonl's rows again, nothing run)
           [--repeat N]  (a row whose first run measured under 1 s runs N times; the run with the
                          median measured seconds is kept, all N in measured_all: millisecond rows
                          are noisy on a shared machine)
"""
import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse as sp

U = 1.1102230246251565e-16
FAMILIES = {  # (small, large)
    "rgg2": ("gen:rgg:4000:2", "gen:rgg:40000:2"),
    "rgg3": ("gen:rgg:4000:3", "gen:rgg:40000:3"),
    "neumann2d": ("gen:neumann2d:60", "gen:neumann2d:250"),
    "neumann3d": ("gen:neumann3d:14", "gen:neumann3d:32"),
    "jump2d": ("gen:jump2d:60:1e6", "gen:jump2d:250:1e6"),
    "jump3d": ("gen:jump3d:14:1e6", "gen:jump3d:30:1e6"),
    "stiff": ("gen:stiff:8:74", "gen:stiff:12:74"),
}


def symmetric_files(mdir):
    out = []
    for f in sorted(glob.glob(os.path.join(mdir, "*"))):
        if f.endswith(".mtx"):
            with open(f) as fh:
                head = fh.readline().lower()
            if "symmetric" in head and "skew" not in head and "complex" not in head:
                out.append(f)
        elif f.endswith(".rsa"):  # Rutherford-Boeing real symmetric assembled
            base = f[:-4] + ".mtx"
            if not os.path.exists(base):
                out.append(f)
    return out


def load(tcs, spec, tmp):
    """The matrix as scipy CSR (through tcsolve convert for generators and RB files)."""
    path = spec
    if not spec.endswith(".mtx"):
        path = os.path.join(tmp, re.sub(r"[^A-Za-z0-9_.]", "_", spec) + ".mtx")
        if not os.path.exists(path):
            subprocess.run([tcs, "convert", spec, path, "-q"], check=True, timeout=600)
    a = scipy.io.mmread(path)
    return sp.csr_matrix(a)


def closed_form(spec, n):
    m = re.match(r"gen:neumann2d:(\d+)(?:x(\d+))?$", spec)
    if m:
        nx = int(m.group(1)); ny = int(m.group(2) or nx)
        ex = 4 * np.sin(np.pi * np.arange(nx) / (2 * nx)) ** 2
        ey = 4 * np.sin(np.pi * np.arange(ny) / (2 * ny)) ** 2
        return np.sort((ex[:, None] + ey[None, :]).ravel())
    m = re.match(r"gen:neumann3d:(\d+)$", spec)
    if m:
        nx = int(m.group(1))
        e = 4 * np.sin(np.pi * np.arange(nx) / (2 * nx)) ** 2
        return np.sort((e[:, None, None] + e[None, :, None] + e[None, None, :]).ravel())
    return None


def reference(tcs, spec, tmp, cache):
    if spec in cache:
        return cache[spec]
    a = load(tcs, spec, tmp)
    n = a.shape[0]
    norm = abs(a).sum(axis=1).max()
    ref, kind = closed_form(spec, n), "closed form"
    if ref is None and n <= 5000:
        dense = a.toarray()
        ref, kind = np.linalg.eigvalsh(dense), "dense"
        # The smallest of an SPD matrix through the Cholesky-inverse (relatively accurate, unlike a
        # plain dense solve's smallest, whose error is ~u*||A||: bcsstk20 1.7e-5 relative).
        try:
            # only where A is positive definite beyond rounding (a singular Laplacian's Cholesky
            # may pass with pivots at rounding level, and its inverse is noise)
            if ref[0] <= 1e3 * U * norm:
                raise np.linalg.LinAlgError("singular to working precision")
            low = np.linalg.cholesky(dense)
            li = np.linalg.solve(low, np.eye(n))
            mu = np.linalg.eigvalsh(li.T @ li)
            ref = (np.sort(1.0 / mu[::-1]), ref)
            kind = "dense (smallest by the Cholesky-inverse)"
        except np.linalg.LinAlgError:
            pass
    stiff = re.match(r"gen:stiff:\d+:(\d+)", spec)
    if ref is None and stiff:
        ref, kind = np.ones(int(stiff.group(1))), "closed form (smallest only)"
    cache[spec] = (n, float(norm), ref, kind)
    return cache[spec]


def run(tcs, spec, k, which, device, timeout, method=None):
    cmd = [tcs, "eigs", spec, "--k", str(k), "--which", which, "--device", device, "--json"]
    if method:
        cmd += ["--method", method]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"exit": "timeout", "wall": time.time() - t0}
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return {"exit": p.returncode, "error": (p.stderr or p.stdout)[-300:], "wall": time.time() - t0}
    d["exit"] = p.returncode
    d["wall"] = time.time() - t0
    return d


def measured_of(d):
    s = d.get("seconds", {})
    return sum(s.get(x, 0.0) for x in ("setup", "solve", "verify"))


def median_run(args, spec, k, which):
    """One run, or args.repeat runs where the first measured under 1 s: the median one."""
    d = run(args.tcsolve, spec, k, which, args.device, args.timeout)
    runs = [d]
    if args.repeat > 1 and 0 < measured_of(d) < 1.0:
        runs += [run(args.tcsolve, spec, k, which, args.device, args.timeout) for _ in range(args.repeat - 1)]
    runs.sort(key=measured_of)
    return runs[len(runs) // 2], [measured_of(x) for x in runs]


def chosen_predicted(reason):
    """The chosen plan's predicted seconds (before any escalation), from method_reason."""
    m = re.match(r"auto: [^;]*?: predicted ([0-9.e+-]+) s", reason or "")
    return float(m.group(1)) if m else None


def predicted_iterations(reason):
    chosen = (reason or "").split("; best rejected")[0]
    m = re.search(r"([0-9.]+) outer iterations", chosen)
    return float(m.group(1)) if m else None


def error_of(d, which, ref, norm, smallest_only):
    if ref is None or "eigenvalues" not in d:
        return None
    if isinstance(ref, tuple):  # (smallest end, whole spectrum)
        ref = ref[0] if which == "smallest" else ref[1]
    vals = np.array(d["eigenvalues"], dtype=float)
    if which == "smallest":
        want = ref[: len(vals)]
    else:
        if smallest_only:
            return None
        want = ref[::-1][: len(vals)]
    if len(want) < len(vals):
        return None
    # error > 1e-6 <=> a value misses by more than max(1e-6 |ref|, 1e3 u ||A||) (the docstring's
    # test; a dense reference of a zero eigenvalue is itself only good to ~u ||A||)
    scale = np.maximum(np.abs(want), 1e9 * U * norm)
    return float(np.max(np.abs(vals - want) / scale))


def rescore(args):
    """The errors of the rows in OUT.jsonl again, against the references as computed now."""
    rows = [json.loads(line) for line in open(args.out)]
    tmp, cache = tempfile.mkdtemp(prefix="planner_sweep_"), {}
    for r in rows:
        spec = r["matrix"] if r["matrix"].startswith("gen:") else os.path.join(args.mdir, r["matrix"])
        n, norm, ref, kind = reference(args.tcsolve, spec, tmp, cache)
        r["reference"] = kind if ref is not None else None
        r["error"] = error_of({"eigenvalues": r["values"]} if r.get("values") else {}, r["which"], ref, norm,
                              kind.endswith("(smallest only)"))
    with open(args.out, "w") as out:
        for r in rows:
            out.write(json.dumps(r) + "\n")
    write_summary(rows, args.summary, args.device)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tcsolve"); ap.add_argument("mdir"); ap.add_argument("out"); ap.add_argument("summary")
    ap.add_argument("--device", default="cpu"); ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--only", default=""); ap.add_argument("--sizes", default="both")
    ap.add_argument("--ks", default="1,6,32")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in OUT.jsonl")
    ap.add_argument("--rescore", action="store_true", help="recompute the errors of OUT.jsonl's rows only")
    ap.add_argument("--repeat", type=int, default=1, help="runs of a row under 1 s (the median one kept)")
    args = ap.parse_args()
    if args.rescore:
        return rescore(args)
    specs = symmetric_files(args.mdir)
    for fam, (small, large) in FAMILIES.items():
        if args.sizes in ("small", "both"): specs.append(small)
        if args.sizes in ("large", "both"): specs.append(large)
    specs = [s for s in specs if args.only in s]
    ks = [int(x) for x in args.ks.split(",")]
    rows, cache = [], {}
    done = {}
    if args.resume and os.path.exists(args.out):
        for line in open(args.out):
            r = json.loads(line)
            done[(r["matrix"], r["which"], r["k"])] = r
    tmp = tempfile.mkdtemp(prefix="planner_sweep_")
    with open(args.out, "a" if args.resume else "w") as out:
        for spec in specs:
            n, norm, ref, kind = reference(args.tcsolve, spec, tmp, cache)
            for which in ("smallest", "largest"):
                for k in ks:
                    if k >= n - 1:
                        continue
                    if (os.path.basename(spec), which, k) in done:
                        rows.append(done[(os.path.basename(spec), which, k)])
                        continue
                    d, measured_all = median_run(args, spec, k, which)
                    s = d.get("seconds", {})
                    reason = d.get("method_reason", "")
                    measured = measured_of(d)
                    row = {
                        "matrix": os.path.basename(spec), "n": n, "which": which, "k": k,
                        "exit": d.get("exit"), "status": d.get("status", "error"),
                        "plan": f"{d.get('method')}/{d.get('transform')}/{d.get('verification')}",
                        "escalated": bool(re.search(r"went on with|switched after", reason)),
                        "predicted_s": d.get("predicted_seconds", 0.0), "measured_s": measured,
                        "plan_s": s.get("plan", 0.0), "wall_s": d.get("wall"),
                        "predicted_iterations": predicted_iterations(reason),
                        "iterations": d.get("iterations"), "reference": kind if ref is not None else None,
                        "error": error_of(d, which, ref, norm, kind.endswith("(smallest only)")),
                        "message": d.get("message") or d.get("error", ""), "reason": reason,
                        "values": d.get("eigenvalues"), "seconds": s, "measured_all": measured_all,
                        "chosen_predicted_s": chosen_predicted(reason),
                    }
                    if row["status"] != "converged" or row["exit"] != 0:
                        alt = {}
                        for m in ("lanczos", "lobpcg", "chebyshev", "dense"):
                            if m == "dense" and n > 4000:
                                continue
                            e = run(args.tcsolve, spec, k, which, args.device, args.timeout, m)
                            alt[m] = e.get("status", str(e.get("exit")))
                        row["explicit"] = alt
                    rows.append(row)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(f"{row['matrix']} {which} k={k}: {row['status']} {row['plan']} "
                          f"pred {row['predicted_s']:.3g} s meas {measured:.3g} s err {row['error']}"
                          f"{' explicit ' + str(row.get('explicit')) if 'explicit' in row else ''}", flush=True)
    write_summary(rows, args.summary, args.device)


def write_summary(rows, path, device):
    priced = [r for r in rows if r["predicted_s"] > 0 and r["measured_s"] > 0]
    ratios = [r["measured_s"] / r["predicted_s"] for r in priced]
    within2 = sum(1 for x in ratios if 0.5 <= x <= 2.0)
    over5 = sum(1 for x in ratios if x > 5.0 or x < 0.2)
    failing = [r for r in rows if r["status"] != "converged" or r["exit"] != 0]
    rescuable = [r for r in failing if any(v == "converged" for v in r.get("explicit", {}).values())]
    wrong = [r for r in rows if r["status"] == "converged" and r["error"] is not None and r["error"] > 1e-6]
    lines = [f"# planner sweep ({device}): {len(rows)} rows", "",
             f"- default-path rows not converged (or exit != 0): {len(failing)}; of them an explicit method "
             f"converges: {len(rescuable)}",
             f"- converged rows wrong against the reference (error > 1e-6): {len(wrong)}",
             f"- escalated rows: {sum(r['escalated'] for r in rows)}",
             f"- measured/predicted seconds (setup+solve+verify) on {len(priced)} priced rows: within 2x "
             f"{within2} ({100.0 * within2 / max(1, len(priced)):.0f} %), beyond 5x {over5}; median "
             f"{np.median(ratios) if ratios else float('nan'):.2f}", "",
             "| matrix | n | which | k | status | plan | esc | predicted s | measured s | ratio | pred its | its | error | explicit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r["measured_s"] / r["predicted_s"] if r["predicted_s"] > 0 else float("nan")
        err = "-" if r["error"] is None else f"{r['error']:.1e}"
        pi = "-" if r["predicted_iterations"] is None else f"{r['predicted_iterations']:.0f}"
        ex = ",".join(f"{m}:{v}" for m, v in r.get("explicit", {}).items())
        lines.append(f"| {r['matrix']} | {r['n']} | {r['which']} | {r['k']} | {r['status']} | {r['plan']} | "
                     f"{'yes' if r['escalated'] else ''} | {r['predicted_s']:.3g} | {r['measured_s']:.3g} | "
                     f"{ratio:.2f} | {pi} | {r['iterations']} | {err} | {ex} |")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
