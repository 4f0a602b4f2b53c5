// A job's specification, typed: every choice is an enum, parsed once at the edge. The command
// line (eigs, solve, svds) and the batch job file bind the same options (add_job_options, through
// boost::program_options: each choice's notifier parses its text as it is stored, and a bad value
// is a UsageError naming the option and the value); validate_job then checks the options against
// one another; job_options_string writes the spec back canonically (the result's job_options).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "core/types.hpp"
#include "distributed/partition.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/solve_method.hpp"

namespace tcsolve::app {

// eigs: eigenpairs of a symmetric matrix; solve: A X = B; svds: the k largest singular triplets
// of any matrix (rectangular too).
enum class Task { eigs, solve, svds };
enum class DeviceChoice { automatic, cpu, cuda };
// auto: A in fp64, and the precision ladder (eigs' filters, block CG's iterations) where safe.
enum class PrecisionChoice { automatic, fp64, fp32, fp16, bf16 };
// eigs (LOBPCG): automatic | none | jacobi | factor; solve (block CG): automatic | jacobi |
// chebyshev | none; solve (GMRES, MINRES): poly, the GMRES polynomial (solvers/krylov/gmres_polynomial.hpp).
enum class Precond { automatic, none, jacobi, factor, chebyshev, poly };
// symmetric: iterate in the basis of P·A·Pᵀ; automatic: symmetric where the CPU's eigs would gain
// (LocalSolve::auto_reorder), else none.
enum class Reordering { none, symmetric, automatic };

// The option values as the user writes them ("auto" for automatic).
const char* to_string(Task t);
const char* to_string(DeviceChoice d);
const char* to_string(PrecisionChoice p);
const char* to_string(Precond p);
const char* to_string(Reordering r);
// smallest | largest | nearest | largest_magnitude | smallest_magnitude | both_ends
const char* which_name(Which w);
// "task 'x': expected eigs, solve or svds" otherwise (UsageError).
Task parse_task(const std::string& s);

struct JobSpec {
  std::string name;  // batch job name ("" on the command line)
  Task task = Task::eigs;
  std::string matrix, mass, rhs, out, plot;
  // Warm start: eigs --start FILE.h5[:DATASET] (default /eigenvectors), solve --x0 FILE.h5[:DATASET]
  // (default /solution): columns [s][n] of an earlier result or any dataset of that shape.
  std::string start;
  // eigs --constraints FILE.mtx | FILE.h5[:DATASET] (default /eigenvectors): the returned vectors
  // are B-orthogonal to these n × p columns (solvers/eigs/eigs.hpp, EigsOptions::constraints).
  std::string constraints;
  // Checkpoints: the solver's block written atomically to `checkpoint` every checkpoint_every
  // seconds; `resume_from` continues from such a file (same matrix, checked by checksum). Neither
  // is part of job_options: a resumed job is the same job.
  std::string checkpoint, resume_from;
  double checkpoint_every = 60.0;
  std::int64_t k = 6;
  // smallest | largest | nearest (needs sigma) | largest_magnitude | smallest_magnitude | both_ends
  Which which = Which::smallest;
  EigsMethod method = EigsMethod::automatic;
  SolveMethod solve_method = SolveMethod::automatic;  // solve --method (solvers/solve_method.hpp)
  int restart = 30;                                   // solve: GMRES(m)
  std::string sigma;  // shift for shift-invert as given ("" = none; job_options keep the text)
  double sigma_value = 0;
  ConvTest conv = ConvTest::rel;  // eigs convergence test
  bool no_factor = false;         // eigs: never factor (no shift-invert, no certified count)
  bool no_recheck = false;        // eigs: skip the multiplicity re-check (status unverified)
  bool certify = false;           // eigs, svds: always certify the set by Sylvester's inertia
  bool no_certify = false;        // svds: never count (by default where it is cheap)
  double tol = 1e-8;
  std::int64_t maxiter = 0;     // 0: the solver's default (max_iterations())
  std::int64_t block_size = 0;  // Lanczos block size; svds --block (0: automatic)
  std::int64_t basis = 0;       // svds: Krylov basis columns (0: automatic)
  bool center = false;          // svds: subtract the column means (PCA)
  bool scale = false;           // svds: divide each column by its standard deviation
  PrecisionChoice precision = PrecisionChoice::automatic;
  DeviceChoice device = DeviceChoice::automatic;
  std::string device_reason;  // set by the command when auto chose (not a job option)
  bool cpu_fallback = false;  // run on the CPU when the GPU lacks memory
  int precond_degree = 0;     // solve --precond chebyshev: 0 = from the spectral bounds
  Precond precond = Precond::automatic;
  Reordering reorder = Reordering::automatic;
  PartitionMethod partition = PartitionMethod::automatic;  // under mpirun (distributed/partition.hpp)
  std::uint64_t seed = 1;

  bool eigs() const { return task == Task::eigs; }
  bool svds() const { return task == Task::svds; }
  // The iteration limit: maxiter, or the task's default (eigs 2000, solve 5000, svds 1000
  // restarts).
  std::int64_t max_iterations() const {
    return maxiter > 0 ? maxiter : eigs() ? 2000 : svds() ? 1000 : 5000;
  }
  // A's storage in the operator (auto: fp64).
  Precision storage() const;
  bool precision_auto() const { return precision == PrecisionChoice::automatic; }
};

// The options of a task bound to `spec` (its choices parsed by notifiers): used for the command
// line and, key by key, for the job file (the keys are the long option names).
void add_job_options(po::options_description& opts, JobSpec& spec, Task task);
// Checks the options against one another and the files' names (k, tol, sigma with which, the
// output names...) without touching files. UsageError naming the option.
void validate_job(const JobSpec& spec);
// Checks the output paths against the file system before anything is solved: --out and --plot
// name files in existing, writable folders, are not folders, and are none of the job's inputs
// (matrix, mass, right-hand sides: the result would replace its own input). UsageError naming
// the option.
void check_job_outputs(const JobSpec& spec);

// --rhs: "random:S" (random > 0: S columns, 1 <= S <= kMaxRandomRhs) or "FILE.h5:DATASET".
// UsageError naming the value otherwise. The bound is memory: block CG keeps 8 blocks of n × S
// and S × S Gram matrices, 256 KiB a row and 128 MiB a Gram matrix at S = 4096.
constexpr std::int64_t kMaxRandomRhs = 4096;
struct RhsSpec {
  std::int64_t random = 0;
  std::string file, dataset;
};
RhsSpec parse_rhs(const std::string& rhs);
// A start block (--start / --x0): "FILE.h5" (its `dataset`: a result's eigenvectors or
// solution) or "FILE.h5:DATASET".
std::pair<std::string, std::string> split_start(const std::string& spec, const char* dataset);
// The file of a dense block option: --start, --x0 or --constraints ("" for none).
std::string block_file(const std::string& spec);

// The files a job reads (matrix, mass, right-hand sides, start vectors, constraints; not
// --resume-from).
std::vector<std::string> job_input_files(const JobSpec& spec);
// The options that decide a job's answer, as one canonical string (stored as the result's
// "job_options" attribute), and the identity of its input files ("input_stamps": path, size and
// modification time of the matrix, mass and right-hand-side files; generators have none).
std::string job_options_string(const JobSpec& spec);
std::string input_stamps(const JobSpec& spec);
// The right-hand-side file of a solve ("" for random ones), and "path:size:mtime_ns" of a file
// (or "path:missing").
std::string rhs_file(const JobSpec& spec);
std::string file_stamp(const std::string& path);

}  // namespace tcsolve::app
