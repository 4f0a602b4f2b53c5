// Chebyshev subspace iteration, orthonormalization of the active block against the locked
// columns and within: BCGS-PIP passes on the device, the host fallback (solvers/chebyshev.hpp).
#include <algorithm>

#include "core/error.hpp"
#include "solvers/chebyshev/subspace_iteration.hpp"

namespace tcsolve::chebyshev {

// One BCGS-PIP pass (dense_ops.hpp pip_factor) on Y = the active columns of basis[cur], against
// L = its locked columns: G = [L Y]ᵀY ((nl + w) × w; reads n·(nl + 2w) words), M from G's
// Pythagorean Cholesky, Y' = [L Y]·M into basis[1 − cur] (reads n·(nl + w), writes n·w); cur
// flips. Status (fallback flag, min scaled pivot²) into status[2·slot : 2·slot + 2].
void SubspaceIteration::pip_pass(std::int64_t w, int slot) {
  const std::int64_t nl = s_.nl;
  auto src = ws_.basis[s_.cur].columns(0, nl + w);
  auto y = ws_.basis[s_.cur].columns(nl, w);
  MvView<double> g{ws_.gram.data(), nl + w, w, m_, ops_.space()};
  MvView<double> mv{ws_.factor.data(), nl + w, w, m_, ops_.space()};
  MvView<double> sv{ws_.status.data() + 2 * slot, 2, 1, 8, ops_.space()};
  ops_.gram_into(1.0, src, y, 0.0, g);
  ops_.small().pip_factor(g, nl, mv, sv);
  ops_.gemm_into(1.0, src, mv, 0.0, ws_.basis[1 - s_.cur].columns(nl, w));
  s_.cur = 1 - s_.cur;
}

// Two passes; a pass is good when it did not fall back and its min scaled pivot² ≥ 0.1 (the
// second pass then restores orthogonality to O(u)). A third pass when one was not; the host
// fallback when the third is not good either.
int SubspaceIteration::orthonormalize(std::int64_t w) {
  const auto& st = ws_.status_h;
  pip_pass(w, 0);
  pip_pass(w, 1);
  ops_.queue().download_deferred(ws_.status.columns(0, 1), ws_.status_h.data(), 8);
  ops_.queue().fetch();
  const bool two = st[2] == 0.0 && st[0] == 0.0 && st[3] >= 0.1;
  bool ok = two;
  if (!ok) {
    pip_pass(w, 2);
    ops_.queue().download_deferred(ws_.status.columns(0, 1), ws_.status_h.data(), 8);
    ops_.queue().fetch();
    ok = st[4] == 0.0 && st[5] >= 0.1;
  }
  if (ok) s_.worst_branch = std::max(s_.worst_branch, OrthoBranch::cholqr2);
  else orthonormalize_fallback(w);
  return two ? 2 : 3;
}

// Host path on the active block of basis[cur]: project it out of L twice, SVQB with dropping
// (solvers/orthonormalize.hpp), refill lost directions with random vectors projected likewise
// (keeps the block width, so that no copy of a multiple eigenvalue can slip through).
void SubspaceIteration::orthonormalize_fallback(std::int64_t w) {
  ++stats_.ortho_fallbacks;
  auto& b = ws_.basis[s_.cur];
  const std::int64_t nl = s_.nl;
  auto project = [&](std::int64_t c0, std::int64_t cnt) {
    if (c0 == 0 || cnt == 0) return;
    auto f = b.columns(c0, cnt);
    for (int pass = 0; pass < 2; ++pass) {
      ops_.gram(b.columns(0, c0), f, ws_.proj.data(), c0);
      ops_.gemm(-1.0, b.columns(0, c0), ws_.proj.data(), c0, 1.0, f);
    }
  };
  project(nl, w);
  auto o = tcsolve::orthonormalize(ops_, b.columns(nl, w), MvView<double>{}, ws_.ortho);
  s_.worst_branch = std::max(s_.worst_branch, o.branch);
  std::int64_t r = o.rank;
  for (int attempt = 0; r < w && attempt < 4; ++attempt) {
    auto f = b.columns(nl + r, w - r);
    ops_.fill_random(f, s_.refill_seed++);
    project(nl + r, w - r);
    auto of = tcsolve::orthonormalize(ops_, f, MvView<double>{}, ws_.ortho);
    r += of.rank;
  }
  if (r < w) throw Error("chebyshev: could not complete the block (n too small?)");
}

}  // namespace tcsolve::chebyshev
