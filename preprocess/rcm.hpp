// Reverse Cuthill-McKee ordering of a square matrix's symmetrized pattern (A ∪ Aᵀ).
// A candidate of the symmetric reordering: on stencil matrices it restores locality that the
// greedy Jaccard grouping does not (scrambled 3D Laplacian: 0.94-0.99x the natural order's 8x4
// blocks against 1.5x for Jaccard, see docs/preprocessing.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/csr.hpp"

namespace tcsolve {

// perm[i] = the original index of the i-th node in RCM order (row i of P·A·Pᵀ is row perm[i]
// of A). Each connected component starts from a pseudo-peripheral node (George-Liu), neighbours
// are visited by increasing degree, and the whole order is reversed. O(nnz log d).
template <class T>
std::vector<std::int32_t> reverse_cuthill_mckee(const Csr<T>& a);

// How much the order scatters a product's reads of X: over up to 64 chunks of 512 consecutive
// rows spread evenly through A, the distinct 8-row lines of X the chunk's entries read (one
// cache line of a column-major X column) per entry read. About 1 for a random order (every entry
// a line of its own); a 3D 7-point stencil in its natural order, 0.09; a 2D 5-point one, 0.08.
// O(sampled entries · log) work, at most 64·512 rows.
double sampled_line_spread(const Csr<double>& a);

// The order a CPU eigensolve should iterate in (the command's and Python's --reorder auto): a
// reverse Cuthill–McKee order where A is large (≥ kLocalityRows rows: X of 16–32 columns is past
// the L2 caches), its order scatters the product's reads of X (spread ≥ kLocalitySpread: a random
// order's is about 0.8–1, a stencil's natural order 0.08–0.09) and RCM lowers the spread at least
// kLocalityGain-fold (a random graph has no order that helps). perm empty: keep A's order.
// 2-core CPU, 16 largest: gen:rgg:200000 (spread 0.83 → 0.03) 14.7 s as read, 7.4 s reordered;
// gen:rgg:55000 (0.61 → 0.02) 2.20 s, 2.09–2.14 s.
constexpr std::int64_t kLocalityRows = 32768;
constexpr double kLocalitySpread = 0.5;
constexpr double kLocalityGain = 2.0;
struct LocalityOrder {
  std::vector<std::int32_t> perm;  // row i of P·A·Pᵀ is row perm[i] of A (empty: none)
  Csr<double> permuted;            // P·A·Pᵀ when perm is not empty
  double before = 0, after = 0;    // sampled_line_spread of A and of P·A·Pᵀ (after: when tried)
  double seconds = 0;
  std::string describe() const;    // "reverse Cuthill-McKee, 0.83 -> 0.03 lines of X read per entry, in 0.5 s"
};
LocalityOrder locality_order(const Csr<double>& a);

}  // namespace tcsolve
