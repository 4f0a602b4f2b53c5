// Sparse operator on the CPU backend and the plan (no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "preprocess/bcsr_stats.hpp"
#include "preprocess/jaccard_reorder.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/spmm/spmm_test_util.hpp"

namespace tcsolve {
namespace {

// ---- A's natural b×b blocks for the BSR Chebyshev step (spmm/chebyshev_step.cpp).
// y = A·x through the BSR copy (host loop over its blocks).
std::vector<double> bsr_times(const BsrBlocks& a, const std::vector<double>& x) {
  const int b = a.b;
  std::vector<double> y(static_cast<std::size_t>(a.mb * b), 0.0);
  for (std::int64_t I = 0; I < a.mb; ++I)
    for (std::int64_t p = a.row_ptr[I]; p < a.row_ptr[I + 1]; ++p)
      for (int r = 0; r < b; ++r)
        for (int c = 0; c < b; ++c)
          y[I * b + r] += a.values[(p * b + r) * b + c] * x[a.col[p] * b + c];
  return y;
}

TEST(BsrBlocks, NaturalBlockSizeIsTheLargestThatHoldsA) {
  // 1001 block rows (n = 2002, 3003, 4004, 6006: no larger candidate divides n, except 6 | 6006
  // where 6 is the answer), full blocks.
  for (int b : {2, 3, 4, 6}) {
    const Csr<double> a = test::random_blocked(1001, b, 9, 97, 60, 53, 0.0, 40 + b);
    EXPECT_EQ(natural_block_size(a), b) << b;
  }
  // 3×3 blocks with 5 % of the entries dropped (fill ~1.05) are still 3×3 blocks; 40 % dropped
  // (fill ~1.7) are not, nor is any smaller size there.
  EXPECT_EQ(natural_block_size(test::random_blocked(1001, 3, 9, 0, 0, 0, 0.05, 7)), 3);
  EXPECT_EQ(natural_block_size(test::random_blocked(1001, 3, 9, 0, 0, 0, 0.4, 7)), 0);
  // A 6×6-block matrix is also made of 3×3 and 2×2 blocks: the largest wins.
  EXPECT_EQ(natural_block_size(test::random_blocked(500, 6, 5, 0, 0, 0, 0.0, 8)), 6);
  // Unstructured rows, a non-square matrix, an empty one.
  EXPECT_EQ(natural_block_size(test::random_skewed(3000, 3000, 20, 2, 300, 11, 9)), 0);
  EXPECT_EQ(natural_block_size(test::random_blocked(100, 3, 4, 0, 0, 0, 0.0, 9)), 3);
  Csr<double> e;
  e.nrows = e.ncols = 6;
  e.row_ptr.assign(7, 0);
  EXPECT_EQ(natural_block_size(e), 0);
}

TEST(BsrBlocks, BlocksHoldEveryEntryAndZerosElsewhere) {
  for (int b : {2, 3, 6}) {
    const Csr<double> a = test::random_blocked(777, b, 7, 50, 120, 31, 0.1, 60 + b);
    const BsrBlocks bs = to_bsr_blocks(a, b);
    ASSERT_EQ(bs.b, b);
    ASSERT_EQ(bs.mb, 777);
    ASSERT_EQ(static_cast<std::int64_t>(bs.values.size()), bs.blocks() * b * b);
    std::int64_t nonzero = 0;
    for (double v : bs.values) nonzero += v != 0.0;
    EXPECT_EQ(nonzero, a.nnz()) << b;  // random values in (-1, 1): none is exactly 0
    for (std::int64_t I = 0; I < bs.mb; ++I)
      for (std::int64_t p = bs.row_ptr[I] + 1; p < bs.row_ptr[I + 1]; ++p) ASSERT_LT(bs.col[p - 1], bs.col[p]);
    const std::vector<double> x = test::random_vector(static_cast<std::size_t>(a.nrows), 3);
    std::vector<double> want(static_cast<std::size_t>(a.nrows));
    csr_spmm_reference(a, x.data(), a.nrows, want.data(), a.nrows, 1);
    const std::vector<double> got = bsr_times(bs, x);
    for (std::int64_t i = 0; i < a.nrows; ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << b << " row " << i;
  }
  const Csr<double> a = test::random_blocked(100, 3, 4, 0, 0, 0, 0.0, 9);
  EXPECT_THROW(to_bsr_blocks(a, 7), InvalidArgument);   // 7 ∤ 300
  EXPECT_THROW(to_bsr_blocks(a, 0), InvalidArgument);
  EXPECT_THROW(to_bsr_blocks(test::random_skewed(30, 31, 3, 0, 0, 0, 1), 2), InvalidArgument);
}

TEST(BsrBlocks, TheBsrStepIsForLongRowsOnly) {
  // ~8 blocks of 3×3 a block row: ~27 entries a row, too long for the CSR step: the BSR step.
  EXPECT_EQ(chebyshev_bsr_step_block(test::random_blocked(2000, 3, 4, 0, 0, 0, 0.0, 11)), 3);
  // 2×2 blocks, ~2 a block row: ~6 entries a row, the CSR step's case.
  EXPECT_EQ(chebyshev_bsr_step_block(test::random_blocked(2000, 2, 1, 0, 0, 0, 0.0, 12)), 0);
  // Long rows without blocks: neither.
  EXPECT_EQ(chebyshev_bsr_step_block(test::random_skewed(3000, 3000, 40, 0, 0, 0, 13)), 0);
}

// The plan (no GPU needed): long rows in natural 3×3 blocks whose 8×4 blocks are mostly padding
// take the bsr_block kernel up to 32 columns; not above, not with a reordering, not when forced
// off (TCSOLVE_BSR_OPERATOR=0), not for fp16; its predicted device bytes follow the slices.
TEST(SparsePlan, NaturalBlocksOfLongRowsTakeTheBlockRowKernel) {
  const Csr<double> a = test::random_blocked(3001, 3, 9, 97, 150, 53, 0.0, 90);
  OperatorOptions opt;
  opt.expected_cols = 24;
  SpmmPlan p = plan_spmm(a, Backend::cuda, opt);
  ASSERT_EQ(p.kernel, SpmmKernel::bsr_block) << p.describe();
  EXPECT_EQ(p.block_h, 3);
  // decided on a sample of the 8×4 fill (clearly below 0.75), without the exact O(nnz) count
  EXPECT_NE(p.reason.find("8x4 tensor-core blocks"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find(", sampled)"), std::string::npos) << p.reason;
  const BsrBlocks bs = to_bsr_blocks(a, 3);
  EXPECT_EQ(p.nblocks, bs.blocks());
  EXPECT_NEAR(p.fill, 1.0, 1e-12);
  // the block-row offsets the build reuses (counted once, by the plan)
  ASSERT_TRUE(p.bsr_row_ptr);
  EXPECT_EQ(*p.bsr_row_ptr, bs.row_ptr);
  // slots: each slice of 32 block rows as wide as its widest block row
  std::int64_t slots = 0;
  for (std::int64_t S = 0; S * 32 < bs.mb; ++S) {
    std::int64_t w = 0;
    for (std::int64_t I = S * 32; I < std::min<std::int64_t>(bs.mb, S * 32 + 32); ++I)
      w = std::max(w, bs.row_ptr[I + 1] - bs.row_ptr[I]);
    slots += w;
  }
  EXPECT_EQ(p.bsr_slots, slots);
  const double want = 32.0 * slots * 9 * 12 + 4.0 * 32 * slots + 8.0 * ((bs.mb + 31) / 32 + 1);
  EXPECT_EQ(predict_device_bytes(a, p), static_cast<std::size_t>(want));
  opt.expected_cols = 48;
  EXPECT_NE(plan_spmm(a, Backend::cuda, opt).kernel, SpmmKernel::bsr_block);
  opt.expected_cols = 24;
  opt.reorder = Reorder::symmetric;
  EXPECT_NE(plan_spmm(a, Backend::cuda, opt).kernel, SpmmKernel::bsr_block);
  opt.reorder = Reorder::none;
  ::setenv("TCSOLVE_BSR_OPERATOR", "0", 1);
  EXPECT_NE(plan_spmm(a, Backend::cuda, opt).kernel, SpmmKernel::bsr_block);
  ::unsetenv("TCSOLVE_BSR_OPERATOR");
  opt.precision = Precision::fp16;
  EXPECT_NE(plan_spmm(a, Backend::cuda, opt).kernel, SpmmKernel::bsr_block);
  // The CPU backend keeps its CSR kernel; a band (dense 8×4 blocks) keeps the tensor cores.
  EXPECT_EQ(plan_spmm(a, Backend::cpu, {}).kernel, SpmmKernel::cpu_csr);
  OperatorOptions ob;
  ob.expected_cols = 16;
  EXPECT_EQ(plan_spmm(test::random_band(2001, 40, 6), Backend::cuda, ob).kernel, SpmmKernel::bcsr_dmma);
  // Forced: any natural block size; refused without natural blocks.
  ob.kernel = SpmmKernel::bsr_block;
  EXPECT_EQ(plan_spmm(test::random_blocked(500, 2, 9, 0, 0, 0, 0.0, 5), Backend::cuda, ob).block_h, 2);
  EXPECT_THROW(plan_spmm(test::random_skewed(3000, 3000, 20, 0, 0, 0, 8), Backend::cuda, ob), InvalidArgument);
}

TEST(SparseOperatorCpu, MatchesReferenceWithLeadingDimensions) {
  const Csr<double> a = test::random_skewed(301, 257, 5, 2, 200, 11, 1);
  auto op = make_sparse_operator(a, Backend::cpu);
  EXPECT_EQ(op->space(), Space::host);
  EXPECT_EQ(op->plan().kernel, SpmmKernel::cpu_csr);
  const int k = 7;
  const std::int64_t ldx = a.ncols + 2, ldy = a.nrows + 3;
  std::vector<double> x = test::random_vector(static_cast<std::size_t>(ldx * k), 2);
  std::vector<double> y(static_cast<std::size_t>(ldy * k), std::nan("")), ref(a.nrows * k);
  csr_spmm_reference(a, x.data(), ldx, ref.data(), a.nrows, k);
  op->apply({x.data(), a.ncols, k, ldx, Space::host}, {y.data(), a.nrows, k, ldy, Space::host});
  for (int j = 0; j < k; ++j) {
    for (std::int64_t i = 0; i < a.nrows; ++i) EXPECT_EQ(y[i + j * ldy], ref[i + j * a.nrows]);
    for (std::int64_t i = a.nrows; i < ldy; ++i) EXPECT_TRUE(std::isnan(y[i + j * ldy]));
  }
}

TEST(SparseOperatorCpu, Fp32RoundsValues) {
  const Csr<double> a = test::random_band(101, 5, 3);
  OperatorOptions opt;
  opt.precision = Precision::fp32;
  auto op = make_sparse_operator(a, Backend::cpu, opt);
  std::vector<double> x = test::random_vector(101, 4), y(101), ref(101);
  csr_spmm_reference(a, x.data(), 101, ref.data(), 101, 1);
  op->apply({x.data(), 101, 1, 101, Space::host}, {y.data(), 101, 1, 101, Space::host});
  double d = 0;
  for (int i = 0; i < 101; ++i) d = std::max(d, std::abs(y[i] - ref[i]));
  EXPECT_GT(d, 0.0);    // values were rounded
  EXPECT_LT(d, 1e-5);
}

TEST(SparseOperatorCpu, RejectsBadShapesAndPrecisions) {
  const Csr<double> a = test::random_band(50, 3, 5);
  auto op = make_sparse_operator(a, Backend::cpu);
  std::vector<double> x(100), y(100);
  EXPECT_THROW(op->apply({x.data(), 49, 1, 50, Space::host}, {y.data(), 50, 1, 50, Space::host}),
               InvalidArgument);
  OperatorOptions opt;
  opt.precision = Precision::fp16;
  EXPECT_THROW(make_sparse_operator(a, Backend::cpu, opt), InvalidArgument);
  opt.precision = Precision::tf32;
  EXPECT_THROW(plan_spmm(a, Backend::cuda, opt), InvalidArgument);
}

TEST(SparsePlan, ChoosesByBlockFillAndRowLength) {
  OperatorOptions opt;
  opt.expected_cols = 16;
  const Csr<double> band = test::random_band(2000, 40, 6);
  SpmmPlan p = plan_spmm(band, Backend::cuda, opt);
  EXPECT_EQ(p.kernel, SpmmKernel::bcsr_dmma) << p.describe();
  EXPECT_GT(p.fill, 0.7);
  EXPECT_FALSE(p.reason.empty());
  const Csr<double> sparse = test::random_skewed(3000, 3000, 3, 0, 0, 0, 7);
  p = plan_spmm(sparse, Backend::cuda, opt);
  EXPECT_EQ(p.kernel, SpmmKernel::csr_row) << p.describe();
  EXPECT_LT(p.fill, 0.2);
  const Csr<double> skewed = test::random_skewed(3000, 3000, 20, 5, 2000, 0, 8);
  p = plan_spmm(skewed, Backend::cuda, opt);
  EXPECT_EQ(p.kernel, SpmmKernel::csr_segment) << p.describe();
  opt.precision = Precision::fp16;
  p = plan_spmm(band, Backend::cuda, opt);
  EXPECT_EQ(p.kernel, SpmmKernel::bcsr_mma_f16) << p.describe();
  EXPECT_EQ(p.block_h, 16);
  EXPECT_NE(p.describe().find("why:"), std::string::npos);
}

TEST(SparseOperatorCuda, NotCompiledOrDevice) {
  const Csr<double> a = test::random_band(64, 3, 9);
  if (!built_with_cuda()) {
    EXPECT_THROW(make_sparse_operator(a, Backend::cuda), NotCompiled);
  } else if (device_count() > 0) {
    EXPECT_EQ(make_sparse_operator(a, Backend::cuda)->space(), Space::device);
  } else {
    GTEST_SKIP() << "CUDA build without a device";
  }
}

// Symmetric reordering in the plan (no GPU needed): a scrambled stencil gets fewer blocks than
// with rows-only reordering, both fewer than as given; a non-square matrix is refused; the CPU
// backend ignores the option (same result as the reference).
TEST(SparseOperatorPlan, SymmetricReorderReducesBlocksOfScrambledStencil) {
  const Csr<double> a = test::scrambled_stencil(13, 11, 9, 1, false, 31);
  OperatorOptions opt;
  opt.expected_cols = 32;
  const SpmmPlan none = plan_spmm(a, Backend::cuda, opt);
  opt.reorder = Reorder::jaccard;
  const SpmmPlan rows = plan_spmm(a, Backend::cuda, opt);
  opt.reorder = Reorder::symmetric;
  const SpmmPlan sym = plan_spmm(a, Backend::cuda, opt);
  EXPECT_FALSE(none.reordered);
  EXPECT_TRUE(sym.reordered);
  EXPECT_TRUE(sym.symmetric);
  EXPECT_FALSE(rows.symmetric);
  EXPECT_LT(sym.nblocks, rows.nblocks);
  EXPECT_LT(rows.nblocks, none.nblocks);
  EXPECT_NE(sym.describe().find("symmetric"), std::string::npos);
  EXPECT_STREQ(to_string(Reorder::symmetric), "symmetric");

  const Csr<double> rect = test::random_skewed(101, 97, 4, 0, 0, 0, 5);
  EXPECT_THROW(plan_spmm(rect, Backend::cuda, opt), InvalidArgument);

  auto op = make_sparse_operator(a, Backend::cpu, opt);
  const int k = 3;
  std::vector<double> x = test::random_vector(static_cast<std::size_t>(a.ncols * k), 6);
  std::vector<double> y(static_cast<std::size_t>(a.nrows * k)), ref(y.size());
  csr_spmm_reference(a, x.data(), a.ncols, ref.data(), a.nrows, k);
  op->apply({x.data(), a.ncols, k, a.ncols, Space::host}, {y.data(), a.nrows, k, a.nrows, Space::host});
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], ref[i]);
}

// OperatorBasis::permuted on the CPU: the operator is B = P·A·Pᵀ with p = *permutation(), so
// B·(P·X) == P·(A·X) (to round-off: the rows are summed in another order), the conversions are
// inverse to each other, B(i, j) == A(p[i], p[j]) entry by entry, and a matrix whose
// reordering would not pay keeps permutation() == nullptr and applies A itself.
TEST(SparseOperatorPermutedBasis, CpuAppliesBOnPermutedBlocks) {
  const Csr<double> a = test::scrambled_stencil(13, 11, 9, 1, false, 41);  // 1287 rows
  OperatorOptions opt;
  opt.reorder = Reorder::symmetric;
  opt.basis = OperatorBasis::permuted;
  auto op = make_sparse_operator(a, Backend::cpu, opt);
  ASSERT_NE(op->permutation(), nullptr) << op->plan().describe();
  const std::vector<std::int32_t>& p = *op->permutation();
  ASSERT_EQ(static_cast<std::int64_t>(p.size()), a.nrows);
  EXPECT_TRUE(op->plan().permuted_basis);
  EXPECT_GT(op->plan().setup.reorder_s, 0.0);
  const std::int64_t n = a.nrows, ld = n + 3;
  const int k = 5;
  std::vector<double> x = test::random_vector(static_cast<std::size_t>(ld * k), 42);
  std::vector<double> xt(static_cast<std::size_t>(ld * k), std::nan("")), yt(xt.size(), std::nan(""));
  std::vector<double> ax(static_cast<std::size_t>(n * k)), back(xt.size(), std::nan(""));
  csr_spmm_reference(a, x.data(), ld, ax.data(), n, k);
  op->to_permuted({x.data(), n, k, ld, Space::host}, {xt.data(), n, k, ld, Space::host});
  op->apply({xt.data(), n, k, ld, Space::host}, {yt.data(), n, k, ld, Space::host});
  double err = 0, ref = 0;
  for (int j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(xt[i + j * ld], x[p[i] + j * ld]);  // x̃ = P·x
      const double d = yt[i + j * ld] - ax[p[i] + j * n];  // B·x̃ == P·(A·x)
      err = std::max(err, std::abs(d));
      ref = std::max(ref, std::abs(ax[p[i] + j * n]));
    }
  EXPECT_LE(err, 1e-14 * ref);
  op->from_permuted({xt.data(), n, k, ld, Space::host}, {back.data(), n, k, ld, Space::host});
  for (int j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(back[i + j * ld], x[i + j * ld]);
  // B entry by entry through the reference product with unit vectors of the permuted basis
  const Csr<double> b = permute_symmetric(a, p);
  for (std::int64_t i = 0; i < n; i += 97)
    for (std::int64_t q = b.row_ptr[i]; q < b.row_ptr[i + 1]; ++q) {
      const std::int32_t j = b.col_idx[q];
      const auto* ab = a.col_idx.data() + a.row_ptr[p[i]];
      const auto* ae = a.col_idx.data() + a.row_ptr[p[i] + 1];
      const auto* at = std::lower_bound(ab, ae, p[j]);
      ASSERT_TRUE(at != ae && *at == p[j]);
      EXPECT_EQ(b.values[q], a.values[at - a.col_idx.data()]);
    }

  // A band is already in its best order: no permutation, the operator is A.
  const Csr<double> band = test::random_band(301, 4, 43);
  auto plain = make_sparse_operator(band, Backend::cpu, opt);
  EXPECT_EQ(plain->permutation(), nullptr) << plain->plan().describe();
  EXPECT_FALSE(plain->plan().permuted_basis);
  std::vector<double> xb = test::random_vector(301 * 2, 44), yb(301 * 2), rb(301 * 2), cb(301 * 2);
  plain->apply({xb.data(), 301, 2, 301, Space::host}, {yb.data(), 301, 2, 301, Space::host});
  csr_spmm_reference(band, xb.data(), 301, rb.data(), 301, 2);
  EXPECT_EQ(yb, rb);
  plain->to_permuted({xb.data(), 301, 2, 301, Space::host}, {cb.data(), 301, 2, 301, Space::host});
  EXPECT_EQ(cb, xb);  // identity conversion

  // permuted basis without the symmetric reordering, or on a rectangular matrix: refused
  OperatorOptions bad = opt;
  bad.reorder = Reorder::none;
  EXPECT_THROW(make_sparse_operator(a, Backend::cpu, bad), InvalidArgument);
  EXPECT_THROW(make_sparse_operator(test::random_skewed(50, 40, 3, 0, 0, 0, 45), Backend::cpu, opt),
               InvalidArgument);
}

// A ≠ Aᵀ on the CPU backend: wide and tall random matrices (skewed, empty rows), an unsymmetric
// pattern, and a transposed operator built from transpose(a) (core/csr.hpp), the least-squares
// solvers' Aᵀ. fp64 is the reference product itself (bitwise), fp32 rounds A only; every Y
// element written, the padding rows never, and X of the wrong height refused.
TEST(SparseOperatorCpu, UnsymmetricAndRectangularMatchReference) {
  const Csr<double> wide = test::random_skewed(211, 1013, 6, 3, 400, 17, 51);
  const Csr<double> tall = test::random_skewed(1013, 211, 6, 3, 150, 17, 52);
  const Csr<double> unsym = test::drop_half_off_diagonal(test::scrambled_stencil(11, 9, 7, 3, true, 53), 54);
  const Csr<double> wide_t = transpose(wide);
  ASSERT_FALSE(is_symmetric(unsym));
  const std::pair<const char*, const Csr<double>*> list[] = {
      {"wide", &wide}, {"tall", &tall}, {"unsym", &unsym}, {"wide^T", &wide_t}};
  for (const auto& [name, a] : list) {
    for (Precision prec : {Precision::fp64, Precision::fp32}) {
      OperatorOptions opt;
      opt.precision = prec;
      auto op = make_sparse_operator(*a, Backend::cpu, opt);
      ASSERT_EQ(op->rows(), a->nrows);
      ASSERT_EQ(op->cols(), a->ncols);
      const int k = 5;
      const std::int64_t ldx = a->ncols + 3, ldy = a->nrows + 2;
      std::vector<double> x = test::random_vector(static_cast<std::size_t>(ldx * k), 55);
      std::vector<double> y(static_cast<std::size_t>(ldy * k), std::nan("")), ref(a->nrows * k);
      csr_spmm_reference(*a, x.data(), ldx, ref.data(), a->nrows, k);
      op->apply({x.data(), a->ncols, k, ldx, Space::host}, {y.data(), a->nrows, k, ldy, Space::host});
      double err = 0, norm = 0;
      for (int j = 0; j < k; ++j) {
        for (std::int64_t i = 0; i < a->nrows; ++i) {
          err = std::max(err, std::abs(y[i + j * ldy] - ref[i + j * a->nrows]));
          norm = std::max(norm, std::abs(ref[i + j * a->nrows]));
        }
        for (std::int64_t i = a->nrows; i < ldy; ++i) EXPECT_TRUE(std::isnan(y[i + j * ldy])) << name;
      }
      const std::string what = std::string(name) + " " + to_string(prec);
      EXPECT_FALSE(std::isnan(err)) << what << ": Y left unwritten";
      if (prec == Precision::fp64) EXPECT_EQ(err, 0.0) << what;
      else EXPECT_LE(err, 1e-6 * norm) << what;
      if (a->nrows != a->ncols)  // X with A's row count instead of its column count
        EXPECT_THROW(op->apply({x.data(), a->nrows, k, ldx, Space::host}, {y.data(), a->nrows, k, ldy, Space::host}),
                     InvalidArgument) << what;
    }
  }
  // The transposed operator applies Aᵀ: (Aᵀ·X)_j = Σ_i a_ij X_i, accumulated from A's rows.
  auto opt_t = make_sparse_operator(transpose(tall), Backend::cpu);
  ASSERT_EQ(opt_t->rows(), tall.ncols);
  ASSERT_EQ(opt_t->cols(), tall.nrows);
  const int k = 3;
  std::vector<double> x = test::random_vector(static_cast<std::size_t>(tall.nrows * k), 56);
  std::vector<double> y(static_cast<std::size_t>(tall.ncols * k)), want(y.size(), 0.0);
  opt_t->apply({x.data(), tall.nrows, k, tall.nrows, Space::host}, {y.data(), tall.ncols, k, tall.ncols, Space::host});
  for (int j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < tall.nrows; ++i)
      for (std::int64_t p = tall.row_ptr[i]; p < tall.row_ptr[i + 1]; ++p)
        want[tall.col_idx[p] + j * tall.ncols] += tall.values[p] * x[i + j * tall.nrows];
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-13) << i;
}

// The permuted basis of an unsymmetric A (pattern and values) on the CPU: B = P·A·Pᵀ holds
// B(i, j) == A(p[i], p[j]) exactly — A is neither symmetrized nor transposed, B ≠ Bᵀ — and
// B·(P·X) == P·(A·X): the round trip of a solve with x̃ = P·x, b̃ = P·b.
TEST(SparseOperatorPermutedBasis, CpuUnsymmetricRoundTrip) {
  const Csr<double> halved = test::drop_half_off_diagonal(test::scrambled_stencil(13, 11, 9, 1, false, 61), 62);
  const Csr<double> box = test::drop_half_off_diagonal(test::scrambled_stencil(7, 5, 9, 3, true, 63), 64);
  for (const Csr<double>* a : {&halved, &box}) {
    ASSERT_FALSE(is_symmetric(*a));
    OperatorOptions opt;
    opt.reorder = Reorder::symmetric;
    opt.basis = OperatorBasis::permuted;
    auto op = make_sparse_operator(*a, Backend::cpu, opt);
    const std::string what = "n=" + std::to_string(a->nrows) + "\n" + op->plan().describe();
    ASSERT_NE(op->permutation(), nullptr) << what;  // a scrambled pattern: the reordering pays
    const std::vector<std::int32_t>& p = *op->permutation();
    const std::int64_t n = a->nrows, ld = n + 1;
    const int k = 4;
    std::vector<double> x = test::random_vector(static_cast<std::size_t>(ld * k), 65);
    std::vector<double> xt(x.size(), std::nan("")), yt(x.size(), std::nan("")), back(x.size(), std::nan(""));
    std::vector<double> ax(static_cast<std::size_t>(n * k));
    csr_spmm_reference(*a, x.data(), ld, ax.data(), n, k);
    op->to_permuted({x.data(), n, k, ld, Space::host}, {xt.data(), n, k, ld, Space::host});
    op->apply({xt.data(), n, k, ld, Space::host}, {yt.data(), n, k, ld, Space::host});
    op->from_permuted({xt.data(), n, k, ld, Space::host}, {back.data(), n, k, ld, Space::host});
    double err = 0, ref = 0;
    for (int j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(xt[i + j * ld], x[p[i] + j * ld]) << what;
        ASSERT_EQ(back[i + j * ld], x[i + j * ld]) << what;
        err = std::max(err, std::abs(yt[i + j * ld] - ax[p[i] + j * n]));
        ref = std::max(ref, std::abs(ax[p[i] + j * n]));
      }
    EXPECT_LE(err, 1e-14 * ref) << what;
    // B through unit vectors of the permuted basis: column j of B is B·e_j
    std::vector<double> e(static_cast<std::size_t>(n), 0.0), col(static_cast<std::size_t>(n));
    std::int64_t asymmetric = 0;
    for (std::int64_t j = 0; j < n; j += 37) {
      e[j] = 1.0;
      op->apply({e.data(), n, 1, n, Space::host}, {col.data(), n, 1, n, Space::host});
      e[j] = 0.0;
      for (std::int64_t i = 0; i < n; ++i) {
        const auto* rb = a->col_idx.data() + a->row_ptr[p[i]];
        const auto* re = a->col_idx.data() + a->row_ptr[p[i] + 1];
        const auto* at = std::lower_bound(rb, re, p[j]);
        const double aij = at != re && *at == p[j] ? a->values[at - a->col_idx.data()] : 0.0;
        ASSERT_EQ(col[i], aij) << what << " B(" << i << ", " << j << ")";
        const auto* mb = a->col_idx.data() + a->row_ptr[p[j]];
        const auto* me = a->col_idx.data() + a->row_ptr[p[j] + 1];
        const auto* mt = std::lower_bound(mb, me, p[i]);
        asymmetric += (mt != me && *mt == p[i] ? a->values[mt - a->col_idx.data()] : 0.0) != aij;
      }
    }
    EXPECT_GT(asymmetric, 0) << what << ": B came out symmetric";
  }
}

// The plan (no GPU needed) on rectangular and unsymmetric matrices: rows-mode Jaccard regroups
// the scrambled rows of a wide and a tall band (fewer blocks, exactly those of
// jaccard_reorder), the symmetric reordering of an unsymmetric scrambled pattern is applied
// with its exact block count, and the device bytes follow the rectangular shapes.
TEST(SparsePlan, RectangularAndUnsymmetricReorderings) {
  for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{613, 1999}, {2111, 397}}) {
    const Csr<double> a = test::shuffle_rows(test::stretched_band(m, n, 9, 70 + static_cast<unsigned>(m)), 71);
    const std::string what = std::to_string(m) + "x" + std::to_string(n);
    OperatorOptions opt;
    opt.expected_cols = 16;
    opt.kernel = SpmmKernel::bcsr_dmma;
    const SpmmPlan none = plan_spmm(a, Backend::cuda, opt);
    EXPECT_EQ(none.nblocks, count_blocks(a, 8, 4)) << what;
    opt.reorder = Reorder::jaccard;
    const SpmmPlan rows = plan_spmm(a, Backend::cuda, opt);
    EXPECT_TRUE(rows.reordered) << what << "\n" << rows.describe();
    EXPECT_FALSE(rows.symmetric) << what;
    EXPECT_LT(2 * rows.nblocks, none.nblocks) << what;
    EXPECT_EQ(rows.nblocks, jaccard_reorder(a, 8, 4).blocks_after) << what;
    // dmma: block arrays, perm (4 per row), no gather; fp64 staging over the n rows of X
    EXPECT_GE(predict_device_bytes(a, rows), static_cast<std::size_t>(rows.nblocks * (256 + 4) + 4 * m)) << what;
    opt.reorder = Reorder::none;
    opt.kernel = SpmmKernel::csr_row;
    EXPECT_EQ(predict_device_bytes(a, plan_spmm(a, Backend::cuda, opt)),
              static_cast<std::size_t>(8 * (m + 1) + 12 * a.nnz())) << what;
    opt.reorder = Reorder::symmetric;
    EXPECT_THROW(plan_spmm(a, Backend::cuda, opt), InvalidArgument) << what;
  }
  const Csr<double> u = test::drop_half_off_diagonal(test::scrambled_stencil(13, 11, 9, 1, false, 72), 73);
  OperatorOptions opt;
  opt.expected_cols = 8;
  opt.kernel = SpmmKernel::bcsr_dmma;
  opt.reorder = Reorder::symmetric;
  const SpmmPlan sym = plan_spmm(u, Backend::cuda, opt);
  EXPECT_TRUE(sym.reordered && sym.symmetric) << sym.describe();
  ReorderOptions ro;
  ro.mode = ReorderMode::symmetric;
  EXPECT_EQ(sym.nblocks, jaccard_reorder(u, 8, 4, ro).blocks_after);
  EXPECT_LT(2 * sym.nblocks, count_blocks(u, 8, 4));
}

// The device-memory counters: 0 in CPU-only builds; with a GPU, a device_malloc/device_free pair
// moves the current count and the peak by exactly its size.
TEST(DeviceAccounting, CountsAllocationsAndPeak) {
  if (!built_with_cuda()) {
    EXPECT_EQ(device_allocated_bytes(), 0u);
    EXPECT_EQ(device_peak_bytes(), 0u);
    reset_device_peak();
    return;
  }
  if (device_count() == 0) GTEST_SKIP() << "CUDA build without a device";
  const std::size_t before = device_allocated_bytes();
  reset_device_peak();
  EXPECT_EQ(device_peak_bytes(), before);
  void* p = device_malloc(3 << 20);
  void* q = device_malloc(1 << 20);
  EXPECT_EQ(device_allocated_bytes(), before + (4u << 20));
  device_free(p);
  EXPECT_EQ(device_allocated_bytes(), before + (1u << 20));
  EXPECT_EQ(device_peak_bytes(), before + (4u << 20));
  reset_device_peak();
  EXPECT_EQ(device_peak_bytes(), before + (1u << 20));
  device_free(q);
  device_free(nullptr);
  EXPECT_EQ(device_allocated_bytes(), before);
}

// Per GPU: a batch runs a job on each GPU at once, and each job's peak is its own GPU's. A block
// allocated on GPU 1 counts there, not on GPU 0, and is taken off GPU 1 even when freed with
// GPU 0 current.
TEST(DeviceAccounting, EachGpuCountsItsOwn) {
  if (!built_with_cuda() || device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  use_device(0);
  const std::size_t before0 = device_allocated_bytes();
  use_device(1);
  const std::size_t before1 = device_allocated_bytes();
  reset_device_peak();
  void* p = device_malloc(2 << 20);
  EXPECT_EQ(device_allocated_bytes(), before1 + (2u << 20));
  EXPECT_EQ(device_peak_bytes(), before1 + (2u << 20));
  use_device(0);
  EXPECT_EQ(device_allocated_bytes(), before0);
  device_free(p);
  use_device(1);
  EXPECT_EQ(device_allocated_bytes(), before1);
  use_device(0);
}

// The CPU operator has no device bytes; the prediction for a CPU plan is 0 and for CUDA plans
// it grows with the matrix as the formulas say (checked against the built operators on a GPU in
// test_spmm_gpu).
TEST(SparsePlan, PredictedDeviceBytesFollowTheFormats) {
  const Csr<double> a = test::random_band(3001, 9, 46);
  EXPECT_EQ(predict_device_bytes(a, plan_spmm(a, Backend::cpu)), 0u);
  EXPECT_EQ(make_sparse_operator(a, Backend::cpu)->device_bytes(), 0u);
  OperatorOptions opt;
  opt.kernel = SpmmKernel::csr_row;
  const SpmmPlan row = plan_spmm(a, Backend::cuda, opt);
  EXPECT_EQ(predict_device_bytes(a, row), 8u * 3002 + 12u * static_cast<std::size_t>(a.nnz()));
  opt.kernel = SpmmKernel::bcsr_dmma;
  opt.expected_cols = 8;
  const SpmmPlan dm = plan_spmm(a, Backend::cuda, opt);
  const double blocks = 8.0 * (376 + 1) + dm.nblocks * (4.0 + 256.0);
  EXPECT_GE(predict_device_bytes(a, dm), blocks);
  EXPECT_LE(predict_device_bytes(a, dm), blocks * 1.02 + 4.0 * 3001);
}

}  // namespace
}  // namespace tcsolve
