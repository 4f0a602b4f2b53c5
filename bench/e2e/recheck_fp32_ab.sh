#!/usr/bin/env bash
# A/B of the filter re-check's steps on A's values rounded to fp32 (solvers/eigs/recheck.cpp)
# against A itself (TCSOLVE_RECHECK_FP32=0), alternating on each row in one call, REPS runs each;
# prints seconds.solve / seconds.verify, the verification and whether the set was verified.
#   T=path/to/tcsolve [REPS=3] [ROWS="matrix args|..."] bash bench/e2e/recheck_fp32_ab.sh
set -u
T=${T:-.device-data/s4/tcsolve}
REPS=${REPS:-3}
ROWS=${ROWS:-"gen:lap3d:100 --k 16 --which largest|gen:lap3d:100 --k 16|gen:lap3d:100 --k 64|gen:lap2d:200 --k 16|gen:lap2d:1000 --k 32|gen:lap3d:64 --k 256|gen:elast3d:40 --k 10"}
one() { "$@" --json 2>/dev/null | python3 -c "
import json, sys; d = json.load(sys.stdin); s = d['seconds']
print('%.4f/%.4f %s %s' % (s['solve'], s['verify'], d['status'], 'fp32' if 'rounded to fp32' in d['certificate'] else 'fp64'), end='  ')"; }
IFS='|' read -ra rows <<< "$ROWS"
for row in "${rows[@]}"; do
  echo "$row"
  for r in $(seq "$REPS"); do
    echo -n "   fp32: "; one $T eigs $row; echo -n "| fp64: "; TCSOLVE_RECHECK_FP32=0 one $T eigs $row; echo
  done
done
