// Chebyshev subspace iteration, the filter: the scaled Chebyshev recurrence with per-column
// degrees on fp64 blocks, and its residual form on the fp32 rung (solvers/chebyshev.hpp).
#include <algorithm>
#include <cmath>

#include "solvers/chebyshev/subspace_iteration.hpp"

namespace tcsolve::chebyshev {

// Y ← p_d(Â)·Y on the active columns of basis[cur] (w of them), p_d the scaled Chebyshev
// polynomial of the interval [cut, upper] normalized at a0: column i to its degree deg[i] (even,
// non-decreasing: step j runs on the suffix of columns whose degree exceeds j). Y₀ = basis[cur],
// Y₁ = basis[1 − cur], then they alternate: the even degrees end in basis[cur]. Per step: one
// apply on the suffix and the three-term pass (or both fused into one kernel, fused_step).
void SubspaceIteration::filter(std::int64_t w, double cut) {
  const FilterInterval iv(s_.upper, cut, s_.lower);
  const double e = iv.e, ce = iv.ce, a0 = iv.a0, sigma1 = iv.sigma1;
  const std::int64_t nl = s_.nl;
  const auto& deg = s_.deg;
  double sigma = sigma1;
  const double tau2 = 2.0 / sigma1;
  // The locked directions (down to λmin(Â)) are amplified more than any active one: rounding
  // errors along them, ~u per step, grow by (ρ(λmin)/ρ(θ))^d against the slowest wanted column θ
  // and, at high degree, bury it (1138_bus, 10 largest: (3.75/1.29)^100 ≈ 1e46; the 10th pair's
  // residual wandered between 1e-2 and 1.6 for 2000 iterations). Both live vectors are projected
  // against the locked ones every P steps, P such that that growth stays below 1e6:
  // (ρ_max/ρ_θ)^P ≤ 1e6. Cost per projection: Lᵀ·Y and Y − L·G on the suffix.
  int period = 1 << 30;
  if (nl > 0) {
    const double slow = std::max(iv.rho(s_.theta[slowest(w)]), 1.0);
    const double ratio = iv.rho(std::min(s_.lower, a0)) / slow;
    if (ratio > 1.0) period = projection_period(ratio);
  }
  // By rows where the projections (four transposes each) come at most every 8 steps.
  if (rows_ && period >= 8) return filter_rows(w, iv, period);
  auto y0 = ws_.basis[s_.cur].columns(nl, w);
  auto t1 = ws_.basis[1 - s_.cur].columns(nl, w);
  auto wv = ws_.scratch.columns(nl, w);
  if (copt_.fused_step) {
    ap_.fused(*copt_.fused_step, sgn_ * sigma1 / e, y0, -ce * sigma1 / e, 0.0, t1);
  } else {
    ap_.apply(y0, wv);
    ops_.chebyshev().axpbypcz(sgn_ * sigma1 / e, wv, -ce * sigma1 / e, y0, 0.0, t1);
  }
  std::int64_t first = 0;
  for (int j = 1; j < deg[w - 1]; ++j) {
    while (first < w && deg[first] < j + 1) ++first;
    const std::int64_t cnt = w - first;
    auto yj = (j & 1) ? t1.columns(first, cnt) : y0.columns(first, cnt);
    auto yjm = (j & 1) ? y0.columns(first, cnt) : t1.columns(first, cnt);
    const double sn = 1.0 / (tau2 - sigma);
    if (copt_.fused_step) {  // one pass: yjm = α·A·yj + β·yj + γ·yjm
      ap_.fused(*copt_.fused_step, sgn_ * 2.0 * sn / e, yj, -2.0 * sn * ce / e, -sigma * sn, yjm);
    } else {
      ap_.apply(yj, wv.columns(first, cnt));
      ops_.chebyshev().axpbypcz(sgn_ * 2.0 * sn / e, wv.columns(first, cnt), -2.0 * sn * ce / e, yj,
                    -sigma * sn, yjm);
    }
    sigma = sn;
    if (j % period == 0) {
      project_locked(yj);
      project_locked(yjm);
      ++stats_.projections;
    }
  }
}

// y ← y − L·(Lᵀ·y), L the locked columns of basis[cur] (LᵀY in ws.small).
void SubspaceIteration::project_locked(MvView<double> y) {
  const std::int64_t nl = s_.nl;
  MvView<double> g{ws_.small.data(), nl, y.cols, m_, ops_.space()};
  auto lk = ws_.basis[s_.cur].columns(0, nl);
  ops_.gram_into(1.0, lk, y, 0.0, g);
  ops_.gemm_into(-1.0, lk, g, 1.0, y);
}

// filter() with Y₀ and Y₁ by rows in scratch (r[0], r[1]: n × ldr each, ldr = w rounded up to 4):
// the same steps, coefficients and column suffixes. Y₀ = basis[cur] transposed in (pads zero);
// the first step writes r[1] whole (its pads from r[0]'s zeros: 0). Every degree is even, so each
// column's last step writes r[0], which goes back into basis[cur]. A projection moves both
// iterates out (into basis[cur] and basis[1 − cur], free while the filter holds them by rows),
// projects their suffixes as filter() does, and moves them back.
void SubspaceIteration::filter_rows(std::int64_t w, const FilterInterval& iv, int period) {
  const double e = iv.e, ce = iv.ce, sigma1 = iv.sigma1, tau2 = 2.0 / sigma1;
  const std::int64_t nl = s_.nl, ldr = (w + 3) / 4 * 4;
  const auto& deg = s_.deg;
  const ChebyshevStep& fs = *copt_.fused_step;
  auto y0 = ws_.basis[s_.cur].columns(nl, w);
  auto t1 = ws_.basis[1 - s_.cur].columns(nl, w);
  double* r[2] = {ws_.scratch.view().data, ws_.scratch.view().data + n_ * ldr};
  fs.to_rows(y0, r[0], ldr);
  ap_.fused_rows(fs, sgn_ * sigma1 / e, r[0], -ce * sigma1 / e, 0.0, r[1], ldr, 0, ldr, w);
  double sigma = sigma1;
  std::int64_t first = 0;
  for (int j = 1; j < deg[w - 1]; ++j) {
    while (first < w && deg[first] < j + 1) ++first;
    double *yj = r[j & 1], *yjm = r[1 - (j & 1)];
    const double sn = 1.0 / (tau2 - sigma);
    ap_.fused_rows(fs, sgn_ * 2.0 * sn / e, yj, -2.0 * sn * ce / e, -sigma * sn, yjm, ldr, first, w, w - first);
    sigma = sn;
    if (j % period == 0) {
      fs.from_rows(yj, ldr, y0), fs.from_rows(yjm, ldr, t1);
      project_locked(y0.columns(first, w - first));
      project_locked(t1.columns(first, w - first));
      fs.to_rows(y0, yj, ldr), fs.to_rows(t1, yjm, ldr);
      ++stats_.projections;
    }
  }
  fs.from_rows(r[0], ldr, y0);
}

// The filter on the fp32 rung (residual form, chebyshev.hpp): the active columns of basis[cur]
// hold the Ritz vectors X and those of basis[1 − cur] their A·X (from rayleigh_ritz). fp32 blocks
// (each column's n floats at ld 2n, so two fit in one fp64 column): R̂ and Z_odd in scratch's
// active columns, Z_even in basis[1 − cur]'s once R̂ is formed. Y_d ends in basis[cur] as in
// filter(). Host: the coefficient table (θ, q_d(θ), and (2σⱼ₊₁/e)·qⱼ(θ) for every step j), one
// upload.
void SubspaceIteration::filter32(std::int64_t w, double cut) {
  const FilterInterval iv(s_.upper, cut, s_.lower);
  const double e = iv.e, ce = iv.ce, sigma1 = iv.sigma1;
  const double tau2 = 2.0 / sigma1;
  const std::int64_t nl = s_.nl;
  const auto& deg = s_.deg;
  const auto& theta = s_.theta;
  auto& qprev = ws_.qprev;
  auto& qcur = ws_.qcur;
  const int dtop = deg[w - 1];
  double* th = ws_.coef_h.data();
  double* qd = th + w;
  double* ft = qd + w;  // step j (1 ≤ j < dtop): ft[(j − 1)·w + i] = (2σⱼ₊₁/e)·qⱼ(θᵢ)
  for (std::int64_t i = 0; i < w; ++i)
    th[i] = theta[i], qprev[i] = 1.0, qcur[i] = sigma1 / e * (theta[i] - ce);
  double sigma = sigma1;
  for (int j = 1; j < dtop; ++j) {
    const double sn = 1.0 / (tau2 - sigma);
    for (std::int64_t i = 0; i < w; ++i) {
      ft[(j - 1) * w + i] = 2.0 * sn / e * qcur[i];
      const double qn = 2.0 * sn / e * (theta[i] - ce) * qcur[i] - sigma * sn * qprev[i];
      qprev[i] = qcur[i], qcur[i] = qn;
      if (deg[i] == j + 1) qd[i] = qn;
    }
    sigma = sn;
  }
  const std::int64_t len = (2 + static_cast<std::int64_t>(dtop - 1)) * w;
  const double* coef = ws_.coef.data();
  ops_.from_host(ws_.coef_h.data(), len,
                 MvView<double>{ws_.coef.data(), len, 1, len, ops_.space()});
  const std::int64_t ld2 = 2 * n_;
  auto x = ws_.basis[s_.cur].columns(nl, w);
  auto ax = ws_.basis[1 - s_.cur].columns(nl, w);
  float* wb = reinterpret_cast<float*>(ws_.scratch.view().col(nl));
  MvView<float> r32{wb, n_, w, ld2, ops_.space()};
  MvView<float> zodd{wb + n_, n_, w, ld2, ops_.space()};
  MvView<float> zeven{reinterpret_cast<float*>(ax.data), n_, w, ld2, ops_.space()};
  const ChebyshevStep& fs = *copt_.fused_step;
  // R̂ = s·AX − X·Θ and Z₁ = (σ₁/e)·R̂ (reads X, AX; AX is dead after this pass).
  fs.residual32(sgn_, ax, x, coef, sigma1 / e, r32, zodd);
  sigma = sigma1;
  std::int64_t first = 0;
  for (int j = 1; j < dtop; ++j) {
    while (first < w && deg[first] < j + 1) ++first;
    const std::int64_t cnt = w - first;
    auto zj = (j & 1) ? zodd.columns(first, cnt) : zeven.columns(first, cnt);
    auto zjm = (j & 1) ? zeven.columns(first, cnt) : zodd.columns(first, cnt);
    const double sn = 1.0 / (tau2 - sigma);
    // Z₀ = 0: the first step does not read it.
    ap_.fused32(fs, sgn_ * 2.0 * sn / e, zj, -2.0 * sn * ce / e, j == 1 ? 0.0 : -sigma * sn, zjm,
                r32.columns(first, cnt), coef + 2 * w + (j - 1) * w + first);
    sigma = sn;
  }
  // Even degrees: every column's Z_d is in Z_even. Y_d = X·q_d(Θ) + Z_d, in place over X.
  fs.combine32(x, coef + w, zeven, x);
}

}  // namespace tcsolve::chebyshev
