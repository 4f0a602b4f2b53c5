// The eigs() driver (solvers/eigs/eigs.hpp): plan → set up → solve → verify → finish.
//
// Shift-invert (Op = T = (A − σB)⁻¹·B, B-self-adjoint, eigenvalues ν = 1/(λ − σ)): thick-restart
// block Lanczos (runs.cpp). A Ritz pair (ν, x) is verified on the purified vector x̂ = T·x/ν
// (ARPACK's mode-3 refinement), free of the ‖A‖·|λ − σ| amplification that x itself would carry;
// λ is the Rayleigh quotient and the true residual ‖A·x̂ − λ·B·x̂‖ is recomputed with A and B
// before anything is called converged.
#include "solvers/eigs/eigs.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <string>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/finite.hpp"
#include "core/host_memory.hpp"
#include "core/parallel.hpp"
#include "core/trace.hpp"
#include "factor/shift_invert.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/chebyshev.hpp"
#include "solvers/eigs/certificate.hpp"
#include "solvers/eigs/pairs.hpp"
#include "solvers/eigs/plan.hpp"
#include "spmm/chebyshev_step.hpp"
#include "solvers/eigs/recheck.hpp"
#include "solvers/eigs/runs.hpp"
#include "solvers/eigs/steps.hpp"
#include "solvers/solver_common.hpp"
#include "solvers/spectral_probe.hpp"
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

namespace eigs_detail {
namespace {

void validate(const EigsOptions& opt, std::int64_t n) {
  if (opt.k < 1 || opt.k >= n)
    throw InvalidArgument("k = " + std::to_string(opt.k) + " must satisfy 1 <= k < n = " +
                          std::to_string(n));
  if (!(opt.tol > 0 && opt.tol < 1)) throw InvalidArgument("tol = " + g17(opt.tol) + ": expected 0 < tol < 1");
  if (opt.which == Which::nearest && !opt.has_sigma)
    throw InvalidArgument("which = nearest needs a shift sigma");
  if (opt.has_sigma && (opt.which == Which::smallest_magnitude || opt.which == Which::both_ends))
    throw InvalidArgument(std::string("which = ") + to_string(opt.which) +
                          " with sigma: the driver selects by lambda, not by SciPy's transformed "
                          "1/(lambda - sigma); use nearest (or largest_magnitude) with sigma");
  if (opt.has_sigma && !std::isfinite(opt.sigma)) throw InvalidArgument("sigma must be finite");
  if (opt.block_size < 0 || opt.basis < 0 || opt.max_iterations < 0)
    throw InvalidArgument("block_size, basis and max_iterations must be >= 0");
  if (!opt.v0.empty()) {
    if (opt.v0.size() % static_cast<std::size_t>(n) != 0)
      throw InvalidArgument("v0: " + std::to_string(opt.v0.size()) + " values is not a whole number of "
                            "columns of n = " + std::to_string(n));
    // (a resumed run's block is GBs: checked on all host threads)
    if (const std::int64_t i = first_non_finite(opt.v0.data(), static_cast<std::int64_t>(opt.v0.size())); i >= 0)
      throw InvalidArgument("v0: non-finite value at row " + std::to_string(i % n) + ", column " +
                            std::to_string(i / n));
  }
  validate_constraints(opt, n);
}

// The set's floor at λ ≈ 0 (EigsResult::floor_pairs, test_floor).
void record_floor(const Problem& s, const std::vector<char>& floored, EigsResult& r) {
  for (std::size_t j = 0; j < floored.size(); ++j)
    if (floored[j]) r.floor_pairs.push_back(static_cast<std::int64_t>(j));
  if (r.floor_pairs.empty()) return;
  double worst = 0;
  for (auto j : r.floor_pairs) worst = std::max(worst, r.residual_bounds[j]);
  r.test_floor = std::to_string(r.floor_pairs.size()) + " pair(s) with |lambda| <= u^(2/3)*|A|*|B^-1| = " +
                 fmt("%.3g", zero_scale(s)) + " (zero to working precision) tested at the rounding floor " +
                 fmt("%g", kZeroFloorFactor) + "u*(|A| + |lambda|*|B|)*|x| (up to " + fmt("%.3g", worst) +
                 ") instead of tol*|lambda|";
}

}  // namespace

// Final order, extended-precision refinement, tests, error bounds and the status (before the
// verification's verdict is folded in by the caller).
EigsResult finish(const Problem& s, const EigsOptions& opt, PairSet& p, RunOut& run, double sigma) {
  DenseBlockOps& ops = *s.ops;
  EigsResult r;
  r.n = s.n;
  r.conv = opt.conv;
  r.a_norm = s.a_norm;
  r.b_norm = s.b_norm;
  r.sigma = sigma;
  const std::int64_t k = static_cast<std::int64_t>(p.values.size());
  auto o = wanted_order(p.values, opt.which, sigma);
  PairSet q;
  q.x = reorder_columns(ops, p.x.view(), o);
  for (auto i : o)
    q.values.push_back(p.values[i]), q.rn.push_back(p.rn[i]), q.xn.push_back(p.xn[i]),
        q.rq_dev.push_back(p.rq_dev[i]);
  // ‖x_j‖² on the device; the block goes to the host when it is wanted, else only the columns
  // that need an extended-precision quotient.
  std::vector<double> x2(k);
  if (k) ops.column_norms(q.x.view(), x2.data());
  for (double& v : x2) v *= v;
  const std::vector<std::int64_t> refine = pairs_to_refine(s, opt.tol, q.values, x2);
  std::vector<double> some;  // the refined columns when the block stays on the device
  std::vector<const double*> cols(refine.size());
  if (opt.want_vectors && k) {
    resize_huge(r.vectors, static_cast<std::size_t>(s.n * k));
    ops.to_host(q.x.view(), r.vectors.data(), s.n);
    for (std::size_t i = 0; i < refine.size(); ++i) cols[i] = r.vectors.data() + refine[i] * s.n;
  } else if (!refine.empty()) {
    some.resize(s.n * refine.size());
    for (std::size_t i = 0; i < refine.size(); ++i) {
      ops.to_host(q.x.view().columns(refine[i], 1), some.data() + i * s.n, s.n);
      cols[i] = some.data() + i * s.n;
    }
  }
  trace_mark("eigs: vectors on the host");
  refine_rayleigh(s, cols, refine, x2, q.values, q.rn, q.rq_dev);
  trace_mark("eigs: extended-precision refinement");
  r.values = q.values;
  r.residual_norms = q.rn;
  std::vector<char> floored;
  const bool pass = test_pairs(s, opt, q.x.view(), q.values, q.rn, q.xn, r.residual_bounds, &floored);
  record_floor(s, floored, r);
  r.residual_norms = q.rn;
  r.values = q.values;
  r.error_bounds = error_bounds(s, q.values, q.rn, q.rq_dev);
  r.iterations = run.iterations;
  r.operator_applies = run.applies;
  r.history = std::move(run.history);
  r.status = pass ? SolverStatus::converged : run.status == SolverStatus::breakdown
                                                  ? SolverStatus::breakdown
                                              : run.status == SolverStatus::interrupted
                                                  ? SolverStatus::interrupted
                                                  : SolverStatus::not_converged;
  if (!pass) {
    // Pairs that failed the test but reached the rounding floor: the test cannot be met in
    // double precision without a spectral transformation; say so, with the accuracy reached.
    std::int64_t at_floor = 0, failing = 0;
    double worst = 0, worst_bound = 0, worst_floor = 0;
    bool norm_ok = true, zeros = true;
    for (std::int64_t j = 0; j < k; ++j) {
      if (r.residual_norms[j] <= r.residual_bounds[j]) continue;
      ++failing;
      const double fl = attainable_floor(q.values[j], q.xn[j], s);
      if (at_rounding_floor(r.residual_norms[j], q.values[j], q.xn[j], s)) {
        ++at_floor;
        zeros = zeros && std::abs(q.values[j]) <= zero_scale(s);
        if (r.residual_norms[j] > worst) worst = r.residual_norms[j], worst_bound = r.residual_bounds[j], worst_floor = fl;
      }
      norm_ok = norm_ok && r.residual_norms[j] <= bound_of(ConvTest::norm, opt.tol, q.values[j], q.xn[j], s);
    }
    if (at_floor > 0 && at_floor == failing && opt.conv != ConvTest::norm) {
      char b[700];
      std::snprintf(b, sizeof b,
                    "%lld pair(s) stopped at the rounding floor of double precision for this "
                    "matrix%s: residual %.3g, floor u*(|A| + |lambda|*|B|) = %.3g, while the %s test "
                    "asks for %.3g; the %s test cannot be met for these eigenvalues without a "
                    "spectral transformation: use --conv norm%s, or shift-invert (--sigma, or "
                    "auto with a factorization)",
                    static_cast<long long>(at_floor), zeros ? " (their eigenvalues are 0 to working precision)" : "",
                    worst, worst_floor, to_string(opt.conv), worst_bound, to_string(opt.conv),
                    norm_ok ? " (these residuals pass it)" : "");
      r.reason = b;
    } else {
      r.reason = run.reason.empty() ? "a returned pair fails its true-residual test" : run.reason;
      if (r.status == SolverStatus::breakdown && s.b)
        r.reason += "; with a mass matrix a breakdown can also mean that it is not positive "
                    "definite (its Cholesky factorization checks that unless --no-factor)";
    }
  }
  p = std::move(q);
  return r;
}

namespace {

// The verification's verdict and an interrupt folded into the status.
void settle_status(const Verified& ver, std::int64_t k, EigsResult& res) {
  if (interrupt_requested() && (res.status == SolverStatus::converged || res.status == SolverStatus::interrupted)) {
    // Stopped during the solve (the pairs as they were) or during the verification (the pairs
    // passed their residual tests; the set is not verified).
    if (res.status == SolverStatus::converged)
      res.reason = detail::interrupted_reason(res.iterations, k, k, "pairs passing their residual tests, "
                                              "during the verification (the set is not verified)");
    else if (res.reason.empty() || res.reason.rfind("interrupted", 0) != 0)
      res.reason = detail::interrupted_reason(res.iterations, 0, k, "pairs verified");
    res.status = SolverStatus::interrupted;
    return;
  }
  if (res.status == SolverStatus::converged && !ver.verified) {
    res.status = ver.cert.state == Certified::no ? SolverStatus::not_converged : SolverStatus::unverified;
    res.reason = ver.cert.state == Certified::no
                     ? "every pair passed its residual test, but the count says eigenvalues are "
                       "missing: " + ver.cert.detail
                     : "every pair passed its residual test, but nothing verified that no further "
                       "copy of a repeated eigenvalue is missing (" + res.certificate + ")";
  }
}

}  // namespace

// plan → set up and solve (escalating under auto) → verify → finish.
EigsResult run_all(Problem& s, const EigsOptions& opt, const PlanFacts& facts, PlanMemo* memo) {
  s.conv = opt.conv;
  const PlanProbes probes = make_probes(s, opt, memo);
  EigsPlan plan = plan_eigs(facts, opt, probes);
  trace_mark("eigs: planned");
  // A bound of λmin for the shift when σ = 0 will not do (the plan's probe, else one now).
  const std::function<const SpectralProbe*()> get_probe = [&]() -> const SpectralProbe* {
    if (!plan.probe) plan.probe = run_probe(s, opt.seed);
    return &*plan.probe;
  };
  Solved sv = solve_plans(s, opt, plan, get_probe);
  trace_mark("eigs: solved");
  // Verified; where the count finds eigenvalues missing, the escalation goes on (auto).
  double verify_s = 0.0;
  Verified ver;
  for (;;) {
    const double t_ver0 = detail::now_seconds();
    ver = Verified{};
    if (sv.run.pairs_pass)
      ver = verify(s, opt, facts, plan, sv.ran, sv.run.pairs, sv.setup.fz.factor ? &sv.setup.fz : nullptr,
                   sv.solve_s, sv.ran.method == EigsMethod::chebyshev ? &sv.cheb : nullptr, probes);
    verify_s += detail::now_seconds() - t_ver0;
    trace_mark("eigs: verified");
    if (!(sv.run.pairs_pass && ver.cert.state == Certified::no && solve_further(s, opt, plan, get_probe, ver.cert.detail, sv)))
      break;
  }
  PairSet pairs = std::move(sv.run.pairs);
  const PlanEstimate& ran = sv.ran;
  Factorized& fz = sv.setup.fz;
  const ChebyshevStats* cheb = ran.method == EigsMethod::chebyshev ? &sv.cheb : nullptr;

  const double sigma = fz.factor ? fz.sigma : 0.0;
  sv.run.iterations = sv.iterations;
  sv.run.applies = sv.applies;
  sv.run.history = std::move(sv.history);
  EigsResult res = finish(s, opt, pairs, sv.run, sigma);
  trace_mark("eigs: finished");
  res.precision = precision_line(opt, cheb);
  if (cheb && cheb->outer_iterations > 0) res.solve_steps = solve_steps_line(*cheb);
  res.plan_seconds = plan.seconds;
  res.setup_seconds = sv.setup_s;
  res.solve_seconds = sv.solve_s;
  res.verify_seconds = verify_s;
  res.method = to_string(ran.method);
  res.transform = ran.transform == Transform::shift_invert ? "shift-invert" : "none";
  res.sigma = sigma;
  res.why = plan.reason + sv.why;
  res.predicted_seconds = plan.predicted ? ran.total() : 0.0;
  res.factor = fz.desc;
  if (ver.cert.factorizations > 0)  // the certificate's own LDLᵀ factorizations (its inertia counts)
    res.factor += (res.factor.empty() ? "" : "; ") + std::string("certificate: ") +
                  std::to_string(ver.cert.factorizations) + " LDL^T factorization" +
                  (ver.cert.factorizations == 1 ? "" : "s") + " of A - tau*B for its inertia counts, " +
                  fmt("%.3g", ver.cert.seconds) + " s";
  res.certified = ver.cert.state;
  res.verification = ver.kind;
  res.certificate = ver.line.empty() ? "not verified (a pair failed its residual test)" : ver.line;
  res.runs = std::move(sv.runs);
  settle_status(ver, opt.k, res);
  return res;
}

namespace {

// A = 0 (every stored value zero): every eigenvalue of A·x = λ·B·x is 0 and any B-orthonormal set
// is a set of eigenvectors: X = E·L⁻ᵀ with E = [e_1 … e_k] and B[0:k, 0:k] = L·Lᵀ (B positive
// definite, so its leading block is). Exact: residuals 0, the count is the whole spectrum.
EigsResult zero_matrix_result(const Csr<double>* b, const EigsOptions& opt, std::int64_t n) {
  if (!opt.constraints.empty())
    throw InvalidArgument("A = 0 with constraints: every vector is an eigenvector (eigenvalue 0), the unit "
                          "vectors this answer gives are not constrained; nothing to iterate on");
  const std::int64_t k = opt.k;
  Eigen::MatrixXd g = Eigen::MatrixXd::Identity(k, k);
  if (b) {
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t p = b->row_ptr[i]; p < b->row_ptr[i + 1]; ++p)
        if (b->col_idx[p] < k) g(i, b->col_idx[p]) = b->values[p];
  }
  Eigen::LLT<Eigen::MatrixXd> llt(g);
  if (llt.info() != Eigen::Success)
    throw InvalidArgument(opt.mass_name + " is not positive definite (its leading " + std::to_string(k) + " x " +
                          std::to_string(k) + " block has no Cholesky factor)");
  const Eigen::MatrixXd x = llt.matrixU().solve(Eigen::MatrixXd::Identity(k, k));  // L⁻ᵀ
  EigsResult r;
  r.n = n;
  r.status = SolverStatus::converged;
  r.values.assign(k, 0.0);
  r.vectors.assign(static_cast<std::size_t>(n * k), 0.0);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t i = 0; i <= j; ++i) r.vectors[j * n + i] = x(i, j);
  r.residual_norms.assign(k, 0.0);
  r.residual_bounds.assign(k, 0.0);
  r.error_bounds.assign(k, 0.0);
  r.conv = opt.conv;
  r.a_norm = 0.0;
  r.b_norm = b ? csr_inf_norm(*b) : 1.0;
  r.method = "dense";
  r.why = "A = 0: every eigenvalue is 0 and any " + std::string(b ? "B-orthonormal" : "orthonormal") +
          " set is a set of eigenvectors (the first unit vectors" + (b ? ", B-orthonormalized" : "") +
          "); nothing to iterate";
  r.verification = Verification::dense;
  r.certified = Certified::yes;
  r.certificate = "A = 0: all " + std::to_string(n) + " eigenvalues are 0 (exact)";
  return r;
}

}  // namespace
}  // namespace eigs_detail

EigsResult eigs(const Csr<double>& a, const Csr<double>* b, const EigsOptions& opt,
                const EigsPrebuilt& pre) {
  using namespace eigs_detail;
  if (!a.square()) throw InvalidArgument("A must be square");
  const std::int64_t n = a.nrows;
  validate(opt, n);
  if (b && (b->nrows != n || b->ncols != n))
    throw InvalidArgument("B is " + std::to_string(b->nrows) + " x " + std::to_string(b->ncols) +
                          " but A is " + std::to_string(n) + " x " + std::to_string(n));
  trace_mark("eigs: entered");
  Problem s;
  s.a = &a;
  s.b = b;
  s.n = n;
  if (pre.a_inf_norm >= 0 && pre.a_diagonal && static_cast<std::int64_t>(pre.a_diagonal->size()) == n) {
    s.a_norm = pre.a_inf_norm;
    s.diag_a = pre.a_diagonal;
  } else {
    s.a_norm = csr_inf_norm(a);
    s.diag_a_own = csr_diagonal(a);
    s.diag_a = &s.diag_a_own;
  }
  PlanFacts facts;
  facts.n = n;
  facts.nnz_a = a.nnz();
  facts.nnz_b = b ? b->nnz() : 0;
  facts.generalized = b != nullptr;
  facts.matrix_form = true;
  facts.diagonal = is_diagonal_pencil(a, b);
  facts.backend = opt.backend;
  facts.can_factor = opt.allow_factor && built_with_factor();
  if (!opt.allow_factor) facts.factor_why = "--no-factor";
  else if (!built_with_factor()) facts.factor_why = "built without CHOLMOD/MUMPS";
  if (b) {
    s.b_norm = csr_inf_norm(*b);
    s.diag_b = csr_diagonal(*b);
    for (std::int64_t i = 0; i < n; ++i)
      if (!(s.diag_b[i] > 0))
        throw InvalidArgument(opt.mass_name + " is not positive definite (b_ii = " + g17(s.diag_b[i]) +
                              " at row " + std::to_string(i + 1) + ")");
    // Non-diagonal B: a Cholesky factorization proves it positive definite and gives ‖B⁻¹‖.
    if (!is_diagonal(*b) && built_with_factor() && opt.allow_factor) {
      require_positive_definite(*b, opt.mass_name);
    } else if (!is_diagonal(*b)) {
      // No factorization: a Lanczos probe on B (40 host products) proves an indefinite B by a
      // Ritz value below 0 (Ritz values lie inside the spectrum). A B that is indefinite by less
      // than the probe resolves may still reach the solver, which then breaks down.
      auto host_ops = make_dense_ops(Backend::cpu);
      OperatorOptions ho;
      auto bh = make_sparse_operator(*b, Backend::cpu, ho);
      const SpectralProbe pb = spectral_probe([&](MvView<const double> x, MvView<double> y) { bh->apply(x, y); },
                                              *host_ops, n, static_cast<int>(std::min<std::int64_t>(40, n)), 29);
      if (pb.lower < -1e-12 * s.b_norm)
        throw InvalidArgument(opt.mass_name + " is not positive definite (a Lanczos probe finds a vector x "
                              "with x'Bx = " + g17(pb.lower) + " x'x < 0)");
    }
    s.binv_norm = estimate_binv_norm(*b, s.diag_b, built_with_factor() && opt.allow_factor);
    // max_i |a_ii|/b_ii ≤ max|λ| (pairs.hpp, Problem::radius): zero_scale's conservative radius.
    double rq = 0.0;
    for (std::int64_t i = 0; i < n; ++i) rq = std::max(rq, std::abs((*s.diag_a)[i]) / s.diag_b[i]);
    s.radius = rq > 0 ? rq : s.a_norm * s.binv_norm;
  }
  if (s.a_norm == 0.0) return zero_matrix_result(b, opt, n);
  facts.a_norm = s.a_norm;
  facts.b_norm = s.b_norm;
  facts.binv_norm = s.binv_norm;
  spectrum_hints(a, b, facts);
  std::unique_ptr<DenseBlockOps> own_ops;
  DenseBlockOps* ops = pre.ops;
  if (!ops) own_ops = make_dense_ops(opt.backend), ops = own_ops.get();
  if (ops->backend() != opt.backend)
    throw InvalidArgument("eigs: the given dense ops run on another backend than opt.backend");
  OperatorOptions oo;
  oo.precision = opt.precision;
  oo.stream = ops->stream();
  oo.expected_cols = static_cast<int>(chebyshev_block(n, opt.k, -1));
  std::unique_ptr<SparseOperator> aop, bop;
  std::string kernel = pre.spmm_kernel, kernel_plan = pre.spmm_plan;
  if (!pre.a) {
    aop = make_sparse_operator(a, opt.backend, oo);
    kernel = to_string(aop->plan().kernel);
    kernel_plan = aop->plan().reason;
  }
  if (b && !pre.b) {
    OperatorOptions ob = oo;
    ob.precision = Precision::fp64;
    bop = make_sparse_operator(*b, opt.backend, ob);
  }
  s.aop = pre.a ? pre.a : aop.get();
  s.bop = b ? (pre.b ? pre.b : bop.get()) : nullptr;
  s.ops = ops;
  trace_mark("eigs: operators ready");
  // The filter's steps on the operator's own blocks (spmm bsr_block): priced as such.
  if (const auto* so = dynamic_cast<const SparseOperator*>(s.aop)) facts.bsr_step = so->block_step() != nullptr;
  facts.host_threads = host_threads();
  facts.ladder = opt.ladder && opt.precision == Precision::fp64 && !facts.generalized && opt.backend == Backend::cuda &&
                 (facts.bsr_step || chebyshev_step_pays(n, facts.nnz_a));
  EigsResult r = run_selection(s, opt, facts, pre.memo);
  r.spmm_kernel = kernel;
  r.spmm_plan = kernel_plan;
  return r;
}

EigsResult eigs(const LinearOperator<double>& a, const LinearOperator<double>* b,
                DenseBlockOps& ops, const EigsOptions& opt, double a_norm, double b_norm) {
  using namespace eigs_detail;
  const std::int64_t n = a.rows();
  if (a.cols() != n) throw InvalidArgument("A must be square");
  // n: the rows here; ops.global_rows(n): the problem's (distributed/: the sum over the ranks).
  const std::int64_t ng = ops.global_rows(n);
  if (ng != n && !opt.v0.empty()) throw InvalidArgument("v0: not supported for a distributed problem");
  if (ng != n && !opt.constraints.empty())
    throw InvalidArgument("constraints: not supported for a distributed problem");
  validate(opt, ng);
  Problem s;
  s.aop = &a;
  s.bop = b;
  s.ops = &ops;
  s.n = n;
  // Operators given from outside (a Python LinearOperator, a CuPy matrix's view) may launch on any
  // stream: every apply is fenced by host synchronizations; tcsolve's own (own_operator) are
  // ordered by events.
  s.foreign_operator = !opt.own_operator;
  s.a_norm = a_norm > 0 ? a_norm : estimate_norm(a, ops);
  s.b_norm = b ? (b_norm > 0 ? b_norm : estimate_norm(*b, ops)) : 1.0;
  PlanFacts facts;
  facts.n = ng;
  facts.generalized = b != nullptr;
  facts.matrix_form = false;
  facts.can_factor = false;
  facts.factor_why = "operator given, not a matrix";
  facts.backend = opt.backend;
  facts.a_norm = s.a_norm;
  facts.b_norm = s.b_norm;
  facts.binv_norm = s.binv_norm;
  return run_selection(s, opt, facts, nullptr);
}

}  // namespace tcsolve
