#!/usr/bin/env bash
# Two GPUs (nvidia-h200-x2): the distributed GPU tests under mpirun -np 2, the two-GPU batch test,
# and block CG with Jacobi on elast3d:64 (32 rhs) on one GPU and on two ranks (2 runs each).
#   scripts/device_session.sh stage; run(kind="nvidia-h200-x2", carry=[".device-data/s4"],
#     command="OUT=$OUT bash bench/distributed/jacobi_two_gpus.sh")
D=.device-data/s4; mkdir -p /tmp/deps /tmp/s4; tar -xJf $D/deps.tar.xz -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache NCCL_NVLS_ENABLE=0
MPI="mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x TCSOLVE_CACHE_DIR"
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 $MPI $D/tests/test_distributed_gpu > $OUT/td.log 2>&1; echo "test_distributed_gpu rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/td.log | head -5
TCSOLVE_TEST_BIN=$D/tcsolve TCSOLVE_MATRICES=$D/matrices timeout 200 $D/tests/test_apps_gpu --gtest_filter='AppsGpu.Batch*' > $OUT/ta.log 2>&1; echo "apps batch rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)" $OUT/ta.log
for r in 1 2; do
  $D/tcsolve solve gen:elast3d:64 --rhs random:32 --json > /tmp/s4/a.json 2>/dev/null
  $MPI $D/tcsolve solve gen:elast3d:64 --rhs random:32 --json > /tmp/s4/b.json 2>/tmp/s4/b.err
  python3 -c "
import json
for f,l in (('/tmp/s4/a.json','1 GPU '),('/tmp/s4/b.json','2 GPUs')):
    d=json.load(open(f)); print(l, d['status'], 'solve %.4f' % d['seconds']['solve'], 'it', d['iterations'], 'max res %.2e' % max(d['residual_norms']), d['message'][:70])"
done
