// Spectral probe: Lanczos steps, Gauss quadrature and the near-end power-law model
// (solvers/spectral_probe.hpp).
#include "solvers/spectral_probe.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/trace.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve {

namespace {

// Nodes, weights and bounds from the Lanczos coefficients of `done` steps: H (ld × ld,
// column-major) holds α_j = H(j, j) and β_{j+1} = H(j + 1, j). The tridiagonal T is cut at the
// first (numerically) zero β: an invariant subspace.
void gauss_quadrature(const double* hh, std::int64_t ld, std::int64_t done, SpectralProbe& p) {
  using Mat = Eigen::MatrixXd;
  auto H = Eigen::Map<const Mat>(hh, ld, ld);
  std::int64_t len = done;
  double scale = 0.0;
  for (std::int64_t j = 0; j < done; ++j) scale = std::max(scale, std::abs(H(j, j)));
  for (std::int64_t j = 0; j + 1 < done; ++j)
    if (!(H(j + 1, j) > 1e-12 * std::max(scale, 1e-300))) {
      len = j + 1;
      break;
    }
  Mat t = Mat::Zero(len, len);
  for (std::int64_t j = 0; j < len; ++j) {
    t(j, j) = H(j, j);
    if (j + 1 < len) t(j + 1, j) = t(j, j + 1) = H(j + 1, j);
  }
  const double beta_last = len == done ? H(done, done - 1) : 0.0;
  Eigen::SelfAdjointEigenSolver<Mat> es(t);
  p.steps = static_cast<int>(len);
  p.nodes.resize(len);
  p.weights.resize(len);
  for (std::int64_t i = 0; i < len; ++i) {
    p.nodes[i] = es.eigenvalues()(i);
    p.weights[i] = es.eigenvectors()(0, i) * es.eigenvectors()(0, i);
  }
  p.lower = p.nodes.front();
  p.upper = p.nodes.back();
  p.lower_bound = p.lower - std::abs(beta_last * es.eigenvectors()(len - 1, 0));
  p.upper_bound = p.upper + std::abs(beta_last * es.eigenvectors()(len - 1, len - 1));
}

}  // namespace

SpectralProbe spectral_probe(const std::function<void(MvView<const double>, MvView<double>)>& apply,
                             DenseBlockOps& ops, std::int64_t n, int steps, std::uint64_t seed,
                             bool full_reorthogonalization) {
  const double t0 = detail::now_seconds();
  const std::int64_t ng = ops.global_rows(n);  // n is this process's share of a distributed block
  TCSOLVE_REQUIRE(ng >= 2, "spectral probe: n must be at least 2");
  const std::int64_t s = std::max<std::int64_t>(1, std::min<std::int64_t>(steps, ng - 1));
  MultiVector<double> v = ops.allocate(n, s + 1), hs = ops.allocate(s + 1, s + 1),
                      tmp = ops.allocate(s + 1, 1);
  ops.fill_zero(hs.view());
  ops.fill_random(v.columns(0, 1), seed * 2654435761ull + 17);
  MvView<double> nrm{hs.data() + s * (s + 1), 1, 1, s + 1, ops.space()};  // spare slot
  ops.normalize_columns(v.columns(0, 1), nrm);
  trace_mark("probe: start vector queued");
  std::vector<std::pair<int, int>> marks;
  std::vector<double> host_step_s;
  double dense_words = 0.0, host_dense_s = 0.0;
  std::int64_t done = 0;  // steps made: s, or fewer when an interrupt stopped the probe
  bool stopped = false;
  for (std::int64_t j = 0; j < s; ++j) {
    // An interrupt stops the probe between steps (one apply and two Gram-Schmidt passes: ~70 ms
    // at 1M rows on the 2-core CPU), after the first: what the steps made give is returned
    // (SpectralProbe::interrupted), so that an iterative solve still starts and ends at its first
    // iteration with a partial result; a phase after it with nothing to return throws.
    if (j > 0 && interrupt_requested()) {
      stopped = true;
      break;
    }
    // The vectors w is orthogonalized against: all of v_0..v_j, or v_{j-1}, v_j (local).
    const std::int64_t j0 = full_reorthogonalization ? 0 : std::max<std::int64_t>(0, j - 1);
    // Words moved: two passes of (Gram: basis + w; update: basis + w read and written), then the
    // norm and the scaling of w (3 n): (4c + 9)·n for a basis of c columns.
    dense_words += static_cast<double>(4 * (j + 1 - j0) + 9) * static_cast<double>(n);
    auto basis = v.columns(j0, j + 1 - j0);
    auto w = v.columns(j + 1, 1);
    const int m0 = ops.queue().mark();
    const double ta = detail::now_seconds();
    apply(v.columns(j, 1), w);
    const double tg = detail::now_seconds();
    if (ops.space() == Space::host) host_step_s.push_back(tg - ta);
    marks.push_back({m0, ops.queue().mark()});
    // Two classical Gram-Schmidt passes against that basis.
    MvView<double> h{hs.data() + j * (s + 1) + j0, j + 1 - j0, 1, s + 1, ops.space()};
    MvView<double> h2{tmp.data(), j + 1 - j0, 1, s + 1, ops.space()};
    ops.gram_into(1.0, basis, w, 0.0, h);
    ops.gemm_into(-1.0, basis, h, 1.0, w);
    ops.gram_into(1.0, basis, w, 0.0, h2);
    ops.gemm_into(-1.0, basis, h2, 1.0, w);
    ops.chebyshev().axpbypcz(1.0, h2, 0.0, h2, 1.0, h);
    MvView<double> beta{hs.data() + (j + 1) + j * (s + 1), 1, 1, s + 1, ops.space()};
    ops.normalize_columns(w, beta);
    if (ops.space() == Space::host) host_dense_s += detail::now_seconds() - tg;
    if (j < 2) trace_mark(j == 0 ? "probe: step 1 queued" : "probe: step 2 queued");
    done = j + 1;
  }
  trace_mark("probe: every step queued");
  std::vector<double> hh((s + 1) * (s + 1));
  ops.queue().download_deferred(hs.view(), hh.data(), s + 1);
  ops.queue().fetch();
  trace_mark("probe: fetched");
  SpectralProbe p;
  p.n = ng;
  // One apply's time is the median step's: the first apply of a run may carry one-time costs (the
  // kernel's lazy module load on the GPU: with the kernel trial skipped, the probe made the first
  // launch, and lap2d:200's 517-step filter was priced at 0.83 s instead of ~0.06 s on the H200).
  std::vector<double> step_s = host_step_s;
  if (ops.space() != Space::host)
    for (auto& m : marks) step_s.push_back(ops.queue().elapsed_seconds(m.first, m.second));
  std::sort(step_s.begin(), step_s.end());
  const double median_step = step_s.empty() ? 0.0 : step_s[step_s.size() / 2];
  gauss_quadrature(hh.data(), s + 1, done, p);
  p.apply_seconds = median_step * static_cast<double>(p.steps);
  p.seconds = detail::now_seconds() - t0;
  p.dense_words = dense_words;
  // On the host (synchronous) the Gram–Schmidt passes themselves: the probe's fixed costs (the
  // allocation, the start vector, T's eigenproblem) are not per word (494_bus, 2-core CPU: 1.1e-9
  // s a word from the whole probe, which priced its host shift-invert at 3x its run).
  p.dense_seconds = ops.space() == Space::host ? host_dense_s
                                               : std::max(0.0, p.seconds - median_step * static_cast<double>(done));
  p.interrupted = stopped;
  return p;
}

double SpectralProbe::EndModel::eigenvalue(double j) const {
  return l0 + std::exp((std::log(std::max(j, 1e-300)) - log_c) / p);
}

SpectralProbe::EndModel SpectralProbe::end_model(double sgn) const {
  EndModel m;
  const std::size_t len = nodes.size();
  if (len < 5) return m;
  // Nodes and weights of Â = sgn·A, ascending.
  std::vector<double> th(len), w(len);
  for (std::size_t i = 0; i < len; ++i) {
    const std::size_t src = sgn > 0 ? i : len - 1 - i;
    th[i] = sgn * nodes[src];
    w[i] = weights[src];
  }
  m.lo = th.front();
  m.hi = sgn > 0 ? upper_bound : -lower_bound;
  const double width = m.hi - m.lo;
  if (!(width > 0)) return m;
  constexpr int kFit = 4;
  double cum = 0.0, y[kFit];
  for (int i = 0; i < kFit; ++i) {
    y[i] = std::log(std::max(static_cast<double>(n) * (cum + 0.5 * w[i]), 1e-300));
    cum += w[i];
  }
  double best_err = INFINITY;
  for (int s = 0; s < 200; ++s) {
    const double l0 = th[0] - std::pow(10.0, -6.0 + 6.0 * s / 199.0) * width;
    double x[kFit], mx = 0, my = 0;
    for (int i = 0; i < kFit; ++i) x[i] = std::log(th[i] - l0), mx += x[i] / kFit, my += y[i] / kFit;
    double sxx = 0, sxy = 0;
    for (int i = 0; i < kFit; ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    if (!(sxx > 0)) continue;
    const double p = sxy / sxx;
    if (!(p > 0.3 && p <= 3.0)) continue;
    const double lc = my - p * mx;
    double err = 0;
    for (int i = 0; i < kFit; ++i) err += (y[i] - (p * x[i] + lc)) * (y[i] - (p * x[i] + lc));
    if (err < best_err) best_err = err, m.l0 = l0, m.p = p, m.log_c = lc, m.fit_ok = true;
  }
  return m;
}

double SpectralProbe::interpolated_gap(double sgn, std::int64_t k, std::int64_t m, double large) const {
  const std::size_t len = nodes.size();
  if (len < 2 || k < 1 || m < k) return std::nan("");
  // Â = sgn·A ascending; N(θ_i) ≈ n·(τ_0² + … + τ_{i−1}² + τ_i²/2), the counting function the
  // quadrature gives at its nodes, and λ_j where the linear interpolant of N reaches j.
  std::vector<double> th(len), cnt(len);
  double cum = 0.0;
  for (std::size_t i = 0; i < len; ++i) {
    const std::size_t src = sgn > 0 ? i : len - 1 - i;
    th[i] = sgn * nodes[src];
    cnt[i] = static_cast<double>(n) * (cum + 0.5 * weights[src]);
    cum += weights[src];
  }
  auto at = [&](double j) {
    if (!(j <= cnt.back())) return std::nan("");
    if (j <= cnt.front()) return th.front();
    const std::size_t i = static_cast<std::size_t>(std::lower_bound(cnt.begin(), cnt.end(), j) - cnt.begin());
    const double f = (j - cnt[i - 1]) / std::max(cnt[i] - cnt[i - 1], 1e-300);
    return th[i - 1] + f * (th[i] - th[i - 1]);
  };
  const double lk = at(static_cast<double>(k)), lm = at(static_cast<double>(m + 1));
  const double hi = sgn > 0 ? upper_bound : -lower_bound;
  const double g = (lm - lk) / (hi - lm);
  if (g >= 1 && std::isfinite(g)) return large;
  return g > 0 && g < 1 && std::isfinite(g) ? g : std::nan("");
}

double SpectralProbe::first_node_count(double sgn) const {
  if (nodes.empty()) return 0.0;
  return static_cast<double>(n) * 0.5 * weights[sgn > 0 ? 0 : nodes.size() - 1];
}

double SpectralProbe::below_node_gap(double sgn, std::int64_t k, std::int64_t m) const {
  const std::size_t len = nodes.size();
  if (len < 2 || k < 1 || m < k) return std::nan("");
  const double th0 = sgn * nodes[sgn > 0 ? 0 : len - 1], c0 = first_node_count(sgn);
  if (!(c0 > static_cast<double>(m + 1))) return std::nan("");
  const double bound = sgn > 0 ? lower_bound : -upper_bound, hi = sgn > 0 ? upper_bound : -lower_bound;
  const double span = th0 - bound;
  if (!(span > 0)) return std::nan("");
  const double lk = bound + static_cast<double>(k) / c0 * span, lm = bound + static_cast<double>(m + 1) / c0 * span;
  const double g = (lm - lk) / (hi - lm);
  return g > 0 && g < 1 && std::isfinite(g) ? g : std::nan("");
}

double SpectralProbe::relative_gap(double sgn, std::int64_t k, std::int64_t m,
                                   double fallback) const {
  const EndModel e = end_model(sgn);
  if (!e.fit_ok) return fallback;
  const double lk = e.eigenvalue(static_cast<double>(k));
  const double lm = e.eigenvalue(static_cast<double>(m + 1));
  const double g = (lm - lk) / (e.hi - lm);
  if (!(g > 0 && g < 1) || !std::isfinite(g)) return fallback;
  return g;
}

}  // namespace tcsolve
