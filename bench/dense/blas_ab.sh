#!/usr/bin/env bash
# A/B of the CPU dense ops on OpenBLAS against Eigen (TCSOLVE_DENSE_BLAS=0), end to end with
# --device cpu: the block solvers' default and named paths, alternating, ROUNDS rounds.
# Usage: bench/dense/blas_ab.sh TCSOLVE [ROUNDS]   (prints one line a run: seconds.total/solve)
set -u
T=$1; R=${2:-2}
runs=("eigs gen:lap2d:300 --k 16" "eigs gen:lap3d:40 --k 32 --method chebyshev"
      "eigs gen:lap3d:30 --k 16 --method lobpcg" "solve gen:lap3d:40 --rhs random:32"
      "eigs gen:elast3d:16 --k 10 --method lobpcg")
for r in $(seq 1 "$R"); do
  for a in "${runs[@]}"; do
    for v in 0 1; do
      TCSOLVE_DENSE_BLAS=$v "$T" $a --device cpu --json 2>/dev/null | python3 -c "
import json, sys
j = json.load(sys.stdin); s = j['seconds']
print('round $r  BLAS=$v  %-45s %s total %.3f solve %.3f verify %.3f' % ('$a', j.get('status'), s['total'], s.get('solve', 0), s.get('verify', 0)))"
    done
  done
done
