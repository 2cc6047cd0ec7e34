// GET /metrics against a real `cronledger serve` on a real SQLite ledger:
// the series an operator alerts on carry the seeded ledger's values, the
// endpoint needs a token unless [server] metrics_public = true, and
// Prometheus's own `promtool check metrics` accepts the scrape.
//
// The ledger is planned by the real planner on a fake clock, on leap days
// only (schedule "0 9 29 2 *", 2000..2024), then put in end states with SQL
// before serve starts; the job is `external`, so serve (on the real clock)
// never claims anything and the ledger-derived series are the seed's.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "cli/subprocess.h"
#include "common/raw_socket.h"
#include "common/serve_fixture.h"
#include "common/temp_dir.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/planner.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using testing::ServeFixture;
using testing::WaitFor;

constexpr const char* kReadSecret = "metrics-read-secret-0123456789";
constexpr const char* kWorkerSecret = "metrics-worker-secret-0123456789";

Clock::TimePoint At(const std::string& rfc3339) {
  return Clock::TimePoint{ParseRfc3339(rfc3339)->time_since_epoch()};
}

// The horizon reaches back past 2000, so every leap day is in it.
std::string ConfigText(const std::string& server_extra, const std::string& rest) {
  return R"([server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"
)" + server_extra +
         R"(
[[job]]
name = "report"
schedule = "0 9 29 2 *"
timezone = "UTC"
partitions = ["acme", "globex", "initech", "hooli", "umbrella"]
executor = "external"
backfill = { horizon = "10000d" }

  [[job.step]]
  name = "generate"
)" + rest;
}

constexpr const char* kTokens = R"(
[[auth.token]]
name = "prometheus"
role = "read"
secret_env = "CL_METRICS_READ"

[[auth.token]]
name = "w1"
role = "worker"
secret_env = "CL_METRICS_WORKER"
)";

struct Scrape {
  int status = 0;
  std::string content_type;
  std::string body;
};

Scrape Request(int port, const std::string& method, const std::string& token) {
  httplib::Client client("127.0.0.1", port);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto r = method == "POST" ? client.Post("/metrics", headers, "", "text/plain")
                            : client.Get("/metrics", headers);
  Scrape s;
  if (!r) {
    ADD_FAILURE() << method << " /metrics: " << httplib::to_string(r.error());
    return s;
  }
  s.status = r->status;
  s.content_type = r->get_header_value("Content-Type");
  s.body = r->body;
  return s;
}

// The status line's code of `request` sent as it is, as curl sends
// `-X POST` without `-d`: no Content-Length, no body.
int RawStatus(int port, const std::string& request) {
  testing::RawSocket s(port);
  return s.connected() && s.Send(request) ? testing::StatusOf(s.ReadUntilClosed()) : 0;
}

// "name{labels}" -> value, for every sample line.
std::map<std::string, std::string> Samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

void Sql(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << message;
}

// One ended attempt of the 2024-02-29 run of `partition`; times in ms
// after 2024-02-29T09:00:00Z.
std::string Attempt(const std::string& partition, int number, int token, int64_t start_ms,
                    int64_t end_ms, const std::string& end_class) {
  constexpr int64_t kBase = 1709197200000;  // 2024-02-29T09:00:00Z
  return "INSERT INTO attempts (run_id, number, fencing_token, node, started_at, ended_at, "
         "end_class, step) SELECT id, " +
         std::to_string(number) + ", " + std::to_string(token) + ", 'node-a', " +
         std::to_string(kBase + start_ms) + ", " + std::to_string(kBase + end_ms) + ", '" +
         end_class + "', 'generate' FROM runs WHERE partition = '" + partition +
         "' AND business_date = '2024-02-29';";
}

std::string Event(const std::string& type, const std::string& actor) {
  return "INSERT INTO events (at, type, job, actor, reason) VALUES (1709197400000, '" + type +
         "', 'report', '" + actor + "', 'test');";
}

class MetricsServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new ServeFixture("cronledger-metrics");
    config_ = serve_->WriteConfig(ConfigText("", kTokens));
    dir_ = &serve_->dir();
    Seed();
    setenv("CL_METRICS_READ", kReadSecret, 1);
    setenv("CL_METRICS_WORKER", kWorkerSecret, 1);
    if (serve_->Start()) port_ = serve_->port();
  }
  static void TearDownTestSuite() { delete serve_; }
  void SetUp() override { ASSERT_GT(port_, 0); }

  // Before 2024 every key succeeded but umbrella's of 2020 (coalesced,
  // waived). Of 2024-02-29: acme succeeded at its second attempt (the
  // first retryable, 2 s; the second 30 s), globex failed (permanent,
  // 0.5 s), initech is unknown (in doubt, 100 s), hooli misfired and
  // umbrella was never planned. Events: a retry and a rerun by operators,
  // a backfill by the gap scanner (automatic: not a manual recovery).
  static void Seed() {
    auto loaded = config::LoadConfig(config_);
    ASSERT_TRUE(std::holds_alternative<config::Config>(loaded));
    const config::Config config = std::get<config::Config>(loaded);
    {
      store::SqliteOptions o;
      o.path = dir_->File("ledger.db");
      o.synchronous_full = false;
      auto opened = store::SqliteStore::Open(o);
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      FakeClock clock(At("2000-02-28T00:00:00Z"));
      engine::Planner planner(config, **opened, clock);
      ASSERT_TRUE(planner.PlanOnce(At("2000-02-28T00:00:00Z")).ok());
      for (const char* day : {"2000", "2004", "2008", "2012", "2016", "2020", "2024"}) {
        ASSERT_TRUE(planner.PlanOnce(At(std::string(day) + "-02-29T08:59:30Z")).ok()) << day;
      }
    }
    const std::string db = dir_->File("ledger.db");
    Sql(db, "UPDATE runs SET state = 'succeeded', attempts = 1 WHERE business_date < '2024'");
    Sql(db,
        "UPDATE runs SET state = 'skipped', reason = 'coalesced' WHERE partition = "
        "'umbrella' AND business_date = '2020-02-29'");
    Sql(db,
        "UPDATE runs SET state = 'skipped', reason = 'misfired' WHERE partition = 'hooli' "
        "AND business_date = '2024-02-29'");
    Sql(db, "DELETE FROM runs WHERE partition = 'umbrella' AND business_date = '2024-02-29'");
    Sql(db,
        "UPDATE runs SET state = 'succeeded', attempts = 2, finished_at = 1709197290000 "
        "WHERE partition = 'acme' AND business_date = '2024-02-29'");
    Sql(db,
        "UPDATE runs SET state = 'failed', attempts = 1, finished_at = 1709197202500 "
        "WHERE partition = 'globex' AND business_date = '2024-02-29'");
    Sql(db,
        "UPDATE runs SET state = 'unknown', attempts = 1 WHERE partition = 'initech' AND "
        "business_date = '2024-02-29'");
    Sql(db, Attempt("acme", 1, 900001, 2000, 4000, "retryable") +
                Attempt("acme", 2, 900002, 60000, 90000, "succeeded") +
                Attempt("globex", 1, 900003, 2000, 2500, "permanent") +
                Attempt("initech", 1, 900004, 2000, 102000, "in_doubt"));
    Sql(db, Event("retry", "alice") + Event("rerun", "bob") + Event("backfill", "scanner"));
  }

  static inline ServeFixture* serve_ = nullptr;
  static inline const testing::TempDir* dir_ = nullptr;  // serve_'s
  static inline std::string config_;
  static inline int port_ = 0;
};

TEST_F(MetricsServe, ScrapeCarriesTheLedgersValues) {
  const Scrape scrape = Request(port_, "GET", kReadSecret);
  ASSERT_EQ(scrape.status, 200) << scrape.body;
  EXPECT_EQ(scrape.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const auto s = Samples(scrape.body);
  const auto value = [&](const std::string& series) {
    auto it = s.find(series);
    EXPECT_NE(it, s.end()) << "no series " << series << " in:\n" << scrape.body;
    return it == s.end() ? std::string("absent") : it->second;
  };
  // 6 dates x 5 partitions before 2024, less umbrella's coalesced 2020, and acme's 2024.
  EXPECT_EQ(value("cronledger_runs{job=\"report\",state=\"succeeded\"}"), "30");
  EXPECT_EQ(value("cronledger_runs{job=\"report\",state=\"failed\"}"), "1");
  EXPECT_EQ(value("cronledger_runs{job=\"report\",state=\"unknown\"}"), "1");
  EXPECT_EQ(value("cronledger_runs{job=\"report\",state=\"running\"}"), "0");
  EXPECT_EQ(value("cronledger_dead_letters{job=\"report\"}"), "1");
  EXPECT_EQ(value("cronledger_unknown_runs{job=\"report\"}"), "1");
  EXPECT_EQ(value("cronledger_last_success_timestamp_seconds{job=\"report\"}"),
            "1709197290");  // 2024-02-29T09:01:30Z
  EXPECT_EQ(value("cronledger_last_success_business_date_info{job=\"report\","
                  "business_date=\"2024-02-29\"}"),
            "1");
  // hooli's misfired key and umbrella's never planned one (whether or not
  // serve's gap scanner has put it in awaiting_approval yet).
  EXPECT_EQ(value("cronledger_missing_runs{job=\"report\"}"), "2");
  // The oldest open key is hooli's of 2024-02-29T09:00:00Z: over 2.5 years ago.
  EXPECT_GT(std::stoll(value("cronledger_lag_seconds{job=\"report\"}")), 80'000'000);
  EXPECT_EQ(value("cronledger_attempts_total{job=\"report\",class=\"succeeded\"}"), "1");
  EXPECT_EQ(value("cronledger_attempts_total{job=\"report\",class=\"retryable\"}"), "1");
  EXPECT_EQ(value("cronledger_attempts_total{job=\"report\",class=\"permanent\"}"), "1");
  EXPECT_EQ(value("cronledger_attempts_total{job=\"report\",class=\"in_doubt\"}"), "1");
  EXPECT_EQ(value("cronledger_attempts_total{job=\"report\",class=\"timeout\"}"), "0");
  EXPECT_EQ(value("cronledger_retry_successes_total{job=\"report\"}"), "1");
  EXPECT_EQ(value("cronledger_manual_recoveries_total{job=\"report\",action=\"retry\"}"), "1");
  EXPECT_EQ(value("cronledger_manual_recoveries_total{job=\"report\",action=\"rerun\"}"), "1");
  EXPECT_EQ(value("cronledger_manual_recoveries_total{job=\"report\",action=\"backfill\"}"), "0");
  // Durations 0.5 s, 2 s, 30 s and 100 s.
  EXPECT_EQ(value("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"1\"}"), "1");
  EXPECT_EQ(value("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"5\"}"), "2");
  EXPECT_EQ(value("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"15\"}"), "2");
  EXPECT_EQ(value("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"30\"}"), "3");
  EXPECT_EQ(value("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"60\"}"), "3");
  EXPECT_EQ(value("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"120\"}"), "4");
  EXPECT_EQ(value("cronledger_run_duration_seconds_bucket{job=\"report\",le=\"+Inf\"}"), "4");
  EXPECT_EQ(value("cronledger_run_duration_seconds_sum{job=\"report\"}"), "132.5");
  EXPECT_EQ(value("cronledger_run_duration_seconds_count{job=\"report\"}"), "4");
  // The node: an external job is never claimed here.
  EXPECT_EQ(value("cronledger_claims_total{result=\"claimed\"}"), "0");
  EXPECT_EQ(value("cronledger_executor_busy"), "0");
  EXPECT_EQ(value("cronledger_executor_capacity"), "8");
  EXPECT_EQ(value("cronledger_stale_writes_rejected_total"), "0");
}

TEST_F(MetricsServe, ThePlannersPassesAreStamped) {
  // serve's first pass comes right after it starts listening.
  std::string stamp;
  ASSERT_TRUE(WaitFor(
      [&] {
        const Scrape scrape = Request(port_, "GET", kReadSecret);
        const auto s = Samples(scrape.body);
        auto it = s.find("cronledger_planner_last_pass_timestamp_seconds");
        if (it != s.end()) stamp = it->second;
        return scrape.status != 200 || !stamp.empty();
      },
      600));
  ASSERT_FALSE(stamp.empty());
  // After 2026-01-01T00:00:00Z: the real clock of serve, not a seeded time.
  EXPECT_GT(std::stod(stamp), 1767225600.0);
}

TEST_F(MetricsServe, ATokenOfRoleReadOrOperateIsNeeded) {
  const Scrape none = Request(port_, "GET", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.body.find("\"unauthenticated\""), std::string::npos) << none.body;
  EXPECT_EQ(none.body.find("cronledger_runs"), std::string::npos);
  EXPECT_EQ(Request(port_, "GET", "not-a-token").status, 401);
  const Scrape worker = Request(port_, "GET", kWorkerSecret);
  EXPECT_EQ(worker.status, 403);
  EXPECT_NE(worker.body.find("\"forbidden\""), std::string::npos) << worker.body;
  EXPECT_EQ(Request(port_, "POST", kReadSecret).status, 405);
}

// A POST without a body (no Content-Length) is routed like one with an
// empty body: the endpoint's answer, not httplib's bare 400.
TEST_F(MetricsServe, APostWithoutABodyGetsTheEndpointsAnswer) {
  const std::string head = fmt::format(
      "Host: 127.0.0.1\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n", kReadSecret);
  EXPECT_EQ(RawStatus(port_, "POST /metrics HTTP/1.1\r\n" + head), 405);
  EXPECT_EQ(RawStatus(port_, "POST /healthz HTTP/1.1\r\n" + head), 405);
  EXPECT_EQ(RawStatus(port_, "POST /v1/nope HTTP/1.1\r\n" + head), 404);
  // And a GET still is a GET; HEAD /healthz is one too, OPTIONS is a
  // method the path does not take.
  EXPECT_EQ(RawStatus(port_, "GET /metrics HTTP/1.1\r\n" + head), 200);
  EXPECT_EQ(RawStatus(port_, "HEAD /healthz HTTP/1.1\r\n" + head), 200);
  EXPECT_EQ(RawStatus(port_, "OPTIONS /healthz HTTP/1.1\r\n" + head), 405);
  EXPECT_EQ(RawStatus(port_, "OPTIONS /metrics HTTP/1.1\r\n" + head), 405);
}

TEST_F(MetricsServe, PromtoolAcceptsTheScrape) {
  const std::string promtool = "/usr/bin/promtool";
  if (access(promtool.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; "
                    "scripts/install-deps.sh installs it for CI)";
  }
  const Scrape scrape = Request(port_, "GET", kReadSecret);
  ASSERT_EQ(scrape.status, 200);
  const std::string file = dir_->Write("scrape.txt", scrape.body);
  // promtool reads the scrape on stdin.
  const auto r =
      testing::RunProcess({"/bin/sh", "-c", promtool + " check metrics < '" + file + "'"});
  EXPECT_EQ(r.exit_code, 0) << "promtool check metrics:\n"
                            << r.out << r.err << "\nscrape:\n"
                            << scrape.body;
  EXPECT_EQ(r.out + r.err, "") << "promtool's lint found problems";
}

// Without [[auth.token]] (serve keeps its own operator token), a public
// /metrics answers anyone.
TEST(MetricsPublic, AnswersWithoutAToken) {
  ServeFixture serve("cronledger-metrics-public");
  serve.WriteConfig(ConfigText("metrics_public = true\n", ""));
  ASSERT_TRUE(serve.Start());
  const int port = serve.port();
  const Scrape scrape = Request(port, "GET", "");
  EXPECT_EQ(scrape.status, 200) << scrape.body;
  EXPECT_NE(scrape.body.find("cronledger_runs{job=\"report\",state=\"succeeded\"} 0\n"),
            std::string::npos)
      << scrape.body;
  // The operator routes still need the token.
  httplib::Client client("127.0.0.1", port);
  auto jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 401);
  EXPECT_EQ(serve.Stop(), 0) << serve.Log();
}

}  // namespace
}  // namespace cronledger
