#!/usr/bin/env bash
# Builds startup_floor.c three ways (see its header) into $1 (default /tmp/startup_floor) and runs
# run.py: 5 rounds of every variant, then of `TCSOLVE --version` and a small GPU eigs, if TCSOLVE is
# given. Usage: bench/startup/run.sh [BUILD_DIR] [TCSOLVE]. Results: docs/performance.md.
set -eu
B=${1:-/tmp/startup_floor}; C=${CUDA_HOME:-/usr/local/cuda}; S=$(dirname "$0")
mkdir -p "$B"
gcc -O2 "$S/startup_floor.c" -o "$B/startup_bare"
gcc -O2 "$S/startup_floor.c" -o "$B/startup_dl" -ldl -lpthread
gcc -O2 -DLINKED -I"$C/include" "$S/startup_floor.c" -o "$B/startup_linked" -Wl,--no-as-needed \
  -L"$C/lib64" -Wl,-rpath,"$C/lib64" -lcusolver -lcublas -lcusparse -lcudart -ldl -lpthread 2>/dev/null
python3 "$S/run.py" "$B" ${2:-}
