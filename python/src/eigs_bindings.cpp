// The eigensolver entries of tcsolve._tcsolve (all options in a dict `opt`, keys as the
// EigsOptions fields; see bindings.hpp for the shared pieces):
//   eigs_csr(n, indptr, indices, data, mass, precond_fn, opt)   mass: None or (indptr, indices, data)
//   eigs_operator(n, matmat_a, matmat_b, precond_fn, opt)       callables X (n×k, F) -> A·X
//   eigs_device(n, nnz_a, ptrs_a, ptrs_b, nnz_b, opt)           ptrs: (indptr, indices, data)
//                                                               device addresses (int64/int32/f64)
// opt["constraints"] (n × p, lobpcg's Y) and opt["mass_inverse"] (a callable X -> M⁻¹·X, host
// input only) reach EigsOptions::constraints and ::mass_inverse.
// Each runs the driver (solvers/eigs/eigs.hpp) with the GIL released and Ctrl-C bridged
// (run_interruptible), and returns the result dict (results.cpp).
#include <memory>

#include "factor/sparse_factor.hpp"
#include "python/src/bindings.hpp"
#include "preprocess/rcm.hpp"
#include "spmm/device_csr_view.hpp"

namespace tcsolve::pyext {

namespace {

py::dict eigs_csr(std::int64_t n, const I64Array& indptr, const I32Array& indices,
                  const D1Array& data, py::object mass, py::object precond_fn,
                  const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  const auto t0 = std::chrono::steady_clock::now();
  Csr<double> a = csr_from_arrays(n, indptr, indices, data);
  std::unique_ptr<Csr<double>> b;
  if (!mass.is_none()) {
    py::tuple m = mass.cast<py::tuple>();
    b = std::make_unique<Csr<double>>(csr_from_arrays(n, m[0].cast<I64Array>(),
                                                      m[1].cast<I32Array>(),
                                                      m[2].cast<D1Array>()));
  }
  EigsOptions o = eigs_options(opt, n);
  o.on_iteration = progress_and_interrupt(opt);
  std::unique_ptr<PyOperator> pre;
  if (!precond_fn.is_none()) {
    if (o.backend != Backend::cpu)
      throw InvalidArgument("a preconditioner M given as an operator runs on the CPU backend "
                            "(device='cpu')");
    pre = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = pre.get();
  }
  const std::unique_ptr<PyOperator> minv = mass_inverse_operator(opt, n, o);
  // A large matrix in a scattered order iterates in a reverse Cuthill-McKee order on the CPU, as
  // the command's --reorder auto (preprocess/rcm.hpp): not with a mass matrix, a shift, a
  // preconditioner, constraints or a start block (their orders would follow).
  LocalityOrder lo;
  if (o.backend == Backend::cpu && !b && !pre && !minv && !o.has_sigma && o.constraints.empty() &&
      o.v0.empty() && opt_get<std::string>(opt, "reorder", "auto") == "auto")
    lo = locality_order(a);
  const double convert_s = seconds_since(t0);
  // the driver: plan, set up, solve, verify
  EigsResult r = run_interruptible([&] { return eigs(lo.perm.empty() ? a : lo.permuted, b.get(), o); });
  if (!lo.perm.empty()) {  // x[perm[i]] = x̃[i], column by column
    std::vector<double> x(r.vectors.size());
    const std::int64_t k = n > 0 ? static_cast<std::int64_t>(r.vectors.size()) / n : 0;
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < n; ++i) x[j * n + lo.perm[i]] = r.vectors[j * n + i];
    r.vectors.swap(x);
    r.spmm_plan = "permuted basis B = P·A·Pᵀ (auto: " + lo.describe() + "); " + r.spmm_plan;
  }
  ResultRecord rec = eigs_record(r, o);
  rec.nnz = a.nnz(), rec.spmm_kernel = r.spmm_kernel, rec.spmm_plan = r.spmm_plan;
  py::dict d = result_dict(rec);
  d["time_convert"] = convert_s;
  return d;
}

py::dict eigs_operator(std::int64_t n, py::object fa, py::object fb, py::object precond_fn,
                       const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  EigsOptions o = eigs_options(opt, n);
  if (o.backend != Backend::cpu)
    throw InvalidArgument("a LinearOperator runs on the CPU backend (device='cpu'): its matvec "
                          "is Python code on host arrays");
  o.on_iteration = progress_and_interrupt(opt);
  PyOperator a(fa, n, "A");
  std::unique_ptr<PyOperator> b = fb.is_none() ? nullptr : std::make_unique<PyOperator>(fb, n, "M");
  std::unique_ptr<PyOperator> pre;
  if (!precond_fn.is_none()) {
    pre = std::make_unique<PyOperator>(precond_fn, n, "M");
    o.preconditioner = pre.get();
  }
  const std::unique_ptr<PyOperator> minv = mass_inverse_operator(opt, n, o);
  EigsResult r = run_interruptible([&] {
    auto ops = make_dense_ops(Backend::cpu);
    return eigs(a, b.get(), *ops, o);
  });
  ResultRecord rec = eigs_record(r, o);
  const std::string precision = rec.precision;  // (eigs: the storage asked)
  python_operator_fields(rec);
  rec.precision = precision;
  return result_dict(rec);
}

// CuPy input: the operators view the caller's device arrays (spmm/device_csr_view.hpp); the
// driver's operator form runs on them (no factorization: no shift-invert). The package passes
// ‖A‖∞ and ‖B‖∞ (computed by CuPy on the device).
py::dict eigs_device(std::int64_t n, std::int64_t nnz_a, const py::tuple& pa, py::object pb,
                     std::int64_t nnz_b, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  EigsOptions o = eigs_options(opt, n);
  o.backend = Backend::cuda;
  if (opt.contains("mass_inverse") && !opt["mass_inverse"].is_none())
    throw InvalidArgument("Minv (M^-1 as an operator) with CuPy input is not supported: it runs on the host");
  o.on_iteration = progress_and_interrupt(opt);
  const double a_norm = opt_get<double>(opt, "a_norm", 0.0), b_norm = opt_get<double>(opt, "b_norm", 0.0);
  const DevicePtrs da = device_ptrs(pa);
  const bool has_b = !pb.is_none();
  const DevicePtrs db = has_b ? device_ptrs(pb.cast<py::tuple>()) : DevicePtrs{nullptr, nullptr, nullptr};
  EigsResult r = run_interruptible([&] {
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps* ops = &device_ops_locked();
    auto aop = make_device_csr_view(n, n, nnz_a, da.indptr, da.indices, da.data, ops->stream());
    std::unique_ptr<LinearOperator<double>> bop;
    if (has_b) bop = make_device_csr_view(n, n, nnz_b, db.indptr, db.indices, db.data, ops->stream());
    EigsResult res = eigs(*aop, bop.get(), *ops, o, a_norm, b_norm);
    ops->synchronize();
    return res;
  });
  ResultRecord rec = eigs_record(r, o);
  const double setup_s = rec.time_setup;
  const std::string precision = rec.precision;  // (eigs: the storage asked)
  device_view_fields(rec, nnz_a, setup_s);
  rec.precision = precision;
  return result_dict(rec);
}

}  // namespace

void define_eigs(py::module_& m) {
  m.def("eigs_csr", &eigs_csr);
  m.def("eigs_operator", &eigs_operator);
  m.def("eigs_device", &eigs_device);
}

}  // namespace tcsolve::pyext
