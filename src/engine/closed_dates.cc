#include "engine/closed_dates.h"

#include <array>
#include <string_view>

#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

// Causes that count as missing on a closed date (docs/alerts.md, missing_runs).
constexpr std::array<std::string_view, 3> kMissingCauses = {"never_planned", "misfired",
                                                            "awaiting_approval"};

}  // namespace

Result<std::map<std::string, MissingOnDate>> MissingByClosedDate(const config::JobConfig& job,
                                                                 store::Store& store,
                                                                 Clock::TimePoint now,
                                                                 std::size_t max_keys) {
  std::map<std::string, MissingOnDate> out;
  auto schedule = Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor());
  if (!schedule.ok()) return schedule.status();
  const sys_seconds now_s = std::chrono::floor<seconds>(now);
  // A date is closed once its last occurrence is older than max_lag. Business
  // dates follow the occurrences in order, so every date before that of the
  // first occurrence after now - max_lag is closed (every date, when there
  // is no such occurrence: only due keys are scanned anyway).
  const sys_seconds closed_before = now_s - job.alert.max_lag;
  sys_days through = std::chrono::floor<days>(now_s) + days(366);
  if (auto next = schedule->Next(closed_before)) {
    through = sys_days{schedule->BusinessDate(*next)} - days(1);
  }
  const sys_days from = std::chrono::floor<days>(now_s - job.backfill.horizon);
  if (from > through) return out;
  GapScanParams p;
  p.from = std::chrono::year_month_day{from};
  p.to = std::chrono::year_month_day{through};
  p.now = store::ToInstant(now);
  GapScanner scanner(store);
  Status s = scanner.Scan(job, p, [&](const Gap& gap) {
    for (std::string_view cause : kMissingCauses) {
      if (gap.cause != cause) continue;
      MissingOnDate& date = out[gap.business_date];
      ++date.missing;
      ++date.causes[gap.cause];
      if (date.run_keys.size() < max_keys) date.run_keys.push_back(gap.RunKey());
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace cronledger::engine
