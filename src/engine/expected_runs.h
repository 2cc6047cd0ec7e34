// The run keys a job is expected to have, computed from its definition
// versions and its partition membership history alone (docs/gaps.md: the past
// is judged by the version then in force, a partition is expected only
// while it is a member). The planner plans exactly these; the gap scanner
// recomputes them to check the ledger independently of what was planned.
#ifndef CRONLEDGER_ENGINE_EXPECTED_RUNS_H_
#define CRONLEDGER_ENGINE_EXPECTED_RUNS_H_

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cronledger/schedule.h"
#include "cronledger/status.h"
#include "engine/job_definition.h"
#include "store/store.h"

namespace cronledger::engine {

// Stored definitions parsed once per (job, version).
class ScheduleCache {
 public:
  Result<const VersionedSchedule*> Get(const store::JobVersion& v);

 private:
  std::map<std::pair<std::string, int>, VersionedSchedule> schedules_;
};

// One expected occurrence: a run key per partition active at its instant.
// Valid during the call it is passed to (one object is reused for all).
struct ExpectedOccurrence {
  const store::JobVersion* version = nullptr;
  const Schedule* schedule = nullptr;
  Occurrence occurrence;
  std::string period;
  std::string business_date;  // YYYY-MM-DD
  // In the order of the history; views of its partition names.
  std::vector<std::string_view> partitions;
  // Dated from the job's start_date but scheduled before the job was first
  // recorded: expected, yet never planned or run without an operator.
  bool before_recorded = false;
};

// Calls `fn` for every occurrence in (after, until] of the version in force
// at its instant (`versions` oldest first; each from its effective_from to
// the next one's), in time order, with the partitions of `history` active at
// that instant. An occurrence before the first version is expected only
// when the current version has a start_date and its business date is on or
// after it (before_recorded: judged by the first version, with the job's
// first members); a business date before start_date is never expected.
// Stops at the first error `fn` returns.
Status ForEachExpected(const std::vector<store::JobVersion>& versions,
                       const std::vector<store::PartitionInterval>& history,
                       std::chrono::sys_seconds after, std::chrono::sys_seconds until,
                       ScheduleCache& cache,
                       const std::function<Status(const ExpectedOccurrence&)>& fn);

// When the job's first partitions were recorded (max() for none).
std::chrono::sys_seconds FirstMemberAt(const std::vector<store::PartitionInterval>& history);

// Whether the membership interval covers `t` ([active_from, active_to)).
bool ActiveAt(const store::PartitionInterval& interval, std::chrono::sys_seconds t);

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_EXPECTED_RUNS_H_
