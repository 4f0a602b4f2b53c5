// The shared state of the CUDA dense ops (dense/cuda_context.cuh) and the kernels its helpers
// launch: column gathers and axpby, column dots and their deterministic block sums, and the fused
// Gram products (tensor cores, mma.sync m8n8k4 f64) with their finishing sum.
#include "solvers/dense/cuda_context.cuh"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "solvers/dense/tiles.cuh"

namespace tcsolve::cuda_dense {

namespace {

// y(:, j) = x(:, idx[j]) (fp64 or fp32 blocks); grid.y = column, grid-stride over rows.
template <class T>
__global__ void gather_kernel(const T* x, long long ldx, T* y, long long ldy, long long rows,
                              ColumnIndex ci) {
  const T* xs = x + ci.idx[blockIdx.y] * ldx;
  T* ys = y + blockIdx.y * ldy;
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

// partial[j·gridDim.x + b] = Σ_i x_ij·y_ij over block b's rows (a block reduction); column_sum_kernel
// adds the blocks' partials in a fixed order. (Atomics made the sum's rounding depend on the
// blocks' timing: block CG's true residuals at tol's edge then decided an extra cycle or not,
// 115 or 139 iterations on elast3d:64 from one run to the next.)
__global__ void column_dot_kernel(const double* x, long long ldx, const double* y, long long ldy,
                                  long long rows, double* partial) {
  const double* xs = x + blockIdx.y * ldx;
  const double* ys = y + blockIdx.y * ldy;
  double s = 0.0;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    s += xs[i] * ys[i];
  block_column_partial(s, partial);
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

// How the Gram kernel's lanes load their fragments (lane (g, t), KS k-steps of 4 rows an
// iteration, all loads issued before the first mma):
//   single: k-step h takes rows k0 + 4h + t, one 8- (fp32: 4-) byte load each (any view);
//   pair:   rows k0 + 8u + 2t and + 1 as one double2 (fp32: float2) for k-steps 2u, 2u + 1, so
//           that a warp's step reads 64 contiguous bytes of each column in half the load
//           instructions (16-byte aligned blocks, even leading dimensions). (Two double2 a step,
//           16 rows, measured slower: 0.148 against 0.116 ms for PᵀQ at 786k × 32 on the H200,
//           144 registers against fewer, three blocks an SM instead of four;
//           TCSOLVE_GRAM_VEC=0 turns pair off for A/B.) The k-steps then take rows {2t},
//           {2t + 1}, {8 + 2t}, {9 + 2t}: the same row for X's and Y's fragment, so the sum over
//           rows is unchanged (only its order);
//   octet:  fp32 only, 8 k-steps on rows k0 + 8t .. 8t + 7 of a column (two float4), so that a
//           warp's two loads of a column cover one whole 128-byte line (16-byte aligned blocks,
//           leading dimensions multiples of 4: CudaContext::quads_ok). (The pair layout reads 32
//           bytes of a column a warp instruction in fp32 and ran 1.7× slower than in fp64 on
//           elast3d:64, docs/performance.md.) The rows of k-step u are {8t + u}.
enum class GramLoad { single, pair, octet };
template <GramLoad L>
constexpr int kGramSteps = L == GramLoad::octet ? 8 : 2;  // KS

// The fragments of lane (g, t) for one iteration at row k0: af[h][i] = X(row of k-step h, 8i + g),
// bf[h][j] = Y(row of k-step h, 8j + g), 0 past n or for a column ≥ p (X) or q (Y).
template <GramLoad L, int KS, int MT, int NT, class T, class F>
__device__ __forceinline__ void gram_fragments(const T* x, long long ldx, int p, const T* y,
                                               long long ldy, int q, long long k0, long long n,
                                               int g, int t, F (&af)[KS][MT], F (&bf)[KS][NT]) {
  const bool full = k0 + 4 * KS <= n;
  if constexpr (L == GramLoad::octet) {
    static_assert(sizeof(T) == sizeof(float) && KS == 8, "octet loads: fp32, 8 k-steps");
    const long long row = k0 + 8 * t;
    float v[8];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      load_octet(x + (8 * i + g) * ldx, row, n, full, 8 * i + g < p, v);
#pragma unroll
      for (int u = 0; u < 8; ++u) af[u][i] = v[u];
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      load_octet(y + (8 * j + g) * ldy, row, n, full, 8 * j + g < q, v);
#pragma unroll
      for (int u = 0; u < 8; ++u) bf[u][j] = v[u];
    }
  } else if constexpr (L == GramLoad::pair) {
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
}

// Partial Gram products G_b = X(rows of b)ᵀ·Y(rows of b), X n × p, Y n × q, p ≤ 8·MT, q ≤ 8·NT.
// Each warp walks KS k-steps of 4 rows an iteration (grid-stride over all warps, fragments loaded
// as L says, straight from global memory) holding every 8 × 8 output tile in registers (2·MT·NT
// doubles per lane; the fragments of the octet layout as fp32, converted at the mma). The warps'
// tiles are summed in shared memory, then written as block partial b (p × q, compact) for
// gram_finish_kernel.
template <class T, int MT, int NT, GramLoad L>
__global__ void __launch_bounds__(128) gram_tn_kernel(long long n, int p, int q, const T* x,
                                                      long long ldx, const T* y,
                                                      long long ldy, double* partial) {
  extern __shared__ double sg[];  // p × q
  constexpr int KS = kGramSteps<L>;
  using F = std::conditional_t<L == GramLoad::octet, float, double>;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  double acc[MT][NT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;
  const long long gw = static_cast<long long>(blockIdx.x) * nw + warp;
  const long long tw = static_cast<long long>(gridDim.x) * nw;
  for (long long k0 = 4 * KS * gw; k0 < n; k0 += 4 * KS * tw) {
    F af[KS][MT], bf[KS][NT];
    gram_fragments<L>(x, ldx, p, y, ldy, q, k0, n, g, t, af, bf);
#pragma unroll
    for (int h = 0; h < KS; ++h)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) dmma(acc[i][j][0], acc[i][j][1], af[h][i], bf[h][j]);
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

}  // namespace

CudaContext::CudaContext() {
  if (device_count() == 0) throw DeviceError("no CUDA device present", __FILE__, __LINE__);
  TCSOLVE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  TCSOLVE_CUBLAS_CHECK(cublasCreate(&handle));
  TCSOLVE_CUBLAS_CHECK(cublasSetStream(handle, stream));
  int dev = 0, sm_count = 0;
  TCSOLVE_CUDA_CHECK(cudaGetDevice(&dev));
  TCSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, dev));
  sms = std::max(sm_count, 1);
  device = dev;
  pending.reserve(16);
  reserve(0, 0, 64 * 64);
  if (const char* ev = std::getenv("TCSOLVE_NO_FUSED")) fused = std::atoi(ev) == 0;
  // TCSOLVE_TALL_GEMM=0: gemm_into through cuBLAS only (A/B of tall_gemm_kernel)
  if (const char* ev = std::getenv("TCSOLVE_TALL_GEMM")) tall_gemm = std::atoi(ev) != 0;
  // TCSOLVE_GRAM_VEC=0: the Gram kernel's 8-byte loads only (A/B of its double2 loads)
  if (const char* ev = std::getenv("TCSOLVE_GRAM_VEC")) gram_vec = std::atoi(ev) != 0;
  // TCSOLVE_PAIR_ROWS=0: the update kernels' 8-row strips only (A/B of the row-pair strips)
  if (const char* ev = std::getenv("TCSOLVE_PAIR_ROWS")) pair_rows = std::atoi(ev) != 0;
}

CudaContext::~CudaContext() {
  cudaStreamSynchronize(stream);
  device_free(partial);
  if (scratch) device_free(scratch);
  if (coef) device_free(coef);
  if (small) device_free(small);
  if (pinned) cudaFreeHost(pinned);
  if (ring) cudaFreeHost(ring);
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
}

void CudaContext::synchronize() { TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(stream)); }

void CudaContext::reserve(std::int64_t rows, std::int64_t cols, std::int64_t coef_need) {
  std::size_t need = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  if (need > scratch_elems) {
    synchronize();
    if (scratch) device_free(scratch);
    scratch = static_cast<double*>(device_malloc(need * sizeof(double)));
    scratch_elems = need;
  }
  std::size_t ce = static_cast<std::size_t>(std::max<std::int64_t>(coef_need, 1024));
  if (ce > coef_elems) {
    fetch();  // pending results live in small / pinned
    synchronize();
    if (coef) device_free(coef);
    if (small) device_free(small);
    if (pinned) cudaFreeHost(pinned);
    coef = static_cast<double*>(device_malloc(ce * sizeof(double)));
    small = static_cast<double*>(device_malloc(ce * sizeof(double)));
    TCSOLVE_CUDA_CHECK(cudaMallocHost(&pinned, ce * sizeof(double)));
    coef_elems = ce;
  }
}

void CudaContext::fetch() {
  if (pending.empty()) return;
  TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(pinned, small, sizeof(double) * small_pos,
                                     cudaMemcpyDeviceToHost, stream));
  synchronize();
  for (const Pending& e : pending)
    for (std::int64_t j = 0; j < e.q; ++j)
      std::copy(pinned + e.off + j * e.p, pinned + e.off + (j + 1) * e.p, e.host + j * e.ld);
  pending.clear();
  small_pos = 0;
}

int CudaContext::resident_blocks(const void* f, int threads, std::size_t smem) {
  for (auto& e : occupancy)
    if (e.first == f) return e.second;
  int b = 0;
  TCSOLVE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, f, threads, smem));
  const int total = std::max(b, 1) * sms;
  occupancy.push_back({f, total});
  return total;
}

void CudaContext::ensure_partial(int nb, std::size_t elems) {
  const std::size_t need = static_cast<std::size_t>(nb) * elems;
  if (need <= partial_elems) return;
  synchronize();
  device_free(partial);
  // Room for 64 × 64 Grams at 8 blocks per SM (34.6 MB on 132 SMs), so that the first
  // iterations do not regrow it; exactly what is needed under TCSOLVE_DEVICE_MEMORY_LIMIT, where
  // those megabytes may be all there is.
  partial_elems = device_memory_limit() > 0
                      ? need
                      : std::max(need, static_cast<std::size_t>(8) * sms * 64 * 64);
  partial = static_cast<double*>(device_malloc(partial_elems * sizeof(double)));
}

dim3 CudaContext::grid(std::int64_t rows, std::int64_t cols) const {
  // About 4 blocks per SM in total, at least one per column, at most what the rows need.
  std::int64_t per_col = std::max<std::int64_t>(1, (4 * sms + cols - 1) / std::max<std::int64_t>(cols, 1));
  per_col = std::min<std::int64_t>(per_col, (rows + 255) / 256);
  return dim3(static_cast<unsigned>(std::max<std::int64_t>(per_col, 1)), static_cast<unsigned>(cols));
}

void CudaContext::ensure_small(std::int64_t elems) {
  if (static_cast<std::size_t>(elems) > coef_elems) reserve(0, 0, elems);
}

std::size_t CudaContext::stage(std::size_t elems) {
  if (small_pos + elems > coef_elems) {
    fetch();
    if (elems > coef_elems) reserve(0, 0, static_cast<std::int64_t>(elems));
  }
  const std::size_t off = small_pos;
  small_pos += elems;
  return off;
}

void CudaContext::axpby_columns(const double* a, MvView<const double> x, const double* b,
                                MvView<double> y) {
  TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "axpby: shapes differ");
  for (std::int64_t c0 = 0; c0 < x.cols; c0 += kMaxCols) {
    std::int64_t nc = std::min<std::int64_t>(kMaxCols, x.cols - c0);
    ColumnCoef cc;
    for (std::int64_t j = 0; j < nc; ++j) cc.a[j] = a[c0 + j], cc.b[j] = b[c0 + j];
    axpby_kernel<<<grid(x.rows, nc), 256, 0, stream>>>(x.col(c0), x.ld, y.col(c0), y.ld, x.rows, cc);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

void CudaContext::scale_columns(double beta, MvView<double> y) {
  for (std::int64_t c0 = 0; c0 < y.cols; c0 += kMaxCols) {
    std::int64_t nc = std::min<std::int64_t>(kMaxCols, y.cols - c0);
    ColumnCoef cc;
    for (std::int64_t j = 0; j < nc; ++j) cc.a[j] = 0.0, cc.b[j] = beta;
    axpby_kernel<<<grid(y.rows, nc), 256, 0, stream>>>(y.col(c0), y.ld, y.col(c0), y.ld, y.rows, cc);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

// The host copy goes into the next slice of a pinned ring (a pageable source would make
// cudaMemcpyAsync synchronize the stream); the ring wraps after a stream sync, so no slice is
// rewritten while its copy may still be pending. The device buffer is reused in stream order.
const double* CudaContext::upload(const double* c, std::int64_t ld, std::int64_t p, std::int64_t q) {
  const std::size_t e = static_cast<std::size_t>(p * q);
  ensure_small(p * q);
  if (e > ring_elems) {
    synchronize();
    if (ring) cudaFreeHost(ring);
    ring_elems = std::max<std::size_t>(4 * e, 1 << 16);
    TCSOLVE_CUDA_CHECK(cudaMallocHost(&ring, ring_elems * sizeof(double)));
    ring_pos = 0;
  }
  if (ring_pos + e > ring_elems) {
    synchronize();
    ring_pos = 0;
  }
  double* slot = ring + ring_pos;
  for (std::int64_t j = 0; j < q; ++j) std::copy(c + j * ld, c + j * ld + p, slot + j * p);
  ring_pos += e;
  TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(coef, slot, e * sizeof(double), cudaMemcpyHostToDevice, stream));
  return coef;
}

template <class T>
void CudaContext::gather(MvView<const T> x, const std::int64_t* idx, std::int64_t count,
                         MvView<T> y) {
  TCSOLVE_REQUIRE(count <= y.cols && x.rows == y.rows, "gather: shapes");
  if (x.rows == 0) return;
  for (std::int64_t c0 = 0; c0 < count; c0 += kMaxCols) {
    std::int64_t nc = std::min<std::int64_t>(kMaxCols, count - c0);
    ColumnIndex ci;
    for (std::int64_t j = 0; j < nc; ++j) {
      TCSOLVE_REQUIRE(idx[c0 + j] >= 0 && idx[c0 + j] < x.cols, "gather: index out of range");
      ci.idx[j] = idx[c0 + j];
    }
    gather_kernel<T><<<grid(x.rows, nc), 256, 0, stream>>>(x.data, x.ld, y.col(c0), y.ld, x.rows, ci);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

template void CudaContext::gather<double>(MvView<const double>, const std::int64_t*, std::int64_t,
                                          MvView<double>);
template void CudaContext::gather<float>(MvView<const float>, const std::int64_t*, std::int64_t,
                                         MvView<float>);

void CudaContext::column_dots_to(MvView<const double> x, MvView<const double> y, double* out,
                                 long long stride) {
  const std::int64_t c = x.cols;
  if (x.rows == 0) {
    if (stride == 1)
      TCSOLVE_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(double) * c, stream));
    else
      TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(out, sizeof(double) * stride, 0, sizeof(double), c,
                                           stream));
    return;
  }
  for (std::int64_t c0 = 0; c0 < c; c0 += 65535) {
    std::int64_t nc = std::min<std::int64_t>(65535, c - c0);
    const dim3 gr = grid(x.rows, nc);
    ensure_partial(static_cast<int>(gr.x), static_cast<std::size_t>(nc));
    column_dot_kernel<<<gr, 256, 0, stream>>>(x.col(c0), x.ld, y.col(c0), y.ld, x.rows, partial);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    column_sum_kernel<<<static_cast<unsigned>((nc + 7) / 8), 256, 0, stream>>>(
        partial, static_cast<int>(gr.x), static_cast<int>(nc), out + c0 * stride, stride);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }
}

void CudaContext::column_sums(int nb, int cols, double* out, long long stride) {
  column_sum_kernel<<<static_cast<unsigned>((cols + 7) / 8), 256, 0, stream>>>(partial, nb, cols,
                                                                              out, stride);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

namespace {
template <int M, int N, GramLoad L, class T>
int launch_gram_instance(CudaContext& ctx, std::size_t sh, MvView<const T> x, MvView<const T> y) {
  // Blocks: what fits at once, but no fewer rows a block than one iteration of all its warps
  // takes with the octet layout (128) or a few iterations (256) with the others.
  constexpr std::int64_t kBlockRows = L == GramLoad::octet ? 128 : 256;
  const int p = static_cast<int>(x.cols), q = static_cast<int>(y.cols);
  const int nb = static_cast<int>(std::min<std::int64_t>(
      ctx.resident_blocks(reinterpret_cast<const void*>(&gram_tn_kernel<T, M, N, L>), 128, sh),
      (x.rows + kBlockRows - 1) / kBlockRows));
  ctx.ensure_partial(nb, static_cast<std::size_t>(p) * q);
  gram_tn_kernel<T, M, N, L><<<nb, 128, sh, ctx.stream>>>(x.rows, p, q, x.data, x.ld, y.data, y.ld,
                                                          ctx.partial);
  TCSOLVE_CUDA_CHECK_LAUNCH();
  return nb;
}
template <int M, int N, class T>
int launch_gram_case(CudaContext& ctx, bool vec, std::size_t sh, MvView<const T> x,
                     MvView<const T> y) {
  return vec ? launch_gram_instance<M, N, GramLoad::pair>(ctx, sh, x, y)
             : launch_gram_instance<M, N, GramLoad::single>(ctx, sh, x, y);
}
}  // namespace

template <class T>
int CudaContext::launch_gram_tn(int mt, int nt, std::size_t sh, MvView<const T> x,
                                MvView<const T> y) {
  const bool vec = gram_vec && x.ld % 2 == 0 && y.ld % 2 == 0 &&
                   (reinterpret_cast<std::uintptr_t>(x.data) |
                    reinterpret_cast<std::uintptr_t>(y.data)) % (2 * sizeof(T)) == 0;
#define TCSOLVE_GRAM_CASE(M, N) \
  if (mt <= M && nt <= N) return launch_gram_case<M, N>(*this, vec, sh, x, y);
  TCSOLVE_GRAM_CASE(1, 1)
  TCSOLVE_GRAM_CASE(2, 2)
  TCSOLVE_GRAM_CASE(4, 4)
  TCSOLVE_GRAM_CASE(8, 4)
  TCSOLVE_GRAM_CASE(4, 8)
#undef TCSOLVE_GRAM_CASE
  throw InvalidArgument("gram_into: no fused kernel for this shape");
}
template int CudaContext::launch_gram_tn<double>(int, int, std::size_t, MvView<const double>,
                                                 MvView<const double>);
template int CudaContext::launch_gram_tn<float>(int, int, std::size_t, MvView<const float>,
                                                MvView<const float>);

int CudaContext::launch_gram_octets(int mt, int nt, std::size_t sh, MvView<const float> x,
                                    MvView<const float> y) {
  TCSOLVE_REQUIRE(mt <= 4 && nt <= 4 && quads_ok({x, y}), "gram_into: no octet kernel for these blocks");
  if (mt <= 1 && nt <= 1) return launch_gram_instance<1, 1, GramLoad::octet>(*this, sh, x, y);
  if (mt <= 2 && nt <= 2) return launch_gram_instance<2, 2, GramLoad::octet>(*this, sh, x, y);
  return launch_gram_instance<4, 4, GramLoad::octet>(*this, sh, x, y);
}

void CudaContext::scale_or_zero(double beta, MvView<double> y) {
  if (y.rows == 0 || y.cols == 0 || beta == 1.0) return;
  if (beta == 0.0)
    TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(y.data, y.ld * sizeof(double), 0, y.rows * sizeof(double),
                                         y.cols, stream));
  else
    scale_columns(beta, y);
}

void CudaContext::gram_finish(int nb, int p, int q, double alpha, double beta, double* g,
                              long long ldg) {
  gram_finish_kernel<<<static_cast<unsigned>((static_cast<long long>(p) * q + 31) / 32), 256, 0,
                       stream>>>(partial, nb, p, q, alpha, beta, g, ldg);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

}  // namespace tcsolve::cuda_dense
