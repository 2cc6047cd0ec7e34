#ifndef CRONLEDGER_CLI_EXIT_CODES_H_
#define CRONLEDGER_CLI_EXIT_CODES_H_

namespace cronledger::cli {

// Exit codes of the cronledger command (docs/cli.md, Exit codes).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFound = 1;        // the check found something / state refused
inline constexpr int kExitUsage = 2;        // usage or config error
inline constexpr int kExitUnavailable = 3;  // store or server unavailable

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_EXIT_CODES_H_
