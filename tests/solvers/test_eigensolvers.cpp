// LOBPCG and block Lanczos: closed-form Laplacian spectra (multiplicities included), real
// stiffness matrices and generalized stiffness/mass pairs against Eigen's dense solvers. Every
// test recomputes the residuals and B-orthogonality on the host.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <filesystem>

#include "core/error.hpp"
#include "solvers/eigensolvers.hpp"
#include "tests/solvers/solver_test_util.hpp"
#include "tests/solvers/step_test_util.hpp"

namespace tcsolve::test {
namespace {

enum class Method { lobpcg, lanczos };

EigenResult run(Method m, const LinearOperator<double>& a, const LinearOperator<double>* b,
                DenseBlockOps& ops, const EigenOptions& o) {
  return m == Method::lobpcg ? lobpcg(a, b, ops, o) : block_lanczos(a, b, ops, o);
}

// Checks a result against the reference eigenvalues `ref` (the k wanted, in the solver's order):
// status, true residuals within the bound, B-orthonormality, and every eigenvalue within the
// residual-based bound |λ − λ_ref| ≤ ‖r‖·‖B⁻¹‖^(1/2)·4 + 1e-12·scale.
void check(const EigenResult& r, const Csr<double>& a, const Csr<double>* b,
           const std::vector<double>& ref, double tol, double binv_sqrt = 1.0) {
  const std::int64_t k = static_cast<std::int64_t>(ref.size());
  std::string info;
  for (std::size_t j = 0; j < r.values.size(); ++j)
    info += " [" + std::to_string(r.values[j]) + ": " + std::to_string(r.residual_norms[j]) + " / " +
            std::to_string(r.residual_bounds[j]) + "]";
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << info;
  ASSERT_EQ(static_cast<std::int64_t>(r.values.size()), k);
  std::vector<double> xnorm(k);
  for (std::int64_t j = 0; j < k; ++j)
    xnorm[j] = Eigen::Map<const Eigen::VectorXd>(r.vectors.data() + j * a.nrows, a.nrows).norm();
  auto res = residuals(a, b, r.vectors, r.values);
  double anorm = norm_inf(a), bnorm = b ? norm_inf(*b) : 1.0;
  for (std::int64_t j = 0; j < k; ++j) {
    // The solver's own final residual matches ours, and passes the (estimated-norm) bound.
    EXPECT_NEAR(res[j], r.residual_norms[j], 1e-9 * (anorm + std::abs(r.values[j]) * bnorm));
    EXPECT_LE(res[j], r.residual_bounds[j] * (1 + 1e-6));
    EXPECT_LE(res[j], tol * (anorm + std::abs(r.values[j]) * bnorm) * xnorm[j] * 10.0);
    double err = std::abs(r.values[j] - ref[j]);
    EXPECT_LE(err, 4.0 * res[j] * binv_sqrt + 1e-12 * (anorm + std::abs(ref[j])))
        << "eigenvalue " << j << ": " << r.values[j] << " vs " << ref[j];
  }
  EXPECT_LT(orthogonality_error(b, r.vectors, a.nrows, k), 1e-8);
}

struct LapCase {
  const char* name;
  int nx, ny, nz, k;
  Which which;
  Method method;
};

class Laplacian : public ::testing::TestWithParam<LapCase> {};

TEST_P(Laplacian, MatchesClosedFormSpectrum) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const LapCase& c = GetParam();
  auto a = laplacian(c.nx, c.ny, c.nz);
  auto spec = laplacian_spectrum(c.nx, c.ny, c.nz);
  std::vector<double> ref(c.k);
  for (int j = 0; j < c.k; ++j)
    ref[j] = c.which == Which::smallest ? spec[j] : spec[spec.size() - 1 - j];
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o;
  o.k = c.k;
  o.which = c.which;
  o.tol = 1e-9;
  o.max_iterations = 3000;
  auto r = run(c.method, *op, nullptr, *ops, o);
  check(r, a, nullptr, ref, o.tol);
  // History: one record per iteration with the split of time.
  EXPECT_FALSE(r.history.empty());
  EXPECT_GT(r.operator_applies, 0);
}

const LapCase kLapCases[] = {
    {"lobpcg_1d_k1_small", 301, 1, 1, 1, Which::smallest, Method::lobpcg},
    {"lobpcg_1d_k5_large", 257, 1, 1, 5, Which::largest, Method::lobpcg},
    {"lobpcg_2d_k16_small", 31, 31, 1, 16, Which::smallest, Method::lobpcg},
    {"lobpcg_2d_k7_large", 29, 23, 1, 7, Which::largest, Method::lobpcg},
    {"lobpcg_3d_k12_small", 9, 9, 9, 12, Which::smallest, Method::lobpcg},
    {"lobpcg_2d_k32_small", 33, 33, 1, 32, Which::smallest, Method::lobpcg},
    {"lanczos_1d_k1_small", 301, 1, 1, 1, Which::smallest, Method::lanczos},
    {"lanczos_1d_k5_large", 257, 1, 1, 5, Which::largest, Method::lanczos},
    {"lanczos_2d_k16_small", 31, 31, 1, 16, Which::smallest, Method::lanczos},
    {"lanczos_2d_k7_large", 29, 23, 1, 7, Which::largest, Method::lanczos},
    {"lanczos_3d_k12_small", 9, 9, 9, 12, Which::smallest, Method::lanczos},
    {"lanczos_3d_k20_large", 8, 9, 10, 20, Which::largest, Method::lanczos},
    {"lanczos_2d_k32_small", 33, 33, 1, 32, Which::smallest, Method::lanczos},
};
void PrintTo(const LapCase& c, std::ostream* os) { *os << c.name; }

INSTANTIATE_TEST_SUITE_P(Solvers, Laplacian, ::testing::ValuesIn(kLapCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Square 2D grid: eigenvalue (i, j) equals (j, i), so the spectrum is full of double values; a
// single-vector method returns a wrong set. Checks that every copy is found with block size 2.
TEST(Lanczos, FindsEveryCopyOfDoubleEigenvaluesWithBlockSizeTwo) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(40, 40);
  auto spec = laplacian_spectrum(40, 40);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o;
  o.k = 10;
  o.block_size = 2;
  o.tol = 1e-10;
  auto r = block_lanczos(*op, nullptr, *ops, o);
  std::vector<double> ref(spec.begin(), spec.begin() + 10);
  // The reference has 4 double pairs among the 10 (e.g. (1,2)/(2,1)).
  int doubles = 0;
  for (int j = 1; j < 10; ++j) doubles += std::abs(ref[j] - ref[j - 1]) < 1e-12;
  ASSERT_GE(doubles, 4);
  check(r, a, nullptr, ref, o.tol);
}

// A spectrum like shift-invert's (eigenvalues ≈ 1/j, fast convergence at the top): the first pass
// stops as soon as every wanted pair passes, with fewer applies than the full basis and the same
// answer as the full run (both against dense LAPACK); with early_stop off the basis fills.
TEST(Lanczos, EarlyStopBeforeTheBasisIsFullGivesTheSameAnswer) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int n = 700;
  const auto a = inverse_index_matrix(n);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(dense(a), Eigen::EigenvaluesOnly);
  std::vector<double> ref(6);
  for (int j = 0; j < 6; ++j) ref[j] = es.eigenvalues()(n - 1 - j);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o;
  o.k = 6;
  o.which = Which::largest;
  o.block_size = 2;
  o.max_basis = 120;
  o.tol = 1e-10;
  auto early = block_lanczos(*op, nullptr, *ops, o);
  check(early, a, nullptr, ref, o.tol);
  o.early_stop = false;
  auto full = block_lanczos(*op, nullptr, *ops, o);
  check(full, a, nullptr, ref, o.tol);
  EXPECT_EQ(early.iterations, 1);
  EXPECT_LT(early.operator_applies, 120 * 3 / 4) << "full run: " << full.operator_applies;
  EXPECT_GE(full.operator_applies, 120);
  std::printf("early stop: %lld applies, full basis: %lld\n", static_cast<long long>(early.operator_applies),
              static_cast<long long>(full.operator_applies));
}

TEST(Lobpcg, JacobiPreconditionerOnAScaledLaplacian) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  // A = D·L·D with D spanning two decades: Jacobi undoes most of the scaling.
  auto a = laplacian(25, 19);
  std::vector<double> d(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) d[i] = std::pow(10.0, random_entry(5, i, 0));
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) a.values[p] *= d[i] * d[a.col_idx[p]];
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(dense(a));
  std::vector<double> ref(6);
  for (int j = 0; j < 6; ++j) ref[j] = es.eigenvalues()(j);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o;
  o.k = 6;
  o.tol = 1e-10;
  o.a_norm = norm_inf(a);
  o.max_iterations = 4000;
  auto plain = lobpcg(*op, nullptr, *ops, o);
  o.jacobi_diagonal = diagonal(a);
  auto jac = lobpcg(*op, nullptr, *ops, o);
  check(jac, a, nullptr, ref, o.tol);
  if (plain.status == SolverStatus::converged) EXPECT_LT(jac.iterations, plain.iterations);
}

TEST(Eigensolvers, BadArgumentsThrowAndNonConvergenceIsAStatus) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  auto a = laplacian(20);
  auto b = laplacian(21);
  auto op = make_operator(a);
  auto opb = make_operator(b);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o;
  o.k = 20;
  EXPECT_THROW(lobpcg(*op, nullptr, *ops, o), InvalidArgument);
  EXPECT_THROW(block_lanczos(*op, nullptr, *ops, o), InvalidArgument);
  o.k = 0;
  EXPECT_THROW(lobpcg(*op, nullptr, *ops, o), InvalidArgument);
  o.k = 2;
  EXPECT_THROW(lobpcg(*op, opb.get(), *ops, o), InvalidArgument);
  EXPECT_THROW(block_lanczos(*op, opb.get(), *ops, o), InvalidArgument);
  // Two iterations cannot reach 1e-12 on a 500-point Laplacian: partial results, no exception.
  auto big = laplacian(500);
  auto opbig = make_operator(big);
  o.k = 3;
  o.tol = 1e-12;
  o.max_iterations = 2;
  for (Method m : {Method::lobpcg, Method::lanczos}) {
    auto r = run(m, *opbig, nullptr, *ops, o);
    EXPECT_EQ(r.status, SolverStatus::not_converged);
    EXPECT_FALSE(r.reason.empty());
    ASSERT_EQ(r.values.size(), 3u);
    EXPECT_EQ(r.vectors.size(), 3u * 500u);
    auto res = residuals(big, nullptr, r.vectors, r.values);
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(res[j], r.residual_norms[j], 1e-10);
  }
}

// Generalized problem with a consistent (non-diagonal) 1D finite-element mass matrix.
TEST(Eigensolvers, GeneralizedWithTridiagonalMassMatrix) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int n = 160;
  auto a = laplacian(n);
  std::vector<Triplet<double>> t;
  for (int i = 0; i < n; ++i) {
    t.push_back({i, i, 4.0 / 6.0 * (1.0 + 0.3 * random_entry(9, i, 0))});
    if (i + 1 < n) t.push_back({i, i + 1, 1.0 / 6.0}), t.push_back({i + 1, i, 1.0 / 6.0});
  }
  auto b = csr_from_triplets<double>(n, n, t, Symmetry::symmetric);
  Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(dense(a), dense(b));
  double bmin = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(dense(b)).eigenvalues().minCoeff();
  auto opa = make_operator(a);
  auto opb = make_operator(b);
  auto ops = make_dense_ops(kBackend);
  for (Method m : {Method::lobpcg, Method::lanczos}) {
    for (Which w : {Which::smallest, Which::largest}) {
      EigenOptions o;
      o.k = 6;
      o.which = w;
      o.tol = 1e-10;
      o.max_iterations = 3000;
      o.jacobi_mass_diagonal = diagonal(b);
      auto r = run(m, *opa, opb.get(), *ops, o);
      std::vector<double> ref(6);
      for (int j = 0; j < 6; ++j)
        ref[j] = w == Which::smallest ? es.eigenvalues()(j) : es.eigenvalues()(n - 1 - j);
      SCOPED_TRACE(std::string(m == Method::lobpcg ? "lobpcg" : "lanczos") +
                   (w == Which::smallest ? " smallest" : " largest"));
      check(r, a, &b, ref, o.tol, 1.0 / std::sqrt(bmin));
    }
  }
}

// Real matrices: bcsstk stiffness (largest and smallest) and bcsstkNN/bcsstmNN pairs.
struct RealCase {
  const char* k_name;
  const char* m_name;  // "" = standard problem
  int k;
  Which which;
  Method method;
};
class RealMatrix : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealMatrix, MatchesDenseEigen) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  TCSOLVE_SKIP_WITHOUT_MATRICES();
  const RealCase& c = GetParam();
  auto a = read_mtx((matrices_dir() / (std::string(c.k_name) + ".mtx")).string());
  const bool gen = c.m_name[0] != 0;
  Csr<double> b;
  if (gen) b = read_mtx((matrices_dir() / (std::string(c.m_name) + ".mtx")).string());
  const std::int64_t n = a.nrows;
  Eigen::VectorXd ev;
  double bmin = 1.0;
  if (gen) {
    Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(dense(a), dense(b), Eigen::EigenvaluesOnly);
    ev = es.eigenvalues();
    bmin = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(dense(b), Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
  } else {
    ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(dense(a), Eigen::EigenvaluesOnly).eigenvalues();
  }
  std::vector<double> ref(c.k);
  for (int j = 0; j < c.k; ++j) ref[j] = c.which == Which::smallest ? ev(j) : ev(n - 1 - j);
  auto opa = make_operator(a);
  std::unique_ptr<LinearOperator<double>> opb;
  if (gen) opb = make_operator(b);
  auto ops = make_dense_ops(kBackend);
  EigenOptions o;
  o.k = c.k;
  o.which = c.which;
  o.tol = 1e-10;
  o.max_iterations = 5000;
  o.a_norm = norm_inf(a);
  if (gen) o.b_norm = norm_inf(b), o.jacobi_mass_diagonal = diagonal(b);
  o.jacobi_diagonal = diagonal(a);
  auto r = run(c.method, *opa, gen ? opb.get() : nullptr, *ops, o);
  check(r, a, gen ? &b : nullptr, ref, o.tol, 1.0 / std::sqrt(bmin));
  // Eigenvalue agreement relative to the spectrum's scale (the bound in check() is absolute).
  for (int j = 0; j < c.k; ++j)
    EXPECT_LE(std::abs(r.values[j] - ref[j]), 1e-6 * std::abs(ev(n - 1)) + 1e-6 * std::abs(ref[j]));
  RecordProperty("iterations", static_cast<int>(r.iterations));
}

const RealCase kRealCases[] = {
    {"bcsstk05", "", 4, Which::largest, Method::lobpcg},
    {"bcsstk05", "", 4, Which::largest, Method::lanczos},
    {"bcsstk05", "", 4, Which::smallest, Method::lobpcg},
    {"bcsstk22", "", 5, Which::smallest, Method::lobpcg},
    {"bcsstk22", "", 5, Which::largest, Method::lanczos},
    {"bcsstk05", "bcsstm05", 4, Which::smallest, Method::lobpcg},
    {"bcsstk05", "bcsstm05", 4, Which::largest, Method::lanczos},
    {"bcsstk06", "bcsstm06", 3, Which::smallest, Method::lobpcg},
    {"bcsstk07", "bcsstm07", 3, Which::smallest, Method::lobpcg},
    {"bcsstk07", "bcsstm07", 4, Which::largest, Method::lanczos},
    {"bcsstk08", "bcsstm08", 3, Which::smallest, Method::lobpcg},
    {"bcsstk09", "bcsstm09", 3, Which::smallest, Method::lobpcg},
    {"bcsstk19", "bcsstm19", 3, Which::largest, Method::lanczos},
    {"bcsstk20", "bcsstm20", 3, Which::largest, Method::lobpcg},
    {"bcsstk22", "bcsstm22", 4, Which::smallest, Method::lobpcg},
    {"bcsstk22", "bcsstm22", 4, Which::largest, Method::lanczos},
};
void PrintTo(const RealCase& c, std::ostream* os) {
  *os << c.k_name << (c.m_name[0] ? std::string("/") + c.m_name : "") << " k=" << c.k
      << (c.which == Which::smallest ? " smallest " : " largest ") << (c.method == Method::lobpcg ? "lobpcg" : "lanczos");
}

INSTANTIATE_TEST_SUITE_P(Solvers, RealMatrix, ::testing::ValuesIn(kRealCases), [](const auto& info) {
  const RealCase& c = info.param;
  return std::string(c.k_name) + (c.m_name[0] ? std::string("_") + c.m_name : "") +
         (c.which == Which::smallest ? "_small_" : "_large_") +
         (c.method == Method::lobpcg ? "lobpcg" : "lanczos");
});

}  // namespace
}  // namespace tcsolve::test
