// The GMRES polynomial preconditioner (solvers/krylov/gmres_polynomial.hpp) and the solve on it
// (polynomial_solve.hpp):
//   - harmonic Ritz values against their definition as a generalized eigenproblem (Eigen), and
//     the exact eigenvalues of a matrix whose Krylov space closes;
//   - the Leja order and the stability copies;
//   - B·v = (I − π(A))·v against a dense product of the factors in complex arithmetic, and p(A)·v
//     through A·p(A) = B, for real roots, pairs, either first or last, with and without the fused
//     step, on blocks that are not a multiple of anything, with poisoned outputs;
//   - GMRES and MINRES on B against dense LU, fewer steps than on A; a polynomial that makes B
//     singular, where the plain method on A finishes the solve.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <complex>
#include <limits>

#include "core/error.hpp"
#include "solvers/krylov/gmres.hpp"
#include "solvers/krylov/gmres_polynomial.hpp"
#include "solvers/krylov/polynomial_solve.hpp"
#include "spmm/chebyshev_step.hpp"
#include "tests/solvers/solver_test_util.hpp"

namespace tcsolve::test {
namespace {

using Mat = Eigen::MatrixXd;
using CMat = Eigen::MatrixXcd;
using cplx = std::complex<double>;
using krylov::GmresPolynomial;
using krylov::PolyRoot;

// A random unsymmetric matrix with a dominant positive diagonal (eigenvalues in the right half
// plane, some complex), about 6 entries a row.
Csr<double> random_unsymmetric(std::int64_t n, std::uint64_t seed) {
  std::vector<Triplet<double>> t;
  for (std::int32_t i = 0; i < n; ++i) {
    t.push_back({i, i, 4.0 + 2.0 * random_entry(seed, i, 0)});
    for (int k = 1; k <= 5; ++k) {
      const auto j = static_cast<std::int32_t>(static_cast<std::int64_t>((0.5 + 0.5 * random_entry(seed, i, k)) * double(n)) % n);
      if (j != i) t.push_back({i, j, random_entry(seed + 1, i, k)});
    }
  }
  return csr_from_triplets<double>(n, n, std::move(t));
}

// Dense I − π(A) = I − ∏ factors (complex arithmetic, the pair as its two conjugate factors).
Mat dense_b(const Mat& a, const std::vector<PolyRoot>& roots) {
  const std::int64_t n = a.rows();
  CMat pi = CMat::Identity(n, n), ac = a.cast<cplx>();
  for (const PolyRoot& r : roots) {
    const cplx t(r.re, r.im);
    pi = pi * (CMat::Identity(n, n) - ac / t);
    if (r.pair()) pi = pi * (CMat::Identity(n, n) - ac / std::conj(t));
  }
  EXPECT_LE(pi.imag().norm(), 1e-10 * (1.0 + pi.real().norm()));
  return Mat::Identity(n, n) - pi.real();
}

struct Applied {
  Mat b, p;
};
Applied apply_both(const Csr<double>& a, const std::vector<PolyRoot>& roots, const Mat& v, std::int64_t max_cols,
                   bool fused, bool scaled = false) {
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  std::unique_ptr<ChebyshevStep> step =
      fused ? make_chebyshev_step(a, kBackend, Precision::fp64, ops->stream()) : nullptr;
  MultiVector<double> dinv;
  if (scaled) dinv = krylov::inverse_diagonal(*ops, diagonal(a));
  GmresPolynomial poly(*op, *ops, max_cols, roots, std::move(step), scaled ? dinv.data() : nullptr);
  EXPECT_EQ(poly.degree(), krylov::polynomial_degree(roots));
  const std::int64_t n = v.rows(), s = v.cols();
  MultiVector<double> vd = ops->allocate(n, s), w = ops->allocate(n, s), y = ops->allocate(n, s);
  ops->from_host(v.data(), n, vd.view());
  Mat nan = Mat::Constant(n, s, std::numeric_limits<double>::quiet_NaN());
  ops->from_host(nan.data(), n, w.view());  // poisoned: the applies must not read their outputs
  ops->from_host(nan.data(), n, y.view());
  poly.preconditioned().apply(vd.view(), w.view());
  poly.polynomial().apply(vd.view(), y.view());
  ops->synchronize();
  Applied out{Mat(n, s), Mat(n, s)};
  ops->to_host(w.view(), out.b.data(), n);
  ops->to_host(y.view(), out.p.data(), n);
  EXPECT_EQ(poly.columns_applied(), s * (2 * poly.degree() - 1));
  return out;
}

TEST(GmresPolynomial, HarmonicRitzValuesSolveTheirGeneralizedEigenproblem) {
  // θ harmonic Ritz ⇔ H̄ᵀH̄·y = θ·H_kᵀ·y (H̄ the (k + 1) × k Hessenberg matrix).
  for (int k : {1, 2, 5, 9}) {
    SCOPED_TRACE(k);
    Mat h = Mat::Zero(k + 1, k);
    for (int j = 0; j < k; ++j)
      for (int i = 0; i <= j + 1; ++i) h(i, j) = random_entry(17 + k, i, j) + (i == j ? 3.0 : 0.0);
    std::vector<double> hv(h.data(), h.data() + h.size());
    const auto roots = krylov::harmonic_ritz_roots(hv, k);
    ASSERT_EQ(krylov::polynomial_degree(roots), k);
    const Mat lhs = h.transpose() * h, rhs = h.topRows(k).transpose();
    for (const PolyRoot& r : roots) {
      const cplx t(r.re, r.im);
      // det(H̄ᵀH̄ − θ·H_kᵀ) = 0: its smallest singular value relative to the matrix's scale.
      const CMat m = lhs.cast<cplx>() - t * rhs.cast<cplx>();
      Eigen::JacobiSVD<CMat> svd(m);
      EXPECT_LE(svd.singularValues()(k - 1), 1e-10 * svd.singularValues()(0)) << t;
    }
  }
}

TEST(GmresPolynomial, RootsOfAClosedKrylovSpaceAreTheEigenvalues) {
  // diag(1..7): the Krylov space of a generic vector closes after 7 steps; asking for 12 gives
  // the 7 eigenvalues exactly (Leja order: the largest first).
  std::vector<Triplet<double>> t;
  for (int i = 0; i < 7; ++i) t.push_back({i, i, double(i + 1)});
  const Csr<double> a = csr_from_triplets<double>(7, 7, std::move(t));
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  const auto pr = krylov::gmres_polynomial_roots(*op, *ops, 12, 5);
  EXPECT_EQ(pr.arnoldi_steps, 7);
  ASSERT_EQ(pr.roots.size(), 7u);
  EXPECT_NEAR(pr.roots[0].re, 7.0, 1e-9);
  std::vector<double> got;
  for (const PolyRoot& r : pr.roots) {
    EXPECT_EQ(r.im, 0.0);
    got.push_back(r.re);
  }
  std::sort(got.begin(), got.end());
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(got[i], i + 1.0, 1e-9);
}

TEST(GmresPolynomial, LejaOrderKeepsEveryRootAndAddsStabilityCopies) {
  const std::vector<PolyRoot> plain = {{1.0, 0.0}, {2.0, 0.5}, {3.0, 0.0}, {0.5, 0.0}};
  const auto o = krylov::stable_leja_order(plain);
  ASSERT_EQ(o.size(), plain.size());  // pof ≤ 1e4: no copies
  EXPECT_EQ(o[0].re, 3.0);            // the largest modulus first
  for (const PolyRoot& r : plain)
    EXPECT_EQ(std::count_if(o.begin(), o.end(), [&](const PolyRoot& q) { return q.re == r.re && q.im == r.im; }), 1);
  // 100 against 0.001 and 0.002: pof(100) = |1 − 1e5|·|1 − 5e4| ≈ 5e9, one copy (⌈(9.7 − 4)/14⌉).
  const auto c = krylov::stable_leja_order({{0.001, 0.0}, {0.002, 0.0}, {100.0, 0.0}});
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(std::count_if(c.begin(), c.end(), [](const PolyRoot& q) { return q.re == 100.0; }), 2);
}

class PolynomialApply : public ::testing::TestWithParam<bool> {};  // fused step or not

TEST_P(PolynomialApply, MatchesTheDenseProductOfItsFactors) {
  const std::int64_t n = 37, s = 3;
  const Csr<double> a = random_unsymmetric(n, 3);
  const Mat ad = dense(a), v = random_block(n, s, 9);
  const std::vector<std::vector<PolyRoot>> cases = {
      {{2.0, 0.0}},                                        // degree 1
      {{3.0, 1.0}},                                        // one pair
      {{2.0, 0.0}, {3.0, 1.0}, {5.0, 0.0}},                // pair in the middle
      {{3.0, 1.0}, {2.0, 0.0}},                            // pair first, real last
      {{2.0, 0.0}, {4.0, 0.5}, {3.0, 1.0}},                // pairs last
      {{3.0, 1.0}, {4.0, 2.0}, {6.0, 0.0}, {5.0, 0.0}},    // pairs first, two reals after
      {{6.0, 0.0}, {4.5, 0.0}, {3.0, 0.0}, {2.5, 0.0}}};   // reals only, even count
  // Jacobi-scaled: B = D·(I − π(K))·D⁻¹ with K = D⁻¹A, D = diag(A) (varying here), and A·P = B.
  const Eigen::VectorXd dg = ad.diagonal();
  const Mat k = dg.cwiseInverse().asDiagonal() * ad;
  for (bool scaled : {false, true})
    for (const auto& roots : cases) {
      SCOPED_TRACE(testing::Message() << roots.size() << " roots, first " << roots[0].re << "+" << roots[0].im
                                      << "i, scaled " << scaled);
      const Applied got = apply_both(a, roots, v, s + 2, GetParam(), scaled);
      const Mat bref = scaled ? Mat(dg.asDiagonal() * dense_b(k, roots) * dg.cwiseInverse().asDiagonal() * v)
                              : Mat(dense_b(ad, roots) * v);
      EXPECT_LE((got.b - bref).norm(), 1e-12 * (1.0 + bref.norm()));
      EXPECT_LE((ad * got.p - bref).norm(), 1e-12 * (1.0 + bref.norm()));  // A·M⁻¹ = B
    }
  // Roots from the Arnoldi run (some complex for this matrix), with their Leja order.
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  const auto pr = krylov::gmres_polynomial_roots(*op, *ops, 8, 11);
  const Applied got = apply_both(a, pr.roots, v, s, GetParam());
  const Mat bref = dense_b(ad, pr.roots) * v;
  EXPECT_LE((got.b - bref).norm(), 1e-11 * (1.0 + bref.norm()));
  EXPECT_LE((ad * got.p - bref).norm(), 1e-11 * (1.0 + bref.norm()));
}

INSTANTIATE_TEST_SUITE_P(FusedOrNot, PolynomialApply, ::testing::Bool());

// The fp32 apply (the Richardson form) against p(A)·v in fp64 (polynomial_sum), for real roots,
// pairs first and last, and the Arnoldi run's roots; 37 rows, 3 columns in a workspace of 5, its
// output poisoned; a relative error of fp32 size.
TEST(GmresPolynomial, Fp32ApplyMatchesTheFp64Sum) {
  const std::int64_t n = 37, s = 3;
  const Csr<double> a = random_unsymmetric(n, 3);
  const Mat v = random_block(n, s, 9);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  std::vector<std::vector<PolyRoot>> cases = {{{2.0, 0.0}},
                                              {{3.0, 1.0}},
                                              {{2.0, 0.0}, {3.0, 1.0}, {5.0, 0.0}},
                                              {{3.0, 1.0}, {2.0, 0.0}},
                                              {{2.0, 0.0}, {4.0, 0.5}, {3.0, 1.0}},
                                              {{6.0, 0.0}, {4.5, 0.0}, {3.0, 0.0}, {2.5, 0.0}}};
  cases.push_back(krylov::gmres_polynomial_roots(*op, *ops, 8, 11).roots);
  for (const auto& roots : cases) {
    SCOPED_TRACE(testing::Message() << roots.size() << " roots, first " << roots[0].re << "+" << roots[0].im << "i");
    GmresPolynomial poly(*op, *ops, s + 2, roots, make_chebyshev_step(a, kBackend, Precision::fp64, ops->stream()),
                         nullptr, true);
    ASSERT_TRUE(poly.has_fp32());
    poly.reserve_fp32();
    MultiVector<double> vd = ops->allocate(n, s), y = ops->allocate(n, s), y32 = ops->allocate(n, s);
    ops->from_host(v.data(), n, vd.view());
    const Mat nan = Mat::Constant(n, s, std::numeric_limits<double>::quiet_NaN());
    ops->from_host(nan.data(), n, y32.view());
    poly.polynomial().apply(vd.view(), y.view());
    const std::int64_t before = poly.columns_applied();
    poly.polynomial32().apply(vd.view(), y32.view());
    ops->synchronize();
    EXPECT_EQ(poly.columns_applied() - before, s * (poly.degree() - 1));  // (as many products as the sum)
    Mat p(n, s), p32(n, s);
    ops->to_host(y.view(), p.data(), n);
    ops->to_host(y32.view(), p32.data(), n);
    for (std::int64_t j = 0; j < s; ++j)
      EXPECT_LE((p32.col(j) - p.col(j)).norm(), 1e-5 * p.col(j).norm()) << "column " << j;
  }
  // No fused step (or a row scaling): no fp32 apply.
  GmresPolynomial none(*op, *ops, s, cases[0], nullptr, nullptr, true);
  EXPECT_FALSE(none.has_fp32());
  MultiVector<double> vd = ops->allocate(n, s), y = ops->allocate(n, s);
  EXPECT_THROW(none.polynomial32().apply(vd.view(), y.view()), InvalidArgument);
}

TEST(GmresPolynomial, RefusesBadRootsAndBlocks) {
  const Csr<double> a = random_unsymmetric(10, 1);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  EXPECT_THROW(GmresPolynomial(*op, *ops, 2, {}), InvalidArgument);
  EXPECT_THROW(GmresPolynomial(*op, *ops, 2, {{0.0, 0.0}}), InvalidArgument);
  EXPECT_THROW(GmresPolynomial(*op, *ops, 2, {{std::nan(""), 0.0}}), InvalidArgument);
  GmresPolynomial p(*op, *ops, 2, {{2.0, 0.0}});
  MultiVector<double> v = ops->allocate(10, 3), w = ops->allocate(10, 3);
  EXPECT_THROW(p.apply_preconditioned(v.view(), w.view()), InvalidArgument);  // 3 columns > 2
  EXPECT_THROW(krylov::gmres_polynomial_roots(*op, *ops, 0, 1), InvalidArgument);
  EXPECT_THROW(krylov::gmres_polynomial_roots(*op, *ops, 501, 1), InvalidArgument);  // (GMRES's kMaxRestart)
  // A = 0: A·v vanishes, no root (the callers go without the polynomial)
  std::vector<Triplet<double>> z;
  for (int i = 0; i < 10; ++i) z.push_back({i, i, 0.0});
  const Csr<double> zero = csr_from_triplets<double>(10, 10, std::move(z));
  auto zop = make_operator(zero);
  EXPECT_TRUE(krylov::gmres_polynomial_roots(*zop, *ops, 4, 1).roots.empty());
}

// −Δu + w·∇u (upwind), nx × nx, and the 2D Laplacian shifted into indefiniteness.
Csr<double> stencil2d(int nx, double peclet, double shift) {
  const double h = 1.0 / (nx + 1), w = peclet * h;
  std::vector<Triplet<double>> t;
  for (int j = 0; j < nx; ++j)
    for (int i = 0; i < nx; ++i) {
      const int r = i + nx * j;
      t.push_back({r, r, 4.0 + 2.0 * w - shift});
      if (i > 0) t.push_back({r, r - 1, -1.0 - w});
      if (i + 1 < nx) t.push_back({r, r + 1, -1.0});
      if (j > 0) t.push_back({r, r - nx, -1.0 - w});
      if (j + 1 < nx) t.push_back({r, r + nx, -1.0});
    }
  const std::int64_t n = std::int64_t(nx) * nx;
  return csr_from_triplets<double>(n, n, std::move(t));
}

// Solves by polynomial_solve, checks every column's true residual and the dense LU answer.
// fused: A's fused step (without it, no fp32 apply: GMRES on B); fp32_on_host: the fp32 apply,
// hence FGMRES, on the CPU too (on the GPU it comes with the fused step).
SolveResult solve_checked(krylov::KrylovMethod m, const Csr<double>& a, const std::vector<PolyRoot>& roots,
                          const Mat& b, const KrylovOptions& o, bool fused = true, bool fp32_on_host = false) {
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  GmresPolynomial poly(*op, *ops, b.cols(), roots,
                       fused ? make_chebyshev_step(a, kBackend, Precision::fp64, ops->stream()) : nullptr, nullptr,
                       fp32_on_host);
  SolveResult r = krylov::polynomial_solve(m, *op, poly, b.data(), b.rows(), b.cols(), *ops, o);
  EXPECT_EQ(r.status, SolverStatus::converged) << r.reason;
  const Mat ad = dense(a);
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, b.cols());
  const Mat xref = Eigen::PartialPivLU<Mat>(ad).solve(b);
  for (std::int64_t j = 0; j < b.cols(); ++j) {
    const double rel = (b.col(j) - ad * x.col(j)).norm() / b.col(j).norm();
    EXPECT_LE(rel, o.tol) << "column " << j;
    EXPECT_NEAR(rel, r.residual_norms[j], 1e-3 * rel + 1e-15) << "column " << j;
    EXPECT_LE((x.col(j) - xref.col(j)).norm(), 1e-4 * xref.col(j).norm()) << "column " << j;
  }
  return r;
}

TEST(PolynomialSolve, GmresOnConvectionDiffusionTakesFewerSteps) {
  const Csr<double> a = stencil2d(45, 40.0, 0.0);  // 2025 rows
  const Mat b = random_block(a.nrows, 5, 21);
  KrylovOptions o;
  o.tol = 1e-9, o.restart = 10;
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  const SolveResult plain = gmres(*op, b.data(), b.rows(), b.cols(), *ops, o);
  ASSERT_EQ(plain.status, SolverStatus::converged) << plain.reason;
  const auto pr = krylov::gmres_polynomial_roots(*op, *ops, 10, 3);
  const SolveResult r = solve_checked(krylov::KrylovMethod::gmres, a, pr.roots, b, o);
  // (on the GPU the fused step brings the fp32 apply: FGMRES)
  EXPECT_NE(r.method.find(kBackend == Backend::cuda ? "with p(A) in fp32 steps" : "on A·p(A)"), std::string::npos)
      << r.method;
  EXPECT_EQ(r.method.find("then"), std::string::npos) << r.method;  // no plain phase needed
  EXPECT_LT(3 * r.iterations, plain.iterations) << r.iterations << " against " << plain.iterations;
  // FGMRES with p(A) in fp32 steps (on the CPU as well here): the same answer, within two
  // iterations of GMRES on B in fp64, the fp32 p's rounding notwithstanding.
  const SolveResult f = solve_checked(krylov::KrylovMethod::gmres, a, pr.roots, b, o, true, true);
  EXPECT_EQ(f.method.rfind("fgmres(10) with p(A) in fp32 steps", 0), 0u) << f.method;
  const SolveResult g = solve_checked(krylov::KrylovMethod::gmres, a, pr.roots, b, o, false);
  EXPECT_NE(g.method.find("on A·p(A)"), std::string::npos) << g.method;
  EXPECT_LE(f.iterations, g.iterations + 2) << f.iterations << " against " << g.iterations;
  // Products with A: p(A)'s degree − 1 and A·z_j a column and step (the longest column's steps at
  // least; at most every column's, frozen ones included, with one step queued past each cycle's
  // end on the GPU), and the true residuals' A·x after each cycle.
  const std::int64_t d = krylov::polynomial_degree(pr.roots), cols = b.cols();
  const std::int64_t cycles = f.iterations / o.restart + 1;
  EXPECT_GE(f.operator_applies, f.iterations * d) << f.operator_applies;
  EXPECT_LE(f.operator_applies, (f.iterations + cycles) * cols * d + (cycles + 1) * cols) << f.operator_applies;
}

TEST(PolynomialSolve, JacobiScaledGmresOnRowScaledConvectionDiffusion) {
  // Rows scaled by factors in [0.25, 4]: diag(A) varies; the polynomial in D⁻¹A takes fewer
  // steps than Jacobi-preconditioned GMRES and gives the same answer.
  Csr<double> a = stencil2d(45, 40.0, 0.0);
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    const double f = std::pow(4.0, random_entry(77, i, 0));
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) a.values[p] *= f;
  }
  const Mat b = random_block(a.nrows, 4, 23);
  KrylovOptions o;
  o.tol = 1e-9, o.restart = 10;
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  KrylovOptions oj = o;
  oj.jacobi_diagonal = diagonal(a);
  const SolveResult jac = gmres(*op, b.data(), b.rows(), b.cols(), *ops, oj);
  ASSERT_EQ(jac.status, SolverStatus::converged) << jac.reason;
  MultiVector<double> dinv = krylov::inverse_diagonal(*ops, diagonal(a));
  const krylov::RowScaledOperator k(*op, *ops, dinv.data());
  const auto pr = krylov::gmres_polynomial_roots(k, *ops, 10, 3);
  GmresPolynomial poly(*op, *ops, b.cols(), pr.roots, make_chebyshev_step(a, kBackend, Precision::fp64, ops->stream()),
                       dinv.data());
  EXPECT_NE(poly.describe().find("Jacobi-scaled"), std::string::npos) << poly.describe();
  const SolveResult r = krylov::polynomial_solve(krylov::KrylovMethod::gmres, *op, poly, b.data(), b.rows(), b.cols(),
                                                 *ops, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << r.reason;
  EXPECT_EQ(r.method.find("then"), std::string::npos) << r.method;
  EXPECT_LT(3 * r.iterations, jac.iterations) << r.iterations << " against " << jac.iterations;
  const Mat ad = dense(a);
  Eigen::Map<const Mat> x(r.solutions.data(), a.nrows, b.cols());
  for (std::int64_t j = 0; j < b.cols(); ++j)
    EXPECT_LE((b.col(j) - ad * x.col(j)).norm(), 1e-9 * b.col(j).norm()) << j;
}

TEST(PolynomialSolve, MinresOnAnIndefiniteMatrix) {
  const Csr<double> a = stencil2d(40, 0.0, 0.3);  // the Laplacian − 0.3·I: ~ 60 negative eigenvalues
  const Mat b = random_block(a.nrows, 4, 5);
  KrylovOptions o;
  o.tol = 1e-9;
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  const auto pr = krylov::gmres_polynomial_roots(*op, *ops, 8, 3);
  for (const PolyRoot& r : pr.roots) EXPECT_EQ(r.im, 0.0);  // symmetric A: real harmonic Ritz values
  const SolveResult r = solve_checked(krylov::KrylovMethod::minres, a, pr.roots, b, o);
  EXPECT_NE(r.method.find("on A·p(A)"), std::string::npos) << r.method;
}

TEST(PolynomialSolve, ASingularBLeavesTheRestToThePlainMethod) {
  // A = diag(1..60), roots {20, 30}: p(z) = 1/20 + 1/30 − z/600 vanishes at z = 50, an eigenvalue
  // of A, so B = A·p(A) is singular and GMRES on B cannot converge; GMRES on A finishes.
  std::vector<Triplet<double>> t;
  for (int i = 0; i < 60; ++i) t.push_back({i, i, double(i + 1)});
  const Csr<double> a = csr_from_triplets<double>(60, 60, std::move(t));
  const Mat b = random_block(60, 2, 8);
  KrylovOptions o;
  o.tol = 1e-10, o.restart = 20;
  const SolveResult r = solve_checked(krylov::KrylovMethod::gmres, a, {{20.0, 0.0}, {30.0, 0.0}}, b, o, false);
  EXPECT_NE(r.method.find("then gmres(20) on A"), std::string::npos) << r.method;
}

TEST(PolynomialSolve, AColumnLeftWorseThanZeroStartsAgainFromZero) {
  // A nilpotent A (a shift: a_{i,i+1} = 1): its harmonic Ritz values describe nothing, the
  // polynomial phase leaves x far off; the plain phase must not start from there. Whatever the
  // ending, the reported residual is the true one and no worse than x = 0's (1).
  std::vector<Triplet<double>> t;
  for (int i = 0; i + 1 < 40; ++i) t.push_back({i, i + 1, 1.0});
  const Csr<double> a = csr_from_triplets<double>(40, 40, std::move(t));
  const Mat b = random_block(40, 2, 3);
  auto op = make_operator(a);
  auto ops = make_dense_ops(kBackend);
  KrylovOptions o;
  o.tol = 1e-10, o.restart = 10, o.max_iterations = 400;
  GmresPolynomial poly(*op, *ops, 2, {{0.5, 0.0}, {-0.3, 0.7}}, nullptr);
  const SolveResult r = krylov::polynomial_solve(krylov::KrylovMethod::gmres, *op, poly, b.data(), 40, 2, *ops, o);
  const Mat ad = dense(a);
  Eigen::Map<const Mat> x(r.solutions.data(), 40, 2);
  for (int j = 0; j < 2; ++j) {
    const double rel = (b.col(j) - ad * x.col(j)).norm() / b.col(j).norm();
    EXPECT_LE(rel, 1.0 + 1e-12) << j;
    EXPECT_NEAR(rel, r.residual_norms[j], 1e-6 * rel + 1e-15) << j;
  }
}

}  // namespace
}  // namespace tcsolve::test
