#include "preprocess/rcm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "core/error.hpp"

namespace tcsolve {

namespace {

// Adjacency of A ∪ Aᵀ without the diagonal, CSR-like (ptr, idx).
template <class T>
void symmetric_pattern(const Csr<T>& a, std::vector<std::int64_t>& ptr, std::vector<std::int32_t>& idx) {
  const std::int64_t n = a.nrows;
  std::vector<std::int64_t> cnt(n + 1, 0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] != i) ++cnt[i + 1], ++cnt[a.col_idx[p] + 1];
  for (std::int64_t i = 0; i < n; ++i) cnt[i + 1] += cnt[i];
  std::vector<std::int32_t> all(cnt[n]);
  std::vector<std::int64_t> pos(cnt.begin(), cnt.end() - 1);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const std::int32_t j = a.col_idx[p];
      if (j == i) continue;
      all[pos[i]++] = j;
      all[pos[j]++] = static_cast<std::int32_t>(i);
    }
  // Sort and deduplicate each list (symmetric inputs list every edge twice).
  ptr.assign(n + 1, 0);
  idx.clear();
  idx.reserve(all.size() / 2 + 1);
  for (std::int64_t i = 0; i < n; ++i) {
    auto b = all.begin() + cnt[i], e = all.begin() + cnt[i + 1];
    std::sort(b, e);
    idx.insert(idx.end(), b, std::unique(b, e));
    ptr[i + 1] = static_cast<std::int64_t>(idx.size());
  }
}

// BFS levels from `root` within unvisited nodes; returns the nodes in visit order and the
// number of levels; `last_level_start` marks where the last level begins in `order`.
int bfs_levels(std::int32_t root, const std::vector<std::int64_t>& ptr, const std::vector<std::int32_t>& idx,
               std::vector<std::int32_t>& mark, std::int32_t stamp, std::vector<std::int32_t>& order,
               std::size_t& last_level_start) {
  order.clear();
  order.push_back(root);
  mark[root] = stamp;
  std::size_t level_begin = 0;
  int levels = 0;
  while (level_begin < order.size()) {
    const std::size_t level_end = order.size();
    last_level_start = level_begin;
    ++levels;
    for (std::size_t q = level_begin; q < level_end; ++q)
      for (std::int64_t p = ptr[order[q]]; p < ptr[order[q] + 1]; ++p)
        if (mark[idx[p]] != stamp && mark[idx[p]] != -1) {
          mark[idx[p]] = stamp;
          order.push_back(idx[p]);
        }
    level_begin = level_end;
  }
  return levels;
}

}  // namespace

template <class T>
std::vector<std::int32_t> reverse_cuthill_mckee(const Csr<T>& a) {
  TCSOLVE_REQUIRE(a.square(), "RCM ordering needs a square matrix");
  const std::int64_t n = a.nrows;
  std::vector<std::int64_t> ptr;
  std::vector<std::int32_t> idx;
  symmetric_pattern(a, ptr, idx);
  auto deg = [&](std::int32_t v) { return ptr[v + 1] - ptr[v]; };

  std::vector<std::int32_t> by_degree(n);
  std::iota(by_degree.begin(), by_degree.end(), 0);
  std::stable_sort(by_degree.begin(), by_degree.end(), [&](std::int32_t x, std::int32_t y) { return deg(x) < deg(y); });

  // mark: -1 = placed in the final order; otherwise a BFS stamp (>= 0) or never seen (-2).
  std::vector<std::int32_t> mark(n, -2), levels_order, out;
  out.reserve(n);
  std::int32_t stamp = 0;
  std::size_t next = 0;
  while (static_cast<std::int64_t>(out.size()) < n) {
    while (mark[by_degree[next]] == -1) ++next;
    // Pseudo-peripheral root (George-Liu): move to a min-degree node of the last BFS level while
    // the number of levels grows.
    std::int32_t root = by_degree[next];
    std::size_t last = 0;
    int nlev = bfs_levels(root, ptr, idx, mark, stamp++, levels_order, last);
    for (int it = 0; it < 8; ++it) {
      std::int32_t cand = levels_order[last];
      for (std::size_t q = last; q < levels_order.size(); ++q)
        if (deg(levels_order[q]) < deg(cand)) cand = levels_order[q];
      std::size_t last2 = 0;
      std::vector<std::int32_t> order2;
      const int nlev2 = bfs_levels(cand, ptr, idx, mark, stamp++, order2, last2);
      if (nlev2 <= nlev) break;
      root = cand, nlev = nlev2, last = last2, levels_order.swap(order2);
    }
    // Cuthill-McKee from root: visit unplaced neighbours by increasing degree.
    const std::size_t begin = out.size();
    out.push_back(root);
    mark[root] = -1;
    for (std::size_t q = begin; q < out.size(); ++q) {
      const std::size_t first_new = out.size();
      for (std::int64_t p = ptr[out[q]]; p < ptr[out[q] + 1]; ++p)
        if (mark[idx[p]] != -1) {
          mark[idx[p]] = -1;
          out.push_back(idx[p]);
        }
      std::stable_sort(out.begin() + first_new, out.end(),
                       [&](std::int32_t x, std::int32_t y) { return deg(x) < deg(y); });
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

template std::vector<std::int32_t> reverse_cuthill_mckee(const Csr<double>&);
template std::vector<std::int32_t> reverse_cuthill_mckee(const Csr<float>&);

double sampled_line_spread(const Csr<double>& a) {
  constexpr std::int64_t kChunk = 512, kChunks = 64;
  const std::int64_t n = a.nrows;
  if (n == 0 || a.nnz() == 0) return 0.0;
  const std::int64_t chunks = std::max<std::int64_t>(1, n / kChunk);
  const std::int64_t taken = std::min(chunks, kChunks);
  std::vector<std::int32_t> lines;
  double distinct = 0.0, entries = 0.0;
  for (std::int64_t t = 0; t < taken; ++t) {
    const std::int64_t c = t * chunks / taken;
    const std::int64_t r0 = c * kChunk, r1 = std::min(n, r0 + kChunk);
    lines.clear();
    for (std::int64_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p) lines.push_back(a.col_idx[p] >> 3);
    std::sort(lines.begin(), lines.end());
    distinct += double(std::unique(lines.begin(), lines.end()) - lines.begin());
    entries += double(lines.size());
  }
  return entries > 0 ? distinct / entries : 0.0;
}

LocalityOrder locality_order(const Csr<double>& a) {
  const auto t0 = std::chrono::steady_clock::now();
  LocalityOrder o;
  if (a.nrows < kLocalityRows || a.nrows != a.ncols) return o;
  o.before = sampled_line_spread(a);
  if (!(o.before >= kLocalitySpread)) return o;
  std::vector<std::int32_t> p = reverse_cuthill_mckee(a);
  Csr<double> b = permute_symmetric(a, p);
  o.after = sampled_line_spread(b);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!(o.after * kLocalityGain <= o.before)) return o;
  o.perm = std::move(p);
  o.permuted = std::move(b);
  return o;
}

std::string LocalityOrder::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "reverse Cuthill-McKee, %.2f -> %.2f lines of X read per entry, in %.3g s", before,
                after, seconds);
  return buf;
}

}  // namespace tcsolve
