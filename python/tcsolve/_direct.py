"""tcsolve.spsolve, tcsolve.lsqr and tcsolve.lsmr: SciPy's signatures and return values on the
direct solves of solvers/direct/ (on the host; CuPy input is copied there and the answer back).

  square A        symmetric positive diagonal: CHOLMOD LLᵀ; symmetric indefinite: MUMPS LDLᵀ;
                  unsymmetric: UMFPACK LU; small ones of low fill (≤ 2000 rows, ≤ 20000
                  entries), indefinite or unsymmetric: KLU's LU. A singular one (to working precision) gets the
                  least-squares answer of SuiteSparseQR's rank-revealing QR.
  rectangular A   SuiteSparseQR: the least-squares solution (m > n), the minimum-norm one (m < n).

lsqr and lsmr are NOT iterative here: they return the SuiteSparseQR (or, for a square A, the
factorization's) answer with SciPy's tuple, itn = 0 and what a direct solve can state exactly
(the norms) or not at all (the condition estimate: nan). damp ≠ 0 and calc_var=True are not
supported (NotImplementedError). Every answer is checked (residuals, backward errors,
optimality: solvers/solution_check.hpp) and the check is in ``Result`` (return_info=True).
"""

import time as _time
import warnings as _warnings

import numpy as _np
import scipy.sparse as _sp

from . import _args, _inputs, _tcsolve
from ._result import Result

try:  # SciPy's warning for a singular matrix (scipy.sparse.linalg.MatrixRankWarning)
    from scipy.sparse.linalg import MatrixRankWarning
except ImportError:  # pragma: no cover - very old SciPy
    class MatrixRankWarning(UserWarning):
        """A matrix singular to working precision (SciPy's MatrixRankWarning where it exists)."""

try:
    from scipy.linalg import LinAlgWarning as _InaccurateWarning
except ImportError:  # pragma: no cover
    _InaccurateWarning = RuntimeWarning

_PERMC = (None, "NATURAL", "MMD_ATA", "MMD_AT_PLUS_A", "COLAMD")


def spsolve(A, b, permc_spec=None, use_umfpack=True, *, return_info=False):
    """Solves A·x = b for square sparse A, like scipy.sparse.linalg.spsolve, by the direct engine
    of A's kind (module docstring). b: (n,), (n, 1) -> x (n,); (n, s) -> x (n, s); a sparse b is
    densified (n·s doubles) and x comes back sparse, of A's class (as SciPy's), from the dense
    answer. permc_spec and use_umfpack are accepted and not used: the engine orders A itself.

    Differences from SciPy: a singular A (to working precision) gives SciPy's MatrixRankWarning
    and NaN; tcsolve warns with the same MatrixRankWarning, naming why A is singular, and returns
    the least-squares solution (SuiteSparseQR), whose optimality Result.optimality states. An
    answer whose backward error misses 1e-10 warns (scipy.linalg.LinAlgWarning). NaN/Inf in A or
    b, and a rectangular A (use lsqr / lsmr), are a ValueError. return_info=True returns
    ``(x, Result)``.
    """
    t0 = _time.perf_counter()
    if permc_spec not in _PERMC:
        raise ValueError(f"permc_spec={permc_spec!r}: expected None, " + ", ".join(repr(p) for p in _PERMC[1:]))
    a, dev = _host_matrix(A, square=False)
    if a.m != a.n:
        raise ValueError(f"A is {a.m}x{a.n}: spsolve needs a square matrix (tcsolve.lsqr / tcsolve.lsmr "
                         "solve rectangular least-squares problems)")
    sparse_b = _sp.issparse(b)
    bh = _host_rhs(b)
    rhs, one_d = _inputs.as_block(bh, a.m, "b")
    res = _solve(a, rhs, {})
    x = res["solution"]
    _warn_status(res, "spsolve")
    # The Result only where asked for: building it took ~0.06 ms a call under cProfile (olm500,
    # whose whole SciPy call takes ~0.3 ms).
    info = _make_result(res, a, b, "tcsolve.spsolve(A, b)", t0) if return_info else None
    vector = one_d or rhs.shape[1] == 1  # SciPy: a b of shape (n, 1) is a vector too
    if vector:
        xout = x[:, 0]
    elif sparse_b:
        xout = type(A)(x) if _sp.issparse(A) else _sp.csc_matrix(x)
    else:
        xout = x
    xout = _to_device(xout, dev)
    return (xout, info) if return_info else xout


def lsqr(A, b, damp=0.0, atol=1e-6, btol=1e-6, conlim=1e8, iter_lim=None, show=False, calc_var=False, x0=None,
         *, return_info=False):
    """min ‖A·x − b‖₂ like scipy.sparse.linalg.lsqr, computed by a direct solve (SuiteSparseQR for
    a rectangular A; module docstring), not by LSQR's iteration. Returns SciPy's
    ``(x, istop, itn, r1norm, r2norm, anorm, acond, arnorm, xnorm, var)``:

      istop   0: b = 0 (x = 0, or x0); 1: ‖r‖ ≤ btol·‖b‖ + atol·‖A‖·‖x‖ (a consistent system);
              2: ‖Aᵀr‖ ≤ atol·‖A‖·‖r‖ (a least-squares solution); 3: neither (the answer misses
              both of SciPy's tests: A too ill-conditioned for it; Result.status says more)
      itn     0 (no iterations); iter_lim is accepted and not used
      r1norm = r2norm = ‖b − A·x‖₂ (damp = 0)
      anorm   ‖A‖_F, exact (SciPy's is an estimate of the same norm)
      acond   nan: no condition estimate is made (conlim is accepted and not used)
      arnorm  ‖Aᵀ(b − A·x)‖₂, xnorm ‖x‖₂, var zeros(n) (calc_var=True: NotImplementedError)

    x0: the correction is solved for (A·dx = b − A·x0, x = x0 + dx: for an underdetermined A the
    solution nearest x0, as LSQR's). A singular square A: the least-squares answer, as for a
    rectangular one. A 2-D b (m, s) is solved at once: x (n, s) and each scalar an array of s.
    show=True prints the outcome. return_info=True appends the Result.
    """
    return _least_squares("lsqr", A, b, damp, atol, btol, conlim, iter_lim, show, x0, calc_var, return_info)


def lsmr(A, b, damp=0.0, atol=1e-6, btol=1e-6, conlim=1e8, maxiter=None, show=False, x0=None, *,
         return_info=False):
    """min ‖A·x − b‖₂ like scipy.sparse.linalg.lsmr, by a direct solve (see :func:`lsqr`: the same
    answer and istop). Returns SciPy's ``(x, istop, itn, normr, normar, norma, conda, normx)``:
    itn 0, normr ‖b − A·x‖₂, normar ‖Aᵀ(b − A·x)‖₂, norma ‖A‖_F (exact), conda nan (no estimate),
    normx ‖x‖₂. damp ≠ 0: NotImplementedError; maxiter and conlim are accepted and not used."""
    return _least_squares("lsmr", A, b, damp, atol, btol, conlim, maxiter, show, x0, False, return_info)


def _least_squares(name, A, b, damp, atol, btol, conlim, iters, show, x0, calc_var, return_info):
    t0 = _time.perf_counter()
    if _args.number(damp, "damp") != 0:
        raise NotImplementedError(f"tcsolve.{name}(damp={damp!r}): damping is not supported (the answer is a "
                                  "direct least-squares solve; scipy.sparse.linalg.lsqr/lsmr take damp)")
    if calc_var:
        raise NotImplementedError(f"tcsolve.{name}(calc_var=True) is not supported: no estimate of "
                                  "diag((A'A)^-1) is made")
    atol = _nonnegative(atol, "atol")
    btol = _nonnegative(btol, "btol")
    _nonnegative(conlim, "conlim")
    if iters is not None:
        _args.integer(iters, "iter_lim" if name == "lsqr" else "maxiter", 0)
    a, dev = _host_matrix(A, square=False)
    bh = _host_rhs(b)
    if _np.ndim(bh) == 0:
        bh = _np.atleast_1d(bh)  # a scalar b for a one-row A, as SciPy's lsqr/lsmr take it
    rhs, one_d = _inputs.as_block(bh, a.m, "b")
    s = rhs.shape[1]
    x_start = None
    if x0 is not None:
        xs, _ = _inputs.as_block(_host_rhs(x0), a.n, "x0")
        if xs.shape[1] != s:
            raise ValueError(f"x0 has shape {tuple(x0.shape)} but b has shape {tuple(b.shape)}")
        x_start = xs
    ah = a.scipy()
    work = rhs if x_start is None else _np.asfortranarray(rhs - ah @ x_start)
    res = _solve(a, work, {})
    x = res["solution"] if x_start is None else _np.asfortranarray(res["solution"] + x_start)
    if x_start is not None:
        res["solution"] = x
    r = rhs - ah @ x
    bnorm = _np.linalg.norm(rhs, axis=0)
    rnorm = _np.linalg.norm(r, axis=0)
    arnorm = _np.linalg.norm(ah.T @ r, axis=0)
    xnorm = _np.linalg.norm(x, axis=0)
    anorm = float(_np.linalg.norm(a.data))
    istop = _np.where(_np.linalg.norm(work, axis=0) == 0, 0,
                      _np.where(rnorm <= btol * bnorm + atol * anorm * xnorm, 1,
                                _np.where(arnorm <= atol * anorm * rnorm, 2, 3)))
    info = _make_result(res, a, b, f"tcsolve.{name}(A, b, atol={atol!r}, btol={btol!r})", t0)
    if show:
        print(f"tcsolve.{name}: {info.method}, status {info.status}, istop {istop.tolist()}, "
              f"|r| {rnorm.tolist()}, |A'r| {arnorm.tolist()}" + (f" ({info.reason})" if info.reason else ""))

    one = one_d or s == 1  # SciPy's b is a vector: scalars out; a block: one per column

    def col(v):
        return v[0] if one else v

    xout = _to_device(x[:, 0] if one else x, dev)
    stop = int(istop[0]) if one else istop
    nan = _np.full(s, _np.nan)
    if name == "lsqr":
        var = _np.zeros(a.n) if one else _np.zeros((a.n, s))
        out = (xout, stop, 0, col(rnorm), col(rnorm), anorm, col(nan), col(arnorm), col(xnorm), var)
    else:
        out = (xout, stop, 0, col(rnorm), col(arnorm), anorm, col(nan), col(xnorm))
    return out + (info,) if return_info else out


def _nonnegative(v, name):
    v = _args.number(v, name, finite=False)
    if v < 0:
        raise ValueError(f"{name}={v!r}: expected a non-negative number")
    return v


def _host_matrix(A, square):
    """(HostCsr, whether A came from the GPU: the answer goes back there)."""
    return _inputs.as_host_matrix(A, "A", square=square), _inputs.is_device_array(A)


def _host_rhs(b):
    """b on the host (a CuPy array copied; a sparse one densified)."""
    if _inputs.is_device_array(b):
        import cupy
        import cupyx.scipy.sparse as csp
        return b.get().toarray() if csp.issparse(b) else cupy.asnumpy(b)
    if _sp.issparse(b):
        return b.toarray()
    return b


def _to_device(x, dev):
    if not dev:
        return x
    import cupy
    return cupy.asarray(x)


def _solve(a, rhs, opt):
    return _tcsolve.direct_csr(a.m, a.n, a.indptr, a.indices, a.data, rhs, opt)


def _warn_status(res, fname):
    """A singular A: MatrixRankWarning (SciPy's warning), naming why; any other unconverged status:
    LinAlgWarning with the library's reason."""
    if res["status"] == "converged":
        return
    reason = res["reason"] or res["status"]
    if res["status"] == "breakdown" and "singular" in reason:
        _warnings.warn(f"tcsolve.{fname}: A is singular ({reason}); returning the least-squares solution "
                       f"({res['method']}), where SciPy's spsolve returns NaN", MatrixRankWarning, stacklevel=3)
    else:
        _warnings.warn(f"tcsolve.{fname}: the answer did not pass its check ({res['status']}: {reason})",
                       _InaccurateWarning, stacklevel=3)


def _make_result(res, a, b, command, t0):
    """The Result of a direct solve (the fields of `tcsolve solve --method direct --out`)."""
    total = _time.perf_counter() - t0
    fields = {
        "method_reason": f"as asked ({command.split('(')[0]}: the direct engine of A's kind)",
        "task": "solve", "right_hand_sides": res["solution"].shape[1],
        "rhs": f"{type(b).__module__}.{type(b).__name__} {tuple(_np.shape(b))}",
        "matrix": a.desc, "time_read": 0.0, "time_write": 0.0, "tcsolve_version": _tcsolve.__version__,
        "command": command, "job": "", "job_options": command, "reorder": "none", "seed": 0,
        "matrix_checksum": "", "input_stamps": "", "column_iterations": _np.zeros(res["solution"].shape[1],
                                                                                   dtype=_np.int64),
        "history": {"iteration": _np.zeros(0), "residual_norms": _np.zeros((0, 0)), "values": _np.zeros((0, 0)),
                    "converged": _np.zeros(0), "active": _np.zeros(0), "apply_seconds": _np.zeros(0),
                    "dense_seconds": _np.zeros(0), "ortho": []},
    }
    fields.update({k: v for k, v in res.items() if k != "history" or len(v.get("iteration", ())) > 0})
    fields["time_preprocess"] = max(0.0, total - res.get("time_setup", 0.0) - res.get("time_solve", 0.0))
    return Result(fields)
