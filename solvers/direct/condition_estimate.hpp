// The reciprocal condition number of a factored square A in the 1-norm, rcond₁ = 1/(‖A‖₁·‖A⁻¹‖₁),
// from a few solves with the factors: Hager's method with Higham's refinements (LAPACK's
// dlacn2/dlacon). ‖A⁻¹‖₁ = max_j ‖A⁻¹e_j‖₁ is found by a gradient ascent over the unit 1-norm
// ball (each step one solve with A and one with Aᵀ, at most 5 steps), and checked against
// Higham's alternating vector x_i = (−1)^i (1 + i/(n−1)). The result is a lower bound of ‖A⁻¹‖₁,
// in practice within a factor 3 of it, so rcond₁ is an upper bound of the true one: a small
// value is a proof of ill-conditioning (up to the rounding in the solves), a large one is not.
// Cost: at most 11 single-column solves and O(n) vectors; no use of A's entries.
#pragma once
#include <cstdint>
#include <functional>

#include "core/csr.hpp"

namespace tcsolve {

// y = A⁻¹·x (transpose: A⁻ᵀ·x); x and y hold n values and do not alias.
using InverseApply = std::function<void(const double* x, double* y, bool transpose)>;

// Estimate of ‖A⁻¹‖₁ (inf or NaN when a solve produced one: A singular to the factors).
double estimate_inverse_norm1(std::int64_t n, const InverseApply& solve);

// ‖A‖₁ = max_j Σ_i |a_ij| (one pass over A).
double csr_norm1(const Csr<double>& a);

}  // namespace tcsolve
