// factor/: CHOLMOD and MUMPS factorizations of A − σB against dense Eigen: solves, inertia
// (Sylvester counts against dense spectra), the singular-shift message, the memory refusal, the
// exported factor, the mass-matrix check, and the shift-invert operator on the backend under test.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <string>

#include "core/device.hpp"
#include "factor/shift_invert.hpp"
#include "factor/lu_factor.hpp"
#include "factor/sparse_factor.hpp"
#include "io/matrix_io.hpp"
#include "tests/test_paths.hpp"
#include "tests/traps.hpp"

namespace tcsolve::test {
namespace {

#ifdef TCSOLVE_TEST_BACKEND_CUDA
constexpr Backend kBackend = Backend::cuda;
#define SKIP_WITHOUT_BACKEND() TCSOLVE_SKIP_WITHOUT_GPU()
#else
constexpr Backend kBackend = Backend::cpu;
#define SKIP_WITHOUT_BACKEND() \
  do {                         \
  } while (0)
#endif

#define SKIP_WITHOUT_FACTOR()                                              \
  do {                                                                     \
    if (!built_with_factor()) GTEST_SKIP() << "built without CHOLMOD/MUMPS"; \
  } while (0)

// Random block (n × s, leading dimension ld ≥ n, fresh values per seed).
std::vector<double> random_block(std::int64_t n, std::int64_t s, std::int64_t ld, std::uint64_t seed) {
  std::vector<double> x(ld * s, 0.0);
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t i = 0; i < n; ++i) x[i + j * ld] = random_entry(seed, i, j);
  return x;
}

Csr<double> tridiagonal_mass(int n) {
  std::vector<Triplet<double>> t;
  for (int i = 0; i < n; ++i) {
    t.push_back({i, i, 4.0 / 6.0 * (1.0 + 0.3 * random_entry(9, i, 0))});
    if (i + 1 < n) t.push_back({i, i + 1, 1.0 / 6.0}), t.push_back({i + 1, i, 1.0 / 6.0});
  }
  return csr_from_triplets<double>(n, n, t, Symmetry::symmetric);
}

struct ShiftCase {
  const char* name;
  int nx;          // 3D Laplacian nx³ (scaled)
  bool mass;       // tridiagonal (consistent) mass matrix
  double quantile; // σ at this quantile of the spectrum (< 0: below the spectrum)
  FactorEngine expected;
  bool lu_solves = false;  // FactorOptions::lu_solves (UMFPACK's solves of an indefinite S)
};

class Shifted : public ::testing::TestWithParam<ShiftCase> {};

TEST_P(Shifted, SolvesAndCountsLikeDenseEigen) {
  SKIP_WITHOUT_FACTOR();
  const ShiftCase& c = GetParam();
  if (c.expected == FactorEngine::umfpack && !built_with_lu_qr()) GTEST_SKIP() << "built without UMFPACK";
  Csr<double> a = scaled_laplacian3d(c.nx, 1.0, 0.05);
  const std::int64_t n = a.nrows;
  Csr<double> b = tridiagonal_mass(static_cast<int>(n));
  const Csr<double>* bp = c.mass ? &b : nullptr;
  auto ev = dense_spectrum(a, bp);
  // σ in the middle of a gap (never on an eigenvalue).
  double sigma;
  if (c.quantile < 0) {
    sigma = ev.front() - 0.3 * (ev[1] - ev[0]) - 0.01;
  } else {
    std::size_t q = static_cast<std::size_t>(c.quantile * (n - 1));
    while (q + 1 < ev.size() && ev[q + 1] - ev[q] < 1e-6) ++q;
    sigma = 0.5 * (ev[q] + ev[q + 1]);
  }
  std::int64_t below = std::count_if(ev.begin(), ev.end(), [&](double v) { return v < sigma; });
  FactorOptions fo;
  fo.lu_solves = c.lu_solves;
  auto f = factor_shifted(a, bp, sigma, fo);
  EXPECT_EQ(f->engine(), c.expected) << f->describe();
  EXPECT_EQ(f->inertia().negative, below);
  EXPECT_EQ(f->inertia().zero, 0);
  EXPECT_EQ(f->positive_definite(), below == 0);
  EXPECT_GT(f->factor_entries(), 0.0);
  // Independent count through the inertia-only path.
  EXPECT_EQ(inertia_at(a, bp, sigma).negative, below);

  // Solve 5 columns with ld > n against the dense solve.
  const std::int64_t s = 5, ld = n + 3;
  auto r = random_block(n, s, ld, 42);
  std::vector<double> x(ld * s, std::nan(""));
  f->solve(MvView<const double>{r.data(), n, s, ld, Space::host},
           MvView<double>{x.data(), n, s, ld, Space::host});
  Eigen::MatrixXd S = dense_of(a) - sigma * (bp ? dense_of(*bp) : Eigen::MatrixXd::Identity(n, n));
  Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>> R(r.data(), n, s, Eigen::OuterStride<>(ld));
  Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>> X(x.data(), n, s, Eigen::OuterStride<>(ld));
  Eigen::MatrixXd ref = S.fullPivLu().solve(R);
  EXPECT_LT((X - ref).norm() / ref.norm(), 1e-9);
}

const ShiftCase kShiftCases[] = {
    {"below_spectrum_cholmod", 7, false, -1, FactorEngine::cholmod},
    {"below_spectrum_mass_cholmod", 6, true, -1, FactorEngine::cholmod},
    {"interior_mumps", 7, false, 0.3, FactorEngine::mumps},
    {"interior_mass_mumps", 6, true, 0.55, FactorEngine::mumps},
    {"near_top_mumps", 5, false, 0.97, FactorEngine::mumps},
    {"interior_umfpack", 7, false, 0.3, FactorEngine::umfpack, true},
    {"interior_mass_umfpack", 6, true, 0.55, FactorEngine::umfpack, true},
    {"below_spectrum_lu_allowed_cholmod", 6, true, -1, FactorEngine::cholmod, true},
};
void PrintTo(const ShiftCase& c, std::ostream* os) { *os << c.name; }

INSTANTIATE_TEST_SUITE_P(Factor, Shifted, ::testing::ValuesIn(kShiftCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Factor, ConstrainedDofsCountTheRepeatedEigenvalue) {
  SKIP_WITHOUT_FACTOR();
  std::int64_t m = 0;
  Csr<double> a = constrained_dofs(6, 7, 1e9, 1e-6, &m);  // 216 rows, eigenvalue 1 × 31
  ASSERT_EQ(m, 31);
  auto ev = dense_spectrum(a);
  // Dense Householder eigenvalues carry absolute errors ~ eps·‖A‖ ≈ 3e-6 here.
  ASSERT_NEAR(ev[m - 1], 1.0, 1e-4);
  ASSERT_GT(ev[m], 10.0);
  EXPECT_EQ(inertia_at(a, nullptr, 1.0 + 1e-3).negative, m);
  EXPECT_EQ(inertia_at(a, nullptr, 1.0 - 1e-3).negative, 0);
  EXPECT_EQ(inertia_at(a, nullptr, 0.5 * (ev[m] + ev[m + 1])).negative, m + 1);
}

// CHOLMOD's factorization is simplicial below 1e7 flops (faster there) and supernodal above;
// both are LLᵀ and solve S·x = r to working precision (residual against the sparse matrix), and
// a shift inside the spectrum still fails the LLᵀ in the simplicial form (MUMPS then counts).
TEST(Factor, SimplicialBelowTenMegaflopsSupernodalAboveBothSolve) {
  SKIP_WITHOUT_FACTOR();
  for (int nx : {9, 26}) {
    Csr<double> a = scaled_laplacian3d(nx, 1.0, 0.05);  // λ > 0.05
    const std::int64_t n = a.nrows;
    const double sigma = -0.25;
    auto f = factor_shifted(a, nullptr, sigma);
    ASSERT_EQ(f->engine(), FactorEngine::cholmod) << f->describe();
    const bool small = f->factor_flops() < 1e7;
    EXPECT_EQ(small, nx == 9) << f->factor_flops();
    EXPECT_NE(f->describe().find(small ? "simplicial" : "supernodal"), std::string::npos) << f->describe();
    const std::int64_t s = 3;
    auto r = random_block(n, s, n, 7);
    std::vector<double> x(n * s, std::nan(""));
    f->solve(MvView<const double>{r.data(), n, s, n, Space::host}, MvView<double>{x.data(), n, s, n, Space::host});
    double res = 0, rn = 0;
    for (std::int64_t j = 0; j < s; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        double v = -sigma * x[i + j * n] - r[i + j * n];
        for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) v += a.values[p] * x[a.col_idx[p] + j * n];
        res += v * v, rn += r[i + j * n] * r[i + j * n];
      }
    EXPECT_LT(std::sqrt(res / rn), 1e-12) << "nx = " << nx;
  }
  // Inside the spectrum of the small case: not positive definite, counted by MUMPS.
  Csr<double> a = scaled_laplacian3d(9, 1.0, 0.05);
  auto ev = dense_spectrum(a);
  std::size_t q = 4;  // σ in a gap above the 5th eigenvalue (the cube's are repeated)
  while (ev[q + 1] - ev[q] < 1e-6) ++q;
  const double sigma = 0.5 * (ev[q] + ev[q + 1]);
  auto f = factor_shifted(a, nullptr, sigma);
  EXPECT_FALSE(f->positive_definite());
  EXPECT_EQ(f->inertia().negative, static_cast<std::int64_t>(q + 1));
}

// The planner's analysis is AMD alone, and it says when the factorization's own (CHOLMOD's
// default strategy) will try METIS too: AMD's fill bounds the factor's from above.
TEST(Factor, PlannersAnalysisIsAmdAndSaysWhenMetisFollows) {
  SKIP_WITHOUT_FACTOR();
  // 2D grid: little fill under AMD (lnz/anz < 5 or fl/lnz < 500): no METIS.
  const Csr<double> a2 = [] {
    std::vector<Triplet<double>> t;
    const int nx = 60;
    for (int i = 0; i < nx; ++i)
      for (int j = 0; j < nx; ++j) {
        const int r = i * nx + j;
        t.push_back({r, r, 4.0 + 0.1 * random_entry(3, r, 0)});
        if (i > 0) t.push_back({r, r - nx, -1.0}), t.push_back({r - nx, r, -1.0});
        if (j > 0) t.push_back({r, r - 1, -1.0}), t.push_back({r - 1, r, -1.0});
      }
    return csr_from_triplets<double>(nx * nx, nx * nx, t, Symmetry::symmetric);
  }();
  const SymbolicAnalysis s2 = analyze_factor(a2, nullptr);
  EXPECT_EQ(s2.ordering, "amd");
  EXPECT_FALSE(s2.metis_follows) << s2.factor_entries << " entries, " << s2.flops << " flops";
  // 3D grid of 26³: AMD fills in (lnz/anz ≥ 5, fl/lnz ≥ 500): METIS follows, and the
  // factorization (default strategy) keeps at most AMD's fill.
  Csr<double> a3 = scaled_laplacian3d(26, 1.0, 0.05);
  const SymbolicAnalysis s3 = analyze_factor(a3, nullptr);
  EXPECT_EQ(s3.ordering, "amd");
  EXPECT_TRUE(s3.metis_follows) << s3.factor_entries << " entries, " << s3.flops << " flops";
  auto f = factor_shifted(a3, nullptr, -0.25);
  EXPECT_LE(f->factor_entries(), s3.factor_entries * (1 + 1e-12)) << f->describe();
}

// The planner's AMD analysis handed to the factorization (FactorOptions::analysis): the same
// factor (entries, solves) without ordering again; an analysis of another matrix size is refused.
TEST(Factor, ReusesTheGivenAnalysisOrdering) {
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = scaled_laplacian3d(12, 1.0, 0.05);
  const SymbolicAnalysis sym = analyze_factor(a, nullptr);
  ASSERT_TRUE(sym.perm);
  ASSERT_EQ(static_cast<std::int64_t>(sym.perm->size()), a.nrows);
  FactorOptions o;
  o.engine = FactorEngine::cholmod;
  auto plain = factor_shifted(a, nullptr, -0.1, o);
  o.analysis = std::make_shared<const SymbolicAnalysis>(sym);
  auto given = factor_shifted(a, nullptr, -0.1, o);
  EXPECT_NE(given->describe().find("the plan's"), std::string::npos) << given->describe();
  EXPECT_DOUBLE_EQ(given->factor_entries(), sym.factor_entries);
  EXPECT_LE(given->factor_entries(), plain->factor_entries() * 1.05 + 1);
  const std::int64_t n = a.nrows;
  std::vector<double> x(n * 3), b(n * 3), y(n * 3);
  for (std::int64_t i = 0; i < n * 3; ++i) x[i] = random_entry(21, i, 0);
  for (int c = 0; c < 3; ++c)
    for (std::int64_t i = 0; i < n; ++i) {
      double s = 0.1 * x[c * n + i];  // (A − σI)·x, σ = −0.1
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) s += a.values[p] * x[c * n + a.col_idx[p]];
      b[c * n + i] = s;
    }
  given->solve(MvView<const double>{b.data(), n, 3, n, Space::host}, MvView<double>{y.data(), n, 3, n, Space::host});
  double err = 0;
  for (std::int64_t i = 0; i < n * 3; ++i) err = std::max(err, std::abs(y[i] - x[i]));
  EXPECT_LT(err, 1e-10);
  Csr<double> other = scaled_laplacian3d(10, 1.0, 0.05);
  EXPECT_THROW(factor_shifted(other, nullptr, -0.1, o), InvalidArgument);
}

TEST(Factor, ExactlySingularShiftNamesSigmaAndSuggestsAnother) {
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = constrained_dofs(5, 4);  // eigenvalue 1.0 exactly (rows with a lone 1)
  for (int lu = 0; lu < 3; ++lu) {  // automatic, automatic with UMFPACK's solves, MUMPS
    const FactorEngine e = lu == 2 ? FactorEngine::mumps : FactorEngine::automatic;
    FactorOptions o;
    o.engine = e;
    o.lu_solves = lu == 1;
    try {
      factor_shifted(a, nullptr, 1.0, o);
      ADD_FAILURE() << "no SingularShift for sigma = 1 (" << to_string(e) << ")";
    } catch (const SingularShift& s) {
      const std::string w = s.what();
      EXPECT_NE(w.find("sigma = 1"), std::string::npos) << w;
      EXPECT_NE(w.find("--sigma"), std::string::npos) << w;
      EXPECT_NE(s.suggestion(), 1.0);
      // The suggestion works.
      EXPECT_NO_THROW(factor_shifted(a, nullptr, s.suggestion(), o));
    }
  }
  EXPECT_THROW(inertia_at(a, nullptr, 1.0), SingularShift);
}

TEST(Factor, RefusesAFactorizationAboveTheMemoryLimitWithTheEstimate) {
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = scaled_laplacian3d(12, 1.0, 0.1);
  for (FactorEngine e : {FactorEngine::cholmod, FactorEngine::mumps}) {
    FactorOptions o;
    o.engine = e;
    o.memory_limit_bytes = 4096;
    try {
      factor_shifted(a, nullptr, 0.0, o);
      ADD_FAILURE() << "no refusal (" << to_string(e) << ")";
    } catch (const FactorTooLarge& t) {
      EXPECT_GT(t.estimated_bytes(), 4096.0);
      EXPECT_NE(std::string(t.what()).find("GiB"), std::string::npos) << t.what();
    }
  }
}

TEST(Factor, ExportedFactorReproducesThePermutedMatrix) {
  SKIP_WITHOUT_FACTOR();
  Csr<double> a = scaled_laplacian3d(5, 2.0, 0.3);
  Csr<double> b = lumped_mass(a.nrows);
  FactorOptions o;
  o.exportable = true;
  const double sigma = -0.7;
  auto f = factor_shifted(a, &b, sigma, o);
  ASSERT_EQ(f->engine(), FactorEngine::cholmod);
  const ExportedFactor& L = f->export_lower();
  const std::int64_t n = a.nrows;
  Eigen::MatrixXd Ld = Eigen::MatrixXd::Zero(n, n);
  for (std::int64_t j = 0; j < n; ++j) {
    ASSERT_EQ(L.row_idx[L.col_ptr[j]], j) << "diagonal first in column " << j;
    for (std::int64_t p = L.col_ptr[j]; p < L.col_ptr[j + 1]; ++p) Ld(L.row_idx[p], j) = L.values[p];
  }
  Eigen::MatrixXd S = dense_of(a) - sigma * dense_of(b), Sp(n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) Sp(i, j) = S(L.perm[i], L.perm[j]);
  EXPECT_LT((Ld * Ld.transpose() - Sp).norm() / Sp.norm(), 1e-13);
}

TEST(Factor, MassMatrixCheck) {
  SKIP_WITHOUT_FACTOR();
  EXPECT_NO_THROW(require_positive_definite(lumped_mass(50), "B"));
  EXPECT_NO_THROW(require_positive_definite(tridiagonal_mass(40), "B"));
  // Positive diagonal but indefinite.
  std::vector<Triplet<double>> t = {{0, 0, 1.0}, {1, 1, 1.0}, {0, 1, 2.0}, {1, 0, 2.0}};
  Csr<double> bad = csr_from_triplets<double>(2, 2, t, Symmetry::symmetric);
  try {
    require_positive_definite(bad, "mass matrix m.mtx");
    ADD_FAILURE() << "indefinite mass accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("m.mtx is not positive definite"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("column 2"), std::string::npos) << e.what();
  }
}

// A real indefinite mass matrix of the collection (skipped, with the path, without it).
TEST(Factor, MassMatrixCheckOnBcsstm10) {
  SKIP_WITHOUT_FACTOR();
  TCSOLVE_SKIP_WITHOUT_MATRIX("bcsstm10");
  ReadOptions ro;
  ro.require_square = true;
  Csr<double> m10 = read_matrix((matrices_dir() / "bcsstm10.mtx").string(), ro);
  EXPECT_THROW(require_positive_definite(m10, "bcsstm10"), InvalidArgument);
}

// The shift-invert operator on the backend under test applies the same solve as the factor.
class ShiftInvertOp : public ::testing::TestWithParam<bool> {};

TEST_P(ShiftInvertOp, MatchesTheHostSolve) {
  SKIP_WITHOUT_FACTOR();
  SKIP_WITHOUT_BACKEND();
  const bool exportable = GetParam();
  Csr<double> a = scaled_laplacian3d(9, 1.0, 0.2);  // 729 rows
  Csr<double> b = lumped_mass(a.nrows, 2.0);
  FactorOptions o;
  o.exportable = exportable;
  auto f = factor_shifted(a, &b, 0.0, o);
  const std::int64_t n = a.nrows, s = 7, ld = n + 5;
  auto op = make_shift_invert(*f, kBackend, nullptr, 4);  // blocks of 7 columns in pieces of 4
  if (kBackend == Backend::cpu) EXPECT_EQ(op->mode(), SolveMode::host);
  else if (!exportable) EXPECT_EQ(op->mode(), SolveMode::device_staged);
  else EXPECT_NE(op->plan().find("trial"), std::string::npos) << op->plan();  // either mode
  auto r = random_block(n, s, ld, 77);
  std::vector<double> ref(n * s), got(ld * s, std::nan(""));
  f->solve(MvView<const double>{r.data(), n, s, ld, Space::host},
           MvView<double>{ref.data(), n, s, n, Space::host});
  if (op->space() == Space::host) {
    op->apply(MvView<const double>{r.data(), n, s, ld, Space::host},
              MvView<double>{got.data(), n, s, ld, Space::host});
  } else {
    MultiVector<double> dx(ld, s, Space::device), dy(ld, s, Space::device);
    copy_bytes(dx.data(), Space::device, r.data(), Space::host, sizeof(double) * ld * s);
    copy_bytes(dy.data(), Space::device, got.data(), Space::host, sizeof(double) * ld * s);  // NaN poison
    op->apply(MvView<const double>{dx.data(), n, s, ld, Space::device},
              MvView<double>{dy.data(), n, s, ld, Space::device});
    device_synchronize();
    copy_bytes(got.data(), Space::host, dy.data(), Space::device, sizeof(double) * ld * s);
  }
  double err = 0, nrm = 0;
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      err = std::max(err, std::abs(got[i + j * ld] - ref[i + j * n]));
      nrm = std::max(nrm, std::abs(ref[i + j * n]));
    }
  EXPECT_LT(err, 1e-11 * nrm);
}
INSTANTIATE_TEST_SUITE_P(Factor, ShiftInvertOp, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "exported" : "not_exported"; });

}  // namespace
}  // namespace tcsolve::test
