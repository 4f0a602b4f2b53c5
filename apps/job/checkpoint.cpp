#include "apps/job/checkpoint.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "apps/job/inputs.hpp"
#include "core/host_memory.hpp"
#include "io/atomic_file.hpp"
#include "io/hdf5_file.hpp"

namespace tcsolve::app {

namespace {

// A checkpoint file: attributes kind = "tcsolve checkpoint", task, matrix, matrix_checksum, rows,
// iteration, locked, solver_seconds, job_options, tcsolve_version; dataset block [cols][n] (the
// solver's block in the input order; svds: V's kept columns and next block, n = A's columns).
// Written atomically (a kill leaves the previous one).
void write_checkpoint(const JobSpec& s, const PreparedMatrix& a, const SolverCheckpoint& c,
                      const std::vector<double>& block) {
  AtomicFile af(s.checkpoint);
  {
    Hdf5File f = Hdf5File::create(af.temp_path(), 8.0 * static_cast<double>(block.size()) + 1e6);
    f.set_attr("kind", "tcsolve checkpoint");
    f.set_attr("task", to_string(s.task));
    f.set_attr("matrix", s.matrix);
    f.set_attr("matrix_checksum", a.checksum());
    f.set_attr("rows", c.n);
    f.set_attr("iteration", c.iteration);
    f.set_attr("locked", c.locked);
    f.set_attr("solver_seconds", c.seconds);
    f.set_attr("job_options", job_options_string(s));
    f.set_attr("tcsolve_version", TCSOLVE_VERSION);
    // whose it is (checkpoint_is_own): a batch removes or replaces only its own job's
    if (!s.name.empty()) f.set_attr("job", s.name);
    if (!s.out.empty()) f.set_attr("out", s.out);
    f.write_2d("block", block.data(), static_cast<std::int64_t>(block.size()) / std::max<std::int64_t>(c.n, 1), c.n);
    f.close();
  }
  af.commit();
}

}  // namespace

std::vector<double> read_checkpoint(const JobSpec& s, const PreparedMatrix& a, std::int64_t* cols,
                                    std::string* note) {
  const std::string& file = s.resume_from;
  std::string kind, task, sum;
  std::int64_t iteration = 0;
  double secs = 0;
  {
    Hdf5File f = Hdf5File::open(file);
    kind = f.has_attr("kind") ? f.attr_string("kind") : "";
    if (kind != "tcsolve checkpoint")
      throw InputError(file, 0, std::string("not a tcsolve checkpoint (no attribute kind = \"tcsolve checkpoint\"") +
                                    (s.svds() ? ")" : std::string("; a result is continued with ") +
                                                          (s.eigs() ? "--start" : "--x0") + ")"));
    task = f.attr_string("task");
    sum = f.attr_string("matrix_checksum");
    iteration = f.attr_int64("iteration");
    secs = f.attr_double("solver_seconds");
  }
  if (task != to_string(s.task))
    throw InputError(file, 0, "a checkpoint of " + task + ", not of " + to_string(s.task));
  if (!a.has_checksum(sum))
    throw InputError(file, 0, "written for another matrix (checksum " + sum + "; " + s.matrix +
                                  " has " + a.checksum() + ")");
  // (svds: right singular vectors, of A's columns)
  std::vector<double> block = read_columns(file, "block", s.svds() ? a.a.ncols : a.a.nrows, "checkpoint's vectors", cols);
  *note = format("resumed from %s (iteration %lld, %.3g s of solver time)", file.c_str(),
                 (long long)iteration, secs);
  return block;
}

std::string checkpoint_path_for(const std::string& out) {
  for (const char* ext : {".h5", ".hdf5"})
    if (ends_with(out, ext)) return out.substr(0, out.size() - std::strlen(ext)) + ".checkpoint.h5";
  return out + ".checkpoint.h5";
}

bool checkpoint_fits(const JobSpec& s, const std::string& file, std::string& why) {
  try {
    Hdf5File f = Hdf5File::open(file);
    if (!f.has_attr("kind") || f.attr_string("kind") != "tcsolve checkpoint") {
      why = "not a tcsolve checkpoint";
      return false;
    }
    if (f.attr_string("job_options") != job_options_string(s)) {
      why = "written for other options or inputs";
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
}

bool checkpoint_is_own(const JobSpec& s, const std::string& file) {
  namespace fs = std::filesystem;
  try {
    Hdf5File f = Hdf5File::open(file);
    if (!f.has_attr("kind") || f.attr_string("kind") != "tcsolve checkpoint") return false;
    if (!f.has_attr("job") || !f.has_attr("out"))  // (written before checkpoints named their job)
      return f.has_attr("job_options") && f.attr_string("job_options") == job_options_string(s);
    std::error_code e1, e2;
    return f.attr_string("job") == s.name && !s.out.empty() &&
           fs::weakly_canonical(f.attr_string("out"), e1) == fs::weakly_canonical(s.out, e2) && !e1 && !e2;
  } catch (const std::exception&) {
    return false;
  }
}

CheckpointWriter::CheckpointWriter(const JobSpec& s, const PreparedMatrix& a, const std::vector<std::int32_t>* perm,
                                   ResultRecord& rec)
    : s_(s), a_(a), perm_(perm), rec_(rec) {}

CheckpointWriter::~CheckpointWriter() {
  if (writing_.valid()) writing_.wait();
}

CheckpointFn CheckpointWriter::callback() {
  if (s_.checkpoint.empty()) return {};
  return [this](SolverCheckpoint& c) { write(c); };
}

// A checkpoint counts once its file is committed; a failed write is counted as failed.
std::vector<double> CheckpointWriter::wait_for_writer() {
  if (!writing_.valid()) return {};
  try {
    std::vector<double> done = writing_.get();
    ++rec_.checkpoints;
    rec_.checkpoint_bytes = writing_bytes_;
    return done;
  } catch (const std::exception& e) {
    error_ = e.what();
    ++rec_.checkpoint_failures;
  }
  return {};
}

void CheckpointWriter::write(SolverCheckpoint& c) {
  Timer tc;
  std::vector<double> done = wait_for_writer();
  if (!error_.empty()) return;
  std::vector<double> block = std::move(c.block);
  if (merge_) merge_(block, c);
  writing_bytes_ = 8.0 * static_cast<double>(block.size());
  const SolverCheckpoint meta = c;  // (attributes only: c.block is empty here)
  c.block = std::move(done);        // the next checkpoint's copy goes there
  writing_ = std::async(std::launch::async, [this, meta, b = std::move(block)]() mutable {
    const std::int64_t n = a_.a.nrows;
    if (!perm_ || n == 0) {
      write_checkpoint(s_, a_, meta, b);
      return std::move(b);
    }
    std::vector<double> in_order;
    resize_huge(in_order, b.size());
    permute_block_rows(b.data(), n, in_order.data(), n, n, static_cast<std::int64_t>(b.size()) / n,
                       perm_->data(), true);
    write_checkpoint(s_, a_, meta, in_order);
    return std::move(b);
  });
  rec_.checkpoint_seconds += tc.seconds() + c.copy_seconds;
}

void CheckpointWriter::finish() {
  Timer tw;
  wait_for_writer();
  rec_.checkpoint_seconds += tw.seconds();
  if (!error_.empty()) rec_.checkpoint_note = "checkpoints stopped: " + error_;
}

}  // namespace tcsolve::app
