// The small dense solvers of DenseBlockOps (DenseBlockOps::small()) on backend-resident small
// matrices: the projected symmetric eigenproblem, block Gram-Schmidt's Pythagorean Cholesky-QR
// factor, scaled Cholesky factors and solves. Small matrices (p × q, p, q ≤ a few hundred) are
// ordinary blocks from DenseBlockOps::allocate(p, q) (ld = p), read and written in stream order.
// CPU (small_dense.cpp): Eigen on host memory. CUDA (small_dense.cu): one-block kernels up to
// 64 × 64, cuSOLVER above (the libraries' kernels load on first use, bench/first_use).
// Distributed: every rank solves the same replicated problem (no communication).
#pragma once
#include <cstdint>

#include "core/multivector.hpp"

namespace tcsolve {

// BCGS-PIP's thresholds (pip_factor on every backend, BlockLanczos::chol_pip): S = Gyy − CᵀC is
// trusted when no diagonal entry lost more than 8 digits to cancellation
// (S_ii > kPipCancel·Gyy_ii), its scaled Cholesky factor when every pivot² ≥ kPipMinPivot2.
constexpr double kPipCancel = 1e-8;
constexpr double kPipMinPivot2 = 1e-12;

class SmallDense {
 public:
  virtual ~SmallDense() = default;
  // Sizes the workspaces of the small dense solvers (eigh_small, pip_factor, spd_factor) for
  // matrices up to max_dim × max_dim; call once per solve before the loop (they grow otherwise,
  // with a stream synchronization).
  virtual void reserve_small(std::int64_t max_dim) = 0;
  // Symmetric eigendecomposition of the small backend matrix A (m × m; its lower triangle is
  // used): A ← orthonormal eigenvectors, w (backend m × 1) ← eigenvalues ascending.
  // CUDA: cuSOLVER syevd on the device. CPU: Eigen::SelfAdjointEigenSolver.
  virtual void eigh_small(MvView<double> a, MvView<double> w) = 0;
  // One step of block classical Gram-Schmidt with Pythagorean Cholesky-QR (BCGS-PIP; Carson,
  // Lund & Rozložník 2021) against an orthonormal block L (n × l), all in backend space. Input
  // G = [L Y]ᵀ·Y ((l + w) × w, from gram_into) with C = G(0:l, :), Gyy = G(l:, :). Output M
  // ((l + w) × w) such that Y' = [L Y]·M:
  //   normal:   S = Gyy − CᵀC (= ‖(I − LLᵀ)Y‖ Gram, by Pythagoras), D = diag(S)^(-1/2),
  //             D·S·D = LcLcᵀ (Cholesky), T = D·Lc⁻ᵀ (so Y'ᵀY' = I), M = [−C·T; T];
  //   fallback: M = [−C; I] (projection only) when S lost more than 8 digits of a diagonal entry
  //             to cancellation, is not positive definite, or has a scaled pivot² < 1e-12
  //             (kPipCancel, kPipMinPivot2).
  // status (backend 2 × 1): [0] = 0 normal / 1 fallback, [1] = min scaled pivot² (0 on failure).
  virtual void pip_factor(MvView<const double> g, std::int64_t l, MvView<double> m,
                          MvView<double> status) = 0;
  // Diagonally scaled Cholesky of a small symmetric G (r × r, backend): F (r × (r + 1), any ld)
  // gets the lower factor Lc of D·sym(G)·D = Lc·Lcᵀ in columns 0:r and D = diag(G)^(-1/2) in
  // column r.
  // status (backend 1 × 1): 0 fine, 1 positive definite but min pivot² < piv_tol (close to
  // rank deficient), 2 not positive definite (or a diagonal entry ≤ 0 / not finite).
  virtual void spd_factor(MvView<const double> g, MvView<double> f, MvView<double> status,
                          double piv_tol) = 0;
  // out (r × c) = sign·G⁻¹·B with F from spd_factor (G⁻¹ = D·(Lc·Lcᵀ)⁻¹·D); out = 0 when
  // status == 2 (no factor: the caller's updates become no-ops until it reacts; status 1 still
  // solves with the valid, ill-conditioned factor). out may alias B.
  virtual void spd_solve(MvView<const double> f, MvView<const double> b, double sign,
                         MvView<const double> status, MvView<double> out) = 0;
};

}  // namespace tcsolve
