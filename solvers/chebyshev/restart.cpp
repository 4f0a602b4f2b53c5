// Chebyshev subspace iteration, the restart between two filters: the cut, the per-column degrees
// (the residual model) and the rung of the precision ladder (solvers/chebyshev.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/format.hpp"
#include "solvers/chebyshev/subspace_iteration.hpp"

namespace tcsolve::chebyshev {

FilterPlan SubspaceIteration::restart(std::int64_t w) {
  FilterPlan p;
  p.cut = filter_cut(w);
  choose_degrees(w, p.cut);
  s_.last_cut = p.cut;
  for (std::int64_t i = 0; i < w && s_.nl + i < k_; ++i)
    p.wanted_degree = std::max(p.wanted_degree, s_.deg[i]);
  s_.wanted_steps += p.wanted_degree;
  // The rung of this filter (chebyshev.hpp, filter_precision) and, for the climb, the slowest
  // wanted column's residual/test ratio now.
  std::string why;
  p.fp32 = ladder_.on && stats_.climbed_at < 0 && s_.ax_valid && fp32_fits(w, p.cut, &why);
  if (ladder_.on && !p.fp32 && stats_.climbed_at < 0)
    stats_.fp64_reason = s_.ax_valid ? why : "no A*X from a Rayleigh-Ritz yet";
  if (p.fp32) p.slow_before = slowest_ratio(w);
  return p;
}

// Cut = largest active Ritz value (≥ λ_m), or an earlier one where that was less. When the active Ritz values are not resolved beyond
// their residuals (the block sits inside one eigenspace: a multiplicity above the block width),
// that cut collapses onto the wanted eigenvalue and the filter stops damping the next distinct
// one; then the cut is lifted by a growing multiple of the largest residual (the next eigenvalue
// lies about that far up). The interval's ends are kept below and above every Ritz value.
//
// Every earlier block gave an upper bound of λ_m as well (Courant–Fischer: the largest Ritz value
// of an m-dimensional subspace, locked and active columns together, is ≥ λ_m of Â), so the cut
// is the least of them. A filter can leave its last columns as rounding (a guard column at the
// cut keeps none of its own direction once the top pair's component in it has grown by
// (ρ_top/ρ_cut)^d ≈ 2.7^48 ≈ 1e20): its Ritz value then lies far above λ_m (gen:rgg:55000,
// 16 largest: −26.0 → −11.8 after the second filter), and a cut there wasted the next filter.
double SubspaceIteration::filter_cut(std::int64_t w) {
  const auto& theta = s_.theta;
  double cut = std::min(theta[w - 1], s_.cut_bound);
  s_.cut_bound = cut;
  const double spread = theta[w - 1] - theta[0];
  const double rmax = *std::max_element(s_.rn.begin(), s_.rn.begin() + w);
  if (w > 1 && spread <= rmax && s_.it > 0) {
    s_.lift = s_.lift > 0 ? 4.0 * s_.lift : 4.0;
    cut = std::min(cut + s_.lift * rmax, theta[0] + 0.25 * (s_.upper - theta[0]));
    cut = std::max(cut, theta[w - 1]);
  }
  s_.lower = std::min(s_.lower, theta[0]);
  if (!s_.lock_theta.empty())
    s_.lower = std::min(s_.lower, *std::min_element(s_.lock_theta.begin(), s_.lock_theta.end()));
  if (!(s_.upper > cut)) s_.upper = cut + std::abs(cut - s_.lower) + 1e-300;  // block spans all
  return cut;
}

// Degrees for the active pairs (θ ascending in Â, residuals rn): the residual of pair i shrinks
// by ρᵢ^(−d) per filter, ρᵢ = |tᵢ| + √(tᵢ² − 1), tᵢ = (θᵢ − ce)/e; the model aims at
// tol/overshoot (a column close to the test then converges in one filter instead of creeping
// over several), times degree_margin. Guard columns (global index ≥ k) take the largest wanted
// degree (or the cap with guard_max_degree); even, within [dmin, cap], non-decreasing (step j
// then runs on a column suffix).
void SubspaceIteration::choose_degrees(std::int64_t w, double cut) {
  const double e = (s_.upper - cut) / 2, ce = (s_.upper + cut) / 2;
  const auto& theta = s_.theta;
  auto need_of = [&](std::int64_t i) {
    return std::max(s_.rn[i] / tau(theta[i]), 1.0) * copt_.overshoot;
  };
  // The cap follows the work left: while the slowest wanted column needs many more steps, long
  // filters (fewer Rayleigh-Ritz rounds); near the end max_degree, so that the last filter does
  // not overshoot by much.
  double dslow = 0.0;
  for (std::int64_t i = 0; i < w && s_.nl + i < k_; ++i) {
    const double t = (theta[i] - ce) / e;
    if (t < -1.0)
      dslow = std::max(dslow, std::log(need_of(i)) / std::log(-t + std::sqrt(t * t - 1.0)));
    else
      dslow = 1e9;
  }
  // Long filters only once the cut has settled (moved < 5% of its distance to the lower end since
  // the last filter): a filter on a poor cut converges slowly per step.
  s_.steps_left = dslow;
  const bool settled =
      s_.prev_cut > 0 && std::abs(cut - s_.prev_cut) < 0.05 * std::abs(cut - s_.lower);
  s_.prev_cut = cut;
  const int dcap = std::min(
      settled ? std::max(dmax_, std::min(dhigh_, 2 * (static_cast<int>(dslow / 4) + 1))) : dmax_,
      rounding_cap(w, cut));
  int dwant = 0;
  for (std::int64_t i = 0; i < w; ++i) {
    int d = dcap;
    const double t = (theta[i] - ce) / e;
    if (t < -1.0) {
      const double rho = -t + std::sqrt(t * t - 1.0);
      d = static_cast<int>(std::ceil(copt_.degree_margin * std::log(need_of(i)) / std::log(rho)));
    }
    d = std::clamp(d, dmin_, dcap);
    d += d & 1;
    s_.deg[i] = d;
    if (s_.nl + i < k_) dwant = std::max(dwant, d);
  }
  for (std::int64_t i = 0; i < w; ++i) {
    if (s_.nl + i >= k_)
      s_.deg[i] = copt_.guard_max_degree ? dcap : (dwant > 0 ? dwant : s_.deg[i]);
    if (i > 0) s_.deg[i] = std::max(s_.deg[i], s_.deg[i - 1]);
  }
}

// The filter multiplies column i's component along the most amplified active direction (θ₀) by
// (ρ₀/ρᵢ)^d over its own; once that growth passes ~1/ε, the orthonormalization after the filter
// keeps none of the column's own direction, and more steps only cost. The cap keeps the slowest
// wanted column's growth ≤ kFilterGrowth (8 of 16 digits left to converge on), never below dmin.
// (Locked columns are projected out inside the filter: filter.cpp.) 2-core CPU, forced
// chebyshev: gen:rgg:55000, 16 largest (ρ₀/ρ₁₅ = 1.9): degree 48 → 28, 5 → 4 outer iterations,
// solve 1.37 → 0.92–0.96 s, the same eigenvalues to 2e-15; 14 other matrices and ends (meshes,
// Laplacians, bcsstk21, luxembourg, crack, can_1072) within ±1 outer iteration and their timing
// noise.
int SubspaceIteration::rounding_cap(std::int64_t w, double cut) const {
  constexpr double kFilterGrowth = 1e8;
  const FilterInterval iv(s_.upper, cut, s_.lower);
  const double ratio = iv.rho(s_.theta[0]) / iv.rho(s_.theta[slowest(w)]);
  if (!(ratio > 1.0)) return dhigh_;
  const double d = std::log(kFilterGrowth) / std::log(ratio);
  return d >= dhigh_ ? dhigh_ : std::max(dmin_, static_cast<int>(d) / 2 * 2);
}

// Whether the filter on the active block may take the fp32 rung (chebyshev.hpp): the
// amplification of the most amplified direction over the slowest wanted column, over the
// filter's top degree, below 1e5 (fp32 rounding along it then stays below 1e-2 of the slowest
// column), the wanted end not small against ‖A‖, and no locked-column projection inside the
// filter. `why` (when not null) receives the reason a filter stays on fp64, for the precision line.
bool SubspaceIteration::fp32_fits(std::int64_t w, double cut, std::string* why) const {
  const FilterInterval iv(s_.upper, cut, s_.lower);
  const std::int64_t slow = slowest(w);
  const int dtop = s_.deg[w - 1];
  // The most amplified direction the block holds: the lowest Ritz value seen (θ₀ and the locked
  // θ), not the probe's bound of the spectrum (`lower`) nor a0. Before the first Rayleigh-Ritz
  // has neared the end, that bound lies far beyond θ₀ (elast3d:64's first filter, largest end:
  // ρ 5.6 against 1.17, "growth" 1e33 in 48 steps) and kept the first filter of every
  // largest-end solve off the rung, although the directions between are not yet in the block:
  // fp32 noise along them only perturbs the start. H200, same call: elast3d:64 k = 16 largest
  // 0.101 → 0.085 s, lap3d:64 k = 64 largest 0.165 → 0.150 s, the same outer iterations;
  // lap2d:200 (40k rows) 0.019 → 0.021 s; 1138_bus's 1e46 spread is still refused.
  double lo_seen = s_.theta[0];
  for (double t : s_.lock_theta) lo_seen = std::min(lo_seen, t);
  const double ratio = iv.rho(lo_seen) / std::max(iv.rho(s_.theta[slow]), 1.0);
  const double growth = dtop * std::log(std::max(ratio, 1.0));
  if (growth > std::log(1e5)) {
    if (why)
      *why = format("amplification %.1e over the slowest wanted column in %d steps",
                    std::exp(growth), dtop);
    return false;
  }
  // The wanted end must not be small against ‖A‖: A·x of a wanted vector cancels in the fp32
  // sums by |λ|/‖A‖ (a smooth vector of a Laplacian: 6xᵢ − Σ neighbours ≈ λ·xᵢ). Measured on the
  // H200: lap3d:100's smallest end (|λ|/‖A‖ 2.4e-4 to 3.5e-3) lost ground on every fp32 filter
  // (k = 64: the cut jumped to 3.1 after a degree-100 one) while its largest end converged on
  // fp32 in as many outer iterations as fp64.
  if (std::abs(s_.theta[slow]) < 0.25 * s_.norm) {
    if (why)
      *why = format("the wanted end |theta| %.3g is below ||A||/4", std::abs(s_.theta[slow]));
    return false;
  }
  if (s_.nl > 0 && ratio > 1.0) {
    const int period = projection_period(ratio);
    if (period < dtop) {
      if (why)
        *why = format("%lld locked columns to project out every %d steps of %d",
                      static_cast<long long>(s_.nl), period, dtop);
      return false;
    }
  }
  return true;
}

// Stagnation on the fp32 rung: three fp32 filters since the slowest wanted residual/test ratio
// last fell below 0.9 of its best (any rung): climb to fp64 for good. (A filter on a cut that
// still moves can gain little in fp64 as well, so one slow filter is no sign; lap3d:100, k = 64
// on the H200 oscillated on the fp32 rung without a run of three.)
void SubspaceIteration::watch_climb(std::int64_t w, const FilterPlan& plan) {
  const double slow_after = slowest_ratio(w);
  if (slow_after < 0.9 * ladder_.best_slow) {
    ladder_.best_slow = slow_after;
    ladder_.stale32 = 0;
  } else if (plan.fp32 && ++ladder_.stale32 >= 3) {
    stats_.climbed_at = s_.it;
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "climbed to fp64 at outer iteration %lld: three fp32 filters without cutting "
                  "the slowest wanted residual below 0.9 of its best (%.3g of its test; last "
                  "%.3g -> %.3g)",
                  static_cast<long long>(s_.it + 1), ladder_.best_slow, plan.slow_before,
                  slow_after);
    stats_.climb_reason = buf;
  }
}

}  // namespace tcsolve::chebyshev
