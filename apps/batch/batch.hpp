// What the parts of a batch share: its options, the jobs, the groups this process runs and the
// queue they are taken from, and the output the workers take turns on. The parts:
//   jobfile    the file read and checked as a whole (apps/batch/jobfile.hpp)
//   scheduler  groups of jobs that must run in order, dealt over MPI ranks and taken by a worker
//              per GPU (apps/batch/scheduler.hpp)
//   worker     runs its groups' jobs, one at a time, and records each in a row
//              (apps/batch/worker.hpp)
//   writer     a job's result file goes to disk while the worker's next job runs
//              (apps/batch/writer.hpp)
//   resume     what --resume may keep, continue from or remove (apps/batch/resume.hpp)
//   summary    the rows gathered, in the file's order, printed (apps/batch/summary.hpp)
#pragma once
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "apps/job/spec.hpp"

namespace tcsolve::app {

struct BatchOptions {
  std::string path;  // the job file
  bool resume = false, quiet = false, json = false;
  double checkpoint_every = 60.0;  // the jobs' automatic checkpoints
};

struct BatchShared {
  BatchShared(const BatchOptions& o, const std::vector<JobSpec>& j, bool progress)
      : opt(o), jobs(j), line(progress) {}
  const BatchOptions& opt;
  const std::vector<JobSpec>& jobs;
  // The groups of jobs this process runs (scheduler.hpp job_groups, dealt over the ranks), taken
  // in order by the workers.
  std::vector<std::vector<std::size_t>> groups;
  std::atomic<std::size_t> next_group{0};
  // The last group of this process using each matrix: a worker drops a matrix once no group it
  // could still take uses it.
  std::map<std::string, std::size_t> last_group;
  std::atomic<int> workers{1};  // known once the GPUs are counted (labels)
  int cpu_workers = 0;          // test hook: workers without GPUs (TCSOLVE_TEST_BATCH_WORKERS)
  int me = 0;                   // this process's MPI rank
  bool distributed = false;     // under mpirun with more than one rank
  // Test hook: the process is killed (SIGKILL) right after this job, as by an interruption.
  const char* abort_after = nullptr;
  // The workers share the progress line and stderr.
  std::mutex out_mu;
  ProgressLine line;
};

}  // namespace tcsolve::app
