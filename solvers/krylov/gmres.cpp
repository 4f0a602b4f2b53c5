// Pseudo-block restarted GMRES(m) (Saad & Schultz 1986) for A·X = B, A any square matrix, with
// right preconditioning: A·M⁻¹·u = b, x = M⁻¹·u (M = diag(A), a zero a_ii taken as 1, or a given
// operator fixed during a cycle), so that the residual GMRES minimizes is b − A·x itself.
//
// Per column c and cycle (r_0 = b_c − A·x_c, β = ‖r_0‖, v_0 = r_0/β, g = β·e_1):
//   for j = 0..m−1:  w = A·M⁻¹·v_j
//                    h_{0..j,j} = Vᵀw, w −= V·h, twice (CGS2: classical Gram-Schmidt with one
//                    re-orthogonalization, orthogonal to working precision in two passes)
//                    h_{j+1,j} = ‖w‖, v_{j+1} = w/h_{j+1,j}
//                    Givens: the earlier rotations applied to H(:, j), a new one zeroing
//                    h_{j+1,j}; g updated; |g_{j+1}| = ‖b − A·x_j‖ of the minimizer (exact
//                    arithmetic)
//   y = R⁻¹·g (R: the rotated H, upper triangular k_c × k_c), x_c += M⁻¹·V·y.
// A column whose estimate |g_{j+1}| reaches tol·‖b_c‖ stops expanding (its own cycle length k_c;
// its next basis vectors are 0, so the shared passes leave it alone); a happy breakdown
// (h_{j+1,j} ≤ 1e-12·‖H(:, j)‖: the Krylov space is invariant) ends its cycle too. The cycle ends
// at m steps or once the host has seen every column stop.
// Convergence is decided on the TRUE residual: at each cycle's end ‖b_c − A·x_c‖/‖b_c‖ is
// recomputed (one apply of s columns) and the next cycle restarts from it, as restarted GMRES does
// anyway; only columns above tol go on (the workspace compacted to them). A column whose true
// residual gains less than 1 % over max(2, ⌈30/m⌉) cycles is stagnating and leaves, reported
// not converged with its residual (gmres_solver.hpp: kStagnationFactor says why); so does
// everything at max_iterations (Arnoldi steps over all cycles). Zero right-hand sides: x = 0,
// converged at once. A non-finite entry of B: InvalidArgument. Columns run scaled by powers of two
// (b_c/c_c with ‖b_c‖/c_c in [0.5, 1), exact), so that b of 1e±200 converges like any other.
//
// Flexible (KrylovOptions::flexible, with a preconditioner operator): FGMRES (Saad 1993). Each
// z_j = M⁻¹·v_j is kept in its own block Z_j and the cycle's update is x += Z·y, so that
// A·Z_k = V_{k+1}·H̄_k holds whatever M⁻¹ did (an inexact or changing M: the GMRES polynomial in
// fp32 steps, polynomial_solve.hpp). Memory: m more n × s blocks (Z), and no z block.
//
// Why pseudo-block and not block GMRES: the s Arnoldi processes are independent, so there is no
// deflation or rank question (dependent or zero right-hand sides cost nothing special), columns
// converge and stop on their own, and the only thing shared is what dominates — the SpMM A·V_j of
// s columns (one pass over A for s vectors) and the launches of the fused passes. Block GMRES
// searches a larger space per step (s·m vectors per cycle) but needs s× the basis memory for the
// same m, a block Arnoldi with rank-revealing QR of the new block, and a least-squares problem of
// size s·m coupled over the columns; with m·n·s already the memory budget, pseudo-block spends
// that memory on a longer m per column, which is what restarted GMRES needs most.
//
// Where things run (device-resident iteration, as block CG): the basis, the coefficient blocks
// and the per-column Hessenberg/Givens state live in the dense ops' space; every step of an
// iteration is queued on ops.stream(), and the host only fetches, asynchronously, the s residual
// estimates, stop flags and lengths (fetch_async; it waits for iteration j − 1's while j is
// queued, so the GPU does not idle). The host waits only between cycles (the true residuals'
// norms decide the next cycle's columns and targets). Nothing is allocated inside the loop (the
// workspace below is allocated in the constructor). Kernels: gmres_kernels.hpp (CPU / CUDA
// twins); steps: gmres_solver.hpp.
//
// Passes over n × na blocks per iteration j (k = j + 1 basis blocks, na active columns):
//   w = A·z                       the apply (writes w = V_{j+1}; z = M⁻¹·v_j or v_j itself)
//   h1 = Vᵀw                      ortho_pass: reads V_0..V_j and w              k + 1
//   w −= V·h1;  h2 = Vᵀw          ortho_pass: reads V, w, writes w (the dots    k + 2
//                                 re-read the row tile just updated, from cache)
//   w −= V·h2;  ‖w‖²              ortho_pass: reads V, w, writes w              k + 2
//   Givens, estimate              one thread a column (m-sized arithmetic)
//   v_{j+1} = w/h_{j+1,j}         normalize: reads w, writes v (in place)         2
//                                 (Jacobi: also writes z = D⁻¹·v_{j+1} and reads D: 3 + d)
// = 3k + 7 passes (3k + 8 with Jacobi), 1.5·m + 8.5 on average over a full cycle of m (53.5 at
// the default m = 30), against 4k + 8 for CGS2 in four separate passes; the fused second pass
// saves one read of the basis. A general M adds its apply. Per cycle: the update x += M⁻¹·V·y
// reads the k blocks and writes one (combine), plus one axpby a column; the true residual one
// apply of A and 3 passes.
//
// Memory: the basis (m + 1)·n·s, the scratch block U (true residuals, the cycle's update) n·s, Z
// = M⁻¹·v_j n·s with a preconditioner, D⁻¹ n: (m + 2)·n·s doubles, (m + 3)·n·s preconditioned
// (+ n); small: 2·(m + 2)·s coefficients, (m² + 4m + 9)·s of state, and the reduction
// workspace ((m + 2)·max(s, 8·SMs) doubles on the GPU; (m + 2)·s per CPU thread).
#include "solvers/krylov/gmres.hpp"

#include <vector>

#include "core/error.hpp"
#include "solvers/host_result.hpp"
#include "solvers/krylov/gmres_solver.hpp"

namespace tcsolve {

struct BlockGmres::Impl {
  krylov::gmres::GmresSolver solver;
  Impl(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t s, KrylovOptions o)
      : solver(a, ops, s, std::move(o)) {}
};

BlockGmres::BlockGmres(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_rhs,
                       KrylovOptions opt)
    : impl_(std::make_unique<Impl>(a, ops, max_rhs, std::move(opt))) {}
BlockGmres::~BlockGmres() = default;
SolveResult BlockGmres::solve(MvView<const double> rhs, MvView<double> x, bool use_x0) {
  return impl_->solver.solve(rhs, x, use_x0);
}

SolveResult gmres(const LinearOperator<double>& a, const double* rhs, std::int64_t ldb, std::int64_t s,
                  DenseBlockOps& ops, const KrylovOptions& opt, const double* x0) {
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "GMRES: A must be square");
  TCSOLVE_REQUIRE(s >= 1 && ldb >= n, "GMRES: need s >= 1 and ldb >= n");
  BlockGmres solver(a, ops, s, opt);
  return detail::solve_from_host(ops, n, rhs, ldb, s, x0, [&](MvView<const double> b, MvView<double> x, bool use_x0) {
    return solver.solve(b, x, use_x0);
  });
}

}  // namespace tcsolve
