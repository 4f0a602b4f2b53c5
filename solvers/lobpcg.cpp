// LOBPCG (Knyazev 2001) with the basis kept B-orthonormal (Hetmaniuk & Lehoucq 2006) and the
// implicit search directions orthonormalized in coefficient space (Duersch et al. 2018).
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
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve {

namespace {
using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
}  // namespace

EigenResult lobpcg(const LinearOperator<double>& a, const LinearOperator<double>* b,
                   DenseBlockOps& ops, const EigenOptions& opt) {
  const double t_start = detail::now_seconds();
  const std::int64_t n = a.rows();
  detail::require_operator(a, n, ops.space(), "A");
  if (b) detail::require_operator(*b, n, ops.space(), "B");
  if (opt.preconditioner) detail::require_operator(*opt.preconditioner, n, ops.space(), "T");
  const std::int64_t k = opt.k;
  if (k < 1 || k >= n)
    throw InvalidArgument("lobpcg: need 1 <= k < n (k = " + std::to_string(k) +
                          ", n = " + std::to_string(n) + ")");
  TCSOLVE_REQUIRE(opt.tol > 0, "lobpcg: tol must be positive");
  const std::int64_t guard = opt.guard >= 0 ? opt.guard : default_lobpcg_guard(k);
  const std::int64_t m = std::max<std::int64_t>(k, std::min<std::int64_t>(k + guard, n / 3));
  const std::int64_t smax = 3 * m;
  const bool with_b = b != nullptr;
  const bool smallest = opt.which == Which::smallest;

  EigenResult res;
  res.n = n;
  res.a_norm = opt.a_norm > 0 ? opt.a_norm : estimate_norm(a, ops);
  // The test's B factor as given (the eigs driver maps conv=abs to a_norm 1, b_norm ~0, also
  // without B); only when none is given: ‖B‖, or 1 without B.
  res.b_norm = opt.b_norm > 0 ? opt.b_norm : with_b ? estimate_norm(*b, ops) : 1.0;

  // ---- workspace, once per solve
  ops.reserve(n, smax, smax * smax);
  MultiVector<double> s_buf[2] = {ops.allocate(n, smax), ops.allocate(n, smax)};
  MultiVector<double> as_buf[2] = {ops.allocate(n, smax), ops.allocate(n, smax)};
  MultiVector<double> bs_buf[2];
  if (with_b) bs_buf[0] = ops.allocate(n, smax), bs_buf[1] = ops.allocate(n, smax);
  MultiVector<double> r_buf = ops.allocate(n, m), rg_buf = ops.allocate(n, m);
  MultiVector<double> dinv;
  const bool jacobi = !opt.preconditioner && !opt.jacobi_diagonal.empty();
  if (jacobi) {
    auto inv = detail::jacobi_inverse(opt.jacobi_diagonal, opt.jacobi_mass_diagonal,
                                      opt.jacobi_shift, n);
    dinv = ops.allocate(n, 1);
    ops.from_host(inv.data(), n, dinv.view());
  }
  detail::ApplyClock clock(ops);
  OrthoWorkspace ows;
  std::vector<double> h(smax * smax), mg(smax * smax), theta_all(smax), z(smax * smax);
  std::vector<double> c(smax * m), q(smax * m), rn(m), xn(m, 1.0), theta(m), neg(m), ones(m, 1.0);
  std::vector<double> proj(smax * m);
  std::vector<std::int64_t> act;
  std::vector<char> conv(m, 0);
  act.reserve(m);

  auto bview = [&](int i, std::int64_t first, std::int64_t count) {
    return with_b ? bs_buf[i].columns(first, count) : s_buf[i].columns(first, count);
  };

  // ---- initial block: random, B-orthonormal, A applied
  int cur = 0;
  initial_block(ops, s_buf[cur].columns(0, m), opt);
  if (with_b) clock.apply(*b, s_buf[cur].columns(0, m), bs_buf[cur].columns(0, m));
  auto o0 = orthonormalize(ops, s_buf[cur].columns(0, m),
                           with_b ? bs_buf[cur].columns(0, m) : MvView<double>{}, ows);
  if (o0.rank < m) throw Error("lobpcg: random initial block is rank deficient");
  clock.apply(a, s_buf[cur].columns(0, m), as_buf[cur].columns(0, m));
  std::int64_t ns = m, np = 0;  // basis width, P columns (X at 0, P at m, W at m + np)
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;
  std::int64_t it = 0;
  int nxt = 1;
  detail::Checkpointer checkpoint(opt.checkpoint_every, opt.on_checkpoint);

  for (;; ++it) {
    detail::IterationTimer timer(clock);
    IterationRecord rec;
    rec.iteration = it;
    // 1. Rayleigh-Ritz on S.
    auto S = s_buf[cur].columns(0, ns);
    auto AS = as_buf[cur].columns(0, ns);
    auto BS = bview(cur, 0, ns);
    // H = SᵀAS and M = SᵀBS in one host round trip.
    ops.gram_deferred(S, AS, h.data(), ns);
    ops.gram_deferred(S, BS, mg.data(), ns);
    ops.fetch();
    double offdiag = 0.0;
    for (std::int64_t j = 0; j < ns; ++j)
      for (std::int64_t i = 0; i < ns; ++i)
        offdiag = std::max(offdiag, std::abs(mg[i + j * ns] - (i == j ? 1.0 : 0.0)));
    if (offdiag > 1e-10) {
      if (!small::eigh_generalized(h.data(), mg.data(), ns, theta_all.data(), z.data())) {
        status = SolverStatus::breakdown;
        reason = "basis lost B-orthonormality (SᵀBS not positive definite)";
        break;
      }
    } else {
      small::eigh(h.data(), ns, theta_all.data(), z.data());
    }
    for (std::int64_t j = 0; j < m; ++j) {
      std::int64_t src = smallest ? j : ns - 1 - j;
      theta[j] = theta_all[src];
      std::copy(z.data() + src * ns, z.data() + (src + 1) * ns, c.data() + j * ns);
    }
    // 2. X' = S·C, AX', BX' into the other buffer's first m columns.
    auto Xn = s_buf[nxt].columns(0, m);
    auto AXn = as_buf[nxt].columns(0, m);
    ops.gemm(1.0, S, c.data(), ns, 0.0, Xn);
    ops.gemm(1.0, AS, c.data(), ns, 0.0, AXn);
    if (with_b) ops.gemm(1.0, BS, c.data(), ns, 0.0, bs_buf[nxt].columns(0, m));
    auto BXn = bview(nxt, 0, m);
    // 3. Residuals R = AX' − BX'·Θ and the test.
    auto residual_test = [&]() {
      for (std::int64_t j = 0; j < m; ++j) neg[j] = -theta[j];
      ops.copy(AXn, r_buf.view());
      ops.axpby_columns(neg.data(), BXn, ones.data(), r_buf.view());
      // ‖r_j‖² (and ‖x_j‖² with B) in one host round trip.
      ops.column_dots_deferred(r_buf.view(), r_buf.view(), rn.data());
      if (with_b) ops.column_dots_deferred(Xn, Xn, xn.data());
      ops.fetch();
      for (std::int64_t j = 0; j < m; ++j) {
        rn[j] = std::sqrt(std::max(rn[j], 0.0));
        if (with_b) xn[j] = std::sqrt(std::max(xn[j], 0.0));
      }
      std::int64_t nc = 0;
      for (std::int64_t j = 0; j < m; ++j) {
        double bound = pair_bound(opt, res.a_norm, res.b_norm, theta[j]) * xn[j];
        conv[j] = rn[j] <= bound;
        if (j < k && conv[j]) ++nc;
      }
      return nc;
    };
    std::int64_t nconv = residual_test();
    bool done = false;
    if (nconv == k) {
      // Explicit check: recompute A·X' and B·X' (this also removes the drift of AX', BX').
      clock.apply(a, Xn, AXn);
      if (with_b) clock.apply(*b, Xn, BXn);
      nconv = residual_test();
      done = nconv == k;
    }
    rec.converged = nconv;
    if (opt.keep_history) {
      rec.residual_norms.assign(rn.begin(), rn.end());
      rec.values.assign(theta.begin(), theta.begin() + k);
    }
    const bool stop = !done && interrupt_requested();
    if (done || stop || it + 1 >= opt.max_iterations) {
      if (done)
        status = SolverStatus::converged;
      else if (stop)
        status = SolverStatus::interrupted, reason = detail::interrupted_reason(it + 1, nconv, k, "converged");
      else
        reason = "iteration limit " + std::to_string(opt.max_iterations) + " reached with " +
                 std::to_string(nconv) + " of " + std::to_string(k) + " pairs converged";
      ops.synchronize();
      auto [ap, de] = timer.split();
      rec.apply_seconds = ap, rec.dense_seconds = de;
      if (opt.on_iteration) opt.on_iteration(rec);
      res.history.push_back(std::move(rec));
      std::swap(cur, nxt);
      ns = m;
      break;
    }
    if (checkpoint.due()) checkpoint.write(ops, Xn, it + 1, 0);  // the new Ritz block
    // 4. Active set (soft locking) and P' = S·Q in coefficient space.
    act.clear();
    for (std::int64_t j = 0; j < m; ++j)
      if (!conv[j]) act.push_back(j);
    const std::int64_t na = static_cast<std::int64_t>(act.size());
    rec.active = na;
    std::int64_t np_new = 0;
    if (ns > m && na > 0) {
      Eigen::Map<Mat> C(c.data(), ns, m);
      Mat Q = Mat::Zero(ns, na);
      for (std::int64_t j = 0; j < na; ++j) Q.col(j).tail(ns - m) = C.col(act[j]).tail(ns - m);
      for (int pass = 0; pass < 2; ++pass) Q -= C * (C.transpose() * Q);
      // Orthonormalize Q (small): SVQB with dropping on QᵀQ.
      Mat G = Q.transpose() * Q;
      Eigen::SelfAdjointEigenSolver<Mat> es(G);
      double lmax = es.eigenvalues().size() ? es.eigenvalues().maxCoeff() : 0.0;
      Mat Qo(ns, na);
      for (std::int64_t i = na - 1; i >= 0; --i) {
        double l = es.eigenvalues()(i);
        if (l > 1e-24 && l > 1e-20 * lmax)
          Qo.col(np_new++) = Q * es.eigenvectors().col(i) / std::sqrt(l);
      }
      if (np_new > 0) {
        // One more pass against C and itself for orthogonality to working precision.
        Mat Qk = Qo.leftCols(np_new);
        Qk -= C * (C.transpose() * Qk);
        Eigen::HouseholderQR<Mat> qr(Qk);
        Qk = qr.householderQ() * Mat::Identity(ns, np_new);
        std::copy(Qk.data(), Qk.data() + ns * np_new, q.data());
        ops.gemm(1.0, S, q.data(), ns, 0.0, s_buf[nxt].columns(m, np_new));
        ops.gemm(1.0, AS, q.data(), ns, 0.0, as_buf[nxt].columns(m, np_new));
        if (with_b) ops.gemm(1.0, BS, q.data(), ns, 0.0, bs_buf[nxt].columns(m, np_new));
      }
    }
    // 5. W = T·R(:, act), projected out of U = [X' P'] twice, B-orthonormalized.
    const std::int64_t nu = m + np_new;
    auto W = s_buf[nxt].columns(nu, na);
    auto U = s_buf[nxt].columns(0, nu);
    auto BU = bview(nxt, 0, nu);
    if (opt.preconditioner || jacobi) {
      ops.gather_columns(r_buf.view(), act.data(), na, rg_buf.columns(0, na));
      if (opt.preconditioner) clock.apply(*opt.preconditioner, rg_buf.columns(0, na), W);
      else ops.scale_rows(dinv.data(), rg_buf.columns(0, na), W);
    } else {
      ops.gather_columns(r_buf.view(), act.data(), na, W);
    }
    for (int pass = 0; pass < 2; ++pass) {
      ops.gram(BU, W, proj.data(), nu);
      ops.gemm(-1.0, U, proj.data(), nu, 1.0, W);
    }
    auto BW = with_b ? bs_buf[nxt].columns(nu, na) : MvView<double>{};
    if (with_b) clock.apply(*b, W, BW);
    auto ow = orthonormalize(ops, W, BW, ows);
    rec.ortho = ow.branch;
    const std::int64_t nw = ow.rank;
    // 6. AW = A·W.
    if (nw > 0) clock.apply(a, s_buf[nxt].columns(nu, nw), as_buf[nxt].columns(nu, nw));
    ns = nu + nw;
    np = np_new;
    std::swap(cur, nxt);
    ops.synchronize();
    auto [ap, de] = timer.split();
    rec.apply_seconds = ap, rec.dense_seconds = de;
    if (opt.on_iteration) opt.on_iteration(rec);
    if (opt.keep_history) res.history.push_back(std::move(rec));
    if (ns == m) {
      status = SolverStatus::breakdown;
      reason = "no new search directions (residual block lies in the basis)";
      break;
    }
  }
  (void)np;

  // ---- results: X = first k columns of S[cur]; true residuals with fresh applies.
  res.iterations = it + 1;
  auto X = s_buf[cur].columns(0, k);
  auto AX = as_buf[nxt].columns(0, k);
  auto BX = with_b ? bs_buf[nxt].columns(0, k) : X;
  clock.apply(a, X, AX);
  if (with_b) clock.apply(*b, X, BX);
  for (std::int64_t j = 0; j < k; ++j) neg[j] = -theta[j];
  ops.copy(AX, r_buf.columns(0, k));
  ops.axpby_columns(neg.data(), BX, ones.data(), r_buf.columns(0, k));
  res.residual_norms.assign(k, 0.0);
  ops.column_norms(r_buf.columns(0, k), res.residual_norms.data());
  std::vector<double> xnorm(k, 1.0);
  ops.column_norms(X, xnorm.data());
  res.residual_bounds.resize(k);
  bool all_ok = true;
  for (std::int64_t j = 0; j < k; ++j) {
    res.residual_bounds[j] = pair_bound(opt, res.a_norm, res.b_norm, theta[j]) * xnorm[j];
    all_ok = all_ok && res.residual_norms[j] <= res.residual_bounds[j];
  }
  if (status == SolverStatus::converged && !all_ok) {
    status = SolverStatus::not_converged;
    reason = "final true residual above the bound";
  }
  res.status = status;
  res.reason = reason;
  res.values.assign(theta.begin(), theta.begin() + k);
  res.vectors.resize(n * k);
  ops.to_host(X, res.vectors.data(), n);
  res.operator_applies = clock.columns();
  res.seconds = detail::now_seconds() - t_start;
  return res;
}

}  // namespace tcsolve
