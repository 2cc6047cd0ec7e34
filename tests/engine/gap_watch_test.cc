// The gap scanner inside serve: each new gap is recorded once, never-planned
// and misfired keys are backfilled within backfill.auto_within and wait for
// approval beyond it, waived keys are left alone. Real SQLite, fake clock.
#include "engine/gap_watch.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <stop_token>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/engine_test_util.h"
#include "engine/planner.h"
#include "ledger/names.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::seconds;

using testing::At;

class GapWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-gapwatch-XXXXXX";
    dir_ = mkdtemp(tmpl);
    config_.dir = dir_;
    config::JobConfig job = testing::Job("j", "0 9 * * *");
    job.partitions = {"a"};
    config_.jobs = {job};
    store::SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    // Planned from 11-01; every run succeeded through 11-05.
    Planner planner(config_, *store_, clock_);
    for (auto t = At("2026-11-01T00:00:00Z"); t <= At("2026-11-05T12:00:00Z"); t += hours{6}) {
      ASSERT_TRUE(planner.PlanOnce(t).ok());
    }
    Sql("UPDATE runs SET state = 'succeeded'");
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(db);
  }

  std::string StateOf(const std::string& date) {
    store::RunQuery q;
    q.job = "j";
    q.business_date = date;
    auto runs = store_->RunList(q);
    if (!runs.ok() || runs->empty()) return "none";
    std::string s(ledger::Name(runs->at(0).state));
    if (runs->at(0).reason) s += ":" + std::string(ledger::Name(*runs->at(0).reason));
    return s;
  }

  std::vector<std::string> GapEvents() {
    store::EventQuery q;
    q.job = "j";
    q.type = "gap_found";
    q.limit = 1000;
    std::vector<std::string> out;
    const auto events = store_->EventList(q);
    EXPECT_TRUE(events.ok());
    if (!events.ok()) return out;
    for (const auto& e : *events) {
      const auto d = nlohmann::json::parse(e.details);
      out.push_back(e.run_key + " " + d["cause"].get<std::string>() + " " +
                    d.value("action", "-"));
    }
    return out;
  }

  std::string dir_;
  config::Config config_;
  FakeClock clock_{At("2026-11-01T00:00:00Z")};
  std::unique_ptr<store::SqliteStore> store_;
};

TEST_F(GapWatchTest, BackfillsWithinTheWindowAndAsksForApprovalBeyondIt) {
  config_.jobs[0].backfill.auto_within = days{2};
  Sql("DELETE FROM runs WHERE business_date IN ('2026-11-02', '2026-11-04')");
  Sql("UPDATE runs SET state = 'skipped', reason = 'misfired' WHERE business_date = '2026-11-05'");
  Sql("UPDATE runs SET state = 'skipped', reason = 'coalesced' WHERE business_date = '2026-11-03'");
  Sql("UPDATE runs SET state = 'failed' WHERE business_date = '2026-11-01'");

  GapWatch watch(config_, *store_);
  GapWatchStats stats;
  const auto now = At("2026-11-06T08:00:00Z");
  ASSERT_TRUE(watch.ScanOnce(now, &stats).ok());
  EXPECT_EQ(stats.new_gaps, 4);
  EXPECT_EQ(stats.backfilled, 2);  // 11-04 and 11-05: younger than 2 days
  EXPECT_EQ(stats.awaiting_approval, 1);  // 11-02
  EXPECT_EQ(StateOf("2026-11-02"), "awaiting_approval");
  EXPECT_EQ(StateOf("2026-11-04"), "pending");
  EXPECT_EQ(StateOf("2026-11-05"), "pending");
  EXPECT_EQ(StateOf("2026-11-03"), "skipped:coalesced");  // waived: never touched
  EXPECT_EQ(StateOf("2026-11-01"), "failed");              // needs an operator
  EXPECT_EQ(GapEvents(), (std::vector<std::string>{
                             "j/a/2026-11-01 failed -",
                             "j/a/2026-11-02 never_planned awaiting_approval",
                             "j/a/2026-11-04 never_planned backfilled",
                             "j/a/2026-11-05 misfired backfilled"}));
  store::EventQuery q;
  q.job = "j";
  q.type = "backfill";
  const auto backfills = *store_->EventList(q);
  ASSERT_EQ(backfills.size(), 2u);
  EXPECT_EQ(backfills[0].actor, "scanner");

  // Known gaps are not new: not on the next pass, nor after a restart.
  stats = {};
  ASSERT_TRUE(watch.ScanOnce(now + seconds{60}, &stats).ok());
  GapWatch restarted(config_, *store_);
  ASSERT_TRUE(restarted.ScanOnce(now + seconds{120}, &stats).ok());
  EXPECT_EQ(stats.new_gaps, 0);
  EXPECT_EQ(GapEvents().size(), 4u);
}

// The horizon's first business date is scanned whole, as `gaps` shows it:
// a key at 09:00 on it is recorded though the horizon began at 10:00.
TEST_F(GapWatchTest, TheHorizonsFirstDateIsScannedWhole) {
  config_.jobs[0].backfill.horizon = days{4};
  Sql("DELETE FROM runs WHERE business_date = '2026-11-02'");
  GapWatch watch(config_, *store_);
  GapWatchStats stats;
  ASSERT_TRUE(watch.ScanOnce(At("2026-11-06T10:00:00Z"), &stats).ok());
  EXPECT_EQ(stats.new_gaps, 1);
  EXPECT_EQ(StateOf("2026-11-02"), "awaiting_approval");
}

// Nodes sharing a ledger record each gap once: only the holder of the
// store's scanner role scans. When it stops renewing the role, another node
// takes over once the role has run out (three passes), records what is new
// and not what the first one recorded.
TEST_F(GapWatchTest, NodesSharingALedgerRecordEachGapOnceAndAnotherTakesOver) {
  config_.jobs[0].backfill.auto_within = days{2};
  Sql("DELETE FROM runs WHERE business_date = '2026-11-04'");
  GapWatchOptions o1;
  o1.node = "n1";
  GapWatchOptions o2;
  o2.node = "n2";
  GapWatch n1(config_, *store_, o1);
  GapWatch n2(config_, *store_, o2);
  const auto now = At("2026-11-06T08:00:00Z");
  GapWatchStats stats;
  ASSERT_TRUE(n1.ScanOnce(now, &stats).ok());
  ASSERT_TRUE(n2.ScanOnce(now, &stats).ok());
  EXPECT_EQ(stats.new_gaps, 1);
  EXPECT_EQ(stats.backfilled, 1);
  EXPECT_EQ(GapEvents(), (std::vector<std::string>{"j/a/2026-11-04 never_planned backfilled"}));

  // n1 stops; a run fails meanwhile.
  Sql("UPDATE runs SET state = 'failed' WHERE business_date = '2026-11-03'");
  ASSERT_TRUE(n2.ScanOnce(now + seconds{120}, &stats).ok());  // n1's role runs to +180 s
  EXPECT_EQ(GapEvents().size(), 1u);
  ASSERT_TRUE(n2.ScanOnce(now + seconds{200}, &stats).ok());
  EXPECT_EQ(GapEvents(), (std::vector<std::string>{"j/a/2026-11-04 never_planned backfilled",
                                                   "j/a/2026-11-03 failed -"}));
  EXPECT_EQ(stats.new_gaps, 2);
}

TEST_F(GapWatchTest, KeysThePlannerHasNotReachedAreLeftToThePlanner) {
  // Planned through 11-05 12:00 (SetUp); 11-06 09:00 is due but unplanned,
  // as when a planning pass failed: not a gap for serve to act on.
  GapWatch watch(config_, *store_);
  GapWatchStats stats;
  ASSERT_TRUE(watch.ScanOnce(At("2026-11-06T12:00:00Z"), &stats).ok());
  EXPECT_EQ(stats.new_gaps, 0);
  EXPECT_EQ(StateOf("2026-11-06"), "none");
}

TEST_F(GapWatchTest, IncrementalPassesSeeRecentChangesAndFullScansTheRest) {
  GapWatchOptions options;
  options.every = seconds{60};
  options.full_scan_every = hours{1};
  GapWatch watch(config_, *store_, options);
  auto now = At("2026-11-05T12:00:00Z");
  GapWatchStats stats;
  ASSERT_TRUE(watch.ScanOnce(now, &stats).ok());
  EXPECT_EQ(stats.new_gaps, 0);

  // A recent run fails: the next pass sees it. An old one: the next full scan.
  Sql("UPDATE runs SET state = 'failed' WHERE business_date IN ('2026-11-05', '2026-11-01')");
  now += seconds{60};
  ASSERT_TRUE(watch.ScanOnce(now, &stats).ok());
  EXPECT_EQ(GapEvents(), std::vector<std::string>{"j/a/2026-11-05 failed -"});
  now += hours{1};
  ASSERT_TRUE(watch.ScanOnce(now, &stats).ok());
  EXPECT_EQ(GapEvents(), (std::vector<std::string>{"j/a/2026-11-05 failed -",
                                                   "j/a/2026-11-01 failed -"}));
  // Not due yet: nothing happens before NextAt.
  EXPECT_GT(watch.NextAt(), now);
}

// After a long outage a pass finds more gaps than one batch holds: every
// one is recorded once, with its run, and a stopped pass leaves them all to
// the next one.
TEST_F(GapWatchTest, ManyGapsAreRecordedInBatchesAndAStoppedPassLeavesThemToTheNext) {
  config_.jobs.push_back(testing::Job("m", "* * * * *"));
  Planner planner(config_, *store_, clock_);
  ASSERT_TRUE(planner.PlanOnce(At("2026-11-05T00:00:00Z")).ok());
  ASSERT_TRUE(planner.PlanOnce(At("2026-11-06T00:00:00Z")).ok());
  ASSERT_TRUE(planner.ReleaseOnce(At("2026-11-06T00:00:00Z")).ok());  // a day late: misfires
  store::RunQuery q;
  q.job = "m";
  q.limit = 100000;
  auto before = store_->RunList(q);
  ASSERT_TRUE(before.ok());
  int misfired = 0;
  for (const auto& r : *before) {
    if (r.reason && *r.reason == ledger::SkipReason::kMisfired) ++misfired;
  }
  ASSERT_GT(misfired, 1000);  // more than one batch

  GapWatch watch(config_, *store_);
  const auto now = At("2026-11-06T00:00:30Z");
  std::stop_source stop;
  stop.request_stop();
  GapWatchStats stopped;
  ASSERT_TRUE(watch.ScanOnce(now, &stopped, stop.get_token()).ok());
  EXPECT_EQ(stopped.new_gaps, 0);

  GapWatchStats stats;
  ASSERT_TRUE(watch.ScanOnce(now + hours{2}, &stats).ok());
  EXPECT_EQ(stats.awaiting_approval, misfired);
  store::EventQuery eq;
  eq.job = "m";
  eq.type = "gap_found";
  eq.limit = 100000;
  const auto events = store_->EventList(eq);
  ASSERT_TRUE(events.ok());
  std::set<int64_t> runs;
  int awaiting = 0;
  for (const auto& e : *events) {
    const auto d = nlohmann::json::parse(e.details);
    if (d["cause"] != "misfired") continue;
    EXPECT_EQ(d.value("action", ""), "awaiting_approval") << e.run_key;
    ASSERT_TRUE(e.run_id.has_value()) << e.run_key;
    auto run = store_->RunGet(*e.run_id);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->RunKey(), e.run_key);
    EXPECT_EQ(run->state, ledger::RunState::kAwaitingApproval);
    runs.insert(*e.run_id);
    ++awaiting;
  }
  EXPECT_EQ(awaiting, misfired);
  EXPECT_EQ(static_cast<int>(runs.size()), misfired);  // one event per gap

  GapWatchStats again;  // a full pass later finds nothing new
  ASSERT_TRUE(watch.ScanOnce(now + hours{4}, &again).ok());
  EXPECT_EQ(again.new_gaps, 0);
}

}  // namespace
}  // namespace cronledger::engine
