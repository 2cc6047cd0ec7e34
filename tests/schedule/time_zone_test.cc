#include "schedule/time_zone.h"

#include <cctype>

#include <gtest/gtest.h>

#include "cronledger/schedule.h"

namespace cronledger::schedule {
namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;

sys_seconds At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

TEST(TimeZone, SegmentsFollowTheZoneFile) {
  auto ny = TimeZone::Load("America/New_York");
  ASSERT_TRUE(ny.ok());
  const auto summer = ny->SegmentAt(At("2026-07-01T00:00:00Z"));
  EXPECT_EQ(FormatUtc(summer.begin), "2026-03-08T07:00:00Z");
  EXPECT_EQ(FormatUtc(summer.end), "2026-11-01T06:00:00Z");
  EXPECT_EQ(summer.offset, seconds{-4 * 3600});
  const auto winter = ny->SegmentAt(summer.end);
  EXPECT_EQ(winter.begin, summer.end);
  EXPECT_EQ(winter.offset, seconds{-5 * 3600});
}

TEST(TimeZone, SegmentsPast2037ComeFromTheFooterRule) {
  auto ny = TimeZone::Load("America/New_York");
  ASSERT_TRUE(ny.ok());
  // zdump -v -c 2049,2051 America/New_York
  const auto seg = ny->SegmentAt(At("2049-07-01T00:00:00Z"));
  EXPECT_EQ(FormatUtc(seg.begin), "2049-03-14T07:00:00Z");
  EXPECT_EQ(FormatUtc(seg.end), "2049-11-07T06:00:00Z");
  EXPECT_EQ(seg.offset, seconds{-4 * 3600});

  auto lh = TimeZone::Load("Australia/Lord_Howe");
  ASSERT_TRUE(lh.ok());
  const auto lh_summer = lh->SegmentAt(At("2045-01-01T00:00:00Z"));
  EXPECT_EQ(lh_summer.offset, seconds{11 * 3600});
  const auto lh_winter = lh->SegmentAt(At("2045-07-01T00:00:00Z"));
  EXPECT_EQ(lh_winter.offset, seconds{10 * 3600 + 1800});
}

TEST(TimeZone, ZonesWithoutDstHaveOneLongSegment) {
  auto seoul = TimeZone::Load("Asia/Seoul");
  ASSERT_TRUE(seoul.ok());
  const auto seg = seoul->SegmentAt(At("2026-07-01T00:00:00Z"));
  EXPECT_EQ(seg.offset, seconds{9 * 3600});
  EXPECT_GT(seg.end, At("9999-01-01T00:00:00Z"));
  auto sp = TimeZone::Load("America/Sao_Paulo");
  ASSERT_TRUE(sp.ok());
  EXPECT_EQ(sp->SegmentAt(At("2030-01-01T00:00:00Z")).offset, seconds{-3 * 3600});
}

TEST(TimeZone, UnknownNamesSuggestCloseOnes) {
  auto r = TimeZone::Load("America/New_Yrok");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("did you mean \"America/New_York\""), std::string::npos)
      << r.status().message();

  const auto by_city = SuggestZones("Seoul");
  ASSERT_FALSE(by_city.empty());
  EXPECT_EQ(by_city.front(), "Asia/Seoul");
  const auto with_space = SuggestZones("new york");
  ASSERT_FALSE(with_space.empty());
  EXPECT_EQ(with_space.front(), "America/New_York");
}

TEST(TimeZone, NoSuggestionForGibberish) {
  auto r = TimeZone::Load("qqqqqqqqqqqqqqqqqqqqqqqq");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "unknown timezone \"qqqqqqqqqqqqqqqqqqqqqqqq\"");
}

// Found by config_fuzzer as a slow input: a timezone of a few KB made
// every unknown-zone suggestion compute edit distances against every zone.
// Names too long for any suggestion are now skipped by length; the
// suggestions themselves are unchanged, at the limit too.
TEST(TimeZone, LongNamesGetNoSuggestionAndCloseOnesStillDo) {
  EXPECT_TRUE(SuggestZones(std::string(4096, 'x')).empty());
  EXPECT_TRUE(SuggestZones("America/Argentina/ComodRivadaviaxxxxxxxxxxxxxxxxx").empty());
  // 32 characters and 16 more: a distance of 16, exactly the threshold.
  const auto at_limit = SuggestZones("America/Argentina/ComodRivadaviaxxxxxxxxxxxxxxxx");
  ASSERT_FALSE(at_limit.empty());
  EXPECT_EQ(at_limit.front(), "America/Argentina/ComodRivadavia");
}

TEST(TimeZone, RejectsPathsAndEmptyNames) {
  for (const char* name : {"", "../../etc/passwd", "/etc/localtime", "America/../UTC"}) {
    auto r = TimeZone::Load(name);
    EXPECT_FALSE(r.ok()) << name;
  }
}

TEST(TimeZone, TzdataVersionLooksLikeARelease) {
  const std::string v = TzdataVersion();
  // "2025b": a four-digit year and a release letter.
  ASSERT_EQ(v.size(), 5u) << v;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(v[i]))) << v;
  EXPECT_TRUE(std::islower(static_cast<unsigned char>(v[4]))) << v;
}

}  // namespace
}  // namespace cronledger::schedule
