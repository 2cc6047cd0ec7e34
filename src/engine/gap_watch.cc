#include "engine/gap_watch.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

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
// Gaps recorded per transaction, and logged one by one per job and pass
// (the rest are summed up in one line).
constexpr std::size_t kGapBatch = 1000;
constexpr int kGapsLoggedPerPass = 20;

std::string ReportedKey(const std::string& run_key, const std::string& cause) {
  return run_key + " " + cause;
}

}  // namespace

GapWatch::GapWatch(const config::Config& config, store::Store& store, GapWatchOptions options)
    : config_(config),
      store_(store),
      options_(options),
      scanner_(store),
      role_(store, "scanner", options.node, options.every) {}

Status GapWatch::ScanOnce(Clock::TimePoint now, GapWatchStats* stats, std::stop_token stop) {
  if (now < next_at_) return Status::Ok();
  next_at_ = now + options_.every;
  auto held = role_.Hold(now);
  if (!held.ok()) return held.status();  // NodeRole logged it
  if (!*held) {
    // Another node records the gaps meanwhile: what it found is read from
    // its gap_found events, with a full scan, when this node scans next.
    jobs_.clear();
    return Status::Ok();
  }
  Status first;
  for (const auto& job : config_.jobs) {
    if (stop.stop_requested()) break;
    Status s = ScanJob(job, now, jobs_[job.name], stats, stop);
    if (!s.ok()) {
      spdlog::error("scanner: job {}: {}", job.name, s.ToString());
      if (first.ok()) first = s;
    }
  }
  return first;
}

Status GapWatch::ScanJob(const config::JobConfig& job, Clock::TimePoint now, JobWatch& w,
                         GapWatchStats* stats, std::stop_token stop) {
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
  // Whole business dates: `gaps` and the dashboard show the horizon's first
  // date whole, so the scanner records all of its keys too (one at 09:00
  // when the horizon began at 12:00 would otherwise stay never_planned
  // there for good).
  const std::string horizon_start =
      FormatDate(year_month_day(floor<days>(now - job.backfill.horizon)));
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
    if (g.business_date < horizon_start) return Status::Ok();
    if (g.cause == "never_planned" && (!planned_through || g.scheduled_at > *planned_through)) {
      return Status::Ok();
    }
    if (w.reported.insert(ReportedKey(g.RunKey(), g.cause)).second) fresh.push_back(g);
    return Status::Ok();
  });
  if (!scanned.ok()) return scanned;
  w.last_pass = now;
  if (full) w.last_full = now;

  // Recorded in batches: after a long outage a pass may find hundreds of
  // thousands of gaps, and a transaction (an fsync) per gap would keep the
  // serve loop, and a SIGTERM, waiting for many minutes.
  const std::string tzdata = TzdataVersion();
  const auto age_of = [&](const Gap& g) {
    return std::chrono::floor<std::chrono::seconds>(now) - g.scheduled_at;
  };
  std::map<std::string, int> by_cause;
  int backfilled = 0;
  int awaiting = 0;
  int logged = 0;
  // Gaps not recorded (a store error, a stop) are not reported yet: the
  // next pass finds them again.
  const auto unreported_from = [&](std::size_t begin) {
    for (std::size_t i = begin; i < fresh.size(); ++i) {
      w.reported.erase(ReportedKey(fresh[i].RunKey(), fresh[i].cause));
    }
  };
  for (std::size_t begin = 0; begin < fresh.size(); begin += kGapBatch) {
    if (stop.stop_requested()) {
      unreported_from(begin);
      return Status::Ok();
    }
    const std::size_t end = std::min(fresh.size(), begin + kGapBatch);
    // Never-planned and misfired keys are recovered: at once when young,
    // else they wait for an operator. Other causes need an operator anyway.
    std::vector<std::string> action(end - begin);
    std::vector<std::optional<int64_t>> run_id(end - begin);
    // Three groups, one store call each: young gaps run at once; older
    // ones, and keys dated from start_date before the job existed however
    // young (trying a new job is an operator's decision), wait.
    enum class Group { kYoung, kOld, kBeforeRecorded };
    const auto group_of = [&](const Gap& g) {
      if (g.before_recorded) return Group::kBeforeRecorded;
      return age_of(g) <= job.backfill.auto_within ? Group::kYoung : Group::kOld;
    };
    for (Group group : {Group::kYoung, Group::kOld, Group::kBeforeRecorded}) {
      const bool young = group == Group::kYoung;
      store::QueueKeysParams q;
      q.job = job.name;
      q.as = young ? ledger::RunState::kPending : ledger::RunState::kAwaitingApproval;
      q.event_type = young ? std::string(ledger::event::kBackfill) : "";
      q.actor = kActor;
      q.now = store::ToInstant(now);
      std::vector<std::size_t> index;  // into fresh, of q.keys
      for (std::size_t i = begin; i < end; ++i) {
        const Gap& g = fresh[i];
        if (g.cause != "never_planned" && g.cause != "misfired") continue;
        if (group_of(g) != group) continue;
        q.keys.push_back(g.ToQueueKey(tzdata));
        index.push_back(i);
      }
      if (q.keys.empty()) continue;
      q.reason = group == Group::kYoung ? "gap within backfill.auto_within"
                 : group == Group::kOld
                     ? "gap older than backfill.auto_within"
                     : fmt::format("dated from start_date {}, before the job was added",
                                   job.start_date ? FormatDate(*job.start_date) : "");
      auto queued = store_.RunQueueKeys(q);
      if (!queued.ok()) {
        unreported_from(begin);
        return queued.status();
      }
      // `queued` holds the ids of the keys it moved, in key order; the
      // keys it left alone are named.
      const std::set<std::string> left(queued->left_alone.begin(), queued->left_alone.end());
      std::size_t next = 0;
      for (std::size_t i : index) {
        const Gap& g = fresh[i];
        if (left.count(g.RunKey()) > 0 || next >= queued->queued.size()) continue;
        action[i - begin] = young ? "backfilled" : "awaiting_approval";
        run_id[i - begin] = queued->queued[next++];
        // Waiting for approval is this same gap, not a new one.
        if (!young) w.reported.insert(ReportedKey(g.RunKey(), "awaiting_approval"));
        ++(young ? backfilled : awaiting);
      }
    }
    std::vector<store::EventRecord> events;
    events.reserve(end - begin);
    for (std::size_t i = begin; i < end; ++i) {
      const Gap& g = fresh[i];
      store::EventRecord e;
      e.at = store::ToInstant(now);
      e.type = std::string(ledger::event::kGapFound);
      e.job = job.name;
      e.run_id = run_id[i - begin] ? run_id[i - begin] : g.run_id;
      e.run_key = g.RunKey();
      e.actor = kActor;
      nlohmann::json details = {{"cause", g.cause},
                                {"business_date", g.business_date},
                                {"scheduled_at", FormatUtc(g.scheduled_at)}};
      if (!action[i - begin].empty()) details["action"] = action[i - begin];
      if (g.before_recorded) details["before_recorded"] = true;
      e.details = details.dump();
      events.push_back(std::move(e));
    }
    if (Status s = store_.EventAppendAll(events); !s.ok()) {
      // Keys queued above stay queued; their gap_found is written when the
      // next pass finds them (as awaiting approval, or not at all once run).
      unreported_from(begin);
      return s;
    }
    for (std::size_t i = begin; i < end; ++i) {
      const Gap& g = fresh[i];
      ++by_cause[g.cause];
      if (stats) ++stats->new_gaps;
      if (logged++ >= kGapsLoggedPerPass) continue;
      const std::string& a = action[i - begin];
      spdlog::warn("scanner: gap {} ({}), scheduled {}{}", g.RunKey(), g.cause,
                   FormatUtc(g.scheduled_at),
                   a == "backfilled"          ? "; backfilled"
                   : a == "awaiting_approval" ? "; awaits approval (cronledger approve or backfill)"
                                              : "");
    }
  }
  if (stats) {
    stats->backfilled += backfilled;
    stats->awaiting_approval += awaiting;
  }
  if (logged > kGapsLoggedPerPass) {
    std::string causes;
    for (const auto& [cause, n] : by_cause) {
      causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", n, cause);
    }
    spdlog::warn(
        "scanner: job {}: {} new gap(s) in this pass ({}): {} backfilled, {} await approval; "
        "the first {} are logged above, all are gap_found events (cronledger gaps --job {})",
        job.name, fresh.size(), causes, backfilled, awaiting, kGapsLoggedPerPass, job.name);
  }
  return Status::Ok();
}

}  // namespace cronledger::engine
