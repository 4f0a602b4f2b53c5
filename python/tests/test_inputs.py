"""Every accepted input kind gives the same answer: scipy.sparse matrices and arrays in every
format, float32/float64, int32/int64 indices, unsorted and duplicate entries, dense NumPy, a
LinearOperator (called back on the CPU), an object with shape + matvec."""
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve
from conftest import lap2d

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix

A = lap2d(20)  # 400 × 400, eigenvalues known
REF_SA = np.sort(sl.eigsh(A, k=4, which="SA", return_eigenvectors=False))
B = np.random.default_rng(5).standard_normal((400, 3))
X_REF = sl.spsolve(A.tocsc(), B)


def variants():
    yield "csr", A
    yield "csc", A.tocsc()
    yield "coo", A.tocoo()
    yield "lil", A.tolil()
    yield "bsr", A.tobsr()
    yield "dia", A.todia()
    if hasattr(sp, "csr_array"):
        yield "csr_array", sp.csr_array(A)
        yield "coo_array", sp.coo_array(A)
    yield "float32", A.astype(np.float32)
    c = A.copy()
    c.indices = c.indices.astype(np.int64)
    c.indptr = c.indptr.astype(np.int64)
    yield "int64_indices", c
    yield "dense", A.toarray()
    yield "matrix", np.asmatrix(A.toarray())
    yield "linear_operator", sl.aslinearoperator(A)
    yield "matvec_only_operator", sl.LinearOperator(A.shape, matvec=lambda x: A @ x, dtype=np.float64)

    class Duck:  # anything with shape and matvec, as SciPy accepts
        shape = A.shape
        dtype = np.dtype(np.float64)

        def matvec(self, x):
            return A @ x
    yield "duck", Duck()
    # unsorted column indices and duplicates (summed), as scipy allows
    coo = A.tocoo()
    rows = np.concatenate([coo.row, coo.row[:50]])
    cols = np.concatenate([coo.col, coo.col[:50]])
    vals = np.concatenate([coo.data, np.zeros(50)])
    perm = np.random.default_rng(6).permutation(len(rows))
    yield "duplicates_unsorted", sp.coo_matrix((vals[perm], (rows[perm], cols[perm])), shape=A.shape)


@pytest.mark.parametrize("kind,mat", list(variants()), ids=[k for k, _ in variants()])
def test_eigsh_every_input(kind, mat):
    w, v, info = tcsolve.eigsh(mat, k=4, which="SA", return_info=True)
    np.testing.assert_allclose(w, REF_SA, rtol=0, atol=1e-10 * 8)
    np.testing.assert_allclose(np.linalg.norm(A @ v - v * w, axis=0), info.residual_norms, rtol=1e-5, atol=1e-13)
    if "operator" in kind or kind == "duck":
        assert info.spmm_kernel == "python" and info.backend == "cpu"


@pytest.mark.parametrize("kind,mat", list(variants()), ids=[k for k, _ in variants()])
def test_cg_every_input(kind, mat):
    x, info = tcsolve.cg(mat, B, rtol=1e-11)
    assert info == 0
    np.testing.assert_allclose(x, X_REF, rtol=0, atol=1e-8 * np.abs(X_REF).max())


def test_input_is_not_modified():
    coo = A.tocoo()
    dup = sp.csr_matrix((np.concatenate([coo.data, [0.0]]),
                         (np.concatenate([coo.row, [0]]), np.concatenate([coo.col, [0]]))), shape=A.shape)
    dup.has_canonical_format = False
    before = (dup.data.copy(), dup.indices.copy(), dup.indptr.copy())
    tcsolve.eigsh(dup, k=3, which="LA")  # k = 2 would cut a double eigenvalue
    assert all(np.array_equal(x, y) for x, y in zip(before, (dup.data, dup.indices, dup.indptr)))


def test_operator_mass_and_matrix_mix():
    m = sp.diags(np.linspace(1, 2, 400), format="csr")
    ref = np.sort(sl.eigsh(A, k=3, M=m, which="LA", return_eigenvectors=False))
    w = tcsolve.eigsh(sl.aslinearoperator(A), k=3, M=m, which="LA", return_eigenvectors=False)
    np.testing.assert_allclose(w, ref, rtol=1e-9)


def test_operator_exception_propagates():
    def bad(x):
        raise RuntimeError("boom from matvec")
    op = sl.LinearOperator(A.shape, matvec=bad, dtype=np.float64)
    with pytest.raises(RuntimeError, match="boom from matvec"):
        tcsolve.eigsh(op, k=2, which="LA")


def test_operator_wrong_output_shape():
    op = sl.LinearOperator(A.shape, matvec=lambda x: np.ones(3), dtype=np.float64)
    with pytest.raises(ValueError):
        tcsolve.eigsh(op, k=2, which="LA")


def test_operator_nan_output():
    calls = {"n": 0}

    def mv(x):
        calls["n"] += 1
        y = A @ x
        if calls["n"] > 6:  # after the symmetry probe
            y[7] = np.nan
        return y
    op = sl.LinearOperator(A.shape, matvec=mv, dtype=np.float64)
    with pytest.raises(ValueError, match=r"non-finite value \(NaN\) at row 7"):
        tcsolve.cg(op, np.ones(400))


def test_gil_released_during_solve():
    """A pure-Python thread keeps running while a solve runs in another thread (the GIL is
    released; only a per-iteration signal check takes it back, for microseconds)."""
    a = lap2d(160)  # 25 600 rows: a solve of about a second
    b = np.random.default_rng(7).standard_normal((a.shape[0], 4))
    stamps = []
    done = threading.Event()

    def solve():
        t0 = time.perf_counter()
        tcsolve.cg(a, b, rtol=1e-10, device="cpu")
        stamps.append(("solve", time.perf_counter() - t0))
        done.set()

    th = threading.Thread(target=solve)
    ticks = [time.perf_counter()]
    th.start()
    while not done.is_set():
        for _ in range(2000):
            pass
        ticks.append(time.perf_counter())
    th.join()
    solve_s = stamps[0][1]
    gaps = np.diff(ticks)
    assert solve_s > 0.2, f"solve too short ({solve_s:.3f} s) to tell"
    # with the GIL held for the whole solve the main thread would stall for about solve_s
    assert gaps.max() < 0.25 * solve_s, (gaps.max(), solve_s)
    assert len(ticks) > 100
