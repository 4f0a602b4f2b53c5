"""tcsolve.eigsh: SciPy's eigsh on tcsolve's solvers."""

import time as _time

import numpy as _np

from . import _args, _inputs, _spectral
from ._eigs_common import _finish_eigs, _prepare_eigs, _require_positive_diagonal, _run_eigs
from ._shift_invert import DENSE_SIGMA_N, _inverse_of, _nearest_by_operator, _transformed, dense_nearest


# tol=0 (or below), SciPy's (ARPACK's) "machine precision". ARPACK tests its Ritz estimate against ε·|θ|;
# a true residual does not get below the rounding of A·x, u·(‖A‖ + |λ|·‖M‖)·‖x‖, so a relative
# test ‖r‖ ≤ ε·|λ|·‖x‖ cannot be met where |λ| ≪ ‖A‖. What is attainable, and what a dense LAPACK
# solve meets, is a backward error of a small multiple of ε: tol=0 is the norm test
# ‖A·x − λ·M·x‖ ≤ 256ε·(‖A‖ + |λ|·‖M‖)·‖x‖, and the Result says so. 256: LOBPCG's floor lies at
# 43-92ε (662_bus, k = 5, 2000 iterations without passing 64ε); Lanczos and dense reach a few ε.
MACHINE_TOL = 256 * _np.finfo(float).eps
MACHINE_NOTE = ("tol=0 (SciPy: machine precision): tested as ||A x - lambda M x|| <= 256 eps "
                "(||A|| + |lambda| ||M||) ||x|| (conv 'norm'), the attainable floor; eps*|lambda| is "
                "below rounding where |lambda| << ||A||")


def eigsh(A, k=6, M=None, sigma=None, which="LM", v0=None, ncv=None, maxiter=None, tol=0,
          return_eigenvectors=True, Minv=None, OPinv=None, mode="normal", *, method="auto",
          device="auto", precision="auto", block_size=None, conv="rel", seed=1, certify=False,
          return_info=False):
    """k eigenpairs of the real symmetric A (A·x = λ·M·x with M), like scipy.sparse.linalg.eigsh.

    which: 'LA' largest, 'SA' smallest, 'LM' largest magnitude (both ends, see below), 'SM'
    smallest magnitude (matrices: nearest 0 by shift-invert; operators: an end that is one-signed,
    else the folded operator (A − 0·M)·M⁻¹·(A − 0·M)), 'BE' half from each end: the C++ driver
    makes these of its runs (solvers/eigs/eigs.hpp) and says which it ran in
    ``Result.method_reason``. With ``sigma``: SciPy's shift-invert modes (``mode`` 'normal',
    'buckling', 'cayley'), ``which`` applied to the transformed value w' (module _spectral);
    'LM' in normal mode is the k eigenvalues nearest sigma (one shift-invert run through a sparse
    factorization of A − σM, or through ``OPinv`` = (A − σM)⁻¹ when given, or the folded
    operator for a LinearOperator). ``Minv`` = M⁻¹ where tcsolve needs it (the folded operator).
    Eigenvalues come back in ascending order, column j of the vectors with value j; without
    vectors in ARPACK's order, as SciPy's.

    v0 (n,): start vector (the first column of the initial block; the rest is random); ncv: Lanczos basis size before a restart; maxiter: iteration limit
    (Lanczos restarts / LOBPCG steps; default: the method's); tol: the convergence tolerance of
    the ``conv`` test (``rel``: ‖A·x − λ·M·x‖ ≤ tol·|λ|·‖x‖, ARPACK's meaning); tol <= 0, the
    default (SciPy: machine precision), is the backward-error test at the attainable floor,
    ‖A·x − λ·M·x‖ ≤ 256ε·(‖A‖ + |λ|·‖M‖)·‖x‖ (``conv='norm'``, tolerance 5.7e-14: ε·|λ| lies below
    the rounding of A·x where |λ| ≪ ‖A‖), said so in ``Result.method_reason``; tol=None is
    tcsolve's own default, 1e-8 with the ``conv`` test.

    'LM' without sigma: the largest end is computed and, unless Gershgorin's bound proves no
    negative eigenvalue can be larger in magnitude, the smallest end too; the k of largest |λ|
    are kept (the cost of up to two solves).

    Not converged: raises :class:`NoConvergence` (``.eigenvalues``, ``.eigenvectors``, ``.info``).
    """
    t0 = _time.perf_counter()
    k = _args.integer(k, "k", 1)
    which, sig, mode = _scipy_rules(which, sigma, M, Minv, OPinv, mode)
    buckling = mode == "buckling"
    shape = getattr(A, "shape", None)
    n_a = int(shape[0]) if shape is not None and len(shape) == 2 else _inputs.as_matrix(A, "A").n
    if k >= n_a:
        return _all_pairs(A, M, k, n_a, buckling, return_eigenvectors)
    a, b = _prepare_eigs(A, M, k, "M", mass_definite=not buckling)
    if buckling:
        _require_positive_diagonal(a, "A", "mode='buckling' (A is the inner product there: "
                                   "symmetric positive definite)")
    opt = _options(a, k, v0, ncv, maxiter, tol, device, precision, method, conv, block_size, seed, certify)
    machine = tol is not None and float(tol) <= 0  # (a number: _options checked it)
    command = _args.call_repr("eigsh", k=k, M=None if M is None else "M", sigma=sigma, which=which,
                              ncv=ncv, maxiter=maxiter, tol=tol, mode=None if mode == "normal" else mode,
                              method=method, device=device, precision=precision, block_size=block_size,
                              conv=conv)
    opinv = None if OPinv is None else _inputs.as_matrix(OPinv, "OPinv")
    minv = None if Minv is None else _inputs.as_matrix(Minv, "Minv")
    for name, op in (("OPinv", opinv), ("Minv", minv)):
        if op is not None and op.n != a.n:
            raise ValueError(f"{name} is {op.n} x {op.n} but A is {a.n} x {a.n}")
    if sig is None:
        res, wname = _without_sigma(a, b, opt, k, which, minv, return_eigenvectors)
    elif mode == "normal" and which == "LM" and opinv is None:  # the common case: one run
        if a.kind != "csr" or (b is not None and b.kind != "csr"):
            res = _nearest_by_operator(a, b, opt, sig, k)
        else:
            res = (dense_nearest(a, b, opt, sig, k) if a.n <= DENSE_SIGMA_N else None) \
                or _run_eigs(a, b, dict(opt, which="nearest", sigma=sig))
        wname = "nearest"
    else:
        res = _transformed(a, b, opt, k, sig, which, mode, opinv)
        wname = f"{which} of w' ({mode} mode, sigma {sig:g})"
    if machine:
        res["method_reason"] = (res.get("method_reason", "") + "; " + MACHINE_NOTE).strip("; ")
    # SciPy's order: ascending with vectors; without them ARPACK's (the most wanted last): 'SM'
    # and 'SA' without sigma descending, everything else ascending.
    order = "descending" if (not return_eigenvectors and sig is None and which in ("SM", "SA")) else "ascending"
    return _finish_eigs(res, a, b, t0, command, wname, k, order, return_eigenvectors, return_info)


def _scipy_rules(which, sigma, M, Minv, OPinv, mode):
    """which (upper case), sigma (a float or None) and mode after SciPy's argument rules
    (arpack.py), with its exception types."""
    which = which.upper() if isinstance(which, str) else which
    if which not in ("LM", "SM", "LA", "SA", "BE"):
        raise ValueError(f"which={which!r}: expected 'LM', 'SM', 'LA', 'SA' or 'BE' (as scipy.sparse.linalg.eigsh)")
    if sigma is None:
        if OPinv is not None:
            raise ValueError("OPinv should not be specified with sigma = None.")
        if M is None and Minv is not None:
            raise ValueError("Minv should not be specified with M = None.")
        return which, None, "normal"  # SciPy ignores mode without sigma
    if Minv is not None:
        raise ValueError("Minv should not be specified when sigma is")
    if mode not in _spectral._MODES:
        raise ValueError(f"unrecognized mode '{mode}'")
    sig = _args.number(sigma, "sigma")
    if mode == "buckling" and sig == 0:
        raise ValueError("mode='buckling' with sigma=0: w' = lambda/(lambda - sigma) is 1 for every "
                         "eigenvalue, so no eigenvalue can be selected (use sigma != 0)")
    return which, sig, mode


def _all_pairs(A, M, k, n, buckling, return_eigenvectors):
    """k >= n. SciPy: a warning and dense eigh for dense A (all n pairs), TypeError otherwise."""
    if isinstance(A, _np.ndarray) and (M is None or isinstance(M, _np.ndarray)):
        import warnings
        import scipy.linalg as sl
        warnings.warn("k >= N for N * N square matrix. Attempting to use scipy.linalg.eigh instead.",
                      RuntimeWarning, stacklevel=3)
        a_chk, b_chk = _prepare_eigs(A, M, 0, "M", mass_definite=not buckling)
        return sl.eigh(a_chk.scipy().toarray(), b=None if b_chk is None else b_chk.scipy().toarray(),
                       eigvals_only=not return_eigenvectors)
    raise TypeError(f"k = {k} >= n = {n}: tcsolve.eigsh (as scipy.sparse.linalg.eigsh) computes all "
                    "eigenvalues only for a dense NumPy A; use scipy.linalg.eigh(A.toarray()) or reduce k")


def _options(a, k, v0, ncv, maxiter, tol, device, precision, method, conv, block_size, seed, certify):
    """The C++ driver's option dict (which and sigma are set per run)."""
    backend = _args.backend(device, a.kind, precision)
    _args.choice(method, "method", _args.METHODS)
    _args.choice(conv, "conv", _args.CONV_TESTS)
    if tol is not None and _args.number(tol, "tol", finite=False) <= 0:
        tol, conv = MACHINE_TOL, "norm"  # SciPy's tol <= 0: machine precision (see MACHINE_TOL)
    opt = {"k": k, "which": None, "sigma": None, "method": method, "conv": conv,
           "tol": _args.DEFAULT_TOL if tol is None else _args.tol(tol, "tol"), "device": backend,
           "precision": precision, "seed": _args.seed(seed), "certify": bool(certify)}
    if maxiter is not None:
        opt["max_iterations"] = _args.integer(maxiter, "maxiter", 1)
    if ncv is not None:
        ncv = _args.integer(ncv, "ncv", k + 1)
        if ncv > a.n:
            raise ValueError(f"ncv={ncv}: must be at most n = {a.n}")
        opt["basis"] = ncv
    if block_size is not None:
        opt["block_size"] = _args.integer(block_size, "block_size", 1)
    if v0 is not None:
        v, _ = _inputs.as_block(v0, a.n, "v0", device=a.kind == "device")
        if v.shape[1] != 1:
            raise ValueError(f"v0: expected one start vector of shape ({a.n},), got {v0.shape}")
        opt["v0"] = v.get() if a.kind == "device" else v
    return opt


_WHICH = {"LA": "largest", "SA": "smallest", "LM": "largest_magnitude", "SM": "smallest_magnitude",
          "BE": "both_ends"}


def _without_sigma(a, b, opt, k, which, minv, return_eigenvectors):
    """(result dict, which name) for which= without sigma: one call of the C++ driver, which runs
    the ends, merges them or folds the operator (without return_eigenvectors its vectors are not
    copied off the device)."""
    name = _WHICH[which]
    run = dict(opt, which=name, want_vectors=bool(return_eigenvectors))
    if which == "SM" and b is not None and a.kind != "device" and "operator" in (a.kind, b.kind):
        # M⁻¹ for the folded operator, should it come to that: Minv, a sparse LU or CG on M
        run["mass_inverse"] = _inverse_of(b, minv, opt["tol"])
    return _run_eigs(a, b, run), name
