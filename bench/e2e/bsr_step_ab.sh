#!/usr/bin/env bash
# A/B of the filter's BSR step (spmm/chebyshev_step.cu on A's natural 3×3 blocks) against the
# operator's own apply (TCSOLVE_BSR_STEP=0), alternating on each row in one call, REPS runs each;
# prints seconds (total, setup, solve, verify), iterations, the verification and the solve steps.
#   T=path/to/tcsolve [REPS=2] [ROWS="..."] bash bench/e2e/bsr_step_ab.sh
set -u
T=${T:-.device-data/s4/tcsolve}
REPS=${REPS:-2}
ROWS=${ROWS:-"gen:elast3d:64|--k 16 --which largest;gen:elast3d:40|--k 10;gen:elast3d:64|--k 16"}
IFS=';' read -ra rows <<< "$ROWS"
for row in "${rows[@]}"; do
  m=${row%%|*}; args=${row#*|}
  for rep in $(seq "$REPS"); do
    for knob in 0 1; do
      TCSOLVE_BSR_STEP=$knob $T eigs "$m" $args --json 2>/dev/null | /usr/bin/env python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['seconds']
print('%-16s %-22s bsr=%s rep=%s status=%s total=%.3f setup=%.3f solve=%.3f verify=%.3f it=%s pred=%.3f max_res=%.2e' % (
  '$m', '$args', '$knob', '$rep', d['status'], s['total'], s['setup'], s['solve'], s['verify'], d['iterations'],
  d.get('predicted_seconds', 0), max(d['residual_norms'])))
print('   ', d['solve_steps'][:300])
print('   ', d['method_reason'][:200], '|', d['verification'], d['certified'])
"
    done
  done
done
