// Row gathers and sparse row updates of column-major blocks (fp64 or fp32): packing the rows a
// peer needs into a send buffer, and adding the boundary product of a peer's halo into the rows
// it belongs to. Host and CUDA versions (row_copy.cpp / row_copy.cu), dispatched on the blocks'
// space; on the GPU they run on `stream`. Instantiated for double and float.
#pragma once
#include <cstdint>

#include "core/multivector.hpp"

namespace tcsolve {

// Y(i, j) = X(rows[i], j) for i < Y.rows, j < Y.cols (rows in X's space, Y.cols ≤ X.cols).
// Reads and writes sizeof(T) bytes per entry of Y.
template <class T>
void gather_rows(const std::int32_t* rows, MvView<const T> x, MvView<T> y, void* stream);

// A few sparse rows in the blocks' space: row i (< nrows) holds entries [row_ptr[i], row_ptr[i+1])
// with columns col[] and values val[], and is added to row out_row[i] of Y.
struct SparseRows {
  std::int64_t nrows = 0;
  const std::int64_t* row_ptr = nullptr;
  const std::int32_t* col = nullptr;
  const double* val = nullptr;
  const std::int32_t* out_row = nullptr;  // distinct
};
// Y(out_row[i], j) += s·Σ_e val[e]·X(col[e], j) for every sparse row i and column j < X.cols,
// accumulated in double (then rounded to T). Reads the rows' entries and sizeof(T) of X per entry,
// reads and writes the updated entries of Y.
template <class T>
void sparse_rows_add(const SparseRows& a, double s, MvView<const T> x, MvView<T> y, void* stream);

namespace detail {
template <class T>
void gather_rows_cuda(const std::int32_t* rows, MvView<const T> x, MvView<T> y, void* stream);
template <class T>
void sparse_rows_add_cuda(const SparseRows& a, double s, MvView<const T> x, MvView<T> y,
                          void* stream);
}  // namespace detail

}  // namespace tcsolve
