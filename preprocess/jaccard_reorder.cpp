// Jaccard row clustering with an inverted index (see jaccard_reorder.hpp for the algorithm).
// Memory: pattern + index 2·(nnz_keys·4 + n·8) bytes, plus 4 ints per row and 1 per key.
#include "preprocess/jaccard_reorder.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "preprocess/bcsr_stats.hpp"
#include "preprocess/rcm.hpp"

namespace tcsolve {

const char* to_string(ReorderMode m) { return m == ReorderMode::rows ? "rows" : "symmetric"; }

ReorderMode parse_reorder_mode(const std::string& s) {
  if (s == "rows") return ReorderMode::rows;
  if (s == "symmetric") return ReorderMode::symmetric;
  throw InvalidArgument("unknown reorder mode '" + s + "' (expected rows or symmetric)");
}

namespace {

// Runs body(first, last, t) over [0, n) split in one contiguous chunk per thread (nt chunks).
template <class F>
void for_chunks(std::int64_t n, int nt, F&& body) {
  parallel_for(nt, [&](std::int64_t t) { body(n * t / nt, n * (t + 1) / nt, static_cast<int>(t)); }, 1);
}

// A CSR-like list of int32 sets: items of set s are item[ptr[s] .. ptr[s+1]).
struct SetList {
  std::vector<std::int64_t> ptr;
  std::vector<std::int32_t> item;
  std::int64_t size(std::int64_t s) const { return ptr[s + 1] - ptr[s]; }
  const std::int32_t* begin(std::int64_t s) const { return item.data() + ptr[s]; }
  const std::int32_t* end(std::int64_t s) const { return item.data() + ptr[s + 1]; }
};

// S_i = sorted distinct col/kw of row i (columns are sorted, so keys are non-decreasing).
template <class T>
SetList row_patterns(const Csr<T>& a, int kw, int nt) {
  SetList s;
  const std::int64_t n = a.nrows;
  s.ptr.assign(n + 1, 0);
  for_chunks(n, nt, [&](std::int64_t i0, std::int64_t i1, int) {
    for (std::int64_t i = i0; i < i1; ++i) {
      std::int64_t c = 0;
      std::int32_t last = -1;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const std::int32_t k = a.col_idx[p] / kw;
        if (k != last) ++c, last = k;
      }
      s.ptr[i + 1] = c;
    }
  });
  for (std::int64_t i = 0; i < n; ++i) s.ptr[i + 1] += s.ptr[i];
  s.item.resize(s.ptr[n]);
  for_chunks(n, nt, [&](std::int64_t i0, std::int64_t i1, int) {
    for (std::int64_t i = i0; i < i1; ++i) {
      std::int64_t o = s.ptr[i];
      std::int32_t last = -1;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const std::int32_t k = a.col_idx[p] / kw;
        if (k != last) s.item[o++] = k, last = k;
      }
    }
  });
  return s;
}

// Inverted index: for each key, the rows holding it (in increasing row order).
SetList transpose(const SetList& s, std::int64_t nrows, std::int64_t nkeys, int nt) {
  std::vector<std::vector<std::int64_t>> cnt(nt, std::vector<std::int64_t>(nkeys + 1, 0));
  for_chunks(nrows, nt, [&](std::int64_t i0, std::int64_t i1, int t) {
    for (std::int64_t p = s.ptr[i0]; p < s.ptr[i1]; ++p) ++cnt[t][s.item[p]];
  });
  SetList x;
  x.ptr.assign(nkeys + 1, 0);
  std::int64_t run = 0;
  for (std::int64_t k = 0; k < nkeys; ++k) {
    x.ptr[k] = run;
    for (int t = 0; t < nt; ++t) {
      const std::int64_t c = cnt[t][k];
      cnt[t][k] = run;  // becomes the write offset of thread t for key k
      run += c;
    }
  }
  x.ptr[nkeys] = run;
  x.item.resize(run);
  for_chunks(nrows, nt, [&](std::int64_t i0, std::int64_t i1, int t) {
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t p = s.ptr[i]; p < s.ptr[i + 1]; ++p) x.item[cnt[t][s.item[p]]++] = static_cast<std::int32_t>(i);
  });
  return x;
}

inline std::uint64_t mix64(std::uint64_t z) {  // splitmix64 finaliser
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Rows sorted by (min-hash of S_i, second min-hash, row): similar rows become neighbours;
// empty rows go last.
std::vector<std::int32_t> minhash_order(const SetList& s, std::int64_t n, int nt) {
  struct Key {
    std::uint64_t h1, h2;
    std::int32_t row;
  };
  std::vector<Key> keys(n);
  for_chunks(n, nt, [&](std::int64_t i0, std::int64_t i1, int) {
    for (std::int64_t i = i0; i < i1; ++i) {
      std::uint64_t m1 = std::numeric_limits<std::uint64_t>::max(), m2 = m1;
      for (const std::int32_t* k = s.begin(i); k != s.end(i); ++k) {
        m1 = std::min(m1, mix64(static_cast<std::uint64_t>(*k)));
        m2 = std::min(m2, mix64(static_cast<std::uint64_t>(*k) ^ 0x5bd1e995ULL));
      }
      keys[i] = {m1, m2, static_cast<std::int32_t>(i)};
    }
  });
  auto less = [](const Key& x, const Key& y) {
    if (x.h1 != y.h1) return x.h1 < y.h1;
    if (x.h2 != y.h2) return x.h2 < y.h2;
    return x.row < y.row;
  };
  // Sort one chunk per thread, then merge.
  std::vector<std::int64_t> cut(nt + 1);
  for (int t = 0; t <= nt; ++t) cut[t] = n * t / nt;
  parallel_for(nt, [&](std::int64_t t) { std::sort(keys.begin() + cut[t], keys.begin() + cut[t + 1], less); }, 1);
  for (int t = 1; t < nt; ++t)
    std::inplace_merge(keys.begin(), keys.begin() + cut[t], keys.begin() + cut[t + 1], less);
  std::vector<std::int32_t> order(n);
  for (std::int64_t i = 0; i < n; ++i) order[i] = keys[i].row;
  return order;
}

// Greedy growth of groups of h rows; returns the row order (perm).
class GroupGrower {
 public:
  // pat: full key sets (they form the union U); idx: inverted index of the sketches
  // (sketch_size(r) keys of row r).
  GroupGrower(const SetList& pat, const SetList& sketch, const SetList& idx, const std::vector<char>& hub,
              const std::vector<std::int32_t>& order, int h, double max_distance, int max_scan)
      : pat_(pat), sketch_(sketch), idx_(idx), hub_(hub), order_(order), h_(h), max_distance_(max_distance), max_scan_(max_scan),
        n_(static_cast<std::int64_t>(order.size())), assigned_(n_, 0), cnt_(n_, 0), stamp_(n_, -1),
        in_u_(idx.ptr.size() - 1, -1), cursor_(idx.ptr.size() - 1, 0) {}

  std::vector<std::int32_t> run(const std::function<void(double)>& progress, double f0, double f1) {
    std::vector<std::int32_t> perm;
    perm.reserve(n_);
    const std::int64_t tick = std::max<std::int64_t>(1, n_ / 100);
    std::int64_t next_tick = tick;
    std::int32_t seed = next_in_order();
    for (std::int32_t g = 0; static_cast<std::int64_t>(perm.size()) < n_; ++g) {
      group_ = g;
      u_size_ = 0;
      max_c_ = 0;
      add(seed, perm);
      for (int m = 1; m < h_ && static_cast<std::int64_t>(perm.size()) < n_; ++m) {
        std::int32_t j = best_candidate(true);
        if (j < 0) j = next_in_order();
        add(j, perm);
      }
      // Next seed: the unassigned row that overlaps most with this group (a growing front).
      seed = -1;
      if (static_cast<std::int64_t>(perm.size()) < n_) {
        seed = best_candidate(false);
        if (seed < 0) seed = next_in_order();
      }
      for (std::int32_t c = 1; c < static_cast<std::int32_t>(buckets_.size()) && c <= max_seen_; ++c)
        buckets_[c].clear();
      max_seen_ = 0;
      if (progress && static_cast<std::int64_t>(perm.size()) >= next_tick) {
        progress(f0 + (f1 - f0) * static_cast<double>(perm.size()) / static_cast<double>(n_));
        next_tick += tick;
      }
    }
    return perm;
  }

 private:
  std::int32_t next_in_order() {
    while (pos_ < n_ && assigned_[order_[pos_]]) ++pos_;
    return pos_ < n_ ? order_[pos_] : -1;
  }

  // Adds row j to the current group: its new keys join U, and every unassigned row holding such
  // a key gets its overlap count |U ∩ S_r| incremented (and is pushed to that count's bucket).
  void add(std::int32_t j, std::vector<std::int32_t>& perm) {
    assigned_[j] = 1;
    perm.push_back(j);
    for (const std::int32_t* k = pat_.begin(j); k != pat_.end(j); ++k) {
      if (in_u_[*k] == group_) continue;
      in_u_[*k] = group_;
      ++u_size_;
      if (hub_[*k]) continue;
      // Skip the key's assigned prefix for good (amortised O(1)), then scan at most max_scan_
      // unassigned rows: bounded work per key whatever its degree.
      std::int64_t& cur = cursor_[*k];
      const std::int32_t* e = idx_.end(*k);
      while (idx_.ptr[*k] + cur < idx_.ptr[*k + 1] && assigned_[idx_.item[idx_.ptr[*k] + cur]]) ++cur;
      int scanned = 0;
      for (const std::int32_t* r = idx_.begin(*k) + cur; r != e && scanned < max_scan_; ++r) {
        if (assigned_[*r]) continue;
        ++scanned;
        if (stamp_[*r] != group_) stamp_[*r] = group_, cnt_[*r] = 0;
        const std::int32_t c = ++cnt_[*r];
        if (c >= static_cast<std::int32_t>(buckets_.size())) buckets_.resize(c + 1);
        buckets_[c].push_back(*r);
        max_c_ = std::max(max_c_, c);
        max_seen_ = std::max(max_seen_, c);
      }
    }
  }

  // Best unassigned candidate by Jaccard similarity |U∩S|/|U∪S| among at most kEval valid
  // entries of each of the two highest non-empty count buckets (stale entries are dropped).
  // -1 when there is none or (check_distance) the best is farther than max_distance.
  std::int32_t best_candidate(bool check_distance) {
    constexpr int kEval = 32;
    std::int32_t best = -1;
    double best_j = -1;
    int buckets_seen = 0;
    for (std::int32_t c = max_c_; c >= 1 && buckets_seen < 2; --c) {
      auto& b = buckets_[c];
      int evaluated = 0;
      for (std::int64_t q = static_cast<std::int64_t>(b.size()) - 1; q >= 0 && evaluated < kEval; --q) {
        const std::int32_t r = b[q];
        if (assigned_[r] || cnt_[r] != c) {  // stale: drop
          b[q] = b.back();
          b.pop_back();
          continue;
        }
        ++evaluated;
        // |U ∩ S_r| estimated from the sketch: c of its sketch keys lie in U (exact when the
        // sketch is the whole set).
        const double sr = static_cast<double>(pat_.size(r));
        const double inter = sr * static_cast<double>(c) / static_cast<double>(sketch_.size(r));
        const double jac = inter / (static_cast<double>(u_size_) + sr - inter);
        if (jac > best_j) best_j = jac, best = r;
      }
      if (b.empty() && c == max_c_) --max_c_;
      if (evaluated > 0) ++buckets_seen;
    }
    if (check_distance && best >= 0 && 1.0 - best_j > max_distance_) return -1;
    return best;
  }

  const SetList& pat_;
  const SetList& sketch_;
  const SetList& idx_;
  const std::vector<char>& hub_;
  const std::vector<std::int32_t>& order_;
  const int h_;
  const double max_distance_;
  const int max_scan_;
  const std::int64_t n_;
  std::vector<char> assigned_;
  std::vector<std::int32_t> cnt_, stamp_, in_u_;
  std::vector<std::int64_t> cursor_;  // per key: length of the prefix of its rows known assigned
  std::vector<std::vector<std::int32_t>> buckets_{1};
  std::int64_t pos_ = 0;
  std::int32_t group_ = 0, max_c_ = 0, max_seen_ = 0;
  std::int64_t u_size_ = 0;
};

// Bottom-k MinHash sketch: the k keys of each set with the smallest hash (the whole set when it
// has at most k keys), sorted by key. Rows are indexed under their sketch keys only, so the
// index has at most k entries per row whatever the density.
SetList bottom_k_sketch(const SetList& pat, int k, int nt) {
  const std::int64_t n = static_cast<std::int64_t>(pat.ptr.size()) - 1;
  SetList s;
  s.ptr.assign(n + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) s.ptr[i + 1] = s.ptr[i] + std::min<std::int64_t>(k, pat.size(i));
  s.item.resize(s.ptr[n]);
  for_chunks(n, nt, [&](std::int64_t i0, std::int64_t i1, int) {
    std::vector<std::pair<std::uint64_t, std::int32_t>> hk;
    for (std::int64_t i = i0; i < i1; ++i) {
      std::int32_t* out = s.item.data() + s.ptr[i];
      if (pat.size(i) <= k) {
        std::copy(pat.begin(i), pat.end(i), out);
        continue;
      }
      hk.clear();
      for (const std::int32_t* q = pat.begin(i); q != pat.end(i); ++q) hk.push_back({mix64(static_cast<std::uint64_t>(*q)), *q});
      std::nth_element(hk.begin(), hk.begin() + k, hk.end());
      for (int m = 0; m < k; ++m) out[m] = hk[m].second;
      std::sort(out, out + k);
    }
  });
  return s;
}

// Groups of `group` sets (rows) by the greedy Jaccard growth; returns the order of the sets.
std::vector<std::int32_t> cluster(const SetList& pat, std::int64_t nkeys, int group, const ReorderOptions& opt,
                                  int nt, double f0, double f1) {
  const std::int64_t n = static_cast<std::int64_t>(pat.ptr.size()) - 1;
  SetList sk = bottom_k_sketch(pat, opt.sketch, nt);
  SetList idx = transpose(sk.item.empty() && !pat.item.empty() ? pat : sk, n, nkeys, nt);
  std::vector<char> hub(nkeys, 0);
  const double mean = nkeys > 0 ? static_cast<double>(idx.item.size()) / static_cast<double>(nkeys) : 0.0;
  const double limit = std::max(64.0, opt.hub_factor * mean);
  for (std::int64_t k = 0; k < nkeys; ++k) hub[k] = static_cast<double>(idx.size(k)) > limit;
  std::vector<std::int32_t> order = minhash_order(pat, n, nt);
  const double f = f0 + 0.1 * (f1 - f0);
  if (opt.progress) opt.progress(f);
  return GroupGrower(pat, sk, idx, hub, order, group, opt.max_distance, opt.max_scan).run(opt.progress, f, f1);
}

// Pattern of each full level-1 group G (rows perm1[G·w .. G·w+w)): the sorted distinct group ids
// gid[c] of the columns c of its rows.
template <class T>
SetList group_patterns(const Csr<T>& a, const std::vector<std::int32_t>& perm1,
                       const std::vector<std::int32_t>& gid, int w, std::int64_t nfull, int nt) {
  SetList s;
  s.ptr.assign(nfull + 1, 0);
  auto collect = [&](std::int64_t g, std::vector<std::int32_t>& keys) {
    keys.clear();
    for (int m = 0; m < w; ++m) {
      const std::int64_t r = perm1[g * w + m];
      for (std::int64_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) keys.push_back(gid[a.col_idx[p]]);
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  };
  for_chunks(nfull, nt, [&](std::int64_t g0, std::int64_t g1, int) {
    std::vector<std::int32_t> keys;
    for (std::int64_t g = g0; g < g1; ++g) {
      collect(g, keys);
      s.ptr[g + 1] = static_cast<std::int64_t>(keys.size());
    }
  });
  for (std::int64_t g = 0; g < nfull; ++g) s.ptr[g + 1] += s.ptr[g];
  s.item.resize(s.ptr[nfull]);
  for_chunks(nfull, nt, [&](std::int64_t g0, std::int64_t g1, int) {
    std::vector<std::int32_t> keys;
    for (std::int64_t g = g0; g < g1; ++g) {
      collect(g, keys);
      std::copy(keys.begin(), keys.end(), s.item.begin() + s.ptr[g]);
    }
  });
  return s;
}

}  // namespace

template <class T>
ReorderResult jaccard_reorder(const Csr<T>& a, int h, int w, const ReorderOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  TCSOLVE_REQUIRE(h >= 1 && w >= 1, "block shape must be at least 1x1");
  TCSOLVE_REQUIRE(opt.mode == ReorderMode::rows || a.square(), "symmetric reordering needs a square matrix");
  TCSOLVE_REQUIRE(opt.max_distance >= 0 && opt.hub_factor > 0 && opt.max_scan >= 1 && opt.sketch >= 1, "bad reorder options");
  auto report = [&](double f) {
    if (opt.progress) opt.progress(std::min(1.0, std::max(0.0, f)));
  };
  const int nt = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(host_threads(), a.nrows / 4096)));
  ReorderResult res;
  res.mode = opt.mode;
  const std::int64_t n = a.nrows;

  std::vector<std::int32_t> perm;
  const bool two_level = opt.mode == ReorderMode::symmetric && w > 1 && w < h && h % w == 0;
  if (opt.mode == ReorderMode::rows) {
    // Keys: column blocks.
    SetList pat = row_patterns(a, w, nt);
    report(0.05);
    perm = cluster(pat, (a.ncols + w - 1) / w, h, opt, nt, 0.05, 0.85);
  } else if (!two_level) {
    // Keys: columns (they move with the rows); groups of h.
    SetList pat = row_patterns(a, 1, nt);
    report(0.05);
    perm = cluster(pat, a.ncols, h, opt, nt, 0.05, 0.85);
  } else {
    // Level 1: groups of w rows (each becomes one column block) by their columns.
    // Level 2: groups of h/w such groups by the sets of level-1 groups their columns fall in,
    // which are exactly the column blocks of the final matrix: the greedy then minimises blocks.
    std::vector<std::int32_t> perm1;
    {
      SetList pat = row_patterns(a, 1, nt);
      report(0.05);
      perm1 = cluster(pat, a.ncols, w, opt, nt, 0.05, 0.5);
    }
    const std::int64_t nfull = n / w, ng = (n + w - 1) / w;
    std::vector<std::int32_t> gid(n);
    for (std::int64_t p = 0; p < n; ++p) gid[perm1[p]] = static_cast<std::int32_t>(p / w);
    SetList pat2 = group_patterns(a, perm1, gid, w, nfull, nt);
    std::vector<std::int32_t> perm2 = cluster(pat2, ng, h / w, opt, nt, 0.5, 0.85);
    perm.reserve(n);
    for (std::int32_t q : perm2) perm.insert(perm.end(), perm1.begin() + q * w, perm1.begin() + (q + 1) * w);
    perm.insert(perm.end(), perm1.begin() + nfull * w, perm1.end());  // partial group last
  }
  report(0.85);

  const std::vector<std::int32_t> none;
  const bool sym = opt.mode == ReorderMode::symmetric;
  res.blocks_before = count_blocks(a, h, w);
  report(0.92);
  res.blocks_candidate = count_blocks(a, h, w, perm, sym ? perm : none);
  if (sym) {
    std::vector<std::int32_t> rcm = reverse_cuthill_mckee(a);
    const std::int64_t blocks_rcm = count_blocks(a, h, w, rcm, rcm);
    if (blocks_rcm < res.blocks_candidate) {
      res.blocks_candidate = blocks_rcm;
      res.ordering = "rcm";
      perm.swap(rcm);
    }
  }
  report(1.0);
  char buf[256];
  if (res.blocks_candidate < res.blocks_before) {
    res.applied = true;
    res.blocks_after = res.blocks_candidate;
    std::snprintf(buf, sizeof buf, "%s reordering (%s) applied: %lld -> %lld blocks of %dx%d (%.3fx)", to_string(opt.mode), res.ordering.c_str(),
                  static_cast<long long>(res.blocks_before), static_cast<long long>(res.blocks_candidate), h, w,
                  static_cast<double>(res.blocks_candidate) / static_cast<double>(res.blocks_before));
    res.perm = std::move(perm);
    if (sym) res.col_perm = res.perm;
  } else {
    res.applied = false;
    res.blocks_after = res.blocks_before;
    std::snprintf(buf, sizeof buf,
                  "identity kept: %s reordering would give %lld blocks of %dx%d, input order has %lld",
                  to_string(opt.mode), static_cast<long long>(res.blocks_candidate), h, w,
                  static_cast<long long>(res.blocks_before));
    res.perm.resize(n);
    for (std::int64_t i = 0; i < n; ++i) res.perm[i] = static_cast<std::int32_t>(i);
  }
  res.reason = buf;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

template ReorderResult jaccard_reorder(const Csr<double>&, int, int, const ReorderOptions&);
template ReorderResult jaccard_reorder(const Csr<float>&, int, int, const ReorderOptions&);

}  // namespace tcsolve
