// CUDA backend of DenseBlockOps: cuBLAS (Dgemm) for Gram products and block updates, small
// kernels for column-wise work, all on one stream owned by the object (its shared state:
// dense/cuda_context.cuh). Small coefficient matrices go host → device through cudaMemcpy2DAsync
// into a staging buffer reused in stream order; Gram results come back through pinned memory
// (the only synchronizations). Small-output Gram products and tall products by small
// matrices on the fp64 tensor cores (mma.sync m8n8k4 f64). The parts are dense/queue.cu,
// dense/small_dense.cu, cg/cg_kernels.cu and chebyshev/chebyshev_kernels.cu; the CPU twin is
// dense_ops.cpp.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "core/cuda_check.cuh"
#include "core/cuda_library_check.cuh"
#include "core/error.hpp"
#include "solvers/dense/cuda_context.cuh"
#include "solvers/dense/tiles.cuh"
#include "solvers/dense_ops.hpp"
#include "solvers/random.hpp"

namespace tcsolve {

namespace {

using cuda_dense::CudaContext;
using cuda_dense::dmma;
using cuda_dense::frag_ld;
using cuda_dense::load_pair;
using cuda_dense::load_strip_a;
using cuda_dense::require_device;
using cuda_dense::stage_small;
using cuda_dense::store_pair;

__global__ void scale_rows_kernel(const double* d, const double* x, long long ldx, double* y,
                                  long long ldy, long long rows) {
  const double* xs = x + blockIdx.y * ldx;
  double* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    ys[i] = d[i] * xs[i];
}

__global__ void fill_random_kernel(double* x, long long ldx, long long rows, long long col0,
                                   unsigned long long seed, long long row0) {
  double* xs = x + blockIdx.y * ldx;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    xs[i] = detail::random_entry(seed, row0 + i, col0 + blockIdx.y);
}

__global__ void sqrt_kernel(double* v, long long count) {
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    v[i] = sqrt(fmax(v[i], 0.0));
}

// x_ij /= norm_j for norm_j > 0 (grid.y = column).
__global__ void scale_by_inverse_kernel(double* x, long long ldx, long long rows,
                                        const double* norms) {
  const double nj = norms[blockIdx.y];
  if (!(nj > 0.0)) return;
  const double inv = 1.0 / nj;
  double* xs = x + blockIdx.y * ldx;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    xs[i] *= inv;
}

// Y = α·X·C + β·Y (gemm_into) for X n × p (p ≤ 8·QT) and a small C p × q (q ≤ 8·RT), the
// pattern of cg_direction_kernel: one warp per strip (grid-stride), the strip's X fragments in
// registers, C in shared memory, DMMA m8n8k4. Reads X once (and Y when β ≠ 0), writes Y once:
// (p + q [+ q])·8 bytes a row. Y must not alias X. (Instead of cuBLAS, whose kernel for each new
// shape loads on first use: 13 ms on an H200, bench/first_use.)
template <int QT, int RT, bool V>
__global__ void __launch_bounds__(128) tall_gemm_kernel(long long n, int p, int q, double alpha,
                                                        const double* xm, long long ldx,
                                                        const double* cm, long long ldc,
                                                        double beta, double* ym, long long ldy) {
  constexpr int LDA = frag_ld(8 * RT);
  constexpr int U = V ? 2 : 1;
  extern __shared__ double smem[];
  const double* cs = smem;  // C, 8QT × LDA (row k at k·LDA)
  stage_small<8 * QT, LDA>({cm}, {ldc}, p, q, smem);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  for (long long s0 = 8 * U * (static_cast<long long>(blockIdx.x) * nw + warp); s0 < n;
       s0 += 8LL * U * gridDim.x * nw) {
    const bool full = s0 + 16 <= n;
    const long long row = V ? s0 + 2 * g : s0 + g;
    const bool rv = row < n;
    double af[U][2 * QT], yf[U][RT][2];
    load_strip_a<U>(xm, ldx, p, row, n, full, af);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int ct = 0; ct < RT; ++ct) yf[u][ct][0] = yf[u][ct][1] = 0.0;
#pragma unroll
    for (int ct = 0; ct < RT; ++ct) {
#pragma unroll
      for (int ks = 0; ks < 2 * QT; ++ks) {
        const double cf = cs[(4 * ks + t) * LDA + 8 * ct + g];
#pragma unroll
        for (int u = 0; u < U; ++u) dmma(yf[u][ct][0], yf[u][ct][1], af[u][ks], cf);
      }
    }
#pragma unroll
    for (int ct = 0; ct < RT; ++ct) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * ct + 2 * t + h;
        if (c >= q) continue;
        double* yc = ym + c * ldy;
        if (V) {
          double lo = alpha * yf[0][ct][h], hi = alpha * yf[U - 1][ct][h];
          if (beta != 0.0) {
            double y0, y1;
            load_pair(yc, row, n, full, y0, y1);
            lo = fma(alpha, yf[0][ct][h], beta * y0);
            hi = fma(alpha, yf[U - 1][ct][h], beta * y1);
          }
          store_pair(yc, row, n, full, lo, hi);
        } else if (rv) {
          double* yp = yc + row;
          *yp = beta == 0.0 ? alpha * yf[0][ct][h] : fma(alpha, yf[0][ct][h], beta * *yp);
        }
      }
    }
  }
}

class CudaDenseOps final : public DenseBlockOps {
 public:
  explicit CudaDenseOps(std::unique_ptr<CudaContext> ctx)
      : DenseBlockOps(Backend::cuda, ctx->stream),
        owned_(std::move(ctx)),
        ctx_(*owned_),
        queue_impl_(cuda_dense::make_queue(ctx_, *this)),
        small_impl_(cuda_dense::make_small_dense(ctx_)),
        cg_impl_(cuda_dense::make_cg_kernels(ctx_, *this)),
        chebyshev_impl_(cuda_dense::make_chebyshev_kernels(ctx_, *this)) {
    set_parts(*queue_impl_, *small_impl_, *cg_impl_, *chebyshev_impl_);
    // The tall GEMM kernel uses up to ~70 KB of dynamic shared memory.
    auto allow = [](const void* f, int bytes) {
      TCSOLVE_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    };
    allow(reinterpret_cast<const void*>(&tall_gemm_kernel<4, 4, false>), tall_gemm_smem(4, 4));
    allow(reinterpret_cast<const void*>(&tall_gemm_kernel<4, 4, true>), tall_gemm_smem(4, 4));
  }
  ~CudaDenseOps() override { cudaStreamSynchronize(ctx_.stream); }

  void reserve(std::int64_t rows, std::int64_t cols, std::int64_t coef_elems) override {
    ctx_.reserve(rows, cols, coef_elems);
  }

  void gram(MvView<const double> x, MvView<const double> y, double* g, std::int64_t ldg) override {
    queue().gram_deferred(x, y, g, ldg);
    queue().fetch();
  }

  void gemm(double alpha, MvView<const double> x, const double* c, std::int64_t ldc, double beta,
            MvView<double> y) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows, "gemm: row counts differ");
    const std::int64_t p = x.cols, q = y.cols;
    // no product to add (an empty Y: nothing at all)
    if (p == 0 || q == 0 || y.rows == 0) return ctx_.scale_or_zero(beta, y);
    const double* dc = ctx_.upload(c, ldc, p, q);
    gemm_into(alpha, x, MvView<const double>{dc, p, q, p, Space::device}, beta, y);
  }

  void multiply_inplace(MvView<double> x, const double* m, std::int64_t ldm, std::int64_t r) override {
    require_device(x, "X");
    TCSOLVE_REQUIRE(r <= x.cols, "multiply_inplace: r > cols");
    if (r == 0 || x.rows == 0) return;
    ctx_.reserve(x.rows, r, 0);
    const double* dm = ctx_.upload(m, ldm, x.cols, r);
    gemm_into(1.0, x, MvView<const double>{dm, x.cols, r, x.cols, Space::device}, 0.0,
              MvView<double>{ctx_.scratch, x.rows, r, x.rows, Space::device});
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(x.data, x.ld * sizeof(double), ctx_.scratch,
                                         x.rows * sizeof(double), x.rows * sizeof(double), r,
                                         cudaMemcpyDeviceToDevice, ctx_.stream));
  }

  void copy(MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    if (x.rows == 0 || x.cols == 0) return;
    if (x.ld == x.rows && y.ld == y.rows) {  // contiguous: a 1-D copy (2-D copies run slower)
      TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data, sizeof(double) * x.rows * x.cols,
                                         cudaMemcpyDeviceToDevice, ctx_.stream));
      return;
    }
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(y.data, y.ld * sizeof(double), x.data,
                                         x.ld * sizeof(double), x.rows * sizeof(double), x.cols,
                                         cudaMemcpyDeviceToDevice, ctx_.stream));
  }

  void gather_columns(MvView<const double> x, const std::int64_t* idx, std::int64_t count,
                      MvView<double> y) override {
    ctx_.gather(x, idx, count, y);
  }

  void axpby_columns(const double* a, MvView<const double> x, const double* b,
                     MvView<double> y) override {
    ctx_.axpby_columns(a, x, b, y);
  }

  void scale_rows(const double* d, MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "scale_rows: shapes differ");
    for (std::int64_t c0 = 0; c0 < x.cols; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
      scale_rows_kernel<<<ctx_.grid(x.rows, nc), 256, 0, ctx_.stream>>>(d, x.col(c0), x.ld, y.col(c0), y.ld, x.rows);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void column_norms(MvView<const double> x, double* out) override {
    column_dots(x, x, out);
    for (std::int64_t j = 0; j < x.cols; ++j) out[j] = std::sqrt(std::max(out[j], 0.0));
  }

  void column_dots(MvView<const double> x, MvView<const double> y, double* out) override {
    queue().column_dots_deferred(x, y, out);
    queue().fetch();
  }

  void fill_random_rows(MvView<double> x, std::uint64_t seed, std::int64_t row0) override {
    for (std::int64_t c0 = 0; c0 < x.cols; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
      fill_random_kernel<<<ctx_.grid(x.rows, nc), 256, 0, ctx_.stream>>>(x.col(c0), x.ld, x.rows, c0, seed,
                                                                row0);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void fill_zero(MvView<double> x) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(x.data, x.ld * sizeof(double), 0, x.rows * sizeof(double),
                                         x.cols, ctx_.stream));
  }

  void to_host(MvView<const double> x, double* host, std::int64_t ldh) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(host, ldh * sizeof(double), x.data, x.ld * sizeof(double),
                                         x.rows * sizeof(double), x.cols, cudaMemcpyDeviceToHost,
                                         ctx_.stream));
    ctx_.synchronize();
  }
  void from_host(const double* host, std::int64_t ldh, MvView<double> x) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(x.data, x.ld * sizeof(double), host, ldh * sizeof(double),
                                         x.rows * sizeof(double), x.cols, cudaMemcpyHostToDevice,
                                         ctx_.stream));
    ctx_.synchronize();
  }
  void synchronize() override { ctx_.synchronize(); }

  // ==== backend-resident small matrices =======================================================

  void gram_into(double alpha, MvView<const double> x, MvView<const double> y, double beta,
                 MvView<double> g) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows && g.rows == x.cols && g.cols == y.cols, "gram_into: shapes");
    const std::int64_t p = x.cols, q = y.cols;
    // no product to add (an empty G: nothing at all)
    if (x.rows == 0 || p == 0 || q == 0) return ctx_.scale_or_zero(beta, g);
    const int mt = static_cast<int>((p + 7) / 8), nt = static_cast<int>((q + 7) / 8);
    if (ctx_.fused && ((mt <= 8 && nt <= 4) || (mt <= 4 && nt <= 8)) && x.rows >= 4096) {
      const std::size_t sh = static_cast<std::size_t>(p * q) * sizeof(double);
      const int nb = ctx_.launch_gram_tn(mt, nt, sh, x, y);
      ctx_.gram_finish(nb, static_cast<int>(p), static_cast<int>(q), alpha, beta, g.data, g.ld);
      return;
    }
    TCSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.handle, CUBLAS_OP_T, CUBLAS_OP_N, int(p), int(q), int(x.rows),
                                     &alpha, x.data, int(x.ld), y.data, int(y.ld), &beta, g.data,
                                     int(g.ld)));
  }

  void gemm_into(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                 MvView<double> y) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows && c.rows == x.cols && c.cols == y.cols, "gemm_into: shapes");
    const std::int64_t p = x.cols, q = y.cols;
    // no product to add (an empty Y: nothing at all)
    if (p == 0 || q == 0 || y.rows == 0) return ctx_.scale_or_zero(beta, y);
    require_device(c, "C");
    // tcsolve's kernel up to 32 × 32 only: there it saves cuBLAS's first-use load (13 ms a
    // process) for ~0.04 ms a call (1M × 32: 0.187 against 0.148 ms); at 48–64 columns its
    // 8 × 8-tile instance ran at 2.0–2.3 TB/s against cuBLAS's 3.7 (occupancy 31 %, registers
    // and shared memory), which cost lap2d:1000 k = 32 0.1 s of its 2.6 s solve (H200).
    if (ctx_.fused && ctx_.tall_gemm && p <= 32 && q <= 32) {
      launch_tall_gemm<4, 4>(alpha, x, c, beta, y);
      return;
    }
    TCSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.handle, CUBLAS_OP_N, CUBLAS_OP_N, int(y.rows), int(q), int(p),
                                     &alpha, x.data, int(x.ld), c.data, int(c.ld), &beta, y.data,
                                     int(y.ld)));
  }
  template <int QT, int RT>
  void launch_tall_gemm(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                        MvView<double> y) {
    if (ctx_.template pairs_ok<double>({x, y})) launch_tall_gemm_instance<QT, RT, true>(alpha, x, c, beta, y);
    else launch_tall_gemm_instance<QT, RT, false>(alpha, x, c, beta, y);
  }
  template <int QT, int RT, bool V>
  void launch_tall_gemm_instance(double alpha, MvView<const double> x, MvView<const double> c,
                                 double beta, MvView<double> y) {
    const int smem = tall_gemm_smem(QT, RT);
    const int nb = static_cast<int>(std::min<std::int64_t>(
        ctx_.resident_blocks(reinterpret_cast<const void*>(&tall_gemm_kernel<QT, RT, V>), 128, smem),
        (y.rows + 31) / 32));
    tall_gemm_kernel<QT, RT, V><<<nb, 128, smem, ctx_.stream>>>(
        y.rows, static_cast<int>(x.cols), static_cast<int>(y.cols), alpha, x.data, x.ld, c.data,
        c.ld, beta, y.data, y.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void sqrt_elements(MvView<double> v) override {
    if (v.rows == 0) return;
    sqrt_kernel<<<static_cast<unsigned>((v.rows + 255) / 256), 256, 0, ctx_.stream>>>(v.data, v.rows);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void scale_columns_inverse(MvView<const double> d, MvView<double> x) override {
    TCSOLVE_REQUIRE(d.rows >= x.cols, "scale_columns_inverse: d too short");
    for (std::int64_t c0 = 0; c0 < x.cols && x.rows > 0; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
      scale_by_inverse_kernel<<<ctx_.grid(x.rows, nc), 256, 0, ctx_.stream>>>(x.col(c0), x.ld,
                                                                              x.rows, d.data + c0);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void column_dots_into(MvView<const double> x, MvView<const double> y,
                        MvView<double> out) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols && out.rows >= x.cols,
                    "column_dots_into: shapes");
    if (x.cols == 0) return;
    ctx_.column_dots_to(x, y, out.data, 1);
  }

  void normalize_columns(MvView<double> x, MvView<double> norms) override {
    column_dots_into(x, x, norms);
    const std::int64_t c = x.cols;
    if (c == 0) return;
    sqrt_elements({norms.data, c, 1, c, Space::device});
    scale_columns_inverse(norms, x);
  }

 private:
  static int tall_gemm_smem(int qt, int rt) {
    return static_cast<int>(sizeof(double)) * 8 * qt * frag_ld(8 * rt);
  }

  std::unique_ptr<CudaContext> owned_;
  CudaContext& ctx_;
  std::unique_ptr<DenseQueue> queue_impl_;
  std::unique_ptr<SmallDense> small_impl_;
  std::unique_ptr<CgKernels> cg_impl_;
  std::unique_ptr<ChebyshevKernels> chebyshev_impl_;
};

}  // namespace

std::unique_ptr<DenseBlockOps> make_cuda_dense_ops() {
  return std::make_unique<CudaDenseOps>(std::make_unique<CudaContext>());
}

}  // namespace tcsolve
