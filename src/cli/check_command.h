#ifndef CRONLEDGER_CLI_CHECK_COMMAND_H_
#define CRONLEDGER_CLI_CHECK_COMMAND_H_

#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct CheckArgs {
  std::string config_path;  // already resolved (--config, $CRONLEDGER_CONFIG, ./cronledger.toml)
  // Also compare with the ledger: what the configuration would change
  // (engine/config_impact.h). Reads the store, never writes it.
  bool against_store = false;
  bool json = false;  // with against_store: the impact as JSON
};

// `cronledger check`: validates the configuration. Exit 0 and a one-line
// summary on `out`, or exit 2 listing every problem on `err`. With
// against_store, then prints the impact on the ledger as of `clock`'s now:
// exit 1 when a planned run would be orphaned or re-keyed, 3 when the store
// is unavailable.
int RunCheck(const CheckArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_CHECK_COMMAND_H_
