// SIGINT in each phase of a shift-invert run on a 1M-row problem (`eigs gen:lap2d:1000 --k 6`,
// the run of issue 47: the spectral probe, the symbolic analysis, the factorization, the
// Lanczos solve, the re-check, the certificate's LDLᵀ): the command must exit within 2 s of the
// signal. Before, it ignored the signal until all the work was done (about 36 s).
//
// The phase is found from the run's own trace (TCSOLVE_TRACE=1 marks on stderr, read through a
// pipe): the signal goes `delay` seconds after the mark that opens the phase, and the time from
// the signal to the process's exit is measured here (the 2 s bound scales with the machine's load:
// expect_prompt_exit). A phase with nothing to return ends the run
// with its message ("interrupted (SIGINT) during the factorization of ..."); one after the solve
// returns the pairs with status interrupted (exit 130).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/apps/run_tcsolve.hpp"

extern char** environ;

namespace tcsolve::test {
namespace {

using Clock = std::chrono::steady_clock;

struct PhaseRun {
  bool mark_seen = false;
  int status = -1;
  double latency_s = -1;  // from the signal to the exit
  double load = 0;        // the machine's 1-minute load average per core when the signal went
  std::string err, out;
};

// /proc/loadavg's 1-minute average per core (0 where it cannot be read).
double load_per_core() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  double l = 0;
  if (f) {
    if (std::fscanf(f, "%lf", &l) != 1) l = 0;
    std::fclose(f);
  }
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? l / static_cast<double>(cores) : 0.0;
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Runs tcsolve ARGS with TCSOLVE_TRACE=1 (plus `env`), sends SIGINT `delay` seconds after the
// first stderr line containing `mark`, and waits for the exit (killed after `limit` seconds).
PhaseRun run_until(const std::string& mark, double delay, const std::vector<std::string>& args,
                   const std::vector<std::string>& env = {}, double limit = 400) {
  ScratchDir d;
  const char* bin_env = std::getenv("TCSOLVE_TEST_BIN");
  const std::string bin = bin_env && *bin_env ? bin_env : TCSOLVE_BIN;
  std::vector<std::string> argv_s{bin};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s{"TCSOLVE_TRACE=1", "TCSOLVE_CACHE_DIR=" + d.file("cache")};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("TCSOLVE_TRACE=", 0) != 0 && std::string(*e).rfind("TCSOLVE_CACHE_DIR=", 0) != 0)
      env_s.push_back(*e);
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> argv, envp;
  for (auto& s : argv_s) argv.push_back(s.data());
  for (auto& s : env_s) envp.push_back(s.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);

  int pipefd[2];
  EXPECT_EQ(::pipe(pipefd), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  const std::string out_path = d.file("stdout");
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  PhaseRun r;
  if (rc != 0) {
    ::close(pipefd[0]);
    ADD_FAILURE() << "cannot start " << bin;
    return r;
  }
  const Clock::time_point start = Clock::now();
  Clock::time_point seen, signalled;
  bool sent = false;
  std::string pending;
  for (;;) {
    double wait = limit - since(start);
    if (r.mark_seen && !sent) wait = std::min(wait, delay - since(seen));
    if (wait <= 0 && !(r.mark_seen && !sent)) {
      ::kill(pid, SIGKILL);
      ADD_FAILURE() << "still running after " << limit << " s";
      break;
    }
    if (r.mark_seen && !sent && since(seen) >= delay) {
      r.load = load_per_core();
      ::kill(pid, SIGINT);
      signalled = Clock::now();
      sent = true;
      continue;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max(1.0, wait * 1000))) <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
    if (got <= 0) break;  // the process closed stderr: it is exiting
    r.err.append(buf, static_cast<std::size_t>(got));
    pending.append(buf, static_cast<std::size_t>(got));
    if (!r.mark_seen && pending.find(mark) != std::string::npos) r.mark_seen = true, seen = Clock::now();
    if (pending.size() > mark.size()) pending.erase(0, pending.size() - mark.size());
  }
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  if (sent) r.latency_s = since(signalled);
  ::close(pipefd[0]);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_file(out_path);
  return r;
}

const std::vector<std::string> kRun = {"eigs", "gen:lap2d:1000", "--k", "6", "--device", "cpu"};

// The run must have reached the phase, been signalled there, and exited within 2 s. The target
// is for a machine the run has to itself: where other work shares the cores (a 1-minute load
// average of L per core, the run's own one or two busy threads aside), each step takes up to that
// many times longer, and so may the exit: the bound is 2 s · max(1, L - 1).
void expect_prompt_exit(const PhaseRun& r, const char* phase) {
  ASSERT_TRUE(r.mark_seen) << "the run never reached " << phase << ":\n" << r.err;
  ASSERT_GE(r.latency_s, 0.0) << "no signal was sent (the run ended first):\n" << r.err;
  const double bound = 2.0 * std::max(1.0, r.load - 1.0);
  std::printf("[ latency ] SIGINT during %s: exit %.2f s after the signal (status %d; load %.1f per core, "
              "bound %.1f s)\n",
              phase, r.latency_s, r.status, r.load, bound);
  EXPECT_LE(r.latency_s, bound) << phase << ":\n" << r.err;
  EXPECT_NE(r.err.find("interrupted (SIGINT)"), std::string::npos) << r.err;
}

// Phases with nothing to return: the run ends with the phase's message and exit status 130
// (128 + SIGINT), as an interrupted solve (2 is bad input; it was 2 before 2026-11-28).
void expect_nothing_returned(const PhaseRun& r, const std::string& during) {
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted (SIGINT) during " + during), std::string::npos) << r.err;
}

// The phases before the solve, each signalled `delay` s after its trace mark.
struct BeforeTheSolve {
  const char* name;
  const char* mark;
  double delay;
  const char* phase;   // for the latency line
  const char* during;  // the message's phase
};

const BeforeTheSolve kBefore[] = {
    // The probe stops at its next step and returns what it has (an iterative solve would then
    // stop at its first iteration's end); here the plan's next phase, the ordering, has nothing
    // to return.
    {"SpectralProbe", "probe: step 2 queued", 0.05, "the spectral probe", "the symbolic analysis"},
    // The plan times an apply, then orders S (AMD on 1M rows: 0.7-4 s here).
    {"SymbolicAnalysis", "plan: apply model", 0.1, "the symbolic analysis", "the symbolic analysis"},
    // CHOLMOD's numeric LLᵀ of 44.7 M entries (3.5-19 s here).
    {"Factorization", "eigs: planned", 0.5, "the factorization", "the factorization of A - sigma*B"},
};

class AppsInterruptBeforeTheSolve : public ::testing::TestWithParam<BeforeTheSolve> {};

TEST_P(AppsInterruptBeforeTheSolve, ExitsPromptlyWithThePhasesMessage) {
  const BeforeTheSolve& c = GetParam();
  const PhaseRun r = run_until(c.mark, c.delay, kRun);
  expect_prompt_exit(r, c.phase);
  expect_nothing_returned(r, c.during);
}

INSTANTIATE_TEST_SUITE_P(AppsInterruptPhases, AppsInterruptBeforeTheSolve, ::testing::ValuesIn(kBefore),
                         [](const ::testing::TestParamInfo<BeforeTheSolve>& i) { return std::string(i.param.name); });

TEST(AppsInterruptPhases, ShiftInvertLanczos) {
  // Lanczos on T = S⁻¹: block solves of ~0.5-1.5 s each, one restart in all.
  const PhaseRun r = run_until("eigs: set up", 1.0, kRun);
  expect_prompt_exit(r, "the shift-invert Lanczos solve");
  EXPECT_TRUE(r.status == 130 || r.status == 2) << r.status << "\n" << r.err;
}

TEST(AppsInterruptPhases, ReCheckReturnsThePairsInterrupted) {
  ScratchDir d;
  std::vector<std::string> args = kRun;
  args.insert(args.end(), {"--out", d.file("r.h5")});
  const PhaseRun r = run_until("eigs: solved", 1.0, args);
  expect_prompt_exit(r, "the re-check");
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("eigs interrupted (SIGINT)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the partial result is in " + d.file("r.h5")), std::string::npos) << r.err;
}

TEST(AppsInterruptPhases, CertificateReturnsThePairsInterrupted) {
  // --certify: the Sylvester count, MUMPS's LDLᵀ of A - tau*B (tens of seconds at 1M rows).
  std::vector<std::string> args = kRun;
  args.push_back("--certify");
  const PhaseRun r = run_until("eigs: solved", 1.0, args);
  expect_prompt_exit(r, "the certificate's LDL^T");
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("eigs interrupted (SIGINT)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tcsolve::test
