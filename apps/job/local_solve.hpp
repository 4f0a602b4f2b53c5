// The solve of run_job on this process (apps/job/local.cpp): the operators in the iteration's
// basis (reordered when asked), then eigs or block CG (in batches of right-hand sides when the GPU
// memory is short), with checkpoints; the outcome goes into the record.
#pragma once
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "apps/job/cache.hpp"
#include "apps/job/checkpoint.hpp"
#include "results/record.hpp"
#include "apps/job/run.hpp"
#include "apps/job/spec.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/solve_method.hpp"
#include "solvers/solve_plan.hpp"

namespace tcsolve::app {

// What run_job read before solving.
struct LocalInputs {
  std::shared_ptr<const PreparedMatrix> A, B;
  std::vector<double> rhs;  // right-hand sides from a file (n × nrhs); empty for random:S
  std::int64_t nrhs = 0;
  StartBlock start;  // --start, --x0 or the checkpoint resumed from (input order)
  HostBlock constraints;  // eigs --constraints (n × p, input order)
};

// What the solve tells the rest of the run besides the record.
struct LocalNotes {
  std::string batch;       // right-hand sides solved in batches to fit the GPU memory
  std::string resume;      // where a resumed run continued from
  std::int64_t wanted = 0;  // columns the plot draws (k, or the right-hand sides)
};

class LocalSolve {
 public:
  LocalSolve(const JobSpec& s, MatrixCache& cache, const LocalInputs& in, const ProgressFn& progress,
             ResultRecord& r, LocalNotes& notes)
      : s_(s), cache_(cache), in_(in), progress_(progress), r_(r), notes_(notes) {}
  ~LocalSolve();
  // fit_columns (GPU runs; 0 = no limit): the n-vectors that fit beside the matrices. eigs passes
  // it to the driver (which shrinks its basis/width, or refuses); solve runs the right-hand sides
  // in batches (solvers/solve_plan.hpp).
  void run(Backend backend, std::int64_t fit_columns);

 private:
  void build_operators(Backend backend, int cols);
  void run_eigs(Backend backend, std::int64_t fit_columns, CheckpointWriter& ck);
  // solve (apps/job/local_methods.cpp): the method's plan (solvers/solve_method.hpp), then the
  // method and, when it fails, its fallbacks in order; the result of the last one tried is the
  // record's, and the reason says why each earlier one gave way.
  void run_solve(Backend backend, std::int64_t fit_columns);
  SolveMethodPlan plan_method(Backend backend);
  SolveResult run_method(SolveMethod m, Backend backend, std::int64_t fit_columns, double budget, CheckpointWriter& ck);
  SolveResult run_krylov(SolveMethod m, double budget);
  bool wants_polynomial(SolveMethod m) const;
  bool auto_reorder(Backend backend, std::string* why);
  SolveResult run_direct();
  // The operators for an iterative method (once; with the CG plan's batch width).
  void ensure_operators(Backend backend, int cols);
  // The right-hand sides on the host (random:S drawn here) and --x0, in the operator's basis.
  const std::vector<double>& host_rhs();
  SolveResult run_cg(const SolvePlan& plan, CheckpointWriter& ck, double budget);
  // on_iteration with the budget's check after `shown` (none when there is no budget, known or
  // pending); `clock` times the run.
  std::function<void(const IterationRecord&)> with_budget(std::function<void(const IterationRecord&)> shown,
                                                          double budget, const Timer& clock);
  SolveResult cg_in_batches(const double* b_all, const double* x0_all, std::int64_t batch, const CgOptions& co,
                            CheckpointWriter& ck);
  // --reorder symmetric applied (permutation p): x̃ = P·x and x = Pᵀ·x̃ for host blocks of n rows.
  std::vector<double> gather(const double* x, std::size_t size) const;
  void scatter(std::vector<double>& xt) const;

  const JobSpec& s_;
  MatrixCache& cache_;
  const LocalInputs& in_;
  const ProgressFn& progress_;
  ResultRecord& r_;
  LocalNotes& notes_;
  // the operators of this solve (A's from the cache; B's too, unless permuted here)
  DenseBlockOps* ops_ = nullptr;
  SparseOperator* aop_ = nullptr;
  SparseOperator* bop_ = nullptr;
  const std::vector<std::int32_t>* perm_ = nullptr;
  Csr<double> a_perm_, b_perm_;
  std::unique_ptr<SparseOperator> bop_perm_;
  std::vector<std::int32_t> rcm_perm_;          // --reorder auto's RCM order (auto_reorder)
  std::unique_ptr<SparseOperator> aop_rcm_;    // the operator on P·A·Pᵀ in that order
  const Csr<double>* a_csr_ = nullptr;
  const Csr<double>* b_csr_ = nullptr;
  std::unique_ptr<ChebyshevPreconditioner> cheb_;  // block CG's polynomial, when it ran
  std::vector<double> rhs_host_;                   // host_rhs()
  // The direct price computed on a host thread while a GPU iteration runs (plan_method: where the
  // symbolic analysis would cost more than a tenth of the iterations no solve does fewer of).
  std::future<double> direct_price_;
  bool operators_built_ = false;
};

}  // namespace tcsolve::app
