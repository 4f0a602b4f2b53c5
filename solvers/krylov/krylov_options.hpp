// Options shared by the Krylov solves for matrices block CG does not take: pseudo-block MINRES
// (symmetric indefinite, solvers/krylov/minres.hpp) and pseudo-block GMRES(m) (unsymmetric,
// solvers/krylov/gmres.hpp). Both return SolveResult (solvers/result.hpp) and test convergence
// on each column's TRUE relative residual ‖b_j − A·x_j‖₂ ≤ tol·‖b_j‖₂ at the end: no column is
// reported converged that is not.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/operator.hpp"
#include "solvers/result.hpp"

namespace tcsolve {

struct KrylovOptions {
  double tol = 1e-8;                    // relative: ‖b_j − A·x_j‖₂ ≤ tol·‖b_j‖₂
  std::int64_t max_iterations = 5000;   // operator applies per column (GMRES: over all restarts)
  int restart = 30;                     // GMRES(m): basis vectors per cycle (MINRES: unused)
  // Jacobi: the host diagonal of A (n). MINRES uses M = |diag(A)| (it needs M positive definite),
  // GMRES right preconditioning A·M⁻¹ with M = diag(A) (a zero a_ii: 1 there). Empty: none.
  std::vector<double> jacobi_diagonal;
  // Any other preconditioner, in ops.space() (takes precedence over jacobi_diagonal). MINRES:
  // symmetric positive definite M⁻¹; GMRES: applied on the right, fixed during a cycle.
  const LinearOperator<double>* preconditioner = nullptr;
  // GMRES with a preconditioner: flexible (FGMRES, Saad 1993): M⁻¹ may change between applies
  // (an inexact one, e.g. a polynomial in fp32 steps). Each z_j = M⁻¹·v_j is kept (m more n × s
  // blocks) and x += Z·y, so that the residual GMRES minimizes stays b − A·x. MINRES: unused.
  bool flexible = false;
  bool keep_history = true;
  std::function<void(const IterationRecord&)> on_iteration;  // progress; may be empty
};

}  // namespace tcsolve
