// Tensor-core BCSR × multivector (see bcsr_spmm_cuda.hpp). CPU twin: bcsr_spmm.cpp.
//
// A block of P·A is the A operand of one MMA tile (core/mma.cuh): fp64 8×4 blocks on m8n8k4
// DMMA, fp16/bf16 16×16 blocks on m16n8k16; B = the block's X rows × 8 columns of the N tile,
// C = a slice of Y. The blocks are stored in fragment order (lane L's A fragment at block·32 + L),
// so a warp reads a block with one coalesced load per lane.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/error.hpp"
#include "core/mma.cuh"
#include "spmm/bcsr_spmm_cuda.hpp"
#include "spmm/csr_spmm_cuda.hpp"

namespace tcsolve {

namespace {

constexpr int kWarpsPerCta = 4;
constexpr int kThreads = 32 * kWarpsPerCta;

struct BcsrArgs {
  std::int64_t nrows, ncols, nblocks, per_warp, nwarps, nbrows;
  const std::int64_t* __restrict__ bp;    // [nbrows + 1]
  const std::int32_t* __restrict__ bcol;  // [nblocks]
  const void* __restrict__ vals;
  const std::int32_t* __restrict__ perm;  // nullptr = identity
  const std::int32_t* __restrict__ warp_row;
  int nchunks;                            // column chunks of 8·NT
};

// Block b + u's A fragment (M×K block in fragment order: 32 lanes × AFrag, 256 B for fp64 8×4,
// 512 B for 16-bit 16×16, one coalesced load per lane) and its block column times STEP (1: the
// block column; K: its first row of X), or zeros and −1 past the run (b + u ≥ end).
template <class TA, int STEP = 1, class Col>
__device__ __forceinline__ void load_block(const BcsrArgs& A, std::int64_t b, int u,
                                           std::int64_t end, int lane,
                                           typename MmaTile<TA>::AFrag& a, Col& col) {
  using AFrag = typename MmaTile<TA>::AFrag;
  const bool ok = b + u < end;
  a = ok ? __ldg(static_cast<const AFrag*>(A.vals) + (b + u) * 32 + lane) : AFrag{};
  col = ok ? static_cast<Col>(__ldg(A.bcol + b + u)) * STEP : Col(-1);
}

// Moves r forward to the block-row that holds block b (skipping empty block-rows).
__device__ __forceinline__ void seek_row(const BcsrArgs& A, std::int64_t b, std::int64_t& r,
                                         std::int64_t& rb0, std::int64_t& rb1) {
  rb0 = A.bp[r];
  rb1 = A.bp[r + 1];
  while (rb1 <= b) {
    ++r;
    rb0 = rb1;
    rb1 = A.bp[r + 1];
  }
}

// fp64 B fragments of block column bc (X rows 4·bc .. 4·bc + 3) for the NT 8-column tiles from
// c0, X column-major (ldx): lane (g, t) gets B[t][g] = X[4·bc + t][c0 + 8j + g] — one full
// 32-byte sector per column per block; zero outside X (A.ncols rows, ncols columns) or for bc < 0.
template <int NT>
__device__ __forceinline__ void load_x_direct(double (&xb)[NT], const BcsrArgs& A,
                                              const double* x, std::int64_t ldx, int ncols,
                                              const std::int32_t& bc, int c0, int g, int t) {
  constexpr int K = MmaTile<double>::K;
  const std::int64_t xr = static_cast<std::int64_t>(bc) * K + t;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int xc = c0 + 8 * j + g;
    xb[j] = (bc >= 0 && xr < A.ncols && xc < ncols)
                ? __ldg(x + xr + static_cast<std::int64_t>(xc) * ldx)
                : 0.0;
  }
}

// The same from X staged in fragment order (stage_fragments_kernel; W = ldx ≥ 8 staged columns):
// for block column c the K·W doubles at x + c·K·W hold, per pair p of 8-column tiles (W ≥ 16,
// P = 2), lane L's B[t][g] of tiles 2p and 2p + 1 at 64p + 2L; for W = 8 (P = 1) one value at L.
// One 16-byte load per lane reads 512 contiguous bytes per warp: four full lines, no partial
// sectors.
template <int NT>
__device__ __forceinline__ void load_x_staged(double (&xb)[NT], const double* x, std::int64_t ldx,
                                              std::int32_t bc, int c0, int lane) {
  constexpr int K = MmaTile<double>::K;
  constexpr int P = NT >= 2 ? 2 : 1;  // 8-column tiles per staged load
  constexpr int kPiece = 32 * P;      // doubles per staged piece of P tiles (K rows × 8P columns)
  static_assert(32 == K * MmaTile<double>::N, "one B value a lane per 8-column tile");
  static_assert(NT % P == 0, "8-column tiles in pairs");
  if (bc < 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j) xb[j] = 0.0;
    return;
  }
  const double* src = x + static_cast<std::int64_t>(bc) * K * ldx + K * c0 + P * lane;
  if constexpr (P == 2) {
#pragma unroll
    for (int p = 0; p < NT / 2; ++p) {
      const double2 v = __ldg(reinterpret_cast<const double2*>(src + kPiece * p));
      xb[2 * p] = v.x;
      xb[2 * p + 1] = v.y;
    }
  } else {
    xb[0] = __ldg(src);
  }
}

// fp64: warp = run of K blocks [b_begin, b_end) (may span several block-rows); per block-row,
// Y[8 rows, 8·NT cols] in registers (2·NT doubles per lane), written when the run leaves the row.
// Per block: 256 B of A (one 8-byte load per lane, coalesced), 4 rows × 8·NT columns of X, NT
// DMMAs. Software pipeline: the A fragments and block columns of the next U blocks are loaded
// while the current U blocks' X fragments are in flight, so the chain bcol → X → mma costs one
// L2 latency per U blocks instead of two (DRAM for bcol, then L2 for X).
// ST = false: X column-major (load_x_direct); ST = true: X staged in fragment order
// (load_x_staged).
template <int NT, int U, bool ST>
__global__ void __launch_bounds__(kThreads)
    bcsr_dmma_kernel(BcsrArgs A, const double* __restrict__ x, std::int64_t ldx,
                     double* __restrict__ y, std::int64_t ldy, int ncols) {
  using Tile = MmaTile<double>;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int chunk = blockIdx.x % A.nchunks;
  const int c0 = chunk * 8 * NT;
  constexpr std::int64_t kNone = INT64_MAX;
  // Persistent warps: the grid holds what fits on the GPU at once; warp w takes runs w, w + W, ...
  const std::int64_t nw = static_cast<std::int64_t>(gridDim.x / A.nchunks) * kWarpsPerCta;
  for (std::int64_t w =
           static_cast<std::int64_t>(blockIdx.x / A.nchunks) * kWarpsPerCta + threadIdx.x / 32;
       w < A.nwarps; w += nw) {  // warp-uniform
    const std::int64_t b_begin = w * A.per_warp;
    const std::int64_t b_end = min(b_begin + A.per_warp, A.nblocks);
    // Current block-row r holds blocks [.., rb1); rb2 = end of row r + 1 (prefetched).
    std::int64_t r = A.warp_row[w];
    bool shared = A.bp[r] < b_begin;  // row started in an earlier run
    std::int64_t rb1 = A.bp[r + 1];
    std::int64_t rb2 = r + 2 <= A.nbrows ? A.bp[r + 2] : kNone;
    shared = shared || rb1 > b_end;
    double acc[NT][Tile::kAcc];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = 0.0;

    auto flush = [&]() {
      const std::int64_t row = r * 8 + g;
      if (row < A.nrows) {
        const std::int64_t yr = A.perm ? A.perm[row] : row;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const int col = c0 + 8 * j + 2 * t + q;
            if (col >= ncols) continue;
            double* d = y + yr + static_cast<std::int64_t>(col) * ldy;
            if (shared) atomicAdd(d, acc[j][q]);
            else *d = acc[j][q];
          }
        }
      }
    };

    double an[U];
    std::int32_t cn[U];
#pragma unroll
    for (int u = 0; u < U; ++u) load_block<double>(A, b_begin, u, b_end, lane, an[u], cn[u]);
    for (std::int64_t b = b_begin; b < b_end; b += U) {
      double a[U];
      std::int32_t bc[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        a[u] = an[u];
        bc[u] = cn[u];
      }
      // X fragments of the current U blocks.
      double xb[U][NT];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if constexpr (ST) load_x_staged<NT>(xb[u], x, ldx, bc[u], c0, lane);
        else load_x_direct<NT>(xb[u], A, x, ldx, ncols, bc[u], c0, g, t);
      }
      // Next U blocks' A fragments and block columns (independent of the loads above).
#pragma unroll
      for (int u = 0; u < U; ++u) load_block<double>(A, b + U, u, b_end, lane, an[u], cn[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::int64_t bb = b + u;
        if (bb >= b_end) break;  // warp-uniform
        if (bb >= rb1) {         // the run enters the next non-empty block-row
          flush();
#pragma unroll
          for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = 0.0;
          ++r;
          rb1 = rb2;
          while (rb1 <= bb) {  // empty block-rows (their Y rows were zeroed by the pre-pass)
            ++r;
            rb1 = A.bp[r + 1];
          }
          rb2 = r + 2 <= A.nbrows ? A.bp[r + 2] : kNone;
          shared = rb1 > b_end;
        }
#pragma unroll
        for (int j = 0; j < NT; ++j)
          if (c0 + 8 * j < ncols) Tile::mma(acc[j], a[u], xb[u][j]);
      }
    }
    flush();
  }  // runs
}

// 16-bit: blocks 16×16 in fragment order (512 B per block, one 16-byte load per lane); warp = run
// of blocks [b_begin, b_end), one block row at a time, C tiles (16 × 8, fp32) in registers.
// X pieces (B fragments): rows 16·col + 2t (+1) and +8 (+9) of column c0 + 8j + g, read as 32-bit
// pairs when the whole block column is inside X and X is 4-byte aligned with even ldx, else
// element by element. (The C-tile stores of the two kernels stay written out: through one
// shared device function the compiler kept the four bounds of `shared` live across the block
// loop instead of one predicate, +3 to +17 registers in the 16-bit kernel.)
template <class TA, class TY, int NT, int U>
__global__ void __launch_bounds__(kThreads)
    bcsr_mma16_kernel(BcsrArgs A, const TA* __restrict__ x, std::int64_t ldx, bool pairs_ok,
                      TY* __restrict__ y, std::int64_t ldy, int ncols) {
  using Tile = MmaTile<TA>;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int chunk = blockIdx.x % A.nchunks;
  const std::int64_t w =
      static_cast<std::int64_t>(blockIdx.x / A.nchunks) * kWarpsPerCta + threadIdx.x / 32;
  if (w >= A.nwarps) return;
  const int c0 = chunk * 8 * NT;
  const std::int64_t b_begin = w * A.per_warp;
  const std::int64_t b_end = min(b_begin + A.per_warp, A.nblocks);
  const unsigned short* __restrict__ xs = reinterpret_cast<const unsigned short*>(x);
  std::int64_t r = A.warp_row[w];
  std::int64_t b = b_begin;
  while (b < b_end) {
    std::int64_t rb0, rb1;
    seek_row(A, b, r, rb0, rb1);
    const std::int64_t e = min(rb1, b_end);
    const bool shared = rb0 < b_begin || rb1 > b_end;
    float acc[NT][Tile::kAcc];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    for (; b < e; b += U) {
      typename Tile::AFrag a[U];
      std::int64_t xr[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        load_block<TA, Tile::K>(A, b, u, e, lane, a[u], xr[u]);  // xr: the block's first X row
      }
      typename Tile::BFrag xb[U][NT];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const bool full = pairs_ok && xr[u] >= 0 && xr[u] + 16 <= A.ncols;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int xc = c0 + 8 * j + g;
          xb[u][j][0] = xb[u][j][1] = 0u;
          if (xr[u] < 0 || xc >= ncols) continue;
          const std::int64_t base = xr[u] + 2 * t + static_cast<std::int64_t>(xc) * ldx;
          if (full) {
            xb[u][j][0] = __ldg(reinterpret_cast<const unsigned*>(xs + base));
            xb[u][j][1] = __ldg(reinterpret_cast<const unsigned*>(xs + base + 8));
          } else {
            const std::int64_t r0 = xr[u] + 2 * t;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const std::int64_t rr = r0 + 8 * h;
              const unsigned lo = rr < A.ncols ? __ldg(xs + base + 8 * h) : 0u;
              const unsigned hi = rr + 1 < A.ncols ? __ldg(xs + base + 8 * h + 1) : 0u;
              xb[u][j][h] = lo | (hi << 16);
            }
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int j = 0; j < NT; ++j)
          if (c0 + 8 * j < ncols) Tile::mma(acc[j], a[u], xb[u][j]);
      }
    }
    b = e;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t row = r * 16 + g + 8 * h;
      if (row >= A.nrows) continue;
      const std::int64_t yr = A.perm ? A.perm[row] : row;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int col = c0 + 8 * j + 2 * t + q;
          if (col >= ncols) continue;
          TY* d = y + yr + static_cast<std::int64_t>(col) * ldy;
          const TY v = static_cast<TY>(acc[j][2 * h + q]);
          if (shared) atomicAdd(d, v);
          else *d = v;
        }
      }
    }
  }
}

// xs = X[:, 0:kc] in the DMMA fragment order (see load_x_staged): element o of block
// column c = o / 4W: with P = 2 (W ≥ 16) or 1 (W = 8), group q = rem / 32P, lane L = (rem % 32P)
// / P = 4g + t, h = rem % P: xs[o] = X[4c + t][8(Pq + h) + g], zero outside X. One thread per
// element of xs: writes coalesced, each warp reads 8 columns × 4 rows (8 full sectors).
// gather (symmetric reordering; nullptr = identity): stored row r reads X row gather[r].
__global__ void stage_fragments_kernel(const double* __restrict__ x, std::int64_t ldx,
                                       std::int64_t rows, int kc, double* __restrict__ xs,
                                       std::int64_t total, int width,
                                       const std::int32_t* __restrict__ gather) {
  const int P = width >= 16 ? 2 : 1;
  const std::int64_t region = 4 * static_cast<std::int64_t>(width);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;  // grid-stride
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += step) {
    const std::int64_t c = o / region;
    const int rem = static_cast<int>(o - c * region);
    const int q = rem / (32 * P), within = rem % (32 * P);
    const int l = within / P, h = within % P;
    const std::int64_t r = 4 * c + (l & 3);
    const int col = 8 * (P * q + h) + (l >> 2);
    xs[o] = (r < rows && col < kc)
                ? x[(gather ? gather[r] : r) + static_cast<std::int64_t>(col) * ldx]
                : 0.0;
  }
}

// Same layout for W a multiple of 32, through a 32-row × 32-column shared tile: reads are whole
// 256-byte pieces of X columns (the direct kernel reads 32-byte sectors of 8 columns per warp),
// writes are the 8 block columns' 1 KB pieces (cols c0..c0+31 of block column c are the 128
// doubles at c·4W + 4·c0, pairs q = c0/16 and c0/16 + 1).
__global__ void stage_fragments_tiled_kernel(const double* __restrict__ x, std::int64_t ldx,
                                             std::int64_t rows, int kc, double* __restrict__ xs,
                                             int width, const std::int32_t* __restrict__ gather) {
  __shared__ double tile[32][33];  // [column][row]
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * 32;
  const int c0 = blockIdx.y * 32;
  // gathered rows: each lane reads its own X row (32 scattered 8-byte reads per column)
  const std::int64_t r = r0 + threadIdx.x;
  const std::int64_t src = r < rows ? (gather ? gather[r] : r) : 0;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const int c = c0 + k;
    tile[k][threadIdx.x] = (r < rows && c < kc) ? x[src + static_cast<std::int64_t>(c) * ldx] : 0.0;
  }
  __syncthreads();
  const int nthreads = blockDim.x * blockDim.y;
  for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < 1024; i += nthreads) {
    const int bl = i >> 7, within = i & 127;  // block column in the tile, offset in its piece
    const int q = within >> 6, l = (within & 63) >> 1, h = within & 1;
    const int col = 16 * q + 8 * h + (l >> 2), row = 4 * bl + (l & 3);
    xs[(r0 / 4 + bl) * 4 * static_cast<std::int64_t>(width) + 4 * c0 + within] = tile[col][row];
  }
}

void stage_fragments_device(const double* x, std::int64_t ldx, std::int64_t rows, int kc,
                            double* xs, std::int64_t rows_pad, int width,
                            const std::int32_t* gather, cudaStream_t st) {
  const std::int64_t total = rows_pad * width;
  if (total == 0) return;
  if (width % 32 == 0 && rows_pad % 32 == 0) {
    // x = 32-row tiles (2^26 for 2^31 rows), y = 32-column tiles (width ≤ 256: ≤ 8)
    TCSOLVE_REQUIRE(rows_pad / 32 <= INT_MAX && width / 32 <= 65535, "staging grid too large");
    const dim3 grid(static_cast<unsigned>(rows_pad / 32), static_cast<unsigned>(width / 32));
    stage_fragments_tiled_kernel<<<grid, dim3(32, 8), 0, st>>>(x, ldx, rows, kc, xs, width,
                                                                         gather);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    return;
  }
  const std::int64_t blocks = std::min<std::int64_t>((total + 255) / 256, std::int64_t(1) << 20);
  stage_fragments_kernel<<<static_cast<unsigned>(blocks), 256, 0, st>>>(x, ldx, rows, kc, xs, total,
                                                                       width, gather);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

int sm_count() {
  int dev = 0, n = 0;
  TCSOLVE_CUDA_CHECK(cudaGetDevice(&dev));
  TCSOLVE_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

// Columns per chunk: 8·NT with NT the smallest of {1, 2, 4, 8} covering N (8 for N > 32).
int pick_nt(int ncols) { return ncols > 32 ? 8 : ncols > 16 ? 4 : ncols > 8 ? 2 : 1; }

// Grid of the persistent DMMA kernel: per column chunk, the CTAs that are resident at once
// (occupancy × SMs, shared by the chunks), at most one per 4 runs.
template <int NT, int U, bool ST>
void launch_dmma(BcsrArgs args, const double* x, std::int64_t ldx, double* y, std::int64_t ldy,
                 int ncols, cudaStream_t st) {
  static const int resident = [] {
    int per_sm = 0;
    TCSOLVE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, bcsr_dmma_kernel<NT, U, ST>, kThreads, 0));
    return std::max(1, per_sm) * sm_count();
  }();
  args.nchunks = (ncols + 8 * NT - 1) / (8 * NT);
  const std::int64_t need = (args.nwarps + kWarpsPerCta - 1) / kWarpsPerCta;
  const std::int64_t ctas =
      std::max<std::int64_t>(1, std::min<std::int64_t>(need, resident / args.nchunks));
  const unsigned grid = static_cast<unsigned>(ctas * args.nchunks);
  bcsr_dmma_kernel<NT, U, ST><<<grid, kThreads, 0, st>>>(args, x, ldx, y, ldy, ncols);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

template <bool ST>
void dispatch_dmma(const BcsrArgs& args, const double* x, std::int64_t ldx, double* y,
                   std::int64_t ldy, int ncols, int max_nt, cudaStream_t st) {
  // NT divides pick_nt(ncols), so a staged width (a multiple of 8·pick_nt) splits into chunks.
  switch (std::min(pick_nt(ncols), max_nt)) {
    case 1: launch_dmma<1, 8, ST>(args, x, ldx, y, ldy, ncols, st); break;
    case 2: launch_dmma<2, 4, ST>(args, x, ldx, y, ldy, ncols, st); break;
    case 4: launch_dmma<4, 4, ST>(args, x, ldx, y, ldy, ncols, st); break;
    default: launch_dmma<8, 2, ST>(args, x, ldx, y, ldy, ncols, st); break;
  }
}

template <class TA, class TY, int NT, int U>
void launch_mma16(BcsrArgs args, const void* x, std::int64_t ldx, TY* y, std::int64_t ldy,
                  int ncols, cudaStream_t st) {
  args.nchunks = (ncols + 8 * NT - 1) / (8 * NT);
  const std::int64_t ctas = (args.nwarps + kWarpsPerCta - 1) / kWarpsPerCta;
  // one warp per run (about 128 runs per SM, prepare_split): far below the grid x limit
  TCSOLVE_REQUIRE(ctas * args.nchunks <= INT_MAX, "BCSR MMA16: grid too large");
  const unsigned grid = static_cast<unsigned>(ctas * args.nchunks);
  const bool pairs_ok = (ldx % 2 == 0) && (reinterpret_cast<std::uintptr_t>(x) % 4 == 0);
  bcsr_mma16_kernel<TA, TY, NT, U><<<grid, kThreads, 0, st>>>(
      args, static_cast<const TA*>(x), ldx, pairs_ok, y, ldy, ncols);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

template <class TA, class TY>
void dispatch_mma16(BcsrArgs args, const void* x, std::int64_t ldx, TY* y, std::int64_t ldy,
                    int ncols, cudaStream_t st) {
  switch (pick_nt(ncols)) {
    case 1: launch_mma16<TA, TY, 1, 4>(args, x, ldx, y, ldy, ncols, st); break;
    case 2: launch_mma16<TA, TY, 2, 4>(args, x, ldx, y, ldy, ncols, st); break;
    case 4: launch_mma16<TA, TY, 4, 2>(args, x, ldx, y, ldy, ncols, st); break;
    default: launch_mma16<TA, TY, 8, 2>(args, x, ldx, y, ldy, ncols, st); break;
  }
}

std::uint16_t to_bits(double v, Precision p) {
  std::uint16_t bits;
  if (p == Precision::fp16) {
    __half h = __double2half(v);
    std::memcpy(&bits, &h, 2);
  } else {
    __nv_bfloat16 h = __double2bfloat16(v);
    std::memcpy(&bits, &h, 2);
  }
  return bits;
}

}  // namespace

BcsrSpmmDevice::BcsrSpmmDevice(const Bcsr<double>& b, Precision precision, int stage_cols)
    : rows_(b.nrows), cols_(b.ncols), nblocks_(b.nblocks()), nbrows_(b.nblock_rows()), h_(b.h),
      w_(b.w), precision_(precision) {
  TCSOLVE_REQUIRE(stage_cols >= 0, "stage_cols must be >= 0");
  TCSOLVE_REQUIRE(b.col_perm.empty() || static_cast<std::int64_t>(b.col_perm.size()) == b.ncols,
                  "BCSR col_perm size must be ncols");
  bool col_identity = true;
  for (std::size_t j = 0; j < b.col_perm.size() && col_identity; ++j)
    col_identity = b.col_perm[j] == static_cast<std::int32_t>(j);
  // fp64 with a column permutation: X is always staged (the gather rides on the staging copy).
  if (!col_identity && precision == Precision::fp64) stage_cols = std::max(stage_cols, 8);
  if (precision == Precision::fp64 && stage_cols > 0) {
    // capacity: a power of two up to 64 columns, then multiples of 64 (staged_width fits in it)
    int c = 8;
    while (c < std::min(stage_cols, 64)) c *= 2;
    if (stage_cols > 64) c = std::min(256, (stage_cols + 63) / 64 * 64);
    stage_cols_ = c;
    stage_rows_ = (b.ncols + 31) / 32 * 32;
    stage_ = DeviceArray<double>(static_cast<std::size_t>(stage_rows_) * stage_cols_);
  }
  if (precision == Precision::fp64) {
    TCSOLVE_REQUIRE(b.h == 8 && b.w == 4, "fp64 BCSR SpMM needs 8x4 blocks");
  } else if (precision == Precision::fp16 || precision == Precision::bf16) {
    TCSOLVE_REQUIRE(b.h == 16 && b.w == 16, "fp16/bf16 BCSR SpMM needs 16x16 blocks");
  } else {
    throw InvalidArgument(std::string("BCSR SpMM: unsupported precision ") + to_string(precision));
  }
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(b.values.size()) == nblocks_ * b.h * b.w,
                  "BCSR values size must be nblocks*h*w");
  TCSOLVE_REQUIRE(nbrows_ == (b.nrows + b.h - 1) / b.h, "BCSR block_row_ptr size");
  TCSOLVE_REQUIRE(b.perm.empty() || static_cast<std::int64_t>(b.perm.size()) == b.nrows,
                  "BCSR perm size must be nrows");
  TCSOLVE_REQUIRE(b.nrows < (std::int64_t(1) << 31), "BCSR SpMM: rows must fit 32-bit indices");
  block_row_ptr_ = DeviceArray<std::int64_t>(b.block_row_ptr);
  block_col_ = DeviceArray<std::int32_t>(b.block_col);
  if (precision == Precision::fp64) {
    values_ = DeviceArray<unsigned char>(b.values.size() * 8);
    copy_bytes(values_.get(), Space::device, b.values.data(), Space::host, values_.bytes());
  } else {
    // Fragment order: block k, lane L = 4g + t, 8 halves {A[g][2t..], A[g+8][2t..],
    // A[g][2t+8..], A[g+8][2t+8..]}.
    std::vector<std::uint16_t> frag(b.values.size());
    for (std::int64_t k = 0; k < nblocks_; ++k) {
      const double* blk = b.values.data() + k * 256;
      std::uint16_t* out = frag.data() + k * 256;
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const int rows[4] = {g, g + 8, g, g + 8};
        const int cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
        for (int reg = 0; reg < 4; ++reg)
          for (int e = 0; e < 2; ++e)
            out[lane * 8 + reg * 2 + e] = to_bits(blk[rows[reg] * 16 + cols[reg] + e], precision);
      }
    }
    values_ = DeviceArray<unsigned char>(frag.size() * 2);
    copy_bytes(values_.get(), Space::device, frag.data(), Space::host, values_.bytes());
  }
  bool identity = true;
  for (std::size_t i = 0; i < b.perm.size() && identity; ++i)
    identity = b.perm[i] == static_cast<std::int32_t>(i);
  if (!identity) perm_ = DeviceArray<std::int32_t>(b.perm);
  if (!col_identity) gather_ = DeviceArray<std::int32_t>(b.col_perm);
  prepare_split(b);
}

void BcsrSpmmDevice::prepare_split(const Bcsr<double>& b) {
  // K blocks per run: about 128 runs per SM (the persistent fp64 kernel spreads them over its
  // resident warps, ≤ 1 run of imbalance), at least 8. Rows cut by a run boundary take atomics.
  const std::int64_t target = static_cast<std::int64_t>(sm_count()) * 128;
  per_warp_ = std::max<std::int64_t>(8, (nblocks_ + target - 1) / std::max<std::int64_t>(1, target));
  if (run_cap_ > 0) per_warp_ = std::max<std::int64_t>(8, std::min(per_warp_, run_cap_));
  nwarps_ = (nblocks_ + per_warp_ - 1) / per_warp_;
  std::vector<std::int32_t> wr(static_cast<std::size_t>(nwarps_));
  std::int64_t r = 0;
  for (std::int64_t w = 0; w < nwarps_; ++w) {
    const std::int64_t first = w * per_warp_;
    while (b.block_row_ptr[r + 1] <= first) ++r;
    wr[w] = static_cast<std::int32_t>(r);
  }
  warp_row_ = DeviceArray<std::int32_t>(wr);
  // Y rows written with atomics (block-row cut by a run boundary) or by nobody (empty block-row).
  std::vector<std::int32_t> zr;
  for (std::int64_t br = 0; br < nbrows_; ++br) {
    const std::int64_t p0 = b.block_row_ptr[br], p1 = b.block_row_ptr[br + 1];
    const bool empty = p0 == p1;
    const bool cut = !empty && (p0 / per_warp_ != (p1 - 1) / per_warp_);
    if (!empty && !cut) continue;
    for (int i = 0; i < h_; ++i) {
      const std::int64_t row = br * h_ + i;
      if (row >= rows_) break;
      zr.push_back(b.perm.empty() ? static_cast<std::int32_t>(row) : b.perm[row]);
    }
  }
  zero_rows_ = DeviceArray<std::int32_t>(zr);
}

std::size_t BcsrSpmmDevice::device_bytes() const {
  return block_row_ptr_.bytes() + block_col_.bytes() + values_.bytes() + perm_.bytes() +
         warp_row_.bytes() + zero_rows_.bytes() + stage_.bytes() + gather_.bytes();
}

namespace {
BcsrArgs make_args(std::int64_t rows, std::int64_t cols, std::int64_t nblocks,
                   std::int64_t per_warp, std::int64_t nwarps, const std::int64_t* bp,
                   const std::int32_t* bcol, const void* vals, const std::int32_t* perm,
                   const std::int32_t* warp_row, std::int64_t nbrows) {
  // (in BcsrArgs' field order; one column chunk until a dispatch splits the columns)
  return BcsrArgs{rows, cols, nblocks, per_warp, nwarps, nbrows, bp, bcol, vals, perm, warp_row, 1};
}
}  // namespace

void BcsrSpmmDevice::set_stage_min_cols(int n) {
  TCSOLVE_REQUIRE(n >= 1, "stage_min_cols must be >= 1");
  stage_min_cols_ = n;
}

void BcsrSpmmDevice::set_max_run_blocks(const Bcsr<double>& b, std::int64_t cap) {
  TCSOLVE_REQUIRE(cap >= 0, "run cap must be >= 0");
  TCSOLVE_REQUIRE(b.nblocks() == nblocks_ && b.nblock_rows() == nbrows_,
                  "set_max_run_blocks needs the blocks the operator was built from");
  if (cap == run_cap_) return;
  run_cap_ = cap;
  warp_row_ = DeviceArray<std::int32_t>();  // free before the new lists are uploaded
  zero_rows_ = DeviceArray<std::int32_t>();
  prepare_split(b);
}

void BcsrSpmmDevice::set_max_tile_cols(int cols) {
  TCSOLVE_REQUIRE(cols == 16 || cols == 32 || cols == 64,
                  "DMMA column tile must be 16, 32 or 64 columns");
  max_nt_ = cols / 8;
}

void BcsrSpmmDevice::drop_stage() {
  TCSOLVE_REQUIRE(!gathers(), "BCSR SpMM: a column-permuted operator needs its staging buffer");
  stage_ = DeviceArray<double>();
  stage_cols_ = 0;
}

void BcsrSpmmDevice::apply(const double* x, std::int64_t ldx, double* y, std::int64_t ldy,
                           int ncols_x, void* stream) const {
  TCSOLVE_REQUIRE(precision_ == Precision::fp64, "BcsrSpmmDevice::apply is the fp64 path");
  TCSOLVE_REQUIRE(ncols_x >= 1, "BCSR SpMM needs at least one column");
  TCSOLVE_REQUIRE(ldx >= cols_ && ldy >= rows_, "BCSR SpMM leading dimensions too small");
  if (rows_ == 0) return;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (zero_rows_.size())
    zero_rows_device(zero_rows_.get(), static_cast<std::int64_t>(zero_rows_.size()), y, ldy,
                     ncols_x, stream);
  if (nblocks_ == 0) return;
  BcsrArgs args = make_args(rows_, cols_, nblocks_, per_warp_, nwarps_, block_row_ptr_.get(),
                            block_col_.get(), values_.get(), perm_.get(), warp_row_.get(), nbrows_);
  if (stage_cols_ == 0 || (ncols_x < stage_min_cols_ && !gathers())) {
    dispatch_dmma<false>(args, x, ldx, y, ldy, ncols_x, max_nt_, st);
    return;
  }
  // Fragment-order staging, stage_cols_ columns at a time (see load_x_staged).
  for (int c0 = 0; c0 < ncols_x; c0 += stage_cols_) {
    const int kc = std::min(stage_cols_, ncols_x - c0);
    const int width = staged_width(kc);
    stage_fragments_device(x + static_cast<std::int64_t>(c0) * ldx, ldx, cols_, kc, stage_.get(),
                           stage_rows_, width, gather_.get(), st);
    dispatch_dmma<true>(args, stage_.get(), width, y + static_cast<std::int64_t>(c0) * ldy, ldy, kc,
                        max_nt_,
                        st);
  }
}

int BcsrSpmmDevice::staged_width(int kc) {
  const int chunk = 8 * pick_nt(kc);
  return (kc + chunk - 1) / chunk * chunk;
}

namespace {
template <class TY>
void apply_lowp_impl(Precision p, const BcsrArgs& args, std::int64_t rows, std::int64_t cols,
                     const std::int32_t* zr, std::int64_t nz, const void* x, std::int64_t ldx,
                     TY* y, std::int64_t ldy, int ncols_x, void* stream) {
  TCSOLVE_REQUIRE(p == Precision::fp16 || p == Precision::bf16,
                  "BcsrSpmmDevice::apply_lowp is the fp16/bf16 path");
  TCSOLVE_REQUIRE(ncols_x >= 1, "BCSR SpMM needs at least one column");
  TCSOLVE_REQUIRE(ldx >= cols && ldy >= rows, "BCSR SpMM leading dimensions too small");
  if (rows == 0) return;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (nz) zero_rows_device(zr, nz, y, ldy, ncols_x, stream);
  if (args.nblocks == 0) return;
  if (p == Precision::fp16) dispatch_mma16<__half, TY>(args, x, ldx, y, ldy, ncols_x, st);
  else dispatch_mma16<__nv_bfloat16, TY>(args, x, ldx, y, ldy, ncols_x, st);
}
}  // namespace

void BcsrSpmmDevice::apply_lowp(const void* x, std::int64_t ldx, float* y, std::int64_t ldy,
                                int ncols_x, void* stream) const {
  apply_lowp_impl<float>(precision_,
                         make_args(rows_, cols_, nblocks_, per_warp_, nwarps_, block_row_ptr_.get(),
                                   block_col_.get(), values_.get(), perm_.get(), warp_row_.get(), nbrows_),
                         rows_, cols_, zero_rows_.get(),
                         static_cast<std::int64_t>(zero_rows_.size()), x, ldx, y, ldy, ncols_x,
                         stream);
}

void BcsrSpmmDevice::apply_lowp(const void* x, std::int64_t ldx, double* y, std::int64_t ldy,
                                int ncols_x, void* stream) const {
  apply_lowp_impl<double>(precision_,
                          make_args(rows_, cols_, nblocks_, per_warp_, nwarps_,
                                    block_row_ptr_.get(), block_col_.get(), values_.get(),
                                    perm_.get(), warp_row_.get(), nbrows_),
                          rows_, cols_, zero_rows_.get(),
                          static_cast<std::int64_t>(zero_rows_.size()), x, ldx, y, ldy, ncols_x,
                          stream);
}

}  // namespace tcsolve
