// Breakdown-free block conjugate gradients (Ji & Li 2017) for A·X = B with s right-hand sides,
// A symmetric positive definite, optional Jacobi (or any SPD) preconditioner M.
//
//   R = B − A·X, P = orth(M·R)                       orth: rank-revealing SVQB (drops directions
//   loop:  Q = A·P                                    the block no longer spans)
//          α = (PᵀQ)⁻¹·PᵀR,  X += P·α,  R −= Q·α
//          converged columns (‖r_j‖ ≤ tol·‖b_j‖) leave the block (X, R compacted)
//          β = −(PᵀQ)⁻¹·QᵀZ with Z = M·R,  P = Z + P·β
// P is re-orthonormalized (P = orth(P), rank revealing, then Q = A·P again) only when the
// diagonally scaled PᵀQ is not safely positive definite (Cholesky fails or a pivot² < 1e-10):
// that is when the block has lost rank, and the only case where α and β would be inaccurate.
// If PᵀQ of the orthonormal block still fails: breakdown (A not positive definite).
// At the end the true residuals ‖b_j − A·x_j‖/‖b_j‖ are recomputed; columns whose true residual
// misses the tolerance restart from their current x (at most max_cycles cycles).
// A constant Jacobi diagonal is dropped (CG is invariant under M = c·I).
//
// Workspace: 5·n·s doubles (X, [Q | R], P, Z), allocated once in the constructor.
// Per iteration, with r ≤ s columns in the block (each term = one pass over an n × r block):
//   Q = A·P;  [PᵀQ PᵀR] = Pᵀ·[Q R] (one GEMM, 3 passes);  X += P·α, R −= Q·α (6 passes);
//   no preconditioner: [QᵀR; RᵀR] = [Q R]ᵀ·R (one GEMM, 3 passes), Z = R (copy, 2 passes);
//   Jacobi: Z = D·R (2), QᵀZ (2), ‖r_j‖² (1);  P = Z + P·β (3 passes).
// 17–18 passes and 2 host round trips (plus the operator apply's) per iteration.
//
// Contract: A (and M) symmetric positive definite operators in ops.space(); the right-hand
// sides are n × s. status == converged means every column's TRUE residual ‖b_j − A·x_j‖,
// recomputed at the end, is at most tol·‖b_j‖ (b_j = 0 gives x_j = 0); not_converged returns
// the current iterates; breakdown means A (or M) is not positive definite -- statuses, not
// exceptions. Shape errors and operators in the wrong space throw InvalidArgument. The solver
// does not check symmetry or definiteness up front (the command and the Python module do).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

struct CgOptions {
  double tol = 1e-8;                  // relative: ‖b_j − A·x_j‖₂ ≤ tol·‖b_j‖₂
  std::int64_t max_iterations = 5000;
  std::vector<double> jacobi_diagonal;  // diag(A) on the host; empty = no Jacobi
  const LinearOperator<double>* preconditioner = nullptr;  // takes precedence; in ops.space()
  double rank_tol = 1e-14;            // SVQB: drop directions with λ(Gs) < rank_tol·λmax (σ < 1e-7)
  bool keep_history = true;
  // Called after each iteration with its record (progress display); may be empty.
  std::function<void(const IterationRecord&)> on_iteration;
  int max_cycles = 3;                 // restarts from the true residual
};

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
// on the host. Throws InvalidArgument for shape errors.
SolveResult block_cg(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb,
                     std::int64_t s, DenseBlockOps& ops, const CgOptions& opt);

}  // namespace tcsolve
