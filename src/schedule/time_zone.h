#ifndef CRONLEDGER_SCHEDULE_TIME_ZONE_H_
#define CRONLEDGER_SCHEDULE_TIME_ZONE_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cronledger/status.h"

namespace date {
class time_zone;
}

namespace cronledger::schedule {

// An IANA time zone from the system's tz database, seen as a sequence of
// segments of constant UTC offset.
//
// The zone files carry explicit transitions up to 2037 and a POSIX TZ rule
// for the years after; date/tz reads only the former, so past the last
// explicit transition this class applies the file's rule itself. Immutable
// and thread-safe.
class TimeZone {
 public:
  // A maximal span [begin, end) of constant offset (local = utc + offset).
  struct Segment {
    std::chrono::sys_seconds begin;
    std::chrono::sys_seconds end;
    std::chrono::seconds offset;
  };

  // Loads `name` ("Asia/Seoul"). An unknown name is kInvalidArgument with up
  // to three close names suggested.
  static Result<TimeZone> Load(std::string_view name);

  // The segment containing `t`.
  Segment SegmentAt(std::chrono::sys_seconds t) const;

  const std::string& name() const { return name_; }

  ~TimeZone();
  TimeZone(const TimeZone&);
  TimeZone& operator=(const TimeZone&);
  TimeZone(TimeZone&&) noexcept;
  TimeZone& operator=(TimeZone&&) noexcept;

 private:
  struct Rule;
  TimeZone(std::string name, const date::time_zone* zone, std::shared_ptr<const Rule> rule);

  std::string name_;
  const date::time_zone* zone_;
  std::shared_ptr<const Rule> rule_;  // null when the zone has no DST rule
};

// Up to `max` known zone names closest to `name` (edit distance, then a
// matching last component: "Seoul" suggests "Asia/Seoul").
std::vector<std::string> SuggestZones(std::string_view name, std::size_t max = 3);

// The tzdata version from the zone directory ("2025b"), or "unknown".
std::string ReadTzdataVersion();

}  // namespace cronledger::schedule

#endif  // CRONLEDGER_SCHEDULE_TIME_ZONE_H_
