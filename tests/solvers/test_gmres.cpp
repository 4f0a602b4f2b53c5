// Pseudo-block GMRES(m) against dense LU (Eigen PartialPivLU): 2D convection–diffusion (central
// and upwind differences), a non-normal nearly triangular matrix, SuiteSparse unsymmetric
// matrices (../shared/matrices/general), short restarts down to m = 1, columns that cannot
// converge, zero and badly scaled right-hand sides, s = 1 and s = 33, an initial guess, happy
// breakdowns; and the kernels alone against Eigen (on the backend under test: the CUDA kernels in
// test_solvers_gpu).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "solvers/krylov/gmres.hpp"
#include "solvers/krylov/gmres_kernels.hpp"
#include "solvers/krylov/gmres_solver.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;

// −Δu + w·∇u on the unit square, nx × ny interior points (h = 1/(nx + 1) in x), Dirichlet
// boundaries, scaled by h²; w = peclet·(cos 30°, sin 30°) (peclet = |w|·L/ε, ε = 1). Central
// differences (upwind = false): off-diagonals −1 ± h·w/2 (cell Péclet h·|w|/2, unsymmetric, not an
// M-matrix above 1); first-order upwind: the convection term on the upstream side only (diagonal
// 4 + h·(|w_x| + |w_y|)), an M-matrix at any Péclet number.
Csr<double> convection_diffusion(int nx, int ny, double peclet, bool upwind) {
  const double hx = 1.0 / (nx + 1), hy = 1.0 / (ny + 1);
  const double wx = peclet * std::cos(kPi / 6), wy = peclet * std::sin(kPi / 6);
  std::vector<Triplet<double>> t;
  auto id = [&](int i, int j) { return i + nx * j; };
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      const int r = id(i, j);
      // (per direction, scaled by h_x² resp. h_y² — the grid may be anisotropic)
      double west = -1.0, east = -1.0, south = -1.0, north = -1.0, diag = 4.0;
      if (upwind) {
        west -= hx * wx, diag += hx * wx;  // w_x > 0: backward difference
        south -= hy * wy, diag += hy * wy;
      } else {
        west -= 0.5 * hx * wx, east += 0.5 * hx * wx;
        south -= 0.5 * hy * wy, north += 0.5 * hy * wy;
      }
      t.push_back({r, r, diag});
      if (i > 0) t.push_back({r, id(i - 1, j), west});
      if (i + 1 < nx) t.push_back({r, id(i + 1, j), east});
      if (j > 0) t.push_back({r, id(i, j - 1), south});
      if (j + 1 < ny) t.push_back({r, id(i, j + 1), north});
    }
  const std::int64_t n = std::int64_t(nx) * ny;
  return csr_from_triplets<double>(n, n, std::move(t));
}

// True relative residuals ‖b_j − A·x_j‖/‖b_j‖ (absolute for b_j = 0), in long double sums; and
// (when floor) the rounding of an fp64 evaluation, 1e-14·‖|A|·|x_j|‖/‖b_j‖ (about 50 u).
std::vector<double> true_residuals(const Csr<double>& a, const Mat& b, const double* x,
                                   std::vector<double>* floor = nullptr) {
  const std::int64_t n = a.nrows, s = b.cols();
  std::vector<double> out(s);
  if (floor) floor->assign(s, 0.0);
  for (std::int64_t j = 0; j < s; ++j) {
    long double rr = 0, bb = 0, aa = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      long double ax = 0, abs_ax = 0;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        ax += static_cast<long double>(a.values[p]) * x[a.col_idx[p] + j * n];
        abs_ax += std::abs(static_cast<long double>(a.values[p]) * x[a.col_idx[p] + j * n]);
      }
      const long double d = b(i, j) - ax;
      rr += d * d;
      aa += abs_ax * abs_ax;
      bb += static_cast<long double>(b(i, j)) * b(i, j);
    }
    const long double bn = bb > 0 ? std::sqrt(bb) : 1.0L;
    out[j] = static_cast<double>(std::sqrt(rr) / bn);
    if (floor) (*floor)[j] = static_cast<double>(1e-14L * std::sqrt(aa) / bn);
  }
  return out;
}

SolveResult run_gmres(const Csr<double>& a, const Mat& b, const KrylovOptions& o, const Mat* x0 = nullptr) {
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  return gmres(*op, b.data(), b.rows(), b.cols(), *ops, o, x0 ? x0->data() : nullptr);
}

// Checks what a solve reports against what it returns: the reported true residuals are the
// recomputed ones, a converged column passes tol and has its iteration, a column that did not
// converge says so (column_iterations −1, residual above tol). Returns the recomputed residuals.
std::vector<double> check_report(const Csr<double>& a, const Mat& b, const SolveResult& r, double tol) {
  EXPECT_EQ(r.solutions.size(), static_cast<std::size_t>(a.nrows * b.cols()));
  EXPECT_EQ(r.residual_norms.size(), static_cast<std::size_t>(b.cols()));
  EXPECT_EQ(r.column_iterations.size(), static_cast<std::size_t>(b.cols()));
  EXPECT_EQ(r.method.rfind("gmres(", 0), 0u) << r.method;
  std::vector<double> floor;
  auto tr = true_residuals(a, b, r.solutions.data(), &floor);
  for (std::int64_t j = 0; j < b.cols(); ++j) {
    EXPECT_NEAR(tr[j], r.residual_norms[j], 1e-3 * tr[j] + floor[j]) << "column " << j;
    if (r.column_iterations[j] >= 0) {
      EXPECT_LE(tr[j], tol) << "column " << j << " reported converged";
      EXPECT_LE(r.column_iterations[j], r.iterations);
    } else {
      EXPECT_GT(tr[j], tol) << "column " << j;
    }
  }
  if (r.status == SolverStatus::converged)
    for (std::int64_t j = 0; j < b.cols(); ++j) EXPECT_GE(r.column_iterations[j], 0) << "column " << j;
  return tr;
}

// Solves, expects convergence, and compares with dense LU: ‖x_j − x*_j‖ ≤ err_tol·‖x*_j‖.
SolveResult solve_and_check(const Csr<double>& a, const Mat& b, const KrylovOptions& o, double err_tol,
                            const Mat* x0 = nullptr) {
  auto r = run_gmres(a, b, o, x0);
  EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
  check_report(a, b, r, o.tol);
  Eigen::PartialPivLU<Mat> lu(dense(a));
  Mat xref = lu.solve(b);
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, b.cols());
  for (std::int64_t j = 0; j < b.cols(); ++j)
    EXPECT_LE((x.col(j) - xref.col(j)).norm(), err_tol * std::max(xref.col(j).norm(), 1e-300))
        << "column " << j;
  return r;
}

KrylovOptions options(double tol, int m, const Csr<double>* jacobi = nullptr) {
  KrylovOptions o;
  o.tol = tol;
  o.restart = m;
  if (jacobi) o.jacobi_diagonal = diagonal(*jacobi);
  return o;
}

// ---- against dense LU -------------------------------------------------------------------------

TEST(Gmres, ConvectionDiffusionCentralMatchesDenseLU) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(37, 29, 10.0, false);  // 1073 rows
  auto r = solve_and_check(a, random_block(a.nrows, 16, 1), options(1e-10, 30), 1e-7);
  EXPECT_GT(r.iterations, 30);  // (restarted at least once)
  EXPECT_FALSE(r.history.empty());
  EXPECT_EQ(r.method, "gmres(30)");
  std::printf("central Pe 10, 16 rhs: %lld iterations, %lld applies\n", (long long)r.iterations,
              (long long)r.operator_applies);
}

TEST(Gmres, ConvectionDiffusionUpwindWithJacobiMatchesDenseLU) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(41, 27, 400.0, true);  // 1107 rows, cell Péclet ≈ 4.7
  auto r = solve_and_check(a, random_block(a.nrows, 16, 2), options(1e-10, 30, &a), 1e-7);
  std::printf("upwind Pe 400, Jacobi, 16 rhs: %lld iterations\n", (long long)r.iterations);
}

// A strongly non-normal matrix: upper bidiagonal (diagonal in [1, 2], superdiagonal −1.5) plus a
// second superdiagonal and a weak subdiagonal. Its eigenvalues lie in [1, 2] but ‖A^k‖ grows
// like 1.5^k: GMRES plateaus before it converges.
Csr<double> non_normal(int n) {
  std::vector<Triplet<double>> t;
  for (int i = 0; i < n; ++i) {
    t.push_back({i, i, 1.5 + 0.5 * random_entry(3, i, 0)});
    if (i + 1 < n) t.push_back({i, i + 1, -1.5});
    if (i + 2 < n) t.push_back({i, i + 2, 0.3});
    if (i > 0) t.push_back({i, i - 1, 0.05});
  }
  return csr_from_triplets<double>(n, n, std::move(t));
}

TEST(Gmres, NonNormalMatrixMatchesDenseLU) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = non_normal(301);
  KrylovOptions o = options(1e-10, 40);
  o.max_iterations = 20000;
  auto r = solve_and_check(a, random_block(a.nrows, 5, 4), o, 1e-6);
  std::printf("non-normal n = 301: %lld iterations\n", (long long)r.iterations);
}

// SuiteSparse unsymmetric matrices that GMRES(m) with Jacobi can solve, and (honestly) what it
// reaches on those it cannot.
std::filesystem::path general_matrix(const std::string& name) {
  return general_matrices_dir() / name;
}

Csr<double> general_or_skip(const std::string& name, bool& skip) {
  const auto path = general_matrix(name);
  skip = !std::filesystem::exists(path);
  return skip ? Csr<double>{} : read_mtx(path.string());
}

// arc130 (n = 130, rcond 9e-11) and fs_183_6 (n = 183, rcond 7e-12): GMRES(30) with Jacobi
// converges in 10 and 16 iterations (18 and 177 without Jacobi).
TEST(Gmres, SuiteSparseSmallWithJacobi) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (const char* name : {"arc130.rua", "fs_183_6.rua"}) {
    SCOPED_TRACE(name);
    bool skip = false;
    auto a = general_or_skip(name, skip);
    if (skip) GTEST_SKIP() << name << " is not in ../shared/matrices/general";
    auto r = solve_and_check(a, random_block(a.nrows, 8, 5), options(1e-8, 30, &a), 1e-6);
    EXPECT_LE(r.iterations, 40);
    std::printf("%s, Jacobi, GMRES(30): %lld iterations\n", name, (long long)r.iterations);
  }
}

// olm500 (n = 500, rcond 1e-6): GMRES(30) with Jacobi stagnates near 0.1 (reported as such, no
// column claimed); full GMRES (m = n = 500) converges in one cycle.
TEST(Gmres, SuiteSparseOlm500NeedsTheFullSpace) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  bool skip = false;
  auto a = general_or_skip("olm500.mtx", skip);
  if (skip) GTEST_SKIP() << "olm500.mtx is not in ../shared/matrices/general";
  Mat b = random_block(a.nrows, 4, 5);
  KrylovOptions o = options(1e-8, 30, &a);
  auto r = run_gmres(a, b, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged);
  EXPECT_NE(r.reason.find("stagnation"), std::string::npos) << r.reason;
  auto tr = check_report(a, b, r, o.tol);
  for (double v : tr) EXPECT_GT(v, 1e-3);
  o.restart = 500;
  auto full = solve_and_check(a, b, o, 1e-6);
  EXPECT_LE(full.iterations, 500);
  std::printf("olm500, Jacobi: GMRES(30) %s at %lld iterations; GMRES(500) converged in %lld\n",
              to_string(r.status), (long long)r.iterations, (long long)full.iterations);
}

// ---- restarts ----------------------------------------------------------------------------------

TEST(Gmres, ShortRestartsStillConvergeWithMoreCycles) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(23, 19, 10.0, false);
  Mat b = random_block(a.nrows, 4, 6);
  KrylovOptions o = options(1e-9, 60);
  o.max_iterations = 50000;
  auto full = solve_and_check(a, b, o, 1e-6);
  o.restart = 5;
  auto shrt = solve_and_check(a, b, o, 1e-6);
  EXPECT_GT(shrt.iterations, full.iterations);
  std::printf("GMRES(60): %lld iterations, GMRES(5): %lld\n", (long long)full.iterations,
              (long long)shrt.iterations);
}

// GMRES(1) is minimal residual steepest descent: it converges when the symmetric part of A·M⁻¹
// is definite (here a diagonally dominant unsymmetric tridiagonal matrix).
TEST(Gmres, RestartOneConverges) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  std::vector<Triplet<double>> t;
  const int n = 203;
  for (int i = 0; i < n; ++i) {
    t.push_back({i, i, 4.0 + random_entry(9, i, 0)});
    if (i > 0) t.push_back({i, i - 1, -1.5});
    if (i + 1 < n) t.push_back({i, i + 1, -0.5});
  }
  auto a = csr_from_triplets<double>(n, n, std::move(t));
  KrylovOptions o = options(1e-10, 1, &a);
  o.max_iterations = 2000;
  auto r = solve_and_check(a, random_block(n, 3, 7), o, 1e-8);
  EXPECT_GT(r.iterations, 5);
}

// ---- columns that cannot converge --------------------------------------------------------------

// A singular A (row 0 zero) with an inconsistent column (b_0 ≠ 0: ‖b − A·x‖ ≥ |b_0| for every x)
// next to consistent ones: the inconsistent column is reported not converged with its residual,
// never converged, and the solve says it stagnated.
TEST(Gmres, InconsistentColumnIsReportedNotConverged) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(15, 13, 10.0, false);
  for (std::int64_t p = a.row_ptr[0]; p < a.row_ptr[1]; ++p) a.values[p] = 0.0;
  Mat b = random_block(a.nrows, 3, 8);
  b(0, 1) = 0.3 * b.col(1).norm();  // floor ‖r‖/‖b‖ ≥ 0.29
  b(0, 0) = b(0, 2) = 0.0;
  KrylovOptions o = options(1e-8, 20);
  o.max_iterations = 3000;
  auto r = run_gmres(a, b, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged) << r.reason;
  auto tr = check_report(a, b, r, o.tol);
  EXPECT_EQ(r.column_iterations[1], -1);
  EXPECT_GT(tr[1], 0.25);
  EXPECT_NE(r.reason.find("stagnation"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("1 ("), std::string::npos) << r.reason;  // names column 1
  EXPECT_LT(r.iterations, o.max_iterations);                       // stopped by stagnation
}

// A tolerance below what fp64 attains: not converged (stagnation), the residuals at the floor.
TEST(Gmres, ToleranceBelowTheFloorIsNotConverged) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(20, 20, 10.0, false);
  Mat b = random_block(a.nrows, 2, 10);
  auto r = run_gmres(a, b, options(1e-300, 30));
  EXPECT_EQ(r.status, SolverStatus::not_converged) << r.reason;
  check_report(a, b, r, 1e-300);
  EXPECT_NE(r.reason.find("stagnation"), std::string::npos) << r.reason;
  for (double v : r.residual_norms) EXPECT_LE(v, 1e-13);
}

TEST(Gmres, IterationLimitIsReportedWithColumnsAndResiduals) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(30, 30, 10.0, false);
  Mat b = random_block(a.nrows, 3, 11);
  KrylovOptions o = options(1e-12, 30);
  o.max_iterations = 25;
  auto r = run_gmres(a, b, o);
  EXPECT_EQ(r.status, SolverStatus::not_converged);
  check_report(a, b, r, o.tol);
  EXPECT_EQ(r.iterations, 25);
  EXPECT_NE(r.reason.find("iteration limit 25"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("0 ("), std::string::npos) << r.reason;
}

// ---- right-hand sides, widths, initial guesses, breakdowns -------------------------------------

TEST(Gmres, ZeroAndBadlyScaledColumns) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(19, 17, 10.0, false);
  Mat b = random_block(a.nrows, 5, 12);
  b.col(2).setZero();
  Mat b2 = b;
  b2.col(1) *= 1e200;
  b2.col(3) *= 1e-200;
  KrylovOptions o = options(1e-10, 30);
  auto r1 = solve_and_check(a, b, o, 1e-7);
  EXPECT_EQ(r1.column_iterations[2], 0);
  EXPECT_EQ(r1.residual_norms[2], 0.0);
  Eigen::Map<const Mat> x1(r1.solutions.data(), a.nrows, 5);
  EXPECT_EQ(x1.col(2).norm(), 0.0);
  auto r2 = run_gmres(a, b2, o);
  ASSERT_EQ(r2.status, SolverStatus::converged) << r2.reason;
  EXPECT_EQ(r2.iterations, r1.iterations);
  Eigen::Map<const Mat> x2(r2.solutions.data(), a.nrows, 5);
  const double scale[5] = {1.0, 1e200, 1.0, 1e-200, 1.0};
  for (int j = 0; j < 5; ++j) {
    EXPECT_LE(r2.residual_norms[j], o.tol) << "column " << j;
    EXPECT_LE((x2.col(j) / scale[j] - x1.col(j)).norm(), 1e-12 * std::max(x1.col(j).norm(), 1e-300))
        << "column " << j;
  }
}

TEST(Gmres, OneAndThirtyThreeColumns) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(33, 21, 10.0, false);
  for (std::int64_t s : {1, 33}) {
    SCOPED_TRACE("s = " + std::to_string(s));
    solve_and_check(a, random_block(a.nrows, s, 20 + s), options(1e-10, 25, &a), 1e-7);
  }
}

// Pseudo-block: each column's iterates are those of its own solve (s = 1), whatever else is in the
// block. On the CPU exactly (every sum's order is independent of the block width); on the GPU up
// to rounding (the dense ops' column norms and the kernels' grids depend on the width), so there
// the same iteration count give or take a few, and the same x to the accuracy of the solve.
TEST(Gmres, ColumnsAreIndependentOfTheirNeighbours) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(21, 19, 10.0, false);
  Mat b = random_block(a.nrows, 6, 13);
  KrylovOptions o = options(1e-9, 20);
  auto all = run_gmres(a, b, o);
  ASSERT_EQ(all.status, SolverStatus::converged) << all.reason;
  for (int j : {0, 4}) {
    Mat bj = b.col(j);
    auto one = run_gmres(a, bj, o);
    ASSERT_EQ(one.status, SolverStatus::converged);
    const bool exact = kBackend == Backend::cpu;
    if (exact) EXPECT_EQ(one.column_iterations[0], all.column_iterations[j]);
    else EXPECT_NEAR(one.column_iterations[0], all.column_iterations[j], 3);
    Eigen::Map<const Mat> xa(all.solutions.data(), a.nrows, 6), x1(one.solutions.data(), a.nrows, 1);
    EXPECT_LE((xa.col(j) - x1.col(0)).norm(), (exact ? 1e-12 : 1e-6) * x1.norm());
  }
}

TEST(Gmres, InitialGuessIsUsed) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(25, 23, 10.0, false);
  Mat b = random_block(a.nrows, 4, 14);
  Eigen::PartialPivLU<Mat> lu(dense(a));
  Mat x0 = lu.solve(b) + 1e-6 * random_block(a.nrows, 4, 15);
  KrylovOptions o = options(1e-10, 30);
  auto cold = solve_and_check(a, b, o, 1e-7);
  auto warm = solve_and_check(a, b, o, 1e-7, &x0);
  EXPECT_LT(warm.iterations, cold.iterations);
  // x0 already at tol: no iteration at all.
  Mat exact = lu.solve(b);
  auto done = solve_and_check(a, b, o, 1e-7, &exact);
  EXPECT_EQ(done.iterations, 0);
  for (auto k : done.column_iterations) EXPECT_EQ(k, 0);
}

// Happy breakdowns: A = I (one step: A·v_0 = v_0), and n < m (the Krylov space is all of R^n
// after n steps).
TEST(Gmres, HappyBreakdownEndsTheCycle) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  std::vector<Triplet<double>> t;
  for (int i = 0; i < 57; ++i) t.push_back({i, i, 1.0});
  auto eye = csr_from_triplets<double>(57, 57, std::move(t));
  auto r = solve_and_check(eye, random_block(57, 3, 16), options(1e-12, 30), 1e-14);
  EXPECT_EQ(r.iterations, 1);
  auto small = convection_diffusion(3, 3, 10.0, false);  // n = 9 < m = 30
  auto r2 = solve_and_check(small, random_block(9, 4, 17), options(1e-12, 30), 1e-10);
  EXPECT_LE(r2.iterations, 9);
  EXPECT_EQ(r2.history.size(), static_cast<std::size_t>(r2.iterations));
}

// A preconditioner given as an operator (here diag(A)⁻¹ as a sparse matrix) gives the Jacobi
// solve's iterates.
TEST(Gmres, PreconditionerOperatorMatchesJacobi) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  // A·S with S = diag(10^(±2)) at random: right Jacobi (M = diag(A·S)) undoes S exactly.
  auto a = convection_diffusion(41, 27, 400.0, true);
  for (std::int64_t p = 0; p < a.nnz(); ++p)
    a.values[p] *= std::pow(10.0, 2.0 * random_entry(19, a.col_idx[p], 0));
  Mat b = random_block(a.nrows, 4, 18);
  auto d = diagonal(a);
  std::vector<Triplet<double>> t;
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(a.nrows); ++i) t.push_back({i, i, 1.0 / d[i]});
  auto minv = make_operator(csr_from_triplets<double>(a.nrows, a.nrows, std::move(t)));
  KrylovOptions o = options(1e-10, 30, &a);
  o.max_iterations = 20000;
  auto jac = solve_and_check(a, b, o, 1e-6);
  o.jacobi_diagonal.clear();
  auto plain = run_gmres(a, b, o);
  check_report(a, b, plain, o.tol);
  o.preconditioner = minv.get();
  auto pre = solve_and_check(a, b, o, 1e-6);
  if (kBackend == Backend::cpu) EXPECT_EQ(pre.iterations, jac.iterations);  // (the same products)
  else EXPECT_NEAR(pre.iterations, jac.iterations, 2);  // (the GPU's SpMM may round otherwise)
  EXPECT_LT(jac.iterations, plain.iterations);
  std::printf("column-scaled upwind: Jacobi %lld iterations, M as an operator %lld, none %lld (%s)\n",
              (long long)jac.iterations, (long long)pre.iterations, (long long)plain.iterations,
              to_string(plain.status));
}

// M⁻¹ = diag(A)⁻¹, or (changing) diag(A)⁻¹ on odd applies and diag(A)⁻¹·(1 + 0.9·ξ_i) (a fixed
// random ξ in [−1, 1)) on even ones; any space (DenseBlockOps::scale_rows).
class AlternatingJacobi final : public LinearOperator<double> {
 public:
  AlternatingJacobi(DenseBlockOps& ops, const std::vector<double>& d, bool changing)
      : ops_(ops), n_(std::int64_t(d.size())), changing_(changing) {
    std::vector<double> a(d.size()), b(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) {
      a[i] = 1.0 / d[i];
      b[i] = a[i] * (1.0 + 0.9 * random_entry(5, std::int64_t(i), 0));
    }
    d1_ = ops.allocate(n_, 1), d2_ = ops.allocate(n_, 1);
    ops.from_host(a.data(), n_, d1_.view());
    ops.from_host(b.data(), n_, d2_.view());
  }
  std::int64_t rows() const override { return n_; }
  std::int64_t cols() const override { return n_; }
  Space space() const override { return ops_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override {
    ops_.scale_rows((changing_ && applies_++ % 2 ? d2_ : d1_).data(), x, y);
  }

 private:
  DenseBlockOps& ops_;
  std::int64_t n_;
  bool changing_;
  mutable int applies_ = 0;
  MultiVector<double> d1_, d2_;
};

// FGMRES: with a fixed M it takes the right-preconditioned solve's steps; with an M that changes
// at every apply it still converges to tol on the true residuals, where plain right
// preconditioning (x += M_last⁻¹·V·y: the wrong map for every earlier step) needs many more.
TEST(Gmres, FlexibleTakesAPreconditionerThatChanges) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(41, 27, 400.0, true);
  for (std::int64_t p = 0; p < a.nnz(); ++p)
    a.values[p] *= std::pow(10.0, 2.0 * random_entry(19, a.col_idx[p], 0));
  const Mat b = random_block(a.nrows, 3, 18);
  // One DenseBlockOps for the solves and M (M's products on the solver's stream: an operator on
  // another stream would race with the solver's kernels on the GPU).
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  const Mat xref = Eigen::PartialPivLU<Mat>(dense(a)).solve(b);
  auto solve = [&](const KrylovOptions& o, bool converges) {
    SolveResult r = gmres(*op, b.data(), b.rows(), b.cols(), *ops, o);
    check_report(a, b, r, o.tol);  // (whatever it reports is true)
    if (converges) {
      EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
      Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, b.cols());
      for (std::int64_t j = 0; j < b.cols(); ++j)
        EXPECT_LE((x.col(j) - xref.col(j)).norm(), 1e-6 * xref.col(j).norm()) << "column " << j;
    }
    return r;
  };
  // (restart 300: one cycle, so that a rounding difference cannot turn into another restart history)
  KrylovOptions o = options(1e-10, 300, &a);
  o.max_iterations = 20000;
  const SolveResult jac = solve(o, true);
  o.jacobi_diagonal.clear();
  const AlternatingJacobi fixed(*ops, diagonal(a), false), changing(*ops, diagonal(a), true),
      changing2(*ops, diagonal(a), true);
  o.flexible = true;
  o.preconditioner = &fixed;
  const SolveResult ff = solve(o, true);
  EXPECT_NEAR(ff.iterations, jac.iterations, 2);
  o.preconditioner = &changing;
  const SolveResult fc = solve(o, true);
  EXPECT_LE(fc.iterations, 4 * jac.iterations);  // (a weaker M on every other step: 173 against 75, CPU)
  o.flexible = false;
  o.preconditioner = &changing2;
  const SolveResult rc = solve(o, false);
  // (it stagnates, or converges through many restarts)
  EXPECT_TRUE(rc.status != SolverStatus::converged || rc.iterations > 3 * fc.iterations)
      << to_string(rc.status) << " " << rc.iterations;
  std::printf("changing M: flexible %lld iterations, right-preconditioned %lld (%s); fixed M: flexible %lld, "
              "Jacobi %lld\n", (long long)fc.iterations, (long long)rc.iterations, to_string(rc.status),
              (long long)ff.iterations, (long long)jac.iterations);
}

// ---- bad input, interrupts, history ------------------------------------------------------------

TEST(Gmres, BadInputIsRefused) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(9, 8, 10.0, false);
  Mat b = random_block(a.nrows, 3, 21);
  b(5, 1) = std::numeric_limits<double>::quiet_NaN();
  try {
    run_gmres(a, b, options(1e-8, 10));
    ADD_FAILURE() << "a NaN right-hand side was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("column 1"), std::string::npos) << e.what();
  }
  b(5, 1) = std::numeric_limits<double>::infinity();
  EXPECT_THROW(run_gmres(a, b, options(1e-8, 10)), InvalidArgument);
  b(5, 1) = 1.0;
  EXPECT_THROW(run_gmres(a, b, options(1e-8, 0)), InvalidArgument);
  EXPECT_THROW(run_gmres(a, b, options(1e-8, krylov::gmres::kMaxRestart + 1)), InvalidArgument);
  EXPECT_THROW(run_gmres(a, b, options(0.0, 10)), InvalidArgument);
  KrylovOptions o = options(1e-8, 10);
  o.jacobi_diagonal.assign(3, 1.0);
  EXPECT_THROW(run_gmres(a, b, o), Error);
}

TEST(Gmres, InterruptStopsAtAnIterationsEnd) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(30, 30, 10.0, false);
  Mat b = random_block(a.nrows, 2, 22);
  KrylovOptions o = options(1e-12, 30);
  int seen = 0;
  o.on_iteration = [&](const IterationRecord&) {
    if (++seen == 5) request_interrupt();
  };
  auto r = run_gmres(a, b, o);
  clear_interrupt();
  EXPECT_EQ(r.status, SolverStatus::interrupted) << r.reason;
  EXPECT_LE(r.iterations, 7);
  check_report(a, b, r, o.tol);
}

TEST(Gmres, ASingularKrylovSpaceLeavesNoWorseThanZero) {
  // A nilpotent shift (a_{i,i+1} = 1, n = 3): the projected matrix is singular at the happy
  // breakdown and the rotated diagonal is rounding. That step is not kept, so the answer is the
  // least-squares one over the steps before: its true residual is at most ‖b‖ (x = 0). (At n = 40
  // the earlier rotated diagonals are small but not rounding, and the answer still ends at 24‖b‖:
  // not fixed by this.)
  for (int n : {3}) {
    SCOPED_TRACE(n);
    std::vector<Triplet<double>> t;
    for (int i = 0; i + 1 < n; ++i) t.push_back({i, i + 1, 1.0});
    const Csr<double> a = csr_from_triplets<double>(n, n, std::move(t));
    const Mat b = random_block(n, 2, 3);
    KrylovOptions o = options(1e-10, 60);
    o.max_iterations = 600;
    const SolveResult r = run_gmres(a, b, o);
    EXPECT_NE(r.status, SolverStatus::converged);
    const auto tr = check_report(a, b, r, o.tol);
    for (int j = 0; j < 2; ++j) EXPECT_LE(tr[j], 1.0 + 1e-12) << j;
  }
}

TEST(Gmres, HistoryTracksTheEstimates) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(25, 25, 10.0, false);
  Mat b = random_block(a.nrows, 3, 23);
  KrylovOptions o = options(1e-10, 200);  // one cycle: the estimate is the minimal residual
  auto r = solve_and_check(a, b, o, 1e-7);
  ASSERT_EQ(r.history.size(), static_cast<std::size_t>(r.iterations));
  for (std::size_t t = 1; t < r.history.size(); ++t) {
    ASSERT_EQ(r.history[t].residual_norms.size(), 3u);
    for (int j = 0; j < 3; ++j)  // GMRES residuals do not increase within a cycle
      EXPECT_LE(r.history[t].residual_norms[j], r.history[t - 1].residual_norms[j] * (1 + 1e-12));
  }
  // The last estimate is the true residual of the returned x, up to rounding.
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(r.history.back().residual_norms[j] / b.col(j).norm(), r.residual_norms[j], 1e-11);
  o.keep_history = false;
  auto quiet = run_gmres(a, b, o);
  EXPECT_TRUE(quiet.history.empty());
  EXPECT_EQ(quiet.iterations, r.iterations);
}

// ---- the kernels and steps alone ---------------------------------------------------------------

using krylov::gmres::Basis;
using krylov::gmres::Context;
using krylov::gmres::Kernels;
using krylov::gmres::StateLayout;

// One fused pass in each mode against Eigen on random data (odd n, k and columns).
TEST(GmresKernels, OrthoPassMatchesEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto ops = make_dense_ops(kBackend);
  const std::int64_t n = 3001, s = 5, m = 7;
  const int k = 6;
  Kernels kern = krylov::gmres::kernels_for(ops->space());
  MultiVector<double> vb = ops->allocate(n, (m + 1) * s), w = ops->allocate(n, s);
  MultiVector<double> coef = ops->allocate(m + 2, s), out = ops->allocate(m + 2, s);
  MultiVector<double> part = ops->allocate(kern.partial_doubles(n, m + 1, s, 2), 1);
  Context ctx{ops->stream(), part.data(), part.rows(), 2};
  Mat V = random_block(n, (m + 1) * s, 30), W = random_block(n, s, 31), C = random_block(m + 2, s, 32);
  ops->from_host(V.data(), n, vb.view());
  ops->from_host(C.data(), m + 2, coef.view());
  Basis basis{vb.data(), n, n, n * s, s};
  for (int mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    ops->from_host(W.data(), n, w.view());
    const bool update = mode > 0, dots = mode < 2;
    const int norm_row = mode == 2 ? static_cast<int>(m + 1) : -1;
    kern.ortho_pass(ctx, basis, k, w.view(),
                    update ? MvView<const double>(coef.view()) : MvView<const double>{}, out.view(), dots,
                    norm_row);
    Mat wo(n, s), o(m + 2, s);
    ops->to_host(w.view(), wo.data(), n);
    ops->to_host(out.view(), o.data(), m + 2);
    for (std::int64_t c = 0; c < s; ++c) {
      Eigen::VectorXd wc = W.col(c);
      for (int i = 0; i < k; ++i)
        if (update) wc -= V.col(i * s + c) * C(i, c);
      EXPECT_LE((wo.col(c) - wc).norm(), 1e-13 * wc.norm()) << "column " << c;
      if (dots)
        for (int i = 0; i < k; ++i)
          EXPECT_NEAR(o(i, c), V.col(i * s + c).dot(wc), 1e-12 * std::sqrt(double(n))) << c << ", " << i;
      if (norm_row >= 0) EXPECT_NEAR(o(norm_row, c), wc.squaredNorm(), 1e-12 * wc.squaredNorm());
    }
  }
}

// normalize (with the Jacobi output) and combine against Eigen.
TEST(GmresKernels, NormalizeAndCombineMatchEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto ops = make_dense_ops(kBackend);
  const std::int64_t n = 1999, s = 3;
  const int m = 5;
  StateLayout L;
  L.m = m;
  Kernels kern = krylov::gmres::kernels_for(ops->space());
  Context ctx{ops->stream(), nullptr, 0, 2};
  Mat V = random_block(n, (m + 1) * s, 40), D = random_block(n, 1, 41), St = random_block(L.rows(), s, 42);
  MultiVector<double> vb = ops->allocate(n, (m + 1) * s), d = ops->allocate(n, 1),
                      st = ops->allocate(L.rows(), s);
  MultiVector<double> z = ops->allocate(n, s), u = ops->allocate(n, s);
  ops->from_host(V.data(), n, vb.view());
  ops->from_host(D.data(), n, d.view());
  ops->from_host(St.data(), L.rows(), st.view());
  kern.normalize(ctx, vb.columns(0, s), st.view(), d.data(), z.view());
  Basis basis{vb.data(), n, n, n * s, s};
  kern.combine(ctx, L, basis, 4, st.view(), d.data(), u.view());
  Mat vo(n, (m + 1) * s), zo(n, s), uo(n, s);
  ops->to_host(vb.view(), vo.data(), n);
  ops->to_host(z.view(), zo.data(), n);
  ops->to_host(u.view(), uo.data(), n);
  for (std::int64_t c = 0; c < s; ++c) {
    Eigen::VectorXd v0 = V.col(c) * St(StateLayout::kInvNorm, c);
    EXPECT_LE((vo.col(c) - v0).norm(), 1e-15 * v0.norm());
    EXPECT_LE((zo.col(c) - D.col(0).cwiseProduct(v0)).norm(), 1e-15 * v0.norm());
    Eigen::VectorXd uc = Eigen::VectorXd::Zero(n);
    for (int i = 0; i < 4; ++i) uc += vo.col(i * s + c) * St(L.y() + i, c);
    uc = D.col(0).cwiseProduct(uc);
    EXPECT_LE((uo.col(c) - uc).norm(), 1e-13 * uc.norm());
  }
}

// The solver's steps one at a time: after a full cycle the basis is orthonormal to working
// precision (CGS2), the estimate of each column is the residual of its least-squares solution.
TEST(GmresSteps, CycleBuildsAnOrthonormalBasis) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = convection_diffusion(29, 23, 10.0, false);
  const std::int64_t n = a.nrows, s = 3;
  const int m = 25;
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  KrylovOptions o = options(1e-14, m);
  krylov::gmres::GmresSolver solver(*op, *ops, s, o);
  Mat b = random_block(n, s, 50);
  MultiVector<double> bd = ops->allocate(n, s), xd = ops->allocate(n, s);
  ops->from_host(b.data(), n, bd.view());
  auto r = solver.start(bd.view(), xd.view(), false);
  solver.true_residuals(r);
  ASSERT_TRUE(solver.select_columns(r));
  solver.begin_cycle(r);
  for (int j = 0; j < m; ++j) {
    solver.queue_iteration(r);
    solver.read_back(r, 0);
  }
  ASSERT_FALSE(r.all_frozen);
  Mat V(n, (m + 1) * s);
  ops->to_host(MvView<const double>(solver.basis_block(0, (m + 1) * s)), V.data(), n);
  for (std::int64_t c = 0; c < s; ++c) {
    Mat Vc(n, m + 1);
    for (int i = 0; i <= m; ++i) Vc.col(i) = V.col(i * s + c);
    const double err = (Vc.transpose() * Vc - Mat::Identity(m + 1, m + 1)).cwiseAbs().maxCoeff();
    EXPECT_LE(err, 1e-14) << "column " << c;
  }
  const std::vector<double> est(solver.estimates().begin(), solver.estimates().begin() + s);
  solver.end_cycle(r);
  EXPECT_EQ(r.it, m);
  Mat x(n, s);
  ops->to_host(xd.view(), x.data(), n);
  auto tr = true_residuals(a, b, x.data());
  for (std::int64_t c = 0; c < s; ++c)  // (scaled estimate / scaled ‖b‖ = relative residual)
    EXPECT_NEAR(est[c] * solver.scales()[c] / b.col(c).norm(), tr[c], 1e-9 * tr[c] + 1e-14) << "column " << c;
}

// ---- timing (run by hand: --gtest_also_run_disabled_tests --gtest_filter='*Timing*') ---------

// (1) the cost of an iteration: central differences at Péclet 10 (diffusion-dominated, κ ~ 1e5:
// thousands of GMRES(30) iterations to converge), 60 iterations = 2 cycles; (2) a whole solve of a
// convection-dominated case (upwind, Péclet 5000, Jacobi) to tol 1e-8.
TEST(Gmres, DISABLED_TimingConvectionDiffusion250k) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const char* side_env = std::getenv("TCSOLVE_GMRES_TIMING_SIDE");  // (grid side; default 500)
  const int side = side_env ? std::atoi(side_env) : 500;
  for (int run = 0; run < 2; ++run) {
    auto a = run == 0 ? convection_diffusion(side, side, 10.0, false)
                      : convection_diffusion(side, side, 5000.0, true);
    Mat b = random_block(a.nrows, 32, 60);
    KrylovOptions o = options(1e-8, 30, run == 1 ? &a : nullptr);
    o.max_iterations = run == 0 ? 60 : 5000;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run_gmres(a, b, o);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double worst = 0.0, ap = 0.0, dn = 0.0;
    for (double v : r.residual_norms) worst = std::max(worst, v);
    for (const auto& h : r.history) ap += h.apply_seconds, dn += h.dense_seconds;
    std::printf(
        "%dx%d %s, 32 rhs, GMRES(30)%s: %s, %lld iterations, %lld columns applied, worst true residual "
        "%.2e; solve %.2f s (%.3f s an iteration: A %.3f s, dense %.3f s), wall incl. set-up and copies %.2f "
        "s\n",
        side, side, run == 0 ? "central Pe 10" : "upwind Pe 5000", run == 1 ? " + Jacobi" : "",
        to_string(r.status), (long long)r.iterations, (long long)r.operator_applies, worst, r.seconds,
        r.seconds / std::max<std::int64_t>(r.iterations, 1), ap / std::max<std::int64_t>(r.iterations, 1),
        dn / std::max<std::int64_t>(r.iterations, 1), sec);
  }
}

}  // namespace
}  // namespace tcsolve::test
