// B-orthonormalization of a block W (n × p) in place, with a rank-revealing fallback.
//
//   pass 1: G = Wᵀ·B·W (p × p, host), D = diag(G)^(-1/2), Gs = D·G·D (unit diagonal).
//           Cholesky-QR when Gs = LLᵀ exists with min(L_ii)² ≥ 1e-10 (cond(W) ≲ 1e5, the range
//           where one more pass restores orthogonality to O(eps)); otherwise SVQB (Stathopoulos
//           & Wu 2002): Gs = V·Λ·Vᵀ, keep λ_i > drop_tol·λ_max, T = D·V·Λ^(-1/2), which drops
//           the directions W does not span (rank r < p).
//   pass 2: the same on W·T (now well conditioned; Cholesky-QR unless it fails again).
// W ← W·T (first r columns), BW ← BW·T likewise (BW is updated by the same combination, not
// recomputed). T (p × r, host) is returned so that callers can map coefficients
// (W_in = Q·M with M = Tᵀ·G_in when nothing was dropped).
// Cost: 2 Gram products (2np² flops each), 2 (or 4 with B) in-place block products.
#pragma once
#include <cstdint>
#include <vector>

#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

struct OrthoOutcome {
  std::int64_t rank = 0;                  // columns kept
  OrthoBranch branch = OrthoBranch::none; // the worst branch taken in the two passes
};

// Host workspace reused across calls (sized on first use; no allocation once warm).
struct OrthoWorkspace {
  std::vector<double> g, g_in, t, t2, tmp;
};

// bw.cols == 0 means B = I (the Gram uses W itself). drop_tol: relative eigenvalue of the
// scaled Gram below which a direction is dropped (1e-14 keeps directions with relative singular
// value above 1e-7; a Gram matrix cannot resolve smaller ones: its rounding noise is ~1e-16·‖G‖,
// i.e. singular values near 1e-8 look alike whether real or not). passes = 1 skips pass 2
// (enough when only the span matters). On return ws.t holds T (p × rank, ld p) and ws.g_in
// holds G_in (p × p).
OrthoOutcome orthonormalize(DenseBlockOps& ops, MvView<double> w, MvView<double> bw,
                            OrthoWorkspace& ws, double drop_tol = 1e-14, int passes = 2);

// Small host helpers on column-major matrices.
namespace small {
// Cholesky of symmetric positive definite g (n × n): upper R with g = RᵀR. False if not SPD.
bool cholesky_upper(const double* g, std::int64_t n, double* r);
// Symmetric eigenproblem: a (n × n) → ascending values w and orthonormal vectors v (n × n).
void eigh(const double* a, std::int64_t n, double* w, double* v);
// Generalized symmetric-definite a·v = λ·b·v; false if b is not positive definite.
bool eigh_generalized(const double* a, const double* b, std::int64_t n, double* w, double* v);
}  // namespace small

}  // namespace tcsolve
