#!/usr/bin/env bash
# Block CG's dense passes on one GPU (issue 19): the dense-ops benchmark (bench/dense_bench.cpp,
# against the copy rate of the same process), then `tcsolve solve` rows with an earlier binary
# ($D/tcsolve_old) and this one ($D/tcsolve) alternating in the same call, then (NCU=1) an ncu
# profile of the benchmark's kernels. Staged by scripts/device_session.sh stage plus
#   cp OLD_BUILD/apps/tcsolve $D/tcsolve_old; cp build/bench/dense_bench $D/
# Run: run(command="OUT=$OUT bash bench/solvers/blockcg_dense_ab.sh", carry=[".device-data/s4"])
# Env: REPS (solve runs per binary, default 3), ROWS (default: the three rows below), NCU=1.
set -u -o pipefail
D=${D:-.device-data/s4}
OUT=${OUT:-device-out}
mkdir -p "$OUT" /tmp/deps
tar -xJf "$D/deps.tar.xz" -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
date -u +%FT%TZ

echo "== dense_bench"
for nn in 786432 1000000; do
  "$D/dense_bench" $nn 32 30 | tee "$OUT/dense_bench_${nn}.txt"
  TCSOLVE_GRAM_VEC=0 "$D/dense_bench" $nn 32 30 | grep gram_into | sed 's/^/GRAM_VEC=0 /'
done

echo "== solves (seconds.solve, iterations, solve_steps)"
ROWS=${ROWS:-"gen:elast3d:64:32 gen:lap3d:100:32 gen:lap3d:100:128"}
for rep in $(seq 1 "${REPS:-3}"); do
  for row in $ROWS; do
    spec=${row%:*}; k=${row##*:}
    for b in tcsolve_old tcsolve; do
      "$D/$b" solve "$spec" --rhs random:$k --json > "$OUT/solve_${b}_${spec//:/_}_${k}_$rep.json" 2> "$OUT/solve_err.txt"
      python3 - "$OUT/solve_${b}_${spec//:/_}_${k}_$rep.json" "$b" "$row" <<'E'
import json, sys
d = json.load(open(sys.argv[1]))
r = d.get("residual_norms") or [0]
print(f"{sys.argv[2]:12s} {sys.argv[3]:22s} solve {d['seconds']['solve']:.4f} total {d['seconds']['total']:.4f} "
      f"it {d['iterations']} max_res {max(r):.2e} {d['status']} | {d['solve_steps']} | {d['message'][:80]}")
E
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
