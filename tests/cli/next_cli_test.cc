// `cronledger next`, run as a real subprocess.
#include <string>
#include <vector>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/subprocess.h"

namespace cronledger {
namespace {

using testing::Cronledger;
using testing::Lines;
using testing::ProcessResult;
using testing::RunProcess;

TEST(NextCli, TextShowsUtcLocalBusinessDateAndDstNotes) {
  const auto r = Cronledger({"next", "30 2 * * *", "--tz", "America/New_York", "--from",
                             "2026-03-07T00:00:00Z", "-n", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0].rfind("UTC", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "2026-03-07T07:30:00Z  2026-03-07T02:30:00-05:00  2026-03-07");
  EXPECT_EQ(lines[2],
            "2026-03-08T07:00:00Z  2026-03-08T03:00:00-04:00  2026-03-08     "
            "DST: 02:30 does not exist that day, shifted to 03:00");
  EXPECT_EQ(lines[3], "2026-03-09T06:30:00Z  2026-03-09T02:30:00-04:00  2026-03-09");
}

TEST(NextCli, TextMarksTheRepeatedHour) {
  const auto r = Cronledger({"next", "30 1 * * *", "--tz", "America/New_York", "--from",
                             "2026-10-31T12:00:00Z", "-n", "1", "--dst-repeat", "both"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[1], "2026-11-01T05:30:00Z  2026-11-01T01:30:00-04:00  2026-11-01");
  const auto both = Cronledger({"next", "30 1 * * *", "--tz", "America/New_York", "--from",
                                "2026-11-01T05:30:00Z", "-n", "1", "--dst-repeat", "both"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(Lines(both.out).at(1),
            "2026-11-01T06:30:00Z  2026-11-01T01:30:00-05:00  2026-11-01     "
            "DST: the second 01:30 (clocks went back)");
}

TEST(NextCli, JsonHasExactlyTheContractKeys) {
  const auto r = Cronledger({"next", "*/30 * * * *", "--tz", "America/New_York", "--from",
                             "2026-11-01T05:00:00Z", "-n", "3", "--offset-days", "-1",
                             "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  for (const auto& item : j) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : item.items()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(keys, (std::vector<std::string>{"business_date", "dst", "local", "utc"}));
  }
  EXPECT_EQ(j[0]["utc"], "2026-11-01T05:30:00Z");
  EXPECT_EQ(j[0]["local"], "2026-11-01T01:30:00-04:00");
  EXPECT_EQ(j[0]["business_date"], "2026-10-31");
  EXPECT_TRUE(j[0]["dst"].is_null());
  EXPECT_EQ(j[1]["utc"], "2026-11-01T06:00:00Z");
  EXPECT_EQ(j[1]["local"], "2026-11-01T01:00:00-05:00");
  EXPECT_EQ(j[1]["dst"], "repeated");
  EXPECT_EQ(j[2]["utc"], "2026-11-01T06:30:00Z");
  EXPECT_EQ(j[2]["dst"], "repeated");
}

TEST(NextCli, JsonMarksShiftedAndHonoursSkip) {
  const auto shifted = Cronledger({"next", "30 2 8 3 *", "--tz", "America/New_York", "--from",
                                   "2026-01-01T00:00:00Z", "-n", "1", "--json"});
  ASSERT_EQ(shifted.exit_code, 0) << shifted.err;
  const auto j = nlohmann::json::parse(shifted.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["utc"], "2026-03-08T07:00:00Z");
  EXPECT_EQ(j[0]["local"], "2026-03-08T03:00:00-04:00");
  EXPECT_EQ(j[0]["dst"], "shifted");

  const auto skipped = Cronledger({"next", "30 2 8 3 *", "--tz", "America/New_York", "--from",
                                   "2026-01-01T00:00:00Z", "-n", "1", "--dst-gap", "skip",
                                   "--json"});
  ASSERT_EQ(skipped.exit_code, 0) << skipped.err;
  const auto k = nlohmann::json::parse(skipped.out);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0]["utc"], "2027-03-08T07:30:00Z");  // 2027-03-08 is an ordinary Monday
  EXPECT_TRUE(k[0]["dst"].is_null());
}

TEST(NextCli, DefaultsToTenOccurrencesFromNow) {
  const auto r = Cronledger({"next", "@hourly", "--tz", "UTC", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 10u);
  for (const auto& item : j) {
    const std::string utc = item["utc"];
    EXPECT_EQ(utc.substr(13), ":00:00Z") << utc;
  }
}

struct UsageCase {
  std::vector<std::string> args;
  std::string stderr_contains;
};

class NextCliUsage : public ::testing::TestWithParam<UsageCase> {};

TEST_P(NextCliUsage, ExitsTwoWithMessageOnStderr) {
  const auto r = Cronledger(GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(GetParam().stderr_contains), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Table, NextCliUsage,
    ::testing::Values(
        UsageCase{{"next", "0 9 * * 8", "--tz", "UTC"},
                  "cronledger next: day-of-week: \"8\" is out of range 0-7 (field 5, column 9)"},
        UsageCase{{"next", "0 9 * * *", "--tz", "Asia/Seol"},
                  "unknown timezone \"Asia/Seol\"; did you mean \"Asia/Seoul\""},
        UsageCase{{"next", "0 9 * * *"}, "--tz is required"},
        UsageCase{{"next", "--tz", "UTC"}, "EXPR is required"},
        UsageCase{{"next", "0 9 * * *", "--tz", "UTC", "--from", "yesterday"},
                  "--from: \"yesterday\" is not an RFC 3339 time"},
        UsageCase{{"next", "0 9 * * *", "--tz", "UTC", "-n", "0"}, "-n"},
        UsageCase{{"next", "0 9 * * *", "--tz", "UTC", "--dst-gap", "later"}, "--dst-gap"},
        UsageCase{{"next", "0 9 * * *", "--tz", "UTC", "--dst-repeat", "twice"},
                  "--dst-repeat"},
        UsageCase{{"next", "0 0 30 2 *", "--tz", "UTC"}, "never fires"},
        UsageCase{{"frobnicate"}, "frobnicate"},
        UsageCase{{}, "Usage"}));

TEST(Cli, ParseErrorsNameTheirCommand) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"next", "0 9 * * *"}, "cronledger next: --tz is required\n"},
      {{"retry", "abc"},
       "cronledger retry: RUN_ID: \"abc\" is not a run id: give the number `cronledger runs` "
       "shows\n"},
      {{"runs", "--limit", "abc"}, "cronledger runs: Could not convert: --limit = abc\n"},
      {{"frobnicate"}, "cronledger: The following argument was not expected: frobnicate\n"},
  };
  for (const auto& [args, first_line] : cases) {
    const auto r = Cronledger(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.substr(0, r.err.find('\n') + 1), first_line);
    EXPECT_EQ(r.out, "");
  }
}

TEST(Cli, HelpAndVersionExitZero) {
  const auto help = Cronledger({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("next"), std::string::npos) << help.out;
  // `help` lists the commands, as --help does, not its own options.
  const auto help_cmd = Cronledger({"help"});
  EXPECT_EQ(help_cmd.exit_code, 0);
  EXPECT_EQ(help_cmd.out, help.out);
  for (const char* command : {"next", "check", "serve", "status", "migrate-store", "help"}) {
    EXPECT_NE(help_cmd.out.find(std::string("\n  ") + command + " "), std::string::npos)
        << command << " missing from:\n" << help_cmd.out;
  }
  EXPECT_NE(help_cmd.out.find("Exit codes"), std::string::npos) << help_cmd.out;
  const auto help_serve = Cronledger({"help", "serve"});
  EXPECT_EQ(help_serve.exit_code, 0);
  EXPECT_NE(help_serve.out.find("--listen"), std::string::npos) << help_serve.out;
  const auto help_unknown = Cronledger({"help", "frobnicate"});
  EXPECT_EQ(help_unknown.exit_code, 2);
  EXPECT_NE(help_unknown.err.find("no command \"frobnicate\""), std::string::npos)
      << help_unknown.err;
  const auto next_help = Cronledger({"next", "--help"});
  EXPECT_EQ(next_help.exit_code, 0);
  EXPECT_NE(next_help.out.find("--dst-repeat"), std::string::npos);
  const auto version = Cronledger({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("cronledger ", 0), 0u) << version.out;
}

}  // namespace
}  // namespace cronledger
