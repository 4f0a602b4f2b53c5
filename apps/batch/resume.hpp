// batch --resume and a job's checkpoint in a batch: what a stored result or checkpoint is, and
// what the batch may do with it.
#pragma once
#include <string>

#include "apps/job/cache.hpp"
#include "apps/job/spec.hpp"

namespace tcsolve::app {

// True when `path` is a complete tcsolve result (HDF5 with a status attribute other than
// "failed" and "interrupted").
bool result_is_complete(const std::string& path);

// batch --resume: whether the stored result of `spec` can stand. It can when it is complete, was
// written for the same options, and for the same inputs: the same file stamps, or, for a matrix
// or mass file whose stamp changed, the same content (its checksum, read through `cache`).
// `why` says what was found when it cannot.
bool stored_result_stands(const JobSpec& spec, MatrixCache& cache, std::string& why);

// A batch job's checkpoint file before the job runs. --resume continues from it when it fits the
// job; one that does not fit is left as it is, and so is any file there that is not provably the
// job's own checkpoint: the job then writes no checkpoints (that would replace it). Returns what
// was decided when it is worth saying ("" otherwise).
std::string claim_checkpoint(JobSpec& s, bool resume);

// Removes a job's automatic checkpoint once its result is on disk, when it still is provably the
// job's own (checkpoint_is_own).
void remove_own_checkpoint(const JobSpec& s);

}  // namespace tcsolve::app
