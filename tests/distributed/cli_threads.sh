#!/usr/bin/env bash
# `tcsolve eigs|solve` on rank threads of one process (the `--gpus N` path, run on the CPU through
# TCSOLVE_DISTRIBUTED=threads:N) against the one-process run (tests/distributed/CMakeLists.txt):
# eigenvalues to 1e-12 relative, solutions to the tolerance, one result file written by rank 0,
# a failing rank ending the job with exit 2 and no hang; and --gpus's refusals.
# Usage: cli_threads.sh TCSOLVE
set -u
T=$1
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
PY=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }

"$T" eigs gen:lap3d:21 --k 6 --which largest --device cpu --out "$W/e1.h5" -q || fail "one process eigs"
"$T" solve gen:lap3d:17 --rhs random:5 --device cpu --tol 1e-10 --out "$W/c1.h5" -q || fail "one process solve"
"$T" convert gen:lap2d:37x23 "$W/m.mtx" > /dev/null || fail "convert to mtx"
"$T" eigs "$W/m.mtx" --k 4 --device cpu --out "$W/g1.h5" -q || fail "one process eigs (file)"
for NP in 2 3; do
  export TCSOLVE_DISTRIBUTED=threads:$NP
  timeout 120 "$T" eigs gen:lap3d:21 --k 6 --which largest --device cpu --out "$W/e$NP.h5" --json > "$W/e$NP.json" ||
    fail "eigs on $NP rank threads (exit $?; 124 = hung)"
  grep -q "\"distributed\": \"$NP ranks ($NP threads of one process)" "$W/e$NP.json" ||
    fail "no distributed line: $(grep -o '"distributed": "[^"]*' "$W/e$NP.json")"
  grep -q "\"device\": \"$NP CPU threads\"" "$W/e$NP.json" || fail "device: $(grep -o '"device": "[^"]*' "$W/e$NP.json")"
  timeout 120 "$T" solve gen:lap3d:17 --rhs random:5 --device cpu --tol 1e-10 --out "$W/c$NP.h5" -q ||
    fail "solve on $NP rank threads (exit $?)"
  # a Matrix Market file: rank 0 reads it and sends the rows (send_bytes/recv_bytes)
  timeout 120 "$T" eigs "$W/m.mtx" --k 4 --device cpu --out "$W/g$NP.h5" -q || fail "eigs of a file on $NP rank threads"
  # the options the distributed path lacks: exit 2, the option named
  "$T" eigs gen:lap3d:8 --k 2 --method lobpcg --device cpu 2> "$W/err.txt" > /dev/null
  rc=$?; [ $rc -eq 2 ] || fail "--method lobpcg on rank threads: exit $rc (want 2)"
  grep -q "method lobpcg: not available with --gpus $NP" "$W/err.txt" || fail "no clear message: $(cat "$W/err.txt")"
  "$T" eigs gen:lap3d:8 --k 2 --which SM --device cpu 2> "$W/err.txt" > /dev/null
  rc=$?; [ $rc -eq 2 ] || fail "--which SM on rank threads: exit $rc (want 2)"
  grep -q "which smallest_magnitude: not available with --gpus $NP" "$W/err.txt" || fail "no clear message: $(cat "$W/err.txt")"
  unset TCSOLVE_DISTRIBUTED
done
$PY - "$W" <<'PY' || fail "results differ"
import sys, h5py, numpy as np
w = sys.argv[1]
for np_ in (2, 3):
    for a, b in (("e1", f"e{np_}"), ("g1", f"g{np_}")):
        A, B = h5py.File(f"{w}/{a}.h5"), h5py.File(f"{w}/{b}.h5")
        la, lb = A["eigenvalues"][:], B["eigenvalues"][:]
        assert B.attrs["status"] == "converged" and int(B.attrs["ranks"]) == np_, dict(B.attrs)
        assert np.max(np.abs(la - lb) / np.abs(la)) < 1e-12, (la, lb)
        ov = np.abs(B["eigenvectors"][:] @ A["eigenvectors"][:].T)
        assert np.min(np.max(ov, axis=1)) > 0.5, ov
    A, B = h5py.File(f"{w}/c1.h5"), h5py.File(f"{w}/c{np_}.h5")
    xa, xb = A["solution"][:], B["solution"][:]
    assert B.attrs["status"] == "converged"
    assert np.max(np.abs(xa - xb)) <= 1e-8 * np.max(np.abs(xa)), np.max(np.abs(xa - xb))
print("rank threads give the one-process results")
PY
# A failure mid-job (a non-symmetric matrix read by ranges, found by the collective probe): exit
# 2, a clear message, no hang, no result file.
$PY "$(dirname "$0")/nonsymmetric_h5.py" "$W/ns.h5" || fail "writing the non-symmetric matrix"
TCSOLVE_DISTRIBUTED=threads:3 timeout 120 "$T" eigs "$W/ns.h5" --k 2 --device cpu --out "$W/ns_out.h5" 2> "$W/ns.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "non-symmetric HDF5 on rank threads: exit $rc (want 2; 124 = hung): $(head -3 "$W/ns.txt")"
grep -q "not symmetric" "$W/ns.txt" || fail "no clear message for the non-symmetric matrix: $(head -3 "$W/ns.txt")"
[ -e "$W/ns_out.h5" ] && fail "a failed job left a result file"
# A file only rank 0 reads, and it is missing: every rank ends, exit 2.
TCSOLVE_DISTRIBUTED=threads:2 timeout 60 "$T" eigs "$W/none.mtx" --k 2 --device cpu 2> "$W/none.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "missing file on rank threads: exit $rc (want 2; 124 = hung)"
# --gpus: its refusals (this machine may have no GPU: then that is the message)
"$T" svds gen:lap2d:10 --k 2 --gpus 2 2> "$W/svds.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "svds --gpus 2: exit $rc (want 2)"
grep -q "svds runs on one GPU" "$W/svds.txt" || fail "svds --gpus 2: $(cat "$W/svds.txt")"
"$T" eigs gen:lap2d:10 --k 2 --gpus two 2> "$W/bad.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "--gpus two: exit $rc (want 2)"
grep -q "a count of GPUs" "$W/bad.txt" || fail "--gpus two: $(cat "$W/bad.txt")"
"$T" eigs gen:lap2d:10 --k 2 --gpus 2 --device cpu 2> "$W/cpu.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "--gpus 2 --device cpu: exit $rc (want 2)"
grep -q "runs on GPUs" "$W/cpu.txt" || fail "--gpus 2 --device cpu: $(cat "$W/cpu.txt")"
"$T" eigs gen:lap2d:10 --k 2 --gpus 64 2> "$W/many.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "--gpus 64: exit $rc (want 2)"
grep -Eq "no GPU visible|only [0-9]+ GPUs? (is|are) visible" "$W/many.txt" || fail "--gpus 64: $(cat "$W/many.txt")"
OMPI_COMM_WORLD_SIZE=2 "$T" eigs gen:lap2d:10 --k 2 --gpus 2 2> "$W/mpi.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "--gpus 2 under mpirun: exit $rc (want 2)"
grep -q "not under mpirun" "$W/mpi.txt" || fail "--gpus 2 under mpirun: $(cat "$W/mpi.txt")"
"$T" eigs gen:lap2d:10 --k 2 --gpus 1 --device cpu -q || fail "--gpus 1 is the one-process run"
ls "$W" | grep -q "\.tmp" && fail "temporary file left: $(ls "$W")"
echo "cli_threads: passed"
