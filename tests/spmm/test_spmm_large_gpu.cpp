// Every SpMM kernel above n = 2^22 + 1 rows (issue 11): the grids of row-tiled launches pass the
// 65535 limit of grid y there (a 32-row tile grid on y stopped at 2,097,152 rows), and products
// of rows × columns pass 2^31 for N >= 512 (here rows × ld·N elements pass 2^26 and the 64-bit
// index paths are exercised). Twins of the CPU reference tests (csr_spmm_reference): random
// values in [-1, 1], sizes not multiples of the block shapes, padded leading dimensions, Y
// poisoned with NaN (every element written, padding untouched), per-precision tolerances.
// About 2 GB of host and 3 GB of device memory; label `gpu` (skips without a device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/multivector.hpp"
#include "preprocess/bcsr_build.hpp"
#include "spmm/bcsr_spmm_cuda.hpp"
#include "spmm/csr_spmm_cuda.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/spmm/spmm_gpu_check.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve {
namespace {

constexpr std::int64_t kRows = (std::int64_t(1) << 22) + 3;  // > 2^22 + 1, odd: no block multiple
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// n × n, row i: the diagonal plus `per_row` random columns within ±band (sorted, unique), and
// every 65536th row (from row 17) a long row of 3000 random columns over the whole matrix
// (segment-split kernels split it; its Y row is zeroed and summed with atomics). Built row by
// row straight into the CSR arrays (no triplets). Values uniform in [-1, 1].
Csr<double> large_matrix(std::int64_t n, int per_row, int band, unsigned seed, bool long_rows) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::uniform_int_distribution<int> off(-band, band);
  std::uniform_int_distribution<std::int64_t> any(0, n - 1);
  Csr<double> a;
  a.nrows = a.ncols = n;
  a.row_ptr.assign(n + 1, 0);
  a.col_idx.reserve(static_cast<std::size_t>(n) * (per_row + 1) + 100000);
  std::vector<std::int32_t> cols;
  for (std::int64_t i = 0; i < n; ++i) {
    cols.clear();
    cols.push_back(static_cast<std::int32_t>(i));
    const bool is_long = long_rows && i % 65536 == 17;
    for (int q = 0; q < (is_long ? 3000 : per_row); ++q) {
      const std::int64_t j = is_long ? any(rng) : std::clamp<std::int64_t>(i + off(rng), 0, n - 1);
      cols.push_back(static_cast<std::int32_t>(j));
    }
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    a.col_idx.insert(a.col_idx.end(), cols.begin(), cols.end());
    a.row_ptr[i + 1] = static_cast<std::int64_t>(a.col_idx.size());
  }
  a.values.resize(a.col_idx.size());
  for (double& v : a.values) v = val(rng);
  return a;
}

const Csr<double>& csr_matrix() {  // ~4 non-zeros per row, long rows: CSR kernels
  static const Csr<double> a = large_matrix(kRows, 3, 40, 1101, true);
  return a;
}
const Csr<double>& band_matrix() {  // narrow band, no long rows: blocks of 8×4 and 16×16
  static const Csr<double> a = large_matrix(kRows, 3, 3, 1102, false);
  return a;
}

using test::Check;
using test::expect_ok;
using test::random_vector;
using test::run_and_compare;

MvView<const double> in(const double* x, const Csr<double>& a, int k, std::int64_t ld) {
  return {x, a.ncols, k, ld, Space::device};
}
MvView<double> out(double* y, const Csr<double>& a, int k, std::int64_t ld) {
  return {y, a.nrows, k, ld, Space::device};
}

// ---- through the operator, every kernel forced, and the trial --------------------------------

struct LargeCase {
  const char* name;
  SpmmKernel kernel;
  Precision precision;
  bool band;        // band_matrix (blocks) or csr_matrix
  int plan_cols;    // expected_cols: staging from 16 (DMMA) / 4 (segment) on
  double tol;
  bool against_ax;  // 16-bit: error relative to ‖A‖‖X‖
};

class SpmmLargeGpu : public ::testing::TestWithParam<LargeCase> {};

TEST_P(SpmmLargeGpu, OperatorIsEquivalentToRefAbove4MRows) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const LargeCase& lc = GetParam();
  const Csr<double>& a = lc.band ? band_matrix() : csr_matrix();
  ASSERT_GT(a.nrows, (std::int64_t(1) << 22) + 1);
  OperatorOptions opt;
  opt.kernel = lc.kernel;
  opt.precision = lc.precision;
  opt.expected_cols = lc.plan_cols;
  const std::size_t before = device_allocated_bytes();
  auto op = make_sparse_operator(a, Backend::cuda, opt);
  const SpmmPlan& p = op->plan();
  if (lc.kernel != SpmmKernel::automatic) {
    ASSERT_EQ(p.kernel, lc.kernel) << p.describe();
    // the prediction without building, against what the operator holds and the counter saw
    const std::size_t predicted = predict_device_bytes(a, p), held = op->device_bytes();
    EXPECT_GE(predicted, held) << p.describe();
    EXPECT_LE(static_cast<double>(predicted), 1.01 * static_cast<double>(held)) << p.describe();
    EXPECT_EQ(device_allocated_bytes() - before, held);
  }
  for (int k : {1, 8, 17}) {
    const Check c = run_and_compare(a, k, 7 + k, [&](const double* x, std::int64_t ldx, double* y,
                                                     std::int64_t ldy) {
      op->apply(in(x, a, k, ldx), out(y, a, k, ldy));
    });
    expect_ok(c, lc.tol, lc.against_ax, std::string(lc.name) + " N=" + std::to_string(k) + "\n" + p.describe());
  }
}

void PrintTo(const LargeCase& c, std::ostream* os) { *os << c.name; }

INSTANTIATE_TEST_SUITE_P(
    EveryKernel, SpmmLargeGpu,
    ::testing::Values(
        LargeCase{"CsrRowFp64", SpmmKernel::csr_row, Precision::fp64, false, 8, 1e-13, false},
        LargeCase{"CsrRowFp32", SpmmKernel::csr_row, Precision::fp32, false, 8, 1e-6, true},
        LargeCase{"CsrSegmentFp64Direct", SpmmKernel::csr_segment, Precision::fp64, false, 1, 1e-13, false},
        LargeCase{"CsrSegmentFp64Staged", SpmmKernel::csr_segment, Precision::fp64, false, 16, 1e-13, false},
        LargeCase{"CsrSegmentFp16Staged", SpmmKernel::csr_segment, Precision::fp16, false, 16, 1e-2, true},
        LargeCase{"BcsrDmmaDirect", SpmmKernel::bcsr_dmma, Precision::fp64, true, 8, 1e-13, false},
        LargeCase{"BcsrDmmaStaged", SpmmKernel::bcsr_dmma, Precision::fp64, true, 17, 1e-13, false},
        LargeCase{"BcsrMmaFp16", SpmmKernel::bcsr_mma_f16, Precision::fp16, true, 8, 1e-2, true},
        LargeCase{"BcsrMmaBf16", SpmmKernel::bcsr_mma_bf16, Precision::bf16, true, 17, 3e-2, true},
        LargeCase{"TrialFp64", SpmmKernel::automatic, Precision::fp64, false, 16, 1e-13, false}),
    [](const ::testing::TestParamInfo<LargeCase>& info) { return std::string(info.param.name); });

// ---- kernels directly: the variants the operator does not pick at these sizes ----------------

TEST(SpmmLargeGpuDirect, CsrRowTiledAndSegmentGroupsAndStagedWidths) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double>& a = csr_matrix();
  {
    CsrSpmmDevice tiled(a, Precision::fp64, 1, 0, true);
    const Check c = run_and_compare(a, 9, 31, [&](const double* x, std::int64_t ldx, double* y, std::int64_t ldy) {
      tiled.apply(x, ldx, y, ldy, 9, nullptr);
    });
    expect_ok(c, 1e-13, false, "csr_row tiled N=9");
  }
  for (int group : {4, 8, 32}) {
    // staging capacity 64: N = 40 runs the row-major staging kernel (row tiles on grid x,
    // 131073 of them) with width 64, N = 3 reads X directly
    CsrSpmmDevice seg(a, Precision::fp64, group, 64);
    for (int k : {3, 40}) {
      const Check c = run_and_compare(a, k, 40 + group + k, [&](const double* x, std::int64_t ldx, double* y,
                                                                std::int64_t ldy) {
        seg.apply(x, ldx, y, ldy, k, nullptr);
      });
      expect_ok(c, 1e-13, false, "csr_segment group " + std::to_string(group) + " N=" + std::to_string(k));
    }
  }
}

TEST(SpmmLargeGpuDirect, StageRowMajorBeyond65535RowTiles) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  // xs (rows_pad × width, row-major) = X (column-major): the kernel of the lap3d:130 failure
  const std::int64_t rows = kRows, rows_pad = rows + 29, ldx = rows + 3;
  const int kc = 19, width = 32;
  const std::vector<double> x = random_vector(static_cast<std::size_t>(ldx * kc), 55);
  MultiVector<double> xd(ldx, kc, Space::device), xs(rows_pad, width, Space::device);
  copy_bytes(xd.data(), Space::device, x.data(), Space::host, x.size() * 8);
  stage_row_major_device(xd.data(), ldx, rows, kc, xs.data(), rows_pad, width, nullptr);
  device_synchronize();
  std::vector<double> h(static_cast<std::size_t>(rows_pad * width), kNaN);
  copy_bytes(h.data(), Space::host, xs.data(), Space::device, h.size() * 8);
  std::int64_t bad = 0;
  for (std::int64_t r = 0; r < rows_pad; ++r)
    for (int c = 0; c < width; ++c) {
      const double want = r < rows && c < kc ? x[r + c * ldx] : 0.0;
      bad += !(h[r * width + c] == want);
    }
  EXPECT_EQ(bad, 0);
}

TEST(SpmmLargeGpuDirect, ZeroRowsAbove2Pow31Elements) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  // rows × cols = 4194307 × 520 > 2^31 elements: the grid-stride loop and 64-bit indices of
  // zero_rows_kernel (Y as float: 8.7 GB on the device)
  const std::int64_t rows = kRows;
  const int cols = 520;
  const std::size_t elems = static_cast<std::size_t>(rows) * cols;
  ASSERT_GT(elems, std::size_t(1) << 31);
  const std::vector<std::int32_t> list = {0, 5, static_cast<std::int32_t>(rows - 1)};
  DeviceArray<std::int32_t> dlist(list);
  MultiVector<float> yf(rows, cols, Space::device);
  std::vector<float> h(elems, 1.5f);
  copy_bytes(yf.data(), Space::device, h.data(), Space::host, elems * 4);
  zero_rows_device(dlist.get(), 3, yf.data(), rows, cols, nullptr);
  device_synchronize();
  copy_bytes(h.data(), Space::host, yf.data(), Space::device, elems * 4);
  std::int64_t wrong = 0;
  for (std::size_t e = 0; e < elems; ++e) {
    const std::int64_t r = static_cast<std::int64_t>(e % static_cast<std::size_t>(rows));
    wrong += h[e] != ((r == 0 || r == 5 || r == rows - 1) ? 0.0f : 1.5f);
  }
  EXPECT_EQ(wrong, 0);
}

// IEEE binary16 bits -> double (for checking the conversion kernel on the host).
double half_bits_to_double(std::uint16_t b) {
  const int sign = b >> 15, exp = (b >> 10) & 31, man = b & 1023;
  double v = exp == 0 ? std::ldexp(man, -24) : exp == 31 ? INFINITY : std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}

TEST(SpmmLargeGpuDirect, PermuteRowsAndConvertWithGather) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const std::int64_t rows = kRows, ld = rows + 7;
  const int cols = 17;
  std::vector<std::int32_t> perm(static_cast<std::size_t>(rows));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(56));
  DeviceArray<std::int32_t> dperm(perm);
  const std::vector<double> x = random_vector(static_cast<std::size_t>(ld * cols), 57);
  MultiVector<double> xd(ld, cols, Space::device), yd(ld, cols, Space::device), bd(ld, cols, Space::device);
  copy_bytes(xd.data(), Space::device, x.data(), Space::host, x.size() * 8);
  permute_rows_device(xd.data(), ld, yd.data(), ld, rows, cols, dperm.get(), false, nullptr);  // gather
  permute_rows_device(yd.data(), ld, bd.data(), ld, rows, cols, dperm.get(), true, nullptr);   // scatter
  DeviceArray<std::uint16_t> low(static_cast<std::size_t>(ld) * cols);
  convert_multivector_device(xd.data(), ld, low.get(), ld, rows, cols, Precision::fp16, nullptr, dperm.get());
  device_synchronize();
  std::vector<double> y(x.size()), b(x.size());
  std::vector<std::uint16_t> lh(x.size());
  copy_bytes(y.data(), Space::host, yd.data(), Space::device, y.size() * 8);
  copy_bytes(b.data(), Space::host, bd.data(), Space::device, b.size() * 8);
  copy_bytes(lh.data(), Space::host, low.get(), Space::device, lh.size() * 2);
  std::int64_t gather_wrong = 0, scatter_wrong = 0, convert_wrong = 0;
  for (int c = 0; c < cols; ++c)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::size_t e = static_cast<std::size_t>(r + c * ld);
      const double want = x[static_cast<std::size_t>(perm[r] + c * ld)];
      gather_wrong += y[e] != want;
      scatter_wrong += b[e] != x[e];
      convert_wrong += !(std::abs(half_bits_to_double(lh[e]) - want) <= 4.9e-4 * std::abs(want) + 6e-8);
    }
  EXPECT_EQ(gather_wrong, 0);
  EXPECT_EQ(scatter_wrong, 0);
  EXPECT_EQ(convert_wrong, 0);
}

TEST(SpmmLargeGpuDirect, DmmaWithRowAndColumnPermutationAndNarrowStaging) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  // stored matrix P·A·Pᵀ with a random p: X gathered by the staging copy (width 8: the untiled
  // staging kernel; width 32: the tiled one), Y scattered through perm
  const Csr<double>& a = band_matrix();
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  std::iota(perm.begin(), perm.end(), 0);
  // a local shuffle (blocks of 64 rows) keeps the blocks few
  std::mt19937 rng(57);
  for (std::size_t b = 0; b < perm.size(); b += 64)
    std::shuffle(perm.begin() + b, perm.begin() + std::min(perm.size(), b + 64), rng);
  const Bcsr<double> b = build_bcsr(a, 8, 4, perm, perm);
  BcsrSpmmDevice d(b, Precision::fp64, 32);  // capacity 32: N = 24 stages width 32 (tiled kernel)
  ASSERT_TRUE(d.gathers());
  for (std::int64_t cap : {0, 8, 64}) {  // default runs, then short ones: most block rows cut
    d.set_max_run_blocks(b, cap);
    if (cap > 0) EXPECT_LE(d.blocks_per_warp(), cap);
    for (int k : {5, 24}) {
      const Check c = run_and_compare(a, k, 60 + k, [&](const double* x, std::int64_t ldx, double* y, std::int64_t ldy) {
        d.apply(x, ldx, y, ldy, k, nullptr);
      });
      expect_ok(c, 1e-13, false, "dmma gathered N=" + std::to_string(k) + " run cap " + std::to_string(cap));
    }
  }
}

// ---- the permuted basis on the GPU above 4M rows ---------------------------------------------

TEST(SpmmLargeGpuDirect, PermutedBasisOperatorAppliesB) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  // the band matrix scrambled by a random symmetric permutation; the operator un-scrambles it
  // (RCM or Jaccard) and works on B = P·S·Pᵀ: B·(P·X) == P·(S·X)
  const Csr<double>& a0 = band_matrix();
  std::vector<std::int32_t> q(static_cast<std::size_t>(a0.nrows));
  std::iota(q.begin(), q.end(), 0);
  std::shuffle(q.begin(), q.end(), std::mt19937(58));
  const Csr<double> s = permute_symmetric(a0, q);
  OperatorOptions opt;
  opt.reorder = Reorder::symmetric;
  opt.basis = OperatorBasis::permuted;
  opt.expected_cols = 8;
  auto op = make_sparse_operator(s, Backend::cuda, opt);
  ASSERT_NE(op->permutation(), nullptr) << op->plan().describe();
  const std::vector<std::int32_t>& p = *op->permutation();
  const std::int64_t n = s.nrows, ld = n + 3;
  const int k = 8;
  const std::vector<double> x = random_vector(static_cast<std::size_t>(ld * k), 59);
  std::vector<double> sx(static_cast<std::size_t>(n * k));
  csr_spmm_reference(s, x.data(), ld, sx.data(), n, k);
  MultiVector<double> xd(ld, k, Space::device), xt(ld, k, Space::device), yt(ld, k, Space::device),
      back(ld, k, Space::device);
  copy_bytes(xd.data(), Space::device, x.data(), Space::host, x.size() * 8);
  const MvView<const double> xv{xd.data(), n, k, ld, Space::device};
  const MvView<double> xtv{xt.data(), n, k, ld, Space::device}, ytv{yt.data(), n, k, ld, Space::device},
      bv{back.data(), n, k, ld, Space::device};
  op->to_permuted(xv, xtv);
  op->apply(xtv, ytv);
  op->from_permuted(xtv, bv);
  device_synchronize();
  std::vector<double> y(static_cast<std::size_t>(ld * k)), xb(y.size());
  copy_bytes(y.data(), Space::host, yt.data(), Space::device, y.size() * 8);
  copy_bytes(xb.data(), Space::host, back.data(), Space::device, xb.size() * 8);
  double err = 0, ref = 0;
  std::int64_t moved_wrong = 0;
  for (int j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      err = std::max(err, std::abs(y[i + j * ld] - sx[p[i] + j * n]));
      ref = std::max(ref, std::abs(sx[p[i] + j * n]));
      moved_wrong += xb[i + j * ld] != x[i + j * ld];
    }
  EXPECT_LE(err, 1e-13 * ref) << op->plan().describe();
  EXPECT_EQ(moved_wrong, 0);
  EXPECT_TRUE(op->plan().permuted_basis);
}

}  // namespace
}  // namespace tcsolve
