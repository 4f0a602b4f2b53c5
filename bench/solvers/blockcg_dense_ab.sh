#!/usr/bin/env bash
# Block CG's dense passes on one GPU (issue 19): the dense-ops benchmark (bench/dense_bench.cpp,
# against the copy rate of the same process), then `tcsolve solve` rows with an earlier binary
# ($D/tcsolve_old) and this one ($D/tcsolve) alternating in the same call, then (NCU=1) an ncu
# profile of the benchmark's kernels. Staged by scripts/device_session.sh stage plus
#   cp OLD_BUILD/apps/tcsolve $D/tcsolve_old; cp build/bench/dense_bench $D/
# Run: run(command="OUT=$OUT bash bench/solvers/blockcg_dense_ab.sh", carry=[".device-data/s4"])
# Env: REPS (runs per binary, default 3), ROWS (default: three solve rows), ENV_B, NO_DENSE=1
# (skip the dense bench), NCU=1,
# STEP_NCU=1 (ncu of the fp32 Chebyshev step inside eigs lap3d:100 k = 16 largest and inside
# block CG's polynomial preconditioner on lap3d:100, 32 right-hand sides).
set -u -o pipefail
D=${D:-.device-data/s4}
OUT=${OUT:-device-out}
mkdir -p "$OUT" /tmp/deps
tar -xJf "$D/deps.tar.xz" -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
date -u +%FT%TZ

if [ -z "${NO_DENSE:-}" ]; then
  echo "== dense_bench"
  for nn in 786432 1000000; do
    "$D/dense_bench" $nn 32 30 | tee "$OUT/dense_bench_${nn}.txt"
    TCSOLVE_GRAM_VEC=0 TCSOLVE_PAIR_ROWS=0 "$D/dense_bench" $nn 32 30 | grep -E "gram_into|gemm_into|direction" |
      sed 's/^/GRAM_VEC=0 PAIR_ROWS=0 /'
  done
fi

echo "== tcsolve rows (seconds.solve, iterations, steps)"
# A row: solve,SPEC,RHS or eigs,SPEC,K,WHICH; ENV_B: extra environment for the new binary only.
ROWS=${ROWS:-"solve,gen:elast3d:64,32 solve,gen:lap3d:100,32 solve,gen:lap3d:100,128"}
for rep in $(seq 1 "${REPS:-3}"); do
  for row in $ROWS; do
    IFS=, read -r task spec k which <<< "$row"
    if [ "$task" = solve ]; then args=(solve "$spec" --rhs "random:$k")
    else args=(eigs "$spec" --k "$k" --which "$which"); fi
    for b in tcsolve_old tcsolve; do
      f="$OUT/${task}_${b}_${spec//:/_}_${k}${which:+_$which}_$rep.json"
      t0=$(date +%s.%N)
      if [ "$b" = tcsolve ]; then env ${ENV_B:-} "$D/$b" "${args[@]}" --json > "$f" 2> "$OUT/row_err.txt"
      else "$D/$b" "${args[@]}" --json > "$f" 2> "$OUT/row_err.txt"; fi
      t1=$(date +%s.%N)
      python3 - "$f" "$b" "$row" "$t0" "$t1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall = float(sys.argv[5]) - float(sys.argv[4])
r = d.get("residual_norms") or [0]
steps = d.get("solve_steps") or d.get("method", "")
print(f"{sys.argv[2]:12s} {sys.argv[3]:34s} solve {d['seconds']['solve']:.4f} total {d['seconds']['total']:.4f} wall {wall:.3f} "
      f"it {d.get('iterations')} max_res {max(r):.2e} {d['status']} | {str(steps)[:150]} | {d.get('message', '')[:60]}")
PY
    done
  done
done

if [ -n "${NCU:-}" ]; then
  echo "== ncu"
  # Every launch of the fused kernels in one benchmark pass (3 warm-ups + 1 timed call each).
  timeout 300 ncu --kernel-name regex:'gram_tn|cg_direction|cg_residual|tall_gemm|small_spd' \
    --launch-count 40 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    --section WarpStateStats --csv "$D/dense_bench" 786432 32 1 > "$OUT/ncu_dense_bench.csv" 2> "$OUT/ncu_err.txt"
  echo "ncu rc=$?"; tail -3 "$OUT/ncu_err.txt"
fi

if [ -n "${STEP_NCU:-}" ]; then
  echo "== ncu of the fp32 Chebyshev step"
  secs="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats"
  timeout 200 ncu --kernel-name regex:step32 --launch-skip 30 --launch-count 2 $secs --csv \
    "$D/tcsolve" eigs gen:lap3d:100 --k 16 --which largest --quiet > "$OUT/ncu_step32_eigs.csv" 2> "$OUT/ncu_step32_err.txt"
  echo "ncu eigs rc=$?"
  timeout 200 ncu --kernel-name regex:step32 --launch-skip 30 --launch-count 2 $secs --csv \
    "$D/tcsolve" solve gen:lap3d:100 --rhs random:32 --quiet > "$OUT/ncu_step32_cg.csv" 2>> "$OUT/ncu_step32_err.txt"
  echo "ncu cg rc=$?"; tail -3 "$OUT/ncu_step32_err.txt"
fi
