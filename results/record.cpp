#include "results/record.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <sstream>

#include "io/hdf5_file.hpp"

namespace tcsolve {

namespace {

using R = ResultRecord;

// A string attribute of the record; `optional`: absent when empty.
struct Text {
  const char* name;
  std::string R::*field;
  bool optional = false;
};
void texts(const R& r, ResultVisitor& v, std::initializer_list<Text> list) {
  for (const Text& t : list)
    if (!t.optional || !(r.*t.field).empty()) v.attr(t.name, r.*t.field);
}

void visit_identity(const R& r, ResultVisitor& v) {
  texts(r, v, {{"task", &R::task}, {"job", &R::job, true}, {"matrix", &R::matrix}, {"mass", &R::mass, true},
               {"rhs", &R::rhs, true}});
  if (!r.start.empty()) v.attr(r.is_eigs() ? "start" : "x0", r.start);
  v.attr("tcsolve_version", std::string(TCSOLVE_VERSION));
  texts(r, v, {{"command", &R::command}, {"job_options", &R::job_options}, {"input_stamps", &R::input_stamps}});
}

// The run's attributes: how it ran, on what, with which inputs (one process: the full set).
void visit_run(const R& r, ResultVisitor& v) {
  const bool one = r.ranks == 0;
  texts(r, v, {{"status", &R::status}, {"reason", &R::reason}, {"method", &R::method}});
  v.attr("iterations", r.iterations);
  v.attr("operator_applies", r.operator_applies);
  v.attr("tolerance", r.tolerance);
  if (one) v.attr("max_iterations", r.max_iterations);
  if (one) texts(r, v, {{"precision", &R::precision}, {"preconditioner", &R::preconditioner}});
  texts(r, v, {{"backend", &R::backend}, {"device", &R::device}, {"spmm_kernel", &R::spmm_kernel}});
  if (one)
    texts(r, v, {{"spmm_plan", &R::spmm_plan}, {"reorder", &R::reorder}, {"reorder_plan", &R::reorder_plan, true},
                 {"matrix_checksum", &R::matrix_checksum}, {"mass_checksum", &R::mass_checksum, true}});
  v.attr("rows", r.rows);
  if (r.peak_device_bytes > 0) v.attr("peak_device_bytes", r.peak_device_bytes);
  if (r.process_device_bytes > 0) v.attr("process_device_bytes", r.process_device_bytes);
  v.attr("nnz", r.nnz);
  v.attr("seed", static_cast<std::int64_t>(r.seed));
  if (!r.checkpoint.empty()) {
    v.attr("checkpoint", r.checkpoint);
    v.attr("checkpoints", r.checkpoints);
    v.attr("checkpoint_seconds", r.checkpoint_seconds);
  }
  texts(r, v, {{"resumed_from", &R::resumed_from, true}});
  if (!one) {
    v.attr("ranks", r.ranks);
    v.attr("distributed", r.distributed);
  }
}

// The eigenpairs with their verification (datasets and attributes).
void visit_eigenpairs(const R& r, ResultVisitor& v, bool vectors) {
  const bool one = r.ranks == 0;
  v.attr("k", r.k);
  v.attr("which", r.which);
  if (one) v.attr("a_norm", r.a_norm), v.attr("b_norm", r.b_norm);
  v.dataset("eigenvalues", r.eigenvalues);
  // the n × k block column-major == k rows of n: row j is eigenvector j
  if (vectors) v.dataset_2d("eigenvectors", r.vectors.data(), static_cast<std::int64_t>(r.eigenvalues.size()), r.rows);
  v.dataset("residual_norms", r.residual_norms);
  if (one) v.dataset("residual_bounds", r.residual_bounds);
  v.dataset("error_bounds", r.error_bounds);
  texts(r, v, {{"convergence_test", &R::convergence_test}, {"certified", &R::certified}, {"certificate", &R::certificate}});
  if (one) v.attr("transform", r.transform);
  if (one && r.has_sigma) v.attr("sigma", r.sigma);
  texts(r, v, {{"method_reason", &R::method_reason}, {"precision_used", &R::precision_used},
               {"verification", &R::verification}});
  if (!one) return;
  if (r.predicted_seconds > 0) v.attr("predicted_seconds", r.predicted_seconds);
  texts(r, v, {{"factorization", &R::factorization, true}});
  v.attr("time_plan", r.time_plan);
  v.attr("time_verify", r.time_verify);
}

// The answer: eigenpairs, or solutions (datasets and attributes).
void visit_answer(const R& r, ResultVisitor& v) {
  const std::int64_t cols = r.is_eigs() ? static_cast<std::int64_t>(r.eigenvalues.size()) : r.right_hand_sides;
  const bool vectors = cols > 0 && static_cast<std::int64_t>(r.vectors.size()) == r.rows * cols;
  if (r.is_eigs()) return visit_eigenpairs(r, v, vectors);
  v.attr("right_hand_sides", r.right_hand_sides);
  if (r.ranks == 0) v.attr("precision_used", r.precision_used);
  // (a least-squares solution has A's columns for rows: its length is the block's over s)
  const std::int64_t sol_rows = cols > 0 ? static_cast<std::int64_t>(r.vectors.size()) / cols : 0;
  if (cols > 0 && sol_rows > 0 && sol_rows * cols == static_cast<std::int64_t>(r.vectors.size()))
    v.dataset_2d("solution", r.vectors.data(), cols, sol_rows);
  v.dataset("residual_norms", r.residual_norms);
  v.dataset("column_iterations", r.column_iterations);
  if (!r.backward_errors.empty()) v.dataset("backward_errors", r.backward_errors);
  if (!r.optimality.empty()) v.dataset("optimality", r.optimality);
  if (!r.matrix_kind.empty()) v.attr("matrix_kind", r.matrix_kind);
  if (!r.method_reason.empty()) v.attr("method_reason", r.method_reason);
}

// The history group: one record per iteration; residual norms [m][c], c the widest record,
// shorter ones padded with NaN.
void visit_history(const std::vector<IterationRecord>& h, ResultVisitor& v) {
  std::size_t c = 0;
  for (const auto& rec : h) c = std::max(c, rec.residual_norms.size());
  std::vector<std::int64_t> it, conv, act;
  std::vector<double> ap, de, res(h.size() * c, NAN);
  for (std::size_t i = 0; i < h.size(); ++i) {
    it.push_back(h[i].iteration);
    conv.push_back(h[i].converged);
    act.push_back(h[i].active);
    ap.push_back(h[i].apply_seconds);
    de.push_back(h[i].dense_seconds);
    std::copy(h[i].residual_norms.begin(), h[i].residual_norms.end(), res.begin() + i * c);
  }
  v.dataset("history/iteration", it);
  v.dataset("history/converged", conv);
  v.dataset("history/active", act);
  v.dataset("history/apply_seconds", ap);
  v.dataset("history/dense_seconds", de);
  v.dataset_2d("history/residual_norms", res.data(), static_cast<std::int64_t>(h.size()),
               static_cast<std::int64_t>(c));
}

// Column-major rows × k → row-major [rows][k], column j scaled by scale[j] when given.
std::vector<double> row_major(const std::vector<double>& cm, std::int64_t rows, std::int64_t k,
                              const std::vector<double>* scale = nullptr) {
  std::vector<double> out(static_cast<std::size_t>(rows * k));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < k; ++j) out[i * k + j] = cm[j * rows + i] * (scale ? (*scale)[j] : 1.0);
  return out;
}

// svds' history (section 6): restart number, triplets passing their estimate, the estimates
// [h][k] (absent for the dense path).
void visit_svds_history(const std::vector<IterationRecord>& h, std::int64_t k, ResultVisitor& v) {
  if (h.empty()) return;
  std::vector<std::int64_t> it, conv;
  std::vector<double> est(h.size() * static_cast<std::size_t>(k), NAN);
  for (std::size_t i = 0; i < h.size(); ++i) {
    it.push_back(h[i].iteration);
    conv.push_back(h[i].converged);
    std::copy_n(h[i].residual_norms.begin(), std::min<std::size_t>(h[i].residual_norms.size(), k), est.begin() + i * k);
  }
  v.dataset("history/iteration", it);
  v.dataset("history/converged", conv);
  v.dataset_2d("history/residual_estimates", est.data(), static_cast<std::int64_t>(h.size()), k);
}

// The singular triplets (section 6): U, s, Vt, both residuals, the PCA outputs, the history and
// the run's attributes.
void visit_svds(const R& r, ResultVisitor& v) {
  const std::int64_t m = r.rows, n = r.cols, k = static_cast<std::int64_t>(r.singular_values.size());
  if (static_cast<std::int64_t>(r.left_vectors.size()) == m * k) v.dataset_2d("U", row_major(r.left_vectors, m, k).data(), m, k);
  v.dataset("s", r.singular_values);
  // column j of V (n contiguous values) = row j of Vᵀ
  if (static_cast<std::int64_t>(r.vectors.size()) == n * k) v.dataset_2d("Vt", r.vectors.data(), k, n);
  v.dataset("residual_av", r.residual_av);
  v.dataset("residual_atu", r.residual_atu);
  if (!r.scales.empty()) v.dataset("scales", r.scales);
  if (r.centered) {
    v.dataset("means", r.means);
    if (static_cast<std::int64_t>(r.left_vectors.size()) == m * k)
      v.dataset_2d("scores", row_major(r.left_vectors, m, k, &r.singular_values).data(), m, k);
    v.dataset("explained_variance", r.explained_variance);
    v.dataset("explained_variance_ratio", r.explained_variance_ratio);
  }
  visit_svds_history(r.history, k, v);
  texts(r, v, {{"status", &R::status}, {"reason", &R::reason}, {"method", &R::method},
               {"matrix_checksum", &R::matrix_checksum, true}});
  texts(r, v, {{"method_reason", &R::method_reason}, {"verification", &R::verification}, {"certified", &R::certified}, {"certificate", &R::certificate}});
  v.attr("centered", std::string(r.centered ? "yes" : "no"));
  v.attr("scaled", std::string(r.scales.empty() ? "no" : "yes"));
  texts(r, v, {{"backend", &R::backend}, {"device", &R::device}});
  v.attr("k", r.k);
  v.attr("rows", r.rows);
  v.attr("cols", r.cols);
  v.attr("nnz", r.nnz);
  v.attr("iterations", r.iterations);
  v.attr("max_iterations", r.max_iterations);
  v.attr("operator_applies", r.operator_applies);
  v.attr("seed", static_cast<std::int64_t>(r.seed));
  v.attr("tolerance", r.tolerance);
  v.attr("a_norm", r.a_norm);
  if (r.centered) v.attr("total_sq", r.total_sq);
  if (!r.checkpoint.empty()) {
    v.attr("checkpoint", r.checkpoint);
    v.attr("checkpoints", r.checkpoints);
    v.attr("checkpoint_seconds", r.checkpoint_seconds);
  }
  texts(r, v, {{"resumed_from", &R::resumed_from, true}});
  v.attr("time_verify", r.time_verify);
}

// Onto an HDF5 group; "history/NAME" goes into the group history (created on first use).
class Hdf5Visitor : public ResultVisitor {
 public:
  explicit Hdf5Visitor(Hdf5Group& g) : g_(g) {}
  void attr(const std::string& name, const std::string& value) override { g_.set_attr(name, value); }
  void attr(const std::string& name, double value) override { g_.set_attr(name, value); }
  void attr(const std::string& name, std::int64_t value) override { g_.set_attr(name, value); }
  void dataset(const std::string& name, const std::vector<double>& x) override { at(name).write(leaf(name), x); }
  void dataset(const std::string& name, const std::vector<std::int64_t>& x) override {
    at(name).write(leaf(name), x);
  }
  void dataset_2d(const std::string& name, const double* data, std::int64_t rows, std::int64_t cols) override {
    at(name).write_2d(leaf(name), data, rows, cols);
  }

 private:
  static std::string leaf(const std::string& name) { return name.substr(name.rfind('/') + 1); }
  Hdf5Group& at(const std::string& name) {
    const auto cut = name.rfind('/');
    if (cut == std::string::npos) return g_;
    if (sub_name_ != name.substr(0, cut)) {
      sub_name_ = name.substr(0, cut);
      sub_ = g_.require_group(sub_name_);
    }
    return sub_;
  }
  Hdf5Group& g_;
  Hdf5Group sub_;         // the group of the last nested name
  std::string sub_name_;  // its name ("" : none yet)
};

}  // namespace

void visit_result(const ResultRecord& r, ResultVisitor& v, const std::function<double()>& time_write) {
  visit_identity(r, v);
  if (r.is_failure()) {
    v.attr("status", r.status);
    v.attr("error", r.error);
    return;
  }
  const bool one = r.ranks == 0;
  if (r.is_svds()) {
    visit_svds(r, v);
  } else {
    visit_run(r, v);
    visit_answer(r, v);
    if (one) visit_history(r.history, v);
  }
  v.attr("time_read", r.time_read);
  if (one) v.attr("time_preprocess", r.time_preprocess);
  v.attr("time_setup", r.time_setup);
  v.attr("time_solve", r.time_solve);
  if (one && time_write) v.attr("time_write", time_write());  // up to here: datasets and attributes
}

void write_result(const ResultRecord& r, Hdf5Group& g, const std::function<double()>& time_write) {
  Hdf5Visitor v(g);
  visit_result(r, v, time_write);
}

std::unique_ptr<ResultVisitor> hdf5_visitor(Hdf5Group& g) { return std::make_unique<Hdf5Visitor>(g); }

namespace {
std::string json_array(const std::vector<double>& v, const char* sep = ", ") {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + json_number(v[i]);
  return out + "]";
}

// svds' object: compact (no spaces), its keys as `tcsolve svds --json` has always written them.
std::string svds_json(const ResultRecord& r, const std::string& out) {
  auto arr = [](const std::vector<double>& v) { return json_array(v, ","); };
  std::string s = "{\"task\":\"svds\",\"status\":" + json_string(r.status) + ",\"message\":" + json_string(r.reason) +
                  ",\"matrix\":" + json_string(r.matrix) + ",\"rows\":" + std::to_string(r.rows) +
                  ",\"cols\":" + std::to_string(r.cols) + ",\"nnz\":" + std::to_string(r.nnz) +
                  ",\"k\":" + std::to_string(r.k) + ",\"centered\":" + (r.centered ? "true" : "false") +
                  ",\"scaled\":" + (r.scales.empty() ? "false" : "true") +
                  ",\"method\":" + json_string(r.method) + ",\"method_reason\":" + json_string(r.method_reason) +
                  ",\"backend\":" + json_string(r.backend) +
                  ",\"kernel\":" + json_string(r.spmm_kernel) + ",\"kernel_reason\":" + json_string(r.spmm_plan) +
                  ",\"tolerance\":" + json_number(r.tolerance) + ",\"a_norm\":" + json_number(r.a_norm) +
                  ",\"iterations\":" + std::to_string(r.iterations) +
                  ",\"operator_applies\":" + std::to_string(r.operator_applies) +
                  ",\"singular_values\":" + arr(r.singular_values) + ",\"residual_av\":" + arr(r.residual_av) +
                  ",\"residual_atu\":" + arr(r.residual_atu) + ",\"verification\":" + json_string(r.verification) +
                  ",\"certified\":" + json_string(r.certified) +
                  ",\"certificate\":" + json_string(r.certificate);
  if (r.centered)
    s += ",\"explained_variance\":" + arr(r.explained_variance) +
         ",\"explained_variance_ratio\":" + arr(r.explained_variance_ratio);
  s += ",\"checkpoints\":{\"count\":" + std::to_string(r.checkpoints) +
       ",\"failed\":" + std::to_string(r.checkpoint_failures) + ",\"bytes\":" + json_number(r.checkpoint_bytes) +
       ",\"seconds\":" + json_number(r.checkpoint_seconds) + "}";
  double apply_s = 0, dense_s = 0;  // the iteration's split (history)
  for (const auto& h : r.history) apply_s += h.apply_seconds, dense_s += h.dense_seconds;
  s += ",\"seconds\":{\"read\":" + json_number(r.time_read) + ",\"setup\":" + json_number(r.time_setup) +
       ",\"solve\":" + json_number(r.time_solve) + ",\"solve_apply\":" + json_number(apply_s) +
       ",\"solve_dense\":" + json_number(dense_s) + ",\"verify\":" + json_number(r.time_verify) +
       ",\"write\":" + json_number(r.time_write) + ",\"start\":" + json_number(r.time_start) +
       ",\"process\":" + json_number(r.time_process) + "}";
  return s + ",\"out\":" + (out.empty() ? std::string("null") : json_string(out)) + "}";
}
}  // namespace

std::string result_json(const ResultRecord& r, const std::string& out) {
  if (r.is_svds()) return svds_json(r, out);
  std::ostringstream os;
  os << "{\"task\": " << json_string(r.task) << ", \"matrix\": " << json_string(r.matrix)
     << ", \"n\": " << r.rows << ", \"status\": " << json_string(r.status)
     << ", \"message\": " << json_string(r.reason) << ", \"method\": " << json_string(r.method)
     << ", \"iterations\": " << r.iterations << ", \"backend\": " << json_string(r.backend)
     << ", \"device\": " << json_string(r.device) << ", \"device_reason\": " << json_string(r.device_reason)
     << ", \"kernel\": " << json_string(r.spmm_kernel) << ", \"kernel_reason\": " << json_string(r.spmm_plan)
     << ", \"peak_device_bytes\": " << json_number(r.peak_device_bytes)
     << ", \"process_device_bytes\": " << json_number(r.process_device_bytes)
     << ", \"reorder\": " << json_string(r.reorder) << ", \"reorder_plan\": " << json_string(r.reorder_plan);
  if (!r.distributed.empty()) os << ", \"distributed\": " << json_string(r.distributed);
  if (r.is_eigs())
    os << ", \"eigenvalues\": " << json_array(r.eigenvalues) << ", \"error_bounds\": " << json_array(r.error_bounds)
       << ", \"certified\": " << json_string(r.certified) << ", \"certificate\": " << json_string(r.certificate)
       << ", \"transform\": " << json_string(r.transform) << ", \"sigma\": " << json_number(r.sigma)
       << ", \"convergence_test\": " << json_string(r.convergence_test)
       << ", \"method_reason\": " << json_string(r.method_reason)
       << ", \"predicted_seconds\": " << json_number(r.predicted_seconds)
       << ", \"verification\": " << json_string(r.verification)
       << ", \"factorization\": " << json_string(r.factorization);
  else
    os << ", \"matrix_kind\": " << json_string(r.matrix_kind) << ", \"method_reason\": " << json_string(r.method_reason)
       << ", \"backward_errors\": " << json_array(r.backward_errors) << ", \"optimality\": " << json_array(r.optimality);
  os << ", \"precision\": " << json_string(r.precision_used) << ", \"solve_steps\": " << json_string(r.solve_steps)
     << ", \"residual_norms\": " << json_array(r.residual_norms) << ", \"operator_applies\": " << r.operator_applies
     << ", \"checkpoints\": {\"count\": " << r.checkpoints << ", \"failed\": " << r.checkpoint_failures
     << ", \"bytes\": " << json_number(r.checkpoint_bytes) << ", \"seconds\": " << json_number(r.checkpoint_seconds)
     << "}, \"seconds\": {\"read\": " << json_number(r.time_read)
     << ", \"preprocess\": " << json_number(r.time_preprocess) << ", \"plan\": " << json_number(r.time_plan)
     << ", \"setup\": " << json_number(r.time_setup) << ", \"operator\": " << json_number(r.time_operator)
     << ", \"solve\": " << json_number(r.time_solve) << ", \"verify\": " << json_number(r.time_verify)
     << ", \"write\": " << json_number(r.time_write) << ", \"total\": " << json_number(r.time_total)
     << ", \"start\": " << json_number(r.time_start) << ", \"init\": " << json_number(r.time_init)
     << ", \"process\": " << json_number(r.time_process) << "}"
     << ", \"out\": " << (out.empty() ? "null" : json_string(out)) << "}";
  return os.str();
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

}  // namespace tcsolve
