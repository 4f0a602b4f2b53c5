// CUDA twin of spmm/chebyshev_step.cpp: next = a·A·cur + b·cur + c·next + e·r, row-split.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/device_buffer.hpp"
#include "core/error.hpp"
#include "core/trace.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/csr_row_loop.cuh"

namespace tcsolve {

namespace {

constexpr int kThreads = 128;

// Thread = (row, column group): blockDim = (kThreads/G rows, G groups); a warp holds 32
// consecutive rows of one group (coalesced per column). Each thread runs the passes of KC columns
// at c0 = threadIdx.y·KC, + G·KC, … holding KC accumulators (TV: double for the step, float for
// the fp32 rung) in registers; A's row is re-read (from L1) for each pass (csr_row::passes). Per
// live column cj = c0 + j: out = ad·(A·cur)(row, cj) + b·cur(row, cj) with ad = a·d[row] (a
// without d), then tail(cj, out) adds the precision's r and next terms and stores next(row, cj).
// The body of both step kernels.
template <int KC, int G, int UNROLL, class TV, class TA, class Tail>
__device__ __forceinline__ void step_row(std::int64_t row, const std::int64_t* rp,
                                         const std::int32_t* ci, const TA* v, TV a,
                                         const double* d, const TV* cur, std::int64_t ldc, TV b,
                                         int ncols, Tail&& tail) {
  const std::int64_t p0 = rp[row], p1 = rp[row + 1];
  const TV ad = d ? static_cast<TV>(a * d[row]) : a;
  const auto finish = [&](int c0, int nc, const TV* xc, const TV(&acc)[KC]) {
#pragma unroll
    for (int j = 0; j < KC; ++j)
      if (j < nc) tail(static_cast<std::int64_t>(c0 + j), ad * acc[j] + b * xc[row + j * ldc]);
  };
  csr_row::passes<KC, UNROLL, 1>(p0, 0, p1, static_cast<int>(threadIdx.y) * KC, G * KC, ncols, cur,
                                 ldc, csr_row::GlobalEntries<TV, TA>{v, ci}, finish);
}

template <int G>
__device__ __forceinline__ std::int64_t step_row_index() {
  return static_cast<std::int64_t>(blockIdx.x) * (kThreads / G) + threadIdx.x;
}

// The fp64 step: next = a·D·A·cur + b·cur + c·next + e·r, fp64 accumulation (TA: A's storage).
template <class TA, int KC, int G>
__global__ void __launch_bounds__(kThreads)
    chebyshev_step_kernel(std::int64_t m, const std::int64_t* __restrict__ rp,
                          const std::int32_t* __restrict__ ci, const TA* __restrict__ v, double a,
                          const double* __restrict__ cur, std::int64_t ldc, double b, double c,
                          double* __restrict__ next, std::int64_t ldn, double e,
                          const double* __restrict__ r, std::int64_t ldr,
                          const double* __restrict__ d, int ncols) {
  const std::int64_t row = step_row_index<G>();
  if (row >= m) return;
  const auto tail = [&](std::int64_t cj, double out) {
    // r and next are touched once: streamed past L1 (evict-first), which keeps L1 for X's
    // gathered lines (H200, lap3d:100, 24 columns, shape (4, 2): 248 → 237 µs).
    if (e != 0.0) out += e * __ldcs(r + row + cj * ldr);
    if (c != 0.0) out += c * __ldcs(next + row + cj * ldn);
    __stcs(next + row + cj * ldn, out);
  };
  step_row<KC, G, 4>(row, rp, ci, v, a, d, cur, ldc, b, ncols, tail);
}

// The fp32 rung's step: fp32 blocks and fp32 accumulation (the residual form's Z carries the
// error relative to itself, chebyshev.hpp) and at most 48 registers (10 blocks of 128 per SM):
// ncu on the H200 (lap3d:100, 24 columns) found the fp64-accumulating kernel latency-bound at
// 60 registers, 47 % occupancy, 36 % of DRAM bandwidth, as slow as the fp64 step. Threads as in
// chebyshev_step_kernel; next = a·A·cur + b·cur + c·next + r·diag(f).
template <class TA, int KC, int G>
__global__ void __launch_bounds__(kThreads, 10)
    chebyshev_step32_kernel(std::int64_t m, const std::int64_t* __restrict__ rp,
                            const std::int32_t* __restrict__ ci, const TA* __restrict__ v, float a,
                            const float* __restrict__ cur, std::int64_t ldc, float b, float c,
                            float* __restrict__ next, std::int64_t ldn,
                            const float* __restrict__ r, std::int64_t ldr,
                            const double* __restrict__ f, int ncols) {
  const std::int64_t row = step_row_index<G>();
  if (row >= m) return;
  const auto tail = [&](std::int64_t cj, float out) {
    // (Plain loads here: streaming r and next past L1 as the fp64 kernel does made this
    // kernel slower, 181 → 204 µs on lap3d:100 at 24 columns, H200.)
    if (f) out = fmaf(static_cast<float>(f[cj]), r[row + cj * ldr], out);
    if (c != 0.0f) out = fmaf(c, next[row + cj * ldn], out);
    next[row + cj * ldn] = out;
  };
  const double* no_scale = nullptr;  // no row scaling in the rung
  step_row<KC, G, 2>(row, rp, ci, v, a, no_scale, cur, ldc, b, ncols, tail);
}

unsigned row_blocks(std::int64_t n, int rows_per_block = kThreads) {
  const std::int64_t blocks = (n + rows_per_block - 1) / rows_per_block;
  TCSOLVE_REQUIRE(blocks <= 2147483647, "chebyshev step: more rows than one grid's x dimension holds");
  return static_cast<unsigned>(blocks);
}

// The step kernels' shapes (columns per pass KC, threads per row G): the defaults, and the ones
// bench/step_bench.cu compares (detail::launch_step_shape). H200, 2026-11-25, median of 30 steps,
// % of the copy bandwidth measured in the same run (docs/performance.md):
//   fp64 (4, 2): lap2d:1000 at 48 / 32 columns 68 / 68 %, lap3d:100 at 24 / 32 columns 64 / 63 %;
//        (8, 1), the earlier default: 62 / 63 %, 60 / 59 % (fewer live accumulators, more warps).
//   fp32 (8, 1): 52 / 53 %, 50 / 49 %; (4, 2) and (8, 2) within ±3 % of it, either way.
// Blocks of at most 4 columns (late filters with few active columns, block CG's last columns, one
// right-hand side from Python) take 2 columns per pass so that the second thread of a row has
// work: (2, 2) for 3–4 columns, (2, 1) for 1–2.
struct StepShape {
  int kc = 8, g = 1;
};
constexpr StepShape kStep32{8, 1};
constexpr StepShape step64_shape(std::int64_t cols) {
  return cols > 4 ? StepShape{4, 2} : cols > 2 ? StepShape{2, 2} : StepShape{2, 1};
}

// Bits = 64: chebyshev_step_kernel, 32: the fp32 rung's chebyshev_step32_kernel.
template <int Bits, class TA, int KC, int G, class... Args>
void launch_step_as(std::int64_t n, cudaStream_t st, Args... args) {
  const dim3 grid(row_blocks(n, kThreads / G)), block(kThreads / G, G);
  if constexpr (Bits == 64)
    chebyshev_step_kernel<TA, KC, G><<<grid, block, 0, st>>>(n, args...);
  else
    chebyshev_step32_kernel<TA, KC, G><<<grid, block, 0, st>>>(n, args...);
}

// One instance per shape the bench offers; InvalidArgument for others.
template <int Bits, class TA, class... Args>
void dispatch_step(StepShape sh, std::int64_t n, cudaStream_t st, Args... args) {
  if (sh.kc == 8 && sh.g == 1) return launch_step_as<Bits, TA, 8, 1>(n, st, args...);
  if (sh.kc == 4 && sh.g == 1) return launch_step_as<Bits, TA, 4, 1>(n, st, args...);
  if (sh.kc == 4 && sh.g == 2) return launch_step_as<Bits, TA, 4, 2>(n, st, args...);
  if (sh.kc == 8 && sh.g == 2) return launch_step_as<Bits, TA, 8, 2>(n, st, args...);
  if (sh.kc == 4 && sh.g == 4) return launch_step_as<Bits, TA, 4, 4>(n, st, args...);
  if (sh.kc == 2 && sh.g == 1) return launch_step_as<Bits, TA, 2, 1>(n, st, args...);
  if (sh.kc == 2 && sh.g == 2) return launch_step_as<Bits, TA, 2, 2>(n, st, args...);
  if (sh.kc == 16 && sh.g == 1) return launch_step_as<Bits, TA, 16, 1>(n, st, args...);
  if (sh.kc == 16 && sh.g == 2) return launch_step_as<Bits, TA, 16, 2>(n, st, args...);
  throw InvalidArgument("chebyshev step: no kernel with " + std::to_string(sh.kc) +
                        " columns per pass and " + std::to_string(sh.g) + " threads per row");
}

void launch_step(std::int64_t n, const std::int64_t* rp, const std::int32_t* ci, const void* v,
                 Precision storage, double a, MvView<const double> cur, double b, double c,
                 MvView<double> next, double e, MvView<const double> r, const double* d, void* stream,
                 StepShape sh = {0, 0}) {
  const std::int64_t s = cur.cols;
  TCSOLVE_REQUIRE(cur.rows == n && next.rows == n && next.cols == s &&
                      (e == 0.0 || (r.rows == n && r.cols == s)),
                  "chebyshev step: block shapes differ");
  if (n == 0 || s == 0) return;
  if (sh.kc == 0) sh = step64_shape(s);
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (storage == Precision::fp32)
    dispatch_step<64, float>(sh, n, st, rp, ci, static_cast<const float*>(v), a, cur.data, cur.ld, b, c,
                           next.data, next.ld, e, r.data, r.ld, d, static_cast<int>(s));
  else
    dispatch_step<64, double>(sh, n, st, rp, ci, static_cast<const double*>(v), a, cur.data, cur.ld, b,
                            c, next.data, next.ld, e, r.data, r.ld, d, static_cast<int>(s));
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

// ---- The step on b×b blocks (BSR), stored in slices of 32 block rows (SELL-32 over blocks):
// slot k of a slice holds the k-th block of each of its 32 block rows side by side, so a warp
// (32 consecutive block rows, one column group) reads one slot's indices and each of its b² value
// positions as 128 contiguous bytes (fp32). A block row with fewer blocks than its slice's widest
// is padded with zero blocks on its own block column. (With each block row's blocks contiguous
// instead, H200, elast3d:64 at 24 columns: 624 µs, 19 % of copy, L1 thrashed by 32 lines per
// value load.)
// Thread = (block row, column group), blockDim (kThreads/G, G). Per slot and pass: the b·KC
// entries of X it multiplies are gathered once into registers, then each of the block's b value
// rows is read and applied to all KC columns. TV: vectors and accumulation (fp64 step, fp32
// rung); TA: A's values. A row sums its entries in ascending column order, as the CSR kernels do
// (a padded or partly empty block adds 0·x).
using csr_row::mad;
constexpr std::int64_t kSlice = kBsrSlice;

template <class TV, class TA, int B, int KC, int G>
__global__ void __launch_bounds__(kThreads)
    bsr_step_kernel(std::int64_t mb, const std::int64_t* __restrict__ sp,
                    const std::int32_t* __restrict__ sci, const TA* __restrict__ sv, TV a,
                    const TV* __restrict__ cur, std::int64_t ldc, TV b, TV c, TV* __restrict__ next,
                    std::int64_t ldn, TV e, const TV* __restrict__ r, std::int64_t ldr,
                    const double* __restrict__ d, const double* __restrict__ f, int ncols) {
  const std::int64_t br = static_cast<std::int64_t>(blockIdx.x) * (kThreads / G) + threadIdx.x;
  if (br >= mb) return;
  const std::int64_t slice = br / kSlice, lane = br % kSlice;
  const std::int64_t k0 = sp[slice], k1 = sp[slice + 1], row0 = br * B;
  for (int c0 = static_cast<int>(threadIdx.y) * KC; c0 < ncols; c0 += G * KC) {
    const int nc = min(KC, ncols - c0);
    const TV* xc = cur + static_cast<std::int64_t>(c0) * ldc;
    TV acc[B][KC];
#pragma unroll
    for (int i = 0; i < B; ++i)
#pragma unroll
      for (int j = 0; j < KC; ++j) acc[i][j] = TV(0);
    // The next slot's block column is loaded one slot ahead: the gathers of X wait on it, and
    // at 25–37 % occupancy (registers) the kernel is latency-bound (ncu, H200, elast3d:64 at
    // 24 columns: long-scoreboard stalls, DRAM bytes at the minimum but 25 % of its bandwidth).
    std::int64_t bcol = k0 < k1 ? __ldg(sci + k0 * kSlice + lane) : 0;
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int64_t col0 = bcol * B;
      if (k + 1 < k1) bcol = __ldg(sci + (k + 1) * kSlice + lane);
      TV x[B][KC];
#pragma unroll
      for (int j = 0; j < KC; ++j)
#pragma unroll
        for (int q = 0; q < B; ++q) x[q][j] = j < nc ? __ldg(xc + col0 + q + j * ldc) : TV(0);
      const TA* vp = sv + k * (B * B * kSlice) + lane;
#pragma unroll
      for (int i = 0; i < B; ++i) {
        TV vr[B];
#pragma unroll
        for (int q = 0; q < B; ++q) vr[q] = static_cast<TV>(__ldg(vp + (i * B + q) * kSlice));
#pragma unroll
        for (int j = 0; j < KC; ++j)
#pragma unroll
          for (int q = 0; q < B; ++q) acc[i][j] = mad(vr[q], x[q][j], acc[i][j]);
      }
    }
#pragma unroll
    for (int i = 0; i < B; ++i) {
      const std::int64_t row = row0 + i;
      const TV ad = d ? static_cast<TV>(static_cast<double>(a) * d[row]) : a;
#pragma unroll
      for (int j = 0; j < KC; ++j) {
        if (j < nc) {
          const std::int64_t cj = c0 + j;
          TV out = ad * acc[i][j];
          if (b != TV(0)) out += b * xc[row + j * ldc];  // (b = 0: the operator's A·X)
          const TV rc = f ? static_cast<TV>(f[cj]) : e;
          if (rc != TV(0)) out = mad(rc, r[row + cj * ldr], out);
          if (c != TV(0)) out = mad(c, next[row + cj * ldn], out);
          next[row + cj * ldn] = out;
        }
      }
    }
  }
}

// BSR (block rows contiguous) → slices, for the slices [s0, s1) whose blocks were uploaded from
// block p_base on (ci, v: that piece). Thread = block row (all 32 lanes of the last slice, the
// missing rows' lanes padded too, so that every slot is written); rp: A's block row offsets.
template <class T>
__global__ void slice_blocks_kernel(std::int64_t mb, int bb, std::int64_t s0, std::int64_t s1,
                                    std::int64_t p_base, const std::int64_t* __restrict__ rp,
                                    const std::int32_t* __restrict__ ci, const double* __restrict__ v,
                                    const std::int64_t* __restrict__ sp, std::int32_t* __restrict__ sci,
                                    T* __restrict__ sv) {
  const std::int64_t br = s0 * kSlice + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (br >= s1 * kSlice) return;
  const std::int64_t slice = br / kSlice, lane = br % kSlice;
  const std::int64_t p0 = br < mb ? rp[br] - p_base : 0, cnt = br < mb ? rp[br + 1] - rp[br] : 0;
  for (std::int64_t k = 0; k < sp[slice + 1] - sp[slice]; ++k) {
    const std::int64_t slot = sp[slice] + k;
    const bool real = k < cnt;
    sci[slot * kSlice + lane] = real ? ci[p0 + k] : static_cast<std::int32_t>(br < mb ? br : 0);
    for (int q = 0; q < bb; ++q) sv[(slot * bb + q) * kSlice + lane] = real ? static_cast<T>(v[(p0 + k) * bb + q]) : T(0);
  }
}

// Shapes (KC columns per pass, G threads per block row), b = 3, two threads a block row: fp64
// (8, 2); the fp32 rung (12, 2) for 17–24 columns (one pass each), else (8, 2). H200, elast3d:64,
// µs per step after the index prefetch (bench/step_bench.cu, docs/performance.md): 24 columns
// fp64 (8, 2) 812 / (12, 2) 880, fp32 467 / 448; 32 columns fp64 (8, 2) 878 / (16, 2) 1090, fp32
// 526 / 620. Other b: fp64 (4, 2) for b = 2, (2, 2) for 4 and 6; the fp32 rung (8, 1) for b = 2,
// (4, 1) for 4 and 6 (not measured: no generator makes them). At most 4 columns (the re-check's
// 2): b = 3 (4, 1), one thread a block row (elast3d:40 at 2 columns, fp64: 52 µs against 72 µs
// for (2, 2), whose second thread has no column); other b (2, 2).
StepShape bsr_shape(int bits, int b, std::int64_t cols) {
  if (b == 3 && cols <= 4) return {4, 1};
  if (cols <= 4) return {2, 2};
  if (b == 3) return {bits == 32 && cols > 16 && cols <= 24 ? 12 : 8, 2};
  if (bits == 64) return b == 2 ? StepShape{4, 2} : StepShape{2, 2};
  return b == 2 ? StepShape{8, 1} : StepShape{4, 1};
}

template <class TV, class TA, int B, int KC, int G, class... Args>
void launch_bsr_as(std::int64_t mb, cudaStream_t st, Args... args) {
  const dim3 grid(row_blocks(mb, kThreads / G)), block(kThreads / G, G);
  bsr_step_kernel<TV, TA, B, KC, G><<<grid, block, 0, st>>>(mb, args...);
}

// b = 3 in every bench shape; b = 2, 4, 6 in their default shapes only.
template <class TV, class TA, class... Args>
void dispatch_bsr(int b, StepShape sh, std::int64_t mb, cudaStream_t st, Args... args) {
  if (b == 3) {
    if (sh.kc == 8 && sh.g == 1) return launch_bsr_as<TV, TA, 3, 8, 1>(mb, st, args...);
    if (sh.kc == 4 && sh.g == 1) return launch_bsr_as<TV, TA, 3, 4, 1>(mb, st, args...);
    if (sh.kc == 4 && sh.g == 2) return launch_bsr_as<TV, TA, 3, 4, 2>(mb, st, args...);
    if (sh.kc == 8 && sh.g == 2) return launch_bsr_as<TV, TA, 3, 8, 2>(mb, st, args...);
    if (sh.kc == 2 && sh.g == 2) return launch_bsr_as<TV, TA, 3, 2, 2>(mb, st, args...);
    if (sh.kc == 12 && sh.g == 2) return launch_bsr_as<TV, TA, 3, 12, 2>(mb, st, args...);
    if (sh.kc == 16 && sh.g == 2) return launch_bsr_as<TV, TA, 3, 16, 2>(mb, st, args...);
  } else if (sh.kc == 2 && sh.g == 2) {
    if (b == 2) return launch_bsr_as<TV, TA, 2, 2, 2>(mb, st, args...);
    if (b == 4) return launch_bsr_as<TV, TA, 4, 2, 2>(mb, st, args...);
    if (b == 6) return launch_bsr_as<TV, TA, 6, 2, 2>(mb, st, args...);
  } else if (sh.kc == 4 && sh.g == (std::is_same<TV, double>::value ? 2 : 1)) {
    if (b == 2) return launch_bsr_as<TV, TA, 2, 4, std::is_same<TV, double>::value ? 2 : 1>(mb, st, args...);
    if (b == 4 && !std::is_same<TV, double>::value) return launch_bsr_as<TV, TA, 4, 4, 1>(mb, st, args...);
    if (b == 6 && !std::is_same<TV, double>::value) return launch_bsr_as<TV, TA, 6, 4, 1>(mb, st, args...);
  } else if (sh.kc == 8 && sh.g == 1 && b == 2 && !std::is_same<TV, double>::value) {
    return launch_bsr_as<TV, TA, 2, 8, 1>(mb, st, args...);
  }
  throw InvalidArgument("chebyshev BSR step: no kernel for " + std::to_string(b) + "×" + std::to_string(b) +
                        " blocks with " + std::to_string(sh.kc) + " columns per pass and " +
                        std::to_string(sh.g) + " threads per block row");
}

// Thread = row, a loop over the columns (coalesced per column).
__global__ void residual32_kernel(std::int64_t n, int q, double s, const double* __restrict__ ax,
                                  std::int64_t ldax, const double* __restrict__ x, std::int64_t ldx,
                                  const double* __restrict__ theta, double g, float* __restrict__ r,
                                  std::int64_t ldr, float* __restrict__ z, std::int64_t ldz) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int j = 0; j < q; ++j) {
    const double val = s * ax[i + j * ldax] - theta[j] * x[i + j * ldx];
    r[i + j * ldr] = static_cast<float>(val);
    z[i + j * ldz] = static_cast<float>(g * val);
  }
}

// y may be x: no __restrict__ on them.
__global__ void combine32_kernel(std::int64_t n, int q, const double* x, std::int64_t ldx,
                                 const double* __restrict__ qs, const float* __restrict__ z,
                                 std::int64_t ldz, double* y, std::int64_t ldy) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int j = 0; j < q; ++j) y[i + j * ldy] = qs[j] * x[i + j * ldx] + static_cast<double>(z[i + j * ldz]);
}

// The fp32 rung's calls, shared by both step classes (A in rp/ci/v as `storage`).
struct Rung32 {
  std::int64_t n;
  const std::int64_t* rp;
  const std::int32_t* ci;
  const void* v;
  Precision storage;
  void* stream;

  void residual(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                double g, MvView<float> r, MvView<float> z) const {
    const std::int64_t q = x.cols;
    TCSOLVE_REQUIRE(ax.rows == n && x.rows == n && r.rows == n && z.rows == n && ax.cols == q &&
                        r.cols == q && z.cols == q,
                    "chebyshev step: block shapes differ");
    if (n == 0 || q == 0) return;
    residual32_kernel<<<row_blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        n, static_cast<int>(q), s, ax.data, ax.ld, x.data, x.ld, theta, g, r.data, r.ld, z.data,
        z.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
  void step(double a, MvView<const float> cur, double b, double c, MvView<float> next,
            MvView<const float> r, const double* f, StepShape sh = kStep32) const {
    const std::int64_t q = cur.cols;
    TCSOLVE_REQUIRE(cur.rows == n && next.rows == n && next.cols == q &&
                        (!f || (r.rows == n && r.cols == q)),
                    "chebyshev step: block shapes differ");
    if (n == 0 || q == 0) return;
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    const auto fa = static_cast<float>(a), fb = static_cast<float>(b), fc = static_cast<float>(c);
    const float* rd = f ? r.data : nullptr;
    const std::int64_t ldr = f ? r.ld : 0;
    if (storage == Precision::fp32)
      dispatch_step<32, float>(sh, n, st, rp, ci, static_cast<const float*>(v), fa, cur.data, cur.ld, fb,
                             fc, next.data, next.ld, rd, ldr, f, static_cast<int>(q));
    else
      dispatch_step<32, double>(sh, n, st, rp, ci, static_cast<const double*>(v), fa, cur.data, cur.ld,
                              fb, fc, next.data, next.ld, rd, ldr, f, static_cast<int>(q));
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
  void combine(MvView<const double> x, const double* q, MvView<const float> z, MvView<double> y) const {
    const std::int64_t s = x.cols;
    TCSOLVE_REQUIRE(x.rows == n && z.rows == n && y.rows == n && z.cols == s && y.cols == s,
                    "chebyshev step: block shapes differ");
    if (n == 0 || s == 0) return;
    combine32_kernel<<<row_blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        n, static_cast<int>(s), x.data, x.ld, q, z.data, z.ld, y.data, y.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
};

__global__ void round_to_float_kernel(std::int64_t n, const double* __restrict__ in,
                                      float* __restrict__ out) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(in[i]);
}

// The fused CSR step on A's arrays on the device: the caller's (make_chebyshev_step_view*; no
// copy, but for storage fp32 the values rounded into a copy of ours) or its own copy of A
// (make_cuda_chebyshev_step). Rung32 holds the arrays the kernels read.
class CudaChebyshevStep final : public ChebyshevStep {
 public:
  // On the caller's arrays (nnz: the number of values, read for storage fp32 only).
  CudaChebyshevStep(std::int64_t n, std::int64_t nnz, const std::int64_t* rp, const std::int32_t* ci,
                    const double* v, Precision storage, void* stream)
      : a_{n, rp, ci, v, storage, stream}, view_(true) {
    if (storage != Precision::fp32) return;
    TCSOLVE_REQUIRE(nnz >= 0, "chebyshev step: negative number of entries");
    vals32_ = DeviceArray<float>(static_cast<std::size_t>(nnz));
    a_.v = vals32_.get();
    if (nnz > 0) {
      const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((nnz + 255) / 256, 65535));
      round_to_float_kernel<<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(nnz, v, vals32_.get());
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }
  // On its own copy of A, the values stored as `storage`.
  CudaChebyshevStep(const Csr<double>& a, Precision storage, void* stream)
      : row_ptr_(a.row_ptr), col_(a.col_idx) {
    if (storage == Precision::fp32)
      vals32_ = DeviceArray<float>(std::vector<float>(a.values.begin(), a.values.end()));
    else
      vals64_ = DeviceArray<double>(a.values);
    const void* v = storage == Precision::fp32 ? static_cast<const void*>(vals32_.get())
                                               : static_cast<const void*>(vals64_.get());
    a_ = {a.nrows, row_ptr_.get(), col_.get(), v, storage, stream};
  }
  Space space() const override { return Space::device; }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    launch_step(a_.n, a_.rp, a_.ci, a_.v, a_.storage, a, cur, b, c, next, e, r, d, a_.stream);
  }
  void residual32(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                  double g, MvView<float> r, MvView<float> z) const override {
    a_.residual(s, ax, x, theta, g, r, z);
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
              MvView<const float> r, const double* f) const override {
    a_.step(a, cur, b, c, next, r, f);
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                 MvView<double> y) const override {
    a_.combine(x, q, z, y);
  }
  std::string describe() const override {
    const std::string s = "fused CSR step on the GPU";
    if (!view_) return s + ", A stored in " + to_string(a_.storage);
    return s + ", on the caller's arrays" + (a_.storage == Precision::fp32 ? ", A's values in fp32" : "");
  }

 private:
  Rung32 a_{};
  bool view_ = false;
  DeviceArray<std::int64_t> row_ptr_;  // our copy of A (not for a view)
  DeviceArray<std::int32_t> col_;
  DeviceArray<double> vals64_;
  DeviceArray<float> vals32_;  // fp32 values (a view's rounded copy, or our copy stored in fp32)
};

// A's b×b blocks on the device (make_chebyshev_step_bsr). residual32/combine32 are the CSR
// step's (no A in them).
// Where A's blocks come from, a piece at a time: the block rows' offsets and fill(I0, I1, col,
// values), which writes the blocks of block rows [I0, I1) (BsrBlocks: copies; A: builds them).
struct BsrSource {
  std::int64_t mb = 0;
  int b = 0;
  const std::vector<std::int64_t>* row_ptr = nullptr;
  std::function<void(std::int64_t, std::int64_t, std::int32_t*, double*)> fill;
};

// Page-locked host memory (cudaMallocHost), freed on scope exit.
struct PinnedBytes {
  void* p = nullptr;
  explicit PinnedBytes(std::size_t bytes) {
    if (bytes) TCSOLVE_CUDA_CHECK(cudaMallocHost(&p, bytes));
  }
  ~PinnedBytes() {
    if (p) cudaFreeHost(p);
  }
  PinnedBytes(const PinnedBytes&) = delete;
  PinnedBytes& operator=(const PinnedBytes&) = delete;
};
struct StreamEvent {
  cudaEvent_t e = nullptr;
  StreamEvent() { TCSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)); }
  ~StreamEvent() {
    if (e) cudaEventDestroy(e);
  }
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
};

class CudaBsrChebyshevStep final : public ChebyshevStep {
 public:
  CudaBsrChebyshevStep(const BsrSource& a, Precision storage, void* stream)
      : n_(a.mb * a.b), mb_(a.mb), b_(a.b), storage_(storage), stream_(stream) {
    const std::vector<std::int64_t>& row_ptr = *a.row_ptr;
    TCSOLVE_REQUIRE(static_cast<std::int64_t>(row_ptr.size()) == a.mb + 1, "chebyshev BSR step: block row offsets");
    // Slices of 32 block rows, each as wide as its widest block row.
    const std::int64_t ns = (a.mb + kSlice - 1) / kSlice, bb = static_cast<std::int64_t>(a.b) * a.b;
    const std::vector<std::int64_t> sp = bsr_slice_offsets(row_ptr);
    slots_ = sp.back();
    slice_ptr_ = DeviceArray<std::int64_t>(sp);
    col_ = DeviceArray<std::int32_t>(static_cast<std::size_t>(slots_ * kSlice));
    vals32_ = DeviceArray<float>(static_cast<std::size_t>(slots_ * kSlice * bb));
    if (slots_ == 0) return;
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    trace_mark("bsr step: slices planned");
    if (storage == Precision::fp64) vals64_ = DeviceArray<double>(static_cast<std::size_t>(slots_ * kSlice * bb));
    trace_mark("bsr step: sliced arrays allocated");
    // The blocks go up in pieces of whole slices, ~2^17 blocks each (9.4 MB of fp64 3×3 blocks)
    // unless one slice holds more, through two page-locked host buffers: the host fills piece
    // c + 1 while piece c is copied (cudaMemcpyAsync from pinned memory, no staging by the
    // driver) and sliced on the device. Peak: the sliced arrays plus one piece on the device, two
    // pieces pinned on the host; no copy of all of A's blocks anywhere.
    const DeviceArray<std::int64_t> rp(row_ptr);
    constexpr std::int64_t kPieceBlocks = std::int64_t(1) << 17;
    auto first_block = [&](std::int64_t S) { return row_ptr[static_cast<std::size_t>(std::min(a.mb, S * kSlice))]; };
    std::vector<std::int64_t> cuts{0};
    std::int64_t piece_max = 0;
    for (std::int64_t S = 0; S < ns; ++S) {
      if (S > cuts.back() && first_block(S + 1) - first_block(cuts.back()) > kPieceBlocks) {
        piece_max = std::max(piece_max, first_block(S) - first_block(cuts.back()));
        cuts.push_back(S);
      }
    }
    piece_max = std::max(piece_max, first_block(ns) - first_block(cuts.back()));
    cuts.push_back(ns);
    const std::size_t col_bytes = static_cast<std::size_t>(piece_max) * 4;
    const std::size_t piece_bytes = static_cast<std::size_t>(piece_max) * (4 + 8 * bb) + 8;
    PinnedBytes host[2] = {PinnedBytes(piece_bytes), PinnedBytes(piece_bytes)};
    StreamEvent copied[2];
    DeviceArray<std::int32_t> ci(static_cast<std::size_t>(piece_max));
    DeviceArray<double> v64(static_cast<std::size_t>(piece_max * bb));
    trace_mark("bsr step: staging allocated");
    // Copies from the pinned buffers may be in flight when something throws: the stream is drained
    // before the buffers are freed.
    try {
      for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
        const std::int64_t s0 = cuts[c], s1 = cuts[c + 1], p0 = first_block(s0), p1 = first_block(s1);
        char* h = static_cast<char*>(host[c % 2].p);
        auto* hc = reinterpret_cast<std::int32_t*>(h);
        auto* hv = reinterpret_cast<double*>(h + ((col_bytes + 7) / 8) * 8);
        // this buffer's previous piece (c − 2) must have left it
        if (c >= 2) TCSOLVE_CUDA_CHECK(cudaEventSynchronize(copied[c % 2].e));
        a.fill(std::min(a.mb, s0 * kSlice), std::min(a.mb, s1 * kSlice), hc, hv);
        // (stream order: the previous piece's kernel is done with ci and v64 before these copies)
        TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(ci.get(), hc, static_cast<std::size_t>(p1 - p0) * 4, cudaMemcpyHostToDevice, st));
        TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(v64.get(), hv, static_cast<std::size_t>((p1 - p0) * bb) * 8,
                                           cudaMemcpyHostToDevice, st));
        TCSOLVE_CUDA_CHECK(cudaEventRecord(copied[c % 2].e, st));
        const unsigned grid = static_cast<unsigned>(((s1 - s0) * kSlice + 255) / 256);
        if (storage == Precision::fp64)
          slice_blocks_kernel<double><<<grid, 256, 0, st>>>(a.mb, static_cast<int>(bb), s0, s1, p0, rp.get(), ci.get(),
                                                            v64.get(), slice_ptr_.get(), col_.get(), vals64_.get());
        else  // rounded to fp32 as they are sliced
          slice_blocks_kernel<float><<<grid, 256, 0, st>>>(a.mb, static_cast<int>(bb), s0, s1, p0, rp.get(), ci.get(),
                                                           v64.get(), slice_ptr_.get(), col_.get(), vals32_.get());
        TCSOLVE_CUDA_CHECK_LAUNCH();
      }
    } catch (...) {
      cudaStreamSynchronize(st);
      throw;
    }
    trace_mark("bsr step: blocks uploaded and sliced");
    if (storage == Precision::fp64) {
      const std::int64_t nv = slots_ * kSlice * bb;
      round_to_float_kernel<<<static_cast<unsigned>(std::min<std::int64_t>((nv + 255) / 256, 65535)), 256, 0, st>>>(
          nv, vals64_.get(), vals32_.get());
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
    // The pieces' buffers (device and pinned) are freed on return: the stream must be done with them.
    TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(st));
    trace_mark("bsr step: sliced and rounded");
  }
  Space space() const override { return Space::device; }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    launch64(a, cur, b, c, next, e, r, d, bsr_shape(64, b_, cur.cols));
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
              MvView<const float> r, const double* f) const override {
    launch32(a, cur, b, c, next, r, f, bsr_shape(32, b_, cur.cols));
  }
  void residual32(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                  double g, MvView<float> r, MvView<float> z) const override {
    Rung32{n_, nullptr, nullptr, nullptr, Precision::fp32, stream_}.residual(s, ax, x, theta, g, r, z);
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                 MvView<double> y) const override {
    Rung32{n_, nullptr, nullptr, nullptr, Precision::fp32, stream_}.combine(x, q, z, y);
  }
  std::int64_t rows() const { return n_; }
  std::size_t device_bytes() const override {
    return slice_ptr_.bytes() + col_.bytes() + vals64_.bytes() + vals32_.bytes();
  }
  std::string describe() const override {
    return "fused BSR step on the GPU (" + std::to_string(b_) + "×" + std::to_string(b_) +
           " blocks), A stored in " + to_string(storage_);
  }

  void launch64(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
                MvView<const double> r, const double* d, StepShape sh) const {
    const std::int64_t s = cur.cols;
    TCSOLVE_REQUIRE(cur.rows == n_ && next.rows == n_ && next.cols == s &&
                        (e == 0.0 || (r.rows == n_ && r.cols == s)),
                    "chebyshev BSR step: block shapes differ");
    if (n_ == 0 || s == 0) return;
    cudaStream_t st = static_cast<cudaStream_t>(stream_);
    if (storage_ == Precision::fp64)
      dispatch_bsr<double, double>(b_, sh, mb_, st, slice_ptr_.get(), col_.get(), vals64_.get(), a, cur.data,
                                   cur.ld, b, c, next.data, next.ld, e, e != 0.0 ? r.data : nullptr, r.ld,
                                   d, static_cast<const double*>(nullptr), static_cast<int>(s));
    else
      dispatch_bsr<double, float>(b_, sh, mb_, st, slice_ptr_.get(), col_.get(),
                                  static_cast<const float*>(vals32_.get()), a, cur.data, cur.ld, b, c,
                                  next.data, next.ld, e, e != 0.0 ? r.data : nullptr, r.ld, d,
                                  static_cast<const double*>(nullptr), static_cast<int>(s));
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
  void launch32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
                MvView<const float> r, const double* f, StepShape sh) const {
    const std::int64_t q = cur.cols;
    TCSOLVE_REQUIRE(cur.rows == n_ && next.rows == n_ && next.cols == q &&
                        (!f || (r.rows == n_ && r.cols == q)),
                    "chebyshev BSR step: block shapes differ");
    if (n_ == 0 || q == 0) return;
    dispatch_bsr<float, float>(b_, sh, mb_, static_cast<cudaStream_t>(stream_), slice_ptr_.get(), col_.get(),
                               static_cast<const float*>(vals32_.get()), static_cast<float>(a), cur.data,
                               cur.ld, static_cast<float>(b), static_cast<float>(c), next.data, next.ld,
                               0.0f, f ? r.data : nullptr, f ? r.ld : std::int64_t{0},
                               static_cast<const double*>(nullptr), f, static_cast<int>(q));
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

 private:
  std::int64_t n_, mb_;
  int b_;
  Precision storage_;
  void* stream_;
  std::int64_t slots_ = 0;             // slots per lane over all slices
  DeviceArray<std::int64_t> slice_ptr_;  // [slices + 1], in slots
  DeviceArray<std::int32_t> col_;        // [slots · 32]
  DeviceArray<double> vals64_;           // [slots · b² · 32] (storage fp64)
  DeviceArray<float> vals32_;            // the same rounded (or the only copy: storage fp32)
};
}  // namespace

namespace {
void check_bsr_step_args(Precision storage, int b) {
  if (storage != Precision::fp64 && storage != Precision::fp32)
    throw InvalidArgument(std::string("chebyshev BSR step: storage ") + to_string(storage) +
                          " not supported (fp64 or fp32)");
  if (b != 2 && b != 3 && b != 4 && b != 6)
    throw InvalidArgument("chebyshev BSR step: block size " + std::to_string(b) + " (2, 3, 4 or 6)");
}
}  // namespace

std::unique_ptr<ChebyshevStep> make_chebyshev_step_bsr(const BsrBlocks& a, Precision storage,
                                                       void* stream) {
  check_bsr_step_args(storage, a.b);
  BsrSource src;
  src.mb = a.mb, src.b = a.b, src.row_ptr = &a.row_ptr;
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(a.row_ptr.size()) == a.mb + 1 &&
                      static_cast<std::int64_t>(a.col.size()) == a.blocks() &&
                      static_cast<std::int64_t>(a.values.size()) == a.blocks() * a.b * a.b,
                  "chebyshev BSR step: blocks and values differ in size");
  const std::int64_t bb = static_cast<std::int64_t>(a.b) * a.b;
  src.fill = [&a, bb](std::int64_t I0, std::int64_t I1, std::int32_t* col, double* values) {
    const std::int64_t p0 = a.row_ptr[static_cast<std::size_t>(I0)], p1 = a.row_ptr[static_cast<std::size_t>(I1)];
    std::copy(a.col.begin() + p0, a.col.begin() + p1, col);
    std::copy(a.values.begin() + p0 * bb, a.values.begin() + p1 * bb, values);
  };
  return std::make_unique<CudaBsrChebyshevStep>(src, storage, stream);
}

std::unique_ptr<ChebyshevStep> make_chebyshev_step_bsr(const Csr<double>& a, int b, Precision storage,
                                                       void* stream, const std::vector<std::int64_t>* given) {
  check_bsr_step_args(storage, b);
  if (!a.square() || a.nrows % b != 0)
    throw InvalidArgument("chebyshev BSR step: A (" + std::to_string(a.nrows) + " x " + std::to_string(a.ncols) +
                          ") must be square with rows a multiple of " + std::to_string(b));
  std::vector<std::int64_t> counted;
  if (!given) {
    counted = bsr_block_row_ptr(a, b);
    trace_mark("bsr step: block rows counted");
  } else if (static_cast<std::int64_t>(given->size()) != a.nrows / b + 1) {
    throw InvalidArgument("chebyshev BSR step: " + std::to_string(given->size()) +
                          " block-row offsets given for " + std::to_string(a.nrows / b) + " block rows");
  }
  const std::vector<std::int64_t>& row_ptr = given ? *given : counted;
  BsrSource src;
  src.mb = a.nrows / b, src.b = b, src.row_ptr = &row_ptr;
  src.fill = [&a, b, &row_ptr](std::int64_t I0, std::int64_t I1, std::int32_t* col, double* values) {
    fill_bsr_blocks(a, b, row_ptr, I0, I1, col, values);
  };
  return std::make_unique<CudaBsrChebyshevStep>(src, storage, stream);
}

std::unique_ptr<ChebyshevStep> make_chebyshev_step_view(std::int64_t n, const std::int64_t* row_ptr,
                                                        const std::int32_t* col, const double* values,
                                                        void* stream) {
  return std::make_unique<CudaChebyshevStep>(n, 0, row_ptr, col, values, Precision::fp64, stream);
}

std::unique_ptr<ChebyshevStep> make_chebyshev_step_view32(std::int64_t n, std::int64_t nnz,
                                                          const std::int64_t* row_ptr,
                                                          const std::int32_t* col, const double* values,
                                                          void* stream) {
  return std::make_unique<CudaChebyshevStep>(n, nnz, row_ptr, col, values, Precision::fp32, stream);
}

namespace detail {
void launch_step_shape(int kc, int g, std::int64_t n, const std::int64_t* row_ptr,
                       const std::int32_t* col, const double* values, double a,
                       MvView<const double> cur, double b, double c, MvView<double> next,
                       void* stream) {
  launch_step(n, row_ptr, col, values, Precision::fp64, a, cur, b, c, next, 0.0, {}, nullptr, stream,
              StepShape{kc, g});
}
void launch_step32_shape(int kc, int g, std::int64_t n, const std::int64_t* row_ptr,
                         const std::int32_t* col, const double* values, double a,
                         MvView<const float> cur, double b, double c, MvView<float> next,
                         void* stream) {
  Rung32{n, row_ptr, col, values, Precision::fp64, stream}.step(a, cur, b, c, next, {}, nullptr,
                                                               StepShape{kc, g});
}
void launch_bsr_step_shape(const ChebyshevStep& step, int bits, int kc, int g, double a,
                           const void* cur, std::int64_t ldc, double b, double c, void* next,
                           std::int64_t ldn, std::int64_t cols) {
  const auto* bs = dynamic_cast<const CudaBsrChebyshevStep*>(&step);
  TCSOLVE_REQUIRE(bs != nullptr, "launch_bsr_step_shape: not a BSR step");
  const std::int64_t n = bs->rows();
  if (bits == 64)
    bs->launch64(a, MvView<const double>{static_cast<const double*>(cur), n, cols, ldc}, b, c,
                 MvView<double>{static_cast<double*>(next), n, cols, ldn}, 0.0, {}, nullptr, StepShape{kc, g});
  else
    bs->launch32(a, MvView<const float>{static_cast<const float*>(cur), n, cols, ldc}, b, c,
                 MvView<float>{static_cast<float*>(next), n, cols, ldn}, {}, nullptr, StepShape{kc, g});
}
std::unique_ptr<ChebyshevStep> make_cuda_chebyshev_step(const Csr<double>& a, Precision storage,
                                                        void* stream) {
  return std::make_unique<CudaChebyshevStep>(a, storage, stream);
}
}  // namespace detail

}  // namespace tcsolve
