// Which method solves A·X = B (solve --method auto), priced as the eigs planner prices its
// candidates (solvers/eigs/plan.hpp), and the budget that lets a measured iteration give way to a
// direct factorization.
//
//   kind (core/matrix_kind.hpp)   iterative                direct (solvers/direct/)
//   symmetric, positive diagonal  block CG (→ MINRES if      CHOLMOD LLᵀ (→ MUMPS LDLᵀ)
//                                 pᵀAp < 0 shows indefinite)
//   symmetric indefinite          pseudo-block MINRES       MUMPS LDLᵀ
//   unsymmetric                   pseudo-block GMRES(m)     UMFPACK LU
//   rectangular                   —                         SuiteSparseQR least squares
//
// Prices (seconds): direct = analysis + factorization + one block solve of the s columns, from
// estimate_direct's entries and flops and the engines' measured rates (factor/engine_rates.hpp;
// the LU and LDLᵀ factorizations at kGeneralFactorSlowdown × CHOLMOD's seconds per flop, a guess
// stated as one). Iterative: the iteration count is not known before iterating, so nothing
// predicts it here; the iteration is priced by MEASUREMENT instead: it starts with a budget, the
// direct price (IterativeBudget, below), and gives way to the factorization when its measured
// convergence rate says it would finish later than the direct solve would.
// auto, in order:
//   0. symmetric with a positive diagonal: block CG as before (no budget), then MINRES if CG finds
//      A indefinite, then the direct solve if it fails.
//   1. rectangular: direct QR (no iterative least squares yet).
//   2. the direct method when it fits in memory and its price is below kDirectOutright seconds
//      (small problems: a factorization is then cheaper than a single iterative setup, and exact
//      enough for every tolerance), or below the price of kMinIterations iterations of the
//      iterative method (its per-iteration price: the memory traffic of one apply and the dense
//      passes at the device's bandwidth).
//   3. otherwise the iterative method, with the direct method as its fallback when it fits: on
//      breakdown, non-convergence, stagnation or the budget exceeded.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/matrix_kind.hpp"
#include "solvers/direct/direct_solve.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

enum class SolveMethod { automatic, cg, minres, gmres, direct, lsqr };
const char* to_string(SolveMethod m);  // auto | cg | minres | gmres | direct | lsqr
// InvalidArgument "method 'x': expected auto, cg, minres, gmres, direct or lsqr".
SolveMethod parse_solve_method(const std::string& s);

// The iterative method that fits a kind (cg, minres, gmres; automatic for rectangular).
SolveMethod iterative_method_for(MatrixKind k);

constexpr double kGeneralFactorSlowdown = 2.0;  // LU/LDLᵀ seconds per flop over CHOLMOD's (guess)
constexpr double kUmfpackEstimateOver = 10.0;   // UMFPACK's estimates over its actual figures (one measurement)
constexpr double kDirectOutright = 0.05;        // seconds: below this the direct method is taken
constexpr int kMinIterations = 30;              // iterations no iterative solve does fewer of

struct SolveMethodFacts {
  SolveMethod asked = SolveMethod::automatic;
  MatrixKind kind = MatrixKind::symmetric_positive;
  std::int64_t rows = 0, cols = 0, nnz = 0, rhs = 1;
  bool gpu = false;
  double bandwidth = 0;         // bytes/s of the iteration's device (0: 1e10, a 2-core host)
  bool direct_built = true;     // built_with_factor()
  // Whether estimate_direct ran: it is skipped when even the fastest ordering seen
  // (kFastestAnalyzeSecondsPerEntry) costs more than kMinIterations iterations; the direct solve is
  // then an unpriced fallback (no budget), its feasibility found when it runs.
  bool direct_priced = true;
  DirectEstimate direct;        // estimate_direct (when direct_built and direct_priced)
  double direct_seconds = 0;    // its price (price_direct), 0 when not feasible
};

struct SolveMethodPlan {
  SolveMethod method = SolveMethod::cg;
  std::vector<SolveMethod> fallbacks;  // tried in order when the method fails (breakdown, ...)
  double direct_seconds = 0;           // the direct price (0: not feasible / not priced)
  double iteration_seconds = 0;        // one iteration's price
  double budget_seconds = 0;           // the iterative run's budget (0: none)
  std::string why;                     // one sentence: what was chosen and why
};

// One iteration's price: A read once (12 bytes an entry) and ~12 passes over n × s blocks at
// `bandwidth` bytes a second (0: 1e10, a 2-core host).
double price_iteration(std::int64_t rows, std::int64_t nnz, std::int64_t rhs, double bandwidth);
// The direct method's price in seconds (see above); 0 when not feasible.
double price_direct(const DirectEstimate& e, std::int64_t rows, std::int64_t rhs);
SolveMethodPlan plan_solve_method(const SolveMethodFacts& f);

// The iterative run's budget: fed every iteration's record, it throws BudgetExceeded once the
// measured convergence says what is left of the run would cost more than `budget_seconds` (the
// whole direct solve; checked after kMinIterations iterations and 10 % of the budget), or once 3×
// the budget is spent.
// Prediction: the slowest active column's residual falls geometrically at the rate measured over
// the last third of the iterations (at least 10); the iterations still needed reach tol·‖b‖ from
// the residual now (the first record's residual stands for ‖b‖: x0 = 0).
class BudgetExceeded : public Error {
 public:
  explicit BudgetExceeded(const std::string& what) : Error(what) {}
};
class IterativeBudget {
 public:
  IterativeBudget(double budget_seconds, double tol) : budget_(budget_seconds), tol_(tol) { worst_.reserve(4096); }
  // A budget known only once the run has started (the direct price computed beside a GPU run).
  void set_budget(double budget_seconds) { budget_ = budget_seconds; }
  // Throws BudgetExceeded (see above); `seconds` since the iterative run's start.
  void check(const IterationRecord& rec, double seconds);

 private:
  double budget_, tol_;
  std::vector<double> first_;               // the first record's residuals (by column position)
  std::vector<double> worst_;               // the slowest column's relative residual per iteration
};

}  // namespace tcsolve
