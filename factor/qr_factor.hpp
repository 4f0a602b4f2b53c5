// Minimum-norm least squares through SuiteSparseQR (SuiteSparse's multifrontal, rank-revealing
// sparse QR; 64-bit cholmod_l_* interface): X = A⁺·B for any m × n A, the answer that
// direct_solve (solvers/direct/direct_solve.hpp) offers for rectangular and for singular A.
//   m ≥ n:  A·E = Q·R (Q-less: C = Qᵀ·B is formed on the fly, Householder vectors dropped),
//           x = E·(R⁻¹·C) by back substitution;
//   m < n:  Aᵀ·E = Q·R (Householder vectors kept), x = Q·(R⁻ᵀ·Eᵀ·b): the solution in range(Aᵀ);
//   rank r < min(m, n) (SPQR's rank estimate: a column whose norm, at its elimination, is at most
//           tol = 20·(m + n)·ε·max_j ‖a_j‖ is dropped — Heath's test; norm_dropped says how much
//           of A that left out), or A known singular: complete orthogonal decompositions from both
//           sides, and the one with the lower rank is kept (Heath's test misses dependencies, e.g.
//           a duplicated row of A on the column side, but does not invent them):
//             columns: A·E ≈ Q_r·R_r (R_r r × n, full row rank), y = the minimum-norm solution of
//                      R_r·y = Q_rᵀ·B (QR of R_rᵀ, tol off), x = E·y;
//             rows:    Aᵀ·E ≈ Q_r·R_r (R_r r × m), y = argmin ‖R_rᵀ·y − Eᵀ·B‖ (QR of R_rᵀ, tol
//                      off), x = Q_r·y.
// So x is A⁺·B of the matrix with the dropped parts removed: the minimum-norm least-squares
// answer, not only a basic one. Where the remaining R_r is still ill-conditioned (no gap in the
// singular values: κ ≈ 1e14…1e18 matrices), x grows along its small singular values and its
// optimality ‖Aᵀr‖/(‖A‖‖r‖) shows it: the caller reports it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "factor/sparse_factor.hpp"

namespace tcsolve {

// SPQR's symbolic analysis (no numeric work) of the QR that qr_least_squares factors first: of A
// when m ≥ n, of Aᵀ when m < n.
struct QrAnalysis {
  double factor_entries = 0;  // SPQR's upper bound of nnz(R)
  double householder_entries = 0;  // its bound of nnz(H), the Householder vectors of Q
  double flops = 0;           // SPQR's upper bound of the factorization's flops
  // The frontal stack at its peak, R, the Householder vectors where kept (m < n) and the copies
  // of A: 8 bytes per value, 8 per index (an estimate, not a bound).
  double bytes = 0;
  double seconds = 0;         // of this analysis
  bool of_transpose = false;  // m < n: the QR of Aᵀ
};
QrAnalysis analyze_qr(const Csr<double>& a);

struct QrSolution {
  std::vector<double> x;      // n × s, column-major (ld n)
  std::int64_t rank = 0;      // SPQR's rank estimate of A
  double tol = 0;             // its column-norm threshold
  double norm_dropped = 0;    // ‖remainders of the dropped columns‖_F (0 at full rank)
  double factor_entries = 0;  // nnz(R) (of the first QR)
  double flops = 0;           // SPQR's flop count (all QRs)
  double seconds = 0;
  std::string route;          // "QR of A", "QR of A^T", "complete orthogonal: QR of A, then of R^T"
};

// b: host, m × s, column-major (ldb ≥ m); finite values (the caller checks). known_singular: A
// is known to be rank-deficient (a square A whose LU or LDLᵀ met a zero pivot): the complete
// orthogonal decomposition at once, even where SPQR's rank test would call A full rank. tol ≥ 0:
// Heath's threshold (columns whose norm at their elimination is at most tol are dropped) instead
// of SPQR's default 20·(m + n)·ε·max_j ‖a_j‖. Throws FactorTooLarge (the analysis' bytes over opt.memory_limit_bytes, or 80 % of the
// available memory), Error (SPQR failing, out of memory), NotCompiled without SuiteSparseQR.
QrSolution qr_least_squares(const Csr<double>& a, const double* b, std::int64_t ldb, std::int64_t s,
                            const FactorOptions& opt = {}, bool known_singular = false, double tol = -1.0);

}  // namespace tcsolve
