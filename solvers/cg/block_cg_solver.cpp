// Block CG's solver: set-up, column scales, the cycles and the result (block_cg_solver.hpp; the
// recurrence, traffic and memory in solvers/block_cg.hpp).
#include "solvers/cg/block_cg_solver.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve::cg {

template <class W>
BlockCgSolver<W>::BlockCgSolver(const LinearOperator<double>& a, DenseBlockOps& ops,
                                std::int64_t s, CgOptions o)
    : a_(a), ops_(ops), n_(a.rows()), smax_(s), nglob_(ops.global_rows(a.rows())), opt_(std::move(o)) {
  detail::require_operator(a_, n_, ops_.space(), "A");
  if (opt_.preconditioner) detail::require_operator(*opt_.preconditioner, n_, ops_.space(), "M");
  TCSOLVE_REQUIRE(s >= 1, "block CG: need at least one right-hand side");
  TCSOLVE_REQUIRE(opt_.tol > 0, "block CG: tol must be positive");
  ops_.reserve(n_, s, 2 * s * s);
  ops_.small().reserve_small(s);
  if constexpr (kFp32) {
    TCSOLVE_REQUIRE(opt_.step32 && ops_.cg().fp32_blocks() && !opt_.preconditioner && s <= kCgFp32MaxRhs,
                    "block CG: the fp32 iteration needs A's fp32 step, dense ops with fp32 blocks, "
                    "at most 32 right-hand sides and no preconditioner other than Jacobi");
    TCSOLVE_REQUIRE(opt_.step32->space() == ops_.space(), "block CG: A's fp32 step in another memory space");
    r64_ = ops_.allocate(n_, s), p64_ = ops_.allocate(n_, s);
  }
  xa_ = alloc(n_, s), qr_ = alloc(n_, 2 * s), z_ = alloc(n_, s);
  p_ = alloc(n_, s);
  g1_ = ops_.allocate(s, 2 * s), f_ = ops_.allocate(s, s + 1), alpha_ = ops_.allocate(s, s);
  beta_ = ops_.allocate(s, s), g2_ = ops_.allocate(2 * s + 1, s), rz_ = ops_.allocate(s, s);
  nrm2_ = ops_.allocate(s, 1), st_ = ops_.allocate(1, 1);
  if (!opt_.preconditioner && !opt_.jacobi_diagonal.empty()) {
    auto inv = detail::jacobi_inverse(opt_.jacobi_diagonal, {}, 0.0, n_);
    // M = c·I changes nothing in CG (α and β absorb c): skip the scaling passes.
    bool constant = opt_.drop_constant_jacobi &&
                    std::all_of(inv.begin(), inv.end(), [&](double d) { return d == inv[0]; });
    if (!constant) {
      dinv_ = ops_.allocate(n_, 1);
      ops_.from_host(inv.data(), n_, dinv_.view());
    }
  }
  for (auto* v : {&rn_, &bn_, &cs_, &inv_cs_, &neg_inv_cs_, &thr_, &rstart_, &rq_, &ascale_, &last_rn_})
    v->resize(s);
  zero_.assign(s, 0.0), hst_.resize(1);
  act_.reserve(s), keep_idx_.reserve(s), still_.reserve(s);
  for (int i = 0; i < 4; ++i) spare_.emplace_back(s + 1), spare_marks_.emplace_back().reserve(4);
}

template <class W>
MultiVector<W> BlockCgSolver<W>::alloc(std::int64_t rows, std::int64_t cols) {
  if constexpr (kFp32) return ops_.allocate32(rows, cols);
  else return ops_.allocate(rows, cols);
}

template <class W>
MvView<double> BlockCgSolver<W>::scratch(std::int64_t cols) {
  if constexpr (kFp32) return r64_.columns(0, cols);
  else return z_.columns(0, cols);
}

template <class W>
MvView<W> BlockCgSolver<W>::preconditioned_block(std::int64_t na) {
  return preconditioned() ? z_.columns(0, na) : residual_block(na);
}

// ---- operator applies, ordered as the options say
template <class W>
void BlockCgSolver<W>::apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y) {
  if (x.cols == 0) return;
  const int m0 = apply_marks_ ? ops_.queue().mark() : -1;
  detail::apply_ordered(opt_.apply_order, ops_, op, x, y);
  if (apply_marks_) apply_marks_->push_back({m0, ops_.queue().mark(), &op != &a_});
  ++applies_;
  if (&op == &a_) columns_ += x.cols;
}

// Q = A·P on W blocks: the operator (fp64), or A's fp32 step (step32: A as stored there, sums in
// fp32) on ops' stream.
template <class W>
void BlockCgSolver<W>::apply_w(MvView<const W> x, MvView<W> y) {
  if constexpr (!kFp32) {
    apply(a_, x, y);
  } else {
    if (x.cols == 0) return;
    const int m0 = apply_marks_ ? ops_.queue().mark() : -1;
    opt_.step32->step32(1.0, x, 0.0, 0.0, y, MvView<const float>{}, nullptr);
    if (apply_marks_) apply_marks_->push_back({m0, ops_.queue().mark(), false});
    ++applies_;
    columns_ += x.cols;
  }
}

template <class W>
void BlockCgSolver<W>::precondition(MvView<const double> in, MvView<double> out) {
  if (opt_.preconditioner) apply(*opt_.preconditioner, in, out);
  else if (dinv_.data()) ops_.scale_rows(dinv_.data(), in, out);
  else ops_.copy(in, out);
}

// ---- start, scales, true residuals

template <class W>
typename BlockCgSolver<W>::Run BlockCgSolver<W>::start(MvView<const double> rhs, MvView<double> x,
                                                         bool use_x0) {
  Run r;
  detail::begin_run(r, "block CG", "", rhs, x, n_, smax_, ops_.space(),
                    opt_.keep_history || static_cast<bool>(opt_.on_iteration));
  applies_ = columns_ = fused_iterations_ = robust_steps_ = 0;
  sync_cycles_ = false;
  budget_words_ = apply_s_ = dense_s_ = 0.0;
  column_scales(rhs);
  set_targets(opt_.tol);  // (fp32: each refinement sets its own)
  climb_ = false, climb_reason_.clear(), refinements_ = 0, weak_steps_ = 0;
  a_norm_ = 0.0, rq_count_ = 0;
  if (!use_x0) ops_.fill_zero(x);
  act_.clear();  // columns to (re)solve: all at first, then those whose true residual failed
  for (std::int64_t j = 0; j < r.s; ++j) act_.push_back(j);
  return r;
}

// Recurrence targets: ‖r_j‖ ≤ max(rel, 4u)·‖b_j‖ (scaled).
template <class W>
void BlockCgSolver<W>::set_targets(double rel) {
  for (std::size_t j = 0; j < thr_.size(); ++j) thr_[j] = std::max(rel, kFloorRel) * bn_[j];
}

template <class W>
void BlockCgSolver<W>::column_scales(MvView<const double> rhs) {
  detail::power_of_two_scales(ops_, rhs, scratch(1), bn_.data(), cs_.data(), "block CG");
  for (std::int64_t j = 0; j < rhs.cols; ++j) {
    inv_cs_[j] = 1.0 / cs_[j];
    neg_inv_cs_[j] = -inv_cs_[j];
  }
}

template <class W>
void BlockCgSolver<W>::true_residuals(Run& r) {
  auto rbuf = scratch(r.s);
  apply(a_, r.x, rbuf);
  ops_.axpby_columns(inv_cs_.data(), r.rhs, neg_inv_cs_.data(), rbuf);  // (b − A·x)/c, exactly
  ops_.column_norms(rbuf, rn_.data());
  for (std::int64_t j = 0; j < r.s; ++j) rn_[j] /= bn_[j];
}

// x(:, c) ← the active column j's iterate: c·X_a(:, j) (fp64), or x += c·d_j (fp32).
template <class W>
void BlockCgSolver<W>::write_back(Run& r, std::int64_t j, std::int64_t c) {
  if constexpr (kFp32) ops_.cg().add_converted(xa_.columns(j, 1), r.x.columns(c, 1), cs_[c]);
  else ops_.axpby_columns(&cs_[c], xa_.columns(j, 1), zero_.data(), r.x.columns(c, 1));
}

// ---- cycles

template <class W>
bool BlockCgSolver<W>::begin_cycle(Run& r) {
  if constexpr (kFp32) {
    return begin_refinement(r);
  } else {
    true_residuals(r);
    r.na = static_cast<std::int64_t>(act_.size());
    // R = the scaled true residuals of the active columns; X_a = x(:, act)/c through the scratch.
    ops_.gather_columns(scratch(r.s), act_.data(), r.na, residual_block(r.na));
    ops_.gather_columns(r.x, act_.data(), r.na, scratch(r.na));
    for (std::int64_t j = 0; j < r.na; ++j) ascale_[j] = inv_cs_[act_[j]];
    ops_.axpby_columns(ascale_.data(), scratch(r.na), zero_.data(), iterate_block(r.na));
    if (!retire_initial(r)) return false;
    precondition(residual_block(r.na), search_block(r.na));
    return first_search_block(r, orthonormalize_search(r.na));
  }
}

// Columns whose true residual passes tol at a cycle's start leave. false: none is left.
template <class W>
bool BlockCgSolver<W>::retire_initial(Run& r) {
  retire_where(r, [&](std::int64_t j) {
    if (!(rn_[act_[j]] <= opt_.tol)) return false;
    if (r.res.column_iterations[act_[j]] < 0) r.res.column_iterations[act_[j]] = r.it;
    return true;
  });
  return r.na > 0;
}

// The cycle's first search block P = orth(M·R) (o: its orthonormalization) is in place: its rank
// decides the mode (deflating below na columns; synchronous when the next block cannot have full
// rank, rk + na > n), then Q = A·P, Pᵀ[Q R] and the factor are queued, and PᵀAP's diagonal (the
// Rayleigh quotients of an orthonormal block: a lower bound of ‖A‖ for the floor) is fetched with
// the next iteration's scalars. false: no direction (breakdown).
template <class W>
bool BlockCgSolver<W>::first_search_block(Run& r, OrthoOutcome o) {
  r.rk = o.rank;
  r.branch = o.branch;
  r.explicit_ptr = true;
  r.exhausted = r.flagged = false;
  r.dim = 0;
  for (std::int64_t c : act_) last_rn_[c] = rn_[c] * bn_[c];
  r.deflating = r.rk < r.na;
  r.sync_mode = sync_cycles_ || r.deflating || r.rk + r.na > nglob_;
  if (r.rk == 0) return no_direction(r, "M·R at the cycle's start");
  queue_gram(r.rk, r.na, true, kPivTol);
  absorb_rayleigh();
  rq_count_ = r.rk;
  ops_.queue().download_deferred(MvView<const double>{g1_.data(), 1, r.rk, g1_.rows() + 1, ops_.space()},
                         rq_.data(), 1);
  return true;
}

// a_norm_ = max(a_norm_, the Rayleigh quotients fetched last).
template <class W>
void BlockCgSolver<W>::absorb_rayleigh() {
  for (std::int64_t i = 0; i < rq_count_; ++i)
    if (std::isfinite(rq_[i])) a_norm_ = std::max(a_norm_, rq_[i]);
  rq_count_ = 0;
}

template <class W>
bool BlockCgSolver<W>::after_drain(Run& r) {
  const bool bad_now = r.rk > 0 && factor_status() != 0.0;
  if constexpr (kFp32) {
    // A flagged factor ends the refinement step: the next one restarts from orth(M·R), formed
    // (with dropping) in fp64. Else a refinement step when some column reached its inner target,
    // and at every drain once a factor was flagged in this step (as before deflation existed).
    if (bad_now || r.exhausted) return false;
    bool target = r.flagged;
    for (std::int64_t j = 0; j < r.na; ++j) target = target || rn_[j] <= thr_[act_[j]];
    if (target && !replace_residuals(r)) return false;
    return r.rk > 0 || no_direction(r, "M·R + P·β");
  } else {
    const std::int64_t na0 = r.na;
    if (!retire_converged(r) || r.exhausted) return false;
    if (r.rk == 0) return no_direction(r, "M·R + P·β");
    if (bad_now) return deflate(r);
    // After a compaction only PᵀR is new: Q = A·P and PᵀQ's factor are those of the same P.
    if (r.na < na0) queue_ptr(r.rk, r.na);
    return true;
  }
}

// The queued iterations' scalars are consumed, then x holds the active iterate.
template <class W>
void BlockCgSolver<W>::end_cycle(Run& r) {
  drain_queue(r);
  ops_.synchronize();
  for (std::int64_t j = 0; j < r.na; ++j) write_back(r, j, act_[j]);
  if (r.res.status == SolverStatus::breakdown) return;
  true_residuals(r);
  act_.clear();
  for (std::int64_t j = 0; j < r.s; ++j) {
    if (rn_[j] > opt_.tol) act_.push_back(j);
    else if (r.res.column_iterations[j] < 0) r.res.column_iterations[j] = r.it;  // (fp32: here)
  }
}

template <class W>
void BlockCgSolver<W>::drain_queue(Run& r) {
  while (!queue_.empty()) {
    Pending& q = queue_.front();
    ops_.queue().fetch_wait(q.ticket);
    std::int64_t nconv = 0;
    for (std::int64_t j = 0; j < q.na; ++j)
      if (std::sqrt(std::max(0.0, q.norms2[j])) <= thr_[act_[j]]) ++nconv;
    record(r.res, q, nconv, r.want_norms);
    recycle(q);
    queue_.pop_front();
  }
}

// ---- the result

template <class W>
SolveResult BlockCgSolver<W>::finish(Run& r, double t0) {
  SolveResult& res = r.res;
  true_residuals(r);
  res.residual_norms.assign(rn_.begin(), rn_.begin() + r.s);
  detail::finish_run(r, rn_, opt_.tol, columns_, t0, [&] { return not_converged_reason(r); });
  if (opt_.stats)  // (every field, in CgStats' order)
    *opt_.stats = CgStats{applies_, fused_iterations_, robust_steps_, budget_words_, apply_s_, dense_s_};
  return std::move(r.res);
}

// What was seen when a column missed tol: the iteration limit, or (all cycles run) the worst
// column's true residual against its rounding floor u·‖A‖·‖x_j‖/‖b_j‖ (‖A‖ ≥ the largest
// Rayleigh quotient seen; ‖x_j‖/c_j from one norm of the scaled column). rn_ holds the true
// residuals of the final check.
template <class W>
std::string BlockCgSolver<W>::not_converged_reason(Run& r) {
  std::int64_t w = 0;
  for (std::int64_t j = 1; j < r.s; ++j)
    if (rn_[j] > rn_[w]) w = j;
  const std::string worst = format("column %lld's true residual ‖b_j − A·x_j‖/‖b_j‖ is %.3g",
                                   static_cast<long long>(w), rn_[w]);
  if (r.it >= opt_.max_iterations)
    return format("iteration limit %lld reached: ", static_cast<long long>(opt_.max_iterations)) + worst;
  absorb_rayleigh();
  auto t = scratch(1);
  ops_.axpby_columns(&inv_cs_[w], r.x.columns(w, 1), zero_.data(), t);
  double xn = 0.0;
  ops_.column_norms(t, &xn);
  const double floor = kUnitRoundoff * a_norm_ * xn / bn_[w];
  std::string s = worst + format(" after %d cycles, each restarted from the true residual and run until the "
                                 "recurrence residual passed max(tol, 4u)·‖b_j‖; its rounding floor "
                                 "u·‖A‖·‖x_j‖/‖b_j‖ is at least %.2g (‖A‖ ≥ %.3g)",
                                 kFp32 ? refinements_ : opt_.max_cycles, floor, a_norm_);
  if (opt_.tol < std::max(floor, kFloorRel))
    s += format("; tol %g is below what fp64 can attain there", opt_.tol);
  return s;
}

template <class W>
SolveResult BlockCgSolver<W>::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  const double t0 = detail::now_seconds();
  Run r = start(rhs, x, use_x0);
  detail::Checkpointer checkpoint(opt_.checkpoint_every, opt_.on_checkpoint);
  const int cycles = kFp32 ? opt_.max_refinements : opt_.max_cycles;
  for (int cycle = 0; cycle < cycles && !act_.empty(); ++cycle) {
    if (!begin_cycle(r)) break;
    // Iterations are queued without waiting; the host reads iteration t − 1's norms and factor
    // status once iteration t is queued (at once in sync mode).
    while (r.na > 0 && r.it < opt_.max_iterations && !interrupt_requested()) {
      queue_iteration(r, checkpoint);
      if (!r.sync_mode && queue_.size() < 2 && r.it < opt_.max_iterations) continue;
      if (!read_back(r)) continue;
      ops_.synchronize();  // drained: norms() holds the latest norms of the na columns
      if (!after_drain(r)) break;
    }
    end_cycle(r);
    if (r.res.status == SolverStatus::breakdown) break;
    if (r.it >= opt_.max_iterations || interrupt_requested()) break;
    if constexpr (kFp32) {
      // (the same test as a refinement step's, for the step that ended the cycle)
      if (climb_ || stalled(act_)) break;
    }
  }
  if constexpr (kFp32) {
    if (r.res.status == SolverStatus::breakdown) {
      climb_ = true;
      climb_reason_ = "the fp32 iteration broke down (" + r.res.reason + ")";
      r.res.status = SolverStatus::not_converged;
      r.res.reason.clear();
    } else if (!act_.empty() && !climb_ && r.it < opt_.max_iterations && !interrupt_requested()) {
      climb_ = true;
      climb_reason_ = std::to_string(refinements_) + " refinements did not reach the tolerance";
    }
  }
  return finish(r, t0);
}

template <class W>
double BlockCgSolver<W>::factor_status() {
  ops_.queue().download_deferred(small(st_, 0, 1, 0, 1), hst_.data(), 1);
  ops_.queue().fetch();
  return hst_[0];
}

template class BlockCgSolver<double>;
template class BlockCgSolver<float>;

}  // namespace tcsolve::cg
