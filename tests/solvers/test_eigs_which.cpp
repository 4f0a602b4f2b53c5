// The eigs driver's selections made of runs (largest_magnitude, both_ends, smallest_magnitude),
// the folded operator and the constraints (solvers/eigs/eigs.hpp), against closed forms: the
// shifted 1-D Laplacian tridiag(−1, d, −1) (n rows) has λ_j = d − 2·cos(jπ/(n + 1)), of both signs
// for |d| < 2; and against dense LAPACK (Eigen) for the constrained problems.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "factor/sparse_factor.hpp"
#include "solvers/eigs/eigs.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/solvers/solver_test_util.hpp"
#include "tests/traps.hpp"

namespace tcsolve::test {
namespace {

Csr<double> shifted_laplacian(std::int64_t n, double d) {
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < n; ++i) {
    t.push_back({i, i, d});
    if (i > 0) t.push_back({i, i - 1, -1.0}), t.push_back({i - 1, i, -1.0});
  }
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

std::vector<double> shifted_spectrum(std::int64_t n, double d) {
  std::vector<double> v(n);
  for (std::int64_t j = 1; j <= n; ++j) v[j - 1] = d - 2.0 * std::cos(kPi * double(j) / double(n + 1));
  return v;
}

// The k of `all` first in the order `key` ranks them (smaller key first), ascending.
template <class Key>
std::vector<double> select(std::vector<double> all, std::size_t k, Key key) {
  std::stable_sort(all.begin(), all.end(), [&](double a, double b) { return key(a) < key(b); });
  all.resize(k);
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<double> sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  const std::vector<double> g = sorted(got);
  for (std::size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(g[j], want[j], tol) << "value " << j;
}

EigsOptions options(std::int64_t k, Which w) {
  EigsOptions o;
  o.k = k;
  o.which = w;
  o.tol = 1e-10;
  o.backend = kBackend;
  o.seed = 3;
  return o;
}

std::string runs_of(const EigsResult& r) {
  std::string s;
  for (const auto& x : r.runs) s += x.plan + "/" + x.stop + " ";
  return s + "| " + r.why;
}

bool says(const EigsResult& r, const char* text) { return r.why.find(text) != std::string::npos; }

// ---- largest_magnitude -----------------------------------------------------------------------

// d = 0.001: the k = 6 largest |λ| alternate between the two ends (2.001 − ε_j and −1.999 + ε_j),
// and Gershgorin's [−1.999, 2.001] proves nothing: both ends run and are merged.
TEST(EigsWhich, LargestMagnitudeMergesBothEnds) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 300;
  const Csr<double> a = shifted_laplacian(n, 0.001);
  EigsOptions o = options(6, Which::largest_magnitude);
  o.method = EigsMethod::lanczos;
  const EigsResult r = eigs(a, nullptr, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << " " << runs_of(r);
  expect_values(r.values, select(shifted_spectrum(n, 0.001), 6, [](double v) { return -std::abs(v); }), 1e-9);
  EXPECT_TRUE(std::any_of(r.values.begin(), r.values.end(), [](double v) { return v < 0; }));
  EXPECT_TRUE(std::any_of(r.values.begin(), r.values.end(), [](double v) { return v > 0; }));
  for (std::size_t j = 1; j < r.values.size(); ++j) EXPECT_GE(std::abs(r.values[j - 1]), std::abs(r.values[j]));
  EXPECT_TRUE(says(r, "merged by |lambda|")) << r.why;
  EXPECT_GE(r.runs.size(), 2u) << runs_of(r);
  // the vectors are the values' (true residuals recomputed here)
  Eigen::Map<const Eigen::MatrixXd> x(r.vectors.data(), n, 6);
  const Eigen::MatrixXd ax = dense_of(a) * x;
  for (int j = 0; j < 6; ++j) EXPECT_LT((ax.col(j) - r.values[j] * x.col(j)).norm(), 1e-8);
}

// d = 0.5: [−1.5, 2.5]; the 6th largest (2.49) exceeds 1.5, so the largest end alone answers. The
// mirror d = −0.5 is answered by the smallest end alone.
TEST(EigsWhich, LargestMagnitudeOneEndWhenGershgorinProvesIt) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 300;
  for (double d : {0.5, -0.5}) {
    SCOPED_TRACE("d = " + std::to_string(d));
    const Csr<double> a = shifted_laplacian(n, d);
    const EigsResult r = eigs(a, nullptr, options(6, Which::largest_magnitude));
    ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << " " << runs_of(r);
    expect_values(r.values, select(shifted_spectrum(n, d), 6, [](double v) { return -std::abs(v); }), 1e-9);
    EXPECT_TRUE(says(r, d > 0 ? "the largest end only" : "the smallest end only")) << r.why;
    EXPECT_FALSE(says(r, "merged")) << r.why;
  }
}

// A non-negative spectrum (Gershgorin lo = 0): no run of the smallest end at all, also with B.
TEST(EigsWhich, LargestMagnitudeOfASemidefinitePencil) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const Csr<double> a = laplacian(20, 15);
  const Csr<double> b = lumped_mass(300, 2, 5);
  const EigsResult r = eigs(a, &b, options(4, Which::largest_magnitude));
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << " " << runs_of(r);
  const std::vector<double> all = dense_spectrum(a, &b);
  expect_values(r.values, {all.end() - 4, all.end()}, 1e-8 * all.back());
  EXPECT_TRUE(says(r, "the largest end only (Gershgorin: no eigenvalue below 0)")) << r.why;
}

// ---- both_ends and smallest_magnitude --------------------------------------------------------

TEST(EigsWhich, BothEndsWithOddK) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 250;
  const Csr<double> a = shifted_laplacian(n, 0.3);
  const EigsResult r = eigs(a, nullptr, options(5, Which::both_ends));
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << " " << runs_of(r);
  const std::vector<double> all = shifted_spectrum(n, 0.3);  // ascending
  expect_values(r.values, {all[0], all[1], all[n - 3], all[n - 2], all[n - 1]}, 1e-9);
  EXPECT_TRUE(std::is_sorted(r.values.begin(), r.values.end()));
  EXPECT_TRUE(says(r, "the 3 largest and the 2 smallest")) << r.why;
}

// Nearest 0 of an indefinite matrix: shift-invert at 0 where A can be factored; a dense solve of a
// small matrix without a factorization; the folded operator for an operator.
TEST(EigsWhich, SmallestMagnitudeOfAnIndefiniteMatrix) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const double d = 0.0137;  // (no eigenvalue at 0)
  for (std::int64_t n : {150, 600}) {
    const Csr<double> a = shifted_laplacian(n, d);
    const std::vector<double> want = select(shifted_spectrum(n, d), 4, [](double v) { return std::abs(v); });
    if (built_with_factor()) {
      const EigsResult r = eigs(a, nullptr, options(4, Which::smallest_magnitude));
      ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << " " << runs_of(r);
      expect_values(r.values, want, 1e-10);
      EXPECT_EQ(r.transform, "shift-invert");
      EXPECT_TRUE(says(r, "nearest 0 by shift-invert")) << r.why;
    }
    if (n > 400) continue;
    EigsOptions o = options(4, Which::smallest_magnitude);
    o.allow_factor = false;
    const EigsResult r = eigs(a, nullptr, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << " " << runs_of(r);
    expect_values(r.values, want, 1e-10);
    EXPECT_TRUE(says(r, "nearest 0 by a dense solve")) << r.why;
    for (std::size_t j = 1; j < r.values.size(); ++j) EXPECT_LE(std::abs(r.values[j - 1]), std::abs(r.values[j]));
  }
}

// The folded operator in operator form (no factorization, no dense solve): standard, and
// generalized with B given as an operator (B⁻¹ by block CG) or its inverse given (SciPy's Minv).
TEST(EigsWhich, SmallestMagnitudeByTheFoldedOperator) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 80;
  const double d = 0.0137;
  const Csr<double> a = shifted_laplacian(n, d);
  const Csr<double> b = lumped_mass(n, 1, 11);
  Csr<double> binv = b;
  for (double& v : binv.values) v = 1.0 / v;
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  auto aop = make_sparse_operator(a, kBackend, oo), bop = make_sparse_operator(b, kBackend, oo);
  auto binv_op = make_sparse_operator(binv, kBackend, oo);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant == 0 ? "B = I" : variant == 1 ? "B, CG" : "B, inverse given");
    EigsOptions o = options(3, Which::smallest_magnitude);
    o.tol = 1e-8;
    if (variant == 2) o.mass_inverse = binv_op.get();
    const LinearOperator<double>* bp = variant == 0 ? nullptr : bop.get();
    const EigsResult r = eigs(*aop, bp, *ops, o);
    const std::vector<double> all = variant == 0 ? shifted_spectrum(n, d) : dense_spectrum(a, &b);
    ASSERT_TRUE(r.status == SolverStatus::converged || r.status == SolverStatus::unverified)
        << r.reason << " " << runs_of(r);
    expect_values(r.values, select(all, 3, [](double v) { return std::abs(v); }), 1e-9);
    EXPECT_TRUE(says(r, "from the folded operator")) << r.why;
    EXPECT_TRUE(says(r, variant == 0 ? "B = I" : variant == 1 ? "block CG on B" : "B^-1 given")) << r.why;
    EXPECT_GE(r.runs.size(), 3u) << runs_of(r);  // both ends tried first, then the folded run
  }
  // nearest σ of an operator: the folded operator around σ (no shift-invert without a matrix)
  EigsOptions o = options(3, Which::nearest);
  o.tol = 1e-8;
  o.has_sigma = true;
  o.sigma = 0.71;
  const EigsResult r = eigs(*aop, nullptr, *ops, o);
  ASSERT_TRUE(r.status == SolverStatus::converged || r.status == SolverStatus::unverified) << r.reason << " " << runs_of(r);
  expect_values(r.values, select(shifted_spectrum(n, d), 3, [](double v) { return std::abs(v - 0.71); }), 1e-9);
  for (std::size_t j = 1; j < r.values.size(); ++j) EXPECT_LE(std::abs(r.values[j - 1] - 0.71), std::abs(r.values[j] - 0.71));
  EXPECT_TRUE(says(r, "nearest 0.71 from the folded operator")) << r.why;
}

// ---- constraints -----------------------------------------------------------------------------

// The pairs of (A, B) in the B-orthogonal complement of span(Y), by dense LAPACK: Z spans
// null((B·Y)ᵀ) (the last n − p columns of a full QR of B·Y), eigenvalues of (ZᵀAZ, ZᵀBZ).
std::vector<double> deflated_spectrum(const Csr<double>& a, const Csr<double>* b, const Eigen::MatrixXd& y) {
  const std::int64_t n = a.nrows, p = y.cols();
  const Eigen::MatrixXd bd = b ? dense_of(*b) : Eigen::MatrixXd::Identity(n, n);
  const Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(bd * y).householderQ();
  const Eigen::MatrixXd z = q.rightCols(n - p);
  Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(z.transpose() * dense_of(a) * z, z.transpose() * bd * z,
                                                               Eigen::EigenvaluesOnly);
  return {es.eigenvalues().data(), es.eigenvalues().data() + (n - p)};
}

Eigen::MatrixXd random_block(std::int64_t n, std::int64_t p, unsigned seed) {
  std::srand(seed);
  return Eigen::MatrixXd::Random(n, p);
}

TEST(EigsWhich, ConstraintsGiveTheDeflatedProblemsPairs) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 120, p = 3, k = 4;
  const Csr<double> a = shifted_laplacian(n, 2.0);  // SPD: λ in (0, 4)
  const Csr<double> b = lumped_mass(n, 1, 7);
  const Eigen::MatrixXd y = random_block(n, p, 5);
  for (const Csr<double>* bp : {static_cast<const Csr<double>*>(nullptr), &b})
    for (Which w : {Which::smallest, Which::largest, Which::largest_magnitude})
      for (EigsMethod m : {EigsMethod::lobpcg, EigsMethod::lanczos}) {
        SCOPED_TRACE(std::string(bp ? "B" : "B = I") + ", " + to_string(w) + ", " + to_string(m));
        EigsOptions o = options(k, w);
        o.method = m;
        o.constraints = std::vector<double>(y.data(), y.data() + n * p);
        const EigsResult r = eigs(a, bp, o);
        ASSERT_EQ(r.status, SolverStatus::converged) << r.reason << " " << runs_of(r);
        const std::vector<double> all = deflated_spectrum(a, bp, y);
        const std::vector<double> want = w == Which::smallest ? std::vector<double>(all.begin(), all.begin() + k)
                                                              : std::vector<double>(all.end() - k, all.end());
        expect_values(r.values, want, 1e-8);
        const Eigen::MatrixXd bd = bp ? dense_of(*bp) : Eigen::MatrixXd::Identity(n, n);
        Eigen::Map<const Eigen::MatrixXd> x(r.vectors.data(), n, k);
        EXPECT_LT((y.transpose() * bd * x).cwiseAbs().maxCoeff(), 1e-8 * (bd * y).norm());
        EXPECT_TRUE(says(r, "complement of 3 column(s) Y")) << r.why;
      }
}

// A start block keeps its meaning (projected first), a given LOBPCG preconditioner is projected
// (SciPy's test_diagonal[100-4-3]: diag(1..100), T = A⁻¹, Y the first three unit vectors: 4..7).
TEST(EigsWhich, ConstraintsWithAPreconditionerAndAStart) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 100, k = 4;
  std::vector<Triplet<double>> ta, tt;
  for (std::int64_t i = 0; i < n; ++i) ta.push_back({i, i, double(i + 1)}), tt.push_back({i, i, 1.0 / double(i + 1)});
  const Csr<double> a = csr_from_triplets<double>(n, n, std::move(ta), Symmetry::symmetric);
  const Csr<double> t = csr_from_triplets<double>(n, n, std::move(tt), Symmetry::symmetric);
  auto top = make_sparse_operator(t, kBackend, OperatorOptions{});
  EigsOptions o = options(k, Which::smallest);
  o.method = EigsMethod::lobpcg;
  o.preconditioner = top.get();
  o.max_iterations = 40;
  const Eigen::MatrixXd y = Eigen::MatrixXd::Identity(n, 3);
  o.constraints = std::vector<double>(y.data(), y.data() + n * 3);
  const Eigen::MatrixXd x0 = random_block(n, k, 9);
  o.v0 = std::vector<double>(x0.data(), x0.data() + n * k);
  const EigsResult r = eigs(a, nullptr, o);
  ASSERT_TRUE(r.status == SolverStatus::converged || r.status == SolverStatus::unverified)
      << r.reason << " " << runs_of(r);
  expect_values(r.values, {4, 5, 6, 7}, 1e-8);
  ASSERT_FALSE(r.runs.empty());
  EXPECT_LE(r.runs[0].iterations, 40) << runs_of(r);
  EXPECT_TRUE(says(r, "the preconditioner projected")) << r.why;
}

TEST(EigsWhich, ConstraintsRefused) {
  const std::int64_t n = 50;
  const Csr<double> a = shifted_laplacian(n, 2.0);
  EigsOptions o = options(3, Which::smallest);
  o.backend = Backend::cpu;
  Eigen::MatrixXd y = random_block(n, 2, 1);
  y.col(1) = 2.0 * y.col(0);  // dependent
  o.constraints = std::vector<double>(y.data(), y.data() + n * 2);
  try {
    eigs(a, nullptr, o);
    ADD_FAILURE() << "rank-deficient constraints accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank deficient"), std::string::npos) << e.what();
  }
  o.constraints = std::vector<double>(n * 47, 1.0);  // 47 + 3 = n
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
  o.constraints = std::vector<double>(n * 2 + 1, 1.0);  // not whole columns
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
  o.constraints = std::vector<double>(y.data(), y.data() + n);
  o.which = Which::smallest_magnitude;
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
  o.which = Which::smallest;
  o.method = EigsMethod::dense;
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
}

// ---- names -----------------------------------------------------------------------------------

TEST(EigsWhich, NamesAndSciPySpellings) {
  for (const std::string& name : which_names()) EXPECT_EQ(to_string(parse_which(name)), name);
  EXPECT_EQ(parse_which("LM"), Which::largest_magnitude);
  EXPECT_EQ(parse_which("sm"), Which::smallest_magnitude);
  EXPECT_EQ(parse_which("Be"), Which::both_ends);
  EXPECT_EQ(parse_which("LA"), Which::largest);
  EXPECT_EQ(parse_which("sa"), Which::smallest);
  EXPECT_EQ(parse_which("Largest"), Which::largest);
  try {
    parse_which("XX");
    ADD_FAILURE() << "XX accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("which 'XX'"), std::string::npos) << e.what();
  }
  // SM and BE select by λ, not by SciPy's transformed value: refused with sigma
  EigsOptions o = options(2, Which::both_ends);
  o.backend = Backend::cpu;
  o.has_sigma = true;
  EXPECT_THROW(eigs(shifted_laplacian(30, 0.1), nullptr, o), InvalidArgument);
}

}  // namespace
}  // namespace tcsolve::test
