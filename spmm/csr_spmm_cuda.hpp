// CUDA-core CSR × multivector (spmm/csr_spmm.cu). Host-compilable interface on device pointers.
//
// Y (m×N) = A (m×n) · X (n×N), X and Y column-major double with leading dimensions.
// Two kernels:
//   group == 1  row-split: one thread per row, 8 columns of X per pass held in registers; lanes
//               are consecutive rows, so X gathers and Y stores coalesce for banded matrices.
//   group 4/8/32 segment-split: every row is cut into segments of at most 16·group non-zeros; a
//               group of `group` lanes reduces one segment (shuffles) — long rows are shared by
//               several groups (the non-zero split of Yang, Buluç, Owens), whose partial sums
//               meet with atomicAdd on rows zeroed by a small pre-pass.
// Bytes per apply (minimum): nnz·(sizeof(value)+4) + 8·(m+1) + 8·N·(n+m).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/csr.hpp"
#include "core/device_buffer.hpp"
#include "core/types.hpp"

namespace tcsolve {

class CsrSpmmDevice {
 public:
  // Uploads A with its values rounded to `precision` (fp64, fp32, fp16, bf16; accumulation is
  // always fp64). group: 1 (row-split) or 4, 8, 32 (segment-split).
  // stage_cols > 0 (segment-split only): X is first copied row-major into a workspace of up to
  // that many columns (8·ncols·cap bytes, allocated here), and lanes run over columns instead of
  // non-zeros (csr_segment_rm_kernel): random long rows gather whole X-row pieces.
  // tiled_rows (row-split only): each CTA first copies its 128 rows' non-zeros into shared
  // memory (coalesced; up to 1024 per CTA, else it reads A directly) — csr_row_tiled_kernel.
  CsrSpmmDevice(const Csr<double>& a, Precision precision, int group, int stage_cols = 0,
                bool tiled_rows = false);
  // Aᵀ (n × m) made on the device from A's fp64 arrays there (A m × n; nnz, m and n below 2^31):
  // cuSPARSE's CSR→CSC on `stream`, written into the new operator's own arrays (each row of Aᵀ in
  // ascending column order, deterministic); neither A nor Aᵀ passes through the host. Aᵀ's row
  // offsets come back in row_ptr_out (n + 1) for the caller's plan and relayout(). Peak device
  // memory beyond Aᵀ (12·nnz + 8·n bytes): cuSPARSE's buffer and 4·(m + n) bytes of 32-bit
  // offsets. Row-split layout until relayout(). Synchronises `stream`.
  static std::unique_ptr<CsrSpmmDevice> transposed(const std::int64_t* rp, const std::int32_t* ci,
                                                   const double* v, std::int64_t m, std::int64_t n,
                                                   std::int64_t nnz, void* stream,
                                                   std::vector<std::int64_t>& row_ptr_out);
  // Another kernel layout on the same upload (group, X staging, tiled rows: as the constructor's
  // arguments), e.g. the next candidate of the construction-time trial. row_ptr: the matrix's row
  // offsets on the host, from which the segments are cut (O(rows)). Not while an apply runs.
  void relayout(const std::vector<std::int64_t>& row_ptr, int group, int stage_cols, bool tiled_rows);
  // Y = A·X on `stream` (cudaStream_t, nullptr = default). Asynchronous; no allocation.
  void apply(const double* x, std::int64_t ldx, double* y, std::int64_t ldy, int ncols_x,
             void* stream) const;

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  int group() const { return group_; }
  bool tiled_rows() const { return tiled_rows_; }
  std::int64_t segments() const { return nseg_; }
  // The segments run in the order of their relative position in their rows rather than row by
  // row: set by relayout where the staged X exceeds about half of L2 and rows are cut (csr_spmm.cu).
  bool interleaved() const { return interleaved_; }
  int stage_cols() const { return stage_cols_; }
  std::size_t device_bytes() const;
  // A's arrays as uploaded (row order and values as given; values in precision()).
  const std::int64_t* row_ptr() const { return row_ptr_.get(); }
  const std::int32_t* col_idx() const { return col_.get(); }
  const void* values() const { return values_.get(); }
  Precision precision() const { return precision_; }

 private:
  CsrSpmmDevice() = default;
  std::int64_t rows_ = 0, cols_ = 0, nnz_ = 0;
  Precision precision_ = Precision::fp64;
  int group_ = 1;
  bool tiled_rows_ = false;
  DeviceArray<std::int64_t> row_ptr_;
  DeviceArray<std::int32_t> col_;
  DeviceArray<unsigned char> values_;  // nnz elements of the storage precision
  // Segment split (group > 1): segment s covers non-zeros [seg_begin_[s], seg_end_[s]) of row
  // seg_row_[s]; seg_row_ is stored as ~row (negative) when the row has several segments.
  std::int64_t nseg_ = 0;
  bool interleaved_ = false;
  DeviceArray<std::int32_t> seg_row_;
  DeviceArray<std::int64_t> seg_begin_, seg_end_;
  DeviceArray<std::int32_t> zero_rows_;  // rows with several segments (zeroed before atomics)
  int stage_cols_ = 0;
  DeviceArray<double> stage_;            // row-major X staging [ncols × width]
};

// xs (rows_pad × width, row-major) = X[:, 0:kc] (column-major, ldx), zero-padded.
void stage_row_major_device(const double* x, std::int64_t ldx, std::int64_t rows, int kc,
                            double* xs, std::int64_t rows_pad, int width, void* stream);

// Zeroes Y rows listed in rows[0..nrows_list) for columns [0, ncols) (kernel in csr_spmm.cu).
// T: double or float.
template <class T>
void zero_rows_device(const std::int32_t* rows, std::int64_t nrows_list, T* y, std::int64_t ldy,
                      int ncols, void* stream);

// out (rows×cols, ld_out, fp16 or bf16 per `to`) = round(x), or round(x[gather[r], :]) for row
// r when gather is given (symmetric reordering). Used to feed the 16-bit kernels.
void convert_multivector_device(const double* x, std::int64_t ldx, void* out, std::int64_t ld_out,
                                std::int64_t rows, int cols, Precision to, void* stream,
                                const std::int32_t* gather = nullptr);

// Row permutation of a block (rows × cols, column-major, own leading dimensions), grid-stride:
// scatter == false: y[i, :] = x[perm[i], :]; scatter == true: y[perm[i], :] = x[i, :].
void permute_rows_device(const double* x, std::int64_t ldx, double* y, std::int64_t ldy,
                         std::int64_t rows, std::int64_t cols, const std::int32_t* perm,
                         bool scatter, void* stream);

}  // namespace tcsolve
