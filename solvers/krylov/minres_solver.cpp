// Pseudo-block MINRES's solver: set-up, column scales, the cycles and the result
// (minres_solver.hpp; the recurrence, passes and memory in solvers/krylov/minres.cpp).
#include "solvers/krylov/minres_solver.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/interrupt.hpp"

namespace tcsolve::mr {

MinresSolver::MinresSolver(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t s,
                           KrylovOptions o)
    : a_(a), ops_(ops), n_(a.rows()), smax_(s), opt_(std::move(o)) {
  detail::require_operator(a_, n_, ops_.space(), "A");
  if (opt_.preconditioner) detail::require_operator(*opt_.preconditioner, n_, ops_.space(), "M");
  TCSOLVE_REQUIRE(s >= 1, "minres: need at least one right-hand side");
  TCSOLVE_REQUIRE(opt_.tol > 0 && std::isfinite(opt_.tol), "minres: tol must be positive");
  TCSOLVE_REQUIRE(opt_.max_iterations >= 0, "minres: max_iterations must not be negative");
  std::vector<double> inv;
  if (!opt_.preconditioner && !opt_.jacobi_diagonal.empty()) {
    for (double v : opt_.jacobi_diagonal)
      TCSOLVE_REQUIRE(std::isfinite(v), "minres: the Jacobi diagonal has a non-finite entry");
    inv = detail::jacobi_inverse(opt_.jacobi_diagonal, {}, 0.0, n_);  // 1/|a_ii| (zeros: 1)
    // M = c·I changes nothing (MINRES minimizes ‖r‖_{M⁻¹} = ‖r‖/√c): no Jacobi passes then.
    if (std::any_of(inv.begin(), inv.end(), [&](double v) { return v != inv[0]; })) mode_ = Precond::jacobi;
  }
  if (opt_.preconditioner) mode_ = Precond::general;
  ops_.reserve(0, 0, 16 * kFields * s);  // staging of the per-iteration downloads
  kern_ = make_minres_kernels(ops_, n_, s);
  for (auto* b : {&zc_, &zp_, &w_, &wp_, &xa_, &q_}) *b = ops_.allocate(n_, s);
  if (mode_ != Precond::none) r_ = ops_.allocate(n_, s);
  if (mode_ == Precond::general)
    uc_ = ops_.allocate(n_, s), up_ = ops_.allocate(n_, s), beta2_ = ops_.allocate(s, 1);
  if (mode_ == Precond::jacobi) {
    std::vector<double> d(inv.size());
    for (std::size_t i = 0; i < inv.size(); ++i) d[i] = 1.0 / inv[i];
    d_ = ops_.allocate(n_, 1), dinv_ = ops_.allocate(n_, 1);
    ops_.from_host(d.data(), n_, d_.view());
    ops_.from_host(inv.data(), n_, dinv_.view());
  }
  s_ = ops_.allocate(kFields, s), s2_ = ops_.allocate(kFields, s);
  for (auto* v : {&rn_, &bn_, &cs_, &inv_cs_, &neg_inv_cs_, &rstart_, &ascale_, &nscale_, &tgt_, &ls_, &rej_})
    v->resize(s);
  minus_.assign(s, -1.0), zero_.assign(s, 0.0);
  state_.resize(3 * s), extra_.resize(3 * s);
  for (auto* v : {&act_, &keep_, &still_, &park_, &cyc_, &parked_, &idx_}) v->reserve(s);
  left_at_.resize(s), pos_.resize(s), why_.resize(s), miss_.resize(s);
  for (auto& p : ring_) p.buf.resize(3 * s);
}

void MinresSolver::apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y) {
  if (x.cols == 0) return;
  detail::apply_ordered(ApplyOrder::events, ops_, op, x, y);
  if (&op == &a_) columns_ += x.cols;
}

MinresSolver::Run MinresSolver::start(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  Run r;
  tcsolve::detail::begin_run(r, "minres", "minres", rhs, x, n_, smax_, ops_.space(),
                    opt_.keep_history || static_cast<bool>(opt_.on_iteration));
  columns_ = 0, a_norm_ = 0.0, head_ = queued_ = 0;
  column_scales(rhs);
  if (!use_x0) ops_.fill_zero(x);
  act_.clear();
  for (std::int64_t j = 0; j < r.s; ++j) {
    miss_[j] = Miss::none, why_[j] = kStillActive, ls_[j] = rej_[j] = rn_[j] = 0.0;
    if (bn_[j] > 0.0) {
      act_.push_back(j);
    } else {  // b_j = 0: x_j = 0 exactly
      if (use_x0) ops_.fill_zero(x.columns(j, 1));
      r.res.column_iterations[j] = 0;
    }
  }
  return r;
}

void MinresSolver::column_scales(MvView<const double> rhs) {
  detail::power_of_two_scales(ops_, rhs, q_.columns(0, 1), bn_.data(), cs_.data(), "minres", 0.0);
  for (std::int64_t j = 0; j < rhs.cols; ++j) {
    inv_cs_[j] = 1.0 / cs_[j];
    neg_inv_cs_[j] = -inv_cs_[j];
  }
}

void MinresSolver::true_residuals(Run& r, const std::int64_t* cols, std::int64_t m) {
  if (m == 0) return;
  auto xs = zc_.columns(0, m), ax = q_.columns(0, m);
  ops_.gather_columns(r.x, cols, m, xs);
  apply(a_, xs, ax);
  ops_.gather_columns(r.rhs, cols, m, xs);
  for (std::int64_t i = 0; i < m; ++i) ascale_[i] = inv_cs_[cols[i]], nscale_[i] = neg_inv_cs_[cols[i]];
  ops_.axpby_columns(ascale_.data(), xs, nscale_.data(), ax);  // (b − A·x)/c, exactly scaled
  ops_.column_norms(ax, tgt_.data());
  for (std::int64_t i = 0; i < m; ++i) {
    const std::int64_t c = cols[i];
    rn_[c] = bn_[c] > 0.0 ? tgt_[i] / bn_[c] : tgt_[i];  // (a zero column: absolute)
  }
}

// ---- cycles

bool MinresSolver::begin_cycle(Run& r) {
  r.na = static_cast<std::int64_t>(act_.size());
  if (r.na == 0) return false;
  std::int64_t na = r.na;
  parked_.clear();
  for (std::int64_t j = 0; j < na; ++j) ascale_[j] = inv_cs_[act_[j]], left_at_[act_[j]] = -1;
  // X_a = x(:, act)/c;  R_0 = B(:, act)/c − A·X_a into the block this mode starts from.
  auto r0 = (mode_ == Precond::none ? zc_ : mode_ == Precond::general ? uc_ : r_).columns(0, na);
  ops_.gather_columns(r.x, act_.data(), na, q_.columns(0, na));
  ops_.axpby_columns(ascale_.data(), q_.columns(0, na), zero_.data(), xa_.columns(0, na));
  apply(a_, xa_.columns(0, na), q_.columns(0, na));
  ops_.gather_columns(r.rhs, act_.data(), na, r0);
  ops_.axpby_columns(minus_.data(), q_.columns(0, na), ascale_.data(), r0);
  ops_.column_norms(r0, tgt_.data());
  for (std::int64_t j = 0; j < na; ++j) rstart_[act_[j]] = rn_[act_[j]] = tgt_[j] / bn_[act_[j]];
  retire_initial(r);
  if ((na = r.na) == 0) return false;
  cyc_.assign(act_.begin(), act_.end());
  // z_1 = M⁻¹·r_0 (none: r_0 itself), then β_1 = √(r_0ᵀz_1) and the rotation's start.
  const ScalarParams p = params();
  auto S = scalars(na);
  if (mode_ == Precond::none) {
    kern_->dots(zc_.columns(0, na), zc_.columns(0, na), {}, nullptr, S, DotStep::start, p);
  } else if (mode_ == Precond::jacobi) {
    ops_.scale_rows(dinv_.data(), r_.columns(0, na), zc_.columns(0, na));
    kern_->dots(zc_.columns(0, na), r_.columns(0, na), {}, nullptr, S, DotStep::start, p);
  } else {
    ops_.copy(uc_.columns(0, na), r_.columns(0, na));
    apply(*opt_.preconditioner, uc_.columns(0, na), zc_.columns(0, na));
    kern_->dots(zc_.columns(0, na), uc_.columns(0, na), {}, nullptr, S, DotStep::start, p);
    ops_.fill_zero(up_.columns(0, na));
  }
  for (auto* b : {&zp_, &w_, &wp_}) ops_.fill_zero(b->columns(0, na));
  set_targets(r);
  return true;
}

// Columns whose true residual passes tol at a cycle's start (a given x0, or a restart that
// nothing left to do) leave before the first iteration.
void MinresSolver::retire_initial(Run& r) {
  keep_.clear(), still_.clear();
  for (std::int64_t j = 0; j < r.na; ++j) {
    const std::int64_t c = act_[j];
    if (rn_[c] <= opt_.tol) {
      if (r.res.column_iterations[c] < 0) r.res.column_iterations[c] = r.it;
    } else {
      keep_.push_back(j), still_.push_back(c);
    }
  }
  if (static_cast<std::int64_t>(keep_.size()) == r.na) return;
  park_.clear();
  compact(r.na, keep_, park_);
  r.na = static_cast<std::int64_t>(keep_.size());
  act_.swap(still_);
}

// Recurrence targets: max(tol, 4u)·‖b_j‖ (scaled), on the estimate φ̄ or ‖r‖ of R.
void MinresSolver::set_targets(Run& r) {
  for (std::int64_t j = 0; j < r.na; ++j) tgt_[j] = std::max(opt_.tol, kFloorRel) * bn_[act_[j]];
  ops_.from_host(tgt_.data(), 1, MvView<double>{s_.data() + kTarget, 1, r.na, kFields, ops_.space()});
}

void MinresSolver::end_cycle(Run& r) {
  drain(r);
  if (r.na > 0) {
    flush(r);
    read_column_extras(r.na);
    for (std::int64_t j = 0; j < r.na; ++j) {
      const std::int64_t c = act_[j];
      why_[c] = static_cast<int>(state_[3 * j + 2]);
      pos_[c] = j;
      if (left_at_[c] < 0) left_at_[c] = r.it;
    }
  }
  accept_iterates(r);
  decide_restarts(r, cyc_);
}

void MinresSolver::accept_iterates(Run& r) {
  const auto m = static_cast<std::int64_t>(cyc_.size());
  if (m == 0) return;
  idx_.clear();
  for (std::int64_t i = 0; i < m; ++i) idx_.push_back(pos_[cyc_[i]]), ascale_[i] = inv_cs_[cyc_[i]];
  auto xs = zc_.columns(0, m), ax = q_.columns(0, m);
  ops_.gather_columns(xa_.view(), idx_.data(), m, xs);
  apply(a_, xs, ax);
  ops_.gather_columns(r.rhs, cyc_.data(), m, xs);
  ops_.axpby_columns(ascale_.data(), xs, minus_.data(), ax);  // b/c − A·(x/c)
  ops_.column_norms(ax, tgt_.data());
  idx_.clear();
  for (std::int64_t i = 0; i < m; ++i) {
    const std::int64_t c = cyc_[i];
    const double v = tgt_[i] / bn_[c];
    rej_[c] = 0.0;
    if (v <= rstart_[c]) {
      write_back(r, c, pos_[c]);
      rn_[c] = v;
    } else {  // (NaN too)
      rej_[c] = std::isfinite(v) ? v : HUGE_VAL;
      rn_[c] = rstart_[c];
    }
  }
}

// x_k of the columns still in the block: each becomes finishing, and one update pass makes the
// pending x (and r) update of the last rotation.
void MinresSolver::flush(Run& r) {
  auto S = scalars(r.na);
  kern_->finish_all(S);
  kern_->update(update_blocks(r.na), S);
  kern_->rotate(S, {}, params());
}

// A column that missed tol restarts from its true residual while the cycle gained on it (its true
// residual fell below kRestartGain times the cycle's first) and cycles, iterations are left.
void MinresSolver::decide_restarts(Run& r, const std::vector<std::int64_t>& cycle_cols) {
  act_.clear();
  const bool limit = r.it >= opt_.max_iterations, stop = interrupt_requested();
  for (std::int64_t c : cycle_cols) {
    if (rn_[c] <= opt_.tol) {
      if (r.res.column_iterations[c] < 0) r.res.column_iterations[c] = left_at_[c];
      miss_[c] = Miss::none;
      continue;
    }
    const bool gained = rn_[c] <= kRestartGain * rstart_[c];
    if (why_[c] == kNonFinite || !std::isfinite(rn_[c]))
      miss_[c] = Miss::non_finite;
    else if (limit)
      miss_[c] = Miss::limit;
    else if (stop)
      miss_[c] = Miss::interrupted;
    else if (gained && r.cycle + 1 < kMaxCycles)
      act_.push_back(c), miss_[c] = Miss::none;
    else if (why_[c] == kLeastSquares)
      miss_[c] = Miss::least_squares;
    else if (why_[c] == kSingularT)
      miss_[c] = Miss::singular;
    else
      miss_[c] = gained ? Miss::cycles : Miss::stagnated;
  }
}

// ---- the result

SolveResult MinresSolver::finish(Run& r, double t0) {
  SolveResult& res = r.res;
  keep_.clear();
  for (std::int64_t j = 0; j < r.s; ++j) keep_.push_back(j);
  true_residuals(r, keep_.data(), r.s);
  res.residual_norms.assign(rn_.begin(), rn_.begin() + r.s);
  detail::finish_run(r, rn_, opt_.tol, columns_, t0, [&] { return not_converged_reason(r); });
  for (std::int64_t j = 0; j < r.s; ++j)
    if (rn_[j] > opt_.tol) res.column_iterations[j] = -1;
  return std::move(r.res);
}

// The columns that missed tol (the first 8), each with its true residual and what was seen:
// the iteration limit, a least-squares solution of a singular A, stagnation at the rounding
// floor u·‖A‖·‖x_j‖/‖b_j‖ (‖A‖ ≥ the largest ‖A·z‖/‖z‖ of the Lanczos vectors), non-finite values.
std::string MinresSolver::not_converged_reason(Run& r) {
  ops_.column_norms(r.x, tgt_.data());  // ‖x_j‖
  std::int64_t missed = 0;
  std::string list;
  for (std::int64_t c = 0; c < r.s; ++c) {
    if (!(rn_[c] > opt_.tol) && std::isfinite(rn_[c])) continue;
    if (++missed > 8) continue;
    const double floor = kUnitRoundoff * a_norm_ * tgt_[c] / (bn_[c] * cs_[c]);
    std::string why;
    switch (miss_[c]) {
      case Miss::limit:
        why = format("iteration limit %lld reached", static_cast<long long>(opt_.max_iterations));
        break;
      case Miss::least_squares:
        why = format(
            "stopped at a least-squares solution (‖A·r‖/(‖A‖·‖r‖) ≈ %.2g): A is singular to working "
            "precision and b_j is not in its range",
            ls_[c]);
        break;
      case Miss::singular:
        why = "the Lanczos process ended with T singular: A is singular and b_j is not in its range";
        break;
      case Miss::non_finite:
        why = "non-finite values appeared (A, M or x0 holds Inf/NaN, or A·x overflowed)";
        break;
      case Miss::cycles:
        why = format("still above tol after %d cycles restarted from the true residual", kMaxCycles);
        break;
      default:
        why = format(
            "stagnated: a restart from the true residual did not halve it; its rounding floor "
            "u·‖A‖·‖x_j‖/‖b_j‖ is at least %.2g",
            floor);
        if (opt_.tol < floor) why += format(", tol %g is below what fp64 can attain there", opt_.tol);
    }
    if (rej_[c] > 0.0)
      why += format("; the last cycle's iterate, with a true residual of %.3g, was discarded", rej_[c]);
    list += format("%scolumn %lld: %.3g (%s)", list.empty() ? "" : "; ", static_cast<long long>(c), rn_[c],
                   why.c_str());
  }
  std::string s = format("%lld of %lld columns missed tol %g (true residual ‖b_j − A·x_j‖/‖b_j‖): ",
                         static_cast<long long>(missed), static_cast<long long>(r.s), opt_.tol) +
                  list;
  if (missed > 8) s += format("; and %lld more", static_cast<long long>(missed - 8));
  return s;
}

SolveResult MinresSolver::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  const double t0 = detail::now_seconds();
  Run r = start(rhs, x, use_x0);
  for (r.cycle = 0; r.cycle < kMaxCycles && !act_.empty(); ++r.cycle) {
    if (!begin_cycle(r)) break;
    // Iterations are queued without waiting; the host reads iteration t − 1's scalars once
    // iteration t is queued, and drains the queue only when some column is done.
    while (r.na > 0 && r.it < opt_.max_iterations && !interrupt_requested()) {
      queue_iteration(r);
      if (queued_ < kQueueDepth && r.it < opt_.max_iterations) continue;
      if (read_back(r)) retire_done(r);
    }
    end_cycle(r);
    if (r.it >= opt_.max_iterations || interrupt_requested()) break;
  }
  return finish(r, t0);
}

}  // namespace tcsolve::mr
