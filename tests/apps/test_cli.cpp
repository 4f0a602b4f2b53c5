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
