// Chebyshev subspace iteration, Rayleigh-Ritz on the active block and the residual norms of its
// Ritz pairs (solvers/chebyshev.hpp).
#include "solvers/chebyshev/subspace_iteration.hpp"

namespace tcsolve::chebyshev {

// Q = the active columns of basis[cur] (n × w, orthonormal, ⊥ L). AQ = A·Q (one apply, into
// scratch), H = s·QᵀAQ (w × w, reads 2·n·w words), H = YΘYᵀ on the device (eigh_small: θ
// ascending in Â), X = Q·Y into basis[1 − cur] and A·X = AQ·Y over Q (2 × 2·n·w); cur flips, so
// that X ends in basis[cur] and A·X in basis[1 − cur]. AQ is applied explicitly every
// iteration, so A·X is the product of the current vectors up to the rounding of a GEMM.
void SubspaceIteration::rayleigh_ritz(std::int64_t w) {
  const std::int64_t nl = s_.nl;
  auto q = ws_.basis[s_.cur].columns(nl, w);
  auto aq = ws_.scratch.columns(nl, w);
  ap_.apply(q, aq);
  MvView<double> h{ws_.small.data(), w, w, m_, ops_.space()};
  ops_.gram_into(sgn_, q, aq, 0.0, h);
  ops_.small().eigh_small(h, ws_.theta.columns(0, 1));
  auto x = ws_.basis[1 - s_.cur].columns(nl, w);
  ops_.gemm_into(1.0, q, h, 0.0, x);
  ops_.gemm_into(1.0, aq, h, 0.0, q);  // A·X over Q (no longer needed)
  s_.cur = 1 - s_.cur;
}

// rᵢ = ‖s·A·Xᵢ − θᵢ·Xᵢ‖ (= ‖A·Xᵢ − λᵢ·Xᵢ‖) for the w active columns, X in basis[cur], A·X in
// basis[1 − cur], θ on the device (reads 2·n·w words); θ and r to the host (state().theta, rn):
// the outer iteration's one fetch (2m doubles).
void SubspaceIteration::residuals(std::int64_t w) {
  const std::int64_t nl = s_.nl;
  MvView<const double> th{ws_.theta.data(), w, 1, m_, ops_.space()};
  MvView<double> rv{ws_.resid.data(), w, 1, m_, ops_.space()};
  ops_.chebyshev().residual_norms_into(ws_.basis[1 - s_.cur].columns(nl, w), ws_.basis[s_.cur].columns(nl, w),
                           th, sgn_, rv);
  ops_.queue().download_deferred(th, s_.theta.data(), m_);
  ops_.queue().download_deferred(rv, s_.rn.data(), m_);
  ops_.queue().fetch();
}

}  // namespace tcsolve::chebyshev
