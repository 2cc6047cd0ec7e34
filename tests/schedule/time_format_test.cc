#include <gtest/gtest.h>

#include "cronledger/schedule.h"

namespace cronledger {
namespace {

using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

TEST(TimeFormat, Utc) {
  const sys_seconds t{sys_days{std::chrono::year{2026} / 11 / 29}.time_since_epoch() +
                      seconds{9 * 3600 + 5 * 60 + 7}};
  EXPECT_EQ(FormatUtc(t), "2026-11-29T09:05:07Z");
  EXPECT_EQ(FormatUtc(sys_seconds{}), "1970-01-01T00:00:00Z");
}

TEST(TimeFormat, LocalWithOffsets) {
  Occurrence occ;
  occ.utc = *ParseRfc3339("2026-11-29T00:00:00Z");
  occ.utc_offset = seconds{9 * 3600};
  EXPECT_EQ(FormatLocal(occ), "2026-11-29T09:00:00+09:00");
  occ.utc_offset = seconds{-(3 * 3600 + 30 * 60)};  // St. John's
  EXPECT_EQ(FormatLocal(occ), "2026-11-28T20:30:00-03:30");
  occ.utc_offset = seconds{5 * 3600 + 45 * 60};  // Kathmandu
  EXPECT_EQ(FormatLocal(occ), "2026-11-29T05:45:00+05:45");
  occ.utc_offset = seconds{0};
  EXPECT_EQ(FormatLocal(occ), "2026-11-29T00:00:00+00:00");
}

TEST(TimeFormat, Date) {
  EXPECT_EQ(FormatDate(std::chrono::year{2026} / 3 / 8), "2026-03-08");
}

TEST(TimeFormat, ParsesRfc3339Variants) {
  EXPECT_EQ(FormatUtc(*ParseRfc3339("2026-11-29T09:00:00+09:00")), "2026-11-29T00:00:00Z");
  EXPECT_EQ(FormatUtc(*ParseRfc3339("2026-11-29T00:00:00Z")), "2026-11-29T00:00:00Z");
  EXPECT_EQ(FormatUtc(*ParseRfc3339("2026-11-29t00:00:00z")), "2026-11-29T00:00:00Z");
  EXPECT_EQ(FormatUtc(*ParseRfc3339("2026-11-28T20:30:00-03:30")), "2026-11-29T00:00:00Z");
  EXPECT_EQ(FormatUtc(*ParseRfc3339("2026-11-29T00:00:00.999Z")), "2026-11-29T00:00:00Z");
  EXPECT_EQ(FormatUtc(*ParseRfc3339("2026-11-29 00:00:00Z")), "2026-11-29T00:00:00Z");
}

TEST(TimeFormat, RejectsMalformedTimes) {
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T00:00:00", "2026-11-29T00:00Z", "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T00:60:00Z",
        "2026-11-29T00:00:60Z", "2026-11-29T00:00:00+9", "2026-11-29T00:00:00+09:00x",
        "2026-11-29T00:00:00.Z", "yesterday", "2026/11/29T00:00:00Z"}) {
    auto r = ParseRfc3339(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("is not an RFC 3339 time"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace cronledger
