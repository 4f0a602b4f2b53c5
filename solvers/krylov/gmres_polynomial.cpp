// The GMRES polynomial preconditioner (gmres_polynomial.hpp): its roots from a short Arnoldi run,
// their order, and the two applies B·v = v − π(A)·v and p(A)·v in fused steps.
#include "solvers/krylov/gmres_polynomial.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/parallel.hpp"
#include "solvers/krylov/gmres_kernels.hpp"
#include "solvers/krylov/gmres_solver.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::krylov {

namespace {
using cplx = std::complex<double>;
constexpr double kPofLimit = 4.0;    // log10 of the pof above which a root gets extra copies
constexpr double kPofPerCopy = 14.0; // decades of pof one extra copy takes care of

cplx value(const PolyRoot& r) { return {r.re, r.im}; }

// The roots as points of the plane (a pair as both conjugates).
std::vector<cplx> points(const std::vector<PolyRoot>& roots) {
  std::vector<cplx> p;
  for (const PolyRoot& r : roots) {
    p.push_back(value(r));
    if (r.pair()) p.push_back(std::conj(value(r)));
  }
  return p;
}
}  // namespace

int polynomial_degree(const std::vector<PolyRoot>& roots) {
  int d = 0;
  for (const PolyRoot& r : roots) d += r.pair() ? 2 : 1;
  return d;
}

std::vector<PolyRoot> harmonic_ritz_roots(const std::vector<double>& h, int k) {
  TCSOLVE_REQUIRE(k >= 1 && static_cast<std::int64_t>(h.size()) >= std::int64_t(k + 1) * k,
                  "harmonic_ritz_roots: H must be (k + 1) × k");
  const Eigen::Map<const Eigen::MatrixXd> hm(h.data(), k + 1, k);
  const Eigen::MatrixXd hk = hm.topRows(k);
  const double beta = hm(k, k - 1);
  Eigen::MatrixXd m = hk;
  Eigen::FullPivLU<Eigen::MatrixXd> lu(hk.transpose());
  if (lu.isInvertible()) {
    Eigen::VectorXd e = Eigen::VectorXd::Zero(k);
    e(k - 1) = 1.0;
    const Eigen::VectorXd f = lu.solve(e);
    if (f.allFinite()) m.col(k - 1) += beta * beta * f;  // H_k + β²·f·e_kᵀ
  }
  Eigen::EigenSolver<Eigen::MatrixXd> es(m, false);
  TCSOLVE_REQUIRE(es.info() == Eigen::Success, "GMRES polynomial: the harmonic Ritz values did not converge");
  const Eigen::VectorXcd ev = es.eigenvalues();
  double big = 0.0;
  for (int i = 0; i < k; ++i) big = std::max(big, std::abs(ev(i)));
  std::vector<PolyRoot> roots;
  for (int i = 0; i < k; ++i) {
    const cplx t = ev(i);
    if (!std::isfinite(t.real()) || !std::isfinite(t.imag()) || std::abs(t) <= 1e-14 * big) continue;
    if (t.imag() < 0.0) continue;  // the pair's other half (EigenSolver returns exact conjugates)
    roots.push_back({t.real(), t.imag()});
  }
  return roots;
}

std::vector<PolyRoot> stable_leja_order(std::vector<PolyRoot> roots) {
  // Extra copies: pof(k) = ∏_{i≠k} |1 − θ_k/θ_i| over every point but θ_k itself.
  const std::vector<cplx> all = points(roots);
  const std::size_t nr = roots.size();
  for (std::size_t k = 0; k < nr; ++k) {
    const cplx t = value(roots[k]);
    double pof = 0.0;
    bool skipped = false;
    for (const cplx& s : all) {
      if (!skipped && s == t) {
        skipped = true;
        continue;
      }
      pof += std::log10(std::max(std::abs(1.0 - t / s), 1e-300));
    }
    if (pof > kPofLimit) {
      const int extra = static_cast<int>(std::ceil((pof - kPofLimit) / kPofPerCopy));
      for (int e = 0; e < extra; ++e) roots.push_back(roots[k]);
    }
  }
  // Modified Leja order.
  std::vector<PolyRoot> out;
  std::vector<cplx> chosen;
  std::vector<char> used(roots.size(), 0);
  for (std::size_t step = 0; step < roots.size(); ++step) {
    std::size_t best = roots.size();
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < roots.size(); ++i) {
      if (used[i]) continue;
      const cplx t = value(roots[i]);
      double score = 0.0;
      if (chosen.empty()) {
        score = std::abs(t);
      } else {
        for (const cplx& s : chosen) score += std::log(std::max(std::abs(t - s), 1e-300));
      }
      if (best == roots.size() || score > best_score) best = i, best_score = score;
    }
    used[best] = 1;
    out.push_back(roots[best]);
    chosen.push_back(value(roots[best]));
    if (roots[best].pair()) chosen.push_back(std::conj(value(roots[best])));
  }
  return out;
}

// The Arnoldi run is GMRES's own single-column step (gmres_kernels.hpp), queued without a host
// wait: per step w = A·v_j, CGS2 in three fused passes whose coefficients go to column j of H1
// and H2 (h_{0..j,j} = H1 + H2, ‖w‖² in H2's row k + 1), the column's Arnoldi/Givens step
// (which freezes it on an invariant subspace or a non-finite value; its target is −1, so that no
// residual estimate stops it), and v_{j+1} = w/h_{j+1,j} (0 once frozen). One download at the
// end. (H200, convdiff3d:100, degree 30: the host-synchronized run with separate Gram and GEMM
// passes took ~15 ms of set-up.)
PolyRoots gmres_polynomial_roots(const LinearOperator<double>& a, DenseBlockOps& ops, int degree,
                                 std::uint64_t seed) {
  const double t0 = detail::now_seconds();
  const std::int64_t n = a.rows();
  TCSOLVE_REQUIRE(a.cols() == n, "GMRES polynomial: A must be square");
  if (degree < 1 || degree > gmres::kMaxRestart)
    throw InvalidArgument(format("GMRES polynomial: degree must be in [1, %d] (its roots come from as many Arnoldi "
                                 "steps, GMRES's own), is %d", gmres::kMaxRestart, degree));
  const int k = static_cast<int>(std::min<std::int64_t>(degree, n));
  namespace g = gmres;
  const g::Kernels kt = g::kernels_for(ops.space());
  g::StateLayout lay;
  lay.m = k;
  const std::int64_t hr = k + 2, sr = lay.rows();  // H1/H2 rows; state rows
  MultiVector<double> v = ops.allocate(n, k + 1), h1 = ops.allocate(hr, k), h2 = ops.allocate(hr, k),
                      st = ops.allocate(sr, 1), beta = ops.allocate(1, 1);
  MultiVector<double> partial = ops.allocate(kt.partial_doubles(n, k + 1, 1, host_threads()), 1);
  const g::Context ctx{ops.stream(), partial.data(), partial.rows(), host_threads()};
  ops.fill_zero(h1.view());
  ops.fill_zero(h2.view());
  ops.fill_random_rows(v.columns(0, 1), seed, 0);
  ops.normalize_columns(v.columns(0, 1), beta.view());
  const double target = -1.0;
  ops.from_host(&target, 1, MvView<double>{st.data() + g::StateLayout::kTarget, 1, 1, sr, ops.space()});
  kt.start_cycle(ctx, lay, beta.view(), st.view());
  for (int j = 0; j < k; ++j) {
    const g::Basis basis{v.data(), n, n, n, 1};
    MvView<double> w = v.columns(j + 1, 1), c1 = h1.columns(j, 1), c2 = h2.columns(j, 1);
    detail::apply_ordered(ApplyOrder::events, ops, a, v.columns(j, 1), w);
    kt.ortho_pass(ctx, basis, j + 1, w, MvView<const double>{}, c1, true, -1);
    kt.ortho_pass(ctx, basis, j + 1, w, c1, c2, true, -1);
    kt.ortho_pass(ctx, basis, j + 1, w, c2, c2, false, k + 1);
    kt.arnoldi_step(ctx, lay, j, c1, c2, k + 1, st.view());
    kt.normalize(ctx, w, st.view(), nullptr, MvView<double>{});
  }
  std::vector<double> hh1(static_cast<std::size_t>(hr) * k), hh2(hh1.size()), sh(static_cast<std::size_t>(sr));
  ops.to_host(h1.view(), hh1.data(), hr);
  ops.to_host(h2.view(), hh2.data(), hr);
  ops.to_host(st.view(), sh.data(), sr);
  // The steps kept: all k, or up to the invariant subspace (whose Ritz values are exact).
  const int steps = static_cast<int>(sh[g::StateLayout::kLen]);
  if (!std::isfinite(sh[g::StateLayout::kEst]))
    throw InvalidArgument("GMRES polynomial: A·v is not finite (A holds a non-finite value)");
  // H of the steps taken: (steps + 1) × steps, h_{i,j} = H1 + H2, h_{j+1,j} = √(H2's norm row).
  std::vector<double> hs(static_cast<std::size_t>(steps + 1) * steps);
  for (int j = 0; j < steps; ++j) {
    for (int i = 0; i <= j; ++i) hs[std::size_t(j) * (steps + 1) + i] = hh1[std::size_t(j) * hr + i] + hh2[std::size_t(j) * hr + i];
    hs[std::size_t(j) * (steps + 1) + j + 1] = std::sqrt(std::max(0.0, hh2[std::size_t(j) * hr + k + 1]));
  }
  for (double x : hs)
    if (!std::isfinite(x)) throw InvalidArgument("GMRES polynomial: A·v is not finite (A holds a non-finite value)");
  PolyRoots r;
  if (steps > 0) r.roots = stable_leja_order(harmonic_ritz_roots(hs, steps));  // (none: A·v vanished on the start)
  r.arnoldi_steps = steps;
  r.seconds = detail::now_seconds() - t0;
  return r;
}

// ---- the preconditioner

void RowScaledOperator::apply(MvView<const double> x, MvView<double> y) const {
  detail::apply_ordered(ApplyOrder::events, ops_, a_, x, y);
  ops_.scale_rows(dinv_, y, y);  // (element-wise: in place is safe)
}

MultiVector<double> inverse_diagonal(DenseBlockOps& ops, const std::vector<double>& d) {
  std::vector<double> inv(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) inv[i] = std::abs(d[i]) > 1e-300 && std::isfinite(d[i]) ? 1.0 / d[i] : 1.0;
  MultiVector<double> out = ops.allocate(static_cast<std::int64_t>(d.size()), 1);
  ops.from_host(inv.data(), static_cast<std::int64_t>(d.size()), out.view());
  return out;
}

GmresPolynomial::GmresPolynomial(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols,
                                 std::vector<PolyRoot> roots, std::unique_ptr<ChebyshevStep> fused,
                                 const double* dinv, bool fp32_on_host)
    : a_(a), ops_(ops), max_cols_(max_cols), roots_(std::move(roots)), degree_(polynomial_degree(roots_)),
      fused_(std::move(fused)), dinv_(dinv),
      fp32_(fused_ && !dinv_ && (ops.space() == Space::device || fp32_on_host)) {
  if (roots_.empty()) throw InvalidArgument("GMRES polynomial: no roots");
  for (const PolyRoot& r : roots_)
    if (!std::isfinite(r.re) || !std::isfinite(r.im) || (r.re == 0.0 && r.im == 0.0))
      throw InvalidArgument(format("GMRES polynomial: root %g%+gi is zero or not finite", r.re, r.im));
  TCSOLVE_REQUIRE(a.rows() == a.cols(), "GMRES polynomial: A must be square");
  TCSOLVE_REQUIRE(max_cols >= 1, "GMRES polynomial: need at least one column");
  if (a.space() != ops.space() || (fused_ && fused_->space() != ops.space()))
    throw InvalidArgument("GMRES polynomial: A and the dense ops live in different spaces");
  const std::int64_t n = a.rows();
  t0_ = ops.allocate(n, max_cols), t1_ = ops.allocate(n, max_cols), t2_ = ops.allocate(n, max_cols);
  if (!fused_) w_ = ops.allocate(n, max_cols);
  if (dinv_) {  // D = 1/D⁻¹ on the device side: the reciprocal of the block, once
    u_ = ops.allocate(n, max_cols);
    d_ = ops.allocate(n, 1);
    std::vector<double> h(static_cast<std::size_t>(n));
    ops.to_host(MvView<const double>{dinv_, n, 1, n, ops.space()}, h.data(), n);
    for (double& x : h) x = 1.0 / x;
    ops.from_host(h.data(), n, d_.view());
  }
  coef_.assign(static_cast<std::size_t>(max_cols), 0.0);
  ones_.assign(static_cast<std::size_t>(max_cols), 1.0);
  zeros_.assign(static_cast<std::size_t>(max_cols), 0.0);
}

std::string GmresPolynomial::describe() const {
  int pairs = 0;
  for (const PolyRoot& r : roots_) pairs += r.pair();
  return format("GMRES polynomial p of degree %d%s (π = 1 − z·p: %d real roots, %d complex pairs)%s", degree_ - 1,
                dinv_ ? " in D⁻¹A (Jacobi-scaled)" : "", static_cast<int>(roots_.size()) - pairs, pairs,
                fused_ ? (" (" + fused_->describe() + ")").c_str() : "");
}

void GmresPolynomial::check(MvView<const double> v, MvView<double> out, const char* what) const {
  const std::int64_t n = a_.rows();
  if (v.rows != n || out.rows != n || out.cols != v.cols || v.cols < 1 || v.cols > max_cols_)
    throw InvalidArgument(format("GMRES polynomial %s: blocks of %lld × %lld and %lld × %lld for n = %lld and at "
                                 "most %lld columns",
                                 what, static_cast<long long>(v.rows), static_cast<long long>(v.cols),
                                 static_cast<long long>(out.rows), static_cast<long long>(out.cols),
                                 static_cast<long long>(n), static_cast<long long>(max_cols_)));
}

void GmresPolynomial::step(double a, MvView<const double> cur, double b, double c, MvView<double> next, double e,
                           MvView<const double> r) const {
  const std::int64_t s = cur.cols;
  columns_ += s;
  if (fused_) {
    fused_->step(a, cur, b, c, next, e, e != 0.0 ? r : cur, dinv_);  // (r unread for e = 0; shaped as cur)
    return;
  }
  MvView<double> w = w_.columns(0, s);
  ops_.queue().external_begin();
  a_.apply(cur, w);
  ops_.queue().external_end();
  if (dinv_) ops_.scale_rows(dinv_, w, w);  // K·cur = D⁻¹·A·cur
  ops_.chebyshev().axpbypcz(a, w, b, cur, c, next);
  if (e != 0.0) {
    std::fill(coef_.begin(), coef_.begin() + s, e);
    ops_.axpby_columns(coef_.data(), r, ones_.data(), next);
  }
}

// The applies: as they are without a diagonal; scaled, on u = D⁻¹·v (gmres_polynomial.hpp).
void GmresPolynomial::apply_preconditioned(MvView<const double> v, MvView<double> w) const {
  check(v, w, "B·v");
  if (!dinv_) return residual_polynomial(v, w);
  // B·v = D·(u − π(K)·u), u = D⁻¹·v
  MvView<double> u = u_.columns(0, v.cols);
  ops_.scale_rows(dinv_, v, u);
  residual_polynomial(u, w);
  ops_.scale_rows(d_.data(), w, w);
}

void GmresPolynomial::apply_polynomial(MvView<const double> v, MvView<double> y) const {
  check(v, y, "p(A)·v");
  if (!dinv_) return polynomial_sum(v, y);
  MvView<double> u = u_.columns(0, v.cols);  // P·v = p(K)·(D⁻¹·v)
  ops_.scale_rows(dinv_, v, u);
  polynomial_sum(u, y);
}

// w = v − π(A)·v (A: K when scaled). The product's current factor input `cur` lives in v (at
// first), w or t0; the pair's t in t1. The first factor's output buffer is chosen so that the last factor finds its
// input where its fused form needs it: a real last factor reads cur ≠ w and writes w; a pair
// updates cur = w in place (or starts from v).
void GmresPolynomial::residual_polynomial(MvView<const double> v, MvView<double> w) const {
  const std::int64_t s = v.cols;
  const std::size_t nf = roots_.size();
  MvView<double> t0 = t0_.columns(0, s), t = t1_.columns(0, s);
  auto other = [&](const double* p) { return p == w.data ? t0 : w; };
  // Where the first factor writes: real factors between the first and the last move the input
  // to the other buffer; pairs keep it.
  int moves = 0;
  for (std::size_t i = 1; i + 1 < nf; ++i) moves += !roots_[i].pair();
  const MvView<double> need = roots_.back().pair() ? w : t0;
  const MvView<double> first = moves % 2 == 0 ? need : other(need.data);
  MvView<const double> cur = v;
  bool in_v = true;
  for (std::size_t i = 0; i + 1 < nf; ++i) {
    const PolyRoot& r = roots_[i];
    if (!r.pair()) {  // cur ← cur − (1/θ)·A·cur
      const MvView<double> out = in_v ? first : other(cur.data);
      step(-1.0 / r.re, cur, 1.0, 0.0, out, 0.0, {});
      cur = out;
    } else {  // t = 2a·cur − A·cur; cur ← cur − (1/μ)·A·t
      const double mu = r.re * r.re + r.im * r.im;
      step(-1.0, cur, 2.0 * r.re, 0.0, t, 0.0, {});
      if (in_v) {
        step(-1.0 / mu, t, 0.0, 0.0, first, 1.0, v);
        cur = first;
      } else {
        step(-1.0 / mu, t, 0.0, 1.0, MvView<double>{const_cast<double*>(cur.data), cur.rows, s, cur.ld, cur.space},
             0.0, {});
      }
    }
    in_v = false;
  }
  const PolyRoot& r = roots_.back();
  if (!r.pair()) {  // w = v − cur + (1/θ)·A·cur
    step(1.0 / r.re, cur, -1.0, 0.0, w, 1.0, v);
    return;
  }
  const double mu = r.re * r.re + r.im * r.im;  // w = v − cur + (1/μ)·A·t
  step(-1.0, cur, 2.0 * r.re, 0.0, t, 0.0, {});
  if (in_v) step(1.0 / mu, t, 0.0, 0.0, w, 0.0, {});
  else step(1.0 / mu, t, 0.0, -1.0, w, 1.0, v);  // (cur is w: see `first`)
}

// y = Σ_i c_i·(factor i's input): c = 1/θ on the input itself, or 1/μ on the pair's t. The input
// moves between t0 and t2; t in t1. y is written by the first term, accumulated after.
void GmresPolynomial::polynomial_sum(MvView<const double> v, MvView<double> y) const {
  const std::int64_t s = v.cols;
  const std::size_t nf = roots_.size();
  MvView<double> t0 = t0_.columns(0, s), t2 = t2_.columns(0, s), t = t1_.columns(0, s);
  MvView<const double> cur = v;
  for (std::size_t i = 0; i < nf; ++i) {
    const PolyRoot& r = roots_[i];
    const bool last = i + 1 == nf;
    const MvView<double> out = cur.data == t0.data ? t2 : t0;
    const double mu = r.re * r.re + r.im * r.im;
    if (r.pair()) step(-1.0, cur, 2.0 * r.re, 0.0, t, 0.0, {});  // t = 2a·cur − A·cur
    std::fill(coef_.begin(), coef_.begin() + s, r.pair() ? 1.0 / mu : 1.0 / r.re);
    ops_.axpby_columns(coef_.data(), r.pair() ? MvView<const double>(t) : cur, i == 0 ? zeros_.data() : ones_.data(), y);
    if (last) break;
    if (!r.pair()) {  // cur ← cur − (1/θ)·A·cur
      step(-1.0 / r.re, cur, 1.0, 0.0, out, 0.0, {});
      cur = out;
    } else if (cur.data == v.data) {  // cur ← v − (1/μ)·A·t
      step(-1.0 / mu, t, 0.0, 0.0, out, 1.0, v);
      cur = out;
    } else {  // cur ← cur − (1/μ)·A·t in place
      step(-1.0 / mu, t, 0.0, 1.0, MvView<double>{const_cast<double*>(cur.data), cur.rows, s, cur.ld, cur.space}, 0.0,
           {});
    }
  }
}

void GmresPolynomial::reserve_fp32() const {
  if (!fp32_) throw InvalidArgument("GMRES polynomial: no fp32 apply (it needs A's fused step and no row scaling)");
  if (v32_.data()) return;
  const std::int64_t n = a_.rows(), mc = max_cols_;
  v32_ = ops_.allocate32(n, mc), ya32_ = ops_.allocate32(n, mc), yb32_ = ops_.allocate32(n, mc);
  t32_ = ops_.allocate32(n, mc);
  const std::size_t nf = roots_.size(), m = static_cast<std::size_t>(mc);
  std::vector<double> f(m * nf), first(m, roots_[0].pair() ? -1.0 : -1.0 / roots_[0].re), zero(m, 0.0);
  for (std::size_t i = 0; i < nf; ++i)
    std::fill(f.begin() + i * m, f.begin() + (i + 1) * m, roots_[i].pair() ? 1.0 : 1.0 / roots_[i].re);
  f_ = ops_.allocate(mc, static_cast<std::int64_t>(nf)), first_ = ops_.allocate(mc, 1), zero_ = ops_.allocate(mc, 1);
  ops_.from_host(f.data(), mc, f_.view());
  ops_.from_host(first.data(), mc, first_.view());
  ops_.from_host(zero.data(), mc, zero_.view());
}

void GmresPolynomial::apply_polynomial32(MvView<const double> v, MvView<double> y) const {
  check(v, y, "p(A)·v in fp32");
  if (!v32_.data())
    throw InvalidArgument("GMRES polynomial: the fp32 apply's workspace is not reserved (reserve_fp32, where has_fp32)");
  const std::int64_t s = v.cols;
  const std::size_t nf = roots_.size();
  MvView<float> v32 = v32_.columns(0, s), ya = ya32_.columns(0, s), yb = yb32_.columns(0, s), t = t32_.columns(0, s);
  auto fcol = [&](std::size_t i) { return f_.data() + i * static_cast<std::size_t>(f_.rows()); };
  // The first factor from y_0 = 0: a real root gives y_1 = v/θ_0 with the rounding of v itself
  // (residual32: r = fp32(0·v − (−1/θ_0)·v), z = fp32(θ_0·r's value)); a pair y_2 = (2α/μ)·v − (1/μ)·A·v.
  const PolyRoot& r0 = roots_[0];
  if (!r0.pair()) {
    fused_->residual32(0.0, v, v, first_.data(), r0.re, ya, v32);
  } else {
    const double mu = r0.re * r0.re + r0.im * r0.im;
    fused_->residual32(0.0, v, v, first_.data(), 1.0, v32, t);  // v32 = fp32(v) (t: scratch)
    fused_->step32(-1.0 / mu, v32, 2.0 * r0.re / mu, 0.0, ya, MvView<const float>{}, nullptr);
    columns_ += s;
  }
  MvView<float> cur = ya;
  for (std::size_t i = 1; i < nf; ++i) {
    const PolyRoot& r = roots_[i];
    if (!r.pair()) {  // y ← y − (1/θ)·A·y + (1/θ)·v, into the other iterate
      const MvView<float> out = cur.data == ya.data ? yb : ya;
      fused_->step32(-1.0 / r.re, cur, 1.0, 0.0, out, v32, fcol(i));
      cur = out;
      columns_ += s;
    } else {  // t = v − A·y; y ← y + (2α/μ)·t − (1/μ)·A·t in place
      const double mu = r.re * r.re + r.im * r.im;
      fused_->step32(-1.0, cur, 0.0, 0.0, t, v32, fcol(i));
      fused_->step32(-1.0 / mu, t, 2.0 * r.re / mu, 1.0, cur, MvView<const float>{}, nullptr);
      columns_ += 2 * s;
    }
  }
  fused_->combine32(v, zero_.data(), cur, y);  // y = 0·v + fp64(cur), exactly
}

namespace {
// Roots from `degree` Arnoldi steps on A (on D⁻¹A with dinv), then the polynomial with A's fused
// step from make_step() (called only where a root was found: nullptr is none).
template <class MakeStep>
BuiltPolynomial build_polynomial(const LinearOperator<double>& a, DenseBlockOps& ops, std::int64_t max_cols,
                                 int degree, std::uint64_t seed, const double* dinv, MakeStep&& make_step) {
  const RowScaledOperator k(a, ops, dinv);
  PolyRoots roots = gmres_polynomial_roots(dinv ? static_cast<const LinearOperator<double>&>(k) : a, ops, degree, seed);
  BuiltPolynomial out;
  out.arnoldi_steps = roots.arnoldi_steps;
  if (!roots.roots.empty())
    out.poly = std::make_unique<GmresPolynomial>(a, ops, max_cols, std::move(roots.roots), make_step(), dinv);
  return out;
}
}  // namespace

BuiltPolynomial make_gmres_polynomial(const LinearOperator<double>& a, const Csr<double>* csr, DenseBlockOps& ops,
                                      std::int64_t max_cols, int degree, std::uint64_t seed, const double* dinv) {
  return build_polynomial(a, ops, max_cols, degree, seed, dinv, [&]() -> std::unique_ptr<ChebyshevStep> {
    std::unique_ptr<ChebyshevStep> step;
    if (csr && chebyshev_step_pays(csr->nrows, csr->nnz())) {
      if (ops.space() == Space::device) step = make_chebyshev_step_on_operator(a, *csr, Precision::fp64, ops.stream());
      if (!step) step = make_chebyshev_step(*csr, ops.backend(), Precision::fp64, ops.stream());
    }
    return step;
  });
}

BuiltPolynomial make_gmres_polynomial(const LinearOperator<double>& a, std::unique_ptr<ChebyshevStep> step,
                                      DenseBlockOps& ops, std::int64_t max_cols, int degree, std::uint64_t seed) {
  return build_polynomial(a, ops, max_cols, degree, seed, nullptr, [&] { return std::move(step); });
}

}  // namespace tcsolve::krylov
