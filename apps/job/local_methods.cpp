// solve on this process: the method (solvers/solve_method.hpp), its fallbacks, and the direct
// and Krylov runs beside block CG (apps/job/local_solve.cpp).
#include <algorithm>
#include <chrono>
#include <memory>

#include "apps/job/inputs.hpp"
#include "apps/job/local_solve.hpp"
#include "apps/job/pipeline.hpp"
#include "core/device.hpp"
#include "core/trace.hpp"
#include "factor/engine_rates.hpp"
#include "factor/sparse_factor.hpp"
#include "solvers/direct/direct_solve.hpp"
#include "solvers/host_result.hpp"
#include "solvers/krylov/gmres.hpp"
#include "solvers/krylov/gmres_polynomial.hpp"
#include "solvers/krylov/minres.hpp"
#include "solvers/krylov/polynomial_solve.hpp"
#include "spmm/chebyshev_step.hpp"
#include "solvers/solution_check.hpp"

namespace tcsolve::app {

namespace {

// The methods a kind admits when asked by name (auto never asks for a misfit).
void check_method_fits(SolveMethod m, const MatrixKindFacts& k, const std::string& matrix) {
  const bool square = k.kind != MatrixKind::rectangular, symmetric = square && k.kind != MatrixKind::unsymmetric;
  if ((m == SolveMethod::cg || m == SolveMethod::minres) && !symmetric)
    throw InvalidArgument(format("%s is %s: --method %s needs a symmetric matrix (gmres or direct take it%s)",
                                 matrix.c_str(), to_string(k.kind), to_string(m),
                                 square ? "" : "; a rectangular one: direct or lsqr"));
  if (m == SolveMethod::gmres && !square)
    throw InvalidArgument(matrix + " is rectangular: --method gmres needs a square matrix (direct or lsqr: least squares)");
  if (m == SolveMethod::cg && k.kind == MatrixKind::symmetric_indefinite)
    throw InvalidArgument(format("%s is not positive definite (%lld rows with a_ii <= 0): block CG needs a symmetric "
                                 "positive definite matrix (minres or direct take it)",
                                 matrix.c_str(), (long long)k.nonpositive_diagonal));
  if (m == SolveMethod::lsqr && square)
    throw InvalidArgument(matrix + " is square: --method lsqr is for rectangular matrices (direct, gmres, minres, cg)");
}

// The bytes a second one iteration streams at (the planner's per-iteration price).
double device_bandwidth(Backend b) { return b == Backend::cuda ? 3.0e12 : 1.0e10; }

}  // namespace

SolveMethodPlan LocalSolve::plan_method(Backend backend) {
  const MatrixKindFacts& k = in_.A->kind;
  SolveMethodFacts f;
  f.asked = s_.solve_method == SolveMethod::lsqr ? SolveMethod::direct : s_.solve_method;
  if (s_.solve_method != SolveMethod::automatic) check_method_fits(s_.solve_method, k, s_.matrix);
  f.kind = k.kind;
  f.rows = in_.A->a.nrows, f.cols = in_.A->a.ncols, f.nnz = in_.A->a.nnz(), f.rhs = in_.nrhs;
  f.gpu = backend == Backend::cuda;
  f.bandwidth = device_bandwidth(backend);
  f.direct_built = built_with_factor();
  // (the symbolic analysis is skipped where even the fastest ordering seen costs more than the
  // iterations no iterative solve does fewer of: the fast iterative rows pay nothing for it)
  const double lower_entries = 0.5 * double(f.nnz + f.rows);
  f.direct_priced = f.kind == MatrixKind::rectangular ||
                    lower_entries * kFastestAnalyzeSecondsPerEntry <
                        kMinIterations * price_iteration(f.rows, f.nnz, f.rhs, f.bandwidth);
  // On the GPU an analysis dearer than a tenth of those iterations runs on a host thread beside
  // the iteration (the host waits on the GPU meanwhile), and its price becomes the budget when
  // ready (H200, lap2d:1000 with 128 right-hand sides: the analysis 0.67 s, block CG 1.2 s).
  const double analyze_rate = engine_analyze_rate_known() ? engine_analyze_rate() : EngineRates{}.analyze_s_per_entry;
  const bool beside = f.gpu && f.kind != MatrixKind::rectangular &&
                      lower_entries * analyze_rate > 0.1 * kMinIterations * price_iteration(f.rows, f.nnz, f.rhs, f.bandwidth);
  if (k.kind == MatrixKind::symmetric_positive) f.direct_priced = false;  // (block CG first, unpriced: plan)
  if (f.direct_built && f.direct_priced && f.asked == SolveMethod::automatic && beside) {
    f.direct_priced = false;
    direct_price_ = std::async(std::launch::async, [a = in_.A, rows = f.rows, rhs = f.rhs] {
      const DirectEstimate e = estimate_direct(a->a, a->kind.kind, DirectOptions{});
      return price_direct(e, rows, rhs);
    });
  } else if (f.direct_built && f.direct_priced && f.asked == SolveMethod::automatic) {
    DirectOptions dopt;
    f.direct = estimate_direct(in_.A->a, k.kind, dopt);
    f.direct_seconds = price_direct(f.direct, f.rows, f.rhs);
  }
  SolveMethodPlan p = plan_solve_method(f);
  if (direct_price_.valid())
    p.why = format("%s, the direct solve priced on a host thread meanwhile (its analysis about %.3g s, above a tenth "
                   "of %d iterations), its price then the budget; the direct solve if the iteration breaks down, "
                   "stalls or would take longer",
                   to_string(p.method), lower_entries * analyze_rate, kMinIterations);
  return p;
}

std::function<void(const IterationRecord&)> LocalSolve::with_budget(std::function<void(const IterationRecord&)> shown,
                                                                    double budget, const Timer& clock) {
  const bool pending = budget <= 0 && direct_price_.valid();
  if (budget <= 0 && !pending) return shown;
  auto b = std::make_shared<IterativeBudget>(budget, s_.tol);
  return [this, shown, b, pending, &clock](const IterationRecord& rec) {
    if (shown) shown(rec);
    if (pending && direct_price_.valid() &&
        direct_price_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        b->set_budget(direct_price_.get());
      } catch (const std::exception&) {
        // (an analysis that failed leaves the iteration without a budget)
      }
    }
    b->check(rec, clock.seconds());
  };
}

void LocalSolve::run_solve(Backend backend, std::int64_t fit_columns) {
  Timer tp;
  const SolveMethodPlan mp = plan_method(backend);
  r_.time_plan = tp.seconds();
  r_.matrix_kind = to_string(in_.A->kind.kind);
  r_.method_reason = mp.why;
  r_.backend = to_string(backend);
  r_.device = backend == Backend::cuda ? device_name() : "cpu";
  r_.preconditioner = to_string(s_.precond);
  std::vector<SolveMethod> chain{mp.method};
  chain.insert(chain.end(), mp.fallbacks.begin(), mp.fallbacks.end());
  CheckpointWriter ck(s_, *in_.A, perm_, r_);
  std::string gave_way;  // why earlier methods gave way
  SolveResult sr;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const bool last = i + 1 == chain.size();
    const SolveMethod m = chain[i];
    // (the budget is the direct solve's price: for the iteration that has it as its fallback)
    const bool before_direct = !last && chain.back() == SolveMethod::direct;
    try {
      sr = run_method(m, backend, fit_columns, before_direct ? mp.budget_seconds : 0.0, ck);
    } catch (const BudgetExceeded& e) {
      gave_way += std::string(gave_way.empty() ? "" : "; ") + to_string(m) + " gave way: " + e.what();
      continue;
    } catch (const FactorTooLarge& e) {
      // an unpriced direct fallback that does not fit: the iteration's own result stands
      if (i == 0) throw;
      gave_way += std::string(gave_way.empty() ? "" : "; ") + "direct: " + e.what();
      break;
    }
    if (sr.status == SolverStatus::converged || sr.status == SolverStatus::interrupted || last) break;
    // block CG's breakdown on a clearly negative pᵀAp: A is indefinite, MINRES is next.
    gave_way += std::string(gave_way.empty() ? "" : "; ") + to_string(m) + " " + to_string(sr.status) + ": " + sr.reason;
  }
  if (!gave_way.empty()) r_.method_reason += "; " + gave_way;
  // block CG's backward errors, where its solutions came back to the host (with --out, or file
  // right-hand sides; the device-generated random ones without --out stay on the device)
  if (sr.backward_errors.empty() && static_cast<std::int64_t>(sr.solutions.size()) == in_.A->a.ncols * in_.nrhs &&
      in_.nrhs > 0)
    check_solution(in_.A->a, host_rhs().data(), in_.A->a.nrows, sr.solutions.data(), in_.A->a.ncols, in_.nrhs, false,
                   sr);
  ck.finish();
  record_solve(sr, s_, cheb_.get(), sr.seconds, r_);
  r_.right_hand_sides = in_.nrhs;
  notes_.wanted = in_.nrhs;
}

SolveResult LocalSolve::run_method(SolveMethod m, Backend backend, std::int64_t fit_columns, double budget,
                                   CheckpointWriter& ck) {
  if (m == SolveMethod::direct || m == SolveMethod::lsqr) return run_direct();
  Timer tp;
  if (m == SolveMethod::cg) {
    SolvePlanFacts f = solve_plan_facts(s_, in_.nrhs);
    f.fit_columns = fit_columns;
    f.facts.gpu = backend == Backend::cuda;
    f.facts.n = in_.A->a.nrows, f.facts.nnz = in_.A->a.nnz();
    f.facts.diagonal_varies = f.facts.gpu && f.asked == CgPrecond::automatic && chebyshev_wants_jacobi(in_.A->a);
    const SolvePlan plan = plan_solve(f);
    if (!plan.note.empty()) r_.preconditioner = plan.note;
    ensure_operators(backend, static_cast<int>(plan.batch));
    r_.time_operator += tp.seconds(), r_.time_setup += tp.seconds();
    return run_cg(plan, ck, budget);
  }
  ensure_operators(backend, static_cast<int>(in_.nrhs));
  r_.time_operator += tp.seconds(), r_.time_setup += tp.seconds();
  return run_krylov(m, budget);
}

const std::vector<double>& LocalSolve::host_rhs() {
  if (!in_.rhs.empty()) return in_.rhs;
  if (rhs_host_.empty()) {
    std::int64_t cols = in_.nrhs;
    rhs_host_ = load_rhs(s_.rhs, in_.A->a.nrows, &cols, s_.seed);
  }
  return rhs_host_;
}

namespace {
bool constant_diagonal(const std::vector<double>& d) {
  return !d.empty() && d[0] != 0.0 && std::all_of(d.begin(), d.end(), [&](double v) { return v == d[0]; });
}
}  // namespace

// The GMRES polynomial on the right (solvers/krylov/gmres_polynomial.hpp) where asked for, or
// under --precond auto: for GMRES, whose Arnoldi step costs about 1.5·m + 8.5 block passes
// against the 4 of a fused step with A, so that trading steps for products pays (in D⁻¹A where
// the diagonal varies: Jacobi-scaled); for MINRES (short recurrences) on the GPU with a constant
// diagonal only (the scaled polynomial is not symmetric).
bool LocalSolve::wants_polynomial(SolveMethod m) const {
  if (s_.precond == Precond::poly) {
    if (!in_.start.empty())
      throw InvalidArgument("--precond poly starts from x = 0: it does not take an initial guess (--x0)");
    return true;
  }
  if (s_.precond != Precond::automatic || !in_.start.empty()) return false;
  return m == SolveMethod::gmres || (ops_->space() == Space::device && constant_diagonal(in_.A->diagonal));
}

// MINRES or GMRES on the operator built for this job (its basis: --reorder's P·A·Pᵀ when
// applied): on A·p(A) with the GMRES polynomial where wants_polynomial, else with Jacobi unless
// --precond none; the budget as block CG's.
SolveResult LocalSolve::run_krylov(SolveMethod m, double budget) {
  const std::int64_t n = in_.A->a.nrows, nrhs = in_.nrhs;
  Timer ts;
  KrylovOptions ko;
  ko.tol = s_.tol;
  ko.max_iterations = s_.max_iterations();
  ko.restart = s_.restart;
  const bool poly = wants_polynomial(m);
  if (s_.precond != Precond::none && !poly)
    ko.jacobi_diagonal = perm_ ? gather(in_.A->diagonal.data(), in_.A->diagonal.size()) : in_.A->diagonal;
  r_.preconditioner = s_.precond == Precond::none ? "none" : "jacobi";
  ko.keep_history = true;
  ko.on_iteration = cg_progress(progress_, nrhs, ts);
  ko.on_iteration = with_budget(ko.on_iteration, budget, ts);
  trace_mark("krylov: start");
  MultiVector<double> dinv;  // (declared before p, which reads it)
  std::unique_ptr<krylov::GmresPolynomial> p;
  if (poly) {
    // (the roots' Arnoldi run and the workspace are set-up, not solve)
    const int degree = s_.precond_degree > 0 ? s_.precond_degree
                       : m == SolveMethod::minres ? krylov::kDegreeMinres : krylov::kDegreeGmres;
    // (GMRES where the diagonal varies: the polynomial in D⁻¹A, D in the operator's basis; the
    // fused step needs A in the operator's basis: not with --reorder's permutation)
    if (m == SolveMethod::gmres && !constant_diagonal(in_.A->diagonal))
      dinv = krylov::inverse_diagonal(*ops_, perm_ ? gather(in_.A->diagonal.data(), in_.A->diagonal.size())
                                                   : in_.A->diagonal);
    krylov::BuiltPolynomial built = krylov::make_gmres_polynomial(*aop_, perm_ ? nullptr : &in_.A->a, *ops_, nrhs,
                                                                  degree, s_.seed + 91, dinv.data());
    p = std::move(built.poly);
    r_.preconditioner = p ? p->describe() + format(" (roots from %d Arnoldi steps)", built.arnoldi_steps)
                          : "none: the GMRES polynomial found no root (A·v vanished on its start vector)";
    r_.time_setup += ts.seconds();
    ts = Timer();
    trace_mark("krylov: polynomial's roots and workspace");
  }
  const auto km = m == SolveMethod::minres ? krylov::KrylovMethod::minres : krylov::KrylovMethod::gmres;
  auto solve = [&](MvView<const double> b, MvView<double> x, bool use_x0) {
    return p ? krylov::polynomial_solve(km, *aop_, *p, b, x, *ops_, ko) : krylov::run(km, *aop_, *ops_, ko, b, x, use_x0);
  };
  SolveResult sr;
  if (ops_->space() == Space::device && in_.rhs.empty() && in_.start.empty() && !perm_ && s_.out.empty()) {
    // random:S on the GPU with nothing written: B made there (the values load_rhs would make), X
    // and the check kept there (1M rows, 32 columns: 0.1 s of host generation and 0.1 s of host
    // check saved, H200).
    MultiVector<double> b = ops_->allocate(n, nrhs), x = ops_->allocate(n, nrhs);
    ops_->fill_random_rows(b.view(), s_.seed + 1000, 0);
    sr = solve(b.view(), x.view(), false);
    trace_mark("krylov: solved on the device");
    MultiVector<double> scratch = ops_->allocate(n, nrhs);
    check_solution_in_space(*aop_, frobenius_norm(in_.A->a), *ops_, b.view(), x.view(), scratch.view(), sr);
    trace_mark("krylov: solution checked on the device");
  } else {
    const std::vector<double>& rhs = host_rhs();
    const std::vector<double> rhs_perm = perm_ ? gather(rhs.data(), rhs.size()) : std::vector<double>();
    const std::vector<double> x0_perm =
        perm_ && !in_.start.empty() ? gather(in_.start.data(), in_.start.size()) : std::vector<double>();
    const double* x0 = in_.start.empty() ? nullptr : perm_ ? x0_perm.data() : in_.start.data();
    trace_mark("krylov: right-hand sides on the host");
    sr = detail::solve_from_host(*ops_, n, perm_ ? rhs_perm.data() : rhs.data(), n, nrhs, x0, solve);
    trace_mark("krylov: solved, solutions on the host");
    if (perm_) scatter(sr.solutions);
    // the backward errors against A as read (the solutions are in its basis again)
    check_solution(in_.A->a, rhs.data(), n, sr.solutions.data(), n, nrhs, false, sr);
    trace_mark("krylov: solution checked on the host");
  }
  sr.seconds = ts.seconds();
  return sr;
}

// The direct solve on the host (solvers/direct/): A as read, whatever the device.
SolveResult LocalSolve::run_direct() {
  Timer ts;
  const std::vector<double>& rhs = host_rhs();
  DirectOptions dopt;
  dopt.backward_tol = std::max(s_.tol * 1e-2, 1e-14);
  dopt.optimality_tol = std::max(s_.tol * 1e-2, 1e-14);
  if (r_.backend.empty()) r_.backend = "cpu";
  r_.spmm_kernel = "none (direct)";
  SolveResult sr = direct_solve(in_.A->a, in_.A->kind.kind, rhs.data(), in_.A->a.nrows, in_.nrhs, dopt);
  sr.seconds = ts.seconds();
  r_.factorization = sr.method;
  return sr;
}

}  // namespace tcsolve::app
