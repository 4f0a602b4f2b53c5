// Helpers for the solver tests: Laplacians with closed-form spectra, matrix files through
// io/matrix_io, the operators the solvers really use (spmm/sparse_operator: the CPU CSR kernel,
// or on the GPU the kernel the plan picks), and invariant checks.
#pragma once
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/operator.hpp"
#include "io/matrix_io.hpp"
#include "solvers/dense_ops.hpp"
#include "spmm/sparse_operator.hpp"
#include "tests/test_paths.hpp"

namespace tcsolve::test {

#ifdef TCSOLVE_TEST_BACKEND_CUDA
constexpr Backend kBackend = Backend::cuda;
#define TCSOLVE_SKIP_WITHOUT_BACKEND() TCSOLVE_SKIP_WITHOUT_GPU()
#else
constexpr Backend kBackend = Backend::cpu;
#define TCSOLVE_SKIP_WITHOUT_BACKEND() \
  do {                                 \
  } while (0)
#endif

constexpr double kPi = 3.14159265358979323846;

// Dirichlet Laplacian on an nx × ny × nz grid (2·dim on the diagonal, −1 per neighbour).
inline Csr<double> laplacian(int nx, int ny = 1, int nz = 1) {
  const int dim = (nx > 1) + (ny > 1) + (nz > 1);
  std::vector<Triplet<double>> t;
  auto id = [&](int i, int j, int l) { return i + nx * (j + ny * l); };
  for (int l = 0; l < nz; ++l)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) {
        int r = id(i, j, l);
        t.push_back({r, r, 2.0 * dim});
        if (i > 0) t.push_back({r, id(i - 1, j, l), -1.0});
        if (i + 1 < nx) t.push_back({r, id(i + 1, j, l), -1.0});
        if (j > 0) t.push_back({r, id(i, j - 1, l), -1.0});
        if (j + 1 < ny) t.push_back({r, id(i, j + 1, l), -1.0});
        if (l > 0) t.push_back({r, id(i, j, l - 1), -1.0});
        if (l + 1 < nz) t.push_back({r, id(i, j, l + 1), -1.0});
      }
  std::int64_t n = std::int64_t(nx) * ny * nz;
  return csr_from_triplets<double>(n, n, std::move(t), Symmetry::symmetric);
}

// All eigenvalues of laplacian(nx, ny, nz), ascending (multiplicities included):
// Σ_d (2 − 2cos(π·i_d/(n_d+1))).
inline std::vector<double> laplacian_spectrum(int nx, int ny = 1, int nz = 1) {
  auto one = [](int n) {
    std::vector<double> v(n);
    for (int i = 1; i <= n; ++i) v[i - 1] = 2.0 - 2.0 * std::cos(kPi * i / (n + 1));
    return v;
  };
  std::vector<double> ex = one(nx), ey = ny > 1 ? one(ny) : std::vector<double>{0.0},
                      ez = nz > 1 ? one(nz) : std::vector<double>{0.0};
  std::vector<double> all;
  all.reserve(ex.size() * ey.size() * ez.size());
  for (double a : ex)
    for (double b : ey)
      for (double c : ez) all.push_back(a + b + c);
  std::sort(all.begin(), all.end());
  return all;
}

// A matrix file (Matrix Market, Rutherford-Boeing, HDF5) as a square CSR with both triangles.
inline Csr<double> read_mtx(const std::string& path) {
  ReadOptions ro;
  ro.require_square = true;
  return read_matrix(path, ro);
}

inline std::vector<double> diagonal(const Csr<double>& a) {
  std::vector<double> d(a.nrows, 0.0);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) d[i] = a.values[p];
  return d;
}

// An n × s block of random_entry(seed, i, j): the same values on every backend.
inline Eigen::MatrixXd random_block(std::int64_t n, std::int64_t s, std::uint64_t seed) {
  Eigen::MatrixXd b(n, s);
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t i = 0; i < n; ++i) b(i, j) = random_entry(seed, i, j);
  return b;
}

inline Eigen::MatrixXd dense(const Csr<double>& a) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.nrows, a.ncols);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) d(i, a.col_idx[p]) += a.values[p];
  return d;
}

// Largest absolute row sum: ‖A‖∞ ≥ ‖A‖₂ for symmetric A.
inline double norm_inf(const Csr<double>& a) {
  double m = 0;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double s = 0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) s += std::abs(a.values[p]);
    m = std::max(m, s);
  }
  return m;
}

// The production operator on the backend under test: make_sparse_operator (CPU: multithreaded
// CSR; CUDA: A uploaded once, kernel chosen for 8 columns: by the byte model on these launch-bound sizes). The solvers run
// it on their own stream through ApplyClock, which orders it against the dense ops.
inline std::unique_ptr<LinearOperator<double>> make_operator(const Csr<double>& a) {
  OperatorOptions oo;
  oo.expected_cols = 8;
  return make_sparse_operator(a, kBackend, oo);
}

// ‖A·x_j − λ_j·B·x_j‖₂ recomputed on the host (B = nullptr: identity).
inline std::vector<double> residuals(const Csr<double>& a, const Csr<double>* b,
                                     const std::vector<double>& x, const std::vector<double>& lam) {
  const std::int64_t n = a.nrows, k = static_cast<std::int64_t>(lam.size());
  std::vector<double> ax(n * k), bx(x);
  csr_spmm_reference(a, x.data(), n, ax.data(), n, static_cast<int>(k));
  if (b) csr_spmm_reference(*b, x.data(), n, bx.data(), n, static_cast<int>(k));
  std::vector<double> r(k);
  for (std::int64_t j = 0; j < k; ++j) {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double d = ax[i + j * n] - lam[j] * bx[i + j * n];
      s += d * d;
    }
    r[j] = std::sqrt(s);
  }
  return r;
}

// max |XᵀBX − I|.
inline double orthogonality_error(const Csr<double>* b, const std::vector<double>& x, std::int64_t n,
                                  std::int64_t k) {
  Eigen::Map<const Eigen::MatrixXd> X(x.data(), n, k);
  Eigen::MatrixXd bx = X;
  if (b) csr_spmm_reference(*b, x.data(), n, bx.data(), n, static_cast<int>(k));
  Eigen::MatrixXd g = X.transpose() * bx - Eigen::MatrixXd::Identity(k, k);
  return g.cwiseAbs().maxCoeff();
}

}  // namespace tcsolve::test
