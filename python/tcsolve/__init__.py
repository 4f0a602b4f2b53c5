"""tcsolve: block eigensolvers and block CG for large sparse symmetric matrices, and MINRES, GMRES
and direct solves for the others (square or rectangular), from Python.

Drop-in for these solvers of ``scipy.sparse.linalg`` (same parameter names and meanings)::

    import tcsolve, scipy.sparse as sp
    w, v = tcsolve.eigsh(A, k=6, which='SA')          # k smallest eigenpairs
    w, v = tcsolve.eigsh(A, k=6, sigma=0.5)           # nearest 0.5 (shift-invert)
    w, v = tcsolve.lobpcg(A, X, B=M, largest=False)   # generalized, start block X
    x, info = tcsolve.cg(A, B, rtol=1e-8)             # B n×s: all right-hand sides at once
    x, info = tcsolve.minres(A, B, rtol=1e-8)         # symmetric indefinite (pseudo-block MINRES)
    x, info = tcsolve.gmres(A, B, rtol=1e-8)          # any square A (pseudo-block GMRES(m))
    x = tcsolve.spsolve(A, B)                         # direct: CHOLMOD / MUMPS / UMFPACK
    x, istop, *_ = tcsolve.lsqr(A, b)                 # least squares by SuiteSparseQR (not iterative)
    u, s, vh = tcsolve.svds(A, k=10)                  # k largest singular triplets (s ascending), any m x n
    p = tcsolve.pca(X, 50)                            # centered PCA: p.scores, p.components, p.explained_variance_ratio

minres, gmres: a non-zero info is SciPy's (> 0 not converged, < 0 breakdown); callback(xk) is not
supported (gmres: callback_type 'pr_norm'/'legacy' is). spsolve on a singular A warns with SciPy's
MatrixRankWarning and returns the least-squares solution (SciPy: NaN). lsqr and lsmr return SciPy's
tuples from a direct solve (itn = 0, no condition estimate: nan; damp != 0 not supported). There
is no bicgstab: gmres takes every square matrix.

Inputs: any scipy.sparse matrix or array (csr/csc/coo/..., float32/64, int32/64 indices), a dense
NumPy array, a ``LinearOperator`` (CPU backend; the solver calls its ``matmat`` back), or CuPy
sparse/dense arrays (used on the GPU without a host copy; results come back as CuPy arrays).
svds and pca take rectangular matrices (a LinearOperator for svds needs ``rmatvec``/``rmatmat``);
svds returns SciPy's ``(u, s, vh)`` with s ascending, pca a :class:`PCA` largest first.

tcsolve's own keywords: ``method`` ('auto', 'lanczos', 'lobpcg', 'chebyshev', 'dense'; auto: the
plan with the fewest predicted seconds, named with why in ``Result.method_reason``), ``certify``
(always verify the set by a Sylvester count; by default only when it costs at most 15 % of the
solve, else a cheaper re-check), ``device`` ('auto', 'cpu', 'cuda'), ``precision`` ('auto': A in fp64 and, for eigsh on the GPU, the
Chebyshev filter on fp32 blocks where safe, for cg on the GPU (Jacobi or no preconditioner, at most
32 columns) block CG's iterations on fp32 blocks inside fp64 refinement; every answer checked in
fp64 (the precision ladder, reported in ``Result.precision_used``);
'fp64' throughout; or A rounded for the sparse product:
'fp32', GPU only 'fp16', 'bf16'), ``block_size``, ``conv`` (convergence test: 'rel', 'norm', 'abs'), ``seed`` and
``return_info=True``, which appends a :class:`Result` (status, iterations, true residuals, history,
timings: the fields of ``tcsolve eigs|solve --out FILE.h5``) to what is returned.

Errors: ``ValueError`` for bad input (non-square, non-symmetric, NaN/Inf, k >= n, wrong lengths,
unknown option values, and SciPy's own argument rules with its exception types), ``TypeError``
for inputs of the wrong kind, ``NotImplementedError`` for what this build or input kind lacks
(e.g. CUDA; see the README's Python section).

Not converging: :func:`eigsh` and :func:`svds` (and :func:`pca`) raise :class:`NoConvergence` (a
subclass of SciPy's ``ArpackNoConvergence``) carrying the partial eigenpairs (svds: ``.u``, ``.s``,
``.vh``) and the :class:`Result` in ``.info`` -- also with ``return_info=True``; :func:`lobpcg` warns and returns, as SciPy's (``Result.status``
says ``not_converged``); :func:`cg` returns ``info > 0`` as SciPy's ``cg`` does
(and ``Result.status``); a matrix that turns out not to be positive definite raises ValueError.

The GIL is released while a solver runs (a ``LinearOperator`` takes it back for its products and
gets arrays of its own, which it may keep or change). Ctrl-C sets the solvers' stop request at
once; the solver stops at its next check (an iteration's end, or within about 20 ms in an ordering,
a factorization or the shift-invert solves, whose work then finishes in the background) and
KeyboardInterrupt is raised as the call returns; a second Ctrl-C while it has not stopped ends
the process.
"""

try:
    from . import _tcsolve
except ImportError as e:  # pragma: no cover - a build problem, say what to do
    raise ImportError(f"tcsolve's extension module could not be loaded ({e}); build it with "
                      "`cmake --build build` and put build/python on PYTHONPATH, or `cmake --install`") from e

import atexit as _atexit

# An interrupted call may leave its engine work (an ordering, a factorization) finishing in the
# background; the interpreter's exit waits for it instead of shutting the BLAS down under it.
_atexit.register(_tcsolve._wait_for_abandoned_workers)

from ._args import built_with_cuda
from ._result import History, NoConvergence, Result
from ._eigsh import eigsh
from ._lobpcg import lobpcg
from ._linsolve import cg
from ._krylov import gmres, minres
from ._direct import MatrixRankWarning, lsmr, lsqr, spsolve
from ._svds import svds
from ._svds_result import SvdsResult
from ._pca import PCA, pca

__all__ = ["eigsh", "lobpcg", "cg", "minres", "gmres", "spsolve", "lsqr", "lsmr", "svds", "pca", "PCA",
           "MatrixRankWarning", "Result", "SvdsResult", "History", "NoConvergence", "built_with_cuda",
           "device_count", "__version__"]
__version__ = _tcsolve.__version__


def device_count():
    """Usable CUDA devices (0 without CUDA)."""
    return int(_tcsolve.device_count())
