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
// Each solves with the GIL released and Ctrl-C bridged (run_interruptible) and returns the dict
// of the svds HDF5 result (docs/hdf5-schema.md, section 6; results.cpp's result_dict): status,
// reason, method, s (descending), U (m × k), Vt (k × n), residual_av, residual_atu, a_norm, the
// history, the phases' seconds and, centered, means, scores, the explained variance and total_sq;
// plus seconds (the call's).
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

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
  o.scale = opt_get<bool>(d, "scale", false);
  const std::string certify = opt_get<std::string>(d, "certify", "auto");  // (_svds.py checks it)
  o.certify = certify == "always" ? SvdCertify::always : certify == "never" ? SvdCertify::never : SvdCertify::automatic;
  o.recheck = opt_get<bool>(d, "recheck", true);
  const std::string method = opt_get<std::string>(d, "method", "auto");  // (_svds.py checks it)
  o.method = method == "gkl" ? SvdMethod::gkl : method == "dense" ? SvdMethod::dense : SvdMethod::automatic;
  if (d.contains("v0") && !d["v0"].is_none()) {
    D1Array v0 = d["v0"].cast<D1Array>();
    if (v0.ndim() != 1 || v0.shape(0) != n)
      throw InvalidArgument("v0: expected " + std::to_string(n) + " values (A has " + std::to_string(n) +
                            " columns)");
    o.start.assign(v0.data(), v0.data() + n);  // the first start column (n × 1)
  }
  return o;
}

// The record's dict (results.cpp) and the seconds of the whole svds call.
py::dict svd_result_dict(ResultRecord& rec, double seconds) {
  py::dict d = result_dict(rec);
  d["seconds"] = seconds;
  return d;
}

py::dict svds_csr(std::int64_t m, std::int64_t n, const I64Array& indptr, const I32Array& indices,
                  const D1Array& data, const py::dict& opt) {
  EngineThreadsScope engine_threads;  // the caller's BLAS/OpenMP counts back at the end
  Csr<double> a = csr_from_arrays(m, n, indptr, indices, data);
  const SvdOptions o = svd_options(opt, n);
  const Backend backend = resolve_backend(opt_get<std::string>(opt, "device", "auto"));
  const std::int64_t nnz = a.nnz();
  SvdResult r = run_interruptible([&] { return svds(std::move(a), backend, o); });  // (A's arrays to the operator)
  ResultRecord rec = svds_record(r, o, backend);
  rec.nnz = nnz;
  return svd_result_dict(rec, r.seconds);
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
  ResultRecord rec = svds_record(r, o, Backend::cpu);
  python_operator_fields(rec);
  return svd_result_dict(rec, r.seconds);
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
  ResultRecord rec = svds_record(r, o, Backend::cuda);
  device_view_fields(rec, nnz, r.phases.setup_s);
  return svd_result_dict(rec, r.seconds);
}

}  // namespace

void define_svd(py::module_& m) {
  m.def("svds_csr", &svds_csr);
  m.def("svds_operator", &svds_operator);
  m.def("svds_device", &svds_device);
}

}  // namespace tcsolve::pyext
