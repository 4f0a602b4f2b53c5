#!/usr/bin/env bash
# One device call: tcsolve LOBPCG / block Lanczos / block CG on the GPU, optionally beside the
# anchors (CuPy eigsh, torch.lobpcg, SciPy eigsh on the CPU, 32 x CuPy cg; solver_anchors.py).
#
# usage: bench/solvers/run_solver_bench.sh BUILD_DIR OUT_DIR [anchors|no-anchors] [cuda|cpu]
#   BUILD_DIR  has bench/solver_bench (cmake --build BUILD_DIR --target solver_bench)
#   OUT_DIR    receives solver_bench.csv (raw rows) and solver_bench.txt (the table printed last)
#   matrices:  $TCSOLVE_MATRICES (bcsstk08/10/21 rows are skipped when absent)
# Every solver run has its own time limit (TCSOLVE_BENCH_TIMEOUT seconds, default 60), so a slow
# case costs at most that; tcsolve rows take about a minute in all on an H200, the anchors about
# two more (SciPy on the CPU dominates): use no-anchors to stay well inside a 4-minute call.
set -u
B=${1:?usage: run_solver_bench.sh BUILD_DIR OUT_DIR [anchors|no-anchors] [cuda|cpu]}
OUT=${2:?usage: run_solver_bench.sh BUILD_DIR OUT_DIR [anchors|no-anchors] [cuda|cpu]}
ANCHORS=${3:-anchors}
DEV=${4:-cuda}
LIMIT=${TCSOLVE_BENCH_TIMEOUT:-60}
SB=$B/bench/solver_bench
mkdir -p "$OUT"
CSV=$OUT/solver_bench.csv
echo "method,device,matrix,k,seconds,status,iterations,applies,max_rel_residual,max_eig_error,orth,detail" > "$CSV"
run() {
  echo "+ $*" >&2
  timeout "$LIMIT" "$@" >> "$CSV" || echo "failed or timed out (${LIMIT} s): $*" >&2
}
# 16 smallest eigenpairs of the Laplacians (closed-form check of every multiplicity).
for spec in gen:lap2d:200 gen:lap3d:40; do
  for m in lanczos lobpcg; do
    run "$SB" eig $spec $m 16 smallest 1e-8 "$DEV"
  done
done
# 32 right-hand sides on the 1M-row 3D Laplacian (its diagonal is constant: Jacobi is dropped).
run "$SB" cg gen:lap3d:100 32 1e-8 "$DEV" jacobi
M=${TCSOLVE_MATRICES:-}
if [ -n "$M" ]; then
  for f in bcsstk08 bcsstk10 bcsstk21; do
    [ -f "$M/$f.mtx" ] || continue
    run "$SB" eig "$M/$f.mtx" lanczos 16 largest 1e-8 "$DEV" 0 1
    run "$SB" eig "$M/$f.mtx" lobpcg 16 largest 1e-8 "$DEV" 0 1
    run "$SB" cg "$M/$f.mtx" 32 1e-8 "$DEV" jacobi 1
  done
fi
if [ "$ANCHORS" = anchors ]; then
  PY=python3
  [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import scipy" 2>/dev/null && PY=/usr/bin/python3
  PYTHONUNBUFFERED=1 timeout 200 $PY "$(dirname "$0")/solver_anchors.py" all >> "$CSV" \
    || echo "anchors failed or timed out" >&2
fi
# Compact table: method, device, matrix (file name only), k/rhs, seconds, iterations, applies,
# residual, eigenvalue error.
awk -F, 'NR == 1 { printf "%-15s %-5s %-14s %4s %9s %-13s %7s %8s %9s %9s\n", "method", "dev", "matrix", "k", "seconds", "status", "iters", "applies", "rel.res", "eig.err"; next }
         { m = $3; sub(".*/", "", m); sub("\\.mtx$", "", m);
           printf "%-15s %-5s %-14s %4s %9s %-13s %7s %8s %9s %9s\n", $1, $2, m, $4, $5, $6, $7, $8, $9, $10 }' \
  "$CSV" | tee "$OUT/solver_bench.txt"
