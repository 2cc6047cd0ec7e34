// The read-only operator API and its authentication, against a real
// `cronledger serve` subprocess on a real SQLite ledger, called with
// cpp-httplib's client.
//
// The ledger is planned in this process by the real planner on a fake
// clock, on leap days only (schedule "0 9 29 2 *", 2000..2024), and every
// run is put in an end state before serve starts, so serve (which runs on
// the real clock) has nothing to plan, release or claim: its answers are
// the seeded ledger's. Each answer is also compared with the command
// line's --json output: one JSON shape for both.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "cli/subprocess.h"
#include "common/serve_fixture.h"
#include "common/temp_dir.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "engine/planner.h"
#include "ledger/names.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using Json = nlohmann::ordered_json;
using testing::Cronledger;
using testing::ReadFile;
using testing::ServeFixture;
using testing::TempDir;
using testing::WaitFor;

constexpr const char* kReadSecret = "read-secret-0123456789abcdef";
constexpr const char* kOperateSecret = "operate-secret-0123456789abcdef";
constexpr const char* kWorkerSecret = "worker-secret-0123456789abcdef";

const std::vector<std::string> kPartitions = {"acme", "globex", "initech", "hooli", "umbrella"};
const std::vector<std::string> kLeapDays = {"2000-02-29", "2004-02-29", "2008-02-29", "2012-02-29",
                                            "2016-02-29", "2020-02-29", "2024-02-29"};

Clock::TimePoint At(const std::string& rfc3339) {
  return Clock::TimePoint{ParseRfc3339(rfc3339)->time_since_epoch()};
}
store::Instant Ms(const std::string& rfc3339) { return store::ToInstant(At(rfc3339)); }

// [server] with `listen`, then the report job, then `extra`.
std::string ConfigText(const std::string& listen, const std::string& extra) {
  return R"([server]
store = "sqlite:ledger.db"
retention = "36500d"  # the seeded ledger goes back to 2000
listen = ")" +
         listen + R"("

# Leap days only; the external executor: serve never claims its runs.
[[job]]
name = "report"
schedule = "0 9 29 2 *"
timezone = "UTC"
partitions = ["acme", "globex", "initech", "hooli", "umbrella"]
executor = "external"
backfill = { horizon = "1d" }

  [[job.step]]
  name = "generate"

  [[job.step]]
  name = "deliver"
)" + extra;
}

constexpr const char* kTokens = R"(
[[auth.token]]
name = "dash"
role = "read"
secret_env = "CL_TEST_READ"

[[auth.token]]
name = "oncall"
role = "operate"
secret_env = "CL_TEST_OPERATE"

[[auth.token]]
name = "w1"
role = "worker"
secret_env = "CL_TEST_WORKER"
)";

struct Answer {
  int status = 0;
  Json body;
  std::string text;
};

Answer Get(int port, const std::string& path, const std::string& token,
           const std::string& header = "") {
  httplib::Client client("127.0.0.1", port);
  httplib::Headers headers;
  if (!header.empty()) {
    headers.emplace("Authorization", header);
  } else if (!token.empty()) {
    headers.emplace("Authorization", "Bearer " + token);
  }
  auto r = client.Get(path, headers);
  Answer a;
  if (!r) {
    ADD_FAILURE() << "GET " << path << ": " << httplib::to_string(r.error());
    return a;
  }
  a.status = r->status;
  a.text = r->body;
  a.body = Json::parse(r->body, nullptr, false);
  return a;
}

// Where the seeding planner left the watermark (the last leap day's pass).
constexpr const char* kSeededThrough = "2024-02-29T09:00:30Z";

// A document without the jobs' `planned_through`, which serve's planner
// may move between two reads.
Json Stable(Json doc) {
  if (doc.contains("jobs")) {
    for (auto& j : doc["jobs"]) j.erase("planned_through");
  }
  // serve beats every 5 s: when a node was last seen moves between reads.
  if (doc.contains("nodes")) {
    for (auto& n : doc["nodes"]) {
      n.erase("last_seen_at");
      n.erase("alive");
    }
  }
  if (doc.is_object()) doc.erase("planned_through");
  return doc;
}

void SqlOn(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
}

// Plans every leap day as serve would have, on a fake clock. The keys
// before 2024 succeeded (umbrella's of 2020 coalesced, waived); of
// 2024-02-29, hooli's was misfired and umbrella's never planned, and one
// attempt each, through the store, made acme's succeed (an effect
// committed), globex's fail (exit 65, permanent) and initech's fail
// (exit 1, retries exhausted).
void SeedLedger(const std::string& config_path, const std::string& db) {
  auto loaded = config::LoadConfig(config_path);
  ASSERT_TRUE(std::holds_alternative<config::Config>(loaded));
  const config::Config config = std::get<config::Config>(loaded);
  store::SqliteOptions o;
  o.path = db;
  o.synchronous_full = false;
  auto opened = store::SqliteStore::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store::Store& store = **opened;
  FakeClock clock(At("2000-02-28T00:00:00Z"));
  engine::Planner planner(config, store, clock);
  ASSERT_TRUE(planner.PlanOnce(At("2000-02-28T00:00:00Z")).ok());
  for (const auto& day : kLeapDays) {
    ASSERT_TRUE(planner.PlanOnce(At(day + "T08:59:30Z")).ok()) << day;
  }
  SqlOn(db, "UPDATE runs SET state = 'succeeded', attempts = 1 WHERE business_date < '2024-01-01'");
  SqlOn(db,
        "UPDATE runs SET state = 'skipped', reason = 'coalesced', attempts = 0 WHERE partition = "
        "'umbrella' AND business_date = '2020-02-29'");
  SqlOn(db,
        "UPDATE runs SET state = 'skipped', reason = 'misfired' WHERE partition = 'hooli' AND "
        "business_date = '2024-02-29'");
  SqlOn(db, "DELETE FROM runs WHERE partition = 'umbrella' AND business_date = '2024-02-29'");

  store::ReleaseParams release;
  release.job = "report";
  release.now = Ms("2024-02-29T09:00:01Z");
  ASSERT_TRUE(store.RunRelease(release).ok());
  store::ClaimRule rule;
  rule.job = "report";
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"generate", "deliver"};
  auto claimed = store.RunClaim({Ms("2024-02-29T09:00:02Z"), "node-a", 100, {rule}});
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_EQ(claimed->size(), 3u);
  for (const auto& c : *claimed) {
    store::FinishParams f;
    f.run_id = c.run.id;
    f.token = c.token;
    f.node = "node-a";
    f.now = Ms("2024-02-29T09:00:05Z");
    if (c.run.partition == "acme") {
      auto begun = store.EffectBegin(
          {c.run.id, c.token, "mail-2024-02-29", "", Ms("2024-02-29T09:00:03Z"), "node-a", ""});
      ASSERT_TRUE(begun.ok()) << begun.status().ToString();
      store::EffectCommitParams commit;
      commit.run_id = c.run.id;
      commit.token = c.token;
      commit.key = "mail-2024-02-29";
      commit.exit_status = 0;
      commit.result = "message-id 42\n";
      commit.now = Ms("2024-02-29T09:00:04Z");
      commit.node = "node-a";
      ASSERT_TRUE(store.EffectCommit(commit).ok());
      f.exit_status = 0;
      f.step = "deliver";
      f.output_tail = "delivered\n";
      f.decision.state = ledger::RunState::kSucceeded;
    } else if (c.run.partition == "globex") {
      f.end_class = ledger::EndClass::kPermanent;
      f.exit_status = 65;
      f.step = "generate";
      f.output_tail = "bad input\n";
      f.decision.state = ledger::RunState::kFailed;
      f.decision.reason = "exit 65: permanent";
    } else {
      f.end_class = ledger::EndClass::kRetryable;
      f.exit_status = 1;
      f.step = "generate";
      f.decision.state = ledger::RunState::kFailed;
      f.decision.reason = "retries exhausted";
    }
    auto finished = store.RunFinishAttempts({f});
    ASSERT_TRUE(finished.ok() && finished->at(0).ok()) << c.run.partition;
  }
}

// ---- the shared ledger and serve, with the three tokens ----------------------------------------

class OperatorApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new ServeFixture("cronledger-operator-api");
    dir_ = &serve_->dir();
    config_ = serve_->WriteConfig(ConfigText("127.0.0.1:0", kTokens));
    Seed();
    setenv("CL_TEST_READ", kReadSecret, 1);
    setenv("CL_TEST_OPERATE", kOperateSecret, 1);
    setenv("CL_TEST_WORKER", kWorkerSecret, 1);
    if (serve_->Start()) port_ = serve_->port();
    // serve's first planner pass moves the watermark (nothing is due before
    // 2028): wait for it, so that it does not move under a test.
    const bool planned =
        port_ > 0 && WaitFor(
                         [] {
                           const Answer a = Read("/v1/jobs/report");
                           return a.status != 200 || a.body["planned_through"] != kSeededThrough;
                         },
                         600);
    if (!planned)
      ADD_FAILURE() << "serve never planned; its log:\n" << ReadFile(dir_->File("serve.log"));
  }
  static void TearDownTestSuite() { delete serve_; }
  void SetUp() override { ASSERT_GT(port_, 0); }

  static void Seed() { SeedLedger(config_, dir_->File("ledger.db")); }
  static void Sql(const std::string& sql) { SqlOn(dir_->File("ledger.db"), sql); }

  // The command line's --json answer to `args`.
  static Json Cli(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--config", config_});
    args.push_back("--json");
    auto r = Cronledger(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return Json::parse(r.out, nullptr, false);
  }

  static Answer Read(const std::string& path) { return Get(port_, path, kReadSecret); }

  static int64_t RunId(const std::string& partition, const std::string& date) {
    const Answer a = Read("/v1/runs?partition=" + partition + "&date=" + date);
    EXPECT_EQ(a.status, 200) << a.text;
    EXPECT_EQ(a.body["runs"].size(), 1u) << a.text;
    return a.body["runs"].empty() ? 0 : a.body["runs"][0]["id"].get<int64_t>();
  }

  static inline ServeFixture* serve_ = nullptr;
  static inline const TempDir* dir_ = nullptr;  // serve_'s
  static inline std::string config_;
  static inline int port_ = 0;
};

// Every read route, as an operator calls it.
std::vector<std::string> ReadRoutes(int64_t run_id) {
  return {"/v1/jobs",
          "/v1/jobs/report",
          "/v1/runs",
          "/v1/runs/" + std::to_string(run_id),
          "/v1/events",
          "/v1/gaps?from=2024-02-01&to=2024-03-01",
          "/v1/verify?job=report&date=2024-02-29"};
}

TEST_F(OperatorApi, ReadAndOperateTokensReadEveryRouteAndOthersAreRefused) {
  const int64_t id = RunId("acme", "2024-02-29");
  for (const auto& path : ReadRoutes(id)) {
    SCOPED_TRACE(path);
    const Answer read = Get(port_, path, kReadSecret);
    EXPECT_EQ(read.status, 200) << read.text;
    const Answer operate = Get(port_, path, kOperateSecret);
    EXPECT_EQ(operate.status, 200) << operate.text;
    EXPECT_EQ(Stable(operate.body), Stable(read.body));

    const Answer worker = Get(port_, path, kWorkerSecret);
    EXPECT_EQ(worker.status, 403);
    EXPECT_EQ(worker.body["error"], "forbidden");
    EXPECT_NE(worker.body["message"].get<std::string>().find("token \"w1\" has role worker; GET " +
                                                             path.substr(0, path.find('?')) +
                                                             " needs role read or operate"),
              std::string::npos)
        << worker.text;

    const Answer none = Get(port_, path, "");
    EXPECT_EQ(none.status, 401);
    EXPECT_EQ(none.body["error"], "unauthenticated");
    const Answer wrong = Get(port_, path, "read-secret-0123456789abcdeX");
    EXPECT_EQ(wrong.status, 401);
    EXPECT_EQ(wrong.body["message"], "the token is not valid here");
    const Answer prefix = Get(port_, path, "read-secret");
    EXPECT_EQ(prefix.status, 401);
    const Answer basic = Get(port_, path, "", std::string("Basic ") + kReadSecret);
    EXPECT_EQ(basic.status, 401);
    EXPECT_EQ(basic.body["message"], "the Authorization header is not \"Bearer TOKEN\"");
    // The scheme in any case (RFC 7235).
    EXPECT_EQ(Get(port_, path, "", std::string("bearer ") + kReadSecret).status, 200);
  }
  // Health needs no token; the step endpoints keep their own credentials.
  const Answer health = Get(port_, "/healthz", "");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body["status"], "ok");
  const Answer checkpoints = Get(port_, "/v1/checkpoints", kOperateSecret);
  EXPECT_EQ(checkpoints.status, 401) << checkpoints.text;
  // Not a route of this release, whatever the token.
  EXPECT_EQ(Get(port_, "/v1/nowhere", kReadSecret).status, 404);
  // No secret ever reaches serve's log.
  const std::string log = ReadFile(dir_->File("serve.log"));
  for (const char* secret : {kReadSecret, kOperateSecret, kWorkerSecret}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << log;
  }
  EXPECT_NE(log.find("serve: API tokens: dash (read), oncall (operate), w1 (worker)"),
            std::string::npos)
      << log;
}

TEST_F(OperatorApi, OtherMethodsOnReadRoutesAre405AfterAuthentication) {
  httplib::Client client("127.0.0.1", port_);
  auto unauthenticated = client.Post("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(unauthenticated);
  EXPECT_EQ(unauthenticated->status, 401);
  client.set_bearer_token_auth(kOperateSecret);
  auto post = client.Post("/v1/jobs", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(Json::parse(post->body)["error"], "method_not_allowed");
  auto del = client.Delete("/v1/runs/1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
}

TEST_F(OperatorApi, JobsAnswerTheStatusShapeOfTheCommandLine) {
  const Answer jobs = Read("/v1/jobs");
  ASSERT_EQ(jobs.status, 200) << jobs.text;
  EXPECT_EQ(Stable(jobs.body), Stable(Cli({"status"})));
  ASSERT_EQ(jobs.body["jobs"].size(), 1u);
  const Json& job = jobs.body["jobs"][0];
  std::vector<std::string> fields;
  for (const auto& [field, _] : job.items()) fields.push_back(field);
  const std::vector<std::string> contract = {"name",
                                             "state",
                                             "last_success_at",
                                             "last_success_business_date",
                                             "business_date",
                                             "expected",
                                             "succeeded",
                                             "failed",
                                             "unknown",
                                             "waived",
                                             "in_progress",
                                             "missing",
                                             "lag_seconds",
                                             "next_at",
                                             "steps"};
  ASSERT_GE(fields.size(), contract.size());
  EXPECT_EQ(std::vector<std::string>(fields.begin(), fields.begin() + 15), contract);
  EXPECT_EQ(job["name"], "report");
  EXPECT_EQ(job["state"], "active");
  EXPECT_EQ(job["last_success_business_date"], "2024-02-29");

  const Answer one = Read("/v1/jobs/report");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(Stable(one.body), Stable(job));

  const Answer missing = Read("/v1/jobs/nightly");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, (Json{{"error", "not_found"}, {"message", "no job named \"nightly\""}}));
}

TEST_F(OperatorApi, RunPagesWalkEveryRunNewestFirstWithoutDuplicatesOrGaps) {
  // Every run, as the command line lists them (newest first).
  std::vector<int64_t> all;
  const Json listed = Cli({"runs", "--limit", "1000"});  // kept: the loop ranges over a part
  for (const auto& r : listed["runs"]) all.push_back(r["id"]);
  ASSERT_EQ(all.size(), kPartitions.size() * kLeapDays.size() - 1);  // one never planned

  for (const std::string filter : {"", "&partition=acme", "&state=succeeded"}) {
    SCOPED_TRACE(filter);
    std::vector<int64_t> walked;
    std::string cursor;
    int pages = 0;
    std::set<std::string> cursors;
    while (true) {
      const std::string path =
          "/v1/runs?limit=4" + filter + (cursor.empty() ? "" : "&cursor=" + cursor);
      const Answer page = Read(path);
      ASSERT_EQ(page.status, 200) << path << ": " << page.text;
      ++pages;
      ASSERT_LE(page.body["runs"].size(), 4u);
      for (const auto& r : page.body["runs"]) walked.push_back(r["id"]);
      if (page.body["next_cursor"].is_null()) break;
      cursor = page.body["next_cursor"].get<std::string>();
      EXPECT_TRUE(cursors.insert(cursor).second) << "a cursor came twice: " << cursor;
      ASSERT_LT(pages, 100);
    }
    std::vector<int64_t> expected;
    std::vector<std::string> args = {"runs", "--limit", "1000"};
    if (!filter.empty()) {
      const std::string name = filter.substr(1, filter.find('=') - 1);
      args.push_back("--" + name);
      args.push_back(filter.substr(filter.find('=') + 1));
    }
    const Json filtered = Cli(args);
    for (const auto& r : filtered["runs"]) expected.push_back(r["id"]);
    EXPECT_EQ(walked, expected);
    EXPECT_TRUE(std::is_sorted(walked.rbegin(), walked.rend()));
    EXPECT_EQ(pages, static_cast<int>((expected.size() + 3) / 4));
  }

  // A full page that is the last one says so: no empty page follows.
  const Answer exact = Read("/v1/runs?partition=acme&limit=7");
  EXPECT_EQ(exact.body["runs"].size(), 7u);
  EXPECT_TRUE(exact.body["next_cursor"].is_null()) << exact.text;
  // The default page holds them all (100), and says there is no more.
  const Answer first = Read("/v1/runs");
  EXPECT_EQ(first.body["runs"].size(), all.size());
  EXPECT_TRUE(first.body["next_cursor"].is_null());
}

TEST_F(OperatorApi, RunFiltersAnswerWhatTheCommandLineLists) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"job=report", {"--job", "report"}},
      {"state=failed", {"--state", "failed"}},
      {"state=skipped", {"--state", "skipped"}},
      {"date=2024-02-29", {"--date", "2024-02-29"}},
      {"partition=hooli&date=2004-02-29", {"--partition", "hooli", "--date", "2004-02-29"}},
      {"date=2023-02-28", {"--date", "2023-02-28"}},
  };
  for (const auto& [query, args] : cases) {
    SCOPED_TRACE(query);
    const Answer a = Read("/v1/runs?" + query);
    ASSERT_EQ(a.status, 200) << a.text;
    std::vector<std::string> cli = {"runs"};
    cli.insert(cli.end(), args.begin(), args.end());
    EXPECT_EQ(a.body["runs"], Cli(cli)["runs"]);
  }
  const Answer failed = Read("/v1/runs?state=failed");
  ASSERT_EQ(failed.body["runs"].size(), 2u) << failed.text;
  for (const auto& r : failed.body["runs"]) EXPECT_EQ(r["state"], "failed");
  const Answer none = Read("/v1/runs?date=2023-02-28");
  EXPECT_EQ(none.body, (Json{{"runs", Json::array()}, {"next_cursor", nullptr}}));
}

TEST_F(OperatorApi, OneRunHasItsStepsAttemptsEffectsEventsAndLogTail) {
  const int64_t id = RunId("acme", "2024-02-29");
  const Answer a = Read("/v1/runs/" + std::to_string(id));
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body, Cli({"runs", "--run", std::to_string(id)}));
  EXPECT_EQ(a.body["run_key"], "report/acme/2024-02-29");
  EXPECT_EQ(a.body["state"], "succeeded");
  ASSERT_EQ(a.body["steps"].size(), 2u);
  ASSERT_EQ(a.body["attempt_list"].size(), 1u);
  const Json& attempt = a.body["attempt_list"][0];
  EXPECT_EQ(attempt["number"], 1);
  EXPECT_EQ(attempt["node"], "node-a");
  EXPECT_EQ(attempt["end_class"], "succeeded");
  EXPECT_EQ(attempt["exit_status"], 0);
  EXPECT_EQ(attempt["output_tail"], "delivered\n");
  ASSERT_EQ(a.body["effects"].size(), 1u);
  EXPECT_EQ(a.body["effects"][0]["key"], "mail-2024-02-29");
  EXPECT_EQ(a.body["effects"][0]["state"], "committed");
  EXPECT_EQ(a.body["effects"][0]["result"], "message-id 42\n");
  std::vector<std::string> types;
  for (const auto& e : a.body["events"]) types.push_back(e["type"]);
  EXPECT_NE(std::find(types.begin(), types.end(), "claimed"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "succeeded"), types.end());

  const int64_t failed = RunId("globex", "2024-02-29");
  const Answer f = Read("/v1/runs/" + std::to_string(failed));
  ASSERT_EQ(f.body["attempt_list"].size(), 1u) << f.text;
  EXPECT_EQ(f.body["attempt_list"][0]["end_class"], "permanent");
  EXPECT_EQ(f.body["attempt_list"][0]["exit_status"], 65);
  EXPECT_EQ(f.body["attempt_list"][0]["output_tail"], "bad input\n");
}

TEST_F(OperatorApi, EventsAreFilteredLikeTheCommandLine) {
  const int64_t id = RunId("acme", "2024-02-29");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"", {}},
      {"job=report", {"--job", "report"}},
      {"run_id=" + std::to_string(id), {"--run", std::to_string(id)}},
      {"since=2024-02-29T09:00:03Z", {"--since", "2024-02-29T09:00:03Z"}},
      {"limit=3", {"--limit", "3"}},
  };
  for (const auto& [query, args] : cases) {
    SCOPED_TRACE(query);
    const Answer a = Read("/v1/events?" + query);
    ASSERT_EQ(a.status, 200) << a.text;
    std::vector<std::string> cli = {"events"};
    cli.insert(cli.end(), args.begin(), args.end());
    EXPECT_EQ(a.body, Cli(cli));
  }
  EXPECT_EQ(Read("/v1/events?limit=3").body["events"].size(), 3u);
  const Answer typed = Read("/v1/events?type=effect_committed");
  ASSERT_EQ(typed.body["events"].size(), 1u) << typed.text;
  EXPECT_EQ(typed.body["events"][0]["run_id"], id);
  EXPECT_EQ(Read("/v1/events?type=no_such_type").body["events"], Json::array());
}

TEST_F(OperatorApi, GapsAndVerifyAnswerWhatTheCommandLineFinds) {
  const Answer gaps = Read("/v1/gaps?job=report&from=2024-02-01&to=2024-03-31");
  ASSERT_EQ(gaps.status, 200) << gaps.text;
  EXPECT_EQ(gaps.body,
            Cli({"gaps", "--job", "report", "--from", "2024-02-01", "--to", "2024-03-31"}));
  std::map<std::string, std::string> causes;
  for (const auto& g : gaps.body["gaps"]) causes[g["partition"]] = g["cause"];
  EXPECT_EQ(causes, (std::map<std::string, std::string>{{"globex", "failed"},
                                                        {"hooli", "misfired"},
                                                        {"initech", "failed"},
                                                        {"umbrella", "never_planned"}}));
  const Answer waived = Read("/v1/gaps?from=2020-02-29&to=2020-02-29&include_waived=true");
  ASSERT_EQ(waived.body["gaps"].size(), 1u) << waived.text;
  EXPECT_EQ(waived.body["gaps"][0]["cause"], "coalesced");
  EXPECT_EQ(waived.body["gaps"][0]["waived"], true);
  EXPECT_EQ(Read("/v1/gaps?from=2020-02-29&to=2020-02-29&include_waived=false").body["gaps"],
            Json::array());

  const Answer complete = Read("/v1/verify?job=report&date=2016-02-29");
  ASSERT_EQ(complete.status, 200) << complete.text;
  EXPECT_EQ(complete.body, Cli({"verify", "--job", "report", "--date", "2016-02-29"}));
  EXPECT_EQ(complete.body["complete"], true);
  EXPECT_EQ(complete.body["expected"], 5);
  const Answer incomplete = Read("/v1/verify?job=report&date=2024-02-29");
  ASSERT_EQ(incomplete.status, 200) << incomplete.text;
  EXPECT_EQ(incomplete.body, Cli({"verify", "--job", "report", "--date", "2024-02-29"}));
  EXPECT_EQ(incomplete.body["complete"], false);
  EXPECT_EQ(incomplete.body["succeeded"], 1);
  EXPECT_EQ(incomplete.body["missing"].size(), 4u);
}

TEST_F(OperatorApi, BadParametersAreRefusedNamingThem) {
  struct Case {
    std::string path;
    int status;
    std::string message;
  };
  const std::string cursor_of_7 = [&] {
    const Answer a = Read("/v1/runs?limit=1");
    return a.body["next_cursor"].get<std::string>();
  }();
  const std::vector<Case> cases = {
      {"/v1/runs?job=nightly", 404, "no job named \"nightly\" in the configuration or the ledger"},
      {"/v1/runs?state=done", 400,
       "query parameter \"state\" must be a run state (pending, running, succeeded, failed, "
       "unknown, skipped, awaiting_approval, cancelled), got \"done\""},
      {"/v1/runs?date=2024-02-30", 400,
       "query parameter \"date\" must be a date YYYY-MM-DD, e.g. 2026-11-28, got \"2024-02-30\""},
      {"/v1/runs?partition=a%20b", 400,
       "query parameter \"partition\" must be a partition id (1-128 characters from A-Z a-z 0-9 "
       ". _ - : @, not starting with - and not . or ..), got \"a b\""},
      {"/v1/runs?limit=0", 400,
       "query parameter \"limit\" must be an integer from 1 to 1000, got \"0\""},
      {"/v1/runs?limit=1001", 400,
       "query parameter \"limit\" must be an integer from 1 to 1000, got \"1001\""},
      {"/v1/runs?limit=ten", 400,
       "query parameter \"limit\" must be an integer from 1 to 1000, got \"ten\""},
      {"/v1/runs?cursor=abc", 400,
       "query parameter \"cursor\" is not a cursor this API gave out, got \"abc\"; pass the "
       "next_cursor of the previous page as it is"},
      {"/v1/runs?cursor=" + cursor_of_7 + "x", 400,
       "query parameter \"cursor\" is not a cursor this API gave out"},
      {"/v1/runs?sort=id", 400,
       "unknown query parameter \"sort\"; GET /v1/runs takes job, state, date, partition, "
       "cursor, limit"},
      {"/v1/runs?limit=1&limit=2", 400,
       "query parameter \"limit\" is given more than once; give it once"},
      {"/v1/events?job=report&job=nightly", 400, "query parameter \"job\" is given more than once"},
      {"/v1/runs/abc", 400, "the run id in the path must be a positive integer, got \"abc\""},
      {"/v1/runs/0", 400, "the run id in the path must be a positive integer, got \"0\""},
      {"/v1/runs/999999", 404, "no run with id 999999"},
      {"/v1/jobs?verbose=1", 400, "unknown query parameter \"verbose\"; GET /v1/jobs takes none"},
      {"/v1/jobs/report?x=1", 400, "unknown query parameter \"x\""},
      {"/v1/events?job=nightly", 404,
       "no job named \"nightly\" in the configuration or the ledger"},
      {"/v1/events?run_id=x", 400,
       "query parameter \"run_id\" must be a positive integer, got \"x\""},
      {"/v1/events?run_id=999999", 404, "no run with id 999999"},
      {"/v1/events?type=Succeeded", 400,
       "query parameter \"type\" must be an event type (1-64 characters from a-z and _, e.g. "
       "succeeded), got \"Succeeded\""},
      {"/v1/events?since=yesterday", 400,
       "query parameter \"since\" must be an RFC 3339 time, e.g. 2026-11-28T09:00:00Z: "},
      {"/v1/events?limit=-1", 400,
       "query parameter \"limit\" must be an integer from 1 to 1000, got \"-1\""},
      {"/v1/events?cursor=x", 400,
       "unknown query parameter \"cursor\"; GET /v1/events takes "
       "job, run_id, type, actor, since, limit"},
      {"/v1/events?actor=", 400, "query parameter \"actor\" must be 1-256 bytes, got \"\""},
      {"/v1/gaps?job=nightly", 404, "no job named \"nightly\" in the configuration"},
      {"/v1/gaps?from=2024-13-01", 400, "query parameter \"from\" must be a date YYYY-MM-DD"},
      {"/v1/gaps?to=tomorrow", 400, "query parameter \"to\" must be a date YYYY-MM-DD"},
      {"/v1/gaps?from=2024-03-01&to=2024-02-01", 400,
       "query parameter \"from\" (2024-03-01) is after \"to\" (2024-02-01)"},
      {"/v1/gaps?include_waived=yes", 400,
       "query parameter \"include_waived\" must be true or false, got \"yes\""},
      {"/v1/verify?date=2024-02-29", 400, "query parameter \"job\" is required"},
      {"/v1/verify?job=report", 400, "query parameter \"date\" is required"},
      {"/v1/verify?job=report&date=2024-2-29", 400,
       "query parameter \"date\" must be a date YYYY-MM-DD"},
      {"/v1/verify?job=nightly&date=2024-02-29", 404,
       "no job named \"nightly\" in the configuration"},
      {"/v1/verify?job=report&date=2024-02-29&partition=acme", 400,
       "unknown query parameter \"partition\"; GET /v1/verify takes job, date"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    const Answer a = Read(c.path);
    ASSERT_EQ(a.status, c.status) << a.text;
    EXPECT_EQ(a.body.value("error", ""), c.status == 404 ? "not_found" : "invalid_request")
        << a.text;
    EXPECT_EQ(a.body.value("message", "").rfind(c.message, 0), 0u) << a.text;
    EXPECT_EQ(a.body.size(), 2u) << a.text;
  }
}

// ---- the operator actions, on a ledger and serve of their own ---------------------------------

Answer Post(int port, const std::string& path, const std::string& body, const std::string& token) {
  httplib::Client client("127.0.0.1", port);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto r = client.Post(path, headers, body, "application/json");
  Answer a;
  if (!r) {
    ADD_FAILURE() << "POST " << path << ": " << httplib::to_string(r.error());
    return a;
  }
  a.status = r->status;
  a.text = r->body;
  a.body = Json::parse(r->body, nullptr, false);
  return a;
}

// The seeded ledger, changed a little more before serve starts: 2016's acme
// run is unknown, 2012's hooli run awaits approval, 2008's and 2004's
// globex and initech runs failed.
class OperatorActions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serve_ = new ServeFixture("cronledger-operator-actions");
    dir_ = &serve_->dir();
    config_ = serve_->WriteConfig(ConfigText("127.0.0.1:0", kTokens));
    const std::string db = dir_->File("ledger.db");
    SeedLedger(config_, db);
    SqlOn(db,
          "UPDATE runs SET state = 'unknown' WHERE partition = 'acme' AND "
          "business_date = '2016-02-29'");
    SqlOn(db,
          "UPDATE runs SET state = 'awaiting_approval' WHERE partition = 'hooli' AND "
          "business_date = '2012-02-29'");
    SqlOn(db,
          "UPDATE runs SET state = 'failed' WHERE partition IN ('globex', 'initech') AND "
          "business_date IN ('2008-02-29', '2004-02-29')");
    InDoubt(db);
    setenv("CL_TEST_READ", kReadSecret, 1);
    setenv("CL_TEST_OPERATE", kOperateSecret, 1);
    setenv("CL_TEST_WORKER", kWorkerSecret, 1);
    if (serve_->Start()) port_ = serve_->port();
  }
  static void TearDownTestSuite() { delete serve_; }
  void SetUp() override { ASSERT_GT(port_, 0); }

  // 2000's globex run ends unknown: its attempt began the effect "fax-1"
  // and was lost, so the effect is in doubt.
  static void InDoubt(const std::string& db) {
    SqlOn(db,
          "UPDATE runs SET state = 'pending', attempts = 0 WHERE partition = 'globex' AND "
          "business_date = '2000-02-29'");
    store::SqliteOptions o;
    o.path = db;
    o.synchronous_full = false;
    auto opened = store::SqliteStore::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store::Store& store = **opened;
    store::ReleaseParams release;
    release.job = "report";
    release.now = Ms("2000-02-29T09:00:01Z");
    ASSERT_TRUE(store.RunRelease(release).ok());
    store::ClaimRule rule;
    rule.job = "report";
    rule.overlap = ledger::Overlap::kAllow;
    rule.steps = {"generate", "deliver"};
    auto claimed = store.RunClaim({Ms("2000-02-29T09:00:02Z"), "node-a", 10, {rule}});
    ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
    ASSERT_EQ(claimed->size(), 1u);
    const auto& c = claimed->front();
    ASSERT_TRUE(store
                    .EffectBegin({c.run.id, c.token, "fax-1", "", Ms("2000-02-29T09:00:03Z"),
                                  "node-a", ""})
                    .ok());
    store::FinishParams f;
    f.run_id = c.run.id;
    f.token = c.token;
    f.node = "node-a";
    f.now = Ms("2000-02-29T09:00:05Z");
    f.end_class = ledger::EndClass::kInDoubt;
    f.step = "deliver";
    f.decision.state = ledger::RunState::kUnknown;
    f.decision.reason = "effect in doubt";
    auto finished = store.RunFinishAttempts({f});
    ASSERT_TRUE(finished.ok() && finished->at(0).ok());
  }

  static Answer Act(const std::string& path, const Json& body) {
    return Post(port_, path, body.dump(), kOperateSecret);
  }
  static Answer Read(const std::string& path) { return Get(port_, path, kReadSecret); }

  static int64_t RunId(const std::string& partition, const std::string& date) {
    const Answer a = Read("/v1/runs?partition=" + partition + "&date=" + date);
    EXPECT_EQ(a.status, 200) << a.text;
    EXPECT_EQ(a.body["runs"].size(), 1u) << a.text;
    return a.body["runs"].empty() ? 0 : a.body["runs"][0]["id"].get<int64_t>();
  }
  static std::string RunPath(int64_t id, const std::string& action) {
    return "/v1/runs/" + std::to_string(id) + "/" + action;
  }

  // The newest event, which an action must have appended.
  static Json LastEvent() {
    const Answer a = Read("/v1/events?limit=1");
    EXPECT_EQ(a.status, 200) << a.text;
    return a.body["events"].empty() ? Json() : a.body["events"][0];
  }
  // Everything an action may change: every event and every run.
  static std::string Ledger() {
    return Read("/v1/events?limit=1000").text + Read("/v1/runs?limit=1000").text;
  }

  static inline ServeFixture* serve_ = nullptr;
  static inline const TempDir* dir_ = nullptr;  // serve_'s
  static inline std::string config_;
  static inline int port_ = 0;
};

TEST_F(OperatorActions, OnlyOperateTokensActAndARefusalChangesNothing) {
  const std::string before = Ledger();
  ASSERT_NE(before.find("\"events\""), std::string::npos);
  const int64_t id = RunId("initech", "2024-02-29");
  const Json reason = {{"reason", "x"}};
  const std::vector<std::pair<std::string, Json>> routes = {
      {"/v1/pause", {{"job", "report"}, {"reason", "x"}}},
      {"/v1/resume", {{"job", "report"}, {"reason", "x"}}},
      {RunPath(id, "retry"), reason},
      {RunPath(id, "resolve"), {{"as", "succeeded"}, {"reason", "x"}}},
      {RunPath(id, "cancel"), reason},
      {"/v1/approve", {{"job", "report"}, {"reason", "x"}}},
      {"/v1/backfill",
       {{"job", "report"}, {"from", "2024-02-29"}, {"to", "2024-02-29"}, {"reason", "x"}}},
      {"/v1/rerun", {{"job", "report"}, {"date", "2024-02-29"}, {"reason", "x"}}},
      {"/v1/trigger", {{"job", "report"}, {"reason", "x"}}},
  };
  for (const auto& [path, body] : routes) {
    SCOPED_TRACE(path);
    const Answer read = Post(port_, path, body.dump(), kReadSecret);
    EXPECT_EQ(read.status, 403) << read.text;
    EXPECT_EQ(read.body["error"], "forbidden");
    EXPECT_EQ(read.body["message"],
              "token \"dash\" has role read; POST " + path + " needs role operate");
    const Answer worker = Post(port_, path, body.dump(), kWorkerSecret);
    EXPECT_EQ(worker.status, 403) << worker.text;
    EXPECT_EQ(worker.body["error"], "forbidden");
    const Answer none = Post(port_, path, body.dump(), "");
    EXPECT_EQ(none.status, 401) << none.text;
    EXPECT_EQ(none.body["error"], "unauthenticated");
    const Answer wrong = Post(port_, path, body.dump(), "operate-secret-0123456789abcdeX");
    EXPECT_EQ(wrong.status, 401) << wrong.text;
    const Answer get = Get(port_, path, kOperateSecret);
    EXPECT_EQ(get.status, 405) << get.text;
    EXPECT_EQ(get.body["error"], "method_not_allowed");
  }
  EXPECT_EQ(Ledger(), before);
  // An action on no such run is 404 after the body is read; a bad id is 400.
  EXPECT_EQ(Act("/v1/runs/999999/retry", reason).status, 404);
  EXPECT_EQ(Act("/v1/runs/abc/retry", reason).status, 400);
  EXPECT_EQ(Act("/v1/runs/" + std::to_string(id) + "/restart", reason).status, 404);
  EXPECT_EQ(Ledger(), before);
}

TEST_F(OperatorActions, MalformedBodiesAreRefusedNamingTheFieldWithNoSideEffect) {
  const std::string before = Ledger();
  const int64_t id = RunId("initech", "2024-02-29");
  struct Case {
    std::string path;
    std::string body;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/v1/pause", "{\"job\": \"report\", \"reason\": ", 400, "the body is not valid JSON"},
      {"/v1/pause", "[\"report\"]", 400, "the body must be a JSON object"},
      {"/v1/pause", "", 400, "field \"reason\" is required"},
      {"/v1/pause", R"({"job": "report", "reason": "x", "until": "noon"})", 400,
       "unknown field \"until\""},
      {"/v1/pause", R"({"job": "report"})", 400, "field \"reason\" is required"},
      {"/v1/pause", R"({"job": "report", "reason": "x", "by": "eve\u001b[2J"})", 400,
       "field \"by\" holds the control character U+001B at byte 4"},
      {"/v1/pause", R"({"job": "report", "reason": "x", "by": "a\u0000"})", 400,
       "field \"by\" holds the control character U+0000 at byte 2"},
      {"/v1/pause", R"({"job": "report", "reason": " \n"})", 400,
       "field \"reason\" is blank: say why, it is recorded in the ledger"},
      {"/v1/pause", R"({"job": "report", "reason": 5})", 400, "field \"reason\" must be a string"},
      {"/v1/pause", R"({"job": "report", "reason": "x", "by": ""})", 400, "field \"by\" is blank"},
      {"/v1/pause", R"({"reason": "x"})", 400, "field \"job\" is required: give \"job\": NAME"},
      {"/v1/pause", R"({"job": "report", "all": true, "reason": "x"})", 400,
       "field \"all\" cannot be given with \"job\""},
      {"/v1/pause", R"({"all": "yes", "reason": "x"})", 400, "field \"all\" must be true or false"},
      {"/v1/pause", R"({"job": "nightly", "reason": "x"})", 404,
       "no job named \"nightly\" in the configuration"},
      {"/v1/pause?job=report", R"({"job": "report", "reason": "x"})", 400,
       "unknown query parameter \"job\""},
      {RunPath(id, "retry"), R"({"reason": "x", "run_id": 1})", 400, "unknown field \"run_id\""},
      {RunPath(id, "resolve"), R"({"reason": "x"})", 400, "field \"as\" is required"},
      {RunPath(id, "resolve"), R"({"as": "done", "reason": "x"})", 400,
       "field \"as\" must be \"succeeded\", \"failed\" or \"retry\""},
      {RunPath(id, "resolve"), R"({"as": "succeeded", "effect": "k", "reason": "x"})", 400,
       "field \"as\" must be \"committed\" or \"failed\" with \"effect\", got \"succeeded\""},
      {RunPath(id, "cancel"), R"({"reason": ["x"]})", 400, "field \"reason\" must be a string"},
      {"/v1/approve", R"({"job": "report", "run": 1, "from": "2012-02-29", "reason": "x"})", 400,
       "field \"run\" cannot be given with \"from\" or \"to\""},
      {"/v1/approve", R"({"job": "report", "run": "7", "reason": "x"})", 400,
       "field \"run\" must be an integer"},
      {"/v1/backfill", R"({"job": "report", "from": "2024-02-29", "reason": "x"})", 400,
       "field \"to\" is required"},
      {"/v1/backfill",
       R"({"job": "report", "from": "2024-03-01", "to": "2024-02-29", "reason": "x"})", 400,
       "field \"from\" is after \"to\""},
      {"/v1/backfill",
       R"({"job": "report", "from": "2024-02-30", "to": "2024-03-01", "reason": "x"})", 400,
       "field \"from\" must be a date YYYY-MM-DD"},
      {"/v1/backfill",
       R"({"job": "report", "from": "2024-02-29", "to": "2024-02-29", "partitions": ["a b"], "reason": "x"})",
       400, "field \"partitions\" must hold partition ids"},
      {"/v1/backfill",
       R"({"job": "report", "from": "2024-02-29", "to": "2024-02-29", "partitions": [".."], "reason": "x"})",
       400, "field \"partitions\" must hold partition ids"},
      {"/v1/backfill",
       R"({"job": "report", "from": "2024-02-29", "to": "2024-02-29", "partitions": ["-x"], "reason": "x"})",
       400,
       "field \"partitions\" must hold partition ids (1-128 characters from A-Z a-z 0-9 . _ - : "
       "@, not starting with - and not . or ..), got \"-x\""},
      {"/v1/backfill",
       R"({"job": "report", "from": "2024-02-29", "to": "2024-02-29", "reason": "x", "yes": true})",
       400, "field \"preview_digest\" is required with \"yes\": true"},
      {"/v1/rerun", R"({"job": "report", "date": "2024-02-29", "only": "some", "reason": "x"})",
       400, "field \"only\" must be \"failed\", \"unknown\", \"missing\" or \"all\""},
      {"/v1/rerun", R"({"job": "report", "date": "2024-02-29", "force": 1, "reason": "x"})", 400,
       "field \"force\" must be true or false"},
      {"/v1/rerun", R"({"job": "report", "date": "2024-02-29", "reason": "x", "yes": true})", 400,
       "field \"preview_digest\" is required with \"yes\": true"},
      {"/v1/rerun", R"({"job": "nightly", "date": "2024-02-29", "reason": "x"})", 404,
       "no job named \"nightly\""},
      {"/v1/trigger", R"({"job": "report", "partitions": "acme", "reason": "x"})", 400,
       "field \"partitions\" must be an array of at most"},
      {"/v1/trigger", R"({"job": "report", "reason": "x", "yes": true})", 400,
       "unknown field \"yes\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body);
    const Answer a = Post(port_, c.path, c.body, kOperateSecret);
    ASSERT_EQ(a.status, c.status) << a.text;
    EXPECT_EQ(a.body.value("error", ""), c.status == 404 ? "not_found" : "invalid_request");
    EXPECT_EQ(a.body.value("message", "").rfind(c.message, 0), 0u) << a.text;
  }
  // Larger than an action accepts: 413 before anything is read.
  const std::string big = Json{{"job", "report"}, {"reason", std::string(70 * 1024, 'x')}}.dump();
  const Answer large = Post(port_, "/v1/pause", big, kOperateSecret);
  EXPECT_EQ(large.status, 413) << large.text;
  EXPECT_EQ(large.body["error"], "too_large");
  EXPECT_EQ(Ledger(), before);
}

TEST_F(OperatorActions, PauseAndResumeRoundTripRecordingActorAndReason) {
  Answer a = Act("/v1/pause", {{"job", "report"}, {"reason", "upstream outage"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body, (Json{{"job", "report"}, {"paused", true}}));
  EXPECT_EQ(Read("/v1/jobs/report").body["state"], "paused");
  Json e = LastEvent();
  EXPECT_EQ(e["type"], "paused");
  EXPECT_EQ(e["job"], "report");
  EXPECT_EQ(e["actor"], "oncall");                // the token's name
  EXPECT_TRUE(e["on_behalf_of"].is_null()) << e;  // no "by"
  EXPECT_EQ(e["reason"], "upstream outage");
  a = Act("/v1/pause", {{"job", "report"}, {"reason", "again"}});
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body["error"], "conflict");

  a = Act("/v1/resume", {{"job", "report"}, {"reason", "upstream back"}, {"by", "alice"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body, (Json{{"job", "report"}, {"paused", false}}));
  EXPECT_EQ(Read("/v1/jobs/report").body["state"], "active");
  e = LastEvent();
  EXPECT_EQ(e["type"], "resumed");
  // "by" names whom for, beside the token, never instead of it.
  EXPECT_EQ(e["actor"], "oncall");
  EXPECT_EQ(e["on_behalf_of"], "alice");
  EXPECT_EQ(e["reason"], "upstream back");
  a = Act("/v1/resume", {{"job", "report"}, {"reason", "again"}});
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body["message"], "job \"report\" is not paused");

  a = Act("/v1/pause", {{"all", true}, {"reason", "maintenance"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body, (Json{{"job", nullptr}, {"paused", true}}));
  EXPECT_EQ(LastEvent()["type"], "paused");
  EXPECT_EQ(Read("/v1/jobs/report").body["state"], "paused");
  // The global switch is not the job's own flag; the refusal says how.
  a = Act("/v1/resume", {{"job", "report"}, {"reason", "only this one"}});
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body["message"],
            "job \"report\" is not paused on its own; everything is paused: resume it with "
            "\"all\": true");
  a = Act("/v1/resume", {{"all", true}, {"reason", "maintenance over"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(LastEvent()["reason"], "maintenance over");
  EXPECT_EQ(Read("/v1/jobs/report").body["state"], "active");
}

TEST_F(OperatorActions, RetryResolveAndCancelMoveRunsOutOfEndStates) {
  const int64_t failed = RunId("globex", "2024-02-29");
  Answer a = Act(RunPath(failed, "retry"), {{"reason", "input fixed"}, {"by", "bob"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body["id"], failed);
  EXPECT_EQ(a.body["state"], "pending");
  Json e = LastEvent();
  EXPECT_EQ(e["type"], "retry");
  EXPECT_EQ(e["run_id"], failed);
  EXPECT_EQ(e["actor"], "oncall");
  EXPECT_EQ(e["on_behalf_of"], "bob");
  EXPECT_EQ(e["reason"], "input fixed");
  // Pending is no end state: retry again is refused with the store's word.
  a = Act(RunPath(failed, "retry"), {{"reason", "again"}});
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body["error"], "conflict");

  a = Act(RunPath(failed, "cancel"), {{"reason", "customer left"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body["state"], "cancelled");
  e = LastEvent();
  EXPECT_EQ(e["type"], "cancel");
  EXPECT_EQ(e["actor"], "oncall");
  EXPECT_EQ(e["reason"], "customer left");
  a = Act(RunPath(failed, "cancel"), {{"reason", "again"}});
  EXPECT_EQ(a.status, 409) << a.text;

  const int64_t unknown = RunId("acme", "2016-02-29");
  const int64_t not_unknown = RunId("initech", "2024-02-29");
  a = Act(RunPath(not_unknown, "resolve"), {{"as", "succeeded"}, {"reason", "checked"}});
  EXPECT_EQ(a.status, 409) << a.text;
  a = Act(RunPath(unknown, "resolve"),
          {{"as", "committed"}, {"effect", "no-such-key"}, {"reason", "checked"}});
  EXPECT_EQ(a.status, 404) << a.text;
  a = Act(RunPath(unknown, "resolve"), {{"as", "succeeded"}, {"reason", "report was sent"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body["state"], "succeeded");
  e = LastEvent();
  EXPECT_EQ(e["type"], "resolve");
  EXPECT_EQ(e["run_id"], unknown);
  EXPECT_EQ(e["reason"], "report was sent");
  EXPECT_EQ(e["actor"], "oncall");

  // An effect in doubt is settled by its key; then the run goes again.
  const int64_t in_doubt = RunId("globex", "2000-02-29");
  ASSERT_EQ(Read("/v1/runs/" + std::to_string(in_doubt)).body["state"], "unknown");
  a = Act(RunPath(in_doubt, "resolve"), {{"as", "succeeded"}, {"reason", "x"}});
  EXPECT_EQ(a.status, 409) << a.text;  // the effect is still in doubt
  a = Act(RunPath(in_doubt, "resolve"),
          {{"as", "committed"}, {"effect", "fax-1"}, {"reason", "the fax log shows it"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body["state"], "pending");
  EXPECT_EQ(a.body["still_in_doubt"], Json::array());
  e = LastEvent();
  EXPECT_EQ(e["type"], "resolve");
  EXPECT_EQ(e["run_id"], in_doubt);
  EXPECT_EQ(e["reason"], "the fax log shows it");
}

TEST_F(OperatorActions, ApproveLetsARunAwaitingApprovalGo) {
  const int64_t id = RunId("hooli", "2012-02-29");
  Answer a = Act("/v1/approve", {{"job", "report"}, {"run", id}, {"reason", "old gap, do it"}});
  ASSERT_EQ(a.status, 200) << a.text;
  EXPECT_EQ(a.body, (Json{{"approved", {id}}}));
  const Json e = LastEvent();
  EXPECT_EQ(e["type"], "approve");
  EXPECT_EQ(e["run_id"], id);
  EXPECT_EQ(e["reason"], "old gap, do it");
  EXPECT_EQ(Read("/v1/runs/" + std::to_string(id)).body["state"], "pending");
  // That run is pending now: the store refuses it; a range with none left
  // awaiting approval has nothing to do.
  a = Act("/v1/approve", {{"job", "report"}, {"run", id}, {"reason", "again"}});
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body["error"], "conflict");
  a = Act("/v1/approve",
          {{"job", "report"}, {"from", "2012-02-29"}, {"to", "2012-02-29"}, {"reason", "again"}});
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body, (Json{{"error", "nothing_to_do"},
                          {"message", "no run of report is awaiting approval in that range"}}));
  a = Act("/v1/approve", {{"job", "nightly"}, {"reason", "x"}});
  EXPECT_EQ(a.status, 404) << a.text;
}

TEST_F(OperatorActions, RerunAnswersThePreviewAndActsOnlyWithItsDigest) {
  const Json ask = {{"job", "report"}, {"date", "2008-02-29"}, {"reason", "upstream re-sent"}};
  const std::string before = Ledger();
  Answer preview = Act("/v1/rerun", ask);
  ASSERT_EQ(preview.status, 200) << preview.text;
  EXPECT_EQ(preview.body["would_queue"],
            (Json{"report/globex/2008-02-29", "report/initech/2008-02-29"}));
  EXPECT_EQ(preview.body["expected"], 5);
  EXPECT_EQ(preview.body["failed"], 2);
  EXPECT_EQ(preview.body["succeeded"], 3);
  const std::string digest = preview.body["preview_digest"];
  EXPECT_EQ(digest.size(), 64u);
  EXPECT_EQ(Ledger(), before) << "a preview changed the ledger";
  // The digest without "yes" is still a preview.
  Json with_digest = ask;
  with_digest["preview_digest"] = digest;
  EXPECT_EQ(Act("/v1/rerun", with_digest).body, preview.body);

  Json confirm = with_digest;
  confirm["yes"] = true;
  const Answer done = Act("/v1/rerun", confirm);
  ASSERT_EQ(done.status, 200) << done.text;
  EXPECT_EQ(done.body["run_keys"], preview.body["would_queue"]);
  EXPECT_EQ(done.body["queued"].size(), 2u);
  const Json e = LastEvent();
  EXPECT_EQ(e["type"], "rerun");
  EXPECT_EQ(e["id"], done.body["event_id"]);
  EXPECT_EQ(e["actor"], "oncall");
  EXPECT_EQ(e["reason"], "upstream re-sent");
  EXPECT_EQ(Read("/v1/runs?date=2008-02-29&state=pending").body["runs"].size(), 2u);

  // A preview the ledger moved away from is refused, with the new one.
  const Json ask2 = {{"job", "report"}, {"date", "2004-02-29"}, {"reason", "again"}};
  const Answer old = Act("/v1/rerun", ask2);
  ASSERT_EQ(old.status, 200) << old.text;
  ASSERT_EQ(old.body["would_queue"].size(), 2u) << old.text;
  ASSERT_EQ(Act(RunPath(RunId("globex", "2004-02-29"), "cancel"), {{"reason", "gone"}}).status,
            200);
  const std::string moved = Ledger();
  Json stale = ask2;
  stale["yes"] = true;
  stale["preview_digest"] = old.body["preview_digest"];
  const Answer refused = Act("/v1/rerun", stale);
  ASSERT_EQ(refused.status, 409) << refused.text;
  EXPECT_EQ(refused.body["error"], "stale_preview");
  const Json fresh = refused.body["preview"];
  EXPECT_NE(fresh["preview_digest"], old.body["preview_digest"]);
  EXPECT_EQ(fresh["would_queue"], (Json{"report/initech/2004-02-29"}));
  EXPECT_EQ(fresh, Act("/v1/rerun", ask2).body);
  EXPECT_EQ(Ledger(), moved) << "a stale preview changed the ledger";
}

TEST_F(OperatorActions, BackfillQueuesTheMissingKeysOfItsPreview) {
  const Json ask = {{"job", "report"},
                    {"from", "2024-02-29"},
                    {"to", "2024-02-29"},
                    {"partitions", {"hooli", "umbrella"}},
                    {"reason", "outage"}};
  const Answer preview = Act("/v1/backfill", ask);
  ASSERT_EQ(preview.status, 200) << preview.text;
  EXPECT_EQ(preview.body["would_queue"],
            (Json{"report/hooli/2024-02-29", "report/umbrella/2024-02-29"}));
  EXPECT_EQ(preview.body["missing"], 2);
  const std::string before = Ledger();
  Json wrong = ask;
  wrong["yes"] = true;
  wrong["preview_digest"] = std::string(64, '0');
  const Answer stale = Act("/v1/backfill", wrong);
  ASSERT_EQ(stale.status, 409) << stale.text;
  EXPECT_EQ(stale.body["error"], "stale_preview");
  EXPECT_EQ(stale.body["preview"], preview.body);
  EXPECT_EQ(Ledger(), before);

  Json confirm = ask;
  confirm["yes"] = true;
  confirm["preview_digest"] = preview.body["preview_digest"];
  confirm["by"] = "carol";
  const Answer done = Act("/v1/backfill", confirm);
  ASSERT_EQ(done.status, 200) << done.text;
  EXPECT_EQ(done.body["run_keys"], preview.body["would_queue"]);
  const Json e = LastEvent();
  EXPECT_EQ(e["type"], "backfill");
  EXPECT_EQ(e["actor"], "oncall");
  EXPECT_EQ(e["on_behalf_of"], "carol");
  EXPECT_EQ(e["reason"], "outage");
  EXPECT_EQ(Read("/v1/runs?partition=umbrella&date=2024-02-29").body["runs"][0]["state"],
            "pending");
  // Done: the same request has nothing left to queue.
  const Answer again = Act("/v1/backfill", ask);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.body["would_queue"], Json::array());
  Json repeat = ask;
  repeat["yes"] = true;
  repeat["preview_digest"] = again.body["preview_digest"];
  const Answer nothing = Act("/v1/backfill", repeat);
  EXPECT_EQ(nothing.status, 409) << nothing.text;
  EXPECT_EQ(nothing.body["error"], "nothing_to_do");
}

TEST_F(OperatorActions, TriggerWithNothingDueWithinTheHorizonIsRefused) {
  const std::string before = Ledger();
  // The job's backfill.horizon is a day and it fires on leap days only.
  const Answer a = Act("/v1/trigger", {{"job", "report"}, {"reason", "now please"}});
  EXPECT_EQ(a.status, 409) << a.text;
  EXPECT_EQ(a.body["error"], "nothing_to_do");
  // Why, and when something will be (the next leap day, whichever it is).
  const std::string message = a.body["message"];
  EXPECT_EQ(message.rfind("nothing due yet for report: no occurrence is due since the job was "
                          "added (within its backfill horizon); the next is at ",
                          0),
            0u)
      << message;
  EXPECT_TRUE(message.ends_with("-02-29T09:00:00Z")) << message;
  EXPECT_EQ(Act("/v1/trigger", {{"job", "nightly"}, {"reason", "x"}}).status, 404);
  // A named period: malformed, both kinds at once, or not due.
  const Answer both =
      Act("/v1/trigger",
          {{"job", "report"}, {"date", "2024-02-29"}, {"period", "2024-02-29"}, {"reason", "x"}});
  EXPECT_EQ(both.status, 400) << both.text;
  EXPECT_NE(both.text.find("give \\\"date\\\" or \\\"period\\\", not both"), std::string::npos)
      << both.text;
  const Answer bad =
      Act("/v1/trigger", {{"job", "report"}, {"date", "2024-02-30"}, {"reason", "x"}});
  EXPECT_EQ(bad.status, 400) << bad.text;
  const Answer later =
      Act("/v1/trigger", {{"job", "report"}, {"date", "2996-02-29"}, {"reason", "x"}});
  EXPECT_EQ(later.status, 409) << later.text;
  EXPECT_NE(later.text.find("2996-02-29 is later than the job's current business date"),
            std::string::npos)
      << later.text;
  EXPECT_EQ(Ledger(), before);
}

// Trigger queues the latest due period when it has no run. serve's planner
// and gap scanner would plan or hold any due key themselves, so the ledger
// is seeded as they leave one they have passed over: a yearly job whose
// only occurrence within its horizon was two hours ago, planned and then
// lost (the run deleted), its gap already reported (so the scanner, which
// reports a gap once, leaves it alone).
TEST(OperatorActionsTrigger, TriggerQueuesTheLatestDuePeriodOnceWithActorAndReason) {
  using namespace std::chrono;
  ServeFixture serve("cronledger-operator-trigger");
  const TempDir& dir = serve.dir();
  const auto key_at = floor<minutes>(RealClock().Now()) - hours{2};
  const auto day = floor<days>(key_at);
  const year_month_day date(day);
  const hh_mm_ss<minutes> at(duration_cast<minutes>(key_at - day));
  const std::string schedule =
      fmt::format("{} {} {} {} *", at.minutes().count(), at.hours().count(),
                  static_cast<unsigned>(date.day()), static_cast<unsigned>(date.month()));
  const std::string config = serve.WriteConfig(ConfigText("127.0.0.1:0", std::string(kTokens) + R"(
[[job]]
name = "tick"
schedule = ")" + schedule + R"("
timezone = "UTC"
partitions = ["a"]
executor = "external"
backfill = { horizon = "1d" }

  [[job.step]]
  name = "send"
)"));
  const std::string db = dir.File("ledger.db");
  const std::string period = FormatDate(date);
  const std::string run_key = "tick/a/" + period;
  {
    auto loaded = config::LoadConfig(config);
    ASSERT_TRUE(std::holds_alternative<config::Config>(loaded));
    const config::Config parsed = std::get<config::Config>(loaded);
    store::SqliteOptions o;
    o.path = db;
    o.synchronous_full = false;
    auto opened = store::SqliteStore::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    const auto start =
        Clock::TimePoint(duration_cast<Clock::Duration>((key_at - hours{1}).time_since_epoch()));
    FakeClock clock(start);
    engine::Planner planner(parsed, **opened, clock);
    ASSERT_TRUE(planner.PlanOnce(start).ok());
    ASSERT_TRUE(planner.PlanOnce(start + hours{1} + minutes{1}).ok());
    store::EventRecord gap;
    gap.at = store::ToInstant(start + hours{1} + minutes{2});
    gap.type = "gap_found";
    gap.job = "tick";
    gap.run_key = run_key;
    gap.actor = "scanner";
    gap.details = Json{{"cause", "never_planned"}, {"business_date", period}}.dump();
    ASSERT_TRUE((*opened)->EventAppend(gap).ok());
  }
  SqlOn(db, "DELETE FROM runs WHERE job = 'tick'");
  setenv("CL_TEST_READ", kReadSecret, 1);
  setenv("CL_TEST_OPERATE", kOperateSecret, 1);
  setenv("CL_TEST_WORKER", kWorkerSecret, 1);
  ASSERT_TRUE(serve.Start());
  const int port = serve.port();
  const Answer none = Get(port, "/v1/runs?job=tick", kReadSecret);
  ASSERT_EQ(none.status, 200) << none.text;
  ASSERT_EQ(none.body["runs"], Json::array()) << none.text;

  const std::string body = Json{{"job", "tick"}, {"reason", "customer asked"}}.dump();
  const Answer done = Post(port, "/v1/trigger", body, kOperateSecret);
  ASSERT_EQ(done.status, 200) << done.text;
  EXPECT_EQ(done.body["run_keys"], (Json{run_key}));
  EXPECT_EQ(done.body["period"], period);
  ASSERT_EQ(done.body["queued"].size(), 1u) << done.text;
  const Answer events = Get(port, "/v1/events?type=trigger", kReadSecret);
  ASSERT_EQ(events.body["events"].size(), 1u) << events.text;
  const Json e = events.body["events"][0];
  EXPECT_EQ(e["id"], done.body["event_id"]);
  EXPECT_EQ(e["actor"], "oncall");
  EXPECT_EQ(e["reason"], "customer asked");
  const Answer runs = Get(port, "/v1/runs?job=tick", kReadSecret);
  ASSERT_EQ(runs.body["runs"].size(), 1u) << runs.text;
  EXPECT_EQ(runs.body["runs"][0]["run_key"], run_key);
  EXPECT_EQ(runs.body["runs"][0]["state"], "pending");

  const Answer again = Post(port, "/v1/trigger", body, kOperateSecret);
  EXPECT_EQ(again.status, 409) << again.text;
  EXPECT_EQ(again.body["error"], "conflict");
  EXPECT_NE(again.text.find(run_key + " (pending, run "), std::string::npos) << again.text;
  EXPECT_EQ(Get(port, "/v1/events?type=trigger", kReadSecret).body["events"].size(), 1u);
  EXPECT_EQ(serve.Stop(), 0);
}

// ---- servers of their own --------------------------------------------------------------------

TEST(OperatorApiAuth, WithoutTokensServeKeepsALocalOperatorTokenInAPrivateFile) {
  ServeFixture serve("cronledger-local-token");
  const TempDir& dir = serve.dir();
  const std::string config = serve.WriteConfig(ConfigText("127.0.0.1:0", ""));
  const std::string token_path = dir.File("cronledger.token");
  std::string token;
  {
    ASSERT_TRUE(serve.Start({.log = "serve1.log"}));
    const int port = serve.port();
    struct stat st {};
    ASSERT_EQ(stat(token_path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    token = ReadFile(token_path);
    ASSERT_EQ(token.size(), 65u) << token;  // 32 random bytes in hex, a newline
    token.pop_back();
    EXPECT_EQ(Get(port, "/v1/jobs", token).status, 200);
    EXPECT_EQ(Get(port, "/v1/jobs", "").status, 401);
    const std::string log = ReadFile(dir.File("serve1.log"));
    EXPECT_EQ(log.find(token), std::string::npos) << "the token was logged";
    EXPECT_NE(log.find("the operator token is in " + token_path +
                       " (created now, mode 0600); "
                       "dashboard at http://127.0.0.1:" +
                       std::to_string(port) + "/"),
              std::string::npos)
        << log;
    EXPECT_EQ(serve.Stop(), 0);
  }
  {
    ASSERT_TRUE(serve.Start({.log = "serve2.log"}));
    const int port = serve.port();
    EXPECT_EQ(ReadFile(token_path), token + "\n");
    EXPECT_EQ(Get(port, "/v1/runs", token).status, 200);
    EXPECT_NE(ReadFile(dir.File("serve2.log")).find("(as before)"), std::string::npos);
    EXPECT_EQ(serve.Stop(), 0);
  }
  // A token file others may read is refused, not used.
  ASSERT_EQ(chmod(token_path.c_str(), 0644), 0);
  auto refused = Cronledger({"serve", "--config", config});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find(token_path + " may be read by others (mode 0644)"), std::string::npos)
      << refused.err;
  EXPECT_EQ(refused.err.find(token), std::string::npos);
}

TEST(OperatorApiAuth, ANonLoopbackAddressIsRefusedWithoutTokens) {
  TempDir dir("cronledger-wide-listen");
  const std::string wide = dir.Write("wide.toml", ConfigText("0.0.0.0:0", ""));
  auto r = Cronledger({"serve", "--config", wide});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("server.listen: host \"0.0.0.0\" is not a loopback address: listening "
                       "beyond this machine needs [[auth.token]] entries"),
            std::string::npos)
      << r.err;
  const std::string narrow = dir.Write("narrow.toml", ConfigText("127.0.0.1:0", ""));
  r = Cronledger({"serve", "--config", narrow, "--listen", "0.0.0.0:0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "cronledger serve: --listen: host \"0.0.0.0\" is not a loopback address: listening "
            "beyond this machine needs [[auth.token]] entries; without them serve listens only "
            "on 127.x.x.x, ::1 or localhost\n");
  // Nothing was created: the refusal comes before the token file and store.
  EXPECT_FALSE(std::filesystem::exists(dir.File("cronledger.token")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db")));
}

TEST(OperatorApiAuth, AMissingSecretStopsServeNamingTheTokenAndNeverTheSecret) {
  TempDir dir("cronledger-missing-secret");
  const std::string config = dir.Write("cronledger.toml", ConfigText("127.0.0.1:0", kTokens));
  unsetenv("CL_TEST_READ");
  setenv("CL_TEST_OPERATE", kOperateSecret, 1);
  setenv("CL_TEST_WORKER", "", 1);
  auto r = Cronledger({"serve", "--config", config});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find(config + ":21: auth.token[dash].secret_env: environment variable "
                          "\"CL_TEST_READ\" is not set: it must hold the secret of token \"dash\""),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("auth.token[w1].secret_env: environment variable \"CL_TEST_WORKER\" is "
                       "empty"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(kOperateSecret), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.File("cronledger.token")));
  setenv("CL_TEST_READ", kReadSecret, 1);
  setenv("CL_TEST_WORKER", kWorkerSecret, 1);
}

}  // namespace
}  // namespace cronledger
