// Pseudo-block GMRES(m)'s kernels on the GPU (gmres_kernels.hpp; the CPU reference is
// gmres_kernels.cpp), all on ctx.stream. The tall passes run one grid row (blockIdx.y) a column,
// grid-stride over tiles of kTile rows; the reductions go through ctx.partial (one partial sum a
// thread block) and a finishing kernel that adds them in a fixed order (deterministic: the same
// sums in every run, as dense_ops.cu's column sums). The per-column steps are one thread a column.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda_check.cuh"
#include "core/error.hpp"
#include "solvers/krylov/gmres_kernels.hpp"

namespace tcsolve::krylov::gmres::cuda {

namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kSharedPad = 4;  // doubles past the last one a kernel reads (see combine)
constexpr int kRowsPerThread = 2, kTile = kThreads * kRowsPerThread;  // rows a tile
// The dot products of a fused pass re-read the tile of the k blocks that its update has just
// read (k·kTile·8 bytes a thread block): the grid is capped so that the tiles in flight fit in
// this much of the L2 (50 MB on an H200), and that re-read does not reach DRAM.
constexpr double kL2Budget = 32.0 * 1024 * 1024;
constexpr int kMaxCols = 65535;  // grid.y

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    TCSOLVE_CUDA_CHECK(cudaGetDevice(&dev));
    TCSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return std::max(v, 1);
  }();
  return n;
}

cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream); }

// Thread blocks a column for a tall pass over n rows touching k blocks besides w: 8 blocks an SM
// over all columns at most, no more than the tiles, and, when the pass re-reads its tiles (an
// update and dots), no more than kL2Budget of tiles in flight (but one block an SM at least).
int grid_x(std::int64_t n, std::int64_t cols, int k, bool rereads) {
  const long long tiles = (n + kTile - 1) / kTile;
  const double tile_bytes = 8.0 * kTile * (k + 1);
  const long long full = 8LL * sm_count();
  const long long budget =
      rereads ? std::max<long long>(sm_count(),
                                    std::min<long long>(full, static_cast<long long>(kL2Budget / tile_bytes)))
              : full;
  return static_cast<int>(std::max<long long>(1, std::min(tiles, budget / std::max<std::int64_t>(cols, 1))));
}

__device__ inline double warp_sum(double s) {
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  return s;
}

// The fused Gram-Schmidt pass (Kernels::ortho_pass) for column blockIdx.y. Each thread holds
// kRowsPerThread rows of the tile: w −= Σ_i V_i·coef_i row by row, then for each i the tile's
// V_iᵀw reduced over the warp and added to the warp's slot acc[i][warp] (shared), ‖w‖² in a
// register. At the end the block's sums go to partial[(c·K + i)·gridDim.x + blockIdx.x].
// Shared memory: k coefficients and K·kWarps sums.
__global__ void __launch_bounds__(kThreads)
    ortho_kernel(long long n, int k, const double* __restrict__ v, long long ldv, long long stride,
                 double* __restrict__ w, long long ldw, const double* __restrict__ coef, long long ldc,
                 int dots, int norm, int K, double* __restrict__ partial) {
  extern __shared__ double sh[];
  double* cf = sh;
  double* acc = sh + k;
  const int c = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < k; i += kThreads) cf[i] = coef ? coef[c * ldc + i] : 0.0;
  for (int i = threadIdx.x; i < K * kWarps; i += kThreads) acc[i] = 0.0;
  __syncthreads();
  const double* vc = v + c * ldv;
  double* wc = w + c * ldw;
  double nrm = 0.0;
  for (long long t0 = static_cast<long long>(blockIdx.x) * kTile; t0 < n;
       t0 += static_cast<long long>(gridDim.x) * kTile) {
    long long row[kRowsPerThread];
    double wv[kRowsPerThread];
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) {
      row[q] = t0 + q * kThreads + threadIdx.x;
      wv[q] = row[q] < n ? wc[row[q]] : 0.0;
    }
    if (coef) {
#pragma unroll 4
      for (int i = 0; i < k; ++i) {
        const double* vi = vc + i * stride;
        const double a = cf[i];
#pragma unroll
        for (int q = 0; q < kRowsPerThread; ++q)
          if (row[q] < n) wv[q] -= vi[row[q]] * a;
      }
#pragma unroll
      for (int q = 0; q < kRowsPerThread; ++q)
        if (row[q] < n) wc[row[q]] = wv[q];
    }
    if (dots) {
#pragma unroll 4
      for (int i = 0; i < k; ++i) {
        const double* vi = vc + i * stride;
        double p = 0.0;
#pragma unroll
        for (int q = 0; q < kRowsPerThread; ++q)
          if (row[q] < n) p += vi[row[q]] * wv[q];
        p = warp_sum(p);
        if (lane == 0) acc[i * kWarps + warp] += p;
      }
    }
    if (norm) {
#pragma unroll
      for (int q = 0; q < kRowsPerThread; ++q) nrm += wv[q] * wv[q];
    }
  }
  if (norm) {
    nrm = warp_sum(nrm);
    if (lane == 0) acc[(K - 1) * kWarps + warp] = nrm;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < K; i += kThreads) {
    double s = 0.0;
    for (int q = 0; q < kWarps; ++q) s += acc[i * kWarps + q];
    partial[(static_cast<long long>(c) * K + i) * gridDim.x + blockIdx.x] = s;
  }
}

// out(i, c) (i < kd) or out(norm_row, c) (i = K − 1 when there is a norm) = Σ_b partial: one warp
// a (c, i) pair, lanes over the thread blocks, a fixed shuffle tree.
__global__ void ortho_finish_kernel(const double* __restrict__ partial, int gx, int K, int cols, int kd,
                                    int norm_row, double* __restrict__ out, long long ldo) {
  const int pair = blockIdx.x * kWarps + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (pair >= K * cols) return;
  const int c = pair / K, i = pair % K;
  double s = 0.0;
  for (int b = lane; b < gx; b += 32) s += partial[static_cast<long long>(pair) * gx + b];
  s = warp_sum(s);
  if (lane == 0) out[(i < kd ? i : norm_row) + c * ldo] = s;
}

__global__ void arnoldi_kernel(StateLayout L, int j, const double* h1, long long ld1, const double* h2,
                               long long ld2, int norm_row, double* st, long long lds, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  column_arnoldi(L, j, h1 + c * ld1, h2 + c * ld2, h2[c * ld2 + norm_row], st + c * lds);
}

__global__ void start_kernel(StateLayout L, const double* beta, double* st, long long lds, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < cols) column_start(L, beta[c], st + c * lds);
}

__global__ void solve_kernel(StateLayout L, double* st, long long lds, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < cols) column_solve(L, st + c * lds);
}

// w ← w·st(kInvNorm, c); z = d∘w when d.
__global__ void normalize_kernel(long long n, double* w, long long ldw, const double* st, long long lds,
                                 const double* d, double* z, long long ldz) {
  const int c = blockIdx.y;
  const double a = st[c * lds + StateLayout::kInvNorm];
  double* wc = w + c * ldw;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const double x = wc[i] * a;
    wc[i] = x;
    if (d) z[c * ldz + i] = d[i] * x;
  }
}

// u = diag(d)·Σ_{i<k} V_i·y_i for column blockIdx.y (y in shared memory).
__global__ void combine_kernel(long long n, int k, const double* __restrict__ v, long long ldv,
                               long long stride, const double* __restrict__ st, long long lds, long long yoff,
                               const double* __restrict__ d, double* __restrict__ u, long long ldu) {
  extern __shared__ double y[];
  const int c = blockIdx.y;
  for (int i = threadIdx.x; i < k; i += blockDim.x) y[i] = st[c * lds + yoff + i];
  __syncthreads();
  const double* vc = v + c * ldv;
  for (long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; r < n;
       r += static_cast<long long>(gridDim.x) * blockDim.x) {
    double s = 0.0;
    for (int i = 0; i < k; ++i) s += vc[i * stride + r] * y[i];
    u[c * ldu + r] = d ? d[r] * s : s;
  }
}

dim3 columns_grid(std::int64_t cols) { return dim3(static_cast<unsigned>((cols + 63) / 64)); }

dim3 elementwise_grid(std::int64_t n, std::int64_t cols) {
  const long long blocks = (n + kThreads - 1) / kThreads;
  const long long per_col = std::max<long long>(1, 16LL * sm_count() / std::max<std::int64_t>(cols, 1));
  return dim3(static_cast<unsigned>(std::max<long long>(1, std::min(blocks, per_col))),
              static_cast<unsigned>(cols));
}

std::int64_t partial_doubles(std::int64_t /*n*/, std::int64_t kmax, std::int64_t s, int /*workers*/) {
  // grid_x·cols ≤ max(cols, 8·SMs) thread blocks, K ≤ kmax + 1 sums each.
  return (kmax + 1) * std::max<std::int64_t>(s, 8LL * sm_count());
}

void ortho_pass(const Context& ctx, const Basis& v, int k, MvView<double> w, MvView<const double> coef,
                MvView<double> out, bool dots, int norm_row) {
  const std::int64_t n = w.rows, cols = w.cols;
  const int K = (dots ? k : 0) + (norm_row >= 0 ? 1 : 0);
  if (cols == 0 || K + (coef.data ? 1 : 0) == 0) return;
  TCSOLVE_REQUIRE(cols <= kMaxCols, "gmres ortho_pass: more than 65535 columns");
  const int gx = grid_x(n, cols, k, coef.data != nullptr && dots);
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(gx) * cols * std::max(K, 1) <= ctx.partial_size,
                  "gmres ortho_pass: workspace");
  const std::size_t shared = sizeof(double) * (k + static_cast<std::size_t>(std::max(K, 1)) * kWarps);
  ortho_kernel<<<dim3(gx, static_cast<unsigned>(cols)), kThreads, shared, stream_of(ctx)>>>(
      n, k, v.data, v.ld, v.stride, w.data, w.ld, coef.data, coef.ld, dots ? 1 : 0, norm_row >= 0 ? 1 : 0,
      std::max(K, 1), ctx.partial);
  TCSOLVE_CUDA_CHECK_LAUNCH();
  if (K == 0) return;
  const long long pairs = static_cast<long long>(K) * cols;
  ortho_finish_kernel<<<static_cast<unsigned>((pairs + kWarps - 1) / kWarps), kThreads, 0, stream_of(ctx)>>>(
      ctx.partial, gx, K, static_cast<int>(cols), dots ? k : 0, norm_row, out.data, out.ld);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

void arnoldi_step(const Context& ctx, const StateLayout& L, int j, MvView<const double> h1,
                  MvView<const double> h2, int norm_row, MvView<double> state) {
  if (state.cols == 0) return;
  arnoldi_kernel<<<columns_grid(state.cols), 64, 0, stream_of(ctx)>>>(
      L, j, h1.data, h1.ld, h2.data, h2.ld, norm_row, state.data, state.ld, static_cast<int>(state.cols));
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

void start_cycle(const Context& ctx, const StateLayout& L, MvView<const double> beta, MvView<double> state) {
  if (state.cols == 0) return;
  start_kernel<<<columns_grid(state.cols), 64, 0, stream_of(ctx)>>>(L, beta.data, state.data, state.ld,
                                                                    static_cast<int>(state.cols));
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

void normalize(const Context& ctx, MvView<double> w, MvView<const double> state, const double* d,
               MvView<double> z) {
  if (w.cols == 0 || w.rows == 0) return;
  TCSOLVE_REQUIRE(w.cols <= kMaxCols, "gmres normalize: more than 65535 columns");
  normalize_kernel<<<elementwise_grid(w.rows, w.cols), kThreads, 0, stream_of(ctx)>>>(
      w.rows, w.data, w.ld, state.data, state.ld, d, z.data, z.ld);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

void solve_triangular(const Context& ctx, const StateLayout& L, MvView<double> state) {
  if (state.cols == 0) return;
  solve_kernel<<<columns_grid(state.cols), 64, 0, stream_of(ctx)>>>(L, state.data, state.ld,
                                                                    static_cast<int>(state.cols));
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

void combine(const Context& ctx, const StateLayout& L, const Basis& v, int k, MvView<const double> state,
             const double* d, MvView<double> u) {
  if (u.cols == 0 || u.rows == 0) return;
  TCSOLVE_REQUIRE(u.cols <= kMaxCols, "gmres combine: more than 65535 columns");
  // y padded by kSharedPad doubles: compute-sanitizer reported 16-byte shared reads one past y's
  // k words from this kernel (H200, CUDA 13; the source reads y[i] only for i < k, so presumably
  // the unrolled loop's paired loads); with the pad, 0 errors over the Gmres*/Minres* GPU tests.
  combine_kernel<<<elementwise_grid(u.rows, u.cols), kThreads, sizeof(double) * (std::max(k, 1) + kSharedPad),
                   stream_of(ctx)>>>(u.rows, k, v.data, v.ld, v.stride, state.data, state.ld, L.y(), d,
                                     u.data, u.ld);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

Kernels kernels() {
  return {partial_doubles, ortho_pass, arnoldi_step, start_cycle, normalize, solve_triangular, combine};
}

}  // namespace tcsolve::krylov::gmres::cuda
