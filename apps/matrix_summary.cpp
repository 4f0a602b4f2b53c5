#include "apps/matrix_summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.hpp"

namespace tcsolve::app {

namespace {

// Per-thread partial results of the row pass, merged after parallel_for.
struct RowPart {
  std::int64_t row_min = std::numeric_limits<std::int64_t>::max(), row_max = 0;
  double sum = 0, sum_sq = 0;
  std::int64_t empty = 0, diag_present = 0, diag_zero = 0, bandwidth = 0, nonfinite = 0;
  double abs_min = std::numeric_limits<double>::infinity(), abs_max = 0, defect = 0;
};

}  // namespace

MatrixSummary summarize(const Csr<double>& a) {
  MatrixSummary s;
  s.nrows = a.nrows;
  s.ncols = a.ncols;
  s.nnz = a.nnz();
  s.declared_symmetry = to_string(a.symmetry);
  const std::int64_t ndiag = std::min(a.nrows, a.ncols);
  const bool square = a.square();

  // Rows in chunks; each chunk owns one RowPart (no sharing, no atomics).
  const std::int64_t chunk = 1 << 14;
  const std::int64_t nchunks = (a.nrows + chunk - 1) / chunk;
  std::vector<RowPart> parts(static_cast<std::size_t>(std::max<std::int64_t>(nchunks, 1)));
  parallel_for(
      nchunks,
      [&](std::int64_t c) {
        RowPart& p = parts[c];
        const std::int64_t b = c * chunk, e = std::min(a.nrows, b + chunk);
        for (std::int64_t i = b; i < e; ++i) {
          const std::int64_t lo = a.row_ptr[i], hi = a.row_ptr[i + 1], len = hi - lo;
          p.row_min = std::min(p.row_min, len);
          p.row_max = std::max(p.row_max, len);
          p.sum += static_cast<double>(len);
          p.sum_sq += static_cast<double>(len) * static_cast<double>(len);
          if (len == 0) ++p.empty;
          for (std::int64_t q = lo; q < hi; ++q) {
            const std::int64_t j = a.col_idx[q];
            const double v = a.values[q];
            p.bandwidth = std::max(p.bandwidth, i > j ? i - j : j - i);
            if (!std::isfinite(v)) {
              ++p.nonfinite;
              continue;
            }
            p.abs_min = std::min(p.abs_min, std::abs(v));
            p.abs_max = std::max(p.abs_max, std::abs(v));
            if (j == i) {
              ++p.diag_present;
              if (v == 0.0) ++p.diag_zero;
            }
            if (square) {
              // a_ji by binary search in row j (columns are sorted); absent = 0.
              auto rb = a.col_idx.begin() + a.row_ptr[j], re = a.col_idx.begin() + a.row_ptr[j + 1];
              auto it = std::lower_bound(rb, re, static_cast<std::int32_t>(i));
              double aji = (it != re && *it == i) ? a.values[it - a.col_idx.begin()] : 0.0;
              if (std::isfinite(aji)) p.defect = std::max(p.defect, std::abs(v - aji));
            }
          }
        }
      },
      1);

  RowPart t;
  for (const RowPart& p : parts) {
    t.row_min = std::min(t.row_min, p.row_min);
    t.row_max = std::max(t.row_max, p.row_max);
    t.sum += p.sum;
    t.sum_sq += p.sum_sq;
    t.empty += p.empty;
    t.diag_present += p.diag_present;
    t.diag_zero += p.diag_zero;
    t.bandwidth = std::max(t.bandwidth, p.bandwidth);
    t.nonfinite += p.nonfinite;
    t.abs_min = std::min(t.abs_min, p.abs_min);
    t.abs_max = std::max(t.abs_max, p.abs_max);
    t.defect = std::max(t.defect, p.defect);
  }
  if (a.nrows > 0) {
    const double n = static_cast<double>(a.nrows);
    s.row_min = t.row_min;
    s.row_max = t.row_max;
    s.row_mean = t.sum / n;
    s.row_std = std::sqrt(std::max(0.0, t.sum_sq / n - s.row_mean * s.row_mean));
  }
  s.empty_rows = t.empty;
  s.diag_present = t.diag_present;
  s.diag_missing = ndiag - t.diag_present;
  s.diag_zero = t.diag_zero;
  s.bandwidth = t.bandwidth;
  s.nonfinite = t.nonfinite;
  s.abs_min = std::isfinite(t.abs_min) ? t.abs_min : 0.0;
  s.abs_max = t.abs_max;
  if (!square) s.symmetry_defect = std::numeric_limits<double>::quiet_NaN();
  else s.symmetry_defect = t.abs_max > 0 ? t.defect / t.abs_max : t.defect;
  return s;
}

}  // namespace tcsolve::app
