#include "apps/job/local_solve.hpp"

#include <algorithm>

#include "apps/job/inputs.hpp"
#include "apps/job/pipeline.hpp"
#include "core/device.hpp"
#include "core/trace.hpp"
#include "preprocess/rcm.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/eigs/eigs.hpp"
#include "spmm/chebyshev_step.hpp"

namespace tcsolve::app {

LocalSolve::~LocalSolve() = default;

void LocalSolve::run(Backend backend, std::int64_t fit_columns) {
  if (!s_.eigs()) return run_solve(backend, fit_columns);
  Timer tp;
  r_.preconditioner = to_string(s_.precond);
  // The operator's kernel trial runs at the width the solver will apply, and its scratch X and Y
  // (2 blocks of that width) must fit beside the matrices as the solver's blocks will.
  const std::int64_t eig_cols =
      fit_columns > 0 ? std::max<std::int64_t>(1, std::min<std::int64_t>(s_.k + 8, fit_columns / 2)) : s_.k + 8;
  ensure_operators(backend, static_cast<int>(eig_cols));
  r_.time_operator = tp.seconds();
  r_.time_setup += r_.time_operator;
  CheckpointWriter ck(s_, *in_.A, perm_, r_);
  run_eigs(backend, fit_columns, ck);
}

void LocalSolve::ensure_operators(Backend backend, int cols) {
  if (operators_built_) return;
  build_operators(backend, cols);
  operators_built_ = true;
  trace_mark("job: operator built");
  r_.spmm_kernel = to_string(aop_->plan().kernel);
  r_.spmm_plan = aop_->plan().reason;
  r_.backend = to_string(backend);
  r_.device = backend == Backend::cuda ? device_name() : "cpu";
}

// --reorder symmetric: when the reordering is applied (permutation p), the operator is
// Ã = P·A·Pᵀ, Ã(i, j) = A(p[i], p[j]). The solvers then see Ã, B̃ = P·B·Pᵀ, b̃ = P·b and the
// diagonal P·d (same spectrum; residual norms unchanged since P is orthogonal), and their vectors
// are scattered back once at exit: x[p[i]] = x̃[i].
void LocalSolve::build_operators(Backend backend, int cols) {
  ops_ = &cache_.ops(backend);
  std::string why_auto;
  const bool reorder = s_.reorder == Reordering::symmetric;
  if (!reorder && s_.reorder == Reordering::automatic && auto_reorder(backend, &why_auto)) {
    // (the RCM order and P·A·Pᵀ made by auto_reorder: the operator on it, not cached)
    OperatorOptions oo;
    oo.precision = s_.storage();
    oo.stream = ops_->stream();
    oo.expected_cols = cols;
    aop_rcm_ = make_sparse_operator(a_perm_, backend, oo);
    aop_ = aop_rcm_.get();
    perm_ = &rcm_perm_;
    a_csr_ = &a_perm_;
    b_csr_ = nullptr;
    bop_ = nullptr;
    r_.reorder_plan = "permuted basis B = P·A·Pᵀ (" + why_auto + "); " + aop_->plan().reason;
    return;
  }
  aop_ = &cache_.op(in_.A, backend, s_.storage(), cols, nullptr,
                    reorder ? OperatorBasis::permuted : OperatorBasis::original);
  perm_ = reorder ? aop_->permutation() : nullptr;
  a_csr_ = &in_.A->a;
  b_csr_ = in_.B ? &in_.B->a : nullptr;
  bop_ = nullptr;
  if (perm_) {
    a_perm_ = permute_symmetric(in_.A->a, *perm_);
    a_csr_ = &a_perm_;
    if (in_.B) {
      b_perm_ = permute_symmetric(in_.B->a, *perm_);
      b_csr_ = &b_perm_;
      OperatorOptions oo;
      oo.stream = ops_->stream();
      oo.expected_cols = cols;
      bop_perm_ = make_sparse_operator(b_perm_, backend, oo);
      bop_ = bop_perm_.get();
    }
  } else if (in_.B) {
    bop_ = &cache_.op(in_.B, backend, Precision::fp64, cols);
  }
  if (reorder) r_.reorder_plan = aop_->plan().reason;
}

// --reorder auto: preprocess/rcm.hpp's locality_order for eigs on the CPU (not with a mass
// matrix, a shift, constraints or start vectors: their own orders would follow). Sets rcm_perm_
// and a_perm_ (P·A·Pᵀ) when it reorders.
bool LocalSolve::auto_reorder(Backend backend, std::string* why) {
  if (backend != Backend::cpu || !s_.eigs() || in_.B || !s_.sigma.empty() || !s_.constraints.empty() ||
      !in_.start.empty())
    return false;
  LocalityOrder lo = locality_order(in_.A->a);
  if (lo.perm.empty()) return false;
  *why = "auto: " + lo.describe();
  rcm_perm_ = std::move(lo.perm);
  a_perm_ = std::move(lo.permuted);
  return true;
}

std::vector<double> LocalSolve::gather(const double* x, std::size_t size) const {
  const std::int64_t n = in_.A->a.nrows;
  std::vector<double> xt(size);
  permute_block_rows(x, n, xt.data(), n, n, static_cast<std::int64_t>(size) / n, perm_->data(), false);
  return xt;
}

void LocalSolve::scatter(std::vector<double>& xt) const {
  const std::int64_t n = in_.A->a.nrows;
  if (xt.empty() || n == 0) return;
  std::vector<double> x(xt.size());
  permute_block_rows(xt.data(), n, x.data(), n, n, static_cast<std::int64_t>(xt.size()) / n, perm_->data(), true);
  xt.swap(x);
}

void LocalSolve::run_eigs(Backend backend, std::int64_t fit_columns, CheckpointWriter& ck) {
  EigsOptions eo = eigs_options(s_);
  eo.backend = backend;
  eo.workspace_columns = fit_columns;
  if (!in_.start.empty()) eo.v0 = perm_ ? StartBlock(gather(in_.start.data(), in_.start.size())) : in_.start;
  if (!in_.constraints.empty())
    eo.constraints = perm_ ? HostBlock(gather(in_.constraints.data(), in_.constraints.size())) : in_.constraints;
  eo.on_checkpoint = ck.callback();
  if (in_.B) eo.mass_name = "mass matrix " + s_.mass;
  Timer ts;
  eo.on_iteration = eigs_progress(progress_, s_.k, ts);
  EigsPrebuilt pre;
  pre.ops = ops_;
  pre.a = aop_;
  pre.b = bop_;
  pre.spmm_kernel = r_.spmm_kernel;
  pre.spmm_plan = r_.spmm_plan;
  if (!perm_) pre.a_inf_norm = in_.A->inf_norm, pre.a_diagonal = &in_.A->diagonal;
  // (the permuted basis is another matrix for the planner: its own memo)
  pre.memo = &cache_.memo(s_.matrix + (perm_ ? "|permuted" : "") + "|" + to_string(backend), s_.mass);
  EigsResult er = eigs(*a_csr_, b_csr_, eo, pre);
  ck.finish();
  if (perm_) scatter(er.vectors);
  r_.time_setup += er.setup_seconds;
  record_eigs(er, r_);
  notes_.wanted = s_.k;
}

// block CG with the plan's preconditioner. random:S right-hand sides are generated where the
// solve runs (block_cg_random) when nothing needs them on the host (no permutation, one batch, no
// initial guess).
SolveResult LocalSolve::run_cg(const SolvePlan& plan, CheckpointWriter& ck, double budget) {
  const std::int64_t n = in_.A->a.nrows, nrhs = in_.nrhs;
  CgOptions co = cg_options(s_);
  Timer ts;
  std::unique_ptr<ChebyshevPreconditioner>& cheb = cheb_;
  if (plan.precond == CgPrecond::chebyshev) {
    // ‖A‖∞ (‖D⁻¹A‖∞ when Jacobi-scaled) ≥ λmax; the fused step and the scaling need A in the
    // operator's basis (not with --reorder's permutation).
    const bool jacobi = !perm_ && chebyshev_wants_jacobi(in_.A->a);
    cheb = attach_chebyshev(*aop_, *ops_, s_, std::min(nrhs, plan.batch), chebyshev_upper_bound(in_.A->a, jacobi),
                            perm_ ? nullptr : &in_.A->a, jacobi, nullptr, co, r_, ts);
  } else if (plan.precond != CgPrecond::none) {
    co.jacobi_diagonal = perm_ ? gather(in_.A->diagonal.data(), in_.A->diagonal.size()) : in_.A->diagonal;
  }
  // --precision auto on the GPU: fp32 iterations inside fp64 refinement (solvers/solve_plan.hpp),
  // with A's fp32 step: the bsr_block operator's own, or the CSR operator's device copy with its
  // values rounded (4·nnz bytes more).
  std::unique_ptr<ChebyshevStep> step32;
  if (cg_fp32_iterations(plan, s_.precision_auto(), ops_->space() == Space::device && ops_->cg().fp32_blocks(),
                         perm_ != nullptr)) {
    co.step32 = aop_->block_step();
    if (!co.step32) {
      step32 = make_chebyshev_step_on_operator(*aop_, in_.A->a, Precision::fp32, ops_->stream());
      co.step32 = step32.get();
    }
  }
  co.on_iteration = cg_progress(progress_, nrhs, ts);
  co.on_iteration = with_budget(co.on_iteration, budget, ts);
  co.on_checkpoint = ck.callback();
  SolveResult sr;
  const bool random_rhs = in_.rhs.empty() && nrhs > 0;
  if (random_rhs && !perm_ && plan.batch >= nrhs && in_.start.empty()) {
    sr = block_cg_random(*aop_, s_.seed + 1000, nrhs, *ops_, co, !s_.out.empty());
  } else {
    std::int64_t cols = nrhs;
    const std::vector<double> random = random_rhs ? load_rhs(s_.rhs, n, &cols, s_.seed) : std::vector<double>();
    const std::vector<double>& rhs = random_rhs ? random : in_.rhs;
    const std::vector<double> rhs_perm = perm_ ? gather(rhs.data(), rhs.size()) : std::vector<double>();
    const double* b_all = perm_ ? rhs_perm.data() : rhs.data();
    // --x0: the initial guesses, in the operator's basis.
    const std::vector<double> x0_perm =
        perm_ && !in_.start.empty() ? gather(in_.start.data(), in_.start.size()) : std::vector<double>();
    const double* x0_all = in_.start.empty() ? nullptr : perm_ ? x0_perm.data() : in_.start.data();
    sr = plan.batch >= nrhs ? block_cg(*aop_, b_all, n, nrhs, *ops_, co, x0_all)
                            : cg_in_batches(b_all, x0_all, plan.batch, co, ck);
    if (perm_) scatter(sr.solutions);
  }
  ck.finish();
  sr.seconds = ts.seconds();
  return sr;
}

// Columns in batches when 8 blocks of all right-hand sides do not fit the GPU: each batch is an
// independent block CG (the same per-column test); the results are concatenated.
SolveResult LocalSolve::cg_in_batches(const double* b_all, const double* x0_all, std::int64_t batch,
                                      const CgOptions& co, CheckpointWriter& ck) {
  const std::int64_t n = in_.A->a.nrows, nrhs = in_.nrhs;
  SolveResult all;
  all.n = n;
  all.status = SolverStatus::converged;
  // (later batches' columns hold their start until they run: a checkpoint shows them so)
  if (x0_all) all.solutions.assign(x0_all, x0_all + n * nrhs);
  else all.solutions.assign(static_cast<std::size_t>(n * nrhs), 0.0);
  for (std::int64_t c0 = 0; c0 < nrhs; c0 += batch) {
    const std::int64_t c = std::min(batch, nrhs - c0);
    ck.set_merge([&, c0](std::vector<double>& b, const SolverCheckpoint&) {
      std::vector<double> full(all.solutions);
      std::copy(b.begin(), b.end(), full.begin() + c0 * n);
      b.swap(full);
    });
    SolveResult r = block_cg(*aop_, b_all + c0 * n, n, c, *ops_, co, x0_all ? x0_all + c0 * n : nullptr);
    std::copy(r.solutions.begin(), r.solutions.end(), all.solutions.begin() + c0 * n);
    all.residual_norms.insert(all.residual_norms.end(), r.residual_norms.begin(), r.residual_norms.end());
    all.column_iterations.insert(all.column_iterations.end(), r.column_iterations.begin(), r.column_iterations.end());
    all.iterations = std::max(all.iterations, r.iterations);
    if (c0 == 0 || r.precision != "fp64") all.precision = r.precision;
    all.operator_applies += r.operator_applies;
    all.history.insert(all.history.end(), r.history.begin(), r.history.end());
    if (r.status != SolverStatus::converged && all.status == SolverStatus::converged) {
      all.status = r.status;
      all.reason = format("right-hand sides %lld-%lld: ", (long long)c0, (long long)(c0 + c - 1)) + r.reason;
    }
  }
  ck.set_merge(nullptr);
  notes_.batch = format("right-hand sides solved in %lld batches of up to %lld columns to fit the GPU memory",
                        (long long)((nrhs + batch - 1) / batch), (long long)batch);
  return all;
}

}  // namespace tcsolve::app
