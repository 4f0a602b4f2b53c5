// Internal to the eigs driver: re-checks that no eigenvalue is missing from a returned set when no
// certificate is made. Each starts from fresh random vectors (never the solve's), works with the
// found pairs deflated, and must find nothing beyond the k-th value; what it finds it adds.
//
// filter_recheck (standard problems, B = I): a Chebyshev filter on a block of 2 random vectors,
//   projected against the found X every few steps, damping [μ_k + w, λmax] and amplifying
//   everything below μ_k (in Â = ±A, wanted end low). A missing eigenvector v with λ_v ≤ μ_k − δ
//   has a component |c| ≥ t/√n in a Gaussian start with probability ≥ 1 − 0.8·t per vector (t =
//   1e-3, two vectors: failure ≈ 6e-7); the filter's degree d is chosen so that T_d amplifies it by
//     A* = √(2·(λmax − μ_k)/δ)·√n/t
//   over every damped component, which makes the Rayleigh-Ritz value of the filtered block fall
//   below μ_k − δ/2 (energy argument: a²·δ ≥ 2·Σ b_i²·(λ_i − μ_k)). d = acosh(A*)/acosh(1 +
//   2(w + δ)/(λmax − μ_k − w)). The resolution δ is the gap the solve itself worked with: for
//   Chebyshev (block m > k: a subspace iteration cannot lose copies of a multiple eigenvalue to its
//   block size) the distance from μ_k to the solve's last filter cut (≈ λ_m); for Lanczos/LOBPCG
//   (a block Krylov space holds at most b copies of an eigenvalue) the distance from μ_k to the
//   next distinct found value below it, so that a missed copy of any found value is caught.
//   Cost: d applies of A to 2 columns plus a projection every P steps (P from the growth of the
//   found directions, ρ(μ_1)^P ≤ 1e8): about a tenth of the solve on the benchmark problems.
//   When it finds something, deflated_recheck (below) computes and adds the missing pairs.
// shift_invert_recheck: block Lanczos (block 2) on the Wielandt-deflated T = (A − σB)⁻¹B for the
//   one eigenvalue nearest σ outside the set; missing when nearer σ than the farthest found value.
// deflated_recheck (generalized problems, and the escalation of filter_recheck): a full run of
//   the solve's method on A' = A + Σ δ_j·(Bx_j)(Bx_j)ᵀ (found pairs moved inside the spectrum,
//   away from the wanted end) for its extreme pair; up to 3 rounds.
#pragma once
#include <cstdint>
#include <string>

#include "solvers/eigs/pairs.hpp"

namespace tcsolve::eigs_detail {

struct RecheckOutcome {
  bool verified = false;   // the last round found nothing missing
  bool affordable = true;  // filter_recheck: false when its degree exceeds the cap (not run)
  std::string detail;      // what was done and what it found, for the certificate line
  double seconds = 0.0;
  std::int64_t added = 0;  // missing pairs found and added to the set
};

// The filter re-check's degree cap: past it the deflated re-check runs (about a solve).
constexpr std::int64_t kFilterRecheckMaxDegree = 200000;

struct FilterRecheckInputs {
  double lower = 0.0;       // ≤ λmin(Â), Â = s·A (s = +1 smallest, −1 largest)
  double upper = 0.0;       // ≥ λmax(Â)
  double resolution = 0.0;  // δ in Â units (see above)
  const char* resolution_from = "";  // what δ is (for the detail line)
  std::int64_t columns = 2;
  std::int64_t max_degree = kFilterRecheckMaxDegree;  // cap: above it the re-check is not run 
};

RecheckOutcome filter_recheck(const Problem& s, const EigsOptions& opt, EigsMethod method,
                              PairSet& p, const FilterRecheckInputs& in);
// The filter re-check's degree for these inputs, without running or allocating anything (the
// verification prices the re-check with it: degree × one step on `columns` columns); 0 where it
// cannot run or the degree passes the cap (the deflated re-check, about a solve, follows then).
std::int64_t filter_recheck_degree(const Problem& s, const EigsOptions& opt, const PairSet& p,
                                   const FilterRecheckInputs& in, std::int64_t* columns = nullptr);

RecheckOutcome shift_invert_recheck(const Problem& s, const EigsOptions& opt,
                                    const LinearOperator<double>& sinv, double sigma, PairSet& p,
                                    double factor_entries);

RecheckOutcome deflated_recheck(const Problem& s, const EigsOptions& opt, EigsMethod method,
                                PairSet& p);

}  // namespace tcsolve::eigs_detail
