// Aᵀ made on the device from A's operator (make_transposed_operator: cuSPARSE's CSR→CSC into a
// CSR kernel of its own) and the CSR kernels' relayout on one upload (the trial's candidates):
// against the host transpose (core/csr.hpp) entry by entry and the CPU reference product, with
// odd sizes, empty rows and columns, rows past one segment, NaN-poisoned Y.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/csr.hpp"
#include "core/error.hpp"
#include "core/device.hpp"
#include "core/device_buffer.hpp"
#include "core/multivector.hpp"
#include "spmm/csr_spmm_cuda.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/spmm/spmm_gpu_check.hpp"
#include "tests/spmm/spmm_test_util.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve {
namespace {

using test::expect_ok;
using test::run_and_compare;

// A with a column that no row uses (an empty row of Aᵀ) and a few dense columns (rows of Aᵀ
// longer than one 512-entry segment).
Csr<double> with_empty_and_dense_columns(std::int64_t m, std::int64_t n, unsigned seed) {
  Csr<double> r = test::random_skewed(m, n, 5, 0, 0, 13, seed);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < r.nrows; ++i)
    for (std::int64_t p = r.row_ptr[i]; p < r.row_ptr[i + 1]; ++p)
      if (r.col_idx[p] != 7) t.push_back({static_cast<std::int32_t>(i), r.col_idx[p], r.values[p]});
  for (std::int64_t i = 0; i < m; i += 2) t.push_back({static_cast<std::int32_t>(i), 11, 0.5 + 1e-3 * i});
  return csr_from_triplets(m, n, std::move(t));
}

std::unique_ptr<SparseOperator> csr_operator(const Csr<double>& a, SpmmKernel kernel) {
  OperatorOptions o;
  o.kernel = kernel;
  o.expected_cols = 8;
  return make_sparse_operator(a, Backend::cuda, o);
}

TEST(SpmmTransposeGpu, DeviceTransposeIsTheHostTranspose) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const std::pair<const char*, Csr<double>> list[] = {
      {"skewed", test::random_skewed(1001, 997, 6, 4, 1500, 37, 11)},
      {"wide", test::random_skewed(613, 1999, 7, 3, 900, 29, 14)},
      {"tall", with_empty_and_dense_columns(5003, 41, 15)}};
  for (const auto& [name, a] : list) {
    for (SpmmKernel kernel : {SpmmKernel::csr_row, SpmmKernel::csr_segment}) {
      SCOPED_TRACE(std::string(name) + " from " + to_string(kernel));
      const auto op = csr_operator(a, kernel);
      for (int k : {1, 3, 8, 17, 64}) {
        OperatorOptions o;
        o.expected_cols = k;
        const auto t = make_transposed_operator(a, *op, o);
        ASSERT_NE(t, nullptr) << op->plan().describe();
        const Csr<double> at = transpose(a);
        ASSERT_EQ(t->rows(), at.nrows);
        ASSERT_EQ(t->cols(), at.ncols);
        const SpmmPlan& p = t->plan();
        EXPECT_TRUE(p.kernel == SpmmKernel::csr_row || p.kernel == SpmmKernel::csr_segment) << p.describe();
        EXPECT_NE(p.reason.find("on the device"), std::string::npos) << p.describe();
        if (k == 1) {  // the arrays themselves: exactly the host transpose (sorted rows)
          const SparseOperator::DeviceCsr d = t->device_csr();
          ASSERT_NE(d.row_ptr, nullptr);
          std::vector<std::int64_t> rp(at.row_ptr.size());
          std::vector<std::int32_t> ci(at.col_idx.size());
          std::vector<double> v(at.values.size());
          copy_bytes(rp.data(), Space::host, d.row_ptr, Space::device, rp.size() * 8);
          copy_bytes(ci.data(), Space::host, d.col_idx, Space::device, ci.size() * 4);
          copy_bytes(v.data(), Space::host, d.values, Space::device, v.size() * 8);
          EXPECT_EQ(rp, at.row_ptr);
          EXPECT_EQ(ci, at.col_idx);
          EXPECT_EQ(v, at.values);
        }
        const test::Check c = run_and_compare(at, k, 700 + k, [&](const double* x, std::int64_t ldx,
                                                                  double* y, std::int64_t ldy) {
          t->apply(MvView<const double>{x, at.ncols, k, ldx, Space::device},
                   MvView<double>{y, at.nrows, k, ldy, Space::device});
        });
        expect_ok(c, 1e-13, false, p.describe() + " N=" + std::to_string(k));
      }
    }
  }
}

// Where the device path does not apply it says so (nullptr) and the caller transposes on the host.
TEST(SpmmTransposeGpu, DeclinesWhereItDoesNotApply) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double> a = test::random_skewed(1001, 997, 6, 4, 1500, 37, 11);
  const auto gpu = csr_operator(a, SpmmKernel::csr_segment);
  const auto cpu = make_sparse_operator(a, Backend::cpu);
  EXPECT_EQ(make_transposed_operator(a, *cpu), nullptr) << "CPU operator";
  OperatorOptions fp32;
  fp32.precision = Precision::fp32;
  EXPECT_EQ(make_transposed_operator(a, *gpu, fp32), nullptr) << "fp32";
  OperatorOptions forced;
  forced.kernel = SpmmKernel::csr_row;
  EXPECT_EQ(make_transposed_operator(a, *gpu, forced), nullptr) << "a forced kernel";
  std::vector<Triplet<double>> fewer;  // A less its last entry: the operator is not of this matrix
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (p + 1 < a.nnz()) fewer.push_back({static_cast<std::int32_t>(i), a.col_idx[p], a.values[p]});
  const Csr<double> other = csr_from_triplets(a.nrows, a.ncols, std::move(fewer));
  EXPECT_THROW(make_transposed_operator(other, *gpu), InvalidArgument) << "another matrix's operator";
  const Csr<double> band = test::random_band(1503, 37, 13);  // full 4×8 blocks: tensor cores may pay
  EXPECT_EQ(make_transposed_operator(band, *csr_operator(band, SpmmKernel::csr_row)), nullptr) << "band";
  EXPECT_EQ(make_transposed_operator(band, *csr_operator(band, SpmmKernel::bcsr_dmma)), nullptr)
      << "A held as blocks";
}

// One upload, every layout in turn (row-split plain and tiled, segments of 4, 8 and 32 lanes,
// staged and not), and back: each against the reference.
TEST(SpmmTransposeGpu, RelayoutOnOneUploadMatchesRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double> a = test::random_skewed(2053, 1999, 9, 5, 2100, 29, 21);
  CsrSpmmDevice d(a, Precision::fp64, 1);
  struct Layout {
    int group, stage;
    bool tiled;
  };
  for (const Layout& l : {Layout{1, 0, false}, Layout{1, 0, true}, Layout{4, 0, false}, Layout{8, 16, false},
                          Layout{32, 64, false}, Layout{32, 0, false}, Layout{4, 8, false}, Layout{1, 0, false}}) {
    d.relayout(a.row_ptr, l.group, l.stage, l.tiled);
    EXPECT_EQ(d.group(), l.group);
    for (int k : {3, 24}) {
      const test::Check c = run_and_compare(a, k, 800 + k, [&](const double* x, std::int64_t ldx, double* y,
                                                               std::int64_t ldy) { d.apply(x, ldx, y, ldy, k, nullptr); });
      expect_ok(c, 1e-13, false,
                "group " + std::to_string(l.group) + " stage " + std::to_string(l.stage) +
                    (l.tiled ? " tiled" : "") + " N=" + std::to_string(k));
    }
  }
  std::vector<std::int64_t> short_rp(a.row_ptr.begin(), a.row_ptr.end() - 1);
  EXPECT_THROW(d.relayout(short_rp, 4, 0, false), std::exception);
}

// copy_bytes host → device from 512 MiB on goes through pinned pieces of 64 MiB (core/device.cu):
// a size that is not a multiple of the piece, from an odd address, back exactly; a device buffer
// written first on the default stream is overwritten after that write.
TEST(DeviceCopyGpu, LargeUploadThroughPinnedPiecesIsExact) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const std::size_t bytes = (std::size_t(600) << 20) + 4093;
  std::vector<unsigned char> host(bytes + 3);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  DeviceArray<unsigned char> dev(bytes);
  std::vector<unsigned char> zeros(bytes, 0);
  copy_bytes(dev.get(), Space::device, zeros.data(), Space::host, bytes);
  copy_bytes(dev.get(), Space::device, host.data() + 3, Space::host, bytes);
  std::vector<unsigned char> back(bytes, 0xAB);
  copy_bytes(back.data(), Space::host, dev.get(), Space::device, bytes);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += back[i] != host[i + 3];
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace tcsolve
