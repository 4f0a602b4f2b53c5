// Runs the built tcsolve binary (TCSOLVE_BIN) in a shell and captures its exit status, stdout
// and stderr; a scratch folder per test for input and output files.
#pragma once
#include "tests/temp_dir.hpp"
#include <cstdint>
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
// With shell commands run before the exec (prefix, e.g. "ulimit -f 100; ").
RunResult run_tcsolve_shell(const std::vector<std::string>& env, const std::string& prefix,
                            const std::vector<std::string>& args);
// With a file size limit of `blocks` (/bin/sh's ulimit -f unit: 512 B on dash, 1 KiB on bash) and
// SIGXFSZ ignored: writes past it fail with EFBIG, the way a full disk fails with ENOSPC.
RunResult run_tcsolve_file_limit(std::int64_t blocks, const std::vector<std::string>& args);

// Runs `tcsolve ARGS 2>&1 | READER` in bash: status is tcsolve's own (not the reader's), out what
// the reader printed (e.g. READER "head -c 1": the pipe closes after one byte).
RunResult run_tcsolve_piped(const std::vector<std::string>& args, const std::string& reader);

// The pid of a process that has ended (a child that exited and was reaped), and the name of an
// AtomicFile temporary of `target` such a writer left ("TARGET.tmp-PID-HOST-XXXXXX", this host).
long dead_pid();
std::string dead_writers_temporary(const std::string& target, const std::string& suffix = "k2j9x1");

// A fresh empty folder removed at destruction.
using ScratchDir = TempDir;

std::string read_file(const std::string& path);
// Names of the entries of a folder, sorted.
std::vector<std::string> files_in(const std::filesystem::path& dir);
// Eigenvalues of gen:lap2d:NXxNY: 4 - 2 cos(iπ/(NX+1)) - 2 cos(jπ/(NY+1)), ascending.
std::vector<double> lap2d_eigenvalues(int nx, int ny);
// Number of '\n' in s.
int count_lines(const std::string& s);
// The number after "KEY": in a --json output (NaN when the key is absent).
double json_number(const std::string& json, const std::string& key);

}  // namespace tcsolve::test
