// Running a job: spec → run → record. One pipeline, two backends: run_job on this process (the
// command line, a batch's worker per GPU) and run_distributed_job on every rank of an MPI launch
// or on rank threads of this process, one GPU each (`--gpus N`) (distributed/'s operator and dense
// ops; rows partitioned, vectors gathered to rank 0). Both fill one ResultRecord
// (results/record.hpp) and write it with one writer.
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include "apps/job/cache.hpp"
#include "results/record.hpp"
#include "apps/job/spec.hpp"
#include "core/interrupt.hpp"
#include "distributed/comm.hpp"

namespace tcsolve::app {

// Per-iteration report for a progress line: iteration, columns converged of wanted, largest
// residual norm of the wanted columns, seconds since the solve began.
using ProgressFn = std::function<void(std::int64_t it, std::int64_t converged, std::int64_t wanted,
                                      double max_residual, double seconds)>;

struct JobOutcome {
  // The result as written (or to be written): status, values, timings, the plan and its notes.
  ResultRecord record;
  double max_residual = 0;  // largest true residual norm (relative for solve)
  bool wrote_output = false;
  // run_job(..., defer_write = true): the result file was built in memory and its bytes still
  // have to reach the disk: call finish_write (on any thread; it makes no HDF5 call) to write,
  // fsync and rename it into place; it throws OutputError as the write would have. Empty when
  // the file was written before run_job returned (or there is none).
  std::function<void()> finish_write;
  // 0 converged; 128 + signal when interrupted (130 SIGINT, 143 SIGTERM); 1 otherwise.
  int exit_code() const {
    if (record.status == "interrupted") return 128 + (interrupt_signal() > 0 ? interrupt_signal() : 2);
    return record.status == "converged" ? exit_ok : exit_failed;
  }
};

// Runs a job on this process: reads (through the cache), checks, solves, writes spec.out
// (atomically) and the plot. Input and usage errors propagate as exceptions (the caller records
// them); solver non-convergence and breakdown are outcomes. `command` is stored in the result.
// defer_write: a result file built in memory (up to Hdf5File::kInMemoryBytes) is not put on disk
// here but handed back as JobOutcome::finish_write (batch overlaps it with the next job).
// gpu: the ordinal the job runs on (batch's worker per GPU; `cache` belongs to that GPU), or -1
// for this process's (selected_gpu(): under mpirun the rank's, waited for here).
JobOutcome run_job(const JobSpec& spec, MatrixCache& cache, const ProgressFn& progress,
                   const std::string& command, bool defer_write = false, int gpu = -1);

// The options run_distributed_job refuses (UsageError naming them), checked before any rank
// communicates: every rank refuses alike and ends normally (threads: say --gpus, not mpirun).
void check_distributed_job(const JobSpec& spec, int ranks, bool threads = false);
// `--gpus <asked>` for n GPUs (n > 1; 0: `all` found none): UsageError unless n GPUs are visible.
// Counting them initialises CUDA (0.2–0.3 s on the H200 hosts); done before any row is read.
void require_visible_gpus(int n, const std::string& asked);
// Whether rank threads start their GPUs (context, NCCL, the dense ops' handles) beside the rows'
// read: inputs read by row ranges (generators, HDF5) without METIS.
bool gpus_start_beside_rows(const JobSpec& spec);
// A job run by every rank of an MPI launch (apps/job/distributed.cpp): each rank builds or reads
// its rows, eigs runs Chebyshev (the re-check and the true-residual check included) and solve
// block CG over distributed/'s operator and dense ops; rank 0 writes spec.out and returns the
// outcome to print (the others return it too, printing nothing). leave_to_exit: the process ends
// after the outcome is printed; the job's device memory and handles are left to the exit.
JobOutcome run_distributed_job(const JobSpec& spec, Communicator& comm, const ProgressFn& progress,
                               const std::string& command, bool leave_to_exit = false);

// run_distributed_job on `ranks` threads of this process, one GPU each (`--gpus N`; the communicator
// of distributed/thread_ranks.hpp): checks the options first (check_distributed_job), returns rank
// 0's outcome (rank 0 wrote spec.out) or rethrows the first rank's error once every rank stopped.
// When the other ranks have not stopped 10 s after a rank failed (a device wait on a peer that is
// gone), stuck(that error) is called: it should end the process. leave_to_exit: the process ends
// after the outcome is printed; the ranks' device memory and NCCL communicators are left to it.
JobOutcome run_distributed_job_on_threads(const JobSpec& spec, int ranks, const ProgressFn& progress,
                                          const std::string& command,
                                          const std::function<void(std::exception_ptr)>& stuck,
                                          bool leave_to_exit = false);

// Writes a result file holding only the failure (attributes status = "failed", error, task,
// matrix, job...: docs/hdf5-schema.md section 4): what a batch leaves for a job that could not run.
void write_failure_file(const JobSpec& spec, const std::string& error, const std::string& command);

}  // namespace tcsolve::app
