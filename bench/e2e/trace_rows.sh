#!/usr/bin/env bash
# Where the default path's seconds go: each row of the end-to-end table run R times (the first
# is the process's cold start on this machine) with TCSOLVE_TRACE=1; prints the process wall
# time, seconds.* from --json and the trace marks (core/trace.hpp). Usage:
#   T=path/to/tcsolve R=3 bash bench/e2e/trace_rows.sh [ROW ...]
# ROW: lap3d100_k16_largest lap3d100_k16 lap3d100_k64 lap2d200_k16 lap2d1000_k32 lap3d64_k256
#      elast3d40_k10 solve32 solve128 batch12 (default: all)
set -u
T=${T:-build/apps/tcsolve}
R=${R:-3}
ROWS=${*:-lap3d100_k16_largest lap3d100_k16 lap3d100_k64 lap2d200_k16 lap2d1000_k32 lap3d64_k256 elast3d40_k10 solve32 solve128 batch12}
W=$(mktemp -d)
args() {
  case $1 in
    lap3d100_k16_largest) echo "eigs gen:lap3d:100 --k 16 --which largest" ;;
    lap3d100_k16) echo "eigs gen:lap3d:100 --k 16" ;;
    lap3d100_k64) echo "eigs gen:lap3d:100 --k 64" ;;
    lap2d200_k16) echo "eigs gen:lap2d:200 --k 16" ;;
    lap2d1000_k32) echo "eigs gen:lap2d:1000 --k 32" ;;
    lap3d64_k256) echo "eigs gen:lap3d:64 --k 256" ;;
    elast3d40_k10) echo "eigs gen:elast3d:40 --k 10" ;;
    solve32) echo "solve gen:lap3d:100 --rhs random:32" ;;
    solve128) echo "solve gen:lap3d:100 --rhs random:128" ;;
    batch12) echo "batch" ;;
  esac
}
for row in $ROWS; do
  a=$(args "$row")
  [ -n "$a" ] || { echo "unknown row $row"; continue; }
  for r in $(seq 1 "$R"); do
    echo "== $row run $r: tcsolve $a"
    if [ "$a" = batch ]; then
      : > "$W/jobs.txt"
      for s in $(seq 1 12); do
        printf '[job.s%d]\ntask = eigs\nmatrix = gen:lap2d:200\nk = 16\nwhich = largest\nseed = %d\nout = %s/b%d.h5\n\n' "$s" "$s" "$W" "$s" >> "$W/jobs.txt"
      done
      rm -f "$W"/b*.h5
      t0=$(date +%s.%N)
      TCSOLVE_TRACE=1 $T batch "$W/jobs.txt" > "$W/out.txt" 2> "$W/err.txt"
      rc=$?
      t1=$(date +%s.%N)
      tail -3 "$W/out.txt"
    else
      t0=$(date +%s.%N)
      TCSOLVE_TRACE=1 $T $a --json > "$W/out.txt" 2> "$W/err.txt"
      rc=$?
      t1=$(date +%s.%N)
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('status', d.get('status'), 'plan', d.get('method'), d.get('verification',''), 'seconds', {k: round(v, 4) for k, v in d['seconds'].items()})" "$W/out.txt" 2>/dev/null || head -c 600 "$W/out.txt"
    fi
    echo "rc=$rc wall $(python3 -c "print(round($t1 - $t0, 4))")"
    grep "tcsolve trace" "$W/err.txt" | sed 's/tcsolve trace//'
    grep -v "tcsolve trace" "$W/err.txt" | head -5
  done
done
rm -rf "$W"
