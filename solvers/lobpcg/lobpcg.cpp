// LOBPCG (Knyazev 2001) with the basis kept B-orthonormal (Hetmaniuk & Lehoucq 2006) and the
// implicit search directions orthonormalized in coefficient space (Duersch et al. 2018): the
// steps of detail::Lobpcg (solvers/lobpcg/lobpcg.hpp).
//
// Block m = k + guard columns. Each step works on the basis S = [X | P | W] (n × ns,
// ns ≤ 3m), B-orthonormal, with AS = A·S and BS = B·S kept beside it:
//   1. H = Sᵀ·AS (ns × ns, host); if ‖Sᵀ·BS − I‖max > 1e-10 solve H·c = θ·(SᵀBS)·c instead.
//   2. C = the m wanted eigenvectors; X' = S·C, AX' = AS·C, BX' = BS·C.
//   3. R = AX' − BX'·Θ, column norms; column j converges when ‖r_j‖ ≤ tol·(‖A‖+|θ_j|‖B‖)·‖x_j‖.
//      When the k wanted columns pass, A·X' and B·X' are recomputed with the operators and the
//      test is repeated on these true residuals (only then "converged").
//   4. Soft locking: only the active (unconverged) columns get P and W directions.
//      P' = S·Q with Q = [0; C(m:, act)] made orthonormal to C and to itself in the small space
//      (exactly B-orthonormal to X' because S is B-orthonormal; no n-sized work but S·Q).
//   5. W = T·R(:, act), projected out of [X' P'] twice (B-inner product), then B-orthonormalized
//      (Cholesky-QR twice, SVQB with column dropping when the Gram matrix is ill-conditioned).
//   6. AW = A·W (the only apply of A per step: |act| columns), BW = B·W before step 5's
//      orthonormalization (then carried along by the same linear combinations).
// Memory: 2 × 3 blocks of n × 3m (S, AS, BS, double-buffered) + 2 · n × m; BS only with B.
#include "solvers/lobpcg/lobpcg.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace tcsolve::detail {

Lobpcg::Lobpcg(const LinearOperator<double>& a, const LinearOperator<double>* b, DenseBlockOps& ops,
               const EigenOptions& opt)
    : t_start_(now_seconds()),
      a_(a),
      b_(b),
      ops_(ops),
      opt_(opt),
      n_(a.rows()),
      k_(opt.k),
      with_b_(b != nullptr),
      clock_(ops) {
  const std::int64_t n = n_, k = k_;
  require_operator(a, n, ops.space(), "A");
  if (b) require_operator(*b, n, ops.space(), "B");
  if (opt.preconditioner) require_operator(*opt.preconditioner, n, ops.space(), "T");
  if (k < 1 || k >= n)
    throw InvalidArgument("lobpcg: need 1 <= k < n (k = " + std::to_string(k) +
                          ", n = " + std::to_string(n) + ")");
  TCSOLVE_REQUIRE(opt.tol > 0, "lobpcg: tol must be positive");
  const std::int64_t guard = opt.guard >= 0 ? opt.guard : default_lobpcg_guard(k);
  m_ = std::max<std::int64_t>(k, std::min<std::int64_t>(k + guard, n / 3));
  smax_ = 3 * m_;
  const std::int64_t m = m_, smax = smax_;
  res_.n = n;
  res_.a_norm = opt.a_norm > 0 ? opt.a_norm : estimate_norm(a, ops);
  // The test's B factor as given (the eigs driver maps conv=abs to a_norm 1, b_norm ~0, also
  // without B); only when none is given: ‖B‖, or 1 without B.
  res_.b_norm = opt.b_norm > 0 ? opt.b_norm : with_b_ ? estimate_norm(*b, ops) : 1.0;

  // ---- workspace, once per solve
  ops.reserve(n, smax, smax * smax);
  s_buf_[0] = ops.allocate(n, smax), s_buf_[1] = ops.allocate(n, smax);
  as_buf_[0] = ops.allocate(n, smax), as_buf_[1] = ops.allocate(n, smax);
  if (with_b_) bs_buf_[0] = ops.allocate(n, smax), bs_buf_[1] = ops.allocate(n, smax);
  r_buf_ = ops.allocate(n, m), rg_buf_ = ops.allocate(n, m);
  jacobi_ = !opt.preconditioner && !opt.jacobi_diagonal.empty();
  if (jacobi_) {
    auto inv = jacobi_inverse(opt.jacobi_diagonal, opt.jacobi_mass_diagonal, opt.jacobi_shift, n);
    dinv_ = ops.allocate(n, 1);
    ops.from_host(inv.data(), n, dinv_.view());
  }
  h_.resize(smax * smax), mg_.resize(smax * smax), theta_all_.resize(smax), z_.resize(smax * smax);
  c_.resize(smax * m), q_.resize(smax * m), rn_.resize(m), xn_.assign(m, 1.0), theta_.resize(m);
  neg_.resize(m), ones_.assign(m, 1.0), proj_.resize(smax * m);
  conv_.assign(m, 0);
  act_.reserve(m);
}

MvView<double> Lobpcg::b_view(int buf, std::int64_t first, std::int64_t count) {
  return with_b_ ? bs_buf_[buf].columns(first, count) : s_buf_[buf].columns(first, count);
}

// ---- initial block: opt.start's columns (checked), the rest random; B-orthonormal, A applied.
void Lobpcg::start() {
  const std::int64_t m = m_;
  cur_ = 0, nxt_ = 1;
  auto x0 = s_buf_[cur_].columns(0, m);
  initial_block(ops_, x0, opt_);
  check_start_block(ops_, x0, opt_, "lobpcg");
  if (with_b_) clock_.apply(*b_, x0, bs_buf_[cur_].columns(0, m));
  auto o0 = tcsolve::orthonormalize(ops_, x0, with_b_ ? bs_buf_[cur_].columns(0, m) : MvView<double>{}, ows_);
  if (o0.rank < m)
    throw Error(opt_.start ? "lobpcg: the initial block (the given start columns completed with random "
                             "ones) is numerically rank deficient"
                           : "lobpcg: random initial block is rank deficient");
  clock_.apply(a_, x0, as_buf_[cur_].columns(0, m));
  ns_ = m;
  it_ = 0;
  checkpoint_.emplace(opt_.checkpoint_every, opt_.on_checkpoint);
}

// 1–2. Rayleigh–Ritz on S; X' = S·C, AX', BX' into the next buffer's first m columns.
bool Lobpcg::rayleigh_ritz() {
  const std::int64_t m = m_, ns = ns_;
  const bool smallest = opt_.which == Which::smallest;
  auto S = s_buf_[cur_].columns(0, ns);
  auto AS = as_buf_[cur_].columns(0, ns);
  auto BS = b_view(cur_, 0, ns);
  // H = SᵀAS and M = SᵀBS in one host round trip.
  ops_.queue().gram_deferred(S, AS, h_.data(), ns);
  ops_.queue().gram_deferred(S, BS, mg_.data(), ns);
  ops_.queue().fetch();
  double offdiag = 0.0;
  for (std::int64_t j = 0; j < ns; ++j)
    for (std::int64_t i = 0; i < ns; ++i)
      offdiag = std::max(offdiag, std::abs(mg_[i + j * ns] - (i == j ? 1.0 : 0.0)));
  if (offdiag > 1e-10) {
    if (!small::eigh_generalized(h_.data(), mg_.data(), ns, theta_all_.data(), z_.data())) return false;
  } else {
    small::eigh(h_.data(), ns, theta_all_.data(), z_.data());
  }
  for (std::int64_t j = 0; j < m; ++j) {
    std::int64_t src = smallest ? j : ns - 1 - j;
    theta_[j] = theta_all_[src];
    std::copy(z_.data() + src * ns, z_.data() + (src + 1) * ns, c_.data() + j * ns);
  }
  ops_.gemm(1.0, S, c_.data(), ns, 0.0, s_buf_[nxt_].columns(0, m));
  ops_.gemm(1.0, AS, c_.data(), ns, 0.0, as_buf_[nxt_].columns(0, m));
  if (with_b_) ops_.gemm(1.0, BS, c_.data(), ns, 0.0, bs_buf_[nxt_].columns(0, m));
  return true;
}

// 3. Residuals R = AX' − BX'·Θ and the test.
std::int64_t Lobpcg::residuals() {
  const std::int64_t m = m_;
  auto Xn = s_buf_[nxt_].columns(0, m);
  for (std::int64_t j = 0; j < m; ++j) neg_[j] = -theta_[j];
  ops_.copy(as_buf_[nxt_].columns(0, m), r_buf_.view());
  ops_.axpby_columns(neg_.data(), b_view(nxt_, 0, m), ones_.data(), r_buf_.view());
  // ‖r_j‖² (and ‖x_j‖² with B) in one host round trip.
  ops_.queue().column_dots_deferred(r_buf_.view(), r_buf_.view(), rn_.data());
  if (with_b_) ops_.queue().column_dots_deferred(Xn, Xn, xn_.data());
  ops_.queue().fetch();
  for (std::int64_t j = 0; j < m; ++j) {
    rn_[j] = std::sqrt(std::max(rn_[j], 0.0));
    if (with_b_) xn_[j] = std::sqrt(std::max(xn_[j], 0.0));
  }
  std::int64_t nc = 0;
  for (std::int64_t j = 0; j < m; ++j) {
    double bound = pair_bound(opt_, res_.a_norm, res_.b_norm, theta_[j]) * xn_[j];
    conv_[j] = rn_[j] <= bound;
    if (j < k_ && conv_[j]) ++nc;
  }
  return nc;
}

// Explicit check: recompute A·X' and B·X' (this also removes the drift of AX', BX').
std::int64_t Lobpcg::confirm() {
  auto Xn = s_buf_[nxt_].columns(0, m_);
  clock_.apply(a_, Xn, as_buf_[nxt_].columns(0, m_));
  if (with_b_) clock_.apply(*b_, Xn, bs_buf_[nxt_].columns(0, m_));
  return residuals();
}

// 4a. Active set (soft locking): the pairs that fail the test keep iterating.
std::int64_t Lobpcg::lock() {
  act_.clear();
  for (std::int64_t j = 0; j < m_; ++j)
    if (!conv_[j]) act_.push_back(j);
  return static_cast<std::int64_t>(act_.size());
}

void Lobpcg::project_out_ritz(Mat& q) {
  Eigen::Map<Mat> C(c_.data(), ns_, m_);
  pctq_.noalias() = C.transpose() * q;
  pcq_.noalias() = C * pctq_;  // formed, then subtracted (as Q −= C·(CᵀQ) evaluates it)
  q -= pcq_;
}

// 4b. P' = S·Q in coefficient space.
std::int64_t Lobpcg::search_directions() {
  const std::int64_t m = m_, ns = ns_, na = static_cast<std::int64_t>(act_.size());
  std::int64_t np_new = 0;
  if (!(ns > m && na > 0)) return 0;
  Eigen::Map<Mat> C(c_.data(), ns, m);
  pq_.setZero(ns, na);
  for (std::int64_t j = 0; j < na; ++j) pq_.col(j).tail(ns - m) = C.col(act_[j]).tail(ns - m);
  for (int pass = 0; pass < 2; ++pass) project_out_ritz(pq_);
  // Orthonormalize Q (small): SVQB with dropping on QᵀQ.
  pg_.noalias() = pq_.transpose() * pq_;
  pes_.compute(pg_);
  double lmax = pes_.eigenvalues().size() ? pes_.eigenvalues().maxCoeff() : 0.0;
  pqo_.resize(ns, na);
  for (std::int64_t i = na - 1; i >= 0; --i) {
    double l = pes_.eigenvalues()(i);
    if (l > 1e-24 && l > 1e-20 * lmax) {
      pcol_.noalias() = pq_ * pes_.eigenvectors().col(i);
      pqo_.col(np_new++) = pcol_ / std::sqrt(l);
    }
  }
  if (np_new == 0) return 0;
  // One more pass against C and itself for orthogonality to working precision.
  pqk_ = pqo_.leftCols(np_new);
  project_out_ritz(pqk_);
  pqr_.compute(pqk_);
  pqk_ = pqr_.householderQ() * Mat::Identity(ns, np_new);
  std::copy(pqk_.data(), pqk_.data() + ns * np_new, q_.data());
  ops_.gemm(1.0, s_buf_[cur_].columns(0, ns), q_.data(), ns, 0.0, s_buf_[nxt_].columns(m, np_new));
  ops_.gemm(1.0, as_buf_[cur_].columns(0, ns), q_.data(), ns, 0.0, as_buf_[nxt_].columns(m, np_new));
  if (with_b_) ops_.gemm(1.0, bs_buf_[cur_].columns(0, ns), q_.data(), ns, 0.0, bs_buf_[nxt_].columns(m, np_new));
  return np_new;
}

// 5a. W = T·R(:, act) at column nu of the next buffer.
void Lobpcg::precondition(std::int64_t nu) {
  const std::int64_t na = static_cast<std::int64_t>(act_.size());
  auto W = s_buf_[nxt_].columns(nu, na);
  if (opt_.preconditioner || jacobi_) {
    ops_.gather_columns(r_buf_.view(), act_.data(), na, rg_buf_.columns(0, na));
    if (opt_.preconditioner) clock_.apply(*opt_.preconditioner, rg_buf_.columns(0, na), W);
    else ops_.scale_rows(dinv_.data(), rg_buf_.columns(0, na), W);
  } else {
    ops_.gather_columns(r_buf_.view(), act_.data(), na, W);
  }
}

// 5b–6. W projected out of U = [X' P'] twice, B-orthonormalized; AW = A·W. Sets the next width.
OrthoBranch Lobpcg::orthonormalize(std::int64_t nu) {
  const std::int64_t na = static_cast<std::int64_t>(act_.size());
  auto W = s_buf_[nxt_].columns(nu, na);
  auto U = s_buf_[nxt_].columns(0, nu);
  auto BU = b_view(nxt_, 0, nu);
  for (int pass = 0; pass < 2; ++pass) {
    ops_.gram(BU, W, proj_.data(), nu);
    ops_.gemm(-1.0, U, proj_.data(), nu, 1.0, W);
  }
  auto BW = with_b_ ? bs_buf_[nxt_].columns(nu, na) : MvView<double>{};
  if (with_b_) clock_.apply(*b_, W, BW);
  auto ow = tcsolve::orthonormalize(ops_, W, BW, ows_);
  const std::int64_t nw = ow.rank;
  if (nw > 0) clock_.apply(a_, s_buf_[nxt_].columns(nu, nw), as_buf_[nxt_].columns(nu, nw));
  next_width_ = nu + nw;
  return ow.branch;
}

void Lobpcg::advance() {
  ns_ = next_width_;
  std::swap(cur_, nxt_);
}

void Lobpcg::stop_reason(bool done, bool stop, std::int64_t nconv) {
  if (done)
    status_ = SolverStatus::converged;
  else if (stop)
    status_ = SolverStatus::interrupted, reason_ = interrupted_reason(it_ + 1, nconv, k_, "converged");
  else
    reason_ = "iteration limit " + std::to_string(opt_.max_iterations) + " reached with " +
              std::to_string(nconv) + " of " + std::to_string(k_) + " pairs converged";
}

// The algorithm. The interrupt flag (an atomic load) is read once per iteration, which is one
// block step (one apply of A to the active columns).
EigenResult Lobpcg::run() {
  start();
  for (;; ++it_) {
    IterationTimer timer(clock_);
    IterationRecord rec;
    rec.iteration = it_;
    if (!rayleigh_ritz()) {
      status_ = SolverStatus::breakdown;
      reason_ = "basis lost B-orthonormality (SᵀBS not positive definite)";
      break;
    }
    std::int64_t nconv = residuals();
    bool done = false;
    if (nconv == k_) {
      nconv = confirm();
      done = nconv == k_;
    }
    rec.converged = nconv;
    if (opt_.keep_history) {
      rec.residual_norms.assign(rn_.begin(), rn_.end());
      rec.values.assign(theta_.begin(), theta_.begin() + k_);
    }
    const bool stop = !done && interrupt_requested();
    const bool end = done || stop || it_ + 1 >= opt_.max_iterations;
    if (end) stop_reason(done, stop, nconv);
    else if (checkpoint_->due()) checkpoint_->write(ops_, next(m_), it_ + 1, 0);  // the new Ritz block
    if (!end) {
      rec.active = lock();
      const std::int64_t nu = m_ + search_directions();
      precondition(nu);
      rec.ortho = orthonormalize(nu);
    } else {
      next_width_ = m_;  // the Ritz block X' becomes the basis
    }
    advance();
    ops_.synchronize();
    auto [ap, de] = timer.split();
    rec.apply_seconds = ap, rec.dense_seconds = de;
    if (opt_.on_iteration) opt_.on_iteration(rec);
    if (end || opt_.keep_history) res_.history.push_back(std::move(rec));
    if (end) break;
    if (ns_ == m_) {
      status_ = SolverStatus::breakdown;
      reason_ = "no new search directions (residual block lies in the basis)";
      break;
    }
  }
  return finish();
}

// ---- results: X = first k columns of the current basis; true residuals with fresh applies.
EigenResult Lobpcg::finish() {
  const std::int64_t n = n_, k = k_;
  res_.iterations = it_ + 1;
  auto X = s_buf_[cur_].columns(0, k);
  auto AX = as_buf_[nxt_].columns(0, k);
  auto BX = with_b_ ? bs_buf_[nxt_].columns(0, k) : X;
  clock_.apply(a_, X, AX);
  if (with_b_) clock_.apply(*b_, X, BX);
  for (std::int64_t j = 0; j < k; ++j) neg_[j] = -theta_[j];
  ops_.copy(AX, r_buf_.columns(0, k));
  ops_.axpby_columns(neg_.data(), BX, ones_.data(), r_buf_.columns(0, k));
  res_.residual_norms.assign(k, 0.0);
  ops_.column_norms(r_buf_.columns(0, k), res_.residual_norms.data());
  std::vector<double> xnorm(k, 1.0);
  ops_.column_norms(X, xnorm.data());
  res_.residual_bounds.resize(k);
  bool all_ok = true;
  for (std::int64_t j = 0; j < k; ++j) {
    res_.residual_bounds[j] = pair_bound(opt_, res_.a_norm, res_.b_norm, theta_[j]) * xnorm[j];
    all_ok = all_ok && res_.residual_norms[j] <= res_.residual_bounds[j];
  }
  if (status_ == SolverStatus::converged && !all_ok) {
    status_ = SolverStatus::not_converged;
    reason_ = "final true residual above the bound";
  }
  res_.status = status_;
  res_.reason = reason_;
  res_.values.assign(theta_.begin(), theta_.begin() + k);
  res_.vectors.resize(n * k);
  ops_.to_host(X, res_.vectors.data(), n);
  res_.operator_applies = clock_.columns();
  res_.seconds = now_seconds() - t_start_;
  return std::move(res_);
}

}  // namespace tcsolve::detail
