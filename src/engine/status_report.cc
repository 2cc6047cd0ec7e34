#include "engine/status_report.h"

#include <algorithm>

#include "ledger/names.h"

namespace cronledger::engine {

using std::chrono::seconds;
using std::chrono::sys_seconds;

std::optional<Occurrence> PreviousOccurrence(const Schedule& schedule, sys_seconds t) {
  // Widen the window until it holds an occurrence: cheap for frequent
  // schedules (a minute-long window) and still finds a yearly one. The last
  // window is exactly the limit (quadrupling alone stops near two years,
  // short of a leap-day schedule's last firing).
  constexpr seconds kLimit{5LL * 366 * 86400};
  for (seconds window{60};; window = std::min(window * 4, kLimit)) {
    std::optional<Occurrence> last;
    for (auto occ = schedule.Next(t - window); occ && occ->utc <= t;
         occ = schedule.Next(occ->utc)) {
      last = occ;
    }
    if (last) return last;
    if (window >= kLimit) return std::nullopt;
  }
}

Result<StatusReport> BuildStatus(const config::Config& config, store::Store& store,
                                 Clock::TimePoint now_tp) {
  StatusReport report;
  const auto now = std::chrono::floor<seconds>(now_tp);
  auto paused_all = store.IsPausedAll();
  if (!paused_all.ok()) return paused_all.status();
  auto jobs = store.JobList();
  if (!jobs.ok()) return jobs.status();

  for (const auto& job : config.jobs) {
    auto schedule = Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor());
    if (!schedule.ok()) return schedule.status();
    JobStatus s;
    s.name = job.name;
    s.timezone = job.timezone;
    const store::JobRecord* record = nullptr;
    for (const auto& j : *jobs) {
      if (j.name == job.name) record = &j;
    }
    s.in_ledger = record != nullptr;
    s.state = (*paused_all || (record && record->paused)) ? "paused" : "active";
    if (record && record->planned_through) s.planned_through = FormatUtc(*record->planned_through);

    auto current = PreviousOccurrence(*schedule, now);
    if (!current) current = schedule->Next(now);
    if (current) s.business_date = FormatDate(schedule->BusinessDate(*current));
    if (auto next = schedule->Next(now)) s.next_at = FormatUtc(next->utc);

    if (record) {
      store::StatsParams p;
      p.job = job.name;
      p.business_date = s.business_date;
      p.now = store::ToInstant(now_tp);
      p.horizon_from = now - job.backfill.horizon;
      auto stats = store.StatsGet(p);
      if (!stats.ok()) return stats.status();
      const auto count = [&](const char* state) {
        auto it = stats->by_state.find(state);
        return it == stats->by_state.end() ? 0 : it->second;
      };
      s.succeeded = count("succeeded");
      s.failed = count("failed");
      s.unknown = count("unknown");
      s.in_progress = count("pending") + count("running");
      int misfired = 0;
      int waived_skips = 0;
      for (const auto& [reason, n] : stats->by_reason) {
        auto r = ledger::ParseSkipReason(reason);
        if (r && !ledger::IsWaived(*r)) {
          misfired += n;
        } else if (r) {
          waived_skips += n;
        }
      }
      s.waived = waived_skips + count("cancelled");
      s.missing = misfired + count("awaiting_approval");
      s.expected = s.succeeded + s.failed + s.unknown + s.waived + s.in_progress + s.missing;
      if (stats->last_success_at) {
        s.last_success_at =
            FormatUtc(std::chrono::floor<seconds>(*stats->last_success_at));
        s.last_success_business_date = stats->last_success_business_date;
      }
      if (stats->oldest_open_scheduled_at) {
        s.lag_seconds = std::max<int64_t>(0, (now - *stats->oldest_open_scheduled_at).count());
      }
      s.in_flight = stats->in_flight;
      for (const auto& step : job.steps) {
        auto it = stats->steps.find(step.name);
        s.steps.emplace_back(step.name, it == stats->steps.end() ? std::map<std::string, int>{}
                                                                 : it->second);
      }
      s.unknown_total = stats->unknown_total;
      s.expired_leases = stats->expired_leases;
    }
    report.jobs.push_back(std::move(s));
  }
  return report;
}

}  // namespace cronledger::engine
