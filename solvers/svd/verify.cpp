// True residuals of singular triplets (solvers/svd/verify.hpp).
#include "solvers/svd/verify.hpp"

namespace tcsolve::detail {

void measure_residuals(const LinearOperator<double>& a, const LinearOperator<double>& at,
                       DenseBlockOps& ops, ApplyClock& clock, MvView<const double> u,
                       MvView<const double> v, const std::vector<double>& sigma,
                       MvView<double> tu, MvView<double> tv, std::vector<double>& r_av,
                       std::vector<double>& r_atu) {
  const std::int64_t k = u.cols;
  TCSOLVE_REQUIRE(v.cols == k && static_cast<std::int64_t>(sigma.size()) == k && tu.cols == k &&
                      tv.cols == k && tu.rows == u.rows && tv.rows == v.rows,
                  "svds: residual shapes");
  std::vector<double> minus_sigma(static_cast<std::size_t>(k)), one(static_cast<std::size_t>(k), 1.0);
  for (std::int64_t j = 0; j < k; ++j) minus_sigma[j] = -sigma[j];
  r_av.assign(static_cast<std::size_t>(k), 0.0);
  r_atu.assign(static_cast<std::size_t>(k), 0.0);
  clock.apply(a, v, tu);  // A·V − U·Σ
  ops.axpby_columns(minus_sigma.data(), u, one.data(), tu);
  ops.column_norms(tu, r_av.data());
  clock.apply(at, u, tv);  // Aᵀ·U − V·Σ
  ops.axpby_columns(minus_sigma.data(), v, one.data(), tv);
  ops.column_norms(tv, r_atu.data());
}

bool all_pass(const SvdResult& r) {
  const double bound = r.tol * r.a_norm;
  for (std::size_t j = 0; j < r.residual_av.size(); ++j)
    if (!(r.residual_av[j] <= bound) || !(r.residual_atu[j] <= bound)) return false;
  return !r.residual_av.empty();
}

}  // namespace tcsolve::detail
