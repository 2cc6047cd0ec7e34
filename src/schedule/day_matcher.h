#ifndef CRONLEDGER_SCHEDULE_DAY_MATCHER_H_
#define CRONLEDGER_SCHEDULE_DAY_MATCHER_H_

#include <cstdint>

#include "schedule/cron_fields.h"

namespace cronledger::schedule {

// The days of month `month` (1-12) of `year` that the day-of-month and
// day-of-week fields select, as a mask with bit d set for day d (1-31),
// applying the classic either-or rule and the Quartz extensions. Ignores the
// month field.
uint32_t MatchingDays(const CronFields& fields, int year, unsigned month);

// Number of days in the month.
unsigned DaysInMonth(int year, unsigned month);

// Day of the week of the first of the month, Sunday = 0.
unsigned WeekdayOfFirst(int year, unsigned month);

}  // namespace cronledger::schedule

#endif  // CRONLEDGER_SCHEDULE_DAY_MATCHER_H_
