// svds entry points (solvers/svd/svds.hpp): argument checks, the choice between the block GKL
// iteration and the dense path, the Csr form's operators, the verification of the dense path.
#include "solvers/svd/svds.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/trace.hpp"
#include "factor/engine_rates.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/svd/bidiag.hpp"
#include "solvers/svd/centered.hpp"
#include "solvers/svd/certificate.hpp"
#include "solvers/svd/plan.hpp"
#include "solvers/svd/recheck.hpp"
#include "solvers/svd/verify.hpp"
#include "spmm/sparse_operator.hpp"

namespace tcsolve {

std::vector<double> SvdResult::explained_variance() const {
  std::vector<double> out;
  if (m < 2) return out;
  for (double s : values) out.push_back(s * s / static_cast<double>(m - 1));
  return out;
}

std::vector<double> SvdResult::explained_variance_ratio() const {
  std::vector<double> out;
  if (!(total_sq > 0)) return out;
  for (double s : values) out.push_back(s * s / total_sq);
  return out;
}

namespace {

// The dense path, for min(m, n) too small for the Krylov basis: the smaller side's identity
// through A (n ≤ m: A·I_n, m × n) or Aᵀ (Aᵀ·I_m, n × m) in chunks of 64 columns, Eigen's BDCSVD
// on the host (O(m·n·min(m, n))), then the same true-residual check as the iteration.
constexpr double kDenseMaxEntries = 1u << 27;  // 1 GiB of doubles

SvdResult svds_dense(const LinearOperator<double>& a, const LinearOperator<double>& at,
                     DenseBlockOps& ops, const SvdOptions& opt) {
  using Mat = Eigen::MatrixXd;
  const double t0 = detail::now_seconds();
  const std::int64_t m = a.rows(), n = a.cols(), k = opt.k;
  const bool by_cols = n <= m;
  const std::int64_t p = by_cols ? n : m, q = by_cols ? m : n;  // form Op·I_p, Op q × p
  if (static_cast<double>(m) * static_cast<double>(n) > kDenseMaxEntries)
    throw InvalidArgument("svds: min(m, n) = " + std::to_string(p) + " is too small for a Krylov "
                          "basis of k + 2 blocks (k = " + std::to_string(k) + ") and the dense " +
                          std::to_string(m) + " × " + std::to_string(n) + " matrix is too large; "
                          "use a smaller k or --block");
  const LinearOperator<double>& op = by_cols ? a : at;
  detail::ApplyClock clock(ops);
  const std::int64_t w = std::min<std::int64_t>(p, 64);
  auto x = ops.allocate(p, w), y = ops.allocate(q, w);
  Mat dense(q, p), eye(p, w);
  for (std::int64_t j0 = 0; j0 < p; j0 += w) {
    const std::int64_t c = std::min(w, p - j0);
    eye.setZero();
    for (std::int64_t j = 0; j < c; ++j) eye(j0 + j, j) = 1.0;
    ops.from_host(eye.data(), p, x.columns(0, c));
    clock.apply(op, x.columns(0, c), y.columns(0, c));
    ops.to_host(y.columns(0, c), dense.data() + j0 * q, q);
  }
  const detail::DenseSvd svd = detail::checked_svd(dense, false);
  // dense = Op = X·Σ·Yᵀ; for Op = Aᵀ the roles of the singular vectors swap.
  const Mat& left = by_cols ? svd.x : svd.y;
  const Mat& right = by_cols ? svd.y : svd.x;
  SvdResult r;
  r.method = std::string("dense (Eigen ") + (svd.redone ? "JacobiSVD after a BDCSVD that failed its check" : "BDCSVD") +
             " of the " + std::to_string(m) + " × " + std::to_string(n) + " matrix)";
  r.m = m;
  r.n = n;
  r.k = k;
  r.tol = opt.tol;
  if (!opt.start.empty()) r.start = "the dense path needs no start block";
  r.values.assign(svd.sigma.data(), svd.sigma.data() + k);
  r.a_norm = svd.sigma(0);
  r.u.assign(left.data(), left.data() + m * k);
  r.v.assign(right.data(), right.data() + n * k);
  r.phases.iterate_s = detail::now_seconds() - t0;
  const double t1 = detail::now_seconds();
  auto ub = ops.allocate(m, k), vb = ops.allocate(n, k), tu = ops.allocate(m, k), tv = ops.allocate(n, k);
  ops.from_host(r.u.data(), m, ub.view());
  ops.from_host(r.v.data(), n, vb.view());
  detail::measure_residuals(a, at, ops, clock, ub.view(), vb.view(), r.values, tu.view(), tv.view(),
                            r.residual_av, r.residual_atu);
  r.status = detail::all_pass(r) ? SolverStatus::converged : SolverStatus::not_converged;
  if (r.status != SolverStatus::converged)
    r.reason = "the dense SVD's triplets do not pass the residual test (tol too small for the "
               "rounding of this matrix?)";
  r.operator_applies = clock.columns();
  r.phases.verify_s = detail::now_seconds() - t1;
  r.seconds = detail::now_seconds() - t0;
  return r;
}

// The count certificate of a converged set (certificate.hpp); values known missing make the
// set not_converged. The dense path computed every singular value: nothing to count unless asked.
// Returns the number of values known missing.
std::int64_t certify(const Csr<double>& a, SvdCertify mode, SvdResult& r) {
  if (mode == SvdCertify::never || r.status != SolverStatus::converged) return 0;
  if (mode == SvdCertify::automatic && r.method.rfind("dense", 0) == 0) {
    r.certificate = "not needed: the dense SVD computed every singular value";
    return 0;
  }
  const detail::SvdCertificate c = detail::certify_svds(a, r, mode == SvdCertify::always);
  r.certified = c.state;
  r.certificate = c.detail;
  r.phases.verify_s += c.seconds;
  if (c.state == Certified::no) {
    r.status = SolverStatus::not_converged;
    r.reason = "the count certificate finds " + std::to_string(c.missing) +
               " singular value(s) above sigma_k missing from the set (" + c.detail +
               "); a larger --block holds more copies of a repeated value";
  }
  return c.state == Certified::no ? c.missing : 0;
}

// The scaling of svds(Csr) with opt.scale (empty scales: none): A's own means and the scaled
// centered matrix's ‖·‖_F², reported in place of the scaled copy's.
struct ScaledInput {
  std::vector<double> scales, means;
  double total_sq = 0;
};
// `owned` (nullable): given_a itself, whose arrays the CPU operator may take.
SvdResult svds_of(const Csr<double>& given_a, Csr<double>* owned, Backend backend, const SvdOptions& opt,
                  ScaledInput in);

// Unit variance (SvdOptions::scale): the scaled copy's operators (the copy handed to them); means
// and scales reported in A's own units.
SvdResult svds_scaled(const Csr<double>& a, Backend backend, const SvdOptions& opt) {
  const double t0 = detail::now_seconds();
  const std::vector<double> mu = column_means(a);
  const std::vector<double> sq = centered_column_sq(a, mu);
  ScaledInput in{column_scales(sq, a.nrows), mu, 0.0};
  for (std::int64_t j = 0; j < a.ncols; ++j) in.total_sq += sq[j] / (in.scales[j] * in.scales[j]);
  Csr<double> scaled = scale_columns(a, in.scales);
  SvdResult r = svds_of(scaled, &scaled, backend, opt, std::move(in));
  const double scaling = detail::now_seconds() - t0 - r.seconds;
  r.phases.setup_s += scaling;
  r.seconds += scaling;
  return r;
}

// The method (solvers/svd/plan.hpp): as asked, else priced where both apply, with one timed apply
// of A and of Aᵀ on b random columns.
detail::SvdPlan choose_method(const LinearOperator<double>& a, const LinearOperator<double>& at, DenseBlockOps& ops,
                              const SvdOptions& opt, const detail::GklShape& shape, bool fits) {
  detail::SvdPlan p;
  if (opt.method == SvdMethod::dense) {
    p.dense = true, p.reason = "dense: asked for";
    return p;
  }
  if (opt.method == SvdMethod::gkl) {
    if (!fits)
      throw InvalidArgument("svds: method gkl: min(m, n) = " + std::to_string(std::min(a.rows(), a.cols())) +
                            " cannot hold a Krylov basis of k + 2 blocks (k = " + std::to_string(opt.k) + ")");
    p.reason = "block GKL: asked for";
    return p;
  }
  detail::SvdPlanInputs in;
  in.m = a.rows(), in.n = a.cols(), in.k = opt.k, in.shape = shape, in.fits = fits;
  const EngineRates* known = known_engine_rates();
  in.s_per_flop = 5.0 * (known ? known->factor_s_per_flop : EngineRates{}.factor_s_per_flop);
  if (detail::svd_both_apply(in.m, in.n, fits)) {
    const std::int64_t b = shape.block;
    auto x = ops.allocate(in.n, b), y = ops.allocate(in.m, b);
    ops.fill_random(x.view(), opt.seed + 77);
    // (twice, the second timed: the first may carry first-use costs)
    for (int pass = 0; pass < 2; ++pass) {
      detail::ApplyClock clock(ops);
      clock.apply(a, x.view(), y.view());
      clock.apply(at, y.view(), x.view());
      in.t_col = clock.apply_seconds() / static_cast<double>(2 * b);
    }
  }
  return detail::plan_svds(in);
}

// The GKL iteration, or the dense path (as planned, or after a breakdown or running out of the
// default restarts on a matrix it affords); no count or re-check.
SvdResult solve_operator(const LinearOperator<double>& a, const LinearOperator<double>& at,
                         DenseBlockOps& ops, const SvdOptions& opt) {
  const std::int64_t m = a.rows(), n = a.cols();
  TCSOLVE_REQUIRE(at.rows() == n && at.cols() == m,
                  "svds: Aᵀ must be " + std::to_string(n) + " × " + std::to_string(m));
  TCSOLVE_REQUIRE(a.space() == ops.space() && at.space() == ops.space(),
                  "svds: A, Aᵀ and the dense ops must share one space");
  bool fits = false;
  const auto shape = detail::gkl_shape(m, n, opt, &fits);
  const detail::SvdPlan plan = choose_method(a, at, ops, opt, shape, fits);
  if (plan.dense) {
    SvdResult d = svds_dense(a, at, ops, opt);
    d.method_reason = plan.reason;
    return d;
  }
  const double t0 = detail::now_seconds();
  detail::BlockGkl gkl(a, at, ops, opt, shape);
  const double t1 = detail::now_seconds();
  gkl.run();
  SvdResult r = std::move(gkl.result());
  r.method_reason = plan.reason;
  r.phases.setup_s = t1 - t0;
  r.phases.iterate_s = detail::now_seconds() - t1 - r.phases.verify_s;  // verify_s: gkl's checks
  // Out of restarts (the limit not the caller's own), or broken down (the estimates pass, the true
  // residuals do not: SciPy's test_small_sigma, s_j = 100^-j on 20 × 21, b = 4), on a matrix the
  // dense path affords: the dense SVD answers instead of an error.
  const bool out_of_restarts = r.status == SolverStatus::not_converged && opt.max_restarts == SvdOptions{}.max_restarts;
  if ((out_of_restarts || r.status == SolverStatus::breakdown) && detail::dense_affordable(m, n)) {
    SvdResult d = svds_dense(a, at, ops, opt);
    d.method_reason = r.method_reason;
    d.method += " after " + r.method + (out_of_restarts ? " stopped unconverged (" : " broke down (") +
                std::to_string(r.iterations) + " restarts)";
    d.iterations = r.iterations;
    d.operator_applies += r.operator_applies;
    d.phases.iterate_s += r.phases.iterate_s, d.phases.verify_s += r.phases.verify_s, d.phases.setup_s = r.phases.setup_s;
    d.history = std::move(r.history);
    d.seconds = detail::now_seconds() - t0;
    return d;
  }
  return r;
}

// What shows that no value above σ_k is missing from a converged set: the dense path computed
// them all; else the count (csr given: A itself, not centered) where it is made; else the
// re-check. Returns the values known missing (≥ 1 when the re-check finds one; r is then
// not_converged).
std::int64_t verify_count(const Csr<double>* csr, const LinearOperator<double>& a, const LinearOperator<double>& at,
                          DenseBlockOps& ops, const SvdOptions& opt, std::int64_t block, SvdResult& r) {
  r.verification = "none";
  if (r.status != SolverStatus::converged) return 0;
  if (r.method.rfind("dense", 0) == 0) {
    r.verification = "dense";
    if (csr) certify(*csr, opt.certify, r);  // (only when asked: --certify)
    if (r.certified != Certified::not_checked) r.verification = "certificate";
    if (r.status != SolverStatus::converged) r.verification = "none";
    return 0;
  }
  if (csr) {
    const std::int64_t missing = certify(*csr, opt.certify, r);
    if (r.certified != Certified::not_checked) {
      r.verification = "certificate";
      return missing;
    }
  }
  if (!opt.recheck) {
    r.certificate += std::string(r.certificate.empty() ? "" : "; ") + "no re-check (turned off)";
    return 0;
  }
  const detail::SvdRecheck c =
      detail::recheck_svds(a, at, ops, opt, r, block, std::max<std::int64_t>(2 * r.operator_applies, 1024));
  trace_mark("svds: re-checked");
  r.phases.verify_s += c.seconds;
  r.operator_applies += c.applies;
  r.certificate += (r.certificate.empty() ? "" : "; ") + c.detail;
  if (c.ran) r.verification = "recheck";
  if (c.by_block) r.verification = "block";
  if (!c.missing) return 0;
  r.status = SolverStatus::not_converged;
  r.reason = "the re-check finds a singular value above sigma_k missing from the set (" + c.detail +
             "); a larger --block holds more copies of a repeated value";
  return 1;
}

// The solve, its count or re-check, and once more with a wider block (the default basis for it)
// when values are known missing: a block Krylov space holds at most b directions of one singular
// subspace.
SvdResult solve_verified(const Csr<double>* csr, const LinearOperator<double>& a, const LinearOperator<double>& at,
                         DenseBlockOps& ops, const SvdOptions& opt) {
  bool fits = false;
  const auto shape = detail::gkl_shape(a.rows(), a.cols(), opt, &fits);
  SvdResult r = solve_operator(a, at, ops, opt);
  const std::int64_t missing = verify_count(csr, a, at, ops, opt, shape.block, r);
  if (missing == 0 || shape.block >= opt.k) return r;
  SvdOptions wider = opt;
  wider.block = std::min(opt.k, std::max(2 * shape.block, shape.block + missing));
  wider.basis = 0;
  const std::string first = r.reason;
  SvdResult again = solve_operator(a, at, ops, wider);
  verify_count(csr, a, at, ops, wider, wider.block, again);
  again.phases.iterate_s += r.phases.iterate_s, again.phases.verify_s += r.phases.verify_s;
  again.iterations += r.iterations, again.operator_applies += r.operator_applies;
  again.method += " after a run with b = " + std::to_string(shape.block) + " that the " +
                  (r.verification == "certificate" ? "count" : "re-check") + " rejected";
  if (again.status != SolverStatus::converged)
    again.reason += "; the first run (b = " + std::to_string(shape.block) + "): " + first;
  return again;
}

}  // namespace

SvdResult svds(const LinearOperator<double>& a, const LinearOperator<double>& at,
               DenseBlockOps& ops, const SvdOptions& opt) {
  return solve_verified(nullptr, a, at, ops, opt);
}

SvdResult svds(const Csr<double>& a, Backend backend, const SvdOptions& opt) {
  return opt.scale ? svds_scaled(a, backend, opt) : svds_of(a, nullptr, backend, opt, {});
}

SvdResult svds(Csr<double>&& a, Backend backend, const SvdOptions& opt) {
  return opt.scale ? svds_scaled(a, backend, opt) : svds_of(a, &a, backend, opt, {});
}

namespace {
SvdResult svds_of(const Csr<double>& given_a, Csr<double>* owned, Backend backend, const SvdOptions& opt,
                  ScaledInput in) {
  const double t0 = detail::now_seconds();
  bool fits = false;
  const auto shape = detail::gkl_shape(given_a.nrows, given_a.ncols, opt, &fits);  // argument checks first
  if (opt.certify == SvdCertify::always && opt.center)
    throw InvalidArgument("svds: --certify counts the singular values of A itself; with --center the "
                          "operator is A - 1*mu^T, which is dense (drop one of the two)");
  auto ops = make_dense_ops(backend);
  OperatorOptions oo;
  oo.stream = ops->stream();
  oo.expected_cols = static_cast<int>(std::max(shape.block, shape.k));
  // The CPU operator takes A's arrays (owned: no second copy); `a` is A wherever it is held now.
  auto op_a = owned && backend == Backend::cpu ? make_sparse_operator(std::move(*owned), backend, oo)
                                               : make_sparse_operator(given_a, backend, oo);
  TCSOLVE_REQUIRE(!(owned && backend == Backend::cpu) || op_a->host_csr(), "svds: the CPU operator holds A");
  const Csr<double>& a = owned && backend == Backend::cpu ? *op_a->host_csr() : given_a;
  // Aᵀ: on the GPU made from A's device copy where A is held as CSR (no host transpose: 14 s of
  // the 1M × 30k count matrix's set-up on the H200's host), else transposed on the host.
  std::unique_ptr<SparseOperator> op_at = make_transposed_operator(a, *op_a, oo);
  if (!op_at) {
    const Csr<double> at = transpose(a);
    trace_mark("svds: A^T built");
    op_at = make_sparse_operator(at, backend, oo);
  }
  std::vector<double> mu;
  std::unique_ptr<CenteredOperator> c_a, c_at;
  if (opt.center) {
    mu = column_means(a);  // (of the scaled copy: μ_j/s_j)
    c_a = std::make_unique<CenteredOperator>(*op_a, false, mu, *ops, oo.expected_cols);
    c_at = std::make_unique<CenteredOperator>(*op_at, true, mu, *ops, oo.expected_cols);
  }
  const LinearOperator<double>& A = opt.center ? static_cast<const LinearOperator<double>&>(*c_a) : *op_a;
  const LinearOperator<double>& At = opt.center ? static_cast<const LinearOperator<double>&>(*c_at) : *op_at;
  const double setup = detail::now_seconds() - t0;
  trace_mark("svds: operators built");
  SvdResult r = solve_verified(opt.center ? nullptr : &a, A, At, *ops, opt);
  r.phases.setup_s += setup;
  r.spmm_kernel = std::string("A ") + to_string(op_a->plan().kernel) + "; A^T " + to_string(op_at->plan().kernel);
  r.spmm_plan = "A: " + op_a->plan().reason + " | A^T: " + op_at->plan().reason;
  if (opt.center) {
    r.total_sq = in.scales.empty() ? centered_frobenius_sq(a, mu) : in.total_sq;
    r.means = in.scales.empty() ? std::move(mu) : std::move(in.means);
  }
  r.scales = std::move(in.scales);
  r.seconds = detail::now_seconds() - t0;
  return r;
}
}  // namespace

}  // namespace tcsolve
