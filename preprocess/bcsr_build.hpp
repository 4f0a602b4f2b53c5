// Building a Bcsr from a Csr (after an optional row permutation) and its statistics.
#pragma once
#include <cstdint>
#include <vector>

#include "core/csr.hpp"
#include "preprocess/bcsr.hpp"

namespace tcsolve {

// Bcsr of P·A with block shape h×w (any h, w >= 1; the last block row/column is zero-padded).
// perm empty = identity. Row i of P·A is row perm[i] of A. Optional col_perm (empty = identity):
// the stored matrix is P·A·Qᵀ, stored column j = column col_perm[j] of A (see Bcsr::col_perm).
// Both permutations are checked (InvalidArgument). Block columns inside a block row are sorted.
// Multithreaded over block rows; two passes over A (count, then fill). Cost O(nnz + nblocks·h·w).
template <class T>
Bcsr<T> build_bcsr(const Csr<T>& a, int h, int w, const std::vector<std::int32_t>& perm = {},
                   const std::vector<std::int32_t>& col_perm = {});

// Throws InvalidArgument unless p is a permutation of [0, n).
void check_permutation(const std::vector<std::int32_t>& p, std::int64_t n, const char* what);

// The checks of build_bcsr's permutations (row perm of A's rows, col_perm of its columns) and
// the inverse of col_perm: inv[c] = the stored column of A's column c (empty for an empty
// col_perm: the identity).
std::vector<std::int32_t> check_permutations(const std::vector<std::int32_t>& perm,
                                             const std::vector<std::int32_t>& col_perm,
                                             std::int64_t nrows, std::int64_t ncols);

}  // namespace tcsolve
