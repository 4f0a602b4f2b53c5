// Device helpers shared by the CUDA dense kernels (dense_ops.cu, dense/cuda_context.cu,
// cg/cg_kernels.cu): the fp64 tensor-core tile product, fragment strides, row-pair and fp32 quad
// loads and stores, and the block sum of Gram tiles. CUDA translation units only.
#pragma once
#include <cuda_runtime.h>

namespace tcsolve::cuda_dense {


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

}  // namespace tcsolve::cuda_dense
