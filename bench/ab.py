#!/usr/bin/python3
"""A/B of two tcsolve variants on the same rows, alternating in one run (standard library only).

A side is a binary, environment settings and extra arguments; by default both sides use the same
binary, so an A/B of an environment switch needs only --a-env or --b-env:

  /usr/bin/python3 bench/ab.py --a-env TCSOLVE_DENSE_BLAS=0 --reps 3 \\
      "eigs gen:lap2d:300 --k 16 --device cpu" "solve gen:lap3d:40 --rhs random:32 --device cpu"
  /usr/bin/python3 bench/ab.py --a OLD/tcsolve --b build/apps/tcsolve --rows-file ROWS.txt
  /usr/bin/python3 bench/ab.py --a-args "--precision fp64" "eigs gen:lap3d:100 --k 16 --which largest"

Rows are the command lines after the binary, as arguments or one a line in --rows-file ('#'
starts a comment). Every run gets --json (unless --no-json) and is timed by this runner (`wall`:
the whole process). Each row runs --warmup untimed times per side, then --reps timed rounds; a
round runs a then b, the next b then a (ABBA), so a drift of the machine hits both sides alike.
--anchor CMD (a shell command, e.g. a fixed row that neither side changes, or a SciPy call) runs
once a round in the same run: its spread says how much the machine moved, and the sides' medians
are also given in anchor units.

Printed per row and metric (--metric, repeatable; a dotted path into the JSON, e.g.
seconds.solve, or `wall`): median [min-max] of a and b and the ratio b/a (< 1: b is faster).
A row whose status or iteration count differs between the sides is flagged: the two do not
compute the same thing, and the time ratio is then not a speed-up. --json OUT writes every sample.
Exit status 1 when a run failed (non-zero exit or unreadable JSON), 0 otherwise.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time


def parse_env(items):
    env = {}
    for item in items or []:
        for kv in item.split(","):
            if not kv:
                continue
            if "=" not in kv:
                sys.exit(f"ab.py: environment setting '{kv}' is not KEY=VALUE")
            k, v = kv.split("=", 1)
            env[k] = v
    return env


def field(doc, path):
    cur = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur if isinstance(cur, (int, float)) else None


def run_once(cmd, env, want_json, timeout):
    """One process: (wall seconds, parsed JSON or None, error text or None)."""
    full_env = dict(os.environ)
    full_env.update(env)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, None, f"timed out after {timeout} s"
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):  # tcsolve exits 1 on a run that did not converge
        return wall, None, f"exit {p.returncode}: {p.stderr.strip()[-300:]}"
    if not want_json:
        return wall, None, None
    try:
        return wall, json.loads(p.stdout), None
    except ValueError:
        return wall, None, f"exit {p.returncode}, stdout is not JSON: {p.stdout.strip()[-200:]!r}"


def run_anchor(cmd, timeout):
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    return time.perf_counter() - t0, rc


def summary(xs):
    if not xs:
        return None, "—"
    m = statistics.median(xs)
    if all(isinstance(x, int) for x in xs):  # counts (iterations)
        return m, f"{m:g} [{min(xs)}-{max(xs)}]"
    return m, f"{m:.4f} [{min(xs):.4f}-{max(xs):.4f}]"


def describe(side):
    env = " ".join(f"{k}={v}" for k, v in side["env"].items())
    return " ".join(x for x in (env, side["bin"], side["args"]) if x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("rows", nargs="*", help="command lines after the binary, one argument each")
    ap.add_argument("--rows-file", help="rows, one a line")
    for s in ("a", "b"):
        ap.add_argument(f"--{s}", dest=f"{s}_bin", help=f"binary of side {s}")
        ap.add_argument(f"--{s}-env", action="append", help=f"KEY=VALUE[,KEY=VALUE] for side {s}")
        ap.add_argument(f"--{s}-args", default="", help=f"arguments appended to every row on side {s}")
    ap.add_argument("--reps", type=int, default=3, help="timed runs of each side per row (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs of each side per row (default 1)")
    ap.add_argument("--metric", action="append",
                    help="JSON path (seconds.total, seconds.solve, iterations) or wall; default seconds.total and wall")
    ap.add_argument("--anchor", help="shell command timed once a round in the same run")
    ap.add_argument("--no-json", action="store_true", help="do not append --json (metric wall only)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--json", dest="json_out", help="write every sample here")
    args = ap.parse_args()

    rows = list(args.rows)
    if args.rows_file:
        with open(args.rows_file) as f:
            rows += [ln.split("#", 1)[0].strip() for ln in f if ln.split("#", 1)[0].strip()]
    if not rows:
        ap.error("no rows: give command lines as arguments or --rows-file")
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    a_bin = args.a_bin or "build/apps/tcsolve"
    sides = {"a": {"bin": a_bin, "env": parse_env(args.a_env), "args": args.a_args},
             "b": {"bin": args.b_bin or a_bin, "env": parse_env(args.b_env), "args": args.b_args}}
    if sides["a"] == sides["b"]:
        print("ab.py: the two sides are the same (an A/A run: the ratios show the noise)", file=sys.stderr)
    for s in sides.values():
        if not os.access(s["bin"], os.X_OK):
            sys.exit(f"ab.py: binary '{s['bin']}' is not executable")
    metrics = args.metric or (["wall"] if args.no_json else ["seconds.total", "wall"])
    if args.no_json and any(m != "wall" for m in metrics):
        ap.error("--no-json measures wall only")

    def command(side, row):
        cmd = [side["bin"]] + shlex.split(row) + shlex.split(side["args"])
        return cmd if args.no_json else cmd + ["--json"]

    print(f"a: {describe(sides['a'])}\nb: {describe(sides['b'])}")
    print(f"timed runs a side per row: {args.reps} after {args.warmup} untimed, ABBA order; "
          f"median [min-max] in seconds (iterations: counts); b/a < 1: b is faster")
    samples, anchor, failed = [], [], False
    width = max(len(r) for r in rows)
    for row in rows:
        for _ in range(args.warmup):
            for s in ("a", "b"):
                run_once(command(sides[s], row), sides[s]["env"], not args.no_json, args.timeout)
        got = {"a": [], "b": []}
        for rep in range(args.reps):
            for s in (("a", "b") if rep % 2 == 0 else ("b", "a")):
                wall, doc, err = run_once(command(sides[s], row), sides[s]["env"], not args.no_json, args.timeout)
                rec = {"row": row, "side": s, "rep": rep, "wall": wall, "error": err}
                if doc is not None:
                    rec["status"] = doc.get("status")
                    rec["iterations"] = doc.get("iterations")
                    for m in metrics:
                        if m != "wall":
                            rec[m] = field(doc, m)
                if err:
                    failed = True
                    print(f"  {row} [{s}] rep {rep}: {err}", file=sys.stderr)
                got[s].append(rec)
                samples.append(rec)
            if args.anchor:
                t, rc = run_anchor(args.anchor, args.timeout)
                anchor.append(t)
                if rc != 0:
                    print(f"  anchor rep {rep}: exit {rc}", file=sys.stderr)
        flags = []
        for key in ("status", "iterations"):
            va = sorted({str(r.get(key)) for r in got["a"] if not r["error"]})
            vb = sorted({str(r.get(key)) for r in got["b"] if not r["error"]})
            if not args.no_json and va != vb:
                flags.append(f"{key} differs: a {'/'.join(va)}, b {'/'.join(vb)}")
        status = "/".join(sorted({str(r.get("status")) for r in got["a"] + got["b"] if r.get("status")}))
        for i, m in enumerate(metrics):
            ma, ta = summary([r[m] for r in got["a"] if r.get(m) is not None])
            mb, tb = summary([r[m] for r in got["b"] if r.get(m) is not None])
            ratio = f"{mb / ma:.3f}" if ma and mb is not None else "—"
            head = row if i == 0 else ""
            tail = f"  {status}" if i == 0 and status else ""
            print(f"{head:{width}s}  {m:14s} a {ta:26s} b {tb:26s} b/a {ratio}{tail}")
        for f in flags:
            print(f"{'':{width}s}  !! {f}")
    if anchor:
        m, text = summary(anchor)
        spread = (max(anchor) - min(anchor)) / m * 100 if m else 0
        print(f"anchor ({args.anchor}): wall {text}, spread {spread:.1f} % of the median")
        walls = {s: statistics.median(r["wall"] for r in samples if r["side"] == s) for s in ("a", "b")}
        print(f"  median wall over every row in anchor units: a {walls['a'] / m:.2f}, b {walls['b'] / m:.2f}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"a": sides["a"], "b": sides["b"], "metrics": metrics, "samples": samples,
                       "anchor": {"command": args.anchor, "wall": anchor}}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
