"""SciPy's own tests of eigsh, lobpcg and cg -- the installed SciPy's test files -- run with
tcsolve's functions in SciPy's place (issue 46).

    PYTHONPATH=build/python /usr/bin/python3 python/tests/scipy_own_tests.py [--cases] [-v]

Before SciPy's test modules are imported, scipy.sparse.linalg._isolve.cg,
scipy.sparse.linalg._eigen.arpack.eigsh and scipy.sparse.linalg._eigen.lobpcg.lobpcg are
replaced by tcsolve.cg, tcsolve.eigsh and tcsolve.lobpcg (the test files import them from there).
Only the tests that call a replaced function run: in test_iterative.py the cases of cg (the loops
over all solvers see only cg), in test_arpack.py those of eigsh, in test_lobpcg.py all. Printed:
per test file, the tests passed and failed (with the first line of each failure); with --cases
also the calls of SciPy's loop tests one by one (test_atol's 240 combinations, test_zero_rhs's
35 calls, test_symmetric_modes's 240 eigsh calls, test_x0_equals_Mb's cases), each counted as
passing when it raises nothing and meets the test's own assertions. The pytest test
test_scipy_conformance.py::test_scipy_own_tests runs this and checks the outcome."""

import argparse
import io
import itertools
import os
import sys
import warnings

import numpy as np
import pytest

import tcsolve

SCIPY_TESTS = os.path.join(os.path.dirname(__import__("scipy").__file__), "sparse", "linalg")
FILES = {
    "test_iterative.py (cg)": os.path.join(SCIPY_TESTS, "_isolve", "tests", "test_iterative.py"),
    "test_arpack.py (eigsh)": os.path.join(SCIPY_TESTS, "_eigen", "arpack", "tests", "test_arpack.py"),
    "test_lobpcg.py (lobpcg)": os.path.join(SCIPY_TESTS, "_eigen", "lobpcg", "tests", "test_lobpcg.py"),
}
# The tests of test_arpack.py that call eigsh (the others test eigs, or ARPACK's wrappers).
ARPACK_EIGSH = ("test_symmetric_modes", "test_hermitian_modes", "test_symmetric_starting_vector",
                "test_symmetric_no_convergence", "test_eigsh_for_k_greater", "test_parallel_threads",
                "test_reentering")
# test_iterative.py: test_reentrancy asserts that SciPy's cg is *not* reentrant (RuntimeError);
# the classes test gmres and qmr.
ITERATIVE_SKIP = ("test_reentrancy", "TestQMR", "TestGMRES")
OTHER_SOLVERS = ("cgs", "bicg", "bicgstab", "gmres", "qmr", "minres", "lgmres", "gcrotmk", "tfqmr")


def substitute():
    """tcsolve's functions where SciPy's test files import theirs from. (By sys.modules: the
    attribute scipy.sparse.linalg._eigen.lobpcg is SciPy's function, not its package.)"""
    import importlib
    for module, name, f in (("scipy.sparse.linalg._isolve", "cg", tcsolve.cg),
                            ("scipy.sparse.linalg._eigen.arpack", "eigsh", tcsolve.eigsh),
                            ("scipy.sparse.linalg._eigen.lobpcg", "lobpcg", tcsolve.lobpcg)):
        importlib.import_module(module)
        setattr(sys.modules[module], name, f)


class Selector:
    """pytest plugin: keeps the tests of the replaced functions, records the outcomes."""

    def __init__(self):
        self.outcomes = {}

    def pytest_collection_modifyitems(self, config, items):
        keep = []
        for item in items:
            path, name = str(item.fspath), item.name
            if path.endswith("test_iterative.py"):
                if any(s in item.nodeid for s in ITERATIVE_SKIP):
                    continue
                param = name.split("[")[1].rstrip("]").split("-")[0] if "[" in name else ""
                if param in OTHER_SOLVERS:
                    continue
                params = getattr(item.module, "params", None)
                if params is not None:
                    params.solvers = [s for s in params.solvers if s is tcsolve.cg]
            elif path.endswith("test_arpack.py") and name.split("[")[0] not in ARPACK_EIGSH:
                continue
            keep.append(item)
        items[:] = keep

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.outcomes[report.nodeid] = (report.outcome, _why(report) if report.failed else "")


def _why(report):
    """The failure's first 'E' lines (the exception and message), and where."""
    lines = str(report.longrepr).splitlines()
    msg = [ln[1:].strip() for ln in lines if ln.startswith("E ")][:3]
    return " / ".join(msg) + " @ " + (lines[-1].strip() if lines else "")


def run_files(verbose):
    sel = Selector()
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore"] + list(FILES.values())
    out = io.StringIO()
    stdout = sys.stdout
    sys.stdout = out if not verbose else stdout
    try:
        pytest.main(args, plugins=[sel])
    finally:
        sys.stdout = stdout
    per_file = {}
    for label, path in FILES.items():
        base = os.path.basename(path)
        rows = {k: v for k, v in sel.outcomes.items() if k.split("::")[0].endswith(base)}
        per_file[label] = rows
    return per_file


# ---- the loop tests, call by call ----------------------------------------------------------------

def _outcome(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f()
        return True
    except Exception:  # noqa: BLE001 - any failure of the call or of the test's assertion
        return False


def cases_atol():
    """test_atol[cg]: 3 preconditioners × 9 tol × 9 atol − 3."""
    np.random.seed(1234)
    A = np.random.rand(10, 10)
    A = A.dot(A.T) + 10 * np.eye(10)
    b = 1e3 * np.random.rand(10)
    b_norm = np.linalg.norm(b)
    tols = np.r_[0, np.logspace(np.log10(1e-10), np.log10(1e2), 7), np.inf]
    M0 = np.random.randn(10, 10)
    M0 = M0.dot(M0.T)
    ok = total = 0
    for M, tol, atol in itertools.product([None, 1e-6 * M0, 1e6 * M0], tols, tols):
        if tol == 0 and atol == 0:
            continue

        def one():
            x, info = tcsolve.cg(A, b, M=M, tol=tol, atol=atol)
            assert info == 0
            assert np.linalg.norm(A.dot(x) - b) <= 1.00025 * max(atol, tol * b_norm)
        total += 1
        ok += _outcome(one)
    return ok, total


def cases_zero_rhs():
    """test_zero_rhs[cg]: 7 tolerances × 5 calls."""
    np.random.seed(1234)
    A = np.random.rand(10, 10)
    A = A.dot(A.T) + 10 * np.eye(10)
    b = np.zeros(10)
    calls = []
    for tol in np.logspace(np.log10(1e-10), np.log10(1e2), 7):
        def c1(tol=tol):
            x, info = tcsolve.cg(A, b, tol=tol)
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=1e-15)

        def c2(tol=tol):
            x, info = tcsolve.cg(A, b, tol=tol, x0=np.ones(10))
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=tol)

        def c3(tol=tol):
            x, info = tcsolve.cg(A, b, tol=tol, atol=0, x0=np.ones(10))
            assert info != 0 or np.allclose(x, 0)

        def c4(tol=tol):
            x, info = tcsolve.cg(A, b, tol=tol, atol=tol)
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=1e-300)

        def c5(tol=tol):
            x, info = tcsolve.cg(A, b, tol=tol, atol=0)
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=1e-300)
        calls += [c1, c2, c3, c4, c5]
    return sum(_outcome(c) for c in calls), len(calls)


def _scipy_module(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cases_symmetric_modes():
    """test_symmetric_modes: 2 problems × 2 dtypes × 5 which × 3 input kinds × 4 (sigma, mode)."""
    mod = _scipy_module(FILES["test_arpack.py (eigsh)"], "scipy_test_arpack_cases")
    params = mod.SymmetricParams()
    ok = total = 0
    for D in params.real_test_cases:
        for typ, which, mattype in itertools.product("fd", params.which, params.mattypes):
            for sigma, modes in params.sigmas_modes.items():
                for mode in modes:
                    total += 1
                    ok += _outcome(lambda: mod.eval_evec(True, D, typ, 2, which, None, sigma, mattype,
                                                         None, mode))
    return ok, total


def cases_x0_equals_mb():
    """test_x0_equals_Mb[cg]: cg(A, b, x0='Mb') on every case cg takes."""
    mod = _scipy_module(FILES["test_iterative.py (cg)"], "scipy_test_iterative_cases")
    ok = total = 0
    for case in mod.params.cases:
        if tcsolve.cg in case.skip:
            continue

        def one(case=case):
            x, info = tcsolve.cg(case.A, case.b, x0="Mb", tol=1e-8)
            assert info == 0
            mod.assert_normclose(case.A.dot(x), case.b, tol=1e-8)
        total += 1
        ok += _outcome(one)
    return ok, total


def cases_iterative(check, cases=None, skip_nonconvergence=True):
    """One of test_iterative.py's loops over params.cases (check_maxiter, check_convergence, ...)
    for cg alone: the cases cg does not skip, real and complex (tcsolve refuses complex input)."""
    mod = _scipy_module(FILES["test_iterative.py (cg)"], "scipy_test_iterative_cases")
    ok = total = 0
    for case in (mod.params.cases if cases is None else [getattr(mod.params, c) for c in cases]):
        if tcsolve.cg in case.skip or (skip_nonconvergence and tcsolve.cg in case.nonconvergence):
            continue
        total += 1
        ok += _outcome(lambda: getattr(mod, check)(tcsolve.cg, case))
    return ok, total


def cases_starting_vector():
    """test_symmetric_starting_vector: k = 1..5 × 2 problems × 2 dtypes, which='LM' with v0."""
    mod = _scipy_module(FILES["test_arpack.py (eigsh)"], "scipy_test_arpack_cases")
    params = mod.SymmetricParams()
    ok = total = 0
    for k, D, typ in itertools.product([1, 2, 3, 4, 5], params.real_test_cases, "fd"):
        v0 = np.random.rand(len(D["v0"])).astype(typ)
        total += 1
        ok += _outcome(lambda: mod.eval_evec(True, D, typ, k, "LM", v0))
    return ok, total


CASES = {"test_iterative.py test_maxiter (cg)": lambda: cases_iterative("check_maxiter"),
         "test_iterative.py test_convergence (cg)": lambda: cases_iterative("check_convergence", None, False),
         "test_iterative.py test_precond_dummy (cg)": lambda: cases_iterative("check_precond_dummy"),
         "test_iterative.py test_precond_inverse (cg)": lambda: cases_iterative(
             "check_precond_inverse", ["Poisson1D", "Poisson2D"]),
         "test_iterative.py test_atol[cg]": cases_atol,
         "test_iterative.py test_zero_rhs[cg]": cases_zero_rhs,
         "test_iterative.py test_x0_equals_Mb[cg]": cases_x0_equals_mb,
         "test_arpack.py test_symmetric_modes": cases_symmetric_modes,
         "test_arpack.py test_symmetric_starting_vector": cases_starting_vector}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", action="store_true", help="also count the loop tests call by call")
    ap.add_argument("-v", action="store_true", help="pytest's own output")
    args = ap.parse_args()
    substitute()
    # the cases of the substituted solvers (SciPy's test modules import them from there)
    if args.cases:
        for label, f in CASES.items():
            ok, total = f()
            print(f"CASES {label}: {ok} of {total} pass")
    for label, rows in run_files(args.v).items():
        passed = sorted(k for k, (o, _) in rows.items() if o == "passed")
        failed = sorted(k for k, (o, _) in rows.items() if o != "passed")
        print(f"FILE {label}: {len(passed)} of {len(rows)} tests pass")
        for k in failed:
            print(f"  FAIL {k.split('::', 1)[1]}: {rows[k][1][:200]}")


if __name__ == "__main__":
    main()
