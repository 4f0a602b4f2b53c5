// A job's checkpoints (docs/hdf5-schema.md section 5): the files, whose they are, and the writer
// that puts a running solver's block into them without stopping the solve.
#pragma once
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "apps/job/cache.hpp"
#include "results/record.hpp"
#include "apps/job/spec.hpp"
#include "solvers/result.hpp"

namespace tcsolve::app {

// The automatic checkpoint of a batch job writing OUT.h5: OUT.checkpoint.h5.
std::string checkpoint_path_for(const std::string& out);
// Whether FILE is a checkpoint of this job (kind, task, job_options); else `why` says what differs.
bool checkpoint_fits(const JobSpec& s, const std::string& file, std::string& why);
// Whether FILE is provably this job's checkpoint, current or stale: a tcsolve checkpoint whose
// attributes `job` and `out` name this job and its output (one written before checkpoints carried
// them: its job_options are this job's). A batch removes or replaces no other file at a
// checkpoint's path.
bool checkpoint_is_own(const JobSpec& s, const std::string& file);
// The block of the checkpoint s.resume_from, written for this task and matrix (else InputError
// saying what differs): n × cols column-major; `note` says where the run continues from.
std::vector<double> read_checkpoint(const JobSpec& s, const PreparedMatrix& a, std::int64_t* cols,
                                    std::string* note);

// --checkpoint: the solver's block (in the input order) written atomically by a thread of its
// own, so that the solve waits only for the copy to the host (into a buffer of an earlier
// checkpoint, handed back by the writer: no fresh pages to touch); the rows go back to the input
// order in the writer too. A checkpoint due while the previous one is still being written waits
// for it. A write that fails (full disk...) ends the checkpoints, not the solve; the record counts
// only committed files (checkpoints, checkpoint_failures, checkpoint_bytes, checkpoint_seconds).
class CheckpointWriter {
 public:
  // perm: --reorder's permutation (the solver's row i is the input's perm[i]), or nullptr.
  CheckpointWriter(const JobSpec& s, const PreparedMatrix& a, const std::vector<std::int32_t>* perm,
                   ResultRecord& rec);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  // The solver's callback (empty without --checkpoint).
  CheckpointFn callback();
  // A solve in batches: puts a batch's columns among the others' (on the solve's thread).
  void set_merge(std::function<void(std::vector<double>&, const SolverCheckpoint&)> merge) { merge_ = std::move(merge); }
  // Waits for the last write (before the result's: one HDF5 writer at a time); a failed write
  // leaves "checkpoints stopped: ERROR" in the record's checkpoint_note.
  void finish();

 private:
  void write(SolverCheckpoint& c);
  std::vector<double> wait_for_writer();

  const JobSpec& s_;
  const PreparedMatrix& a_;
  const std::vector<std::int32_t>* perm_;
  ResultRecord& rec_;
  std::function<void(std::vector<double>&, const SolverCheckpoint&)> merge_;
  std::future<std::vector<double>> writing_;
  double writing_bytes_ = 0;  // of the write in flight
  std::string error_;
};

}  // namespace tcsolve::app
