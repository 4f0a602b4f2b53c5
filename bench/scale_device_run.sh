#!/usr/bin/env bash
# Issue 11 ("Scale") in one device call on an H200: GPU tests and memcheck of the large-n kernel
# tests, the SpMM scale benchmark (setup by step, memory, bandwidth vs a copy measured in the
# same run), the lap3d:130 regression, block CG and Lanczos on gen:lap3d:400 (64M rows) and
# Lanczos on gen:elast3d:210 (27.8M rows, 2.2e9 non-zeros). Each step runs under its own time
# limit and is skipped when the call's deadline would not leave it that time.
#
# Built here (Recipe B, docs gpu.md), run there:
#   cmake -S . -B build-scale -G Ninja -DCMAKE_BUILD_TYPE=Release -DTCSOLVE_STATIC_BOOST=ON \
#         -DTCSOLVE_ENABLE_FACTOR=OFF
#   cmake --build build-scale --target tcsolve scale_bench test_spmm_large_gpu test_spmm_gpu \
#         test_sparse_operator
#   mkdir -p .device-data/scale && cp build-scale/apps/tcsolve build-scale/bench/scale_bench \
#         build-scale/tests/spmm/test_spmm_large_gpu build-scale/tests/spmm/test_spmm_gpu \
#         build-scale/tests/spmm/test_sparse_operator .device-data/scale/
#   run (kind nvidia-h200): bash bench/scale_device_run.sh      carry: .device-data/scale
# STEPS (comma list) picks steps: tests,memcheck,regress,bench,solve,eigs,eigs_elast,eigs_fit
# (eigs_fit: lap3d:400 with EIGS_FIT_ARGS, default "--method lanczos --block-size 4", a basis
# that fits when the default one does not). TEST_FILTER / MEMCHECK_FILTER pick gtest cases.
# DEADLINE (seconds from the start, default 520) bounds the whole call; LIMIT_<step log name>
# (e.g. LIMIT_bench=200) overrides one step's limit; EIGS_ARGS / SOLVE_ARGS add options.
# Per step: wall time, the child's peak host memory (ru_maxrss) and the card's peak memory in
# use (nvidia-smi sampled every 200 ms, context included) go to $OUT/steps.txt; every step's
# log is appended to $OUT/logs.txt (the device returns at most 8 files), the benchmark's CSV to
# $OUT/scale_bench.csv.
set -u -o pipefail
OUT=${OUT:-scale-out}
W=${W:-/tmp/scale-work}
mkdir -p "$OUT" "$W"
B=${B:-.device-data/scale}
STEPS=${STEPS:-tests,memcheck,regress,bench,solve,eigs,eigs_elast,eigs_fit}
DEADLINE=${DEADLINE:-520}
T0=$(date +%s)
has() { [[ ",$STEPS," == *",$1,"* ]]; }
left() { echo $((DEADLINE - ($(date +%s) - T0))); }

{
  date -u +"date %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  echo "cpus $(nproc), host memory $(free -g | awk '/Mem:/ {print $2}') GB"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

# run NAME LIMIT_S CMD...: runs CMD with a time limit (killed after LIMIT_S, or earlier when
# the deadline is near), log in $W/NAME.log (then appended to $OUT/logs.txt), a line in
# $OUT/steps.txt.
run() {
  local name=$1 limit=$2
  shift 2
  local override="LIMIT_$name"
  [[ -n "${!override:-}" ]] && limit=${!override}  # e.g. LIMIT_bench=200
  local l
  l=$(left)
  if (( l < 20 )); then
    echo "$name: skipped (deadline: ${l} s left)" | tee -a "$OUT/steps.txt"
    return
  fi
  (( limit > l - 10 )) && limit=$((l - 10))
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$W/gpumem_$name.txt" 2>/dev/null &
  local smi=$!
  echo "== $name (limit ${limit} s, $(date -u +%T))"
  python3 - "$limit" "$W/$name.log" "$@" <<'PY' | tee -a "$W/steps.tmp"
import resource, subprocess, sys, time
limit, log, cmd = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
t = time.time()
with open(log, "w") as f:
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
    try:
        rc = p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill(); p.wait(); rc = "timeout"
wall = time.time() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6  # KiB -> GB (approx)
print(f"rc={rc} wall={wall:.1f}s host_peak_rss={rss:.2f}GB")
PY
  kill $smi 2>/dev/null
  wait $smi 2>/dev/null
  local gpu
  gpu=$(sort -n "$W/gpumem_$name.txt" 2>/dev/null | tail -1)
  local line
  line=$(tail -1 "$W/steps.tmp")
  echo "$name: $line card_peak_used=${gpu:-?}MiB" >> "$OUT/steps.txt"
  echo "   card peak in use ${gpu:-?} MiB"
  { echo "===== $name: $*"; cat "$W/$name.log"; } >> "$OUT/logs.txt"
  tail -n ${TAIL:-4} "$W/$name.log"
}

export TCSOLVE_MATRICES=/nonexistent  # the GPU tests use generated data only

if has tests; then
  run test_large 240 "$B/test_spmm_large_gpu" "--gtest_filter=${TEST_FILTER:-*}"
  grep -E "FAILED|Failure|Expected|Which is|actual|Value of" "$W/test_large.log" | head -20
  run test_gpu 120 "$B/test_spmm_gpu"
  run test_operator 60 "$B/test_sparse_operator"
fi
if has memcheck; then
  run memcheck 200 compute-sanitizer --tool memcheck --leak-check no "$B/test_spmm_large_gpu" \
      "--gtest_filter=${MEMCHECK_FILTER:-*EveryKernel*:*StageRowMajor*:*PermuteRows*:*Dmma*}"
  grep -E "ERROR SUMMARY|PASSED|FAILED" "$W/memcheck.log" | tail -4
fi
if has regress; then
  # the issue's reproducer: 2.2M rows, failed with 'invalid argument (spmm/csr_spmm.cu:467)'
  run regress_lap3d130_solve 90 "$B/tcsolve" solve gen:lap3d:130 --rhs random:16
fi
if has bench; then
  run bench 300 "$B/scale_bench" --matrices "${BENCH_MATRICES:-gen:elast3d:64,gen:elast3d:105,gen:lap3d:200,gen:lap3d:400,gen:elast3d:210}" \
      --cols 8,16 --reps 11 --csv "$OUT/scale_bench.csv"
  grep -E "^== |setup:|memory:|N= *[0-9]+:|!!|copy roofline" "$W/bench.log"
fi
if has solve; then
  run solve_lap3d400 200 "$B/tcsolve" solve gen:lap3d:400 --rhs random:16 --maxiter 20000 --json ${SOLVE_ARGS:-}
fi
if has eigs; then
  run eigs_lap3d400 240 "$B/tcsolve" eigs gen:lap3d:400 --k 16 --which largest --maxiter 20000 --json ${EIGS_ARGS:-}
  python3 bench/scale_check_eigs.py "$W/eigs_lap3d400.log" | tee -a "$OUT/steps.txt"
fi
if has eigs_elast; then
  run eigs_elast3d210 300 "$B/tcsolve" eigs gen:elast3d:210 --k 8 --which largest --maxiter 20000 --json ${EIGS_ARGS:-}
  python3 bench/scale_check_eigs.py "$W/eigs_elast3d210.log" | tee -a "$OUT/steps.txt"
fi
if has eigs_fit; then
  # shellcheck disable=SC2086
  run eigs_lap3d400_fit 300 "$B/tcsolve" eigs gen:lap3d:400 --k 16 --which largest --maxiter 20000 --json \
      ${EIGS_FIT_ARGS:---method lanczos --block-size 4}
  python3 bench/scale_check_eigs.py "$W/eigs_lap3d400_fit.log" | tee -a "$OUT/steps.txt"
fi
echo "== steps"
cat "$OUT/steps.txt"

