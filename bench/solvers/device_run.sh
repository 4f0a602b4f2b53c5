#!/usr/bin/env bash
# One device call for the solver work of issue 9 (binaries built here, Recipe B of
# ../shared/docs/gpu.md, copied into $D with the SuiteSparse test matrices in $D/matrices):
# GPU solver tests, compute-sanitizer memcheck on the new kernels, the solver benchmark with its
# anchors (run_solver_bench.sh), and Nsight Compute on the fused kernels (--clock-control none).
# usage (on the device, repository root): D=.device-data/perf bash bench/solvers/device_run.sh
#   TESTS=0 / SANITIZE=0 / BENCH=0 / NCU=0 skip a part; SET=quick|targets|scramble|compare|all;
#   ANCHORS=no-anchors skips the Python anchors. Logs and CSVs under $OUT.
set -u -o pipefail
D=${D:-.device-data/perf}
OUT=${OUT:-device-out}
mkdir -p "$OUT"
export TCSOLVE_MATRICES=$PWD/$D/matrices
step() { echo "== $* $(date +%T)"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
if [ "${TESTS:-1}" = 1 ]; then
  step test_solvers_gpu
  timeout ${TEST_TIMEOUT:-200} "$D/test_solvers_gpu" > "$OUT/test_solvers_gpu.log" 2>&1
  echo "test_solvers_gpu rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/test_solvers_gpu.log" | head -20
fi
if [ "${SANITIZE:-1}" = 1 ]; then
  step memcheck
  timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool memcheck --leak-check no "$D/test_solvers_gpu" \
    --gtest_filter='DenseOpsDevice*:Chebyshev.ApplyOrderingsAgree:Chebyshev.WantedSetEndsInsideACluster:*ChebyshevLaplacian*lap2d_smallest*:BlockCg.RandomRight*:BlockCg.ApplyOrderings*:BlockCg.NearlyDependent*' \
    > "$OUT/memcheck_solvers.log" 2>&1
  echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck_solvers.log" | tail -4
fi
if [ "${BENCH:-1}" = 1 ]; then
  step "solver bench (${SET:-targets})"
  TCSOLVE_BENCH_TIMEOUT=${BENCH_LIMIT:-60} bash bench/solvers/run_solver_bench.sh "$D" "$OUT/solver" \
    ${ANCHORS:-anchors} cuda "${SET:-targets}" 2> "$OUT/solver_bench.err"
fi
if [ "${NCU:-1}" = 1 ]; then
  step ncu
  M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
  timeout 100 ncu --clock-control none --print-units base --metrics $M --kernel-name regex:'cg_|gram_tn|gram_finish|csr_row|spd_|potr' \
    --launch-skip 40 --launch-count 14 --csv "$D/solver_bench" cg gen:lap3d:100 32 1e-8 cuda jacobi 1 \
    > "$OUT/ncu_cg.csv" 2> "$OUT/ncu_cg.err"; echo "ncu cg rc=$?"
  timeout 100 ncu --clock-control none --print-units base --metrics $M --kernel-name regex:'axpbypcz|csr_row|gram_tn|residual_sq|syev|gemm' \
    --launch-skip 300 --launch-count 12 --csv "$D/solver_bench" eig gen:lap3d:100 chebyshev 16 largest 1e-8 cuda 0 1 \
    > "$OUT/ncu_cheb.csv" 2> "$OUT/ncu_cheb.err"; echo "ncu cheb rc=$?"
  python3 - "$OUT/ncu_cg.csv" "$OUT/ncu_cheb.csv" <<'EOF'
import csv, collections, sys
for f in sys.argv[1:]:
    lines = open(f).read().splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith('"ID"')]
    if not start: print(f, "no data"); continue
    rows = list(csv.reader(lines[start[0]:]))
    h = rows[0]
    ki, mi, vi, ii = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value"), h.index("ID")
    k = collections.OrderedDict()
    for r in rows[1:]:
        if len(r) == len(h): k.setdefault((r[ii], r[ki][:50]), {})[r[mi]] = r[vi]
    print(f)
    for (i, name), m in k.items():
        num = lambda key: float(m.get(key, "0").replace(",", ""))
        t, by = num("gpu__time_duration.sum"), num("dram__bytes_read.sum") + num("dram__bytes_write.sum")
        print(f"  {name:50s} {t/1e3:8.1f} us {by/1e6:8.1f} MB {by/max(t,1):6.0f} GB/s dram {m.get('dram__throughput.avg.pct_of_peak_sustained_elapsed','')}%")
EOF
fi
step done
