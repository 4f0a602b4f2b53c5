// CUDA-core CSR × multivector (see csr_spmm_cuda.hpp). CPU twin: csr_spmm_reference (core/csr).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/cuda_library_check.cuh"
#include "core/error.hpp"
#include "spmm/csr_row_loop.cuh"
#include "spmm/csr_spmm_cuda.hpp"

namespace tcsolve {

namespace {

constexpr int kRowThreads = 128;
constexpr int kSegThreads = 128;
constexpr int kSegPerLane = 16;   // segment length S = kSegPerLane · group
// Staged X (rows × stage width × 8 bytes) beyond this, and rows cut into 4 or more segments on
// average: the segments run interleaved (interleave_segments). About half of an H100/H200's L2 (50 MB).
// Aᵀ·Y of the 1M × 30k count matrix (N = 16): L2 hit rate 24 % in row order.
constexpr double kInterleaveBytes = 32.0 * 1024 * 1024;
constexpr int kInterleaveBuckets = 4096;
constexpr int kStageMinCols = 4;  // staged (row-major X) segment kernel from this N on

// Launch-size rules (grid x ≤ 2^31 − 1, grid y/z ≤ 65535; docs gpu.md): the long dimension
// (rows, segments, elements) always runs along x, with 64-bit index arithmetic in the kernels.
// grid_x checks a one-thread-per-item grid against the x limit (InvalidArgument beyond it);
// stride_grid caps an element-wise grid at kStrideBlocks, its kernel loops grid-stride.
constexpr std::int64_t kMaxGridX = 2147483647;
constexpr std::int64_t kStrideBlocks = std::int64_t(1) << 20;
unsigned grid_x(std::int64_t items, int threads) {
  const std::int64_t blocks = (items + threads - 1) / threads;
  TCSOLVE_REQUIRE(blocks <= kMaxGridX, "CSR SpMM: launch needs " + std::to_string(blocks) +
                                           " blocks, more than the grid x limit 2^31-1");
  return static_cast<unsigned>(std::max<std::int64_t>(blocks, 1));
}
unsigned stride_grid(std::int64_t items, int threads) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(kStrideBlocks, (items + threads - 1) / threads)));
}

// Y(row, c0 + j) = acc[j] for the nc live columns of a pass.
template <int NT>
__device__ __forceinline__ void store_row(double* y, std::int64_t ldy, std::int64_t row,
                                          int c0, int nc, const double (&acc)[NT]) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
    if (j < nc) y[row + (c0 + j) * ldy] = acc[j];
}

// Row-split. Thread = row; per pass NT columns [c0, c0+NT) in registers; A's row is re-read from
// L1 for each further pass (csr_row::passes). Shapes: x n×N (ldx), y m×N (ldy).
// TILED: the CTA's slice of A staged in shared memory first: the 128 rows' non-zeros
// [rp[r0], rp[r0 + 128]) are copied with coalesced loads (values widened to double), then each
// thread walks its row there for every pass of NT columns — A leaves DRAM/L2 once, in full lines,
// instead of one scattered 8-byte word per lane per non-zero and pass. A CTA whose slice exceeds
// kRowTile non-zeros reads A from global memory as the untiled kernel does.
constexpr int kRowTile = 1024;
template <class TA, int NT, bool TILED>
__global__ void __launch_bounds__(kRowThreads)
    csr_row_kernel(std::int64_t m, const std::int64_t* __restrict__ rp,
                   const std::int32_t* __restrict__ ci, const TA* __restrict__ v,
                   const double* __restrict__ x, std::int64_t ldx, double* __restrict__ y,
                   std::int64_t ldy, int ncols) {
  __shared__ double sv[TILED ? kRowTile : 1];
  __shared__ std::int32_t sc[TILED ? kRowTile : 1];
  std::int64_t q0 = 0;
  bool tiled = false;  // CTA-uniform: this CTA's slice of A is in sv, sc
  if constexpr (TILED) {
    const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * kRowThreads;
    const std::int64_t r1 = min(r0 + kRowThreads, m);
    const std::int64_t q1 = rp[r1];
    q0 = rp[r0];
    tiled = q1 - q0 <= kRowTile;
    if (tiled) {
      for (std::int64_t q = q0 + threadIdx.x; q < q1; q += kRowThreads) {
        sv[q - q0] = csr_row::value_as<double>(v[q]);
        sc[q - q0] = ci[q];
      }
    }
    __syncthreads();
  }
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * (TILED ? kRowThreads : blockDim.x) + threadIdx.x;
  if (row >= m) return;
  // A's entries from the tile (tiled) or from global memory
  const auto entry = [&](std::int64_t p, double& a, std::int64_t& c) {
    a = tiled ? sv[p - q0] : csr_row::value_as<double>(v[p]);
    c = tiled ? sc[p - q0] : ci[p];
  };
  const auto finish = [&](int c0, int nc, const double*, const double(&acc)[NT]) {
    store_row(y, ldy, row, c0, nc, acc);
  };
  csr_row::passes<NT, 4, 1>(rp[row], 0, rp[row + 1], 0, NT, ncols, x, ldx, entry, finish);
}

// The G lanes' partial sums of a segment summed by shuffles (xor butterfly inside the group);
// its first lane writes Y(row, c0 + j), with atomicAdd where the row is shared by segments.
template <int NT, int G>
__device__ __forceinline__ void reduce_store_segment(double (&acc)[NT], unsigned mask, int lg,
                                                     bool shared, double* y,
                                                     std::int64_t ldy, std::int64_t row, int c0,
                                                     int nc) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int off = G / 2; off > 0; off /= 2) acc[j] += __shfl_xor_sync(mask, acc[j], off);
  }
  if (lg == 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      if (j >= nc) continue;
      double* dst = y + row + (c0 + j) * ldy;
      if (shared) atomicAdd(dst, acc[j]);
      else *dst = acc[j];
    }
  }
}

// Segment-split. G lanes per segment, lanes stride over the segment's non-zeros, NT columns per
// pass, shuffle reduction inside the group. seg_row < 0 (= ~row) marks a row shared by several
// segments: its Y row was zeroed by zero_rows_kernel and receives atomicAdd.
template <class TA, int NT, int G>
__global__ void __launch_bounds__(kSegThreads)
    csr_segment_kernel(std::int64_t nseg, const std::int32_t* __restrict__ seg_row,
                       const std::int64_t* __restrict__ seg_begin,
                       const std::int64_t* __restrict__ seg_end,
                       const std::int32_t* __restrict__ ci, const TA* __restrict__ v,
                       const double* __restrict__ x, std::int64_t ldx, double* __restrict__ y,
                       std::int64_t ldy, int ncols) {
  const std::int64_t gid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t s = gid / G;
  const int lg = threadIdx.x % G;
  if (s >= nseg) return;  // the whole group leaves together
  const unsigned lane = threadIdx.x % 32;
  const unsigned mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << (lane & ~(G - 1u)));
  const std::int32_t r = seg_row[s];
  const bool shared = r < 0;
  const std::int64_t row = shared ? ~r : r;
  const std::int64_t p0 = seg_begin[s], p1 = seg_end[s];
  // (The passes are written out here rather than through csr_row::passes: inside that helper
  // the compiler hoists p0 + lg out of the pass loop, and the register counts of the 36
  // instances moved by up to ±8 either way; this form compiles to the same PTX as before.)
  for (int c0 = 0; c0 < ncols; c0 += NT) {
    const int nc = min(NT, ncols - c0);
    const double* xc = x + static_cast<std::int64_t>(c0) * ldx;
    double acc[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j] = 0.0;
    csr_row::accumulate<2, G>(acc, p0, lg, p1, csr_row::GlobalEntries<double, TA>{v, ci},
                              csr_row::ColumnMajorX<double>{xc, ldx, nc});
    reduce_store_segment<NT, G>(acc, mask, lg, shared, y, ldy, row, c0, nc);
  }
}

// Segment-split over a row-major staged X (xs: row r at xs + r·width, zero-padded): L lanes per
// segment, lane l owns columns c0 + l + q·L (q < CPL); per non-zero the L lanes read one
// contiguous piece of an X row (val and col are broadcast loads). Long random rows (R-MAT)
// gather whole sectors this way instead of one 8-byte word per column.
template <class TA, int L, int CPL>
__global__ void __launch_bounds__(kSegThreads)
    csr_segment_rm_kernel(std::int64_t nseg, const std::int32_t* __restrict__ seg_row,
                          const std::int64_t* __restrict__ seg_begin,
                          const std::int64_t* __restrict__ seg_end,
                          const std::int32_t* __restrict__ ci, const TA* __restrict__ v,
                          const double* __restrict__ xs, int width, double* __restrict__ y,
                          std::int64_t ldy, int ncols) {
  const std::int64_t gid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t s = gid / L;
  const int l = threadIdx.x % L;
  if (s >= nseg) return;
  const std::int32_t r = seg_row[s];
  const bool shared = r < 0;
  const std::int64_t row = shared ? ~r : r;
  const std::int64_t p0 = seg_begin[s], p1 = seg_end[s];
  for (int c0 = 0; c0 < ncols; c0 += L * CPL) {
    double acc[CPL];
#pragma unroll
    for (int q = 0; q < CPL; ++q) acc[q] = 0.0;
    csr_row::accumulate<4, 1>(acc, p0, 0, p1, csr_row::GlobalEntries<double, TA>{v, ci},
                              csr_row::RowMajorX<double, L>{xs, width, c0, l});
#pragma unroll
    for (int q = 0; q < CPL; ++q) {
      const int col = c0 + l + q * L;
      if (col >= ncols) continue;
      double* dst = y + row + static_cast<std::int64_t>(col) * ldy;
      if (shared) atomicAdd(dst, acc[q]);
      else *dst = acc[q];
    }
  }
}

// xs[r·width + c] = x[r + c·ldx] for r < rows, c < kc; zero elsewhere in [rows_pad × width].
// 32×32 tiles through shared memory: coalesced reads of X columns and writes of xs rows.
// Grid: x = row tiles (up to 2^26 for 2^31 rows), y = column tiles (width / 32 ≤ 8): rows on y
// stopped at 65535 tiles = 2,097,152 rows (the lap3d:130 failure).
__global__ void stage_row_major_kernel(const double* __restrict__ x, std::int64_t ldx,
                                       std::int64_t rows, int kc, double* __restrict__ xs,
                                       std::int64_t rows_pad, int width) {
  __shared__ double tile[32][33];
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * 32;
  const int c0 = blockIdx.y * 32;
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t r = r0 + threadIdx.x;
    const int c = c0 + k;
    tile[k][threadIdx.x] = (r < rows && c < kc) ? x[r + static_cast<std::int64_t>(c) * ldx] : 0.0;
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += blockDim.y) {
    const std::int64_t r = r0 + k;
    const int c = c0 + threadIdx.x;
    if (r < rows_pad && c < width) xs[r * width + c] = tile[threadIdx.x][k];
  }
}

// Grid-stride over the nlist·ncols elements (64-bit), so any list length and N fit one launch.
template <class TY>
__global__ void zero_rows_kernel(const std::int32_t* __restrict__ rows, std::int64_t nlist,
                                 TY* __restrict__ y, std::int64_t ldy, int ncols) {
  const std::int64_t total = nlist * ncols;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const std::int64_t k = i % nlist, j = i / nlist;
    y[rows[k] + j * ldy] = TY(0);
  }
}

// Grid-stride over rows·cols elements: gather (y[i] = x[perm[i]]) or scatter (y[perm[i]] = x[i]).
__global__ void permute_rows_kernel(const double* __restrict__ x, std::int64_t ldx,
                                    double* __restrict__ y, std::int64_t ldy, std::int64_t rows,
                                    std::int64_t cols, const std::int32_t* __restrict__ perm,
                                    bool scatter) {
  const std::int64_t total = rows * cols;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const std::int64_t i = e % rows, j = e / rows, p = perm[i];
    if (scatter) y[p + j * ldy] = x[i + j * ldx];
    else y[i + j * ldy] = x[p + j * ldx];
  }
}

__device__ __forceinline__ void round_to(double v, __half* o) { *o = __double2half(v); }
__device__ __forceinline__ void round_to(double v, __nv_bfloat16* o) { *o = __double2bfloat16(v); }

// Grid-stride over the rows·cols elements (64-bit).
template <class TO>
__global__ void convert_kernel(const double* __restrict__ x, std::int64_t ldx, TO* __restrict__ out,
                               std::int64_t ld_out, std::int64_t rows, int cols,
                               const std::int32_t* __restrict__ gather) {
  const std::int64_t total = rows * cols;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const std::int64_t r = i % rows, c = i / rows;
    round_to(x[(gather ? gather[r] : r) + c * ldx], out + r + c * ld_out);
  }
}

template <class TA, int NT>
void launch_row(const CsrSpmmDevice& self, std::int64_t m, const std::int64_t* rp,
                const std::int32_t* ci, const void* v, const double* x, std::int64_t ldx,
                double* y, std::int64_t ldy, int ncols, cudaStream_t st) {
  const unsigned grid = grid_x(m, kRowThreads);  // one thread per row
  if (self.tiled_rows())
    csr_row_kernel<TA, NT, true><<<grid, kRowThreads, 0, st>>>(m, rp, ci, static_cast<const TA*>(v),
                                                                x, ldx, y, ldy, ncols);
  else
    csr_row_kernel<TA, NT, false><<<grid, kRowThreads, 0, st>>>(m, rp, ci, static_cast<const TA*>(v),
                                                                 x, ldx, y, ldy, ncols);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

template <class TA, int NT, int G>
void launch_seg(std::int64_t nseg, const std::int32_t* sr, const std::int64_t* sb,
                const std::int64_t* se, const std::int32_t* ci, const void* v, const double* x,
                std::int64_t ldx, double* y, std::int64_t ldy, int ncols, cudaStream_t st) {
  const unsigned grid = grid_x(nseg * G, kSegThreads);  // G lanes per segment
  csr_segment_kernel<TA, NT, G><<<grid, kSegThreads, 0, st>>>(
      nseg, sr, sb, se, ci, static_cast<const TA*>(v), x, ldx, y, ldy, ncols);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

template <class TA, int L, int CPL>
void launch_seg_rm_lc(std::int64_t nseg, const std::int32_t* sr, const std::int64_t* sb,
                      const std::int64_t* se, const std::int32_t* ci, const void* v,
                      const double* xs, int width, double* y, std::int64_t ldy, int ncols,
                      cudaStream_t st) {
  const unsigned grid = grid_x(nseg * L, kSegThreads);  // L lanes per segment
  csr_segment_rm_kernel<TA, L, CPL><<<grid, kSegThreads, 0, st>>>(
      nseg, sr, sb, se, ci, static_cast<const TA*>(v), xs, width, y, ldy, ncols);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

template <class TA>
void launch_seg_rm(std::int64_t nseg, const std::int32_t* sr, const std::int64_t* sb,
                   const std::int64_t* se, const std::int32_t* ci, const void* v,
                   const double* xs, int width, double* y, std::int64_t ldy, int ncols,
                   cudaStream_t st) {
  if (width <= 8) launch_seg_rm_lc<TA, 8, 1>(nseg, sr, sb, se, ci, v, xs, width, y, ldy, ncols, st);
  else if (width <= 16) launch_seg_rm_lc<TA, 16, 1>(nseg, sr, sb, se, ci, v, xs, width, y, ldy, ncols, st);
  else if (width <= 32) launch_seg_rm_lc<TA, 32, 1>(nseg, sr, sb, se, ci, v, xs, width, y, ldy, ncols, st);
  else if (width <= 64) launch_seg_rm_lc<TA, 32, 2>(nseg, sr, sb, se, ci, v, xs, width, y, ldy, ncols, st);
  else launch_seg_rm_lc<TA, 32, 4>(nseg, sr, sb, se, ci, v, xs, width, y, ldy, ncols, st);
}

// f(TA{}) for TA the type of A's stored values (nothing for another precision: the constructor
// refused it).
template <class F>
void with_value_type(Precision p, F&& f) {
  switch (p) {
    case Precision::fp64: return f(double{});
    case Precision::fp32: return f(float{});
    case Precision::fp16: return f(__half{});
    case Precision::bf16: return f(__nv_bfloat16{});
    default: return;
  }
}

std::size_t value_size(Precision p) {
  switch (p) {
    case Precision::fp64: return 8;
    case Precision::fp32: return 4;
    case Precision::fp16:
    case Precision::bf16: return 2;
    default: throw InvalidArgument(std::string("CSR SpMM: unsupported precision ") + to_string(p));
  }
}

// Host conversion of the values into the storage precision, as raw bytes.
std::vector<unsigned char> pack_values(const std::vector<double>& vals, Precision p) {
  const std::size_t es = value_size(p);
  std::vector<unsigned char> out(vals.size() * es);
  for (std::size_t i = 0; i < vals.size(); ++i) {
    unsigned char* dst = out.data() + i * es;
    switch (p) {
      case Precision::fp64: std::memcpy(dst, &vals[i], 8); break;
      case Precision::fp32: { float f = static_cast<float>(vals[i]); std::memcpy(dst, &f, 4); break; }
      case Precision::fp16: { __half h = __double2half(vals[i]); std::memcpy(dst, &h, 2); break; }
      case Precision::bf16: { __nv_bfloat16 h = __double2bfloat16(vals[i]); std::memcpy(dst, &h, 2); break; }
      default: break;
    }
  }
  return out;
}

}  // namespace

CsrSpmmDevice::CsrSpmmDevice(const Csr<double>& a, Precision precision, int group,
                             int stage_cols, bool tiled_rows)
    : rows_(a.nrows), cols_(a.ncols), nnz_(a.nnz()), precision_(precision) {
  TCSOLVE_REQUIRE(a.nrows < (std::int64_t(1) << 31), "CSR SpMM: rows must fit 32-bit indices");
  value_size(precision);  // throws for unsupported precisions
  row_ptr_ = DeviceArray<std::int64_t>(a.row_ptr);
  col_ = DeviceArray<std::int32_t>(a.col_idx);
  if (precision == Precision::fp64) {
    // straight from the Csr: no host copy of the 8·nnz value bytes
    values_ = DeviceArray<unsigned char>(a.values.size() * 8);
    copy_bytes(values_.get(), Space::device, a.values.data(), Space::host, values_.bytes());
  } else {
    values_ = DeviceArray<unsigned char>(pack_values(a.values, precision));
  }
  relayout(a.row_ptr, group, stage_cols, tiled_rows);
}

namespace {
// Segments in the order of their relative position in their row ((p − p0)/(p1 − p0), quantized to
// kInterleaveBuckets; a counting sort, stable): the segments in flight at one time then gather
// nearby rows of X wherever columns spread evenly along the rows (Aᵀ of a data matrix: a gene's
// cells in ascending order), instead of every row of an X larger than L2 at once.
void interleave_segments(const std::vector<std::int64_t>& row_ptr, std::vector<std::int32_t>& sr,
                         std::vector<std::int64_t>& sb, std::vector<std::int64_t>& se) {
  const std::size_t nseg = sr.size();
  std::vector<std::int32_t> bucket(nseg);
  std::vector<std::int64_t> start(kInterleaveBuckets + 1, 0);
  for (std::size_t s = 0; s < nseg; ++s) {
    const std::int64_t row = sr[s] < 0 ? ~static_cast<std::int64_t>(sr[s]) : sr[s];
    const std::int64_t p0 = row_ptr[row], len = row_ptr[row + 1] - p0;
    const double f = len > 0 ? static_cast<double>(sb[s] - p0) / static_cast<double>(len) : 0.0;
    bucket[s] = std::min(kInterleaveBuckets - 1, static_cast<int>(f * kInterleaveBuckets));
    ++start[bucket[s] + 1];
  }
  for (int b = 0; b < kInterleaveBuckets; ++b) start[b + 1] += start[b];
  std::vector<std::int32_t> r2(nseg);
  std::vector<std::int64_t> b2(nseg), e2(nseg);
  for (std::size_t s = 0; s < nseg; ++s) {
    const std::int64_t at = start[bucket[s]]++;
    r2[at] = sr[s], b2[at] = sb[s], e2[at] = se[s];
  }
  sr.swap(r2), sb.swap(b2), se.swap(e2);
}
}  // namespace

void CsrSpmmDevice::relayout(const std::vector<std::int64_t>& row_ptr, int group, int stage_cols,
                             bool tiled_rows) {
  TCSOLVE_REQUIRE(stage_cols >= 0, "stage_cols must be >= 0");
  TCSOLVE_REQUIRE(group == 1 || group == 4 || group == 8 || group == 32,
                  "CSR SpMM group must be 1, 4, 8 or 32");
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(row_ptr.size()) == rows_ + 1,
                  "CSR SpMM relayout: row offsets of another matrix");
  group_ = group;
  tiled_rows_ = tiled_rows && group == 1;
  int c = 0;
  if (group > 1 && stage_cols > 0) {
    c = 8;
    while (c < std::min(stage_cols, 64)) c *= 2;
    if (stage_cols > 64) c = std::min(256, (stage_cols + 63) / 64 * 64);
  }
  if (c != stage_cols_) {
    stage_ = DeviceArray<double>();
    stage_ = DeviceArray<double>(static_cast<std::size_t>(cols_) * c);
    stage_cols_ = c;
  }
  interleaved_ = false;
  seg_row_ = DeviceArray<std::int32_t>();
  seg_begin_ = DeviceArray<std::int64_t>();
  seg_end_ = DeviceArray<std::int64_t>();
  zero_rows_ = DeviceArray<std::int32_t>();
  if (group == 1) {
    nseg_ = rows_;
    return;
  }
  // segments of at most S = kSegPerLane·group non-zeros; a row of several is marked ~row
  const std::int64_t S = static_cast<std::int64_t>(kSegPerLane) * group;
  std::vector<std::int32_t> sr, zr;
  std::vector<std::int64_t> sb, se;
  sr.reserve(static_cast<std::size_t>(rows_));
  for (std::int64_t i = 0; i < rows_; ++i) {
    const std::int64_t p0 = row_ptr[i], p1 = row_ptr[i + 1];
    const bool split = p1 - p0 > S;
    if (split) zr.push_back(static_cast<std::int32_t>(i));
    std::int64_t p = p0;
    do {
      const std::int64_t e = std::min(p1, p + S);
      sr.push_back(split ? ~static_cast<std::int32_t>(i) : static_cast<std::int32_t>(i));
      sb.push_back(p);
      se.push_back(e);
      p = e;
    } while (p < p1);
  }
  nseg_ = static_cast<std::int64_t>(sr.size());
  // (rows cut into 4 segments or more on average: a banded matrix whose rows are cut in two keeps
  // its order)
  const std::int64_t cut = static_cast<std::int64_t>(zr.size()), cut_segments = nseg_ - (rows_ - cut);
  interleaved_ = stage_cols_ > 0 && cut > 0 && cut_segments >= 4 * cut &&
                 static_cast<double>(cols_) * stage_cols_ * 8.0 > kInterleaveBytes;
  if (interleaved_) interleave_segments(row_ptr, sr, sb, se);
  seg_row_ = DeviceArray<std::int32_t>(sr);
  seg_begin_ = DeviceArray<std::int64_t>(sb);
  seg_end_ = DeviceArray<std::int64_t>(se);
  zero_rows_ = DeviceArray<std::int32_t>(zr);
}

namespace {
// out[i] = static_cast<To>(in[i]), i < n (row offsets between 64 and 32 bits; the caller checked
// that nnz fits).
template <class From, class To>
__global__ void narrow_offsets_kernel(const From* __restrict__ in, To* __restrict__ out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<To>(in[i]);
}
}  // namespace

std::unique_ptr<CsrSpmmDevice> CsrSpmmDevice::transposed(const std::int64_t* rp, const std::int32_t* ci,
                                                         const double* v, std::int64_t m, std::int64_t n,
                                                         std::int64_t nnz, void* stream,
                                                         std::vector<std::int64_t>& row_ptr_out) {
  constexpr std::int64_t kMax = 2147483647;
  TCSOLVE_REQUIRE(m < kMax && n < kMax && nnz < kMax,
                  "CSR SpMM: the device transpose needs rows, columns and entries below 2^31");
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  std::unique_ptr<CsrSpmmDevice> t(new CsrSpmmDevice());
  t->rows_ = n;
  t->cols_ = m;
  t->nnz_ = nnz;
  t->precision_ = Precision::fp64;
  t->col_ = DeviceArray<std::int32_t>(static_cast<std::size_t>(nnz));
  t->values_ = DeviceArray<unsigned char>(static_cast<std::size_t>(nnz) * 8);
  DeviceArray<int> rp32(static_cast<std::size_t>(m + 1)), cp32(static_cast<std::size_t>(n + 1));
  narrow_offsets_kernel<<<stride_grid(m + 1, 256), 256, 0, st>>>(rp, rp32.get(), m + 1);
  TCSOLVE_CUDA_CHECK_LAUNCH();
  cusparseHandle_t h = nullptr;
  TCSOLVE_CUSPARSE_CHECK(cusparseCreate(&h));
  try {
    TCSOLVE_CUSPARSE_CHECK(cusparseSetStream(h, st));
    const int mi = static_cast<int>(m), ni = static_cast<int>(n), z = static_cast<int>(nnz);
    std::size_t bytes = 0;
    TCSOLVE_CUSPARSE_CHECK(cusparseCsr2cscEx2_bufferSize(
        h, mi, ni, z, v, rp32.get(), ci, t->values_.get(), cp32.get(), t->col_.get(), CUDA_R_64F,
        CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, &bytes));
    DeviceArray<unsigned char> buffer(std::max<std::size_t>(bytes, 1));
    TCSOLVE_CUSPARSE_CHECK(cusparseCsr2cscEx2(
        h, mi, ni, z, v, rp32.get(), ci, t->values_.get(), cp32.get(), t->col_.get(), CUDA_R_64F,
        CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, buffer.get()));
    t->row_ptr_ = DeviceArray<std::int64_t>(static_cast<std::size_t>(n + 1));
    narrow_offsets_kernel<<<stride_grid(n + 1, 256), 256, 0, st>>>(cp32.get(), t->row_ptr_.get(), n + 1);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    row_ptr_out.resize(static_cast<std::size_t>(n + 1));
    TCSOLVE_CUDA_CHECK(cudaMemcpyAsync(row_ptr_out.data(), t->row_ptr_.get(), (n + 1) * sizeof(std::int64_t),
                                       cudaMemcpyDeviceToHost, st));
    TCSOLVE_CUDA_CHECK(cudaStreamSynchronize(st));  // before the buffers above are freed
  } catch (...) {
    cusparseDestroy(h);
    throw;
  }
  cusparseDestroy(h);
  t->relayout(row_ptr_out, 1, 0, false);
  return t;
}

std::size_t CsrSpmmDevice::device_bytes() const {
  return row_ptr_.bytes() + col_.bytes() + values_.bytes() + seg_row_.bytes() +
         seg_begin_.bytes() + seg_end_.bytes() + zero_rows_.bytes() + stage_.bytes();
}

namespace {
template <class TA, int NT>
void dispatch_group(const CsrSpmmDevice& self, int group, std::int64_t m, const std::int64_t* rp,
                    std::int64_t nseg, const std::int32_t* sr, const std::int64_t* sb,
                    const std::int64_t* se, const std::int32_t* ci, const void* v,
                    const double* x, std::int64_t ldx, double* y, std::int64_t ldy, int ncols,
                    cudaStream_t st) {
  switch (group) {
    case 1: launch_row<TA, NT>(self, m, rp, ci, v, x, ldx, y, ldy, ncols, st); break;
    case 4: launch_seg<TA, NT, 4>(nseg, sr, sb, se, ci, v, x, ldx, y, ldy, ncols, st); break;
    case 8: launch_seg<TA, NT, 8>(nseg, sr, sb, se, ci, v, x, ldx, y, ldy, ncols, st); break;
    default: launch_seg<TA, NT, 32>(nseg, sr, sb, se, ci, v, x, ldx, y, ldy, ncols, st); break;
  }
}

template <class TA>
void dispatch_nt(const CsrSpmmDevice& self, int group, std::int64_t m, const std::int64_t* rp,
                 std::int64_t nseg, const std::int32_t* sr, const std::int64_t* sb,
                 const std::int64_t* se, const std::int32_t* ci, const void* v, const double* x,
                 std::int64_t ldx, double* y, std::int64_t ldy, int ncols, cudaStream_t st) {
  if (ncols >= 8)
    dispatch_group<TA, 8>(self, group, m, rp, nseg, sr, sb, se, ci, v, x, ldx, y, ldy, ncols, st);
  else if (ncols >= 4)
    dispatch_group<TA, 4>(self, group, m, rp, nseg, sr, sb, se, ci, v, x, ldx, y, ldy, ncols, st);
  else if (ncols >= 2)
    dispatch_group<TA, 2>(self, group, m, rp, nseg, sr, sb, se, ci, v, x, ldx, y, ldy, ncols, st);
  else
    dispatch_group<TA, 1>(self, group, m, rp, nseg, sr, sb, se, ci, v, x, ldx, y, ldy, ncols, st);
}
}  // namespace

void CsrSpmmDevice::apply(const double* x, std::int64_t ldx, double* y, std::int64_t ldy,
                          int ncols_x, void* stream) const {
  TCSOLVE_REQUIRE(ncols_x >= 1, "CSR SpMM needs at least one column");
  TCSOLVE_REQUIRE(ldx >= cols_ && ldy >= rows_, "CSR SpMM leading dimensions too small");
  if (rows_ == 0) return;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (zero_rows_.size())
    zero_rows_device(zero_rows_.get(), static_cast<std::int64_t>(zero_rows_.size()), y, ldy,
                     ncols_x, stream);
  const auto* rp = row_ptr_.get();
  const auto* ci = col_.get();
  const void* v = values_.get();
  if (stage_cols_ > 0 && ncols_x >= kStageMinCols) {
    for (int c0 = 0; c0 < ncols_x; c0 += stage_cols_) {
      const int kc = std::min(stage_cols_, ncols_x - c0);
      int width = 8;
      while (width < std::min(kc, 64)) width *= 2;
      if (kc > 64) width = (kc + 63) / 64 * 64;
      stage_row_major_device(x + static_cast<std::int64_t>(c0) * ldx, ldx, cols_, kc,
                             stage_.get(), cols_, width, stream);
      double* yc = y + static_cast<std::int64_t>(c0) * ldy;
      with_value_type(precision_, [&](auto ta) {
        launch_seg_rm<decltype(ta)>(nseg_, seg_row_.get(), seg_begin_.get(), seg_end_.get(), ci, v,
                                    stage_.get(), width, yc, ldy, kc, st);
      });
    }
    return;
  }
  with_value_type(precision_, [&](auto ta) {
    dispatch_nt<decltype(ta)>(*this, group_, rows_, rp, nseg_, seg_row_.get(), seg_begin_.get(),
                              seg_end_.get(), ci, v, x, ldx, y, ldy, ncols_x, st);
  });
}

void stage_row_major_device(const double* x, std::int64_t ldx, std::int64_t rows, int kc,
                            double* xs, std::int64_t rows_pad, int width, void* stream) {
  if (rows_pad == 0 || width == 0) return;
  TCSOLVE_REQUIRE((width + 31) / 32 <= 65535, "stage_row_major_device: width too large");
  const dim3 grid(grid_x(rows_pad, 32), static_cast<unsigned>((width + 31) / 32));
  stage_row_major_kernel<<<grid, dim3(32, 8), 0, static_cast<cudaStream_t>(stream)>>>(
      x, ldx, rows, kc, xs, rows_pad, width);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

template <class T>
void zero_rows_device(const std::int32_t* rows, std::int64_t n, T* y, std::int64_t ldy, int ncols,
                      void* stream) {
  if (n == 0 || ncols == 0) return;
  zero_rows_kernel<T><<<stride_grid(n * ncols, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      rows, n, y, ldy, ncols);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}
template void zero_rows_device<double>(const std::int32_t*, std::int64_t, double*, std::int64_t,
                                       int, void*);
template void zero_rows_device<float>(const std::int32_t*, std::int64_t, float*, std::int64_t, int,
                                      void*);

void permute_rows_device(const double* x, std::int64_t ldx, double* y, std::int64_t ldy,
                         std::int64_t rows, std::int64_t cols, const std::int32_t* perm,
                         bool scatter, void* stream) {
  if (rows == 0 || cols == 0) return;
  permute_rows_kernel<<<stride_grid(rows * cols, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      x, ldx, y, ldy, rows, cols, perm, scatter);
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

void convert_multivector_device(const double* x, std::int64_t ldx, void* out, std::int64_t ld_out,
                                std::int64_t rows, int cols, Precision to, void* stream,
                                const std::int32_t* gather) {
  const std::int64_t total = rows * cols;
  if (total == 0) return;
  const unsigned grid = stride_grid(total, 256);
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (to == Precision::fp16)
    convert_kernel<__half><<<grid, 256, 0, st>>>(x, ldx, static_cast<__half*>(out), ld_out, rows, cols,
                                                    gather);
  else if (to == Precision::bf16)
    convert_kernel<__nv_bfloat16><<<grid, 256, 0, st>>>(x, ldx, static_cast<__nv_bfloat16*>(out),
                                                       ld_out, rows, cols, gather);
  else
    throw InvalidArgument("convert_multivector_device: target must be fp16 or bf16");
  TCSOLVE_CUDA_CHECK_LAUNCH();
}

}  // namespace tcsolve
