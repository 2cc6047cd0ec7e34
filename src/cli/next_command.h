#ifndef CRONLEDGER_CLI_NEXT_COMMAND_H_
#define CRONLEDGER_CLI_NEXT_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct NextArgs {
  std::string expression;
  std::string timezone;
  std::optional<std::string> from;  // RFC 3339; default: the clock's now
  int count = 10;
  int offset_days = 0;
  std::string dst_gap = "shift";
  std::optional<std::string> dst_repeat;
  bool json = false;
};

// `cronledger next`: prints the next occurrences. Returns the exit code
// (0, or 2 for a usage or expression error, reported on `err`).
int RunNext(const NextArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_NEXT_COMMAND_H_
