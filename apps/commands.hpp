// The subcommands of tcsolve. Each takes its arguments (without the subcommand name) and returns
// the exit status; errors are thrown (tcsolve::Error, UsageError, program_options errors) and
// turned into one line on stderr by apps/tcsolve.cpp.
#pragma once
#include <string>
#include <vector>

namespace tcsolve::app {

using Args = std::vector<std::string>;

int run_info(const Args& args);      // apps/cmd_info.cpp
int run_convert(const Args& args);   // apps/cmd_convert.cpp
int run_generate(const Args& args);  // apps/cmd_convert.cpp
int run_eigs(const Args& args);      // apps/cmd_eigs.cpp
int run_solve(const Args& args);     // apps/cmd_eigs.cpp
int run_svds(const Args& args);      // apps/cmd_svds.cpp
int run_batch(const Args& args);     // apps/cmd_batch.cpp

struct CommandSpec;
enum class Task;
// A job command (eigs, solve, svds; apps/cmd_eigs.cpp): the task's options bound to a JobSpec,
// checked, run through the job pipeline (apps/job/run.hpp), reported (table, --json or --quiet).
int run_task_command(Task task, const CommandSpec& spec, const Args& args);

struct Command {
  const char* name;
  const char* summary;  // one line for `tcsolve --help`
  int (*run)(const Args&);
};

// Every subcommand, in the order `tcsolve --help` lists them.
const std::vector<Command>& commands();

}  // namespace tcsolve::app
