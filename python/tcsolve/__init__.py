"""tcsolve: block eigensolvers and block CG for large sparse symmetric matrices, from Python.

Drop-in for the symmetric solvers of ``scipy.sparse.linalg`` (same parameter names and meanings)::

    import tcsolve, scipy.sparse as sp
    w, v = tcsolve.eigsh(A, k=6, which='SA')          # k smallest eigenpairs
    w, v = tcsolve.eigsh(A, k=6, sigma=0.5)           # nearest 0.5 (shift-invert)
    w, v = tcsolve.lobpcg(A, X, B=M, largest=False)   # generalized, start block X
    x, info = tcsolve.cg(A, B, rtol=1e-8)             # B n×s: all right-hand sides at once

Inputs: any scipy.sparse matrix or array (csr/csc/coo/..., float32/64, int32/64 indices), a dense
NumPy array, a ``LinearOperator`` (CPU backend; the solver calls its ``matmat`` back), or CuPy
sparse/dense arrays (used on the GPU without a host copy; results come back as CuPy arrays).

tcsolve's own keywords: ``method`` ('auto', 'lanczos', 'lobpcg', 'chebyshev', 'dense'; auto: the
plan with the fewest predicted seconds, named with why in ``Result.method_reason``), ``certify``
(always verify the set by a Sylvester count; by default only when it costs at most 15 % of the
solve, else a cheaper re-check), ``device`` ('auto', 'cpu', 'cuda'), ``precision`` ('auto': A in fp64 and, for eigsh on the GPU, the
Chebyshev filter on fp32 blocks where safe, for cg on the GPU (Jacobi or no preconditioner, at most
32 columns) block CG's iterations on fp32 blocks inside fp64 refinement; every answer checked in
fp64 (the precision ladder, reported in ``Result.precision_used``);
'fp64' throughout; or A rounded for the sparse product:
'fp32', GPU only 'fp16', 'bf16'), ``block_size``, ``conv`` (convergence test: 'rel', 'norm', 'abs'), ``seed`` and
``return_info=True``, which appends a :class:`Result` (status, iterations, true residuals, history,
timings: the fields of ``tcsolve eigs|solve --out FILE.h5``) to what is returned.

Errors: ``ValueError`` for bad input (non-square, non-symmetric, NaN/Inf, k >= n, wrong lengths,
unknown option values, and SciPy's own argument rules with its exception types), ``TypeError``
for inputs of the wrong kind, ``NotImplementedError`` for what this build or input kind lacks
(e.g. CUDA; see the README's Python section).

Not converging: :func:`eigsh` and :func:`lobpcg` raise :class:`NoConvergence` (a subclass of
SciPy's ``ArpackNoConvergence``) carrying the partial eigenpairs and the :class:`Result` in
``.info`` -- also with ``return_info=True``; :func:`cg` returns ``info > 0`` as SciPy's ``cg`` does
(and ``Result.status``); a matrix that turns out not to be positive definite raises ValueError.

The GIL is released while a solver runs (a ``LinearOperator`` takes it back for its products);
Ctrl-C stops a solve between iterations.
"""

import time as _time

import numpy as _np

try:
    from . import _tcsolve
except ImportError as e:  # pragma: no cover - a build problem, say what to do
    raise ImportError(f"tcsolve's extension module could not be loaded ({e}); build it with "
                      "`cmake --build build` and put build/python on PYTHONPATH, or `cmake --install`") from e

from . import _inputs
from ._result import History, Lazy as _Lazy, NoConvergence, Result
from . import _spectral

__all__ = ["eigsh", "lobpcg", "cg", "Result", "History", "NoConvergence", "built_with_cuda",
           "device_count", "__version__"]
__version__ = _tcsolve.__version__

_DEVICES = ("auto", "cpu", "cuda")
_PRECISIONS = ("auto", "fp64", "fp32", "fp16", "bf16")
_METHODS = tuple(_tcsolve.eigs_method_names())  # the C++ driver's list (solvers/eigs/eigs.hpp)
_CONV_TESTS = ("rel", "norm", "abs")
_DEFAULT_TOL = 1e-8  # tcsolve's default convergence tolerance (solvers/eigs/eigs.hpp, block_cg.hpp)


def built_with_cuda():
    """True when this build has the CUDA backend."""
    return bool(_tcsolve.built_with_cuda())


def device_count():
    """Usable CUDA devices (0 without CUDA)."""
    return int(_tcsolve.device_count())


# ---- argument checks (messages as the command line's) ------------------------------------------

def _choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        expected = ", ".join(choices[:-1]) + " or " + choices[-1]
        raise ValueError(f"{name}={value!r}: expected {expected}")
    return value


def _int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, _np.integer)):
        raise TypeError(f"{name}={value!r}: expected an integer")
    if value < minimum:
        raise ValueError(f"{name}={value}: must be at least {minimum}")
    return int(value)


def _tol(value, name):
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name}={value!r}: expected a number") from None
    if not (0 < t < 1):
        raise ValueError(f"{name}={value!r}: expected 0 < {name} < 1")
    return t


def _not_supported(**kw):
    for k, v in kw.items():
        if v is not None:
            raise NotImplementedError(f"{k} is not supported by tcsolve (use scipy.sparse.linalg for it)")


def _backend(device, kind, precision):
    """'cpu' or 'cuda' for this input; checks the combinations the solvers cannot run."""
    _choice(device, "device", _DEVICES)
    _choice(precision, "precision", _PRECISIONS)
    if kind == "device":
        if device == "cpu":
            raise ValueError("device='cpu' with CuPy input: the arrays live on the GPU (pass NumPy/SciPy "
                             "input for the CPU)")
        if not built_with_cuda():
            raise NotImplementedError("CuPy input needs the CUDA backend: tcsolve was built without CUDA")
        return "cuda"
    if kind == "operator":
        if device == "cuda":
            raise ValueError("a LinearOperator runs on the CPU backend (device='cpu'): its matvec is "
                             "Python code on host arrays")
        backend = "cpu"
    else:
        backend = _tcsolve.resolve_device(device)
    if backend == "cpu" and precision in ("fp16", "bf16"):
        raise ValueError(f"precision={precision!r} needs the GPU (the CPU operator stores fp64 or fp32)")
    return backend


def _call_repr(fname, **kw):
    parts = [f"{k}={v!r}" for k, v in kw.items() if v is not None]
    return f"tcsolve.{fname}(A, " + ", ".join(parts) + ")"


def _xp(kind):
    if kind == "device":
        import cupy
        return cupy
    return _np


def _sync_cupy():
    import cupy
    cupy.cuda.get_current_stream().synchronize()


# ---- eigenproblems -----------------------------------------------------------------------------

def _prepare_eigs(A, M, k, name_m, mass_definite=True):
    a = _inputs.as_matrix(A, "A")
    n = a.n
    if k >= n and k > 0:
        raise ValueError(f"k = {k} is too large for A with n = {n} (need k < n)")
    a.check_symmetric("A")
    b = None
    if M is not None:
        b = _inputs.as_matrix(M, name_m)
        if b.n != n:
            raise ValueError(f"mass matrix {name_m} is {b.n} x {b.n} but A is {n} x {n}")
        b.check_symmetric(name_m)
        if b.kind != "operator" and mass_definite:
            d = b.diagonal()
            bad = _np.flatnonzero(_np.asarray(d.get() if b.kind == "device" else d) <= 0)
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"mass matrix {name_m} is not positive definite "
                                 f"({name_m.lower()}_ii = {float(d[i]):g} at row {i})")
        if (a.kind == "device") != (b.kind == "device"):
            raise TypeError(f"A and {name_m} must both be CuPy (GPU) or both host (NumPy/SciPy/LinearOperator)")
    return a, b


def _run_eigs(a, b, opt, precond_op=None):
    """One C++ solve -> result dict (host NumPy arrays)."""
    if a.kind == "device":
        if precond_op is not None:
            raise NotImplementedError("a preconditioner operator M with CuPy input is not supported")
        opt = dict(opt, a_norm=a.inf_norm())  # ‖A‖∞ by CuPy: one number crosses to the host
        pb, nnz_b = None, 0
        if b is not None:
            opt.update(b_norm=b.inf_norm())
            pb, nnz_b = b.ptrs(), b.nnz
        _sync_cupy()
        return _tcsolve.eigs_device(a.n, a.nnz, a.ptrs(), pb, nnz_b, opt)
    pre = None if precond_op is None else precond_op.matmat
    if a.kind == "operator" or (b is not None and b.kind == "operator"):
        fa = a.matmat if a.kind == "operator" else _inputs.Operator(a.scipy_op(), "A").matmat
        fb = None
        if b is not None:
            fb = b.matmat if b.kind == "operator" else _inputs.Operator(b.scipy_op(), "M").matmat
        return _tcsolve.eigs_operator(a.n, fa, fb, pre, opt)
    mass = None if b is None else (b.indptr, b.indices, b.data)
    return _tcsolve.eigs_csr(a.n, a.indptr, a.indices, a.data, mass, pre, opt)


_STATUS_RANK = {"converged": 0, "unverified": 1, "not_converged": 2, "breakdown": 3}


def _concat_history(h1, h2):
    def pad(r, c):
        r = _np.asarray(r, dtype=float).reshape(len(r), -1) if len(r) else _np.zeros((0, c))
        out = _np.full((r.shape[0], c), _np.nan)
        out[:, : r.shape[1]] = r
        return out

    out = {}
    for key in h1:
        if key in ("residual_norms", "values"):
            a1, a2 = _np.asarray(h1[key]), _np.asarray(h2.get(key, _np.zeros((0, 0))))
            c = max(a1.shape[1] if a1.ndim == 2 else 0, a2.shape[1] if a2.ndim == 2 else 0)
            out[key] = _np.vstack([pad(a1, c), pad(a2, c)])
        elif key == "ortho":
            out[key] = list(h1[key]) + list(h2[key])
        elif key == "iteration":
            last = int(h1[key][-1]) if len(h1[key]) else 0
            out[key] = _np.concatenate([h1[key], _np.asarray(h2[key]) + last])
        else:
            out[key] = _np.concatenate([h1[key], h2[key]])
    return out


def _largest_magnitude(a, b, opt, k):
    """which='LM' without sigma: the k largest |λ| lie among the k largest and the k smallest
    algebraic eigenvalues. Runs the largest end; runs the smallest end too unless Gershgorin's
    bound shows that no eigenvalue below zero can beat the k-th largest (e.g. any diagonally
    dominant matrix with a non-negative diagonal), then keeps the k of largest magnitude."""
    la = _run_eigs(a, b, dict(opt, which="largest"))
    vals = la["eigenvalues"]
    if len(vals) == k and vals.min() >= 0 and b is None and a.kind != "operator":
        if a.gershgorin_lower() >= -vals.min():
            la["method_reason"] = (la.get("method_reason", "") + "; which='LM': largest end only (Gershgorin: no eigenvalue "
                         "below -lambda_k)").lstrip("; ")
            return la
    k_sa = min(k, a.n - k)
    sa = _run_eigs(a, b, dict(opt, which="smallest", k=k_sa))
    allv = _np.concatenate([la["eigenvalues"], sa["eigenvalues"]])
    order = _np.argsort(-_np.abs(allv), kind="stable")[:k]
    merged = dict(la)
    for key in ("eigenvalues", "residual_norms", "residual_bounds", "error_bounds"):
        both = _np.concatenate([_np.asarray(la[key]), _np.asarray(sa[key])])
        merged[key] = both[order] if both.size == allv.size else both
    merged["eigenvectors"] = _np.hstack([la["eigenvectors"], sa["eigenvectors"]])[:, order]
    merged["status"] = max(la["status"], sa["status"], key=lambda s: _STATUS_RANK.get(s, 9))
    merged["reason"] = "; ".join(r for r in (la["reason"], sa["reason"]) if r)
    for key in ("iterations", "operator_applies", "time_setup", "time_solve", "time_verify"):
        merged[key] = la.get(key, 0) + sa.get(key, 0)
    merged["history"] = _concat_history(la["history"], sa["history"])
    merged["method_reason"] = (la.get("method_reason", "") + "; which='LM': largest and smallest ends merged by |lambda|").lstrip("; ")
    return merged


def _finish_eigs(res, a, b, t0, command, which_name, k, order, return_eigenvectors, return_info,
                 extra=()):
    """Orders the pairs, builds the Result, raises NoConvergence or returns SciPy's tuple."""
    vals = _np.asarray(res["eigenvalues"])
    vecs = _np.asarray(res["eigenvectors"])
    idx = _np.argsort(vals, kind="stable") if order == "ascending" else _np.argsort(-vals, kind="stable")
    for key in ("eigenvalues", "residual_norms", "residual_bounds", "error_bounds"):
        arr = _np.asarray(res.get(key, []))
        if arr.size == vals.size:
            res[key] = arr[idx]
    if vecs.ndim == 2 and vecs.shape[1] == vals.size:
        res["eigenvectors"] = _np.asfortranarray(vecs[:, idx])
    total = _time.perf_counter() - t0
    fields = {
        "task": "eigs", "k": k, "which": which_name, "matrix": a.desc,
        "mass": None if b is None else b.desc, "time_read": 0.0, "time_write": 0.0,
        "tcsolve_version": __version__, "command": command, "job": "", "job_options": command, "input_stamps": "",
        "reorder": "none", "rows": a.n,
        "nnz": getattr(a, "nnz", 0) if a.kind != "operator" else 0,
    }
    fields.update(res)
    if a.kind == "csr":
        fields["matrix_checksum"] = _Lazy(lambda: _tcsolve.csr_checksum(a.n, a.indptr, a.indices, a.data))
        if b is not None and b.kind == "csr":
            fields["mass_checksum"] = _Lazy(lambda: _tcsolve.csr_checksum(b.n, b.indptr, b.indices, b.data))
    # The phases are disjoint, as the command's: what is left of the call beyond the plan, the
    # set-up, the solve and the verification (input checks, conversion, ordering the pairs).
    fields["time_preprocess"] = max(0.0, total - sum(res.get(k, 0.0) for k in (
        "time_plan", "time_setup", "time_solve", "time_verify")))
    info = Result(fields)
    w, v = info.eigenvalues, info.eigenvectors
    if a.kind == "device":
        import cupy
        w, v = cupy.asarray(w), cupy.asarray(v)
    if info.status not in ("converged", "unverified"):
        n_ok = int(_np.sum(_np.asarray(info.residual_norms) <= _np.asarray(info.residual_bounds))) \
            if len(info.residual_bounds) == len(info.residual_norms) else 0
        raise NoConvergence(f"tcsolve {info.method}: {info.status} after {info.iterations} iterations "
                            f"({n_ok} of {k} pairs passed the residual test)"
                            + (f": {info.reason}" if info.reason else ""), w, v, info)
    out = (w, v) if return_eigenvectors else (w,)
    out = out + tuple(extra)
    if return_info:
        out = out + (info,)
    return out[0] if len(out) == 1 else out


def eigsh(A, k=6, M=None, sigma=None, which="LM", v0=None, ncv=None, maxiter=None, tol=0,
          return_eigenvectors=True, Minv=None, OPinv=None, mode="normal", *, method="auto",
          device="auto", precision="auto", block_size=None, conv="rel", seed=1, certify=False,
          return_info=False):
    """k eigenpairs of the real symmetric A (A·x = λ·M·x with M), like scipy.sparse.linalg.eigsh.

    which: 'LA' largest, 'SA' smallest, 'LM' largest magnitude (both ends, see below), 'SM'
    smallest magnitude (matrices: nearest 0 by shift-invert; operators: see _smallest_magnitude),
    'BE' half from each end. With ``sigma``: SciPy's shift-invert modes (``mode`` 'normal',
    'buckling', 'cayley'), ``which`` applied to the transformed value w' (module _spectral);
    'LM' in normal mode is the k eigenvalues nearest sigma (one shift-invert run through a sparse
    factorization of A − σM, or through ``OPinv`` = (A − σM)⁻¹ when given, or the folded
    operator for a LinearOperator). ``Minv`` = M⁻¹ where tcsolve needs it (the folded operator).
    Eigenvalues come back in ascending order, column j of the vectors with value j; without
    vectors in ARPACK's order, as SciPy's.

    v0 (n,): start vector (the first column of the initial block; the rest is random); ncv: Lanczos basis size before a restart; maxiter: iteration limit
    (Lanczos restarts / LOBPCG steps; default: the method's); tol: the convergence tolerance of
    the ``conv`` test (``rel``: ‖A·x − λ·M·x‖ ≤ tol·|λ|·‖x‖, ARPACK's meaning); tol=0 (SciPy:
    machine precision) means tcsolve's default 1e-8, which gives eigenvalues to about
    ‖r‖²/gap, i.e. near machine precision for separated eigenvalues.

    'LM' without sigma: the largest end is computed and, unless Gershgorin's bound proves no
    negative eigenvalue can be larger in magnitude, the smallest end too; the k of largest |λ|
    are kept (the cost of up to two solves).

    Not converged: raises :class:`NoConvergence` (``.eigenvalues``, ``.eigenvectors``, ``.info``).
    """
    t0 = _time.perf_counter()
    k = _int(k, "k", 1)
    which = which.upper() if isinstance(which, str) else which
    if which not in ("LM", "SM", "LA", "SA", "BE"):
        raise ValueError(f"which={which!r}: expected 'LM', 'SM', 'LA', 'SA' or 'BE' (as scipy.sparse.linalg.eigsh)")
    # SciPy's argument rules (arpack.py), with its exception types.
    if sigma is None:
        if OPinv is not None:
            raise ValueError("OPinv should not be specified with sigma = None.")
        if M is None and Minv is not None:
            raise ValueError("Minv should not be specified with M = None.")
        mode = "normal"  # SciPy ignores mode without sigma
    else:
        if Minv is not None:
            raise ValueError("Minv should not be specified when sigma is")
        if mode not in _spectral._MODES:
            raise ValueError(f"unrecognized mode '{mode}'")
    sig = None
    if sigma is not None:
        sig = float(sigma)
        if not _np.isfinite(sig):
            raise ValueError(f"sigma={sigma!r}: expected a finite number")
        if mode == "buckling" and sig == 0:
            raise ValueError("mode='buckling' with sigma=0: w' = lambda/(lambda - sigma) is 1 for every "
                             "eigenvalue, so no eigenvalue can be selected (use sigma != 0)")
    buckling = mode == "buckling"
    shape = getattr(A, "shape", None)
    n_a = int(shape[0]) if shape is not None and len(shape) == 2 else _inputs.as_matrix(A, "A").n
    if k >= n_a:
        # SciPy: a warning and dense eigh for dense A (all n pairs), TypeError otherwise.
        if isinstance(A, _np.ndarray) and (M is None or isinstance(M, _np.ndarray)):
            import warnings
            import scipy.linalg as sl
            warnings.warn("k >= N for N * N square matrix. Attempting to use scipy.linalg.eigh instead.",
                          RuntimeWarning, stacklevel=2)
            a_chk, b_chk = _prepare_eigs(A, M, 0, "M", mass_definite=not buckling)
            return sl.eigh(a_chk.scipy().toarray(), b=None if b_chk is None else b_chk.scipy().toarray(),
                           eigvals_only=not return_eigenvectors)
        raise TypeError(f"k = {k} >= n = {n_a}: tcsolve.eigsh (as scipy.sparse.linalg.eigsh) computes all "
                        "eigenvalues only for a dense NumPy A; use scipy.linalg.eigh(A.toarray()) or reduce k")
    a, b = _prepare_eigs(A, M, k, "M", mass_definite=not buckling)
    if buckling:
        _require_positive_diagonal(a, "A", "mode='buckling' (A is the inner product there: "
                                   "symmetric positive definite)")
    backend = _backend(device, a.kind, precision)
    _choice(method, "method", _METHODS)
    _choice(conv, "conv", _CONV_TESTS)
    opt = {"k": k, "which": None, "sigma": None, "method": method, "conv": conv,
           "tol": _DEFAULT_TOL if tol in (0, None) else _tol(tol, "tol"), "device": backend,
           "precision": precision, "seed": int(seed), "certify": bool(certify)}
    if maxiter is not None:
        opt["max_iterations"] = _int(maxiter, "maxiter", 1)
    if ncv is not None:
        ncv = _int(ncv, "ncv", k + 1)
        if ncv > a.n:
            raise ValueError(f"ncv={ncv}: must be at most n = {a.n}")
        opt["basis"] = ncv
    if block_size is not None:
        opt["block_size"] = _int(block_size, "block_size", 1)
    if v0 is not None:
        v, _ = _inputs.as_block(v0, a.n, "v0", device=a.kind == "device")
        if v.shape[1] != 1:
            raise ValueError(f"v0: expected one start vector of shape ({a.n},), got {v0.shape}")
        opt["v0"] = v.get() if a.kind == "device" else v
    command = _call_repr("eigsh", k=k, M=None if M is None else "M", sigma=sigma, which=which,
                         ncv=ncv, maxiter=maxiter, tol=tol, mode=None if mode == "normal" else mode,
                         method=method, device=device, precision=precision, block_size=block_size,
                         conv=conv)
    opinv = None if OPinv is None else _inputs.as_matrix(OPinv, "OPinv")
    minv = None if Minv is None else _inputs.as_matrix(Minv, "Minv")
    for name, op in (("OPinv", opinv), ("Minv", minv)):
        if op is not None and op.n != a.n:
            raise ValueError(f"{name} is {op.n} x {op.n} but A is {a.n} x {a.n}")
    if sig is None:
        if which in ("LA", "SA"):
            # (one run: without return_eigenvectors its vectors are not copied off the device)
            res = _run_eigs(a, b, dict(opt, which="largest" if which == "LA" else "smallest",
                                       want_vectors=bool(return_eigenvectors)))
            wname = "largest" if which == "LA" else "smallest"
        elif which == "LM":
            res, wname = _largest_magnitude(a, b, opt, k), "largest_magnitude"
        elif which == "BE":
            runs = _ends(a, b, opt, k - k // 2, k // 2)
            res = _spectral.take([(r, j) for r in runs for j in range(len(r["eigenvalues"]))],
                                 "which='BE': the largest ceil(k/2) and the smallest floor(k/2)")
            wname = "both_ends"
        elif a.kind == "csr" and (b is None or b.kind == "csr"):
            opt.update(which="nearest", sigma=0.0)  # 'SM': nearest 0 by shift-invert
            res, wname = _run_eigs(a, b, opt), "nearest"
        else:
            res, wname = _smallest_magnitude(a, b, opt, k, minv), "smallest_magnitude"
    elif mode == "normal" and which == "LM" and opinv is None:  # the common case: one run
        if a.kind != "csr" or (b is not None and b.kind != "csr"):
            res = _nearest_by_operator(a, b, opt, sig, k)
        else:
            res = _run_eigs(a, b, dict(opt, which="nearest", sigma=sig))
        wname = "nearest"
    else:
        res = _transformed(a, b, opt, k, sig, which, mode, opinv)
        wname = f"{which} of w' ({mode} mode, sigma {sig:g})"
    # SciPy's order: ascending with vectors; without them ARPACK's (the most wanted last): 'SM'
    # and 'SA' without sigma descending, everything else ascending.
    order = "descending" if (not return_eigenvectors and sig is None and which in ("SM", "SA")) else "ascending"
    return _finish_eigs(res, a, b, t0, command, wname, k, order, return_eigenvectors, return_info)


# ---- SciPy's selections that are not one tcsolve run ---------------------------------------------

def _ends(a, b, opt, k_la, k_sa):
    """Runs for the k_la largest and k_sa smallest eigenpairs (a run is skipped for 0)."""
    runs = []
    if k_la:
        runs.append(_run_eigs(a, b, dict(opt, which="largest", k=k_la, sigma=None)))
    if k_sa:
        runs.append(_run_eigs(a, b, dict(opt, which="smallest", k=k_sa, sigma=None)))
    return runs


def _require_positive_diagonal(a, name, why):
    if a.kind == "operator":
        return
    d = a.diagonal()
    d = _np.asarray(d.get() if a.kind == "device" else d)
    bad = _np.flatnonzero(~(d > 0))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name} is not positive definite ({name.lower()}_ii = {float(d[i]):g} at row {i}): {why}")


class _Folded:
    """F = (A − c·B)·B⁻¹·(A − c·B) (B = I: (A − c·I)²) as an operator: F·x = μ·B·x with
    μ = (λ − c)², the same x as A·x = λ·B·x; the smallest μ are the λ nearest c."""

    kind = "operator"

    def __init__(self, a, b, c, binv):
        self.a, self.b, self.c, self.binv, self.n = a, b, c, binv, a.n
        self.desc = f"({a.desc} - {c:g} B) B^-1 (A - {c:g} B) (folded spectrum)"

    def _shifted(self, x):
        y = _np.asarray(self.a.matmat(x), dtype=float)
        if self.c != 0:
            y = y - self.c * (x if self.b is None else _np.asarray(self.b.matmat(x), dtype=float))
        return y

    def matmat(self, x):
        y = self._shifted(x)
        if self.b is not None:
            y = self.binv(y)
        return self._shifted(_np.asfortranarray(y))


def _inverse_of(b, minv, tol):
    """X -> B⁻¹·X: Minv if given (SciPy's meaning), a sparse LU of a matrix B, else CG per column."""
    import scipy.sparse.linalg as sla
    if minv is not None:
        return lambda y: _np.asarray(minv.matmat(_np.asfortranarray(y)), dtype=float)
    if b.kind == "csr":
        solve = sla.splu(b.scipy().tocsc()).solve
        return lambda y: solve(_np.asarray(y, dtype=float))
    op = sla.LinearOperator((b.n, b.n), matvec=lambda v: b.matmat(v.reshape(-1, 1))[:, 0], dtype=float)

    def cg_columns(y):
        out = _np.empty_like(y, dtype=float)
        for j in range(y.shape[1]):
            xj, info = sla.cg(op, y[:, j], tol=min(tol, 1e-12) * 1e-2, atol=0, maxiter=10 * b.n)
            if info != 0:
                raise ValueError(f"M: CG on M did not converge ({info}) while applying M^-1 "
                                 "(pass Minv=, as SciPy's eigsh takes it)")
            out[:, j] = xj
        return out
    return cg_columns


def _ritz_from(a, b, opt, run, what):
    """Rayleigh-Ritz of (A, B) on a run's vectors: eigenvalues, vectors, true residuals checked
    here (the run's own test was on another operator)."""
    import scipy.linalg as sl
    v = _np.asarray(run["eigenvectors"], dtype=float)
    av = _np.asarray(a.matmat(_np.asfortranarray(v)), dtype=float)
    bv = v if b is None else _np.asarray(b.matmat(_np.asfortranarray(v)), dtype=float)
    h, g = v.T @ av, v.T @ bv
    lam, y = sl.eigh((h + h.T) / 2, (g + g.T) / 2)
    x, ax, bx = v @ y, av @ y, bv @ y
    r = _np.linalg.norm(ax - bx * lam, axis=0)
    xn = _np.linalg.norm(x, axis=0)
    a_norm = max(float(_np.max(_np.abs(lam))), float(_np.linalg.norm(ax, 2) / max(_np.linalg.norm(x, 2), 1e-300)))
    b_norm = 1.0 if b is None else float(_np.linalg.norm(bx, 2) / max(_np.linalg.norm(x, 2), 1e-300))
    t = opt["tol"]
    eps = _np.finfo(float).eps
    if opt["conv"] == "abs":
        bound = _np.full(lam.shape, t)
    else:
        test = t * ((a_norm if opt["conv"] == "norm" else 0.0) + _np.abs(lam) * b_norm)
        bound = _np.maximum(test, 64 * eps * (a_norm + _np.abs(lam) * b_norm)) * xn
    out = dict(run)
    out.update(eigenvalues=lam, eigenvectors=_np.asfortranarray(x), residual_norms=r,
               residual_bounds=bound, error_bounds=r ** 2 / max(a_norm, 1e-300), a_norm=a_norm, b_norm=b_norm)
    ok = bool(_np.all(r <= bound))
    if run["status"] in ("converged", "unverified") and not ok:
        out["status"] = "not_converged"
        out["reason"] = (f"{what}: {int(_np.sum(r > bound))} Ritz pairs of A miss their residual test "
                         f"(max ||A x - lambda B x|| / bound = {float(_np.max(r / bound)):.3g})")
    elif ok and run["status"] == "not_converged":
        # Every pair is right, but the run that should have found all of them did not converge:
        # nothing shows that none is missing.
        out["status"] = "unverified"
        out["reason"] = (f"every pair passes its residual test on A, but the run behind them "
                         f"({what}) did not converge ({run.get('reason') or 'no reason given'}): "
                         "that no eigenvalue is missing is not verified")
    out["verification"] = "recheck"
    out["certified"] = "not_checked"
    out["method_reason"] = (run.get("method_reason", "") + f"; {what}").strip("; ")
    return out


def _folded_nearest(a, b, opt, c, m, minv):
    """The m eigenpairs nearest c without a factorization (operators): the m smallest of the
    folded operator, then Rayleigh-Ritz with (A, B) and the true residual test."""
    if a.kind == "device" or (b is not None and b.kind == "device"):
        raise NotImplementedError(f"eigenvalues nearest {c:g} of CuPy input need a factorization or a "
                                  "folded operator on the GPU, which tcsolve does not have: pass the "
                                  "matrix as SciPy/NumPy (shift-invert on the host) or use which='SA'/'LA'")
    binv = None if b is None else _inverse_of(b, minv, opt["tol"])
    f = _Folded(a, b, c, binv)
    # (λ − c)² squares the scale: the folded run is tested against ‖F‖ (conv 'norm'; a relative
    # test at μ ≈ 0 would sit below rounding) at tol² floored at 1e-14, so that the Ritz pairs of
    # A then pass their own test, which _ritz_from checks.
    fopt = dict(opt, which="smallest", sigma=None, k=m, tol=max(opt["tol"] ** 2, 1e-14), conv="norm",
                method="lobpcg" if opt["method"] in ("auto", "chebyshev") else opt["method"])
    fopt.pop("v0", None)
    run = _run_eigs(f, b, fopt)
    return _ritz_from(a, b, opt, run, f"{m} eigenvalues nearest {c:g} from the folded operator "
                      "(A - cB) B^-1 (A - cB), no factorization")


class _InverseProduct:
    """X·OP·X (X = M, or I without M): with OP = (A − c·M)⁻¹, M·OP·M·x = θ·M·x holds the pairs of
    A·x = λ·M·x with θ = 1/(λ − c); the largest |θ| are the λ nearest c."""

    kind = "operator"

    def __init__(self, b, inv, n):
        self.b, self.inv, self.n = b, inv, n
        self.desc = "M (A - sigma M)^-1 M from OPinv"

    def matmat(self, x):
        y = x if self.b is None else _np.asarray(self.b.matmat(_np.asfortranarray(x)), dtype=float)
        y = self.inv(y)
        return y if self.b is None else _np.asarray(self.b.matmat(_np.asfortranarray(y)), dtype=float)


def _opinv_nearest(a, b, inv, c, m, opt):
    """The m eigenpairs nearest c through the caller's OPinv (no factorization of ours): the m
    largest |θ| of M·OPinv·M (both ends), then Rayleigh-Ritz with (A, M) and the true residuals."""
    op = _InverseProduct(b, inv, a.n)
    # A residual s of the θ-problem maps to (A − cM)·M⁻¹·s/θ on (A, M), which can be ‖A − cM‖·‖M⁻¹‖
    # times larger: the θ-run gets tol·1e-4 (floored at 1e-14); _ritz_from checks the outcome.
    run = _largest_magnitude(op, b, dict(opt, which="largest", sigma=None, k=m,
                                         tol=max(opt["tol"] * 1e-4, 1e-14),
                                         method="lobpcg" if opt["method"] in ("auto", "chebyshev") else opt["method"]), m)
    return _ritz_from(a, b, opt, run, f"{m} eigenvalues nearest {c:g} through OPinv (SciPy's "
                      "(A - sigma M)^-1), checked on A")


def _smallest_magnitude(a, b, opt, k, minv):
    """which='SM' on an operator: the smallest end when it is non-negative (then it is the
    answer), the largest end when it is non-positive, else the folded spectrum around 0."""
    sa = _run_eigs(a, b, dict(opt, which="smallest", sigma=None))
    ok = sa["status"] in ("converged", "unverified")
    if ok and len(sa["eigenvalues"]) == k and _np.min(sa["eigenvalues"]) >= 0:
        sa["method_reason"] = (sa.get("method_reason", "") + "; which='SM': the smallest end is "
                               "non-negative, so it is the smallest in magnitude").strip("; ")
        return sa
    la = _run_eigs(a, b, dict(opt, which="largest", sigma=None))
    if la["status"] in ("converged", "unverified") and len(la["eigenvalues"]) == k \
            and _np.max(la["eigenvalues"]) <= 0:
        la["method_reason"] = (la.get("method_reason", "") + "; which='SM': the largest end is "
                               "non-positive, so it is the smallest in magnitude").strip("; ")
        return la
    return _folded_nearest(a, b, opt, 0.0, k, minv)


def _nearest_by_operator(a, b, opt, sig, k):
    """sigma with A or M a LinearOperator and no OPinv: nearest sigma by the folded spectrum."""
    return _folded_nearest(a, b, opt, sig, k, None)


def _dense_all(a, b, opt):
    """All n eigenpairs by dense LAPACK (small n only): the fallback of a selection."""
    import scipy.linalg as sl
    if a.n > 4000 or a.kind == "device":
        return None
    eye = _np.eye(a.n)
    ad = _np.asarray(a.matmat(eye) if a.kind == "operator" else a.scipy().toarray(), dtype=float)
    bd = None if b is None else _np.asarray(b.matmat(eye) if b.kind == "operator" else b.scipy().toarray(), dtype=float)
    lam, x = sl.eigh((ad + ad.T) / 2, None if bd is None else (bd + bd.T) / 2)
    run = {"eigenvalues": lam, "eigenvectors": x, "status": "converged", "reason": "", "history":
           {"iteration": _np.zeros(0), "converged": _np.zeros(0), "active": _np.zeros(0),
            "apply_seconds": _np.zeros(0), "dense_seconds": _np.zeros(0),
            "residual_norms": _np.zeros((0, 0)), "values": _np.zeros((0, 0)), "ortho": []},
           "method": "dense", "transform": "none", "iterations": 0, "operator_applies": a.n}
    return _ritz_from(a, b, opt, run, "dense LAPACK (scipy.linalg.eigh) on all n pairs")


def _transformed(a, b, opt, k, sig, which, mode, opinv):
    """SciPy's shift-invert modes and which= on w' (see _spectral)."""
    if mode == "buckling":
        # K_G·x = μ·K·x, μ = 1/λ, K = A the positive definite "mass", shift 1/σ (module _spectral).
        import scipy.sparse as _sp
        kg = b if b is not None else _inputs.as_matrix(_sp.identity(a.n, format="csr"), "M")
        pa, pb, center, alpha, beta = kg, a, 1.0 / sig, 0.0, -1.0 / sig
    else:
        pa, pb, center = a, b, sig
        alpha, beta = (0.0, 1.0) if mode == "normal" else (1.0, 2.0 * sig)
    factorable = pa.kind == "csr" and (pb is None or pb.kind == "csr")

    # OPinv = (A − σM)⁻¹ as SciPy takes it; in the buckling form (K_G − K/σ)⁻¹ = −σ·OPinv.
    inv = None
    if opinv is not None:
        scale = -sig if mode == "buckling" else 1.0
        inv = lambda y: scale * _np.asarray(opinv.matmat(_np.asfortranarray(y)), dtype=float)

    def nearest(c, m):
        if inv is not None and c == center:
            return _opinv_nearest(pa, pb, inv, c, m, opt)
        if factorable:
            return _run_eigs(pa, pb, dict(opt, which="nearest", sigma=c, k=m))
        return _folded_nearest(pa, pb, opt, c, m, None)

    picks, how = _spectral.select(which, k, alpha, beta, center, nearest,
                                  lambda kla, ksa: _ends(pa, pb, opt, kla, ksa), a.n,
                                  lambda: _dense_all(pa, pb, opt))
    res = _spectral.take(picks, f"mode='{mode}', which='{which}' on w': {how}")
    if mode == "buckling":
        mu = _np.asarray(res["eigenvalues"], dtype=float)
        with _np.errstate(divide="ignore"):
            lam = 1.0 / mu
        res["eigenvalues"] = lam
        # K x − λ K_G x = −λ (K_G x − μ K x): residuals and their bounds scale by |λ|, errors by λ².
        for key, p in (("residual_norms", 1), ("residual_bounds", 1), ("error_bounds", 2)):
            arr = _np.asarray(res.get(key, []), dtype=float)
            if arr.size == lam.size:
                res[key] = arr * _np.abs(lam) ** p
    return res


def lobpcg(A, X, B=None, M=None, Y=None, tol=None, maxiter=None, largest=True, verbosityLevel=0,
           retLambdaHistory=False, retResidualNormsHistory=False, restartControl=20, *,
           method="lobpcg", device="auto", precision="fp64", block_size=None, conv=None, seed=1,
           certify=False, return_info=False):
    """k = X.shape[1] extreme eigenpairs of A·x = λ·B·x, like scipy.sparse.linalg.lobpcg.

    X (n × k) gives k and is the start block (its columns begin the initial block). B: mass matrix (SPD). M: preconditioner, as a matrix or
    LinearOperator approximating A⁻¹, or one of tcsolve's names 'jacobi', 'none', 'factor',
    'auto' (default: tcsolve chooses). tol: SciPy's test ‖A·x − λ·B·x‖ ≤ tol (``conv='abs'``);
    tol=None: tcsolve's default (``conv='rel'``, 1e-8). maxiter: default tcsolve's (SciPy's 20
    is meant for its restarts). largest=True returns the eigenvalues in descending order, False
    ascending (as SciPy). retResidualNormsHistory=True also returns the per-iteration residual
    norms (a list of arrays). ``method='lanczos'`` or 'auto' lets tcsolve's driver pick instead.

    Not converged: raises :class:`NoConvergence` (SciPy warns and returns instead).
    """
    t0 = _time.perf_counter()
    verbosity = _int(verbosityLevel, "verbosityLevel", 0)
    a_kind_device = _inputs.is_device_array(A)
    xp = _xp("device" if a_kind_device else "csr")
    Xa = xp.asarray(X)
    if Xa.ndim == 1:
        Xa = Xa.reshape(-1, 1)
    if Xa.ndim != 2:
        raise ValueError(f"X: expected the start block of shape (n, k), got {Xa.shape}")
    k = int(Xa.shape[1])
    if k < 1:
        raise ValueError("X has no columns: k = X.shape[1] must be at least 1")
    # SciPy's lobpcg also takes A, B and M as plain functions X -> A·X.
    n_x = int(Xa.shape[0])
    A, B = _callable_operator(A, n_x, "A"), _callable_operator(B, n_x, "B")
    if not isinstance(M, str):
        M = _callable_operator(M, n_x, "M")
    if k >= n_x and not a_kind_device:
        # SciPy's lobpcg: a block as wide as the matrix goes to dense eigh, with a warning.
        import warnings
        import scipy.linalg as sl
        warnings.warn(f"The problem size {n_x} is too small relative to the block size {k}: using "
                      "dense scipy.linalg.eigh instead of LOBPCG", UserWarning, stacklevel=2)
        a_d, b_d = _prepare_eigs(A, B, 0, "B")
        full = _dense_all(a_d, b_d, {"tol": _DEFAULT_TOL, "conv": "rel"})
        w_all, v_all = _np.asarray(full["eigenvalues"]), _np.asarray(full["eigenvectors"])
        idx = _np.arange(a_d.n)[::-1][:k] if largest else _np.arange(a_d.n)[:k]
        return (w_all[idx], v_all[:, idx])
    a, b = _prepare_eigs(A, B, k, "B")
    if Y is not None:
        a = _Constrained(a, b, Y, largest, k)
    x, _ = _inputs.as_block(Xa, a.n, "X", device=a.kind == "device")
    _require_independent(x, "X", "linearly dependent initial approximations (as SciPy's lobpcg refuses)")
    if M is not None and not isinstance(M, str) and device == "auto" and a.kind != "device":
        device = "cpu"  # a preconditioner operator is applied on the host
    backend = _backend(device, a.kind, precision)
    _choice(method, "method", _METHODS)
    if conv is None:
        conv = "rel" if tol is None else "abs"
    _choice(conv, "conv", _CONV_TESTS)
    precond, precond_op = "auto", None
    if isinstance(M, str):
        precond = _choice(M, "M", ("auto", "none", "jacobi", "factor"))
    elif M is not None:
        precond_op = _inputs.as_matrix(M, "M")
        if precond_op.n != a.n:
            raise ValueError(f"preconditioner M is {precond_op.n} x {precond_op.n} but A is {a.n} x {a.n}")
        if precond_op.kind == "csr":
            precond_op = _inputs.Operator(precond_op.scipy_op(), "M")
        if backend != "cpu":
            raise ValueError("a preconditioner M given as a matrix or operator runs on the CPU backend "
                             "(device='cpu')")
    if tol is None:
        tol_v = _DEFAULT_TOL
    else:
        try:
            tol_v = float(tol)
        except (TypeError, ValueError):
            raise TypeError(f"tol={tol!r}: expected a number") from None
        if not tol_v > 0 or not _np.isfinite(tol_v):
            raise ValueError(f"tol={tol!r}: expected a positive number")
        if conv != "abs" and not tol_v < 1:
            raise ValueError(f"tol={tol!r}: expected 0 < tol < 1")
    opt = {"k": k, "which": "largest" if largest else "smallest", "method": method, "conv": conv,
           "tol": tol_v, "device": backend, "precision": precision, "seed": int(seed),
           "precond": precond, "v0": x.get() if a.kind == "device" else x, "certify": bool(certify)}
    if maxiter is not None:
        opt["max_iterations"] = _int(maxiter, "maxiter", 1)
    if block_size is not None:
        opt["block_size"] = _int(block_size, "block_size", 1)
    command = _call_repr("lobpcg", B=None if B is None else "B", tol=tol, maxiter=maxiter,
                         largest=largest, method=method, device=device, precision=precision, conv=conv)
    if verbosity:
        print(f"tcsolve.lobpcg: {'generalized' if b is not None else 'standard'} eigenvalue problem, "
              f"n = {a.n}, k = {k}, {'largest' if largest else 'smallest'}, tol = {tol_v:g} ({conv} test)"
              + (f", {a.n_constraints} constraints Y" if Y is not None else ""), flush=True)

        def progress(it, vals, rn, nconv):
            # After every iteration, while the solve runs (the GIL is taken for the call).
            fmt = {"float_kind": lambda v: f"{v:.3e}"}
            print(f"iteration {int(it)}: {int(nconv)} of {k} converged; eigenvalues "
                  f"{_np.array2string(_np.asarray(vals)[:k], precision=10)}; residual norms "
                  f"{_np.array2string(_np.asarray(rn)[:k], formatter=fmt)}", flush=True)
        opt["progress"] = progress
    res = _run_eigs(a, b, opt, precond_op)
    hist = res["history"]
    if verbosity:
        print(f"tcsolve.lobpcg: {res['status']} after {res['iterations']} iterations"
              + (f" ({res['reason']})" if res.get("reason") else ""), flush=True)
    extra = ()
    order = (lambda w: _np.sort(w)[::-1]) if largest else _np.sort
    if retLambdaHistory:
        # Per iteration the k current Ritz values (SciPy's order), then the returned ones last.
        vh = _np.asarray(hist.get("values", _np.zeros((0, k))))
        extra += ([order(row[:k]) for row in vh if not _np.isnan(row[:k]).any()]
                  + [order(_np.asarray(res["eigenvalues"], dtype=float))],)
    if retResidualNormsHistory:
        extra += ([row[:k][~_np.isnan(row[:k])] for row in _np.asarray(hist["residual_norms"])],)
    return _finish_eigs(res, a, b, t0, command, opt["which"], k,
                        "descending" if largest else "ascending", True, return_info, extra)


def _require_independent(x, name, what, gram=None):
    """ValueError unless the columns of x (or of the given Gram matrix xᵀ·B·x) are independent:
    smallest eigenvalue of the Gram matrix above 1e-12 of the largest."""
    g = x.T @ x if gram is None else gram
    g = _np.asarray(g.get() if hasattr(g, "get") else g, dtype=float)
    ev = _np.linalg.eigvalsh((g + g.T) / 2)
    if not (ev.size and ev[-1] > 0 and ev[0] > 1e-12 * ev[-1]):
        raise ValueError(f"{name} is {what} (its Gram matrix has eigenvalues from {ev[0]:.3g} to "
                         f"{ev[-1]:.3g})")


def _callable_operator(f, n, name):
    """A plain function X -> f(X) (SciPy's lobpcg accepts these) as an n × n LinearOperator."""
    if f is None or not callable(f) or hasattr(f, "shape"):
        return f
    from scipy.sparse.linalg import LinearOperator

    def mat(x):
        return _np.asarray(f(x), dtype=float).reshape(x.shape[0], -1) if x.ndim == 2 else _np.asarray(f(x), dtype=float).ravel()
    return LinearOperator((n, n), matvec=mat, matmat=mat, dtype=float)


class _Constrained:
    """SciPy's lobpcg constraints Y: iterate in the B-orthogonal complement of span(Y).

    With P = I − Y·G⁻¹·Yᵀ·B (G = Yᵀ·B·Y), the operator is Pᵀ·A·P + s·(B·Y)·G⁻¹·(B·Y)ᵀ: on the
    complement it is the projected A (A·x − λ·B·x ⊥ Y for a returned pair), and span(Y) becomes
    eigenvalue s, placed beyond the wanted end (s = the far end of the spectrum of (A, B) with a
    margin), so no vector of span(Y) is returned."""

    kind = "operator"

    def __init__(self, a, b, Y, largest, k):
        if a.kind == "device":
            raise NotImplementedError("Y (constraints) with CuPy input is not supported by tcsolve "
                                      "(pass NumPy/SciPy input: the constrained operator runs on the host)")
        y, _ = _inputs.as_block(Y, a.n, "Y")
        if y.shape[1] + k >= a.n:
            raise ValueError(f"Y has {y.shape[1]} columns and k = {k}: need Y.shape[1] + k < n = {a.n}")
        self.a, self.b, self.n = a, b, a.n
        self.n_constraints = y.shape[1]
        by = y if b is None else _np.asarray(b.matmat(y), dtype=float)
        g = y.T @ by
        _require_independent(y, "Y", "rank deficient: the constraints must be linearly independent", g)
        self.gl = _np.linalg.cholesky((g + g.T) / 2)
        self.y, self.by = y, by
        self.desc = f"{a.desc} constrained to the B-complement of {y.shape[1]} columns Y"
        self.shift = 0.0
        # The far end of the spectrum of (A, B), for the shift of span(Y).
        import scipy.sparse.linalg as sla
        op = sla.LinearOperator((a.n, a.n), matvec=lambda v: self._aop(v.reshape(-1, 1))[:, 0], dtype=float)
        bop = None if b is None else sla.LinearOperator((a.n, a.n), matvec=lambda v: _np.asarray(
            b.matmat(_np.asfortranarray(v.reshape(-1, 1))), dtype=float)[:, 0], dtype=float)
        far = sla.eigsh(op, k=1, M=bop, which="SA" if largest else "LA", tol=1e-3,
                        Minv=None if b is None else _BInverse(b))[0][0] if a.n > 2 else 0.0
        self.shift = far - (abs(far) + 1.0) if largest else far + (abs(far) + 1.0)

    def _coef(self, v):
        # G⁻¹·(B·Y)ᵀ·v
        import scipy.linalg as sl
        return sl.cho_solve((self.gl, True), self.by.T @ v)

    def _project(self, v):  # P·v = v − Y·G⁻¹·YᵀB·v
        return v - self.y @ self._coef(v)

    def _aop(self, x):
        return _np.asarray(self.a.matmat(_np.asfortranarray(x)), dtype=float)

    def matmat(self, x):
        px = self._project(_np.asarray(x, dtype=float))
        apx = self._aop(px)
        out = apx - self.by @ self._coef_t(apx)  # Pᵀ·(A·P·x)
        if self.shift:
            out = out + self.shift * (self.by @ self._coef(x))
        return out

    def _coef_t(self, w):
        # Pᵀ·w = w − B·Y·G⁻¹·Yᵀ·w
        import scipy.linalg as sl
        return sl.cho_solve((self.gl, True), self.y.T @ w)


class _BInverse:
    """B⁻¹ for SciPy's eigsh (Minv) while the constraint shift is estimated."""

    def __init__(self, b):
        import scipy.sparse.linalg as sla
        self.shape, self.dtype = (b.n, b.n), _np.dtype(float)
        if b.kind == "csr":
            self._solve = sla.splu(b.scipy().tocsc()).solve
        else:
            op = sla.LinearOperator((b.n, b.n), matvec=lambda v: _np.asarray(
                b.matmat(v.reshape(-1, 1)), dtype=float)[:, 0], dtype=float)
            self._solve = lambda v: sla.cg(op, v, tol=1e-10, atol=0)[0]

    def matvec(self, v):
        return self._solve(_np.asarray(v, dtype=float).ravel())


# ---- linear systems ----------------------------------------------------------------------------

def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None, tol=None,
       method="block_cg", device="auto", precision="auto", block_size=None, conv=None, seed=None,
       return_info=False):
    """Solves A·x = b for symmetric positive definite A, like scipy.sparse.linalg.cg -- and for
    b of shape (n, s), all s right-hand sides at once with block CG (x has b's shape).

    Each column stops when ‖b_j − A·x_j‖ ≤ max(rtol·‖b_j‖, atol) (one relative tolerance is
    used: the smallest over the columns, so no column is solved less accurately than asked).
    ``tol`` is the older SciPy name of ``rtol``. M: preconditioner as a matrix or LinearOperator
    (CPU), or 'jacobi' / 'chebyshev' (a Chebyshev polynomial in A, degree from Lanczos bounds of the
    spectrum; fewer iterations for more products with A) / 'none' / 'auto'; M=None means 'auto', as
    the command line's default: the polynomial on the GPU for matrices of at least 131072 rows
    with short rows and a constant diagonal, else Jacobi (reported in ``Result.preconditioner``;
    CG's answer does not depend on it, only its iteration count). maxiter: default 5000. block_size: solve
    the columns in groups of at most this many (default: all at once). callback(xk): called after
    every iteration with the current iterate, of b's shape (1-D for a 1-D b, else the n × s
    block); it costs one copy of the block per iteration (on the GPU a device-to-host copy and a
    wait), and an exception it raises ends the solve and propagates.

    Returns ``(x, info)``: info = 0 converged, info > 0 (the iterations run) not converged, as
    SciPy's cg; with return_info=True, ``(x, info, Result)``. A matrix found not to be positive
    definite (non-positive diagonal entry, or a CG breakdown) raises ValueError.
    """
    t0 = _time.perf_counter()
    if callback is not None and not callable(callback):
        raise TypeError(f"callback={callback!r}: expected a callable f(xk)")
    if method not in ("block_cg", "cg", "auto"):
        raise ValueError(f"method={method!r}: expected block_cg")
    if conv not in (None, "rel"):
        raise ValueError(f"conv={conv!r}: block CG tests the relative residual (conv='rel')")
    if tol is not None:
        rtol = tol
    rtol = _tol(rtol, "rtol")
    atol = 0.0 if atol is None else float(atol)
    if not (atol >= 0 and _np.isfinite(atol)):
        raise ValueError(f"atol={atol!r}: expected a non-negative number")
    a = _inputs.as_matrix(A, "A")
    n = a.n
    a.check_symmetric("A")
    if M is not None and not isinstance(M, str) and device == "auto" and a.kind != "device":
        device = "cpu"  # a preconditioner operator is applied on the host
    backend = _backend(device, a.kind, precision)
    dev = a.kind == "device"
    xp = _xp(a.kind)
    rhs, one_d, norms = _inputs.as_block(b, n, "b", device=dev, with_norms=True)
    s = rhs.shape[1]
    if x0 is not None:
        x, x0_1d = _inputs.as_block(x0, n, "x0", device=dev)
        if x.shape != rhs.shape:
            raise ValueError(f"x0 has shape {x0.shape} but b has shape {tuple(b.shape)}")
        x = x.copy(order="F")
    else:
        x = xp.zeros((n, s), dtype=xp.float64, order="F")
    precond, precond_op, precond_note = ("auto" if M is None or isinstance(M, str) else "jacobi"), None, ""
    if isinstance(M, str):
        precond = _choice(M, "M", ("auto", "jacobi", "chebyshev", "none"))
    elif M is not None:
        precond_op = _inputs.as_matrix(M, "M")
        if precond_op.n != n:
            raise ValueError(f"preconditioner M is {precond_op.n} x {precond_op.n} but A is {n} x {n}")
        if precond_op.kind == "device" or dev:
            raise NotImplementedError("a preconditioner M with CuPy input is not supported (use M='jacobi')")
        if precond_op.kind == "csr":
            precond_op = _inputs.Operator(precond_op.scipy_op(), "M")
    if a.kind == "device":
        dmin, i = a.min_diagonal()  # from the same device pass as the symmetry check
        if not dmin > 0:
            raise ValueError(f"A is not positive definite (a_ii = {dmin:g} at row {i}): block CG "
                             "needs a symmetric positive definite matrix")
    elif a.kind != "operator":
        dh = _np.asarray(a.diagonal())
        bad = _np.flatnonzero(~(dh > 0))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"A is not positive definite (a_ii = {float(dh[i]):g} at row {i}): block CG "
                             "needs a symmetric positive definite matrix")
    if precond == "auto":
        precond, precond_note = _auto_precond(a, backend, dh if a.kind == "csr" else None)
    nz = [int(j) for j in _np.flatnonzero(norms > 0)]
    if atol > 0 and nz:
        # SciPy's test ‖r_j‖ ≤ max(rtol·‖b_j‖, atol) as one relative tolerance: the strictest column's.
        rtol = min(max(rtol, atol / float(norms[j])) for j in nz)
    opt = {"tol": rtol, "device": backend, "precision": precision, "precond": precond}
    if precond == "chebyshev" and a.kind == "operator":
        raise ValueError("M='chebyshev' needs A as a matrix (its bound of the largest eigenvalue is "
                         "the matrix's infinity norm); pass a LinearOperator preconditioner instead")
    if precond == "chebyshev" and dev:
        opt["a_norm"] = a.inf_norm()  # bounds λmax: keeps the polynomial positive definite
    if maxiter is not None:
        opt["max_iterations"] = _int(maxiter, "maxiter", 1)
    group = s if block_size is None else _int(block_size, "block_size", 1)
    results = []
    for c0 in range(0, len(nz), group):
        cols = nz[c0: c0 + group]
        whole = len(cols) == s and cols == list(range(s))
        bj = rhs if whole else xp.asfortranarray(rhs[:, cols])
        xj = x if whole else xp.asfortranarray(x[:, cols])
        reported = [0]
        if callback is not None:
            def report(it, xk, cols=cols, whole=whole, reported=reported):
                # SciPy: callback(xk) after each iteration; xk has b's shape (the group's columns
                # in place, the others as they stand).
                if it == 0:
                    return  # the start block, before any iteration
                reported[0] = int(it)
                xk = xp.asarray(xk)
                full = xk if whole else x.copy()
                if not whole:
                    full[:, cols] = xk
                callback(full[:, 0] if one_d else full)
            opt["callback"] = report
        if dev:
            _sync_cupy()
            r = _tcsolve.cg_device(n, a.nnz, a.ptrs(), int(bj.data.ptr), int(xj.data.ptr), len(cols),
                                   x0 is not None, opt)
        elif a.kind == "operator":
            r = _tcsolve.cg_operator(n, a.matmat, bj, xj, x0 is not None,
                                     None if precond_op is None else precond_op.matmat, opt)
        else:
            r = _tcsolve.cg_csr(n, a.indptr, a.indices, a.data, bj, xj, x0 is not None,
                                None if precond_op is None else precond_op.matmat, opt)
        if not whole:
            x[:, cols] = xj
        if callback is not None:
            opt.pop("callback")
            if int(r["iterations"]) > reported[0]:
                callback(x[:, 0] if one_d else x)  # the final iterate, returned below
        results.append((cols, r))
    # Zero right-hand sides: x = 0 (as SciPy), residual 0, no iterations.
    for j in range(s):
        if j not in nz:
            x[:, j] = 0
    res = _merge_solve(results, s, opt, rtol)
    if res["status"] == "breakdown":
        raise ValueError(f"A is not positive definite (block CG breakdown: {res['reason']})")
    total = _time.perf_counter() - t0
    res["solution"] = x
    fields = {
        "task": "solve", "right_hand_sides": s, "rhs": f"{type(b).__module__}.{type(b).__name__} {tuple(b.shape)}",
        "matrix": a.desc, "time_read": 0.0, "time_write": 0.0, "tcsolve_version": __version__,
        "command": _call_repr("cg", rtol=rtol, atol=atol or None, maxiter=maxiter, device=device,
                              precision=precision, block_size=block_size),
        "job": "", "reorder": "none", "rows": n, "nnz": getattr(a, "nnz", 0) if a.kind != "operator" else 0,
        "seed": 0 if seed is None else int(seed), "spmm_kernel": "", "spmm_plan": "", "matrix_checksum": "",
        "input_stamps": "",
    }
    fields["job_options"] = fields["command"]
    fields.update(res)
    if a.kind == "csr":
        fields["matrix_checksum"] = _Lazy(lambda: _tcsolve.csr_checksum(n, a.indptr, a.indices, a.data))
    if precond_note:
        fields["preconditioner"] = f"{fields.get('preconditioner', precond)} ({precond_note})"
    fields["time_preprocess"] = max(0.0, total - res.get("time_setup", 0.0) - res.get("time_solve", 0.0))
    info_obj = Result(fields)
    info = 0 if info_obj.status == "converged" else max(1, int(info_obj.iterations))
    xout = x[:, 0] if (one_d or tuple(b.shape) == (n, 1)) else x  # SciPy returns (n,) for (n, 1)
    if return_info:
        if dev:
            info_obj.solution = x  # CuPy; .save() needs .get()
        return xout, info, info_obj
    return xout, info


# M='auto' (and M=None): the command line's `solve --precond auto` rule (auto_precond_refusal,
# solvers/chebyshev_precond.hpp). H200 (docs/performance.md): lap3d:80, 32 columns, CuPy input,
# warm 0.335 s with Jacobi, 0.165 s with the polynomial.
def _auto_precond(a, backend, host_diagonal):
    """(preconditioner, why) for M='auto'; the result reports both."""
    if a.kind not in ("csr", "device"):
        why = "A given as an operator" if backend == "cuda" else "the CPU"
    else:
        varies = False
        if backend == "cuda":
            if a.kind == "device":
                c = a.check()
                varies = float(c["min_diag"]) != float(c["max_diag"])
            else:
                varies = float(host_diagonal.min()) != float(host_diagonal.max())
        why = _tcsolve.auto_precond_refusal(backend == "cuda", a.n, a.nnz, varies)
    if why:
        return "jacobi", f"auto: not the Chebyshev polynomial, for {why}"
    return "chebyshev", "auto: short rows, a constant diagonal, on the GPU"


def _merge_solve(results, s, opt, rtol):
    """One result dict for the column groups (and zero columns) of a cg call."""
    resid = _np.zeros(s)
    col_it = _np.zeros(s, dtype=_np.int64)
    if not results:
        return {"task": "solve", "method": "block_cg", "status": "converged", "reason": "",
                "residual_norms": resid, "column_iterations": col_it, "iterations": 0,
                "operator_applies": 0, "history": {k: _np.zeros(0) for k in
                                                    ("iteration", "converged", "active",
                                                     "apply_seconds", "dense_seconds")}
                | {"residual_norms": _np.zeros((0, 0)), "values": _np.zeros((0, 0)), "ortho": []},
                "time_solve": 0.0, "tolerance": rtol, "max_iterations": opt.get("max_iterations", 5000),
                "preconditioner": opt["precond"], "backend": opt["device"], "device": opt["device"],
                "precision": opt["precision"]}
    base = dict(results[0][1])
    for cols, r in results:
        resid[cols] = r["residual_norms"]
        col_it[cols] = r["column_iterations"]
    base["residual_norms"] = resid
    base["column_iterations"] = col_it
    if len(results) > 1:
        base["status"] = max((r["status"] for _, r in results), key=lambda t: _STATUS_RANK.get(t, 9))
        base["reason"] = "; ".join(r["reason"] for _, r in results if r["reason"])
        base["iterations"] = max(r["iterations"] for _, r in results)
        for key in ("operator_applies", "time_solve", "time_setup"):
            base[key] = sum(r.get(key, 0) for _, r in results)
        h = results[0][1]["history"]
        for _, r in results[1:]:
            h = _concat_history(h, r["history"])
        base["history"] = h
    return base
