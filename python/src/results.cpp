// Solver results -> dicts of NumPy arrays and scalars, with the names of the HDF5 result files
// (docs/hdf5-schema.md); the package's Result holds them. Moved unchanged from module.cpp (the
// shared result-record writer will replace these).
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "python/src/bindings.hpp"

namespace tcsolve::pyext {

py::array_t<double> vec(const std::vector<double>& v) {
  py::array_t<double> a(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(double));
  return a;
}

namespace {

py::array_t<std::int64_t> ivec(const std::vector<std::int64_t>& v) {
  py::array_t<std::int64_t> a(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(std::int64_t));
  return a;
}

// n × k column-major block as an (n, k) Fortran-ordered array.
py::array_t<double> block(const std::vector<double>& v, std::int64_t n) {
  const std::int64_t k = n > 0 ? static_cast<std::int64_t>(v.size()) / n : 0;
  py::array_t<double, py::array::f_style> a({n, k});
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(double));
  return a;
}

// The HDF5 result's history group (docs/hdf5-schema.md): residual norms padded with NaN.
py::dict history_dict(const std::vector<IterationRecord>& h) {
  std::size_t c = 0, cv = 0;
  for (const auto& r : h) c = std::max(c, r.residual_norms.size()), cv = std::max(cv, r.values.size());
  py::array_t<double> vals({static_cast<py::ssize_t>(h.size()), static_cast<py::ssize_t>(cv)});
  std::fill(vals.mutable_data(), vals.mutable_data() + h.size() * cv, NAN);
  for (std::size_t i = 0; i < h.size(); ++i)
    std::copy(h[i].values.begin(), h[i].values.end(), vals.mutable_data() + i * cv);
  std::vector<std::int64_t> it, conv, act;
  std::vector<double> ap, de;
  std::vector<std::string> ortho;
  py::array_t<double> res({static_cast<py::ssize_t>(h.size()), static_cast<py::ssize_t>(c)});
  double* rp = res.mutable_data();
  std::fill(rp, rp + h.size() * c, NAN);
  for (std::size_t i = 0; i < h.size(); ++i) {
    it.push_back(h[i].iteration);
    conv.push_back(h[i].converged);
    act.push_back(h[i].active);
    ap.push_back(h[i].apply_seconds);
    de.push_back(h[i].dense_seconds);
    ortho.emplace_back(to_string(h[i].ortho));
    std::copy(h[i].residual_norms.begin(), h[i].residual_norms.end(), rp + i * c);
  }
  py::dict d;
  d["iteration"] = ivec(it);
  d["residual_norms"] = res;
  d["values"] = vals;  // iterations × k Ritz values (LOBPCG), NaN where a solver keeps none
  d["converged"] = ivec(conv);
  d["active"] = ivec(act);
  d["apply_seconds"] = vec(ap);
  d["dense_seconds"] = vec(de);
  d["ortho"] = ortho;
  return d;
}

std::string device_string(Backend b) { return b == Backend::cuda ? device_name() : "cpu"; }

}  // namespace

py::dict eigs_result_dict(const EigsResult& r, const EigsOptions& o) {
  py::dict d;
  d["task"] = "eigs";
  d["status"] = to_string(r.status);
  d["reason"] = r.reason;
  d["eigenvalues"] = vec(r.values);
  d["eigenvectors"] = block(r.vectors, r.n);
  d["rows"] = r.n;
  d["residual_norms"] = vec(r.residual_norms);
  d["residual_bounds"] = vec(r.residual_bounds);
  d["error_bounds"] = vec(r.error_bounds);
  d["convergence_test"] = to_string(r.conv);  // names as in the HDF5 result (apps/job.cpp)
  d["a_norm"] = r.a_norm;
  d["b_norm"] = r.b_norm;
  d["method"] = r.method;
  d["transform"] = r.transform;
  d["sigma"] = r.sigma;
  d["method_reason"] = r.why;
  d["predicted_seconds"] = r.predicted_seconds;
  d["precision_used"] = r.precision;
  d["verification"] = to_string(r.verification);
  d["certified"] = to_string(r.certified);
  d["certificate"] = r.certificate;
  d["factorization"] = r.factor;
  d["iterations"] = r.iterations;
  d["operator_applies"] = r.operator_applies;
  d["history"] = history_dict(r.history);
  d["time_plan"] = r.plan_seconds;
  d["time_setup"] = r.setup_seconds;
  d["time_solve"] = r.solve_seconds;
  d["time_verify"] = r.verify_seconds;
  d["tolerance"] = o.tol;
  d["max_iterations"] = o.max_iterations;
  d["seed"] = static_cast<std::int64_t>(o.seed);
  d["precision"] = to_string(o.precision);
  d["preconditioner"] = o.preconditioner ? "operator" : to_string(o.precond);
  d["backend"] = to_string(o.backend);
  d["device"] = device_string(o.backend);
  return d;
}

py::dict solve_result_dict(const SolveResult& r, double tol, std::int64_t max_iterations, Backend backend,
                           const std::string& precond) {
  py::dict d;
  d["task"] = "solve";
  d["method"] = r.method.empty() ? std::string("block_cg") : r.method;
  d["status"] = to_string(r.status);
  d["reason"] = r.reason;
  d["rows"] = r.n;
  d["residual_norms"] = vec(r.residual_norms);
  if (!r.backward_errors.empty()) d["backward_errors"] = vec(r.backward_errors);
  if (!r.optimality.empty()) d["optimality"] = vec(r.optimality);  // least squares only
  d["column_iterations"] = ivec(r.column_iterations);
  d["iterations"] = r.iterations;
  d["operator_applies"] = r.operator_applies;
  d["history"] = history_dict(r.history);
  d["time_solve"] = r.seconds;
  d["precision_used"] = r.precision;  // "fp64", or the fp32 iteration's refinement account
  d["tolerance"] = tol;
  d["max_iterations"] = max_iterations;
  d["preconditioner"] = precond;
  d["backend"] = to_string(backend);
  d["device"] = device_string(backend);
  return d;
}

void put_device_view_fields(py::dict& d, std::int64_t nnz, double setup_seconds) {
  d["nnz"] = nnz;
  d["spmm_kernel"] = "csr_view";
  d["spmm_plan"] = "row-split CSR kernel on the CuPy arrays in place (no upload, no trial)";
  d["precision"] = "fp64";
  d["time_setup"] = setup_seconds;
}

void put_python_operator_fields(py::dict& d) {
  d["spmm_kernel"] = "python";
  d["spmm_plan"] = "the LinearOperator's matmat (Python callback)";
  d["precision"] = "fp64";
}

py::dict solve_result_dict(const SolveResult& r, const CgOptions& o, Backend backend,
                           const std::string& precond) {
  return solve_result_dict(r, o.tol, o.max_iterations, backend, precond);
}

}  // namespace tcsolve::pyext
