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
std::int64_t SubspaceIteration::lock(std::int64_t w) {
  auto& theta = s_.theta;
  auto& rn = s_.rn;
  std::int64_t c = 0;
  while (c < w - 1 && rn[c] <= lock_bound(opt_, s_.test_a, s_.test_b, theta[c], 0.25)) {
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
  for (std::int64_t j = 0; j < c; ++j)
    s_.lock_theta.push_back(theta[j]), s_.lock_res.push_back(rn[j]);
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
  bool ok = true;
  std::int64_t first_bad = s_.nl;
  for (std::int64_t j = 0; j < k_; ++j) {
    ws_.bound[j] = tau(sel[j]) * ws_.xn[j];
    if (!(ws_.true_res[j] <= ws_.bound[j])) {
      ok = false;
      if (ws_.idx[j] < s_.nl) first_bad = std::min(first_bad, ws_.idx[j]);
    }
  }
  if (ok || last) {
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
  s_.lock_theta.resize(first_bad), s_.lock_res.resize(first_bad);
  s_.nl = first_bad;
}

}  // namespace tcsolve::chebyshev
