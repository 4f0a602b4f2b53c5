// tcsolve: the command line. Dispatches to a subcommand and is the one place where exceptions
// become messages and exit statuses: every error is ONE line on stderr, "tcsolve: error: ...",
// exit status 2 (1 is reserved for "ran, but did not succeed", e.g. non-convergence).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>

#include "apps/cli.hpp"
#include "apps/commands.hpp"
#include "core/blas_kernels.hpp"
#include "core/device.hpp"
#include "core/interrupt.hpp"
#include "core/trace.hpp"

namespace tcsolve::app {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"eigs", "k extreme eigenpairs of a symmetric matrix (LOBPCG, block Lanczos)", run_eigs},
      {"solve", "solve A X = B for an SPD matrix and many right-hand sides (block CG)", run_solve},
      {"svds", "k largest singular triplets of any sparse matrix, --center for PCA (block GKL)", run_svds},
      {"batch", "run a job file of eigs/solve jobs (HDF5 outputs, --resume)", run_batch},
      {"info", "size, symmetry, row-length statistics of a matrix", run_info},
      {"convert", "convert a matrix (file or gen: spec) to .mtx or .h5", run_convert},
      {"generate", "write a generated test matrix (gen: spec) to .mtx or .h5", run_generate},
  };
  return list;
}

namespace {

void print_main_help() {
  std::cout << "Usage: tcsolve COMMAND [ARGS] [options]\n"
               "       tcsolve COMMAND --help\n"
               "       tcsolve --version\n\n"
               "Block eigensolvers and linear solvers for large sparse matrices "
               "(tensor-core BCSR SpMM).\n\nCommands:\n";
  for (const auto& c : commands()) std::cout << format("  %-10s %s\n", c.name, c.summary);
  std::cout << "\n" << matrix_argument_help
            << "\nExit status: 0 success, 1 ran but did not succeed (e.g. not converged, or the "
               "result could not be written), 2 bad usage or input.\n";
}

void print_version() {
  std::cout << "tcsolve " << TCSOLVE_VERSION << " (CUDA backend: ";
  if (!built_with_cuda()) std::cout << "not built";
  else std::cout << "built, " << device_count() << " device(s) present";
  std::cout << ")\n";
}

// Error texts can contain newlines (e.g. a quoted input line): keep the message on one line.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

int fail(const std::string& msg) {
  std::cout.flush();
  std::cerr << "tcsolve: error: " << one_line(msg) << std::endl;
  return exit_usage;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) return fail("no command given (try 'tcsolve --help')");
  const std::string first = argv[1];
  if (first == "--help" || first == "-h") {
    print_main_help();
    return exit_ok;
  }
  if (first == "--version" || first == "-V") {
    print_version();
    return exit_ok;
  }
  Args rest(argv + 2, argv + argc);
  std::string name = first;
  if (first == "help") {  // `tcsolve help info` == `tcsolve info --help`
    if (rest.empty()) {
      print_main_help();
      return exit_ok;
    }
    name = rest[0];
    rest = {"--help"};
  }
  if (!name.empty() && name[0] == '-') return fail("unknown option '" + name + "' (try 'tcsolve --help')");
  const Command* cmd = nullptr;
  for (const auto& c : commands())
    if (name == c.name) cmd = &c;
  if (!cmd) return fail("unknown command '" + name + "' (try 'tcsolve --help')");

  try {
    return cmd->run(rest);
  } catch (const po::error& e) {
    return fail(name + ": " + e.what() + " (see 'tcsolve " + name + " --help')");
  } catch (const UsageError& e) {
    return fail(name + ": " + e.what());
  }
}

}  // namespace
}  // namespace tcsolve::app

namespace {
// Where OpenBLAS fell back to pre-AVX2 kernels on a CPU it does not know (blas_core_override,
// core/blas_kernels.hpp), it chooses again with OPENBLAS_CORETYPE, before any BLAS call (the
// variable stays set for child processes). An OPENBLAS_CORETYPE the user set is left alone;
// TCSOLVE_BLAS_CORE=0 keeps what OpenBLAS chose. (Re-running the command with the variable cost
// ~0.1 s of wall: the H200 host's batch of 12 went from 0.87 to 1.03 s.)
void choose_blas_core() {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  const char* off = std::getenv("TCSOLVE_BLAS_CORE");
  if (off && std::string(off) == "0") return;
  const std::string core = tcsolve::blas_core_override();
  if (!core.empty()) tcsolve::blas_use_core(core);
}

int run_main(int argc, char** argv) {
  using namespace tcsolve::app;
  try {
    return dispatch(argc, argv);
  } catch (const tcsolve::Interrupted& e) {
    // A phase stopped on SIGINT/SIGTERM before it had anything to return (the probe, the ordering,
    // the factorization, the shift-invert solves): an interrupted run, 128 + signal as every other
    // (130 SIGINT, 143 SIGTERM), not bad input (2).
    fail(e.what());
    return 128 + (e.signal() > 0 ? e.signal() : 2);
  } catch (const tcsolve::OutputError& e) {
    // Not bad input: the work was done and could not be saved (full disk, vanished folder...).
    fail(e.what());
    return exit_failed;
  } catch (const tcsolve::Error& e) {
    return fail(e.what());
  } catch (const std::bad_alloc&) {
    return fail("out of host memory");
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  } catch (...) {
    return fail("internal error: unknown exception");
  }
}
}  // namespace

int main(int argc, char** argv) {
  tcsolve::trace_mark("main");
  choose_blas_core();
  // A closed pipe on stdout or stderr (`tcsolve batch jobs.ini | head -1`) is a lost line of text,
  // not the end of the run: the write fails with EPIPE (the stream stops printing) instead of
  // SIGPIPE killing the process between two jobs; the results and failure records still go to
  // their files and the exit status is the run's.
  ::signal(SIGPIPE, SIG_IGN);
  const int code = run_main(argc, argv);
  // Every output file is committed and closed by now (io/atomic_file.hpp); what is left is
  // freeing memory, the CUDA context and the libraries' handles, which the operating system does
  // at exit anyway and which took ~0.25 s of wall time after the result was printed (H200).
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  tcsolve::trace_mark("exit");
  std::_Exit(code);
}
