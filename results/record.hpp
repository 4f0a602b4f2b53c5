// One eigs, solve or svds result: the record the job pipeline fills (on one process or under mpirun)
// and the one writer of its forms — the HDF5 result file (docs/hdf5-schema.md, sections 2-4 and
// 6, through visit_result) and the command's --json object (result_json). A library of its own
// (tcsolve_record: io and the solvers' results, no Boost, no apps), so that the Python module can
// fill the same record (record_eigs, record_solve, record_svds) and write the same file, or visit
// it into a dict under the schema's names (python/src/results.cpp).
//
//   ResultRecord r;  r.task = "eigs"; ...                // the pipeline fills it
//   Hdf5File f = Hdf5File::create(tmp);  write_result(r, f, clock);  f.close();
//   std::cout << result_json(r, "out.h5") << "\n";
//
// Which objects a file holds follows the record: a failure record (status "failed") holds the
// identity, status and error only; a distributed record (ranks > 0) holds the attributes its run
// has (no history, preconditioner, norms, plan times: the schema's distributed subset); fields
// documented "absent when empty/0" are left out when so.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "results/json.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

struct EigsResult;
struct SvdResult;

struct ResultRecord {
  // ---- identity: every file, failure records too (attributes)
  std::string task;               // "eigs" | "solve" | "svds"
  std::string job;                // batch job name (absent when empty)
  std::string matrix, mass, rhs;  // the arguments as given (mass, rhs: absent when empty)
  std::string start;              // eigs --start ("start") / solve --x0 ("x0"); absent when empty
  std::string command, job_options, input_stamps;
  // ---- outcome
  // converged | unverified | not_converged | breakdown | interrupted | failed (a failure record)
  std::string status = "failed";
  std::string error;   // a failure record's message
  std::string reason;  // the solver's reason and the run's notes (--json "message")
  std::string method;
  std::int64_t iterations = 0, operator_applies = 0;
  double tolerance = 0;
  std::int64_t max_iterations = 0;
  std::string precision;       // --precision as asked
  std::string preconditioner;  // as asked, or the note of what ran (its choice and why)
  std::string backend, device, device_reason;  // device_reason: --json only ("" unless auto chose)
  std::string spmm_kernel, spmm_plan;  // the SpMM kernel and why (--json "kernel", "kernel_reason")
  std::string reorder = "none";        // --reorder as asked
  std::string reorder_plan;            // what the reordering did (absent when empty)
  std::string matrix_checksum, mass_checksum;  // "csrhash1:..." (absent when empty)
  std::int64_t rows = 0, nnz = 0;
  double peak_device_bytes = 0, process_device_bytes = 0;  // absent when 0
  std::uint64_t seed = 1;
  // --checkpoint FILE (the attributes present when given): checkpoints committed to it, failed
  // writes (--json only), the bytes of each and the seconds of all
  std::string checkpoint;
  std::int64_t checkpoints = 0, checkpoint_failures = 0;
  double checkpoint_bytes = 0, checkpoint_seconds = 0;
  std::string checkpoint_note;  // "checkpoints stopped: ERROR" after a failed write (in reason too)
  std::string resumed_from;  // --resume-from (absent when empty)
  // under mpirun (ranks > 0): the rank count and what the distributed run did
  std::int64_t ranks = 0;
  std::string distributed;
  // ---- eigs
  std::int64_t k = 0;
  std::string which;
  double a_norm = 0, b_norm = 1;
  std::vector<double> eigenvalues;
  std::vector<double> residual_bounds, error_bounds;
  std::string convergence_test, certified, certificate, verification, method_reason, transform;
  bool has_sigma = false;  // a shift was asked or used: attribute sigma
  double sigma = 0;
  std::string factorization;    // absent when empty
  double predicted_seconds = 0;  // absent when 0
  // ---- solve
  std::int64_t right_hand_sides = 0;
  std::vector<std::int64_t> column_iterations;
  // ---- svds (section 6): A ≈ U·diag(s)·Vᵀ, A rows × cols; `vectors` holds V, `a_norm` s₁
  std::int64_t cols = 0;
  bool centered = false;
  std::vector<double> singular_values;              // s, descending (k)
  std::vector<double> left_vectors;                 // U, rows × k column-major (dataset U [m][k])
  std::vector<double> residual_av, residual_atu;    // true ‖A·v_j − s_j·u_j‖₂, ‖Aᵀ·u_j − s_j·v_j‖₂
  // centered (--center): the column means μ (cols), ‖A − 1·μᵀ‖_F², s_j²/(rows − 1) and its ratio
  std::vector<double> means, explained_variance, explained_variance_ratio;
  double total_sq = 0;
  std::vector<double> scales;  // --scale: the column standard deviations divided out (cols)
  // ---- all tasks
  // eigs: the eigenvectors, solve: the solutions, svds: V (cols × k), n × cols column-major in the
  // input's row order (datasets eigenvectors [cols][n] / solution [s][n] / Vt [k][n]; absent
  // unless rows · cols values)
  std::vector<double> vectors;
  std::vector<double> residual_norms;
  // solve: ‖b−Ax‖/(‖A‖_F‖x‖+‖b‖) per column, and least squares' ‖Aᵀr‖/(‖A‖_F‖r‖) (absent when empty)
  std::vector<double> backward_errors, optimality;
  std::string matrix_kind;  // solve: core/matrix_kind.hpp's words (absent when empty)
  std::string precision_used;  // the working precision ("fp64", the ladder's rungs, ...)
  std::string solve_steps;     // --json only: the solve's seconds by step
  std::vector<IterationRecord> history;
  // Seconds by phase (docs/hdf5-schema.md; init, process and total: --json only).
  double time_read = 0, time_preprocess = 0, time_plan = 0, time_setup = 0, time_operator = 0,
         time_solve = 0, time_verify = 0, time_write = 0, time_total = 0, time_init = 0,
         time_process = 0,
         time_start = 0;  // the command's clock at the job's start (parsing, counting the GPUs): JSON only

  bool is_failure() const { return status == "failed"; }
  bool is_eigs() const { return task == "eigs"; }
  bool is_svds() const { return task == "svds"; }
};

// Receives a record's objects in the file's order under the schema's names (attributes of "/",
// datasets; "history/NAME" for the history group's datasets).
class ResultVisitor {
 public:
  virtual ~ResultVisitor() = default;
  virtual void attr(const std::string& name, const std::string& value) = 0;
  virtual void attr(const std::string& name, double value) = 0;
  virtual void attr(const std::string& name, std::int64_t value) = 0;
  virtual void dataset(const std::string& name, const std::vector<double>& v) = 0;
  virtual void dataset(const std::string& name, const std::vector<std::int64_t>& v) = 0;
  // rows × cols values, row-major (an n × rows column-major block is rows rows of n)
  virtual void dataset_2d(const std::string& name, const double* data, std::int64_t rows, std::int64_t cols) = 0;
};

// Visits every object the record's file holds. time_write: the seconds the write has taken up
// to its last attribute (a one-process result's time_write; not called otherwise).
void visit_result(const ResultRecord& r, ResultVisitor& v, const std::function<double()>& time_write = {});

// What a solver's result tells the record, for both doors (the job pipeline, apps/job/pipeline.cpp,
// and the Python module, python/src/results.cpp; results/record_fill.cpp). The options as asked,
// the inputs and the operator fields are the caller's. The vectors and the history are moved.
//   eigs: status, reason, method, iterations, applies, values, residuals and bounds, norms, the
//         test, the verification, the plan (method_reason, transform, sigma, prediction,
//         precision, factorization), time_plan/solve/verify
//   solve: status, reason, method ("block_cg" when empty), backward errors, optimality,
//          iterations, applies, residuals, column iterations, precision_used, the solutions
//   svds: status, reason, method, iterations, applies, rows, cols, k, tolerance, s₁, the
//         triplets and residuals, the PCA outputs, time_setup (added), time_solve/verify
void record_eigs(EigsResult& er, ResultRecord& r);
void record_solve(SolveResult& sr, ResultRecord& r);
void record_svds(SvdResult& sr, ResultRecord& r);

class Hdf5Group;
// Writes the record into `g` (a new file's root): visit_result onto HDF5.
void write_result(const ResultRecord& r, Hdf5Group& g, const std::function<double()>& time_write = {});
// write_result's visitor onto `g` (attributes of g, datasets, "history/NAME" in the group
// history), for a visit whose values come from elsewhere (the Python Result's save()).
std::unique_ptr<ResultVisitor> hdf5_visitor(Hdf5Group& g);

// The command's --json object, one line without the newline; `out` is the result file ("" :
// null). svds keeps its own compact keys (singular_values, residual_av, ...; docs/hdf5-schema.md
// section 6 names the same quantities).
std::string result_json(const ResultRecord& r, const std::string& out);

}  // namespace tcsolve
