#include "solvers/chebyshev_precond.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/error.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/spectral_probe.hpp"

namespace tcsolve {

ChebyshevPreconditioner::ChebyshevPreconditioner(const LinearOperator<double>& a, DenseBlockOps& ops,
                                                 std::int64_t max_cols, double lower, double upper,
                                                 int degree, std::unique_ptr<ChebyshevStep> fused)
    : a_(a), ops_(ops), max_cols_(max_cols), lower_(lower), upper_(upper), degree_(degree),
      fused_(std::move(fused)) {
  if (!(lower > 0) || !(upper > lower) || !std::isfinite(upper))
    throw InvalidArgument("chebyshev preconditioner: need 0 < lower < upper (got lower " +
                          std::to_string(lower) + ", upper " + std::to_string(upper) + ")");
  if (degree < 1) throw InvalidArgument("chebyshev preconditioner: degree must be at least 1");
  if (a.rows() != a.cols()) throw InvalidArgument("chebyshev preconditioner: A must be square");
  if (a.space() != ops.space() || (fused_ && fused_->space() != ops.space()))
    throw InvalidArgument("chebyshev preconditioner: A and the dense ops live in different spaces");
  w_ = ops.allocate(a.rows(), max_cols);
  z0_ = ops.allocate(a.rows(), max_cols);
}

int ChebyshevPreconditioner::degree_for(double lower, double upper) {
  const double kappa = upper / lower;
  if (!(kappa > 1)) return 1;
  return static_cast<int>(std::clamp(std::ceil(std::sqrt(kappa) / 4.0), 1.0, 32.0));
}

std::string ChebyshevPreconditioner::describe() const {
  char b[160];
  std::snprintf(b, sizeof b, "chebyshev degree %d on [%.6g, %.6g]", degree_, lower_, upper_);
  return fused_ ? std::string(b) + " (" + fused_->describe() + ")" : std::string(b);
}

void ChebyshevPreconditioner::apply(MvView<const double> r, MvView<double> z) const {
  const std::int64_t n = a_.rows(), s = r.cols;
  if (r.rows != n || z.rows != n || z.cols != s || s > max_cols_)
    throw InvalidArgument("chebyshev preconditioner: block of " + std::to_string(s) +
                          " columns, workspace for " + std::to_string(max_cols_));
  const double theta = 0.5 * (upper_ + lower_), delta = 0.5 * (upper_ - lower_);
  const double sigma = theta / delta;
  std::vector<double> e(static_cast<std::size_t>(s)), one(static_cast<std::size_t>(s), 1.0);
  // Two buffers alternate: z_{j+1} overwrites z_{j−1}; the parity is chosen so that z_{m+1}
  // is written into z itself.
  MvView<double> buf[2] = {z, z0_.columns(0, s)};
  MvView<double> w = w_.columns(0, s);
  const int off = (degree_ + 1) % 2;
  auto slot = [&](int j) { return buf[(j + off) % 2]; };
  // z_1 = r/θ (z_0 = 0).
  std::fill(e.begin(), e.end(), 1.0 / theta);
  std::vector<double> zero(static_cast<std::size_t>(s), 0.0);
  ops_.axpby_columns(e.data(), r, zero.data(), slot(1));
  double rho_prev = 1.0 / sigma;  // ρ_0
  for (int j = 1; j <= degree_; ++j) {
    // z_{j+1} = (2ρ_j/δ)·(θ·z_j + r − A·z_j) − ρ_j·ρ_{j−1}·z_{j−1}, ρ_j = 1/(2σ − ρ_{j−1})
    // (j = 1: z_0 = 0, so its term is dropped and the buffer it would be read from is not read).
    const double rho = 1.0 / (2.0 * sigma - rho_prev);
    MvView<double> cur = slot(j), next = slot(j + 1);
    const double a = -2.0 * rho / delta, b = 2.0 * rho * sigma, c = j == 1 ? 0.0 : -rho * rho_prev;
    const double er = 2.0 * rho / delta;
    columns_ += s;
    rho_prev = rho;
    if (fused_) {  // one kernel: next = a·A·cur + b·cur + c·next + er·r
      fused_->step(a, cur, b, c, next, er, r);
      continue;
    }
    ops_.external_begin();
    a_.apply(cur, w);  // W = A·z_j
    ops_.external_end();
    ops_.axpbypcz(a, w, b, cur, c, next);
    std::fill(e.begin(), e.end(), er);
    ops_.axpby_columns(e.data(), r, one.data(), next);  // += (2ρ_j/δ)·r
  }
}

std::unique_ptr<ChebyshevPreconditioner> make_chebyshev_preconditioner(
    const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols, double upper_bound,
    std::uint64_t seed, double* seconds, int degree, const Csr<double>* csr, Precision storage) {
  const double t0 = detail::now_seconds();
  if (!(upper_bound > 0) || !std::isfinite(upper_bound))
    throw InvalidArgument("chebyshev preconditioner: the bound of λmax must be positive and finite");
  const std::int64_t n = a.rows();
  const SpectralProbe pr = spectral_probe([&](MvView<const double> x, MvView<double> y) {
    ops.external_begin();
    a.apply(x, y);
    ops.external_end();
  }, ops, n, static_cast<int>(std::min<std::int64_t>(40, n)), seed);
  const double lower = pr.lower > 1e-12 * upper_bound ? std::min(pr.lower, 0.5 * upper_bound) : 1e-6 * upper_bound;
  std::unique_ptr<ChebyshevStep> fused;
  double upper = upper_bound;
  if (csr) {
    if (csr->nrows != n) throw InvalidArgument("chebyshev preconditioner: the matrix and the operator differ in size");
    fused = make_chebyshev_step(*csr, ops.backend(), storage, ops.stream());
    if (storage != Precision::fp64) upper *= 1.0 + 1e-6;  // |Ã − A| ≤ 2^-24·|A| elementwise
  }
  auto pc = std::make_unique<ChebyshevPreconditioner>(
      a, ops, max_cols, lower, upper,
      degree > 0 ? degree : ChebyshevPreconditioner::degree_for(lower, upper), std::move(fused));
  if (seconds) *seconds = detail::now_seconds() - t0;
  return pc;
}

}  // namespace tcsolve
