// A job's schedule-defining settings as a canonical JSON text: what the
// ledger versions (docs/ledger.md, Job versions: the past is judged by the
// version in force), and how a stored version becomes a Schedule again.
#ifndef CRONLEDGER_ENGINE_JOB_DEFINITION_H_
#define CRONLEDGER_ENGINE_JOB_DEFINITION_H_

#include <chrono>
#include <optional>
#include <string>

#include "config/config.h"
#include "cronledger/schedule.h"

namespace cronledger::engine {

// The schedule, timezone, date_offset_days, start_date, effective key, DST
// policies and partition source of `job`, as JSON with sorted keys. Equal
// settings give equal text.
std::string CanonicalDefinition(const config::JobConfig& job);

// What planning needs from one stored version.
struct VersionedSchedule {
  Schedule schedule;
  PeriodKey key;
  // Only the current version's counts: a job's expected set starts where
  // its definition now says.
  std::optional<std::chrono::year_month_day> start_date = {};
};

// Rebuilds the schedule of a stored definition.
Result<VersionedSchedule> ScheduleFromDefinition(const std::string& definition);

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_JOB_DEFINITION_H_
