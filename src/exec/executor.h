// Executors run one step of one attempt. The dispatcher decides what runs
// and records outcomes; an executor only runs and reports.
#ifndef CRONLEDGER_EXEC_EXECUTOR_H_
#define CRONLEDGER_EXEC_EXECUTOR_H_

#include <chrono>
#include <cstdint>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "cronledger/handler.h"

namespace cronledger::exec {

// Who and what a step runs for: the run key's parts and the attempt. The
// same as an in-process handler sees; `cancel` is unused by executors, which
// take the cancellation as its own argument.
using StepContext = RunContext;

// How to run a subprocess step.
struct SubprocessSpec {
  // argv with placeholders {partition} {business_date} {period} {run_key},
  // substituted inside each element; never passed through a shell.
  std::vector<std::string> command;
  std::string cwd;  // absolute; relative argv[0] with a '/' resolved by config
  std::chrono::milliseconds timeout{3600000};
  // After the timeout (or a cancel): SIGTERM to the process group, then
  // SIGKILL once this grace has passed.
  std::chrono::milliseconds kill_grace{5000};
  std::vector<std::pair<std::string, std::string>> env;  // the job's `env`
  std::vector<std::string> env_from_host;                // names to pass through
  // Set last, after the CRONLEDGER_ variables of the run key: the API's
  // address, the attempt's credential, its watermarks.
  std::vector<std::pair<std::string, std::string>> attempt_env;
  std::string log_path;   // stdout and stderr appended here (created with folders)
  uint64_t output_cap = 1 << 20;  // bytes per stream; the rest is dropped, noted once
  std::size_t tail_bytes = 4096;  // how much of the end of the output to return
};

enum class StepEnd {
  kExited,       // exit_status is meaningful
  kTimeout,      // killed after its timeout
  kSignal,       // ended by a signal nobody here sent
  kSpawnFailed,  // could not be started (not found, not executable, bad cwd)
  kCancelled,    // killed because the caller asked (stale lease, shutdown)
};

struct StepOutcome {
  StepEnd end = StepEnd::kExited;
  int exit_status = -1;
  int signal = 0;
  std::string output_tail;  // the last tail_bytes of stdout+stderr as logged
  std::string error;        // for kSpawnFailed: why
};

}  // namespace cronledger::exec

#endif  // CRONLEDGER_EXEC_EXECUTOR_H_
