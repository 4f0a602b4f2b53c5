// The eigs() driver: shift-invert with certified counts, the convergence tests, the multiplicity
// re-check, and the rule that a wrong answer is never labelled converged. References: dense
// LAPACK-quality solvers in Eigen — for SPD A through the Cholesky-inverse (the eigenvalues of
// L⁻¹·B·L⁻ᵀ are 1/λ; its largest are relatively accurate, unlike the smallest eigenvalues of a
// plain dense solve, whose absolute error is ~ eps·‖A‖), and closed forms.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/interrupt.hpp"
#include "factor/sparse_factor.hpp"
#include "io/matrix_io.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/eigs/recheck.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/solvers/eigs_test_util.hpp"
#include "tests/solvers/solver_test_util.hpp"
#include "tests/traps.hpp"

namespace tcsolve::test {
namespace {

#define SKIP_WITHOUT_FACTOR()                                                  \
  do {                                                                         \
    if (!built_with_factor()) GTEST_SKIP() << "built without CHOLMOD/MUMPS";   \
  } while (0)

// A-posteriori accuracy of a returned pair, independent of any eigensolver: the Rayleigh quotient ρ
// and residual r = A·x − ρ·B·x in long double (64-bit mantissa), then the Kato–Temple bound
// |λ_true − ρ| ≤ ‖r‖²·‖B⁻¹‖ / (xᵀBx · gap), gap = distance from ρ to the nearest reference
// eigenvalue outside ρ's cluster. Returns (|λ − ρ| + bound) / |λ|: the relative error of λ.
double extended_precision_error(const Csr<double>& a, const Csr<double>* b, const double* x,
                                double lam, const std::vector<double>& ref, double binv) {
  using LD = long double;
  const std::int64_t n = a.nrows;
  std::vector<LD> ax(n, 0), bx(n, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) ax[i] += LD(a.values[p]) * x[a.col_idx[p]];
    if (b)
      for (std::int64_t p = b->row_ptr[i]; p < b->row_ptr[i + 1]; ++p) bx[i] += LD(b->values[p]) * x[b->col_idx[p]];
    else
      bx[i] = x[i];
  }
  LD xax = 0, xbx = 0;
  for (std::int64_t i = 0; i < n; ++i) xax += x[i] * ax[i], xbx += x[i] * bx[i];
  const LD rho = xax / xbx;
  LD r2 = 0;
  for (std::int64_t i = 0; i < n; ++i) r2 += (ax[i] - rho * bx[i]) * (ax[i] - rho * bx[i]);
  double gap = INFINITY;
  const double rd = static_cast<double>(rho);
  for (double v : ref)
    if (std::abs(v - rd) > 1e-6 * std::abs(rd)) gap = std::min(gap, std::abs(v - rd));
  const double bound = static_cast<double>(r2 * binv / xbx) / gap;
  return (std::abs(lam - rd) + bound) / std::abs(lam);
}

EigsOptions base_options(std::int64_t k, Which w = Which::smallest) {
  EigsOptions o;
  o.k = k;
  o.which = w;
  o.tol = 1e-10;
  o.backend = kBackend;
  return o;
}

// Max relative error of the returned values against the k first of `ref` (in wanted order).
double max_rel_error(const EigsResult& r, const std::vector<double>& ref) {
  double e = 0;
  for (std::size_t j = 0; j < r.values.size(); ++j)
    e = std::max(e, std::abs(r.values[j] - ref[j]) / std::abs(ref[j]));
  return e;
}

// 10·u·‖|A|·|x| + |λ|·|B|·|x|‖: the rounding error of a residual computed in double.
double residual_floor(const Csr<double>& a, const Csr<double>* b, const double* x, double lam) {
  double s = 0;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double t = 0, tb = 0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) t += std::abs(a.values[p] * x[a.col_idx[p]]);
    if (b)
      for (std::int64_t p = b->row_ptr[i]; p < b->row_ptr[i + 1]; ++p) tb += std::abs(b->values[p] * x[b->col_idx[p]]);
    else
      tb = std::abs(x[i]);
    s += (t + std::abs(lam) * tb) * (t + std::abs(lam) * tb);
  }
  return 10 * 1.1102230246251565e-16 * std::sqrt(s);
}

// True residuals on the host (in double, up to their own rounding floor), B-orthonormality, and
// the driver's own numbers.
void check_pairs(const EigsResult& r, const Csr<double>& a, const Csr<double>* b) {
  const std::int64_t k = static_cast<std::int64_t>(r.values.size());
  ASSERT_EQ(static_cast<std::int64_t>(r.vectors.size()), a.nrows * k);
  auto res = residuals(a, b, r.vectors, r.values);
  for (std::int64_t j = 0; j < k; ++j) {
    const double floor = residual_floor(a, b, r.vectors.data() + j * a.nrows, r.values[j]);
    EXPECT_NEAR(res[j], r.residual_norms[j], 1e-6 * r.residual_bounds[j] + floor);
    EXPECT_LE(res[j], r.residual_bounds[j] * (1 + 1e-6) + floor) << "pair " << j;
  }
  EXPECT_LT(orthogonality_error(b, r.vectors, a.nrows, k), 1e-8);
}

}  // namespace
std::ostream& operator<<(std::ostream& o, SolverStatus s) { return o << to_string(s); }
std::ostream& operator<<(std::ostream& o, Certified c) { return o << to_string(c); }
namespace {

std::string describe(const EigsResult& r) {
  std::string s = std::string(to_string(r.status)) + " (" + r.reason + "), method " + r.method +
                  ", transform " + r.transform + ", certified " + to_string(r.certified) + ": " +
                  r.certificate + "; values:";
  for (double v : r.values) s += " " + std::to_string(v);
  return s;
}

// The default path verified the set (dense solve, certificate or re-check) and says how; with
// certify the Sylvester count ran and certified it.
void expect_verified(const EigsResult& r, bool certify) {
  if (certify) {
    EXPECT_EQ(r.verification, Verification::certificate) << r.certificate;
    EXPECT_EQ(r.certified, Certified::yes) << r.certificate;
  } else {
    EXPECT_NE(r.verification, Verification::none) << r.certificate;
    if (r.verification == Verification::certificate) EXPECT_EQ(r.certified, Certified::yes) << r.certificate;
    if (r.verification != Verification::certificate) EXPECT_EQ(r.certified, Certified::not_checked);
  }
}

// ---- real stiffness matrices and stiffness/mass pairs, k = 10 and 50 smallest ------------------

struct RealCase {
  const char* k_name;
  const char* m_name;  // "" = standard
  int k;
};
void PrintTo(const RealCase& c, std::ostream* o) {
  *o << c.k_name << (c.m_name[0] ? "/" : "") << c.m_name << " k=" << c.k;
}
class RealSmallest : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealSmallest, ShiftInvertMatchesDenseAndIsCertified) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  TCSOLVE_SKIP_WITHOUT_MATRICES();
  SKIP_WITHOUT_FACTOR();
  const RealCase& c = GetParam();
  Csr<double> a = read_mtx((matrices_dir() / (std::string(c.k_name) + ".mtx")).string());
  Csr<double> b;
  const bool gen = c.m_name[0] != 0;
  if (gen) b = read_mtx((matrices_dir() / (std::string(c.m_name) + ".mtx")).string());
  // k = 50 on the 48-row bcsstk01 is impossible (k < n): the largest possible k there.
  const std::int64_t k = std::min<std::int64_t>(c.k, a.nrows - 2);
  auto ref = accurate_spectrum(a, gen ? &b : nullptr);
  // The default test (rel, tol 1e-8), as `tcsolve eigs --which smallest` runs: the eigenvalue
  // error is quadratic in the residual, and checked to 1e-10 below. (At tol 1e-10 the residual
  // of some bcsstk20/bcsstm20 pairs stalls near 5e-5 against a bound of 8e-6: not_converged.)
  EigsOptions o = base_options(k);
  o.tol = 1e-8;
  auto r = eigs(a, gen ? &b : nullptr, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
  // auto: dense for small n (or k close to n); otherwise the planner's choice, which must not be
  // a filter or a Krylov method on A for the stiff ones (κ(A) ≥ 1e8: those need far more):
  // shift-invert, or the dense solve where it is priced cheaper (on the H200, bcsstk20 with
  // k = 50: dense 0.067 s against shift-invert 0.078 s), its answers checked below alike.
  const double kappa_a = [&] {
    const auto sa = gen ? accurate_spectrum(a, nullptr) : ref;
    return sa.back() / sa.front();
  }();
  if (a.nrows <= 400 || 3 * k + 32 > a.nrows) EXPECT_EQ(r.method, "dense");
  else if (kappa_a >= 1e8)
    EXPECT_TRUE(r.transform == "shift-invert" || r.method == "dense") << "kappa " << kappa_a << ": " << r.why;
  // Verified by the planner's choice: the dense solve, the certificate when cheap, else the
  // re-check; every one of them says so.
  EXPECT_NE(r.verification, Verification::none) << r.certificate;
  if (r.verification == Verification::certificate) EXPECT_EQ(r.certified, Certified::yes) << r.certificate;
  check_pairs(r, a, gen ? &b : nullptr);
  // --certify: the Sylvester count always runs and certifies every set.
  o.certify = true;
  auto rc = eigs(a, gen ? &b : nullptr, o);
  ASSERT_EQ(rc.status, SolverStatus::converged) << describe(rc);
  EXPECT_EQ(rc.verification, Verification::certificate);
  EXPECT_EQ(rc.certified, Certified::yes) << rc.certificate;
  EXPECT_NE(rc.certificate.find("asked for"), std::string::npos) << rc.certificate;
  o.certify = false;
  // Accuracy: (1) extended-precision a-posteriori bound ≤ 1e-10 relative for every value;
  // (2) the dense reference agrees to 1e-10 — or, on κ > 1e10 matrices where the dense
  // reference itself is no better than ~1e-9 (it differs from its own extended-precision run by
  // that much), to 1e-8 with (1) showing that the tcsolve value is the accurate one.
  double binv = 1.0;
  if (gen) binv = 1.0 / dense_spectrum(b).front();
  double worst_ext = 0;
  for (std::int64_t j = 0; j < k; ++j)
    worst_ext = std::max(worst_ext, extended_precision_error(a, gen ? &b : nullptr,
                                                             r.vectors.data() + j * a.nrows,
                                                             r.values[j], ref, binv));
  EXPECT_LE(worst_ext, 1e-10) << "extended-precision error " << worst_ext << ", vs dense " << max_rel_error(r, ref);
  // The dense Cholesky-inverse reference is as accurate as κ(A) allows.
  const auto sa = gen ? accurate_spectrum(a, nullptr) : ref;
  const double kappa = sa.back() / sa.front();
  EXPECT_LE(max_rel_error(r, ref), kappa > 1e10 ? 1e-8 : 1e-10) << describe(r);
  auto sci = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3e", v);
    return std::string(b);
  };
  RecordProperty("kappa_A", sci(kappa));
  RecordProperty("max_rel_error_vs_dense", sci(max_rel_error(r, ref)));
  RecordProperty("max_rel_error_extended", sci(worst_ext));
}

// bcsstk21 (n = 3600) at k = 50 only: its dense references cost 30 s (alone) and 125 s (with
// bcsstm21) a test process on the 2-core CI machine, and k = 10's set is inside k = 50's.
std::vector<RealCase> real_cases() {
  std::vector<RealCase> v;
  auto ks = [](const char* a) { return std::string(a) == "bcsstk21" ? std::vector<int>{50} : std::vector<int>{10, 50}; };
  for (const char* s : {"bcsstk01", "bcsstk02", "bcsstk03", "bcsstk04", "bcsstk05", "bcsstk06",
                        "bcsstk07", "bcsstk08", "bcsstk09", "bcsstk10", "bcsstk19", "bcsstk20",
                        "bcsstk21", "bcsstk22"})
    for (int k : ks(s)) v.push_back({s, "", k});
  // Every pair with a positive definite mass (bcsstm10 is indefinite: tested as bad input).
  static const char* pairs[][2] = {{"bcsstk05", "bcsstm05"}, {"bcsstk06", "bcsstm06"},
                                   {"bcsstk07", "bcsstm07"}, {"bcsstk08", "bcsstm08"},
                                   {"bcsstk09", "bcsstm09"}, {"bcsstk19", "bcsstm19"},
                                   {"bcsstk20", "bcsstm20"}, {"bcsstk21", "bcsstm21"},
                                   {"bcsstk22", "bcsstm22"}};
  for (auto& p : pairs)
    for (int k : ks(p[0])) v.push_back({p[0], p[1], k});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Eigs, RealSmallest, ::testing::ValuesIn(real_cases()), [](const auto& info) {
  const RealCase& c = info.param;
  return std::string(c.k_name) + (c.m_name[0] ? std::string("_") + c.m_name : "") + "_k" +
         std::to_string(c.k);
});

TEST(Eigs, IndefiniteMassIsRefused) {
  TCSOLVE_SKIP_WITHOUT_MATRICES();
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = read_mtx((matrices_dir() / "bcsstk10.mtx").string());
  Csr<double> b = read_mtx((matrices_dir() / "bcsstm10.mtx").string());
  EigsOptions o = base_options(6);
  o.backend = Backend::cpu;
  try {
    eigs(a, &b, o);
    ADD_FAILURE() << "indefinite mass accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not positive definite"), std::string::npos) << e.what();
  }
}

// ---- traps ------------------------------------------------------------------------------------

// 74-fold style: unit-diagonal rows in a stiff matrix (eigenvalue 1 × m, ‖A‖ ≈ 1.2e10).
TEST(Eigs, ConstrainedDofsAllCopiesOfTheRepeatedValue) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  std::int64_t m = 0;
  Csr<double> a = constrained_dofs(7, 5, 1e9, 1e-6, &m);  // 343 rows, m = 69
  ASSERT_GT(m, 10);
  for (std::int64_t k : {10, 40})
    for (bool certify : {false, true}) {
      EigsOptions o = base_options(k);
      o.certify = certify;
      auto r = eigs(a, nullptr, o);
      ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
      expect_verified(r, certify);
      for (double v : r.values) EXPECT_NEAR(v, 1.0, 1e-12);
      check_pairs(r, a, nullptr);
    }
  // k beyond the multiplicity: the next values follow 1.0 × m. (The dense references resolve the
  // soft end — 1.0 — or the stiff end, not both: checked in extended precision instead.)
  auto ref = accurate_spectrum(a, nullptr);
  auto r = eigs(a, nullptr, base_options(m + 4));
  ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
  for (std::int64_t j = 0; j < m; ++j) EXPECT_NEAR(r.values[j], 1.0, 1e-12);
  auto plain = dense_spectrum(a);
  for (std::int64_t j = 0; j < m + 4; ++j) {
    EXPECT_LE(extended_precision_error(a, nullptr, r.vectors.data() + j * a.nrows, r.values[j], plain, 1.0),
              1e-10) << "value " << j;
    EXPECT_NEAR(r.values[j], plain[j], 1e-14 * plain.back() * 100) << "value " << j;
  }
}

// The same trap past the dense limit (729 rows, 146 copies of 1.0), on the auto path: on the
// CPU shift-invert Lanczos runs single vectors (plan.hpp), so the copies beyond the first come
// from rounding or from the verification's rounds; every copy must be there, or the status must
// not say converged. With --certify the count proves the set.
TEST(Eigs, ManyCopiesPastTheDenseLimitOnTheAutoPath) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  std::int64_t m = 0;
  Csr<double> a = constrained_dofs(9, 5, 1e9, 1e-6, &m);
  ASSERT_GT(a.nrows, 400);
  ASSERT_GT(m, 40);
  for (std::int64_t k : {10, 40})
    for (bool certify : {false, true}) {
      SCOPED_TRACE("k = " + std::to_string(k) + (certify ? ", certify" : ""));
      EigsOptions o = base_options(k);
      o.certify = certify;
      auto r = eigs(a, nullptr, o);
      EXPECT_EQ(r.transform, "shift-invert") << r.why;
      if (r.status == SolverStatus::converged) {
        for (double v : r.values) EXPECT_NEAR(v, 1.0, 1e-12);
        check_pairs(r, a, nullptr);
      }
      EXPECT_EQ(r.status, SolverStatus::converged) << describe(r);
    }
}

// A lumped mass as a matrix of its own (bcsstm21's shape: diagonal, 3600 rows, its smallest value
// 1200 times, then 600 and 1800 copies of two others, interleaved by dof): the 32 smallest on the
// auto path are 32 copies of the smallest. The count finds copies missing from the first set; its
// rounds must look for the 32 - returned wanted ones (not all 1200 below the k-th value: a block
// of 1182 columns ran past 128 s, 2026-11-28), and the set ends certified.
TEST(Eigs, ThousandCopiesOfTheSmallestFoundByTheCountsRounds) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  const std::int64_t n = 3600;
  std::vector<Triplet<double>> t;
  // Each node's dofs 2 and 3 are mixed by a rotation (the 2 × 2 block keeps their eigenvalues):
  // a diagonal A would take the exact diagonal path, not the counts' rounds this test is for.
  const double a2 = 1.2217134e-5, a3 = 1.4660561e-4, c = 0.8, sn = 0.6;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t dof = i % 6;
    if (dof == 2) {
      t.push_back({i, i, c * c * a2 + sn * sn * a3});
      t.push_back({i, i + 1, c * sn * (a3 - a2)}), t.push_back({i + 1, i, c * sn * (a3 - a2)});
    } else if (dof == 3) {
      t.push_back({i, i, sn * sn * a2 + c * c * a3});
    } else {
      t.push_back({i, i, dof < 2 ? 6.18187e-6 : a3});
    }
  }
  const Csr<double> a = csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
  EigsOptions o = base_options(32);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = eigs(a, nullptr, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
  for (double v : r.values) EXPECT_NEAR(v, 6.18187e-6, 1e-18);
  if (r.verification == Verification::certificate) EXPECT_EQ(r.certified, Certified::yes) << r.certificate;
  // A bound on the work, not a timing test: 1182-column rounds took minutes; the fix takes < 1 s.
  EXPECT_LT(secs, 60.0) << r.why;
  check_pairs(r, a, nullptr);
}

// An indefinite A (a 2D Laplacian minus 3·I: eigenvalues from about −3 to 5), its smallest on
// the auto path: where shift-invert runs, its σ lies below the spectrum (the plan's probe proves
// λmin < 0, so σ = 0 is not tried), and every value matches the closed form.
TEST(Eigs, IndefiniteSmallestOnTheAutoPath) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(40, 40);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) a.values[p] -= 3.0;
  auto spec = laplacian_spectrum(40, 40);
  EigsOptions o = base_options(8);
  auto r = eigs(a, nullptr, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
  for (int j = 0; j < 8; ++j) EXPECT_NEAR(r.values[j], spec[j] - 3.0, 1e-9) << "value " << j;
  if (r.transform == "shift-invert") {
    EXPECT_LT(r.sigma, spec[0] - 3.0) << r.why;
    EXPECT_NE(r.why.find("sigma = -"), std::string::npos) << r.why;
  }
  check_pairs(r, a, nullptr);
}

TEST(Eigs, HundredFoldEigenvalueWithAndWithoutFactorization) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = repeated_blocks(100, 3, 40);  // 340 rows: three eigenvalues × 100, 40 distinct
  auto ref = dense_spectrum(a);
  for (bool factor : {true, false}) {
    if (factor && !built_with_factor()) continue;
    SCOPED_TRACE(factor ? "shift-invert" : "no factorization");
    EigsOptions o = base_options(12);
    o.allow_factor = factor;
    auto r = eigs(a, nullptr, o);
    // Without a factorization, block Lanczos with block 8 cannot see 12 copies in one pass: the
    // re-check must add them, or the status must not say converged.
    if (r.status == SolverStatus::converged) {
      EXPECT_LE(max_rel_error(r, ref), 1e-10) << describe(r);
      check_pairs(r, a, nullptr);
    }
    if (factor) {
      EXPECT_EQ(r.status, SolverStatus::converged) << describe(r);
      expect_verified(r, false);
      o.certify = true;
      auto rc = eigs(a, nullptr, o);
      EXPECT_EQ(rc.status, SolverStatus::converged) << describe(rc);
      expect_verified(rc, true);
      EXPECT_LE(max_rel_error(rc, ref), 1e-10) << describe(rc);
    } else {
      EXPECT_EQ(r.certified, Certified::not_checked);
      EXPECT_TRUE(r.status == SolverStatus::converged || r.status == SolverStatus::unverified)
          << describe(r);
    }
  }
}

// Single-vector Lanczos (block size 1) sees one copy of a multiple eigenvalue in exact
// arithmetic: the set it returns skips copies. The re-check (a fresh block of 1 on A with the
// found pairs deflated) must add them, or the status must not say converged.
TEST(Eigs, ReCheckAddsTheCopiesSingleVectorLanczosMissed) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = repeated_blocks(100, 3, 40);  // smallest eigenvalue 1 with multiplicity 100
  EigsOptions o = base_options(3);
  o.allow_factor = false;
  o.method = parse_eigs_method("lanczos");
  o.block_size = 1;
  o.recheck = false;
  auto plain = eigs(a, nullptr, o);
  // the trap is real: without the re-check the set misses a copy, and says it is unverified
  ASSERT_GT(plain.values.back(), 1.1) << describe(plain);
  EXPECT_EQ(plain.status, SolverStatus::unverified);
  o.recheck = true;
  auto r = eigs(a, nullptr, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
  for (double v : r.values) EXPECT_NEAR(v, 1.0, 1e-12);
  EXPECT_NE(r.certificate.find("after adding"), std::string::npos) << r.certificate;
  check_pairs(r, a, nullptr);
  // more copies wanted than three rounds of one can add: right values or not converged
  o.k = 5;
  auto r5 = eigs(a, nullptr, o);
  if (r5.status == SolverStatus::converged)
    for (double v : r5.values) EXPECT_NEAR(v, 1.0, 1e-12);
  else
    EXPECT_EQ(r5.status, SolverStatus::unverified) << describe(r5);
}

// A re-check that cannot finish (single-vector Lanczos on A misses 7 of 8 wanted copies of 1.0;
// the re-check adds one a round, three rounds) hands over to the certificate where a factorization
// is possible: its count then decides, and says how many are missing. Without a factorization the
// set stays unverified (the test above). Never converged unless certified.
TEST(Eigs, ReCheckThatCannotFinishHandsOverToTheCertificate) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = repeated_blocks(100, 3, 40);  // smallest eigenvalue 1 with multiplicity 100
  EigsOptions o = base_options(8);
  o.method = parse_eigs_method("lanczos");
  o.block_size = 1;
  o.allow_factor = false;
  auto plain = eigs(a, nullptr, o);
  ASSERT_NE(plain.status, SolverStatus::converged) << describe(plain);  // the trap is real
  EXPECT_EQ(plain.certificate.find("then the certificate"), std::string::npos) << plain.certificate;
  o.allow_factor = true;
  auto r = eigs(a, nullptr, o);
  // The certificate decides: after the re-check failed, or at once where the planner found it
  // cheap against the measured solve (slow builds: ASan makes the solve 15x longer).
  EXPECT_EQ(r.verification, Verification::certificate) << r.certificate;
  EXPECT_TRUE(r.certificate.find("then the certificate") != std::string::npos ||
              r.certificate.rfind("certificate (predicted", 0) == 0) << r.certificate;
  if (r.status == SolverStatus::converged) {
    EXPECT_EQ(r.certified, Certified::yes) << r.certificate;
    for (double v : r.values) EXPECT_NEAR(v, 1.0, 1e-12);
    check_pairs(r, a, nullptr);
  } else {
    EXPECT_EQ(r.certified, Certified::no) << r.certificate;
    EXPECT_NE(r.certificate.find("missing"), std::string::npos) << r.certificate;
  }
}

// A start block (SciPy's v0 / X) is used: the exact eigenvectors converge at once, where a random
// block needs many rounds; a malformed one is refused.
TEST(Eigs, StartBlockIsUsed) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const int nx = 41, ny = 37;
  Csr<double> a = laplacian(nx, ny);
  const std::int64_t n = a.nrows;
  // largest eigenvalues of the 2D Laplacian: modes (i, j) near (nx, ny); x(p, q) = sin(ipπ/(nx+1))·sin(jqπ/(ny+1))
  std::vector<std::pair<double, std::pair<int, int>>> modes;
  for (int i = 1; i <= nx; ++i)
    for (int j = 1; j <= ny; ++j)
      modes.push_back({4 - 2 * std::cos(i * M_PI / (nx + 1)) - 2 * std::cos(j * M_PI / (ny + 1)), {i, j}});
  std::sort(modes.rbegin(), modes.rend());
  const int k = 4;
  std::vector<double> v0(n * k);
  for (int c = 0; c < k; ++c)
    for (int q = 0; q < ny; ++q)
      for (int p = 0; p < nx; ++p)  // row p + nx·q (x fastest, as laplacian() numbers them)
        v0[c * n + p + nx * q] = std::sin(modes[c].second.first * (p + 1) * M_PI / (nx + 1)) *
                                 std::sin(modes[c].second.second * (q + 1) * M_PI / (ny + 1));
  for (const char* method : {"lanczos", "lobpcg", "chebyshev"}) {
    SCOPED_TRACE(method);
    EigsOptions o = base_options(k, Which::largest);
    o.method = parse_eigs_method(method);
    o.allow_factor = false;
    auto cold = eigs(a, nullptr, o);
    o.v0 = v0;
    auto warm = eigs(a, nullptr, o);
    ASSERT_EQ(warm.status, SolverStatus::converged) << describe(warm);
    ASSERT_EQ(cold.status, SolverStatus::converged) << describe(cold);
    for (int j = 0; j < k; ++j) EXPECT_NEAR(warm.values[j], modes[j].first, 1e-9) << j;
    EXPECT_LT(warm.operator_applies, cold.operator_applies / 2)
        << "cold " << cold.operator_applies << ", warm " << warm.operator_applies;
  }
  EigsOptions o = base_options(k, Which::largest);
  o.v0 = std::vector<double>(n + 1, 1.0);
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
  std::vector<double> bad(n, 1.0);
  bad[5] = NAN;
  o.v0 = bad;
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
}

TEST(Eigs, KappaTenToTheTenSmallest) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  // D·L·D with D spanning 5 decades: κ ≈ 1e10.
  Csr<double> a = laplacian(18, 17);
  std::vector<double> d(a.nrows);
  for (std::int64_t i = 0; i < a.nrows; ++i) d[i] = std::pow(10.0, 2.5 * (random_entry(21, i, 0) + 1.0));
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) a.values[p] *= d[i] * d[a.col_idx[p]];
  auto ref = accurate_spectrum(a, nullptr);
  ASSERT_GT(ref.back() / ref.front(), 1e9);
  for (bool certify : {false, true}) {
    EigsOptions o = base_options(8);
    o.certify = certify;
    auto r = eigs(a, nullptr, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
    expect_verified(r, certify);
    EXPECT_LE(max_rel_error(r, ref), 1e-10) << describe(r);
    check_pairs(r, a, nullptr);
  }
}

// want_vectors = false (the CLI without --out): the n x k block is not copied to the host and
// nothing else changes. lap2d's smallest values lose ~5e-13 relative in an fp64 Rayleigh quotient,
// below 1e-3·tol: not refined in extended precision, that rounding goes into the error bound,
// which must still hold against the closed form. The κ ≈ 1e10 matrix loses far more: its columns
// are fetched and refined, and the values stay as accurate as with the vectors on the host.
TEST(Eigs, VectorsNotWantedStayOnTheDevice) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  {
    const Csr<double> a = laplacian(100, 97);
    const auto ref = laplacian_spectrum(100, 97);
    EigsOptions o = base_options(6);
    o.tol = 1e-8;
    o.method = EigsMethod::chebyshev;
    const EigsResult with = eigs(a, nullptr, o);
    o.want_vectors = false;
    const EigsResult without = eigs(a, nullptr, o);
    ASSERT_EQ(with.status, SolverStatus::converged) << describe(with);
    ASSERT_EQ(without.status, SolverStatus::converged) << describe(without);
    EXPECT_EQ(static_cast<std::int64_t>(with.vectors.size()), a.nrows * 6);
    EXPECT_TRUE(without.vectors.empty());
    // Chebyshev hands its vectors to the driver in the ops space (EigenOptions::vectors_out):
    // the ones the driver returns are eigenvectors of A, recomputed here on the host.
    const auto res = residuals(a, nullptr, with.vectors, with.values);
    for (std::size_t j = 0; j < 6; ++j)
      EXPECT_LE(res[j], o.tol * (with.a_norm + std::abs(with.values[j])) * 1.0001) << "pair " << j;
    EXPECT_LT(orthogonality_error(nullptr, with.vectors, a.nrows, 6), 1e-10);
    ASSERT_EQ(without.values.size(), 6u);
    for (std::size_t j = 0; j < 6; ++j) {
      EXPECT_LE(std::abs(without.values[j] - with.values[j]), without.error_bounds[j] + with.error_bounds[j]);
      EXPECT_LE(std::abs(without.values[j] - ref[j]), without.error_bounds[j] + 1e-15)
          << "pair " << j << ": the error bound must hold without the refinement";
      // (the quotient's own rounding 10·u·‖A‖ is part of an unrefined pair's bound)
      EXPECT_GE(without.error_bounds[j], 8.0 * 1.1e-16 * 8.0);
    }
  }
  if (built_with_factor()) {
    Csr<double> a = laplacian(18, 17);
    std::vector<double> d(a.nrows);
    for (std::int64_t i = 0; i < a.nrows; ++i) d[i] = std::pow(10.0, 2.5 * (random_entry(21, i, 0) + 1.0));
    for (std::int64_t i = 0; i < a.nrows; ++i)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) a.values[p] *= d[i] * d[a.col_idx[p]];
    const auto ref = accurate_spectrum(a, nullptr);
    EigsOptions o = base_options(8);
    o.want_vectors = false;
    const EigsResult r = eigs(a, nullptr, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
    EXPECT_TRUE(r.vectors.empty());
    EXPECT_LE(max_rel_error(r, ref), 1e-10) << describe(r);
  }
}

TEST(Eigs, LumpedMassGeneralizedPairs) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  // Eigenvalues in pairs: two identical decoupled copies of one stiffness/mass pair.
  Csr<double> a1 = scaled_laplacian3d(6, 1e3, 0.01);
  Csr<double> b1 = lumped_mass(a1.nrows, 3.0);
  auto twice = [](const Csr<double>& x) {
    std::vector<Triplet<double>> t;
    for (int c = 0; c < 2; ++c)
      for (std::int64_t i = 0; i < x.nrows; ++i)
        for (std::int64_t p = x.row_ptr[i]; p < x.row_ptr[i + 1]; ++p)
          t.push_back({static_cast<std::int32_t>(i + c * x.nrows),
                       static_cast<std::int32_t>(x.col_idx[p] + c * x.nrows), x.values[p]});
    return csr_from_triplets<double>(2 * x.nrows, 2 * x.nrows, t, Symmetry::symmetric);
  };
  Csr<double> a = twice(a1), b = twice(b1);
  auto ref = accurate_spectrum(a, &b);
  for (const char* method : {"auto", "lobpcg"})
    for (bool certify : {false, true}) {
      SCOPED_TRACE(std::string(method) + (certify ? " certify" : ""));
      EigsOptions o = base_options(6);
      o.method = parse_eigs_method(method);
      o.certify = certify;
      auto r = eigs(a, &b, o);
      ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
      expect_verified(r, certify);
      EXPECT_LE(max_rel_error(r, ref), 1e-9) << describe(r);
      check_pairs(r, a, &b);
    }
}

// Long rows in natural 3×3 blocks (elasticity): on the GPU the operator is the bsr_block kernel
// and the filter's steps (both rungs of the ladder) run on its own blocks; TCSOLVE_BSR_OPERATOR=0
// gives the tensor-core operator and the unfused filter. Both answers against dense LAPACK,
// largest and smallest.
TEST(Eigs, ChebyshevOnNaturalBlocks) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const Csr<double> a = read_matrix("gen:elast3d:9", {});  // 2187 rows, ~63 entries a row
  auto ref = dense_spectrum(a);
  for (Which w : {Which::largest, Which::smallest})
    for (const char* knob : {"1", "0"}) {
      SCOPED_TRACE(std::string(w == Which::largest ? "largest" : "smallest") + " TCSOLVE_BSR_OPERATOR=" + knob);
      ::setenv("TCSOLVE_BSR_OPERATOR", knob, 1);
      EigsOptions o = base_options(12, w);
      o.tol = 1e-9;
      o.method = EigsMethod::chebyshev;
      auto r = eigs(a, nullptr, o);
      ::unsetenv("TCSOLVE_BSR_OPERATOR");
      ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
      if (kBackend == Backend::cuda) EXPECT_EQ(r.spmm_kernel == "bsr_block", std::string(knob) == "1") << r.spmm_kernel;
      std::vector<double> want = ref;
      if (w == Which::largest) std::reverse(want.begin(), want.end());
      EXPECT_LE(max_rel_error(r, want), 1e-8) << describe(r);
      check_pairs(r, a, nullptr);
    }
}

// ---- interior eigenvalues -----------------------------------------------------------------------

TEST(Eigs, NearestToAShiftInsideTheSpectrum) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = read_matrix("gen:elast3d:7", {});  // 1029 rows
  auto ref = dense_spectrum(a);
  const double sigma = 0.5 * (ref.front() + ref.back());
  EigsOptions o = base_options(20, Which::nearest);
  o.has_sigma = true;
  o.sigma = sigma;
  auto r = eigs(a, nullptr, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
  expect_verified(r, false);
  EXPECT_EQ(r.transform, "shift-invert");  // interior eigenvalues: only shift-invert converges
  o.certify = true;
  auto rc = eigs(a, nullptr, o);
  ASSERT_EQ(rc.status, SolverStatus::converged) << describe(rc);
  expect_verified(rc, true);
  std::vector<double> near = ref;
  std::sort(near.begin(), near.end(),
            [&](double x, double y) { return std::abs(x - sigma) < std::abs(y - sigma); });
  for (int j = 0; j < 20; ++j)
    EXPECT_NEAR(r.values[j], near[j], 1e-9 * std::abs(ref.back())) << "value " << j;
  check_pairs(r, a, nullptr);
}

// ---- convergence tests ----------------------------------------------------------------------------

TEST(Eigs, ConvergenceTestsBoundWhatTheyClaim) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(30, 29);
  for (ConvTest c : {ConvTest::rel, ConvTest::norm, ConvTest::abs}) {
    SCOPED_TRACE(to_string(c));
    EigsOptions o = base_options(5);
    o.conv = c;
    o.tol = 1e-8;
    o.allow_factor = false;
    auto r = eigs(a, nullptr, o);
    ASSERT_NE(r.status, SolverStatus::not_converged) << describe(r);
    auto res = residuals(a, nullptr, r.vectors, r.values);
    for (std::size_t j = 0; j < r.values.size(); ++j) {
      const double xn = Eigen::Map<const Eigen::VectorXd>(r.vectors.data() + j * a.nrows, a.nrows).norm();
      const double lam = std::abs(r.values[j]);
      const double allowed = c == ConvTest::rel ? 1e-8 * lam * xn
                             : c == ConvTest::abs ? 1e-8 * xn
                                                  : 1e-8 * (r.a_norm + lam) * xn;
      EXPECT_LE(res[j], allowed * (1 + 1e-9)) << "pair " << j;
      EXPECT_GE(r.error_bounds[j], 0.0);
      EXPECT_LE(r.error_bounds[j], res[j] * (1 + 1e-9));
    }
  }
  EXPECT_THROW(parse_conv_test("relative"), InvalidArgument);
}

// ---- a workspace limit (the GPU memory left beside the matrix) -----------------------------------

TEST(Eigs, WorkspaceLimitShrinksTheBasisOrRefuses) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(41, 37);  // 1517 rows
  const auto ref = laplacian_spectrum(41, 37);
  struct Case {
    const char* method;
    std::int64_t columns;    // workspace limit in n-vectors
    const char* expect_why;  // nullptr: refused
  };
  // k = 8: Chebyshev width 16 needs 3·16 + 16 = 64 vectors, at least 3·12 + 16 = 52; Lanczos
  // (b = 8) basis 128 needs 2·128 + 32 = 288, at least 2·24 + 32 = 80; LOBPCG 10·12 = 120.
  for (const Case& c : {Case{"chebyshev", 64, ""}, Case{"chebyshev", 56, "block width reduced from 16 to 13"},
                        Case{"chebyshev", 51, nullptr}, Case{"lanczos", 100, "Lanczos basis reduced from 128 to 32"},
                        Case{"lanczos", 79, nullptr}, Case{"lobpcg", 119, nullptr}}) {
    SCOPED_TRACE(std::string(c.method) + " in " + std::to_string(c.columns) + " vectors");
    EigsOptions o = base_options(8, Which::largest);
    o.method = parse_eigs_method(c.method);
    o.tol = 1e-9;
    o.workspace_columns = c.columns;
    if (!c.expect_why) {
      EXPECT_THROW(eigs(a, nullptr, o), OutOfDeviceMemory);
      continue;
    }
    auto r = eigs(a, nullptr, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
    if (*c.expect_why) EXPECT_NE(r.why.find(c.expect_why), std::string::npos) << r.why;
    else EXPECT_EQ(r.why.find("reduced"), std::string::npos) << r.why;
    for (int j = 0; j < 8; ++j) EXPECT_NEAR(r.values[j], ref[ref.size() - 1 - j], 1e-8) << j;
    check_pairs(r, a, nullptr);
  }
}

// ---- verification modes -------------------------------------------------------------------------

// Default: the certificate only when cheap next to the solve, else the re-check; certify: always
// the certificate; recheck off: unverified. The line says which check ran.
TEST(Eigs, VerificationModes) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  Csr<double> a = laplacian(41, 37);  // 1517 rows
  const auto ref = laplacian_spectrum(41, 37);
  for (Which w : {Which::smallest, Which::largest}) {
    SCOPED_TRACE(w == Which::smallest ? "smallest" : "largest");
    EigsOptions o = base_options(6, w);
    o.tol = 1e-9;
    o.allow_factor = false;
    auto r = eigs(a, nullptr, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
    EXPECT_EQ(r.verification, Verification::recheck);
    EXPECT_EQ(r.certified, Certified::not_checked);
    EXPECT_NE(r.certificate.find("re-check"), std::string::npos) << r.certificate;
    for (int j = 0; j < 6; ++j)
      EXPECT_NEAR(r.values[j], w == Which::smallest ? ref[j] : ref[ref.size() - 1 - j], 1e-8) << j;
    o.recheck = false;
    auto u = eigs(a, nullptr, o);
    EXPECT_EQ(u.status, SolverStatus::unverified) << describe(u);
    EXPECT_EQ(u.verification, Verification::none);
    if (!built_with_factor()) continue;
    o.recheck = true;
    o.allow_factor = true;
    o.certify = true;
    auto c = eigs(a, nullptr, o);
    ASSERT_EQ(c.status, SolverStatus::converged) << describe(c);
    EXPECT_EQ(c.verification, Verification::certificate);
    EXPECT_EQ(c.certified, Certified::yes) << c.certificate;
    EXPECT_NE(c.certificate.find("asked for"), std::string::npos) << c.certificate;
    o.allow_factor = false;
    EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);  // certify needs a factorization
  }
}

// The rounding floor (issue: LOBPCG on a stiffness matrix with ‖A‖ ≈ 4e9 and a 69-fold
// eigenvalue 1.0 ran 2000 iterations and ended "not converged"): the rel test asks for
// ‖r‖ ≤ 1e-10·1 while no iteration on A in double gets below u·‖A‖ ≈ 4e-7. The solver stops at
// the floor instead of the limit, and the reason gives the accuracy reached and the ways out;
// with --conv norm the same run converges.
TEST(Eigs, RoundingFloorStopsTheIterationAndSaysWhy) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  std::int64_t m = 0;
  Csr<double> a = constrained_dofs(8, 5, 3e8, 1e-6, &m);  // 512 rows, ‖A‖ ≈ 4e9
  ASSERT_GT(m, 60);
  EigsOptions o = base_options(8);
  o.method = EigsMethod::lobpcg;
  o.allow_factor = false;
  o.max_iterations = 2000;
  auto r = eigs(a, nullptr, o);
  if (r.status == SolverStatus::converged) {
    // reached the rel test after all (then it must be right)
    for (double v : r.values) EXPECT_NEAR(v, 1.0, 1e-9);
  } else {
    EXPECT_EQ(r.status, SolverStatus::not_converged);
    EXPECT_LT(r.iterations, 1000) << "stopped at the floor, not at the limit: " << describe(r);
    EXPECT_NE(r.reason.find("rounding floor"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("--conv norm"), std::string::npos) << r.reason;
    for (double v : r.values) EXPECT_NEAR(v, 1.0, 1e-6);
  }
  o.conv = ConvTest::norm;
  auto n = eigs(a, nullptr, o);
  EXPECT_NE(n.status, SolverStatus::not_converged) << describe(n);
  for (double v : n.values) EXPECT_NEAR(v, 1.0, 1e-6);
}

// The filter re-check on its own (the step behind the default verification of Chebyshev runs):
// given the exact 8 smallest pairs of a 2D Laplacian it finds nothing missing; given them with the
// 3rd pair swapped for the 9th (a set a solver could return by skipping a copy), it finds the
// missing eigenvalue and the repair adds it. Both cheap ends of a Laplacian (smallest, largest).
// On the GPU the filter's steps read A's values rounded to fp32 (the resolution is far above
// 2^-24·‖A‖), and again with TCSOLVE_RECHECK_FP32=0 on A itself: both must decide the same.
TEST(Eigs, FilterReCheckFindsAPlantedMissingPair) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  using namespace eigs_detail;
  const int nx = 23, ny = 19, k = 8;
  Csr<double> a = laplacian(nx, ny);
  const std::int64_t n = a.nrows;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(dense_of(a));
  auto ops = make_dense_ops(kBackend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  auto op = make_sparse_operator(a, kBackend, oo);
  for (const char* knob : {"1", "0"})
  for (Which w : {Which::smallest, Which::largest}) {
    SCOPED_TRACE(w == Which::smallest ? "smallest" : "largest");
    SCOPED_TRACE(std::string("TCSOLVE_RECHECK_FP32=") + knob);
    for (bool plant : {false, true}) {
      SCOPED_TRACE(plant ? "3rd pair swapped for the 9th" : "exact set");
      std::vector<std::int64_t> idx;
      for (int j = 0; j < k; ++j) idx.push_back(j == 2 && plant ? k : j);
      if (w == Which::largest)
        for (auto& i : idx) i = n - 1 - i;
      Problem s;
      s.a = &a;
      s.aop = op.get();
      s.ops = ops.get();
      s.n = n;
      s.a_norm = csr_inf_norm(a);
      PairSet p;
      std::vector<double> host(n * k);
      for (int j = 0; j < k; ++j) {
        p.values.push_back(es.eigenvalues()(idx[j]));
        for (std::int64_t i = 0; i < n; ++i) host[i + j * n] = es.eigenvectors()(i, idx[j]);
        p.rn.push_back(1e-14), p.xn.push_back(1.0), p.rq_dev.push_back(0.0);
      }
      p.x = ops->allocate(n, k);
      ops->from_host(host.data(), n, p.x.view());
      EigsOptions opt = base_options(k, w);
      opt.tol = 1e-9;
      FilterRecheckInputs in;
      const double sgn = w == Which::largest ? -1.0 : 1.0;
      in.lower = sgn > 0 ? es.eigenvalues()(0) : -es.eigenvalues()(n - 1);
      in.upper = sgn > 0 ? es.eigenvalues()(n - 1) : -es.eigenvalues()(0);
      // the resolution a Lanczos run would get: the gap from the k-th value to the next distinct one
      in.resolution = 0.5 * std::abs(es.eigenvalues()(idx[k - 1]) - es.eigenvalues()(idx[k - 2]));
      in.resolution_from = "test";
      ::setenv("TCSOLVE_RECHECK_FP32", knob, 1);
      RecheckOutcome rc = filter_recheck(s, opt, EigsMethod::lanczos, p, in);
      ::unsetenv("TCSOLVE_RECHECK_FP32");
      EXPECT_TRUE(rc.affordable) << rc.detail;
      EXPECT_EQ(rc.detail.find("rounded to fp32") != std::string::npos,
                kBackend == Backend::cuda && std::string(knob) == "1")
          << rc.detail;
      if (!plant) {
        EXPECT_TRUE(rc.verified) << rc.detail;
        EXPECT_EQ(rc.added, 0) << rc.detail;
        EXPECT_NE(rc.detail.find("nothing below the k-th value"), std::string::npos) << rc.detail;
      } else {
        EXPECT_NE(rc.detail.find("beyond the k-th value"), std::string::npos) << rc.detail;
        EXPECT_GE(rc.added, 1) << rc.detail;
        // the repaired set holds the true 3rd eigenvalue
        bool has3 = false;
        const double l3 = es.eigenvalues()(w == Which::smallest ? 2 : n - 3);
        for (double v : p.values) has3 = has3 || std::abs(v - l3) < 1e-8;
        EXPECT_TRUE(has3) << rc.detail;
      }
    }
  }
}

// ---- bad input ----------------------------------------------------------------------------------

TEST(Eigs, BadArguments) {
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = constrained_dofs(5, 4);
  EigsOptions o = base_options(3, Which::nearest);
  o.backend = Backend::cpu;
  o.method = parse_eigs_method("lanczos");  // (auto would solve this 125-row problem densely, without factoring)
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);  // nearest without sigma
  o.has_sigma = true;
  o.sigma = 1.0;  // exactly an eigenvalue
  try {
    eigs(a, nullptr, o);
    ADD_FAILURE() << "no SingularShift";
  } catch (const SingularShift& e) {
    EXPECT_NE(std::string(e.what()).find("sigma = 1"), std::string::npos);
  }
  o = base_options(3);
  o.backend = Backend::cpu;
  o.precond = EigsPrecond::factor;
  o.method = parse_eigs_method("lanczos");
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
  o = base_options(a.nrows);
  o.backend = Backend::cpu;
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
  o = base_options(3);
  o.backend = Backend::cpu;
  o.method = parse_eigs_method("lanczos");
  o.has_sigma = true;
  o.sigma = 1e12;  // inside/above: smallest needs a sigma below the spectrum
  EXPECT_THROW(eigs(a, nullptr, o), InvalidArgument);
}

// ---- the count of wrong answers labelled converged is zero --------------------------------------

TEST(Eigs, NoWrongAnswerIsLabelledConverged) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  struct Trap {
    const char* name;
    Csr<double> a;
    std::int64_t k;
  };
  std::vector<Trap> traps;
  std::int64_t m = 0;
  traps.push_back({"constrained_dofs", constrained_dofs(6, 4, 1e9, 1e-6, &m), 12});
  traps.push_back({"repeated_blocks", repeated_blocks(40, 2, 30), 10});
  traps.push_back({"lap2d_square", laplacian(24, 24), 12});
  int wrong = 0, converged = 0, runs = 0;
  std::string log;
  for (auto& t : traps) {
    auto ref = dense_spectrum(t.a);
    for (const char* method : {"auto", "lanczos", "lobpcg"})
      for (bool factor : {true, false}) {
        if (factor && !built_with_factor()) continue;
        EigsOptions o = base_options(t.k);
        o.method = parse_eigs_method(method);
        o.allow_factor = factor;
        o.tol = 1e-9;
        o.block_size = std::string(method) == "lanczos" ? 2 : 0;  // multiplicity ≫ block size
        o.max_iterations = 3000;
        auto r = eigs(t.a, nullptr, o);
        ++runs;
        if (r.status != SolverStatus::converged) continue;
        ++converged;
        // Wrong: a value off by more than the dense reference's own accuracy.
        const double scale = std::abs(ref.back());
        for (std::size_t j = 0; j < r.values.size(); ++j)
          if (std::abs(r.values[j] - ref[j]) > 1e-7 * std::abs(ref[j]) + 1e-14 * scale) {
            ++wrong;
            log += std::string(t.name) + " " + method + (factor ? " factor" : " no-factor") + ": " +
                   describe(r) + "\n";
            break;
          }
      }
  }
  RecordProperty("runs", runs);
  RecordProperty("converged", converged);
  EXPECT_EQ(wrong, 0) << log;
  EXPECT_GT(converged, runs / 2) << "most runs should converge";
}

// Neumann Laplacian on an nx × ny grid (row sums 0: the constant vector spans its null space).
// Eigenvalues (2 − 2cos(πi/nx)) + (2 − 2cos(πj/ny)), i < nx, j < ny.
Csr<double> neumann_laplacian(int nx, int ny) {
  std::vector<Triplet<double>> t;
  auto id = [&](int i, int j) { return static_cast<std::int64_t>(i) + std::int64_t(nx) * j; };
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      double d = 0;
      auto link = [&](int i2, int j2) { t.push_back({id(i, j), id(i2, j2), -1.0}), d += 1.0; };
      if (i > 0) link(i - 1, j);
      if (i + 1 < nx) link(i + 1, j);
      if (j > 0) link(i, j - 1);
      if (j + 1 < ny) link(i, j + 1);
      t.push_back({id(i, j), id(i, j), d});
    }
  const std::int64_t n = std::int64_t(nx) * ny;
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

std::vector<double> neumann_spectrum(int nx, int ny) {
  std::vector<double> v;
  for (int i = 0; i < nx; ++i)
    for (int j = 0; j < ny; ++j)
      v.push_back(2 - 2 * std::cos(kPi * i / nx) + 2 - 2 * std::cos(kPi * j / ny));
  std::sort(v.begin(), v.end());
  return v;
}

// A diagonal pencil (the bcsstm* mass matrices; a lumped mass): the pairs are read off the
// diagonals, exactly, at any n, instead of an iteration. Single-vector Lanczos on bcsstm09, 32
// largest, ran to its 2000-iteration limit (one Krylov vector cannot resolve a value's copies) and
// escalated to the dense solve: 3.9–6.2 s on the 2-core CPU. Here n = 20000 (past the dense
// solve's 4000), with a value repeated 5000 times inside the wanted set.
TEST(Eigs, DiagonalPencilIsReadOffTheDiagonal) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 20000;
  std::vector<Triplet<double>> ta, tb;
  std::vector<double> lam(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = (i * 7919) % n;  // scattered
    const double a = r < 7 ? 1e6 / (r + 1) : r < 5007 ? 1000.0 : 1.0 + 169.0 * (r - 5007) / double(n - 5007);
    const double b = 0.5 + std::fmod(0.37 * i, 1.0);
    ta.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i), a});
    tb.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i), b});
    lam[i] = a;  // (without B)
  }
  const Csr<double> a = csr_from_triplets<double>(n, n, ta, Symmetry::symmetric);
  const Csr<double> b = csr_from_triplets<double>(n, n, tb, Symmetry::symmetric);
  for (const Csr<double>* m : {static_cast<const Csr<double>*>(nullptr), &b}) {
    std::vector<double> want(n);
    for (std::int64_t i = 0; i < n; ++i) want[i] = m ? ta[i].value / tb[i].value : lam[i];
    std::sort(want.begin(), want.end());
    for (Which w : {Which::largest, Which::smallest}) {
      SCOPED_TRACE(std::string(m ? "with B" : "no B") + (w == Which::largest ? ", largest" : ", smallest"));
      EigsOptions o = base_options(32, w);
      auto r = eigs(a, m, o);
      ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
      EXPECT_EQ(r.method, "dense");
      EXPECT_EQ(r.iterations, 1);
      EXPECT_NE(r.why.find("diagonal"), std::string::npos) << r.why;
      ASSERT_EQ(r.values.size(), 32u);
      for (int j = 0; j < 32; ++j) {
        const double v = w == Which::largest ? want[n - 1 - j] : want[j];
        EXPECT_NEAR(r.values[j], v, 1e-14 * std::abs(v)) << j;
        EXPECT_LE(r.residual_norms[j], r.residual_bounds[j]) << j;
      }
      Eigen::Map<const Eigen::MatrixXd> x(r.vectors.data(), n, 32);
      Eigen::VectorXd d(n);
      for (std::int64_t i = 0; i < n; ++i) d[i] = m ? tb[i].value : 1.0;
      EXPECT_LT((x.transpose() * d.asDiagonal() * x - Eigen::MatrixXd::Identity(32, 32)).norm(), 1e-12);
    }
  }
}

// The diagonal path on a diagonal matrix stored with explicit zeros off the diagonal and with
// rows that hold no diagonal entry (eigenvalue 0 there): n = 5000, past the dense solve's 4000.
TEST(Eigs, DiagonalWithExplicitZerosAndMissingEntries) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int32_t n = 5000;
  std::vector<Triplet<double>> t;
  std::vector<double> lam(n, 0.0);
  for (std::int32_t i = 0; i < n; ++i) {
    if (i % 997 != 3) lam[i] = 1.0 + (i * 37 % n), t.push_back({i, i, lam[i]});  // 6 rows left empty
    if (i % 10 == 0 && i + 1 < n) t.push_back({i, i + 1, 0.0}), t.push_back({i + 1, i, 0.0});
  }
  const Csr<double> a = csr_from_triplets<double>(n, n, t, Symmetry::symmetric);
  std::vector<double> sorted = lam;
  std::sort(sorted.begin(), sorted.end());
  for (Which w : {Which::smallest, Which::largest}) {
    EigsOptions o = base_options(8, w);
    auto r = eigs(a, nullptr, o);
    ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
    EXPECT_EQ(r.method, "dense");
    for (int j = 0; j < 8; ++j) EXPECT_EQ(r.values[j], w == Which::smallest ? sorted[j] : sorted[n - 1 - j]) << j;
  }
}

// A = 0: every eigenvalue is 0, any B-orthonormal set is an answer; no shift, no factorization,
// no iteration needed (the shift search failed: "singular at sigma = 0", whatever --sigma said).
TEST(Eigs, ZeroMatrixHasAnExactAnswer) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const std::int64_t n = 700;
  std::vector<Triplet<double>> tz, tl, tt;
  for (std::int64_t i = 0; i < n; ++i) {
    tz.push_back({i, i, 0.0});
    tl.push_back({i, i, 0.5 + std::fmod(0.37 * i, 1.0)});  // lumped mass, random-ish
    tt.push_back({i, i, 4.0 + std::sin(0.3 * i)});
    if (i > 0) tt.push_back({i, i - 1, 1.0 + 0.2 * std::cos(0.7 * i)}), tt.push_back({i - 1, i, 1.0 + 0.2 * std::cos(0.7 * i)});
  }
  const Csr<double> a = csr_from_triplets<double>(n, n, tz, Symmetry::symmetric);
  const Csr<double> lumped = csr_from_triplets<double>(n, n, tl, Symmetry::symmetric);
  const Csr<double> tri = csr_from_triplets<double>(n, n, tt, Symmetry::symmetric);
  for (const Csr<double>* b : {static_cast<const Csr<double>*>(nullptr), &lumped, &tri}) {
    for (Which w : {Which::smallest, Which::largest, Which::nearest}) {
      SCOPED_TRACE(std::string(b == nullptr ? "no mass" : b == &lumped ? "lumped mass" : "tridiagonal mass") +
                   (w == Which::smallest ? ", smallest" : w == Which::largest ? ", largest" : ", nearest 3"));
      EigsOptions o = base_options(9, w);
      if (w == Which::nearest) o.has_sigma = true, o.sigma = 3.0;
      auto r = eigs(a, b, o);
      ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
      EXPECT_EQ(r.certified, Certified::yes);
      ASSERT_EQ(r.values.size(), 9u);
      for (double v : r.values) EXPECT_EQ(v, 0.0);
      Eigen::Map<const Eigen::MatrixXd> x(r.vectors.data(), n, 9);
      const Eigen::MatrixXd bm = b ? dense_of(*b) : Eigen::MatrixXd::Identity(n, n);
      EXPECT_LT((x.transpose() * bm * x - Eigen::MatrixXd::Identity(9, 9)).norm(), 1e-12);
    }
  }
}

// The null vector of a Neumann Laplacian: a relative test at λ = 0 asks for a residual below the
// rounding level. Without a factorization (Chebyshev) the iteration must stop at the floor and
// still give every value (it locked nothing at u·‖A‖ and ran 2000 iterations: 51 s for 0.4);
// the dense solve (n = 400) either passes or says why and what to do.
TEST(Eigs, NullVectorOfANeumannLaplacian) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  {
    const int nx = 70, ny = 60;
    const Csr<double> a = neumann_laplacian(nx, ny);
    const auto ref = neumann_spectrum(nx, ny);
    EigsOptions o = base_options(4);
    o.tol = 1e-8;
    o.allow_factor = false;
    auto r = eigs(a, nullptr, o);
    EXPECT_EQ(r.status, SolverStatus::converged) << describe(r);
    EXPECT_EQ(r.method, "chebyshev");
    EXPECT_LT(r.iterations, 100) << describe(r);
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(r.values[j], ref[j], 1e-9 * 8) << j;
  }
  {
    const Csr<double> a = neumann_laplacian(20, 20);
    const auto ref = neumann_spectrum(20, 20);
    EigsOptions o = base_options(3);
    o.tol = 1e-8;
    auto r = eigs(a, nullptr, o);
    EXPECT_EQ(r.method, "dense");
    if (r.status != SolverStatus::converged) {
      EXPECT_NE(r.reason.find("0 to working precision"), std::string::npos) << r.reason;
      EXPECT_NE(r.reason.find("--conv norm (these residuals pass it)"), std::string::npos) << r.reason;
    }
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(r.values[j], ref[j], 1e-12) << j;
    o.conv = ConvTest::norm;
    auto rn = eigs(a, nullptr, o);
    EXPECT_EQ(rn.status, SolverStatus::converged) << describe(rn);
  }
}

// A singular A whose rows sum to 0 (a Neumann Laplacian, as every graph Laplacian): the shift
// search starts just below 0 instead of factorizing at σ = 0 first (that factorization was always
// thrown away); the values are the closed form's. A Dirichlet Laplacian still factors at 0.
TEST(Eigs, RowsSummingToZeroSkipTheFactorizationAtZero) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  SKIP_WITHOUT_FACTOR();
  const Csr<double> a = neumann_laplacian(70, 60);
  const auto ref = neumann_spectrum(70, 60);
  EigsOptions o = base_options(4);
  o.method = EigsMethod::lobpcg;
  o.precond = EigsPrecond::factor;
  auto r = eigs(a, nullptr, o);
  ASSERT_EQ(r.status, SolverStatus::converged) << describe(r);
  EXPECT_NE(r.why.find("not at 0 (skipped: every row of A sums to 0"), std::string::npos) << r.why;
  EXPECT_LT(r.sigma, 0.0);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(r.values[j], ref[j], 1e-9 * 8) << j;
  auto d = eigs(laplacian(70, 60), nullptr, o);
  ASSERT_EQ(d.status, SolverStatus::converged) << describe(d);
  EXPECT_EQ(d.why.find("skipped"), std::string::npos) << d.why;
  EXPECT_EQ(d.sigma, 0.0) << d.why;
}

// A mass matrix with a positive diagonal that is not positive definite is refused by name, with
// or without a factorization, on the dense path and the iterative one (LOBPCG said only
// "breakdown").
TEST(Eigs, IndefiniteMassIsRefusedOnEveryPath) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  for (int nx : {20, 60}) {  // 400 rows: dense; 3600: iterative
    const Csr<double> a = laplacian(nx, nx);
    const std::int64_t n = a.nrows;
    std::vector<Triplet<double>> t;
    for (std::int64_t i = 0; i < n; ++i) {
      t.push_back({i, i, 1.0 + 0.1 * std::sin(1.3 * i)});
      if (i > 0) t.push_back({i, i - 1, 1.5}), t.push_back({i - 1, i, 1.5});  // eigenvalues down to ≈ −2
    }
    const Csr<double> b = csr_from_triplets<double>(n, n, t, Symmetry::symmetric);
    for (bool factor : {false, true}) {
      if (factor && !built_with_factor()) continue;
      SCOPED_TRACE(std::to_string(n) + (factor ? " rows, with factorization" : " rows, --no-factor"));
      EigsOptions o = base_options(3);
      o.allow_factor = factor;
      o.mass_name = "mass matrix M.mtx";
      try {
        auto r = eigs(a, &b, o);
        ADD_FAILURE() << "accepted: " << describe(r);
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("mass matrix M.mtx is not positive definite"), std::string::npos)
            << e.what();
      }
    }
  }
}

// request_interrupt() (what SIGINT/SIGTERM do in the command): each iterative method stops at the
// end of an iteration and returns k current pairs with status interrupted; nothing is verified.
TEST(Eigs, InterruptStopsEveryMethod) {
  TCSOLVE_SKIP_WITHOUT_BACKEND();
  const Csr<double> a = laplacian(70, 60);
  for (EigsMethod m : {EigsMethod::lobpcg, EigsMethod::lanczos, EigsMethod::chebyshev}) {
    SCOPED_TRACE(to_string(m));
    EigsOptions o = base_options(5);
    o.method = m;
    o.allow_factor = false;
    request_interrupt();
    auto r = eigs(a, nullptr, o);
    clear_interrupt();
    EXPECT_EQ(r.status, SolverStatus::interrupted) << describe(r);
    EXPECT_NE(r.reason.find("interrupted (on request) after"), std::string::npos) << r.reason;
    EXPECT_LE(r.iterations, 2);
    EXPECT_EQ(r.values.size(), 5u);
    EXPECT_EQ(r.vectors.size(), 5u * a.nrows);
    EXPECT_NE(r.certified, Certified::yes);
    auto full = eigs(a, nullptr, o);
    EXPECT_EQ(full.status, SolverStatus::converged) << describe(full);
  }
}

}  // namespace
}  // namespace tcsolve::test
