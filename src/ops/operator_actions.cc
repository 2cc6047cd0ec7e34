#include "ops/operator_actions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "engine/job_definition.h"
#include "ledger/names.h"
#include "ops/input_values.h"
#include "schedule/time_zone.h"

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

namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::year_month_day;

// Why no key of the target's period was found: the first reason that holds.
std::string WhyNotExpected(store::Store& store, const config::JobConfig& job,
                           const Schedule& schedule, const std::string& date,
                           const TriggerTarget& target, bool some_partitions) {
  const std::string what = target.date ? "business date " + date : "period " + *target.period;
  if (job.start_date && date < FormatDate(*job.start_date)) {
    return fmt::format("{} is before the job's start_date, {}", what, FormatDate(*job.start_date));
  }
  // The schedule's occurrence of that period, if it has one.
  const auto d = ParseBusinessDate(date);
  const int offset = std::abs(schedule.options().date_offset_days);
  std::optional<Occurrence> found;
  const std::chrono::sys_seconds from = sys_days(*d) - days{offset + 2};
  for (auto occ = schedule.Next(from); occ && occ->utc <= sys_days(*d) + days{offset + 2};
       occ = schedule.Next(occ->utc)) {
    if (FormatDate(schedule.BusinessDate(*occ)) != date) continue;
    if (target.period && schedule.Period(*occ, job.EffectiveKey(schedule)) != *target.period) {
      continue;
    }
    found = *occ;
    break;
  }
  if (!found) {
    return target.date ? fmt::format("the schedule \"{}\" has no occurrence on business date {}",
                                     job.schedule, date)
                       : fmt::format(
                             "{} is not an occurrence of the schedule \"{}\" (run keys "
                             "show a slot-keyed job's periods)",
                             *target.period, job.schedule);
  }
  auto versions = store.JobVersionList(job.name);
  if (!versions.ok() || versions->empty()) {
    return fmt::format("the ledger has not recorded job {} yet: serve records it when it starts",
                       job.name);
  }
  if (!job.start_date && found->utc < versions->front().effective_from) {
    return fmt::format(
        "{} is before the job was added ({}): set start_date = \"{}\" on the job to expect it",
        what, FormatUtc(versions->front().effective_from), date);
  }
  return fmt::format("no {}partition of the job is expected on {}", some_partitions ? "given " : "",
                     what);
}

}  // namespace

Result<TriggerOutcome> Trigger(store::Store& store, const config::JobConfig& job,
                               const std::vector<std::string>& partitions, const Actor& who,
                               Clock::TimePoint now, const TriggerTarget& target) {
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
  auto schedule = Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor());
  if (!schedule.ok()) return schedule.status();
  const bool targeted = target.date || target.period;
  engine::GapScanParams params;
  params.now = store::ToInstant(now);
  params.include_waived = true;
  std::string target_date;  // the business date the target's keys are on
  if (target.date) {
    if (job.EffectiveKey(*schedule) != PeriodKey::kDate) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("job {} is keyed by slot (its schedule fires more than once a "
                                "day): give the period, as its run keys show it, instead of a date",
                                job.name));
    }
    const auto day = ParseBusinessDate(*target.date);
    if (!day) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{} is not a business date: use YYYY-MM-DD", *target.date));
    }
    target_date = *target.date;
    params.from = params.to = *day;
    params.include_not_due = true;
  } else if (target.period) {
    // A period starts with its local date (a date key is the business
    // date itself): the business date is within the date offset of it.
    const auto local = ParseBusinessDate(target.period->substr(0, 10));
    if (!local) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{} is not a period of a run key: a business date (YYYY-MM-DD) "
                                "or a slot (YYYY-MM-DDTHH:MM...)",
                                *target.period));
    }
    target_date = FormatDate(year_month_day{sys_days(*local) + days{job.date_offset_days}});
    const days spread{std::abs(job.date_offset_days) + 1};
    params.from = year_month_day{sys_days(*local) - spread};
    params.to = year_month_day{sys_days(*local) + spread};
    params.include_not_due = true;
  } else {
    // The latest due occurrence within the backfill horizon, by its keys.
    params.from = year_month_day(floor<days>(now - job.backfill.horizon));
    params.to = year_month_day(floor<days>(now) + days{1});
  }
  engine::GapScanner scanner(store);
  std::vector<engine::ExpectedKey> latest;
  std::vector<store::RunRecord> runs;  // the keys' runs, copied while valid
  Status s = scanner.ForEachKey(job, params, [&](const engine::ExpectedKey& k) -> Status {
    if (!partitions.empty() &&
        std::find(partitions.begin(), partitions.end(), k.partition) == partitions.end()) {
      return Status::Ok();
    }
    if (target.period && k.period != *target.period) return Status::Ok();
    if (!latest.empty() && k.scheduled_at > latest.front().scheduled_at) {
      // The latest occurrence, or the first of the target's period (a date
      // key's later occurrences are deduplicated into it).
      if (targeted) return Status::Ok();
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
  if (latest.empty() && !targeted) {
    out.kind = TriggerOutcome::Kind::kNothingDue;
    if (auto next = schedule->Next(floor<seconds>(now))) out.next_at = FormatUtc(next->utc);
    return out;
  }
  if (latest.empty()) {
    out.kind = TriggerOutcome::Kind::kNotExpected;
    out.why = WhyNotExpected(store, job, *schedule, target_date, target, !partitions.empty());
    return out;
  }
  if (!latest.front().due) {
    // Up to the current business date: a key whose occurrence falls on
    // today's local date runs now, ahead of it (due at once, its scheduled
    // time kept); a later one is refused.
    auto zone = schedule::TimeZone::Load(job.timezone);
    if (!zone.ok()) return zone.status();
    Occurrence here;
    here.utc = floor<seconds>(now);
    here.utc_offset = zone->SegmentAt(here.utc).offset;
    const std::string today = FormatLocal(here).substr(0, 10);
    if (latest.front().local_time.empty() || latest.front().local_time.substr(0, 10) > today) {
      out.kind = TriggerOutcome::Kind::kNotExpected;
      out.why = fmt::format(
          "{} is later than the job's current business date: its occurrence is at {} ({}), "
          "after today ({} in {}); trigger runs a period up to the one of today's occurrence",
          latest.front().period, latest.front().local_time, FormatUtc(latest.front().scheduled_at),
          today, job.timezone);
      return out;
    }
  }
  out.period = latest.front().period;
  for (std::size_t i = 0; i < latest.size(); ++i) {
    out.run_keys.push_back(job.name + "/" + latest[i].partition + "/" + latest[i].period);
    if (runs[i].id == 0) continue;
    if (runs[i].state == ledger::RunState::kAwaitingApproval) {
      ++out.approved;  // the trigger, with its reason, is the approval
      continue;
    }
    out.existing.push_back(fmt::format("{} ({}, run {}): {}", out.run_keys.back(),
                                       ledger::Name(runs[i].state), runs[i].id,
                                       RepeatHint(runs[i])));
  }
  if (!out.existing.empty()) {
    out.kind = TriggerOutcome::Kind::kExists;
    return out;
  }
  // One `trigger` event for the occurrence's keys; the store refuses, with
  // nothing written, if one of them changed since the check above.
  store::RequeueParams q;
  q.job = job.name;
  const std::string tzdata = TzdataVersion();
  for (std::size_t i = 0; i < latest.size(); ++i) {
    std::optional<ledger::RunState> seen;
    if (runs[i].id != 0) seen = runs[i].state;
    q.keys.push_back({latest[i].ToQueueKey(tzdata), seen});
  }
  q.event_type = std::string(ledger::event::kTrigger);
  q.actor = who.actor;
  q.on_behalf_of = who.on_behalf_of;
  q.reason = who.reason;
  q.now = store::ToInstant(now);
  nlohmann::json details = {{"period", out.period}};
  if (target.date) details["date"] = *target.date;
  if (out.approved > 0) details["approved"] = out.approved;
  q.details = details.dump();
  auto queued = store.RunRequeue(q);
  if (!queued.ok()) return queued.status();
  out.result = std::move(*queued);
  return out;
}

}  // namespace cronledger::ops
