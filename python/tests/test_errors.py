"""Bad input gets a clear exception (what, which argument, which value), never a crash, a hang
or a silent wrong answer: the command line's messages, as ValueError / TypeError."""
import re

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve
from conftest import lap2d

A = lap2d(10)  # 100 × 100


def nonsym():
    a = A.tolil()
    a[0, 5] = 3.0
    return a.tocsr()


@pytest.mark.parametrize("call", [
    lambda m: tcsolve.eigsh(m, k=2),
    lambda m: tcsolve.lobpcg(m, np.ones((m.shape[0], 2))),
    lambda m: tcsolve.cg(m, np.ones(m.shape[0])),
], ids=["eigsh", "lobpcg", "cg"])
def test_non_square(call):
    with pytest.raises(ValueError, match=r"^A is 100x90, a square matrix is required$"):
        call(sp.random(100, 90, density=0.1, format="csr"))


@pytest.mark.parametrize("fn", ["eigsh", "cg"])
def test_non_symmetric(fn):
    msg = (r"^A is not symmetric \(max \|a_ij - a_ji\| / max \|a\| = 0\.75\): the eigensolvers and "
           r"block CG need a symmetric matrix$")
    with pytest.raises(ValueError, match=msg):
        tcsolve.eigsh(nonsym(), k=2) if fn == "eigsh" else tcsolve.cg(nonsym(), np.ones(100))


def test_non_symmetric_operator():
    op = sl.aslinearoperator(nonsym())
    with pytest.raises(ValueError, match="A is not symmetric"):
        tcsolve.eigsh(op, k=2)


def test_non_symmetric_dense_and_mass():
    with pytest.raises(ValueError, match="A is not symmetric"):
        tcsolve.eigsh(nonsym().toarray(), k=2)
    with pytest.raises(ValueError, match="M is not symmetric"):
        tcsolve.eigsh(A, k=2, M=nonsym())


@pytest.mark.parametrize("bad,kind", [(np.nan, "NaN"), (np.inf, "Inf"), (-np.inf, "Inf")])
def test_nonfinite_matrix(bad, kind):
    a = A.copy()
    a.data[a.indptr[7] + 1] = bad  # row 7
    col = a.indices[a.indptr[7] + 1]
    msg = rf"^A has a non-finite value \({kind}\) at row 7, column {col}: non-finite values are refused$"
    with pytest.raises(ValueError, match=msg):
        tcsolve.eigsh(a, k=2)
    with pytest.raises(ValueError, match=msg):
        tcsolve.cg(a, np.ones(100))
    d = A.toarray()
    d[3, 4] = bad
    with pytest.raises(ValueError, match=rf"A has a non-finite value \({kind}\) at row 3, column 4"):
        tcsolve.eigsh(d, k=2)


def test_nonfinite_rhs_and_start():
    b = np.ones((100, 2))
    b[9, 1] = np.nan
    with pytest.raises(ValueError, match=r"^b has a non-finite value \(NaN\) at row 9, column 1"):
        tcsolve.cg(A, b)
    v0 = np.ones(100)
    v0[4] = np.inf
    with pytest.raises(ValueError, match=r"^v0 has a non-finite value \(Inf\) at row 4"):
        tcsolve.eigsh(A, k=2, v0=v0)


@pytest.mark.parametrize("k", [100, 101, 1000])
def test_k_too_large(k):
    # As SciPy: TypeError for sparse A (dense A gets all n eigenvalues from eigh, with a warning).
    with pytest.raises(TypeError, match=rf"^k = {k} >= n = 100: .*scipy.linalg.eigh"):
        tcsolve.eigsh(A, k=k)
    with pytest.warns(RuntimeWarning, match="k >= N"):
        w = tcsolve.eigsh(A.toarray(), k=k, return_eigenvectors=False)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(A.toarray()), atol=1e-12)


@pytest.mark.parametrize("k", [0, -1])
def test_k_too_small(k):
    with pytest.raises(ValueError, match=rf"k={k}: must be at least 1"):
        tcsolve.eigsh(A, k=k)


def test_k_not_integer():
    with pytest.raises(TypeError, match="k=2.5: expected an integer"):
        tcsolve.eigsh(A, k=2.5)


@pytest.mark.parametrize("shape", [(99,), (101, 3), (50, 2)])
def test_wrong_rhs_length(shape):
    msg = rf"^b has length {shape[0]} but A has 100 rows \(expected shape \(100,\) or \(100, s\)\)$"
    with pytest.raises(ValueError, match=msg):
        tcsolve.cg(A, np.ones(shape))


def test_wrong_x0_and_v0():
    with pytest.raises(ValueError, match="x0 has length 99 but A has 100 rows"):
        tcsolve.cg(A, np.ones(100), x0=np.ones(99))
    with pytest.raises(ValueError, match=r"x0 has shape \(100, 2\) but b has shape \(100,\)"):
        tcsolve.cg(A, np.ones(100), x0=np.ones((100, 2)))
    with pytest.raises(ValueError, match="v0 has length 7 but A has 100 rows"):
        tcsolve.eigsh(A, k=2, v0=np.ones(7))
    with pytest.raises(ValueError, match="b: expected shape"):
        tcsolve.cg(A, np.ones((100, 2, 2)))


def test_mass_mismatch_and_not_positive():
    with pytest.raises(ValueError, match=r"^mass matrix M is 50 x 50 but A is 100 x 100$"):
        tcsolve.eigsh(A, k=2, M=sp.eye(50, format="csr"))
    m = sp.diags(np.r_[np.ones(10), -1.0, np.ones(89)], format="csr")
    with pytest.raises(ValueError, match=r"^mass matrix M is not positive definite \(m_ii = -1 at row 10\)$"):
        tcsolve.eigsh(A, k=2, M=m)
    with pytest.raises(ValueError, match=r"^mass matrix B is 50 x 50"):
        tcsolve.lobpcg(A, np.ones((100, 2)), B=sp.eye(50))


@pytest.mark.parametrize("bad", [np.ones((10, 10), dtype=complex), sp.eye(10, dtype=complex, format="csr")])
def test_complex_is_type_error(bad):
    with pytest.raises(TypeError, match="complex"):
        tcsolve.eigsh(bad, k=2)


@pytest.mark.parametrize("bad", ["matrix.mtx", None, 3.0, {"a": 1}, [["a", "b"], ["c", "d"]]])
def test_wrong_kind_is_type_error(bad):
    with pytest.raises(TypeError):
        tcsolve.eigsh(bad, k=1)


def test_one_d_and_empty_arrays():
    with pytest.raises(ValueError, match="A: expected a 2-D matrix, got shape"):
        tcsolve.eigsh(np.ones(10), k=1)
    with pytest.raises(ValueError, match="A is empty"):
        tcsolve.eigsh(np.ones((0, 0)), k=1)


@pytest.mark.parametrize("kw,msg", [
    ({"which": "XX"}, r"which='XX': expected 'LM', 'SM', 'LA', 'SA' or 'BE'"),
    ({"device": "gpu"}, r"device='gpu': expected auto, cpu or cuda"),
    ({"precision": "fp8"}, r"precision='fp8': expected auto, fp64, fp32, fp16 or bf16"),
    ({"method": "arpack"}, r"method='arpack': expected auto, lanczos, lobpcg, chebyshev or dense"),
    ({"conv": "loose"}, r"conv='loose': expected rel, norm or abs"),
    ({"tol": 2.0}, r"tol=2.0: expected 0 < tol < 1"),
    ({"maxiter": 0}, r"maxiter=0: must be at least 1"),
    ({"ncv": 3}, r"ncv=3: must be at least 5"),
    ({"ncv": 500}, r"ncv=500: must be at most n = 100"),
    ({"block_size": 0}, r"block_size=0: must be at least 1"),
    ({"precision": "fp16", "device": "cpu"}, r"precision='fp16' needs the GPU"),
    ({"sigma": np.nan}, r"sigma=nan: expected a finite number"),
])
def test_bad_options(kw, msg):
    with pytest.raises(ValueError, match=msg):
        tcsolve.eigsh(A, k=4, **kw)


def test_scipy_argument_rules_raise_as_scipy():
    # The combinations SciPy's eigsh refuses, refused with its exception type.
    with pytest.raises(ValueError, match="OPinv should not be specified with sigma = None"):
        tcsolve.eigsh(A, k=2, OPinv=sl.aslinearoperator(A))
    with pytest.raises(ValueError, match="Minv should not be specified with M = None"):
        tcsolve.eigsh(A, k=2, Minv=sl.aslinearoperator(A))
    with pytest.raises(ValueError, match="Minv should not be specified when sigma is"):
        tcsolve.eigsh(A, k=2, M=sp.identity(100, format="csr"), sigma=1.0, Minv=sl.aslinearoperator(A))
    with pytest.raises(ValueError, match="unrecognized mode 'xyz'"):
        tcsolve.eigsh(A, k=2, sigma=1.0, mode="xyz")
    with pytest.raises(ValueError, match="sigma=0"):
        tcsolve.eigsh(A, k=2, sigma=0.0, mode="buckling")
    with pytest.raises(TypeError, match="callback"):
        tcsolve.cg(A, np.ones(100), callback=3)


def test_cuda_without_cuda_build():
    if tcsolve.built_with_cuda() and tcsolve.device_count() > 0:
        pytest.skip("this build has a usable GPU")
    with pytest.raises((NotImplementedError, RuntimeError, ValueError), match="CUDA|GPU|device"):
        tcsolve.eigsh(A, k=2, device="cuda")


def test_operator_on_cuda_is_refused():
    with pytest.raises(ValueError, match="a LinearOperator runs on the CPU backend"):
        tcsolve.eigsh(sl.aslinearoperator(A), k=2, device="cuda")


def test_cupy_rhs_with_host_matrix():
    class FakeDevice:  # an object with __cuda_array_interface__ (as a CuPy array has)
        __cuda_array_interface__ = {"shape": (100,), "typestr": "<f8", "data": (0, False), "version": 3}
    with pytest.raises(TypeError, match="b is a GPU array but A is on the host"):
        tcsolve.cg(A, FakeDevice())


# A corrupted index array is refused before SciPy's C routines read through it (they crashed the
# interpreter: a segmentation fault for a bad indptr, "double free or corruption" for a bad index).
# Each case runs in a child interpreter, so that a regression fails this test instead of killing
# the whole run. The caller's matrix is left as it was.
@pytest.mark.parametrize("fmt,edit,call,msg", [
    ("csr", "B.indptr[5] = 10**6", "tcsolve.eigsh(B, k=2)",
     r"indptr\[6\] = \d+ is less than indptr\[5\] = 1000000"),
    ("csr", "B.indptr[-1] = 10**6", "tcsolve.eigsh(B, k=2)", r"indptr\[100\] = 1000000 exceeds the 298 stored"),
    ("csr", "B.indices[7] = 100", "tcsolve.cg(B, np.ones(100))", r"indices\[7\] = 100 is out of range \[0, 100\)"),
    ("csr", "B.indices[7] = -3", "tcsolve.lobpcg(B, np.ones((100, 2)))", r"indices\[7\] = -3 is out of range"),
    ("csc", "B.indices[0] = 1000", "tcsolve.eigsh(B, k=2)", r"csc_matrix\): indices\[0\] = 1000"),
    ("coo", "B.row[3] = 100", "tcsolve.eigsh(B, k=2)", r"row\[3\] = 100 is out of range"),
    ("csr", "B.indptr[0] = 1", "tcsolve.eigsh(B, k=2, M=sp.identity(100, format='csr'))",
     r"indptr\[0\] = 1, expected 0"),
])
def test_corrupted_scipy_structure_is_refused_without_a_crash(fmt, edit, call, msg):
    import subprocess
    import sys
    code = f"""
import numpy as np, scipy.sparse as sp, tcsolve
B = sp.diags([-1., 2, -1], [-1, 0, 1], (100, 100)).asformat("{fmt}")
{edit}
saved = [np.array(x, copy=True) for x in (getattr(B, "indptr", None), getattr(B, "indices", None), B.data)
         if x is not None]
try:
    {call}
except ValueError as e:
    print("ValueError:", e)
after = [np.array(x, copy=True) for x in (getattr(B, "indptr", None), getattr(B, "indices", None), B.data)
         if x is not None]
print("unchanged" if all(np.array_equal(a, b) for a, b in zip(saved, after)) else "CHANGED")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
    assert r.stdout.startswith("ValueError: A (scipy.sparse"), r.stdout + r.stderr
    assert re.search(msg, r.stdout), r.stdout
    assert r.stdout.rstrip().endswith("unchanged"), r.stdout


# Integer and real arguments out of what they can be (issue 47): named, with the value, as
# ValueError (out of range) or TypeError (not a number of that kind); pybind11's "Unable to cast
# Python instance to C++ type" never reaches the caller.
BIG = 10**30
RANGE_CASES = [
    ("eigsh", {"maxiter": BIG}, ValueError, rf"^maxiter={BIG}: must be at most 9223372036854775807$"),
    ("eigsh", {"seed": -1}, ValueError, r"^seed=-1: must be at least 0$"),
    ("eigsh", {"seed": 2**70}, ValueError, rf"^seed={2**70}: must be at most 18446744073709551615$"),
    ("eigsh", {"seed": 1.5}, TypeError, r"^seed=1.5: expected an integer$"),
    ("eigsh", {"maxiter": True}, TypeError, r"^maxiter=True: expected an integer$"),
    ("eigsh", {"block_size": BIG}, ValueError, rf"^block_size={BIG}: must be at most 9223372036854775807$"),
    ("eigsh", {"ncv": 7.0}, TypeError, r"^ncv=7.0: expected an integer$"),
    ("eigsh", {"sigma": "x"}, TypeError, r"^sigma='x': expected a real number$"),
    ("eigsh", {"sigma": 1j}, TypeError, r"^sigma=1j: expected a real number$"),
    ("eigsh", {"tol": "x"}, TypeError, r"^tol='x': expected a real number$"),
    ("eigsh", {"tol": np.nan}, ValueError, r"^tol=nan: expected a number, not NaN$"),
    ("lobpcg", {"maxiter": BIG}, ValueError, rf"^maxiter={BIG}: must be at most 9223372036854775807$"),
    ("lobpcg", {"seed": -1}, ValueError, r"^seed=-1: must be at least 0$"),
    ("lobpcg", {"seed": 2**70}, ValueError, rf"^seed={2**70}: must be at most"),
    ("lobpcg", {"verbosityLevel": 1.5}, TypeError, r"^verbosityLevel=1.5: expected an integer$"),
    ("lobpcg", {"restartControl": "x"}, TypeError, r"^restartControl='x': expected an integer$"),
    ("lobpcg", {"tol": "x"}, TypeError, r"^tol='x': expected a real number$"),
    ("lobpcg", {"block_size": -2}, ValueError, r"^block_size=-2: must be at least 1$"),
    ("cg", {"maxiter": BIG}, ValueError, rf"^maxiter={BIG}: must be at most 9223372036854775807$"),
    ("cg", {"seed": -1}, ValueError, r"^seed=-1: must be at least 0$"),
    ("cg", {"block_size": 0}, ValueError, r"^block_size=0: must be at least 1$"),
    ("cg", {"rtol": "x"}, TypeError, r"^rtol='x': expected a real number$"),
    ("cg", {"atol": "x"}, TypeError, r"^atol='x': expected a real number$"),
    ("cg", {"atol": -1.0}, ValueError, r"^atol=-1.0: expected a non-negative number$"),
    ("cg", {"rtol": -1e-3}, ValueError, r"^rtol=-0.001: expected a non-negative number$"),
    ("cg", {"rtol": np.nan}, ValueError, r"^rtol=nan: expected a number, not NaN$"),
    ("cg", {"x0": "Ab"}, ValueError, r"^x0='Ab': expected an array or 'Mb'"),
]


@pytest.mark.parametrize("fn,kw,exc,msg", RANGE_CASES,
                         ids=[f"{c[0]}-{next(iter(c[1]))}={next(iter(c[1].values()))!r}"[:40] for c in RANGE_CASES])
def test_integer_and_real_arguments_are_range_checked(fn, kw, exc, msg):
    call = {"eigsh": lambda: tcsolve.eigsh(A, k=2, which="LA", **kw),
            "lobpcg": lambda: tcsolve.lobpcg(A, np.random.default_rng(0).standard_normal((100, 2)), **kw),
            "cg": lambda: tcsolve.cg(A, np.ones(100), **kw)}[fn]
    with pytest.raises(exc, match=msg):
        call()


def test_numpy_integers_and_the_largest_values_are_accepted():
    w = tcsolve.eigsh(A, k=2, which="LA", maxiter=np.int64(1000), seed=np.uint64(2**64 - 1),
                      return_eigenvectors=False)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(A.toarray())[-2:], rtol=1e-8)
    x, info = tcsolve.cg(A, np.ones(100), maxiter=2**63 - 1, seed=0)
    assert info == 0


def test_the_extension_names_an_option_it_cannot_hold():
    # The backstop behind the package's checks: the C++ side names the option and the value.
    from tcsolve import _tcsolve
    a = A.tocsr()
    args = (100, a.indptr.astype(np.int64), a.indices.astype(np.int32), a.data, None, None)
    with pytest.raises(ValueError, match=rf"^max_iterations={BIG}: expected an integer in \[-2\*\*63, 2\*\*63\)$"):
        _tcsolve.eigs_csr(*args, {"k": 2, "max_iterations": BIG})
    with pytest.raises(ValueError, match=r"^seed=-1: expected an integer in \[0, 2\*\*64\)$"):
        _tcsolve.eigs_csr(*args, {"k": 2, "seed": -1})
    with pytest.raises(ValueError, match=r"^tol='x': expected a number$"):
        _tcsolve.eigs_csr(*args, {"k": 2, "tol": "x"})
