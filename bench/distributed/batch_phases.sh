#!/usr/bin/env bash
# Where the seconds of a batch's jobs go with one worker, a worker per GPU in one process, and
# mpirun -np 2: every TCSOLVE_TRACE mark of a batch of 8 equal eigs jobs (gen:lap3d:150, k = 16
# largest), written to $OUT/phases_{one,two,mpi}.txt for bench/distributed/batch_phases.py.
#   run(kind="nvidia-h200-x2", carry=[".device-data/s4"], command="bash bench/distributed/batch_phases.sh")
D=${D:-.device-data/s4}; T=$D/tcsolve; W=/tmp/s4/bp; OUT=${OUT:-/tmp}
mkdir -p /tmp/deps /tmp/s4 $W; tar -xJf $D/deps.tar.xz -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache NCCL_NVLS_ENABLE=0
MPI="mpirun --allow-run-as-root --tag-output -np 2 -x LD_LIBRARY_PATH -x TCSOLVE_CACHE_DIR -x TCSOLVE_TRACE"
: > $W/jobs.ini
for j in $(seq 1 8); do
  printf '[job.j%d]\ntask = eigs\nmatrix = gen:lap3d:150\nk = 16\nwhich = largest\nseed = %d\nout = %s/j%d.h5\n\n' $j $j $W $j >> $W/jobs.ini
done
$T eigs gen:lap3d:40 --k 4 -q > /dev/null 2>&1
for mode in ${MODES:-one two mpi}; do
  rm -f $W/j*.h5
  t0=$(date +%s.%N)
  case $mode in
    one) TCSOLVE_TRACE=1 $T batch $W/jobs.ini --gpus 1 -q 2> $OUT/phases_$mode.txt ;;
    two) TCSOLVE_TRACE=1 $EXTRA $T batch $W/jobs.ini -q 2> $OUT/phases_$mode.txt ;;
    mpi) TCSOLVE_TRACE=1 $MPI $T batch $W/jobs.ini -q 2> $OUT/phases_$mode.txt ;;
  esac
  t1=$(date +%s.%N)
  echo "$mode: wall $(python3 -c "print(round($t1 - $t0, 3))") s" | tee -a $OUT/phases_$mode.txt
done
