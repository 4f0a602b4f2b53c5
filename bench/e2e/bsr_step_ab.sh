#!/usr/bin/env bash
# A/B of the bsr_block operator (A's natural 3×3 blocks, spmm/chebyshev_step.cu; the eigensolver's
# filter steps on the same blocks) against the tensor-core operator (TCSOLVE_BSR_OPERATOR=0),
# alternating on each row in one call, REPS runs each; prints the kernel, seconds (total, setup,
# solve, verify), iterations, the largest residual and, for eigs, the solve steps.
#   T=path/to/tcsolve [REPS=2] [ROWS="task|matrix|args;..."] bash bench/e2e/bsr_step_ab.sh
set -u
T=${T:-.device-data/s4/tcsolve}
REPS=${REPS:-2}
ROWS=${ROWS:-"eigs|gen:elast3d:64|--k 16 --which largest;eigs|gen:elast3d:40|--k 10;eigs|gen:elast3d:64|--k 16;solve|gen:elast3d:64|--rhs random:32"}
IFS=';' read -ra rows <<< "$ROWS"
for row in "${rows[@]}"; do
  IFS='|' read -r task m args <<< "$row"
  for rep in $(seq "$REPS"); do
    for knob in 0 1; do
      w0=$(date +%s.%N)
      out=$(TCSOLVE_BSR_OPERATOR=$knob $T $task "$m" $args --json 2>/dev/null)
      w1=$(date +%s.%N)
      echo "$out" | /usr/bin/env python3 -c "
import json,sys
d=json.load(sys.stdin); s=d['seconds']
res=d.get('residual_norms') or d.get('relative_residuals') or [0]
print('%-5s %-16s %-22s bsr=%s rep=%s %-10s %s total=%.3f setup=%.3f solve=%.3f verify=%.3f wall=%.3f it=%s max_res=%.2e' % (
  '$task', '$m', '$args', '$knob', '$rep', d.get('kernel',''), d['status'], s['total'], s.get('setup',0), s.get('solve',0),
  s.get('verify',0), $w1-$w0, d.get('iterations'), max(res)))
if '$task' == 'eigs': print('   ', str(d.get('solve_steps'))[:260])
"
    done
  done
done
