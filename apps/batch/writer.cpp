#include "apps/batch/writer.hpp"

#include <filesystem>

#include "apps/batch/resume.hpp"
#include "apps/job/run.hpp"

namespace tcsolve::app {

void record_failure(Row& row, const std::string& error, const JobSpec& spec, const std::string& command) {
  row.status = "failed";
  row.message = error;
  for (char& c : row.message)
    if (c == '\n') c = ' ';
  try {
    write_failure_file(spec, row.message, command);
  } catch (const std::exception& e) {
    row.message += std::string(" (and the failure record could not be written: ") + e.what() + ")";
  }
}

void PendingWrite::start(std::function<void()> finish_write, std::size_t row, const JobSpec& spec,
                         const std::string& command, bool drop_checkpoint) {
  done_ = std::async(std::launch::async, std::move(finish_write));
  row_ = row;
  spec_ = spec;
  command_ = command;
  drop_checkpoint_ = drop_checkpoint;
}

long PendingWrite::finish(std::vector<Row>& rows) {
  if (!done_.valid()) return -1;
  try {
    done_.get();
    if (drop_checkpoint_) remove_own_checkpoint(spec_);
    return -1;
  } catch (const std::exception& e) {
    record_failure(rows[row_], e.what(), spec_, command_);
    return static_cast<long>(row_);
  }
}

bool PendingWrite::feeds(const JobSpec& s) const {
  namespace fs = std::filesystem;
  if (!done_.valid()) return false;
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(spec_.out, ec);
  std::vector<std::string> in = job_input_files(s);
  if (!s.resume_from.empty()) in.push_back(s.resume_from);
  for (const std::string& f : in) {
    std::error_code e2;
    if (fs::weakly_canonical(f, e2) == out) return true;
  }
  return false;
}

}  // namespace tcsolve::app
