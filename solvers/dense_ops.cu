// CUDA backend of DenseBlockOps: cuBLAS (Dgemm) for Gram products and block updates, small
// kernels for column-wise work, all on one stream owned by the object. Small coefficient
// matrices go host → device through cudaMemcpy2DAsync into a staging buffer reused in stream
// order; Gram results come back through pinned memory (the only synchronizations).
// The small dense problems themselves (Cholesky, eigenproblems of size ≤ a few hundred) are
// solved on the host with Eigen (see dense_ops.hpp for why not cuSOLVER at these sizes).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/error.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/random.hpp"

namespace tcsolve {

namespace {

void cublas_check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw DeviceError(std::string(call) + " failed: cuBLAS status " + std::to_string(int(s)), file,
                    line);
}
#define TCSOLVE_CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)

constexpr int kMaxCols = 128;  // columns per launch for kernels taking per-column parameters

struct ColumnIndex {
  long long idx[kMaxCols];
};
struct ColumnCoef {
  double a[kMaxCols];
  double b[kMaxCols];
};

// y(:, j) = x(:, idx[j]); grid.y = column, grid-stride over rows.
__global__ void gather_kernel(const double* x, long long ldx, double* y, long long ldy,
                              long long rows, ColumnIndex ci) {
  const double* xs = x + ci.idx[blockIdx.y] * ldx;
  double* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    ys[i] = xs[i];
}

__global__ void axpby_kernel(const double* x, long long ldx, double* y, long long ldy,
                             long long rows, ColumnCoef c) {
  const double a = c.a[blockIdx.y], b = c.b[blockIdx.y];
  const double* xs = x + blockIdx.y * ldx;
  double* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    ys[i] = b == 0.0 ? a * xs[i] : a * xs[i] + b * ys[i];
}

__global__ void scale_rows_kernel(const double* d, const double* x, long long ldx, double* y,
                                  long long ldy, long long rows) {
  const double* xs = x + blockIdx.y * ldx;
  double* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    ys[i] = d[i] * xs[i];
}

// out[j] += Σ_i x_ij·y_ij over this block's rows (block reduction, one atomic per block).
__global__ void column_dot_kernel(const double* x, long long ldx, const double* y, long long ldy,
                                  long long rows, double* out) {
  __shared__ double part[256 / 32];
  const double* xs = x + blockIdx.y * ldx;
  const double* ys = y + blockIdx.y * ldy;
  double s = 0.0;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    s += xs[i] * ys[i];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) atomicAdd(out + blockIdx.y, s);
  }
}

__global__ void fill_random_kernel(double* x, long long ldx, long long rows, long long col0,
                                   unsigned long long seed) {
  double* xs = x + blockIdx.y * ldx;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    xs[i] = detail::random_entry(seed, i, col0 + blockIdx.y);
}

void require_device(MvView<const double> v, const char* what) {
  if (v.space != Space::device && v.cols > 0 && v.rows > 0)
    throw InvalidArgument(std::string("CUDA dense ops: ") + what + " is not a device block");
}

class CudaDenseOps final : public DenseBlockOps {
 public:
  CudaDenseOps() {
    if (device_count() == 0) throw DeviceError("no CUDA device present", __FILE__, __LINE__);
    TCSOLVE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TCSOLVE_CUBLAS_CHECK(cublasCreate(&handle_));
    TCSOLVE_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
    int dev = 0, sms = 0;
    TCSOLVE_CUDA_CHECK(cudaGetDevice(&dev));
    TCSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    sms_ = std::max(sms, 1);
    pending_.reserve(16);
    reserve(0, 0, 64 * 64);
  }
  ~CudaDenseOps() override {
    cudaStreamSynchronize(stream_);
    if (scratch_) cudaFree(scratch_);
    if (coef_) cudaFree(coef_);
    if (small_) cudaFree(small_);
    if (pinned_) cudaFreeHost(pinned_);
    if (ring_) cudaFreeHost(ring_);
    cublasDestroy(handle_);
    cudaStreamDestroy(stream_);
  }

  Space space() const override { return Space::device; }
  Backend backend() const override { return Backend::cuda; }
  void* stream() const override { return stream_; }

  void reserve(std::int64_t rows, std::int64_t cols, std::int64_t coef_elems) override {
    std::size_t need = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    if (need > scratch_elems_) {
      synchronize();
      if (scratch_) cudaFree(scratch_);
      scratch_ = static_cast<double*>(device_malloc(need * sizeof(double)));
      scratch_elems_ = need;
    }
    std::size_t ce = static_cast<std::size_t>(std::max<std::int64_t>(coef_elems, 1024));
    if (ce > coef_elems_) {
      fetch();  // pending results live in small_ / pinned_
      synchronize();
      if (coef_) cudaFree(coef_);
      if (small_) cudaFree(small_);
      if (pinned_) cudaFreeHost(pinned_);
      coef_ = static_cast<double*>(device_malloc(ce * sizeof(double)));
      small_ = static_cast<double*>(device_malloc(ce * sizeof(double)));
      TCSOLVE_CUDA_CHECK(cudaMallocHost(&pinned_, ce * sizeof(double)));
      coef_elems_ = ce;
    }
  }

  void gram(MvView<const double> x, MvView<const double> y, double* g, std::int64_t ldg) override {
    gram_deferred(x, y, g, ldg);
    fetch();
  }

  // G (p × q) into the next slice of small_; copied to g by fetch().
  void gram_deferred(MvView<const double> x, MvView<const double> y, double* g,
                     std::int64_t ldg) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows, "gram: row counts differ");
    const std::int64_t p = x.cols, q = y.cols;
    if (p == 0 || q == 0) return;
    TCSOLVE_REQUIRE(ldg >= p, "gram: ldg < rows of G");
    const std::size_t off = stage(static_cast<std::size_t>(p * q));
    const double one = 1.0, zero = 0.0;
    if (x.rows == 0) {
      TCSOLVE_CUDA_CHECK(cudaMemsetAsync(small_ + off, 0, sizeof(double) * p * q, stream_));
    } else {
      TCSOLVE_CUBLAS_CHECK(cublasDgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, int(p), int(q),
                                       int(x.rows), &one, x.data, int(x.ld), y.data, int(y.ld),
                                       &zero, small_ + off, int(p)));
    }
    pending_.push_back({off, p, q, g, ldg});
  }

  // One device → pinned copy of everything staged, one stream sync, then the host scatter.
  void fetch() override {
    if (pending_.empty()) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(pinned_, small_, sizeof(double) * small_pos_,
                                       cudaMemcpyDeviceToHost, stream_));
    synchronize();
    for (const Pending& e : pending_)
      for (std::int64_t j = 0; j < e.q; ++j)
        std::copy(pinned_ + e.off + j * e.p, pinned_ + e.off + (j + 1) * e.p, e.host + j * e.ld);
    pending_.clear();
    small_pos_ = 0;
  }

  void gemm(double alpha, MvView<const double> x, const double* c, std::int64_t ldc, double beta,
            MvView<double> y) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows, "gemm: row counts differ");
    const std::int64_t p = x.cols, q = y.cols;
    if (q == 0 || y.rows == 0) return;
    if (p == 0) {
      if (beta == 0.0) fill_zero(y);
      else if (beta != 1.0) scale_columns(beta, y);
      return;
    }
    const double* dc = upload(c, ldc, p, q);
    TCSOLVE_CUBLAS_CHECK(cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(y.rows), int(q), int(p),
                                     &alpha, x.data, int(x.ld), dc, int(p), &beta, y.data,
                                     int(y.ld)));
  }

  void multiply_inplace(MvView<double> x, const double* m, std::int64_t ldm, std::int64_t r) override {
    require_device(x, "X");
    TCSOLVE_REQUIRE(r <= x.cols, "multiply_inplace: r > cols");
    if (r == 0 || x.rows == 0) return;
    reserve(x.rows, r, 0);
    const double* dm = upload(m, ldm, x.cols, r);
    const double one = 1.0, zero = 0.0;
    TCSOLVE_CUBLAS_CHECK(cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(x.rows), int(r),
                                     int(x.cols), &one, x.data, int(x.ld), dm, int(x.cols), &zero,
                                     scratch_, int(x.rows)));
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(x.data, x.ld * sizeof(double), scratch_,
                                         x.rows * sizeof(double), x.rows * sizeof(double), r,
                                         cudaMemcpyDeviceToDevice, stream_));
  }

  void copy(MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(y.data, y.ld * sizeof(double), x.data,
                                         x.ld * sizeof(double), x.rows * sizeof(double), x.cols,
                                         cudaMemcpyDeviceToDevice, stream_));
  }

  void gather_columns(MvView<const double> x, const std::int64_t* idx, std::int64_t count,
                      MvView<double> y) override {
    TCSOLVE_REQUIRE(count <= y.cols && x.rows == y.rows, "gather: shapes");
    for (std::int64_t c0 = 0; c0 < count; c0 += kMaxCols) {
      std::int64_t nc = std::min<std::int64_t>(kMaxCols, count - c0);
      ColumnIndex ci;
      for (std::int64_t j = 0; j < nc; ++j) {
        TCSOLVE_REQUIRE(idx[c0 + j] >= 0 && idx[c0 + j] < x.cols, "gather: index out of range");
        ci.idx[j] = idx[c0 + j];
      }
      gather_kernel<<<grid(x.rows, nc), 256, 0, stream_>>>(x.data, x.ld, y.col(c0), y.ld, x.rows, ci);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void axpby_columns(const double* a, MvView<const double> x, const double* b,
                     MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "axpby: shapes differ");
    for (std::int64_t c0 = 0; c0 < x.cols; c0 += kMaxCols) {
      std::int64_t nc = std::min<std::int64_t>(kMaxCols, x.cols - c0);
      ColumnCoef cc;
      for (std::int64_t j = 0; j < nc; ++j) cc.a[j] = a[c0 + j], cc.b[j] = b[c0 + j];
      axpby_kernel<<<grid(x.rows, nc), 256, 0, stream_>>>(x.col(c0), x.ld, y.col(c0), y.ld, x.rows, cc);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void scale_rows(const double* d, MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "scale_rows: shapes differ");
    for (std::int64_t c0 = 0; c0 < x.cols; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
      scale_rows_kernel<<<grid(x.rows, nc), 256, 0, stream_>>>(d, x.col(c0), x.ld, y.col(c0), y.ld, x.rows);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void column_norms(MvView<const double> x, double* out) override {
    column_dots(x, x, out);
    for (std::int64_t j = 0; j < x.cols; ++j) out[j] = std::sqrt(std::max(out[j], 0.0));
  }

  void column_dots(MvView<const double> x, MvView<const double> y, double* out) override {
    column_dots_deferred(x, y, out);
    fetch();
  }

  void column_dots_deferred(MvView<const double> x, MvView<const double> y,
                            double* out) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "column_dots: shapes differ");
    const std::int64_t c = x.cols;
    if (c == 0) return;
    const std::size_t off = stage(static_cast<std::size_t>(c));
    TCSOLVE_CUDA_CHECK(cudaMemsetAsync(small_ + off, 0, sizeof(double) * c, stream_));
    for (std::int64_t c0 = 0; c0 < c && x.rows > 0; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, c - c0);
      column_dot_kernel<<<grid(x.rows, nc), 256, 0, stream_>>>(x.col(c0), x.ld, y.col(c0), y.ld,
                                                               x.rows, small_ + off + c0);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
    pending_.push_back({off, c, 1, out, c});
  }

  void fill_random(MvView<double> x, std::uint64_t seed) override {
    for (std::int64_t c0 = 0; c0 < x.cols; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
      fill_random_kernel<<<grid(x.rows, nc), 256, 0, stream_>>>(x.col(c0), x.ld, x.rows, c0, seed);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void fill_zero(MvView<double> x) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(x.data, x.ld * sizeof(double), 0, x.rows * sizeof(double),
                                         x.cols, stream_));
  }

  void to_host(MvView<const double> x, double* host, std::int64_t ldh) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(host, ldh * sizeof(double), x.data, x.ld * sizeof(double),
                                         x.rows * sizeof(double), x.cols, cudaMemcpyDeviceToHost,
                                         stream_));
    synchronize();
  }
  void from_host(const double* host, std::int64_t ldh, MvView<double> x) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(x.data, x.ld * sizeof(double), host, ldh * sizeof(double),
                                         x.rows * sizeof(double), x.cols, cudaMemcpyHostToDevice,
                                         stream_));
    synchronize();
  }
  void synchronize() override { TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  dim3 grid(std::int64_t rows, std::int64_t cols) const {
    // About 4 blocks per SM in total, at least one per column, at most what the rows need.
    std::int64_t per_col = std::max<std::int64_t>(1, (4 * sms_ + cols - 1) / std::max<std::int64_t>(cols, 1));
    per_col = std::min<std::int64_t>(per_col, (rows + 255) / 256);
    return dim3(static_cast<unsigned>(std::max<std::int64_t>(per_col, 1)), static_cast<unsigned>(cols));
  }
  void ensure_small(std::int64_t elems) {
    if (static_cast<std::size_t>(elems) > coef_elems_) reserve(0, 0, elems);
  }
  // Offset of `elems` fresh doubles in small_ for a deferred result; fetches first when the
  // staged results would not fit (reserve() may reallocate small_ only with nothing pending).
  std::size_t stage(std::size_t elems) {
    if (small_pos_ + elems > coef_elems_) {
      fetch();
      if (elems > coef_elems_) reserve(0, 0, static_cast<std::int64_t>(elems));
    }
    const std::size_t off = small_pos_;
    small_pos_ += elems;
    return off;
  }
  // Y *= beta, column by column (no host allocation).
  void scale_columns(double beta, MvView<double> y) {
    for (std::int64_t c0 = 0; c0 < y.cols; c0 += kMaxCols) {
      std::int64_t nc = std::min<std::int64_t>(kMaxCols, y.cols - c0);
      ColumnCoef cc;
      for (std::int64_t j = 0; j < nc; ++j) cc.a[j] = 0.0, cc.b[j] = beta;
      axpby_kernel<<<grid(y.rows, nc), 256, 0, stream_>>>(y.col(c0), y.ld, y.col(c0), y.ld, y.rows, cc);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }
  // Copies the host p × q matrix (ld) to the device staging buffer (compact, ld = p) without
  // blocking: the host copy goes into the next slice of a pinned ring (a pageable source would
  // make cudaMemcpyAsync synchronize the stream); the ring wraps after a stream sync, so no slice
  // is rewritten while its copy may still be pending. The device buffer is reused in stream order.
  const double* upload(const double* c, std::int64_t ld, std::int64_t p, std::int64_t q) {
    const std::size_t e = static_cast<std::size_t>(p * q);
    ensure_small(p * q);
    if (e > ring_elems_) {
      synchronize();
      if (ring_) cudaFreeHost(ring_);
      ring_elems_ = std::max<std::size_t>(4 * e, 1 << 16);
      TCSOLVE_CUDA_CHECK(cudaMallocHost(&ring_, ring_elems_ * sizeof(double)));
      ring_pos_ = 0;
    }
    if (ring_pos_ + e > ring_elems_) {
      synchronize();
      ring_pos_ = 0;
    }
    double* slot = ring_ + ring_pos_;
    for (std::int64_t j = 0; j < q; ++j) std::copy(c + j * ld, c + j * ld + p, slot + j * p);
    ring_pos_ += e;
    TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(coef_, slot, e * sizeof(double), cudaMemcpyHostToDevice, stream_));
    return coef_;
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  int sms_ = 1;
  double* scratch_ = nullptr;
  std::size_t scratch_elems_ = 0;
  double* coef_ = nullptr;   // staged coefficient matrices (device)
  double* small_ = nullptr;  // Gram results, column dots (device), staged from small_pos_ on
  double* pinned_ = nullptr; // host side of small_
  struct Pending {           // a staged result: p × q at small_ + off, for host (ld)
    std::size_t off;
    std::int64_t p, q;
    double* host;
    std::int64_t ld;
  };
  std::vector<Pending> pending_;
  std::size_t small_pos_ = 0;
  std::size_t coef_elems_ = 0;
  double* ring_ = nullptr;   // pinned upload ring
  std::size_t ring_elems_ = 0, ring_pos_ = 0;
};

}  // namespace

std::unique_ptr<DenseBlockOps> make_cuda_dense_ops() { return std::make_unique<CudaDenseOps>(); }

}  // namespace tcsolve
