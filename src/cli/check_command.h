#ifndef CRONLEDGER_CLI_CHECK_COMMAND_H_
#define CRONLEDGER_CLI_CHECK_COMMAND_H_

#include <ostream>
#include <string>

namespace cronledger::cli {

struct CheckArgs {
  std::string config_path;  // already resolved (--config, $CRONLEDGER_CONFIG, ./cronledger.toml)
};

// `cronledger check`: validates the configuration. Exit 0 and a one-line
// summary on `out`, or exit 2 listing every problem on `err`.
int RunCheck(const CheckArgs& args, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_CHECK_COMMAND_H_
