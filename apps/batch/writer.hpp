// A job's result file on its way to disk while the worker's next job runs (bytes, fsync, rename:
// 7–9 ms for 5 MB on the H200 machine; run_job's finish_write, built in memory on the job's
// thread, makes no HDF5 call on the writer's). One write in flight per worker; a job that reads
// the file being written waits for it. A write that fails turns its row into a failure.
#pragma once
#include <cstddef>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "apps/batch/summary.hpp"
#include "apps/job/spec.hpp"

namespace tcsolve::app {

class PendingWrite {
 public:
  bool active() const { return done_.valid(); }
  // Starts writing: finish_write on a thread of its own; rows[row] is the job's row.
  // drop_checkpoint: the job's automatic checkpoint goes once the result is on disk.
  void start(std::function<void()> finish_write, std::size_t row, const JobSpec& spec, const std::string& command,
             bool drop_checkpoint);
  // Waits for the write in flight (if any). A failed write makes its row a failure (status
  // "failed", the error, and a failure record in the job's file); returns the row's index then,
  // else -1.
  long finish(std::vector<Row>& rows);
  // Whether job `s` reads the file being written (its inputs or the checkpoint it resumes from).
  bool feeds(const JobSpec& s) const;

 private:
  std::future<void> done_;
  std::size_t row_ = 0;
  JobSpec spec_;
  std::string command_;
  bool drop_checkpoint_ = false;
};

// A job's failure in its row (one line) and its failure record (docs/hdf5-schema.md section 4;
// a record that cannot be written is said in the row).
void record_failure(Row& row, const std::string& error, const JobSpec& spec, const std::string& command);

}  // namespace tcsolve::app
