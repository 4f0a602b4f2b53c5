#!/usr/bin/env bash
# One device call: tcsolve's solvers on the issue-9 targets (Chebyshev-filtered subspace
# iteration, block Lanczos with the default and a smaller basis, block CG), optionally beside the
# anchors (CuPy eigsh, 32 × CuPy cg; solver_anchors.py) in the same run.
#
# usage: bench/solvers/run_solver_bench.sh BIN_DIR OUT_DIR [anchors|no-anchors] [cuda|cpu] [SET]
#   BIN_DIR  holds solver_bench (a build's bench/ folder, or a folder of carried binaries)
#   OUT_DIR  receives solver_bench.csv (raw rows), solver_bench.txt (the table printed last)
#   SET      one or more of: targets (default: every issue-9 row), quick (a subset for a first
#            look), scramble (lap3d:100 / elast3d:64 scrambled vs natural), compare (block Lanczos
#            on the same rows), tune (block width / degree cap around the defaults), all
#            (targets + scramble + compare)
# Every run has its own time limit (TCSOLVE_BENCH_TIMEOUT seconds, default 60).
# The CSV's detail field carries the copy bandwidth measured in the same process and, for
# Chebyshev and block CG, the time the traffic budget of the solver file takes at that bandwidth
# (budget_total_s = SpMM minimal bytes + the dense budget) and, with breakdown=1, the measured
# apply/dense split and dense_vs_budget = measured dense time / budgeted dense time.
set -u
B=${1:?usage: run_solver_bench.sh BIN_DIR OUT_DIR [anchors|no-anchors] [cuda|cpu] [SET]}
OUT=${2:?usage: run_solver_bench.sh BIN_DIR OUT_DIR [anchors|no-anchors] [cuda|cpu] [SET]}
ANCHORS=${3:-anchors}
DEV=${4:-cuda}
SET=${5:-targets}
LIMIT=${TCSOLVE_BENCH_TIMEOUT:-60}
SB=$B/solver_bench
[ -x "$SB" ] || SB=$B/bench/solver_bench
mkdir -p "$OUT"
CSV=$OUT/solver_bench.csv
echo "method,device,matrix,k,seconds,status,iterations,applies,max_rel_residual,max_eig_error,orth,detail" > "$CSV"
run() {
  echo "+ $*" >&2
  timeout "$LIMIT" "$@" >> "$CSV" || echo "failed or timed out (${LIMIT} s): $*" >&2
}
cheb() { run "$SB" eig "$1" chebyshev "$2" "$3" 1e-8 "$DEV" 0 "${4:-2}" 0 0 "${@:5}"; }
lanc() { run "$SB" eig "$1" lanczos "$2" "$3" 1e-8 "$DEV" "${4:-0}" 1 "${5:-0}" "${6:-0}"; }
cg() { run "$SB" cg "$1" "$2" 1e-8 "$DEV" jacobi "${3:-2}" "${@:4}"; }
targets() {
  cheb gen:lap3d:100 16 largest 2 breakdown=1
  cheb gen:lap3d:100 16 smallest 2 breakdown=1
  cheb gen:lap3d:100 64 smallest 2 breakdown=1
  cheb gen:lap3d:64 256 smallest 2 breakdown=1
  cheb gen:lap2d:1000 32 smallest 1 breakdown=1
  cheb gen:lap2d:200 16 smallest 3 breakdown=1
  cg gen:lap3d:100 32 2 breakdown=1
  cg gen:lap3d:100 128 2 breakdown=1
}
quick() {
  cheb gen:lap3d:100 16 largest 2 breakdown=1
  cheb gen:lap2d:200 16 smallest 3 breakdown=1
  cg gen:lap3d:100 32 2 breakdown=1
}
scramble() {
  cheb gen:lap3d:100 16 smallest 2
  cheb gen:lap3d:100+scramble 16 smallest 2
  cheb gen:lap3d:100+scramble 16 smallest 2 permuted=1
  cheb gen:elast3d:64 16 largest 2
  cheb gen:elast3d:64+scramble 16 largest 2
  cheb gen:elast3d:64+scramble 16 largest 2 permuted=1
  cheb gen:elast3d:64 16 smallest 1
  cheb gen:elast3d:64+scramble 16 smallest 1 permuted=1
}
compare() {
  # Restarted block Lanczos (solvers owner's) on the same rows: default basis, and a smaller
  # basis (6 blocks of 8 = 48 columns, keep k + 8).
  lanc gen:lap3d:100 16 largest
  lanc gen:lap3d:100 16 largest 8 48 24
  lanc gen:lap3d:100 16 smallest
  lanc gen:lap3d:100 16 smallest 8 48 24
  lanc gen:lap2d:200 16 smallest
  lanc gen:lap2d:200 16 smallest 8 48 24
}
tune() {
  # Block width and degree cap around the defaults.
  run "$SB" eig gen:lap3d:100 chebyshev 16 largest 1e-8 "$DEV" 20 1
  cheb gen:lap3d:100 16 largest 1 maxdeg=24
  run "$SB" eig gen:lap3d:100 chebyshev 64 smallest 1e-8 "$DEV" 80 1
  run "$SB" eig gen:lap2d:1000 chebyshev 32 smallest 1e-8 "$DEV" 64 1
}
for s in $SET; do
  case "$s" in
    quick) quick ;;
    scramble) scramble ;;
    compare) compare ;;
    tune) tune ;;
    all) targets; scramble; compare ;;
    *) targets ;;
  esac
done
if [ "$ANCHORS" = anchors ]; then
  PY=python3
  PYTHONUNBUFFERED=1 timeout ${ANCHOR_LIMIT:-200} $PY "$(dirname "$0")/solver_anchors.py" \
    ${ANCHOR_SET:-gpu} >> "$CSV" || echo "anchors failed or timed out" >&2
fi
# Compact table: method, device, matrix, k/rhs, seconds, status, iterations, applies, residual,
# eigenvalue error, and the budget fields of the detail column.
awk -F, 'NR == 1 { printf "%-16s %-20s %4s %8s %-13s %6s %8s %9s %9s  %s\n", "method", "matrix", "k", "seconds", "status", "iters", "applies", "rel.res", "eig.err", "detail"; next }
         { m = $3; sub(".*/", "", m); sub("\\.mtx$", "", m); d = $12; gsub("kernel=", "", d);
           printf "%-16s %-20s %4s %8s %-13s %6s %8s %9s %9s  %s\n", $1, m, $4, $5, $6, $7, $8, $9, $10, d }' \
  "$CSV" | tee "$OUT/solver_bench.txt"
