#include "apps/job.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <utility>

#include "apps/matrix_summary.hpp"
#include "apps/svg_plot.hpp"
#include "core/device.hpp"
#include "core/finite.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "io/atomic_file.hpp"
#include "io/generators.hpp"
#include "io/hdf5_file.hpp"
#include "io/matrix_io.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/spectral_probe.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/eigs/plan.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/random.hpp"

namespace tcsolve::app {

namespace {

// Rough device bytes a job needs: the matrix in CSR at the storage precision, twice (CSR and a
// possible BCSR copy), plus the solver's tall blocks of n doubles: block CG 8 blocks of s (b, x, its 5-block workspace, the dense scratch) and a diagonal; eigs the
// workspace of its method (workspace_vectors, solvers/eigs/plan.hpp; `auto`: Chebyshev for
// standard problems, LOBPCG with a mass matrix).
double matrix_device_bytes(const JobSpec& s, const Csr<double>& a) {
  const double n = static_cast<double>(a.nrows), nnz = static_cast<double>(a.nnz());
  const double vb = s.precision == "fp64" || s.precision == "auto" ? 8 : s.precision == "fp32" ? 4 : 2;
  return 2.0 * (nnz * (vb + 4.0) + 8.0 * (n + 1));
}

double device_bytes_needed(const JobSpec& s, const Csr<double>& a, std::int64_t cols) {
  const double n = static_cast<double>(a.nrows);
  const double matrix = matrix_device_bytes(s, a);
  const double blocks =
      s.task == "solve" ? 8.0 * static_cast<double>(cols) + 1.0
                        : static_cast<double>(workspace_vectors(parse_eigs_method(s.method), a.nrows,
                                                                s.k, s.block_size, !s.mass.empty()));
  return matrix + 8.0 * n * blocks;
}

// Columns of length n stored in FILE.h5's DATASET as [s][n] (one row per column) or [n], as an
// n × s column-major block; `what` names them in errors ("right-hand sides", "start vectors").
std::vector<double> read_columns(const std::string& file, const std::string& dataset, std::int64_t n,
                                 const char* what, std::int64_t* s_out) {
  Hdf5File f = Hdf5File::open(file);
  if (!f.has_dataset(dataset))
    throw InputError(file, 0, format("no dataset '%s' for the %s", dataset.c_str(), what));
  std::vector<std::int64_t> dims;
  std::vector<double> data = f.read_doubles(dataset, &dims);
  std::int64_t s = 0, len = 0;
  if (dims.size() == 1) s = 1, len = dims[0];
  else if (dims.size() == 2) s = dims[0], len = dims[1];
  else throw InputError(file, 0, format("/%s: %s must be [n] or [s][n]", dataset.c_str(), what));
  if (len != n)
    throw InputError(file, 0, format("/%s: %s have length %lld but the matrix has %lld rows "
                                     "(expected [s][%lld] or [%lld])", dataset.c_str(), what,
                                     (long long)len, (long long)n, (long long)n, (long long)n));
  if (s < 1) throw InputError(file, 0, format("/%s: no %s", dataset.c_str(), what));
  // (a checkpoint holds GBs: checked on all host threads)
  if (const std::int64_t i = first_non_finite(data.data(), static_cast<std::int64_t>(data.size())); i >= 0)
    throw InputError(file, 0, format("/%s: non-finite value in the %s at column %lld, row %lld",
                                     dataset.c_str(), what, (long long)(i / len), (long long)(i % len)));
  *s_out = s;
  return data;  // [s][n] row-major == n × s column-major
}

// A start block (--start / --x0): "FILE.h5" (its `dataset`: a tcsolve result's eigenvectors or
// solution) or "FILE.h5:DATASET".
std::pair<std::string, std::string> split_start(const std::string& spec, const char* dataset) {
  if (ends_with(spec, ".h5") || ends_with(spec, ".hdf5")) return {spec, dataset};
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) return {spec, dataset};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

// A checkpoint file: attributes kind = "tcsolve checkpoint", task, matrix, matrix_checksum, rows,
// iteration, locked, solver_seconds, job_options, tcsolve_version; dataset block [cols][n] (the
// solver's block in the input order). Written atomically (a kill leaves the previous one).
void write_checkpoint(const JobSpec& s, const PreparedMatrix& a, const SolverCheckpoint& c,
                      const std::vector<double>& block) {
  AtomicFile af(s.checkpoint);
  {
    Hdf5File f = Hdf5File::create(af.temp_path(), 8.0 * static_cast<double>(block.size()) + 1e6);
    f.set_attr("kind", "tcsolve checkpoint");
    f.set_attr("task", s.task);
    f.set_attr("matrix", s.matrix);
    f.set_attr("matrix_checksum", a.checksum());
    f.set_attr("rows", c.n);
    f.set_attr("iteration", c.iteration);
    f.set_attr("locked", c.locked);
    f.set_attr("solver_seconds", c.seconds);
    f.set_attr("job_options", job_options_string(s));
    f.set_attr("tcsolve_version", TCSOLVE_VERSION);
    // whose it is (checkpoint_is_own): a batch removes or replaces only its own job's
    if (!s.name.empty()) f.set_attr("job", s.name);
    if (!s.out.empty()) f.set_attr("out", s.out);
    f.write_2d("block", block.data(), static_cast<std::int64_t>(block.size()) / std::max<std::int64_t>(c.n, 1), c.n);
    f.close();
  }
  af.commit();
}

// The block of a checkpoint written for this task and matrix (else InputError saying what
// differs); `note` says where the run continues from.
std::vector<double> read_checkpoint(const JobSpec& s, const PreparedMatrix& a, std::int64_t* cols,
                                    std::string* note) {
  const std::string& file = s.resume_from;
  std::string kind, task, sum;
  std::int64_t iteration = 0;
  double secs = 0;
  {
    Hdf5File f = Hdf5File::open(file);
    kind = f.has_attr("kind") ? f.attr_string("kind") : "";
    if (kind != "tcsolve checkpoint")
      throw InputError(file, 0, "not a tcsolve checkpoint (no attribute kind = \"tcsolve checkpoint\"; "
                                "a result is continued with " + std::string(s.task == "eigs" ? "--start" : "--x0") + ")");
    task = f.attr_string("task");
    sum = f.attr_string("matrix_checksum");
    iteration = f.attr_int64("iteration");
    secs = f.attr_double("solver_seconds");
  }
  if (task != s.task)
    throw InputError(file, 0, "a checkpoint of " + task + ", not of " + s.task);
  if (!a.has_checksum(sum))
    throw InputError(file, 0, "written for another matrix (checksum " + sum + "; " + s.matrix +
                                  " has " + a.checksum() + ")");
  std::vector<double> block = read_columns(file, "block", a.a.nrows, "checkpoint's vectors", cols);
  *note = format("resumed from %s (iteration %lld, %.3g s of solver time)", file.c_str(),
                 (long long)iteration, secs);
  return block;
}

// Right-hand sides, n × s column-major on the host: "random:S" or "FILE.h5:DATASET" holding
// [s][n] (one row per right-hand side) or [n] (the spec checked by parse_rhs).
// random:S: with `materialize` false only the count is returned (the solve generates them where it
// runs: block_cg_random, the same values).
std::vector<double> load_rhs(const std::string& rhs, std::int64_t n, std::int64_t* s_out,
                             std::uint64_t seed, bool materialize = true) {
  const RhsSpec r = parse_rhs(rhs);
  if (r.random > 0) {
    const std::int64_t s = r.random;
    if (!materialize) {
      *s_out = s;
      return {};
    }
    // On all host threads (the values do not depend on the thread count).
    std::vector<double> b(static_cast<std::size_t>(n * s));
    parallel_for(n * s, [&](std::int64_t e) {
      b[e] = detail::random_entry(seed + 1000, e % n, e / n);
    }, 1 << 15);
    *s_out = s;
    return b;
  }
  return read_columns(r.file, r.dataset, n, "right-hand sides", s_out);
}

// JobOutcome::solve_steps of a block CG solve: the iterations' stream time (marks around each
// iteration's queued work; solvers/block_cg.cpp) split into A's applies, the preconditioner's and
// the rest (Gram products, updates, small factorizations), and what the solve's host clock
// holds beyond it (workspace, start, the final true residuals, the copy of X, gaps).
std::string cg_solve_steps(const SolveResult& r, double solve_s) {
  double ap = 0.0, pc = 0.0, de = 0.0;
  for (const auto& h : r.history) ap += h.apply_seconds, pc += h.precond_seconds, de += h.dense_seconds;
  if (r.history.empty() || ap + de <= 0.0) return {};
  return format("%lld iterations %.3g s on the stream (A applies %.3g s, preconditioner %.3g s, "
                "the rest %.3g s), outside them %.3g s",
                static_cast<long long>(r.history.size()), ap + de, ap - pc, pc, de,
                std::max(0.0, solve_s - ap - de));
}

}  // namespace

RhsSpec parse_rhs(const std::string& rhs) {
  RhsSpec r;
  if (rhs.rfind("random:", 0) == 0) {
    const std::string cnt = rhs.substr(7);
    bool digits = !cnt.empty() && cnt.size() <= 9;
    for (char c : cnt) digits = digits && c >= '0' && c <= '9';
    r.random = digits ? std::strtoll(cnt.c_str(), nullptr, 10) : 0;
    if (r.random < 1 || r.random > kMaxRandomRhs)
      throw UsageError(format("--rhs '%s': expected random:S with 1 <= S <= %lld (block CG keeps 8 n x S "
                              "blocks and S x S Gram matrices: S = %lld already takes 256 KiB a row and "
                              "128 MiB a Gram matrix)", rhs.c_str(), (long long)kMaxRandomRhs,
                              (long long)kMaxRandomRhs));
    return r;
  }
  const auto colon = rhs.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rhs.size())
    throw UsageError("--rhs '" + rhs + "': expected FILE.h5:DATASET or random:S");
  r.file = rhs.substr(0, colon);
  r.dataset = rhs.substr(colon + 1);
  return r;
}

std::string auto_precond_choice(const AutoPrecondFacts& facts, JobOutcome& o, const char* refusal) {
  const char* why = refusal ? refusal : auto_precond_refusal(facts);
  if (why) {
    o.precond_note = std::string("jacobi (auto: not the Chebyshev polynomial, for ") + why + ")";
    return "jacobi";
  }
  o.precond_note = " (auto: short rows, a constant diagonal, on the GPU)";
  return "chebyshev";
}

void take_eigs_result(const EigsResult& er, JobOutcome& o) {
  o.method = er.method;
  o.certified = to_string(er.certified);
  o.certificate = er.certificate;
  o.verification = to_string(er.verification);
  o.transform = er.transform;
  o.sigma = er.sigma;
  o.why = er.why;
  o.predicted_s = er.predicted_seconds;
  o.precision = er.precision;
  o.solve_steps = er.solve_steps;
  o.factor = er.factor;
  o.conv = to_string(er.conv);
  o.error_bounds = er.error_bounds;
  o.operator_applies = er.operator_applies;
  o.plan_s = er.plan_seconds;
  o.solve_s = er.solve_seconds;
  o.verify_s = er.verify_seconds;
}

namespace {

std::int64_t default_maxiter(const JobSpec& s) {
  return s.maxiter > 0 ? s.maxiter : s.task == "solve" ? 5000 : 2000;
}

}  // namespace

ResultRecord job_record(const JobSpec& s, const JobOutcome& o, const std::string& command) {
  ResultRecord r;
  r.task = s.task;
  r.job = s.name;
  r.matrix = s.matrix;
  r.mass = s.mass;
  r.rhs = s.rhs;
  r.start = s.start;
  r.command = command;
  r.job_options = job_options_string(s);
  r.input_stamps = input_stamps(s);
  r.status = o.status;
  r.reason = o.message;
  r.method = o.method;
  r.iterations = o.iterations;
  r.operator_applies = o.operator_applies;
  r.tolerance = s.tol;
  r.max_iterations = default_maxiter(s);
  r.precision = s.precision;
  r.preconditioner = o.precond_note.empty() ? s.precond : o.precond_note;
  r.backend = o.backend;
  r.device = o.device;
  r.device_reason = o.device_reason;
  r.spmm_kernel = o.kernel;
  r.spmm_plan = o.kernel_reason;
  r.reorder = s.reorder;
  r.reorder_plan = o.reorder;
  r.rows = o.n;
  r.peak_device_bytes = o.peak_device_bytes;
  r.process_device_bytes = o.process_device_bytes;
  r.seed = s.seed;
  r.checkpoint = s.checkpoint;
  r.checkpoints = o.checkpoints;
  r.checkpoint_failures = o.checkpoint_failures;
  r.checkpoint_bytes = o.checkpoint_bytes;
  r.checkpoint_seconds = o.checkpoint_s;
  r.resumed_from = s.resume_from;
  r.distributed = o.distributed;
  r.k = s.k;
  r.which = s.which;
  r.eigenvalues = o.values;
  r.error_bounds = o.error_bounds;
  r.convergence_test = o.conv;
  r.certified = o.certified;
  r.certificate = o.certificate;
  r.verification = o.verification;
  r.method_reason = o.why;
  r.transform = o.transform;
  r.has_sigma = o.transform == "shift-invert" || !s.sigma.empty();
  r.sigma = o.sigma;
  r.factorization = o.factor;
  r.predicted_seconds = o.predicted_s;
  r.column_iterations = o.column_iterations;
  r.residual_norms = o.residuals;
  r.precision_used = o.precision;
  r.solve_steps = o.solve_steps;
  r.time_read = o.read_s;
  r.time_preprocess = o.preprocess_s;
  r.time_plan = o.plan_s;
  r.time_setup = o.setup_s;
  r.time_operator = o.operator_s;
  r.time_solve = o.solve_s;
  r.time_verify = o.verify_s;
  r.time_write = o.write_s;
  r.time_total = o.seconds;
  r.time_init = o.init_s;
  r.time_process = o.process_s;
  return r;
}

namespace {
const std::string& method_list() {
  static const std::string s = [] {
    std::string r;
    for (const auto& m : eigs_method_names()) r += (r.empty() ? "" : "|") + m;
    return r;
  }();
  return s;
}
}  // namespace

void add_job_options(po::options_description& opts, JobSpec& s, const std::string& task) {
  const bool eigs = task == "eigs";
  if (eigs) {
    opts.add_options()
        ("mass", po::value(&s.mass)->value_name("MATRIX"),
         "mass matrix B (symmetric positive definite): solve A x = lambda B x")
        ("k", po::value(&s.k)->value_name("K"), "number of eigenpairs (default 6)")
        ("which", po::value(&s.which)->value_name("smallest|largest|nearest"),
         "which eigenvalues (default smallest; nearest: the k closest to --sigma)")
        ("sigma", po::value(&s.sigma)->value_name("S"),
         "shift-invert around S (SciPy's sigma): Lanczos on (A - S B)^-1 B through a sparse "
         "factorization; smallest needs S below the spectrum")
        ("method", po::value(&s.method)->value_name(method_list().c_str()),
         "eigensolver (default auto: the plan with the fewest predicted seconds among a dense "
         "solve, Chebyshev-filtered subspace iteration, shift-invert Lanczos through a sparse "
         "factorization and LOBPCG; the output says which and why)")
        ("conv", po::value(&s.conv)->value_name("rel|norm|abs"),
         "convergence test on the true residual r = A x - lambda B x: rel |r| <= T |lambda| |x| "
         "(default), norm |r| <= T (|A| + |lambda| |B|) |x|, abs |r| <= T |x|")
        ("no-factor", po::bool_switch(&s.no_factor),
         "never factor A - sigma B (no shift-invert, no certified count; a re-check instead)")
        ("no-recheck", po::bool_switch(&s.no_recheck),
         "skip the multiplicity re-check when no count certifies the set (status: unverified)")
        ("certify", po::bool_switch(&s.certify),
         "always certify the set by Sylvester's inertia (a sparse LDL^T of A - tau B; by default "
         "only when it costs at most 15% of the solve, else a cheaper re-check)")
        ("block-size", po::value(&s.block_size)->value_name("S"), "block Lanczos block size (default: automatic)")
        ("start", po::value(&s.start)->value_name("FILE.h5[:DATASET]"),
         "warm start: begin from the eigenvectors of an earlier result (its /eigenvectors, or a "
         "DATASET [s][n]), e.g. the previous point of a parameter sweep; any number of vectors. "
         "The answer is tested as from a random start");
  } else {
    opts.add_options()
        ("rhs", po::value(&s.rhs)->value_name("FILE.h5:DATASET|random:S"),
         "right-hand sides: a dataset [s][n] (one row per right-hand side) or [n], or S random ones")
        ("x0", po::value(&s.start)->value_name("FILE.h5[:DATASET]"),
         "initial guess: an earlier result's /solution, or a DATASET [s][n] with one row per "
         "right-hand side (default: zero)");
  }
  opts.add_options()
      ("tol", po::value(&s.tol)->value_name("T"),
       eigs ? "tolerance of the convergence test (--conv; default 1e-8)"
            : "convergence: |b - A x| <= T |b| for every column (default 1e-8)")
      ("maxiter", po::value(&s.maxiter)->value_name("M"),
       eigs ? "iteration limit (default 2000)" : "iteration limit (default 5000)")
      ("precond", po::value(&s.precond)->value_name(eigs ? "auto|none|jacobi|factor" : "auto|jacobi|chebyshev|none"),
       eigs ? "LOBPCG preconditioner (default auto: the factorization of A - sigma B for the "
              "smallest when one is made, else jacobi)"
            : "CG preconditioner (default auto: chebyshev on the GPU for matrices of at least "
              "131072 rows with short rows and a constant diagonal, else jacobi; chebyshev: a "
              "Chebyshev polynomial in A of a degree chosen from Lanczos bounds of the spectrum, "
              "reported in the result)")
      ("precond-degree", po::value(&s.precond_degree)->value_name("M"),
       "solve --precond chebyshev: the polynomial's degree, M products with A per application "
       "(default 0: from the spectral bounds)")
      ("partition", po::value(&s.partition)->value_name("auto|contiguous|metis"),
       "under mpirun: how the rows are split over the ranks (default auto: METIS k-way when it "
       "cuts fewer edges than contiguous ranges and the matrix is read whole; HDF5 files and the "
       "stencil generators are read by ranges)")
      ("reorder", po::value(&s.reorder)->value_name("none|symmetric"),
       "symmetric: iterate in the basis of a symmetric Jaccard/RCM reordering B = P A P^T (vectors "
       "permuted once at entry and exit); pays for matrices stored in a poor (e.g. scrambled) order, "
       "costs one reordering at setup (default none)")
      ("precision", po::value(&s.precision)->value_name("auto|fp64|fp32|fp16|bf16"),
       "auto (default): A in fp64, and eigs' Chebyshev filter on fp32 blocks where that is safe "
       "(the precision ladder, climbing to fp64; every answer checked in fp64 on the given A; "
       "reported as \"precision\"); fp64: fp64 throughout; fp32/fp16/bf16: the iteration applies "
       "A rounded to that precision (fp16/bf16 need the GPU)")
      ("device", po::value(&s.device)->value_name("auto|cpu|cuda"), "where to run (default auto: the GPU when present)")
      ("cpu-fallback", po::bool_switch(&s.cpu_fallback),
       "run on the CPU when the GPU has too little memory (default: fail and say how much is needed)")
      ("seed", po::value(&s.seed)->value_name("N"), "seed of the random start block / right-hand sides (default 1)")
      ("checkpoint", po::value(&s.checkpoint)->value_name("FILE.h5"),
       eigs ? "write the solver's state (its Ritz block; Lanczos: the Ritz vectors kept at a restart) "
              "to FILE.h5 atomically every --checkpoint-every seconds; continue a stopped or killed "
              "run with --resume-from FILE.h5"
            : "write the iterate X to FILE.h5 atomically every --checkpoint-every seconds; continue "
              "a stopped or killed run with --resume-from FILE.h5")
      ("checkpoint-every", po::value(&s.checkpoint_every)->value_name("SECONDS"),
       "seconds between checkpoints (default 60)")
      ("resume-from", po::value(&s.resume_from)->value_name("FILE.h5"),
       "continue from a checkpoint of the same matrix (and right-hand sides): the answer is tested "
       "as from a fresh start")
      ("out", po::value(&s.out)->value_name("FILE.h5"), "write the result (HDF5, atomically; docs/hdf5-schema.md)")
      ("plot", po::value(&s.plot)->value_name("FILE.svg"), "write a convergence plot (SVG)");
}

void validate_job(const JobSpec& s) {
  if (s.partition != "auto" && s.partition != "contiguous" && s.partition != "metis")
    throw UsageError("--partition '" + s.partition + "': expected auto, contiguous or metis");
  if (s.task != "eigs" && s.task != "solve")
    throw UsageError("task '" + s.task + "': expected eigs or solve");
  if (s.matrix.empty()) throw UsageError("no matrix given");
  if (s.task == "eigs") {
    if (s.which != "smallest" && s.which != "largest" && s.which != "nearest")
      throw UsageError("--which '" + s.which + "': expected smallest, largest or nearest");
    try {
      parse_eigs_method(s.method);
    } catch (const InvalidArgument& e) {
      throw UsageError(std::string("--") + e.what());
    }
    if (s.k < 1) throw UsageError(format("--k %lld: must be at least 1", (long long)s.k));
    if (s.block_size < 0) throw UsageError("--block-size must be positive");
    if (s.conv != "rel" && s.conv != "norm" && s.conv != "abs")
      throw UsageError("--conv '" + s.conv + "': expected rel, norm or abs");
    if (!s.sigma.empty()) {
      char* end = nullptr;
      const double v = std::strtod(s.sigma.c_str(), &end);
      if (*end != '\0' || !std::isfinite(v))
        throw UsageError("--sigma '" + s.sigma + "': expected a finite number");
    }
    if (s.which == "nearest" && s.sigma.empty())
      throw UsageError("--which nearest needs --sigma S (the k eigenvalues closest to S)");
    if (s.no_factor && (!s.sigma.empty() || s.precond == "factor" || s.certify))
      throw UsageError(std::string(!s.sigma.empty() ? "--sigma" : s.certify ? "--certify" : "--precond factor") +
                       " needs a factorization: it cannot be combined with --no-factor");
    if (s.certify && s.no_recheck)
      throw UsageError("--certify and --no-recheck contradict each other");
    try {
      parse_eigs_precond(s.precond);
    } catch (const InvalidArgument& e) {
      throw UsageError(std::string("--") + e.what());
    }
  } else {
    if (s.rhs.empty()) throw UsageError("no right-hand sides given (--rhs FILE.h5:DATASET or random:S)");
    parse_rhs(s.rhs);
  }
  if (!(s.tol > 0 && s.tol < 1)) throw UsageError(format("--tol %g: expected 0 < T < 1", s.tol));
  if (s.maxiter < 0) throw UsageError("--maxiter must be positive");
  if (s.task == "solve" && s.precond != "auto" && s.precond != "jacobi" && s.precond != "none" &&
      s.precond != "chebyshev")
    throw UsageError("--precond '" + s.precond + "': expected auto, jacobi, chebyshev or none");
  if (s.precond_degree < 0 || s.precond_degree > 1000)
    throw UsageError("--precond-degree " + std::to_string(s.precond_degree) + ": expected 0 (automatic) to 1000");
  if (s.precond_degree > 0 && !(s.task == "solve" && s.precond == "chebyshev"))
    throw UsageError("--precond-degree is for `solve --precond chebyshev`");
  if (s.reorder != "none" && s.reorder != "symmetric")
    throw UsageError("--reorder '" + s.reorder + "': expected none or symmetric");
  if (s.precision != "auto" && s.precision != "fp64" && s.precision != "fp32" && s.precision != "fp16" &&
      s.precision != "bf16")
    throw UsageError("--precision '" + s.precision + "': expected auto, fp64, fp32, fp16 or bf16");
  if (s.device != "auto" && s.device != "cpu" && s.device != "cuda")
    throw UsageError("--device '" + s.device + "': expected auto, cpu or cuda");
  if (!s.checkpoint.empty() && !ends_with(s.checkpoint, ".h5") && !ends_with(s.checkpoint, ".hdf5"))
    throw UsageError("--checkpoint '" + s.checkpoint + "': the checkpoint file must end in .h5 or .hdf5");
  if (!(s.checkpoint_every > 0) || !std::isfinite(s.checkpoint_every))
    throw UsageError(format("--checkpoint-every %g: expected a positive number of seconds", s.checkpoint_every));
  if (!s.resume_from.empty() && !s.start.empty())
    throw UsageError(std::string("--resume-from and ") + (s.task == "eigs" ? "--start" : "--x0") +
                     " both give the start: use one");
  if (!s.checkpoint.empty() && s.checkpoint == s.out)
    throw UsageError("--checkpoint and --out name the same file '" + s.out + "'");
  if (!s.out.empty() && !ends_with(s.out, ".h5") && !ends_with(s.out, ".hdf5"))
    throw UsageError("--out '" + s.out + "': the result file must end in .h5 or .hdf5");
  if (!s.plot.empty() && !ends_with(s.plot, ".svg"))
    throw UsageError("--plot '" + s.plot + "': the plot file must end in .svg");
}

std::vector<std::string> job_input_files(const JobSpec& s) {
  std::vector<std::string> inputs;
  for (const std::string* spec : {&s.matrix, &s.mass})
    if (!spec->empty() && !matrix_spec_file(*spec).empty()) inputs.push_back(matrix_spec_file(*spec));
  if (s.task == "solve" && s.rhs.rfind("random:", 0) != 0 && s.rhs.rfind(':') != std::string::npos)
    inputs.push_back(s.rhs.substr(0, s.rhs.rfind(':')));
  if (!s.start.empty()) inputs.push_back(split_start(s.start, "").first);
  return inputs;
}

void check_job_outputs(const JobSpec& s) {
  std::vector<std::string> inputs = job_input_files(s);
  // (the checkpoint may be the file resumed from: it is read before the first checkpoint)
  if (!s.checkpoint.empty()) check_output_path("--checkpoint '" + s.checkpoint + "'", s.checkpoint, inputs);
  if (!s.resume_from.empty()) inputs.push_back(s.resume_from);
  if (!s.out.empty()) check_output_path("--out '" + s.out + "'", s.out, inputs);
  if (!s.plot.empty()) check_output_path("--plot '" + s.plot + "'", s.plot, inputs);
}

// ---- MatrixCache ------------------------------------------------------------------------------

MatrixCache::MatrixCache() = default;
MatrixCache::~MatrixCache() = default;

std::shared_ptr<const PreparedMatrix> MatrixCache::get(const std::string& spec, bool* fresh) {
  if (fresh) *fresh = false;
  auto it = matrices_.find(spec);
  if (it != matrices_.end()) return it->second;
  auto m = std::make_shared<PreparedMatrix>();
  m->spec = spec;
  ReadOptions ro;
  ro.require_square = true;  // the reader names the file and both sizes
  Timer tr;
  m->a = read_matrix(spec, ro);
  m->read_seconds = tr.seconds();
  trace_mark("matrix: read");
  Timer tc;
  const Csr<double>& a = m->a;
  // Symmetry is checked, not assumed (a "general" file may hold a symmetric matrix, or not).
  // Generators build both triangles from one formula (tests/io/test_generators checks every
  // kind): symmetric by construction, not checked again (18 ms at 1M rows on the H200).
  const bool by_construction = is_generator_spec(spec) && a.symmetry == Symmetry::symmetric;
  if (!by_construction && !is_symmetric(a, 1e-12)) {
    const MatrixSummary s = summarize(a);
    throw InvalidArgument(format("%s is not symmetric (max |a_ij - a_ji| / max |a| = %.3g): the "
                                 "eigensolvers and block CG need a symmetric matrix",
                                 spec.c_str(), s.symmetry_defect));
  }
  trace_mark("matrix: symmetry checked");
  m->diagonal = csr_diagonal(a);
  m->inf_norm = csr_inf_norm(a);
  m->check_seconds = tc.seconds();
  matrices_[spec] = m;
  if (fresh) *fresh = true;
  return m;
}

DenseBlockOps& MatrixCache::ops(Backend backend) {
  auto& p = ops_[static_cast<int>(backend)];
  if (!p) p = make_dense_ops(backend);
  return *p;
}

SparseOperator& MatrixCache::op(const std::shared_ptr<const PreparedMatrix>& m, Backend backend,
                                Precision precision, int expected_cols, bool* fresh,
                                OperatorBasis basis) {
  const bool permuted = basis == OperatorBasis::permuted;
  const std::string key = m->spec + "|" + to_string(backend) + "|" + to_string(precision) +
                          (permuted ? "|permuted" : "");
  auto& p = operators_[key];
  if (fresh) *fresh = !p;
  if (!p) {
    OperatorOptions oo;
    oo.precision = precision;
    oo.stream = ops(backend).stream();
    oo.expected_cols = expected_cols;
    if (permuted) oo.reorder = Reorder::symmetric, oo.basis = OperatorBasis::permuted;
    p = make_sparse_operator(m->a, backend, oo);
  }
  return *p;
}

PlanMemo& MatrixCache::memo(const std::string& matrix, const std::string& mass) {
  auto& p = memos_[matrix + "|" + mass];
  if (!p) p = std::make_unique<PlanMemo>();
  return *p;
}

void MatrixCache::drop(const std::string& spec) {
  matrices_.erase(spec);
  for (auto it = memos_.begin(); it != memos_.end();)
    it = it->first.rfind(spec + "|", 0) == 0 || it->first.find("|" + spec) != std::string::npos
             ? memos_.erase(it) : std::next(it);
  for (auto it = operators_.begin(); it != operators_.end();)
    it = it->first.rfind(spec + "|", 0) == 0 ? operators_.erase(it) : std::next(it);
}

// ---- one job ----------------------------------------------------------------------------------

namespace {

struct Solved {
  bool eigs = true;
  EigsResult er;
  SolveResult sr;
  std::int64_t wanted = 0;
};

// solve --precond auto (the default): auto_precond_refusal (solvers/chebyshev_precond.hpp). The
// choice and its reason go into the result's preconditioner note. `tight`: the right-hand sides
// run in batches (fit_columns).
std::string solve_precond(const JobSpec& s, Backend backend, const Csr<double>& a, bool tight, JobOutcome& o) {
  if (s.task != "solve" || s.precond != "auto") return s.precond;
  AutoPrecondFacts f;
  f.gpu = backend == Backend::cuda;
  f.tight = tight;
  f.reordered = s.reorder != "none";
  f.n = a.nrows, f.nnz = a.nnz();
  f.diagonal_varies = f.gpu && chebyshev_wants_jacobi(a);
  return auto_precond_choice(f, o);
}

// fit_columns (GPU runs; 0 = no limit): the n-vectors that fit beside the matrices. eigs passes it
// to the driver (which shrinks its basis/width, or refuses); solve runs the right-hand sides in
// batches of (fit_columns - 1) / 8 (block CG holds 8 blocks of s and a diagonal).
Solved solve_on(const JobSpec& s, Backend backend, MatrixCache& cache,
                const std::shared_ptr<const PreparedMatrix>& A,
                const std::shared_ptr<const PreparedMatrix>& B, const std::vector<double>& rhs,
                std::int64_t nrhs, const StartBlock& start, const ProgressFn& progress,
                JobOutcome& o, std::int64_t fit_columns = 0) {
  Timer tp;
  const Precision prec = parse_storage_precision(s.precision);
  const std::string precond = solve_precond(s, backend, A->a, fit_columns > 0, o);
  // Columns per block CG batch: all right-hand sides, or batches of (fit_columns - 1) / 8 when 8 blocks
  // of nrhs do not fit the GPU; --precond chebyshev holds 3 blocks more (A·z, an iterate, D⁻¹r)
  // and, while it is set up, its Lanczos probe's basis (up to 41 n-vectors, fewer when memory is
  // short: make_chebyshev_preconditioner); its fused step's copy of A is made only where it fits.
  const std::int64_t per_col = precond == "chebyshev" ? 11 : 8;
  const std::int64_t reserve = precond == "chebyshev" ? 12 : 1;
  const std::int64_t batch =
      fit_columns > 0 ? std::max<std::int64_t>(1, std::min(nrhs, (fit_columns - reserve) / per_col)) : nrhs;
  // The operator's kernel trial runs at the width the solver will apply, and its scratch X and Y
  // (2 blocks of that width) must fit beside the matrices as the solver's blocks will.
  const std::int64_t eig_cols =
      fit_columns > 0 ? std::max<std::int64_t>(1, std::min<std::int64_t>(s.k + 8, fit_columns / 2))
                      : s.k + 8;
  const int cols = static_cast<int>(s.task == "solve" ? batch : eig_cols);
  DenseBlockOps& ops = cache.ops(backend);
  const bool reorder = s.reorder == "symmetric";
  SparseOperator& aop = cache.op(A, backend, prec, cols, nullptr,
                                 reorder ? OperatorBasis::permuted : OperatorBasis::original);
  // --reorder symmetric: when the reordering is applied (permutation p), the operator is
  // Ã = P·A·Pᵀ, Ã(i, j) = A(p[i], p[j]). The solvers then see Ã, B̃ = P·B·Pᵀ, b̃ = P·b and the
  // diagonal P·d (same spectrum; residual norms unchanged since P is orthogonal), and their
  // vectors are scattered back once at exit: x[p[i]] = x̃[i].
  const std::vector<std::int32_t>* perm = reorder ? aop.permutation() : nullptr;
  Csr<double> a_perm, b_perm;
  std::unique_ptr<SparseOperator> bop_perm;
  const Csr<double>* a_csr = &A->a;
  const Csr<double>* b_csr = B ? &B->a : nullptr;
  SparseOperator* bop = nullptr;
  if (perm) {
    a_perm = permute_symmetric(A->a, *perm);
    a_csr = &a_perm;
    if (B) {
      b_perm = permute_symmetric(B->a, *perm);
      b_csr = &b_perm;
      OperatorOptions oo;
      oo.stream = ops.stream();
      oo.expected_cols = cols;
      bop_perm = make_sparse_operator(b_perm, backend, oo);
      bop = bop_perm.get();
    }
  } else if (B) {
    bop = &cache.op(B, backend, Precision::fp64, cols);
  }
  const std::int64_t n = A->a.nrows;
  // x̃ = P·x and x = Pᵀ·x̃ for host blocks (core/csr.hpp, as the operator's own conversions).
  auto gather = [&](const auto& x, std::int64_t cols_x) {  // (a std::vector or a StartBlock)
    std::vector<double> xt(x.size());
    permute_block_rows(x.data(), n, xt.data(), n, n, cols_x, perm->data(), false);
    return xt;
  };
  auto scatter = [&](std::vector<double>& xt) {
    if (xt.empty() || n == 0) return;
    std::vector<double> x(xt.size());
    permute_block_rows(xt.data(), n, x.data(), n, n, static_cast<std::int64_t>(xt.size()) / n,
                       perm->data(), true);
    xt.swap(x);
  };
  if (reorder) o.reorder = aop.plan().reason;
  o.operator_s = tp.seconds();
  o.setup_s += o.operator_s;
  trace_mark("job: operator built");
  o.kernel = to_string(aop.plan().kernel);
  o.kernel_reason = aop.plan().reason;
  o.backend = to_string(backend);
  o.device = backend == Backend::cuda ? device_name() : "cpu";
  o.device_reason = s.device_reason;

  // --checkpoint: the solver's block (in the input order) written atomically by a writer thread,
  // so that the solve waits only for the copy to the host (into a buffer of an earlier checkpoint,
  // handed back by the writer: no fresh pages to touch); the row permutation back to the input
  // order runs in the writer too. A checkpoint due while the previous one is still being written
  // waits for it. A write that fails (full disk...) ends the checkpoints, not the solve: the
  // message says so. `merge` (solve in batches) places a batch's columns among the others' (on
  // the solve's thread: it reads the batches' state).
  std::function<void(std::vector<double>&, const SolverCheckpoint&)> merge;
  std::future<std::vector<double>> writing;
  double writing_bytes = 0;  // of the write in flight
  std::string checkpoint_error;
  // A checkpoint counts once its file is committed; a failed write is counted as failed.
  auto wait_for_writer = [&]() -> std::vector<double> {
    if (!writing.valid()) return {};
    try {
      std::vector<double> done = writing.get();
      ++o.checkpoints;
      o.checkpoint_bytes = writing_bytes;
      return done;
    } catch (const std::exception& e) {
      checkpoint_error = e.what();
      ++o.checkpoint_failures;
    }
    return {};
  };
  auto checkpoint_to_file = [&](SolverCheckpoint& c) {
    Timer tc;
    std::vector<double> done = wait_for_writer();
    if (!checkpoint_error.empty()) return;
    std::vector<double> block = std::move(c.block);
    if (merge) merge(block, c);
    writing_bytes = 8.0 * static_cast<double>(block.size());
    const SolverCheckpoint meta = c;  // (attributes only: c.block is empty here)
    c.block = std::move(done);        // the next checkpoint's copy goes there
    writing = std::async(std::launch::async, [&s, &A, perm, n, meta, b = std::move(block)]() mutable {
      if (!perm || n == 0) {
        write_checkpoint(s, *A, meta, b);
        return std::move(b);
      }
      std::vector<double> in_order;
      resize_huge(in_order, b.size());
      permute_block_rows(b.data(), n, in_order.data(), n, n, static_cast<std::int64_t>(b.size()) / n,
                         perm->data(), true);
      write_checkpoint(s, *A, meta, in_order);
      return std::move(b);
    });
    o.checkpoint_s += tc.seconds() + c.copy_seconds;
  };
  // The last write is waited for before the result is written (one HDF5 writer at a time).
  auto finish_checkpoints = [&] {
    Timer tw;
    wait_for_writer();
    o.checkpoint_s += tw.seconds();
    if (!checkpoint_error.empty()) o.checkpoint_note = "checkpoints stopped: " + checkpoint_error;
  };
  const CheckpointFn on_checkpoint = s.checkpoint.empty() ? CheckpointFn() : CheckpointFn(checkpoint_to_file);

  Solved out;
  Timer ts;
  if (s.task == "eigs") {
    EigsOptions eo;
    eo.k = s.k;
    eo.which = s.which == "largest" ? Which::largest : s.which == "nearest" ? Which::nearest
                                                                         : Which::smallest;
    eo.has_sigma = !s.sigma.empty();
    if (eo.has_sigma) eo.sigma = std::strtod(s.sigma.c_str(), nullptr);
    eo.method = parse_eigs_method(s.method);
    eo.conv = parse_conv_test(s.conv);
    eo.tol = s.tol;
    eo.max_iterations = s.maxiter;
    eo.block_size = s.block_size;
    eo.precond = parse_eigs_precond(s.precond);
    eo.allow_factor = !s.no_factor;
    eo.recheck = !s.no_recheck;
    eo.certify = s.certify;
    eo.backend = backend;
    eo.precision = prec;
    eo.ladder = s.precision == "auto";
    eo.seed = s.seed;
    eo.workspace_columns = fit_columns;
    eo.want_vectors = !s.out.empty();  // (only a written result holds them)
    if (!start.empty()) eo.v0 = perm ? gather(start, static_cast<std::int64_t>(start.size()) / n) : start;
    eo.checkpoint_every = s.checkpoint_every;
    eo.on_checkpoint = on_checkpoint;
    if (B) eo.mass_name = "mass matrix " + s.mass;
    const std::int64_t k = s.k;
    eo.on_iteration = [&](const IterationRecord& r) {
      double mx = 0;
      for (std::size_t j = 0; j < r.residual_norms.size() && j < static_cast<std::size_t>(k); ++j)
        mx = std::max(mx, r.residual_norms[j]);
      if (progress) progress(r.iteration, std::min(r.converged, k), k, mx, ts.seconds());
    };
    EigsPrebuilt pre;
    pre.ops = &ops;
    pre.a = &aop;
    pre.b = bop;
    pre.spmm_kernel = o.kernel;
    pre.spmm_plan = o.kernel_reason;
    if (!perm) pre.a_inf_norm = A->inf_norm, pre.a_diagonal = &A->diagonal;
    // (the permuted basis is another matrix for the planner: its own memo)
    pre.memo = &cache.memo(s.matrix + (perm ? "|permuted" : "") + "|" + to_string(backend), s.mass);
    out.er = eigs(*a_csr, b_csr, eo, pre);
    finish_checkpoints();
    const EigsResult& er = out.er;
    if (perm) scatter(out.er.vectors);
    take_eigs_result(er, o);
    o.setup_s += er.setup_seconds;
    out.wanted = k;
  } else {
    CgOptions co;
    co.tol = s.tol;
    co.max_iterations = default_maxiter(s);
    std::unique_ptr<ChebyshevPreconditioner> cheb;
    if (precond == "chebyshev") {
      // upper: ‖A‖∞ (‖D⁻¹A‖∞ when Jacobi-scaled) ≥ λmax keeps M positive definite; lower and
      // degree from a Lanczos probe. The fused step and the scaling need A in the operator's basis
      // (not with --reorder's permutation); on the GPU the step stores A in fp32 (only M changes;
      // the residuals CG tests are fp64 on A).
      const bool jacobi = !perm && chebyshev_wants_jacobi(A->a);
      double probe_s = 0;
      cheb = make_chebyshev_preconditioner(aop, ops, std::min(nrhs, batch), chebyshev_upper_bound(A->a, jacobi),
                                           s.seed + 77, &probe_s, s.precond_degree, perm ? nullptr : &A->a,
                                           ops.backend() == Backend::cuda ? Precision::fp32 : Precision::fp64,
                                           jacobi);
      co.preconditioner = cheb.get();
      o.precond_note = cheb->describe() + format(" (bounds in %.3g s)", probe_s) + o.precond_note;
      o.setup_s += probe_s;
      ts = Timer();  // (the polynomial's set-up is setup, not solve: it was counted in both)
    } else if (precond != "none") {
      co.jacobi_diagonal = perm ? gather(A->diagonal, 1) : A->diagonal;
    }
    // --precision auto on the GPU: block CG's fp32 iterations inside fp64 refinement
    // (solvers/block_cg.hpp; the answer is still checked on the fp64 true residuals of A, and the
    // solve climbs to fp64 where fp32 cannot resolve A). Where A's fp32 step is at hand — the
    // bsr_block operator's own (its fp32 copy of the blocks), or the CSR operator's device copy
    // with its values rounded (4·nnz bytes more) — for Jacobi or no preconditioner, A in its own
    // order and at most 32 columns a block. H200 (docs/performance.md): elast3d:64 with 32
    // right-hand sides 0.150–0.156 s against 0.193–0.198 s in fp64, lap3d:100 with no
    // preconditioner 0.205 against 0.255 s. TCSOLVE_CG_FP32=0: fp64 only (A/B benchmarks).
    std::unique_ptr<ChebyshevStep> step32;
    const char* cg32 = std::getenv("TCSOLVE_CG_FP32");
    if (s.precision == "auto" && !cheb && !perm && ops.space() == Space::device && ops.fp32_blocks() &&
        std::min(nrhs, batch) <= kCgFp32MaxRhs && !(cg32 && std::string(cg32) == "0")) {
      co.step32 = aop.block_step();
      if (!co.step32) {
        step32 = make_chebyshev_step_on_operator(aop, A->a, Precision::fp32, ops.stream());
        co.step32 = step32.get();
      }
    }
    co.on_iteration = [&](const IterationRecord& r) {
      double mx = 0;
      for (double v : r.residual_norms) mx = std::max(mx, v);
      if (progress) progress(r.iteration, r.converged, nrhs, mx, ts.seconds());
    };
    co.checkpoint_every = s.checkpoint_every;
    co.on_checkpoint = on_checkpoint;
    out.eigs = false;
    // random:S right-hand sides not built on the host: generated where the solve runs.
    std::vector<double> rhs_local;
    const std::vector<double>* rhs_host = &rhs;
    const bool random_rhs = rhs.empty() && nrhs > 0;
    if (random_rhs && !perm && batch >= nrhs && start.empty()) {
      out.sr = block_cg_random(aop, s.seed + 1000, nrhs, ops, co, !s.out.empty());
      out.wanted = nrhs;
      o.precision = out.sr.precision;
      if (cheb) out.sr.operator_applies += cheb->columns_applied();  // the polynomial's products too
      o.operator_applies = out.sr.operator_applies;
      finish_checkpoints();
      o.solve_s = ts.seconds();
      o.solve_steps = cg_solve_steps(out.sr, o.solve_s);
      return out;
    }
    if (random_rhs) {
      rhs_local = load_rhs(s.rhs, n, &nrhs, s.seed);
      rhs_host = &rhs_local;
    }
    const std::vector<double>& rhs_b = *rhs_host;
    const std::vector<double> rhs_perm = perm ? gather(rhs_b, nrhs) : std::vector<double>();
    const double* b_all = perm ? rhs_perm.data() : rhs_b.data();
    // --x0: the initial guesses, in the operator's basis.
    const std::vector<double> x0_perm = perm && !start.empty() ? gather(start, nrhs) : std::vector<double>();
    const double* x0_all = start.empty() ? nullptr : perm ? x0_perm.data() : start.data();
    // Columns in batches of `batch` when 8 blocks of nrhs do not fit the GPU: each batch is an
    // independent block CG (same per-column test); results are concatenated.
    if (batch >= nrhs) {
      out.sr = block_cg(aop, b_all, n, nrhs, ops, co, x0_all);
    } else {
      SolveResult& all = out.sr;
      all.n = n;
      all.status = SolverStatus::converged;
      // (later batches' columns hold their start until they run: a checkpoint shows them so)
      if (x0_all) all.solutions.assign(x0_all, x0_all + n * nrhs);
      else all.solutions.assign(static_cast<std::size_t>(n * nrhs), 0.0);
      for (std::int64_t c0 = 0; c0 < nrhs; c0 += batch) {
        const std::int64_t c = std::min(batch, nrhs - c0);
        merge = [&, c0](std::vector<double>& b, const SolverCheckpoint&) {
          std::vector<double> full(all.solutions);
          std::copy(b.begin(), b.end(), full.begin() + c0 * n);
          b.swap(full);
        };
        SolveResult r = block_cg(aop, b_all + c0 * n, n, c, ops, co, x0_all ? x0_all + c0 * n : nullptr);
        std::copy(r.solutions.begin(), r.solutions.end(), all.solutions.begin() + c0 * n);
        all.residual_norms.insert(all.residual_norms.end(), r.residual_norms.begin(), r.residual_norms.end());
        all.column_iterations.insert(all.column_iterations.end(), r.column_iterations.begin(),
                                     r.column_iterations.end());
        all.iterations = std::max(all.iterations, r.iterations);
        if (c0 == 0 || r.precision != "fp64") all.precision = r.precision;
        all.operator_applies += r.operator_applies;
        all.history.insert(all.history.end(), r.history.begin(), r.history.end());
        if (r.status != SolverStatus::converged && all.status == SolverStatus::converged) {
          all.status = r.status;
          all.reason = format("right-hand sides %lld-%lld: ", (long long)c0, (long long)(c0 + c - 1)) + r.reason;
        }
      }
      merge = nullptr;
      o.batch_note = format("right-hand sides solved in %lld batches of up to %lld columns to fit "
                            "the GPU memory", (long long)((nrhs + batch - 1) / batch), (long long)batch);
    }
    if (perm) scatter(out.sr.solutions);
    out.wanted = nrhs;
    o.precision = out.sr.precision;
    if (cheb) out.sr.operator_applies += cheb->columns_applied();  // the polynomial's products too
    o.operator_applies = out.sr.operator_applies;
    finish_checkpoints();
    o.solve_s = ts.seconds();
    o.solve_steps = cg_solve_steps(out.sr, o.solve_s);
  }
  return out;
}

}  // namespace

JobOutcome run_job(const JobSpec& s, MatrixCache& cache, const ProgressFn& progress,
                   const std::string& command, bool defer_write, int gpu) {
  Timer total;
  trace_mark("job: start");
  JobOutcome o;
  validate_job(s);
  check_job_outputs(s);
  // The CUDA context and the dense ops' library handles (cuBLAS, cuSOLVER: 0.1–0.5 s) come up on
  // a helper thread while this one reads the matrix.
  // The helper uses this process's GPU (a rank of `mpirun ... batch` runs on its own, chosen and
  // its context made on a thread started before MPI_Init: selected_gpu() waits for that here).
  const bool on_gpu = s.device != "cpu";
  auto job_gpu = [gpu] { return gpu >= 0 ? gpu : selected_gpu(); };
  std::future<Backend> warm = std::async(std::launch::async, [&cache, device = s.device, on_gpu, job_gpu] {
    if (on_gpu) use_gpu(job_gpu());
    const Backend b = resolve_backend(device);
    trace_mark("start-up: backend resolved");
    if (b == Backend::cuda) {
      DenseBlockOps& ops = cache.ops(b);
      trace_mark("start-up: context and dense ops' handles");
      warm_up(ops);
      trace_mark("start-up: warm-up done");
    }
    return b;
  });
  // eigs: the driver (solvers/eigs/) resolves auto and reports what ran.
  o.method = s.task == "solve" ? "block_cg" : s.method;
  const Precision prec = parse_storage_precision(s.precision);

  bool fresh = false;
  std::shared_ptr<const PreparedMatrix> A;
  try {
    A = cache.get(s.matrix, &fresh);
  } catch (...) {
    warm.wait();
    throw;
  }
  trace_mark("job: matrix read and checked");
  Timer init_wait;
  Backend backend = warm.get();
  if (on_gpu) use_gpu(job_gpu());  // this thread's too (done: no wait)
  o.init_s = init_wait.seconds();
  trace_mark("job: CUDA context and handles ready");
  if (backend == Backend::cpu && prec != Precision::fp64 && prec != Precision::fp32)
    throw UsageError(std::string("--precision ") + s.precision +
                     " needs the GPU (the CPU operator stores fp64 or fp32)");
  if (fresh) o.read_s += A->read_seconds, o.preprocess_s += A->check_seconds;
  const std::int64_t n = A->a.nrows;
  o.n = n;
  std::shared_ptr<const PreparedMatrix> B;
  if (!s.mass.empty()) {
    B = cache.get(s.mass, &fresh);
    if (fresh) o.read_s += B->read_seconds, o.preprocess_s += B->check_seconds;
    if (B->a.nrows != n)
      throw InvalidArgument(format("mass matrix %s is %lld x %lld but %s is %lld x %lld",
                                   s.mass.c_str(), (long long)B->a.nrows, (long long)B->a.nrows,
                                   s.matrix.c_str(), (long long)n, (long long)n));
    for (std::int64_t i = 0; i < n; ++i)
      if (!(B->diagonal[i] > 0))
        throw InvalidArgument(format("mass matrix %s is not positive definite (b_ii = %g at row "
                                     "%lld)", s.mass.c_str(), B->diagonal[i], (long long)i + 1));
  }
  std::vector<double> rhs;
  std::int64_t nrhs = 0;
  if (s.task == "eigs") {
    if (s.k >= n)
      throw InvalidArgument(format("k = %lld is too large for %s with n = %lld (need k < n)",
                                   (long long)s.k, s.matrix.c_str(), (long long)n));
  } else {
    Timer tr;
    rhs = load_rhs(s.rhs, n, &nrhs, s.seed, /*materialize=*/false);
    o.read_s += tr.seconds();
    // A symmetric matrix with a_ii <= 0 is not positive definite (e_iᵀ A e_i = a_ii).
    for (std::int64_t i = 0; i < n; ++i)
      if (!(A->diagonal[i] > 0))
        throw InvalidArgument(format("%s is not positive definite (a_ii = %g at row %lld): block "
                                     "CG needs a symmetric positive definite matrix",
                                     s.matrix.c_str(), A->diagonal[i], (long long)i + 1));
  }

  // Warm start (--start / --x0), read and checked before any solving.
  StartBlock start;  // (shared with the solver's options: never copied)
  if (!s.start.empty()) {
    Timer tr;
    const bool eigs = s.task == "eigs";
    const auto [file, dataset] = split_start(s.start, eigs ? "eigenvectors" : "solution");
    std::int64_t cols = 0;
    start = read_columns(file, dataset, n, eigs ? "start vectors" : "initial guesses", &cols);
    if (!eigs && cols != nrhs)
      throw InputError(file, 0, format("/%s: %lld initial guesses for %lld right-hand sides (--x0 "
                                       "needs one per right-hand side)", dataset.c_str(),
                                       (long long)cols, (long long)nrhs));
    o.read_s += tr.seconds();
  }
  // A checkpoint whose writer was killed (SIGKILL) left CHECKPOINT.tmp-XXXXXX: removed first.
  if (!s.checkpoint.empty()) remove_stale_temporaries(s.checkpoint);
  if (!s.resume_from.empty()) {
    Timer tr;
    std::int64_t cols = 0;
    start = read_checkpoint(s, *A, &cols, &o.resume_note);
    if (s.task == "solve" && cols != nrhs)
      throw InputError(s.resume_from, 0, format("the checkpoint holds %lld columns for %lld right-hand "
                                                "sides", (long long)cols, (long long)nrhs));
    o.read_s += tr.seconds();
  }

  // GPU memory: the matrices must fit; the solver's blocks are fitted to what is left (eigs: the
  // driver shrinks its basis or width; solve: batches of right-hand sides), and only when even
  // the minimum does not fit is the run refused, with the sizes (or falls back to the CPU when
  // asked).
  std::string fallback_note;
  std::int64_t fit_columns = 0;
  if (backend == Backend::cuda) {
    double matrices = matrix_device_bytes(s, A->a) + (B ? matrix_device_bytes(s, B->a) : 0);
    double need = device_bytes_needed(s, A->a, nrhs) + (B ? matrix_device_bytes(s, B->a) : 0);
    const double avail = static_cast<double>(device_free_bytes());
    // Tight (a shared GPU, a cap), block CG: the matrices at what their planned kernels keep
    // (the cost model's plan, predict_device_bytes) instead of the rough two copies, plus the
    // polynomial preconditioner's fp32 copy of A when asked for. (eigs keeps the rough count:
    // its driver's dense workspace and the re-check's blocks live in that margin.)
    if (need > 0.9 * avail && s.task == "solve" && s.reorder == "none") {
      OperatorOptions oo;
      oo.precision = prec;
      oo.plan_by_trial = false;
      const double rough = matrices;
      matrices = static_cast<double>(predict_device_bytes(A->a, plan_spmm(A->a, Backend::cuda, oo)));
      if (B) matrices += static_cast<double>(predict_device_bytes(B->a, plan_spmm(B->a, Backend::cuda, oo)));
      if (s.precond == "chebyshev")  // (auto takes Jacobi when tight)
        matrices += 8.0 * static_cast<double>(A->a.nnz()) + 8.0 * static_cast<double>(n + 1);
      matrices = std::min(matrices, rough);
      need += matrices - rough;
    }
    const double cols = n > 0 ? std::floor((0.9 * avail - matrices) / (8.0 * static_cast<double>(n))) : 0;
    if (need > 0.9 * avail && cols >= (s.task == "solve" ? 9.0 : 1.0)) {
      fit_columns = static_cast<std::int64_t>(cols);
      need = matrices + 8.0 * static_cast<double>(n) * (s.task == "solve" ? 9.0 : 1.0);
    }
    if (need > 0.9 * avail) {
      const std::string msg = format("%s needs about %s of GPU memory, %s free on %s",
                                     s.matrix.c_str(), format_bytes(need).c_str(),
                                     format_bytes(avail).c_str(), device_name().c_str());
      if (!s.cpu_fallback)
        throw Error(msg + " (use --device cpu, or --cpu-fallback to fall back automatically)");
      fallback_note = msg + "; ran on the CPU (--cpu-fallback)";
      backend = Backend::cpu;
    }
  }

  Solved r;
  trace_mark("job: solve starts");
  if (backend == Backend::cuda) reset_device_peak();
  try {
    r = solve_on(s, backend, cache, A, B, rhs, nrhs, start, progress, o, fit_columns);
  } catch (const OutOfDeviceMemory& e) {
    // The driver's refusal (even its smallest basis/width does not fit: bytes of those blocks)
    // or a failed allocation (bytes of that request).
    const std::string msg =
        format("%s: not enough GPU memory on %s (%s free; %s)", s.matrix.c_str(), device_name().c_str(),
               format_bytes(static_cast<double>(device_free_bytes())).c_str(), e.what());
    if (!s.cpu_fallback || backend != Backend::cuda)
      throw Error(msg + " (use --device cpu, or --cpu-fallback)");
    fallback_note = msg + "; ran on the CPU (--cpu-fallback)";
    r = solve_on(s, Backend::cpu, cache, A, B, rhs, nrhs, start, progress, o);
  }

  // Peak of tcsolve's own device allocations during the solve (operators, blocks, workspaces;
  // not the CUDA libraries' internal buffers), core/device.hpp.
  if (backend == Backend::cuda) o.peak_device_bytes = static_cast<double>(device_peak_bytes());
  // Under a device-memory cap: the process's whole peak, the rest of its footprint (context,
  // libraries; NVML) plus tcsolve's peak, which the cap covers together.
  if (backend == Backend::cuda && device_memory_limit() > 0 && device_memory_limit_covers_process()) {
    const DeviceFootprint f = device_footprint();
    if (f.known) o.process_device_bytes = static_cast<double>(f.other) + o.peak_device_bytes;
  }
  const SolverStatus status = r.eigs ? r.er.status : r.sr.status;
  o.status = to_string(status);
  o.message = r.eigs ? r.er.reason : r.sr.reason;
  if (!r.eigs && status == SolverStatus::breakdown)
    o.message = s.matrix + " is not positive definite (block CG breakdown: " + o.message + ")";
  if (!o.batch_note.empty()) o.message = o.message.empty() ? o.batch_note : o.message + "; " + o.batch_note;
  if (!o.precond_note.empty()) o.message = o.message.empty() ? "preconditioner: " + o.precond_note
                                                             : o.message + "; preconditioner: " + o.precond_note;
  if (!fallback_note.empty()) o.message = o.message.empty() ? fallback_note : o.message + "; " + fallback_note;
  if (!o.resume_note.empty()) o.message = o.message.empty() ? o.resume_note : o.message + "; " + o.resume_note;
  if (!o.checkpoint_note.empty())
    o.message = o.message.empty() ? o.checkpoint_note : o.message + "; " + o.checkpoint_note;
  o.iterations = r.eigs ? r.er.iterations : r.sr.iterations;
  o.residuals = r.eigs ? r.er.residual_norms : r.sr.residual_norms;
  o.values = r.er.values;
  o.column_iterations = r.sr.column_iterations;
  for (double v : o.residuals) o.max_residual = std::max(o.max_residual, v);
  const std::vector<IterationRecord>& history = r.eigs ? r.er.history : r.sr.history;

  trace_mark("job: solved");
  Timer tw;
  if (!s.out.empty()) {
    auto af = std::make_shared<AtomicFile>(s.out);
    trace_mark("write: temporary file");
    {
      // The datasets' bytes (vectors or solutions dominate): small results are built in memory.
      const double data_bytes =
          8.0 * static_cast<double>(n) *
              static_cast<double>(r.eigs ? r.er.values.size() : static_cast<std::size_t>(nrhs)) +
          1e6;
      Hdf5File f = Hdf5File::create(af->temp_path(), data_bytes);
      trace_mark("write: file created");
      ResultRecord rec = job_record(s, o, command);
      rec.a_norm = r.er.a_norm;
      rec.b_norm = r.er.b_norm;
      rec.residual_bounds = r.er.residual_bounds;
      rec.matrix_checksum = A->checksum();
      if (B) rec.mass_checksum = B->checksum();
      rec.nnz = A->a.nnz();
      rec.right_hand_sides = nrhs;
      if (r.eigs) rec.vectors = std::move(r.er.vectors);
      else rec.vectors = std::move(r.sr.solutions);
      rec.history = history;
      write_result(rec, f, [&tw] { return tw.seconds(); });
      trace_mark("write: datasets");
      if (defer_write && f.in_memory()) {
        // The bytes, fsync and rename later (no HDF5 call left): the caller's finish_write.
        auto image = std::make_shared<const FileImage>(f.take_image());
        trace_mark("write: image built");
        o.finish_write = [af, image] {
          write_file_image(af->temp_path(), *image);
          af->commit();
        };
      } else {
        f.close();
        trace_mark("write: closed");
      }
    }
    if (!o.finish_write) af->commit();
    o.wrote_output = true;
  }
  if (!s.plot.empty())
    write_convergence_svg(s.plot, history, static_cast<std::size_t>(r.wanted),
                          format("tcsolve %s %s: %s", s.task.c_str(), o.method.c_str(),
                                 s.matrix.c_str()));
  o.write_s = tw.seconds();
  o.seconds = total.seconds() - o.init_s;
  trace_mark("job: written");
  return o;
}

void write_failure_file(const JobSpec& s, const std::string& error, const std::string& command) {
  if (s.out.empty()) return;
  AtomicFile af(s.out);
  {
    Hdf5File f = Hdf5File::create(af.temp_path());
    ResultRecord rec = job_record(s, JobOutcome(), command);
    rec.status = "failed";
    rec.error = error;
    write_result(rec, f);
    f.close();
  }
  af.commit();
}

std::string checkpoint_path_for(const std::string& out) {
  for (const char* ext : {".h5", ".hdf5"})
    if (ends_with(out, ext)) return out.substr(0, out.size() - std::strlen(ext)) + ".checkpoint.h5";
  return out + ".checkpoint.h5";
}

bool checkpoint_fits(const JobSpec& s, const std::string& file, std::string& why) {
  try {
    Hdf5File f = Hdf5File::open(file);
    if (!f.has_attr("kind") || f.attr_string("kind") != "tcsolve checkpoint") {
      why = "not a tcsolve checkpoint";
      return false;
    }
    if (f.attr_string("job_options") != job_options_string(s)) {
      why = "written for other options or inputs";
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
}

bool checkpoint_is_own(const JobSpec& s, const std::string& file) {
  namespace fs = std::filesystem;
  try {
    Hdf5File f = Hdf5File::open(file);
    if (!f.has_attr("kind") || f.attr_string("kind") != "tcsolve checkpoint") return false;
    if (!f.has_attr("job") || !f.has_attr("out"))  // (written before checkpoints named their job)
      return f.has_attr("job_options") && f.attr_string("job_options") == job_options_string(s);
    std::error_code e1, e2;
    return f.attr_string("job") == s.name && !s.out.empty() &&
           fs::weakly_canonical(f.attr_string("out"), e1) == fs::weakly_canonical(s.out, e2) && !e1 && !e2;
  } catch (const std::exception&) {
    return false;
  }
}

std::string job_options_string(const JobSpec& s) {
  std::string o = "task=" + s.task + ";matrix=" + s.matrix + ";mass=" + s.mass + ";rhs=" + s.rhs;
  if (s.task == "eigs")
    o += format(";k=%lld;which=%s;method=%s;sigma=%s;conv=%s;no_factor=%d;no_recheck=%d;certify=%d;block_size=%lld",
                (long long)s.k, s.which.c_str(), s.method.c_str(), s.sigma.c_str(), s.conv.c_str(),
                int(s.no_factor), int(s.no_recheck), int(s.certify), (long long)s.block_size);
  o += format(";tol=%.17g;maxiter=%lld;precision=%s;device=%s;cpu_fallback=%d;precond=%s;reorder=%s;seed=%llu",
              s.tol, (long long)s.maxiter, s.precision.c_str(), s.device.c_str(), int(s.cpu_fallback),
              s.precond.c_str(), s.reorder.c_str(), (unsigned long long)s.seed);
  if (s.precond_degree > 0) o += format(";precond_degree=%d", s.precond_degree);
  // (only when given: results written before warm starts existed keep standing)
  if (!s.start.empty()) o += ";start=" + s.start;
  return o;
}

namespace {
// "path:size:mtime_ns" of a file, or "path:missing".
std::string file_stamp(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec, ec2;
  const auto size = fs::file_size(path, ec);
  const auto t = fs::last_write_time(path, ec2);
  if (ec || ec2) return path + ":missing";
  return path + ":" + std::to_string(size) + ":" +
         std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

std::string rhs_file(const JobSpec& s) {
  if (s.task != "solve" || s.rhs.rfind("random:", 0) == 0 || s.rhs.rfind(':') == std::string::npos) return {};
  return s.rhs.substr(0, s.rhs.rfind(':'));
}
}  // namespace

std::string input_stamps(const JobSpec& s) {
  std::string o;
  for (const std::string* spec : {&s.matrix, &s.mass}) {
    const std::string f = spec->empty() ? std::string() : matrix_spec_file(*spec);
    if (!f.empty()) o += (o.empty() ? "" : ";") + file_stamp(f);
  }
  if (!rhs_file(s).empty()) o += (o.empty() ? "" : ";") + file_stamp(rhs_file(s));
  return o;
}

bool stored_result_stands(const JobSpec& s, MatrixCache& cache, std::string& why) {
  if (!result_is_complete(s.out)) {
    why = "no complete result";
    return false;
  }
  std::string stored_options, stored_stamps, matrix_sum, mass_sum;
  try {
    Hdf5File f = Hdf5File::open(s.out);
    if (!f.has_attr("job_options") || !f.has_attr("input_stamps")) {
      why = "the stored result does not record its options (written by an older tcsolve)";
      return false;
    }
    stored_options = f.attr_string("job_options");
    stored_stamps = f.attr_string("input_stamps");
    if (f.has_attr("matrix_checksum")) matrix_sum = f.attr_string("matrix_checksum");
    if (f.has_attr("mass_checksum")) mass_sum = f.attr_string("mass_checksum");
  } catch (const Error& e) {
    why = std::string("the stored result cannot be read: ") + e.what();
    return false;
  }
  if (stored_options != job_options_string(s)) {
    why = "the job's options changed since the stored result";
    return false;
  }
  if (stored_stamps == input_stamps(s)) return true;
  // A stamp changed: the matrix and mass by content; a right-hand-side file is not checksummed.
  if (!rhs_file(s).empty() && stored_stamps.find(file_stamp(rhs_file(s))) == std::string::npos) {
    why = "the right-hand-side file " + rhs_file(s) + " changed since the stored result";
    return false;
  }
  try {
    if (matrix_sum.empty() || !cache.get(s.matrix)->has_checksum(matrix_sum)) {
      why = "the matrix " + s.matrix + " changed since the stored result";
      return false;
    }
    if (!s.mass.empty() && (mass_sum.empty() || !cache.get(s.mass)->has_checksum(mass_sum))) {
      why = "the mass matrix " + s.mass + " changed since the stored result";
      return false;
    }
  } catch (const std::exception& e) {
    why = std::string("an input cannot be read: ") + e.what();
    return false;
  }
  return true;
}

bool result_is_complete(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || !Hdf5File::is_hdf5(path)) return false;
  try {
    Hdf5File f = Hdf5File::open(path);
    return f.has_attr("status") && f.attr_string("status") != "failed" && f.attr_string("status") != "interrupted";
  } catch (const Error&) {
    return false;
  }
}

}  // namespace tcsolve::app
