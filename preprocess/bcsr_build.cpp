// Bcsr construction: two passes over the rows of P·A, each block row handled by one thread.
//   pass 1: distinct block columns per block row  -> block_row_ptr (prefix sum, 64-bit)
//   pass 2: sorted block columns, then every non-zero scattered into its zero-padded h×w block.
// Per thread scratch: a stamp array and a slot array over block columns (2 · ceil(ncols/w) ints),
// reused for all the thread's block rows, so the work is O(nnz + nblocks · (h·w + log)).
#include "preprocess/bcsr_build.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"

namespace tcsolve {

void check_permutation(const std::vector<std::int32_t>& p, std::int64_t n, const char* what) {
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(p.size()) == n,
                  std::string(what) + ": length " + std::to_string(p.size()) + " != " +
                      std::to_string(n));
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::int32_t v = p[i];
    if (v < 0 || v >= n || seen[v])
      throw InvalidArgument(std::string(what) + ": not a permutation (entry " + std::to_string(i) +
                            " = " + std::to_string(v) + ")");
    seen[v] = 1;
  }
}

std::vector<std::int32_t> check_permutations(const std::vector<std::int32_t>& perm,
                                             const std::vector<std::int32_t>& col_perm,
                                             std::int64_t nrows, std::int64_t ncols) {
  if (!perm.empty()) check_permutation(perm, nrows, "row permutation");
  std::vector<std::int32_t> col_inv;
  if (!col_perm.empty()) {
    check_permutation(col_perm, ncols, "column permutation");
    col_inv.resize(col_perm.size());
    for (std::size_t j = 0; j < col_perm.size(); ++j) col_inv[col_perm[j]] = static_cast<std::int32_t>(j);
  }
  return col_inv;
}

namespace {

// Runs body(first, last, thread) over [0, n) split in one contiguous chunk per thread.
template <class F>
void for_chunks(std::int64_t n, F&& body) {
  const int nt = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(host_threads(), n / 64)));
  parallel_for(
      nt, [&](std::int64_t t) { body(n * t / nt, n * (t + 1) / nt, static_cast<int>(t)); }, 1);
}

}  // namespace

template <class T>
Bcsr<T> build_bcsr(const Csr<T>& a, int h, int w, const std::vector<std::int32_t>& perm,
                   const std::vector<std::int32_t>& col_perm) {
  TCSOLVE_REQUIRE(h >= 1 && w >= 1, "block shape must be at least 1x1");
  TCSOLVE_REQUIRE(a.ncols <= (std::int64_t(1) << 31) - 1, "too many columns for 32-bit indices");
  // col_inv[c] = stored column of A's column c.
  const std::vector<std::int32_t> col_inv = check_permutations(perm, col_perm, a.nrows, a.ncols);

  Bcsr<T> b;
  b.h = h;
  b.w = w;
  b.nrows = a.nrows;
  b.ncols = a.ncols;
  b.nnz = a.nnz();
  b.perm = perm;
  if (b.perm.empty()) {
    b.perm.resize(a.nrows);
    for (std::int64_t i = 0; i < a.nrows; ++i) b.perm[i] = static_cast<std::int32_t>(i);
  }
  b.col_perm = col_perm;
  const std::int64_t nbr = (a.nrows + h - 1) / h;
  const std::int64_t nbc = (a.ncols + w - 1) / w;
  const bool cmap = !col_inv.empty();
  const std::int32_t* pv = b.perm.data();
  const std::int32_t* ci = col_inv.data();

  // Calls f(bc) once for every distinct block column bc of block row r (stamp[bc] == r marks
  // the ones seen; stamp is the calling thread's scratch of nbc entries).
  auto for_each_new_block_col = [&](std::int64_t r, std::vector<std::int64_t>& stamp, auto&& f) {
    const std::int64_t i1 = std::min<std::int64_t>(a.nrows, (r + 1) * h);
    for (std::int64_t i = r * h; i < i1; ++i) {
      const std::int64_t src = pv[i];
      for (std::int64_t p = a.row_ptr[src]; p < a.row_ptr[src + 1]; ++p) {
        const std::int32_t c = cmap ? ci[a.col_idx[p]] : a.col_idx[p];
        const std::int32_t bc = c / w;
        if (stamp[bc] != r) {
          stamp[bc] = r;
          f(bc);
        }
      }
    }
  };

  // Pass 1: number of distinct block columns per block row.
  b.block_row_ptr.assign(nbr + 1, 0);
  for_chunks(nbr, [&](std::int64_t r0, std::int64_t r1, int) {
    std::vector<std::int64_t> stamp(nbc, -1);
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int64_t cnt = 0;
      for_each_new_block_col(r, stamp, [&](std::int32_t) { ++cnt; });
      b.block_row_ptr[r + 1] = cnt;
    }
  });
  for (std::int64_t r = 0; r < nbr; ++r) b.block_row_ptr[r + 1] += b.block_row_ptr[r];
  const std::int64_t nblocks = b.block_row_ptr[nbr];
  // (on huge pages: the zero fill of elast3d:40's 253 MB of block values is the build's largest step)
  resize_huge(b.block_col, static_cast<std::size_t>(nblocks));
  resize_huge(b.values, static_cast<std::size_t>(nblocks) * h * w);  // zero padding

  // Pass 2: sorted block columns, then values.
  const std::int64_t hw = static_cast<std::int64_t>(h) * w;
  for_chunks(nbr, [&](std::int64_t r0, std::int64_t r1, int) {
    std::vector<std::int64_t> stamp(nbc, -1);
    std::vector<std::int32_t> slot(nbc, 0);
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t base = b.block_row_ptr[r];
      std::int32_t* cols = b.block_col.data() + base;
      std::int64_t cnt = 0;
      for_each_new_block_col(r, stamp, [&](std::int32_t bc) { cols[cnt++] = bc; });
      const std::int64_t i1 = std::min<std::int64_t>(a.nrows, (r + 1) * h);
      std::sort(cols, cols + cnt);
      for (std::int64_t k = 0; k < cnt; ++k) slot[cols[k]] = static_cast<std::int32_t>(k);
      T* vals = b.values.data() + base * hw;
      for (std::int64_t i = r * h; i < i1; ++i) {
        const std::int64_t src = pv[i];
        const std::int64_t ri = (i - r * h) * w;
        for (std::int64_t p = a.row_ptr[src]; p < a.row_ptr[src + 1]; ++p) {
          const std::int32_t c = cmap ? ci[a.col_idx[p]] : a.col_idx[p];
          vals[slot[c / w] * hw + ri + c % w] = a.values[p];
        }
      }
    }
  });
  return b;
}

template Bcsr<double> build_bcsr(const Csr<double>&, int, int, const std::vector<std::int32_t>&,
                                 const std::vector<std::int32_t>&);
template Bcsr<float> build_bcsr(const Csr<float>&, int, int, const std::vector<std::int32_t>&,
                                const std::vector<std::int32_t>&);

}  // namespace tcsolve
