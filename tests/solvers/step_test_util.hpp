// Helpers for the tests of single solver steps (test_lanczos_steps, test_lobpcg_steps): host
// copies of device blocks, host products, Ritz residuals, and a matrix with a ≈ 1/j spectrum.
#pragma once
#include <Eigen/Dense>
#include <vector>

#include "core/csr.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve::test {

using Mat = Eigen::MatrixXd;

// x (in ops.space()) on the host.
inline Mat to_host(DenseBlockOps& ops, MvView<const double> x) {
  Mat h(x.rows, x.cols);
  if (x.cols > 0) ops.to_host(x, h.data(), x.rows);
  return h;
}

// A·x with the CSR reference product.
inline Mat apply_host(const Csr<double>& a, const Mat& x) {
  Mat y(x.rows(), x.cols());
  csr_spmm_reference(a, x.data(), x.rows(), y.data(), x.rows(), static_cast<int>(x.cols()));
  return y;
}

// R = A·X − B·X·diag(θ) (b null: B = I).
inline Mat ritz_residuals(const Csr<double>& a, const Csr<double>* b, const Mat& x,
                          const std::vector<double>& theta) {
  const Mat bx = b ? apply_host(*b, x) : x;
  Mat r = apply_host(a, x);
  for (Eigen::Index j = 0; j < x.cols(); ++j) r.col(j) -= theta[j] * bx.col(j);
  return r;
}

// Tridiagonal with diagonal ≈ 1/(i+1) (perturbed by 1e-4) and couplings ≈ 2e-4: a spectrum like a
// shift-invert operator's (fast convergence at the top).
inline Csr<double> inverse_index_matrix(int n) {
  std::vector<Triplet<double>> t;
  for (int i = 0; i < n; ++i) {
    t.push_back({i, i, 1.0 / (i + 1.0) + 1e-4 * random_entry(11, i, 0)});
    if (i > 0) {
      const double e = 2e-4 * random_entry(12, i, 0);
      t.push_back({i, i - 1, e}), t.push_back({i - 1, i, e});
    }
  }
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

}  // namespace tcsolve::test
