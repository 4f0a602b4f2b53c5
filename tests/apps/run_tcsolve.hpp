// Runs the built tcsolve binary (TCSOLVE_BIN) in a shell and captures its exit status, stdout
// and stderr; a scratch folder per test for input and output files.
#pragma once
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
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to `name` inside the folder and returns its path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::string& path);
// Number of '\n' in s.
int count_lines(const std::string& s);

}  // namespace tcsolve::test
