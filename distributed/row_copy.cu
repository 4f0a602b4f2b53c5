// CUDA versions of distributed/row_copy.hpp: one thread per row and column, grid-stride over rows,
// one grid row per column (chunks of 65535 columns: the grid's y limit). The halo and boundary
// rows are a small share of a rank's rows (a plane of a 3D grid): these kernels are not tuned.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda_check.cuh"
#include "distributed/row_copy.hpp"

namespace tcsolve {
namespace {

template <class T>
__global__ void gather_rows_kernel(const std::int32_t* rows, const T* x, long long ldx, T* y,
                                   long long ldy, long long m) {
  const T* xs = x + blockIdx.y * ldx;
  T* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < m;
       i += (long long)gridDim.x * blockDim.x)
    ys[i] = xs[rows[i]];
}

template <class T>
__global__ void sparse_rows_add_kernel(SparseRows a, double s, const T* x, long long ldx, T* y,
                                       long long ldy) {
  const T* xs = x + blockIdx.y * ldx;
  T* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.nrows;
       i += (long long)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (long long e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
      acc += a.val[e] * static_cast<double>(xs[a.col[e]]);
    T& out = ys[a.out_row[i]];
    out = static_cast<T>(static_cast<double>(out) + s * acc);
  }
}

dim3 grid_for(long long m, long long cols) {
  const long long bx = std::min<long long>((m + 255) / 256, 4096);
  return dim3(static_cast<unsigned>(std::max<long long>(bx, 1)), static_cast<unsigned>(cols));
}

}  // namespace

namespace detail {

template <class T>
void gather_rows_cuda(const std::int32_t* rows, MvView<const T> x, MvView<T> y, void* stream) {
  for (std::int64_t c0 = 0; c0 < y.cols; c0 += 65535) {
    const std::int64_t nc = std::min<std::int64_t>(65535, y.cols - c0);
    gather_rows_kernel<T><<<grid_for(y.rows, nc), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        rows, x.col(c0), x.ld, y.col(c0), y.ld, y.rows);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

template <class T>
void sparse_rows_add_cuda(const SparseRows& a, double s, MvView<const T> x, MvView<T> y,
                          void* stream) {
  for (std::int64_t c0 = 0; c0 < x.cols; c0 += 65535) {
    const std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
    sparse_rows_add_kernel<T><<<grid_for(a.nrows, nc), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        a, s, x.col(c0), x.ld, y.col(c0), y.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

template void gather_rows_cuda<double>(const std::int32_t*, MvView<const double>, MvView<double>, void*);
template void gather_rows_cuda<float>(const std::int32_t*, MvView<const float>, MvView<float>, void*);
template void sparse_rows_add_cuda<double>(const SparseRows&, double, MvView<const double>,
                                           MvView<double>, void*);
template void sparse_rows_add_cuda<float>(const SparseRows&, double, MvView<const float>,
                                          MvView<float>, void*);

}  // namespace detail
}  // namespace tcsolve
