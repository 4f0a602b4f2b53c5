"""Shared fixtures of the tcsolve Python tests (run by CTest: python_tests, python_gpu).

Matrices: generated Laplacians (always), the SuiteSparse files in ../shared/matrices/suitesparse
(or $TCSOLVE_MATRICES) -- tests that need one skip with the path when it is absent.
GPU tests carry the marker `gpu`; a `-m gpu` session in which every test skipped (no CuPy, no
GPU, a CPU-only build) exits with 77, which CTest reports as skipped. Tests that read SuiteSparse
files carry `matrices` (added at collection) and run in their own session (CTest python_matrices),
which exits 77 when the folder is absent.
"""
import os
import pathlib

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

HERE = pathlib.Path(__file__).resolve().parent
SOURCE_DIR = pathlib.Path(os.environ.get("TCSOLVE_SOURCE_DIR", HERE.parents[1]))
MATRICES = pathlib.Path(os.environ.get("TCSOLVE_MATRICES",
                                       SOURCE_DIR.parent / "shared" / "matrices" / "suitesparse"))


def suitesparse(name):
    """A SuiteSparse matrix as float64 CSR (both triangles), or skip when the file is absent."""
    path = MATRICES / f"{name}.mtx"
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/matrices not available)")
    a = sp.csr_matrix(sio.mmread(str(path)))
    return a.astype(np.float64)


def lap1d(n):
    return sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")


def lap2d(nx, ny=None):
    """5-point Dirichlet Laplacian (4 on the diagonal), as `gen:lap2d:NXxNY`."""
    ny = nx if ny is None else ny
    a = sp.kron(sp.eye(ny), lap1d(nx)) + sp.kron(lap1d(ny), sp.eye(nx))
    return sp.csr_matrix(a)


def lap2d_eigenvalues(nx, ny=None):
    ny = nx if ny is None else ny
    i = np.arange(1, nx + 1)
    j = np.arange(1, ny + 1)
    li = 4 * np.sin(i * np.pi / (2 * (nx + 1))) ** 2
    lj = 4 * np.sin(j * np.pi / (2 * (ny + 1))) ** 2
    return np.sort((li[:, None] + lj[None, :]).ravel())


def residuals(a, w, v, b=None):
    """‖A·v_j − λ_j·B·v_j‖₂ recomputed in NumPy/SciPy."""
    bv = v if b is None else b @ v
    return np.linalg.norm(a @ v - bv * w, axis=0)


def rounding(a, w, v, b=None):
    """The rounding-error scale of a recomputed residual: 1e-15·‖|A|·|v| + |λ|·|B|·|v|‖ per
    column; reported and recomputed residuals may differ by that much."""
    av = abs(a) @ np.abs(v)
    bv = np.abs(v) if b is None else abs(b) @ np.abs(v)
    return 1e-15 * np.linalg.norm(av + bv * np.abs(w), axis=0)


def scipy_cg(a, b, rtol, **kw):
    """scipy.sparse.linalg.cg with a relative tolerance: `rtol` since SciPy 1.12, `tol` before."""
    import inspect
    import scipy.sparse.linalg as sl
    name = "rtol" if "rtol" in inspect.signature(sl.cg).parameters else "tol"
    return sl.cg(a, b, atol=0.0, **{name: rtol}, **kw)


@pytest.fixture(scope="session")
def cp():
    """CuPy, or skip without it, a GPU or a CUDA build of tcsolve."""
    cupy = pytest.importorskip("cupy")
    import tcsolve
    if not tcsolve.built_with_cuda():
        pytest.skip("tcsolve was built without CUDA")
    if tcsolve.device_count() == 0:
        pytest.skip("no GPU")
    return cupy


@pytest.fixture(scope="session")
def csp(cp):
    import cupyx.scipy.sparse
    return cupyx.scipy.sparse


_outcomes = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs CuPy, a GPU and a CUDA build of tcsolve")
    config.addinivalue_line("markers", "matrices: reads SuiteSparse matrices (CTest: python_matrices)")


def _needs_matrices(item):
    """Tests that read SuiteSparse files (through suitesparse() or test_eigsh's load()), except the
    parameters that name a generated matrix."""
    import inspect
    fn = getattr(item, "function", None)
    try:
        src = inspect.getsource(fn) if fn is not None else ""
    except (OSError, TypeError):
        return False
    if "suitesparse(" not in src and "load(name)" not in src:
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    name = params.get("name")
    return not (isinstance(name, str) and name.startswith("lap"))


def pytest_collection_modifyitems(config, items):
    # The tests that read SuiteSparse files carry the marker `matrices` and run as their own CTest
    # test (python_matrices), which exits 77 -- skipped, with the path -- when the folder is absent.
    for item in items:
        if _needs_matrices(item):
            item.add_marker(pytest.mark.matrices)
    markexpr = config.getoption("markexpr", "")
    if markexpr.startswith("matrices") and not MATRICES.is_dir():
        pytest.exit(f"skipped: no SuiteSparse matrices at {MATRICES}", returncode=77)


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_sessionfinish(session, exitstatus):
    markexpr = session.config.getoption("markexpr", "")
    if markexpr == "gpu" and _outcomes["passed"] == 0 and _outcomes["failed"] == 0 and _outcomes["skipped"] > 0:
        session.exitstatus = 77  # CTest: SKIP_RETURN_CODE
