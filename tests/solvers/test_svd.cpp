// Partial SVD (solvers/svd/): the block Golub–Kahan–Lanczos iteration against Eigen's dense SVD
// on random sparse tall and wide matrices (sizes not multiples of the block), a singular value
// repeated 5 times with k = 7, rank deficiency, the zero matrix, the dense path for small sizes,
// implicit centering against a dense centered SVD, the steps' invariants, bad arguments, a run
// stopped and resumed from its checkpointed restart (and a start block that holds none), and
// every matrix of ../shared/matrices/general (k = 6 largest; skipped when the folder is absent),
// and the count certificate (solvers/svd/certificate.hpp): [0 A; Aᵀ 0] against the dense one, sets
// with and without a missing copy of a repeated value, a narrow block on the 5-fold trap, σ_k at 0;
// and the re-check where nothing counts (solvers/svd/recheck.hpp): its plan, a hand-made set
// lacking a copy, the narrow-block trap, the centered and operator forms.
// Runs on the CPU here and on the GPU in test_solvers_gpu.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>

#include "core/error.hpp"
#include "factor/sparse_factor.hpp"
#include "io/generators.hpp"
#include "io/matrix_io.hpp"
#include "solvers/svd/bidiag.hpp"
#include "solvers/svd/centered.hpp"
#include "solvers/svd/certificate.hpp"
#include "solvers/svd/plan.hpp"
#include "solvers/svd/recheck.hpp"
#include "solvers/svd/svds.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;

// m × n with about density·m·n entries uniform in [-1, 1] (positive in [0, 5) when counts), and
// at least one entry per row and column.
Csr<double> random_sparse(std::int64_t m, std::int64_t n, double density, unsigned seed,
                          bool counts = false) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0), pos(0.0, 5.0), u01(0.0, 1.0);
  std::vector<Triplet<double>> t;
  auto v = [&] { return counts ? std::floor(pos(gen)) + 1.0 : val(gen); };
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if (u01(gen) < density || j == i % n || i == j % m)
        t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j), v()});
  return csr_from_triplets<double>(m, n, std::move(t));
}

Mat dense_of(const Csr<double>& a) {
  Mat d = Mat::Zero(a.nrows, a.ncols);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[p]) = a.values[p];
  return d;
}

Eigen::VectorXd dense_singular_values(const Mat& d) { return Eigen::BDCSVD<Mat>(d).singularValues(); }

// The result's invariants: converged, values descending and within rel·σ₁ of the dense ones,
// residuals within tol·σ₁ as reported and as recomputed here from the dense matrix, U and V
// orthonormal.
void expect_matches_dense(const SvdResult& r, const Mat& d, double rel, const std::string& what) {
  SCOPED_TRACE(what + " (" + r.method + ")");
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
  const auto ref = dense_singular_values(d);
  const std::int64_t k = r.k, m = d.rows(), n = d.cols();
  const double s1 = ref(0);
  ASSERT_EQ(static_cast<std::int64_t>(r.values.size()), k);
  for (std::int64_t j = 0; j < k; ++j) {
    EXPECT_NEAR(r.values[j], ref(j), rel * s1) << "σ_" << j + 1;
    if (j > 0) {
      EXPECT_LE(r.values[j], r.values[j - 1]);
    }
    EXPECT_LE(r.residual_av[j], r.tol * r.a_norm);
    EXPECT_LE(r.residual_atu[j], r.tol * r.a_norm);
  }
  Eigen::Map<const Mat> U(r.u.data(), m, k), V(r.v.data(), n, k);
  const Eigen::VectorXd s = Eigen::Map<const Eigen::VectorXd>(r.values.data(), k);
  EXPECT_LE((d * V - U * s.asDiagonal()).colwise().norm().maxCoeff(), 2 * r.tol * s1 + 1e-13 * s1);
  EXPECT_LE((d.transpose() * U - V * s.asDiagonal()).colwise().norm().maxCoeff(),
            2 * r.tol * s1 + 1e-13 * s1);
  EXPECT_LE((U.transpose() * U - Mat::Identity(k, k)).norm(), 1e-10);
  EXPECT_LE((V.transpose() * V - Mat::Identity(k, k)).norm(), 1e-10);
}

SvdOptions opts(std::int64_t k, double tol = 1e-10) {
  SvdOptions o;
  o.k = k;
  o.tol = tol;
  return o;
}

TEST(Svds, RandomTallAndWideMatchDense) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (auto [m, n] : {std::pair<int, int>{301, 127}, {127, 301}, {211, 211}}) {
    const auto a = random_sparse(m, n, 0.05, 11u + m);
    for (std::int64_t k : {1, 6, 9}) {
      const auto r = svds(a, kBackend, opts(k));
      EXPECT_EQ(r.method.rfind("block GKL", 0), 0u) << r.method;
      expect_matches_dense(r, dense_of(a), 1e-10,
                           std::to_string(m) + "×" + std::to_string(n) + " k=" + std::to_string(k));
    }
  }
}

// Block diagonal of 5 copies of one 40 × 30 block C and a 400 × 300 block D scaled below C's
// second singular value, rows and columns scrambled: σ₁(C) has multiplicity 5 exactly (and σ₂(C)
// too). The Krylov basis (49 columns) is a small part of the 450 dimensions, so a block narrower
// than the multiplicity would return σ₂(C) in place of copies of σ₁(C) (block = 1: it did).
TEST(Svds, FiveFoldLargestAllReturned) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  constexpr int cm = 40, cn = 30, dm = 400, dn = 300;
  const auto c = random_sparse(cm, cn, 0.15, 5u), dblk = random_sparse(dm, dn, 0.02, 6u);
  const Mat cd = dense_of(c), dd = dense_of(dblk);
  const auto sc = dense_singular_values(cd);
  const double scale = 0.9 * sc(1) / dense_singular_values(dd)(0);
  const std::int64_t m = 5 * cm + dm, n = 5 * cn + dn;
  std::vector<std::int32_t> pr(m), pc(n);
  std::iota(pr.begin(), pr.end(), 0);
  std::iota(pc.begin(), pc.end(), 0);
  std::mt19937 gen(3);
  std::shuffle(pr.begin(), pr.end(), gen);
  std::shuffle(pc.begin(), pc.end(), gen);
  std::vector<Triplet<double>> t;
  for (int b = 0; b < 5; ++b)
    for (int i = 0; i < cm; ++i)
      for (int j = 0; j < cn; ++j)
        if (cd(i, j) != 0) t.push_back({pr[b * cm + i], pc[b * cn + j], cd(i, j)});
  for (int i = 0; i < dm; ++i)
    for (int j = 0; j < dn; ++j)
      if (dd(i, j) != 0) t.push_back({pr[5 * cm + i], pc[5 * cn + j], scale * dd(i, j)});
  const auto a = csr_from_triplets<double>(m, n, std::move(t));
  const auto r = svds(a, kBackend, opts(7));
  expect_matches_dense(r, dense_of(a), 1e-10, "5-fold σ₁");
  ASSERT_EQ(r.values.size(), 7u);
  for (int j = 0; j < 5; ++j) EXPECT_NEAR(r.values[j], sc(0), 1e-10 * sc(0)) << "copy " << j + 1;
  for (int j = 5; j < 7; ++j) EXPECT_NEAR(r.values[j], sc(1), 1e-10 * sc(0)) << "σ₂(C), copy " << j - 4;
}

// 140 × 90 of rank 3: every column a multiple of one of three sparse columns.
Csr<double> rank_three() {
  const auto base = dense_of(random_sparse(140, 3, 0.2, 9u));
  std::vector<Triplet<double>> t;
  for (int j = 0; j < 90; ++j)
    for (int i = 0; i < 140; ++i)
      if (base(i, j % 3) != 0) t.push_back({i, j, (1.0 + 0.01 * j) * base(i, j % 3)});
  return csr_from_triplets<double>(140, 90, std::move(t));
}

// Rank 3; k = 6 asks for 3 zeros.
TEST(Svds, RankDeficient) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = rank_three();
  const auto r = svds(a, kBackend, opts(6));
  expect_matches_dense(r, dense_of(a), 1e-10, "rank 3");
  for (int j = 3; j < 6; ++j) EXPECT_LE(r.values[j], 1e-10 * r.values[0]);
}

TEST(Svds, ZeroMatrix) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a;
  a.nrows = 80;
  a.ncols = 70;
  a.row_ptr.assign(81, 0);
  const auto r = svds(a, kBackend, opts(4));
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
  for (double s : r.values) EXPECT_EQ(s, 0.0);
}

// min(m, n) below k + 2 blocks of basis: the dense path, verified the same way.
TEST(Svds, SmallUsesDensePath) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (auto [m, n] : {std::pair<int, int>{17, 40}, {40, 17}}) {
    const auto a = random_sparse(m, n, 0.3, 2u + m);
    const auto r = svds(a, kBackend, opts(6));
    EXPECT_EQ(r.method.rfind("dense", 0), 0u) << r.method;
    expect_matches_dense(r, dense_of(a), 1e-12, "dense path");
  }
}

TEST(Svds, BadArguments) {
  const auto a = random_sparse(50, 40, 0.1, 1u);
  EXPECT_THROW(svds(a, Backend::cpu, opts(0)), InvalidArgument);
  EXPECT_THROW(svds(a, Backend::cpu, opts(41)), InvalidArgument);
  EXPECT_THROW(svds(a, Backend::cpu, opts(3, 0.0)), InvalidArgument);
  EXPECT_THROW(svds(a, Backend::cpu, opts(3, std::nan(""))), InvalidArgument);
  auto o = opts(6);
  o.basis = 5;  // 6 columns < k + block = 12
  EXPECT_THROW(svds(a, Backend::cpu, o), InvalidArgument);
}

// SvdOptions::start with one column (SciPy's v0, the Python module's): the first start column.
// The exact right singular vector of σ₁ makes the first Ritz estimate pass (k = 1, block 1: two
// block steps), where a random start takes more; a length that is not a multiple of n is refused.
TEST(Svds, StartVectorIsTheFirstColumn) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = random_sparse(301, 127, 0.05, 5u);
  const Mat d = dense_of(a);
  Eigen::BDCSVD<Mat> ref(d, Eigen::ComputeThinV);
  auto o = opts(1);
  const auto r_random = svds(a, kBackend, o);
  o.start.assign(ref.matrixV().data(), ref.matrixV().data() + 127);
  const auto r_v0 = svds(a, kBackend, o);
  expect_matches_dense(r_v0, d, 1e-10, "v0 = v_1");
  EXPECT_LT(r_v0.operator_applies, r_random.operator_applies);
  o.start.assign(126, 1.0);
  EXPECT_THROW(svds(a, kBackend, o), InvalidArgument);
}

// PCA: A − 1·μᵀ applied implicitly against the dense centered SVD, and the explained variance.
TEST(Svds, CenteredMatchesDenseCentered) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (auto [m, n] : {std::pair<int, int>{263, 71}, {71, 263}}) {
    const auto a = random_sparse(m, n, 0.06, 21u + m, /*counts=*/true);
    auto o = opts(5);
    o.center = true;
    const auto r = svds(a, kBackend, o);
    Mat d = dense_of(a);
    const Eigen::RowVectorXd mu = d.colwise().mean();
    d.rowwise() -= mu;
    expect_matches_dense(r, d, 1e-10, "centered " + std::to_string(m) + "×" + std::to_string(n));
    ASSERT_EQ(r.means.size(), static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) EXPECT_NEAR(r.means[j], mu(j), 1e-13 * (1 + std::abs(mu(j))));
    EXPECT_NEAR(r.total_sq, d.squaredNorm(), 1e-12 * d.squaredNorm());
    const auto ratio = r.explained_variance_ratio();
    const auto var = r.explained_variance();
    ASSERT_EQ(ratio.size(), 5u);
    for (int j = 0; j < 5; ++j) {
      EXPECT_NEAR(ratio[j], r.values[j] * r.values[j] / d.squaredNorm(), 1e-12);
      EXPECT_NEAR(var[j], r.values[j] * r.values[j] / (m - 1), 1e-12 * var[0]);
    }
    // The uncentered problem has different values (the test above can tell them apart).
    const auto plain = svds(a, kBackend, opts(5));
    EXPECT_GT(std::abs(plain.values[0] - r.values[0]), 1e-3 * r.values[0]);
  }
}

// Column means and the centered Frobenius norm over several row chunks (16,384 rows each),
// with a column of no entries and one whose mean dominates its spread (the cancellation that
// the per-column form avoids), against dense sums in long double.
TEST(Svds, ColumnMeansAndCenteredNormOverRowChunks) {
  const std::int64_t m = 40001, n = 23;
  std::vector<Triplet<double>> t;
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int32_t j = 0; j < n; ++j) {
      if (j == 4) continue;                                                    // empty column
      if (j == 9) t.push_back({static_cast<std::int32_t>(i), j, 1e6 + u(rng)});  // mean ≫ spread
      else if (rng() % 7 == 0) t.push_back({static_cast<std::int32_t>(i), j, u(rng)});
    }
  const Csr<double> a = csr_from_triplets(m, n, std::move(t));
  const Mat d = dense_of(a);
  const auto mu = column_means(a);
  long double total = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    long double s = 0;
    for (std::int64_t i = 0; i < m; ++i) s += d(i, j);
    const long double ref = s / m;
    EXPECT_NEAR(mu[j], static_cast<double>(ref), 1e-13 * (1 + std::abs(static_cast<double>(ref)))) << j;
    for (std::int64_t i = 0; i < m; ++i) total += (d(i, j) - ref) * (d(i, j) - ref);
  }
  EXPECT_EQ(mu[4], 0.0);
  const double got = centered_frobenius_sq(a, mu);
  EXPECT_NEAR(got, static_cast<double>(total), 1e-12 * static_cast<double>(total));
  // (‖A‖_F² − m·‖μ‖² would leave column 9's 1.3e4 as the difference of two 4e16 sums)
  EXPECT_THROW(centered_frobenius_sq(a, std::vector<double>(n + 1)), std::exception);
}

// The centered operator and its transpose against the dense A − 1·μᵀ on a random block.
TEST(Svds, CenteredOperatorApplies) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = random_sparse(90, 37, 0.1, 4u, true);
  auto ops = make_dense_ops(kBackend);
  auto op = make_sparse_operator(a, kBackend);
  auto opt = make_sparse_operator(transpose(a), kBackend);
  const auto mu = column_means(a);
  CenteredOperator ca(*op, false, mu, *ops, 2), cat(*opt, true, mu, *ops, 2);  // chunks of 2
  Mat d = dense_of(a);
  d.rowwise() -= d.colwise().mean();
  Mat x = Mat::Random(37, 5), y(90, 5), x2 = Mat::Random(90, 5), y2(37, 5);
  auto xb = ops->allocate(37, 5), yb = ops->allocate(90, 5), x2b = ops->allocate(90, 5),
       y2b = ops->allocate(37, 5);
  ops->from_host(x.data(), 37, xb.view());
  ops->from_host(x2.data(), 90, x2b.view());
  ca.apply(xb.view(), yb.view());
  cat.apply(x2b.view(), y2b.view());
  ops->to_host(yb.view(), y.data(), 90);
  ops->to_host(y2b.view(), y2.data(), 37);
  EXPECT_LE((y - d * x).norm(), 1e-12 * (d * x).norm());
  EXPECT_LE((y2 - d.transpose() * x2).norm(), 1e-12 * (d.transpose() * x2).norm());
}

// The steps alone: after start and three expands, A·V = U·B and Aᵀ·U = V·Bᵀ + V_next·S·E_lastᵀ
// hold to rounding, both bases orthonormal, B upper block bidiagonal; ritz + restart keep the
// first relation with B diagonal.
TEST(Svds, StepsKeepTheRelations) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = random_sparse(173, 97, 0.08, 8u);
  const Mat d = dense_of(a);
  auto ops = make_dense_ops(kBackend);
  auto op = make_sparse_operator(a, kBackend), opt = make_sparse_operator(transpose(a), kBackend);
  auto o = opts(4);
  o.block = 3;
  bool fits = false;
  const auto shape = detail::gkl_shape(173, 97, o, &fits);
  ASSERT_TRUE(fits);
  detail::BlockGkl g(*op, *opt, *ops, o, shape);
  g.start();
  auto host = [&](MvView<double> v) {
    Mat h(v.rows, v.cols);
    ops->to_host(v, h.data(), v.rows);
    return h;
  };
  for (int s = 0; s < 3; ++s) g.expand();
  const std::int64_t c = g.current();
  ASSERT_EQ(c, 9);
  const Mat U = host(g.left(c)), V = host(g.right(c + 3)), B = g.projection().topLeftCorner(c, c);
  EXPECT_LE((U.transpose() * U - Mat::Identity(c, c)).norm(), 1e-13);
  EXPECT_LE((V.transpose() * V - Mat::Identity(c + 3, c + 3)).norm(), 1e-13);
  EXPECT_LE((d * V.leftCols(c) - U * B).norm(), 1e-13 * d.norm());
  EXPECT_LE(B.bottomLeftCorner(3, 6).norm(), 0.0);        // block upper bidiagonal
  EXPECT_LE(B.topRightCorner(3, 3).norm(), 1e-13 * d.norm());
  const Mat F = V.rightCols(3).transpose() * d.transpose() * U;  // (V_next)ᵀ·Aᵀ·U
  EXPECT_LE(F.leftCols(6).norm(), 1e-12 * d.norm());
  EXPECT_LE((d.transpose() * U - V.leftCols(c) * B.transpose() - V.rightCols(3) * F).norm(),
            1e-12 * d.norm());
  IterationRecord rec;
  g.ritz(rec);
  g.restart();
  const std::int64_t keep = g.current();
  const Mat U2 = host(g.left(keep)), V2 = host(g.right(keep + 3));
  EXPECT_LE((d * V2.leftCols(keep) - U2 * g.sigma().head(keep).asDiagonal()).norm(), 1e-12 * d.norm());
  EXPECT_LE((V2.transpose() * V2 - Mat::Identity(keep + 3, keep + 3)).norm(), 1e-13);
}

// A run stopped half-way hands its last restart (V's kept Ritz vectors and next block) to
// on_checkpoint; started from that block, a run continues the thick restart: the restarts it
// needs are those the uninterrupted run had left, give or take 2 % of the run (U is rebuilt from
// A·V, and on the GPU the reductions' order moves a run of ~470 restarts by a few: H200, stopped
// after 6, 472 against 467), and it reaches the same values. A fresh start would need ~all. A block that holds no restart (random orthonormal columns) only
// starts the Krylov basis, and says so.
TEST(Svds, ResumeFromACheckpointContinuesTheRestart) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = generate("gen:lap2d:40");  // clustered top values: many restarts
  SvdOptions o = opts(6, 1e-10);
  o.basis = 24;
  const SvdResult full = svds(a, kBackend, o);
  ASSERT_EQ(full.status, SolverStatus::converged) << full.reason;
  ASSERT_GT(full.iterations, 12);
  SvdOptions stop = o;
  const std::int64_t half = full.iterations / 2;
  stop.max_restarts = half;
  stop.checkpoint_every = 1e-12;
  SolverCheckpoint last;
  stop.on_checkpoint = [&](SolverCheckpoint& c) { last = c; };
  const SvdResult first = svds(a, kBackend, stop);
  EXPECT_EQ(first.status, SolverStatus::not_converged);
  ASSERT_EQ(last.iteration, half);
  EXPECT_EQ(last.n, a.ncols);
  EXPECT_EQ(last.cols, 15 + 6);  // keep 15 + the next block of 6
  SvdOptions resumed = o;
  resumed.start = last.block;
  const SvdResult r = svds(a, kBackend, resumed);
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
  EXPECT_EQ(r.start.rfind("continued the thick restart", 0), 0u) << r.start;
  EXPECT_LE(std::abs(r.iterations - (full.iterations - half)), std::max<std::int64_t>(1, full.iterations / 50))
      << r.iterations << " after " << half << " of " << full.iterations;
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(r.values[j], full.values[j], 1e-10 * full.values[j]) << j;
  // random orthonormal columns of the same shape: no restart of this matrix
  Mat q = Mat::Random(a.ncols, last.cols).householderQr().householderQ() * Mat::Identity(a.ncols, last.cols);
  SvdOptions other = o;
  other.start.assign(q.data(), q.data() + q.size());
  const SvdResult s = svds(a, kBackend, other);
  EXPECT_EQ(s.status, SolverStatus::converged) << s.reason;
  EXPECT_NE(s.start.find("they hold no restart of this matrix"), std::string::npos) << s.start;
  EXPECT_THROW(
      {
        SvdOptions bad = o;
        bad.start.assign(static_cast<std::size_t>(a.ncols) + 1, 1.0);
        svds(a, kBackend, bad);
      },
      InvalidArgument);
}

// Every matrix of ../shared/matrices/general, k = 6 largest, against the dense SVD where it is
// affordable (m·n·min(m, n) ≤ 7e9: all but Franz6_id1959_aug, 10592 × 3016).
TEST(Svds, SharedGeneralMatrices) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto dir = general_matrices_dir();
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no " << dir;
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto ext = e.path().extension().string();
    if (ext != ".mtx" && ext != ".rua" && ext != ".rb") continue;
    const auto a = read_matrix(e.path().string());
    const double work = double(a.nrows) * a.ncols * std::min(a.nrows, a.ncols);
    const auto r = svds(a, kBackend, opts(6));
    if (work > 7e9) {  // no dense reference (Franz6_id1959_aug): the residual test alone
      SCOPED_TRACE(e.path().filename().string());
      EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
      continue;
    }
    expect_matches_dense(r, dense_of(a), 1e-10, e.path().filename().string());
    ++checked;
  }
  EXPECT_GT(checked, 0);
}


// ---- the count certificate (solvers/svd/certificate.hpp) ----------------------------------------

// K = [0 A; Aᵀ 0] entry by entry, and its spectrum: ±σ_i and m − n zeros.
TEST(SvdCertificate, AugmentedIsTheSymmetricEmbedding) {
  const auto a = random_sparse(23, 17, 0.2, 4u);
  const auto k = detail::augmented(a);
  ASSERT_EQ(k.nrows, 40);
  ASSERT_EQ(k.nnz(), 2 * a.nnz());
  const Mat d = dense_of(a), kd = dense_of(k);
  EXPECT_EQ((kd.topRightCorner(23, 17) - d).norm(), 0.0);
  EXPECT_EQ((kd.bottomLeftCorner(17, 23) - d.transpose()).norm(), 0.0);
  EXPECT_EQ(kd.topLeftCorner(23, 23).norm() + kd.bottomRightCorner(17, 17).norm(), 0.0);
  Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Mat>(kd).eigenvalues();  // ascending
  const auto sv = dense_singular_values(d);
  for (int j = 0; j < 17; ++j) EXPECT_NEAR(ev(39 - j), sv(j), 1e-12 * sv(0));
  for (int j = 17; j < 23; ++j) EXPECT_NEAR(ev(j), 0.0, 1e-12 * sv(0));
}

// A diagonal 60 × 45 with σ = 9 (three copies), 7, 6, 5, 1 ... as a crafted result: exact
// triplets of chosen values. All copies returned, or the k-th value's extra copies beyond k:
// yes; a copy left out below another returned value: no, one missing.
TEST(SvdCertificate, CountsEveryCopyOfARepeatedValue) {
  if (!built_with_factor()) GTEST_SKIP() << "no sparse direct engine in this build";
  std::vector<double> sig(45, 1.0);
  sig[0] = sig[1] = sig[2] = 9, sig[3] = 7, sig[4] = 6, sig[5] = 5;
  std::vector<Triplet<double>> t;
  for (int j = 0; j < 45; ++j) t.push_back({(j * 7) % 60, j, j % 2 ? sig[j] : -sig[j]});
  const auto a = csr_from_triplets<double>(60, 45, std::move(t));
  auto set = [](std::vector<double> v) {
    SvdResult r;
    r.status = SolverStatus::converged;
    r.values = v;
    r.a_norm = 9;
    r.residual_av.assign(v.size(), 1e-14);
    r.residual_atu.assign(v.size(), 1e-14);
    return r;
  };
  auto all = detail::certify_svds(a, set({9, 9, 9, 7}), false);
  EXPECT_EQ(all.state, Certified::yes) << all.detail;
  auto two_of_three = detail::certify_svds(a, set({9, 9}), false);  // k = 2: the third copy is beyond k
  EXPECT_EQ(two_of_three.state, Certified::yes) << two_of_three.detail;
  EXPECT_NE(two_of_three.detail.find("copies"), std::string::npos) << two_of_three.detail;
  auto missing = detail::certify_svds(a, set({9, 9, 7, 6}), false);  // a copy of 9 left out
  EXPECT_EQ(missing.state, Certified::no) << missing.detail;
  EXPECT_EQ(missing.missing, 1);
  auto wrong = detail::certify_svds(a, set({9, 9, 9, 7.5}), true);  // 7.5 is no singular value
  EXPECT_EQ(wrong.state, Certified::no) << wrong.detail;
  EXPECT_GE(all.factorizations, 1);
}

// The default path certifies where it is cheap, and says so.
TEST(Svds, CertifiedByDefaultWhereCheap) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  if (!built_with_factor()) GTEST_SKIP() << "no sparse direct engine in this build";
  const auto a = random_sparse(301, 127, 0.05, 12u);
  const auto r = svds(a, kBackend, opts(6));
  expect_matches_dense(r, dense_of(a), 1e-10, "certified");
  EXPECT_EQ(r.certified, Certified::yes) << r.certificate;
  EXPECT_NE(r.certificate.find("[0 A; A^T 0]"), std::string::npos) << r.certificate;
  auto o = opts(6);
  o.certify = SvdCertify::never;
  EXPECT_EQ(svds(a, kBackend, o).certified, Certified::not_checked);
}

// The 5-fold trap of FiveFoldLargestAllReturned without its scramble, block 1 (narrower than the
// multiplicity): the first run returns σ₂(C) in place of copies of σ₁ with passing residuals (it
// was reported converged before the count existed). The count rejects it, the run is repeated
// with a wider block, and the second set is complete and certified.
// The 5-fold trap of FiveFoldLargestAllReturned without its scramble (600 × 450).
Csr<double> five_fold_unscrambled() {
  const auto c = random_sparse(40, 30, 0.15, 5u), dblk = random_sparse(400, 300, 0.02, 6u);
  const Mat cd = dense_of(c), dd = dense_of(dblk);
  const auto sc = dense_singular_values(cd);
  const double scale = 0.9 * sc(1) / dense_singular_values(dd)(0);
  std::vector<Triplet<double>> t;
  for (int b = 0; b < 5; ++b)
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 30; ++j)
        if (cd(i, j) != 0) t.push_back({b * 40 + i, b * 30 + j, cd(i, j)});
  for (int i = 0; i < 400; ++i)
    for (int j = 0; j < 300; ++j)
      if (dd(i, j) != 0) t.push_back({200 + i, 150 + j, scale * dd(i, j)});
  return csr_from_triplets<double>(600, 450, std::move(t));
}

bool matches_top(const SvdResult& r, const Eigen::VectorXd& ref, std::size_t k) {
  bool complete = r.values.size() == k;
  for (std::size_t j = 0; complete && j < k; ++j) complete = std::abs(r.values[j] - ref(j)) <= 1e-8 * ref(0);
  return complete;
}

TEST(Svds, NarrowBlockLosingCopiesIsRerunWider) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  if (!built_with_factor()) GTEST_SKIP() << "no sparse direct engine in this build";
  const auto a = five_fold_unscrambled();
  auto o = opts(7);
  o.block = 1;
  const auto r = svds(a, kBackend, o);
  const auto ref = dense_singular_values(dense_of(a));
  SCOPED_TRACE(r.method + " | " + r.reason + " | " + r.certificate);
  EXPECT_NE(r.method.find("that the count rejected"), std::string::npos);  // the trap fired
  EXPECT_TRUE(matches_top(r, ref, 7));
  EXPECT_EQ(r.status, SolverStatus::converged);
  EXPECT_EQ(r.certified, Certified::yes);
  EXPECT_EQ(r.verification, "certificate");
  // Neither counted nor re-checked, the first run's incomplete set stands on its residuals: the
  // trap is real.
  o.certify = SvdCertify::never;
  o.recheck = false;
  const auto blind = svds(a, kBackend, o);
  EXPECT_EQ(blind.verification, "none");
  EXPECT_EQ(blind.status, SolverStatus::converged);
  EXPECT_GT(std::abs(blind.values[4] - ref(4)), 1e-6 * ref(0)) << "block 1 found every copy: no trap";
}

// The planner: dense where min(m, n) cannot hold the basis; the block GKL where the dense SVD is
// beyond its limits; priced where both apply (a thin 2000 × 60 matrix: the dense SVD's 34 Mflop
// against GKL's orthogonalization of 2 restarts, 80 Mflop; 300 × 200: the reverse).
TEST(SvdPlan, PricesBothWhereBothApply) {
  auto in_for = [](std::int64_t m, std::int64_t n, std::int64_t k, double t_col) {
    detail::SvdPlanInputs in;
    SvdOptions o;
    o.k = k;
    in.m = m, in.n = n, in.k = k, in.t_col = t_col, in.s_per_flop = 5e-10;
    in.shape = detail::gkl_shape(m, n, o, &in.fits);
    return in;
  };
  const auto tiny = detail::plan_svds(in_for(40, 20, 6, 1e-6));
  EXPECT_TRUE(tiny.dense);
  EXPECT_NE(tiny.reason.find("cannot hold"), std::string::npos) << tiny.reason;
  const auto big = detail::plan_svds(in_for(100000, 2000, 6, 1e-4));
  EXPECT_FALSE(big.dense);
  EXPECT_EQ(big.dense_s, -1);
  EXPECT_NE(big.reason.find("not priced"), std::string::npos) << big.reason;
  const auto thin = detail::plan_svds(in_for(2000, 60, 6, 1e-6));
  EXPECT_TRUE(thin.dense) << thin.reason;
  EXPECT_LT(thin.dense_s, thin.gkl_s);
  const auto square = detail::plan_svds(in_for(300, 200, 6, 1e-6));
  EXPECT_FALSE(square.dense) << square.reason;
  EXPECT_LT(square.gkl_s, square.dense_s);
  EXPECT_NE(square.reason.find("predicted"), std::string::npos) << square.reason;
  // a slow apply does not change that: dense applies p + 2k = 72 columns, GKL about 150
  EXPECT_TRUE(detail::plan_svds(in_for(2000, 60, 6, 1.0)).dense);
}

// The plan in the run: the thin matrix is solved densely and says why; forced methods are taken.
TEST(SvdPlan, RunsThePlannedMethodAndSaysWhy) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = random_sparse(2000, 60, 0.05, 31u);
  const auto r = svds(a, kBackend, opts(6));
  EXPECT_EQ(r.method.rfind("dense", 0), 0u) << r.method << " | " << r.method_reason;
  EXPECT_NE(r.method_reason.find("predicted"), std::string::npos) << r.method_reason;
  expect_matches_dense(r, dense_of(a), 1e-10, "planned dense");
  auto o = opts(6);
  o.method = SvdMethod::gkl;
  const auto g = svds(a, kBackend, o);
  EXPECT_EQ(g.method.rfind("block GKL", 0), 0u) << g.method;
  EXPECT_EQ(g.method_reason, "block GKL: asked for");
  expect_matches_dense(g, dense_of(a), 1e-10, "forced GKL");
  o.method = SvdMethod::gkl;
  EXPECT_THROW(svds(random_sparse(40, 20, 0.2, 32u), kBackend, o), InvalidArgument);
}

// Where nothing counts (certify = never, as for the centered operator and large matrices), the
// re-check catches the same trap: the set is run again wider and returned complete.
TEST(SvdRecheck, CatchesANarrowBlockWhereNothingCounts) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = five_fold_unscrambled();
  auto o = opts(7);
  o.block = 1;
  o.certify = SvdCertify::never;
  const auto r = svds(a, kBackend, o);
  const auto ref = dense_singular_values(dense_of(a));
  SCOPED_TRACE(r.method + " | " + r.reason + " | " + r.certificate);
  EXPECT_NE(r.method.find("that the re-check rejected"), std::string::npos);
  EXPECT_TRUE(matches_top(r, ref, 7));
  EXPECT_EQ(r.status, SolverStatus::converged);
  EXPECT_EQ(r.verification, "recheck");
  EXPECT_EQ(r.certified, Certified::not_checked);
  EXPECT_NE(r.certificate.find("none missing"), std::string::npos);
}

// The plan from the found values: σ_d the smallest value 2ε above σ_k, more steps for a finer
// resolution, none where σ_k is at 0 or the basis does not fit.
TEST(SvdRecheck, PlanFromTheFoundValues) {
  SvdResult r;
  r.tol = 1e-8;
  r.values = {10, 6, 6, 5};
  r.a_norm = 10;
  const auto p = detail::svd_recheck_plan(r, 1000, 800);
  EXPECT_EQ(p.sigma_k, 5);
  EXPECT_EQ(p.sigma_d, 6);
  EXPECT_GE(p.steps, 2);
  EXPECT_EQ(p.columns, 4 * p.steps);
  EXPECT_EQ(p.largest_group, 2);  // the two 6s
  r.values = {10, 5.5, 5.5, 5};
  EXPECT_GT(detail::svd_recheck_plan(r, 1000, 800).steps, p.steps);  // finer: more steps
  r.values = {5 + 1e-9, 5, 5};  // within 2ε of σ_k: copies of it; σ_d = 1.01·σ_k
  EXPECT_NEAR(detail::svd_recheck_plan(r, 1000, 800).sigma_d, 5.05, 1e-12);
  EXPECT_EQ(detail::svd_recheck_plan(r, 1000, 800).largest_group, 0);  // nothing above σ_k to lack copies
  r.values = {7};  // k = 1: the block always answers
  EXPECT_EQ(detail::svd_recheck_plan(r, 1000, 800).largest_group, 0);
  r.values = {10, 1e-12};
  const auto zero = detail::svd_recheck_plan(r, 1000, 800);
  EXPECT_EQ(zero.steps, 0);
  EXPECT_NE(zero.why.find("of 0"), std::string::npos) << zero.why;
  r.values = {10, 9.99999};
  const auto tiny = detail::svd_recheck_plan(r, 40, 30);
  EXPECT_EQ(tiny.steps, 0);
  EXPECT_NE(tiny.why.find("min(m, n)"), std::string::npos) << tiny.why;
}

// A hand-made set of the matrix diag(s) (300 × 200, rows and columns permuted): s has 10 and a
// copy of 5.2 above a bulk of 150 values in [0, 5) and σ_k = 5. The set without one copy of 5.2
// (its vectors exact, so its residuals pass) is found missing a value; the complete set is not.
TEST(SvdRecheck, FindsACopyMissingFromAHandMadeSet) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t m = 300, n = 200;
  std::vector<double> s = {10, 5.2, 5.2, 5};
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> bulk(0.0, 4.99);
  while (static_cast<std::int64_t>(s.size()) < 154) s.push_back(bulk(gen));
  std::vector<std::int32_t> pr(m), pc(n);
  std::iota(pr.begin(), pr.end(), 0);
  std::iota(pc.begin(), pc.end(), 0);
  std::shuffle(pr.begin(), pr.end(), gen);
  std::shuffle(pc.begin(), pc.end(), gen);
  std::vector<Triplet<double>> t;
  for (std::size_t i = 0; i < s.size(); ++i) t.push_back({pr[i], pc[i], s[i]});
  const auto a = csr_from_triplets<double>(m, n, std::move(t));
  const auto at = transpose(a);
  auto ops = make_dense_ops(kBackend);
  auto op_a = make_sparse_operator(a, kBackend), op_at = make_sparse_operator(at, kBackend);
  // The set of diagonal positions `which`: values s_i, u = e_{pr[i]}, v = e_{pc[i]}.
  auto set_of = [&](std::vector<int> which) {
    SvdResult r;
    r.tol = 1e-10, r.k = static_cast<std::int64_t>(which.size()), r.a_norm = 10, r.status = SolverStatus::converged;
    r.u.assign(m * r.k, 0.0), r.v.assign(n * r.k, 0.0);
    for (std::int64_t j = 0; j < r.k; ++j) {
      r.values.push_back(s[which[j]]);
      r.u[j * m + pr[which[j]]] = 1, r.v[j * n + pc[which[j]]] = 1;
    }
    return r;
  };
  SvdOptions o;
  // Block 2 and no value found twice: the block size answers, nothing runs.
  const auto by_block = detail::recheck_svds(*op_a, *op_at, *ops, o, set_of({0, 1, 3}), 2, 1 << 20);
  EXPECT_TRUE(by_block.by_block && !by_block.ran && !by_block.missing) << by_block.detail;
  // Block 1 (as if the set came from a single-vector Krylov space): it runs.
  const auto lacking = detail::recheck_svds(*op_a, *op_at, *ops, o, set_of({0, 1, 3}), 1, 1 << 20);
  EXPECT_TRUE(lacking.ran) << lacking.detail;
  EXPECT_TRUE(lacking.missing) << lacking.detail;
  EXPECT_GT(lacking.top, 5.1) << lacking.detail;          // above σ_k: found
  EXPECT_LE(lacking.top, 5.2 * (1 + 1e-12)) << lacking.detail;  // a Ritz value: a lower bound
  const auto complete = detail::recheck_svds(*op_a, *op_at, *ops, o, set_of({0, 1, 2, 3}), 1, 1 << 20);
  EXPECT_TRUE(complete.ran) << complete.detail;
  EXPECT_FALSE(complete.missing) << complete.detail;
  EXPECT_LE(complete.top, 4.99 + 1e-9) << complete.detail;  // the bulk's top at most
  EXPECT_EQ(complete.applies, detail::svd_recheck_plan(set_of({0, 1, 2, 3}), m, n).columns);
  // Too costly for the cap: not run, and said.
  const auto capped = detail::recheck_svds(*op_a, *op_at, *ops, o, set_of({0, 1, 2, 3}), 1, 8);
  EXPECT_FALSE(capped.ran);
  EXPECT_NE(capped.detail.find("cost more"), std::string::npos) << capped.detail;
}

// The centered operator (never counted) and the operator form: with distinct values and block 6
// the block size answers; with block 1 the re-check runs; off, the verification says none and why.
TEST(SvdRecheck, CenteredAndOperatorFormsAreVerified) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = random_sparse(301, 127, 0.05, 12u, true);
  auto o = opts(6);
  o.center = true;
  const auto r = svds(a, kBackend, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
  EXPECT_EQ(r.verification, "block") << r.certificate;
  EXPECT_NE(r.certificate.find("no re-check needed"), std::string::npos) << r.certificate;
  o.block = 1;
  const auto one = svds(a, kBackend, o);
  ASSERT_EQ(one.status, SolverStatus::converged) << one.reason;
  EXPECT_EQ(one.verification, "recheck") << one.certificate;
  EXPECT_NE(one.certificate.find("none missing"), std::string::npos) << one.certificate;
  o.recheck = false;
  const auto off = svds(a, kBackend, o);
  EXPECT_EQ(off.verification, "none");
  EXPECT_NE(off.certificate.find("no re-check (turned off)"), std::string::npos) << off.certificate;
  auto ops = make_dense_ops(kBackend);
  const auto at = transpose(a);
  auto op_a = make_sparse_operator(a, kBackend), op_at = make_sparse_operator(at, kBackend);
  auto f_opt = opts(6);
  f_opt.block = 1;
  const auto f = svds(*op_a, *op_at, *ops, f_opt);
  ASSERT_EQ(f.status, SolverStatus::converged) << f.reason;
  EXPECT_EQ(f.verification, "recheck") << f.certificate;
}

// σ_k at 0 (rank 3, k = 6): the counts of K cannot separate it from the null space: not counted,
// the set stays converged on its residuals. --certify with --center is refused.
TEST(Svds, CertificateStaysClearOfTheNullSpace) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = rank_three();
  auto o = opts(6);
  o.certify = SvdCertify::always;
  const auto r = svds(a, kBackend, o);
  EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
  EXPECT_EQ(r.certified, Certified::not_checked);
  EXPECT_NE(r.certificate.find("null space"), std::string::npos) << r.certificate;
  o.center = true;
  EXPECT_THROW(svds(a, kBackend, o), InvalidArgument);
}

// PCA on standardized columns (SvdOptions::scale) against the dense SVD of (A − 1·μᵀ)·diag(1/s),
// s the columns' standard deviations (ddof 1), a constant column kept as it is (s = 1); without
// center, of A·diag(1/s). Means stay in A's units; ‖·‖_F² is (m − 1) per varying column.
TEST(Svds, ScaledMatchesDenseStandardized) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto base = random_sparse(300, 40, 0.1, 21u, /*counts=*/true);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < base.nrows; ++i)
    for (std::int64_t p = base.row_ptr[i]; p < base.row_ptr[i + 1]; ++p)
      if (base.col_idx[p] != 7) t.push_back({static_cast<std::int32_t>(i), base.col_idx[p], base.values[p] * (1 + base.col_idx[p])});
  for (int i = 0; i < 300; ++i) t.push_back({i, 7, 2.5});  // a constant column
  const auto a = csr_from_triplets<double>(300, 40, std::move(t));
  Mat d = dense_of(a);
  const Eigen::RowVectorXd mean = d.colwise().mean();
  Eigen::RowVectorXd sd = (d.rowwise() - mean).colwise().norm() / std::sqrt(299.0);
  for (int j = 0; j < 40; ++j)
    if (sd(j) == 0) sd(j) = 1;
  EXPECT_EQ(sd(7), 1.0);
  for (bool center : {true, false}) {
    auto o = opts(5);
    o.center = center, o.scale = true;
    const auto r = svds(a, kBackend, o);
    Mat z = center ? Mat(d.rowwise() - mean) : d;
    z = z.array().rowwise() / sd.array();
    SCOPED_TRACE(center ? "centered" : "not centered");
    expect_matches_dense(r, z, 1e-10, "scaled");
    ASSERT_EQ(r.scales.size(), 40u);
    for (int j = 0; j < 40; ++j) EXPECT_NEAR(r.scales[j], sd(j), 1e-12 * sd(j));
    if (center) {
      for (int j = 0; j < 40; ++j) EXPECT_NEAR(r.means[j], mean(j), 1e-12 * std::abs(mean(j)));
      EXPECT_NEAR(r.total_sq, 299.0 * 39, 1e-9 * 299 * 39);  // 39 varying columns of unit variance
    }
  }
}

// A wrong pair (Aᵀ of another matrix: the contract's "not checked") breaks the relations the
// estimates assume: they pass while the true residuals fail. The iteration breaks down after five
// such restarts instead of spending all its restarts; this small matrix then goes to the dense
// path, whose check (with the wrong Aᵀ) fails too: not converged, never converged.
TEST(Svds, EstimatesPassingWithoutTheTruthStopEarly) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = random_sparse(301, 127, 0.05, 31u);
  auto b = a;
  for (double& v : b.values) v *= 1.0 + 1e-6;  // Aᵀ of (1 + 1e-6)·A
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  auto op_a = make_sparse_operator(a, kBackend, oo);
  auto op_bt = make_sparse_operator(transpose(b), kBackend, oo);
  auto o = opts(4);
  o.max_restarts = 200;
  const auto r = svds(*op_a, *op_bt, *ops, o);
  EXPECT_NE(r.status, SolverStatus::converged);
  EXPECT_LE(r.iterations, 10) << r.reason;
  EXPECT_NE(r.method.find("broke down"), std::string::npos) << r.method;
}

}  // namespace
}  // namespace tcsolve::test
