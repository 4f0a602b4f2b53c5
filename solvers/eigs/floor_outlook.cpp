// The planner's facts about the spectrum's ends before any solve: the diagonal and Gershgorin
// bounds (spectrum_hints) and whether the rel test can be met at the wanted end by an iteration
// on A (floor_outlook: the rounding floor against tol·|λ|). Split from plan.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "solvers/eigs/plan.hpp"
#include "solvers/eigs/pairs.hpp"

namespace tcsolve {

void spectrum_hints(const Csr<double>& a, const Csr<double>* b, PlanFacts& f) {
  auto diagonal = [](const Csr<double>& m, std::int64_t i) {
    for (std::int64_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p)
      if (m.col_idx[p] == i) return m.values[p];
    return 0.0;
  };
  f.diag_min = INFINITY, f.diag_max = -INFINITY;
  f.a_disc_lo = INFINITY, f.a_disc_hi = -INFINITY;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    const double aii = diagonal(a, i), bii = b ? diagonal(*b, i) : 1.0;
    if (bii > 0) {
      f.diag_min = std::min(f.diag_min, aii / bii);  // e_iᵀAe_i / e_iᵀBe_i
      f.diag_max = std::max(f.diag_max, aii / bii);
    }
    double off = 0.0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] != i) off += std::abs(a.values[p]);
    f.a_disc_lo = std::min(f.a_disc_lo, aii - off);
    f.a_disc_hi = std::max(f.a_disc_hi, aii + off);
  }
  if (!b) f.gershgorin_lo = f.a_disc_lo, f.gershgorin_hi = f.a_disc_hi;
}

FloorOutlook floor_outlook(const PlanFacts& f, const EigsOptions& opt, const SpectralProbe& probe) {
  FloorOutlook o;
  const double u = eigs_detail::kUnitRoundoff;
  const double sgn = opt.which == Which::largest ? -1.0 : 1.0;
  const double a_norm = f.a_norm > 0 ? f.a_norm : std::max(std::abs(probe.lower), std::abs(probe.upper));
  const double binv = f.generalized ? std::max(f.binv_norm, 1e-300) : 1.0;
  const double bnorm = f.generalized ? std::max(f.b_norm, 1e-300) : 1.0;
  o.z0 = std::cbrt(u * u) * a_norm * binv;
  // tol·|λ|·‖B·x‖ < 4u·‖A‖·‖x‖ for every x when |λ| < z1 (‖B·x‖ ≤ ‖B‖·‖x‖), for some x up to
  // z1·‖B‖·‖B⁻¹‖ (‖B·x‖ ≥ ‖x‖/‖B⁻¹‖): out of reach below the first, at risk below the second.
  o.z1 = 4.0 * u * a_norm / (opt.tol * bnorm);
  const double z1_risk = o.z1 * bnorm * binv;
  // The wanted end in Â = sgn·A (of the pencil): the probe's Ritz value of A (x its vector:
  // λ₁ ≤ θ·‖x‖²/xᵀBx, so ≤ θ·‖B⁻¹‖ for θ ≥ 0, ≤ θ/‖B‖ below) and the unit vectors' quotients
  // a_ii/b_ii bound it from above; the probe's bound of A from below (/‖B‖ or ·‖B⁻¹‖ likewise).
  auto to_pencil = [&](double x, bool upper) { return (x >= 0) == upper ? x * binv : x / bnorm; };
  const double ritz = to_pencil(sgn > 0 ? probe.lower : -probe.upper, true);
  const double diag = sgn > 0 ? f.diag_min : -f.diag_max;
  const double hi = std::isfinite(diag) ? std::min(ritz, diag) : ritz;
  // Gershgorin's discs bound the end too (standard problems; f.gershgorin_*): a stiff matrix's
  // constrained rows hold only their diagonal, where the probe's bound is loose.
  const double gersh = sgn > 0 ? f.gershgorin_lo : -f.gershgorin_hi;
  const double probe_lo = to_pencil(sgn > 0 ? probe.lower_bound : -probe.upper_bound, false);
  const double lo = std::min(hi, std::isfinite(gersh) && !f.generalized ? std::max(probe_lo, gersh) : probe_lo);
  o.lambda_lo = sgn > 0 ? lo : -hi;
  o.lambda_hi = sgn > 0 ? hi : -lo;
  if (opt.conv != ConvTest::rel || opt.which == Which::nearest || opt.has_sigma) return o;
  // Out of reach when the upper bound of λ₁ lies in (z0, z1): only an eigenvalue below −z1 or
  // within z0 of 0, seen by neither the probe nor the diagonal, would bring the test back in
  // reach, and then shift-invert finds it too (its shift search). At risk short of that.
  if ((hi > o.z0 && hi < o.z1) || (hi < -o.z0 && lo > -o.z1)) o.risk = FloorRisk::out_of_reach;
  else if (std::abs(hi) > o.z0 && std::abs(hi) < kFloorMargin * z1_risk) o.risk = FloorRisk::at_risk;
  if (o.risk == FloorRisk::clear) return o;
  char b[480];
  std::snprintf(b, sizeof b, "the wanted end lies in [%.3g, %.3g] (the probe%s); there the rel test asks "
                "for about tol*|lambda| = %.3g, %s the rounding floor of any iteration on A, 4u*|A| = "
                "%.3g, which only a spectral transformation (shift-invert) or a dense solve gets below",
                o.lambda_lo, o.lambda_hi, std::isfinite(diag) && diag < ritz ? " and A's diagonal" : "",
                opt.tol * std::abs(hi), o.risk == FloorRisk::out_of_reach ? "below" : "perhaps below or near",
                4.0 * u * a_norm);
  o.line = b;
  return o;
}

}  // namespace tcsolve
