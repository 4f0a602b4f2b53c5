// The CPU CSR kernels' plan (spmm/cpu_csr_kernels.hpp): the balanced row parts, and the ring
// staging's parts, windows and budget, computed once per matrix (O(nnz)).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "spmm/cpu_csr_kernels.hpp"

namespace tcsolve::detail {

namespace {

constexpr std::int64_t kBlock = kCpuRowBlock;

std::int64_t down_block(std::int64_t c) { return c / kBlock * kBlock; }
std::int64_t up_block(std::int64_t c) { return (c + kBlock - 1) / kBlock * kBlock; }

// Per block of kBlock rows: the least and largest column its rows' near entries (|col − row| ≤
// band) reach, counting each row's own index where it is a column (the step reads cur(i, :) from
// Z); max −1 for none.
void block_ranges(const Csr<double>& a, std::int64_t band, std::vector<std::int64_t>& bmin,
                  std::vector<std::int64_t>& bmax) {
  const std::int64_t n = a.nrows, nb = (n + kBlock - 1) / kBlock;
  bmin.assign(static_cast<std::size_t>(nb), a.ncols);
  bmax.assign(static_cast<std::size_t>(nb), -1);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t& lo = bmin[static_cast<std::size_t>(i / kBlock)];
    std::int64_t& hi = bmax[static_cast<std::size_t>(i / kBlock)];
    if (i < a.ncols) lo = std::min(lo, i), hi = std::max(hi, i);
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int64_t c = a.col_idx[p];
      if (c - i > band || i - c > band) continue;
      lo = std::min(lo, c), hi = std::max(hi, c);
    }
  }
}

// The least band (64·2^(j/4), a multiple of 64) within which 99 % of A's entries lie (|col − row|).
std::int64_t near_band(const Csr<double>& a) {
  std::vector<std::int64_t> count(160, 0);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const double d = std::abs(static_cast<double>(a.col_idx[p] - i));
      const int j = d <= 64 ? 0 : static_cast<int>(std::ceil(4 * std::log2(d / 64)));
      ++count[static_cast<std::size_t>(std::min(j, 159))];
    }
  std::int64_t sum = 0;
  for (int j = 0; j < 160; ++j) {
    sum += count[static_cast<std::size_t>(j)];
    if (static_cast<double>(sum) >= 0.99 * static_cast<double>(a.nnz()))
      return up_block(static_cast<std::int64_t>(std::ceil(64 * std::exp2(j / 4.0))));
  }
  return std::numeric_limits<std::int64_t>::max();
}

// For parts `bounds` (multiples of kBlock): the ring's rows (the most, over the blocks of a part,
// of the staged end while the block is computed, up_block(max column so far + 1) with the next
// block's columns counted (the kernels stage the next block's rows between this block's tiles),
// less down_block(the least column of this block and the part's later ones)), the part's first
// staged columns and the rows staged over all parts.
void ring_need(const std::vector<std::int64_t>& bounds, const std::vector<std::int64_t>& bmin,
               const std::vector<std::int64_t>& bmax, std::int64_t& need, std::int64_t& staged,
               std::vector<std::int64_t>* lo) {
  need = 0, staged = 0;
  const int parts = static_cast<int>(bounds.size()) - 1;
  if (lo) lo->assign(static_cast<std::size_t>(parts), 0);
  std::vector<std::int64_t> suffix;
  for (int p = 0; p < parts; ++p) {
    if (bounds[p] >= bounds[p + 1]) continue;
    const std::int64_t b0 = bounds[p] / kBlock, b1 = (bounds[p + 1] + kBlock - 1) / kBlock;
    suffix.assign(static_cast<std::size_t>(b1 - b0 + 1), std::numeric_limits<std::int64_t>::max());
    for (std::int64_t b = b1 - 1; b >= b0; --b)
      suffix[b - b0] = std::min(suffix[b - b0 + 1], bmax[b] < 0 ? suffix[b - b0 + 1] : bmin[b]);
    if (suffix[0] == std::numeric_limits<std::int64_t>::max()) continue;  // no columns reached
    std::int64_t pm = -1;
    for (std::int64_t b = b0; b < b1; ++b) {
      pm = std::max(pm, bmax[b]);
      const std::int64_t ahead = b + 1 < b1 ? std::max(pm, bmax[b + 1]) : pm;
      if (bmax[b] < 0) continue;
      need = std::max(need, up_block(ahead + 1) - down_block(suffix[b - b0]));
    }
    staged += up_block(pm + 1) - down_block(suffix[0]);
    if (lo) (*lo)[static_cast<std::size_t>(p)] = down_block(suffix[0]);
  }
}

std::size_t default_ring_budget() {
  const char* v = std::getenv("TCSOLVE_CPU_RING_KB");
  if (v && *v) return static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) << 10;
  return std::size_t(8) << 20;
}

}  // namespace

std::vector<std::int64_t> balanced_row_parts(const std::vector<std::int64_t>& row_ptr, int parts, std::int64_t align) {
  TCSOLVE_REQUIRE(parts >= 1 && !row_ptr.empty() && align >= 1, "balanced_row_parts: no parts or no row offsets");
  const std::int64_t n = static_cast<std::int64_t>(row_ptr.size()) - 1, total = row_ptr[n] + n;
  std::vector<std::int64_t> b(static_cast<std::size_t>(parts) + 1, n);
  b[0] = 0;
  for (int p = 1; p < parts; ++p) {
    // the first row i ≥ b[p − 1] with row_ptr[i] + i ≥ total·p/parts (work up to row i)
    const std::int64_t target = static_cast<std::int64_t>(static_cast<long double>(total) * p / parts);
    std::int64_t lo = b[p - 1], hi = n;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (row_ptr[mid] + mid >= target) hi = mid;
      else lo = mid + 1;
    }
    b[p] = std::max(b[p - 1], lo / align * align);  // tiles and blocks never straddle two parts
  }
  return b;
}

int cpu_kernel_parts(std::int64_t rows, std::int64_t nnz) {
  const int threads = host_threads();
  if (threads <= 1) return 1;
  const std::int64_t by_work = (rows + nnz) / 16384;
  return static_cast<int>(std::clamp<std::int64_t>(by_work, 1, 8 * static_cast<std::int64_t>(threads)));
}

CpuCsrKernels::CpuCsrKernels(const Csr<double>& a)
    : a_(a),
      bounds_(balanced_row_parts(a.row_ptr, cpu_kernel_parts(a.nrows, a.nnz()))),
      ring_budget_(default_ring_budget()) {
  if (const char* v = std::getenv("TCSOLVE_CPU_STREAM_MB"); v && *v)
    stream_bytes_ = static_cast<std::int64_t>(std::strtoll(v, nullptr, 10)) << 20;
  // Ring parts: as few as keep each part's start-up window (about the ring's rows, staged twice)
  // under a sixteenth of its rows, at least two a thread where the default parts allow (2-core
  // Xeon, 32 columns: lap3d:60 at 4 parts instead of 7, 10.1 → 8.8 ms; rgg 55k at 4 instead of
  // 12, 3.0 → 2.9 ms).
  // All entries in the ring where its widest rows (32 fp64 columns) fit the budget; else the
  // entries within the band of 99 % of them (the rest read X directly).
  std::vector<std::int64_t> bmin, bmax;
  block_ranges(a, std::numeric_limits<std::int64_t>::max(), bmin, bmax);
  std::int64_t need1 = 0, staged1 = 0;
  ring_need({0, a.nrows}, bmin, bmax, need1, staged1, nullptr);
  if (static_cast<double>(need1) * 32 * sizeof(double) > static_cast<double>(ring_budget_)) {
    ring_.all_near = false;
    block_ranges(a, near_band(a), bmin, bmax);
    ring_need({0, a.nrows}, bmin, bmax, need1, staged1, nullptr);
  }
  const int np = parts();
  int pr = np;
  if (need1 > 0)
    pr = static_cast<int>(std::clamp<std::int64_t>(a.nrows / (16 * need1), std::min(np, 2 * host_threads()), np));
  ring_.bounds = balanced_row_parts(a.row_ptr, pr, kBlock);
  ring_need(ring_.bounds, bmin, bmax, ring_.need, ring_.staged, &ring_.lo);
  ring_.w = 0;
  if (ring_.need > 0)
    for (ring_.w = kBlock; ring_.w < ring_.need;) ring_.w *= 2;
  ring_.block_hi.resize(bmax.size());
  for (std::size_t b = 0; b < bmax.size(); ++b) ring_.block_hi[b] = bmax[b] < 0 ? 0 : up_block(bmax[b] + 1);
  const int slots = host_threads() + 1;
  r64_.buf.resize(static_cast<std::size_t>(slots));
  r32_.buf.resize(static_cast<std::size_t>(slots));
  r64_.busy = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(slots));
  r32_.busy = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(slots));
}

CpuCsrKernels::Staging CpuCsrKernels::staging_for(std::int64_t k, std::size_t elem) const {
  if (k <= 1 || ring_.need == 0 || staging_ == Staging::whole) return Staging::whole;
  if (staging_ == Staging::ring) return Staging::ring;
  // the ring in its budget, and its windows staged twice at part starts costing less than Z's
  // round trip through memory (X read, Z written and read back: ~3 of X)
  const double bytes = static_cast<double>(ring_.w) * static_cast<double>(cpu_staged_width(k)) * static_cast<double>(elem);
  if (bytes > static_cast<double>(ring_budget_) || ring_.staged > 2 * a_.ncols) return Staging::whole;
  return Staging::ring;
}

}  // namespace tcsolve::detail
