#!/usr/bin/env python3
"""Anchors for the solver benchmark (same GPU / same machine's CPU): CuPy eigsh, torch.lobpcg,
SciPy eigsh for 16 smallest eigenpairs of the 2D/3D Laplacians, and 32 x CuPy cg for 32
right-hand sides. Prints CSV rows in solver_bench's format:
method,device,matrix,k,seconds,status,iterations,applies,max_rel_residual,max_eig_error,orth,detail
rel residual = ||A x - lam x|| / ((||A||_inf + |lam|) ||x||); eigenvalue error vs the closed form
(sorted, so a missed copy of a double eigenvalue shows as a large error). Best of 2 runs."""
import sys, time, math
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def lap(dim, n):
    t = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    i = sp.identity(n, format="csr")
    if dim == 2:
        return (sp.kron(t, i) + sp.kron(i, t)).tocsr()
    return (sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t)).tocsr()


def exact(dim, n, k):
    e = 2 - 2 * np.cos(np.pi * np.arange(1, n + 1) / (n + 1))
    m = min(n, k)
    if dim == 2:
        s = (e[:m, None] + e[None, :m]).ravel()
    else:
        s = (e[:m, None, None] + e[None, :m, None] + e[None, None, :m]).ravel()
    return np.sort(s)[:k]


def quality(a, lam, x, ex):
    order = np.argsort(lam)
    lam, x = lam[order], x[:, order]
    anorm = abs(a).sum(axis=1).max()
    r = a @ x - x * lam
    rel = np.max(np.linalg.norm(r, axis=0) / ((anorm + abs(lam)) * np.linalg.norm(x, axis=0)))
    err = np.max(abs(lam - ex))
    xn = x / np.linalg.norm(x, axis=0)
    orth = np.max(abs(xn.T @ xn - np.eye(x.shape[1])))
    return rel, err, orth


def best_of(f, reps=2):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        t = time.perf_counter() - t0
        if best is None or t < best[0]:
            best = (t, out)
    return best


def row(*v):
    print(",".join(str(x) for x in v), flush=True)


def eig_anchors(dim, n, k=16, tol=1e-8):
    name = f"gen:lap{dim}d:{n}"
    a = lap(dim, n)
    ex = exact(dim, n, k)
    # SciPy eigsh on the CPU (ARPACK Lanczos, which='SA').
    t, (lam, x) = best_of(lambda: sla.eigsh(a, k=k, which="SA", tol=tol))
    rel, err, orth = quality(a, lam, x, ex)
    row("scipy-eigsh", "cpu", name, k, f"{t:.4f}", "", "", "", f"{rel:.2e}", f"{err:.2e}", f"{orth:.1e}", "")
    try:
        import cupy as cp
        import cupyx.scipy.sparse as csp
        import cupyx.scipy.sparse.linalg as csla
        ag = csp.csr_matrix(a)
        def run():
            lam, x = csla.eigsh(ag, k=k, which="SA", tol=tol)
            cp.cuda.Device().synchronize()
            return lam, x
        t, (lam, x) = best_of(run)
        rel, err, orth = quality(a, cp.asnumpy(lam), cp.asnumpy(x), ex)
        row("cupy-eigsh", "cuda", name, k, f"{t:.4f}", "", "", "", f"{rel:.2e}", f"{err:.2e}", f"{orth:.1e}", "")
    except Exception as e:  # noqa
        row("cupy-eigsh", "cuda", name, k, "", "error", "", "", "", "", "", str(e).replace(",", ";")[:80])
    try:
        import torch
        coo = a.tocoo()
        at = torch.sparse_coo_tensor(np.vstack([coo.row, coo.col]), coo.data, a.shape,
                                     dtype=torch.float64, device="cuda").coalesce()
        x0 = torch.rand(a.shape[0], k, dtype=torch.float64, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
        def run():
            lam, x = torch.lobpcg(at, k=k, X=x0.clone(), largest=False, tol=tol, niter=20000)
            torch.cuda.synchronize()
            return lam, x
        t, (lam, x) = best_of(run)
        rel, err, orth = quality(a, lam.cpu().numpy(), x.cpu().numpy(), ex)
        row("torch-lobpcg", "cuda", name, k, f"{t:.4f}", "", "", "", f"{rel:.2e}", f"{err:.2e}", f"{orth:.1e}", "")
    except Exception as e:  # noqa
        row("torch-lobpcg", "cuda", name, k, "", "error", "", "", "", "", "", str(e).replace(",", ";")[:80])


def cg_anchor(n=100, s=32, tol=1e-8):
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    a = lap(3, n)
    ag = csp.csr_matrix(a)
    rng = np.random.default_rng(2024)
    b = cp.asarray(rng.uniform(-1, 1, size=(a.shape[0], s)))
    iters = []
    def run():
        iters.clear()
        xs = []
        for j in range(s):
            cnt = [0]
            def cb(xk):
                cnt[0] += 1
            x, info = csla.cg(ag, b[:, j], rtol=tol, maxiter=20000, callback=cb)
            xs.append(x)
            iters.append(cnt[0])
        cp.cuda.Device().synchronize()
        return cp.stack(xs, axis=1)
    t, x = best_of(run)
    r = b - ag @ x
    rel = float(cp.max(cp.linalg.norm(r, axis=0) / cp.linalg.norm(b, axis=0)))
    row("cupy-cg-x32", "cuda", f"gen:lap3d:{n}", s, f"{t:.4f}", "", max(iters), "", f"{rel:.2e}", "", "", "")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what in ("all", "eig"):
        eig_anchors(2, 200)
        eig_anchors(3, 40)
    if what in ("all", "cg"):
        cg_anchor()
