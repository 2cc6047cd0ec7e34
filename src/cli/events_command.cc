#include "cli/events_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/open_ledger.h"
#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::cli {
int RunEvents(const EventsArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  store::EventQuery q;
  q.job = args.job;
  if (args.run) {
    if (*args.run <= 0) return UsageError(err, "events", fmt::format("--run {}: run ids are positive", *args.run));
    q.run_id = *args.run;
  }
  if (args.type) {
    const auto& known = ledger::event::kAll;
    if (std::find(std::begin(known), std::end(known), *args.type) == std::end(known)) {
      std::string all;
      for (std::string_view t : known) all += (all.empty() ? "" : ", ") + std::string(t);
      return UsageError(
          err, "events",
          fmt::format("--type \"{}\" is not an event type; one of: {}", *args.type, all));
    }
    q.type = args.type;
  }
  if (args.actor) {
    if (args.actor->empty()) return UsageError(err, "events", "--actor is empty");
    q.actor = args.actor;
  }
  if (args.since) {
    auto since = ParseRfc3339(*args.since);
    if (!since.ok()) {
      return UsageError(err, "events", "--since: " + since.status().message());
    }
    q.since = store::Instant(*since);
  }
  const int64_t limit = args.limit.value_or(kEventsDefaultLimit);
  const auto out_of_range = [&](int64_t max_limit, const char* why) {
    return UsageError(err, "events", fmt::format("--limit {} is out of range; use 1 to {}{}",
                                                 limit, max_limit, why));
  };
  if (limit < 1 || limit > kEventsMaxLimit) return out_of_range(kEventsMaxLimit, "");
  std::unique_ptr<ops::Ledger> ledger;
  if (int rc = OpenLedger("events", {args.config_path, args.server, {}}, clock, &ledger, err,
                          StoreAccess::kRead);
      rc != kExitOk) {
    return rc;
  }
  if (limit > ledger->MaxEvents()) {
    return out_of_range(ledger->MaxEvents(), " (the server answers at most that many at once)");
  }
  q.limit = static_cast<int>(limit);
  auto doc = ledger->Events(q);
  if (!doc.ok()) return Refused("events", doc.status(), err);
  if (args.json) {
    out << ops::Dump(*doc, 2) << "\n";
    return kExitOk;
  }
  PrintEventTable(Field(*doc, "events"), out);
  return kExitOk;
}

}  // namespace cronledger::cli
