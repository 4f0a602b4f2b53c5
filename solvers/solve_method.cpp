#include "solvers/solve_method.hpp"

#include <algorithm>
#include <cmath>

#include "core/format.hpp"
#include "factor/engine_rates.hpp"

namespace tcsolve {

namespace {
const std::pair<SolveMethod, const char*> kNames[] = {
    {SolveMethod::automatic, "auto"}, {SolveMethod::cg, "cg"},         {SolveMethod::minres, "minres"},
    {SolveMethod::gmres, "gmres"},    {SolveMethod::direct, "direct"}, {SolveMethod::lsqr, "lsqr"}};

// The engines' rates without measuring them here (a fresh machine prices with the defaults).
const EngineRates& rates() {
  static const EngineRates defaults;
  const EngineRates* known = known_engine_rates();
  return known ? *known : defaults;
}
}  // namespace

const char* to_string(SolveMethod m) {
  for (const auto& [v, n] : kNames)
    if (v == m) return n;
  return "?";
}

SolveMethod parse_solve_method(const std::string& s) {
  for (const auto& [v, n] : kNames)
    if (s == n) return v;
  throw InvalidArgument("method '" + s + "': expected auto, cg, minres, gmres, direct or lsqr");
}

SolveMethod iterative_method_for(MatrixKind k) {
  switch (k) {
    case MatrixKind::symmetric_positive: return SolveMethod::cg;
    case MatrixKind::symmetric_indefinite: return SolveMethod::minres;
    case MatrixKind::unsymmetric: return SolveMethod::gmres;
    case MatrixKind::rectangular: return SolveMethod::automatic;
  }
  return SolveMethod::automatic;
}

// analysis + factorization + one block solve of rhs columns (factor/engine_rates.hpp's model,
// CHOLMOD's coefficients; LU and LDLᵀ slower per flop by kGeneralFactorSlowdown).
double price_direct(const DirectEstimate& e, std::int64_t rows, std::int64_t rhs) {
  if (!e.feasible || e.flops <= 0) return 0.0;
  const EngineRates& r = rates();
  SymbolicAnalysis s;
  s.flops = e.flops, s.factor_entries = e.factor_entries;
  // UMFPACK's symbolic figures bound its factorization from above, loosely (partial pivoting is
  // not known before the numeric phase): gen:convdiff2d:300 was priced at 138 s and factored and
  // solved in about 3 s (2-core CPU, loaded). kUmfpackEstimateOver scales them back.
  if (e.engine == DirectEngine::umfpack) s.flops /= kUmfpackEstimateOver, s.factor_entries /= kUmfpackEstimateOver;
  const double slow = e.engine == DirectEngine::cholmod ? 1.0 : kGeneralFactorSlowdown;
  return e.analysis_seconds + slow * r.factor_seconds(s) +
         slow * r.solve_seconds(s.factor_entries, double(rhs), s.flops, double(rows));
}

double price_iteration(std::int64_t rows, std::int64_t nnz, std::int64_t rhs, double bandwidth) {
  const double bw = bandwidth > 0 ? bandwidth : 1e10;
  return (12.0 * double(nnz) + 12.0 * 8.0 * double(rows) * double(rhs)) / bw;
}

SolveMethodPlan plan_solve_method(const SolveMethodFacts& f) {
  SolveMethodPlan p;
  const SolveMethod iter = iterative_method_for(f.kind);
  const bool direct_ok = f.direct_built && f.direct_priced && f.direct.feasible && f.direct_seconds > 0;
  p.direct_seconds = direct_ok ? f.direct_seconds : 0.0;
  p.iteration_seconds = price_iteration(f.rows, f.nnz, f.rhs, f.bandwidth);
  if (f.asked != SolveMethod::automatic) {
    p.method = f.asked;
    p.why = std::string(to_string(f.asked)) + " (asked)";
    return p;
  }
  if (f.kind == MatrixKind::symmetric_positive) {
    // block CG stays the default where it always was (its checkpoints, warm starts, Chebyshev
    // preconditioner and fp32 rung are CG's); MINRES if it finds A indefinite, the direct solve
    // if it fails. No budget: a CG that converges is never cut short.
    p.method = SolveMethod::cg;
    p.fallbacks = {SolveMethod::minres};
    if (f.direct_built) p.fallbacks.push_back(SolveMethod::direct);
    p.why = "cg (symmetric with a positive diagonal); MINRES if it finds A indefinite, the direct solve if it fails";
    return p;
  }
  if (f.kind == MatrixKind::rectangular) {
    p.method = SolveMethod::direct;
    p.why = "direct: a rectangular matrix, least squares by SuiteSparseQR (no iterative least squares yet)";
    return p;
  }
  const double iter_floor = kMinIterations * p.iteration_seconds;
  if (direct_ok && (p.direct_seconds < kDirectOutright || p.direct_seconds < iter_floor)) {
    p.method = SolveMethod::direct;
    p.why = format("direct: predicted %.3g s, below %s", p.direct_seconds,
                   p.direct_seconds < kDirectOutright
                       ? format("%.2g s", kDirectOutright).c_str()
                       : format("%d iterations of %s (%.3g s)", kMinIterations, to_string(iter), iter_floor).c_str());
    return p;
  }
  p.method = iter;
  if (iter == SolveMethod::cg) p.fallbacks.push_back(SolveMethod::minres);
  if (direct_ok) {
    p.fallbacks.push_back(SolveMethod::direct);
    p.budget_seconds = p.direct_seconds;
    p.why = format("%s, with a budget of %.3g s (the direct solve's prediction); the direct solve if it "
                   "breaks down, stalls or would take longer",
                   to_string(iter), p.direct_seconds);
  } else if (f.direct_built && !f.direct_priced) {
    p.fallbacks.push_back(SolveMethod::direct);
    p.why = format("%s (a factorization's ordering alone would cost more than %d iterations, %.3g s); the direct "
                   "solve if it breaks down or stalls",
                   to_string(iter), kMinIterations, kMinIterations * p.iteration_seconds);
  } else {
    p.why = std::string(to_string(iter)) + ": " +
            (!f.direct_built ? std::string("no direct engine in this build")
                             : "the direct solve does not fit (" + f.direct.why + ")");
  }
  return p;
}

void IterativeBudget::check(const IterationRecord& rec, double seconds) {
  if (budget_ <= 0 || rec.residual_norms.empty()) return;
  const double worst = *std::max_element(rec.residual_norms.begin(), rec.residual_norms.end());
  if (first_.empty()) {
    first_.push_back(worst > 0 ? worst : 1.0);
    return;
  }
  worst_.push_back(worst / first_[0]);
  const std::size_t t = worst_.size();
  // (what the iteration has spent is spent: it gives way when what is LEFT of it costs more
  // than the whole direct solve; past 3× the budget it gives way whatever its rate says)
  if (seconds > 3.0 * budget_)
    throw BudgetExceeded(format("the iteration passed 3 times its budget of %.3g s after %zu iterations (relative "
                                "residual %.2e)",
                                budget_, t, worst_.back()));
  if (t < std::size_t(kMinIterations) || seconds < 0.1 * budget_) return;
  const std::size_t m = std::max<std::size_t>(10, t / 3);
  const double now = std::max(worst_.back(), 1e-300), then = std::max(worst_[t - 1 - std::min(m, t - 1)], 1e-300);
  const double rate = std::log(now / then) / double(std::min(m, t - 1));  // per iteration (< 0: falling)
  const double per_iter = seconds / double(t);
  const double needed = now <= tol_ ? 0.0 : rate < 0 ? std::log(tol_ / now) / rate : 1e300;
  if (needed * per_iter > budget_)
    throw BudgetExceeded(format("after %zu iterations (%.3g s) the relative residual %.2e falls %.3g%% an "
                                "iteration: %s, beyond the budget of %.3g s",
                                t, seconds, now, rate < 0 ? 100.0 * (1.0 - std::exp(rate)) : 0.0,
                                rate < 0 ? format("about %.3g s more", needed * per_iter).c_str() : "stalled",
                                budget_));
}

}  // namespace tcsolve
