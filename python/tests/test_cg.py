"""tcsolve.cg (block CG) against scipy.sparse.linalg.cg: one and many right-hand sides, x0,
SciPy's (x, info) convention, residuals recomputed in NumPy."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve
from conftest import lap2d, scipy_cg, suitesparse


def rel_residuals(a, x, b):
    x2, b2 = x.reshape(len(b), -1), b.reshape(len(b), -1)
    return np.linalg.norm(b2 - a @ x2, axis=0) / np.linalg.norm(b2, axis=0)


@pytest.mark.parametrize("name", ["lap2d_40", "bcsstk05", "nos5", "Trefethen_2000"])
def test_single_rhs_matches_scipy(name):
    a = lap2d(40) if name == "lap2d_40" else suitesparse(name)
    b = np.random.default_rng(1).standard_normal(a.shape[0])
    x, info = tcsolve.cg(a, b, rtol=1e-10, maxiter=20000)
    assert info == 0 and x.shape == b.shape
    assert rel_residuals(a, x, b)[0] <= 1e-10
    xs, info_s = scipy_cg(a, b, 1e-12, maxiter=100000)
    cond_bound = 1e-8  # both solutions to their tolerances: ‖x − x_s‖/‖x‖ ≲ κ·tol
    if name == "lap2d_40":
        np.testing.assert_allclose(x, xs, rtol=0, atol=cond_bound * np.linalg.norm(x))


def test_block_rhs():
    a = lap2d(50)
    b = np.random.default_rng(2).standard_normal((2500, 7))
    x, info, res = tcsolve.cg(a, b, rtol=1e-9, return_info=True)
    assert info == 0 and x.shape == (2500, 7)
    r = rel_residuals(a, x, b)
    assert np.all(r <= 1e-9)
    np.testing.assert_allclose(r, res.residual_norms, rtol=1e-5, atol=1e-15)
    assert res.task == "solve" and res.method == "block_cg" and res.right_hand_sides == 7
    assert res.column_iterations.shape == (7,) and res.solution.shape == (2500, 7)
    for j in (0, 6):
        xs, _ = scipy_cg(a, b[:, j], 1e-12)
        np.testing.assert_allclose(x[:, j], xs, atol=1e-7 * np.linalg.norm(xs))


def test_block_size_groups_columns():
    a = lap2d(30)
    b = np.random.default_rng(3).standard_normal((900, 5))
    x, info, res = tcsolve.cg(a, b, rtol=1e-10, block_size=2, return_info=True)
    assert info == 0 and np.all(rel_residuals(a, x, b) <= 1e-10)
    assert len(res.residual_norms) == 5


def test_x0_is_used_and_not_modified():
    a = lap2d(30)
    b = np.random.default_rng(4).standard_normal(900)
    exact = sl.spsolve(a.tocsc(), b)
    x0 = exact + 1e-6
    x0_copy = x0.copy()
    x, info, res = tcsolve.cg(a, b, x0=x0, rtol=1e-9, return_info=True)
    assert info == 0 and np.array_equal(x0, x0_copy)
    _, _, cold = tcsolve.cg(a, b, rtol=1e-9, return_info=True)
    assert res.iterations < cold.iterations


def test_zero_rhs_column_gives_zero():
    a = lap2d(20)
    b = np.zeros((400, 3))
    b[:, 1] = 1.0
    x, info = tcsolve.cg(a, b, rtol=1e-10)
    assert info == 0 and np.all(x[:, 0] == 0) and np.all(x[:, 2] == 0)
    assert rel_residuals(a, x[:, 1], b[:, 1])[0] <= 1e-10
    x, info = tcsolve.cg(a, np.zeros(400))
    assert info == 0 and not x.any()


def test_not_converged_returns_info():
    a = lap2d(60)
    b = np.ones(3600)
    x, info, res = tcsolve.cg(a, b, rtol=1e-12, maxiter=3, return_info=True)
    assert info > 0 and res.status == "not_converged"
    assert x.shape == b.shape and np.isfinite(x).all()


def test_atol_and_old_tol_name():
    a = lap2d(20)
    b = np.ones(400)
    x, info = tcsolve.cg(a, b, tol=1e-9)
    assert info == 0 and rel_residuals(a, x, b)[0] <= 1e-9
    # SciPy's test: ‖r‖ ≤ max(rtol·‖b‖, atol) -- atol loosens a strict rtol
    _, info, strict = tcsolve.cg(a, b, rtol=1e-12, return_info=True)
    x, info, loose = tcsolve.cg(a, b, rtol=1e-12, atol=1e-3, return_info=True)
    assert info == 0 and np.linalg.norm(b - a @ x) <= 1e-3
    assert loose.iterations < strict.iterations


def test_indefinite_matrix_is_refused():
    a = (lap2d(20) - 3.0 * sp.eye(400)).tocsr()  # diagonal 1 > 0, but indefinite
    with pytest.raises(ValueError, match="not positive definite"):
        tcsolve.cg(a, np.ones(400), rtol=1e-10)
    a = lap2d(10).tolil()
    a[3, 3] = -1.0
    with pytest.raises(ValueError, match=r"A is not positive definite \(a_ii = -1 at row 3\)"):
        tcsolve.cg(a.tocsr(), np.ones(100))


def test_default_preconditioner_is_auto_and_says_why():
    # M=None is M='auto' (the command line's rule): on the CPU always Jacobi, with the reason.
    a = lap2d(30)
    b = np.random.default_rng(23).standard_normal((a.shape[0], 2))
    for m in (None, "auto"):
        x, info, r = tcsolve.cg(a, b, rtol=1e-10, M=m, device="cpu", return_info=True)
        assert info == 0
        assert r.preconditioner == "jacobi (auto: not the Chebyshev polynomial, for the CPU)", r.preconditioner
    x, info, r = tcsolve.cg(a, b, rtol=1e-10, M="jacobi", device="cpu", return_info=True)
    assert r.preconditioner == "jacobi"
    with pytest.raises(ValueError, match="M='automatic'"):
        tcsolve.cg(a, b, M="automatic")


def test_chebyshev_polynomial_preconditioner():
    # M='chebyshev': a Chebyshev polynomial in A (degree from Lanczos bounds); the same answer in
    # fewer iterations, its products with A counted in operator_applies.
    a = lap2d(60)
    b = np.random.default_rng(21).standard_normal((a.shape[0], 4))
    x0, info0, r0 = tcsolve.cg(a, b, rtol=1e-10, M="jacobi", return_info=True)
    x1, info1, r1 = tcsolve.cg(a, b, rtol=1e-10, M="chebyshev", return_info=True)
    assert info0 == info1 == 0
    assert r1.preconditioner.startswith("chebyshev degree ")
    assert 2 * r1.iterations < r0.iterations
    assert r1.operator_applies > r0.operator_applies
    res = np.linalg.norm(b - a @ x1, axis=0) / np.linalg.norm(b, axis=0)
    assert np.all(res <= 1e-10)
    np.testing.assert_allclose(x1, x0, rtol=0, atol=1e-7 * np.abs(x0).max())
    with pytest.raises(ValueError, match="M='chebyshev' needs A as a matrix"):
        tcsolve.cg(sl.aslinearoperator(a), b[:, 0], M="chebyshev")
