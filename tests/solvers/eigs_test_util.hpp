// Helpers of the eigs tests: a dense reference accurate at the small end of ill-conditioned
// pencils.
#pragma once
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <vector>

#include "core/csr.hpp"
#include "tests/traps.hpp"

namespace tcsolve::test {

// All eigenvalues of the SPD pencil (A, B) through the dense Cholesky-inverse, ascending.
inline std::vector<double> accurate_spectrum(const Csr<double>& a, const Csr<double>* b) {
  Eigen::MatrixXd A = dense_of(a);
  Eigen::LLT<Eigen::MatrixXd> llt(A);
  EXPECT_EQ(llt.info(), Eigen::Success) << "reference needs A positive definite";
  const std::int64_t n = a.nrows;
  Eigen::MatrixXd M = b ? dense_of(*b) : Eigen::MatrixXd::Identity(n, n);
  // C = L⁻¹·B·L⁻ᵀ.
  Eigen::MatrixXd t = llt.matrixL().solve(M);
  Eigen::MatrixXd c = llt.matrixL().solve(t.transpose());
  c = 0.5 * (c + c.transpose()).eval();
  Eigen::VectorXd mu = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(c, Eigen::EigenvaluesOnly).eigenvalues();
  std::vector<double> lam(n);
  for (std::int64_t i = 0; i < n; ++i) lam[i] = 1.0 / mu(n - 1 - i);
  return lam;
}

}  // namespace tcsolve::test
