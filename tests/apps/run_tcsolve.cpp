#include "tests/apps/run_tcsolve.hpp"

#include "io/atomic_file.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tcsolve::test {

namespace fs = std::filesystem;

namespace {
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}
}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> f;
  for (auto& e : std::filesystem::directory_iterator(dir)) f.push_back(e.path().filename().string());
  std::sort(f.begin(), f.end());
  return f;
}

std::vector<double> lap2d_eigenvalues(int nx, int ny) {
  std::vector<double> v;
  for (int i = 1; i <= nx; ++i)
    for (int j = 1; j <= ny; ++j)
      v.push_back(4 - 2 * std::cos(i * M_PI / (nx + 1)) - 2 * std::cos(j * M_PI / (ny + 1)));
  std::sort(v.begin(), v.end());
  return v;
}

double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 4, nullptr);
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}


RunResult run_tcsolve(const std::vector<std::string>& args) { return run_tcsolve_env({}, args); }

RunResult run_tcsolve_env(const std::vector<std::string>& env, const std::vector<std::string>& args) {
  return run_tcsolve_shell(env, "", args);
}

RunResult run_tcsolve_file_limit(std::int64_t blocks, const std::vector<std::string>& args) {
  // XFSZ ignored (inherited across exec): a write past the limit fails with EFBIG, as on a full disk.
  return run_tcsolve_shell({}, "ulimit -f " + std::to_string(blocks) + "; trap '' XFSZ; ", args);
}

RunResult run_tcsolve_shell(const std::vector<std::string>& env, const std::string& prefix,
                            const std::vector<std::string>& args) {
  ScratchDir io;
  std::string cmd = prefix;
  for (const auto& e : env) cmd += "export " + shell_quote(e) + "; ";
  // $TCSOLVE_TEST_BIN overrides the built path (binaries carried to another machine).
  const char* bin = std::getenv("TCSOLVE_TEST_BIN");
  cmd += "exec " + shell_quote(bin && *bin ? bin : TCSOLVE_BIN);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  const std::string out = io.file("stdout"), err = io.file("stderr");
  cmd += " </dev/null >" + shell_quote(out) + " 2>" + shell_quote(err);
  int raw = std::system(cmd.c_str());
  RunResult r;
  if (raw == -1) throw std::runtime_error("system() failed for: " + cmd);
  if (WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  else if (WIFSIGNALED(raw)) r.status = 128 + WTERMSIG(raw);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

long dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int st = 0;
  ::waitpid(p, &st, 0);
  return static_cast<long>(p);
}

std::string dead_writers_temporary(const std::string& target, const std::string& suffix) {
  return target + ".tmp-" + std::to_string(dead_pid()) + "-" + atomic_file_detail::host_tag() + "-" + suffix;
}

RunResult run_tcsolve_piped(const std::vector<std::string>& args, const std::string& reader) {
  ScratchDir io;
  const char* bin = std::getenv("TCSOLVE_TEST_BIN");
  std::string cmd = shell_quote(bin && *bin ? bin : TCSOLVE_BIN);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  const std::string out = io.file("stdout"), status = io.file("status");
  // (PIPESTATUS[0]: tcsolve's exit status, 128 + signal when a signal ended it)
  const std::string script = cmd + " </dev/null 2>&1 | " + reader + " >" + shell_quote(out) +
                             "; echo ${PIPESTATUS[0]} >" + shell_quote(status);
  if (std::system(("bash -c " + shell_quote(script)).c_str()) == -1)
    throw std::runtime_error("system() failed for: " + script);
  RunResult r;
  r.status = std::atoi(read_file(status).c_str());
  r.out = read_file(out);
  return r;
}

}  // namespace tcsolve::test
