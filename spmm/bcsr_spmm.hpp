// Sparse × multivector through a Bcsr (CPU reference; spmm/bcsr_spmm.cu is the CUDA twin).
#pragma once
#include <cstdint>

#include "core/multivector.hpp"
#include "preprocess/bcsr.hpp"

namespace tcsolve {

// Y = A·X where b holds P·A (or P·A·Qᵀ when b.col_perm is set).
//   X: b.ncols × k, column-major, leading dimension ldx >= b.ncols  (original column order;
//      stored column j reads X row b.col_perm[j] when col_perm is set)
//   Y: b.nrows × k, column-major, leading dimension ldy >= b.nrows  (original row order:
//      row i of P·A·X is written to Y row b.perm[i]; every row of Y is written)
// Work: nblocks·h·w·k multiply-adds (padding included). Multithreaded over block rows; no
// allocation. X and Y must not alias. k >= 0.
template <class T>
void bcsr_spmm_host(const Bcsr<T>& b, const T* x, std::int64_t ldx, T* y, std::int64_t ldy, int k);

// Same on host views (x.rows == b.ncols, y.rows == b.nrows, x.cols == y.cols).
template <class T>
void bcsr_spmm_host(const Bcsr<T>& b, MvView<const T> x, MvView<T> y);

}  // namespace tcsolve
