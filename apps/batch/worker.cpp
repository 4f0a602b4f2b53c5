#include "apps/batch/worker.hpp"

#include "core/trace.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "apps/batch/resume.hpp"
#include "apps/job/checkpoint.hpp"
#include "apps/job/run.hpp"
#include "core/device.hpp"
#include "core/interrupt.hpp"
#include "core/trace.hpp"
#include "io/hdf5_file.hpp"

namespace tcsolve::app {

// "rank 1: " under mpirun, "GPU 1: " with a worker per GPU, else "".
std::string Worker::who() const {
  if (b_.distributed) return format("rank %d: ", b_.me);
  if (b_.workers.load() > 1) return format(b_.cpu_workers > 0 ? "worker %d: " : "GPU %d: ", index_);
  return {};
}

// The next job: the next of this worker's group, or the first of the next group in the queue.
bool Worker::next_job() {
  if (!mine_.empty() && ++at_ < mine_.size()) return true;
  const std::size_t g = b_.next_group.fetch_add(1);
  if (g >= b_.groups.size()) return false;
  mine_ = b_.groups[g];
  at_ = 0;
  return true;
}

void Worker::run() {
  while (next_job()) {
    const std::size_t i = mine_[at_];
    run_one(i);
    drop_matrices();
    if (b_.abort_after && b_.jobs[i].name == b_.abort_after) {
      finish_pending();             // the job is complete, its file on disk
      ::kill(::getpid(), SIGKILL);  // as if killed
    }
    if (interrupt_requested()) {
      finish_pending();
      // The job that ran is recorded (its partial result says interrupted; --resume runs it
      // again); the rest of its group is listed as not run (and the groups no worker took, by
      // the scheduler).
      for (std::size_t k = at_ + 1; k < mine_.size(); ++k) rows.push_back(not_run_row(b_.jobs[mine_[k]], mine_[k], b_.me));
      all_ok = false;
      break;
    }
  }
  finish_pending();
  trace_mark("batch: a worker's last result written");
  // Its GPU's operators, workspaces and handles are left to the process's exit (the batch command
  // ends after its summary; freeing them took the workers' last tenths of a second).
  static_cast<void>(cache_.release());
}

void Worker::run_one(std::size_t i) {
  JobSpec s = b_.jobs[i];
  if (pending_.feeds(s)) finish_pending();
  Row row = job_row(s, i, b_.me);
  // Automatic checkpoints of a job that asked for none: OUT.checkpoint.h5, the first after
  // checkpoint_every seconds of its solve.
  const bool automatic = s.checkpoint.empty() && !s.out.empty();
  if (automatic) s.checkpoint = checkpoint_path_for(s.out), s.checkpoint_every = b_.opt.checkpoint_every;
  const std::string head = format("[%zu/%zu] %s", i + 1, b_.jobs.size(), s.name.c_str());
  {
    std::lock_guard<std::mutex> lock(b_.out_mu);
    b_.line.update(head + ": starting", true);
  }
  Timer t;
  // A stored result that stands makes the job's own automatic checkpoint obsolete: a kill between
  // the result's write and the checkpoint's removal left it (AppsKillResume.BatchAtRandomPoints).
  if (skip_if_done(s, row, head)) {
    if (automatic) remove_own_checkpoint(s);
  } else {
    run_job_into(s, row, automatic, head);
  }
  row.seconds = t.seconds();
  if (row.status != "converged" && row.status != "skipped") all_ok = false;
  report(row, head);
  rows.push_back(row);
}

// --resume: a stored result that stands is kept (the row shows what the earlier run found).
bool Worker::skip_if_done(const JobSpec& s, Row& row, const std::string& head) {
  if (!b_.opt.resume) return false;
  std::string stale;
  if (!stored_result_stands(s, *cache_, stale)) {
    if (result_is_complete(s.out) && !b_.opt.quiet) {
      std::lock_guard<std::mutex> lock(b_.out_mu);
      std::cerr << head << ": running again: " << stale << "\n";
    }
    return false;
  }
  row.status = "skipped";
  row.message = "output already complete (--resume)";
  try {
    Hdf5File f = Hdf5File::open(s.out);
    row.iterations = f.attr_int64("iterations");
    double mx = 0;
    for (const char* name : s.svds() ? std::vector<const char*>{"residual_av", "residual_atu"}
                                     : std::vector<const char*>{"residual_norms"})
      for (double v : f.read_doubles(name)) mx = std::max(mx, v);
    row.residual = mx;
  } catch (const Error&) {
  }
  return true;
}

// The job through run_job; its result file goes to disk while the next job runs (PendingWrite).
// The automatic checkpoint is removed once the result is on disk: only one this run wrote or
// continued from (a job that failed keeps it; --resume continues from it).
void Worker::run_job_into(JobSpec& s, Row& row, bool automatic, const std::string& head) {
  const std::string command = "tcsolve batch " + b_.opt.path + " (job " + s.name + ")";
  const std::string ck_note = claim_checkpoint(s, b_.opt.resume);
  if (!ck_note.empty() && !b_.opt.quiet) {
    std::lock_guard<std::mutex> lock(b_.out_mu);
    std::cerr << head << ": " << ck_note << "\n";
  }
  const ProgressFn progress = [&](std::int64_t it, std::int64_t conv, std::int64_t wanted, double res, double secs) {
    std::lock_guard<std::mutex> lock(b_.out_mu);
    b_.line.update(format("%s: %s iteration %lld, %lld/%lld, max residual %.2e, %s", head.c_str(), to_string(s.task),
                          (long long)it, (long long)conv, (long long)wanted, res, format_seconds(secs).c_str()));
  };
  bool drop = false;
  try {
    JobOutcome o = run_job(s, *cache_, progress, command, /*defer_write=*/true, gpu_);
    const ResultRecord& r = o.record;
    drop = automatic && !s.checkpoint.empty() && r.status != "interrupted" &&
           (r.checkpoints > 0 || s.resume_from == s.checkpoint);
    if (o.finish_write) {
      finish_pending();  // the previous job's file first: one write in flight
      pending_.start(std::move(o.finish_write), rows.size(), s, command, drop);
      drop = false;  // (the writer does it)
    }
    row.status = r.status;
    row.message = r.reason;
    if (!ck_note.empty()) row.message += (row.message.empty() ? "" : "; ") + ck_note;
    row.iterations = r.iterations;
    row.residual = o.max_residual;
  } catch (const std::exception& e) {
    record_failure(row, e.what(), s, command);
  }
  if (drop) remove_own_checkpoint(s);
}

void Worker::report(const Row& row, const std::string& head) {
  std::lock_guard<std::mutex> lock(b_.out_mu);
  b_.line.clear();
  if (!b_.opt.quiet && !b_.opt.json)
    std::cerr << format("%s%s: %s (%s)%s\n", who().c_str(), head.c_str(), row.status.c_str(),
                        format_seconds(row.seconds).c_str(), row.status == "failed" ? (": " + row.message).c_str() : "");
}

// Matrices no later job of this group and no group still in the queue uses.
void Worker::drop_matrices() {
  for (const auto& [m, last] : b_.last_group) {
    bool later = last >= b_.next_group.load();
    for (std::size_t k = at_ + 1; k < mine_.size() && !later; ++k)
      later = b_.jobs[mine_[k]].matrix == m || b_.jobs[mine_[k]].mass == m;
    if (!later) cache_->drop(m);
  }
}

void Worker::finish_pending() {
  const long failed = pending_.finish(rows);
  if (failed < 0) return;
  all_ok = false;
  const Row& row = rows[static_cast<std::size_t>(failed)];
  std::lock_guard<std::mutex> lock(b_.out_mu);
  b_.line.clear();
  if (!b_.opt.quiet && !b_.opt.json)
    std::cerr << format("%s[%zu/%zu] %s: failed: %s\n", who().c_str(), row.index + 1, b_.jobs.size(),
                        row.job.c_str(), row.message.c_str());
}

}  // namespace tcsolve::app
