// LedgerDays: the gap scanner's page-at-a-time reading of a job's runs by
// business date, including dates asked for out of order.
#include "engine/ledger_days.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "common/temp_dir.h"
#include "cronledger/schedule.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

class LedgerDaysTest : public ::testing::Test {
 protected:
  // Job j, 2026-11-01 .. 10 except the 5th: partitions b and a at 09:00
  // (period = the date), and on the 3rd also a at 21:00 (period "...T21").
  void SetUp() override {
    store::SqliteOptions o;
    o.path = dir_.path() + "/ledger.db";
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    const auto now = store::ToInstant(std::chrono::system_clock::time_point{});
    ASSERT_TRUE(store_->JobSync({"j", R"({"schedule":"0 9 * * *"})", now}).ok());
    store::PlanParams p;
    p.job = "j";
    p.now = now;
    for (int d = 1; d <= 10; ++d) {
      if (d == 5) continue;
      const std::string date = fmt::format("2026-11-{:02d}", d);
      p.occurrences.push_back(Occ(date + "T09:00:00Z", {{"b", date, date}, {"a", date, date}}));
      if (d == 3) p.occurrences.push_back(Occ(date + "T21:00:00Z", {{"a", date + "T21", date}}));
    }
    p.planned_through = p.occurrences.back().scheduled_at;
    auto planned = store_->RunPlan(p);
    ASSERT_TRUE(planned.ok()) << planned.status().ToString();
    ASSERT_EQ(planned->runs_planned, 19);
  }

  static store::PlannedOccurrence Occ(const std::string& at,
                                      std::vector<store::PlannedOccurrence::Run> runs) {
    store::PlannedOccurrence o;
    o.scheduled_at = *ParseRfc3339(at);
    o.local_time = at;
    o.job_version = 1;
    o.tzdata = "test";
    o.runs = std::move(runs);
    return o;
  }

  // The date's runs as "partition/period", checked against Find.
  static std::vector<std::string> Keys(const LedgerDay& day, const std::string& date) {
    std::vector<std::string> keys;
    for (const char* partition : {"a", "b", "c"}) {
      for (const std::string& period : {date, date + "T21"}) {
        const store::RunRecord* r = day.Find(partition, period);
        if (!r) continue;
        EXPECT_EQ(r->partition, partition);
        EXPECT_EQ(r->period, period);
        EXPECT_EQ(r->business_date, date);
        keys.push_back(r->partition + "/" + r->period);
      }
    }
    return keys;
  }

  std::vector<std::string> Get(LedgerDays& days, const std::string& date) {
    auto day = days.Get(date);
    EXPECT_TRUE(day.ok()) << day.status().ToString();
    if (!day.ok()) return {};
    EXPECT_EQ((*day)->date(), date);
    return Keys(**day, date);
  }

  testing::TempDir dir_{"cronledger-ledger-days"};
  std::unique_ptr<store::SqliteStore> store_;
};

using KeyList = std::vector<std::string>;

TEST_F(LedgerDaysTest, ReadsEachDateAcrossPages) {
  LedgerDays days(*store_, "j", "2026-11-01", "2026-11-10", /*page_size=*/3);
  for (int d = 1; d <= 10; ++d) {
    const std::string date = fmt::format("2026-11-{:02d}", d);
    KeyList want = {"a/" + date, "b/" + date};
    if (d == 3) want = {"a/" + date, "a/" + date + "T21", "b/" + date};
    if (d == 5) want = {};
    EXPECT_EQ(Get(days, date), want) << date;
  }
}

TEST_F(LedgerDaysTest, DatesAskedForOutOfOrderAreReadAgain) {
  LedgerDays days(*store_, "j", "2026-11-01", "2026-11-10", /*page_size=*/2);
  EXPECT_EQ(Get(days, "2026-11-02"), (KeyList{"a/2026-11-02", "b/2026-11-02"}));
  // Skipping ahead holds the dates passed on the way...
  EXPECT_EQ(Get(days, "2026-11-09"), (KeyList{"a/2026-11-09", "b/2026-11-09"}));
  EXPECT_EQ(Get(days, "2026-11-07"), (KeyList{"a/2026-11-07", "b/2026-11-07"}));
  EXPECT_EQ(Get(days, "2026-11-08"), (KeyList{"a/2026-11-08", "b/2026-11-08"}));
  // ...and older ones, no longer held, are read by themselves.
  EXPECT_EQ(Get(days, "2026-11-03"),
            (KeyList{"a/2026-11-03", "a/2026-11-03T21", "b/2026-11-03"}));
  EXPECT_EQ(Get(days, "2026-11-05"), KeyList{});
  EXPECT_EQ(Get(days, "2026-11-02"), (KeyList{"a/2026-11-02", "b/2026-11-02"}));
  // Reading on continues where the stream stopped.
  EXPECT_EQ(Get(days, "2026-11-10"), (KeyList{"a/2026-11-10", "b/2026-11-10"}));
  EXPECT_EQ(Get(days, "2026-11-09"), (KeyList{"a/2026-11-09", "b/2026-11-09"}));
}

TEST_F(LedgerDaysTest, SeesOnlyTheWindowAndTheJob) {
  LedgerDays days(*store_, "j", "2026-11-04", "2026-11-06", /*page_size=*/2);
  EXPECT_EQ(Get(days, "2026-11-04"), (KeyList{"a/2026-11-04", "b/2026-11-04"}));
  EXPECT_EQ(Get(days, "2026-11-06"), (KeyList{"a/2026-11-06", "b/2026-11-06"}));
  LedgerDays other(*store_, "k", "2026-11-01", "2026-11-10");
  EXPECT_EQ(Get(other, "2026-11-04"), KeyList{});
}

}  // namespace
}  // namespace cronledger::engine
