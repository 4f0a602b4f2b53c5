"""tcsolve.svds against dense LAPACK (numpy.linalg.svd): singular values to 1e-10 of s_1, true
residuals within the reported test, SciPy's conventions (s ascending, return_singular_vectors,
argument rules), every input kind, the repeated-value trap, which='SM', bad inputs."""
import copy

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import tcsolve

EPS = np.finfo(float).eps


def rand_sparse(m, n, seed=0, density=0.05):
    rng = np.random.default_rng(seed)
    a = sp.random(m, n, density=density, random_state=rng, format="csr",
                  data_rvs=lambda s: rng.standard_normal(s))
    return a + sp.eye(m, n, format="csr")  # no empty row or column


def dense_ref(a, k):
    s = np.linalg.svd(a.toarray() if sp.issparse(a) else np.asarray(a, dtype=float), compute_uv=False)
    return s[:k][::-1]


def check_triplets(a, u, s, vh, tol=4096 * EPS):
    """Ascending, orthonormal, residuals (recomputed in NumPy) within tol·s_1 plus rounding."""
    ad = a.toarray() if sp.issparse(a) else np.asarray(a, dtype=float)
    k = s.size
    assert np.all(np.diff(s) >= 0), s
    assert u.shape == (ad.shape[0], k) and vh.shape == (k, ad.shape[1])
    np.testing.assert_allclose(u.T @ u, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(vh @ vh.T, np.eye(k), atol=1e-12)
    s1 = s.max()
    r_av = np.linalg.norm(ad @ vh.T - u * s, axis=0)
    r_atu = np.linalg.norm(ad.T @ u - vh.T * s, axis=0)
    floor = 64 * EPS * np.linalg.norm(ad, 2)  # rounding of the recomputation
    assert np.all(r_av <= tol * s1 + floor) and np.all(r_atu <= tol * s1 + floor), (r_av / s1, r_atu / s1)


@pytest.mark.parametrize("shape", [(400, 150), (150, 400), (200, 200)])
@pytest.mark.parametrize("kind", ["csr", "csc", "coo", "dense", "float32", "int"])
def test_against_dense_svd(shape, kind):
    a = rand_sparse(*shape, seed=sum(shape))
    inp = {"csr": a, "csc": a.tocsc(), "coo": a.tocoo(), "dense": a.toarray(),
           "float32": a.astype(np.float32), "int": sp.csr_matrix(np.round(4 * a.toarray()).astype(np.int64))}[kind]
    ref_mat = inp.astype(np.float64)
    u, s, vh, info = tcsolve.svds(inp, k=6, return_info=True)
    assert info.status == "converged" and info.method.startswith("block GKL"), info.method
    ref = dense_ref(ref_mat, 6)
    np.testing.assert_allclose(s, ref, rtol=0, atol=1e-10 * ref[-1])
    check_triplets(ref_mat, u, s, vh)
    assert info.tolerance == 4096 * EPS and "machine precision" in info.method_reason
    bound = info.tolerance * info.a_norm
    assert np.all(info.residual_av <= bound) and np.all(info.residual_atu <= bound)
    assert info.rows == shape[0] and info.cols == shape[1]


def test_tolerance_and_result_fields():
    a = rand_sparse(300, 120, seed=3)
    u, s, vh, info = tcsolve.svds(a, k=4, tol=1e-6, return_info=True)
    assert info.tolerance == 1e-6 and "machine precision" not in info.method_reason
    assert info.iterations >= 1 and info.operator_applies > 0 and len(info.history) == info.iterations
    assert info.history.residual_estimates.shape == (info.iterations, 4)
    np.testing.assert_array_equal(info.singular_values, s)
    check_triplets(a, u, s, vh, tol=1e-6)
    u2, s2, vh2, info2 = tcsolve.svds(a, k=4, tol=1e-20, return_info=True)  # below the floor: raised
    assert info2.tolerance == 4096 * EPS


@pytest.mark.parametrize("tail", ["graded", "flat"])
def test_repeated_singular_value_all_copies(tail):
    # s = 10, 9, then 5 five times, then lower: k = 7 must return all five copies of 5. The flat
    # tail (193 copies of 0.01) is the trap: with block_size=2 the block GKL converges at once to
    # 10, 9, 5 (four copies) and 0.01 -- the default block (min(k, 16) = 7 >= 5) finds all five.
    rng = np.random.default_rng(7)
    m, n = 300, 200
    qu, _ = np.linalg.qr(rng.standard_normal((m, n)))
    qv, _ = np.linalg.qr(rng.standard_normal((n, n)))
    rest = np.linspace(3.0, 0.1, n - 7) if tail == "graded" else np.full(n - 7, 0.01)
    sig = np.concatenate([[10.0, 9.0], np.full(5, 5.0), rest])
    a = (qu * sig) @ qv.T
    u, s, vh, info = tcsolve.svds(a, k=7, return_info=True)
    assert info.method.startswith("block GKL")
    np.testing.assert_allclose(s, np.sort(sig[:7]), rtol=0, atol=1e-10 * 10)
    check_triplets(a, u, s, vh)
    # the five copies span the singular subspace of 5: the exact one projects onto it fully
    span = vh[:5].T
    np.testing.assert_allclose(np.linalg.svd(span.T @ qv[:, 2:7], compute_uv=False), 1.0, atol=1e-9)


def flat_tail():
    """300 x 200 dense: s = 10, 9, 5 (five copies), then 193 copies of 0.01; the values too."""
    rng = np.random.default_rng(7)
    m, n = 300, 200
    qu, _ = np.linalg.qr(rng.standard_normal((m, n)))
    qv, _ = np.linalg.qr(rng.standard_normal((n, n)))
    sig = np.concatenate([[10.0, 9.0], np.full(5, 5.0), np.full(n - 7, 0.01)])
    return (qu * sig) @ qv.T, sig


def test_count_certificate_catches_a_narrow_block():
    # the flat-tail trap above with block_size=2: for some seeds the first run returns 0.01 in place
    # of a copy of 5 with passing residuals (seeds 0-5 all did on a 2-core EPYC, 1, 2, 5, 7 of 0-7
    # on a 2-core Xeon, 2026-11-30/12-01: which ones depends on the machine's rounding). The count
    # of [0 A; A^T 0] (cheap here: the default) rejects such a run and it is repeated wider; every
    # seed must end with the right values, and every seed whose blind run missed a copy must say
    # the count rejected it; certify=False returns the first set as it stands.
    a, sig = flat_tail()
    a = sp.csr_matrix(a)
    sprung = 0
    for seed in range(8):
        s_blind, info_blind = tcsolve.svds(a, k=7, block_size=2, random_state=seed, certify=False, recheck=False,
                                           return_singular_vectors=False, return_info=True)
        assert info_blind.certified == "not_checked" and info_blind.verification == "none"
        u, s, vh, info = tcsolve.svds(a, k=7, block_size=2, random_state=seed, return_info=True)
        assert info.status == "converged" and info.certified == "yes", (seed, info.certified, info.certificate)
        np.testing.assert_allclose(s, np.sort(sig[:7]), rtol=0, atol=1e-10 * 10, err_msg=str(seed))
        if abs(s_blind.min() - 5.0) > 1.0:  # the trap sprang: a copy of 5 is missing
            sprung += 1
            assert "count rejected" in info.method, (seed, info.method)
    assert sprung >= 2, sprung  # the trap is real


def test_recheck_catches_a_narrow_block_where_nothing_counts():
    # the same trap as a LinearOperator (nothing to count): where block 2 finds four copies of 5,
    # the re-check runs, finds the fifth copy missing, and the run is repeated wider (block 4); that
    # complete set's values above s_k = 5 (10 and 9) are single, so the block answers for it.
    a, sig = flat_tail()
    op = sla.aslinearoperator(a)
    sprung = 0
    for seed in range(8):
        s_blind = tcsolve.svds(op, k=7, block_size=2, random_state=seed, recheck=False,
                               return_singular_vectors=False)
        u, s, vh, info = tcsolve.svds(op, k=7, block_size=2, random_state=seed, return_info=True)
        assert info.status == "converged" and info.verification == "block", (seed, info.verification)
        np.testing.assert_allclose(s, np.sort(sig[:7]), rtol=0, atol=1e-10 * 10, err_msg=str(seed))
        check_triplets(a, u, s, vh)
        if abs(s_blind.min() - 5.0) > 1.0:
            sprung += 1
            assert "re-check rejected" in info.method, (seed, info.method)
    assert sprung >= 2, sprung
    with pytest.raises(ValueError, match="recheck="):
        tcsolve.svds(a, k=3, recheck="yes")


def test_clustered_block_projection_converges():
    # the flat-tail matrix with block_size=4, seed 1: Eigen's BDCSVD of the 16 x 16 projection B
    # returned |B Y - X S| = 6.7e-5 (|B| = 10); the thick restart carried it into A V = U B and the
    # block GKL stalled for 1000 restarts with residuals up to 3e-2 s_1 (2026-11-30). The checked
    # SVD (JacobiSVD where BDCSVD fails its check) converges in the first restart.
    a, sig = flat_tail()
    for seed in range(4):
        u, s, vh, info = tcsolve.svds(a, k=7, block_size=4, random_state=seed, maxiter=50, certify=False,
                                      return_info=True)
        assert info.status == "converged" and info.method.startswith("block GKL"), info.method
        assert info.iterations <= 3, info.iterations
        np.testing.assert_allclose(s, np.sort(sig[:7]), rtol=0, atol=1e-10 * 10)
        check_triplets(a, u, s, vh)


def test_certify_arguments():
    a = rand_sparse(200, 90, seed=5)
    _, info = tcsolve.svds(a, k=3, certify=True, return_singular_vectors=False, return_info=True)
    assert info.certified == "yes" and "[0 A; A^T 0]" in info.certificate
    with pytest.raises(ValueError, match="certify=1"):
        tcsolve.svds(a, k=3, certify=1)
    with pytest.raises(ValueError, match="held on the host"):
        tcsolve.svds(sla.aslinearoperator(a), k=3, certify=True)


class CheckingOperator(sla.LinearOperator):
    """SciPy's test operator: 1-D matvec/rmatvec only (asserts it gets vectors or single columns)."""

    def __init__(self, a):
        super().__init__(dtype=np.float64, shape=a.shape)
        self.a = a

    def _matvec(self, x):
        assert max(x.shape) == np.size(x)
        return self.a @ x

    def _rmatvec(self, x):
        assert max(x.shape) == np.size(x)
        return self.a.T @ x


@pytest.mark.parametrize("kind", ["aslinearoperator", "matvec_only", "checking", "matmat"])
@pytest.mark.parametrize("shape", [(300, 120), (120, 300)])
def test_linear_operator(kind, shape):
    a = rand_sparse(*shape, seed=11)
    if kind == "aslinearoperator":
        op = sla.aslinearoperator(a)
    elif kind == "matvec_only":
        op = sla.LinearOperator(a.shape, matvec=lambda x: a @ x, rmatvec=lambda y: a.T @ y, dtype=float)
    elif kind == "checking":
        op = CheckingOperator(a)
    else:
        op = sla.LinearOperator(a.shape, matvec=lambda x: a @ x, rmatvec=lambda y: a.T @ y,
                                matmat=lambda x: a @ x, rmatmat=lambda y: a.T @ y, dtype=float)
    u, s, vh, info = tcsolve.svds(op, k=5, return_info=True)
    assert info.spmm_kernel == "python"
    np.testing.assert_allclose(s, dense_ref(a, 5), rtol=0, atol=1e-10 * s.max())
    check_triplets(a, u, s, vh)


@pytest.mark.parametrize("n, m, k", [(6, 7, 3), (9, 5, 4), (10, 8, 5)])
def test_scipy_svd_linop_real_cases(n, m, k):
    # The real parts of SciPy's test_svd_linop (test_svds.py), whose complex part is out of scope.
    def reorder(args):
        U, s, VH = args
        j = np.argsort(s)
        return U[:, j], s[j], VH[j, :]

    for seed, which in ((52, "LM"), (1909, "SM")):
        A = np.random.RandomState(seed).randn(n, m)
        v0 = np.ones(min(A.shape))
        kw = {"v0": v0} if which == "LM" else {}
        U1, s1, VH1 = reorder(tcsolve.svds(A, k, which=which, solver="arpack", **kw))
        U2, s2, VH2 = reorder(tcsolve.svds(CheckingOperator(A), k, which=which, solver="arpack", **kw))
        np.testing.assert_allclose(np.abs(U1), np.abs(U2))
        np.testing.assert_allclose(s1, s2)
        np.testing.assert_allclose(np.abs(VH1), np.abs(VH2))
        sd = np.linalg.svd(A, compute_uv=False)
        np.testing.assert_allclose(s1, np.sort(sd[:k] if which == "LM" else sd[-k:]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape", [(60, 90), (90, 60)])
@pytest.mark.parametrize("solver", ["tcsolve", "arpack", "propack"])
@pytest.mark.parametrize("rsv", [True, False, "u", "vh"])
def test_return_singular_vectors(shape, solver, rsv):
    a = rand_sparse(*shape, seed=5, density=0.2).toarray()
    m, n = shape
    ref = dense_ref(a, 3)
    out = tcsolve.svds(a, 3, return_singular_vectors=rsv, solver=solver)
    if rsv is False:
        np.testing.assert_allclose(out, ref, rtol=1e-12)
        return
    u, s, vh = out
    np.testing.assert_allclose(s, ref, rtol=1e-12)
    respect = solver != "arpack"  # 'arpack' (and 'lobpcg') as SciPy: 'u' kept when m <= n, 'vh' when m > n
    want_u = rsv in (True, "u") or (not respect and rsv == "vh" and m <= n)
    want_vh = rsv in (True, "vh") or (not respect and rsv == "u" and m > n)
    assert (u is not None) == want_u and (vh is not None) == want_vh
    if u is not None:
        assert u.shape == (m, 3) and np.allclose(np.linalg.norm(a.T @ u, axis=0), s)
    if vh is not None:
        assert vh.shape == (3, n) and np.allclose(np.linalg.norm(a @ vh.T, axis=0), s)


@pytest.mark.parametrize("shape", [(40, 25), (25, 40)])
def test_which_sm_dense(shape):
    a = rand_sparse(*shape, seed=9, density=0.3)
    u, s, vh, info = tcsolve.svds(a, k=4, which="SM", return_info=True)
    sd = np.linalg.svd(a.toarray(), compute_uv=False)
    np.testing.assert_allclose(s, np.sort(sd[-4:]), rtol=0, atol=1e-12 * sd[0])
    check_triplets(a, u, s, vh)
    assert "which='SM'" in info.method and info.status == "converged"


def test_which_sm_too_large_is_refused():
    a = sp.eye(5000, 4000, format="csr")  # 2e7 entries > 2**24
    with pytest.raises(NotImplementedError, match="which='SM' on a 5000x4000 matrix"):
        tcsolve.svds(a, k=2, which="SM")


def test_no_convergence_raises_with_the_partial_result():
    a = rand_sparse(400, 300, seed=2)
    with pytest.raises(sla.ArpackNoConvergence) as e:
        tcsolve.svds(a, k=6, maxiter=1, ncv=8)
    exc = e.value
    assert isinstance(exc, tcsolve.NoConvergence)
    assert exc.info.status == "not_converged" and exc.info.iterations == 1
    assert exc.u.shape == (400, 6) and exc.vh.shape == (6, 300) and exc.s.shape == (6,)
    assert "not_converged after 1 restarts" in str(exc)


def test_v0_and_random_state():
    rng = np.random.default_rng(0)
    a = rng.random((100, 100))
    v0a, v0b = rng.random(100), rng.random(100)
    r1 = tcsolve.svds(a, 1, v0=v0a, random_state=0)
    r2 = tcsolve.svds(a, 1, v0=v0a, random_state=1)  # k = 1: v0 is the whole start block
    for x, y in zip(r1, r2):
        np.testing.assert_array_equal(x, y)
    r3 = tcsolve.svds(a, 1, v0=v0b, random_state=0)
    assert not np.array_equal(r1[0], r3[0])  # another start: other rounding
    np.testing.assert_allclose(r1[1], r3[1], rtol=1e-13)
    g = np.random.default_rng(5)
    same = [tcsolve.svds(a, 3, random_state=copy.deepcopy(g))[1] for _ in range(2)]
    np.testing.assert_array_equal(same[0], same[1])
    g1, g2 = tcsolve.svds(a, 3, random_state=g)[0], tcsolve.svds(a, 3, random_state=g)[0]
    assert not np.array_equal(g1, g2)  # the Generator advanced


def test_v0_left_vector_of_a_wide_matrix():
    a = rand_sparse(80, 200, seed=4).toarray()
    u0 = np.linalg.svd(a)[0][:, 0]  # the exact left vector: A^T u0 starts V on v_1
    # the iteration asked for: the planner may price the dense SVD lower on a loaded machine
    u, s, vh, info = tcsolve.svds(a, 1, v0=u0, solver="arpack", return_info=True, options={"method": "gkl"})
    np.testing.assert_allclose(s, dense_ref(a, 1), rtol=1e-13)
    assert info.method.startswith("block GKL") and info.iterations == 1
    with pytest.raises(ValueError, match=r"`v0` must have shape \(80,\)"):
        tcsolve.svds(a, 1, v0=np.ones(200), solver="arpack")
    tcsolve.svds(a, 1, v0=np.ones(200), solver="tcsolve")  # tcsolve: n (right) or m (left)


BAD = [
    (dict(k=0), ValueError, "`k` must be an integer satisfying"),
    (dict(k=31), ValueError, r"0 < k <= min\(A.shape\)` \(k=31, A is 50x30"),
    (dict(k=30, solver="arpack"), ValueError, r"0 < k < min\(A.shape\)"),
    (dict(k=2.5), ValueError, "`k` must be an integer"),
    (dict(tol=-1), ValueError, "`tol` must be a non-negative"),
    (dict(tol=np.nan), ValueError, "`tol` must be a non-negative"),
    (dict(which="LA"), ValueError, "`which` must be in"),
    (dict(solver="ekki"), ValueError, "solver must be one of"),
    (dict(maxiter=0), ValueError, "`maxiter` must be a positive integer"),
    (dict(ncv=2, k=3), ValueError, "`ncv` must be an integer satisfying"),
    (dict(ncv=30, k=3, solver="arpack"), ValueError, r"`ncv` must be an integer satisfying.*A is 50x30"),
    (dict(v0=np.ones(7)), ValueError, "`v0` must have shape"),
    (dict(v0=np.ones(30, dtype=int)), ValueError, "`v0` must be of floating"),
    (dict(v0=np.ones(30) * 1j), TypeError, "v0 has complex dtype"),
    (dict(v0=np.full(30, np.nan)), ValueError, "v0 has a non-finite value"),
    (dict(return_singular_vectors="x"), ValueError, "`return_singular_vectors` must be in"),
    (dict(random_state="x"), ValueError, "random_state='x'"),
    (dict(options={"bad": 1}), ValueError, "options="),
    (dict(options={"method": "lanczos"}), ValueError, r"options\['method'\]='lanczos'"),
    (dict(block_size=0), ValueError, "block_size=0: must be at least 1"),
]


def test_method_keyword_chooses_the_method():
    a = rand_sparse(50, 30, seed=1)
    ref = dense_ref(a.toarray(), 3)
    for method, name in [("gkl", "block GKL"), ("dense", "dense")]:
        u, s, vh, info = tcsolve.svds(a, 3, return_info=True, options={"method": method})
        assert info.method.startswith(name) and "asked for" in info.method_reason
        np.testing.assert_allclose(s, ref, rtol=1e-12)


@pytest.mark.parametrize("kw, exc, msg", BAD)
def test_bad_arguments(kw, exc, msg):
    a = rand_sparse(50, 30, seed=1)
    kw = dict(kw)
    k = kw.pop("k", 3)
    with pytest.raises(exc, match=msg):
        tcsolve.svds(a, k, **kw)


@pytest.mark.parametrize("a, exc, msg", [
    (sp.random(20, 10, density=0.5, format="csr", random_state=0) * 1j, TypeError, "complex dtype"),
    (np.ones((5, 4), dtype=complex), TypeError, "complex dtype"),
    (sla.LinearOperator((5, 4), matvec=lambda x: x[:5], dtype=complex), TypeError, "complex dtype"),
    (np.ones(5), ValueError, "expected a 2-D matrix"),
    (np.ones((2, 3, 4)), ValueError, r"ndim <= 2"),
    (np.zeros((0, 3)), ValueError, "`A` must not be empty"),
    ("hi", TypeError, "type not understood"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), ValueError, r"non-finite value \(Inf\) at row 0, column 1"),
    (sla.LinearOperator((5, 4), matvec=lambda x: np.ones(5), dtype=float), TypeError, "without rmatvec"),
])
def test_bad_matrices(a, exc, msg):
    with pytest.raises(exc, match=msg):
        tcsolve.svds(a, k=1)


def test_operator_returning_a_wrong_shape():
    op = sla.LinearOperator((60, 50), matvec=lambda x: np.ones(60), rmatvec=lambda y: np.ones(50),
                            matmat=lambda x: np.ones((59, x.shape[1])), dtype=float)
    with pytest.raises(ValueError, match=r"A: the operator returned an array of shape \(59, \d+\)"):
        tcsolve.svds(op, k=2)
    op = sla.LinearOperator((60, 50), matvec=lambda x: np.ones(60), rmatvec=lambda y: np.full(50, np.nan),
                            dtype=float)
    with pytest.raises(ValueError, match=r"A\^T \(rmatmat\): the operator returned a non-finite value \(NaN\)"):
        tcsolve.svds(op, k=2)


def test_lobpcg_small_problem_warns_as_scipy():
    a = np.random.default_rng(0).random((10, 10))
    with pytest.warns(UserWarning, match="The problem size"):
        u, s, vh = tcsolve.svds(a, 3, solver="lobpcg")
    np.testing.assert_allclose(s, dense_ref(a, 3), rtol=1e-13)
