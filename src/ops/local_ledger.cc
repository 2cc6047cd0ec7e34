#include "ops/local_ledger.h"

#include <fmt/format.h>

#include "engine/status_report.h"
#include "ops/ledger_json.h"

namespace cronledger::ops {
using nlohmann::ordered_json;

std::string NoSuchJob(const std::string& job, bool config_only) {
  return fmt::format("no job named \"{}\" in the configuration{}", job,
                     config_only ? "" : " or the ledger");
}

LocalLedger::LocalLedger(const config::Config& config, store::Store& store, Clock& clock)
    : config_(config), store_(store), clock_(clock) {}

cronledger::Status LocalLedger::CheckJob(const std::string& job, bool config_only) const {
  if (config_.FindJob(job) != nullptr) return cronledger::Status::Ok();
  if (!config_only) {
    auto known = store_.JobGet(job);
    if (known.ok()) return cronledger::Status::Ok();
    if (known.status().code() != StatusCode::kNotFound) return known.status();
  }
  return InvalidArgument(NoSuchJob(job, config_only));
}

Result<ordered_json> LocalLedger::Jobs() {
  auto report = engine::BuildStatus(config_, store_, clock_.Now());
  if (!report.ok()) return report.status();
  ordered_json jobs = ordered_json::array();
  for (const auto& s : report->jobs) jobs.push_back(JobStatusJson(s));
  auto now = store_.LedgerNow(store::ToInstant(clock_.Now()));
  if (!now.ok()) return now.status();
  auto nodes = NodesJson(store_, *now);
  if (!nodes.ok()) return nodes.status();
  ordered_json doc;
  doc["jobs"] = std::move(jobs);
  doc["nodes"] = std::move(*nodes);
  return doc;
}

Result<ordered_json> LocalLedger::Runs(const store::RunQuery& query, bool with_steps) {
  if (query.job) {
    if (auto s = CheckJob(*query.job, false); !s.ok()) return s;
  }
  auto runs = store_.RunList(query);  // newest first
  if (!runs.ok()) return runs.status();
  ordered_json list = ordered_json::array();
  for (const auto& r : *runs) {
    if (!with_steps) {
      list.push_back(RunJson(r));
      continue;
    }
    auto steps = store_.StepList(r.id);
    if (!steps.ok()) return steps.status();
    list.push_back(RunJson(r, *steps));
  }
  ordered_json doc;
  doc["runs"] = std::move(list);
  return doc;
}

Result<ordered_json> LocalLedger::Run(int64_t id) {
  auto detail = LoadRunDetail(store_, id, kRunDetailEvents);
  if (!detail.ok()) return detail.status();
  return RunDetailJson(*detail);
}

Result<ordered_json> LocalLedger::Events(const store::EventQuery& query) {
  if (query.job) {
    if (auto s = CheckJob(*query.job, false); !s.ok()) return s;
  }
  if (query.run_id) {
    // A run that is not there is not an empty history.
    if (auto run = store_.RunGet(*query.run_id); !run.ok()) return run.status();
  }
  auto events = store_.EventList(query);  // oldest first
  if (!events.ok()) return events.status();
  ordered_json list = ordered_json::array();
  for (const auto& e : *events) list.push_back(EventJson(e));
  ordered_json doc;
  doc["events"] = std::move(list);
  return doc;
}

cronledger::Status LocalLedger::Gaps(
    const GapsQuery& query,
    const std::function<cronledger::Status(const ordered_json&)>& each) {
  if (query.job) {
    if (auto s = CheckJob(*query.job, true); !s.ok()) return s;
  }
  GapQuery scan;
  scan.from = query.from;
  scan.to = query.to;
  scan.include_waived = query.include_waived;
  for (const auto& j : config_.jobs) {
    if (!query.job || j.name == *query.job) scan.jobs.push_back(&j);
  }
  return ForEachGap(store_, scan, store::ToInstant(clock_.Now()),
                    [&](const engine::Gap& g) { return each(GapJson(g)); });
}

Result<ordered_json> LocalLedger::Verify(const VerifyQuery& query) {
  if (auto s = CheckJob(query.job, true); !s.ok()) return s;
  return VerifyJson(store_, *config_.FindJob(query.job), query.date_text, query.date,
                    store::ToInstant(clock_.Now()));
}

}  // namespace cronledger::ops
