// The svds planner (solvers/svd/plan.hpp).
#include "solvers/svd/plan.hpp"

#include <algorithm>

#include "core/format.hpp"

namespace tcsolve::detail {

namespace {
constexpr double kDenseEntries = 1u << 24;
constexpr std::int64_t kDenseSide = 1000;
constexpr double kRestarts = 2.0;
}  // namespace

bool dense_affordable(std::int64_t m, std::int64_t n) {
  return static_cast<double>(m) * static_cast<double>(n) <= kDenseEntries && std::min(m, n) <= kDenseSide;
}

bool svd_both_apply(std::int64_t m, std::int64_t n, bool fits) { return fits && dense_affordable(m, n); }

double price_gkl(const SvdPlanInputs& in) {
  const double L = static_cast<double>(in.shape.basis), keep = static_cast<double>(in.shape.keep);
  const double cols = 2.0 * L + 2.0 * (kRestarts - 1.0) * (L - keep) + 2.0 * static_cast<double>(in.k);
  const double flops = kRestarts * (8.0 * static_cast<double>(in.m + in.n) * L * L + 20.0 * L * L * L);
  return cols * in.t_col + flops * in.s_per_flop;
}

double price_dense(const SvdPlanInputs& in) {
  const double p = static_cast<double>(std::min(in.m, in.n)), q = static_cast<double>(std::max(in.m, in.n));
  const double flops = 4.0 * q * p * p + 22.0 * p * p * p;
  return (p + 2.0 * static_cast<double>(in.k)) * in.t_col + flops * in.s_per_flop;
}

SvdPlan plan_svds(const SvdPlanInputs& in) {
  SvdPlan p;
  const std::int64_t side = std::min(in.m, in.n);
  const std::string not_squared =
      "; AᵀA, AAᵀ and [0 A; Aᵀ 0] not priced (squaring resolves σ_j only to u·σ₁²/σ_j; the augmented "
      "matrix holds each value as ±σ, the wanted ones interior)";
  if (!in.fits) {
    p.dense = true;
    p.reason = format("dense: min(m, n) = %lld cannot hold a Krylov basis of k + 2 blocks (k = %lld, block %lld)",
                      (long long)side, (long long)in.k, (long long)in.shape.block);
    return p;
  }
  if (!svd_both_apply(in.m, in.n, in.fits)) {
    p.reason = format("block GKL: the dense SVD not priced (%lld × %lld: beyond 2^24 entries or a side of %lld)",
                      (long long)in.m, (long long)in.n, (long long)kDenseSide) + not_squared;
    return p;
  }
  p.gkl_s = price_gkl(in);
  p.dense_s = price_dense(in);
  p.dense = p.dense_s < p.gkl_s;
  p.reason = format("%s: predicted %.3g s against %s %.3g s (applied column %.3g s measured; two restarts of L = %lld "
                    "assumed for GKL)",
                    p.dense ? "dense" : "block GKL", p.dense ? p.dense_s : p.gkl_s, p.dense ? "block GKL" : "dense",
                    p.dense ? p.gkl_s : p.dense_s, in.t_col, (long long)in.shape.basis) + not_squared;
  return p;
}

}  // namespace tcsolve::detail
