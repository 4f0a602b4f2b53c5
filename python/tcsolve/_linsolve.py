"""tcsolve.cg: SciPy's cg on block CG (all right-hand sides at once)."""

import time as _time

import numpy as _np

from . import _args, _inputs, _tcsolve
from ._eigs_common import _STATUS_RANK, _concat_history
from ._result import Lazy as _Lazy, Result


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

    rtol and atol as SciPy's: rtol=0 with atol > 0 is an absolute test, rtol ≥ 1 or atol=inf is
    met at once by the start, rtol = atol = 0 only by an exact solution (CG runs to its rounding
    floor and returns info > 0, where SciPy runs to maxiter). x0='Mb' starts from M·b (D⁻¹·b for Jacobi and the polynomial).

    Returns ``(x, info)``: info = 0 converged, info > 0 (the iterations run) not converged, as
    SciPy's cg; with return_info=True, ``(x, info, Result)``. A matrix found not to be positive
    definite (non-positive diagonal entry, or a CG breakdown) raises ValueError. A matrix A is
    checked for symmetry; a LinearOperator is not (two more products), its answer being checked
    by the true residual like every other.
    """
    t0 = _time.perf_counter()
    if callback is not None and not callable(callback):
        raise TypeError(f"callback={callback!r}: expected a callable f(xk)")
    if method not in ("block_cg", "cg", "auto"):
        raise ValueError(f"method={method!r}: expected block_cg")
    if conv not in (None, "rel"):
        raise ValueError(f"conv={conv!r}: block CG tests the relative residual (conv='rel')")
    rtol, atol = _tolerances(rtol, atol, tol)
    if seed is not None:
        _args.seed(seed)
    a = _inputs.as_matrix(A, "A")
    n = a.n
    if a.kind != "operator":
        # (an operator is not probed: that costs two products, and CG's answer is checked by its
        # true residual, so a non-symmetric operator cannot give a wrong x, only no x)
        a.check_symmetric("A")
    if M is not None and not isinstance(M, str) and device == "auto" and a.kind != "device":
        device = "cpu"  # a preconditioner operator is applied on the host
    backend = _args.backend(device, a.kind, precision)
    dev = a.kind == "device"
    rhs, one_d, norms = _inputs.as_block(b, n, "b", device=dev, with_norms=True)
    precond, precond_op = _preconditioner(M, n, dev)
    dh = _require_positive_diagonal(a)
    precond_note = ""
    if precond == "auto":
        precond, precond_note = _auto_precond(a, backend, dh)
    x = _start(x0, rhs, b, a, dev, precond, precond_op, dh)
    nz = [int(j) for j in _np.flatnonzero(norms > 0)]
    if nz:
        # SciPy's test ‖r_j‖ ≤ max(rtol·‖b_j‖, atol) as one relative tolerance: the strictest
        # column's. At or above 1 it is met by x = 0 at once (rtol ≥ 1, atol = inf); capped finite.
        rtol = min(_TOL_CAP, min(max(rtol, atol / float(norms[j])) for j in nz))
    opt = {"tol": rtol, "device": backend, "precision": precision, "precond": precond}
    if precond == "chebyshev" and a.kind == "operator":
        raise ValueError("M='chebyshev' needs A as a matrix (its bound of the largest eigenvalue is "
                         "the matrix's infinity norm); pass a LinearOperator preconditioner instead")
    if precond == "chebyshev" and dev:
        opt["a_norm"] = a.inf_norm()  # bounds λmax: keeps the polynomial positive definite
    if maxiter is not None:
        opt["max_iterations"] = _args.integer(maxiter, "maxiter", 1)
    group = rhs.shape[1] if block_size is None else _args.integer(block_size, "block_size", 1)
    results = [_solve_group(a, rhs, x, cols, opt, precond_op, x0 is not None, callback, one_d)
               for cols in (nz[c0: c0 + group] for c0 in range(0, len(nz), group))]
    # Zero right-hand sides: x = 0 (as SciPy), residual 0, no iterations.
    for j in range(rhs.shape[1]):
        if j not in nz:
            x[:, j] = 0
    res = _merge_solve(results, rhs.shape[1], opt, rtol)
    if res["status"] == "breakdown":
        raise ValueError(f"A is not positive definite (block CG breakdown: {res['reason']})")
    res["solution"] = x
    res.setdefault("backward_errors", _backward_errors(a, x, norms, res["residual_norms"]))
    # (checked above, core/matrix_kind.hpp's name; an operator is not classified)
    res["matrix_kind"] = "" if a.kind == "operator" else "symmetric, positive diagonal"
    res.setdefault("method_reason", "as asked (tcsolve.cg)")
    command = _args.call_repr("cg", rtol=rtol, atol=atol or None, maxiter=maxiter, device=device,
                              precision=precision, block_size=block_size)
    info_obj = _result(res, a, b, rhs.shape[1], command, seed, precond, precond_note, t0)
    info = 0 if info_obj.status == "converged" else max(1, int(info_obj.iterations))
    xout = x[:, 0] if (one_d or tuple(b.shape) == (n, 1)) else x  # SciPy returns (n,) for (n, 1)
    if return_info:
        if dev:
            info_obj.solution = x  # CuPy; .save() needs .get()
        return xout, info, info_obj
    return xout, info


_TOL_CAP = 1e300  # a relative tolerance this large is met by any start; inf is passed as this
_TOL_ZERO = 1e-300  # rtol = atol = 0: only an exact solution passes (no residual in double does)


def _tolerances(rtol, atol, tol):
    """(rtol, atol) as SciPy takes them: non-negative, inf included (rtol = 0 with atol > 0 is a
    purely absolute test; rtol ≥ 1 or atol = inf is met by x0 = 0 at once; both 0: _TOL_ZERO). ``tol``
    is the older SciPy name of rtol."""
    if tol is not None:
        rtol = tol
    rtol = _args.number(rtol, "rtol", finite=False)
    atol = 0.0 if atol is None else _args.number(atol, "atol", finite=False)
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v < 0:
            raise ValueError(f"{name}={v!r}: expected a non-negative number")
    if rtol == 0 and atol == 0:
        # SciPy iterates to maxiter and returns info > 0 unless the residual becomes exactly 0:
        # block CG is asked for _TOL_ZERO, stops at its rounding floor and says not converged.
        rtol = _TOL_ZERO
    return rtol, atol


def _start(x0, rhs, b, a, dev, precond, precond_op, dh):
    """The iterate block (n × s, F order, ours: written by the solver): x0's copy, zeros, or for
    SciPy's x0='Mb' the preconditioner applied to b (D⁻¹·b for Jacobi and for the Chebyshev
    polynomial, whose own M·b is not computed: the start changes only the iteration count)."""
    xp = _args.xp("device" if dev else "csr")
    if isinstance(x0, str):
        if x0 != "Mb":
            raise ValueError(f"x0={x0!r}: expected an array or 'Mb' (the preconditioner applied to b)")
        if precond_op is not None:
            return _np.asfortranarray(precond_op.matmat(rhs), dtype=_np.float64)
        if precond in ("jacobi", "chebyshev") and a.kind != "operator":
            d = a.diagonal() if dev else dh
            return xp.asfortranarray(rhs / d[:, None])
        return rhs.copy(order="F")
    if x0 is None:
        return xp.zeros(rhs.shape, dtype=xp.float64, order="F")
    x, _ = _inputs.as_block(x0, a.n, "x0", device=dev)
    if x.shape != rhs.shape:
        raise ValueError(f"x0 has shape {x0.shape} but b has shape {tuple(b.shape)}")
    return x.copy(order="F")


def _preconditioner(M, n, dev):
    """(tcsolve's preconditioner name, operator or None) for cg's M."""
    name, op = _inputs.preconditioner(M, n, ("auto", "jacobi", "chebyshev", "none"), "jacobi")
    if op is not None and (op.kind == "device" or dev):
        raise NotImplementedError("a preconditioner M with CuPy input is not supported (use M='jacobi')")
    return name, op


def _require_positive_diagonal(a):
    """ValueError at the first a_ii <= 0; returns the host diagonal of a CSR A (else None)."""
    if a.kind == "device":
        dmin, i = a.min_diagonal()  # from the same device pass as the symmetry check
        if not dmin > 0:
            raise ValueError(f"A is not positive definite (a_ii = {dmin:g} at row {i}): block CG "
                             "needs a symmetric positive definite matrix")
        return None
    if a.kind == "operator":
        return None
    dh = _np.asarray(a.diagonal())
    bad = _np.flatnonzero(~(dh > 0))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"A is not positive definite (a_ii = {float(dh[i]):g} at row {i}): block CG "
                         "needs a symmetric positive definite matrix")
    return dh


def _solve_group(a, rhs, x, cols, opt, precond_op, use_x0, callback, one_d):
    """Block CG on the columns `cols` of b (x's columns written); returns (cols, result dict)."""
    s = rhs.shape[1]
    xp = _args.xp(a.kind)
    whole = len(cols) == s and cols == list(range(s))
    bj = rhs if whole else xp.asfortranarray(rhs[:, cols])
    xj = x if whole else xp.asfortranarray(x[:, cols])
    reported = [0]
    opt = dict(opt)
    if callback is not None:
        def report(it, xk):
            # SciPy: callback(xk) after each iteration; xk has b's shape (the group's columns
            # in place, the others as they stand). xk is the callback's own array.
            if it == 0:
                return  # the start block, before any iteration
            reported[0] = int(it)
            xk = xp.asarray(xk)
            full = xk if whole else x.copy()
            if not whole:
                full[:, cols] = xk
            callback(full[:, 0] if one_d else full)
        opt["callback"] = report
    pre = None if precond_op is None else precond_op.matmat_owned
    if a.kind == "device":
        _args.sync_cupy()
        r = _tcsolve.cg_device(a.n, a.nnz, a.ptrs(), int(bj.data.ptr), int(xj.data.ptr), len(cols),
                               use_x0, opt)
    elif a.kind == "operator":
        r = _tcsolve.cg_operator(a.n, a.matmat_owned, bj, xj, use_x0, pre, opt)
    else:
        r = _tcsolve.cg_csr(a.n, a.indptr, a.indices, a.data, bj, xj, use_x0, pre, opt)
    if not whole:
        x[:, cols] = xj
    if callback is not None and int(r["iterations"]) > reported[0]:
        # the final iterate (a copy: what the callback does with it leaves the returned x as it is)
        callback(x[:, 0].copy() if one_d else x.copy())
    return cols, r


def _backward_errors(a, x, bnorms, rel):
    """‖r_j‖/(‖A‖_F·‖x_j‖ + ‖b_j‖) from the relative residuals ‖r_j‖/‖b_j‖ (‖r_j‖ where b_j = 0),
    as solvers/solution_check.hpp defines them; None for an operator (no ‖A‖_F)."""
    if a.kind == "operator":
        return None
    xp = _args.xp(a.kind)
    fro = float(xp.linalg.norm(a.data))
    xn = xp.linalg.norm(x, axis=0)
    xn = _np.asarray(xn.get() if hasattr(xn, "get") else xn, dtype=float)
    bn = _np.asarray(bnorms, dtype=float)
    r = _np.asarray(rel, dtype=float) * _np.where(bn > 0, bn, 1.0)
    den = fro * xn + bn
    return _np.where(den > 0, r / _np.where(den > 0, den, 1.0), 0.0)


def _result(res, a, b, s, command, seed, precond, precond_note, t0):
    """The Result of a cg call (the fields of `tcsolve solve --out`)."""
    total = _time.perf_counter() - t0
    fields = {
        "task": "solve", "right_hand_sides": s,
        "rhs": f"{type(b).__module__}.{type(b).__name__} {tuple(b.shape)}",
        "matrix": a.desc, "time_read": 0.0, "time_write": 0.0, "tcsolve_version": _tcsolve.__version__,
        "command": command, "job": "", "reorder": "none", "rows": a.n,
        "nnz": getattr(a, "nnz", 0) if a.kind != "operator" else 0,
        "seed": 0 if seed is None else int(seed), "spmm_kernel": "", "spmm_plan": "", "matrix_checksum": "",
        "input_stamps": "",
    }
    fields["job_options"] = fields["command"]
    fields.update(res)
    if a.kind == "csr":
        fields["matrix_checksum"] = _Lazy(lambda: _tcsolve.csr_checksum(a.n, a.indptr, a.indices, a.data))
    if precond_note:
        fields["preconditioner"] = f"{fields.get('preconditioner', precond)} ({precond_note})"
    fields["time_preprocess"] = max(0.0, total - res.get("time_setup", 0.0) - res.get("time_solve", 0.0))
    return Result(fields)


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
