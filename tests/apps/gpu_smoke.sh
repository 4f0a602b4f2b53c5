#!/usr/bin/env bash
# Smoke run of the tcsolve command on a GPU machine (the device tool, docs' Recipe B): the binary
# built here with -DTCSOLVE_STATIC_BOOST=ON in BUILD (default build-apps-gpu) is carried there.
# Usage: tests/apps/gpu_smoke.sh [BUILD] ; logs go to $OUT (or ./gpu_smoke_out).
set -u
BUILD=${1:-build-apps-gpu}
T=$BUILD/apps/tcsolve
O=${OUT:-gpu_smoke_out}
mkdir -p "$O"
W=$(mktemp -d)
TIMEFORMAT='(wall %R s)'
run() { echo "\$ tcsolve $*"; time "$T" "$@"; echo "exit $?"; echo; }
{
  nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
  run --version
  run eigs gen:lap2d:100 --out "$W/e.h5" --plot "$O/lap2d100.svg"
  run eigs gen:lap2d:200
  run eigs gen:lap3d:100 --k 6 --json
  run solve gen:lap3d:100 --rhs random:16
  run eigs gen:lap2d:100 --k 4 --precision fp16 --tol 1e-4
  run eigs gen:lap2d:100 --k 4 --which largest
  run info gen:elast3d:48+scramble --blocks 8x4
  # GPU memory: ~260 GB of blocks for k = 400 on 8M rows: must say how much is needed
  run eigs gen:lap3d:200 --k 400 --device cuda
  printf '[defaults]\ntol = 1e-8\n[job.a]\ntask = eigs\nmatrix = gen:lap3d:60\nk = 4\n[job.b]\ntask = solve\nmatrix = gen:lap3d:60\nrhs = random:8\n[job.c]\ntask = eigs\nmatrix = nothere.mtx\n' > "$W/jobs.ini"
  run batch "$W/jobs.ini" --output-dir "$W/res"
  if [ -x "$BUILD/tests/apps/test_apps_gpu" ]; then "$BUILD/tests/apps/test_apps_gpu"; echo "exit $?"; fi
} > "$O/gpu_smoke.log" 2>&1
rm -rf "$W"
tail -c 3000 "$O/gpu_smoke.log"
