// Alerts and the dead man's switch against a real `cronledger serve` and a
// real local HTTP receiver (docs/alerts.md): a job whose run fails sends
// exactly one firing notice — as JSON to its webhook and on the stdin of
// its alert command, or as a Slack message — a restarted serve does not
// send it again, and after `cronledger retry` lets the run succeed, exactly
// one resolved notice follows. [server] heartbeat_url is pinged, and
// /healthz reports the age of the last planner pass. Secrets in the URLs'
// paths never reach serve's log.
//
// The jobs fire once, a few seconds after the test starts (a six-field
// schedule at that second), and their step fails (exit 64, permanent) until
// the test creates a file. Two nodes on one ledger page once.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/subprocess.h"
#include "common/serve_fixture.h"
#include "common/temp_dir.h"
#include "cronledger/clock.h"

namespace cronledger {
namespace {

using nlohmann::json;
using testing::Cronledger;
using testing::ReadFile;
using testing::ServeProcess;
using testing::TempDir;
using testing::WaitFor;

// Polls for up to a minute (the alerter looks every 10 s).
constexpr int kMinute = 1200;

// A local webhook receiver and heartbeat monitor: records every request.
class Receiver {
 public:
  struct Request {
    std::string method;
    std::string path;
    std::string body;
  };

  Receiver() {
    const auto record = [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      requests_.push_back({req.method, req.path, req.body});
      res.set_content("ok", "text/plain");
    };
    server_.Get(".*", record);
    server_.Post(".*", record);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) usleep(1000);
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

  std::vector<Request> To(const std::string& path) {
    std::lock_guard lock(mu_);
    std::vector<Request> out;
    for (const auto& r : requests_) {
      if (r.path == path) out.push_back(r);
    }
    return out;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Request> requests_;
};

class AlertsServe : public ::testing::Test {
 protected:
  void SetUp() override {
    // The one instant the jobs fire: a few seconds from now, as a
    // six-field schedule (second minute hour day month *) in UTC.
    const auto fire = std::chrono::floor<std::chrono::seconds>(RealClock().Now()) +
                      std::chrono::seconds(8);
    const auto day = std::chrono::floor<std::chrono::days>(fire);
    const std::chrono::year_month_day ymd{day};
    const std::chrono::hh_mm_ss hms{fire - day};
    schedule_ = fmt::format("{} {} {} {} {} *", hms.seconds().count(), hms.minutes().count(),
                            hms.hours().count(), static_cast<unsigned>(ymd.day()),
                            static_cast<unsigned>(ymd.month()));
    business_date_ = fmt::format("{:04}-{:02}-{:02}", static_cast<int>(ymd.year()),
                                 static_cast<unsigned>(ymd.month()),
                                 static_cast<unsigned>(ymd.day()));
    Script("step.sh", "#!/bin/sh\ntest -f \"$(dirname \"$0\")/fixed\" || exit 64\n");
    // The alert command appends each notice, one per line.
    Script("page.sh", "#!/bin/sh\ncat >> \"$1\"\necho >> \"$1\"\n");
    const std::string hooks = fmt::format("http://127.0.0.1:{}", receiver_.port());
    config_ = dir_.Write("cronledger.toml",
                         fmt::format(R"([server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"
heartbeat_url = "{hooks}/ping/HEARTBEAT-SECRET"
public_url = "https://cron.example.com/"

[[job]]
name = "report"
schedule = "{schedule}"
timezone = "UTC"
alert = {{ webhook = "{hooks}/hooks/WEBHOOK-SECRET", command = ["./page.sh", "{pages}"], group_window = "5s" }}

  [[job.step]]
  name = "generate"
  command = ["./step.sh"]

[[job]]
name = "billing"
schedule = "{schedule}"
timezone = "UTC"
alert = {{ webhook = "{hooks}/slack/SLACK-SECRET", format = "slack", group_window = "2s" }}

  [[job.step]]
  name = "charge"
  command = ["./step.sh"]
)",
                                     fmt::arg("hooks", hooks), fmt::arg("schedule", schedule_),
                                     fmt::arg("pages", dir_.File("pages.jsonl"))));
  }

  void Script(const std::string& name, const std::string& text) {
    chmod(dir_.Write(name, text).c_str(), 0755);
  }

  // Each start logs to a file of its own (serve.1.log, serve.2.log, ...).
  std::unique_ptr<ServeProcess> Start() {
    log_ = dir_.File(fmt::format("serve.{}.log", ++starts_));
    auto serve = std::make_unique<ServeProcess>(config_, log_);
    port_ = testing::WaitUntilListening(*serve);
    return serve;
  }
  std::string Logs() {
    std::string all;
    for (int i = 1; i <= starts_; ++i) all += ReadFile(dir_.File(fmt::format("serve.{}.log", i)));
    return all;
  }

  std::vector<json> Pages() {
    std::vector<json> out;
    std::ifstream in(dir_.File("pages.jsonl"));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(json::parse(line));
    }
    return out;
  }

  Receiver receiver_;
  TempDir dir_{"cronledger-alerts"};
  std::string schedule_;
  std::string business_date_;
  std::string config_;
  int port_ = 0;
  int starts_ = 0;
  std::string log_;
};

TEST_F(AlertsServe, AFailedRunFiresOnceSurvivesARestartAndResolvesOnce) {
  auto serve = Start();
  ASSERT_GT(port_, 0);

  // /healthz: no token needed; the planner's last pass and its age.
  ASSERT_TRUE(WaitFor(
      [&] {
        httplib::Client c("127.0.0.1", port_);
        auto r = c.Get("/healthz");
        return r && r->status == 200 && !json::parse(r->body)["last_planner_pass_at"].is_null();
      },
      600));
  {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get("/healthz");
    ASSERT_TRUE(r);
    const json h = json::parse(r->body);
    EXPECT_EQ(h["status"], "ok");
    ASSERT_TRUE(h["last_planner_pass_at"].is_string()) << r->body;
    EXPECT_EQ(h["last_planner_pass_at"].get<std::string>().back(), 'Z');
    ASSERT_TRUE(h["planner_pass_age_seconds"].is_number_integer()) << r->body;
    EXPECT_GE(h["planner_pass_age_seconds"].get<int>(), 0);
    EXPECT_LE(h["planner_pass_age_seconds"].get<int>(), 5);  // passes come about every second
  }
  // The dead man's switch: pinged with a GET after planner passes.
  ASSERT_TRUE(WaitFor([&] { return !receiver_.To("/ping/HEARTBEAT-SECRET").empty(); }, 600))
      << Logs();
  EXPECT_EQ(receiver_.To("/ping/HEARTBEAT-SECRET")[0].method, "GET");

  // The run fails at the scheduled second; one firing notice per target.
  ASSERT_TRUE(WaitFor([&] { return !receiver_.To("/hooks/WEBHOOK-SECRET").empty(); }, kMinute))
      << Logs();
  ASSERT_TRUE(WaitFor([&] { return !receiver_.To("/slack/SLACK-SECRET").empty(); }, kMinute));
  ASSERT_TRUE(WaitFor([&] { return !Pages().empty(); }, kMinute));
  const json fired = json::parse(receiver_.To("/hooks/WEBHOOK-SECRET")[0].body);
  EXPECT_EQ(fired["alert"], "run_failed");
  EXPECT_EQ(fired["state"], "firing");
  EXPECT_EQ(fired["job"], "report");
  EXPECT_EQ(fired["business_date"], business_date_);
  EXPECT_EQ(fired["details"]["state"], "failed");
  // How the last attempt ended, as the ledger recorded it.
  EXPECT_EQ(fired["details"]["end_class"], "permanent") << fired;
  EXPECT_EQ(fired["details"]["exit_status"], 64) << fired;
  EXPECT_TRUE(fired["details"]["step"].is_string()) << fired;
  EXPECT_NE(fired["summary"].get<std::string>().find("(exit 64)"), std::string::npos) << fired;
  EXPECT_EQ(fired["run_key"], "report/default/" + business_date_);
  EXPECT_TRUE(fired["at"].is_string());
  ASSERT_TRUE(fired["run_id"].is_number_integer());
  // A group of one: the run's own notice, linked to its page.
  EXPECT_EQ(fired["details"]["count"], 1) << fired;
  EXPECT_EQ(fired["url"],
            fmt::format("https://cron.example.com/#/run/{}", fired["run_id"].get<int64_t>()));
  // The command got the same notice on its stdin.
  EXPECT_EQ(Pages().at(0), fired);
  // Slack's incoming-webhook shape: one readable text.
  const json slack = json::parse(receiver_.To("/slack/SLACK-SECRET")[0].body);
  ASSERT_EQ(slack.size(), 1u) << slack.dump();
  const std::string text = slack["text"];
  EXPECT_NE(text.find("FIRING"), std::string::npos) << text;
  EXPECT_NE(text.find("billing/default/" + business_date_), std::string::npos) << text;
  EXPECT_NE(text.find("\n<https://cron.example.com/#/run/"), std::string::npos) << text;
  EXPECT_NE(text.find("|Open in cronledger>"), std::string::npos) << text;

  // Restarted: it knows what it said, and says nothing again.
  serve->Signal(SIGTERM);
  ASSERT_TRUE(WaitFor([&] { return !serve->Running(); }, 600));
  // A clean stop hands its roles over at once (another node, were there
  // one, would take them at its next pass).
  EXPECT_NE(ReadFile(log_).find("roles: this node gave up the alerter role"), std::string::npos)
      << ReadFile(log_);
  EXPECT_NE(ReadFile(log_).find("roles: this node gave up the scanner role"), std::string::npos);
  serve = Start();
  ASSERT_GT(port_, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(log_).find("condition(s) still firing from before") !=
               std::string::npos;
      },
      kMinute));
  usleep(3000 * 1000);  // time for a notice, had the restarted alerter queued one

  // Fixed, and retried by the operator: the run succeeds; one resolved notice.
  dir_.Write("fixed", "");
  const int64_t run_id = fired["run_id"];
  const auto retried = Cronledger({"retry", std::to_string(run_id), "--config", config_,
                                   "--reason", "disk space freed", "--by", "oncall"});
  ASSERT_EQ(retried.exit_code, 0) << retried.out << retried.err;
  ASSERT_TRUE(WaitFor([&] { return receiver_.To("/hooks/WEBHOOK-SECRET").size() >= 2; }, kMinute))
      << Logs();
  ASSERT_TRUE(WaitFor([&] { return Pages().size() >= 2; }, kMinute));
  usleep(3000 * 1000);  // and nothing more comes
  const auto notices = receiver_.To("/hooks/WEBHOOK-SECRET");
  ASSERT_EQ(notices.size(), 2u);
  const json resolved = json::parse(notices[1].body);
  EXPECT_EQ(resolved["state"], "resolved");
  EXPECT_EQ(resolved["alert"], "run_failed");
  EXPECT_EQ(resolved["condition"], fired["condition"]);
  EXPECT_EQ(resolved["business_date"], business_date_);
  EXPECT_EQ(Pages().size(), 2u);
  EXPECT_EQ(Pages().at(1)["state"], "resolved");
  EXPECT_EQ(receiver_.To("/slack/SLACK-SECRET").size(), 1u);  // billing still fails

  // Recorded: alert_sent and alert_resolved, with the delivery's outcome.
  const auto events = Cronledger({"events", "--config", config_, "--job", "report", "--json"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  int sent = 0;
  int cleared = 0;
  const json listed = json::parse(events.out);
  for (const auto& e : listed["events"]) {
    if (e["type"] == "alert_sent") ++sent;
    if (e["type"] == "alert_resolved") ++cleared;
    if (e["type"] == "alert_sent" || e["type"] == "alert_resolved") {
      EXPECT_EQ(e["details"]["delivery"]["outcome"], "delivered") << e.dump();
    }
  }
  EXPECT_EQ(sent, 1);
  EXPECT_EQ(cleared, 1);

  // The URLs' secret paths never reached the log.
  const std::string log = Logs();
  EXPECT_EQ(log.find("SECRET"), std::string::npos) << log;
  EXPECT_NE(log.find("http://127.0.0.1:" + std::to_string(receiver_.port())), std::string::npos);
}

// Two `serve` nodes on one ledger page once: only the node holding the
// store's alerter role alerts. Killed with kill -9, it stops renewing the
// role; the other node takes over within the role's 30 s and sends the
// resolved notice, once, without repeating the firing one.
TEST_F(AlertsServe, TwoNodesOnOneLedgerPageOnceAndTheSecondTakesOverWhenTheFirstDies) {
  std::vector<std::unique_ptr<ServeProcess>> nodes;
  nodes.push_back(Start());
  nodes.push_back(Start());
  ASSERT_GT(port_, 0);
  ASSERT_TRUE(WaitFor([&] { return !receiver_.To("/hooks/WEBHOOK-SECRET").empty(); }, kMinute))
      << Logs();
  ASSERT_TRUE(WaitFor([&] { return !Pages().empty(); }, kMinute));
  // Both nodes have passed their alerter at least once more since.
  usleep(12'000 * 1000);
  EXPECT_EQ(receiver_.To("/hooks/WEBHOOK-SECRET").size(), 1u) << Logs();
  EXPECT_EQ(receiver_.To("/slack/SLACK-SECRET").size(), 1u);
  EXPECT_EQ(Pages().size(), 1u);

  const std::string alerts = "roles: this node is now the alerter for every node on the store";
  const std::string log1 = ReadFile(dir_.File("serve.1.log"));
  const std::string log2 = ReadFile(dir_.File("serve.2.log"));
  ASSERT_NE(log1.find(alerts) == std::string::npos, log2.find(alerts) == std::string::npos)
      << "exactly one node alerts:\n" << Logs();
  const std::size_t alerting = log1.find(alerts) != std::string::npos ? 0 : 1;
  nodes[alerting]->Kill9();

  dir_.Write("fixed", "");
  const int64_t run_id = json::parse(receiver_.To("/hooks/WEBHOOK-SECRET")[0].body)["run_id"];
  const auto retried = Cronledger({"retry", std::to_string(run_id), "--config", config_,
                                   "--reason", "disk space freed", "--by", "oncall"});
  ASSERT_EQ(retried.exit_code, 0) << retried.out << retried.err;
  ASSERT_TRUE(WaitFor([&] { return receiver_.To("/hooks/WEBHOOK-SECRET").size() >= 2; },
                      2 * kMinute))
      << Logs();
  usleep(3000 * 1000);  // and nothing more comes
  const auto notices = receiver_.To("/hooks/WEBHOOK-SECRET");
  ASSERT_EQ(notices.size(), 2u) << Logs();
  EXPECT_EQ(json::parse(notices[1].body)["state"], "resolved");
  EXPECT_EQ(receiver_.To("/slack/SLACK-SECRET").size(), 1u) << "billing's page is not repeated";
  const std::string survivor = ReadFile(dir_.File(fmt::format("serve.{}.log", 2 - alerting)));
  EXPECT_NE(survivor.find(alerts), std::string::npos) << survivor;
}

}  // namespace
}  // namespace cronledger
