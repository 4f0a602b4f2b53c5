// The MINRES and GMRES entries of tcsolve._tcsolve (solvers/krylov/), for the matrices block CG
// does not take. method is "minres" (A symmetric, indefinite allowed) or "gmres" (A square);
// options in a dict `opt`: tol, max_iterations (operator applies per column, over all GMRES
// restarts), restart (GMRES(m)), device, precond ('jacobi' | 'poly' | 'none'), progress (a callable
// progress(iteration, values, residual_norms, converged) after every iteration, or None):
//   krylov_csr(method, n, indptr, indices, data, rhs, x, use_x0, precond_fn, opt)
//                     rhs, x: host n × s (F order, float64; x holds x0 when use_x0 and is
//                     written in place); device 'cuda' copies them up and back
//   krylov_operator(method, n, matmat_a, rhs, x, use_x0, precond_fn, opt)   CPU only
//   krylov_device(method, n, nnz, ptrs_a, rhs_ptr, x_ptr, s, use_x0, opt)   CuPy arrays in place
// Each solves with the GIL released and Ctrl-C bridged (run_interruptible) and returns the
// result dict (results.cpp); the host CSR entry adds the backward errors of check_solution
// (solvers/solution_check.hpp), the residuals recomputed from A as given.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "factor/sparse_factor.hpp"
#include "python/src/bindings.hpp"
#include "solvers/krylov/gmres.hpp"
#include "solvers/krylov/gmres_polynomial.hpp"
#include "solvers/krylov/minres.hpp"
#include "solvers/krylov/polynomial_solve.hpp"
#include "solvers/solution_check.hpp"
#include "spmm/device_csr_view.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::pyext {

namespace {

using Krylov = krylov::KrylovMethod;

Krylov parse_krylov(const std::string& m) {
  if (m == "minres") return Krylov::minres;
  if (m == "gmres") return Krylov::gmres;
  throw InvalidArgument("method '" + m + "': expected minres or gmres");
}

KrylovOptions krylov_options(const py::dict& opt) {
  KrylovOptions o;
  o.tol = opt_get<double>(opt, "tol", o.tol);
  o.max_iterations = opt_get<std::int64_t>(opt, "max_iterations", o.max_iterations);
  const std::int64_t restart = opt_get<std::int64_t>(opt, "restart", o.restart);
  if (restart < 1 || restart > (1 << 30)) bad_option("restart", opt["restart"], "an integer in [1, 2**30]");
  o.restart = static_cast<int>(restart);
  o.on_iteration = progress_and_interrupt(opt);  // Ctrl-C, and the package's show / callback
  return o;
}

// rhs, x: host blocks n × s, solved by solve(b, x, use_x0) on blocks of ops.space(): on the CUDA
// backend copied to the device and back (the matrix was uploaded by the operator), 2·n·s doubles
// each way at most.
template <class Solve>
SolveResult on_host_blocks(DenseBlockOps& ops, const double* rhs, double* x, std::int64_t n, std::int64_t s,
                           bool use_x0, Solve&& solve) {
  if (ops.space() == Space::host)
    return solve(MvView<const double>{rhs, n, s, n, Space::host}, MvView<double>{x, n, s, n, Space::host}, use_x0);
  MultiVector<double> bd = ops.allocate(n, s), xd = ops.allocate(n, s);
  ops.from_host(rhs, n, bd.view());
  if (use_x0) ops.from_host(x, n, xd.view());
  SolveResult r = solve(bd.view(), xd.view(), use_x0);
  ops.to_host(xd.view(), x, n);
  ops.synchronize();
  return r;
}

SolveResult run_krylov_host(Krylov m, const LinearOperator<double>& a, DenseBlockOps& ops, const double* rhs,
                            double* x, std::int64_t n, std::int64_t s, bool use_x0, const KrylovOptions& o) {
  return on_host_blocks(ops, rhs, x, n, s, use_x0, [&](MvView<const double> b, MvView<double> xv, bool x0) {
    return krylov::run(m, a, ops, o, b, xv, x0);
  });
}

// M = 'poly': the GMRES polynomial on the right (solvers/krylov/gmres_polynomial.hpp), as the
// command's --precond poly (its degrees, A's fused step where the rows are short), from x = 0.
SolveResult run_polynomial_host(Krylov m, const Csr<double>& a, const LinearOperator<double>& aop, DenseBlockOps& ops,
                                const double* rhs, double* x, std::int64_t n, std::int64_t s, const KrylovOptions& o) {
  const krylov::BuiltPolynomial built = krylov::make_gmres_polynomial(
      aop, &a, ops, s, m == Krylov::minres ? krylov::kDegreeMinres : krylov::kDegreeGmres, 91);
  if (!built.poly)
    throw InvalidArgument("M='poly': the GMRES polynomial found no root (A·v vanished on its start vector)");
  return on_host_blocks(ops, rhs, x, n, s, false, [&](MvView<const double> b, MvView<double> xv, bool) {
    return krylov::polynomial_solve(m, aop, *built.poly, b, xv, ops, o);
  });
}

// The preconditioner of opt["precond"] and precond_fn: "operator" (a Python M, host only),
// "jacobi" (diag(A), given by `diagonal`) or "none". Sets o.preconditioner / o.jacobi_diagonal.
// 'poly' is the caller's to build (a sparse A, host or CuPy; krylov_operator asks for "none").
std::string set_preconditioner(const py::dict& opt, const py::object& precond_fn, std::int64_t n, bool host,
                               std::vector<double> diagonal, std::unique_ptr<PyOperator>& m, KrylovOptions& o) {
  if (!precond_fn.is_none()) {
    if (!host)
      throw InvalidArgument("a preconditioner M given as an operator runs on the CPU backend (device='cpu')");
    m = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = m.get();
    return "operator";
  }
  const std::string p = opt_get<std::string>(opt, "precond", "jacobi");
  if (p == "jacobi") {
    o.jacobi_diagonal = std::move(diagonal);
    return p;
  }
  if (p != "poly" && p != "none") throw InvalidArgument("precond '" + p + "': expected jacobi, poly or none");
  return p;
}

struct HostSolve {
  SolveResult r;
  std::string kernel, kernel_plan;
  double setup = 0;
};

py::dict krylov_csr(const std::string& method, std::int64_t n, const I64Array& indptr, const I32Array& indices,
                    const D1Array& data, const F64Array& rhs, py::array_t<double, py::array::f_style> x,
                    bool use_x0, py::object precond_fn, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  const Krylov km = parse_krylov(method);
  Csr<double> a = csr_from_arrays(n, indptr, indices, data);
  check_block(rhs, n, "b");
  check_x(x, n, rhs);
  KrylovOptions o = krylov_options(opt);
  const Backend backend = resolve_backend(opt_get<std::string>(opt, "device", "auto"));
  std::unique_ptr<PyOperator> m;
  const std::string precond =
      set_preconditioner(opt, precond_fn, n, backend == Backend::cpu, csr_diagonal(a), m, o);
  if (precond == "poly" && use_x0) throw InvalidArgument("precond 'poly' starts from x = 0: it does not take x0");
  double* xp = x.mutable_data();
  const double* bp = rhs.data();
  const std::int64_t s = rhs.shape(1);
  HostSolve h = run_interruptible([&] {
    HostSolve out;
    const auto ts = std::chrono::steady_clock::now();
    auto ops = make_dense_ops(backend);
    OperatorOptions oo;
    oo.precision = Precision::fp64;
    oo.stream = ops->stream();
    oo.expected_cols = static_cast<int>(std::min<std::int64_t>(s, 64));
    auto aop = make_sparse_operator(a, backend, oo);
    out.kernel = to_string(aop->plan().kernel);
    out.kernel_plan = aop->plan().reason;
    out.setup = seconds_since(ts);
    out.r = precond == "poly" ? run_polynomial_host(km, a, *aop, *ops, bp, xp, n, s, o)
                              : run_krylov_host(km, *aop, *ops, bp, xp, n, s, use_x0, o);
    // the residuals and backward errors recomputed from A as given (one pass over A)
    check_solution(a, bp, n, xp, n, s, false, out.r);
    return out;
  });
  ResultRecord rec = solve_record(h.r, o.tol, o.max_iterations, backend, precond);
  rec.nnz = a.nnz(), rec.spmm_kernel = h.kernel, rec.spmm_plan = h.kernel_plan;
  rec.precision = "fp64", rec.time_setup = h.setup;
  return result_dict(rec);
}

py::dict krylov_operator(const std::string& method, std::int64_t n, py::object fa, const F64Array& rhs,
                         py::array_t<double, py::array::f_style> x, bool use_x0, py::object precond_fn,
                         const py::dict& opt) {
  EngineThreadsScope engine_threads;
  const Krylov km = parse_krylov(method);
  check_block(rhs, n, "b");
  check_x(x, n, rhs);
  if (opt_get<std::string>(opt, "device", "auto") == "cuda")
    throw InvalidArgument("a LinearOperator runs on the CPU backend (device='cpu'): its matvec "
                          "is Python code on host arrays");
  KrylovOptions o = krylov_options(opt);
  PyOperator a(fa, n, "A");
  std::unique_ptr<PyOperator> m;
  py::dict none_opt;
  none_opt["precond"] = "none";  // an operator has no diagonal to hand Jacobi
  const std::string precond = set_preconditioner(none_opt, precond_fn, n, true, {}, m, o);
  const double* bp = rhs.data();
  double* xp = x.mutable_data();
  const std::int64_t s = rhs.shape(1);
  SolveResult r = run_interruptible([&] {
    auto ops = make_dense_ops(Backend::cpu);
    return run_krylov_host(km, a, *ops, bp, xp, n, s, use_x0, o);
  });
  ResultRecord rec = solve_record(r, o.tol, o.max_iterations, Backend::cpu, precond);
  python_operator_fields(rec);
  return result_dict(rec);
}

// The device solve behind krylov_device (GIL released, cached ops locked): Jacobi's diagonal
// extracted on the device and brought over once (n doubles), then the solver on the CuPy arrays;
// or (precond 'poly') the GMRES polynomial on the right, as the command's, with A's fused step on
// CuPy's own arrays where the rows are short (no copy of A), from x = 0.
SolveResult solve_device(Krylov km, std::int64_t n, std::int64_t nnz, const DevicePtrs& da,
                         MvView<const double> bv, MvView<double> xv, bool use_x0, KrylovOptions o,
                         const std::string& precond, double& setup) {
  const bool jacobi = precond == "jacobi";
  const auto ts = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
  DenseBlockOps* ops = &device_ops_locked();
  if (jacobi) {
    MultiVector<double> d = ops->allocate(n, 1);
    check_device_csr(n, nnz, da.indptr, da.indices, da.data, d.data(), ops->stream());
    o.jacobi_diagonal.resize(static_cast<std::size_t>(n));
    ops->to_host(d.view(), o.jacobi_diagonal.data(), n);
    ops->synchronize();
  }
  auto aop = make_device_csr_view(n, n, nnz, da.indptr, da.indices, da.data, ops->stream());
  if (precond == "poly") {
    std::unique_ptr<ChebyshevStep> step;
    if (chebyshev_step_pays(n, nnz)) step = make_chebyshev_step_view(n, da.indptr, da.indices, da.data, ops->stream());
    const krylov::BuiltPolynomial built = krylov::make_gmres_polynomial(
        *aop, std::move(step), *ops, bv.cols, km == Krylov::minres ? krylov::kDegreeMinres : krylov::kDegreeGmres, 91);
    if (!built.poly)
      throw InvalidArgument("M='poly': the GMRES polynomial found no root (A·v vanished on its start vector)");
    setup = seconds_since(ts);
    SolveResult r = krylov::polynomial_solve(km, *aop, *built.poly, bv, xv, *ops, o);
    ops->synchronize();
    return r;
  }
  setup = seconds_since(ts);
  SolveResult r = krylov::run(km, *aop, *ops, o, bv, xv, use_x0);
  ops->synchronize();
  return r;
}

py::dict krylov_device(const std::string& method, std::int64_t n, std::int64_t nnz, const py::tuple& pa,
                       std::uintptr_t rhs_ptr, std::uintptr_t x_ptr, std::int64_t s, bool use_x0,
                       const py::dict& opt) {
  EngineThreadsScope engine_threads;
  const Krylov km = parse_krylov(method);
  KrylovOptions o = krylov_options(opt);
  std::unique_ptr<PyOperator> m;
  const std::string precond = set_preconditioner(opt, py::none(), n, false, {}, m, o);
  if (precond == "poly" && use_x0) throw InvalidArgument("precond 'poly' starts from x = 0: it does not take x0");
  const DevicePtrs da = device_ptrs(pa);
  MvView<const double> bv{reinterpret_cast<const double*>(rhs_ptr), n, s, n, Space::device};
  MvView<double> xv{reinterpret_cast<double*>(x_ptr), n, s, n, Space::device};
  double setup = 0;
  SolveResult r = run_interruptible(
      [&] { return solve_device(km, n, nnz, da, bv, xv, use_x0, o, precond, setup); });
  ResultRecord rec = solve_record(r, o.tol, o.max_iterations, Backend::cuda, precond);
  device_view_fields(rec, nnz, setup);
  return result_dict(rec);
}

}  // namespace

void define_krylov(py::module_& m) {
  // x is written in place: refuse a converted copy (the package passes F-ordered float64).
  m.def("krylov_csr", &krylov_csr, py::arg("method"), py::arg("n"), py::arg("indptr"), py::arg("indices"),
        py::arg("data"), py::arg("rhs"), py::arg("x").noconvert(), py::arg("use_x0"), py::arg("precond_fn"),
        py::arg("opt"));
  m.def("krylov_operator", &krylov_operator, py::arg("method"), py::arg("n"), py::arg("fa"), py::arg("rhs"),
        py::arg("x").noconvert(), py::arg("use_x0"), py::arg("precond_fn"), py::arg("opt"));
  m.def("krylov_device", &krylov_device);
}

}  // namespace tcsolve::pyext
