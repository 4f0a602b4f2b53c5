#!/usr/bin/env bash
# Where a batch's time outside its jobs goes under mpirun: TCSOLVE_TRACE marks of every rank
# (batch of 2 equal eigs jobs, one per rank) against one process running one job.
D=${D:-.device-data/s4}; T=$D/tcsolve; W=/tmp/s4/bt
mkdir -p /tmp/deps /tmp/s4 $W; tar -xJf $D/deps.tar.xz -C /tmp/deps
export LD_LIBRARY_PATH=/tmp/deps TCSOLVE_CACHE_DIR=/tmp/s4/cache NCCL_NVLS_ENABLE=0
MPI="mpirun --allow-run-as-root --tag-output -np 2 -x LD_LIBRARY_PATH -x TCSOLVE_CACHE_DIR -x TCSOLVE_TRACE"
for n in 1 2; do
  : > $W/jobs$n.ini
  for j in $(seq 1 $n); do
    printf '[job.j%d]\ntask = eigs\nmatrix = gen:lap3d:150\nk = 16\nwhich = largest\nseed = %d\nout = %s/j%d_%d.h5\n\n' $j $j $W $n $j >> $W/jobs$n.ini
  done
done
$T eigs gen:lap3d:40 --k 4 -q > /dev/null 2>&1
for rep in 1 2; do
  t0=$(date +%s.%N); TCSOLVE_TRACE=1 $T batch $W/jobs1.ini -q 2> $W/t1.err; t1=$(date +%s.%N)
  echo "one process, one job: wall $(python3 -c "print(round($t1 - $t0, 3))")"
  grep -E "main|batch:|job: start|ready|solve starts|eigs: finished|command" $W/t1.err | head -12
  t0=$(date +%s.%N); TCSOLVE_TRACE=1 $MPI $T batch $W/jobs2.ini -q 2> $W/t2.err; t1=$(date +%s.%N)
  echo "mpirun -np 2, a job each: wall $(python3 -c "print(round($t1 - $t0, 3))")"
  grep -E "main|batch:|job: start|ready|solve starts|eigs: finished|command" $W/t2.err | head -24
  t0=$(date +%s.%N); TCSOLVE_TRACE=1 $T batch $W/jobs2.ini -q 2> $W/t3.err; t1=$(date +%s.%N)
  echo "one process, a worker per GPU, a job each: wall $(python3 -c "print(round($t1 - $t0, 3))")"
  grep -E "main|batch:|job: start|ready|solve starts|eigs: finished|command" $W/t3.err | head -24
done
