#!/usr/bin/env python3
"""Checks `tcsolve eigs gen:lap3d:N --json` output against the exact spectrum of the 7-point
Dirichlet Laplacian: lambda(i, j, l) = 6 - 2 (cos(pi i/(N+1)) + cos(pi j/(N+1)) + cos(pi l/(N+1))),
1 <= i, j, l <= N (with multiplicities). Usage: scale_check_eigs.py LOG [LOG...]: each LOG holds
the JSON line of one run; prints, per run, the largest |lambda - exact| / |lambda_max| over the
k values (smallest or largest k of the exact spectrum, by the sign of the result) and the largest
residual. Exit status 1 when a checked run is off by more than 1e-6 relative."""
import json, math, re, sys

def exact(n, k, largest):
    c = [math.cos(math.pi * i / (n + 1)) for i in range(1, n + 1)]
    c.sort()  # ascending cos: the largest lambdas use the most negative cosines
    cand = c[: min(n, k + 2)] if largest else c[-min(n, k + 2):]
    vals = sorted((6 - 2 * (a + b + d) for a in cand for b in cand for d in cand), reverse=largest)
    return vals[:k]

bad = False
for path in sys.argv[1:]:
    txt = open(path).read()
    line = next((l for l in txt.splitlines() if l.startswith("{") and '"task"' in l), None)
    if line is None:
        print(f"{path}: no JSON result")
        continue
    r = json.loads(line)
    m = re.match(r"gen:lap3d:(\d+)$", r["matrix"])
    vals = r.get("eigenvalues", [])
    res = max(r.get("residual_norms", [float("nan")]) or [float("nan")])
    if not m or not vals:
        print(f"{path}: {r['matrix']} status {r['status']}, {len(vals)} values, max residual {res:.3g} (no exact spectrum)")
        continue
    n = int(m.group(1))
    largest = vals[0] > 6
    ex = exact(n, len(vals), largest)
    got = sorted(vals, reverse=largest)
    err = max(abs(a - b) for a, b in zip(got, ex)) / max(abs(x) for x in ex)
    print(f"{path}: {r['matrix']} {'largest' if largest else 'smallest'} {len(vals)}: status {r['status']}, "
          f"max |lambda - exact| / |lambda| = {err:.2e}, max residual {res:.3g}, "
          f"iterations {r['iterations']}, seconds {r['seconds']}")
    bad |= err > 1e-6
sys.exit(1 if bad else 0)
