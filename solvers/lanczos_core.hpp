// Internal: thick-restart block Lanczos on any operator Op that is self-adjoint in the B-inner
// product (B = I when problem.b is null). block_lanczos() (Op = A or B⁻¹A) and the shift-invert
// run of the eigs driver (solvers/eigs/runs.cpp, Op = (A − σB)⁻¹·B) are both this one iteration
// with different applies, selection and verification. The iteration's steps are the class
// detail::BlockLanczos (solvers/lanczos/block_lanczos.hpp); lanczos_core() runs it.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/eigensolvers.hpp"
#include "solvers/result.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::detail {

struct LanczosProblem {
  std::int64_t n = 0;
  // B of the inner product (nullptr: the identity); applied to new basis blocks after their
  // projection (B·W recomputed, not carried: Op may be applied inexactly).
  const LinearOperator<double>* b = nullptr;
  // W = Op·V_c. bvc = B·V_c (V_c itself without B); scratch is an n × |V_c| block it may use.
  std::function<void(ApplyClock& clock, MvView<const double> vc, MvView<const double> bvc,
                     MvView<double> w, MvView<double> scratch)>
      apply;
  // Order of the wanted Ritz values θ of Op: smallest, largest or largest_magnitude.
  Which which = Which::smallest;
  // Estimated residual ‖E·y‖ (B-norm, for a B-normalized Ritz vector) that lets a Ritz pair
  // (θ, est) count as converged before the explicit check.
  std::function<bool(double theta, double est)> estimate_passes;
  // The explicit check of the k selected Ritz pairs (x: n × k in ops.space(), B-orthonormal).
  // Returns true when every pair passes; `last` is true at the iteration limit. It may fill the
  // result's values/vectors/residuals; the core fills them with θ and X otherwise.
  std::function<bool(ApplyClock& clock, MvView<double> x, const std::vector<double>& theta,
                     bool last, EigenResult& res)>
      verify;
  // false: the caller keeps the vectors (verify wrote them elsewhere); res.vectors stays empty.
  bool copy_vectors = true;
};

// opt: k, tol (unused here: the problem's tests decide), max_iterations, seed, block_size,
// max_basis, restart_keep, early_stop, keep_history, on_iteration, checkpoints, start (checked:
// InvalidArgument for zero, non-finite or dependent columns). Operators live in ops.space().
// An interrupt (core/interrupt.hpp) stops the run within one block step once the basis holds k
// columns: status interrupted, the Ritz pairs of the basis so far after the explicit check.
EigenResult lanczos_core(const LanczosProblem& problem, DenseBlockOps& ops, const EigenOptions& opt);

}  // namespace tcsolve::detail
