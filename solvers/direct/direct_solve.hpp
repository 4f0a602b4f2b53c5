// Direct solves of A·X = B on the host through the maintained engines (README, Dependencies):
//   symmetric positive definite   CHOLMOD LLᵀ                      (factor/sparse_factor.hpp, σ = 0)
//   symmetric indefinite          MUMPS LDLᵀ with 1×1/2×2 pivots    (idem; CHOLMOD first when the
//                                                                   kind is symmetric_positive)
//   square unsymmetric            UMFPACK LU (factor/lu_factor.hpp)
//   rectangular                   SuiteSparseQR: least squares min ‖A·x − b‖ (m > n), minimum-norm
//                                 solution (m < n), minimum-norm least squares when rank-deficient
//                                 (factor/qr_factor.hpp)
// The shape decides first (m ≠ n: SuiteSparseQR whatever the kind), then the kind; opt.engine
// forces one (a square-only engine on a rectangular A is an InvalidArgument).
// Square A: after the factorization, a 1-norm condition estimate (≤ 11 one-column solves,
// solvers/direct/condition_estimate.hpp); then the whole block is solved and refined with the
// true A (≤ 2 steps, while a column's backward error is above opt.backward_tol and halves).
// A square A singular to working precision (a zero pivot or a structurally empty row/column,
// MUMPS's null pivots, CHOLMOD's pivot ratio below 1e-15, UMFPACK's below opt.singular_rcond,
// or the estimate 1/(‖A‖₁·‖A⁻¹‖₁) below opt.singular_rcond) is named in the result (status
// breakdown, reason "singular to working precision: <what was seen>; the least-squares
// (minimum-norm) answer is returned (numerical rank r of n ...)"), and SuiteSparseQR's
// minimum-norm least-squares answer is in `solutions`, with its optimality (and the column
// whose optimality is above opt.optimality_tol named in the reason, where one is).
// Every result carries the true residuals, the backward errors and, for least squares, the
// optimality (solvers/solution_check.hpp), recomputed from A, B and X. Status converged:
//   square          every column's backward error ≤ opt.backward_tol;
//   least squares   every column's optimality ≤ opt.optimality_tol, or, when A has full rank
//                   (the solution is unique), its backward error ≤ opt.backward_tol: a
//                   consistent system solved to working precision (the m < n case), whose
//                   residual is rounding and whose angle to range(A) means nothing.
// result.method names the engine ("cholmod LLᵀ", "mumps LDLᵀ", "umfpack LU", "spqr QR (least
// squares)"), result.refinements the refinement steps, result.seconds the wall time.
#pragma once
#include <cstdint>
#include <string>

#include "core/csr.hpp"
#include "core/matrix_kind.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

enum class DirectEngine { automatic, cholmod, mumps_ldlt, umfpack, spqr };
const char* to_string(DirectEngine e);

struct DirectOptions {
  DirectEngine engine = DirectEngine::automatic;  // automatic: by kind, as above
  double memory_limit_bytes = 0;  // 0: 80 % of the memory available (FactorOptions)
  double backward_tol = 1e-10;    // converged: every column's backward error at most this
  double optimality_tol = 1e-10;  // least squares: every column's ‖Aᵀr‖/(‖A‖‖r‖) at most this
  // A square A is singular to working precision when the engine says so (a zero pivot, MUMPS's
  // null pivots, CHOLMOD's pivot ratio below 1e-15), when UMFPACK's pivot ratio min|u_kk|/max|u_kk|
  // is below this, or when the 1-norm estimate 1/(‖A‖₁·‖A⁻¹‖₁) (Hager–Higham, a few solves:
  // solvers/direct/condition_estimate.hpp) is below this. 1e-14: a κ above it leaves fewer than
  // two correct digits of x (κ·ε ≥ 0.01), and such an answer is not offered as "the" solution.
  double singular_rcond = 1e-14;
};

// What a direct solve would cost, before any numeric work (symbolic analysis only): the planner
// (solvers/solve_plan.hpp) prices it against the iterative plan.
struct DirectEstimate {
  DirectEngine engine = DirectEngine::automatic;  // the one chosen for this kind
  double factor_entries = 0;  // nnz of the factors (L and U, or R)
  double flops = 0;           // of the numeric factorization
  // Of the solve with the factors, per right-hand side: 4·nnz(L) (LLᵀ, LDLᵀ: two sweeps),
  // 2·(nnz(L) + nnz(U)) (LU), 2·nnz(R) + 4·nnz(H) (QR: R and the Householder vectors).
  double solve_flops_per_column = 0;
  double bytes = 0;           // host memory the factorization needs
  double analysis_seconds = 0;  // this estimate's own cost (the ordering)
  bool feasible = true;       // false: over the memory limit (why says so)
  std::string why;
};
DirectEstimate estimate_direct(const Csr<double>& a, MatrixKind kind, const DirectOptions& opt = {});

// b: host, A.nrows × s, column-major (ldb ≥ nrows). The solutions (A.ncols × s) come back in the
// result. Throws InvalidArgument (shapes, non-finite entries), FactorTooLarge, NotCompiled.
SolveResult direct_solve(const Csr<double>& a, MatrixKind kind, const double* b, std::int64_t ldb, std::int64_t s,
                         const DirectOptions& opt = {});

}  // namespace tcsolve
