// Y = A·X on caller-owned device CSR arrays (see device_csr_view.hpp). CPU twin:
// csr_spmm_reference (core/csr.hpp); tested against it through the Python module's GPU test.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda_check.cuh"
#include "core/error.hpp"
#include "spmm/device_csr_view.hpp"

namespace tcsolve {

namespace {

constexpr int kThreads = 128;

// Thread = row; NT columns [c0, c0 + NT) of X accumulated in registers.
template <int NT>
__global__ void __launch_bounds__(kThreads)
    csr_view_kernel(std::int64_t m, const std::int64_t* __restrict__ rp,
                    const std::int32_t* __restrict__ ci, const double* __restrict__ v,
                    const double* __restrict__ x, std::int64_t ldx, double* __restrict__ y,
                    std::int64_t ldy) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= m) return;
  double acc[NT];
#pragma unroll
  for (int c = 0; c < NT; ++c) acc[c] = 0.0;
  const std::int64_t p1 = rp[row + 1];
  for (std::int64_t p = rp[row]; p < p1; ++p) {
    const double a = v[p];
    const double* xj = x + ci[p];
#pragma unroll
    for (int c = 0; c < NT; ++c) acc[c] += a * xj[c * ldx];
  }
#pragma unroll
  for (int c = 0; c < NT; ++c) y[row + c * ldy] = acc[c];
}

class DeviceCsrView final : public LinearOperator<double> {
 public:
  DeviceCsrView(std::int64_t m, std::int64_t n, const std::int64_t* rp, const std::int32_t* ci,
                const double* v, void* stream)
      : m_(m), n_(n), rp_(rp), ci_(ci), v_(v), stream_(static_cast<cudaStream_t>(stream)) {}
  std::int64_t rows() const override { return m_; }
  std::int64_t cols() const override { return n_; }
  Space space() const override { return Space::device; }
  void apply(MvView<const double> x, MvView<double> y) const override {
    TCSOLVE_REQUIRE(x.rows == n_ && y.rows == m_ && x.cols == y.cols,
                    "device CSR view: X must be cols × k and Y rows × k");
    TCSOLVE_REQUIRE(x.space == Space::device && y.space == Space::device,
                    "device CSR view: X and Y must live on the device");
    if (m_ == 0 || x.cols == 0) return;
    const unsigned blocks = static_cast<unsigned>((m_ + kThreads - 1) / kThreads);
    for (std::int64_t c0 = 0; c0 < x.cols; c0 += 8) {
      const int nc = static_cast<int>(std::min<std::int64_t>(8, x.cols - c0));
      const double* xc = x.data + c0 * x.ld;
      double* yc = y.data + c0 * y.ld;
      switch (nc) {
#define TCSOLVE_VIEW_CASE(N)                                                                \
  case N:                                                                                   \
    csr_view_kernel<N><<<blocks, kThreads, 0, stream_>>>(m_, rp_, ci_, v_, xc, x.ld, yc, y.ld); \
    break;
        TCSOLVE_VIEW_CASE(1) TCSOLVE_VIEW_CASE(2) TCSOLVE_VIEW_CASE(3) TCSOLVE_VIEW_CASE(4)
        TCSOLVE_VIEW_CASE(5) TCSOLVE_VIEW_CASE(6) TCSOLVE_VIEW_CASE(7) TCSOLVE_VIEW_CASE(8)
#undef TCSOLVE_VIEW_CASE
      }
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

 private:
  std::int64_t m_, n_;
  const std::int64_t* rp_;
  const std::int32_t* ci_;
  const double* v_;
  cudaStream_t stream_;
};

}  // namespace

std::unique_ptr<LinearOperator<double>> make_device_csr_view(std::int64_t nrows, std::int64_t ncols,
                                                             std::int64_t nnz,
                                                             const std::int64_t* row_ptr,
                                                             const std::int32_t* col_idx,
                                                             const double* values, void* stream) {
  TCSOLVE_REQUIRE(nrows >= 0 && ncols >= 0 && nnz >= 0, "device CSR view: negative shape");
  TCSOLVE_REQUIRE(row_ptr != nullptr, "device CSR view: null row_ptr");
  TCSOLVE_REQUIRE(nnz == 0 || (col_idx != nullptr && values != nullptr),
                  "device CSR view: null col_idx or values");
  TCSOLVE_REQUIRE(nrows / kThreads < 0x7fffffff, "device CSR view: too many rows for one grid");
  return std::make_unique<DeviceCsrView>(nrows, ncols, row_ptr, col_idx, values, stream);
}

}  // namespace tcsolve
