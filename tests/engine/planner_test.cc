// The planner against a real SQLite store and a fake clock.
#include "engine/planner.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "engine/engine_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

using testing::At;
using testing::Job;

class PlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-planner-XXXXXX";
    dir_ = mkdtemp(tmpl);
    config_.dir = dir_;
    config_.server.store = "sqlite:" + dir_ + "/ledger.db";
    Open();
  }
  void TearDown() override {
    planner_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Open(store::sqlite::StatementHook hook = nullptr) {
    planner_.reset();
    store_.reset();
    store::SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    o.statement_hook = std::move(hook);
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  // A pass of this process's planner; reopening the store "restarts" it.
  Status Pass(const std::string& now) {
    if (!planner_) planner_ = std::make_unique<Planner>(config_, *store_, clock_);
    return planner_->RunOnce(At(now));
  }

  // "partition/period state[:reason]" of every run, by run key.
  std::vector<std::string> Ledger(const std::string& job) {
    store::RunQuery q;
    q.job = job;
    q.limit = 1000000;
    auto runs = store_->RunList(q);
    EXPECT_TRUE(runs.ok());
    std::vector<std::string> out;
    for (const auto& r : *runs) {
      std::string s = r.partition + "/" + r.period + " " + std::string(ledger::Name(r.state));
      if (r.reason) s += ":" + std::string(ledger::Name(*r.reason));
      out.push_back(s);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<store::EventRecord> Events(const std::string& job, const std::string& type) {
    store::EventQuery q;
    q.job = job;
    q.type = type;
    q.limit = 1000000;
    return *store_->EventList(q);
  }

  std::string WriteScript(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }

  std::string dir_;
  config::Config config_;
  FakeClock clock_{At("2026-11-01T00:00:00Z")};
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Planner> planner_;
};

TEST_F(PlannerTest, PlansUpToLookaheadFromJobCreation) {
  auto job = Job("report", "0 * * * *");
  job.partitions = {"acme", "globex"};
  config_.jobs = {job};
  ASSERT_TRUE(Pass("2026-11-05T09:59:30Z").ok());
  // Created at 09:59:30: the 10:00 occurrence is within the 60 s lookahead.
  EXPECT_EQ(Ledger("report"), (std::vector<std::string>{
                                  "acme/2026-11-05T10:00+00:00 pending",
                                  "globex/2026-11-05T10:00+00:00 pending"}));
  ASSERT_TRUE(Pass("2026-11-05T12:30:00Z").ok());
  EXPECT_EQ(Ledger("report").size(), 6u);  // 10:00, 11:00, 12:00 x 2
  auto job_record = store_->JobGet("report");
  EXPECT_EQ(FormatUtc(*job_record->planned_through), "2026-11-05T12:31:00Z");
}

// The job's version and its partitions are recorded by two transactions;
// a second boundary between them (nodes starting together, a busy
// database: FaultNodes.NodesPlanningAtOnceCreateEachRunOnce found it) gives
// a version in force from 09:00:00 and members from 09:00:01. Planning
// starts at the first member: no occurrence is recorded without runs.
TEST_F(PlannerTest, ANewJobsFirstOccurrenceWaitsForItsFirstPartitions) {
  auto job = Job("fast", "* * * * * *");
  job.partitions = {"acme", "globex"};
  config_.jobs = {job};
  const auto at = [](const std::string& t, int ms) {
    return store::ToInstant(At(t)) + std::chrono::milliseconds(ms);
  };
  ASSERT_TRUE(store_->JobSync({"fast", CanonicalDefinition(job), at("2026-11-05T08:59:59Z", 900)})
                  .ok());
  ASSERT_TRUE(
      store_->PartitionSync({"fast", {"acme", "globex"}, at("2026-11-05T09:00:00Z", 100)}).ok());
  ASSERT_EQ(FormatUtc(store_->JobVersionList("fast")->front().effective_from),
            "2026-11-05T09:00:00Z");
  ASSERT_EQ(FormatUtc(store_->PartitionHistory("fast")->front().active_from),
            "2026-11-05T09:00:01Z");
  ASSERT_TRUE(Pass("2026-11-05T09:00:00Z").ok());
  const auto runs = Ledger("fast");
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.front(), "acme/2026-11-05T09:00:01+00:00 pending")
      << "the first occurrence with members";
  // Every recorded occurrence has its runs (60 seconds, 2 partitions each).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir_ + "/ledger.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  const auto count = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
    const int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
  };
  EXPECT_EQ(count("SELECT count(*) FROM occurrences o WHERE NOT EXISTS (SELECT 1 FROM runs r "
                  "WHERE r.job = o.job AND r.scheduled_at = o.scheduled_at)"),
            0)
      << "an occurrence recorded with no runs";
  EXPECT_EQ(count("SELECT count(*) FROM occurrences"), 60);
  sqlite3_close(db);
  EXPECT_EQ(runs.size(), 2u * 60);
  EXPECT_EQ(Events("fast", "planned").size(), runs.size());
}

TEST_F(PlannerTest, DailyScheduleUsesBusinessDateAsPeriod) {
  auto job = Job("daily_report", "0 9 * * *", "Asia/Seoul");
  job.date_offset_days = -1;
  config_.jobs = {job};
  ASSERT_TRUE(Pass("2026-11-27T00:00:00Z").ok());
  ASSERT_TRUE(Pass("2026-11-29T00:00:30Z").ok());
  EXPECT_EQ(Ledger("daily_report"),
            (std::vector<std::string>{"default/2026-11-26 pending",
                                      "default/2026-11-27 skipped:misfired",
                                      "default/2026-11-28 pending"}))
      << "09:00 KST = 00:00Z, for the day before; the 28th's run was due a day ago";
}

TEST_F(PlannerTest, ReplanningIsANoOp) {
  auto job = Job("j", "*/15 * * * *");
  job.partitions = {"a", "b"};
  config_.jobs = {job};
  ASSERT_TRUE(Pass("2026-11-05T10:00:00Z").ok());
  ASSERT_TRUE(Pass("2026-11-05T11:00:00Z").ok());
  const auto before = Ledger("j");
  const auto events = Events("j", "planned").size();
  ASSERT_TRUE(Pass("2026-11-05T11:00:00Z").ok());
  ASSERT_TRUE(Pass("2026-11-05T10:30:00Z").ok());  // a clock that went back
  EXPECT_EQ(Ledger("j"), before);
  EXPECT_EQ(Events("j", "planned").size(), events);
}

TEST_F(PlannerTest, DateKeyOnAFinerScheduleDeduplicates) {
  auto job = Job("j", "0 */6 * * *");
  job.key = PeriodKey::kDate;
  config_.jobs = {job};
  ASSERT_TRUE(Pass("2026-11-04T23:00:00Z").ok());
  ASSERT_TRUE(Pass("2026-11-05T23:00:00Z").ok());
  // One run for the 5th (at 00:00), later occurrences deduplicated.
  const auto ledger = Ledger("j");
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].substr(0, 18), "default/2026-11-05");
  EXPECT_EQ(Events("j", "deduplicated").size(), 3u);  // 06:00, 12:00, 18:00
}

TEST_F(PlannerTest, DefinitionChangeJudgesThePastByTheOldVersion) {
  config_.jobs = {Job("j", "0 9 * * *")};
  ASSERT_TRUE(Pass("2026-11-05T00:00:00Z").ok());
  ASSERT_TRUE(Pass("2026-11-05T09:30:00Z").ok());  // the 09:00 run is planned
  config_.jobs = {Job("j", "0 18 * * *")};
  ASSERT_TRUE(Pass("2026-11-05T10:00:00Z").ok());
  ASSERT_TRUE(Pass("2026-11-06T19:00:00Z").ok());
  auto versions = store_->JobVersionList("j");
  ASSERT_EQ(versions->size(), 2u);
  // Runs keep what they were planned with; the new schedule applies from its
  // effective instant on. The 5th already has its run (key = date), so the
  // 18:00 occurrence that day is deduplicated rather than run twice.
  store::RunQuery q;
  q.job = "j";
  auto runs = *store_->RunList(q);
  std::set<std::string> scheduled;
  for (const auto& r : runs) scheduled.insert(FormatUtc(r.scheduled_at) + " v" + std::to_string(r.job_version));
  EXPECT_EQ(scheduled, (std::set<std::string>{"2026-11-05T09:00:00Z v1",
                                              "2026-11-06T18:00:00Z v2"}));
  const auto dedup = Events("j", "deduplicated");
  ASSERT_EQ(dedup.size(), 1u);
  EXPECT_NE(dedup[0].details.find("2026-11-05T18:00:00Z"), std::string::npos);
  const auto changed = Events("j", "config_changed");
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_NE(changed[1].details.find(R"("schedule":{"from":"0 9 * * *","to":"0 18 * * *"})"),
            std::string::npos)
      << changed[1].details;
}

TEST_F(PlannerTest, PartitionsCommandDefinesAndFollowsTheSet) {
  const std::string list = dir_ + "/customers.txt";
  std::ofstream(list) << "acme\nglobex\n";
  auto job = Job("j", "0 * * * *");
  job.partitions_command = {WriteScript("list", "cat " + list)};
  config_.jobs = {job};
  ASSERT_TRUE(Pass("2026-11-05T09:59:30Z").ok());
  std::ofstream(list) << "acme\ninitech\n";
  ASSERT_TRUE(Pass("2026-11-05T10:59:30Z").ok());
  std::vector<std::string> keys;
  for (const auto& line : Ledger("j")) keys.push_back(line.substr(0, line.find(' ')));
  EXPECT_EQ(keys, (std::vector<std::string>{"acme/2026-11-05T10:00+00:00",
                                            "acme/2026-11-05T11:00+00:00",
                                            "globex/2026-11-05T10:00+00:00",
                                            "initech/2026-11-05T11:00+00:00"}));
  auto history = *store_->PartitionHistory("j");
  ASSERT_EQ(history.size(), 3u);
}

TEST_F(PlannerTest, FailingPartitionsCommandChangesNothingAndIsReportedOnce) {
  const std::string list = dir_ + "/customers.txt";
  std::ofstream(list) << "acme\nglobex\n";
  const std::string flag = dir_ + "/fail";
  auto job = Job("j", "0 * * * *");
  job.partitions_command = {
      WriteScript("list", "if [ -e " + flag + " ]; then echo boom >&2; exit 3; fi; cat " + list)};
  config_.jobs = {job};
  ASSERT_TRUE(Pass("2026-11-05T09:59:30Z").ok());
  std::ofstream(flag) << "";
  ASSERT_TRUE(Pass("2026-11-05T10:59:30Z").ok());
  ASSERT_TRUE(Pass("2026-11-05T11:59:30Z").ok());
  // Both partitions keep being planned while the command fails.
  std::set<std::string> partitions;
  for (const auto& line : Ledger("j")) partitions.insert(line.substr(0, line.find('/')));
  EXPECT_EQ(partitions, (std::set<std::string>{"acme", "globex"}));
  EXPECT_EQ(Ledger("j").size(), 6u);
  const auto failed = Events("j", "partitions_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].reason, "exited with status 3");
  EXPECT_NE(failed[0].details.find("boom"), std::string::npos) << failed[0].details;
}

TEST_F(PlannerTest, InvalidPartitionIdsAndTimeoutsAreFailures) {
  auto job = Job("j", "0 * * * *");
  job.partitions_command = {WriteScript("bad", "echo acme; echo 'has space'")};
  config_.jobs = {job};
  ASSERT_TRUE(Pass("2026-11-05T09:59:30Z").ok());
  auto failed = Events("j", "partitions_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].reason, "line 2: \"has space\" is not a valid partition id");
  // Never had partitions: nothing is planned yet.
  EXPECT_TRUE(Ledger("j").empty());

  // Ids that are paths above log_dir or options to a command.
  for (const char* bad : {"..", "-rf"}) {
    auto path_like = Job(std::string("p") + (bad[0] == '.' ? "dots" : "dash"), "0 * * * *");
    path_like.partitions_command = {
        WriteScript(path_like.name, std::string("echo acme; echo '") + bad + "'")};
    config_.jobs = {path_like};
    ASSERT_TRUE(Pass("2026-11-05T09:59:30Z").ok());
    const auto refused = Events(path_like.name, "partitions_failed");
    ASSERT_EQ(refused.size(), 1u) << bad;
    EXPECT_EQ(refused[0].reason,
              std::string("line 2: \"") + bad + "\" is not a valid partition id");
    EXPECT_TRUE(Ledger(path_like.name).empty());
  }
  config_.jobs = {job};

  auto slow = Job("k", "0 * * * *");
  slow.partitions_command = {WriteScript("slow", "exec sleep 30")};
  config_.jobs = {slow};
  PlannerOptions options;
  options.partitions_timeout = std::chrono::milliseconds{200};
  Planner planner(config_, *store_, RealClock(), options);
  ASSERT_TRUE(planner.RunOnce(At("2026-11-05T09:59:30Z")).ok());
  failed = Events("k", "partitions_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].reason, "timed out after 200 ms");
}

TEST_F(PlannerTest, DowntimeWithEachCatchupPolicy) {
  for (auto catchup : {ledger::Catchup::kAll, ledger::Catchup::kLatest, ledger::Catchup::kNone}) {
    SCOPED_TRACE(static_cast<int>(catchup));
    TearDown();
    SetUp();
    auto job = Job("j", "0 * * * *");
    job.catchup = catchup;
    job.misfire_grace = minutes{90};
    config_.jobs = {job};
    ASSERT_TRUE(Pass("2026-11-05T05:30:00Z").ok());
    // Down from 05:30 to 09:10: 06:00 .. 09:00 are overdue at once.
    ASSERT_TRUE(Pass("2026-11-05T09:10:00Z").ok());
    const auto ledger = Ledger("j");
    ASSERT_EQ(ledger.size(), 4u);
    const std::vector<std::string> expected =
        catchup == ledger::Catchup::kAll
            ? std::vector<std::string>{"default/2026-11-05T06:00+00:00 skipped:misfired",
                                       "default/2026-11-05T07:00+00:00 skipped:misfired",
                                       "default/2026-11-05T08:00+00:00 pending",
                                       "default/2026-11-05T09:00+00:00 pending"}
        : catchup == ledger::Catchup::kLatest
            ? std::vector<std::string>{"default/2026-11-05T06:00+00:00 skipped:coalesced",
                                       "default/2026-11-05T07:00+00:00 skipped:coalesced",
                                       "default/2026-11-05T08:00+00:00 skipped:coalesced",
                                       "default/2026-11-05T09:00+00:00 pending"}
            : std::vector<std::string>{"default/2026-11-05T06:00+00:00 skipped:catchup_none",
                                       "default/2026-11-05T07:00+00:00 skipped:catchup_none",
                                       "default/2026-11-05T08:00+00:00 skipped:catchup_none",
                                       "default/2026-11-05T09:00+00:00 skipped:catchup_none"};
    EXPECT_EQ(ledger, expected);
    EXPECT_EQ(Events("j", "skipped").size(),
              static_cast<std::size_t>(catchup == ledger::Catchup::kNone ? 4 : catchup == ledger::Catchup::kLatest ? 3 : 2));
  }
}

TEST_F(PlannerTest, PauseHoldRunsOnResumeAndSkipRecords) {
  auto hold = Job("hold", "0 * * * *");
  hold.misfire_grace = minutes{5};
  auto skip = Job("skip", "0 * * * *");
  skip.on_pause = ledger::OnPause::kSkip;
  config_.jobs = {hold, skip};
  ASSERT_TRUE(Pass("2026-11-05T05:30:00Z").ok());
  ASSERT_TRUE(store_->JobSetPaused({std::nullopt, true, "ops", "migration",
                                    store::ToInstant(At("2026-11-05T05:40:00Z"))})
                  .ok());
  for (const char* t : {"2026-11-05T06:00:10Z", "2026-11-05T07:00:10Z", "2026-11-05T08:00:10Z"}) {
    ASSERT_TRUE(Pass(t).ok());
  }
  EXPECT_EQ(Ledger("hold"), (std::vector<std::string>{"default/2026-11-05T06:00+00:00 pending",
                                                      "default/2026-11-05T07:00+00:00 pending",
                                                      "default/2026-11-05T08:00+00:00 pending"}));
  EXPECT_EQ(Ledger("skip"), (std::vector<std::string>{"default/2026-11-05T06:00+00:00 skipped:paused",
                                                      "default/2026-11-05T07:00+00:00 skipped:paused",
                                                      "default/2026-11-05T08:00+00:00 skipped:paused"}));
  ASSERT_TRUE(store_->JobSetPaused({std::nullopt, false, "ops", "done",
                                    store::ToInstant(At("2026-11-05T08:30:00Z"))})
                  .ok());
  ASSERT_TRUE(Pass("2026-11-05T08:30:00Z").ok());
  // Held runs run whatever their age (grace is 5 minutes).
  auto due = store_->RunListDue(store::ToInstant(At("2026-11-05T08:30:00Z")), 100);
  ASSERT_TRUE(due.ok());
  EXPECT_EQ(due->size(), 3u);
}

// A crash at any SQL statement of a planning pass leaves no duplicate and no
// hole: after each possible failure point, a clean re-plan produces exactly
// the ledger an uninterrupted pass produces.
TEST_F(PlannerTest, CrashAtEveryStatementThenReplanConverges) {
  auto job = Job("j", "*/20 * * * *");
  job.partitions = {"a", "b", "c"};
  auto other = Job("k", "0 * * * *");
  config_.jobs = {job, other};
  const std::string first = "2026-11-05T08:00:00Z";
  const std::string second = "2026-11-05T10:00:00Z";

  // The reference: two uninterrupted passes, counting the second's statements.
  ASSERT_TRUE(Pass(first).ok());
  int counted = 0;
  Open([&](std::string_view) {
    ++counted;
    return Status::Ok();
  });
  ASSERT_TRUE(Pass(second).ok());
  const int statements = counted;
  Open();
  const auto reference_j = Ledger("j");
  const auto reference_k = Ledger("k");
  const auto reference_planned = Events("j", "planned").size();
  ASSERT_GT(statements, 1);
  ASSERT_EQ(reference_j.size(), 21u);  // 08:00 .. 10:00 every 20 minutes, 3 partitions
  const std::string db = dir_ + "/ledger.db";

  int injection_points = 0;
  for (int fail_at = 1; fail_at <= statements; ++fail_at) {
    SCOPED_TRACE(fail_at);
    // Fresh ledger, first pass clean.
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
    Open();
    ASSERT_TRUE(Pass(first).ok());
    int n = 0;
    Open([&](std::string_view sql) {
      if (++n == fail_at) {
        return Status(StatusCode::kIOError, "injected failure at: " + std::string(sql.substr(0, 40)));
      }
      return Status::Ok();
    });
    const Status crashed = Pass(second);
    ++injection_points;
    EXPECT_FALSE(crashed.ok()) << "statement " << fail_at << " of " << statements;
    Open();  // the "restarted" process
    ASSERT_TRUE(Pass(second).ok());
    EXPECT_EQ(Ledger("j"), reference_j);
    EXPECT_EQ(Ledger("k"), reference_k);
    EXPECT_EQ(Events("j", "planned").size(), reference_planned);
    EXPECT_EQ(Events("j", "config_changed").size(), 1u);
  }
  EXPECT_EQ(injection_points, statements);
}

// An idle server must not touch the ledger for jobs with nothing new: a job
// is planned again only when its next occurrence enters the lookahead.
TEST_F(PlannerTest, PlansAJobAgainOnlyWhenItsNextOccurrenceIsNear) {
  int writes = 0;
  Open([&](std::string_view sql) {
    if (sql.starts_with("INSERT") || sql.starts_with("UPDATE") || sql.starts_with("BEGIN")) {
      ++writes;
    }
    return Status::Ok();
  });
  config_.jobs = {Job("daily", "0 9 * * *"), Job("hourly", "30 * * * *")};
  planner_ = std::make_unique<Planner>(config_, *store_, clock_);
  EXPECT_EQ(planner_->NextPlanAt(), std::chrono::sys_seconds{}) << "never planned: at once";
  ASSERT_TRUE(planner_->PlanOnce(At("2026-11-05T10:00:00Z")).ok());
  // The hourly job's 10:30 enters the minute of lookahead at 10:29.
  EXPECT_EQ(FormatUtc(planner_->NextPlanAt()), "2026-11-05T10:29:00Z");

  writes = 0;
  ASSERT_TRUE(planner_->PlanOnce(At("2026-11-05T10:28:59Z")).ok());
  EXPECT_EQ(writes, 0) << "nothing new to plan, nothing written";

  ASSERT_TRUE(planner_->PlanOnce(At("2026-11-05T10:29:00Z")).ok());
  EXPECT_GT(writes, 0);
  EXPECT_EQ(Ledger("hourly"), (std::vector<std::string>{"default/2026-11-05T10:30+00:00 pending"}));
  EXPECT_TRUE(Ledger("daily").empty()) << "tomorrow's 09:00 is not within the lookahead";
  EXPECT_EQ(FormatUtc(planner_->NextPlanAt()), "2026-11-05T11:29:00Z");

  // A changed definition is planned at once, whatever the next occurrence.
  config_.jobs[0].schedule = "0 11 * * *";
  writes = 0;
  ASSERT_TRUE(planner_->PlanOnce(At("2026-11-05T10:59:30Z")).ok());
  EXPECT_GT(writes, 0);
  EXPECT_EQ(Ledger("daily"), (std::vector<std::string>{"default/2026-11-05 pending"}));
}

// The release pass asks the store which jobs have runs due rather than every
// job, and reports when the next planned run falls due.
TEST_F(PlannerTest, ReleaseKnowsWhenTheNextRunFallsDue) {
  config_.jobs = {Job("a", "0 9 * * *"), Job("b", "*/5 * * * *")};
  planner_ = std::make_unique<Planner>(config_, *store_, clock_);
  ASSERT_TRUE(planner_->PlanOnce(At("2026-11-05T08:59:10Z")).ok());
  PlanPassStats stats;
  ASSERT_TRUE(planner_->ReleaseOnce(At("2026-11-05T08:59:10Z"), &stats).ok());
  EXPECT_EQ(stats.released, 0);
  ASSERT_TRUE(planner_->NextReleaseAt().has_value());
  EXPECT_EQ(FormatUtc(*planner_->NextReleaseAt()), "2026-11-05T09:00:00Z");
  ASSERT_TRUE(planner_->ReleaseOnce(At("2026-11-05T09:00:00Z"), &stats).ok());
  EXPECT_EQ(stats.released, 2);
  EXPECT_FALSE(planner_->NextReleaseAt().has_value()) << "09:05 is not planned yet";
}

}  // namespace
}  // namespace cronledger::engine
