// Where a batch's jobs run: in groups that keep their order (a job that reads another job's
// output runs after it, on its worker), dealt round robin over the ranks of an MPI launch (job i
// on rank i mod N, one GPU each) and, in a process, taken from a queue by a worker per GPU
// (--gpus); the rows come back to rank 0 in the file's order.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "apps/batch/batch.hpp"
#include "apps/batch/summary.hpp"
#include "distributed/comm_thread.hpp"

namespace tcsolve::app {

// The jobs in groups that must run in order on one worker: a job that reads another job's output
// (its matrix, mass, right-hand sides, start block or --resume-from file) joins that job's group,
// so that the two run in the file's order as in one process. Groups in the order of their first
// jobs, each in the file's order; independent jobs are groups of one.
std::vector<std::vector<std::size_t>> job_groups(const std::vector<JobSpec>& jobs);

// GPUs to spread over in this process (--gpus N|all: N, or 0 for every visible one); 1 when the
// jobs cannot spread: under mpirun (a rank has one GPU), no job that may run on a GPU, or a
// device-memory cap (TCSOLVE_DEVICE_MEMORY_LIMIT: its accounting is the process's). UsageError
// for a count that is not one.
int gpus_wanted(const std::vector<JobSpec>& jobs, const std::string& gpus, bool distributed);

// This process's place among the ranks of an MPI launch (rank 0 of 1 otherwise). Where the
// launcher's environment places the rank, nothing waits for MPI: MPI_Init runs on the
// communicator's own thread, the rank's GPU and CUDA context come up on another, and the jobs
// start at once; MPI is needed only for the rows at the end.
struct RankPlace {
  int np = 1, me = 0;
  std::unique_ptr<CommunicatorThread> mpi;  // under mpirun with more than one rank
};
RankPlace place_ranks(const std::vector<JobSpec>& jobs);

// This rank's groups (job_groups dealt round robin) and the last group using each matrix.
void deal_groups(BatchShared& b, int np);

// Runs this process's workers (worker 0 on this thread at once; the others, one per further GPU,
// once the GPUs are counted) and returns their rows with those of the groups no worker took (an
// interrupt), in the file's order. A worker's error outside its jobs ends the batch once all
// are joined.
std::vector<Row> run_workers(BatchShared& b, int wanted_gpus, bool* all_ok);

// Under mpirun: every rank's rows on rank 0, in the file's order, and one exit status for all.
// Returns whether this rank prints the summary.
bool gather_rows(RankPlace& place, std::vector<Row>& rows, bool* all_ok);

}  // namespace tcsolve::app
