#ifndef CRONLEDGER_CLI_GAPS_COMMAND_H_
#define CRONLEDGER_CLI_GAPS_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct GapsArgs {
  std::string config_path;  // already resolved
  std::optional<std::string> job;
  std::optional<std::string> from;  // business dates, YYYY-MM-DD, inclusive
  std::optional<std::string> to;
  bool include_waived = false;
  std::string server;  // --server URL: "" works on the store
  bool json = false;
};

// `cronledger gaps`: every due expected run key that is not succeeded and
// not in flight (or stuck), with its cause; waived keys too when asked.
// Default window per job: its backfill.horizon back from today (UTC) to
// tomorrow. Exit 0 when there is no unwaived gap, 1 when there is, 2 on a
// usage or config error, 3 when the store is unavailable. With `server`, the
// same through its GET /v1/gaps.
int RunGaps(const GapsArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_GAPS_COMMAND_H_
