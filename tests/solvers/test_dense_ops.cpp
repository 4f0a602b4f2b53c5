// DenseBlockOps contract (on the backend under test) against Eigen on the host, and the
// orthonormalization branches.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "solvers/dense_ops.hpp"
#include "solvers/orthonormalize.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;

Mat random_mat(std::int64_t r, std::int64_t c, std::uint64_t seed) {
  Mat m(r, c);
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < r; ++i) m(i, j) = random_entry(seed, i, j);
  return m;
}

struct Fixture {
  std::unique_ptr<DenseBlockOps> ops = make_dense_ops(kBackend);
  MultiVector<double> put(const Mat& m) {
    auto v = ops->allocate(m.rows(), m.cols());
    ops->from_host(m.data(), m.rows(), v.view());
    return v;
  }
  Mat get(MvView<const double> v) {
    Mat m(v.rows, v.cols);
    ops->to_host(v, m.data(), v.rows);
    return m;
  }
};

TEST(DenseOps, GramGemmAndInplaceMatchEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = 1037, p = 7, q = 5;
  f.ops->reserve(n, p, p * q);
  Mat X = random_mat(n, p, 3), Y = random_mat(n, q, 4), C = random_mat(p, q, 5);
  auto x = f.put(X), y = f.put(Y);
  Mat G(p, q);
  f.ops->gram(x.view(), y.view(), G.data(), p);
  EXPECT_LT((G - X.transpose() * Y).cwiseAbs().maxCoeff(), 1e-11);
  // Y = 2·X·C − 0.5·Y on a column sub-view with leading dimension n.
  f.ops->gemm(2.0, x.view(), C.data(), p, -0.5, y.view());
  Mat Yr = 2.0 * X * C - 0.5 * Y;
  EXPECT_LT((f.get(y.view()) - Yr).cwiseAbs().maxCoeff(), 1e-12);
  // X[:, 0:3] = X·M (M p × 3).
  Mat M = random_mat(p, 3, 6);
  f.ops->multiply_inplace(x.view(), M.data(), p, 3);
  Mat Xg = f.get(x.view());
  EXPECT_LT((Xg.leftCols(3) - X * M).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ((Xg.rightCols(p - 3) - X.rightCols(p - 3)).cwiseAbs().maxCoeff(), 0.0);
}

TEST(DenseOps, ColumnOperationsMatchEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = 2011, c = 6;
  Mat X = random_mat(n, c, 11), Y = random_mat(n, c, 12), D = random_mat(n, 1, 13);
  auto x = f.put(X), y = f.put(Y), d = f.put(D), z = f.ops->allocate(n, c);
  std::vector<double> nr(c), dt(c);
  f.ops->column_norms(x.view(), nr.data());
  f.ops->column_dots(x.view(), y.view(), dt.data());
  for (std::int64_t j = 0; j < c; ++j) {
    EXPECT_NEAR(nr[j], X.col(j).norm(), 1e-12 * X.col(j).norm());
    EXPECT_NEAR(dt[j], X.col(j).dot(Y.col(j)), 1e-11);
  }
  std::vector<std::int64_t> idx = {4, 0, 5};
  f.ops->gather_columns(x.view(), idx.data(), 3, z.columns(0, 3));
  Mat Z = f.get(z.columns(0, 3));
  for (int j = 0; j < 3; ++j) EXPECT_EQ((Z.col(j) - X.col(idx[j])).norm(), 0.0);
  std::vector<double> a = {1.5, -2, 0.25, 3, 0, -1}, b = {0.5, 1, 0, -1, 2, 1};
  f.ops->axpby_columns(a.data(), x.view(), b.data(), y.view());
  Mat Yg = f.get(y.view());
  for (std::int64_t j = 0; j < c; ++j)
    EXPECT_LT((Yg.col(j) - (a[j] * X.col(j) + b[j] * Y.col(j))).cwiseAbs().maxCoeff(), 1e-14);
  f.ops->scale_rows(d.data(), x.view(), z.view());
  EXPECT_LT((f.get(z.view()) - D.asDiagonal() * X).cwiseAbs().maxCoeff(), 1e-15);
  f.ops->copy(x.columns(1, 2), z.columns(3, 2));
  EXPECT_EQ((f.get(z.columns(3, 2)) - X.middleCols(1, 2)).norm(), 0.0);
  // Random fill: identical to the host generator, not constant.
  f.ops->fill_random(z.view(), 99);
  Mat R = f.get(z.view());
  EXPECT_EQ((R - random_mat(n, c, 99)).norm(), 0.0);
  EXPECT_GT(R.maxCoeff() - R.minCoeff(), 1.5);
  f.ops->fill_zero(z.columns(2, 3));
  EXPECT_EQ(f.get(z.columns(2, 3)).norm(), 0.0);
}

TEST(Orthonormalize, WellConditionedUsesCholeskyQr) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = 801, p = 9;
  f.ops->reserve(n, p, p * p);
  Mat W = random_mat(n, p, 21);
  auto w = f.put(W);
  OrthoWorkspace ws;
  auto o = orthonormalize(*f.ops, w.view(), MvView<double>{}, ws);
  EXPECT_EQ(o.rank, p);
  EXPECT_EQ(o.branch, OrthoBranch::cholqr2);
  Mat Q = f.get(w.view());
  EXPECT_LT((Q.transpose() * Q - Mat::Identity(p, p)).cwiseAbs().maxCoeff(), 1e-14);
  // Same span: W = Q·(QᵀW).
  EXPECT_LT((W - Q * (Q.transpose() * W)).cwiseAbs().maxCoeff(), 1e-12);
  // T maps the input onto the output.
  Eigen::Map<Mat> T(ws.t.data(), p, o.rank);
  EXPECT_LT((W * T - Q).cwiseAbs().maxCoeff(), 1e-10);
}

TEST(Orthonormalize, RankDeficientBlockFallsBackToSvqbAndDrops) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = 613, p = 8;
  f.ops->reserve(n, p, p * p);
  Mat B = random_mat(n, 5, 31);
  Mat W(n, p);
  W.leftCols(5) = B;
  W.col(5) = B.col(0) + B.col(3);                           // exactly dependent
  W.col(6) = 2.0 * B.col(1) + 1e-14 * random_mat(n, 1, 32);  // dependent up to 1e-14
  W.col(7) = B.col(2) - 1e-3 * B.col(4) + 1e-9 * random_mat(n, 1, 33);  // nearly dependent
  auto w = f.put(W);
  OrthoWorkspace ws;
  auto o = orthonormalize(*f.ops, w.view(), MvView<double>{}, ws);
  EXPECT_EQ(o.branch, OrthoBranch::svqb_drop);
  EXPECT_GE(o.rank, 5);
  EXPECT_LE(o.rank, 6);
  Mat Q = f.get(w.columns(0, o.rank));
  EXPECT_LT((Q.transpose() * Q - Mat::Identity(o.rank, o.rank)).cwiseAbs().maxCoeff(), 1e-12);
  // The kept columns still span the five independent directions.
  EXPECT_LT((B - Q * (Q.transpose() * B)).cwiseAbs().maxCoeff(), 1e-9);
}

TEST(Orthonormalize, BInnerProduct) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  auto lap = laplacian(37, 23);
  const std::int64_t n = lap.nrows, p = 6;
  auto op = make_operator(lap);
  f.ops->reserve(n, p, p * p);
  auto w = f.ops->allocate(n, p), bw = f.ops->allocate(n, p);
  f.ops->fill_random(w.view(), 5);
  op->apply(w.view(), bw.view());
  OrthoWorkspace ws;
  auto o = orthonormalize(*f.ops, w.view(), bw.view(), ws);
  ASSERT_EQ(o.rank, p);
  std::vector<double> q(n * p);
  f.ops->to_host(w.view(), q.data(), n);
  EXPECT_LT(orthogonality_error(&lap, q, n, p), 1e-12);
}

}  // namespace
}  // namespace tcsolve::test
