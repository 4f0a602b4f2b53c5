#!/usr/bin/env python3
"""Anchors for the solver benchmark on the same GPU (CuPy eigsh, torch.lobpcg, s x CuPy cg) and
the same machine's CPU (SciPy eigsh). Prints CSV rows in solver_bench's format:
method,device,matrix,k,seconds,status,iterations,applies,max_rel_residual,max_eig_error,orth,detail
rel residual = ||A x - lam x|| / ((||A||_inf + |lam|) ||x||); eigenvalue error vs the closed form
(sorted, so a missed copy of a multiple eigenvalue shows as a large error).

usage: solver_anchors.py [gpu|cpu|all]
  gpu: the issue-9 rows: CuPy eigsh on lap3d:100 (k = 16 largest and smallest, k = 64 smallest),
       lap2d:1000 (k = 32), lap2d:200 (k = 16), lap3d:64 (k = 256 is skipped: CuPy eigsh needs
       ncv > k and takes minutes); 32 x CuPy cg and 128 x CuPy cg on lap3d:100 (tol 1e-8).
  cpu: SciPy eigsh and torch.lobpcg on lap2d:200 / lap3d:40 (k = 16), the issue-5 anchors.
Times: one run each after a warm-up call on a small problem (CuPy's first call compiles)."""
import sys, time
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def lap(dim, n):
    t = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    i = sp.identity(n, format="csr")
    if dim == 2:
        return (sp.kron(t, i) + sp.kron(i, t)).tocsr()
    return (sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t)).tocsr()


def exact(dim, n, k, largest=False):
    e = 2 - 2 * np.cos(np.pi * np.arange(1, n + 1) / (n + 1))
    if largest:
        e = e[::-1]
    m = min(n, k)
    if dim == 2:
        s = (e[:m, None] + e[None, :m]).ravel()
    else:
        s = (e[:m, None, None] + e[None, :m, None] + e[None, None, :m]).ravel()
    s = np.sort(s)
    return (s[::-1] if largest else s)[:k]


def quality(a, lam, x, ex, largest=False):
    order = np.argsort(lam)
    if largest:
        order = order[::-1]
    lam, x = lam[order], x[:, order]
    anorm = abs(a).sum(axis=1).max()
    r = a @ x - x * lam
    rel = np.max(np.linalg.norm(r, axis=0) / ((anorm + abs(lam)) * np.linalg.norm(x, axis=0)))
    err = np.max(abs(lam - ex))
    xn = x / np.linalg.norm(x, axis=0)
    orth = np.max(abs(xn.T @ xn - np.eye(x.shape[1])))
    return rel, err, orth


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def row(*v):
    print(",".join(str(x) for x in v), flush=True)


def cupy_eigsh(dim, n, k, which, tol=1e-8):
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    name = f"gen:lap{dim}d:{n}"
    largest = which == "largest"
    a = lap(dim, n)
    ag = csp.csr_matrix(a)
    try:
        def run():
            lam, x = csla.eigsh(ag, k=k, which="LA" if largest else "SA", tol=tol)
            cp.cuda.Device().synchronize()
            return lam, x
        t, (lam, x) = timed(run)
        rel, err, orth = quality(a, cp.asnumpy(lam), cp.asnumpy(x), exact(dim, n, k, largest), largest)
        row("cupy-eigsh", "cuda", name, k, f"{t:.4f}", which, "", "", f"{rel:.2e}", f"{err:.2e}", f"{orth:.1e}", "")
    except Exception as e:  # noqa
        row("cupy-eigsh", "cuda", name, k, "", "error", "", "", "", "", "", str(e).replace(",", ";")[:80])


def cupy_cg(n=100, s=32, tol=1e-8):
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    a = lap(3, n)
    ag = csp.csr_matrix(a)
    rng = np.random.default_rng(2024)
    b = cp.asarray(rng.uniform(-1, 1, size=(a.shape[0], s)))
    iters = []
    def run():
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
    t, x = timed(run)
    r = b - ag @ x
    rel = float(cp.max(cp.linalg.norm(r, axis=0) / cp.linalg.norm(b, axis=0)))
    row(f"cupy-cg-x{s}", "cuda", f"gen:lap3d:{n}", s, f"{t:.4f}", "", max(iters), "", f"{rel:.2e}", "", "", "")


def warm_up():
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csla
    ag = csp.csr_matrix(lap(2, 30))
    csla.eigsh(ag, k=4, which="SA")
    csla.cg(ag, cp.ones(900))
    cp.cuda.Device().synchronize()


def cpu_anchors(dim, n, k=16, tol=1e-8):
    name = f"gen:lap{dim}d:{n}"
    a = lap(dim, n)
    ex = exact(dim, n, k)
    t, (lam, x) = timed(lambda: sla.eigsh(a, k=k, which="SA", tol=tol))
    rel, err, orth = quality(a, lam, x, ex)
    row("scipy-eigsh", "cpu", name, k, f"{t:.4f}", "", "", "", f"{rel:.2e}", f"{err:.2e}", f"{orth:.1e}", "")
    try:
        import torch
        coo = a.tocoo()
        at = torch.sparse_coo_tensor(np.vstack([coo.row, coo.col]), coo.data, a.shape,
                                     dtype=torch.float64, device="cuda").coalesce()
        x0 = torch.rand(a.shape[0], k, dtype=torch.float64, device="cuda",
                        generator=torch.Generator("cuda").manual_seed(1))
        def run():
            lam, x = torch.lobpcg(at, k=k, X=x0.clone(), largest=False, tol=tol, niter=20000)
            torch.cuda.synchronize()
            return lam, x
        t, (lam, x) = timed(run)
        rel, err, orth = quality(a, lam.cpu().numpy(), x.cpu().numpy(), ex)
        row("torch-lobpcg", "cuda", name, k, f"{t:.4f}", "", "", "", f"{rel:.2e}", f"{err:.2e}", f"{orth:.1e}", "")
    except Exception as e:  # noqa
        row("torch-lobpcg", "cuda", name, k, "", "error", "", "", "", "", "", str(e).replace(",", ";")[:80])


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "gpu"
    if what in ("all", "gpu"):
        warm_up()
        cupy_eigsh(3, 100, 16, "largest")
        cupy_cg(100, 32)
        cupy_eigsh(2, 200, 16, "smallest")
        cupy_eigsh(3, 100, 16, "smallest")
        cupy_eigsh(3, 100, 64, "smallest")
        cupy_eigsh(2, 1000, 32, "smallest")
        cupy_cg(100, 128)
    if what in ("all", "cpu"):
        cpu_anchors(2, 200)
        cpu_anchors(3, 40)
