// Thick-restart block Lanczos with full reorthogonalization (two passes of block classical
// Gram-Schmidt against the whole stored basis), standard or generalized.
//
// Generalized problems run on Op = B⁻¹·A, self-adjoint in the B-inner product: the new block is
// W = B⁻¹·(A·V_c). The basis V (n × (L + b)) is B-orthonormal; BV is stored beside it when B is
// given, and B·W is recomputed after the projection (and B·V at each restart) rather than carried
// along, because B⁻¹ is usually inexact (an inner CG).
//
// One expansion step from the current block V_c (columns [c, c+b)):
//   W = Op·V_c; twice: C = (B·V)ᵀ·W, W −= V·C, H(0:c+b, c:c+b) += C
//   W = Q·M (B-orthonormalization, rank revealing); H(c+b:, c:c+b) = M, and Mᵀ above.
//   Directions the block lost (rank r < b) are replaced by random vectors orthogonalized against
//   the basis, with zero coupling: that keeps the block width b, which is what lets the method
//   find every copy of an eigenvalue of multiplicity ≤ b.
// When V holds L columns (plus the newest block), Rayleigh-Ritz on H(0:L, 0:L) = Y·Θ·Yᵀ; the
// residual of Ritz pair i is ‖E·y_i‖ with E = H(L:L+b, 0:L) the coupling of the newest block.
// Restart (thick): V(:, 0:l) = V(:, 0:L)·Y(:, keep) with keep = the l best Ritz vectors,
// the newest block moved to columns [l, l+b), H = [diag(θ_keep) (E·Y_keep)ᵀ; E·Y_keep ...].
// Pairs whose estimated residual passes the test are checked with explicit applies of A (and B)
// before the solver reports them converged.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve {

namespace {
using Mat = Eigen::MatrixXd;

// B⁻¹ through block CG when the caller gives no b_inverse.
class CgInverse final : public LinearOperator<double> {
 public:
  CgInverse(const LinearOperator<double>& b, DenseBlockOps& ops, std::int64_t cols, CgOptions o)
      : b_(b), cg_(b, ops, cols, std::move(o)) {}
  std::int64_t rows() const override { return b_.rows(); }
  std::int64_t cols() const override { return b_.cols(); }
  Space space() const override { return b_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override {
    auto r = cg_.solve(x, y);
    if (r.status == SolverStatus::breakdown)
      throw Error("block Lanczos: solve with B broke down (" + r.reason + ")");
  }

 private:
  const LinearOperator<double>& b_;
  mutable BlockCg cg_;
};
}  // namespace

EigenResult block_lanczos(const LinearOperator<double>& a, const LinearOperator<double>* b,
                          DenseBlockOps& ops, const EigenOptions& opt) {
  const double t_start = detail::now_seconds();
  const std::int64_t n = a.rows();
  detail::require_operator(a, n, ops.space(), "A");
  if (b) detail::require_operator(*b, n, ops.space(), "B");
  if (opt.b_inverse) detail::require_operator(*opt.b_inverse, n, ops.space(), "B⁻¹");
  const std::int64_t k = opt.k;
  if (k < 1 || k >= n)
    throw InvalidArgument("block_lanczos: need 1 <= k < n (k = " + std::to_string(k) +
                          ", n = " + std::to_string(n) + ")");
  TCSOLVE_REQUIRE(opt.tol > 0, "block_lanczos: tol must be positive");
  const bool with_b = b != nullptr;
  const bool smallest = opt.which == Which::smallest;
  std::int64_t bs = opt.block_size > 0 ? opt.block_size : std::min<std::int64_t>(std::max<std::int64_t>(k, 2), 8);
  bs = std::min(bs, n);
  std::int64_t L = opt.max_basis > 0 ? opt.max_basis : std::max(3 * k, k + 4 * bs);
  L = std::min(L, n - bs);  // basis plus the newest block fit in n columns
  const std::int64_t keep = std::min(L - bs, k + std::max(bs, (L - k) / 3));
  if (L < k + bs || keep < k)
    throw InvalidArgument("block_lanczos: basis too small for k = " + std::to_string(k) +
                          " with block size " + std::to_string(bs) + " (n = " + std::to_string(n) +
                          "); lower k or the block size");

  EigenResult res;
  res.n = n;
  res.a_norm = opt.a_norm > 0 ? opt.a_norm : estimate_norm(a, ops);
  res.b_norm = with_b ? (opt.b_norm > 0 ? opt.b_norm : estimate_norm(*b, ops)) : 1.0;

  // ---- workspace
  const std::int64_t cap = L + bs;
  ops.reserve(n, cap, cap * cap);
  MultiVector<double> v = ops.allocate(n, cap), bv, tmp = ops.allocate(n, std::max(bs, k));
  MultiVector<double> ax = ops.allocate(n, k), bx;  // explicit residual checks
  if (with_b) bv = ops.allocate(n, cap), bx = ops.allocate(n, k);
  std::unique_ptr<CgInverse> cg_inverse;
  const LinearOperator<double>* binv = opt.b_inverse;
  if (with_b && !binv) {
    CgOptions co;
    co.tol = 1e-13;
    co.max_iterations = 2000;
    co.jacobi_diagonal = opt.jacobi_mass_diagonal;
    co.keep_history = false;
    cg_inverse = std::make_unique<CgInverse>(*b, ops, bs, co);
    binv = cg_inverse.get();
  }
  detail::ApplyClock clock(ops);
  OrthoWorkspace ows;
  Mat H = Mat::Zero(cap, cap);
  std::vector<double> proj(cap * bs), yk(cap * cap), theta(k);
  auto bview = [&](std::int64_t first, std::int64_t count) {
    return with_b ? bv.columns(first, count) : v.columns(first, count);
  };

  // Orthonormalizes the block at columns [c, c+w) against [0, c) (two passes) and itself; fills
  // lost directions with random vectors. Returns M (r × w) as coupling rows in `coupling`.
  std::uint64_t refill_seed = opt.seed * 7919 + 1;
  auto project_out = [&](std::int64_t c, std::int64_t w, Mat* hcol) {
    auto W = v.columns(c, w);
    auto BW = with_b ? bv.columns(c, w) : MvView<double>{};
    if (c == 0) return;
    for (int pass = 0; pass < 2; ++pass) {
      ops.gram(bview(0, c), W, proj.data(), c);
      ops.gemm(-1.0, v.columns(0, c), proj.data(), c, 1.0, W);
      if (with_b) ops.gemm(-1.0, bv.columns(0, c), proj.data(), c, 1.0, BW);
      if (hcol) hcol->topRows(c) += Eigen::Map<Mat>(proj.data(), c, w);
    }
  };
  // Returns the branch; M into `m_out` (w × w: rows past the rank are zero).
  auto normalize_block = [&](std::int64_t c, std::int64_t w, Mat& m_out) {
    auto W = v.columns(c, w);
    auto BW = with_b ? bv.columns(c, w) : MvView<double>{};
    auto o = orthonormalize(ops, W, BW, ows);
    m_out = Mat::Zero(w, w);
    if (o.rank > 0)
      m_out.topRows(o.rank) = Eigen::Map<Mat>(ows.t.data(), w, o.rank).transpose() *
                              Eigen::Map<Mat>(ows.g_in.data(), w, w);
    std::int64_t r = o.rank;
    for (int attempt = 0; r < w && attempt < 3; ++attempt) {
      // Refill the lost directions: random, out of the basis and the kept columns.
      auto F = v.columns(c + r, w - r);
      ops.fill_random(F, refill_seed++);
      if (with_b) clock.apply(*b, F, bv.columns(c + r, w - r));
      for (int pass = 0; pass < 2; ++pass) {
        ops.gram(bview(0, c + r), F, proj.data(), c + r);
        ops.gemm(-1.0, v.columns(0, c + r), proj.data(), c + r, 1.0, F);
        if (with_b) ops.gemm(-1.0, bv.columns(0, c + r), proj.data(), c + r, 1.0, bv.columns(c + r, w - r));
      }
      auto of = orthonormalize(ops, F, with_b ? bv.columns(c + r, w - r) : MvView<double>{}, ows);
      r += of.rank;
    }
    if (r < w) throw Error("block Lanczos: could not complete the block (n too small?)");
    return o.branch;
  };

  // ---- start block
  ops.fill_random(v.columns(0, bs), opt.seed);
  if (with_b) clock.apply(*b, v.columns(0, bs), bv.columns(0, bs));
  {
    Mat m0;
    normalize_block(0, bs, m0);
  }
  std::int64_t c = 0;  // first column of the current (to be expanded) block
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;
  std::int64_t restart = 0;
  std::vector<double> est(k), xn(k, 1.0), tr(k), neg(k), ones(k, 1.0);

  for (;; ++restart) {
    detail::IterationTimer timer(clock);
    IterationRecord rec;
    rec.iteration = restart;
    // Expand until the basis holds L columns before the newest block.
    OrthoBranch worst = OrthoBranch::none;
    while (c + bs <= L) {
      const std::int64_t nx = c + bs;
      auto Vc = v.columns(c, bs);
      auto W = v.columns(nx, bs);
      if (with_b) {
        clock.apply(a, Vc, bv.columns(nx, bs));  // B·W = A·V_c
        clock.apply(*binv, bv.columns(nx, bs), W);
      } else {
        clock.apply(a, Vc, W);
      }
      Mat hcol = Mat::Zero(nx, bs);
      project_out(nx, bs, &hcol);
      H.block(0, c, nx, bs) = hcol;  // Vᵀ·B·Op·V_c, both passes
      // B·W recomputed (one B apply of b columns): with an inexact B⁻¹ the carried B·W drifts
      // from B times the carried W, and over many restarts that drift destroys B-orthogonality.
      if (with_b) clock.apply(*b, W, bv.columns(nx, bs));
      Mat M;
      worst = std::max(worst, normalize_block(nx, bs, M));
      H.block(nx, c, bs, bs) = M;
      // Symmetric fill: the upper part mirrors the computed lower/left part.
      H.block(c, nx, bs, bs) = M.transpose();
      for (std::int64_t j = 0; j < bs; ++j)
        for (std::int64_t i = 0; i < c; ++i) H(c + j, i) = H(i, c + j);
      c = nx;
    }
    rec.ortho = worst;
    // Rayleigh-Ritz on the first c columns; c ≥ L - bs + 1.
    const std::int64_t p = c;
    Mat Hp = H.topLeftCorner(p, p);
    Hp = 0.5 * (Hp + Hp.transpose()).eval();
    Eigen::SelfAdjointEigenSolver<Mat> es(Hp);
    if (es.info() != Eigen::Success) {
      status = SolverStatus::breakdown;
      reason = "projected eigenproblem failed";
      break;
    }
    std::vector<std::int64_t> order(p);
    for (std::int64_t i = 0; i < p; ++i) order[i] = smallest ? i : p - 1 - i;
    Mat E = H.block(p, 0, bs, p);
    std::int64_t nconv = 0;
    rec.residual_norms.resize(k);
    for (std::int64_t j = 0; j < k; ++j) {
      theta[j] = es.eigenvalues()(order[j]);
      est[j] = (E * es.eigenvectors().col(order[j])).norm();
      rec.residual_norms[j] = est[j];
      if (est[j] <= opt.tol * (res.a_norm + std::abs(theta[j]) * res.b_norm)) ++nconv;
    }
    rec.converged = nconv;
    rec.active = k - nconv;
    bool done = false;
    bool last = restart + 1 >= opt.max_iterations;
    if (nconv == k || last) {
      // Ritz vectors X = V(:, 0:p)·Y_k into tmp; explicit residual check.
      Mat Yk(p, k);
      for (std::int64_t j = 0; j < k; ++j) Yk.col(j) = es.eigenvectors().col(order[j]);
      std::copy(Yk.data(), Yk.data() + p * k, yk.data());
      ops.gemm(1.0, v.columns(0, p), yk.data(), p, 0.0, tmp.columns(0, k));
      done = true;
    }
    if (done) {
      ops.synchronize();
      auto [ap, de] = timer.split();
      rec.apply_seconds = ap, rec.dense_seconds = de;
      if (opt.on_iteration) opt.on_iteration(rec);
      if (opt.keep_history) res.history.push_back(std::move(rec));
      // Explicit check below (after the loop) decides; if it fails and iterations remain, go on.
      auto X = tmp.columns(0, k);
      res.iterations = restart + 1;
      clock.apply(a, X, ax.view());
      if (with_b) clock.apply(*b, X, bx.view());
      for (std::int64_t j = 0; j < k; ++j) neg[j] = -theta[j];
      ops.axpby_columns(neg.data(), with_b ? MvView<const double>(bx.view()) : MvView<const double>(X),
                        ones.data(), ax.view());
      ops.column_norms(ax.view(), tr.data());
      ops.column_norms(X, xn.data());
      bool ok = true;
      res.residual_bounds.resize(k);
      for (std::int64_t j = 0; j < k; ++j) {
        res.residual_bounds[j] = opt.tol * (res.a_norm + std::abs(theta[j]) * res.b_norm) * xn[j];
        ok = ok && tr[j] <= res.residual_bounds[j];
      }
      if (ok || last) {
        status = ok ? SolverStatus::converged : SolverStatus::not_converged;
        if (!ok)
          reason = "iteration limit " + std::to_string(opt.max_iterations) +
                   " reached before every true residual passed";
        res.residual_norms.assign(tr.begin(), tr.end());
        res.values.assign(theta.begin(), theta.end());
        res.vectors.resize(n * k);
        ops.to_host(X, res.vectors.data(), n);
        break;
      }
    } else {
      ops.synchronize();
      auto [ap, de] = timer.split();
      rec.apply_seconds = ap, rec.dense_seconds = de;
      if (opt.on_iteration) opt.on_iteration(rec);
      if (opt.keep_history) res.history.push_back(std::move(rec));
    }
    // ---- thick restart: keep the `keep` best Ritz vectors.
    Mat Yk(p, keep);
    for (std::int64_t j = 0; j < keep; ++j) Yk.col(j) = es.eigenvectors().col(order[j]);
    std::copy(Yk.data(), Yk.data() + p * keep, yk.data());
    ops.copy(v.columns(p, bs), tmp.columns(0, bs));
    ops.multiply_inplace(v.columns(0, p), yk.data(), p, keep);
    ops.copy(tmp.columns(0, bs), v.columns(keep, bs));
    if (with_b) {
      ops.copy(bv.columns(p, bs), tmp.columns(0, bs));
      ops.multiply_inplace(bv.columns(0, p), yk.data(), p, keep);
      ops.copy(tmp.columns(0, bs), bv.columns(keep, bs));
      clock.apply(*b, v.columns(0, keep), bv.columns(0, keep));  // resync B·V (see above)
    }
    Mat EY = E * Yk;  // bs × keep
    H.setZero();
    for (std::int64_t j = 0; j < keep; ++j) H(j, j) = es.eigenvalues()(order[j]);
    H.block(keep, 0, bs, keep) = EY;
    H.block(0, keep, keep, bs) = EY.transpose();
    c = keep;
  }
  res.status = status;
  res.reason = reason;
  res.operator_applies = clock.columns();
  res.seconds = detail::now_seconds() - t_start;
  return res;
}

}  // namespace tcsolve
