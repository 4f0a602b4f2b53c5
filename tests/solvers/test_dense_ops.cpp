// DenseBlockOps contract (on the backend under test) against Eigen on the host, and the
// orthonormalization branches.
#include <limits>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <array>
#include <cmath>

#include "solvers/dense_ops.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"
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

// The GEMM-shaped products (both sides wider than the skinny GEMV path's 3 columns), which run on
// OpenBLAS where the build found it: column sub-views of wider blocks (leading dimension above
// the rows), padded small matrices, every beta case, and outputs poisoned with NaN where beta = 0
// must overwrite them. Sizes not multiples of any kernel's tile.
void wide_products_case(std::int64_t n, std::int64_t p, std::int64_t q) {
  Fixture f;
  const std::int64_t ldg = 11;
  const double tol = 1e-11 * static_cast<double>(n) / 1291.0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  f.ops->reserve(n, p + 4, ldg * (q + 2));
  Mat X = random_mat(n, p + 2, 31), Y = random_mat(n, q + 3, 32), C = random_mat(ldg, q, 33);
  auto x = f.put(X), y = f.put(Y);
  auto xs = x.columns(1, p);  // columns 1..p of an n × (p + 2) block
  auto ys = y.columns(2, q);
  const Mat Xs = X.middleCols(1, p), Ys = Y.middleCols(2, q);
  // gram into a padded (ldg) buffer full of NaN.
  std::vector<double> g(static_cast<std::size_t>(ldg * q), nan);
  f.ops->gram(xs, ys, g.data(), ldg);
  const Mat G = Eigen::Map<Mat, 0, Eigen::OuterStride<>>(g.data(), p, q, Eigen::OuterStride<>(ldg));
  EXPECT_LT((G - Xs.transpose() * Ys).cwiseAbs().maxCoeff(), tol);
  EXPECT_TRUE(std::isnan(g[p]));  // the padding rows are not written
  // gemm, beta = 0 on a poisoned output, then beta = 1 and beta = −0.25 (C read with ld ldg).
  const Mat Cp = C.topRows(p);
  auto yp = f.ops->allocate(n, q + 1);
  Mat P = Mat::Constant(n, q + 1, nan);
  f.ops->from_host(P.data(), n, yp.view());
  f.ops->gemm(1.5, xs, C.data(), ldg, 0.0, yp.columns(1, q));
  Mat Yr = 1.5 * Xs * Cp;
  Mat got = f.get(yp.view());
  EXPECT_LT((got.middleCols(1, q) - Yr).cwiseAbs().maxCoeff(), tol);
  EXPECT_TRUE(std::isnan(got(0, 0)));  // column 0 untouched
  f.ops->gemm(-1.0, xs, C.data(), ldg, 1.0, ys);
  Mat Y1 = Ys - Xs * Cp;
  EXPECT_LT((f.get(ys) - Y1).cwiseAbs().maxCoeff(), tol);
  f.ops->gemm(2.0, xs, C.data(), ldg, -0.25, ys);
  Mat Y2 = 2.0 * Xs * Cp - 0.25 * Y1;
  EXPECT_LT((f.get(ys) - Y2).cwiseAbs().maxCoeff(), tol);
  EXPECT_EQ((f.get(y.columns(0, 2)) - Y.leftCols(2)).cwiseAbs().maxCoeff(), 0.0);
  // multiply_inplace with r = 5 > 3 (the restart's rewrite) on the sub-view: xs[:, 0:5] = xs·M
  // (r = 1 where p < 5).
  const std::int64_t rr = p >= 5 ? 5 : 1;
  Mat M = random_mat(ldg, rr, 34);
  f.ops->multiply_inplace(xs, M.data(), ldg, rr);
  Mat Xg = f.get(x.view());
  EXPECT_LT((Xg.middleCols(1, rr) - Xs * M.topRows(p)).cwiseAbs().maxCoeff(), tol);
  EXPECT_EQ((Xg.middleCols(1 + rr, p - rr) - X.middleCols(1 + rr, p - rr)).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ((Xg.col(0) - X.col(0)).cwiseAbs().maxCoeff(), 0.0);
  // gram_into: beta = 0 over NaN, then beta = 1 accumulating, on a device-resident small block.
  auto gs = f.ops->allocate(p, q);
  Mat Pg = Mat::Constant(p, q, nan);
  f.ops->from_host(Pg.data(), p, gs.view());
  const Mat X2 = Xg.middleCols(1, p);
  f.ops->gram_into(0.5, x.columns(1, p), ys, 0.0, gs.view());
  f.ops->gram_into(1.0, x.columns(1, p), ys, 1.0, gs.view());
  EXPECT_LT((f.get(gs.view()) - 1.5 * X2.transpose() * Y2).cwiseAbs().maxCoeff(), 10 * tol);
}

// The same at 8192 and 12293 rows (the CPU's threaded row parts: cpu_dense::kPartRows) and with
// a skinny side (1 or 2 columns: the GEMV paths below the parts' size).
TEST(DenseOps, WideProductsOnSubViewsMatchEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (auto [n, p, q] : {std::array<std::int64_t, 3>{1291, 9, 6}, {8192, 9, 6}, {12293, 9, 6}, {12293, 9, 1},
                         {12293, 2, 6}, {1291, 2, 6}}) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", p = " + std::to_string(p) + ", q = " + std::to_string(q));
    wide_products_case(n, p, q);
  }
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

// ==== backend-resident small matrices (the second half of DenseBlockOps) ======================
// Each test runs the backend under test (CPU: Eigen; GPU binary: CUDA) on random data with odd
// sizes and compares with Eigen on the host; sizes straddle the fused-kernel limits (n ≥ 4096
// and ≤ 64 columns: fp64 tensor-core kernels; beyond: cuBLAS composites).

Mat symmetric_random(std::int64_t m, std::uint64_t seed) {
  Mat a = random_mat(m, m, seed);
  return 0.5 * (a + a.transpose());
}

TEST(DenseOpsDevice, GramIntoAndGemmIntoMatchEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  // Even n: the double2 loads (16 rows a step; 5006 and 4102 end in a partial step); odd n, or
  // a view one row in (misaligned): the 8-byte loads.
  for (auto [n, p, q] : {std::array<std::int64_t, 3>{5003, 7, 13}, {5003, 33, 64}, {4099, 64, 29},
                         {8191, 1, 1}, {5003, 70, 9}, {1001, 12, 12}, {5006, 7, 13},
                         {5006, 33, 64}, {4102, 32, 32}, {8200, 1, 1}, {4102, 64, 29}}) {
    f.ops->reserve(n, std::max(p, q), p * q);
    Mat X = random_mat(n, p, 100 + p), Y = random_mat(n, q, 200 + q), G0 = random_mat(p, q, 7);
    auto x = f.put(X), y = f.put(Y), g = f.put(G0);
    f.ops->gram_into(1.5, x.view(), y.view(), -0.5, g.view());
    Mat ref = 1.5 * X.transpose() * Y - 0.5 * G0;
    EXPECT_LT((f.get(g.view()) - ref).cwiseAbs().maxCoeff(), 1e-10 * n) << n << " " << p << " " << q;
    for (std::int64_t r0 : {1, 2}) {  // rows r0..n-1: misaligned (1), aligned with a tail (2)
      const std::int64_t m = n - r0;
      MvView<const double> xs{x.data() + r0, m, p, x.ld(), f.ops->space()};
      MvView<const double> ys{y.data() + r0, m, q, y.ld(), f.ops->space()};
      auto gs = f.put(Mat::Constant(p, q, std::nan("")));
      f.ops->gram_into(1.0, xs, ys, 0.0, gs.view());
      const Mat sub = X.bottomRows(m).transpose() * Y.bottomRows(m);
      EXPECT_LT((f.get(gs.view()) - sub).cwiseAbs().maxCoeff(), 1e-10 * n) << n << " rows from " << r0;
    }
    // β = 0 must not read G (NaN there).
    Mat nan = Mat::Constant(p, q, std::nan(""));
    auto g2 = f.put(nan);
    f.ops->gram_into(1.0, x.view(), y.view(), 0.0, g2.view());
    EXPECT_LT((f.get(g2.view()) - X.transpose() * Y).cwiseAbs().maxCoeff(), 1e-10 * n);
    // Y = 2·X·C − Y with C a backend matrix.
    Mat C = random_mat(p, q, 300);
    auto c = f.put(C);
    f.ops->gemm_into(2.0, x.view(), c.view(), -1.0, y.view());
    EXPECT_LT((f.get(y.view()) - (2.0 * X * C - Y)).cwiseAbs().maxCoeff(), 1e-12 * p);
  }
}

TEST(DenseOpsDevice, AxpbypczFlatAndStrided) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = 3001, c = 5;
  Mat X = random_mat(n, c, 1), Y = random_mat(n, c, 2), Z = random_mat(n, c, 3);
  auto x = f.put(X), y = f.put(Y), z = f.put(Z);
  f.ops->chebyshev().axpbypcz(0.5, x.view(), -2.0, y.view(), 0.25, z.view());
  EXPECT_LT((f.get(z.view()) - (0.5 * X - 2.0 * Y + 0.25 * Z)).cwiseAbs().maxCoeff(), 1e-14);
  // c = 0 does not read Z (NaN there); a column sub-range (still flat) and an odd count.
  Mat nan = Mat::Constant(n, c, std::nan(""));
  auto zn = f.put(nan);
  f.ops->chebyshev().axpbypcz(1.0, x.columns(1, 3), 3.0, y.columns(1, 3), 0.0, zn.columns(1, 3));
  Mat got = f.get(zn.columns(1, 3));
  EXPECT_LT((got - (X.middleCols(1, 3) + 3.0 * Y.middleCols(1, 3))).cwiseAbs().maxCoeff(), 1e-14);
  // Strided views (ld ≠ rows): rows 0:1000 of every column.
  MvView<const double> xs{x.data(), 1000, c, n, x.space()};
  MvView<const double> ys{y.data(), 1000, c, n, y.space()};
  MvView<double> zs{z.data(), 1000, c, n, z.space()};
  Mat zbefore = f.get(z.view());
  f.ops->chebyshev().axpbypcz(1.0, xs, 1.0, ys, -1.0, zs);
  Mat zafter = f.get(z.view());
  EXPECT_LT((zafter.topRows(1000) - (X.topRows(1000) + Y.topRows(1000) - zbefore.topRows(1000)))
                .cwiseAbs().maxCoeff(), 1e-14);
  EXPECT_EQ((zafter.bottomRows(n - 1000) - zbefore.bottomRows(n - 1000)).norm(), 0.0);
}

TEST(DenseOpsDevice, ResidualNormsDotsAndNormalize) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = 2777, c = 9;
  Mat X = random_mat(n, c, 4), AX = random_mat(n, c, 5), T = random_mat(c, 1, 6);
  auto x = f.put(X), ax = f.put(AX), th = f.put(T), out = f.ops->allocate(c, 1);
  f.ops->chebyshev().residual_norms_into(ax.view(), x.view(), th.view(), -1.0, out.view());
  Mat rn = f.get(out.view());
  for (std::int64_t j = 0; j < c; ++j)
    EXPECT_NEAR(rn(j), (AX.col(j) + T(j) * X.col(j)).norm(), 1e-12 * rn(j));
  f.ops->column_dots_into(x.view(), ax.view(), out.view());
  Mat dt = f.get(out.view());
  for (std::int64_t j = 0; j < c; ++j) EXPECT_NEAR(dt(j), X.col(j).dot(AX.col(j)), 1e-11);
  Mat Z = X;
  Z.col(3).setZero();
  auto z = f.put(Z);
  f.ops->normalize_columns(z.view(), out.view());
  Mat zn = f.get(z.view()), nr = f.get(out.view());
  for (std::int64_t j = 0; j < c; ++j) {
    EXPECT_NEAR(nr(j), Z.col(j).norm(), 1e-12 * (1 + nr(j)));
    EXPECT_NEAR(zn.col(j).norm(), j == 3 ? 0.0 : 1.0, 1e-14);
  }
}

// Column norms, dots and residual norms are the same to the last bit on every call (the blocks'
// partial sums are added in a fixed order, not by atomics): block CG's true residuals decide at
// tol's edge whether to run another cycle, and a solve repeated must take the same iterations.
TEST(DenseOpsDevice, ColumnReductionsAreBitwiseReproducible) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = kBackend == Backend::cuda ? 1000003 : 100003, c = 5;
  Mat X = random_mat(n, c, 14), AX = random_mat(n, c, 15), T = random_mat(c, 1, 16);
  auto x = f.put(X), ax = f.put(AX), th = f.put(T), out = f.ops->allocate(c, 1);
  std::vector<double> first(c), now(c), rfirst, rnow;
  f.ops->column_norms(x.view(), first.data());
  f.ops->chebyshev().residual_sq_norms_into(ax.view(), x.view(), th.view(), 1.0, out.view());
  rfirst.resize(c), rnow.resize(c);
  f.ops->to_host(out.view(), rfirst.data(), c);
  for (std::int64_t j = 0; j < c; ++j) EXPECT_NEAR(first[j], X.col(j).norm(), 1e-12 * first[j]);
  for (int rep = 0; rep < 20; ++rep) {
    f.ops->column_norms(x.view(), now.data());
    f.ops->chebyshev().residual_sq_norms_into(ax.view(), x.view(), th.view(), 1.0, out.view());
    f.ops->to_host(out.view(), rnow.data(), c);
    for (std::int64_t j = 0; j < c; ++j) {
      EXPECT_EQ(now[j], first[j]) << "column " << j << ", call " << rep;
      EXPECT_EQ(rnow[j], rfirst[j]) << "column " << j << ", call " << rep;
    }
  }
}

TEST(DenseOpsDevice, EighSmallMatchesEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  // orders on both sides of the CUDA backend's Jacobi (syevj, up to 64) and syevd paths
  for (std::int64_t m : {1, 5, 31, 33, 48, 64, 65, 100, 257}) {
    f.ops->small().reserve_small(m);
    Mat A = symmetric_random(m, 40 + m);
    // A repeated eigenvalue: A ← Q·diag(λ with a triple)·Qᵀ.
    Eigen::SelfAdjointEigenSolver<Mat> es0(A);
    Eigen::VectorXd lam = es0.eigenvalues();
    if (m >= 5) lam(1) = lam(2) = lam(3);
    A = es0.eigenvectors() * lam.asDiagonal() * es0.eigenvectors().transpose();
    A = 0.5 * (A + A.transpose()).eval();
    auto a = f.put(A), w = f.ops->allocate(m, 1);
    f.ops->small().eigh_small(a.view(), w.view());
    Mat V = f.get(a.view()), W = f.get(w.view());
    Eigen::SelfAdjointEigenSolver<Mat> es(A);
    for (std::int64_t i = 0; i < m; ++i) EXPECT_NEAR(W(i), es.eigenvalues()(i), 1e-12 * m);
    EXPECT_LT((A * V - V * W.col(0).asDiagonal()).cwiseAbs().maxCoeff(), 1e-12 * m);
    EXPECT_LT((V.transpose() * V - Mat::Identity(m, m)).cwiseAbs().maxCoeff(), 1e-12 * m);
  }
}

// Two BCGS-PIP passes on Y (n × w, random plus a part in span(L)) against an orthonormal L
// (n × l): Q orthonormal, ⊥ L, with the span of the projected Y.
void pip_check_orthonormalizes(Fixture& f, std::int64_t l, std::int64_t w) {
  const std::int64_t n = 3001;
  SCOPED_TRACE("l = " + std::to_string(l) + ", w = " + std::to_string(w));
  f.ops->reserve(n, l + w, (l + w) * w);
  f.ops->small().reserve_small(l + w);
  Mat L = l > 0 ? Mat(Eigen::HouseholderQR<Mat>(random_mat(n, l, 150 + l)).householderQ() * Mat::Identity(n, l))
                : Mat(n, 0);
  Mat Y = random_mat(n, w, 151 + w);
  if (l > 0) Y += L * random_mat(l, w, 152);
  Mat B(n, l + w);
  B.leftCols(l) = L;
  B.rightCols(w) = Y;
  auto b = f.put(B), out = f.ops->allocate(n, w);
  auto g = f.ops->allocate(l + w, w), m = f.ops->allocate(l + w, w), st = f.ops->allocate(2, 1);
  for (int pass = 0; pass < 2; ++pass) {
    f.ops->gram_into(1.0, b.view(), b.columns(l, w), 0.0, g.view());
    f.ops->small().pip_factor(g.view(), l, m.view(), st.view());
    f.ops->gemm_into(1.0, b.view(), m.view(), 0.0, out.view());
    f.ops->copy(out.view(), b.columns(l, w));
    EXPECT_EQ(f.get(st.view())(0), 0.0) << "pass " << pass;
  }
  Mat Q = f.get(b.columns(l, w));
  EXPECT_LT((Q.transpose() * Q - Mat::Identity(w, w)).cwiseAbs().maxCoeff(), 1e-13);
  if (l > 0) EXPECT_LT((L.transpose() * Q).cwiseAbs().maxCoeff(), 1e-13);
  Mat Yp = l > 0 ? Mat(Y - L * (L.transpose() * Y)) : Y;
  EXPECT_LT((Yp - Q * (Q.transpose() * Yp)).cwiseAbs().maxCoeff(), 1e-9 * Yp.cwiseAbs().maxCoeff());
}

TEST(DenseOpsDevice, PipFactorOrthonormalizesAgainstALockedBlock) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  // Widths on both sides of the GPU's own small kernels (w ≤ 64) and cuSOLVER/cuBLAS above.
  for (auto [l, w] : {std::pair<std::int64_t, std::int64_t>{0, 64}, {200, 64}, {3, 65}, {1, 1}})
    pip_check_orthonormalizes(f, l, w);
  const std::int64_t n = 4507, l = 11, w = 13;
  f.ops->reserve(n, l + w, (l + w) * w);
  f.ops->small().reserve_small(l + w);
  Eigen::HouseholderQR<Mat> qr(random_mat(n, l, 50));
  Mat L = qr.householderQ() * Mat::Identity(n, l);
  Mat Y = random_mat(n, w, 51) + L * random_mat(l, w, 52);
  Mat B(n, l + w);
  B << L, Y;
  auto b = f.put(B), out = f.ops->allocate(n, w);
  auto g = f.ops->allocate(l + w, w), m = f.ops->allocate(l + w, w), st = f.ops->allocate(2, 1);
  // Two passes, as the Chebyshev solver runs them.
  for (int pass = 0; pass < 2; ++pass) {
    f.ops->gram_into(1.0, b.view(), b.columns(l, w), 0.0, g.view());
    f.ops->small().pip_factor(g.view(), l, m.view(), st.view());
    f.ops->gemm_into(1.0, b.view(), m.view(), 0.0, out.view());
    f.ops->copy(out.view(), b.columns(l, w));
    Mat s2 = f.get(st.view());
    EXPECT_EQ(s2(0), 0.0);
    EXPECT_GT(s2(1), pass == 0 ? 1e-6 : 0.5);
  }
  Mat Q = f.get(b.columns(l, w));
  EXPECT_LT((Q.transpose() * Q - Mat::Identity(w, w)).cwiseAbs().maxCoeff(), 1e-14);
  EXPECT_LT((L.transpose() * Q).cwiseAbs().maxCoeff(), 1e-14);
  // Same span as the projected Y.
  Mat Yp = Y - L * (L.transpose() * Y);
  EXPECT_LT((Yp - Q * (Q.transpose() * Yp)).cwiseAbs().maxCoeff(), 1e-10);
  // A column almost inside span(L): the Pythagorean Gram loses its digits → projection only.
  Mat Y2 = random_mat(n, w, 53);
  Y2.col(4) = L.col(2) * 1e6 + 1e-6 * random_mat(n, 1, 54);
  Mat B2(n, l + w);
  B2 << L, Y2;
  auto b2 = f.put(B2);
  f.ops->gram_into(1.0, b2.view(), b2.columns(l, w), 0.0, g.view());
  f.ops->small().pip_factor(g.view(), l, m.view(), st.view());
  Mat s3 = f.get(st.view()), M = f.get(m.view()), G = f.get(g.view());
  EXPECT_EQ(s3(0), 1.0);
  EXPECT_EQ(s3(1), 0.0);
  EXPECT_LT((M.topRows(l) + G.topRows(l)).cwiseAbs().maxCoeff(), 1e-300);
  EXPECT_EQ((M.bottomRows(w) - Mat::Identity(w, w)).norm(), 0.0);
}

TEST(DenseOpsDevice, SpdFactorAndSolve) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  for (std::int64_t r : {1, 7, 32, 45, 64, 65}) {  // (the GPU's own kernels up to 64)
    f.ops->small().reserve_small(r);
    Mat W = random_mat(3 * r + 5, r, 60 + r);
    Mat G = W.transpose() * W;
    // Badly scaled but well conditioned after diagonal scaling.
    Eigen::VectorXd sc = Eigen::VectorXd::LinSpaced(r, 0.0, 6.0).unaryExpr([](double e) { return std::pow(10.0, e); });
    G = sc.asDiagonal() * G * sc.asDiagonal();
    Mat Bm = random_mat(r, 5, 61);
    auto g = f.put(G), fac = f.ops->allocate(r, r + 1), st = f.ops->allocate(1, 1);
    auto b = f.put(Bm), out = f.ops->allocate(r, 5);
    f.ops->small().spd_factor(g.view(), fac.view(), st.view(), 1e-10);
    f.ops->small().spd_solve(fac.view(), b.view(), -2.0, st.view(), out.view());
    EXPECT_EQ(f.get(st.view())(0), 0.0);
    // Errors measured in the scaled variables (x = D·y with y of unit scale).
    auto err = [&](const Mat& x, const Mat& ref) {
      return (sc.asDiagonal() * (x - ref)).norm() / (sc.asDiagonal() * ref).norm();
    };
    Mat ref = -2.0 * G.ldlt().solve(Bm);
    EXPECT_LT(err(f.get(out.view()), ref), 1e-10);
    // In place (out aliases B).
    f.ops->small().spd_solve(fac.view(), b.view(), 1.0, st.view(), b.view());
    EXPECT_LT(err(f.get(b.view()), -0.5 * ref), 1e-10);
  }
  // Rank deficient (status 1: positive definite in rounding, tiny pivot: still solved) and
  // indefinite (status 2: the solve writes zeros).
  const std::int64_t r = 9;
  Mat W = random_mat(20, r, 70);
  W.col(8) = W.col(1) + 1e-6 * random_mat(20, 1, 71);
  Mat G1 = W.transpose() * W;
  Mat G2 = symmetric_random(r, 72);
  for (auto [G, expect] : {std::pair<Mat, double>{G1, 1.0}, {G2, 2.0}}) {
    auto g = f.put(G), fac = f.ops->allocate(r, r + 1), st = f.ops->allocate(1, 1);
    auto b = f.put(random_mat(r, 3, 73)), out = f.put(random_mat(r, 3, 74));
    f.ops->small().spd_factor(g.view(), fac.view(), st.view(), 1e-10);
    f.ops->small().spd_solve(fac.view(), b.view(), 1.0, st.view(), out.view());
    EXPECT_EQ(f.get(st.view())(0), expect);
    if (expect == 2.0) EXPECT_EQ(f.get(out.view()).norm(), 0.0);
    else EXPECT_TRUE(f.get(out.view()).allFinite());
  }
}

TEST(DenseOpsDevice, GemmIntoMatchesEigen) {
  // Y = α·X·C + β·Y on both sides of the GPU's own tall-skinny kernel (p, q ≤ 32) and cuBLAS
  // above it; rows not multiples of the 8-row strips; views inside
  // wider blocks (ld > rows); β = 0 must not read Y (poisoned with NaN).
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto [n, p, q] : {std::array<std::int64_t, 3>{5003, 1, 1}, {5003, 7, 5}, {4099, 32, 32}, {4099, 32, 33},
                         {4099, 33, 64}, {4099, 64, 64}, {1001, 65, 10}, {1001, 10, 65}, {13, 24, 24}}) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", p = " + std::to_string(p) + ", q = " + std::to_string(q));
    Mat X = random_mat(n + 3, p + 2, 90 + p), C = random_mat(p, q, 91 + q), Y = random_mat(n, q, 92);
    auto xw = f.put(X), c = f.put(C);
    MvView<const double> x{xw.data() + 3 + xw.ld(), n, p, xw.ld(), f.ops->space()};  // rows 3.., cols 1..
    const Mat Xv = X.block(3, 1, n, p);
    for (double beta : {0.0, 1.3}) {
      Mat Y0 = beta == 0.0 ? Mat::Constant(n + 1, q + 1, nan) : Mat(random_mat(n + 1, q + 1, 93));
      auto yw = f.put(Y0);
      MvView<double> y{yw.data() + 1, n, q, yw.ld(), f.ops->space()};  // rows 1..n, ld n + 1
      f.ops->gemm_into(-0.7, x, c.view(), beta, y);
      const Mat got = f.get(yw.view());
      Mat ref = -0.7 * Xv * C;
      if (beta != 0.0) ref += beta * Y0.block(1, 0, n, q);
      EXPECT_LT((got.block(1, 0, n, q) - ref).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + p)) << "beta " << beta;
      // Outside the view: untouched (row 0, column q).
      EXPECT_TRUE(got.row(0).array().isNaN().all() || beta != 0.0);
      if (beta != 0.0) EXPECT_EQ((got.row(0) - Y0.row(0)).cwiseAbs().maxCoeff(), 0.0);
    }
  }
  // Whole blocks with even n (aligned: the row-pair strips), a partial last step, NaN-poisoned Y
  // for β = 0.
  for (auto [n, p, q] : {std::array<std::int64_t, 3>{4102, 32, 32}, {5006, 7, 5}, {4102, 1, 1}, {18, 9, 3}}) {
    SCOPED_TRACE("aligned n = " + std::to_string(n) + ", p = " + std::to_string(p) + ", q = " + std::to_string(q));
    Mat X = random_mat(n, p, 97), C = random_mat(p, q, 98), Y0 = random_mat(n, q, 99);
    auto x = f.put(X), c = f.put(C), y = f.put(Y0), y2 = f.put(Mat::Constant(n, q, nan));
    f.ops->gemm_into(0.6, x.view(), c.view(), -1.1, y.view());
    EXPECT_LT((f.get(y.view()) - (0.6 * X * C - 1.1 * Y0)).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + p));
    f.ops->gemm_into(1.0, x.view(), c.view(), 0.0, y2.view());
    EXPECT_LT((f.get(y2.view()) - X * C).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + p));
  }
  // Past 2²¹ rows (launch limits): one column block of 8.
  const std::int64_t n = (std::int64_t{1} << 21) + 37;
  Mat X = random_mat(n, 8, 95), C = random_mat(8, 8, 96);
  auto x = f.put(X), c = f.put(C), y = f.ops->allocate(n, 8);
  f.ops->gemm_into(1.0, x.view(), c.view(), 0.0, y.view());
  EXPECT_LT((f.get(y.view()) - X * C).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(DenseOpsDevice, BlockCgPassesMatchEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  // Odd n (odd leading dimensions): 8-row strips; even n: the row-pair strips (double2), with a
  // partial last step (4102, 5006, 6010 are not multiples of 16); past 2²¹ rows.
  for (auto [n, q, r] : {std::array<std::int64_t, 3>{5003, 7, 5}, {5003, 32, 32}, {6007, 40, 33},
                         {4099, 64, 64}, {1001, 9, 9}, {4099, 70, 66}, {4099, 12, 1},
                         {4102, 7, 5}, {5006, 32, 32}, {6010, 40, 33}, {4102, 12, 1},
                         {12289, 32, 32}, {8197, 7, 5}, {20001, 40, 33},
                         {(std::int64_t{1} << 21) + 38, 8, 8}}) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", q = " + std::to_string(q) + ", r = " + std::to_string(r));
    f.ops->reserve(n, std::max(q, r), 2 * q * q);
    Mat Q = random_mat(n, q, 80), R = random_mat(n, r, 81), Al = random_mat(q, r, 82);
    auto qd = f.put(Q), rd = f.put(R), al = f.put(Al), g = f.ops->allocate(q + r, r);
    f.ops->cg().cg_residual_update(qd.view(), al.view(), rd.view(), g.view());
    Mat Rn = R - Q * Al;
    EXPECT_LT((f.get(rd.view()) - Rn).cwiseAbs().maxCoeff(), 1e-12 * q) << n << " " << q << " " << r;
    Mat Gref(q + r, r);
    Gref << Q.transpose() * Rn, Rn.transpose() * Rn;
    EXPECT_LT((f.get(g.view()) - Gref).cwiseAbs().maxCoeff(), 1e-10 * n) << n << " " << q << " " << r;
    // Direction pass in place: X += P·α, P(:, 0:r) = Z + P·β.
    Mat P = random_mat(n, q, 83), Z = random_mat(n, r, 84), X = random_mat(n, r, 85);
    Mat Be = random_mat(q, r, 86);
    auto pd = f.put(P), zd = f.put(Z), xd = f.put(X), be = f.put(Be);
    f.ops->cg().cg_direction_update(al.view(), be.view(), zd.view(), pd.view(), xd.view());
    EXPECT_LT((f.get(xd.view()) - (X + P * Al)).cwiseAbs().maxCoeff(), 1e-12 * q);
    Mat Pg = f.get(pd.view());
    EXPECT_LT((Pg.leftCols(r) - (Z + P * Be)).cwiseAbs().maxCoeff(), 1e-12 * q);
    EXPECT_EQ((Pg.rightCols(q - r) - P.rightCols(q - r)).norm(), 0.0);
  }
}

TEST(DenseOpsDevice, JacobiResidualPassMatchesEigen) {
  // R −= Q·α, Z = diag(d)·R, G = [[QᵀZ]; [RᵀZ]; ‖R_j‖²] on both sides of the fused kernel's
  // limits (n ≥ 4096, ≤ 64 columns; 32: the 4 × 4-tile instance), rows not multiples of the
  // 32-row tiles (even n: the 64-row tiles of row pairs), Z and G poisoned with NaN, and past
  // 2²¹ rows.
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto [n, q, r] : {std::array<std::int64_t, 3>{5003, 7, 5}, {5003, 32, 32}, {6007, 40, 33},
                         {4099, 64, 64}, {1001, 9, 9}, {4099, 70, 66}, {4099, 0, 12},
                         {5006, 32, 32}, {4102, 7, 5}, {4102, 0, 12}, {6010, 40, 33},
                         {12289, 32, 32}, {8197, 7, 5}, {12290, 0, 12},
                         {(std::int64_t{1} << 21) + 37, 8, 8}, {(std::int64_t{1} << 21) + 38, 8, 8}}) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", q = " + std::to_string(q) + ", r = " + std::to_string(r));
    f.ops->reserve(n, std::max(q, r), 2 * q * q + 1);
    Mat Q = random_mat(n, q, 180), R = random_mat(n, r, 181), Al = random_mat(q, r, 182);
    Eigen::VectorXd d = (random_mat(n, 1, 183).array().abs() + 0.1).matrix();
    auto qd = f.put(Q), rd = f.put(R), al = f.put(Al), dd = f.put(d);
    auto zd = f.put(Mat::Constant(n, r, nan)), g = f.put(Mat::Constant(q + r + 1, r, nan));
    f.ops->cg().cg_residual_update_jacobi(qd.view(), al.view(), dd.data(), rd.view(), zd.view(), g.view());
    const Mat Rn = R - Q * Al;
    const Mat Zn = d.asDiagonal() * Rn;
    EXPECT_LT((f.get(rd.view()) - Rn).cwiseAbs().maxCoeff(), 1e-12 * (1 + q));
    EXPECT_LT((f.get(zd.view()) - Zn).cwiseAbs().maxCoeff(), 1e-12 * (1 + q));
    Mat Gref(q + r + 1, r);
    Gref << Q.transpose() * Zn, Rn.transpose() * Zn, Rn.colwise().squaredNorm();
    const Mat Gg = f.get(g.view());
    ASSERT_TRUE(Gg.allFinite());
    // Relative to the entries' scale (n·q for the sums of n products of O(q) values).
    EXPECT_LT((Gg - Gref).cwiseAbs().maxCoeff(), 1e-12 * n * (1 + q)) << (Gg - Gref).cwiseAbs().maxCoeff();
  }
}

// The fp32-block passes (block CG's fp32 inner iteration) against the reference semantics: the
// fp64 pass on the fp32 blocks' exact fp64 values, its fp32 outputs rounded once. Random data,
// rows not multiples of the tiles, odd leading dimensions (the 8-row strips) and even ones (float2
// row pairs), fp32 outputs and G poisoned with NaN, past 2²¹ rows; the conversions both ways.
TEST(DenseOpsDevice, Fp32BlockPassesMatchTheFp64PassesOnTheRoundedBlocks) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  ASSERT_TRUE(f.ops->cg().fp32_blocks());
  using MatF = Eigen::MatrixXf;
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  auto put32 = [&](const MatF& m) {
    auto v = f.ops->allocate32(m.rows(), m.cols());
    auto d = f.put(m.cast<double>());
    f.ops->cg().convert(d.view(), v.view());
    return v;
  };
  auto get32 = [&](MvView<const float> v) {
    auto d = f.ops->allocate(v.rows, v.cols);
    f.ops->fill_zero(d.view());
    f.ops->cg().add_converted(v, d.view(), 1.0);
    return f.get(d.view());  // exact: fp32 values in fp64
  };
  // |a − b| ≤ one fp32 rounding of b (relative 2⁻²⁴, plus the fp64 sums' own error).
  auto near32 = [](const Mat& a, const Mat& b) {
    return ((a - b).array().abs() <= b.array().abs() * 6.0e-8 + 1e-12).all();
  };
  // (n odd: 8-row strips; n ≡ 2 mod 4: row pairs; n ≡ 0 mod 4: the quad kernels, float4 of 4 rows,
  // with a partial last strip of 32 rows)
  std::vector<std::array<std::int64_t, 3>> shapes = {{5003, 7, 5}, {5003, 32, 32}, {4102, 7, 5},
                                                     {5006, 32, 32}, {1001, 9, 9}, {4102, 0, 12},
                                                     {37, 3, 2}, {4100, 7, 5}, {6004, 32, 32},
                                                     {4100, 0, 12}, {36, 9, 9}, {4100, 17, 3}};
  if (kBackend == Backend::cuda) {
    shapes.push_back({(std::int64_t{1} << 21) + 38, 8, 8});
    shapes.push_back({(std::int64_t{1} << 21) + 36, 8, 8});
  }
  for (auto [n, q, r] : shapes) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", q = " + std::to_string(q) + ", r = " + std::to_string(r));
    f.ops->reserve(n, std::max(q, r), 2 * q * q + 1);
    const MatF Qf = random_mat(n, q, 280).cast<float>(), Rf = random_mat(n, r, 281).cast<float>();
    const Mat Q = Qf.cast<double>(), R = Rf.cast<double>(), Al = random_mat(q, r, 282);
    Eigen::VectorXd d = (random_mat(n, 1, 283).array().abs() + 0.1).matrix();
    auto al = f.put(Al), dd = f.put(d);
    // Residual pass, plain and Jacobi.
    {
      auto qd = put32(Qf), rd = put32(Rf);
      auto g = f.put(Mat::Constant(q + r, r, std::nan("")));
      f.ops->cg().cg_residual_update(qd.view(), al.view(), rd.view(), g.view());
      const Mat Rn = get32(rd.view());
      EXPECT_TRUE(near32(Rn, R - Q * Al));
      Mat Gref(q + r, r);
      Gref << Q.transpose() * Rn, Rn.transpose() * Rn;  // the Gram of R as stored
      const Mat Gg = f.get(g.view());
      ASSERT_TRUE(Gg.allFinite());
      EXPECT_LT((Gg - Gref).cwiseAbs().maxCoeff(), 1e-12 * n * (1 + q));
    }
    {
      auto qd = put32(Qf), rd = put32(Rf), zd = put32(MatF::Constant(n, r, fnan));
      auto g = f.put(Mat::Constant(q + r + 1, r, std::nan("")));
      f.ops->cg().cg_residual_update_jacobi(qd.view(), al.view(), dd.data(), rd.view(), zd.view(), g.view());
      const Mat Rn = get32(rd.view()), Zn = get32(zd.view());
      EXPECT_TRUE(near32(Rn, R - Q * Al));
      EXPECT_TRUE(near32(Zn, d.asDiagonal() * Rn));  // Z from R as stored
      Mat Gref(q + r + 1, r);
      const Mat Zr = d.asDiagonal() * Rn;
      Gref << Q.transpose() * Zr, Rn.transpose() * Zr, Rn.colwise().squaredNorm();
      const Mat Gg = f.get(g.view());
      ASSERT_TRUE(Gg.allFinite());
      EXPECT_LT((Gg - Gref).cwiseAbs().maxCoeff(), 1e-12 * n * (1 + q));
    }
    // Gram of fp32 blocks, fp64 sums.
    if (q > 0) {
      auto qd = put32(Qf), rd = put32(Rf);
      auto g = f.put(Mat::Constant(q, r, std::nan("")));
      f.ops->gram_into(2.0, qd.view(), rd.view(), 0.0, g.view());
      EXPECT_LT((f.get(g.view()) - 2.0 * Q.transpose() * R).cwiseAbs().maxCoeff(), 1e-12 * n);
    }
    // Direction pass in place: X += P·α, P(:, 0:r) = Z + P·β.
    if (q >= r) {
      const MatF Pf = random_mat(n, q, 283).cast<float>(), Zf = random_mat(n, r, 284).cast<float>(),
                 Xf = random_mat(n, r, 285).cast<float>();
      const Mat P = Pf.cast<double>(), Z = Zf.cast<double>(), X = Xf.cast<double>();
      const Mat Be = random_mat(q, r, 286);
      auto pd = put32(Pf), zd = put32(Zf), xd = put32(Xf);
      auto be = f.put(Be);
      f.ops->cg().cg_direction_update(al.view(), be.view(), zd.view(), pd.view(), xd.view());
      EXPECT_TRUE(near32(get32(xd.view()), X + P * Al));
      const Mat Pg = get32(pd.view());
      EXPECT_TRUE(near32(Pg.leftCols(r), Z + P * Be));
      EXPECT_EQ((Pg.rightCols(q - r) - P.rightCols(q - r)).norm(), 0.0);
    }
    // Gather and copy keep the bits; convert rounds to nearest.
    if (r >= 2) {
      auto rd = put32(Rf), gd = put32(MatF::Constant(n, 2, fnan)), cd = put32(MatF::Constant(n, r, fnan));
      const std::int64_t idx[2] = {r - 1, 0};
      f.ops->gather_columns(rd.view(), idx, 2, gd.view());
      f.ops->copy(MvView<const float>(rd.view()), cd.view());
      const Mat G2 = get32(gd.view());
      EXPECT_EQ((G2.col(0) - R.col(r - 1)).norm(), 0.0);
      EXPECT_EQ((G2.col(1) - R.col(0)).norm(), 0.0);
      EXPECT_EQ((get32(cd.view()) - R).norm(), 0.0);
      const Mat D = random_mat(n, r, 287);
      auto dd2 = f.put(D);
      auto c32 = f.ops->allocate32(n, r);
      f.ops->cg().convert(dd2.view(), c32.view());
      EXPECT_EQ((get32(c32.view()) - D.cast<float>().cast<double>()).norm(), 0.0);
    }
  }
}

TEST(DenseOpsDevice, AsyncFetchTicketsAndMarks) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t m = 6;
  std::vector<std::vector<double>> host(7, std::vector<double>(m * m, -1.0));
  std::vector<std::uint64_t> tickets;
  std::vector<Mat> ref;
  auto d = f.ops->allocate(m, m);
  const int m0 = f.ops->queue().mark();
  for (int t = 0; t < 7; ++t) {  // more than the 4 staging slots
    Mat A = random_mat(m, m, 90 + t);
    ref.push_back(A);
    f.ops->from_host(A.data(), m, d.view());
    f.ops->queue().download_deferred(d.view(), host[t].data(), m);
    tickets.push_back(f.ops->queue().fetch_async());
  }
  const int m1 = f.ops->queue().mark();
  for (int t = 0; t < 7; ++t) {
    f.ops->queue().fetch_wait(tickets[t]);
    EXPECT_EQ((Eigen::Map<Mat>(host[t].data(), m, m) - ref[t]).norm(), 0.0) << t;
  }
  f.ops->synchronize();
  EXPECT_GE(f.ops->queue().elapsed_seconds(m0, m1), 0.0);
  f.ops->queue().external_begin();
  f.ops->queue().external_end();
}


// The checkpoint's host copy goes into the buffer the callback hands back (the job's writer
// returns the previous checkpoint's once written): no fresh pages at each checkpoint, and each
// copy holds that checkpoint's block, not a stale one.
TEST(Checkpointer, CopiesIntoTheBufferTheCallbackHandsBack) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Fixture f;
  const std::int64_t n = 1003, c = 3;
  std::vector<std::vector<double>> written;  // what the "writer" received, in order
  std::vector<const double*> where;          // the buffer each copy went into
  std::vector<double> writer_buffer;         // held by the writer until the next checkpoint
  CheckpointFn fn = [&](SolverCheckpoint& cp) {
    where.push_back(cp.block.data());
    written.push_back(cp.block);
    std::vector<double> done = std::move(writer_buffer);  // the previous write has finished
    writer_buffer = std::move(cp.block);
    cp.block = std::move(done);
  };
  detail::Checkpointer ck(1e-9, fn);
  std::vector<Mat> blocks;
  for (int t = 0; t < 4; ++t) {
    blocks.push_back(random_mat(n, c, 200 + t));
    auto x = f.put(blocks.back());
    ck.write(*f.ops, x.view(), t + 1, 0);
  }
  ASSERT_EQ(written.size(), 4u);
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ((Eigen::Map<const Mat>(written[t].data(), n, c) - blocks[t]).norm(), 0.0) << t;
  // writes 1 and 2 allocate (nothing handed back yet); write 3 reuses write 1's buffer, 4 write 2's
  EXPECT_NE(where[0], where[1]);
  EXPECT_EQ(where[2], where[0]);
  EXPECT_EQ(where[3], where[1]);
}

}  // namespace
}  // namespace tcsolve::test
