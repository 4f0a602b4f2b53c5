// Internal to the eigs driver: Sylvester certificates of a returned set (MUMPS LDLᵀ inertia).
//
// With LDLᵀ = A − τB (MUMPS, pivoting), the negative pivots count the eigenvalues below τ. For the
// k smallest μ₁ ≤ … ≤ μ_k (each within its error bound of a distinct true eigenvalue, since the
// x_j are B-orthonormal with small residuals):
//   τ_hi = μ_k + w: count(τ_hi) = k  ⇒ no eigenvalue below τ_hi is missing: certified;
//   count(τ_hi) > k: more eigenvalues within w of μ_k (copies of the k-th value beyond k) or
//   missing ones; τ_lo = (the lowest μ in μ_k's cluster) − w decides: count(τ_lo) must equal the
//   number of returned μ below τ_lo.
// `nearest` certifies the interval [σ − r, σ + r] (r = the largest |μ − σ|) the same way at both
// ends. Cost: one LDLᵀ factorization per count (1–2 for an end, 2–4 for an interval).
#pragma once
#include <cstdint>
#include <string>

#include "solvers/eigs/pairs.hpp"

namespace tcsolve::eigs_detail {

struct Certificate {
  Certified state = Certified::not_checked;
  std::string detail;
  std::int64_t missing = 0;  // eigenvalues known to be missing from the set
  int factorizations = 0;
  double seconds = 0;
};

// The k smallest (lower = true) or largest.
Certificate certify_end(const Problem& s, const PairSet& p, bool lower);
// `nearest`: all eigenvalues within [σ − r, σ + r] must be in the set.
Certificate certify_interval(const Problem& s, const PairSet& p, double sigma);

}  // namespace tcsolve::eigs_detail
