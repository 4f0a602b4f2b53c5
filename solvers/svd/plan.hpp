// The svds planner (internal to solvers/svd): the block GKL iteration or the dense SVD, by
// predicted seconds, and why (SvdResult::method_reason).
//
// Candidates:
//   block GKL   where min(m, n) holds a basis of k + 2 blocks (gkl_shape). Priced at two thick
//               restarts (the measured count on the shared general matrices and the count data,
//               k ≤ 50, is 1–3): applied columns 2·L + 2·(L − keep) and a verification of 2k, at
//               t_col each; orthogonalization 8·(m + n)·L² flops a restart (two Gram–GEMM passes
//               per side) and the small SVDs of B, 20·L³ flops a restart.
//   dense       where m·n ≤ 2^24 and min(m, n) ≤ 1000 (svds.cpp's fallback limits): forming the
//               smaller side's product with the identity (p applied columns), Eigen's BDCSVD of
//               the q × p matrix with thin vectors (4·q·p² + 22·p³ flops, one thread) and the same
//               verification.
//   t_col is measured: one apply of A and one of Aᵀ on b random columns; flops at five times the
//   host engines' supernodal rate per flop (one thread; factor/engine_rates.hpp, as eigs' dense).
// Not priced, for accuracy: eigensolvers on AᵀA or AAᵀ (σ_j² next to u·σ₁² resolves σ_j only to
// u·σ₁²/σ_j) and on [0 A; Aᵀ 0] (each value as ±σ, the wanted ones interior).
#pragma once
#include <cstdint>
#include <string>

#include "solvers/svd/bidiag.hpp"

namespace tcsolve::detail {

struct SvdPlanInputs {
  std::int64_t m = 0, n = 0, k = 0;
  GklShape shape;
  bool fits = false;        // gkl_shape's: the Krylov basis fits min(m, n)
  double t_col = 0;         // seconds per applied column (A and Aᵀ averaged); 0: not measured
  double s_per_flop = 0;    // host dense seconds per flop
};

struct SvdPlan {
  bool dense = false;
  double gkl_s = -1, dense_s = -1;  // predicted seconds (-1: not priced)
  std::string reason;
};

// The dense SVD as an answer the planner may choose, or after an unconverged iteration: up to
// 2^24 entries (128 MiB) and a smaller side of 1000 (BDCSVD: O(m·n·min(m, n)), a few seconds at
// most on 2 cores).
bool dense_affordable(std::int64_t m, std::int64_t n);
// True where both candidates apply (then t_col is worth measuring).
bool svd_both_apply(std::int64_t m, std::int64_t n, bool fits);
double price_gkl(const SvdPlanInputs& in);
double price_dense(const SvdPlanInputs& in);
SvdPlan plan_svds(const SvdPlanInputs& in);

}  // namespace tcsolve::detail
