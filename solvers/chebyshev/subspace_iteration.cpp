// Chebyshev-filtered subspace iteration: set-up, the driver, bounds, start, the iteration record
// and the stats (the other steps: restart.cpp, filter.cpp, orthonormalize.cpp, rayleigh_ritz.cpp,
// lock.cpp; the algorithm: solvers/chebyshev.hpp).
#include "solvers/chebyshev/subspace_iteration.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/trace.hpp"
#include "solvers/spectral_probe.hpp"

namespace tcsolve::chebyshev {

namespace {

int even_up(int d) { return d + (d & 1); }

// The argument checks of chebyshev_subspace (chebyshev.hpp); returns the block width m.
std::int64_t checked_block(const LinearOperator<double>& a, DenseBlockOps& ops,
                           const EigenOptions& opt, const ChebyshevOptions& copt) {
  const std::int64_t n = a.rows();
  detail::require_operator(a, n, ops.space(), "A");
  if (copt.fused_step && copt.fused_step->space() != ops.space())
    throw InvalidArgument("chebyshev: the fused step lives in another space than the dense ops");
  const std::int64_t k = opt.k;
  if (opt.which != Which::smallest && opt.which != Which::largest)
    throw InvalidArgument("chebyshev: only which = smallest or largest");
  // Choices by the whole problem's size (n is this process's share of a distributed block).
  const std::int64_t ng = ops.global_rows(n);
  const std::int64_t m = chebyshev_block(ng, k, opt.guard, copt);
  if (k < 1 || k >= ng || m < k + 1)
    throw InvalidArgument("chebyshev: need 1 <= k and k + 1 <= block <= n/2 (k = " +
                          std::to_string(k) + ", block = " + std::to_string(m) +
                          ", n = " + std::to_string(ng) + ")");
  TCSOLVE_REQUIRE(opt.tol > 0, "chebyshev: tol must be positive");
  TCSOLVE_REQUIRE(
      copt.max_degree >= 2 && copt.min_degree >= 2 && copt.min_degree <= copt.max_degree,
      "chebyshev: need 2 <= min_degree <= max_degree");
  if (copt.filter_precision != Precision::fp64 && copt.filter_precision != Precision::fp32)
    throw InvalidArgument(std::string("chebyshev: filter precision ") +
                          to_string(copt.filter_precision) + " not supported (fp64 or fp32)");
  return m;
}

}  // namespace

Bounds bounds_of(const ChebyshevBounds& a, double sgn) {
  Bounds b;
  b.norm = a.norm;
  if (sgn > 0) {
    b.upper = a.upper_bound;
    b.lower = a.lower;
  } else {
    b.upper = -a.lower_bound;
    b.lower = -a.upper;
  }
  return b;
}

// ---- set-up: the checks, and every block and host buffer of the solve.
// Device: 3 blocks n × m, 3 of m × m, m × 1 vectors, the fp32 rung's (dhigh + 1)·m coefficients.
SubspaceIteration::SubspaceIteration(const LinearOperator<double>& a, DenseBlockOps& ops,
                                     const EigenOptions& opt, const ChebyshevOptions& copt)
    : a_(a), ops_(ops), opt_(opt), copt_(copt), t_start_(detail::now_seconds()), n_(a.rows()),
      k_(opt.k), m_(checked_block(a, ops, opt, copt)),
      sgn_(opt.which == Which::smallest ? 1.0 : -1.0), dmax_(even_up(copt.max_degree)),
      dmin_(even_up(copt.min_degree)), dhigh_(std::max(dmax_, even_up(copt.max_degree_long))),
      ap_(a, ops, copt.apply_order, opt.keep_history || static_cast<bool>(opt.on_iteration)) {
  res_.n = n_;  // the rows of res.vectors (this process's share when distributed)
  res_.b_norm = 1.0;
  ladder_.on = copt.filter_precision == Precision::fp32 && copt.fused_step != nullptr;
  const std::int64_t m = m_, k = k_;
  ops_.reserve(0, 0, m * m);  // host-staged coefficients (fallback path); no n × m scratch
  ops_.small().reserve_small(m);
  Workspace& w = ws_;
  w.basis[0] = ops_.allocate(n_, m), w.basis[1] = ops_.allocate(n_, m);
  // The filter by rows on the host (filter_rows): its two n × ⌈m⌉₄ iterates in scratch.
  rows_ = copt.fused_step != nullptr && ops_.space() == Space::host && copt.fused_step->by_rows();
  w.scratch = ops_.allocate(n_, rows_ ? std::max(m, 2 * ((m + 3) / 4 * 4)) : m);
  w.gram = ops_.allocate(m, m), w.factor = ops_.allocate(m, m), w.small = ops_.allocate(m, m);
  w.theta = ops_.allocate(m, 1), w.resid = ops_.allocate(m, 1), w.status = ops_.allocate(8, 1);
  // The fp32 rung's per-filter coefficients (θ, q_d(θ), and qⱼ(θ)·2σⱼ₊₁/e for every step).
  const std::int64_t ncoef = ladder_.on ? (dhigh_ + 1) * m : 0;
  w.coef = ops_.allocate(std::max<std::int64_t>(ncoef, 1), 1);
  w.theta_sel = ops_.allocate(k, 1);
  w.status_h.resize(8), w.xn.resize(m), w.proj.resize(m * m);
  w.coef_h.resize(ncoef), w.qprev.resize(ladder_.on ? m : 0), w.qcur.resize(ladder_.on ? m : 0);
  w.sel_theta.resize(k), w.true_res.resize(k), w.bound.resize(k);
  w.kth.reserve(2 * m), w.cand.reserve(2 * m), w.idx.resize(m);
  w.swap_theta.resize(m), w.swap_rn.resize(m);
  s_.theta.resize(m), s_.rn.resize(m), s_.deg.resize(m);
  s_.lock_theta.reserve(m), s_.lock_res.reserve(m), s_.lock_floor.reserve(m);
  s_.refill_seed = opt.seed * 7919 + 3;
  if (!opt.vectors_out) prep_.emplace(ops_, vecs_, n_ * k);
}

// ---- the driver
EigenResult SubspaceIteration::run() {
  double t = detail::now_seconds();
  stats_.seconds_setup = t - t_start_;
  bounds();
  stats_.seconds_bounds = detail::now_seconds() - t;
  t = detail::now_seconds();
  start();
  stats_.seconds_init = detail::now_seconds() - t;
  t = detail::now_seconds();
  iterate();
  stats_.seconds_loop = detail::now_seconds() - t - stats_.seconds_finish;
  return finish();
}

// One outer iteration a pass: lock → (check) → restart → filter → orthonormalize →
// Rayleigh-Ritz → residuals → record. Host round trips: the orthonormalization's fetch and the
// residuals' fetch.
void SubspaceIteration::iterate() {
  checkpoint_.emplace(opt_.checkpoint_every, opt_.on_checkpoint);
  for (;; ++s_.it) {
    const double t_it = detail::now_seconds();
    std::int64_t w = lock(m_ - s_.nl);
    if (!check_if_due(w)) break;
    // The Ritz block (locked columns first) is the state a later run restarts from.
    if (checkpoint_->due()) checkpoint_->write(ops_, ws_.basis[s_.cur].view(), s_.it + 1, s_.nl);
    const FilterPlan plan = restart(w);
    const std::int64_t cols0 = ap_.columns(), applies0 = ap_.applies();
    const double t_f0 = detail::now_seconds();
    const auto marks = run_filter(w, plan);
    const std::int64_t steps = ap_.columns() - cols0;
    stats_.filter_applies += ap_.applies() - applies0;
    stats_.filter_columns += steps;
    const int passes = orthonormalize(w);  // ends with a fetch: the filter has completed
    const double t_o1 = detail::now_seconds();
    count_outer(w, passes);
    rayleigh_ritz(w);
    residuals(w);  // ends with a fetch
    const double t_r1 = detail::now_seconds();
    stats_.seconds_filter_ortho += t_o1 - t_f0;
    stats_.seconds_rayleigh_ritz += t_r1 - t_o1;
    s_.ax_valid = true;
    account_filter(plan, marks, steps);
    watch_climb(w, plan);
    if (!record(w, plan.wanted_degree, t_it)) break;
  }
}

bool SubspaceIteration::check_if_due(std::int64_t& w) {
  const bool done = all_found(w);
  const bool stop = !done && interrupt_requested();
  const bool last = s_.it + 1 >= opt_.max_iterations || stop;
  if (!done && !last) return true;
  const double tf = detail::now_seconds();
  const bool ok = check(w, last && !done);
  stats_.seconds_finish += detail::now_seconds() - tf;
  if (ok) {
    res_.status = SolverStatus::converged;
    return false;
  }
  if (s_.floor_stop && !last) {
    std::int64_t at = 0;
    for (std::int64_t j = 0; j < k_; ++j)
      at += ws_.idx[j] < s_.nl && s_.lock_floor[ws_.idx[j]];  // among the pairs the check returned
    res_.status = SolverStatus::not_converged;
    res_.reason = std::to_string(at) + " pair(s) stopped at the rounding floor (residual within "
                  "16u*|A| of it for " + std::to_string(kStallIterations) + " outer iterations without halving)";
    return false;
  }
  if (last) {
    const std::int64_t found = std::min(s_.nl, k_);
    if (stop) {
      res_.status = SolverStatus::interrupted;
      res_.reason = detail::interrupted_reason(s_.it + 1, found, k_, "locked");
    } else {
      res_.reason = "iteration limit " + std::to_string(opt_.max_iterations) + " reached with " +
                    std::to_string(found) + " of " + std::to_string(k_) + " pairs locked";
    }
    return false;
  }
  w = m_ - s_.nl;  // pairs unlocked by the explicit check: iterate on
  s_.ax_valid = false;
  return true;
}

// Stream marks around the filter (no synchronization; read after the residuals' fetch).
std::pair<int, int> SubspaceIteration::run_filter(std::int64_t w, const FilterPlan& plan) {
  const bool timed = ladder_.on || copt_.stats != nullptr;
  const int mk0 = timed ? ops_.queue().mark() : -1;
  if (plan.fp32) filter32(w, plan.cut);
  else filter(w, plan.cut);
  const int mk1 = timed ? ops_.queue().mark() : -1;
  return {mk0, mk1};
}

void SubspaceIteration::account_filter(const FilterPlan& plan, std::pair<int, int> marks,
                                       std::int64_t steps) {
  if (marks.first < 0) return;
  const double sec = ops_.queue().elapsed_seconds(marks.first, marks.second);
  (plan.fp32 ? stats_.seconds_fp32 : stats_.seconds_fp64) += sec;
  (plan.fp32 ? stats_.steps_fp32 : stats_.steps_fp64) += steps;
  ++(plan.fp32 ? stats_.filters_fp32 : stats_.filters_fp64);
}

// ---- bounds
void SubspaceIteration::bounds() {
  ChebyshevBounds given;
  if (copt_.bounds) {
    given = *copt_.bounds;
  } else {
    const SpectralProbe pr = spectral_probe(
        [&](MvView<const double> x, MvView<double> y) { ap_.apply(x, y); }, ops_, n_,
        copt_.lanczos_steps, opt_.seed);
    given.lower = pr.lower, given.upper = pr.upper;
    given.lower_bound = pr.lower_bound, given.upper_bound = pr.upper_bound;
    given.norm = std::max(std::abs(pr.lower), std::abs(pr.upper));
  }
  const Bounds bd = bounds_of(given, sgn_);
  res_.a_norm = opt_.a_norm > 0 ? opt_.a_norm : bd.norm;
  s_.upper = bd.upper;
  if (opt_.a_norm > 0) s_.upper = std::min(s_.upper, opt_.a_norm);
  s_.lower = bd.lower;
  s_.norm = bd.norm;
  s_.test_a = copt_.test_a >= 0 ? copt_.test_a : res_.a_norm;
  s_.test_b = copt_.test_a >= 0 ? copt_.test_b : 1.0;
}

// ---- start: random, orthonormal, Ritz pairs
void SubspaceIteration::start() {
  initial_block(ops_, ws_.basis[s_.cur].columns(0, m_), opt_);
  // a given start block must have independent, finite columns (as Lanczos's and LOBPCG's)
  check_start_block(ops_, ws_.basis[s_.cur].columns(0, m_), opt_, "chebyshev");
  trace_mark("chebyshev: initial block queued");
  orthonormalize(m_);
  trace_mark("chebyshev: initial block orthonormal");
  rayleigh_ritz(m_);
  residuals(m_);
  trace_mark("chebyshev: initial Ritz pairs");
  stats_.dense_budget_words += 2.0 * n_ * (4.0 * m_) + 8.0 * n_ * m_;
}

// Budget words (8 bytes) of the dense work of an outer iteration, per chebyshev.hpp: the filter
// recurrence (3·n·w for step 1, 4·n·cnt for the others), the passes and Rayleigh-Ritz.
void SubspaceIteration::count_outer(std::int64_t w, int passes) {
  const double n = static_cast<double>(n_);
  std::int64_t first = 0;
  stats_.dense_budget_words += 3.0 * n * w;
  for (int j = 1; j < s_.deg[w - 1]; ++j) {
    while (first < w && s_.deg[first] < j + 1) ++first;
    stats_.dense_budget_words += 4.0 * n * (w - first);
  }
  stats_.dense_budget_words += passes * n * (2.0 * s_.nl + 4.0 * w) + 8.0 * n * w;
}

// ---- record: the iteration's record, progress and the caller's budget (false: stop).
bool SubspaceIteration::record(std::int64_t w, int wanted_degree, double t_it) {
  IterationRecord rec;
  rec.iteration = s_.it;
  rec.ortho = s_.worst_branch;
  s_.worst_branch = OrthoBranch::none;
  rec.active = w;
  rec.converged = s_.nl;
  if (opt_.keep_history || opt_.on_iteration) {
    rec.residual_norms.assign(s_.lock_res.begin(), s_.lock_res.end());
    rec.residual_norms.insert(rec.residual_norms.end(), s_.rn.begin(), s_.rn.begin() + w);
    if (static_cast<std::int64_t>(rec.residual_norms.size()) > k_) rec.residual_norms.resize(k_);
  }
  const double total = detail::now_seconds() - t_it;
  if (ap_.timing()) {
    rec.apply_seconds = ap_.take_seconds();
    rec.dense_seconds = std::max(0.0, total - rec.apply_seconds);
    stats_.apply_seconds += rec.apply_seconds;
    stats_.dense_seconds += rec.dense_seconds;
  }
  if (opt_.on_iteration) opt_.on_iteration(rec);
  if (opt_.keep_history) res_.history.push_back(std::move(rec));
  if (!copt_.keep_going) return true;
  ChebyshevProgress pg;
  pg.outer = s_.it + 1;
  pg.filter_steps = s_.wanted_steps;
  pg.steps_left = std::max(0.0, s_.steps_left - wanted_degree);  // the estimate before the filter
  pg.locked = s_.nl;
  pg.seconds = detail::now_seconds() - t_start_;
  if (copt_.keep_going(pg)) return true;
  stats_.stopped = true;
  res_.reason = "stopped after " + std::to_string(s_.it + 1) + " outer iterations: the planner's "
                "budget was exceeded (the measured convergence predicted more time than the "
                "alternative plan)";
  // Best current approximations of the k wanted pairs (not converged).
  check(w, true);
  return false;
}

// ---- finish: the result's counts and the stats.
EigenResult SubspaceIteration::finish() {
  res_.iterations = s_.it + 1;
  res_.operator_applies = ap_.columns();
  res_.seconds = detail::now_seconds() - t_start_;
  if (copt_.stats) {
    stats_.block = m_;
    stats_.upper = s_.upper, stats_.lower = s_.lower;
    stats_.outer_iterations = s_.it + 1;
    stats_.applies = ap_.applies();
    stats_.cut = s_.last_cut;
    stats_.wanted_steps = s_.wanted_steps;
    *copt_.stats = stats_;
  }
  return std::move(res_);
}

// ---- small helpers of the steps
double SubspaceIteration::kth_smallest(std::int64_t c) {
  auto& v = ws_.kth;
  v.assign(s_.lock_theta.begin(), s_.lock_theta.end());
  v.insert(v.end(), s_.theta.begin(), s_.theta.begin() + c);
  std::nth_element(v.begin(), v.begin() + (k_ - 1), v.end());
  return v[k_ - 1];
}

std::int64_t SubspaceIteration::slowest(std::int64_t w) const {
  return std::max<std::int64_t>(0, std::min<std::int64_t>(w, k_ - s_.nl) - 1);
}

double SubspaceIteration::slowest_ratio(std::int64_t w) const {
  double r = 0.0;
  for (std::int64_t i = 0; i < w && s_.nl + i < k_; ++i)
    r = std::max(r, s_.rn[i] / tau(s_.theta[i]));
  return r;
}

int SubspaceIteration::projection_period(double ratio) {
  return std::max(1, static_cast<int>(std::log(1e6) / std::log(ratio)));
}

}  // namespace tcsolve::chebyshev
