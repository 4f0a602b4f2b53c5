// GPU SpMM kernels vs the CPU reference (csr_spmm_reference), per kernel and precision:
// random matrices and X, odd sizes, padded leading dimensions, NaN-poisoned Y (every element of
// Y must be written, the padding rows never), skewed and empty rows, the row-permutation path;
// A ≠ Aᵀ throughout: rectangular both ways, unsymmetric patterns and values, transposed A.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/device_buffer.hpp"
#include "core/multivector.hpp"
#include "preprocess/bcsr_build.hpp"
#include "spmm/bcsr_spmm.hpp"
#include "spmm/bcsr_spmm_cuda.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/csr_spmm_cuda.hpp"
#include "spmm/device_csr_view.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/spmm/spmm_gpu_check.hpp"
#include "tests/spmm/spmm_test_util.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve {
namespace {

using test::Check;
using test::expect_ok;
using test::run_and_compare;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const int kCols[] = {1, 3, 8, 17, 64, 256};

struct Matrices {
  Csr<double> skewed = test::random_skewed(1001, 997, 6, 4, 1500, 37, 11);
  Csr<double> short_rows = test::random_skewed(2053, 2053, 3, 0, 0, 0, 12);
  Csr<double> band = test::random_band(1503, 37, 13);
  // A ≠ Aᵀ beyond `skewed`: wider than tall with long and empty rows, its transpose (the
  // least-squares solvers' Aᵀ, core/csr.hpp), a tall stretched band (full blocks, rows sharing
  // columns), and a square unsymmetric pattern (27-point 3-dof stencil, half the off-diagonal
  // entries dropped independently of their mirrors; 3861 rows).
  Csr<double> wide = test::random_skewed(613, 1999, 7, 3, 900, 29, 14);
  Csr<double> wide_t = transpose(wide);
  Csr<double> tall_band = test::stretched_band(2111, 397, 9, 15);
  Csr<double> unsym = test::drop_half_off_diagonal(test::scrambled_stencil(11, 9, 13, 3, true, 16), 17);
};

const Matrices& mats() {
  static Matrices m;
  return m;
}

// --- kernels through the operator (forced), fp64 -----------------------------------------

struct OpCase {
  SpmmKernel kernel;
  Precision precision;
  double tol;
  bool against_ax;
};

void run_operator_cases(const OpCase& oc) {
  const std::pair<const char*, const Csr<double>*> list[] = {
      {"skewed", &mats().skewed}, {"short", &mats().short_rows}, {"band", &mats().band},
      {"wide", &mats().wide},     {"wide^T", &mats().wide_t},    {"tall band", &mats().tall_band},
      {"unsym", &mats().unsym}};
  unsigned seed = 100;
  for (const auto& [name, a] : list) {
    for (int k : kCols) {
      OperatorOptions opt;
      opt.precision = oc.precision;
      opt.kernel = oc.kernel;
      opt.expected_cols = k;
      auto op = make_sparse_operator(*a, Backend::cuda, opt);
      ASSERT_EQ(op->plan().kernel, oc.kernel);
      const Check c = run_and_compare(*a, k, ++seed, [&](const double* x, std::int64_t ldx,
                                                          double* y, std::int64_t ldy) {
        op->apply(MvView<const double>{x, a->ncols, k, ldx, Space::device},
                  MvView<double>{y, a->nrows, k, ldy, Space::device});
      });
      expect_ok(c, oc.tol, oc.against_ax,
                std::string(to_string(oc.kernel)) + "/" + to_string(oc.precision) + " " + name +
                    " N=" + std::to_string(k));
    }
  }
}

TEST(SpmmGpu, CsrRowFp64IsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  run_operator_cases({SpmmKernel::csr_row, Precision::fp64, 1e-13, false});
}

TEST(SpmmGpu, CsrSegmentFp64IsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  run_operator_cases({SpmmKernel::csr_segment, Precision::fp64, 1e-13, false});
}

TEST(SpmmGpu, BcsrDmmaFp64IsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  run_operator_cases({SpmmKernel::bcsr_dmma, Precision::fp64, 1e-13, false});
}

TEST(SpmmGpu, CsrFp32IsCloseToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  run_operator_cases({SpmmKernel::csr_segment, Precision::fp32, 1e-6, false});
}

TEST(SpmmGpu, BcsrMmaFp16IsCloseToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  run_operator_cases({SpmmKernel::bcsr_mma_f16, Precision::fp16, 1e-2, true});
}

TEST(SpmmGpu, BcsrMmaBf16IsCloseToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  run_operator_cases({SpmmKernel::bcsr_mma_bf16, Precision::bf16, 1e-2, true});
}

TEST(SpmmGpu, CsrRowFp16IsCloseToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  run_operator_cases({SpmmKernel::csr_row, Precision::fp16, 1e-2, true});
}

// 16-bit errors must be far above fp64 round-off but well inside the bound: a kernel that
// silently computed in fp64 (or dropped the rounding of X) would be suspicious, one with
// swapped fragments would be at O(1).
TEST(SpmmGpu, Fp16ErrorIsAtHalfPrecisionLevel) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const auto& a = mats().band;
  OperatorOptions opt;
  opt.precision = Precision::fp16;
  opt.kernel = SpmmKernel::bcsr_mma_f16;
  auto op = make_sparse_operator(a, Backend::cuda, opt);
  const Check c = run_and_compare(a, 8, 7, [&](const double* x, std::int64_t ldx, double* y,
                                                std::int64_t ldy) {
    op->apply(MvView<const double>{x, a.ncols, 8, ldx, Space::device},
              MvView<double>{y, a.nrows, 8, ldy, Space::device});
  });
  EXPECT_GT(c.rel_err, 1e-6);
  EXPECT_LT(c.rel_err, 5e-3);
}

// device_csr(): A's arrays exactly as uploaded, for a CSR kernel in fp64 (the eigensolver's
// fused step reads them in place); nothing for BCSR or rounded values.
TEST(SpmmGpu, DeviceCsrIsTheOperatorsOwnCopyOfA) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const auto& a = mats().band;
  for (auto [kern, prec] : {std::pair{SpmmKernel::csr_row, Precision::fp64},
                            {SpmmKernel::csr_segment, Precision::fp64},
                            {SpmmKernel::csr_row, Precision::fp32},
                            {SpmmKernel::bcsr_dmma, Precision::fp64}}) {
    SCOPED_TRACE(std::string(to_string(kern)) + " " + to_string(prec));
    OperatorOptions opt;
    opt.precision = prec;
    opt.kernel = kern;
    auto op = make_sparse_operator(a, Backend::cuda, opt);
    const SparseOperator::DeviceCsr d = op->device_csr();
    const bool expect = prec == Precision::fp64 && kern != SpmmKernel::bcsr_dmma;
    ASSERT_EQ(d.row_ptr != nullptr, expect);
    if (!expect) {
      EXPECT_EQ(d.col_idx, nullptr);
      EXPECT_EQ(d.values, nullptr);
      continue;
    }
    std::vector<std::int64_t> rp(a.row_ptr.size());
    std::vector<std::int32_t> ci(a.col_idx.size());
    std::vector<double> v(a.values.size());
    copy_bytes(rp.data(), Space::host, d.row_ptr, Space::device, rp.size() * 8);
    copy_bytes(ci.data(), Space::host, d.col_idx, Space::device, ci.size() * 4);
    copy_bytes(v.data(), Space::host, d.values, Space::device, v.size() * 8);
    EXPECT_EQ(rp, a.row_ptr);
    EXPECT_EQ(ci, a.col_idx);
    EXPECT_EQ(v, a.values);
  }
}

// --- permutation folded into the output write (BCSR of P·A) -------------------------------

TEST(SpmmGpu, BcsrPermutationWritesOriginalRowOrder) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  for (const Csr<double>* a : {&mats().skewed, &mats().band}) {
    std::vector<std::int32_t> perm(static_cast<std::size_t>(a->nrows));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937(5));
    const Bcsr<double> b8 = build_bcsr(*a, 8, 4, perm);
    const Bcsr<double> b16 = build_bcsr(*a, 16, 16, perm);
    BcsrSpmmDevice d64(b8, Precision::fp64);
    BcsrSpmmDevice d64s(b8, Precision::fp64, 40);  // row-major staging, 64-column capacity
    BcsrSpmmDevice d16(b16, Precision::bf16);
    // bf16 X buffer for the low-precision path, ld odd (element-wise X loads)
    for (int k : {3, 17, 64}) {
      Check c = run_and_compare(*a, k, 40 + k, [&](const double* x, std::int64_t ldx, double* y,
                                                   std::int64_t ldy) {
        d64.apply(x, ldx, y, ldy, k, nullptr);
      });
      expect_ok(c, 1e-13, false, "dmma perm N=" + std::to_string(k));
      c = run_and_compare(*a, k, 60 + k, [&](const double* x, std::int64_t ldx, double* y,
                                             std::int64_t ldy) {
        d64s.apply(x, ldx, y, ldy, k, nullptr);
      });
      expect_ok(c, 1e-13, false, "dmma staged perm N=" + std::to_string(k));
      c = run_and_compare(*a, k, 50 + k, [&](const double* x, std::int64_t ldx, double* y,
                                             std::int64_t ldy) {
        DeviceArray<std::uint16_t> xl(static_cast<std::size_t>(ldx) * k);
        convert_multivector_device(x, ldx, xl.get(), ldx, a->ncols, k, Precision::bf16, nullptr);
        d16.apply_lowp(xl.get(), ldx, y, ldy, k, nullptr);
        device_synchronize();
      });
      expect_ok(c, 1e-2, true, "bf16 perm N=" + std::to_string(k));
    }
  }
}

// fp16 path with float Y (the benchmark's form) and both X load paths (even ld: 32-bit pairs;
// odd ld: element-wise).
TEST(SpmmGpu, Mma16FloatOutputBothXLoadPaths) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const auto& a = mats().band;
  const Bcsr<double> b = build_bcsr(a, 16, 16);
  BcsrSpmmDevice d(b, Precision::fp16);
  for (std::int64_t pad : {0, 1, 2}) {
    const int k = 24;
    const std::int64_t ldx = a.ncols + pad, ldy = a.nrows + 1;
    std::vector<double> x = test::random_vector(static_cast<std::size_t>(ldx * k), 77 + pad);
    std::vector<double> yref(static_cast<std::size_t>(a.nrows * k));
    csr_spmm_reference(a, x.data(), ldx, yref.data(), a.nrows, k);
    MultiVector<double> xd(ldx, k, Space::device);
    copy_bytes(xd.data(), Space::device, x.data(), Space::host, x.size() * 8);
    DeviceArray<std::uint16_t> xl(static_cast<std::size_t>(ldx) * k);
    convert_multivector_device(xd.data(), ldx, xl.get(), ldx, a.ncols, k, Precision::fp16, nullptr);
    std::vector<float> y(static_cast<std::size_t>(ldy * k), std::numeric_limits<float>::quiet_NaN());
    DeviceArray<float> yd(y.size());
    copy_bytes(yd.get(), Space::device, y.data(), Space::host, y.size() * 4);
    d.apply_lowp(xl.get(), ldx, yd.get(), ldy, k, nullptr);
    device_synchronize();
    copy_bytes(y.data(), Space::host, yd.get(), Space::device, y.size() * 4);
    double diff = 0;
    std::int64_t nan = 0;
    for (int j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < a.nrows; ++i) {
        if (std::isnan(y[i + j * ldy])) ++nan;
        else diff += std::pow(y[i + j * ldy] - yref[i + j * a.nrows], 2);
      }
    EXPECT_EQ(nan, 0) << "pad " << pad;
    const double rel = std::sqrt(diff) / (test::frobenius(a) * test::frobenius(x.data(), a.ncols, k, ldx));
    EXPECT_LE(rel, 1e-2) << "pad " << pad;
  }
}

// The automatic plan must pick tensor cores for a dense band and CUDA cores for a sparse random
// matrix, and the chosen operator must be correct.
TEST(SpmmGpu, AutomaticPlanIsCorrect) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  for (const Csr<double>* a : {&mats().band, &mats().short_rows, &mats().skewed, &mats().wide,
                               &mats().tall_band, &mats().unsym}) {
    OperatorOptions opt;
    opt.expected_cols = 16;
    auto op = make_sparse_operator(*a, Backend::cuda, opt);
    const Check c = run_and_compare(*a, 16, 3, [&](const double* x, std::int64_t ldx, double* y,
                                                   std::int64_t ldy) {
      op->apply(MvView<const double>{x, a->ncols, 16, ldx, Space::device},
                MvView<double>{y, a->nrows, 16, ldy, Space::device});
    });
    expect_ok(c, 1e-13, false, op->plan().describe());
  }
  OperatorOptions opt;
  opt.expected_cols = 16;
  EXPECT_EQ(plan_spmm(mats().band, Backend::cuda, opt).kernel, SpmmKernel::bcsr_dmma);
  EXPECT_NE(plan_spmm(mats().short_rows, Backend::cuda, opt).kernel, SpmmKernel::bcsr_dmma);
}

// Jaccard reordering through the operator: rows of a band shuffled, the reordered BCSR must
// still write Y in A's row order.
TEST(SpmmGpu, JaccardReorderedOperatorIsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const auto& band = mats().band;
  std::vector<std::int32_t> shuffle(static_cast<std::size_t>(band.nrows));
  std::iota(shuffle.begin(), shuffle.end(), 0);
  std::shuffle(shuffle.begin(), shuffle.end(), std::mt19937(8));
  const Csr<double> a = permute_rows(band, shuffle);
  OperatorOptions opt;
  opt.reorder = Reorder::jaccard;
  opt.kernel = SpmmKernel::bcsr_dmma;
  opt.expected_cols = 24;
  auto op = make_sparse_operator(a, Backend::cuda, opt);
  EXPECT_TRUE(op->plan().reordered) << op->plan().describe();
  for (int k : {3, 24}) {
    const Check c = run_and_compare(a, k, 70 + k, [&](const double* x, std::int64_t ldx,
                                                      double* y, std::int64_t ldy) {
      op->apply(MvView<const double>{x, a.ncols, k, ldx, Space::device},
                MvView<double>{y, a.nrows, k, ldy, Space::device});
    });
    expect_ok(c, 1e-13, false, "jaccard dmma N=" + std::to_string(k));
  }
}

// Rows-mode Jaccard on rectangular A (P·A, Y written through perm): scrambled rows of a wide and
// a tall stretched band, forced tensor-core kernels at three precisions, N = 3, 24, 40.
TEST(SpmmGpu, JaccardReorderedRectangularIsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{613, 1999}, {2111, 397}}) {
    const Csr<double> a = test::shuffle_rows(test::stretched_band(m, n, 9, 80 + static_cast<unsigned>(m)), 81);
    for (const OpCase& oc : {OpCase{SpmmKernel::bcsr_dmma, Precision::fp64, 1e-13, false},
                             OpCase{SpmmKernel::bcsr_mma_f16, Precision::fp16, 1e-2, true},
                             OpCase{SpmmKernel::bcsr_mma_bf16, Precision::bf16, 3e-2, true}}) {
      OperatorOptions opt;
      opt.reorder = Reorder::jaccard;
      opt.kernel = oc.kernel;
      opt.precision = oc.precision;
      opt.expected_cols = 24;
      auto op = make_sparse_operator(a, Backend::cuda, opt);
      const std::string what = std::to_string(m) + "x" + std::to_string(n) + " " + to_string(oc.kernel) +
                               "\n" + op->plan().describe();
      EXPECT_TRUE(op->plan().reordered) << what;  // (measured: 2–3× fewer blocks)
      for (int k : {3, 24, 40}) {
        const Check c = run_and_compare(a, k, 200 + k, [&](const double* x, std::int64_t ldx, double* y,
                                                           std::int64_t ldy) {
          op->apply(MvView<const double>{x, a.ncols, k, ldx, Space::device},
                    MvView<double>{y, a.nrows, k, ldy, Space::device});
        });
        expect_ok(c, oc.tol, oc.against_ax, what + " N=" + std::to_string(k));
      }
    }
  }
}

// Symmetric reordering through the operator (A' = P·A·Pᵀ, X gathered by the staging copy or the
// 16-bit conversion, Y written through perm): scrambled 7-point and 27-point×3 stencils at odd
// sizes (random values: unsymmetric), and the same with half their off-diagonal entries dropped
// (unsymmetric patterns), forced tensor-core kernels and the trial, N = 1, 8, 33, NaN-poisoned Y.
TEST(SpmmGpu, SymmetricReorderedOperatorIsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double> mats_sym[] = {
      test::scrambled_stencil(13, 11, 9, 1, false, 21), test::scrambled_stencil(7, 5, 9, 3, true, 22),
      test::drop_half_off_diagonal(test::scrambled_stencil(13, 11, 9, 1, false, 21), 26),
      test::drop_half_off_diagonal(test::scrambled_stencil(7, 5, 9, 3, true, 22), 27)};
  struct SymCase {
    SpmmKernel kernel;
    Precision precision;
    double tol;
    bool against_ax;
  };
  const SymCase cases[] = {{SpmmKernel::bcsr_dmma, Precision::fp64, 1e-13, false},
                           {SpmmKernel::automatic, Precision::fp64, 1e-13, false},
                           {SpmmKernel::bcsr_mma_f16, Precision::fp16, 1e-2, true},
                           {SpmmKernel::bcsr_mma_bf16, Precision::bf16, 3e-2, true}};
  for (const Csr<double>& a : mats_sym) {
    for (const SymCase& sc : cases) {
      for (int plan_n : {1, 8, 33}) {
        OperatorOptions opt;
        opt.reorder = Reorder::symmetric;
        opt.kernel = sc.kernel;
        opt.precision = sc.precision;
        opt.expected_cols = plan_n;
        opt.trial_min_bytes = 0;  // automatic: through the trial (its reordered BCSR candidate)
        auto op = make_sparse_operator(a, Backend::cuda, opt);
        const SpmmPlan& p = op->plan();
        const std::string what = std::string(to_string(sc.kernel)) + " n=" +
                                 std::to_string(a.nrows) + " plan N=" + std::to_string(plan_n) +
                                 "\n" + p.describe();
        // a scrambled stencil always has fewer blocks after the symmetric reordering (the
        // trial may keep a CSR kernel, which uses A as given)
        if (sc.kernel != SpmmKernel::automatic || p.kernel == SpmmKernel::bcsr_dmma)
          EXPECT_TRUE(p.reordered && p.symmetric) << what;
        if (sc.kernel != SpmmKernel::automatic) EXPECT_EQ(p.kernel, sc.kernel) << what;
        for (int k : {1, 8, 33}) {
          const Check c = run_and_compare(a, k, 90 + k + plan_n, [&](const double* x,
                                                                     std::int64_t ldx, double* y,
                                                                     std::int64_t ldy) {
            op->apply(MvView<const double>{x, a.ncols, k, ldx, Space::device},
                      MvView<double>{y, a.nrows, k, ldy, Space::device});
          });
          expect_ok(c, sc.tol, sc.against_ax, what + " N=" + std::to_string(k));
        }
      }
    }
  }
}

// The permuted basis of unsymmetric patterns on the GPU (OperatorBasis::permuted: the operator
// is B = P·A·Pᵀ, conversions by permute_rows_device): x̃ = P·x and back exactly, B·x̃ == P·(A·x)
// to round-off, with the CSR and DMMA kernels forced and the automatic plan.
TEST(SpmmGpu, PermutedBasisOfUnsymmetricPatternsMatchesHost) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double> list[] = {
      test::drop_half_off_diagonal(test::scrambled_stencil(13, 11, 9, 1, false, 28), 29),
      test::drop_half_off_diagonal(test::scrambled_stencil(7, 5, 9, 3, true, 30), 31)};
  for (const Csr<double>& a : list) {
    for (SpmmKernel kern : {SpmmKernel::automatic, SpmmKernel::csr_row, SpmmKernel::bcsr_dmma}) {
      OperatorOptions opt;
      opt.reorder = Reorder::symmetric;
      opt.basis = OperatorBasis::permuted;
      opt.kernel = kern;
      opt.expected_cols = 8;
      auto op = make_sparse_operator(a, Backend::cuda, opt);
      const std::string what = std::string(to_string(kern)) + " n=" + std::to_string(a.nrows) + "\n" +
                               op->plan().describe();
      ASSERT_NE(op->permutation(), nullptr) << what;
      const std::vector<std::int32_t>& p = *op->permutation();
      const std::int64_t n = a.nrows;
      const int k = 5;
      std::vector<double> x = test::random_vector(static_cast<std::size_t>(n * k), 32);
      std::vector<double> ax(x.size()), xt(x.size()), yt(x.size()), back(x.size());
      csr_spmm_reference(a, x.data(), n, ax.data(), n, k);
      MultiVector<double> xd(n, k, Space::device), xtd(n, k, Space::device), ytd(n, k, Space::device),
          backd(n, k, Space::device);
      copy_bytes(xd.data(), Space::device, x.data(), Space::host, x.size() * 8);
      op->to_permuted(xd.view(), xtd.view());
      op->apply(xtd.view(), ytd.view());
      op->from_permuted(xtd.view(), backd.view());
      device_synchronize();
      copy_bytes(xt.data(), Space::host, xtd.data(), Space::device, xt.size() * 8);
      copy_bytes(yt.data(), Space::host, ytd.data(), Space::device, yt.size() * 8);
      copy_bytes(back.data(), Space::host, backd.data(), Space::device, back.size() * 8);
      double err = 0, ref = 0;
      for (int j = 0; j < k; ++j)
        for (std::int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(xt[i + j * n], x[p[i] + j * n]) << what;
          ASSERT_EQ(back[i + j * n], x[i + j * n]) << what;
          err = std::max(err, std::abs(yt[i + j * n] - ax[p[i] + j * n]));
          ref = std::max(ref, std::abs(ax[p[i] + j * n]));
        }
      EXPECT_LE(err, 1e-13 * ref) << what;
    }
  }
}

// The symmetric blocks straight into BcsrSpmmDevice (fp64 without staging asked for: the
// column permutation turns staging on) vs the CPU BCSR reference with col_perm.
TEST(SpmmGpu, BcsrColumnPermutationMatchesHostReference) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double> a = test::scrambled_stencil(9, 7, 11, 1, false, 23);
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(24));
  const Bcsr<double> b = build_bcsr(a, 8, 4, perm, perm);
  BcsrSpmmDevice d(b, Precision::fp64);
  EXPECT_TRUE(d.gathers());
  EXPECT_GT(d.stage_cols(), 0);
  for (int k : {1, 8, 33}) {
    const Check c = run_and_compare(a, k, 120 + k, [&](const double* x, std::int64_t ldx,
                                                       double* y, std::int64_t ldy) {
      d.apply(x, ldx, y, ldy, k, nullptr);
    });
    expect_ok(c, 1e-13, false, "col_perm dmma N=" + std::to_string(k));
  }
  // the host reference honours col_perm too (same data)
  std::vector<double> x = test::random_vector(static_cast<std::size_t>(a.ncols) * 5, 7);
  std::vector<double> y1(static_cast<std::size_t>(a.nrows) * 5), y2(y1.size());
  csr_spmm_reference(a, x.data(), a.ncols, y1.data(), a.nrows, 5);
  bcsr_spmm_host(b, x.data(), a.ncols, y2.data(), a.nrows, 5);
  double md = 0;
  for (std::size_t i = 0; i < y1.size(); ++i) md = std::max(md, std::abs(y1[i] - y2[i]));
  EXPECT_LE(md, 1e-12);
}

// Segments interleaved by their relative position in the row (X staged 16 wide beyond about half
// of L2, rows of 2000-8000 non-zeros cut into about 10 segments): the same Y as the reference for N = 1, 16 (one pass) and
// 33 (chunks), every element written; a matrix with few columns keeps the row order.
TEST(SpmmGpu, InterleavedSegmentsMatchHostReference) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  auto random_rows = [](std::int64_t m, std::int64_t n, unsigned seed) {
    std::mt19937_64 gen(seed);
    std::uniform_int_distribution<std::int64_t> col(0, n - 1), len(2000, 8000);
    std::uniform_real_distribution<double> val(-1.0, 1.0);
    std::vector<Triplet<double>> t;
    for (std::int64_t i = 0; i < m; ++i) {
      std::vector<std::int64_t> cols(static_cast<std::size_t>(std::min<std::int64_t>(len(gen), n)));
      for (auto& c : cols) c = col(gen);
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
      for (auto c : cols) t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(c), val(gen)});
    }
    return csr_from_triplets<double>(m, n, std::move(t));
  };
  const Csr<double> a = random_rows(97, 300007, 41);  // staged 16 wide: 38 MB
  CsrSpmmDevice d(a, Precision::fp64, 32, 16);
  ASSERT_TRUE(d.interleaved());
  for (int k : {1, 16, 33}) {
    const Check c = run_and_compare(a, k, 300 + k, [&](const double* x, std::int64_t ldx, double* y, std::int64_t ldy) {
      d.apply(x, ldx, y, ldy, k, nullptr);
    });
    expect_ok(c, 1e-13, false, "interleaved N=" + std::to_string(k));
  }
  EXPECT_FALSE(CsrSpmmDevice(random_rows(97, 3001, 42), Precision::fp64, 32, 16).interleaved());
}

// N larger than the plan's: staged kernels run the columns in several chunks.
TEST(SpmmGpu, StagedKernelsChunkColumnsBeyondThePlan) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  for (SpmmKernel kern : {SpmmKernel::csr_segment, SpmmKernel::bcsr_dmma}) {
    const auto& a = mats().skewed;
    OperatorOptions opt;
    opt.kernel = kern;
    opt.expected_cols = 17;
    auto op = make_sparse_operator(a, Backend::cuda, opt);
    EXPECT_TRUE(op->plan().stage_x) << op->plan().describe();
    for (int k : {70, 5}) {
      const Check c = run_and_compare(a, k, 90 + k, [&](const double* x, std::int64_t ldx,
                                                        double* y, std::int64_t ldy) {
        op->apply(MvView<const double>{x, a.ncols, k, ldx, Space::device},
                  MvView<double>{y, a.nrows, k, ldy, Space::device});
      });
      expect_ok(c, 1e-13, false, std::string(to_string(kern)) + " chunked N=" + std::to_string(k));
    }
  }
}

// Two runs on the same input must agree to the last bit for the kernels without atomics and
// to round-off for those with (a moving error would be a race).
TEST(SpmmGpu, RepeatedApplyIsStable) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const auto& a = mats().skewed;
  for (SpmmKernel kern : {SpmmKernel::csr_segment, SpmmKernel::bcsr_dmma}) {
    OperatorOptions opt;
    opt.kernel = kern;
    auto op = make_sparse_operator(a, Backend::cuda, opt);
    const int k = 9;
    std::vector<double> x = test::random_vector(static_cast<std::size_t>(a.ncols * k), 9);
    MultiVector<double> xd(a.ncols, k, Space::device), yd(a.nrows, k, Space::device);
    copy_bytes(xd.data(), Space::device, x.data(), Space::host, x.size() * 8);
    std::vector<double> y1(static_cast<std::size_t>(a.nrows * k)), y2(y1.size());
    op->apply(xd.view(), yd.view());
    device_synchronize();
    copy_bytes(y1.data(), Space::host, yd.data(), Space::device, y1.size() * 8);
    for (int rep = 0; rep < 5; ++rep) op->apply(xd.view(), yd.view());
    device_synchronize();
    copy_bytes(y2.data(), Space::host, yd.data(), Space::device, y2.size() * 8);
    double md = 0, my = 0;
    for (std::size_t i = 0; i < y1.size(); ++i) {
      md = std::max(md, std::abs(y1[i] - y2[i]));
      my = std::max(my, std::abs(y1[i]));
    }
    EXPECT_LE(md, 1e-14 * my) << to_string(kern);
  }
}

}  // namespace
}  // namespace tcsolve

namespace tcsolve {
namespace {

// A band with whole block-rows removed (empty block-rows inside warp runs) and enough blocks
// that every persistent DMMA warp takes several runs; rows cut by run boundaries take atomics.
Csr<double> band_with_empty_block_rows(std::int64_t n, int bw, unsigned seed) {
  const Csr<double> band = test::random_band(n, bw, seed);
  Csr<double> a;
  a.nrows = n;
  a.ncols = n;
  a.row_ptr.assign(1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const bool drop = (i / 8) % 97 == 13 || (i >= 800 && i < 832);
    if (!drop)
      for (std::int64_t p = band.row_ptr[i]; p < band.row_ptr[i + 1]; ++p) {
        a.col_idx.push_back(band.col_idx[p]);
        a.values.push_back(band.values[p]);
      }
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  return a;
}

TEST(SpmmGpu, DmmaManyRunsEmptyBlockRowsDirectAndStaged) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double> a = band_with_empty_block_rows(20011, 37, 21);
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(22));
  for (bool permuted : {false, true}) {
    const Bcsr<double> b = build_bcsr(a, 8, 4, permuted ? perm : std::vector<std::int32_t>{});
    BcsrSpmmDevice direct(b, Precision::fp64);
    BcsrSpmmDevice staged(b, Precision::fp64, 64);
    staged.set_stage_min_cols(1);  // fragment-order staging at every N (W = 8, 16, 32, 64)
    BcsrSpmmDevice narrow(b, Precision::fp64, 64);  // staged, 16-column tiles on wider W
    narrow.set_stage_min_cols(1);
    narrow.set_max_tile_cols(16);
    BcsrSpmmDevice direct32(b, Precision::fp64);  // direct, 32-column tiles
    direct32.set_max_tile_cols(32);
    ASSERT_GT(direct.nblocks() / direct.blocks_per_warp(), 2000) << "too few runs";
    for (int k : {1, 5, 8, 13, 16, 24, 33, 64, 100}) {
      for (const BcsrSpmmDevice* d : {&direct, &staged, &narrow, &direct32}) {
        const Check c = run_and_compare(a, k, 300 + k, [&](const double* x, std::int64_t ldx,
                                                           double* y, std::int64_t ldy) {
          d->apply(x, ldx, y, ldy, k, nullptr);
        });
        const char* what = d == &direct ? "direct" : d == &staged ? "staged" : d == &narrow
                                                                       ? "staged t16"
                                                                       : "direct t32";
        expect_ok(c, 1e-13, false,
                  std::string(what) + (permuted ? " perm" : "") + " N=" + std::to_string(k));
      }
    }
  }
}

// The default GPU plan times its candidates once where the cost model cannot tell them apart:
// the kept kernel is the fastest of the recorded trials, the operator is correct, and
// plan_by_trial = false gives the model's choice. Where the model is clear (tensor-core blocks
// beyond 1.25× the CSR bytes with short regular rows, or below 0.75×) the trial is skipped, the
// plan says so and keeps the model's kernel.
TEST(SpmmGpu, TrialPlanKeepsFastestCandidateAndIsCorrect) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  int trials = 0, skipped = 0;
  for (const Csr<double>* a : {&mats().band, &mats().short_rows, &mats().skewed}) {
    for (int k : {8, 24, 40}) {
      OperatorOptions opt;
      opt.expected_cols = k;
      opt.trial_min_bytes = 0;  // (these matrices are launch-bound: the next test)
      auto op = make_sparse_operator(*a, Backend::cuda, opt);
      const SpmmPlan& p = op->plan();
      const SpmmPlan model = plan_spmm(*a, Backend::cuda, opt);
      const double ratio = model.nblocks > 0 ? model.est_bytes_bcsr / model.est_bytes_csr : INFINITY;
      const bool regular = model.mean_row_nnz < 10 && model.max_row_nnz <= 256;
      const bool sparse_blocks = model.nblocks > 0 && model.fill < 0.3;  // fp64 8×4 blocks
      const bool clear = (ratio > 1.25 && regular) || ratio < 0.75 || (sparse_blocks && regular);
      if (clear) {
        ++skipped;
        EXPECT_FALSE(p.by_trial) << p.describe();
        EXPECT_NE(p.reason.find("trial skipped"), std::string::npos) << p.describe();
        const bool model_bcsr = model.kernel == SpmmKernel::bcsr_dmma;
        EXPECT_EQ(p.kernel, sparse_blocks && model_bcsr ? SpmmKernel::csr_row : model.kernel)
            << p.describe();
        const Check c = run_and_compare(*a, k, 400 + k, [&](const double* x, std::int64_t ldx,
                                                             double* y, std::int64_t ldy) {
          op->apply(MvView<const double>{x, a->ncols, k, ldx, Space::device},
                    MvView<double>{y, a->nrows, k, ldy, Space::device});
        });
        expect_ok(c, 1e-13, false, p.describe() + " N=" + std::to_string(k));
        continue;
      }
      ++trials;
      ASSERT_TRUE(p.by_trial) << p.describe();
      ASSERT_GE(p.trials.size(), 2u) << p.describe();
      double best = INFINITY;
      for (const SpmmTrial& t : p.trials) {
        EXPECT_GT(t.ms, 0.0) << t.name;
        best = std::min(best, t.ms);
      }
      std::string kept = to_string(p.kernel);
      if (p.kernel == SpmmKernel::csr_segment) kept += " g" + std::to_string(p.csr_group);
      if (p.kernel == SpmmKernel::csr_row && p.csr_tiled) kept += " tiled";
      if (p.stage_x) kept += " staged";
      if (p.dmma_tile_cols > 0) kept += " t" + std::to_string(p.dmma_tile_cols);
      bool found = false;
      for (const SpmmTrial& t : p.trials) found = found || (t.name == kept && t.ms == best);
      EXPECT_TRUE(found) << "kept " << kept << " is not the fastest trial\n" << p.describe();
      for (int kk : {k, 3}) {
        const Check c = run_and_compare(*a, kk, 500 + kk, [&](const double* x, std::int64_t ldx,
                                                              double* y, std::int64_t ldy) {
          op->apply(MvView<const double>{x, a->ncols, kk, ldx, Space::device},
                    MvView<double>{y, a->nrows, kk, ldy, Space::device});
        });
        expect_ok(c, 1e-13, false, p.describe() + " N=" + std::to_string(kk));
      }
      opt.plan_by_trial = false;
      auto mop = make_sparse_operator(*a, Backend::cuda, opt);
      EXPECT_FALSE(mop->plan().by_trial);
      EXPECT_EQ(mop->plan().kernel, plan_spmm(*a, Backend::cuda, opt).kernel);
    }
  }
  EXPECT_GT(trials, 0) << "no matrix of the set needed the trial (the skewed one should)";
  RecordProperty("trials", trials);
  RecordProperty("skipped", skipped);
}

// Below OperatorOptions::trial_min_bytes (an apply launch-bound by the model) the default plan
// times nothing: the model's kernel (the fill rule of the trial's clear cases applied), said in
// the reason, and the product correct. The skewed matrix is one the trial is run for at size 0.
TEST(SpmmGpu, LaunchBoundApplySkipsTheTrial) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const Csr<double>& a = mats().skewed;
  for (int k : {8, 40}) {
    OperatorOptions opt;
    opt.expected_cols = k;
    const SpmmPlan model = plan_spmm(a, Backend::cuda, opt);
    ASSERT_LT(model.est_bytes_csr, opt.trial_min_bytes);
    auto op = make_sparse_operator(a, Backend::cuda, opt);
    const SpmmPlan& p = op->plan();
    EXPECT_FALSE(p.by_trial) << p.describe();
    EXPECT_TRUE(p.trials.empty()) << p.describe();
    EXPECT_NE(p.reason.find("trial skipped: an apply is launch-bound"), std::string::npos) << p.describe();
    const bool sparse_blocks = model.nblocks > 0 && model.fill < 0.3;
    if (!(sparse_blocks && model.kernel == SpmmKernel::bcsr_dmma)) EXPECT_EQ(p.kernel, model.kernel) << p.describe();
    const Check c = run_and_compare(a, k, 900 + k, [&](const double* x, std::int64_t ldx, double* y,
                                                      std::int64_t ldy) {
      op->apply(MvView<const double>{x, a.ncols, k, ldx, Space::device},
                MvView<double>{y, a.nrows, k, ldy, Space::device});
    });
    expect_ok(c, 1e-13, false, p.describe() + " N=" + std::to_string(k));
    // at size 0 the same matrix goes to the trial (the model is not clear on it)
    opt.trial_min_bytes = 0;
    auto timed = make_sparse_operator(a, Backend::cuda, opt);
    EXPECT_TRUE(timed->plan().by_trial || timed->plan().reason.find("the model is clear") != std::string::npos)
        << timed->plan().describe();
  }
}

// Row-split with A tiled in shared memory: short rows (tile path), a 75-wide band (every CTA
// over the tile: global path) and skewed rows (both), fp64 and fp16 values.
TEST(SpmmGpu, CsrRowTiledIsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const std::pair<const char*, const Csr<double>*> list[] = {
      {"short", &mats().short_rows}, {"band", &mats().band}, {"skewed", &mats().skewed}};
  for (const auto& [name, a] : list) {
    CsrSpmmDevice d(*a, Precision::fp64, 1, 0, true);
    CsrSpmmDevice h(*a, Precision::fp16, 1, 0, true);
    ASSERT_TRUE(d.tiled_rows());
    for (int k : kCols) {
      Check c = run_and_compare(*a, k, 700 + k, [&](const double* x, std::int64_t ldx, double* y,
                                                    std::int64_t ldy) {
        d.apply(x, ldx, y, ldy, k, nullptr);
      });
      expect_ok(c, 1e-13, false, std::string("tiled ") + name + " N=" + std::to_string(k));
      c = run_and_compare(*a, k, 800 + k, [&](const double* x, std::int64_t ldx, double* y,
                                              std::int64_t ldy) {
        h.apply(x, ldx, y, ldy, k, nullptr);
      });
      expect_ok(c, 1e-2, true, std::string("tiled fp16 ") + name + " N=" + std::to_string(k));
    }
  }
}

// fp16 through the trial: candidates are the 16-bit CSR kernels and the MMA16 kernel.
TEST(SpmmGpu, TrialPlanFp16IsCloseToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const auto& a = mats().band;
  OperatorOptions opt;
  opt.precision = Precision::fp16;
  opt.expected_cols = 16;
  opt.trial_min_bytes = 0;  // (launch-bound: through the trial all the same)
  auto op = make_sparse_operator(a, Backend::cuda, opt);
  EXPECT_TRUE(op->plan().by_trial || op->plan().reason.find("the model is clear") != std::string::npos)
      << op->plan().describe();
  const Check c = run_and_compare(a, 16, 77, [&](const double* x, std::int64_t ldx, double* y,
                                                  std::int64_t ldy) {
    op->apply(MvView<const double>{x, a.ncols, 16, ldx, Space::device},
              MvView<double>{y, a.nrows, 16, ldy, Space::device});
  });
  expect_ok(c, 1e-2, true, op->plan().describe());
}

}  // namespace
}  // namespace tcsolve

// ---- caller-owned device arrays (spmm/device_csr_view.hpp): the Python module's conversions ----

namespace tcsolve {
namespace {

// int32 → int64 widening against the host copy: random values of both signs, a count that is
// not a multiple of the block (and past one grid pass: 65535·16·128 = 134M would be too large
// for a unit test; 3·2^20 + 7 runs several strides per thread), NaN-free poison (-1 pattern).
TEST(DeviceArraysGpu, WidenIndicesMatchesTheHostCopy) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  for (std::int64_t count : {1LL, 129LL, 3LL * (1 << 20) + 7}) {
    std::mt19937 rng(static_cast<unsigned>(count));
    std::vector<std::int32_t> src(static_cast<std::size_t>(count));
    for (auto& v : src) v = static_cast<std::int32_t>(rng());
    DeviceArray<std::int32_t> s(src);
    DeviceArray<std::int64_t> d(std::vector<std::int64_t>(static_cast<std::size_t>(count + 3), -77));
    widen_indices(s.get(), d.get(), count, nullptr);
    std::vector<std::int64_t> out(static_cast<std::size_t>(count + 3));
    copy_bytes(out.data(), Space::host, d.get(), Space::device, out.size() * 8);
    for (std::int64_t i = 0; i < count; ++i) ASSERT_EQ(out[i], static_cast<std::int64_t>(src[i])) << i;
    for (std::int64_t i = count; i < count + 3; ++i) EXPECT_EQ(out[i], -77) << "written past the end";
  }
}

// Strided (C-ordered, and a transposed view with a padded leading dimension) float64 blocks to
// column-major, against the host's x(i, j) = src[i·rs + j·cs]; output NaN-poisoned, exact.
TEST(DeviceArraysGpu, ToColumnMajorMatchesTheHostGather) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const std::int64_t n = 1037, s = 13;
  for (const auto& [rs, cs] : {std::pair<std::int64_t, std::int64_t>{s, 1}, {1, n + 5}, {s + 2, 1}}) {
    const std::int64_t span = (n - 1) * rs + (s - 1) * cs + 1;
    std::vector<double> src = test::random_vector(static_cast<std::size_t>(span), 91);
    DeviceArray<double> sd(src);
    DeviceArray<double> dd(std::vector<double>(static_cast<std::size_t>(n * s + 2), kNaN));
    to_column_major(sd.get(), rs, cs, n, s, dd.get(), nullptr);
    std::vector<double> out(static_cast<std::size_t>(n * s + 2));
    copy_bytes(out.data(), Space::host, dd.get(), Space::device, out.size() * 8);
    for (std::int64_t j = 0; j < s; ++j)
      for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i + j * n], src[i * rs + j * cs]) << i << "," << j;
    EXPECT_TRUE(std::isnan(out[n * s]) && std::isnan(out[n * s + 1])) << "written past the end";
  }
}

// The device check names the first row that is not sorted or holds a duplicate column, and
// finds none in a canonical matrix (a random band matrix of 1,000 rows).
TEST(DeviceArraysGpu, CheckFindsTheFirstUnsortedRow) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  Csr<double> a = test::random_band(1000, 7, 5);
  auto run = [](const Csr<double>& m) {
    DeviceArray<std::int64_t> rp(m.row_ptr);
    DeviceArray<std::int32_t> ci(m.col_idx);
    DeviceArray<double> v(m.values);
    return check_device_csr(m.nrows, m.nnz(), rp.get(), ci.get(), v.get(), nullptr, nullptr);
  };
  EXPECT_EQ(run(a).unsorted_row, -1);
  {  // the diagonal's extremes against the host's
    const std::vector<double> d = csr_diagonal(a);
    const DeviceCsrCheck c = run(a);
    const auto mn = std::min_element(d.begin(), d.end());
    EXPECT_EQ(c.min_diag, *mn);
    EXPECT_EQ(c.min_diag_row, mn - d.begin());
    EXPECT_EQ(c.max_diag, *std::max_element(d.begin(), d.end()));
  }
  // rows 700 (swapped pair) and 400 (a duplicated column): the first is 400
  Csr<double> b = a;
  auto row_with = [&](std::int64_t from) {
    for (std::int64_t i = from; i < b.nrows; ++i)
      if (b.row_ptr[i + 1] - b.row_ptr[i] >= 2) return i;
    return std::int64_t(-1);
  };
  const std::int64_t r1 = row_with(700), r0 = row_with(400);
  ASSERT_GE(r1, 0);
  ASSERT_GE(r0, 0);
  ASSERT_LT(r0, r1);
  std::swap(b.col_idx[b.row_ptr[r1]], b.col_idx[b.row_ptr[r1] + 1]);
  EXPECT_EQ(run(b).unsorted_row, r1);
  b.col_idx[b.row_ptr[r0] + 1] = b.col_idx[b.row_ptr[r0]];
  EXPECT_EQ(run(b).unsorted_row, r0);
}

// ---- The fused Chebyshev step (spmm/chebyshev_step.cu) against the host reference
// (chebyshev_step.cpp): every kernel shape (columns per pass × threads per row), fp64 and the fp32
// rung, random values, column counts that are not multiples of the passes, rows not a multiple of
// a block, empty and long rows; with c = 0 `next` is not read: it starts NaN-poisoned and must be
// written everywhere.
struct StepCase {
  double a, b, c, e;
  bool with_d;
};

void check_step(const Csr<double>& a, std::int64_t s, unsigned seed) {
  const std::int64_t n = a.nrows;
  auto host = make_chebyshev_step(a, Backend::cpu, Precision::fp64, nullptr);
  auto dev = make_chebyshev_step(a, Backend::cuda, Precision::fp64, nullptr);
  const std::vector<double> cur = test::random_vector(static_cast<std::size_t>(n * s), seed);
  const std::vector<double> prev = test::random_vector(static_cast<std::size_t>(n * s), seed + 1);
  const std::vector<double> r = test::random_vector(static_cast<std::size_t>(n * s), seed + 2);
  std::vector<double> d = test::random_vector(static_cast<std::size_t>(n), seed + 3);
  for (double& x : d) x = 1.0 + 0.5 * x;
  DeviceArray<double> cur_d(cur), r_d(r), d_d(d), next_d(static_cast<std::size_t>(n * s));
  DeviceArray<std::int64_t> rp(a.row_ptr);
  DeviceArray<std::int32_t> ci(a.col_idx);
  DeviceArray<double> v(a.values);
  auto hv = [&](const std::vector<double>& x) { return MvView<const double>{x.data(), n, s, n, Space::host}; };
  auto dv = [&](const DeviceArray<double>& x) { return MvView<const double>{x.get(), n, s, n, Space::device}; };
  const StepCase cases[] = {{0.7, -0.3, 0.0, 0.0, false}, {1.9, 0.4, -0.8, 0.0, false}, {-0.6, 1.1, 0.5, 0.25, true}};
  for (const StepCase& k : cases) {
    std::vector<double> want = k.c == 0.0 ? std::vector<double>(prev.size(), 0.0) : prev;
    host->step(k.a, hv(cur), k.b, k.c, MvView<double>{want.data(), n, s, n, Space::host}, k.e, hv(r),
               k.with_d ? d.data() : nullptr);
    const double scale = test::frobenius(want.data(), n, static_cast<int>(s), n);
    auto compare = [&](const char* what, int kc, int g) {
      std::vector<double> got(prev.size());
      copy_bytes(got.data(), Space::host, next_d.get(), Space::device, got.size() * 8);
      double diff = 0;
      std::int64_t nan = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(got[i])) ++nan;
        else diff += (got[i] - want[i]) * (got[i] - want[i]);
      }
      EXPECT_EQ(nan, 0) << what << " kc " << kc << " g " << g << " s " << s << " n " << n;
      EXPECT_LT(std::sqrt(diff), 1e-14 * scale) << what << " kc " << kc << " g " << g << " s " << s;
    };
    auto load_next = [&] {
      std::vector<double> init = k.c == 0.0 ? std::vector<double>(prev.size(), kNaN) : prev;
      copy_bytes(next_d.get(), Space::device, init.data(), Space::host, init.size() * 8);
    };
    load_next();
    dev->step(k.a, dv(cur_d), k.b, k.c, MvView<double>{next_d.get(), n, s, n, Space::device}, k.e,
              dv(r_d), k.with_d ? d_d.get() : nullptr);
    device_synchronize();
    compare("default", 0, 0);
    if (k.e != 0.0 || k.with_d) continue;  // the shapes' hook takes neither
    for (auto [kc, g] : {std::pair{8, 1}, {4, 1}, {2, 1}, {8, 2}, {4, 2}, {4, 4}, {2, 2}, {16, 1}, {16, 2}}) {
      load_next();
      detail::launch_step_shape(kc, g, n, rp.get(), ci.get(), v.get(), k.a, dv(cur_d), k.b, k.c,
                                MvView<double>{next_d.get(), n, s, n, Space::device}, nullptr);
      device_synchronize();
      compare("shape", kc, g);
    }
  }
  // The fp32 rung's step: fp32 blocks, fp32 sums (relative tolerance of a few fp32 roundings
  // over the row), against the host's fp32 step; r weighted per column by f.
  std::vector<float> cur32(cur.begin(), cur.end()), prev32(prev.begin(), prev.end()), r32(r.begin(), r.end());
  std::vector<double> f = test::random_vector(static_cast<std::size_t>(s), seed + 4);
  DeviceArray<float> cur32_d(cur32), r32_d(r32), next32_d(prev32.size());
  DeviceArray<double> f_d(f);
  std::vector<float> want32 = prev32;
  host->step32(1.3, MvView<const float>{cur32.data(), n, s, n, Space::host}, -0.2, 0.6,
               MvView<float>{want32.data(), n, s, n, Space::host},
               MvView<const float>{r32.data(), n, s, n, Space::host}, f.data());
  auto run32 = [&](int kc, int g) {
    copy_bytes(next32_d.get(), Space::device, prev32.data(), Space::host, prev32.size() * 4);
    MvView<const float> c32{cur32_d.get(), n, s, n, Space::device};
    MvView<float> n32{next32_d.get(), n, s, n, Space::device};
    if (kc == 0) dev->step32(1.3, c32, -0.2, 0.6, n32, MvView<const float>{r32_d.get(), n, s, n, Space::device}, f_d.get());
    else detail::launch_step32_shape(kc, g, n, rp.get(), ci.get(), v.get(), 1.3, c32, -0.2, 0.6, n32, nullptr);
    device_synchronize();
    std::vector<float> got(prev32.size());
    copy_bytes(got.data(), Space::host, next32_d.get(), Space::device, got.size() * 4);
    return got;
  };
  auto rel32 = [&](const std::vector<float>& got, const std::vector<float>& ref) {
    double diff = 0, nr = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      diff += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]), nr += double(ref[i]) * ref[i];
    return std::sqrt(diff / std::max(nr, 1e-300));
  };
  EXPECT_LT(rel32(run32(0, 0), want32), 2e-6) << "fp32 default, s " << s;
  // Without r (the shapes' hook): against the host without r.
  std::vector<float> want32b = prev32;
  host->step32(1.3, MvView<const float>{cur32.data(), n, s, n, Space::host}, -0.2, 0.6,
               MvView<float>{want32b.data(), n, s, n, Space::host}, MvView<const float>{}, nullptr);
  for (auto [kc, g] : {std::pair{8, 1}, {4, 1}, {2, 1}, {8, 2}, {4, 2}, {4, 4}, {2, 2}, {16, 1}, {16, 2}})
    EXPECT_LT(rel32(run32(kc, g), want32b), 2e-6) << "fp32 kc " << kc << " g " << g << " s " << s;
}

TEST(ChebyshevStepKernel, EveryShapeMatchesTheHostReference) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  // 4999 rows (not a multiple of 32, 64 or 128), mean 7 entries, 5 rows of 300, every 97th empty.
  const Csr<double> a = test::random_skewed(4999, 4999, 7, 5, 300, 97, 21);
  for (std::int64_t s : {1, 3, 5, 11, 24}) check_step(a, s, 100 + static_cast<unsigned>(s));
}

TEST(ChebyshevStepKernel, PastTwoToTheTwentyOneRows) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  const std::int64_t n = (std::int64_t(1) << 21) + 37;
  const Csr<double> a = test::random_skewed(n, n, 4, 0, 0, 0, 22);
  check_step(a, 3, 7);
}


// ---- The bsr_block operator kernel (A·X through the BSR step, b = 0 and c = 0): forced on each
// natural block size, and chosen by the plan for 3×3 blocks of long rows; X with ld = n + 3, Y
// NaN-poisoned with ld = m + 5 (padding rows must stay untouched); its device bytes as predicted;
// its block step is the operator's A.
TEST(SpmmGpu, BsrBlockOperatorIsEquivalentToRef) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  for (int b : {2, 3, 4, 6}) {
    const Csr<double> a = test::random_blocked(1237, b, 9, 97, 150, 53, 0.1, 80 + static_cast<unsigned>(b));
    for (int k : kCols) {
      OperatorOptions opt;
      opt.kernel = SpmmKernel::bsr_block;
      opt.expected_cols = k;
      auto op = make_sparse_operator(a, Backend::cuda, opt);
      ASSERT_EQ(op->plan().kernel, SpmmKernel::bsr_block);
      ASSERT_EQ(op->plan().block_h, b);
      ASSERT_NE(op->block_step(), nullptr);
      EXPECT_EQ(op->device_bytes(), predict_device_bytes(a, op->plan())) << "b " << b;
      const Check c = run_and_compare(a, k, 300 + static_cast<unsigned>(k), [&](const double* x, std::int64_t ldx,
                                                                                 double* y, std::int64_t ldy) {
        op->apply(MvView<const double>{x, a.ncols, k, ldx, Space::device},
                  MvView<double>{y, a.nrows, k, ldy, Space::device});
      });
      expect_ok(c, 1e-13, false, "bsr_block b=" + std::to_string(b) + " N=" + std::to_string(k));
    }
  }
  // The automatic plan: 3×3 blocks of ~27 entries a row (8×4 fill well below 0.75).
  const Csr<double> a = test::random_blocked(3001, 3, 9, 0, 0, 0, 0.0, 90);
  OperatorOptions opt;
  opt.expected_cols = 24;
  auto op = make_sparse_operator(a, Backend::cuda, opt);
  EXPECT_EQ(op->plan().kernel, SpmmKernel::bsr_block) << op->plan().describe();
  const Check c = run_and_compare(a, 24, 7, [&](const double* x, std::int64_t ldx, double* y, std::int64_t ldy) {
    op->apply(MvView<const double>{x, a.ncols, 24, ldx, Space::device}, MvView<double>{y, a.nrows, 24, ldy, Space::device});
  });
  expect_ok(c, 1e-13, false, "bsr_block automatic");
  // A matrix without natural blocks cannot be forced onto it.
  opt.kernel = SpmmKernel::bsr_block;
  EXPECT_THROW(make_sparse_operator(mats().skewed, Backend::cuda, opt), InvalidArgument);
}

// ---- The BSR step (spmm/chebyshev_step.cu, slices of 32 block rows) against the host CSR step:
// b = 2, 3, 4, 6; block rows not a multiple of the slice or of a thread block, empty and long
// block rows (slices padded), partial blocks; fp64 step with c = 0 on a NaN-poisoned `next`, with
// e and d; b = 3 in every bench shape; the fp32 rung with r and f; A stored in fp32 against the host
// step on A's values rounded to fp32.
double rel_diff(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, nw = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return INFINITY;
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    nw += want[i] * want[i];
  }
  return std::sqrt(diff / std::max(nw, 1e-300));
}

void check_bsr_step(const Csr<double>& a, int b, std::int64_t s, unsigned seed) {
  const std::int64_t n = a.nrows;
  const BsrBlocks bs = to_bsr_blocks(a, b);
  auto host = make_chebyshev_step(a, Backend::cpu, Precision::fp64, nullptr);
  auto dev = make_chebyshev_step_bsr(bs, Precision::fp64, nullptr);
  const std::vector<double> cur = test::random_vector(static_cast<std::size_t>(n * s), seed);
  const std::vector<double> prev = test::random_vector(static_cast<std::size_t>(n * s), seed + 1);
  const std::vector<double> r = test::random_vector(static_cast<std::size_t>(n * s), seed + 2);
  std::vector<double> d = test::random_vector(static_cast<std::size_t>(n), seed + 3);
  for (double& x : d) x = 1.0 + 0.5 * x;
  DeviceArray<double> cur_d(cur), r_d(r), d_d(d), next_d(static_cast<std::size_t>(n * s));
  auto hv = [&](const std::vector<double>& x) { return MvView<const double>{x.data(), n, s, n, Space::host}; };
  auto dv = [&](const DeviceArray<double>& x) { return MvView<const double>{x.get(), n, s, n, Space::device}; };
  auto fetch = [&] {
    std::vector<double> got(prev.size());
    copy_bytes(got.data(), Space::host, next_d.get(), Space::device, got.size() * 8);
    return got;
  };
  const StepCase cases[] = {{0.7, -0.3, 0.0, 0.0, false}, {1.9, 0.4, -0.8, 0.0, false}, {-0.6, 1.1, 0.5, 0.25, true}};
  for (const StepCase& k : cases) {
    std::vector<double> want = k.c == 0.0 ? std::vector<double>(prev.size(), 0.0) : prev;
    host->step(k.a, hv(cur), k.b, k.c, MvView<double>{want.data(), n, s, n, Space::host}, k.e, hv(r),
               k.with_d ? d.data() : nullptr);
    auto load_next = [&] {
      std::vector<double> init = k.c == 0.0 ? std::vector<double>(prev.size(), kNaN) : prev;
      copy_bytes(next_d.get(), Space::device, init.data(), Space::host, init.size() * 8);
    };
    load_next();
    dev->step(k.a, dv(cur_d), k.b, k.c, MvView<double>{next_d.get(), n, s, n, Space::device}, k.e,
              dv(r_d), k.with_d ? d_d.get() : nullptr);
    device_synchronize();
    EXPECT_LT(rel_diff(fetch(), want), 1e-14) << "b " << b << " s " << s << " c " << k.c;
    if (b != 3 || k.e != 0.0 || k.with_d) continue;  // the shapes' hook takes neither
    for (auto [kc, g] : {std::pair{8, 1}, {4, 1}, {4, 2}, {8, 2}, {2, 2}, {12, 2}, {16, 2}}) {
      load_next();
      detail::launch_bsr_step_shape(*dev, 64, kc, g, k.a, cur_d.get(), n, k.b, k.c, next_d.get(), n, s);
      device_synchronize();
      EXPECT_LT(rel_diff(fetch(), want), 1e-14) << "b 3 kc " << kc << " g " << g << " s " << s;
    }
  }
  // The step made straight from A, a piece at a time through pinned buffers (the operator's
  // build): bit for bit the step made from the host blocks, on a NaN-poisoned output, in both
  // storages (PastTwoToTheTwentyOneRows: several pieces).
  for (const Precision st : {Precision::fp64, Precision::fp32}) {
    auto from_blocks = make_chebyshev_step_bsr(bs, st, nullptr);
    auto from_a = make_chebyshev_step_bsr(a, b, st, nullptr);
    std::vector<double> out[2];
    for (int i = 0; i < 2; ++i) {
      const std::vector<double> poison(prev.size(), kNaN);
      copy_bytes(next_d.get(), Space::device, poison.data(), Space::host, poison.size() * 8);
      (i ? from_a : from_blocks)->step(0.7, dv(cur_d), -0.3, 0.0, MvView<double>{next_d.get(), n, s, n, Space::device},
                                       0.0, dv(r_d), nullptr);
      device_synchronize();
      out[i] = fetch();
    }
    EXPECT_LT(rel_diff(out[1], out[0]), 1e-300) << "from A, storage " << to_string(st) << ", b " << b << " s " << s;
    EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * 8), 0) << "b " << b << " s " << s;
  }
  EXPECT_THROW(make_chebyshev_step_bsr(a, 5, Precision::fp64, nullptr), InvalidArgument);
  EXPECT_THROW(make_chebyshev_step_bsr(a, b, Precision::fp16, nullptr), InvalidArgument);
  // A stored in fp32 (the preconditioner's step): the host step on the rounded values.
  {
    Csr<double> ar = a;
    for (double& v : ar.values) v = static_cast<double>(static_cast<float>(v));
    auto host_r = make_chebyshev_step(ar, Backend::cpu, Precision::fp64, nullptr);
    auto dev32 = make_chebyshev_step_bsr(bs, Precision::fp32, nullptr);
    std::vector<double> want = prev;
    host_r->step(1.9, hv(cur), 0.4, -0.8, MvView<double>{want.data(), n, s, n, Space::host}, 0.25, hv(r), d.data());
    copy_bytes(next_d.get(), Space::device, prev.data(), Space::host, prev.size() * 8);
    dev32->step(1.9, dv(cur_d), 0.4, -0.8, MvView<double>{next_d.get(), n, s, n, Space::device}, 0.25, dv(r_d),
                d_d.get());
    device_synchronize();
    EXPECT_LT(rel_diff(fetch(), want), 1e-14) << "fp32 storage, b " << b << " s " << s;
  }
  // The fp32 rung: fp32 blocks and sums, r weighted per column by f, against the host's fp32 step.
  std::vector<float> cur32(cur.begin(), cur.end()), prev32(prev.begin(), prev.end()), r32(r.begin(), r.end());
  const std::vector<double> f = test::random_vector(static_cast<std::size_t>(s), seed + 4);
  DeviceArray<float> cur32_d(cur32), r32_d(r32), next32_d(prev32.size());
  DeviceArray<double> f_d(f);
  auto rel32 = [&](const std::vector<float>& ref) {
    std::vector<float> got(prev32.size());
    copy_bytes(got.data(), Space::host, next32_d.get(), Space::device, got.size() * 4);
    double diff = 0, nr = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(got[i])) return double(INFINITY);
      diff += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]), nr += double(ref[i]) * ref[i];
    }
    return std::sqrt(diff / std::max(nr, 1e-300));
  };
  for (const bool with_r : {true, false}) {
    std::vector<float> want32 = prev32;
    host->step32(1.3, MvView<const float>{cur32.data(), n, s, n, Space::host}, -0.2, 0.6,
                 MvView<float>{want32.data(), n, s, n, Space::host},
                 with_r ? MvView<const float>{r32.data(), n, s, n, Space::host} : MvView<const float>{},
                 with_r ? f.data() : nullptr);
    copy_bytes(next32_d.get(), Space::device, prev32.data(), Space::host, prev32.size() * 4);
    dev->step32(1.3, MvView<const float>{cur32_d.get(), n, s, n, Space::device}, -0.2, 0.6,
                MvView<float>{next32_d.get(), n, s, n, Space::device},
                with_r ? MvView<const float>{r32_d.get(), n, s, n, Space::device} : MvView<const float>{},
                with_r ? f_d.get() : nullptr);
    device_synchronize();
    EXPECT_LT(rel32(want32), 2e-6) << "fp32 rung, b " << b << " s " << s << " r " << with_r;
    if (b != 3 || with_r) continue;
    for (auto [kc, g] : {std::pair{8, 1}, {4, 1}, {4, 2}, {8, 2}, {2, 2}, {12, 2}, {16, 2}}) {
      copy_bytes(next32_d.get(), Space::device, prev32.data(), Space::host, prev32.size() * 4);
      detail::launch_bsr_step_shape(*dev, 32, kc, g, 1.3, cur32_d.get(), n, -0.2, 0.6, next32_d.get(), n, s);
      device_synchronize();
      EXPECT_LT(rel32(want32), 2e-6) << "fp32 rung, b 3 kc " << kc << " g " << g << " s " << s;
    }
  }
}

TEST(BsrStepKernel, EveryBlockSizeMatchesTheHostReference) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  // 1237 block rows (not a multiple of 32 or 64), ~9 blocks a block row, every 97th block row 150
  // blocks (its slice padded), every 53rd empty, 10 % of the entries dropped.
  for (int b : {2, 3, 4, 6}) {
    const Csr<double> a = test::random_blocked(1237, b, 9, 97, 150, 53, 0.1, 70 + static_cast<unsigned>(b));
    for (std::int64_t s : {1, 3, 5, 11, 24, 32, 40}) check_bsr_step(a, b, s, 200 + static_cast<unsigned>(s));
  }
}

TEST(BsrStepKernel, PastTwoToTheTwentyOneRows) {
  TCSOLVE_SKIP_WITHOUT_GPU();
  // 699,063 block rows of 3: 2²¹ + 37 rows.
  const Csr<double> a = test::random_blocked(699063, 3, 1, 0, 0, 0, 0.0, 23);
  ASSERT_EQ(a.nrows, (std::int64_t(1) << 21) + 37);
  check_bsr_step(a, 3, 3, 9);
}

}  // namespace
}  // namespace tcsolve
