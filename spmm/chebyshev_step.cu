// CUDA twin of spmm/chebyshev_step.cpp: next = a·A·cur + b·cur + c·next + e·r, row-split.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/error.hpp"
#include "spmm/chebyshev_step.hpp"
#include "spmm/device_buffer.hpp"

namespace tcsolve {

namespace {

constexpr int kThreads = 128;

// Thread = (row, column group): blockDim = (kThreads/G rows, G groups); a warp holds 32
// consecutive rows of one group (coalesced per column). Each thread runs the passes of KC columns
// at c0 = threadIdx.y·KC, + G·KC, … holding KC accumulators in registers; A's row is re-read
// (from L1) for each pass. G = 1: one thread per row, every pass in sequence.
template <class TA, int KC, int G>
__global__ void __launch_bounds__(kThreads)
    chebyshev_step_kernel(std::int64_t m, const std::int64_t* __restrict__ rp,
                          const std::int32_t* __restrict__ ci, const TA* __restrict__ v, double a,
                          const double* __restrict__ cur, std::int64_t ldc, double b, double c,
                          double* __restrict__ next, std::int64_t ldn, double e,
                          const double* __restrict__ r, std::int64_t ldr,
                          const double* __restrict__ d, int ncols) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / G) + threadIdx.x;
  if (row >= m) return;
  const std::int64_t p0 = rp[row], p1 = rp[row + 1];
  const double ad = d ? a * d[row] : a;
  for (int c0 = static_cast<int>(threadIdx.y) * KC; c0 < ncols; c0 += G * KC) {
    const int nc = min(KC, ncols - c0);
    const double* xc = cur + static_cast<std::int64_t>(c0) * ldc;
    double acc[KC];
#pragma unroll
    for (int j = 0; j < KC; ++j) acc[j] = 0.0;
#pragma unroll 4
    for (std::int64_t p = p0; p < p1; ++p) {
      const double av = static_cast<double>(v[p]);
      const std::int64_t col = ci[p];
#pragma unroll
      for (int j = 0; j < KC; ++j)
        if (j < nc) acc[j] = fma(av, __ldg(xc + col + j * ldc), acc[j]);
    }
#pragma unroll
    for (int j = 0; j < KC; ++j) {
      if (j < nc) {
        const std::int64_t cj = c0 + j;
        double out = ad * acc[j] + b * xc[row + j * ldc];
        // r and next are touched once: streamed past L1 (evict-first), which keeps L1 for X's
        // gathered lines (H200, lap3d:100, 24 columns, shape (4, 2): 248 → 237 µs).
        if (e != 0.0) out += e * __ldcs(r + row + cj * ldr);
        if (c != 0.0) out += c * __ldcs(next + row + cj * ldn);
        __stcs(next + row + cj * ldn, out);
      }
    }
  }
}

// The fp32 rung's step: fp32 blocks and fp32 accumulation (the residual form's Z carries the
// error relative to itself, chebyshev.hpp) and at most 48 registers (10 blocks of 128 per SM):
// ncu on the H200 (lap3d:100, 24 columns) found the fp64-accumulating kernel latency-bound at
// 60 registers, 47 % occupancy, 36 % of DRAM bandwidth, as slow as the fp64 step. Threads as in
// chebyshev_step_kernel.
template <class TA, int KC, int G>
__global__ void __launch_bounds__(kThreads, 10)
    chebyshev_step32_kernel(std::int64_t m, const std::int64_t* __restrict__ rp,
                            const std::int32_t* __restrict__ ci, const TA* __restrict__ v, float a,
                            const float* __restrict__ cur, std::int64_t ldc, float b, float c,
                            float* __restrict__ next, std::int64_t ldn,
                            const float* __restrict__ r, std::int64_t ldr,
                            const double* __restrict__ f, int ncols) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * (kThreads / G) + threadIdx.x;
  if (row >= m) return;
  const std::int64_t p0 = rp[row], p1 = rp[row + 1];
  for (int c0 = static_cast<int>(threadIdx.y) * KC; c0 < ncols; c0 += G * KC) {
    const int nc = min(KC, ncols - c0);
    const float* xc = cur + static_cast<std::int64_t>(c0) * ldc;
    float acc[KC];
#pragma unroll
    for (int j = 0; j < KC; ++j) acc[j] = 0.0f;
#pragma unroll 2
    for (std::int64_t p = p0; p < p1; ++p) {
      const float av = static_cast<float>(v[p]);
      const std::int64_t col = ci[p];
#pragma unroll
      for (int j = 0; j < KC; ++j)
        if (j < nc) acc[j] = fmaf(av, __ldg(xc + col + j * ldc), acc[j]);
    }
#pragma unroll
    for (int j = 0; j < KC; ++j) {
      if (j < nc) {
        const std::int64_t cj = c0 + j;
        float out = a * acc[j] + b * xc[row + j * ldc];
        // (Plain loads here: streaming r and next past L1 as the fp64 kernel does made this
        // kernel slower, 181 → 204 µs on lap3d:100 at 24 columns, H200.)
        if (f) out = fmaf(static_cast<float>(f[cj]), r[row + cj * ldr], out);
        if (c != 0.0f) out = fmaf(c, next[row + cj * ldn], out);
        next[row + cj * ldn] = out;
      }
    }
  }
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

// On the caller's device arrays (no copy); storage fp32: the values rounded into a copy of ours.
class CudaChebyshevStepView final : public ChebyshevStep {
 public:
  CudaChebyshevStepView(std::int64_t n, const std::int64_t* rp, const std::int32_t* ci,
                        const double* v, void* stream)
      : n_(n), rp_(rp), ci_(ci), v_(v), stream_(stream) {}
  CudaChebyshevStepView(std::int64_t n, std::int64_t nnz, const std::int64_t* rp,
                        const std::int32_t* ci, const double* v, void* stream)
      : n_(n), rp_(rp), ci_(ci), v_(v), stream_(stream), storage_(Precision::fp32),
        vals32_(static_cast<std::size_t>(nnz)) {
    TCSOLVE_REQUIRE(nnz >= 0, "chebyshev step: negative number of entries");
    if (nnz > 0) {
      const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((nnz + 255) / 256, 65535));
      round_to_float_kernel<<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(nnz, v, vals32_.get());
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }
  Space space() const override { return Space::device; }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    launch_step(n_, rp_, ci_, values(), storage_, a, cur, b, c, next, e, r, d, stream_);
  }
  std::string describe() const override {
    return storage_ == Precision::fp32 ? "fused CSR step on the GPU, on the caller's arrays, A's values in fp32"
                                       : "fused CSR step on the GPU, on the caller's arrays";
  }
  void residual32(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                  double g, MvView<float> r, MvView<float> z) const override {
    rung().residual(s, ax, x, theta, g, r, z);
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
              MvView<const float> r, const double* f) const override {
    rung().step(a, cur, b, c, next, r, f);
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                 MvView<double> y) const override {
    rung().combine(x, q, z, y);
  }

 private:
  std::int64_t n_;
  const std::int64_t* rp_;
  const std::int32_t* ci_;
  const double* v_;
  void* stream_;
  Precision storage_ = Precision::fp64;
  DeviceArray<float> vals32_;
  const void* values() const {
    return storage_ == Precision::fp32 ? static_cast<const void*>(vals32_.get()) : static_cast<const void*>(v_);
  }
  Rung32 rung() const { return {n_, rp_, ci_, values(), storage_, stream_}; }
};

class CudaChebyshevStep final : public ChebyshevStep {
 public:
  CudaChebyshevStep(const Csr<double>& a, Precision storage, void* stream)
      : n_(a.nrows), storage_(storage), stream_(stream) {
    row_ptr_ = DeviceArray<std::int64_t>(a.row_ptr);
    col_ = DeviceArray<std::int32_t>(a.col_idx);
    if (storage == Precision::fp32)
      vals32_ = DeviceArray<float>(std::vector<float>(a.values.begin(), a.values.end()));
    else
      vals64_ = DeviceArray<double>(a.values);
  }
  Space space() const override { return Space::device; }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    const void* v = storage_ == Precision::fp32 ? static_cast<const void*>(vals32_.get())
                                                : static_cast<const void*>(vals64_.get());
    launch_step(n_, row_ptr_.get(), col_.get(), v, storage_, a, cur, b, c, next, e, r, d, stream_);
  }
  void residual32(double s, MvView<const double> ax, MvView<const double> x, const double* theta,
                  double g, MvView<float> r, MvView<float> z) const override {
    rung().residual(s, ax, x, theta, g, r, z);
  }
  void step32(double a, MvView<const float> cur, double b, double c, MvView<float> next,
              MvView<const float> r, const double* f) const override {
    rung().step(a, cur, b, c, next, r, f);
  }
  void combine32(MvView<const double> x, const double* q, MvView<const float> z,
                 MvView<double> y) const override {
    rung().combine(x, q, z, y);
  }
  std::string describe() const override {
    return std::string("fused CSR step on the GPU, A stored in ") + to_string(storage_);
  }

 private:
  std::int64_t n_;
  Precision storage_;
  void* stream_;
  DeviceArray<std::int64_t> row_ptr_;
  DeviceArray<std::int32_t> col_;
  DeviceArray<double> vals64_;
  DeviceArray<float> vals32_;
  Rung32 rung() const {
    const void* v = storage_ == Precision::fp32 ? static_cast<const void*>(vals32_.get())
                                                : static_cast<const void*>(vals64_.get());
    return {n_, row_ptr_.get(), col_.get(), v, storage_, stream_};
  }
};

}  // namespace

std::unique_ptr<ChebyshevStep> make_chebyshev_step_view(std::int64_t n, const std::int64_t* row_ptr,
                                                        const std::int32_t* col, const double* values,
                                                        void* stream) {
  return std::make_unique<CudaChebyshevStepView>(n, row_ptr, col, values, stream);
}

std::unique_ptr<ChebyshevStep> make_chebyshev_step_view32(std::int64_t n, std::int64_t nnz,
                                                          const std::int64_t* row_ptr,
                                                          const std::int32_t* col, const double* values,
                                                          void* stream) {
  return std::make_unique<CudaChebyshevStepView>(n, nnz, row_ptr, col, values, stream);
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
std::unique_ptr<ChebyshevStep> make_cuda_chebyshev_step(const Csr<double>& a, Precision storage,
                                                        void* stream) {
  return std::make_unique<CudaChebyshevStep>(a, storage, stream);
}
}  // namespace detail

}  // namespace tcsolve
