#ifndef CRONLEDGER_SCHEDULE_CRON_PARSER_H_
#define CRONLEDGER_SCHEDULE_CRON_PARSER_H_

#include <cstddef>
#include <string_view>

#include "cronledger/status.h"
#include "schedule/cron_fields.h"

namespace cronledger::schedule {

// Longer expressions are rejected before parsing.
inline constexpr std::size_t kMaxExpressionLength = 256;

// Parses a 5- or 6-field cron expression or an @macro (docs/schedule.md).
// Errors are kInvalidArgument and name the field, the token and its 1-based
// column, numbering fields as the user wrote them, e.g.
//   day-of-week: "8" is out of range 0-7 (field 5, column 11)
Result<CronFields> ParseCron(std::string_view expression);

}  // namespace cronledger::schedule

#endif  // CRONLEDGER_SCHEDULE_CRON_PARSER_H_
