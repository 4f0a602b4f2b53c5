// Pairs, true residuals and the convergence tests of the eigs driver (solvers/eigs/pairs.hpp).
#include "solvers/eigs/pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/device.hpp"
#include "core/parallel.hpp"

namespace tcsolve::eigs_detail {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
std::string g17(double v) { return fmt("%.17g", v); }

bool is_diagonal(const Csr<double>& a) {
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      if (a.col_idx[p] != i && a.values[p] != 0.0) return false;
  return true;
}

TestNorms test_norms(ConvTest c, double a_norm, double b_norm) {
  switch (c) {
    case ConvTest::rel: return {1e-12 * a_norm, 1.0};
    case ConvTest::norm: return {a_norm, b_norm};
    case ConvTest::abs: return {1.0, 1e-300};
  }
  return {a_norm, b_norm};
}

void fenced_apply(DenseBlockOps& ops, const LinearOperator<double>& op, MvView<const double> x, MvView<double> y) {
  ops.synchronize();
  op.apply(x, y);
  if (ops.space() == Space::device) device_synchronize();
}

MvView<double> workspace_view(DenseBlockOps& ops, MultiVector<double>& m, std::int64_t n, std::int64_t cols) {
  if (m.cols() < cols) m = ops.allocate(n, cols);
  return m.columns(0, cols);
}

void LowRankUpdate::apply(MvView<const double> x, MvView<double> y) const {
  fenced_apply(ops_, op_, x, y);
  const std::int64_t m = w_.cols, s = x.cols;
  if (m == 0 || s == 0) return;
  g_.resize(m * s);
  ops_.gram(w_, x, g_.data(), m);
  for (std::int64_t j = 0; j < s; ++j)
    for (std::int64_t i = 0; i < m; ++i) g_[i + j * m] *= c_[i];
  ops_.gemm(1.0, u_, g_.data(), m, 1.0, y);
  ops_.synchronize();
}

// B-normalizes X in place (xᵀBx = 1), sets λ to the Rayleigh quotients — or to `given` values
// where those are more accurate (a Rayleigh quotient computed in double loses ~u·|x|ᵀ|A||x| to
// cancellation, ≫ u·λ for the small eigenvalues of ill-conditioned A; σ + 1/θ from a shift-invert
// Ritz value θ does not) — and computes the true residuals. rq_dev = |λ − Rayleigh quotient|.
// ax, bx: n × m work blocks (bx unused without B).
void rayleigh_and_residuals(const Problem& s, detail::ApplyClock& clock, MvView<double> x,
                            MvView<double> ax, MvView<double> bx, std::vector<double>& lam,
                            std::vector<double>& rn, std::vector<double>& xn,
                            std::vector<double>& rq_dev, const std::vector<double>* given) {
  DenseBlockOps& ops = *s.ops;
  const std::int64_t m = x.cols;
  lam.resize(m), rn.resize(m), xn.resize(m), rq_dev.assign(m, 0.0);
  std::vector<double> xbx(m), xax(m), scale(m), zero(m, 0.0), neg(m), one(m, 1.0);
  auto BX = s.bop ? MvView<const double>(bx) : MvView<const double>(x);
  if (s.bop) clock.apply(*s.bop, x, bx);
  ops.column_dots(x, BX, xbx.data());
  for (std::int64_t j = 0; j < m; ++j) scale[j] = xbx[j] > 0 ? 1.0 / std::sqrt(xbx[j]) : 1.0;
  ops.axpby_columns(scale.data(), x, zero.data(), x);
  if (s.bop) ops.axpby_columns(scale.data(), bx, zero.data(), bx);
  clock.apply(*s.aop, x, ax);
  ops.queue().column_dots_deferred(x, ax, xax.data());
  ops.queue().column_dots_deferred(x, BX, xbx.data());
  ops.queue().fetch();
  for (std::int64_t j = 0; j < m; ++j) {
    lam[j] = xax[j] / xbx[j];
    if (given && std::isfinite((*given)[j])) {
      rq_dev[j] = std::abs((*given)[j] - lam[j]);
      lam[j] = (*given)[j];
    }
    neg[j] = -lam[j];
  }
  ops.axpby_columns(neg.data(), BX, one.data(), ax);  // ax ← A·x − λ·B·x
  ops.column_norms(ax, rn.data());
  // The test's scale (PairSet::xn): ‖B·x‖ for rel with B, else ‖x‖.
  ops.column_norms(s.conv == ConvTest::rel && s.bop ? BX : MvView<const double>(x), xn.data());
}

double bound_of(ConvTest c, double tol, double lam, double xn, const Problem& s) {
  TestNorms t = test_norms(c, s.a_norm, s.b_norm);
  return tol * (t.a_eff + std::abs(lam) * t.b_eff) * xn;
}

// u·‖|A|·|x| + |λ|·|B|·|x|‖₂ (host CSR, host x): the rounding error of computing the residual
// itself. A measured residual below it cannot be told apart from that of an exact pair.
double attainable_floor(double lam, double xn, const Problem& s) {
  return kUnitRoundoff * (s.a_norm + std::abs(lam) * s.b_norm) * xn;
}

double zero_scale(const Problem& s) {
  const double bound = s.a_norm * s.binv_norm;
  return std::cbrt(kUnitRoundoff * kUnitRoundoff) * (s.radius > 0 ? std::min(s.radius, bound) : bound);
}

double zero_floor(double lam, double x_norm, const Problem& s) {
  return kZeroFloorFactor * kUnitRoundoff * (s.a_norm + std::abs(lam) * s.b_norm) * x_norm;
}

double residual_floor(const Problem& s, const double* x, double lam) {
  constexpr double u = kUnitRoundoff;
  const Csr<double>& a = *s.a;
  double sum = 0.0;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    double t = 0.0;
    for (std::int64_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
      t += std::abs(a.values[p] * x[a.col_idx[p]]);
    if (s.b) {
      double tb = 0.0;
      for (std::int64_t p = s.b->row_ptr[i]; p < s.b->row_ptr[i + 1]; ++p)
        tb += std::abs(s.b->values[p] * x[s.b->col_idx[p]]);
      t += std::abs(lam) * tb;
    } else {
      t += std::abs(lam * x[i]);
    }
    sum += t * t;
  }
  return 10.0 * u * std::sqrt(sum);
}

// Rayleigh quotient ρ and residual ‖A·x − ρ·B·x‖ in extended precision (host CSR, long double
// accumulation): free of the cancellation that costs a double-precision quotient ~u·|x|ᵀ|A||x|
// (≫ u·λ for the small eigenvalues of ill-conditioned A), and of most of the rounding in the
// residual. The quotient of a vector with residual r is within ‖r‖²_{B⁻¹}/gap of an eigenvalue
// (Kato–Temple). Matrix form only.
void extended_pair(const Problem& s, const double* x, double& rho_out, double& rn_out) {
  using LD = long double;
  const std::int64_t n = s.n;
  std::vector<LD> ax(n), bx(n);
  LD xax = 0, xbx = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    LD t = 0;
    for (std::int64_t p = s.a->row_ptr[i]; p < s.a->row_ptr[i + 1]; ++p) t += LD(s.a->values[p]) * x[s.a->col_idx[p]];
    ax[i] = t;
    LD tb = x[i];
    if (s.b) {
      tb = 0;
      for (std::int64_t p = s.b->row_ptr[i]; p < s.b->row_ptr[i + 1]; ++p) tb += LD(s.b->values[p]) * x[s.b->col_idx[p]];
    }
    bx[i] = tb;
    xax += x[i] * t;
    xbx += x[i] * tb;
  }
  const LD rho = xax / xbx;
  LD r2 = 0;
  for (std::int64_t i = 0; i < n; ++i) r2 += (ax[i] - rho * bx[i]) * (ax[i] - rho * bx[i]);
  rho_out = static_cast<double>(rho);
  rn_out = static_cast<double>(std::sqrt(r2));
}

std::vector<std::int64_t> pairs_to_refine(const Problem& s, double tol, const std::vector<double>& lam,
                                          const std::vector<double>& x2) {
  std::vector<std::int64_t> which;
  if (!s.a) return which;
  const double rel = std::max(1e-13, 1e-3 * tol);
  for (std::size_t j = 0; j < lam.size(); ++j)
    if (kUnitRoundoff * (s.a_norm + std::abs(lam[j]) * s.b_norm) * x2[j] > rel * std::abs(lam[j]))
      which.push_back(static_cast<std::int64_t>(j));
  return which;
}

void refine_rayleigh(const Problem& s, const std::vector<const double*>& cols, const std::vector<std::int64_t>& which,
                     const std::vector<double>& x2, std::vector<double>& lam, std::vector<double>& rn,
                     std::vector<double>& rq_dev) {
  std::vector<char> refined(lam.size(), 0);
  for (std::int64_t j : which) refined[j] = 1;
  for (std::size_t j = 0; j < lam.size(); ++j)
    if (!refined[j]) rq_dev[j] += 10.0 * kUnitRoundoff * (s.a_norm + std::abs(lam[j]) * s.b_norm) * x2[j];
  parallel_for(static_cast<std::int64_t>(which.size()), [&](std::int64_t i) {
    const std::int64_t j = which[i];
    extended_pair(s, cols[i], lam[j], rn[j]);
    rq_dev[j] = 0.0;
  }, 1);
}

// What the convergence test allows each pair: tol·(…)·‖x‖, or — for a pair whose residual is at
// the rounding level of its own computation (matrix form only) — that level. Returns whether all
// pairs pass.
bool test_pairs(const Problem& s, const EigsOptions& opt, MvView<const double> x,
                std::vector<double>& lam, std::vector<double>& rn, const std::vector<double>& xn,
                std::vector<double>& bounds, std::vector<char>* floored) {
  const std::int64_t m = static_cast<std::int64_t>(lam.size());
  bounds.resize(m);
  if (floored) floored->assign(m, 0);
  bool all = m > 0;
  std::vector<double> host;
  // rel at λ ≈ 0: the floor (zero_floor) on ‖x‖₂, which is xn itself without B.
  auto floor_at_zero = [&](std::int64_t j) {
    if (opt.conv != ConvTest::rel || !(std::abs(lam[j]) <= zero_scale(s))) return 0.0;
    double x_norm = xn[j];
    if (s.bop) s.ops->column_norms(x.columns(j, 1), &x_norm);
    return zero_floor(lam[j], x_norm, s);
  };
  for (std::int64_t j = 0; j < m; ++j) {
    bounds[j] = bound_of(opt.conv, opt.tol, lam[j], xn[j], s);
    if (const double zf = floor_at_zero(j); zf > bounds[j]) {
      bounds[j] = zf;
      if (floored) (*floored)[j] = 1;
    }
    if (!(rn[j] <= bounds[j]) && std::isfinite(rn[j]) && s.a) {
      // A failing pair in matrix form: measure it again in extended precision (λ and residual),
      // and allow the rounding level of the residual's own computation.
      host.resize(s.n);
      s.ops->to_host(x.columns(j, 1), host.data(), s.n);
      double rho = lam[j], r_ext = rn[j];
      extended_pair(s, host.data(), rho, r_ext);
      if (r_ext < rn[j]) lam[j] = rho, rn[j] = r_ext;
      const double zf = floor_at_zero(j), rf = residual_floor(s, host.data(), lam[j]);
      bounds[j] = std::max({bound_of(opt.conv, opt.tol, lam[j], xn[j], s), zf, rf});
      if (floored) (*floored)[j] = zf > 0 && bounds[j] == zf && rf < zf;
    }
    all = all && std::isfinite(rn[j]) && rn[j] <= bounds[j];
  }
  return all;
}

// Order of the wanted values: ascending (smallest, both_ends), descending (largest), by |λ − σ|
// (nearest), by |λ| descending (largest_magnitude) or ascending (smallest_magnitude).
std::vector<std::int64_t> wanted_order(const std::vector<double>& v, Which w, double sigma) {
  std::vector<std::int64_t> o(v.size());
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](std::int64_t x, std::int64_t y) {
    switch (w) {
      case Which::smallest:
      case Which::both_ends: return v[x] < v[y];
      case Which::largest: return v[x] > v[y];
      case Which::largest_magnitude: return std::abs(v[x]) > std::abs(v[y]);
      case Which::smallest_magnitude: return std::abs(v[x]) < std::abs(v[y]);
      default: return std::abs(v[x] - sigma) < std::abs(v[y] - sigma);
    }
  });
  return o;
}

// Columns of `src` (n × m) in `order` into a fresh block.
MultiVector<double> reorder_columns(DenseBlockOps& ops, MvView<const double> src,
                                    const std::vector<std::int64_t>& order) {
  MultiVector<double> out = ops.allocate(src.rows, static_cast<std::int64_t>(order.size()));
  ops.gather_columns(src, order.data(), static_cast<std::int64_t>(order.size()), out.view());
  return out;
}

// Merges found pairs and new pairs (both in the ops space), keeps the k best in wanted order.
PairSet merge_pairs(DenseBlockOps& ops, PairSet& a, PairSet& b, std::int64_t k, Which w,
                    double sigma) {
  const std::int64_t ma = a.x.cols(), mb = b.x.cols(), n = a.x.rows();
  MultiVector<double> both = ops.allocate(n, ma + mb);
  if (ma) ops.copy(a.x.view(), both.columns(0, ma));
  if (mb) ops.copy(b.x.view(), both.columns(ma, mb));
  std::vector<double> v = a.values, rn = a.rn, xn = a.xn, dv = a.rq_dev;
  v.insert(v.end(), b.values.begin(), b.values.end());
  rn.insert(rn.end(), b.rn.begin(), b.rn.end());
  xn.insert(xn.end(), b.xn.begin(), b.xn.end());
  dv.insert(dv.end(), b.rq_dev.begin(), b.rq_dev.end());
  auto o = wanted_order(v, w, sigma);
  o.resize(std::min<std::int64_t>(k, static_cast<std::int64_t>(o.size())));
  PairSet out;
  out.x = reorder_columns(ops, both.view(), o);
  for (auto i : o)
    out.values.push_back(v[i]), out.rn.push_back(rn[i]), out.xn.push_back(xn[i]),
        out.rq_dev.push_back(dv[i]);
  return out;
}


std::vector<double> error_bounds(const Problem& s, const std::vector<double>& v,
                                 const std::vector<double>& rn, const std::vector<double>& rq_dev) {
  const std::size_t k = v.size();
  std::vector<double> eb(k);
  for (std::size_t j = 0; j < k; ++j) {
    const double e = rn[j] * std::sqrt(s.binv_norm);
    double gap = INFINITY;
    for (std::size_t i = 0; i < k; ++i)
      if (i != j && std::abs(v[i] - v[j]) > 2 * e) gap = std::min(gap, std::abs(v[i] - v[j]));
    eb[j] = (std::isfinite(gap) ? std::min(e, e * e / gap) : e) + (j < rq_dev.size() ? rq_dev[j] : 0.0);
  }
  return eb;
}

// Half-width of the window around a value that the certificate treats as "the same value":
// 1e-8 relative (values closer than that are one cluster), at least 10 error bounds and the
// absolute resolution u·‖A‖·‖B⁻¹‖ of the problem in double precision.
double cert_width(const Problem& s, const PairSet& p, std::int64_t j) {
  const double eb = error_bounds(s, p.values, p.rn, p.rq_dev)[j];
  return std::max({1e-8 * std::abs(p.values[j]), 10.0 * eb, 1.1e-15 * s.a_norm * s.binv_norm});
}

// The k smallest (lower = true) or largest: with count(τ) the eigenvalues strictly beyond τ on the
// wanted side (Sylvester: below τ = negative pivots of A − τB; above = n − below),
//   τ_out = μ_k ± w past the k-th value: count = k ⇒ nothing is missing: certified;
//   count > k: more eigenvalues within w of μ_k (copies of the k-th value beyond k) or missing
//   ones; τ_in = the near edge of μ_k's cluster ∓ w decides: its count must equal the number of

}  // namespace tcsolve::eigs_detail
