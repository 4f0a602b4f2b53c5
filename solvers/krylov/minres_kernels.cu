// CUDA kernels of pseudo-block MINRES (minres_kernels.hpp), on the dense ops' stream. The tall
// passes run a grid of (blocks over the rows) × (columns); each block leaves its partial sums in a
// workspace, and one warp a column adds them in a fixed order (deterministic, as dense_ops.cu's
// column sums) before the column's scalar step runs on lane 0. No atomics, no host round trip.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda_check.cuh"
#include "core/error.hpp"
#include "solvers/krylov/minres_kernels.hpp"

namespace tcsolve::mr {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 128;   // row blocks (partial sums) per column
constexpr int kMaxGridY = 65535;  // columns per launch

__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// The block's sums of v[0:K] into out[0:K] (thread 0 writes).
template <int K>
__device__ void block_sums(double (&v)[K], double* out) {
  __shared__ double part[kThreads / 32][K];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int k = 0; k < K; ++k) v[k] = warp_sum(v[k]);
  if (lane == 0)
    for (int k = 0; k < K; ++k) part[warp][k] = v[k];
  __syncthreads();
  if (warp == 0) {
    for (int k = 0; k < K; ++k) {
      double s = lane < kThreads / 32 ? part[lane][k] : 0.0;
      s = warp_sum(s);
      if (lane == 0) out[k] = s;
    }
  }
}

// Lane 0 gets Σ_b partial[(j·nb + b)·K + k] for k < K (fixed order: lanes over b, then a shuffle tree).
template <int K>
__device__ void column_sums(const double* partial, int nb, long long j, double (&out)[K]) {
  const int lane = threadIdx.x & 31;
  for (int k = 0; k < K; ++k) {
    double s = 0.0;
    for (int b = lane; b < nb; b += 32) s += partial[(j * nb + b) * K + k];
    out[k] = warp_sum(s);
  }
}

// The dot pass: T1 = z·q, T2 = z·(d∘y), T3 = q·q, T4 = z·z per column (grid.y = column).
__global__ void __launch_bounds__(kThreads)
    dots_kernel(long long n, const double* zc, long long ldz, const double* q, long long ldq, const double* y,
                long long ldy, const double* d, const double* s, bool all, double* partial) {
  const long long j = blockIdx.y;
  if (!all && s[j * kFields + kState] != kActive) return;
  const double* z = zc + j * ldz;
  const double* qq = q + j * ldq;
  const double* yy = y ? y + j * ldy : nullptr;
  double v[4] = {0.0, 0.0, 0.0, 0.0};
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const double zi = z[i], qi = qq[i];
    v[0] += zi * qi;
    v[2] += qi * qi;
    v[3] += zi * zi;
    if (yy) v[1] += zi * (d ? d[i] * yy[i] : yy[i]);
  }
  block_sums<4>(v, partial + (j * gridDim.x + blockIdx.x) * 4);
}

// The finishing kernels' frame: one warp a column j < na (8 a block of 256); a column that
// skip(c) leaves (c: its scalars in s) is left as it is; else its K sums over the nb partials,
// then step(c, t) on lane 0.
template <int K, class Skip, class Step>
__device__ __forceinline__ void finish_columns(int na, int nb, const double* partial, double* s,
                                               Skip skip, Step step) {
  const long long j = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (j >= na) return;
  double* c = s + j * kFields;
  if (skip(c)) return;
  double t[K];
  column_sums<K>(partial, nb, j, t);
  if ((threadIdx.x & 31) == 0) step(c, t);
}

// The dot pass's sums, then the scalar step.
__global__ void dots_finish_kernel(int na, int nb, const double* partial, double* s, bool start,
                                   ScalarParams p) {
  finish_columns<4>(
      na, nb, partial, s, [&](const double* c) { return !start && c[kState] != kActive; },
      [&](double* c, const double(&t)[4]) {
        c[kT1] = t[0], c[kT2] = t[1], c[kT3] = t[2], c[kT4] = t[3];
        if (start)
          step_start(c, p);
        else
          step_coefficients(c);
      });
}

struct UpdatePointers {
  const double *q, *zc, *uc, *w, *d, *dinv;
  double *zp, *up, *wp, *x, *r;
  long long ld;  // every tall block has this leading dimension (the solver's n × s blocks)
};

// The update pass (minres.cpp), one sweep: x (and r) updates of the last step, then for an active
// column the next Lanczos vector (z with none/Jacobi, u with another preconditioner) and its β².
template <bool kGeneral, bool kR, bool kJacobi>
__global__ void __launch_bounds__(kThreads)
    update_kernel(long long n, UpdatePointers b, const double* s, double* partial) {
  const long long j = blockIdx.y;
  const double* c = s + j * kFields;
  const double state = c[kState];
  if (state == kDone) return;
  const bool lanczos = state == kActive;
  const double wv = c[kWv], we = c[kWe], wd = c[kWd], phi = c[kPhi], rs = c[kRs], ru = c[kRu];
  const double rc = c[kRc], a = c[kA], bb = c[kB];
  const long long o = j * b.ld;
  double v[2] = {0.0, 0.0};  // ‖r‖², β²
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const double zpi = b.zp[o + i], zci = b.zc[o + i];
    const double wn = wv * zpi - we * b.wp[o + i] - wd * b.w[o + i];
    b.wp[o + i] = wn;
    b.x[o + i] += phi * wn;
    if (kR) {
      const double u = kGeneral ? b.uc[o + i] : (kJacobi ? b.d[i] * zci : zci);
      const double ri = rs * b.r[o + i] + ru * u;
      b.r[o + i] = ri;
      v[0] += ri * ri;
    }
    if (lanczos) {
      if (kGeneral) {
        b.up[o + i] = rc * b.q[o + i] - a * b.uc[o + i] - bb * b.up[o + i];
      } else {
        const double zn = rc * (kJacobi ? b.dinv[i] * b.q[o + i] : b.q[o + i]) - a * zci - bb * zpi;
        b.zp[o + i] = zn;
        v[1] += (kJacobi ? b.d[i] * zn : zn) * zn;
      }
    }
  }
  block_sums<2>(v, partial + (j * gridDim.x + blockIdx.x) * 2);
}

// The update pass's sums: ‖r‖² and (an active column, z stored) β².
__global__ void update_finish_kernel(int na, int nb, const double* partial, double* s, bool general,
                                     bool with_r) {
  finish_columns<2>(
      na, nb, partial, s, [](const double* c) { return c[kState] == kDone; },
      [&](double* c, const double(&t)[2]) {
        if (with_r) c[kRr] = t[0];
        if (c[kState] == kActive && !general) c[kNrm] = t[1];
      });
}

__global__ void rotate_kernel(int na, double* s, const double* beta2, ScalarParams p) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= na) return;
  double* c = s + static_cast<long long>(j) * kFields;
  step_rotate(c, beta2 ? beta2[j] : c[kNrm], p);
}

__global__ void finish_all_kernel(int na, double* s) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < na) step_finish(s + static_cast<long long>(j) * kFields);
}

class CudaMinresKernels final : public MinresKernels {
 public:
  CudaMinresKernels(void* stream, std::int64_t n, std::int64_t max_cols)
      : stream_(static_cast<cudaStream_t>(stream)),
        nb_(static_cast<int>(
            std::clamp<std::int64_t>((n + kThreads * 8 - 1) / (kThreads * 8), 1, kMaxBlocks))),
        partial_(static_cast<std::int64_t>(nb_) * 4, std::max<std::int64_t>(max_cols, 1), Space::device) {
    TCSOLVE_REQUIRE(max_cols <= kMaxGridY, "minres (CUDA): at most 65535 right-hand sides per solve");
  }

  void dots(MvView<const double> zc, MvView<const double> q, MvView<const double> y, const double* d,
            MvView<double> s, DotStep step, const ScalarParams& p) override {
    TCSOLVE_REQUIRE(zc.cols == s.cols && q.cols == s.cols && q.rows == zc.rows && s.ld == kFields &&
                        (!y.data || (y.cols == s.cols && y.rows == zc.rows)) && s.cols <= partial_.cols(),
                    "minres dots: shapes");
    if (s.cols == 0) return;
    const int na = static_cast<int>(s.cols);
    const bool start = step == DotStep::start;
    dots_kernel<<<dim3(nb_, na), kThreads, 0, stream_>>>(zc.rows, zc.data, zc.ld, q.data, q.ld, y.data, y.ld,
                                                         d, s.data, start, partial_.data());
    TCSOLVE_CUDA_CHECK_LAUNCH();
    dots_finish_kernel<<<(na + 7) / 8, 256, 0, stream_>>>(na, nb_, partial_.data(), s.data, start, p);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void update(const UpdateBlocks& b, MvView<double> s) override {
    const bool general = b.up.data != nullptr, with_r = b.r.data != nullptr, jacobi = b.d != nullptr;
    const long long ld = b.q.ld;
    TCSOLVE_REQUIRE(s.ld == kFields && s.cols <= partial_.cols() && b.zc.ld == ld && b.zp.ld == ld &&
                        b.wp.ld == ld && b.w.ld == ld && b.x.ld == ld && (!with_r || b.r.ld == ld) &&
                        (!general || (b.uc.ld == ld && b.up.ld == ld)),
                    "minres update (CUDA): the tall blocks must share one leading dimension");
    if (s.cols == 0) return;
    const int na = static_cast<int>(s.cols);
    UpdatePointers p{b.q.data,  b.zc.data, b.uc.data, b.w.data, b.d,      b.dinv,
                     b.zp.data, b.up.data, b.wp.data, b.x.data, b.r.data, ld};
    const dim3 grid(nb_, na);
    const long long n = b.q.rows;
    double* part = partial_.data();
    const int mode = (general ? 4 : 0) | (with_r ? 2 : 0) | (jacobi ? 1 : 0);
    switch (mode) {
#define TCSOLVE_MINRES_CASE(m)                                \
  case m:                                                     \
    update_kernel<(m & 4) != 0, (m & 2) != 0, (m & 1) != 0>   \
        <<<grid, kThreads, 0, stream_>>>(n, p, s.data, part); \
    break;
      TCSOLVE_MINRES_CASE(0)
      TCSOLVE_MINRES_CASE(1) TCSOLVE_MINRES_CASE(2) TCSOLVE_MINRES_CASE(3) TCSOLVE_MINRES_CASE(4)
          TCSOLVE_MINRES_CASE(5) TCSOLVE_MINRES_CASE(6) TCSOLVE_MINRES_CASE(7)
#undef TCSOLVE_MINRES_CASE
    }
    TCSOLVE_CUDA_CHECK_LAUNCH();
    update_finish_kernel<<<(na + 7) / 8, 256, 0, stream_>>>(na, nb_, part, s.data, general, with_r);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void rotate(MvView<double> s, MvView<const double> beta2, const ScalarParams& p) override {
    if (s.cols == 0) return;
    const int na = static_cast<int>(s.cols);
    rotate_kernel<<<(na + 127) / 128, 128, 0, stream_>>>(na, s.data, beta2.data, p);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  void finish_all(MvView<double> s) override {
    if (s.cols == 0) return;
    const int na = static_cast<int>(s.cols);
    finish_all_kernel<<<(na + 127) / 128, 128, 0, stream_>>>(na, s.data);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

 private:
  cudaStream_t stream_;
  int nb_;
  MultiVector<double> partial_;  // nb_ × 4 partial sums per column
};

}  // namespace

std::unique_ptr<MinresKernels> make_cuda_minres_kernels(void* stream, std::int64_t n, std::int64_t max_cols) {
  return std::make_unique<CudaMinresKernels>(stream, n, max_cols);
}

}  // namespace tcsolve::mr
