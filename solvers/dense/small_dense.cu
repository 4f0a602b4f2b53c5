// CUDA backend of SmallDense (solvers/dense/small_dense.hpp): one-block kernels of tcsolve's own
// up to kSmallDim = 64 (no library kernels to load on first use), cuSOLVER syevj/syevd and
// potrf/potrs and cuBLAS above, on the ops' stream. The CPU twin is small_dense.cpp.
#include <cusolverDn.h>

#include <algorithm>
#include <cstdlib>

#include "solvers/dense/cuda_context.cuh"

namespace tcsolve::cuda_dense {

namespace {

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
// (S_ii ≤ kPipCancel·Gyy_ii), then F(:, 0:w) = D·sym(S)·D, F(:, w) = D.
__global__ void pip_scale_kernel(const double* s, const double* gyy, long long ldg, int w,
                                 double* f, double* status) {
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < w; i += blockDim.x) {
    const double d = s[i + static_cast<long long>(i) * w];
    const bool ok = d > kPipCancel * gyy[i + i * ldg] && d > 1e-300 && isfinite(d);
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
  const bool ok = status[0] == 0.0 && *info == 0 && piv > 0.0 && isfinite(p2) && p2 >= kPipMinPivot2;
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

class CudaSmallDense final : public SmallDense {
 public:
  explicit CudaSmallDense(CudaContext& ctx) : ctx_(ctx) {
    TCSOLVE_CUSOLVER_CHECK(cusolverDnCreate(&solver_));
    TCSOLVE_CUSOLVER_CHECK(cusolverDnSetStream(solver_, ctx_.stream));
    info_ = static_cast<int*>(device_malloc(4 * sizeof(int)));
    if (const char* ev = std::getenv("TCSOLVE_EIGH_JACOBI_MAX")) syevj_max_ = std::atoi(ev);
  }
  ~CudaSmallDense() override {
    cudaStreamSynchronize(ctx_.stream);
    if (syevj_params_) cusolverDnDestroySyevjInfo(syevj_params_);
    device_free(info_);
    device_free(solver_work_);
    device_free(small_ws_);
    cusolverDnDestroy(solver_);
  }

  void reserve_small(std::int64_t max_dim) override {
    const int m = static_cast<int>(std::max<std::int64_t>(max_dim, 1));
    if (m <= small_dim_) return;
    ctx_.synchronize();
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
    ctx_.ensure_partial(8 * ctx_.sms, device_memory_limit() > 0 ? mm : 64 * 64);
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
                                         w * sizeof(double), w, cudaMemcpyDeviceToDevice, ctx_.stream));
    const double one = 1.0, mone = -1.0, zero = 0.0;
    const bool small = w <= kSmallDim;  // tcsolve's own kernels (no library loading; above)
    if (l > 0 && small) {
      small_syrk_sub_kernel<<<static_cast<unsigned>((w * w + 127) / 128), 128, 0, ctx_.stream>>>(
          g.data, g.ld, li, wi, sm);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else if (l > 0) {
      TCSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.handle, CUBLAS_OP_T, CUBLAS_OP_N, wi, wi, li, &mone, g.data,
                                       int(g.ld), g.data, int(g.ld), &one, sm, wi));
    }
    pip_scale_kernel<<<1, 256, 0, ctx_.stream>>>(sm, gyy, g.ld, wi, fm, status.data);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    if (small) {
      small_cholesky_kernel<<<1, 256, 0, ctx_.stream>>>(fm, wi, wi, info_);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else {
      TCSOLVE_CUSOLVER_CHECK(cusolverDnDpotrf(solver_, CUBLAS_FILL_MODE_LOWER, wi, fm, wi,
                                              solver_work_, solver_lwork_, info_));
    }
    pip_check_kernel<<<1, 256, 0, ctx_.stream>>>(fm, wi, info_, status.data, tm);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    // T = Lc⁻ᵀ (Lcᵀ·T = I), then T = D·T.
    if (small) {
      small_lower_inverse_t_kernel<<<1, kSmallDim, 0, ctx_.stream>>>(fm, wi, wi, tm);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else {
      TCSOLVE_CUBLAS_CHECK(cublasDtrsm(ctx_.handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                                       CUBLAS_DIAG_NON_UNIT, wi, wi, &one, fm, wi, tm, wi));
    }
    pip_rowscale_kernel<<<1, 256, 0, ctx_.stream>>>(fm, wi, tm);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    if (l > 0 && small) {
      small_neg_gemm_kernel<<<static_cast<unsigned>((l * w + 127) / 128), 128, 0, ctx_.stream>>>(
          g.data, g.ld, li, wi, tm, ct);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    } else if (l > 0) {
      TCSOLVE_CUBLAS_CHECK(cublasDgemm(ctx_.handle, CUBLAS_OP_N, CUBLAS_OP_N, li, wi, wi, &mone, g.data,
                                       int(g.ld), tm, wi, &zero, ct, li));
    }
    const long long total = (l + w) * w;
    pip_select_kernel<<<static_cast<unsigned>(std::min<long long>((total + 255) / 256, 1024)), 256,
                        0, ctx_.stream>>>(g.data, g.ld, li, wi, ct, tm, status.data, m.data, m.ld);
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
      small_spd_factor_kernel<<<1, 256, 0, ctx_.stream>>>(g.data, g.ld, ri, f.data, f.ld, piv_tol,
                                                      status.data);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    reserve_small(r);
    spd_scale_kernel<<<1, 256, 0, ctx_.stream>>>(g.data, g.ld, ri, f.data, f.ld, status.data);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    TCSOLVE_CUSOLVER_CHECK(cusolverDnDpotrf(solver_, CUBLAS_FILL_MODE_LOWER, ri, f.data,
                                            int(f.ld), solver_work_, solver_lwork_, info_));
    spd_status_kernel<<<1, 32, 0, ctx_.stream>>>(f.data, f.ld, ri, info_, piv_tol, status.data);
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
      small_spd_solve_kernel<<<static_cast<unsigned>((c + 3) / 4), 128, smem, ctx_.stream>>>(
          f.data, f.ld, ri, b.data, b.ld, c, sign, status.data, out.data, out.ld);
      TCSOLVE_CUDA_CHECK_LAUNCH();
      return;
    }
    const unsigned nb = static_cast<unsigned>(std::min<long long>((r * c + 255) / 256, 256));
    spd_rowscale_kernel<<<nb, 256, 0, ctx_.stream>>>(f.data, f.ld, ri, b.data, b.ld, c, sign,
                                                 status.data, out.data, out.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    TCSOLVE_CUSOLVER_CHECK(cusolverDnDpotrs(solver_, CUBLAS_FILL_MODE_LOWER, ri, c, f.data,
                                            int(f.ld), out.data, int(out.ld), info_ + 1));
    spd_rowscale_kernel<<<nb, 256, 0, ctx_.stream>>>(f.data, f.ld, ri, out.data, out.ld, c, 1.0,
                                                 status.data, out.data, out.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
 private:
  CudaContext& ctx_;
  cusolverDnHandle_t solver_ = nullptr;
  syevjInfo_t syevj_params_ = nullptr;
  // eigh_small: syevj up to this order, syevd above. syevd's first call loads the tridiagonal
  // path's kernels: 32 ms at order 48 on the H200 (bench/first_use, 2026-11-30), after which a
  // call takes 0.7 ms against syevj's 1.1; the first call of syevj at 48, its kernels loaded by
  // the warm-up, 2.3 ms. Chebyshev's block at k = 32 is 48: can_1072's solve went 78 -> 38 ms.
  int syevj_max_ = 64;
  int* info_ = nullptr;         // cuSOLVER info words (device)
  double* solver_work_ = nullptr;
  int solver_lwork_ = 0;
  double* small_ws_ = nullptr;  // pip_factor matrices (4 × m × (m + 1))
  int small_dim_ = 0;
};

}  // namespace

std::unique_ptr<SmallDense> make_small_dense(CudaContext& ctx) {
  return std::make_unique<CudaSmallDense>(ctx);
}

}  // namespace tcsolve::cuda_dense
