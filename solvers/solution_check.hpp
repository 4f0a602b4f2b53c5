// The checks every solve reports (solvers/result.hpp), computed on the host from A, B and X:
//   residual_norms[j]   ‖b_j − A·x_j‖₂ / ‖b_j‖₂ (‖r_j‖₂ when b_j = 0)
//   backward_errors[j]  ‖b_j − A·x_j‖₂ / (‖A‖_F·‖x_j‖₂ + ‖b_j‖₂)
//   optimality[j]       ‖Aᵀ·r_j‖₂ / (‖A‖_F·‖r_j‖₂) (least squares only; 0 when r_j = 0)
// One pass over A per block (plus one for Aᵀ·R), O(nnz·s) flops; no per-column allocation.
#pragma once
#include <cstdint>
#include <vector>

#include "core/csr.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

double frobenius_norm(const Csr<double>& a);

// R = B − A·X (R: A.nrows × s, ld A.nrows), multithreaded over rows: the step both the checks
// below and a direct solve's iterative refinement start from.
void residual_block(const Csr<double>& a, const double* b, std::int64_t ldb, const double* x, std::int64_t ldx,
                    std::int64_t s, double* r);

// Fills r.residual_norms, r.backward_errors and, when least_squares, r.optimality for the
// solutions x (A.ncols × s, ldx) of A·x = b (b: A.nrows × s, ldb).
void check_solution(const Csr<double>& a, const double* b, std::int64_t ldb, const double* x, std::int64_t ldx,
                    std::int64_t s, bool least_squares, SolveResult& r);

// The same two figures (square systems) where B and X stay in the dense ops' space (a GPU solve
// whose right-hand sides were generated there and whose solutions are not written): R = B − A·X
// by the operator (scratch: n × s in ops.space()), the norms of R, B and X there; a_fro = ‖A‖_F
// (frobenius_norm of A as read: the norms do not depend on a symmetric permutation of A, B, X).
// Its first part, for the solvers: rel[j] = ‖b_j − A·x_j‖/‖b_j‖ (‖r_j‖ for b_j = 0) by the
// operator in ops.space() (scratch n × s ← R); b_norms (optional) ← ‖b_j‖.
std::vector<double> relative_residuals_in_space(const LinearOperator<double>& a, DenseBlockOps& ops,
                                                MvView<const double> b, MvView<const double> x,
                                                MvView<double> scratch, std::vector<double>* b_norms = nullptr);
void check_solution_in_space(const LinearOperator<double>& a, double a_fro, DenseBlockOps& ops,
                             MvView<const double> b, MvView<const double> x, MvView<double> scratch,
                             SolveResult& r);

}  // namespace tcsolve
