#!/usr/bin/env bash
# One device call for the SpMM trial plan / DMMA pipeline work (issue 4, second pass): GPU tests,
# compute-sanitizer memcheck on the fp64 BCSR and trial tests, the trimmed benchmark, and one
# ncu profile of the DMMA kernel on elast3d:64 at N = 64 (direct and staged X).
# Built here (Recipe B), run there:
#   cmake --build build-spmm2 --target test_spmm_gpu spmm_bench
#   run: bash bench/spmm_device_trial.sh   carry: build-spmm2/tests/spmm/test_spmm_gpu,
#        build-spmm2/bench/spmm_bench, .device-data/matrices
# Logs and the CSV go to $OUT (or ./spmm-out when OUT is unset). NCU=0 skips the profile.
set -u -o pipefail
OUT=${OUT:-spmm-out}
mkdir -p "$OUT"
B=${B:-build-spmm2}
export TCSOLVE_MATRICES=$PWD/.device-data/matrices
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
echo "== tests $(date +%T)"
"$B/tests/spmm/test_spmm_gpu" > "$OUT/test_gpu.log" 2>&1; echo "test rc=$?"; tail -3 "$OUT/test_gpu.log"
grep -E "FAILED|Failure|Expected|Which is|actual" "$OUT/test_gpu.log" | head -30
grep -A3 "trial (ms" "$OUT/test_gpu.log" | head -5
if [ "${SANITIZE:-1}" = 1 ]; then
  echo "== memcheck $(date +%T)"
  timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool memcheck --leak-check no "$B/tests/spmm/test_spmm_gpu" \
    --gtest_filter="${SAN_FILTER:-*Dmma*:*Trial*:*Staged*:*Permutation*:*Automatic*:*Repeated*:*Tiled*}" > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
  echo "== racecheck $(date +%T)"  # the shared-memory kernels: tiled CSR rows, X staging
  timeout ${RACE_TIMEOUT:-90} compute-sanitizer --tool racecheck "$B/tests/spmm/test_spmm_gpu" \
    --gtest_filter="${RACE_FILTER:-*CsrRowTiled*:*StagedKernelsChunk*:*BcsrPermutation*}" > "$OUT/racecheck.log" 2>&1
  echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  echo "== bench $(date +%T)"
  timeout ${BENCH_TIMEOUT:-240} "$B/bench/spmm_bench" --csv "$OUT/spmm.csv" --real .device-data/matrices \
    --matrices gen:lap3d:100,gen:elast3d:64,gen:lap2d:1024,gen:rmat:20:16 --band-sweep 1024 \
    --cols 8,16,32,64 --no-fp16 --no-bsr ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  grep -E "auto|model pick|cuSPARSE CSR|copy|check|!!|trial N" "$OUT/bench.log" | grep -v "^  (skipped" | tail -150
fi
if [ "${NCU:-1}" = 1 ]; then
  echo "== ncu $(date +%T)"
  timeout ${NCU_TIMEOUT:-60} ncu --clock-control none -k regex:bcsr_dmma --launch-skip 3 --launch-count 2 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    "$B/bench/spmm_bench" --matrices gen:elast3d:64 --band-sweep "" --cols 64 --no-fp16 --no-bsr \
    --no-trial --reps 1 > "$OUT/ncu.log" 2>&1; echo "ncu rc=$?"
  grep -E "bcsr_dmma|Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Registers|Mem Busy|Max Bandwidth|Compute \(SM\)" "$OUT/ncu.log" | head -40
fi
echo "== done $(date +%T)"
