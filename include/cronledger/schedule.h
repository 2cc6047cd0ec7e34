// Schedules: a cron expression evaluated in a business timezone.
//
// A Schedule turns an expression such as "0 9 * * *" and an IANA zone such
// as "Asia/Seoul" into exact UTC instants, with the DST rules of
// docs/schedule.md. It is a pure value: no clock, no I/O after
// Create() has loaded the zone. Immutable and safe to share between threads.
#ifndef CRONLEDGER_SCHEDULE_H_
#define CRONLEDGER_SCHEDULE_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cronledger/status.h"

namespace cronledger {

// What to do with a wall time that does not exist (spring forward).
enum class DstGapPolicy {
  kShift,  // fire once at the first valid instant after the gap (default)
  kSkip,   // do not fire
};

// What to do with a wall time that exists twice (fall back).
enum class DstRepeatPolicy {
  kFirst,  // fire at the first of the two instants
  kLast,   // fire at the second of the two instants
  kBoth,   // fire at both
};

// The part of the run key that says "when".
enum class PeriodKey {
  kDate,  // the business date, YYYY-MM-DD
  kSlot,  // the local occurrence time with its UTC offset
};

// How DST moved an occurrence away from the wall time the expression named.
enum class DstNote {
  kNone,
  kShifted,   // the wall time did not exist; fired at the end of the gap
  kRepeated,  // the second instant of a wall time that exists twice
};

struct ScheduleOptions {
  DstGapPolicy dst_gap = DstGapPolicy::kShift;
  // Unset: kFirst when the hour field is fixed (a number or a list of
  // numbers), kBoth when it is a wildcard, range or step.
  std::optional<DstRepeatPolicy> dst_repeat;
  // Business date = local date of the occurrence + date_offset_days.
  int date_offset_days = 0;
};

// One instant the schedule fires.
struct Occurrence {
  std::chrono::sys_seconds utc;
  // Local wall time at `utc` is utc + utc_offset.
  std::chrono::seconds utc_offset{0};
  // The wall time the expression named. Equal to local() unless shifted.
  std::chrono::local_seconds nominal;
  DstNote dst = DstNote::kNone;

  std::chrono::local_seconds local() const {
    return std::chrono::local_seconds{utc.time_since_epoch() + utc_offset};
  }
  friend bool operator==(const Occurrence&, const Occurrence&) = default;
};

class Schedule {
 public:
  // Parses `expression` and loads `timezone` from the IANA database.
  // Errors (kInvalidArgument) name the field, token and 1-based column, or
  // the unknown zone with suggestions; an expression that can never fire
  // (e.g. "0 0 30 2 *") is an error too.
  static Result<Schedule> Create(std::string_view expression,
                                 std::string_view timezone,
                                 ScheduleOptions options = {});

  // The first occurrence strictly after `after`, or nullopt when there is
  // none before the year 9999.
  std::optional<Occurrence> Next(std::chrono::sys_seconds after) const;

  // Every occurrence with after < utc <= until, in order.
  std::vector<Occurrence> Between(std::chrono::sys_seconds after,
                                  std::chrono::sys_seconds until) const;

  // The local date of the occurrence shifted by date_offset_days.
  std::chrono::year_month_day BusinessDate(const Occurrence& occurrence) const;

  // The period string under `key`: "2026-11-28" for kDate;
  // "2026-11-28T09:00+09:00" for kSlot ("...T09:00:00+09:00" when the
  // expression has a seconds field).
  std::string Period(const Occurrence& occurrence, PeriodKey key) const;

  // kDate when the schedule fires at most once per local day, else kSlot.
  PeriodKey DefaultKey() const;

  // The dst_repeat policy in force (the option, or the hour-field default).
  DstRepeatPolicy EffectiveDstRepeat() const;

  const std::string& expression() const;
  const std::string& timezone() const;
  const ScheduleOptions& options() const;
  bool has_seconds_field() const;

  struct Impl;

 private:
  explicit Schedule(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// The version of the IANA tz database the schedules use (e.g. "2025b"), read
// from the system's tzdata; "unknown" when it cannot be determined.
std::string TzdataVersion();

// Formats "2026-11-29T00:00:00Z".
std::string FormatUtc(std::chrono::sys_seconds t);
// Formats "2026-11-29T09:00:00+09:00".
std::string FormatLocal(const Occurrence& occurrence);
// Formats "2026-11-29".
std::string FormatDate(std::chrono::year_month_day d);
// Parses RFC 3339 ("2026-11-29T09:00:00+09:00", "...Z", fractional seconds
// allowed and truncated) into UTC.
Result<std::chrono::sys_seconds> ParseRfc3339(std::string_view text);

}  // namespace cronledger

#endif  // CRONLEDGER_SCHEDULE_H_
