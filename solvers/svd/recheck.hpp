// The multiplicity re-check of a converged svds set where no count certificate is made (the
// centered operator, matrices whose count costs too much, the operator form): no singular value
// above σ_k is missing, copies of a found value beyond the block included (internal to
// solvers/svd; the svds() entry points call it).
//
// With V (n × k) the found right vectors and P = I − V·Vᵀ, the deflated operator A·P has the
// singular values of A outside the set (and zeros): at most σ_{k+1} ≤ σ_k when nothing is missing,
// at least σ_d when a copy of a found value σ_d > σ_k is missing. The re-check runs the block GKL
// (block 2, fresh random start from another seed, no restart) on A·P and P·Aᵀ for `steps` block
// steps and takes its largest Ritz value θ, a lower bound on ‖A·P‖₂:
//   θ > σ_k + ε  (ε = 4·tol·σ₁, the set's own error): a value above σ_k is missing (proved, to
//                 the second-order error of P);
//   otherwise    : nothing at or above σ_d is missing, with probability ≥ 1 − 6e-7.
// Why that many steps: M = P·Aᵀ·A·P has its spectrum in [0, σ_k²] except for missing values
// λ ≥ σ_d², δ = σ_d² − σ_k². Its block Krylov space of s = d + 1 steps holds T_d(1 + 2(M − σ_k²)/σ_k²)
// applied to the start; a missing vector has a component ≥ t/√n in a Gaussian start with
// probability ≥ 1 − 0.8·t per column (t = 1e-3, two columns; the start is uniform in [−1, 1), for
// which the bound holds roughly as for a Gaussian), and
//   d = ⌈acosh(A*) / acosh(1 + 2δ/σ_k²)⌉,  A* = √(1 + 2σ_k²/δ)·√n/t
// amplifies it over every damped component enough that the Rayleigh quotient of the filtered
// vector, hence θ², passes σ_k² + δ/2 (the energy argument of eigs' filter re-check,
// solvers/eigs/recheck.hpp). σ_d is the smallest found value at least 2ε above σ_k, so that
// σ_k² + δ/2 ≥ (σ_k + ε)²: a missing copy of any found value at or above σ_k + 2ε is caught (values
// closer to σ_k are within the set's own error of it); where no found value is that far above σ_k,
// σ_d = max(1.01·σ_k, σ_k + 2ε). ε = 4·tol·σ₁ does not grow with k: a tight cluster straddling σ_k
// whose errors add beyond ε could be flagged though complete (then the wider re-run answers).
// Cost: 4·s applied columns (A and Aᵀ on 2 columns a step: 2·s passes over A, about what a solve
// to 1e-6 costs) and the bases m × 2s, n × 2(s + 2).
// When it is needed: a block Krylov space of block b holds min(b, p) directions of a p-fold
// singular subspace (its projection there is that of the start block; a thick restart is a
// polynomial filter of the start and keeps it), and a converged set holds every direction of a
// wanted value that its space holds. So a copy can be missing only from a value the set holds at
// least b times. Where no group of found values at least 2ε above σ_k within the copy window
// (max(2ε, 1e-4·σ_j): tight clusters behave as one value) has b members, the block size answers
// (verification "block") and nothing runs; otherwise the re-check does. (k = 1, or every value
// within 2ε of σ_k: nothing above σ_k can lack a copy; the block answers.)
#pragma once
#include <cstdint>
#include <string>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve::detail {

struct SvdRecheckPlan {
  double sigma_k = 0, sigma_d = 0, eps = 0;
  std::int64_t steps = 0;       // block steps of the deflated GKL (0: cannot run, see why)
  std::int64_t columns = 0;     // applied columns: 4·steps
  std::int64_t largest_group = 0;  // most found values ≥ σ_k + 2ε within the copy window of one another
  std::string why;              // why it cannot run ("" when it can)
};

// The plan for the converged set r of an m × n operator (pure: no operator touched).
SvdRecheckPlan svd_recheck_plan(const SvdResult& r, std::int64_t m, std::int64_t n);

struct SvdRecheck {
  bool ran = false;
  bool by_block = false;  // not needed: no found value has `block` copies (see above)
  bool missing = false;  // a value above σ_k + ε found outside the set
  double top = 0;        // θ: the largest Ritz value of A·P
  std::string detail;    // what was done and found
  double seconds = 0;
  std::int64_t applies = 0;  // columns applied
};

// Runs the plan on A, Aᵀ (ops' space) for r (converged, r.v on the host, n × k), found with block
// `block`. Not run (ran = false, detail says why) where the block size answers (by_block), where
// the plan cannot run, or where it costs more than max_columns applied columns (svds: twice the
// solve's, at least 1024).
SvdRecheck recheck_svds(const LinearOperator<double>& a, const LinearOperator<double>& at, DenseBlockOps& ops,
                        const SvdOptions& opt, const SvdResult& r, std::int64_t block, std::int64_t max_columns);

}  // namespace tcsolve::detail
