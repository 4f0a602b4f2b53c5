// Block CSR: the matrix P·A cut into dense h×w blocks (zero-padded), for the tensor-core SpMM.
#pragma once
#include <cstdint>
#include <vector>

#include "core/csr.hpp"

namespace tcsolve {

template <class T>
struct Bcsr {
  int h = 8;                      // block rows (e.g. 8 for fp64 m8n8k4, 16 for fp16 m16n8k16)
  int w = 4;                      // block cols (4 for fp64 DMMA, 8 or 16 for fp16/bf16)
  std::int64_t nrows = 0;         // rows of A (not padded)
  std::int64_t ncols = 0;         // cols of A (not padded)
  std::int64_t nnz = 0;           // non-zeros of A (explicit zeros included)
  // Block rows: nblock_rows = ceil(nrows / h). Block row r covers rows [r·h, r·h + h) of P·A.
  std::vector<std::int64_t> block_row_ptr{0};  // [nblock_rows + 1]
  std::vector<std::int32_t> block_col;         // [nblocks], block-column index (cols c·w..c·w+w-1)
  // Block values, block after block, each h×w row-major: values[(b·h + r)·w + c].
  std::vector<T> values;                       // [nblocks · h · w]
  // Row permutation: row i of P·A is row perm[i] of A (perm.size() == nrows). Identity when no
  // reordering was applied. The SpMM writes row i of its result to Y[perm[i]].
  std::vector<std::int32_t> perm;
  // Column permutation (symmetric reordering only): column j of the stored matrix is column
  // col_perm[j] of A, i.e. the stored matrix is P·A·Qᵀ and Y = A·X reads X[col_perm[j]] for
  // stored column j. Empty = identity (the usual row-only case A' = P·A).
  std::vector<std::int32_t> col_perm;

  std::int64_t nblock_rows() const { return static_cast<std::int64_t>(block_row_ptr.size()) - 1; }
  std::int64_t nblocks() const { return block_row_ptr.empty() ? 0 : block_row_ptr.back(); }
};

}  // namespace tcsolve
