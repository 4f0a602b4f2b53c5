// Internal to the CUDA backend of DenseBlockOps: the state its parts share (one stream, the cuBLAS
// handle, the workspaces, the staging of deferred results and coefficient uploads, the block
// partials of the fused Gram kernels, the switches of the fused kernels) and the helpers on it.
// One context per ops object; the generic ops (dense_ops.cu) and the parts (dense/queue.cu,
// dense/small_dense.cu, cg/cg_kernels.cu, chebyshev/chebyshev_kernels.cu) refer to it. The CPU
// twin is dense/cpu_dense.hpp. CUDA translation units only.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/cuda_check.cuh"
#include "core/cuda_library_check.cuh"
#include "core/error.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve::cuda_dense {

constexpr int kMaxCols = 128;  // columns per launch for kernels taking per-column parameters

struct ColumnIndex {
  long long idx[kMaxCols];
};
struct ColumnCoef {
  double a[kMaxCols];
  double b[kMaxCols];
};

inline void require_device(MvView<const double> v, const char* what) {
  if (v.space != Space::device && v.cols > 0 && v.rows > 0)
    throw InvalidArgument(std::string("CUDA dense ops: ") + what + " is not a device block");
}

class CudaContext {
 public:
  // Throws DeviceError without a device.
  CudaContext();
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  void synchronize();
  // Workspace (scratch: rows × cols) and coefficient staging (coef, small, pinned: coef_need).
  void reserve(std::int64_t rows, std::int64_t cols, std::int64_t coef_need);
  // One device → pinned copy of everything staged, one stream sync, then the host scatter.
  void fetch();
  // Resident blocks per SM of a kernel (cached), times the SMs: the grid of the fused kernels.
  int resident_blocks(const void* f, int threads, std::size_t smem);
  // Block partials of the fused Gram kernels (summed by gram_finish): nb × elems.
  void ensure_partial(int nb, std::size_t elems);
  dim3 grid(std::int64_t rows, std::int64_t cols) const;
  void ensure_small(std::int64_t elems);
  // Offset of `elems` fresh doubles in small for a deferred result; fetches first when the
  // staged results would not fit (reserve() may reallocate small only with nothing pending).
  std::size_t stage(std::size_t elems);
  // Copies the host p × q matrix (ld) to the device staging buffer coef (compact, ld = p)
  // without blocking, through the pinned ring.
  const double* upload(const double* c, std::int64_t ld, std::int64_t p, std::int64_t q);
  // Y[:, j] = a[j]·X[:, j] + b[j]·Y[:, j] (a, b host), and Y *= beta (no host allocation).
  void axpby_columns(const double* a, MvView<const double> x, const double* b, MvView<double> y);
  void scale_columns(double beta, MvView<double> y);
  // Y *= beta, Y zeroed (not read) for beta = 0, untouched for beta = 1: the result of an empty
  // product (no rows or no columns to sum over) under α·(…) + β·Y.
  void scale_or_zero(double beta, MvView<double> y);
  // Y[:, j] = X[:, idx[j]], j < count (idx host; fp64 and fp32 blocks).
  template <class T>
  void gather(MvView<const T> x, const std::int64_t* idx, std::int64_t count, MvView<T> y);
  // out[j·stride] = X_jᵀY_j (device), zeroed first.
  void column_dots_to(MvView<const double> x, MvView<const double> y, double* out,
                      long long stride);
  // out[j·stride] = Σ_b partial[j·nb + b] for j < cols (the column kernels' block partials).
  void column_sums(int nb, int cols, double* out, long long stride);
  // The Gram kernel instance with the fewest tiles covering mt × nt (partial products into
  // partial); returns its block count. gram_finish: G = α·Σ_b partial_b + β·G.
  template <class T>
  int launch_gram_tn(int mt, int nt, std::size_t sh, MvView<const T> x, MvView<const T> y);
  // The same for fp32 blocks in the octet layout (quads_ok({x, y}), mt, nt ≤ 4): a lane's 8
  // k-steps on 8 consecutive rows of a column (whole 128-byte lines a warp).
  int launch_gram_octets(int mt, int nt, std::size_t sh, MvView<const float> x, MvView<const float> y);
  void gram_finish(int nb, int p, int q, double alpha, double beta, double* g, long long ldg);

  // Row-pair strips (double2 accesses) when every tall block is 16-byte aligned with an even
  // leading dimension (TCSOLVE_PAIR_ROWS=0: never).
  template <class T = double>
  bool pairs_ok(std::initializer_list<MvView<const T>> blocks) const {
    if (!pair_rows) return false;
    for (const auto& b : blocks)
      if (b.ld % 2 != 0 || reinterpret_cast<std::uintptr_t>(b.data) % (2 * sizeof(T)) != 0) return false;
    return true;
  }
  // fp32 quads (float4 of 4 rows): 16-byte aligned blocks with leading dimensions multiples of 4.
  bool quads_ok(std::initializer_list<MvView<const float>> blocks) const {
    if (!pair_rows) return false;
    for (const auto& b : blocks)
      if (b.ld % 4 != 0 || reinterpret_cast<std::uintptr_t>(b.data) % 16 != 0) return false;
    return true;
  }

  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  int device = 0;  // the GPU current at construction: every call is for it
  int sms = 1;
  double* scratch = nullptr;
  std::size_t scratch_elems = 0;
  double* coef = nullptr;    // staged coefficient matrices (device)
  double* small = nullptr;   // Gram results, column dots (device), staged from small_pos on
  double* pinned = nullptr;  // host side of small
  struct Pending {           // a staged result: p × q at small + off, for host (ld)
    std::size_t off;
    std::int64_t p, q;
    double* host;
    std::int64_t ld;
  };
  std::vector<Pending> pending;
  std::size_t small_pos = 0;
  std::size_t coef_elems = 0;
  double* ring = nullptr;  // pinned upload ring
  std::size_t ring_elems = 0, ring_pos = 0;
  double* partial = nullptr;  // block partials of the fused Gram kernels
  std::size_t partial_elems = 0;
  std::vector<std::pair<const void*, int>> occupancy;
  bool fused = true;      // fused tensor-core kernels (TCSOLVE_NO_FUSED=1: cuBLAS composites)
  bool pair_rows = true;  // update kernels' row-pair strips where aligned (TCSOLVE_PAIR_ROWS=0: off)
  bool gram_vec = true;   // gram_tn_kernel's double2 loads where aligned (TCSOLVE_GRAM_VEC=0: off)
  bool tall_gemm = true;  // gemm_into's own kernel for p, q ≤ 32 (TCSOLVE_TALL_GEMM=0: cuBLAS)
};

// The parts of the CUDA ops, on `ctx` and on the generic operations of `ops` (the object that
// owns them and the context). Same names as the CPU parts (dense/cpu_dense.hpp).
std::unique_ptr<DenseQueue> make_queue(CudaContext& ctx, DenseBlockOps& ops);
std::unique_ptr<SmallDense> make_small_dense(CudaContext& ctx);
std::unique_ptr<CgKernels> make_cg_kernels(CudaContext& ctx, DenseBlockOps& ops);
std::unique_ptr<ChebyshevKernels> make_chebyshev_kernels(CudaContext& ctx, DenseBlockOps& ops);

}  // namespace tcsolve::cuda_dense
