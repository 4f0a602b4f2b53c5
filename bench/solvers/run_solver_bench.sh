#!/usr/bin/env bash
# One device call: tcsolve solvers vs CuPy eigsh, torch.lobpcg, SciPy eigsh, 32 x CuPy cg.
# usage: bench/solvers/run_solver_bench.sh BUILD_DIR OUT_CSV   (matrices: $TCSOLVE_MATRICES)
set -u
B=${1:-/tmp/build}; OUT=${2:-solver_bench.csv}
SB=$B/bench/solver_bench
echo "method,device,matrix,k,seconds,status,iterations,applies,max_rel_residual,max_eig_error,orth,detail" > "$OUT"
run() { echo "+ $*" >&2; "$@" >> "$OUT" || echo "failed: $*" >&2; }
for m in lobpcg lanczos; do
  for spec in gen:lap2d:200 gen:lap3d:40; do
    run $SB eig $spec $m 16 smallest 1e-8 cuda
  done
done
run $SB eig gen:lap2d:200 lanczos 16 smallest 1e-8 cpu 0 1
run $SB cg gen:lap3d:100 32 1e-8 cuda jacobi
M=${TCSOLVE_MATRICES:-}
if [ -n "$M" ]; then
  for f in bcsstk08 bcsstk10 bcsstk21; do
    [ -f "$M/$f.mtx" ] || continue
    run $SB eig "$M/$f.mtx" lanczos 16 largest 1e-8 cuda
    run $SB eig "$M/$f.mtx" lobpcg 16 largest 1e-8 cuda
    run $SB cg "$M/$f.mtx" 32 1e-8 cuda jacobi 1
  done
fi
PYTHONUNBUFFERED=1 timeout 300 python3 "$(dirname "$0")/solver_anchors.py" all >> "$OUT"
cat "$OUT"
