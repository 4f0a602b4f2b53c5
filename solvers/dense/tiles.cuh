// Device helpers shared by the CUDA dense kernels (dense_ops.cu, dense/cuda_context.cu,
// cg/cg_kernels.cu, chebyshev/chebyshev_kernels.cu): the fp64 tensor-core tile product, fragment
// strides, row-pair and fp32 quad loads and stores, the strips of the tall-skinny kernels, the
// block sum of Gram tiles and of column partials. CUDA translation units only.
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

// partial[blockIdx.y·gridDim.x + blockIdx.x] = Σ s over the block's threads (blockDim.x ≤ 256, a
// multiple of 32): shuffles within each warp, then the warps' sums in warp order (deterministic;
// column_sum_kernel adds the blocks' partials). grid.y = column.
__device__ __forceinline__ void block_column_partial(double s, double* partial) {
  __shared__ double part[256 / 32];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) partial[blockIdx.y * gridDim.x + blockIdx.x] = s;
  }
}

// ---- The strips of the tall-skinny kernels (block CG's passes, tall_gemm_kernel): a warp's strip
// is 8·U rows; lane (g, t) holds U consecutive rows row .. row + U − 1 of a column (row = strip
// start + U·g), m-tile u the rows {U·g + u} of the strip. Rows are independent in these products,
// so any row order within the strip is the same computation; wider per-lane accesses make a warp
// instruction read or write more contiguous bytes of each column:
//   U = 1: one 8- (fp32: 4-) byte access a row, guarded by row < n (any view);
//   U = 2: a row pair (load_pair/store_pair; 16-byte aligned blocks, even leading dimensions): a
//          warp instruction reads or writes 128 contiguous bytes (whole lines) of each of its 4
//          fp64 columns instead of 64;
//   U = 4: an fp32 quad (load_quad/store_quad; 16-byte aligned, leading dimensions multiples of 4).
// full: the warp's whole strip is inside the block (vector accesses); has: the column exists
// (else zeros, nothing read).
template <int U, class T, class F>
__device__ __forceinline__ void load_rows(const T* col, long long row, long long n, bool full,
                                          bool has, F (&v)[U]) {
  static_assert(U == 1 || U == 2 || U == 4, "strip rows: 1, 2 or 4 a lane");
  if constexpr (U == 4) {
    load_quad(col, row, n, full, has, v);
  } else if constexpr (U == 2) {
    v[0] = v[1] = 0.0;
    if (has) load_pair(col, row, n, full, v[0], v[1]);
  } else {
    v[0] = has && row < n ? col[row] : 0.0;
  }
}
template <int U, class T>
__device__ __forceinline__ void store_rows(T* col, long long row, long long n, bool full,
                                           const double (&v)[U]) {
  if constexpr (U == 4) store_quad(col, row, n, full, v);
  else if constexpr (U == 2) store_pair(col, row, n, full, v[0], v[1]);
  else if (row < n) col[row] = static_cast<T>(v[0]);
}

// A fragments of a strip of M (n rows, leading dimension ldm; its first `cols` columns) for KS
// k-steps of 4 columns: af[u][ks] = M(row + u, 4·ks + t), 0 past n or cols.
template <int U, int KS, class T, class F>
__device__ __forceinline__ void load_strip_a(const T* m, long long ldm, int cols, long long row,
                                             long long n, bool full, F (&af)[U][KS]) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const int k = 4 * ks + t;
    F v[U];
    load_rows<U>(m + k * ldm, row, n, full, k < cols, v);
#pragma unroll
    for (int u = 0; u < U; ++u) af[u][ks] = v[u];
  }
}

// C fragments of a strip of the 8-column tiles of NM tall blocks m[i] (leading dimensions ld[i];
// their first `cols` columns): f[i][u][ct][h] = m[i](row + u, 8·ct + 2t + h), 0 past n or cols.
template <int U, int CT, int NM, class T, class F>
__device__ __forceinline__ void load_strip_c(const T* const (&m)[NM], const long long (&ld)[NM],
                                             int cols, long long row, long long n, bool full,
                                             F (&f)[NM][U][CT][2]) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int ct = 0; ct < CT; ++ct)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = 8 * ct + 2 * t + h;
      if constexpr (U == 2) {  // (one test of c for all NM pairs)
#pragma unroll
        for (int i = 0; i < NM; ++i) f[i][0][ct][h] = f[i][1][ct][h] = 0.0;
        if (c < cols)
#pragma unroll
          for (int i = 0; i < NM; ++i)
            load_pair(m[i] + c * ld[i], row, n, full, f[i][0][ct][h], f[i][1][ct][h]);
      } else {
#pragma unroll
        for (int i = 0; i < NM; ++i) {
          F v[U];
          load_rows<U>(m[i] + c * ld[i], row, n, full, c < cols, v);
#pragma unroll
          for (int u = 0; u < U; ++u) f[i][u][ct][h] = v[u];
        }
      }
    }
}

template <int U, int CT, class T, class F>
__device__ __forceinline__ void load_strip_c(const T* m, long long ldm, int cols, long long row,
                                             long long n, bool full, F (&f)[U][CT][2]) {
  load_strip_c<U, CT, 1>({m}, {ldm}, cols, row, n, full, reinterpret_cast<F(&)[1][U][CT][2]>(f));
}

// Shared-memory copies of NM small column-major matrices m[i] (rows × cols, leading dimension
// ld[i]) for the strips' B fragments: s[i·K·LD + k·LD + c] = m[i](k, c), zero-padded to K × LD;
// then a barrier.
template <int K, int LD, int NM>
__device__ __forceinline__ void stage_small(const double* const (&m)[NM], const long long (&ld)[NM],
                                            int rows, int cols, double* s) {
  for (int e = threadIdx.x; e < K * LD; e += blockDim.x) {
    const int k = e / LD, c = e % LD;
    const bool v = k < rows && c < cols;
#pragma unroll
    for (int i = 0; i < NM; ++i) s[i * K * LD + e] = v ? m[i][k + c * ld[i]] : 0.0;
  }
  __syncthreads();
}

}  // namespace tcsolve::cuda_dense
