"""tcsolve.pca: principal components of a sparse (or dense, or CuPy) data matrix by tcsolve's block
Golub-Kahan-Lanczos on the implicitly centered matrix X − 1·μᵀ (never formed: X stays sparse)."""

import time as _time
from typing import Any, NamedTuple

import numpy as np

from . import _args
from ._svds import finish, operand, options_dict, run, seed_from


class PCA(NamedTuple):
    """What :func:`pca` returns (a named tuple: fields by name or by unpacking), largest first.

    scores                    m × k, U·diag(s): the samples in component coordinates (sklearn's
                              ``fit_transform``, scanpy's ``obsm['X_pca']``)
    components                k × n, Vᵀ: the principal axes as rows (sklearn's ``components_``;
                              scanpy's ``varm['PCs']`` is its transpose, the loadings)
    singular_values           k, descending
    explained_variance        k, s²/(m − 1)
    explained_variance_ratio  k, s²/‖X − 1·μᵀ‖_F² (centered: the fraction of the total
                              variance, sklearn's); center=False: s²/‖X‖_F²
    mean                      n column means μ (center=False: None)
    info                      the SvdsResult (residuals, iterations, timings; ``save`` writes the
                              file of ``tcsolve svds --center --out``)
    """
    scores: Any
    components: Any
    singular_values: Any
    explained_variance: Any
    explained_variance_ratio: Any
    mean: Any
    info: Any


def pca(X, k, center=True, *, scale=False, tol=0, maxiter=None, ncv=None, random_state=None, device="auto",
        block_size=None):
    """The k leading principal components of X (m samples × n features: any scipy.sparse matrix,
    dense NumPy array or CuPy matrix; real), largest first.

    scale=True divides each column by its standard deviation first (ddof 1; constant columns are
    left as they are: sklearn's StandardScaler), on a scaled copy of X's values (host input only);
    ``info.scales`` holds the n scales, ``mean`` stays in X's units.
    center=True subtracts the column means implicitly (X − 1·μᵀ is applied as X·x − 1·(μᵀx), so a
    sparse X stays sparse); center=False is a truncated SVD of X itself (sklearn's TruncatedSVD).
    Signs are fixed as sklearn's (``svd_flip`` on the components): the entry of largest magnitude
    of each component is positive. tol, maxiter, ncv, random_state, device, block_size: as
    :func:`svds` (tol=0: 4096ε relative to s₁, the block GKL's floor). 1 <= k <= min(m, n).
    A LinearOperator is refused (TypeError): the explained variance ratio needs X's entries.
    Not converged: raises :class:`NoConvergence`, as svds.
    """
    t0 = _time.perf_counter()
    k = _args.integer(k, "k", 1)
    tol = _args.number(tol, "tol")
    if tol < 0:
        raise ValueError(f"tol={tol!r}: must be at least 0")
    if not isinstance(center, (bool, np.bool_)):
        raise TypeError(f"center={center!r}: expected True or False")
    if not isinstance(scale, (bool, np.bool_)):
        raise TypeError(f"scale={scale!r}: expected True or False")
    a = operand(X)
    if scale and a.kind == "device":
        raise ValueError("scale=True scales a copy of X's values on the host: pass a scipy.sparse matrix or a "
                         "NumPy array (or scale the CuPy matrix first)")
    if a.kind == "operator":
        raise TypeError("pca needs the entries of X (the column means and the total variance): pass a "
                        "scipy.sparse matrix, a NumPy array or a CuPy matrix, or use tcsolve.svds on an operator")
    if k > min(a.m, a.n):
        raise ValueError(f"k={k}: must be at most min(m, n) = {min(a.m, a.n)} (X is {a.m}x{a.n})")
    if ncv is not None:
        ncv = _args.integer(ncv, "ncv", k + 1)
    opt = options_dict(a, k, tol, maxiter, seed_from(random_state), device, block_size, ncv, bool(center))
    opt["scale"] = bool(scale)
    command = _args.call_repr("pca", k=k, center=bool(center), scale=bool(scale), tol=tol, maxiter=maxiter, ncv=ncv,
                              device=device, block_size=block_size)
    res = run(a, opt)
    info = finish(res, a, t0, command, "largest", k)
    return _assemble(a, info, bool(center))


def _assemble(a, info, center):
    """Descending order, sklearn's signs, the variance fields."""
    s = info.singular_values[::-1].copy()
    u = info.u[:, ::-1]
    vt = info.vt[::-1]
    big = np.argmax(np.abs(vt), axis=1)
    signs = np.sign(vt[np.arange(vt.shape[0]), big])
    signs[signs == 0] = 1.0
    vt = np.ascontiguousarray(vt * signs[:, None])
    scores = np.ascontiguousarray(u * (signs * s))
    total = info.total_sq if center else _frobenius_sq(a, getattr(info, "scales", None))
    ev = s * s / max(a.m - 1, 1)
    evr = s * s / total if total > 0 else np.zeros_like(s)
    mean = np.asarray(info.means) if center else None
    if a.kind == "device":
        import cupy
        scores, vt, s, ev, evr = (cupy.asarray(x) for x in (scores, vt, s, ev, evr))
        mean = None if mean is None else cupy.asarray(mean)
    return PCA(scores, vt, s, ev, evr, mean, info)


def _frobenius_sq(a, scales=None):
    if a.kind == "device":
        return a.frobenius_sq()
    if scales is not None and len(scales):  # ‖X·diag(1/s)‖_F²
        return float(np.dot(np.bincount(a.indices, weights=a.data * a.data, minlength=a.n), 1.0 / np.square(scales)))
    return float(np.dot(a.data, a.data))
