// factor_lu's engines, UMFPACK (its copied-out factors, factor/lu_triangular.hpp) and KLU (small
// A of low fill, factor/klu_factor.cpp), each asked for: the solves against
// dense LU (Eigen) on unsymmetric matrices that need row pivoting (zero diagonal entries) and
// row scaling (rows spanning 1e-3..1e3), at column counts that exercise every chunk width
// (1, 2, 3, 7, 8, 13, 21), both systems (A and Aᵀ), leading dimensions above n, poisoned outputs.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <vector>

#include "factor/lu_factor.hpp"
#include "factor/sparse_factor.hpp"
#include "factor/lu_triangular.hpp"
#include "tests/traps.hpp"

namespace tcsolve::test {
namespace {

// n × n: the rows of a diagonally dominant B (diagonal 8 + u, six entries in (−1, 1) a row) in
// a shuffled order (most diagonal entries of A are then zero or small: the LU must pivot), row i
// scaled by 10^(3·sin(i)).
Csr<double> pivoting_matrix(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int32_t> row_of(n);
  for (std::int64_t i = 0; i < n; ++i) row_of[i] = static_cast<std::int32_t>((i * 7 + 3) % n);
  if (n % 7 == 0)
    for (std::int64_t i = 0; i < n; ++i) row_of[i] = static_cast<std::int32_t>(n - 1 - i);
  std::vector<Triplet<double>> t;
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(n); ++i) {
    const double scale = std::pow(10.0, 3.0 * std::sin(static_cast<double>(i)));
    const std::int32_t r = row_of[i];  // row i of B lands in row r of A
    t.push_back({r, i, scale * (8.0 + random_entry(seed, i, 0))});
    for (int e = 0; e < 6; ++e) {
      const auto j = static_cast<std::int32_t>((0.5 + 0.5 * random_entry(seed + 1, i, e)) * static_cast<double>(n - 1));
      if (j != i) t.push_back({r, j, scale * random_entry(seed + 2, i, e)});
    }
  }
  return csr_from_triplets<double>(n, n, t, Symmetry::general);
}

Eigen::MatrixXd dense_of(const Csr<double>& a) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.nrows, a.ncols);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[p]) += a.values[p];
  return d;
}

FactorOptions engine(FactorEngine e) {
  FactorOptions o;
  o.engine = e;
  return o;
}

TEST(LuSolve, EveryChunkWidthBothSystemsAgainstDenseLu) {
  if (!built_with_lu_qr()) GTEST_SKIP() << "built without UMFPACK";
  for (const FactorEngine e : {FactorEngine::umfpack, FactorEngine::automatic})
  for (std::int64_t n : {1, 7, 517}) {
    const Csr<double> a = pivoting_matrix(n, 11 + n);
    const Eigen::MatrixXd d = dense_of(a);
    const Eigen::FullPivLU<Eigen::MatrixXd> ref(d);
    ASSERT_TRUE(ref.isInvertible()) << "n = " << n;
    const double cond = d.norm() * ref.inverse().norm();
    const auto lu = factor_lu(a, engine(e));
    ASSERT_FALSE(lu->singular());
    // automatic: KLU at these sizes (low fill)
    EXPECT_STREQ(lu->engine_name(), e == FactorEngine::umfpack ? "umfpack LU" : "klu LU") << lu->describe();
    for (std::int64_t s : {1, 2, 3, 7, 8, 13, 21}) {
      const std::int64_t ld = n + 3;
      std::vector<double> b(ld * s, std::numeric_limits<double>::quiet_NaN());  // padding poisoned
      for (std::int64_t j = 0; j < s; ++j)
        for (std::int64_t i = 0; i < n; ++i) b[i + j * ld] = random_entry(5 + s, i, j);
      for (bool transpose : {false, true}) {
        std::vector<double> x(ld * s, std::numeric_limits<double>::quiet_NaN());
        lu->solve({b.data(), n, s, ld, Space::host}, {x.data(), n, s, ld, Space::host}, transpose);
        const Eigen::MatrixXd op = transpose ? Eigen::MatrixXd(d.transpose()) : d;
        const Eigen::FullPivLU<Eigen::MatrixXd> dref(op);
        for (std::int64_t j = 0; j < s; ++j) {
          const Eigen::Map<const Eigen::VectorXd> bj(b.data() + j * ld, n), xj(x.data() + j * ld, n);
          const Eigen::VectorXd xr = dref.solve(Eigen::VectorXd(bj));
          const double err = (xj - xr).norm() / xr.norm();
          EXPECT_LE(err, 1e-13 * cond) << lu->engine_name() << " n " << n << " s " << s << " column " << j
                                       << " transpose " << transpose;
          EXPECT_LE((op * xj - bj).norm(), 1e-13 * d.norm() * xj.norm() + 1e-14 * bj.norm())
              << lu->engine_name() << " n " << n << " s " << s << " column " << j << " transpose " << transpose;
          // The padding below row n is left as it was.
          for (std::int64_t i = n; i < ld; ++i) EXPECT_TRUE(std::isnan(x[i + j * ld]));
        }
      }
    }
  }
}

// The factorization and one column's answer do not depend on the others in its chunk: solving
// 13 columns at once gives, column by column, what solving each alone gives (bitwise: the same
// operations in the same order per column).
TEST(LuSolve, ColumnsOfAChunkAreIndependent) {
  if (!built_with_lu_qr()) GTEST_SKIP() << "built without UMFPACK";
  for (const FactorEngine e : {FactorEngine::umfpack, FactorEngine::automatic}) {
  const std::int64_t n = 301, s = 13;
  const auto lu = factor_lu(pivoting_matrix(n, 3), engine(e));
  std::vector<double> b(n * s), x(n * s), one(n);
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t i = 0; i < n; ++i) b[i + j * n] = random_entry(7, i, j);
  for (bool transpose : {false, true}) {
    lu->solve({b.data(), n, s, n, Space::host}, {x.data(), n, s, n, Space::host}, transpose);
    for (std::int64_t j = 0; j < s; ++j) {
      lu->solve({b.data() + j * n, n, 1, n, Space::host}, {one.data(), n, 1, n, Space::host}, transpose);
      for (std::int64_t i = 0; i < n; ++i)
        ASSERT_EQ(one[i], x[i + j * n]) << lu->engine_name() << " row " << i << " column " << j << " transpose " << transpose;
    }
  }
  }
}

// A small A that fills in (1000 rows, 20 random entries a row: nearly dense factors, far above
// kKluMaxFlops) goes to UMFPACK even when automatic; its answer is checked all the same.
TEST(LuSolve, SmallMatrixWithMuchFillGoesToUmfpack) {
  if (!built_with_lu_qr()) GTEST_SKIP() << "built without UMFPACK";
  const std::int64_t n = 1000;
  std::vector<Triplet<double>> t;
  for (std::int32_t i = 0; i < n; ++i) {
    t.push_back({i, i, 30.0});
    for (int e = 0; e < 19; ++e)
      t.push_back({i, static_cast<std::int32_t>((0.5 + 0.5 * random_entry(21, i, e)) * (n - 1)), random_entry(22, i, e)});
  }
  const Csr<double> a = csr_from_triplets<double>(n, n, t, Symmetry::general);
  ASSERT_LE(a.nnz(), 20000);
  const auto lu = factor_lu(a);
  EXPECT_STREQ(lu->engine_name(), "umfpack LU") << lu->describe();
  std::vector<double> b(n), x(n);
  for (std::int64_t i = 0; i < n; ++i) b[i] = random_entry(23, i, 0);
  lu->solve({b.data(), n, 1, n, Space::host}, {x.data(), n, 1, n, Space::host});
  const Eigen::MatrixXd d = dense_of(a);
  const Eigen::Map<const Eigen::VectorXd> bv(b.data(), n), xv(x.data(), n);
  EXPECT_LE((d * xv - bv).norm(), 1e-12 * d.norm() * xv.norm());
}

// A pivot whose reciprocal overflows (a subnormal U(k, k)): the solves divide instead, both
// systems. Hand-made factors: P = Q = I, R = diag(1, 1, 0.5), L = [1; 0.5 1; 0 0 1],
// U = [2 1 0; 0 1e-310 0; 0 0 4].
TEST(LuSolve, SubnormalPivotIsDividedBy) {
  detail::LuFactors f;
  f.n = 3;
  f.lp = {0, 0, 1, 1}, f.lj = {0}, f.lx = {0.5};
  f.up = {0, 1, 1, 1}, f.uj = {1}, f.ux = {1.0};
  f.u_diag = {2.0, 1e-310, 4.0};
  f.p = {0, 1, 2}, f.q = {0, 1, 2}, f.r = {1.0, 1.0, 0.5};
  f.set_pivot_reciprocals();
  ASSERT_TRUE(f.divide);
  // M = R⁻¹·L·U = [2 1 0; 1 0.5+1e-310 0; 0 0 8]; M·(1, 1, 1) = (3, 1.5 + 1e-310, 8) ≈ (3, 1.5, 8),
  // so check L·U·x = R·b through x's second entry: x = M⁻¹·(0, 1e-310, 0) = (−0.5, 1, 0).
  std::vector<double> b = {0.0, 1e-310, 0.0}, x(3), work(3 * detail::kLuChunk);
  detail::lu_solve(f, {b.data(), 3, 1, 3, Space::host}, {x.data(), 3, 1, 3, Space::host}, false, work.data());
  EXPECT_DOUBLE_EQ(x[0], -0.5);
  EXPECT_DOUBLE_EQ(x[1], 1.0);
  EXPECT_EQ(x[2], 0.0);
  // Mᵀ·x = (1, 0.5, 0) (0.5 + 1e-310 rounds to 0.5): x = (0.5, 0, 0), through 0 / 1e-310 (NaN by
  // the reciprocal); checked as Mᵀ's rows.
  std::vector<double> bt = {1.0, 0.5 + 1e-310, 0.0}, xt(3);
  detail::lu_solve(f, {bt.data(), 3, 1, 3, Space::host}, {xt.data(), 3, 1, 3, Space::host}, true, work.data());
  for (double v : xt) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(2.0 * xt[0] + 1.0 * xt[1], 1.0, 1e-15);
  EXPECT_NEAR(8.0 * xt[2], 0.0, 1e-15);
}

TEST(LuSolve, SingularMatrixRefusesToSolve) {
  if (!built_with_lu_qr()) GTEST_SKIP() << "built without UMFPACK";
  // Rows 0 and 1 equal: a zero pivot.
  const Csr<double> a = csr_from_triplets<double>(
      3, 3, {{0, 0, 1.0}, {0, 1, 2.0}, {1, 0, 1.0}, {1, 1, 2.0}, {2, 2, 1.0}}, Symmetry::general);
  for (const FactorEngine e : {FactorEngine::umfpack, FactorEngine::automatic}) {
    const auto lu = factor_lu(a, engine(e));
    ASSERT_TRUE(lu->singular()) << lu->describe();
    EXPECT_EQ(lu->rcond(), 0.0) << lu->describe();
    std::vector<double> b(3, 1.0), x(3);
    EXPECT_THROW(lu->solve({b.data(), 3, 1, 3, Space::host}, {x.data(), 3, 1, 3, Space::host}), std::exception);
  }
}

}  // namespace
}  // namespace tcsolve::test
