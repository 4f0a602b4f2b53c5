"""tcsolve.lobpcg: SciPy's lobpcg on tcsolve's solvers (constraints Y: the C++ driver's,
solvers/eigs/constraints.cpp)."""

import time as _time

import numpy as _np

from . import _args, _inputs
from ._eigs_common import (_dense_all, _finish_eigs, _prepare_eigs, _require_independent,
                           _ritz_from, _run_eigs)


def lobpcg(A, X, B=None, M=None, Y=None, tol=None, maxiter=None, largest=True, verbosityLevel=0,
           retLambdaHistory=False, retResidualNormsHistory=False, restartControl=20, *,
           method="lobpcg", device="auto", precision="fp64", block_size=None, conv=None, seed=1,
           certify=False, return_info=False):
    """k = X.shape[1] extreme eigenpairs of A·x = λ·B·x, like scipy.sparse.linalg.lobpcg.

    X (n × k) gives k and is the start block (its columns begin the initial block). B: mass matrix (SPD). M: preconditioner, as a matrix or
    LinearOperator approximating A⁻¹, or one of tcsolve's names 'jacobi', 'none', 'factor',
    'auto' (default: tcsolve chooses). tol: SciPy's test ‖A·x − λ·B·x‖ ≤ tol (``conv='abs'``);
    tol=None or tol <= 0 (SciPy: its default): tcsolve's default (``conv='rel'``, 1e-8). maxiter: default tcsolve's (SciPy's 20
    is meant for its restarts); 0 returns the Rayleigh-Ritz pairs of span(X), with SciPy's
    UserWarning when they miss the tolerance. largest=True returns the eigenvalues in descending order, False
    ascending (as SciPy). retResidualNormsHistory=True also returns the per-iteration residual
    norms (a list of arrays). ``method='lanczos'`` or 'auto' lets tcsolve's driver pick instead.

    Not converged: a UserWarning ("Exited at iteration ...", as SciPy's) and the pairs found are
    returned (``Result.status`` 'not_converged' with return_info=True). n < 5k: dense eigh with
    SciPy's warning.
    """
    t0 = _time.perf_counter()
    verbosity = _args.integer(verbosityLevel, "verbosityLevel", 0)
    _args.integer(restartControl, "restartControl", 0)  # accepted, not used (see the README)
    a_kind_device = _inputs.is_device_array(A)
    Xa, k, n_x = _start_block(X, a_kind_device)
    # SciPy's lobpcg also takes A, B and M as plain functions X -> A·X.
    A, B = _callable_operator(A, n_x, "A"), _callable_operator(B, n_x, "B")
    if not isinstance(M, str):
        M = _callable_operator(M, n_x, "M")
    if n_x < 5 * k and not a_kind_device:  # SciPy's rule (n < 5k: dense eigh, with a warning)
        return _dense_small(A, B, k, n_x, largest)
    a, b = _prepare_eigs(A, B, k, "B")
    y = None if Y is None else _Constraints(a, b, Y, k)
    x, _ = _inputs.as_block(Xa, a.n, "X", device=a.kind == "device")
    if y is not None and a.kind != "device":
        # X in the B-complement of span(Y), as SciPy's lobpcg applies the constraints to X (the C++
        # driver projects its start block too): its independence is checked there
        x = _np.asfortranarray(y.project(x))
    _require_independent(x, "X", "linearly dependent initial approximations (as SciPy's lobpcg refuses)")
    if M is not None and not isinstance(M, str) and device == "auto" and a.kind != "device":
        device = "cpu"  # a preconditioner operator is applied on the host
    backend = _args.backend(device, a.kind, precision)
    _args.choice(method, "method", _args.METHODS)
    if tol is not None and _args.number(tol, "tol", finite=False) <= 0:
        tol = None  # SciPy's lobpcg: tol None or <= 0 is the default
    if conv is None:
        conv = "rel" if tol is None else "abs"
    _args.choice(conv, "conv", _args.CONV_TESTS)
    precond, precond_op = _preconditioner(M, a, backend)  # (the C++ driver projects it with Y)
    tol_v = _tolerance(tol, conv)
    opt = {"k": k, "which": "largest" if largest else "smallest", "method": method, "conv": conv,
           "tol": tol_v, "device": backend, "precision": precision, "seed": _args.seed(seed),
           "precond": precond, "v0": x.get() if a.kind == "device" else x, "certify": bool(certify),
           "constraints": None if y is None else y.y}
    if maxiter is not None:
        opt["max_iterations"] = _args.integer(maxiter, "maxiter", 0)
    if block_size is not None:
        opt["block_size"] = _args.integer(block_size, "block_size", 1)
    command = _args.call_repr("lobpcg", B=None if B is None else "B", tol=tol, maxiter=maxiter,
                              largest=largest, method=method, device=device, precision=precision, conv=conv)
    if opt.get("max_iterations") == 0:
        res = _start_pairs(a, b, x, opt, y)
        extra = _histories(res, k, largest, retLambdaHistory, retResidualNormsHistory)
        return _finish_eigs(res, a, b, t0, command, opt["which"], k, "descending" if largest else "ascending",
                            True, return_info, extra, accept=True)
    if verbosity:
        print(f"tcsolve.lobpcg: {'generalized' if b is not None else 'standard'} eigenvalue problem, "
              f"n = {a.n}, k = {k}, {'largest' if largest else 'smallest'}, tol = {tol_v:g} ({conv} test)"
              + (f", {y.y.shape[1]} constraints Y" if y is not None else ""), flush=True)
        opt["progress"] = _progress_printer(k)
    res = _run_eigs(a, b, opt, precond_op)
    if verbosity:
        print(f"tcsolve.lobpcg: {res['status']} after {res['iterations']} iterations"
              + (f" ({res['reason']})" if res.get("reason") else ""), flush=True)
    extra = _histories(res, k, largest, retLambdaHistory, retResidualNormsHistory)
    _warn_unless_converged(res, opt["tol"])
    return _finish_eigs(res, a, b, t0, command, opt["which"], k,
                        "descending" if largest else "ascending", True, return_info, extra, accept=True)


def _warn_unless_converged(res, tol):
    """SciPy's lobpcg warns and returns what it has when the pairs miss the tolerance; so does
    this one, with the status, the reason and the true residuals (Result.status says it too)."""
    if res["status"] in ("converged", "unverified"):
        return
    import warnings
    warnings.warn(f"Exited at iteration {res['iterations']} with accuracies \n"
                  f"{_np.asarray(res.get('residual_norms', []))}\nnot reaching the requested tolerance "
                  f"{tol} ({res['status']}: {res.get('reason', '')}).", UserWarning, stacklevel=3)


def _start_pairs(a, b, x, opt, y=None):
    """maxiter=0: the Rayleigh-Ritz pairs of (A, B) on span(X) (projected on the constraints'
    complement first, their residuals those of the projected problem), as SciPy's lobpcg returns
    them, with the true residual test (_ritz_from); a UserWarning, as SciPy's, when they miss the
    tolerance."""
    import warnings
    ah, bh, xh = a, b, x
    if a.kind == "device":  # (a corner case: on the host)
        ah = _inputs.as_matrix(a.cupy().get(), "A")
        bh = None if b is None else _inputs.as_matrix(b.cupy().get(), "B")
        xh = x.get()
    if y is not None:
        xh, ah = y.project(_np.asarray(xh, dtype=float)), _Projected(ah, y)
    k = xh.shape[1]
    run = {"eigenvectors": xh, "status": "converged", "reason": "", "method": "lobpcg",
           "transform": "none", "iterations": 0, "operator_applies": k}
    out = _ritz_from(ah, bh, opt, run, "maxiter=0: the Rayleigh-Ritz pairs of X, no iteration")
    r, bound = _np.asarray(out["residual_norms"]), _np.asarray(out["residual_bounds"])
    out["history"] = {"iteration": _np.zeros(1, dtype=_np.int64), "residual_norms": r.reshape(1, k),
                      "values": _np.asarray(out["eigenvalues"]).reshape(1, k),
                      "converged": _np.array([int(_np.sum(r <= bound))]),
                      "active": _np.array([int(_np.sum(r > bound))]), "apply_seconds": _np.zeros(1),
                      "dense_seconds": _np.zeros(1), "ortho": ["none"]}
    if out["status"] not in ("converged", "unverified"):
        warnings.warn(f"Exited at iteration 0 with accuracies \n{r}\nnot reaching the requested "
                      f"tolerance {opt['tol']}.", UserWarning, stacklevel=3)
    return out


def _start_block(X, device):
    """X as a 2-D array (a 1-D X is one column), k = its columns, n = its rows."""
    Xa = _args.xp("device" if device else "csr").asarray(X)
    if Xa.ndim == 1:
        Xa = Xa.reshape(-1, 1)
    if Xa.ndim != 2:
        raise ValueError(f"X: expected the start block of shape (n, k), got {Xa.shape}")
    k = int(Xa.shape[1])
    if k < 1:
        raise ValueError("X has no columns: k = X.shape[1] must be at least 1")
    return Xa, k, int(Xa.shape[0])


def _dense_small(A, B, k, n, largest):
    """SciPy's lobpcg: a block as wide as the matrix goes to dense eigh, with a warning."""
    import warnings
    warnings.warn(f"The problem size {n} is too small relative to the block size {k}: using "
                  "dense scipy.linalg.eigh instead of LOBPCG", UserWarning, stacklevel=3)
    a_d, b_d = _prepare_eigs(A, B, 0, "B")
    full = _dense_all(a_d, b_d, {"tol": _args.DEFAULT_TOL, "conv": "rel"})
    w_all, v_all = _np.asarray(full["eigenvalues"]), _np.asarray(full["eigenvectors"])
    idx = _np.arange(a_d.n)[::-1][:k] if largest else _np.arange(a_d.n)[:k]
    return (w_all[idx], v_all[:, idx])


def _preconditioner(M, a, backend):
    """(tcsolve's preconditioner name, operator or None) for lobpcg's M."""
    name, op = _inputs.preconditioner(M, a.n, ("auto", "none", "jacobi", "factor"), "auto")
    if op is not None and backend != "cpu":
        raise ValueError("a preconditioner M given as a matrix or operator runs on the CPU backend "
                         "(device='cpu')")
    return name, op


def _tolerance(tol, conv):
    """lobpcg's tol: None is tcsolve's default (tol <= 0 became None, as in SciPy); SciPy's
    absolute test takes any positive value."""
    if tol is None:
        return _args.DEFAULT_TOL
    t = _args.number(tol, "tol", finite=False)
    if not t > 0 or not _np.isfinite(t):
        raise ValueError(f"tol={tol!r}: expected a positive number")
    if conv != "abs" and not t < 1:
        raise ValueError(f"tol={tol!r}: expected 0 < tol < 1")
    return t


def _progress_printer(k):
    """verbosityLevel >= 1: one line per iteration, printed while the solve runs."""
    def progress(it, vals, rn, nconv):
        # After every iteration (the GIL is taken for the call).
        fmt = {"float_kind": lambda v: f"{v:.3e}"}
        print(f"iteration {int(it)}: {int(nconv)} of {k} converged; eigenvalues "
              f"{_np.array2string(_np.asarray(vals)[:k], precision=10)}; residual norms "
              f"{_np.array2string(_np.asarray(rn)[:k], formatter=fmt)}", flush=True)
    return progress


def _histories(res, k, largest, ret_lambda, ret_residuals):
    """SciPy's retLambdaHistory / retResidualNormsHistory lists, as extra return values."""
    hist = res["history"]
    extra = ()
    order = (lambda w: _np.sort(w)[::-1]) if largest else _np.sort
    if ret_lambda:
        # Per iteration the k current Ritz values (SciPy's order), then the returned ones last.
        vh = _np.asarray(hist.get("values", _np.zeros((0, k))))
        extra += ([order(row[:k]) for row in vh if not _np.isnan(row[:k]).any()]
                  + [order(_np.asarray(res["eigenvalues"], dtype=float))],)
    if ret_residuals:
        extra += ([row[:k][~_np.isnan(row[:k])] for row in _np.asarray(hist["residual_norms"])],)
    return extra


def _callable_operator(f, n, name):
    """A plain function X -> f(X) (SciPy's lobpcg accepts these) as an n × n LinearOperator."""
    if f is None or not callable(f) or hasattr(f, "shape"):
        return f
    from scipy.sparse.linalg import LinearOperator

    def mat(x):
        return _np.asarray(f(x), dtype=float).reshape(x.shape[0], -1) if x.ndim == 2 else _np.asarray(f(x), dtype=float).ravel()
    return LinearOperator((n, n), matvec=mat, matmat=mat, dtype=float)


class _Constraints:
    """SciPy's lobpcg constraints Y (n × p), checked by SciPy's rules (independent, p + k < n), and
    P·X = X − Y·G⁻¹·(B·Y)ᵀ·X (G = Yᵀ·B·Y) for the start block. The C++ driver iterates in the
    B-complement of span(Y) (its constrained operator, solvers/eigs/constraints.cpp)."""

    def __init__(self, a, b, Y, k):
        y, _ = _inputs.as_block(Y, a.n, "Y")
        y = _np.asfortranarray(y.get() if hasattr(y, "get") else y, dtype=float)
        if y.shape[1] + k >= a.n:
            raise ValueError(f"Y has {y.shape[1]} columns and k = {k}: need Y.shape[1] + k < n = {a.n}")
        if b is None:
            by = y
        else:
            bh = b if b.kind != "device" else _inputs.as_matrix(b.cupy().get(), "B")
            by = _np.asarray(bh.matmat(y), dtype=float)
        g = y.T @ by
        _require_independent(y, "Y", "rank deficient: the constraints must be linearly independent", g)
        self.y, self.by, self.gl = y, by, _np.linalg.cholesky((g + g.T) / 2)

    def project(self, v):
        import scipy.linalg as sl
        return v - self.y @ sl.cho_solve((self.gl, True), self.by.T @ v)


class _Projected:
    """Pᵀ·A·P on the host (maxiter=0 only: the residuals of the projected problem on span(P·X))."""

    kind = "operator"

    def __init__(self, a, y):
        self.a, self.y, self.n, self.desc = a, y, a.n, a.desc

    def matmat(self, x):
        import scipy.linalg as sl
        w = _np.asarray(self.a.matmat(_np.asfortranarray(self.y.project(_np.asarray(x, dtype=float)))), dtype=float)
        return w - self.y.by @ sl.cho_solve((self.y.gl, True), self.y.y.T @ w)
