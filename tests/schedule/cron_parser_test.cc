#include "schedule/cron_parser.h"

#include <string>

#include <gtest/gtest.h>

namespace cronledger::schedule {
namespace {

uint64_t Bits(std::initializer_list<int> values) {
  uint64_t out = 0;
  for (int v : values) out |= uint64_t{1} << v;
  return out;
}

uint64_t Range(int lo, int hi, int step = 1) {
  uint64_t out = 0;
  for (int v = lo; v <= hi; v += step) out |= uint64_t{1} << v;
  return out;
}

CronFields MustParse(const std::string& expr) {
  auto r = ParseCron(expr);
  EXPECT_TRUE(r.ok()) << expr << ": " << r.status().message();
  return r.ok() ? *r : CronFields{};
}

TEST(CronParser, FiveFieldsWildcards) {
  const CronFields f = MustParse("* * * * *");
  EXPECT_EQ(f.seconds, Bits({0}));
  EXPECT_EQ(f.minutes, Range(0, 59));
  EXPECT_EQ(f.hours, Range(0, 23));
  EXPECT_EQ(f.days, Range(1, 31));
  EXPECT_EQ(f.months, Range(1, 12));
  EXPECT_EQ(f.weekdays, Range(0, 6));
  EXPECT_FALSE(f.has_seconds_field);
  EXPECT_FALSE(f.days_restricted);
  EXPECT_FALSE(f.weekdays_restricted);
  EXPECT_FALSE(f.hour_fixed);
}

TEST(CronParser, SixFieldsHaveLeadingSeconds) {
  const CronFields f = MustParse("*/20 0 9 * * *");
  EXPECT_TRUE(f.has_seconds_field);
  EXPECT_EQ(f.seconds, Bits({0, 20, 40}));
  EXPECT_EQ(f.minutes, Bits({0}));
  EXPECT_EQ(f.hours, Bits({9}));
}

TEST(CronParser, ListsRangesAndSteps) {
  const CronFields f = MustParse("1,2,30 8-10 */10 1-12/3 *");
  EXPECT_EQ(f.minutes, Bits({1, 2, 30}));
  EXPECT_EQ(f.hours, Bits({8, 9, 10}));
  EXPECT_EQ(f.days, Bits({1, 11, 21, 31}));
  EXPECT_EQ(f.months, Bits({1, 4, 7, 10}));
  EXPECT_EQ(MustParse("10-50/20 * * * *").minutes, Bits({10, 30, 50}));
  EXPECT_EQ(MustParse("*/15 * * * *").minutes, Bits({0, 15, 30, 45}));
  // a/n: from a to the end of the field.
  EXPECT_EQ(MustParse("5/20 * * * *").minutes, Bits({5, 25, 45}));
  EXPECT_EQ(MustParse("0 */7 * * *").hours, Bits({0, 7, 14, 21}));
}

TEST(CronParser, MonthAndWeekdayNamesAnyCase) {
  const CronFields f = MustParse("0 9 * jan,Mar-MAY mon-FRI");
  EXPECT_EQ(f.months, Bits({1, 3, 4, 5}));
  EXPECT_EQ(f.weekdays, Bits({1, 2, 3, 4, 5}));
  EXPECT_EQ(MustParse("0 0 * DEC SUN").months, Bits({12}));
  EXPECT_EQ(MustParse("0 0 * * sat").weekdays, Bits({6}));
}

TEST(CronParser, SundayIsZeroOrSeven) {
  EXPECT_EQ(MustParse("0 0 * * 7").weekdays, Bits({0}));
  EXPECT_EQ(MustParse("0 0 * * 0").weekdays, Bits({0}));
  EXPECT_EQ(MustParse("0 0 * * 5-7").weekdays, Bits({0, 5, 6}));
  EXPECT_EQ(MustParse("0 0 * * 0-7").weekdays, Range(0, 6));
}

TEST(CronParser, Macros) {
  const struct {
    const char* macro;
    const char* same_as;
  } kCases[] = {
      {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"},  {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"},  {"@DAILY", "0 0 * * *"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.macro);
    const CronFields a = MustParse(c.macro);
    const CronFields b = MustParse(c.same_as);
    EXPECT_EQ(a.minutes, b.minutes);
    EXPECT_EQ(a.hours, b.hours);
    EXPECT_EQ(a.days, b.days);
    EXPECT_EQ(a.months, b.months);
    EXPECT_EQ(a.weekdays, b.weekdays);
    EXPECT_EQ(a.days_restricted, b.days_restricted);
    EXPECT_EQ(a.weekdays_restricted, b.weekdays_restricted);
  }
}

TEST(CronParser, DayFieldsRestrictedUnlessTheyStartWithStar) {
  EXPECT_TRUE(MustParse("0 0 1 * MON").days_restricted);
  EXPECT_TRUE(MustParse("0 0 1 * MON").weekdays_restricted);
  EXPECT_FALSE(MustParse("0 0 */2 * MON").days_restricted);
  EXPECT_FALSE(MustParse("0 0 1 * */2").weekdays_restricted);
  EXPECT_TRUE(MustParse("0 0 L * *").days_restricted);
  EXPECT_TRUE(MustParse("0 0 * * 5L").weekdays_restricted);
}

TEST(CronParser, HourFixedOnlyForNumbersAndListsOfNumbers) {
  EXPECT_TRUE(MustParse("0 9 * * *").hour_fixed);
  EXPECT_TRUE(MustParse("0 1,2,13 * * *").hour_fixed);
  EXPECT_FALSE(MustParse("0 * * * *").hour_fixed);
  EXPECT_FALSE(MustParse("0 1-3 * * *").hour_fixed);
  EXPECT_FALSE(MustParse("0 */2 * * *").hour_fixed);
  EXPECT_FALSE(MustParse("0 1,2-3 * * *").hour_fixed);
  EXPECT_FALSE(MustParse("0 5/6 * * *").hour_fixed);
}

TEST(CronParser, QuartzDayOfMonthExtensions) {
  EXPECT_TRUE(MustParse("0 0 L * *").last_day);
  EXPECT_EQ(MustParse("0 0 L-3 * *").days_before_last, Bits({3}));
  EXPECT_EQ(MustParse("0 0 15W * *").nearest_weekday, Bits({15}));
  EXPECT_EQ(MustParse("0 0 1w * *").nearest_weekday, Bits({1}));
  EXPECT_TRUE(MustParse("0 0 LW * *").last_weekday_of_month);
  EXPECT_TRUE(MustParse("0 0 lw * *").last_weekday_of_month);
  const CronFields mixed = MustParse("0 0 1,15,L,L-1,10W * *");
  EXPECT_EQ(mixed.days, Bits({1, 15}));
  EXPECT_TRUE(mixed.last_day);
  EXPECT_EQ(mixed.days_before_last, Bits({1}));
  EXPECT_EQ(mixed.nearest_weekday, Bits({10}));
}

TEST(CronParser, QuartzDayOfWeekExtensions) {
  const CronFields f = MustParse("0 0 * * 5#3,MON#1,7#5");
  EXPECT_EQ(f.nth_weekday[3], Bits({5}));
  EXPECT_EQ(f.nth_weekday[1], Bits({1}));
  EXPECT_EQ(f.nth_weekday[5], Bits({0}));
  EXPECT_EQ(f.weekdays, 0u);
  const CronFields last = MustParse("0 0 * * 5L,sunL");
  EXPECT_EQ(last.last_weekday, Bits({0, 5}));
}

TEST(CronParser, WhitespaceAroundAndBetweenFields) {
  const CronFields f = MustParse("  0\t9   * *  1-5 ");
  EXPECT_EQ(f.hours, Bits({9}));
  EXPECT_EQ(f.weekdays, Bits({1, 2, 3, 4, 5}));
}

struct BadCase {
  const char* expr;
  const char* message;
};

class CronParserErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(CronParserErrors, RejectsWithPreciseMessage) {
  const BadCase& c = GetParam();
  auto r = ParseCron(c.expr);
  ASSERT_FALSE(r.ok()) << "accepted: " << c.expr;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), c.message) << "for: " << c.expr;
}

INSTANTIATE_TEST_SUITE_P(
    Table, CronParserErrors,
    ::testing::Values(
        // Out of range, named by field, token and column as the user wrote them.
        BadCase{"0 9 * * 1-8", "day-of-week: \"8\" is out of range 0-7 (field 5, column 11)"},
        BadCase{"0 9 * * 8", "day-of-week: \"8\" is out of range 0-7 (field 5, column 9)"},
        BadCase{"60 * * * *", "minute: \"60\" is out of range 0-59 (field 1, column 1)"},
        BadCase{"0 24 * * *", "hour: \"24\" is out of range 0-23 (field 2, column 3)"},
        BadCase{"0 0 0 * *", "day-of-month: \"0\" is out of range 1-31 (field 3, column 5)"},
        BadCase{"0 0 32 * *", "day-of-month: \"32\" is out of range 1-31 (field 3, column 5)"},
        BadCase{"0 0 * 13 *", "month: \"13\" is out of range 1-12 (field 4, column 7)"},
        BadCase{"0 0 * 0 *", "month: \"0\" is out of range 1-12 (field 4, column 7)"},
        BadCase{"60 0 9 * * *", "second: \"60\" is out of range 0-59 (field 1, column 1)"},
        BadCase{"0 60 9 * * *", "minute: \"60\" is out of range 0-59 (field 2, column 3)"},
        BadCase{"0 0 9 * * 9", "day-of-week: \"9\" is out of range 0-7 (field 6, column 11)"},
        BadCase{"1,2,99 * * * *", "minute: \"99\" is out of range 0-59 (field 1, column 5)"},
        BadCase{"99999999999 * * * *",
                "minute: \"99999999999\" is out of range 0-59 (field 1, column 1)"},
        // Reversed ranges.
        BadCase{"0 5-1 * * *",
                "hour: range \"5-1\" is reversed (start is after end) (field 2, column 3)"},
        BadCase{"0 0 * * FRI-MON",
                "day-of-week: range \"FRI-MON\" is reversed (start is after end) (field 5, "
                "column 9)"},
        // Steps.
        BadCase{"*/0 * * * *", "minute: step \"0\" is out of range 1-60 (field 1, column 3)"},
        BadCase{"0 */25 * * *", "hour: step \"25\" is out of range 1-24 (field 2, column 5)"},
        BadCase{"*/ * * * *", "minute: missing step after \"/\" (field 1, column 3)"},
        BadCase{"*/x * * * *", "minute: step \"x\" is not a number (field 1, column 3)"},
        BadCase{"/5 * * * *", "minute: missing value before \"/\" (field 1, column 1)"},
        // Empty fields and list elements.
        BadCase{"1,,2 * * * *", "minute: empty list element (field 1, column 3)"},
        BadCase{"1, * * * *", "minute: empty list element (field 1, column 3)"},
        BadCase{",1 * * * *", "minute: empty list element (field 1, column 1)"},
        BadCase{"", "empty expression; expected 5 fields (minute hour day-of-month month "
                    "day-of-week) or an @macro"},
        BadCase{"   ", "empty expression; expected 5 fields (minute hour day-of-month month "
                       "day-of-week) or an @macro"},
        BadCase{"0 9 * *", "expected 5 fields (minute hour day-of-month month day-of-week) or "
                           "6 (with a leading second field), found 4"},
        BadCase{"0 0 9 * * * *", "expected 5 fields (minute hour day-of-month month "
                                 "day-of-week) or 6 (with a leading second field), found 7"},
        // Ranges missing an end.
        BadCase{"0 1- * * *", "hour: range is missing its end (field 2, column 5)"},
        BadCase{"0 -1 * * *", "hour: range is missing its start (field 2, column 3)"},
        BadCase{"0 1-2-3 * * *", "hour: \"1-2-3\" is not a valid range (field 2, column 3)"},
        // Garbage and names in the wrong place.
        BadCase{"a * * * *", "minute: \"a\" is not a number (field 1, column 1)"},
        BadCase{"0 MON * * *", "hour: \"MON\" is not a number (field 2, column 3)"},
        BadCase{"0 0 * FOO *", "month: \"FOO\" is not a month (1-12 or JAN-DEC) (field 4, "
                               "column 7)"},
        BadCase{"0 0 * * SUNDAY",
                "day-of-week: \"SUNDAY\" is not a weekday (0-7 or SUN-SAT) (field 5, column 9)"},
        BadCase{"0 0 * * MON#6", "day-of-week: \"6\" is out of range 1-5 (field 5, column 13)"},
        BadCase{"0 0 * * 5#0", "day-of-week: \"0\" is out of range 1-5 (field 5, column 11)"},
        BadCase{"0 0 * * 8#1", "day-of-week: \"8\" is out of range 0-7 (field 5, column 9)"},
        BadCase{"0 0 * * #1", "day-of-week: missing weekday before \"#\" (field 5, column 9)"},
        BadCase{"0 0 * * L", "day-of-week: \"L\" needs a weekday before it, e.g. \"5L\" for "
                             "the last Friday (field 5, column 9)"},
        BadCase{"0 0 L-31 * *", "day-of-month: \"31\" is out of range 1-30 (field 3, column 7)"},
        BadCase{"0 0 32W * *", "day-of-month: \"32\" is out of range 1-31 (field 3, column 5)"},
        BadCase{"0 0 L-x * *", "day-of-month: \"L-x\" is not valid; L-n needs a number of "
                               "days (field 3, column 5)"},
        BadCase{"0 0 LX * *",
                "day-of-month: \"LX\" is not valid; use L, L-n or LW (field 3, column 5)"},
        BadCase{"0 0 1#2 * *", "day-of-month: \"1#2\" is not a number (field 3, column 5)"},
        BadCase{"0 0 ? * MON",
                "day-of-month: \"?\" is not supported; use \"*\" (field 3, column 5)"},
        BadCase{"0 0 * * 1.5",
                "day-of-week: unexpected character \".\" (field 5, column 10)"},
        BadCase{"0 0 * * 1;rm", "day-of-week: unexpected character \";\" (field 5, column 10)"},
        BadCase{"0 0 * * \x01", "unexpected character 0x01 (column 9)"},
        BadCase{"@reboot", "unknown macro \"@reboot\" (column 1); expected @yearly, @annually, "
                           "@monthly, @weekly, @daily, @midnight or @hourly"},
        BadCase{"@daily 5", "\"@daily\" takes nothing after it (column 8)"}));

TEST(CronParser, RejectsOverlongInput) {
  const std::string long_expr(kMaxExpressionLength + 1, '1');
  auto r = ParseCron(long_expr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "expression is too long (257 characters, at most 256)");
  // A long but legal list is fine up to the limit.
  std::string list = "0";
  for (int m = 1; m < 60; ++m) list += "," + std::to_string(m);
  EXPECT_TRUE(ParseCron(list + " * * * *").ok());
}

}  // namespace
}  // namespace cronledger::schedule
