// The checks of a solve, on the host (solvers/solution_check.hpp). Traffic per block: one pass
// over A for R = B − A·X (multithreaded over rows), one more for Aᵀ·R (least squares: one
// column of R per thread, scattered along A's rows), and the m × s residual block.
#include "solvers/solution_check.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace tcsolve {

namespace {

// ‖v‖₂ of n values, scaled by max |v_i| so that neither squares of 1e200 overflow nor squares of
// 1e-200 underflow (two passes over v). NaN when v holds one.
double norm2(const double* v, std::int64_t n) {
  double big = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double a = std::abs(v[i]);
    if (!(a <= big)) big = a;  // NaN sticks
  }
  if (big == 0.0 || !std::isfinite(big)) return big;
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = v[i] / big;
    sum += t * t;
  }
  return big * std::sqrt(sum);
}

// Z = Aᵀ·R (A: m × n; R: m × s, ld m; Z: n × s, ld n): column j of Z is Σ_i r_ij·(row i of A),
// one column per thread (each thread streams all of A once).
void transpose_times(const Csr<double>& a, const double* r, std::int64_t s, double* z) {
  const std::int64_t m = a.nrows, n = a.ncols;
  parallel_for(s, [&](std::int64_t j) {
    double* zj = z + j * n;
    const double* rj = r + j * m;
    std::fill(zj, zj + n, 0.0);
    for (std::int64_t i = 0; i < m; ++i) {
      const double ri = rj[i];
      if (ri == 0.0) continue;
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) zj[a.col_idx[p]] += a.values[p] * ri;
    }
  }, 1);
}

}  // namespace

double frobenius_norm(const Csr<double>& a) { return norm2(a.values.data(), a.nnz()); }

void residual_block(const Csr<double>& a, const double* b, std::int64_t ldb, const double* x, std::int64_t ldx,
                    std::int64_t s, double* r) {
  const std::int64_t m = a.nrows;
  if (s <= 0 || m == 0) return;
  csr_spmm_reference(a, x, ldx, r, m, static_cast<int>(s));
  parallel_for(s, [&](std::int64_t j) {
    for (std::int64_t i = 0; i < m; ++i) r[i + j * m] = b[i + j * ldb] - r[i + j * m];
  }, 1);
}

void check_solution(const Csr<double>& a, const double* b, std::int64_t ldb, const double* x, std::int64_t ldx,
                    std::int64_t s, bool least_squares, SolveResult& r) {
  const std::int64_t m = a.nrows, n = a.ncols;
  TCSOLVE_REQUIRE(s >= 0 && s <= 2147483647, "check_solution: column count out of range");
  TCSOLVE_REQUIRE(ldb >= std::max<std::int64_t>(m, 1) && ldx >= std::max<std::int64_t>(n, 1),
                  "check_solution: leading dimension below the rows (ldb >= A.nrows, ldx >= A.ncols)");
  TCSOLVE_REQUIRE(s == 0 || (b && x), "check_solution: null block");
  const double a_norm = frobenius_norm(a);
  // R = B − A·X (m × s, ld m).
  std::vector<double> res(static_cast<std::size_t>(m) * static_cast<std::size_t>(s));
  residual_block(a, b, ldb, x, ldx, s, res.data());
  r.residual_norms.assign(s, 0.0);
  r.backward_errors.assign(s, 0.0);
  std::vector<double> r_norm(s);
  for (std::int64_t j = 0; j < s; ++j) {
    r_norm[j] = norm2(res.data() + j * m, m);
    const double b_norm = norm2(b + j * ldb, m), x_norm = norm2(x + j * ldx, n);
    r.residual_norms[j] = b_norm > 0.0 ? r_norm[j] / b_norm : r_norm[j];
    const double scale = a_norm * x_norm + b_norm;
    // 0/0 (A = 0 or x = 0 with b = 0 and an exact residual) is a perfect answer; r ≠ 0 over 0
    // cannot happen (r = b − A·x vanishes when both terms do).
    r.backward_errors[j] = scale > 0.0 ? r_norm[j] / scale : (r_norm[j] == 0.0 ? 0.0 : r_norm[j]);
  }
  r.optimality.clear();
  if (!least_squares) return;
  // optimality_j = ‖Aᵀ·r_j‖ / (‖A‖_F·‖r_j‖): the cosine-like measure of how far r_j is from
  // being orthogonal to range(A) (0 for r_j = 0: an exact solution is a least-squares one).
  std::vector<double> z(static_cast<std::size_t>(n) * static_cast<std::size_t>(s));
  transpose_times(a, res.data(), s, z.data());
  r.optimality.assign(s, 0.0);
  for (std::int64_t j = 0; j < s; ++j) {
    const double scale = a_norm * r_norm[j];
    const double atr = norm2(z.data() + j * n, n);
    r.optimality[j] = scale > 0.0 ? atr / scale : (atr == 0.0 ? 0.0 : atr);
  }
}

}  // namespace tcsolve
