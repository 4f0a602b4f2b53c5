// Partial SVD: the k largest singular triplets (σ_j, u_j, v_j) of a real m × n operator A, square
// or rectangular, A·v_j = σ_j·u_j and Aᵀ·u_j = σ_j·v_j, on the CPU or the GPU.
//
//   auto r = svds(csr, Backend::cuda, {.k = 10, .tol = 1e-10});      // builds A and Aᵀ once
//   auto r = svds(a_op, at_op, ops, opt);                              // any operator pair
//
// Method: thick-restart block Golub–Kahan–Lanczos bidiagonalization with full
// reorthogonalization (Golub & Kahan 1965; the restart of Baglama & Reichel's irlba, 2005/2006),
// solvers/svd/bidiag.hpp. Why not an eigensolver on AᵀA or AAᵀ: squaring puts σ_j² next to the
// rounding u·σ₁², so σ_j is resolved only to u·σ₁²/σ_j (all digits lost below √u·σ₁) and the
// gaps shrink relative to the spectrum; on the augmented [0 A; Aᵀ 0] each singular value comes as
// ±σ and the wanted ones are interior to no advantage. GKL works on A itself: one A·X and one
// Aᵀ·Y per block step (the same two products AᵀA would cost), singular values to u·σ₁ absolute.
// Aᵀ is built once as its own CSR (core/csr.hpp transpose) and runs on the same SpMM core; no
// per-iteration transpose and no atomics.
//
// Contract:
//   - A and Aᵀ are LinearOperators in ops.space() with a.rows() == at.cols() == m and
//     a.cols() == at.rows() == n; `at` must be the transpose of `a` (not checked: a wrong pair
//     fails the residual tests and is reported not converged).
//   - Every returned triplet is verified on its true residuals, computed with A and Aᵀ after
//     the iteration:  ‖A·v_j − σ_j·u_j‖₂ ≤ tol·σ₁  and  ‖Aᵀ·u_j − σ_j·v_j‖₂ ≤ tol·σ₁, σ₁ the
//     largest computed singular value (the estimate of ‖A‖₂). status == converged only when all
//     k pass; otherwise not_converged with the best approximations and their measured residuals.
//   - Values are descending; U (m × k) and V (n × k) have orthonormal columns (to rounding).
//     A multiple singular value among the k largest is returned with all its copies as long as
//     its multiplicity is at most the block size (default min(k, 16)): in exact arithmetic a
//     block Krylov space holds at most `block` independent directions of one singular subspace.
//     (For the largest values rounding brings further copies in at every restart and they grow
//     fastest, so a narrower block usually finds them too: tests/solvers/test_svd.cpp's 5-fold
//     trap passed with block = 1 as well; the guarantee is the block's.)
//   - Bad arguments (k < 1, k > min(m, n), tol ≤ 0, shapes) throw InvalidArgument.
//   - The Csr form, not centered, certifies the count where it is cheap or asked (certify): no
//     singular value above σ_k is missing, copies beyond the block included, by the inertia of
//     [0 A; Aᵀ 0] − τI (solvers/svd/certificate.hpp). A set with values known missing is
//     not_converged, whatever its residuals.
//   - Where no count is made (the centered operator, the operator form, a count too costly or
//     certify = never) and a found value has as many copies as the block, a converged set is
//     re-checked (SvdOptions::recheck): a short block GKL from fresh random vectors on
//     A·(I − V·Vᵀ) must find nothing above σ_k; what it finds makes the set not_converged after
//     the same wider-block re-run (solvers/svd/recheck.hpp).
//   - Five restarts in a row whose estimates pass while the true residuals fail (the relations
//     A·V = U·B broke; restarting cannot repair them) end the iteration with status breakdown.
//     A matrix the dense path affords (m·n ≤ 2^24, min(m, n) ≤ 1000) is then solved densely, as
//     it is after running out of the default restart limit (SvdResult::method says so).
//   - Small problems (min(m, n) too small for a Krylov basis of k + 2 blocks), and those where
//     the planner predicts the dense SVD cheaper (solvers/svd/plan.hpp; SvdOptions::method), are
//     solved densely on the host (A formed by applying it to identity columns of the smaller
//     side), and verified the same way. method_reason says why.
//   - Checkpoints and resume: after a restart, every checkpoint_every seconds, the right basis
//     V(:, 0:keep + b) (the kept Ritz vectors and the next block) goes to on_checkpoint; given
//     back as `start`, the iteration continues that thick restart (solvers/svd/bidiag.hpp,
//     BlockGkl::resume_restart), so a resumed run needs the restarts the stopped one had left.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/operator.hpp"
#include "core/types.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

// The count certificate of the k largest values (solvers/svd/certificate.hpp; the Csr form, not
// centered): automatic where it is cheap, always (--certify: an error where it cannot apply), never.
enum class SvdCertify { automatic, always, never };

// The method: automatic (priced, solvers/svd/plan.hpp: the dense SVD where it is predicted
// cheaper and affordable, m·n ≤ 2^24 and min(m, n) ≤ 1000; else the block GKL), or as asked.
enum class SvdMethod { automatic, gkl, dense };

struct SvdOptions {
  std::int64_t k = 6;
  SvdMethod method = SvdMethod::automatic;
  // Residual test of each triplet, relative to σ₁ (see the contract above).
  double tol = 1e-8;
  // Block size b (0: min(k, 16)) and Krylov basis L (columns of U before a restart, 0: the
  // smallest multiple of b ≥ max(3k, k + 6b, 48), shrunk to fit min(m, n)). V holds L + b.
  std::int64_t block = 0;
  std::int64_t basis = 0;
  std::int64_t max_restarts = 1000;
  std::uint64_t seed = 1;
  // Subtract the column means: the operator becomes A − 1·μᵀ (μ = Aᵀ·1/m), applied implicitly
  // (solvers/svd/centered.hpp). Used by the Csr entry point only.
  bool center = false;
  // Divide each column by its standard deviation (about its mean, ddof 1; constant columns by 1):
  // the operator becomes (A − 1·μᵀ)·diag(1/s) with center, A·diag(1/s) without, applied as a
  // scaled copy of A (one more copy of its values). Used by the Csr entry point only.
  bool scale = false;
  SvdCertify certify = SvdCertify::automatic;
  // Where no count certifies a converged set (the centered operator, a count too costly, the
  // operator form, certify = never): the multiplicity re-check (solvers/svd/recheck.hpp), run
  // where a found value has as many copies as the block (else the block size answers), when it
  // costs at most max(2 × the solve's applied columns, 1024). false: none (verification "none").
  bool recheck = true;
  // Start (host, n × p column-major; empty: random from the seed). A block of p = kept + b
  // columns (b < p ≤ L) that holds a restart's state, as on_checkpoint hands it over, continues
  // that thick restart; any other block starts the Krylov basis from its first min(p, b)
  // columns (random ones after them). SvdResult::start says which.
  std::vector<double> start;
  // Checkpoints (0 / empty: none): after a restart, once checkpoint_every seconds have passed
  // since the start or the last checkpoint, V(:, 0:kept + b) (n × (kept + b), host) goes to
  // on_checkpoint (SolverCheckpoint: iteration = restarts done, locked = 0).
  double checkpoint_every = 0.0;
  CheckpointFn on_checkpoint;
  // Called after every restart with its record (estimates, converged count).
  std::function<void(const IterationRecord&)> on_iteration;
};

// Wall-clock seconds by phase.
struct SvdPhases {
  double setup_s = 0;    // transpose, operators, means (Csr entry point), workspace
  double iterate_s = 0;  // the restarts (or the dense solve), without the checks below
  double verify_s = 0;   // the explicit residuals (every check the iteration made)
};

struct SvdResult {
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;
  std::string method;                  // "block GKL (b = 6, L = 24)" or "dense (Eigen BDCSVD)"
  std::string method_reason;           // why that method (the planner's prices, or "asked for")
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<double> values;          // σ_1 ≥ … ≥ σ_k
  std::vector<double> u;               // m × k, column-major
  std::vector<double> v;               // n × k, column-major (V, not Vᵀ)
  std::vector<double> residual_av;     // ‖A·v_j − σ_j·u_j‖₂ (measured after the iteration)
  std::vector<double> residual_atu;    // ‖Aᵀ·u_j − σ_j·v_j‖₂
  double a_norm = 0;                   // σ₁ (the scale of the test)
  double tol = 0;
  std::int64_t iterations = 0;         // restarts
  std::int64_t operator_applies = 0;   // columns multiplied by A or Aᵀ
  std::vector<IterationRecord> history;
  // The Csr form: the SpMM kernels of A and Aᵀ ("A csr_segment; A^T csr_segment") and their
  // plans' reasons (--json "kernel", "kernel_reason"). Empty for the operator form.
  std::string spmm_kernel, spmm_plan;
  // The count certificate (SvdOptions::certify): yes, no (values known missing: status
  // not_converged) or not_checked, with what was counted or why nothing was.
  Certified certified = Certified::not_checked;
  std::string certificate;
  // What verified that no value is missing: "certificate" (the count), "recheck", "block" (no
  // found value has as many copies as the block: solvers/svd/recheck.hpp), "dense" (the dense
  // path computed every value) or "none" (not converged, or nothing ran: certificate says why).
  std::string verification = "none";
  // How the iteration started: "" (random), or what it made of SvdOptions::start.
  std::string start;
  SvdPhases phases;
  double seconds = 0;
  // Centered runs (SvdOptions::center): the column means μ (n) and ‖A − 1μᵀ‖_F² (the total
  // variance times m − 1); the explained variance of component j is σ_j²/(m − 1), its ratio
  // σ_j²/total_sq. Empty / 0 otherwise.
  std::vector<double> means;
  double total_sq = 0;
  // Scaled runs (SvdOptions::scale): the column scales s (n): V's rows are per scaled column, the
  // variance ratios of the scaled columns (total_sq is then of the scaled, centered matrix).
  std::vector<double> scales;
  std::vector<double> explained_variance() const;        // σ_j²/(m − 1)
  std::vector<double> explained_variance_ratio() const;  // σ_j²/‖A − 1μᵀ‖_F²
};

// The operator form (A and Aᵀ in ops.space()).
SvdResult svds(const LinearOperator<double>& a, const LinearOperator<double>& at,
               DenseBlockOps& ops, const SvdOptions& opt);

// The Csr form: Aᵀ built once, both SpMM operators on `backend` (on the dense ops' stream), the
// centered operator when opt.center, the scaled copy of A when opt.scale.
SvdResult svds(const Csr<double>& a, Backend backend, const SvdOptions& opt);
// The same, taking A's arrays: the CPU operator keeps them (no second copy of A on the host).
SvdResult svds(Csr<double>&& a, Backend backend, const SvdOptions& opt);

}  // namespace tcsolve
