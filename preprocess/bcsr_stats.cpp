// Block statistics. Counting uses one stamp array over block columns per thread:
// block row r touches block column c iff some row of r has a column in c·w..c·w+w-1.
#include "preprocess/bcsr_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "preprocess/bcsr_build.hpp"

namespace tcsolve {

namespace {

BcsrStats finish(int h, int w, std::int64_t nrows, std::int64_t ncols, std::int64_t nnz,
                 const std::vector<std::int64_t>& per_row, bool has_col_perm, int value_bytes) {
  BcsrStats s;
  s.h = h;
  s.w = w;
  s.nrows = nrows;
  s.ncols = ncols;
  s.nnz = nnz;
  s.nblock_rows = static_cast<std::int64_t>(per_row.size());
  double sum = 0, sum2 = 0;
  for (std::int64_t c : per_row) {
    s.nblocks += c;
    sum += static_cast<double>(c);
    sum2 += static_cast<double>(c) * static_cast<double>(c);
    s.blocks_per_row_max = std::max(s.blocks_per_row_max, c);
  }
  if (s.nblock_rows > 0) {
    s.blocks_per_row_mean = sum / static_cast<double>(s.nblock_rows);
    s.blocks_per_row_std = std::sqrt(std::max(
        0.0, sum2 / static_cast<double>(s.nblock_rows) - s.blocks_per_row_mean * s.blocks_per_row_mean));
  }
  const double stored = static_cast<double>(s.nblocks) * h * w;
  s.fill = stored > 0 ? static_cast<double>(nnz) / stored : 0.0;
  s.bytes = s.nblocks * h * w * value_bytes + 4 * s.nblocks + 8 * (s.nblock_rows + 1) + 4 * nrows +
            (has_col_perm ? 4 * ncols : 0);
  return s;
}

// Blocks per block row of the Bcsr of P·A·Qᵀ (pattern only).
template <class T>
std::vector<std::int64_t> blocks_per_block_row(const Csr<T>& a, int h, int w,
                                               const std::vector<std::int32_t>& perm,
                                               const std::vector<std::int32_t>& col_perm) {
  TCSOLVE_REQUIRE(h >= 1 && w >= 1, "block shape must be at least 1x1");
  const std::vector<std::int32_t> col_inv = check_permutations(perm, col_perm, a.nrows, a.ncols);
  const std::int64_t nbr = (a.nrows + h - 1) / h, nbc = (a.ncols + w - 1) / w;
  std::vector<std::int64_t> out(nbr, 0);
  const int nt = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(host_threads(), nbr / 64)));
  parallel_for(
      nt,
      [&](std::int64_t t) {
        std::vector<std::int64_t> stamp(nbc, -1);
        for (std::int64_t r = nbr * t / nt; r < nbr * (t + 1) / nt; ++r) {
          std::int64_t cnt = 0;
          for (std::int64_t i = r * h; i < std::min<std::int64_t>(a.nrows, (r + 1) * h); ++i) {
            const std::int64_t src = perm.empty() ? i : perm[i];
            for (std::int64_t p = a.row_ptr[src]; p < a.row_ptr[src + 1]; ++p) {
              const std::int32_t c = col_inv.empty() ? a.col_idx[p] : col_inv[a.col_idx[p]];
              if (stamp[c / w] != r) {
                stamp[c / w] = r;
                ++cnt;
              }
            }
          }
          out[r] = cnt;
        }
      },
      1);
  return out;
}

}  // namespace

template <class T>
BcsrStats bcsr_stats(const Bcsr<T>& b) {
  std::vector<std::int64_t> per_row(b.nblock_rows());
  for (std::int64_t r = 0; r < b.nblock_rows(); ++r) per_row[r] = b.block_row_ptr[r + 1] - b.block_row_ptr[r];
  return finish(b.h, b.w, b.nrows, b.ncols, b.nnz, per_row, !b.col_perm.empty(), sizeof(T));
}

template <class T>
BcsrStats block_stats(const Csr<T>& a, int h, int w, const std::vector<std::int32_t>& perm,
                      const std::vector<std::int32_t>& col_perm, int value_bytes) {
  return finish(h, w, a.nrows, a.ncols, a.nnz(), blocks_per_block_row(a, h, w, perm, col_perm),
                !col_perm.empty(), value_bytes);
}

template <class T>
std::int64_t count_blocks(const Csr<T>& a, int h, int w, const std::vector<std::int32_t>& perm,
                          const std::vector<std::int32_t>& col_perm) {
  std::int64_t n = 0;
  for (std::int64_t c : blocks_per_block_row(a, h, w, perm, col_perm)) n += c;
  return n;
}

std::string describe(const BcsrStats& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%dx%d: %lld blocks, fill %.3f, blocks/block-row %.2f ± %.2f (max %lld), %.1f MB",
                s.h, s.w, static_cast<long long>(s.nblocks), s.fill, s.blocks_per_row_mean,
                s.blocks_per_row_std, static_cast<long long>(s.blocks_per_row_max), s.bytes / 1e6);
  return buf;
}

template BcsrStats bcsr_stats(const Bcsr<double>&);
template BcsrStats bcsr_stats(const Bcsr<float>&);
template BcsrStats block_stats(const Csr<double>&, int, int, const std::vector<std::int32_t>&,
                               const std::vector<std::int32_t>&, int);
template BcsrStats block_stats(const Csr<float>&, int, int, const std::vector<std::int32_t>&,
                               const std::vector<std::int32_t>&, int);
template std::int64_t count_blocks(const Csr<double>&, int, int, const std::vector<std::int32_t>&,
                                   const std::vector<std::int32_t>&);
template std::int64_t count_blocks(const Csr<float>&, int, int, const std::vector<std::int32_t>&,
                                   const std::vector<std::int32_t>&);

}  // namespace tcsolve
