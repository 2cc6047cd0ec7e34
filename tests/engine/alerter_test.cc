// The alerter and its delivery: each condition (lag, missing_runs,
// run_failed, run_unknown) fires once, stays quiet while it holds, resolves
// once; what was said survives a restart; a failing target is retried with
// backoff, and every outcome is an alert_sent / alert_resolved event. Real
// SQLite, fake clock, a recording sender.
#include "engine/alerter.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "engine/alert_delivery.h"
#include "engine/engine_test_util.h"
#include "engine/heartbeat_pinger.h"
#include "engine/planner.h"
#include "ledger/names.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::engine {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;
using nlohmann::json;

using testing::At;

// Records what it was asked to send; fails the first `fail_first` sends.
class RecordingSender final : public AlertSender {
 public:
  Status Send(const AlertTarget& target, const AlertNotice& notice) override {
    std::lock_guard lock(mu);
    ++calls;
    if (fail_first > 0) {
      --fail_first;
      return Status(StatusCode::kUnavailable, "POST http://hooks.test: HTTP 503");
    }
    sent.push_back(json::parse(notice.Json()));
    targets.push_back(target.Describe());
    return Status::Ok();
  }
  std::mutex mu;
  int fail_first = 0;
  int calls = 0;
  std::vector<json> sent;
  std::vector<std::string> targets;
};

class AlerterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-alerter-XXXXXX";
    dir_ = mkdtemp(tmpl);
    config_.dir = dir_;
    config::JobConfig job = testing::Job("j", "0 9 * * *");
    job.partitions = {"a", "b"};
    job.alert.max_lag = hours(1);
    job.alert.webhook = "https://hooks.test/services/T000/SECRET";
    // Each pass's notices at once; the tests of groups set their window.
    job.alert.group_window = seconds(0);
    config_.jobs = {job};
    store::SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    // Planned 11-01 .. 11-05; every run succeeded.
    Planner planner(config_, *store_, clock_);
    for (auto t = At("2026-11-01T00:00:00Z"); t <= At("2026-11-05T12:00:00Z"); t += hours{6}) {
      ASSERT_TRUE(planner.PlanOnce(t).ok());
    }
    Sql("UPDATE runs SET state = 'succeeded', attempts = 1");
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    const std::string message = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << message;
  }
  void SetRun(const std::string& partition, const std::string& date, const std::string& set) {
    Sql("UPDATE runs SET " + set + " WHERE partition = '" + partition +
        "' AND business_date = '" + date + "'");
  }

  // One alerter pass at `now` and the delivery of what it queued.
  void Pass(Alerter& alerter, AlertDelivery& delivery, Clock::TimePoint now) {
    ASSERT_TRUE(alerter.RunOnce(now).ok());
    clock_.Set(now);
    delivery.DeliverDue();
  }

  std::vector<store::EventRecord> Events(std::string_view type) {
    store::EventQuery q;
    q.job = "j";
    q.type = std::string(type);
    q.limit = 1000;
    auto events = store_->EventList(q);
    EXPECT_TRUE(events.ok());
    return events.ok() ? *events : std::vector<store::EventRecord>{};
  }

  // A failed run keeps the job's lag growing (it is neither succeeded nor
  // waived), and a long max_lag closes no date: only the runs' own alerts.
  void OnlyRunAlerts() { config_.jobs[0].alert.max_lag = hours(24 * 100); }

  // "alert state business_date" of each notice sent (of alert `only`).
  std::vector<std::string> Sent(const std::string& only = "") {
    std::vector<std::string> out;
    for (const auto& n : sender_.sent) {
      if (!only.empty() && n["alert"] != only) continue;
      out.push_back(n["alert"].get<std::string>() + " " + n["state"].get<std::string>() + " " +
                    (n["business_date"].is_null() ? "-" : n["business_date"].get<std::string>()));
    }
    return out;
  }

  std::string dir_;
  config::Config config_;
  FakeClock clock_{At("2026-11-06T08:00:00Z")};
  std::unique_ptr<store::SqliteStore> store_;
  RecordingSender sender_;
  AlerterOptions options_{.every = seconds(10), .missing_every = seconds(10), .node = ""};
  // The backoff the retry tests time against, spelled out so that a change
  // of the defaults does not move their expected instants.
  const AlertDeliveryOptions backoff_{.max_attempts = 5, .initial_backoff = milliseconds(2000),
                                      .multiplier = 3.0, .max_backoff = milliseconds(60000)};
};

using Lines = std::vector<std::string>;

// A failure notice says how the run's last attempt ended, where on-call
// reads it: the step, the end class, the exit status and the output's last
// line (the step's own, cronledger's "== ... ==" lines left out), in the
// details and in the summary. Output that is not UTF-8 does not stop it.
TEST_F(AlerterTest, AFailureNoticeSaysWhereAndHowTheLastAttemptEnded) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 1");
  Sql("INSERT INTO attempts (run_id, number, fencing_token, node, started_at, ended_at, "
      "end_class, exit_status, step, output_tail) SELECT id, 1, 9001, 'n1', 1, 2, 'failed', 65, "
      "'deliver', 'connecting to bank\n' || CAST(X'FF' AS TEXT) || ' bank said: 503 Service "
      "Unavailable\n"
      "== attempt 1 ended: exit 65 ==\n' FROM runs WHERE partition = 'a' AND business_date = "
      "'2026-11-03'");
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  Pass(alerter, delivery, At("2026-11-06T08:00:00Z"));
  ASSERT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03"}));
  const json& d = sender_.sent[0]["details"];
  EXPECT_EQ(d["step"], "deliver") << d;
  EXPECT_EQ(d["end_class"], "failed") << d;
  EXPECT_EQ(d["exit_status"], 65) << d;
  EXPECT_EQ(d["excerpt"], "\xEF\xBF\xBD bank said: 503 Service Unavailable") << d;
  const std::string summary = sender_.sent[0]["summary"];
  EXPECT_NE(summary.find("; attempt 1 at step deliver: failed (exit 65): "), std::string::npos)
      << summary;
}

TEST_F(AlerterTest, FailedRunFiresOnceWhileItHoldsAndResolvesOnce) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  auto t = At("2026-11-06T08:00:00Z");
  for (int i = 0; i < 3; ++i, t += seconds(10)) Pass(alerter, delivery, t);
  ASSERT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03"}));
  const json& n = sender_.sent[0];
  EXPECT_EQ(n["job"], "j");
  EXPECT_EQ(n["at"], "2026-11-06T08:00:00Z");
  EXPECT_EQ(n["run_key"], "j/a/2026-11-03");
  EXPECT_EQ(n["details"]["attempts"], 3);
  EXPECT_EQ(n["details"]["state"], "failed");
  // No attempt recorded: nothing said of one.
  EXPECT_FALSE(n["details"].contains("end_class")) << n;
  // The target is named by its origin only: the path holds a secret.
  EXPECT_EQ(sender_.targets[0], "webhook https://hooks.test");

  const auto sent = Events(ledger::event::kAlertSent);
  ASSERT_EQ(sent.size(), 1u);
  const json d = json::parse(sent[0].details);
  EXPECT_EQ(d["condition"], n["condition"]);
  EXPECT_EQ(d["delivery"]["outcome"], "delivered");
  EXPECT_EQ(d["delivery"]["attempts"], 1);
  EXPECT_EQ(d["delivery"]["targets"][0]["target"], "webhook https://hooks.test");
  EXPECT_EQ(sent[0].run_key, "j/a/2026-11-03");
  EXPECT_EQ(sent[0].actor, "alerter");
  EXPECT_EQ(sent[0].details.find("SECRET"), std::string::npos);

  // An operator's retry succeeds: resolved, once.
  SetRun("a", "2026-11-03", "state = 'succeeded', attempts = 4");
  for (int i = 0; i < 3; ++i, t += seconds(10)) Pass(alerter, delivery, t);
  EXPECT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03", "run_failed resolved 2026-11-03"}));
  EXPECT_EQ(sender_.sent[1]["condition"], sender_.sent[0]["condition"]);
  EXPECT_EQ(sender_.sent[1]["details"]["state"], "succeeded");
  EXPECT_EQ(Events(ledger::event::kAlertResolved).size(), 1u);
  EXPECT_TRUE(alerter.Firing("j").empty());
}

TEST_F(AlerterTest, UnknownRunFiresAndAFailureAfterARetryIsANewCondition) {
  OnlyRunAlerts();
  SetRun("b", "2026-11-04", "state = 'unknown', attempts = 1");
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  auto t = At("2026-11-06T08:00:00Z");
  Pass(alerter, delivery, t);
  // Retried between two passes, and failed again.
  SetRun("b", "2026-11-04", "state = 'failed', attempts = 2");
  Pass(alerter, delivery, t + seconds(10));
  Pass(alerter, delivery, t + seconds(20));
  EXPECT_EQ(Sent(), (Lines{"run_unknown firing 2026-11-04", "run_unknown resolved 2026-11-04",
                           "run_failed firing 2026-11-04"}));
  EXPECT_EQ(sender_.sent[1]["details"]["state"], "failed");
  EXPECT_EQ(alerter.Firing("j").size(), 1u);
}

TEST_F(AlerterTest, LagOverMaxLagFiresOnceAndResolves) {
  // 11-05's run of partition a is still pending at 12:00: 3h late.
  SetRun("a", "2026-11-05", "state = 'pending', attempts = 0");
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  auto t = At("2026-11-05T10:00:00Z");  // lag 1h: not over max_lag
  Pass(alerter, delivery, t);
  EXPECT_TRUE(Sent().empty());
  t = At("2026-11-05T12:00:00Z");
  Pass(alerter, delivery, t);
  Pass(alerter, delivery, t + seconds(10));
  ASSERT_EQ(Sent(), (Lines{"lag firing 2026-11-05"}));
  EXPECT_EQ(sender_.sent[0]["details"]["lag_seconds"], 3 * 3600);
  EXPECT_EQ(sender_.sent[0]["details"]["max_lag_seconds"], 3600);
  EXPECT_EQ(sender_.sent[0]["condition"], "lag");
  SetRun("a", "2026-11-05", "state = 'succeeded', attempts = 1");
  Pass(alerter, delivery, t + seconds(20));
  Pass(alerter, delivery, t + seconds(30));
  EXPECT_EQ(Sent(), (Lines{"lag firing 2026-11-05", "lag resolved 2026-11-05"}));
  EXPECT_EQ(sender_.sent[1]["details"]["lag_seconds"], 0);
}

TEST_F(AlerterTest, MissingRunsOnAClosedDateFireOncePerDateAndResolve) {
  SetRun("a", "2026-11-02", "state = 'skipped', reason = 'misfired'");
  SetRun("b", "2026-11-02", "state = 'awaiting_approval'");
  SetRun("a", "2026-11-04", "state = 'skipped', reason = 'misfired'");
  SetRun("b", "2026-11-04", "state = 'skipped', reason = 'coalesced'");  // waived: not missing
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  auto t = At("2026-11-06T08:00:00Z");
  Pass(alerter, delivery, t);
  Pass(alerter, delivery, t + seconds(10));
  // (The misfired keys make the job lag too: that is the lag alert's business.)
  ASSERT_EQ(Sent("missing_runs"),
            (Lines{"missing_runs firing 2026-11-02", "missing_runs firing 2026-11-04"}));
  std::vector<json> missing;
  for (const auto& n : sender_.sent) {
    if (n["alert"] == "missing_runs") missing.push_back(n);
  }
  EXPECT_EQ(missing[0]["details"]["missing"], 2);
  EXPECT_EQ(missing[0]["details"]["run_keys"], (json{"j/a/2026-11-02", "j/b/2026-11-02"}));
  EXPECT_EQ(missing[0]["details"]["causes"]["misfired"], 1);
  EXPECT_EQ(missing[0]["details"]["causes"]["awaiting_approval"], 1);
  EXPECT_EQ(missing[1]["details"]["missing"], 1);
  // 11-02 backfilled and done; 11-04 still missing.
  SetRun("a", "2026-11-02", "state = 'succeeded', reason = NULL");
  SetRun("b", "2026-11-02", "state = 'succeeded'");
  Pass(alerter, delivery, t + seconds(20));
  Pass(alerter, delivery, t + seconds(30));
  EXPECT_EQ(Sent("missing_runs"),
            (Lines{"missing_runs firing 2026-11-02", "missing_runs firing 2026-11-04",
                   "missing_runs resolved 2026-11-02"}));
}

TEST_F(AlerterTest, ARestartedAlerterDoesNotPageAgainAndStillResolves) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  auto t = At("2026-11-06T08:00:00Z");
  {
    AlertDelivery delivery(*store_, clock_, sender_);
    Alerter alerter(config_, *store_, delivery, options_);
    Pass(alerter, delivery, t);
  }
  ASSERT_EQ(Sent().size(), 1u);
  {
    // serve restarted: a new alerter over the same ledger.
    AlertDelivery delivery(*store_, clock_, sender_);
    Alerter alerter(config_, *store_, delivery, options_);
    Pass(alerter, delivery, t + seconds(60));
    EXPECT_EQ(Sent().size(), 1u);
    EXPECT_EQ(alerter.Firing("j").size(), 1u);
  }
  SetRun("a", "2026-11-03", "state = 'succeeded', attempts = 4");
  {
    AlertDelivery delivery(*store_, clock_, sender_);
    Alerter alerter(config_, *store_, delivery, options_);
    Pass(alerter, delivery, t + seconds(120));
    Pass(alerter, delivery, t + seconds(130));
  }
  {
    AlertDelivery delivery(*store_, clock_, sender_);
    Alerter alerter(config_, *store_, delivery, options_);
    Pass(alerter, delivery, t + seconds(180));
    EXPECT_TRUE(alerter.Firing("j").empty());
  }
  EXPECT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03", "run_failed resolved 2026-11-03"}));
}

// One bad deploy across 200 partitions is one notice: the runs of one
// business date, kind and step that fail within alert.group_window of the
// first go out together once the window has passed, with their count and
// first 20 run keys; a resolve follows when the whole group has cleared,
// also after a restart (the members are in the alert_sent event).
TEST_F(AlerterTest, TwoHundredFailingPartitionsAreOneNoticeAndOneResolve) {
  OnlyRunAlerts();
  config::JobConfig& job = config_.jobs[0];
  job.alert.group_window = seconds(60);
  job.partitions.clear();
  for (int i = 0; i < 200; ++i) job.partitions.push_back(fmt::format("p{:03}", i));
  Planner planner(config_, *store_, clock_);
  // 11-06 was planned with the two partitions; 11-07 has the 200.
  ASSERT_TRUE(planner.PlanOnce(At("2026-11-06T08:00:00Z")).ok());
  ASSERT_TRUE(planner.PlanOnce(At("2026-11-07T09:00:30Z")).ok());
  const auto fail = [&](const std::string& where) {
    Sql("UPDATE runs SET state = 'failed', attempts = 1 WHERE business_date = '2026-11-07' AND " +
        where);
    Sql("INSERT INTO attempts (run_id, number, fencing_token, node, started_at, ended_at, "
        "end_class, exit_status, step, output_tail) SELECT id, 1, 50000 + id, 'n1', 1, 2, "
        "'failed', 65, 'deliver', 'bank said: 503\n' FROM runs WHERE business_date = "
        "'2026-11-07' AND " +
        where);
  };
  fail("partition < 'p150'");
  auto t = At("2026-11-07T09:01:00Z");
  {
    AlertDelivery delivery(*store_, clock_, sender_);
    Alerter alerter(config_, *store_, delivery, options_);
    Pass(alerter, delivery, t);
    EXPECT_TRUE(Sent().empty());  // the window is open
    fail("partition >= 'p150'");
    for (int i = 1; i <= 5; ++i) Pass(alerter, delivery, t + seconds(10 * i));
    EXPECT_TRUE(Sent().empty());
    Pass(alerter, delivery, t + seconds(60));
  }
  ASSERT_EQ(Sent(), (Lines{"run_failed firing 2026-11-07"}));
  const json n = sender_.sent[0];  // a copy: more notices come
  EXPECT_EQ(n["condition"], "run_failed/2026-11-07/deliver/2026-11-07T09:01:00Z");
  EXPECT_FALSE(n.contains("run_key")) << n;
  EXPECT_FALSE(n.contains("run_id")) << n;
  EXPECT_EQ(n["details"]["count"], 200);
  ASSERT_EQ(n["details"]["run_keys"].size(), 20u);
  EXPECT_EQ(n["details"]["run_keys"][0], "j/p000/2026-11-07");
  EXPECT_EQ(n["details"]["run_keys"][19], "j/p019/2026-11-07");
  EXPECT_EQ(n["details"]["step"], "deliver");
  ASSERT_EQ(n["details"]["runs"].size(), 20u);
  EXPECT_EQ(n["details"]["runs"][0]["exit_status"], 65);
  EXPECT_EQ(n["details"]["runs"][0]["excerpt"], "bank said: 503");
  const std::string summary = n["summary"];
  EXPECT_EQ(summary.rfind("200 runs of job j for 2026-11-07 failed at step deliver", 0), 0u)
      << summary;
  EXPECT_NE(summary.find("and 195 more; the first, j/p000/2026-11-07: attempt 1 at step deliver: "
                         "failed (exit 65): bank said: 503"),
            std::string::npos)
      << summary;

  // serve restarts; 199 are retried and succeed: the group has not cleared.
  Sql("UPDATE runs SET state = 'succeeded', attempts = 2 WHERE business_date = '2026-11-07' AND "
      "partition <> 'p123'");
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  for (int i = 0; i < 8; ++i) Pass(alerter, delivery, t + seconds(120 + 10 * i));
  EXPECT_EQ(Sent().size(), 1u);
  SetRun("p123", "2026-11-07", "state = 'cancelled'");
  Pass(alerter, delivery, t + seconds(300));
  Pass(alerter, delivery, t + seconds(310));
  ASSERT_EQ(Sent(), (Lines{"run_failed firing 2026-11-07", "run_failed resolved 2026-11-07"}));
  const json& r = sender_.sent[1];
  EXPECT_EQ(r["condition"], n["condition"]);
  EXPECT_EQ(r["details"]["count"], 200);
  EXPECT_EQ(r["details"]["states"], (json{{"cancelled", 1}, {"succeeded", 199}}));
  EXPECT_EQ(r["summary"],
            "none of the 200 runs of job j for 2026-11-07 is failed any more: now "
            "1 cancelled, 199 succeeded");
  EXPECT_TRUE(alerter.Firing("j").empty());
}

// Groups are per step and kind; a group of one is the run's own notice, in
// the shape of a single run's, and a run that leaves its state while its
// group waits is never said. With server.public_url, notices link to the
// run's page (one run) or the job's (a group).
TEST_F(AlerterTest, GroupsArePerStepAndAGroupOfOneIsTheRunsOwnNotice) {
  OnlyRunAlerts();
  config_.server.public_url = "https://cron.example.com";
  config_.jobs[0].alert.group_window = seconds(60);
  const auto fail = [&](const std::string& partition, const std::string& date,
                        const std::string& step) {
    SetRun(partition, date, "state = 'failed', attempts = 1");
    Sql("INSERT INTO attempts (run_id, number, fencing_token, node, started_at, ended_at, "
        "end_class, exit_status, step, output_tail) SELECT id, 1, 60000 + id, 'n1', 1, 2, "
        "'failed', 1, '" +
        step + "', '' FROM runs WHERE partition = '" + partition + "' AND business_date = '" +
        date + "'");
  };
  fail("a", "2026-11-04", "load");
  fail("b", "2026-11-04", "load");
  fail("a", "2026-11-05", "load");
  fail("b", "2026-11-05", "send");
  fail("a", "2026-11-03", "send");
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  const auto t = At("2026-11-06T08:00:00Z");
  Pass(alerter, delivery, t);
  SetRun("a", "2026-11-03", "state = 'succeeded', attempts = 2");  // fixed within the window
  Pass(alerter, delivery, t + seconds(60));
  std::map<std::string, json> by_condition;
  for (const auto& n : sender_.sent) by_condition[n["condition"]] = n;
  ASSERT_EQ(sender_.sent.size(), 3u);
  const json& both = by_condition["run_failed/2026-11-04/load/2026-11-06T08:00:00Z"];
  EXPECT_EQ(both["details"]["count"], 2) << sender_.sent;
  EXPECT_EQ(both["url"], "https://cron.example.com/#/job/j");
  for (const auto& [condition, n] : by_condition) {
    if (n["details"]["count"] != 1) continue;
    EXPECT_EQ(condition, fmt::format("run_failed/{}/1", n["run_id"].get<int64_t>()));
    EXPECT_EQ(n["url"],
              fmt::format("https://cron.example.com/#/run/{}", n["run_id"].get<int64_t>()));
    EXPECT_EQ(n["details"]["run_keys"], json{n["run_key"]});
    EXPECT_EQ(n["business_date"], "2026-11-05");
  }
  AlertNotice slack;
  slack.alert = "run_failed";
  slack.job = "j";
  slack.summary = "a <b>";
  slack.url = "https://cron.example.com/#/run/7";
  EXPECT_EQ(json::parse(slack.SlackJson())["text"],
            ":rotating_light: *FIRING* run_failed (job `j`)\na &lt;b&gt;\n"
            "<https://cron.example.com/#/run/7|Open in cronledger>");
}

// Nodes sharing a store page once: only the holder of the store's alerter
// role evaluates. When it stops renewing the role (its node died), another
// node takes over once the role's lease (three passes) has expired, reads
// what was said from the events, and neither pages again nor forgets to
// resolve; nor does the first node when it comes back and takes over again.
TEST_F(AlerterTest, NodesOnOneStorePageOnceAndAnotherTakesOver) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  RecordingSender sender2;
  AlertDelivery d1(*store_, clock_, sender_);
  AlertDelivery d2(*store_, clock_, sender2);
  AlerterOptions o1 = options_;
  o1.node = "n1";
  AlerterOptions o2 = options_;
  o2.node = "n2";
  Alerter n1(config_, *store_, d1, o1);
  Alerter n2(config_, *store_, d2, o2);
  auto t = At("2026-11-06T08:00:00Z");
  for (int i = 0; i < 3; ++i, t += seconds(10)) {
    Pass(n1, d1, t);
    Pass(n2, d2, t);
  }
  EXPECT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03"}));
  EXPECT_TRUE(sender2.sent.empty()) << sender2.sent.front();
  EXPECT_TRUE(n1.Alerting());
  EXPECT_FALSE(n2.Alerting());

  // n1 stops at 08:00:20; the run is retried and succeeds.
  SetRun("a", "2026-11-03", "state = 'succeeded', attempts = 4");
  Pass(n2, d2, t);  // 08:00:30: n1's role runs until 08:00:50
  EXPECT_FALSE(n2.Alerting());
  t += seconds(30);
  Pass(n2, d2, t);
  EXPECT_TRUE(n2.Alerting());
  ASSERT_EQ(sender2.sent.size(), 1u);
  EXPECT_EQ(sender2.sent[0]["state"], "resolved");
  EXPECT_EQ(sender2.sent[0]["condition"], sender_.sent[0]["condition"]);
  EXPECT_EQ(Sent().size(), 1u);

  // n1 comes back while n2 alerts: it stands by, and forgets what it knew.
  Pass(n1, d1, t + seconds(10));
  Pass(n2, d2, t + seconds(10));
  EXPECT_FALSE(n1.Alerting());
  // n2 stops; n1 takes over and says nothing: everything was resolved.
  t += seconds(60);
  Pass(n1, d1, t);
  EXPECT_TRUE(n1.Alerting());
  EXPECT_EQ(Sent().size(), 1u);
  EXPECT_EQ(sender2.sent.size(), 1u);
  EXPECT_EQ(Events(ledger::event::kAlertSent).size(), 1u);
  EXPECT_EQ(Events(ledger::event::kAlertResolved).size(), 1u);

  // n1 shuts down cleanly: it gives the role up, and n2 alerts at its next
  // pass, not a lease later.
  n1.ReleaseRole();
  Pass(n2, d2, t + seconds(10));
  EXPECT_TRUE(n2.Alerting());
}

TEST_F(AlerterTest, AFailingTargetIsRetriedWithBackoffThenRecorded) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  sender_.fail_first = 2;
  AlertDelivery delivery(*store_, clock_, sender_, backoff_);
  Alerter alerter(config_, *store_, delivery, options_);
  const auto t = At("2026-11-06T08:00:00Z");
  ASSERT_TRUE(alerter.RunOnce(t).ok());
  EXPECT_EQ(delivery.DeliverDue(), seconds(2));  // first try failed
  clock_.Advance(seconds(1));
  EXPECT_EQ(delivery.DeliverDue(), seconds(1));  // not due: no try
  EXPECT_EQ(sender_.calls, 1);
  clock_.Advance(seconds(1));
  EXPECT_EQ(delivery.DeliverDue(), seconds(6));  // 2 s, then 6 s
  EXPECT_EQ(sender_.calls, 2);
  EXPECT_TRUE(Events(ledger::event::kAlertSent).empty());  // not finished yet
  clock_.Advance(seconds(6));
  EXPECT_EQ(delivery.DeliverDue(), std::nullopt);
  EXPECT_EQ(sender_.calls, 3);
  EXPECT_EQ(delivery.Pending(), 0u);
  const auto sent = Events(ledger::event::kAlertSent);
  ASSERT_EQ(sent.size(), 1u);
  const json d = json::parse(sent[0].details);
  EXPECT_EQ(d["delivery"]["outcome"], "delivered");
  EXPECT_EQ(d["delivery"]["attempts"], 3);
  EXPECT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03"}));
}

TEST_F(AlerterTest, AnUndeliverableNoticeIsRecordedAsFailedAndNotRepeated) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  sender_.fail_first = 1000;
  AlertDelivery delivery(*store_, clock_, sender_,
                         {.max_attempts = 3, .initial_backoff = milliseconds(1000),
                          .multiplier = 2.0, .max_backoff = milliseconds(1500)});
  Alerter alerter(config_, *store_, delivery, options_);
  auto t = At("2026-11-06T08:00:00Z");
  ASSERT_TRUE(alerter.RunOnce(t).ok());
  EXPECT_EQ(delivery.DeliverDue(), seconds(1));
  clock_.Advance(seconds(1));
  EXPECT_EQ(delivery.DeliverDue(), milliseconds(1500));  // capped at 1.5 s
  clock_.Advance(milliseconds(1500));
  EXPECT_EQ(delivery.DeliverDue(), std::nullopt);
  EXPECT_EQ(sender_.calls, 3);
  const auto sent = Events(ledger::event::kAlertSent);
  ASSERT_EQ(sent.size(), 1u);
  const json d = json::parse(sent[0].details);
  EXPECT_EQ(d["delivery"]["outcome"], "failed");
  EXPECT_EQ(d["delivery"]["targets"][0]["error"], "POST http://hooks.test: HTTP 503");
  // Notified (if to no avail): the condition is not paged again.
  Pass(alerter, delivery, t + seconds(10));
  EXPECT_EQ(sender_.calls, 3);
}

TEST_F(AlerterTest, AResolvedNoticeWaitsForItsFiringNoticesRetries) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  sender_.fail_first = 1;
  AlertDelivery delivery(*store_, clock_, sender_,
                         {.max_attempts = 5, .initial_backoff = milliseconds(30000),
                          .multiplier = 2.0, .max_backoff = milliseconds(60000)});
  Alerter alerter(config_, *store_, delivery, options_);
  const auto t = At("2026-11-06T08:00:00Z");
  ASSERT_TRUE(alerter.RunOnce(t).ok());
  delivery.DeliverDue();  // fails; next try in 30 s
  SetRun("a", "2026-11-03", "state = 'succeeded', attempts = 4");
  ASSERT_TRUE(alerter.RunOnce(t + seconds(10)).ok());
  clock_.Advance(seconds(10));
  EXPECT_EQ(delivery.DeliverDue(), seconds(20));  // the resolved one waits
  EXPECT_TRUE(Sent().empty());
  clock_.Advance(seconds(20));
  EXPECT_EQ(delivery.DeliverDue(), seconds(0));  // now its turn
  EXPECT_EQ(delivery.DeliverDue(), std::nullopt);
  EXPECT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03", "run_failed resolved 2026-11-03"}));
  const auto sent = Events(ledger::event::kAlertSent);
  const auto resolved = Events(ledger::event::kAlertResolved);
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_LT(sent[0].id, resolved[0].id);
}

TEST_F(AlerterTest, JobsWithoutATargetAreNotWatched) {
  OnlyRunAlerts();
  config_.jobs[0].alert.webhook.clear();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  AlertDelivery delivery(*store_, clock_, sender_);
  Alerter alerter(config_, *store_, delivery, options_);
  Pass(alerter, delivery, At("2026-11-06T08:00:00Z"));
  EXPECT_EQ(sender_.calls, 0);
  EXPECT_TRUE(Events(ledger::event::kAlertSent).empty());
}

TEST_F(AlerterTest, TheDeliveryThreadDeliversWithoutTheCaller) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  AlertDelivery delivery(*store_, clock_, sender_);
  delivery.Start();
  Alerter alerter(config_, *store_, delivery, options_);
  ASSERT_TRUE(alerter.RunOnce(clock_.Now()).ok());
  for (int i = 0; i < 2000 && delivery.Pending() > 0; ++i) usleep(1000);
  delivery.Stop();
  EXPECT_EQ(delivery.Pending(), 0u);
  EXPECT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03"}));
}

// A retry's backoff is an interval: the delivery thread sleeps it on the
// steady clock, so a wall clock stepped back an hour (NTP, a resumed VM)
// does not hold a failing page back for that hour.
TEST_F(AlerterTest, ARetryIsTriedAfterItsBackoffWhenTheWallClockIsSteppedBack) {
  OnlyRunAlerts();
  SetRun("a", "2026-11-03", "state = 'failed', attempts = 3");
  sender_.fail_first = 1;
  AlertDelivery delivery(*store_, clock_, sender_, backoff_);
  Alerter alerter(config_, *store_, delivery, options_);
  ASSERT_TRUE(alerter.RunOnce(clock_.Now()).ok());
  const auto calls = [&] {
    std::lock_guard lock(sender_.mu);
    return sender_.calls;
  };
  delivery.Start();
  // The first try fails; the thread goes to sleep for its 2 s backoff.
  for (int i = 0; i < 5000 && (calls() < 1 || clock_.Sleepers() < 1); ++i) usleep(1000);
  ASSERT_EQ(calls(), 1);
  ASSERT_EQ(clock_.Sleepers(), 1u);
  clock_.StepWallClock(-hours(1));
  clock_.Advance(seconds(2));
  for (int i = 0; i < 5000 && delivery.Pending() > 0; ++i) usleep(1000);
  delivery.Stop();
  EXPECT_EQ(calls(), 2);
  EXPECT_EQ(delivery.Pending(), 0u);
  EXPECT_EQ(Sent(), (Lines{"run_failed firing 2026-11-03"}));
}

TEST(AlertNotice, SlackBodyIsOneReadableTextField) {
  AlertNotice n;
  n.condition = "run_failed/7/3";
  n.alert = "run_failed";
  n.job = "daily_report";
  n.business_date = "2026-11-28";
  n.summary = "run daily_report/acme/2026-11-28 failed after 3 attempt(s) <x & y>";
  const json body = json::parse(n.SlackJson());
  ASSERT_EQ(body.size(), 1u);
  const std::string text = body["text"];
  EXPECT_NE(text.find("FIRING"), std::string::npos) << text;
  EXPECT_NE(text.find("daily_report/acme/2026-11-28 failed"), std::string::npos) << text;
  EXPECT_NE(text.find("&lt;x &amp; y&gt;"), std::string::npos) << text;  // Slack's escapes
  n.firing = false;
  EXPECT_NE(json::parse(n.SlackJson())["text"].get<std::string>().find("RESOLVED"),
            std::string::npos);
}

TEST(AlertTargets, UrlOriginDropsPathQueryAndUserinfo) {
  EXPECT_EQ(UrlOrigin("https://hooks.slack.com/services/T0/B0/XXXX"), "https://hooks.slack.com");
  EXPECT_EQ(UrlOrigin("http://u:pw@127.0.0.1:9000/h?token=s"), "http://127.0.0.1:9000");
  EXPECT_EQ(UrlOrigin("http://example.com"), "http://example.com");
}

TEST(HeartbeatPinger, PingsAfterAPassAtMostOncePerPeriod) {
  FakeClock clock(At("2026-11-06T08:00:00Z"));
  std::vector<std::string> got;
  HeartbeatPinger pinger("https://hc.test/ping/uuid", clock, seconds(30),
                         [&](const std::string& url) {
                           got.push_back(url);
                           return Status::Ok();
                         });
  EXPECT_FALSE(pinger.PingIfDue());  // no pass yet: nothing to report
  const auto t = At("2026-11-06T08:00:00Z");
  pinger.PlannerPassed(t);
  EXPECT_TRUE(pinger.PingIfDue());
  pinger.PlannerPassed(t + seconds(1));
  EXPECT_FALSE(pinger.PingIfDue());
  pinger.PlannerPassed(t + seconds(29));
  EXPECT_FALSE(pinger.PingIfDue());
  pinger.PlannerPassed(t + seconds(30));
  EXPECT_TRUE(pinger.PingIfDue());
  EXPECT_FALSE(pinger.PingIfDue());  // no new pass
  EXPECT_EQ(got, (std::vector<std::string>{"https://hc.test/ping/uuid", "https://hc.test/ping/uuid"}));
  EXPECT_EQ(pinger.pings_ok(), 2);
}

}  // namespace
}  // namespace cronledger::engine
