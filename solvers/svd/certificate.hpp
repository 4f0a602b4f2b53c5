// Sylvester count certificate of the k largest singular values of a sparse A (m × n): no singular
// value above the k-th is missing from the returned set, copies of a repeated one included.
//
// K = [0 A; Aᵀ 0] ((m + n) square, symmetric) has the eigenvalues ±σ_i and m + n − 2·rank(A)
// zeros, so for τ > 0 its eigenvalues above τ are exactly the singular values above τ:
//   #{σ_i > τ} = (m + n) − #{λ(K) < τ} − #{λ(K) = τ},  the counts from the pivots of K − τI
// (MUMPS LDLᵀ, factor/sparse_factor.hpp inertia_at). A returned triplet gives K the unit vector
// x = [u; v]/√2 with ‖K·x − σ·x‖ = √((‖A·v − σ·u‖² + ‖Aᵀ·u − σ·v‖²)/2), and its Rayleigh quotient
// uᵀAv lies within min(‖A·v − σ·u‖, ‖Aᵀ·u − σ·v‖) of σ; so eigs' end certificate of the largest
// eigenvalues (solvers/eigs/certificate.hpp: τ just past σ_k, then at the edge of σ_k's cluster
// when it has more copies) applies to K as written. Cost: one or two LDLᵀ factorizations of K,
// 2·nnz(A) entries.
//
// Not for the centered operator (A − 1·μᵀ is dense), nor where σ_k is within its error of 0 (the
// counts of K cannot tell it from the null space).
#pragma once
#include <string>

#include "core/csr.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve::detail {

struct SvdCertificate {
  Certified state = Certified::not_checked;
  std::string detail;     // what was counted, or why nothing was
  std::int64_t missing = 0;
  int factorizations = 0;
  double seconds = 0;     // the analysis and the counts
};

// K = [0 A; Aᵀ 0] with both triangles stored (the factorizations' contract).
Csr<double> augmented(const Csr<double>& a);

// Certifies r's values (σ_1 ≥ … ≥ σ_k of a converged run on `a`). `forced`: SvdCertify::always,
// counted whatever it costs (a factor beyond the memory limit still throws FactorTooLarge);
// otherwise counted only where it is cheap: K of at most kAutoEntries entries and an LDLᵀ of at
// most kAutoFlops by AMD's symbolic analysis (not_checked with the reason otherwise).
SvdCertificate certify_svds(const Csr<double>& a, const SvdResult& r, bool forced);

constexpr double kAutoEntries = 4e6;  // nnz(K) = 2·nnz(A); AMD's analysis alone ~0.1 s/1e6 here
constexpr double kAutoFlops = 2e9;    // about a second of MUMPS on the 2-core CPU

}  // namespace tcsolve::detail
