// Test matrices that have fooled eigensolvers ("traps"), with their exact spectra where known:
//   constrained_dofs   an SPD stiffness-like matrix (‖A‖ ≈ 1e9…1e10) in which m rows/columns hold
//                      only a unit diagonal (constrained degrees of freedom): eigenvalue 1.0 with
//                      multiplicity m, below the rest of the spectrum;
//   repeated_blocks    block diagonal with `copies` identical random SPD blocks (each eigenvalue of
//                      the block has multiplicity `copies`, e.g. 100) plus a tail of distinct values;
//   lumped_mass        a positive diagonal mass matrix spanning `decades` orders of magnitude.
// Also dense references through Eigen (symmetric and generalized).
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/csr.hpp"
#include "solvers/dense_ops.hpp"

namespace tcsolve::test {

// 3D 7-point Laplacian (nx³ rows) scaled by `scale`, plus `scale`·shift on the diagonal.
inline Csr<double> scaled_laplacian3d(int nx, double scale, double shift) {
  std::vector<Triplet<double>> t;
  auto id = [&](int i, int j, int l) { return i + nx * (j + nx * l); };
  for (int l = 0; l < nx; ++l)
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) {
        const int r = id(i, j, l);
        t.push_back({r, r, scale * (6.0 + shift)});
        if (i > 0) t.push_back({r, id(i - 1, j, l), -scale});
        if (i + 1 < nx) t.push_back({r, id(i + 1, j, l), -scale});
        if (j > 0) t.push_back({r, id(i, j - 1, l), -scale});
        if (j + 1 < nx) t.push_back({r, id(i, j + 1, l), -scale});
        if (l > 0) t.push_back({r, id(i, j, l - 1), -scale});
        if (l + 1 < nx) t.push_back({r, id(i, j, l + 1), -scale});
      }
  const std::int64_t n = std::int64_t(nx) * nx * nx;
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

// Every `stride`-th row/column (m of them) replaced by a unit diagonal: eigenvalue 1 × m.
// With scale = 1e9 the rest of the spectrum lies in [scale·shift, scale·(12 + shift)].
inline Csr<double> constrained_dofs(int nx, int stride, double scale = 1e9, double shift = 1e-6,
                                    std::int64_t* m_out = nullptr) {
  Csr<double> a = scaled_laplacian3d(nx, scale, shift);
  std::vector<char> fixed(a.nrows, 0);
  std::int64_t m = 0;
  for (std::int64_t i = 0; i < a.nrows; i += stride) fixed[i] = 1, ++m;
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    if (fixed[i]) {
      t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i), 1.0});
      continue;
    }
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (!fixed[a.col_idx[p]]) t.push_back({static_cast<std::int32_t>(i), a.col_idx[p], a.values[p]});
  }
  if (m_out) *m_out = m;
  return csr_from_triplets<double>(a.nrows, a.ncols, std::move(t), Symmetry::symmetric);
}

// Block diagonal: `copies` copies of one random SPD s × s block (eigenvalues in [1, 2]), then
// `tail` distinct diagonal values 2 + 0.5·(j+1) (j < tail).
inline Csr<double> repeated_blocks(int copies, int s, int tail, std::uint64_t seed = 3) {
  Eigen::MatrixXd g(s, s);
  for (int i = 0; i < s; ++i)
    for (int j = 0; j < s; ++j) g(i, j) = random_entry(seed, i, j);
  Eigen::MatrixXd blk = g * g.transpose();
  const double lo = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(blk).eigenvalues().minCoeff();
  const double hi = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(blk).eigenvalues().maxCoeff();
  blk = (blk - lo * Eigen::MatrixXd::Identity(s, s)) / std::max(hi - lo, 1e-3) +
        Eigen::MatrixXd::Identity(s, s);  // spectrum in [1, 2]
  std::vector<Triplet<double>> t;
  for (int c = 0; c < copies; ++c)
    for (int i = 0; i < s; ++i)
      for (int j = 0; j < s; ++j) t.push_back({c * s + i, c * s + j, blk(i, j)});
  const int base = copies * s;
  for (int j = 0; j < tail; ++j) t.push_back({base + j, base + j, 2.0 + 0.5 * (j + 1)});
  const std::int64_t n = base + tail;
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

inline Csr<double> lumped_mass(std::int64_t n, double decades = 3.0, std::uint64_t seed = 11) {
  std::vector<Triplet<double>> t;
  for (std::int64_t i = 0; i < n; ++i)
    t.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(i),
                 std::pow(10.0, decades * 0.5 * (random_entry(seed, i, 0) + 1.0))});
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

inline Eigen::MatrixXd dense_of(const Csr<double>& a) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.nrows, a.ncols);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[p]) += a.values[p];
  return d;
}

// All eigenvalues, ascending (LAPACK-quality dense solvers in Eigen).
inline std::vector<double> dense_spectrum(const Csr<double>& a, const Csr<double>* b = nullptr) {
  Eigen::VectorXd ev;
  if (b) {
    Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(dense_of(a), dense_of(*b),
                                                                  Eigen::EigenvaluesOnly);
    ev = es.eigenvalues();
  } else {
    ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(dense_of(a), Eigen::EigenvaluesOnly)
             .eigenvalues();
  }
  return std::vector<double>(ev.data(), ev.data() + ev.size());
}

}  // namespace tcsolve::test
