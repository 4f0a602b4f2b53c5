// The eigs driver's solve step (solvers/eigs/steps.hpp): the chosen plan's run, and under
// --method auto the escalation (eigs.hpp): when a run ends without convergence, the next plan
// that could succeed (EigsPlan::escalation) runs from the vectors found, until one converges or
// none is left. Each run is recorded (EigsRunRecord).
#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.hpp"
#include "core/trace.hpp"
#include "solvers/eigs/steps.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::eigs_detail {
namespace {

// One plan's run: its set-up, its pairs, the filter's statistics and the record.
struct Attempt {
  PlanEstimate plan;
  SetUp setup;
  RunOut run;
  ChebyshevStats cheb;
  EigsRunRecord rec;
};

// How a run ended (EigsRunRecord::stop). The rounding floor: every failing pair's residual within
// the floor's zone, 16u·(‖A‖ + |λ|·‖B‖)·‖x‖ (at_rounding_floor, pairs.hpp).
std::string stop_of(const Problem& s, const PlanEstimate& e, const RunOut& run, const ChebyshevStats& cheb) {
  if (run.pairs_pass) return "converged";
  if (interrupt_requested() || run.status == SolverStatus::interrupted) return "interrupted";
  if (run.status == SolverStatus::breakdown) return "breakdown";
  if (e.method == EigsMethod::chebyshev && cheb.stopped) return "budget";
  const PairSet& p = run.pairs;
  bool failing = false, at_floor = true;
  for (std::size_t j = 0; j < p.values.size(); ++j) {
    if (j < run.bounds.size() && p.rn[j] <= run.bounds[j]) continue;
    failing = true;
    at_floor = at_floor && at_rounding_floor(p.rn[j], p.values[j], p.xn[j], s);
  }
  if (failing && at_floor) return "rounding_floor";
  const std::int64_t limit = e.run.max_iterations > 0 ? e.run.max_iterations
                             : e.transform == Transform::shift_invert ? kShiftInvertIterations
                                                                      : kIterativeIterations;
  if (e.method != EigsMethod::dense && run.iterations >= limit) return "iteration_limit";
  return "stagnation";
}

// The next run's start: the found vectors (n × m, host), summed into one column for a run whose
// block is a single vector (it takes only the first column: the sum keeps every found direction).
StartBlock start_from(const Problem& s, const PairSet& p, std::int64_t block) {
  const std::int64_t m = p.x.cols(), n = s.n;
  if (m == 0 || s.global_n() != s.n) return {};  // (a distributed problem takes no start block)
  std::vector<double> host(static_cast<std::size_t>(n * m));
  s.ops->to_host(p.x.view(), host.data(), n);
  if (block == 1 && m > 1) {
    for (std::int64_t j = 1; j < m; ++j)
      for (std::int64_t i = 0; i < n; ++i) host[i] += host[j * n + i];
    host.resize(n);
  }
  return StartBlock(std::move(host));
}

// Runs plan e (set up already). The first run of a filter plan with a fallback priced behind it
// stops when its measured convergence predicts more than the fallback's budget.
RunOut run_plan(const Problem& s, const EigsOptions& opt, const EigsPlan& plan, Attempt& a,
                const StartBlock& start, bool first) {
  const PlanEstimate& e = a.plan;
  if (e.method == EigsMethod::dense) return run_dense(s, opt);
  const Factorized& fz = a.setup.fz;
  if (e.transform == Transform::shift_invert)
    return run_shift_invert(s, *fz.sinv, fz.sigma, opt, e.run, start, opt.k, opt.seed, nullptr,
                            fz.factor->factor_entries());
  ChebyshevHooks hooks;
  hooks.stats = &a.cheb;
  std::optional<ChebyshevBounds> given;
  if (plan.probe) given = bounds_of(*plan.probe), hooks.bounds = &*given;
  if (first && plan.fallback) {
    const double budget = plan.fallback_budget_s;
    hooks.keep_going = [budget](const ChebyshevProgress& pg) {
      if (pg.outer < 2 || !(pg.steps_left < 1e8) || pg.filter_steps <= 0) return true;
      return pg.steps_left * (pg.seconds / pg.filter_steps) <= budget;
    };
  }
  const LinearOperator<double>* precond = opt.preconditioner ? opt.preconditioner
                                          : e.lobpcg_factor  ? fz.sinv.get()
                                                             : nullptr;
  return run_iterative(s, *s.aop, e.method, opt, e.run, start, opt.which, opt.k, opt.seed, precond, hooks);
}

// Set up and run plan e from `start` (the previous run's vectors, or the caller's v0).
Attempt attempt(const Problem& s, const EigsOptions& opt, const EigsPlan& plan, const PlanEstimate& e,
                const PairSet* previous, bool first, const std::function<const SpectralProbe*()>& get_probe) {
  Attempt a;
  a.plan = e;
  a.rec.plan = e.name();
  a.rec.method = to_string(e.method);
  a.rec.transform = e.transform == Transform::shift_invert ? "shift-invert" : "none";
  a.rec.predicted_seconds = e.priced ? e.setup_s + e.solve_s : 0.0;
  a.setup = set_up(s, opt, e, plan, get_probe);
  a.rec.setup_seconds = a.setup.seconds;
  StartBlock start = opt.v0;
  if (previous && e.method != EigsMethod::dense) {
    const std::int64_t block = e.transform == Transform::shift_invert
        ? shift_invert_shape(s.n, opt.k, a.setup.fz.factor->factor_entries(), s.ops->space() == Space::host,
                             e.run.block).block
        : 0;
    start = start_from(s, *previous, block);
    a.rec.from_previous = !start.empty();
  }
  const double t0 = detail::now_seconds();
  a.run = run_plan(s, opt, plan, a, start, first);
  a.rec.solve_seconds = detail::now_seconds() - t0;
  a.rec.iterations = a.run.iterations;
  a.rec.operator_applies = a.run.applies;
  for (std::size_t j = 0; j < a.run.pairs.values.size(); ++j)
    a.rec.pairs_passed += j < a.run.bounds.size() && a.run.pairs.rn[j] <= a.run.bounds[j];
  if (a.run.pairs_pass) a.rec.pairs_passed = static_cast<std::int64_t>(a.run.pairs.values.size());
  a.rec.stop = stop_of(s, e, a.run, a.cheb);
  if (!a.run.pairs_pass) a.rec.detail = a.run.reason.empty() ? "a pair fails its true-residual test" : a.run.reason;
  trace_mark(("eigs: " + a.rec.plan + " " + a.rec.stop).c_str());
  return a;
}

// The next plan of the escalation after the runs so far (nullptr: none left). After a stop at
// the rounding floor only a transformation or a dense solve gets further.
const PlanEstimate* next_plan(const EigsPlan& plan, const std::vector<EigsRunRecord>& runs, bool floor_stop) {
  for (const PlanEstimate& e : plan.escalation) {
    bool tried = false;
    for (const auto& r : runs) tried = tried || r.plan == e.name();
    if (tried) continue;
    if (floor_stop && e.transform == Transform::none && e.method != EigsMethod::dense) continue;
    return &e;
  }
  return nullptr;
}

// What the step says about a run that ended without convergence and the plan that follows.
std::string escalation_text(const EigsPlan& plan, const Attempt& a, const PlanEstimate* next) {
  const EigsRunRecord& r = a.rec;
  std::string s;
  if (r.stop == "budget")
    s = "; switched after " + fmt("%.3g", r.solve_seconds) + " s of " + r.plan + " (its measured convergence "
        "predicted more than 1.5x the fallback's " + fmt("%.3g", plan.fallback ? plan.fallback->total() : 0.0) + " s)";
  else
    s = "; " + r.plan + " ended without convergence after " + fmt("%.3g", r.setup_seconds + r.solve_seconds) +
        " s (" + r.stop + (r.detail.empty() ? "" : ": " + r.detail) + ")";
  if (!next) return s + "; no plan left to escalate to";
  return s + (r.stop == "budget" ? " to " : "; went on with ") + next->name() +
         (a.run.pairs.x.cols() > 0 ? " from its vectors" : "");
}

// Runs plan e, then each next plan while none converges, into `out` (which keeps the set of the
// run that passed the most pairs, the latest on a tie).
void run_from(const Problem& s, const EigsOptions& opt, EigsPlan& plan,
              const std::function<const SpectralProbe*()>& get_probe, const PlanEstimate* e, bool first,
              Solved& out) {
  for (; e; first = false) {
    Attempt a;
    try {
      a = attempt(s, opt, plan, *e, out.runs.empty() ? nullptr : &out.run.pairs, first, get_probe);
    } catch (const std::exception& ex) {
      if (first || interrupt_requested()) throw;
      // An escalation plan whose set-up fails (the factorization does not fit): the next one.
      EigsRunRecord r;
      r.plan = e->name();
      r.method = to_string(e->method);
      r.stop = "setup_failed";
      r.detail = ex.what();
      out.runs.push_back(r);
      out.why += "; " + r.plan + " could not be set up (" + r.detail + ")";
      e = next_plan(plan, out.runs, false);
      continue;
    }
    out.setup_s += a.rec.setup_seconds;
    out.solve_s += a.rec.solve_seconds;
    out.iterations += a.run.iterations;
    out.applies += a.run.applies;
    for (auto& h : a.run.history) out.history.push_back(h);
    out.why += a.setup.fz.why;
    const bool replace = out.runs.empty() || a.run.pairs_pass || a.rec.pairs_passed >= out.passed;
    out.runs.push_back(a.rec);
    const bool done = a.run.pairs_pass || interrupt_requested();
    if (!done) {
      e = next_plan(plan, out.runs, a.rec.stop == "rounding_floor");
      if (plan.predicted) out.why += escalation_text(plan, a, e);
    }
    if (replace) {
      out.ran = a.plan;
      out.setup = std::move(a.setup);
      out.run = std::move(a.run);
      out.cheb = a.cheb;
      out.passed = a.rec.pairs_passed;
    }
    if (done) break;
  }
}

}  // namespace

Solved solve_plans(const Problem& s, const EigsOptions& opt, EigsPlan& plan,
                   const std::function<const SpectralProbe*()>& get_probe) {
  Solved out;
  run_from(s, opt, plan, get_probe, &plan.chosen, true, out);
  return out;
}

bool solve_further(const Problem& s, const EigsOptions& opt, EigsPlan& plan,
                   const std::function<const SpectralProbe*()>& get_probe, const std::string& why, Solved& out) {
  if (!plan.predicted || out.runs.empty() || interrupt_requested()) return false;
  EigsRunRecord& last = out.runs.back();
  last.stop = "missing_pairs";
  last.detail = why;
  const PlanEstimate* e = next_plan(plan, out.runs, false);
  out.why += "; the set of " + last.plan + " misses eigenvalues (" + why + ")" +
             (e ? "; went on with " + e->name() + " from its vectors" : "; no plan left to escalate to");
  if (!e) return false;
  out.passed = 0;  // the set in hand is known incomplete: any run's set replaces it
  run_from(s, opt, plan, get_probe, e, false, out);
  return true;
}

}  // namespace tcsolve::eigs_detail
