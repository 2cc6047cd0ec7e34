#include "cli/events_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "api/operator_api.h"
#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/remote_ledger.h"
#include "cronledger/schedule.h"

namespace cronledger::cli {
namespace {

}  // namespace

int RunEvents(const EventsArgs& args, std::ostream& out, std::ostream& err) {
  store::EventQuery q;
  q.job = args.job;
  if (args.run) {
    if (*args.run <= 0) return UsageError(err, "events", fmt::format("--run {}: run ids are positive", *args.run));
    q.run_id = *args.run;
  }
  if (args.since) {
    auto since = ParseRfc3339(*args.since);
    if (!since.ok()) {
      return UsageError(err, "events", "--since: " + since.status().message());
    }
    q.since = store::Instant(*since);
  }
  const int64_t limit = args.limit.value_or(kEventsDefaultLimit);
  // Over --server, GET /v1/events's largest `limit` (it has no cursor).
  const int64_t max_limit = args.server.empty() ? kEventsMaxLimit : api::kMaxPageLimit;
  if (limit < 1 || limit > max_limit) {
    return UsageError(err, "events", fmt::format("--limit {} is out of range; use 1 to {}{}", limit, max_limit,
                                  args.server.empty() ? "" : " with --server"));
  }
  q.limit = static_cast<int>(limit);

  nlohmann::ordered_json doc;
  if (!args.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect("events", args.server, args.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    RemoteLedger::Query query;
    if (args.job) query.emplace_back("job", *args.job);
    if (args.run) query.emplace_back("run_id", std::to_string(*args.run));
    if (args.since) query.emplace_back("since", *args.since);
    query.emplace_back("limit", std::to_string(limit));
    auto answer = remote->Get("/v1/events", query);
    if (!answer.ok()) {
      err << "cronledger events: " << answer.status().message() << "\n";
      return ExitCodeFor(answer.status());
    }
    doc = std::move(*answer);
  } else {
    config::Config config;
    if (int rc = LoadConfigOrReport("events", args.config_path, &config, err); rc != kExitOk) {
      return rc;
    }
    std::unique_ptr<store::Store> store;
    if (int rc = OpenStoreOrReport("events", config, &store, err, StoreAccess::kExisting);
        rc != kExitOk) {
      return rc;
    }
    if (q.run_id) {
      // As GET /v1/events answers: a run that is not there is not an
      // empty history.
      if (auto run = store->RunGet(*q.run_id); !run.ok()) {
        err << "cronledger events: " << run.status().message() << "\n";
        return ExitCodeFor(run.status());
      }
    }
    auto events = store->EventList(q);  // oldest first
    if (!events.ok()) {
      err << "cronledger events: " << events.status().message() << "\n";
      return ExitCodeFor(events.status());
    }
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& e : *events) list.push_back(EventJson(e));
    doc["events"] = std::move(list);
  }
  if (args.json) {
    out << api::Dump(doc, 2) << "\n";
    return kExitOk;
  }
  PrintEventTable(Field(doc, "events"), out);
  return kExitOk;
}

}  // namespace cronledger::cli
