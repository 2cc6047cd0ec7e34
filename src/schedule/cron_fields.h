// The parsed form of a cron expression: one bit mask per field.
#ifndef CRONLEDGER_SCHEDULE_CRON_FIELDS_H_
#define CRONLEDGER_SCHEDULE_CRON_FIELDS_H_

#include <array>
#include <cstdint>

namespace cronledger::schedule {

// Bit i of a mask is set when value i matches.
struct CronFields {
  uint64_t seconds = 1;    // bits 0-59; {0} when the expression has 5 fields
  uint64_t minutes = 0;    // bits 0-59
  uint64_t hours = 0;      // bits 0-23
  uint32_t days = 0;       // bits 1-31: plain days of the month
  uint32_t months = 0;     // bits 1-12
  uint32_t weekdays = 0;   // bits 0-6, Sunday = 0 (7 is folded into 0)

  // Quartz-style business-calendar extensions.
  bool last_day = false;            // L
  uint32_t days_before_last = 0;    // L-n: bit n set (1-30)
  uint32_t nearest_weekday = 0;     // nW: bit n set (1-31)
  bool last_weekday_of_month = false;  // LW
  // d#k: nth_weekday[k] has bit d set (k 1-5).
  std::array<uint32_t, 6> nth_weekday{};
  uint32_t last_weekday = 0;        // dL: bit d set

  // The classic cron rule: when both day fields are restricted, a day
  // matches if either matches; otherwise both must (and an unrestricted
  // field matches every day). A field is unrestricted when it begins with
  // "*", as in Vixie cron.
  bool days_restricted = false;
  bool weekdays_restricted = false;

  // The hour field is a number or a list of numbers (decides the default
  // dst_repeat policy).
  bool hour_fixed = false;
  bool has_seconds_field = false;
};

}  // namespace cronledger::schedule

#endif  // CRONLEDGER_SCHEDULE_CRON_FIELDS_H_
