// The command's grammar: help, version, unknown commands and options, missing arguments.
// Every error must be exactly one line on stderr starting "tcsolve: error:" and exit status 2.
#include <gtest/gtest.h>

#include "tests/apps/run_tcsolve.hpp"

namespace tcsolve::test {
namespace {

void expect_usage_error(const RunResult& r, const std::string& must_contain) {
  EXPECT_EQ(r.status, 2) << "stderr: " << r.err;
  EXPECT_EQ(r.err.rfind("tcsolve: error: ", 0), 0u) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << "expected one line, got: " << r.err;
  EXPECT_NE(r.err.find(must_contain), std::string::npos)
      << "expected '" << must_contain << "' in: " << r.err;
}

TEST(AppsCli, MainHelpListsCommands) {
  auto r = run_tcsolve({"--help"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* c : {"info", "convert", "generate", "gen:lap2d"})
    EXPECT_NE(r.out.find(c), std::string::npos) << c << " missing from:\n" << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(AppsCli, Version) {
  auto r = run_tcsolve({"--version"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind(std::string("tcsolve ") + TCSOLVE_VERSION, 0), 0u) << r.out;
}

TEST(AppsCli, SubcommandHelp) {
  for (std::string c : {"info", "convert", "generate"}) {
    auto r = run_tcsolve({c, "--help"});
    EXPECT_EQ(r.status, 0) << c << ": " << r.err;
    EXPECT_NE(r.out.find("Usage: tcsolve " + c), std::string::npos) << r.out;
    // `tcsolve help CMD` prints the same text
    auto h = run_tcsolve({"help", c});
    EXPECT_EQ(h.status, 0);
    EXPECT_EQ(h.out, r.out);
  }
  auto r = run_tcsolve({"info", "--help"});
  EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MATRIX"), std::string::npos) << r.out;
  // --help wins over other mistakes on the same line
  EXPECT_EQ(run_tcsolve({"info", "--no-such-option", "--help"}).status, 0);
}

TEST(AppsCli, NoCommand) { expect_usage_error(run_tcsolve({}), "no command"); }

TEST(AppsCli, UnknownCommand) {
  expect_usage_error(run_tcsolve({"frobnicate", "x"}), "unknown command 'frobnicate'");
}

TEST(AppsCli, UnknownTopLevelOption) {
  expect_usage_error(run_tcsolve({"--frobnicate"}), "unknown option '--frobnicate'");
}

TEST(AppsCli, UnknownSubcommandOption) {
  expect_usage_error(run_tcsolve({"info", "gen:lap2d:4", "--bogus"}), "--bogus");
}

TEST(AppsCli, AbbreviatedOptionIsNotGuessed) {
  // "--js" must not silently mean "--json"
  expect_usage_error(run_tcsolve({"info", "gen:lap2d:4", "--js"}), "--js");
}

TEST(AppsCli, MissingArgument) {
  expect_usage_error(run_tcsolve({"info"}), "missing argument MATRIX");
  expect_usage_error(run_tcsolve({"convert", "gen:lap2d:4"}), "missing argument OUT");
}

TEST(AppsCli, TooManyArguments) {
  expect_usage_error(run_tcsolve({"info", "gen:lap2d:4", "gen:lap2d:5"}), "info:");
}

}  // namespace
}  // namespace tcsolve::test

namespace tcsolve::test {
namespace {

// OpenBLAS's "Core: NAME" lines (OPENBLAS_VERBOSE=2), in order.
std::vector<std::string> blas_cores(const RunResult& r) {
  std::vector<std::string> cores;
  const std::string all = r.out + r.err;
  for (std::size_t at = all.find("Core: "); at != std::string::npos; at = all.find("Core: ", at + 1))
    cores.push_back(all.substr(at + 6, all.find_first_of("\r\n", at) - at - 6));
  return cores;
}

bool pre_avx2(const std::string& core) {
  for (const char* c : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge"})
    if (core == c) return true;
  return false;
}

// Where OpenBLAS falls back to pre-AVX2 kernels on a CPU with AVX2 and FMA (one newer than the
// OpenBLAS), the command has it choose again with OPENBLAS_CORETYPE (apps/tcsolve.cpp), and the
// run completes on the AVX2/AVX-512 kernels; a user's OPENBLAS_CORETYPE and TCSOLVE_BLAS_CORE=0
// are obeyed. On a machine whose OpenBLAS knows its CPU: one choice, as before.
TEST(AppsCli, OpenBlasThatDoesNotKnowTheCpuGetsItsKernelsOnce) {
  const std::vector<std::string> args = {"eigs", "gen:lap2d:12", "--k", "2", "--device", "cpu"};
  const RunResult r = run_tcsolve_env({"OPENBLAS_VERBOSE=2"}, args);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> cores = blas_cores(r);
  if (cores.empty()) GTEST_SKIP() << "OpenBLAS printed no core (not OpenBLAS, or not verbose)";
#if defined(__x86_64__) && defined(__GNUC__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  const bool avx2 = false;
#endif
  EXPECT_LE(cores.size(), 2u) << "chose more than twice: " << r.err;
  if (avx2) EXPECT_FALSE(pre_avx2(cores.back())) << "ran on " << cores.back() << ": " << r.err;
  const RunResult off = run_tcsolve_env({"OPENBLAS_VERBOSE=2", "TCSOLVE_BLAS_CORE=0"}, args);
  ASSERT_EQ(off.status, 0) << off.err;
  const std::vector<std::string> off_cores = blas_cores(off);
  ASSERT_FALSE(off_cores.empty());
  EXPECT_EQ(off_cores.front(), cores.front()) << "the first load is OpenBLAS's own choice";
  if (pre_avx2(cores.front()) && avx2) EXPECT_LT(off_cores.size(), cores.size()) << "TCSOLVE_BLAS_CORE=0 chose again";
  const RunResult given = run_tcsolve_env({"OPENBLAS_VERBOSE=2", "OPENBLAS_CORETYPE=Prescott"}, args);
  ASSERT_EQ(given.status, 0) << given.err;
  for (const std::string& c : blas_cores(given)) EXPECT_EQ(c, "Prescott") << "the user's OPENBLAS_CORETYPE";
}

}  // namespace
}  // namespace tcsolve::test
