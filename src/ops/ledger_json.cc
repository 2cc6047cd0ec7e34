#include "ops/ledger_json.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

#include "ops/json_shapes.h"
#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::ops {
namespace {

using nlohmann::ordered_json;
using std::chrono::days;
using std::chrono::sys_days;
using std::chrono::year_month_day;

// Operator and policy actions that queued a run of the date again.
const std::set<std::string> kRequeueEvents = {"retry", "resolve", "rerun", "backfill", "approve"};

// Whether a `started` effect is in doubt: the attempt that started it no
// longer runs (docs/effects.md; tokens are never reissued).
Result<bool> InDoubt(store::Store& store, const store::EffectRecord& e) {
  if (e.state != ledger::EffectState::kStarted) return false;
  auto starter = store.RunGet(e.run_id);
  if (!starter.ok()) return starter.status();
  if (starter->state != ledger::RunState::kRunning) return true;
  auto attempts = store.AttemptList(e.run_id);
  if (!attempts.ok()) return attempts.status();
  for (const auto& a : *attempts) {
    if (a.token == e.started_token && !a.ended_at) return false;
  }
  return true;
}

ordered_json CountsJson(const std::map<std::string, int>& counts) {
  ordered_json c = ordered_json::object();
  for (const auto& [state, n] : counts) c[state] = n;
  return c;
}

}  // namespace

ordered_json JobStatusJson(const engine::JobStatus& s) {
  ordered_json j;
  j["name"] = s.name;
  j["state"] = s.state;
  j["last_success_at"] = StringOrNull(s.last_success_at);
  j["last_success_business_date"] = StringOrNull(s.last_success_business_date);
  j["business_date"] = StringOrNull(s.business_date);
  j["expected"] = s.expected;
  j["succeeded"] = s.succeeded;
  j["failed"] = s.failed;
  j["unknown"] = s.unknown;
  j["waived"] = s.waived;
  j["in_progress"] = s.in_progress;
  j["missing"] = s.missing;
  j["lag_seconds"] = s.lag_seconds;
  j["next_at"] = StringOrNull(s.next_at);
  ordered_json steps = ordered_json::object();
  for (const auto& [name, counts] : s.steps) steps[name] = CountsJson(counts);
  j["steps"] = std::move(steps);
  j["planned_through"] = StringOrNull(s.planned_through);
  j["in_flight"] = s.in_flight;
  j["expired_leases"] = s.expired_leases;
  j["unknown_runs"] = s.unknown_total;
  j["timezone"] = s.timezone;
  return j;
}

ordered_json RunJson(const store::RunRecord& run, const std::vector<store::StepState>& steps) {
  ordered_json j;
  j["id"] = run.id;
  j["run_key"] = run.RunKey();
  j["job"] = run.job;
  j["partition"] = run.partition;
  j["period"] = run.period;
  j["business_date"] = run.business_date;
  j["scheduled_at"] = FormatUtc(run.scheduled_at);
  j["state"] = std::string(ledger::Name(run.state));
  j["reason"] =
      run.reason ? ordered_json(std::string(ledger::Name(*run.reason))) : ordered_json(nullptr);
  j["attempts"] = run.attempts;
  ordered_json list = ordered_json::array();
  for (const auto& step : steps)
    list.push_back({{"name", step.name}, {"state", std::string(ledger::Name(step.state))}});
  j["steps"] = std::move(list);
  return j;
}

ordered_json AttemptJson(const store::AttemptRecord& a) {
  ordered_json j;
  j["number"] = a.number;
  j["fencing_token"] = a.token;
  j["node"] = a.node;
  // The API token an external worker claimed with: only it may write to
  // the attempt. Null for a node's own executor.
  j["claimant"] = StringOrNull(a.claimant);
  j["started_at"] = FormatInstant(a.started_at);
  j["ended_at"] = a.ended_at ? ordered_json(FormatInstant(*a.ended_at)) : ordered_json(nullptr);
  j["end_class"] = StringOrNull(a.end_class);
  j["exit_status"] = a.exit_status ? ordered_json(*a.exit_status) : ordered_json(nullptr);
  j["log_path"] = StringOrNull(a.log_path);
  j["step"] = StringOrNull(a.step);
  if (a.ended_at) {
    j["duration_seconds"] =
        std::chrono::duration_cast<std::chrono::seconds>(*a.ended_at - a.started_at).count();
  }
  j["output_tail"] = StringOrNull(a.output_tail);
  j["action_event_id"] =
      a.action_event_id ? ordered_json(*a.action_event_id) : ordered_json(nullptr);
  return j;
}

ordered_json EventJson(const store::EventRecord& event) {
  ordered_json j;
  j["id"] = event.id;
  j["at"] = FormatInstant(event.at);
  j["type"] = event.type;
  j["job"] = StringOrNull(event.job);
  j["run_id"] = event.run_id ? ordered_json(*event.run_id) : ordered_json(nullptr);
  j["run_key"] = StringOrNull(event.run_key);
  j["actor"] = event.actor;
  j["on_behalf_of"] = StringOrNull(event.on_behalf_of);
  j["reason"] = StringOrNull(event.reason);
  // Stored as a JSON object; a value that does not parse (never written by
  // cronledger) is shown as the text it is rather than dropped.
  auto details = ordered_json::parse(event.details, nullptr, /*allow_exceptions=*/false);
  if (details.is_discarded()) {
    j["details"] = event.details;
  } else {
    j["details"] = std::move(details);
  }
  return j;
}

ordered_json GapJson(const engine::Gap& g) {
  return {{"run_key", g.RunKey()},
          {"job", g.job},
          {"partition", g.partition},
          {"business_date", g.business_date},
          {"scheduled_at", FormatUtc(g.scheduled_at)},
          {"cause", g.cause},
          {"waived", g.waived},
          {"run_id", g.run_id ? ordered_json(*g.run_id) : ordered_json(nullptr)}};
}

namespace {

// Moves a read's answer into `to`; its error otherwise.
template <typename T>
Status Into(Result<T> read, T& to) {
  if (!read.ok()) return read.status();
  to = std::move(*read);
  return Status::Ok();
}

}  // namespace

Result<RunDetail> LoadRunDetail(store::Store& store, int64_t run_id, int max_events) {
  RunDetail d;
  if (Status s = Into(store.RunGet(run_id), d.run); !s.ok()) return s;
  store::EventQuery q;
  q.run_id = run_id;
  q.limit = max_events;
  if (Status s = Into(store.EventList(q), d.events); !s.ok()) return s;
  if (Status s = Into(store.StepList(run_id), d.steps); !s.ok()) return s;
  if (Status s = Into(store.AttemptList(run_id), d.attempts); !s.ok()) return s;
  if (Status s = Into(store.EffectList(run_id), d.effects); !s.ok()) return s;
  for (const auto& e : d.effects) {
    auto doubt = InDoubt(store, e);
    if (!doubt.ok()) return doubt.status();
    d.in_doubt.push_back(*doubt);
  }
  return d;
}

ordered_json RunDetailJson(const RunDetail& d) {
  ordered_json j = RunJson(d.run, d.steps);
  ordered_json attempt_list = ordered_json::array();
  for (const auto& a : d.attempts) attempt_list.push_back(AttemptJson(a));
  j["attempt_list"] = std::move(attempt_list);
  ordered_json effect_list = ordered_json::array();
  for (std::size_t i = 0; i < d.effects.size(); ++i) {
    effect_list.push_back(EffectJson(d.effects[i], d.in_doubt[i]));
  }
  j["effects"] = std::move(effect_list);
  ordered_json events = ordered_json::array();
  for (const auto& e : d.events) events.push_back(EventJson(e));
  j["events"] = std::move(events);
  j["updated_at"] = FormatInstant(d.run.updated_at);
  return j;
}

Status ForEachGap(store::Store& store, const GapQuery& query, store::Instant now,
                  const std::function<Status(const engine::Gap&)>& fn) {
  const sys_days today = std::chrono::floor<days>(now);
  engine::GapScanner scanner(store);
  for (const auto* job : query.jobs) {
    engine::GapScanParams p;
    p.from =
        query.from.value_or(year_month_day(std::chrono::floor<days>(now - job->backfill.horizon)));
    p.to = query.to.value_or(year_month_day(today + days{1}));
    p.now = now;
    p.include_waived = query.include_waived;
    Status s = scanner.Scan(*job, p, fn);
    if (!s.ok()) return Status(s.code(), fmt::format("job {}: {}", job->name, s.message()));
  }
  return Status::Ok();
}

Result<std::vector<engine::Gap>> ScanGaps(store::Store& store, const GapQuery& query,
                                          store::Instant now) {
  std::vector<engine::Gap> gaps;
  Status s = ForEachGap(store, query, now, [&](const engine::Gap& g) {
    gaps.push_back(g);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return gaps;
}

Result<ordered_json> VerifyJson(store::Store& store, const config::JobConfig& job,
                                const std::string& business_date, year_month_day date,
                                store::Instant now) {
  int expected = 0;
  int succeeded = 0;
  int waived = 0;
  int attempts = 0;
  std::optional<std::chrono::sys_seconds> first_scheduled;
  std::optional<store::Instant> last_completed;
  std::map<std::string, std::map<std::string, int>> step_counts;  // step -> state -> count
  ordered_json reruns = ordered_json::array();
  ordered_json missing = ordered_json::array();

  engine::GapScanner scanner(store);
  engine::GapScanParams p;
  p.from = p.to = date;
  p.now = now;
  p.include_waived = true;
  p.include_not_due = true;
  Status scanned = scanner.ForEachKey(job, p, [&](const engine::ExpectedKey& k) -> Status {
    const std::string run_key = job.name + "/" + k.partition + "/" + k.period;
    ++expected;
    if (!first_scheduled || k.scheduled_at < *first_scheduled) first_scheduled = k.scheduled_at;
    if (k.run) {
      const store::RunRecord& run = *k.run;
      attempts += run.attempts;
      auto steps = store.StepList(run.id);
      if (!steps.ok()) return steps.status();
      for (const auto& st : *steps) ++step_counts[st.name][std::string(ledger::Name(st.state))];
      store::EventQuery q;
      q.run_id = run.id;
      q.limit = 10000;
      auto events = store.EventList(q);
      if (!events.ok()) return events.status();
      for (const auto& e : *events) {
        if (!kRequeueEvents.contains(e.type)) continue;
        reruns.push_back({{"run_key", run_key},
                          {"type", e.type},
                          {"at", FormatInstant(e.at)},
                          {"actor", e.actor},
                          {"on_behalf_of", StringOrNull(e.on_behalf_of)},
                          {"reason", StringOrNull(e.reason)}});
      }
      if (run.state == ledger::RunState::kSucceeded) {
        ++succeeded;
        if (!last_completed || run.updated_at > *last_completed) last_completed = run.updated_at;
        return Status::Ok();
      }
    }
    if (k.waived) {
      ++waived;
      return Status::Ok();
    }
    const std::string cause = !k.cause.empty() ? k.cause : !k.due ? "not_due" : "in_progress";
    missing.push_back({{"run_key", run_key}, {"cause", cause}});
    return Status::Ok();
  });
  if (!scanned.ok()) return scanned;

  ordered_json steps = ordered_json::object();
  for (const auto& [name, states] : step_counts) steps[name] = CountsJson(states);
  const bool complete = missing.empty() && expected > 0;
  return ordered_json{
      {"job", job.name},
      {"business_date", business_date},
      {"complete", complete},
      {"expected", expected},
      {"succeeded", succeeded},
      {"waived", waived},
      {"steps", steps},
      {"first_scheduled_at",
       first_scheduled ? ordered_json(FormatUtc(*first_scheduled)) : ordered_json(nullptr)},
      {"last_completed_at",
       last_completed ? ordered_json(FormatInstant(*last_completed)) : ordered_json(nullptr)},
      {"attempts", attempts},
      {"reruns", reruns},
      {"missing", missing}};
}

Result<ordered_json> NodesJson(store::Store& store, store::Instant now) {
  auto nodes = store.NodeList();
  if (!nodes.ok()) return nodes.status();
  ordered_json out = ordered_json::array();
  for (const auto& n : *nodes) {
    ordered_json j;
    j["node"] = n.node;
    j["alive"] = NodeAlive(n, now);
    j["last_seen_at"] = FormatInstant(n.last_seen_at);
    j["running"] = n.running;
    j["version"] = n.version;
    j["listen"] = n.listen;
    j["started_at"] = FormatInstant(n.started_at);
    ordered_json roles = ordered_json::array();
    for (const auto& [role, until] : n.roles) {
      if (until >= now) roles.push_back(role);
    }
    j["roles"] = std::move(roles);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace cronledger::ops
