// Bcsr building and the CPU reference BCSR SpMM against the CSR product.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.hpp"
#include "preprocess/bcsr_build.hpp"
#include "spmm/bcsr_spmm.hpp"
#include "test_util.hpp"

namespace tcsolve {
namespace {

using test::random_csr;
using test::random_perm;

// Structural invariants of a Bcsr and exact agreement of every stored entry with A.
void check_invariants(const Csr<double>& a, const Bcsr<double>& b) {
  const int h = b.h, w = b.w;
  ASSERT_EQ(b.nrows, a.nrows);
  ASSERT_EQ(b.ncols, a.ncols);
  ASSERT_EQ(b.nnz, a.nnz());
  const std::int64_t nbr = (a.nrows + h - 1) / h, nbc = (a.ncols + w - 1) / w;
  ASSERT_EQ(b.nblock_rows(), nbr);
  ASSERT_EQ(b.block_row_ptr.front(), 0);
  ASSERT_EQ(static_cast<std::int64_t>(b.block_col.size()), b.nblocks());
  ASSERT_EQ(static_cast<std::int64_t>(b.values.size()), b.nblocks() * h * w);
  ASSERT_EQ(static_cast<std::int64_t>(b.perm.size()), a.nrows);
  std::vector<std::int32_t> inv_col(a.ncols);
  for (std::int64_t j = 0; j < a.ncols; ++j) inv_col[b.col_perm.empty() ? j : b.col_perm[j]] = j;
  std::int64_t nonzero_slots = 0;
  for (std::int64_t r = 0; r < nbr; ++r) {
    ASSERT_LE(b.block_row_ptr[r], b.block_row_ptr[r + 1]);
    for (std::int64_t k = b.block_row_ptr[r]; k < b.block_row_ptr[r + 1]; ++k) {
      ASSERT_GE(b.block_col[k], 0);
      ASSERT_LT(b.block_col[k], nbc);
      if (k > b.block_row_ptr[r]) ASSERT_LT(b.block_col[k - 1], b.block_col[k]);  // sorted, unique
      bool any = false;
      for (int rr = 0; rr < h; ++rr)
        for (int cc = 0; cc < w; ++cc) {
          double v = b.values[(k * h + rr) * w + cc];
          std::int64_t i = r * h + rr, j = std::int64_t(b.block_col[k]) * w + cc;
          if (i >= a.nrows || j >= a.ncols) {
            ASSERT_EQ(v, 0.0) << "padding must be zero";
            continue;
          }
          // Stored entry (i, j) must equal A(perm[i], col_perm[j]).
          std::int64_t src = b.perm[i], cj = b.col_perm.empty() ? j : b.col_perm[j];
          auto first = a.col_idx.begin() + a.row_ptr[src], last = a.col_idx.begin() + a.row_ptr[src + 1];
          auto it = std::lower_bound(first, last, static_cast<std::int32_t>(cj));
          double ref = (it != last && *it == cj) ? a.values[it - a.col_idx.begin()] : 0.0;
          ASSERT_EQ(v, ref) << "entry (" << i << "," << j << ")";
          if (it != last && *it == cj) { any = true; ++nonzero_slots; }
        }
      ASSERT_TRUE(any) << "stored block without any entry of A";
    }
  }
  ASSERT_EQ(nonzero_slots, a.nnz()) << "every entry of A must be in exactly one block";
}

void check_spmm(const Csr<double>& a, const Bcsr<double>& b, int k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const std::int64_t ldx = a.ncols + 3, ldy = a.nrows + 5;
  std::vector<double> x(ldx * k), y(ldy * k, 7.0), yref(ldy * k, 7.0);
  for (auto& v : x) v = u(rng);
  csr_spmm_reference(a, x.data(), ldx, yref.data(), ldy, k);
  bcsr_spmm_host(b, x.data(), ldx, y.data(), ldy, k);
  double scale = 1e-300;
  for (double v : yref) scale = std::max(scale, std::abs(v));
  for (int c = 0; c < k; ++c)
    for (std::int64_t i = 0; i < ldy; ++i) {
      const double d = std::abs(y[i + c * ldy] - yref[i + c * ldy]);
      ASSERT_LE(d, 1e-13 * scale) << "row " << i << " col " << c << " of " << k;
    }
}

struct Shape {
  int h, w;
};
const Shape kShapes[] = {{8, 4}, {16, 8}, {16, 16}, {3, 5}, {1, 1}, {7, 1}, {1, 9}, {32, 8}};

TEST(Bcsr, InvariantsEveryShapeIdentityAndPermuted) {
  Csr<double> a = random_csr(301, 257, 6.5, 11);
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w));
    check_invariants(a, build_bcsr(a, s.h, s.w));
    check_invariants(a, build_bcsr(a, s.h, s.w, random_perm(a.nrows, 5)));
    check_invariants(a, build_bcsr(a, s.h, s.w, random_perm(a.nrows, 6), random_perm(a.ncols, 7)));
  }
}

TEST(Bcsr, EmptyAndTinyMatrices) {
  Csr<double> e;  // 0 × 0
  Bcsr<double> b = build_bcsr(e, 8, 4);
  EXPECT_EQ(b.nblocks(), 0);
  EXPECT_EQ(b.nblock_rows(), 0);
  Csr<double> z = random_csr(5, 3, 0.0, 1);  // no entries
  b = build_bcsr(z, 8, 4);
  EXPECT_EQ(b.nblock_rows(), 1);
  EXPECT_EQ(b.nblocks(), 0);
  check_spmm(z, b, 3, 2);
  Csr<double> one = random_csr(1, 1, 3.0, 9);
  check_invariants(one, build_bcsr(one, 16, 16));
}

TEST(Bcsr, RejectsBadArguments) {
  Csr<double> a = random_csr(20, 20, 3, 1);
  EXPECT_THROW(build_bcsr(a, 0, 4), InvalidArgument);
  EXPECT_THROW(build_bcsr(a, 8, -1), InvalidArgument);
  std::vector<std::int32_t> p = random_perm(20, 1);
  p[3] = p[4];
  EXPECT_THROW(build_bcsr(a, 8, 4, p), InvalidArgument);
  EXPECT_THROW(build_bcsr(a, 8, 4, random_perm(19, 1)), InvalidArgument);
  EXPECT_THROW(build_bcsr(a, 8, 4, {}, random_perm(21, 1)), InvalidArgument);
}

TEST(BcsrSpmm, MatchesCsrEveryShapeAndWidth) {
  const int widths[] = {1, 2, 3, 7, 8, 16, 17, 33, 64};
  std::uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    Csr<double> a = random_csr(157 + s.h, 131 + 2 * s.w, 5.0, seed++);
    Bcsr<double> plain = build_bcsr(a, s.h, s.w);
    Bcsr<double> rows = build_bcsr(a, s.h, s.w, random_perm(a.nrows, seed++));
    Bcsr<double> both = build_bcsr(a, s.h, s.w, random_perm(a.nrows, seed++), random_perm(a.ncols, seed++));
    for (int k : widths) {
      SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " k=" + std::to_string(k));
      check_spmm(a, plain, k, seed++);
      check_spmm(a, rows, k, seed++);
      check_spmm(a, both, k, seed++);
    }
  }
}

TEST(BcsrSpmm, ViewOverloadChecksShapes) {
  Csr<double> a = random_csr(40, 30, 4, 3);
  Bcsr<double> b = build_bcsr(a, 8, 4, random_perm(40, 2));
  MultiVector<double> x(30, 3), y(40, 3), y2(40, 2);
  for (std::int64_t i = 0; i < 90; ++i) x.data()[i] = std::sin(1.0 + i);
  bcsr_spmm_host(b, MvView<const double>(x.view()), y.view());
  std::vector<double> yref(120);
  csr_spmm_reference(a, x.data(), 30, yref.data(), 40, 3);
  for (int i = 0; i < 120; ++i) EXPECT_NEAR(y.data()[i], yref[i], 1e-14);
  EXPECT_THROW(bcsr_spmm_host(b, MvView<const double>(x.view()), y2.view()), InvalidArgument);
}

TEST(Bcsr, FloatBuildsAndMultiplies) {
  Csr<float> a = csr_cast<float>(random_csr(77, 65, 4, 21));
  Bcsr<float> b = build_bcsr(a, 16, 8, random_perm(77, 3));
  std::vector<float> x(65 * 5), y(77 * 5), yr(77 * 5);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.3f * i);
  bcsr_spmm_host(b, x.data(), 65, y.data(), 77, 5);
  csr_spmm_reference(a, x.data(), 65, yr.data(), 77, 5);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], yr[i], 1e-4f);
}

}  // namespace
}  // namespace tcsolve
