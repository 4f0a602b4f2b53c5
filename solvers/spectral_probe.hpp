// A few steps of single-vector Lanczos on a symmetric A from a random start: bounds of the
// spectrum, the Gauss quadrature of A's spectral measure (Ritz values θᵢ with weights τᵢ², the
// squared first components of T's eigenvectors; E[Σ_{θᵢ≤t} τᵢ²] ≈ N(t)/n), and what the planner
// derives from them: a density-of-states estimate of the eigenvalues near either end.
//
// Cost: `steps` applies of A to one column and one classical Gram-Schmidt pass per step against
// the basis (reads (j+1)·n words at step j): ≈ steps²·n words in all; T's eigenproblem on the host.
// Used by the eigs planner (solvers/eigs/plan.hpp) and, through ChebyshevOptions::bounds, by
// Chebyshev, which then skips its own bounds.
//
// Near-end eigenvalues: at the wanted end (Â = s·A, s = ±1, so that the end is the lower one)
// the counting function is modelled as a power law N(λ) = c·(λ − λ₀)^p fitted to the lowest four
// quadrature nodes (N(θᵢ) ≈ n·(Σ_{j<i} τⱼ² + τᵢ²/2)), scanning λ₀ below θ₁. PDE spectra follow it
// (p = d/2: 1 in 2D, 1.5 in 3D); on 12 test matrices (Laplacians, elasticity, meshes, stiffness)
// the relative gap (λ_{m+1} − λ_k)/(λmax − λ_{m+1}) it predicts was within 0.7–1.8× of the true one
// for the smooth spectra, and 30–100× too small at the smallest end of stiffness matrices with
// κ ≈ 1e10 (which is the safe side: the planner then prefers shift-invert). `fit_ok` is false when
// no power law fits (the estimate is then a conservative default).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/multivector.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve {

struct SpectralProbe {
  std::int64_t n = 0;
  int steps = 0;
  std::vector<double> nodes;    // Ritz values of T, ascending (of A)
  std::vector<double> weights;  // τᵢ², summing to 1
  double lower = 0.0;           // θ_min(A) ≥ λ_min(A)
  double upper = 0.0;           // θ_max(A) ≤ λ_max(A)
  double lower_bound = 0.0;     // θ_min − |β_s·y_s|: below λ_min(A) unless the start missed it
  double upper_bound = 0.0;     // θ_max + |β_s·y_s|: above λ_max(A) unless the start missed it
  double apply_seconds = 0.0;   // of the applies (one column each): the median step × steps
  double seconds = 0.0;         // whole probe
  // The Gram–Schmidt passes' share (the whole probe less its applies) and the 8-byte words they
  // moved (spectral_probe.cpp): the host planner's rate of dense work against a basis.
  double dense_seconds = 0.0;
  double dense_words = 0.0;
  // Stopped early by an interrupt request (core/interrupt.hpp): fewer steps than asked, so the
  // bounds are those of a shorter Lanczos run (still Ritz values, i.e. inside the spectrum).
  bool interrupted = false;

  // Estimated eigenvalues λ_j of Â = s·A (j = 1, 2, …, counted from Â's lower end) under the
  // fitted power law; sgn = +1 for the smallest end of A, −1 for the largest.
  struct EndModel {
    bool fit_ok = false;
    double l0 = 0.0, p = 1.0, log_c = 0.0;  // N(λ) = exp(log_c)·(λ − l0)^p in Â
    double lo = 0.0, hi = 0.0;             // Â's spectrum bounds used (hi = the far end)
    double eigenvalue(double j) const;     // λ_j of Â
  };
  EndModel end_model(double sgn) const;
  // (λ_{m+1} − λ_k)/(hi − λ_{m+1}) at the wanted end (sgn as above): the relative gap that
  // governs a Chebyshev filter on a block of m columns (chebyshev_cost); `fallback` when the fit
  // fails.
  double relative_gap(double sgn, std::int64_t k, std::int64_t m, double fallback = 1e-3) const;
  // The same gap read off the quadrature's counting function itself (N(θ_i) ≈ n·Σ_{j<i} τ_j² +
  // n·τ_i²/2, linearly interpolated) where the power law does not fit (isolated eigenvalues at the
  // end: 1138_bus's largest, true 0.017 at k = 10, m = 24; this estimate 0.006; the fallback
  // 1e-3). NaN where N does not reach m + 1 or the gap is not in (0, 1); `large` where it is at
  // least 1 (isolated values at a stiffness matrix's largest end: bcsstk08, k = 6, m = 16, λ_k
  // several times λ_{m+1}), if given.
  double interpolated_gap(double sgn, std::int64_t k, std::int64_t m, double large = std::nan("")) const;
  // Where the first node of Â's end already counts more than m + 1 values (the wanted gap lies
  // wholly below it, where the quadrature says nothing of their spread): the gap of a uniform
  // count between the probe's bound of the end and that node. NaN elsewhere. (sherman1, largest,
  // k = 1, m = 16: 51 values under the node; this 9.4e-4, the power law 3.9e-5, true 9.4e-4.)
  double below_node_gap(double sgn, std::int64_t k, std::int64_t m) const;
  // N at the first node of Â's end (n·τ²/2 of that node): how many values the quadrature puts at
  // or below it, where it cannot tell them apart. 0 without nodes.
  double first_node_count(double sgn) const;
};

// apply(x, y): y = A·x for n × 1 blocks in ops.space(). seed: the random start. An interrupt
// (core/interrupt.hpp) requested before a step after the first stops the probe there: it returns
// what the steps made give, with `interrupted` set.
// full_reorthogonalization: each step's two Gram-Schmidt passes run against the whole basis
// (≈ steps²·n words; the quadrature weights stay those of exact Lanczos). false: against the two
// newest vectors only (local; ≈ 8·steps·n words), enough for the extreme Ritz values: in finite
// precision they stay inside the spectrum's hull and converge as fast, and lost orthogonality only
// adds copies of converged values (the preconditioner's bounds; lap3d:100, 40 steps on the H200:
// ~16 ms with full reorthogonalization).
SpectralProbe spectral_probe(const std::function<void(MvView<const double>, MvView<double>)>& apply,
                             DenseBlockOps& ops, std::int64_t n, int steps, std::uint64_t seed,
                             bool full_reorthogonalization = true);

}  // namespace tcsolve
