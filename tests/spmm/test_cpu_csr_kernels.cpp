// The CPU's CSR kernels (spmm/cpu_csr_kernels.hpp) against simple loops: odd sizes (not multiples
// of the 4-row tiles, the 4-wide vectors or the 32-column chunks), 1 to 70 columns, empty and
// long rows, rectangular A, leading dimensions above the rows, outputs poisoned with NaN, blocks
// not read when their coefficient is 0, bitwise the same results on one thread as on all, and
// through either staging of X (the ring and the whole block, far entries, streamed stores).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/csr.hpp"
#include "core/parallel.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/cpu_csr_kernels.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/spmm/spmm_test_util.hpp"

namespace tcsolve {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
std::vector<T> random_block(std::int64_t ld, std::int64_t k, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(ld * k));
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

// Y = A·X, the plain triple loop in long double.
std::vector<double> spmm_loop(const Csr<double>& a, const std::vector<double>& x, std::int64_t ldx, std::int64_t k) {
  std::vector<double> y(static_cast<std::size_t>(a.nrows * k));
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      long double s = 0;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        s += static_cast<long double>(a.values[p]) * x[a.col_idx[p] + j * ldx];
      y[i + j * a.nrows] = static_cast<double>(s);
    }
  return y;
}

// |Y(i, j) − want(i, j)| ≤ (len_i + 3)·tol·(Σ_p |A(i, p)·X(p, j)| + tiny): the rounding bound of
// a sum of len_i products in order.
void expect_close(const Csr<double>& a, const std::vector<double>& x, std::int64_t ldx, const double* y,
                  std::int64_t ldy, const std::vector<double>& want, std::int64_t k, double tol) {
  int bad = 0;
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      double scale = 1e-300;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        scale += std::abs(a.values[p] * x[a.col_idx[p] + j * ldx]);
      const double got = y[i + j * ldy], w = want[i + j * a.nrows];
      const double len = static_cast<double>(a.row_ptr[i + 1] - a.row_ptr[i]);
      if (!(std::abs(got - w) <= (len + 3) * tol * scale) && ++bad <= 5)
        ADD_FAILURE() << "(" << i << ", " << j << ") of " << a.nrows << "x" << k << ": " << got << " vs " << w;
    }
  EXPECT_EQ(bad, 0);
}

TEST(CpuCsrKernels, SpmmMatchesTheLoopAtOddShapes) {
  // m × n with empty rows (every 7th from 5), a few long rows, 1 to 70 columns.
  for (std::int64_t m : {1, 3, 37, 1003}) {
    for (std::int64_t n : {m, m + 13}) {
      const Csr<double> a = test::random_skewed(m, n, 5, m > 100 ? 3 : 0, 300, 7, static_cast<unsigned>(m + n));
      detail::CpuCsrKernels kern(a);
      for (std::int64_t k : {1, 2, 3, 4, 5, 7, 24, 32, 33, 37, 70}) {
        const std::int64_t ldx = n + 3, ldy = m + 5;  // leading dimensions above the rows
        const auto x = random_block<double>(ldx, k, static_cast<unsigned>(k));
        std::vector<double> y(static_cast<std::size_t>(ldy * k), kNaN);  // poisoned
        kern.spmm({x.data(), n, k, ldx, Space::host}, {y.data(), m, k, ldy, Space::host});
        SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
        expect_close(a, x, ldx, y.data(), ldy, spmm_loop(a, x, ldx, k), k, std::numeric_limits<double>::epsilon());
        // the padding rows of Y (between m and ldy) are not written
        for (std::int64_t j = 0; j < k; ++j)
          for (std::int64_t i = m; i < ldy; ++i) ASSERT_TRUE(std::isnan(y[i + j * ldy]));
      }
    }
  }
}

TEST(CpuCsrKernels, OperatorIsTheKernelAndEmptyShapesWork) {
  const Csr<double> a = test::random_skewed(517, 517, 9, 2, 200, 11, 3);
  auto op = make_sparse_operator(a, Backend::cpu);
  const std::int64_t k = 29;
  const auto x = random_block<double>(517, k, 4);
  std::vector<double> y(517 * k, kNaN);
  op->apply(MvView<const double>{x.data(), 517, k, 517, Space::host}, MvView<double>{y.data(), 517, k, 517, Space::host});
  expect_close(a, x, 517, y.data(), 517, spmm_loop(a, x, 517, k), k, std::numeric_limits<double>::epsilon());
  // bitwise csr_spmm_reference's: the same products and sums in the same order (no FMA)
  std::vector<double> ref(517 * k);
  csr_spmm_reference(a, x.data(), 517, ref.data(), 517, static_cast<int>(k));
  EXPECT_EQ(0, std::memcmp(ref.data(), y.data(), ref.size() * sizeof(double)));
  // zero columns, and an A with no rows
  op->apply(MvView<const double>{x.data(), 517, 0, 517, Space::host}, MvView<double>{y.data(), 517, 0, 517, Space::host});
  Csr<double> e;
  e.ncols = 4;
  detail::CpuCsrKernels ke(e);
  ke.spmm({x.data(), 4, 3, 4, Space::host}, {y.data(), 0, 3, 1, Space::host});
  // shapes that do not match A are refused
  EXPECT_THROW(op->apply(MvView<const double>{x.data(), 516, k, 517, Space::host},
                         MvView<double>{y.data(), 517, k, 517, Space::host}),
               InvalidArgument);
}

// next = a·D·A·cur + b·cur + rc_j·r + c·next, in long double.
template <class T>
std::vector<T> step_loop(const Csr<double>& a, const detail::StepCoefs& s, const std::vector<T>& cur, const std::vector<T>& next,
                         const std::vector<T>& r, std::int64_t ld, std::int64_t k) {
  std::vector<T> out(next);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      long double acc = 0;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        acc += static_cast<long double>(static_cast<T>(a.values[p])) * cur[a.col_idx[p] + j * ld];
      long double o = s.a * (s.d ? s.d[i] : 1.0) * acc + s.b * static_cast<long double>(cur[i + j * ld]);
      if (s.f || s.e != 0) o += (s.f ? s.f[j] : s.e) * static_cast<long double>(r[i + j * ld]);
      if (s.c != 0) o += s.c * static_cast<long double>(next[i + j * ld]);
      out[i + j * ld] = static_cast<T>(o);
    }
  return out;
}

template <class T>
void check_step(const Csr<double>& a, const detail::CpuCsrKernels& kern, detail::StepCoefs s, std::int64_t k, double tol) {
  const std::int64_t n = a.nrows, ld = n + 2;
  const auto cur = random_block<T>(ld, k, 11);
  auto r = random_block<T>(ld, k, 12), next = random_block<T>(ld, k, 13);
  // a block whose coefficient is 0 is not read: NaN there must not reach the result
  if (s.c == 0)
    for (auto& v : next) v = static_cast<T>(kNaN);
  if (!s.f && s.e == 0)
    for (auto& v : r) v = static_cast<T>(kNaN);
  const auto want = step_loop<T>(a, s, cur, next, r, ld, k);
  const auto before = next;
  kern.step(s, MvView<const T>{cur.data(), n, k, ld, Space::host}, MvView<T>{next.data(), n, k, ld, Space::host},
            MvView<const T>{r.data(), n, k, ld, Space::host});
  int bad = 0;
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      double scale = 1e-30 + std::abs(s.b * cur[i + j * ld]);
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        scale += std::abs(s.a * (s.d ? s.d[i] : 1.0) * a.values[p] * cur[a.col_idx[p] + j * ld]);
      if (s.f || s.e != 0) scale += std::abs((s.f ? s.f[j] : s.e) * r[i + j * ld]);
      if (s.c != 0) scale += 1.0;
      const double got = next[i + j * ld], w = want[i + j * ld];
      const double len = static_cast<double>(a.row_ptr[i + 1] - a.row_ptr[i]);
      if (!(std::abs(got - w) <= (len + 5) * tol * scale) && ++bad <= 5)
        ADD_FAILURE() << "(" << i << ", " << j << ") of " << n << "x" << k << ": " << got << " vs " << w;
    }
  EXPECT_EQ(bad, 0);
  for (std::int64_t j = 0; j < k; ++j)  // rows n, n + 1 of each column untouched
    for (std::int64_t i = n; i < ld; ++i)
      EXPECT_EQ(0, std::memcmp(&next[i + j * ld], &before[i + j * ld], sizeof(T)));
}

TEST(CpuCsrKernels, StepMatchesTheLoop) {
  for (std::int64_t n : {1, 6, 37, 1001}) {
    const Csr<double> a = test::random_skewed(n, n, 6, n > 100 ? 2 : 0, 250, 9, static_cast<unsigned>(n));
    detail::CpuCsrKernels kern(a);
    std::vector<double> d(static_cast<std::size_t>(n)), f(80);
    for (std::int64_t i = 0; i < n; ++i) d[i] = 0.5 + static_cast<double>(i % 7) / 7.0;
    for (std::size_t j = 0; j < f.size(); ++j) f[j] = -0.3 + 0.01 * static_cast<double>(j);
    for (std::int64_t k : {1, 2, 3, 5, 24, 33, 70}) {
      SCOPED_TRACE("n " + std::to_string(n) + " k " + std::to_string(k));
      const double eps = std::numeric_limits<double>::epsilon();
      detail::StepCoefs s;
      s.a = 0.7, s.b = -0.2, s.c = -0.9;
      check_step<double>(a, kern, s, k, eps);  // the filter's step
      s.c = 0;
      check_step<double>(a, kern, s, k, eps);  // its first step: next not read
      s.e = 0.25, s.d = d.data();
      check_step<double>(a, kern, s, k, eps);  // the preconditioner's: D and r, next not read
      s.c = 1.5;
      check_step<double>(a, kern, s, k, eps);
      detail::StepCoefs s32;  // the fp32 rung: per-column f, fp32 sums
      s32.a = 0.7, s32.b = -0.2, s32.c = -0.9, s32.f = f.data();
      check_step<float>(a, kern, s32, k, 1.2e-7);
      s32.c = 0, s32.f = nullptr;
      check_step<float>(a, kern, s32, k, 1.2e-7);
    }
  }
}

TEST(CpuCsrKernels, ResultsDoNotDependOnTheThreadCount) {
  const Csr<double> a = test::random_skewed(20011, 20011, 12, 5, 900, 13, 21);
  detail::CpuCsrKernels kern(a);
  ASSERT_GT(kern.parts(), 1);
  const std::int64_t n = a.nrows, k = 27;
  const auto x = random_block<double>(n, k, 22);
  std::vector<double> all(static_cast<std::size_t>(n * k)), one(all.size()), nall, none;
  const MvView<const double> xv{x.data(), n, k, n, Space::host};
  kern.spmm(xv, {all.data(), n, k, n, Space::host});
  detail::StepCoefs s;
  s.a = 0.5, s.b = 0.25, s.c = -1;
  nall = random_block<double>(n, k, 23);
  none = nall;
  kern.step(s, xv, {nall.data(), n, k, n, Space::host}, xv);
  {
    HostShare single(1);  // this thread's loops on one CPU
    kern.spmm(xv, {one.data(), n, k, n, Space::host});
    kern.step(s, xv, {none.data(), n, k, n, Space::host}, xv);
  }
  EXPECT_EQ(0, std::memcmp(all.data(), one.data(), all.size() * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(nall.data(), none.data(), nall.size() * sizeof(double)));
  // and on other part boundaries (the parts of a different thread count)
  for (int parts : {1, 3, 16}) {
    const auto b = detail::balanced_row_parts(a.row_ptr, parts);
    ASSERT_EQ(b.size(), static_cast<std::size_t>(parts) + 1);
    EXPECT_EQ(b.front(), 0);
    EXPECT_EQ(b.back(), n);
    for (int p = 0; p < parts; ++p) {
      EXPECT_LE(b[p], b[p + 1]);
      if (p > 0) EXPECT_EQ(b[p] % 4, 0) << "a tile of 4 rows would straddle two parts";
    }
  }
}

TEST(CpuCsrKernels, BalancedPartsSplitTheWork) {
  // rows 0..999 hold 100 entries each, rows 1000..9999 one: two parts take about half the work
  std::vector<std::int64_t> rp(10001, 0);
  for (std::int64_t i = 0; i < 10000; ++i) rp[i + 1] = rp[i] + (i < 1000 ? 100 : 1);
  const auto b = detail::balanced_row_parts(rp, 2);
  const double total = static_cast<double>(rp.back() + 10000);
  const double first = static_cast<double>(rp[b[1]] + b[1]);
  EXPECT_NEAR(first / total, 0.5, 0.01);
  EXPECT_LT(b[1], 1000);
}

TEST(CpuCsrKernels, HostStepIsTheKernel) {
  // make_chebyshev_step(cpu) through the ChebyshevStep interface, fp64 and fp32
  const Csr<double> a = test::random_skewed(333, 333, 7, 1, 100, 10, 5);
  auto st = make_chebyshev_step(a, Backend::cpu, Precision::fp64, nullptr);
  detail::CpuCsrKernels kern(a);
  const std::int64_t n = 333, k = 19;
  const auto cur = random_block<double>(n, k, 1);
  auto n1 = random_block<double>(n, k, 2), n2 = n1;
  st->step(0.3, {cur.data(), n, k, n, Space::host}, 0.1, -1.0, {n1.data(), n, k, n, Space::host}, 0.0,
           {cur.data(), n, k, n, Space::host});
  detail::StepCoefs s;
  s.a = 0.3, s.b = 0.1, s.c = -1.0;
  kern.step(s, MvView<const double>{cur.data(), n, k, n, Space::host}, MvView<double>{n2.data(), n, k, n, Space::host},
            MvView<const double>{cur.data(), n, k, n, Space::host});
  EXPECT_EQ(0, std::memcmp(n1.data(), n2.data(), n1.size() * sizeof(double)));
}

// A with the entries of every 7th row from 5 removed (empty rows inside a band).
Csr<double> with_empty_rows(const Csr<double>& a) {
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < a.nrows; ++i)
    if (i % 7 != 5)
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        t.push_back({static_cast<std::int32_t>(i), a.col_idx[p], a.values[p]});
  return csr_from_triplets(a.nrows, a.ncols, std::move(t));
}

using Staging = detail::CpuCsrKernels::Staging;

// Y = A·X through a given staging (and streamed stores from `stream` bytes), Y poisoned, ldy > m.
std::vector<double> spmm_with(const Csr<double>& a, Staging st, std::int64_t stream, const std::vector<double>& x,
                              std::int64_t ldx, std::int64_t k, std::int64_t ldy) {
  detail::CpuCsrKernels kern(a);
  kern.force_staging(st);
  kern.set_stream_bytes(stream);
  std::vector<double> y(static_cast<std::size_t>(ldy * k), kNaN);
  kern.spmm({x.data(), a.ncols, k, ldx, Space::host}, {y.data(), a.nrows, k, ldy, Space::host});
  return y;
}

TEST(CpuCsrKernels, RingStagingIsBitwiseTheWholeOne) {
  // banded A (square, wider, taller; empty rows; sizes off the 4-row tiles and 64-row blocks),
  // and a random one forced onto a ring as wide as its columns: 1 to 33 columns, through the ring
  // and the whole staging, plain and streamed stores: bitwise csr_spmm_reference's, Y's padding
  // rows untouched
  const std::vector<Csr<double>> mats = {
      with_empty_rows(test::stretched_band(1003, 1003, 9, 1)), with_empty_rows(test::stretched_band(777, 1301, 5, 2)),
      with_empty_rows(test::stretched_band(1301, 499, 4, 3)), test::random_skewed(613, 613, 6, 2, 150, 7, 4)};
  for (const auto& a : mats) {
    detail::CpuCsrKernels probe(a);
    EXPECT_GT(probe.ring_rows(), 0);
    for (std::int64_t k = 1; k <= 33; ++k) {
      SCOPED_TRACE(std::to_string(a.nrows) + "x" + std::to_string(a.ncols) + " k " + std::to_string(k));
      const std::int64_t ldx = a.ncols + 3, ldy = a.nrows + 5;
      const auto x = random_block<double>(ldx, k, static_cast<unsigned>(k + 40));
      std::vector<double> ref(static_cast<std::size_t>(ldy * k), kNaN);
      csr_spmm_reference(a, x.data(), ldx, ref.data(), ldy, static_cast<int>(k));
      for (Staging st : {Staging::ring, Staging::whole})
        for (std::int64_t stream : {std::int64_t(1) << 40, std::int64_t(0)}) {
          const auto y = spmm_with(a, st, stream, x, ldx, k, ldy);
          for (std::int64_t j = 0; j < k; ++j) {
            ASSERT_EQ(0, std::memcmp(ref.data() + j * ldy, y.data() + j * ldy, sizeof(double) * a.nrows))
                << "column " << j << (st == Staging::ring ? " ring" : " whole") << " stream " << stream;
            for (std::int64_t i = a.nrows; i < ldy; ++i) ASSERT_TRUE(std::isnan(y[i + j * ldy]));
          }
        }
    }
  }
}

TEST(CpuCsrKernels, StreamedYAcrossPartsAndLinesIsBitwiseTheReference) {
  // Many parts (at least 2 a thread) and columns of Y starting anywhere in a cache line (ldy = m
  // + 1, + 3, + 8: the streamed flush keeps each block's last rows and streams them with the next
  // block's first ones, for Y's first 64 columns; plain stores at part ends and past column 64):
  // ring and whole staging, up to 70 columns (three chunks), Y's padding rows untouched.
  const Csr<double> a = with_empty_rows(test::stretched_band(40003, 40003, 9, 5));
  detail::CpuCsrKernels probe(a);
  ASSERT_GE(probe.parts(), 4);
  ASSERT_GT(probe.ring_rows(), 0);
  for (std::int64_t k : {3, 8, 33, 70}) {
    const std::int64_t ldx = a.ncols + 1;
    const auto x = random_block<double>(ldx, k, static_cast<unsigned>(k + 90));
    for (std::int64_t pad : {1, 3, 8}) {
      SCOPED_TRACE("k " + std::to_string(k) + " ldy " + std::to_string(a.nrows + pad));
      const std::int64_t ldy = a.nrows + pad;
      std::vector<double> ref(static_cast<std::size_t>(ldy * k), kNaN);
      csr_spmm_reference(a, x.data(), ldx, ref.data(), ldy, static_cast<int>(k));
      for (Staging st : {Staging::ring, Staging::whole}) {
        const auto y = spmm_with(a, st, 0, x, ldx, k, ldy);
        for (std::int64_t j = 0; j < k; ++j) {
          ASSERT_EQ(0, std::memcmp(ref.data() + j * ldy, y.data() + j * ldy, sizeof(double) * a.nrows))
              << "column " << j << (st == Staging::ring ? " ring" : " whole");
          for (std::int64_t i = a.nrows; i < ldy; ++i) ASSERT_TRUE(std::isnan(y[i + j * ldy]));
        }
      }
    }
  }
}

TEST(CpuCsrKernels, RingStagingStepIsBitwiseTheWholeOne) {
  // the fused step, fp64 and fp32, through the ring and the whole staging: the same bits
  const Csr<double> a = with_empty_rows(test::stretched_band(1101, 1101, 7, 5));
  std::vector<double> d(1101), f(40);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = 0.5 + static_cast<double>(i % 5) / 5.0;
  for (std::size_t j = 0; j < f.size(); ++j) f[j] = 0.1 + 0.01 * static_cast<double>(j);
  const std::int64_t n = a.nrows, ld = n + 2;
  for (std::int64_t k : {1, 2, 3, 5, 8, 24, 33}) {
    SCOPED_TRACE("k " + std::to_string(k));
    const auto cur = random_block<double>(ld, k, 31), r = random_block<double>(ld, k, 32);
    const auto cur32 = random_block<float>(ld, k, 33), r32 = random_block<float>(ld, k, 34);
    std::vector<double> out[2];
    std::vector<float> out32[2];
    for (int m = 0; m < 2; ++m) {
      detail::CpuCsrKernels kern(a);
      kern.force_staging(m == 0 ? Staging::ring : Staging::whole);
      detail::StepCoefs s;
      s.a = 0.7, s.b = -0.2, s.c = -0.9, s.e = 0.3, s.d = d.data();
      out[m] = random_block<double>(ld, k, 35);
      kern.step(s, MvView<const double>{cur.data(), n, k, ld, Space::host},
                MvView<double>{out[m].data(), n, k, ld, Space::host}, MvView<const double>{r.data(), n, k, ld, Space::host});
      detail::StepCoefs s32;
      s32.a = 0.7, s32.b = -0.2, s32.c = -0.9, s32.f = f.data();
      out32[m] = random_block<float>(ld, k, 36);
      kern.step(s32, MvView<const float>{cur32.data(), n, k, ld, Space::host},
                MvView<float>{out32[m].data(), n, k, ld, Space::host}, MvView<const float>{r32.data(), n, k, ld, Space::host});
    }
    EXPECT_EQ(0, std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(double)));
    EXPECT_EQ(0, std::memcmp(out32[0].data(), out32[1].data(), out32[0].size() * sizeof(float)));
    // and the ring's step is the loop's (the whole one's is checked above)
    detail::StepCoefs s;
    s.a = 0.7, s.b = -0.2, s.c = -0.9, s.e = 0.3, s.d = d.data();
    detail::CpuCsrKernels kern(a);
    kern.force_staging(Staging::ring);
    check_step<double>(a, kern, s, k, std::numeric_limits<double>::epsilon());
  }
}

TEST(CpuCsrKernels, RingIsPickedForBandsOnly) {
  // a band: a ring of about its width, picked for 24 columns; one far entry (row 10 reaching the
  // last column) widens its part's window to all of X's rows: a ring that wide is still right
  const Csr<double> band = test::random_band(20000, 30, 7);
  detail::CpuCsrKernels kb(band);
  EXPECT_GT(kb.ring_rows(), 0);
  EXPECT_LE(kb.ring_rows(), 4 * 64 + 64);
  EXPECT_TRUE(kb.staging_for(24, sizeof(double)) == Staging::ring);
  EXPECT_TRUE(kb.staging_for(1, sizeof(double)) == Staging::whole);  // one column: X itself
  kb.set_ring_budget(1024);
  EXPECT_TRUE(kb.staging_for(24, sizeof(double)) == Staging::whole);  // over the budget
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < band.nrows; ++i)
    for (std::int64_t p = band.row_ptr[i]; p < band.row_ptr[i + 1]; ++p)
      t.push_back({static_cast<std::int32_t>(i), band.col_idx[p], band.values[p]});
  t.push_back({10, 19999, 1.0});
  const Csr<double> far = csr_from_triplets(20000, 20000, std::move(t));
  detail::CpuCsrKernels kf(far);
  EXPECT_GT(kf.ring_rows(), 19000);
  const auto x = random_block<double>(20000, 24, 8);
  std::vector<double> ref(20000 * 24);
  csr_spmm_reference(far, x.data(), 20000, ref.data(), 20000, 24);
  const auto y = spmm_with(far, Staging::ring, 0, x, 20000, 24, 20000);
  EXPECT_EQ(0, std::memcmp(ref.data(), y.data(), ref.size() * sizeof(double)));
}

TEST(CpuCsrKernels, FarEntriesReadXDirectly) {
  // a band with long edges (every 97th row reaching 5000 columns away, the graph of roads with a
  // few long links) under a 256 KB budget: the ring holds the band of 99 % of the entries, the
  // long edges read X's columns; products and steps bitwise csr_spmm_reference's / the whole
  // staging's, 1 to 33 columns, and a random matrix forced onto such a ring (most entries far)
  std::vector<Triplet<double>> t;
  const std::int64_t n = 12347;
  const Csr<double> band = with_empty_rows(test::random_band(n, 6, 9));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = band.row_ptr[i]; p < band.row_ptr[i + 1]; ++p)
      t.push_back({static_cast<std::int32_t>(i), band.col_idx[p], band.values[p]});
  for (std::int64_t i = 3; i < n; i += 97) {
    t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>((i + 5000) % n), 0.5});
    t.push_back({static_cast<std::int32_t>((i + 5000) % n), static_cast<std::int32_t>(i), 0.5});
  }
  const Csr<double> roads = csr_from_triplets(n, n, std::move(t));
  const Csr<double> scattered = test::random_skewed(3001, 3001, 6, 2, 150, 7, 12);
  ::setenv("TCSOLVE_CPU_RING_KB", "256", 1);
  detail::CpuCsrKernels probe(roads);
  EXPECT_GT(probe.ring_rows(), 0);
  EXPECT_LT(probe.ring_rows(), 1024);
  EXPECT_TRUE(probe.staging_for(24, sizeof(double)) == Staging::ring);
  for (const Csr<double>* a : {&roads, &scattered}) {
    for (std::int64_t k = 1; k <= 33; k += (k < 5 ? 1 : 7)) {
      SCOPED_TRACE("rows " + std::to_string(a->nrows) + " k " + std::to_string(k));
      const std::int64_t ld = a->nrows + 1;
      const auto x = random_block<double>(ld, k, static_cast<unsigned>(k));
      std::vector<double> ref(static_cast<std::size_t>(ld * k), kNaN);
      csr_spmm_reference(*a, x.data(), ld, ref.data(), ld, static_cast<int>(k));
      const auto y = spmm_with(*a, Staging::ring, 0, x, ld, k, ld);
      EXPECT_EQ(0, std::memcmp(ref.data(), y.data(), ref.size() * sizeof(double)));
      std::vector<double> out[2];
      for (int m = 0; m < 2; ++m) {
        detail::CpuCsrKernels kern(*a);
        kern.force_staging(m == 0 ? Staging::ring : Staging::whole);
        detail::StepCoefs s;
        s.a = 0.7, s.b = -0.2, s.c = -0.9;
        out[m] = random_block<double>(ld, k, 5);
        kern.step(s, MvView<const double>{x.data(), a->nrows, k, ld, Space::host},
                  MvView<double>{out[m].data(), a->nrows, k, ld, Space::host}, MvView<const double>{});
      }
      EXPECT_EQ(0, std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(double)));
    }
  }
  ::unsetenv("TCSOLVE_CPU_RING_KB");
}

}  // namespace
}  // namespace tcsolve

namespace tcsolve {
namespace {

// The step by rows (the CPU filter's layout): to_rows / from_rows invert each other (pads zeroed,
// the column block's poisoned entries overwritten), and step_rows on a column suffix [j0, j1) is
// bitwise the column-major step on those columns, with next's other columns untouched; for odd
// sizes, suffixes inside and across 4-wide vectors and 32-column chunks, with and without next.
TEST(CpuCsrKernels, StepByRowsIsBitwiseTheColumnStep) {
  for (std::int64_t n : {1, 7, 261, 1101}) {
    const Csr<double> a = n > 1000 ? with_empty_rows(test::stretched_band(n, n, 7, 5))
                                   : test::random_skewed(n, n, 6, 0, 250, 9, static_cast<unsigned>(n));
    detail::CpuCsrKernels kern(a);
    for (std::int64_t k : {1, 3, 5, 24, 33, 70}) {
      const std::int64_t ldr = (k + 3) / 4 * 4, ld = n + 3;
      SCOPED_TRACE("n " + std::to_string(n) + " k " + std::to_string(k));
      const auto x = random_block<double>(ld, k, 41), y = random_block<double>(ld, k, 42);
      std::vector<double> xr(static_cast<std::size_t>(n * ldr), kNaN), yr(xr.size(), kNaN);
      kern.to_rows(MvView<const double>{x.data(), n, k, ld, Space::host}, xr.data(), ldr);
      kern.to_rows(MvView<const double>{y.data(), n, k, ld, Space::host}, yr.data(), ldr);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t c = 0; c < ldr; ++c)
          ASSERT_EQ(xr[i * ldr + c], c < k ? x[i + c * ld] : 0.0) << i << ", " << c;
      std::vector<double> back(static_cast<std::size_t>(ld * k), kNaN);
      kern.from_rows(xr.data(), ldr, MvView<double>{back.data(), n, k, ld, Space::host});
      for (std::int64_t c = 0; c < k; ++c)
        EXPECT_EQ(0, std::memcmp(back.data() + c * ld, x.data() + c * ld, n * sizeof(double)));
      for (double c : {0.0, -0.9})
        for (std::int64_t j0 : {std::int64_t(0), k / 2, k - 1}) {
          SCOPED_TRACE("c " + std::to_string(c) + " j0 " + std::to_string(j0));
          detail::StepCoefs s;
          s.a = 0.7, s.b = -0.2, s.c = c;
          std::vector<double> out_r = yr;
          kern.step_rows(s, xr.data(), out_r.data(), ldr, j0, k);
          std::vector<double> out_c = y;
          const std::int64_t cnt = k - j0;
          kern.step(s, MvView<const double>{x.data() + j0 * ld, n, cnt, ld, Space::host},
                    MvView<double>{out_c.data() + j0 * ld, n, cnt, ld, Space::host},
                    MvView<const double>{nullptr, n, cnt, ld, Space::host});
          std::vector<double> got(static_cast<std::size_t>(ld * k), kNaN);
          kern.from_rows(out_r.data(), ldr, MvView<double>{got.data(), n, k, ld, Space::host});
          for (std::int64_t col = 0; col < k; ++col)
            EXPECT_EQ(0, std::memcmp(got.data() + col * ld, out_c.data() + col * ld, n * sizeof(double))) << col;
          for (std::int64_t i = 0; i < n; ++i)  // the pads stay as they were (zero)
            for (std::int64_t col = k; col < ldr; ++col) ASSERT_EQ(out_r[i * ldr + col], 0.0);
        }
    }
  }
  // refused: an r term, a row scale, columns past the row
  const Csr<double> a = test::random_skewed(9, 9, 3, 0, 250, 9, 3);
  detail::CpuCsrKernels kern(a);
  std::vector<double> z(9 * 8, 0.0), o(9 * 8, 0.0);
  detail::StepCoefs s;
  s.a = 1, s.e = 0.5;
  EXPECT_THROW(kern.step_rows(s, z.data(), o.data(), 8, 0, 8), Error);
  s.e = 0;
  EXPECT_THROW(kern.step_rows(s, z.data(), o.data(), 8, 0, 9), Error);
  EXPECT_THROW(kern.step_rows(s, z.data(), o.data(), 6, 0, 6), Error);
}

}  // namespace
}  // namespace tcsolve
