#!/usr/bin/env bash
# A/B of block CG's fp32 iterations inside fp64 refinement (solvers/block_cg.hpp; `solve
# --precision auto` on the GPU) against the fp64 block CG (TCSOLVE_CG_FP32=0), alternating on
# each row in one call, REPS runs each. Prints seconds.solve / seconds.total, iterations, the
# largest true relative residual, status and the precision account; then solve_steps (stream time
# of A's applies and the rest) of the last run of each.
#   T=path/to/tcsolve [REPS=3] [ROWS="matrix args|..."] bash bench/e2e/cg_fp32_ab.sh
set -u
T=${T:-.device-data/s4/tcsolve}
REPS=${REPS:-3}
ROWS=${ROWS:-"gen:elast3d:64 --rhs random:32|gen:lap3d:100 --rhs random:32 --precond jacobi|gen:lap3d:100 --rhs random:32|gen:elast3d:64 --rhs random:8"}
one() { "$@" --json 2>/dev/null | python3 -c "
import json, sys; d = json.load(sys.stdin); s = d['seconds']
print('%.4f/%.4f it %d res %.2e %s' % (s['solve'], s['total'], d['iterations'], max(d['residual_norms']), d['status']), end='  ')
open('/tmp/cg_last.txt', 'w').write(d.get('precision', '') + ' | ' + d.get('solve_steps', ''))"; }
IFS='|' read -ra rows <<< "$ROWS"
for row in "${rows[@]}"; do
  echo "$row"
  for r in $(seq "$REPS"); do
    echo -n "   mixed: "; TCSOLVE_CG_FP32=1 one $T solve $row; m=$(cat /tmp/cg_last.txt)
    echo -n "| fp64: "; TCSOLVE_CG_FP32=0 one $T solve $row; echo
  done
  echo "   mixed: $m"; echo "   fp64:  $(cat /tmp/cg_last.txt)"
done
