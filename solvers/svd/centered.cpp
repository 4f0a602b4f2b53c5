// Implicitly centered operator (solvers/svd/centered.hpp).
#include "solvers/svd/centered.hpp"

#include <algorithm>
#include <cmath>

#include "core/device.hpp"
#include "core/parallel.hpp"
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

namespace {
// Row chunks of A for the column sums: fixed by A's shape (not by the thread count), so that the
// sums, added chunk by chunk in order, are the same on every machine. Each chunk holds n partial
// sums and counts (16·n bytes): at most 64 chunks and 256 MiB of them.
std::int64_t column_chunks_of(const Csr<double>& a) {
  const std::int64_t by_rows = (a.nrows + 16383) / 16384;
  const std::int64_t by_memory = (std::int64_t(1) << 24) / std::max<std::int64_t>(1, a.ncols);
  return std::clamp<std::int64_t>(std::min(by_rows, by_memory), 1, 64);
}

// Σ over the chunks of f(chunk, r0, r1), the chunks in parallel, each returning its own n sums.
template <class F>
std::vector<double> sum_over_chunks(const Csr<double>& a, F&& f) {
  const std::int64_t c = column_chunks_of(a), n = a.ncols;
  std::vector<double> part(static_cast<std::size_t>(c * n), 0.0);
  parallel_for(c, [&](std::int64_t t) { f(part.data() + t * n, a.nrows * t / c, a.nrows * (t + 1) / c); }, 1);
  std::vector<double> total(part.begin(), part.begin() + n);
  for (std::int64_t t = 1; t < c; ++t)
    for (std::int64_t j = 0; j < n; ++j) total[j] += part[t * n + j];
  return total;
}
}  // namespace

std::vector<double> column_means(const Csr<double>& a) {
  std::vector<double> mu = sum_over_chunks(a, [&](double* s, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p) s[a.col_idx[p]] += a.values[p];
  });
  const double inv = a.nrows > 0 ? 1.0 / static_cast<double>(a.nrows) : 0.0;
  for (double& v : mu) v *= inv;
  return mu;
}

std::vector<double> centered_column_sq(const Csr<double>& a, const std::vector<double>& mu) {
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(mu.size()) == a.ncols,
                  "centered_column_sq: one mean per column of A (" + std::to_string(a.ncols) + ")");
  // per column j: the stored entries' Σ (a_ij − μ_j)² and their count nnz_j (as a double)
  std::vector<double> sq = sum_over_chunks(a, [&](double* s, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p) {
      const double d = a.values[p] - mu[a.col_idx[p]];
      s[a.col_idx[p]] += d * d;
    }
  });
  const std::vector<double> count = sum_over_chunks(a, [&](double* s, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p) s[a.col_idx[p]] += 1.0;
  });
  for (std::int64_t j = 0; j < a.ncols; ++j) sq[j] += (static_cast<double>(a.nrows) - count[j]) * mu[j] * mu[j];
  return sq;
}

double centered_frobenius_sq(const Csr<double>& a, const std::vector<double>& mu) {
  double total = 0;
  for (double v : centered_column_sq(a, mu)) total += v;
  return total;
}

std::vector<double> column_scales(const std::vector<double>& column_sq, std::int64_t m) {
  std::vector<double> s(column_sq.size(), 1.0);
  if (m < 2) return s;
  for (std::size_t j = 0; j < s.size(); ++j)
    if (const double sd = std::sqrt(column_sq[j] / static_cast<double>(m - 1)); sd > 0) s[j] = sd;
  return s;
}

Csr<double> scale_columns(const Csr<double>& a, const std::vector<double>& s) {
  TCSOLVE_REQUIRE(static_cast<std::int64_t>(s.size()) == a.ncols, "scale_columns: one scale per column");
  Csr<double> b = a;
  parallel_for(b.nrows, [&](std::int64_t i) {
    for (std::int64_t p = b.row_ptr[i]; p < b.row_ptr[i + 1]; ++p) b.values[p] /= s[b.col_idx[p]];
  }, 4096);
  return b;
}

}  // namespace tcsolve
