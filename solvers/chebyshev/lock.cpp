// Chebyshev subspace iteration, locking and the final check: the converged prefix of the active
// pairs moves to the locked columns; when k pairs are found, A is applied once more to the k
// chosen vectors and their true residuals decide (pairs failing are unlocked).
#include <algorithm>

#include "core/error.hpp"
#include "solvers/chebyshev/subspace_iteration.hpp"

namespace tcsolve::chebyshev {

// Locked at a quarter of the test: a locked vector's error (its residual over the gap) reappears
// in the active columns, which are kept orthogonal to it, as a residual of about the locked
// residual; locked at the full test, pairs whose own bound is smaller (rel with a smaller |λ|)
// could never pass (1138_bus, 10 largest: the 4th pair stalled at 1.02× its bound for 2000
// iterations). The last active column is never locked. Locking copies the columns into the other
// basis (2·n·c words), so that both hold L.
//
// A pair at the rounding floor cannot reach a test below it: its computed residual stalls there
// (the Neumann Laplacian's null vector on 62,500 rows at 8.7u·‖A‖, above the 4u·‖A‖ floor_a,
// ran to the 2000-iteration limit). The front pair is locked as at the floor once it has sat in
// the floor zone for kStallIterations outer iterations without halving its residual; the check
// then ends the solve with it (floor_stop) and the caller's test decides, with the floors it
// knows (the eigs driver: λ ≈ 0, the residual's own rounding; else escalation).
double SubspaceIteration::floor_zone(double theta) const {
  constexpr double u = 1.1102230246251565e-16;
  const double t = std::abs(theta);
  return std::max(4.0 * (opt_.floor_a + t * opt_.floor_b), 16.0 * u * (res_.a_norm + t));
}

bool SubspaceIteration::floor_stalled(std::int64_t w) {
  const double r = s_.rn[0];
  if (w < 2 || lockable(0, w) || !(r <= floor_zone(s_.theta[0]))) {
    s_.stall_best = std::numeric_limits<double>::infinity(), s_.stall_its = 0;
    return false;
  }
  if (r < 0.5 * s_.stall_best) {
    s_.stall_best = r, s_.stall_its = 0;
    return false;
  }
  return ++s_.stall_its >= kStallIterations;
}

// The leak above is about the locked residual in absolute terms, so a pair is also locked no higher
// than a quarter of the least test among the wanted active pairs after it (those whose test lies
// above the floor). Under the rel test a wanted set spanning magnitudes needs this: bcsstm08, 32
// largest, |λ| from 1.4e6 down to 1000 (721 copies): the top pairs, locked at 3.6e-3, held the
// 1000s at 1–5e-5 against their test of 1e-5 until the iteration limit. (At the smallest end the
// pairs after one have larger |θ| and larger tests: nothing changes there.)
double SubspaceIteration::leak_cap(std::int64_t c, std::int64_t w) const {
  double t = std::numeric_limits<double>::infinity();
  for (std::int64_t i = c + 1; i < w && s_.nl + i < k_; ++i) {
    const double th = std::abs(s_.theta[i]);
    const double test = opt_.tol * (s_.test_a + th * s_.test_b);
    if (test > opt_.floor_a + th * opt_.floor_b) t = std::min(t, test);
  }
  return 0.25 * t;
}

bool SubspaceIteration::lockable(std::int64_t c, std::int64_t w) const {
  const double th = std::abs(s_.theta[c]);
  const double own = 0.25 * opt_.tol * (s_.test_a + th * s_.test_b);
  return s_.rn[c] <= std::max(std::min(own, leak_cap(c, w)), opt_.floor_a + th * opt_.floor_b);
}

std::int64_t SubspaceIteration::lock(std::int64_t w) {
  auto& theta = s_.theta;
  auto& rn = s_.rn;
  const bool front_floor = floor_stalled(w);
  std::int64_t c = 0;
  while (c < w - 1 && ((c == 0 && front_floor) || lockable(c, w))) {
    // Beyond k only pairs below the k-th smallest value locked so far.
    if (s_.nl + c >= k_) {
      const double kth = kth_smallest(c);
      if (!(theta[c] < kth + tau(kth))) break;
    }
    ++c;
  }
  if (c == 0) return w;
  ops_.copy(ws_.basis[s_.cur].columns(s_.nl, c), ws_.basis[1 - s_.cur].columns(s_.nl, c));
  stats_.dense_budget_words += 2.0 * n_ * c;
  for (std::int64_t j = 0; j < c; ++j) {
    s_.lock_theta.push_back(theta[j]), s_.lock_res.push_back(rn[j]);
    s_.lock_floor.push_back(j == 0 && front_floor ? 1 : 0);
  }
  if (front_floor) s_.stall_best = std::numeric_limits<double>::infinity(), s_.stall_its = 0;
  for (std::int64_t i = 0; i + c < w; ++i) theta[i] = theta[i + c], rn[i] = rn[i + c];
  s_.nl += c;
  return w - c;
}

// Done: k pairs locked or passing the full test, and no active Ritz value below the k-th of them.
// (The active prefix that passes the full test counts as well: locking waits for a quarter of it,
// and a pair held just above that by the locked vectors' own errors must not keep the solve going
// once it passes.)
bool SubspaceIteration::all_found(std::int64_t w) {
  std::int64_t ca = 0;
  while (ca < w && s_.nl + ca < k_ && s_.rn[ca] <= tau(s_.theta[ca])) ++ca;
  if (s_.nl + ca < k_) return false;
  const double kth = kth_smallest(ca);
  return ca >= w || s_.theta[ca] >= kth - tau(kth);
}

// The k smallest pairs (in Â) among the locked and active ones, gathered into scratch(:, 0:k);
// A·X into basis[1 − cur] (one apply of k columns), true residuals and ‖x‖ to the host, each
// tested against tau(θ)·‖x‖. basis[1 − cur]'s locked columns are restored afterwards.
bool SubspaceIteration::check(std::int64_t w, bool last) {
  auto& cand = ws_.cand;
  cand.clear();
  for (std::int64_t j = 0; j < s_.nl; ++j) cand.push_back({s_.lock_theta[j], j});
  for (std::int64_t i = 0; i < w; ++i) cand.push_back({s_.theta[i], s_.nl + i});
  std::stable_sort(cand.begin(), cand.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  auto& sel = ws_.sel_theta;
  for (std::int64_t j = 0; j < k_; ++j) ws_.idx[j] = cand[j].second, sel[j] = cand[j].first;
  auto x = ws_.scratch.columns(0, k_);
  ops_.gather_columns(ws_.basis[s_.cur].columns(0, m_), ws_.idx.data(), k_, x);
  auto ax = ws_.basis[1 - s_.cur].columns(0, k_);
  ap_.apply(x, ax);
  ops_.from_host(sel.data(), k_, ws_.theta_sel.view());
  ops_.chebyshev().residual_norms_into(ax, x, ws_.theta_sel.view(), sgn_, ws_.resid.columns(0, 1));
  ops_.queue().download_deferred(MvView<const double>{ws_.resid.data(), k_, 1, m_, ops_.space()},
                         ws_.true_res.data(), k_);
  ops_.queue().fetch();
  ops_.column_norms(x, ws_.xn.data());
  // AX overwrote the locked copies in the other basis: restore them.
  const std::int64_t kl = std::min(k_, s_.nl);
  if (kl > 0) ops_.copy(ws_.basis[s_.cur].columns(0, kl), ws_.basis[1 - s_.cur].columns(0, kl));
  // A failing pair locked at the floor and still in its zone is tolerated: when only such pairs
  // fail, the solve ends (floor_stop) instead of unlocking them to stall again.
  bool ok = true, floor_only = true;
  std::int64_t first_bad = s_.nl;
  for (std::int64_t j = 0; j < k_; ++j) {
    ws_.bound[j] = tau(sel[j]) * ws_.xn[j];
    if (!(ws_.true_res[j] <= ws_.bound[j])) {
      ok = false;
      const std::int64_t i = ws_.idx[j];
      if (i < s_.nl && s_.lock_floor[i] && ws_.true_res[j] <= floor_zone(sel[j]) * ws_.xn[j]) continue;
      floor_only = false;
      if (i < s_.nl) first_bad = std::min(first_bad, i);
    }
  }
  if (ok || last || floor_only) {
    s_.floor_stop = !ok && floor_only;
    fill_result(x, k_);
    return ok;
  }
  unlock(first_bad, w);
  return false;
}

// Values (of A), true residuals, their bounds and the vectors X (n × count) into the result: on
// the host (the buffer prepared by the helper thread) or left in ops.space() (vectors_out).
void SubspaceIteration::fill_result(MvView<const double> x, std::int64_t count) {
  res_.values.resize(count);
  for (std::int64_t j = 0; j < count; ++j) res_.values[j] = sgn_ * ws_.sel_theta[j];
  res_.residual_norms.assign(ws_.true_res.begin(), ws_.true_res.begin() + count);
  res_.residual_bounds.assign(ws_.bound.begin(), ws_.bound.begin() + count);
  if (opt_.vectors_out) {
    *opt_.vectors_out = ops_.allocate(n_, count);
    ops_.copy(x, opt_.vectors_out->view());
  } else {
    TCSOLVE_REQUIRE(prep_.has_value(), "chebyshev: the result's vectors were filled already");
    prep_->wait();
    ops_.to_host(x, vecs_.data(), n_);
    prep_.reset();  // unpins the buffer
    res_.vectors = std::move(vecs_);
  }
}

// Unlocks the locked pairs from first_bad on: those columns become active again, ahead of the w
// active ones (their order in basis[cur] already is locked-then-active); an unlocked pair's
// residual is taken as at least twice its test, so that it is not locked again at once.
void SubspaceIteration::unlock(std::int64_t first_bad, std::int64_t w) {
  const std::int64_t back = s_.nl - first_bad;
  if (back <= 0) return;
  auto& theta = s_.theta;
  auto& rn = s_.rn;
  std::copy(theta.begin(), theta.begin() + w, ws_.swap_theta.begin());
  std::copy(rn.begin(), rn.begin() + w, ws_.swap_rn.begin());
  for (std::int64_t j = 0; j < back; ++j) {
    theta[j] = s_.lock_theta[first_bad + j];
    rn[j] = std::max(s_.lock_res[first_bad + j], 2.0 * tau(theta[j]));
  }
  for (std::int64_t i = 0; i < w; ++i)
    theta[back + i] = ws_.swap_theta[i], rn[back + i] = ws_.swap_rn[i];
  s_.lock_theta.resize(first_bad), s_.lock_res.resize(first_bad), s_.lock_floor.resize(first_bad);
  // (the pairs now at the front start a fresh watch: a pair the check rejected is not locked at
  // the floor again on the next iteration)
  s_.stall_best = std::numeric_limits<double>::infinity(), s_.stall_its = 0;
  s_.nl = first_bad;
}

}  // namespace tcsolve::chebyshev
