#include "engine/expected_runs.h"

#include <algorithm>
#include <cstdlib>

namespace cronledger::engine {

using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_days;
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
  if (versions.empty()) return Status::Ok();
  auto current = cache.Get(versions.back());
  if (!current.ok()) return current.status();
  const auto start = (*current)->start_date;
  const std::string start_date = start ? FormatDate(*start) : "";
  // One occurrence object for the whole walk: its strings and partition
  // list keep their storage from one occurrence to the next.
  ExpectedOccurrence e;
  const auto walk = [&](const store::JobVersion& version, const VersionedSchedule& vs,
                        sys_seconds from, sys_seconds to, bool before_recorded) -> Status {
    const Schedule& schedule = vs.schedule;
    e.version = &version;
    e.schedule = &schedule;
    e.before_recorded = before_recorded;
    for (auto occ = schedule.Next(from); occ && occ->utc <= to; occ = schedule.Next(occ->utc)) {
      e.business_date = FormatDate(schedule.BusinessDate(*occ));
      if (e.business_date < start_date) continue;
      e.occurrence = *occ;
      e.period = schedule.Period(*occ, vs.key);
      e.partitions.clear();
      // Before the job was recorded, its first members are the ones
      // expected: nothing says which partitions it would have had then.
      const sys_seconds at = before_recorded ? FirstMemberAt(history) : occ->utc;
      for (const auto& interval : history) {
        if (ActiveAt(interval, at)) e.partitions.push_back(interval.partition);
      }
      if (Status s = fn(e); !s.ok()) return s;
    }
    return Status::Ok();
  };

  if (start && !history.empty()) {
    // The dates from start_date to the job's first recorded instant, judged
    // by its first version. The walk starts early enough for any date
    // offset; dates before start_date are passed over.
    auto first = cache.Get(versions.front());
    if (!first.ok()) return first.status();
    const int offset = std::abs((*first)->schedule.options().date_offset_days);
    const sys_seconds earliest = sys_days(*start) - days{offset + 2};
    const sys_seconds from = std::max(after, earliest);
    const sys_seconds to = std::min(until, versions.front().effective_from - seconds{1});
    if (from < to) {
      if (Status s = walk(versions.front(), **first, from, to, true); !s.ok()) return s;
    }
  }
  for (std::size_t i = 0; i < versions.size(); ++i) {
    const sys_seconds v_begin = versions[i].effective_from;
    const sys_seconds v_end =
        i + 1 < versions.size() ? versions[i + 1].effective_from : sys_seconds::max();
    if (v_end <= after + seconds{1} || v_begin > until) continue;
    auto vs = cache.Get(versions[i]);
    if (!vs.ok()) return vs.status();
    const sys_seconds from = std::max(after, v_begin - seconds{1});
    const sys_seconds to = std::min(until, v_end - seconds{1});
    if (Status s = walk(versions[i], **vs, from, to, false); !s.ok()) return s;
  }
  return Status::Ok();
}

sys_seconds FirstMemberAt(const std::vector<store::PartitionInterval>& history) {
  sys_seconds first = sys_seconds::max();
  for (const auto& interval : history) first = std::min(first, interval.active_from);
  return first;
}

}  // namespace cronledger::engine
