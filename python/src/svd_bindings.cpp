// The partial-SVD entries of tcsolve._tcsolve (solvers/svd/svds.hpp), for the package's svds and
// pca (python/tcsolve/_svds.py, _pca.py). Options in a dict `opt`, keys as the SvdOptions fields
// (k, tol, block, basis, max_restarts, seed, center) plus device and v0 (None or n values: the
// one-column SvdOptions::start):
//   svds_csr(m, n, indptr, indices, data, opt)           host CSR m × n; Aᵀ built once in C++;
//                                                        opt["center"]: the implicit A − 1·μᵀ
//   svds_operator(m, n, matmat_a, matmat_at, opt)        callables X (n × q, F) -> A·X and
//                                                        Y (m × q) -> Aᵀ·Y; CPU only
//   svds_device(m, n, nnz, ptrs_a, nnz_t, ptrs_at, mu, opt)
//                                                        CuPy CSR arrays of A and of Aᵀ, read in
//                                                        place; mu: None or the n column means
//                                                        (centered: A − 1·μᵀ through
//                                                        CenteredOperator on the device)
// Each solves with the GIL released and Ctrl-C bridged (run_interruptible) and returns a dict:
// status, reason, method, values (descending), u (m × k), v (n × k, V not Vᵀ), residual_av,
// residual_atu, a_norm, the history of the svds HDF5 result (docs/hdf5-schema.md, section 6),
// the phases' seconds and, centered, means and total_sq.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "factor/sparse_factor.hpp"
#include "python/src/bindings.hpp"
#include "solvers/svd/centered.hpp"
#include "solvers/svd/svds.hpp"
#include "spmm/device_csr_view.hpp"

namespace tcsolve::pyext {

namespace {

SvdOptions svd_options(const py::dict& d, std::int64_t n) {
  SvdOptions o;
  o.k = opt_get<std::int64_t>(d, "k", o.k);
  o.tol = opt_get<double>(d, "tol", o.tol);
  o.block = opt_get<std::int64_t>(d, "block", 0);
  o.basis = opt_get<std::int64_t>(d, "basis", 0);
  o.max_restarts = opt_get<std::int64_t>(d, "max_restarts", o.max_restarts);
  o.seed = opt_get<std::uint64_t>(d, "seed", o.seed);
  o.center = opt_get<bool>(d, "center", false);
  if (d.contains("v0") && !d["v0"].is_none()) {
    D1Array v0 = d["v0"].cast<D1Array>();
    if (v0.ndim() != 1 || v0.shape(0) != n)
      throw InvalidArgument("v0: expected " + std::to_string(n) + " values (A has " + std::to_string(n) +
                            " columns)");
    o.start.assign(v0.data(), v0.data() + n);  // the first start column (n × 1)
  }
  return o;
}

// rows × cols column-major as an F-ordered (rows, cols) array.
py::array_t<double> block(const std::vector<double>& v, std::int64_t rows, std::int64_t cols) {
  py::array_t<double, py::array::f_style> a({rows, cols});
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(double));
  return a;
}

// The svds result file's history: restart number, triplets whose estimate passed, the
// estimates of ‖Aᵀ·u_j − σ_j·v_j‖ per wanted triplet (restarts × k, NaN where none was made).
py::dict svd_history(const SvdResult& r) {
  const auto h = static_cast<py::ssize_t>(r.history.size());
  py::array_t<std::int64_t> it(h), conv(h);
  py::array_t<double> est({h, static_cast<py::ssize_t>(r.k)});
  std::fill(est.mutable_data(), est.mutable_data() + est.size(), NAN);
  for (py::ssize_t i = 0; i < h; ++i) {
    const IterationRecord& rec = r.history[static_cast<std::size_t>(i)];
    it.mutable_data()[i] = rec.iteration;
    conv.mutable_data()[i] = rec.converged;
    const std::size_t c = std::min(rec.residual_norms.size(), static_cast<std::size_t>(r.k));
    std::copy(rec.residual_norms.begin(), rec.residual_norms.begin() + c, est.mutable_data() + i * r.k);
  }
  py::dict d;
  d["iteration"] = it;
  d["converged"] = conv;
  d["residual_estimates"] = est;
  return d;
}

py::dict svd_result_dict(const SvdResult& r, const SvdOptions& o, Backend backend) {
  py::dict d;
  d["task"] = "svds";
  d["status"] = to_string(r.status);
  d["reason"] = r.reason;
  d["method"] = r.method;
  d["rows"] = r.m;
  d["cols"] = r.n;
  d["k"] = r.k;
  d["values"] = vec(r.values);
  d["u"] = block(r.u, r.m, static_cast<std::int64_t>(r.u.size()) / std::max<std::int64_t>(r.m, 1));
  d["v"] = block(r.v, r.n, static_cast<std::int64_t>(r.v.size()) / std::max<std::int64_t>(r.n, 1));
  d["residual_av"] = vec(r.residual_av);
  d["residual_atu"] = vec(r.residual_atu);
  d["a_norm"] = r.a_norm;
  d["tolerance"] = r.tol > 0 ? r.tol : o.tol;
  d["iterations"] = r.iterations;
  d["max_iterations"] = o.max_restarts;
  d["operator_applies"] = r.operator_applies;
  d["history"] = svd_history(r);
  d["time_setup"] = r.phases.setup_s;
  d["time_solve"] = r.phases.iterate_s;
  d["time_verify"] = r.phases.verify_s;
  d["seconds"] = r.seconds;
  d["seed"] = static_cast<std::int64_t>(o.seed);
  d["centered"] = o.center;
  if (o.center) {
    d["means"] = vec(r.means);
    d["total_sq"] = r.total_sq;
  }
  d["backend"] = to_string(backend);
  d["device"] = backend == Backend::cuda ? device_name() : std::string("cpu");
  return d;
}

py::dict svds_csr(std::int64_t m, std::int64_t n, const I64Array& indptr, const I32Array& indices,
                  const D1Array& data, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  Csr<double> a = csr_from_arrays(m, n, indptr, indices, data);
  const SvdOptions o = svd_options(opt, n);
  const Backend backend = resolve_backend(opt_get<std::string>(opt, "device", "auto"));
  SvdResult r = run_interruptible([&] { return svds(a, backend, o); });
  py::dict d = svd_result_dict(r, o, backend);
  d["nnz"] = a.nnz();
  return d;
}

py::dict svds_operator(std::int64_t m, std::int64_t n, py::object fa, py::object fat, const py::dict& opt) {
  EngineThreadsScope engine_threads;
  const SvdOptions o = svd_options(opt, n);
  if (o.center)
    throw InvalidArgument("center: the operator form of svds does not center (pass a matrix)");
  PyOperator a(std::move(fa), m, n, "A"), at(std::move(fat), n, m, "A^T (rmatmat)");
  SvdResult r = run_interruptible([&] {
    auto ops = make_dense_ops(Backend::cpu);
    return svds(a, at, *ops, o);
  });
  py::dict d = svd_result_dict(r, o, Backend::cpu);
  put_python_operator_fields(d);
  return d;
}

// CuPy input: A and Aᵀ (the package transposes on the device) viewed in place; centered, the
// means μ (n values, computed by CuPy) go to CenteredOperator, which keeps a device copy.
py::dict svds_device(std::int64_t m, std::int64_t n, std::int64_t nnz, const py::tuple& pa,
                     std::int64_t nnz_t, const py::tuple& pat, py::object mu, const py::dict& opt) {
  EngineThreadsScope engine_threads;
  SvdOptions o = svd_options(opt, n);
  std::vector<double> means;
  if (!mu.is_none()) {
    D1Array mu_a = mu.cast<D1Array>();
    if (mu_a.ndim() != 1 || mu_a.shape(0) != n) throw InvalidArgument("mu: expected n values");
    means.assign(mu_a.data(), mu_a.data() + n);
  }
  if (o.center != !means.empty()) throw InvalidArgument("svds_device: center needs the means mu");
  const DevicePtrs da = device_ptrs(pa), dt = device_ptrs(pat);
  const std::int64_t block = o.block > 0 ? o.block : std::min<std::int64_t>(o.k, 16);
  const std::int64_t max_cols = std::max(block, o.k);
  SvdResult r = run_interruptible([&] {
    std::lock_guard<std::mutex> lock(cached_device_ops().mutex);
    DenseBlockOps& ops = device_ops_locked();
    auto aop = make_device_csr_view(m, n, nnz, da.indptr, da.indices, da.data, ops.stream());
    auto atop = make_device_csr_view(n, m, nnz_t, dt.indptr, dt.indices, dt.data, ops.stream());
    std::unique_ptr<CenteredOperator> ca, cat;
    if (o.center) {
      ca = std::make_unique<CenteredOperator>(*aop, false, means, ops, max_cols);
      cat = std::make_unique<CenteredOperator>(*atop, true, means, ops, max_cols);
    }
    const LinearOperator<double>& A = ca ? static_cast<const LinearOperator<double>&>(*ca) : *aop;
    const LinearOperator<double>& At = cat ? static_cast<const LinearOperator<double>&>(*cat) : *atop;
    SvdResult res = svds(A, At, ops, o);
    ops.synchronize();
    return res;
  });
  if (o.center) r.means = std::move(means);  // total_sq: computed by the package (CuPy)
  py::dict d = svd_result_dict(r, o, Backend::cuda);
  put_device_view_fields(d, nnz, r.phases.setup_s);
  return d;
}

}  // namespace

void define_svd(py::module_& m) {
  m.def("svds_csr", &svds_csr);
  m.def("svds_operator", &svds_operator);
  m.def("svds_device", &svds_device);
}

}  // namespace tcsolve::pyext
