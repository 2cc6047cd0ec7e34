// Runs a short helper command (such as a job's partitions_command) and
// captures its output. argv only, never a shell; its own process group,
// killed whole on timeout.
#ifndef CRONLEDGER_EXEC_COMMAND_RUNNER_H_
#define CRONLEDGER_EXEC_COMMAND_RUNNER_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cronledger/clock.h"
#include "cronledger/status.h"

namespace cronledger::exec {

struct CommandSpec {
  std::vector<std::string> argv;
  std::string cwd;                       // empty: inherit
  std::vector<std::string> environment;  // "NAME=value"; the complete environment
  std::chrono::milliseconds timeout{60000};
  std::size_t output_cap = 1 << 20;      // per stream; the rest is discarded
  // Written to the command's stdin, which is then closed; none: /dev/null.
  // A command that exits without reading it all is not an error.
  std::optional<std::string> input;
};

struct CommandResult {
  int exit_code = -1;    // -1 when ended by a signal
  int signal = 0;
  bool timed_out = false;
  bool spawn_failed = false;  // could not be started (not found, not executable)
  std::string out;
  std::string err;
  bool out_truncated = false;
};

// The base environment of every step (docs/execution.md): PATH, HOME, LANG,
// TZ=UTC.
std::vector<std::string> BaseEnvironment();

// Runs `spec` to completion (or its timeout, then SIGKILL to the group).
// Time is measured with `clock`.
CommandResult RunCommand(const CommandSpec& spec, Clock& clock);

}  // namespace cronledger::exec

#endif  // CRONLEDGER_EXEC_COMMAND_RUNNER_H_
