#include "engine/gap_watch.h"

#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cronledger/schedule.h"
#include "ledger/names.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::year_month_day;

constexpr const char* kActor = "scanner";

std::string ReportedKey(const std::string& run_key, const std::string& cause) {
  return run_key + " " + cause;
}

}  // namespace

GapWatch::GapWatch(const config::Config& config, store::Store& store, GapWatchOptions options)
    : config_(config), store_(store), options_(options), scanner_(store) {}

Status GapWatch::ScanOnce(Clock::TimePoint now, GapWatchStats* stats) {
  if (now < next_at_) return Status::Ok();
  next_at_ = now + options_.every;
  Status first;
  for (const auto& job : config_.jobs) {
    Status s = ScanJob(job, now, jobs_[job.name], stats);
    if (!s.ok()) {
      spdlog::error("scanner: job {}: {}", job.name, s.ToString());
      if (first.ok()) first = s;
    }
  }
  return first;
}

Status GapWatch::ScanJob(const config::JobConfig& job, Clock::TimePoint now, JobWatch& w,
                         GapWatchStats* stats) {
  if (!w.seeded) {
    // Gaps recorded before a restart are not new.
    store::EventQuery q;
    q.job = job.name;
    q.type = std::string(ledger::event::kGapFound);
    q.limit = 100000;
    auto found = store_.EventList(q);
    if (!found.ok()) return found.status();
    for (const auto& e : *found) {
      const auto details = nlohmann::json::parse(e.details, nullptr, false);
      if (!details.is_object() || !details.contains("cause")) continue;
      w.reported.insert(ReportedKey(e.run_key, details["cause"].get<std::string>()));
      if (details.value("action", "") == "awaiting_approval") {
        w.reported.insert(ReportedKey(e.run_key, "awaiting_approval"));
      }
    }
    w.seeded = true;
  }
  const bool full = w.last_full == Clock::TimePoint{} || now - w.last_full >= options_.full_scan_every;
  GapScanParams p;
  p.now = store::ToInstant(now);
  p.to = year_month_day(floor<days>(now) + days{1});
  if (full) {
    p.from = year_month_day(floor<days>(now - job.backfill.horizon));
  } else {
    // What fell due since the last pass, or became stuck since, lies on
    // these dates (a day either side for zones and date offsets).
    const auto earliest = w.last_pass - job.alert.max_lag - options_.every;
    p.from = year_month_day(floor<days>(earliest) - days{1 + std::abs(job.date_offset_days)});
  }
  const auto horizon_start = floor<std::chrono::seconds>(now - job.backfill.horizon);
  // A key the planner has not reached yet (its pass failed, or is still to
  // come) is the planner's to plan, not a gap to recover: acting on it
  // would turn a passing store error into work for an operator.
  auto record = store_.JobGet(job.name);
  if (!record.ok()) {
    if (record.status().code() == StatusCode::kNotFound) return Status::Ok();
    return record.status();
  }
  const auto planned_through = record->planned_through;

  std::vector<Gap> fresh;
  Status scanned = scanner_.Scan(job, p, [&](const Gap& g) {
    // Older than the horizon is out of the scanner's reach (and planning's).
    if (g.scheduled_at < horizon_start) return Status::Ok();
    if (g.cause == "never_planned" && (!planned_through || g.scheduled_at > *planned_through)) {
      return Status::Ok();
    }
    if (w.reported.insert(ReportedKey(g.RunKey(), g.cause)).second) fresh.push_back(g);
    return Status::Ok();
  });
  if (!scanned.ok()) return scanned;
  w.last_pass = now;
  if (full) w.last_full = now;

  const std::string tzdata = TzdataVersion();
  for (const Gap& g : fresh) {
    // Never-planned and misfired keys are recovered: at once when young,
    // else they wait for an operator. Other causes need an operator anyway.
    std::string action;
    std::optional<int64_t> run_id = g.run_id;
    if (g.cause == "never_planned" || g.cause == "misfired") {
      const bool young = std::chrono::floor<std::chrono::seconds>(now) - g.scheduled_at <=
                         job.backfill.auto_within;
      store::QueueKeysParams q;
      q.job = job.name;
      q.keys = {g.ToQueueKey(tzdata)};
      q.as = young ? ledger::RunState::kPending : ledger::RunState::kAwaitingApproval;
      q.event_type = young ? std::string(ledger::event::kBackfill) : "";
      q.actor = kActor;
      q.reason = fmt::format("{} gap within backfill.auto_within", g.cause);
      q.now = store::ToInstant(now);
      auto queued = store_.RunQueueKeys(q);
      if (!queued.ok()) return queued.status();
      if (!queued->queued.empty()) {
        action = young ? "backfilled" : "awaiting_approval";
        run_id = queued->queued[0];
        // Waiting for approval is this same gap, not a new one.
        if (!young) w.reported.insert(ReportedKey(g.RunKey(), "awaiting_approval"));
        if (stats) ++(young ? stats->backfilled : stats->awaiting_approval);
      }
    }
    store::EventRecord e;
    e.at = store::ToInstant(now);
    e.type = std::string(ledger::event::kGapFound);
    e.job = job.name;
    e.run_id = run_id;
    e.run_key = g.RunKey();
    e.actor = kActor;
    nlohmann::json details = {{"cause", g.cause},
                              {"business_date", g.business_date},
                              {"scheduled_at", FormatUtc(g.scheduled_at)}};
    if (!action.empty()) details["action"] = action;
    e.details = details.dump();
    if (Status s = store_.EventAppend(e); !s.ok()) return s;
    if (stats) ++stats->new_gaps;
    spdlog::warn("scanner: gap {} ({}), scheduled {}{}", g.RunKey(), g.cause,
                 FormatUtc(g.scheduled_at),
                 action == "backfilled"          ? "; backfilled"
                 : action == "awaiting_approval" ? "; awaits approval (cronledger approve)"
                                                 : "");
  }
  return Status::Ok();
}

}  // namespace cronledger::engine
