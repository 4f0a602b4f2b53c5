// The steps of detail::BlockLanczos (solvers/lanczos/block_lanczos.hpp), one at a time, against
// host references: the basis and projection after expand, reorthogonalize's coefficient identity,
// ritz on a basis that holds an exact eigenvector, thick restart's Krylov–Schur relation, the
// explicit check's decisions, Ctrl-C within a block step, and the start-block checks.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/lanczos/block_lanczos.hpp"
#include "tests/solvers/solver_test_util.hpp"
#include "tests/solvers/step_test_util.hpp"

namespace tcsolve::test {
namespace {

EigenOptions sized(std::int64_t k, std::int64_t block, std::int64_t basis) {
  EigenOptions o;
  o.k = k;
  o.block_size = block;
  o.max_basis = basis;
  return o;
}

// Op = A (b null) or Op = B⁻¹·A with binv given; estimates pass below `bound`; the explicit check
// returns `verdict` (counting its calls).
struct Problem {
  detail::LanczosProblem prob;
  int checks = 0;
  bool verdict = false;
  Problem(const LinearOperator<double>& a, const LinearOperator<double>* b,
          const LinearOperator<double>* binv, Which which, double bound) {
    prob.n = a.rows();
    prob.b = b;
    prob.which = which;
    prob.apply = [&a, binv](detail::ApplyClock& clock, MvView<const double> vc, MvView<const double>,
                            MvView<double> w, MvView<double> scratch) {
      if (!binv) return clock.apply(a, vc, w);
      clock.apply(a, vc, scratch);
      clock.apply(*binv, scratch, w);
    };
    prob.estimate_passes = [bound](double, double est) { return est <= bound; };
    prob.verify = [this](detail::ApplyClock&, MvView<double>, const std::vector<double>&, bool,
                         EigenResult&) {
      ++checks;
      return verdict;
    };
  }
};

// A standard problem (Op = A) on the backend under test.
struct Standard {
  Csr<double> a;
  std::unique_ptr<LinearOperator<double>> op;
  std::unique_ptr<DenseBlockOps> ops;
  Problem p;
  explicit Standard(Csr<double> m)
      : a(std::move(m)), op(make_operator(a)), ops(make_dense_ops(kBackend)),
        p(*op, nullptr, nullptr, Which::smallest, 0.0) {}
};

// 1D finite-element-like diagonal mass matrix with entries in [0.5, 1.5] and its inverse.
Csr<double> diagonal_matrix(std::int64_t n, bool inverse) {
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = 1.0 + 0.5 * random_entry(31, i, 0);
    t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i), inverse ? 1.0 / d : d});
  }
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

// After expand: V(:, 0:c+b) is B-orthonormal, Vᵀ·A·V(:, 0:c) is the H the class holds, and the
// Lanczos relation Op·V(:, 0:c) = V(:, 0:c+b)·H(0:c+b, 0:c) holds; H is block tridiagonal.
void check_expanded(detail::BlockLanczos& lz, DenseBlockOps& ops, const Csr<double>& a,
                    const Csr<double>* b) {
  const std::int64_t c = lz.current(), bs = lz.shape().block;
  const Mat V = to_host(ops, lz.basis(c + bs));
  const Mat BV = b ? apply_host(*b, V) : V;
  const double anorm = norm_inf(a);
  EXPECT_LT((V.transpose() * BV - Mat::Identity(c + bs, c + bs)).cwiseAbs().maxCoeff(), 1e-12);
  const Mat AV = apply_host(a, V.leftCols(c));
  const Mat Hc = lz.projection().topLeftCorner(c + bs, c);
  EXPECT_LT((V.transpose() * AV - Hc).cwiseAbs().maxCoeff(), 1e-11 * anorm);
  // Op·V = V·H, in the B-form: A·V = B·V·H.
  EXPECT_LT((AV - BV * Hc).cwiseAbs().maxCoeff(), 1e-11 * anorm);
  for (std::int64_t i = 0; i < c + bs; ++i)
    for (std::int64_t j = 0; j < c; ++j)
      if (std::abs(i / bs - j / bs) > 1) ASSERT_LT(std::abs(Hc(i, j)), 1e-11 * anorm) << i << ", " << j;
  // The coupling of each step (the sub-diagonal block) is upper triangular: a block Krylov basis
  // (exactly so on the Cholesky-QR fast path; to rounding through orthonormalize()).
  for (std::int64_t blk = 1; blk * bs <= c; ++blk)
    for (std::int64_t i = 0; i < bs; ++i)
      for (std::int64_t j = 0; j < i; ++j)
        EXPECT_LE(std::abs(Hc(blk * bs + i, (blk - 1) * bs + j)), 1e-12 * anorm) << blk << ": " << i << ", " << j;
}

TEST(LanczosSteps, ExpandBuildsAnOrthonormalBlockKrylovBasisAndItsProjection) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Standard s(laplacian(30, 20));
  const Csr<double>& a = s.a;
  DenseBlockOps* ops = s.ops.get();
  EigenOptions o = sized(4, 4, 40);
  // A given start block: V(:, 0:b) must span it.
  Mat x0(a.nrows, 4);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (int j = 0; j < 4; ++j) x0(i, j) = std::cos(0.01 * (i + 1) * (j + 1)) + 0.1 * random_entry(3, i, j);
  o.start = x0.data();
  o.start_cols = 4;
  detail::BlockLanczos lz(s.p.prob, *ops, o);
  lz.start();
  EXPECT_EQ(lz.current(), 0);
  const Mat V0 = to_host(*ops, lz.basis(4));
  EXPECT_LT((x0 - V0 * (V0.transpose() * x0)).norm() / x0.norm(), 1e-13);
  for (int step = 1; step <= 6; ++step) {
    lz.expand();
    EXPECT_EQ(lz.current(), 4 * step);
  }
  check_expanded(lz, *ops, a, nullptr);
  // Krylov: V(:, 0:c+b) spans [X₀, A·X₀, …, A⁶·X₀] (normalized columns; exact arithmetic up to
  // the condition of the power basis, fine at 7 blocks of a 600-point Laplacian).
  const Mat V = to_host(*ops, lz.basis(28));
  Mat K(a.nrows, 28);
  K.leftCols(4) = x0;
  for (int s = 1; s < 7; ++s) K.middleCols(4 * s, 4) = apply_host(a, K.middleCols(4 * (s - 1), 4));
  for (int j = 0; j < 28; ++j) K.col(j).normalize();
  EXPECT_LT((K - V * (V.transpose() * K)).cwiseAbs().maxCoeff(), 1e-9);
}

TEST(LanczosSteps, ExpandGeneralizedKeepsTheBasisBOrthonormal) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = laplacian(25, 16);
  const auto b = diagonal_matrix(a.nrows, false), binv = diagonal_matrix(a.nrows, true);
  auto opa = make_operator(a), opb = make_operator(b), opbinv = make_operator(binv);
  auto ops = make_dense_ops(kBackend);
  Problem p(*opa, opb.get(), opbinv.get(), Which::largest, 0.0);
  EigenOptions o = sized(3, 3, 30);
  detail::BlockLanczos lz(p.prob, *ops, o);
  lz.start();
  for (int step = 0; step < 5; ++step) lz.expand();
  check_expanded(lz, *ops, a, &b);
}

// reorthogonalize alone: W_in = V·C + W_out·M with [V W_out] orthonormal, for a general block,
// one with a column inside span(V) (what is left of it after the projection is rounding noise,
// normalized into a new direction: M(:, 1) ≈ 0) and one with a zero column (the rank-revealing
// path refills it with a random direction, keeping the block width).
TEST(LanczosSteps, ReorthogonalizeSatisfiesTheCoefficientIdentity) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Standard s(laplacian(400));
  const Csr<double>& a = s.a;
  DenseBlockOps* ops = s.ops.get();
  const EigenOptions o = sized(3, 3, 30);
  detail::BlockLanczos lz(s.p.prob, *ops, o);
  lz.start();
  lz.expand();
  lz.expand();
  const std::int64_t nx = lz.current() + 3, n = a.nrows;
  const Mat V = to_host(*ops, lz.basis(nx));
  for (int kind : {0, 1, 2}) {
    SCOPED_TRACE(kind == 0 ? "a general block" : kind == 1 ? "a column inside span(V)" : "a zero column");
    Mat w_in(n, 3);
    for (std::int64_t i = 0; i < n; ++i)
      for (int j = 0; j < 3; ++j) w_in(i, j) = random_entry(17, i, j);
    w_in += V * Mat::Constant(nx, 3, 0.7);  // a large component in the basis
    if (kind == 1) w_in.col(1) = V * Eigen::VectorXd::LinSpaced(nx, 1.0, 2.0);
    if (kind == 2) w_in.col(1).setZero();
    ops->from_host(w_in.data(), n, lz.next_block());
    const OrthoBranch branch = lz.reorthogonalize();
    if (kind == 2) EXPECT_NE(branch, OrthoBranch::cholqr2);
    else EXPECT_EQ(branch, OrthoBranch::cholqr2);
    const Mat w_out = to_host(*ops, lz.next_block());
    Mat all(n, nx + 3);
    all << V, w_out;
    EXPECT_LT((all.transpose() * all - Mat::Identity(nx + 3, nx + 3)).cwiseAbs().maxCoeff(), 1e-12);
    const Mat recon = V * lz.coefficients().topRows(nx) + w_out * lz.coupling();
    const double scale = w_in.cwiseAbs().maxCoeff();
    EXPECT_LT((recon - w_in).cwiseAbs().maxCoeff(), 1e-12 * scale);
    // Column 1 of W_in lies in span(V) (or is zero): none of it in the new directions.
    if (kind > 0) EXPECT_LT(lz.coupling().col(1).cwiseAbs().maxCoeff(), 1e-12 * scale);
  }
}

// ritz on a basis that contains an exact eigenvector (the start block holds it: the block Krylov
// space keeps it) returns its eigenvalue with a zero estimated residual; a random start does not.
TEST(LanczosSteps, RitzReturnsTheEigenvalueOfAnEigenvectorInTheBasis) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int n = 300;
  const auto a = laplacian(n);
  const double lam1 = 2.0 - 2.0 * std::cos(kPi / (n + 1));
  Mat x0(n, 2);
  for (int i = 0; i < n; ++i) x0(i, 0) = std::sin(kPi * (i + 1) / (n + 1)), x0(i, 1) = random_entry(5, i, 0);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  for (bool exact : {true, false}) {
    SCOPED_TRACE(exact ? "eigenvector in the start block" : "random start");
    Problem p(*op, nullptr, nullptr, Which::smallest, 1e-12);
    EigenOptions o = sized(1, 2, 40);
    if (exact) o.start = x0.data(), o.start_cols = 2;
    detail::BlockLanczos lz(p.prob, *ops, o);
    lz.start();
    for (int s = 0; s < 3; ++s) lz.expand();
    IterationRecord rec;
    const std::int64_t pass = lz.ritz(lz.current(), rec);
    if (exact) {
      EXPECT_NEAR(lz.theta()[0], lam1, 1e-14);
      EXPECT_LT(rec.residual_norms[0], 1e-12);
      EXPECT_EQ(pass, 1);
      lz.ritz_vectors(lz.current());
      const Mat x = to_host(*ops, lz.ritz_block());
      EXPECT_NEAR(std::abs(x.col(0).dot(x0.col(0))) / x0.col(0).norm(), 1.0, 1e-13);
    } else {
      EXPECT_GT(lz.theta()[0] - lam1, 1e-6);  // 6 columns of a random Krylov space are far off
      EXPECT_EQ(pass, 0);
    }
  }
}

// Thick restart keeps the chosen Ritz vectors and the newest block, with H = [Θ Eᵀ; E ·] and the
// Krylov–Schur relation A·V(:, 0:keep) = V(:, 0:keep+b)·H(0:keep+b, 0:keep); expansion goes on
// from there with a valid basis.
TEST(LanczosSteps, RestartKeepsTheRitzVectorsAndAKrylovSchurRelation) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Standard s(laplacian(24, 18));
  EigenOptions o = sized(4, 2, 24);
  o.restart_keep = 10;
  detail::BlockLanczos lz(s.p.prob, *s.ops, o);
  lz.start();
  IterationRecord rec;
  ASSERT_EQ(lz.expand_basis(false, rec), detail::BlockLanczos::Fill::full);
  const std::int64_t pfull = lz.current(), keep = lz.shape().keep, bs = 2;
  ASSERT_EQ(pfull, 24);
  ASSERT_EQ(keep, 10);
  lz.ritz(pfull, rec);
  const Mat Vold = to_host(*s.ops, lz.basis(pfull + bs));
  const Mat xkeep = Vold.leftCols(pfull) * lz.ritz_coefficients().topLeftCorner(pfull, keep);
  std::vector<double> theta(lz.kept_theta().begin(), lz.kept_theta().begin() + keep);
  for (std::int64_t j = 1; j < keep; ++j) EXPECT_LE(theta[j - 1], theta[j]);  // wanted order
  lz.restart();
  ASSERT_EQ(lz.current(), keep);
  const Mat V = to_host(*s.ops, lz.basis(keep + bs));
  EXPECT_LT((V.leftCols(keep) - xkeep).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((V.rightCols(bs) - Vold.rightCols(bs)).cwiseAbs().maxCoeff(), 1e-14);
  const Mat H = lz.projection().topLeftCorner(keep + bs, keep);
  for (std::int64_t j = 0; j < keep; ++j)
    for (std::int64_t i = 0; i < keep; ++i) EXPECT_EQ(H(i, j), i == j ? theta[j] : 0.0);
  const double anorm = norm_inf(s.a);
  EXPECT_LT((apply_host(s.a, V.leftCols(keep)) - V * H).cwiseAbs().maxCoeff(), 1e-11 * anorm);
  EXPECT_LT((V.transpose() * V - Mat::Identity(keep + bs, keep + bs)).cwiseAbs().maxCoeff(), 1e-12);
  lz.expand();
  lz.expand();
  const std::int64_t c = lz.current();
  const Mat V2 = to_host(*s.ops, lz.basis(c + bs));
  const Mat H2 = lz.projection().topLeftCorner(c + bs, c);
  EXPECT_LT((V2.transpose() * V2 - Mat::Identity(c + bs, c + bs)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((apply_host(s.a, V2.leftCols(c)) - V2 * H2).cwiseAbs().maxCoeff(), 1e-11 * anorm);
}

// The explicit check decides: estimates that pass never make a pair converged when the check
// fails (the run stops on stagnation after 8 failed checks), and a passing check converges.
TEST(LanczosSteps, CheckDecidesConvergence) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = laplacian(200);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o;
  o.k = 2;
  o.max_iterations = 50;
  {
    Problem p(*op, nullptr, nullptr, Which::smallest, 1e300);  // every estimate passes
    p.verdict = false;
    auto r = detail::lanczos_core(p.prob, *ops, o);
    EXPECT_NE(r.status, SolverStatus::converged);
    EXPECT_NE(r.reason.find("stagnation"), std::string::npos) << r.reason;
    EXPECT_EQ(p.checks, 8 + 1);  // the first look of the first pass, then 8 restarts
    EXPECT_EQ(r.values.size(), 2u);
  }
  {
    Problem p(*op, nullptr, nullptr, Which::smallest, 1e300);
    p.verdict = true;
    auto r = detail::lanczos_core(p.prob, *ops, o);
    EXPECT_EQ(r.status, SolverStatus::converged);
    EXPECT_EQ(p.checks, 1);
    EXPECT_EQ(r.iterations, 1);
  }
}

// An operator that requests an interrupt at its `trigger`-th apply (as SIGINT would).
class InterruptingOperator final : public LinearOperator<double> {
 public:
  InterruptingOperator(const LinearOperator<double>& a, int trigger) : a_(a), trigger_(trigger) {}
  std::int64_t rows() const override { return a_.rows(); }
  std::int64_t cols() const override { return a_.cols(); }
  Space space() const override { return a_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override {
    a_.apply(x, y);
    if (++calls_ == trigger_) request_interrupt();
  }
  int calls() const { return calls_; }

 private:
  const LinearOperator<double>& a_;
  int trigger_;
  mutable int calls_ = 0;
};

struct ClearInterrupt {
  ClearInterrupt() { clear_interrupt(); }
  ~ClearInterrupt() { clear_interrupt(); }
};

// Ctrl-C during a run that converges in one restart (a spectrum like shift-invert's, ≈ 1/j, the
// basis filled without looks): the run stops within a block step of the request (interrupted,
// partial results), not at the end of the restart.
TEST(LanczosSteps, InterruptStopsWithinABlockStep) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  ClearInterrupt guard;
  const auto a = inverse_index_matrix(1500);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o = sized(4, 4, 200);
  o.which = Which::largest;
  o.tol = 1e-10;
  o.a_norm = norm_inf(a);  // no norm estimate: every apply is a block step or the check
  o.early_stop = false;
  InterruptingOperator never(*op, -1);
  auto full = block_lanczos(never, nullptr, *ops, o);
  ASSERT_EQ(full.status, SolverStatus::converged) << full.reason;
  ASSERT_EQ(full.iterations, 1);
  ASSERT_EQ(never.calls(), 50 + 1);  // 50 block steps of 4 columns, the check
  for (int trigger : {1, 5}) {
    SCOPED_TRACE("interrupt at block step " + std::to_string(trigger));
    clear_interrupt();
    InterruptingOperator op_int(*op, trigger);
    auto r = block_lanczos(op_int, nullptr, *ops, o);
    EXPECT_EQ(r.status, SolverStatus::interrupted) << r.reason;
    EXPECT_NE(r.reason.find("interrupted"), std::string::npos) << r.reason;
    EXPECT_EQ(r.iterations, 1);
    // The block step that saw the request, then the explicit check's one apply of k columns.
    EXPECT_EQ(op_int.calls(), trigger + 1);
    EXPECT_EQ(r.operator_applies, 4 * trigger + 4);
    ASSERT_EQ(r.values.size(), 4u);
    EXPECT_EQ(r.vectors.size(), 4u * a.nrows);
  }
  // LOBPCG: the flag is read once per iteration (one block step).
  clear_interrupt();
  o.which = Which::smallest;
  o.on_iteration = [](const IterationRecord& rec) {
    if (rec.iteration == 2) request_interrupt();
  };
  auto lr = lobpcg(*op, nullptr, *ops, o);
  EXPECT_EQ(lr.status, SolverStatus::interrupted) << lr.reason;
  EXPECT_EQ(lr.iterations, 4);
}

// A given start block is checked up front: the message names each unusable column.
TEST(LanczosSteps, UnusableStartBlockColumnsAreNamed) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = laplacian(20, 20);
  const std::int64_t n = a.nrows;
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  auto start = [&](int cols) {
    Mat x(n, cols);
    for (std::int64_t i = 0; i < n; ++i)
      for (int j = 0; j < cols; ++j) x(i, j) = random_entry(41, i, j);
    return x;
  };
  struct Case {
    const char* what;
    std::function<void(Mat&)> spoil;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {"zero", [](Mat& x) { x.col(2).setZero(); }, {"column 2 is zero"}},
      {"NaN", [](Mat& x) { x(7, 1) = NAN; }, {"column 1 has a non-finite value (NaN) at row 7"}},
      {"Inf", [](Mat& x) { x(3, 0) = -INFINITY; }, {"column 0 has a non-finite value (Inf) at row 3"}},
      {"duplicate", [](Mat& x) { x.col(3) = -2.0 * x.col(1); }, {"column 3 is a multiple of column 1"}},
      {"dependent", [](Mat& x) { x.col(2) = x.col(0) + 1e-9 * x.col(3) - 3.0 * x.col(1); },
       {"column 2 lies in the span of columns 0, 1"}},
      {"two", [](Mat& x) { x.col(0).setZero(), x.col(3) = x.col(2); },
       {"column 0 is zero", "column 3 is a multiple of column 2"}},
  };
  for (const Case& c : cases) {
    for (const char* solver : {"block_lanczos", "lobpcg", "chebyshev"}) {
      SCOPED_TRACE(std::string(c.what) + " " + solver);
      Mat x = start(4);
      c.spoil(x);
      EigenOptions o;
      o.k = 4;
      o.block_size = 4;
      o.start = x.data();
      o.start_cols = 4;
      try {
        const std::string s = solver;
        if (s == "block_lanczos") block_lanczos(*op, nullptr, *ops, o);
        else if (s == "lobpcg") lobpcg(*op, nullptr, *ops, o);
        else chebyshev_subspace(*op, *ops, o);  // (accepted it silently before 2026-11-28)
        ADD_FAILURE() << "no exception";
      } catch (const InvalidArgument& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(std::string(solver) + ": the given start block"), std::string::npos) << msg;
        for (const auto& s : c.expect) EXPECT_NE(msg.find(s), std::string::npos) << msg;
      }
    }
  }
  // A usable block (also one narrower than the solver's block, completed with random columns)
  // runs and converges.
  for (int cols : {4, 2}) {
    Mat x = start(cols);
    EigenOptions o;
    o.k = 4;
    o.block_size = 4;
    o.tol = 1e-8;
    o.start = x.data();
    o.start_cols = cols;
    EXPECT_EQ(block_lanczos(*op, nullptr, *ops, o).status, SolverStatus::converged);
    EXPECT_EQ(lobpcg(*op, nullptr, *ops, o).status, SolverStatus::converged);
  }
}

}  // namespace
}  // namespace tcsolve::test
