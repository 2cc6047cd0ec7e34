#include "engine/gap_scanner.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "engine/ledger_days.h"
#include "ledger/names.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

// Why a due key whose run is `run` is a gap or waived; empty when it is
// neither (succeeded, or in flight and not stuck).
std::pair<std::string_view, bool> Classify(const store::RunRecord& run, sys_seconds now,
                                           seconds max_lag) {
  using ledger::RunState;
  switch (run.state) {
    case RunState::kSucceeded: return {"", false};
    case RunState::kPending:
    case RunState::kRunning: {
      // In flight is not a gap until it has taken longer than the job's
      // max_lag since it was due. A run queued late on purpose (backfill,
      // retry, approve, held by a pause) is due from when it was queued:
      // while pending, that is its last update; once running, its lease
      // and the reaper watch it.
      if (!run.misfire_exempt) {
        return {now - run.scheduled_at > max_lag ? "stuck" : "", false};
      }
      if (run.state == RunState::kRunning) return {"", false};
      const auto queued = std::max(run.scheduled_at, std::chrono::floor<seconds>(run.updated_at));
      return {now - queued > max_lag ? "stuck" : "", false};
    }
    case RunState::kSkipped:
      if (!run.reason || *run.reason == ledger::SkipReason::kMisfired) return {"misfired", false};
      return {ledger::Name(*run.reason), true};
    case RunState::kCancelled: return {"cancelled", true};
    case RunState::kFailed:
    case RunState::kUnknown:
    case RunState::kAwaitingApproval: return {ledger::Name(run.state), false};
  }
  return {"", false};
}

}  // namespace

Status GapScanner::Scan(const config::JobConfig& job, const GapScanParams& p,
                        const std::function<Status(const Gap&)>& report) {
  GapScanParams due_only = p;
  due_only.include_not_due = false;
  Gap gap;  // reused: most keys are not gaps, and gaps keep its storage
  gap.job = job.name;
  return ForEachKey(job, due_only, [&](const ExpectedKey& k) -> Status {
    if (k.cause.empty() || (k.waived && !p.include_waived)) return Status::Ok();
    static_cast<KeyAt&>(gap) = k;
    gap.cause = k.cause;
    gap.waived = k.waived;
    gap.run_id = k.run ? std::optional<int64_t>(k.run->id) : std::nullopt;
    return report(gap);
  });
}

Status GapScanner::ForEachKey(const config::JobConfig& job, const GapScanParams& p,
                              const std::function<Status(const ExpectedKey&)>& fn) {
  auto versions = store_.JobVersionList(job.name);
  if (!versions.ok()) {
    // A job the ledger has never seen expects nothing yet.
    if (versions.status().code() == StatusCode::kNotFound) return Status::Ok();
    return versions.status();
  }
  if (versions->empty()) return Status::Ok();
  auto history = store_.PartitionHistory(job.name);
  if (!history.ok()) return history.status();

  // Business dates are local dates shifted by date_offset_days: look at
  // instants wide enough to hold every occurrence of the window's dates.
  int max_offset = 0;
  for (const auto& v : *versions) {
    auto vs = schedules_.Get(v);
    if (!vs.ok()) return vs.status();
    max_offset = std::max(max_offset, std::abs((*vs)->schedule.options().date_offset_days));
  }
  const days margin{max_offset + 2};
  const sys_seconds now = std::chrono::floor<seconds>(p.now);
  const sys_seconds after = sys_days(p.from) - margin - seconds{1};
  const sys_seconds window_end = sys_days(p.to) + margin;
  const sys_seconds until = p.include_not_due ? window_end : std::min(now, window_end);
  if (after >= until) return Status::Ok();
  const std::string from = FormatDate(p.from);
  const std::string to = FormatDate(p.to);

  // The ledger side is read once, in business-date order, as the expected
  // keys reach each date; one key object serves every key.
  LedgerDays ledger(store_, job.name, from, to);
  ExpectedKey key;
  // A key is its partition's first occurrence of the period; later ones
  // (key = date over an hourly schedule, say) are the planner's
  // deduplicated occurrences, not keys. Occurrences come in time order, so
  // a partition's occurrences of one period are consecutive; a partition
  // that joins mid-period has its key at its first occurrence as a member.
  std::unordered_map<std::string, std::string> last_period;
  return ForEachExpected(
      *versions, *history, after, until, schedules_,
      [&](const ExpectedOccurrence& e) -> Status {
        if (e.business_date < from || e.business_date > to) return Status::Ok();
        auto runs = ledger.Get(e.business_date);
        if (!runs.ok()) return runs.status();
        key.period = e.period;
        key.business_date = e.business_date;
        key.scheduled_at = e.occurrence.utc;
        key.job_version = e.version->version;
        key.local_time = FormatLocal(e.occurrence);
        key.before_recorded = e.before_recorded;
        key.due = e.occurrence.utc <= now;
        for (const std::string_view partition : e.partitions) {
          std::string& last = last_period[std::string(partition)];
          if (last == e.period) continue;
          last = e.period;
          key.partition.assign(partition);
          key.run = (*runs)->Find(partition, e.period);
          key.waived = false;
          if (!key.due) {
            key.cause.clear();
          } else if (!key.run) {
            key.cause.assign("never_planned");
          } else {
            const auto [cause, waived] = Classify(*key.run, now, job.alert.max_lag);
            key.cause.assign(cause);
            key.waived = waived;
          }
          if (Status s = fn(key); !s.ok()) return s;
        }
        return Status::Ok();
      });
}

}  // namespace cronledger::engine
