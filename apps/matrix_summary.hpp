// What `tcsolve info` reports about a matrix: shape, symmetry (declared and measured),
// row-length statistics, diagonal, value range. One pass over the CSR arrays plus one
// transposed lookup per entry for the symmetry defect (O(nnz log(row length))).
#pragma once
#include <cstdint>
#include <string>

#include "core/csr.hpp"

namespace tcsolve::app {

struct MatrixSummary {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  std::string declared_symmetry;  // what the source said: general / symmetric / skew-symmetric
  // max_ij |a_ij - a_ji| / max|a| over the stored values (square only; 0 = exactly symmetric).
  // NaN when the matrix is not square.
  double symmetry_defect = 0;
  // Row lengths (entries per row, explicit zeros included).
  std::int64_t row_min = 0, row_max = 0;
  double row_mean = 0, row_std = 0;  // population standard deviation
  std::int64_t empty_rows = 0;
  // Diagonal over min(nrows, ncols) positions: entries present, and of those how many are zero.
  std::int64_t diag_present = 0, diag_missing = 0, diag_zero = 0;
  std::int64_t bandwidth = 0;  // max |i - j| over stored entries
  double abs_min = 0, abs_max = 0;  // smallest / largest |a_ij| over stored entries
  std::int64_t nonfinite = 0;       // NaN/Inf entries (only when the reader allowed them)
};

MatrixSummary summarize(const Csr<double>& a);

}  // namespace tcsolve::app
