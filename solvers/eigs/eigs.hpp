// The one call behind `tcsolve eigs` and the Python module's eigsh/lobpcg: k eigenpairs of
// A·x = λ·x or A·x = λ·B·x (A symmetric, B symmetric positive definite).
//
// eigs() runs the driver's steps (solvers/eigs/, one file each):
//   plan     (plan.cpp)        the method, the spectral transformation and the verification, chosen
//                              from predicted seconds (measured SpMM time, a spectral probe, the
//                              factorization's symbolic analysis, measured host rates); the chosen
//                              plan, its prediction and the best rejected plan are in `why`;
//   set up   (driver.cpp)      operators, the factorization when the plan has one;
//   solve    (runs.cpp)        Chebyshev, block Lanczos, LOBPCG, shift-invert Lanczos or dense;
//   verify   (pairs.cpp,       every returned pair's true residual ‖A·x − λ·B·x‖ tested with the
//             certificate.cpp,  chosen convergence test, then the set: the Sylvester certificate
//             recheck.cpp)      when asked (certify) or affordable (≤ 15 % of the solve), else a
//                              re-check built for cost;
//   finish   (driver.cpp)      wanted order, error bounds, status.
// A wrong answer must never be labelled converged:
//   status converged   every pair passed its true-residual test AND the set was verified
//                      (certified = yes, or the re-check found nothing missing, or a dense solve);
//   status unverified  every pair passed, but nothing verified that no eigenvalue (a further
//                      copy of a multiple one) is missing from the set (--no-recheck);
//   status not_converged / breakdown: as the solvers report (partial results kept).
//
// Convergence tests (SLEPc's names), on the true residual r = A·x − λ·B·x of B-normalized x:
//   rel   ‖r‖ ≤ tol·|λ|·‖B·x‖          (default; what ARPACK and SciPy users expect: ‖x‖ when B = I;
//                                       ‖B·x‖ keeps the test invariant under B → c·B; at λ ≈ 0,
//                                       |λ| ≤ u^(2/3)·‖A‖·‖B⁻¹‖ (ARPACK's ε^(2/3) scaled to the
//                                       problem), it asks for the attainable floor instead:
//                                       ‖r‖ ≤ 8u·(‖A‖ + |λ|·‖B‖)·‖x‖, so every copy of a zero
//                                       eigenvalue (components, rigid modes) passes at its floor,
//                                       its eigenvalue within 8u·‖A‖·‖B⁻¹‖; those pairs and the
//                                       floor are recorded (EigsResult::floor_pairs, test_floor))
//   norm  ‖r‖ ≤ tol·(‖A‖ + |λ|·‖B‖)·‖x‖
//   abs   ‖r‖ ≤ tol·‖x‖
// A residual is measured in double; a pair that fails is measured again in extended precision
// (λ and r), and a residual within the rounding error of its own computation,
// 10·u·‖|A||x| + |λ||B||x|‖, passes: no measurement can tell it from an exact pair's.
// Rounding floor: no iteration in double reaches residuals much below u·(‖A‖ + |λ|·‖B‖)·‖x‖; the
// solvers stop there. The planner foresees it (plan.hpp, floor_outlook): where the rel test at the
// wanted end lies below it, it prices the plans that can meet it (shift-invert, dense) whatever
// their ordering costs and says so. A pair whose test asks for less (rel with |λ| ≪ ‖A‖, e.g. the
// small eigenvalues of a stiffness matrix without shift-invert) escalates under auto (below) and
// otherwise ends not_converged with a reason that gives the accuracy reached and points to
// --conv norm or shift-invert.
// Escalation (--method auto only): when the chosen plan ends without convergence (the rounding
// floor, stagnation, its iteration limit, the filter's time budget), the driver goes on with the
// next plan that could succeed (EigsPlan::escalation, plan.hpp: shift-invert, dense, then the
// methods on A not yet run — these not after a stop at the floor), starting from the vectors
// found, each to its own iteration limit (EigsOptions::max_iterations applies to each run), until
// one converges or none is left: auto never ends not_converged while such a plan fits the memory.
// Every run is recorded (EigsResult::runs). An explicit method runs alone, as asked.
// Selections made of runs (select.cpp), SciPy's eigsh names in brackets; every run is recorded
// (EigsResult::runs) and method_reason says which ran and why:
//   largest_magnitude ('LM')  the k largest |λ| lie among the k largest and the min(k, n − k)
//                             smallest: the end a bound favours runs first (Gershgorin's interval
//                             of A in matrix form, or only its signs with B), the other end only
//                             unless the bound proves that no eigenvalue beyond it can be larger
//                             in magnitude; the k of largest |λ| kept. With sigma: nearest σ.
//   both_ends ('BE')          the ceil(k/2) largest and the floor(k/2) smallest.
//   smallest_magnitude ('SM') nearest 0 by shift-invert where A − 0·B can be factored (matrix
//                             form); otherwise the smallest end when it is non-negative (by the
//                             bound or by the run), the largest end when it is non-positive, else
//                             the folded operator around 0 (below).
// Folded operator (folded.cpp; `nearest` and 'SM' where nothing can be factored: an operator,
// --no-factor): F = (A − cB)·B⁻¹·(A − cB) has the same eigenvectors as (A, B) with eigenvalues
// μ = (λ − c)², smallest for the λ nearest c. Its k smallest (LOBPCG, or Lanczos where LOBPCG's
// block does not fit; tested at tol² against ‖F‖) are refined by Rayleigh–Ritz with (A, B), then
// tested as any pair. B⁻¹: EigsOptions::mass_inverse (SciPy's Minv), exact for a diagonal B, else
// block CG on B. Squaring costs accuracy: it attains about 1e-10·‖A‖ (conv norm below that is
// raised to it, and method_reason says so). In matrix form a problem the planner would solve
// densely is solved densely instead.
// Constraints (constraints.cpp; SciPy lobpcg's Y): pairs in the B-orthogonal complement of
// span(Y) (Yᵀ·B·x = 0), those of the projected problem. The runs use
// A' = Pᵀ·A·P + s·(B·Y)·G⁻¹·(B·Y)ᵀ with P = I − Y·G⁻¹·Yᵀ·B, G = Yᵀ·B·Y: on the complement the
// projected A, on span(Y) the eigenvalue s placed beyond the wanted end (half the spectrum's
// width past Gershgorin's bound, or past ±‖A‖·‖B⁻¹‖). A' is an operator, so every method on
// operators honours constraints (LOBPCG, block Lanczos, Chebyshev; a given LOBPCG
// preconditioner T becomes P·T·Pᵀ + Y·G⁻¹·Yᵀ/|s|); shift-invert, a dense solve, the certificate
// and nearest / smallest_magnitude do not (no factorization of A'); the end selections do.
// Spectral transformation (shift-invert, SciPy's `sigma`): Lanczos or LOBPCG run on
// Op = (A − σB)⁻¹·B, whose eigenvalues ν = 1/(λ − σ) are largest for the λ nearest σ; the
// factorization of A − σB (factor/sparse_factor.hpp) is computed once, its solves applied to whole
// blocks.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "core/operator.hpp"
#include "core/types.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

class ChebyshevStep;

// EigsOptions::workspace_columns too small for even the smallest basis/width of the method.
class WorkspaceDoesNotFit : public OutOfDeviceMemory {
 public:
  WorkspaceDoesNotFit(std::size_t bytes_needed, std::string message)
      : OutOfDeviceMemory(bytes_needed, __FILE__, __LINE__), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

enum class ConvTest { rel, norm, abs };
const char* to_string(ConvTest c);
ConvTest parse_conv_test(const std::string& s);  // throws InvalidArgument naming the value


// Method names, in one place: the command line, the batch job file and the Python module parse
// and list them through these (auto | lanczos | lobpcg | chebyshev | dense).
enum class EigsMethod { automatic, lanczos, lobpcg, chebyshev, dense };
const char* to_string(EigsMethod m);
EigsMethod parse_eigs_method(const std::string& s);  // throws InvalidArgument naming the value
const std::vector<std::string>& eigs_method_names();

// LOBPCG preconditioner: auto (the factorization of A − σB for the smallest when one is made,
// else Jacobi) | none | jacobi | factor.
enum class EigsPrecond { automatic, none, jacobi, factor };
const char* to_string(EigsPrecond p);
EigsPrecond parse_eigs_precond(const std::string& s);
const std::vector<std::string>& eigs_precond_names();

// How the returned set was (to be) verified.
//   certificate  Sylvester inertia of A − τB (MUMPS LDLᵀ): exact counts;
//   recheck      a fresh random start on the problem with the found pairs deflated (a short
//                Chebyshev filter, or deflated shift-invert / LOBPCG) finds nothing missing;
//   dense        a dense solve computed every eigenvalue;
//   none         not verified (recheck = false): status unverified.
enum class Verification { certificate, recheck, dense, none };
const char* to_string(Verification v);

// Which eigenvalues, by name: smallest | largest | nearest | largest_magnitude |
// smallest_magnitude | both_ends, and SciPy's LA | SA | LM | SM | BE (any case; LA = largest,
// SA = smallest). The command line, the batch job file and the Python module parse through these.
const char* to_string(Which w);
Which parse_which(const std::string& s);  // throws InvalidArgument naming the value
const std::vector<std::string>& which_names();

// A host block (n × c column-major: a start block, the constraints), shared: copies of the
// options (the driver's fitted copy, the re-check's runs) copy no values. A resumed run's block is
// GBs (1.5 GB for 8M rows and 24 columns), and each copy of it cost the H200's host 0.5–1 s.
class HostBlock {
 public:
  HostBlock() = default;
  HostBlock(std::vector<double> v)  // NOLINT(google-explicit-constructor): `o.v0 = block;`
      : v_(std::make_shared<const std::vector<double>>(std::move(v))) {}
  bool empty() const { return !v_ || v_->empty(); }
  std::size_t size() const { return v_ ? v_->size() : 0; }
  const double* data() const { return v_ ? v_->data() : nullptr; }
  void clear() { v_.reset(); }

 private:
  std::shared_ptr<const std::vector<double>> v_;
};
using StartBlock = HostBlock;

struct EigsOptions {
  std::int64_t k = 6;
  // smallest | largest | nearest (needs sigma) | largest_magnitude | smallest_magnitude |
  // both_ends (the selections made of runs, above)
  Which which = Which::smallest;
  bool has_sigma = false;         // shift-invert around sigma (SciPy's sigma=...)
  double sigma = 0.0;
  // automatic: the planner's choice by predicted cost (solvers/eigs/plan.hpp): dense, Chebyshev,
  // shift-invert Lanczos or LOBPCG. Otherwise the method asked for.
  EigsMethod method = EigsMethod::automatic;
  ConvTest conv = ConvTest::rel;
  double tol = 1e-8;
  std::int64_t max_iterations = 0;  // 0 = the method's default; under auto, each run's limit
  std::int64_t block_size = 0;      // Lanczos block size (0 = automatic)
  std::int64_t basis = 0;           // Lanczos basis columns before a restart (SciPy's ncv; 0 = auto)
  // Block Lanczos may stop before its first basis is full once every wanted pair passes
  // (EigenOptions::early_stop); the re-checks turn it off (solvers/eigs/recheck.cpp).
  bool lanczos_early_stop = true;
  EigsPrecond precond = EigsPrecond::automatic;  // LOBPCG
  // LOBPCG preconditioner T ≈ (A − σB)⁻¹ given as an operator in the ops' space (SciPy lobpcg's
  // M); takes precedence over `precond` and needs method lobpcg (or automatic: then lobpcg).
  const LinearOperator<double>* preconditioner = nullptr;
  bool allow_factor = true;         // false: never factor (--no-factor): no shift-invert, no count
  bool recheck = true;              // verify the set when no certificate does (re-check)
  // Always certify the set by Sylvester's inertia (--certify; needs a factorization). Without
  // it the certificate runs only when its predicted cost is at most 15 % of the solve's.
  bool certify = false;
  Backend backend = Backend::cpu;
  Precision precision = Precision::fp64;  // storage of A in the SpMM
  // The precision ladder (--precision auto): Chebyshev filters on the fp32 rung where they may
  // (solvers/chebyshev.hpp, filter_precision), climbing to fp64; A stays fp64 and every answer
  // is checked in fp64 on the original A. Only with fp64 storage and the fused filter step.
  bool ladder = false;
  std::uint64_t seed = 1;
  StartBlock v0;                    // optional start block, n × c column-major (host)
  // Constraints (above; SciPy lobpcg's Y): n × p column-major (host), p ≥ 1 independent columns,
  // p + k < n; the returned vectors are B-orthogonal to them. Empty: none.
  HostBlock constraints;
  // B⁻¹ in the ops' space for the folded operator (above; SciPy eigsh's Minv); nullptr: exact
  // for a diagonal B, else block CG on B.
  const LinearOperator<double>* mass_inverse = nullptr;
  // false: EigsResult::vectors stays empty (SciPy's return_eigenvectors=False; the CLI without
  // --out): the n × k block is not copied to the host (128 MB at n = 1M, k = 16).
  bool want_vectors = true;
  double factor_memory_limit = 0;   // bytes; 0 = FactorOptions' default
  // Most n-vectors the iteration's workspace may hold (0 = no limit; the apps derive it from the
  // free GPU memory). Without a transformation, Chebyshev's block width (3 blocks of m + 2k
  // vectors; on the host with a fused step the filter's rows widen one block to 2·⌈m⌉₄, not
  // counted here: the apps set this for the GPU only) or the Lanczos basis (2·(m + b) + 2·max(b, k)) is reduced to fit, and `why` says
  // so; below the minimum (m = k + 4, resp. m = k + 2b) or for LOBPCG (10·(k + guard)) the call
  // throws WorkspaceDoesNotFit (an OutOfDeviceMemory) with the bytes the minimum needs.
  std::int64_t workspace_columns = 0;
  std::string mass_name = "the mass matrix";  // how errors about B name it
  // Operator form: the operators are tcsolve's own and launch on the ops' stream (or the legacy
  // default stream), e.g. distributed/'s; applies are then ordered by events, not fenced by host
  // synchronizations as a foreign operator's (a Python LinearOperator) must be.
  bool own_operator = false;
  // Operator form: the Chebyshev filter's fused step for A (spmm/chebyshev_step.hpp, in the ops'
  // space on their stream), e.g. distributed/'s; with `ladder` on the GPU it runs the fp32 rung too.
  const ChebyshevStep* fused_step = nullptr;
  std::function<void(const IterationRecord&)> on_iteration;
  // Checkpoints of the main run (Chebyshev, LOBPCG, Lanczos after a restart; not the checks):
  // its Ritz block every checkpoint_every seconds (EigenOptions). A run resumes from one through v0.
  double checkpoint_every = 0.0;
  CheckpointFn on_checkpoint;
};

// One plan's run within an eigs() call (EigsResult::runs): the chosen plan, then each plan it
// escalated to.
struct EigsRunRecord {
  std::string plan;              // chebyshev | lanczos | lanczos (single vector) | lobpcg | dense |
                                 // shift-invert lanczos | lobpcg preconditioned by the factorization
  std::string method;            // dense | lanczos | lobpcg | chebyshev
  std::string transform = "none";  // none | shift-invert
  // How it ended: converged (every pair passed its test) | rounding_floor (the failing pairs at
  // u·(‖A‖ + |λ|‖B‖)) | iteration_limit | stagnation | budget (the filter stopped for the
  // fallback plan) | breakdown | interrupted | setup_failed (e.g. the factorization did not fit)
  std::string stop;
  std::string detail;            // the solver's reason, or what the set-up threw ("" converged)
  double predicted_seconds = 0;  // set-up + solve as priced (0: not priced)
  double setup_seconds = 0, solve_seconds = 0;
  std::int64_t iterations = 0, operator_applies = 0;
  std::int64_t pairs_passed = 0;   // of its k pairs, on their true residuals
  bool from_previous = false;      // started from the previous run's vectors
};

struct EigsResult {
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;                  // one sentence when not converged / unverified
  std::vector<double> values;          // k eigenvalues: ascending (smallest, both_ends),
                                       // descending (largest), by distance to σ (nearest), by
                                       // |λ| descending (largest_magnitude) or ascending
                                       // (smallest_magnitude)
  std::vector<double> vectors;         // n × k column-major, B-orthonormal
  std::int64_t n = 0;
  std::vector<double> residual_norms;  // true ‖A·x_j − λ_j·B·x_j‖, recomputed after the iteration
  std::vector<double> residual_bounds; // what the convergence test allowed for each pair
  std::vector<double> error_bounds;    // |λ_j − λ_true| ≤ ‖r‖²/gap (gap from the neighbours), or ‖r‖
  ConvTest conv = ConvTest::rel;
  double a_norm = 0.0, b_norm = 1.0;
  std::string method;                  // dense | lanczos | lobpcg | chebyshev
  std::string transform = "none";      // none | shift-invert
  double sigma = 0.0;                  // the shift used (transform == shift-invert)
  // The plan: what ran and why, its predicted seconds, and the best rejected plan with its
  // prediction (or "as asked"); also any switch made during the run.
  std::string why;
  double predicted_seconds = 0.0;      // of the chosen plan (0 when not predicted)
  // The working precision of the iteration: "fp64", the rounded storage ("fp32 storage: the
  // eigenpairs of A rounded to fp32"), or the ladder's rungs with their filters, column-steps
  // and seconds (and the climb, when it climbed).
  std::string precision = "fp64";
  // Chebyshev runs: the solve's seconds by step (workspace, bounds, initial block, the outer
  // iterations split into filters and the rest, the final check); empty for other methods.
  std::string solve_steps;
  Verification verification = Verification::none;  // what verified the set (or was to)
  Certified certified = Certified::not_checked;
  std::string certificate;             // the counts behind `certified`, or why not checked
  std::string factor;                  // factorization used (engine, entries, time), or ""
  std::string spmm_kernel;             // SpMM kernel of A's operator (matrix form)
  std::string spmm_plan;               // why that kernel (the model, or the trial's times)
  std::int64_t iterations = 0;
  std::int64_t operator_applies = 0;
  std::vector<IterationRecord> history;
  double plan_seconds = 0.0;           // the planner (probe, timed applies, symbolic analysis)
  double setup_seconds = 0.0;          // operators and factorizations
  double solve_seconds = 0.0;          // the iteration
  double verify_seconds = 0.0;         // true residuals, certificate, re-check
  // The runs in order (one when the first plan answered; more when auto escalated, or for each
  // end of a selection made of runs). The fields above describe the last run (method, transform,
  // factor, precision) and all of them together (iterations, operator_applies, history,
  // setup/solve seconds); a selection made of runs joins its ends' methods ("chebyshev+lanczos").
  std::vector<EigsRunRecord> runs;
  // The rel test at λ ≈ 0 (above): the returned pairs (indices into values) whose residual bound
  // is the floor 8u·(‖A‖ + |λ|·‖B‖)·‖x‖, and one line saying how many, the threshold and the
  // floor ("" when none).
  std::vector<std::int64_t> floor_pairs;
  std::string test_floor;
};

// What the planner measured on a matrix (spectral probe, timed applies, symbolic analysis;
// solvers/eigs/plan.hpp), kept by a caller that solves several problems on it (a batch): the
// next call reuses the measurements instead of taking them again.
struct PlanMemo;

// Operators and dense ops a caller already has (a batch reuses them across jobs on one matrix);
// any null member is built by eigs(). Operators must live in ops->space() and use ops' stream.
struct EigsPrebuilt {
  DenseBlockOps* ops = nullptr;
  const LinearOperator<double>* a = nullptr;
  const LinearOperator<double>* b = nullptr;
  std::string spmm_kernel;  // reported as EigsResult::spmm_kernel when a is given
  std::string spmm_plan;    // and EigsResult::spmm_plan
  PlanMemo* memo = nullptr; // measurements to reuse and fill (same A, same B)
  // A's ‖A‖∞ and diagonal when the caller has them already (apps' PreparedMatrix): not computed
  // again (two passes over A). Both or neither; they must be those of the `a` given to eigs().
  double a_inf_norm = -1;                    // < 0: not given
  const std::vector<double>* a_diagonal = nullptr;
};

// Matrix form: may factor A − σB (shift-invert, certificate). b == nullptr: B = I.
EigsResult eigs(const Csr<double>& a, const Csr<double>* b, const EigsOptions& opt,
                const EigsPrebuilt& pre = {});

// Operator form (A, B given only as operators in ops.space(); e.g. a Python LinearOperator): no
// factorization, so no shift-invert (nearest σ by the folded operator) and no certificate; the
// multiplicity re-check still runs.
// a_norm / b_norm: estimates of ‖A‖₂, ‖B‖₂ (0 = estimate by power iteration).
EigsResult eigs(const LinearOperator<double>& a, const LinearOperator<double>* b,
                DenseBlockOps& ops, const EigsOptions& opt, double a_norm = 0.0,
                double b_norm = 0.0);

}  // namespace tcsolve
