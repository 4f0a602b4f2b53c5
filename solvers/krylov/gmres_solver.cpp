// Pseudo-block GMRES(m)'s solver (gmres_solver.hpp; the method, passes and memory in gmres.cpp):
// set-up, column scales, true residuals and column selection, the queued Arnoldi step, the
// cycle's end and the result.
#include "solvers/krylov/gmres_solver.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/interrupt.hpp"
#include "core/parallel.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::krylov::gmres {

namespace {
constexpr std::size_t kRing = 4;  // DenseBlockOps: at most 4 fetch_async tickets outstanding
}  // namespace

GmresSolver::GmresSolver(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t s, KrylovOptions o)
    : a_(a), ops_(ops), n_(a.rows()), smax_(s), m_(o.restart), opt_(std::move(o)) {
  tcsolve::detail::require_operator(a_, n_, ops_.space(), "A");
  if (opt_.preconditioner) tcsolve::detail::require_operator(*opt_.preconditioner, n_, ops_.space(), "M");
  TCSOLVE_REQUIRE(s >= 1, "GMRES: need at least one right-hand side");
  if (!(opt_.tol > 0.0) || !std::isfinite(opt_.tol))
    throw InvalidArgument(format("GMRES: tol must be positive and finite, is %g", opt_.tol));
  if (m_ < 1 || m_ > kMaxRestart)
    throw InvalidArgument(format("GMRES: restart must be in [1, %d], is %d", kMaxRestart, m_));
  if (opt_.max_iterations < 0)
    throw InvalidArgument(format("GMRES: max_iterations must be ≥ 0, is %lld",
                                 static_cast<long long>(opt_.max_iterations)));
  layout_.m = m_;
  k_ = kernels_for(ops_.space());
  ctx_.stream = ops_.stream();
  ctx_.workers = host_threads();
  basis_ = ops_.allocate(n_, (m_ + 1) * s);
  u_ = ops_.allocate(n_, s);
  h1_ = ops_.allocate(m_ + 2, s), h2_ = ops_.allocate(m_ + 2, s);
  state_ = ops_.allocate(layout_.rows(), s), beta_ = ops_.allocate(s, 1);
  partial_ = ops_.allocate(k_.partial_doubles(n_, m_ + 1, s, ctx_.workers), 1);
  ctx_.partial = partial_.data();
  ctx_.partial_size = partial_.rows();
  if (!opt_.preconditioner) set_jacobi();
  if (flexible()) zb_ = ops_.allocate(n_, std::int64_t(m_) * s);
  else if (preconditioned()) z_ = ops_.allocate(n_, s);
  for (auto* v : {&bn_, &cs_, &inv_cs_, &neg_inv_cs_, &rn_, &ref_, &est_, &frozen_, &len_, &tgt_}) v->resize(s);
  zero_.assign(s, 0.0), one_.assign(s, 1.0);
  stall_.resize(s), stagnant_.resize(s);
  act_.reserve(s), slot_.resize(s);
  ring_.resize(kRing);
  for (auto& p : ring_) p.buf.resize(StateLayout::kFetched * s);
  lag_ = ops_.space() == Space::device ? 1 : 0;
}

// Right Jacobi M = diag(A) (a zero or non-finite a_ii: 1 there). A constant diagonal is dropped:
// GMRES is invariant under M = c·I (the same Krylov space, y scaled by c).
void GmresSolver::set_jacobi() {
  const auto& d = opt_.jacobi_diagonal;
  if (d.empty()) return;
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(d.size()) == n_, "GMRES: Jacobi diagonal length != n");
  std::vector<double> inv(d.size());
  for (std::size_t i = 0; i < d.size(); ++i)
    inv[i] = std::abs(d[i]) > 1e-300 && std::isfinite(d[i]) ? 1.0 / d[i] : 1.0;
  if (std::all_of(inv.begin(), inv.end(), [&](double v) { return v == inv[0]; })) return;
  dinv_ = ops_.allocate(n_, 1);
  ops_.from_host(inv.data(), n_, dinv_.view());
}

void GmresSolver::apply(const LinearOperator<double>& op, MvView<const double> x, MvView<double> y, int* marks) {
  if (x.cols == 0) return;
  if (marks) marks[0] = ops_.queue().mark();
  tcsolve::detail::apply_ordered(ApplyOrder::events, ops_, op, x, y);
  if (marks) marks[1] = ops_.queue().mark();
  if (&op == &a_) columns_ += x.cols;
}

// ---- start, scales, true residuals, columns

GmresSolver::Run GmresSolver::start(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  Run r;
  tcsolve::detail::begin_run(r, "GMRES", format("gmres(%d)", m_), rhs, x, n_, smax_, ops_.space(),
                    opt_.keep_history || static_cast<bool>(opt_.on_iteration));
  r.x_zero = !use_x0;
  columns_ = 0;
  ring_head_ = ring_count_ = 0;
  column_scales(rhs);
  if (!use_x0) ops_.fill_zero(x);
  std::fill(stagnant_.begin(), stagnant_.end(), 0);
  std::fill(stall_.begin(), stall_.end(), 0);
  std::fill(slot_.begin(), slot_.end(), -1);
  return r;
}

void GmresSolver::column_scales(MvView<const double> rhs) {
  detail::power_of_two_scales(ops_, rhs, u_.columns(0, 1), bn_.data(), cs_.data(), "GMRES");
  for (std::int64_t j = 0; j < rhs.cols; ++j) {
    inv_cs_[j] = 1.0 / cs_[j];
    neg_inv_cs_[j] = -inv_cs_[j];
  }
}

void GmresSolver::true_residuals(Run& r) {
  auto u = u_.columns(0, r.s);
  if (r.x_zero) {
    ops_.axpby_columns(inv_cs_.data(), r.rhs, zero_.data(), u);  // b/c
  } else {
    apply(a_, r.x, u, nullptr);
    ops_.axpby_columns(inv_cs_.data(), r.rhs, neg_inv_cs_.data(), u);  // (b − A·x)/c, exactly
  }
  ops_.column_norms(u, rn_.data());
  for (std::int64_t j = 0; j < r.s; ++j) rn_[j] /= bn_[j];
}

bool GmresSolver::select_columns(Run& r) {
  act_.clear();
  const int window = stagnation_window(m_);
  for (std::int64_t j = 0; j < r.s; ++j) {
    if (!std::isfinite(rn_[j])) {
      r.res.status = SolverStatus::breakdown;
      r.res.reason = format("the true residual of column %lld is not finite after %lld iterations (A%s "
                            "holds a non-finite value, or A·x overflowed)",
                            static_cast<long long>(j), static_cast<long long>(r.it),
                            opt_.preconditioner ? " or M" : (r.x_zero ? "" : " or x0"));
      return false;
    }
    if (rn_[j] <= opt_.tol) {
      if (r.res.column_iterations[j] < 0)
        r.res.column_iterations[j] = slot_[j] >= 0 ? r.cycle_it0 + static_cast<std::int64_t>(len_[slot_[j]]) : r.it;
      continue;
    }
    if (stagnant_[j]) continue;
    if (r.cycles == 0 || rn_[j] <= kStagnationFactor * ref_[j]) {
      ref_[j] = rn_[j], stall_[j] = 0;
    } else if (++stall_[j] >= window) {
      stagnant_[j] = 1;
      continue;
    }
    act_.push_back(j);
  }
  return !act_.empty();
}

// ---- the cycle

void GmresSolver::begin_cycle(Run& r) {
  r.na = static_cast<std::int64_t>(act_.size());
  r.cycle_it0 = r.it, r.queued = 0, r.all_frozen = false;
  ++r.cycles;
  std::fill(slot_.begin(), slot_.end(), -1);
  for (std::int64_t j = 0; j < r.na; ++j) {
    const std::int64_t c = act_[j];
    slot_[c] = j;
    tgt_[j] = opt_.tol * bn_[c];
    est_[j] = rn_[c] * bn_[c], frozen_[j] = 0.0, len_[j] = 0.0;
  }
  auto v0 = basis_block(0, r.na);
  ops_.gather_columns(u_.columns(0, r.s), act_.data(), r.na, v0);
  ops_.normalize_columns(v0, beta_.view());
  const std::int64_t ls = layout_.rows();
  ops_.from_host(tgt_.data(), 1, MvView<double>{state_.data() + StateLayout::kTarget, 1, r.na, ls, ops_.space()});
  k_.start_cycle(ctx_, layout_, beta_.view(), state(r.na));
  if (dinv_.data()) ops_.scale_rows(dinv_.data(), v0, z_.columns(0, r.na));
}

void GmresSolver::queue_iteration(Run& r) {
  const int j = static_cast<int>(r.queued);
  const std::int64_t na = r.na;
  Pending& p = ring_[(ring_head_ + ring_count_) % kRing];
  TCSOLVE_REQUIRE(ring_count_ < kRing, "GMRES: too many queued iterations");
  p.it = r.cycle_it0 + j, p.na = na;
  const bool t = timing();
  p.apply_marks.fill(-1);
  p.mark0 = t ? ops_.queue().mark() : -1;
  auto vj = basis_block(j, na), w = basis_block(j + 1, na);
  auto z = flexible() ? zblock(j, na) : preconditioned() ? z_.columns(0, na) : vj;
  if (opt_.preconditioner) apply(*opt_.preconditioner, vj, z, t ? &p.apply_marks[2] : nullptr);
  apply(a_, z, w, t ? &p.apply_marks[0] : nullptr);  // w = A·M⁻¹·v_j
  // CGS2: h1 = Vᵀw; w −= V·h1 and h2 = Vᵀw; w −= V·h2 and ‖w‖² (row m + 1 of h2).
  const Basis v = basis(na);
  auto h1 = small(h1_, na), h2 = small(h2_, na);
  k_.ortho_pass(ctx_, v, j + 1, w, MvView<const double>{}, h1, true, -1);
  k_.ortho_pass(ctx_, v, j + 1, w, h1, h2, true, -1);
  k_.ortho_pass(ctx_, v, j + 1, w, h2, h2, false, m_ + 1);
  k_.arnoldi_step(ctx_, layout_, j, h1, h2, m_ + 1, state(na));
  k_.normalize(ctx_, w, state(na), dinv_.data(), z_.data() ? z_.columns(0, na) : MvView<double>{});
  ops_.queue().download_deferred(MvView<const double>{state_.data(), StateLayout::kFetched, na, layout_.rows(), ops_.space()},
                         p.buf.data(), StateLayout::kFetched);
  if (t) p.mark1 = ops_.queue().mark();
  p.ticket = ops_.queue().fetch_async();
  ++ring_count_;
  ++r.queued;
}

void GmresSolver::read_back(Run& r, std::size_t keep) {
  while (ring_count_ > keep) {
    Pending& p = ring_[ring_head_];
    ops_.queue().fetch_wait(p.ticket);
    std::int64_t stopped = 0;
    for (std::int64_t j = 0; j < p.na; ++j) {
      est_[j] = p.buf[StateLayout::kFetched * j + StateLayout::kEst];
      frozen_[j] = p.buf[StateLayout::kFetched * j + StateLayout::kFrozen];
      len_[j] = p.buf[StateLayout::kFetched * j + StateLayout::kLen];
      stopped += frozen_[j] != 0.0;
    }
    if (!r.all_frozen) record(r, p);  // (not the iterations queued after every column stopped)
    ring_head_ = (ring_head_ + 1) % kRing;
    --ring_count_;
    if (stopped == p.na) r.all_frozen = true;
  }
}

// The record of a consumed iteration: the estimates unscaled (c_j·|g_{k}|).
void GmresSolver::record(Run& r, Pending& p) {
  if (!r.want_norms) return;
  IterationRecord rec;
  rec.iteration = p.it;
  for (std::int64_t j = 0; j < p.na; ++j) {
    rec.residual_norms.push_back(est_[j] * cs_[act_[j]]);
    rec.converged += est_[j] <= tgt_[j];
    rec.active += frozen_[j] == 0.0;
  }
  if (p.mark0 >= 0) {
    double ap = 0.0, pc = 0.0;
    if (p.apply_marks[0] >= 0) ap += ops_.queue().elapsed_seconds(p.apply_marks[0], p.apply_marks[1]);
    if (p.apply_marks[2] >= 0) pc = ops_.queue().elapsed_seconds(p.apply_marks[2], p.apply_marks[3]);
    rec.apply_seconds = ap + pc;
    rec.precond_seconds = pc;
    rec.dense_seconds = std::max(0.0, ops_.queue().elapsed_seconds(p.mark0, p.mark1) - ap - pc);
  }
  if (opt_.on_iteration) opt_.on_iteration(rec);
  if (opt_.keep_history) r.res.history.push_back(std::move(rec));
}

void GmresSolver::end_cycle(Run& r) {
  const std::int64_t na = r.na;
  k_.solve_triangular(ctx_, layout_, state(na));
  auto u = u_.columns(0, na);
  const Basis zs{zb_.data(), n_, n_, n_ * smax_, na};  // (flexible: x += Z·y, M⁻¹ not applied again)
  k_.combine(ctx_, layout_, flexible() ? zs : basis(na), static_cast<int>(r.queued), state(na),
             opt_.preconditioner ? nullptr : dinv_.data(), u);
  MvView<const double> dx = u;
  if (opt_.preconditioner && !flexible()) {
    apply(*opt_.preconditioner, u, z_.columns(0, na), nullptr);
    dx = z_.columns(0, na);
  }
  for (std::int64_t j = 0; j < na; ++j) {  // x(:, act_j) += c·dx(:, j)
    const std::int64_t c = act_[j];
    ops_.axpby_columns(&cs_[c], dx.columns(j, 1), one_.data(), r.x.columns(c, 1));
  }
  double longest = 0.0;
  for (std::int64_t j = 0; j < na; ++j) longest = std::max(longest, len_[j]);
  r.it = r.cycle_it0 + static_cast<std::int64_t>(longest);
  r.x_zero = false;
}

// ---- the result

SolveResult GmresSolver::finish(Run& r, double t0) {
  r.res.residual_norms.assign(rn_.begin(), rn_.begin() + r.s);
  tcsolve::detail::finish_run(r, rn_, opt_.tol, columns_, t0,
                              [&] { return not_converged_reason(r); });
  return std::move(r.res);
}

namespace {
// "3 (2.1e-05), 7 (1.4e-03), … and 12 more" for the columns `cols` with true residuals rn.
std::string column_list(const std::vector<std::int64_t>& cols, const std::vector<double>& rn) {
  constexpr std::size_t kShown = 6;
  std::string s;
  for (std::size_t i = 0; i < cols.size() && i < kShown; ++i)
    s += format("%s%lld (%.3g)", i ? ", " : "", static_cast<long long>(cols[i]), rn[cols[i]]);
  if (cols.size() > kShown) s += format(" and %zu more", cols.size() - kShown);
  return s;
}
}  // namespace

// Which columns missed tol and why: stagnation (restarted GMRES made no 1 % progress over the
// window), or the iteration limit / the end of the loop with the columns still going.
std::string GmresSolver::not_converged_reason(const Run& r) const {
  std::vector<std::int64_t> stuck, going;
  for (std::int64_t j = 0; j < r.s; ++j)
    if (!(rn_[j] <= opt_.tol)) (stagnant_[j] ? stuck : going).push_back(j);
  std::string s;
  if (!going.empty())
    s = format("iteration limit %lld reached; columns above tol %g (true relative residual): ",
               static_cast<long long>(opt_.max_iterations), opt_.tol) + column_list(going, rn_);
  if (!stuck.empty()) {
    const int w = stagnation_window(m_);
    s += format("%sstagnation: the true residual of columns ", s.empty() ? "" : "; ") + column_list(stuck, rn_) +
         format(" fell by less than 1 %% over %d cycles of GMRES(%d) (a larger restart or a better "
                "preconditioner may help; tol %g may also be below the attainable accuracy)",
                w, m_, opt_.tol);
  }
  return s;
}

SolveResult GmresSolver::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  const double t0 = tcsolve::detail::now_seconds();
  Run r = start(rhs, x, use_x0);
  for (;;) {
    true_residuals(r);
    if (!select_columns(r)) break;
    if (r.it >= opt_.max_iterations || interrupt_requested()) break;
    begin_cycle(r);
    // Iterations are queued without waiting; the host reads iteration j − 1's scalars once j is
    // queued (GPU; at once on the CPU) and stops the cycle when every column has stopped.
    while (r.queued < m_ && r.cycle_it0 + r.queued < opt_.max_iterations && !r.all_frozen &&
           !interrupt_requested()) {
      queue_iteration(r);
      read_back(r, lag_);
    }
    read_back(r, 0);
    end_cycle(r);
  }
  return finish(r, t0);
}

}  // namespace tcsolve::krylov::gmres
