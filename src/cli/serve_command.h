#ifndef CRONLEDGER_CLI_SERVE_COMMAND_H_
#define CRONLEDGER_CLI_SERVE_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct ServeArgs {
  std::string config_path;
  std::optional<std::string> listen;
  std::optional<std::string> node_id;
  std::string log_format = "text";  // text | json
};

// `cronledger serve`: runs the planner until SIGTERM or SIGINT. Exit 0 after
// a clean shutdown, 2 on a config error (nothing written), 3 when the store
// is unavailable at start.
int RunServe(const ServeArgs& args, Clock& clock, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_SERVE_COMMAND_H_
