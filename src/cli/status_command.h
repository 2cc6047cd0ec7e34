#ifndef CRONLEDGER_CLI_STATUS_COMMAND_H_
#define CRONLEDGER_CLI_STATUS_COMMAND_H_

#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct StatusArgs {
  std::string config_path;  // already resolved (--config, $CRONLEDGER_CONFIG, ./cronledger.toml)
  std::string server;       // --server URL (or $CRONLEDGER_SERVER): "" works on the store
  bool json = false;
};

// `cronledger status`: where each configured job stands (the `status` shape of
// docs/cli.md with --json, else an aligned table). Exit 0; 2 on a config error;
// 3 when the store is unavailable. With `server`, the same through its GET
// /v1/jobs.
int RunStatus(const StatusArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_STATUS_COMMAND_H_
