// The steps of a job that do not depend on where it runs, shared by run_job (this process,
// apps/job/local.cpp) and run_distributed_job (the ranks of an MPI launch,
// apps/job/distributed.cpp): the record's identity from the spec, the solver options the spec
// decides, block CG's preconditioner, what a result tells the record, the run's notes, the
// progress hooks and the result file.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "results/record.hpp"
#include "apps/job/run.hpp"
#include "apps/job/spec.hpp"
#include "solvers/block_cg.hpp"
#include "solvers/chebyshev_precond.hpp"
#include "solvers/eigs/eigs.hpp"
#include "solvers/solve_plan.hpp"
#include "solvers/svd/svds.hpp"

namespace tcsolve::app {

// The record before the run: its identity (task, job, inputs, command, job_options,
// input_stamps) and the options as asked (tolerance, limits, precision, seed, which...).
ResultRecord start_record(const JobSpec& s, const std::string& command);

// The solver options the spec decides; the backend adds operators, workspace, start and hooks.
EigsOptions eigs_options(const JobSpec& s);
CgOptions cg_options(const JobSpec& s);
SvdOptions svd_options(const JobSpec& s);
// The block CG planner's facts from the spec (solvers/solve_plan.hpp); the backend adds the
// matrix's (size, diagonal, GPU) and the memory.
SolvePlanFacts solve_plan_facts(const JobSpec& s, std::int64_t rhs);

// block CG's Chebyshev polynomial preconditioner on `a` (make_chebyshev_preconditioner): set in
// `co`; its description, bounds' time and the plan's note go to the record's preconditioner and
// its set-up to time_setup; `solve_clock` restarts (the set-up is not the solve's).
std::unique_ptr<ChebyshevPreconditioner> attach_chebyshev(const LinearOperator<double>& a, DenseBlockOps& ops,
                                                          const JobSpec& s, std::int64_t cols, double upper,
                                                          const Csr<double>* csr, bool jacobi,
                                                          std::unique_ptr<ChebyshevStep> fused, CgOptions& co,
                                                          ResultRecord& r, Timer& solve_clock);

// What a result tells the record: record_eigs, record_svds and the solve's part of record_solve
// are tcsolve_record's (results/record.hpp, shared with the Python module). The job's solve adds
// the polynomial's products to the applies (`cheb`), the solve's clock and steps, and the
// breakdown's words naming the matrix.
void record_solve(SolveResult& sr, const JobSpec& s, const ChebyshevPreconditioner* cheb, double solve_seconds,
                  ResultRecord& r);
// Appends a note to the record's reason ("reason; note").
void add_note(ResultRecord& r, const std::string& note);

// The solvers' per-iteration hooks for a progress line: the largest residual of the wanted
// columns (eigs: the first k), seconds on `clock`. Empty without `progress`.
std::function<void(const IterationRecord&)> eigs_progress(const ProgressFn& progress, std::int64_t k, const Timer& clock);
std::function<void(const IterationRecord&)> cg_progress(const ProgressFn& progress, std::int64_t rhs, const Timer& clock);

// Writes the record to `out` atomically: a file of up to Hdf5File::kInMemoryBytes (data_bytes:
// its datasets' bytes) is built in memory; with `defer` its bytes, fsync and rename are handed
// back (the returned function, on any thread) instead of done here (then the function is
// empty). time_write: the clock of a one-process result's time_write (or empty).
std::function<void()> write_result_file(const std::string& out, const ResultRecord& r, double data_bytes,
                                        bool defer, const std::function<double()>& time_write);

}  // namespace tcsolve::app
