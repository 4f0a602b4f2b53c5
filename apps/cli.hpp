// Shared plumbing of the tcsolve subcommands: option parsing with per-command help, the usage
// error type, timers, a terminal progress line and a few formatting helpers.
// Only apps/ turns exceptions into messages and exit codes (apps/tcsolve.cpp does it).
#pragma once
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "results/json.hpp"
#include "core/error.hpp"
#include "core/format.hpp"

namespace tcsolve::app {

namespace po = boost::program_options;

// Exit statuses of the command: 0 success, 1 ran but did not succeed (non-convergence, a failed
// batch job), 2 bad usage or bad input (nothing was computed).
enum ExitCode : int { exit_ok = 0, exit_failed = 1, exit_usage = 2 };

// A command-line mistake found by apps/ itself (missing positional argument, bad option value).
// Printed like every other error: "tcsolve: error: <what>", exit status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// One subcommand's grammar: named options plus positional arguments in order.
struct CommandSpec {
  std::string name;                     // "info"
  std::string synopsis;                 // "info MATRIX [options]"
  std::string summary;                  // one line for `tcsolve --help`
  std::string details;                  // free text after the option table (may be empty)
  std::vector<std::string> positional;  // names of the required positional arguments
};

// Options table of a subcommand, formatted for 100-column help.
inline po::options_description option_table(const char* caption = "Options") {
  return po::options_description(caption, 100, 50);
}

// Parses args (without the subcommand name) against `options` and the positional names of
// `spec`. Adds --help. Returns false when --help was given (help already printed to stdout);
// throws po::error or UsageError on bad input (unknown option, missing or extra arguments).
bool parse_command(const CommandSpec& spec, po::options_description& options,
                   const std::vector<std::string>& args, po::variables_map& vm);

// --gpus N|all (eigs, solve, svds, batch): N ≥ 1, or 0 for "all"; anything else is a UsageError
// naming the value.
int parse_gpus_option(const std::string& gpus);

// The help text of one subcommand (what `tcsolve NAME --help` prints).
std::string command_help(const CommandSpec& spec, const po::options_description& options);

// Wall-clock seconds since construction.
class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

bool stderr_is_terminal();

// A single status line on stderr, redrawn in place ("\r...\x1b[K"), at most ~10 times a second.
// Silent unless stderr is a terminal and the caller did not ask for quiet output.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  bool enabled() const { return enabled_; }
  // Redraws the line when at least 0.1 s passed since the last draw (or force).
  void update(const std::string& text, bool force = false);
  // Erases the line (call before printing anything else to stderr or stdout).
  void clear();

 private:
  bool enabled_;
  bool shown_ = false;
  Timer since_start_;
  double last_draw_ = -1.0;
};

// Seconds since the process started (static initialization, before main).
double process_seconds();

// "1.23 MiB", "4.00 GiB".
std::string format_bytes(double bytes);
// "0.012 s", "3.4 s", "2 min 05 s".
std::string format_seconds(double s);
// format(): printf into a std::string (core/format.hpp).

// JSON writing helpers for --json outputs: json_string, json_number (results/json.hpp).

// Help paragraph describing what a MATRIX argument may be (files by extension, gen: specs).
extern const char* const matrix_argument_help;

// True when `path` ends with `suffix` (case-sensitive).
bool ends_with(const std::string& path, const std::string& suffix);

// Checks that `path` names a matrix format write_matrix() can produce (.mtx, .h5, .hdf5);
// throws UsageError otherwise. Checked before any long read.
void require_writable_matrix_format(const std::string& path);

// Checks an output file against the file system before the work that produces it: its folder
// exists and is writable, it is not a folder, and it is none of `inputs` (the same file under any
// name). UsageError "WHAT: reason" otherwise (`what` names the option and the value).
void check_output_path(const std::string& what, const std::string& path,
                       const std::vector<std::string>& inputs = {});

}  // namespace tcsolve::app
