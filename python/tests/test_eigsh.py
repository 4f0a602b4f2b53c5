"""tcsolve.eigsh against scipy.sparse.linalg.eigsh: eigenvalues to 1e-10 of ‖A‖ (the largest
|λ|), residuals ‖A·v − λ·M·v‖ recomputed in NumPy below the bound tcsolve reports (and equal to
the residuals it reports), B-orthonormal vectors, SciPy's ordering and return conventions."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sl
from scipy.sparse.linalg import ArpackNoConvergence

import tcsolve
from conftest import lap2d, lap2d_eigenvalues, residuals, rounding, suitesparse

EIG_TOL = 1e-10


def scale_of(a, m=None):
    """‖A‖₂ (or of the pencil): the largest |λ|, by SciPy."""
    return float(np.abs(sl.eigsh(a, k=1, M=m, which="LM", return_eigenvectors=False)).max())


def check_pairs(a, w, v, info, ref, m=None):
    s = scale_of(a, m)
    assert w.shape == ref.shape
    np.testing.assert_array_less(np.abs(w - ref), EIG_TOL * s + 0 * ref,
                                 err_msg=f"eigenvalues {w} vs SciPy {ref} (scale {s:.3g})")
    assert np.all(np.diff(w) >= 0), "eigsh returns ascending eigenvalues"
    r = residuals(a, w, v, m)
    # the true residuals tcsolve reports are what NumPy computes, and pass tcsolve's own test
    assert np.all(np.abs(r - info.residual_norms) <= 1e-6 * r + rounding(a, w, v, m)), (r, info.residual_norms)
    assert np.all(r <= np.asarray(info.residual_bounds) * (1 + 1e-6) + 1e-14 * s), (r, info.residual_bounds)
    g = v.T @ (v if m is None else m @ v)
    np.testing.assert_allclose(g, np.eye(v.shape[1]), atol=1e-8)


GENERATED = {"lap2d_40": lambda: lap2d(40), "lap2d_30x17": lambda: lap2d(30, 17)}
SUITESPARSE = ["bcsstk02", "bcsstk05", "nos5", "662_bus", "can_1072", "Trefethen_2000", "dwt_2680",
               "zenios", "sherman1"]


def load(name):
    return GENERATED[name]() if name in GENERATED else suitesparse(name)


@pytest.mark.parametrize("which", ["SA", "LA"])
@pytest.mark.parametrize("name", list(GENERATED) + SUITESPARSE)
def test_extreme_pairs_match_scipy(name, which):
    a = load(name)
    w, v, info = tcsolve.eigsh(a, k=6, which=which, return_info=True)
    ref = np.sort(sl.eigsh(a, k=6, which=which, return_eigenvectors=False))
    check_pairs(a, w, v, info, ref)
    assert info.status in ("converged", "unverified")
    assert info.task == "eigs" and info.k == 6 and info.rows == a.shape[0] and info.nnz == a.nnz


def test_lap2d_closed_form_and_multiplicity():
    # lap2d(40) has double eigenvalues: all copies must be found.
    a = lap2d(40)
    w = tcsolve.eigsh(a, k=8, which="SA", return_eigenvectors=False)
    assert np.all(np.diff(w) <= 0)  # SciPy's order without vectors: the most wanted last
    np.testing.assert_allclose(np.sort(w), lap2d_eigenvalues(40)[:8], rtol=0, atol=1e-10 * 8)


def test_values_only_leave_the_vectors_where_they_are():
    # return_eigenvectors=False: the same values; the solver's block is not copied back (the
    # Result holds no vectors), as SciPy computes none.
    a = lap2d(30)
    w, v, info = tcsolve.eigsh(a, k=5, which="LA", return_info=True)
    w2, info2 = tcsolve.eigsh(a, k=5, which="LA", return_eigenvectors=False, return_info=True)
    np.testing.assert_allclose(np.sort(w2), np.sort(w), rtol=0, atol=1e-10 * 8)
    assert v.shape == (a.shape[0], 5)
    assert np.asarray(info2.eigenvectors).size == 0
    assert info2.status == "converged"


def test_largest_magnitude_default_spd():
    a = suitesparse("nos5")
    w = tcsolve.eigsh(a, k=4, return_eigenvectors=False)  # which='LM' as SciPy's default
    ref = np.sort(sl.eigsh(a, k=4, return_eigenvectors=False))
    np.testing.assert_allclose(w, ref, rtol=0, atol=EIG_TOL * scale_of(a))


def test_largest_magnitude_indefinite_takes_both_ends():
    a = (lap2d(25) - 4.0 * sp.eye(625)).tocsr()  # spectrum symmetric about 0: LM mixes both ends
    w, v, info = tcsolve.eigsh(a, k=6, which="LM", return_info=True)
    ref = np.sort(sl.eigsh(a, k=6, which="LM", return_eigenvectors=False))
    check_pairs(a, w, v, info, ref)
    assert "merged" in info.method_reason
    assert np.any(w < 0) and np.any(w > 0)


def test_largest_magnitude_gershgorin_shortcut():
    a = (lap2d(25) - 3.0 * sp.eye(625)).tocsr()  # spectrum in [-3, 5]: the largest end wins
    w, v, info = tcsolve.eigsh(a, k=6, which="LM", return_info=True)
    ref = np.sort(sl.eigsh(a, k=6, which="LM", return_eigenvectors=False))
    check_pairs(a, w, v, info, ref)
    assert "largest end only" in info.method_reason


@pytest.mark.parametrize("num,which", [("05", "LA"), ("05", "SA"), ("22", "LA"), ("22", "SA"), ("09", "SA")])
def test_generalized_with_mass(num, which):
    k, m = suitesparse(f"bcsstk{num}"), suitesparse(f"bcsstm{num}")
    w, v, info = tcsolve.eigsh(k, k=4, M=m, which=which, return_info=True)
    if which == "SA":  # SciPy's own SA run does not converge on these: shift-invert at 0
        ref = np.sort(sl.eigsh(k, k=4, M=m, sigma=0, return_eigenvectors=False))
    else:
        ref = np.sort(sl.eigsh(k, k=4, M=m, which=which, return_eigenvectors=False))
    check_pairs(k, w, v, info, ref, m)
    assert info.mass.startswith("scipy.sparse")


def test_return_conventions():
    a = lap2d(12)
    w = tcsolve.eigsh(a, k=3, which="LA", return_eigenvectors=False)
    assert isinstance(w, np.ndarray) and w.shape == (3,)
    w, v = tcsolve.eigsh(a, k=3, which="LA")
    assert v.shape == (144, 3)
    out = tcsolve.eigsh(a, k=3, which="LA", return_eigenvectors=False, return_info=True)
    assert len(out) == 2 and isinstance(out[1], tcsolve.Result)


@pytest.mark.parametrize("method", ["lanczos", "lobpcg"])
def test_methods_agree(method):
    a = suitesparse("662_bus")
    w, v, info = tcsolve.eigsh(a, k=5, which="LA", method=method, return_info=True)
    ref = np.sort(sl.eigsh(a, k=5, which="LA", return_eigenvectors=False))
    check_pairs(a, w, v, info, ref)
    assert info.method == method


def test_not_converged_raises_with_partial_result():
    a = lap2d(60)
    with pytest.raises(tcsolve.NoConvergence) as e:
        tcsolve.eigsh(a, k=6, which="SA", maxiter=1, method="lanczos")
    assert isinstance(e.value, ArpackNoConvergence)  # SciPy scripts' `except` keeps working
    info = e.value.info
    assert info.status == "not_converged" and info.iterations == 1
    assert e.value.eigenvalues.shape == (6,) and e.value.eigenvectors.shape == (3600, 6)
    assert "not_converged" in str(e.value)
    # the partial result is the best approximation: residuals as reported
    r = residuals(a, e.value.eigenvalues, e.value.eigenvectors)
    np.testing.assert_allclose(r, info.residual_norms, rtol=1e-5, atol=1e-12)


def test_result_fields():
    a = lap2d(60)  # large enough for an iterative method (small ones may be solved densely)
    _, _, info = tcsolve.eigsh(a, k=4, which="SA", method="lanczos", return_info=True)
    for f in ("status", "reason", "method", "iterations", "operator_applies", "tolerance", "eigenvalues",
              "eigenvectors", "residual_norms", "residual_bounds", "history", "time_solve",
              "time_preprocess", "matrix_checksum", "backend", "device", "spmm_kernel", "precision", "k",
              "which", "a_norm", "b_norm", "rows", "nnz", "seed", "max_iterations", "command"):
        assert hasattr(info, f), f
    h = info.history
    assert len(h) == len(h.iteration) == h.residual_norms.shape[0] > 0
    assert info.which == "smallest" and info.backend in ("cpu", "cuda")
    assert info.matrix_checksum.startswith("csrhash1:")
    assert "converged" in repr(info)


def test_phases_are_disjoint():
    """The Result's phases add up to at most the call's own wall time (each counted once: the
    plan and the set-up are not also in time_preprocess), for eigsh and for cg."""
    import time
    a = lap2d(60)
    t0 = time.perf_counter()
    _, _, info = tcsolve.eigsh(a, k=4, which="SA", return_info=True)
    wall = time.perf_counter() - t0
    phases = [info.time_read, info.time_preprocess, info.time_plan, info.time_setup, info.time_solve,
              info.time_verify, info.time_write]
    assert min(phases) >= 0
    assert info.time_plan > 0 and info.time_solve > 0
    assert sum(phases) <= wall * 1.001 + 1e-4, (phases, wall)
    b = np.ones((a.shape[0], 3))
    t0 = time.perf_counter()
    _, _, res = tcsolve.cg(a, b, rtol=1e-8, return_info=True)
    wall = time.perf_counter() - t0
    phases = [res.time_read, res.time_preprocess, res.time_setup, res.time_solve, res.time_write]
    assert min(phases) >= 0 and res.time_solve > 0
    assert sum(phases) <= wall * 1.001 + 1e-4, (phases, wall)


def test_v0_and_X_start_the_iteration():
    """A start vector / block is used: the exact eigenvectors converge in fewer operator applies."""
    import scipy.sparse as sp
    n = 1200
    main = 2.0 + np.arange(n) / n
    A = sp.diags([main, -0.3 * np.ones(n - 1), -0.3 * np.ones(n - 1)], [0, -1, 1], format="csr")
    w, v = np.linalg.eigh(A.toarray())
    cold = tcsolve.eigsh(A, k=3, which="LA", method="lanczos", return_info=True)[-1]
    warm = tcsolve.eigsh(A, k=3, which="LA", method="lanczos", v0=v[:, -1], return_info=True)[-1]
    assert warm.status == cold.status == "converged"
    assert warm.operator_applies < cold.operator_applies, (warm.operator_applies, cold.operator_applies)
    X = v[:, -3:][:, ::-1].copy()
    vals = tcsolve.lobpcg(A, X, largest=True, return_info=True)
    np.testing.assert_allclose(np.sort(vals[0]), np.sort(w[-3:]), rtol=1e-10)


def test_plan_and_verification_are_reported():
    """auto chooses by predicted seconds and says so; the set is verified and the Result names the
    check (certificate, re-check or dense); certify=True always runs the Sylvester count."""
    a = lap2d(60)
    w, v, info = tcsolve.eigsh(a, k=6, which="SA", return_info=True)
    assert info.status == "converged"
    assert info.method_reason.startswith("auto: ") and "predicted" in info.method_reason
    assert info.predicted_seconds > 0
    assert info.verification in ("certificate", "recheck", "dense")
    assert info.certified == ("yes" if info.verification == "certificate" else "not_checked")
    assert info.time_plan >= 0 and info.time_verify >= 0
    np.testing.assert_allclose(w, lap2d_eigenvalues(60)[:6], rtol=1e-10)
    wc, vc, ic = tcsolve.eigsh(a, k=6, which="SA", certify=True, return_info=True)
    assert ic.verification == "certificate" and ic.certified == "yes", ic.certificate
    assert "asked for" in ic.certificate
    np.testing.assert_allclose(wc, w, rtol=1e-10)


def test_certify_needs_a_factorization():
    a = lap2d(30)
    op = sl.aslinearoperator(a)
    with pytest.raises(ValueError, match="certify"):
        tcsolve.eigsh(op, k=3, which="SA", certify=True, device="cpu")


def test_package_exports_only_its_api():
    public = {n for n in dir(tcsolve) if not n.startswith("_")}
    assert public <= set(tcsolve.__all__), public - set(tcsolve.__all__)
    assert "np" not in dir(tcsolve) and "time" not in dir(tcsolve)
    assert "chebyshev" in tcsolve._tcsolve.eigs_method_names()
    w = tcsolve.eigsh(lap2d(40), k=4, which="LA", method="chebyshev")[0]
    np.testing.assert_allclose(np.sort(w), np.sort(lap2d_eigenvalues(40)[::-1][:4]), rtol=1e-9)


def test_a_scattered_large_matrix_iterates_in_rcm_order_and_answers_in_its_own():
    """A grid Laplacian of 65,536 rows stored in a random order (plus two large diagonal entries,
    so that the two largest pairs stand apart) iterates in a reverse Cuthill-McKee order on the
    CPU (as the command's --reorder auto); the vectors come back in the input's order."""
    n1 = 256
    t = sp.diags([-np.ones(n1 - 1), 2 * np.ones(n1), -np.ones(n1 - 1)], [-1, 0, 1])
    i1 = sp.identity(n1)
    a = (sp.kron(t, i1) + sp.kron(i1, t)).tolil()
    a[5, 5] += 100.0
    a[70000 % a.shape[0], 70000 % a.shape[0]] += 90.0
    a = a.tocsr()
    p = np.random.default_rng(4).permutation(a.shape[0])
    s = a[p][:, p].tocsr()
    w, v, info = tcsolve.eigsh(s, 2, which="LA", device="cpu", return_info=True)
    assert "auto: reverse Cuthill-McKee" in info.spmm_plan, info.spmm_plan
    assert np.linalg.norm(s @ v - v * w) <= 1e-8 * np.abs(w).max()
    w_nat, _ = tcsolve.eigsh(a, 2, which="LA", device="cpu")
    np.testing.assert_allclose(np.sort(w), np.sort(w_nat), rtol=1e-10)
    _, _, info_nat = tcsolve.eigsh(a, 2, which="LA", device="cpu", return_info=True)
    assert "Cuthill" not in info_nat.spmm_plan  # the natural order is kept
