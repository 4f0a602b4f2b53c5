// GMRES or MINRES right-preconditioned by the GMRES polynomial (gmres_polynomial.hpp):
//   1. the method on B = A·p(A) for B·Y = R (R = the right-hand sides), from Y = 0;
//   2. X = p(A)·Y, and every column's TRUE residual ‖b_j − A·x_j‖/‖b_j‖ (one apply of A), which
//      alone decides convergence (B's residual equals it in exact arithmetic only);
//   3. columns above tol go on by the method on A itself (the caller's options: its Jacobi or
//      preconditioner), warm-started from X (from 0 where X is worse than 0), with the iterations left (products with A: each
//      step on B counts `degree` of them), so that a polynomial that does not pay costs one
//      stagnation window, not the answer.
// GMRES where the polynomial has its fp32 apply (GmresPolynomial::has_fp32: on the GPU with A's
// fused step) runs steps 1 and 2 as FGMRES on A with M⁻¹ = p(A) in fp32 steps instead: X comes
// out of its updates and its true residuals (its method then reads "fgmres(m) with p(A) in fp32
// steps"); step 3 as above. (On a GPU whose free memory cannot hold FGMRES's m more n × s blocks,
// the fp64 path above.)
#pragma once
#include <cstdint>

#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
#include "solvers/krylov/gmres_polynomial.hpp"
#include "solvers/krylov/krylov_options.hpp"
#include "solvers/result.hpp"

namespace tcsolve::krylov {

enum class KrylovMethod { gmres, minres };

// BlockGmres or BlockMinres (workspace for b.cols columns) on blocks in ops.space().
SolveResult run(KrylovMethod m, const LinearOperator<double>& op, DenseBlockOps& ops, const KrylovOptions& o,
                MvView<const double> b, MvView<double> x, bool use_x0);

// In ops.space(): rhs and x (n × s); x is overwritten (no initial guess: the polynomial phase
// starts from 0). Fills everything of the result but `solutions`.
SolveResult polynomial_solve(KrylovMethod m, const LinearOperator<double>& a, const GmresPolynomial& poly,
                             MvView<const double> rhs, MvView<double> x, DenseBlockOps& ops,
                             const KrylovOptions& opt);

// Host convenience (as gmres()): rhs n × s (ldb), solutions returned on the host.
SolveResult polynomial_solve(KrylovMethod m, const LinearOperator<double>& a, const GmresPolynomial& poly,
                             const double* rhs, std::int64_t ldb, std::int64_t s, DenseBlockOps& ops,
                             const KrylovOptions& opt);

}  // namespace tcsolve::krylov
