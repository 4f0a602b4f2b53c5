"""Which eigenpairs SciPy's ``eigsh`` means, computed from the solver runs tcsolve has.

SciPy's shift-invert modes select by a transformed value w' of each eigenvalue λ (of A·x = λ·M·x):

    normal   w' = 1 / (λ − σ)                   = 0 + 1·t
    buckling w' = λ / (λ − σ)                   = 1 + σ·t       t = 1 / (λ − σ)
    cayley   w' = (λ + σ) / (λ − σ)             = 1 + 2σ·t

and ``which`` picks by w': 'LM' largest |w'|, 'SM' smallest |w'|, 'LA' largest, 'SA' smallest,
'BE' half from each end (one more from the top when k is odd). Every w' = α + β·t is monotone in
λ on each side of the pole σ, so the k pairs wanted lie either around σ (LM, LA, SA) or around
the zero of w', λ₀ = σ − β/α ('SM'; for α = 0 that zero is at ±∞: the two ends of the spectrum).

The pairs around a centre c come from tcsolve's shift-invert solve (the m eigenvalues nearest c,
through a factorization). The selection is complete when the k-th best score beats every score
an eigenvalue outside the computed disc |λ − c| < r could have (the sup over the two rays, taken
at their ends and at ±∞, where w' → α); otherwise m doubles.

Buckling (A = K positive definite, M = K_G possibly indefinite) is solved as the problem
K_G·x = μ·K·x with μ = 1/λ (K as the positive definite mass): there w' = 1/(1 − σμ) =
(−1/σ)·1/(μ − 1/σ), i.e. normal mode with shift 1/σ and β = −1/σ.
"""

import math

import numpy as np

_MODES = ("normal", "buckling", "cayley")


def _score(which, alpha, beta, sigma):
    def w(lam):
        lam = np.asarray(lam, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return alpha + beta / (lam - sigma)
    if which == "LA":
        return w
    if which == "SA":
        return lambda lam: -w(lam)
    if which == "LM":
        return lambda lam: np.abs(w(lam))
    if which == "SM":
        return lambda lam: -np.abs(w(lam))
    raise ValueError(which)


def _outside_bound(which, score, alpha, sigma, c, r):
    """sup of the score over λ with |λ − c| ≥ r (the eigenvalues not computed)."""
    if which in ("LA", "SA", "LM") and abs(sigma - c) >= r:
        return math.inf  # the pole lies outside the disc: scores there are unbounded
    at_inf = {"LA": alpha, "SA": -alpha, "LM": abs(alpha), "SM": -abs(alpha)}[which]
    return float(max(score(c - r), score(c + r), at_inf))


def select(which, k, alpha, beta, sigma, nearest, ends, n, dense):
    """The k pairs SciPy's ``which`` picks by w' = α + β/(λ − σ).

    nearest(c, m) -> result dict of the m eigenpairs nearest c (None: not available);
    ends(k_la, k_sa) -> [result dicts] of the largest k_la and smallest k_sa;
    dense() -> result dict of all n pairs (small problems only, None otherwise).
    Returns (picks, how): picks a list of (result dict, column) in SciPy's order."""
    if not getattr(nearest, "memo", False):
        nearest = _memo(nearest)
    if which == "BE":
        hi = select("LA", k - k // 2, alpha, beta, sigma, nearest, ends, n, dense)
        lo = select("SA", k // 2, alpha, beta, sigma, nearest, ends, n, dense) if k // 2 else ([], "")
        return hi[0] + lo[0], "; ".join(h for h in (hi[1], lo[1]) if h)
    score = _score(which, alpha, beta, sigma)
    if which == "SM" and alpha == 0:
        # w' = β/(λ − σ): the smallest |w'| are the eigenvalues farthest from σ, a prefix and a
        # suffix of the sorted spectrum, so among the k largest and the k smallest.
        runs = ends(k, min(k, n - k))
        return _best(runs, score, k), "the k largest and k smallest eigenvalues, kept by |w'|"
    c = sigma if which != "SM" else sigma - beta / alpha
    # 'LA'/'SA' around the pole want one side of it: about half the m nearest lie there, so the
    # first run asks for 2k (asking for k first cost a second run nearly always).
    m = min(2 * k, n - 2) if which in ("LA", "SA") else k
    while True:
        run = nearest(c, m)
        if run is None:
            break
        lam = np.asarray(run["eigenvalues"])
        r = float(np.max(np.abs(lam - c)))
        picks = _best([run], score, k)
        kth = float(score(lam[picks[-1][1]]))
        # ≥: eigenvalues at exactly distance r tie with the computed one at r (an arbitrary pick
        # among equals, as ARPACK's); everything farther scores lower.
        if kth >= _outside_bound(which, score, alpha, sigma, c, r):
            return picks, f"the {m} eigenvalues nearest {c:g} (shift-invert), kept by w'"
        if 2 * m >= n - 1:
            break
        m = min(2 * m, n - 2)
    full = dense()
    if full is None:
        raise RuntimeError(f"could not prove which {k} eigenvalues have the {which} values of w' "
                           f"without computing more than half of the spectrum (n = {n})")
    return _best([full], score, k), "all eigenpairs (dense), kept by w'"


def _memo(nearest):
    """nearest(c, m) remembering its largest run per centre: the m nearest c are among the m' > m
    nearest, so a larger run answers a smaller question (BE's two halves share their runs)."""
    runs = {}

    def call(c, m):
        have = runs.get(c)
        if have is not None and len(have["eigenvalues"]) >= m:
            return have
        run = nearest(c, m)
        if run is not None:
            runs[c] = run
        return run
    call.memo = True
    return call


def _best(runs, score, k):
    """The k (run, column) of best score over the runs, best first (ties: run order)."""
    cand = [(float(score(v)), i, j) for i, run in enumerate(runs)
            for j, v in enumerate(np.asarray(run["eigenvalues"]))]
    cand.sort(key=lambda t: -t[0])
    return [(runs[i], j) for _, i, j in cand[:k]]


_STATUS_RANK = {"converged": 0, "unverified": 1, "not_converged": 2, "breakdown": 3}
_CERT_RANK = {"yes": 0, "not_checked": 1, "no": 2}


def take(picks, how):
    """One result dict holding the picked pairs (columns of several runs)."""
    runs = []
    for run, _ in picks:
        if not any(run is r for r in runs):
            runs.append(run)
    if not runs:
        raise RuntimeError("no eigenpairs selected")
    out = dict(runs[0])
    for key in ("eigenvalues", "residual_norms", "residual_bounds", "error_bounds"):
        vals = []
        for run, j in picks:
            arr = np.asarray(run.get(key, []))
            vals.append(arr[j] if arr.size == np.asarray(run["eigenvalues"]).size else np.nan)
        out[key] = np.asarray(vals, dtype=float)
    out["eigenvectors"] = np.column_stack([np.asarray(run["eigenvectors"])[:, j] for run, j in picks]) \
        if all(np.asarray(run["eigenvectors"]).ndim == 2 for run, _ in picks) else np.zeros((0, 0))
    out["status"] = max((r["status"] for r in runs), key=lambda s: _STATUS_RANK.get(s, 9))
    out["reason"] = "; ".join(r["reason"] for r in runs if r.get("reason"))
    for key in ("iterations", "operator_applies", "time_plan", "time_setup", "time_solve", "time_verify"):
        out[key] = sum(r.get(key, 0) for r in runs)
    if len(runs) > 1:
        from ._eigs_common import _concat_history
        h = runs[0]["history"]
        for r in runs[1:]:
            h = _concat_history(h, r["history"])
        out["history"] = h
        out["certified"] = max((str(r.get("certified", "")) for r in runs),
                               key=lambda s: _CERT_RANK.get(s, 3))
    out["method_reason"] = (out.get("method_reason", "") + "; " + how).strip("; ")
    return out
