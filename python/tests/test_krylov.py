"""tcsolve.minres / gmres / spsolve / lsqr / lsmr against scipy.sparse.linalg in the same process:
generated matrices (a shifted Laplacian: symmetric indefinite; convection-diffusion: unsymmetric;
random rectangular ones) and the files of ../shared/matrices/general (skipped when absent).

Tolerances from the condition: for square A, ‖x − x*‖ ≤ ‖r‖/σ_min(A), so two answers x, y agree
to (‖r_x‖ + ‖r_y‖)/σ_min, σ_min computed densely for these small matrices (agree()); least
squares add Wedin's κ²·‖r‖/(‖A‖‖x‖) term. Every info = 0 is checked against the residual
recomputed here (honest())."""
import os
import pathlib
import warnings

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve
from conftest import SOURCE_DIR, lap1d, lap2d

GENERAL = pathlib.Path(os.environ.get("TCSOLVE_GENERAL_MATRICES",
                                      SOURCE_DIR.parent / "shared" / "matrices" / "general"))
EPS = np.finfo(float).eps


def read_rua(path):
    """A Harwell-Boeing real unsymmetric assembled file (.rua) as CSC. SciPy's hb_read refuses the
    shared files' value formats ((1P3D24.15), (4D20.12)), so the fixed-width fields are cut here:
    header lines 3-4 give the sizes and the Fortran formats (nIw / [kP]nDw.d / nEw.d)."""
    import re
    lines = pathlib.Path(path).read_text().splitlines()
    ptr_lines, ind_lines, val_lines = (int(v) for v in lines[1].split()[1:4])
    m, n, nnz = (int(v) for v in lines[2].split()[1:4])
    formats = re.findall(r"\(([^)]*)\)", lines[3])
    start = 4 + (1 if len(lines[1].split()) > 4 and int(lines[1].split()[4]) > 0 else 0)

    def fields(fmt, first, count, kind):
        per, width = (int(v) for v in re.match(r"(?:\d+P)?(\d+)[IDEF](\d+)", fmt.replace(",", "")).groups())
        out = []
        for line in lines[first:first + count]:
            out += [line[k:k + width] for k in range(0, min(len(line), per * width), width) if line[k:k + width].strip()]
        return [kind(v.replace("D", "E").replace("d", "e")) for v in out]

    ptr = fields(formats[0], start, ptr_lines, int)
    ind = fields(formats[1], start + ptr_lines, ind_lines, int)
    val = fields(formats[2], start + ptr_lines + ind_lines, val_lines, float)
    assert len(ptr) == n + 1 and len(ind) == nnz == len(val), path
    return sp.csc_matrix((val, np.array(ind) - 1, np.array(ptr) - 1), shape=(m, n))


def general(name):
    """A matrix of ../shared/matrices/general as float64 CSR (.mtx by mmread, .rua by read_rua),
    or skip when the file is absent."""
    for ext, read in ((".mtx", sio.mmread), (".rua", read_rua)):
        path = GENERAL / f"{name}{ext}"
        if path.exists():
            return sp.csr_matrix(read(str(path))).astype(np.float64)
    pytest.skip(f"{GENERAL}/{name}.mtx|.rua is absent (../shared/matrices not available)")


def shifted_laplacian(nx, sigma):
    """lap2d(nx) − σI: symmetric, indefinite for σ inside (λ_min, λ_max)."""
    return sp.csr_matrix(lap2d(nx) - sigma * sp.identity(nx * nx))


def convection_diffusion(nx, peclet):
    """−Δu + p·∂u/∂x (central differences, 5 points, Dirichlet): unsymmetric for p ≠ 0."""
    t = lap1d(nx) + (peclet / 2) * sp.diags([-np.ones(nx - 1), np.ones(nx - 1)], [-1, 1])
    return sp.csr_matrix(sp.kron(sp.identity(nx), t) + sp.kron(lap1d(nx), sp.identity(nx)))


def cond2(a):
    s = np.linalg.svd(a.toarray(), compute_uv=False)
    return s[0] / s[-1]


def smin(a):
    """σ_min(A) (dense SVD: small matrices only)."""
    return np.linalg.svd(a.toarray(), compute_uv=False)[-1]


def agree(a, x, y, b, sigma_min):
    """x and y solve A·x = b to within what their residuals allow: per column
    ‖x − y‖ ≤ 1.01·(‖b − A·x‖ + ‖b − A·y‖)/σ_min (+ rounding of the difference itself)."""
    n = a.shape[1]
    x2, y2, b2 = x.reshape(n, -1), y.reshape(n, -1), b.reshape(a.shape[0], -1)
    rx = np.linalg.norm(b2 - a @ x2, axis=0)
    ry = np.linalg.norm(b2 - a @ y2, axis=0)
    diff = np.linalg.norm(x2 - y2, axis=0)
    bound = 1.01 * (rx + ry) / sigma_min + 1e-14 * np.linalg.norm(y2, axis=0)
    assert np.all(diff <= bound), (diff, bound)


def rel_res(a, x, b):
    x2, b2 = x.reshape(a.shape[1], -1), b.reshape(a.shape[0], -1)
    return np.linalg.norm(b2 - a @ x2, axis=0) / np.linalg.norm(b2, axis=0)


def close_to(x, ref, bound):
    """‖x_j − ref_j‖ ≤ bound·‖ref_j‖ per column."""
    x2, r2 = x.reshape(len(x), -1), ref.reshape(len(ref), -1)
    err = np.linalg.norm(x2 - r2, axis=0) / np.linalg.norm(r2, axis=0)
    assert np.all(err <= bound), (err, bound)


def backward_errors(a, x, b):
    """‖b_j − A·x_j‖/(‖A‖_F‖x_j‖ + ‖b_j‖) (solvers/solution_check.hpp's definition)."""
    x2, b2 = x.reshape(a.shape[1], -1), b.reshape(a.shape[0], -1)
    r = np.linalg.norm(b2 - a @ x2, axis=0)
    return r / (sl.norm(a) * np.linalg.norm(x2, axis=0) + np.linalg.norm(b2, axis=0))


def honest(a, x, b, info, rtol):
    """info = 0 only with every recomputed residual at most rtol (plus rounding); info ≠ 0 only
    when some column misses it (the solver's final test is the true residual too)."""
    r = rel_res(a, x, b)
    if info == 0:
        assert np.all(r <= rtol * (1 + 1e-6) + 1e-14), r
    else:
        assert np.any(r > rtol * (1 - 1e-6)), (info, r)
    return r


# ---- gmres ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cd():
    a = convection_diffusion(24, 20.0)
    return a, smin(a)


def test_gmres_matches_the_exact_solution_and_scipy(cd):
    a, sm = cd
    b = np.random.default_rng(1).standard_normal(a.shape[0])
    x, info, res = tcsolve.gmres(a, b, rtol=1e-10, restart=60, return_info=True)
    assert info == 0 and x.shape == b.shape and res.status == "converged"
    r = honest(a, x, b, info, 1e-10)
    np.testing.assert_allclose(res.residual_norms, r, rtol=1e-6, atol=1e-15)
    agree(a, x, sl.spsolve(a.tocsc(), b), b, sm)
    xs, info_s = sl.gmres(a, b, tol=1e-10, atol=0, restart=60, maxiter=200)
    assert info_s == 0
    agree(a, x, xs, b, sm)
    assert res.method.startswith("gmres(") and res.matrix_kind == "unsymmetric"
    np.testing.assert_allclose(res.backward_errors, backward_errors(a, x, b), rtol=1e-6)


def test_gmres_block_rhs_all_columns_at_once(cd):
    a, sm = cd
    b = np.random.default_rng(2).standard_normal((a.shape[0], 5))
    x, info, res = tcsolve.gmres(a, b, rtol=1e-9, restart=40, return_info=True)
    assert info == 0 and x.shape == b.shape
    r = honest(a, x, b, info, 1e-9)
    np.testing.assert_allclose(res.residual_norms, r, rtol=1e-6, atol=1e-15)
    agree(a, x, sl.spsolve(a.tocsc(), b), b, sm)
    assert res.right_hand_sides == 5 and res.column_iterations.shape == (5,)
    # (n, 1) comes back 1-D, as SciPy's
    x1, info1 = tcsolve.gmres(a, b[:, :1], rtol=1e-9, restart=40)
    assert info1 == 0 and x1.shape == (a.shape[0],)


def test_gmres_maxiter_counts_restart_cycles(cd):
    a, _ = cd
    b = np.ones(a.shape[0])
    x, info, res = tcsolve.gmres(a, b, rtol=1e-12, restart=5, maxiter=2, M="none", return_info=True)
    assert res.max_iterations == 10  # 2 cycles of 5 products
    assert info > 0 and res.iterations <= 10 and res.status == "not_converged"
    honest(a, x, b, info, 1e-12)


def test_gmres_atol_and_x0(cd):
    a, _ = cd
    b = np.random.default_rng(3).standard_normal(a.shape[0])
    exact = sl.spsolve(a.tocsc(), b)
    x, info = tcsolve.gmres(a, b, rtol=0, atol=1e-6 * np.linalg.norm(b))
    assert info == 0 and np.linalg.norm(b - a @ x) <= 1e-6 * np.linalg.norm(b) * (1 + 1e-6)
    x0 = exact + 1e-8
    x0c = x0.copy()
    _, info, warm = tcsolve.gmres(a, b, x0=x0, rtol=1e-9, return_info=True)
    _, _, cold = tcsolve.gmres(a, b, rtol=1e-9, return_info=True)
    assert info == 0 and np.array_equal(x0, x0c) and warm.iterations < cold.iterations


def test_gmres_zero_rhs_and_linear_operator(cd):
    a, _ = cd
    b = np.zeros((a.shape[0], 3))
    b[:, 1] = 1.0
    x, info = tcsolve.gmres(a, b, rtol=1e-10)
    assert info == 0 and not x[:, 0].any() and not x[:, 2].any()
    assert rel_res(a, x[:, 1], b[:, 1])[0] <= 1e-10
    x, info = tcsolve.gmres(sl.aslinearoperator(a), b[:, 1], rtol=1e-10)
    assert info == 0 and rel_res(a, x, b[:, 1])[0] <= 1e-10


def test_gmres_callback_pr_norm(cd):
    a, _ = cd
    b = np.ones(a.shape[0])
    seen = []
    x, info = tcsolve.gmres(a, b, rtol=1e-8, callback=seen.append, callback_type="pr_norm")
    assert info == 0 and len(seen) > 5 and all(isinstance(v, float) for v in seen)
    assert seen[-1] <= 1e-6 and seen[0] > seen[-1]
    with pytest.raises(NotImplementedError, match="callback_type='x'"):
        tcsolve.gmres(a, b, callback=print, callback_type="x")
    # SciPy's 'legacy' (callback_type None): maxiter counts products, one callback each
    seen = []
    x, info = tcsolve.gmres(a, b, rtol=1e-12, callback=seen.append, maxiter=3)
    assert info == 3 and len(seen) == 3
    x, info = tcsolve.gmres(a, b, x0="Mb", rtol=1e-9)
    assert info == 0 and rel_res(a, x, b)[0] <= 1e-9


# ---- minres -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sl_ind():
    a = shifted_laplacian(30, 0.5)  # eigenvalues of lap2d(30) in (0.02, 7.98): indefinite
    w = np.linalg.eigvalsh(a.toarray())
    assert w[0] < 0 < w[-1]
    return a, np.abs(w).min()


def test_minres_indefinite_matches_exact_and_scipy(sl_ind):
    a, sm = sl_ind
    b = np.random.default_rng(4).standard_normal(a.shape[0])
    x, info, res = tcsolve.minres(a, b, rtol=1e-10, return_info=True)
    assert info == 0 and res.status == "converged" and res.method == "minres"
    # core/matrix_kind's name: lap2d − 0.5·I has a positive diagonal (3.5); its indefiniteness is
    # not visible in the entries
    assert res.matrix_kind == "symmetric, positive diagonal"
    r = honest(a, x, b, info, 1e-10)
    np.testing.assert_allclose(res.residual_norms, r, rtol=1e-6, atol=1e-15)
    agree(a, x, sl.spsolve(a.tocsc(), b), b, sm)
    xs, info_s = sl.minres(a, b, tol=1e-12, maxiter=20000)
    agree(a, x, xs, b, sm)


def test_minres_block_and_shift(sl_ind):
    a, sm = sl_ind
    lap = lap2d(30)
    b = np.random.default_rng(5).standard_normal((a.shape[0], 4))
    x, info = tcsolve.minres(lap, b, rtol=1e-10, shift=0.5)  # (lap − 0.5 I) x = b
    assert info == 0 and x.shape == b.shape
    honest(a, x, b, info, 1e-10)
    agree(a, x, sl.spsolve(a.tocsc(), b), b, sm)
    xs, _ = sl.minres(lap, b[:, 0], shift=0.5, tol=1e-12, maxiter=20000)
    agree(a, x[:, 0], xs, b[:, 0], sm)
    # the same shift on a LinearOperator
    xo, info = tcsolve.minres(sl.aslinearoperator(lap), b[:, 0], rtol=1e-10, shift=0.5)
    assert info == 0
    agree(a, xo, x[:, 0], b[:, 0], sm)


def test_minres_not_converged_is_reported(sl_ind):
    a, _ = sl_ind
    b = np.ones(a.shape[0])
    x, info, res = tcsolve.minres(a, b, rtol=1e-12, maxiter=5, return_info=True)
    assert info == res.iterations > 0 and res.status == "not_converged"
    honest(a, x, b, info, 1e-12)


def test_minres_show_prints_the_iterations(sl_ind, capsys):
    a, _ = sl_ind
    tcsolve.minres(a, np.ones(a.shape[0]), rtol=1e-8, show=True)
    out = capsys.readouterr().out
    assert "tcsolve.minres: iteration 1," in out and "converged after" in out


def test_cg_result_has_backward_errors_and_kind():
    # the command's solve records carry them (docs/hdf5-schema.md section 3); cg's Result too
    a = lap2d(20)
    b = np.random.default_rng(23).standard_normal((400, 2))
    x, info, res = tcsolve.cg(a, b, rtol=1e-9, return_info=True)
    assert info == 0 and res.matrix_kind == "symmetric, positive diagonal" and res.method_reason
    np.testing.assert_allclose(res.backward_errors, backward_errors(a, x, b), rtol=1e-6)


# ---- bad input --------------------------------------------------------------------------------

def test_bad_inputs_are_value_errors(cd, sl_ind):
    a, _ = cd
    n = a.shape[0]
    rect = sp.random(5, 7, density=0.5, format="csr", random_state=1)
    for f in (tcsolve.gmres, tcsolve.minres):
        with pytest.raises(ValueError, match="square"):
            f(rect, np.ones(5))
        with pytest.raises(ValueError, match="length 3 but A has"):
            f(sl_ind[0], np.ones(3))
        bad = np.ones(sl_ind[0].shape[0])
        bad[7] = np.nan
        with pytest.raises(ValueError, match="NaN.*row 7"):
            f(sl_ind[0], bad)
    with pytest.raises(ValueError, match="not symmetric.*MINRES"):
        tcsolve.minres(a, np.ones(n))
    with pytest.raises(ValueError, match="restart=0"):
        tcsolve.gmres(a, np.ones(n), restart=0)
    with pytest.raises(NotImplementedError, match="callback"):
        tcsolve.minres(sl_ind[0], np.ones(sl_ind[0].shape[0]), callback=print)
    for f in (tcsolve.spsolve, tcsolve.lsqr, tcsolve.lsmr):
        with pytest.raises(ValueError, match="length 3 but A has"):
            f(a, np.ones(3))
        bad = np.ones(n)
        bad[2] = np.inf
        with pytest.raises(ValueError, match="Inf.*row 2"):
            f(a, bad)
    with pytest.raises(ValueError, match="spsolve needs a square matrix"):
        tcsolve.spsolve(rect, np.ones(5))
    with pytest.raises(NotImplementedError, match="damp"):
        tcsolve.lsqr(rect, np.ones(5), damp=0.1)
    with pytest.raises(NotImplementedError, match="calc_var"):
        tcsolve.lsqr(rect, np.ones(5), calc_var=True)
    with pytest.raises(TypeError, match="direct solve needs the entries"):
        tcsolve.lsqr(sl.aslinearoperator(rect), np.ones(5))


# ---- spsolve ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["spd", "indefinite", "unsymmetric"])
def test_spsolve_matches_scipy_with_its_shapes(kind, cd, sl_ind):
    a, sm = {"spd": (lap2d(30), 8 * np.sin(np.pi / 62) ** 2), "indefinite": sl_ind, "unsymmetric": cd}[kind]
    n = a.shape[0]
    rng = np.random.default_rng(6)
    b1, b2 = rng.standard_normal(n), rng.standard_normal((n, 3))
    x, res = tcsolve.spsolve(a, b1, return_info=True)
    assert x.shape == (n,) and res.status == "converged" and res.backward_errors[0] <= 1e-10
    # the engine of the kind (lap2d − 0.5·I: a positive diagonal, CHOLMOD fails, MUMPS's LDLᵀ)
    # (small unsymmetric A of low fill: KLU's LU; larger ones UMFPACK's)
    lu = "klu LU" if n <= 2000 and a.nnz <= 20000 else "umfpack LU"
    assert res.method == {"spd": "cholmod LLᵀ", "indefinite": "mumps LDLᵀ", "unsymmetric": lu}[kind]
    agree(a, x, sl.spsolve(a.tocsc(), b1), b1, sm)
    x = tcsolve.spsolve(a, b1[:, None])
    assert x.shape == (n,)  # SciPy: a b of shape (n, 1) is a vector
    x = tcsolve.spsolve(a, b2)
    assert x.shape == (n, 3)
    agree(a, x, sl.spsolve(a.tocsc(), b2), b2, sm)
    xs = tcsolve.spsolve(a.tocsc(), sp.csc_matrix(b2))  # sparse b: sparse x of A's class
    assert sp.issparse(xs) and xs.format == "csc" and xs.shape == (n, 3)
    close_to(xs.toarray(), x, 1e-12)


def test_spsolve_singular_warns_and_returns_the_least_squares_answer():
    # Neumann 1-D Laplacian: rank n − 1 (null space: constants)
    n = 50
    a = lap1d(n).tolil()
    a[0, 0] = a[n - 1, n - 1] = 1.0
    a = sp.csr_matrix(a)
    b = np.random.default_rng(7).standard_normal(n)
    with pytest.warns(tcsolve.MatrixRankWarning, match="singular.*least-squares"):
        x, res = tcsolve.spsolve(a, b, return_info=True)
    assert res.status == "breakdown" and "singular" in res.reason
    assert tcsolve.MatrixRankWarning is sl.MatrixRankWarning
    ref = np.linalg.lstsq(a.toarray(), b, rcond=None)[0]
    r, rref = b - a @ x, b - a @ ref
    # the least-squares residual is unique: b's component along the constants
    np.testing.assert_allclose(np.linalg.norm(r), np.linalg.norm(rref), rtol=1e-10)
    assert np.linalg.norm(a.T @ r) <= 1e-10 * sl.norm(a) * np.linalg.norm(r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.all(np.isnan(sl.spsolve(a.tocsc(), b)))  # SciPy's answer, for the record


# ---- lsqr / lsmr ------------------------------------------------------------------------------

def rectangular(m, n, seed):
    a = sp.random(m, n, density=0.05, format="csr", random_state=seed)
    return sp.csr_matrix(a + sp.eye(m, n))  # full rank


@pytest.mark.parametrize("shape", [(300, 120), (120, 300)])
def test_lsqr_lsmr_least_squares_and_minimum_norm(shape):
    a = rectangular(*shape, seed=8)
    m, n = shape
    b = np.random.default_rng(9).standard_normal(m)
    ref = np.linalg.pinv(a.toarray()) @ b  # least squares (m > n) / minimum norm (m < n)
    kappa = cond2(a)
    rref = np.linalg.norm(b - a @ ref)
    bound = 1e-12 * (kappa + kappa ** 2 * rref / (sl.norm(a) * np.linalg.norm(ref)))
    out = tcsolve.lsqr(a, b)
    assert len(out) == 10
    x, istop, itn, r1, r2, anorm, acond, arnorm, xnorm, var = out
    close_to(x, ref, bound)
    r = b - a @ x
    assert istop == (2 if m > n else 1) and itn == 0 and np.isnan(acond)
    np.testing.assert_allclose([r1, r2, arnorm, xnorm],
                               [np.linalg.norm(r)] * 2 + [np.linalg.norm(a.T @ r), np.linalg.norm(x)],
                               rtol=1e-12, atol=1e-12)
    assert anorm == pytest.approx(sl.norm(a), rel=1e-14) and var.shape == (n,)
    xs = sl.lsqr(a, b, atol=1e-14, btol=1e-14, iter_lim=10000)[0]
    close_to(x, xs, 10 * bound + 1e-10)
    out = tcsolve.lsmr(a, b)
    assert len(out) == 8
    close_to(out[0], x, 1e-12)
    assert out[1] == istop and out[2] == 0 and np.isnan(out[6])


def test_lsqr_x0_gives_the_solution_nearest_x0():
    a = rectangular(120, 300, seed=10)
    rng = np.random.default_rng(11)
    b, x0 = rng.standard_normal(120), rng.standard_normal(300)
    x = tcsolve.lsqr(a, b, x0=x0)[0]
    ref = x0 + np.linalg.pinv(a.toarray()) @ (b - a @ x0)
    close_to(x, ref, 1e-10)


def test_lsqr_block_rhs():
    a = rectangular(200, 80, seed=12)
    b = np.random.default_rng(13).standard_normal((200, 3))
    x, istop, itn, r1, *_ , info = tcsolve.lsqr(a, b, return_info=True)
    assert x.shape == (80, 3) and istop.shape == (3,) and np.all(istop == 2) and r1.shape == (3,)
    close_to(x, np.linalg.lstsq(a.toarray(), b, rcond=None)[0], 1e-9)
    assert info.optimality.shape == (3,) and info.status == "converged"


# ---- the shared general matrices (marker matrices: CTest python_matrices) -------------------------

SQUARE = ["adder_dcop_05", "bp_1200", "impcol_a", "nnc1374", "olm500", "west0479", "arc130", "fs_183_6",
          "reorientation_1", "tumorAntiAngiogenesis_2"]
RECT = ["lp_e226", "lp_share1b", "Franz6_id1959_aug"]
# singular to working precision (measured: reciprocal condition estimates 2.4e-16 (UMFPACK) and
# 4.2e-20 (MUMPS); dense σ_min/σ_max 2.7e-15 and 1.2e-19): spsolve warns and answers by SuiteSparseQR
SINGULAR = ("nnc1374", "reorientation_1")


@pytest.mark.matrices
@pytest.mark.parametrize("name", SQUARE)
def test_general_spsolve_and_gmres(name):
    a = general(name)
    n = a.shape[0]
    b = np.random.default_rng(14).standard_normal(n)
    sm = smin(a)
    if name in SINGULAR:
        with pytest.warns(tcsolve.MatrixRankWarning, match="singular to working precision"):
            x, res = tcsolve.spsolve(a, b, return_info=True)
        assert res.status == "breakdown" and res.method.startswith("spqr") and np.all(np.isfinite(x))
        r = b - a @ x
        np.testing.assert_allclose(res.optimality, np.linalg.norm(a.T @ r) / (sl.norm(a) * np.linalg.norm(r)),
                                   rtol=1e-6)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", tcsolve.MatrixRankWarning)
            x, res = tcsolve.spsolve(a, b, return_info=True)
        assert res.status == "converged", res.reason
        assert np.all(res.backward_errors <= 1e-10)
        agree(a, x, sl.spsolve(a.tocsc(), b), b, sm)
    # GMRES(50), at most 4000 products: honest whether it converges or not (the others stagnate
    # unpreconditioned or with Jacobi, as SciPy's gmres does on them)
    xg, info, rg = tcsolve.gmres(a, b, rtol=1e-8, restart=50, maxiter=80, return_info=True)
    honest(a, xg, b, info, 1e-8)
    if name in ("arc130", "fs_183_6"):  # 6 and 15 products with Jacobi (measured)
        assert info == 0, rg.reason
    if info == 0 and name not in SINGULAR:
        agree(a, xg, x, b, sm)


@pytest.mark.matrices
@pytest.mark.parametrize("name", ["reorientation_1", "tumorAntiAngiogenesis_2"])
def test_general_minres_on_the_symmetric_ones(name):
    a = general(name)
    b = np.random.default_rng(15).standard_normal(a.shape[0])
    x, info = tcsolve.minres(a, b, rtol=1e-8, maxiter=20 * a.shape[0])
    honest(a, x, b, info, 1e-8)
    if info == 0:
        agree(a, x, sl.spsolve(a.tocsc(), b), b, smin(a))


@pytest.mark.matrices
@pytest.mark.parametrize("name", RECT)
def test_general_lsqr(name):
    a = general(name)
    m, n = a.shape
    b = np.random.default_rng(16).standard_normal(m)
    x, istop, itn, r1, r2, anorm, acond, arnorm, xnorm, var, info = tcsolve.lsqr(a, b, return_info=True)
    assert x.shape == (n,) and itn == 0
    r = b - a @ x
    # a least-squares answer: r ⟂ range(A) to the optimality tolerance (or b reached)
    assert np.linalg.norm(a.T @ r) <= 1e-9 * anorm * np.linalg.norm(r) or rel_res(a, x, b)[0] <= 1e-10
    assert istop in (1, 2) and info.status == "converged", info.reason
    # SciPy's LSQR cannot do better than the least-squares residual
    xs = sl.lsqr(a, b, atol=1e-12, btol=1e-12, iter_lim=20000)[0]
    assert np.linalg.norm(r) <= np.linalg.norm(b - a @ xs) * (1 + 1e-8)


def test_polynomial_preconditioner_for_gmres_and_minres(cd, sl_ind):
    """M='poly': the GMRES polynomial on the right (as `tcsolve solve --precond poly`); the same
    answers as Jacobi's, fewer steps; refused where it cannot run."""
    for method, (a, sm) in (("gmres", cd), ("minres", sl_ind[:2])):
        fn = getattr(tcsolve, method)
        b = np.random.default_rng(5).standard_normal((a.shape[0], 3))
        kw = {"restart": 20} if method == "gmres" else {}
        x, info, res = fn(a, b, rtol=1e-10, M="poly", return_info=True, **kw)
        assert info == 0, res.reason
        honest(a, x, b, info, 1e-10)
        assert "on A·p(A)" in res.method, res.method
        xj, infoj, resj = fn(a, b, rtol=1e-10, M="jacobi", return_info=True, **kw)
        assert infoj == 0
        agree(a, x, xj, b, sm)
        assert res.iterations < resj.iterations, (method, res.iterations, resj.iterations)
        with pytest.raises(ValueError, match="does not take x0"):
            fn(a, b, x0=np.zeros_like(b), M="poly")
        with pytest.raises(NotImplementedError, match="M='poly'"):
            fn(sl.aslinearoperator(a), b[:, 0], M="poly")


# ---- GPU: CuPy input used in place (marker gpu: CTest python_gpu; fixtures cp, csp: conftest) -----

@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gmres", "minres"])
def test_gpu_cupy_input_matches_the_cpu(cp, csp, method):
    a = shifted_laplacian(40, 0.5) if method == "minres" else convection_diffusion(40, 20.0)
    sm = smin(a)
    b = np.random.default_rng(17).standard_normal((a.shape[0], 4))
    f = getattr(tcsolve, method)
    x, info, res = f(csp.csr_matrix(a), cp.asarray(b), rtol=1e-9, return_info=True)
    assert isinstance(x, cp.ndarray) and x.shape == b.shape
    assert res.backend == "cuda" and res.spmm_kernel == "csr_view" and res.backward_errors.shape == (4,)
    honest(a, x.get(), b, info, 1e-9)
    assert info == 0
    xc, info_c = f(a, b, rtol=1e-9, device="cpu")
    assert info_c == 0
    agree(a, x.get(), xc, b, sm)
    xg, info_g = f(a, b[:, 0], rtol=1e-9, device="cuda")  # SciPy input on the GPU backend
    honest(a, xg, b[:, 0], info_g, 1e-9)
    assert info_g == 0 and xg.shape == (a.shape[0],)
    # M='poly' with SciPy input on the GPU backend, and on CuPy input (A's fused step on CuPy's own
    # arrays: 5 entries a row); x poisoned first (the polynomial starts from 0, x is written)
    xp, info_p, res_p = f(a, b, rtol=1e-9, device="cuda", M="poly", return_info=True)
    poly = "with p(A) in fp32 steps" if method == "gmres" else "on A·p(A)"  # (FGMRES on the GPU)
    assert info_p == 0 and res_p.backend == "cuda" and poly in res_p.method, res_p.method
    honest(a, xp, b, info_p, 1e-9)
    agree(a, xp, xc, b, sm)
    xq, info_q, res_q = f(csp.csr_matrix(a), cp.asarray(b), rtol=1e-9, M="poly", return_info=True)
    assert isinstance(xq, cp.ndarray) and info_q == 0 and poly in res_q.method, res_q.method
    assert res_q.iterations < res.iterations, (res_q.iterations, res.iterations)  # fewer products than Jacobi's
    honest(a, xq.get(), b, info_q, 1e-9)
    agree(a, xq.get(), xc, b, sm)
    with pytest.raises(ValueError, match="does not take x0"):
        f(csp.csr_matrix(a), cp.asarray(b), x0=cp.zeros(b.shape), M="poly")


@pytest.mark.gpu
def test_gpu_minres_shift_on_cupy(cp, csp):
    lap = lap2d(30)
    a = shifted_laplacian(30, 0.5)
    b = np.random.default_rng(18).standard_normal(a.shape[0])
    x, info = tcsolve.minres(csp.csr_matrix(lap), cp.asarray(b), rtol=1e-10, shift=0.5)
    assert info == 0
    honest(a, x.get(), b, info, 1e-10)


@pytest.mark.gpu
def test_gpu_spsolve_and_lsqr_take_cupy_and_answer_in_cupy(cp, csp):
    a = convection_diffusion(20, 10.0)
    b = np.random.default_rng(19).standard_normal(a.shape[0])
    x = tcsolve.spsolve(csp.csr_matrix(a), cp.asarray(b))
    assert isinstance(x, cp.ndarray)
    agree(a, x.get(), sl.spsolve(a.tocsc(), b), b, smin(a))
    r = rectangular(200, 80, seed=20)
    br = np.random.default_rng(21).standard_normal(200)
    out = tcsolve.lsqr(csp.csr_matrix(r), cp.asarray(br))
    assert isinstance(out[0], cp.ndarray)
    close_to(out[0].get(), tcsolve.lsqr(r, br)[0], 1e-12)


def test_preconditioner_operator_and_jacobi_choices(cd, sl_ind):
    a, sm = cd
    b = np.random.default_rng(22).standard_normal(a.shape[0])
    dinv = sl.LinearOperator(a.shape, matvec=lambda v: v / a.diagonal())
    for M in (dinv, sp.diags(1 / a.diagonal()), "jacobi", "none"):
        x, info, res = tcsolve.gmres(a, b, rtol=1e-9, M=M, return_info=True)
        assert info == 0, (M, res.reason)
        honest(a, x, b, info, 1e-9)
        assert res.preconditioner == ("operator" if not isinstance(M, str) else M)
    # M as an operator on an operator A (no diagonal to take: Jacobi is refused by name only)
    x, info = tcsolve.gmres(sl.aslinearoperator(a), b, rtol=1e-9, M=dinv)
    assert info == 0
    with pytest.raises(ValueError, match="M='jacobi' needs A as a matrix"):
        tcsolve.gmres(sl.aslinearoperator(a), b, M="jacobi")
    s, _ = sl_ind
    x, info = tcsolve.minres(s, np.ones(s.shape[0]), rtol=1e-9, M="none")
    assert info == 0
