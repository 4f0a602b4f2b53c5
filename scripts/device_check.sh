#!/usr/bin/env bash
# One device call that verifies a build on the GPU machine (Recipe B of ../shared/docs/gpu.md):
# every GPU test binary, compute-sanitizer memcheck on the kernels, the solver benchmark (tcsolve
# rows, then the CuPy/torch/SciPy anchors in the same run) and a tcsolve command smoke run.
# Binaries are built here (cmake -DTCSOLVE_STATIC_BOOST=ON) and copied into $D (default
# .device-data/final: bench/, tests/, apps/), carried together with .device-data/matrices.
# usage (on the device): bash scripts/device_check.sh ; logs under $OUT. SANITIZE=0 skips
# compute-sanitizer, BENCH=0 the solver benchmark, ANCHORS=no-anchors only the anchors.
set -u -o pipefail
D=${D:-.device-data/final}
OUT=${OUT:-device-out}
mkdir -p "$OUT"
export TCSOLVE_MATRICES=$PWD/.device-data/matrices
step() { echo "== $* $(date +%T)"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
export TCSOLVE_TEST_BIN=$PWD/$D/apps/tcsolve
for t in test_spmm_gpu test_solvers_gpu test_apps_gpu; do
  step "$t"
  timeout ${TEST_TIMEOUT:-240} "$D/tests/$t" > "$OUT/$t.log" 2>&1; echo "$t rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/$t.log" | head -20; grep -c "^\[       OK" "$OUT/$t.log"
done
if [ "${SANITIZE:-1}" = 1 ]; then
  step memcheck
  timeout 120 compute-sanitizer --tool memcheck --leak-check no "$D/tests/test_spmm_gpu" \
    --gtest_filter='*Dmma*:*Trial*:*Staged*:*Permutation*:*Csr*:*F16*:*Bf16*' > "$OUT/memcheck_spmm.log" 2>&1
  echo "memcheck spmm rc=$?"; tail -2 "$OUT/memcheck_spmm.log"
  timeout 90 compute-sanitizer --tool memcheck --leak-check no "$D/tests/test_solvers_gpu" \
    --gtest_filter='DenseOps*:Orthonormalize*:BlockCg.Random*:Lanczos.*' > "$OUT/memcheck_solvers.log" 2>&1
  echo "memcheck solvers rc=$?"; tail -2 "$OUT/memcheck_solvers.log"
fi
if [ "${BENCH:-1}" = 1 ]; then step "solver bench"; fi
[ "${BENCH:-1}" = 1 ] && TCSOLVE_BENCH_TIMEOUT=${BENCH_LIMIT:-40} bash bench/solvers/run_solver_bench.sh "$D" "$OUT/solver" ${ANCHORS:-anchors} cuda 2>"$OUT/solver_bench.err"
step "tcsolve smoke"
T=$D/apps/tcsolve
{ $T --version; $T eigs gen:lap2d:200 --k 16 --quiet --json; $T solve gen:lap3d:100 --rhs random:32 --quiet --json;
  $T info gen:elast3d:48+scramble --blocks 8x4 --reorder jaccard; } > "$OUT/smoke.log" 2>&1; echo "smoke rc=$?"
tail -c 1500 "$OUT/smoke.log"
step done
