"""The pieces every eigenproblem entry shares: input preparation, one C++ run, merging runs,
Rayleigh-Ritz checks, and the result (Result / NoConvergence / SciPy's tuple)."""

import time as _time

import numpy as _np

from . import _args, _inputs, _tcsolve
from ._result import Lazy as _Lazy, NoConvergence, Result


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
        _args.sync_cupy()
        return _tcsolve.eigs_device(a.n, a.nnz, a.ptrs(), pb, nnz_b, opt)
    # The C++ side hands each call a fresh array (python/src/py_operator.cpp): no copy here.
    pre = None if precond_op is None else _handed_over(precond_op)
    if a.kind == "operator" or (b is not None and b.kind == "operator"):
        fa = _handed_over(a if a.kind == "operator" else _inputs.Operator(a.scipy_op(), "A"))
        fb = None
        if b is not None:
            fb = _handed_over(b if b.kind == "operator" else _inputs.Operator(b.scipy_op(), "M"))
        return _tcsolve.eigs_operator(a.n, fa, fb, pre, opt)
    mass = None if b is None else (b.indptr, b.indices, b.data)
    return _tcsolve.eigs_csr(a.n, a.indptr, a.indices, a.data, mass, pre, opt)


def _handed_over(op):
    """The product the C++ side calls: matmat_owned where the operator has one."""
    return getattr(op, "matmat_owned", op.matmat)


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


def _finish_eigs(res, a, b, t0, command, which_name, k, order, return_eigenvectors, return_info,
                 extra=(), accept=False):
    """Orders the pairs, builds the Result, raises NoConvergence (unless `accept`: pairs that
    were asked for as they are) or returns SciPy's tuple."""
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
        "tcsolve_version": _tcsolve.__version__, "command": command, "job": "", "job_options": command, "input_stamps": "",
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
    if info.status not in ("converged", "unverified") and not accept:
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


def _require_independent(x, name, what, gram=None):
    """ValueError unless the columns of x (or of the given Gram matrix xᵀ·B·x) are independent:
    smallest eigenvalue of the Gram matrix above 1e-12 of the largest."""
    g = x.T @ x if gram is None else gram
    g = _np.asarray(g.get() if hasattr(g, "get") else g, dtype=float)
    ev = _np.linalg.eigvalsh((g + g.T) / 2)
    if not (ev.size and ev[-1] > 0 and ev[0] > 1e-12 * ev[-1]):
        raise ValueError(f"{name} is {what} (its Gram matrix has eigenvalues from {ev[0]:.3g} to "
                         f"{ev[-1]:.3g})")
