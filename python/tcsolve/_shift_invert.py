"""SciPy's shift-invert selections without a factorization of ours: the folded spectrum (the C++
driver's, solvers/eigs/folded.cpp, with M⁻¹ from here), the caller's OPinv, and the transformed
modes (which= on w', module _spectral)."""

import numpy as _np

from . import _inputs, _spectral
from ._eigs_common import _dense_all, _ends, _ritz_from, _run_eigs


# What to pass instead when CG on an operator cannot apply its inverse: Minv where SciPy takes
# it (no sigma), else OPinv or the matrices themselves (then factorized).
HINT_MINV = "pass Minv= (M^-1), as SciPy's eigsh takes it"
HINT_OPINV = "pass OPinv= ((A - sigma*M)^-1), or A and M as matrices (factorized then)"


# Up to this n the folded spectrum gives way to dense LAPACK on all pairs (one n-column product
# with A and M, an n × n eigh: 0.02 s at n = 500 against seconds of folded LOBPCG with inner CG).
DENSE_FOLDED_N = 500
# What the run through OPinv attains on A (conv 'norm'): the θ-run's residuals come back amplified
# by up to ‖A − cM‖·‖M⁻¹‖/|θ| (64ε was missed by 1.3-19× at n = 60). tol=0 is tested here on that
# path, and says so (the C++ folded operator has the same floor: solvers/eigs/folded.cpp).
FOLDED_TOL = 1e-10


# Up to this n a shift-invert selection of a matrix takes all pairs from dense LAPACK instead of
# a sparse factorization: the factorization's set-up alone (MUMPS, 12-17 ms at n = 6) costs more
# than eigh of all pairs (0.05 ms at n = 6, about 10 ms at n = 256 on the 2-core CPU).
DENSE_SIGMA_N = 256


def dense_nearest(a, b, opt, c, m):
    """The m eigenpairs nearest c from all n by dense LAPACK (small n), checked on (A, B) by
    _ritz_from; None where _dense_all declines (large n, device input)."""
    full = _dense_all(a, b, opt)
    if full is None:
        return None
    near = _np.argsort(_np.abs(_np.asarray(full["eigenvalues"]) - c), kind="stable")[:m]
    return _spectral.take([(full, int(j)) for j in _np.sort(near)],
                          f"the {m} eigenvalues nearest {c:g} of all {a.n} (dense)")


def _inverse_of(b, minv, tol, name="M", hint=HINT_MINV):
    """X -> B⁻¹·X: Minv if given (SciPy's meaning), a sparse LU of a matrix B (made at the first
    call), else CG per column, its tolerance floored as SciPy's IterInv floors it (1000·√n·ε:
    below, rounding decides)."""
    import scipy.sparse.linalg as sla
    if minv is not None:
        return lambda y: _np.asarray(minv.matmat(_np.asfortranarray(y)), dtype=float)
    if b.kind == "csr":
        lu = []

        def lu_solve(y):
            if not lu:
                lu.append(sla.splu(b.scipy().tocsc()))
            return lu[0].solve(_np.asarray(y, dtype=float))
        return lu_solve
    op = sla.LinearOperator((b.n, b.n), matvec=lambda v: b.matmat(v.reshape(-1, 1))[:, 0], dtype=float)
    inner = max(min(tol, 1e-12) * 1e-2, 1000 * _np.sqrt(b.n) * _np.finfo(float).eps)

    def cg_columns(y):
        out = _np.empty_like(y, dtype=float)
        for j in range(y.shape[1]):
            xj, info = sla.cg(op, y[:, j], tol=inner, atol=0, maxiter=10 * b.n)
            if info != 0:
                raise ValueError(f"{name}: CG on {name} (a LinearOperator) did not reach {inner:.2g} in "
                                 f"{info} iterations while applying {name}^-1 ({hint})")
            out[:, j] = xj
        return out
    return cg_columns


def _folded_nearest(a, b, opt, c, m, minv, inverted="M", hint=HINT_MINV):
    """The m eigenpairs nearest c without a factorization (operators): dense LAPACK for small
    problems, else the C++ driver's folded operator (nearest c on operators: its m smallest, then
    Rayleigh-Ritz with (A, B) and the true residual test), given B⁻¹ from here (Minv, a sparse LU
    or CG: `inverted` names the matrix CG inverts, `hint` what to pass instead when it cannot)."""
    if a.kind == "device" or (b is not None and b.kind == "device"):
        raise NotImplementedError(f"eigenvalues nearest {c:g} of CuPy input need a factorization or a "
                                  "folded operator on the GPU, which tcsolve does not have: pass the "
                                  "matrix as SciPy/NumPy (shift-invert on the host) or use which='SA'/'LA'")
    if 3 * m >= a.n or a.n <= DENSE_FOLDED_N:
        # A block method's basis [X, R, P] (3m columns) cannot stay independent in n dimensions,
        # and for small n the folded run (CG inside every product, accuracy squared away) costs
        # more than LAPACK: all n pairs by dense LAPACK, the m nearest c kept.
        near = dense_nearest(a, b, opt, c, m)
        if near is not None:
            return near
    run = dict(opt, which="nearest", sigma=c, k=m)
    if b is not None:
        run["mass_inverse"] = _inverse_of(b, minv, opt["tol"], inverted, hint)
    return _run_eigs(a, b, run)


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
    floor_note = ""
    if opt["conv"] == "norm" and opt["tol"] < FOLDED_TOL:
        # tol=0 (machine precision): through the caller's inverse, as through the folded
        # spectrum, the floor is above it (the θ-run's residual is amplified on the way back)
        opt = dict(opt, tol=FOLDED_TOL)
        floor_note = (f"; tested at the attainable floor through OPinv, conv 'norm' tol {FOLDED_TOL:g} "
                      "(machine precision needs a factorization: pass A and M as matrices)")
    op = _InverseProduct(b, inv, a.n)
    # A residual s of the θ-problem maps to (A − cM)·M⁻¹·s/θ on (A, M), which can be ‖A − cM‖·‖M⁻¹‖
    # times larger: the θ-run gets tol·1e-4 (floored at 1e-14); _ritz_from checks the outcome.
    run = _run_eigs(op, b, dict(opt, which="largest_magnitude", sigma=None, k=m, tol=max(opt["tol"] * 1e-4, 1e-14),
                                method="lobpcg" if opt["method"] in ("auto", "chebyshev") else opt["method"]))
    return _ritz_from(a, b, opt, run, f"{m} eigenvalues nearest {c:g} through OPinv (SciPy's "
                      "(A - sigma M)^-1), checked on A" + floor_note)


def _nearest_by_operator(a, b, opt, sig, k):
    """sigma with A or M a LinearOperator and no OPinv: nearest sigma by the folded spectrum."""
    return _folded_nearest(a, b, opt, sig, k, None, "M", HINT_OPINV)


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
            if pa.n <= DENSE_SIGMA_N:
                near = dense_nearest(pa, pb, opt, c, m)
                if near is not None:
                    return near
            return _run_eigs(pa, pb, dict(opt, which="nearest", sigma=c, k=m))
        return _folded_nearest(pa, pb, opt, c, m, None, "A" if mode == "buckling" else "M", HINT_OPINV)

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
