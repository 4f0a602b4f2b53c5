// solvers/dense/symmetric_eigen.hpp: LAPACK's index-range eigenpairs and the Cholesky forms of the
// dense eigs method, against Eigen's dense references (CPU only).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "solvers/dense/symmetric_eigen.hpp"

namespace tcsolve {
namespace {

Eigen::MatrixXd random_symmetric(std::int64_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d;
  Eigen::MatrixXd a(n, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) a(i, j) = d(g);
  return 0.5 * (a + a.transpose());
}

Eigen::MatrixXd random_spd(std::int64_t n, unsigned seed, double shift) {
  const Eigen::MatrixXd m = random_symmetric(n, seed);
  return m * m.transpose() + shift * Eigen::MatrixXd::Identity(n, n);
}

// Every index range of a matrix with a cluster (values repeated past any block), poisoned upper
// triangle: the values match Eigen's, the vectors are orthonormal eigenvectors.
TEST(SymmetricEigen, IndexRangesMatchEigenAndReadTheLowerTriangle) {
  for (std::int64_t n : {1, 2, 7, 61, 130}) {
    Eigen::MatrixXd a = random_symmetric(n, 3 + static_cast<unsigned>(n));
    if (n > 10) {  // a 5-fold eigenvalue: a = Q·diag·Qᵀ with 5 equal entries
      Eigen::HouseholderQR<Eigen::MatrixXd> qr(random_symmetric(n, 99));
      Eigen::VectorXd d = Eigen::VectorXd::LinSpaced(n, -3.0, 5.0);
      d.segment(2, 5).setConstant(-2.0);
      const Eigen::MatrixXd q = qr.householderQ();
      a = q * d.asDiagonal() * q.transpose();
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ref(a);
    Eigen::MatrixXd poisoned = a;
    poisoned.triangularView<Eigen::StrictlyUpper>().setConstant(NAN);
    for (auto [il, iu] : {std::pair<std::int64_t, std::int64_t>{0, n - 1}, {0, 0}, {n - 1, n - 1},
                          {0, std::min<std::int64_t>(n, 6) - 1}, {std::max<std::int64_t>(0, n - 6), n - 1},
                          {n / 3, n / 2}}) {
      const SymmetricEigen e = symmetric_eigen(symmetric_eigen_uses_lapack() ? poisoned : a, il, iu);
      const std::int64_t m = iu - il + 1;
      ASSERT_EQ(e.values.size(), m);
      ASSERT_EQ(e.vectors.rows(), n);
      ASSERT_EQ(e.vectors.cols(), m);
      const double scale = ref.eigenvalues().cwiseAbs().maxCoeff();
      for (std::int64_t j = 0; j < m; ++j) {
        EXPECT_NEAR(e.values(j), ref.eigenvalues()(il + j), 1e-13 * scale) << n << " " << il << " " << j;
        EXPECT_LE((a * e.vectors.col(j) - e.values(j) * e.vectors.col(j)).norm(), 1e-12 * scale);
      }
      EXPECT_LE((e.vectors.transpose() * e.vectors - Eigen::MatrixXd::Identity(m, m)).norm(), 1e-12);
    }
  }
  EXPECT_THROW(symmetric_eigen(Eigen::MatrixXd::Identity(4, 4), 2, 1), std::exception);
  EXPECT_THROW(symmetric_eigen(Eigen::MatrixXd::Identity(4, 4), 0, 4), std::exception);
}

// The inverse form of the dense method: C = L⁻¹·B·L⁻ᵀ has the pencil's 1/λ, x = L⁻ᵀ·y its vectors
// (A-normalized); solve() is A⁻¹; an indefinite A is refused.
TEST(DenseCholesky, CongruenceSolvesAndRefusal) {
  const std::int64_t n = 57;
  const Eigen::MatrixXd a = random_spd(n, 5, 0.5), b = random_spd(n, 6, 2.0);
  DenseCholesky c;
  ASSERT_TRUE(c.factor(a));
  for (const Eigen::MatrixXd* bp : {static_cast<const Eigen::MatrixXd*>(nullptr), &b}) {
    const Eigen::MatrixXd bb = bp ? *bp : Eigen::MatrixXd::Identity(n, n);
    const SymmetricEigen e = symmetric_eigen(c.congruence(bp), n - 4, n - 1);  // the 4 largest μ
    const Eigen::MatrixXd x = c.solve_lower_transposed(e.vectors);
    const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> ref(a, bb);
    for (std::int64_t j = 0; j < 4; ++j) {
      const double lambda = 1.0 / e.values(3 - j);  // ascending λ
      EXPECT_NEAR(lambda, ref.eigenvalues()(j), 1e-11 * ref.eigenvalues()(j));
      const Eigen::VectorXd xj = x.col(3 - j);
      EXPECT_LE((a * xj - lambda * bb * xj).norm(), 1e-10 * a.norm() * xj.norm());
      EXPECT_NEAR(xj.dot(a * xj), 1.0, 1e-11);  // yᵀy = xᵀ·L·Lᵀ·x
    }
  }
  const Eigen::MatrixXd r = random_symmetric(n, 8).leftCols(3);
  EXPECT_LE((a * c.solve(r) - r).norm(), 1e-11 * r.norm() * a.norm());
  Eigen::MatrixXd indefinite = a;
  indefinite(n / 2, n / 2) = -1e3;
  EXPECT_FALSE(DenseCholesky().factor(indefinite));
}

}  // namespace
}  // namespace tcsolve
