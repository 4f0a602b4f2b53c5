// The generator families for the planner's and the new solvers' traps (io/generators_graph.cpp,
// io/generators_pde.cpp): spectra against closed forms or dense LAPACK-quality references, the
// null spaces they promise, determinism and the errors of their specs.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
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
}

}  // namespace
}  // namespace tcsolve
