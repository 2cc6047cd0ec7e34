// A job's start_date (docs/gaps.md, Start date): the expected set begins at
// that business date; keys dated before the job was first recorded are
// expected, never planned, and wait for an operator whatever auto_within;
// `check --against-store` lists the keys a change of it adds or drops.
// Real SQLite, fake clock, the real planner and gap scanner.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "engine/config_impact.h"
#include "engine/engine_test_util.h"
#include "engine/gap_scanner.h"
#include "engine/gap_watch.h"
#include "engine/planner.h"
#include "ledger/names.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::November;
using std::chrono::year;
using std::chrono::year_month_day;
using testing::At;

class StartDateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.dir = dir_.path();
    // Daily at 09:00 in Seoul about yesterday, five customers; added on
    // 2026-12-01 at 14:00 KST (05:00Z), after that day's occurrence.
    config::JobConfig job = testing::Job("settle", "0 9 * * *", "Asia/Seoul");
    job.date_offset_days = -1;
    job.partitions = {"acme", "globex", "initech", "umbrella", "wayne"};
    job.start_date = year_month_day{year{2026}, November, std::chrono::day{20}};
    job.backfill.auto_within = days{30};  // would backfill anything, were it allowed
    config_.jobs = {job};
    store::SqliteOptions o;
    o.path = dir_.File("ledger.db");
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  void Plan(Clock::TimePoint now) {
    Planner planner(config_, *store_, clock_);
    ASSERT_TRUE(planner.PlanOnce(now).ok());
  }

  // "business_date state[ before]" of every due key of `partition` in
  // 11-15..12-05: its run's state ("none" without a run), and "before" for
  // a key dated before the job was first recorded.
  std::vector<std::string> Keys(Clock::TimePoint now, const std::string& partition = "acme") {
    GapScanner scanner(*store_);
    GapScanParams p;
    p.from = year_month_day{year{2026}, November, std::chrono::day{15}};
    p.to = year_month_day{year{2026}, std::chrono::December, std::chrono::day{5}};
    p.now = store::ToInstant(now);
    p.include_waived = true;
    std::vector<std::string> out;
    EXPECT_TRUE(scanner
                    .ForEachKey(config_.jobs[0], p,
                                [&](const ExpectedKey& k) {
                                  if (k.partition != partition) return Status::Ok();
                                  std::string state =
                                      k.run ? std::string(ledger::Name(k.run->state)) : "none";
                                  out.push_back(k.business_date + " " + state +
                                                (k.before_recorded ? " before" : ""));
                                  return Status::Ok();
                                })
                    .ok());
    return out;
  }

  cronledger::testing::TempDir dir_{"cronledger-start-date"};
  config::Config config_;
  FakeClock clock_{At("2026-12-01T05:00:00Z")};
  std::unique_ptr<store::SqliteStore> store_;
};

TEST_F(StartDateTest, KeysFromTheStartDateAreExpectedAndWaitForAnOperator) {
  const auto added = At("2026-12-01T05:00:00Z");
  Plan(added);
  // Nothing before the job was added is planned: the planner plans from now.
  store::RunQuery q;
  q.job = "settle";
  q.limit = 1000;
  EXPECT_TRUE(store_->RunList(q)->empty());

  // Expected: 11-20 (start_date) through 11-30 (the 12-01 09:00 KST
  // occurrence, before the job was added); 11-19 and earlier are not.
  std::vector<std::string> want;
  for (int d = 20; d <= 30; ++d) want.push_back(fmt::format("2026-11-{} none before", d));
  EXPECT_EQ(Keys(added), want);

  // The scanner records them awaiting approval, though auto_within would
  // have run gaps that young by itself.
  GapWatch watch(config_, *store_);
  GapWatchStats stats;
  ASSERT_TRUE(watch.ScanOnce(added + std::chrono::seconds{1}, &stats).ok());
  EXPECT_EQ(stats.backfilled, 0);
  EXPECT_EQ(stats.awaiting_approval, 11 * 5);
  for (auto& w : want) w = w.substr(0, 10) + " awaiting_approval before";
  EXPECT_EQ(Keys(added), want);
  q.state = ledger::RunState::kAwaitingApproval;
  const auto waiting = store_->RunList(q);
  ASSERT_TRUE(waiting.ok());
  ASSERT_EQ(waiting->size(), 55u);
  // Each keeps the occurrence it would have had: 09:00 KST the next day.
  for (const auto& r : *waiting) {
    if (r.business_date == "2026-11-20") {
      EXPECT_EQ(FormatUtc(r.scheduled_at), "2026-11-21T00:00:00Z");
    }
  }

  // The next day's occurrence is the planner's, and due work as usual.
  Plan(At("2026-12-02T00:00:00Z"));
  const auto next = Keys(At("2026-12-02T00:00:01Z"));
  ASSERT_EQ(next.size(), 12u);
  EXPECT_EQ(next.back(), "2026-12-01 pending");
}

TEST_F(StartDateTest, AStartDateAfterTheJobWasAddedDelaysItsFirstKey) {
  config_.jobs[0].start_date =
      year_month_day{year{2026}, std::chrono::December, std::chrono::day{3}};
  Plan(At("2026-12-01T05:00:00Z"));
  Plan(At("2026-12-02T00:00:00Z"));  // 12-01's occurrence: not expected
  Plan(At("2026-12-04T00:00:00Z"));  // 12-03 and 12-04's
  const auto keys = Keys(At("2026-12-04T00:00:01Z"));
  EXPECT_EQ(keys, (std::vector<std::string>{"2026-12-03 pending"}));
}

TEST_F(StartDateTest, WithoutAStartDateNothingBeforeTheJobWasAddedIsExpected) {
  config_.jobs[0].start_date.reset();
  Plan(At("2026-12-01T05:00:00Z"));
  EXPECT_TRUE(Keys(At("2026-12-01T05:00:01Z")).empty());
}

TEST_F(StartDateTest, CheckAgainstTheStoreListsTheKeysAStartDateChangeAddsOrDrops) {
  Plan(At("2026-12-01T05:00:00Z"));
  config::Config earlier = config_;
  earlier.jobs[0].start_date = year_month_day{year{2026}, November, std::chrono::day{18}};
  ConfigImpactParams p;
  p.now = store::ToInstant(At("2026-12-01T06:00:00Z"));
  auto impact = AnalyzeConfigImpact(earlier, *store_, p);
  ASSERT_TRUE(impact.ok()) << impact.status().ToString();
  const JobImpact& j = impact->jobs.at(0);
  EXPECT_EQ(j.change, JobChange::kChanged);
  ASSERT_EQ(j.settings.size(), 1u);
  EXPECT_EQ(j.settings[0].key, "start_date");
  std::vector<std::string> added;
  for (const auto& k : j.newly_expected) added.push_back(k.partition + "/" + k.period);
  EXPECT_EQ(added.size(), 10u);  // 11-18 and 11-19 for five customers
  EXPECT_EQ(added.front(), "acme/2026-11-18");
  EXPECT_TRUE(j.no_longer_expected.empty());

  config::Config later = config_;
  later.jobs[0].start_date = year_month_day{year{2026}, November, std::chrono::day{29}};
  impact = AnalyzeConfigImpact(later, *store_, p);
  ASSERT_TRUE(impact.ok()) << impact.status().ToString();
  const JobImpact& k = impact->jobs.at(0);
  EXPECT_TRUE(k.newly_expected.empty());
  std::vector<std::string> dropped;
  for (const auto& key : k.no_longer_expected) dropped.push_back(key.partition + "/" + key.period);
  EXPECT_EQ(dropped.size(), 45u);  // 11-20 .. 11-28 for five customers
}

}  // namespace
}  // namespace cronledger::engine
