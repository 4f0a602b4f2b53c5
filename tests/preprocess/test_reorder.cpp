// Block statistics and the Jaccard reordering: permutation validity, never-worse guarantee,
// real reductions on scrambled band/stencil matrices, correctness of the reordered SpMM.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "preprocess/bcsr_build.hpp"
#include "preprocess/bcsr_stats.hpp"
#include "preprocess/jaccard_reorder.hpp"
#include "preprocess/rcm.hpp"
#include "spmm/bcsr_spmm.hpp"
#include "test_util.hpp"
#include "tests/spmm/spmm_test_util.hpp"

namespace tcsolve {
namespace {

using test::band_csr;
using test::lap2d_csr;
using test::random_csr;
using test::random_perm;

bool is_permutation_of_n(const std::vector<std::int32_t>& p, std::int64_t n) {
  if (static_cast<std::int64_t>(p.size()) != n) return false;
  std::vector<char> seen(n, 0);
  for (std::int32_t v : p) {
    if (v < 0 || v >= n || seen[v]) return false;
    seen[v] = 1;
  }
  return true;
}

TEST(BcsrStats, HandComputedExample) {
  // 5 × 6, block 2 × 4: block rows {0,1}, {2,3}, {4}; block columns {0..3}, {4,5}.
  std::vector<Triplet<double>> t = {{0, 0, 1}, {0, 5, 2}, {1, 1, 3}, {2, 2, 4}, {3, 3, 5}, {4, 4, 6}, {4, 0, 7}};
  Csr<double> a = csr_from_triplets<double>(5, 6, t);
  // Block row 0: cols 0,5,1 -> blocks {0,1}; row 1: cols 2,3 -> {0}; row 2: cols 4,0 -> {0,1}.
  BcsrStats s = block_stats(a, 2, 4);
  EXPECT_EQ(s.nblock_rows, 3);
  EXPECT_EQ(s.nblocks, 5);
  EXPECT_DOUBLE_EQ(s.fill, 7.0 / 40.0);
  EXPECT_DOUBLE_EQ(s.blocks_per_row_mean, 5.0 / 3.0);
  EXPECT_NEAR(s.blocks_per_row_std, std::sqrt((4 + 1 + 4) / 3.0 - 25.0 / 9.0), 1e-15);
  EXPECT_EQ(s.blocks_per_row_max, 2);
  EXPECT_EQ(s.bytes, 5 * 8 * 8 + 4 * 5 + 8 * 4 + 4 * 5);
  // Swapping rows 1 and 2 of P·A: block row 0 = rows {0, 2}: {0, 1}; block row 1 = {1, 3}: {0}.
  EXPECT_EQ(count_blocks(a, 2, 4, {0, 2, 1, 3, 4}), 5);
  EXPECT_EQ(count_blocks(a, 1, 1), 7);
  EXPECT_EQ(count_blocks(a, 5, 6), 1);
}

TEST(BcsrStats, CountMatchesBuiltBcsr) {
  Csr<double> a = random_csr(503, 389, 7, 4);
  for (auto [h, w] : std::vector<std::pair<int, int>>{{8, 4}, {16, 16}, {16, 8}, {3, 5}}) {
    auto p = random_perm(a.nrows, h * 31 + w), q = random_perm(a.ncols, h + w);
    Bcsr<double> b = build_bcsr(a, h, w, p, q);
    BcsrStats built = bcsr_stats(b), counted = block_stats(a, h, w, p, q, 8);
    EXPECT_EQ(built.nblocks, counted.nblocks);
    EXPECT_EQ(built.nblocks, count_blocks(a, h, w, p, q));
    EXPECT_EQ(built.blocks_per_row_max, counted.blocks_per_row_max);
    EXPECT_DOUBLE_EQ(built.blocks_per_row_std, counted.blocks_per_row_std);
    EXPECT_EQ(built.bytes, counted.bytes);
    EXPECT_EQ(built.bytes, static_cast<std::int64_t>(b.values.size() * 8 + b.block_col.size() * 4 +
                                                    b.block_row_ptr.size() * 8 + b.perm.size() * 4 +
                                                    b.col_perm.size() * 4));
  }
}

TEST(JaccardReorder, ReturnsPermutationsForEveryShapeAndMode) {
  Csr<double> sq = random_csr(777, 777, 6, 8);
  Csr<double> rect = random_csr(401, 999, 9, 9);
  for (auto [h, w] : std::vector<std::pair<int, int>>{{8, 4}, {16, 16}, {16, 8}, {3, 5}, {1, 1}}) {
    for (ReorderMode m : {ReorderMode::rows, ReorderMode::symmetric}) {
      ReorderResult r = jaccard_reorder(sq, h, w, ReorderOptions{m});
      EXPECT_TRUE(is_permutation_of_n(r.perm, sq.nrows));
      EXPECT_LE(r.blocks_after, r.blocks_before);
      EXPECT_EQ(r.blocks_after, count_blocks(sq, h, w, r.perm, r.col_perm));
      EXPECT_FALSE(r.reason.empty());
      if (m == ReorderMode::symmetric && r.applied) EXPECT_EQ(r.col_perm, r.perm);
      else EXPECT_TRUE(r.col_perm.empty());
    }
    ReorderResult r = jaccard_reorder(rect, h, w);
    EXPECT_TRUE(is_permutation_of_n(r.perm, rect.nrows));
    EXPECT_LE(r.blocks_after, r.blocks_before);
  }
  EXPECT_THROW(jaccard_reorder(rect, 8, 4, ReorderOptions{ReorderMode::symmetric}), InvalidArgument);
  EXPECT_THROW(jaccard_reorder(sq, 0, 4), InvalidArgument);
}

TEST(JaccardReorder, KeepsIdentityOnWellOrderedMatrices) {
  // Natural-order stencil and band matrices: the greedy cannot beat them; identity must be kept.
  for (const Csr<double>& a : {lap2d_csr(61, 37), band_csr(1001, 3, 2)}) {
    for (ReorderMode m : {ReorderMode::rows, ReorderMode::symmetric}) {
      ReorderResult r = jaccard_reorder(a, 8, 4, ReorderOptions{m});
      if (r.blocks_candidate >= r.blocks_before) {
        EXPECT_FALSE(r.applied);
        EXPECT_EQ(r.blocks_after, r.blocks_before);
        for (std::int64_t i = 0; i < a.nrows; ++i) ASSERT_EQ(r.perm[i], i);
        EXPECT_NE(r.reason.find("identity kept"), std::string::npos);
      } else {
        EXPECT_TRUE(r.applied);
      }
      EXPECT_EQ(count_blocks(a, 8, 4, r.perm, r.col_perm), r.blocks_after);
    }
  }
  // A diagonal matrix is optimal in natural order (2 blocks of 8×4 per full block row): a tie must
  // keep the identity.
  std::vector<Triplet<double>> t;
  for (int i = 0; i < 803; ++i) t.push_back({i, i, 1.0 + 0.01 * i});
  Csr<double> d = csr_from_triplets<double>(803, 803, t);
  for (ReorderMode m : {ReorderMode::rows, ReorderMode::symmetric}) {
    ReorderResult r = jaccard_reorder(d, 8, 4, ReorderOptions{m});
    EXPECT_FALSE(r.applied) << r.reason;
    EXPECT_EQ(r.blocks_after, 201);  // 100 full block rows × 2 + 1
  }
}

TEST(JaccardReorder, ReducesBlocksOfScrambledBandAndStencil) {
  // Scrambled band: rows mode must cut the blocks a lot; symmetric mode must come close to the
  // natural order (measured ratios: rows ~0.2 of scrambled, symmetric ~1.0 of natural).
  Csr<double> band = band_csr(2003, 6, 3);
  auto p = random_perm(band.nrows, 17);
  Csr<double> sb = permute_symmetric(band, p);
  const std::int64_t natural = count_blocks(band, 8, 4);
  ReorderResult rr = jaccard_reorder(sb, 8, 4);
  EXPECT_TRUE(rr.applied);
  EXPECT_LT(rr.blocks_after, rr.blocks_before / 2) << rr.reason;
  ReorderResult rs = jaccard_reorder(sb, 8, 4, ReorderOptions{ReorderMode::symmetric});
  EXPECT_TRUE(rs.applied);
  EXPECT_LT(rs.blocks_after, static_cast<std::int64_t>(1.3 * natural)) << rs.reason << " natural " << natural;

  Csr<double> lap = lap2d_csr(83, 71);
  Csr<double> sl = permute_symmetric(lap, random_perm(lap.nrows, 5));
  ReorderResult lr = jaccard_reorder(sl, 16, 16, ReorderOptions{ReorderMode::symmetric});
  EXPECT_TRUE(lr.applied);
  EXPECT_LT(lr.blocks_after, static_cast<std::int64_t>(1.5 * count_blocks(lap, 16, 16))) << lr.reason;
  ReorderResult lrr = jaccard_reorder(sl, 8, 4);
  EXPECT_LT(lrr.blocks_after, lrr.blocks_before) << lrr.reason;
}

TEST(JaccardReorder, ReorderedBcsrSpmmMatchesCsr) {
  Csr<double> lap = lap2d_csr(45, 29);
  Csr<double> a = permute_symmetric(lap, random_perm(lap.nrows, 3));
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  const int k = 5;
  std::vector<double> x(a.ncols * k), y(a.nrows * k), yref(a.nrows * k);
  for (auto& v : x) v = u(rng);
  csr_spmm_reference(a, x.data(), a.ncols, yref.data(), a.nrows, k);
  for (ReorderMode m : {ReorderMode::rows, ReorderMode::symmetric}) {
    ReorderResult r = jaccard_reorder(a, 8, 4, ReorderOptions{m});
    ASSERT_TRUE(r.applied);
    Bcsr<double> b = build_bcsr(a, 8, 4, r.perm, r.col_perm);
    EXPECT_EQ(b.nblocks(), r.blocks_after);
    bcsr_spmm_host(b, x.data(), a.ncols, y.data(), a.nrows, k);
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], yref[i], 1e-13) << to_string(m);
  }
}

// 7-point 3D Laplacian pattern with random values (symmetric), natural ordering.
Csr<double> lap3d_random(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<Triplet<double>> t;
  auto id = [n](int x, int y, int z) { return (z * n + y) * n + x; };
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        t.push_back({id(x, y, z), id(x, y, z), 6.0 + u(rng)});
        const int nb[3][3] = {{x + 1, y, z}, {x, y + 1, z}, {x, y, z + 1}};
        for (const auto& q : nb)
          if (q[0] < n && q[1] < n && q[2] < n) {
            const double v = -u(rng);
            t.push_back({id(x, y, z), id(q[0], q[1], q[2]), v});
            t.push_back({id(q[0], q[1], q[2]), id(x, y, z), v});
          }
      }
  return csr_from_triplets<double>(std::int64_t(n) * n * n, std::int64_t(n) * n * n, t, Symmetry::symmetric);
}

TEST(Rcm, IsAPermutationAndHandlesComponentsAndIsolatedRows) {
  // Two disconnected 2D grids plus isolated diagonal rows, scrambled.
  Csr<double> g = lap2d_csr(13, 7);
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < g.nrows; ++i)
    for (std::int64_t p = g.row_ptr[i]; p < g.row_ptr[i + 1]; ++p) {
      t.push_back({std::int32_t(i), g.col_idx[p], g.values[p]});
      t.push_back({std::int32_t(i + g.nrows), g.col_idx[p] + std::int32_t(g.nrows), g.values[p]});
    }
  const std::int64_t n = 2 * g.nrows + 5;
  for (std::int64_t i = 2 * g.nrows; i < n; ++i) t.push_back({std::int32_t(i), std::int32_t(i), 1.0});
  Csr<double> a = permute_symmetric(csr_from_triplets<double>(n, n, t), random_perm(n, 9));
  const auto p = reverse_cuthill_mckee(a);
  EXPECT_TRUE(is_permutation_of_n(p, n));
  // RCM bounds the bandwidth of a 13-wide grid component by about its width (scrambled: ~n).
  Csr<double> b = permute_symmetric(a, p);
  std::int64_t bw = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t q = b.row_ptr[i]; q < b.row_ptr[i + 1]; ++q) bw = std::max<std::int64_t>(bw, std::abs(b.col_idx[q] - i));
  EXPECT_LE(bw, 2 * 8);
}

TEST(Rcm, LineSpreadTellsAScatteredOrderFromALocalOne) {
  // A 3D stencil in its natural order reads few 8-row lines of X per entry; scrambled, about one
  // each; RCM brings it back below the natural order's. Small and empty matrices are handled.
  Csr<double> lap = lap3d_random(40, 4);  // 64000 rows: 8000 lines of X, more than a chunk's reads
  const double natural = sampled_line_spread(lap);
  Csr<double> s = permute_symmetric(lap, random_perm(lap.nrows, 11));
  const double scrambled = sampled_line_spread(s);
  const double back = sampled_line_spread(permute_symmetric(s, reverse_cuthill_mckee(s)));
  EXPECT_LT(natural, 0.2);
  EXPECT_GT(scrambled, 0.6) << natural;
  EXPECT_LT(back, 0.25);
  EXPECT_EQ(sampled_line_spread(Csr<double>{}), 0.0);
  Csr<double> one = lap2d_csr(3, 3);  // fewer rows than one chunk: one chunk, all of it
  EXPECT_GT(sampled_line_spread(one), 0.0);
  EXPECT_LE(sampled_line_spread(one), 1.0);
}

TEST(JaccardReorder, SymmetricModeRecoversScrambled3dStencilThroughRcm) {
  // Issue 3's lap3d target at test size: within 1.3x of the natural order's 8x4 blocks after a
  // random symmetric scramble (rows mode cannot: the columns stay scrambled).
  Csr<double> lap = lap3d_random(24, 4);
  Csr<double> s = permute_symmetric(lap, random_perm(lap.nrows, 11));
  ReorderOptions o;
  o.mode = ReorderMode::symmetric;
  ReorderResult r = jaccard_reorder(s, 8, 4, o);
  ASSERT_TRUE(r.applied) << r.reason;
  EXPECT_EQ(r.ordering, "rcm") << r.reason;
  EXPECT_LE(r.blocks_after, static_cast<std::int64_t>(1.3 * count_blocks(lap, 8, 4))) << r.reason;
  // The reordered operator still computes A·X.
  Bcsr<double> bc = build_bcsr(s, 8, 4, r.perm, r.col_perm);
  const int k = 3;
  std::vector<double> x(s.nrows * k), y(s.nrows * k, std::nan("")), ref(s.nrows * k);
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& v : x) v = u(rng);
  csr_spmm_reference(s, x.data(), s.nrows, ref.data(), s.nrows, k);
  bcsr_spmm_host(bc, x.data(), s.nrows, y.data(), s.nrows, k);
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-12) << i;
}

// The strict lower triangle of A plus its diagonal: a one-sided stencil (an upwind-only
// coupling), whose pattern is as unsymmetric as can be (a_ij stored, a_ji not).
Csr<double> lower_triangle(const Csr<double>& a) {
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] <= i) t.push_back({static_cast<std::int32_t>(i), a.col_idx[p], a.values[p]});
  return csr_from_triplets<double>(a.nrows, a.ncols, std::move(t));
}

// The symmetric reordering (P·A·Pᵀ) of unsymmetric patterns: RCM orders the graph of A ∪ Aᵀ (so
// A, Aᵀ and A + Aᵀ get the same order), the result is applied only where it reduces the exact
// block count of P·A·Pᵀ, and the round trip holds: (P·A·Pᵀ)·(P·x) == P·(A·x), with
// (P·A·Pᵀ)(i, j) == A(p[i], p[j]) (the values are not symmetrized), and the reordered BCSR
// computes A·X.
TEST(JaccardReorder, SymmetricModeOnUnsymmetricPatternsRoundTrips) {
  const Csr<double> lap = lap3d_random(17, 6);  // 4913 rows
  const auto scramble = random_perm(lap.nrows, 12);
  const Csr<double> one_sided = permute_symmetric(lower_triangle(lap), scramble);
  const Csr<double> halved = permute_symmetric(test::drop_half_off_diagonal(lap, 13), scramble);
  ASSERT_FALSE(is_symmetric(one_sided));
  // RCM: the order of A ∪ Aᵀ, the same for A, Aᵀ and the full (symmetric) stencil.
  const auto rcm = reverse_cuthill_mckee(one_sided);
  EXPECT_EQ(rcm, reverse_cuthill_mckee(transpose(one_sided)));
  EXPECT_EQ(rcm, reverse_cuthill_mckee(permute_symmetric(lap, scramble)));
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  const int k = 3;
  for (const Csr<double>* a : {&one_sided, &halved}) {
    const std::int64_t n = a->nrows;
    std::vector<double> x(n * k), ax(n * k);
    for (double& v : x) v = u(rng);
    csr_spmm_reference(*a, x.data(), n, ax.data(), n, k);
    for (auto [h, w] : std::vector<std::pair<int, int>>{{8, 4}, {16, 16}}) {
      const std::string what = std::string(a == &one_sided ? "one-sided" : "halved") + " " +
                               std::to_string(h) + "x" + std::to_string(w);
      ReorderResult r = jaccard_reorder(*a, h, w, ReorderOptions{ReorderMode::symmetric});
      ASSERT_TRUE(r.applied) << what << ": " << r.reason;
      ASSERT_TRUE(is_permutation_of_n(r.perm, n)) << what;
      EXPECT_EQ(r.col_perm, r.perm) << what;
      EXPECT_EQ(r.blocks_after, count_blocks(*a, h, w, r.perm, r.perm)) << what;
      // a scrambled stencil: at least 2× fewer blocks (measured 2.3× for the halved one's 8×4,
      // 3.5–11× for the others)
      EXPECT_LT(2 * r.blocks_after, r.blocks_before) << what << ": " << r.reason;
      const std::vector<std::int32_t>& p = r.perm;
      const Csr<double> b = permute_symmetric(*a, p);
      validate(b);
      for (std::int64_t i = 0; i < n; i += 7)
        for (std::int64_t q = b.row_ptr[i]; q < b.row_ptr[i + 1]; ++q) {
          const std::int32_t j = b.col_idx[q];
          const auto* rb = a->col_idx.data() + a->row_ptr[p[i]];
          const auto* re = a->col_idx.data() + a->row_ptr[p[i] + 1];
          const auto* at = std::lower_bound(rb, re, p[j]);
          ASSERT_TRUE(at != re && *at == p[j]) << what;
          ASSERT_EQ(b.values[q], a->values[at - a->col_idx.data()]) << what;
        }
      std::vector<double> px(n * k), bpx(n * k), y(n * k, std::nan(""));
      for (int c = 0; c < k; ++c)
        for (std::int64_t i = 0; i < n; ++i) px[i + c * n] = x[p[i] + c * n];
      csr_spmm_reference(b, px.data(), n, bpx.data(), n, k);
      for (int c = 0; c < k; ++c)
        for (std::int64_t i = 0; i < n; ++i) ASSERT_NEAR(bpx[i + c * n], ax[p[i] + c * n], 1e-13) << what << " row " << i;
      const Bcsr<double> bc = build_bcsr(*a, h, w, r.perm, r.col_perm);
      EXPECT_EQ(bc.nblocks(), r.blocks_after) << what;
      bcsr_spmm_host(bc, x.data(), n, y.data(), n, k);
      for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ax[i], 1e-13) << what << " " << i;
    }
  }
}

// Rows mode on rectangular matrices (m < n and m > n): a valid row permutation, never more
// blocks, the exact count, and the reordered BCSR of P·A computes A·X in A's row order.
TEST(JaccardReorder, RowsModeOnRectangularRoundTrips) {
  for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{611, 2003}, {2003, 611}}) {
    // a stretched band (row i near column i·n/m), rows scrambled: Jaccard can regroup them
    const Csr<double> a = permute_rows(test::stretched_band(m, n, 5, static_cast<unsigned>(m)), random_perm(m, 21));
    std::mt19937_64 rng(m);
    std::uniform_real_distribution<double> u(-1, 1);
    const std::string what = std::to_string(m) + "x" + std::to_string(n);
    for (auto [h, w] : std::vector<std::pair<int, int>>{{8, 4}, {16, 16}}) {
      ReorderResult r = jaccard_reorder(a, h, w);
      ASSERT_TRUE(r.applied) << what << ": " << r.reason;
      ASSERT_TRUE(is_permutation_of_n(r.perm, m)) << what;
      EXPECT_TRUE(r.col_perm.empty()) << what;
      EXPECT_LT(2 * r.blocks_after, r.blocks_before) << what << ": " << r.reason;
      EXPECT_EQ(r.blocks_after, count_blocks(a, h, w, r.perm)) << what;
      const Bcsr<double> b = build_bcsr(a, h, w, r.perm);
      const int k = 4;
      std::vector<double> x(n * k), y(m * k, std::nan("")), ref(m * k);
      for (double& v : x) v = u(rng);
      csr_spmm_reference(a, x.data(), n, ref.data(), m, k);
      bcsr_spmm_host(b, x.data(), n, y.data(), m, k);
      for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-13) << what << " " << i;
    }
    EXPECT_THROW(jaccard_reorder(a, 8, 4, ReorderOptions{ReorderMode::symmetric}), InvalidArgument);
    EXPECT_THROW(reverse_cuthill_mckee(a), InvalidArgument);
  }
}

TEST(JaccardReorder, ProgressIsMonotoneAndEndsAtOne) {
  Csr<double> a = permute_symmetric(lap2d_csr(120, 90), random_perm(10800, 2));
  std::vector<double> seen;
  ReorderOptions opt;
  opt.progress = [&](double f) { seen.push_back(f); };
  jaccard_reorder(a, 8, 4, opt);
  ASSERT_GE(seen.size(), 10u);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]);
  EXPECT_EQ(seen.back(), 1.0);
  EXPECT_GE(seen.front(), 0.0);
}

TEST(JaccardReorder, ModeNames) {
  EXPECT_EQ(parse_reorder_mode("rows"), ReorderMode::rows);
  EXPECT_EQ(parse_reorder_mode("symmetric"), ReorderMode::symmetric);
  EXPECT_THROW(parse_reorder_mode("cols"), InvalidArgument);
}

}  // namespace
}  // namespace tcsolve
