#!/usr/bin/env bash
# Same-run A/B of the fused Chebyshev filter step on the default eigs path: default (fused where
# rows are short) against TCSOLVE_FUSED_STEP=0, interleaved, 3 repetitions; seconds.solve/total.
# docs/performance.md, "Fused Chebyshev filter step in eigs".
#   bash bench/eigs_fused_ab.sh [TCSOLVE]     (default build/apps/tcsolve)
set -u
T=${1:-build/apps/tcsolve}
PY=${PYTHON:-python3}
run() { tag=$1; shift; "$T" eigs "$@" --json 2>/dev/null | $PY -c "
import json,sys; d=json.loads(sys.stdin.read()); s=d['seconds']
print(f\"{sys.argv[1]:6s} {' '.join(sys.argv[2:]):50s} {d['status']:10s} {d['method']:10s} it {d['iterations']:4d} solve {s['solve']:.3f} total {s['total']:.3f}\")" $tag "$@"; }
"$T" eigs gen:lap3d:100 --k 16 -q >/dev/null 2>&1  # warm-up
for args in "gen:lap3d:100 --k 16" "gen:lap3d:100 --k 16 --which largest" "gen:lap3d:100 --k 64" \
            "gen:lap2d:1000 --k 32" "gen:lap2d:200 --k 16" "gen:lap3d:64 --k 256"; do
  for rep in 1 2 3; do
    TCSOLVE_FUSED_STEP=1 run fused $args
    TCSOLVE_FUSED_STEP=0 run plain $args
  done
done
