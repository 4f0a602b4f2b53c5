// A sparse operator over CSR arrays that the CALLER owns on the GPU (e.g. a CuPy csr_matrix's
// indptr/indices/data, reached through __cuda_array_interface__): Y = A·X with nothing copied
// or uploaded. Used by the Python module for zero-copy CuPy input (python/src/module.cpp).
//
// Contract: row_ptr (nrows + 1 int64), col_idx (nnz int32, any order within a row, duplicates
// summed) and values (nnz double) are device pointers that stay valid and unchanged for the
// operator's lifetime; the operator neither owns nor frees them. apply() launches one CUDA-core
// row-split kernel (one thread per row, up to 8 columns of X per pass in registers) on `stream`
// (cudaStream_t; pass the DenseBlockOps' stream so that it runs in order with the solver),
// asynchronously, allocating nothing. X and Y are device blocks (space() == Space::device).
// Bytes per apply (minimum): 12·nnz + 8·(nrows + 1) + 8·N·(ncols + nrows), A re-read from L1/L2
// once per 8 columns. The tuned kernels of make_sparse_operator need their own upload (and a
// plan); this view trades their speed for taking the caller's memory as it is.
// A CPU-only build throws NotCompiled from make_device_csr_view (device_csr_view_stub.cpp).
#pragma once
#include <cstdint>
#include <memory>

#include "core/operator.hpp"

namespace tcsolve {

std::unique_ptr<LinearOperator<double>> make_device_csr_view(std::int64_t nrows, std::int64_t ncols,
                                                             std::int64_t nnz,
                                                             const std::int64_t* row_ptr,
                                                             const std::int32_t* col_idx,
                                                             const double* values, void* stream);

// One pass over caller-owned device CSR arrays (sorted column indices within each row, as a
// canonical CuPy csr_matrix has them): what the Python module checks before solving, instead of
// CuPy's sparse a − aᵀ (a transpose, an addition and their allocations):
//   max_abs          max |a_ij|;
//   symmetry_defect  max |a_ij − a_ji| (a_ji looked up in row j by binary search; missing: 0);
//   inf_norm         ‖A‖∞ = max_i Σ_j |a_ij|;
//   diag             the stored diagonal into `diag` (n doubles on the device; may be null), and
//                    its smallest entry with the row (−1 when n = 0) and its largest;
//   nonfinite_at     the first entry index (in storage order) holding NaN/Inf, −1 when none;
//   unsorted_row     the first row whose column indices are not strictly increasing (unsorted or
//                    duplicated: not canonical, and then symmetry_defect is not meaningful), −1
//                    when none.
// Runs on `stream` and waits for it. Reads 12·nnz + 8·n bytes plus the looked-up entries (in L2).
// CPU twin: is_symmetric / csr_inf_norm / csr_diagonal (core/csr.hpp).
struct DeviceCsrCheck {
  double max_abs = 0.0, symmetry_defect = 0.0, inf_norm = 0.0, min_diag = 0.0, max_diag = 0.0;
  std::int64_t min_diag_row = -1, nonfinite_at = -1, unsorted_row = -1;
};
DeviceCsrCheck check_device_csr(std::int64_t n, std::int64_t nnz, const std::int64_t* row_ptr,
                                const std::int32_t* col_idx, const double* values, double* diag,
                                void* stream);

// Caller-owned device arrays turned into what the solvers take, with tcsolve's own kernels (the
// Python module: no CuPy kernel, hence nothing for CuPy to compile at a first call). Both run on
// `stream` and wait for it. CPU twins: a widening copy; x(i, j) = src[i·row_stride + j·col_stride].
//   widen_indices       dst[i] = src[i] for i < count (int32 → int64: CuPy's indptr to ours);
//   to_column_major     dst (n × s, column-major, ld = n) from a strided float64 n × s view
//                       (strides in elements, either order; e.g. a C-ordered CuPy block).
void widen_indices(const std::int32_t* src, std::int64_t* dst, std::int64_t count, void* stream);
void to_column_major(const double* src, std::int64_t row_stride, std::int64_t col_stride, std::int64_t n,
                     std::int64_t s, double* dst, void* stream);

}  // namespace tcsolve
