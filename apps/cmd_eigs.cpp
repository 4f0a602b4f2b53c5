// tcsolve eigs MATRIX and tcsolve solve MATRIX (and svds, apps/cmd_svds.cpp): one problem from the
// command line through the job pipeline, with a live progress line on a terminal, a final table
// (or --json, or --quiet) and an HDF5 result file.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "apps/job/report.hpp"
#include "apps/job/run.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/trace.hpp"
#include "io/matrix_io.hpp"

namespace tcsolve::app {

namespace {

// --device auto for one eigs problem in this process: a small one runs on the host, which ends
// before a GPU would have started. The GPU's start-up (CUDA context, library handles, paid once
// per process) is 0.2-0.3 s on the H200 machine; there the 16-core host's whole eigs run
// (seconds.total) was 4-100 ms on the shared matrices up to 77k entries (bcsstk21 0.029-0.038 s,
// fe_4elt2's Laplacian 0.15-0.18 s at k = 8; process wall 0.07-0.28 s against 0.41-0.56 s on the
// GPU), and tied at gen:lap2d:150 (112k entries, k = 16: wall 0.43-0.50 s both).
// Decided from the Matrix Market size line (io/matrix_io.hpp matrix_size_hint) before the CUDA
// start-up begins; other sources keep the GPU. Entries scale with k beyond 16 (the work grows
// with the block). Not for batch (one start-up for many jobs) nor the Python module (one per
// process), nor a storage precision that needs the GPU.
constexpr std::int64_t kHostEigsEntries = 100000;

void choose_small_eigs_device(JobSpec& s) {
  if (!s.eigs() || s.device != DeviceChoice::automatic) return;
  if (s.precision != PrecisionChoice::automatic && s.precision != PrecisionChoice::fp64 &&
      s.precision != PrecisionChoice::fp32)
    return;
  const auto a = matrix_size_hint(s.matrix);
  if (!a) return;
  std::int64_t entries = a->entries;
  if (!s.mass.empty()) {
    const auto b = matrix_size_hint(s.mass);
    if (!b) return;
    entries += b->entries;
  }
  const double work = static_cast<double>(entries) * static_cast<double>(std::max<std::int64_t>(s.k, 16)) / 16.0;
  if (work > static_cast<double>(kHostEigsEntries)) return;
  s.device = DeviceChoice::cpu;
  s.device_reason = format("auto: the host (%lld rows, %lld entries%s: a problem this small ends on "
                           "the host before a GPU would have started; --device cuda runs it there)",
                           (long long)a->rows, (long long)entries, s.mass.empty() ? "" : " with the mass");
}

std::string join_command(const std::string& task, const Args& args) {
  std::string c = "tcsolve " + task;
  for (const auto& a : args) c += " " + a;
  return c;
}

CommandSpec task_command(Task task) {
  const bool eigs = task == Task::eigs;
  const std::string name = to_string(task);
  return CommandSpec{
      name, name + " MATRIX [options]",
      eigs ? "Computes k eigenpairs of a symmetric matrix (A x = lambda x, or A x = lambda B x with\n"
             "--mass): the smallest, largest, nearest to --sigma, largest or smallest in magnitude,\n"
             "or from both ends (--which; optionally B-orthogonal to --constraints). The plan\n"
             "(Chebyshev-filtered subspace iteration, shift-invert block Lanczos through a sparse\n"
             "factorization, block Lanczos, LOBPCG or a dense solve) is chosen by predicted time and\n"
             "printed with why; every pair is checked on its recomputed true residual and the set is\n"
             "verified: by a Sylvester count when asked (--certify) or cheap, else by a re-check from\n"
             "fresh random vectors."
           : "Solves A X = B for a symmetric positive definite A and many right-hand sides at once\n"
             "(breakdown-free block CG, Jacobi preconditioned).",
      std::string(matrix_argument_help) +
          "\nOn a terminal a progress line shows the iteration, converged columns, the largest\n"
          "residual and the elapsed time. Exit status: 0 converged, 1 not converged or unverified\n"
          "(or CG found the matrix indefinite; partial results are still written) or the result\n"
          "could not be written (full disk...: nothing is left behind), 2 bad usage or input,\n"
          "130/143 interrupted: SIGINT/SIGTERM stop the solve at its next iteration and the partial\n"
          "result is written with status interrupted (a second signal exits at once).\n",
      {"MATRIX"}};
}

// Under mpirun with more than one rank: the distributed path (apps/job/distributed.cpp).
// TCSOLVE_DISTRIBUTED=1 takes that path with one rank too (the benchmark's scaling baseline).
std::unique_ptr<Communicator> launch_communicator(const JobSpec& s) {
  const char* force_env = std::getenv("TCSOLVE_DISTRIBUTED");
  const bool force = force_env && std::string(force_env) == "1";
  if (!launched_by_mpi() && !force) return nullptr;
  // The rank's GPU and CUDA context come up on a helper thread while MPI_Init runs (where the
  // launcher's environment places the rank); run_distributed_job's select_local_gpu waits for it.
  if (s.device != DeviceChoice::cpu) start_local_gpu_selection(launch_place_from_env());
  std::unique_ptr<Communicator> comm = make_communicator();
  if (comm->size() == 1 && !force) comm.reset();
  return comm;
}

// The job on the ranks. A rank that fails ends the whole job (MPI_Abort), so no rank waits in a
// collective forever; exit statuses as one process has them (apps/tcsolve.cpp): a result that
// could not be written 1, any other error 2. Errors every rank meets alike (usage, the matrix
// rank 0 read) are printed by rank 0; a rank's own (its rows of a file, its GPU) by that rank.
// Returns false (and sets *code) when this rank is done.
bool run_on_ranks(const JobSpec& s, Communicator& comm, const ProgressFn& progress, const std::string& command,
                  ProgressLine& line, JobOutcome& o, int* code) {
  const bool rank0 = comm.rank() == 0;
  try {
    check_distributed_job(s, comm.size());
  } catch (const UsageError& e) {  // every rank the same, before any collective
    if (rank0) std::cerr << "tcsolve: " << e.what() << "\n";
    *code = exit_usage;
    return false;
  }
  try {
    o = run_distributed_job(s, comm, progress, command);
  } catch (const std::exception& e) {
    line.clear();
    const bool same_everywhere = dynamic_cast<const UsageError*>(&e) || dynamic_cast<const InvalidArgument*>(&e);
    if (rank0 || !same_everywhere)
      std::cerr << "tcsolve: error: " << (rank0 ? "" : "rank " + std::to_string(comm.rank()) + ": ") << e.what()
                << "\n";
    std::cerr.flush();
    comm.abort(dynamic_cast<const OutputError*>(&e) ? exit_failed : exit_usage);
  }
  *code = o.exit_code();
  return rank0;
}

// --gpus N|all: how many rank threads (one GPU each) run the job; 1 is the one-process path.
// TCSOLVE_DISTRIBUTED=threads:N (without --gpus) runs eigs and solve on N rank threads on any
// --device, the CPU included: the thread path tested where there is no GPU (tests/distributed).
int thread_ranks_asked(const JobSpec& s, const std::string& gpus) {
  const char* env = std::getenv("TCSOLVE_DISTRIBUTED");
  if (gpus.empty() && env && std::string(env).rfind("threads:", 0) == 0 && !s.svds() && !launched_by_mpi()) {
    const int n = std::atoi(env + 8);
    if (n < 1 || std::to_string(n) != env + 8)
      throw UsageError(std::string("TCSOLVE_DISTRIBUTED=") + env + ": threads:N with N a count of ranks");
    return n;
  }
  if (gpus.empty() || gpus == "1") return 1;
  int n = parse_gpus_option(gpus);
  if (n == 0) n = device_count();  // all
  if (s.svds() && (n > 1 || gpus == "all"))
    throw UsageError("--gpus " + gpus + ": svds runs on one GPU (the distributed path has no svds); leave --gpus out");
  if (n == 1) return 1;  // (all, with one GPU visible)
  if (launched_by_mpi())
    throw UsageError("--gpus " + gpus + ": not under mpirun (each rank is a process with its own GPU there); "
                     "start one process with --gpus, or mpirun without it");
  if (s.device == DeviceChoice::cpu) throw UsageError("--gpus " + gpus + " with --device cpu: --gpus runs on GPUs");
  require_visible_gpus(n, gpus);  // (before any row is read: a wrong count costs nothing)
  return n;
}

// A rank thread failed and the others did not stop (a device wait on a peer that is gone): its
// error, and the process ends (exit statuses as apps/tcsolve.cpp gives them).
[[noreturn]] void end_stuck_ranks(std::exception_ptr e) {
  int code = exit_usage;
  std::string what = "unknown error";
  try {
    std::rethrow_exception(e);
  } catch (const OutputError& x) {
    code = exit_failed, what = x.what();
  } catch (const std::exception& x) {
    what = x.what();
  } catch (...) {
  }
  std::cerr << "tcsolve: error: " << what << " (the other GPUs' threads did not stop: ending the process)\n";
  std::cerr.flush();
  std::_Exit(code);
}

// The outcome on stdout (table, JSON or nothing) and, when not converged, one line on stderr.
int report(const JobSpec& s, JobOutcome& o, bool quiet, bool json, bool verbose) {
  ResultRecord& r = o.record;
  // The command's own clock since the process started (library loading, the CUDA context, the
  // job): seconds.process; the process's wall time adds only its exit.
  r.time_process = process_seconds();
  if (json) std::cout << result_json(r, s.out) << "\n";
  else if (!quiet) print_result_text(std::cout, s, r, verbose);
  trace_mark("command: printed");
  const char* task = to_string(s.task);
  if (r.status == "interrupted")
    std::cerr << "tcsolve: " << task << " " << r.reason
              << (s.out.empty() ? std::string("; nothing written (no --out)")
                                : "; the partial result is in " + s.out + " (status interrupted)")
              << "\n";
  else if (r.status != "converged")
    std::cerr << "tcsolve: " << task << " did not converge: " << r.status
              << (r.reason.empty() ? "" : " (" + r.reason + ")") << "\n";
  return o.exit_code();
}

}  // namespace

int run_task_command(Task task, const CommandSpec& spec, const Args& args) {
  JobSpec s;
  s.task = task;
  bool quiet = false, json = false, verbose = false;
  std::string gpus;
  po::options_description opts = option_table();
  add_job_options(opts, s, task);
  opts.add_options()("gpus", po::value(&gpus)->value_name("N|all"),
                     task == Task::svds ? "GPUs to run on: 1 (svds runs on one GPU)"
                                        : "GPUs of this machine to run on (default 1): N > 1 splits the rows over N GPUs, "
                                          "one thread of this process each, NCCL between them (as mpirun -np N does, "
                                          "with its limits: Chebyshev for eigs, block CG for solve); all: every visible one");
  opts.add_options()("quiet,q", po::bool_switch(&quiet), "print nothing on success (errors still go to stderr)");
  if (task != Task::svds)  // (svds' text has no plan to explain)
    opts.add_options()("verbose,v", po::bool_switch(&verbose),
                       "print the whole reasoning after the short summary: the plan with every prediction, the "
                       "factorization, the certificate's counts, the phases' seconds, the precision's rungs");
  opts.add_options()("json", po::bool_switch(&json), "print the result as one JSON object");
  po::variables_map vm;
  if (!parse_command(spec, opts, args, vm)) return exit_ok;
  s.matrix = vm["MATRIX"].as<std::string>();
  validate_job(s);
  const int threads = thread_ranks_asked(s, gpus);
  trace_mark("command: ranks counted");
  // (svds runs on this process: not distributed)
  const std::unique_ptr<Communicator> comm = s.svds() || threads > 1 ? nullptr : launch_communicator(s);
  const bool rank0 = !comm || comm->rank() == 0;
  const bool one = !comm && threads == 1;
  if (one) choose_small_eigs_device(s);
  // SIGINT/SIGTERM: the solve stops at its next iteration's end and the partial result is
  // written (status interrupted, exit 130/143); a second signal exits at once (core/interrupt.hpp).
  // Not under mpirun with several ranks nor with --gpus N: a signal reaches the ranks at different
  // iterations (they would stop apart and wait for each other); mpirun ends them all on Ctrl-C, and
  // the signal's default action ends the one process of --gpus.
  if (one) install_interrupt_handlers();
  MatrixCache cache;
  ProgressLine line(!quiet && !json && rank0);
  const std::string label = spec.name;
  const ProgressFn progress = [&](std::int64_t it, std::int64_t conv, std::int64_t wanted, double res,
                                  double secs) {
    line.update(format("%s: iteration %lld, %lld/%lld %s, max residual %.2e, %s", label.c_str(),
                       (long long)it, (long long)conv, (long long)wanted,
                       s.task == Task::solve ? "columns done" : "converged", res, format_seconds(secs).c_str()));
  };
  JobOutcome o;
  const double job_start = process_seconds();  // (seconds.start: parsing, counting the GPUs)
  if (threads > 1) {
    o = run_distributed_job_on_threads(s, threads, progress, join_command(spec.name, args), end_stuck_ranks,
                                       /*leave_to_exit=*/true);  // (the command ends after report())
  } else if (comm) {
    int code = exit_ok;
    if (!run_on_ranks(s, *comm, progress, join_command(spec.name, args), line, o, &code)) return code;
  } else {
    o = run_job(s, cache, progress, join_command(spec.name, args));
  }
  line.clear();
  o.record.time_start = job_start;
  return report(s, o, quiet, json, verbose);
}

int run_eigs(const Args& args) { return run_task_command(Task::eigs, task_command(Task::eigs), args); }
int run_solve(const Args& args) { return run_task_command(Task::solve, task_command(Task::solve), args); }

}  // namespace tcsolve::app
