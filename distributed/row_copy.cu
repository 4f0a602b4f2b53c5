// CUDA versions of distributed/row_copy.hpp: one thread per entry, grid-stride over rows, one
// grid row per column (chunks of 65535 columns: the grid's y limit).
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda_check.cuh"
#include "distributed/row_copy.hpp"

namespace tcsolve {
namespace {

__global__ void gather_rows_kernel(const std::int32_t* rows, const double* x, long long ldx,
                                   double* y, long long ldy, long long m) {
  const double* xs = x + blockIdx.y * ldx;
  double* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m;
       i += (long long)gridDim.x * blockDim.x)
    ys[i] = xs[rows[i]];
}

__global__ void scatter_add_rows_kernel(const std::int32_t* rows, double s, const double* x,
                                        long long ldx, double* y, long long ldy, long long m) {
  const double* xs = x + blockIdx.y * ldx;
  double* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m;
       i += (long long)gridDim.x * blockDim.x)
    ys[rows[i]] += s * xs[i];
}

dim3 grid_for(long long m, long long cols) {
  const long long bx = std::min<long long>((m + 255) / 256, 4096);
  return dim3(static_cast<unsigned>(std::max<long long>(bx, 1)), static_cast<unsigned>(cols));
}

}  // namespace

namespace detail {

void gather_rows_cuda(const std::int32_t* rows, MvView<const double> x, MvView<double> y,
                      void* stream) {
  for (std::int64_t c0 = 0; c0 < y.cols; c0 += 65535) {
    const std::int64_t nc = std::min<std::int64_t>(65535, y.cols - c0);
    gather_rows_kernel<<<grid_for(y.rows, nc), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        rows, x.col(c0), x.ld, y.col(c0), y.ld, y.rows);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

void scatter_add_rows_cuda(const std::int32_t* rows, double s, MvView<const double> x,
                           MvView<double> y, void* stream) {
  for (std::int64_t c0 = 0; c0 < x.cols; c0 += 65535) {
    const std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
    scatter_add_rows_kernel<<<grid_for(x.rows, nc), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        rows, s, x.col(c0), x.ld, y.col(c0), y.ld, x.rows);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace detail
}  // namespace tcsolve
