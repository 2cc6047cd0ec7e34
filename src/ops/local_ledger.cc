#include "ops/local_ledger.h"

#include <fmt/format.h>

#include "engine/status_report.h"
#include "cronledger/schedule.h"
#include "ops/ledger_json.h"
#include "ops/operator_actions.h"

namespace cronledger::ops {
using nlohmann::ordered_json;

std::string NoSuchJob(const std::string& job, bool config_only) {
  return fmt::format("no job named \"{}\" in the configuration{}", job,
                     config_only ? "" : " or the ledger");
}

LocalLedger::LocalLedger(const config::Config& config, store::Store& store, Clock& clock,
                         Wording wording)
    : config_(config), store_(store), clock_(clock), wording_(wording) {}

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

// ---- actions ------------------------------------------------------------------

Result<ordered_json> LocalLedger::SetPaused(const PauseAction& a) {
  const config::JobConfig* job = nullptr;
  if (a.job) {
    if (auto s = CheckJob(*a.job, true); !s.ok()) return s;
    job = config_.FindJob(*a.job);
  }
  if (auto s = ops::SetPaused(store_, job, a.pause, a.who, store::ToInstant(clock_.Now()),
                              wording_.job, wording_.all);
      !s.ok()) {
    return s;
  }
  return ordered_json{{"job", a.job ? ordered_json(*a.job) : ordered_json(nullptr)},
                      {"paused", a.pause}};
}

Result<ordered_json> LocalLedger::ActOnRun(const RunAction& a) {
  const store::Instant now = store::ToInstant(clock_.Now());
  std::optional<std::vector<std::string>> still_in_doubt;
  switch (a.kind) {
    case RunActionKind::kRetry:
      if (auto s = store_.RunRetry({a.run_id, a.who.actor, a.who.reason, now, a.who.on_behalf_of});
          !s.ok()) {
        return s;
      }
      break;
    case RunActionKind::kCancel:
      if (auto s = store_.RunCancel({a.run_id, a.who.actor, a.who.reason, now, a.who.on_behalf_of});
          !s.ok()) {
        return s;
      }
      break;
    case RunActionKind::kResolve:
      if (a.effect_as) {
        auto r = store_.EffectResolve({a.run_id, a.effect.value_or(""), *a.effect_as, a.who.actor,
                                       a.who.reason, now, a.who.on_behalf_of});
        if (!r.ok()) return r.status();
        still_in_doubt = r->still_in_doubt;
      } else if (auto s =
                     store_.RunResolve({a.run_id, a.run_as.value_or(store::RunResolution::kRetry),
                                        a.who.actor, a.who.reason, now, a.who.on_behalf_of});
                 !s.ok()) {
        return s;
      }
      break;
  }
  auto run = store_.RunGet(a.run_id);
  if (!run.ok()) return run.status();
  auto steps = store_.StepList(a.run_id);
  if (!steps.ok()) return steps.status();
  ordered_json doc = RunJson(*run, *steps);
  if (still_in_doubt) doc["still_in_doubt"] = *still_in_doubt;
  return doc;
}

Result<ActionAnswer> LocalLedger::Approve(const ApproveAction& a) {
  if (auto s = CheckJob(a.job, false); !s.ok()) return s;
  store::ApproveParams p;
  p.job = a.job;
  p.run_id = a.run;
  if (a.from) p.from = FormatDate(*a.from);
  if (a.to) p.to = FormatDate(*a.to);
  p.actor = a.who.actor;
  p.on_behalf_of = a.who.on_behalf_of;
  p.reason = a.who.reason;
  p.now = store::ToInstant(clock_.Now());
  auto approved = store_.RunApprove(p);
  if (!approved.ok()) return approved.status();
  ActionAnswer answer;
  if (approved->empty()) {
    answer.kind = ActionAnswer::Kind::kNothingToDo;
    answer.message = fmt::format("no run of {} is awaiting approval{}", a.job,
                                 a.run              ? fmt::format(" with id {}", *a.run)
                                 : (a.from || a.to) ? std::string(" in that range")
                                                    : std::string());
    return answer;
  }
  answer.doc["approved"] = *approved;
  return answer;
}

Result<ActionAnswer> LocalLedger::Impact(const ImpactOrder& a) {
  if (auto s = CheckJob(a.job, true); !s.ok()) return s;
  const config::JobConfig& job = *config_.FindJob(a.job);
  const store::Instant now = store::ToInstant(clock_.Now());
  ActionAnswer answer;
  if (!a.yes) {
    auto preview = PreviewImpact(store_, job, a.request, now);
    if (!preview.ok()) return preview.status();
    answer.kind = ActionAnswer::Kind::kPreview;
    answer.doc = preview->Json();
    return answer;
  }
  auto outcome = ApplyImpact(store_, job, a.request, a.digest, a.who, now);
  if (!outcome.ok()) return outcome.status();
  switch (outcome->kind) {
    case ImpactOutcome::Kind::kStale:
      answer.kind = ActionAnswer::Kind::kStale;
      answer.doc = outcome->preview.Json();
      return answer;
    case ImpactOutcome::Kind::kNothingToDo:
      answer.kind = ActionAnswer::Kind::kNothingToDo;
      answer.message = "nothing to queue";
      answer.doc = outcome->preview.Json();
      return answer;
    case ImpactOutcome::Kind::kDone:
      break;
  }
  answer.doc = {{"event_id", outcome->result.event_id},
                {"queued", outcome->result.queued},
                {"run_keys", outcome->preview.would_queue}};
  return answer;
}

Result<ActionAnswer> LocalLedger::Trigger(const TriggerAction& a) {
  if (auto s = CheckJob(a.job, true); !s.ok()) return s;
  const config::JobConfig& job = *config_.FindJob(a.job);
  auto outcome = ops::Trigger(store_, job, a.partitions, a.who, clock_.Now(), a.target);
  if (!outcome.ok()) return outcome.status();
  ActionAnswer answer;
  switch (outcome->kind) {
    case TriggerOutcome::Kind::kNothingDue:
      answer.kind = ActionAnswer::Kind::kNothingToDo;
      answer.message = NothingDueMessage(a.job, !a.partitions.empty(), *outcome);
      return answer;
    case TriggerOutcome::Kind::kNotExpected:
      answer.kind = ActionAnswer::Kind::kNothingToDo;
      answer.message = fmt::format("nothing to run for {}: {}", a.job, outcome->why);
      return answer;
    case TriggerOutcome::Kind::kExists:
      answer.kind = ActionAnswer::Kind::kExists;
      answer.message = fmt::format(
          "{} exists already, nothing done; trigger only queues keys that have no run yet (or "
          "await approval)",
          a.target.date || a.target.period ? "that period" : "the latest due period");
      answer.existing = outcome->existing;
      return answer;
    case TriggerOutcome::Kind::kDone:
      break;
  }
  answer.doc = {{"event_id", outcome->result.event_id},
                {"queued", outcome->result.queued},
                {"run_keys", outcome->run_keys},
                {"period", outcome->period},
                {"approved", outcome->approved}};
  return answer;
}

}  // namespace cronledger::ops
