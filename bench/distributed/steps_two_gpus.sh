#!/usr/bin/env bash
# Issue 17 on the two-GPU kind: the distributed GPU tests under mpirun -np 2, then
# `eigs gen:lap3d:200 --k 16 --which largest` on one GPU and on two (2 runs each, alternating)
# with the solve's steps (rank 0's solve_steps) and the ladder's line, and one profiled 2-GPU run.
#   bash scripts/device_session.sh stage; run(kind="nvidia-h200-x2", carry=[".device-data/s4"],
#     command="bash bench/distributed/steps_two_gpus.sh")
D=${D:-.device-data/s4}; T=$D/tcsolve; OUT=${OUT:-/tmp}
mkdir -p /tmp/deps /tmp/s4; tar -xJf $D/deps.tar.xz -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache NCCL_NVLS_ENABLE=0
MPI="mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x TCSOLVE_CACHE_DIR -x TCSOLVE_COMM_PROFILE"
nvidia-smi --query-gpu=name --format=csv,noheader
if [ -z "${NO_TESTS:-}" ]; then
  timeout 240 $MPI $D/tests/test_distributed_gpu > $OUT/test_distributed_gpu.log 2>&1; echo "test_distributed_gpu rc=$?"
  grep -E "^\[  (PASSED|FAILED)" $OUT/test_distributed_gpu.log | head
fi
show() { python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); s=d['seconds']
print(sys.argv[2], d['status'], 'solve %.3f total %.3f it %s' % (s['solve'], s['total'], d['iterations']))
print('   steps:', d.get('solve_steps','')[:600])
print('   precision:', d.get('precision','')[:300])
print('   init %.3f read %.3f setup %.3f' % (s.get('init',0), s.get('read',0), s.get('setup',0)))
if d.get('distributed'): print('   dist:', d['distributed'][:900])
" "$@"; }
$T eigs gen:lap3d:60 --k 4 -q > /dev/null 2>&1
for r in 1 2; do
  $T eigs gen:lap3d:200 --k 16 --which largest --json > /tmp/s4/e1.json 2>/dev/null; show /tmp/s4/e1.json "1 GPU"
  $MPI $T eigs gen:lap3d:200 --k 16 --which largest --json > /tmp/s4/e2.json 2>/tmp/s4/e2.err; show /tmp/s4/e2.json "2 GPUs"
done
TCSOLVE_COMM_PROFILE=1 $MPI $T eigs gen:lap3d:200 --k 16 --which largest --json > /tmp/s4/e3.json 2>/dev/null
show /tmp/s4/e3.json "2 GPUs profiled"
if [ -n "${AB_WARMUP:-}" ]; then  # the communicator's warm-up off (TCSOLVE_NCCL_WARMUP=0), same call
  TCSOLVE_NCCL_WARMUP=0 $MPI -x TCSOLVE_NCCL_WARMUP $T eigs gen:lap3d:200 --k 16 --which largest --json > /tmp/s4/e4.json 2>/dev/null
  show /tmp/s4/e4.json "2 GPUs, NCCL not warmed"
fi
if [ -n "${SOLVE:-}" ]; then
  for r in 1 2; do
    $T solve gen:lap3d:200 --rhs random:32 --json > /tmp/s4/s1.json 2>/dev/null; show /tmp/s4/s1.json "solve 1 GPU"
    $MPI $T solve gen:lap3d:200 --rhs random:32 --json > /tmp/s4/s2.json 2>/dev/null; show /tmp/s4/s2.json "solve 2 GPUs"
  done
fi
[ -n "${BATCH:-}" ] && REPS=${BATCH_REPS:-1} ROWS=batch8 T=$T OUT=$OUT bash bench/distributed/scaling.sh
if [ -n "${LAUNCH:-}" ]; then  # what mpirun's start and a rank's exit cost, without a job
  for c in "true" "$T --version"; do
    t0=$(date +%s.%N); $MPI $c > /dev/null 2>&1; t1=$(date +%s.%N)
    t2=$(date +%s.%N); $c > /dev/null 2>&1; t3=$(date +%s.%N)
    python3 -c "print('mpirun -np 2 $c: %.3f s; one process: %.3f s' % ($t1 - $t0, $t3 - $t2))"
  done
fi
