// gen:counts:CELLS:GENES[:DENSITY]: a sparse count matrix shaped like single-cell RNA data
// (rows = cells, columns = genes; RECTANGULAR), for the svds / PCA benchmarks.
//
// Model (deterministic from the seed, row by row in parallel):
//   - gene g has a power-law rank r_g (a random permutation of 1..GENES): its relative mean
//     expression w_g = r_g^(−1) (Zipf) and its detection weight d_g = r_g^(−1/2);
//   - cell c has a log-normal size factor L_c = exp(0.5·z − 0.125), z standard normal (mean 1);
//   - cell c detects K_c = round(DENSITY·GENES·L_c) genes (clamped to [1, GENES]), drawn without
//     replacement with probabilities ∝ d_g (Walker's alias table, duplicates redrawn);
//   - a detected gene's count is 1 + a geometric variate (a negative binomial with r = 1:
//     variance μ + μ², overdispersed as UMI counts are) of mean μ_cg = 4·L_c·GENES·w_g/Σw.
// DENSITY defaults to 0.04 and must lie in (0, 0.5] (single-cell data: 2–7 %). Work O(nnz) plus
// the redraws, which stay below one per entry up to DENSITY ≈ 0.2.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/host_memory.hpp"
#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "io/generator_common.hpp"

namespace tcsolve::gen {

namespace {

constexpr u64 s_counts = 0xc0ff5eedULL;  // stream of this generator (beyond generator_common's)

// Walker's alias table for sampling index i with probability w_i/Σw in O(1).
struct Alias {
  std::vector<double> prob;
  std::vector<std::int32_t> alias;
  explicit Alias(const std::vector<double>& w) : prob(w.size()), alias(w.size()) {
    const auto n = static_cast<i64>(w.size());
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    std::vector<i64> small, large;
    std::vector<double> scaled(w.size());
    for (i64 i = 0; i < n; ++i) {
      scaled[i] = w[i] * static_cast<double>(n) / total;
      (scaled[i] < 1.0 ? small : large).push_back(i);
    }
    while (!small.empty() && !large.empty()) {
      const i64 s = small.back(), l = large.back();
      small.pop_back();
      prob[s] = scaled[s];
      alias[s] = static_cast<std::int32_t>(l);
      scaled[l] -= 1.0 - scaled[s];
      if (scaled[l] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    for (i64 i : large) prob[i] = 1.0, alias[i] = static_cast<std::int32_t>(i);
    for (i64 i : small) prob[i] = 1.0, alias[i] = static_cast<std::int32_t>(i);
  }
  std::int32_t draw(Xoshiro256& rng) const {
    const i64 i = static_cast<i64>(rng.below(prob.size()));
    return unit(rng.next()) < prob[i] ? static_cast<std::int32_t>(i) : alias[i];
  }
};

// Standard normal from two uniforms (Box–Muller).
double normal(u64 h1, u64 h2) {
  const double u1 = std::max(unit(h1), 1e-300), u2 = unit(h2);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

Csr<double> gen_counts(const std::string& spec, const Spec& s) {
  expect_params_between(spec, s, 2, 3, "CELLS:GENES[:DENSITY]");
  if (s.scramble) bad(spec, "+scramble permutes symmetrically and needs a square matrix; counts is cells × genes");
  const i64 cells = size_param(spec, "CELLS", s.params[0], max_rows);
  const i64 genes = size_param(spec, "GENES", s.params[1], max_rows);
  const double density = s.params.size() > 2 ? real_param(spec, "DENSITY", s.params[2], 0.5) : 0.04;
  check_entries(spec, static_cast<long double>(cells) * genes * density * 4);  // L_c's tail
  // Gene ranks: a permutation of 1..GENES (Fisher–Yates from the seed).
  std::vector<i64> rank(genes);
  std::iota(rank.begin(), rank.end(), 1);
  Xoshiro256 perm(hash3(s.seed, s_counts, 1));
  for (i64 i = genes - 1; i > 0; --i) std::swap(rank[i], rank[perm.below(static_cast<u64>(i + 1))]);
  std::vector<double> w(genes), d(genes);
  for (i64 g = 0; g < genes; ++g) {
    w[g] = 1.0 / static_cast<double>(rank[g]);
    d[g] = 1.0 / std::sqrt(static_cast<double>(rank[g]));
  }
  const double wsum = std::accumulate(w.begin(), w.end(), 0.0);
  const Alias table(d);
  // Pass 1: size factors and row lengths.
  std::vector<double> size(cells);
  Csr<double> a;
  a.nrows = cells;
  a.ncols = genes;
  a.row_ptr.assign(static_cast<std::size_t>(cells + 1), 0);
  parallel_for(cells, [&](i64 c) {  // each cell's factor and length on its own (hashed) stream
    size[c] = std::exp(0.5 * normal(hash3(s.seed, s_counts, 2 * u64(c) + 2), hash3(s.seed, s_counts, 2 * u64(c) + 3)) - 0.125);
    const double k = std::round(density * static_cast<double>(genes) * size[c]);
    a.row_ptr[c + 1] = std::clamp<i64>(static_cast<i64>(k), 1, genes);
  });
  for (i64 c = 0; c < cells; ++c) a.row_ptr[c + 1] += a.row_ptr[c];
  trace_mark("counts: rows sized");
  resize_huge(a.col_idx, static_cast<std::size_t>(a.nnz()));
  resize_huge(a.values, static_cast<std::size_t>(a.nnz()));
  trace_mark("counts: arrays allocated");
  // Pass 2: each row's genes (distinct, sorted) and counts.
  parallel_for(cells, [&](i64 c) {
    Xoshiro256 rng(hash3(s.seed, s_counts, u64(c) + (u64(1) << 40)));
    const i64 p0 = a.row_ptr[c], want = a.row_ptr[c + 1] - p0;
    std::int32_t* cols = a.col_idx.data() + p0;
    i64 have = 0;
    if (want * 2 > genes) {  // dense rows: a random subset by selection sampling, uniform
      for (i64 g = 0; g < genes && have < want; ++g)
        if (static_cast<double>(genes - g) * unit(rng.next()) < static_cast<double>(want - have))
          cols[have++] = static_cast<std::int32_t>(g);
    } else {
      // Rounds of want − have draws until `want` distinct genes are held: a bit per gene (this
      // thread's) instead of sorting the row every round; the same draws make the
      // same set, written out in ascending order.
      thread_local std::vector<u64> seen;
      seen.assign(static_cast<std::size_t>((genes + 63) / 64), 0);
      while (have < want) {
        const i64 round = want - have;
        for (i64 i = 0; i < round; ++i) {
          const std::int32_t g = table.draw(rng);
          u64& word = seen[static_cast<std::size_t>(g) >> 6];
          const u64 bit = u64(1) << (g & 63);
          if (!(word & bit)) word |= bit, ++have;
        }
      }
      i64 out = 0;
      for (std::size_t w = 0; w < seen.size(); ++w)
        for (u64 bits = seen[w]; bits; bits &= bits - 1)
          cols[out++] = static_cast<std::int32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
    }
    for (i64 i = 0; i < want; ++i) {
      const double mu = 4.0 * size[c] * static_cast<double>(genes) * w[cols[i]] / wsum;
      const double q = mu / (1.0 + mu);  // P(X ≥ j + 1 | X ≥ j) of the geometric on {0, 1, ...}
      const double u = std::max(unit(rng.next()), 1e-300);
      const double x = q > 0 ? std::floor(std::log(u) / std::log(q)) : 0.0;
      a.values[p0 + i] = 1.0 + std::min(x, 1e9);
    }
  }, 256);
  trace_mark("counts: entries drawn");
  return a;
}

}  // namespace tcsolve::gen
