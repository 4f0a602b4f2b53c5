// Jaccard row reordering (after Sylos Labini et al., as used by SMaT): rows whose column-block
// patterns are similar are packed into the same block row, so P·A needs fewer h×w blocks.
//
// Algorithm (near-linear instead of SMaT's all-pairs O(n²)):
//   1. pattern of row i: S_i = { c / kw : c column of row i }  (kw = w for ReorderMode::rows,
//      kw = 1 for ReorderMode::symmetric, where the columns move with the rows);
//   2. inverted index key -> rows. The candidates of a group are exactly the rows that share a
//      key with it (every other row has Jaccard similarity 0); keys held by more than
//      `hub_factor` × the mean number of rows per key (dense columns) are skipped for candidates;
//   3. groups of exactly h rows are grown greedily: start from a seed, repeatedly add the
//      unassigned candidate with the smallest Jaccard distance 1 - |U ∩ S_j| / |U ∪ S_j| to the
//      group's union U (overlap counts updated incrementally through the index); when no
//      candidate is within `max_distance`, the next row in MinHash order is taken instead.
//      A key scans at most `max_scan` unassigned rows of its index list (bounded work).
//      The next seed is the candidate most connected to the previous group (a growing front),
//      or the next unassigned row in MinHash order (rows sorted by the minimum of a hash over
//      S_i, so rows sharing their min-hash key are adjacent).
//   4. symmetric mode only: reverse Cuthill-McKee is a second candidate; the one with fewer
//      blocks is kept (RCM wins on stencils such as the scrambled 3D Laplacian);
//   5. never worse: the block count of the result is compared with that of the input order and
//      the identity is kept unless the reordering reduces blocks.
// Unsymmetric patterns (symmetric mode): any permutation gives a valid P·A·Pᵀ (solves with
// x̃ = P·x, b̃ = P·b), and both candidates are judged by the exact block count of P·A·Pᵀ. RCM
// needs an undirected graph and orders that of A ∪ Aᵀ (preprocess/rcm.hpp); the Jaccard grouping
// keeps A's own row patterns, the block rows it builds: run on the pattern of A + Aᵀ instead it
// was no better (8×4 / 16×16 blocks after, A's patterns vs A + Aᵀ's: scrambled 7-point 24³ with
// half the off-diagonal entries dropped 18386 / 19422 and 8026 both; one-sided elast3d:12
// scrambled 14106 / 16143 and 4066 / 4600; random 20000 rows, 8 a row 150807 / 156150; within
// 1.2 % (either way) elsewhere, at 1.5–2× the time).
// Work: O(nnz + Σ_groups |U|·max_scan), linear in nnz for a fixed max_scan. Pattern,
// index, MinHash sort and block counts use all threads; the greedy growth is sequential.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/csr.hpp"

namespace tcsolve {

enum class ReorderMode {
  rows,       // A' = P·A: outputs go back through Bcsr::perm; the solvers never see it
  symmetric,  // A' = P·A·Pᵀ (square A): needs col_perm too (or solvers in the permuted basis)
};
const char* to_string(ReorderMode m);
// "rows" / "symmetric"; throws InvalidArgument otherwise.
ReorderMode parse_reorder_mode(const std::string& s);

struct ReorderOptions {
  ReorderMode mode = ReorderMode::rows;
  // Jaccard distance above which a candidate is not added (then the next row in MinHash order).
  double max_distance = 1.0;
  // Keys with more than hub_factor × mean rows per key (and > 64 rows) are not used for candidates.
  double hub_factor = 16.0;
  // When a key joins a group's union, at most this many of its unassigned rows (lowest index
  // first) become or strengthen candidates: bounds the work per key for dense patterns.
  int max_scan = 256;
  // Bottom-k MinHash sketch size: a row is found as a candidate only through its `sketch` keys of
  // smallest hash, and |U ∩ S_j| is estimated from them (exact for rows with <= sketch keys).
  int sketch = 16;
  // Called with the fraction done in [0, 1] on the calling thread, about every 1 %; may be empty.
  std::function<void(double)> progress;
};

struct ReorderResult {
  // Row i of P·A is row perm[i] of A. Identity when applied == false.
  std::vector<std::int32_t> perm;
  // Column permutation to pass to build_bcsr: == perm for an applied symmetric reordering,
  // empty otherwise.
  std::vector<std::int32_t> col_perm;
  ReorderMode mode = ReorderMode::rows;
  bool applied = false;
  std::int64_t blocks_before = 0;     // h×w blocks of A
  std::int64_t blocks_candidate = 0;  // h×w blocks with the computed permutation
  std::int64_t blocks_after = 0;      // of the chosen order (= before when not applied)
  double seconds = 0;                 // wall time of the whole call
  // Which ordering produced perm: "jaccard", or "rcm" when in symmetric mode the reverse
  // Cuthill-McKee candidate (preprocess/rcm.hpp) gave fewer blocks than the Jaccard grouping.
  std::string ordering = "jaccard";
  std::string reason;                 // one line: what was chosen and why
};

// Reordering for block shape h×w. The result can be passed straight to
// build_bcsr(a, h, w, r.perm, r.col_perm). Symmetric mode requires a square matrix.
template <class T>
ReorderResult jaccard_reorder(const Csr<T>& a, int h, int w, const ReorderOptions& opt = {});

}  // namespace tcsolve
