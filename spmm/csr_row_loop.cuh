// The CSR row loop of the CUDA-core kernels, written once (csr_spmm.cu: row, tiled-row, segment
// and staged-segment kernels; chebyshev_step.cu: the fp64 step and the fp32 rung's step;
// device_csr_view.cu). A thread walks the non-zeros p of one row of A (or every G-th of them, one
// lane of a segment group) and adds a_p · X(c_p, j) into NT accumulators held in registers:
//   acc[j] = fma(a_p, X(c_p, j), acc[j])   for p = p0 + lane, p0 + lane + STEP, … < p1, in order,
// one fused multiply-add per product, so a row's sum rounds the same in every kernel and in every
// build of this loop. Per non-zero: one value (sizeof(TA) bytes) and one 32-bit index of A, NT
// gathers of X (8 or 4 bytes each, read-only path: __ldg).
// A's entries come from an Entries functor entry(p, a, c) (global arrays, or a CTA's tile in shared
// memory); X through a gather: column-major from column c0 (ColumnMajorX) or staged row-major
// (RowMajorX). Device code only; include from .cu files.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace tcsolve::csr_row {

// A's stored value, widened exactly (fp16/bf16 through float); value_as<TV> then converts to the
// accumulation type (double; or float for the fp32 rung, which rounds fp64 storage to float).
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class TV, class TA>
__device__ __forceinline__ TV value_as(TA v) {
  return static_cast<TV>(widen(v));
}

// z + x·y rounded once, in the accumulation type.
__device__ __forceinline__ double mad(double x, double y, double z) { return fma(x, y, z); }
__device__ __forceinline__ float mad(float x, float y, float z) { return fmaf(x, y, z); }

// A's entries in global memory: values v (TA, nnz) read as TV, column indices ci (int32, nnz).
template <class TV, class TA>
struct GlobalEntries {
  const TA* v;
  const std::int32_t* ci;
  __device__ __forceinline__ void operator()(std::int64_t p, TV& a, std::int64_t& c) const {
    a = value_as<TV>(v[p]);
    c = ci[p];
  }
};

// X column-major (leading dimension ldx) from column c0 on (xc = x + c0·ldx): X(c, j) =
// xc[c + j·ldx] for the nc ≤ NT live columns of the pass.
template <class TV>
struct ColumnMajorX {
  const TV* xc;
  std::int64_t ldx;
  int nc;
  // (The address is formed per live column, inside its test: row() passes c on.)
  __device__ __forceinline__ std::int64_t row(std::int64_t c) const { return c; }
  __device__ __forceinline__ bool live(int j) const { return j < nc; }
  __device__ __forceinline__ TV at(std::int64_t c, int j) const { return __ldg(xc + c + j * ldx); }
};

// X staged row-major (row c at xs + c·width, zero-padded to width) from column c0 on: lane l of
// the L lanes that share a row piece takes columns c0 + l + j·L, live below width.
template <class TV, int L>
struct RowMajorX {
  const TV* xs;
  int width;
  int c0, l;
  // (The row piece's address is formed once per entry, before the column tests.)
  __device__ __forceinline__ const TV* row(std::int64_t c) const { return xs + c * width + c0 + l; }
  __device__ __forceinline__ bool live(int j) const { return c0 + l + j * L < width; }
  __device__ __forceinline__ TV at(const TV* xr, int j) const { return __ldg(xr + j * L); }
};

// acc[j] += Σ_p a_p · x(c_p, j) over p = p0 + lane, p0 + lane + STEP, … < p1 (the loop unrolled
// UNROLL times), for the live j < NT. lane: the thread's first entry in a group of STEP threads
// sharing the row (0 for a row of its own).
template <int UNROLL, int STEP, class TV, int NT, class Entries, class X>
__device__ __forceinline__ void accumulate(TV (&acc)[NT], std::int64_t p0, int lane,
                                           std::int64_t p1, const Entries& entry, const X& x) {
  static_assert(STEP >= 1 && UNROLL >= 1, "csr_row::accumulate: positive stride and unroll");
#pragma unroll(UNROLL)
  for (std::int64_t p = p0 + lane; p < p1; p += STEP) {
    TV a;
    std::int64_t c;
    entry(p, a, c);
    const auto xr = x.row(c);  // X(c, ·)
#pragma unroll
    for (int j = 0; j < NT; ++j)
      if (x.live(j)) acc[j] = mad(a, x.at(xr, j), acc[j]);
  }
}

// The passes of one row (entries p0 + lane, + STEP, … < p1, as accumulate) over a column-major X
// (n × ncols, ldx): for c0 = c_first, c_first + c_step, … < ncols, acc = A(row, :)·X(:, c0 ..
// c0 + nc) with nc = min(NT, ncols − c0) live columns, then finish(c0, nc, xc, acc) with
// xc = x + c0·ldx. A's row is re-read (from L1) once per pass.
template <int NT, int UNROLL, int STEP, class TV, class Entries, class Finish>
__device__ __forceinline__ void passes(std::int64_t p0, int lane, std::int64_t p1, int c_first,
                                       int c_step, int ncols, const TV* x, std::int64_t ldx,
                                       const Entries& entry, Finish&& finish) {
  for (int c0 = c_first; c0 < ncols; c0 += c_step) {
    const int nc = min(NT, ncols - c0);
    const TV* xc = x + static_cast<std::int64_t>(c0) * ldx;
    TV acc[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j] = TV(0);
    accumulate<UNROLL, STEP>(acc, p0, lane, p1, entry, ColumnMajorX<TV>{xc, ldx, nc});
    finish(c0, nc, xc, acc);
  }
}

}  // namespace tcsolve::csr_row
