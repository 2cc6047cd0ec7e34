// A hand-written table of DST cases for Schedule::Next and Schedule::Between.
//
// Every expected instant below is a literal, checked against the IANA
// database (tzdata 2025b) with `zdump -v -c 2017,2028 ZONE` and python's
// zoneinfo, never computed by the code under test. The transitions used:
//
//   America/New_York     2026-03-08 07:00Z  01:59:59 EST -> 03:00 EDT
//                        2026-11-01 06:00Z  01:59:59 EDT -> 01:00 EST
//   Europe/London        2026-03-29 01:00Z  00:59:59 GMT -> 02:00 BST
//                        2026-10-25 01:00Z  01:59:59 BST -> 01:00 GMT
//   Australia/Lord_Howe  2026-10-03 15:30Z  01:59:59 +1030 -> 02:30 +11
//                        2026-04-04 15:00Z  01:59:59 +11 -> 01:30 +1030
//   Australia/Sydney     2026-10-03 16:00Z  01:59:59 AEST -> 03:00 AEDT
//                        2026-04-04 16:00Z  02:59:59 AEDT -> 02:00 AEST
//   America/Havana       2026-03-08 05:00Z  23:59:59 CST -> 01:00 CDT
//                        2026-11-01 05:00Z  00:59:59 CDT -> 00:00 CST
//   America/Santiago     2026-09-06 04:00Z  23:59:59 -04 -> 01:00 -03
//                        2026-04-05 03:00Z  23:59:59 -03 -> 23:00 -04
//   Asia/Beirut          2026-03-28 22:00Z  23:59:59 EET -> 01:00 EEST
//                        2026-10-24 21:00Z  23:59:59 EEST -> 23:00 EET
//   America/Sao_Paulo    2018-11-04 03:00Z  23:59:59 -03 -> 01:00 -02
//                        2019-02-17 02:00Z  23:59:59 -02 -> 23:00 -03
//                        (no DST since: -03 all year in 2026)
//
// The rules (docs/schedule.md, DST): a nonexistent wall time fires once at the
// first instant after the gap (kShifted) unless dst_gap = kSkip; shifted
// times landing on one instant collapse into one occurrence, which is the
// real occurrence (kNone) when there is one at that instant. A repeated
// wall time fires at the first instant for a fixed hour field, at both for a
// wildcard / range / step hour field; dst_repeat overrides; the second
// instant is kRepeated. Next(after) is strictly after, in UTC order.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cronledger/schedule.h"

namespace cronledger {
namespace {

using std::chrono::days;
using std::chrono::local_seconds;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

constexpr DstNote kNone = DstNote::kNone;
constexpr DstNote kShifted = DstNote::kShifted;
constexpr DstNote kRepeated = DstNote::kRepeated;

ScheduleOptions Gap(DstGapPolicy gap) {
  ScheduleOptions o;
  o.dst_gap = gap;
  return o;
}
ScheduleOptions Repeat(DstRepeatPolicy repeat) {
  ScheduleOptions o;
  o.dst_repeat = repeat;
  return o;
}
const ScheduleOptions kDefault{};
const ScheduleOptions kSkip = Gap(DstGapPolicy::kSkip);
const ScheduleOptions kFirst = Repeat(DstRepeatPolicy::kFirst);
const ScheduleOptions kLast = Repeat(DstRepeatPolicy::kLast);
const ScheduleOptions kBoth = Repeat(DstRepeatPolicy::kBoth);

// --- formatting and parsing done here, independent of the code under test --

std::string FormatYmdHms(std::chrono::sys_seconds t) {
  const auto day = std::chrono::floor<days>(t);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss hms{t - day};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d",
                static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

std::string UtcString(sys_seconds t) { return FormatYmdHms(t) + "Z"; }

std::string WallString(local_seconds t) {
  return FormatYmdHms(sys_seconds{t.time_since_epoch()});
}

// "2026-11-01T01:30:00-05:00": the local time at the instant, with offset.
std::string LocalString(const Occurrence& o) {
  const auto off = o.utc_offset.count();
  const auto abs_off = off < 0 ? -off : off;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%c%02lld:%02lld", off < 0 ? '-' : '+',
                static_cast<long long>(abs_off / 3600),
                static_cast<long long>(abs_off % 3600 / 60));
  return WallString(o.local()) + buf;
}

const char* NoteName(DstNote n) {
  switch (n) {
    case DstNote::kNone: return "kNone";
    case DstNote::kShifted: return "kShifted";
    case DstNote::kRepeated: return "kRepeated";
  }
  return "?";
}

// Parses exactly "YYYY-MM-DDTHH:MM:SSZ".
sys_seconds Utc(const char* text) {
  int y = 0;
  unsigned mo = 0, d = 0;
  int h = 0, mi = 0, s = 0;
  char z = 0;
  const int n = std::sscanf(text, "%d-%u-%uT%d:%d:%d%c", &y, &mo, &d, &h, &mi,
                            &s, &z);
  EXPECT_TRUE(n == 7 && z == 'Z') << "bad literal in the table: " << text;
  return sys_days{std::chrono::year{y} / std::chrono::month{mo} /
                  std::chrono::day{d}} +
         std::chrono::hours{h} + std::chrono::minutes{mi} + seconds{s};
}

// --- the table ---------------------------------------------------------------

struct Expect {
  const char* utc;    // the instant, RFC 3339 UTC
  const char* local;  // the local wall time at it, with its offset
  DstNote dst;
  // For kShifted: the wall time the expression named, or nullptr when several
  // collapsed into one (not checked). For the others nominal must be local().
  const char* nominal = nullptr;
};

struct Row {
  const char* name;
  const char* expr;
  const char* zone;
  ScheduleOptions options;
  const char* after;             // Next() is called on this, then chained
  std::vector<Expect> expected;  // the next occurrences, in order
};

const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
      // ===================== America/New_York, spring 2026-03-08 ===========
      {"ny_spring_fixed_shift", "30 2 * * *", "America/New_York", kDefault,
       "2026-03-07T12:00:00Z",
       {{"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted,
         "2026-03-08T02:30:00"},
        {"2026-03-09T06:30:00Z", "2026-03-09T02:30:00-04:00", kNone}}},
      {"ny_spring_fixed_skip", "30 2 * * *", "America/New_York", kSkip,
       "2026-03-07T12:00:00Z",
       {{"2026-03-09T06:30:00Z", "2026-03-09T02:30:00-04:00", kNone},
        {"2026-03-10T06:30:00Z", "2026-03-10T02:30:00-04:00", kNone}}},
      {"ny_spring_shift_one_second_before", "30 2 * * *", "America/New_York",
       kDefault, "2026-03-08T06:59:59Z",
       {{"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted,
         "2026-03-08T02:30:00"}}},
      {"ny_spring_shift_strictly_after", "30 2 * * *", "America/New_York",
       kDefault, "2026-03-08T07:00:00Z",
       {{"2026-03-09T06:30:00Z", "2026-03-09T02:30:00-04:00", kNone}}},
      {"ny_spring_fixed_hour_2_shift", "0 2 * * *", "America/New_York",
       kDefault, "2026-03-08T00:00:00Z",
       {{"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted,
         "2026-03-08T02:00:00"},
        {"2026-03-09T06:00:00Z", "2026-03-09T02:00:00-04:00", kNone}}},
      {"ny_spring_collapse_shifted_minutes", "*/15 2 * * *",
       "America/New_York", kDefault, "2026-03-08T00:00:00Z",
       {{"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted},
        {"2026-03-09T06:00:00Z", "2026-03-09T02:00:00-04:00", kNone},
        {"2026-03-09T06:15:00Z", "2026-03-09T02:15:00-04:00", kNone}}},
      {"ny_spring_collapse_shifted_minutes_skip", "*/15 2 * * *",
       "America/New_York", kSkip, "2026-03-08T00:00:00Z",
       {{"2026-03-09T06:00:00Z", "2026-03-09T02:00:00-04:00", kNone},
        {"2026-03-09T06:15:00Z", "2026-03-09T02:15:00-04:00", kNone}}},
      {"ny_spring_every30_collapse_with_real", "*/30 * * * *",
       "America/New_York", kDefault, "2026-03-08T06:00:00Z",
       {{"2026-03-08T06:30:00Z", "2026-03-08T01:30:00-05:00", kNone},
        {"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kNone},
        {"2026-03-08T07:30:00Z", "2026-03-08T03:30:00-04:00", kNone}}},
      {"ny_spring_every30_skip", "*/30 * * * *", "America/New_York", kSkip,
       "2026-03-08T06:00:00Z",
       {{"2026-03-08T06:30:00Z", "2026-03-08T01:30:00-05:00", kNone},
        {"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kNone},
        {"2026-03-08T07:30:00Z", "2026-03-08T03:30:00-04:00", kNone}}},
      {"ny_spring_hour_list_collapse_with_real", "0 2,3 * * *",
       "America/New_York", kDefault, "2026-03-08T00:00:00Z",
       {{"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kNone},
        {"2026-03-09T06:00:00Z", "2026-03-09T02:00:00-04:00", kNone},
        {"2026-03-09T07:00:00Z", "2026-03-09T03:00:00-04:00", kNone}}},
      {"ny_spring_hour_range", "15 1-3 * * *", "America/New_York", kDefault,
       "2026-03-08T05:00:00Z",
       {{"2026-03-08T06:15:00Z", "2026-03-08T01:15:00-05:00", kNone},
        {"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted,
         "2026-03-08T02:15:00"},
        {"2026-03-08T07:15:00Z", "2026-03-08T03:15:00-04:00", kNone}}},
      {"ny_spring_hour_range_skip", "15 1-3 * * *", "America/New_York", kSkip,
       "2026-03-08T05:00:00Z",
       {{"2026-03-08T06:15:00Z", "2026-03-08T01:15:00-05:00", kNone},
        {"2026-03-08T07:15:00Z", "2026-03-08T03:15:00-04:00", kNone},
        {"2026-03-09T05:15:00Z", "2026-03-09T01:15:00-04:00", kNone}}},
      {"ny_spring_hour_step", "0 */1 * * *", "America/New_York", kDefault,
       "2026-03-08T05:30:00Z",
       {{"2026-03-08T06:00:00Z", "2026-03-08T01:00:00-05:00", kNone},
        {"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kNone},
        {"2026-03-08T08:00:00Z", "2026-03-08T04:00:00-04:00", kNone}}},
      {"ny_spring_hour_list", "30 1,2 * * *", "America/New_York", kDefault,
       "2026-03-08T00:00:00Z",
       {{"2026-03-08T06:30:00Z", "2026-03-08T01:30:00-05:00", kNone},
        {"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted,
         "2026-03-08T02:30:00"},
        {"2026-03-09T05:30:00Z", "2026-03-09T01:30:00-04:00", kNone}}},
      {"ny_spring_seconds_in_gap", "30 30 2 * * *", "America/New_York",
       kDefault, "2026-03-08T00:00:00Z",
       {{"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted,
         "2026-03-08T02:30:30"},
        {"2026-03-09T06:30:30Z", "2026-03-09T02:30:30-04:00", kNone}}},
      {"ny_spring_seconds_just_before_gap", "*/20 59 1 * * *",
       "America/New_York", kDefault, "2026-03-08T06:58:59Z",
       {{"2026-03-08T06:59:00Z", "2026-03-08T01:59:00-05:00", kNone},
        {"2026-03-08T06:59:20Z", "2026-03-08T01:59:20-05:00", kNone},
        {"2026-03-08T06:59:40Z", "2026-03-08T01:59:40-05:00", kNone},
        {"2026-03-09T05:59:00Z", "2026-03-09T01:59:00-04:00", kNone}}},
      {"ny_spring_seconds_collapse_skip", "*/30 * 2 * * *", "America/New_York",
       kSkip, "2026-03-08T06:59:59Z",
       {{"2026-03-09T06:00:00Z", "2026-03-09T02:00:00-04:00", kNone},
        {"2026-03-09T06:00:30Z", "2026-03-09T02:00:30-04:00", kNone}}},
      {"ny_spring_seconds_collapse_shift", "*/30 * 2 * * *",
       "America/New_York", kDefault, "2026-03-08T06:59:59Z",
       {{"2026-03-08T07:00:00Z", "2026-03-08T03:00:00-04:00", kShifted},
        {"2026-03-09T06:00:00Z", "2026-03-09T02:00:00-04:00", kNone}}},

      // ===================== America/New_York, fall 2026-11-01 =============
      {"ny_fall_fixed_default_first", "30 1 * * *", "America/New_York",
       kDefault, "2026-10-31T12:00:00Z",
       {{"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_fixed_first_explicit", "30 1 * * *", "America/New_York",
       kFirst, "2026-10-31T12:00:00Z",
       {{"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_fixed_last", "30 1 * * *", "America/New_York", kLast,
       "2026-10-31T12:00:00Z",
       {{"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated},
        {"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_fixed_both", "30 1 * * *", "America/New_York", kBoth,
       "2026-10-31T12:00:00Z",
       {{"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated},
        {"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_fixed_both_strictly_after_first", "30 1 * * *",
       "America/New_York", kBoth, "2026-11-01T05:30:00Z",
       {{"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated},
        {"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_fixed_default_after_inside_repeat", "30 1 * * *",
       "America/New_York", kDefault, "2026-11-01T06:00:00Z",
       {{"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_fixed_last_after_first_instant", "30 1 * * *",
       "America/New_York", kLast, "2026-11-01T05:45:00Z",
       {{"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated}}},
      {"ny_fall_fixed_hour_0_unaffected", "30 0 * * *", "America/New_York",
       kDefault, "2026-10-31T12:00:00Z",
       {{"2026-11-01T04:30:00Z", "2026-11-01T00:30:00-04:00", kNone},
        {"2026-11-02T05:30:00Z", "2026-11-02T00:30:00-05:00", kNone}}},
      {"ny_fall_fixed_hour_2_once", "0 2 * * *", "America/New_York", kBoth,
       "2026-10-31T12:00:00Z",
       {{"2026-11-01T07:00:00Z", "2026-11-01T02:00:00-05:00", kNone},
        {"2026-11-02T07:00:00Z", "2026-11-02T02:00:00-05:00", kNone}}},
      {"ny_fall_every30_default_both", "*/30 * * * *", "America/New_York",
       kDefault, "2026-11-01T04:45:00Z",
       {{"2026-11-01T05:00:00Z", "2026-11-01T01:00:00-04:00", kNone},
        {"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-01T06:00:00Z", "2026-11-01T01:00:00-05:00", kRepeated},
        {"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated},
        {"2026-11-01T07:00:00Z", "2026-11-01T02:00:00-05:00", kNone}}},
      {"ny_fall_every30_utc_order_after_0130_edt", "*/30 * * * *",
       "America/New_York", kBoth, "2026-11-01T05:30:00Z",
       {{"2026-11-01T06:00:00Z", "2026-11-01T01:00:00-05:00", kRepeated},
        {"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated},
        {"2026-11-01T07:00:00Z", "2026-11-01T02:00:00-05:00", kNone}}},
      {"ny_fall_every30_first", "*/30 * * * *", "America/New_York", kFirst,
       "2026-11-01T04:45:00Z",
       {{"2026-11-01T05:00:00Z", "2026-11-01T01:00:00-04:00", kNone},
        {"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-01T07:00:00Z", "2026-11-01T02:00:00-05:00", kNone},
        {"2026-11-01T07:30:00Z", "2026-11-01T02:30:00-05:00", kNone}}},
      {"ny_fall_every30_last", "*/30 * * * *", "America/New_York", kLast,
       "2026-11-01T04:15:00Z",
       {{"2026-11-01T04:30:00Z", "2026-11-01T00:30:00-04:00", kNone},
        {"2026-11-01T06:00:00Z", "2026-11-01T01:00:00-05:00", kRepeated},
        {"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated},
        {"2026-11-01T07:00:00Z", "2026-11-01T02:00:00-05:00", kNone}}},
      {"ny_fall_hour_range_default_both", "15 1-3 * * *", "America/New_York",
       kDefault, "2026-11-01T00:00:00Z",
       {{"2026-11-01T05:15:00Z", "2026-11-01T01:15:00-04:00", kNone},
        {"2026-11-01T06:15:00Z", "2026-11-01T01:15:00-05:00", kRepeated},
        {"2026-11-01T07:15:00Z", "2026-11-01T02:15:00-05:00", kNone},
        {"2026-11-01T08:15:00Z", "2026-11-01T03:15:00-05:00", kNone}}},
      {"ny_fall_hour_range_first", "15 1-3 * * *", "America/New_York", kFirst,
       "2026-11-01T00:00:00Z",
       {{"2026-11-01T05:15:00Z", "2026-11-01T01:15:00-04:00", kNone},
        {"2026-11-01T07:15:00Z", "2026-11-01T02:15:00-05:00", kNone},
        {"2026-11-01T08:15:00Z", "2026-11-01T03:15:00-05:00", kNone}}},
      {"ny_fall_hour_step_default_both", "0 */1 * * *", "America/New_York",
       kDefault, "2026-11-01T03:30:00Z",
       {{"2026-11-01T04:00:00Z", "2026-11-01T00:00:00-04:00", kNone},
        {"2026-11-01T05:00:00Z", "2026-11-01T01:00:00-04:00", kNone},
        {"2026-11-01T06:00:00Z", "2026-11-01T01:00:00-05:00", kRepeated},
        {"2026-11-01T07:00:00Z", "2026-11-01T02:00:00-05:00", kNone}}},
      {"ny_fall_hour_list_default_first", "30 1,2 * * *", "America/New_York",
       kDefault, "2026-11-01T00:00:00Z",
       {{"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-01T07:30:00Z", "2026-11-01T02:30:00-05:00", kNone},
        {"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_hour_list_both", "30 1,2 * * *", "America/New_York", kBoth,
       "2026-11-01T00:00:00Z",
       {{"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-01T06:30:00Z", "2026-11-01T01:30:00-05:00", kRepeated},
        {"2026-11-01T07:30:00Z", "2026-11-01T02:30:00-05:00", kNone}}},
      {"ny_fall_seconds_default_first", "0 30 1 * * *", "America/New_York",
       kDefault, "2026-11-01T00:00:00Z",
       {{"2026-11-01T05:30:00Z", "2026-11-01T01:30:00-04:00", kNone},
        {"2026-11-02T06:30:00Z", "2026-11-02T01:30:00-05:00", kNone}}},
      {"ny_fall_seconds_last", "45 59 1 * * *", "America/New_York", kLast,
       "2026-11-01T00:00:00Z",
       {{"2026-11-01T06:59:45Z", "2026-11-01T01:59:45-05:00", kRepeated},
        {"2026-11-02T06:59:45Z", "2026-11-02T01:59:45-05:00", kNone}}},

      // ===================== Europe/London ==================================
      {"london_spring_fixed_shift", "30 1 * * *", "Europe/London", kDefault,
       "2026-03-28T12:00:00Z",
       {{"2026-03-29T01:00:00Z", "2026-03-29T02:00:00+01:00", kShifted,
         "2026-03-29T01:30:00"},
        {"2026-03-30T00:30:00Z", "2026-03-30T01:30:00+01:00", kNone}}},
      {"london_spring_fixed_skip", "30 1 * * *", "Europe/London", kSkip,
       "2026-03-28T12:00:00Z",
       {{"2026-03-30T00:30:00Z", "2026-03-30T01:30:00+01:00", kNone}}},
      {"london_spring_minute_list_collapse_with_real", "0,30 * * * *",
       "Europe/London", kDefault, "2026-03-29T00:15:00Z",
       {{"2026-03-29T00:30:00Z", "2026-03-29T00:30:00+00:00", kNone},
        {"2026-03-29T01:00:00Z", "2026-03-29T02:00:00+01:00", kNone},
        {"2026-03-29T01:30:00Z", "2026-03-29T02:30:00+01:00", kNone}}},
      {"london_spring_collapse_shifted", "*/20 1 * * *", "Europe/London",
       kDefault, "2026-03-28T12:00:00Z",
       {{"2026-03-29T01:00:00Z", "2026-03-29T02:00:00+01:00", kShifted},
        {"2026-03-30T00:00:00Z", "2026-03-30T01:00:00+01:00", kNone},
        {"2026-03-30T00:20:00Z", "2026-03-30T01:20:00+01:00", kNone}}},
      {"london_fall_fixed_default_first", "30 1 * * *", "Europe/London",
       kDefault, "2026-10-24T12:00:00Z",
       {{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00+01:00", kNone},
        {"2026-10-26T01:30:00Z", "2026-10-26T01:30:00+00:00", kNone}}},
      {"london_fall_fixed_last", "30 1 * * *", "Europe/London", kLast,
       "2026-10-24T12:00:00Z",
       {{"2026-10-25T01:30:00Z", "2026-10-25T01:30:00+00:00", kRepeated},
        {"2026-10-26T01:30:00Z", "2026-10-26T01:30:00+00:00", kNone}}},
      {"london_fall_minute_list_default_both", "0,30 * * * *",
       "Europe/London", kDefault, "2026-10-24T23:45:00Z",
       {{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00+01:00", kNone},
        {"2026-10-25T00:30:00Z", "2026-10-25T01:30:00+01:00", kNone},
        {"2026-10-25T01:00:00Z", "2026-10-25T01:00:00+00:00", kRepeated},
        {"2026-10-25T01:30:00Z", "2026-10-25T01:30:00+00:00", kRepeated},
        {"2026-10-25T02:00:00Z", "2026-10-25T02:00:00+00:00", kNone}}},
      {"london_fall_hour_range_last", "15 1-3 * * *", "Europe/London", kLast,
       "2026-10-25T00:00:00Z",
       {{"2026-10-25T01:15:00Z", "2026-10-25T01:15:00+00:00", kRepeated},
        {"2026-10-25T02:15:00Z", "2026-10-25T02:15:00+00:00", kNone},
        {"2026-10-25T03:15:00Z", "2026-10-25T03:15:00+00:00", kNone}}},

      // ===================== Australia/Lord_Howe (30-minute shift) ==========
      {"lord_howe_spring_fixed_shift", "15 2 * * *", "Australia/Lord_Howe",
       kDefault, "2026-10-03T00:00:00Z",
       {{"2026-10-03T15:30:00Z", "2026-10-04T02:30:00+11:00", kShifted,
         "2026-10-04T02:15:00"},
        {"2026-10-04T15:15:00Z", "2026-10-05T02:15:00+11:00", kNone}}},
      {"lord_howe_spring_fixed_skip", "15 2 * * *", "Australia/Lord_Howe",
       kSkip, "2026-10-03T00:00:00Z",
       {{"2026-10-04T15:15:00Z", "2026-10-05T02:15:00+11:00", kNone}}},
      {"lord_howe_spring_0230_exists", "30 2 * * *", "Australia/Lord_Howe",
       kSkip, "2026-10-03T00:00:00Z",
       {{"2026-10-03T15:30:00Z", "2026-10-04T02:30:00+11:00", kNone},
        {"2026-10-04T15:30:00Z", "2026-10-05T02:30:00+11:00", kNone}}},
      {"lord_howe_spring_collapse_with_real", "*/15 2 * * *",
       "Australia/Lord_Howe", kDefault, "2026-10-03T00:00:00Z",
       {{"2026-10-03T15:30:00Z", "2026-10-04T02:30:00+11:00", kNone},
        {"2026-10-03T15:45:00Z", "2026-10-04T02:45:00+11:00", kNone},
        {"2026-10-04T15:00:00Z", "2026-10-05T02:00:00+11:00", kNone}}},
      {"lord_howe_spring_every30", "*/30 * * * *", "Australia/Lord_Howe",
       kDefault, "2026-10-03T14:45:00Z",
       {{"2026-10-03T15:00:00Z", "2026-10-04T01:30:00+10:30", kNone},
        {"2026-10-03T15:30:00Z", "2026-10-04T02:30:00+11:00", kNone},
        {"2026-10-03T16:00:00Z", "2026-10-04T03:00:00+11:00", kNone}}},
      {"lord_howe_spring_seconds_in_gap", "45 29 2 * * *",
       "Australia/Lord_Howe", kDefault, "2026-10-03T00:00:00Z",
       {{"2026-10-03T15:30:00Z", "2026-10-04T02:30:00+11:00", kShifted,
         "2026-10-04T02:29:45"},
        {"2026-10-04T15:29:45Z", "2026-10-05T02:29:45+11:00", kNone}}},
      {"lord_howe_fall_fixed_default_first", "45 1 * * *",
       "Australia/Lord_Howe", kDefault, "2026-04-04T12:00:00Z",
       {{"2026-04-04T14:45:00Z", "2026-04-05T01:45:00+11:00", kNone},
        {"2026-04-05T15:15:00Z", "2026-04-06T01:45:00+10:30", kNone}}},
      {"lord_howe_fall_fixed_last", "45 1 * * *", "Australia/Lord_Howe",
       kLast, "2026-04-04T12:00:00Z",
       {{"2026-04-04T15:15:00Z", "2026-04-05T01:45:00+10:30", kRepeated},
        {"2026-04-05T15:15:00Z", "2026-04-06T01:45:00+10:30", kNone}}},
      {"lord_howe_fall_0115_not_repeated", "15 1 * * *",
       "Australia/Lord_Howe", kLast, "2026-04-04T12:00:00Z",
       {{"2026-04-04T14:15:00Z", "2026-04-05T01:15:00+11:00", kNone},
        {"2026-04-05T14:45:00Z", "2026-04-06T01:15:00+10:30", kNone}}},
      {"lord_howe_fall_every30_default_both", "*/30 * * * *",
       "Australia/Lord_Howe", kDefault, "2026-04-04T13:45:00Z",
       {{"2026-04-04T14:00:00Z", "2026-04-05T01:00:00+11:00", kNone},
        {"2026-04-04T14:30:00Z", "2026-04-05T01:30:00+11:00", kNone},
        {"2026-04-04T15:00:00Z", "2026-04-05T01:30:00+10:30", kRepeated},
        {"2026-04-04T15:30:00Z", "2026-04-05T02:00:00+10:30", kNone}}},
      {"lord_howe_fall_seconds_both", "30 59 1 * * *", "Australia/Lord_Howe",
       kBoth, "2026-04-04T12:00:00Z",
       {{"2026-04-04T14:59:30Z", "2026-04-05T01:59:30+11:00", kNone},
        {"2026-04-04T15:29:30Z", "2026-04-05T01:59:30+10:30", kRepeated},
        {"2026-04-05T15:29:30Z", "2026-04-06T01:59:30+10:30", kNone}}},

      // ===================== Australia/Sydney ===============================
      {"sydney_spring_fixed_shift", "30 2 * * *", "Australia/Sydney",
       kDefault, "2026-10-03T00:00:00Z",
       {{"2026-10-03T16:00:00Z", "2026-10-04T03:00:00+11:00", kShifted,
         "2026-10-04T02:30:00"},
        {"2026-10-04T15:30:00Z", "2026-10-05T02:30:00+11:00", kNone}}},
      {"sydney_fall_fixed_both", "30 2 * * *", "Australia/Sydney", kBoth,
       "2026-04-04T00:00:00Z",
       {{"2026-04-04T15:30:00Z", "2026-04-05T02:30:00+11:00", kNone},
        {"2026-04-04T16:30:00Z", "2026-04-05T02:30:00+10:00", kRepeated},
        {"2026-04-05T16:30:00Z", "2026-04-06T02:30:00+10:00", kNone}}},

      // ===================== America/Sao_Paulo ==============================
      {"sao_paulo_2026_no_dst", "30 0 * * *", "America/Sao_Paulo", kDefault,
       "2026-10-31T12:00:00Z",
       {{"2026-11-01T03:30:00Z", "2026-11-01T00:30:00-03:00", kNone},
        {"2026-11-02T03:30:00Z", "2026-11-02T00:30:00-03:00", kNone}}},
      {"sao_paulo_2018_midnight_gap", "30 0 * * *", "America/Sao_Paulo",
       kDefault, "2018-11-03T12:00:00Z",
       {{"2018-11-04T03:00:00Z", "2018-11-04T01:00:00-02:00", kShifted,
         "2018-11-04T00:30:00"},
        {"2018-11-05T02:30:00Z", "2018-11-05T00:30:00-02:00", kNone}}},
      {"sao_paulo_2019_fall_back_both", "30 23 * * *", "America/Sao_Paulo",
       kBoth, "2019-02-16T12:00:00Z",
       {{"2019-02-17T01:30:00Z", "2019-02-16T23:30:00-02:00", kNone},
        {"2019-02-17T02:30:00Z", "2019-02-16T23:30:00-03:00", kRepeated},
        {"2019-02-18T02:30:00Z", "2019-02-17T23:30:00-03:00", kNone}}},

      // ===================== America/Havana (midnight gap) ==================
      {"havana_midnight_gap_shift", "0 0 * * *", "America/Havana", kDefault,
       "2026-03-07T12:00:00Z",
       {{"2026-03-08T05:00:00Z", "2026-03-08T01:00:00-04:00", kShifted,
         "2026-03-08T00:00:00"},
        {"2026-03-09T04:00:00Z", "2026-03-09T00:00:00-04:00", kNone}}},
      {"havana_midnight_gap_skip", "0 0 * * *", "America/Havana", kSkip,
       "2026-03-07T12:00:00Z",
       {{"2026-03-09T04:00:00Z", "2026-03-09T00:00:00-04:00", kNone}}},
      {"havana_midnight_gap_collapse_with_real", "0 0,1 * * *",
       "America/Havana", kDefault, "2026-03-08T00:00:00Z",
       {{"2026-03-08T05:00:00Z", "2026-03-08T01:00:00-04:00", kNone},
        {"2026-03-09T04:00:00Z", "2026-03-09T00:00:00-04:00", kNone},
        {"2026-03-09T05:00:00Z", "2026-03-09T01:00:00-04:00", kNone}}},
      {"havana_fall_midnight_repeat_last", "30 0 * * *", "America/Havana",
       kLast, "2026-10-31T12:00:00Z",
       {{"2026-11-01T05:30:00Z", "2026-11-01T00:30:00-05:00", kRepeated},
        {"2026-11-02T05:30:00Z", "2026-11-02T00:30:00-05:00", kNone}}},
      {"havana_fall_hourly_default_both", "0 * * * *", "America/Havana",
       kDefault, "2026-11-01T03:30:00Z",
       {{"2026-11-01T04:00:00Z", "2026-11-01T00:00:00-04:00", kNone},
        {"2026-11-01T05:00:00Z", "2026-11-01T00:00:00-05:00", kRepeated},
        {"2026-11-01T06:00:00Z", "2026-11-01T01:00:00-05:00", kNone}}},

      // ===================== America/Santiago ===============================
      {"santiago_spring_midnight_gap", "0 0 * * *", "America/Santiago",
       kDefault, "2026-09-05T00:00:00Z",
       {{"2026-09-05T04:00:00Z", "2026-09-05T00:00:00-04:00", kNone},
        {"2026-09-06T04:00:00Z", "2026-09-06T01:00:00-03:00", kShifted,
         "2026-09-06T00:00:00"},
        {"2026-09-07T03:00:00Z", "2026-09-07T00:00:00-03:00", kNone}}},
      {"santiago_fall_2330_default_first", "30 23 * * *", "America/Santiago",
       kDefault, "2026-04-04T12:00:00Z",
       {{"2026-04-05T02:30:00Z", "2026-04-04T23:30:00-03:00", kNone},
        {"2026-04-06T03:30:00Z", "2026-04-05T23:30:00-04:00", kNone}}},
      {"santiago_fall_2330_last", "30 23 * * *", "America/Santiago", kLast,
       "2026-04-04T12:00:00Z",
       {{"2026-04-05T03:30:00Z", "2026-04-04T23:30:00-04:00", kRepeated},
        {"2026-04-06T03:30:00Z", "2026-04-05T23:30:00-04:00", kNone}}},

      // ===================== Asia/Beirut (midnight gap) =====================
      {"beirut_midnight_gap_shift", "30 0 * * *", "Asia/Beirut", kDefault,
       "2026-03-28T00:00:00Z",
       {{"2026-03-28T22:00:00Z", "2026-03-29T01:00:00+03:00", kShifted,
         "2026-03-29T00:30:00"},
        {"2026-03-29T21:30:00Z", "2026-03-30T00:30:00+03:00", kNone}}},
      {"beirut_midnight_gap_skip", "30 0 * * *", "Asia/Beirut", kSkip,
       "2026-03-28T00:00:00Z",
       {{"2026-03-29T21:30:00Z", "2026-03-30T00:30:00+03:00", kNone}}},
      {"beirut_fall_2330_both", "30 23 * * *", "Asia/Beirut", kBoth,
       "2026-10-24T12:00:00Z",
       {{"2026-10-24T20:30:00Z", "2026-10-24T23:30:00+03:00", kNone},
        {"2026-10-24T21:30:00Z", "2026-10-24T23:30:00+02:00", kRepeated},
        {"2026-10-25T21:30:00Z", "2026-10-25T23:30:00+02:00", kNone}}},
  };
  return rows;
}

std::string Describe(const Row& row) {
  return std::string(row.name) + ": \"" + row.expr + "\" in " + row.zone +
         ", after " + row.after;
}

void CheckOccurrence(const Occurrence& got, const Expect& want, size_t i) {
  SCOPED_TRACE("occurrence #" + std::to_string(i) + " expected " + want.utc);
  EXPECT_EQ(UtcString(got.utc), want.utc);
  EXPECT_EQ(LocalString(got), want.local);
  EXPECT_EQ(NoteName(got.dst), std::string(NoteName(want.dst)));
  if (want.dst == DstNote::kShifted) {
    if (want.nominal != nullptr) {
      EXPECT_EQ(WallString(got.nominal), want.nominal);
    }
  } else if (got.dst != DstNote::kShifted) {
    EXPECT_EQ(WallString(got.nominal), WallString(got.local()))
        << "nominal must equal local() unless shifted";
  }
}

TEST(DstTable, HasEnoughCases) { EXPECT_GE(Rows().size(), 36u); }

TEST(DstTable, NextChainMatchesTable) {
  std::vector<std::string> failed;
  for (const Row& row : Rows()) {
    SCOPED_TRACE(Describe(row));
    const int failures_before = ::testing::UnitTest::GetInstance()
                                    ->current_test_info()
                                    ->result()
                                    ->total_part_count();
    auto schedule = Schedule::Create(row.expr, row.zone, row.options);
    if (!schedule.ok()) {
      ADD_FAILURE() << "Create failed: " << schedule.status().ToString();
      failed.push_back(row.name);
      continue;
    }
    sys_seconds cursor = Utc(row.after);
    for (size_t i = 0; i < row.expected.size(); ++i) {
      const std::optional<Occurrence> got = schedule->Next(cursor);
      if (!got.has_value()) {
        ADD_FAILURE() << "Next(" << UtcString(cursor)
                      << ") returned nullopt; expected " << row.expected[i].utc;
        break;
      }
      CheckOccurrence(*got, row.expected[i], i);
      if (got->utc <= cursor) {
        ADD_FAILURE() << "Next(" << UtcString(cursor) << ") is not after it: "
                      << UtcString(got->utc);
        break;
      }
      cursor = got->utc;
    }
    if (::testing::UnitTest::GetInstance()
            ->current_test_info()
            ->result()
            ->total_part_count() != failures_before) {
      failed.push_back(row.name);
    }
  }
  std::string summary;
  for (const auto& n : failed) summary += "\n  " + n;
  EXPECT_TRUE(failed.empty()) << failed.size() << " of " << Rows().size()
                              << " rows failed:" << summary;
}

TEST(DstTable, BetweenMatchesTable) {
  for (const Row& row : Rows()) {
    SCOPED_TRACE(Describe(row));
    auto schedule = Schedule::Create(row.expr, row.zone, row.options);
    if (!schedule.ok()) {
      ADD_FAILURE() << "Create failed: " << schedule.status().ToString();
      continue;
    }
    const sys_seconds after = Utc(row.after);
    const sys_seconds until = Utc(row.expected.back().utc);
    const std::vector<Occurrence> got = schedule->Between(after, until);
    std::string got_list;
    for (const auto& o : got) {
      got_list += " " + UtcString(o.utc) + "(" + NoteName(o.dst) + ")";
    }
    if (got.size() != row.expected.size()) {
      ADD_FAILURE() << "Between(" << row.after << ", "
                    << row.expected.back().utc << "] gave " << got.size()
                    << " occurrences, expected " << row.expected.size() << ":"
                    << got_list;
      continue;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      CheckOccurrence(got[i], row.expected[i], i);
    }
    // Between is (after, until]: dropping the last instant drops one.
    const std::vector<Occurrence> shorter =
        schedule->Between(after, until - seconds{1});
    EXPECT_EQ(shorter.size(), row.expected.size() - 1);
  }
}

// --- business date, period and formatting on DST days ----------------------

struct PeriodRow {
  const char* name;
  const char* expr;
  const char* zone;
  ScheduleOptions options;
  const char* after;
  const char* utc;         // the expected Next(after)
  const char* formatted;   // FormatLocal
  const char* date;        // FormatDate(BusinessDate) and Period(kDate)
  const char* slot;        // Period(kSlot)
};

ScheduleOptions WithOffset(ScheduleOptions o, int days) {
  o.date_offset_days = days;
  return o;
}

TEST(DstTable, BusinessDateAndPeriodOnDstDays) {
  const std::vector<PeriodRow> rows = {
      {"ny_fall_first", "30 1 * * *", "America/New_York", kDefault,
       "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z",
       "2026-11-01T01:30:00-04:00", "2026-11-01", "2026-11-01T01:30-04:00"},
      {"ny_fall_last_offset_minus_1", "30 1 * * *", "America/New_York",
       WithOffset(kLast, -1), "2026-10-31T12:00:00Z", "2026-11-01T06:30:00Z",
       "2026-11-01T01:30:00-05:00", "2026-10-31", "2026-11-01T01:30-05:00"},
      {"ny_fall_both_second", "*/30 * * * *", "America/New_York", kDefault,
       "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z",
       "2026-11-01T01:30:00-05:00", "2026-11-01", "2026-11-01T01:30-05:00"},
      {"ny_spring_shift", "30 2 * * *", "America/New_York", kDefault,
       "2026-03-08T00:00:00Z", "2026-03-08T07:00:00Z",
       "2026-03-08T03:00:00-04:00", "2026-03-08", "2026-03-08T03:00-04:00"},
      {"ny_spring_seconds_slot", "30 30 2 * * *", "America/New_York",
       WithOffset(kDefault, 1), "2026-03-08T00:00:00Z", "2026-03-08T07:00:00Z",
       "2026-03-08T03:00:00-04:00", "2026-03-09", "2026-03-08T03:00:00-04:00"},
      {"beirut_shift_offset_minus_1", "30 0 * * *", "Asia/Beirut",
       WithOffset(kDefault, -1), "2026-03-28T00:00:00Z",
       "2026-03-28T22:00:00Z", "2026-03-29T01:00:00+03:00", "2026-03-28",
       "2026-03-29T01:00+03:00"},
      {"havana_shift_offset_plus_1", "0 0 * * *", "America/Havana",
       WithOffset(kDefault, 1), "2026-03-07T12:00:00Z", "2026-03-08T05:00:00Z",
       "2026-03-08T01:00:00-04:00", "2026-03-09", "2026-03-08T01:00-04:00"},
      {"lord_howe_first_half_hour", "45 1 * * *", "Australia/Lord_Howe",
       kBoth, "2026-04-04T12:00:00Z", "2026-04-04T14:45:00Z",
       "2026-04-05T01:45:00+11:00", "2026-04-05", "2026-04-05T01:45+11:00"},
      {"lord_howe_repeated_half_hour", "45 1 * * *", "Australia/Lord_Howe",
       kBoth, "2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z",
       "2026-04-05T01:45:00+10:30", "2026-04-05", "2026-04-05T01:45+10:30"},
      {"lord_howe_spring_shift_offset_minus_1", "15 2 * * *",
       "Australia/Lord_Howe", WithOffset(kDefault, -1),
       "2026-10-03T00:00:00Z", "2026-10-03T15:30:00Z",
       "2026-10-04T02:30:00+11:00", "2026-10-03", "2026-10-04T02:30+11:00"},
      {"santiago_repeated_2330_offset_plus_1", "30 23 * * *",
       "America/Santiago", WithOffset(kBoth, 1), "2026-04-05T02:30:00Z",
       "2026-04-05T03:30:00Z", "2026-04-04T23:30:00-04:00", "2026-04-05",
       "2026-04-04T23:30-04:00"},
      {"santiago_midnight_gap", "0 0 * * *", "America/Santiago", kDefault,
       "2026-09-05T12:00:00Z", "2026-09-06T04:00:00Z",
       "2026-09-06T01:00:00-03:00", "2026-09-06", "2026-09-06T01:00-03:00"},
      {"sao_paulo_2018_midnight_gap_offset_minus_1", "30 0 * * *",
       "America/Sao_Paulo", WithOffset(kDefault, -1), "2018-11-03T12:00:00Z",
       "2018-11-04T03:00:00Z", "2018-11-04T01:00:00-02:00", "2018-11-03",
       "2018-11-04T01:00-02:00"},
  };
  for (const PeriodRow& row : rows) {
    SCOPED_TRACE(std::string(row.name) + ": \"" + row.expr + "\" in " +
                 row.zone + ", after " + row.after);
    auto schedule = Schedule::Create(row.expr, row.zone, row.options);
    if (!schedule.ok()) {
      ADD_FAILURE() << "Create failed: " << schedule.status().ToString();
      continue;
    }
    const auto occ = schedule->Next(Utc(row.after));
    if (!occ.has_value()) {
      ADD_FAILURE() << "Next returned nullopt";
      continue;
    }
    EXPECT_EQ(FormatUtc(occ->utc), row.utc);
    EXPECT_EQ(FormatLocal(*occ), row.formatted);
    EXPECT_EQ(FormatDate(schedule->BusinessDate(*occ)), row.date);
    EXPECT_EQ(schedule->Period(*occ, PeriodKey::kDate), row.date);
    EXPECT_EQ(schedule->Period(*occ, PeriodKey::kSlot), row.slot);
  }
}

TEST(DstTable, ParseRfc3339AgreesWithTableLiterals) {
  for (const char* text :
       {"2026-03-08T07:00:00Z", "2026-11-01T06:30:00Z", "2018-11-04T03:00:00Z",
        "2026-04-04T15:15:00Z"}) {
    auto parsed = ParseRfc3339(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status().ToString();
    EXPECT_EQ(*parsed, Utc(text)) << text;
    EXPECT_EQ(FormatUtc(*parsed), text);
  }
  // The same instant written with a DST offset.
  auto edt = ParseRfc3339("2026-11-01T01:30:00-04:00");
  auto est = ParseRfc3339("2026-11-01T01:30:00-05:00");
  auto lhi = ParseRfc3339("2026-04-05T01:45:00+10:30");
  ASSERT_TRUE(edt.ok() && est.ok() && lhi.ok());
  EXPECT_EQ(*edt, Utc("2026-11-01T05:30:00Z"));
  EXPECT_EQ(*est, Utc("2026-11-01T06:30:00Z"));
  EXPECT_EQ(*lhi, Utc("2026-04-04T15:15:00Z"));
}

TEST(DstTable, EffectiveDstRepeatFollowsHourField) {
  struct Case {
    const char* expr;
    ScheduleOptions options;
    DstRepeatPolicy want;
  };
  const std::vector<Case> cases = {
      {"30 1 * * *", kDefault, DstRepeatPolicy::kFirst},
      {"30 1,2 * * *", kDefault, DstRepeatPolicy::kFirst},
      {"0 30 1 * * *", kDefault, DstRepeatPolicy::kFirst},
      {"*/30 * * * *", kDefault, DstRepeatPolicy::kBoth},
      {"0,30 * * * *", kDefault, DstRepeatPolicy::kBoth},
      {"15 1-3 * * *", kDefault, DstRepeatPolicy::kBoth},
      {"0 */1 * * *", kDefault, DstRepeatPolicy::kBoth},
      {"0 30 * * * *", kDefault, DstRepeatPolicy::kBoth},
      {"30 1 * * *", kLast, DstRepeatPolicy::kLast},
      {"30 1 * * *", kBoth, DstRepeatPolicy::kBoth},
      {"*/30 * * * *", kFirst, DstRepeatPolicy::kFirst},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expr);
    auto schedule = Schedule::Create(c.expr, "America/New_York", c.options);
    ASSERT_TRUE(schedule.ok()) << schedule.status().ToString();
    EXPECT_EQ(static_cast<int>(schedule->EffectiveDstRepeat()),
              static_cast<int>(c.want));
  }
}

}  // namespace
}  // namespace cronledger
