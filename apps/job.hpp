// One eigs or solve job: its options (shared by the command line and the batch job file), the
// checks of its inputs, the run, and its HDF5 result file (docs/hdf5-schema.md, sections 2-4).
// A MatrixCache lets a batch read and prepare each matrix once.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "apps/job/record.hpp"
#include "core/interrupt.hpp"
#include "distributed/comm.hpp"
#include "io/hdf5_file.hpp"
#include "core/csr.hpp"
#include "core/types.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigs/plan.hpp"
#include "solvers/result.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve::app {

struct JobSpec {
  std::string name;   // batch job name ("" on the command line)
  std::string task;   // "eigs" | "solve"
  std::string matrix, mass, rhs, out, plot;
  // Warm start: eigs --start FILE.h5[:DATASET] (default /eigenvectors), solve --x0 FILE.h5[:DATASET]
  // (default /solution): columns [s][n] of an earlier result or any dataset of that shape.
  std::string start;
  // Checkpoints: the solver's block written atomically to `checkpoint` every checkpoint_every
  // seconds; `resume_from` continues from such a file (same matrix, checked by checksum). Neither
  // is part of job_options: a resumed job is the same job.
  std::string checkpoint, resume_from;
  double checkpoint_every = 60.0;
  std::int64_t k = 6;
  std::string which = "smallest";  // smallest | largest | nearest (needs sigma)
  std::string method = "auto";  // eigs: eigs_method_names() (solvers/eigs/eigs.hpp); solve: cg
  std::string sigma;            // shift for shift-invert ("" = none); parsed by validate_job
  std::string conv = "rel";     // eigs convergence test: rel | norm | abs
  bool no_factor = false;       // eigs: never factor (no shift-invert, no certified count)
  bool no_recheck = false;      // eigs: skip the multiplicity re-check (status unverified)
  bool certify = false;         // eigs: always certify the set by Sylvester's inertia
  double tol = 1e-8;
  std::int64_t maxiter = 0;     // 0: the solver's default
  std::int64_t block_size = 0;  // Lanczos block size (0: automatic)
  std::string precision = "auto";
  std::string device = "auto";
  std::string device_reason;    // set by the command when auto chose (not a job option)
  bool cpu_fallback = false;    // run on the CPU when the GPU lacks memory
  int precond_degree = 0;         // solve --precond chebyshev: 0 = from the spectral bounds
  std::string precond = "auto";  // eigs: auto|none|jacobi|factor; solve: auto|none|jacobi|chebyshev
  std::string reorder = "none";  // none | symmetric: iterate in the basis of B = P·A·Pᵀ
  std::string partition = "auto";  // under mpirun: auto | contiguous | metis (distributed/partition.hpp)
  std::uint64_t seed = 1;
};

// --rhs: "random:S" (random > 0: S columns, 1 <= S <= kMaxRandomRhs) or "FILE.h5:DATASET".
// UsageError naming the value otherwise. The bound is memory: block CG keeps 8 blocks of n × S
// and S × S Gram matrices, 256 KiB a row and 128 MiB a Gram matrix at S = 4096.
constexpr std::int64_t kMaxRandomRhs = 4096;
struct RhsSpec {
  std::int64_t random = 0;
  std::string file, dataset;
};
RhsSpec parse_rhs(const std::string& rhs);

// The options of a task ("eigs" or "solve") bound to `spec`: used for the command line and, key by
// key, for the job file (the keys are the long option names).
void add_job_options(po::options_description& opts, JobSpec& spec, const std::string& task);
// Checks value domains (which, method, precision, device, k, tol...) without touching files.
// Throws UsageError naming the option.
void validate_job(const JobSpec& spec);
// Checks the output paths against the file system before anything is solved: --out and --plot
// name files in existing, writable folders, are not folders, and are none of the job's inputs
// (matrix, mass, right-hand sides: the result would replace its own input). UsageError naming
// the option.
void check_job_outputs(const JobSpec& spec);

// A matrix read and checked once, with what the jobs reuse.
struct PreparedMatrix {
  std::string spec;
  Csr<double> a;
  double read_seconds = 0, check_seconds = 0;
  // "csrhash1:<hex>" of the CSR arrays (core/csr.hpp), computed on first use (a pass over the
  // arrays: only results written to a file need it).
  const std::string& checksum() const {
    if (checksum_.empty()) checksum_ = csr_checksum(a);
    return checksum_;
  }
  // Whether a checksum stored by this or an earlier version ("fnv1a64:") is this matrix's.
  bool has_checksum(const std::string& stored) const {
    if (stored.rfind("fnv1a64:", 0) == 0) return csr_checksum_fnv1a64(a) == stored;
    return checksum() == stored;
  }
  double inf_norm = 0;    // ‖A‖∞ = max_i Σ_j |a_ij| (≥ ‖A‖₂ for symmetric A)
  std::vector<double> diagonal;

 private:
  mutable std::string checksum_;
};

// What a batch shares between jobs: matrices by spec (read and checked once; dropped after their
// last use), the dense block operations of each backend (one stream), and the sparse operators
// (built/uploaded once per matrix, backend and precision).
class MatrixCache {
 public:
  MatrixCache();
  ~MatrixCache();
  // Reads and checks (square, symmetric values, finite) on first use. `fresh` is set when this
  // call did the read.
  std::shared_ptr<const PreparedMatrix> get(const std::string& spec, bool* fresh = nullptr);
  DenseBlockOps& ops(Backend backend);
  // basis == permuted: the operator of B = P·A·Pᵀ for the symmetric Jaccard/RCM reordering
  // (spmm/sparse_operator.hpp; permutation() is nullptr when the reordering was not applied).
  SparseOperator& op(const std::shared_ptr<const PreparedMatrix>& m, Backend backend,
                     Precision precision, int expected_cols, bool* fresh = nullptr,
                     OperatorBasis basis = OperatorBasis::original);
  // The planner's measurements of a matrix (with its mass matrix), kept for the next jobs on it.
  PlanMemo& memo(const std::string& matrix, const std::string& mass);
  // Forgets the matrix and its operators.
  void drop(const std::string& spec);

 private:
  std::map<std::string, std::shared_ptr<const PreparedMatrix>> matrices_;
  std::map<int, std::unique_ptr<DenseBlockOps>> ops_;
  std::map<std::string, std::unique_ptr<SparseOperator>> operators_;
  std::map<std::string, std::unique_ptr<PlanMemo>> memos_;
};

// Per-iteration report for a progress line: iteration, columns converged of wanted, largest
// residual norm of the wanted columns, seconds since the solve began.
using ProgressFn = std::function<void(std::int64_t it, std::int64_t converged, std::int64_t wanted,
                                      double max_residual, double seconds)>;

struct JobOutcome {
  std::string status = "failed";  // converged | unverified | not_converged | breakdown | failed
  std::string message;            // error or solver reason
  std::int64_t iterations = 0;
  double max_residual = 0;        // largest true residual norm (relative for solve)
  double seconds = 0;             // whole job wall time
  // Phases (seconds): read the matrix (and right-hand sides), preprocess (checks), plan (eigs
  // planner), setup (operators, kernel trial, factorization), solve (the iteration), verify
  // (eigs: certificate or re-check), write; `seconds` is the whole job.
  // init: the time the job waited for the CUDA context and the dense ops' library handles, which
  // come up on a helper thread while the matrix is read (not in `seconds`); process: the command's
  // own clock since the process started (set by the command line).
  double read_s = 0, preprocess_s = 0, plan_s = 0, setup_s = 0, solve_s = 0, verify_s = 0,
         write_s = 0, init_s = 0, process_s = 0;
  // Of setup_s: building the operator (its kernel choice or trial, its device copy of A), which
  // precedes eigs' plan and is priced by none of its plans.
  double operator_s = 0;
  std::string backend, device, method, kernel;
  std::string device_reason;  // why auto ran where it did ("" when not decided by size)
  std::string kernel_reason;  // why the SpMM kernel (the model's choice, or the trial's times)
  std::string reorder;  // --reorder symmetric: what was done ("" when not asked)
  std::string batch_note;  // solve: right-hand sides run in batches to fit the GPU memory
  std::string precond_note;       // solve --precond chebyshev: degree and bounds
  std::string resume_note;        // --resume-from: where the run continued from
  std::string checkpoint_note;    // a checkpoint that could not be written (the solve went on)
  // Checkpoints committed to their file (a failed write is not counted: checkpoint_failures, and
  // checkpoint_note says why; the first failure ends the checkpoints), their bytes (each) and
  // seconds (all).
  std::int64_t checkpoints = 0, checkpoint_failures = 0;
  double checkpoint_bytes = 0, checkpoint_s = 0;
  std::int64_t n = 0;
  std::vector<double> values;          // eigenvalues (eigs)
  std::vector<double> residuals;       // per pair / per column
  std::vector<std::int64_t> column_iterations;  // solve
  // eigs: what verified the set, and how it was computed (solvers/eigs/eigs.hpp).
  std::string certified, certificate, transform, why, factor, conv, verification;
  std::string precision;  // eigs: EigsResult::precision (the ladder's rungs)
  std::string solve_steps;  // eigs: EigsResult::solve_steps (Chebyshev); solve: block CG's split
  // Under mpirun: ranks, GPUs, the partition, halo rows and bytes, time in communication.
  std::string distributed;
  std::string distributed_partition;  // how the rows were split (part of `distributed`)
  double sigma = 0, predicted_s = 0;
  std::int64_t operator_applies = 0;
  double peak_device_bytes = 0;  // GPU runs: peak of tcsolve's device allocations in the solve
  // GPU runs under TCSOLVE_DEVICE_MEMORY_LIMIT: the process's peak (context and libraries from
  // NVML, plus the above); 0 when not measured
  double process_device_bytes = 0;
  std::vector<double> error_bounds;
  bool wrote_output = false;
  // run_job(..., defer_write = true): the result file was built in memory and its bytes still
  // have to reach the disk: call finish_write (on any thread; it makes no HDF5 call) to write,
  // fsync and rename it into place; it throws OutputError as the write would have. Empty when
  // the file was written before run_job returned (or there is none).
  std::function<void()> finish_write;
  // 0 converged; 128 + signal when interrupted (130 SIGINT, 143 SIGTERM); 1 otherwise.
  int exit_code() const {
    if (status == "interrupted") return 128 + (interrupt_signal() > 0 ? interrupt_signal() : 2);
    return status == "converged" ? exit_ok : exit_failed;
  }
};

// What an eigs result tells the outcome: method, plan, verification, precision, phases (not the
// status, values and residuals, nor the setup seconds, which the callers account for).
void take_eigs_result(const EigsResult& er, JobOutcome& o);

// solve --precond auto (the default), for one process or the ranks of an MPI launch:
// "chebyshev" or "jacobi" as auto_precond_refusal (solvers/chebyshev_precond.hpp) decides for
// `facts`, or "jacobi" for `refusal` when the caller has its own reason; the choice and why go
// into o.precond_note.
std::string auto_precond_choice(const AutoPrecondFacts& facts, JobOutcome& o, const char* refusal = nullptr);

// The result record of a job's outcome (apps/job/record.hpp): the identity of `spec`, the
// outcome's values (the caller adds what only it has: vectors, history, checksums, sizes).
ResultRecord job_record(const JobSpec& spec, const JobOutcome& o, const std::string& command);

// A job run by every rank of an MPI launch (apps/distributed_job.cpp): each rank builds or reads
// its rows, eigs runs Chebyshev (the re-check and the true-residual check included) and solve
// block CG over distributed/'s operator and dense ops; rank 0 writes spec.out and returns the
// outcome to print (the others return it too, printing nothing). Options the distributed path
// does not have are refused with UsageError naming them.
// The options run_distributed_job refuses (UsageError naming them), checked before any rank
// communicates: every rank refuses alike and ends normally.
void check_distributed_job(const JobSpec& spec, int ranks);
JobOutcome run_distributed_job(const JobSpec& spec, Communicator& comm, const ProgressFn& progress,
                               const std::string& command);

// The files a job reads (matrix, mass, right-hand sides, start vectors; not --resume-from).
std::vector<std::string> job_input_files(const JobSpec& spec);

// Runs a job: reads (through the cache), checks, solves, writes spec.out (atomically) and the
// plot. Input and usage errors propagate as exceptions (the caller records them); solver
// non-convergence and breakdown are outcomes. `command` is stored in the output's attributes.
// defer_write: a result file built in memory (up to Hdf5File::kInMemoryBytes) is not put on
// disk here but handed back as JobOutcome::finish_write (batch overlaps it with the next job).
// gpu: the ordinal the job runs on (batch's worker per GPU; `cache` belongs to that GPU), or -1
// for this process's (selected_gpu(): under mpirun the rank's, waited for here).
JobOutcome run_job(const JobSpec& spec, MatrixCache& cache, const ProgressFn& progress,
                   const std::string& command, bool defer_write = false, int gpu = -1);

// Writes a result file holding only the failure (attributes status = "failed", error, task,
// matrix, job): what a batch leaves for a job that could not run.
void write_failure_file(const JobSpec& spec, const std::string& error, const std::string& command);

// True when `path` is a complete tcsolve result (HDF5 with a status attribute other than
// "failed" and "interrupted").
bool result_is_complete(const std::string& path);

// The options that decide a job's answer, as one canonical string (stored as the result's
// "job_options" attribute), and the identity of its input files ("input_stamps": path, size and
// modification time of the matrix, mass and right-hand-side files; generators have none).
std::string job_options_string(const JobSpec& spec);
// The automatic checkpoint of a batch job writing OUT.h5: OUT.checkpoint.h5.
std::string checkpoint_path_for(const std::string& out);
// Whether FILE is a checkpoint of this job (kind, task, job_options); else `why` says what differs.
bool checkpoint_fits(const JobSpec& s, const std::string& file, std::string& why);
// Whether FILE is provably this job's checkpoint, current or stale: a tcsolve checkpoint whose
// attributes `job` and `out` name this job and its output (one written before checkpoints carried
// them: its job_options are this job's). A batch removes or replaces no other file at a
// checkpoint's path.
bool checkpoint_is_own(const JobSpec& s, const std::string& file);
std::string input_stamps(const JobSpec& spec);

// batch --resume: whether the stored result of `spec` can stand. It can when it is complete, was
// written for the same options, and for the same inputs: the same file stamps, or, for a matrix
// or mass file whose stamp changed, the same content (its checksum, read through `cache`).
// `why` says what was found when it cannot.
bool stored_result_stands(const JobSpec& spec, MatrixCache& cache, std::string& why);


}  // namespace tcsolve::app
