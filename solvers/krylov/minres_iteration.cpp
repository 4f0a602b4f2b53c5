// Pseudo-block MINRES's iteration steps: the queued iteration, reading its scalars back, and the
// columns that leave the block (minres_solver.hpp; the recurrence and passes in minres.cpp).
#include <algorithm>
#include <utility>

#include "core/error.hpp"
#include "solvers/krylov/minres_solver.hpp"

namespace tcsolve::mr {

UpdateBlocks MinresSolver::update_blocks(std::int64_t na) {
  UpdateBlocks b;
  b.q = q_.columns(0, na), b.zc = zc_.columns(0, na), b.zp = zp_.columns(0, na);
  b.wp = wp_.columns(0, na), b.w = w_.columns(0, na), b.x = xa_.columns(0, na);
  if (mode_ != Precond::none) b.r = r_.columns(0, na);
  if (mode_ == Precond::general) b.uc = uc_.columns(0, na), b.up = up_.columns(0, na);
  if (mode_ == Precond::jacobi) b.d = d_.data(), b.dinv = dinv_.data();
  return b;
}

// Iteration k (minres.cpp): Q = A·z_k; the dot pass and α_k; the update pass (x_{k−1}, r_{k−1},
// z_{k+1} or u_{k+1}); with another preconditioner z_{k+1} = M⁻¹·u_{k+1} and β_{k+1}² = uᵀz; the
// rotation; then the blocks change roles (z_{k+1} becomes Z_c, w_{k−1} W) without copies.
void MinresSolver::queue_iteration(Run& r) {
  Pending& pd = ring_[(head_ + queued_) % ring_.size()];
  ++queued_;
  const std::int64_t na = r.na;
  const bool t = timing();
  pd.it = r.it, pd.na = na;
  pd.mark0 = pd.a0 = t ? ops_.queue().mark() : -1;
  apply(a_, zc_.columns(0, na), q_.columns(0, na));
  pd.a1 = t ? ops_.queue().mark() : -1;
  const ScalarParams p = params();
  auto S = scalars(na);
  const bool general = mode_ == Precond::general;
  kern_->dots(zc_.columns(0, na), q_.columns(0, na), (general ? up_ : zp_).columns(0, na),
              mode_ == Precond::jacobi ? d_.data() : nullptr, S, DotStep::coefficients, p);
  kern_->update(update_blocks(na), S);
  pd.m0 = pd.m1 = -1;
  if (general) {
    pd.m0 = t ? ops_.queue().mark() : -1;
    apply(*opt_.preconditioner, up_.columns(0, na), zp_.columns(0, na));
    pd.m1 = t ? ops_.queue().mark() : -1;
    MvView<double> b2{beta2_.data(), na, 1, smax_, ops_.space()};
    ops_.column_dots_into(up_.columns(0, na), zp_.columns(0, na), b2);
    kern_->rotate(S, b2, p);
    std::swap(uc_, up_);
  } else {
    kern_->rotate(S, {}, p);
  }
  std::swap(zc_, zp_);
  std::swap(w_, wp_);
  ops_.queue().download_deferred(MvView<const double>{s_.data() + kEst, 3, na, kFields, ops_.space()}, pd.buf.data(),
                         3);
  pd.mark1 = t ? ops_.queue().mark() : -1;
  pd.ticket = ops_.queue().fetch_async();
  ++r.it;
}

bool MinresSolver::read_back(Run& r) {
  bool done = false;
  while (queued_ > 0) {
    Pending& q = ring_[head_];
    ops_.queue().fetch_wait(q.ticket);
    std::int64_t ndone = 0;
    for (std::int64_t j = 0; j < q.na; ++j) {
      if (q.buf[3 * j + 1] != kDone) continue;
      ++ndone;
      if (left_at_[act_[j]] < 0) left_at_[act_[j]] = q.it + 1;
    }
    std::copy(q.buf.begin(), q.buf.begin() + 3 * q.na, state_.begin());
    record(r, q);
    head_ = (head_ + 1) % static_cast<int>(ring_.size());
    --queued_;
    done = done || ndone > 0;
    if (!done) break;  // keep the newest iteration queued
  }
  return done;
}

// rows kAnormT..kLs of S for the na columns (a synchronization: only when the queue is drained),
// with (estimate, state, reason) into states().
void MinresSolver::read_column_extras(std::int64_t na) {
  ops_.queue().download_deferred(MvView<const double>{s_.data() + kEst, 3, na, kFields, ops_.space()}, state_.data(),
                         3);
  ops_.queue().download_deferred(MvView<const double>{s_.data() + kAnormT, 3, na, kFields, ops_.space()},
                         extra_.data(), 3);
  ops_.queue().fetch();
  for (std::int64_t j = 0; j < na; ++j) {
    a_norm_ = std::max(a_norm_, extra_[3 * j + 1]);
    ls_[act_[j]] = extra_[3 * j + 2];
  }
}

// x(:, c) ← c_j·X_a(:, pos).
void MinresSolver::write_back(Run& r, std::int64_t c, std::int64_t pos) {
  ops_.axpby_columns(&cs_[c], xa_.columns(pos, 1), zero_.data(), r.x.columns(c, 1));
}

void MinresSolver::retire_done(Run& r) {
  read_column_extras(r.na);
  keep_.clear(), still_.clear(), park_.clear();
  for (std::int64_t j = 0; j < r.na; ++j) {
    const std::int64_t c = act_[j];
    if (state_[3 * j + 1] == kDone) {
      park_.push_back(j);
      why_[c] = static_cast<int>(state_[3 * j + 2]);
    } else {
      keep_.push_back(j), still_.push_back(c);
    }
  }
  compact(r.na, keep_, park_);
  r.na = static_cast<std::int64_t>(keep_.size());
  act_.swap(still_);
}

// Gathers the kept columns of each per-column block into Q (free between iterations), which then
// takes the block's place: 2 passes over n × nk per block, no copy back.
void MinresSolver::compact(std::int64_t na, const std::vector<std::int64_t>& keep,
                           const std::vector<std::int64_t>& park) {
  const std::int64_t nk = static_cast<std::int64_t>(keep.size());
  if (nk == na) return;
  park_iterates(na, keep, park);
  if (nk == 0) return;
  std::array<MultiVector<double>*, 7> blocks{&zc_, &zp_, &w_, &wp_, &r_, &uc_, &up_};
  for (auto* b : blocks) {
    if (!b->data()) continue;
    ops_.gather_columns(b->columns(0, na), keep.data(), nk, q_.columns(0, nk));
    std::swap(*b, q_);
  }
  ops_.gather_columns(s_.columns(0, na), keep.data(), nk, s2_.columns(0, nk));
  std::swap(s_, s2_);
}

// X_a through Q: the kept columns to the front; at the back the leaving iterates park[], then
// those parked earlier (moved along: 2 passes a column per compaction).
void MinresSolver::park_iterates(std::int64_t na, const std::vector<std::int64_t>& keep,
                                 const std::vector<std::int64_t>& park) {
  const std::int64_t nk = static_cast<std::int64_t>(keep.size()), np = static_cast<std::int64_t>(park.size());
  const std::int64_t p0 = static_cast<std::int64_t>(parked_.size()), back = smax_ - p0 - np;
  ops_.gather_columns(xa_.columns(0, na), keep.data(), nk, q_.columns(0, nk));
  idx_.clear();
  for (std::int64_t j : park) idx_.push_back(j);
  for (std::int64_t i = 0; i < p0; ++i) idx_.push_back(smax_ - p0 + i);
  ops_.gather_columns(xa_.view(), idx_.data(), np + p0, q_.columns(back, np + p0));
  std::swap(xa_, q_);
  idx_.clear();
  for (std::int64_t j : park) idx_.push_back(act_[j]);  // (column ids, then the earlier ones)
  parked_.insert(parked_.begin(), idx_.begin(), idx_.end());
  for (std::int64_t i = 0; i < np + p0; ++i) pos_[parked_[i]] = back + i;
  idx_.clear();
}

// The record of a consumed iteration: its estimates unscaled (c_j·est_j), the columns done.
void MinresSolver::record(Run& r, Pending& q) {
  if (!r.want_norms) return;
  IterationRecord rec;
  rec.iteration = q.it;
  std::int64_t ndone = 0;
  for (std::int64_t j = 0; j < q.na; ++j) {
    rec.residual_norms.push_back(q.buf[3 * j] * cs_[act_[j]]);
    ndone += q.buf[3 * j + 1] == kDone;
  }
  rec.converged = ndone;
  rec.active = q.na - ndone;
  if (q.mark0 >= 0) {
    const double total = ops_.queue().elapsed_seconds(q.mark0, q.mark1);
    rec.precond_seconds = q.m0 >= 0 ? ops_.queue().elapsed_seconds(q.m0, q.m1) : 0.0;
    rec.apply_seconds = ops_.queue().elapsed_seconds(q.a0, q.a1) + rec.precond_seconds;
    rec.dense_seconds = std::max(0.0, total - rec.apply_seconds);
  }
  if (opt_.on_iteration) opt_.on_iteration(rec);
  if (opt_.keep_history) r.res.history.push_back(std::move(rec));
}

}  // namespace tcsolve::mr
