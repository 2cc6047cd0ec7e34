#include "ops/operator_actions.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>

#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "engine/job_definition.h"
#include "ledger/names.h"

namespace cronledger::ops {

Status SetPaused(store::Store& store, const config::JobConfig* job, bool pause, const Actor& who,
                 store::Instant now, std::string_view job_hint, std::string_view all_hint) {
  if (job != nullptr) {
    auto existing = store.JobGet(job->name);
    if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
      return existing.status();
    }
    if (!existing.ok()) {
      store::JobSyncParams sync;
      sync.job = job->name;
      sync.definition = engine::CanonicalDefinition(*job);
      sync.now = now;
      if (auto r = store.JobSync(sync); !r.ok()) return r.status();
    }
  }
  store::PauseParams p;
  if (job != nullptr) p.job = job->name;
  p.paused = pause;
  p.actor = who.actor;
  p.on_behalf_of = who.on_behalf_of;
  p.reason = who.reason;
  p.now = now;
  Status s = store.JobSetPaused(p);
  if (s.ok() || s.code() != StatusCode::kConflict || pause) return s;
  if (job == nullptr) {
    return Status(StatusCode::kConflict,
                  fmt::format("everything is not paused (a job paused on its own is resumed "
                              "with {})",
                              job_hint));
  }
  auto all = store.IsPausedAll();
  return Status(StatusCode::kConflict,
                fmt::format("job \"{}\" is not paused{}", job->name,
                            all.ok() && *all ? fmt::format(" on its own; everything is paused: "
                                                           "resume it with {}",
                                                           all_hint)
                                             : std::string()));
}

std::string NothingDueMessage(const std::string& job, bool some_partitions,
                              const TriggerOutcome& outcome) {
  return fmt::format(
      "nothing due yet for {}{}: no occurrence is due since the job was added (within its "
      "backfill horizon){}",
      job, some_partitions ? " in those partitions" : "",
      outcome.next_at.empty() ? "" : "; the next is at " + outcome.next_at);
}

namespace {

// What repeats an existing run's work, for trigger's refusal: `trigger`
// only queues keys that have no run yet. The commands are templates (TEXT,
// and --config as the caller gave it); a rerun covers the run's whole
// business date and previews first.
std::string RepeatHint(const store::RunRecord& run) {
  const auto rerun = [&](std::string_view extra) {
    return fmt::format(
        "`cronledger rerun --job {} --date {} --partition {}{} --reason TEXT` previews a rerun of "
        "its date (add --yes to queue it)",
        run.job, run.business_date, run.partition, extra);
  };
  switch (run.state) {
    case ledger::RunState::kFailed:
    case ledger::RunState::kUnknown:
      return fmt::format("`cronledger retry {} --reason TEXT` queues it again", run.id);
    case ledger::RunState::kSucceeded:
      return rerun(" --force");
    case ledger::RunState::kSkipped:
      return rerun(run.reason == ledger::SkipReason::kMisfired ? "" : " --include-waived");
    case ledger::RunState::kCancelled:
      return rerun(" --include-waived");
    case ledger::RunState::kAwaitingApproval:
      return fmt::format("`cronledger approve --job {} --run {} --reason TEXT` lets it run",
                         run.job, run.id);
    case ledger::RunState::kPending:
    case ledger::RunState::kRunning:
      break;
  }
  return "queued or running already";
}

}  // namespace

Result<TriggerOutcome> Trigger(store::Store& store, const config::JobConfig& job,
                               const std::vector<std::string>& partitions, const Actor& who,
                               Clock::TimePoint now) {
  // A partition the job never had would only ever be "nothing due yet".
  if (!partitions.empty()) {
    auto history = store.PartitionHistory(job.name);
    if (!history.ok()) return history.status();
    std::set<std::string> known;
    for (const auto& h : *history) known.insert(h.partition);
    for (const auto& p : partitions) {
      if (!known.empty() && !known.contains(p)) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("job {} has no partition \"{}\"", job.name, p));
      }
    }
  }
  // The latest due occurrence within the backfill horizon, by its keys.
  engine::GapScanner scanner(store);
  engine::GapScanParams params;
  params.from = std::chrono::year_month_day(
      std::chrono::floor<std::chrono::days>(now - job.backfill.horizon));
  params.to = std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(now) +
                                          std::chrono::days{1});
  params.now = store::ToInstant(now);
  params.include_waived = true;
  std::vector<engine::ExpectedKey> latest;
  std::vector<store::RunRecord> runs;  // the keys' runs, copied while valid
  Status s = scanner.ForEachKey(job, params, [&](const engine::ExpectedKey& k) -> Status {
    if (!partitions.empty() &&
        std::find(partitions.begin(), partitions.end(), k.partition) == partitions.end()) {
      return Status::Ok();
    }
    if (!latest.empty() && k.scheduled_at > latest.front().scheduled_at) {
      latest.clear();
      runs.clear();
    }
    engine::ExpectedKey copy = k;
    copy.run = nullptr;
    latest.push_back(copy);
    runs.push_back(k.run ? *k.run : store::RunRecord{});
    return Status::Ok();
  });
  if (!s.ok()) return s;
  TriggerOutcome out;
  if (latest.empty()) {
    out.kind = TriggerOutcome::Kind::kNothingDue;
    auto schedule = Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor());
    if (schedule.ok()) {
      if (auto next = schedule->Next(std::chrono::floor<std::chrono::seconds>(now))) {
        out.next_at = FormatUtc(next->utc);
      }
    }
    return out;
  }
  out.period = latest.front().period;
  for (std::size_t i = 0; i < latest.size(); ++i) {
    out.run_keys.push_back(job.name + "/" + latest[i].partition + "/" + latest[i].period);
    if (runs[i].id != 0) {
      out.existing.push_back(fmt::format("{} ({}, run {}): {}", out.run_keys.back(),
                                         ledger::Name(runs[i].state), runs[i].id,
                                         RepeatHint(runs[i])));
    }
  }
  if (!out.existing.empty()) {
    out.kind = TriggerOutcome::Kind::kExists;
    return out;
  }
  // One `trigger` event for the occurrence's keys; the store refuses, with
  // nothing written, if one of them appeared since the check above.
  store::RequeueParams q;
  q.job = job.name;
  const std::string tzdata = TzdataVersion();
  for (const auto& k : latest) q.keys.push_back({k.ToQueueKey(tzdata), std::nullopt});
  q.event_type = std::string(ledger::event::kTrigger);
  q.actor = who.actor;
  q.on_behalf_of = who.on_behalf_of;
  q.reason = who.reason;
  q.now = store::ToInstant(now);
  q.details = nlohmann::json{{"period", out.period}}.dump();
  auto queued = store.RunRequeue(q);
  if (!queued.ok()) return queued.status();
  out.result = std::move(*queued);
  return out;
}

}  // namespace cronledger::ops
