"""tcsolve.pca against the dense SVD of the explicitly centered matrix; SvdsResult.save against the
file `tcsolve svds --out` writes; CuPy input of svds and pca (marker gpu)."""
import os
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import tcsolve

EPS = np.finfo(float).eps


def counts(m, n, seed=0):
    """A non-negative sparse matrix with column means far from 0 (as single-cell counts)."""
    rng = np.random.default_rng(seed)
    a = sp.random(m, n, density=0.1, random_state=rng, format="csr", data_rvs=lambda s: rng.poisson(3, s) + 1.0)
    return a


def dense_pca(x, k, center=True):
    mu = x.mean(axis=0) if center else np.zeros(x.shape[1])
    xc = x - mu
    u, s, vt = np.linalg.svd(xc, full_matrices=False)
    return u[:, :k], s[:k], vt[:k], mu, (xc * xc).sum()


@pytest.mark.parametrize("shape", [(500, 120), (120, 400)])
@pytest.mark.parametrize("kind", ["csr", "csc", "dense"])
def test_centered_pca_against_dense(shape, kind):
    a = counts(*shape, seed=shape[0])
    x = {"csr": a, "csc": a.tocsc(), "dense": a.toarray()}[kind]
    p = tcsolve.pca(x, 6)
    u, s, vt, mu, total = dense_pca(a.toarray(), 6)
    assert isinstance(p, tcsolve.PCA) and p.info.status == "converged" and p.info.centered
    np.testing.assert_allclose(p.singular_values, s, rtol=0, atol=1e-10 * s[0])
    assert np.all(np.diff(p.singular_values) <= 0)  # descending, as sklearn
    np.testing.assert_allclose(p.mean, mu, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(p.explained_variance, s * s / (shape[0] - 1), rtol=1e-9)
    np.testing.assert_allclose(p.explained_variance_ratio, s * s / total, rtol=1e-9)
    assert p.components.shape == (6, shape[1]) and p.scores.shape == (shape[0], 6)
    # sklearn's signs: the largest |entry| of each component is positive
    big = p.components[np.arange(6), np.argmax(np.abs(p.components), axis=1)]
    assert np.all(big > 0)
    np.testing.assert_allclose(np.abs(p.components), np.abs(vt), atol=1e-8)
    xc = a.toarray() - mu
    np.testing.assert_allclose(p.scores, xc @ p.components.T, atol=1e-9 * s[0])  # scores = (X - mu) V
    np.testing.assert_allclose(p.scores, p.info.u[:, ::-1] * p.singular_values * np.sign(
        p.scores[0] / (p.info.u[0, ::-1] * p.singular_values)), atol=1e-9 * s[0])
    bound = p.info.tolerance * p.info.a_norm
    assert np.all(p.info.residual_av <= bound) and np.all(p.info.residual_atu <= bound)


def test_uncentered_pca_is_truncated_svd():
    a = counts(300, 90, seed=4)
    p = tcsolve.pca(a, 5, center=False)
    _, s, vt, _, total = dense_pca(a.toarray(), 5, center=False)
    np.testing.assert_allclose(p.singular_values, s, rtol=0, atol=1e-10 * s[0])
    np.testing.assert_allclose(p.explained_variance_ratio, s * s / total, rtol=1e-9)
    assert p.mean is None and not p.info.centered
    np.testing.assert_allclose(np.abs(p.components), np.abs(vt), atol=1e-8)


def test_pca_bad_inputs():
    a = counts(50, 20)
    with pytest.raises(TypeError, match="pca needs the entries of X"):
        tcsolve.pca(sla.aslinearoperator(a), 2)
    with pytest.raises(ValueError, match=r"k=21: must be at most min\(m, n\) = 20"):
        tcsolve.pca(a, 21)
    with pytest.raises(ValueError, match="k=0: must be at least 1"):
        tcsolve.pca(a, 0)
    with pytest.raises(TypeError, match="center='yes'"):
        tcsolve.pca(a, 2, center="yes")
    with pytest.raises(TypeError, match="complex dtype"):
        tcsolve.pca(a * 1j, 2)
    with pytest.raises(ValueError, match="tol=-1.0: must be at least 0"):
        tcsolve.pca(a, 2, tol=-1)


# ---- SvdsResult.save: the file of `tcsolve svds --out` ----------------------------------------------

def _cli():
    exe = os.environ.get("TCSOLVE_BIN")
    if not exe or not os.path.exists(exe):
        pytest.skip("the tcsolve command is not built (TCSOLVE_BIN)")
    return exe


@pytest.mark.parametrize("center", [False, True])
def test_save_matches_cli_file(tmp_path, center):
    h5py = pytest.importorskip("h5py")
    exe = _cli()
    import scipy.io as sio
    a = counts(400, 100, seed=8)
    sio.mmwrite(str(tmp_path / "a.mtx"), a)
    cmd = [exe, "svds", str(tmp_path / "a.mtx"), "--k", "4", "--device", "cpu", "--out", str(tmp_path / "cli.h5"),
           "--quiet"] + (["--center"] if center else [])
    subprocess.run(cmd, check=True, capture_output=True)
    info = tcsolve.pca(a, 4, center=center, tol=1e-8, device="cpu").info
    info.save(str(tmp_path / "py.h5"))
    with h5py.File(tmp_path / "cli.h5", "r") as fc, h5py.File(tmp_path / "py.h5", "r") as fp:
        names = set()
        fc.visit(names.add)
        pnames = set()
        fp.visit(pnames.add)
        assert names == pnames
        assert set(fc.attrs) - {"matrix_checksum", "time_read", "time_write"} <= set(fp.attrs)
        np.testing.assert_allclose(fp["s"][:], fc["s"][:], rtol=1e-12)
        np.testing.assert_allclose(np.abs(fp["Vt"][:]), np.abs(fc["Vt"][:]), atol=1e-7)
        for key in ("explained_variance", "explained_variance_ratio", "means") if center else ():
            np.testing.assert_allclose(fp[key][:], fc[key][:], rtol=1e-10)
        assert fp.attrs["centered"] == fc.attrs["centered"] and fp.attrs["task"] == "svds"


def test_save_layout_without_the_command(tmp_path):
    h5py = pytest.importorskip("h5py")
    a = counts(200, 60, seed=9)
    u, s, vh, info = tcsolve.svds(a, 3, return_info=True)
    info.save(str(tmp_path / "r.h5"))
    with h5py.File(tmp_path / "r.h5", "r") as f:
        np.testing.assert_array_equal(f["s"][:], s[::-1])  # the file holds the largest first
        np.testing.assert_array_equal(f["U"][:], u[:, ::-1])
        np.testing.assert_array_equal(f["Vt"][:], vh[::-1])
        assert f.attrs["status"] == "converged" and f.attrs["centered"] == "no" and f.attrs["k"] == 3
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


# ---- CuPy input (marker gpu) ----------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(600, 150), (150, 600)])
def test_svds_cupy_on_device(cp, csp, shape):
    a = counts(*shape, seed=21)
    u, s, vh, info = tcsolve.svds(csp.csr_matrix(a), k=5, return_info=True)
    assert isinstance(s, cp.ndarray) and isinstance(u, cp.ndarray) and info.backend == "cuda"
    ref = np.linalg.svd(a.toarray(), compute_uv=False)[:5][::-1]
    np.testing.assert_allclose(s.get(), ref, rtol=0, atol=1e-10 * ref[-1])
    r = np.linalg.norm(a @ vh.get().T - u.get() * s.get(), axis=0)
    assert np.all(r <= info.tolerance * info.a_norm + 1e-13 * ref[-1])
    ud, sd, vhd = tcsolve.svds(cp.asarray(a.toarray()), k=5)  # dense CuPy
    np.testing.assert_allclose(sd.get(), ref, rtol=0, atol=1e-10 * ref[-1])


@pytest.mark.gpu
def test_pca_cupy_centered(cp, csp):
    a = counts(800, 120, seed=22)
    p = tcsolve.pca(csp.csr_matrix(a), 4)
    q = tcsolve.pca(a, 4, device="cpu")
    np.testing.assert_allclose(p.singular_values.get(), q.singular_values, rtol=1e-10)
    np.testing.assert_allclose(p.explained_variance_ratio.get(), q.explained_variance_ratio, rtol=1e-9)
    np.testing.assert_allclose(p.mean.get(), q.mean, rtol=1e-13)
    np.testing.assert_allclose(p.components.get(), q.components, atol=1e-8)


def test_scale_standardizes_the_columns():
    # sklearn's StandardScaler then PCA: (X - mean) / std (ddof 1 here, as documented; constant
    # columns kept), against NumPy's SVD of the standardized dense matrix
    rng = np.random.default_rng(4)
    x = sp.random(400, 30, density=0.2, random_state=rng, format="csr") * 10
    x = sp.hstack([x, sp.csr_matrix(np.full((400, 1), 3.0))]).tocsr()
    d = x.toarray()
    sd = d.std(axis=0, ddof=1)
    sd[sd == 0] = 1.0
    z = (d - d.mean(axis=0)) / sd
    p = tcsolve.pca(x, 4, scale=True)
    ref = np.linalg.svd(z, compute_uv=False)[:4]
    np.testing.assert_allclose(p.singular_values, ref, rtol=0, atol=1e-10 * ref[0])
    np.testing.assert_allclose(p.info.scales, sd, rtol=1e-12)
    np.testing.assert_allclose(p.mean, d.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(p.explained_variance_ratio, ref**2 / (z**2).sum(), rtol=1e-9)
    q = tcsolve.pca(x, 4, center=False, scale=True)
    ref0 = np.linalg.svd(d / sd, compute_uv=False)[:4]
    np.testing.assert_allclose(q.singular_values, ref0, rtol=0, atol=1e-10 * ref0[0])
    np.testing.assert_allclose(q.explained_variance_ratio, ref0**2 / ((d / sd) ** 2).sum(), rtol=1e-9)
    with pytest.raises(TypeError, match="scale="):
        tcsolve.pca(x, 4, scale="yes")
