#include "schedule/day_matcher.h"

#include <date/date.h>

namespace cronledger::schedule {
namespace {

constexpr uint32_t DaysUpTo(unsigned dim) {
  // Bits 1..dim (computed in 64 bits: dim + 1 may be 32).
  return static_cast<uint32_t>(((uint64_t{1} << (dim + 1)) - 1) & ~uint64_t{1});
}

// Weekday (Sunday = 0) of day `d` given the weekday of the first.
constexpr unsigned WeekdayOf(unsigned first_weekday, unsigned d) {
  return (first_weekday + d - 1) % 7;
}

bool IsBusinessDay(unsigned weekday) { return weekday != 0 && weekday != 6; }

// Days whose weekday is in `weekdays` (bits 0-6).
uint32_t DaysWithWeekdays(uint32_t weekdays, unsigned first_weekday, unsigned dim) {
  // A 7-day pattern starting on day 1, replicated over five weeks.
  uint32_t week = 0;
  for (unsigned i = 0; i < 7; ++i) {
    if (weekdays & (uint32_t{1} << ((first_weekday + i) % 7))) week |= uint32_t{1} << i;
  }
  const uint64_t all = uint64_t{week} | uint64_t{week} << 7 | uint64_t{week} << 14 |
                      uint64_t{week} << 21 | uint64_t{week} << 28;
  return static_cast<uint32_t>(all << 1) & DaysUpTo(dim);
}

// The business day (Mon-Fri) nearest to day n, within the month (Quartz nW).
unsigned NearestWeekday(unsigned n, unsigned first_weekday, unsigned dim) {
  const unsigned wd = WeekdayOf(first_weekday, n);
  if (wd == 6) return n == 1 ? 3 : n - 1;    // Saturday: Friday, or Monday the 3rd
  if (wd == 0) return n == dim ? n - 2 : n + 1;  // Sunday: Monday, or Friday before
  return n;
}

}  // namespace

unsigned DaysInMonth(int year, unsigned month) {
  return static_cast<unsigned>(
      date::year_month_day_last(date::year{year}, date::month_day_last(date::month{month}))
          .day());
}

unsigned WeekdayOfFirst(int year, unsigned month) {
  return date::weekday(date::year{year} / date::month{month} / 1).c_encoding();
}

uint32_t MatchingDays(const CronFields& f, int year, unsigned month) {
  const unsigned dim = DaysInMonth(year, month);
  const unsigned first = WeekdayOfFirst(year, month);

  uint32_t by_day = f.days & DaysUpTo(dim);
  if (f.last_day) by_day |= uint32_t{1} << dim;
  for (unsigned n = 1; n < dim; ++n) {
    if (f.days_before_last & (uint32_t{1} << n)) by_day |= uint32_t{1} << (dim - n);
  }
  if (f.nearest_weekday) {
    for (unsigned n = 1; n <= dim; ++n) {
      if (f.nearest_weekday & (uint32_t{1} << n)) {
        by_day |= uint32_t{1} << NearestWeekday(n, first, dim);
      }
    }
  }
  if (f.last_weekday_of_month) {
    unsigned d = dim;
    while (!IsBusinessDay(WeekdayOf(first, d))) --d;
    by_day |= uint32_t{1} << d;
  }

  uint32_t by_weekday = DaysWithWeekdays(f.weekdays, first, dim);
  for (unsigned k = 1; k <= 5; ++k) {
    for (unsigned wd = 0; wd < 7; ++wd) {
      if (!(f.nth_weekday[k] & (uint32_t{1} << wd))) continue;
      const unsigned d = 1 + (wd + 7 - first) % 7 + 7 * (k - 1);
      if (d <= dim) by_weekday |= uint32_t{1} << d;
    }
  }
  for (unsigned wd = 0; wd < 7; ++wd) {
    if (!(f.last_weekday & (uint32_t{1} << wd))) continue;
    const unsigned last_wd = WeekdayOf(first, dim);
    by_weekday |= uint32_t{1} << (dim - (last_wd + 7 - wd) % 7);
  }

  if (f.days_restricted && f.weekdays_restricted) return by_day | by_weekday;
  return by_day & by_weekday;
}

}  // namespace cronledger::schedule
