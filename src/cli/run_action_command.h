// The operator actions on one run by its id: `cronledger retry` and
// `cronledger cancel`, each recorded with the actor and the reason.
#ifndef CRONLEDGER_CLI_RUN_ACTION_COMMAND_H_
#define CRONLEDGER_CLI_RUN_ACTION_COMMAND_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct RunActionArgs {
  std::string config_path;  // already resolved
  int64_t run_id = 0;
  std::optional<std::string> reason;  // required, not blank
  std::optional<std::string> by;      // default: DefaultActor()
  std::string server;                 // --server URL: "" works on the store
};

// `cronledger retry RUN_ID`: a failed or unknown run back to pending as a new
// attempt on the same run key. Exit 0; 1 when the run is in another state or
// does not exist (with the reason); 2 usage or config error; 3 store
// unavailable.
int RunRetry(const RunActionArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

// `cronledger cancel RUN_ID`: a pending, awaiting_approval, failed or unknown
// run becomes cancelled (waived). Exit codes as retry's.
int RunCancel(const RunActionArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_RUN_ACTION_COMMAND_H_
