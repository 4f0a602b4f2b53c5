// Pseudo-block MINRES (Paige & Saunders 1975) for A·X = B, A symmetric (indefinite allowed), s
// right-hand sides, optional symmetric positive definite preconditioner M: public entry points.
// The solver's steps are in minres_solver.hpp, its per-column kernels in minres_kernels.hpp.
//
// Why pseudo-block, not block MINRES. Block MINRES (one block Krylov space for all columns)
// needs the block Lanczos vectors to keep full rank: dependent or converged columns force
// deflation, a rank-revealing QR per iteration and a block QR of the band T̲ whose bookkeeping
// is the hard part of the method; its gain over s separate recurrences is fewer iterations when
// the columns share the spectrum's hard part. Here the s recurrences are independent: no rank can
// be lost, each column converges (and leaves) on its own, and the one cost they share, the SpMM
// A·Z of s columns (the matrix read once for all of them, against s SpMVs), is what dominates on
// a sparse matrix. Each column's scalars (α, β, the Givens c and s, φ̄, norms) live in a small
// block S in the dense ops' space, updated by per-column kernels: the host waits for nothing
// inside the loop but reads the residual estimates of iteration t − 1 after queuing t.
//
// The recurrence, per column (Lanczos in the M-inner product; u = M·z, v = z/β):
//   β_1 = √(r_0ᵀM⁻¹r_0), u_1 = r_0, z_1 = M⁻¹·r_0, φ̄_0 = β_1, (cs, sn) = (−1, 0)
//   iteration k:  q = A·z_k                                     (the apply, s columns at once)
//                 α_k = v_kᵀ(A·v_k − β_k·M·v_{k−1}) = z_kᵀq/β_k² − z_kᵀu_{k−1}/β_{k−1}
//                 u_{k+1} = q/β_k − (α_k/β_k)·u_k − (β_k/β_{k−1})·u_{k−1},  z_{k+1} = M⁻¹·u_{k+1}
//                 β_{k+1} = √(u_{k+1}ᵀz_{k+1})
//                 the Givens rotation k of T̲_k's QR: γ_k, cs_k, sn_k, φ_k = cs_k·φ̄_{k−1},
//                 φ̄_k = sn_k·φ̄_{k−1} = ‖r_k‖_{M⁻¹}   (minres_kernels.hpp: step_rotate)
//                 w_k = (v_k − ε_k·w_{k−2} − δ_k·w_{k−1})/γ_k,  x_k = x_{k−1} + φ_k·w_k
//                 r_k = sn_k²·r_{k−1} − φ̄_k·cs_k·u_{k+1}/β_{k+1}   (preconditioned only)
// The x (and r) update of step k needs β_{k+1}, which the update pass of iteration k only sums:
// it is made by iteration k + 1's update pass, in the same sweep as the next Lanczos vector. So
// after iteration k the block holds x_{k−1}; a column whose φ̄_k passed its target becomes
// "finishing" and the next pass makes its last update; the cycle's end makes the pending update
// of the columns still iterating (a flush pass). With a preconditioner φ̄ is the M⁻¹-norm of the
// residual, so the 2-norm residual r_{k−1} is carried in R (two passes more) and tested instead:
// such a column is done as soon as ‖r_{k−1}‖ passes, x_{k−1} being in place.
// Without preconditioner (and with Jacobi) only z is stored (u = d∘z, d = |diag A| with zeros
// as 1): the Jacobi scaling costs two n-vectors, not a block. A constant diagonal is dropped
// (MINRES is invariant under M = c·I).
//
// Passes over n × s blocks per iteration ("pass" = one read or one write of an n × s block), s
// the active columns, besides the apply Q = A·Z_c:
//   dot pass      reads Z_c, Q, Z_p (U_p with another M): α_k, and ‖q‖, ‖z_k‖ for ‖A‖     3
//   update pass   reads Q, Z_c, Z_p, W_p, W, X; writes Z_p (z_{k+1}), W_p (w_{k−1}), X     9
//                 with R (preconditioned): reads and writes R                              +2
//   general M     the update pass reads U_c, U_p and writes U_p for Z_p; then Z = M⁻¹·U
//                 (an apply) and β² = uᵀz (reads U, Z)                                     +3
// = 12 passes (96·n·s bytes) without preconditioner, 14 with Jacobi (+ the n-vectors d, 1/d),
// 17 and an apply of M with another preconditioner; block CG makes 10. The scalar work is five
// small kernels per iteration (two of them finish the deterministic column sums).
// Workspace (allocated in the constructor): Z_c, Z_p, W, W_p, X_a, Q (6·n·s doubles), R with a
// preconditioner, U_c, U_p with another one; S and its compaction twin (2·kFields·s = 60·s doubles).
//
// Convergence. A column leaves the block when its estimate (φ̄_k, or ‖r_{k−1}‖ of R) passes
// max(tol, 4u)·‖b_j‖, when ‖A·r‖/(‖A‖·‖r‖) ≤ √u (a least-squares solution: A singular and b_j
// not in its range; minres_solver.hpp: kLsTol), or when T̲_k turns singular or values turn
// non-finite; its iterate is parked at X_a's back. At the cycle's end the TRUE residuals
// ‖b_j − A·x_j‖/‖b_j‖ of the iterates are computed; an iterate replaces x_j only if it is no
// worse than the cycle's start (a singular A's exhausted Krylov space can blow x up). A column
// within tol is converged; one that missed it restarts from its current x while the cycle at
// least halved its true residual (at most 4 cycles): the recurrence drifts from the true residual
// at about u·κ(A)·‖A‖·‖x‖ (MINRES's attainable accuracy), and a restart is a step of iterative
// refinement. A column still above tol is reported with what was seen (the iteration limit, a
// least-squares solution, stagnation with its rounding floor u·‖A‖·‖x_j‖/‖b_j‖). Columns run
// scaled by powers of two (‖b_j‖/c_j in [0.5, 1)) so that no sum of squares overflows; a zero
// right-hand side gets x_j = 0; a non-finite entry of B is an InvalidArgument.
#include "solvers/krylov/minres.hpp"

#include "core/error.hpp"
#include "solvers/host_result.hpp"
#include "solvers/krylov/minres_solver.hpp"

namespace tcsolve {

struct BlockMinres::Impl {
  mr::MinresSolver solver;
  Impl(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t s, KrylovOptions o)
      : solver(a, ops, s, std::move(o)) {}
};

BlockMinres::BlockMinres(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs,
                         KrylovOptions opt)
    : impl_(std::make_unique<Impl>(a, ops, max_rhs, std::move(opt))) {}
BlockMinres::~BlockMinres() = default;
SolveResult BlockMinres::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  return impl_->solver.solve(rhs, x, use_x0);
}

SolveResult minres(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb, std::int64_t s,
                   DenseBlockOps& ops, const KrylovOptions& opt, const double* x0) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "minres: A must be square");
  TCSOLVE_REQUIRE(s >= 1 && ldb >= n, "minres: need s >= 1 and ldb >= n");
  BlockMinres solver(a, ops, s, opt);
  return detail::solve_from_host(ops, n, rhs, ldb, s, x0, [&](MvView<const double> b, MvView<double> x, bool use_x0) {
    return solver.solve(b, x, use_x0);
  });
}

}  // namespace tcsolve
