// Internal to the eigs driver: the solve step, one function per kind of run, each returning the
// pairs (in the ops' space) with their true residuals tested (pairs.hpp).
//   run_shift_invert  thick-restart block Lanczos on T = (A − σB)⁻¹·B (optionally deflated);
//   run_iterative     Chebyshev, block Lanczos or LOBPCG on A (or a deflated A');
//   run_dense         all eigenvalues by a dense solve (small n).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "solvers/chebyshev.hpp"
#include "solvers/eigs/pairs.hpp"
#include "solvers/eigs/plan.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve::eigs_detail {

// The runs' iteration limits when neither the caller nor the plan sets one: restarts of
// shift-invert Lanczos, iterations (outer, restarts, steps) of the methods on A.
constexpr std::int64_t kShiftInvertIterations = 300;
constexpr std::int64_t kIterativeIterations = 2000;

struct RunOut {
  PairSet pairs;
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;
  std::int64_t iterations = 0, applies = 0;
  std::vector<IterationRecord> history;
  bool pairs_pass = false;
  std::vector<double> bounds;  // what the test allowed each pair (test_pairs)
  std::vector<char> floored;   // pairs tested at the floor at λ ≈ 0 (pairs.hpp)
};

// The run's shape as the re-checks give it: block_size, basis, ladder, max_iterations and
// lanczos_early_stop of their options (the driver's runs take the plan's RunParams instead).
RunParams run_params_of(const EigsOptions& opt);

// Shift-invert block Lanczos for the k pairs nearest σ. `deflate` (may be empty) holds found pairs
// (B-orthonormal, with their λ) that T must not return again (Wielandt deflation). rp.block > 0
// forces the block (the re-check's small one). `start`: the start block (not with `deflate`).
RunOut run_shift_invert(const Problem& s, const LinearOperator<double>& sinv, double sigma,
                        const EigsOptions& opt, const RunParams& rp, const StartBlock& start,
                        std::int64_t k, std::uint64_t seed, const PairSet* deflate, double factor_entries);
// The re-checks' form: the shape and start from opt (run_params_of, opt.v0).
RunOut run_shift_invert(const Problem& s, const LinearOperator<double>& sinv, double sigma,
                        const EigsOptions& opt, std::int64_t k, std::uint64_t seed,
                        const PairSet* deflate, double factor_entries);

// What Chebyshev takes beyond the options (the planner's bounds and budget) and gives back.
struct ChebyshevHooks {
  const ChebyshevBounds* bounds = nullptr;
  std::function<bool(const ChebyshevProgress&)> keep_going;
  ChebyshevStats* stats = nullptr;
};

// Iterative run on A (or the deflated A') without a factorization: Chebyshev, block Lanczos or
// LOBPCG with the chosen convergence test mapped into the solvers' formula (and their rounding
// floor); then B-normalized pairs with Rayleigh quotients and true residuals. `precond`: the
// LOBPCG preconditioner operator (nullptr: Jacobi unless opt.precond says none).
RunOut run_iterative(const Problem& s, const LinearOperator<double>& a, EigsMethod method,
                     const EigsOptions& opt, const RunParams& rp, const StartBlock& start, Which which,
                     std::int64_t k, std::uint64_t seed, const LinearOperator<double>* precond,
                     const ChebyshevHooks& hooks = {});
// The re-checks' form: the shape and start from opt (run_params_of, opt.v0).
RunOut run_iterative(const Problem& s, const LinearOperator<double>& a, EigsMethod method,
                     const EigsOptions& opt, Which which, std::int64_t k, std::uint64_t seed,
                     const LinearOperator<double>* precond, const ChebyshevHooks& hooks = {});

// The Chebyshev step fused with the product (spmm/chebyshev_step) for the matrix's own operator
// `a` (== s.aop), or nullptr where it does not pay or fit: rows longer than 16 on average (the
// row-split kernel's case; longer rows keep the operator's tuned kernel), a foreign or distributed
// operator, a storage precision other than fp64/fp32, its copy of A (nnz·(4 + 8) + 8·(n + 1)
// bytes) above a tenth of the free device memory (a memory cap stays honoured), or
// TCSOLVE_FUSED_STEP=0 (same-run A/B benchmarks).
std::unique_ptr<ChebyshevStep> make_fused_step(const Problem& s, const LinearOperator<double>& a,
                                               const EigsOptions& opt);
// The step to use for `a`: A's own (make_fused_step, built once per problem and kept in
// s.fused_own), else the caller's (opt.fused_step, operator form: distributed/) when a is
// s.aop; nullptr when neither applies.
const ChebyshevStep* fused_step_for(const Problem& s, const LinearOperator<double>& a,
                                    const EigsOptions& opt);

// Dense solve (Eigen) for small problems: all eigenvalues, the k wanted returned.
RunOut run_dense(const Problem& s, const EigsOptions& opt);

// ‖B⁻¹‖: exact for a diagonal B; else 1/λ_min(B) from inverse iteration with a Cholesky factor.
double estimate_binv_norm(const Csr<double>& b, const std::vector<double>& diag_b, bool can_factor);

}  // namespace tcsolve::eigs_detail
