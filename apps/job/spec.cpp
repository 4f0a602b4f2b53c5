#include "apps/job/spec.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "io/matrix_io.hpp"
#include "solvers/krylov/gmres_solver.hpp"

namespace tcsolve::app {

namespace {

// An option's values and their names, in the order the error message lists them.
template <class E>
using Choices = std::vector<std::pair<E, const char*>>;

template <class E>
const char* name_of(E v, const Choices<E>& c) {
  for (const auto& [x, n] : c)
    if (x == v) return n;
  return "?";
}

// The value named `s`, or UsageError "--OPTION 's': expected a, b or c".
template <class E>
E parse_choice(const char* option, const std::string& s, const Choices<E>& c) {
  std::string list;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (s == c[i].second) return c[i].first;
    list += (i == 0 ? "" : i + 1 == c.size() ? " or " : ", ") + std::string(c[i].second);
  }
  throw UsageError(std::string(option) + " '" + s + "': expected " + list);
}

const Choices<ConvTest> kConv = {{ConvTest::rel, "rel"}, {ConvTest::norm, "norm"}, {ConvTest::abs, "abs"}};
const Choices<DeviceChoice> kDevice = {
    {DeviceChoice::automatic, "auto"}, {DeviceChoice::cpu, "cpu"}, {DeviceChoice::cuda, "cuda"}};
const Choices<PrecisionChoice> kPrecision = {{PrecisionChoice::automatic, "auto"}, {PrecisionChoice::fp64, "fp64"},
                                             {PrecisionChoice::fp32, "fp32"}, {PrecisionChoice::fp16, "fp16"},
                                             {PrecisionChoice::bf16, "bf16"}};
const Choices<Precond> kEigsPrecond = {
    {Precond::automatic, "auto"}, {Precond::none, "none"}, {Precond::jacobi, "jacobi"}, {Precond::factor, "factor"}};
const Choices<Precond> kSolvePrecond = {{Precond::automatic, "auto"}, {Precond::jacobi, "jacobi"},
                                        {Precond::chebyshev, "chebyshev"}, {Precond::poly, "poly"},
                                        {Precond::none, "none"}};
const Choices<Reordering> kReorder = {
    {Reordering::automatic, "auto"}, {Reordering::none, "none"}, {Reordering::symmetric, "symmetric"}};
const Choices<PartitionMethod> kPartition = {
    {PartitionMethod::automatic, "auto"}, {PartitionMethod::contiguous, "contiguous"}, {PartitionMethod::metis, "metis"}};

// A string option whose notifier stores the parsed value (po::notify runs it).
template <class F>
po::typed_value<std::string>* parsed(const char* value_name, F store) {
  return po::value<std::string>()->value_name(value_name)->notifier(store);
}

// A parse that throws InvalidArgument ("which 'x': expected ...") as a UsageError naming the
// option ("--which 'x': expected ...").
template <class T>
T parsed_as_usage(T (*parse)(const std::string&), const std::string& v) {
  try {
    return parse(v);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--") + e.what());
  }
}

const std::string& method_list() {
  static const std::string s = [] {
    std::string r;
    for (const auto& m : eigs_method_names()) r += (r.empty() ? "" : "|") + m;
    return r;
  }();
  return s;
}

void add_eigs_options(po::options_description& opts, JobSpec& s) {
  opts.add_options()
      ("mass", po::value(&s.mass)->value_name("MATRIX"),
       "mass matrix B (symmetric positive definite): solve A x = lambda B x")
      ("k", po::value(&s.k)->value_name("K"), "number of eigenpairs (default 6)")
      ("which", parsed("W", [&s](const std::string& v) { s.which = parsed_as_usage(parse_which, v); }),
       "which eigenvalues: smallest (default), largest, nearest (the k closest to --sigma), "
       "largest_magnitude (the k largest |lambda|: one end, or both ends merged), smallest_magnitude "
       "(the k smallest |lambda|: nearest 0 by shift-invert, else an end that is one-signed, else "
       "the folded operator A B^-1 A), both_ends (ceil(k/2) largest and floor(k/2) smallest); "
       "also SciPy's LA, SA, LM, SM, BE (any case)")
      ("sigma", parsed("S", [&s](const std::string& v) {
         char* end = nullptr;
         const double x = std::strtod(v.c_str(), &end);
         if (!v.empty() && (*end != '\0' || !std::isfinite(x)))
           throw UsageError("--sigma '" + v + "': expected a finite number");
         s.sigma = v, s.sigma_value = x;
       }),
       "shift-invert around S (SciPy's sigma): Lanczos on (A - S B)^-1 B through a sparse "
       "factorization; smallest needs S below the spectrum")
      ("method", parsed(method_list().c_str(), [&s](const std::string& v) { s.method = parsed_as_usage(parse_eigs_method, v); }),
       "eigensolver (default auto: the plan with the fewest predicted seconds among a dense "
       "solve, Chebyshev-filtered subspace iteration, shift-invert Lanczos through a sparse "
       "factorization and LOBPCG; the output says which and why)")
      ("conv", parsed("rel|norm|abs", [&s](const std::string& v) { s.conv = parse_choice("--conv", v, kConv); }),
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
       "The answer is tested as from a random start")
      ("constraints", po::value(&s.constraints)->value_name("FILE.mtx|FILE.h5[:DATASET]"),
       "constraints Y (SciPy lobpcg's Y): eigenpairs in the B-orthogonal complement of these p "
       "columns, e.g. the eigenvectors of an earlier result (its /eigenvectors, or a DATASET "
       "[p][n]) to find the next ones; a Matrix Market n x p file (array or coordinate) too. For "
       "the ends (smallest, largest, largest_magnitude, both_ends), by an iterative method");
}

// svds: the triplets and the Krylov space (tol, maxiter, seed, device: add_common_options).
void add_svds_options(po::options_description& opts, JobSpec& s) {
  opts.add_options()
      ("k", po::value(&s.k)->value_name("K"), "number of singular triplets, largest first (default 6)")
      ("center", po::bool_switch(&s.center), "subtract the column means implicitly (PCA)")
      ("scale", po::bool_switch(&s.scale),
       "divide each column by its standard deviation (unit variance, as sklearn's StandardScaler; "
       "constant columns are left as they are): a scaled copy of A; the result file holds the scales")
      ("block", po::value(&s.block_size)->value_name("B"), "block size (default 0: min(k, 16))")
      ("basis", po::value(&s.basis)->value_name("L"), "Krylov basis columns (default 0: automatic)")
      ("certify", po::bool_switch(&s.certify),
       "always count the singular values above the k-th by Sylvester's inertia of [0 A; A^T 0] - tau I "
       "(a sparse LDL^T; by default only where it is cheap; not with --center)")
      ("no-certify", po::bool_switch(&s.no_certify), "never count (see --certify)")
      ("no-recheck", po::bool_switch(&s.no_recheck),
       "skip the multiplicity re-check where no count is made (a short Krylov run from fresh random "
       "vectors on A with the found vectors deflated; verification: none)");
}

void add_solve_options(po::options_description& opts, JobSpec& s) {
  opts.add_options()
      ("rhs", po::value(&s.rhs)->value_name("FILE.h5:DATASET|random:S"),
       "right-hand sides: a dataset [s][n] (one row per right-hand side) or [n], or S random ones")
      ("x0", po::value(&s.start)->value_name("FILE.h5[:DATASET]"),
       "initial guess: an earlier result's /solution, or a DATASET [s][n] with one row per "
       "right-hand side (default: zero)")
      ("method", parsed("auto|cg|minres|gmres|direct|lsqr",
                        [&s](const std::string& v) { s.solve_method = parsed_as_usage(parse_solve_method, v); }),
       "solver (default auto: by the matrix's kind, block CG for symmetric matrices with a "
       "positive diagonal, MINRES for symmetric indefinite, GMRES for unsymmetric, with a sparse "
       "factorization (CHOLMOD, MUMPS, UMFPACK) where it is predicted cheaper or the iteration "
       "fails; rectangular matrices: least squares by SuiteSparseQR; the output says which and why)")
      ("restart", po::value(&s.restart)->value_name("M"), "GMRES(M): basis vectors per cycle (default 30)");
}

// --device and --seed, every task's.
void add_device_seed(po::options_description& opts, JobSpec& s) {
  opts.add_options()
      ("device", parsed("auto|cpu|cuda", [&s](const std::string& v) { s.device = parse_choice("--device", v, kDevice); }),
       "where to run (default auto: the GPU when present)")
      ("seed", po::value(&s.seed)->value_name("N"), "seed of the random start block / right-hand sides (default 1)");
}

void add_svds_common_options(po::options_description& opts, JobSpec& s) {
  opts.add_options()
      ("tol", po::value(&s.tol)->value_name("T"),
       "residual test of each triplet, relative to the largest singular value (default 1e-8)")
      ("maxiter", po::value(&s.maxiter)->value_name("R")->notifier([](std::int64_t v) {
         if (v < 1) throw UsageError("--maxiter " + std::to_string(v) + ": must be at least 1");
       }),
       "restart limit (default 1000)");
  add_device_seed(opts, s);
}

void add_common_options(po::options_description& opts, JobSpec& s, bool eigs) {
  opts.add_options()
      ("tol", po::value(&s.tol)->value_name("T"),
       eigs ? "tolerance of the convergence test (--conv; default 1e-8)"
            : "convergence: |b - A x| <= T |b| for every column (default 1e-8)")
      ("maxiter", po::value(&s.maxiter)->value_name("M"),
       eigs ? "iteration limit (default 2000)" : "iteration limit (default 5000)")
      ("precond", parsed(eigs ? "auto|none|jacobi|factor" : "auto|jacobi|chebyshev|poly|none",
                         [&s, eigs](const std::string& v) {
                           s.precond = parse_choice("--precond", v, eigs ? kEigsPrecond : kSolvePrecond);
                         }),
       eigs ? "LOBPCG preconditioner (default auto: the factorization of A - sigma B for the "
              "smallest when one is made, else jacobi)"
            : "preconditioner (default auto: for block CG chebyshev on the GPU for matrices of at "
              "least 131072 rows with short rows and a constant diagonal, else jacobi; chebyshev: a "
              "Chebyshev polynomial in A of a degree chosen from Lanczos bounds of the spectrum, "
              "reported in the result; for GMRES poly (in D^-1 A where the diagonal varies), for MINRES "
              "poly on the GPU where the diagonal is constant, else jacobi; poly: the GMRES polynomial "
              "of A, on the right, from a short Arnoldi run)")
      ("precond-degree", po::value(&s.precond_degree)->value_name("M"),
       "solve --precond chebyshev|poly: the polynomial's degree, M products with A per application "
       "(default 0: chebyshev from the spectral bounds, poly 40 for GMRES and 15 for MINRES)")
      ("partition", parsed("auto|contiguous|metis",
                           [&s](const std::string& v) { s.partition = parse_choice("--partition", v, kPartition); }),
       "under mpirun: how the rows are split over the ranks (default auto: METIS k-way when it "
       "cuts fewer edges than contiguous ranges and the matrix is read whole; HDF5 files and the "
       "stencil generators are read by ranges)")
      ("reorder", parsed("auto|none|symmetric", [&s](const std::string& v) { s.reorder = parse_choice("--reorder", v, kReorder); }),
       "symmetric: iterate in the basis of a symmetric Jaccard/RCM reordering B = P A P^T (vectors "
       "permuted once at entry and exit); pays for matrices stored in a poor (e.g. scrambled) order, "
       "costs one reordering at setup (default auto: symmetric for eigs on the CPU at 32768 rows and more "
       "whose order scatters the product's reads of X, none elsewhere)")
      ("precision", parsed("auto|fp64|fp32|fp16|bf16",
                           [&s](const std::string& v) { s.precision = parse_choice("--precision", v, kPrecision); }),
       "auto (default): A in fp64, and eigs' Chebyshev filter on fp32 blocks where that is safe "
       "(the precision ladder, climbing to fp64; every answer checked in fp64 on the given A; "
       "reported as \"precision\"); fp64: fp64 throughout; fp32/fp16/bf16: the iteration applies "
       "A rounded to that precision (fp16/bf16 need the GPU)")
      ("cpu-fallback", po::bool_switch(&s.cpu_fallback),
       "run on the CPU when the GPU has too little memory (default: fail and say how much is needed)");
  add_device_seed(opts, s);
}

void add_output_options(po::options_description& opts, JobSpec& s, Task task) {
  const char* state = task == Task::eigs ? "the solver's state (its Ritz block; Lanczos: the Ritz vectors kept at a restart)"
                      : task == Task::svds ? "the iteration's state (the right basis kept at a thick restart)"
                                           : "the iterate X";
  opts.add_options()
      ("checkpoint", po::value(&s.checkpoint)->value_name("FILE.h5"),
       (std::string("write ") + state + " to FILE.h5 atomically every --checkpoint-every seconds; continue a "
        "stopped or killed run with --resume-from FILE.h5").c_str())
      ("checkpoint-every", po::value(&s.checkpoint_every)->value_name("SECONDS"),
       "seconds between checkpoints (default 60)")
      ("resume-from", po::value(&s.resume_from)->value_name("FILE.h5"),
       "continue from a checkpoint of the same matrix (and right-hand sides): the answer is tested "
       "as from a fresh start")
      (task == Task::svds ? "out,o" : "out", po::value(&s.out)->value_name("FILE.h5"),
       task == Task::svds ? "write U, s, Vt (and the PCA outputs) to FILE.h5 (atomically; docs/hdf5-schema.md)"
                          : "write the result (HDF5, atomically; docs/hdf5-schema.md)")
      ("plot", po::value(&s.plot)->value_name("FILE.svg"),
       task == Task::svds ? "write the singular value spectrum with both residuals of each triplet (SVG)"
                          : "write a convergence plot (SVG)");
}

void validate_k(const JobSpec& s) {
  if (s.k < 1) throw UsageError(format("--k %lld: must be at least 1", (long long)s.k));
}

// The eigs options that contradict one another or need a shift.
void validate_eigs(const JobSpec& s) {
  validate_k(s);
  if (s.block_size < 0) throw UsageError("--block-size must be positive");
  if (s.which == Which::nearest && s.sigma.empty())
    throw UsageError("--which nearest needs --sigma S (the k eigenvalues closest to S)");
  if (!s.sigma.empty() && (s.which == Which::smallest_magnitude || s.which == Which::both_ends))
    throw UsageError(std::string("--which ") + which_name(s.which) + " with --sigma: the selection is by lambda, "
                     "not by SciPy's 1/(lambda - sigma); use --which nearest (or largest_magnitude) with --sigma");
  if (!s.constraints.empty()) {
    if (!s.sigma.empty() || s.which == Which::nearest || s.which == Which::smallest_magnitude)
      throw UsageError("--constraints serve the ends (--which smallest, largest, largest_magnitude, both_ends), "
                       "not --sigma, nearest or smallest_magnitude (the constrained problem cannot be factored)");
    if (s.method == EigsMethod::dense || s.precond == Precond::factor || s.certify)
      throw UsageError(std::string(s.method == EigsMethod::dense ? "--method dense" : s.certify ? "--certify" : "--precond factor") +
                       " cannot be combined with --constraints (the constrained problem is an operator, not a matrix)");
  }
  if (s.no_factor && (!s.sigma.empty() || s.precond == Precond::factor || s.certify))
    throw UsageError(std::string(!s.sigma.empty() ? "--sigma" : s.certify ? "--certify" : "--precond factor") +
                     " needs a factorization: it cannot be combined with --no-factor");
  if (s.certify && s.no_recheck) throw UsageError("--certify and --no-recheck contradict each other");
}

// The files a job writes and continues from.
void validate_files(const JobSpec& s) {
  if (!s.checkpoint.empty() && !ends_with(s.checkpoint, ".h5") && !ends_with(s.checkpoint, ".hdf5"))
    throw UsageError("--checkpoint '" + s.checkpoint + "': the checkpoint file must end in .h5 or .hdf5");
  if (!(s.checkpoint_every > 0) || !std::isfinite(s.checkpoint_every))
    throw UsageError(format("--checkpoint-every %g: expected a positive number of seconds", s.checkpoint_every));
  if (!s.resume_from.empty() && !s.start.empty())
    throw UsageError(std::string("--resume-from and ") + (s.eigs() ? "--start" : "--x0") +
                     " both give the start: use one");
  if (!s.checkpoint.empty() && s.checkpoint == s.out)
    throw UsageError("--checkpoint and --out name the same file '" + s.out + "'");
  if (!s.out.empty() && !ends_with(s.out, ".h5") && !ends_with(s.out, ".hdf5"))
    throw UsageError("--out '" + s.out + "': the result file is HDF5 and must end in .h5 or .hdf5");
  if (!s.plot.empty() && !ends_with(s.plot, ".svg"))
    throw UsageError("--plot '" + s.plot + "': the plot file must end in .svg");
}

}  // namespace

const char* to_string(Task t) { return t == Task::eigs ? "eigs" : t == Task::svds ? "svds" : "solve"; }
const char* to_string(DeviceChoice d) { return name_of(d, kDevice); }
const char* to_string(PrecisionChoice p) { return name_of(p, kPrecision); }
const char* to_string(Precond p) {
  return p == Precond::chebyshev ? "chebyshev" : p == Precond::poly ? "poly" : name_of(p, kEigsPrecond);
}
const char* to_string(Reordering r) { return name_of(r, kReorder); }
const char* which_name(Which w) { return to_string(w); }

Task parse_task(const std::string& s) {
  if (s == "eigs") return Task::eigs;
  if (s == "solve") return Task::solve;
  if (s == "svds") return Task::svds;
  throw UsageError("task '" + s + "': expected eigs, solve or svds");
}

Precision JobSpec::storage() const {
  return precision == PrecisionChoice::automatic ? Precision::fp64 : parse_precision(to_string(precision));
}

void add_job_options(po::options_description& opts, JobSpec& s, Task task) {
  const bool eigs = task == Task::eigs;
  if (task == Task::svds) {
    add_svds_options(opts, s);
    add_svds_common_options(opts, s);
  } else {
    if (eigs) add_eigs_options(opts, s);
    else add_solve_options(opts, s);
    add_common_options(opts, s, eigs);
  }
  add_output_options(opts, s, task);
}

void validate_job(const JobSpec& s) {
  if (s.matrix.empty()) throw UsageError("no matrix given");
  if (s.eigs()) {
    validate_eigs(s);
  } else if (s.svds()) {
    validate_k(s);
    if (s.block_size < 0 || s.basis < 0) throw UsageError("--block and --basis must be ≥ 0");
    if (s.certify && s.no_certify) throw UsageError("--certify and --no-certify contradict each other");
    if (s.certify && s.center)
      throw UsageError("--certify counts the singular values of A itself; with --center the operator is "
                       "A - 1*mu^T, which is dense: drop one of the two");
  } else {
    if (s.rhs.empty()) throw UsageError("no right-hand sides given (--rhs FILE.h5:DATASET or random:S)");
    parse_rhs(s.rhs);
  }
  if (!(s.tol > 0 && s.tol < 1)) throw UsageError(format("--tol %g: expected 0 < T < 1", s.tol));
  if (s.maxiter < 0) throw UsageError("--maxiter must be positive");
  if (s.restart < 1 || s.restart > krylov::gmres::kMaxRestart)
    throw UsageError("--restart " + std::to_string(s.restart) + ": expected 1 to " +
                     std::to_string(krylov::gmres::kMaxRestart));
  if (!s.eigs() && s.precond == Precond::chebyshev && s.solve_method != SolveMethod::automatic &&
      s.solve_method != SolveMethod::cg)
    throw UsageError(std::string("--precond chebyshev is block CG's (not --method ") + to_string(s.solve_method) + ")");
  if (!s.eigs() && s.precond == Precond::poly && s.solve_method != SolveMethod::automatic &&
      s.solve_method != SolveMethod::gmres && s.solve_method != SolveMethod::minres)
    throw UsageError(std::string("--precond poly is GMRES's and MINRES's (not --method ") + to_string(s.solve_method) + ")");
  if (s.precond_degree < 0 || s.precond_degree > 1000)
    throw UsageError("--precond-degree " + std::to_string(s.precond_degree) + ": expected 0 (automatic) to 1000");
  if (s.precond == Precond::poly && s.precond_degree > krylov::gmres::kMaxRestart)
    throw UsageError("--precond-degree " + std::to_string(s.precond_degree) + ": the GMRES polynomial takes at most " +
                     std::to_string(krylov::gmres::kMaxRestart) + " (its roots come from as many Arnoldi steps)");
  if (s.precond_degree > 0 && !(!s.eigs() && (s.precond == Precond::chebyshev || s.precond == Precond::poly)))
    throw UsageError("--precond-degree is for `solve --precond chebyshev` and `solve --precond poly`");
  validate_files(s);
}

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

std::pair<std::string, std::string> split_start(const std::string& spec, const char* dataset) {
  if (ends_with(spec, ".h5") || ends_with(spec, ".hdf5")) return {spec, dataset};
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) return {spec, dataset};
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

std::string block_file(const std::string& spec) { return spec.empty() ? std::string() : split_start(spec, "").first; }

std::vector<std::string> job_input_files(const JobSpec& s) {
  std::vector<std::string> inputs;
  for (const std::string* spec : {&s.matrix, &s.mass})
    if (!spec->empty() && !matrix_spec_file(*spec).empty()) inputs.push_back(matrix_spec_file(*spec));
  if (!rhs_file(s).empty()) inputs.push_back(rhs_file(s));
  for (const std::string* spec : {&s.start, &s.constraints})
    if (!spec->empty()) inputs.push_back(block_file(*spec));
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

std::string job_options_string(const JobSpec& s) {
  std::string o = std::string("task=") + to_string(s.task) + ";matrix=" + s.matrix + ";mass=" + s.mass + ";rhs=" + s.rhs;
  if (s.svds())  // (the options svds has: the rest are not its)
    return o + format(";k=%lld;center=%d;block=%lld;basis=%lld;tol=%.17g;maxiter=%lld;device=%s;seed=%llu",
                      (long long)s.k, int(s.center), (long long)s.block_size, (long long)s.basis, s.tol,
                      (long long)s.max_iterations(), to_string(s.device), (unsigned long long)s.seed) +
           (s.certify ? ";certify=1" : s.no_certify ? ";certify=0" : "") + (s.scale ? ";scale=1" : "") +
           (s.no_recheck ? ";recheck=0" : "");  // (only when given)
  if (!s.eigs() && s.solve_method != SolveMethod::automatic) o += std::string(";method=") + to_string(s.solve_method);
  if (!s.eigs() && s.restart != 30) o += format(";restart=%d", s.restart);
  if (s.eigs())
    o += format(";k=%lld;which=%s;method=%s;sigma=%s;conv=%s;no_factor=%d;no_recheck=%d;certify=%d;block_size=%lld",
                (long long)s.k, which_name(s.which), to_string(s.method), s.sigma.c_str(), to_string(s.conv),
                int(s.no_factor), int(s.no_recheck), int(s.certify), (long long)s.block_size);
  o += format(";tol=%.17g;maxiter=%lld;precision=%s;device=%s;cpu_fallback=%d;precond=%s;reorder=%s;seed=%llu",
              s.tol, (long long)s.maxiter, to_string(s.precision), to_string(s.device), int(s.cpu_fallback),
              to_string(s.precond), to_string(s.reorder), (unsigned long long)s.seed);
  if (s.precond_degree > 0) o += format(";precond_degree=%d", s.precond_degree);
  // (only when given: results written before warm starts existed keep standing)
  if (!s.start.empty()) o += ";start=" + s.start;
  if (!s.constraints.empty()) o += ";constraints=" + s.constraints;
  return o;
}

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
  if (s.eigs() || s.rhs.rfind("random:", 0) == 0 || s.rhs.rfind(':') == std::string::npos) return {};
  return s.rhs.substr(0, s.rhs.rfind(':'));
}

std::string input_stamps(const JobSpec& s) {
  std::string o;
  for (const std::string* spec : {&s.matrix, &s.mass}) {
    const std::string f = spec->empty() ? std::string() : matrix_spec_file(*spec);
    if (!f.empty()) o += (o.empty() ? "" : ";") + file_stamp(f);
  }
  if (!rhs_file(s).empty()) o += (o.empty() ? "" : ";") + file_stamp(rhs_file(s));
  if (!s.constraints.empty()) o += (o.empty() ? "" : ";") + file_stamp(block_file(s.constraints));
  return o;
}

}  // namespace tcsolve::app
