// Breakdown-free block conjugate gradients (Ji & Li 2017) for A·X = B with s right-hand sides,
// A symmetric positive definite, optional Jacobi (or any SPD) preconditioner M.
//
//   R = B − A·X, P = orth(M·R)                       orth: rank-revealing SVQB (drops directions
//   loop:  Q = A·P                                    the block no longer spans)
//          α = (PᵀQ)⁻¹·PᵀR,  X += P·α,  R −= Q·α
//          converged columns (‖r_j‖ ≤ tol·‖b_j‖) leave the block (X, R compacted)
//          β = −(PᵀQ)⁻¹·QᵀZ with Z = M·R,  P = Z + P·β  (deflating: P = orth(Z + P·β))
// In exact arithmetic PᵀR = 0 after the update, so the next PᵀR = (Z + Pβ)ᵀR = ZᵀR, which the
// residual pass already computes: PᵀR is formed explicitly only at the start of a cycle and after
// a compaction or a re-orthonormalization.
//
// Device-resident iteration (every small matrix stays in the dense ops' space; DenseBlockOps'
// second half). Per iteration, without preconditioner (the Laplacian case):
//   Q = A·P                                   apply (rk columns)
//   G1 = PᵀQ                                  reads P, Q              (2 passes)
//   F = chol(D·PᵀQ·D), α = F⁻¹·ZᵀR            spd_factor/spd_solve on the device
//   R −= Q·α;  G2 = [Q R]ᵀR                   cg_residual_update: reads Q, R, writes R (3)
//   β = −F⁻¹·QᵀR                              spd_solve
//   X += P·α;  P = R + P·β                    cg_direction_update, in place: reads P, R, X,
//                                             writes P, X (5)
//   ‖r_j‖² = diag(RᵀR) → host                 fetch_async (no wait)
// = 10 passes over n × s blocks (80·n·s bytes) plus the apply, and no host synchronization: the
// host waits for iteration t − 1's norms only after queuing iteration t, so the GPU never idles
// (a column converged at t − 1 leaves the block at t + 1). With Jacobi the residual pass also
// writes Z = D·R and forms [Q R]ᵀZ and ‖r_j‖² (cg_residual_update_jacobi: reads Q, R, D, writes
// R, Z: 4 passes), and the direction pass reads Z for R: 11 passes. Any other preconditioner:
// R −= Q·α (3), Z = M·R (apply), [Q R]ᵀZ (4), ‖r_j‖² (1), then the direction pass.
// Rank (issue 47; breakdown-free block CG, Ji & Li 2017). A search block that loses rank makes
// PᵀQ singular; its factor is flagged (spd_factor: scaled pivot² < 1e-10, or not positive
// definite, when the device zeroes α and β: X, R unchanged, P = Z). Three rules keep the block
// at its rank:
//   - the cycle's first block P = orth(M·R) drops the directions R does not span (SVQB, relative
//     singular value < 1e-7 after scaling the columns): dependent right-hand sides (copies, zero
//     columns, combinations) start with rk < na columns;
//   - while rk < na the cycle is deflating: after each direction update P = orth(Z + P·β) with
//     dropping (a host Gram, synchronous), α from PᵀR formed explicitly; a flagged factor seen
//     by the host does the same (deflate), and goes on deflating while columns are dropped;
//   - the cycle runs synchronously (the host reads iteration t before queuing t + 1) once the
//     directions searched plus the next block's na exceed n (Σ rk + na > n: s ≥ n/2 on a small
//     A), since the next block then cannot have full rank and, the space exhausted, is rounding
//     noise that a queued iteration must not use. A recurrence residual falling by 10 orders in
//     one iteration marks an exhausted space: the cycle ends and the true residual decides.
// PᵀAP of an orthonormalized block still not positive definite is a breakdown whose reason says
// what was seen: a clearly negative pᵀAp (A is not positive definite), or PᵀAP singular to
// working precision; a block with no direction left says so. (X and R stay consistent whatever
// α is: R −= Q·α and X += P·α use the same α.)
// Scale: each column runs as b_j/c_j and x_j/c_j with c_j the power of two that puts ‖b_j‖/c_j
// in [0.5, 1) (exact, so the iterates are those of the unscaled block; columns of 1e200 and
// 1e-200 converge like the others, and no Gram entry overflows). A non-finite entry of B:
// InvalidArgument.
// Floor: the recurrence residual is driven to max(tol, 4u)·‖b_j‖ at most; below about
// u·‖A‖·‖x_j‖ it no longer tracks the true residual. At the end of a cycle the true residuals
// ‖b_j − A·x_j‖/‖b_j‖ are recomputed; columns whose true residual misses the tolerance restart
// from their current x (at most max_cycles cycles), and a column still above tol is reported with
// its floor u·‖A‖·‖x_j‖/‖b_j‖ (‖A‖ ≥ the Rayleigh quotients of the cycles' first blocks).
// Width: a block of s > n columns (n of the whole A) is solved in ⌈s/n⌉ chunks of at most n
// (solvers/block_cg.cpp: chunk_width says why); the workspace holds min(s, n) columns.
// A constant Jacobi diagonal is dropped (CG is invariant under M = c·I).
//
// Workspace: 5·n·w doubles (X, [Q | R], P, Z) and w × 2w small matrices (w = min(s, n)),
// allocated once in the constructor. The solver's steps: solvers/cg/block_cg_solver.hpp.
//
// Mixed precision (CgOptions::step32; issue 19): the iteration above on fp32 blocks inside fp64
// iterative refinement ("reliable updates"). Q = A·P goes through A's fp32 step and the passes
// through DenseBlockOps' fp32 blocks (every sum in fp64, the blocks stored in fp32); xa holds the
// corrections d_j. When some column's recurrence residual has fallen below max(tol/2,
// inner_reduction·‖r_j‖/‖b_j‖) relative (r_j its true residual at the last step), a refinement
// step: x_j += d_j in fp64 for every active column, R = fp32(b − A·x) computed in fp64, columns
// whose true residual passes tol leave, and the iteration goes on with the same search block (α
// then needs Pᵀ[Q R] explicitly). The first search block is orthonormalized in fp64. Nothing is
// decided on an fp32 residual: a column converges only when its fp64 true residual
// ‖b_j − A·x_j‖ passes tol·‖b_j‖.
//   Contraction: the corrections solve A rounded to fp32 (E = A − fl(A), ‖E‖ ≲ 2⁻²⁴·‖A‖), so each
//   step reduces the true residual by about inner_reduction + κ(A)·2⁻²⁴. It climbs to fp64 — the
//   fp64 block CG from the current x (a step that left a column worse undone first), its workspace
//   allocated then and the fp32 one freed — when a step does not cut an active column's true
//   residual by 10 % (or by half, twice), when the fp32 iteration breaks down (fl(A) need not be
//   positive definite when κ ≳ 2²⁴), or after max_refinements. SolveResult::precision says which
//   happened.
//   Per fp32 iteration (no preconditioner): the 10 passes above at 4 bytes an entry (40·n·s
//   bytes) and A's fp32 step (A as stored there, 4-byte values; X gathered in fp32); per
//   refinement step one fp64 apply of A and a few passes (the true residual, its rounding).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

class ChebyshevStep;  // spmm/chebyshev_step.hpp

// What a solve did (filled when CgOptions::stats is set), for the benchmark's budget check.
struct CgStats {
  std::int64_t applies = 0;           // operator applies (each on the active block)
  std::int64_t fused_iterations = 0;  // iterations through the queued device path
  std::int64_t robust_steps = 0;      // rank-revealing re-orthonormalizations of P
  double dense_budget_words = 0.0;    // 8-byte words the dense work must move (budget above)
  double apply_seconds = 0.0;         // only with keep_history / on_iteration (stream marks)
  double dense_seconds = 0.0;
};

struct CgOptions {
  double tol = 1e-8;                  // relative: ‖b_j − A·x_j‖₂ ≤ tol·‖b_j‖₂
  std::int64_t max_iterations = 5000;
  std::vector<double> jacobi_diagonal;  // diag(A) on the host; empty = no Jacobi
  // A constant diagonal is dropped (CG is invariant under M = c·I). A distributed solve, whose
  // jacobi_diagonal is a rank's share, decides that for the whole diagonal and sets this false
  // when some rank's share is constant but the whole is not.
  bool drop_constant_jacobi = true;
  const LinearOperator<double>* preconditioner = nullptr;  // takes precedence; in ops.space()
  double rank_tol = 1e-14;            // SVQB: drop directions with λ(Gs) < rank_tol·λmax (σ < 1e-7)
  bool keep_history = true;
  // Called after each iteration with its record (progress display); may be empty.
  std::function<void(const IterationRecord&)> on_iteration;
  // Checkpoints (0 / empty: none): every checkpoint_every seconds the iterate X goes to
  // on_checkpoint (the pipeline waits for its queued iteration; nothing is restarted).
  double checkpoint_every = 0.0;
  CheckpointFn on_checkpoint;
  int max_cycles = 3;                 // restarts from the true residual
  // How applies of A and M are ordered against the dense ops' stream (solvers/dense_ops.hpp).
  ApplyOrder apply_order = ApplyOrder::events;
  CgStats* stats = nullptr;           // optional output
  // Mixed precision (see above): A's step (spmm/chebyshev_step.hpp; its step32 is A·X on fp32
  // blocks) on ops.stream(). Needs ops.cg().fp32_blocks(), at most kCgFp32MaxRhs right-hand sides,
  // and no preconditioner other than Jacobi (InvalidArgument otherwise). nullptr: fp64 only.
  const ChebyshevStep* step32 = nullptr;
  double inner_reduction = 1e-3;      // each refinement's target for the relative residual
  int max_refinements = 30;
};
constexpr std::int64_t kCgFp32MaxRhs = 32;

// Reusable solver: workspace for up to max_rhs columns allocated once.
class BlockCg {
 public:
  BlockCg(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs,
          CgOptions opt);
  ~BlockCg();
  BlockCg(const BlockCg&) = delete;
  BlockCg& operator=(const BlockCg&) = delete;
  // rhs and x (n × s, s ≤ max_rhs) in ops.space(); x is used as the initial guess when
  // use_x0, else zeroed. Fills everything of result but `solutions` (left empty).
  SolveResult solve(MvView<const double> rhs, MvView<double> x, bool use_x0 = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convenience: rhs on the host (n × s, column-major, leading dimension ldb); solutions returned
// on the host. x0 (optional, host, same shape and ldb): the initial guess (else zero). Throws
// InvalidArgument for shape errors.
SolveResult block_cg(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb,
                     std::int64_t s, DenseBlockOps& ops, const CgOptions& opt,
                     const double* x0 = nullptr);

// The same solve with right-hand sides generated where the solver runs: B(i, j) =
// random_entry(seed, i, j) by ops.fill_random (identical values on every backend), so that no
// host block is built, page-faulted and copied over (128 right-hand sides of 1M rows: 1 GB).
// The solutions come back to the host (SolveResult::solutions) only when copy_solutions.
SolveResult block_cg_random(const LinearOperator<double>& a, std::uint64_t seed, std::int64_t s,
                            DenseBlockOps& ops, const CgOptions& opt, bool copy_solutions);

}  // namespace tcsolve
