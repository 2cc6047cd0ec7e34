#ifndef CRONLEDGER_CLI_EVENTS_COMMAND_H_
#define CRONLEDGER_CLI_EVENTS_COMMAND_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "cronledger/clock.h"

namespace cronledger::cli {

struct EventsArgs {
  std::string config_path;  // already resolved
  std::optional<std::string> job;
  std::optional<int64_t> run;
  std::optional<std::string> since;  // RFC 3339
  std::optional<std::string> type;   // one of ledger::event::kAll
  std::optional<std::string> actor;  // who acted, or on whose behalf
  std::optional<int64_t> limit;      // 1..100000 (with `server` 1..1000); default 100
  std::string server;                // --server URL: "" works on the store
  bool json = false;
};

inline constexpr int64_t kEventsDefaultLimit = 100;
inline constexpr int64_t kEventsMaxLimit = 100000;

// `cronledger events`: the audit log, oldest first. Without --since the
// newest N events; with it the first N at or after that instant. Exit 0; 2
// on a usage or config error; 3 store unavailable. With `server`, the same
// through its GET /v1/events, which answers at most 1000 (it has no cursor).
int RunEvents(const EventsArgs& args, Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_EVENTS_COMMAND_H_
