#include "cronledger/schedule.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cronledger {
namespace {

using std::chrono::sys_seconds;

sys_seconds At(const std::string& rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.ok()) << rfc3339;
  return t.ok() ? *t : sys_seconds{};
}

Schedule Make(const std::string& expr, const std::string& zone = "UTC",
              ScheduleOptions options = {}) {
  auto s = Schedule::Create(expr, zone, options);
  EXPECT_TRUE(s.ok()) << expr << " " << zone << ": " << s.status().message();
  return std::move(s).value();
}

// The next `n` occurrences after `after`, as UTC strings.
std::vector<std::string> NextN(const Schedule& s, const std::string& after, int n) {
  std::vector<std::string> out;
  auto occ = s.Next(At(after));
  for (int i = 0; i < n && occ; ++i, occ = s.Next(occ->utc)) out.push_back(FormatUtc(occ->utc));
  return out;
}

using V = std::vector<std::string>;

TEST(Schedule, NextIsStrictlyAfter) {
  const Schedule s = Make("0 9 * * *", "Asia/Seoul");
  EXPECT_EQ(NextN(s, "2026-11-29T00:00:00Z", 2),
            (V{"2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"}));
  EXPECT_EQ(NextN(s, "2026-11-28T23:59:59Z", 1), (V{"2026-11-29T00:00:00Z"}));
}

TEST(Schedule, WalksAcrossMonthAndYearEnds) {
  EXPECT_EQ(NextN(Make("30 2 * * *"), "2026-12-30T12:00:00Z", 3),
            (V{"2026-12-31T02:30:00Z", "2027-01-01T02:30:00Z", "2027-01-02T02:30:00Z"}));
  EXPECT_EQ(NextN(Make("0 0 31 * *"), "2026-01-31T00:00:00Z", 3),
            (V{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 12 29 2 *"), "2026-01-01T00:00:00Z", 2),
            (V{"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"}));
}

TEST(Schedule, SecondsField) {
  EXPECT_EQ(NextN(Make("*/20 * * * * *"), "2026-01-01T00:00:50Z", 3),
            (V{"2026-01-01T00:01:00Z", "2026-01-01T00:01:20Z", "2026-01-01T00:01:40Z"}));
  EXPECT_EQ(NextN(Make("30 0 9 * * MON"), "2026-11-29T00:00:00Z", 1),
            (V{"2026-11-30T09:00:30Z"}));
}

TEST(Schedule, EitherDayFieldMatchesWhenBothAreRestricted) {
  // The 1st of the month or any Monday (2026-06: Mondays 1, 8, 15, ...).
  EXPECT_EQ(NextN(Make("0 0 1 * MON"), "2026-05-30T00:00:00Z", 4),
            (V{"2026-06-01T00:00:00Z", "2026-06-08T00:00:00Z", "2026-06-15T00:00:00Z",
               "2026-06-22T00:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 0 13 * FRI"), "2026-11-01T00:00:00Z", 3),
            (V{"2026-11-06T00:00:00Z", "2026-11-13T00:00:00Z", "2026-11-20T00:00:00Z"}));
}

TEST(Schedule, BothDayFieldsMustMatchWhenOneStartsWithStar) {
  // Vixie cron: "*/2" is unrestricted, so odd days that are also Mondays.
  EXPECT_EQ(NextN(Make("0 0 */2 * MON"), "2026-06-01T00:00:00Z", 3),
            (V{"2026-06-15T00:00:00Z", "2026-06-29T00:00:00Z", "2026-07-13T00:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 0 * * MON-FRI"), "2026-11-27T12:00:00Z", 2),
            (V{"2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"}));
}

TEST(Schedule, LastDayAndDaysBeforeLast) {
  EXPECT_EQ(NextN(Make("0 18 L * *"), "2026-01-01T00:00:00Z", 4),
            (V{"2026-01-31T18:00:00Z", "2026-02-28T18:00:00Z", "2026-03-31T18:00:00Z",
               "2026-04-30T18:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 0 L * *"), "2028-02-01T00:00:00Z", 1), (V{"2028-02-29T00:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 0 L-2 * *"), "2026-02-01T00:00:00Z", 2),
            (V{"2026-02-26T00:00:00Z", "2026-03-29T00:00:00Z"}));
}

TEST(Schedule, NearestWeekday) {
  // 2026-11-15 is a Sunday: Monday the 16th. 2026-08-15 is a Saturday: Friday the 14th.
  EXPECT_EQ(NextN(Make("0 9 15W * *"), "2026-11-01T00:00:00Z", 1), (V{"2026-11-16T09:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 9 15W * *"), "2026-08-01T00:00:00Z", 1), (V{"2026-08-14T09:00:00Z"}));
  // 2026-08-01 is a Saturday: 1W does not leave the month, so Monday the 3rd.
  EXPECT_EQ(NextN(Make("0 9 1W * *"), "2026-07-31T00:00:00Z", 1), (V{"2026-08-03T09:00:00Z"}));
  // 2026-05-31 is a Sunday and the last day: Friday the 29th.
  EXPECT_EQ(NextN(Make("0 9 31W * *"), "2026-05-01T00:00:00Z", 1), (V{"2026-05-29T09:00:00Z"}));
  // 31W does not fire in months without a 31st.
  EXPECT_EQ(NextN(Make("0 9 31W * *"), "2026-06-01T00:00:00Z", 1), (V{"2026-07-31T09:00:00Z"}));
  // A weekday stays put: 2026-11-10 is a Tuesday.
  EXPECT_EQ(NextN(Make("0 9 10W * *"), "2026-11-01T00:00:00Z", 1), (V{"2026-11-10T09:00:00Z"}));
}

TEST(Schedule, LastWeekdayOfMonth) {
  // 2026-05-31 Sunday -> 29th; 2026-10-31 Saturday -> 30th; 2026-11-30 Monday.
  EXPECT_EQ(NextN(Make("0 17 LW * *"), "2026-05-01T00:00:00Z", 1), (V{"2026-05-29T17:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 17 LW * *"), "2026-10-01T00:00:00Z", 2),
            (V{"2026-10-30T17:00:00Z", "2026-11-30T17:00:00Z"}));
}

TEST(Schedule, NthAndLastWeekdayOfMonth) {
  // Third Friday of 2026-11 is the 20th, of 2026-12 the 18th.
  EXPECT_EQ(NextN(Make("0 9 * * 5#3"), "2026-11-01T00:00:00Z", 2),
            (V{"2026-11-20T09:00:00Z", "2026-12-18T09:00:00Z"}));
  // Fifth Monday exists only in some months: 2026-11-30, then 2027-03-29.
  EXPECT_EQ(NextN(Make("0 9 * * MON#5"), "2026-11-01T00:00:00Z", 2),
            (V{"2026-11-30T09:00:00Z", "2027-03-29T09:00:00Z"}));
  // Last Friday: 2026-11-27, 2026-12-25. Sunday as 7: last Sunday 2026-11-29.
  EXPECT_EQ(NextN(Make("0 9 * * 5L"), "2026-11-01T00:00:00Z", 2),
            (V{"2026-11-27T09:00:00Z", "2026-12-25T09:00:00Z"}));
  EXPECT_EQ(NextN(Make("0 9 * * 7L"), "2026-11-01T00:00:00Z", 1), (V{"2026-11-29T09:00:00Z"}));
}

TEST(Schedule, MonthNamesAndSteps) {
  EXPECT_EQ(NextN(Make("0 0 1 JAN-DEC/3 *"), "2026-02-01T00:00:00Z", 3),
            (V{"2026-04-01T00:00:00Z", "2026-07-01T00:00:00Z", "2026-10-01T00:00:00Z"}));
  EXPECT_EQ(NextN(Make("10-50/20 * * * *"), "2026-01-01T00:00:00Z", 4),
            (V{"2026-01-01T00:10:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:50:00Z",
               "2026-01-01T01:10:00Z"}));
}

TEST(Schedule, Macros) {
  EXPECT_EQ(NextN(Make("@yearly", "Asia/Seoul"), "2026-06-01T00:00:00Z", 1),
            (V{"2026-12-31T15:00:00Z"}));
  EXPECT_EQ(NextN(Make("@weekly"), "2026-11-29T00:00:00Z", 1), (V{"2026-12-06T00:00:00Z"}));
  EXPECT_EQ(NextN(Make("@hourly"), "2026-11-29T00:00:00Z", 1), (V{"2026-11-29T01:00:00Z"}));
}

TEST(Schedule, BusinessDateAndPeriod) {
  ScheduleOptions yesterday;
  yesterday.date_offset_days = -1;
  const Schedule s = Make("0 9 * * *", "Asia/Seoul", yesterday);
  const auto occ = s.Next(At("2026-11-28T12:00:00Z"));
  ASSERT_TRUE(occ);
  EXPECT_EQ(FormatUtc(occ->utc), "2026-11-29T00:00:00Z");
  EXPECT_EQ(FormatLocal(*occ), "2026-11-29T09:00:00+09:00");
  EXPECT_EQ(FormatDate(s.BusinessDate(*occ)), "2026-11-28");
  EXPECT_EQ(s.Period(*occ, PeriodKey::kDate), "2026-11-28");
  EXPECT_EQ(s.Period(*occ, PeriodKey::kSlot), "2026-11-29T09:00+09:00");

  // A retry the next day keeps the business date: it is a function of the
  // occurrence, not of when it runs.
  ScheduleOptions next_day;
  next_day.date_offset_days = 1;
  const Schedule late = Make("30 23 * * *", "America/New_York", next_day);
  const auto o2 = late.Next(At("2026-11-29T05:00:00Z"));
  ASSERT_TRUE(o2);
  EXPECT_EQ(FormatLocal(*o2), "2026-11-29T23:30:00-05:00");
  EXPECT_EQ(FormatDate(late.BusinessDate(*o2)), "2026-11-30");

  const Schedule secs = Make("15 */5 * * * *", "Asia/Kolkata");
  const auto o3 = secs.Next(At("2026-11-29T00:00:00Z"));
  ASSERT_TRUE(o3);
  EXPECT_EQ(secs.Period(*o3, PeriodKey::kSlot), "2026-11-29T05:30:15+05:30");
}

TEST(Schedule, DefaultKeyIsDateOnlyForOnceADaySchedules) {
  EXPECT_EQ(Make("0 9 * * *").DefaultKey(), PeriodKey::kDate);
  EXPECT_EQ(Make("0 9 * * MON").DefaultKey(), PeriodKey::kDate);
  EXPECT_EQ(Make("@daily").DefaultKey(), PeriodKey::kDate);
  EXPECT_EQ(Make("30 0 9 * * *").DefaultKey(), PeriodKey::kDate);
  EXPECT_EQ(Make("0 9,17 * * *").DefaultKey(), PeriodKey::kSlot);
  EXPECT_EQ(Make("*/5 * * * *").DefaultKey(), PeriodKey::kSlot);
  EXPECT_EQ(Make("@hourly").DefaultKey(), PeriodKey::kSlot);
  EXPECT_EQ(Make("*/30 9 * * * *").DefaultKey(), PeriodKey::kSlot);
  // Firing at both instants of a repeated hour is twice a day once a year.
  ScheduleOptions both;
  both.dst_repeat = DstRepeatPolicy::kBoth;
  EXPECT_EQ(Make("30 1 * * *", "America/New_York", both).DefaultKey(), PeriodKey::kSlot);
}

TEST(Schedule, BetweenIsHalfOpenOnTheLeft) {
  const Schedule s = Make("0 * * * *");
  const auto occs = s.Between(At("2026-01-01T00:00:00Z"), At("2026-01-01T03:00:00Z"));
  ASSERT_EQ(occs.size(), 3u);
  EXPECT_EQ(FormatUtc(occs.front().utc), "2026-01-01T01:00:00Z");
  EXPECT_EQ(FormatUtc(occs.back().utc), "2026-01-01T03:00:00Z");
  EXPECT_TRUE(s.Between(At("2026-01-01T00:00:00Z"), At("2026-01-01T00:59:59Z")).empty());
}

TEST(Schedule, EndsAtTheYear9999) {
  const Schedule s = Make("0 0 1 1 *");
  EXPECT_EQ(NextN(s, "9998-06-01T00:00:00Z", 5), (V{"9999-01-01T00:00:00Z"}));
  EXPECT_FALSE(s.Next(At("9999-12-31T23:59:59Z")));
}

TEST(Schedule, DstRulesHoldPast2037) {
  // Zone files list transitions up to 2037; later ones come from the rule
  // in the file's footer (checked with zdump: 2049-03-14 07:00Z, 2049-11-07 06:00Z).
  const Schedule s = Make("30 2 * * *", "America/New_York");
  EXPECT_EQ(NextN(s, "2049-03-13T00:00:00Z", 3),
            (V{"2049-03-13T07:30:00Z", "2049-03-14T07:00:00Z", "2049-03-15T06:30:00Z"}));
  const Schedule t = Make("30 1 * * *", "America/New_York");
  EXPECT_EQ(NextN(t, "2049-11-06T12:00:00Z", 2),
            (V{"2049-11-07T05:30:00Z", "2049-11-08T06:30:00Z"}));
}

TEST(Schedule, RejectsExpressionsThatNeverFire) {
  for (const char* expr : {"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 *"}) {
    auto s = Schedule::Create(expr, "UTC");
    ASSERT_FALSE(s.ok()) << expr;
    EXPECT_EQ(s.status().message(),
              std::string("expression \"") + expr +
                  "\" never fires: no date matches its day and month fields");
  }
  // Either-or days make February 30 fire on Mondays of February.
  EXPECT_TRUE(Schedule::Create("0 0 30 2 MON", "UTC").ok());
}

TEST(Schedule, UnknownTimezoneIsAnErrorWithSuggestions) {
  auto s = Schedule::Create("0 9 * * *", "Asia/Seol");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("unknown timezone \"Asia/Seol\"; did you mean "
                                      "\"Asia/Seoul\""),
            std::string::npos)
      << s.status().message();
  auto bad_expr = Schedule::Create("0 9 * *", "Asia/Seoul");
  ASSERT_FALSE(bad_expr.ok());
  EXPECT_NE(bad_expr.status().message().find("found 4"), std::string::npos);
}

TEST(Schedule, AccessorsReportWhatWasCreated) {
  ScheduleOptions options;
  options.dst_gap = DstGapPolicy::kSkip;
  options.date_offset_days = -1;
  const Schedule s = Make("0 */2 * * *", "Europe/London", options);
  EXPECT_EQ(s.expression(), "0 */2 * * *");
  EXPECT_EQ(s.timezone(), "Europe/London");
  EXPECT_EQ(s.options().dst_gap, DstGapPolicy::kSkip);
  EXPECT_EQ(s.options().date_offset_days, -1);
  EXPECT_EQ(s.EffectiveDstRepeat(), DstRepeatPolicy::kBoth);
  EXPECT_FALSE(s.has_seconds_field());
  EXPECT_EQ(Make("0 2 * * *").EffectiveDstRepeat(), DstRepeatPolicy::kFirst);
}

}  // namespace
}  // namespace cronledger
