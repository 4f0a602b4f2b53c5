#!/usr/bin/env bash
# `mpirun -np N tcsolve eigs|solve` against the one-process run (tests/distributed/CMakeLists.txt):
# eigenvalues to 1e-12 relative, solutions to the tolerance, the result file written once by
# rank 0 and readable, and the options the distributed path lacks refused with exit 2.
# Usage: cli_mpi.sh TCSOLVE MPIEXEC NP [EXTRA_MPI_FLAGS...]
set -u
T=$1 MPI=$2 NP=$3; shift 3
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
PY=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
run_mpi() { "$MPI" -np "$NP" "$@"; }

"$T" eigs gen:lap3d:21 --k 6 --which largest --device cpu --out "$W/e1.h5" -q || fail "one process eigs"
run_mpi "$@" "$T" eigs gen:lap3d:21 --k 6 --which largest --device cpu --out "$W/eN.h5" --json > "$W/eN.json" ||
  fail "eigs under mpirun -np $NP"
grep -q "\"distributed\": \"$NP ranks" "$W/eN.json" || fail "no distributed line: $(head -c 400 "$W/eN.json")"
"$T" eigs gen:lap2d:40x31 --k 5 --device cpu --out "$W/s1.h5" -q || fail "one process eigs smallest"
run_mpi "$@" "$T" eigs gen:lap2d:40x31 --k 5 --device cpu --out "$W/sN.h5" -q || fail "eigs smallest under mpirun"
"$T" solve gen:lap3d:17 --rhs random:5 --device cpu --tol 1e-10 --out "$W/c1.h5" -q || fail "one process solve"
run_mpi "$@" "$T" solve gen:lap3d:17 --rhs random:5 --device cpu --tol 1e-10 --out "$W/cN.h5" -q ||
  fail "solve under mpirun"
$PY - "$W" "$NP" <<'PY' || fail "results differ"
import sys, h5py, numpy as np
w, np_ = sys.argv[1], int(sys.argv[2])
for a, b in (("e1", "eN"), ("s1", "sN")):
    A, B = h5py.File(f"{w}/{a}.h5"), h5py.File(f"{w}/{b}.h5")
    la, lb = A["eigenvalues"][:], B["eigenvalues"][:]
    assert B.attrs["status"] == "converged" and int(B.attrs["ranks"]) == np_, dict(B.attrs)
    assert np.max(np.abs(la - lb) / np.abs(la)) < 1e-12, (la, lb)
    V = B["eigenvectors"][:]
    assert V.shape == A["eigenvectors"][:].shape
    # the gathered vectors are eigenvectors of the whole matrix (rows in the global order)
    ov = np.abs(V @ A["eigenvectors"][:].T)
    assert np.min(np.max(ov, axis=1)) > 0.5, ov
A, B = h5py.File(f"{w}/c1.h5"), h5py.File(f"{w}/cN.h5")
xa, xb = A["solution"][:], B["solution"][:]
assert B.attrs["status"] == "converged"
assert np.max(np.abs(xa - xb)) <= 1e-8 * np.max(np.abs(xa)), np.max(np.abs(xa - xb))
assert np.all(B["residual_norms"][:] <= 1e-10)
print("results equal the one-process run")
PY
run_mpi "$@" "$T" eigs gen:lap3d:8 --k 2 --method lobpcg --device cpu 2> "$W/err.txt"
rc=$?; [ $rc -eq 2 ] || fail "--method lobpcg under mpirun: exit $rc (want 2)"
grep -q "not available under mpirun" "$W/err.txt" || fail "no clear message: $(cat "$W/err.txt")"
ls "$W" | grep -q tmp && fail "temporary file left: $(ls "$W")"
echo "cli_mpi: np $NP passed"
