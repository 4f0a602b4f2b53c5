// Internal to the CPU backend of DenseBlockOps (solvers/dense_ops.cpp and its parts: dense/queue.cpp,
// dense/small_dense.cpp, cg/cg_kernels.cpp, chebyshev/chebyshev_kernels.cpp): Eigen maps of
// blocks (never copies) and the parts' factories. The CUDA twin is dense/cuda_context.cuh.
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve::cpu_dense {

using Stride = Eigen::OuterStride<>;
using MatMap = Eigen::Map<Eigen::MatrixXd, 0, Stride>;
using CMatMap = Eigen::Map<const Eigen::MatrixXd, 0, Stride>;

inline MatMap map(MvView<double> v) { return MatMap(v.data, v.rows, v.cols, Stride(v.ld)); }
inline CMatMap map(MvView<const double> v) { return CMatMap(v.data, v.rows, v.cols, Stride(v.ld)); }

// Y[:, j] = X[:, idx[j]], j < count (fp64 and fp32 blocks).
template <class T>
void gather_host(MvView<const T> x, const std::int64_t* idx, std::int64_t count, MvView<T> y) {
  TCSOLVE_REQUIRE(count <= y.cols && x.rows == y.rows, "gather: shapes");
  for (std::int64_t j = 0; j < count; ++j) {
    TCSOLVE_REQUIRE(idx[j] >= 0 && idx[j] < x.cols, "gather: index out of range");
    std::copy(x.col(idx[j]), x.col(idx[j]) + x.rows, y.col(j));
  }
}

// ---- Threaded passes over tall blocks: the rows cut into parts whose count depends on n alone
// (kPartRows rows or more each, at most kMaxParts), the parts handed to the host pool's threads
// (parallel_parts), partial sums added in part order: a result does not depend on the thread
// count. Eigen here is compiled for baseline x86-64 (SSE2) and single-threaded; the products
// run on OpenBLAS's kernels for the CPU, one OpenBLAS thread each (OneBlasThread).
constexpr std::int64_t kPartRows = 4096;
constexpr std::int64_t kMaxParts = 256;
inline std::int64_t row_part_count(std::int64_t n) {
  return std::clamp<std::int64_t>(n / kPartRows, 1, kMaxParts);
}
inline std::int64_t row_part_begin(std::int64_t n, std::int64_t parts, std::int64_t p) { return n * p / parts; }

// OpenBLAS on one thread for a scope (where active), set and restored on the calling thread: its
// own pool's threads spin after a call and took CPUs from the host pool and the engines.
class OneBlasThread {
 public:
  explicit OneBlasThread(bool active = true);
  ~OneBlasThread();
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int saved_ = 1;
};

// C (m × n, ldc) = alpha·op(A)·B + beta·C, op(A) = Aᵀ (A k × m) or A (m × k), on the calling
// thread: OpenBLAS where found and shaped for it (dense_ops.cpp: blas_gemm's rules), else Eigen.
// Under a OneBlasThread when called from several threads at once.
void gemm_here(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
               std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc);

// body(p, first_row, end_row) for every part of n rows (row_part_count), on the host pool.
template <class F>
void for_row_parts(std::int64_t n, F&& body) {
  const std::int64_t parts = row_part_count(n);
  OneBlasThread one;
  parallel_parts(static_cast<int>(parts), [&](int p) {
    body(p, row_part_begin(n, parts, p), row_part_begin(n, parts, p + 1));
  });
}

// out (rows × cols, ldo) = alpha·Σ_p partial[p] + beta·out (partial[p]: rows × cols, ld rows),
// added in part order; beta = 0 ignores out's old values.
inline void sum_parts(const double* partial, std::int64_t parts, std::int64_t rows, std::int64_t cols,
                      double alpha, double beta, double* out, std::int64_t ldo) {
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      double acc = 0.0;
      for (std::int64_t p = 0; p < parts; ++p) acc += partial[(p * cols + j) * rows + i];
      out[i + j * ldo] = beta == 0.0 ? alpha * acc : alpha * acc + beta * out[i + j * ldo];
    }
}

// G (x.cols × y.cols, ldg) = alpha·XᵀY + beta·G over row parts (partial: grown to parts·x.cols·
// y.cols once); false, with nothing done, where X has fewer than two parts' rows.
inline bool parted_gram(double alpha, MvView<const double> x, MvView<const double> y, double beta, double* g,
                        std::int64_t ldg, std::vector<double>& partial) {
  const std::int64_t parts = row_part_count(x.rows), r = x.cols, c = y.cols;
  if (parts < 2 || r == 0 || c == 0) return false;
  if (partial.size() < static_cast<std::size_t>(parts * r * c)) partial.resize(static_cast<std::size_t>(parts * r * c));
  double* pp = partial.data();
  for_row_parts(x.rows, [&](std::int64_t p, std::int64_t b, std::int64_t e) {
    gemm_here(true, r, c, e - b, 1.0, x.data + b, x.ld, y.data + b, y.ld, 0.0, pp + p * r * c, r);
  });
  sum_parts(pp, parts, r, c, alpha, beta, g, ldg);
  return true;
}

// Y = alpha·X·C + beta·Y (C: x.cols × y.cols, ldc) over row parts; false where Y has fewer
// than two parts' rows.
inline bool parted_gemm(double alpha, MvView<const double> x, const double* c, std::int64_t ldc, double beta,
                        MvView<double> y) {
  if (row_part_count(y.rows) < 2 || y.cols == 0) return false;
  for_row_parts(y.rows, [&](std::int64_t, std::int64_t b, std::int64_t e) {
    gemm_here(false, e - b, y.cols, x.cols, alpha, x.data + b, x.ld, c, ldc, beta, y.data + b, y.ld);
  });
  return true;
}

// The parts of the CPU ops (each on the generic operations of `ops`, the object that owns it).
// scratch: the generic ops' n × r workspace (multiply_inplace), shared with the direction pass.
std::unique_ptr<DenseQueue> make_queue(DenseBlockOps& ops);
std::unique_ptr<SmallDense> make_small_dense();
std::unique_ptr<CgKernels> make_cg_kernels(DenseBlockOps& ops, std::vector<double>& scratch);
std::unique_ptr<ChebyshevKernels> make_chebyshev_kernels(DenseBlockOps& ops);

}  // namespace tcsolve::cpu_dense
