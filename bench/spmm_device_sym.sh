#!/usr/bin/env bash
# One device call for the symmetric-reordering pass of the SpMM operator (issue 4, third pass):
# GPU tests, memcheck/racecheck on the new column-permutation tests, the fp64 benchmark on the
# main and scrambled matrices (rows vs symmetric reordering, cuSPARSE CSR in the same run) and
# the fp16/bf16 band sweep.
# Built here (Recipe B), run there:
#   cmake --build build-spmm3 --target test_spmm_gpu spmm_bench
#   run: bash bench/spmm_device_sym.sh   carry: build-spmm3/tests/spmm/test_spmm_gpu,
#        build-spmm3/bench/spmm_bench
# Logs and the CSVs go to $OUT (or ./spmm-out when OUT is unset).
set -u -o pipefail
OUT=${OUT:-spmm-out}
mkdir -p "$OUT"
B=${B:-build-spmm3}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
echo "== tests $(date +%T)"
timeout ${TEST_TIMEOUT:-60} "$B/tests/spmm/test_spmm_gpu" > "$OUT/test_gpu.log" 2>&1; echo "test rc=$?"; tail -3 "$OUT/test_gpu.log"
grep -E "FAILED|Failure|Expected|Which is|actual" "$OUT/test_gpu.log" | head -30
if [ "${SANITIZE:-1}" = 1 ]; then
  echo "== memcheck $(date +%T)"
  timeout ${SAN_TIMEOUT:-45} compute-sanitizer --tool memcheck --leak-check no "$B/tests/spmm/test_spmm_gpu" \
    --gtest_filter="*Symmetric*:*ColumnPermutation*" > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
  echo "== racecheck $(date +%T)"  # the tiled staging kernel with the gather (N = 33)
  timeout ${RACE_TIMEOUT:-30} compute-sanitizer --tool racecheck "$B/tests/spmm/test_spmm_gpu" \
    --gtest_filter="*ColumnPermutation*" > "$OUT/racecheck.log" 2>&1
  echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  echo "== bench fp64 $(date +%T)"
  timeout ${BENCH_TIMEOUT:-170} "$B/bench/spmm_bench" --csv "$OUT/spmm_fp64.csv" \
    --matrices ${MATS:-gen:lap3d:100,gen:lap3d:100+scramble,gen:elast3d:64,gen:elast3d:64+scramble,gen:lap2d:1024} \
    --band-sweep "" --cols 8,16,32,64,128 --no-fp16 --no-bsr ${BENCH_ARGS:-} > "$OUT/bench_fp64.log" 2>&1
  echo "bench rc=$?"
  grep -E "auto|symmetric|jaccard|cuSPARSE CSR|copy|check|!!|construction" "$OUT/bench_fp64.log" | grep -v "^  (skipped" | tail -120
fi
if [ "${BAND:-1}" = 1 ]; then
  echo "== band sweep fp16/bf16 $(date +%T)"
  timeout ${BAND_TIMEOUT:-45} "$B/bench/spmm_bench" --csv "$OUT/spmm_band16.csv" --matrices "" --no-fp64 \
    --band-sweep 64,128,256,512,1024,2048,4096 --cols16 8,32,128 ${BAND_ARGS:-} > "$OUT/bench_band16.log" 2>&1
  echo "band rc=$?"
  grep -E "MMA16|cuSPARSE|cuBLAS|check|!!" "$OUT/bench_band16.log" | tail -80
fi
echo "== done $(date +%T)"
