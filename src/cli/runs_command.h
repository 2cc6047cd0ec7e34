#ifndef CRONLEDGER_CLI_RUNS_COMMAND_H_
#define CRONLEDGER_CLI_RUNS_COMMAND_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct RunsArgs {
  std::string config_path;  // already resolved
  std::optional<std::string> job;
  std::optional<std::string> date;   // business date, YYYY-MM-DD
  std::optional<std::string> state;  // a run state name
  std::optional<std::string> partition;
  std::optional<int64_t> limit;  // 1..100000; default 100
  std::optional<int64_t> run;    // one run, with its events
  std::string server;            // --server URL: "" works on the store
  bool json = false;
};

inline constexpr int64_t kRunsDefaultLimit = 100;
inline constexpr int64_t kRunsMaxLimit = 100000;

// `cronledger runs`: the ledger's runs, newest first, filtered; or with
// --run ID one run with its attempts, effects and events. Exit 0; 1 for an
// unknown run id; 2 on a usage or config error; 3 store unavailable. With
// `server`, the same through its GET /v1/runs (page by page) and
// GET /v1/runs/{id}.
int RunRuns(const RunsArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_RUNS_COMMAND_H_
