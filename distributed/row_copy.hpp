// Row gathers and scatters of column-major blocks: packing the rows a peer needs into a send
// buffer, and adding a boundary product into the rows it belongs to. Host and CUDA versions
// (row_copy.cpp / row_copy.cu), dispatched on the blocks' space; on the GPU they run on `stream`.
#pragma once
#include <cstdint>

#include "core/multivector.hpp"

namespace tcsolve {

// Y(i, j) = X(rows[i], j) for i < Y.rows, j < Y.cols (rows in X's space, Y.cols ≤ X.cols).
// Reads 8 bytes of X and writes 8 of Y per entry of Y.
void gather_rows(const std::int32_t* rows, MvView<const double> x, MvView<double> y, void* stream);
// Y(rows[i], j) += s·X(i, j) for i < X.rows, j < X.cols (rows distinct).
void scatter_add_rows(const std::int32_t* rows, double s, MvView<const double> x, MvView<double> y,
                      void* stream);

namespace detail {
void gather_rows_cuda(const std::int32_t* rows, MvView<const double> x, MvView<double> y,
                      void* stream);
void scatter_add_rows_cuda(const std::int32_t* rows, double s, MvView<const double> x,
                           MvView<double> y, void* stream);
}  // namespace detail

}  // namespace tcsolve
