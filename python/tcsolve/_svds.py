"""tcsolve.svds: SciPy's svds on tcsolve's thick-restart block Golub-Kahan-Lanczos
(solvers/svd/svds.hpp) -- A itself, not AᵀA: singular values to rounding of σ₁, every triplet
checked on its true residuals ‖A·v − σ·u‖ and ‖Aᵀ·u − σ·v‖ against tol·σ₁."""

import numbers
import time as _time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

from . import _args, _inputs, _tcsolve
from ._result import NoConvergence
from ._svds_result import SvdsResult, order_result

# tol=0 (SciPy: machine precision) and the floor of every tol. The block GKL's true residuals
# stall between 7ε and 1200ε·σ₁ (measured on the shared general matrices, random sparse and dense
# ones, k = 6: at 256ε a 2000 x 5000 random sparse matrix did not converge in 300 restarts, and
# restarts past convergence drift up); at 4096ε all of them converged, with 1-1.7x the restarts
# of tol 1e-8 and singular values within 5e-14·σ₁ of ARPACK's.
MACHINE_TOL = 4096 * np.finfo(float).eps
MACHINE_NOTE = ("tol=0 (SciPy: machine precision): tested as ||A v - s u||, ||A^T u - s v|| <= "
                "4096 eps s_1, the floor the block GKL reaches reliably (tolerances below it are raised to it)")
# which='SM' (and solver='lobpcg' below 5k): a dense SVD (LAPACK) up to this many entries of A (128 MiB).
DENSE_ENTRIES = 2**24
SOLVERS = ("tcsolve", "arpack", "propack", "lobpcg")
_EXTRA_KEYS = ("device", "block_size", "method")
_METHODS = ("auto", "gkl", "dense")


def svds(A, k=6, ncv=None, tol=0, which="LM", v0=None, maxiter=None, return_singular_vectors=True,
         solver="tcsolve", random_state=None, options=None, *, device="auto", block_size=None,
         certify=None, recheck=True, return_info=False):
    """The k largest (or smallest) singular triplets of A (m × n, any real sparse, dense or
    LinearOperator A), as scipy.sparse.linalg.svds: returns ``(u, s, vh)``, u m × k, s ascending
    (SciPy's order), vh k × n, A·vh[j] = s[j]·u[:, j].

    solver: 'tcsolve' (the default), or SciPy's 'arpack', 'propack', 'lobpcg' -- accepted with
    their argument rules (k < min(m, n) for 'arpack'/'lobpcg', k <= min(m, n) otherwise; the shape
    of v0; return_singular_vectors='u' returns vh=None and 'vh' u=None, for 'arpack'/'lobpcg' as
    SciPy only when m <= n ('u') or m > n ('vh'), else both); all run tcsolve's block GKL.
    tol: the residual test relative to σ₁ (tolerances below 4096ε ≈ 9.1e-13, and tol=0, SciPy's
    "machine precision", are 4096ε: the block GKL's reliable floor; Result.tolerance says which).
    ncv: the Krylov basis (columns before a restart; 'arpack'/'tcsolve', ignored by SciPy's other
    two); block = min(k, 16, ncv − k). maxiter: restarts (default 1000). v0: the first start
    vector: length min(m, n) ('arpack', 'lobpcg'), m ('propack'), n or m ('tcsolve'); a left
    vector (length m) starts from Aᵀ·v0. random_state: None, an int, a Generator or RandomState
    (SciPy's), draws the seed of the random start block. options: None, or a dict of tcsolve's
    keywords below.
    which='SM' (the smallest): computed by a dense SVD (LAPACK) of A when m·n <= 2**24, with
    the same residual test; larger A raises NotImplementedError (the block GKL converges to the
    largest end only). A matrix whose smaller side cannot hold the Krylov basis (min(m, n) below
    about k + 3·block) is solved by a dense SVD too (Result.method); solver='lobpcg' follows
    SciPy's lobpcg: min(m, n) < 5k is solved densely with its UserWarning "The problem size ...".

    tcsolve's keywords: method ('auto': the block GKL or a dense SVD, whichever the planner prices
    lower; 'gkl': the iteration; 'dense': the dense SVD), device ('auto', 'cpu', 'cuda'), block_size (at least the multiplicity of
    a repeated singular value to get all its copies; default min(k, 16)), certify (None: count the
    singular values above the k-th by Sylvester's inertia of [0 A; A^T 0] - tau*I where that is
    cheap, for a SciPy sparse or dense A; True: always, an error for other inputs; False: never;
    Result.certified and .certificate say what was counted), recheck (True: where no count is
    made, a converged set is re-checked by a short Krylov run from fresh random vectors with the
    found vectors deflated; False: not; Result.verification says which check ran), return_info=True appends
    a Result (status, residual_av, residual_atu, a_norm, iterations, history, timings;
    ``save(path)`` writes the file of ``tcsolve svds --out``).

    Complex A: TypeError (tcsolve is real). Not converged: raises :class:`NoConvergence` (as
    eigsh), with ``.u``, ``.s``, ``.vh`` (the best approximations) and ``.info`` (the Result).
    CuPy input is solved on the GPU without a host copy and answered with CuPy arrays.
    """
    t0 = _time.perf_counter()
    solver, k, ncv, tol, which, v0, maxiter, rsv, seed = _scipy_rules(
        A, k, ncv, tol, which, v0, maxiter, return_singular_vectors, solver, random_state)
    device, block_size, method = _extra(options, device, block_size)
    a = operand(A)
    kmax = min(a.m, a.n) if solver in ("tcsolve", "propack") else min(a.m, a.n) - 1
    if not 0 < k <= kmax:
        bound = "<=" if solver in ("tcsolve", "propack") else "<"
        raise ValueError(f"`k` must be an integer satisfying `0 < k {bound} min(A.shape)` (k={k}, A is "
                         f"{a.m}x{a.n}, solver={solver!r})")
    if solver == "arpack" and ncv is not None and ncv >= min(a.m, a.n):
        raise ValueError(f"`ncv` must be an integer satisfying `k < ncv < min(A.shape)` (ncv={ncv}, k={k}, A is "
                         f"{a.m}x{a.n})")
    opt = options_dict(a, k, tol, maxiter, seed, device, block_size, ncv if solver in ("tcsolve", "arpack") else None)
    opt["method"] = method
    if v0 is not None:
        opt["v0"] = _start_vector(a, v0, solver)
    if certify is not None:
        if not isinstance(certify, (bool, np.bool_)):
            raise ValueError(f"certify={certify!r}: expected None, True or False")
        if certify and a.kind != "csr":
            raise ValueError("certify=True counts the singular values of a sparse matrix held on the host "
                             f"(SciPy sparse or NumPy); this A is a {a.desc}")
        opt["certify"] = "always" if certify else "never"
    if not isinstance(recheck, (bool, np.bool_)):
        raise ValueError(f"recheck={recheck!r}: expected True or False")
    opt["recheck"] = bool(recheck)
    command = _args.call_repr("svds", k=k, ncv=ncv, tol=tol, which=which, maxiter=maxiter, solver=solver,
                              device=device, block_size=block_size)
    small = solver == "lobpcg" and min(a.m, a.n) < 5 * k and a.m * a.n <= DENSE_ENTRIES
    if small:  # SciPy's lobpcg rule (tcsolve.lobpcg's too): dense below 5k, with its warning
        warnings.warn(f"The problem size min(m, n) = {min(a.m, a.n)} is less than 5k = {5 * k}: a dense SVD "
                      "is used instead of the iteration (solver='lobpcg', as SciPy's)", UserWarning, stacklevel=2)
    res = dense_svd(a, k, opt["tol"], which) if which == "SM" or small else run(a, opt)
    if tol < MACHINE_TOL:
        res["method_reason"] = (res.get("method_reason", "") + "; " + MACHINE_NOTE).strip("; ")
    info = finish(res, a, t0, command, "largest" if which == "LM" else "smallest", k)
    u, s, vh = info.u, info.singular_values, info.vt
    want_u, want_vh = rsv in (True, "u"), rsv in (True, "vh")
    if solver in ("arpack", "lobpcg"):  # SciPy computes both unless the Gram side allows one
        want_u, want_vh = want_u or (rsv == "vh" and a.m <= a.n), want_vh or (rsv == "u" and a.m > a.n)
    if a.kind == "device":
        import cupy
        u, s, vh = cupy.asarray(u), cupy.asarray(s), cupy.asarray(vh)
    values_only = not isinstance(rsv, str) and not rsv  # False (or NumPy's False_)
    out = (s,) if values_only else (u if want_u else None, s, vh if want_vh else None)
    if return_info:
        out = out + (info,)
    return out[0] if len(out) == 1 else out


def _scipy_rules(A, k, ncv, tol, which, v0, maxiter, rsv, solver, random_state):
    """SciPy's argument checks (its _iv, in its order, with its messages and exception types;
    what is not SciPy's is appended to its message); A and k's range are checked by the caller."""
    solver = str(solver).lower()
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {set(SOLVERS)}: got {solver!r}")
    if isinstance(A, str) or A is None:
        raise TypeError(f"A: expected a scipy.sparse matrix, a NumPy array, a LinearOperator or a CuPy "
                        f"array, got {type(A).__name__} (type not understood)")
    if int(k) != k or k < 1:
        raise ValueError(f"`k` must be an integer satisfying `0 < k < min(A.shape)` (k={k!r})")
    k = int(k)
    if ncv is not None and solver in ("arpack", "tcsolve"):
        if int(ncv) != ncv or ncv <= k:
            raise ValueError(f"`ncv` must be an integer satisfying `k < ncv < min(A.shape)` (ncv={ncv!r}, k={k})")
        ncv = int(ncv)
    if tol < 0 or not np.isfinite(tol):
        raise ValueError(f"`tol` must be a non-negative floating point value. (tol={tol!r})")
    tol = float(tol)
    which = str(which).upper()
    if which not in ("LM", "SM"):
        raise ValueError(f"`which` must be in {{'LM', 'SM'}} (which={which!r})")
    if v0 is not None:
        v0 = np.atleast_1d(v0)
        if v0.dtype.kind == "c":
            raise TypeError("v0 has complex dtype: tcsolve's svds is real")
        if v0.dtype.kind != "f":
            raise ValueError(f"`v0` must be of floating or complex floating data type. (v0 has dtype {v0.dtype})")
    if maxiter is not None and (int(maxiter) != maxiter or maxiter <= 0):
        raise ValueError(f"`maxiter` must be a positive integer. (maxiter={maxiter!r})")
    maxiter = int(maxiter) if maxiter is not None else None
    if rsv not in {True, False, "vh", "u"}:
        raise ValueError(f"`return_singular_vectors` must be in {{True, False, 'vh', 'u'}} (got {rsv!r})")
    return solver, k, ncv, tol, which, v0, maxiter, rsv, seed_from(random_state)


def seed_from(random_state):
    """tcsolve's seed drawn from SciPy's random_state (None: NumPy's global RandomState, an int: a
    RandomState of that seed, or a Generator / RandomState, which advances)."""
    if random_state is None or random_state is np.random:
        rs = np.random.mtrand._rand
    elif isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, bool):
        rs = np.random.RandomState(random_state)
    elif isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        rs = random_state
    else:
        raise ValueError(f"random_state={random_state!r}: expected None, an integer, a numpy.random.Generator "
                         "or a numpy.random.RandomState")
    if isinstance(rs, np.random.Generator):
        return int(rs.integers(0, 2**63 - 1))
    return int(rs.randint(0, 2**63 - 1, dtype=np.int64))


def _extra(options, device, block_size):
    if options is None:
        return device, block_size, "auto"
    if not isinstance(options, dict) or any(key not in _EXTRA_KEYS for key in options):
        raise ValueError(f"options={options!r}: expected None or a dict with keys among {_EXTRA_KEYS} "
                         "(tcsolve's keywords)")
    method = options.get("method", "auto")
    if method not in _METHODS:
        raise ValueError(f"options['method']={method!r}: expected one of {_METHODS}")
    return options.get("device", device), options.get("block_size", block_size), method


def options_dict(a, k, tol, maxiter, seed, device, block_size, ncv=None, center=False):
    """The C++ entry's option dict (python/src/svd_bindings.cpp)."""
    opt = {"k": k, "tol": max(tol, MACHINE_TOL), "seed": _args.seed(seed), "center": bool(center),
           "device": _args.backend(device, a.kind, "auto")}
    if maxiter is not None:
        opt["max_restarts"] = _args.integer(maxiter, "maxiter", 1)
    block = None if block_size is None else _args.integer(block_size, "block_size", 1, min(a.m, a.n))
    if ncv is not None:
        if block is not None and ncv < k + block:
            raise ValueError(f"ncv={ncv}: must be at least k + block_size = {k + block}")
        block = block if block is not None else max(1, min(k, 16, ncv - k))
        opt["basis"] = ncv
    if block is not None:
        opt["block"] = block
    return opt


def _start_vector(a, v0, solver):
    """v0 as the n values of V's first start column (a left vector of length m: Aᵀ·v0)."""
    p = min(a.m, a.n)
    sides = {"arpack": ("n" if a.m >= a.n else "m",), "lobpcg": ("n" if a.m >= a.n else "m",),
             "propack": ("m",), "tcsolve": ("n", "m")}[solver]
    lengths = [a.n if s == "n" else a.m for s in sides]
    if v0.ndim != 1 or v0.shape[0] not in lengths:
        shapes = " or ".join(f"({n},)" for n in lengths)
        raise ValueError(f"`v0` must have shape {shapes} (solver={solver!r}, A is {a.m}x{a.n}, min {p}): "
                         f"got {v0.shape}")
    x = np.ascontiguousarray(v0, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("v0 has a non-finite value: non-finite values are refused")
    if x.shape[0] == a.n and "n" in sides:
        return x
    return np.ascontiguousarray(apply(a, x.reshape(-1, 1), adjoint=True).ravel())


# ---- the operand: host CSR (m × n), a LinearOperator with its adjoint, CuPy CSR and its transpose

class RectOperator:
    """A LinearOperator A (m × n) and its adjoint, each called back as _inputs.Operator is."""

    kind = "operator"

    def __init__(self, op):
        if not _has_adjoint(op):
            raise TypeError(f"A is a {type(op).__name__} without rmatvec/rmatmat: svds needs products with A^T")
        self.m, self.n = (int(d) for d in op.shape)
        self.fwd, self.bwd = _inputs.Operator(op, "A"), _inputs.Operator(op.H, "A^T (rmatmat)")
        self.desc = f"{type(op).__module__}.{type(op).__qualname__} {self.m}x{self.n} (callback)"

    def matmat(self, x):
        return self.fwd.matmat(x)

    def rmatmat(self, y):
        return self.bwd.matmat(y)


def _has_adjoint(op):
    from scipy.sparse.linalg import _interface
    custom = getattr(_interface, "_CustomLinearOperator", None)
    if custom is not None and isinstance(op, custom):
        return (getattr(op, "_CustomLinearOperator__rmatvec_impl", None) is not None
                or getattr(op, "_CustomLinearOperator__rmatmat_impl", None) is not None)
    t = type(op)
    return (t._rmatvec is not LinearOperator._rmatvec or t._rmatmat is not LinearOperator._rmatmat
            or t._adjoint is not LinearOperator._adjoint)


def operand(A):
    """Classifies and converts A: HostCsr (m × n), RectOperator, or the CuPy DeviceRect."""
    if _inputs.is_device_array(A):
        from ._svds_device import device_rect
        return device_rect(A)
    if sp.issparse(A):
        _not_empty(A.shape)
        return _inputs._host_csr(A, "A", square=False)
    if isinstance(A, LinearOperator) or (hasattr(A, "shape") and hasattr(A, "matvec")):
        op = A if isinstance(A, LinearOperator) else aslinearoperator(A)
        _inputs._check_real_dtype(op.dtype if op.dtype is not None else np.float64, "A")
        _not_empty(op.shape)
        return RectOperator(op)
    if isinstance(A, (np.ndarray, list, tuple)):
        arr = np.asarray(A)
        if arr.ndim > 2:
            raise ValueError(f"A has shape {arr.shape}: a 2-D matrix is required (array must have ndim <= 2)")
        if arr.ndim == 2:
            _not_empty(arr.shape)
        return _inputs._dense_host(arr, "A", False, "a scipy.sparse matrix, a NumPy array, a LinearOperator "
                                   "or a CuPy array")
    raise TypeError(f"A: expected a scipy.sparse matrix, a NumPy array, a LinearOperator or a CuPy array, "
                    f"got {type(A).__module__}.{type(A).__qualname__} (type not understood)")


def _not_empty(shape):
    if len(shape) == 2 and int(shape[0]) * int(shape[1]) == 0:
        raise ValueError(f"`A` must not be empty (A is {int(shape[0])}x{int(shape[1])})")


# ---- running -------------------------------------------------------------------------------------

def run(a, opt):
    """One C++ solve -> the result dict (host NumPy arrays)."""
    if a.kind == "operator":
        return _tcsolve.svds_operator(a.m, a.n, a.fwd.matmat_owned, a.bwd.matmat_owned, opt)
    if a.kind == "device":
        mu = None
        if opt["center"]:
            mu = a.means()
        _args.sync_cupy()
        res = _tcsolve.svds_device(a.m, a.n, a.nnz, a.ptrs(), a.nnz, a.ptrs_t(), mu, opt)
        if opt["center"]:
            res["total_sq"] = a.centered_sq(mu)
        return res
    return _tcsolve.svds_csr(a.m, a.n, a.indptr, a.indices, a.data, opt)


def dense_svd(a, k, tol, which="SM"):
    """The k smallest (which='SM') or largest singular triplets by LAPACK's SVD of the dense A,
    checked on the true residuals against tol·σ₁ (σ₁ the largest singular value of A)."""
    m, n = a.m, a.n
    if m * n > DENSE_ENTRIES:
        raise NotImplementedError(
            f"which='SM' on a {m}x{n} matrix: tcsolve's block Golub-Kahan-Lanczos converges to the largest "
            f"singular values; the smallest are computed by a dense SVD only up to {DENSE_ENTRIES} entries "
            "(use scipy.sparse.linalg.svds(which='SM'), or tcsolve.eigsh on A^T A with sigma=0)")
    t0 = _time.perf_counter()
    dense = dense_matrix(a)
    u, s, vt = np.linalg.svd(dense, full_matrices=False)
    sel = slice(s.size - k, None) if which == "SM" else slice(0, k)
    u, v, vals = np.asfortranarray(u[:, sel]), np.asfortranarray(vt[sel].T), s[sel]
    t1 = _time.perf_counter()
    r_av = np.linalg.norm(apply(a, v) - u * vals, axis=0)
    r_atu = np.linalg.norm(apply(a, u, adjoint=True) - v * vals, axis=0)
    ok = bool(np.all(r_av <= tol * s[0]) and np.all(r_atu <= tol * s[0]))
    return {"status": "converged" if ok else "not_converged", "s": vals, "U": u, "Vt": np.ascontiguousarray(v.T),
            "reason": "" if ok else "the dense SVD's triplets miss the residual test (tol below this matrix's rounding?)",
            "method": f"dense (LAPACK gesdd of the {m} x {n} matrix; which='{which}')", "residual_av": r_av,
            "residual_atu": r_atu, "a_norm": float(s[0]), "tolerance": tol, "iterations": 0,
            "max_iterations": 0, "operator_applies": 2 * k + min(m, n), "time_setup": 0.0,
            "time_solve": t1 - t0, "time_verify": _time.perf_counter() - t1, "seed": 0, "centered": False,
            "backend": "cpu", "device": "cpu", "history": {"iteration": np.zeros(0, np.int64),
                                                            "converged": np.zeros(0, np.int64),
                                                            "residual_estimates": np.zeros((0, k))},
            "verification": "dense" if ok else "none", "certified": "not_checked", "certificate": "",
            "method_reason": "which='SM': dense SVD (the block GKL finds the largest end)" if which == "SM"
            else "solver='lobpcg' with min(m, n) < 5k: dense SVD, as SciPy's lobpcg"}


def dense_matrix(a):
    """A as a dense host array (the identity of the smaller side through the operator)."""
    if a.kind == "csr":
        return a.scipy().toarray()
    if a.n <= a.m:
        return apply(a, np.eye(a.n))
    return apply(a, np.eye(a.m), adjoint=True).T


def apply(a, x, adjoint=False):
    """A·x or Aᵀ·x for a host block x (CuPy input: on the device, the answer copied back)."""
    if a.kind == "csr":
        return np.asarray((a.scipy().T @ x) if adjoint else a.matmat(x), dtype=np.float64)
    return np.asarray(a.rmatmat(x) if adjoint else a.matmat(x), dtype=np.float64)


def finish(res, a, t0, command, which_name, k):
    """The Result (SciPy's ascending order); raises NoConvergence unless converged."""
    fields = {"k": k, "which": which_name, "matrix": a.desc, "rows": a.m, "cols": a.n,
              "nnz": getattr(a, "nnz", 0) if a.kind != "operator" else 0, "command": command,
              "tcsolve_version": _tcsolve.__version__, "job": "", "job_options": command, "input_stamps": ""}
    fields.update(order_result(res))
    fields["time_preprocess"] = max(0.0, _time.perf_counter() - t0 - sum(
        res.get(key, 0.0) for key in ("time_setup", "time_solve", "time_verify")))
    info = SvdsResult(fields)
    if info.status != "converged":
        bound = info.tolerance * info.a_norm
        n_ok = int(np.sum((info.residual_av <= bound) & (info.residual_atu <= bound)))
        msg = (f"tcsolve svds {info.method}: {info.status} after {info.iterations} restarts ({n_ok} of {k} "
               f"triplets passed the residual test)" + (f": {info.reason}" if info.reason else ""))
        exc = NoConvergence(msg, info.singular_values, info.vt.T, info)
        exc.u, exc.s, exc.vh = info.u, info.singular_values, info.vt
        raise exc
    return info
