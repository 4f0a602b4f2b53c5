#!/usr/bin/env bash
# Smoke run of the tcsolve command on a GPU: each command with the exit status and the output it
# must give. Registered in CTest (label gpu); exits 77 (skipped) without a GPU, 1 when any check
# fails, 0 otherwise.
# Usage: tests/apps/gpu_smoke.sh TCSOLVE [LOGDIR]   (log: LOGDIR/gpu_smoke.log, default $OUT or .)
set -u
T=${1:?usage: gpu_smoke.sh TCSOLVE [LOGDIR]}
O=${2:-${OUT:-.}}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "skipped: no GPU (nvidia-smi lists none)"
  exit 77
fi
if ! "$T" --version >/dev/null 2>&1; then
  echo "FAIL: $T --version does not run"
  exit 1
fi
mkdir -p "$O"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
LOG=$O/gpu_smoke.log
: > "$LOG"
failures=0

# check STATUS PATTERN -- ARGS...: runs tcsolve ARGS, expects exit STATUS and PATTERN (grep -E) in
# stdout+stderr.
check() {
  local want=$1 pattern=$2
  shift 3
  local out rc
  out=$("$T" "$@" 2>&1)
  rc=$?
  { echo "\$ tcsolve $*"; echo "$out"; echo "exit $rc"; echo; } >> "$LOG"
  if [ "$rc" != "$want" ]; then
    echo "FAIL (exit $rc, expected $want): tcsolve $*"
    failures=$((failures + 1))
  elif ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "FAIL (no '$pattern' in the output): tcsolve $*"
    failures=$((failures + 1))
  else
    echo "ok: tcsolve $*"
  fi
}

nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader >> "$LOG"
check 0 'cuda on' -- eigs gen:lap2d:100 --out "$W/e.h5" --plot "$W/lap2d100.svg"
[ -s "$W/e.h5" ] && [ -s "$W/lap2d100.svg" ] || { echo "FAIL: eigs --out/--plot wrote nothing"; failures=$((failures + 1)); }
check 0 'converged' -- eigs gen:lap2d:200
check 0 '"status": "converged"' -- eigs gen:lap3d:100 --k 6 --json
check 0 'converged' -- solve gen:lap3d:100 --rhs random:16
check 0 'fp16' -- eigs gen:lap2d:100 --k 4 --precision fp16 --tol 1e-4
check 0 'converged' -- eigs gen:lap2d:100 --k 4 --which largest
check 0 'blocks' -- info gen:elast3d:48+scramble --blocks 8x4
# More GPU memory than any GPU has: even Chebyshev's narrowest block for k = 2000 on 3.4M rows
# (5·2000 + 12 vectors of 27 MB, 270 GB) does not fit: refused, saying so. (k = 400 on 8M rows
# now runs, in a block narrowed to fit.)
check 2 'GPU memory|device memory' -- eigs gen:lap3d:150 --k 2000 --method chebyshev --device cuda
printf '[defaults]\ntol = 1e-8\n[job.a]\ntask = eigs\nmatrix = gen:lap3d:60\nk = 4\n[job.b]\ntask = solve\nmatrix = gen:lap3d:60\nrhs = random:8\n[job.c]\ntask = eigs\nmatrix = nothere.mtx\n' > "$W/jobs.ini"
# one job cannot run: exit 1, the others converge
check 1 'b +solve +converged' -- batch "$W/jobs.ini" --output-dir "$W/res"

echo "$failures check(s) failed; log: $LOG"
[ "$failures" = 0 ]
