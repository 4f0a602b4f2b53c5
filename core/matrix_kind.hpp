// The kind of a matrix, as `solve` and `info` need it: which methods apply.
//   rectangular           m ≠ n: least squares (overdetermined) or minimum norm (underdetermined)
//   unsymmetric           square, A ≠ Aᵀ beyond rel_tol·max|a_ij|: GMRES, LU
//   symmetric_indefinite  symmetric with some a_ii ≤ 0 (e_iᵀAe_i = a_ii proves A not positive
//                         definite), or shown indefinite later (a negative Rayleigh quotient, a
//                         Cholesky that fails): MINRES, LDLᵀ
//   symmetric_positive    symmetric with a positive diagonal: positive definite is then likely,
//                         not proven (block CG finds out: a negative pᵀAp is a breakdown that
//                         names it, and the planner falls back to MINRES)
#pragma once
#include "core/csr.hpp"

namespace tcsolve {

enum class MatrixKind { symmetric_positive, symmetric_indefinite, unsymmetric, rectangular };
const char* to_string(MatrixKind k);  // "spd?", ... (see matrix_kind.cpp)

struct MatrixKindFacts {
  MatrixKind kind = MatrixKind::symmetric_positive;
  double asymmetry = 0.0;        // max |a_ij − a_ji| / max |a_ij| (square only)
  std::int64_t nonpositive_diagonal = 0;  // rows with a_ii ≤ 0 (square only)
  std::int64_t empty_rows = 0, empty_cols = 0;  // structurally zero rows / columns: singular
};

// Classifies A by its entries only (O(nnz), no factorization). rel_tol: the symmetry test's.
// symmetric_by_construction (generators that build both triangles from one formula): the
// symmetry test is skipped (asymmetry 0).
MatrixKindFacts classify_matrix(const Csr<double>& a, double rel_tol = 1e-12, bool symmetric_by_construction = false);

}  // namespace tcsolve
