#ifndef CRONLEDGER_SCHEDULE_WALL_SEARCH_H_
#define CRONLEDGER_SCHEDULE_WALL_SEARCH_H_

#include <chrono>
#include <optional>

#include "schedule/cron_fields.h"

namespace cronledger::schedule {

// Wall-clock time: a civil date and time with no zone, counted in seconds
// like std::chrono::local_seconds.
using WallTime = std::chrono::local_seconds;

// The first wall time >= `from` that matches every field, or nullopt if there
// is none at or before `limit`. Jumps field by field (month, day, hour,
// minute, second); never steps minute by minute.
std::optional<WallTime> NextWallMatch(const CronFields& fields, WallTime from,
                                      WallTime limit);

}  // namespace cronledger::schedule

#endif  // CRONLEDGER_SCHEDULE_WALL_SEARCH_H_
