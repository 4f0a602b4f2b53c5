// The block CG entries of tcsolve._tcsolve (options in a dict `opt`, keys as the CgOptions
// fields, plus device, precision, precond; see bindings.hpp for the shared pieces):
//   cg_csr(n, indptr, indices, data, rhs, x, use_x0, precond_fn, opt)  rhs n×s, x n×s (F order,
//                                                                      float64, written in place)
//   cg_operator(n, matmat_a, rhs, x, use_x0, precond_fn, opt)
//   cg_device(n, nnz, ptrs_a, rhs_ptr, x_ptr, s, use_x0, opt)   rhs/x device n×s column-major
// Each solves with the GIL released and Ctrl-C bridged (run_interruptible) and returns the
// result dict (results.cpp).
#include <algorithm>
#include <memory>

#include "factor/sparse_factor.hpp"
#include "python/src/bindings.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "spmm/device_csr_view.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::pyext {

namespace {

// Whether block CG's fp32 iteration may run (solvers/block_cg.hpp): GPU dense ops, Jacobi or no
// preconditioner, at most kCgFp32MaxRhs columns.
bool cg_fp32_fits(const DenseBlockOps& ops, const CgOptions& o, std::int64_t s) {
  return ops.space() == Space::device && ops.cg().fp32_blocks() && !o.preconditioner && s <= kCgFp32MaxRhs;
}

// rhs, x: host blocks n × s (x holds x0 when use_x0, and the solution on return). On the CUDA
// backend they are copied to the device and back (the matrix was uploaded by the operator).
SolveResult run_cg_host(const LinearOperator<double>& a, DenseBlockOps& ops, const double* rhs,
                        double* x, std::int64_t n, std::int64_t s, bool use_x0,
                        const CgOptions& o) {
  BlockCg cg(a, ops, s, o);
  if (ops.space() == Space::host) {
    MvView<const double> bv{rhs, n, s, n, Space::host};
    MvView<double> xv{x, n, s, n, Space::host};
    return cg.solve(bv, xv, use_x0);
  }
  MultiVector<double> bd = ops.allocate(n, s), xd = ops.allocate(n, s);
  ops.from_host(rhs, n, bd.view());
  if (use_x0) ops.from_host(x, n, xd.view());
  SolveResult r = cg.solve(bd.view(), xd.view(), use_x0);
  ops.to_host(xd.view(), x, n);
  ops.synchronize();
  return r;
}

// The host solve behind cg_csr (GIL released): A's operator, the Chebyshev polynomial or the
// fp32 iteration when asked for, then block CG. `precond` is updated with the polynomial's name.
struct CsrSolve {
  SolveResult r;
  std::string kernel, kernel_plan;
  double setup = 0;
};
CsrSolve solve_csr_host(const Csr<double>& a, const F64Array& rhs, double* x, std::int64_t n,
                        bool use_x0, CgOptions o, Backend backend, Precision precision, bool mixed,
                        std::string& precond) {
  CsrSolve out;
  const std::int64_t s = rhs.shape(1);
  const auto ts = std::chrono::steady_clock::now();
  auto ops = make_dense_ops(backend);
  OperatorOptions oo;
  oo.precision = precision;
  oo.stream = ops->stream();
  oo.expected_cols = static_cast<int>(std::min<std::int64_t>(s, 64));
  auto aop = make_sparse_operator(a, backend, oo);
  out.kernel = to_string(aop->plan().kernel);
  out.kernel_plan = aop->plan().reason;
  std::unique_ptr<ChebyshevPreconditioner> cheb;
  if (precond == "chebyshev") {
    const bool jacobi = chebyshev_wants_jacobi(a);
    cheb = make_chebyshev_preconditioner(*aop, *ops, s, chebyshev_upper_bound(a, jacobi), 77, nullptr, 0, &a,
                                         backend == Backend::cuda ? Precision::fp32 : Precision::fp64,
                                         jacobi);
    o.preconditioner = cheb.get();
    o.jacobi_diagonal.clear();
    precond = cheb->describe();
  }
  // precision='auto' on the GPU: fp32 iterations inside fp64 refinement (as the command's).
  std::unique_ptr<ChebyshevStep> step32;
  if (mixed && cg_fp32_fits(*ops, o, s)) {
    o.step32 = aop->block_step();
    if (!o.step32) {
      step32 = make_chebyshev_step_on_operator(*aop, a, Precision::fp32, ops->stream());
      o.step32 = step32.get();
    }
  }
  out.setup = seconds_since(ts);
  out.r = run_cg_host(*aop, *ops, rhs.data(), x, n, s, use_x0, o);
  if (cheb) out.r.operator_applies += cheb->columns_applied();
  return out;
}

py::dict cg_csr(std::int64_t n, const I64Array& indptr, const I32Array& indices,
                const D1Array& data, const F64Array& rhs, py::array_t<double, py::array::f_style> x,
                bool use_x0, py::object precond_fn, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  Csr<double> a = csr_from_arrays(n, indptr, indices, data);
  check_block(rhs, n, "b");
  check_x(x, n, rhs);
  CgOptions o = cg_options(opt);
  const Backend backend = resolve_backend(opt_get<std::string>(opt, "device", "auto"));
  const Precision precision = parse_storage_precision(opt_get<std::string>(opt, "precision", "auto"));
  std::string precond = opt_get<std::string>(opt, "precond", "jacobi");
  if (precond == "jacobi") o.jacobi_diagonal = csr_diagonal(a);
  std::unique_ptr<PyOperator> m;
  if (!precond_fn.is_none()) {
    if (backend != Backend::cpu)
      throw InvalidArgument("a preconditioner M given as an operator runs on the CPU backend "
                            "(device='cpu')");
    m = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = m.get();
    o.jacobi_diagonal.clear();
    precond = "operator";
  }
  const bool mixed = opt_get<std::string>(opt, "precision", "auto") == "auto";  // (read with the GIL)
  double* xp = x.mutable_data();
  CsrSolve c = run_interruptible(
      [&] { return solve_csr_host(a, rhs, xp, n, use_x0, o, backend, precision, mixed, precond); });
  ResultRecord rec = solve_record(c.r, o.tol, o.max_iterations, backend, precond);
  rec.nnz = a.nnz(), rec.spmm_kernel = c.kernel, rec.spmm_plan = c.kernel_plan;
  rec.precision = to_string(precision), rec.time_setup = c.setup;
  return result_dict(rec);
}

py::dict cg_operator(std::int64_t n, py::object fa, const F64Array& rhs,
                     py::array_t<double, py::array::f_style> x, bool use_x0, py::object precond_fn,
                     const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  check_block(rhs, n, "b");
  check_x(x, n, rhs);
  if (resolve_backend(opt_get<std::string>(opt, "device", "auto")) != Backend::cpu &&
      opt_get<std::string>(opt, "device", "auto") == "cuda")
    throw InvalidArgument("a LinearOperator runs on the CPU backend (device='cpu'): its matvec "
                          "is Python code on host arrays");
  CgOptions o = cg_options(opt);
  PyOperator a(fa, n, "A");
  std::unique_ptr<PyOperator> m;
  std::string precond = "none";
  if (!precond_fn.is_none()) {
    m = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = m.get();
    precond = "operator";
  }
  const double* bp = rhs.data();
  double* xp = x.mutable_data();
  const std::int64_t s = rhs.shape(1);
  SolveResult r = run_interruptible([&] {
    auto ops = make_dense_ops(Backend::cpu);
    return run_cg_host(a, *ops, bp, xp, n, s, use_x0, o);
  });
  ResultRecord rec = solve_record(r, o.tol, o.max_iterations, Backend::cpu, precond);
  python_operator_fields(rec);
  return result_dict(rec);
}

// The device solve behind cg_device (GIL released, cached ops locked): Jacobi's diagonal from the
// device, the Chebyshev polynomial or the fp32 iteration on the CuPy arrays, then block CG.
SolveResult solve_device(std::int64_t n, std::int64_t nnz, const DevicePtrs& da, MvView<const double> bv,
                         MvView<double> xv, bool use_x0, CgOptions o, double a_norm, bool mixed,
                         std::string& precond, double& setup) {
  const auto ts = std::chrono::steady_clock::now();
  const std::int64_t s = bv.cols;
  std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
  DenseBlockOps* ops = &device_ops_locked();
  if (precond == "jacobi") {
    // The diagonal, extracted on the device (one pass) and brought over once for Jacobi.
    MultiVector<double> d = ops->allocate(n, 1);
    check_device_csr(n, nnz, da.indptr, da.indices, da.data, d.data(), ops->stream());
    o.jacobi_diagonal.resize(static_cast<std::size_t>(n));
    ops->to_host(d.view(), o.jacobi_diagonal.data(), n);
  }
  auto aop = make_device_csr_view(n, n, nnz, da.indptr, da.indices, da.data, ops->stream());
  std::unique_ptr<ChebyshevPreconditioner> cheb;
  if (precond == "chebyshev") {
    // The fused step on the CuPy arrays themselves when the rows are short, as the command's:
    // A's values rounded to fp32 on the device (4·nnz bytes) and fp32 blocks in the steps (only
    // M changes; CG's residuals are fp64 on A). Where the fp32 copy does not fit, the step
    // reads the fp64 values in place.
    std::unique_ptr<ChebyshevStep> step;
    Precision storage = Precision::fp64;
    if (chebyshev_step_fuses(n, nnz, Space::device, Precision::fp32)) {
      step = make_chebyshev_step_view32(n, nnz, da.indptr, da.indices, da.data, ops->stream());
      storage = Precision::fp32;
    } else if (chebyshev_step_pays(n, nnz)) {
      step = make_chebyshev_step_view(n, da.indptr, da.indices, da.data, ops->stream());
    }
    cheb = make_chebyshev_preconditioner(*aop, *ops, s, a_norm, 77, nullptr, 0, nullptr, storage,
                                         false, std::move(step));
    o.preconditioner = cheb.get();
    precond = cheb->describe();
  }
  // precision='auto': fp32 iterations inside fp64 refinement on A's values rounded on the device
  // (4·nnz bytes), for short rows (the row-split step).
  std::unique_ptr<ChebyshevStep> step32;
  if (mixed && cg_fp32_fits(*ops, o, s) && chebyshev_step_pays(n, nnz)) {
    step32 = make_chebyshev_step_view32(n, nnz, da.indptr, da.indices, da.data, ops->stream());
    o.step32 = step32.get();
  }
  setup = seconds_since(ts);
  BlockCg cg(*aop, *ops, s, o);
  SolveResult r = cg.solve(bv, xv, use_x0);
  ops->synchronize();
  if (cheb) r.operator_applies += cheb->columns_applied();
  return r;
}

py::dict cg_device(std::int64_t n, std::int64_t nnz, const py::tuple& pa, std::uintptr_t rhs_ptr,
                   std::uintptr_t x_ptr, std::int64_t s, bool use_x0, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  CgOptions o = cg_options(opt);
  std::string precond = opt_get<std::string>(opt, "precond", "jacobi");
  const double a_norm = opt_get<double>(opt, "a_norm", 0.0);
  const bool mixed = opt_get<std::string>(opt, "precision", "auto") == "auto";  // (read with the GIL)
  const DevicePtrs da = device_ptrs(pa);
  MvView<const double> bv{reinterpret_cast<const double*>(rhs_ptr), n, s, n, Space::device};
  MvView<double> xv{reinterpret_cast<double*>(x_ptr), n, s, n, Space::device};
  double setup = 0;
  SolveResult r = run_interruptible(
      [&] { return solve_device(n, nnz, da, bv, xv, use_x0, o, a_norm, mixed, precond, setup); });
  ResultRecord rec = solve_record(r, o.tol, o.max_iterations, Backend::cuda, precond);
  device_view_fields(rec, nnz, setup);
  return result_dict(rec);
}

}  // namespace

void define_solve(py::module_& m) {
  // x is written in place: refuse a converted copy (the package passes F-ordered float64).
  m.def("cg_csr", &cg_csr, py::arg("n"), py::arg("indptr"), py::arg("indices"), py::arg("data"),
        py::arg("rhs"), py::arg("x").noconvert(), py::arg("use_x0"), py::arg("precond_fn"),
        py::arg("opt"));
  m.def("cg_operator", &cg_operator, py::arg("n"), py::arg("fa"), py::arg("rhs"),
        py::arg("x").noconvert(), py::arg("use_x0"), py::arg("precond_fn"), py::arg("opt"));
  m.def("cg_device", &cg_device);
}

}  // namespace tcsolve::pyext
