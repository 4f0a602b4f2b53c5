#include "apps/batch/resume.hpp"

#include <filesystem>

#include "apps/job/checkpoint.hpp"
#include "io/hdf5_file.hpp"

namespace tcsolve::app {

namespace fs = std::filesystem;

bool result_is_complete(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || !Hdf5File::is_hdf5(path)) return false;
  try {
    Hdf5File f = Hdf5File::open(path);
    return f.has_attr("status") && f.attr_string("status") != "failed" && f.attr_string("status") != "interrupted";
  } catch (const Error&) {
    return false;
  }
}

bool stored_result_stands(const JobSpec& s, MatrixCache& cache, std::string& why) {
  if (!result_is_complete(s.out)) {
    why = "no complete result";
    return false;
  }
  std::string stored_options, stored_stamps, matrix_sum, mass_sum;
  try {
    Hdf5File f = Hdf5File::open(s.out);
    if (!f.has_attr("job_options") || !f.has_attr("input_stamps")) {
      why = "the stored result does not record its options (written by an older tcsolve)";
      return false;
    }
    stored_options = f.attr_string("job_options");
    stored_stamps = f.attr_string("input_stamps");
    if (f.has_attr("matrix_checksum")) matrix_sum = f.attr_string("matrix_checksum");
    if (f.has_attr("mass_checksum")) mass_sum = f.attr_string("mass_checksum");
  } catch (const Error& e) {
    why = std::string("the stored result cannot be read: ") + e.what();
    return false;
  }
  if (stored_options != job_options_string(s)) {
    why = "the job's options changed since the stored result";
    return false;
  }
  if (stored_stamps == input_stamps(s)) return true;
  // A stamp changed: the matrix and mass by content; a right-hand-side file is not checksummed.
  if (!rhs_file(s).empty() && stored_stamps.find(file_stamp(rhs_file(s))) == std::string::npos) {
    why = "the right-hand-side file " + rhs_file(s) + " changed since the stored result";
    return false;
  }
  try {
    if (matrix_sum.empty() || !cache.get(s.matrix)->has_checksum(matrix_sum)) {
      why = "the matrix " + s.matrix + " changed since the stored result";
      return false;
    }
    if (!s.mass.empty() && (mass_sum.empty() || !cache.get(s.mass)->has_checksum(mass_sum))) {
      why = "the mass matrix " + s.mass + " changed since the stored result";
      return false;
    }
  } catch (const std::exception& e) {
    why = std::string("an input cannot be read: ") + e.what();
    return false;
  }
  return true;
}

std::string claim_checkpoint(JobSpec& s, bool resume) {
  std::error_code ec;
  if (s.checkpoint.empty() || !fs::exists(s.checkpoint, ec)) return {};
  std::string why;
  if (resume && s.resume_from.empty()) {
    if (checkpoint_fits(s, s.checkpoint, why)) {
      s.resume_from = s.checkpoint;
      return {};
    }
    const std::string note = "checkpoint " + s.checkpoint + " not used (" + why +
                             "): left as it is, and this run writes no checkpoints (remove it to let the job "
                             "checkpoint again)";
    s.checkpoint.clear();
    return note;
  }
  if (s.resume_from == s.checkpoint || checkpoint_is_own(s, s.checkpoint)) return {};
  const std::string note = "no checkpoints this run: " + s.checkpoint + " exists and is not this job's checkpoint "
                           "(left as it is)";
  s.checkpoint.clear();
  return note;
}

void remove_own_checkpoint(const JobSpec& s) {
  std::error_code ec;
  if (!s.checkpoint.empty() && checkpoint_is_own(s, s.checkpoint)) fs::remove(s.checkpoint, ec);
}

}  // namespace tcsolve::app
