#ifndef CRONLEDGER_CLI_PAUSE_COMMAND_H_
#define CRONLEDGER_CLI_PAUSE_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct PauseArgs {
  std::string config_path;  // already resolved
  bool pause = true;        // false: resume
  std::optional<std::string> job;
  bool all = false;
  std::optional<std::string> reason;  // required, not blank
  std::optional<std::string> by;      // default: DefaultActor()
  std::string server;                 // --server URL: "" works on the store
};

// `cronledger pause` / `cronledger resume`: one job (--job) or everything
// (--all), recorded with actor and reason as a paused/resumed event. Prints
// one line on success (exit 0); exit 1 when it is already in that state, 2 on
// a usage or config error (a job not in the configuration), 3 store
// unavailable. With `server`, the same through its POST /v1/pause or
// /v1/resume (a job the server does not have is a usage error, as locally).
int RunPause(const PauseArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_PAUSE_COMMAND_H_
