// The checks of a solve, on the host (solvers/solution_check.hpp). Traffic per block: one pass
// over A per 8 columns for the norms of R = B − A·X, formed row by row and never stored
// (multithreaded over row chunks and column groups); least squares also keeps R (one pass over A
// for it, one more for Aᵀ·R: one column of R per thread, scattered along A's rows).
#include "solvers/solution_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "solvers/solver_common.hpp"

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

namespace {

// ‖v‖₂ accumulated in one pass as LAPACK's dnrm2 does: v = scale·√ssq, every square taken
// relative to the largest |v_i| so far (no overflow for 1e200, no underflow for 1e-200). Two
// partial sums merge exactly the same way, so that chunked sums are as safe as one pass.
struct ScaledSsq {
  double scale = 0.0, ssq = 1.0;
  bool nan = false;
  void add(double v) {
    const double a = std::abs(v);
    if (a == 0.0) return;
    if (std::isnan(a)) {
      nan = true;
      return;
    }
    if (scale < a) {
      const double t = scale / a;
      ssq = 1.0 + ssq * t * t, scale = a;
    } else {
      const double t = a / scale;
      ssq += t * t;
    }
  }
  void merge(const ScaledSsq& o) {
    nan = nan || o.nan;
    if (o.scale == 0.0) return;
    if (scale < o.scale) {
      const double t = scale / o.scale;
      ssq = o.ssq + (scale == 0.0 ? 0.0 : ssq * t * t), scale = o.scale;
    } else {
      const double t = o.scale / scale;
      ssq += o.ssq * t * t;
    }
  }
  double norm() const {
    if (nan) return std::numeric_limits<double>::quiet_NaN();
    return std::isinf(scale) ? scale : scale * std::sqrt(ssq);
  }
};

// Rows per chunk and columns per group of the residual pass: fixed by the shape, not by the
// thread count, so that the merged sums (and the figures) are the same on any machine.
constexpr std::int64_t kCheckRows = 65536;
constexpr std::int64_t kCheckCols = 8;

// ‖b_j − A·x_j‖ and ‖b_j‖ for every column without the m × s residual block: one task per
// (group of kCheckCols columns, chunk of kCheckRows rows) forms the rows of R on the fly (A's
// chunk read once per group) and accumulates their scaled sums, merged in chunk order; ‖x_j‖ the
// same way over x's n rows.
void residual_norms(const Csr<double>& a, const double* b, std::int64_t ldb, const double* x, std::int64_t ldx,
                    std::int64_t s, std::vector<double>& r_norm, std::vector<double>& b_norm,
                    std::vector<double>& x_norm) {
  const std::int64_t m = a.nrows, n = a.ncols;
  const std::int64_t mc = std::max<std::int64_t>(1, (m + kCheckRows - 1) / kCheckRows);
  const std::int64_t nc = std::max<std::int64_t>(1, (n + kCheckRows - 1) / kCheckRows);
  const std::int64_t groups = (s + kCheckCols - 1) / kCheckCols;
  std::vector<ScaledSsq> rs(static_cast<std::size_t>(s * mc)), bs(rs.size()), xs(static_cast<std::size_t>(s * nc));
  parallel_for(groups * mc, [&](std::int64_t task) {
    const std::int64_t g = task / mc, c = task % mc;
    const std::int64_t j0 = g * kCheckCols, w = std::min(kCheckCols, s - j0);
    const std::int64_t i0 = c * kCheckRows, i1 = std::min(m, i0 + kCheckRows);
    double acc[kCheckCols];
    for (std::int64_t i = i0; i < i1; ++i) {
      std::fill(acc, acc + w, 0.0);
      for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
        const double v = a.values[p];
        const double* xk = x + a.col_idx[p] + j0 * ldx;
        for (std::int64_t jj = 0; jj < w; ++jj) acc[jj] += v * xk[jj * ldx];
      }
      for (std::int64_t jj = 0; jj < w; ++jj) {
        const double bi = b[i + (j0 + jj) * ldb];
        rs[(j0 + jj) * mc + c].add(bi - acc[jj]);
        bs[(j0 + jj) * mc + c].add(bi);
      }
    }
  }, 1);
  parallel_for(s * nc, [&](std::int64_t task) {
    const std::int64_t j = task / nc, c = task % nc;
    const std::int64_t i1 = std::min(n, (c + 1) * kCheckRows);
    for (std::int64_t i = c * kCheckRows; i < i1; ++i) xs[j * nc + c].add(x[i + j * ldx]);
  }, 1);
  for (std::int64_t j = 0; j < s; ++j) {
    for (std::int64_t c = 1; c < mc; ++c) rs[j * mc].merge(rs[j * mc + c]), bs[j * mc].merge(bs[j * mc + c]);
    for (std::int64_t c = 1; c < nc; ++c) xs[j * nc].merge(xs[j * nc + c]);
    r_norm[j] = rs[j * mc].norm(), b_norm[j] = bs[j * mc].norm(), x_norm[j] = xs[j * nc].norm();
  }
}

}  // namespace

void check_solution(const Csr<double>& a, const double* b, std::int64_t ldb, const double* x, std::int64_t ldx,
                    std::int64_t s, bool least_squares, SolveResult& r) {
  const std::int64_t m = a.nrows, n = a.ncols;
  TCSOLVE_REQUIRE(s >= 0 && s <= 2147483647, "check_solution: column count out of range");
  TCSOLVE_REQUIRE(ldb >= std::max<std::int64_t>(m, 1) && ldx >= std::max<std::int64_t>(n, 1),
                  "check_solution: leading dimension below the rows (ldb >= A.nrows, ldx >= A.ncols)");
  TCSOLVE_REQUIRE(s == 0 || (b && x), "check_solution: null block");
  const double a_norm = frobenius_norm(a);
  r.residual_norms.assign(s, 0.0);
  r.backward_errors.assign(s, 0.0);
  std::vector<double> r_norm(s), b_norm(s), x_norm(s);
  // R = B − A·X (m × s, ld m) kept for Aᵀ·R in least squares; otherwise only its norms.
  std::vector<double> res;
  if (least_squares) {
    res.resize(static_cast<std::size_t>(m) * static_cast<std::size_t>(s));
    residual_block(a, b, ldb, x, ldx, s, res.data());
    for (std::int64_t j = 0; j < s; ++j)
      r_norm[j] = norm2(res.data() + j * m, m), b_norm[j] = norm2(b + j * ldb, m), x_norm[j] = norm2(x + j * ldx, n);
  } else if (s > 0 && m > 0) {
    residual_norms(a, b, ldb, x, ldx, s, r_norm, b_norm, x_norm);
  }
  for (std::int64_t j = 0; j < s; ++j) {
    r.residual_norms[j] = b_norm[j] > 0.0 ? r_norm[j] / b_norm[j] : r_norm[j];
    const double scale = a_norm * x_norm[j] + b_norm[j];
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

std::vector<double> relative_residuals_in_space(const LinearOperator<double>& a, DenseBlockOps& ops,
                                                MvView<const double> b, MvView<const double> x,
                                                MvView<double> scratch, std::vector<double>* b_norms) {
  const std::int64_t s = b.cols;
  TCSOLVE_REQUIRE(a.rows() == a.cols() && b.rows == a.rows() && x.rows == a.cols() && x.cols == s &&
                      scratch.rows == b.rows && scratch.cols == s,
                  "relative_residuals_in_space: shapes differ");
  std::vector<double> rn(s), bn(s);
  if (s == 0) return rn;
  detail::apply_ordered(ApplyOrder::events, ops, a, x, scratch);
  const std::vector<double> one(static_cast<std::size_t>(s), 1.0), neg(static_cast<std::size_t>(s), -1.0);
  ops.axpby_columns(one.data(), b, neg.data(), scratch);  // R = B − A·X
  ops.column_norms(scratch, rn.data());
  ops.column_norms(b, bn.data());
  for (std::int64_t j = 0; j < s; ++j) rn[j] = bn[j] > 0.0 ? rn[j] / bn[j] : rn[j];
  if (b_norms) *b_norms = std::move(bn);
  return rn;
}

void check_solution_in_space(const LinearOperator<double>& a, double a_fro, DenseBlockOps& ops,
                             MvView<const double> b, MvView<const double> x, MvView<double> scratch,
                             SolveResult& r) {
  const std::int64_t s = b.cols;
  std::vector<double> bn;
  r.residual_norms = relative_residuals_in_space(a, ops, b, x, scratch, &bn);
  r.backward_errors.assign(s, 0.0);
  r.optimality.clear();
  if (s == 0) return;
  std::vector<double> xn(s);
  ops.column_norms(x, xn.data());
  for (std::int64_t j = 0; j < s; ++j) {
    const double rn = bn[j] > 0.0 ? r.residual_norms[j] * bn[j] : r.residual_norms[j];
    const double scale = a_fro * xn[j] + bn[j];
    r.backward_errors[j] = scale > 0.0 ? rn / scale : (rn == 0.0 ? 0.0 : rn);
  }
}

}  // namespace tcsolve
