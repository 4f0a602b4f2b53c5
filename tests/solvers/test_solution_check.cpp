// solvers/solution_check.hpp against dense Eigen arithmetic: residual norms, backward errors and
// least-squares optimality of square and rectangular A, zero columns, leading dimensions; and the
// Hager–Higham 1-norm condition estimate (solvers/direct/condition_estimate.hpp) against dense κ₁.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <vector>

#include "core/csr.hpp"
#include "solvers/direct/condition_estimate.hpp"
#include "solvers/random.hpp"
#include "solvers/solution_check.hpp"
#include "tests/traps.hpp"

namespace tcsolve::test {
namespace {

// m × n with about `per_row` entries a row (and a full diagonal where it exists), values in [-1, 1].
Csr<double> random_sparse(int m, int n, int per_row, std::uint64_t seed) {
  std::vector<Triplet<double>> t;
  for (int i = 0; i < m; ++i) {
    if (i < n) t.push_back({i, i, 4.0 + detail::random_entry(seed, i, i)});
    for (int k = 0; k < per_row; ++k) {
      const int j = static_cast<int>((detail::random_entry(seed + 1, i, k) + 1.0) * 0.5 * (n - 1) + 0.5);
      t.push_back({i, j, detail::random_entry(seed + 2, i, k)});
    }
  }
  return csr_from_triplets<double>(m, n, std::move(t));
}

Eigen::MatrixXd random_dense(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Eigen::MatrixXd x(rows, cols);
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) x(i, j) = detail::random_entry(seed, i, j);
  return x;
}

// The three checks in dense arithmetic.
void expect_checks_match_dense(const Csr<double>& a, const Eigen::MatrixXd& b, const Eigen::MatrixXd& x,
                               const SolveResult& r, bool least_squares) {
  const Eigen::MatrixXd d = dense_of(a);
  const Eigen::MatrixXd res = b - d * x;
  const double fro = d.norm();
  EXPECT_NEAR(frobenius_norm(a), fro, 1e-14 * fro);
  ASSERT_EQ(r.residual_norms.size(), static_cast<std::size_t>(b.cols()));
  ASSERT_EQ(r.backward_errors.size(), static_cast<std::size_t>(b.cols()));
  ASSERT_EQ(r.optimality.size(), least_squares ? static_cast<std::size_t>(b.cols()) : 0u);
  for (Eigen::Index j = 0; j < b.cols(); ++j) {
    const double rn = res.col(j).norm(), bn = b.col(j).norm(), xn = x.col(j).norm();
    const double want_res = bn > 0 ? rn / bn : rn;
    const double want_be = fro * xn + bn > 0 ? rn / (fro * xn + bn) : 0.0;
    EXPECT_NEAR(r.residual_norms[j], want_res, 1e-12 * want_res + 1e-300) << "column " << j;
    EXPECT_NEAR(r.backward_errors[j], want_be, 1e-12 * want_be + 1e-300) << "column " << j;
    if (least_squares) {
      const double want_opt = rn > 0 ? (d.transpose() * res.col(j)).norm() / (fro * rn) : 0.0;
      EXPECT_NEAR(r.optimality[j], want_opt, 1e-10 * want_opt + 1e-300) << "column " << j;
    }
  }
}

TEST(SolutionCheck, SquareMatchesDenseResidualsAndBackwardErrors) {
  const Csr<double> a = random_sparse(40, 40, 3, 7);
  const Eigen::MatrixXd b = random_dense(40, 5, 11), x = random_dense(40, 5, 12);
  SolveResult r;
  check_solution(a, b.data(), 40, x.data(), 40, 5, false, r);
  expect_checks_match_dense(a, b, x, r, false);
}

TEST(SolutionCheck, RectangularOptimalityMatchesDenseWithLeadingDimensions) {
  for (const auto& [m, n] : {std::pair<int, int>{60, 25}, {25, 60}}) {
    const Csr<double> a = random_sparse(m, n, 4, 21 + m);
    const Eigen::MatrixXd b = random_dense(m, 4, 31), x = random_dense(n, 4, 32);
    // Padded copies (ldb = m + 3, ldx = n + 5): the checks must read only the leading rows.
    std::vector<double> bp((m + 3) * 4, 1e300), xp((n + 5) * 4, -1e300);
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < m; ++i) bp[i + j * (m + 3)] = b(i, j);
      for (int i = 0; i < n; ++i) xp[i + j * (n + 5)] = x(i, j);
    }
    SolveResult r;
    check_solution(a, bp.data(), m + 3, xp.data(), n + 5, 4, true, r);
    expect_checks_match_dense(a, b, x, r, true);
  }
}

TEST(SolutionCheck, ExactLeastSquaresAnswerHasTinyOptimalityAndWrongOneDoesNot) {
  const Csr<double> a = random_sparse(50, 20, 3, 5);
  const Eigen::MatrixXd d = dense_of(a), b = random_dense(50, 3, 6);
  Eigen::MatrixXd x = d.colPivHouseholderQr().solve(b);
  SolveResult r;
  check_solution(a, b.data(), 50, x.data(), 20, 3, true, r);
  for (double o : r.optimality) EXPECT_LT(o, 1e-13);
  x(3, 1) += 1e-3;  // no longer the least-squares answer
  check_solution(a, b.data(), 50, x.data(), 20, 3, true, r);
  EXPECT_LT(r.optimality[0], 1e-13);
  EXPECT_GT(r.optimality[1], 1e-6);
}

TEST(SolutionCheck, ZeroColumnsAndExactSolutionsGiveZeros) {
  const Csr<double> a = random_sparse(30, 30, 2, 3);
  Eigen::MatrixXd x = random_dense(30, 3, 4);
  x.col(1).setZero();
  Eigen::MatrixXd b = dense_of(a) * x;  // exact up to rounding; column 1 is b = 0, x = 0
  SolveResult r;
  check_solution(a, b.data(), 30, x.data(), 30, 3, true, r);
  EXPECT_EQ(r.residual_norms[1], 0.0);
  EXPECT_EQ(r.backward_errors[1], 0.0);
  EXPECT_EQ(r.optimality[1], 0.0);
  EXPECT_LT(r.backward_errors[0], 1e-15);
}

TEST(SolutionCheck, NonFiniteSolutionNeverPassesATest) {
  const Csr<double> a = random_sparse(20, 20, 2, 8);
  Eigen::MatrixXd b = random_dense(20, 2, 9), x = random_dense(20, 2, 10);
  x(4, 0) = std::numeric_limits<double>::quiet_NaN();
  x(5, 1) = std::numeric_limits<double>::infinity();
  SolveResult r;
  check_solution(a, b.data(), 20, x.data(), 20, 2, true, r);
  for (int j = 0; j < 2; ++j) {
    EXPECT_FALSE(r.backward_errors[j] <= 1.0) << j;  // NaN compares false
    EXPECT_FALSE(r.optimality[j] <= 1.0) << j;
  }
}

TEST(SolutionCheck, RefusesShortLeadingDimensions) {
  const Csr<double> a = random_sparse(10, 6, 2, 1);
  std::vector<double> b(10), x(6);
  SolveResult r;
  EXPECT_THROW(check_solution(a, b.data(), 9, x.data(), 6, 1, false, r), InvalidArgument);
  EXPECT_THROW(check_solution(a, b.data(), 10, x.data(), 5, 1, false, r), InvalidArgument);
}

// Dense inverse applied as the solver: the estimate against the exact ‖A⁻¹‖₁.
double estimate_of_dense(const Eigen::MatrixXd& d) {
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(d);
  const Eigen::MatrixXd dt = d.transpose();
  const Eigen::PartialPivLU<Eigen::MatrixXd> lut(dt);
  const std::int64_t n = d.rows();
  return estimate_inverse_norm1(n, [&](const double* x, double* y, bool t) {
    Eigen::Map<const Eigen::VectorXd> xv(x, n);
    Eigen::Map<Eigen::VectorXd> yv(y, n);
    yv = t ? lut.solve(xv) : lu.solve(xv);
  });
}

TEST(ConditionEstimate, WithinAFactorThreeBelowTheDenseInverseNorm) {
  struct Case {
    Csr<double> a;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({random_sparse(80, 80, 3, 41), "random unsymmetric"});
  cases.push_back({scaled_laplacian3d(5, 1.0, 1e-6), "3D Laplacian shifted by 1e-6 (kappa ~ 1e7)"});
  cases.push_back({lumped_mass(60, 10.0, 3), "diagonal spanning 10 decades"});
  for (const Case& c : cases) {
    const Eigen::MatrixXd d = dense_of(c.a);
    const double exact = d.inverse().cwiseAbs().colwise().sum().maxCoeff();
    const double est = estimate_of_dense(d);
    EXPECT_LE(est, exact * (1 + 1e-8)) << c.what;
    EXPECT_GE(est, exact / 3.0) << c.what;
    EXPECT_NEAR(csr_norm1(c.a), d.cwiseAbs().colwise().sum().maxCoeff(), 1e-12 * d.norm()) << c.what;
  }
}

}  // namespace
}  // namespace tcsolve::test
