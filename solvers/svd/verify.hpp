// The true residuals of singular triplets, shared by the GKL iteration and the dense path
// (internal to solvers/svd).
#pragma once
#include <cstdint>
#include <vector>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve::detail {

// r_av[j] = ‖A·v_j − σ_j·u_j‖₂ and r_atu[j] = ‖Aᵀ·u_j − σ_j·v_j‖₂ for the k columns of U (m × k)
// and V (n × k), through the scratch blocks tu (m × k) and tv (n × k): one apply of A and one
// of Aᵀ on k columns, two fused column updates, two norm passes.
void measure_residuals(const LinearOperator<double>& a, const LinearOperator<double>& at,
                       DenseBlockOps& ops, ApplyClock& clock, MvView<const double> u,
                       MvView<const double> v, const std::vector<double>& sigma,
                       MvView<double> tu, MvView<double> tv, std::vector<double>& r_av,
                       std::vector<double>& r_atu);

// Every triplet of r within r.tol·r.a_norm on both residuals (NaN fails).
bool all_pass(const SvdResult& r);

}  // namespace tcsolve::detail
