// Block CG's steps run one at a time (solvers/cg/block_cg_solver.hpp) on the backend under test,
// each against the same algebra done densely on the host (Eigen): the residual update (R − Q·α and
// [Q R]ᵀZ), the direction update, the deflation of a search block of known rank, the column
// scales, the convergence test per column, and the fp32 rung's refinement step.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "solvers/cg/block_cg_solver.hpp"
#include "spmm/chebyshev_step.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;
using cg::BlockCgSolver;

// A backend block on the host (fp32 blocks through an fp64 copy: exact).
template <class T>
Mat get(DenseBlockOps& ops, MvView<T> v) {
  Mat m(v.rows, v.cols);
  if constexpr (std::is_same_v<std::remove_const_t<T>, double>) {
    ops.to_host(v, m.data(), v.rows);
  } else {
    MultiVector<double> t = ops.allocate(v.rows, v.cols);
    ops.fill_zero(t.view());
    ops.cg().add_converted(v, t.view(), 1.0);
    ops.to_host(t.view(), m.data(), v.rows);
  }
  ops.synchronize();
  return m;
}

// A host block into a backend block (fp32: rounded); returns what the block holds.
template <class T>
Mat put(DenseBlockOps& ops, const Mat& m, MvView<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    ops.from_host(m.data(), m.rows(), v);
  } else {
    MultiVector<double> t = ops.allocate(m.rows(), m.cols());
    ops.from_host(m.data(), m.rows(), t.view());
    ops.cg().convert(t.view(), v);
  }
  return get(ops, v);
}

double rel_err(const Mat& got, const Mat& want) {
  return (got - want).norm() / std::max(want.norm(), 1e-300);
}

// D·A·D with D's entries 10^(±0.5) (a non-constant Jacobi diagonal).
Csr<double> scaled(Csr<double> a) {
  std::vector<double> d(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) d[i] = std::pow(10.0, 0.5 * random_entry(8, i, 0));
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) a.values[p] *= d[i] * d[a.col_idx[p]];
  return a;
}

// A solver of W blocks for A with s columns (fp32: on A's fp32 step), its rhs and x blocks.
template <class W>
struct Bench {
  Csr<double> a;
  Mat ad;
  std::unique_ptr<LinearOperator<double>> op;
  std::unique_ptr<DenseBlockOps> ops;
  std::unique_ptr<ChebyshevStep> step;
  std::unique_ptr<BlockCgSolver<W>> cg;
  MultiVector<double> b, x;
  Bench(Csr<double> a_, std::int64_t s, CgOptions o) : a(std::move(a_)), ad(dense(a)) {
    op = make_operator(a);
    ops = make_dense_ops(kBackend);
    if constexpr (std::is_same_v<W, float>) {
      step = make_chebyshev_step(a, kBackend, Precision::fp32, ops->stream());
      o.step32 = step.get();
    }
    cg = std::make_unique<BlockCgSolver<W>>(*op, *ops, s, o);
    b = ops->allocate(a.nrows, s), x = ops->allocate(a.nrows, s);
  }
  typename BlockCgSolver<W>::Run start(const Mat& rhs) {
    const std::int64_t s = rhs.cols();
    ops->from_host(rhs.data(), rhs.rows(), b.view().columns(0, s));
    return cg->start(b.view().columns(0, s), x.view().columns(0, s), false);
  }
};

template <class W>
class BlockCgSteps : public ::testing::Test {};
using BlockTypes = ::testing::Types<double, float>;
TYPED_TEST_SUITE(BlockCgSteps, BlockTypes);

// queue_gram + residual_update + direction_update on given P, R, X_a: α = (PᵀAP)⁻¹·PᵀR,
// R' = R − A·P·α, Z = D⁻¹R' (Jacobi) or R', G2 = [AP R']ᵀZ, β = −(PᵀAP)⁻¹·(AP)ᵀZ, X_a' = X_a + P·α,
// P' = Z + P·β.
TYPED_TEST(BlockCgSteps, ResidualAndDirectionUpdatesMatchTheAlgebra) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  using W = TypeParam;
  const double tol = std::is_same_v<W, double> ? 1e-11 : 2e-5;
  for (bool jacobi : {false, true}) {
    SCOPED_TRACE(jacobi ? "Jacobi" : "no preconditioner");
    CgOptions o;
    Csr<double> a = jacobi ? scaled(laplacian(9, 7)) : laplacian(9, 7);
    if (jacobi) o.jacobi_diagonal = diagonal(a);
    const std::int64_t n = a.nrows, k = 4;
    Bench<W> t(a, k, o);
    auto& cg = *t.cg;
    auto run = t.start(random_block(n, k, 3));
    const Mat p = put(*t.ops, random_block(n, k, 4), cg.search_block(k));
    const Mat r = put(*t.ops, random_block(n, k, 5), cg.residual_block(k));
    const Mat xa = put(*t.ops, random_block(n, k, 6), cg.iterate_block(k));
    cg.queue_gram(k, k, /*explicit_ptr=*/true, cg::kPivTol);
    EXPECT_EQ(cg.factor_status(), 0.0);
    const Mat q = get(*t.ops, cg.product_block(k));  // (fp32: A's fp32 step, sums in fp32)
    EXPECT_LE(rel_err(q, t.ad * p), (std::is_same_v<W, double> ? 1e-14 : 1e-6));
    cg.residual_update(k, k, true);
    const Mat g = p.transpose() * q;
    const Mat alpha = g.ldlt().solve(p.transpose() * r), r1 = r - q * alpha;
    const Mat z = jacobi ? Mat(t.ad.diagonal().cwiseInverse().asDiagonal() * r1) : r1;
    Mat qr(n, 2 * k);
    qr << q, r1;
    const Mat beta = -g.ldlt().solve(q.transpose() * z);
    EXPECT_LE(rel_err(get(*t.ops, cg.alpha(k, k)), alpha), tol);
    EXPECT_LE(rel_err(get(*t.ops, cg.residual_block(k)), r1), tol);
    EXPECT_LE(rel_err(get(*t.ops, cg.residual_gram(k, k)), qr.transpose() * z), tol);
    EXPECT_LE(rel_err(get(*t.ops, cg.beta(k, k)), beta), tol);
    EXPECT_LE(rel_err(get(*t.ops, cg.preconditioned_block(k)), z), tol);
    cg.direction_update(k, k);
    EXPECT_LE(rel_err(get(*t.ops, cg.iterate_block(k)), xa + p * alpha), tol);
    EXPECT_LE(rel_err(get(*t.ops, cg.search_block(k)), z + p * beta), tol);
    (void)run;
  }
}

// A search block of 7 columns and rank 3 (three columns, three combinations of them, a zero
// column) keeps 3 orthonormal columns spanning the same space; a cycle whose right-hand sides
// have rank 3 starts deflating, synchronously.
TYPED_TEST(BlockCgSteps, DeflationKeepsTheRankOfTheSearchBlock) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  using W = TypeParam;
  const double tol = std::is_same_v<W, double> ? 1e-12 : 1e-6;
  Csr<double> a = laplacian(9, 7);
  const std::int64_t n = a.nrows;
  Bench<W> t(a, 7, CgOptions{});
  auto& cg = *t.cg;
  const Mat base = random_block(n, 3, 11);
  Mat p(n, 7);
  p << base, base * random_block(3, 3, 12), Mat::Zero(n, 1);
  put(*t.ops, p, cg.search_block(7));
  const Mat stored = get(*t.ops, cg.search_block(3));  // (its first columns as the block holds them)
  const OrthoOutcome out = cg.orthonormalize_search(7);
  EXPECT_EQ(out.rank, 3);
  EXPECT_EQ(out.branch, OrthoBranch::svqb_drop);
  const Mat q = get(*t.ops, cg.search_block(3));
  EXPECT_LE((q.transpose() * q - Mat::Identity(3, 3)).norm(), tol);
  EXPECT_LE((stored - q * (q.transpose() * stored)).norm(), tol * stored.norm());

  Mat rhs(n, 6);
  rhs << base, base.col(0), 2.0 * base.col(1) - base.col(2), Mat::Zero(n, 1);
  auto run = t.start(rhs);
  ASSERT_TRUE(cg.begin_cycle(run));
  EXPECT_EQ(run.na, 5);  // (the zero column passed at the start)
  EXPECT_EQ(run.res.column_iterations[5], 0);
  EXPECT_EQ(run.rk, 3);
  EXPECT_TRUE(run.deflating);
  EXPECT_TRUE(run.sync_mode);
}

// Column scales: a power of two per column with ‖b_j‖/c_j in [0.5, 1) at any magnitude, 1 for a
// zero column; non-finite entries are refused.
TEST(BlockCgStep, ColumnScalesArePowersOfTwoAtAnyMagnitude) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(9, 7);
  const std::int64_t n = a.nrows;
  Bench<double> t(a, 5, CgOptions{});
  Mat rhs = random_block(n, 5, 21);
  rhs.col(1) *= 1e200, rhs.col(2) *= 1e-200, rhs.col(3).setZero(), rhs.col(4) *= 1e150;
  t.start(rhs);
  const auto& cs = t.cg->scales();
  const auto& bn = t.cg->scaled_rhs_norms();
  for (int j : {0, 1, 2, 4}) {
    SCOPED_TRACE("column " + std::to_string(j));
    int e = 0;
    EXPECT_EQ(std::frexp(cs[j], &e), 0.5);  // a power of two
    EXPECT_GE(bn[j], 0.5);
    EXPECT_LT(bn[j], 1.0);
    const double want = (rhs.col(j) / cs[j]).norm();  // (the column scaled first: no overflow)
    EXPECT_NEAR(bn[j], want, 1e-14);
  }
  EXPECT_EQ(cs[3], 1.0);
  EXPECT_EQ(bn[3], 1.0);
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Mat r2 = rhs;
    r2(7, 2) = bad;
    EXPECT_THROW(t.start(r2), InvalidArgument);
  }
}

// The convergence test per column: columns whose recurrence residual is at or below their target
// leave with x_j = c_j·X_a(:, j); the others keep their order in X_a and R.
TEST(BlockCgStep, ConvergedColumnsLeaveWithTheirIterate) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(9, 7);
  const std::int64_t n = a.nrows;
  Bench<double> t(a, 6, CgOptions{});
  auto& cg = *t.cg;
  Mat rhs = random_block(n, 6, 31);
  rhs.col(1) *= 1e200, rhs.col(2) *= 1e-200, rhs.col(3).setZero();
  auto run = t.start(rhs);
  ASSERT_TRUE(cg.begin_cycle(run));
  ASSERT_EQ(cg.act(), (std::vector<std::int64_t>{0, 1, 2, 4, 5}));
  const Mat xa = put(*t.ops, random_block(n, 5, 32), cg.iterate_block(5));
  const Mat r = get(*t.ops, cg.residual_block(5));
  for (std::int64_t j = 0; j < 5; ++j) {
    const std::int64_t c = cg.act()[j];
    cg.norms()[j] = (j == 1 || j == 3) ? cg.target(c) : 2.0 * cg.target(c);  // 1 and 4 pass
  }
  run.it = 7;
  ASSERT_TRUE(cg.retire_converged(run));
  EXPECT_EQ(cg.act(), (std::vector<std::int64_t>{0, 2, 5}));
  EXPECT_EQ(run.na, 3);
  EXPECT_EQ(run.res.column_iterations[1], 7);
  EXPECT_EQ(run.res.column_iterations[4], 7);
  EXPECT_EQ(run.res.column_iterations[0], -1);
  const Mat x = get(*t.ops, t.x.view());
  EXPECT_LE(rel_err(x.col(1), cg.scales()[1] * xa.col(1)), 1e-15);
  EXPECT_LE(rel_err(x.col(4), cg.scales()[4] * xa.col(3)), 1e-15);
  Mat keep_x(n, 3), keep_r(n, 3);
  keep_x << xa.col(0), xa.col(2), xa.col(4);
  keep_r << r.col(0), r.col(2), r.col(4);
  EXPECT_EQ(get(*t.ops, cg.iterate_block(3)), keep_x);
  EXPECT_EQ(get(*t.ops, cg.residual_block(3)), keep_r);
}

// The fp32 rung's refinement step: x += c·d in fp64, R = fp32((b − A·x)/c), a column whose true
// residual passes tol leaves, the others get the target max(tol/2, inner·‖r_j‖/‖b_j‖, 4u)·‖b_j‖.
TEST(BlockCgStep, Fp32RefinementStepAddsTheCorrectionsInFp64) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(9, 7);
  const std::int64_t n = a.nrows;
  CgOptions o;
  o.tol = 1e-4;
  Bench<float> t(a, 3, o);
  auto& cg = *t.cg;
  Mat rhs = random_block(n, 3, 41);
  rhs.col(2) *= 1e30;  // (beyond fp32's range unless scaled)
  auto run = t.start(rhs);
  ASSERT_TRUE(cg.begin_cycle(run));
  EXPECT_EQ(cg.refinements(), 1);
  const Mat xs = t.ad.ldlt().solve(rhs);
  Mat d(n, 3);
  for (int j = 0; j < 3; ++j) d.col(j) = (j == 0 ? 1.0 : 0.6) * xs.col(j) / cg.scales()[j];
  const Mat df = put(*t.ops, d, cg.iterate_block(3));
  ASSERT_TRUE(cg.replace_residuals(run));
  EXPECT_EQ(cg.refinements(), 2);
  EXPECT_EQ(cg.act(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(run.res.column_iterations[0], run.it);
  const Mat x = get(*t.ops, t.x.view());
  for (int j = 0; j < 3; ++j) EXPECT_EQ(x.col(j), cg.scales()[j] * df.col(j)) << "column " << j;
  const Mat r = get(*t.ops, cg.residual_block(2));
  for (int k = 0; k < 2; ++k) {
    const int c = k + 1;
    const Eigen::VectorXd want = (rhs.col(c) - t.ad * x.col(c)) / cg.scales()[c];
    EXPECT_LE(rel_err(r.col(k), want), 2e-7);  // (one fp32 rounding)
    const double rel = want.norm() / cg.scaled_rhs_norms()[c];
    EXPECT_NEAR(cg.norms()[c], rel, 1e-12);
    EXPECT_NEAR(rel, 0.4, 1e-3);
    const double want_target = std::max({0.5 * o.tol, o.inner_reduction * rel, cg::kFloorRel});
    EXPECT_DOUBLE_EQ(cg.target(c), cg.scaled_rhs_norms()[c] * want_target);
  }
}

}  // namespace
}  // namespace tcsolve::test
