#!/usr/bin/env bash
# Issue 17's rows on the device's two-GPU kind: one GPU against two, in the same call.
#   T=.device-data/s4/tcsolve bash bench/distributed/scaling.sh [ROWS]
# For each row and repetition (alternating): the one-process default path (`tcsolve ...`, what a
# user gets on one GPU: the planner, the fused and fp32-ladder Chebyshev step), the distributed
# code on one rank (TCSOLVE_DISTRIBUTED=1: the same kernels as on two, the scaling baseline), and
# `mpirun -np 2` (NO_MPI=1: left out; NO_DIST=1 leaves out the one-rank row), and one process with a thread per GPU (`--gpus 2`). Prints seconds.solve / seconds.total / process wall and checks every answer
# (eigs: the closed form of the Laplacian; solve: the true residuals tcsolve recomputes).
# TCSOLVE_COMM_PROFILE rows: the communication share, timed with synchronizations (not overlapped).
set -u
T=${T:-.device-data/s4/tcsolve}
REPS=${REPS:-3}
ROWS=${ROWS:-"eigs200 solve200 profile200"}
export NCCL_NVLS_ENABLE=0   # NVLink multicast stays off on the shared host (device KINDS.md)
MPI="mpirun --allow-run-as-root -np 2 ${MPI_EXTRA:-} -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x TCSOLVE_COMM_PROFILE -x TCSOLVE_CACHE_DIR"
OUTD=${OUT:-/tmp}/scaling; mkdir -p "$OUTD"
PY=python3
summ() {  # file label wall
  $PY - "$@" <<'PY'
import json, sys, math, itertools
f, label, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    d = json.load(open(f))
except Exception as e:
    print(f"{label:28s} no JSON ({e})"); sys.exit()
s = d["seconds"]
line = f"{label:28s} {d['status']:13s} solve {s['solve']:8.3f}  total {s['total']:8.3f}  wall {wall:8.2f}  it {d['iterations']}"
if d["task"] == "eigs":
    m = d["matrix"]; N = int(m.split(":")[2])
    one = [2 - 2 * math.cos(math.pi * i / (N + 1)) for i in range(1, N + 1)]
    top = sorted(one)[-16:]
    vals = sorted((a + b + c for a, b, c in itertools.product(top, top, top)), reverse=True)[:len(d["eigenvalues"])]
    err = max(abs(x - y) for x, y in zip(d["eigenvalues"], vals))
    line += f"  max|lam-exact| {err:.2e}"
else:
    line += f"  max rel. residual {max(d['residual_norms']):.2e}"
line += f"  peak/GPU {d['peak_device_bytes']/2**30:.2f} GiB"
print(line)
if "distributed" in d and "profiled" in d["distributed"]:
    print("    " + d["distributed"])
PY
}
run() {  # label cmd...
  local label=$1; shift
  local f=$OUTD/$(echo "$label" | tr ' /:' '___').$RANDOM.json
  local t0=$(date +%s.%N)
  "$@" --json > "$f" 2> "$f.err"
  local rc=$?
  local t1=$(date +%s.%N)
  [ $rc -ne 0 ] && { echo "$label: exit $rc"; tail -3 "$f.err"; }
  summ "$f" "$label" "$($PY -c "print($t1 - $t0)")"
}
three() {  # args...
  for r in $(seq "$REPS"); do
    run "1 GPU default" "$T" "$@"
    [ -n "${NO_DIST:-}" ] || TCSOLVE_DISTRIBUTED=1 run "1 rank distributed" "$T" "$@"
    [ -n "${NO_MPI:-}" ] || run "2 GPUs mpirun" $MPI "$T" "$@"
    run "2 GPUs --gpus 2 (threads)" "$T" "$@" --gpus 2
  done
}
for row in $ROWS; do
  case $row in
    eigs200)  echo "== eigs gen:lap3d:200 --k 16 --which largest"; three eigs gen:lap3d:200 --k 16 --which largest ;;
    solve200) echo "== solve gen:lap3d:200 --rhs random:32"; three solve gen:lap3d:200 --rhs random:32 ;;
    eigs300)  echo "== eigs gen:lap3d:300 --k 16 --which largest"; three eigs gen:lap3d:300 --k 16 --which largest ;;
    solve300) echo "== solve gen:lap3d:300 --rhs random:32"; three solve gen:lap3d:300 --rhs random:32 ;;
    profile200)
      echo "== communication share at lap3d:200 (TCSOLVE_COMM_PROFILE=1)"
      TCSOLVE_COMM_PROFILE=1 run "2 GPUs eigs profiled" $MPI "$T" eigs gen:lap3d:200 --k 16 --which largest
      TCSOLVE_COMM_PROFILE=1 run "2 GPUs solve profiled" $MPI "$T" solve gen:lap3d:200 --rhs random:32 ;;
    solve560)
      echo "== solve gen:lap3d:560 --rhs random:16 on 2 GPUs"
      (while sleep 5; do nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | tr '\n' ' '; echo; done) > "$OUTD/smi560.log" &
      SMI=$!
      run "2 GPUs solve lap3d:560" $MPI "$T" solve gen:lap3d:560 --rhs random:16
      kill $SMI; echo "nvidia-smi peak (MiB per GPU):"; sort -t, -k2 -n "$OUTD/smi560.log" | tail -1 ;;
    batch8)
      # 8 equal eigs jobs (each one a full process-free job of ~1 s on one H200); the user's
      # measure is the batch's wall time, mpirun's start included.
      B=${BATCH_MATRIX:-gen:lap3d:150}
      echo "== batch of 8 equal jobs: eigs $B --k 16 --which largest"
      : > "$OUTD/jobs8.ini"
      for s in $(seq 1 8); do
        printf '[job.j%d]\ntask = eigs\nmatrix = %s\nk = 16\nwhich = largest\nseed = %d\nout = %s/j%d.h5\n\n' "$s" "$B" "$s" "$OUTD" "$s" >> "$OUTD/jobs8.ini"
      done
      for r in $(seq "$REPS"); do
        # one: one GPU (--gpus 1); two: one process, a worker per GPU (the default with two
        # visible); mpi: mpirun -np 2, a GPU per rank
        for mode in one two mpi; do
          rm -f "$OUTD"/j*.h5
          t0=$(date +%s.%N)
          case $mode in
            one) "$T" batch "$OUTD/jobs8.ini" --gpus 1 --allow-outside-output-dir --json > "$OUTD/b8.$mode.json" 2> "$OUTD/b8.err" ;;
            two) "$T" batch "$OUTD/jobs8.ini" --allow-outside-output-dir --json > "$OUTD/b8.$mode.json" 2> "$OUTD/b8.err" ;;
            mpi) $MPI "$T" batch "$OUTD/jobs8.ini" --allow-outside-output-dir --json > "$OUTD/b8.$mode.json" 2> "$OUTD/b8.err" ;;
          esac
          rc=$?; t1=$(date +%s.%N)
          $PY - "$OUTD/b8.$mode.json" "$mode" "$rc" "$t0" "$t1" <<'PY'
import json, sys
f, mode, rc, t0, t1 = sys.argv[1:]
wall = float(t1) - float(t0)
try:
    d = json.load(open(f))
    jobs = d.get("jobs", d if isinstance(d, list) else [])
    st = [j.get("status") for j in jobs]
    where = lambda j: j.get("rank", j.get("gpu", 0))
    ranks = sorted({where(j) for j in jobs})
    per = {r: sum(j.get("seconds", 0.0) for j in jobs if where(j) == r) for r in ranks}
    print(f"batch8 {mode:3s} rc {rc} wall {wall:7.2f} s  jobs {len(jobs)} statuses {sorted(set(st))} ranks/GPUs {ranks}"
          f"  job seconds per rank/GPU {', '.join(f'{r}: {v:.2f}' for r, v in per.items())}"
          f"  (wall - busiest {wall - max(per.values()):.2f} s: start, context, gather, exit)")
except Exception as e:
    print(f"batch8 {mode:3s} rc {rc} wall {wall:7.2f} s  (no JSON: {e})")
PY
          [ $rc -ne 0 ] && tail -3 "$OUTD/b8.err"
          ls "$OUTD"/j*.h5 2>/dev/null | wc -l | sed 's/^/    results written: /'
        done
      done ;;
    eigs560)
      echo "== eigs gen:lap3d:560 --k 16 --which largest on 2 GPUs"
      run "2 GPUs eigs lap3d:560" $MPI "$T" eigs gen:lap3d:560 --k 16 --which largest ;;
  esac
done
