// The generator families for the planner's and the new solvers' traps (io/generators_graph.cpp,
// io/generators_pde.cpp): spectra against closed forms or dense LAPACK-quality references, the
// null spaces they promise, determinism and the errors of their specs.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "io/generators.hpp"

namespace tcsolve {
namespace {

Eigen::MatrixXd dense(const Csr<double>& a) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.nrows, a.ncols);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[p]) += a.values[p];
  return d;
}

std::vector<double> sym_eigs(const Csr<double>& a) {
  Eigen::VectorXd w = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(dense(a), Eigen::EigenvaluesOnly).eigenvalues();
  return {w.data(), w.data() + w.size()};
}

// Sorted eigenvalues of a Kronecker sum of 1-D tridiagonal Toeplitz operators tridiag(b, a, c)
// (b·c > 0): λ = Σ_axes a + 2√(bc)·cos(kπ/(n + 1)), k = 1..n.
std::vector<double> kron_sum_eigs(int dims, int n, double a, double bc) {
  std::vector<double> ev{0.0};
  for (int d = 0; d < dims; ++d) {
    std::vector<double> next;
    for (double base : ev)
      for (int k = 1; k <= n; ++k) next.push_back(base + a + 2.0 * std::sqrt(bc) * std::cos(M_PI * k / (n + 1)));
    ev = next;
  }
  std::sort(ev.begin(), ev.end());
  return ev;
}

std::int64_t components(const Csr<double>& a) {
  std::vector<std::int64_t> label(a.nrows, -1), stack;
  std::int64_t c = 0;
  for (std::int64_t s = 0; s < a.nrows; ++s) {
    if (label[s] >= 0) continue;
    label[s] = c;
    stack.assign(1, s);
    while (!stack.empty()) {
      const std::int64_t i = stack.back();
      stack.pop_back();
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        if (a.values[p] != 0 && label[a.col_idx[p]] < 0) label[a.col_idx[p]] = c, stack.push_back(a.col_idx[p]);
    }
    ++c;
  }
  return c;
}

void expect_zero_row_sums(const Csr<double>& a) {
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double s = 0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) s += a.values[p];
    ASSERT_EQ(s, 0.0) << "row " << i;
  }
}

TEST(GeneratorFamilies, RggHasExactlyCComponentsAndCZeroEigenvalues) {
  for (int c : {1, 2, 5}) {
    const Csr<double> a = generate("gen:rgg:900:" + std::to_string(c) + "@3");
    ASSERT_EQ(a.nrows, 900);
    EXPECT_TRUE(is_symmetric(a));
    expect_zero_row_sums(a);
    EXPECT_EQ(components(a), c);
    const std::vector<double> w = sym_eigs(a);
    const double tol = 1e-10 * w.back();
    EXPECT_EQ(std::count_if(w.begin(), w.end(), [&](double x) { return std::abs(x) < tol; }), c) << "C = " << c;
    EXPECT_GT(w[c], 1e3 * tol);  // the next eigenvalue is well away from 0
    const double mean_row = double(a.nnz()) / a.nrows;
    EXPECT_GT(mean_row, 6.0);   // about 10 neighbours, plus the diagonal
    EXPECT_LT(mean_row, 16.0);
  }
  // Deterministic per seed, different across seeds; scramble keeps the component count.
  EXPECT_EQ(generate("gen:rgg:500:2@7").values, generate("gen:rgg:500:2@7").values);
  EXPECT_NE(generate("gen:rgg:500:2@7").col_idx, generate("gen:rgg:500:2@8").col_idx);
  EXPECT_EQ(components(generate("gen:rgg:500:4+scramble@2")), 4);
}

TEST(GeneratorFamilies, NeumannGridMatchesClosedForm) {
  // 1-D Neumann path graph: eigenvalues 4 sin²(πk/2n), k = 0..n−1; the grid's are sums.
  auto path = [](int n) {
    std::vector<double> v;
    for (int k = 0; k < n; ++k) v.push_back(4.0 * std::pow(std::sin(M_PI * k / (2.0 * n)), 2));
    return v;
  };
  for (const auto& [spec, dims] : {std::pair<std::string, std::vector<int>>{"gen:neumann2d:9x7", {9, 7}},
                                   {"gen:neumann3d:5", {5, 5, 5}}}) {
    const Csr<double> a = generate(spec);
    expect_zero_row_sums(a);
    std::vector<double> ref{0.0};
    for (int n : dims) {
      std::vector<double> next;
      for (double b : ref)
        for (double v : path(n)) next.push_back(b + v);
      ref = next;
    }
    std::sort(ref.begin(), ref.end());
    const std::vector<double> w = sym_eigs(a);
    ASSERT_EQ(w.size(), ref.size()) << spec;
    for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], ref[i], 1e-12 * ref.back()) << spec << " #" << i;
  }
}

TEST(GeneratorFamilies, JumpCoefficientsAreSpdWithTheirContrast) {
  for (const std::string spec : {"gen:jump2d:24:1e6", "gen:jump3d:8:1e4"}) {
    const Csr<double> a = generate(spec);
    EXPECT_TRUE(is_symmetric(a)) << spec;
    const std::vector<double> w = sym_eigs(a);
    EXPECT_GT(w.front(), 0.0) << spec;
    // Diagonals span the coefficients: their ratio is at most the contrast (2d faces each) and
    // at least a good part of it (8^d blocks drawn log-uniformly).
    const std::vector<double> d = csr_diagonal(a);
    const double ratio = *std::max_element(d.begin(), d.end()) / *std::min_element(d.begin(), d.end());
    const double contrast = spec.find("1e6") != std::string::npos ? 1e6 : 1e4;
    EXPECT_LE(ratio, contrast * 1.0001) << spec;
    EXPECT_GE(ratio, std::sqrt(contrast)) << spec;
  }
  const Csr<double> flat = generate("gen:jump2d:10:1");  // contrast 1: the Dirichlet Laplacian
  const std::vector<double> w = sym_eigs(flat), ref = kron_sum_eigs(2, 10, 2.0, 1.0);
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], ref[i], 1e-12);
}

TEST(GeneratorFamilies, StiffHasMUnitEigenvaluesBelowALargeNorm) {
  const Csr<double> a = generate("gen:stiff:6:23@5");
  ASSERT_EQ(a.nrows, 3 * 216);
  EXPECT_TRUE(is_symmetric(a));
  const std::vector<double> w = sym_eigs(a);
  // Dense eigenvalues carry an absolute error of about u·‖A‖ ≈ 1e-6 here.
  for (int i = 0; i < 23; ++i) EXPECT_NEAR(w[i], 1.0, 1e-5) << i;
  EXPECT_GT(w[23], 1e6);
  EXPECT_LE(w.back(), 4e9 * (1 + 1e-12));
  EXPECT_GT(w.back(), 4e8);
  // Scaled to ‖K‖∞ = NORM before the constraints, which only remove entries from a row.
  const double inf = csr_inf_norm(generate("gen:stiff:6:23:1e5@5"));
  EXPECT_LE(inf, 1e5 * (1 + 1e-12));
  EXPECT_GT(inf, 0.5e5);
}

TEST(GeneratorFamilies, ConvectionDiffusionIsUnsymmetricWithItsKroneckerSpectrum) {
  const int n = 12;
  const double pe = 40, h = 1.0 / (n + 1), wind = pe * h / std::sqrt(2.0);
  const Csr<double> a = generate("gen:convdiff2d:12:40");
  EXPECT_EQ(a.symmetry, Symmetry::general);
  EXPECT_FALSE(is_symmetric(a));
  // tridiag(−1 − w, 2 + w, −1) per axis: real eigenvalues (bc = 1 + w > 0).
  const std::vector<double> ref = kron_sum_eigs(2, n, 2.0 + wind, 1.0 + wind);
  Eigen::VectorXcd ev = Eigen::EigenSolver<Eigen::MatrixXd>(dense(a), false).eigenvalues();
  std::vector<double> re;
  for (int i = 0; i < ev.size(); ++i) {
    EXPECT_NEAR(ev[i].imag(), 0.0, 1e-8);
    re.push_back(ev[i].real());
  }
  std::sort(re.begin(), re.end());
  for (std::size_t i = 0; i < re.size(); ++i) EXPECT_NEAR(re[i], ref[i], 1e-8) << i;
  EXPECT_TRUE(is_symmetric(generate("gen:convdiff3d:4:0")));  // no wind: the Laplacian
  EXPECT_EQ(generate("gen:convdiff3d:5:10").nrows, 125);
}

TEST(GeneratorFamilies, HelmholtzIsIndefiniteWithItsClosedForm) {
  const int n = 15;
  const double k = 20, kh2 = std::pow(k / (n + 1), 2);
  const Csr<double> a = generate("gen:helmholtz2d:15:20");
  EXPECT_TRUE(is_symmetric(a));
  const std::vector<double> w = sym_eigs(a), ref = kron_sum_eigs(2, n, 2.0, 1.0);
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], ref[i] - kh2, 1e-12) << i;
  EXPECT_LT(w.front(), 0.0);
  EXPECT_GT(w.back(), 0.0);
}

// The entry of A at (i, j) (0 when not stored).
double entry(const Csr<double>& a, std::int64_t i, std::int64_t j) {
  for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
    if (a.col_idx[p] == j) return a.values[p];
  return 0.0;
}

TEST(GeneratorFamilies, ConvectionDiffusionEntriesFollowTheUpwindStencil) {
  // 2D, N = 7, default Péclet 10: n = 49, the 5-point pattern (diagonal + both directions of the
  // 2·6·7 grid edges), w = Pe·h/√2 per axis.
  const Csr<double> a = generate("gen:convdiff2d:7");
  validate(a);
  ASSERT_EQ(a.nrows, 49);
  EXPECT_EQ(a.nnz(), 49 + 2 * (2 * 6 * 7));
  EXPECT_EQ(a.symmetry, Symmetry::general);
  EXPECT_EQ(a.values, generate("gen:convdiff2d:7:10").values);  // the default Péclet number
  const double w = 10.0 / 8.0 / std::sqrt(2.0);
  for (int y = 0; y < 7; ++y)
    for (int x = 0; x < 7; ++x) {
      const int r = x + 7 * y;
      EXPECT_DOUBLE_EQ(entry(a, r, r), 4.0 + 2.0 * w);
      if (x > 0) EXPECT_DOUBLE_EQ(entry(a, r, r - 1), -1.0 - w);  // upwind: the backward side
      if (x < 6) EXPECT_EQ(entry(a, r, r + 1), -1.0);
      if (y > 0) EXPECT_DOUBLE_EQ(entry(a, r, r - 7), -1.0 - w);
      if (y < 6) EXPECT_EQ(entry(a, r, r + 7), -1.0);
    }
  EXPECT_EQ(entry(a, 7, 6), 0.0);  // no wrap-around at the grid's edge
  // Asymmetry: |a_ij − a_ji| = w on every edge, relative to max |a| = 4 + 2w.
  EXPECT_FALSE(is_symmetric(a, 1e-3));
  EXPECT_NEAR(csr_symmetry_defect(a), w / (4.0 + 2.0 * w), 1e-15);

  // 3D, N = 5, Pe = 40: the 7-point pattern, w = Pe·h/√3.
  const Csr<double> b = generate("gen:convdiff3d:5:40");
  ASSERT_EQ(b.nrows, 125);
  EXPECT_EQ(b.nnz(), 125 + 2 * (3 * 4 * 25));
  EXPECT_EQ(b.symmetry, Symmetry::general);
  const double w3 = 40.0 / 6.0 / std::sqrt(3.0);
  const int c = 2 + 5 * 2 + 25 * 2;  // the centre node
  EXPECT_DOUBLE_EQ(entry(b, c, c), 6.0 + 3.0 * w3);
  EXPECT_DOUBLE_EQ(entry(b, c, c - 25), -1.0 - w3);
  EXPECT_EQ(entry(b, c, c + 25), -1.0);
  EXPECT_DOUBLE_EQ(entry(b, c, c - 5), -1.0 - w3);
  EXPECT_EQ(entry(b, c, c + 1), -1.0);

  // An M-matrix at any Péclet number: negative off-diagonals, non-negative row sums (zero inside,
  // positive next to the boundary), dense LU nonsingular.
  for (const std::string spec : {"gen:convdiff2d:9:1e6", "gen:convdiff3d:4:0.5"}) {
    const Csr<double> m = generate(spec);
    for (std::int64_t i = 0; i < m.nrows; ++i) {
      double sum = 0;
      for (std::int64_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) {
        sum += m.values[p];
        if (m.col_idx[p] != i) ASSERT_LT(m.values[p], 0.0) << spec << " row " << i;
      }
      ASSERT_GE(sum, -1e-12 * entry(m, i, i)) << spec << " row " << i;
    }
    EXPECT_GT(std::abs(Eigen::FullPivLU<Eigen::MatrixXd>(dense(m)).determinant()), 0.0) << spec;
    EXPECT_EQ(Eigen::FullPivLU<Eigen::MatrixXd>(dense(m)).rank(), m.nrows) << spec;
  }
  // Pe = 0 is the Dirichlet Laplacian, flagged symmetric; a scramble keeps the flag general.
  const Csr<double> lap = generate("gen:convdiff2d:7:0");
  EXPECT_EQ(lap.symmetry, Symmetry::symmetric);
  EXPECT_EQ(lap.values, generate("gen:lap2d:7").values);
  EXPECT_EQ(lap.col_idx, generate("gen:lap2d:7").col_idx);
  const Csr<double> sc = generate("gen:convdiff3d:6+scramble@3");
  EXPECT_EQ(sc.symmetry, Symmetry::general);
  EXPECT_FALSE(is_symmetric(sc));
  EXPECT_EQ(sc.nnz(), generate("gen:convdiff3d:6").nnz());
}

// Eigenvalues of the Dirichlet Laplacian (h²-scaled) on an N^dims grid, smallest first: all of
// them for small grids, else the sums over indices ≤ `limit` (for N > limit only the smallest
// ones are exact: those below the smallest sum holding an index > limit).
std::vector<double> laplacian_low_eigs(int dims, std::int64_t n, std::int64_t limit) {
  const std::int64_t L = std::min(n, limit);
  std::vector<double> mu;
  for (std::int64_t i = 1; i <= L; ++i) mu.push_back(2.0 - 2.0 * std::cos(M_PI * double(i) / double(n + 1)));
  std::vector<double> ev{0.0};
  for (int d = 0; d < dims; ++d) {
    std::vector<double> next;
    for (double base : ev)
      for (double m : mu) next.push_back(base + m);
    ev = next;
  }
  std::sort(ev.begin(), ev.end());
  return ev;
}

TEST(GeneratorFamilies, HelmholtzDefaultShiftSitsInAGapOfTheSpectrum) {
  struct Case {
    int dims;
    std::int64_t n;
  };
  for (const Case c : {Case{2, 1}, Case{2, 2}, Case{2, 3}, Case{2, 5}, Case{2, 8}, Case{2, 13}, Case{2, 100},
                       Case{2, 1000}, Case{2, 46340}, Case{3, 1}, Case{3, 2}, Case{3, 3}, Case{3, 4},
                       Case{3, 7}, Case{3, 30}, Case{3, 100}, Case{3, 1290}}) {
    const std::string what = std::to_string(c.dims) + "d N=" + std::to_string(c.n);
    const HelmholtzShift s = helmholtz_default_shift(c.dims, c.n);
    // Index limit 60: exact up to the sums below μ_61 + (d − 1)·μ_1, far past the 41st.
    const std::vector<double> ev = laplacian_low_eigs(c.dims, c.n, 60);
    const std::int64_t total = c.dims == 2 ? c.n * c.n : c.n * c.n * c.n;
    const std::int64_t below = std::count_if(ev.begin(), ev.end(), [&](double l) { return l < s.sigma; });
    EXPECT_EQ(below, s.below) << what;
    if (total >= 48) {
      EXPECT_GE(s.below, 24) << what;
      EXPECT_LE(s.below, 40) << what;
    } else {
      EXPECT_GE(s.below, total / 2) << what;
      EXPECT_LT(s.below, std::max<std::int64_t>(1, total)) << what;
    }
    double dist = INFINITY;
    for (double l : ev) dist = std::min(dist, std::abs(l - s.sigma));
    EXPECT_GT(dist, 1e-8) << what << ": σ = " << s.sigma;
    // (the reference's 2 − 2cos(πi/(N + 1)) carries absolute errors of a few 1e-16)
    EXPECT_NEAR(dist, s.gap / 2, 1e-15 + 1e-9 * s.gap) << what;
    EXPECT_NEAR(s.k, std::sqrt(s.sigma) * double(c.n + 1), 1e-9 * s.k) << what;
  }
  // The generated matrix: diagonal 2d − σ, −1 off it, symmetric, exactly `below` negative
  // eigenvalues and none within gap/2 of 0 (dense, small grids).
  for (const auto& [spec, dims, n] : {std::tuple<std::string, int, int>{"gen:helmholtz2d:13", 2, 13},
                                      {"gen:helmholtz3d:6", 3, 6}, {"gen:helmholtz2d:3", 2, 3}}) {
    const Csr<double> a = generate(spec);
    const HelmholtzShift s = helmholtz_default_shift(dims, n);
    validate(a);
    ASSERT_EQ(a.nrows, dims == 2 ? n * n : n * n * n);
    EXPECT_EQ(a.symmetry, Symmetry::symmetric);
    EXPECT_TRUE(is_symmetric(a));
    EXPECT_EQ(entry(a, 0, 0), 2.0 * dims - s.sigma) << spec;
    EXPECT_EQ(entry(a, 0, 1), -1.0) << spec;
    const std::vector<double> w = sym_eigs(a);
    EXPECT_EQ(std::count_if(w.begin(), w.end(), [](double x) { return x < 0; }), s.below) << spec;
    for (double x : w) EXPECT_GT(std::abs(x), 0.499 * s.gap) << spec;
  }
  EXPECT_EQ(generate("gen:helmholtz3d:5").nnz(), 125 + 2 * (3 * 4 * 25));
  EXPECT_THROW(helmholtz_default_shift(4, 10), InvalidArgument);
  EXPECT_THROW(helmholtz_default_shift(2, 0), InvalidArgument);
}

TEST(GeneratorFamilies, ErrorsNameTheSpecAndTheBadPart) {
  auto message = [](const std::string& spec) {
    try {
      generate(spec);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("gen:rgg:10:11").find("components"), std::string::npos);
  EXPECT_NE(message("gen:rgg:10:2:3").find("1 to 2 parameters"), std::string::npos);
  EXPECT_NE(message("gen:jump2d:10:abc").find("CONTRAST 'abc' is not a number"), std::string::npos);
  EXPECT_NE(message("gen:jump2d:10:0.5").find("at least 1"), std::string::npos);
  EXPECT_NE(message("gen:stiff:4:192").find("fewer than the 192 rows"), std::string::npos);
  EXPECT_NE(message("gen:helmholtz2d:10:-3").find("K = -3 must be positive"), std::string::npos);
  EXPECT_NE(message("gen:convdiff2d:10:inf").find("not a number"), std::string::npos);
  EXPECT_NE(message("gen:neumann3d:2000").find("too large"), std::string::npos);
  EXPECT_NE(message("gen:nosuch:3").find("helmholtz3d"), std::string::npos);
  // convdiff and helmholtz: N positive, PECLET ≥ 0 and K > 0 numbers, one or two parameters.
  for (const auto& [spec, part] : std::vector<std::pair<std::string, std::string>>{
           {"gen:convdiff2d:0", "N must be positive"},
           {"gen:convdiff3d:-5", "N '-5' is not a non-negative integer"},
           {"gen:convdiff2d:x7", "N 'x7' is not a non-negative integer"},
           {"gen:convdiff2d:10:abc", "PECLET 'abc' is not a number"},
           {"gen:convdiff2d:10:", "missing PECLET"},
           {"gen:convdiff3d:10:-1", "PECLET = -1 must be non-negative"},
           {"gen:convdiff3d:10:nan", "PECLET 'nan' is not a number"},
           {"gen:convdiff2d", "takes 1 to 2 parameters (N[:PECLET]), got 0"},
           {"gen:convdiff2d:10:5:3", "takes 1 to 2 parameters (N[:PECLET]), got 3"},
           {"gen:convdiff3d:1300", "too large"},
           {"gen:helmholtz3d:0", "N must be positive"},
           {"gen:helmholtz2d:-3", "not a non-negative integer"},
           {"gen:helmholtz2d:10:x", "K 'x' is not a number"},
           {"gen:helmholtz2d:10:0", "K = 0 must be positive"},
           {"gen:helmholtz3d:4:1:2", "takes 1 to 2 parameters (N[:K]), got 3"},
           {"gen:helmholtz2d:50000", "more than 32-bit indices allow"}}) {
    const std::string m = message(spec);
    EXPECT_NE(m.find("'" + spec + "'"), std::string::npos) << m;
    EXPECT_NE(m.find(part), std::string::npos) << spec << " -> " << m;
  }
}

}  // namespace
}  // namespace tcsolve
