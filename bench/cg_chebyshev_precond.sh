#!/usr/bin/env bash
# Block CG: Jacobi against the Chebyshev polynomial preconditioner, in the same run (interleaved,
# two repetitions of each default, then fixed degrees). docs/performance.md, "Block CG with a
# Chebyshev polynomial preconditioner".
#   bash bench/cg_chebyshev_precond.sh [TCSOLVE] [MATRICES...]   (default: build/apps/tcsolve,
#   gen:lap3d:100 gen:elast3d:48; right-hand sides 32 and 128)
set -u
T=${1:-build/apps/tcsolve}
shift || true
MATS=${*:-gen:lap3d:100 gen:elast3d:48}
PY=${PYTHON:-python3}
run() { "$T" solve "$@" --json 2>/dev/null | $PY -c "
import json,sys; d=json.loads(sys.stdin.read()); s=d['seconds']
print(f\"{' '.join(sys.argv[1:]):66s} {d['status']:10s} it {d['iterations']:4d} applies {d['operator_applies']:7d} solve {s['solve']:.3f} setup {s['setup']:.3f} total {s['total']:.3f} | {d.get('message','')[:230]}\")" "$@"; }
"$T" solve gen:lap3d:100 --rhs random:32 -q >/dev/null 2>&1  # warm-up (CUDA context, caches)
for m in $MATS; do
  for s in 32 128; do
    for rep in 1 2; do
      run "$m" --rhs random:$s --precond jacobi
      run "$m" --rhs random:$s --precond chebyshev
      TCSOLVE_PRECOND_VECTORS=fp64 run "$m" --rhs random:$s --precond chebyshev  # fp64 blocks (A/B)
    done
    for d in 8 16 32; do run "$m" --rhs random:$s --precond chebyshev --precond-degree $d; done
  done
done
