// The checks every solve reports (solvers/result.hpp), computed on the host from A, B and X:
//   residual_norms[j]   ‖b_j − A·x_j‖₂ / ‖b_j‖₂ (‖r_j‖₂ when b_j = 0)
//   backward_errors[j]  ‖b_j − A·x_j‖₂ / (‖A‖_F·‖x_j‖₂ + ‖b_j‖₂)
//   optimality[j]       ‖Aᵀ·r_j‖₂ / (‖A‖_F·‖r_j‖₂) (least squares only; 0 when r_j = 0)
// One pass over A per block (plus one for Aᵀ·R), O(nnz·s) flops; no per-column allocation.
#pragma once
#include <cstdint>

#include "core/csr.hpp"
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

}  // namespace tcsolve
