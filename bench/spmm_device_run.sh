#!/usr/bin/env bash
# One device call for the SpMM issue: GPU tests, compute-sanitizer (memcheck, racecheck), benchmark.
# Built here (Recipe B), run there:
#   cmake --build build-spmm --target test_spmm_gpu spmm_bench
#   run: bash bench/spmm_device_run.sh   carry: build-spmm/tests/spmm/test_spmm_gpu,
#        build-spmm/bench/spmm_bench, .device-data/matrices
# Logs and the CSV go to $OUT (or ./spmm-out when OUT is unset).
set -u -o pipefail
OUT=${OUT:-spmm-out}
mkdir -p "$OUT"
B=${B:-build-spmm}
export TCSOLVE_MATRICES=$PWD/.device-data/matrices
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
echo "== tests $(date +%T)"
"$B/tests/spmm/test_spmm_gpu" > "$OUT/test_gpu.log" 2>&1; echo "test rc=$?"; tail -4 "$OUT/test_gpu.log"
grep -E "FAILED|Failure|Expected|Which is|actual" "$OUT/test_gpu.log" | head -30
if [ "${SANITIZE:-1}" = 1 ]; then
  echo "== memcheck $(date +%T)"
  timeout 240 compute-sanitizer --tool memcheck --leak-check no "$B/tests/spmm/test_spmm_gpu" ${SAN_FILTER:-} > "$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
  echo "== racecheck $(date +%T)"
  timeout 120 compute-sanitizer --tool racecheck "$B/tests/spmm/test_spmm_gpu" ${SAN_FILTER:-} > "$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  echo "== bench $(date +%T)"
  timeout ${BENCH_TIMEOUT:-330} "$B/bench/spmm_bench" --csv "$OUT/spmm.csv" --real .device-data/matrices ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  grep -E "^  (gen|\.device)|copy|check|!!" "$OUT/bench.log" | grep -E "auto|cuSPARSE CSR|copy|check|!!|GEMM|MMA16" | tail -120
fi
