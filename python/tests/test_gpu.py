"""GPU tests (marker gpu; CTest python_gpu, label gpu): CuPy sparse and dense input used on the
device without a host copy (spmm/device_csr_view.hpp), results as CuPy arrays; SciPy input with
device='cuda'. Skipped without CuPy, a GPU or a CUDA build of tcsolve (the fixtures cp and csp,
conftest.py)."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sl

import tcsolve
from conftest import lap2d, suitesparse

pytestmark = pytest.mark.gpu


def scale_of(a):
    return float(np.abs(sl.eigsh(a, k=1, return_eigenvectors=False)).max())


def test_eigsh_cupy_csr_results_on_device(cp, csp):
    a = lap2d(60)
    ad = csp.csr_matrix(a)
    w, v, info = tcsolve.eigsh(ad, k=6, which="SA", return_info=True)
    assert isinstance(w, cp.ndarray) and isinstance(v, cp.ndarray) and v.shape == (3600, 6)
    ref = np.sort(sl.eigsh(a, k=6, which="SA", return_eigenvectors=False))
    np.testing.assert_allclose(w.get(), ref, rtol=0, atol=1e-10 * scale_of(a))
    r = cp.linalg.norm(ad @ v - v * w, axis=0).get()  # recomputed with CuPy/cuSPARSE
    np.testing.assert_allclose(r, info.residual_norms, rtol=1e-5, atol=1e-12)
    assert info.backend == "cuda" and info.spmm_kernel == "csr_view"


def formats(cp, csp, a):
    yield "csr", csp.csr_matrix(a)
    yield "csc", csp.csc_matrix(a)
    yield "coo", csp.coo_matrix(a)
    yield "float32", csp.csr_matrix(a.astype(np.float32))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "float32"])
def test_eigsh_cupy_formats(cp, csp, fmt):
    a = suitesparse("bcsstk05") if fmt != "float32" else lap2d(30)
    ad = dict(formats(cp, csp, a))[fmt]
    w = tcsolve.eigsh(ad, k=4, which="LA", return_eigenvectors=False)
    ref = np.sort(sl.eigsh(a.astype(np.float64) if fmt != "float32" else a.astype(np.float32).astype(np.float64),
                           k=4, which="LA", return_eigenvectors=False))
    np.testing.assert_allclose(w.get(), ref, rtol=0, atol=1e-10 * scale_of(a))


def test_eigsh_cupy_dense(cp):
    a = lap2d(15)
    w, v = tcsolve.eigsh(cp.asarray(a.toarray()), k=3, which="SA")
    np.testing.assert_allclose(w.get(), np.sort(np.linalg.eigvalsh(a.toarray()))[:3], atol=1e-12)


def test_generalized_cupy(cp, csp):
    a = lap2d(30)
    m = sp.diags(np.linspace(1.0, 3.0, 900), format="csr")
    w, v = tcsolve.eigsh(csp.csr_matrix(a), k=3, M=csp.csr_matrix(m), which="LA")
    ref = np.sort(sl.eigsh(a, k=3, M=m, which="LA", return_eigenvectors=False))
    np.testing.assert_allclose(w.get(), ref, rtol=1e-9)


def test_no_copy_of_canonical_input(cp, csp):
    from tcsolve import _inputs
    ad = csp.csr_matrix(lap2d(20))
    m = _inputs.as_matrix(ad, "A")
    assert m.data.data.ptr == ad.data.data.ptr  # values used in place
    assert m.indices.data.ptr == ad.indices.data.ptr


def test_cg_cupy_block(cp, csp):
    a = lap2d(80)
    ad = csp.csr_matrix(a)
    b = cp.asarray(np.random.default_rng(1).standard_normal((6400, 8)))
    x, info, res = tcsolve.cg(ad, b, rtol=1e-10, return_info=True)
    assert info == 0 and isinstance(x, cp.ndarray) and x.shape == (6400, 8)
    r = (cp.linalg.norm(b - ad @ x, axis=0) / cp.linalg.norm(b, axis=0)).get()
    assert np.all(r <= 1e-10), r
    np.testing.assert_allclose(r, res.residual_norms, rtol=1e-4, atol=1e-16)
    assert res.backend == "cuda"
    # one right-hand side, x0
    x1, info = tcsolve.cg(ad, b[:, 0], x0=x[:, 0] * 0.5, rtol=1e-10)
    assert info == 0 and x1.shape == (6400,)
    np.testing.assert_allclose(x1.get(), x[:, 0].get(), atol=1e-7 * float(cp.abs(x[:, 0]).max()))


def test_cg_mixed_precision_answers_in_fp64(cp, csp):
    # precision='auto' on the GPU: fp32 iterations inside fp64 refinement (CuPy arrays: A's values
    # rounded on the device; SciPy input: the operator's copy), the residuals fp64 on A.
    a = lap2d(80)
    b = np.random.default_rng(2).standard_normal((6400, 8))
    for A, B in ((csp.csr_matrix(a), cp.asarray(b)), (a, b)):
        x, info, res = tcsolve.cg(A, B, rtol=1e-10, M="none", return_info=True)  # precision='auto' 
        assert info == 0
        assert res.precision_used.startswith("fp32 iterations inside fp64 refinement"), res.precision_used
        xh = x.get() if isinstance(x, cp.ndarray) else x
        r = np.linalg.norm(b - a @ xh, axis=0) / np.linalg.norm(b, axis=0)
        assert np.all(r <= 1e-10), r
    x, info, res = tcsolve.cg(csp.csr_matrix(a), cp.asarray(b), rtol=1e-10, M="none", precision="fp64",
                              return_info=True)
    assert info == 0 and res.precision_used == "fp64"


def test_scipy_input_on_cuda(cp):
    a = suitesparse("nos5")
    w, v, info = tcsolve.eigsh(a, k=4, which="LA", device="cuda", return_info=True)
    assert isinstance(w, np.ndarray) and info.backend == "cuda"
    ref = np.sort(sl.eigsh(a, k=4, which="LA", return_eigenvectors=False))
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-10 * scale_of(a))
    x, info = tcsolve.cg(lap2d(50), np.ones((2500, 4)), rtol=1e-10, device="cuda")
    assert info == 0 and np.all(np.linalg.norm(np.ones((2500, 4)) - lap2d(50) @ x, axis=0) <= 1e-10 * 50)


def test_bad_gpu_input(cp, csp):
    a = lap2d(10).tolil()
    a[0, 5] = 3.0
    with pytest.raises(ValueError, match=r"A is not symmetric \(max \|a_ij - a_ji\| / max \|a\| = 0.75\)"):
        tcsolve.eigsh(csp.csr_matrix(a.tocsr()), k=2)
    b = lap2d(10)
    b.data[b.indptr[4]] = np.nan
    with pytest.raises(ValueError, match=r"A has a non-finite value \(NaN\) at row 4"):
        tcsolve.cg(csp.csr_matrix(b), cp.ones(100))
    with pytest.raises(TypeError, match="k = 100 >= n = 100"):  # as SciPy for sparse input
        tcsolve.eigsh(csp.csr_matrix(lap2d(10)), k=100)
    with pytest.raises(ValueError, match="device='cpu' with CuPy input"):
        tcsolve.eigsh(csp.csr_matrix(lap2d(10)), k=2, device="cpu")
    with pytest.raises(ValueError, match="b has length 99 but A has 100 rows"):
        tcsolve.cg(csp.csr_matrix(lap2d(10)), cp.ones(99))


@pytest.mark.gpu
def test_cupy_input_not_canonical_and_nonfinite_blocks(cp, csp):
    # A CuPy csr_matrix with a row out of order and a duplicated entry (the device check names
    # the row; CuPy's sum_duplicates runs on a copy): the same answer as the canonical matrix,
    # and the caller's arrays untouched.
    a = lap2d(12).tocsr()
    indptr, indices, data = a.indptr.copy(), a.indices.copy(), a.data.copy()
    p = indptr[7]
    indices[p], indices[p + 1] = indices[p + 1], indices[p]
    data[p], data[p + 1] = data[p + 1], data[p]
    q = indptr[20]  # split a_20,20 into two stored halves (a duplicate)
    indices = np.insert(indices, q, indices[q])
    d20 = data[q]
    data = np.insert(data, q, 0.5 * d20)
    data[q + 1] = 0.5 * d20
    indptr[21:] += 1
    raw = csp.csr_matrix((cp.asarray(data), cp.asarray(indices), cp.asarray(indptr)), shape=a.shape)
    before = raw.indices.get().copy()
    w = tcsolve.eigsh(raw, k=3, which="LA", return_eigenvectors=False)
    ref = tcsolve.eigsh(csp.csr_matrix(a), k=3, which="LA", return_eigenvectors=False)
    np.testing.assert_allclose(np.sort(w.get()), np.sort(ref.get()), rtol=0, atol=1e-10 * 8)
    np.testing.assert_array_equal(raw.indices.get(), before)
    # a C-ordered right-hand-side block with a NaN: refused with its place
    b = np.random.default_rng(3).standard_normal((144, 4))
    b[17, 2] = np.nan
    with pytest.raises(ValueError, match=r"b has a non-finite value \(NaN\) at row 17, column 2"):
        tcsolve.cg(csp.csr_matrix(a), cp.asarray(b))


@pytest.mark.gpu
def test_cg_default_preconditioner_on_the_gpu(cp, csp):
    # M=None is 'auto': the polynomial for a large matrix with short rows and a constant diagonal
    # (lap3d:51, 132651 rows), Jacobi below 131072 rows or with a varying diagonal.
    n = 51
    t = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    i = sp.identity(n, format="csr")
    a = (sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t)).tocsr()
    assert a.shape[0] >= 131072
    b = np.random.default_rng(24).standard_normal((a.shape[0], 2))
    x, info, r = tcsolve.cg(csp.csr_matrix(a), cp.asarray(b), rtol=1e-9, return_info=True)
    assert info == 0 and r.preconditioner.startswith("chebyshev degree "), r.preconditioner
    assert r.preconditioner.endswith("(auto: short rows, a constant diagonal, on the GPU)")
    # as the command's: the polynomial's steps on A's values rounded to fp32 (on the device, the
    # caller's index arrays in place) and fp32 blocks; CG's residuals stay fp64 on A
    assert "on the caller's arrays, A's values in fp32, fp32 blocks" in r.preconditioner, r.preconditioner
    res = np.linalg.norm(b - a @ x.get(), axis=0) / np.linalg.norm(b, axis=0)
    assert np.all(res <= 1e-9)
    x, info, r = tcsolve.cg(a, b, rtol=1e-9, device="cuda", return_info=True)  # SciPy input, GPU
    assert info == 0 and r.preconditioner.startswith("chebyshev degree "), r.preconditioner
    d = a.copy()
    d.setdiag(a.diagonal() * (1.0 + 0.1 * np.random.default_rng(25).random(a.shape[0])))
    x, info, r = tcsolve.cg(csp.csr_matrix(d), cp.asarray(b), rtol=1e-9, return_info=True)
    assert r.preconditioner == "jacobi (auto: not the Chebyshev polynomial, for a diagonal that varies (Jacobi scaling))"
    x, info, r = tcsolve.cg(csp.csr_matrix(lap2d(80)), cp.ones(6400), rtol=1e-9, return_info=True)
    assert r.preconditioner == "jacobi (auto: not the Chebyshev polynomial, for fewer than 131072 rows)"


@pytest.mark.gpu
def test_cg_cupy_chebyshev_preconditioner(cp, csp):
    a = lap2d(80)
    b = np.random.default_rng(22).standard_normal((a.shape[0], 3))
    x, info, r = tcsolve.cg(csp.csr_matrix(a), cp.asarray(b), rtol=1e-10, M="chebyshev", return_info=True)
    assert info == 0 and r.preconditioner.startswith("chebyshev degree ")
    res = np.linalg.norm(b - a @ x.get(), axis=0) / np.linalg.norm(b, axis=0)
    assert np.all(res <= 1e-10)
