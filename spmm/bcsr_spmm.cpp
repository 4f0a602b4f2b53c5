// CPU reference BCSR SpMM. One thread handles a contiguous range of block rows; for each row of a
// block row it accumulates up to kChunk columns of Y in registers over the row's blocks:
//   y[perm[i], c] = Σ_blocks Σ_{cc<w} vals[blk][rr][cc] · x[col(bc·w + cc), c]
// Reads: values once per chunk of kChunk columns of X, X rows gathered per block column.
#include "spmm/bcsr_spmm.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve {

template <class T>
void bcsr_spmm_host(const Bcsr<T>& b, const T* x, std::int64_t ldx, T* y, std::int64_t ldy, int k) {
  TCSOLVE_REQUIRE(k >= 0, "negative number of columns");
  if (k == 0 || b.nrows == 0) return;
  TCSOLVE_REQUIRE(ldx >= b.ncols && ldy >= b.nrows, "leading dimension too small");
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(b.perm.size()) == b.nrows, "Bcsr without row permutation");
  TCSOLVE_REQUIRE(b.col_perm.empty() || static_cast<std::int64_t>(b.col_perm.size()) == b.ncols,
                  "Bcsr column permutation has the wrong length");
  const int h = b.h, w = b.w;
  const std::int64_t hw = static_cast<std::int64_t>(h) * w;
  const std::int64_t nbr = b.nblock_rows();
  const bool cmap = !b.col_perm.empty();
  constexpr int kChunk = 16;
  parallel_for(
      nbr,
      [&](std::int64_t r) {
        T acc[kChunk];
        const std::int64_t blk0 = b.block_row_ptr[r], blk1 = b.block_row_ptr[r + 1];
        const std::int64_t i1 = std::min<std::int64_t>(b.nrows, (r + 1) * h);
        for (std::int64_t i = r * h; i < i1; ++i) {
          const std::int64_t rr = i - r * h;
          T* yrow = y + b.perm[i];
          for (int c0 = 0; c0 < k; c0 += kChunk) {
            const int kc = std::min(kChunk, k - c0);
            for (int q = 0; q < kc; ++q) acc[q] = T(0);
            const T* xc = x + static_cast<std::int64_t>(c0) * ldx;
            for (std::int64_t blk = blk0; blk < blk1; ++blk) {
              const std::int64_t j0 = static_cast<std::int64_t>(b.block_col[blk]) * w;
              const std::int64_t jn = std::min<std::int64_t>(w, b.ncols - j0);  // padded columns
              const T* v = b.values.data() + blk * hw + rr * w;
              for (std::int64_t cc = 0; cc < jn; ++cc) {
                const T a = v[cc];
                if (a == T(0)) continue;  // padding (and explicit zeros: same result)
                const std::int64_t xj = cmap ? b.col_perm[j0 + cc] : j0 + cc;
                for (int q = 0; q < kc; ++q) acc[q] += a * xc[xj + q * ldx];
              }
            }
            for (int q = 0; q < kc; ++q) yrow[(c0 + q) * ldy] = acc[q];
          }
        }
      },
      64);
}

template <class T>
void bcsr_spmm_host(const Bcsr<T>& b, MvView<const T> x, MvView<T> y) {
  TCSOLVE_REQUIRE(x.space == Space::host && y.space == Space::host, "bcsr_spmm_host needs host views");
  TCSOLVE_REQUIRE(x.rows == b.ncols && y.rows == b.nrows && x.cols == y.cols,
                  "bcsr_spmm_host: shapes X " + std::to_string(x.rows) + "x" + std::to_string(x.cols) +
                      ", Y " + std::to_string(y.rows) + "x" + std::to_string(y.cols) + " for A " +
                      std::to_string(b.nrows) + "x" + std::to_string(b.ncols));
  bcsr_spmm_host(b, x.data, x.ld, y.data, y.ld, static_cast<int>(x.cols));
}

template void bcsr_spmm_host(const Bcsr<double>&, const double*, std::int64_t, double*, std::int64_t, int);
template void bcsr_spmm_host(const Bcsr<float>&, const float*, std::int64_t, float*, std::int64_t, int);
template void bcsr_spmm_host(const Bcsr<double>&, MvView<const double>, MvView<double>);
template void bcsr_spmm_host(const Bcsr<float>&, MvView<const float>, MvView<float>);

}  // namespace tcsolve
