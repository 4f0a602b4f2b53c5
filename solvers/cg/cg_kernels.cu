// CUDA backend of CgKernels (solvers/cg/cg_kernels.hpp): block CG's residual and direction passes
// as fused multi-vector kernels on the fp64 tensor cores (mma.sync m8n8k4 f64, through
// dense/tiles.cuh), fp64 and on fp32 tall blocks, and the fp32 Gram (dense/cuda_context.cu's
// kernel), copies and conversions; the cuBLAS composites where the fused kernels do not apply
// (TCSOLVE_NO_FUSED=1, more than 64 columns, short blocks). The CPU twin is cg_kernels.cpp.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "solvers/dense/cuda_context.cuh"
#include "solvers/dense/tiles.cuh"

namespace tcsolve::cuda_dense {

namespace {

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
  double gacc[SLOTS][2];
#pragma unroll
  for (int s2 = 0; s2 < SLOTS; ++s2) gacc[s2][0] = gacc[s2][1] = 0.0;
  stage_small<8 * QT, LDA>({alpha}, {lda}, q, r, as);
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
    const bool full = tile + TR <= n;
    load_rows<U>(dj, row, n, full, JAC, dvf);
    load_strip_a<U>(qm, ldq, q, row, n, full, af);
#pragma unroll
    for (int ks = 0; ks < 2 * QT; ++ks)
#pragma unroll
      for (int u = 0; u < U; ++u) af[u][ks] = -af[u][ks];
    load_strip_c<U>(rm, ldr, r, row, n, full, rf);
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

// Block CG direction pass (cg_direction_update), in place, q ≤ 8·QT, r ≤ 8·RT: one warp per
// strip of 8·U rows (grid-stride; the strip layouts in dense/tiles.cuh: U = 2 row pairs, 4 fp32
// quads, 1 where the blocks are not aligned for either): A = P strip fragments (all q columns),
// X's and Z's r columns, all loaded before any store (the stores to P and X could alias later
// loads as far as the compiler knows, so it would not hoist them itself); then per 8-column tile
// X += P·α and P(:, 0:r) = Z + P·β in fp64 DMMA, rounded at the store. Reads P, Z, X; writes
// P, X.
// fp32 quads (U = 4): the fragments stay fp32 until their tile's mma, and each tile is stored
// when done (the fp64 results of every tile would not fit the registers). (The row-pair strips
// read half lines in fp32 and ran at 0.86 TB/s, twice the fp64 kernel's time a row,
// docs/performance.md.)
template <class T, int QT, int RT, int U>
__global__ void __launch_bounds__(128) cg_direction_kernel(long long n, int q, int r,
                                                           const double* alpha, long long lda,
                                                           const double* beta, long long ldb,
                                                           const T* zm, long long ldz,
                                                           T* pm, long long ldp, T* xm,
                                                           long long ldx) {
  using F = std::conditional_t<U == 4, float, double>;  // fragments as loaded
  constexpr int LDA = frag_ld(8 * RT);
  extern __shared__ double smem[];
  const double* as = smem;                 // α, 8QT × LDA
  const double* bs = smem + 8 * QT * LDA;  // β
  stage_small<8 * QT, LDA>({alpha, beta}, {lda, ldb}, q, r, smem);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  for (long long s0 = 8 * U * (static_cast<long long>(blockIdx.x) * nw + warp); s0 < n;
       s0 += 8LL * U * gridDim.x * nw) {
    const bool full = s0 + 8 * U <= n;
    const long long row = s0 + U * g;  // m-tile u: row + u
    F af[U][2 * QT], cf[2][U][RT][2];  // cf: X's, Z's columns
    load_strip_a<U>(pm, ldp, q, row, n, full, af);
    load_strip_c<U>({xm, zm}, {ldx, ldz}, r, row, n, full, cf);
    // Tile ct's results to memory: v(0, u, h) of X, v(1, u, h) of P at row + u, column
    // 8ct + 2t + h.
    const auto store = [&](int ct, const auto& v) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * ct + 2 * t + h;
        if (c >= r) continue;
        double xv[U], pv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) xv[u] = v(0, u, h), pv[u] = v(1, u, h);
        store_rows<U>(xm + c * ldx, row, n, full, xv);
        store_rows<U>(pm + c * ldp, row, n, full, pv);
      }
    };
#pragma unroll
    for (int ct = 0; ct < RT; ++ct) {
      double acc[2][U][2];  // X, P of tile ct (fp64)
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int h = 0; h < 2; ++h) acc[i][u][h] = cf[i][u][ct][h];
#pragma unroll
      for (int ks = 0; ks < 2 * QT; ++ks) {
        const int ai = (4 * ks + t) * LDA + 8 * ct + g;
        const double a = as[ai], b = bs[ai];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          dmma(acc[0][u][0], acc[0][u][1], af[u][ks], a);
          dmma(acc[1][u][0], acc[1][u][1], af[u][ks], b);
        }
      }
      if constexpr (U == 4)
        store(ct, [&](int i, int u, int h) { return acc[i][u][h]; });
      else  // (cf is fp64 here)
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int u = 0; u < U; ++u)
#pragma unroll
            for (int h = 0; h < 2; ++h) cf[i][u][ct][h] = acc[i][u][h];
    }
    if constexpr (U != 4)
#pragma unroll
      for (int ct = 0; ct < RT; ++ct) store(ct, [&](int i, int u, int h) { return cf[i][u][ct][h]; });
  }
}

class CudaCgKernels final : public CgKernels {
 public:
  CudaCgKernels(CudaContext& ctx, DenseBlockOps& ops) : ctx_(ctx), ops_(ops) {
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
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 8, 8, 1>), cg_direction_smem(8, 8));
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 4, 4, 1>), cg_direction_smem(4, 4));
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 8, 8, 2>), cg_direction_smem(8, 8));
    allow(reinterpret_cast<const void*>(&cg_direction_kernel<double, 4, 4, 2>), cg_direction_smem(4, 4));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, false, false>), cg_residual_smem(4, 4, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, true, false>), cg_residual_smem(4, 4, false));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, false, true>), cg_residual_smem(4, 4, true));
    allow(reinterpret_cast<const void*>(&cg_residual_kernel<float, 4, 4, true, true>), cg_residual_smem(4, 4, true));
  }

  void cg_residual_update(MvView<const double> q, MvView<const double> alpha, MvView<double> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    const std::int64_t qc = q.cols, rc = r.cols, n = r.rows;
    if (rc == 0) return;
    if (ctx_.fused && qc <= 64 && rc <= 64 && n >= 4096) {
      const int nb = qc <= 32 && rc <= 32 ? launch_cg_residual<4, 4, false>(q, alpha, r, nullptr, r)
                                          : launch_cg_residual<8, 8, false>(q, alpha, r, nullptr, r);
      ctx_.gram_finish(nb, static_cast<int>(qc + rc), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
      return;
    }
    // Composite: R −= Q·α (cuBLAS), G = [Q R]ᵀ·R (one Gram product when Q and R are adjacent
    // columns of one block, as in block CG: 3 passes instead of 4).
    ops_.gemm_into(-1.0, q, alpha, 1.0, r);
    if (qc > 0 && q.ld == r.ld && q.data + qc * q.ld == r.data) {
      ops_.gram_into(1.0, MvView<const double>{q.data, n, qc + rc, q.ld, q.space}, r, 0.0, g);
      return;
    }
    if (qc > 0) ops_.gram_into(1.0, q, r, 0.0, MvView<double>{g.data, qc, rc, g.ld, g.space});
    MvView<double> gb{g.data + qc, rc, rc, g.ld, g.space};
    ops_.gram_into(1.0, r, r, 0.0, gb);
  }

  void cg_residual_update_jacobi(MvView<const double> q, MvView<const double> alpha,
                                 const double* d, MvView<double> r, MvView<double> z,
                                 MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    const std::int64_t qc = q.cols, rc = r.cols, n = r.rows;
    if (rc == 0) return;
    if (ctx_.fused && qc <= 64 && rc <= 64 && n >= 4096) {
      const int nb = qc <= 32 && rc <= 32 ? launch_cg_residual<4, 4, true>(q, alpha, r, d, z)
                                          : launch_cg_residual<8, 8, true>(q, alpha, r, d, z);
      const std::int64_t gr = qc + rc + 1;
      ctx_.gram_finish(nb, static_cast<int>(gr), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
      return;
    }
    // Composite: R −= Q·α, Z = diag(d)·R, G = [Q R]ᵀ·Z, then the norms into G's last row.
    ops_.gemm_into(-1.0, q, alpha, 1.0, r);
    ops_.scale_rows(d, r, z);
    if (qc > 0) ops_.gram_into(1.0, q, z, 0.0, MvView<double>{g.data, qc, rc, g.ld, g.space});
    ops_.gram_into(1.0, r, z, 0.0, MvView<double>{g.data + qc, rc, rc, g.ld, g.space});
    if (n > 0) ctx_.column_dots_to(r, r, g.data + qc + rc, g.ld);
    else ops_.fill_zero(MvView<double>{g.data + qc + rc, 1, rc, g.ld, g.space});
  }

  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const double> z, MvView<double> p, MvView<double> x) override {
    const std::int64_t qc = alpha.rows, rc = z.cols, n = p.rows;
    detail::check_cg_direction(alpha, beta, z, p, x);
    if (rc == 0 || n == 0) return;
    if (ctx_.fused && qc <= 64 && rc <= 64) {
      if (qc <= 32 && rc <= 32) launch_cg_direction<4, 4>(alpha, beta, z, p, x);
      else launch_cg_direction<8, 8>(alpha, beta, z, p, x);
      return;
    }
    // Composite: X += P·α; scratch = P·β; P(:, 0:r) = Z + scratch.
    ctx_.reserve(n, rc, 0);
    MvView<double> tmp{ctx_.scratch, n, rc, n, Space::device};
    ops_.gemm_into(1.0, p.columns(0, qc), alpha, 1.0, x);
    ops_.gemm_into(1.0, p.columns(0, qc), beta, 0.0, tmp);
    ops_.chebyshev().axpbypcz(1.0, z, 1.0, tmp, 0.0, p.columns(0, rc));
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
    if (x.rows == 0) return ctx_.scale_or_zero(beta, g);
    const std::size_t sh = static_cast<std::size_t>(p * q) * sizeof(double);
    const bool octets = ctx_.quads_ok({x, y}) && mt <= 4 && nt <= 4;
    const int nb = octets ? ctx_.launch_gram_octets(mt, nt, sh, x, y)
                          : ctx_.launch_gram_tn(mt, nt, sh, x, y);
    ctx_.gram_finish(nb, static_cast<int>(p), static_cast<int>(q), alpha, beta, g.data, g.ld);
  }
  void cg_residual_update(MvView<const float> q, MvView<const double> alpha, MvView<float> r,
                          MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g);
    require32(std::max(q.cols, r.cols), "cg_residual_update");
    const std::int64_t qc = q.cols, rc = r.cols;
    if (rc == 0) return;
    if (r.rows == 0) return ops_.fill_zero(g);
    const int nb = launch_cg_residual<4, 4, false, float>(q, alpha, r, nullptr, r);
    ctx_.gram_finish(nb, static_cast<int>(qc + rc), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
  }
  void cg_residual_update_jacobi(MvView<const float> q, MvView<const double> alpha, const double* d,
                                 MvView<float> r, MvView<float> z, MvView<double> g) override {
    detail::check_cg_residual(q, alpha, r, g, &z);
    require32(std::max(q.cols, r.cols), "cg_residual_update_jacobi");
    const std::int64_t qc = q.cols, rc = r.cols;
    if (rc == 0) return;
    if (r.rows == 0) return ops_.fill_zero(g);
    const int nb = launch_cg_residual<4, 4, true, float>(q, alpha, r, d, z);
    const std::int64_t gr = qc + rc + 1;
    ctx_.gram_finish(nb, static_cast<int>(gr), static_cast<int>(rc), 1.0, 0.0, g.data, g.ld);
  }
  void cg_direction_update(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const float> z, MvView<float> p, MvView<float> x) override {
    const std::int64_t qc = alpha.rows, rc = z.cols, n = p.rows;
    detail::check_cg_direction(alpha, beta, z, p, x);
    require32(std::max(qc, rc), "cg_direction_update");
    if (rc == 0 || n == 0) return;
    if (ctx_.quads_ok({z, p, x})) return launch_cg_direction_instance<4, 4, 4>(alpha, beta, z, p, x);
    launch_cg_direction<4, 4, float>(alpha, beta, z, p, x);
  }
  void copy(MvView<const float> x, MvView<float> y) override {
    TCSOLVE_REQUIRE(x.rows == y.rows && x.cols == y.cols, "copy: shapes differ");
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemcpy2DAsync(y.data, y.ld * sizeof(float), x.data, x.ld * sizeof(float),
                                         x.rows * sizeof(float), x.cols, cudaMemcpyDeviceToDevice,
                                         ctx_.stream));
  }
  void gather_columns(MvView<const float> x, const std::int64_t* idx, std::int64_t count,
                      MvView<float> y) override {
    ctx_.gather(x, idx, count, y);
  }
  void fill_zero(MvView<float> x) override {
    if (x.rows == 0 || x.cols == 0) return;
    TCSOLVE_CUDA_CHECK(cudaMemset2DAsync(x.data, x.ld * sizeof(float), 0, x.rows * sizeof(float),
                                         x.cols, ctx_.stream));
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
      convert_kernel<ADD><<<ctx_.grid(rows, nc), 256, 0, ctx_.stream>>>(
          static_cast<const char*>(x) + c0 * ldx * xs, ldx, static_cast<char*>(y) + c0 * ldy * ys,
          ldy, rows, alpha);
      TCSOLVE_CUDA_CHECK_LAUNCH();
    }
  }
 private:
  // α, the T tile, the tile's Jacobi scales (tiles of 32 rows, 64 with row pairs).
  static int cg_residual_smem(int qt, int rt, bool pairs) {
    const int tr = pairs ? 64 : 32;
    return static_cast<int>(sizeof(double)) *
           (8 * qt * frag_ld(8 * rt) + tr * frag_ld(8 * qt + 8 * rt) + tr);
  }
  static int cg_direction_smem(int qt, int rt) {
    return static_cast<int>(sizeof(double)) * 2 * 8 * qt * frag_ld(8 * rt);
  }
  // Row pairs for the 4 × 4-tile instance only (the 8 × 8 one has no registers to spare).
  template <int QT, int RT, bool JAC, class T = double>
  int launch_cg_residual(MvView<const T> q, MvView<const double> alpha, MvView<T> r,
                         const double* d, MvView<T> z) {
    const MvView<const double> dv{d, r.rows, 1, r.rows, r.space};
    if (QT <= 4 && ctx_.template pairs_ok<T>({q.cols > 0 ? q : r, r, JAC ? z : r}) && (!JAC || ctx_.template pairs_ok<double>({dv})))
      return launch_cg_residual_instance<QT, RT, JAC, QT <= 4>(q, alpha, r, d, z);
    return launch_cg_residual_instance<QT, RT, JAC, false>(q, alpha, r, d, z);
  }
  template <int QT, int RT, bool JAC, bool V, class T>
  int launch_cg_residual_instance(MvView<const T> q, MvView<const double> alpha,
                                  MvView<T> r, const double* d, MvView<T> z) {
    const int smem = cg_residual_smem(QT, RT, V);
    const int tr = V ? 64 : 32;
    const int nb = static_cast<int>(std::min<std::int64_t>(
        ctx_.resident_blocks(reinterpret_cast<const void*>(&cg_residual_kernel<T, QT, RT, JAC, V>), 128, smem),
        (r.rows + tr - 1) / tr));
    ctx_.ensure_partial(nb, static_cast<std::size_t>((q.cols + r.cols + (JAC ? 1 : 0)) * r.cols));
    cg_residual_kernel<T, QT, RT, JAC, V><<<nb, 128, smem, ctx_.stream>>>(
        r.rows, static_cast<int>(q.cols), static_cast<int>(r.cols), alpha.data, alpha.ld,
        q.cols > 0 ? q.data : r.data, q.cols > 0 ? q.ld : r.ld, r.data, r.ld, d, z.data, z.ld,
        ctx_.partial);
    TCSOLVE_CUDA_CHECK_LAUNCH();
    return nb;
  }
  template <int QT, int RT, class T = double>
  void launch_cg_direction(MvView<const double> alpha, MvView<const double> beta,
                           MvView<const T> z, MvView<T> p, MvView<T> x) {
    if (ctx_.template pairs_ok<T>({z, p, x})) launch_cg_direction_instance<QT, RT, 2>(alpha, beta, z, p, x);
    else launch_cg_direction_instance<QT, RT, 1>(alpha, beta, z, p, x);
  }
  // U: the strip layout (rows a lane; 4: fp32 quads, quads_ok).
  template <int QT, int RT, int U, class T>
  void launch_cg_direction_instance(MvView<const double> alpha, MvView<const double> beta,
                                    MvView<const T> z, MvView<T> p, MvView<T> x) {
    const int smem = cg_direction_smem(QT, RT);
    const std::int64_t block_rows = U == 4 ? 128 : 32;  // rows a block at the least
    const int nb = static_cast<int>(std::min<std::int64_t>(
        ctx_.resident_blocks(reinterpret_cast<const void*>(&cg_direction_kernel<T, QT, RT, U>), 128, smem),
        (p.rows + block_rows - 1) / block_rows));
    cg_direction_kernel<T, QT, RT, U><<<nb, 128, smem, ctx_.stream>>>(
        p.rows, static_cast<int>(alpha.rows), static_cast<int>(z.cols), alpha.data, alpha.ld,
        beta.data, beta.ld, z.data, z.ld, p.data, p.ld, x.data, x.ld);
    TCSOLVE_CUDA_CHECK_LAUNCH();
  }

  CudaContext& ctx_;
  DenseBlockOps& ops_;
};

}  // namespace

std::unique_ptr<CgKernels> make_cg_kernels(CudaContext& ctx, DenseBlockOps& ops) {
  return std::make_unique<CudaCgKernels>(ctx, ops);
}

}  // namespace tcsolve::cuda_dense
