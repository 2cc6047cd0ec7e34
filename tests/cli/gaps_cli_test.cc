// `cronledger gaps` on a ledger planned by the real planner: its exit codes
// (0 none, 1 gaps, 2 usage, 3 no store) and its JSON shape (docs/cli.md).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
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
using testing::Cronledger;
using testing::TempDir;

Clock::TimePoint At(const std::string& rfc3339) {
  return Clock::TimePoint{ParseRfc3339(rfc3339)->time_since_epoch()};
}

class GapsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    config_path_ = dir_.Write("cronledger.toml", R"([server]
listen = "127.0.0.1:0"
store = "sqlite:ledger.db"

[[job]]
name = "report"
schedule = "0 9 * * *"
timezone = "UTC"
partitions = ["eu", "us"]

  [[job.step]]
  name = "send"
  command = ["/bin/true"]
)");
  }

  // Plans 2026-11-01 .. 2026-11-03 as serve would have.
  void PlanThreeDays() {
    auto loaded = config::LoadConfig(config_path_);
    ASSERT_TRUE(std::holds_alternative<config::Config>(loaded));
    const config::Config config = std::get<config::Config>(loaded);
    store::SqliteOptions o;
    o.path = dir_.File("ledger.db");
    o.synchronous_full = false;
    auto store = store::SqliteStore::Open(o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    FakeClock clock(At("2026-11-01T00:00:00Z"));
    engine::Planner planner(config, **store, clock);
    for (auto t = At("2026-11-01T00:00:00Z"); t <= At("2026-11-03T12:00:00Z");
         t += std::chrono::hours{6}) {
      ASSERT_TRUE(planner.PlanOnce(t).ok());
    }
  }

  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir_.File("ledger.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(db);
  }

  testing::ProcessResult Gaps(std::vector<std::string> args) {
    args.insert(args.begin(), {"gaps", "--config", config_path_});
    return Cronledger(std::move(args));
  }

  TempDir dir_{"cronledger-gaps-cli"};
  std::string config_path_;
};

TEST_F(GapsCli, ExitsOneListingEachGapAndZeroWhenAllIsDone) {
  PlanThreeDays();
  Sql("UPDATE runs SET state = 'succeeded'");
  Sql("UPDATE runs SET state = 'failed' WHERE partition = 'us' AND business_date = '2026-11-02'");
  Sql("UPDATE runs SET state = 'skipped', reason = 'coalesced' WHERE partition = 'eu' AND "
      "business_date = '2026-11-02'");
  Sql("DELETE FROM runs WHERE partition = 'eu' AND business_date = '2026-11-03'");

  auto r = Gaps({"--from", "2026-11-01", "--to", "2026-11-03", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const Json gaps = Json::parse(r.out)["gaps"];
  ASSERT_EQ(gaps.size(), 2u) << r.out;
  std::vector<std::string> keys;
  for (const auto& g : gaps) {
    for (const auto& [field, _] : g.items()) keys.push_back(field);
    break;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"run_key", "job", "partition", "business_date",
                                            "scheduled_at", "cause", "waived", "run_id"}));
  EXPECT_EQ(gaps[0]["run_key"], "report/us/2026-11-02");
  EXPECT_EQ(gaps[0]["cause"], "failed");
  EXPECT_EQ(gaps[0]["scheduled_at"], "2026-11-02T09:00:00Z");
  EXPECT_EQ(gaps[1]["run_key"], "report/eu/2026-11-03");
  EXPECT_EQ(gaps[1]["cause"], "never_planned");
  EXPECT_TRUE(gaps[1]["run_id"].is_null());

  r = Gaps({"--from", "2026-11-01", "--to", "2026-11-03", "--include-waived"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("report/eu/2026-11-02  2026-11-02     2026-11-02T09:00:00Z  coalesced "
                       "(waived)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 gap(s), 1 waived: 1 coalesced, 1 failed, 1 never_planned\n"),
            std::string::npos)
      << r.out;

  // A waived key alone is not a gap.
  r = Gaps({"--job", "report", "--from", "2026-11-02", "--to", "2026-11-02", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  r = Gaps({"--from", "2026-11-01", "--to", "2026-11-01"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "no gaps\n");
}

TEST_F(GapsCli, VerifyProvesADateCompleteOnlyWhenEveryKeySucceededOrIsWaived) {
  PlanThreeDays();
  Sql("UPDATE runs SET state = 'succeeded', attempts = 1");
  Sql("UPDATE runs SET attempts = 2 WHERE partition = 'eu' AND business_date = '2026-11-01'");
  Sql("UPDATE runs SET state = 'skipped', reason = 'coalesced', attempts = 0 WHERE partition = "
      "'eu' AND business_date = '2026-11-02'");
  Sql("UPDATE runs SET state = 'failed' WHERE partition = 'us' AND business_date = '2026-11-03'");
  Sql("DELETE FROM runs WHERE partition = 'eu' AND business_date = '2026-11-03'");
  const auto verify = [&](const std::string& date, bool json = true) {
    std::vector<std::string> args = {"verify", "--config", config_path_, "--job", "report",
                                     "--date", date};
    if (json) args.push_back("--json");
    return Cronledger(args);
  };

  auto r = verify("2026-11-01");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = Json::parse(r.out);
  std::vector<std::string> keys;
  for (const auto& [field, _] : j.items()) keys.push_back(field);
  EXPECT_EQ(keys, (std::vector<std::string>{"job", "business_date", "complete", "expected",
                                            "succeeded", "waived", "steps",
                                            "first_scheduled_at", "last_completed_at",
                                            "attempts", "reruns", "missing"}));
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["expected"], 2);
  EXPECT_EQ(j["succeeded"], 2);
  EXPECT_EQ(j["attempts"], 3);
  EXPECT_EQ(j["first_scheduled_at"], "2026-11-01T09:00:00Z");
  EXPECT_TRUE(j["missing"].empty());

  r = verify("2026-11-02");  // one succeeded, one waived: complete
  EXPECT_EQ(r.exit_code, 0) << r.out;
  j = Json::parse(r.out);
  EXPECT_EQ(j["waived"], 1);
  EXPECT_EQ(j["succeeded"], 1);

  r = verify("2026-11-03", /*json=*/false);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out.rfind("report 2026-11-03: INCOMPLETE\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("  missing report/eu/2026-11-03 (never_planned)\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  missing report/us/2026-11-03 (failed)\n"), std::string::npos) << r.out;

  // Keys not due yet: one line in the text, each one in the JSON.
  r = verify("2099-01-01", /*json=*/false);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out.find("  missing "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  not due yet: 2 run key(s), the first report/eu/2099-01-01\n"),
            std::string::npos)
      << r.out;
  r = verify("2099-01-01");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(Json::parse(r.out)["missing"],
            (Json::array({{{"run_key", "report/eu/2099-01-01"}, {"cause", "not_due"}},
                          {{"run_key", "report/us/2099-01-01"}, {"cause", "not_due"}}})));

  r = verify("2026-10-01");  // before the job existed: nothing proves it
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Json::parse(r.out)["expected"], 0);
  EXPECT_EQ(Cronledger({"verify", "--config", config_path_, "--job", "report", "--date", "11/03"})
                .exit_code,
            2);
}

TEST_F(GapsCli, BackfillShowsItsImpactFirstAndRefusesAStalePreview) {
  PlanThreeDays();
  Sql("UPDATE runs SET state = 'succeeded'");
  Sql("DELETE FROM runs WHERE business_date = '2026-11-02'");
  Sql("UPDATE runs SET state = 'skipped', reason = 'misfired' WHERE partition = 'us' AND "
      "business_date = '2026-11-03'");
  const std::vector<std::string> base = {"backfill", "--config", config_path_, "--job", "report",
                                         "--from", "2026-11-01", "--to", "2026-11-03",
                                         "--reason", "outage on the 2nd", "--by", "alice"};
  auto args = base;
  args.push_back("--json");
  auto r = Cronledger(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json preview = Json::parse(r.out);
  std::vector<std::string> keys;
  for (const auto& [field, _] : preview.items()) keys.push_back(field);
  EXPECT_EQ(keys, (std::vector<std::string>{"preview_digest", "expected", "succeeded", "failed",
                                            "unknown", "missing", "waived", "in_progress",
                                            "effects_committed", "would_queue", "awaiting_approval",
                                            "not_queued", "not_queued_total"}));
  EXPECT_EQ(preview["not_queued"], Json::array());  // the rest succeeded
  EXPECT_EQ(preview["expected"], 6);
  EXPECT_EQ(preview["succeeded"], 3);
  EXPECT_EQ(preview["missing"], 3);
  EXPECT_EQ(preview["would_queue"],
            Json::parse(R"(["report/eu/2026-11-02", "report/us/2026-11-02",
                            "report/us/2026-11-03"])"));
  // The preview changed nothing.
  EXPECT_EQ(Gaps({"--from", "2026-11-01", "--to", "2026-11-03"}).exit_code, 1);

  // The ledger moves on: acting on the old preview is refused with the new one.
  Sql("UPDATE runs SET state = 'failed' WHERE partition = 'eu' AND business_date = '2026-11-01'");
  args = base;
  for (const char* a : {"--yes", "--preview-digest"}) args.push_back(a);
  args.push_back(preview["preview_digest"].get<std::string>());
  r = Cronledger(args);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the ledger changed since the preview"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1 failed"), std::string::npos) << r.out;

  args = base;
  args.push_back("--yes");
  r = Cronledger(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("queued 3 run(s) of report (event ", 0), 0u) << r.out;
  r = Gaps({"--from", "2026-11-01", "--to", "2026-11-03", "--json"});
  // What is left: the failed run (a backfill does not retry failures); the
  // queued ones are pending, in flight.
  const Json gaps = Json::parse(r.out)["gaps"];
  ASSERT_EQ(gaps.size(), 1u) << r.out;
  EXPECT_EQ(gaps[0]["cause"], "failed");
  r = Cronledger({"events", "--config", config_path_, "--json"});
  // One event for the action, with its list.
  int backfills = 0;
  const Json events = Json::parse(r.out)["events"];
  for (const auto& e : events) {
    if (e["type"] != "backfill") continue;
    ++backfills;
    EXPECT_EQ(e["on_behalf_of"], "alice");
    EXPECT_EQ(e["reason"], "outage on the 2nd");
    EXPECT_EQ(e["details"]["run_keys"], preview["would_queue"]) << e.dump();
    EXPECT_EQ(e["details"]["run_ids"].size(), 3u) << e.dump();
  }
  EXPECT_EQ(backfills, 1);
  // Nothing left to queue: the preview does not invite --yes.
  r = Cronledger(base);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("would queue 0 run(s):\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing to queue: --yes would change nothing\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("run again with --yes"), std::string::npos) << r.out;
  args = base;
  args.push_back("--yes");
  EXPECT_EQ(Cronledger(args).exit_code, 1);
}

TEST_F(GapsCli, RerunShowsItsImpactFirstAndQueuesItsScopeAsOneEvent) {
  PlanThreeDays();
  Sql("UPDATE runs SET state = 'succeeded', attempts = 1");
  Sql("INSERT INTO run_steps (run_id, step, position, state) SELECT id, 'send', 0, 'succeeded' "
      "FROM runs");
  Sql("UPDATE runs SET state = 'failed' WHERE partition = 'eu' AND business_date = '2026-11-02'");
  Sql("UPDATE run_steps SET state = 'failed' WHERE run_id = (SELECT id FROM runs WHERE "
      "partition = 'eu' AND business_date = '2026-11-02')");
  Sql("DELETE FROM run_steps WHERE run_id IN (SELECT id FROM runs WHERE business_date = "
      "'2026-11-03')");
  Sql("DELETE FROM runs WHERE partition = 'eu' AND business_date = '2026-11-03'");
  Sql("UPDATE runs SET state = 'unknown' WHERE partition = 'us' AND business_date = '2026-11-03'");
  const auto rerun = [&](const std::string& date, std::vector<std::string> extra) {
    std::vector<std::string> args = {"rerun",  "--config", config_path_, "--job", "report",
                                     "--date", date,       "--reason",   "bad input fixed",
                                     "--by",   "bob"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Cronledger(args);
  };

  // The preview: the failed run would be queued, the succeeded one is left
  // alone (it needs --force); nothing changes.
  auto r = rerun("2026-11-02", {"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json preview = Json::parse(r.out);
  EXPECT_EQ(preview["expected"], 2);
  EXPECT_EQ(preview["succeeded"], 1);
  EXPECT_EQ(preview["failed"], 1);
  EXPECT_EQ(preview["succeeded_left_alone"], 1);
  EXPECT_EQ(preview["would_queue"], Json::parse(R"(["report/eu/2026-11-02"])"));
  r = rerun("2026-11-02", {});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("1 succeeded run(s) left alone: rerunning a succeeded run needs --force"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("nothing done: run again with --yes"), std::string::npos) << r.out;
  EXPECT_EQ(Gaps({"--from", "2026-11-02", "--to", "2026-11-02"}).exit_code, 1);

  // A scope with nothing in it changes nothing.
  r = rerun("2026-11-02", {"--only", "unknown", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  // Each key left alone says why, and what would queue it.
  EXPECT_EQ(
      r.err,
      "cronledger rerun: nothing to queue\n"
      "not queued 2 key(s):\n"
      "  report/eu/2026-11-02: failed: not in --only unknown; `cronledger rerun --job report "
      "--date 2026-11-02 --partition eu --only failed --reason TEXT` queues it\n"
      "  report/us/2026-11-02: succeeded: rerunning it needs --force; `cronledger rerun --job "
      "report --date 2026-11-02 --partition us --force --reason TEXT` queues it\n");

  r = rerun("2026-11-02", {"--yes", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json done = Json::parse(r.out);
  EXPECT_EQ(done["run_keys"], preview["would_queue"]);
  const int64_t event_id = done["event_id"];
  r = Cronledger({"runs", "--config", config_path_, "--date", "2026-11-02", "--partition", "eu",
                  "--json"});
  const Json eu = Json::parse(r.out)["runs"][0];
  EXPECT_EQ(eu["state"], "pending");
  EXPECT_EQ(done["queued"], Json::array({eu["id"]}));
  // The failed step is where it resumes (no --force): steps are as they were.
  EXPECT_EQ(eu["steps"][0]["state"], "failed");

  // --only missing queues the never-planned key and not the unknown run;
  // then --only unknown the unknown one.
  r = rerun("2026-11-03", {"--only", "missing", "--json"});
  preview = Json::parse(r.out);
  EXPECT_EQ(preview["missing"], 1);
  EXPECT_EQ(preview["unknown"], 1);
  EXPECT_EQ(preview["would_queue"], Json::parse(R"(["report/eu/2026-11-03"])"));
  // Acting on a preview the ledger moved away from is refused, with the new one.
  Sql("UPDATE runs SET state = 'failed' WHERE partition = 'us' AND business_date = '2026-11-03'");
  r = rerun("2026-11-03", {"--only", "missing", "--yes", "--preview-digest",
                           preview["preview_digest"]});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the ledger changed since the preview"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1 failed"), std::string::npos) << r.out;
  r = rerun("2026-11-03", {"--only", "missing", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = rerun("2026-11-03", {"--only", "failed", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // --force reruns the succeeded run from its first step, and says which
  // keys it queued although no preview was printed.
  r = rerun("2026-11-01", {"--partition", "us", "--force", "--yes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("queued 1 run(s) of report (event ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("):\n  report/us/2026-11-01\n"), std::string::npos) << r.out;
  r = Cronledger({"runs", "--config", config_path_, "--date", "2026-11-01", "--partition", "us",
                  "--json"});
  const Json us = Json::parse(r.out)["runs"][0];
  EXPECT_EQ(us["state"], "pending");
  EXPECT_EQ(us["steps"][0]["state"], "pending");
  r = Cronledger({"runs", "--config", config_path_, "--date", "2026-11-01", "--partition", "eu",
                  "--json"});
  EXPECT_EQ(Json::parse(r.out)["runs"][0]["state"], "succeeded");  // not in --partition

  // Each action is one event with actor, reason and the list; the run's
  // history and verify's reruns show it.
  r = Cronledger({"events", "--config", config_path_, "--limit", "1000", "--json"});
  const Json all_events = Json::parse(r.out)["events"];
  Json events = Json::array();
  for (const auto& e : all_events) {
    if (e["type"] == "rerun") events.push_back(e);
  }
  ASSERT_EQ(events.size(), 4u) << r.out;
  EXPECT_EQ(events[0]["id"], event_id);
  EXPECT_EQ(events[0]["on_behalf_of"], "bob");
  EXPECT_EQ(events[0]["reason"], "bad input fixed");
  EXPECT_EQ(events[0]["details"]["run_keys"], Json::parse(R"(["report/eu/2026-11-02"])"));
  EXPECT_EQ(events[0]["details"]["from"], Json::parse(R"({"failed": 1})"));
  EXPECT_EQ(events[3]["details"]["from_first_step"], true);
  r = Cronledger({"events", "--config", config_path_, "--run",
                  std::to_string(eu["id"].get<int64_t>()), "--json"});
  bool seen = false;
  const Json history = Json::parse(r.out)["events"];
  for (const auto& e : history) seen |= e["id"] == event_id;
  EXPECT_TRUE(seen) << r.out;
  r = Cronledger({"verify", "--config", config_path_, "--job", "report", "--date", "2026-11-02",
                  "--json"});
  const Json reruns = Json::parse(r.out)["reruns"];
  ASSERT_EQ(reruns.size(), 1u) << r.out;
  EXPECT_EQ(reruns[0]["type"], "rerun");
  EXPECT_EQ(reruns[0]["reason"], "bad input fixed");

  // Usage errors change nothing.
  r = rerun("2026-11-02", {"--only", "everything"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "cronledger rerun: --only \"everything\" is not one of failed, missing, unknown, all\n");
  // A preview records nothing and needs no reason; acting does.
  r = Cronledger({"rerun", "--config", config_path_, "--job", "report", "--date", "2026-11-02"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rerun of report 2026-11-02 (all): "), std::string::npos) << r.out;
  r = Cronledger(
      {"rerun", "--config", config_path_, "--job", "report", "--date", "2026-11-02", "--yes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--reason TEXT is required"), std::string::npos) << r.err;
  r = Cronledger({"backfill", "--config", config_path_, "--job", "report", "--from", "2026-11-02",
                  "--to", "2026-11-02", "--reason", " "});
  EXPECT_EQ(r.exit_code, 2);  // a reason given is checked, preview or not
}

TEST_F(GapsCli, ApproveLetsRunsAwaitingApprovalRun) {
  PlanThreeDays();
  Sql("UPDATE runs SET state = 'awaiting_approval', released = 0 WHERE business_date = "
      "'2026-11-02'");
  const std::vector<std::string> base = {"approve", "--config", config_path_, "--job", "report"};
  auto args = base;
  args.insert(args.end(), {"--from", "2026-11-02", "--to", "2026-11-02"});
  EXPECT_EQ(Cronledger(args).exit_code, 2);  // no reason
  args.insert(args.end(), {"--reason", "upstream fixed"});
  auto r = Cronledger(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "approved 2 run(s) of report\n");
  r = Cronledger(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no run of report is awaiting approval in that range"), std::string::npos)
      << r.err;
  r = Cronledger({"runs", "--config", config_path_, "--date", "2026-11-02", "--json"});
  const Json runs = Json::parse(r.out)["runs"];
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) EXPECT_EQ(run["state"], "pending");
}

TEST_F(GapsCli, CancelWaivesARunAndTriggerQueuesOnlyAMissingLatestPeriod) {
  PlanThreeDays();
  Sql("UPDATE runs SET state = 'failed' WHERE business_date = '2026-11-01'");
  Sql("UPDATE runs SET state = 'running' WHERE business_date = '2026-11-02'");
  const auto id_of = [&](const std::string& partition, const std::string& date) {
    auto r = Cronledger({"runs", "--config", config_path_, "--date", date, "--partition",
                         partition, "--json"});
    const Json runs = Json::parse(r.out)["runs"];
    return runs.empty() ? int64_t{0} : runs[0]["id"].get<int64_t>();
  };
  const std::string failed = std::to_string(id_of("eu", "2026-11-01"));
  auto r = Cronledger({"cancel", failed, "--config", config_path_, "--reason", "customer left"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "run " + failed + " cancelled\n");
  r = Cronledger({"cancel", std::to_string(id_of("eu", "2026-11-02")), "--config", config_path_,
                  "--reason", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is running; only pending, awaiting_approval, failed or unknown"),
            std::string::npos)
      << r.err;
  r = Gaps({"--from", "2026-11-01", "--to", "2026-11-01", "--include-waived", "--json"});
  const Json gaps = Json::parse(r.out)["gaps"];
  ASSERT_EQ(gaps.size(), 2u) << r.out;
  EXPECT_EQ(gaps[0]["cause"], "cancelled");
  EXPECT_EQ(gaps[0]["waived"], true);

  // The latest due period (today, long after the planned days) was never
  // planned: trigger queues it; a second trigger finds it and does nothing.
  const std::vector<std::string> trigger = {"trigger", "--config", config_path_, "--job",
                                            "report",  "--partition", "eu", "--reason", "rerun "
                                            "the export now"};
  r = Cronledger(trigger);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("queued 1 run(s) of report for ", 0), 0u) << r.out;
  r = Cronledger(trigger);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the latest due period exists already, nothing done"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(pending, run "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("): queued or running already\n"), std::string::npos) << r.err;
  // A partition the job never had is a usage error, not "nothing due".
  auto unknown = trigger;
  unknown[6] = "zz";
  const auto refused = Cronledger(unknown);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(refused.err, "cronledger trigger: job report has no partition \"zz\"\n");
  // Each existing run's state says what repeats its work instead.
  const std::size_t at = r.err.find("(pending, run ") + std::string("(pending, run ").size();
  const std::string id = r.err.substr(at, r.err.find(')', at) - at);
  const std::string date = Json::parse(Cronledger({"runs", "--config", config_path_, "--run", id,
                                                   "--json"})
                                           .out)["business_date"];
  const std::string rerun =
      "`cronledger rerun --job report --date " + date + " --partition eu";
  const std::string previews = " --reason TEXT` previews a rerun of its date (add --yes to queue it)";
  for (const auto& [state, hint] : std::vector<std::pair<std::string, std::string>>{
           {"failed", "`cronledger retry " + id + " --reason TEXT` queues it again"},
           {"unknown", "`cronledger retry " + id + " --reason TEXT` queues it again"},
           {"succeeded", rerun + " --force" + previews},
           {"skipped', reason = 'misfired", rerun + previews},
           {"skipped', reason = 'overlap", rerun + " --include-waived" + previews},
           {"cancelled", rerun + " --include-waived" + previews}}) {
    Sql("UPDATE runs SET state = '" + state + "' WHERE id = " + id);
    r = Cronledger(trigger);
    EXPECT_EQ(r.exit_code, 1) << state;
    EXPECT_NE(r.err.find(", run " + id + "): " + hint + "\n"), std::string::npos)
        << state << ": " << r.err;
  }
  // A key awaiting approval is queued: the trigger, with its reason, is
  // the approval.
  Sql("UPDATE runs SET state = 'awaiting_approval', reason = NULL WHERE id = " + id);
  r = Cronledger(trigger);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("; it approves the 1 awaiting approval\n"), std::string::npos) << r.out;
  const Json run =
      Json::parse(Cronledger({"runs", "--config", config_path_, "--run", id, "--json"}).out);
  EXPECT_EQ(run["state"], "pending");
}

// `runs --run` says per attempt the step it ended in, how (an exit status,
// or none for a timeout: never 0), how long it took and the output's tail.
TEST_F(GapsCli, ARunsAttemptsNameTheirStepEndAndOutputTail) {
  PlanThreeDays();
  auto r = Cronledger(
      {"runs", "--config", config_path_, "--date", "2026-11-01", "--partition", "eu", "--json"});
  const std::string id = std::to_string(Json::parse(r.out)["runs"][0]["id"].get<int64_t>());
  const auto ms = [](const std::string& t) {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(At(t).time_since_epoch()).count());
  };
  Sql("UPDATE runs SET state = 'failed', attempts = 2 WHERE id = " + id);
  Sql("INSERT INTO attempts (run_id, number, fencing_token, node, started_at, ended_at, "
      "end_class, exit_status, step, log_path, output_tail) VALUES (" +
      id + ", 1, 901, 'n1', " + ms("2026-11-01T09:00:00Z") + ", " + ms("2026-11-01T09:00:05Z") +
      ", 'timeout', NULL, 'send', '/logs/1.log', 'connecting to bank\n== step send ended: "
      "timed out after 5000 ms =='), (" +
      id + ", 2, 902, 'n1', " + ms("2026-11-01T09:01:00Z") + ", " + ms("2026-11-01T09:01:02Z") +
      ", 'failed', 3, 'send', '/logs/2.log', 'bank said no\n== step send ended: exit status 3 "
      "==')");
  r = Cronledger({"runs", "--config", config_path_, "--run", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  #1 step send timeout, no exit status: 2026-11-01T09:00:00Z -> "
                       "2026-11-01T09:00:05Z (5s)  token 901 node n1\n"
                       "     log /logs/1.log\n"
                       "     | connecting to bank\n"
                       "     | == step send ended: timed out after 5000 ms ==\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  #2 step send failed, exit status 3: "), std::string::npos) << r.out;
  const Json run =
      Json::parse(Cronledger({"runs", "--config", config_path_, "--run", id, "--json"}).out);
  ASSERT_EQ(run["attempt_list"].size(), 2u);
  EXPECT_TRUE(run["attempt_list"][0]["exit_status"].is_null());
  EXPECT_EQ(run["attempt_list"][0]["step"], "send");
  EXPECT_EQ(run["attempt_list"][1]["exit_status"], 3);
}

// A backfill of a range is the approval of its keys awaiting one, and
// --include-waived queues cancelled keys too, as the preview shows.
TEST_F(GapsCli, BackfillApprovesAwaitingKeysAndIncludeWaivedQueuesCancelledOnes) {
  PlanThreeDays();
  Sql("UPDATE runs SET state = 'succeeded'");
  Sql("UPDATE runs SET state = 'awaiting_approval' WHERE business_date = '2026-11-02'");
  Sql("UPDATE runs SET state = 'cancelled' WHERE partition = 'us' AND "
      "business_date = '2026-11-03'");
  const std::vector<std::string> base = {"backfill",   "--config", config_path_,      "--job",
                                         "report",     "--from",   "2026-11-02",      "--to",
                                         "2026-11-03", "--reason", "after the outage"};
  auto r = Cronledger(base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 missing, 1 waived"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("would queue 2 run(s), approving the 2 awaiting approval:\n"
                       "  report/eu/2026-11-02\n  report/us/2026-11-02\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("not queued 1 key(s):\n  report/us/2026-11-03: waived (cancelled) on "
                       "purpose; `cronledger backfill --job report --from 2026-11-03 --to "
                       "2026-11-03 --partition us --include-waived --reason TEXT` queues it\n"),
            std::string::npos)
      << r.out;

  auto act = base;
  act.insert(act.end(), {"--yes", "--json"});
  r = Cronledger(act);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json done = Json::parse(r.out);
  ASSERT_EQ(done["queued"].size(), 2u) << r.out;
  const std::string id = std::to_string(done["queued"][0].get<int64_t>());
  const Json run =
      Json::parse(Cronledger({"runs", "--config", config_path_, "--run", id, "--json"}).out);
  EXPECT_EQ(run["state"], "pending");
  // The run's page shows the event that approved it, with its reason.
  bool approved_by_backfill = false;
  for (const auto& e : run["events"]) {
    if (e["type"] == "backfill" && e["reason"] == "after the outage") approved_by_backfill = true;
  }
  EXPECT_TRUE(approved_by_backfill) << run.dump();
  const Json events = Json::parse(
      Cronledger({"events", "--config", config_path_, "--job", "report", "--json"}).out);
  int backfills = 0;
  for (const auto& e : events["events"]) {
    if (e["type"] != "backfill") continue;
    ++backfills;
    const Json details = e["details"];
    EXPECT_EQ(details["approved"], 2) << e.dump();
    EXPECT_EQ(details["run_ids"], done["queued"]) << e.dump();
  }
  EXPECT_EQ(backfills, 1);

  auto waived = base;
  waived.insert(waived.end(), {"--include-waived", "--yes"});
  r = Cronledger(waived);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("queued 1 run(s) of report", 0), 0u) << r.out;
}

// trigger --date runs one business date now: from the job's start_date on
// (before the job was first recorded too), not a date that is not due or
// not expected, and not a date on a slot-keyed job.
TEST_F(GapsCli, TriggerDateRunsADueDateFromTheStartDateOn) {
  std::string text = testing::ReadFile(config_path_);
  text.insert(text.find("  [[job.step]]"), "start_date = \"2026-10-25\"\n");
  config_path_ = dir_.Write("cronledger.toml", text);
  PlanThreeDays();  // recorded on 2026-11-01 at 00:00Z
  const auto trigger = [&](const std::string& date) {
    return Cronledger({"trigger", "--config", config_path_, "--job", "report", "--date", date,
                       "--partition", "eu", "--reason", "try it on a past day"});
  };
  auto r = trigger("2026-10-28");  // before the job was recorded, after its start
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "queued 1 run(s) of report for 2026-10-28\n");
  const Json runs = Json::parse(
      Cronledger({"runs", "--config", config_path_, "--date", "2026-10-28", "--json"}).out)["runs"];
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["run_key"], "report/eu/2026-10-28");
  EXPECT_EQ(runs[0]["state"], "pending");
  EXPECT_EQ(runs[0]["scheduled_at"], "2026-10-28T09:00:00Z");  // its nominal time
  const Json events = Json::parse(
      Cronledger({"events", "--config", config_path_, "--job", "report", "--json"}).out);
  int triggers = 0;
  for (const auto& e : events["events"]) {
    if (e["type"] != "trigger") continue;
    ++triggers;
    EXPECT_EQ(e["reason"], "try it on a past day");
  }
  EXPECT_EQ(triggers, 1) << events.dump();

  r = trigger("2026-10-28");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("that period exists already, nothing done"), std::string::npos) << r.err;
  r = trigger("2026-10-24");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "cronledger trigger: nothing to run for report: business date 2026-10-24 is before "
            "the job's start_date, 2026-10-25\n");
  r = trigger("2999-01-01");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("cronledger trigger: nothing to run for report: 2999-01-01 is later "
                        "than the job's current business date: its occurrence is at "
                        "2999-01-01T09:00:00+00:00 (2999-01-01T09:00:00Z), after today (",
                        0),
            0u)
      << r.err;
  r = trigger("2026-11-31");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "cronledger trigger: 2026-11-31 is not a business date: use YYYY-MM-DD\n");
  r = Cronledger({"trigger", "--config", config_path_, "--job", "report", "--date", "2026-10-28",
                  "--period", "2026-10-28", "--reason", "x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = Cronledger({"trigger", "--config", config_path_, "--job", "report", "--period", "2026-10-29",
                  "--partition", "us", "--reason", "by period"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "queued 1 run(s) of report for 2026-10-29\n");
}

// trigger --date of the current business date runs it now, before its
// occurrence: the run is due at once and keeps its scheduled time; the next
// business date is refused. The CLI runs on the real clock, so the job's
// zone is one where the local day has at least two hours to go before the
// 23:59 occurrence.
TEST_F(GapsCli, TriggerDateRunsTodaysKeyBeforeItsOccurrence) {
  using namespace std::chrono;
  const sys_seconds now = floor<seconds>(RealClock().Now());
  int offset = -12;  // Etc/GMT+12 is UTC-12; Etc/GMT-14 is UTC+14
  for (; offset <= 14; ++offset) {
    const auto local = now + hours{offset};
    if (local - floor<days>(local) < hours{22}) break;
  }
  ASSERT_LE(offset, 14);
  const std::string zone =
      offset == 0 ? "Etc/GMT"
                  : fmt::format("Etc/GMT{}{}", offset < 0 ? "+" : "-", std::abs(offset));
  const auto local_now = now + hours{offset};
  const std::string today = FormatDate(year_month_day{floor<days>(local_now)});
  const std::string tomorrow = FormatDate(year_month_day{floor<days>(local_now) + days{1}});
  const std::string occurrence =
      FormatUtc(sys_seconds{floor<days>(local_now) + hours{23} + minutes{59} - hours{offset}});
  config_path_ = dir_.Write("cronledger.toml", R"([server]
listen = "127.0.0.1:0"
store = "sqlite:ledger.db"

[[job]]
name = "late"
schedule = "59 23 * * *"
timezone = ")" + zone + R"("

  [[job.step]]
  name = "send"
  command = ["/bin/true"]
)");
  PlanThreeDays();  // the ledger, the job recorded in November
  const auto trigger = [&](const std::string& date) {
    return Cronledger({"trigger", "--config", config_path_, "--job", "late", "--date", date,
                       "--reason", "the customer needs it this morning"});
  };
  auto r = trigger(today);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "queued 1 run(s) of late for " + today + "\n");
  const Json runs = Json::parse(
      Cronledger({"runs", "--config", config_path_, "--date", today, "--json"}).out)["runs"];
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["run_key"], "late/default/" + today);
  EXPECT_EQ(runs[0]["state"], "pending");
  EXPECT_EQ(runs[0]["scheduled_at"], occurrence);  // kept, though it runs now
  // The text tables show the job's wall time beside UTC (with its date
  // when that is not the UTC one).
  const auto beside = [&](const std::string& date, const std::string& utc) {
    const std::string local =
        fmt::format("23:59:00{}{:02}:00", offset < 0 ? '-' : '+', std::abs(offset));
    return utc + " (" + (utc.compare(0, 10, date) == 0 ? local : date + "T" + local) + ")";
  };
  const auto text = Cronledger({"runs", "--config", config_path_, "--date", today});
  EXPECT_NE(text.out.find(beside(today, occurrence)), std::string::npos)
      << beside(today, occurrence) << "\n"
      << text.out;
  const std::string nov2 = FormatUtc(
      sys_seconds{sys_days{November / 2 / 2026} + hours{23} + minutes{59} - hours{offset}});
  const auto gaps = Gaps({"--job", "late", "--from", "2026-11-02", "--to", "2026-11-02"});
  EXPECT_NE(gaps.out.find(beside("2026-11-02", nov2)), std::string::npos)
      << beside("2026-11-02", nov2) << "\n"
      << gaps.out;

  r = trigger(tomorrow);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(tomorrow + " is later than the job's current business date"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("after today (" + today + " in " + zone + ")"), std::string::npos) << r.err;
}

// Gaps are printed as they are found: the JSON item by item, the table in
// aligned blocks of 1,000 rows under one header.
TEST_F(GapsCli, PrintsManyGapsInTheSameShape) {
  std::string partitions;
  for (int i = 0; i < 500; ++i) {
    const std::string n = std::to_string(i);
    partitions += (i ? ", \"p" : "\"p") + std::string(3 - n.size(), '0') + n + "\"";
  }
  config_path_ = dir_.Write("cronledger.toml", R"([server]
listen = "127.0.0.1:0"
store = "sqlite:ledger.db"

[[job]]
name = "report"
schedule = "0 9 * * *"
timezone = "UTC"
partitions = [)" + partitions + R"(]

  [[job.step]]
  name = "send"
  command = ["/bin/true"]
)");
  PlanThreeDays();
  Sql("DELETE FROM runs");

  auto r = Gaps({"--from", "2026-11-01", "--to", "2026-11-03", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const Json gaps = Json::parse(r.out)["gaps"];
  ASSERT_EQ(gaps.size(), 1500u);
  EXPECT_EQ(gaps[0]["run_key"], "report/p000/2026-11-01");
  EXPECT_EQ(gaps[1499]["run_key"], "report/p499/2026-11-03");
  EXPECT_EQ(r.out, Json::parse(r.out).dump(2) + "\n");  // the layout of one whole document

  r = Gaps({"--from", "2026-11-01", "--to", "2026-11-03"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(r.out.substr(at, nl - at));
  }
  ASSERT_EQ(lines.size(), 1502u) << r.out.substr(0, 500);
  const std::size_t date_column = lines[0].find("BUSINESS_DATE");
  ASSERT_NE(date_column, std::string::npos) << lines[0];
  for (std::size_t i = 1; i <= 1500; ++i) {
    ASSERT_EQ(lines[i].find("  2026-11-0"), date_column - 2) << i << ": " << lines[i];
  }
  EXPECT_EQ(lines[1501], "1500 gap(s), 0 waived: 1500 never_planned");
}

TEST_F(GapsCli, BadArgumentsExitTwoAndAMissingLedgerThree) {
  auto r = Gaps({"--from", "2026-02-30"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "cronledger gaps: --from \"2026-02-30\" is not a date; use YYYY-MM-DD, e.g. "
            "2026-11-28\n");
  r = Gaps({"--from", "2026-11-05", "--to", "2026-11-01"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "cronledger gaps: --from 2026-11-05 is after --to 2026-11-01\n");
  r = Gaps({"--job", "nope"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no job named \"nope\""), std::string::npos) << r.err;
  r = Gaps({});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("ledger.db")));
}

}  // namespace
}  // namespace cronledger
