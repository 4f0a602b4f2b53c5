"""tcsolve.minres and tcsolve.gmres: SciPy's signatures on the pseudo-block MINRES and GMRES(m) of
solvers/krylov/ -- for b of shape (n, s) all s right-hand sides at once (s recurrences sharing
each product A·V). tcsolve has no bicgstab: gmres takes every square matrix.

Both test each column's TRUE relative residual ‖b_j − A·x_j‖₂ ≤ rtol·‖b_j‖₂ at the end (the
library's test, recomputed here from A for a host matrix): info = 0 only when every column passes.
"""

import time as _time

import numpy as _np

from . import _args, _inputs, _tcsolve
from ._linsolve import _TOL_CAP, _backward_errors, _result, _tolerances
from ._result import Lazy as _Lazy

_EPS = _np.finfo(float).eps


def minres(A, b, x0=None, *, rtol=1e-5, shift=0.0, tol=None, maxiter=None, M=None, callback=None,
           show=False, check=False, device="auto", return_info=False):
    """Solves (A − shift·I)·x = b for symmetric A (indefinite allowed), like
    scipy.sparse.linalg.minres -- and for b of shape (n, s), all s columns at once (pseudo-block
    MINRES: one product A·V of s columns per iteration).

    Each column stops when ‖b_j − (A − shift·I)·x_j‖₂ ≤ rtol·‖b_j‖₂ (the true residual; SciPy's
    minres tests its own recurrence's estimate). ``tol`` is the older SciPy name of ``rtol``.
    shift: the matrix is A − shift·I, formed once (a copy of A with the shifted diagonal; for a
    LinearOperator, ``A - shift*I`` as an operator). maxiter: products with A per column (SciPy's
    default 5·n). M: SciPy's M (approximates the inverse of A; symmetric positive definite), as
    a matrix or LinearOperator (CPU), or 'jacobi' (|diag(A)|⁻¹, a zero a_ii counting as 1) /
    'poly' (MINRES on A·p(A), p the GMRES polynomial of degree 14; a sparse A, SciPy or CuPy; no x0) /
    'none'; M=None means 'jacobi' for a matrix A without a zero a_ii (the command line's default;
    it changes the iteration count, not what counts as converged), else 'none' (and for a
    LinearOperator). check=True: also probe a LinearOperator A for symmetry (a matrix A is always
    checked: an unsymmetric one is a ValueError). show=True prints the residual estimate of the
    first 10 iterations, then of every 10th (relative for one right-hand side, else the largest
    unscaled one of the columns still iterating), and the outcome.

    callback(xk) is not supported: the pseudo-block recurrence does not hand its iterate out
    every iteration (NotImplementedError); ``return_info=True`` gives the per-iteration residual
    estimates in ``Result.history``.

    Returns ``(x, info)``: info = 0 every column converged; > 0 not converged after info
    iterations; < 0 a breakdown (Result.reason says why) -- SciPy's convention. With
    return_info=True ``(x, info, Result)``; Result has residual_norms, backward_errors
    (‖r_j‖/(‖A‖_F‖x_j‖ + ‖b_j‖); a matrix A only), column_iterations, history.
    """
    t0 = _time.perf_counter()
    if callback is not None:
        raise NotImplementedError("tcsolve.minres(callback=...) is not supported: the pseudo-block MINRES "
                                  "does not hand its iterate out every iteration (use return_info=True: "
                                  "Result.history holds the residual estimates)")
    rtol, _ = _tolerances(rtol, 0.0, tol)
    shift = _args.number(shift, "shift")
    a = _shifted(_inputs.as_matrix(A, "A"), shift)
    needs = "MINRES needs a symmetric matrix (tcsolve.gmres takes any square one)"
    if a.kind != "operator":
        a.check_symmetric("A", needs=needs)
    elif check:
        a.check_symmetric("A", needs=needs)
    iters = None if maxiter is None else _args.integer(maxiter, "maxiter", 1)
    max_it = 5 * a.n if iters is None else iters
    progress = _show("minres") if show else None
    command = _args.call_repr("minres", rtol=rtol, shift=shift or None, maxiter=maxiter, device=device)
    return _solve("minres", a, b, x0, rtol, 0.0, max_it, 1, M, progress, device, return_info, command, t0)


def gmres(A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=None, maxiter=None, M=None, callback=None,
          callback_type=None, tol=None, restrt=None, device="auto", return_info=False):
    """Solves A·x = b for any square A, like scipy.sparse.linalg.gmres -- and for b of shape
    (n, s), all s columns at once (pseudo-block GMRES(restart): one product A·V of s columns per
    iteration).

    Each column stops when ‖b_j − A·x_j‖₂ ≤ max(rtol·‖b_j‖₂, atol) (the true residual; one
    relative tolerance is used, the strictest column's). ``tol`` is the older name of rtol.
    restart: Krylov vectors per cycle (SciPy's default 20, at most n). maxiter: restart CYCLES,
    as SciPy counts them (default 10·n); tcsolve counts products with A per column, and runs at
    most maxiter·restart of them (``Result.max_iterations``) -- with a callback and
    callback_type None or 'legacy', SciPy's legacy meaning: maxiter products;
    ``Result.iterations`` and a non-zero info count products. M: SciPy's M (approximates the
    inverse of A), as a matrix or LinearOperator (CPU; applied on the right, A·M·y = b, x = M·y),
    or 'jacobi' (diag(A)⁻¹; a zero a_ii counts as 1) / 'poly' (the GMRES polynomial of degree 39 on
    the right, a sparse A, SciPy or CuPy; no x0; on the GPU, FGMRES with the polynomial applied
    in fp32 steps) / 'none'; M=None means 'jacobi' for a matrix A without a zero a_ii,
    else 'none' (and for a LinearOperator). callback with callback_type 'pr_norm' or 'legacy'
    (the default, as SciPy's): callback(r) after every iteration with the relative residual
    estimate ‖r‖/‖b‖ (a float) for one right-hand side; for b with several (non-zero) columns, an
    array of the unscaled estimates ‖r_j‖ of the columns still iterating (the block shrinks as
    columns pass). callback_type='x' (the iterate after each cycle) is not supported
    (NotImplementedError). x0='Mb' starts from M·b, as SciPy's. ``restrt``: SciPy's deprecated
    name of restart (a DeprecationWarning, as SciPy's).

    Returns ``(x, info)``: info = 0 every column converged; > 0 not converged (the products run);
    < 0 a breakdown. With return_info=True ``(x, info, Result)``.
    """
    t0 = _time.perf_counter()
    if restrt is not None:
        import warnings
        if restart is not None:
            raise ValueError("Cannot specify both restart and restrt keywords. Preferably use 'restart' only.")
        warnings.warn("'gmres' keyword argument 'restrt' is deprecated in favor of 'restart' and will "
                      "be removed in SciPy v1.12.0.", DeprecationWarning, stacklevel=2)
        restart = restrt
    rtol, atol = _tolerances(rtol, atol, tol)
    a = _inputs.as_matrix(A, "A")
    m = 20 if restart is None else _args.integer(restart, "restart", 1)
    m = min(m, a.n)
    cycles = 10 * a.n if maxiter is None else _args.integer(maxiter, "maxiter", 1)
    progress = _gmres_callback(callback, callback_type)
    command = _args.call_repr("gmres", rtol=rtol, atol=atol or None, restart=restart, maxiter=maxiter,
                              device=device)
    products = min(cycles * m, _args.INT64_MAX)
    if progress is not None and callback_type in (None, "legacy") and maxiter is not None:
        products = cycles  # SciPy's 'legacy' callback_type: maxiter counts products, not cycles
    return _solve("gmres", a, b, x0, rtol, atol, products, m, M, progress, device, return_info, command, t0)


def _shifted(a, shift):
    """A − shift·I as the same kind of input (CSR on the host or the device, or an operator)."""
    if shift == 0:
        return a
    if a.kind == "operator":
        from scipy.sparse.linalg import LinearOperator
        op = a.op
        shifted = LinearOperator(op.shape, dtype=_np.float64, matvec=lambda v: op.matvec(v) - shift * v,
                                 matmat=lambda v: op.matmat(v) - shift * v)
        return _inputs.as_matrix(shifted, "A")
    if a.kind == "device":
        import cupyx.scipy.sparse as csp
        return _inputs.as_matrix((a.cupy() - shift * csp.identity(a.n, format="csr")).tocsr(), "A")
    import scipy.sparse as sp
    out = _inputs.as_matrix((a.scipy() - shift * sp.identity(a.n, format="csr")).tocsr(), "A")
    out.desc = f"{a.desc} - {shift!r}*I"
    return out


def _estimates(state, residual_norms):
    """An iteration's residual estimates as the hooks report them: ‖r‖/‖b‖ (a float) for one
    column; for several, the unscaled ‖r_j‖ of the columns still iterating (the solver compacts
    its block as columns pass, so an entry is not tied to a column of b)."""
    r = _np.asarray(residual_norms, dtype=float)
    if state["one_column"]:
        return float(r[0] / state["norm"]) if r.size else 0.0
    return r


def _show(name):
    """show=True: a line for the first 10 iterations, then every 10th, as SciPy's minres prints."""
    state = {}

    def progress(it, values, residual_norms, converged):
        if it > 10 and it % 10:
            return
        r = _estimates(state, residual_norms)
        what = (f"relative residual estimate {r:.3e}" if state["one_column"] else
                f"largest residual estimate {float(r.max()) if r.size else 0.0:.3e} over {r.size} active column(s)")
        print(f"tcsolve.{name}: iteration {it}, {what}")

    progress.state = state
    return progress


def _gmres_callback(callback, callback_type):
    """gmres's callback as the per-iteration progress hook: callback(‖r‖/‖b‖) per iteration."""
    if callback_type not in (None, "legacy", "pr_norm", "x"):
        raise ValueError(f"callback_type={callback_type!r}: expected 'legacy', 'pr_norm' or 'x'")
    if callback is None:
        return None
    if not callable(callback):
        raise TypeError(f"callback={callback!r}: expected a callable")
    if callback_type == "x":
        raise NotImplementedError("tcsolve.gmres(callback_type='x') is not supported: the pseudo-block GMRES "
                                  "does not hand its iterate out after each cycle (callback_type='pr_norm' "
                                  "gives the relative residual after every iteration)")
    state = {}

    def progress(it, values, residual_norms, converged):
        callback(_estimates(state, residual_norms))

    progress.state = state
    return progress


def _solve(method, a, b, x0, rtol, atol, max_it, restart, M, progress, device, return_info, command, t0):
    """The shared path of minres and gmres: inputs, the solve on the non-zero columns, the checks."""
    if M is not None and not isinstance(M, str) and device == "auto" and a.kind != "device":
        device = "cpu"  # a preconditioner operator is applied on the host
    backend = _args.backend(device, a.kind, "fp64")
    dev = a.kind == "device"
    rhs, one_d, norms = _inputs.as_block(b, a.n, "b", device=dev, with_norms=True)
    precond, precond_op = _preconditioner(M, a, dev)
    if precond == "poly" and x0 is not None:
        raise ValueError("M='poly' starts from x = 0: it does not take x0")
    x = _start(x0, rhs, b, a, dev, precond, precond_op)
    nz = [int(j) for j in _np.flatnonzero(norms > 0)]
    tol = rtol
    if nz:
        tol = min(_TOL_CAP, min(max(rtol, atol / float(norms[j])) for j in nz))
    opt = {"tol": tol, "max_iterations": max_it, "restart": restart, "device": backend, "precond": precond}
    if progress is not None:
        progress.state.update(one_column=len(nz) == 1, norm=float(norms[nz[0]]) if nz else 1.0)
        opt["progress"] = progress
    res = _run(method, a, rhs, x, nz, x0 is not None, precond_op, opt) if nz else _empty(method, opt)
    for j in range(rhs.shape[1]):
        if j not in nz:
            x[:, j] = 0  # b_j = 0: x_j = 0, as SciPy
    res = _expand(res, nz, rhs.shape[1])
    if "backward_errors" not in res and a.kind == "device":
        res["backward_errors"] = _backward_errors(a, x, norms, res["residual_norms"])
    _confirm(res, tol)
    res["solution"] = x
    res["matrix_kind"] = _matrix_kind(method, a)
    res["method_reason"] = f"as asked (tcsolve.{method})"
    info_obj = _result(res, a, b, rhs.shape[1], command, None, precond, "", t0)
    info = {"converged": 0, "breakdown": -1}.get(info_obj.status, max(1, int(info_obj.iterations)))
    if progress is not None and method == "minres":
        print(f"tcsolve.minres: {info_obj.status} after {info_obj.iterations} iterations"
              + (f" ({info_obj.reason})" if info_obj.reason else ""))
    xout = x[:, 0] if (one_d or tuple(b.shape) == (a.n, 1)) else x  # SciPy returns (n,) for (n, 1)
    if return_info:
        return xout, info, info_obj
    return xout, info


def _preconditioner(M, a, dev):
    """(name, host operator or None): M=None is Jacobi for a matrix, none for an operator."""
    name, op = _inputs.preconditioner(M, a.n, ("jacobi", "poly", "none"), "jacobi")
    if op is not None:
        name = "none"  # (the operator takes the place of Jacobi; the result names it 'operator')
    elif name == "auto":
        name = "none" if a.kind == "operator" or _has_zero_diagonal(a) else "jacobi"
    if name == "jacobi" and a.kind == "operator":
        raise ValueError("M='jacobi' needs A as a matrix (its diagonal); A is a LinearOperator")
    if name == "poly" and a.kind not in ("csr", "device"):
        raise NotImplementedError("M='poly' (the GMRES polynomial, as `tcsolve solve --precond poly`) needs A "
                                  "as a sparse matrix (SciPy or CuPy), not a LinearOperator")
    if op is not None and (op.kind == "device" or dev):
        raise NotImplementedError("a preconditioner M with CuPy input is not supported (use M='jacobi')")
    return name, op


def _has_zero_diagonal(a):
    """Whether some a_ii = 0: M=None then runs without Jacobi (a zero a_ii would count as 1 beside
    the others' scale; on reorientation_1, 281 zero a_ii among |a_ii| from 1.1 to 1e9, MINRES with
    that Jacobi made no progress in 2000 iterations where it reached 0.64 without)."""
    if a.kind == "device":
        import cupy
        return bool(cupy.any(a.diagonal() == 0))
    return bool(_np.any(_np.asarray(a.diagonal()) == 0))


def _start(x0, rhs, b, a, dev, precond, precond_op):
    """The iterate block (n × s, F order, written by the solver): x0's copy, zeros, or for SciPy's
    x0='Mb' the preconditioner applied to b (D⁻¹·b for Jacobi; b itself without one)."""
    xp = _args.xp("device" if dev else "csr")
    if x0 is None:
        return xp.zeros(rhs.shape, dtype=xp.float64, order="F")
    if isinstance(x0, str):
        if x0 != "Mb":
            raise ValueError(f"x0={x0!r}: expected an array or 'Mb' (the preconditioner applied to b)")
        if precond_op is not None:
            return _np.asfortranarray(precond_op.matmat(rhs), dtype=_np.float64)
        if precond == "jacobi":
            d = a.diagonal()
            return xp.asfortranarray(rhs / xp.where(d == 0, 1.0, d)[:, None])
        return rhs.copy(order="F")
    x, _ = _inputs.as_block(x0, a.n, "x0", device=dev)
    if x.shape != rhs.shape:
        raise ValueError(f"x0 has shape {tuple(x0.shape)} but b has shape {tuple(b.shape)}")
    return x.copy(order="F")


def _run(method, a, rhs, x, cols, use_x0, precond_op, opt):
    """The library's solve on the columns `cols` of b (x's columns written)."""
    xp = _args.xp(a.kind)
    whole = cols == list(range(rhs.shape[1]))
    bj = rhs if whole else xp.asfortranarray(rhs[:, cols])
    xj = x if whole else xp.asfortranarray(x[:, cols])
    pre = None if precond_op is None else precond_op.matmat_owned
    if a.kind == "device":
        _args.sync_cupy()
        r = _tcsolve.krylov_device(method, a.n, a.nnz, a.ptrs(), int(bj.data.ptr), int(xj.data.ptr), len(cols),
                                   use_x0, opt)
    elif a.kind == "operator":
        r = _tcsolve.krylov_operator(method, a.n, a.matmat_owned, bj, xj, use_x0, pre, opt)
    else:
        r = _tcsolve.krylov_csr(method, a.n, a.indptr, a.indices, a.data, bj, xj, use_x0, pre, opt)
    if not whole:
        x[:, cols] = xj
    return r


def _empty(method, opt):
    """The result when every column of b is zero (x = 0, nothing run)."""
    z = _np.zeros(0)
    return {"task": "solve", "method": method, "status": "converged", "reason": "", "residual_norms": z,
            "backward_errors": z, "column_iterations": _np.zeros(0, dtype=_np.int64), "iterations": 0,
            "operator_applies": 0, "history": {"iteration": z, "residual_norms": _np.zeros((0, 0)),
                                              "values": _np.zeros((0, 0)), "converged": z, "active": z,
                                              "apply_seconds": z, "dense_seconds": z, "ortho": []},
            "time_solve": 0.0, "tolerance": opt["tol"], "max_iterations": opt["max_iterations"],
            "preconditioner": opt["precond"], "backend": opt["device"], "device": opt["device"],
            "precision": "fp64"}


def _expand(res, cols, s):
    """The per-column fields of a solve on `cols` as s columns (0 for the zero columns of b)."""
    for key, dtype in (("residual_norms", float), ("backward_errors", float), ("column_iterations", _np.int64)):
        if key in res and len(res[key]) == len(cols):
            full = _np.zeros(s, dtype=dtype)
            full[cols] = res[key]
            res[key] = full
    return res


def _matrix_kind(method, a):
    """The kind as core/matrix_kind.hpp names it: MINRES's A is symmetric (checked), indefinite
    where some a_ii <= 0; GMRES's is classified on first access (one pass, Result.matrix_kind)."""
    if a.kind == "operator":
        return ""
    if method == "minres":
        dmin = a.min_diagonal()[0] if a.kind == "device" else float(_np.min(a.diagonal()))
        return "symmetric indefinite" if not dmin > 0 else "symmetric, positive diagonal"
    if a.kind == "device":
        def kind():
            c = a.check()
            if float(c["symmetry_defect"]) > _inputs.SYMMETRY_TOL * float(c["max_abs"]):
                return "unsymmetric"
            return "symmetric indefinite" if not float(c["min_diag"]) > 0 else "symmetric, positive diagonal"
        return _Lazy(kind)
    return _Lazy(lambda: _tcsolve.classify_csr(a.n, a.n, a.indptr, a.indices, a.data)["matrix_kind"])


def _confirm(res, tol):
    """A 'converged' whose residuals (recomputed from A for a host matrix) exceed tol by more than
    their rounding (8·ε·(‖A‖_F‖x_j‖ + ‖b_j‖)/‖b_j‖, from the backward errors) is not converged:
    info = 0 never comes with a wrong x."""
    if res["status"] != "converged":
        return
    r = _np.asarray(res["residual_norms"], dtype=float)
    be = _np.asarray(res.get("backward_errors", _np.zeros(0)), dtype=float)
    slack = _np.zeros_like(r)
    if be.shape == r.shape:
        slack = _np.where(be > 0, 8 * _EPS * r / _np.where(be > 0, be, 1.0), 0.0)
    bad = _np.flatnonzero(~(r <= 1.01 * tol + slack))
    if bad.size:
        j = int(bad[0])
        res["status"] = "not_converged"
        res["reason"] = (f"the solver reported convergence but column {j}'s recomputed relative residual "
                         f"{r[j]:.3g} exceeds the tolerance {tol:.3g}")
