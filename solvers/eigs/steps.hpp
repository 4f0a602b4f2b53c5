// Internal to the eigs driver (solvers/eigs/eigs.hpp): the steps run_all strings together.
//   measurements (probes.cpp)  the spectral probe, timed applies, the planner's callbacks;
//   set up       (setup.cpp)   the factorization of A − σB where the plan has one, the fused step;
//   solve        (solve.cpp)   the chosen plan's run, then the escalation's (auto), each recorded;
//   verify       (verify.cpp)  the certificate or a re-check of the returned set.
// Above the one-selection run (run_all, driver.cpp): the selections made of runs (select.cpp),
// the folded operator (folded.cpp) and the constrained problem (constraints.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "factor/shift_invert.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigs/certificate.hpp"
#include "solvers/eigs/pairs.hpp"
#include "solvers/eigs/plan.hpp"
#include "solvers/eigs/runs.hpp"
#include "solvers/spectral_probe.hpp"

namespace tcsolve::eigs_detail {

// ---- measurements (probes.cpp)

// Y = A·X with the problem's operator: a foreign operator (the caller's) runs after a full
// synchronization; A's own is ordered on the ops' stream (external_begin/end). Also the re-checks'.
void apply_a(const Problem& s, MvView<const double> x, MvView<double> y);
// Seconds of one apply of A to `cols` random columns (warmed once, then timed: stream marks on
// the GPU, the host clock on the CPU).
double time_apply(const Problem& s, std::int64_t cols);
// Seconds of one host filter step by rows on `cols` columns; 0 where the filter would not run it.
double time_step(const Problem& s, const EigsOptions& opt, std::int64_t cols);
// The planner's spectral probe of A (30 Lanczos steps from a random start).
SpectralProbe run_probe(const Problem& s, std::uint64_t seed);
// The probe's bounds as Chebyshev takes them.
ChebyshevBounds bounds_of(const SpectralProbe& p);
// The planner's measurements on this problem (memo: a batch's, reused and filled; may be null).
PlanProbes make_probes(const Problem& s, const EigsOptions& opt, PlanMemo* memo);

// ---- set up (setup.cpp)

// The factorization of A − σB for shift-invert (or the LOBPCG preconditioner): σ below the
// spectrum for the smallest (0 when A − 0·B is positive definite, else lowered until the Cholesky
// factorization exists), or the given σ.
struct Factorized {
  std::unique_ptr<SparseFactor> factor;
  std::unique_ptr<ShiftInvertOperator> sinv;
  double sigma = 0.0;
  std::string desc, why;
};

// What a plan's run needs beyond the operators, made in one step: the factorization where the
// plan has one (shift-invert, LOBPCG preconditioned by it), the filter's fused step for A.
struct SetUp {
  Factorized fz;
  double seconds = 0.0;
};
// get_probe: the plan's probe, or one made now (a bound of λmin for the shift).
SetUp set_up(const Problem& s, const EigsOptions& opt, const PlanEstimate& e, const EigsPlan& plan,
             const std::function<const SpectralProbe*()>& get_probe);

// ---- solve (solve.cpp)

// The solve step's outcome: the run whose pairs are returned, its plan and set-up, and every run.
struct Solved {
  PlanEstimate ran;
  SetUp setup;                        // of `ran` (its factorization, when it has one)
  RunOut run;
  ChebyshevStats cheb;                // when `ran` is the filter
  std::vector<EigsRunRecord> runs;
  std::string why;                    // what the solve step adds to method_reason
  double setup_s = 0.0, solve_s = 0.0;  // all runs together
  std::int64_t iterations = 0, applies = 0;
  std::vector<IterationRecord> history;
  std::int64_t passed = 0;            // pairs of `run` that passed their test
};
Solved solve_plans(const Problem& s, const EigsOptions& opt, EigsPlan& plan,
                   const std::function<const SpectralProbe*()>& get_probe);
// After a verification that found eigenvalues missing from the returned set (the count, `why`):
// the escalation goes on with the next plan not tried (auto only). Returns whether one ran.
bool solve_further(const Problem& s, const EigsOptions& opt, EigsPlan& plan,
                   const std::function<const SpectralProbe*()>& get_probe, const std::string& why, Solved& out);

// ---- verify (verify.cpp)

struct Verified {
  bool verified = false;
  Certificate cert;
  Verification kind = Verification::none;
  std::string line;
};
// Verification of the set `pairs` after the solve. Decides between the certificate and the
// re-check with the measured solve time, runs it, and returns (verified, certified, line).
Verified verify(const Problem& s, const EigsOptions& opt, const PlanFacts& facts, EigsPlan& plan,
                const PlanEstimate& ran, PairSet& pairs, Factorized* fz, double solve_s,
                const ChebyshevStats* cheb, const PlanProbes& probes);

// ---- the driver (driver.cpp)

// plan → solve (escalating under auto) → verify → finish, for a selection the plan serves
// (smallest, largest, nearest with a factorization), on s as it is (no constraints).
EigsResult run_all(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo);
// Final order, extended-precision refinement, tests, error bounds and the status of a run's pairs
// (in wanted order for opt.which and sigma on return).
EigsResult finish(const Problem& s, const EigsOptions& opt, PairSet& p, RunOut& run, double sigma);

// ---- selections made of runs (select.cpp)

// Proven bounds of the spectrum of (A, B) from the facts: Gershgorin's interval of A without B;
// with B only the signs it proves (λ = xᵀAx / xᵀBx has the sign of xᵀAx); ±∞ where nothing is
// known (operator form, distributed). They bound a constrained problem's spectrum too (Cauchy).
struct SpectrumBounds {
  double lo = -INFINITY, hi = INFINITY;
};
SpectrumBounds spectrum_bounds(const PlanFacts& facts);
// The facts of an operator built on the problem (the constrained A', the folded F): operator
// form, nothing to factor (`why`), no hints from A's entries.
PlanFacts operator_facts(const PlanFacts& facts, const std::string& why, double a_norm);
// opt.which of every kind: largest_magnitude, both_ends and smallest_magnitude from runs for the
// ends, nearest without a factorization by the folded operator, the rest by run_one.
EigsResult run_selection(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo);
// One run_all: on the constrained problem when opt.constraints are given (run_constrained).
EigsResult run_one(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo);

// ---- the folded operator (folded.cpp)

// The k pairs nearest c without a factorization: the folded operator's smallest, refined by
// Rayleigh–Ritz with (A, B) and tested (eigs.hpp); a problem the planner would solve densely (matrix
// form) is solved densely.
EigsResult run_folded(Problem& s, const EigsOptions& opt, const PlanFacts& facts, double c);

// ---- constraints (constraints.cpp)

// Checks opt.constraints against the problem (shape, finite values, p + k < n, the selection).
void validate_constraints(const EigsOptions& opt, std::int64_t n);
// run_all on A' (the constrained operator, eigs.hpp) for opt.which (smallest or largest).
EigsResult run_constrained(Problem& s, const EigsOptions& opt, const PlanFacts& facts);

// EigsResult::precision: what the iteration's arithmetic was.
std::string precision_line(const EigsOptions& opt, const ChebyshevStats* cheb);
// EigsResult::solve_steps: where a Chebyshev solve's seconds went.
std::string solve_steps_line(const ChebyshevStats& c);

}  // namespace tcsolve::eigs_detail
