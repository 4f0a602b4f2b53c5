// Hager–Higham 1-norm estimate of A⁻¹ (solvers/direct/condition_estimate.hpp).
#include "solvers/direct/condition_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tcsolve {

namespace {

double norm1(const std::vector<double>& v) {
  double s = 0.0;
  for (const double x : v) s += std::abs(x);
  return s;
}

// ξ = sign(y) (sign(0) = +1), as LAPACK's dlacn2.
void sign_of(const std::vector<double>& y, std::vector<double>& xi) {
  for (std::size_t i = 0; i < y.size(); ++i) xi[i] = y[i] >= 0.0 ? 1.0 : -1.0;
}

std::int64_t arg_max_abs(const std::vector<double>& z) {
  std::int64_t j = 0;
  for (std::size_t i = 1; i < z.size(); ++i)
    if (std::abs(z[i]) > std::abs(z[j])) j = static_cast<std::int64_t>(i);
  return j;
}

}  // namespace

double estimate_inverse_norm1(std::int64_t n, const InverseApply& solve) {
  if (n <= 0) return 0.0;
  constexpr int kMaxSteps = 5;
  const std::size_t nn = static_cast<std::size_t>(n);
  std::vector<double> x(nn, 1.0 / static_cast<double>(n)), y(nn), xi(nn), z(nn);
  solve(x.data(), y.data(), false);
  double est = norm1(y);
  if (n == 1 || !std::isfinite(est)) return est;
  sign_of(y, xi);
  solve(xi.data(), z.data(), true);  // z = A⁻ᵀ·ξ: the gradient of ‖A⁻¹x‖₁ at x
  std::int64_t j = arg_max_abs(z);
  for (int step = 1; step < kMaxSteps; ++step) {
    // The vertex e_j the gradient points to.
    std::fill(x.begin(), x.end(), 0.0);
    x[j] = 1.0;
    solve(x.data(), y.data(), false);
    const double previous = est;
    est = norm1(y);
    if (!std::isfinite(est)) return est;
    std::vector<double> old_xi = xi;
    sign_of(y, xi);
    if (xi == old_xi || est <= previous) {
      est = std::max(est, previous);
      break;  // no ascent left (a local maximum of the convex function on the ball)
    }
    solve(xi.data(), z.data(), true);
    const std::int64_t next = arg_max_abs(z);
    if (std::abs(z[next]) == std::abs(z[j])) break;  // the same vertex again
    j = next;
  }
  // Higham's check: an alternating vector that the ascent can miss (matrices built to fool it).
  for (std::int64_t i = 0; i < n; ++i)
    x[i] = (i % 2 == 0 ? 1.0 : -1.0) * (1.0 + static_cast<double>(i) / static_cast<double>(n - 1));
  solve(x.data(), y.data(), false);
  return std::max(est, 2.0 * norm1(y) / (3.0 * static_cast<double>(n)));
}

double csr_norm1(const Csr<double>& a) {
  std::vector<double> col(static_cast<std::size_t>(a.ncols), 0.0);
  for (std::int64_t p = 0; p < a.nnz(); ++p) col[a.col_idx[p]] += std::abs(a.values[p]);
  double m = 0.0;
  for (const double c : col) m = std::max(m, c);
  return m;
}

}  // namespace tcsolve
