// Per-column kernels of pseudo-block MINRES (solvers/krylov/minres.cpp has the recurrence): the
// dot pass, the fused update pass and the per-column scalar steps (Lanczos coefficients, the
// Givens rotation, the convergence tests), with the CPU reference (minres_kernels.cpp) and the
// CUDA implementation (minres_kernels.cu, launched on the dense ops' stream) behind one
// interface. Every per-column scalar lives in S, a small block of the dense ops' space
// (kFields × s, column j = right-hand side j's scalars): nothing crosses to the host but the rows
// the solver downloads asynchronously.
//
// The scalar steps below are written once, for host and device (TCSOLVE_HOST_DEVICE): the CPU
// kernels call them in a loop over the columns, the CUDA kernels one thread a column.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>

#include "core/multivector.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/random.hpp"  // TCSOLVE_HOST_DEVICE

namespace tcsolve::mr {

// Rows of S. "k" is the iteration that wrote them (solvers/krylov/minres.cpp numbers the
// Lanczos vectors z_k, u_k = M·z_k, v_k = z_k/β_k).
enum Field : int {
  kEst,       // residual estimate the host reads: φ̄_k (no preconditioner) or ‖r‖₂ of R
  kState,     // ColumnState
  kWhy,       // LeaveReason
  kTarget,    // the estimate a column must reach (set by the host per cycle)
  kBeta,      // β_k
  kBetaPrev,  // β_{k−1} (0 at k = 1)
  kAlpha,     // α_k
  kCs,        // Givens rotation of the last step (Paige & Saunders' cs, sn), δ̄, ε, φ̄
  kSn,
  kDbar,
  kEps,
  kPhibar,
  kWv,  // the pending direction update w = wv·z − we·w_{−2} − wd·w_{−1},  x += φ·w
  kWe,
  kWd,
  kPhi,
  kRs,  // the pending residual update r = rs·r + ru·u (preconditioned)
  kRu,
  kRc,  // the pending Lanczos update z_{k+1} = rc·M⁻¹·q − a·z_k − b·z_{k−1}
  kA,
  kB,
  kT1,  // the dot pass: z_kᵀq, z_kᵀ(d∘y), qᵀq, z_kᵀz_k
  kT2,
  kT3,
  kT4,
  kNrm,  // the update pass: β_{k+1}² = u_{k+1}ᵀz_{k+1}, and ‖r‖² of R
  kRr,
  kAnormT,  // max over k of ‖row k of T̲_k‖ (a lower bound of the preconditioned operator's norm)
  kAnormA,  // max over k of ‖A·z_k‖/‖z_k‖ (a lower bound of ‖A‖₂)
  kLs,      // the last ‖A·r‖/(‖A‖·‖r‖) estimate (preconditioned norms)
  kFields
};

enum ColumnState : int {
  kActive = 0,     // iterating
  kFinishing = 1,  // left: the next update pass makes x's last update (and R's), nothing else
  kDone = 2,       // x (and R) final for this cycle; every kernel skips the column
};

enum LeaveReason : int {
  kStillActive = 0,
  kTargetReached = 1,  // the estimate passed kTarget (or the Krylov space became invariant)
  kLeastSquares = 2,   // ‖A·r‖/(‖A‖·‖r‖) below ls_tol: a least-squares solution (A singular)
  kSingularT = 3,      // γ_k = 0: T̲_k singular with β_{k+1} = 0 (no further progress possible)
  kNonFinite = 4,      // α, β or γ not finite (A or M produced Inf/NaN)
};

struct ScalarParams {
  bool residual_block = false;  // the 2-norm residual is carried in R: kEst and the test use ‖r‖
  double ls_tol = 0.0;          // least-squares exit: ‖A·r‖/(‖A‖·‖r‖) ≤ ls_tol
};

enum class DotStep { start, coefficients };

// The blocks of the update pass (n × na each; empty views where unused). Without preconditioner
// or with Jacobi the Lanczos vectors are kept as z (u = d∘z); with another preconditioner as both
// u (updated here) and z (= M⁻¹·u, applied by the solver after the pass).
struct UpdateBlocks {
  MvView<const double> q;     // A·z_k
  MvView<const double> zc;    // z_k
  MvView<double> zp;          // z_{k−1}; none/Jacobi: overwritten with z_{k+1}
  MvView<const double> uc;    // u_k (another preconditioner only)
  MvView<double> up;          // u_{k−1}, overwritten with u_{k+1} (another preconditioner only)
  MvView<double> wp;          // w_{k−3}, overwritten with w_{k−1}
  MvView<const double> w;     // w_{k−2}
  MvView<double> x;           // x_{k−2} → x_{k−1}
  MvView<double> r;           // r_{k−2} → r_{k−1} (preconditioned only)
  const double* d = nullptr;  // Jacobi: diag(M) and its inverse (n each, backend space)
  const double* dinv = nullptr;
};

class MinresKernels {
 public:
  virtual ~MinresKernels() = default;
  // The dot pass over the na = s.cols columns: T1 = z_kᵀq, T2 = z_kᵀ(d∘y) (y empty: 0; d null: 1),
  // T3 = qᵀq, T4 = z_kᵀz_k; reads zc, q (and y) once. Then the scalar step: `start` on every
  // column (T1 = β_1², T3 = ‖r_0‖²), `coefficients` on the active ones (others are skipped).
  virtual void dots(MvView<const double> zc, MvView<const double> q, MvView<const double> y, const double* d,
                    MvView<double> s, DotStep step, const ScalarParams& p) = 0;
  // The fused update pass (minres.cpp: "the update pass") for the active and finishing columns:
  // kNrm = β_{k+1}² (none/Jacobi) and kRr = ‖r‖² (with R).
  virtual void update(const UpdateBlocks& b, MvView<double> s) = 0;
  // The rotation step of every column (beta2: β_{k+1}² per column, backend na × 1, from the
  // solver's u·z product with another preconditioner; empty: kNrm).
  virtual void rotate(MvView<double> s, MvView<const double> beta2, const ScalarParams& p) = 0;
  // Every active column becomes finishing (the cycle's end: the next update pass completes x).
  virtual void finish_all(MvView<double> s) = 0;
};

// The kernels of ops' backend (CUDA: on ops.stream(), with reduction workspace for max_cols
// columns of n rows allocated here; NotCompiled in a CPU-only build).
std::unique_ptr<MinresKernels> make_minres_kernels(DenseBlockOps& ops, std::int64_t n, std::int64_t max_cols);
std::unique_ptr<MinresKernels> make_cpu_minres_kernels();
std::unique_ptr<MinresKernels> make_cuda_minres_kernels(void* stream, std::int64_t n, std::int64_t max_cols);

// ==== The per-column scalar steps (c = S's column of one right-hand side) ======================

// After the dot pass on z_1 = M⁻¹·r_0 and q = u_1 = r_0: β_1 = √(u_1ᵀz_1), φ̄_0 = β_1, the
// rotation (cs, sn) = (−1, 0), nothing pending (Paige & Saunders' initial values).
TCSOLVE_HOST_DEVICE inline void step_start(double* c, const ScalarParams& p) {
  const double beta = std::sqrt(c[kT1] > 0.0 ? c[kT1] : 0.0);
  const double r0 = std::sqrt(c[kT3] > 0.0 ? c[kT3] : 0.0);
  for (int f = kBeta; f < kFields; ++f) c[f] = 0.0;
  c[kBeta] = beta;
  c[kCs] = -1.0;
  c[kPhibar] = beta;
  c[kRs] = 1.0;
  c[kEst] = p.residual_block ? r0 : beta;
  c[kWhy] = kStillActive;
  c[kState] = kActive;
  if (!std::isfinite(beta))
    c[kState] = kDone, c[kWhy] = kNonFinite;
  else if (beta == 0.0)
    c[kState] = kDone, c[kWhy] = kTargetReached;
}

// After the dot pass of iteration k (active columns): α_k = v_kᵀ(A·v_k − β_k·M·v_{k−1})
// = T1/β_k² − T2/β_{k−1} (Paige's modified Lanczos, from the dot products of the unnormalized
// z_k), and the Lanczos update's coefficients u_{k+1} = A·v_k − α_k·M·v_k − β_k·M·v_{k−1}:
// z_{k+1} = M⁻¹·q/β_k − (α_k/β_k)·z_k − (β_k/β_{k−1})·z_{k−1}.
TCSOLVE_HOST_DEVICE inline void step_coefficients(double* c) {
  if (c[kState] != kActive) return;
  const double beta = c[kBeta], bprev = c[kBetaPrev];
  const double alpha = c[kT1] / (beta * beta) - (bprev > 0.0 ? c[kT2] / bprev : 0.0);
  c[kAlpha] = alpha;
  c[kRc] = 1.0 / beta;
  c[kA] = alpha / beta;
  c[kB] = bprev > 0.0 ? beta / bprev : 0.0;
  if (c[kT4] > 0.0) {
    const double ra = std::sqrt(c[kT3] / c[kT4]);
    if (ra > c[kAnormA]) c[kAnormA] = ra;
  }
  if (!std::isfinite(alpha)) c[kState] = kFinishing, c[kWhy] = kNonFinite;
}

// The column leaves at x_{k−1} (and r_{k−1}): the pending update of step k is dropped, so the
// flush pass that follows changes nothing.
TCSOLVE_HOST_DEVICE inline void leave_at_previous(double* c, int why) {
  c[kWv] = c[kWe] = c[kWd] = c[kPhi] = c[kRu] = 0.0;
  c[kRs] = 1.0;
  c[kState] = kFinishing;
  c[kWhy] = why;
}

// After the update pass of iteration k: β_{k+1}, then step k of the QR factorization of T̲_k by
// Givens rotations (Paige & Saunders 1975, as in SOL's minres):
//   δ_k = cs·δ̄_k + sn·α_k,  γ̄_k = sn·δ̄_k − cs·α_k,  ε_{k+1} = sn·β_{k+1},  δ̄_{k+1} = −cs·β_{k+1},
//   γ_k = ‖(γ̄_k, β_{k+1})‖,  cs = γ̄_k/γ_k,  sn = β_{k+1}/γ_k,  φ_k = cs·φ̄_{k−1},  φ̄_k = sn·φ̄_{k−1};
// the pending updates of the next pass: w_k = (v_k − ε_k·w_{k−2} − δ_k·w_{k−1})/γ_k, x += φ_k·w_k,
// and r_k = sn²·r_{k−1} − φ̄_k·cs·u_{k+1}/β_{k+1} (the residual b − A·x_k; Choi 2006, eq. 3.20).
// Tests: the estimate against kTarget (φ̄_k; with R, ‖r_{k−1}‖ — x_{k−1} is already in place, so
// the column is done at once), and the least-squares exit ‖A·r_{k−1}‖/(‖T̲‖·‖r_{k−1}‖) =
// ‖(γ̄_k, δ̄_{k+1})‖/‖T̲‖ ≤ ls_tol (x stays x_{k−1}). A finishing column (its last update made)
// becomes done.
TCSOLVE_HOST_DEVICE inline void step_rotate(double* c, double beta2, const ScalarParams& p) {
  if (c[kState] == kDone) return;
  const double rnorm = std::sqrt(c[kRr] > 0.0 ? c[kRr] : 0.0);
  if (c[kState] == kFinishing) {
    c[kState] = kDone;
    if (p.residual_block) c[kEst] = rnorm;
    return;
  }
  const double alpha = c[kAlpha], beta = c[kBeta], cs = c[kCs], sn = c[kSn], dbar = c[kDbar];
  const double bnext = std::sqrt(beta2 > 0.0 ? beta2 : 0.0);
  const double oldeps = c[kEps];
  const double delta = cs * dbar + sn * alpha;
  const double gbar = sn * dbar - cs * alpha;
  c[kEps] = sn * bnext;
  c[kDbar] = -cs * bnext;
  const double root = std::hypot(gbar, c[kDbar]);
  const double gamma = std::hypot(gbar, bnext);
  const double trow = std::sqrt(alpha * alpha + beta * beta + bnext * bnext);
  if (trow > c[kAnormT]) c[kAnormT] = trow;
  const double ls = c[kAnormT] > 0.0 ? root / c[kAnormT] : 0.0;
  c[kLs] = ls;
  if (p.residual_block) c[kEst] = rnorm;  // (else φ̄ below)
  if (!(gamma > 0.0) || !std::isfinite(gamma) || !std::isfinite(bnext)) {
    // Nothing more to gain (T̲ singular and the space invariant) or nothing sound: x stays x_{k−1}.
    leave_at_previous(c, std::isfinite(gamma) && std::isfinite(bnext) ? kSingularT : kNonFinite);
    return;
  }
  const double csn = gbar / gamma, snn = bnext / gamma;
  const double phibar = c[kPhibar];
  c[kPhi] = csn * phibar;
  c[kPhibar] = snn * phibar;
  c[kWv] = 1.0 / (beta * gamma);
  c[kWe] = oldeps / gamma;
  c[kWd] = delta / gamma;
  c[kRs] = snn * snn;
  c[kRu] = bnext > 0.0 ? -c[kPhibar] * csn / bnext : 0.0;
  c[kCs] = csn, c[kSn] = snn;
  c[kBetaPrev] = beta, c[kBeta] = bnext;
  if (!p.residual_block) c[kEst] = c[kPhibar];
  if (p.residual_block && rnorm <= c[kTarget]) {
    c[kState] = kDone, c[kWhy] = kTargetReached;  // x_{k−1} is in place
  } else if (c[kPhibar] <= (p.residual_block ? 0.0 : c[kTarget])) {
    c[kState] = kFinishing, c[kWhy] = kTargetReached;  // (with R: the space became invariant)
  } else if (ls <= p.ls_tol) {
    // x_{k−1} is a least-squares solution; step k's update would divide by γ_k ≥ root, as small.
    leave_at_previous(c, kLeastSquares);
    if (!p.residual_block) c[kEst] = phibar;
  }
}

TCSOLVE_HOST_DEVICE inline void step_finish(double* c) {
  if (c[kState] == kActive) c[kState] = kFinishing;
}

}  // namespace tcsolve::mr
