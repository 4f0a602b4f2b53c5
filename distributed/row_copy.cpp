#include "distributed/row_copy.hpp"

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve {

void gather_rows(const std::int32_t* rows, MvView<const double> x, MvView<double> y,
                 void* stream) {
  TCSOLVE_REQUIRE(x.space == y.space && y.cols <= x.cols, "gather_rows: blocks disagree");
  if (y.rows == 0 || y.cols == 0) return;
  if (y.space == Space::device) return detail::gather_rows_cuda(rows, x, y, stream);
  for (std::int64_t j = 0; j < y.cols; ++j) {
    const double* xs = x.col(j);
    double* ys = y.col(j);
    for (std::int64_t i = 0; i < y.rows; ++i) ys[i] = xs[rows[i]];
  }
}

void scatter_add_rows(const std::int32_t* rows, double s, MvView<const double> x, MvView<double> y,
                      void* stream) {
  TCSOLVE_REQUIRE(x.space == y.space && x.cols <= y.cols, "scatter_add_rows: blocks disagree");
  if (x.rows == 0 || x.cols == 0) return;
  if (y.space == Space::device) return detail::scatter_add_rows_cuda(rows, s, x, y, stream);
  for (std::int64_t j = 0; j < x.cols; ++j) {
    const double* xs = x.col(j);
    double* ys = y.col(j);
    for (std::int64_t i = 0; i < x.rows; ++i) ys[rows[i]] += s * xs[i];
  }
}

}  // namespace tcsolve
