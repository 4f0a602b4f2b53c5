"""SciPy's own tests of tcsolve's SciPy-compatible functions -- the installed SciPy's test files --
run with tcsolve's functions in SciPy's place (issue 46).

    PYTHONPATH=build/python /usr/bin/python3 python/tests/scipy_own_tests.py [--cases] [--time] [-v]

Before SciPy's test modules are imported, SciPy's cg, gmres, minres (scipy.sparse.linalg._isolve),
eigsh (..._eigen.arpack), lobpcg (..._eigen.lobpcg), lsqr, lsmr, svds (scipy.sparse.linalg) and
spsolve (..._dsolve) are replaced by tcsolve's, wrapped so that each call is recorded (the test files
import them from there). A test counts when it calls one of them: in test_iterative.py the cases
of cg, gmres and minres (the loops over all solvers see only these), in test_arpack.py those of
eigsh, in test_linsolve.py the class TestLinsolve (spsolve), the other files whole (test_svds.py
with SCIPY_USE_PROPACK=1, so that its PROPACK class runs too: tcsolve's svds needs no PROPACK and
takes solver='propack' with PROPACK's argument rules). Printed: per
test file, the tests passed and failed, each failure with its first line and, when it is out of
scope (OUT_OF_SCOPE, with the reason), that reason; with --cases also the calls of SciPy's loop
tests one by one (test_atol's 240 combinations, test_zero_rhs's 35 calls, test_symmetric_modes's
240 eigsh calls, ...), each counted as passing when it raises nothing and meets the test's own
assertions; with --time the time tcsolve and SciPy take over those loop calls in this process.
The pytest test test_scipy_conformance.py::test_scipy_own_tests runs this and checks the outcome."""

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
    "test_iterative.py (cg, gmres, minres)": os.path.join(SCIPY_TESTS, "_isolve", "tests", "test_iterative.py"),
    "test_arpack.py (eigsh)": os.path.join(SCIPY_TESTS, "_eigen", "arpack", "tests", "test_arpack.py"),
    "test_lobpcg.py (lobpcg)": os.path.join(SCIPY_TESTS, "_eigen", "lobpcg", "tests", "test_lobpcg.py"),
    "test_minres.py (minres)": os.path.join(SCIPY_TESTS, "_isolve", "tests", "test_minres.py"),
    "test_lsqr.py (lsqr)": os.path.join(SCIPY_TESTS, "_isolve", "tests", "test_lsqr.py"),
    "test_lsmr.py (lsmr)": os.path.join(SCIPY_TESTS, "_isolve", "tests", "test_lsmr.py"),
    "test_linsolve.py (spsolve)": os.path.join(SCIPY_TESTS, "_dsolve", "tests", "test_linsolve.py"),
    "test_svds.py (svds)": os.path.join(SCIPY_TESTS, "_eigen", "tests", "test_svds.py"),
}
# The tests of test_arpack.py that call eigsh (the others test eigs, or ARPACK's wrappers).
ARPACK_EIGSH = ("test_symmetric_modes", "test_hermitian_modes", "test_symmetric_starting_vector",
                "test_symmetric_no_convergence", "test_eigsh_for_k_greater", "test_parallel_threads",
                "test_reentering")
# test_iterative.py: test_reentrancy asserts that SciPy's Fortran solvers are *not* reentrant
# (RuntimeError) and calls none of tcsolve's; TestQMR tests qmr.
ITERATIVE_SKIP = ("test_reentrancy", "TestQMR")
OTHER_SOLVERS = ("cgs", "bicg", "bicgstab", "qmr", "lgmres", "gcrotmk", "tfqmr")
# Where SciPy's test files import each replaced function from: (module, name, tcsolve's name).
PLACES = (("scipy.sparse.linalg._isolve", "cg", "cg"), ("scipy.sparse.linalg._isolve", "gmres", "gmres"),
          ("scipy.sparse.linalg._isolve", "minres", "minres"),
          ("scipy.sparse.linalg._eigen.arpack", "eigsh", "eigsh"),
          ("scipy.sparse.linalg._eigen.lobpcg", "lobpcg", "lobpcg"),
          ("scipy.sparse.linalg", "lsqr", "lsqr"), ("scipy.sparse.linalg", "lsmr", "lsmr"),
          ("scipy.sparse.linalg._dsolve", "spsolve", "spsolve"), ("scipy.sparse.linalg", "svds", "svds"))
CALLED = set()  # tcsolve's functions called since the current test began
SUBS = {}       # name -> the recording wrapper put in SciPy's place
ORIG = {}       # name -> SciPy's function

# Failing tests that are out of scope, with the reason (file, test id or its prefix before '[').
OUT_OF_SCOPE = {
    ("test_iterative.py", "test_maxiter"): "loops over every case, complex ones included (complex input); "
        "for minres it passes callback=, which tcsolve's pseudo-block MINRES does not support (it forms "
        "no iterate per iteration); for gmres on rand-diag it asserts no convergence in one product, "
        "which tcsolve's default M (Jacobi, for a matrix) reaches on a diagonal A",
    ("test_iterative.py", "test_maxiter_worsening"): "complex input (its gmres cases)",
    ("test_iterative.py", "test_atol_legacy"): "SciPy's deprecated legacy atol (atol=None: tol taken as an "
        "absolute test of the initial residual); tcsolve's atol is 0 unless given",
    ("test_iterative.py", "test_basic"): "compares gmres's iterate after one unconverged cycle with "
        "SciPy's; tcsolve's default M=None is Jacobi for a matrix (another Krylov space; with M='none' "
        "x[0] = 0.35956474717 as SciPy's)",
    ("test_iterative.py", "test_callback"): "expects the left-preconditioned residual in the callback "
        "(1e-3 * 0.816 with M = 1e-3 I); tcsolve applies M on the right and reports ||r||/||b||",
    ("test_iterative.py", "test_callback_type"): "callback_type='x' (gmres's iterate per cycle) is not "
        "supported: the pseudo-block GMRES forms x only at the end",
    ("test_iterative.py", "test_callback_x_monotonic"): "callback_type='x' is not supported (above)",
    ("test_minres.py", "test_singular"): "a non-symmetric A (row 0 zeroed: refused, ValueError)",
    ("test_minres.py", "test_x0_is_used_by"): "minres(callback=) is not supported (no iterate per iteration)",
    ("test_lsqr.py", "test_lsqr_basic"): "damp != 0 (damped least squares) is not supported",
    ("test_lsmr.py", "testInitialization"): "compares two residuals at the rounding level (4.0e-14 from "
        "x0, 1.8e-14 from 0) to 1e-6: tcsolve's lsmr is a direct least-squares solve, its residual is "
        "rounding, not an iteration's",
    ("test_linsolve.py", "test_twodiags"): "loops over dtypes, complex ones included (complex input)",
    ("test_linsolve.py", "test_singular"): "asserts SciPy's NaN answer for a singular A; tcsolve warns "
        "with the same MatrixRankWarning and returns the least-squares solution (README)",
    ("test_linsolve.py", "test_singular_gh_3312"): "as test_singular (NaN for a singular A)",
    ("test_iterative.py", "test_precond_inverse"): "counts the products with A (SciPy allows 3 with M = "
        "A^-1); tcsolve's cg and minres take 6 (block CG's pipelined iterations; both solvers' closing "
        "true-residual check)",
    ("test_iterative.py", "test_restrt_dep"): "A = np.array([1]), a 1-D 'matrix' (refused: A must be 2-D); "
        "the DeprecationWarning for restrt it checks is given",
    ("test_arpack.py", "test_reentering"): "complex operators",
    ("test_arpack.py", "test_eigsh_for_k_greater"): "a non-symmetric A (SciPy's eigsh does not check)",
    ("test_arpack.py", "test_symmetric_no_convergence"): "asserts that ARPACK fails with maxiter=5, "
        "tol=1e-30 on a 6x6 matrix; tcsolve solves it (dense LAPACK for this n)",
    ("test_lobpcg.py", "test_failure_to_run_iterations"): "expects SciPy's own breakdown message ('Failed "
        "at iteration': its Cholesky of the Gram matrix fails on a rank-10 A at tol 1e-12)",
    ("test_lobpcg.py", "test_maxit"): "counts SciPy's history rows (maxiter + 3: initial, final and "
        "postprocessing) and its default of 20 iterations (tcsolve's default runs to the tolerance)",
    ("test_lobpcg.py", "test_ElasticRod"): "expects SciPy's default of 20 iterations not to suffice "
        "(a warning); tcsolve's default runs to the tolerance",
    ("test_svds.py", "test_svds_input_validation_A[args1]"): "an integer A: SciPy's svds refuses integer "
        "dtypes (ValueError); tcsolve takes them as float64, as its other functions do",
    ("test_svds.py", "test_svd_maxiter"): "after maxiter=1 it expects, for 'arpack', ARPACK's message "
        "('ARPACK error -1: No convergence'; tcsolve raises NoConvergence, a subclass of ArpackNoConvergence, "
        "with its own), for 'lobpcg' SciPy's warning and an unconverged answer (tcsolve raises NoConvergence "
        "for every solver name)",
    ("test_svds.py", "test_svd_linop"): "complex input (its last part; its real cases run in tcsolve's "
        "test_svds.py::test_scipy_svd_linop_real_cases)",
}
# Reasons shared by several tests.
for _reason, _tests in {
    "loops over every case, complex ones included (complex input)": (
        ("test_iterative.py", "test_convergence"),
        ("test_iterative.py", "test_precond_dummy"),
        ("test_iterative.py", "test_x0_equals_Mb"),
    ),
    "complex input": (
        ("test_iterative.py", "test_abi"),
        ("test_lsmr.py", "testComplexA"),
        ("test_lsmr.py", "testComplexB"),
        ("test_lsmr.py", "testComplexX"),
        ("test_lsmr.py", "testComplexX0"),
        ("test_linsolve.py", "test_dtype_cast"),
    ),
    "complex Hermitian input": (
        ("test_arpack.py", "test_hermitian_modes"),
        ("test_lobpcg.py", "test_hermitian"),
    ),
    "a non-symmetric A (refused: ValueError)": (
        ("test_lobpcg.py", "test_nonhermitian_warning"),
        ("test_lobpcg.py", "test_failure_to_run_iterations_nonsymmetric"),
    ),
}.items():
    OUT_OF_SCOPE.update(dict.fromkeys(_tests, _reason))


# Out of scope by a pattern of the test id (file, regular expression, reason): parametrized cases.
OUT_OF_SCOPE_PATTERNS = (
    ("test_svds.py", r"\[complex|^test_svd_simple\[[^-]+-(True|False)-False-", "complex input"),
)


def out_of_scope(nodeid):
    import re
    base, _, test = nodeid.partition("::")
    test = test.split("::")[-1]
    base = os.path.basename(base)
    for file, pattern, reason in OUT_OF_SCOPE_PATTERNS:
        if base == file and re.search(pattern, test):
            return reason
    for key in ((base, test), (base, test.split("[")[0])):
        if key in OUT_OF_SCOPE:
            return OUT_OF_SCOPE[key]
    return None


def _recording(name, f):
    import functools

    @functools.wraps(f)
    def call(*args, **kwargs):
        CALLED.add(name)
        return f(*args, **kwargs)
    return call


def substitute():
    """tcsolve's functions (recorded) where SciPy's test files import theirs from. (By
    sys.modules: the attribute scipy.sparse.linalg._eigen.lobpcg is SciPy's function, not its
    package.)"""
    import importlib
    for module, name, ours in PLACES:
        importlib.import_module(module)
        ORIG.setdefault(ours, getattr(sys.modules[module], name))
        SUBS.setdefault(ours, _recording(ours, getattr(tcsolve, ours)))
        setattr(sys.modules[module], name, SUBS[ours])


class Selector:
    """pytest plugin: keeps the tests of the replaced functions, records the outcomes of those
    that called one."""

    def __init__(self):
        self.outcomes = {}
        self.not_calling = set()

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
                    params.solvers = [s for s in params.solvers if s in SUBS.values()]
            elif path.endswith("test_arpack.py") and name.split("[")[0] not in ARPACK_EIGSH:
                continue
            elif path.endswith("test_linsolve.py") and "::TestLinsolve::" not in item.nodeid:
                continue
            keep.append(item)
        items[:] = keep

    def pytest_runtest_setup(self, item):
        CALLED.clear()

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and not CALLED and report.outcome == "passed":
            self.not_calling.add(report.nodeid)  # SciPy's own code only: not counted
            return
        if report.skipped:  # SciPy's own skip (a missing module, memory): not counted
            self.outcomes[report.nodeid] = ("skipped", str(report.longrepr)[-120:])
        elif report.when == "call" or report.outcome != "passed":
            self.outcomes[report.nodeid] = (report.outcome, _why(report) if report.failed else "")


def _why(report):
    """The failure's first 'E' lines (the exception and message), and where."""
    lines = str(report.longrepr).splitlines()
    msg = [ln[1:].strip() for ln in lines if ln.startswith("E ")][:3]
    return " / ".join(msg) + " @ " + (lines[-1].strip() if lines else "")


def run_files(verbose):
    # test_svds.py runs its PROPACK class only with this set (SciPy 1.10 hides PROPACK behind it);
    # tcsolve's svds takes solver='propack' with PROPACK's argument rules and needs no PROPACK.
    os.environ.setdefault("SCIPY_USE_PROPACK", "1")
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
        idle = sum(1 for k in sel.not_calling if k.split("::")[0].endswith(base))
        per_file[label] = (rows, idle)
    return per_file


# ---- the loop tests, call by call ----------------------------------------------------------------
# Each loop test is a list of calls f(impl), impl = {name: function} (tcsolve's, recorded, or
# SciPy's), so that --time runs the same calls with both in this process.

def _outcome(f, impl):
    """(passed, seconds) of one call: passing = no exception, the test's assertions met."""
    import time
    t = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(impl)
        ok = True
    except Exception:  # noqa: BLE001 - any failure of the call or of the test's assertion
        ok = False
    return ok, time.perf_counter() - t


def calls_atol():
    """test_atol[cg]: 3 preconditioners × 9 tol × 9 atol − 3."""
    np.random.seed(1234)
    A = np.random.rand(10, 10)
    A = A.dot(A.T) + 10 * np.eye(10)
    b = 1e3 * np.random.rand(10)
    b_norm = np.linalg.norm(b)
    tols = np.r_[0, np.logspace(np.log10(1e-10), np.log10(1e2), 7), np.inf]
    M0 = np.random.randn(10, 10)
    M0 = M0.dot(M0.T)
    calls = []
    for M, tol, atol in itertools.product([None, 1e-6 * M0, 1e6 * M0], tols, tols):
        if tol == 0 and atol == 0:
            continue

        def one(impl, M=M, tol=tol, atol=atol):
            x, info = impl["cg"](A, b, M=M, tol=tol, atol=atol)
            assert info == 0
            assert np.linalg.norm(A.dot(x) - b) <= 1.00025 * max(atol, tol * b_norm)
        calls.append(one)
    return calls


def calls_zero_rhs():
    """test_zero_rhs[cg]: 7 tolerances × 5 calls."""
    np.random.seed(1234)
    A = np.random.rand(10, 10)
    A = A.dot(A.T) + 10 * np.eye(10)
    b = np.zeros(10)
    calls = []
    for tol in np.logspace(np.log10(1e-10), np.log10(1e2), 7):
        def c1(impl, tol=tol):
            x, info = impl["cg"](A, b, tol=tol)
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=1e-15)

        def c2(impl, tol=tol):
            x, info = impl["cg"](A, b, tol=tol, x0=np.ones(10))
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=tol)

        def c3(impl, tol=tol):
            x, info = impl["cg"](A, b, tol=tol, atol=0, x0=np.ones(10))
            assert info != 0 or np.allclose(x, 0)

        def c4(impl, tol=tol):
            x, info = impl["cg"](A, b, tol=tol, atol=tol)
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=1e-300)

        def c5(impl, tol=tol):
            x, info = impl["cg"](A, b, tol=tol, atol=0)
            assert info == 0 and np.allclose(x, 0, rtol=0, atol=1e-300)
        calls += [c1, c2, c3, c4, c5]
    return calls


def _scipy_module(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def calls_symmetric_modes():
    """test_symmetric_modes: 2 problems × 2 dtypes × 5 which × 3 input kinds × 4 (sigma, mode)."""
    mod = _scipy_module(FILES["test_arpack.py (eigsh)"], "scipy_test_arpack_cases")
    params = mod.SymmetricParams()
    calls = []
    for D in params.real_test_cases:
        for typ, which, mattype in itertools.product("fd", params.which, params.mattypes):
            for sigma, modes in params.sigmas_modes.items():
                for mode in modes:
                    def one(impl, D=D, typ=typ, which=which, mattype=mattype, sigma=sigma, mode=mode):
                        mod.eigsh = impl["eigsh"]
                        mod.eval_evec(True, D, typ, 2, which, None, sigma, mattype, None, mode)
                    calls.append(one)
    return calls


def calls_starting_vector():
    """test_symmetric_starting_vector: k = 1..5 × 2 problems × 2 dtypes, which='LM' with v0."""
    mod = _scipy_module(FILES["test_arpack.py (eigsh)"], "scipy_test_arpack_cases")
    params = mod.SymmetricParams()
    calls = []
    rng = np.random.RandomState(0)
    for k, D, typ in itertools.product([1, 2, 3, 4, 5], params.real_test_cases, "fd"):
        v0 = rng.rand(len(D["v0"])).astype(typ)

        def one(impl, k=k, D=D, typ=typ, v0=v0):
            mod.eigsh = impl["eigsh"]
            mod.eval_evec(True, D, typ, k, "LM", v0)
        calls.append(one)
    return calls


def calls_x0_equals_mb(solver):
    """test_x0_equals_Mb[solver]: solver(A, b, x0='Mb') on every case it takes."""
    mod = _scipy_module(FILES["test_iterative.py (cg, gmres, minres)"], "scipy_test_iterative_cases")
    calls = []
    for case in mod.params.cases:
        if SUBS[solver] in case.skip:
            continue

        def one(impl, case=case):
            x, info = impl[solver](case.A, case.b, x0="Mb", tol=1e-8)
            assert info == 0
            mod.assert_normclose(case.A.dot(x), case.b, tol=1e-8)
        calls.append(one)
    return calls


def calls_iterative(check, solver, cases=None, skip_nonconvergence=True):
    """One of test_iterative.py's loops over params.cases (check_maxiter, check_convergence, ...)
    for one solver: the cases it does not skip, real and complex (tcsolve refuses complex input)."""
    mod = _scipy_module(FILES["test_iterative.py (cg, gmres, minres)"], "scipy_test_iterative_cases")
    calls = []
    for case in (mod.params.cases if cases is None else [getattr(mod.params, c) for c in cases]):
        s = SUBS[solver]
        if s in case.skip or (skip_nonconvergence and s in case.nonconvergence):
            continue
        calls.append(lambda impl, case=case: getattr(mod, check)(impl[solver], case))
    return calls


CASES = {"test_iterative.py test_atol[cg]": calls_atol,
         "test_iterative.py test_zero_rhs[cg]": calls_zero_rhs,
         "test_arpack.py test_symmetric_modes": calls_symmetric_modes,
         "test_arpack.py test_symmetric_starting_vector": calls_starting_vector}
for _s in ("cg", "gmres", "minres"):
    CASES.update({
        f"test_iterative.py test_maxiter ({_s})": lambda s=_s: calls_iterative("check_maxiter", s),
        f"test_iterative.py test_convergence ({_s})": lambda s=_s: calls_iterative("check_convergence", s, None, False),
        f"test_iterative.py test_precond_dummy ({_s})": lambda s=_s: calls_iterative("check_precond_dummy", s),
        f"test_iterative.py test_precond_inverse ({_s})": lambda s=_s: calls_iterative(
            "check_precond_inverse", s, ["Poisson1D", "Poisson2D"])})
    if _s != "minres":  # (minres has no x0='Mb' case in SciPy's list)
        CASES[f"test_iterative.py test_x0_equals_Mb[{_s}]"] = lambda s=_s: calls_x0_equals_mb(s)


def run_cases(timed):
    """Per loop test: calls passing with tcsolve; with `timed` also with SciPy, and the seconds
    of both over the calls that pass with both."""
    ours = dict(SUBS)
    theirs = dict(ORIG)
    total = {"n": 0, "ours": 0.0, "theirs": 0.0}
    for label, make in CASES.items():
        calls = make()
        res = [_outcome(c, ours) for c in calls]
        ok = sum(r[0] for r in res)
        line = f"CASES {label}: {ok} of {len(calls)} pass"
        if timed:
            ref = [_outcome(c, theirs) for c in calls]
            both = [i for i in range(len(calls)) if res[i][0] and ref[i][0]]
            t_ours, t_theirs = sum(res[i][1] for i in both), sum(ref[i][1] for i in both)
            total["n"] += len(both)
            total["ours"] += t_ours
            total["theirs"] += t_theirs
            line += f"; {len(both)} pass with both: tcsolve {t_ours:.3f} s, SciPy {t_theirs:.3f} s"
        print(line, flush=True)
    if timed:
        print(f"TIME {total['n']} calls passing with both: tcsolve {total['ours']:.3f} s, SciPy "
              f"{total['theirs']:.3f} s, ratio {total['ours'] / max(total['theirs'], 1e-12):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", action="store_true", help="also count the loop tests call by call")
    ap.add_argument("--time", action="store_true", help="with --cases: time tcsolve and SciPy on them")
    ap.add_argument("--no-files", action="store_true", help="only the loop tests")
    ap.add_argument("-v", action="store_true", help="pytest's own output")
    args = ap.parse_args()
    substitute()
    if args.cases or args.time:
        run_cases(args.time)
    if args.no_files:
        return
    for label, (rows, idle) in run_files(args.v).items():
        passed = sorted(k for k, (o, _) in rows.items() if o == "passed")
        skipped = sorted(k for k, (o, _) in rows.items() if o == "skipped")
        failed = sorted(k for k, (o, _) in rows.items() if o not in ("passed", "skipped"))
        scope = [k for k in failed if out_of_scope(k)]
        print(f"FILE {label}: {len(passed)} of {len(passed) + len(failed)} tests pass, {len(scope)} out "
              f"of scope, {len(failed) - len(scope)} fail ({len(skipped)} skipped by SciPy's own "
              f"conditions, {idle} more call none of tcsolve's functions)")
        for k in skipped:
            print(f"  SKIPPED {k.split('::', 1)[1]}: {rows[k][1]}")
        for k in failed:
            why = out_of_scope(k)
            tag = f"OUT OF SCOPE ({why})" if why else "FAIL"
            print(f"  {tag} {k.split('::', 1)[1]}: {rows[k][1][:200]}")


if __name__ == "__main__":
    main()
