// engine::PreviousOccurrence: the most recent occurrence at or before an
// instant, however rare the schedule (within five years).
#include "engine/status_report.h"

#include <gtest/gtest.h>

#include "cronledger/schedule.h"

namespace cronledger::engine {
namespace {

std::chrono::sys_seconds At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

Schedule Make(const char* expr) {
  auto s = Schedule::Create(expr, "UTC", {});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(*s);
}

TEST(PreviousOccurrence, FindsAFrequentSchedulesLastFiring) {
  const auto prev = PreviousOccurrence(Make("*/5 * * * *"), At("2026-11-30T04:37:10Z"));
  ASSERT_TRUE(prev.has_value());
  EXPECT_EQ(prev->utc, At("2026-11-30T04:35:00Z"));
}

TEST(PreviousOccurrence, IncludesAnOccurrenceAtTheInstantItself) {
  const auto prev = PreviousOccurrence(Make("0 9 * * *"), At("2026-11-30T09:00:00Z"));
  ASSERT_TRUE(prev.has_value());
  EXPECT_EQ(prev->utc, At("2026-11-30T09:00:00Z"));
}

// A leap-day schedule last fired almost three years earlier: the search
// must reach back the five years it promises, not stop at about two.
TEST(PreviousOccurrence, FindsALeapDayScheduleYearsBack) {
  const auto prev = PreviousOccurrence(Make("0 12 29 2 *"), At("2026-11-30T00:00:00Z"));
  ASSERT_TRUE(prev.has_value());
  EXPECT_EQ(prev->utc, At("2024-02-29T12:00:00Z"));
}

TEST(PreviousOccurrence, NothingWithinFiveYearsIsNothing) {
  // 2100 is no leap year: 29 February next falls in 2104.
  EXPECT_FALSE(PreviousOccurrence(Make("0 12 29 2 *"), At("2103-12-31T00:00:00Z")).has_value());
}

}  // namespace
}  // namespace cronledger::engine
