// The folded operator (solvers/eigs/eigs.hpp): the k pairs nearest c where nothing can be factored.
//   F = (A − cB)·B⁻¹·(A − cB)      (B = I: (A − cI)²)
// F·x = μ·B·x holds the pairs of A·x = λ·B·x with μ = (λ − c)²: the smallest μ are the λ nearest
// c. The run on F (operator form) finds them; Rayleigh–Ritz with (A, B) on its vectors separates
// λ = c ± √μ and gives the pairs their own values, which the driver then tests like any pair.
// Per apply of F to w columns: two applies of A (of B too when c ≠ 0) and one of B⁻¹ (the
// caller's, an exact diagonal, or block CG on B to 1e-12); two n × w blocks of workspace.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/device.hpp"
#include "core/error.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/eigs/steps.hpp"
#include "solvers/solver_common.hpp"

namespace tcsolve::eigs_detail {
namespace {

// What the folded run attains on A: its own test at tol² (floored at 1e-14) of ‖F‖ = ‖A − cB‖²
// leaves residuals of A near 1e-12·‖A‖ (n = 60..1000); a norm test asked below 1e-10 (SciPy's
// tol = 0, machine precision) is tested at 1e-10, and method_reason says so.
constexpr double kFoldedTol = 1e-10;

// B⁻¹ = diag(1/b_ii) for a diagonal B (exact).
class DiagonalInverse final : public LinearOperator<double> {
 public:
  DiagonalInverse(DenseBlockOps& ops, const std::vector<double>& diag_b) : ops_(ops), d_(ops.allocate(static_cast<std::int64_t>(diag_b.size()), 1)) {
    std::vector<double> inv(diag_b.size());
    for (std::size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0 / diag_b[i];
    ops.from_host(inv.data(), d_.rows(), d_.view());
  }
  std::int64_t rows() const override { return d_.rows(); }
  std::int64_t cols() const override { return d_.rows(); }
  Space space() const override { return ops_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override { ops_.scale_rows(d_.data(), x, y); }

 private:
  DenseBlockOps& ops_;
  MultiVector<double> d_;
};

// B⁻¹ by block CG on B (Jacobi from diag(B) when known): relative residual 1e-12 per column.
class CgInverse final : public LinearOperator<double> {
 public:
  CgInverse(const LinearOperator<double>& b, DenseBlockOps& ops, const std::vector<double>& diag_b, std::string name,
            std::int64_t width)
      : b_(b), ops_(ops), name_(std::move(name)) {
    co_.tol = 1e-12;
    co_.max_iterations = std::max<std::int64_t>(1000, 10 * b.rows());
    co_.jacobi_diagonal = diag_b;
    co_.keep_history = false;
    co_.apply_order = ApplyOrder::synchronize;
    grow(width);
  }
  std::int64_t rows() const override { return b_.rows(); }
  std::int64_t cols() const override { return b_.cols(); }
  Space space() const override { return ops_.space(); }
  void apply(MvView<const double> x, MvView<double> y) const override {
    if (x.cols > width_) grow(x.cols);
    const SolveResult r = cg_->solve(x, y, false);
    if (r.status != SolverStatus::converged)
      throw InvalidArgument(name_ + ": block CG on it did not reach " + fmt("%g", co_.tol) +
                            " while applying its inverse for the folded operator (" + r.reason +
                            "); give B^-1 (Python: Minv=), or allow a factorization");
  }

 private:
  void grow(std::int64_t width) const {
    width_ = width;
    cg_ = std::make_unique<BlockCg>(b_, ops_, width, co_);
  }
  const LinearOperator<double>& b_;
  DenseBlockOps& ops_;
  std::string name_;
  CgOptions co_;
  mutable std::int64_t width_ = 0;
  mutable std::unique_ptr<BlockCg> cg_;
};

// F = (A − cB)·B⁻¹·(A − cB) on blocks (binv == nullptr: B = I).
class FoldedOperator final : public LinearOperator<double> {
 public:
  FoldedOperator(const Problem& s, double c, const LinearOperator<double>* binv, std::int64_t width)
      : s_(s), c_(c), binv_(binv), w1_(s.ops->allocate(s.n, width)), w2_(s.ops->allocate(s.n, width)),
        minus_c_(width, -c), one_(width, 1.0) {}
  std::int64_t rows() const override { return s_.n; }
  std::int64_t cols() const override { return s_.n; }
  Space space() const override { return s_.ops->space(); }
  void apply(MvView<const double> x, MvView<double> y) const override {
    DenseBlockOps& ops = *s_.ops;
    MvView<double> w1 = workspace_view(ops, w1_, s_.n, x.cols), w2 = workspace_view(ops, w2_, s_.n, x.cols);
    shifted(x, w1, w2);  // w1 = (A − cB)·x
    if (!binv_) return shifted(w1, y, w2);
    fenced_apply(ops, *binv_, w1, w2);  // w2 = B⁻¹·w1
    shifted(w2, y, w1);                 // y = (A − cB)·w2
  }

 private:
  // y = A·x − c·B·x (tmp: B·x).
  void shifted(MvView<const double> x, MvView<double> y, MvView<double> tmp) const {
    DenseBlockOps& ops = *s_.ops;
    fenced_apply(ops, *s_.aop, x, y);
    if (c_ == 0.0) return;
    MvView<const double> bx = x;
    if (s_.bop) fenced_apply(ops, *s_.bop, x, tmp), bx = tmp;
    if (static_cast<std::int64_t>(one_.size()) < x.cols) minus_c_.assign(x.cols, -c_), one_.assign(x.cols, 1.0);
    ops.axpby_columns(minus_c_.data(), bx, one_.data(), y);
  }
  const Problem& s_;
  double c_;
  const LinearOperator<double>* binv_;
  mutable MultiVector<double> w1_, w2_;
  mutable std::vector<double> minus_c_, one_;  // the columns' coefficients (−c, 1), sized once
};

// The inner run's options: the k smallest of F at tol² against ‖F‖ (conv norm: a relative test at
// μ ≈ 0 would lie below rounding), LOBPCG (B applied, never inverted) unless its block does not fit
// or Lanczos was asked for.
EigsOptions folded_options(const EigsOptions& opt, double tol, std::int64_t n) {
  EigsOptions o = opt;
  o.which = Which::smallest, o.has_sigma = false, o.sigma = 0.0;
  o.tol = std::max(tol * tol, 1e-14), o.conv = ConvTest::norm;
  const bool lobpcg_fits = 3 * (opt.k + default_lobpcg_guard(opt.k)) <= n;
  if (opt.method != EigsMethod::lanczos) o.method = lobpcg_fits ? EigsMethod::lobpcg : EigsMethod::lanczos;
  o.v0.clear(), o.constraints.clear();
  o.mass_inverse = nullptr, o.preconditioner = nullptr, o.precond = EigsPrecond::none;
  o.allow_factor = false, o.certify = false, o.want_vectors = true;
  o.checkpoint_every = 0.0, o.on_checkpoint = nullptr;
  return o;
}

// Rayleigh–Ritz of (A, B) on the columns of x (host n × m): the pairs, B-normalized, with their
// true residuals on the problem.
PairSet rayleigh_ritz(const Problem& s, const std::vector<double>& x_host, std::int64_t m) {
  DenseBlockOps& ops = *s.ops;
  const std::int64_t n = s.n;
  MultiVector<double> x = ops.allocate(n, m), ax = ops.allocate(n, m), bx;
  ops.from_host(x_host.data(), n, x.view());
  apply_a(s, x.view(), ax.view());
  if (s.bop) bx = ops.allocate(n, m), fenced_apply(ops, *s.bop, x.view(), bx.view());
  Eigen::MatrixXd h(m, m), g(m, m);
  ops.gram(x.view(), ax.view(), h.data(), m);
  ops.gram(x.view(), s.bop ? MvView<const double>(bx.view()) : MvView<const double>(x.view()), g.data(), m);
  Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (h + h.transpose()), 0.5 * (g + g.transpose()));
  if (es.info() != Eigen::Success)
    throw Error("folded operator: the Rayleigh-Ritz problem of its vectors is singular (dependent vectors)");
  const Eigen::MatrixXd v = es.eigenvectors();
  PairSet p;
  p.x = ops.allocate(n, m);
  ops.gemm(1.0, x.view(), v.data(), m, 0.0, p.x.view());
  detail::ApplyClock clock(ops);
  rayleigh_and_residuals(s, clock, p.x.view(), ax.view(), s.bop ? bx.view() : MvView<double>{}, p.values, p.rn,
                         p.xn, p.rq_dev);
  return p;
}

// The inner run's verdict on the set folded into the result of the pairs on A.
void settle_folded(const EigsResult& inner, EigsResult& r) {
  r.verification = inner.verification;
  r.certified = inner.certified;
  r.certificate = "the folded operator's set: " + inner.certificate;
  if (r.status != SolverStatus::converged || inner.status == SolverStatus::converged) return;
  r.status = inner.status == SolverStatus::interrupted ? SolverStatus::interrupted : SolverStatus::unverified;
  r.reason = inner.status == SolverStatus::unverified || inner.status == SolverStatus::interrupted
                 ? inner.reason
                 : "every pair passes its residual test on A, but the folded run behind them did not converge (" +
                       inner.reason + "): that no eigenvalue is missing is not verified";
}

}  // namespace

EigsResult run_folded(Problem& s, const EigsOptions& opt, const PlanFacts& facts, double c) {
  if (s.global_n() != s.n)
    throw InvalidArgument("eigenvalues nearest " + fmt("%g", c) + " need a factorization or the folded operator, "
                          "neither of which a distributed problem has");
  EigsOptions nopt = opt;  // the pairs' own selection and test
  nopt.which = Which::nearest, nopt.has_sigma = true, nopt.sigma = c;
  const std::string what = "the " + std::to_string(opt.k) + " eigenvalues nearest " + fmt("%g", c);
  if (s.a && (opt.method == EigsMethod::dense || (opt.method == EigsMethod::automatic && dense_by_size(facts, opt.k)))) {
    nopt.method = EigsMethod::dense;  // (a small matrix: all pairs densely, no factorization needed)
    EigsResult r = run_all(s, nopt, facts, nullptr);
    r.why = what + " by a dense solve (no factorization: " + facts.factor_why + "); " + r.why;
    return r;
  }
  std::string note;
  if (opt.conv == ConvTest::norm && opt.tol < kFoldedTol) {
    nopt.tol = kFoldedTol;
    note = "; tested at the folded operator's attainable floor, conv norm tol " + fmt("%g", kFoldedTol) +
           " (below it needs a factorization)";
  }
  // B⁻¹: the caller's, exact for a diagonal B, else block CG on B.
  std::unique_ptr<LinearOperator<double>> own_binv;
  const LinearOperator<double>* binv = opt.mass_inverse;
  const std::int64_t width = 2 * (opt.k + 8);
  std::string binv_how = !s.bop ? "B = I" : binv ? "B^-1 given" : "B^-1 by block CG on B";
  if (s.bop && !binv) {
    if (s.b && is_diagonal(*s.b)) {
      own_binv = std::make_unique<DiagonalInverse>(*s.ops, s.diag_b);
      binv_how = "B^-1 exact (B diagonal)";
    } else {
      own_binv = std::make_unique<CgInverse>(*s.bop, *s.ops, s.diag_b, opt.mass_name, width);
    }
    binv = own_binv.get();
  }
  const FoldedOperator f(s, c, s.bop ? binv : nullptr, width);
  Problem sf;
  sf.aop = &f, sf.bop = s.bop, sf.ops = s.ops, sf.n = s.n;
  sf.foreign_operator = true;  // (F fences its inner applies by host synchronizations)
  sf.a_norm = estimate_norm(f, *s.ops);
  sf.b_norm = s.b_norm, sf.binv_norm = s.binv_norm, sf.diag_b = s.diag_b;
  const PlanFacts ff = operator_facts(facts, "the folded operator is not a matrix", sf.a_norm);
  EigsResult inner = run_all(sf, folded_options(opt, nopt.tol, s.global_n()), ff, nullptr);
  const double t0 = detail::now_seconds();
  RunOut run;
  run.pairs = rayleigh_ritz(s, inner.vectors, static_cast<std::int64_t>(inner.values.size()));
  run.status = inner.status, run.reason = inner.reason;
  run.iterations = inner.iterations, run.applies = inner.operator_applies, run.history = std::move(inner.history);
  EigsResult r = finish(s, nopt, run.pairs, run, c);
  settle_folded(inner, r);
  r.method = inner.method, r.precision = inner.precision, r.runs = std::move(inner.runs);
  r.why = what + " from the folded operator (A - cB) B^-1 (A - cB) and Rayleigh-Ritz with (A, B) (no factorization: " +
          facts.factor_why + "; " + binv_how + "); its run: " + inner.why + note;
  r.predicted_seconds = inner.predicted_seconds, r.plan_seconds = inner.plan_seconds;
  r.setup_seconds = inner.setup_seconds, r.solve_seconds = inner.solve_seconds;
  r.verify_seconds = inner.verify_seconds + (detail::now_seconds() - t0);
  return r;
}

}  // namespace tcsolve::eigs_detail
