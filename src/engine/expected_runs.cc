#include "engine/expected_runs.h"

#include <algorithm>

namespace cronledger::engine {

using std::chrono::seconds;
using std::chrono::sys_seconds;

Result<const VersionedSchedule*> ScheduleCache::Get(const store::JobVersion& v) {
  const auto key = std::make_pair(v.job, v.version);
  auto it = schedules_.find(key);
  if (it == schedules_.end()) {
    auto s = ScheduleFromDefinition(v.definition);
    if (!s.ok()) return s.status();
    it = schedules_.emplace(key, std::move(*s)).first;
  }
  return &it->second;
}

bool ActiveAt(const store::PartitionInterval& i, sys_seconds t) {
  return i.active_from <= t && (!i.active_to || t < *i.active_to);
}

Status ForEachExpected(const std::vector<store::JobVersion>& versions,
                       const std::vector<store::PartitionInterval>& history, sys_seconds after,
                       sys_seconds until, ScheduleCache& cache,
                       const std::function<Status(const ExpectedOccurrence&)>& fn) {
  for (std::size_t i = 0; i < versions.size(); ++i) {
    const sys_seconds v_begin = versions[i].effective_from;
    const sys_seconds v_end =
        i + 1 < versions.size() ? versions[i + 1].effective_from : sys_seconds::max();
    if (v_end <= after + seconds{1} || v_begin > until) continue;
    auto vs = cache.Get(versions[i]);
    if (!vs.ok()) return vs.status();
    const Schedule& schedule = (*vs)->schedule;
    const sys_seconds from = std::max(after, v_begin - seconds{1});
    const sys_seconds to = std::min(until, v_end - seconds{1});
    // One occurrence object for the whole walk: its strings and partition
    // list keep their storage from one occurrence to the next.
    ExpectedOccurrence e;
    e.version = &versions[i];
    e.schedule = &schedule;
    for (auto occ = schedule.Next(from); occ && occ->utc <= to; occ = schedule.Next(occ->utc)) {
      e.occurrence = *occ;
      e.period = schedule.Period(*occ, (*vs)->key);
      e.business_date = FormatDate(schedule.BusinessDate(*occ));
      e.partitions.clear();
      for (const auto& interval : history) {
        if (ActiveAt(interval, occ->utc)) e.partitions.push_back(interval.partition);
      }
      if (Status s = fn(e); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

}  // namespace cronledger::engine
