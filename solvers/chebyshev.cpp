// Chebyshev-filtered subspace iteration (see chebyshev.hpp for the algorithm, the memory and the
// traffic budget).
#include "solvers/chebyshev.hpp"

#include "core/trace.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "solvers/host_result.hpp"
#include "solvers/orthonormalize.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/spectral_probe.hpp"

namespace tcsolve {

namespace {

using Mat = Eigen::MatrixXd;

// Operator applies ordered against the dense ops' stream as the options say, counted, and (when
// timing) bracketed by stream marks so that apply time is known without synchronizing.
class Applier {
 public:
  Applier(const LinearOperator<double>& a, DenseBlockOps& ops, ApplyOrder order, bool timing)
      : a_(a), ops_(ops), order_(order), timing_(timing) {}
  void apply(MvView<const double> x, MvView<double> y) {
    if (x.cols == 0) return;
    int m0 = timing_ ? ops_.mark() : -1;
    switch (order_) {
      case ApplyOrder::synchronize:
        ops_.synchronize();
        a_.apply(x, y);
        if (ops_.space() == Space::device) device_synchronize();
        break;
      case ApplyOrder::events:
        ops_.external_begin();
        a_.apply(x, y);
        ops_.external_end();
        break;
      case ApplyOrder::same_stream:
        a_.apply(x, y);
        break;
    }
    if (timing_) marks_.push_back({m0, ops_.mark()});
    columns_ += x.cols;
    ++applies_;
  }
  // Y' = α·A·Y + β·Y + γ·Y' as one fused kernel (counted and timed as an apply).
  void fused(const ChebyshevStep& f, double alpha, MvView<const double> y, double beta, double gamma,
             MvView<double> out) {
    if (y.cols == 0) return;
    int m0 = timing_ ? ops_.mark() : -1;
    f.step(alpha, y, beta, gamma, out, 0.0, y);
    if (timing_) marks_.push_back({m0, ops_.mark()});
    columns_ += y.cols;
    ++applies_;
  }
  // One step of the fp32 rung (spmm/chebyshev_step.hpp step32), counted and timed as an apply.
  void fused32(const ChebyshevStep& f, double alpha, MvView<const float> y, double beta,
               double gamma, MvView<float> out, MvView<const float> r, const double* coef) {
    if (y.cols == 0) return;
    int m0 = timing_ ? ops_.mark() : -1;
    f.step32(alpha, y, beta, gamma, out, r, coef);
    if (timing_) marks_.push_back({m0, ops_.mark()});
    columns_ += y.cols;
    ++applies_;
  }
  // Seconds spent in the applies marked since the last call (all marks must have completed).
  double take_seconds() {
    double s = 0.0;
    for (auto& p : marks_) s += ops_.elapsed_seconds(p.first, p.second);
    marks_.clear();
    return s;
  }
  std::int64_t columns() const { return columns_; }
  std::int64_t applies() const { return applies_; }
  bool timing() const { return timing_; }

 private:
  const LinearOperator<double>& a_;
  DenseBlockOps& ops_;
  ApplyOrder order_;
  bool timing_;
  std::vector<std::pair<int, int>> marks_;
  std::int64_t columns_ = 0, applies_ = 0;
};

// Spectrum bounds of Â = s·A (the filter interval's far end, the normalization point and a lower
// bound of ‖A‖₂), from given bounds of A or from the solver's own spectral probe.
struct Bounds {
  double upper = 0.0;  // b ≥ λmax(Â)
  double lower = 0.0;  // θmin(Â) ≥ λmin(Â): normalization point of the filter
  double norm = 0.0;   // max |Ritz value|: a lower bound of ‖A‖₂ for the convergence test
};

Bounds bounds_of(const ChebyshevBounds& a, double sgn) {
  Bounds b;
  b.norm = a.norm;
  if (sgn > 0) {
    b.upper = a.upper_bound;
    b.lower = a.lower;
  } else {
    b.upper = -a.lower_bound;
    b.lower = -a.upper;
  }
  return b;
}

// The filter's interval for a cut: damped [cut, upper] with centre ce and half-width e, the
// normalization point a0 strictly below it, σ₁ of the scaled recurrence, and ρ(x), the factor
// by which one step amplifies the direction of eigenvalue x against the damped interval.
struct FilterInterval {
  double e, ce, a0, sigma1;
  FilterInterval(double upper, double cut, double lower)
      : e((upper - cut) / 2), ce((upper + cut) / 2), a0(std::min(lower, cut - e)),
        sigma1(e / (a0 - ce)) {}
  double rho(double x) const {
    const double t = std::abs((x - ce) / e);
    return t > 1.0 ? t + std::sqrt(t * t - 1.0) : 1.0;
  }
};

}  // namespace

std::int64_t chebyshev_block(std::int64_t n, std::int64_t k, std::int64_t guard,
                             const ChebyshevOptions& copt) {
  std::int64_t m = copt.block;
  if (m <= 0) {
    const std::int64_t g = guard >= 0 ? guard : std::max<std::int64_t>(8, (k + 1) / 2);
    m = k + g;
    if (guard < 0) m = (m + 7) / 8 * 8;
  }
  m = std::min(m, n / 2);
  return m;
}

ChebyshevCost chebyshev_cost(std::int64_t n, std::int64_t nnz, std::int64_t k, double tol,
                             double rel_gap, const ChebyshevOptions& copt, std::int64_t guard,
                             double calibration) {
  ChebyshevCost c;
  c.block = chebyshev_block(n, k, guard, copt);
  const double m = static_cast<double>(c.block);
  // Damped interval [λ_{m+1}, λmax] of relative width ≈ 1 − rel_gap: t_k = −1 − 2·gap/width.
  const double g = std::clamp(rel_gap, 1e-12, 0.5);
  const double tk = 1.0 + 2.0 * g / (1.0 - g);
  const double lnrho = std::acosh(tk);
  c.total_degree = std::log(4.0 / std::max(tol, 1e-16)) / lnrho;
  const double filt_cols = calibration * (m - k + 0.6 * k) * c.total_degree;
  c.outer_iterations = std::ceil(c.total_degree / std::max(copt.max_degree, 2)) + 2;
  c.column_applies = filt_cols + c.outer_iterations * m + k + copt.lanczos_steps;
  const double a_bytes = 12.0 * nnz + 8.0 * (n + 1);
  // Applies: A once per apply (degree steps × outer iterations), 16 bytes per row and column.
  const double applies = c.total_degree + 2 * c.outer_iterations;
  const double dense_per_outer = 8.0 * n * (4.0 * m + 8.0 * m + 8.0 * m);  // ortho + RR words
  c.bytes = applies * a_bytes + filt_cols * 8.0 * n * 6.0 + c.outer_iterations * dense_per_outer;
  return c;
}

EigenResult chebyshev_subspace(const LinearOperator<double>& a, DenseBlockOps& ops,
                               const EigenOptions& opt, const ChebyshevOptions& copt) {
  const double t_start = detail::now_seconds();
  const std::int64_t n = a.rows();
  detail::require_operator(a, n, ops.space(), "A");
  if (copt.fused_step && copt.fused_step->space() != ops.space())
    throw InvalidArgument("chebyshev: the fused step lives in another space than the dense ops");
  const std::int64_t k = opt.k;
  if (opt.which != Which::smallest && opt.which != Which::largest)
    throw InvalidArgument("chebyshev: only which = smallest or largest");
  // Choices by the whole problem's size (n is this process's share of a distributed block).
  const std::int64_t ng = ops.global_rows(n);
  const std::int64_t m = chebyshev_block(ng, k, opt.guard, copt);
  if (k < 1 || k >= ng || m < k + 1)
    throw InvalidArgument("chebyshev: need 1 <= k and k + 1 <= block <= n/2 (k = " +
                          std::to_string(k) + ", block = " + std::to_string(m) +
                          ", n = " + std::to_string(ng) + ")");
  TCSOLVE_REQUIRE(opt.tol > 0, "chebyshev: tol must be positive");
  TCSOLVE_REQUIRE(copt.max_degree >= 2 && copt.min_degree >= 2 && copt.min_degree <= copt.max_degree,
                  "chebyshev: need 2 <= min_degree <= max_degree");
  const double sgn = opt.which == Which::smallest ? 1.0 : -1.0;
  const int dmax = copt.max_degree + (copt.max_degree & 1);
  const int dmin = copt.min_degree + (copt.min_degree & 1);
  const int dhigh = std::max(dmax, copt.max_degree_long + (copt.max_degree_long & 1));
  const bool timing = opt.keep_history || static_cast<bool>(opt.on_iteration);
  Applier ap(a, ops, copt.apply_order, timing);

  EigenResult res;
  res.n = n;  // the rows of res.vectors (this process's share when distributed)
  res.b_norm = 1.0;

  // ---- workspace, once per solve
  ops.reserve(0, 0, m * m);  // host-staged coefficients (robust path); no n × m scratch
  ops.reserve_small(m);
  MultiVector<double> buf[2] = {ops.allocate(n, m), ops.allocate(n, m)};
  MultiVector<double> wbuf = ops.allocate(n, m);
  MultiVector<double> gsm = ops.allocate(m, m), msm = ops.allocate(m, m), hsm = ops.allocate(m, m);
  MultiVector<double> theta_d = ops.allocate(m, 1), rn_d = ops.allocate(m, 1),
                      st_d = ops.allocate(8, 1);
  std::vector<double> theta(m), rn(m), st(8), xn(m);
  std::vector<double> lock_theta, lock_res;  // locked pairs, in column order 0..nl
  lock_theta.reserve(m), lock_res.reserve(m);
  std::vector<int> deg(m);
  std::vector<std::int64_t> idx(m);
  OrthoWorkspace ows;
  std::vector<double> proj(m * m);
  // The fp32 rung's per-filter coefficients (θ, q_d(θ), and qⱼ(θ)·2σⱼ₊₁/e for every step):
  // (dhigh + 1)·m doubles, uploaded once per fp32 filter.
  const bool ladder = copt.filter_precision == Precision::fp32 && copt.fused_step != nullptr;
  if (copt.filter_precision != Precision::fp64 && copt.filter_precision != Precision::fp32)
    throw InvalidArgument(std::string("chebyshev: filter precision ") +
                          to_string(copt.filter_precision) + " not supported (fp64 or fp32)");
  const std::int64_t ncoef = ladder ? (dhigh + 1) * m : 0;
  MultiVector<double> coef_d = ops.allocate(std::max<std::int64_t>(ncoef, 1), 1);
  std::vector<double> coef_h(ncoef), qprev(ladder ? m : 0), qcur(ladder ? m : 0);

  // ---- spectrum bounds
  double t_phase = detail::now_seconds();
  const double t_setup = t_phase - t_start;
  ChebyshevBounds given;
  if (copt.bounds) {
    given = *copt.bounds;
  } else {
    const SpectralProbe pr = spectral_probe(
        [&](MvView<const double> x, MvView<double> y) { ap.apply(x, y); }, ops, n,
        copt.lanczos_steps, opt.seed);
    given.lower = pr.lower, given.upper = pr.upper;
    given.lower_bound = pr.lower_bound, given.upper_bound = pr.upper_bound;
    given.norm = std::max(std::abs(pr.lower), std::abs(pr.upper));
  }
  const Bounds bd = bounds_of(given, sgn);
  const double t_bounds = detail::now_seconds() - t_phase;
  res.a_norm = opt.a_norm > 0 ? opt.a_norm : bd.norm;
  double upper = bd.upper;
  if (opt.a_norm > 0) upper = std::min(upper, opt.a_norm);
  double lower = bd.lower;
  const double test_a = copt.test_a >= 0 ? copt.test_a : res.a_norm;
  const double test_b = copt.test_a >= 0 ? copt.test_b : 1.0;
  auto tau = [&](double th) { return pair_bound(opt, test_a, test_b, th); };

  int cur = 0;
  std::int64_t nl = 0;  // locked columns
  std::uint64_t refill_seed = opt.seed * 7919 + 3;
  OrthoBranch worst_branch = OrthoBranch::none;
  std::int64_t fallbacks = 0;

  // Host path: project the active block of buf[cur] out of L twice, SVQB with dropping, refill
  // lost directions with random vectors (keeps the block width, so no copy of a multiple
  // eigenvalue can slip through).
  auto robust_orthonormalize = [&](std::int64_t w) {
    ++fallbacks;
    auto& B = buf[cur];
    auto project = [&](std::int64_t c0, std::int64_t cnt) {
      if (c0 == 0 || cnt == 0) return;
      auto F = B.columns(c0, cnt);
      for (int pass = 0; pass < 2; ++pass) {
        ops.gram(B.columns(0, c0), F, proj.data(), c0);
        ops.gemm(-1.0, B.columns(0, c0), proj.data(), c0, 1.0, F);
      }
    };
    project(nl, w);
    auto o = orthonormalize(ops, B.columns(nl, w), MvView<double>{}, ows);
    worst_branch = std::max(worst_branch, o.branch);
    std::int64_t r = o.rank;
    for (int attempt = 0; r < w && attempt < 4; ++attempt) {
      auto F = B.columns(nl + r, w - r);
      ops.fill_random(F, refill_seed++);
      project(nl + r, w - r);
      auto of = orthonormalize(ops, F, MvView<double>{}, ows);
      r += of.rank;
    }
    if (r < w) throw Error("chebyshev: could not complete the block (n too small?)");
  };

  // Orthonormalizes the active columns [nl, nl + w) of buf[cur] against the locked ones and
  // within: BCGS-PIP passes on the device, ping-ponging between the two bases (both hold L).
  auto orthonormalize_active = [&](std::int64_t w) {
    auto pip_pass = [&](int slot) {
      auto src = buf[cur].columns(0, nl + w);
      auto y = buf[cur].columns(nl, w);
      MvView<double> g{gsm.data(), nl + w, w, m, ops.space()};
      MvView<double> mv{msm.data(), nl + w, w, m, ops.space()};
      MvView<double> sv{st_d.data() + 2 * slot, 2, 1, 8, ops.space()};
      ops.gram_into(1.0, src, y, 0.0, g);
      ops.pip_factor(g, nl, mv, sv);
      ops.gemm_into(1.0, src, mv, 0.0, buf[1 - cur].columns(nl, w));
      cur = 1 - cur;
    };
    pip_pass(0);
    pip_pass(1);
    ops.download_deferred(st_d.columns(0, 1), st.data(), 8);
    ops.fetch();
    bool ok = st[2] == 0.0 && st[0] == 0.0 && st[3] >= 0.1;
    if (!ok) {
      pip_pass(2);
      ops.download_deferred(st_d.columns(0, 1), st.data(), 8);
      ops.fetch();
      ok = st[4] == 0.0 && st[5] >= 0.1;
    }
    if (ok) {
      worst_branch = std::max(worst_branch, OrthoBranch::cholqr2);
      return;
    }
    robust_orthonormalize(w);
  };

  // Rayleigh-Ritz on the active columns of buf[cur] (orthonormal, ⊥ L): Ritz vectors into the
  // other basis, θ (ascending in Â) and residual norms to the host (one fetch).
  auto rayleigh_ritz = [&](std::int64_t w) {
    auto q = buf[cur].columns(nl, w);
    auto aq = wbuf.columns(nl, w);
    ap.apply(q, aq);
    MvView<double> h{hsm.data(), w, w, m, ops.space()};
    ops.gram_into(sgn, q, aq, 0.0, h);
    ops.eigh_small(h, theta_d.columns(0, 1));
    auto x = buf[1 - cur].columns(nl, w);
    ops.gemm_into(1.0, q, h, 0.0, x);
    ops.gemm_into(1.0, aq, h, 0.0, q);  // A·X over Q (no longer needed)
    MvView<const double> th{theta_d.data(), w, 1, m, ops.space()};
    MvView<double> rv{rn_d.data(), w, 1, m, ops.space()};
    ops.residual_norms_into(q, x, th, sgn, rv);
    ops.download_deferred(th, theta.data(), m);
    ops.download_deferred(rv, rn.data(), m);
    ops.fetch();
    cur = 1 - cur;
  };

  // The filter on the active columns of buf[cur]: degrees deg[0:w] even, non-decreasing; the
  // result Y_dᵢ of every column ends in buf[cur] (even degrees).
  std::int64_t projections = 0;  // filter projections against the locked columns
  auto filter = [&](std::int64_t w, double cut) {
    const FilterInterval iv(upper, cut, lower);
    const double e = iv.e, ce = iv.ce, a0 = iv.a0, sigma1 = iv.sigma1;
    double sigma = sigma1;
    const double tau2 = 2.0 / sigma1;
    auto y0 = buf[cur].columns(nl, w);
    auto t1 = buf[1 - cur].columns(nl, w);
    auto wv = wbuf.columns(nl, w);
    if (copt.fused_step) {
      ap.fused(*copt.fused_step, sgn * sigma1 / e, y0, -ce * sigma1 / e, 0.0, t1);
    } else {
      ap.apply(y0, wv);
      ops.axpbypcz(sgn * sigma1 / e, wv, -ce * sigma1 / e, y0, 0.0, t1);
    }
    // The locked directions (down to λmin(Â)) are amplified more than any active one: rounding
    // errors along them, ~u per step, grow by (ρ(λmin)/ρ(θ))^d against the slowest wanted
    // column θ and, at high degree, bury it (1138_bus, 10 largest: (3.75/1.29)^100 ≈ 1e46; the
    // 10th pair's residual wandered between 1e-2 and 1.6 for 2000 iterations). Both live
    // vectors are projected against the locked ones every P steps, P such that that growth stays
    // below 1e6: (ρ_max/ρ_θ)^P ≤ 1e6. Cost per projection: Lᵀ·Y and Y − L·G on the suffix.
    auto rho = [&](double x) { return iv.rho(x); };
    int period = 1 << 30;
    if (nl > 0) {
      const std::int64_t slow = std::max<std::int64_t>(0, std::min<std::int64_t>(w, k - nl) - 1);
      const double ratio = rho(std::min(lower, a0)) / std::max(rho(theta[slow]), 1.0);
      if (ratio > 1.0) period = std::max(1, static_cast<int>(std::log(1e6) / std::log(ratio)));
    }
    auto project = [&](MvView<double> y) {
      const std::int64_t cnt = y.cols;
      MvView<double> g{hsm.data(), nl, cnt, m, ops.space()};
      auto lk = buf[cur].columns(0, nl);
      ops.gram_into(1.0, lk, y, 0.0, g);
      ops.gemm_into(-1.0, lk, g, 1.0, y);
    };
    std::int64_t first = 0;
    for (int j = 1; j < deg[w - 1]; ++j) {
      while (first < w && deg[first] < j + 1) ++first;
      const std::int64_t cnt = w - first;
      auto yj = (j & 1) ? t1.columns(first, cnt) : y0.columns(first, cnt);
      auto yjm = (j & 1) ? y0.columns(first, cnt) : t1.columns(first, cnt);
      const double sn = 1.0 / (tau2 - sigma);
      if (copt.fused_step) {  // one pass: yjm = α·A·yj + β·yj + γ·yjm
        ap.fused(*copt.fused_step, sgn * 2.0 * sn / e, yj, -2.0 * sn * ce / e, -sigma * sn, yjm);
      } else {
        ap.apply(yj, wv.columns(first, cnt));
        ops.axpbypcz(sgn * 2.0 * sn / e, wv.columns(first, cnt), -2.0 * sn * ce / e, yj,
                     -sigma * sn, yjm);
      }
      sigma = sn;
      if (j % period == 0) {
        project(yj);
        project(yjm);
        ++projections;
      }
    }
  };

  // The filter on the fp32 rung (residual form, chebyshev.hpp): the active columns of buf[cur]
  // hold the Ritz vectors X and those of buf[1 − cur] their A·X (from rayleigh_ritz). fp32
  // blocks (each column's n floats at ld 2n, so two fit in one fp64 column): R̂ and Z_odd in
  // wbuf's active columns, Z_even in buf[1 − cur]'s once R̂ is formed. Y_d ends in buf[cur] as
  // in filter(). Host: the coefficient table; one upload (a stream synchronization).
  auto filter32 = [&](std::int64_t w, double cut) {
    const FilterInterval iv(upper, cut, lower);
    const double e = iv.e, ce = iv.ce, sigma1 = iv.sigma1;
    const double tau2 = 2.0 / sigma1;
    const int dtop = deg[w - 1];
    double* th = coef_h.data();
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
    ops.from_host(coef_h.data(), len, MvView<double>{coef_d.data(), len, 1, len, ops.space()});
    const std::int64_t ld2 = 2 * n;
    float* wb = reinterpret_cast<float*>(wbuf.view().col(nl));
    MvView<float> r32{wb, n, w, ld2, ops.space()};
    MvView<float> zodd{wb + n, n, w, ld2, ops.space()};
    MvView<float> zeven{reinterpret_cast<float*>(buf[1 - cur].view().col(nl)), n, w, ld2, ops.space()};
    const ChebyshevStep& fs = *copt.fused_step;
    // R̂ = s·AX − X·Θ and Z₁ = (σ₁/e)·R̂ (reads X, AX; AX is dead after this pass).
    fs.residual32(sgn, buf[1 - cur].columns(nl, w), buf[cur].columns(nl, w), coef_d.data(),
                  sigma1 / e, r32, zodd);
    sigma = sigma1;
    std::int64_t first = 0;
    for (int j = 1; j < dtop; ++j) {
      while (first < w && deg[first] < j + 1) ++first;
      const std::int64_t cnt = w - first;
      auto zj = (j & 1) ? zodd.columns(first, cnt) : zeven.columns(first, cnt);
      auto zjm = (j & 1) ? zeven.columns(first, cnt) : zodd.columns(first, cnt);
      const double sn = 1.0 / (tau2 - sigma);
      // Z₀ = 0: the first step does not read it.
      ap.fused32(fs, sgn * 2.0 * sn / e, zj, -2.0 * sn * ce / e, j == 1 ? 0.0 : -sigma * sn, zjm,
                 r32.columns(first, cnt), coef_d.data() + 2 * w + (j - 1) * w + first);
      sigma = sn;
    }
    // Even degrees: every column's Z_d is in Z_even. Y_d = X·q_d(Θ) + Z_d, in place over X.
    fs.combine32(buf[cur].columns(nl, w), coef_d.data() + w, zeven, buf[cur].columns(nl, w));
  };
  // Whether the filter on the active block may take the fp32 rung (chebyshev.hpp): the
  // amplification of the most amplified direction over the slowest wanted column, over the
  // filter's top degree, below 1e5 (fp32 rounding along it then stays below 1e-2 of the slowest
  // column), and no locked-column projection inside the filter.
  // `why` (when not null) receives the reason a filter stays on fp64, for the precision line.
  auto fp32_fits = [&](std::int64_t w, double cut, std::string* why) {
    const FilterInterval iv(upper, cut, lower);
    auto rho = [&](double x) { return iv.rho(x); };
    const std::int64_t slow = std::max<std::int64_t>(0, std::min<std::int64_t>(w, k - nl) - 1);
    // The most amplified direction the block holds: the lowest Ritz value seen (θ₀ and the
    // locked θ), not the probe's bound of the spectrum (`lower`) nor a0. Before the first
    // Rayleigh-Ritz has neared the end, that bound lies far beyond θ₀ (elast3d:64's first filter,
    // largest end: ρ 5.6 against 1.17, "growth" 1e33 in 48 steps) and kept the first filter of
    // every largest-end solve off the rung, although the directions between are not yet in the
    // block: fp32 noise along them only perturbs the start. H200, same call: elast3d:64 k = 16
    // largest 0.101 → 0.085 s, lap3d:64 k = 64 largest 0.165 → 0.150 s, the same outer
    // iterations; lap2d:200 (40k rows) 0.019 → 0.021 s; 1138_bus's 1e46 spread is still refused.
    double lo_seen = theta[0];
    for (double t : lock_theta) lo_seen = std::min(lo_seen, t);
    const double ratio = rho(lo_seen) / std::max(rho(theta[slow]), 1.0);
    const double growth = deg[w - 1] * std::log(std::max(ratio, 1.0));
    if (growth > std::log(1e5)) {
      if (why) *why = format("amplification %.1e over the slowest wanted column in %d steps", std::exp(growth), deg[w - 1]);
      return false;
    }
    // The wanted end must not be small against ‖A‖: A·x of a wanted vector cancels in the fp32
    // sums by |λ|/‖A‖ (a smooth vector of a Laplacian: 6xᵢ − Σ neighbours ≈ λ·xᵢ). Measured on the
    // H200: lap3d:100's smallest end (|λ|/‖A‖ 2.4e-4 to 3.5e-3) lost ground on every fp32 filter
    // (k = 64: the cut jumped to 3.1 after a degree-100 one) while its largest end converged on
    // fp32 in as many outer iterations as fp64.
    if (std::abs(theta[slow]) < 0.25 * bd.norm) {
      if (why) *why = format("the wanted end |theta| %.3g is below ||A||/4", std::abs(theta[slow]));
      return false;
    }
    if (nl > 0 && ratio > 1.0) {
      const int period = std::max(1, static_cast<int>(std::log(1e6) / std::log(ratio)));
      if (period < deg[w - 1]) {
        if (why) *why = format("%lld locked columns to project out every %d steps of %d", static_cast<long long>(nl), period, deg[w - 1]);
        return false;
      }
    }
    return true;
  };

  double prev_cut = -1.0;
  double steps_left = 0.0;   // the model's steps still needed by the slowest wanted column
  double wanted_steps = 0.0; // filter steps the slowest wanted column went through
  double last_cut = 0.0;
  // Degrees for the active pairs (θ ascending in Â, residuals rn): the residual of pair i
  // shrinks by ρᵢ^(−d) per filter; guard columns (global index ≥ k) take the largest wanted
  // degree; even, within [dmin, dmax], non-decreasing (step j then runs on a column suffix).
  auto choose_degrees = [&](std::int64_t w, double cut) {
    const double e = (upper - cut) / 2, ce = (upper + cut) / 2;
    int dwant = 0;
    // The cap follows the work left: while the slowest wanted column needs many more steps,
    // long filters (fewer Rayleigh-Ritz rounds); near the end max_degree, so that the last
    // filter does not overshoot by much.
    double dslow = 0.0;
    for (std::int64_t i = 0; i < w && nl + i < k; ++i) {
      const double t = (theta[i] - ce) / e;
      const double need = std::max(rn[i] / tau(theta[i]), 1.0) * copt.overshoot;
      if (t < -1.0) dslow = std::max(dslow, std::log(need) / std::log(-t + std::sqrt(t * t - 1.0)));
      else dslow = 1e9;
    }
    // Long filters only once the cut has settled (moved < 5% of its distance to the lower
    // end since the last filter): a filter on a poor cut converges slowly per step.
    steps_left = dslow;
    const bool settled = prev_cut > 0 && std::abs(cut - prev_cut) < 0.05 * std::abs(cut - lower);
    prev_cut = cut;
    const int dcap = settled ? std::max(dmax, std::min(dhigh, 2 * (static_cast<int>(dslow / 4) + 1)))
                             : dmax;
    for (std::int64_t i = 0; i < w; ++i) {
      int d = dcap;
      const double t = (theta[i] - ce) / e;
      // Aim below the tolerance (overshoot) so that a column close to it converges in one
      // filter instead of creeping over several outer iterations.
      const double need = std::max(rn[i] / tau(theta[i]), 1.0) * copt.overshoot;
      if (t < -1.0) {
        const double rho = -t + std::sqrt(t * t - 1.0);
        d = static_cast<int>(std::ceil(copt.degree_margin * std::log(need) / std::log(rho)));
      }
      d = std::clamp(d, dmin, dcap);
      d += d & 1;
      deg[i] = d;
      if (nl + i < k) dwant = std::max(dwant, d);
    }
    for (std::int64_t i = 0; i < w; ++i) {
      if (nl + i >= k) deg[i] = copt.guard_max_degree ? dcap : (dwant > 0 ? dwant : deg[i]);
      if (i > 0) deg[i] = std::max(deg[i], deg[i - 1]);
    }
  };

  // Budget words (8 bytes) of the dense work, per chebyshev.hpp.
  double budget_words = 0.0;
  auto count_outer = [&](std::int64_t w, int npass) {
    // filter recurrence: 3·n·w for step 1, 4·n·cnt for the others
    std::int64_t first = 0;
    budget_words += 3.0 * n * w;
    for (int j = 1; j < deg[w - 1]; ++j) {
      while (first < w && deg[first] < j + 1) ++first;
      budget_words += 4.0 * n * (w - first);
    }
    budget_words += npass * n * (2.0 * nl + 4.0 * w) + 8.0 * n * w;
  };

  // The k smallest pairs (in Â) among the locked and active ones: gathered into wbuf(:, 0:k),
  // A applied once more, true residuals tested. On success (or when `last`) the result is
  // filled in; otherwise the pairs from the first failing locked one on are unlocked.
  std::vector<double> sel_theta(k), tr(k), bound(k);
  MultiVector<double> theta_sel = ops.allocate(k, 1);
  // The host eigenvector buffer is sized and page-locked on a helper thread while the GPU
  // iterates (solvers/host_result.hpp), unless the vectors stay in ops.space() (vectors_out).
  std::vector<double> vecs;
  std::optional<detail::HostResult> prep;
  if (!opt.vectors_out) prep.emplace(ops, vecs, n * k);
  auto finish = [&](std::int64_t w, bool last) -> bool {
    std::vector<std::pair<double, std::int64_t>> cand;
    for (std::int64_t j = 0; j < nl; ++j) cand.push_back({lock_theta[j], j});
    for (std::int64_t i = 0; i < w; ++i) cand.push_back({theta[i], nl + i});
    std::stable_sort(cand.begin(), cand.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::int64_t j = 0; j < k; ++j) idx[j] = cand[j].second, sel_theta[j] = cand[j].first;
    auto X = wbuf.columns(0, k);
    ops.gather_columns(buf[cur].columns(0, m), idx.data(), k, X);
    auto AX = buf[1 - cur].columns(0, k);
    ap.apply(X, AX);
    ops.from_host(sel_theta.data(), k, theta_sel.view());
    ops.residual_norms_into(AX, X, theta_sel.view(), sgn, rn_d.columns(0, 1));
    ops.download_deferred(MvView<const double>{rn_d.data(), k, 1, m, ops.space()}, tr.data(), k);
    ops.fetch();
    ops.column_norms(X, xn.data());
    // AX overwrote the locked copies in the other basis: restore them.
    const std::int64_t kl = std::min(k, nl);
    if (kl > 0) ops.copy(buf[cur].columns(0, kl), buf[1 - cur].columns(0, kl));
    bool ok = true;
    std::int64_t first_bad = nl;
    for (std::int64_t j = 0; j < k; ++j) {
      bound[j] = pair_bound(opt, test_a, test_b, sel_theta[j]) * xn[j];
      if (!(tr[j] <= bound[j])) {
        ok = false;
        if (idx[j] < nl) first_bad = std::min(first_bad, idx[j]);
      }
    }
    if (ok || last) {
      res.values.resize(k);
      for (std::int64_t j = 0; j < k; ++j) res.values[j] = sgn * sel_theta[j];
      res.residual_norms.assign(tr.begin(), tr.end());
      res.residual_bounds.assign(bound.begin(), bound.end());
      if (opt.vectors_out) {
        *opt.vectors_out = ops.allocate(n, k);
        ops.copy(X, opt.vectors_out->view());
      } else {
        prep->wait();
        ops.to_host(X, vecs.data(), n);
        prep->release();
        res.vectors = std::move(vecs);
      }
      return ok;
    }
    // Unlock from first_bad on: those columns become active again (their order in buf[cur]
    // already is locked-then-active).
    const std::int64_t back = nl - first_bad;
    if (back > 0) {
      std::vector<double> th(theta.begin(), theta.begin() + w), r2(rn.begin(), rn.begin() + w);
      for (std::int64_t j = 0; j < back; ++j) {
        theta[j] = lock_theta[first_bad + j];
        rn[j] = std::max(lock_res[first_bad + j], 2.0 * tau(theta[j]));
      }
      for (std::int64_t i = 0; i < w; ++i) theta[back + i] = th[i], rn[back + i] = r2[i];
      lock_theta.resize(first_bad), lock_res.resize(first_bad);
      nl = first_bad;
    }
    return false;
  };

  // ---- initial block: random, orthonormal, Ritz pairs
  t_phase = detail::now_seconds();
  initial_block(ops, buf[cur].columns(0, m), opt);
  trace_mark("chebyshev: initial block queued");
  orthonormalize_active(m);
  trace_mark("chebyshev: initial block orthonormal");
  rayleigh_ritz(m);
  trace_mark("chebyshev: initial Ritz pairs");
  const double t_init = detail::now_seconds() - t_phase;
  double t_finish = 0.0;
  t_phase = detail::now_seconds();
  budget_words += 2.0 * n * (4.0 * m) + 8.0 * n * m;
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;
  std::int64_t it = 0;
  detail::Checkpointer checkpoint(opt.checkpoint_every, opt.on_checkpoint);
  std::int64_t filter_applies = 0, filter_columns = 0;
  double apply_s = 0.0, dense_s = 0.0;
  double filter_ortho_s = 0.0, rr_s = 0.0;  // host clock: filter + orthonormalization, Rayleigh-Ritz
  double lift = 0.0;
  bool stopped = false;
  // The ladder (filter_precision): per-rung counts, the climb, and whether buf[1 − cur] holds
  // the active Ritz vectors' A·X (not after an unlock: finish() reused those columns).
  std::int64_t steps32 = 0, steps64 = 0, filters32 = 0, filters64 = 0, climbed_at = -1;
  double seconds32 = 0.0, seconds64 = 0.0;
  int stale32 = 0;
  double best_slow = std::numeric_limits<double>::infinity();
  bool ax_valid = true;
  std::string climb_reason;
  std::string fp64_reason;  // why the last fp64 filter before any climb was not on fp32
  // ---- lock: the converged prefix of the active pairs moves to the locked columns.
  auto lock_converged = [&](std::int64_t w) -> std::int64_t {
    std::int64_t c = 0;
    // Locked at a quarter of the test: a locked vector's error (its residual over the gap)
    // reappears in the active columns, which are kept orthogonal to it, as a residual of about
    // the locked residual; locked at the full test, pairs whose own bound is smaller (rel with a
    // smaller |λ|) could never pass (1138_bus, 10 largest: the 4th pair stalled at 1.02× its
    // bound for 2000 iterations).
    while (c < w - 1 && rn[c] <= lock_bound(opt, test_a, test_b, theta[c], 0.25)) {
      if (nl + c >= k) {
        // Beyond k only pairs below the k-th smallest value locked so far.
        std::vector<double> v(lock_theta.begin(), lock_theta.end());
        v.insert(v.end(), theta.begin(), theta.begin() + c);
        std::nth_element(v.begin(), v.begin() + (k - 1), v.end());
        const double kth = v[k - 1];
        if (!(theta[c] < kth + tau(kth))) break;
      }
      ++c;
    }
    if (c > 0) {
      ops.copy(buf[cur].columns(nl, c), buf[1 - cur].columns(nl, c));
      budget_words += 2.0 * n * c;
      for (std::int64_t j = 0; j < c; ++j) lock_theta.push_back(theta[j]), lock_res.push_back(rn[j]);
      for (std::int64_t i = 0; i + c < w; ++i) theta[i] = theta[i + c], rn[i] = rn[i + c];
      nl += c;
      w -= c;
    }
    return w;
  };
  // ---- done: k pairs locked (or passing) and no active Ritz value below the k-th of them.
  auto all_found = [&](std::int64_t w) -> bool {
    // (Counting the active prefix that passes the full test as well: locking waits for a
    // quarter of it, and a pair held just above that by the locked vectors' own errors must not
    // keep the solve going once it passes.)
    bool done = false;
    std::int64_t ca = 0;
    while (ca < w && nl + ca < k && rn[ca] <= tau(theta[ca])) ++ca;
    if (nl + ca >= k) {
      std::vector<double> v(lock_theta.begin(), lock_theta.end());
      v.insert(v.end(), theta.begin(), theta.begin() + ca);
      std::nth_element(v.begin(), v.begin() + (k - 1), v.end());
      done = ca >= w || theta[ca] >= v[k - 1] - tau(v[k - 1]);
    }
    return done;
  };
  // ---- the filter's cut, and the interval's ends kept below and above every Ritz value.
  auto filter_cut = [&](std::int64_t w) -> double {
    // Cut = largest active Ritz value (≥ λ_m). When the active Ritz values are not resolved
    // beyond their residuals (the block sits inside one eigenspace: a multiplicity above the
    // block width), that cut collapses onto the wanted eigenvalue and the filter stops damping
    // the next distinct one; then the cut is lifted by a growing multiple of the largest
    // residual (the next eigenvalue lies about that far up).
    double cut = theta[w - 1];
    {
      const double spread = theta[w - 1] - theta[0];
      const double rmax = *std::max_element(rn.begin(), rn.begin() + w);
      if (w > 1 && spread <= rmax && it > 0) {
        lift = lift > 0 ? 4.0 * lift : 4.0;
        cut = std::min(cut + lift * rmax, theta[0] + 0.25 * (upper - theta[0]));
        cut = std::max(cut, theta[w - 1]);
      }
    }
    lower = std::min(lower, theta[0]);
    if (!lock_theta.empty())
      lower = std::min(lower, *std::min_element(lock_theta.begin(), lock_theta.end()));
    if (!(upper > cut)) upper = cut + std::abs(cut - lower) + 1e-300;  // block spans the spectrum
    return cut;
  };
  // ---- the climb off the fp32 rung (after the filter, from the new Ritz pairs).
  auto watch_climb = [&](std::int64_t w, bool low, double slow_before) {
    // Stagnation on the fp32 rung: three fp32 filters since the slowest wanted residual/test
    // ratio last fell below 0.9 of its best (any rung): climb to fp64 for good. (A filter on a
    // cut that still moves can gain little in fp64 as well, so one slow filter is no sign;
    // lap3d:100, k = 64 on the H200 oscillated on the fp32 rung without a run of three.)
    {
      double slow_after = 0.0;
      for (std::int64_t i = 0; i < w && nl + i < k; ++i)
        slow_after = std::max(slow_after, rn[i] / tau(theta[i]));
      if (slow_after < 0.9 * best_slow) {
        best_slow = slow_after;
        stale32 = 0;
      } else if (low && ++stale32 >= 3) {
        climbed_at = it;
        char buf2[240];
        std::snprintf(buf2, sizeof buf2,
                      "climbed to fp64 at outer iteration %lld: three fp32 filters without cutting "
                      "the slowest wanted residual below 0.9 of its best (%.3g of its test; last "
                      "%.3g -> %.3g)",
                      static_cast<long long>(it + 1), best_slow, slow_before, slow_after);
        climb_reason = buf2;
      }
    }
  };
  // ---- the iteration's record, progress and the caller's budget (false: stop).
  auto record_iteration = [&](std::int64_t w, int dw, double t_it) -> bool {
    IterationRecord rec;
    rec.iteration = it;
    rec.ortho = worst_branch;
    worst_branch = OrthoBranch::none;
    rec.active = w;
    rec.converged = nl;
    if (opt.keep_history || opt.on_iteration) {
      rec.residual_norms.assign(lock_res.begin(), lock_res.end());
      rec.residual_norms.insert(rec.residual_norms.end(), rn.begin(), rn.begin() + w);
      if (static_cast<std::int64_t>(rec.residual_norms.size()) > k) rec.residual_norms.resize(k);
    }
    const double total = detail::now_seconds() - t_it;
    if (ap.timing()) {
      rec.apply_seconds = ap.take_seconds();
      rec.dense_seconds = std::max(0.0, total - rec.apply_seconds);
      apply_s += rec.apply_seconds;
      dense_s += rec.dense_seconds;
    }
    if (opt.on_iteration) opt.on_iteration(rec);
    if (opt.keep_history) res.history.push_back(std::move(rec));
    if (copt.keep_going) {
      ChebyshevProgress pg;
      pg.outer = it + 1;
      pg.filter_steps = wanted_steps;
      pg.steps_left = std::max(0.0, steps_left - dw);  // the model's estimate before this filter
      pg.locked = nl;
      pg.seconds = detail::now_seconds() - t_start;
      if (!copt.keep_going(pg)) {
        stopped = true;
        reason = "stopped after " + std::to_string(it + 1) + " outer iterations: the planner's "
                 "budget was exceeded (the measured convergence predicted more time than the "
                 "alternative plan)";
        // Best current approximations of the k wanted pairs (not converged).
        finish(w, true);
        return false;
      }
    }
    return true;
  };
  for (;; ++it) {
    const double t_it = detail::now_seconds();
    std::int64_t w = lock_converged(m - nl);
    const bool done = all_found(w);
    const bool stop = !done && interrupt_requested();
    const bool last = it + 1 >= opt.max_iterations || stop;
    if (done || last) {
      const double tf = detail::now_seconds();
      const bool ok = finish(w, last && !done);
      t_finish += detail::now_seconds() - tf;
      if (ok) {
        status = SolverStatus::converged;
        break;
      }
      if (last) {
        if (stop)
          status = SolverStatus::interrupted,
          reason = detail::interrupted_reason(it + 1, std::min(nl, k), k, "locked");
        else
          reason = "iteration limit " + std::to_string(opt.max_iterations) + " reached with " +
                   std::to_string(std::min(nl, k)) + " of " + std::to_string(k) + " pairs locked";
        break;
      }
      w = m - nl;  // pairs unlocked by the explicit check: iterate on
      ax_valid = false;
    }
    // The Ritz block (locked columns first) is the state a later run restarts from.
    if (checkpoint.due()) checkpoint.write(ops, buf[cur].view(), it + 1, nl);
    // ---- filter, orthonormalize, Rayleigh-Ritz
    const double cut = filter_cut(w);
    choose_degrees(w, cut);
    last_cut = cut;
    int dw = 0;  // the largest degree among the wanted active columns
    for (std::int64_t i = 0; i < w && nl + i < k; ++i) dw = std::max(dw, deg[i]);
    wanted_steps += dw;
    const std::int64_t cols0 = ap.columns(), applies0 = ap.applies();
    // The rung of this filter (chebyshev.hpp, filter_precision) and, for the climb, the slowest
    // wanted column's residual/test ratio now.
    std::string why;
    const bool low = ladder && climbed_at < 0 && ax_valid && fp32_fits(w, cut, &why);
    if (ladder && !low && climbed_at < 0) fp64_reason = ax_valid ? why : "no A*X from a Rayleigh-Ritz yet";
    double slow_before = 0.0;
    if (low)
      for (std::int64_t i = 0; i < w && nl + i < k; ++i)
        slow_before = std::max(slow_before, rn[i] / tau(theta[i]));
    // Stream marks around the filter (no synchronization; read after rayleigh_ritz's fetch).
    const bool timed = ladder || copt.stats != nullptr;
    const int mk0 = timed ? ops.mark() : -1;
    const double t_f0 = detail::now_seconds();
    if (low) filter32(w, cut);
    else filter(w, cut);
    const int mk1 = timed ? ops.mark() : -1;
    const std::int64_t steps = ap.columns() - cols0;
    filter_applies += ap.applies() - applies0;
    filter_columns += steps;
    orthonormalize_active(w);  // ends with a fetch: the filter and the passes have completed
    const double t_o1 = detail::now_seconds();
    count_outer(w, st[0] == 0.0 && st[2] == 0.0 && st[3] >= 0.1 ? 2 : 3);
    rayleigh_ritz(w);  // ends with a fetch
    const double t_r1 = detail::now_seconds();
    filter_ortho_s += t_o1 - t_f0;
    rr_s += t_r1 - t_o1;
    ax_valid = true;
    if (timed) {  // rayleigh_ritz fetched: both marks have completed
      const double sec = ops.elapsed_seconds(mk0, mk1);
      (low ? seconds32 : seconds64) += sec;
      (low ? steps32 : steps64) += steps;
      ++(low ? filters32 : filters64);
    }
    watch_climb(w, low, slow_before);
    if (!record_iteration(w, dw, t_it)) break;
  }
  const double t_loop = detail::now_seconds() - t_phase - t_finish;
  res.status = status;
  res.reason = reason;
  res.iterations = it + 1;
  res.operator_applies = ap.columns();
  res.seconds = detail::now_seconds() - t_start;
  if (copt.stats) {
    ChebyshevStats& s2 = *copt.stats;
    s2.block = m;
    s2.upper = upper;
    s2.lower = lower;
    s2.outer_iterations = it + 1;
    s2.applies = ap.applies();
    s2.filter_applies = filter_applies;
    s2.filter_columns = filter_columns;
    s2.ortho_fallbacks = fallbacks;
    s2.dense_budget_words = budget_words;
    s2.apply_seconds = apply_s;
    s2.dense_seconds = dense_s;
    s2.seconds_setup = t_setup;
    s2.seconds_bounds = t_bounds;
    s2.seconds_init = t_init;
    s2.seconds_loop = t_loop;
    s2.seconds_finish = t_finish;
    s2.cut = last_cut;
    s2.wanted_steps = wanted_steps;
    s2.stopped = stopped;
    s2.projections = projections;
    s2.steps_fp32 = steps32, s2.steps_fp64 = steps64;
    s2.seconds_fp32 = seconds32, s2.seconds_fp64 = seconds64;
    s2.seconds_filter_ortho = filter_ortho_s, s2.seconds_rayleigh_ritz = rr_s;
    s2.filters_fp32 = filters32, s2.filters_fp64 = filters64;
    s2.climbed_at = climbed_at;
    s2.fp64_reason = fp64_reason;
    s2.climb_reason = climb_reason;
  }
  return res;
}

}  // namespace tcsolve
