// The steps of detail::Lobpcg (solvers/lobpcg/lobpcg.hpp), one at a time, against host
// references: start and orthonormalize give a B-orthonormal basis with A·S and B·S beside it,
// rayleigh_ritz reproduces a dense eigensolve of the projected pencil, residuals the host
// residuals, lock never locks a pair that fails the test, precondition applies Jacobi.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <vector>

#include "solvers/lobpcg/lobpcg.hpp"
#include "tests/solvers/solver_test_util.hpp"
#include "tests/solvers/step_test_util.hpp"

namespace tcsolve::test {
namespace {

// A 2D Laplacian with a consistent tridiagonal mass matrix (SPD, not diagonal).
struct Pencil {
  Csr<double> a, b;
  std::unique_ptr<LinearOperator<double>> opa, opb;
  std::unique_ptr<DenseBlockOps> ops;
  Pencil() : a(laplacian(22, 17)) {
    const std::int64_t n = a.nrows;
    std::vector<Triplet<double>> t;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto r = static_cast<std::int32_t>(i);
      t.push_back({r, r, 4.0 / 6.0 * (1.0 + 0.3 * random_entry(9, i, 0))});
      if (i + 1 < n) t.push_back({r, r + 1, 1.0 / 6.0}), t.push_back({r + 1, r, 1.0 / 6.0});
    }
    b = csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
    opa = make_operator(a);
    opb = make_operator(b);
    ops = make_dense_ops(kBackend);
  }
};

EigenOptions options(std::int64_t k, double tol) {
  EigenOptions o;
  o.k = k;
  o.tol = tol;
  return o;
}

// One iteration through the steps in run()'s order (no explicit check, no stop).
void iterate(detail::Lobpcg& lp) {
  ASSERT_TRUE(lp.rayleigh_ritz());
  lp.residuals();
  lp.lock();
  const std::int64_t nu = lp.block() + lp.search_directions();
  lp.precondition(nu);
  lp.orthonormalize(nu);
  lp.advance();
}

// The basis S (current buffer) is B-orthonormal and AS, BS are A·S and B·S.
void check_basis(detail::Lobpcg& lp, DenseBlockOps& ops, const Pencil& p) {
  const Mat S = to_host(ops, lp.basis());
  const std::int64_t ns = S.cols();
  const Mat BS = apply_host(p.b, S);
  EXPECT_LT((S.transpose() * BS - Mat::Identity(ns, ns)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((to_host(ops, lp.a_basis()) - apply_host(p.a, S)).cwiseAbs().maxCoeff(), 1e-11 * norm_inf(p.a));
  EXPECT_LT((to_host(ops, lp.b_basis()) - BS).cwiseAbs().maxCoeff(), 1e-12 * norm_inf(p.b));
}

TEST(LobpcgSteps, StartAndOrthonormalizeGiveABOrthonormalBasis) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Pencil p;
  const EigenOptions o = options(5, 1e-10);
  detail::Lobpcg lp(*p.opa, p.opb.get(), *p.ops, o);
  lp.start();
  ASSERT_EQ(lp.width(), lp.block());
  check_basis(lp, *p.ops, p);
  // Through the steps: the next basis [X' P' W] is B-orthonormal, with P' present from the
  // second iteration on and W spanning the new directions.
  for (int it = 0; it < 4; ++it) {
    ASSERT_TRUE(lp.rayleigh_ritz());
    lp.residuals();
    const std::int64_t na = lp.lock();
    const std::int64_t np = lp.search_directions();
    if (it > 0) EXPECT_EQ(np, na);
    const std::int64_t nu = lp.block() + np;
    lp.precondition(nu);
    lp.orthonormalize(nu);
    EXPECT_EQ(lp.next_width(), nu + na);  // no W column dropped on this well-conditioned pencil
    const Mat Sn = to_host(*p.ops, lp.next(lp.next_width()));
    const Mat G = Sn.transpose() * apply_host(p.b, Sn);
    EXPECT_LT((G - Mat::Identity(G.rows(), G.cols())).cwiseAbs().maxCoeff(), 1e-12) << "iteration " << it;
    lp.advance();
    check_basis(lp, *p.ops, p);
  }
}

// rayleigh_ritz: θ = the m wanted eigenvalues of the dense pencil (SᵀAS, SᵀBS), and X' = S·C
// satisfies the Galerkin condition Sᵀ(A·x − θ·B·x) = 0; residuals: the host ‖A·x − θ·B·x‖.
TEST(LobpcgSteps, RayleighRitzReproducesADenseEigensolveOfTheProjectedPencil) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Pencil p;
  for (Which which : {Which::smallest, Which::largest}) {
    SCOPED_TRACE(which == Which::smallest ? "smallest" : "largest");
    EigenOptions o;
    o.k = 4;
    o.which = which;
    detail::Lobpcg lp(*p.opa, p.opb.get(), *p.ops, o);
    lp.start();
    for (int it = 0; it < 3; ++it) iterate(lp);
    const Mat S = to_host(*p.ops, lp.basis());
    const Mat AS = apply_host(p.a, S), BS = apply_host(p.b, S);
    const std::int64_t ns = S.cols(), m = lp.block();
    ASSERT_EQ(ns, 3 * m);
    Eigen::GeneralizedSelfAdjointEigenSolver<Mat> es(S.transpose() * AS, S.transpose() * BS);
    ASSERT_TRUE(lp.rayleigh_ritz());
    const double anorm = norm_inf(p.a);
    for (std::int64_t j = 0; j < m; ++j) {
      const double ref = es.eigenvalues()(which == Which::smallest ? j : ns - 1 - j);
      EXPECT_NEAR(lp.theta()[j], ref, 1e-12 * anorm) << j;
    }
    const Mat X = to_host(*p.ops, lp.next(m));
    const Mat BX = apply_host(p.b, X);
    const Mat R = ritz_residuals(p.a, &p.b, X, lp.theta());
    EXPECT_LT((S.transpose() * R).cwiseAbs().maxCoeff(), 1e-11 * anorm);
    EXPECT_LT((X.transpose() * BX - Mat::Identity(m, m)).cwiseAbs().maxCoeff(), 1e-12);
    lp.residuals();
    for (std::int64_t j = 0; j < m; ++j) {
      EXPECT_NEAR(lp.residual_norms()[j], R.col(j).norm(), 1e-11 * anorm) << j;
      EXPECT_NEAR(lp.x_norms()[j], X.col(j).norm(), 1e-13) << j;
    }
  }
}

// lock: the active set is exactly the pairs that fail the test, and no pair left out of it
// (locked) has a host residual above its bound. Checked at every iteration until some pairs
// are locked and some active.
TEST(LobpcgSteps, LockNeverLocksAPairThatFailsTheTest) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Pencil p;
  const EigenOptions o = options(6, 1e-7);
  bool mixed = false;
  detail::Lobpcg lp(*p.opa, p.opb.get(), *p.ops, o);
  lp.start();
  for (int it = 0; it < 200 && !mixed; ++it) {
    ASSERT_TRUE(lp.rayleigh_ritz());
    lp.residuals();
    const std::int64_t na = lp.lock();
    const std::int64_t m = lp.block();
    const Mat X = to_host(*p.ops, lp.next(m));
    const Mat R = ritz_residuals(p.a, &p.b, X, lp.theta());
    const auto& act = lp.active();
    ASSERT_EQ(static_cast<std::int64_t>(act.size()), na);
    for (std::int64_t j = 0; j < m; ++j) {
      const bool active = std::find(act.begin(), act.end(), j) != act.end();
      const double bound = pair_bound(o, lp.a_norm(), lp.b_norm(), lp.theta()[j]) * X.col(j).norm();
      EXPECT_EQ(active, !lp.converged()[j]) << j;
      if (!active) EXPECT_LE(R.col(j).norm(), bound * (1 + 1e-6)) << "locked pair " << j << " fails";
      if (active) EXPECT_GT(R.col(j).norm(), bound * (1 - 1e-6)) << "active pair " << j << " passes";
    }
    mixed = na > 0 && na < m;
    const std::int64_t nu = m + lp.search_directions();
    lp.precondition(nu);
    lp.orthonormalize(nu);
    lp.advance();
  }
  EXPECT_TRUE(mixed) << "never had locked and active pairs at once";
}

// precondition: W = T·R(:, act) with the built-in Jacobi T = diag(1/|a_ii|).
TEST(LobpcgSteps, PreconditionAppliesJacobiToTheActiveResiduals) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Pencil p;
  EigenOptions o;
  o.k = 3;
  o.jacobi_diagonal = diagonal(p.a);
  detail::Lobpcg lp(*p.opa, nullptr, *p.ops, o);
  lp.start();
  iterate(lp);
  ASSERT_TRUE(lp.rayleigh_ritz());
  lp.residuals();
  const std::int64_t na = lp.lock();
  ASSERT_GT(na, 0);
  const std::int64_t m = lp.block(), nu = m + lp.search_directions();
  lp.precondition(nu);
  const Mat X = to_host(*p.ops, lp.next(m));
  const Mat R = ritz_residuals(p.a, nullptr, X, lp.theta());
  const Mat W = to_host(*p.ops, lp.next(nu + na)).rightCols(na);
  const auto d = diagonal(p.a);
  for (std::int64_t q = 0; q < na; ++q) {
    const std::int64_t j = lp.active()[q];
    double err = 0, scale = 0;
    for (std::int64_t i = 0; i < X.rows(); ++i) {
      err = std::max(err, std::abs(W(i, q) - R(i, j) / std::abs(d[i])));
      scale = std::max(scale, std::abs(R(i, j) / d[i]));
    }
    EXPECT_LT(err, 1e-10 * scale + 1e-13 * norm_inf(p.a)) << "column " << j;
  }
}

}  // namespace
}  // namespace tcsolve::test
