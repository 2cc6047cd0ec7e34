#include "schedule/wall_search.h"

#include <bit>
#include <cstdint>

#include <date/date.h>

#include "schedule/day_matcher.h"

namespace cronledger::schedule {
namespace {

constexpr int kNone = -1;

// Lowest set bit of `mask` at or above `from`, or kNone.
int NextBit(uint64_t mask, int from) {
  if (from >= 64) return kNone;
  const uint64_t rest = mask & (~uint64_t{0} << from);
  return rest ? std::countr_zero(rest) : kNone;
}

}  // namespace

std::optional<WallTime> NextWallMatch(const CronFields& f, WallTime from, WallTime limit) {
  using std::chrono::seconds;
  const auto from_days = date::floor<date::days>(date::local_seconds{from.time_since_epoch()});
  const date::year_month_day ymd{from_days};
  int year = static_cast<int>(ymd.year());
  int month = static_cast<int>(static_cast<unsigned>(ymd.month()));
  int day = static_cast<int>(static_cast<unsigned>(ymd.day()));
  const auto sod = (date::local_seconds{from.time_since_epoch()} - from_days).count();
  int hour = static_cast<int>(sod / 3600);
  int minute = static_cast<int>(sod / 60 % 60);
  int second = static_cast<int>(sod % 60);

  const auto limit_days =
      date::floor<date::days>(date::local_seconds{limit.time_since_epoch()});
  const date::year_month_day limit_ymd{limit_days};
  const int limit_year = static_cast<int>(limit_ymd.year());
  const int limit_month = static_cast<int>(static_cast<unsigned>(limit_ymd.month()));

  int cached_year = 0;
  int cached_month = 0;
  uint32_t day_mask = 0;

  for (;;) {
    if (year > limit_year || (year == limit_year && month > limit_month)) return std::nullopt;
    if (!(f.months & (uint32_t{1} << month))) {
      const int next = NextBit(f.months, month + 1);
      if (next == kNone) {
        ++year;
        month = NextBit(f.months, 1);
      } else {
        month = next;
      }
      day = 1;
      hour = minute = second = 0;
      continue;
    }
    if (year != cached_year || month != cached_month) {
      day_mask = MatchingDays(f, year, static_cast<unsigned>(month));
      cached_year = year;
      cached_month = month;
    }
    const int matching_day = NextBit(day_mask, day);
    if (matching_day == kNone) {
      if (++month > 12) {
        month = 1;
        ++year;
      }
      day = 1;
      hour = minute = second = 0;
      continue;
    }
    if (matching_day != day) {
      day = matching_day;
      hour = minute = second = 0;
    }
    const int matching_hour = NextBit(f.hours, hour);
    if (matching_hour == kNone) {
      ++day;
      hour = minute = second = 0;
      continue;
    }
    if (matching_hour != hour) {
      hour = matching_hour;
      minute = second = 0;
    }
    const int matching_minute = NextBit(f.minutes, minute);
    if (matching_minute == kNone) {
      ++hour;
      minute = second = 0;
      continue;
    }
    if (matching_minute != minute) {
      minute = matching_minute;
      second = 0;
    }
    const int matching_second = NextBit(f.seconds, second);
    if (matching_second == kNone) {
      ++minute;
      second = 0;
      continue;
    }
    second = matching_second;

    const date::local_days days{date::year{year} / month / day};
    const WallTime found{days.time_since_epoch() +
                         seconds{hour * 3600 + minute * 60 + second}};
    if (found > limit) return std::nullopt;
    return found;
  }
}

}  // namespace cronledger::schedule
