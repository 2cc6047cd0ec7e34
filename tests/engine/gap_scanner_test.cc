// The gap scanner against a real SQLite ledger planned by the real planner:
// what it expects equals what the planner plans (a difference would be a
// phantom gap or a hidden one), and each kind of gap is found with its cause.
#include "engine/gap_scanner.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/engine_test_util.h"
#include "engine/planner.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

using testing::At;

std::chrono::year_month_day Date(const std::string& text) {
  return std::chrono::year_month_day(std::chrono::floor<days>(*ParseRfc3339(text + "T00:00:00Z")));
}

config::JobConfig Job(const std::string& schedule, const std::string& tz = "UTC") {
  return testing::Job("j", schedule, tz);
}

class GapScannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-gaps-XXXXXX";
    dir_ = mkdtemp(tmpl);
    config_.dir = dir_;
    config_.server.store = "sqlite:" + dir_ + "/ledger.db";
    store::SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    planner_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Plans with the current config_ (a changed config is a new planner, as
  // after a restart).
  void Plan(Clock::TimePoint now, bool restart = false) {
    if (!planner_ || restart) planner_ = std::make_unique<Planner>(config_, *store_, clock_);
    ASSERT_TRUE(planner_->PlanOnce(now).ok());
  }

  // Changes the ledger behind the planner's back.
  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    const std::string message = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message << "\n" << sql;
  }

  std::vector<Gap> Scan(const std::string& from, const std::string& to, Clock::TimePoint now,
                        bool include_waived = false) {
    GapScanner scanner(*store_);
    std::vector<Gap> gaps;
    GapScanParams p{Date(from), Date(to), store::ToInstant(now), include_waived};
    Status s = scanner.Scan(config_.jobs[0], p, [&](const Gap& g) {
      gaps.push_back(g);
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return gaps;
  }

  // "run_key cause[ waived]", sorted.
  static std::vector<std::string> Keys(const std::vector<Gap>& gaps) {
    std::vector<std::string> out;
    for (const auto& g : gaps) out.push_back(g.RunKey() + " " + g.cause + (g.waived ? " waived" : ""));
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string dir_;
  config::Config config_;
  FakeClock clock_{At("2026-11-01T00:00:00Z")};
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<Planner> planner_;
};

// Over random jobs (schedules, zones with DST changes, offsets, keys,
// partitions joining and leaving, a definition change), planned by passes
// at random moments: with max_lag 0 every planned due run is "stuck", so
// the scanner's report must be exactly the planned due runs, and nothing
// never_planned.
TEST_F(GapScannerTest, ExpectsExactlyTheKeysThePlannerPlans) {
  const std::vector<std::string> schedules = {"0 9 * * *",   "30 2 * * *",  "*/30 * * * *",
                                              "0 */6 * * *", "15 1-3 * * *", "0 0 * * 1-5",
                                              "0 23 * * *",  "45 0 1,15 * *"};
  const std::vector<std::string> zones = {"UTC",           "America/New_York",    "Europe/Berlin",
                                          "Asia/Seoul",    "Australia/Lord_Howe", "America/Santiago",
                                          "Asia/Kolkata"};
  // Windows across DST changes: US and EU spring/autumn, southern autumn.
  const std::vector<std::string> starts = {"2026-03-04T05:00:00Z", "2026-10-21T05:00:00Z",
                                           "2026-03-25T05:00:00Z", "2026-04-01T05:00:00Z",
                                           "2026-10-30T05:00:00Z"};
  const unsigned seed = static_cast<unsigned>(std::random_device{}());
  std::mt19937 rng(seed);
  const auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  std::size_t compared = 0;
  for (int iteration = 0; iteration < 12; ++iteration) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " iteration " + std::to_string(iteration));
    TearDown();
    SetUp();
    config::JobConfig job = Job(pick(schedules), pick(zones));
    job.date_offset_days = static_cast<int>(rng() % 3) - 1;
    if (rng() % 3 == 0) job.key = rng() % 2 ? PeriodKey::kDate : PeriodKey::kSlot;
    job.partitions = {"a", "b"};
    config_.jobs = {job};
    SCOPED_TRACE(job.schedule + " " + job.timezone + " offset " +
                 std::to_string(job.date_offset_days));

    Clock::TimePoint now = At(pick(starts));
    const Clock::TimePoint start = now;
    const Clock::TimePoint end = start + days{9} + seconds{17};
    bool changed_partitions = false, changed_schedule = false;
    while (now < end) {
      Plan(now);
      now += minutes(1 + rng() % (18 * 60));
      if (!changed_partitions && now > start + days{3}) {
        config_.jobs[0].partitions = {"b", "c"};  // a leaves, c joins
        changed_partitions = true;
        Plan(now, /*restart=*/true);
      }
      if (!changed_schedule && now > start + days{6}) {
        config_.jobs[0].schedule = pick(schedules);
        config_.jobs[0].timezone = pick(zones);
        changed_schedule = true;
        Plan(now, /*restart=*/true);
      }
    }
    now = end;
    Plan(now);
    config_.jobs[0].alert.max_lag = seconds{0};

    const std::string from = FormatDate(Date("2026-01-01"));
    const std::string to = FormatDate(Date("2026-12-31"));
    std::set<std::string> stuck;
    for (const auto& g : Scan(from, to, now)) {
      ASSERT_EQ(g.cause, "stuck") << g.RunKey() << " " << g.cause;
      stuck.insert(g.RunKey());
    }
    store::RunQuery q;
    q.job = "j";
    q.limit = 1000000;
    std::set<std::string> planned_due;
    const auto runs = store_->RunList(q);
    ASSERT_TRUE(runs.ok());
    for (const auto& r : *runs) {
      if (r.scheduled_at < std::chrono::floor<seconds>(now)) planned_due.insert(r.RunKey());
    }
    // (A schedule that never fired in the window plans nothing.)
    compared += planned_due.size();
    EXPECT_EQ(stuck, planned_due);
  }
  EXPECT_GT(compared, 100u);
}

// key = date over a schedule that fires many times a day: the period's
// first occurrence is its key (the planner deduplicates the later ones), so
// the scanner yields each key once, not once per occurrence. (A rerun's
// preview digest counted the later ones and went stale every tick.)
TEST_F(GapScannerTest, AKeyOfManyOccurrencesIsExpectedOnce) {
  config::JobConfig job = Job("*/30 * * * *");
  job.key = PeriodKey::kDate;
  job.partitions = {"a", "b"};
  config_.jobs = {job};
  Plan(At("2026-03-04T05:00:00Z"));
  Plan(At("2026-03-05T07:00:00Z"));
  GapScanner scanner(*store_);
  GapScanParams p;
  p.from = Date("2026-03-03");
  p.to = Date("2026-03-06");
  p.now = store::ToInstant(At("2026-03-05T07:00:00Z"));
  p.include_waived = true;
  std::map<std::string, int> seen;
  ASSERT_TRUE(scanner
                  .ForEachKey(config_.jobs[0], p,
                              [&](const ExpectedKey& k) {
                                ++seen[k.partition + "/" + k.period];
                                return Status::Ok();
                              })
                  .ok());
  EXPECT_EQ(seen.size(), 4u);  // a and b on the 4th and the 5th
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key;
}

TEST_F(GapScannerTest, FindsEachKindOfGapWithItsCause) {
  config_.jobs = {Job("0 9 * * *")};
  config_.jobs[0].partitions = {"a", "b"};
  const auto start = At("2026-11-01T00:00:00Z");
  for (auto t = start; t <= At("2026-11-08T00:00:00Z"); t += hours{6}) Plan(t);
  const auto now = At("2026-11-08T00:00:00Z");

  const auto set_state = [&](const std::string& partition, const std::string& date,
                             const std::string& assignment) {
    Sql("UPDATE runs SET " + assignment + " WHERE partition = '" + partition +
        "' AND business_date = '" + date + "'");
  };
  set_state("a", "2026-11-01", "state = 'succeeded'");
  set_state("b", "2026-11-01", "state = 'failed'");
  set_state("a", "2026-11-02", "state = 'unknown'");
  set_state("b", "2026-11-02", "state = 'awaiting_approval'");
  set_state("a", "2026-11-03", "state = 'skipped', reason = 'misfired'");
  set_state("b", "2026-11-03", "state = 'skipped', reason = 'coalesced'");
  set_state("a", "2026-11-04", "state = 'cancelled'");
  set_state("b", "2026-11-04", "state = 'skipped', reason = 'catchup_none'");
  Sql("DELETE FROM runs WHERE partition = 'a' AND business_date = '2026-11-05'");
  // In flight for longer than max_lag (1h) since 09:00 is stuck; the
  // pending run of 11-07 09:00 is 15 h late too: stuck.
  EXPECT_EQ(Keys(Scan("2026-11-01", "2026-11-05", now)),
            (std::vector<std::string>{
                "j/a/2026-11-02 unknown", "j/a/2026-11-03 misfired", "j/a/2026-11-05 never_planned",
                "j/b/2026-11-01 failed", "j/b/2026-11-02 awaiting_approval",
                "j/b/2026-11-05 stuck"}));
  EXPECT_EQ(Keys(Scan("2026-11-03", "2026-11-04", now, /*include_waived=*/true)),
            (std::vector<std::string>{"j/a/2026-11-03 misfired", "j/a/2026-11-04 cancelled waived",
                                      "j/b/2026-11-03 coalesced waived",
                                      "j/b/2026-11-04 catchup_none waived"}));
  // Not yet due (scheduled after now) is not a gap.
  EXPECT_TRUE(Scan("2026-11-08", "2026-11-09", now).empty());
  // Within max_lag an in-flight run is not a gap.
  EXPECT_TRUE(Scan("2026-11-07", "2026-11-07", At("2026-11-07T09:30:00Z")).empty());
}

TEST_F(GapScannerTest, KeysNotYetDueAreExpectedButNeverGaps) {
  config_.jobs = {Job("0 9,18 * * *")};
  Plan(At("2026-11-05T08:59:30Z"));
  Plan(At("2026-11-05T09:30:00Z"));
  const auto now = At("2026-11-05T09:30:00Z");  // 09:00 is in flight, within max_lag
  EXPECT_TRUE(Scan("2026-11-05", "2026-11-05", now).empty());
  GapScanner scanner(*store_);
  GapScanParams p{Date("2026-11-05"), Date("2026-11-05"), store::ToInstant(now), false, true};
  std::vector<std::string> seen;
  ASSERT_TRUE(scanner
                  .ForEachKey(config_.jobs[0], p,
                              [&](const ExpectedKey& k) {
                                seen.push_back(k.period + (k.due ? " due" : " not due") +
                                               (k.run ? " planned" : "") + " [" + k.cause + "]");
                                return Status::Ok();
                              })
                  .ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"2026-11-05T09:00+00:00 due planned []",
                                            "2026-11-05T18:00+00:00 not due []"}));
}

TEST_F(GapScannerTest, PartitionsAreExpectedOnlyWhileMembersAndSchedulesByTheVersionInForce) {
  config_.jobs = {Job("0 9 * * *")};
  config_.jobs[0].partitions = {"a"};
  auto t = At("2026-11-01T00:00:00Z");
  for (; t < At("2026-11-05T00:00:00Z"); t += hours{6}) Plan(t);
  config_.jobs[0].partitions = {"a", "b"};  // b joins on day 5
  for (bool first = true; t < At("2026-11-08T00:00:00Z"); t += hours{6}, first = false) {
    Plan(t, first);
  }
  config_.jobs[0].partitions = {"b"};  // a leaves on day 8
  for (bool first = true; t < At("2026-11-10T00:00:00Z"); t += hours{6}, first = false) {
    Plan(t, first);
  }
  config_.jobs[0].schedule = "0 18 * * *";  // a new version from day 10
  for (bool first = true; t < At("2026-11-12T00:00:00Z"); t += hours{6}, first = false) {
    Plan(t, first);
  }
  // Nothing was run: with max_lag 0 every expected due key is stuck, so
  // the report lists exactly what is expected.
  config_.jobs[0].alert.max_lag = seconds{0};
  std::vector<std::string> expected;
  for (int d = 1; d <= 11; ++d) {
    const std::string date = fmt::format("2026-11-{:02}", d);
    if (d < 8) expected.push_back("j/a/" + date + " stuck");
    if (d >= 5) expected.push_back("j/b/" + date + " stuck");
  }
  std::sort(expected.begin(), expected.end());
  const auto gaps = Scan("2026-11-01", "2026-11-11", At("2026-11-12T00:00:00Z"));
  EXPECT_EQ(Keys(gaps), expected);
  for (const auto& g : gaps) {
    const bool new_version = g.business_date >= "2026-11-10";
    EXPECT_EQ(FormatUtc(g.scheduled_at).substr(11, 5), new_version ? "18:00" : "09:00")
        << g.RunKey();
  }
}

}  // namespace
}  // namespace cronledger::engine
