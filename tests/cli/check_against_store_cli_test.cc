// `cronledger check --against-store`, run as a real subprocess against a
// ledger the real planner planned ahead of now. The binary reads the real
// clock, so each ledger is planned from the real clock's now, and each
// scenario is chosen so that what it checks holds at any time of day or
// year (zones without daylight saving time, hourly schedules).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "cli/subprocess.h"
#include "common/temp_dir.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/planner.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using Json = nlohmann::ordered_json;
using std::chrono::days;
using std::chrono::hours;
using testing::Cronledger;
using testing::TempDir;

std::string Config(const std::string& jobs) {
  return "[server]\nlisten = \"127.0.0.1:0\"\nstore = \"sqlite:ledger.db\"\n\n" + jobs;
}

std::string Job(const std::string& name, const std::string& schedule, const std::string& tz,
                const std::string& partitions = "") {
  std::string text = "[[job]]\nname = \"" + name + "\"\nschedule = \"" + schedule +
                     "\"\ntimezone = \"" + tz + "\"\n";
  if (!partitions.empty()) text += "partitions = " + partitions + "\n";
  return text + "  [[job.step]]\n  name = \"send\"\n  command = [\"/bin/true\"]\n\n";
}

// The next day of a YYYY-MM-DD date.
std::string NextDate(const std::string& date) {
  const auto d = ParseRfc3339(date + "T00:00:00Z");
  return FormatDate(std::chrono::year_month_day(std::chrono::floor<days>(*d) + days{1}));
}

// The keys of a JSON object, in order.
std::vector<std::string> Fields(const Json& object) {
  std::vector<std::string> out;
  for (const auto& [k, _] : object.items()) out.push_back(k);
  return out;
}

class CheckAgainstStoreCli : public ::testing::Test {
 protected:
  // Writes the configuration and plans it `lookahead` ahead of the real
  // clock's now, as serve with that lookahead would have.
  void Plan(const std::string& text, std::chrono::seconds lookahead) {
    config_path_ = dir_.Write("cronledger.toml", text);
    auto loaded = config::LoadConfig(config_path_);
    ASSERT_TRUE(std::holds_alternative<config::Config>(loaded));
    const config::Config config = std::get<config::Config>(loaded);
    store::SqliteOptions o;
    o.path = dir_.File("ledger.db");
    o.synchronous_full = false;
    auto store = store::SqliteStore::Open(o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    FakeClock clock(RealClock().Now());
    engine::PlannerOptions options;
    options.lookahead = lookahead;
    engine::Planner planner(config, **store, clock, options);
    ASSERT_TRUE(planner.PlanOnce(clock.Now()).ok());
  }

  testing::ProcessResult Check(const std::string& text, bool json = true) {
    dir_.Write("cronledger.toml", text);
    std::vector<std::string> args = {"check", "--config", config_path_, "--against-store"};
    if (json) args.push_back("--json");
    return Cronledger(args);
  }

  // Every row of the ledger's tables, to show that nothing was written.
  std::string Ledger() {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(dir_.File("ledger.db").c_str(), &db), SQLITE_OK);
    std::string out;
    for (const char* table :
         {"jobs", "job_versions", "partitions", "occurrences", "runs", "events", "settings"}) {
      out += std::string("== ") + table + "\n";
      const std::string sql = std::string("SELECT * FROM ") + table + " ORDER BY 1, 2";
      const int rc = sqlite3_exec(
          db, sql.c_str(),
          [](void* sink, int n, char** values, char**) {
            auto* text = static_cast<std::string*>(sink);
            for (int i = 0; i < n; ++i)
              *text += (values[i] ? values[i] : "NULL") + std::string("|");
            *text += "\n";
            return 0;
          },
          &out, nullptr);
      EXPECT_EQ(rc, SQLITE_OK) << sql;
    }
    sqlite3_close(db);
    return out;
  }

  TempDir dir_{"cronledger-check-store"};
  std::string config_path_;
};

TEST_F(CheckAgainstStoreCli, TimezoneChangeAroundMidnightReKeysPlannedRunsAndExitsOne) {
  // 23:30 UTC, reporting on the local date, planned two days ahead.
  Plan(Config(Job("report", "30 23 * * *", "UTC", "[\"eu\"]")), days{2});
  const std::string before = Ledger();
  ASSERT_NE(before.find("|pending|"), std::string::npos) << before;

  // The same instants in Tokyo (UTC+9, no DST): 08:30 the next morning, so
  // every occurrence reports on the next business date.
  const std::string changed = Config(Job("report", "30 8 * * *", "Asia/Tokyo", "[\"eu\"]"));
  auto r = Check(changed);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const Json impact = Json::parse(r.out);
  EXPECT_EQ(Fields(impact), (std::vector<std::string>{"now", "unchanged", "orphaned_runs",
                                                      "rekeyed_runs", "jobs"}));
  ASSERT_EQ(impact["jobs"].size(), 1u);
  const Json& job = impact["jobs"][0];
  EXPECT_EQ(Fields(job), (std::vector<std::string>{
                             "job", "change", "changes", "planned_through", "effective_from",
                             "window_from", "window_to", "partitions_added", "partitions_removed",
                             "partitions_from_command", "orphaned_runs", "rekeyed_runs",
                             "newly_expected", "no_longer_expected", "rekeyed"}));
  EXPECT_EQ(job["change"], "changed");
  EXPECT_EQ(job["changes"]["timezone"], (Json{{"from", "UTC"}, {"to", "Asia/Tokyo"}}));
  EXPECT_EQ(job["changes"]["schedule"], (Json{{"from", "30 23 * * *"}, {"to", "30 8 * * *"}}));

  // A week of 23:30 UTC occurrences, each moved to the next date; the ones
  // planned (one or two, depending on the time of day) still do the old key.
  const Json& rekeyed = job["rekeyed"];
  ASSERT_GE(rekeyed.size(), 7u) << r.out;
  int planned = 0;
  for (const auto& o : rekeyed) {
    const std::string at = o["scheduled_at"];
    const std::string date = at.substr(0, 10);
    EXPECT_EQ(at.substr(10), "T23:30:00Z");
    EXPECT_EQ(o["from"],
              (Json{{"run_key", "report/eu/" + date}, {"period", date}, {"business_date", date}}));
    EXPECT_EQ(o["to"]["run_key"], "report/eu/" + NextDate(date));
    EXPECT_EQ(o["to"]["business_date"], NextDate(date));
    if (o["planned"] == true) {
      ++planned;
      EXPECT_TRUE(o["run_id"].is_number_integer());
      EXPECT_EQ(o["run_state"], "pending");
    }
  }
  EXPECT_GE(planned, 1);
  EXPECT_EQ(job["rekeyed_runs"], planned);
  EXPECT_EQ(impact["rekeyed_runs"], planned);
  // The first date of the window is expected by nobody any more: its
  // planned run is orphaned.
  ASSERT_EQ(job["no_longer_expected"].size(), 1u) << r.out;
  EXPECT_EQ(job["no_longer_expected"][0]["run_key"], rekeyed[0]["from"]["run_key"]);
  EXPECT_EQ(job["no_longer_expected"][0]["planned"], true);
  EXPECT_EQ(job["orphaned_runs"], 1);
  EXPECT_TRUE(job["newly_expected"].empty()) << r.out;

  // The text says the same.
  r = Check(changed, /*json=*/false);
  EXPECT_EQ(r.exit_code, 1);
  const std::string first = rekeyed[0]["from"]["business_date"];
  EXPECT_NE(r.out.find("report: changed: schedule \"30 23 * * *\" -> \"30 8 * * *\", timezone "
                       "\"UTC\" -> \"Asia/Tokyo\"\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("report/eu/" + first + " -> report/eu/" + NextDate(first) + "  run "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("planned run(s) orphaned, "), std::string::npos) << r.out;

  // Nothing was written: no new version, event or run.
  EXPECT_EQ(Ledger(), before);
}

TEST_F(CheckAgainstStoreCli, UnchangedConfigSaysNoChange) {
  const std::string text = Config(Job("report", "30 23 * * *", "UTC", "[\"eu\", \"us\"]"));
  Plan(text, days{1});
  auto r = Check(text, /*json=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            config_path_ + ": ok (1 job, 2 partitions, 1 step)\nreport: no change\nno change\n");
  r = Check(text);
  EXPECT_EQ(r.exit_code, 0);
  const Json impact = Json::parse(r.out);
  EXPECT_EQ(impact["unchanged"], true);
  EXPECT_EQ(impact["jobs"][0]["change"], "unchanged");
}

TEST_F(CheckAgainstStoreCli, RemovedOccurrencesAreOrphanedAddedOnesNew) {
  Plan(Config(Job("sync", "0 * * * *", "UTC")), hours{6});  // six hourly runs planned
  const std::string before = Ledger();

  // Every other hour: the planned odd hours are orphaned.
  auto r = Check(Config(Job("sync", "0 */2 * * *", "UTC")));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  Json job = Json::parse(r.out)["jobs"][0];
  ASSERT_FALSE(job["no_longer_expected"].empty());
  int orphaned = 0;
  for (const auto& k : job["no_longer_expected"]) {
    const std::string at = k["scheduled_at"];
    EXPECT_EQ(std::stoi(at.substr(11, 2)) % 2, 1) << at;
    if (k["planned"] == true) ++orphaned;
  }
  EXPECT_GE(orphaned, 2);
  EXPECT_EQ(job["orphaned_runs"], orphaned);
  EXPECT_TRUE(job["newly_expected"].empty());
  EXPECT_TRUE(job["rekeyed"].empty());

  // Twice an hour: only new keys; nothing planned is lost.
  r = Check(Config(Job("sync", "0,30 * * * *", "UTC")));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  job = Json::parse(r.out)["jobs"][0];
  ASSERT_GE(job["newly_expected"].size(), 24u * 7);
  for (const auto& k : job["newly_expected"]) {
    EXPECT_EQ(std::string(k["scheduled_at"]).substr(13), ":30:00Z");
    EXPECT_TRUE(k["run_id"].is_null());
  }
  EXPECT_TRUE(job["no_longer_expected"].empty());
  EXPECT_EQ(Ledger(), before);
}

TEST_F(CheckAgainstStoreCli, PartitionRemovedOrphansItsRunsPartitionAddedIsNew) {
  Plan(Config(Job("report", "0 * * * *", "UTC", "[\"eu\", \"us\"]")), hours{3});
  auto r = Check(Config(Job("report", "0 * * * *", "UTC", "[\"ap\", \"eu\"]")));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const Json job = Json::parse(r.out)["jobs"][0];
  EXPECT_EQ(job["partitions_added"], Json::array({"ap"}));
  EXPECT_EQ(job["partitions_removed"], Json::array({"us"}));
  EXPECT_EQ(job["changes"]["partitions"],
            (Json{{"from", Json::array({"eu", "us"})}, {"to", Json::array({"ap", "eu"})}}));
  for (const auto& k : job["no_longer_expected"]) EXPECT_EQ(k["partition"], "us");
  for (const auto& k : job["newly_expected"]) EXPECT_EQ(k["partition"], "ap");
  EXPECT_GE(job["orphaned_runs"].get<int>(), 2);
  EXPECT_EQ(job["newly_expected"].size(), job["no_longer_expected"].size());

  r = Check(Config(Job("report", "0 * * * *", "UTC", "[\"ap\", \"eu\"]")), /*json=*/false);
  EXPECT_NE(r.out.find("partitions added: ap; partitions removed: us\n"), std::string::npos)
      << r.out;
}

TEST_F(CheckAgainstStoreCli, NewJobIsAllNewRemovedJobOrphansItsPlannedRuns) {
  const std::string report = Job("report", "0 * * * *", "UTC");
  Plan(Config(report), hours{3});

  // A job the ledger has not seen: everything is new, nothing to lose.
  auto r = Check(Config(report + Job("fresh", "0 12 * * *", "Asia/Seoul")), /*json=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("report: no change\nfresh: new to the ledger\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  newly expected: 7 key(s)\n    fresh/default/"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nno planned run orphaned or re-keyed\n"), std::string::npos) << r.out;

  // The ledger's job gone from the configuration: its planned runs would
  // stay pending, never run.
  r = Check(Config(Job("fresh", "0 12 * * *", "Asia/Seoul")));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const Json impact = Json::parse(r.out);
  ASSERT_EQ(impact["jobs"].size(), 2u);
  EXPECT_EQ(impact["jobs"][0]["change"], "new");
  EXPECT_EQ(impact["jobs"][1]["job"], "report");
  EXPECT_EQ(impact["jobs"][1]["change"], "removed");
  EXPECT_GE(impact["jobs"][1]["orphaned_runs"].get<int>(), 2);
  EXPECT_EQ(impact["orphaned_runs"], impact["jobs"][1]["orphaned_runs"]);
}

TEST_F(CheckAgainstStoreCli, ConfigErrorExitsTwoMissingStoreThree) {
  config_path_ = dir_.Write("cronledger.toml", Config(Job("report", "0 25 * * *", "UTC")));
  auto r = Cronledger({"check", "--config", config_path_, "--against-store"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cronledger.toml:"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");

  // Valid, but no ledger yet: nothing is created.
  dir_.Write("cronledger.toml", Config(Job("report", "0 9 * * *", "UTC")));
  r = Cronledger({"check", "--config", config_path_, "--against-store"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("store unavailable"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("ledger.db")));

  r = Cronledger({"check", "--config", config_path_, "--json"});  // --json needs --against-store
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
}

}  // namespace
}  // namespace cronledger
