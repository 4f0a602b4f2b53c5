// Runs the built tcsolve binary (TCSOLVE_BIN) in a shell and captures its exit status, stdout
// and stderr; a scratch folder per test for input and output files.
#pragma once
#include "tests/temp_dir.hpp"
#include <filesystem>
#include <string>
#include <vector>

namespace tcsolve::test {

struct RunResult {
  int status = -1;  // exit status, or 128 + signal when killed by a signal
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `tcsolve ARGS...` (each argument quoted for the shell; stdin is /dev/null).
RunResult run_tcsolve(const std::vector<std::string>& args);
// Same with environment assignments ("NAME=value") for this run only.
RunResult run_tcsolve_env(const std::vector<std::string>& env, const std::vector<std::string>& args);

// A fresh empty folder removed at destruction.
using ScratchDir = TempDir;

std::string read_file(const std::string& path);
// Number of '\n' in s.
int count_lines(const std::string& s);

}  // namespace tcsolve::test
