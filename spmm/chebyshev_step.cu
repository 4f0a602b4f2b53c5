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
constexpr int kCols = 8;  // columns per pass, held in registers

// Thread = row; per pass kCols columns. A's row is re-read (from L1) for each further pass.
template <class TA>
__global__ void __launch_bounds__(kThreads)
    chebyshev_step_kernel(std::int64_t m, const std::int64_t* __restrict__ rp,
                          const std::int32_t* __restrict__ ci, const TA* __restrict__ v, double a,
                          const double* __restrict__ cur, std::int64_t ldc, double b, double c,
                          double* __restrict__ next, std::int64_t ldn, double e,
                          const double* __restrict__ r, std::int64_t ldr,
                          const double* __restrict__ d, int ncols) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= m) return;
  const std::int64_t p0 = rp[row], p1 = rp[row + 1];
  const double ad = d ? a * d[row] : a;
  for (int c0 = 0; c0 < ncols; c0 += kCols) {
    const int nc = min(kCols, ncols - c0);
    const double* xc = cur + static_cast<std::int64_t>(c0) * ldc;
    double acc[kCols];
#pragma unroll
    for (int j = 0; j < kCols; ++j) acc[j] = 0.0;
#pragma unroll 4
    for (std::int64_t p = p0; p < p1; ++p) {
      const double av = static_cast<double>(v[p]);
      const std::int64_t col = ci[p];
#pragma unroll
      for (int j = 0; j < kCols; ++j)
        if (j < nc) acc[j] = fma(av, __ldg(xc + col + j * ldc), acc[j]);
    }
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      if (j < nc) {
        const std::int64_t cj = c0 + j;
        double out = ad * acc[j] + b * xc[row + j * ldc];
        if (e != 0.0) out += e * r[row + cj * ldr];
        if (c != 0.0) out += c * next[row + cj * ldn];
        next[row + cj * ldn] = out;
      }
    }
  }
}

void launch_step(std::int64_t n, const std::int64_t* rp, const std::int32_t* ci, const void* v,
                 Precision storage, double a, MvView<const double> cur, double b, double c,
                 MvView<double> next, double e, MvView<const double> r, const double* d, void* stream) {
  const std::int64_t s = cur.cols;
  TCSOLVE_REQUIRE(cur.rows == n && next.rows == n && r.rows == n && next.cols == s && r.cols == s,
                  "chebyshev step: block shapes differ");
  if (n == 0 || s == 0) return;
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  TCSOLVE_REQUIRE(blocks <= 2147483647, "chebyshev step: more rows than one grid's x dimension holds");
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (storage == Precision::fp32)
    chebyshev_step_kernel<float><<<static_cast<unsigned>(blocks), kThreads, 0, st>>>(
        n, rp, ci, static_cast<const float*>(v), a, cur.data, cur.ld, b, c, next.data, next.ld, e,
        r.data, r.ld, d, static_cast<int>(s));
  else
    chebyshev_step_kernel<double><<<static_cast<unsigned>(blocks), kThreads, 0, st>>>(
        n, rp, ci, static_cast<const double*>(v), a, cur.data, cur.ld, b, c, next.data, next.ld, e,
        r.data, r.ld, d, static_cast<int>(s));
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

// On the caller's device arrays (no copy).
class CudaChebyshevStepView final : public ChebyshevStep {
 public:
  CudaChebyshevStepView(std::int64_t n, const std::int64_t* rp, const std::int32_t* ci,
                        const double* v, void* stream)
      : n_(n), rp_(rp), ci_(ci), v_(v), stream_(stream) {}
  Space space() const override { return Space::device; }
  void step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
            MvView<const double> r, const double* d) const override {
    launch_step(n_, rp_, ci_, v_, Precision::fp64, a, cur, b, c, next, e, r, d, stream_);
  }
  std::string describe() const override { return "fused CSR step on the GPU, on the caller's arrays"; }

 private:
  std::int64_t n_;
  const std::int64_t* rp_;
  const std::int32_t* ci_;
  const double* v_;
  void* stream_;
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
};

}  // namespace

std::unique_ptr<ChebyshevStep> make_chebyshev_step_view(std::int64_t n, const std::int64_t* row_ptr,
                                                        const std::int32_t* col, const double* values,
                                                        void* stream) {
  return std::make_unique<CudaChebyshevStepView>(n, row_ptr, col, values, stream);
}

namespace detail {
std::unique_ptr<ChebyshevStep> make_cuda_chebyshev_step(const Csr<double>& a, Precision storage,
                                                        void* stream) {
  return std::make_unique<CudaChebyshevStep>(a, storage, stream);
}
}  // namespace detail

}  // namespace tcsolve
