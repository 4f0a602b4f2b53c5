// Helpers for the solver tests: Laplacians with closed-form spectra, a tiny Matrix Market reader
// (until io/ lands), host and device operators over a Csr, and invariant checks.
#pragma once
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/csr.hpp"
#include "core/device.hpp"
#include "core/operator.hpp"
#include "solvers/dense_ops.hpp"
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

// Minimal Matrix Market reader (coordinate real/integer/pattern, general/symmetric).
inline Csr<double> read_mtx(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string line;
  std::getline(in, line);
  bool symmetric = line.find("symmetric") != std::string::npos;
  bool pattern = line.find("pattern") != std::string::npos;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '%') break;
  std::istringstream hs(line);
  std::int64_t m, n, nnz;
  hs >> m >> n >> nnz;
  std::vector<Triplet<double>> t;
  for (std::int64_t e = 0; e < nnz; ++e) {
    std::int64_t i, j;
    double v = 1.0;
    in >> i >> j;
    if (!pattern) in >> v;
    t.push_back({std::int32_t(i - 1), std::int32_t(j - 1), v});
    if (symmetric && i != j) t.push_back({std::int32_t(j - 1), std::int32_t(i - 1), v});
  }
  return csr_from_triplets<double>(m, n, std::move(t),
                                   symmetric ? Symmetry::symmetric : Symmetry::general);
}

inline std::vector<double> diagonal(const Csr<double>& a) {
  std::vector<double> d(a.nrows, 0.0);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] == i) d[i] = a.values[p];
  return d;
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

// Y = A·X on the host (core csr_spmm_reference).
class HostCsrOperator final : public LinearOperator<double> {
 public:
  explicit HostCsrOperator(const Csr<double>& a) : a_(a) {}
  std::int64_t rows() const override { return a_.nrows; }
  std::int64_t cols() const override { return a_.ncols; }
  Space space() const override { return Space::host; }
  void apply(MvView<const double> x, MvView<double> y) const override {
    csr_spmm_reference(a_, x.data, x.ld, y.data, y.ld, static_cast<int>(x.cols));
  }

 private:
  Csr<double> a_;
};

// Device-space operator for the GPU tests of the solver logic: stages X to the host, multiplies
// there, copies Y back (no GPU kernel; the GPU SpMM has its own tests). Buffers grow once.
class StagedDeviceOperator final : public LinearOperator<double> {
 public:
  explicit StagedDeviceOperator(const Csr<double>& a) : a_(a) {}
  std::int64_t rows() const override { return a_.nrows; }
  std::int64_t cols() const override { return a_.ncols; }
  Space space() const override { return Space::device; }
  void apply(MvView<const double> x, MvView<double> y) const override {
    device_synchronize();
    hx_.resize(x.rows * x.cols);
    hy_.resize(y.rows * y.cols);
    for (std::int64_t j = 0; j < x.cols; ++j)
      copy_bytes(hx_.data() + j * x.rows, Space::host, x.col(j), Space::device, sizeof(double) * x.rows);
    csr_spmm_reference(a_, hx_.data(), x.rows, hy_.data(), y.rows, static_cast<int>(x.cols));
    for (std::int64_t j = 0; j < y.cols; ++j)
      copy_bytes(y.col(j), Space::device, hy_.data() + j * y.rows, Space::host, sizeof(double) * y.rows);
  }

 private:
  Csr<double> a_;
  mutable std::vector<double> hx_, hy_;
};

inline std::unique_ptr<LinearOperator<double>> make_operator(const Csr<double>& a) {
  if (kBackend == Backend::cuda) return std::make_unique<StagedDeviceOperator>(a);
  return std::make_unique<HostCsrOperator>(a);
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
