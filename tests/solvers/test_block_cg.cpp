// Block CG against a sparse direct solve (Eigen SimplicialLLT): random and nearly linearly
// dependent right-hand sides (the rank-revealing path), Jacobi, many right-hand sides, an
// indefinite matrix (reported as breakdown), real SPD matrices.
#include <gtest/gtest.h>

#include <Eigen/Sparse>
#include <Eigen/SparseCholesky>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "solvers/block_cg.hpp"
#include "spmm/chebyshev_step.hpp"
#include "tests/traps.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;

Eigen::SparseMatrix<double> to_eigen(const Csr<double>& a) {
  std::vector<Eigen::Triplet<double>> t;
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) t.emplace_back(i, a.col_idx[p], a.values[p]);
  Eigen::SparseMatrix<double> s(a.nrows, a.ncols);
  s.setFromTriplets(t.begin(), t.end());
  return s;
}

// Solves, then checks status, the reported and recomputed true residuals, and the distance to
// the direct solution (relative error ≤ cond-scaled tolerance).
// D·A·D with D's entries 10^(±1.5) at random: a badly scaled SPD matrix (Jacobi's case).
Csr<double> badly_scaled(Csr<double> a) {
  std::vector<double> d(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) d[i] = std::pow(10.0, 1.5 * random_entry(8, i, 0));
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) a.values[p] *= d[i] * d[a.col_idx[p]];
  return a;
}

// fp32: the mixed-precision solve (fp32 iterations on A's fp32 step inside fp64 refinement).
SolveResult solve_and_check(const Csr<double>& a, const Mat& b, CgOptions o, double err_tol,
                            bool fp32 = false) {
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  std::unique_ptr<ChebyshevStep> step;
  if (fp32) {
    step = make_chebyshev_step(a, kBackend, Precision::fp32, ops->stream());
    o.step32 = step.get();
  }
  auto r = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
  EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
  Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> llt(to_eigen(a));
  EXPECT_EQ(llt.info(), Eigen::Success);
  Mat xref = llt.solve(b);
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, b.cols());
  auto as = to_eigen(a);
  for (std::int64_t j = 0; j < b.cols(); ++j) {
    const double bn = b.col(j).norm() > 0 ? b.col(j).norm() : 1.0;  // (a zero column: absolute)
    double true_res = (b.col(j) - as * x.col(j)).norm() / bn;
    // (what it reports is what it returns, up to the rounding of A·x: 1 % of tol where κ·2⁻⁵³
    // is near it, as in the κ ≈ 1e8 trap)
    EXPECT_NEAR(true_res, r.residual_norms[j], std::max(1e-12, 1e-2 * o.tol));
    EXPECT_LE(true_res, o.tol) << "column " << j;
    EXPECT_LE((x.col(j) - xref.col(j)).norm(), err_tol * xref.col(j).norm()) << "column " << j;
    EXPECT_GE(r.column_iterations[j], 0);
  }
  return r;
}

TEST(BlockCg, RandomRightHandSidesMatchDirectSolve) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(37, 29);  // cond ≈ 500
  for (std::int64_t s : {1, 7, 33}) {
    CgOptions o;
    o.tol = 1e-10;
    auto r = solve_and_check(a, random_block(a.nrows, s, 40 + s), o, 1e-7);
    EXPECT_GT(r.iterations, 5);
    EXPECT_FALSE(r.history.empty());
  }
}

TEST(BlockCg, ManyRightHandSidesConvergeInFewerIterationsThanOne) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(12, 11, 13);
  CgOptions o;
  o.tol = 1e-9;
  auto one = solve_and_check(a, random_block(a.nrows, 1, 3), o, 1e-6);
  auto many = solve_and_check(a, random_block(a.nrows, 130, 3), o, 1e-6);
  EXPECT_LT(many.iterations, one.iterations);
}

TEST(BlockCg, NearlyDependentRightHandSidesTakeTheRankRevealingPath) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(41, 37);
  const std::int64_t n = a.nrows;
  Mat base = random_block(n, 4, 77);
  Mat b(n, 9);
  b.leftCols(4) = base;
  b.col(4) = base.col(0) + 1e-13 * random_block(n, 1, 78);          // copy up to 1e-13
  b.col(5) = base.col(1) - 2.0 * base.col(2);                      // exact combination
  b.col(6) = base.col(3) + 1e-9 * random_block(n, 1, 79);           // nearly dependent
  b.col(7) = 0.5 * base.col(0) + 0.5 * base.col(3) + 1e-15 * random_block(n, 1, 80);
  b.col(8) = random_block(n, 1, 81);
  CgOptions o;
  o.tol = 1e-9;
  auto r = solve_and_check(a, b, o, 1e-6);
  bool dropped = false;
  for (const auto& h : r.history) dropped = dropped || h.ortho == OrthoBranch::svqb_drop;
  EXPECT_TRUE(dropped) << "the search block never lost rank";
}

// Issue 47: a block as wide as A (s = n − 1, n, n + 1: the search block loses rank or exhausts
// the space after an iteration) and far wider (s = 50·n: chunks of at most n columns) converges,
// every column's true residual below tol, in an iteration or two per chunk; so does the inverse
// of a small SPD matrix (B = I).
TEST(BlockCg, BlocksAsWideAsTheMatrixConverge) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(10, 10);
  const std::int64_t n = a.nrows;
  for (std::int64_t s : {n - 1, n, n + 1, 50 * n}) {
    SCOPED_TRACE("s = " + std::to_string(s));
    CgOptions o;
    auto r = solve_and_check(a, random_block(n, s, 50 + s), o, 1e-6);
    const std::int64_t chunks = (s + n - 1) / n;
    EXPECT_LE(r.iterations, 3 * chunks);
    EXPECT_LT(r.seconds, 10.0);  // (it ran for 43 minutes at 5000 columns)
    std::printf("s = %lld: %lld iterations, %.3f s\n", (long long)s, (long long)r.iterations, r.seconds);
  }
  auto a50 = laplacian(10, 5);
  auto r = solve_and_check(a50, Mat::Identity(a50.nrows, a50.nrows), CgOptions{}, 1e-6);
  EXPECT_LE(r.iterations, 3);
}

// Dependent right-hand sides (copies, a zero column, combinations: rank 4 of 10 columns) are
// deflated: the search block keeps their rank, and the solve takes about the iterations of the
// independent columns alone.
TEST(BlockCg, DependentRightHandSidesAreDeflated) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(20, 20);
  const std::int64_t n = a.nrows;
  Mat base = random_block(n, 4, 91);
  Mat b(n, 10);
  b << base, base.col(0), base.col(1), Mat::Zero(n, 1), base.col(1) - 2.0 * base.col(2),
      0.5 * (base.col(0) + base.col(3)), 3.0 * base.col(3);
  CgOptions o;
  o.tol = 1e-9;
  auto alone = solve_and_check(a, base, o, 1e-6);
  auto r = solve_and_check(a, b, o, 1e-6);
  EXPECT_LE(r.iterations, alone.iterations + 2);
  bool dropped = false;
  for (const auto& h : r.history) dropped = dropped || h.ortho == OrthoBranch::svqb_drop;
  EXPECT_TRUE(dropped);
}

// Issue 47 (finding 5): a tolerance below what fp64 can attain ends at the rounding floor as
// not_converged, saying so (not a breakdown, nor a claim that A is not positive definite).
TEST(BlockCg, ToleranceBelowTheFloorEndsAtTheFloor) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(20, 20, 20);
  Mat b = random_block(a.nrows, 4, 71);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  CgOptions o;
  o.tol = 1e-300;
  auto r = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged) << r.reason;
  EXPECT_NE(r.reason.find("rounding floor"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("tol 1e-300 is below"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("positive definite"), std::string::npos) << r.reason;
  for (double v : r.residual_norms) EXPECT_LE(v, 1e-13);
}

// A residual that becomes exactly zero in one step (A = c·I, or a diagonal A with Jacobi): the
// next search block is zero. The answer of that step is the solution, not a breakdown, and x must
// not be lost (found through tcsolve.cg on identity(60): "no direction left"; 3·I: x = 0).
TEST(BlockCg, ExactConvergenceInOneStepKeepsTheAnswer) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  // kind 0: A = I; 1: A = 3·I; 2: A = diag(1..60) with Jacobi (exact in one step); 3: two
  // distinct eigenvalues, 1 and 2 (exact in two steps).
  for (int kind : {0, 1, 2, 3}) {
    for (std::int64_t s : {1, 3}) {
      SCOPED_TRACE("kind " + std::to_string(kind) + ", s = " + std::to_string(s));
      Csr<double> a;
      a.nrows = a.ncols = 60;
      a.row_ptr.assign(1, 0);
      for (std::int64_t i = 0; i < 60; ++i) {
        a.col_idx.push_back(static_cast<std::int32_t>(i));
        a.values.push_back(kind == 0 ? 1.0 : kind == 1 ? 3.0 : kind == 2 ? static_cast<double>(i + 1) : 1.0 + (i % 2));
        a.row_ptr.push_back(i + 1);
      }
      Mat b = Mat::Ones(60, s);
      if (s > 1) b.col(1) = random_block(60, 1, 5);
      if (s > 2) b.col(2).setZero();
      CgOptions o;
      if (kind == 2) o.jacobi_diagonal = a.values;
      auto r = solve_and_check(a, b, o, 1e-12);
      Eigen::Map<const Mat> x(r.solutions.data(), 60, s);
      Mat want = b;
      for (std::int64_t i = 0; i < 60; ++i) want.row(i) /= a.values[i];
      EXPECT_LE((x - want).norm(), 1e-14 * want.norm());
    }
  }
}

// Columns of very different scale (1e200, 1e-200) converge like the others: the solve runs on
// columns scaled by powers of two, so the iterates are those of the unscaled block, scaled.
TEST(BlockCg, ColumnsOfAnyScaleConvergeAlike) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(20, 20, 20);
  Mat b = random_block(a.nrows, 4, 72);
  Mat b2 = b;
  b2.col(1) *= 1e200;
  b2.col(2) *= 1e-200;
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  CgOptions o;
  auto r1 = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
  auto r2 = block_cg(*op, b2.data(), b2.rows(), b2.cols(), *ops, o);
  ASSERT_EQ(r1.status, SolverStatus::converged) << r1.reason;
  ASSERT_EQ(r2.status, SolverStatus::converged) << r2.reason;
  EXPECT_EQ(r2.iterations, r1.iterations);
  Eigen::Map<const Mat> x1(r1.solutions.data(), a.nrows, 4), x2(r2.solutions.data(), a.nrows, 4);
  const double scale[4] = {1.0, 1e200, 1e-200, 1.0};
  for (int j = 0; j < 4; ++j) {
    EXPECT_LE(r2.residual_norms[j], o.tol) << "column " << j;
    EXPECT_NEAR(r2.residual_norms[j], r1.residual_norms[j], 1e-3 * r1.residual_norms[j]) << "column " << j;
    EXPECT_LE((x2.col(j) / scale[j] - x1.col(j)).norm(), 1e-12 * x1.col(j).norm()) << "column " << j;
  }
}

TEST(BlockCg, JacobiHelpsOnABadlyScaledMatrix) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = badly_scaled(laplacian(30, 31));
  Mat b = random_block(a.nrows, 5, 9);
  CgOptions o;
  o.tol = 1e-9;
  o.max_iterations = 20000;
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  auto plain = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
  o.jacobi_diagonal = diagonal(a);
  auto jac = solve_and_check(a, b, o, 1e-4);
  EXPECT_LT(jac.iterations, plain.iterations);
}

TEST(BlockCg, IndefiniteMatrixIsReportedAsBreakdown) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  // Shift a 1D Laplacian into the middle of its spectrum: indefinite.
  auto a = laplacian(201);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) a.values[p] -= 2.0;
  Mat b = random_block(a.nrows, 3, 5);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  CgOptions o;
  auto r = block_cg(*op, b.data(), b.rows(), 3, *ops, o);
  EXPECT_EQ(r.status, SolverStatus::breakdown);
  EXPECT_NE(r.reason.find("not positive definite"), std::string::npos) << r.reason;
  EXPECT_EQ(r.residual_norms.size(), 3u);  // partial results are still reported
}

// The three orderings of the applies give the same iterates; the stats report the queued device
// path and a traffic budget of about 10 passes over n × s per iteration (no preconditioner).
TEST(BlockCg, ApplyOrderingsAgreeAndStatsAreFilled) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(33, 31, 5);
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.expected_cols = 12;
  oo.stream = ops->stream();
  auto op = make_sparse_operator(a, kBackend, oo);
  Mat b = random_block(a.nrows, 12, 17);
  std::vector<std::int64_t> its;
  for (ApplyOrder ord : {ApplyOrder::synchronize, ApplyOrder::events, ApplyOrder::same_stream}) {
    CgOptions o;
    o.tol = 1e-10;
    o.apply_order = ord;
    o.keep_history = ord == ApplyOrder::events;
    CgStats st;
    o.stats = &st;
    auto r = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
    its.push_back(r.iterations);
    EXPECT_EQ(st.fused_iterations, r.iterations);
    EXPECT_EQ(st.robust_steps, 0);
    EXPECT_GT(st.applies, r.iterations);
    const double per_it = st.dense_budget_words / (double(a.nrows) * 12 * r.iterations);
    EXPECT_GT(per_it, 5.0);
    EXPECT_LT(per_it, 12.0);
    if (o.keep_history) {
      EXPECT_EQ(static_cast<std::int64_t>(r.history.size()), r.iterations);
      EXPECT_GT(st.apply_seconds, 0.0);
    }
  }
  EXPECT_EQ(its[0], its[1]);
  EXPECT_EQ(its[0], its[2]);
}

TEST(BlockCg, BadArgumentsThrow) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(10);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  Mat b = random_block(10, 2, 1);
  EXPECT_THROW(block_cg(*op, b.data(), 10, 0, *ops, {}), InvalidArgument);
  EXPECT_THROW(block_cg(*op, b.data(), 5, 2, *ops, {}), InvalidArgument);
  CgOptions o;
  o.jacobi_diagonal = {1.0, 2.0};
  EXPECT_THROW(block_cg(*op, b.data(), 10, 2, *ops, o), InvalidArgument);
}

class RealSpd : public ::testing::TestWithParam<const char*> {};
TEST_P(RealSpd, MatchesDirectSolve) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  TCSOLVE_SKIP_WITHOUT_MATRIX(GetParam());
  auto a = read_mtx((matrices_dir() / (std::string(GetParam()) + ".mtx")).string());
  CgOptions o;
  o.tol = 1e-10;
  o.max_iterations = 20000;
  o.jacobi_diagonal = diagonal(a);
  auto r = solve_and_check(a, random_block(a.nrows, 8, 5), o, 1e-3);
  RecordProperty("iterations", static_cast<int>(r.iterations));
}
INSTANTIATE_TEST_SUITE_P(Solvers, RealSpd, ::testing::Values("bcsstk05", "bcsstk22", "nos5", "bcsstk08"));

// request_interrupt() (what SIGINT/SIGTERM do in the command): the solve stops at the end of an
// iteration, returns its current solutions with their true residuals and status interrupted.
TEST(BlockCg, InterruptStopsAndReturnsTheCurrentIterate) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(60, 50);
  Mat b = random_block(a.nrows, 4, 5);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  CgOptions o;
  o.tol = 1e-10;
  request_interrupt();
  auto r = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);
  clear_interrupt();
  EXPECT_EQ(r.status, SolverStatus::interrupted) << r.reason;
  EXPECT_NE(r.reason.find("interrupted (on request) after"), std::string::npos) << r.reason;
  EXPECT_LE(r.iterations, 3);
  ASSERT_EQ(r.residual_norms.size(), 4u);
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, 4);
  auto as = to_eigen(a);
  for (int j = 0; j < 4; ++j) {
    const double res = (b.col(j) - as * x.col(j)).norm() / b.col(j).norm();
    EXPECT_NEAR(res, r.residual_norms[j], 1e-12);  // what it reports is what it returns
    EXPECT_GT(res, o.tol);
  }
  auto again = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, o);  // cleared: runs to the end
  EXPECT_EQ(again.status, SolverStatus::converged) << again.reason;
}

// ---- Mixed precision: fp32 iterations inside fp64 refinement (block_cg.hpp).

// The fp64 answer, from fp32 iterations: every column's fp64 true residual below tol, the
// direct solution, and no climb on a well-conditioned A; each refinement step cuts the residual
// by about inner_reduction, so tol 1e-10 takes at least 3 steps; the restarts cost iterations,
// but not many (against the fp64 solve of the same block).
TEST(BlockCgMixed, RefinementReachesTheFp64Answer) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(23, 19, 17);
  for (std::int64_t s : {1, 7, 32}) {
    SCOPED_TRACE("s = " + std::to_string(s));
    CgOptions o;
    o.tol = 1e-10;
    const Mat b = random_block(a.nrows, s, 60 + s);
    auto r64 = solve_and_check(a, b, o, 1e-7);
    auto r = solve_and_check(a, b, o, 1e-7, /*fp32=*/true);
    EXPECT_EQ(r.precision.rfind("fp32 iterations inside fp64 refinement", 0), 0u) << r.precision;
    EXPECT_EQ(r.precision.find("then fp64"), std::string::npos) << r.precision;
    EXPECT_GE(r.refinements, 3);
    EXPECT_EQ(r.fp32_iterations, r.iterations);
    EXPECT_EQ(r64.precision, "fp64");
    EXPECT_LE(r.iterations, 1.5 * r64.iterations + 5) << "fp64: " << r64.iterations;
    std::printf("s = %lld: %lld iterations in %d refinements (fp64: %lld)\n", (long long)s,
                (long long)r.iterations, r.refinements, (long long)r64.iterations);
  }
  // n a multiple of 4 (the GPU's quad kernels: float4 of 4 rows).
  auto a4 = laplacian(24, 19, 17);
  CgOptions o;
  o.tol = 1e-10;
  auto r = solve_and_check(a4, random_block(a4.nrows, 32, 7), o, 1e-7, true);
  EXPECT_EQ(r.precision.find("then fp64"), std::string::npos) << r.precision;
}

// Jacobi on a badly scaled matrix (the fused fp32 residual pass with the row scales).
TEST(BlockCgMixed, JacobiOnABadlyScaledMatrix) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = badly_scaled(laplacian(70, 61));
  CgOptions o;
  o.tol = 1e-9;
  o.max_iterations = 20000;
  o.jacobi_diagonal = diagonal(a);
  auto r = solve_and_check(a, random_block(a.nrows, 5, 9), o, 1e-4, true);
  EXPECT_EQ(r.precision.find("then fp64"), std::string::npos) << r.precision;
  EXPECT_GE(r.refinements, 2);
}

// A that fp32 cannot resolve: a graph Laplacian (A·1 = 0) plus 1e-7·I, κ ≈ 8e7. Rounded to fp32
// the diagonal (2, 3 or 4, ulp ≥ 2.4e-7) loses the shift and fl(A) is singular, so the fp32
// corrections cannot reduce the residual's component along 1: the solve must climb to fp64 and
// still give the fp64 answer (which κ·2⁻⁵³ allows at tol 1e-8).
TEST(BlockCgMixed, ClimbsToFp64WhereFp32CannotResolveA) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(13, 11);
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double off = 0;
    std::int64_t dp = -1;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      if (a.col_idx[p] == i) dp = p;
      else off -= a.values[p];
    }
    a.values[dp] = off + 1e-7;  // degree + 1e-7
  }
  CgOptions o;
  o.tol = 1e-8;
  o.max_iterations = 5000;
  Mat b = random_block(a.nrows, 3, 12);
  auto r64 = solve_and_check(a, b, o, 1e-5);
  auto r = solve_and_check(a, b, o, 1e-5, true);
  std::printf("%s: %lld iterations, %lld in fp32 (fp64 alone: %lld)\n", r.precision.c_str(),
              (long long)r.iterations, (long long)r.fp32_iterations, (long long)r64.iterations);
  EXPECT_NE(r.precision.find("then fp64"), std::string::npos) << r.precision;
  EXPECT_LT(r.fp32_iterations, r.iterations);
  // The fp64 solve starts from the best x reached (a step that made a column worse is undone):
  // it costs no more than the fp64 solve from zero, plus a little.
  EXPECT_LE(r.iterations - r.fp32_iterations, r64.iterations + 10);
}

// The stiffness trap (‖A‖ ≈ 1e10, unit rows for constrained degrees of freedom, Jacobi): the
// answer is right on whichever rung ends the solve.
TEST(BlockCgMixed, ConstrainedStiffnessTrapGivesTheFp64Answer) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = constrained_dofs(14, 7);
  CgOptions o;
  o.tol = 1e-8;
  o.max_iterations = 20000;
  o.jacobi_diagonal = diagonal(a);
  auto r = solve_and_check(a, random_block(a.nrows, 4, 21), o, 1e-3, true);
  RecordProperty("precision", r.precision);
}

// The fp32 rung on blocks as wide as A (chunks, exhausted spaces, a rank-deficient start): the
// fp64 answer, whichever rung ends the solve.
TEST(BlockCgMixed, BlocksAsWideAsTheMatrix) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(4, 5);  // n = 20
  const std::int64_t n = a.nrows;
  for (std::int64_t s : {n - 1, n, std::int64_t{30}}) {
    SCOPED_TRACE("s = " + std::to_string(s));
    CgOptions o;
    o.tol = 1e-10;
    Mat b = random_block(n, s, 80 + s);
    b.col(1) = b.col(0);  // (a dependent pair)
    auto r = solve_and_check(a, b, o, 1e-7, /*fp32=*/true);
    EXPECT_LE(r.iterations, 40) << r.precision;
    std::printf("s = %lld: %lld iterations, %s\n", (long long)s, (long long)r.iterations, r.precision.c_str());
  }
}

TEST(BlockCgMixed, RefusesWhatTheFp32IterationCannotRun) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(10, 10);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  auto step = make_chebyshev_step(a, kBackend, Precision::fp32, ops->stream());
  CgOptions o;
  o.step32 = step.get();
  Mat b = random_block(a.nrows, kCgFp32MaxRhs + 1, 1);
  EXPECT_THROW(block_cg(*op, b.data(), a.nrows, kCgFp32MaxRhs + 1, *ops, o), InvalidArgument);
  o.preconditioner = op.get();  // (any operator other than Jacobi)
  EXPECT_THROW(block_cg(*op, b.data(), a.nrows, 2, *ops, o), InvalidArgument);
}

}  // namespace
}  // namespace tcsolve::test
