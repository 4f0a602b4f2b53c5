// LOBPCG and thick-restart block Lanczos for k extreme eigenpairs of A·x = λ·x or A·x = λ·B·x
// (A symmetric, B symmetric positive definite), written once against LinearOperator<double> and
// DenseBlockOps (CPU: Eigen; CUDA: cuBLAS on one stream). Operators must live in ops.space().
//
// Convergence test (both solvers), checked on explicitly recomputed residuals before a pair is
// reported converged:  ‖A·x − λ·B·x‖₂ ≤ tol·(‖A‖·‖x‖₂ + |λ|·‖B‖·‖x‖₂).
// Norm estimates: options.a_norm / b_norm when given (> 0; e.g. ‖A‖∞ from the CSR, an upper
// bound of ‖A‖₂ for symmetric A); otherwise estimate_norm(): 12 steps of block power iteration
// on 4 random columns, which gives a LOWER bound of ‖A‖₂ (within a few % for the test
// matrices), so the test is then slightly stricter than the formula, never looser.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

// smallest / largest: algebraic ends. nearest: the k eigenvalues closest to a shift σ (through
// the driver's shift-invert, solvers/eigs.hpp). largest_magnitude: largest |λ| (what the inner
// solvers use on a shift-inverted operator for `nearest`; in the eigs driver SciPy's 'LM' of A).
// smallest_magnitude, both_ends: the eigs driver's SciPy 'SM' and 'BE' (solvers/eigs/eigs.hpp),
// made of its runs for the ends; no inner solver takes them.
enum class Which { smallest, largest, nearest, largest_magnitude, smallest_magnitude, both_ends };

struct EigenOptions {
  std::int64_t k = 1;
  Which which = Which::smallest;
  double tol = 1e-8;
  std::int64_t max_iterations = 2000;  // LOBPCG steps / Lanczos restarts
  std::uint64_t seed = 1;              // random initial block
  double a_norm = 0.0;                 // ‖A‖₂ (or an upper bound); 0 = estimate
  double b_norm = 0.0;                 // ‖B‖₂ (the test's factor of |θ|, used also without B); 0 = estimate (1 without B)
  // Rounding floor of the test: a pair passes when ‖r‖ ≤ max(tol·(a_norm + |θ|·b_norm),
  // floor_a + |θ|·floor_b)·‖x‖. The eigs driver sets 4u·‖A‖ and 4u·‖B‖ (no iteration in double
  // gets much below), so that an unreachable test stops the iteration instead of running it to
  // the limit; the driver then reports the accuracy reached (solvers/eigs/eigs.hpp). 0 = none.
  double floor_a = 0.0, floor_b = 0.0;
  bool keep_history = true;
  // Called after each iteration with its record (progress display); may be empty.
  std::function<void(const IterationRecord&)> on_iteration;
  // Checkpoints (0 / empty: none): Chebyshev and LOBPCG hand their Ritz block to on_checkpoint
  // every checkpoint_every seconds, block Lanczos its kept Ritz vectors after a thick restart.
  double checkpoint_every = 0.0;
  CheckpointFn on_checkpoint;

  // Built-in Jacobi preconditioner (LOBPCG): T = diag(1 / |a_ii − σ·b_ii|), from the diagonals
  // given here (host, length n; empty = no Jacobi). `preconditioner` (any T ≈ (A − σB)⁻¹, SPD,
  // in ops.space()) takes precedence when set.
  std::vector<double> jacobi_diagonal;       // diag(A)
  std::vector<double> jacobi_mass_diagonal;  // diag(B) (only with a shift)
  double jacobi_shift = 0.0;                 // σ
  const LinearOperator<double>* preconditioner = nullptr;

  // LOBPCG: guard vectors iterated beside the k wanted ones (block m = k + guard, m ≤ n/3).
  // -1 = min(8, max(2, k/2)).
  std::int64_t guard = -1;

  // Block Lanczos: block size b (0 = min(max(k, 2), 8)); every eigenvalue of multiplicity ≤ b
  // is found with all its copies. Basis columns before a restart (0 = max(2k + 2b, 16b) rounded
  // up to whole blocks; larger bases need fewer operator applies but cost O(m³) on the host
  // per restart) and Ritz vectors kept at a thick restart (0 = k + max(b, (m − k)/2)).
  // B⁻¹ for the generalized problem (Lanczos runs on B⁻¹A in the B-inner product). Without
  // b_inverse a preconditioned block CG (Jacobi from jacobi_mass_diagonal when given) solves
  // with B to 1e-13 inside each step.
  std::int64_t block_size = 0;
  std::int64_t max_basis = 0;
  std::int64_t restart_keep = 0;
  // Block Lanczos, first pass only: Rayleigh–Ritz also before the basis is full (at k + 2b
  // columns, then each time the basis grew by a quarter), and a stop once every wanted pair
  // passes its explicit check. Off for the eigs re-checks, whose "nothing missed" rests on the
  // Krylov space of the full basis.
  bool early_stop = true;
  const LinearOperator<double>* b_inverse = nullptr;

  // Optional start block (host, n × start_cols, column-major; SciPy's v0 / X): its columns
  // replace the first ones of the random initial block (the rest stay random). nullptr: random.
  // LOBPCG and block Lanczos refuse a block with zero, non-finite or dependent columns among
  // those they take (InvalidArgument naming them: check_start_block below).
  const double* start = nullptr;
  std::int64_t start_cols = 0;

  // Chebyshev only: where the final Ritz vectors go. nullptr: to the host (EigenResult::vectors).
  // Else the solver allocates this block n × k in ops.space() and leaves them there, and
  // EigenResult::vectors stays empty: no device → host → device round trip (and no page-locked
  // host buffer) when the caller goes on with them on the device, as the eigs driver's
  // verification does (lap3d:100, k = 16: 128 MB each way, ~25 ms on the H200).
  MultiVector<double>* vectors_out = nullptr;
};

// Defaults of the block sizes, in one place (the solvers, the eigs planner, the apps' memory
// estimate and the Python module use these):
//   block Lanczos block b = min(max(k, 2), 8);
//   block Lanczos basis   = max(2k + 2b, 16b) rounded up to whole blocks;
//   LOBPCG guard          = min(8, max(2, k/2)) columns beside the k wanted.
// (Chebyshev's width: chebyshev_block() in solvers/chebyshev.hpp.)
inline std::int64_t default_lanczos_block(std::int64_t k) {
  return k < 2 ? 2 : k > 8 ? 8 : k;
}
inline std::int64_t default_lanczos_basis(std::int64_t k, std::int64_t b) {
  const std::int64_t m = 2 * k + 2 * b > 16 * b ? 2 * k + 2 * b : 16 * b;
  return b * ((m + b - 1) / b);
}
inline std::int64_t default_lobpcg_guard(std::int64_t k) {
  const std::int64_t g = k / 2 < 2 ? 2 : k / 2;
  return g > 8 ? 8 : g;
}

// The solvers' per-pair bound: max(tol·(a + |θ|·b), floor_a + |θ|·floor_b) (times ‖x‖).
inline double pair_bound(const EigenOptions& o, double a, double b, double theta) {
  const double t = theta < 0 ? -theta : theta;
  const double test = o.tol * (a + t * b), floor = o.floor_a + t * o.floor_b;
  return test > floor ? test : floor;
}

// The initial block x: random from opt.seed, then the first min(x.cols, opt.start_cols) columns
// taken from opt.start.
void initial_block(DenseBlockOps& ops, MvView<double> x, const EigenOptions& opt);

// Checks the columns initial_block() took from opt.start (the first min(x.cols, opt.start_cols)
// of x, in ops.space()): throws InvalidArgument naming every zero or non-finite column (with the
// row of a non-finite value) and every column that is a multiple of an earlier one or lies in the
// span of the earlier ones (relative distance ≤ 1e-6). Nothing without opt.start.
// solver: the message's prefix ("lobpcg", "block_lanczos").
void check_start_block(DenseBlockOps& ops, MvView<const double> x, const EigenOptions& opt,
                       const char* solver);

// b may be nullptr (standard problem). Throws InvalidArgument for k < 1, k ≥ n, non-square or
// mismatched operators, or operators outside ops.space().
EigenResult lobpcg(const LinearOperator<double>& a, const LinearOperator<double>* b,
                   DenseBlockOps& ops, const EigenOptions& opt);
EigenResult block_lanczos(const LinearOperator<double>& a, const LinearOperator<double>* b,
                          DenseBlockOps& ops, const EigenOptions& opt);

// Lower bound of ‖Op‖₂ from `steps` steps of block power iteration on `cols` random columns
// (the square root of the largest eigenvalue of (XᵀOp²X) over the orthonormalized block).
double estimate_norm(const LinearOperator<double>& op, DenseBlockOps& ops, int steps = 12,
                     int cols = 4, std::uint64_t seed = 7);

}  // namespace tcsolve
