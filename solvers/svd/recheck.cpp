// The svds multiplicity re-check (solvers/svd/recheck.hpp).
#include "solvers/svd/recheck.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/device.hpp"
#include "core/format.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/svd/bidiag.hpp"

namespace tcsolve::detail {

namespace {

constexpr double kStartComponent = 1e-3;  // t: a missing vector's component ≥ t/√n in the start
constexpr std::int64_t kBlock = 2;        // start columns (failure ≈ (0.8·t)² = 6.4e-7)
constexpr double kCopyWindow = 1e-4;      // found values this close (relative) count as copies

// A·P (before: P = I − V·Vᵀ on X, then A) or P·Aᵀ (after: Aᵀ, then P on Y), V n × k orthonormal
// in ops' space. Per apply of q columns: one Gram V ᵀ·W (k × q) and one GEMM W −= V·G, plus a
// copy of X (before). Workspace: n × max_cols and k × max_cols, allocated here.
class Deflated : public LinearOperator<double> {
 public:
  Deflated(const LinearOperator<double>& op, MvView<const double> v, DenseBlockOps& ops, bool before,
           std::int64_t max_cols)
      : op_(op), v_(v), ops_(ops), before_(before), max_cols_(max_cols) {
    if (before_) s_ = ops.allocate(op.cols(), max_cols);
    g_ = ops.allocate(v.cols, max_cols);
  }
  std::int64_t rows() const override { return op_.rows(); }
  std::int64_t cols() const override { return op_.cols(); }
  Space space() const override { return op_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override {
    TCSOLVE_REQUIRE(x.cols <= max_cols_, "svds re-check: more columns than its workspace");
    if (before_) {
      auto s = s_.columns(0, x.cols);
      ops_.copy(x, s);
      project(s);
      ops_.synchronize();  // (the wrapped operator may run on a stream of its own)
      op_.apply(s, y);
      if (space() == Space::device) device_synchronize();
    } else {
      op_.apply(x, y);
      if (space() == Space::device) device_synchronize();
      project(y);
    }
    ops_.synchronize();
  }

 private:
  void project(MvView<double> w) const {  // W ← W − V·(Vᵀ·W)
    auto g = g_.columns(0, w.cols);
    ops_.gram_into(1.0, v_, w, 0.0, g);
    ops_.gemm_into(-1.0, v_, g, 1.0, w);
  }
  const LinearOperator<double>& op_;
  MvView<const double> v_;
  DenseBlockOps& ops_;
  const bool before_;
  const std::int64_t max_cols_;
  mutable MultiVector<double> s_, g_;
};

}  // namespace

SvdRecheckPlan svd_recheck_plan(const SvdResult& r, std::int64_t m, std::int64_t n) {
  SvdRecheckPlan p;
  const std::int64_t k = static_cast<std::int64_t>(r.values.size());
  if (k == 0) {
    p.why = "no values";
    return p;
  }
  const double s1 = std::max(r.values.front(), r.a_norm);
  p.sigma_k = r.values.back();
  p.eps = 4.0 * r.tol * s1;
  // Values descending; only those at least 2ε above σ_k can lack a copy (copies of σ_k itself
  // beyond the k-th are not wanted; closer values are σ_k's copies, to the set's error). Over
  // them: the largest group within the copy window (a window from each value down) and σ_d, the
  // smallest of them, so that δ/2 ≥ (σ_k + ε)² − σ_k² and a caught copy shows as θ > σ_k + ε.
  p.sigma_d = std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0, j = 0; i < k && r.values[i] >= p.sigma_k + 2.0 * p.eps; ++i) {
    j = std::max(j, i);
    while (j + 1 < k && r.values[i] - r.values[j + 1] <= std::max(2.0 * p.eps, kCopyWindow * r.values[i])) ++j;
    p.largest_group = std::max(p.largest_group, j - i + 1);
    p.sigma_d = r.values[i];
  }
  if (!(p.sigma_k > 2.0 * p.eps)) {
    p.why = format("sigma_k = %.6g is within the set's error (%.3g) of 0", p.sigma_k, 2.0 * p.eps);
    return p;
  }
  if (!std::isfinite(p.sigma_d)) p.sigma_d = std::max(1.01 * p.sigma_k, p.sigma_k + 2.0 * p.eps);
  const double ratio = (p.sigma_d * p.sigma_d - p.sigma_k * p.sigma_k) / (p.sigma_k * p.sigma_k);  // δ/σ_k²
  // a²/r² ≥ 1 + 2σ_k²/δ puts the filtered vector's Rayleigh quotient at σ_k² + δ/2 or above
  const double amplify = std::sqrt(1.0 + 2.0 / ratio) * std::sqrt(static_cast<double>(n)) / kStartComponent;
  const double degree = std::ceil(std::acosh(amplify) / std::acosh(1.0 + 2.0 * ratio));
  if (!(degree < 1e6)) {
    p.why = format("its degree (resolution %.3g of sigma_k) is out of reach", ratio);
    return p;
  }
  const std::int64_t steps = std::max<std::int64_t>(2, static_cast<std::int64_t>(degree) + 1);
  if (2 * steps + 2 * kBlock > std::min(m, n)) {
    p.why = format("its %lld block steps need a basis of %lld columns, more than min(m, n) = %lld allows",
                   (long long)steps, (long long)(2 * steps), (long long)std::min(m, n));
    return p;
  }
  p.steps = steps;
  p.columns = 2 * kBlock * steps;
  return p;
}

SvdRecheck recheck_svds(const LinearOperator<double>& a, const LinearOperator<double>& at, DenseBlockOps& ops,
                        const SvdOptions& opt, const SvdResult& r, std::int64_t block, std::int64_t max_columns) {
  SvdRecheck out;
  const double t0 = now_seconds();
  const std::int64_t m = a.rows(), n = a.cols(), k = static_cast<std::int64_t>(r.values.size());
  const SvdRecheckPlan p = svd_recheck_plan(r, m, n);
  if (p.largest_group < block) {
    out.by_block = true;
    out.detail = format("no re-check needed: no found value has b = %lld copies (the most within %g relative of "
                        "one another: %lld), and a block Krylov space holds min(b, p) directions of a p-fold value",
                        (long long)block, kCopyWindow, (long long)p.largest_group);
    return out;
  }
  if (p.steps == 0) {
    out.detail = "no re-check: " + p.why;
    return out;
  }
  const std::string resolution = format("resolution sigma_d = %.9g against sigma_k = %.9g", p.sigma_d, p.sigma_k);
  if (p.columns > max_columns) {
    out.detail = format("no re-check: %lld block steps (%lld applied columns; %s) cost more than its limit of %lld",
                        (long long)p.steps, (long long)p.columns, resolution.c_str(), (long long)max_columns);
    return out;
  }
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(r.v.size()) == n * k, "svds re-check: V must be n x k on the host");
  auto v = ops.allocate(n, k);
  ops.from_host(r.v.data(), n, v.view());
  const Deflated ap(a, v.view(), ops, true, kBlock), pat(at, v.view(), ops, false, kBlock);
  SvdOptions o;
  o.k = 1, o.block = kBlock, o.basis = kBlock * p.steps, o.tol = r.tol, o.max_restarts = 1;
  o.seed = opt.seed * 0x9E3779B97F4A7C15ULL + 0x5ec0c4ecULL;  // fresh vectors, never the solve's
  bool fits = false;
  const GklShape shape = gkl_shape(m, n, o, &fits);
  TCSOLVE_REQUIRE(fits, "svds re-check: the basis does not fit (plan)");
  BlockGkl gkl(ap, pat, ops, o, shape);
  gkl.start();
  for (std::int64_t s = 0; s < p.steps; ++s) gkl.expand();
  IterationRecord rec;
  gkl.ritz(rec);
  out.ran = true;
  out.top = gkl.sigma()(0);
  out.missing = !(out.top <= p.sigma_k + p.eps);  // (NaN: missing, never a pass)
  out.applies = 2 * kBlock * p.steps;
  out.seconds = now_seconds() - t0;
  out.detail = format("re-check: %lld block-GKL steps of 2 fresh random columns on A(I - VV^T) (%s): its largest "
                      "Ritz value %.9g is %s sigma_k + %.2g%s (%.3f s)",
                      (long long)p.steps, resolution.c_str(), out.top, out.missing ? "above" : "within", p.eps,
                      out.missing ? ": a singular value above sigma_k is missing from the set" : ": none missing",
                      out.seconds);
  return out;
}

}  // namespace tcsolve::detail
