// Aᵀ on the host without forming it (spmm/cpu_transposed.hpp, make_transposed_operator's CPU
// branch) against A transposed and multiplied by a plain loop in long double: tall and square A,
// empty rows and columns, 1 to 70 columns (past the 64-column chunk), a leading dimension above
// the rows, Y poisoned with NaN; bitwise the same on one thread as on all; the refusals (a wide A,
// another matrix's operator, shapes that do not match).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "spmm/cpu_transposed.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/spmm/spmm_test_util.hpp"

namespace tcsolve {
namespace {

std::vector<double> random_block(std::int64_t ld, std::int64_t k, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(ld * k));
  for (auto& x : v) x = u(rng);
  return v;
}

// Y (n × k, ld ldy) against Aᵀ·X from the loop over Aᵀ's rows in long double, each entry within the
// rounding bound of a sum of its terms: (terms + 3)·u·Σ|terms|.
void expect_transposed_product(const Csr<double>& a, const std::vector<double>& x, std::int64_t ldx,
                               const std::vector<double>& y, std::int64_t ldy, std::int64_t k) {
  const Csr<double> at = transpose(a);
  int bad = 0;
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < at.nrows; ++i) {
      long double s = 0;
      double scale = 1e-300;
      for (std::int64_t p = at.row_ptr[i]; p < at.row_ptr[i + 1]; ++p) {
        s += static_cast<long double>(at.values[p]) * x[at.col_idx[p] + j * ldx];
        scale += std::abs(at.values[p] * x[at.col_idx[p] + j * ldx]);
      }
      const double len = static_cast<double>(at.row_ptr[i + 1] - at.row_ptr[i]);
      const double got = y[i + j * ldy];
      if (!(std::abs(got - static_cast<double>(s)) <= (len + 3) * 1.2e-16 * scale) && ++bad <= 5)
        ADD_FAILURE() << "(" << i << ", " << j << ") of " << at.nrows << "x" << k << ": " << got << " vs "
                      << static_cast<double>(s);
    }
  EXPECT_EQ(bad, 0);
}

std::unique_ptr<SparseOperator> transposed_of(const Csr<double>& a, const SparseOperator& op, int cols) {
  OperatorOptions oo;
  oo.expected_cols = cols;
  return make_transposed_operator(a, op, oo);
}

TEST(CpuTransposed, MatchesTheTransposedLoopAtOddShapes) {
  // tall (cells × genes), with some empty rows and columns; square and skewed
  for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{9001, 613}, {2503, 2503}, {37, 5}}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n));
    Csr<double> a = test::random_skewed(m, n, 9, 3, std::min<int>(400, static_cast<int>(n)), 7, 31);
    auto op = make_sparse_operator(a, Backend::cpu);
    auto t = transposed_of(a, *op, 16);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->rows(), n);
    EXPECT_EQ(t->cols(), m);
    EXPECT_EQ(t->space(), Space::host);
    EXPECT_NE(t->plan().reason.find("no transpose formed"), std::string::npos) << t->plan().reason;
    for (std::int64_t k : {1, 3, 10, 64, 70}) {
      SCOPED_TRACE(k);
      const std::int64_t ldx = m + 3, ldy = n + 5;
      const auto x = random_block(ldx, k, static_cast<unsigned>(k));
      std::vector<double> y(static_cast<std::size_t>(ldy * k), std::numeric_limits<double>::quiet_NaN());
      t->apply({x.data(), m, k, ldx, Space::host}, {y.data(), n, k, ldy, Space::host});
      expect_transposed_product(a, x, ldx, y, ldy, k);
    }
  }
}

TEST(CpuTransposed, ResultsDoNotDependOnTheThreadCount) {
  const Csr<double> a = test::random_skewed(60011, 1009, 10, 5, 900, 13, 21);
  ASSERT_GT(detail::cpu_transposed_parts(a.nnz()), 1);
  auto op = make_sparse_operator(a, Backend::cpu);
  auto t = transposed_of(a, *op, 8);
  ASSERT_NE(t, nullptr);
  const std::int64_t m = a.nrows, n = a.ncols, k = 7;
  const auto x = random_block(m, k, 5);
  std::vector<double> all(static_cast<std::size_t>(n * k)), one(all.size());
  t->apply({x.data(), m, k, m, Space::host}, {all.data(), n, k, n, Space::host});
  {
    HostShare single(1);
    t->apply({x.data(), m, k, m, Space::host}, {one.data(), n, k, n, Space::host});
  }
  EXPECT_EQ(0, std::memcmp(all.data(), one.data(), all.size() * sizeof(double)));
  expect_transposed_product(a, x, m, all, n, k);
}

TEST(CpuTransposed, RefusesWhatItCannotServe) {
  // A wide A: its per-part sums (300,000 rows of Aᵀ × 32 columns × 8 bytes = 77 MB) would not stay
  // in the cache; the caller transposes instead.
  const Csr<double> wide = test::random_skewed(50, 300000, 3, 0, 1, 1, 3);
  auto opw = make_sparse_operator(wide, Backend::cpu);
  EXPECT_EQ(transposed_of(wide, *opw, 32), nullptr);
  // Another matrix's operator; fp32 storage (its copy is rounded); X and Y that do not match.
  const Csr<double> a = test::random_skewed(300, 40, 4, 1, 30, 2, 9);
  const Csr<double> b = test::random_skewed(300, 40, 5, 1, 30, 2, 10);
  auto opa = make_sparse_operator(a, Backend::cpu);
  EXPECT_THROW(transposed_of(b, *opa, 8), InvalidArgument);
  OperatorOptions f32;
  f32.precision = Precision::fp32;
  auto op32 = make_sparse_operator(a, Backend::cpu, f32);
  EXPECT_EQ(make_transposed_operator(a, *op32, f32), nullptr);
  auto t = transposed_of(a, *opa, 8);
  ASSERT_NE(t, nullptr);
  std::vector<double> x(300 * 2), y(40 * 2);
  EXPECT_THROW(t->apply({x.data(), 300, 2, 300, Space::host}, {y.data(), 40, 1, 40, Space::host}), InvalidArgument);
  EXPECT_THROW(t->apply({x.data(), 40, 2, 300, Space::host}, {y.data(), 300, 2, 300, Space::host}), InvalidArgument);
}

}  // namespace
}  // namespace tcsolve
