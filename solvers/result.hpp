// What the solvers return. Non-convergence is a status with partial results, not an exception.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tcsolve {

enum class SolverStatus {
  converged,      // every requested column passed the explicit true-residual test
  not_converged,  // iteration limit reached; values/vectors hold the best current approximations
  breakdown,      // the method cannot continue (e.g. pᵀAp ≤ 0: A not positive definite); see reason
  unverified,     // every pair passed its true-residual test, but nothing verified that no
                  // eigenvalue (a further copy of a multiple one) is missing (solvers/eigs.hpp)
  interrupted,    // stopped at an iteration's end on request (core/interrupt.hpp: SIGINT/SIGTERM);
                  // values/vectors hold the current approximations, residuals as measured
};
const char* to_string(SolverStatus s);

// A Sylvester count certificate of a returned set (eigs: solvers/eigs/certificate.hpp; svds:
// solvers/svd/certificate.hpp): every wanted value is in the set, or some are known missing.
enum class Certified { yes, no, not_checked };
const char* to_string(Certified c);

// Which branch the block orthonormalization took (the worst one in an iteration).
enum class OrthoBranch { none, cholqr2, svqb, svqb_drop };
const char* to_string(OrthoBranch b);

struct IterationRecord {
  std::int64_t iteration = 0;
  std::vector<double> residual_norms;  // per column, as estimated by the iteration (unscaled ‖r‖)
  std::vector<double> values;          // the wanted Ritz values at this iteration (LOBPCG; else empty)
  std::int64_t converged = 0;          // columns passing the (estimated) test this iteration
  std::int64_t active = 0;             // columns still expanded / in the block
  OrthoBranch ortho = OrthoBranch::none;
  double apply_seconds = 0.0;          // operator (A, B, preconditioner) applies
  double precond_seconds = 0.0;        // of which the preconditioner's (block CG)
  double dense_seconds = 0.0;          // everything else (Gram products, updates, small solves)
};

// A solver's state handed to a checkpoint callback (EigenOptions / CgOptions::on_checkpoint):
// `block` (host, n × cols, column-major) is what a later run starts from: the current Ritz
// vectors of an eigensolver (the first `locked` of them locked), or block CG's iterate X.
struct SolverCheckpoint {
  std::int64_t iteration = 0;
  std::int64_t n = 0, cols = 0, locked = 0;
  double seconds = 0.0;  // since the solver started
  double copy_seconds = 0.0;  // of the copy to the host (the solve waits for it)
  std::vector<double> block;
};
// Called at an iteration's end once `checkpoint_every` seconds have passed since the start or
// the last checkpoint's end; may take the block (move it), may leave in it a host buffer for the
// next checkpoint's copy (one whose write has finished), and may throw (the solve then ends with
// that exception).
using CheckpointFn = std::function<void(SolverCheckpoint&)>;

struct EigenResult {
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;                   // one sentence for not_converged / breakdown
  std::vector<double> values;           // k eigenvalues, ascending for smallest, descending for largest
  std::vector<double> vectors;          // n × k, column-major, host; B-orthonormal
  std::int64_t n = 0;
  std::vector<double> residual_norms;   // true ‖A·x_j − λ_j·B·x_j‖₂, recomputed at the end
  std::vector<double> residual_bounds;  // tol·(‖A‖·‖x_j‖ + |λ_j|·‖B‖·‖x_j‖) for each column
  double a_norm = 0.0, b_norm = 1.0;    // the norm estimates used in the test
  std::int64_t iterations = 0;          // outer iterations (LOBPCG steps, Lanczos restarts)
  std::int64_t operator_applies = 0;    // columns multiplied by A
  std::vector<IterationRecord> history;
  double seconds = 0.0;
};

struct SolveResult {
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;
  std::vector<double> solutions;        // n × s, column-major, host
  std::int64_t n = 0;
  std::vector<double> residual_norms;   // true ‖b_j − A·x_j‖₂ / ‖b_j‖₂, recomputed at the end
  // Normwise backward error ‖b_j − A·x_j‖₂ / (‖A‖·‖x_j‖₂ + ‖b_j‖₂), ‖A‖ the Frobenius norm (an
  // upper bound of ‖A‖₂, so the figure is a lower bound of the 2-norm one); empty where not
  // computed (solvers/solve_check.hpp).
  std::vector<double> backward_errors;
  // Least squares only: ‖Aᵀ·r_j‖₂ / (‖A‖·‖r_j‖₂), the optimality measure (0 for r_j = 0).
  std::vector<double> optimality;
  // Which method produced the answer: "block_cg", "minres", "gmres(30)", "umfpack LU", ...
  std::string method;
  std::vector<std::int64_t> column_iterations;  // iteration at which each column converged
  std::int64_t iterations = 0;
  std::int64_t operator_applies = 0;    // columns multiplied by A
  std::vector<IterationRecord> history;
  double seconds = 0.0;
  // Block CG's rungs: "fp64", or the mixed-precision solve's account ("fp32 iterations inside fp64
  // refinement: ..."; "... then fp64: <why it climbed>"), with the iterations on the fp32 rung
  // (the rest of `iterations` ran in fp64) and the refinement steps.
  std::string precision = "fp64";
  std::int64_t fp32_iterations = 0;
  int refinements = 0;
};

}  // namespace tcsolve
