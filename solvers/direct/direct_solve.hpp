// Direct solves of A·X = B on the host through the maintained engines (README, Dependencies):
//   symmetric positive definite   CHOLMOD LLᵀ                      (factor/sparse_factor.hpp, σ = 0)
//   symmetric indefinite          MUMPS LDLᵀ with 1×1/2×2 pivots    (idem; CHOLMOD first when the
//                                                                   kind is symmetric_positive)
//   square unsymmetric            UMFPACK LU (with its iterative refinement)
//   rectangular                   SuiteSparseQR: least squares min ‖A·x − b‖ (m > n), minimum-norm
//                                 solution (m < n)
// A square A singular to working precision (a zero pivot, a structurally empty row/column, or a
// reciprocal condition estimate below ~ε) is named in the result (status breakdown, reason:
// "singular to working precision: ..."), and the least-squares answer (SuiteSparseQR's rank-
// revealing QR) is offered in `solutions`, with its optimality. Every result carries the true
// residuals, the backward errors and, for least squares, the optimality (solvers/solution_check.hpp);
// status is converged only when every column's backward error is ≤ opt.backward_tol (square) or
// its optimality is ≤ opt.optimality_tol (least squares).
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
