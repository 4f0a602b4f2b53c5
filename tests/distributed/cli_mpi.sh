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
# Inputs: an HDF5 group read by row ranges (hyperslabs), a Matrix Market file read by rank 0 and
# scattered: the answers of one process; a non-symmetric HDF5 matrix (a range cannot show it)
# refused by the distributed symmetry probe.
"$T" convert gen:lap2d:37x23 "$W/m.h5" > /dev/null || fail "convert to h5"
"$T" convert gen:lap2d:37x23 "$W/m.mtx" > /dev/null || fail "convert to mtx"
"$T" eigs gen:lap2d:37x23 --k 4 --device cpu --out "$W/g1.h5" -q || fail "one process eigs (inputs)"
for f in m.h5 m.mtx; do
  run_mpi "$@" "$T" eigs "$W/$f" --k 4 --device cpu --out "$W/in_$f.h5" -q || fail "eigs of $f under mpirun"
done
$PY - "$W" <<'PY' || fail "file inputs differ"
import sys, h5py, numpy as np
w = sys.argv[1]
ref = h5py.File(f"{w}/g1.h5")["eigenvalues"][:]
for f in ("m.h5", "m.mtx"):
    got = h5py.File(f"{w}/in_{f}.h5")["eigenvalues"][:]
    assert np.max(np.abs(got - ref) / np.abs(ref)) < 1e-12, (f, got, ref)
print("HDF5 ranges and the scattered Matrix Market file give the one-process eigenvalues")
PY
# A scrambled matrix read whole: METIS k-way cuts fewer edges than ranges (auto picks it), the
# rows are renumbered; eigenvalues, eigenvectors and solutions come back in the input's order.
"$T" convert "gen:lap2d:30x27+scramble" "$W/s.mtx" > /dev/null || fail "convert scrambled"
"$T" eigs "$W/s.mtx" --k 4 --device cpu --out "$W/sc1.h5" -q || fail "one process eigs (scrambled)"
"$T" solve "$W/s.mtx" --rhs random:3 --device cpu --tol 1e-10 --out "$W/sv1.h5" -q || fail "one process solve (scrambled)"
run_mpi "$@" "$T" eigs "$W/s.mtx" --k 4 --device cpu --out "$W/scN.h5" --json > "$W/scN.json" || fail "eigs scrambled under mpirun"
run_mpi "$@" "$T" solve "$W/s.mtx" --rhs random:3 --device cpu --tol 1e-10 --out "$W/svN.h5" -q || fail "solve scrambled under mpirun"
if grep -q "METIS not built in" "$W/scN.json"; then
  echo "cli_mpi: METIS not built in: the METIS checks are skipped"
else
  grep -q "rows split by METIS k-way" "$W/scN.json" || fail "auto did not take METIS: $(grep -o '"distributed": "[^"]*' "$W/scN.json")"
  $PY - "$W" <<'PY' || fail "METIS-partitioned results differ"
import sys, h5py, numpy as np
w = sys.argv[1]
A, B = h5py.File(f"{w}/sc1.h5"), h5py.File(f"{w}/scN.h5")
assert np.max(np.abs(A["eigenvalues"][:] - B["eigenvalues"][:]) / np.abs(A["eigenvalues"][:])) < 1e-12
# each gathered vector lies in the span of the one-process vectors (rows in the input's order)
V, U = B["eigenvectors"][:], A["eigenvectors"][:]
res = V.T - U.T @ (U @ V.T)
assert np.max(np.linalg.norm(res, axis=0)) < 1e-6, np.linalg.norm(res, axis=0)
x, y = h5py.File(f"{w}/sv1.h5")["solution"][:], h5py.File(f"{w}/svN.h5")["solution"][:]
assert np.max(np.abs(x - y)) <= 1e-8 * np.max(np.abs(x)), np.max(np.abs(x - y))
print("METIS partition: eigenpairs and solutions in the input's order")
PY
fi
# Jacobi decided for the whole diagonal: blockdiag(L, 2L) has a constant diagonal on each
# block (4, then 8) but not as a whole; with contiguous ranges some ranks hold one block only.
# One process scales by D⁻¹; so must every rank (same iterations), not drop it for its share.
$PY - "$W/bd.mtx" <<'PY' || fail "writing blockdiag"
import sys, scipy.sparse as sp, scipy.io as sio
n = 24
t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], (n, n))
L = sp.kronsum(t, t)
sio.mmwrite(sys.argv[1], sp.block_diag([L, 2 * L]).tocoo(), symmetry="symmetric")
PY
"$T" solve "$W/bd.mtx" --rhs random:2 --device cpu --json > "$W/bd1.json" || fail "one process solve (blockdiag)"
run_mpi "$@" "$T" solve "$W/bd.mtx" --rhs random:2 --device cpu --partition contiguous --json > "$W/bdN.json" ||
  fail "solve blockdiag under mpirun"
$PY - "$W" <<'PY' || fail "Jacobi differs between one process and the ranks"
import sys, json
w = sys.argv[1]
a, b = json.load(open(f"{w}/bd1.json")), json.load(open(f"{w}/bdN.json"))
assert a["status"] == b["status"] == "converged"
assert abs(a["iterations"] - b["iterations"]) <= 1, (a["iterations"], b["iterations"])
print("Jacobi as one process:", a["iterations"], "and", b["iterations"], "iterations")
PY
# --precond chebyshev: the polynomial on the distributed fused step, the same degree and bounds
# (from the global probe), iterations and residuals as one process (an uneven 3-rank split too).
"$T" solve gen:lap3d:19 --rhs random:4 --device cpu --precond chebyshev --json > "$W/cp1.json" ||
  fail "one process solve --precond chebyshev"
run_mpi "$@" "$T" solve gen:lap3d:19 --rhs random:4 --device cpu --precond chebyshev --json > "$W/cpN.json" ||
  fail "solve --precond chebyshev under mpirun"
$PY - "$W" <<'PY' || fail "the polynomial differs between one process and the ranks"
import sys, json
w = sys.argv[1]
a, b = json.load(open(f"{w}/cp1.json")), json.load(open(f"{w}/cpN.json"))
assert a["status"] == b["status"] == "converged", (a["status"], b["status"])
poly = lambda d: d["message"].split(" on [")[0]
assert "chebyshev degree" in a["message"] and poly(a) == poly(b), (a["message"], b["message"])
assert a["iterations"] == b["iterations"], (a["iterations"], b["iterations"])
assert "distributed (interior" in b["message"], b["message"]
assert max(b["residual_norms"]) <= 1e-8, b["residual_norms"]
print("polynomial as one process:", poly(b), a["iterations"], "iterations")
PY
# A tiny, unevenly split matrix (64 rows: 32/32 on 2 ranks, 22/21/21 on 3): the polynomial's
# probe length must be the same on every rank (it followed each rank's rows and hung on 3 ranks).
timeout 120 "$MPI" -np "$NP" "$@" "$T" solve gen:lap3d:4 --rhs random:2 --device cpu --precond chebyshev --json > "$W/tiny.json" ||
  fail "tiny solve --precond chebyshev under mpirun (exit $?; 124 = hung)"
grep -q '"status": "converged"' "$W/tiny.json" || fail "tiny solve: $(head -c 300 "$W/tiny.json")"
run_mpi "$@" "$T" eigs gen:lap3d:8 --k 2 --partition bogus --device cpu 2> "$W/pe.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "--partition bogus: exit $rc (want 2)"
$PY "$(dirname "$0")/nonsymmetric_h5.py" "$W/ns.h5" || fail "writing the non-symmetric matrix"
run_mpi "$@" "$T" eigs "$W/ns.h5" --k 2 --device cpu 2> "$W/ns.txt" > /dev/null
rc=$?; [ $rc -eq 2 ] || fail "non-symmetric HDF5 under mpirun: exit $rc (want 2): $(head -3 "$W/ns.txt")"
grep -q "not symmetric" "$W/ns.txt" || fail "no clear message for the non-symmetric matrix: $(head -3 "$W/ns.txt")"
run_mpi "$@" "$T" eigs gen:lap3d:8 --k 2 --method lobpcg --device cpu 2> "$W/err.txt"
rc=$?; [ $rc -eq 2 ] || fail "--method lobpcg under mpirun: exit $rc (want 2)"
grep -q "not available under mpirun" "$W/err.txt" || fail "no clear message: $(cat "$W/err.txt")"
# batch over the ranks: job i on rank i mod N, every result written, a failing job fails alone,
# rank 0 prints the whole summary in the file's order, --resume skips what is done.
mkdir -p "$W/b"
cat > "$W/b/jobs.ini" <<'INI'
[defaults]
device = cpu
task = eigs
k = 3
which = largest
[job.a]
matrix = gen:lap2d:20
[job.b]
matrix = gen:lap2d:21
[job.bad]
matrix = no_such_matrix.mtx
[job.c]
task = solve
matrix = gen:lap2d:22
rhs = random:2
[job.d]
matrix = gen:lap2d:23
INI
(cd "$W/b" && run_mpi "$@" "$T" batch jobs.ini --json > out.json 2> err.txt)
rc=$?; [ $rc -eq 1 ] || fail "batch with a failing job: exit $rc (want 1): $(cat "$W/b/err.txt")"
$PY - "$W/b" "$NP" <<'PY' || fail "batch summary"
import sys, json, h5py
w, np_ = sys.argv[1], int(sys.argv[2])
d = json.load(open(f"{w}/out.json"))
names = [j["job"] for j in d["jobs"]]
assert names == ["a", "b", "bad", "c", "d"], names
st = {j["job"]: j["status"] for j in d["jobs"]}
assert st == {"a": "converged", "b": "converged", "bad": "failed", "c": "converged", "d": "converged"}, st
assert [j["rank"] for j in d["jobs"]] == [i % np_ for i in range(5)], d["jobs"]
for n in "abcd":
    assert h5py.File(f"{w}/{n}.h5").attrs["status"] == "converged"
assert h5py.File(f"{w}/bad.h5").attrs["status"] == "failed"
print("batch over", np_, "ranks: summary and results right")
PY
(cd "$W/b" && run_mpi "$@" "$T" batch jobs.ini --resume --json > again.json 2>/dev/null)
grep -q '"job": "a", "task": "eigs", "status": "skipped"' "$W/b/again.json" || fail "--resume did not skip: $(cat "$W/b/again.json")"
# A job that starts from another job's output runs after it, on its rank (dealt with it); the
# other jobs are dealt round robin (dealt i mod N, 'then' could start before 'first' wrote).
mkdir -p "$W/chain"
cat > "$W/chain/jobs.ini" <<'INI'
[defaults]
device = cpu
task = eigs
k = 3
which = largest
[job.first]
matrix = gen:lap2d:40
[job.free]
matrix = gen:lap2d:21
[job.then]
matrix = gen:lap2d:40
start = first.h5
[job.last]
matrix = gen:lap2d:22
INI
(cd "$W/chain" && run_mpi "$@" "$T" batch jobs.ini --json > out.json 2> err.txt)
rc=$?; [ $rc -eq 0 ] || fail "batch with a chained job: exit $rc: $(cat "$W/chain/err.txt")"
$PY - "$W/chain" "$NP" <<'PY' || fail "chained batch"
import sys, json
w, np_ = sys.argv[1], int(sys.argv[2])
d = json.load(open(f"{w}/out.json"))
rank = {j["job"]: j["rank"] for j in d["jobs"]}
assert all(j["status"] == "converged" for j in d["jobs"]), d["jobs"]
want = {"first": 0, "free": 1 % np_, "then": 0, "last": 2 % np_}
assert rank == want, (rank, want)
print("chained batch over", np_, "ranks: dealt with its input's job")
PY
ls -R "$W" | grep -q "\.tmp" && fail "temporary file left: $(ls -R "$W")"
echo "cli_mpi: np $NP passed"
