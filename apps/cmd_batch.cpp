// tcsolve batch JOBFILE: the eigs/solve/svds jobs of a job file (apps/batch/jobfile.hpp), checked as a
// whole before any runs, spread over the GPUs of this process and the ranks of an MPI launch
// (apps/batch/scheduler.hpp), each recorded in its result file and in the summary; a failing job
// is recorded and the others still run. The parts are named in apps/batch/batch.hpp.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "apps/batch/batch.hpp"
#include "apps/batch/jobfile.hpp"
#include "apps/batch/scheduler.hpp"
#include "apps/batch/summary.hpp"
#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "apps/job/checkpoint.hpp"
#include "core/interrupt.hpp"
#include "io/atomic_file.hpp"

namespace tcsolve::app {

namespace {

namespace fs = std::filesystem;

CommandSpec batch_command() {
  return CommandSpec{
      "batch", "batch JOBFILE [options]",
      "Runs the eigs/solve/svds jobs of a job file, one after another on each GPU (every visible GPU\n"
      "by default: --gpus), and writes one HDF5 result per job.",
      "JOBFILE uses Boost.Program_options' config syntax: a [defaults] section and one [job.NAME]\n"
      "section per job, 'key = value' lines, '#' comments. Keys: task = eigs|solve|svds, matrix,\n"
      "mass, rhs, out (default NAME.h5), plot, and the long options of 'tcsolve eigs' / 'solve' /\n"
      "'svds' (k, which, method, tol, maxiter, block-size, precond, reorder, precision, device,\n"
      "cpu-fallback, seed; svds: k, center, block, basis). A [defaults] key a job's task does not\n"
      "have is ignored for that job.\n"
      "out, plot and checkpoint are relative to --output-dir and must stay inside it (no absolute\n"
      "path elsewhere, no '..' out of it) unless --allow-outside-output-dir; no two jobs may write\n"
      "the same file (results, plots, checkpoints: OUT.checkpoint.h5 by default).\n"
      "Example:\n"
      "  [defaults]\n  device = cpu\n  tol = 1e-8\n\n"
      "  [job.lap]\n  task = eigs\n  matrix = gen:lap2d:100\n  k = 4\n\n"
      "  [job.poisson]\n  task = solve\n  matrix = gen:lap2d:100\n  rhs = random:8\n\n"
      "The file is checked completely before anything runs (errors name the line). A matrix used\n"
      "by several jobs is read and prepared once. A failing job is recorded (status \"failed\" and\n"
      "the error in its output file) and the others still run. Outputs are written atomically;\n"
      "--resume skips jobs whose output is complete and was written for the same options and\n"
      "inputs (a job whose options or matrix changed, or that failed, runs again) and removes the\n"
      "temporary files an interrupted run left.\n"
      "SIGINT/SIGTERM stop the running job at its next iteration (its partial result is written\n"
      "with status interrupted and --resume runs it again) and start no further job.\n"
      "Exit status: 0 every job converged (or was skipped), 1 some job failed or did not converge,\n"
      "130/143 interrupted (SIGINT/SIGTERM), 2 bad job file or usage.\n"
      "With more than one GPU the jobs are spread over them (job i on GPU i mod N), one job at a\n"
      "time on each; a job that reads another job's output (matrix, right-hand sides, start, resume)\n"
      "runs after it on the same GPU. Under mpirun -np N they are spread over the ranks the same\n"
      "way, one GPU per rank; each job still writes its own result atomically, and rank 0 prints\n"
      "the summary.\n",
      {"JOBFILE"}};
}

// Before the first job runs: the output folder made, what an interrupted writer of this batch's
// outputs left removed (--resume: only the AtomicFile temporaries of writers that are gone), and
// every job's outputs checked against the file system (folders, inputs named as outputs).
void prepare_outputs(const std::string& path, const std::vector<JobSpec>& jobs, const std::string& outdir,
                     bool resume, bool quiet) {
  if (!outdir.empty()) {
    std::error_code ec;
    fs::create_directories(outdir, ec);
    if (ec) throw Error(outdir + ": cannot create the output folder: " + ec.message());
  }
  if (resume) {
    int removed = 0;
    for (const JobSpec& s : jobs) {
      removed += remove_stale_temporaries(s.out);
      if (!s.plot.empty()) removed += remove_stale_temporaries(s.plot);
      removed += remove_stale_temporaries(s.checkpoint.empty() ? checkpoint_path_for(s.out) : s.checkpoint);
    }
    if (removed > 0 && !quiet) std::cerr << "removed " << removed << " temporary file(s) left by an interrupted run\n";
  }
  for (const JobSpec& s : jobs) {
    try {
      check_job_outputs(s);
    } catch (const UsageError& e) {
      throw UsageError(path + ": job '" + s.name + "': " + e.what());
    }
  }
}

}  // namespace

int run_batch(const Args& args) {
  const CommandSpec spec = batch_command();
  BatchOptions opt;
  bool allow_outside = false;
  std::string outdir, gpus_opt = "all";
  po::options_description opts = option_table();
  opts.add_options()
      ("resume", po::bool_switch(&opt.resume),
       "skip jobs whose output file is complete; a job that left a checkpoint continues from it")
      ("checkpoint-every", po::value(&opt.checkpoint_every)->value_name("SECONDS"),
       "jobs write a checkpoint (OUT.checkpoint.h5 beside their output) every SECONDS while they "
       "run, so that a long job that is killed loses at most that much (default 60: shorter jobs "
       "write none); it is removed when the job's result is written")
      ("output-dir", po::value(&outdir)->value_name("DIR"),
       "folder of the jobs' results, plots and checkpoints (created if missing; default the current "
       "folder): relative paths are relative to it, and none may lead out of it")
      ("allow-outside-output-dir", po::bool_switch(&allow_outside),
       "let the job file write results, plots and checkpoints outside the output folder (absolute "
       "paths, '..')")
      ("gpus", po::value(&gpus_opt)->value_name("N|all"),
       "GPUs to spread the jobs over in this process, one worker each (default all visible GPUs; "
       "1: one job at a time). Under mpirun each rank takes one GPU instead; under "
       "TCSOLVE_DEVICE_MEMORY_LIMIT the jobs run one at a time")
      ("quiet,q", po::bool_switch(&opt.quiet), "no progress line and no summary table")
      ("json", po::bool_switch(&opt.json), "print the summary as JSON");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  if (!(opt.checkpoint_every > 0) || !std::isfinite(opt.checkpoint_every))
    throw UsageError(format("--checkpoint-every %g: expected a positive number of seconds", opt.checkpoint_every));
  opt.path = vm["JOBFILE"].as<std::string>();
  const std::vector<JobSpec> jobs = build_jobs(opt.path, read_job_file(opt.path), OutputPlace{outdir, allow_outside});
  prepare_outputs(opt.path, jobs, outdir, opt.resume, opt.quiet);
  // Under mpirun: job groups dealt over the ranks, each on its own GPU (jobs are independent: no
  // NCCL); rank 0 gathers the rows and prints the summary. Every rank checked the file above.
  RankPlace place = place_ranks(jobs);
  const bool distributed = place.mpi != nullptr;
  // SIGINT/SIGTERM: the running job stops at its next iteration's end and writes its partial
  // result; no further job starts; the summary is printed; exit 130/143 (core/interrupt.hpp).
  // (Not under mpirun: mpirun ends every rank on Ctrl-C; --resume reruns what was cut.)
  if (!distributed) install_interrupt_handlers();
  BatchShared shared(opt, jobs, !opt.quiet && !opt.json && place.me == 0);
  shared.me = place.me;
  shared.distributed = distributed;
  shared.abort_after = std::getenv("TCSOLVE_TEST_ABORT_AFTER_JOB");
  const char* test_workers = std::getenv("TCSOLVE_TEST_BATCH_WORKERS");
  shared.cpu_workers = test_workers && !distributed ? std::max(0, std::atoi(test_workers)) : 0;
  deal_groups(shared, place.np);
  bool all_ok = true;
  std::vector<Row> rows = run_workers(shared, gpus_wanted(jobs, gpus_opt, distributed), &all_ok);
  if (!gather_rows(place, rows, &all_ok)) return all_ok ? exit_ok : exit_failed;
  print_summary(rows, all_ok, opt.json, opt.quiet, distributed);
  if (interrupt_requested()) return 128 + (interrupt_signal() > 0 ? interrupt_signal() : 2);
  return all_ok ? exit_ok : exit_failed;
}

}  // namespace tcsolve::app
