#!/usr/bin/env bash
# One device call for issue 10 (shift-invert): GPU tests of factor/ and the eigs driver (and the
# apps' GPU test), compute-sanitizer memcheck on the GPU triangular solves, then the benchmark
# (tcsolve on the GPU and on the machine's CPU vs SciPy eigsh(sigma=0), same run) and the interior
# check against a dense GPU reference.
# Binaries built here (cmake -S . -B build-dev -DTCSOLVE_STATIC_BOOST=ON), copied into $D with the
# CHOLMOD/MUMPS/OpenBLAS shared libraries (deps.tar.xz) and the SuiteSparse matrices; carried.
# usage (on the device): bash bench/shift_invert/device_run.sh ; logs under $OUT.
set -u -o pipefail
D=${D:-.device-data/si}
OUT=${OUT:-device-out}
mkdir -p "$OUT" /tmp/deps /tmp/si
tar -xJf "$D/deps.tar.xz" -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps:${LD_LIBRARY_PATH:-}
export TCSOLVE_MATRICES=$PWD/$D/matrices TCSOLVE_TEST_BIN=$PWD/$D/tcsolve
step() { echo "== $* $(date +%T)"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
nproc
# SciPy on the largest case runs in the background from the start (one core; it may not finish).
# Thread probe: the e24 factorization under three OpenMP/OpenBLAS settings (CHOLMOD calls OpenMP
# and OpenBLAS; nested pools can oversubscribe the cores). The fastest setting is used below.
if [ "${PROBE:-0}" = 1 ]; then
  step "thread probe"
  best=""; best_t=1e9
  for cfg in "" "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=16" "OMP_NUM_THREADS=4 OPENBLAS_NUM_THREADS=4"; do
    t=$(env $cfg "$D/tcsolve" eigs gen:elast3d:24 --k 2 --device cpu --json --quiet 2>/dev/null | \
        python3 -c "import json,sys,re; j=json.load(sys.stdin); print(re.search(r'factor ([0-9.]+) s', j['factorization']).group(1))")
    echo "probe [${cfg:-default}]: CHOLMOD factor of elast3d:24 $t s"
    if python3 -c "import sys; sys.exit(0 if float('$t') < $best_t else 1)"; then best="$cfg"; best_t=$t; fi
  done
  echo "using [${best:-default}]"; [ -n "$best" ] && export $best
fi
if [ "${SCIPY_BIG:-0}" = 1 ]; then
  ( timeout ${SCIPY_BIG_LIMIT:-420} python3 bench/shift_invert/run_bench.py "$D/tcsolve" cpu /tmp/si/scipy_big \
      --cases gen:elast3d:40+lumped:10 --scipy-timeout ${SCIPY_BIG_LIMIT:-400} --scipy-only 1 > "$OUT/scipy_big.log" 2>&1 ) &
fi
if [ "${TESTS:-1}" = 1 ]; then
  for t in test_factor_gpu test_apps_gpu; do
    step "$t"; timeout 120 "$D/$t" > /tmp/si/$t.log 2>&1; echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED)" /tmp/si/$t.log
  done
  step test_solvers_gpu Eigs
  timeout ${EIGS_LIMIT:-240} "$D/test_solvers_gpu" --gtest_filter="${EIGS_FILTER:-Eigs*:Lanczos*}" > /tmp/si/test_solvers_gpu_eigs.log 2>&1
  echo "test_solvers_gpu rc=$?"; grep -E "^\[  (PASSED|FAILED)" /tmp/si/test_solvers_gpu_eigs.log
  cat /tmp/si/test_factor_gpu.log /tmp/si/test_apps_gpu.log /tmp/si/test_solvers_gpu_eigs.log > "$OUT/gpu_tests.log"
  fi
  if [ "${MEMCHECK:-1}" = 1 ]; then
  step memcheck
  timeout 120 compute-sanitizer --tool memcheck --leak-check no "$D/test_factor_gpu" > "$OUT/memcheck_factor.log" 2>&1
  echo "memcheck factor rc=$?"; tail -2 "$OUT/memcheck_factor.log"
  timeout 120 compute-sanitizer --tool memcheck --leak-check no "$D/test_solvers_gpu" \
    --gtest_filter='Eigs.LumpedMass*:Eigs.Kappa*:Eigs.Nearest*' > "$OUT/memcheck_eigs.log" 2>&1
  echo "memcheck eigs rc=$?"; tail -2 "$OUT/memcheck_eigs.log"
fi
if [ "${BENCH:-1}" = 1 ]; then
  step "bench gpu"
  timeout ${BENCH_LIMIT:-200} python3 bench/shift_invert/run_bench.py "$D/tcsolve" cuda /tmp/si/gpu --no-scipy 1 \
    --cases ${GPU_CASES:-gen:elast3d:40+lumped:10,gen:elast3d:40+lumped:50,gen:elast3d:40+lumped:200} 2>&1 | tee "$OUT/bench_gpu.log"
  cp /tmp/si/gpu/shift_invert.csv "$OUT/bench_gpu.csv" 2>/dev/null
  fi
  if [ "${BENCH_CPU:-1}" = 1 ]; then
  step "bench cpu + scipy (small)"
  timeout ${CPU_LIMIT:-240} python3 bench/shift_invert/run_bench.py "$D/tcsolve" cpu /tmp/si/cpu --scipy-timeout 60 \
    --cases ${CPU_CASES:-bcsstk08:10,bcsstk08/bcsstm08:10,bcsstk19:10,bcsstk21:50,bcsstk21/bcsstm21:50,gen:elast3d:24+lumped:10,gen:elast3d:40+lumped:10} 2>&1 | tee "$OUT/bench_cpu.log"
  cp /tmp/si/cpu/shift_invert.csv "$OUT/bench_cpu.csv" 2>/dev/null
fi
if [ "${INTERIOR:-1}" = 1 ]; then
  step interior
  timeout ${INTERIOR_LIMIT:-150} python3 bench/shift_invert/interior_check.py "$D/tcsolve" gen:elast3d:24 20 cuda /tmp/si 2>&1 | tee "$OUT/interior.log"
fi
step "wait for scipy (big)"
wait
cat "$OUT/scipy_big.log"
step done
