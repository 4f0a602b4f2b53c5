// Pseudo-block MINRES against dense solutions (Eigen LU): a shifted 2D Laplacian with its shift
// inside the spectrum (indefinite), a diagonal indefinite matrix with a known solution, a real
// symmetric indefinite matrix of condition 1e10, an SPD matrix against block CG, Jacobi against
// no preconditioner on a badly scaled indefinite matrix, a given preconditioner operator, singular
// systems, honest non-convergence, zero and non-finite right-hand sides, s = 1 and 33, x0, and
// the kernels: the update pass against its formulas, and the CUDA kernels against the CPU ones.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <filesystem>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "io/generators.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/krylov/minres.hpp"
#include "solvers/krylov/minres_kernels.hpp"
#include "solvers/krylov/minres_solver.hpp"
#include "solvers/solver_common.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;

// A − σ·I.
Csr<double> shifted(Csr<double> a, double sigma) {
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) a.values[p] -= sigma;
  return a;
}

// The midpoint of the widest gap between consecutive distinct eigenvalues of the laplacian among
// those at positions [n/3, 2n/3): a shift inside the spectrum, away from every eigenvalue.
double interior_shift(const std::vector<double>& spec) {
  const std::size_t n = spec.size();
  double best = 0.0, sigma = 0.0;
  for (std::size_t i = n / 3; i + 1 < 2 * n / 3; ++i)
    if (spec[i + 1] - spec[i] > best) best = spec[i + 1] - spec[i], sigma = 0.5 * (spec[i] + spec[i + 1]);
  return sigma;
}

Csr<double> diagonal_matrix(const std::vector<double>& d) {
  std::vector<Triplet<double>> t;
  for (std::size_t i = 0; i < d.size(); ++i)
    t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i), d[i]});
  const auto n = static_cast<std::int64_t>(d.size());
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

// D·A·D with D's entries 10^(±1.5) at random: badly scaled (Jacobi's case).
Csr<double> badly_scaled(Csr<double> a) {
  std::vector<double> d(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) d[i] = std::pow(10.0, 1.5 * random_entry(8, i, 0));
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) a.values[p] *= d[i] * d[a.col_idx[p]];
  return a;
}

// ‖b_j − A·x_j‖/‖b_j‖ recomputed on the host (a zero b_j: absolute).
std::vector<double> host_residuals(const Csr<double>& a, const Mat& b, const std::vector<double>& sol) {
  Mat ax(a.nrows, b.cols());
  csr_spmm_reference(a, sol.data(), a.nrows, ax.data(), a.nrows, static_cast<int>(b.cols()));
  std::vector<double> r(b.cols());
  for (std::int64_t j = 0; j < b.cols(); ++j) {
    const double bn = b.col(j).stableNorm();
    r[j] = (b.col(j) - ax.col(j)).stableNorm() / (bn > 0 ? bn : 1.0);
  }
  return r;
}

SolveResult run_minres(const Csr<double>& a, const Mat& b, const KrylovOptions& o, const Mat* x0 = nullptr) {
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  return minres(*op, b.data(), b.rows(), b.cols(), *ops, o, x0 ? x0->data() : nullptr);
}

// Solves, then checks: converged, what it reports is the true residual of what it returns, every
// column within tol, and the distance to the dense LU solution within err_tol (relative).
SolveResult solve_and_check(const Csr<double>& a, const Mat& b, const KrylovOptions& o, double err_tol,
                            const Mat* x0 = nullptr) {
  auto r = run_minres(a, b, o, x0);
  EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
  EXPECT_EQ(r.method, "minres");
  const Mat xref = dense(a).partialPivLu().solve(b);
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, b.cols());
  const auto res = host_residuals(a, b, r.solutions);
  for (std::int64_t j = 0; j < b.cols(); ++j) {
    EXPECT_NEAR(res[j], r.residual_norms[j], std::max(1e-13, 1e-3 * o.tol)) << "column " << j;
    EXPECT_LE(res[j], o.tol) << "column " << j;
    EXPECT_LE((x.col(j) - xref.col(j)).norm(), err_tol * std::max(xref.col(j).norm(), 1e-300))
        << "column " << j;
    EXPECT_GE(r.column_iterations[j], 0) << "column " << j;
  }
  return r;
}

TEST(Minres, ShiftedLaplacianMatchesDenseSolve) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 23, ny = 19;  // n = 437
  const auto spec = laplacian_spectrum(nx, ny);
  const double sigma = interior_shift(spec);
  double gap = 1e300, top = 0;
  for (double l : spec) gap = std::min(gap, std::abs(l - sigma)), top = std::max(top, std::abs(l - sigma));
  ASSERT_GT(gap, 1e-3);
  const auto a = shifted(laplacian(nx, ny), sigma);
  KrylovOptions o;
  o.tol = 1e-10;
  auto r = solve_and_check(a, random_block(a.nrows, 16, 11), o, 1e-10 * top / gap * 10);
  EXPECT_GT(r.iterations, 10);
  EXPECT_FALSE(r.history.empty());
  EXPECT_EQ(r.history.front().residual_norms.size(), 16u);
  EXPECT_GT(r.operator_applies, 16 * 10);
}

// diag(d) with d = ±1, ±2, ...: MINRES's Krylov space holds the solution after as many
// iterations as distinct |d_i| give distinct eigenvalues (n here); x = D⁻¹·b exactly.
TEST(Minres, DiagonalIndefiniteKnownSolution) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 97;
  std::vector<double> d(n);
  for (std::int64_t i = 0; i < n; ++i)
    d[i] = (i % 3 == 0 ? -1.0 : 1.0) * (1.0 + 0.25 * static_cast<double>(i));
  const auto a = diagonal_matrix(d);
  Mat xt = random_block(n, 5, 3);
  const Mat b = Eigen::Map<const Eigen::VectorXd>(d.data(), n).asDiagonal() * xt;
  KrylovOptions o;
  o.tol = 1e-12;
  auto r = run_minres(a, b, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
  Eigen::Map<const Mat> x(r.solutions.data(), n, 5);
  EXPECT_LE((x - xt).norm(), 1e-10 * xt.norm());
  EXPECT_LE(r.iterations, 2 * n);
}

// tumorAntiAngiogenesis_2 (SuiteSparse VDOL; n = 305, symmetric indefinite, 122 zero diagonal
// entries, κ ≈ 1e10, eigenvalues from −115 to 5.2e5 with |λ|min ≈ 5e-5). SciPy's minres
// (tol 1e-10) stops after ~8500 iterations with a true residual of 0.1 while reporting success.
// Here the reported residual is the true one, and the restarts from it (each a step of iterative
// refinement: the recurrence alone drifts to ~1e-7) reach tol 1e-8 with Jacobi in 14323
// iterations (CPU; 1e-10 in 24303; no preconditioner: 1e-6 in 30769).
TEST(Minres, TumorAntiAngiogenesisHonestResiduals) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto path = general_matrices_dir() / "tumorAntiAngiogenesis_2.mtx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  const auto a = read_mtx(path.string());
  ASSERT_EQ(a.nrows, 305);
  const Mat b = random_block(a.nrows, 3, 21);
  KrylovOptions o;
  o.tol = 1e-8;
  o.max_iterations = 30000;
  o.jacobi_diagonal = diagonal(a);
  auto r = run_minres(a, b, o);
  const auto res = host_residuals(a, b, r.solutions);
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(res[j], r.residual_norms[j], 1e-3 * std::max(res[j], 1e-12)) << "column " << j;
    if (r.column_iterations[j] >= 0) EXPECT_LE(res[j], o.tol) << "column " << j;
  }
  RecordProperty("iterations", static_cast<int>(r.iterations));
  EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
}

TEST(Minres, SpdMatrixGivesTheSameAnswerAsBlockCg) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = laplacian(31, 27);
  const Mat b = random_block(a.nrows, 6, 9);
  KrylovOptions o;
  o.tol = 1e-10;
  auto r = solve_and_check(a, b, o, 1e-7);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  CgOptions co;
  co.tol = 1e-10;
  auto cg = block_cg(*op, b.data(), b.rows(), b.cols(), *ops, co);
  ASSERT_EQ(cg.status, SolverStatus::converged) << cg.reason;
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, 6), y(cg.solutions.data(), a.nrows, 6);
  EXPECT_LE((x - y).norm(), 1e-7 * y.norm());
}

TEST(Minres, JacobiBeatsNoPreconditionerOnABadlyScaledIndefiniteMatrix) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 17, ny = 13;
  const double sigma = interior_shift(laplacian_spectrum(nx, ny));
  const auto a = badly_scaled(shifted(laplacian(nx, ny), sigma));
  const Mat b = random_block(a.nrows, 4, 5);
  KrylovOptions o;
  o.tol = 1e-8;
  o.max_iterations = 20000;
  KrylovOptions oj = o;
  oj.jacobi_diagonal = diagonal(a);
  auto plain = run_minres(a, b, o);
  auto jac = solve_and_check(a, b, oj, 1e-3);
  EXPECT_LT(2 * jac.iterations, plain.iterations)
      << "Jacobi " << jac.iterations << ", none " << plain.iterations;
}

// A preconditioner given as an operator (here the same Jacobi M⁻¹ = diag(1/|a_ii|) as a sparse
// operator: the general path, U and Z stored apart, M applied each iteration) makes the same
// iterates as the Jacobi path up to rounding.
TEST(Minres, GivenPreconditionerMatchesJacobi) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 17, ny = 13;
  const double sigma = interior_shift(laplacian_spectrum(nx, ny));
  const auto a = badly_scaled(shifted(laplacian(nx, ny), sigma));
  const Mat b = random_block(a.nrows, 3, 6);
  KrylovOptions oj;
  oj.tol = 1e-8;
  oj.max_iterations = 20000;
  oj.jacobi_diagonal = diagonal(a);
  auto jac = solve_and_check(a, b, oj, 1e-3);
  std::vector<double> minv(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) minv[i] = 1.0 / std::abs(oj.jacobi_diagonal[i]);
  auto m = make_operator(diagonal_matrix(minv));
  KrylovOptions og = oj;
  og.jacobi_diagonal.clear();
  og.preconditioner = m.get();
  auto gen = solve_and_check(a, b, og, 1e-3);
  EXPECT_NEAR(static_cast<double>(gen.iterations), static_cast<double>(jac.iterations),
              0.02 * jac.iterations + 2);
}

// The recurrence's estimate (φ̄, or ‖r‖ of R with a preconditioner) is the residual of the
// iterate it describes: the last record's estimate matches the true residual of the answer, for
// each preconditioning mode, on a matrix where MINRES needs no restart.
TEST(Minres, RecurrenceEstimateTracksTheTrueResidual) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 17, ny = 13;
  const auto a0 = shifted(laplacian(nx, ny), interior_shift(laplacian_spectrum(nx, ny)));
  const auto a1 = badly_scaled(a0);
  const Mat b = random_block(a0.nrows, 1, 8);
  std::vector<double> minv(a1.nrows);
  for (std::int64_t i = 0; i < a1.nrows; ++i) minv[i] = 1.0 / std::abs(diagonal(a1)[i]);
  auto m = make_operator(diagonal_matrix(minv));
  for (int mode = 0; mode < 3; ++mode) {
    const auto& a = mode == 0 ? a0 : a1;  // (badly scaled for the preconditioned modes)
    KrylovOptions o;
    o.tol = 1e-7;
    o.max_iterations = 50000;
    if (mode == 1) o.jacobi_diagonal = diagonal(a1);
    if (mode == 2) o.preconditioner = m.get();
    auto r = run_minres(a, b, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
    ASSERT_FALSE(r.history.empty());
    const double est = r.history.back().residual_norms.at(0), truth = r.residual_norms[0] * b.norm();
    EXPECT_NEAR(est / truth, 1.0, 0.2) << "mode " << mode << ": estimate " << est << ", true " << truth;
  }
}

// Columns that cannot converge within max_iterations are not_converged, named in the reason with
// their true residuals; a column is never reported converged with a true residual above tol.
TEST(Minres, IterationLimitIsReportedHonestly) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 23, ny = 19;
  const auto a = shifted(laplacian(nx, ny), interior_shift(laplacian_spectrum(nx, ny)));
  Mat b = random_block(a.nrows, 3, 12);
  b.col(1).setZero();
  b(5, 1) = 1.0;  // (still a hard right-hand side)
  KrylovOptions o;
  o.tol = 1e-10;
  o.max_iterations = 25;
  auto r = run_minres(a, b, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged);
  EXPECT_NE(r.reason.find("iteration limit 25"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("column 0"), std::string::npos) << r.reason;
  EXPECT_EQ(r.iterations, 25);
  const auto res = host_residuals(a, b, r.solutions);
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(res[j], r.residual_norms[j], 1e-12) << "column " << j;
    EXPECT_GT(res[j], o.tol);
    EXPECT_LT(res[j], 1.0);  // MINRES never increases the residual
    EXPECT_EQ(r.column_iterations[j], -1);
  }
}

// tol below fp64's reach: the columns stagnate at their rounding floor u·‖A‖·‖x‖/‖b‖ after a
// restart that gains nothing, and the reason says so (no endless restarts).
TEST(Minres, ToleranceBelowTheRoundingFloorIsReported) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 19, ny = 17;
  const auto a = shifted(laplacian(nx, ny), interior_shift(laplacian_spectrum(nx, ny)));
  const Mat b = random_block(a.nrows, 2, 44);
  KrylovOptions o;
  o.tol = 1e-10;
  auto ok = solve_and_check(a, b, o, 1e-5);
  o.tol = 1e-18;
  auto r = run_minres(a, b, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged);
  EXPECT_NE(r.reason.find("stagnated"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("below what fp64 can attain"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("column 1"), std::string::npos) << r.reason;
  for (int j = 0; j < 2; ++j) EXPECT_LT(r.residual_norms[j], 1e-13);
  EXPECT_LT(r.iterations, 4 * ok.iterations);
  RecordProperty("reason", r.reason);
}

// An easy column (an eigenvector: one iteration) converges while the others hit the limit.
TEST(Minres, EasyColumnConvergesWhileOthersHitTheLimit) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 71;
  std::vector<double> d(n);
  for (std::int64_t i = 0; i < n; ++i)
    d[i] = (i % 2 ? -1.0 : 1.0) * std::pow(1.2, static_cast<double>(i % 37));
  const auto a = diagonal_matrix(d);
  Mat b = random_block(n, 3, 4);
  b.col(2).setZero();
  b(7, 2) = 3.0;
  KrylovOptions o;
  o.tol = 1e-10;
  o.max_iterations = 12;
  auto r = run_minres(a, b, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged);
  EXPECT_LE(r.residual_norms[2], o.tol);
  EXPECT_GE(r.column_iterations[2], 0);
  EXPECT_LE(r.column_iterations[2], 2);
  EXPECT_EQ(r.column_iterations[0], -1);
  EXPECT_NE(r.reason.find("2 of 3 columns"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("column 2:"), std::string::npos) << r.reason;
}

TEST(Minres, ZeroRightHandSideColumnGivesZero) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = shifted(laplacian(13, 11), 2.5);
  Mat b = random_block(a.nrows, 3, 2);
  b.col(1).setZero();
  Mat x0 = Mat::Constant(a.nrows, 3, 0.5);  // (a nonzero guess for the zero column too)
  KrylovOptions o;
  o.tol = 1e-10;
  auto r = solve_and_check(a, b, o, 1e-6, &x0);
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, 3);
  EXPECT_EQ(x.col(1).norm(), 0.0);
  EXPECT_EQ(r.residual_norms[1], 0.0);
}

TEST(Minres, NonFiniteRightHandSideIsRejected) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = shifted(laplacian(9, 8), 2.5);
  Mat b = random_block(a.nrows, 2, 2);
  b(4, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(run_minres(a, b, KrylovOptions{}), InvalidArgument);
  b(4, 1) = std::numeric_limits<double>::infinity();
  EXPECT_THROW(run_minres(a, b, KrylovOptions{}), InvalidArgument);
}

// Columns of 1e200 and 1e-200 converge like the others (power-of-two column scales).
TEST(Minres, ExtremeScalesConverge) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = shifted(laplacian(13, 11), 2.5);
  Mat b = random_block(a.nrows, 3, 7);
  b.col(0) *= 1e200;
  b.col(2) *= 1e-200;
  KrylovOptions o;
  o.tol = 1e-10;
  solve_and_check(a, b, o, 1e-7);
}

TEST(Minres, OneAndThirtyThreeRightHandSides) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 19, ny = 17;
  const auto a = shifted(laplacian(nx, ny), interior_shift(laplacian_spectrum(nx, ny)));
  KrylovOptions o;
  o.tol = 1e-9;
  auto one = solve_and_check(a, random_block(a.nrows, 1, 30), o, 1e-4);
  auto many = solve_and_check(a, random_block(a.nrows, 33, 30), o, 1e-4);
  // (the same first column: the recurrences are independent, so it takes the same iterations up to
  // the rounding of an SpMM kernel that may differ with the block width on the GPU)
  EXPECT_NEAR(static_cast<double>(one.column_iterations[0]), static_cast<double>(many.column_iterations[0]),
              0.03 * static_cast<double>(one.column_iterations[0]) + 2.0);
}

TEST(Minres, InitialGuessIsUsed) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 19, ny = 17;
  const auto a = shifted(laplacian(nx, ny), interior_shift(laplacian_spectrum(nx, ny)));
  const Mat b = random_block(a.nrows, 4, 31);
  KrylovOptions o;
  o.tol = 1e-10;
  auto cold = solve_and_check(a, b, o, 1e-5);
  Mat x0 = dense(a).partialPivLu().solve(b);
  x0 += 1e-6 * random_block(a.nrows, 4, 32);
  auto warm = solve_and_check(a, b, o, 1e-5, &x0);
  EXPECT_LT(warm.iterations, cold.iterations);
  Mat exact = dense(a).partialPivLu().solve(b);  // within tol at once: no iteration
  auto none = solve_and_check(a, b, o, 1e-5, &exact);
  EXPECT_EQ(none.iterations, 0);
}

// Singular A = diag(d) with zeros. b in A's range: converged. b with a component in A's null
// space: no x reaches tol; MINRES reaches the least-squares residual ‖b_null‖, and the reason says
// the system is inconsistent.
TEST(Minres, SingularSystems) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 61;
  std::vector<double> d(n);
  for (std::int64_t i = 0; i < n; ++i)
    d[i] = i % 10 == 3 ? 0.0 : (i % 2 ? -1.0 : 2.0) * (1.0 + 0.1 * static_cast<double>(i));
  const auto a = diagonal_matrix(d);
  Mat b = random_block(n, 2, 17);
  for (std::int64_t i = 0; i < n; ++i)
    if (d[i] == 0.0) b(i, 0) = 0.0;  // column 0 consistent, column 1 not
  KrylovOptions o;
  o.tol = 1e-10;
  auto r = run_minres(a, b, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged);
  EXPECT_LE(r.residual_norms[0], o.tol);
  double bnull = 0.0;
  for (std::int64_t i = 0; i < n; ++i)
    if (d[i] == 0.0) bnull += b(i, 1) * b(i, 1);
  EXPECT_NEAR(r.residual_norms[1], std::sqrt(bnull) / b.col(1).norm(), 1e-8);
  EXPECT_NE(r.reason.find("column 1"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.reason.find("least-squares") != std::string::npos ||
              r.reason.find("singular") != std::string::npos)
      << r.reason;
  EXPECT_LT(r.iterations, 1000);
  RecordProperty("reason", r.reason);
}

TEST(Minres, InterruptStopsAndReturnsTheCurrentIterate) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const auto a = shifted(laplacian(40, 30), 1.3);
  const Mat b = random_block(a.nrows, 4, 5);
  KrylovOptions o;
  o.tol = 1e-10;
  request_interrupt();
  auto r = run_minres(a, b, o);
  clear_interrupt();
  EXPECT_EQ(r.status, SolverStatus::interrupted) << r.reason;
  EXPECT_NE(r.reason.find("interrupted (on request) after"), std::string::npos) << r.reason;
  const auto res = host_residuals(a, b, r.solutions);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(res[j], r.residual_norms[j], 1e-12);
  auto again = run_minres(a, b, o);
  EXPECT_EQ(again.status, SolverStatus::converged) << again.reason;
}

// Timing (run with --gtest_also_run_disabled_tests): gen:lap2d:1000 − σ·I (10⁶ rows, σ = 1.0 + a
// quarter of the grid's eigenvalue spacing: inside the spectrum, away from eigenvalues), 32 random
// right-hand sides, a fixed number of iterations (TCSOLVE_MINRES_BENCH_ITERS, default 50; MINRES
// needs ~10⁵ here); prints the seconds per iteration and its split into the apply and the dense
// passes (12 without preconditioner, 14 with Jacobi: minres.cpp), no preconditioner and Jacobi.
TEST(Minres, DISABLED_ShiftedLaplacian1MTiming) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const char* e = std::getenv("TCSOLVE_MINRES_BENCH_ITERS");
  const std::int64_t iters = e ? std::atoll(e) : 50;
  const auto a = shifted(generate("gen:lap2d:1000"), 1.0 + 0.25 * 8.0 / (1001.0 * 1001.0));
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  const std::int64_t n = a.nrows, s = 32;
  MultiVector<double> b = ops->allocate(n, s), x = ops->allocate(n, s);
  ops->fill_random(b.view(), 1);
  for (bool jacobi : {false, true}) {
    KrylovOptions o;
    o.tol = 1e-10;
    o.max_iterations = iters;
    if (jacobi) o.jacobi_diagonal.assign(n, 4.0 - 1.0), o.jacobi_diagonal[0] = 2.0;  // (not constant)
    BlockMinres solver(*op, *ops, s, o);
    ops->synchronize();
    const double t0 = detail::now_seconds();
    auto r = solver.solve(b.view(), x.view(), false);
    ops->synchronize();
    const double t = detail::now_seconds() - t0;
    double ap = 0.0, de = 0.0;
    for (const auto& h : r.history) ap += h.apply_seconds, de += h.dense_seconds;
    const double it = static_cast<double>(r.iterations);
    std::printf(
        "minres %s: n = %lld, s = %lld, %lld iterations in %.3f s (with the set-up and 2 true-residual "
        "applies): %.4f s per iteration; in the iterations' stream marks %.4f s apply + %.4f s dense work\n",
        jacobi ? "jacobi" : "none", static_cast<long long>(n), static_cast<long long>(s),
        static_cast<long long>(r.iterations), t, t / it, ap / it, de / it);
    EXPECT_EQ(r.iterations, iters);
  }
}

// ---- the steps

// After iteration t the block holds x_{t−1} (its x update waits for β_{t+1}): with a
// preconditioner R = B − A·X_a exactly (up to rounding), and without one the estimate φ̄_{t−1}
// of iteration t − 1's record is ‖B − A·X_a‖ (columns scaled by 1/c_j).
TEST(MinresSteps, IterateResidualAndEstimateStayConsistent) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 17, ny = 13;
  const auto a = badly_scaled(shifted(laplacian(nx, ny), interior_shift(laplacian_spectrum(nx, ny))));
  const std::int64_t n = a.nrows, s = 3, t = 30;
  const Mat b = 1e3 * random_block(n, s, 41);
  std::vector<double> minv(n);
  for (std::int64_t i = 0; i < n; ++i) minv[i] = 1.0 / std::abs(diagonal(a)[i]);
  auto op = make_operator(a);
  auto m = make_operator(diagonal_matrix(minv));
  for (int mode = 0; mode < 3; ++mode) {
    auto ops = make_dense_ops(kBackend);
    KrylovOptions o;
    o.tol = 1e-14;
    if (mode == 1) o.jacobi_diagonal = diagonal(a);
    if (mode == 2) o.preconditioner = m.get();
    mr::MinresSolver solver(*op, *ops, s, o);
    MultiVector<double> bd = ops->allocate(n, s), xd = ops->allocate(n, s);
    ops->from_host(b.data(), n, bd.view());
    auto run = solver.start(bd.view(), xd.view(), false);
    ASSERT_TRUE(solver.begin_cycle(run));
    for (std::int64_t k = 0; k < t; ++k) solver.queue_iteration(run);
    solver.drain(run);
    ASSERT_EQ(run.na, s);
    ASSERT_EQ(static_cast<std::int64_t>(run.res.history.size()), t);
    Mat xa(n, s), rr(n, s), ax(n, s);
    ops->to_host(solver.iterate_block(s), xa.data(), n);
    csr_spmm_reference(a, xa.data(), n, ax.data(), n, static_cast<int>(s));
    if (mode > 0) ops->to_host(solver.residual_block(s), rr.data(), n);
    for (std::int64_t j = 0; j < s; ++j) {
      const double c = solver.scales()[solver.act()[j]];
      const Eigen::VectorXd truth = b.col(j) / c - ax.col(j);
      if (mode > 0) {
        EXPECT_LE((rr.col(j) - truth).norm(), 1e-9 * truth.norm()) << "mode " << mode << " column " << j;
      } else {
        const double est = run.res.history[t - 2].residual_norms[j] / c;
        EXPECT_NEAR(est / truth.norm(), 1.0, 1e-9) << "column " << j;
      }
    }
  }
}

// ---- the kernels

// Random blocks and scalars in the backend's space (the same values on every backend).
struct KernelCase {
  std::int64_t n = 1000, na = 5;
  std::vector<Mat> blocks;  // q, zc, zp, uc, up, wp, w, x, r
  Eigen::VectorXd d, dinv;
  Mat s;
  KernelCase() {
    for (int k = 0; k < 9; ++k) blocks.push_back(random_block(n, na, 100 + k));
    d = (random_block(n, 1, 99).array().abs() + 0.5).matrix();
    dinv = d.cwiseInverse();
    s = 0.5 * (random_block(mr::kFields, na, 98).array() + 1.0).matrix();
    for (std::int64_t j = 0; j < na; ++j) s(mr::kState, j) = j == 3 ? mr::kFinishing : mr::kActive;
    s(mr::kState, 4) = mr::kDone;
  }
};

// Runs the update pass on a KernelCase with `kern` (blocks moved to ops' space) and returns the
// blocks and S after it.
std::pair<std::vector<Mat>, Mat> run_update(mr::MinresKernels& kern, DenseBlockOps& ops, const KernelCase& kc,
                                            bool general, bool with_r, bool jacobi) {
  std::vector<MultiVector<double>> dev;
  for (const Mat& m : kc.blocks) {
    dev.push_back(ops.allocate(kc.n, kc.na));
    ops.from_host(m.data(), kc.n, dev.back().view());
  }
  MultiVector<double> d = ops.allocate(kc.n, 1), dinv = ops.allocate(kc.n, 1),
                      s = ops.allocate(mr::kFields, kc.na);
  ops.from_host(kc.d.data(), kc.n, d.view());
  ops.from_host(kc.dinv.data(), kc.n, dinv.view());
  ops.from_host(kc.s.data(), mr::kFields, s.view());
  mr::UpdateBlocks b;
  b.q = dev[0].view(), b.zc = dev[1].view(), b.zp = dev[2].view();
  if (general) b.uc = dev[3].view(), b.up = dev[4].view();
  b.wp = dev[5].view(), b.w = dev[6].view(), b.x = dev[7].view();
  if (with_r) b.r = dev[8].view();
  if (jacobi) b.d = d.data(), b.dinv = dinv.data();
  kern.update(b, s.view());
  std::vector<Mat> out;
  for (auto& m : dev) {
    out.emplace_back(kc.n, kc.na);
    ops.to_host(m.view(), out.back().data(), kc.n);
  }
  Mat so(mr::kFields, kc.na);
  ops.to_host(s.view(), so.data(), mr::kFields);
  return {out, so};
}

// The update pass against its formulas (minres_kernels.hpp), column by column, each mode.
TEST(MinresKernels, UpdatePassFollowsItsFormulas) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  using namespace mr;
  auto ops = make_dense_ops(kBackend);
  auto kern = make_minres_kernels(*ops, 1000, 5);
  KernelCase kc;
  for (int mode = 0; mode < 8; ++mode) {
    const bool general = mode & 4, with_r = mode & 2, jacobi = (mode & 1) && !general;
    auto [out, so] = run_update(*kern, *ops, kc, general, with_r, jacobi);
    const auto& in = kc.blocks;
    for (std::int64_t j = 0; j < kc.na; ++j) {
      const auto c = kc.s.col(j);
      const Eigen::VectorXd one = Eigen::VectorXd::Ones(kc.n);
      const Eigen::VectorXd dv = jacobi ? kc.d : one, di = jacobi ? kc.dinv : one;
      if (c(kState) == kDone) {
        for (int k = 0; k < 9; ++k) EXPECT_EQ((out[k].col(j) - in[k].col(j)).norm(), 0.0);
        continue;
      }
      const Eigen::VectorXd wn = c(kWv) * in[2].col(j) - c(kWe) * in[5].col(j) - c(kWd) * in[6].col(j);
      const double tol = 1e-13 * (1.0 + wn.norm());
      EXPECT_NEAR((out[5].col(j) - wn).norm(), 0.0, tol) << "mode " << mode << " column " << j;
      EXPECT_NEAR((out[7].col(j) - (in[7].col(j) + c(kPhi) * wn)).norm(), 0.0, tol);
      if (with_r) {
        const Eigen::VectorXd u =
            general ? Eigen::VectorXd(in[3].col(j)) : Eigen::VectorXd(dv.cwiseProduct(in[1].col(j)));
        const Eigen::VectorXd rn = c(kRs) * in[8].col(j) + c(kRu) * u;
        EXPECT_NEAR((out[8].col(j) - rn).norm(), 0.0, 1e-13 * rn.norm());
        EXPECT_NEAR(so(kRr, j), rn.squaredNorm(), 1e-12 * rn.squaredNorm());
      }
      if (c(kState) != kActive) {
        EXPECT_EQ((out[general ? 4 : 2].col(j) - in[general ? 4 : 2].col(j)).norm(), 0.0);
        continue;
      }
      if (general) {
        const Eigen::VectorXd un = c(kRc) * in[0].col(j) - c(kA) * in[3].col(j) - c(kB) * in[4].col(j);
        EXPECT_NEAR((out[4].col(j) - un).norm(), 0.0, 1e-13 * un.norm());
      } else {
        const Eigen::VectorXd zn =
            c(kRc) * di.cwiseProduct(in[0].col(j)) - c(kA) * in[1].col(j) - c(kB) * in[2].col(j);
        EXPECT_NEAR((out[2].col(j) - zn).norm(), 0.0, 1e-13 * zn.norm());
        const double b2 = zn.dot(dv.cwiseProduct(zn));
        EXPECT_NEAR(so(kNrm, j), b2, 1e-12 * b2);
      }
    }
  }
}

// CUDA kernels against the CPU reference on the same random data (GPU binary only).
TEST(MinresKernels, CudaIsEquivalentToCpuReference) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  if (kBackend == Backend::cpu) GTEST_SKIP() << "the CPU binary has only the reference";
  using namespace mr;
  auto cpu_ops = make_dense_ops(Backend::cpu);
  auto gpu_ops = make_dense_ops(kBackend);
  auto cpu = make_cpu_minres_kernels();
  auto gpu = make_minres_kernels(*gpu_ops, 1000, 5);
  KernelCase kc;
  for (int mode = 0; mode < 8; ++mode) {
    const bool general = mode & 4, with_r = mode & 2, jacobi = (mode & 1) && !general;
    auto [oc, sc] = run_update(*cpu, *cpu_ops, kc, general, with_r, jacobi);
    auto [og, sg] = run_update(*gpu, *gpu_ops, kc, general, with_r, jacobi);
    for (int k = 0; k < 9; ++k)
      EXPECT_LE((oc[k] - og[k]).norm(), 1e-13 * (1.0 + oc[k].norm())) << "mode " << mode;
    EXPECT_LE((sc - sg).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + sc.cwiseAbs().maxCoeff())) << "mode " << mode;
  }
  // The dot pass with each step, then the rotation, on the same S.
  for (DotStep step : {DotStep::start, DotStep::coefficients}) {
    Mat sres[2];
    int k = 0;
    for (auto* pair : {&cpu_ops, &gpu_ops}) {
      DenseBlockOps& ops = **pair;
      MinresKernels& kern = k == 0 ? *cpu : *gpu;
      MultiVector<double> z = ops.allocate(kc.n, kc.na), q = ops.allocate(kc.n, kc.na),
                          y = ops.allocate(kc.n, kc.na);
      MultiVector<double> d = ops.allocate(kc.n, 1), s = ops.allocate(kFields, kc.na);
      ops.from_host(kc.blocks[1].data(), kc.n, z.view());
      ops.from_host(kc.blocks[0].data(), kc.n, q.view());
      ops.from_host(kc.blocks[2].data(), kc.n, y.view());
      ops.from_host(kc.d.data(), kc.n, d.view());
      ops.from_host(kc.s.data(), kFields, s.view());
      const ScalarParams p{true, 1e-11};
      kern.dots(z.view(), q.view(), y.view(), d.data(), s.view(), step, p);
      kern.rotate(s.view(), {}, p);
      kern.finish_all(s.view());
      sres[k] = Mat(kFields, kc.na);
      ops.to_host(s.view(), sres[k].data(), kFields);
      ++k;
    }
    EXPECT_LE((sres[0] - sres[1]).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + sres[0].cwiseAbs().maxCoeff()));
  }
}

}  // namespace
}  // namespace tcsolve::test
