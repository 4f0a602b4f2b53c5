// The eigs() driver (solvers/eigs.hpp): method and transformation choice, the run, true
// residuals with the chosen test, error bounds, Sylvester certificates and the multiplicity
// re-check.
//
// Shift-invert (Op = T = (A − σB)⁻¹·B, B-self-adjoint, eigenvalues ν = 1/(λ − σ)): thick-restart
// block Lanczos (detail::lanczos_core) selects the largest |ν|. A Ritz pair (ν, x) is verified on
// the purified vector x̂ = T·x/ν (ARPACK's mode-3 refinement): (A − λB)·x̂ = −B·r_T/ν² with
// r_T = T·x − ν·x, so the original residual is ‖B·r_T‖/ν², free of the ‖A‖·|λ − σ| amplification
// that x itself would carry. λ is the Rayleigh quotient x̂ᵀAx̂ / x̂ᵀBx̂ and the true residual
// ‖A·x̂ − λ·B·x̂‖ is recomputed with A and B before anything is called converged.
//
// Certificate (Sylvester): with LDLᵀ = A − τB (MUMPS, pivoting), the negative pivots count the
// eigenvalues below τ. For the k smallest μ₁ ≤ … ≤ μ_k (each within its error bound e_j of a
// distinct true eigenvalue, since the x_j are B-orthonormal with small residuals):
//   τ_hi = μ_k + w: count(τ_hi) = k  ⇒ no eigenvalue below τ_hi is missing: certified;
//   count(τ_hi) > k: more eigenvalues within w of μ_k (copies of the k-th value beyond k) or
//   missing ones; τ_lo = (the lowest μ in μ_k's cluster) − w decides: count(τ_lo) must equal the
//   number of returned μ below τ_lo. Missing eigenvalues are searched for with a deflated run
//   (T restricted by Wielandt deflation of the found pairs), added, and the set re-certified.
// `nearest` certifies the interval [σ − r, σ + r] (r = the largest |μ − σ|) the same way at both
// ends. Without a factorization, a re-check with a fresh random block on A + δ·(BX)(BX)ᵀ (the
// found pairs pushed out of the wanted end) must find nothing beyond the k-th value; otherwise
// the status is `unverified`.
#include "solvers/eigs.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/parallel.hpp"
#include "factor/shift_invert.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/lanczos_core.hpp"
#include "solvers/solver_common.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve {

const char* to_string(ConvTest c) {
  switch (c) {
    case ConvTest::rel: return "rel";
    case ConvTest::norm: return "norm";
    case ConvTest::abs: return "abs";
  }
  return "?";
}

ConvTest parse_conv_test(const std::string& s) {
  if (s == "rel") return ConvTest::rel;
  if (s == "norm") return ConvTest::norm;
  if (s == "abs") return ConvTest::abs;
  throw InvalidArgument("convergence test '" + s + "': expected rel, norm or abs");
}

const char* to_string(Certified c) {
  switch (c) {
    case Certified::yes: return "yes";
    case Certified::no: return "no";
    case Certified::not_checked: return "not_checked";
  }
  return "?";
}

namespace {

using Mat = Eigen::MatrixXd;

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

// The convergence test as the solvers' formula ‖r‖ ≤ tol·(a_eff + |θ|·b_eff)·‖x‖:
//   rel  (1e-12·‖A‖, 1)   norm (‖A‖, ‖B‖)   abs (1, 0).
struct TestNorms {
  double a_eff, b_eff;
};
TestNorms test_norms(ConvTest c, double a_norm, double b_norm) {
  switch (c) {
    case ConvTest::rel: return {1e-12 * a_norm, 1.0};
    case ConvTest::norm: return {a_norm, b_norm};
    case ConvTest::abs: return {1.0, 1e-300};
  }
  return {a_norm, b_norm};
}

// y = op(x) + U·diag(c)·(Wᵀ·x): Wielandt / shift deflation of found pairs, as an operator in
// ops.space() (U, W: n × m blocks owned by the caller).
class LowRankUpdate final : public LinearOperator<double> {
 public:
  LowRankUpdate(const LinearOperator<double>& op, DenseBlockOps& ops, MvView<const double> u,
                MvView<const double> w, std::vector<double> c)
      : op_(op), ops_(ops), u_(u), w_(w), c_(std::move(c)) {}
  std::int64_t rows() const override { return op_.rows(); }
  std::int64_t cols() const override { return op_.cols(); }
  Space space() const override { return op_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override {
    ops_.synchronize();
    op_.apply(x, y);
    if (ops_.space() == Space::device) device_synchronize();
    const std::int64_t m = w_.cols, s = x.cols;
    if (m == 0 || s == 0) return;
    g_.resize(m * s);
    ops_.gram(w_, x, g_.data(), m);
    for (std::int64_t j = 0; j < s; ++j)
      for (std::int64_t i = 0; i < m; ++i) g_[i + j * m] *= c_[i];
    ops_.gemm(1.0, u_, g_.data(), m, 1.0, y);
    ops_.synchronize();
  }

 private:
  const LinearOperator<double>& op_;
  DenseBlockOps& ops_;
  MvView<const double> u_, w_;
  std::vector<double> c_;
  mutable std::vector<double> g_;
};

// Everything a run needs about the problem.
struct Setup {
  const Csr<double>* a = nullptr;  // host matrices (matrix form only)
  const Csr<double>* b = nullptr;
  const LinearOperator<double>* aop = nullptr;  // in ops.space()
  const LinearOperator<double>* bop = nullptr;
  DenseBlockOps* ops = nullptr;
  std::int64_t n = 0;
  double a_norm = 0, b_norm = 1, binv_norm = 1;  // ‖A‖, ‖B‖, ‖B⁻¹‖ (estimates or bounds)
  ConvTest conv = ConvTest::rel;
  std::vector<double> diag_a, diag_b;
};

// A set of pairs in the ops space with its true residuals.
struct PairSet {
  std::vector<double> values;
  MultiVector<double> x;       // n × m, B-orthonormal
  // ‖A·x − λ·B·x‖₂, and the norm the convergence test scales with: ‖B·x‖₂ for rel (so that
  // the test is invariant under B → c·B, λ → λ/c; ‖x‖₂ when B = I), ‖x‖₂ for norm and abs.
  std::vector<double> rn, xn;
  std::vector<double> rq_dev;  // |λ − xᵀAx/xᵀBx| (0 when λ is the Rayleigh quotient)
};

// B-normalizes X in place (xᵀBx = 1), sets λ to the Rayleigh quotients — or to `given` values
// where those are more accurate (a Rayleigh quotient computed in double loses ~u·|x|ᵀ|A||x| to
// cancellation, ≫ u·λ for the small eigenvalues of ill-conditioned A; σ + 1/θ from a shift-invert
// Ritz value θ does not) — and computes the true residuals. rq_dev = |λ − Rayleigh quotient|.
// ax, bx: n × m work blocks (bx unused without B).
void rayleigh_and_residuals(const Setup& s, detail::ApplyClock& clock, MvView<double> x,
                            MvView<double> ax, MvView<double> bx, std::vector<double>& lam,
                            std::vector<double>& rn, std::vector<double>& xn,
                            std::vector<double>& rq_dev, const std::vector<double>* given = nullptr) {
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
  ops.column_dots_deferred(x, ax, xax.data());
  ops.column_dots_deferred(x, BX, xbx.data());
  ops.fetch();
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

double bound_of(ConvTest c, double tol, double lam, double xn, const Setup& s) {
  TestNorms t = test_norms(c, s.a_norm, s.b_norm);
  return tol * (t.a_eff + std::abs(lam) * t.b_eff) * xn;
}

// u·‖|A|·|x| + |λ|·|B|·|x|‖₂ (host CSR, host x): the rounding error of computing the residual
// itself. A measured residual below it cannot be told apart from that of an exact pair.
double residual_floor(const Setup& s, const double* x, double lam) {
  constexpr double u = 1.1102230246251565e-16;
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
void extended_pair(const Setup& s, const double* x, double& rho_out, double& rn_out) {
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

// Extended-precision quotients and residuals for the pairs whose double-precision quotient may
// have lost more than 1e-13 relative (u·(‖A‖ + |λ|·‖B‖)·‖x‖² > 1e-13·|λ|).
void refine_rayleigh(const Setup& s, const std::vector<double>& vectors, std::vector<double>& lam,
                     std::vector<double>& rn, std::vector<double>& rq_dev) {
  if (!s.a) return;
  constexpr double u = 1.1102230246251565e-16;
  const std::int64_t n = s.n, k = static_cast<std::int64_t>(lam.size());
  parallel_for(k, [&](std::int64_t j) {
    const double* x = vectors.data() + j * n;
    double x2 = 0;
    for (std::int64_t i = 0; i < n; ++i) x2 += x[i] * x[i];
    if (!(u * (s.a_norm + std::abs(lam[j]) * s.b_norm) * x2 > 1e-13 * std::abs(lam[j]))) return;
    extended_pair(s, x, lam[j], rn[j]);
    rq_dev[j] = 0.0;
  }, 1);
}

// What the convergence test allows each pair: tol·(…)·‖x‖, or — for a pair whose residual is at
// the rounding level of its own computation (matrix form only) — that level. Returns whether all
// pairs pass.
bool test_pairs(const Setup& s, const EigsOptions& opt, MvView<const double> x,
                std::vector<double>& lam, std::vector<double>& rn, const std::vector<double>& xn,
                std::vector<double>& bounds) {
  const std::int64_t m = static_cast<std::int64_t>(lam.size());
  bounds.resize(m);
  bool all = m > 0;
  std::vector<double> host;
  for (std::int64_t j = 0; j < m; ++j) {
    bounds[j] = bound_of(opt.conv, opt.tol, lam[j], xn[j], s);
    if (!(rn[j] <= bounds[j]) && std::isfinite(rn[j]) && s.a) {
      // A failing pair in matrix form: measure it again in extended precision (λ and residual),
      // and allow the rounding level of the residual's own computation.
      host.resize(s.n);
      s.ops->to_host(x.columns(j, 1), host.data(), s.n);
      double rho = lam[j], r_ext = rn[j];
      extended_pair(s, host.data(), rho, r_ext);
      if (r_ext < rn[j]) lam[j] = rho, rn[j] = r_ext;
      bounds[j] = std::max(bound_of(opt.conv, opt.tol, lam[j], xn[j], s),
                           residual_floor(s, host.data(), lam[j]));
    }
    all = all && std::isfinite(rn[j]) && rn[j] <= bounds[j];
  }
  return all;
}

// Order of the wanted values: ascending (smallest), descending (largest), by |λ − σ| (nearest).
std::vector<std::int64_t> wanted_order(const std::vector<double>& v, Which w, double sigma) {
  std::vector<std::int64_t> o(v.size());
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](std::int64_t x, std::int64_t y) {
    switch (w) {
      case Which::smallest: return v[x] < v[y];
      case Which::largest: return v[x] > v[y];
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

// Sylvester counts through MUMPS; a τ that lands on an eigenvalue is nudged.
std::int64_t count_below(const Setup& s, double tau, double nudge, int* factorizations,
                         double* seconds) {
  const double t0 = detail::now_seconds();
  for (int attempt = 0;; ++attempt) {
    try {
      ++*factorizations;
      const std::int64_t c = inertia_at(*s.a, s.b, tau).negative;
      *seconds += detail::now_seconds() - t0;
      return c;
    } catch (const SingularShift&) {
      if (attempt >= 3) throw;
      tau += nudge * (attempt + 1);
    }
  }
}

struct Certificate {
  Certified state = Certified::not_checked;
  std::string detail;
  std::int64_t missing = 0;  // eigenvalues known to be missing from the set
  int factorizations = 0;
  double seconds = 0;
};

// Error bounds of a set: e_j = ‖r_j‖_{B⁻¹} ≤ ‖r_j‖₂·√‖B⁻¹‖ (x B-normalized; |λ − μ| ≤ e_j for
// some eigenvalue λ), sharpened to e_j²/gap_j (Kato–Temple) where the gap to the nearest other
// computed value outside the pair's cluster is known.
// (+ |λ − Rayleigh quotient| where λ is not the Rayleigh quotient).
std::vector<double> error_bounds(const Setup& s, const std::vector<double>& v,
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
double cert_width(const Setup& s, const PairSet& p, std::int64_t j) {
  const double eb = error_bounds(s, p.values, p.rn, p.rq_dev)[j];
  return std::max({1e-8 * std::abs(p.values[j]), 10.0 * eb, 1.1e-15 * s.a_norm * s.binv_norm});
}

// The k smallest (lower = true) or largest: with count(τ) the eigenvalues strictly beyond τ on the
// wanted side (Sylvester: below τ = negative pivots of A − τB; above = n − below),
//   τ_out = μ_k ± w past the k-th value: count = k ⇒ nothing is missing: certified;
//   count > k: more eigenvalues within w of μ_k (copies of the k-th value beyond k) or missing
//   ones; τ_in = the near edge of μ_k's cluster ∓ w decides: its count must equal the number of
//   returned values beyond τ_in.
Certificate certify_end(const Setup& s, const PairSet& p, bool lower) {
  Certificate c;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  std::vector<std::int64_t> o(k);
  std::iota(o.begin(), o.end(), 0);
  std::sort(o.begin(), o.end(), [&](auto x, auto y) {
    return lower ? p.values[x] < p.values[y] : p.values[x] > p.values[y];
  });
  const double sgn = lower ? 1.0 : -1.0;  // direction away from the wanted end
  const char* side = lower ? "below" : "above";
  auto count = [&](double tau, double nudge) {
    const std::int64_t below = count_below(s, tau, sgn * nudge, &c.factorizations, &c.seconds);
    return lower ? below : s.n - below;
  };
  const double muk = p.values[o[k - 1]], wk = cert_width(s, p, o[k - 1]);
  const double tau_out = muk + sgn * wk;
  const std::int64_t out = count(tau_out, wk / 4);
  if (out == k) {
    c.state = Certified::yes;
    c.detail = std::to_string(out) + " eigenvalues " + side + " tau = " + g17(tau_out) +
               " (Sylvester inertia of A - tau*B, MUMPS LDL^T)";
    return c;
  }
  if (out < k) {  // impossible with correct pairs: the set holds values that are not eigenvalues
    c.state = Certified::no;
    c.detail = "only " + std::to_string(out) + " eigenvalues " + side + " tau = " + g17(tau_out) +
               " for " + std::to_string(k) + " returned values";
    return c;
  }
  std::int64_t first = k - 1;
  while (first > 0 && sgn * (p.values[o[first - 1]] - muk) >= -wk) --first;
  const double tau_in = p.values[o[first]] - sgn * cert_width(s, p, o[first]);
  const std::int64_t in = count(tau_in, -wk / 4);
  std::int64_t returned_in = 0;
  for (std::int64_t j = 0; j < k; ++j) returned_in += sgn * (p.values[j] - tau_in) < 0;
  if (in == returned_in) {
    c.state = Certified::yes;
    c.detail = std::to_string(in) + " eigenvalues " + side + " tau_in = " + g17(tau_in) + ", " +
               std::to_string(out) + " " + side + " tau_out = " + g17(tau_out) +
               ": the k-th value " + g17(muk) + " has " + std::to_string(out - in) +
               " copies, " + std::to_string(k - first) + " returned (MUMPS inertia)";
    return c;
  }
  c.state = Certified::no;
  c.missing = std::max<std::int64_t>(in - returned_in, 1);
  c.detail = std::to_string(in) + " eigenvalues " + side + " tau = " + g17(tau_in) + " but " +
             std::to_string(returned_in) + " returned: " + std::to_string(c.missing) +
             " missing (MUMPS inertia)";
  return c;
}

// `nearest`: all eigenvalues within [σ − r, σ + r] must be in the set (r = max |μ − σ|).
Certificate certify_interval(const Setup& s, const PairSet& p, double sigma) {
  Certificate c;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  double r = 0, w = 0;
  for (std::int64_t j = 0; j < k; ++j) {
    r = std::max(r, std::abs(p.values[j] - sigma));
    w = std::max(w, cert_width(s, p, j));
  }
  const double lo_out = sigma - r - w, hi_out = sigma + r + w;
  const std::int64_t cl = count_below(s, lo_out, w / 4, &c.factorizations, &c.seconds);
  const std::int64_t ch = count_below(s, hi_out, w / 4, &c.factorizations, &c.seconds);
  if (ch - cl == k) {
    c.state = Certified::yes;
    c.detail = std::to_string(k) + " eigenvalues in [" + g17(lo_out) + ", " + g17(hi_out) +
               ") (Sylvester inertia at both ends, MUMPS LDL^T)";
    return c;
  }
  if (ch - cl < k) {
    c.state = Certified::no;
    c.detail = "only " + std::to_string(ch - cl) + " eigenvalues in [" + g17(lo_out) + ", " +
               g17(hi_out) + ") for " + std::to_string(k) + " returned";
    return c;
  }
  // More: ties at the interval's ends (|λ − σ| = r within w), or missing inside.
  const double lo_in = sigma - r + w, hi_in = sigma + r - w;
  std::int64_t inside = 0;
  for (double v : p.values) inside += v > lo_in && v < hi_in;
  std::int64_t cin = 0;
  if (lo_in < hi_in)
    cin = count_below(s, hi_in, w / 4, &c.factorizations, &c.seconds) -
          count_below(s, lo_in, w / 4, &c.factorizations, &c.seconds);
  if (cin == inside) {
    c.state = Certified::yes;
    c.detail = std::to_string(cin) + " eigenvalues strictly inside and " +
               std::to_string(ch - cl - cin) + " at distance " + g17(r) +
               " from sigma (ties; " + std::to_string(k - inside) + " returned) (MUMPS inertia)";
    return c;
  }
  c.state = Certified::no;
  c.missing = std::max<std::int64_t>(cin - inside, 1);
  c.detail = std::to_string(cin) + " eigenvalues inside (" + g17(lo_in) + ", " + g17(hi_in) +
             ") but " + std::to_string(inside) + " returned (MUMPS inertia)";
  return c;
}

// ---------------------------------------------------------------------------------------------

struct RunOut {
  PairSet pairs;
  SolverStatus status = SolverStatus::not_converged;
  std::string reason;
  std::int64_t iterations = 0, applies = 0;
  std::vector<IterationRecord> history;
  bool pairs_pass = false;
};

// Shift-invert block Lanczos for the k pairs nearest σ. `deflate` (may be empty) holds found pairs
// (B-orthonormal, with their λ) that T must not return again (Wielandt deflation).
RunOut run_shift_invert(const Setup& s, const LinearOperator<double>& sinv, double sigma,
                        const EigsOptions& opt, std::int64_t k, std::uint64_t seed,
                        const PairSet* deflate, double factor_entries) {
  DenseBlockOps& ops = *s.ops;
  const std::int64_t n = s.n;
  const bool with_b = s.bop != nullptr;
  // Two regimes. A block solve reads the factor (≈ 16·nnz(L) bytes, about the same for 4 or 16
  // columns); an expansion step's dense work reads the basis (≈ 32·n·m bytes). Large factors
  // (nnz(L) > n·m): blocks of up to 16 and a 12-block basis, fewest solves (gen:elast3d:14 with a
  // lumped mass, k = 10: 43 block solves at b = 16, basis 192; 59 at b = 8, basis 128; 73 at b = 4).
  // Small factors (bcsstk21, nnz(L) = 0.1 M, n·m = 0.7 M): blocks of up to 8, basis
  // max(2k + 2b, 6b), where the dense work, not the solves, is the cost.
  const std::int64_t b_small = std::min<std::int64_t>(std::max<std::int64_t>(k, 2), 8);
  const bool big_factor =
      factor_entries > static_cast<double>(n) * static_cast<double>(std::max(2 * k + 2 * b_small, 6 * b_small));
  const std::int64_t bs = std::min<std::int64_t>(
      opt.block_size > 0 ? opt.block_size
                         : big_factor ? std::min<std::int64_t>(std::max<std::int64_t>(k, 2), 16) : b_small,
      n / 4 > 0 ? n / 4 : 1);
  // T = S⁻¹·B (or S⁻¹) on blocks, optionally deflated: T' = T − Y·diag(ν_Y)·(BY)ᵀ.
  MultiVector<double> by;
  std::unique_ptr<LowRankUpdate> tdef;
  std::unique_ptr<LinearOperator<double>> sb;
  struct TOp final : LinearOperator<double> {
    const LinearOperator<double>& si;
    const LinearOperator<double>* b;
    DenseBlockOps& ops;
    mutable MultiVector<double> tmp;  // B·X, sized once for the widest block (k columns)
    TOp(const LinearOperator<double>& s_, const LinearOperator<double>* b_, DenseBlockOps& o,
        std::int64_t n, std::int64_t cols)
        : si(s_), b(b_), ops(o) {
      if (b) tmp = ops.allocate(n, cols);
    }
    std::int64_t rows() const override { return si.rows(); }
    std::int64_t cols() const override { return si.cols(); }
    Space space() const override { return si.space(); }
    void apply(MvView<const double> x, MvView<double> y) const override {
      ops.synchronize();
      if (!b) {
        si.apply(x, y);
      } else {
        TCSOLVE_REQUIRE(x.cols <= tmp.cols(), "shift-invert T: block wider than its workspace");
        b->apply(x, tmp.columns(0, x.cols));
        if (ops.space() == Space::device) device_synchronize();
        si.apply(tmp.columns(0, x.cols), y);
      }
      if (ops.space() == Space::device) device_synchronize();
    }
  };
  TOp top(sinv, s.bop, ops, n, std::max(k, bs));
  const LinearOperator<double>* t = &top;
  if (deflate && deflate->x.cols() > 0) {
    const std::int64_t m = deflate->x.cols();
    by = ops.allocate(n, m);
    if (with_b) s.bop->apply(deflate->x.view(), by.view());
    else ops.copy(deflate->x.view(), by.view());
    if (ops.space() == Space::device) device_synchronize();
    std::vector<double> c(m);
    for (std::int64_t j = 0; j < m; ++j) c[j] = -1.0 / (deflate->values[j] - sigma);
    tdef = std::make_unique<LowRankUpdate>(top, ops, deflate->x.view(), by.view(), c);
    t = tdef.get();
  }

  MultiVector<double> xh = ops.allocate(n, k), ax = ops.allocate(n, k), bx;
  if (with_b) bx = ops.allocate(n, k);
  detail::LanczosProblem prob;
  prob.n = n;
  prob.b = s.bop;
  prob.which = Which::largest_magnitude;
  prob.copy_vectors = false;  // the purified vectors stay in xh
  prob.apply = [&](detail::ApplyClock& clock, MvView<const double> vc, MvView<const double> bvc,
                   MvView<double> w, MvView<double>) {
    // With B: T·V_c = S⁻¹·(B·V_c), and B·V_c is stored beside V (no B apply here).
    if (with_b && !tdef) clock.apply(sinv, bvc, w);
    else clock.apply(*t, vc, w);
  };
  prob.estimate_passes = [&](double nu, double est) {
    if (!(std::abs(nu) > 0)) return false;
    const double lam = sigma + 1.0 / nu;
    // Purified residual in the B⁻¹-norm: ‖(A − λB)·x̂‖_{B⁻¹} = ‖r_T‖_B/ν² for ‖x̂‖_B = 1. Only a
    // trigger: the explicit check below decides in 2-norms.
    const double scale = std::sqrt(s.b_norm * s.binv_norm);  // ≥ 1; 1 without B
    return scale * est / (nu * nu) <= 0.5 * bound_of(opt.conv, opt.tol, lam, 1.0, s);
  };
  std::vector<double> lam, rn, xn, dev, given(k);
  bool pass = false;
  prob.verify = [&](detail::ApplyClock& clock, MvView<double> x, const std::vector<double>& nu,
                    bool last, EigenResult& r) {
    clock.apply(*t, x, xh.view());  // x̂ = T·x (scale irrelevant: normalized next)
    for (std::int64_t j = 0; j < k; ++j) given[j] = sigma + 1.0 / nu[j];
    rayleigh_and_residuals(s, clock, xh.view(), ax.view(), with_b ? bx.view() : MvView<double>{},
                           lam, rn, xn, dev, &given);
    pass = test_pairs(s, opt, xh.view(), lam, rn, xn, r.residual_bounds);
    (void)nu;
    (void)last;
    r.values = lam;
    r.residual_norms = rn;
    return pass;
  };
  EigenOptions eo;
  eo.k = k;
  eo.tol = opt.tol;
  eo.max_iterations = opt.max_iterations > 0 ? opt.max_iterations : 300;
  eo.seed = seed;
  // A solve costs about the same for 4 or 16 columns (the factor's traffic dominates), so blocks
  // of up to 16 and a basis of max(2k + 2b, 12b) minimize the number of block solves (gen:elast3d:14
  // with a lumped mass, k = 10: 43 block solves at b = 16, basis 192; 59 at b = 8, basis 128;
  // 73 at b = 4, basis 128 — bench notes in docs/performance.md).
  eo.block_size = bs;
  eo.max_basis = opt.basis > 0 ? opt.basis
                 : bs * ((std::max(2 * k + 2 * bs, (big_factor ? 12 : 6) * bs) + bs - 1) / bs);
  eo.on_iteration = opt.on_iteration;
  if (!opt.v0.empty() && !deflate) eo.start = opt.v0.data(), eo.start_cols = static_cast<std::int64_t>(opt.v0.size()) / s.n;
  EigenResult er = detail::lanczos_core(prob, ops, eo);
  RunOut out;
  out.status = er.status;
  out.reason = er.reason;
  out.iterations = er.iterations;
  out.applies = er.operator_applies;
  out.history = std::move(er.history);
  out.pairs_pass = pass;
  out.pairs.values = lam;
  out.pairs.rn = rn;
  out.pairs.xn = xn;
  out.pairs.rq_dev = dev;
  out.pairs.x = std::move(xh);
  return out;
}

// Iterative run on A (or the deflated A') without a factorization: block Lanczos or LOBPCG with
// the chosen convergence test mapped into the solvers' formula; then B-normalized pairs with
// Rayleigh quotients and true residuals.
RunOut run_iterative(const Setup& s, const LinearOperator<double>& a, const std::string& method,
                     const EigsOptions& opt, Which which, std::int64_t k, std::uint64_t seed,
                     const LinearOperator<double>* precond) {
  DenseBlockOps& ops = *s.ops;
  TestNorms tn = test_norms(opt.conv, s.a_norm, s.b_norm);
  // rel with B scales with ‖B·x‖ ≥ ‖x‖/‖B⁻¹‖: the solvers' ‖x‖-based test with that factor is
  // never looser than the final one.
  if (opt.conv == ConvTest::rel && s.bop) tn.b_eff = 1.0 / s.binv_norm;
  EigenOptions eo;
  eo.k = k;
  eo.which = which;
  eo.tol = opt.tol;
  eo.max_iterations = opt.max_iterations > 0 ? opt.max_iterations : 2000;
  eo.seed = seed;
  eo.a_norm = std::max(tn.a_eff, 1e-300);
  eo.b_norm = std::max(tn.b_eff, 1e-300);
  eo.block_size = opt.block_size;
  eo.max_basis = opt.basis;
  eo.on_iteration = opt.on_iteration;
  if (!opt.v0.empty()) eo.start = opt.v0.data(), eo.start_cols = static_cast<std::int64_t>(opt.v0.size()) / s.n;
  eo.jacobi_mass_diagonal = s.diag_b;
  if (method == "lobpcg") {
    if (precond) eo.preconditioner = precond;
    else if (opt.precond != "none" && !s.diag_a.empty()) eo.jacobi_diagonal = s.diag_a;
  }
  EigenResult er;
  if (method == "lobpcg") {
    er = lobpcg(a, s.bop, ops, eo);
  } else if (method == "chebyshev") {
    if (s.bop) throw InvalidArgument("chebyshev solves standard problems only (no --mass)");
    // The real ‖A‖ bounds the filter's interval (the test uses the mapped norms above).
    EigenOptions ec = eo;
    ec.a_norm = s.a_norm;
    ChebyshevOptions co;
    if (opt.basis > k) co.block = opt.basis;  // SciPy's ncv: the subspace width
    co.test_a = eo.a_norm;
    co.test_b = eo.b_norm;
    // Operators that are not ours (a Python LinearOperator) may launch on any stream.
    co.apply_order = s.a ? ApplyOrder::events : ApplyOrder::synchronize;
    er = chebyshev_subspace(a, ops, ec, co);
  } else {
    er = block_lanczos(a, s.bop, ops, eo);
  }
  RunOut out;
  out.status = er.status;
  out.reason = er.reason;
  out.iterations = er.iterations;
  out.applies = er.operator_applies;
  out.history = std::move(er.history);
  // Pairs back in the ops space, re-verified against the real A (not the deflated one).
  const std::int64_t m = static_cast<std::int64_t>(er.values.size());
  out.pairs.x = ops.allocate(s.n, m);
  ops.from_host(er.vectors.data(), s.n, out.pairs.x.view());
  MultiVector<double> ax = ops.allocate(s.n, m), bx;
  if (s.bop) bx = ops.allocate(s.n, m);
  detail::ApplyClock clock(ops);
  rayleigh_and_residuals(s, clock, out.pairs.x.view(), ax.view(),
                         s.bop ? bx.view() : MvView<double>{}, out.pairs.values, out.pairs.rn,
                         out.pairs.xn, out.pairs.rq_dev);
  std::vector<double> bounds;
  out.pairs_pass = test_pairs(s, opt, out.pairs.x.view(), out.pairs.values, out.pairs.rn,
                              out.pairs.xn, bounds);
  return out;
}

// Dense LAPACK-style solve (Eigen) for small problems, where Lanczos bases do not fit: all
// eigenvalues, the k wanted returned. The smallest of an SPD pencil come from the Cholesky-inverse
// C = L⁻¹·B·L⁻ᵀ (eigenvalues 1/λ, x = L⁻ᵀ·y), whose largest eigenvalues are relatively accurate,
// unlike the smallest of a direct dense solve (absolute error ~ eps·‖A‖).
RunOut run_dense(const Setup& s, const EigsOptions& opt) {
  const std::int64_t n = s.n, k = opt.k;
  Mat A = Mat::Zero(n, n), B = Mat::Identity(n, n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = s.a->row_ptr[i]; p < s.a->row_ptr[i + 1]; ++p) A(i, s.a->col_idx[p]) += s.a->values[p];
  if (s.b) {
    B.setZero();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t p = s.b->row_ptr[i]; p < s.b->row_ptr[i + 1]; ++p) B(i, s.b->col_idx[p]) += s.b->values[p];
  }
  Eigen::VectorXd w;
  Mat v;
  Eigen::LLT<Mat> llt;
  if (opt.which == Which::smallest) llt.compute(A);
  const bool inverse = opt.which == Which::smallest && llt.info() == Eigen::Success;
  if (inverse) {
    Mat t = llt.matrixL().solve(B);
    Mat c = llt.matrixL().solve(t.transpose());
    Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (c + c.transpose()));
    w.resize(n);
    v.resize(n, n);
    for (std::int64_t j = 0; j < n; ++j) {  // descending μ = ascending λ
      w(j) = 1.0 / es.eigenvalues()(n - 1 - j);
      v.col(j) = llt.matrixU().solve(es.eigenvectors().col(n - 1 - j));
    }

  } else if (s.b) {
    Eigen::GeneralizedSelfAdjointEigenSolver<Mat> es(A, B);
    if (es.info() != Eigen::Success) throw Error("dense generalized eigensolver failed");
    w = es.eigenvalues();
    v = es.eigenvectors();
  } else {
    Eigen::SelfAdjointEigenSolver<Mat> es(A);
    if (es.info() != Eigen::Success) throw Error("dense eigensolver failed");
    w = es.eigenvalues();
    v = es.eigenvectors();
  }
  std::vector<double> all(w.data(), w.data() + n);
  auto o = wanted_order(all, opt.which, opt.sigma);
  o.resize(k);
  Mat sel(n, k);
  std::vector<double> given(k);
  for (std::int64_t j = 0; j < k; ++j) sel.col(j) = v.col(o[j]), given[j] = w(o[j]);
  RunOut out;
  out.status = SolverStatus::converged;
  out.iterations = 1;
  out.pairs.x = s.ops->allocate(n, k);
  MultiVector<double> ax = s.ops->allocate(n, k), bx;
  if (s.bop) bx = s.ops->allocate(n, k);
  detail::ApplyClock clock(*s.ops);
  auto eval = [&](const Mat& xs, PairSet& p, const std::vector<double>* g) {
    s.ops->from_host(xs.data(), n, p.x.view());
    rayleigh_and_residuals(s, clock, p.x.view(), ax.view(), s.bop ? bx.view() : MvView<double>{},
                           p.values, p.rn, p.xn, p.rq_dev, g);
  };
  if (!inverse) {
    eval(sel, out.pairs, nullptr);
  } else {
    // 1/μ is accurate to ~u·λ_j/λ_1 relative, the Rayleigh quotient to ~u·λ_max/λ_j: take 1/μ
    // below √(λ_1·λ_max). Vectors: plain (x = L⁻ᵀy) or purified (x ← A⁻¹·B·x, which damps the
    // errors x carries in stiff directions but amplifies those from the soft end, so it helps
    // the small λ only): per column, the one with the smaller residual.
    const double split = std::sqrt(std::abs(w(0) * w(n - 1)));
    bool upper = false;
    for (std::int64_t j = 0; j < k; ++j)
      if (!(std::abs(given[j]) < split)) given[j] = NAN, upper = true;
    if (upper) {
      // The stiff end: C's small eigenvalues have poor relative accuracy, and so have their
      // vectors; a direct dense solve (ascending, same indices) gives those columns.
      Mat vd;
      if (s.b) vd = Eigen::GeneralizedSelfAdjointEigenSolver<Mat>(A, B).eigenvectors();
      else vd = Eigen::SelfAdjointEigenSolver<Mat>(A).eigenvectors();
      for (std::int64_t j = 0; j < k; ++j)
        if (std::isnan(given[j])) sel.col(j) = vd.col(o[j]);
    }
    PairSet purified;
    purified.x = s.ops->allocate(n, k);
    eval(sel, out.pairs, &given);
    Mat pur = llt.solve(B * sel);
    eval(pur, purified, &given);
    std::vector<std::int64_t> idx(k);
    for (std::int64_t j = 0; j < k; ++j) idx[j] = purified.rn[j] < out.pairs.rn[j] ? k + j : j;
    MultiVector<double> both = s.ops->allocate(n, 2 * k);
    s.ops->copy(out.pairs.x.view(), both.columns(0, k));
    s.ops->copy(purified.x.view(), both.columns(k, k));
    s.ops->gather_columns(both.view(), idx.data(), k, out.pairs.x.view());
    for (std::int64_t j = 0; j < k; ++j)
      if (idx[j] >= k)
        out.pairs.values[j] = purified.values[j], out.pairs.rn[j] = purified.rn[j],
        out.pairs.xn[j] = purified.xn[j], out.pairs.rq_dev[j] = purified.rq_dev[j];
  }
  std::vector<double> bounds;
  out.pairs_pass = test_pairs(s, opt, out.pairs.x.view(), out.pairs.values, out.pairs.rn,
                              out.pairs.xn, bounds);
  if (!out.pairs_pass) {
    out.status = SolverStatus::not_converged;
    out.reason = "the dense solution's residuals exceed the test (tol below what the dense "
                 "solver reaches for this matrix)";
  }
  return out;
}

// ‖B⁻¹‖: exact for a diagonal B; else 1/λ_min(B) from inverse iteration with a Cholesky factor
// (which also proves B positive definite), times a safety factor.
double estimate_binv_norm(const Csr<double>& b, const std::vector<double>& diag_b, bool can_factor) {
  if (is_diagonal(b)) {
    double mn = *std::min_element(diag_b.begin(), diag_b.end());
    return 1.0 / mn;
  }
  if (!can_factor) return 1.0 / std::max(*std::min_element(diag_b.begin(), diag_b.end()), 1e-300);
  auto f = factor_shifted(b, nullptr, 0.0);
  const std::int64_t n = b.nrows, c = std::min<std::int64_t>(4, n);
  std::vector<double> x(n * c), y(n * c);
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < n; ++i) x[i + j * n] = random_entry(17, i, j);
  double est = 0;
  for (int it = 0; it < 12; ++it) {
    Eigen::Map<Mat> X(x.data(), n, c);
    Eigen::HouseholderQR<Mat> qr(X);
    X = qr.householderQ() * Mat::Identity(n, c);
    f->solve(MvView<const double>{x.data(), n, c, n, Space::host},
             MvView<double>{y.data(), n, c, n, Space::host});
    Eigen::Map<Mat> Y(y.data(), n, c);
    Mat g = X.transpose() * Y;
    est = std::max(est, Eigen::SelfAdjointEigenSolver<Mat>(0.5 * (g + g.transpose())).eigenvalues().maxCoeff());
    x = y;
  }
  return 1.5 * est;
}

// Host memory estimate of a factorization without doing it is the engines' job; here a cheap
// gate for `auto`: factor when n is moderate or the matrix is banded enough.
bool factor_affordable(const Csr<double>& a, std::string* why) {
  // Symbolic analysis costs about as much as a few SpMMs; do it through a trial factor only when
  // n is small. For large n, shift-invert is used when asked for (--sigma / --which nearest).
  constexpr std::int64_t kAutoFactorRows = 300000;
  if (a.nrows <= kAutoFactorRows) return true;
  *why = "n = " + std::to_string(a.nrows) + " is above " + std::to_string(kAutoFactorRows) +
         " rows, where a sparse factorization is not tried automatically (give --sigma to force it)";
  return false;
}

}  // namespace

// ----------------------------------------------------------------------------------------------

namespace {

EigsResult finish(const Setup& s, const EigsOptions& opt, PairSet& p, RunOut& run,
                  double sigma) {
  DenseBlockOps& ops = *s.ops;
  EigsResult r;
  r.n = s.n;
  r.conv = opt.conv;
  r.a_norm = s.a_norm;
  r.b_norm = s.b_norm;
  r.sigma = sigma;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  // Wanted order.
  auto o = wanted_order(p.values, opt.which, sigma);
  PairSet q;
  q.x = reorder_columns(ops, p.x.view(), o);
  for (auto i : o)
    q.values.push_back(p.values[i]), q.rn.push_back(p.rn[i]), q.xn.push_back(p.xn[i]),
        q.rq_dev.push_back(p.rq_dev[i]);
  r.vectors.resize(s.n * k);
  if (k) ops.to_host(q.x.view(), r.vectors.data(), s.n);
  refine_rayleigh(s, r.vectors, q.values, q.rn, q.rq_dev);
  r.values = q.values;
  r.residual_norms = q.rn;
  const bool pass = test_pairs(s, opt, q.x.view(), q.values, q.rn, q.xn, r.residual_bounds);
  r.error_bounds = error_bounds(s, q.values, q.rn, q.rq_dev);
  r.iterations = run.iterations;
  r.operator_applies = run.applies;
  r.history = std::move(run.history);
  r.status = pass ? SolverStatus::converged : run.status == SolverStatus::breakdown
                                                  ? SolverStatus::breakdown
                                                  : SolverStatus::not_converged;
  if (!pass)
    r.reason = run.reason.empty() ? "a returned pair fails its true-residual test" : run.reason;
  p = std::move(q);
  return r;
}

}  // namespace

EigsResult eigs(const LinearOperator<double>& a, const LinearOperator<double>* b,
                DenseBlockOps& ops, const EigsOptions& opt, double a_norm, double b_norm);

namespace {

void validate(const EigsOptions& opt, std::int64_t n) {
  if (opt.k < 1 || opt.k >= n)
    throw InvalidArgument("k = " + std::to_string(opt.k) + " must satisfy 1 <= k < n = " +
                          std::to_string(n));
  if (!(opt.tol > 0 && opt.tol < 1)) throw InvalidArgument("tol = " + g17(opt.tol) + ": expected 0 < tol < 1");
  if (opt.method != "auto" && opt.method != "lanczos" && opt.method != "lobpcg" &&
      opt.method != "dense" && opt.method != "chebyshev")
    throw InvalidArgument("method '" + opt.method +
                          "': expected auto, lanczos, lobpcg, chebyshev or dense");
  if (opt.precond != "auto" && opt.precond != "none" && opt.precond != "jacobi" &&
      opt.precond != "factor")
    throw InvalidArgument("precond '" + opt.precond + "': expected none, jacobi, factor or auto");
  if (opt.which == Which::nearest && !opt.has_sigma)
    throw InvalidArgument("which = nearest needs a shift sigma");
  if (opt.which == Which::largest_magnitude)
    throw InvalidArgument("which = largest_magnitude is internal; use nearest with sigma");
  if (opt.has_sigma && !std::isfinite(opt.sigma)) throw InvalidArgument("sigma must be finite");
  if (opt.block_size < 0 || opt.basis < 0 || opt.max_iterations < 0)
    throw InvalidArgument("block_size, basis and max_iterations must be >= 0");
}

// Shrinks Chebyshev's width or the Lanczos basis so that the iteration's n-vectors fit in
// opt.workspace_columns (EigsOptions); appends what it did to `why`.
void fit_workspace(const std::string& method, std::int64_t n, std::int64_t k, EigsOptions& opt,
                   std::string& why) {
  const std::int64_t w = opt.workspace_columns;
  if (w <= 0 || method == "dense") return;
  const double col_bytes = 8.0 * static_cast<double>(n);
  auto refuse = [&](std::int64_t min_cols) {
    const double bytes = col_bytes * static_cast<double>(min_cols);
    char gib[32];
    std::snprintf(gib, sizeof gib, " (%.2f GiB)", bytes / 1073741824.0);
    throw WorkspaceDoesNotFit(
        static_cast<std::size_t>(bytes),
        "out of GPU memory: " + method + " with k = " + std::to_string(k) + " needs at least " +
            std::to_string(min_cols) + " vectors of " + std::to_string(n) + " rows" + gib +
            " beside the matrix, room for " + std::to_string(w));
  };
  if (method == "chebyshev") {
    ChebyshevOptions co;
    if (opt.basis > k) co.block = opt.basis;
    const std::int64_t m0 = chebyshev_block(n, k, -1, co);
    if (3 * m0 + 2 * k <= w) return;
    const std::int64_t m = (w - 2 * k) / 3;
    if (m < k + 4) refuse(3 * (k + 4) + 2 * k);
    opt.basis = m;
    why += "; block width reduced from " + std::to_string(m0) + " to " + std::to_string(m) +
           " columns to fit the GPU memory";
  } else if (method == "lanczos") {
    const std::int64_t b = opt.block_size > 0 ? opt.block_size
                                              : std::min<std::int64_t>(std::max<std::int64_t>(k, 2), 8);
    const std::int64_t m0 = opt.basis > 0 ? opt.basis : b * ((std::max(2 * k + 2 * b, 16 * b) + b - 1) / b);
    const std::int64_t fixed = 2 * b + 2 * std::max(b, k);
    if (2 * m0 + fixed <= w) return;
    const std::int64_t m = (w - fixed) / 2 / b * b;
    const std::int64_t m_min = b * ((k + 2 * b + b - 1) / b);
    if (m < m_min) refuse(2 * m_min + fixed);
    opt.basis = m;
    why += "; Lanczos basis reduced from " + std::to_string(m0) + " to " + std::to_string(m) +
           " columns to fit the GPU memory";
  } else {
    const std::int64_t need = 10 * (k + std::min<std::int64_t>(8, std::max<std::int64_t>(2, k / 2)));
    if (need > w) refuse(need);
  }
}

// The multiplicity re-check (no factorization): a fresh random block on A + δ·(BX)(BX)ᵀ must not
// find an eigenvalue beyond the k-th value of the set. Adds what it finds (up to 3 rounds).
// Returns true when the last round found nothing (the set is verified).
bool recheck(const Setup& s, const EigsOptions& opt, const std::string& method, PairSet& p,
             std::string* detail, double* seconds) {
  const double t0 = detail::now_seconds();
  DenseBlockOps& ops = *s.ops;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  const std::int64_t kr = std::min<std::int64_t>(
      opt.block_size > 0 ? opt.block_size : std::min<std::int64_t>(std::max<std::int64_t>(k, 2), 8),
      s.n - k - 1);
  const bool smallest = opt.which == Which::smallest;
  for (int round = 0; round < 3; ++round) {
    if (kr < 1) {
      *detail = "no room for a re-check block (n too small)";
      break;
    }
    const std::int64_t m = p.x.cols();
    MultiVector<double> bx = ops.allocate(s.n, m);
    if (s.bop) s.bop->apply(p.x.view(), bx.view());
    else ops.copy(p.x.view(), bx.view());
    if (ops.space() == Space::device) device_synchronize();
    // Each found pair is moved to t, inside the spectrum's range [−L, L] (L = ‖A‖·‖B⁻¹‖ bounds
    // |λ|) and away from the wanted end: A' = A + Σ δ_j·(Bx_j)(Bx_j)ᵀ with δ_j = t − λ_j. Pushing
    // them beyond the range instead (δ = ∓2(‖A‖ + 1)) widens the spectrum the filter must damp
    // 2.2-fold on a Laplacian (gen:lap3d:40, k = 16 largest, no factor: re-check 8.4 s).
    const double big = s.a_norm * std::max(1.0, s.binv_norm);
    const auto kth0 = wanted_order(p.values, opt.which, 0.0).back();
    const double mu0 = p.values[kth0];
    const double t = smallest ? mu0 + std::max(0.5 * (big - mu0), 0.25 * big)
                              : mu0 - std::max(0.5 * (mu0 + big), 0.25 * big);
    std::vector<double> deltas(m);
    for (std::int64_t j = 0; j < m; ++j) deltas[j] = t - p.values[j];
    LowRankUpdate adef(*s.aop, ops, bx.view(), bx.view(), deltas);
    // One wanted pair decides: a missed copy is the extreme eigenvalue of A'. The block keeps kr
    // columns (a multiple eigenvalue is seen as such); asking for all kr pairs costs as much as
    // kr more eigenpairs of a clustered spectrum.
    EigsOptions ro = opt;
    ro.on_iteration = nullptr;
    ro.v0.clear();  // a fresh random block, never the caller's start
    ro.block_size = kr;
    if (method == "chebyshev") ro.basis = std::max<std::int64_t>(kr + 8, 16);
    RunOut rr = run_iterative(s, adef, method, ro, opt.which, 1, opt.seed * 1000003 + 7 + round,
                              nullptr);
    // Each pair on its own: the decisive one is the extreme (first) pair; the block's trailing
    // columns need not converge. Their Ritz values lie inside the extreme one's, so when it is
    // not beyond the k-th value nothing is.
    const std::int64_t nr = static_cast<std::int64_t>(rr.pairs.values.size());
    std::vector<char> ok(nr, 0);
    for (std::int64_t j = 0; j < nr; ++j) {
      std::vector<double> l{rr.pairs.values[j]}, r{rr.pairs.rn[j]}, b;
      ok[j] = test_pairs(s, opt, rr.pairs.x.view().columns(j, 1), l, r, {rr.pairs.xn[j]}, b);
    }
    if (nr == 0 || !ok[0]) {
      *detail = "the re-check run (fresh random block of " + std::to_string(kr) +
                ", found pairs deflated) did not converge" + (rr.reason.empty() ? "" : ": " + rr.reason);
      *seconds += detail::now_seconds() - t0;
      return false;
    }
    // Anything strictly beyond the k-th value (in the wanted direction) is missing from the set.
    auto kth = wanted_order(p.values, opt.which, 0.0).back();
    const double muk = p.values[kth];
    const double wk = cert_width(s, p, kth);
    PairSet found;
    std::vector<std::int64_t> keep;
    for (std::int64_t j = 0; j < nr; ++j) {
      const double v = rr.pairs.values[j];
      const double wj = rr.pairs.rn[j] * std::sqrt(s.binv_norm);
      if (ok[j] && (smallest ? v < muk - wk - 10 * wj : v > muk + wk + 10 * wj)) keep.push_back(j);
    }
    if (keep.empty()) {
      *detail = "re-check with a fresh random block of " + std::to_string(kr) +
                " (found pairs deflated) found nothing beyond the k-th value " + g17(muk) +
                (round ? " after adding " + std::to_string(round) + " round(s) of missed pairs" : "");
      *seconds += detail::now_seconds() - t0;
      return true;
    }
    found.x = reorder_columns(ops, rr.pairs.x.view(), keep);
    for (auto j : keep)
      found.values.push_back(rr.pairs.values[j]), found.rn.push_back(rr.pairs.rn[j]),
          found.xn.push_back(rr.pairs.xn[j]), found.rq_dev.push_back(rr.pairs.rq_dev[j]);
    p = merge_pairs(ops, p, found, k, opt.which, 0.0);
    *detail = "re-check found " + std::to_string(keep.size()) + " missed eigenvalue(s); added";
  }
  *seconds += detail::now_seconds() - t0;
  return false;
}

EigsResult run_all(Setup& s, const EigsOptions& opt, bool can_factor, const std::string& factor_why) {
  s.conv = opt.conv;
  if (!opt.v0.empty()) {
    if (s.n == 0 || opt.v0.size() % static_cast<std::size_t>(s.n) != 0)
      throw InvalidArgument("v0: " + std::to_string(opt.v0.size()) + " values is not a whole number of "
                            "columns of n = " + std::to_string(s.n));
    for (std::size_t i = 0; i < opt.v0.size(); ++i)
      if (!std::isfinite(opt.v0[i]))
        throw InvalidArgument("v0: non-finite value at row " + std::to_string(i % s.n) + ", column " +
                              std::to_string(i / s.n));
  }
  const double t_setup0 = detail::now_seconds();
  DenseBlockOps& ops = *s.ops;
  const std::int64_t k = opt.k;
  const bool want_transform_possible = can_factor && s.a != nullptr;
  // ---- method and transformation
  //   nearest, or a given sigma: shift-invert Lanczos (LOBPCG: the factorization as preconditioner);
  //   smallest, factorization possible: auto = shift-invert Lanczos;
  //   otherwise block Lanczos (LOBPCG with a mass matrix, which Lanczos would have to invert).
  if ((opt.which == Which::nearest || opt.has_sigma || opt.precond == "factor") &&
      !want_transform_possible)
    throw InvalidArgument(std::string(opt.which == Which::nearest ? "--which nearest"
                                      : opt.has_sigma             ? "--sigma"
                                                                  : "--precond factor") +
                          " needs a sparse factorization of A - sigma*B, which is not available "
                          "here (" + factor_why + ")");
  std::string method = opt.method;
  // Small problems (or k close to n, where no Lanczos basis fits): dense, when the matrix is here.
  constexpr std::int64_t kDenseRows = 400;
  const bool dense_fits = s.a != nullptr && s.n <= 4000;
  if (method == "dense" && !dense_fits)
    throw InvalidArgument("--method dense needs the matrix (not an operator) and n <= 4000");
  if (method == "auto" && dense_fits && (s.n <= kDenseRows || 3 * k + 32 > s.n)) method = "dense";
  // Without a transformation: Chebyshev-filtered subspace iteration for standard problems (its
  // time goes into SpMMs; 5.7–16× faster than block Lanczos on the H200 runs of
  // docs/performance.md), LOBPCG for generalized ones.
  if (method == "auto")
    method = opt.which != Which::largest && want_transform_possible ? "lanczos"
             : s.bop                                                 ? "lobpcg"
             : 2 * (opt.k + std::max<std::int64_t>(8, (opt.k + 1) / 2)) <= s.n ? "chebyshev"
                                                                               : "lanczos";
  if (method == "chebyshev" && (s.bop || opt.which == Which::nearest))
    throw InvalidArgument("chebyshev solves standard problems for the smallest or largest "
                          "eigenvalues (no --mass, no --which nearest)");
  if (method == "lobpcg" && opt.which == Which::nearest)
    throw InvalidArgument("lobpcg finds extreme eigenvalues; --which nearest runs Lanczos on the "
                          "shift-inverted operator (--method lanczos or auto)");
  if (opt.which == Which::largest && opt.has_sigma)
    throw InvalidArgument("shift-invert serves --which smallest and nearest; for the largest "
                          "eigenvalues drop --sigma (or use --which nearest with a sigma above the "
                          "spectrum)");
  const bool transform = method == "lanczos" && want_transform_possible &&
                         (opt.which == Which::nearest || opt.has_sigma ||
                          (opt.which == Which::smallest && opt.method == "auto"));
  const bool lobpcg_factor = method == "lobpcg" && opt.which == Which::smallest &&
                             want_transform_possible &&
                             (opt.precond == "factor" || opt.precond == "auto");
  if (opt.precond == "factor" && !lobpcg_factor)
    throw InvalidArgument("--precond factor applies to lobpcg for the smallest eigenvalues");
  std::string why;
  if (method == "dense")
    why = opt.method == "dense" ? "method dense as asked"
                                : "auto: dense solve (n = " + std::to_string(s.n) + " is small, or k close to n)";
  else if (transform)
    why = opt.has_sigma || opt.which == Which::nearest
              ? "shift-invert block Lanczos around the given sigma"
              : "auto: shift-invert block Lanczos for the smallest eigenvalues (the factorization "
                "fits in memory)";
  else if (lobpcg_factor)
    why = "lobpcg preconditioned by the factorization of A - sigma*B";
  else if (opt.method == "auto")
    why = std::string("auto: ") +
          (s.bop ? "lobpcg (generalized problem, "
                 : method == "chebyshev" ? "Chebyshev-filtered subspace iteration ("
                                         : "block Lanczos (") +
          (opt.which == Which::largest ? "largest eigenvalues" : factor_why) + ")";
  else
    why = "method " + method + " as asked";

  EigsResult res;
  PairSet pairs;
  RunOut run;
  double sigma = opt.has_sigma ? opt.sigma : 0.0;
  std::unique_ptr<SparseFactor> factor;
  std::unique_ptr<ShiftInvertOperator> sinv;
  std::string factor_desc;
  if (transform || lobpcg_factor) {
    FactorOptions fo;
    fo.memory_limit_bytes = opt.factor_memory_limit;
    fo.exportable = opt.backend == Backend::cuda;
    if (!opt.has_sigma && opt.which == Which::smallest) {
      // σ below the spectrum: 0 when A − 0·B is positive definite (CHOLMOD proves it), else a
      // shift under a cheap estimate of λ_min, lowered until the Cholesky factorization exists.
      sigma = 0.0;
      std::string tried;
      for (int attempt = 0; attempt < 6; ++attempt) {
        try {
          FactorOptions f2 = fo;
          f2.engine = FactorEngine::cholmod;
          factor = factor_shifted(*s.a, s.b, sigma, f2);
          break;
        } catch (const SingularShift&) {
          tried += " " + g17(sigma) + " (singular)";
        } catch (const InvalidArgument&) {
          tried += " " + g17(sigma) + " (indefinite)";
        }
        // λ_min ≥ −‖A‖·‖B⁻¹‖: the last tries reach below any eigenvalue.
        const double scale = s.a_norm * s.binv_norm;
        sigma = attempt == 0 ? -1e-8 * scale : attempt < 5 ? sigma * 100.0 : -2.0 * scale;
      }
      if (!factor)
        throw Error("no shift below the spectrum found (tried" + tried +
                    "); give --sigma, or --no-factor for an iterative method");
      why += "; sigma = " + g17(sigma) + " (A - sigma*B positive definite)";
    } else {
      fo.engine = opt.which == Which::nearest ? FactorEngine::automatic : FactorEngine::cholmod;
      try {
        factor = factor_shifted(*s.a, s.b, sigma, fo);
      } catch (const SingularShift&) {
        throw;
      } catch (const InvalidArgument& e) {
        if (fo.engine != FactorEngine::cholmod) throw;
        // σ inside the spectrum while the smallest/largest are asked for.
        const Inertia in = inertia_at(*s.a, s.b, sigma);
        throw InvalidArgument("sigma = " + g17(sigma) + " lies inside the spectrum (" +
                              std::to_string(in.negative) + " eigenvalues below it): for the k " +
                              (opt.which == Which::largest ? "largest" : "smallest") +
                              " give a sigma beyond that end, or use --which nearest");
      }
    }
    factor_desc = factor->describe();
    // Workspace for blocks of up to 32 columns (wider ones are solved in pieces).
    const double t_si = detail::now_seconds();
    sinv = make_shift_invert(*factor, opt.backend, ops.stream(),
                             std::max<std::int64_t>(16, std::min<std::int64_t>(k + 8, 32)));
    if (opt.backend == Backend::cuda)
      factor_desc += "; solves: " + sinv->plan() + ", set up in " +
                     fmt("%.3f", detail::now_seconds() - t_si) + " s";
  }
  res.setup_seconds = detail::now_seconds() - t_setup0;

  // ---- the run
  EigsOptions fit = opt;  // opt with the workspace fitted (iterative methods)
  const double t_solve0 = detail::now_seconds();
  if (method == "dense") {
    run = run_dense(s, opt);
  } else if (transform) {
    run = run_shift_invert(s, *sinv, sigma, opt, k, opt.seed, nullptr, factor->factor_entries());
  } else {
    fit_workspace(method, s.n, k, fit, why);
    run = run_iterative(s, *s.aop, method, fit, opt.which, k, opt.seed,
                        lobpcg_factor ? sinv.get() : nullptr);
  }
  pairs = std::move(run.pairs);
  const double solve_s = detail::now_seconds() - t_solve0;

  // ---- verification: certificate (with a factorization) or re-check
  const double t_ver0 = detail::now_seconds();
  Certificate cert;
  std::string recheck_detail;
  double recheck_s = 0;
  bool verified = false;
  const bool pairs_ok = run.pairs_pass;
  if (pairs_ok && want_transform_possible && opt.which != Which::largest) {
    // Sylvester count (and repair of missing copies through a deflated shift-invert run).
    for (int round = 0; round < 4; ++round) {
      cert = opt.which == Which::nearest ? certify_interval(s, pairs, sigma) : certify_end(s, pairs, true);
      if (cert.state != Certified::no || cert.missing == 0 || !sinv || round == 3) break;
      RunOut more = run_shift_invert(s, *sinv, sigma, opt,
                                     std::min<std::int64_t>(std::max<std::int64_t>(cert.missing, 2), s.n - k - 1),
                                     opt.seed + 31 * (round + 1), &pairs, factor->factor_entries());
      if (!more.pairs_pass) break;
      pairs = merge_pairs(ops, pairs, more.pairs, k, opt.which, sigma);
    }
    verified = cert.state == Certified::yes;
  } else if (pairs_ok && opt.which == Which::largest && want_transform_possible) {
    cert = certify_end(s, pairs, false);
    verified = cert.state == Certified::yes;
  }
  if (pairs_ok && !verified && cert.state != Certified::no && method == "dense") {
    verified = true;  // the dense solve computed every eigenvalue: nothing can be missing
    recheck_detail = "dense solve: all " + std::to_string(s.n) + " eigenvalues computed";
  } else if (pairs_ok && !verified && cert.state != Certified::no && opt.recheck) {
    verified = recheck(s, fit, method, pairs, &recheck_detail, &recheck_s);
  } else if (pairs_ok && !verified && !opt.recheck && cert.state == Certified::not_checked) {
    recheck_detail = "re-check skipped (--no-recheck)";
  }
  const double verify_s = detail::now_seconds() - t_ver0;

  res = finish(s, opt, pairs, run, sigma);
  res.setup_seconds = detail::now_seconds() - t_setup0 - solve_s - verify_s;
  res.solve_seconds = solve_s;
  res.verify_seconds = verify_s;
  res.method = method;
  res.transform = transform ? "shift-invert" : "none";
  res.sigma = (transform || lobpcg_factor) ? sigma : 0.0;
  res.why = why;
  res.factor = factor_desc;
  res.certified = cert.state;
  res.certificate = cert.state == Certified::not_checked
                        ? (recheck_detail.empty() ? std::string("no sparse factorization (") +
                                                        (factor_why.empty() ? "not needed" : factor_why) + ")"
                                                  : recheck_detail)
                        : cert.detail + (recheck_detail.empty() ? "" : "; " + recheck_detail);
  if (res.status == SolverStatus::converged && !verified) {
    res.status = cert.state == Certified::no ? SolverStatus::not_converged : SolverStatus::unverified;
    res.reason = cert.state == Certified::no
                     ? "every pair passed its residual test, but the count says eigenvalues are "
                       "missing: " + cert.detail
                     : "every pair passed its residual test, but nothing verified that no further "
                       "copy of a repeated eigenvalue is missing (" + res.certificate + ")";
  }
  return res;
}

}  // namespace

EigsResult eigs(const Csr<double>& a, const Csr<double>* b, const EigsOptions& opt,
                const EigsPrebuilt& pre) {
  if (!a.square()) throw InvalidArgument("A must be square");
  const std::int64_t n = a.nrows;
  validate(opt, n);
  if (b && (b->nrows != n || b->ncols != n))
    throw InvalidArgument("B is " + std::to_string(b->nrows) + " x " + std::to_string(b->ncols) +
                          " but A is " + std::to_string(n) + " x " + std::to_string(n));
  Setup s;
  s.a = &a;
  s.b = b;
  s.n = n;
  s.a_norm = csr_inf_norm(a);
  s.diag_a = csr_diagonal(a);
  std::string factor_why;
  bool can_factor = opt.allow_factor && built_with_factor();
  if (!opt.allow_factor) factor_why = "--no-factor";
  else if (!built_with_factor()) factor_why = "built without CHOLMOD/MUMPS";
  else if (!opt.has_sigma && opt.which != Which::nearest && !factor_affordable(a, &factor_why))
    can_factor = false;
  if (b) {
    s.b_norm = csr_inf_norm(*b);
    s.diag_b = csr_diagonal(*b);
    for (std::int64_t i = 0; i < n; ++i)
      if (!(s.diag_b[i] > 0))
        throw InvalidArgument(opt.mass_name + " is not positive definite (b_ii = " + g17(s.diag_b[i]) +
                              " at row " + std::to_string(i + 1) + ")");
    // Non-diagonal B: a Cholesky factorization proves it positive definite and gives ‖B⁻¹‖.
    if (!is_diagonal(*b) && built_with_factor() && opt.allow_factor)
      require_positive_definite(*b, opt.mass_name);
    s.binv_norm = estimate_binv_norm(*b, s.diag_b, built_with_factor() && opt.allow_factor);
  }
  std::unique_ptr<DenseBlockOps> own_ops;
  DenseBlockOps* ops = pre.ops;
  if (!ops) own_ops = make_dense_ops(opt.backend), ops = own_ops.get();
  if (ops->backend() != opt.backend)
    throw InvalidArgument("eigs: the given dense ops run on another backend than opt.backend");
  OperatorOptions oo;
  oo.precision = opt.precision;
  oo.stream = ops->stream();
  oo.expected_cols = static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(opt.k, 2), 8));
  std::unique_ptr<SparseOperator> aop, bop;
  std::string kernel = pre.spmm_kernel;
  if (!pre.a) {
    aop = make_sparse_operator(a, opt.backend, oo);
    kernel = to_string(aop->plan().kernel);
  }
  if (b && !pre.b) {
    OperatorOptions ob = oo;
    ob.precision = Precision::fp64;
    bop = make_sparse_operator(*b, opt.backend, ob);
  }
  s.aop = pre.a ? pre.a : aop.get();
  s.bop = b ? (pre.b ? pre.b : bop.get()) : nullptr;
  s.ops = ops;
  EigsResult r = run_all(s, opt, can_factor, factor_why);
  r.spmm_kernel = kernel;
  return r;
}

EigsResult eigs(const LinearOperator<double>& a, const LinearOperator<double>* b,
                DenseBlockOps& ops, const EigsOptions& opt, double a_norm, double b_norm) {
  const std::int64_t n = a.rows();
  if (a.cols() != n) throw InvalidArgument("A must be square");
  validate(opt, n);
  if (opt.has_sigma || opt.which == Which::nearest || opt.precond == "factor")
    throw InvalidArgument("shift-invert (sigma, which = nearest, precond = factor) needs the matrix, "
                          "not an operator");
  Setup s;
  s.aop = &a;
  s.bop = b;
  s.ops = &ops;
  s.n = n;
  s.a_norm = a_norm > 0 ? a_norm : estimate_norm(a, ops);
  s.b_norm = b ? (b_norm > 0 ? b_norm : estimate_norm(*b, ops)) : 1.0;
  return run_all(s, opt, false, "operator given, not a matrix");
}

}  // namespace tcsolve
