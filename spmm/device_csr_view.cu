// Y = A·X on caller-owned device CSR arrays (see device_csr_view.hpp). CPU twin:
// csr_spmm_reference (core/csr.hpp); tested against it through the Python module's GPU test.
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cmath>

#include "core/cuda_check.cuh"
#include "core/device_buffer.hpp"
#include "core/error.hpp"
#include "spmm/csr_row_loop.cuh"
#include "spmm/device_csr_view.hpp"

namespace tcsolve {

namespace {

constexpr int kThreads = 128;

// Thread = row; NT columns [c0, c0 + NT) of X accumulated in registers (csr_row::accumulate).
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
  csr_row::accumulate<4, 1>(acc, rp[row], 0, rp[row + 1],
                            csr_row::GlobalEntries<double, double>{v, ci},
                            csr_row::ColumnMajorX<double>{x, ldx, NT});
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

// Thread = row i: Σ|a_ij|, max |a_ij|, a_ii, max |a_ij − a_ji| over the row, the first
// non-finite entry of the row (nnz when none), and i when its column indices do not strictly
// increase (n when they do).
__global__ void __launch_bounds__(kThreads)
    csr_check_kernel(std::int64_t n, const std::int64_t* __restrict__ rp,
                     const std::int32_t* __restrict__ ci, const double* __restrict__ v,
                     double* __restrict__ row_sum, double* __restrict__ row_max,
                     double* __restrict__ row_defect, double* __restrict__ diag,
                     std::int64_t* __restrict__ row_bad, std::int64_t* __restrict__ row_unsorted,
                     std::int64_t nnz) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double sum = 0.0, mx = 0.0, def = 0.0, d = 0.0;
  std::int64_t bad = nnz;
  const std::int64_t p1 = rp[i + 1];
  bool sorted = true;
  for (std::int64_t p = rp[i] + 1; p < p1; ++p) sorted = sorted && ci[p - 1] < ci[p];
  row_unsorted[i] = sorted ? n : i;
  for (std::int64_t p = rp[i]; p < p1; ++p) {
    const double a = v[p];
    if (!isfinite(a)) {
      if (bad == nnz) bad = p;
      continue;
    }
    const double aa = fabs(a);
    sum += aa;
    mx = fmax(mx, aa);
    const std::int32_t j = ci[p];
    if (j == i) {
      d += a;
      continue;
    }
    // a_ji: binary search for column i in row j.
    std::int64_t lo = rp[j], hi = rp[j + 1];
    double aji = 0.0;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      const std::int32_t c = ci[mid];
      if (c == i) {
        aji = v[mid];
        break;
      }
      if (c < i) lo = mid + 1;
      else hi = mid;
    }
    def = fmax(def, fabs(a - aji));
  }
  row_sum[i] = sum;
  row_max[i] = mx;
  row_defect[i] = def;
  diag[i] = d;
  row_bad[i] = bad;
}

}  // namespace

DeviceCsrCheck check_device_csr(std::int64_t n, std::int64_t nnz, const std::int64_t* row_ptr,
                                const std::int32_t* col_idx, const double* values, double* diag,
                                void* stream) {
  DeviceCsrCheck out;
  if (n <= 0) return out;
  TCSOLVE_REQUIRE(row_ptr != nullptr && (nnz == 0 || (col_idx && values)),
                  "device CSR check: null arrays");
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  const std::size_t un = static_cast<std::size_t>(n);
  DeviceArray<double> sum(un), mx(un), def(un), d_own(diag ? 0 : un), res(4);  // res[3]: max diag
  DeviceArray<std::int64_t> bad(un), bad_min(1), unsorted(un), unsorted_min(1);
  DeviceArray<cub::KeyValuePair<int, double>> arg(1);
  double* d = diag ? diag : d_own.get();
  const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  csr_check_kernel<<<blocks, kThreads, 0, st>>>(n, row_ptr, col_idx, values, sum.get(), mx.get(),
                                                def.get(), d, bad.get(), unsorted.get(), nnz);
  TCSOLVE_CUDA_CHECK_LAUNCH();
  TCSOLVE_REQUIRE(n <= 0x7fffffff, "device CSR check: more than 2^31 rows");
  const int ni = static_cast<int>(n);
  // CUB reductions (temporary storage sized once for the largest of them).
  std::size_t bytes = 0, b2 = 0;
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, bytes, sum.get(), res.get(), ni, st));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::ArgMin(nullptr, b2, d, arg.get(), ni, st));
  bytes = std::max(bytes, b2);
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Min(nullptr, b2, bad.get(), bad_min.get(), ni, st));
  bytes = std::max(bytes, b2);
  DeviceArray<unsigned char> tmp(std::max<std::size_t>(bytes, 1));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Max(tmp.get(), bytes, sum.get(), res.get() + 0, ni, st));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Max(tmp.get(), bytes, mx.get(), res.get() + 1, ni, st));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Max(tmp.get(), bytes, def.get(), res.get() + 2, ni, st));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Max(tmp.get(), bytes, d, res.get() + 3, ni, st));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::ArgMin(tmp.get(), bytes, d, arg.get(), ni, st));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Min(tmp.get(), bytes, bad.get(), bad_min.get(), ni, st));
  TCSOLVE_CUDA_CHECK(cub::DeviceReduce::Min(tmp.get(), bytes, unsorted.get(), unsorted_min.get(), ni, st));
  double r[4];
  cub::KeyValuePair<int, double> am;
  std::int64_t bm = nnz, um = n;
  TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(r, res.get(), sizeof r, cudaMemcpyDeviceToHost, st));
  TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(&am, arg.get(), sizeof am, cudaMemcpyDeviceToHost, st));
  TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(&bm, bad_min.get(), sizeof bm, cudaMemcpyDeviceToHost, st));
  TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(&um, unsorted_min.get(), sizeof um, cudaMemcpyDeviceToHost, st));
  TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(st));
  out.inf_norm = r[0];
  out.max_abs = r[1];
  out.symmetry_defect = r[2];
  out.min_diag = am.value;
  out.min_diag_row = am.key;
  out.max_diag = r[3];
  out.nonfinite_at = bm < nnz ? bm : -1;
  out.unsorted_row = um < n ? um : -1;
  return out;
}

namespace {

__global__ void widen_kernel(const std::int32_t* __restrict__ src, std::int64_t* __restrict__ dst,
                             std::int64_t count) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

// Thread = one element of the n × s output (grid-stride over n·s, column-major order).
__global__ void to_column_major_kernel(const double* __restrict__ src, std::int64_t rs, std::int64_t cs,
                                       std::int64_t n, std::int64_t total, double* __restrict__ dst) {
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % n, j = e / n;
    dst[e] = src[i * rs + j * cs];
  }
}

unsigned stride_blocks(std::int64_t count) {
  return static_cast<unsigned>(std::min<std::int64_t>((count + kThreads - 1) / kThreads, 65535LL * 16));
}

}  // namespace

void widen_indices(const std::int32_t* src, std::int64_t* dst, std::int64_t count, void* stream) {
  if (count <= 0) return;
  TCSOLVE_REQUIRE(src != nullptr && dst != nullptr, "widen_indices: null arrays");
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  widen_kernel<<<stride_blocks(count), kThreads, 0, st>>>(src, dst, count);
  TCSOLVE_CUDA_CHECK_LAUNCH();
  TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(st));
}

void to_column_major(const double* src, std::int64_t row_stride, std::int64_t col_stride, std::int64_t n,
                     std::int64_t s, double* dst, void* stream) {
  if (n <= 0 || s <= 0) return;
  TCSOLVE_REQUIRE(src != nullptr && dst != nullptr, "to_column_major: null arrays");
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  to_column_major_kernel<<<stride_blocks(n * s), kThreads, 0, st>>>(src, row_stride, col_stride, n, n * s, dst);
  TCSOLVE_CUDA_CHECK_LAUNCH();
  TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(st));
}

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
