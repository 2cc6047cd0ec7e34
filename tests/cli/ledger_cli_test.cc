// `cronledger status | runs | events | pause | resume`, run as real
// subprocesses against a SQLite ledger in a temporary folder. Runs get into
// the ledger the way they do in production: `cronledger serve` plans them
// (a 6-field every-second schedule, so its first pass plans a minute of
// occurrences at once), then it is stopped with SIGTERM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/subprocess.h"
#include "common/serve_fixture.h"
#include "common/temp_dir.h"
#include "cronledger/clock.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using Json = nlohmann::ordered_json;
using testing::Cronledger;
using testing::ServeFixture;
using testing::ServeProcess;
using TempDir = testing::TempDir;
using testing::ReadFile;
using testing::WaitFor;

// Who a local operator action records as its actor.
std::string OsUser() {
  const passwd* pw = getpwuid(geteuid());
  return pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : "unknown";
}
using testing::Lines;
using testing::ProcessResult;
using testing::RunProcess;

std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.push_back(k);
  return keys;
}

bool IsRfc3339Utc(const Json& v) {
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  return s.size() == 20 && s[4] == '-' && s[10] == 'T' && s.back() == 'Z';
}

bool IsDate(const Json& v) {
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  return s.size() == 10 && s[4] == '-' && s[7] == '-';
}

// `tick` fires every second for two partitions (planned and released, never
// executed); `daily_report` once a day (no occurrence within serve's
// lookahead, so no runs).
std::string ConfigText(const std::string& store) {
  return R"([server]
listen = "127.0.0.1:0"
store = ")" +
         store + R"("

[[job]]
name = "tick"
schedule = "* * * * * *"
timezone = "UTC"
partitions = ["acme", "globex"]
# The command's serve never claims in-process jobs: these runs stay pending,
# so the ledger's contents do not depend on timing.
executor = "inprocess"

  [[job.step]]
  name = "work"
  command = ["/bin/true"]

[[job]]
name = "daily_report"
schedule = "0 9 * * *"
timezone = "Asia/Seoul"
date_offset_days = -1

  [[job.step]]
  name = "generate"
  command = ["/bin/true"]
)";
}

// ---------------------------------------------------------------------------
// A ledger planned by serve, shared (read-only) by the tests of this suite.

class LedgerCliServed : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    served_ = new ServeFixture();
    config_ = served_->WriteConfig(ConfigText("sqlite:ledger.db"));
    ServeFixture& serve = *served_;
    // Wait until serve has opened (and created) the store before touching
    // it, then for its first pass, which plans a minute ahead at once; then
    // let a couple of release passes run.
    const bool started = serve.StartUntilLogged("started with", {}, 200);
    const bool planned =
        started &&
        WaitFor(
            [&] {
              if (!serve.process().Running()) return true;
              auto r = Cronledger({"runs", "--config", config_, "--limit", "1", "--json"});
              return r.exit_code == 0 && !Json::parse(r.out)["runs"].empty();
            },
            200);
    if (!planned || !serve.process().Running()) {
      error_ = new std::string("serve planned nothing; its log:\n" + serve.Log());
      serve.process().Kill9();
      return;
    }
    usleep(2000 * 1000);
    const int rc = serve.Stop();
    if (rc != 0) {
      error_ = new std::string("serve exited " + std::to_string(rc) + "; its log:\n" + serve.Log());
    }
  }
  static void TearDownTestSuite() {
    delete served_;
    served_ = nullptr;
    delete error_;
    error_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(error_, nullptr) << *error_; }

  static Json RunJson(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--config", config_, "--json"});
    auto r = Cronledger(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return Json::parse(r.out);
  }
  static Json Runs(std::vector<std::string> args) {
    args.insert(args.begin(), "runs");
    return RunJson(std::move(args))["runs"];
  }
  static Json Events(std::vector<std::string> args) {
    args.insert(args.begin(), "events");
    return RunJson(std::move(args))["events"];
  }

  static inline ServeFixture* served_ = nullptr;  // stopped once it planned
  static inline std::string config_;
  static inline std::string* error_ = nullptr;
};

const std::vector<std::string> kRunKeys = {"id",     "run_key",       "job",          "partition",
                                           "period", "business_date", "scheduled_at", "state",
                                           "reason", "attempts",      "steps"};
const std::vector<std::string> kEventKeys = {
    "id", "at", "type", "job", "run_id", "run_key", "actor", "on_behalf_of", "reason", "details"};

TEST_F(LedgerCliServed, StatusJsonHasExactlyTheContractKeysInOrder) {
  const Json status = RunJson({"status"});
  ASSERT_EQ(Keys(status), (std::vector<std::string>{"jobs", "nodes"}));
  // The serve that planned this ledger, from the node heartbeat table.
  ASSERT_EQ(status["nodes"].size(), 1u);
  EXPECT_EQ(Keys(status["nodes"][0]),
            (std::vector<std::string>{"node", "alive", "last_seen_at", "running", "version",
                                      "listen", "started_at", "roles"}));
  ASSERT_EQ(status["jobs"].size(), 2u);
  for (const auto& job : status["jobs"]) {
    EXPECT_EQ(
        Keys(job),
        (std::vector<std::string>{
            "name",          "state",          "last_success_at", "last_success_business_date",
            "business_date", "expected",       "succeeded",       "failed",
            "unknown",       "waived",         "in_progress",     "missing",
            "lag_seconds",   "next_at",        "steps",           "planned_through",
            "in_flight",     "expired_leases", "unknown_runs",    "timezone"}));
  }
  const Json& tick = status["jobs"][0];
  EXPECT_EQ(tick["name"], "tick");
  EXPECT_EQ(tick["state"], "active");
  EXPECT_TRUE(tick["last_success_at"].is_null());
  EXPECT_TRUE(tick["last_success_business_date"].is_null());
  ASSERT_TRUE(IsDate(tick["business_date"])) << tick;
  // Nothing runs yet (no dispatcher): every planned run of the date is pending.
  const Json for_date = Runs(
      {"--job", "tick", "--date", tick["business_date"].get<std::string>(), "--limit", "100000"});
  // Only due runs count; serve also planned up to a minute ahead.
  EXPECT_GT(tick["expected"].get<int>(), 0);
  EXPECT_LE(tick["expected"].get<std::size_t>(), for_date.size());
  EXPECT_EQ(tick["in_progress"], tick["expected"]);
  for (const char* zero : {"succeeded", "failed", "unknown", "waived", "missing"}) {
    EXPECT_EQ(tick[zero], 0) << zero;
  }
  EXPECT_TRUE(tick["lag_seconds"].is_number_integer());
  EXPECT_GE(tick["lag_seconds"].get<int64_t>(), 0);
  EXPECT_TRUE(IsRfc3339Utc(tick["next_at"])) << tick["next_at"];
  EXPECT_TRUE(tick["steps"].is_object());
  // One entry per configured step, in order; no run was claimed, so no counts.
  EXPECT_EQ(tick["steps"], Json::parse(R"({"work": {}})"));
  EXPECT_TRUE(IsRfc3339Utc(tick["planned_through"])) << tick["planned_through"];
  EXPECT_GT(tick["in_flight"].get<int>(), 0);

  const Json& daily = status["jobs"][1];
  EXPECT_EQ(daily["name"], "daily_report");
  EXPECT_EQ(daily["state"], "active");
  EXPECT_TRUE(IsDate(daily["business_date"]));
  EXPECT_EQ(daily["expected"], 0);
  EXPECT_EQ(daily["lag_seconds"], 0);
  // 09:00 in Seoul is 00:00 UTC.
  ASSERT_TRUE(IsRfc3339Utc(daily["next_at"]));
  EXPECT_EQ(daily["next_at"].get<std::string>().substr(10), "T00:00:00Z");
}

TEST_F(LedgerCliServed, StatusTextIsAnAlignedTable) {
  const auto r = Cronledger({"status", "--config", config_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = Lines(r.out);
  // The jobs, a blank line, then the nodes (the serve that planned it).
  ASSERT_EQ(lines.size(), 6u) << r.out;
  EXPECT_EQ(lines[3], "");
  EXPECT_EQ(lines[4].rfind("NODE  ", 0), 0u) << lines[4];
  EXPECT_EQ(lines[0].rfind("JOB  ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("STATE"), std::string::npos);
  EXPECT_NE(lines[0].find("IN_PROGRESS"), std::string::npos);
  EXPECT_EQ(lines[1].rfind("tick          active", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("daily_report  active", 0), 0u) << lines[2];
  // Aligned: STATE starts in the same column on every line.
  const auto state_col = lines[0].find("STATE");
  EXPECT_EQ(lines[1].find("active"), state_col);
  EXPECT_EQ(lines[2].find("active"), state_col);
}

TEST_F(LedgerCliServed, RunsJsonShapeFiltersAndLimit) {
  const Json all = Runs({"--limit", "100000"});
  ASSERT_GE(all.size(), 4u);
  ASSERT_EQ(all.size() % 2, 0u) << "one run per partition and period";
  std::map<std::string, int> per_partition;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Json& run = all[i];
    ASSERT_EQ(Keys(run), kRunKeys) << run;
    if (i > 0) {
      EXPECT_LT(run["id"].get<int64_t>(), all[i - 1]["id"].get<int64_t>()) << "newest first";
    }
    EXPECT_EQ(run["job"], "tick");
    EXPECT_EQ(run["run_key"], "tick/" + run["partition"].get<std::string>() + "/" +
                                  run["period"].get<std::string>());
    EXPECT_TRUE(IsRfc3339Utc(run["scheduled_at"])) << run;
    // A UTC slot period: the local time with its offset, to the second.
    EXPECT_EQ(run["period"], run["scheduled_at"].get<std::string>().substr(0, 19) + "+00:00");
    EXPECT_EQ(run["business_date"], run["scheduled_at"].get<std::string>().substr(0, 10));
    EXPECT_EQ(run["state"], "pending");
    EXPECT_TRUE(run["reason"].is_null());
    EXPECT_EQ(run["attempts"], 0);
    EXPECT_EQ(run["steps"], Json::array());
    ++per_partition[run["partition"].get<std::string>()];
  }
  EXPECT_EQ(per_partition,
            (std::map<std::string, int>{{"acme", static_cast<int>(all.size() / 2)},
                                        {"globex", static_cast<int>(all.size() / 2)}}));

  // The default limit is 100.
  EXPECT_EQ(Runs({}).size(), std::min<std::size_t>(all.size(), 100));

  const Json acme = Runs({"--partition", "acme", "--limit", "100000"});
  EXPECT_EQ(acme.size(), all.size() / 2);
  for (const auto& run : acme) EXPECT_EQ(run["partition"], "acme");

  EXPECT_EQ(Runs({"--state", "pending", "--limit", "100000"}).size(), all.size());
  EXPECT_TRUE(Runs({"--state", "succeeded"}).empty());
  EXPECT_TRUE(Runs({"--job", "daily_report"}).empty());
  EXPECT_EQ(Runs({"--job", "tick", "--partition", "globex", "--limit", "100000"}).size(),
            all.size() / 2);

  const std::string date = all[0]["business_date"];
  std::size_t on_date = 0;
  for (const auto& run : all) on_date += run["business_date"] == date ? 1 : 0;
  const Json dated = Runs({"--date", date, "--limit", "100000"});
  EXPECT_EQ(dated.size(), on_date);
  for (const auto& run : dated) EXPECT_EQ(run["business_date"], date);
  EXPECT_TRUE(Runs({"--date", "2001-01-01"}).empty());

  const Json five = Runs({"--limit", "5"});
  ASSERT_EQ(five.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(five[i]["id"], all[i]["id"]);
}

TEST_F(LedgerCliServed, RunsTextIsATableNewestFirst) {
  const Json all = Runs({"--limit", "100000"});
  const auto r = Cronledger({"runs", "--config", config_, "--limit", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0].rfind("ID", 0), 0u);
  EXPECT_NE(lines[0].find("RUN_KEY"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    const std::string id = std::to_string(all[i]["id"].get<int64_t>());
    EXPECT_EQ(lines[i + 1].rfind(id + " ", 0), 0u) << lines[i + 1];
    EXPECT_EQ(lines[i + 1].find(all[i]["run_key"].get<std::string>()), lines[0].find("RUN_KEY"))
        << lines[i + 1];
    EXPECT_EQ(lines[i + 1].find("pending"), lines[0].find("STATE")) << lines[i + 1];
  }
}

TEST_F(LedgerCliServed, OneRunIncludesItsPlannedEvent) {
  const Json all = Runs({"--limit", "100000"});
  ASSERT_FALSE(all.empty());
  const Json& oldest = all.back();
  const int64_t id = oldest["id"];
  const Json run = RunJson({"runs", "--run", std::to_string(id)});
  std::vector<std::string> keys = kRunKeys;
  keys.insert(keys.end(), {"attempt_list", "effects", "events", "updated_at"});
  ASSERT_EQ(Keys(run), keys);
  for (const auto& k : kRunKeys) EXPECT_EQ(run[k], oldest[k]) << k;
  EXPECT_EQ(run["attempt_list"], Json::array());
  EXPECT_EQ(run["effects"], Json::array());
  ASSERT_FALSE(run["events"].empty());
  const Json& planned = run["events"][0];
  ASSERT_EQ(Keys(planned), kEventKeys);
  EXPECT_EQ(planned["type"], "planned");
  EXPECT_EQ(planned["job"], "tick");
  EXPECT_EQ(planned["run_id"], id);
  EXPECT_EQ(planned["run_key"], oldest["run_key"]);
  EXPECT_EQ(planned["actor"], "planner");
  EXPECT_TRUE(planned["reason"].is_null());
  EXPECT_TRUE(IsRfc3339Utc(planned["at"]));
  ASSERT_TRUE(planned["details"].is_object()) << planned["details"];
  EXPECT_EQ(planned["details"]["scheduled_at"], oldest["scheduled_at"]);
  EXPECT_EQ(planned["details"]["business_date"], oldest["business_date"]);
  for (const auto& e : run["events"]) EXPECT_EQ(e["run_id"], id);

  const auto text = Cronledger({"runs", "--config", config_, "--run", std::to_string(id)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const auto lines = Lines(text.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "run " + std::to_string(id) + "  " + oldest["run_key"].get<std::string>());
  EXPECT_NE(text.out.find("  state          pending\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  planned  "), std::string::npos) << text.out;

  const auto missing = Cronledger({"runs", "--config", config_, "--run", "987654321"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err, "cronledger runs: no run with id 987654321\n");

  const auto mixed =
      Cronledger({"runs", "--config", config_, "--run", std::to_string(id), "--job", "tick"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("--run"), std::string::npos);
}

TEST_F(LedgerCliServed, EventsJsonShapeFiltersAndLimit) {
  const Json all = Events({"--limit", "100000"});
  const Json runs = Runs({"--limit", "100000"});
  ASSERT_FALSE(all.empty());
  std::size_t planned = 0;
  std::set<std::string> types;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Json& e = all[i];
    ASSERT_EQ(Keys(e), kEventKeys) << e;
    if (i > 0) {
      EXPECT_GT(e["id"].get<int64_t>(), all[i - 1]["id"].get<int64_t>()) << "oldest first";
    }
    EXPECT_TRUE(IsRfc3339Utc(e["at"])) << e;
    EXPECT_TRUE(e["details"].is_object()) << e;
    EXPECT_FALSE(e["actor"].get<std::string>().empty());
    types.insert(e["type"].get<std::string>());
    if (e["type"] == "planned") {
      ++planned;
      EXPECT_TRUE(e["run_id"].is_number_integer());
      EXPECT_TRUE(e["run_key"].is_string());
    } else if (e["type"] == "config_changed") {
      // About a job, not a run: those are null, not "" or 0.
      EXPECT_TRUE(e["run_id"].is_null());
      EXPECT_TRUE(e["run_key"].is_null());
      EXPECT_TRUE(e["details"]["definition"].is_object()) << e;
    }
  }
  EXPECT_EQ(planned, runs.size()) << "one planned event per run";
  EXPECT_TRUE(types.count("config_changed")) << "serve recorded both jobs' definitions";

  const Json last3 = Events({"--limit", "3"});
  ASSERT_EQ(last3.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(last3[i], all[all.size() - 3 + i]);

  const Json daily = Events({"--job", "daily_report", "--limit", "100000"});
  ASSERT_FALSE(daily.empty());
  for (const auto& e : daily) EXPECT_EQ(e["job"], "daily_report");

  const int64_t run_id = runs[0]["id"];
  const Json of_run = Events({"--run", std::to_string(run_id)});
  ASSERT_FALSE(of_run.empty());
  for (const auto& e : of_run) EXPECT_EQ(e["run_id"], run_id);

  // --since: the first events at or after the instant.
  const std::string first_at = all[0]["at"];
  const Json since = Events({"--since", first_at, "--limit", "2"});
  ASSERT_EQ(since.size(), 2u);
  EXPECT_EQ(since[0], all[0]);
  EXPECT_TRUE(Events({"--since", "2999-01-01T00:00:00Z"}).empty());

  const auto text = Cronledger({"events", "--config", config_, "--limit", "2"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const auto lines = Lines(text.out);
  ASSERT_EQ(lines.size(), 3u) << text.out;
  EXPECT_EQ(lines[0].rfind("ID", 0), 0u);
  EXPECT_NE(lines[0].find("TYPE"), std::string::npos);
  EXPECT_EQ(lines[2].rfind(std::to_string(all.back()["id"].get<int64_t>()) + " ", 0), 0u);
}

// ---------------------------------------------------------------------------
// pause / resume on a fresh ledger (serve never ran).

class LedgerCliPause : public ::testing::Test {
 protected:
  void SetUp() override { config_ = dir_.Write("cronledger.toml", ConfigText("sqlite:ledger.db")); }
  ProcessResult Run(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--config", config_});
    return Cronledger(std::move(args));
  }
  Json StateOf() {
    auto r = Run({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json states = Json::object();
    const Json status = Json::parse(r.out);
    for (const auto& j : status["jobs"]) states[j["name"].get<std::string>()] = j["state"];
    return states;
  }
  Json LastEvent() {
    auto r = Run({"events", "--json", "--limit", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out)["events"].at(0);
  }

  TempDir dir_;
  std::string config_;
};

TEST_F(LedgerCliPause, PauseAndResumeAJobNotYetInTheLedger) {
  auto r = Run({"pause", "--job", "daily_report", "--reason", "quarter close", "--by", "alice"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "paused job daily_report\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(StateOf(), (Json{{"tick", "active"}, {"daily_report", "paused"}}));

  Json e = LastEvent();
  EXPECT_EQ(e["type"], "paused");
  EXPECT_EQ(e["job"], "daily_report");
  // Locally the OS user acts; --by is whom for.
  EXPECT_EQ(e["actor"], OsUser());
  EXPECT_EQ(e["on_behalf_of"], "alice");
  EXPECT_EQ(e["reason"], "quarter close");
  EXPECT_TRUE(e["run_id"].is_null());
  EXPECT_EQ(e["details"], (Json{{"scope", "job"}}));
  // The job was recorded first, as serve would have: its definition version.
  auto events = Run({"events", "--json", "--job", "daily_report"});
  const Json list = Json::parse(events.out)["events"];
  ASSERT_EQ(list.size(), 2u) << list;
  EXPECT_EQ(list[0]["type"], "config_changed");

  r = Run({"pause", "--job", "daily_report", "--reason", "again", "--by", "bob"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "cronledger pause: job \"daily_report\" is already paused\n");
  EXPECT_EQ(LastEvent()["on_behalf_of"], "alice") << "a refused action records nothing";

  r = Run({"resume", "--job", "daily_report", "--reason", "closed", "--by", "carol"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "resumed job daily_report\n");
  EXPECT_EQ(StateOf(), (Json{{"tick", "active"}, {"daily_report", "active"}}));
  e = LastEvent();
  EXPECT_EQ(e["type"], "resumed");
  EXPECT_EQ(e["actor"], OsUser());
  EXPECT_EQ(e["on_behalf_of"], "carol");
  EXPECT_EQ(e["reason"], "closed");

  r = Run({"resume", "--job", "daily_report", "--reason", "again"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "cronledger resume: job \"daily_report\" is not paused\n");
}

TEST_F(LedgerCliPause, PauseAndResumeEverything) {
  auto r = Run({"pause", "--all", "--reason", "database migration"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "paused everything\n");
  EXPECT_EQ(StateOf(), (Json{{"tick", "paused"}, {"daily_report", "paused"}}));
  Json e = LastEvent();
  EXPECT_EQ(e["type"], "paused");
  EXPECT_TRUE(e["job"].is_null());
  EXPECT_EQ(e["reason"], "database migration");
  EXPECT_EQ(e["actor"], OsUser());
  EXPECT_TRUE(e["on_behalf_of"].is_null()) << "no --by: the OS user acted for no one else";
  EXPECT_EQ(e["details"], (Json{{"scope", "all"}}));

  r = Run({"pause", "--all", "--reason", "twice"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "cronledger pause: everything is already paused\n");

  // The global switch and a job's own flag are separate.
  r = Run({"resume", "--job", "tick", "--reason", "only this one"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "cronledger resume: job \"tick\" is not paused on its own; everything is paused: "
            "resume it with --all\n");

  r = Run({"resume", "--all", "--reason", "done", "--by", "ops"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "resumed everything\n");
  EXPECT_EQ(StateOf(), (Json{{"tick", "active"}, {"daily_report", "active"}}));
  EXPECT_EQ(LastEvent()["type"], "resumed");

  r = Run({"resume", "--all", "--reason", "twice"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "cronledger resume: everything is not paused (a job paused on its own is resumed "
            "with --job)\n");
}

TEST_F(LedgerCliPause, UsageErrorsExitTwoAndTouchNothing) {
  const std::string db = dir_.File("ledger.db");
  struct Case {
    std::vector<std::string> args;
    std::string err_contains;
  };
  const std::vector<Case> cases = {
      {{"pause", "--job", "tick"}, "--reason TEXT is required"},
      {{"pause", "--job", "tick", "--reason", ""}, "--reason TEXT is required"},
      {{"resume", "--job", "tick", "--reason", "   "}, "--reason TEXT is required"},
      {{"pause", "--reason", "x"}, "exactly one of --job JOB or --all"},
      {{"pause", "--job", "tick", "--all", "--reason", "x"}, "--job excludes --all"},
      {{"pause", "--job", "nope", "--reason", "x"},
       "cronledger pause: no job named \"nope\" in the configuration\n"},
      {{"resume", "--job", "nope", "--reason", "x"},
       "cronledger resume: no job named \"nope\" in the configuration\n"},
  };
  for (const auto& c : cases) {
    const auto r = Run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1];
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(c.err_contains), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db)) << "no store was opened";
}

// ---------------------------------------------------------------------------
// Usage, config and store errors.

TEST(LedgerCliErrors, UnavailableStoreExitsThree) {
  TempDir dir;
  const std::string config =
      dir.Write("cronledger.toml", ConfigText("sqlite:/proc/nonexistent/x.db"));
  const std::vector<std::vector<std::string>> commands = {
      {"status"},
      {"status", "--json"},
      {"runs"},
      {"runs", "--run", "1"},
      {"events"},
      {"pause", "--job", "tick", "--reason", "x"},
      {"resume", "--all", "--reason", "x"},
  };
  for (auto args : commands) {
    const std::string name = args[0];
    args.insert(args.begin() + 1, {"--config", config});
    const auto r = Cronledger(args);
    EXPECT_EQ(r.exit_code, 3) << name << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("cronledger " + name + ": store unavailable: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("/proc/nonexistent/x.db"), std::string::npos) << r.err;
  }
}

TEST(LedgerCliErrors, ReadingCommandsDoNotInventALedger) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  for (const std::string command : {"status", "runs", "events"}) {
    const auto r = Cronledger({command, "--config", config});
    EXPECT_EQ(r.exit_code, 3) << command << ": " << r.err;
    EXPECT_NE(r.err.find("has `cronledger serve` run with this config?"), std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db")));
  // A database that does not answer is not a ledger serve has yet to make.
  const std::string pg = dir.Write(
      "pg.toml", ConfigText("postgresql://cronledger@127.0.0.1:1/cronledger?connect_timeout=5"));
  const auto r = Cronledger({"status", "--config", pg});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err.rfind("cronledger status: store unavailable: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("has `cronledger serve` run"), std::string::npos) << r.err;
}

TEST(LedgerCliErrors, ReadingCommandsWriteNothingIntoAnEmptyFile) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  const std::string db = dir.Write("ledger.db", "");
  const std::vector<std::vector<std::string>> commands = {
      {"status"},
      {"runs"},
      {"events"},
      {"verify", "--job", "tick", "--date", "2026-11-05"},
      {"gaps", "--job", "tick"},
      {"check", "--against-store"}};
  for (auto args : commands) {
    const std::string name = args[0];
    args.insert(args.begin() + 1, {"--config", config});
    const auto r = Cronledger(args);
    EXPECT_EQ(r.exit_code, 3) << name << ": " << r.err;
    EXPECT_NE(r.err.find("holds no cronledger ledger"), std::string::npos) << name << ": " << r.err;
    EXPECT_EQ(std::filesystem::file_size(db), 0u) << name;
  }
}

TEST(LedgerCliErrors, ConfigErrorsExitTwo) {
  TempDir dir;
  const std::string config =
      dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db") + "\n[bogus]\nx = 1\n");
  for (const std::string command : {"status", "runs", "events"}) {
    const auto r = Cronledger({command, "--config", config});
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  }
  const auto missing = Cronledger({"status", "--config", dir.File("absent.toml")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db")));
}

TEST(LedgerCliErrors, FilterValidationIsPrecise) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"runs", "--state", "done"},
       "cronledger runs: --state \"done\" is not a run state; use one of pending, running, "
       "succeeded, failed, unknown, skipped, awaiting_approval, cancelled\n"},
      {{"runs", "--date", "2026-02-30"},
       "cronledger runs: --date \"2026-02-30\" is not a date; use YYYY-MM-DD, e.g. "
       "2026-11-28\n"},
      {{"runs", "--date", "2026-1-1"},
       "cronledger runs: --date \"2026-1-1\" is not a date; use YYYY-MM-DD, e.g. 2026-11-28\n"},
      {{"runs", "--limit", "0"}, "cronledger runs: --limit 0 is out of range; use 1 to 100000\n"},
      {{"runs", "--limit", "100001"},
       "cronledger runs: --limit 100001 is out of range; use 1 to 100000\n"},
      {{"events", "--limit", "0"},
       "cronledger events: --limit 0 is out of range; use 1 to 100000\n"},
      {{"runs", "--partition", "a b"},
       "cronledger runs: --partition \"a b\" is not a partition id (1-128 characters from "
       "A-Z a-z 0-9 . _ - : @, not starting with - and not . or ..)\n"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    args.insert(args.begin() + 1, {"--config", config});
    const auto r = Cronledger(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, c.err);
  }
  const auto since = Cronledger({"events", "--config", config, "--since", "yesterday"});
  EXPECT_EQ(since.exit_code, 2);
  EXPECT_EQ(since.err.rfind("cronledger events: --since: ", 0), 0u) << since.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db"))) << "rejected before opening";

  // Valid filters on an empty ledger: empty lists, exit 0.
  ASSERT_EQ(Cronledger({"pause", "--config", config, "--all", "--reason", "create the ledger"})
                .exit_code,
            0);
  const auto empty = Cronledger({"runs", "--config", config, "--state", "awaiting_approval",
                                 "--date", "2024-02-29", "--limit", "100000", "--json"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(Json::parse(empty.out), (Json{{"runs", Json::array()}}));
  // A run that is not there is exit 1 for events as for runs (and as over
  // --server), not an empty list.
  for (const char* command : {"runs", "events"}) {
    const auto missing = Cronledger({command, "--config", config, "--run", "999"});
    EXPECT_EQ(missing.exit_code, 1) << command << ": " << missing.err;
    EXPECT_EQ(missing.out, "") << command;
    EXPECT_EQ(missing.err, std::string("cronledger ") + command + ": no run with id 999\n");
  }
  // A run id that does not fit in 64 bits is a usage error, never clamped
  // to another run's id.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"runs", "--run", "99999999999999999999"},
                                             {"events", "--run", "18446744073709551617"},
                                             {"retry", "99999999999999999999", "--reason", "x"},
                                             {"cancel", "9223372036854775808", "--reason", "x"}}) {
    std::vector<std::string> full = args;
    full.insert(full.begin() + 1, {"--config", config});
    const auto r = Cronledger(full);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("is not a run id: it does not fit in 64 bits"), std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace cronledger

namespace cronledger {
namespace {

// ---------------------------------------------------------------------------
// serve's own exit codes and start-up report.

TEST(ServeCli, InvalidConfigExitsTwoAndWritesNothing) {
  TempDir dir;
  const std::string config = dir.Write(
      "cronledger.toml", ConfigText("sqlite:ledger.db") + "\n[[job]]\nname = \"x\"\n");
  const auto r = Cronledger({"serve", "--config", config});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("job[x].schedule: required key is missing"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db")));

  const std::string good = dir.Write("good.toml", ConfigText("sqlite:ledger.db"));
  const auto listen = Cronledger({"serve", "--config", good, "--listen", "0.0.0.0:8377"});
  EXPECT_EQ(listen.exit_code, 2) << listen.err;
  EXPECT_EQ(listen.err.rfind("cronledger serve: --listen: host \"0.0.0.0\" is not a loopback", 0),
            0u)
      << listen.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db")));
}

// --node-id follows server.node_id's rule: the name goes into every lease,
// attempt and event (and on PostgreSQL into text columns that take only
// UTF-8), so a name the file would refuse is refused here too.
TEST(ServeCli, ANodeIdTheConfigWouldRefuseIsExit2AndWritesNothing) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "\"\" is not a node id: use 1-128 characters without spaces"},
      {"web 1", "\"web 1\" is not a node id: use 1-128 characters without spaces"},
      {std::string(129, 'n'), "is not a node id: use 1-128 characters without spaces"},
      {"web\xff" "1", "is not a node id: it is not UTF-8"},
      {"caf\xc3", "is not a node id: it is not UTF-8"},
  };
  for (const auto& [id, message] : bad) {
    const auto r = Cronledger({"serve", "--config", config, "--node-id", id});
    EXPECT_EQ(r.exit_code, 2) << id << ": " << r.err;
    EXPECT_EQ(r.err.rfind("cronledger serve: --node-id: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db"))) << id;
  }
}

TEST(ServeCli, UnavailableStoreExitsThree) {
  TempDir dir;
  const std::string config =
      dir.Write("cronledger.toml", ConfigText("sqlite:/proc/nonexistent/x.db"));
  const auto r = Cronledger({"serve", "--config", config});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cronledger serve: store unavailable"), std::string::npos) << r.err;
  // SQLite's words once, not once more as its code's.
  const std::string cause = "unable to open database file";
  const auto at = r.err.find(cause);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(cause, at + 1), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("cronledger.token")))
      << "a serve that could not start wrote its token";
}

TEST(ServeCli, RefusesADatabaseThatNeedsANewerRelease) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  ASSERT_EQ(Cronledger({"pause", "--config", config, "--all", "--reason", "create"}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("ledger.db").c_str(), &db), SQLITE_OK);
  // Far ahead of this release's schema, whatever it is now.
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_meta SET version = 99, compatible_from = 98", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto r = Cronledger({"serve", "--config", config});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("has schema version 99 and needs cronledger with schema version 98 or "
                       "newer"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("upgrade cronledger"), std::string::npos) << r.err;
}

TEST(ServeCli, JsonLogsAreOneObjectPerLineOnStderr) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  const std::string log = dir.File("serve.log");
  const std::string out = dir.File("serve.out");
  {
    ServeProcess serve(config, log, {"--log-format", "json"}, {}, out);
    // "serve: planned N run(s)" is the first pass; "planned through" in the
    // start-up lines comes earlier and would stop serve before it planned.
    ASSERT_TRUE(
        WaitFor([&] { return ReadFile(log).find("serve: planned ") != std::string::npos; }, 400))
        << ReadFile(log);
    EXPECT_EQ(serve.Stop(), 0);
  }
  const auto lines = Lines(ReadFile(log));
  ASSERT_GE(lines.size(), 4u);
  for (const auto& line : lines) {
    const auto j = Json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    EXPECT_EQ(Keys(j), (std::vector<std::string>{"ts", "level", "msg"})) << line;
    EXPECT_TRUE(j["ts"].get<std::string>().ends_with("Z")) << line;
  }
  // The log is stderr's (docs/cli.md): stdout stays empty.
  EXPECT_EQ(ReadFile(out), "");
  EXPECT_EQ(Cronledger({"serve", "--config", config, "--log-format", "xml"}).exit_code, 2);
}

// One integer from the ledger file (-1 when there is no row), read beside a
// running serve as another process would.
int64_t LedgerInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t value = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 2000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

// A node finishing its steps after SIGTERM is still working: it keeps
// beating, so status and monitors do not call it dead while a drain longer
// than the 30 s a beat keeps a node alive goes on.
TEST(ServeCli, ADrainingNodeKeepsBeating) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", R"([server]
listen = "127.0.0.1:0"
store = "sqlite:ledger.db"
drain_timeout = "60s"

[[job]]
name = "slow"
schedule = "* * * * * *"
timezone = "UTC"

  [[job.step]]
  name = "work"
  command = ["/bin/sleep", "14"]
)");
  const std::string ledger = dir.File("ledger.db");
  const std::string log = dir.File("serve.log");
  ServeProcess serve(config, log);
  ASSERT_TRUE(WaitFor(
      [&] { return LedgerInt(ledger, "SELECT count(*) FROM runs WHERE state = 'running'") > 0; },
      400))
      << ReadFile(log);
  const int64_t before = LedgerInt(ledger, "SELECT last_seen_at FROM nodes");
  ASSERT_GT(before, 0);
  serve.Signal(SIGTERM);
  // The step takes its 14 s; serve then exits by itself.
  ASSERT_TRUE(WaitFor([&] { return !serve.Running(); }, 600)) << ReadFile(log);
  EXPECT_EQ(serve.Stop(), 0) << ReadFile(log);
  EXPECT_EQ(LedgerInt(ledger, "SELECT count(*) FROM runs WHERE state = 'succeeded'"), 1);
  // Beats every 5 s through the drain: at least two after the signal.
  EXPECT_GE(LedgerInt(ledger, "SELECT last_seen_at FROM nodes") - before, 8000) << ReadFile(log);
}

TEST(ServeCli, ReportsWhereEachJobStandsAndStopsCleanly) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  const std::string log = dir.File("serve.log");
  {
    ServeProcess serve(config, log);
    // "serve: planned N run(s)" is the first pass; "planned through" in the
    // start-up lines comes earlier and would stop serve before it planned.
    ASSERT_TRUE(
        WaitFor([&] { return ReadFile(log).find("serve: planned ") != std::string::npos; }, 400))
        << ReadFile(log);
    EXPECT_EQ(serve.Stop(), 0) << ReadFile(log);
  }
  // A restart reads the ledger first and says where each job stands.
  const std::string log2 = dir.File("serve2.log");
  {
    ServeProcess serve(config, log2, {"--node-id", "web-7"});
    ASSERT_TRUE(WaitFor([&] { return ReadFile(log2).find("job daily_report") != std::string::npos; },
                        400))
        << ReadFile(log2);
    EXPECT_EQ(serve.Stop(), 0);
  }
  const std::string text = ReadFile(log2);
  EXPECT_NE(text.find("serve: node web-7 started with 2 job(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("serve: job tick (active): planned through 20"), std::string::npos) << text;
  EXPECT_NE(text.find("run(s) in flight, 0 expired lease(s), 0 unknown"), std::string::npos)
      << text;
  EXPECT_NE(text.find("serve: node web-7 stopped cleanly"), std::string::npos) << text;
}

// A beat of `node` now, by a process of another host, into the ledger.
void BeatFromAnotherHost(const std::string& ledger, const std::string& node) {
  store::SqliteOptions o;
  o.path = ledger;
  auto s = store::SqliteStore::Open(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const store::Instant now = store::ToInstant(RealClock().Now());
  ASSERT_TRUE((*s)->NodeHeartbeat({node, "0.1.0", "10.0.0.9:8377", now, now, "elsewhere", 42}).ok());
}

// A node id is one process's. A second serve under a live node's id is
// refused; after a clean stop the id is free at once; after a crash, once
// its beats have stopped.
TEST(ServeCli, ANodeIdInUseIsRefusedAndFreedByAStopOrACrash) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  const auto alive = [&] {
    const auto r = Cronledger({"status", "--config", config, "--json"});
    const Json doc = Json::parse(r.out, nullptr, false);
    return doc.is_object() && doc["nodes"].size() == 1 && doc["nodes"][0]["node"] == "web-1" &&
           doc["nodes"][0]["alive"] == true;
  };
  ServeProcess first(config, dir.File("first.log"), {"--node-id", "web-1"});
  ASSERT_GT(first.WaitForApiPort(), 0) << first.Log();
  ASSERT_TRUE(WaitFor(alive, 600)) << first.Log();

  const auto second = Cronledger({"serve", "--config", config, "--node-id", "web-1"});
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("cronledger serve: node id \"web-1\" is in use by another serve "
                            "(started "),
            std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find("give each node its own --node-id or [server] node_id"),
            std::string::npos)
      << second.err;
  EXPECT_TRUE(first.Running());

  // A clean stop frees the id: no watching.
  EXPECT_EQ(first.Stop(), 0) << first.Log();
  {
    const auto status = Cronledger({"status", "--config", config, "--json"});
    EXPECT_EQ(Json::parse(status.out)["nodes"][0]["alive"], false) << status.out;
  }
  ServeProcess restarted(config, dir.File("restarted.log"), {"--node-id", "web-1"});
  ASSERT_GT(restarted.WaitForApiPort(), 0) << restarted.Log();
  EXPECT_EQ(restarted.Log().find("watching it"), std::string::npos) << restarted.Log();
  ASSERT_TRUE(WaitFor(alive, 600)) << restarted.Log();

  // A crash on this host leaves a fresh beat by a process that is gone:
  // the id is free at once.
  const pid_t crashed = restarted.pid();
  restarted.Kill9();
  ServeProcess after_crash(config, dir.File("after-crash.log"), {"--node-id", "web-1"});
  ASSERT_GT(after_crash.WaitForApiPort(), 0) << after_crash.Log();
  EXPECT_NE(after_crash.Log().find("serve: node id web-1 was last used by process " +
                                   std::to_string(crashed) + " of this host, which is gone"),
            std::string::npos)
      << after_crash.Log();
  EXPECT_EQ(after_crash.Stop(), 0) << after_crash.Log();

  // A fresh beat from another host, which stops beating (it crashed): the
  // next serve watches it, sees no new beat and takes the id over.
  ASSERT_NO_FATAL_FAILURE(BeatFromAnotherHost(dir.File("ledger.db"), "web-1"));
  ServeProcess taken_over(config, dir.File("taken-over.log"), {"--node-id", "web-1"});
  ASSERT_GT(taken_over.WaitForApiPort(), 0) << taken_over.Log();
  const std::string log = taken_over.Log();
  EXPECT_NE(log.find("serve: node id web-1 beat at "), std::string::npos) << log;
  EXPECT_NE(log.find("serve: node id web-1 is free: its serve stopped beating at "),
            std::string::npos)
      << log;
  EXPECT_EQ(taken_over.Stop(), 0) << taken_over.Log();

  // SIGTERM while it watches stops it there, without starting.
  ASSERT_NO_FATAL_FAILURE(BeatFromAnotherHost(dir.File("ledger.db"), "web-1"));
  ServeProcess stopped(config, dir.File("stopped.log"), {"--node-id", "web-1"});
  ASSERT_TRUE(WaitFor([&] { return stopped.Log().find("watching it") != std::string::npos; }, 600))
      << stopped.Log();
  stopped.Signal(SIGTERM);
  ASSERT_TRUE(WaitFor([&] { return !stopped.Running(); }, 600)) << stopped.Log();
  EXPECT_EQ(stopped.Stop(), 0) << stopped.Log();
  EXPECT_NE(stopped.Log().find("serve: stopped by a signal before it started"), std::string::npos)
      << stopped.Log();
  EXPECT_EQ(stopped.Log().find("started with"), std::string::npos) << stopped.Log();
}

}  // namespace
}  // namespace cronledger

namespace cronledger {
namespace {

// ---------------------------------------------------------------------------
// Execution through serve, and the operator's retry.

TEST(ExecCli, ServeRunsStepsAndRetryRequeuesAFailedRun) {
  TempDir dir;
  const std::string flag = dir.File("fixed");
  const std::string script = dir.Write("step.sh", "#!/bin/sh\necho \"run $CRONLEDGER_RUN_KEY attempt $CRONLEDGER_ATTEMPT\"\n[ -e " + flag + " ] || exit 65\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const std::string config = dir.Write("cronledger.toml", R"([server]
listen = "127.0.0.1:0"
store = "sqlite:ledger.db"

[[job]]
name = "tick"
schedule = "* * * * * *"
timezone = "UTC"
catchup = "latest"

  [[job.step]]
  name = "work"
  command = ["./step.sh"]
)");
  const std::string log = dir.File("serve.log");
  int64_t failed_id = 0;
  {
    ServeProcess serve(config, log);
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto r = Cronledger({"runs", "--config", config, "--state", "failed", "--json"});
          if (r.exit_code != 0) return false;
          const auto j = Json::parse(r.out);
          if (j["runs"].empty()) return false;
          failed_id = j["runs"][0]["id"].get<int64_t>();
          return true;
        },
        400))
        << ReadFile(log);
    EXPECT_EQ(serve.Stop(), 0);
  }
  const auto one = Cronledger({"runs", "--config", config, "--run", std::to_string(failed_id), "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto run = Json::parse(one.out);
  ASSERT_EQ(run["attempt_list"].size(), 1u) << run.dump(2);
  const auto& attempt = run["attempt_list"][0];
  EXPECT_EQ(attempt["end_class"], "permanent");
  EXPECT_EQ(attempt["exit_status"], 65);
  EXPECT_EQ(attempt["number"], 1);
  EXPECT_GT(attempt["fencing_token"].get<int64_t>(), 0);
  EXPECT_TRUE(IsRfc3339Utc(attempt["started_at"]));
  EXPECT_TRUE(IsRfc3339Utc(attempt["ended_at"]));
  const std::string log_path = attempt["log_path"];
  EXPECT_NE(ReadFile(log_path).find("attempt 1"), std::string::npos) << log_path;
  EXPECT_EQ(run["steps"], Json::parse(R"([{"name": "work", "state": "failed"}])"));

  // Retry refuses without a reason and for a run in another state.
  EXPECT_EQ(Cronledger({"retry", std::to_string(failed_id), "--config", config}).exit_code, 2);
  const auto missing = Cronledger({"retry", "999999", "--config", config, "--reason", "x"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no run with id 999999"), std::string::npos) << missing.err;
  const auto retried = Cronledger({"retry", std::to_string(failed_id), "--config", config,
                                   "--reason", "input fixed", "--by", "alice"});
  ASSERT_EQ(retried.exit_code, 0) << retried.err;
  EXPECT_EQ(retried.out, "run " + std::to_string(failed_id) + " queued for a new attempt\n");
  const auto again = Cronledger({"retry", std::to_string(failed_id), "--config", config,
                                 "--reason", "twice"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("is pending; only failed or unknown runs can be retried"),
            std::string::npos)
      << again.err;

  // The retried run succeeds on its next attempt.
  std::ofstream(flag) << "";
  {
    ServeProcess serve(config, dir.File("serve2.log"));
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto r = Cronledger({"runs", "--config", config, "--run",
                                     std::to_string(failed_id), "--json"});
          return r.exit_code == 0 && Json::parse(r.out)["state"] == "succeeded";
        },
        400))
        << ReadFile(dir.File("serve2.log"));
    EXPECT_EQ(serve.Stop(), 0);
  }
  const auto done = Json::parse(
      Cronledger({"runs", "--config", config, "--run", std::to_string(failed_id), "--json"}).out);
  EXPECT_EQ(done["attempts"], 2);
  EXPECT_EQ(done["attempt_list"][1]["end_class"], "succeeded");
  bool saw_retry = false;
  for (const auto& e : done["events"]) {
    if (e["type"] == "retry") {
      saw_retry = true;
      EXPECT_EQ(e["actor"], OsUser());
      EXPECT_EQ(e["on_behalf_of"], "alice");
      EXPECT_EQ(e["reason"], "input fixed");
    }
  }
  EXPECT_TRUE(saw_retry);
}

}  // namespace
}  // namespace cronledger
