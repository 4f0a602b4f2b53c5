// Constraints (solvers/eigs/eigs.hpp; SciPy lobpcg's Y): the pairs in the B-orthogonal complement
// of span(Y), from a run on
//   A' = Pᵀ·A·P + s·(B·Y)·G⁻¹·(B·Y)ᵀ,   P = I − Y·G⁻¹·Yᵀ·B,   G = Yᵀ·B·Y = L·Lᵀ.
// On the complement (Yᵀ·B·x = 0, so P·x = x) A'·x = Pᵀ·A·x: a returned pair's residual
// A'·x − λ·B·x is the projected problem's, orthogonal to Y; by Cauchy's interlacing its
// eigenvalues lie within A's. On span(Y) (P·Y = 0) A'·Y = s·B·Y: the eigenvalue s, placed beyond
// the wanted end, so no vector of span(Y) is returned (a returned vector's component in span(Y)
// is at most its residual over the gap to s).
// Per apply to w columns: one apply of A, two Gram products with the n × p blocks (p × w to the
// host, G⁻¹ by the Cholesky factor there), two block updates; one n × w block of workspace.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/finite.hpp"
#include "solvers/eigs/steps.hpp"

namespace tcsolve::eigs_detail {

void validate_constraints(const EigsOptions& opt, std::int64_t n) {
  if (opt.constraints.empty()) return;
  const std::size_t size = opt.constraints.size();
  if (size % static_cast<std::size_t>(n) != 0)
    throw InvalidArgument("constraints: " + std::to_string(size) + " values is not a whole number of columns of n = " +
                          std::to_string(n));
  const std::int64_t p = static_cast<std::int64_t>(size) / n;
  if (p + opt.k >= n)
    throw InvalidArgument("constraints: " + std::to_string(p) + " columns and k = " + std::to_string(opt.k) +
                          ": need columns + k < n = " + std::to_string(n));
  if (const std::int64_t i = first_non_finite(opt.constraints.data(), static_cast<std::int64_t>(size)); i >= 0)
    throw InvalidArgument("constraints: non-finite value at row " + std::to_string(i % n) + ", column " +
                          std::to_string(i / n));
  if (opt.has_sigma || opt.which == Which::nearest || opt.which == Which::smallest_magnitude)
    throw InvalidArgument(std::string("constraints serve the ends (smallest, largest, largest_magnitude, both_ends), "
                                      "not which = ") + to_string(opt.which) + (opt.has_sigma ? " with sigma" : "") +
                          ": that needs a factorization of the constrained problem, which is an operator");
  if (opt.method == EigsMethod::dense)
    throw InvalidArgument("method dense cannot honour constraints (the constrained problem is an operator, not a "
                          "matrix): use auto, lanczos, lobpcg or chebyshev");
  if (opt.precond == EigsPrecond::factor)
    throw InvalidArgument("precond factor cannot honour constraints (the constrained problem is not factored)");
}

namespace {

// Y and B·Y in the ops' space, and the Cholesky factor of G = Yᵀ·B·Y on the host.
class Constraints {
 public:
  Constraints(const Problem& s, const HostBlock& y_host) : ops_(*s.ops), n_(s.n) {
    p_ = static_cast<std::int64_t>(y_host.size()) / n_;
    y_ = ops_.allocate(n_, p_), by_ = ops_.allocate(n_, p_);
    ops_.from_host(y_host.data(), n_, y_.view());
    if (s.bop) fenced_apply(ops_, *s.bop, y_.view(), by_.view());
    else ops_.copy(y_.view(), by_.view());
    Eigen::MatrixXd g(p_, p_);
    ops_.gram(y_.view(), by_.view(), g.data(), p_);
    g = 0.5 * (g + g.transpose()).eval();
    const Eigen::VectorXd ev = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(g, Eigen::EigenvaluesOnly).eigenvalues();
    if (!(ev(p_ - 1) > 0 && ev(0) > 1e-12 * ev(p_ - 1)))
      throw InvalidArgument("constraints Y are rank deficient: the columns must be linearly independent (Y^T B Y has "
                            "eigenvalues from " + fmt("%.3g", ev(0)) + " to " + fmt("%.3g", ev(p_ - 1)) + ")");
    llt_.compute(g);
  }
  std::int64_t p() const { return p_; }
  MvView<const double> y() const { return y_.view(); }
  MvView<const double> by() const { return by_.view(); }
  // c = G⁻¹·Wᵀ·X (host p × w) for W = B·Y (coef_b) or W = Y (coef).
  void coef_b(MvView<const double> x, std::vector<double>& c) const { solve(by_.view(), x, c); }
  void coef(MvView<const double> x, std::vector<double>& c) const { solve(y_.view(), x, c); }
  // X ← P·X = X − Y·G⁻¹·(B·Y)ᵀ·X; c = the coefficients removed.
  void project(MvView<double> x, std::vector<double>& c) const {
    coef_b(x, c);
    ops_.gemm(-1.0, y_.view(), c.data(), p_, 1.0, x);
  }

 private:
  void solve(MvView<const double> w, MvView<const double> x, std::vector<double>& c) const {
    c.resize(static_cast<std::size_t>(p_ * x.cols));
    ops_.gram(w, x, c.data(), p_);
    Eigen::Map<Eigen::MatrixXd> cm(c.data(), p_, x.cols);
    llt_.solveInPlace(cm);
  }
  DenseBlockOps& ops_;
  std::int64_t n_, p_ = 0;
  MultiVector<double> y_, by_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
};

// What the operators of the constrained problem share: n × n in the ops' space, the constraints,
// one n × w workspace block.
class ConstraintsOperator : public LinearOperator<double> {
 public:
  std::int64_t rows() const override { return s_.n; }
  std::int64_t cols() const override { return s_.n; }
  Space space() const override { return s_.ops->space(); }

 protected:
  ConstraintsOperator(const Problem& s, const Constraints& c, std::int64_t width)
      : s_(s), c_(c), w_(s.ops->allocate(s.n, width)) {}
  MvView<double> work(std::int64_t cols) const { return workspace_view(*s_.ops, w_, s_.n, cols); }
  const Problem& s_;
  const Constraints& c_;

 private:
  mutable MultiVector<double> w_;
};

// A' = Pᵀ·A·P + s·(B·Y)·G⁻¹·(B·Y)ᵀ.
class ConstrainedOperator final : public ConstraintsOperator {
 public:
  ConstrainedOperator(const Problem& s, const Constraints& c, double shift, std::int64_t width)
      : ConstraintsOperator(s, c, width), shift_(shift) {}
  void apply(MvView<const double> x, MvView<double> y) const override {
    DenseBlockOps& ops = *s_.ops;
    MvView<double> w = work(x.cols);
    ops.copy(x, w);
    c_.project(w, cb_);                 // w = P·x, cb = G⁻¹·(BY)ᵀ·x
    fenced_apply(ops, *s_.aop, w, y);   // y = A·P·x
    c_.coef(y, d_);                     // d = G⁻¹·Yᵀ·A·P·x
    for (std::size_t i = 0; i < d_.size(); ++i) d_[i] = shift_ * cb_[i] - d_[i];
    ops.gemm(1.0, c_.by(), d_.data(), c_.p(), 1.0, y);  // y = Pᵀ·A·P·x + s·BY·cb
  }

 private:
  double shift_;
  mutable std::vector<double> cb_, d_;
};

// A LOBPCG preconditioner T for A': P·T·Pᵀ + Y·G⁻¹·Yᵀ/|s|. On the complement T with its output
// kept there (SciPy's lobpcg applies the constraints to T·R); on span(Y) it inverts the shift, so
// that what the block brings into span(Y) is still driven out (without it the residuals stall:
// diag(1..100), T = A⁻¹, three constraints: 0 of 4 pairs in 1000 iterations, 13 without Y).
class ProjectedPreconditioner final : public ConstraintsOperator {
 public:
  ProjectedPreconditioner(const Problem& s, const Constraints& c, const LinearOperator<double>& t, double shift,
                          std::int64_t width)
      : ConstraintsOperator(s, c, width), t_(t), inv_shift_(1.0 / std::abs(shift)) {}
  void apply(MvView<const double> x, MvView<double> y) const override {
    DenseBlockOps& ops = *s_.ops;
    MvView<double> w = work(x.cols);
    c_.coef(x, cy_);  // cy = G⁻¹·Yᵀ·x
    ops.copy(x, w);
    ops.gemm(-1.0, c_.by(), cy_.data(), c_.p(), 1.0, w);  // w = Pᵀ·x
    fenced_apply(ops, t_, w, y);                          // y = T·Pᵀ·x
    c_.coef_b(y, cb_);
    for (std::size_t i = 0; i < cb_.size(); ++i) cb_[i] = inv_shift_ * cy_[i] - cb_[i];
    ops.gemm(1.0, c_.y(), cb_.data(), c_.p(), 1.0, y);  // y = P·T·Pᵀ·x + Y·cy/|s|
  }

 private:
  const LinearOperator<double>& t_;
  double inv_shift_;
  mutable std::vector<double> cy_, cb_;
};

// s beyond the wanted end: half the spectrum's width past its bound (Gershgorin's interval of A,
// else ±‖A‖·‖B⁻¹‖ — an estimate in operator form, whence the margin).
double constraint_shift(const Problem& s, const PlanFacts& facts, Which which) {
  const SpectrumBounds b = spectrum_bounds(facts);
  const double r = s.a_norm * s.binv_norm;
  const double lo = std::isfinite(b.lo) ? b.lo : -r, hi = std::isfinite(b.hi) ? b.hi : r;
  const double width = std::max({hi - lo, std::abs(lo), std::abs(hi)});
  return which == Which::largest ? lo - 0.5 * width : hi + 0.5 * width;
}

}  // namespace

EigsResult run_constrained(Problem& s, const EigsOptions& opt, const PlanFacts& facts) {
  TCSOLVE_REQUIRE(opt.which == Which::smallest || opt.which == Which::largest,
                  "constraints: a run for one end (validate_constraints refuses the rest)");
  DenseBlockOps& ops = *s.ops;
  const Constraints c(s, opt.constraints);
  const double shift = constraint_shift(s, facts, opt.which);
  const std::int64_t width = 2 * (opt.k + 8);
  const ConstrainedOperator a2(s, c, shift, width);
  std::unique_ptr<ProjectedPreconditioner> t;
  if (opt.preconditioner) t = std::make_unique<ProjectedPreconditioner>(s, c, *opt.preconditioner, shift, width);
  EigsOptions o = opt;
  o.constraints.clear();
  o.preconditioner = t.get();
  if (!opt.v0.empty()) {  // the start block in the complement (as SciPy's lobpcg applies Y to X)
    const std::int64_t cols = static_cast<std::int64_t>(opt.v0.size()) / s.n;
    MultiVector<double> v = ops.allocate(s.n, cols);
    ops.from_host(opt.v0.data(), s.n, v.view());
    std::vector<double> coef, host(opt.v0.size());
    c.project(v.view(), coef);
    ops.to_host(v.view(), host.data(), s.n);
    o.v0 = HostBlock(std::move(host));
  }
  Problem sc;
  sc.aop = &a2, sc.bop = s.bop, sc.ops = s.ops, sc.n = s.n;
  sc.foreign_operator = true;  // (A' fences its inner applies by host synchronizations)
  sc.a_norm = estimate_norm(a2, ops);
  sc.b_norm = s.b_norm, sc.binv_norm = s.binv_norm, sc.diag_b = s.diag_b;
  EigsResult r = run_all(sc, o, operator_facts(facts, "constraints (the constrained problem is an operator)", sc.a_norm), nullptr);
  r.why = "constrained to the " + std::string(s.bop ? "B-orthogonal" : "orthogonal") + " complement of " +
          std::to_string(c.p()) + " column(s) Y (span(Y) at " + fmt("%.6g", shift) + ", beyond the " +
          (opt.which == Which::largest ? "smallest" : "largest") + " end)" + (t ? ", the preconditioner projected" : "") +
          "; " + r.why;
  return r;
}

}  // namespace tcsolve::eigs_detail
