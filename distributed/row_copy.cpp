#include "distributed/row_copy.hpp"

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve {

template <class T>
void gather_rows(const std::int32_t* rows, MvView<const T> x, MvView<T> y, void* stream) {
  TCSOLVE_REQUIRE(x.space == y.space && y.cols <= x.cols, "gather_rows: blocks disagree");
  if (y.rows == 0 || y.cols == 0) return;
  if (y.space == Space::device) return detail::gather_rows_cuda<T>(rows, x, y, stream);
  for (std::int64_t j = 0; j < y.cols; ++j) {
    const T* xs = x.col(j);
    T* ys = y.col(j);
    for (std::int64_t i = 0; i < y.rows; ++i) ys[i] = xs[rows[i]];
  }
}

template <class T>
void sparse_rows_add(const SparseRows& a, double s, MvView<const T> x, MvView<T> y, void* stream) {
  TCSOLVE_REQUIRE(x.space == y.space && x.cols <= y.cols, "sparse_rows_add: blocks disagree");
  if (a.nrows == 0 || x.cols == 0) return;
  if (y.space == Space::device) return detail::sparse_rows_add_cuda<T>(a, s, x, y, stream);
  for (std::int64_t j = 0; j < x.cols; ++j) {
    const T* xs = x.col(j);
    T* ys = y.col(j);
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      double acc = 0.0;
      for (std::int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
        acc += a.val[e] * static_cast<double>(xs[a.col[e]]);
      ys[a.out_row[i]] = static_cast<T>(static_cast<double>(ys[a.out_row[i]]) + s * acc);
    }
  }
}

template void gather_rows<double>(const std::int32_t*, MvView<const double>, MvView<double>, void*);
template void gather_rows<float>(const std::int32_t*, MvView<const float>, MvView<float>, void*);
template void sparse_rows_add<double>(const SparseRows&, double, MvView<const double>,
                                      MvView<double>, void*);
template void sparse_rows_add<float>(const SparseRows&, double, MvView<const float>, MvView<float>,
                                     void*);

}  // namespace tcsolve
