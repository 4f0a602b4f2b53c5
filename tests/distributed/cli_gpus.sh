#!/usr/bin/env bash
# `tcsolve eigs|solve --gpus 2` (two GPUs, one thread of this process each, NCCL) against --gpus 1
# (the one-process run): eigenvalues to 1e-10 relative, solutions to the tolerance, ranks = 2 and
# the "threads of one process" account in the result; a failing rank ends the job (exit 2) without
# a hang. Registered in CTest (label gpu); exits 77 (skipped) with fewer than 2 GPUs.
# Usage: cli_gpus.sh TCSOLVE
set -u
T=$1
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
PY=${PYTHON:-/usr/bin/python3}
fail() { echo "FAIL: $*"; exit 1; }
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$n" -ge 2 ] || { echo "skipped: $n GPU(s), --gpus 2 needs 2"; exit 77; }

for g in 1 2; do
  timeout 300 "$T" eigs gen:lap3d:60 --k 8 --which largest --method chebyshev --precision fp64 --gpus $g \
    --out "$W/e$g.h5" --json > "$W/e$g.json" || fail "eigs --gpus $g (exit $?; 124 = hung)"
  timeout 300 "$T" eigs gen:lap3d:50 --k 6 --method chebyshev --precision fp64 --gpus $g --out "$W/s$g.h5" -q ||
    fail "eigs smallest --gpus $g (exit $?)"
  timeout 300 "$T" solve gen:lap3d:60 --rhs random:8 --tol 1e-10 --gpus $g --out "$W/c$g.h5" --json > "$W/c$g.json" ||
    fail "solve --gpus $g (exit $?)"
done
grep -q '"distributed": "2 ranks (2 threads of one process, NCCL' "$W/e2.json" ||
  fail "no distributed line: $(grep -o '"distributed": "[^"]*' "$W/e2.json")"
grep -q 'start-up (slowest rank): GPU context .*NCCL overlapped' "$W/e2.json" || fail "no start-up account in e2.json"
$PY - "$W" <<'PY' || fail "--gpus 2 differs from --gpus 1"
import sys, h5py, numpy as np
w = sys.argv[1]
for a, b in (("e1", "e2"), ("s1", "s2")):
    A, B = h5py.File(f"{w}/{a}.h5"), h5py.File(f"{w}/{b}.h5")
    la, lb = A["eigenvalues"][:], B["eigenvalues"][:]
    assert B.attrs["status"] == "converged" and int(B.attrs["ranks"]) == 2, dict(B.attrs)
    assert np.max(np.abs(la - lb) / np.abs(la)) < 1e-10, (la, lb)
A, B = h5py.File(f"{w}/c1.h5"), h5py.File(f"{w}/c2.h5")
xa, xb = A["solution"][:], B["solution"][:]
assert B.attrs["status"] == "converged" and int(B.attrs["ranks"]) == 2
assert np.max(np.abs(xa - xb)) <= 1e-7 * np.max(np.abs(xa)), np.max(np.abs(xa - xb))
print("--gpus 2 gives the --gpus 1 results")
PY
$PY "$(dirname "$0")/nonsymmetric_h5.py" "$W/ns.h5" || fail "writing the non-symmetric matrix"
timeout 120 "$T" eigs "$W/ns.h5" --k 2 --gpus 2 2> "$W/ns.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "non-symmetric HDF5 with --gpus 2: exit $rc (want 2; 124 = hung): $(head -3 "$W/ns.txt")"
grep -q "not symmetric" "$W/ns.txt" || fail "no clear message: $(head -3 "$W/ns.txt")"
"$T" eigs gen:lap2d:10 --k 2 --gpus $((n + 1)) 2> "$W/many.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "--gpus $((n + 1)): exit $rc (want 2)"
grep -q "only $n GPUs are visible" "$W/many.txt" || fail "--gpus $((n + 1)): $(cat "$W/many.txt")"
echo "cli_gpus: passed"
