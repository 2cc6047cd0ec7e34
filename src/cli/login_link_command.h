// `cronledger login-link`: a new one-time dashboard login link, for an
// operator on the machine (docs/dashboard.md).
#ifndef CRONLEDGER_CLI_LOGIN_LINK_COMMAND_H_
#define CRONLEDGER_CLI_LOGIN_LINK_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct LoginLinkArgs {
  std::string config_path;  // already resolved
  // The [[auth.token]] the link logs in as; without [[auth.token]] the
  // local operator token, and then it must not be given.
  std::optional<std::string> token;
};

// Records a login code in the ledger (valid 10 minutes, spent by its first
// use, on any node of the ledger) and prints the link on stdout: under
// server.public_url, else at the listen address of the node seen last,
// else at the configured listen address. Exit 0; 2 for a usage problem (no
// such token, --token without [[auth.token]], a worker token); 3 when the
// ledger does not exist or cannot be reached.
int RunLoginLink(const LoginLinkArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_LOGIN_LINK_COMMAND_H_
