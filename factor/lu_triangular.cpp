// Host triangular solves of an extracted LU (factor/lu_triangular.hpp). Each pass runs over a
// chunk of S columns held row-major (w[k·S + c]): an entry of L or U costs one load of its row of
// the chunk and S fused updates, which the compiler vectorizes at S = 8, 4, 2.
#include "factor/lu_triangular.hpp"

#include <cmath>

#include "core/error.hpp"

namespace tcsolve::detail {

void LuFactors::set_pivot_reciprocals() {
  u_inv.resize(u_diag.size());
  divide = false;
  for (std::size_t k = 0; k < u_diag.size(); ++k) {
    u_inv[k] = 1.0 / u_diag[k];
    if (!std::isfinite(u_inv[k])) divide = true;
  }
}

namespace {

// W(k, :) = r[P[k]]·B(P[k], :) (the pivot rows, scaled), or B(Q[k], :) for the transposed system.
template <int S>
void gather(const LuFactors& f, MvView<const double> b, std::int64_t c0, bool transpose, double* w) {
  const std::int64_t n = f.n, ld = b.ld;
  const double* b0 = b.data + c0 * ld;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = transpose ? f.q[k] : f.p[k];
    const double s = transpose ? 1.0 : f.r[i];
    for (int c = 0; c < S; ++c) w[k * S + c] = s * b0[i + c * ld];
  }
}

// X(Q[k], :) = W(k, :), or X(P[k], :) = r[P[k]]·W(k, :) for the transposed system.
template <int S>
void scatter(const LuFactors& f, const double* w, std::int64_t c0, bool transpose, MvView<double> x) {
  const std::int64_t n = f.n, ld = x.ld;
  double* x0 = x.data + c0 * ld;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = transpose ? f.p[k] : f.q[k];
    const double s = transpose ? f.r[i] : 1.0;
    for (int c = 0; c < S; ++c) x0[i + c * ld] = s * w[k * S + c];
  }
}

// L·Z = W in place (L unit lower by rows): Z(k) = W(k) − Σ_{j<k} L(k, j)·Z(j).
template <int S>
void lower_rows(const LuFactors& f, double* w) {
  for (std::int64_t k = 0; k < f.n; ++k) {
    double acc[S];
    for (int c = 0; c < S; ++c) acc[c] = w[k * S + c];
    for (std::int64_t p = f.lp[k]; p < f.lp[k + 1]; ++p) {
      const double v = f.lx[p];
      const double* wj = w + static_cast<std::int64_t>(f.lj[p]) * S;
      for (int c = 0; c < S; ++c) acc[c] -= v * wj[c];
    }
    for (int c = 0; c < S; ++c) w[k * S + c] = acc[c];
  }
}

// The pivot's division: by its reciprocal, 4 cycles on the solve's dependency chain against
// divsd's ~14, unless a reciprocal overflows (LuFactors::divide).
template <bool Divide>
inline double by_pivot(const LuFactors& f, std::int64_t k, double v) {
  return Divide ? v / f.u_diag[k] : v * f.u_inv[k];
}

// U·Y = Z in place (U by rows, strictly upper part and its diagonal): Y(k) = (Z(k) − Σ_{j>k} U(k, j)·Y(j)) / U(k, k).
template <int S, bool Divide>
void upper_rows(const LuFactors& f, double* w) {
  for (std::int64_t k = f.n - 1; k >= 0; --k) {
    double acc[S];
    for (int c = 0; c < S; ++c) acc[c] = w[k * S + c];
    for (std::int64_t p = f.up[k]; p < f.up[k + 1]; ++p) {
      const double v = f.ux[p];
      const double* wj = w + static_cast<std::int64_t>(f.uj[p]) * S;
      for (int c = 0; c < S; ++c) acc[c] -= v * wj[c];
    }
    for (int c = 0; c < S; ++c) w[k * S + c] = by_pivot<Divide>(f, k, acc[c]);
  }
}

// Uᵀ·Z = W in place, by U's rows: Z(k) = W(k) / U(k, k), then W(j) −= U(k, j)·Z(k) for j > k.
template <int S, bool Divide>
void upper_transposed(const LuFactors& f, double* w) {
  for (std::int64_t k = 0; k < f.n; ++k) {
    double z[S];
    for (int c = 0; c < S; ++c) z[c] = w[k * S + c] = by_pivot<Divide>(f, k, w[k * S + c]);
    for (std::int64_t p = f.up[k]; p < f.up[k + 1]; ++p) {
      const double v = f.ux[p];
      double* wj = w + static_cast<std::int64_t>(f.uj[p]) * S;
      for (int c = 0; c < S; ++c) wj[c] -= v * z[c];
    }
  }
}

// Lᵀ·V = Z in place, by L's rows: V(k) = Z(k), then W(j) −= L(k, j)·V(k) for j < k.
template <int S>
void lower_transposed(const LuFactors& f, double* w) {
  for (std::int64_t k = f.n - 1; k >= 0; --k) {
    double y[S];
    for (int c = 0; c < S; ++c) y[c] = w[k * S + c];
    for (std::int64_t p = f.lp[k]; p < f.lp[k + 1]; ++p) {
      const double v = f.lx[p];
      double* wj = w + static_cast<std::int64_t>(f.lj[p]) * S;
      for (int c = 0; c < S; ++c) wj[c] -= v * y[c];
    }
  }
}

template <int S>
void chunk(const LuFactors& f, MvView<const double> b, MvView<double> x, std::int64_t c0, bool transpose, double* w) {
  gather<S>(f, b, c0, transpose, w);
  if (transpose) {
    if (f.divide) upper_transposed<S, true>(f, w);
    else upper_transposed<S, false>(f, w);
    lower_transposed<S>(f, w);
  } else {
    lower_rows<S>(f, w);
    if (f.divide) upper_rows<S, true>(f, w);
    else upper_rows<S, false>(f, w);
  }
  scatter<S>(f, w, c0, transpose, x);
}

}  // namespace

void lu_solve(const LuFactors& f, MvView<const double> b, MvView<double> x, bool transpose, double* work) {
  TCSOLVE_REQUIRE(b.space == Space::host && x.space == Space::host, "lu_solve: host blocks");
  TCSOLVE_REQUIRE(b.rows == f.n && x.rows == f.n && b.cols == x.cols, "lu_solve: shapes");
  static_assert(kLuChunk == 8, "the widths below");
  std::int64_t c0 = 0;
  for (; c0 + 8 <= b.cols; c0 += 8) chunk<8>(f, b, x, c0, transpose, work);
  if (c0 + 4 <= b.cols) chunk<4>(f, b, x, c0, transpose, work), c0 += 4;
  if (c0 + 2 <= b.cols) chunk<2>(f, b, x, c0, transpose, work), c0 += 2;
  if (c0 < b.cols) chunk<1>(f, b, x, c0, transpose, work);
}

}  // namespace tcsolve::detail
