// CUDA backend of ChebyshevKernels (solvers/chebyshev/chebyshev_kernels.hpp): the three-term
// recurrence in one pass (16-byte accesses over contiguous blocks), the residual norms as block
// partials summed in a fixed order. The CPU twin is chebyshev_kernels.cpp.
#include <algorithm>
#include <cstdint>

#include "solvers/dense/cuda_context.cuh"
#include "solvers/dense/tiles.cuh"

namespace tcsolve::cuda_dense {

namespace {

// Z = a·X + b·Y + c·Z over a flat range (the three views have ld == rows, so their columns are
// contiguous): 16-byte accesses when every pointer is 16-byte aligned.
template <bool kReadZ>
__global__ void axpbypcz_flat_kernel(long long count, double a, const double* __restrict__ x,
                                     double b, const double* __restrict__ y, double c,
                                     double* __restrict__ z) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long half = count / 2;
  const double2* x2 = reinterpret_cast<const double2*>(x);
  const double2* y2 = reinterpret_cast<const double2*>(y);
  double2* z2 = reinterpret_cast<double2*>(z);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < half;
       i += stride) {
    double2 xv = x2[i], yv = y2[i], out;
    if (kReadZ) {
      double2 zv = z2[i];
      out.x = a * xv.x + b * yv.x + c * zv.x;
      out.y = a * xv.y + b * yv.y + c * zv.y;
    } else {
      out.x = a * xv.x + b * yv.x;
      out.y = a * xv.y + b * yv.y;
    }
    z2[i] = out;
  }
  if ((count & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
    const long long i = count - 1;
    z[i] = kReadZ ? a * x[i] + b * y[i] + c * z[i] : a * x[i] + b * y[i];
  }
}

// The same on general views (grid.y = column).
__global__ void axpbypcz_kernel(long long rows, double a, const double* x, long long ldx, double b,
                                const double* y, long long ldy, double c, double* z,
                                long long ldz) {
  const double* xs = x + blockIdx.y * ldx;
  const double* ys = y + blockIdx.y * ldy;
  double* zs = z + blockIdx.y * ldz;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    zs[i] = c == 0.0 ? a * xs[i] + b * ys[i] : a * xs[i] + b * ys[i] + c * zs[i];
}

// partial[j·gridDim.x + b] = Σ over block b's rows of (ax_ij − s·θ_j·x_ij)² (column_sum_kernel
// adds them).
__global__ void residual_sq_kernel(const double* ax, long long ldax, const double* x, long long ldx,
                                   long long rows, const double* theta, double s, double* partial) {
  const double t = s * theta[blockIdx.y];
  const double* as = ax + blockIdx.y * ldax;
  const double* xs = x + blockIdx.y * ldx;
  double acc = 0.0;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows;
       i += gridDim.x * blockDim.x) {
    const double d = as[i] - t * xs[i];
    acc += d * d;
  }
  block_column_partial(acc, partial);
}

class CudaChebyshevKernels final : public ChebyshevKernels {
 public:
  CudaChebyshevKernels(CudaContext& ctx, DenseBlockOps& ops) : ctx_(ctx), ops_(ops) {}

  void axpbypcz(double a, MvView<const double> x, double b, MvView<const double> y, double c,
                MvView<double> z) override {
    TCSOLVE_REQUIRE(x.rows == z.rows && y.rows == z.rows && x.cols == z.cols && y.cols == z.cols,
                    "axpbypcz: shapes differ");
    if (z.rows == 0 || z.cols == 0) return;
    const bool flat = x.ld == x.rows && y.ld == y.rows && z.ld == z.rows;
    const bool aligned = (reinterpret_cast<std::uintptr_t>(x.data) |
                          reinterpret_cast<std::uintptr_t>(y.data) |
                          reinterpret_cast<std::uintptr_t>(z.data)) % 16 == 0;
    if (flat && aligned) {
      const long long count = z.rows * z.cols;
      const unsigned blocks = static_cast<unsigned>(
          std::max<long long>(1, std::min<long long>(8LL * ctx_.sms, (count / 2 + 255) / 256)));
      if (c == 0.0)
        axpbypcz_flat_kernel<false><<<blocks, 256, 0, ctx_.stream>>>(count, a, x.data, b, y.data, c, z.data);
      else
        axpbypcz_flat_kernel<true><<<blocks, 256, 0, ctx_.stream>>>(count, a, x.data, b, y.data, c, z.data);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    for (std::int64_t c0 = 0; c0 < z.cols; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, z.cols - c0);
      axpbypcz_kernel<<<ctx_.grid(z.rows, nc), 256, 0, ctx_.stream>>>(z.rows, a, x.col(c0), x.ld, b,
                                                             y.col(c0), y.ld, c, z.col(c0), z.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void residual_sq_norms_into(MvView<const double> ax, MvView<const double> x,
                              MvView<const double> theta, double s, MvView<double> out) override {
    check_residual_norms(ax, x, theta, out);
    const std::int64_t c = x.cols;
    if (c == 0) return;
    if (x.rows == 0) {
      TCSOLVE_CUDA_CHECK(cudaMemsetAsync(out.data, 0, sizeof(double) * c, ctx_.stream));
      return;
    }
    for (std::int64_t c0 = 0; c0 < c; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, c - c0);
      const dim3 gr = ctx_.grid(x.rows, nc);
      ctx_.ensure_partial(static_cast<int>(gr.x), static_cast<std::size_t>(nc));
      residual_sq_kernel<<<gr, 256, 0, ctx_.stream>>>(ax.col(c0), ax.ld, x.col(c0), x.ld, x.rows,
                                                  theta.data + c0, s, ctx_.partial);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      ctx_.column_sums(static_cast<int>(gr.x), static_cast<int>(nc), out.data + c0, 1);
    }
  }
 private:
  void sqrt_elements(MvView<double> v) override { ops_.sqrt_elements(v); }
  CudaContext& ctx_;
  DenseBlockOps& ops_;
};

}  // namespace

std::unique_ptr<ChebyshevKernels> make_chebyshev_kernels(CudaContext& ctx, DenseBlockOps& ops) {
  return std::make_unique<CudaChebyshevKernels>(ctx, ops);
}

}  // namespace tcsolve::cuda_dense
