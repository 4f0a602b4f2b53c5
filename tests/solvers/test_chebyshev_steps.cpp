// The steps of Chebyshev-filtered subspace iteration (solvers/chebyshev/subspace_iteration.hpp),
// each run alone on a state set up by hand and checked against an independent reference: the
// spectrum bounds against the known spectrum, the filter on a diagonal matrix against the
// closed-form Chebyshev polynomial (cos/cosh, not the recurrence), the orthonormalization's
// QᵀQ = I and span (also on a rank-deficient block that takes the host fallback), Rayleigh-Ritz
// on an exact invariant subspace, the residuals against ‖AX − XΘ‖ computed on the host, locking,
// the final check that unlocks a failing pair, the degree model and the climb off the fp32 rung.
// On the backend the binary is built for (solver_test_util.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "solvers/chebyshev/subspace_iteration.hpp"
#include "spmm/chebyshev_step.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using chebyshev::SubspaceIteration;
using Eigen::MatrixXd;

// diag(lambda) as a CSR.
Csr<double> diagonal_matrix(const std::vector<double>& lambda) {
  std::vector<Triplet<double>> t;
  const std::int64_t n = static_cast<std::int64_t>(lambda.size());
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(n); ++i) t.push_back({i, i, lambda[i]});
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

// n eigenvalues evenly spaced in [lo, hi], ascending.
std::vector<double> even_spectrum(std::int64_t n, double lo, double hi) {
  std::vector<double> l(n);
  for (std::int64_t i = 0; i < n; ++i) l[i] = lo + (hi - lo) * i / (n - 1);
  return l;
}

MatrixXd random_matrix(std::int64_t r, std::int64_t c, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  MatrixXd m(r, c);
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < r; ++i) m(i, j) = u(g);
  return m;
}

MatrixXd get(DenseBlockOps& ops, MvView<const double> v) {
  MatrixXd h(v.rows, v.cols);
  ops.to_host(v, h.data(), v.rows);
  return h;
}

void put(DenseBlockOps& ops, const MatrixXd& h, MvView<double> v) {
  ASSERT_EQ(h.rows(), v.rows);
  ASSERT_EQ(h.cols(), v.cols);
  ops.from_host(h.data(), h.rows(), v);
}

// T_d(t) from its closed form (cos inside [−1, 1], cosh outside): independent of the solver's
// three-term recurrence.
double cheb_t(int d, double t) {
  if (std::abs(t) <= 1.0) return std::cos(d * std::acos(t));
  const double v = std::cosh(d * std::acosh(std::abs(t)));
  return (t < 0 && (d & 1)) ? -v : v;
}

// The filter polynomial of chebyshev.hpp: T_d on the damped interval [cut, upper], normalized
// to 1 at a0 = min(lower, cut − e).
struct FilterPoly {
  double e, ce, a0;
  FilterPoly(double upper, double cut, double lower)
      : e((upper - cut) / 2), ce((upper + cut) / 2), a0(std::min(lower, cut - (upper - cut) / 2)) {}
  double operator()(int d, double x) const {
    return cheb_t(d, (x - ce) / e) / cheb_t(d, (a0 - ce) / e);
  }
  // The damping of the interval [cut, upper] against a0: max |p_d| there = 1/|T_d(t(a0))|.
  double damped_max(int d) const { return 1.0 / std::abs(cheb_t(d, (a0 - ce) / e)); }
};

// A problem, its options and the solver object (which keeps references to all of them).
struct Rig {
  Csr<double> a;
  std::unique_ptr<LinearOperator<double>> op;
  std::unique_ptr<DenseBlockOps> ops;
  std::unique_ptr<ChebyshevStep> step;
  EigenOptions opt;
  ChebyshevOptions copt;
  std::unique_ptr<SubspaceIteration> it;

  Rig(Csr<double> a_in, std::int64_t k, std::int64_t guard, Which which) : a(std::move(a_in)) {
    op = make_operator(a);
    ops = make_dense_ops(kBackend);
    opt.k = k;
    opt.guard = guard;
    opt.which = which;
    opt.tol = 1e-8;
  }
  // The fused step of A (fp64; with fp32 = true also the ladder's fp32 rung).
  void fuse(bool fp32) {
    step = make_chebyshev_step(a, kBackend, Precision::fp64, ops->stream());
    copt.fused_step = step.get();
    if (fp32) copt.filter_precision = Precision::fp32;
  }
  SubspaceIteration& make() {
    it = std::make_unique<SubspaceIteration>(*op, *ops, opt, copt);
    return *it;
  }
  chebyshev::State& s() { return it->state(); }
  chebyshev::Workspace& ws() { return it->workspace(); }
  MvView<double> basis(int which_one) { return ws().basis[which_one].view(); }
};

// ---- bounds: the Lanczos probe's interval holds the spectrum (of Â = s·A) at the far end and
// its normalization point lies inside it; given bounds map to Â as stated; a_norm caps the end.
TEST(ChebyshevSteps, BoundsHoldTheSpectrum) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto lambda = even_spectrum(300, 0.5, 4.0);
  for (Which w : {Which::smallest, Which::largest}) {
    Rig su(diagonal_matrix(lambda), 4, 4, w);
    auto& it = su.make();
    it.bounds();
    const double s = w == Which::smallest ? 1.0 : -1.0;
    const double hat_max = s > 0 ? 4.0 : -0.5, hat_min = s > 0 ? 0.5 : -4.0;
    EXPECT_GE(su.s().upper, hat_max * (1 - 1e-12)) << "far end";
    EXPECT_GE(su.s().lower, hat_min - 1e-12) << "a Ritz value, inside the spectrum";
    EXPECT_LT(su.s().lower, su.s().upper);
    EXPECT_LE(su.s().norm, 4.0 * (1 + 1e-12));
    EXPECT_GT(su.s().norm, 3.0);
    EXPECT_EQ(su.s().test_a, it.result().a_norm);
    EXPECT_EQ(su.s().test_b, 1.0);
  }
  // Given bounds (no Lanczos steps), and opt.a_norm capping the far end (smallest end).
  ChebyshevBounds b;
  b.lower = 0.6, b.upper = 3.9, b.lower_bound = 0.4, b.upper_bound = 4.1, b.norm = 3.9;
  Rig su(diagonal_matrix(lambda), 4, 4, Which::smallest);
  su.copt.bounds = &b;
  su.opt.a_norm = 4.0;
  auto& it = su.make();
  it.bounds();
  EXPECT_EQ(su.s().upper, 4.0);  // min(upper_bound, a_norm)
  EXPECT_EQ(su.s().lower, 0.6);  // the lowest Ritz value
  EXPECT_EQ(su.s().norm, 3.9);
  EXPECT_EQ(it.result().a_norm, 4.0);
  // The largest end: Â = −A, so the far end is −lower_bound and the normalization point −upper.
  EXPECT_EQ(chebyshev::bounds_of(b, -1.0).upper, -0.4);
  EXPECT_EQ(chebyshev::bounds_of(b, -1.0).lower, -3.9);
}

// ---- filter: on diag(λ), column j of Y₀ becomes p_{d_j}(Λ)·Y₀(:, j), p the closed-form
// polynomial; every component in the damped interval [cut, upper] is damped at least by the
// ratio 1/T_d(t(a0)), and the component at a0 (= λmin here) is kept (p = 1). Per-column degrees,
// the unfused and the fused step.
TEST(ChebyshevSteps, FilterIsTheChebyshevPolynomialPerColumn) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 400;
  const auto lambda = even_spectrum(n, 0.5, 4.0);
  const std::vector<int> degrees = {2, 4, 4, 6, 8, 8, 10, 12};
  const double cut = 2.0, upper = 4.0, lower = 0.5;
  for (bool fused : {false, true}) {
    Rig su(diagonal_matrix(lambda), 4, 4, Which::smallest);
    if (fused) su.fuse(false);
    auto& it = su.make();
    const std::int64_t m = it.block_width();
    ASSERT_EQ(m, 8);
    su.s().upper = upper, su.s().lower = lower, su.s().nl = 0;
    for (std::int64_t j = 0; j < m; ++j) su.s().deg[j] = degrees[j];
    const MatrixXd y0 = random_matrix(n, m, 11);
    put(*su.ops, y0, su.basis(su.s().cur));
    it.filter(m, cut);
    const MatrixXd y = get(*su.ops, su.basis(su.s().cur));
    const FilterPoly p(upper, cut, lower);
    ASSERT_EQ(p.a0, lower) << "a0 = λmin: its component is kept";
    for (std::int64_t j = 0; j < m; ++j) {
      const int d = degrees[j];
      for (std::int64_t i = 0; i < n; ++i) {
        const double ref = p(d, lambda[i]) * y0(i, j);
        ASSERT_NEAR(y(i, j), ref, 1e-12) << "fused " << fused << " column " << j << " row " << i;
        if (lambda[i] >= cut)
          ASSERT_LE(std::abs(y(i, j)), std::abs(y0(i, j)) * p.damped_max(d) * (1 + 1e-9) + 1e-14);
      }
      EXPECT_NEAR(y(0, j), y0(0, j), 1e-12);
      // The wanted end gains on the damped interval by T_d(t(λ)) (≈ ρ^d/2) as the comment says.
      const double gain = std::abs(y(1, j) / y0(1, j)) / p.damped_max(d);
      EXPECT_NEAR(gain, std::abs(cheb_t(d, (lambda[1] - p.ce) / p.e)), 1e-9 * gain);
    }
    EXPECT_EQ(it.stats().projections, 0);
  }
}

// With locked columns and a long filter the filter projects its vectors against them every P
// steps ((ρ(a0)/ρ(θ_slow))^P ≤ 1e6): still p_d(Λ)·Y₀ on the active columns, nothing along L.
// Unfused, and fused (on the host: the iterates by rows, projected after moving out and back).
void projected_filter_matches_the_polynomial(bool fused) {
  const std::int64_t n = 400, nl = 2;
  const auto lambda = even_spectrum(n, 0.5, 4.0);
  Rig su(diagonal_matrix(lambda), 4, 4, Which::smallest);
  if (fused) su.fuse(false);
  auto& it = su.make();
  const std::int64_t m = it.block_width(), w = m - nl;
  const double cut = 2.0, upper = 4.0, lower = 0.5;
  su.s().upper = upper, su.s().lower = lower, su.s().nl = nl;
  MatrixXd y0 = random_matrix(n, m, 12);
  y0.leftCols(nl).setZero();
  y0(0, 0) = y0(1, 1) = 1.0;  // L = e₀, e₁ (the two lowest eigenvectors)
  y0.block(0, nl, nl, w).setZero();
  for (std::int64_t j = 0; j < w; ++j) su.s().deg[j] = 30;
  // The slowest wanted column (k − nl − 1 = 1): ρ(λmin = 0.5) ≈ 4.79, ρ(1.85) ≈ 1.72, ratio
  // 2.79: P = ⌊ln 1e6 / ln 2.79⌋ = 13.
  su.s().theta[0] = 1.0, su.s().theta[1] = 1.85;
  put(*su.ops, y0, su.basis(su.s().cur));
  it.filter(w, cut);
  EXPECT_EQ(it.stats().projections, 2) << "at steps 13 and 26";
  const MatrixXd y = get(*su.ops, su.basis(su.s().cur));
  const FilterPoly p(upper, cut, lower);
  for (std::int64_t j = nl; j < m; ++j)
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(y(i, j), p(30, lambda[i]) * y0(i, j), 1e-12) << "column " << j << " row " << i;
}

TEST(ChebyshevSteps, FilterProjectsOutTheLockedColumns) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (bool fused : {false, true}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    projected_filter_matches_the_polynomial(fused);
  }
}

// The host step without blocks by rows: the filter's column path on the same kernel.
struct ColumnsOnly final : ChebyshevStep {
  const ChebyshevStep& s;
  explicit ColumnsOnly(const ChebyshevStep& st) : s(st) {}
  Space space() const override { return s.space(); }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    s.step(a, cur, b, c, next, e, r, d);
  }
  std::string describe() const override { return s.describe(); }
  void residual32(double sc, MvView<const double> ax, MvView<const double> x, const double* th, double g,
                  MvView<float> r, MvView<float> z) const override {
    s.residual32(sc, ax, x, th, g, r, z);
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next, MvView<const float> r,
              const double* f) const override {
    s.step32(a, cur, b, c, next, r, f);
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z, MvView<double> y) const override {
    s.combine32(x, q, z, y);
  }
};

// On the host the fused filter keeps its iterates by rows: bitwise the column path's result on a
// non-diagonal A, with locked columns the active ones have components along (every projection
// changes them), mixed degrees (columns leaving the suffix between projections, one at a
// projection step) and an odd active width (pads). Rows 0–1 of L's span end at rounding size.
TEST(ChebyshevSteps, FilterByRowsIsBitwiseTheColumnFilter) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  if (kBackend != Backend::cpu) GTEST_SKIP() << "the filter by rows is the host's";
  const std::int64_t n = 300, nl = 3;
  // L: the 1-D Laplacian's three lowest eigenvectors (sin(πk(i+1)/(n+1)), orthonormal), which the
  // filter amplifies most; the active columns start with components along them.
  MatrixXd lk(n, nl);
  for (std::int64_t k = 0; k < nl; ++k)
    for (std::int64_t i = 0; i < n; ++i)
      lk(i, k) = std::sqrt(2.0 / (n + 1)) * std::sin(kPi * (k + 1) * (i + 1) / (n + 1));
  MatrixXd out[2];
  for (int path = 0; path < 2; ++path) {
    SCOPED_TRACE(path == 0 ? "by rows" : "columns");
    Rig su(laplacian(static_cast<int>(n)), 6, 2, Which::smallest);
    su.fuse(false);
    ColumnsOnly cols(*su.step);
    if (path == 1) su.copt.fused_step = &cols;
    auto& it = su.make();
    const std::int64_t m = it.block_width(), w = m - nl;
    ASSERT_EQ(w, 5) << "an active width with pads";
    // interval [1, 4], a0 = −0.5; θ_slow = 0.98: ratio ρ(−0.5)/ρ(0.98) ≈ 3.2, a projection every 11
    // steps (at 11 and 22); the two degree-14 columns leave between them, the 26 after the second
    su.s().upper = 4.0, su.s().lower = 0.0, su.s().nl = nl;
    const int degrees[5] = {14, 14, 26, 28, 30};
    for (std::int64_t j = 0; j < w; ++j) su.s().deg[j] = degrees[j], su.s().theta[j] = 0.98;
    MatrixXd y0 = random_matrix(n, m, 21);
    y0.leftCols(nl) = lk;
    put(*su.ops, y0, su.basis(su.s().cur));
    it.filter(w, 1.0);
    EXPECT_EQ(it.stats().projections, 2);
    out[path] = get(*su.ops, su.basis(su.s().cur));
    // nothing left along L in the active columns beyond the last projection's few steps' growth
    const MatrixXd lty = lk.transpose() * out[path].rightCols(w);
    for (std::int64_t j = 0; j < w; ++j)
      EXPECT_LE(lty.col(j).norm(), 1e-8 * out[path].col(nl + j).norm()) << "column " << j;
  }
  for (std::int64_t j = 0; j < out[0].cols(); ++j)
    EXPECT_EQ(0, std::memcmp(out[0].col(j).data(), out[1].col(j).data(), sizeof(double) * n)) << "column " << j;
}

// ---- filter32: the fp32 rung's residual form Y_d = X·q_d(Θ) + Z_d equals p_d(Â)·X for any X
// and Θ; its fp32 rounding is relative to R̂ = Â·X − X·Θ, not to Y: with X near eigenvectors
// (R̂ ~ 1e-3) the error stays far below what fp32 blocks of Y would give (~1e-7).
TEST(ChebyshevSteps, Fp32FilterMatchesThePolynomialToTheResidualsRounding) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 400;
  const auto lambda = even_spectrum(n, 0.5, 4.0);
  Rig su(diagonal_matrix(lambda), 4, 4, Which::largest);  // Â = −A: the sign path as well
  su.fuse(true);
  auto& it = su.make();
  const std::int64_t m = it.block_width();
  const double upper = -0.5, lower = -4.0, cut = -2.5;  // in Â
  su.s().upper = upper, su.s().lower = lower, su.s().nl = 0;
  const std::vector<int> degrees = {4, 6, 6, 8, 10, 12, 12, 14};
  MatrixXd x = 1e-3 * random_matrix(n, m, 13);
  for (std::int64_t j = 0; j < m; ++j) {
    x(n - 1 - j, j) += 1.0;  // near the eigenvector of λ_{n−1−j}: θ_j = −λ_{n−1−j} in Â
    su.s().theta[j] = -lambda[n - 1 - j];
    su.s().deg[j] = degrees[j];
  }
  MatrixXd ax(n, m);
  for (std::int64_t i = 0; i < n; ++i) ax.row(i) = lambda[i] * x.row(i);
  put(*su.ops, x, su.basis(su.s().cur));
  put(*su.ops, ax, su.basis(1 - su.s().cur));
  it.filter32(m, cut);
  const MatrixXd y = get(*su.ops, su.basis(su.s().cur));
  const FilterPoly p(upper, cut, lower);
  double err = 0.0, rmax = 0.0, ymax = 0.0;
  for (std::int64_t j = 0; j < m; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      const double ref = p(degrees[j], -lambda[i]) * x(i, j);
      err = std::max(err, std::abs(y(i, j) - ref));
      ymax = std::max(ymax, std::abs(ref));
      rmax = std::max(rmax, std::abs(-ax(i, j) - x(i, j) * su.s().theta[j]));
    }
  std::printf("fp32 filter: max error %.3g, max |R| %.3g, max |Y| %.3g\n", err, rmax, ymax);
  // (Measured on the CPU: 3.5e-10 = 1.0e-7·max|R̂|, i.e. 1.7 u32 relative to R̂.)
  const double u32 = 5.96e-8;
  EXPECT_LT(err, 0.05 * u32 * ymax) << "fp32 blocks of Y itself would leave ~u32·|Y|";
  EXPECT_LT(err, 1e-6 * rmax) << "rounding relative to the residual";
}

// ---- orthonormalize: QᵀQ = I, Q ⊥ L and span(Q) = span((I − LLᵀ)Y) on a full-rank block (two
// BCGS-PIP passes, no fallback); on a rank-deficient block (a repeated column and one inside
// span(L)) the passes fall back to the host path, which refills the lost directions: Q still
// orthonormal, ⊥ L, and its span holds the input's.
TEST(ChebyshevSteps, OrthonormalizeGivesAnOrthonormalBasisOfTheSameSpan) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 300, nl = 3;
  for (bool deficient : {false, true}) {
    Rig su(laplacian(n), 6, 6, Which::smallest);
    auto& it = su.make();
    const std::int64_t m = it.block_width(), w = m - nl;
    MatrixXd b = random_matrix(n, m, 21);
    b.leftCols(nl) = b.leftCols(nl).householderQr().householderQ() * MatrixXd::Identity(n, nl);
    if (deficient) {
      b.col(nl + 4) = b.col(nl + 1);                      // a repeated column
      b.col(nl + 6) = b.col(0) - 2.0 * b.col(2);          // a column inside span(L)
    }
    su.s().nl = nl;
    put(*su.ops, b, su.basis(0));
    put(*su.ops, b, su.basis(1));  // both bases hold L
    const int passes = it.orthonormalize(w);
    const MatrixXd q = get(*su.ops, su.basis(su.s().cur)).middleCols(nl, w);
    const MatrixXd l = b.leftCols(nl);
    EXPECT_LT((q.transpose() * q - MatrixXd::Identity(w, w)).cwiseAbs().maxCoeff(), 1e-13);
    EXPECT_LT((l.transpose() * q).cwiseAbs().maxCoeff(), 1e-13);
    const MatrixXd py = b.middleCols(nl, w) - l * (l.transpose() * b.middleCols(nl, w));
    EXPECT_LT((py - q * (q.transpose() * py)).cwiseAbs().maxCoeff(),
              1e-12 * py.cwiseAbs().maxCoeff());
    const MatrixXd lk = get(*su.ops, su.basis(su.s().cur)).leftCols(nl);
    EXPECT_EQ((lk - l).cwiseAbs().maxCoeff(), 0.0) << "the locked columns stay";
    EXPECT_EQ(passes, deficient ? 3 : 2);
    EXPECT_EQ(it.stats().ortho_fallbacks, deficient ? 1 : 0);
  }
}

// ---- rayleigh_ritz on an exact invariant subspace of diag(λ) (a rotated set of eigenvectors):
// the Ritz values are the eigenvalues (Â = s·A, ascending), the Ritz vectors the eigenvectors
// (up to sign), A·X lands in the other basis, and the residuals vanish. Both ends, with locked
// columns before the active ones at the largest end.
TEST(ChebyshevSteps, RayleighRitzOnAnInvariantSubspaceIsExact) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 200;
  const auto lambda = even_spectrum(n, 1.0, 5.0);
  for (Which which : {Which::smallest, Which::largest}) {
    Rig su(diagonal_matrix(lambda), 4, 4, which);
    auto& it = su.make();
    const std::int64_t m = it.block_width();
    const std::int64_t nl = which == Which::largest ? 2 : 0, w = m - nl;
    const double s = which == Which::smallest ? 1.0 : -1.0;
    // Active columns span e_{r0}, …, e_{r0 + w − 1}, rotated by a random orthogonal matrix.
    const std::int64_t r0 = which == Which::smallest ? 0 : n - w;
    const MatrixXd rot = random_matrix(w, w, 31).householderQr().householderQ();
    MatrixXd b = MatrixXd::Zero(n, m);
    b.block(r0, nl, w, w) = rot;
    for (std::int64_t j = 0; j < nl; ++j) b(n / 2 + j, j) = 1.0;
    su.s().nl = nl;
    put(*su.ops, b, su.basis(0));
    put(*su.ops, b, su.basis(1));
    it.rayleigh_ritz(w);
    it.residuals(w);
    const MatrixXd x = get(*su.ops, su.basis(su.s().cur));
    const MatrixXd ax = get(*su.ops, su.basis(1 - su.s().cur));
    for (std::int64_t j = 0; j < w; ++j) {
      // θ ascending in Â: the smallest λ first (s = 1) or the largest (s = −1).
      const std::int64_t row = which == Which::smallest ? j : n - 1 - j;
      EXPECT_NEAR(su.s().theta[j], s * lambda[row], 1e-13 * 5.0) << "pair " << j;
      EXPECT_LT(su.s().rn[j], 1e-12 * 5.0) << "pair " << j;
      EXPECT_NEAR(std::abs(x(row, nl + j)), 1.0, 1e-12);
      EXPECT_NEAR(ax(row, nl + j), lambda[row] * x(row, nl + j), 1e-13 * 5.0);
    }
    if (nl > 0) EXPECT_EQ((x.leftCols(nl) - b.leftCols(nl)).cwiseAbs().maxCoeff(), 0.0);
  }
}

// ---- residuals: rᵢ = ‖A·xᵢ − λᵢ·xᵢ‖ recomputed on the host (CSR reference product) for the Ritz
// pairs of a random block of a 2D Laplacian (not an invariant subspace), at the largest end.
TEST(ChebyshevSteps, ResidualsAreThoseOfTheRitzPairs) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Rig su(laplacian(20, 15), 5, 3, Which::largest);
  auto& it = su.make();
  const std::int64_t n = su.a.nrows, m = it.block_width();
  const MatrixXd q =
      random_matrix(n, m, 41).householderQr().householderQ() * MatrixXd::Identity(n, m);
  put(*su.ops, q, su.basis(su.s().cur));
  it.rayleigh_ritz(m);
  it.residuals(m);
  std::vector<double> x(n * m), lam(m);
  const MatrixXd xh = get(*su.ops, su.basis(su.s().cur));
  Eigen::Map<MatrixXd>(x.data(), n, m) = xh;
  for (std::int64_t j = 0; j < m; ++j) lam[j] = -su.s().theta[j];  // λ = s·θ
  const auto ref = residuals(su.a, nullptr, x, lam);
  for (std::int64_t j = 0; j < m; ++j) {
    EXPECT_NEAR(su.s().rn[j], ref[j], 1e-12 * 8.0) << "pair " << j;
    EXPECT_GT(ref[j], 1e-3) << "a random block is far from invariant";
    if (j > 0) EXPECT_LE(su.s().theta[j - 1], su.s().theta[j]);
  }
  // The step alone on given X, A·X and θ (not Ritz pairs): ‖A·X − s·θ·X‖ column by column.
  const MatrixXd xr = random_matrix(n, m, 42), axr = random_matrix(n, m, 43);
  std::vector<double> th(m);
  for (std::int64_t j = 0; j < m; ++j) th[j] = 0.5 * j - 1.0;
  put(*su.ops, xr, su.basis(su.s().cur));
  put(*su.ops, axr, su.basis(1 - su.s().cur));
  su.ops->from_host(th.data(), m, su.ws().theta.view());
  it.residuals(m);
  for (std::int64_t j = 0; j < m; ++j) {
    EXPECT_NEAR(su.s().rn[j], (axr.col(j) + th[j] * xr.col(j)).norm(), 1e-12 * 40.0);
    EXPECT_EQ(su.s().theta[j], th[j]);
  }
}

// ---- lock: the converged prefix moves to the locked columns (copied into the other basis),
// never a converged pair past an unconverged one, never the last active column; beyond k only
// pairs below the k-th locked value (+ its test).
TEST(ChebyshevSteps, LockMovesTheConvergedPrefixOnly) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 100;
  Rig su(diagonal_matrix(even_spectrum(n, 1.0, 2.0)), 4, 4, Which::smallest);
  auto& it = su.make();
  const std::int64_t m = it.block_width();
  auto reset = [&](const std::vector<double>& th, const std::vector<double>& r) {
    su.s().nl = 0;
    su.s().lock_theta.clear(), su.s().lock_res.clear(), su.s().lock_floor.clear();
    su.s().test_a = 2.0, su.s().test_b = 1.0;
    for (std::int64_t j = 0; j < m; ++j) su.s().theta[j] = th[j], su.s().rn[j] = r[j];
  };
  const MatrixXd b = random_matrix(n, m, 51);
  put(*su.ops, b, su.basis(su.s().cur));
  su.ops->fill_zero(su.basis(1 - su.s().cur));
  const double ok = 1e-12, bad = 1e-3;
  reset({1, 2, 3, 4, 5, 6, 7, 8}, {ok, ok, bad, ok, ok, ok, ok, ok});
  EXPECT_EQ(it.lock(m), m - 2);
  EXPECT_EQ(su.s().nl, 2);
  EXPECT_EQ(su.s().lock_theta, (std::vector<double>{1, 2}));
  EXPECT_EQ(su.s().theta[0], 3.0);
  EXPECT_EQ(su.s().rn[0], bad);
  EXPECT_EQ(su.s().theta[1], 4.0);
  const MatrixXd other = get(*su.ops, su.basis(1 - su.s().cur));
  EXPECT_EQ((other.leftCols(2) - b.leftCols(2)).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(other.col(2).cwiseAbs().maxCoeff(), 0.0);
  // Every pair converged: k = 4 lock; the 5th only when it lies within the test of the 4th.
  reset({1, 2, 3, 4, 5, 6, 7, 8}, std::vector<double>(8, ok));
  EXPECT_EQ(it.lock(m), m - 4);
  reset({1, 2, 3, 4, 4, 6, 7, 8}, std::vector<double>(8, ok));
  EXPECT_EQ(it.lock(m), m - 5);
  // The last active column stays active.
  reset({1, 1, 1, 1, 1, 1, 1, 1}, std::vector<double>(8, ok));
  EXPECT_EQ(it.lock(m), 1);
  // all_found: k pairs found and no active value below the k-th.
  reset({1, 2, 3, 4, 5, 6, 7, 8}, {ok, ok, ok, ok, bad, bad, bad, bad});
  EXPECT_TRUE(it.all_found(m));
  reset({1, 2, 3, 5, 4, 6, 7, 8}, {ok, ok, ok, ok, bad, bad, bad, bad});
  EXPECT_FALSE(it.all_found(m)) << "an active value below the 4th";
  reset({1, 2, 3, 4, 5, 6, 7, 8}, {ok, ok, bad, ok, ok, ok, ok, ok});
  EXPECT_FALSE(it.all_found(m));
}

// ---- check: a locked pair whose vector is not an eigenvector (its true residual fails) is
// unlocked with every locked pair after it; their Ritz values come back ahead of the active ones.
// With every vector exact the check passes and fills the result.
TEST(ChebyshevSteps, CheckUnlocksAPairWhoseTrueResidualFails) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 100, nl = 3;
  const auto lambda = even_spectrum(n, 1.0, 2.0);
  for (bool broken : {true, false}) {
    Rig su(diagonal_matrix(lambda), 4, 4, Which::smallest);
    auto& it = su.make();
    const std::int64_t m = it.block_width(), w = m - nl;
    su.s().test_a = 2.0, su.s().test_b = 1.0;
    // Columns: eigenvectors e_j with θ_j = λ_j (j < m); column 1 (locked) perturbed when broken.
    MatrixXd b = MatrixXd::Zero(n, m);
    for (std::int64_t j = 0; j < m; ++j) b(j, j) = 1.0;
    if (broken) b(50, 1) = 1e-3;
    su.s().nl = nl;
    for (std::int64_t j = 0; j < nl; ++j)
      su.s().lock_theta.push_back(lambda[j]), su.s().lock_res.push_back(1e-14), su.s().lock_floor.push_back(0);
    for (std::int64_t i = 0; i < w; ++i) su.s().theta[i] = lambda[nl + i], su.s().rn[i] = 1e-14;
    put(*su.ops, b, su.basis(0));
    put(*su.ops, b, su.basis(1));
    const bool ok = it.check(w, false);
    // The bad pair's true residual, as the host computes it: ‖A·v − λ₁·v‖.
    const double r1 = broken ? 1e-3 * std::abs(lambda[50] - lambda[1]) : 0.0;
    EXPECT_NEAR(su.ws().true_res[1], r1, 1e-15 + 1e-12 * r1);
    if (broken) {
      EXPECT_FALSE(ok);
      EXPECT_EQ(su.s().nl, 1) << "from the first failing locked pair on";
      EXPECT_EQ(su.s().lock_theta, (std::vector<double>{lambda[0]}));
      EXPECT_EQ(su.s().theta[0], lambda[1]);
      EXPECT_EQ(su.s().theta[1], lambda[2]);
      EXPECT_EQ(su.s().theta[2], lambda[3]);
      EXPECT_GE(su.s().rn[0], 2.0 * it.tau(lambda[1]));
      EXPECT_TRUE(it.result().values.empty());
    } else {
      EXPECT_TRUE(ok);
      ASSERT_EQ(it.result().values.size(), 4u);
      for (int j = 0; j < 4; ++j) EXPECT_EQ(it.result().values[j], lambda[j]);
      EXPECT_EQ(su.s().nl, nl);
      ASSERT_EQ(it.result().vectors.size(), static_cast<std::size_t>(n * 4));
      EXPECT_EQ(it.result().vectors[0], 1.0);
    }
    // The other basis' locked columns are restored after the check's A·X.
    const MatrixXd other = get(*su.ops, su.basis(1 - su.s().cur));
    EXPECT_EQ((other.leftCols(nl) - b.leftCols(nl)).cwiseAbs().maxCoeff(), 0.0);
  }
}

// ---- the rounding floor: a front pair whose residual sits in the floor zone (16u·‖A‖ here,
// below what a rel test at λ ≈ 0 asks) is locked once it has gone kStallIterations outer
// iterations without halving; one that keeps halving, or lies outside the zone, is not. The check
// then ends the solve (floor_stop) with that pair failing its test, instead of unlocking it.
TEST(ChebyshevSteps, FrontPairStalledAtTheFloorIsLockedAndEndsTheCheck) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 100;
  auto lambda = even_spectrum(n, 0.0, 2.0);
  Rig su(diagonal_matrix(lambda), 1, 4, Which::smallest);
  auto& it = su.make();
  const std::int64_t m = it.block_width();
  it.result().a_norm = 2.0;
  const double zone = 16.0 * 1.1102230246251565e-16 * 2.0;
  auto reset = [&](double r0) {
    su.s().nl = 0;
    su.s().lock_theta.clear(), su.s().lock_res.clear(), su.s().lock_floor.clear();
    su.s().test_a = 0.0, su.s().test_b = 1.0;  // rel: tol·|θ|, far below the floor at θ ≈ 0
    for (std::int64_t j = 0; j < m; ++j) su.s().theta[j] = j == 0 ? 1e-17 : lambda[j], su.s().rn[j] = j == 0 ? r0 : 1e-3;
  };
  // Stalled in the zone: locked at the kStallIterations-th repeat, flagged as at the floor.
  reset(0.5 * zone);
  for (int i = 0; i < chebyshev::kStallIterations; ++i) ASSERT_EQ(it.lock(m), m) << "repeat " << i;
  EXPECT_EQ(it.lock(m), m - 1);
  EXPECT_EQ(su.s().lock_floor, (std::vector<char>{1}));
  // Halving every iteration: never locked.
  reset(0.5 * zone);
  for (int i = 0; i < 12; ++i) {
    su.s().rn[0] = 0.5 * zone * std::pow(0.4, i);
    ASSERT_EQ(it.lock(m), m) << "halving, iteration " << i;
  }
  // Outside the zone: never locked.
  reset(4.0 * zone);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(it.lock(m), m);
  // The check with the floor-locked pair: its true residual (the vector e₀ + 1e-16·e₅₀) fails
  // the rel test but lies in the zone: the check ends (floor_stop) and fills the result.
  for (double tilt : {1e-16, 1e-9}) {
    reset(0.5 * zone);
    MatrixXd b = MatrixXd::Zero(n, m);
    for (std::int64_t j = 0; j < m; ++j) b(j, j) = 1.0;
    b(50, 0) = tilt;
    put(*su.ops, b, su.basis(su.s().cur));
    put(*su.ops, b, su.basis(1 - su.s().cur));
    for (int i = 0; i <= chebyshev::kStallIterations; ++i) it.lock(m);
    ASSERT_EQ(su.s().nl, 1);
    su.s().floor_stop = false;
    const bool ok = it.check(m - 1, false);
    EXPECT_FALSE(ok);
    if (tilt < 1e-12) {
      EXPECT_TRUE(su.s().floor_stop) << "the pair's true residual lies in the zone";
      EXPECT_EQ(su.s().nl, 1);
      ASSERT_EQ(it.result().values.size(), 1u);
    } else {
      EXPECT_FALSE(su.s().floor_stop) << "a residual of 1e-9·2 is not at the floor: unlocked";
      EXPECT_EQ(su.s().nl, 0);
      EXPECT_TRUE(su.s().lock_floor.empty());
    }
  }
}

// The restart tests' solver on a rig set up by the caller: the filter interval [lower, 4] and the
// test's factors (‖A‖ = 4) given by hand.
SubspaceIteration& restart_rig(Rig& su, double lower) {
  SubspaceIteration& it = su.make();
  su.s().upper = 4.0, su.s().lower = lower, su.s().test_a = 4.0, su.s().test_b = 1.0;
  return it;
}

// ---- restart: the cut, the degrees from the residual model (even, within [min, cap],
// non-decreasing, guard columns at the largest wanted degree, each wanted column's residual
// brought below tol/overshoot: ρ^d ≥ need^margin), and the lifted cut of a block inside one
// eigenspace.
TEST(ChebyshevSteps, RestartChoosesCutAndDegreesFromTheResidualModel) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Rig su(diagonal_matrix(even_spectrum(200, 0.0, 4.0)), 4, 4, Which::smallest);
  auto& it = restart_rig(su, 0.0);
  const std::int64_t m = it.block_width();
  const std::vector<double> th = {0.01, 0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2};
  const std::vector<double> r = {1e-9, 1e-3, 1e-5, 1e-2, 1e-2, 1e-2, 1e-2, 1e-2};
  for (std::int64_t j = 0; j < m; ++j) su.s().theta[j] = th[j], su.s().rn[j] = r[j];
  const chebyshev::FilterPlan plan = it.restart(m);
  EXPECT_EQ(plan.cut, 0.2) << "the largest active Ritz value";
  EXPECT_FALSE(plan.fp32);
  const auto& deg = su.s().deg;
  const double e = (4.0 - 0.2) / 2, ce = (4.0 + 0.2) / 2;
  int dwant = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    EXPECT_EQ(deg[i] % 2, 0);
    EXPECT_GE(deg[i], su.copt.min_degree);
    EXPECT_LE(deg[i], su.copt.max_degree);  // the cut has not settled: the short cap
    if (i > 0) EXPECT_GE(deg[i], deg[i - 1]);
    if (i < 4) {
      const double t = (th[i] - ce) / e, rho = -t + std::sqrt(t * t - 1.0);
      const double need = std::max(r[i] / it.tau(th[i]), 1.0) * su.copt.overshoot;
      if (deg[i] < su.copt.max_degree)
        EXPECT_GE(std::pow(rho, deg[i]), std::pow(need, su.copt.degree_margin) * (1 - 1e-12))
            << "column " << i;
      dwant = std::max(dwant, deg[i]);
    } else {
      EXPECT_EQ(deg[i], dwant) << "guard column " << i;
    }
  }
  EXPECT_EQ(plan.wanted_degree, dwant);
  EXPECT_EQ(su.s().wanted_steps, dwant);
  EXPECT_LT(deg[0], deg[3]) << "a converged column gets a short filter";
  // A block inside one eigenspace (Ritz values within their residuals): the cut is lifted (from
  // the block's own top: the bound of the first block, 0.2, is forgotten as if by a new solve).
  for (std::int64_t j = 0; j < m; ++j) su.s().theta[j] = 1.0 + 1e-9 * j, su.s().rn[j] = 1e-4;
  su.s().it = 3;
  su.s().cut_bound = std::numeric_limits<double>::infinity();
  const double cut = it.filter_cut(m);
  EXPECT_NEAR(cut, su.s().theta[m - 1] + 4.0 * 1e-4, 1e-12);
}

// ---- the cut never rises above an earlier block's top Ritz value (each bounds λ_m from above): a
// filter that left its last column as rounding (its Ritz value far up) does not move the cut.
TEST(ChebyshevSteps, CutKeepsTheLeastUpperBoundOfLambdaM) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Rig su(diagonal_matrix(even_spectrum(200, 0.0, 4.0)), 4, 4, Which::smallest);
  auto& it = restart_rig(su, 0.0);
  const std::int64_t m = it.block_width();
  auto set_block = [&](double top) {
    for (std::int64_t j = 0; j < m; ++j) su.s().theta[j] = 0.01 * (j + 1), su.s().rn[j] = 1e-3;
    su.s().theta[m - 1] = top;
  };
  set_block(0.2);
  EXPECT_EQ(it.restart(m).cut, 0.2);
  set_block(2.5);  // the last column lost to rounding
  su.s().it = 1;
  EXPECT_EQ(it.restart(m).cut, 0.2) << "the earlier bound of lambda_m stands";
  set_block(0.15);
  su.s().it = 2;
  EXPECT_EQ(it.restart(m).cut, 0.15) << "a lower top Ritz value is the new bound";
}

// ---- degrees: the slowest wanted column's own direction stays above rounding. With an isolated
// most amplified pair (θ₀ far below the others), its growth over the slowest wanted column,
// (ρ₀/ρ_slow)^d, stays ≤ 1e8; without one, the cap does not bind (the short cap stands).
TEST(ChebyshevSteps, DegreesKeepTheSlowestWantedColumnAboveRounding) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (const bool isolated : {true, false}) {
    SCOPED_TRACE(isolated);
    Rig su(diagonal_matrix(even_spectrum(200, 0.0, 4.0)), 4, 4, Which::smallest);
    auto& it = restart_rig(su, -2.0);
    const std::int64_t m = it.block_width();
    const std::vector<double> th = {isolated ? -2.0 : 0.16, 0.17, 0.18, 0.19, 0.195, 0.197, 0.199, 0.2};
    for (std::int64_t j = 0; j < m; ++j) su.s().theta[j] = th[j], su.s().rn[j] = 1e-1;
    it.restart(m);
    const auto& deg = su.s().deg;
    const double e = (4.0 - 0.2) / 2, ce = (4.0 + 0.2) / 2;
    auto rho = [&](double x) {
      const double t = (x - ce) / e;
      return -t + std::sqrt(t * t - 1.0);
    };
    const double growth = std::pow(rho(th[0]) / rho(th[3]), deg[3]);
    if (isolated) {
      EXPECT_LE(growth, 1e8);
      EXPECT_GT(growth * std::pow(rho(th[0]) / rho(th[3]), 2), 1e8) << "the largest even degree under it";
      EXPECT_GE(deg[3], su.copt.min_degree);
    } else {
      EXPECT_EQ(deg[3], su.copt.max_degree) << "slow columns, no isolated pair: the short cap";
    }
  }
}

// ---- the rung: fp32_fits refuses a wanted end small against ‖A‖; watch_climb climbs to fp64
// after three fp32 filters without progress of the slowest wanted residual.
TEST(ChebyshevSteps, LadderRefusesSmallEndsAndClimbsOnStagnation) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Rig su(diagonal_matrix(even_spectrum(200, 0.0, 4.0)), 4, 4, Which::largest);
  su.fuse(true);
  auto& it = su.make();
  const std::int64_t m = it.block_width();
  su.s().upper = 0.0, su.s().lower = -4.0, su.s().norm = 4.0, su.s().test_a = 4.0;
  for (std::int64_t j = 0; j < m; ++j)
    su.s().theta[j] = -4.0 + 0.01 * j, su.s().rn[j] = 1e-2, su.s().deg[j] = 10;
  std::string why;
  EXPECT_TRUE(it.fp32_fits(m, su.s().theta[m - 1], &why)) << why;
  for (std::int64_t j = 0; j < m; ++j) su.s().theta[j] = -0.5 + 0.01 * j;  // |θ| < ‖A‖/4
  EXPECT_FALSE(it.fp32_fits(m, su.s().theta[m - 1], &why));
  EXPECT_NE(why.find("below ||A||/4"), std::string::npos) << why;
  chebyshev::FilterPlan p;
  p.fp32 = true;
  for (int f = 0; f < 4; ++f) {
    su.s().it = f;
    it.watch_climb(m, p);
    EXPECT_EQ(it.stats().climbed_at, f < 3 ? -1 : 3) << "filter " << f;
  }
  EXPECT_NE(it.stats().climb_reason.find("three fp32 filters"), std::string::npos);
}

}  // namespace
}  // namespace tcsolve::test
