// Solver results -> the result record (results/record.hpp: ResultRecord, filled by the functions
// the job pipeline uses) -> a dict under the names of the HDF5 result files (docs/hdf5-schema.md),
// made by visit_result, the one definition of that schema; the package's Result holds the dict.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "python/src/bindings.hpp"
#include "solvers/svd/svds.hpp"

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

// rows × cols values as a C-ordered (rows, cols) array, or (`transposed`) the same bytes as the
// Fortran-ordered (cols, rows) array.
py::array array_2d(const double* data, std::int64_t rows, std::int64_t cols, bool transposed) {
  py::array a = transposed ? py::array(py::array_t<double, py::array::f_style>({cols, rows}))
                           : py::array(py::array_t<double>({rows, cols}));
  if (rows * cols > 0) std::memcpy(a.mutable_data(), data, static_cast<std::size_t>(rows * cols) * sizeof(double));
  return a;
}

// The keys the package writes from the call itself (python/tcsolve: the matrix's description, the
// call as command and job options, no input files, the phases it timed, SciPy's `which` and the k
// asked, a solve's seed and column count): left out of the dict.
bool package_owned(const ResultRecord& r, const std::string& name) {
  static const std::set<std::string> call = {"matrix", "mass", "rhs", "start", "x0", "job", "command",
                                             "job_options", "input_stamps", "tcsolve_version", "time_read",
                                             "time_preprocess", "time_write"};
  if (call.count(name)) return true;
  if (r.is_eigs()) return name == "k" || name == "which";
  if (!r.is_svds()) return name == "seed" || name == "right_hand_sides";
  return false;
}

// The record's objects into a dict: attributes as str/float/int, datasets as NumPy arrays (the
// file's [rows][cols] as a C-ordered (rows, cols) array; eigenvectors and solution, one vector a
// row there, as the (n, k) Fortran block SciPy returns), history/NAME into the dict `history`.
class DictVisitor : public ResultVisitor {
 public:
  explicit DictVisitor(const ResultRecord& r) : r_(r) {}
  void attr(const std::string& name, const std::string& value) override { put(name, py::str(value)); }
  void attr(const std::string& name, double value) override { put(name, py::float_(value)); }
  void attr(const std::string& name, std::int64_t value) override { put(name, py::int_(value)); }
  void dataset(const std::string& name, const std::vector<double>& v) override { put(name, vec(v)); }
  void dataset(const std::string& name, const std::vector<std::int64_t>& v) override { put(name, ivec(v)); }
  void dataset_2d(const std::string& name, const double* data, std::int64_t rows, std::int64_t cols) override {
    put(name, array_2d(data, rows, cols, name == "eigenvectors" || name == "solution"));
  }
  py::dict dict, history;

 private:
  void put(const std::string& name, py::object value) {
    if (name.rfind("history/", 0) == 0) history[py::str(name.substr(8))] = std::move(value);
    else if (!package_owned(r_, name)) dict[py::str(name)] = std::move(value);
  }
  const ResultRecord& r_;
};

// eigs' and solve's history beyond the file's: the Ritz values per iteration (iterations × k,
// NaN where a solver keeps none) and the orthonormalization branch taken.
void history_extras(const std::vector<IterationRecord>& h, py::dict& d) {
  std::size_t cv = 0;
  for (const auto& r : h) cv = std::max(cv, r.values.size());
  py::array_t<double> vals({static_cast<py::ssize_t>(h.size()), static_cast<py::ssize_t>(cv)});
  std::fill(vals.mutable_data(), vals.mutable_data() + h.size() * cv, NAN);
  std::vector<std::string> ortho;
  for (std::size_t i = 0; i < h.size(); ++i) {
    std::copy(h[i].values.begin(), h[i].values.end(), vals.mutable_data() + i * cv);
    ortho.emplace_back(to_string(h[i].ortho));
  }
  d["values"] = vals;
  d["ortho"] = ortho;
}

std::string device_string(Backend b) { return b == Backend::cuda ? device_name() : "cpu"; }

}  // namespace

py::dict result_dict(const ResultRecord& r) {
  DictVisitor v(r);
  visit_result(r, v);
  py::dict& d = v.dict;
  // What the package keeps beyond the schema (its Result's fields since before the record).
  if (r.is_svds()) {
    d["centered"] = r.centered;  // a bool (the file: "yes" / "no")
    const std::pair<const char*, const std::string*> op[] = {
        {"spmm_kernel", &r.spmm_kernel}, {"spmm_plan", &r.spmm_plan}, {"precision", &r.precision}};
    for (const auto& [key, value] : op)  // the operator's (CuPy arrays, a LinearOperator), when set
      if (!value->empty()) d[key] = *value;
    if (r.history.empty()) {  // (the file has no history group then; the package always has one)
      v.history["iteration"] = ivec({});
      v.history["converged"] = ivec({});
      v.history["residual_estimates"] = array_2d(nullptr, 0, static_cast<std::int64_t>(r.singular_values.size()), false);
    }
  } else {
    history_extras(r.history, v.history);
  }
  if (r.is_eigs()) {  // the driver's fields, present when unset too; the vectors when not n × k
    if (!d.contains("sigma")) d["sigma"] = r.sigma;
    if (!d.contains("predicted_seconds")) d["predicted_seconds"] = r.predicted_seconds;
    if (!d.contains("factorization")) d["factorization"] = r.factorization;
    if (!d.contains("eigenvectors")) {
      const std::int64_t k = r.rows > 0 ? static_cast<std::int64_t>(r.vectors.size()) / r.rows : 0;
      d["eigenvectors"] = array_2d(r.vectors.data(), k, r.rows, true);
    }
  }
  d["history"] = v.history;
  return d;
}

ResultRecord eigs_record(EigsResult& er, const EigsOptions& o) {
  ResultRecord r;
  r.task = "eigs", r.rows = er.n;
  // the options as asked
  r.tolerance = o.tol, r.max_iterations = o.max_iterations, r.seed = o.seed, r.has_sigma = o.has_sigma;
  r.precision = to_string(o.precision), r.preconditioner = o.preconditioner ? "operator" : to_string(o.precond);
  r.backend = to_string(o.backend), r.device = device_string(o.backend);
  record_eigs(er, r);
  r.time_setup = er.setup_seconds;
  return r;
}

ResultRecord solve_record(SolveResult& sr, double tol, std::int64_t max_iterations, Backend backend,
                          const std::string& precond) {
  ResultRecord r;
  r.task = "solve", r.rows = sr.n;
  r.tolerance = tol, r.max_iterations = max_iterations, r.preconditioner = precond;
  r.backend = to_string(backend), r.device = device_string(backend);
  r.time_solve = sr.seconds, r.right_hand_sides = static_cast<std::int64_t>(sr.residual_norms.size());
  record_solve(sr, r);  // (iterative solves write the caller's x in place: no solutions here)
  return r;
}

ResultRecord svds_record(SvdResult& sr, const SvdOptions& o, Backend backend) {
  ResultRecord r;
  r.task = "svds", r.max_iterations = o.max_restarts, r.seed = o.seed, r.centered = o.center;
  r.backend = to_string(backend), r.device = device_string(backend);
  record_svds(sr, r);
  if (r.tolerance <= 0) r.tolerance = o.tol;
  return r;
}

void device_view_fields(ResultRecord& r, std::int64_t nnz, double setup_seconds) {
  r.nnz = nnz;
  r.spmm_kernel = "csr_view";
  r.spmm_plan = "row-split CSR kernel on the CuPy arrays in place (no upload, no trial)";
  r.precision = "fp64";
  r.time_setup = setup_seconds;
}

void python_operator_fields(ResultRecord& r) {
  r.spmm_kernel = "python";
  r.spmm_plan = "the LinearOperator's matmat (Python callback)";
  r.precision = "fp64";
}

}  // namespace tcsolve::pyext
