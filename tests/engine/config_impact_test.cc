// What a changed configuration would do to a real SQLite ledger planned by
// the real planner, at fixed instants: re-keyed business dates around
// midnight, occurrences added and removed, partitions added and removed,
// new, unchanged and removed jobs.
#include "engine/config_impact.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "engine/engine_test_util.h"
#include "engine/planner.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::hours;
using testing::At;

std::string Utc(std::chrono::sys_seconds t) { return FormatUtc(t); }

// "run_key@scheduled_at", in report order.
std::vector<std::string> Keys(const std::string& job, const std::vector<ImpactKey>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) {
    out.push_back(job + "/" + k.partition + "/" + k.period + "@" + Utc(k.scheduled_at));
  }
  return out;
}

class ConfigImpactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.dir = dir_.path();
    config_.server.store = "sqlite:" + dir_.File("ledger.db");
    store::SqliteOptions o;
    o.path = dir_.File("ledger.db");
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  // Plans config_ at `now`, `lookahead` ahead, as serve would with that
  // lookahead.
  void Plan(Clock::TimePoint now, std::chrono::seconds lookahead) {
    PlannerOptions o;
    o.lookahead = lookahead;
    Planner planner(config_, *store_, clock_, o);
    ASSERT_TRUE(planner.PlanOnce(now).ok());
  }

  ConfigImpact Analyze(const config::Config& changed, Clock::TimePoint now) {
    ConfigImpactParams p;
    p.now = store::ToInstant(now);
    auto r = AnalyzeConfigImpact(changed, *store_, p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ConfigImpact{};
  }

  int Events() {
    store::EventQuery q;
    q.limit = 1000000;
    auto events = store_->EventList(q);
    return events.ok() ? static_cast<int>(events->size()) : -1;
  }

  cronledger::testing::TempDir dir_{"cronledger-impact"};
  config::Config config_;
  FakeClock clock_{At("2026-11-30T00:00:00Z")};
  std::unique_ptr<store::SqliteStore> store_;
};

TEST_F(ConfigImpactTest, TimezoneChangeAroundMidnightReKeysPlannedBusinessDates) {
  // 23:30 UTC, reporting on the local date; two days planned ahead.
  auto job = testing::Job("report", "30 23 * * *");
  job.partitions = {"eu"};
  config_.jobs = {job};
  Plan(At("2026-11-30T12:00:00Z"), days{2});
  const int events_before = Events();

  // The same instants in the business timezone: 00:30 in Berlin (UTC+1 in
  // winter) is 23:30 UTC the day before, so each occurrence now reports on
  // the next date.
  config::Config changed = config_;
  changed.jobs[0].schedule = "30 0 * * *";
  changed.jobs[0].timezone = "Europe/Berlin";
  const ConfigImpact impact = Analyze(changed, At("2026-11-30T12:00:00Z"));
  ASSERT_EQ(impact.jobs.size(), 1u);
  const JobImpact& j = impact.jobs[0];
  EXPECT_EQ(j.change, JobChange::kChanged);
  std::vector<std::string> settings;
  for (const auto& s : j.settings) settings.push_back(s.key + ": " + s.from + " -> " + s.to);
  EXPECT_EQ(settings, (std::vector<std::string>{R"(schedule: "30 23 * * *" -> "30 0 * * *")",
                                                R"(timezone: "UTC" -> "Europe/Berlin")"}));
  EXPECT_EQ(Utc(*j.planned_through), "2026-12-02T12:00:00Z");
  EXPECT_EQ(Utc(*j.effective_from), "2026-12-02T12:00:01Z");
  EXPECT_EQ(Utc(j.window_from), "2026-11-30T12:00:00Z");
  EXPECT_EQ(Utc(j.window_to), "2026-12-09T12:00:00Z");

  // Every occurrence of the window, 2026-11-30 .. 2026-12-08 at 23:30 UTC,
  // moves to the next business date; the first two are planned.
  ASSERT_EQ(j.rekeyed.size(), 9u);
  for (std::size_t i = 0; i < j.rekeyed.size(); ++i) {
    const auto& r = j.rekeyed[i];
    const auto date =
        std::chrono::year_month_day(std::chrono::floor<days>(At("2026-11-30T00:00:00Z") + days{i}));
    const auto next = std::chrono::year_month_day(std::chrono::sys_days(date) + days{1});
    EXPECT_EQ(Utc(r.scheduled_at), FormatDate(date) + "T23:30:00Z");
    EXPECT_EQ(r.from_period, FormatDate(date));
    EXPECT_EQ(r.from_business_date, FormatDate(date));
    EXPECT_EQ(r.to_period, FormatDate(next));
    EXPECT_EQ(r.to_business_date, FormatDate(next));
    EXPECT_EQ(r.planned, i < 2) << i;
    EXPECT_EQ(r.run_id.has_value(), i < 2) << i;
  }
  EXPECT_EQ(j.rekeyed_runs, 2);
  // Business date 2026-11-30 is then expected by nobody: its planned run is
  // orphaned. The dates after it stay expected, one day earlier.
  EXPECT_EQ(Keys("report", j.no_longer_expected),
            (std::vector<std::string>{"report/eu/2026-11-30@2026-11-30T23:30:00Z"}));
  EXPECT_TRUE(j.no_longer_expected[0].planned);
  EXPECT_EQ(j.orphaned_runs, 1);
  EXPECT_TRUE(j.newly_expected.empty()) << Keys("report", j.newly_expected)[0];
  EXPECT_FALSE(impact.Unchanged());
  EXPECT_EQ(impact.RekeyedRuns(), 2);
  EXPECT_EQ(impact.OrphanedRuns(), 1);

  // Read-only: nothing recorded.
  EXPECT_EQ(Events(), events_before);
  EXPECT_EQ(store_->JobVersionList("report")->size(), 1u);
}

TEST_F(ConfigImpactTest, DateOffsetChangeReKeysTheSameInstants) {
  auto job = testing::Job("settle", "30 0 * * *", "Asia/Seoul");
  config_.jobs = {job};
  // 00:30 in Seoul is 15:30 UTC the day before: business dates 11-29 and
  // 11-30 ran, 12-01 (at 2026-11-30T15:30Z) is planned.
  for (const char* at : {"2026-11-28T12:00:00Z", "2026-11-29T12:00:00Z", "2026-11-30T12:00:00Z"}) {
    Plan(At(at), days{1});
  }
  config::Config changed = config_;
  changed.jobs[0].date_offset_days = -1;  // the 00:30 run settles yesterday
  const JobImpact j = Analyze(changed, At("2026-11-30T12:00:00Z")).jobs.at(0);
  ASSERT_FALSE(j.rekeyed.empty());
  EXPECT_EQ(Utc(j.rekeyed[0].scheduled_at), "2026-11-30T15:30:00Z");
  EXPECT_EQ(j.rekeyed[0].from_period, "2026-12-01");
  EXPECT_EQ(j.rekeyed[0].to_period, "2026-11-30");
  EXPECT_TRUE(j.rekeyed[0].planned);
  EXPECT_EQ(j.rekeyed_runs, 1);
  // 2026-11-30 already has its run (at 2026-11-29T15:30Z) under the old
  // offset: the new occurrence would be deduplicated into it, so it is not new.
  EXPECT_TRUE(j.newly_expected.empty());
  EXPECT_TRUE(j.no_longer_expected.empty());
}

TEST_F(ConfigImpactTest, DateOffsetChangeByDaysDeduplicatesIntoDoneDates) {
  auto job = testing::Job("settle", "0 9 * * *");
  config_.jobs = {job};
  for (int d = 25; d <= 30; ++d) Plan(At(fmt::format("2026-11-{}T08:00:00Z", d)), days{1});
  config::Config changed = config_;
  changed.jobs[0].date_offset_days = -3;
  const JobImpact j = Analyze(changed, At("2026-11-30T08:00:00Z")).jobs.at(0);
  // Each occurrence now settles three days back: the next three land on
  // dates that already have their run (deduplicated, nothing new runs).
  ASSERT_EQ(j.rekeyed.size(), 8u);  // 09:00 on 11-30 .. 12-07
  EXPECT_EQ(j.rekeyed[0].from_period, "2026-11-30");
  EXPECT_EQ(j.rekeyed[0].to_period, "2026-11-27");
  EXPECT_TRUE(j.rekeyed[0].planned);
  EXPECT_EQ(j.rekeyed_runs, 1);
  // Moved by days, not gone or new: the window's edges do not invent any.
  EXPECT_TRUE(j.no_longer_expected.empty()) << Keys("settle", j.no_longer_expected)[0];
  EXPECT_TRUE(j.newly_expected.empty()) << Keys("settle", j.newly_expected)[0];
}

TEST_F(ConfigImpactTest, ADateKeyOnAFineScheduleListsOnlyTheOccurrencesThatCreateRuns) {
  auto job = testing::Job("poll", "*/5 * * * *");
  job.key = PeriodKey::kDate;  // many attempts a day, one completion
  config_.jobs = {job};
  Plan(At("2026-11-30T08:00:00Z"), hours{1});
  config::Config changed = config_;
  changed.jobs[0].timezone = "Asia/Tokyo";
  const JobImpact j = Analyze(changed, At("2026-11-30T08:00:00Z")).jobs.at(0);
  // Tokyo's date turns at 15:00 UTC: that occurrence now starts the next
  // date. The other 95 of the evening's occurrences move too, but are
  // deduplicated under either key.
  ASSERT_EQ(j.rekeyed.size(), 7u) << Utc(j.rekeyed[1].scheduled_at);
  for (const auto& r : j.rekeyed) {
    EXPECT_EQ(Utc(r.scheduled_at).substr(10), "T15:00:00Z");
    EXPECT_FALSE(r.run_id.has_value());
  }
  EXPECT_EQ(j.rekeyed[0].from_period, "2026-11-30");
  EXPECT_EQ(j.rekeyed[0].to_period, "2026-12-01");
  EXPECT_EQ(j.rekeyed_runs + j.orphaned_runs, 0);
}

TEST_F(ConfigImpactTest, ScheduleChangeAddsAndOrphansOccurrences) {
  auto job = testing::Job("sync", "0 9,18 * * *");  // twice a day: slot keys
  config_.jobs = {job};
  Plan(At("2026-11-30T08:00:00Z"), hours{12});  // plans 09:00 and 18:00 today
  config::Config changed = config_;
  changed.jobs[0].schedule = "0 9,21 * * *";
  const JobImpact j = Analyze(changed, At("2026-11-30T08:00:00Z")).jobs.at(0);
  EXPECT_TRUE(j.rekeyed.empty());
  ASSERT_EQ(j.no_longer_expected.size(), 8u);  // 18:00 on 11-30 .. 12-07
  EXPECT_EQ(Keys("sync", j.no_longer_expected)[0],
            "sync/default/2026-11-30T18:00+00:00@2026-11-30T18:00:00Z");
  EXPECT_TRUE(j.no_longer_expected[0].planned);
  EXPECT_FALSE(j.no_longer_expected[1].planned);
  EXPECT_EQ(j.orphaned_runs, 1);
  // The window ends 7 days after the watermark (20:00): 21:00 on 11-30 .. 12-06.
  ASSERT_EQ(j.newly_expected.size(), 7u);
  EXPECT_EQ(Keys("sync", j.newly_expected)[0],
            "sync/default/2026-11-30T21:00+00:00@2026-11-30T21:00:00Z");
  EXPECT_FALSE(j.newly_expected[0].run_id.has_value());
  EXPECT_EQ(j.rekeyed_runs, 0);

  // Only adding occurrences orphans nothing.
  changed.jobs[0].schedule = "0 9,18,21 * * *";
  const JobImpact added = Analyze(changed, At("2026-11-30T08:00:00Z")).jobs.at(0);
  EXPECT_EQ(added.newly_expected.size(), 7u);
  EXPECT_TRUE(added.no_longer_expected.empty());
  EXPECT_EQ(added.orphaned_runs + added.rekeyed_runs, 0);
}

TEST_F(ConfigImpactTest, PartitionsAddedAndRemoved) {
  auto job = testing::Job("report", "0 9 * * *");
  job.partitions = {"eu", "us"};
  config_.jobs = {job};
  Plan(At("2026-11-30T08:00:00Z"), hours{2});
  config::Config changed = config_;
  changed.jobs[0].partitions = {"ap", "eu"};
  const JobImpact j = Analyze(changed, At("2026-11-30T08:00:00Z")).jobs.at(0);
  EXPECT_EQ(j.change, JobChange::kChanged);
  EXPECT_EQ(j.partitions_added, (std::vector<std::string>{"ap"}));
  EXPECT_EQ(j.partitions_removed, (std::vector<std::string>{"us"}));
  ASSERT_EQ(j.no_longer_expected.size(), 8u);
  for (const auto& k : j.no_longer_expected) EXPECT_EQ(k.partition, "us");
  EXPECT_EQ(Keys("report", j.no_longer_expected)[0], "report/us/2026-11-30@2026-11-30T09:00:00Z");
  EXPECT_EQ(j.orphaned_runs, 1);
  ASSERT_EQ(j.newly_expected.size(), 8u);
  for (const auto& k : j.newly_expected) EXPECT_EQ(k.partition, "ap");
  EXPECT_TRUE(j.rekeyed.empty());
}

TEST_F(ConfigImpactTest, UnchangedNewAndRemovedJobs) {
  auto kept = testing::Job("kept", "0 9 * * *");
  auto retired = testing::Job("retired", "0 */6 * * *");
  config_.jobs = {kept, retired};
  Plan(At("2026-11-30T08:00:00Z"), hours{12});  // retired: 12:00 and 18:00 planned

  EXPECT_TRUE(Analyze(config_, At("2026-11-30T08:00:00Z")).Unchanged());

  config::Config changed;
  changed.dir = config_.dir;
  changed.jobs = {kept, testing::Job("fresh", "0 12 * * *")};
  const ConfigImpact impact = Analyze(changed, At("2026-11-30T08:00:00Z"));
  ASSERT_EQ(impact.jobs.size(), 3u);
  EXPECT_EQ(impact.jobs[0].job, "kept");
  EXPECT_EQ(impact.jobs[0].change, JobChange::kUnchanged);
  EXPECT_TRUE(impact.jobs[0].no_longer_expected.empty());

  const JobImpact& fresh = impact.jobs[1];
  EXPECT_EQ(fresh.change, JobChange::kNew);
  EXPECT_EQ(fresh.newly_expected.size(), 7u);  // 12:00 on 11-30 .. 12-06
  EXPECT_EQ(Keys("fresh", fresh.newly_expected)[0],
            "fresh/default/2026-11-30@2026-11-30T12:00:00Z");
  EXPECT_EQ(fresh.orphaned_runs, 0);

  const JobImpact& gone = impact.jobs[2];
  EXPECT_EQ(gone.job, "retired");
  EXPECT_EQ(gone.change, JobChange::kRemoved);
  EXPECT_EQ(
      Keys("retired", gone.no_longer_expected),
      (std::vector<std::string>{"retired/default/2026-11-30T12:00+00:00@2026-11-30T12:00:00Z",
                                "retired/default/2026-11-30T18:00+00:00@2026-11-30T18:00:00Z"}));
  EXPECT_EQ(gone.orphaned_runs, 2);
  EXPECT_EQ(impact.OrphanedRuns(), 2);
  EXPECT_FALSE(impact.Unchanged());

  // Once its planned runs are behind, a removed job changes nothing more.
  config::Config only_kept = changed;
  only_kept.jobs = {kept};
  const ConfigImpact later = Analyze(only_kept, At("2026-11-30T20:00:00Z"));
  ASSERT_EQ(later.jobs.size(), 2u);
  EXPECT_EQ(later.jobs[1].change, JobChange::kRemoved);
  EXPECT_EQ(later.jobs[1].orphaned_runs, 0);
  EXPECT_TRUE(later.Unchanged());
}

TEST_F(ConfigImpactTest, AScheduleThatFiresEverySecondEndsTheWindowEarly) {
  config::Config changed;
  changed.jobs = {testing::Job("tick", "* * * * * *")};
  const JobImpact j = Analyze(changed, At("2026-11-30T08:00:00Z")).jobs.at(0);
  EXPECT_EQ(j.change, JobChange::kNew);
  // A week of minutes' worth of occurrences, not a week of seconds.
  EXPECT_EQ(Utc(j.window_to), "2026-11-30T10:47:59Z");
  EXPECT_EQ(j.newly_expected.size(), 7u * 24 * 60);
}

}  // namespace
}  // namespace cronledger::engine
