// Sparse operator on the CPU backend and the plan (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/spmm/spmm_test_util.hpp"

namespace tcsolve {
namespace {

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

}  // namespace
}  // namespace tcsolve
