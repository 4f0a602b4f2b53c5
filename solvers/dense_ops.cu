// CUDA backend of DenseBlockOps: cuBLAS (Dgemm) for Gram products and block updates, small
// kernels for column-wise work, all on one stream owned by the object. Small coefficient
// matrices go host → device through cudaMemcpy2DAsync into a staging buffer reused in stream
// order; Gram results come back through pinned memory (the only synchronizations).
// The host-side interface's small problems (gram(), fetch()) are solved by the callers on the
// host; the backend-resident half of the interface (dense_ops.hpp) keeps them on the device:
// cuSOLVER syevd/syevj and potrf/potrs for the small dense problems, single-block kernels for
// their scaling and status flags, and fused multi-vector kernels on the fp64 tensor cores
// (mma.sync m8n8k4 f64) for the small-output Gram products and the two block CG passes.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/cuda_library_check.cuh"
#include "core/error.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/random.hpp"

namespace tcsolve {

namespace {

constexpr int kMaxCols = 128;  // columns per launch for kernels taking per-column parameters

struct ColumnIndex {
  long long idx[kMaxCols];
};
struct ColumnCoef {
  double a[kMaxCols];
  double b[kMaxCols];
};

// y(:, j) = x(:, idx[j]) (fp64 or fp32 blocks); grid.y = column, grid-stride over rows.
template <class T>
__global__ void gather_kernel(const T* x, long long ldx, T* y, long long ldy, long long rows,
                              ColumnIndex ci) {
  const T* xs = x + ci.idx[blockIdx.y] * ldx;
  T* ys = y + blockIdx.y * ldy;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    ys[i] = xs[i];
}

// y = fp32(x) (ADD false) or y += α·x (ADD true, y fp64); grid.y = column.
template <bool ADD>
__global__ void convert_kernel(const void* x, long long ldx, void* y, long long ldy, long long rows,
                               double alpha) {
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x) {
    if (ADD)
      static_cast<double*>(y)[i + blockIdx.y * ldy] +=
          alpha * static_cast<const float*>(x)[i + blockIdx.y * ldx];
    else
      static_cast<float*>(y)[i + blockIdx.y * ldy] =
          static_cast<float>(static_cast<const double*>(x)[i + blockIdx.y * ldx]);
  }
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

// partial[j·gridDim.x + b] = Σ_i x_ij·y_ij over block b's rows (a block reduction); column_sum_kernel
// adds the blocks' partials in a fixed order. (Atomics made the sum's rounding depend on the
// blocks' timing: block CG's true residuals at tol's edge then decided an extra cycle or not,
// 115 or 139 iterations on elast3d:64 from one run to the next.)
__global__ void column_dot_kernel(const double* x, long long ldx, const double* y, long long ldy,
                                  long long rows, double* partial) {
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
    if (threadIdx.x == 0) partial[blockIdx.y * gridDim.x + blockIdx.x] = s;
  }
}

// out[j·stride] = Σ_b partial[j·nb + b]: one warp a column (8 a block), lanes over the blocks,
// then a fixed shuffle tree (deterministic).
__global__ void column_sum_kernel(const double* partial, int nb, int cols, double* out,
                                  long long stride) {
  const int j = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (j >= cols) return;
  double s = 0.0;
  for (int b = lane; b < nb; b += 32) s += partial[static_cast<long long>(j) * nb + b];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) out[j * stride] = s;
}

__global__ void fill_random_kernel(double* x, long long ldx, long long rows, long long col0,
                                   unsigned long long seed, long long row0) {
  double* xs = x + blockIdx.y * ldx;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    xs[i] = detail::random_entry(seed, row0 + i, col0 + blockIdx.y);
}

// ============================================================================================
// Kernels of the backend-resident half of the interface.
// ============================================================================================

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

// out[j] += Σ_i (ax_ij − s·θ_j·x_ij)² over this block's rows (out zeroed before).
// partial[j·gridDim.x + b] = Σ over block b's rows of (ax_ij − s·θ_j·x_ij)² (column_sum_kernel
// adds them).
__global__ void residual_sq_kernel(const double* ax, long long ldax, const double* x, long long ldx,
                                   long long rows, const double* theta, double s, double* partial) {
  __shared__ double part[256 / 32];
  const double t = s * theta[blockIdx.y];
  const double* as = ax + blockIdx.y * ldax;
  const double* xs = x + blockIdx.y * ldx;
  double acc = 0.0;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows;
       i += gridDim.x * blockDim.x) {
    const double d = as[i] - t * xs[i];
    acc += d * d;
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0;
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) partial[blockIdx.y * gridDim.x + blockIdx.x] = acc;
  }
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

// ---- single-block kernels for the small dense problems (r ≤ a few hundred) ----

// spd_factor, before potrf: status = 2 if a diagonal entry of G is ≤ 0 / not finite;
// F(:, 0:r) = D·sym(G)·D, F(:, r) = D = diag(G)^(-1/2) (1 where invalid).
// ---- Small dense factorizations in one thread block (n ≤ kSmallDim) ----
// cuSOLVER's potrf/potrs and cuBLAS's trsm and small GEMMs load their kernels lazily, on a
// process's first call: 23 ms on an H200 for pip_factor's first call (64 ms without the start-up
// warm-up, 140 ms in a machine's first process; bench/first_use), more than the whole solve of a
// small problem. Below kSmallDim these kernels, in tcsolve's own module, do the same work.
constexpr int kSmallDim = 64;

// The n × n lower triangle of a (ld lda) into shared s (ld n), zeros above it; the whole block.
__device__ void load_lower_shared(const double* a, long long lda, int n, double* s) {
  for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
    const int i = e % n, j = e / n;
    s[e] = i >= j ? a[i + j * lda] : 0.0;
  }
}

// Right-looking lower Cholesky of the n × n matrix s (ld n, lower triangle) in shared memory by
// the whole block; returns 0, or j + 1 for the first pivot that is not positive and finite (the
// columns from j on are then not a factor). Every thread returns the same value.
__device__ int block_cholesky_shared(double* s, int n) {
  for (int j = 0; j < n; ++j) {
    const double d = s[j + j * n];  // the same value in every thread: a uniform branch
    if (!(d > 0.0) || !isfinite(d)) return j + 1;
    const double r = sqrt(d);
    __syncthreads();  // (every thread has read d)
    if (threadIdx.x == 0) s[j + j * n] = r;
    for (int i = j + 1 + threadIdx.x; i < n; i += blockDim.x) s[i + j * n] /= r;
    __syncthreads();
    // trailing lower triangle: s(i, k) −= s(i, j)·s(k, j), j < k ≤ i < n
    const int m = n - j - 1;
    for (int e = threadIdx.x; e < m * m; e += blockDim.x) {
      const int i = j + 1 + e % m, k = j + 1 + e / m;
      if (k <= i) s[i + k * n] -= s[i + j * n] * s[k + j * n];
    }
    __syncthreads();
  }
  return 0;
}

// In-place lower Cholesky a = L·Lᵀ of the n × n matrix a (lower triangle read and written),
// n ≤ kSmallDim. info: 0, or j + 1 for the first pivot that is not positive and finite (as potrf).
__global__ void small_cholesky_kernel(double* a, long long lda, int n, int* info) {
  __shared__ double s[kSmallDim * kSmallDim];
  load_lower_shared(a, lda, n, s);
  __syncthreads();
  const int bad = block_cholesky_shared(s, n);
  __syncthreads();
  for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
    const int i = e % n, j = e / n;
    if (i >= j) a[i + j * lda] = s[e];
  }
  if (threadIdx.x == 0) *info = bad;
}

// T = L⁻ᵀ (n × n, ld n; upper triangular, its strict lower part 0) for the lower triangular L in
// a (n ≤ kSmallDim). Thread c: column c of L⁻¹ by forward substitution, stored as row c of T.
__global__ void small_lower_inverse_t_kernel(const double* a, long long lda, int n, double* t) {
  __shared__ double s[kSmallDim * kSmallDim];
  load_lower_shared(a, lda, n, s);
  __syncthreads();
  for (int c = threadIdx.x; c < n; c += blockDim.x) {
    for (int i = 0; i < c; ++i) t[c + i * n] = 0.0;
    t[c + c * n] = 1.0 / s[c + c * n];
    for (int i = c + 1; i < n; ++i) {
      double sum = 0.0;
      for (int k = c; k < i; ++k) sum = fma(s[i + k * n], t[c + k * n], sum);
      t[c + i * n] = -sum / s[i + i * n];
    }
  }
}

// spd_factor in one launch for r ≤ kSmallDim (one block; replaces spd_scale → Cholesky →
// spd_status, three launches): F(:, r) = D = diag(G)^(-1/2) (1 where a diagonal entry is not
// positive and finite), F(:, 0:r) = D·sym(G)·D with its lower triangle overwritten by the
// Cholesky factor (right-looking, in shared memory). status: 2 for a bad diagonal entry or a
// pivot that is not positive and finite, 1 when the smallest pivot² < piv_tol, else 0.
__global__ void small_spd_factor_kernel(const double* g, long long ldg, int r, double* f,
                                        long long ldf, double piv_tol, double* status) {
  __shared__ double s[kSmallDim * kSmallDim];
  __shared__ double dv[kSmallDim];
  __shared__ int bad_diag;
  if (threadIdx.x == 0) bad_diag = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < r; i += blockDim.x) {
    const double d = g[i + i * ldg];
    const bool ok = d > 0.0 && isfinite(d);
    if (!ok) bad_diag = 1;
    dv[i] = ok ? rsqrt(d) : 1.0;
    f[i + r * ldf] = dv[i];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < r * r; e += blockDim.x) {
    const int i = e % r, j = e / r;
    const double v = dv[i] * 0.5 * (g[i + j * ldg] + g[j + i * ldg]) * dv[j];
    s[e] = v;
    if (i < j) f[i + j * ldf] = v;  // the strict upper triangle keeps D·sym(G)·D
  }
  __syncthreads();
  const int bad_pivot = block_cholesky_shared(s, r);
  __syncthreads();
  for (int e = threadIdx.x; e < r * r; e += blockDim.x) {
    const int i = e % r, j = e / r;
    if (i >= j) f[i + j * ldf] = s[e];
  }
  if (threadIdx.x == 0) {
    double piv = 1e300;
    for (int i = 0; i < r; ++i) piv = fmin(piv, s[i + i * r]);
    status[0] = bad_diag || bad_pivot || !(piv > 0.0) || !isfinite(piv)
                    ? 2.0
                    : (piv * piv < piv_tol ? 1.0 : 0.0);
  }
}

// spd_solve in one launch for r ≤ kSmallDim: out = sign·D·(Lc·Lcᵀ)⁻¹·D·B, zero when status = 2.
// One warp per column of B (lane i holds rows i and i + 32 in registers): forward then backward
// substitution, each step a shuffle broadcast of the finished entry and one fma per lane; L in
// shared memory with its reciprocal diagonal. (The former one-thread-per-column solve walked
// its column serially: 95 µs a call for r = 32 under ncu.) out may alias B: a warp reads its
// column before writing it, and columns are disjoint.
__global__ void small_spd_solve_kernel(const double* f, long long ldf, int r, const double* b,
                                       long long ldb, int cols, double sign,
                                       const double* status, double* out, long long ldo) {
  extern __shared__ double sl[];  // L (r × r, ld r), then 1/L_kk (r), then D (r)
  double* idiag = sl + r * r;
  double* dv = idiag + r;
  const bool zero = status[0] == 2.0;
  if (!zero) {
    load_lower_shared(f, ldf, r, sl);
    for (int i = threadIdx.x; i < r; i += blockDim.x) {
      idiag[i] = 1.0 / f[i + i * ldf];
      dv[i] = f[i + r * ldf];
    }
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int c = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (c >= cols) return;
  const int i0 = lane, i1 = lane + 32;
  const bool v0 = i0 < r, v1 = i1 < r;
  double x0 = 0.0, x1 = 0.0;
  if (!zero) {
    x0 = v0 ? sign * dv[i0] * b[i0 + c * ldb] : 0.0;
    x1 = v1 ? sign * dv[i1] * b[i1 + c * ldb] : 0.0;
    // L·y = x: entry k final, then rows i > k subtract L_ik·y_k.
    for (int k = 0; k < r; ++k) {
      const double own = k < 32 ? x0 : x1;
      const double yk = __shfl_sync(0xffffffffu, own, k & 31) * idiag[k];
      if (k < 32 && lane == k) x0 = yk;
      if (k >= 32 && lane == k - 32) x1 = yk;
      if (v0 && i0 > k) x0 = fma(-sl[i0 + k * r], yk, x0);
      if (v1 && i1 > k) x1 = fma(-sl[i1 + k * r], yk, x1);
    }
    // Lᵀ·x = y: entry k final, then rows i < k subtract L_ki·x_k.
    for (int k = r - 1; k >= 0; --k) {
      const double own = k < 32 ? x0 : x1;
      const double xk = __shfl_sync(0xffffffffu, own, k & 31) * idiag[k];
      if (k < 32 && lane == k) x0 = xk;
      if (k >= 32 && lane == k - 32) x1 = xk;
      if (i0 < k) x0 = fma(-sl[k + i0 * r], xk, x0);
      if (v1 && i1 < k) x1 = fma(-sl[k + i1 * r], xk, x1);
    }
    x0 = v0 ? dv[i0] * x0 : 0.0;
    x1 = v1 ? dv[i1] * x1 : 0.0;
  }
  if (v0) out[i0 + c * ldo] = x0;
  if (v1) out[i1 + c * ldo] = x1;
}

// S (w × w, ld w) −= CᵀC for C = g(0:l, 0:w) (pip_factor's Pythagorean Gram; w ≤ kSmallDim).
__global__ void small_syrk_sub_kernel(const double* g, long long ldg, int l, int w, double* s) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= w * w) return;
  const int i = e % w, j = e / w;
  const double* ci = g + i * ldg;
  const double* cj = g + j * ldg;
  double sum = 0.0;
  for (int k = 0; k < l; ++k) sum = fma(ci[k], cj[k], sum);
  s[e] -= sum;
}

// CT (l × w, ld l) = −C·T for C = g(0:l, 0:w) and T (w × w, ld w).
__global__ void small_neg_gemm_kernel(const double* g, long long ldg, int l, int w, const double* t,
                                      double* ct) {
  const long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (e >= static_cast<long long>(l) * w) return;
  const int i = static_cast<int>(e % l), j = static_cast<int>(e / l);
  double sum = 0.0;
  for (int k = 0; k < w; ++k) sum = fma(g[i + k * ldg], t[k + j * w], sum);
  ct[e] = -sum;
}

__global__ void spd_scale_kernel(const double* g, long long ldg, int r, double* f, long long ldf,
                                 double* status) {
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  double* dv = f + r * ldf;
  for (int i = threadIdx.x; i < r; i += blockDim.x) {
    const double d = g[i + i * ldg];
    const bool ok = d > 0.0 && isfinite(d);
    if (!ok) bad = 1;
    dv[i] = ok ? rsqrt(d) : 1.0;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < r * r; e += blockDim.x) {
    const int i = e % r, j = e / r;
    f[i + j * ldf] = dv[i] * 0.5 * (g[i + j * ldg] + g[j + i * ldg]) * dv[j];
  }
  if (threadIdx.x == 0) status[0] = bad ? 2.0 : 0.0;
}

// spd_factor, after potrf: 2 when potrf failed (info ≠ 0) or a pivot is not positive, 1 when the
// smallest pivot² < piv_tol, else 0 (a 2 from spd_scale_kernel stays).
__global__ void spd_status_kernel(const double* f, long long ldf, int r, const int* info,
                                  double piv_tol, double* status) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  if (status[0] == 2.0) return;
  if (*info != 0) {
    status[0] = 2.0;
    return;
  }
  double piv = 1e300;
  for (int i = 0; i < r; ++i) piv = fmin(piv, f[i + i * ldf]);
  status[0] = !(piv > 0.0) || !isfinite(piv) ? 2.0 : (piv * piv < piv_tol ? 1.0 : 0.0);
}

// out = sign·D·B (pre) or out = D·out (post); zero when status = 2 (no factor).
__global__ void spd_rowscale_kernel(const double* f, long long ldf, int r, const double* b,
                                    long long ldb, int cols, double sign, const double* status,
                                    double* out, long long ldo) {
  const bool zero = status[0] == 2.0;
  const double* dv = f + r * ldf;
  for (int e = threadIdx.x + blockIdx.x * blockDim.x; e < r * cols; e += blockDim.x * gridDim.x) {
    const int i = e % r, j = e / r;
    out[i + j * ldo] = zero ? 0.0 : sign * dv[i] * b[i + j * ldb];
  }
}

// pip_factor, before potrf. S (w × w, ld w) = Gyy − CᵀC already formed. Flags cancellation
// (S_ii ≤ 1e-8·Gyy_ii), then F(:, 0:w) = D·sym(S)·D, F(:, w) = D.
__global__ void pip_scale_kernel(const double* s, const double* gyy, long long ldg, int w,
                                 double* f, double* status) {
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < w; i += blockDim.x) {
    const double d = s[i + static_cast<long long>(i) * w];
    const bool ok = d > 1e-8 * gyy[i + i * ldg] && d > 1e-300 && isfinite(d);
    if (!ok) bad = 1;
    f[i + static_cast<long long>(w) * w] = ok ? rsqrt(d) : 1.0;
  }
  __syncthreads();
  const double* dv = f + static_cast<long long>(w) * w;
  for (int e = threadIdx.x; e < w * w; e += blockDim.x) {
    const int i = e % w, j = e / w;
    f[e] = dv[i] * 0.5 * (s[i + static_cast<long long>(j) * w] + s[j + static_cast<long long>(i) * w]) *
           dv[j];
  }
  if (threadIdx.x == 0) status[0] = bad ? 1.0 : 0.0;
}

// pip_factor, after potrf: flag potrf failure / small pivots, store min pivot²; T ← I for trsm.
__global__ void pip_check_kernel(const double* f, int w, const int* info, double* status,
                                 double* t) {
  for (int e = threadIdx.x; e < w * w; e += blockDim.x) t[e] = (e % w == e / w) ? 1.0 : 0.0;
  if (threadIdx.x != 0) return;
  double piv = 1e300;
  for (int i = 0; i < w; ++i) piv = fmin(piv, f[i + static_cast<long long>(i) * w]);
  const double p2 = piv * piv;
  const bool ok = status[0] == 0.0 && *info == 0 && piv > 0.0 && isfinite(p2) && p2 >= 1e-12;
  status[0] = ok ? 0.0 : 1.0;
  status[1] = ok ? p2 : 0.0;
}

// T ← D·T (rows), T w × w.
__global__ void pip_rowscale_kernel(const double* f, int w, double* t) {
  const double* dv = f + static_cast<long long>(w) * w;
  for (int e = threadIdx.x + blockIdx.x * blockDim.x; e < w * w; e += blockDim.x * gridDim.x)
    t[e] *= dv[e % w];
}

// M = [CT; T] (normal) or [−C; I] (fallback). CT = −C·T (l × w), C = G(0:l, :).
__global__ void pip_select_kernel(const double* g, long long ldg, int l, int w, const double* ct,
                                  const double* t, const double* status, double* m,
                                  long long ldm) {
  const bool ok = status[0] == 0.0;
  const int rows = l + w;
  for (long long e = threadIdx.x + blockIdx.x * static_cast<long long>(blockDim.x);
       e < static_cast<long long>(rows) * w; e += blockDim.x * static_cast<long long>(gridDim.x)) {
    const int i = static_cast<int>(e % rows), j = static_cast<int>(e / rows);
    double v;
    if (i < l) v = ok ? ct[i + static_cast<long long>(j) * l] : -g[i + j * ldg];
    else v = ok ? t[(i - l) + static_cast<long long>(j) * w] : (i - l == j ? 1.0 : 0.0);
    m[i + j * ldm] = v;
  }
}

// ---- fp64 tensor-core tiles: D(8×8) += A(8×4)·B(4×8), m8n8k4 ----
// Fragments (lane = 4·g + t): a = A[g][t], b = B[t][g], (d0, d1) = D[g][2t], D[g][2t+1].
__device__ __forceinline__ void dmma(double& d0, double& d1, double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d0), "+d"(d1)
               : "d"(a), "d"(b));
#else
  // Older GPUs: the same product through shuffles (correct, not fast).
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  for (int kk = 0; kk < 4; ++kk) {
    const double av = __shfl_sync(0xffffffffu, a, 4 * g + kk);
    const double b0 = __shfl_sync(0xffffffffu, b, 4 * (2 * t) + kk);
    const double b1 = __shfl_sync(0xffffffffu, b, 4 * (2 * t + 1) + kk);
    d0 += av * b0;
    d1 += av * b1;
  }
#endif
}

// Shared-memory row strides ≡ 4 (mod 16) doubles: the fragment reads (t·ld + g) of a half warp
// hit 16 different 8-byte bank pairs.
__host__ __device__ constexpr int frag_ld(int cols) { return ((cols + 15) / 16) * 16 + 4; }

// Rows row, row + 1 of a column (lo, hi): one double2 (fp32 blocks: one float2, converted to and
// from fp64) when the whole step is inside the block (full; col + row aligned to the pair), else
// guarded single loads (0 past n). The fp32 instances serve block CG's fp32 iteration
// (DenseBlockOps' fp32 blocks) where the row quads below do not apply.
template <class T>
struct Pair;
template <>
struct Pair<double> {
  using type = double2;
};
template <>
struct Pair<float> {
  using type = float2;
};
template <class T>
__device__ __forceinline__ void load_pair(const T* col, long long row, long long n, bool full,
                                          double& lo, double& hi) {
  if (full) {
    const auto v = *reinterpret_cast<const typename Pair<T>::type*>(col + row);
    lo = v.x, hi = v.y;
  } else {
    lo = row < n ? col[row] : 0.0;
    hi = row + 1 < n ? col[row + 1] : 0.0;
  }
}
template <class T>
__device__ __forceinline__ void store_pair(T* col, long long row, long long n, bool full,
                                           double lo, double hi) {
  if (full) {
    typename Pair<T>::type v;
    v.x = static_cast<T>(lo), v.y = static_cast<T>(hi);
    *reinterpret_cast<typename Pair<T>::type*>(col + row) = v;
  } else {
    if (row < n) col[row] = static_cast<T>(lo);
    if (row + 1 < n) col[row + 1] = static_cast<T>(hi);
  }
}


// Sum of the warps' Gram tiles (acc: lane (g, t) holds G(8i + g, 8j + 2t + h)) in shared memory
// (p × q, in warp order: deterministic), written as this block's partial.
template <int MT, int NT>
__device__ __forceinline__ void gram_block_sum(const double (&acc)[MT][NT][2], double* sg, int p,
                                               int q, double* partial) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  for (int w = 0; w < nw; ++w) {
    if (warp == w) {
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = 8 * i + g, c = 8 * j + 2 * t + h;
            if (r < p && c < q) {
              double& dst = sg[r + c * p];
              dst = (w == 0 ? 0.0 : dst) + acc[i][j][h];
            }
          }
    }
    __syncthreads();
  }
  double* out = partial + static_cast<long long>(blockIdx.x) * p * q;
  for (int e = threadIdx.x; e < p * q; e += blockDim.x) out[e] = sg[e];
}

// fp32 rows row .. row + 3 (one float4 when the whole strip is inside the block: `full`, 16-byte
// aligned), or row .. row + 7 (two); 0 past n or for a column that is not there (`has`).
__device__ __forceinline__ void load_quad(const float* col, long long row, long long n, bool full,
                                          bool has, float (&v)[4]) {
  if (has && full) {
    const float4 w = *reinterpret_cast<const float4*>(col + row);
    v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
  } else {
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = has && row + u < n ? col[row + u] : 0.0f;
  }
}
__device__ __forceinline__ void load_octet(const float* col, long long row, long long n, bool full,
                                           bool has, float (&v)[8]) {
  load_quad(col, row, n, full, has, reinterpret_cast<float(&)[4]>(v[0]));
  load_quad(col, row + 4, n, full, has, reinterpret_cast<float(&)[4]>(v[4]));
}
__device__ __forceinline__ void store_quad(float* col, long long row, long long n, bool full,
                                           const double (&v)[4]) {
  if (full) {
    *reinterpret_cast<float4*>(col + row) =
        make_float4(static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2]),
                    static_cast<float>(v[3]));
  } else {
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (row + u < n) col[row + u] = static_cast<float>(v[u]);
  }
}

// Partial Gram products G_b = X(rows of b)ᵀ·Y(rows of b), X n × p, Y n × q, p ≤ 8·MT, q ≤ 8·NT.
// Each warp walks 4-row k-steps (grid-stride over all warps) holding every 8 × 8 output tile in
// registers (2·MT·NT doubles per lane); fragments come straight from global memory (a warp's load
// is 8 columns × 4 consecutive rows: whole 32-byte sectors). The warps' tiles are summed in
// shared memory, then written as block partial b (p × q, compact) for gram_finish_kernel.
// V (X and Y 16-byte aligned, even leading dimensions): each lane loads one double2 (rows 2t,
// 2t + 1 of the warp's 8) per column tile, so that a warp's step reads 64 contiguous bytes of
// each column in half the load instructions. (Two double2 a step, 16 rows, measured slower:
// 0.148 against 0.116 ms for PᵀQ at 786k × 32 on the H200, 144 registers against fewer, three
// blocks an SM instead of four; TCSOLVE_GRAM_VEC=0 turns V off for A/B.) The
// k-steps then take rows {2t}, {2t + 1}, {8 + 2t}, {9 + 2t}: the same row for X's and Y's
// fragment, so the sum over rows is unchanged (only its order).
template <class T, int MT, int NT, bool V>
__global__ void __launch_bounds__(128) gram_tn_kernel(long long n, int p, int q, const T* x,
                                                      long long ldx, const T* y,
                                                      long long ldy, double* partial) {
  extern __shared__ double sg[];  // p × q
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  double acc[MT][NT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;
  const long long gw = static_cast<long long>(blockIdx.x) * nw + warp;
  const long long tw = static_cast<long long>(gridDim.x) * nw;
  // KS k-steps (4·KS rows) per iteration: all KS·(MT + NT) loads issued before the first mma.
  constexpr int KS = 2;  // k-steps (8 rows) an iteration
  for (long long k0 = 4 * KS * gw; k0 < n; k0 += 4 * KS * tw) {
    double af[KS][MT], bf[KS][NT];
    if (V) {
      const bool full = k0 + 4 * KS <= n;
#pragma unroll
      for (int u = 0; u < KS / 2; ++u) {
        const long long row = k0 + 8 * u + 2 * t;
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const int c = 8 * i + g;
          af[2 * u][i] = af[2 * u + 1][i] = 0.0;
          if (c < p) load_pair(x + c * ldx, row, n, full, af[2 * u][i], af[2 * u + 1][i]);
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int c = 8 * j + g;
          bf[2 * u][j] = bf[2 * u + 1][j] = 0.0;
          if (c < q) load_pair(y + c * ldy, row, n, full, bf[2 * u][j], bf[2 * u + 1][j]);
        }
      }
    } else {
#pragma unroll
      for (int h = 0; h < KS; ++h) {
        const long long row = k0 + 4 * h + t;
        const bool rv = row < n;
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const int c = 8 * i + g;
          af[h][i] = rv && c < p ? x[row + c * ldx] : 0.0;
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int c = 8 * j + g;
          bf[h][j] = rv && c < q ? y[row + c * ldy] : 0.0;
        }
      }
    }
#pragma unroll
    for (int h = 0; h < KS; ++h)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) dmma(acc[i][j][0], acc[i][j][1], af[h][i], bf[h][j]);
  }
  gram_block_sum<MT, NT>(acc, sg, p, q, partial);
}

// fp32 blocks: the same Gram with each lane's 8 k-steps on 8 consecutive rows of a column (two
// float4: lane t rows 8t..8t + 7 of the warp's 32), so that a warp's two loads of a column cover
// one whole 128-byte line. (The pair layout above reads 32 bytes of a column a warp instruction
// in fp32 and ran 1.7× slower than in fp64 on elast3d:64, docs/performance.md.) The rows of
// k-step u are {8t + u}: the sum over rows is the same, in another order. x, y 16-byte aligned
// with leading dimensions multiple of 4 (CudaDenseOps::quads_ok).
template <int MT, int NT>
__global__ void __launch_bounds__(128) gram32_kernel(long long n, int p, int q, const float* x,
                                                     long long ldx, const float* y, long long ldy,
                                                     double* partial) {
  extern __shared__ double sg[];  // p × q
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  double acc[MT][NT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;
  const long long gw = static_cast<long long>(blockIdx.x) * nw + warp;
  const long long tw = static_cast<long long>(gridDim.x) * nw;
  for (long long k0 = 32 * gw; k0 < n; k0 += 32 * tw) {
    const bool full = k0 + 32 <= n;
    const long long row = k0 + 8 * t;
    float af[MT][8], bf[NT][8];
#pragma unroll
    for (int i = 0; i < MT; ++i) load_octet(x + (8 * i + g) * ldx, row, n, full, 8 * i + g < p, af[i]);
#pragma unroll
    for (int j = 0; j < NT; ++j) load_octet(y + (8 * j + g) * ldy, row, n, full, 8 * j + g < q, bf[j]);
#pragma unroll
    for (int u = 0; u < 8; ++u)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) dmma(acc[i][j][0], acc[i][j][1], af[i][u], bf[j][u]);
  }
  gram_block_sum<MT, NT>(acc, sg, p, q, partial);
}

// G = α·Σ_b partial_b + β·G (β = 0: G not read). A block of 8 warps per 32 entries: lane =
// entry, warp w sums the partials w, w + 8, … (coalesced 256-byte rows), then warp 0 adds the 8
// sums in a fixed order (deterministic).
__global__ void gram_finish_kernel(const double* partial, int nblocks, int p, int q, double alpha,
                                   double beta, double* gout, long long ldg) {
  __shared__ double part[8][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long pq = static_cast<long long>(p) * q;
  const long long e = static_cast<long long>(blockIdx.x) * 32 + lane;
  double s = 0.0;
  if (e < pq)
    for (int b = warp; b < nblocks; b += 8) s += partial[b * pq + e];
  part[warp][lane] = s;
  __syncthreads();
  if (warp != 0 || e >= pq) return;
  double t = 0.0;
  for (int w = 0; w < 8; ++w) t += part[w][lane];
  const long long i = e % p, j = e / p;
  double& dst = gout[i + j * ldg];
  dst = beta == 0.0 ? alpha * t : alpha * t + beta * dst;
}

// The block partial of the residual passes: (q + r [+ 1]) × r, compact: G's tiles (gacc, tile
// warp + 4·s2 = (ti, tj)) and, JAC, ‖Rn_j‖² from the lanes' shares (nacc) through the free T tile.
template <int QT, int RT, bool JAC, int SLOTS>
__device__ __forceinline__ void cg_residual_partial(const double (&gacc)[SLOTS][2],
                                                    double (&nacc)[RT][2], double* ts, int q,
                                                    int r, double* partial) {
  constexpr int NTILE = (QT + RT) * RT;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  // Block partial: (q + r [+ 1]) × r, compact.
  const int gr = q + r + (JAC ? 1 : 0);
  double* out = partial + static_cast<long long>(blockIdx.x) * gr * r;
  if (JAC) {
    // ‖Rn_j‖²: sum over the 8 row groups g of a warp (lanes t, t + 4, …), then over the 4 warps
    // in warp order (deterministic) through the free T tile (the loop ended on a barrier).
#pragma unroll
    for (int ct = 0; ct < RT; ++ct)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        double v = nacc[ct][h];
        v += __shfl_xor_sync(0xffffffffu, v, 4);
        v += __shfl_xor_sync(0xffffffffu, v, 8);
        v += __shfl_xor_sync(0xffffffffu, v, 16);
        if (g == 0) ts[warp * 8 * RT + 8 * ct + 2 * t + h] = v;
      }
    __syncthreads();
    for (int c = threadIdx.x; c < r; c += blockDim.x)
      out[q + r + c * gr] = ts[c] + ts[8 * RT + c] + ts[16 * RT + c] + ts[24 * RT + c];
  }
#pragma unroll
  for (int s2 = 0; s2 < SLOTS; ++s2) {
    const int tid = warp + 4 * s2;
    if (tid >= NTILE) continue;
    const int ti = tid / RT, tj = tid % RT;
    const int a = 8 * ti + g;  // row of Tᵀ
    int grow = -1;
    if (a < 8 * QT) grow = a < q ? a : -1;
    else grow = a - 8 * QT < r ? q + (a - 8 * QT) : -1;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = 8 * tj + 2 * t + h;
      if (grow >= 0 && c < r) out[grow + c * gr] = gacc[s2][h];
    }
  }
}

// Block CG residual pass (cg_residual_update), q ≤ 8·QT, r ≤ 8·RT. Block = 4 warps, tiles of 32
// rows (one 8-row strip per warp), grid-stride over tiles:
//   1. each warp: Rn = R − Q·α on its strip (A = −Q fragments for every k-step of 4 columns, held
//      in registers; B = α from shared memory; C = R) → Rn to global R, and [Q Rn] into the
//      shared tile T (32 × (8QT + 8RT), Q zero-padded to 8QT columns, Rn at column 8QT);
//   2. after a barrier, G += Tᵀ·T(:, 8QT:) over the 32 rows: output tiles ((QT + RT) × RT) dealt
//      round-robin to the 4 warps, 8 k-steps each.
// Each output tile belongs to one warp, so the block partial (G rows: Q part 0:q, R part q:q+r)
// is written without a block reduction; gram_finish_kernel sums the blocks.
// Traffic: reads Q and R, writes R (3 passes); 2·(q + 2r)·r flops per row on the tensor cores.
// JAC (Jacobi-preconditioned CG, cg_residual_update_jacobi): also Zn = diag(d)·Rn, written to Z,
// the Gram's B side is Zn (G = [Q Rn]ᵀ·Zn: the tile's row scale d applied as B is read), and
// ‖Rn_j‖² accumulates per lane and is summed into partial row q + r. Traffic: reads Q, R, d;
// writes R, Z (4 passes + n doubles), instead of the 9 of gemm + scale + Gram + dots.
// V (every block 16-byte aligned, even leading dimensions; the 4 × 4-tile instance): tiles of 64
// rows, each warp's strip 16 rows as row pairs (load_pair/store_pair: m-tile 0 the even rows,
// m-tile 1 the odd ones), T holding the rows in their physical order; 16 k-steps in step 2.
template <class T, int QT, int RT, bool JAC, bool V>
__global__ void __launch_bounds__(128) cg_residual_kernel(long long n, int q, int r,
                                                          const double* alpha, long long lda,
                                                          const T* qm, long long ldq,
                                                          T* rm, long long ldr,
                                                          const double* dj, T* zm,
                                                          long long ldz, double* partial) {
  constexpr int U = V ? 2 : 1;     // m-tiles per warp strip (row pairs, see load_pair)
  constexpr int TR = 32 * U;       // rows of a block tile
  constexpr int LDA = frag_ld(8 * RT);
  constexpr int TC = 8 * QT + 8 * RT;
  constexpr int LDT = frag_ld(TC);
  constexpr int NTILE = (QT + RT) * RT;
  constexpr int SLOTS = (NTILE + 3) / 4;
  extern __shared__ double smem[];
  double* as = smem;                     // α, 8QT × LDA (zero-padded)
  double* ts = smem + 8 * QT * LDA;      // T, TR × LDT
  double* ds = ts + TR * LDT;            // JAC: d over the tile's TR rows
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  for (int e = threadIdx.x; e < 8 * QT * LDA; e += blockDim.x) {
    const int k = e / LDA, c = e % LDA;
    as[e] = k < q && c < r ? alpha[k + c * lda] : 0.0;
  }
  double gacc[SLOTS][2];
#pragma unroll
  for (int s2 = 0; s2 < SLOTS; ++s2) gacc[s2][0] = gacc[s2][1] = 0.0;
  __syncthreads();
  // This lane's first row in the tile; m-tile u holds row srow + u (V: rows 2g, 2g + 1 of the
  // warp's 16) or srow (8 rows a warp). T keeps the rows in that physical order.
  const int srow = V ? 16 * warp + 2 * g : 8 * warp + g;
  // Fragments of the strip: −Q (all k-steps) and R (every 8-column tile), loaded one tile ahead
  // so that the loads of tile i + 1 are in flight during tile i's Gram step.
  double af[U][2 * QT], rf[U][RT][2], dvf[U];
  double nacc[RT][2];  // JAC: this lane's share of ‖Rn_j‖²
#pragma unroll
  for (int ct = 0; ct < RT; ++ct) nacc[ct][0] = nacc[ct][1] = 0.0;
  auto load = [&](long long tile) {
    const long long row = tile + srow;
    const bool full = tile + TR <= n, rv = row < n;
#pragma unroll
    for (int u = 0; u < U; ++u) dvf[u] = 0.0;
    if (JAC) {
      if (V) load_pair(dj, row, n, full, dvf[0], dvf[U - 1]);
      else dvf[0] = rv ? dj[row] : 0.0;
    }
#pragma unroll
    for (int ks = 0; ks < 2 * QT; ++ks) {
      const int k = 4 * ks + t;
      af[0][ks] = af[U - 1][ks] = 0.0;
      if (k < q) {
        if (V) load_pair(qm + k * ldq, row, n, full, af[0][ks], af[U - 1][ks]);
        else if (rv) af[0][ks] = qm[row + k * ldq];
      }
#pragma unroll
      for (int u = 0; u < U; ++u) af[u][ks] = -af[u][ks];
    }
#pragma unroll
    for (int ct = 0; ct < RT; ++ct)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * ct + 2 * t + h;
        rf[0][ct][h] = rf[U - 1][ct][h] = 0.0;
        if (c < r) {
          if (V) load_pair(rm + c * ldr, row, n, full, rf[0][ct][h], rf[U - 1][ct][h]);
          else if (rv) rf[0][ct][h] = rm[row + c * ldr];
        }
      }
  };
  long long tile0 = static_cast<long long>(TR) * blockIdx.x;
  if (tile0 < n) load(tile0);
  for (; tile0 < n; tile0 += static_cast<long long>(TR) * gridDim.x) {
    // ---- 1. this warp's strip
    const long long row = tile0 + srow;
    const bool full = tile0 + TR <= n, rv = row < n;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int ks = 0; ks < 2 * QT; ++ks) ts[(srow + u) * LDT + 4 * ks + t] = -af[u][ks];
#pragma unroll
    for (int ct = 0; ct < RT; ++ct) {
      const int c0 = 8 * ct + 2 * t;
      double d[U][2];
#pragma unroll
      for (int u = 0; u < U; ++u) d[u][0] = rf[u][ct][0], d[u][1] = rf[u][ct][1];
#pragma unroll
      for (int ks = 0; ks < 2 * QT; ++ks) {
        const double al = as[(4 * ks + t) * LDA + 8 * ct + g];
#pragma unroll
        for (int u = 0; u < U; ++u) dmma(d[u][0], d[u][1], af[u][ks], al);
      }
      // fp32 R: rounded here, once; Z, the Gram and the norms are then those of R as stored.
      if (sizeof(T) < sizeof(double))
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int h = 0; h < 2; ++h) d[u][h] = static_cast<double>(static_cast<T>(d[u][h]));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = c0 + h;
        if (c < r) {
          if (V) {
            store_pair(rm + c * ldr, row, n, full, d[0][h], d[U - 1][h]);
            if (JAC) store_pair(zm + c * ldz, row, n, full, dvf[0] * d[0][h], dvf[U - 1] * d[U - 1][h]);
          } else if (rv) {
            rm[row + c * ldr] = static_cast<T>(d[0][h]);
            if (JAC) zm[row + c * ldz] = static_cast<T>(dvf[0] * d[0][h]);
          }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (JAC) nacc[ct][h] = fma(d[u][h], d[u][h], nacc[ct][h]);
          ts[(srow + u) * LDT + 8 * QT + c] = d[u][h];
        }
      }
    }
    if (JAC && t == 0)
#pragma unroll
      for (int u = 0; u < U; ++u) ds[srow + u] = dvf[u];
    const long long next = tile0 + static_cast<long long>(TR) * gridDim.x;
    if (next < n) load(next);
    __syncthreads();
    // ---- 2. G += Tᵀ·T(:, 8QT:) over the tile's TR rows. Tile tid = warp + 4·s2 of this warp
    // is (ti, tj) = (tid / RT, tid % RT) = (s2 / (RT/4), warp + 4·(s2 % (RT/4))): k-steps outer,
    // so that the B fragment (and the Jacobi scale) of a k-step is read from shared memory once
    // for the tiles that share tj, not once per tile.
    static_assert(RT % 4 == 0, "cg_residual_kernel: RT a multiple of the 4 warps");
#pragma unroll
    for (int ks = 0; ks < TR / 4; ++ks) {
      const double sc = JAC ? ds[4 * ks + t] : 1.0;
#pragma unroll
      for (int s2 = 0; s2 < SLOTS; ++s2) {
        const int ti = s2 / (RT / 4), tj = warp + 4 * (s2 % (RT / 4));
        const double a = ts[(4 * ks + t) * LDT + 8 * ti + g];
        double b = ts[(4 * ks + t) * LDT + 8 * QT + 8 * tj + g];
        if (JAC) b *= sc;
        dmma(gacc[s2][0], gacc[s2][1], a, b);
      }
    }
    __syncthreads();
  }
  cg_residual_partial<QT, RT, JAC>(gacc, nacc, ts, q, r, partial);
}

// Row-pair strips (V) of the tall-skinny update kernels below: a warp's step takes 16 rows, lane
// (g, t) loading rows s0 + 2g and s0 + 2g + 1 of a column as one double2, the even rows forming
// one 8-row m-tile (u = 0) and the odd rows another (u = 1). Rows are independent in these
// products, so any row order within the step is the same computation; a warp instruction then
// reads or writes 128 contiguous bytes of each of its 4 columns (whole lines) instead of 64.
// Without V (a misaligned view, odd leading dimension): 8-row strips of 8-byte accesses.

// Block CG direction pass (cg_direction_update), in place, q ≤ 8·QT, r ≤ 8·RT: one warp per
// strip (grid-stride): A = P strip fragments (all q columns, in registers before anything
// is stored), X += P·α and P(:, 0:r) = Z + P·β per 8-column tile. Reads P, Z, X; writes P, X.
template <class T, int QT, int RT, bool V>
__global__ void __launch_bounds__(128) cg_direction_kernel(long long n, int q, int r,
                                                           const double* alpha, long long lda,
                                                           const double* beta, long long ldb,
                                                           const T* zm, long long ldz,
                                                           T* pm, long long ldp, T* xm,
                                                           long long ldx) {
  constexpr int LDA = frag_ld(8 * RT);
  constexpr int U = V ? 2 : 1;  // m-tiles per strip
  extern __shared__ double smem[];
  double* as = smem;                 // α, 8QT × LDA
  double* bs = smem + 8 * QT * LDA;  // β
  for (int e = threadIdx.x; e < 8 * QT * LDA; e += blockDim.x) {
    const int k = e / LDA, c = e % LDA;
    const bool v = k < q && c < r;
    as[e] = v ? alpha[k + c * lda] : 0.0;
    bs[e] = v ? beta[k + c * ldb] : 0.0;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  for (long long s0 = 8 * U * (static_cast<long long>(blockIdx.x) * nw + warp); s0 < n;
       s0 += 8LL * U * gridDim.x * nw) {
    // Every load of the strip (P, X, Z) before the first mma and store: the stores to P and X
    // could alias later loads as far as the compiler knows, so it would not hoist them itself.
    double af[U][2 * QT], xf[U][RT][2], pf[U][RT][2];
    const bool full = s0 + 16 <= n;
    const long long row = V ? s0 + 2 * g : s0 + g;  // V: rows row (u = 0) and row + 1 (u = 1)
    const bool rv = row < n;
#pragma unroll
    for (int ks = 0; ks < 2 * QT; ++ks) {
      const int k = 4 * ks + t;
      if (V) {
        af[0][ks] = af[U - 1][ks] = 0.0;
        if (k < q) load_pair(pm + k * ldp, row, n, full, af[0][ks], af[U - 1][ks]);
      } else {
        af[0][ks] = rv && k < q ? pm[row + k * ldp] : 0.0;
      }
    }
#pragma unroll
    for (int ct = 0; ct < RT; ++ct)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * ct + 2 * t + h;
        if (V) {
          xf[0][ct][h] = xf[U - 1][ct][h] = pf[0][ct][h] = pf[U - 1][ct][h] = 0.0;
          if (c < r) {
            load_pair(xm + c * ldx, row, n, full, xf[0][ct][h], xf[U - 1][ct][h]);
            load_pair(zm + c * ldz, row, n, full, pf[0][ct][h], pf[U - 1][ct][h]);
          }
        } else {
          xf[0][ct][h] = rv && c < r ? xm[row + c * ldx] : 0.0;
          pf[0][ct][h] = rv && c < r ? zm[row + c * ldz] : 0.0;
        }
      }
#pragma unroll
    for (int ct = 0; ct < RT; ++ct) {
#pragma unroll
      for (int ks = 0; ks < 2 * QT; ++ks) {
        const int ai = (4 * ks + t) * LDA + 8 * ct + g;
        const double a = as[ai], b = bs[ai];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          dmma(xf[u][ct][0], xf[u][ct][1], af[u][ks], a);
          dmma(pf[u][ct][0], pf[u][ct][1], af[u][ks], b);
        }
      }
    }
#pragma unroll
    for (int ct = 0; ct < RT; ++ct)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * ct + 2 * t + h;
        if (c >= r) continue;
        if (V) {
          store_pair(xm + c * ldx, row, n, full, xf[0][ct][h], xf[U - 1][ct][h]);
          store_pair(pm + c * ldp, row, n, full, pf[0][ct][h], pf[U - 1][ct][h]);
        } else if (rv) {
          xm[row + c * ldx] = static_cast<T>(xf[0][ct][h]);
          pm[row + c * ldp] = static_cast<T>(pf[0][ct][h]);
        }
      }
  }
}

// fp32 blocks: the direction pass with a lane's rows in quads — lane (g, t) takes rows 4g..4g + 3
// of a column as one float4 and m-tile u the rows {4g + u} — so that a warp instruction reads or
// writes 32 consecutive rows (a whole 128-byte line) of each of its 4 columns. (The row-pair
// strips of cg_direction_kernel read half lines in fp32 and ran at 0.86 TB/s, twice the fp64
// kernel's time a row, docs/performance.md.) A warp's strip: P's q columns and X's and Z's r
// columns loaded (fp32) before any store, then per 8-column tile X += P·α, P = Z + P·β in fp64
// DMMA, rounded at the store. Blocks 16-byte aligned, leading dimensions multiples of 4.
template <int QT, int RT>
__global__ void __launch_bounds__(128) cg_direction32_kernel(long long n, int q, int r,
                                                             const double* alpha, long long lda,
                                                             const double* beta, long long ldb,
                                                             const float* zm, long long ldz,
                                                             float* pm, long long ldp, float* xm,
                                                             long long ldx) {
  constexpr int LDA = frag_ld(8 * RT);
  extern __shared__ double smem[];
  double* as = smem;                 // α, 8QT × LDA
  double* bs = smem + 8 * QT * LDA;  // β
  for (int e = threadIdx.x; e < 8 * QT * LDA; e += blockDim.x) {
    const int k = e / LDA, c = e % LDA;
    const bool v = k < q && c < r;
    as[e] = v ? alpha[k + c * lda] : 0.0;
    bs[e] = v ? beta[k + c * ldb] : 0.0;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  for (long long s0 = 32 * (static_cast<long long>(blockIdx.x) * nw + warp); s0 < n;
       s0 += 32LL * gridDim.x * nw) {
    const bool full = s0 + 32 <= n;
    const long long row = s0 + 4 * g;
    float af[2 * QT][4], xf[RT][2][4], zf[RT][2][4];
#pragma unroll
    for (int ks = 0; ks < 2 * QT; ++ks) load_quad(pm + (4 * ks + t) * ldp, row, n, full, 4 * ks + t < q, af[ks]);
#pragma unroll
    for (int ct = 0; ct < RT; ++ct)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * ct + 2 * t + h;
        load_quad(xm + c * ldx, row, n, full, c < r, xf[ct][h]);
        load_quad(zm + c * ldz, row, n, full, c < r, zf[ct][h]);
      }
#pragma unroll
    for (int ct = 0; ct < RT; ++ct) {
      double xa[2][4], pa[2][4];  // [h][u]: rows 4g + u, column 8ct + 2t + h
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 4; ++u) xa[h][u] = xf[ct][h][u], pa[h][u] = zf[ct][h][u];
#pragma unroll
      for (int ks = 0; ks < 2 * QT; ++ks) {
        const int ai = (4 * ks + t) * LDA + 8 * ct + g;
        const double a = as[ai], b = bs[ai];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          dmma(xa[0][u], xa[1][u], af[ks][u], a);
          dmma(pa[0][u], pa[1][u], af[ks][u], b);
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * ct + 2 * t + h;
        if (c >= r) continue;
        store_quad(xm + c * ldx, row, n, full, xa[h]);
        store_quad(pm + c * ldp, row, n, full, pa[h]);
      }
    }
  }
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
  double* cs = smem;  // C, 8QT × LDA (row k at k·LDA)
  for (int e = threadIdx.x; e < 8 * QT * LDA; e += blockDim.x) {
    const int k = e / LDA, c = e % LDA;
    cs[e] = k < p && c < q ? cm[k + c * ldc] : 0.0;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  for (long long s0 = 8 * U * (static_cast<long long>(blockIdx.x) * nw + warp); s0 < n;
       s0 += 8LL * U * gridDim.x * nw) {
    const bool full = s0 + 16 <= n;
    const long long row = V ? s0 + 2 * g : s0 + g;
    const bool rv = row < n;
    double af[U][2 * QT], yf[U][RT][2];
#pragma unroll
    for (int ks = 0; ks < 2 * QT; ++ks) {
      const int k = 4 * ks + t;
      if (V) {
        af[0][ks] = af[U - 1][ks] = 0.0;
        if (k < p) load_pair(xm + k * ldx, row, n, full, af[0][ks], af[U - 1][ks]);
      } else {
        af[0][ks] = rv && k < p ? xm[row + k * ldx] : 0.0;
      }
    }
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
    device_ = dev;
    pending_.reserve(16);
    reserve(0, 0, 64 * 64);
    TCSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver_));
    TCSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver_, stream_));
    info_ = static_cast<int*>(device_malloc(4 * sizeof(int)));
    TCSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&ext_begin_, cudaEventDisableTiming));
    TCSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&ext_end_, cudaEventDisableTiming));
    marks_.resize(1024);
    for (auto& e : marks_) TCSOLVE_CUDA_CHECK(cudaEventCreate(&e));
    for (auto& sl : slots_) sl.event = nullptr;
    if (const char* ev = std::getenv("TCSOLVE_EIGH_JACOBI_MAX")) syevj_max_ = std::atoi(ev);
    enable_fused_kernels();
  }
  ~CudaDenseOps() override {
    cudaStreamSynchronize(stream_);
    for (auto& sl : slots_) {
      if (sl.pinned) cudaFreeHost(sl.pinned);
      if (sl.event) cudaEventDestroy(sl.event);
    }
    for (auto& e : marks_) cudaEventDestroy(e);
    cudaEventDestroy(ext_begin_);
    cudaEventDestroy(ext_end_);
    if (syevj_params_) cusolverDnDestroySyevjInfo(syevj_params_);
    device_free(info_);
    device_free(partial_);
    device_free(solver_work_);
    device_free(small_ws_);
    cusolverDnDestroy(solver_);
    if (scratch_) device_free(scratch_);
    if (coef_) device_free(coef_);
    if (small_) device_free(small_);
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
      if (scratch_) device_free(scratch_);
      scratch_ = static_cast<double*>(device_malloc(need * sizeof(double)));
      scratch_elems_ = need;
    }
    std::size_t ce = static_cast<std::size_t>(std::max<std::int64_t>(coef_elems, 1024));
    if (ce > coef_elems_) {
      fetch();  // pending results live in small_ / pinned_
      synchronize();
      if (coef_) device_free(coef_);
      if (small_) device_free(small_);
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
    // (through gram_into: the same kernels as the solvers' loops, none loaded for this alone)
    gram_into(1.0, x, y, 0.0, MvView<double>{small_ + off, p, q, p, Space::device});
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
    gemm_into(alpha, x, MvView<const double>{dc, p, q, p, Space::device}, beta, y);
  }

  void multiply_inplace(MvView<double> x, const double* m, std::int64_t ldm, std::int64_t r) override {
    require_device(x, "X");
    TCSOLVE_REQUIRE(r <= x.cols, "multiply_inplace: r > cols");
    if (r == 0 || x.rows == 0) return;
    reserve(x.rows, r, 0);
    const double* dm = upload(m, ldm, x.cols, r);
    gemm_into(1.0, x, MvView<const double>{dm, x.cols, r, x.cols, Space::device}, 0.0,
              MvView<double>{scratch_, x.rows, r, x.rows, Space::device});
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(x.data, x.ld * sizeof(double), scratch_,
                                         x.rows * sizeof(double), x.rows * sizeof(double), r,
                                         cudaMemcpyDeviceToDevice, stream_));
  }

  void copy(MvView<const double> x, MvView<double> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    if (x.rows == 0 || x.cols == 0) return;
    if (x.ld == x.rows && y.ld == y.rows) {  // contiguous: a 1-D copy (2-D copies run slower)
      TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data, sizeof(double) * x.rows * x.cols,
                                         cudaMemcpyDeviceToDevice, stream_));
      return;
    }
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(y.data, y.ld * sizeof(double), x.data,
                                         x.ld * sizeof(double), x.rows * sizeof(double), x.cols,
                                         cudaMemcpyDeviceToDevice, stream_));
  }

  void gather_columns(MvView<const double> x, const std::int64_t* idx, std::int64_t count,
                      MvView<double> y) override {
    gather(x, idx, count, y);
  }
  template <class T>
  void gather(MvView<const T> x, const std::int64_t* idx, std::int64_t count, MvView<T> y) {
    TCSOLVE_REQUIRE(count <= y.cols && x.rows == y.rows, "gather: shapes");
    if (x.rows == 0) return;
    for (std::int64_t c0 = 0; c0 < count; c0 += kMaxCols) {
      std::int64_t nc = std::min<std::int64_t>(kMaxCols, count - c0);
      ColumnIndex ci;
      for (std::int64_t j = 0; j < nc; ++j) {
        TCSOLVE_REQUIRE(idx[c0 + j] >= 0 && idx[c0 + j] < x.cols, "gather: index out of range");
        ci.idx[j] = idx[c0 + j];
      }
      gather_kernel<T><<<grid(x.rows, nc), 256, 0, stream_>>>(x.data, x.ld, y.col(c0), y.ld, x.rows, ci);
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
    column_dots_to(x, y, small_ + off, 1);
    pending_.push_back({off, c, 1, out, c});
  }
  // out[j·stride] = X_jᵀY_j (device), zeroed first.
  void column_dots_to(MvView<const double> x, MvView<const double> y, double* out,
                      long long stride) {
    const std::int64_t c = x.cols;
    if (x.rows == 0) {
      if (stride == 1)
        TCSOLVE_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double) * c, stream_));
      else
        TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(out, sizeof(double) * stride, 0, sizeof(double), c,
                                             stream_));
      return;
    }
    for (std::int64_t c0 = 0; c0 < c; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, c - c0);
      const dim3 gr = grid(x.rows, nc);
      ensure_partial(static_cast<int>(gr.x), static_cast<std::size_t>(nc));
      column_dot_kernel<<<gr, 256, 0, stream_>>>(x.col(c0), x.ld, y.col(c0), y.ld, x.rows, partial_);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      column_sum_kernel<<<static_cast<unsigned>((nc + 7) / 8), 256, 0, stream_>>>(
          partial_, static_cast<int>(gr.x), static_cast<int>(nc), out + c0 * stride, stride);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void fill_random_rows(MvView<double> x, std::uint64_t seed, std::int64_t row0) override {
    for (std::int64_t c0 = 0; c0 < x.cols; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
      fill_random_kernel<<<grid(x.rows, nc), 256, 0, stream_>>>(x.col(c0), x.ld, x.rows, c0, seed,
                                                                row0);
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

  // ==== backend-resident small matrices =======================================================

  void reserve_small(std::int64_t max_dim) override {
    const int m = static_cast<int>(std::max<std::int64_t>(max_dim, 1));
    if (m <= small_dim_) return;
    synchronize();
    int lw = 0, lw2 = 0, lw3 = 0;
    TCSOLVE_CUSOLVER_CHECK(cusolverDnDsyevd_bufferSize(solver_, CUSOLVER_EIG_MODE_VECTOR,
                                                       CUBLAS_FILL_MODE_LOWER, m, nullptr, m,
                                                       nullptr, &lw));
    TCSOLVE_CUSOLVER_CHECK(
        cusolverDnDpotrf_bufferSize(solver_, CUBLAS_FILL_MODE_LOWER, m, nullptr, m, &lw2));
    if (!syevj_params_) {
      TCSOLVE_CUSOLVER_CHECK(cusolverDnCreateSyevjInfo(&syevj_params_));
      TCSOLVE_CUSOLVER_CHECK(cusolverDnXsyevjSetMaxSweeps(syevj_params_, 100));
    }
    const int mj = std::min(m, std::max(syevj_max_, 1));
    TCSOLVE_CUSOLVER_CHECK(cusolverDnDsyevj_bufferSize(solver_, CUSOLVER_EIG_MODE_VECTOR,
                                                       CUBLAS_FILL_MODE_LOWER, mj, nullptr, mj,
                                                       nullptr, &lw3, syevj_params_));
    const std::size_t need = static_cast<std::size_t>(std::max({lw, lw2, lw3, 1}));
    device_free(solver_work_);
    solver_work_ = static_cast<double*>(device_malloc(need * sizeof(double)));
    solver_lwork_ = static_cast<int>(need);
    // S, F (m × (m + 1)), T, CT: 4 matrices of m × (m + 1).
    device_free(small_ws_);
    const std::size_t mm = static_cast<std::size_t>(m) * (m + 1);
    small_ws_ = static_cast<double*>(device_malloc(4 * mm * sizeof(double)));
    small_dim_ = m;
    // the Grams of this solve are at most m × m
    ensure_partial(8 * sms_, device_memory_limit() > 0 ? mm : 64 * 64);
  }

  void gram_into(double alpha, MvView<const double> x, MvView<const double> y, double beta,
                 MvView<double> g) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows && g.rows == x.cols && g.cols == y.cols, "gram_into: shapes");
    const std::int64_t p = x.cols, q = y.cols;
    if (p == 0 || q == 0) return;
    if (x.rows == 0) {
      if (beta == 0.0)
        TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(g.data, g.ld * sizeof(double), 0, p * sizeof(double),
                                             q, stream_));
      else if (beta != 1.0) scale_columns(beta, g);
      return;
    }
    const int mt = static_cast<int>((p + 7) / 8), nt = static_cast<int>((q + 7) / 8);
    if (fused_ && ((mt <= 8 && nt <= 4) || (mt <= 4 && nt <= 8)) && x.rows >= 4096) {
      const std::size_t sh = static_cast<std::size_t>(p * q) * sizeof(double);
      const int nb = launch_gram_tn(mt, nt, sh, x, y);
      gram_finish_kernel<<<static_cast<unsigned>((p * q + 31) / 32), 256, 0, stream_>>>(
          partial_, nb, static_cast<int>(p), static_cast<int>(q), alpha, beta, g.data, g.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    TCSOLVE_CUBLAS_CHECK(cublasDgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, int(p), int(q), int(x.rows),
                                     &alpha, x.data, int(x.ld), y.data, int(y.ld), &beta, g.data,
                                     int(g.ld)));
  }

  void gemm_into(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                 MvView<double> y) override {
    require_device(x, "X");
    require_device(y, "Y");
    TCSOLVE_REQUIRE(x.rows == y.rows && c.rows == x.cols && c.cols == y.cols, "gemm_into: shapes");
    const std::int64_t p = x.cols, q = y.cols;
    if (q == 0 || y.rows == 0) return;
    if (p == 0) {
      if (beta == 0.0) fill_zero(y);
      else if (beta != 1.0) scale_columns(beta, y);
      return;
    }
    require_device(c, "C");
    // tcsolve's kernel up to 32 × 32 only: there it saves cuBLAS's first-use load (13 ms a
    // process) for ~0.04 ms a call (1M × 32: 0.187 against 0.148 ms); at 48–64 columns its
    // 8 × 8-tile instance ran at 2.0–2.3 TB/s against cuBLAS's 3.7 (occupancy 31 %, registers
    // and shared memory), which cost lap2d:1000 k = 32 0.1 s of its 2.6 s solve (H200).
    if (fused_ && tall_gemm_ && p <= 32 && q <= 32) {
      launch_tall_gemm<4, 4>(alpha, x, c, beta, y);
      return;
    }
    TCSOLVE_CUBLAS_CHECK(cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, int(y.rows), int(q), int(p),
                                     &alpha, x.data, int(x.ld), c.data, int(c.ld), &beta, y.data,
                                     int(y.ld)));
  }
  // Row-pair strips (double2 accesses) when every tall block is 16-byte aligned with an even
  // leading dimension (TCSOLVE_PAIR_ROWS=0: never).
  template <class T = double>
  bool pairs_ok(std::initializer_list<MvView<const T>> blocks) const {
    if (!pair_rows_) return false;
    for (const auto& b : blocks)
      if (b.ld % 2 != 0 || reinterpret_cast<std::uintptr_t>(b.data) % (2 * sizeof(T)) != 0) return false;
    return true;
  }
  template <int QT, int RT>
  void launch_tall_gemm(double alpha, MvView<const double> x, MvView<const double> c, double beta,
                        MvView<double> y) {
    if (pairs_ok<double>({x, y})) launch_tall_gemm_instance<QT, RT, true>(alpha, x, c, beta, y);
    else launch_tall_gemm_instance<QT, RT, false>(alpha, x, c, beta, y);
  }
  template <int QT, int RT, bool V>
  void launch_tall_gemm_instance(double alpha, MvView<const double> x, MvView<const double> c,
                                 double beta, MvView<double> y) {
    const int smem = tall_gemm_smem(QT, RT);
    const int nb = static_cast<int>(std::min<std::int64_t>(
        resident_blocks(reinterpret_cast<const void*>(&tall_gemm_kernel<QT, RT, V>), 128, smem),
        (y.rows + 31) / 32));
    tall_gemm_kernel<QT, RT, V><<<nb, 128, smem, stream_>>>(
        y.rows, static_cast<int>(x.cols), static_cast<int>(y.cols), alpha, x.data, x.ld, c.data,
        c.ld, beta, y.data, y.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

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
          std::max<long long>(1, std::min<long long>(8LL * sms_, (count / 2 + 255) / 256)));
      if (c == 0.0)
        axpbypcz_flat_kernel<false><<<blocks, 256, 0, stream_>>>(count, a, x.data, b, y.data, c, z.data);
      else
        axpbypcz_flat_kernel<true><<<blocks, 256, 0, stream_>>>(count, a, x.data, b, y.data, c, z.data);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    for (std::int64_t c0 = 0; c0 < z.cols; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, z.cols - c0);
      axpbypcz_kernel<<<grid(z.rows, nc), 256, 0, stream_>>>(z.rows, a, x.col(c0), x.ld, b,
                                                             y.col(c0), y.ld, c, z.col(c0), z.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void residual_norms_into(MvView<const double> ax, MvView<const double> x,
                           MvView<const double> theta, double s, MvView<double> out) override {
    residual_sq_norms_into(ax, x, theta, s, out);
    sqrt_elements({out.data, x.cols, 1, x.cols, Space::device});
  }

  void residual_sq_norms_into(MvView<const double> ax, MvView<const double> x,
                              MvView<const double> theta, double s, MvView<double> out) override {
    TCSOLVE_REQUIRE(ax.rows == x.rows && ax.cols == x.cols && theta.rows >= x.cols &&
                        out.rows >= x.cols,
                    "residual_norms_into: shapes");
    const std::int64_t c = x.cols;
    if (c == 0) return;
    if (x.rows == 0) {
      TCSOLVE_CUDA_CHECK(cudaMemsetAsync(out.data, 0, sizeof(double) * c, stream_));
      return;
    }
    for (std::int64_t c0 = 0; c0 < c; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, c - c0);
      const dim3 gr = grid(x.rows, nc);
      ensure_partial(static_cast<int>(gr.x), static_cast<std::size_t>(nc));
      residual_sq_kernel<<<gr, 256, 0, stream_>>>(ax.col(c0), ax.ld, x.col(c0), x.ld, x.rows,
                                                  theta.data + c0, s, partial_);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      column_sum_kernel<<<static_cast<unsigned>((nc + 7) / 8), 256, 0, stream_>>>(
          partial_, static_cast<int>(gr.x), static_cast<int>(nc), out.data + c0, 1);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void sqrt_elements(MvView<double> v) override {
    if (v.rows == 0) return;
    sqrt_kernel<<<static_cast<unsigned>((v.rows + 255) / 256), 256, 0, stream_>>>(v.data, v.rows);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void scale_columns_inverse(MvView<const double> d, MvView<double> x) override {
    TCSOLVE_REQUIRE(d.rows >= x.cols, "scale_columns_inverse: d too short");
    for (std::int64_t c0 = 0; c0 < x.cols && x.rows > 0; c0 += 65535) {
      std::int64_t nc = std::min<std::int64_t>(65535, x.cols - c0);
      scale_by_inverse_kernel<<<grid(x.rows, nc), 256, 0, stream_>>>(x.col(c0), x.ld, x.rows,
                                                                     d.data + c0);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void column_dots_into(MvView<const double> x, MvView<const double> y,
                        MvView<double> out) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols && out.rows >= x.cols,
                    "column_dots_into: shapes");
    if (x.cols == 0) return;
    column_dots_to(x, y, out.data, 1);
  }

  void normalize_columns(MvView<double> x, MvView<double> norms) override {
    column_dots_into(x, x, norms);
    const std::int64_t c = x.cols;
    if (c == 0) return;
    sqrt_elements({norms.data, c, 1, c, Space::device});
    scale_columns_inverse(norms, x);
  }

  void eigh_small(MvView<double> a, MvView<double> w) override {
    require_device(a, "A");
    TCSOLVE_REQUIRE(a.rows == a.cols && w.rows >= a.rows, "eigh_small: shapes");
    const int m = static_cast<int>(a.rows);
    if (m == 0) return;
    reserve_small(m);
    if (m <= syevj_max_) {
      // One-sided Jacobi: a single kernel chain without the tridiagonal reduction's many small
      // launches (cheaper below a few dozen rows; see docs/performance.md).
      TCSOLVE_CUSOLVER_CHECK(cusolverDnDsyevj(solver_, CUSOLVER_EIG_MODE_VECTOR,
                                              CUBLAS_FILL_MODE_LOWER, m, a.data, int(a.ld), w.data,
                                              solver_work_, solver_lwork_, info_, syevj_params_));
    } else {
      TCSOLVE_CUSOLVER_CHECK(cusolverDnDsyevd(solver_, CUSOLVER_EIG_MODE_VECTOR,
                                              CUBLAS_FILL_MODE_LOWER, m, a.data, int(a.ld), w.data,
                                              solver_work_, solver_lwork_, info_));
    }
  }

  void pip_factor(MvView<const double> g, std::int64_t l, MvView<double> m,
                  MvView<double> status) override {
    const std::int64_t w = g.cols;
    TCSOLVE_REQUIRE(g.rows == l + w && m.rows == l + w && m.cols == w && status.rows >= 2,
                    "pip_factor: shapes");
    if (w == 0) return;
    reserve_small(std::max(w, l));
    const int wi = static_cast<int>(w), li = static_cast<int>(l);
    const std::size_t mm = static_cast<std::size_t>(small_dim_) * (small_dim_ + 1);
    double* sm = small_ws_;           // S = Gyy − CᵀC (w × w)
    double* fm = small_ws_ + mm;      // F (w × (w + 1))
    double* tm = small_ws_ + 2 * mm;  // T (w × w)
    double* ct = small_ws_ + 3 * mm;  // −C·T (l × w)
    const double* gyy = g.data + l;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(sm, w * sizeof(double), gyy, g.ld * sizeof(double),
                                         w * sizeof(double), w, cudaMemcpyDeviceToDevice, stream_));
    const double one = 1.0, mone = -1.0, zero = 0.0;
    const bool small = w <= kSmallDim;  // tcsolve's own kernels (no library loading; above)
    if (l > 0 && small) {
      small_syrk_sub_kernel<<<static_cast<unsigned>((w * w + 127) / 128), 128, 0, stream_>>>(
          g.data, g.ld, li, wi, sm);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else if (l > 0) {
      TCSOLVE_CUBLAS_CHECK(cublasDgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, wi, wi, li, &mone, g.data,
                                       int(g.ld), g.data, int(g.ld), &one, sm, wi));
    }
    pip_scale_kernel<<<1, 256, 0, stream_>>>(sm, gyy, g.ld, wi, fm, status.data);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    if (small) {
      small_cholesky_kernel<<<1, 256, 0, stream_>>>(fm, wi, wi, info_);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else {
      TCSOLVE_CUSOLVER_CHECK(cusolverDnDpotrf(solver_, CUBLAS_FILL_MODE_LOWER, wi, fm, wi,
                                              solver_work_, solver_lwork_, info_));
    }
    pip_check_kernel<<<1, 256, 0, stream_>>>(fm, wi, info_, status.data, tm);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    // T = Lc⁻ᵀ (Lcᵀ·T = I), then T = D·T.
    if (small) {
      small_lower_inverse_t_kernel<<<1, kSmallDim, 0, stream_>>>(fm, wi, wi, tm);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else {
      TCSOLVE_CUBLAS_CHECK(cublasDtrsm(handle_, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                                       CUBLAS_DIAG_NON_UNIT, wi, wi, &one, fm, wi, tm, wi));
    }
    pip_rowscale_kernel<<<1, 256, 0, stream_>>>(fm, wi, tm);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    if (l > 0 && small) {
      small_neg_gemm_kernel<<<static_cast<unsigned>((l * w + 127) / 128), 128, 0, stream_>>>(
          g.data, g.ld, li, wi, tm, ct);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else if (l > 0) {
      TCSOLVE_CUBLAS_CHECK(cublasDgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, li, wi, wi, &mone, g.data,
                                       int(g.ld), tm, wi, &zero, ct, li));
    }
    const long long total = (l + w) * w;
    pip_select_kernel<<<static_cast<unsigned>(std::min<long long>((total + 255) / 256, 1024)), 256,
                        0, stream_>>>(g.data, g.ld, li, wi, ct, tm, status.data, m.data, m.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void spd_factor(MvView<const double> g, MvView<double> f, MvView<double> status,
                  double piv_tol) override {
    const std::int64_t r = g.rows;
    TCSOLVE_REQUIRE(g.cols == r && f.rows == r && f.cols == r + 1 && status.rows >= 1,
                    "spd_factor: shapes");
    if (r == 0) return;
    const int ri = static_cast<int>(r);
    if (r <= kSmallDim) {
      small_spd_factor_kernel<<<1, 256, 0, stream_>>>(g.data, g.ld, ri, f.data, f.ld, piv_tol,
                                                      status.data);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    reserve_small(r);
    spd_scale_kernel<<<1, 256, 0, stream_>>>(g.data, g.ld, ri, f.data, f.ld, status.data);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    TCSOLVE_CUSOLVER_CHECK(cusolverDnDpotrf(solver_, CUBLAS_FILL_MODE_LOWER, ri, f.data,
                                            int(f.ld), solver_work_, solver_lwork_, info_));
    spd_status_kernel<<<1, 32, 0, stream_>>>(f.data, f.ld, ri, info_, piv_tol, status.data);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void spd_solve(MvView<const double> f, MvView<const double> b, double sign,
                 MvView<const double> status, MvView<double> out) override {
    const std::int64_t r = f.rows;
    TCSOLVE_REQUIRE(f.cols == r + 1 && b.rows == r && out.rows == r && out.cols == b.cols,
                    "spd_solve: shapes");
    if (r == 0 || b.cols == 0) return;
    const int ri = static_cast<int>(r), c = static_cast<int>(b.cols);
    if (r <= kSmallDim) {
      // 4 warps a block, a warp per column; L, 1/diag(L) and D in shared memory.
      const int smem = static_cast<int>(sizeof(double)) * (ri * ri + 2 * ri);
      small_spd_solve_kernel<<<static_cast<unsigned>((c + 3) / 4), 128, smem, stream_>>>(
          f.data, f.ld, ri, b.data, b.ld, c, sign, status.data, out.data, out.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    const unsigned nb = static_cast<unsigned>(std::min<long long>((r * c + 255) / 256, 256));
    spd_rowscale_kernel<<<nb, 256, 0, stream_>>>(f.data, f.ld, ri, b.data, b.ld, c, sign,
                                                 status.data, out.data, out.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    TCSOLVE_CUSOLVER_CHECK(cusolverDnDpotrs(solver_, CUBLAS_FILL_MODE_LOWER, ri, c, f.data,
                                            int(f.ld), out.data, int(out.ld), info_ + 1));
    spd_rowscale_kernel<<<nb, 256, 0, stream_>>>(f.data, f.ld, ri, out.data, out.ld, c, 1.0,
                                                 status.data, out.data, out.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void cg_residual_update(MvView<const double> q, MvView<const double> alpha, MvView<double> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    const std::int64_t qc = q.cols, rc = r.cols, n = r.rows;
    if (rc == 0) return;
    if (fused_ && qc <= 64 && rc <= 64 && n >= 4096) {
      const int nb = qc <= 32 && rc <= 32 ? launch_cg_residual<4, 4, false>(q, alpha, r, nullptr, r)
                                          : launch_cg_residual<8, 8, false>(q, alpha, r, nullptr, r);
      gram_finish_kernel<<<static_cast<unsigned>(((qc + rc) * rc + 31) / 32), 256, 0, stream_>>>(
          partial_, nb, static_cast<int>(qc + rc), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    // Composite: R −= Q·α (cuBLAS), G = [Q R]ᵀ·R (one Gram product when Q and R are adjacent
    // columns of one block, as in block CG: 3 passes instead of 4).
    gemm_into(-1.0, q, alpha, 1.0, r);
    if (qc > 0 && q.ld == r.ld && q.data + qc * q.ld == r.data) {
      gram_into(1.0, MvView<const double>{q.data, n, qc + rc, q.ld, q.space}, r, 0.0, g);
      return;
    }
    if (qc > 0) gram_into(1.0, q, r, 0.0, MvView<double>{g.data, qc, rc, g.ld, g.space});
    MvView<double> gb{g.data + qc, rc, rc, g.ld, g.space};
    gram_into(1.0, r, r, 0.0, gb);
  }

  void cg_residual_update_jacobi(MvView<const double> q, MvView<const double> alpha,
                                 const double* d, MvView<double> r, MvView<double> z,
                                 MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    const std::int64_t qc = q.cols, rc = r.cols, n = r.rows;
    if (rc == 0) return;
    if (fused_ && qc <= 64 && rc <= 64 && n >= 4096) {
      const int nb = qc <= 32 && rc <= 32 ? launch_cg_residual<4, 4, true>(q, alpha, r, d, z)
                                          : launch_cg_residual<8, 8, true>(q, alpha, r, d, z);
      const std::int64_t gr = qc + rc + 1;
      gram_finish_kernel<<<static_cast<unsigned>((gr * rc + 31) / 32), 256, 0, stream_>>>(
          partial_, nb, static_cast<int>(gr), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    // Composite: R −= Q·α, Z = diag(d)·R, G = [Q R]ᵀ·Z, then the norms into G's last row.
    gemm_into(-1.0, q, alpha, 1.0, r);
    scale_rows(d, r, z);
    if (qc > 0) gram_into(1.0, q, z, 0.0, MvView<double>{g.data, qc, rc, g.ld, g.space});
    gram_into(1.0, r, z, 0.0, MvView<double>{g.data + qc, rc, rc, g.ld, g.space});
    if (n > 0) column_dots_to(r, r, g.data + qc + rc, g.ld);
    else fill_zero(MvView<double>{g.data + qc + rc, 1, rc, g.ld, g.space});
  }

  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const double> z, MvView<double> p, MvView<double> x) override {
    const std::int64_t qc = alpha.rows, rc = z.cols, n = p.rows;
    detail::check_cg_direction(alpha, beta, z, p, x);
    if (rc == 0 || n == 0) return;
    if (fused_ && qc <= 64 && rc <= 64) {
      if (qc <= 32 && rc <= 32) launch_cg_direction<4, 4>(alpha, beta, z, p, x);
      else launch_cg_direction<8, 8>(alpha, beta, z, p, x);
      return;
    }
    // Composite: X += P·α; scratch = P·β; P(:, 0:r) = Z + scratch.
    reserve(n, rc, 0);
    MvView<double> tmp{scratch_, n, rc, n, Space::device};
    gemm_into(1.0, p.columns(0, qc), alpha, 1.0, x);
    gemm_into(1.0, p.columns(0, qc), beta, 0.0, tmp);
    axpbypcz(1.0, z, 1.0, tmp, 0.0, p.columns(0, rc));
  }

  // ---- fp32 blocks: the fused kernels on fp32 tall blocks (≤ 32 columns of P, Q and R: the 4 × 4
  // tile instances; fp64 small matrices and sums).
  bool fp32_blocks() const override { return true; }
  static void require32(std::int64_t cols, const char* what) {
    TCSOLVE_REQUIRE(cols <= 32, std::string(what) + " on fp32 blocks: at most 32 columns");
  }
  void gram_into(double alpha, MvView<const float> x, MvView<const float> y, double beta,
                 MvView<double> g) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && g.rows == x.cols && g.cols == y.cols, "gram_into: shapes");
    const std::int64_t p = x.cols, q = y.cols;
    if (p == 0 || q == 0) return;
    const int mt = static_cast<int>((p + 7) / 8), nt = static_cast<int>((q + 7) / 8);
    TCSOLVE_REQUIRE((mt <= 8 && nt <= 4) || (mt <= 4 && nt <= 8), "gram_into on fp32 blocks: at most 64 × 32 columns");
    if (x.rows == 0) {
      if (beta == 0.0)
        TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(g.data, g.ld * sizeof(double), 0, p * sizeof(double),
                                             q, stream_));
      else if (beta != 1.0) scale_columns(beta, g);
      return;
    }
    const std::size_t sh = static_cast<std::size_t>(p * q) * sizeof(double);
    int nb = 0;
    if (quads_ok({x, y}) && mt <= 4 && nt <= 4) {
      nb = mt <= 1 && nt <= 1 ? launch_gram32<1, 1>(sh, x, y)
           : mt <= 2 && nt <= 2 ? launch_gram32<2, 2>(sh, x, y) : launch_gram32<4, 4>(sh, x, y);
    } else {
      nb = launch_gram_tn(mt, nt, sh, x, y);
    }
    gram_finish_kernel<<<static_cast<unsigned>((p * q + 31) / 32), 256, 0, stream_>>>(
        partial_, nb, static_cast<int>(p), static_cast<int>(q), alpha, beta, g.data, g.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
  // fp32 quads (float4 of 4 rows): 16-byte aligned blocks with leading dimensions multiples of 4.
  bool quads_ok(std::initializer_list<MvView<const float>> blocks) const {
    if (!pair_rows_) return false;
    for (const auto& b : blocks)
      if (b.ld % 4 != 0 || reinterpret_cast<std::uintptr_t>(b.data) % 16 != 0) return false;
    return true;
  }
  template <int M, int N>
  int launch_gram32(std::size_t sh, MvView<const float> x, MvView<const float> y) {
    const int p = static_cast<int>(x.cols), q = static_cast<int>(y.cols);
    const int nb = static_cast<int>(std::min<std::int64_t>(
        resident_blocks(reinterpret_cast<const void*>(&gram32_kernel<M, N>), 128, sh),
        (x.rows + 127) / 128));
    ensure_partial(nb, static_cast<std::size_t>(p) * q);
    gram32_kernel<M, N><<<nb, 128, sh, stream_>>>(x.rows, p, q, x.data, x.ld, y.data, y.ld, partial_);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    return nb;
  }
  void cg_residual_update(MvView<const float> q, MvView<const double> alpha, MvView<float> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    require32(std::max(q.cols, r.cols), "cg_residual_update");
    const std::int64_t qc = q.cols, rc = r.cols;
    if (rc == 0) return;
    if (r.rows == 0) return fill_zero(g);
    const int nb = launch_cg_residual<4, 4, false, float>(q, alpha, r, nullptr, r);
    gram_finish_kernel<<<static_cast<unsigned>(((qc + rc) * rc + 31) / 32), 256, 0, stream_>>>(
        partial_, nb, static_cast<int>(qc + rc), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
  void cg_residual_update_jacobi(MvView<const float> q, MvView<const double> alpha, const double* d,
                                 MvView<float> r, MvView<float> z, MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    require32(std::max(q.cols, r.cols), "cg_residual_update_jacobi");
    const std::int64_t qc = q.cols, rc = r.cols;
    if (rc == 0) return;
    if (r.rows == 0) return fill_zero(g);
    const int nb = launch_cg_residual<4, 4, true, float>(q, alpha, r, d, z);
    const std::int64_t gr = qc + rc + 1;
    gram_finish_kernel<<<static_cast<unsigned>((gr * rc + 31) / 32), 256, 0, stream_>>>(
        partial_, nb, static_cast<int>(gr), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const float> z, MvView<float> p, MvView<float> x) override {
    const std::int64_t qc = alpha.rows, rc = z.cols, n = p.rows;
    detail::check_cg_direction(alpha, beta, z, p, x);
    require32(std::max(qc, rc), "cg_direction_update");
    if (rc == 0 || n == 0) return;
    if (quads_ok({z, p, x})) {
      const int smem = cg_direction_smem(4, 4);
      const int nb = static_cast<int>(std::min<std::int64_t>(
          resident_blocks(reinterpret_cast<const void*>(&cg_direction32_kernel<4, 4>), 128, smem),
          (n + 127) / 128));
      cg_direction32_kernel<4, 4><<<nb, 128, smem, stream_>>>(
          n, static_cast<int>(qc), static_cast<int>(rc), alpha.data, alpha.ld, beta.data, beta.ld,
          z.data, z.ld, p.data, p.ld, x.data, x.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    launch_cg_direction<4, 4, float>(alpha, beta, z, p, x);
  }
  void copy(MvView<const float> x, MvView<float> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(y.data, y.ld * sizeof(float), x.data, x.ld * sizeof(float),
                                         x.rows * sizeof(float), x.cols, cudaMemcpyDeviceToDevice,
                                         stream_));
  }
  void gather_columns(MvView<const float> x, const std::int64_t* idx, std::int64_t count,
                      MvView<float> y) override {
    gather(x, idx, count, y);
  }
  void fill_zero(MvView<float> x) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(x.data, x.ld * sizeof(float), 0, x.rows * sizeof(float),
                                         x.cols, stream_));
  }
  void convert(MvView<const double> x, MvView<float> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "convert: shapes differ");
    launch_convert<false>(x.data, x.ld, y.data, y.ld, x.rows, x.cols, 1.0);
  }
  void add_converted(MvView<const float> x, MvView<double> y, double alpha) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "add_converted: shapes differ");
    launch_convert<true>(x.data, x.ld, y.data, y.ld, x.rows, x.cols, alpha);
  }
  template <bool ADD>
  void launch_convert(const void* x, std::int64_t ldx, void* y, std::int64_t ldy, std::int64_t rows,
                      std::int64_t cols, double alpha) {
    if (rows == 0) return;
    const std::size_t xs = ADD ? sizeof(float) : sizeof(double), ys = ADD ? sizeof(double) : sizeof(float);
    for (std::int64_t c0 = 0; c0 < cols; c0 += 65535) {
      const std::int64_t nc = std::min<std::int64_t>(65535, cols - c0);
      convert_kernel<ADD><<<grid(rows, nc), 256, 0, stream_>>>(
          static_cast<const char*>(x) + c0 * ldx * xs, ldx, static_cast<char*>(y) + c0 * ldy * ys,
          ldy, rows, alpha);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }

  void download_deferred(MvView<const double> src, double* host, std::int64_t ldh) override {
    if (src.rows == 0 || src.cols == 0) return;
    const std::size_t off = stage(static_cast<std::size_t>(src.rows * src.cols));
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(small_ + off, src.rows * sizeof(double), src.data,
                                         src.ld * sizeof(double), src.rows * sizeof(double),
                                         src.cols, cudaMemcpyDeviceToDevice, stream_));
    pending_.push_back({off, src.rows, src.cols, host, ldh});
  }

  std::uint64_t fetch_async() override {
    // A free slot (the oldest ticket is completed when all are in flight).
    if (inflight_.size() >= slots_.size()) fetch_wait(inflight_.front().id);
    int si = -1;
    for (int i = 0; i < static_cast<int>(slots_.size()); ++i)
      if (!slots_[i].busy) si = i;
    Slot& sl = slots_[si];
    if (!sl.event) TCSOLVE_CUDA_CHECK(cudaEventCreateWithFlags(&sl.event, cudaEventDisableTiming));
    if (sl.elems < small_pos_) {
      if (sl.pinned) cudaFreeHost(sl.pinned);
      sl.elems = std::max<std::size_t>(small_pos_, coef_elems_);
      TCSOLVE_CUDA_CHECK(cudaMallocHost(&sl.pinned, sl.elems * sizeof(double)));
    }
    if (small_pos_ > 0)
      TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(sl.pinned, small_, sizeof(double) * small_pos_,
                                         cudaMemcpyDeviceToHost, stream_));
    TCSOLVE_CUDA_CHECK(cudaEventRecord(sl.event, stream_));
    sl.busy = true;
    Ticket tk;
    tk.id = ++ticket_;
    tk.slot = si;
    tk.pending.swap(pending_);
    pending_.reserve(16);
    small_pos_ = 0;
    inflight_.push_back(std::move(tk));
    return ticket_;
  }

  void fetch_wait(std::uint64_t ticket) override {
    while (!inflight_.empty() && inflight_.front().id <= ticket) {
      Ticket& tk = inflight_.front();
      Slot& sl = slots_[tk.slot];
      TCSOLVE_CUDA_CHECK(cudaEventSynchronize(sl.event));
      for (const Pending& e : tk.pending)
        for (std::int64_t j = 0; j < e.q; ++j)
          std::copy(sl.pinned + e.off + j * e.p, sl.pinned + e.off + (j + 1) * e.p,
                    e.host + j * e.ld);
      sl.busy = false;
      inflight_.pop_front();
    }
  }

  // Called on helper threads (HostResult), which start on device 0: this GPU first (a batch
  // worker or an mpirun rank on GPU 1 would otherwise make a context on GPU 0 for the lock).
  bool pin_host(void* p, std::size_t bytes) override {
    if (cudaSetDevice(device_) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
    cudaGetLastError();  // not fatal: the copy is pageable then
    return false;
  }
  void unpin_host(void* p) override {
    if (cudaSetDevice(device_) != cudaSuccess || cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
  }

  void external_begin() override {
    TCSOLVE_CUDA_CHECK(cudaEventRecord(ext_begin_, stream_));
    TCSOLVE_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, ext_begin_, 0));
  }
  void external_end() override {
    TCSOLVE_CUDA_CHECK(cudaEventRecord(ext_end_, cudaStreamLegacy));
    TCSOLVE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ext_end_, 0));
  }

  int mark() override {
    const int id = next_mark_;
    TCSOLVE_CUDA_CHECK(cudaEventRecord(marks_[id], stream_));
    next_mark_ = (next_mark_ + 1) % static_cast<int>(marks_.size());
    return id;
  }
  double elapsed_seconds(int from, int to) override {
    TCSOLVE_CUDA_CHECK(cudaEventSynchronize(marks_[to]));
    float ms = 0.0f;
    TCSOLVE_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[from], marks_[to]));
    return 1e-3 * ms;
  }

 private:
  // Resident blocks per SM of a kernel (cached), times the SMs: the grid of the fused kernels.
  int resident_blocks(const void* f, int threads, std::size_t smem) {
    for (auto& e : occupancy_)
      if (e.first == f) return e.second;
    int b = 0;
    TCSOLVE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, f, threads, smem));
    const int total = std::max(b, 1) * sms_;
    occupancy_.push_back({f, total});
    return total;
  }
  // Block partials of the fused Gram kernels (summed by gram_finish_kernel): nb × elems.
  void ensure_partial(int nb, std::size_t elems) {
    const std::size_t need = static_cast<std::size_t>(nb) * elems;
    if (need <= partial_elems_) return;
    synchronize();
    device_free(partial_);
    // Room for 64 × 64 Grams at 8 blocks per SM (34.6 MB on 132 SMs), so that the first
    // iterations do not regrow it; exactly what is needed under TCSOLVE_DEVICE_MEMORY_LIMIT, where
    // those megabytes may be all there is.
    partial_elems_ = device_memory_limit() > 0
                         ? need
                         : std::max(need, static_cast<std::size_t>(8) * sms_ * 64 * 64);
    partial_ = static_cast<double*>(device_malloc(partial_elems_ * sizeof(double)));
  }

  void enable_fused_kernels() {
    // The fused kernels use up to ~70 KB of dynamic shared memory.
    auto allow = [](const void* f, int bytes) {
      TCSOLVE_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    };
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<double, 8, 8, false, false>), cg_residual_smem(8, 8, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<double, 8, 8, true, false>), cg_residual_smem(8, 8, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<double, 4, 4, false, false>), cg_residual_smem(4, 4, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<double, 4, 4, true, false>), cg_residual_smem(4, 4, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<double, 4, 4, false, true>), cg_residual_smem(4, 4, true));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<double, 4, 4, true, true>), cg_residual_smem(4, 4, true));
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 8, 8, false>), cg_direction_smem(8, 8));
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 4, 4, false>), cg_direction_smem(4, 4));
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 8, 8, true>), cg_direction_smem(8, 8));
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 4, 4, true>), cg_direction_smem(4, 4));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, false, false>), cg_residual_smem(4, 4, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, true, false>), cg_residual_smem(4, 4, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, false, true>), cg_residual_smem(4, 4, true));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, true, true>), cg_residual_smem(4, 4, true));
    allow(reinterpret_cast<const void*>(&tall_gemm_kernel<4, 4, false>), tall_gemm_smem(4, 4));
    allow(reinterpret_cast<const void*>(&tall_gemm_kernel<4, 4, true>), tall_gemm_smem(4, 4));
    if (const char* ev = std::getenv("TCSOLVE_NO_FUSED")) fused_ = std::atoi(ev) == 0;
    // TCSOLVE_TALL_GEMM=0: gemm_into through cuBLAS only (A/B of tall_gemm_kernel)
    if (const char* ev = std::getenv("TCSOLVE_TALL_GEMM")) tall_gemm_ = std::atoi(ev) != 0;
    // TCSOLVE_GRAM_VEC=0: the Gram kernel's 8-byte loads only (A/B of its double2 loads)
    if (const char* ev = std::getenv("TCSOLVE_GRAM_VEC")) gram_vec_ = std::atoi(ev) != 0;
    // TCSOLVE_PAIR_ROWS=0: the update kernels' 8-row strips only (A/B of the row-pair strips)
    if (const char* ev = std::getenv("TCSOLVE_PAIR_ROWS")) pair_rows_ = std::atoi(ev) != 0;
  }
  // α, the T tile, the tile's Jacobi scales (tiles of 32 rows, 64 with row pairs).
  static int cg_residual_smem(int qt, int rt, bool pairs) {
    const int tr = pairs ? 64 : 32;
    return static_cast<int>(sizeof(double)) *
           (8 * qt * frag_ld(8 * rt) + tr * frag_ld(8 * qt + 8 * rt) + tr);
  }
  static int tall_gemm_smem(int qt, int rt) {
    return static_cast<int>(sizeof(double)) * 8 * qt * frag_ld(8 * rt);
  }
  static int cg_direction_smem(int qt, int rt) {
    return static_cast<int>(sizeof(double)) * 2 * 8 * qt * frag_ld(8 * rt);
  }
  // Row pairs for the 4 × 4-tile instance only (the 8 × 8 one has no registers to spare).
  template <int QT, int RT, bool JAC, class T = double>
  int launch_cg_residual(MvView<const T> q, MvView<const double> alpha, MvView<T> r,
                         const double* d, MvView<T> z) {
    const MvView<const double> dv{d, r.rows, 1, r.rows, r.space};
    if (QT <= 4 && pairs_ok<T>({q.cols > 0 ? q : r, r, JAC ? z : r}) && (!JAC || pairs_ok<double>({dv})))
      return launch_cg_residual_instance<QT, RT, JAC, QT <= 4>(q, alpha, r, d, z);
    return launch_cg_residual_instance<QT, RT, JAC, false>(q, alpha, r, d, z);
  }
  template <int QT, int RT, bool JAC, bool V, class T>
  int launch_cg_residual_instance(MvView<const T> q, MvView<const double> alpha,
                                  MvView<T> r, const double* d, MvView<T> z) {
    const int smem = cg_residual_smem(QT, RT, V);
    const int tr = V ? 64 : 32;
    const int nb = static_cast<int>(std::min<std::int64_t>(
        resident_blocks(reinterpret_cast<const void*>(&cg_residual_kernel<T, QT, RT, JAC, V>), 128, smem),
        (r.rows + tr - 1) / tr));
    ensure_partial(nb, static_cast<std::size_t>((q.cols + r.cols + (JAC ? 1 : 0)) * r.cols));
    cg_residual_kernel<T, QT, RT, JAC, V><<<nb, 128, smem, stream_>>>(
        r.rows, static_cast<int>(q.cols), static_cast<int>(r.cols), alpha.data, alpha.ld,
        q.cols > 0 ? q.data : r.data, q.cols > 0 ? q.ld : r.ld, r.data, r.ld, d, z.data, z.ld,
        partial_);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    return nb;
  }
  template <int QT, int RT, class T = double>
  void launch_cg_direction(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const T> z, MvView<T> p, MvView<T> x) {
    if (pairs_ok<T>({z, p, x})) launch_cg_direction_instance<QT, RT, true>(alpha, beta, z, p, x);
    else launch_cg_direction_instance<QT, RT, false>(alpha, beta, z, p, x);
  }
  template <int QT, int RT, bool V, class T>
  void launch_cg_direction_instance(MvView<const double> alpha, MvView<const double> beta,
                                    MvView<const T> z, MvView<T> p, MvView<T> x) {
    const int smem = cg_direction_smem(QT, RT);
    const int nb = static_cast<int>(std::min<std::int64_t>(
        resident_blocks(reinterpret_cast<const void*>(&cg_direction_kernel<T, QT, RT, V>), 128, smem),
        (p.rows + 31) / 32));
    cg_direction_kernel<T, QT, RT, V><<<nb, 128, smem, stream_>>>(
        p.rows, static_cast<int>(alpha.rows), static_cast<int>(z.cols), alpha.data, alpha.ld,
        beta.data, beta.ld, z.data, z.ld, p.data, p.ld, x.data, x.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
  template <int M, int N, class T>
  int launch_gram_case(bool vec, std::size_t sh, MvView<const T> x, MvView<const T> y) {
    return vec ? launch_gram_instance<M, N, true>(sh, x, y) : launch_gram_instance<M, N, false>(sh, x, y);
  }
  template <int M, int N, bool V, class T>
  int launch_gram_instance(std::size_t sh, MvView<const T> x, MvView<const T> y) {
    const int p = static_cast<int>(x.cols), q = static_cast<int>(y.cols);
    const int nb = static_cast<int>(std::min<std::int64_t>(
        resident_blocks(reinterpret_cast<const void*>(&gram_tn_kernel<T, M, N, V>), 128, sh),
        (x.rows + 255) / 256));
    ensure_partial(nb, static_cast<std::size_t>(p) * q);
    gram_tn_kernel<T, M, N, V><<<nb, 128, sh, stream_>>>(x.rows, p, q, x.data, x.ld, y.data, y.ld,
                                                      partial_);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    return nb;
  }
  // The Gram kernel instance with the fewest tiles covering mt × nt; returns its block count.
  template <class T>
  int launch_gram_tn(int mt, int nt, std::size_t sh, MvView<const T> x, MvView<const T> y) {
    const bool vec = gram_vec_ && x.ld % 2 == 0 && y.ld % 2 == 0 &&
                     (reinterpret_cast<std::uintptr_t>(x.data) |
                      reinterpret_cast<std::uintptr_t>(y.data)) % (2 * sizeof(T)) == 0;
#define TCSOLVE_GRAM_CASE(M, N) \
  if (mt <= M && nt <= N) return launch_gram_case<M, N>(vec, sh, x, y);
    TCSOLVE_GRAM_CASE(1, 1)
    TCSOLVE_GRAM_CASE(2, 2)
    TCSOLVE_GRAM_CASE(4, 4)
    TCSOLVE_GRAM_CASE(8, 4)
    TCSOLVE_GRAM_CASE(4, 8)
#undef TCSOLVE_GRAM_CASE
    throw InvalidArgument("gram_into: no fused kernel for this shape");
  }

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
  int device_ = 0;  // the GPU current at construction: every call is for it
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

  // Backend-resident half.
  cusolverDnHandle_t solver_ = nullptr;
  syevjInfo_t syevj_params_ = nullptr;
  int syevj_max_ = 32;         // eigh_small: syevj up to this order, syevd above
  int* info_ = nullptr;        // cuSOLVER info words (device)
  double* solver_work_ = nullptr;
  int solver_lwork_ = 0;
  double* small_ws_ = nullptr; // pip_factor matrices (4 × m × (m + 1))
  int small_dim_ = 0;
  double* partial_ = nullptr;  // block partials of the fused Gram kernels
  std::size_t partial_elems_ = 0;
  std::vector<std::pair<const void*, int>> occupancy_;
  bool fused_ = true;          // fused tensor-core kernels (TCSOLVE_NO_FUSED=1: cuBLAS composites)
  bool pair_rows_ = true;      // update kernels' row-pair strips where aligned (TCSOLVE_PAIR_ROWS=0: off)
  bool gram_vec_ = true;       // gram_tn_kernel's double2 loads where aligned (TCSOLVE_GRAM_VEC=0: off)
  bool tall_gemm_ = true;      // gemm_into's own kernel for p, q ≤ 32 (TCSOLVE_TALL_GEMM=0: cuBLAS)
  struct Slot {                // pinned staging of one fetch_async ticket
    double* pinned = nullptr;
    std::size_t elems = 0;
    cudaEvent_t event = nullptr;
    bool busy = false;
  };
  std::array<Slot, 4> slots_;
  struct Ticket {
    std::uint64_t id = 0;
    int slot = 0;
    std::vector<Pending> pending;
  };
  std::deque<Ticket> inflight_;
  std::uint64_t ticket_ = 0;
  cudaEvent_t ext_begin_ = nullptr, ext_end_ = nullptr;
  std::vector<cudaEvent_t> marks_;
  int next_mark_ = 0;
};

}  // namespace

std::unique_ptr<DenseBlockOps> make_cuda_dense_ops() { return std::make_unique<CudaDenseOps>(); }

}  // namespace tcsolve
