"""tcsolve.cg (block CG) against scipy.sparse.linalg.cg: one and many right-hand sides, x0,
SciPy's (x, info) convention, residuals recomputed in NumPy."""
import time

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve
from conftest import lap1d, lap2d, scipy_cg, suitesparse


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


# ---- issue 47: blocks as wide as A, dependent columns, columns of any scale, tol below the floor

def test_inverse_of_a_small_spd_matrix():
    # cg(A, I), the usual way to get A⁻¹ of a small SPD matrix: a block as wide as A exhausts the
    # space in one iteration (it used to go on with the rounding noise: residuals of 1e55).
    a = lap1d(50)
    x, info, res = tcsolve.cg(a, np.eye(50), rtol=1e-10, return_info=True)
    assert info == 0 and res.status == "converged"
    assert np.all(rel_residuals(a, x, np.eye(50)) <= 1e-10)
    inv = np.linalg.inv(a.toarray())
    np.testing.assert_allclose(x, inv, rtol=0, atol=1e-8 * np.abs(inv).max())
    assert res.iterations <= 3


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_block_as_wide_as_the_matrix(extra):
    # s = n - 1 (took n + 3 iterations), s = n (not_converged, residuals 7.6e72), s = n + 1.
    a = lap2d(10)
    b = np.random.default_rng(47).standard_normal((100, 100 + extra))
    x, info, res = tcsolve.cg(a, b, rtol=1e-9, return_info=True)
    assert info == 0
    assert np.all(rel_residuals(a, x, b) <= 1e-9)
    assert res.iterations <= 6


def test_many_more_right_hand_sides_than_rows():
    # s = 50·n: chunks of at most n columns (the s × s dense work grew as s³: 43 minutes and 2.8 GB
    # for 5000 columns). Identical columns (rank 1) and random ones.
    a = lap2d(10)
    for b in (np.ones((100, 5000)), np.random.default_rng(48).standard_normal((100, 5000))):
        t0 = time.perf_counter()
        x, info = tcsolve.cg(a, b, rtol=1e-8)
        elapsed = time.perf_counter() - t0
        assert info == 0
        assert np.all(rel_residuals(a, x, b) <= 1e-8)
        assert elapsed < 60, elapsed


def test_dependent_columns_are_deflated():
    a = lap2d(20)
    base = np.random.default_rng(49).standard_normal((400, 3))
    b = np.column_stack([base, base[:, 0], np.zeros(400), base[:, 1] - 2 * base[:, 2], 3 * base[:, 2]])
    x, info, res = tcsolve.cg(a, b, rtol=1e-10, return_info=True)
    _, _, alone = tcsolve.cg(a, base, rtol=1e-10, return_info=True)
    assert info == 0
    nz = np.linalg.norm(b, axis=0) > 0
    assert np.all(rel_residuals(a, x[:, nz], b[:, nz]) <= 1e-10) and not x[:, ~nz].any()
    assert res.iterations <= alone.iterations + 2


@pytest.mark.filterwarnings("ignore:overflow encountered")  # (NumPy's norm of the 1e200 column)
def test_columns_of_any_scale_converge_alike():
    # One column scaled by 1e200 and one by 1e-150: the solve scales columns internally (by powers
    # of two), so they converge like the others (a Gram entry of 1e400 overflowed before). (Not
    # 1e-200: the front end's NumPy norm of such a column underflows to 0, and it is solved as a
    # zero column.)
    a = lap2d(30)
    b = np.random.default_rng(50).standard_normal((900, 3))
    scale = np.array([1.0, 1e200, 1e-150])
    b2 = b * scale
    x, info, r = tcsolve.cg(a, b, rtol=1e-10, M="none", return_info=True)
    x2, info2, r2 = tcsolve.cg(a, b2, rtol=1e-10, M="none", return_info=True)
    assert info == info2 == 0 and r2.iterations == r.iterations
    np.testing.assert_allclose(x2 / scale, x, rtol=0, atol=1e-12 * np.abs(x).max())


def test_tolerance_below_the_floor_ends_at_the_floor():
    # rtol 1e-300: not attainable in fp64; the solve ends at the rounding floor, not_converged, and
    # says so (it used to report a breakdown: "A is not positive definite").
    a = lap2d(20)
    b = np.random.default_rng(51).standard_normal((400, 4))
    x, info, res = tcsolve.cg(a, b, rtol=1e-300, return_info=True)
    assert info > 0 and res.status == "not_converged"
    assert "rounding floor" in res.reason and "below what fp64 can attain" in res.reason, res.reason
    assert np.all(rel_residuals(a, x, b) <= 1e-13)
