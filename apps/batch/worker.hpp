// A batch worker: takes the next group of jobs from the queue (apps/batch/batch.hpp) until none
// is left, and runs its jobs one after another on its GPU, each recorded in a row. It has its own
// matrices, operators, library handles and write in flight; its matrices go once no group it
// could still take uses them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "apps/batch/batch.hpp"
#include "apps/batch/summary.hpp"
#include "apps/batch/writer.hpp"
#include "apps/job/cache.hpp"

namespace tcsolve::app {

class Worker {
 public:
  // gpu: the worker's GPU (-1: the process's); index: its place among the workers (labels).
  Worker(BatchShared& b, int index, int gpu) : b_(b), gpu_(gpu), index_(index) {}
  // Runs groups from the queue until none is left (or an interrupt); frees the worker's GPU
  // resources on this thread.
  void run();
  // This worker's rows, and whether all its jobs converged (or were skipped).
  std::vector<Row> rows;
  bool all_ok = true;
  int index() const { return index_; }

 private:
  bool next_job();
  void run_one(std::size_t i);
  bool skip_if_done(const JobSpec& s, Row& row, const std::string& head);
  // automatic: s.checkpoint is the batch's automatic one (removed once the result is written)
  void run_job_into(JobSpec& s, Row& row, bool automatic, const std::string& head);
  void report(const Row& row, const std::string& head);
  void drop_matrices();
  void finish_pending();
  std::string who() const;

  BatchShared& b_;
  const int gpu_, index_;
  std::unique_ptr<MatrixCache> cache_ = std::make_unique<MatrixCache>();  // left to the exit (run())
  PendingWrite pending_;
  std::vector<std::size_t> mine_;  // the group this worker runs
  std::size_t at_ = 0;             // the job of it running now
};

}  // namespace tcsolve::app
