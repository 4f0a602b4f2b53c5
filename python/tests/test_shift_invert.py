"""Shift-invert through the eigs() driver (SciPy's sigma, which='SM', and which='SA' on matrices
whose small end plain Lanczos reaches slowly): against scipy.sparse.linalg.eigsh with sigma,
eigenvalues to 1e-10 RELATIVE to each |λ| (shift-invert resolves the small end far better than
1e-10·‖A‖), residuals recomputed in NumPy, the count certified by the factorization's inertia."""
import numpy as np
import pytest
import scipy.sparse.linalg as sl

import tcsolve
from conftest import lap2d, residuals, rounding, suitesparse


@pytest.fixture(scope="module", autouse=True)
def factorization_available():
    """Shift-invert needs CHOLMOD/MUMPS (factor/); a build without them says NotImplementedError."""
    try:
        tcsolve.eigsh(lap2d(10), k=2, sigma=0.5, method="lanczos")
    except (NotImplementedError, ValueError) as e:
        if "CHOLMOD" not in str(e) and "not compiled" not in str(e).lower() and "built without" not in str(e):
            raise
        pytest.skip(f"this build has no sparse factorization: {e}")


def check(a, w, v, info, ref, m=None):
    np.testing.assert_array_less(np.abs(w - ref), 1e-10 * np.abs(ref), err_msg=f"{w} vs SciPy {ref}")
    r = residuals(a, w, v, m)
    assert np.all(r <= np.asarray(info.residual_bounds) * (1 + 1e-6)), (r, info.residual_bounds)
    assert np.all(np.abs(r - info.residual_norms) <= 1e-6 * r + rounding(a, w, v, m)), (r, info.residual_norms)


@pytest.mark.parametrize("name,kw", [
    ("bcsstk06", {"sigma": 0.0}),
    ("bcsstk08", {"which": "SA"}),     # 2000 Lanczos restarts were not enough without the transform
    ("1138_bus", {"which": "SA"}),
    ("1138_bus", {"sigma": 1.0}),      # interior: the eigenvalues nearest 1
    ("662_bus", {"sigma": 100.0}),
    ("bcsstk08", {"which": "SM"}),
])
def test_matches_scipy_shift_invert(name, kw):
    a = suitesparse(name)
    w, v, info = tcsolve.eigsh(a, k=6, return_info=True, **kw)
    sigma = kw.get("sigma", 0.0)
    ref = np.sort(sl.eigsh(a, k=6, sigma=sigma, return_eigenvectors=False))
    check(a, w, v, info, ref)
    assert info.status == "converged"
    if info.method != "dense":
        assert info.transform == "shift-invert"
    assert info.certified in ("yes", "not_checked")


def test_generalized_shift_invert():
    k, m = suitesparse("bcsstk09"), suitesparse("bcsstm09")
    w, v, info = tcsolve.eigsh(k, k=4, M=m, sigma=0.0, return_info=True)
    ref = np.sort(sl.eigsh(k, k=4, M=m, sigma=0.0, return_eigenvectors=False))
    check(k, w, v, info, ref, m)
    np.testing.assert_allclose(v.T @ (m @ v), np.eye(4), atol=1e-8)


def test_sigma_on_a_generated_matrix_interior():
    a = lap2d(40)
    w, v, info = tcsolve.eigsh(a, k=5, sigma=4.1, return_info=True)
    ref = np.sort(sl.eigsh(a, k=5, sigma=4.1, return_eigenvectors=False))
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-10 * 8)
    assert info.sigma == 4.1


def test_sigma_on_an_eigenvalue_is_refused():
    # 4 is an eigenvalue of lap2d(40) (40 times): A - 4I is singular, the driver says so
    with pytest.raises(ValueError, match="singular at sigma = 4"):
        tcsolve.eigsh(lap2d(40), k=5, sigma=4.0)


def _openblas():
    """The OpenBLAS the process has loaded (NumPy's and the engines'), or None."""
    import ctypes
    with open("/proc/self/maps") as f:
        paths = sorted({w for line in f for w in line.split() if w.startswith("/") and "libopenblas" in w})
    for p in paths:
        lib = ctypes.CDLL(p)
        if hasattr(lib, "openblas_get_num_threads") and hasattr(lib, "openblas_set_num_threads"):
            return lib
    return None


def test_engines_leave_the_callers_blas_threads():
    """The factorization engines cap OpenBLAS's pool (min(4, cores)) while they run; afterwards the
    caller's own count is back (NumPy shares that pool). 1 here: the cap would make it 2 or more."""
    import os
    if any(v in os.environ for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "TCSOLVE_FACTOR_THREADS")):
        pytest.skip("the thread counts are set in the environment: the engines leave them alone")
    if os.cpu_count() < 2:
        pytest.skip("one CPU: the cap is 1, as the caller's")
    lib = _openblas()
    if lib is None:
        pytest.skip("no OpenBLAS loaded")
    before = lib.openblas_get_num_threads()
    try:
        lib.openblas_set_num_threads(1)
        a = lap2d(30)
        w, _, info = tcsolve.eigsh(a, k=4, which="SA", certify=True, device="cpu", return_info=True)
        assert info.certified == "yes" or info.verification == "certificate"
        assert lib.openblas_get_num_threads() == 1
        x, _ = tcsolve.cg(a, np.ones(a.shape[0]), rtol=1e-8, device="cpu")
        assert lib.openblas_get_num_threads() == 1
    finally:
        lib.openblas_set_num_threads(before)
