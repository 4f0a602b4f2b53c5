// Implicitly centered operator (solvers/svd/centered.hpp).
#include "solvers/svd/centered.hpp"

#include <algorithm>

#include "core/device.hpp"
#include "core/error.hpp"

namespace tcsolve {

CenteredOperator::CenteredOperator(const LinearOperator<double>& a, bool transposed,
                                   const std::vector<double>& mu, DenseBlockOps& ops,
                                   std::int64_t max_cols)
    : a_(a), transposed_(transposed), ops_(ops), max_cols_(std::max<std::int64_t>(1, max_cols)) {
  TCSOLVE_REQUIRE(a.space() == ops.space(), "CenteredOperator: operator and dense ops in different spaces");
  const std::int64_t m = transposed ? a.cols() : a.rows(), n = transposed ? a.rows() : a.cols();
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(mu.size()) == n,
                  "CenteredOperator: mu must hold one mean per column of A (" + std::to_string(n) + ")");
  mu_ = ops.allocate(n, 1);
  ones_ = ops.allocate(m, 1);
  g_ = ops.allocate(1, max_cols_);
  ops.from_host(mu.data(), n, mu_.view());
  const std::vector<double> one(static_cast<std::size_t>(m), 1.0);
  ops.from_host(one.data(), m, ones_.view());
}

void CenteredOperator::apply(MvView<const double> x, MvView<double> y) const {
  a_.apply(x, y);
  // The wrapped operator may run on a stream of its own: its result must be complete before the
  // dense ops' stream reads it.
  if (space() == Space::device) device_synchronize();
  const MvView<const double> dot_with = transposed_ ? ones_.view() : mu_.view();
  const MvView<const double> outer = transposed_ ? mu_.view() : ones_.view();
  for (std::int64_t j0 = 0; j0 < x.cols; j0 += max_cols_) {
    const std::int64_t q = std::min(max_cols_, x.cols - j0);
    MvView<double> g{g_.data(), 1, q, 1, g_.space()};
    ops_.gram_into(1.0, dot_with, x.columns(j0, q), 0.0, g);  // g = μᵀ·X or 1ᵀ·X   (1 × q)
    ops_.gemm_into(-1.0, outer, g, 1.0, y.columns(j0, q));     // Y −= 1·g or μ·g
  }
  ops_.synchronize();
}

std::vector<double> column_means(const Csr<double>& a) {
  std::vector<double> mu(static_cast<std::size_t>(a.ncols), 0.0);
  for (std::int64_t p = 0; p < a.nnz(); ++p) mu[a.col_idx[p]] += a.values[p];
  const double inv = a.nrows > 0 ? 1.0 / static_cast<double>(a.nrows) : 0.0;
  for (double& v : mu) v *= inv;
  return mu;
}

double centered_frobenius_sq(const Csr<double>& at, std::int64_t m, const std::vector<double>& mu) {
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(mu.size()) == at.nrows && at.ncols == m,
                  "centered_frobenius_sq: Aᵀ must be n × m with n means");
  double total = 0;
  for (std::int64_t j = 0; j < at.nrows; ++j) {
    double s = 0;
    for (std::int64_t p = at.row_ptr[j]; p < at.row_ptr[j + 1]; ++p) {
      const double d = at.values[p] - mu[j];
      s += d * d;
    }
    const auto nnz_j = static_cast<double>(at.row_ptr[j + 1] - at.row_ptr[j]);
    total += s + (static_cast<double>(m) - nnz_j) * mu[j] * mu[j];
  }
  return total;
}

}  // namespace tcsolve
