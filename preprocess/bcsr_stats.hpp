// Statistics of a block-CSR layout: how many h×w blocks, how full, how balanced, how many bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "preprocess/bcsr.hpp"

namespace tcsolve {

struct BcsrStats {
  int h = 0, w = 0;
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  std::int64_t nblock_rows = 0;
  std::int64_t nblocks = 0;
  double fill = 0;                   // nnz / (nblocks·h·w), 0 when there are no blocks
  double blocks_per_row_mean = 0;    // over block rows
  double blocks_per_row_std = 0;     // population standard deviation
  std::int64_t blocks_per_row_max = 0;
  // values (nblocks·h·w·value_bytes) + block_col (4·nblocks) + block_row_ptr (8·(nblock_rows+1))
  // + perm (4·nrows) + col_perm (4·ncols, only when present).
  std::int64_t bytes = 0;
};

// Statistics of a built Bcsr (value_bytes = sizeof(T)).
template <class T>
BcsrStats bcsr_stats(const Bcsr<T>& b);

// The same statistics for the Bcsr that build_bcsr(a, h, w, perm, col_perm) would produce,
// without building it (pattern only, O(nnz), multithreaded, no values touched). value_bytes is
// the size of a stored value (8 fp64, 4 fp32, 2 fp16/bf16).
template <class T>
BcsrStats block_stats(const Csr<T>& a, int h, int w, const std::vector<std::int32_t>& perm = {},
                      const std::vector<std::int32_t>& col_perm = {}, int value_bytes = 8);

// Only the block count (same cost as block_stats).
template <class T>
std::int64_t count_blocks(const Csr<T>& a, int h, int w, const std::vector<std::int32_t>& perm = {},
                          const std::vector<std::int32_t>& col_perm = {});

// "8x4: 1234567 blocks, fill 0.210, blocks/block-row 9.9 ± 1.2 (max 14), 98.8 MB".
std::string describe(const BcsrStats& s);

}  // namespace tcsolve
