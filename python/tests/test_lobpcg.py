"""tcsolve.lobpcg against scipy.sparse.linalg (lobpcg's conventions: k = X.shape[1], B is the
mass matrix, M a preconditioner, largest=True returns descending eigenvalues)."""
import numpy as np
import pytest
import scipy.sparse.linalg as sl

import tcsolve
from conftest import lap2d, residuals, suitesparse


def start_block(n, k, seed=0):
    return np.random.default_rng(seed).standard_normal((n, k))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("name", ["lap2d_30", "nos5", "662_bus"])
def test_matches_scipy(name, largest):
    a = lap2d(30) if name == "lap2d_30" else suitesparse(name)
    n = a.shape[0]
    w, v, info = tcsolve.lobpcg(a, start_block(n, 4), largest=largest, return_info=True)
    which = "LA" if largest else "SA"
    ref = sl.eigsh(a, k=4, which=which, return_eigenvectors=False)
    ref = np.sort(ref)[::-1] if largest else np.sort(ref)
    scale = float(np.abs(sl.eigsh(a, k=1, return_eigenvectors=False)).max())
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-10 * scale)
    # ordering as SciPy's lobpcg: descending for largest, ascending otherwise
    assert np.all(np.diff(w) <= 0) if largest else np.all(np.diff(w) >= 0)
    r = residuals(a, w, v)
    assert np.all(r <= np.asarray(info.residual_bounds) * (1 + 1e-6) + 1e-14 * scale)
    assert info.method == "lobpcg"


def test_generalized_with_B():
    k, m = suitesparse("bcsstk22"), suitesparse("bcsstm22")
    x = start_block(k.shape[0], 3)
    w, v, info = tcsolve.lobpcg(k, x, B=m, largest=False, maxiter=3000, return_info=True)
    ref = np.sort(sl.eigsh(k, k=3, M=m, sigma=0, return_eigenvectors=False))
    scale = float(sl.eigsh(k, k=1, M=m, return_eigenvectors=False)[0])
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-10 * scale)
    r = residuals(k, w, v, m)
    assert np.all(r <= np.asarray(info.residual_bounds) * (1 + 1e-6))
    np.testing.assert_allclose(v.T @ (m @ v), np.eye(3), atol=1e-8)


@pytest.mark.xfail(reason="solvers/eigs.cpp: with conv='abs' the inner Lanczos/LOBPCG stop on their own "
                          "(norm-scaled) test, and the driver's true-residual check then reports "
                          "not_converged (residuals 5e-7..9e-7 for tol 1e-7 on lap2d(30))", strict=False)
def test_tol_is_absolute_as_scipy():
    a = lap2d(30)
    w, v, info = tcsolve.lobpcg(a, start_block(900, 3), tol=1e-7, return_info=True)
    assert info.tolerance == 1e-7
    r = residuals(a, w, v)
    assert np.all(r <= np.asarray(info.residual_bounds) * (1 + 1e-6))
    if info.convergence_test == "abs":  # the eigs() driver: SciPy's ‖A·x − λ·x‖ ≤ tol
        assert np.all(r <= 1e-7 * (1 + 1e-6))


def test_preconditioner_operator_and_residual_history():
    a = lap2d(30)
    n = a.shape[0]
    d = a.diagonal()
    precond = sl.LinearOperator((n, n), matvec=lambda x: x / d, matmat=lambda x: x / d[:, None], dtype=float)
    w, v, hist, info = tcsolve.lobpcg(a, start_block(n, 3), M=precond, largest=False,
                                      retResidualNormsHistory=True, return_info=True)
    ref = np.sort(sl.eigsh(a, k=3, which="SA", return_eigenvectors=False))
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-10 * 8)
    assert info.preconditioner == "operator"
    assert len(hist) == len(info.history) and all(isinstance(h, np.ndarray) for h in hist)


def test_start_block_shape_errors():
    a = lap2d(10)
    with pytest.raises(ValueError, match="X has length 99 but A has 100 rows"):
        tcsolve.lobpcg(a, np.ones((99, 2)))
    with pytest.warns(UserWarning, match="too small relative to the block size"):
        w, v = tcsolve.lobpcg(a, np.ones((100, 100)), largest=False)  # SciPy: dense eigh
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.toarray()), atol=1e-12)
    with pytest.raises(ValueError, match="Y is rank deficient"):
        tcsolve.lobpcg(a, np.ones((100, 2)), Y=np.ones((100, 2)))


def test_not_converged_warns_and_returns_as_scipy():
    # SciPy's lobpcg warns ("Exited at iteration") and returns; the Result says not_converged.
    a = lap2d(50)
    with pytest.warns(UserWarning, match=r"(?s)Exited at iteration 2 .*not_converged"):
        w, v, r = tcsolve.lobpcg(a, start_block(2500, 4), largest=False, maxiter=2, M="none",
                                 return_info=True)
    assert r.status == "not_converged" and w.shape == (4,) and v.shape == (2500, 4)
    assert np.any(r.residual_norms > r.residual_bounds)
