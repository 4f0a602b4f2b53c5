// Eigenpairs of a dense symmetric matrix on the host, by index range: LAPACK's dsyevr (MRRR,
// through OpenBLAS's LAPACK where tcsolve is built with it), Eigen's SelfAdjointEigenSolver
// otherwise. The eigs driver's dense method (solvers/eigs/runs.cpp, run_dense) takes the k wanted
// of an end only: the tridiagonal reduction (4/3·n³ flops, half of them in BLAS-3) and k vectors
// back-transformed (2·n²·k), against Eigen's unblocked reduction and all n vectors (2-core CPU,
// n = 1000: 0.71 s before; docs/performance.md "The planner sweep").
#pragma once
#include <Eigen/Dense>
#include <cstdint>

namespace tcsolve {

struct SymmetricEigen {
  Eigen::VectorXd values;   // ascending, iu − il + 1 of them
  Eigen::MatrixXd vectors;  // n × (iu − il + 1), orthonormal columns
};

// Eigenpairs il..iu (0-based, in ascending order of the eigenvalues; 0 ≤ il ≤ iu < n) of the
// symmetric A (its lower triangle is read). Throws Error when LAPACK reports a failure.
SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& a, std::int64_t il, std::int64_t iu);

// True where symmetric_eigen and DenseCholesky run LAPACK (false: Eigen).
bool symmetric_eigen_uses_lapack();

// A = L·Lᵀ of a dense symmetric positive definite A (LAPACK dpotrf, else Eigen's LLT), and what
// the dense method's inverse form needs: C = L⁻¹·B·L⁻ᵀ (dsygst), x = L⁻ᵀ·y
// and A⁻¹·R (n × k blocks). All O(n³) work in LAPACK's blocked, threaded routines.
class DenseCholesky {
 public:
  // False where A is not positive definite (to working precision).
  bool factor(const Eigen::MatrixXd& a);
  Eigen::MatrixXd congruence(const Eigen::MatrixXd* b) const;  // b null: B = I
  Eigen::MatrixXd solve_lower_transposed(const Eigen::MatrixXd& y) const;  // L⁻ᵀ·y
  Eigen::MatrixXd solve(const Eigen::MatrixXd& r) const;                   // A⁻¹·r

 private:
  Eigen::MatrixXd l_;  // L in the lower triangle
};

}  // namespace tcsolve
