// The ledger commands with --server URL: the real `cronledger` binary
// against a real `cronledger serve` on a SQLite ledger. Each command's
// output through the server is compared with its output on the store
// directly: text and --json, stdout and exit code alike.
//
// The ledger is planned in this process by the real planner on a fake
// clock, on leap days only ("0 9 29 2 *", 2000..2024), with every run in an
// end state and executor "external", so serve (on the real clock) has
// nothing to plan, release or claim: both paths see the same ledger.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
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
using testing::Lines;
using testing::ProcessResult;
using testing::ReadFile;
using testing::ServeFixture;
using testing::TempDir;

const std::vector<std::string> kLeapDays = {"2000-02-29", "2004-02-29", "2008-02-29", "2012-02-29",
                                            "2016-02-29", "2020-02-29", "2024-02-29"};

Clock::TimePoint At(const std::string& rfc3339) {
  return Clock::TimePoint{ParseRfc3339(rfc3339)->time_since_epoch()};
}
store::Instant Ms(const std::string& rfc3339) { return store::ToInstant(At(rfc3339)); }

// No [[auth.token]]: serve keeps its operator token in cronledger.token
// beside this file, where the command line finds it.
const std::string kConfig = R"([server]
store = "sqlite:ledger.db"
retention = "36500d"  # the seeded ledger goes back to 2000
listen = "127.0.0.1:0"

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
)";

void Sql(const std::string& db, const std::string& sql) {
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(handle, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(handle);
}

// Every leap day planned as serve would have. Before 2024 the runs
// succeeded, except: 2020's umbrella coalesced (waived), 2016's acme
// unknown, 2012's hooli awaiting approval, 2008's and 2004's globex and
// initech failed, and 2000's globex unknown with the effect "fax-1" in
// doubt. Of 2024-02-29: hooli misfired, umbrella never planned, and one
// attempt each made acme succeed (an effect committed), globex and initech
// fail.
void Seed(const std::string& config_path, const std::string& db) {
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
  Sql(db, "UPDATE runs SET state = 'succeeded', attempts = 1 WHERE business_date < '2024-01-01'");
  Sql(db,
      "UPDATE runs SET state = 'skipped', reason = 'coalesced', attempts = 0 WHERE partition = "
      "'umbrella' AND business_date = '2020-02-29'");
  Sql(db,
      "UPDATE runs SET state = 'unknown' WHERE partition = 'acme' AND business_date = "
      "'2016-02-29'");
  Sql(db,
      "UPDATE runs SET state = 'awaiting_approval' WHERE partition = 'hooli' AND business_date = "
      "'2012-02-29'");
  Sql(db,
      "UPDATE runs SET state = 'failed' WHERE partition IN ('globex', 'initech') AND "
      "business_date IN ('2008-02-29', '2004-02-29')");
  Sql(db,
      "UPDATE runs SET state = 'skipped', reason = 'misfired' WHERE partition = 'hooli' AND "
      "business_date = '2024-02-29'");
  Sql(db, "DELETE FROM runs WHERE partition = 'umbrella' AND business_date = '2024-02-29'");
  Sql(db,
      "UPDATE runs SET state = 'pending', attempts = 0 WHERE partition = 'globex' AND "
      "business_date = '2000-02-29'");

  store::ClaimRule rule;
  rule.job = "report";
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"generate", "deliver"};
  // 2000's globex: begins "fax-1", and its attempt is lost: in doubt.
  {
    store::ReleaseParams release;
    release.job = "report";
    release.now = Ms("2000-02-29T09:00:01Z");
    ASSERT_TRUE(store.RunRelease(release).ok());
    auto claimed = store.RunClaim({Ms("2000-02-29T09:00:02Z"), "node-a", 10, {rule}});
    ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
    ASSERT_EQ(claimed->size(), 1u);
    const auto& c = claimed->front();
    ASSERT_TRUE(
        store.EffectBegin({c.run.id, c.token, "fax-1", "", Ms("2000-02-29T09:00:03Z"), "node-a", ""})
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
  store::ReleaseParams release;
  release.job = "report";
  release.now = Ms("2024-02-29T09:00:01Z");
  ASSERT_TRUE(store.RunRelease(release).ok());
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
      ASSERT_TRUE(store
                      .EffectBegin({c.run.id, c.token, "mail-2024-02-29", "",
                                    Ms("2024-02-29T09:00:03Z"), "node-a", ""})
                      .ok());
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
    } else {
      f.end_class = ledger::EndClass::kPermanent;
      f.exit_status = 65;
      f.step = "generate";
      f.decision.state = ledger::RunState::kFailed;
      f.decision.reason = "exit 65: permanent";
    }
    auto finished = store.RunFinishAttempts({f});
    ASSERT_TRUE(finished.ok() && finished->at(0).ok()) << c.run.partition;
  }
}

// A ledger in its own folder: the config, the seeded SQLite file and, once
// serve ran there (`serve`, not started here), cronledger.token.
struct Ledger {
  explicit Ledger(const std::string& name, const std::string& extra_config = "")
      : serve("cronledger-server-cli-" + name), dir(serve.dir()) {
    config = serve.WriteConfig(kConfig + extra_config);
    Seed(config, dir.File("ledger.db"));
  }
  ServeFixture serve;
  const TempDir& dir;  // serve's
  std::string config;
};

// Where the environment could send a command elsewhere: cleared for every
// test, set only by those that test it.
void ClearServerEnvironment() {
  unsetenv("CRONLEDGER_SERVER");
  unsetenv("CRONLEDGER_AUTH_TOKEN");
  unsetenv("CRONLEDGER_CONFIG");
}

// `cronledger COMMAND --config CONFIG [--server URL] ARGS...`.
ProcessResult Cli(const std::string& config, const std::string& server,
                  std::vector<std::string> args) {
  std::vector<std::string> argv = {args.front(), "--config", config};
  if (!server.empty()) argv.insert(argv.end(), {"--server", server});
  argv.insert(argv.end(), args.begin() + 1, args.end());
  return Cronledger(argv);
}

std::string Show(const std::vector<std::string>& args) {
  std::string text;
  for (const auto& a : args) text += (text.empty() ? "" : " ") + a;
  return text;
}

// ---- reading: one ledger, through serve and directly ---------------------------------------------

class ServerCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ClearServerEnvironment();
    ledger_ = new Ledger("read");
    if (ledger_->serve.Start()) url_ = ledger_->serve.url();
  }
  static void TearDownTestSuite() { delete ledger_; }
  void SetUp() override {
    ClearServerEnvironment();
    ASSERT_FALSE(url_.empty());
  }

  static ProcessResult Local(const std::vector<std::string>& args) {
    return Cli(ledger_->config, "", args);
  }
  static ProcessResult Remote(const std::vector<std::string>& args) {
    return Cli(ledger_->config, url_, args);
  }
  static int64_t RunId(const std::string& partition, const std::string& date) {
    const auto r = Local({"runs", "--partition", partition, "--date", date, "--json"});
    const Json runs = Json::parse(r.out, nullptr, false)["runs"];
    EXPECT_EQ(runs.size(), 1u) << r.out << r.err;
    return runs.empty() ? 0 : runs[0]["id"].get<int64_t>();
  }

  static inline Ledger* ledger_ = nullptr;
  static inline std::string url_;
};

// `status` lists the nodes with when each was last seen, which serve moves
// every 5 s: that is left out of the comparison (the nodes' names stay).
std::string WithoutNodeBeats(const std::string& out) {
  Json doc = Json::parse(out, nullptr, false);
  if (!doc.is_discarded()) {
    if (doc.is_object() && doc.contains("nodes")) {
      for (auto& n : doc["nodes"]) {
        n.erase("last_seen_at");
        n.erase("alive");
      }
    }
    return doc.dump(2);
  }
  const std::size_t at = out.find("\nNODE ");
  if (at == std::string::npos) return out;
  std::string kept = out.substr(0, at);
  std::istringstream lines(out.substr(at));
  for (std::string line; std::getline(lines, line);) kept += "\n" + line.substr(0, line.find(' '));
  return kept;
}

TEST_F(ServerCli, EveryReadCommandPrintsTheSameThroughTheServer) {
  const std::string acme = std::to_string(RunId("acme", "2024-02-29"));
  const std::string in_doubt = std::to_string(RunId("globex", "2000-02-29"));
  const std::vector<std::vector<std::string>> commands = {
      {"status"},
      {"runs"},
      {"runs", "--job", "report", "--state", "failed"},
      {"runs", "--date", "2024-02-29", "--limit", "2"},
      {"runs", "--partition", "umbrella"},
      {"runs", "--run", acme},
      {"runs", "--run", in_doubt},
      {"events"},
      {"events", "--run", acme},
      {"events", "--since", "2024-02-29T09:00:02Z", "--limit", "3"},
      {"gaps", "--from", "2000-01-01", "--to", "2024-12-31"},
      {"gaps", "--from", "2000-01-01", "--to", "2024-12-31", "--include-waived"},
      {"gaps", "--from", "2020-02-29", "--to", "2020-02-29"},
      {"verify", "--job", "report", "--date", "2024-02-29"},
      {"verify", "--job", "report", "--date", "2020-02-29"},
      {"verify", "--job", "report", "--date", "2022-02-28"},
  };
  int found = 0;
  for (auto args : commands) {
    for (const bool json : {false, true}) {
      if (json) args.push_back("--json");
      SCOPED_TRACE(Show(args));
      const ProcessResult local = Local(args);
      const ProcessResult remote = Remote(args);
      ASSERT_TRUE(local.exit_code == 0 || local.exit_code == 1) << local.err;
      EXPECT_EQ(remote.exit_code, local.exit_code) << remote.err;
      EXPECT_EQ(WithoutNodeBeats(remote.out), WithoutNodeBeats(local.out));
      EXPECT_EQ(remote.err, local.err);
      EXPECT_FALSE(local.out.empty());
      if (json) {
        EXPECT_FALSE(Json::parse(remote.out, nullptr, false).is_discarded()) << remote.out;
      }
      if (local.exit_code == 1) ++found;
    }
  }
  // The seeded ledger has gaps and an incomplete date: both exit 1 alike.
  EXPECT_GE(found, 4);
  // Not vacuous: the listings hold what was seeded.
  const std::string runs = Remote({"runs", "--limit", "1000"}).out;
  EXPECT_NE(runs.find("report/acme/2024-02-29"), std::string::npos) << runs;
  EXPECT_NE(runs.find("misfired"), std::string::npos) << runs;
  const std::string one = Remote({"runs", "--run", in_doubt}).out;
  EXPECT_NE(one.find("fax-1"), std::string::npos) << one;
  EXPECT_NE(one.find("(in doubt)"), std::string::npos) << one;
  EXPECT_NE(one.find("updated at"), std::string::npos) << one;
}

// What the ledger refuses, it refuses alike both ways: the same message
// on stderr and the same exit code (a job it does not know is a usage
// error, a run it does not have exit 1).
TEST_F(ServerCli, EveryReadRefusalIsTheSameThroughTheServer) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"runs", "--job", "nightly"}, 2,
       "cronledger runs: no job named \"nightly\" in the configuration or the ledger\n"},
      {{"runs", "--run", "999999"}, 1, "cronledger runs: no run with id 999999\n"},
      {{"events", "--job", "nightly"}, 2,
       "cronledger events: no job named \"nightly\" in the configuration or the ledger\n"},
      {{"events", "--run", "999999"}, 1, "cronledger events: no run with id 999999\n"},
      {{"gaps", "--job", "nightly"}, 2,
       "cronledger gaps: no job named \"nightly\" in the configuration\n"},
      {{"verify", "--job", "nightly", "--date", "2024-02-29"}, 2,
       "cronledger verify: no job named \"nightly\" in the configuration\n"},
  };
  for (const auto& c : cases) {
    for (const bool json : {false, true}) {
      std::vector<std::string> args = c.args;
      if (json) args.push_back("--json");
      SCOPED_TRACE(Show(args));
      const ProcessResult local = Local(args);
      const ProcessResult remote = Remote(args);
      EXPECT_EQ(local.exit_code, c.exit_code);
      EXPECT_EQ(local.err, c.err);
      EXPECT_EQ(local.out, "");
      EXPECT_EQ(remote.exit_code, local.exit_code);
      EXPECT_EQ(remote.err, local.err);
      EXPECT_EQ(remote.out, local.out);
    }
  }
}

// More runs than one API page (1000): the command walks the cursor.
TEST(ServerCliPages, ListingsLongerThanAnApiPageAreFetchedPageByPage) {
  ClearServerEnvironment();
  Ledger ledger("pages");
  // 1500 more runs of a partition no longer configured (cancelled, so
  // nothing expects or claims them).
  Sql(ledger.dir.File("ledger.db"),
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500) "
      "INSERT INTO runs (job, partition, period, business_date, scheduled_at, job_version, "
      "state, attempts, created_at, updated_at) "
      "SELECT 'report', 'bulk', printf('1990-01-01T%05d', i), '1990-01-01', "
      "631152000000 + i * 1000, 1, 'cancelled', 0, 631152000000, 631152000000 FROM n");
  ASSERT_TRUE(ledger.serve.Start());
  const std::string url = ledger.serve.url();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"runs", "--limit", "100000", "--json"},
           {"runs", "--limit", "1200"},
           {"runs", "--partition", "bulk", "--limit", "2000", "--json"}}) {
    SCOPED_TRACE(Show(args));
    const auto local = Cli(ledger.config, "", args);
    const auto remote = Cli(ledger.config, url, args);
    ASSERT_EQ(local.exit_code, 0) << local.err;
    EXPECT_EQ(remote.exit_code, 0) << remote.err;
    EXPECT_EQ(remote.out, local.out);
  }
  const Json all =
      Json::parse(Cli(ledger.config, url, {"runs", "--limit", "100000", "--json"}).out);
  EXPECT_EQ(all["runs"].size(), 1534u);
  EXPECT_EQ(Lines(Cli(ledger.config, url, {"runs", "--limit", "1200"}).out).size(), 1201u);
}

TEST_F(ServerCli, AnUnreachableServerIsExit3) {
  // Port 1 on loopback: nothing listens there.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"status"},
                                             {"runs"},
                                             {"gaps"},
                                             {"pause", "--job", "report", "--reason", "x"}}) {
    SCOPED_TRACE(Show(args));
    const auto r = Cli(ledger_->config, "http://127.0.0.1:1", args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    // The address, and what to check.
    EXPECT_NE(r.err.find("the server at http://127.0.0.1:1 cannot be reached: nothing accepted "
                         "the connection: is `cronledger serve` running there, and is that its "
                         "server.listen address"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(ServerCli, ABadTokenIsExit2SayingWhichTokenWasUsedNeverItsValue) {
  const std::string secret = "not-the-servers-token-0123456789";
  setenv("CRONLEDGER_AUTH_TOKEN", secret.c_str(), 1);
  const auto r = Remote({"status"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("refused the token from $CRONLEDGER_AUTH_TOKEN"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(secret), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(ServerCli, TheTokenComesFromTheEnvironmentElseTheFileBesideTheConfig) {
  // The file serve wrote: found through --config's folder.
  const std::string file = ledger_->dir.File("cronledger.token");
  ASSERT_TRUE(std::filesystem::exists(file));
  std::string token = ReadFile(file);
  while (!token.empty() && token.back() == '\n') token.pop_back();
  ASSERT_GE(token.size(), 16u);
  EXPECT_EQ(Remote({"status"}).exit_code, 0);

  // Another folder has no token file: refused before any call, naming it.
  TempDir other("cronledger-server-cli-other");
  const std::string elsewhere = other.File("cronledger.toml");  // need not exist
  auto r = Cli(elsewhere, url_, {"status"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no API token for --server"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(other.File("cronledger.token")), std::string::npos) << r.err;

  // The environment's token is used there, the config file not read.
  setenv("CRONLEDGER_AUTH_TOKEN", token.c_str(), 1);
  r = Cli(elsewhere, url_, {"status", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["jobs"][0]["name"], "report");
  // ...and it wins over the file.
  setenv("CRONLEDGER_AUTH_TOKEN", "wrong-token-0123456789abcdef", 1);
  EXPECT_EQ(Remote({"status"}).exit_code, 2);
}

TEST_F(ServerCli, CronledgerServerIsTheDefaultAndTheFlagWins) {
  TempDir other("cronledger-server-cli-env");
  const std::string local_status = Local({"status"}).out;
  ASSERT_NE(local_status.find("report"), std::string::npos);
  // No config there: locally `status` is a config error...
  const std::string missing = other.File("cronledger.toml");
  std::string token = ReadFile(ledger_->dir.File("cronledger.token"));
  while (!token.empty() && token.back() == '\n') token.pop_back();
  setenv("CRONLEDGER_AUTH_TOKEN", token.c_str(), 1);
  auto r = Cronledger({"status", "--config", missing});
  ASSERT_EQ(r.exit_code, 2) << r.err;
  // ...and with $CRONLEDGER_SERVER it asks the server.
  setenv("CRONLEDGER_SERVER", url_.c_str(), 1);
  r = Cronledger({"status", "--config", missing});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("report"), std::string::npos) << r.out;
  // --server wins over it: here a server that is down.
  r = Cronledger({"status", "--config", missing, "--server", "http://127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // --server "" works on the store even with $CRONLEDGER_SERVER set.
  r = Cronledger({"status", "--config", ledger_->config, "--server", ""});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WithoutNodeBeats(r.out), WithoutNodeBeats(local_status));  // serve beats every 5 s
}

TEST_F(ServerCli, UsageErrorsAreExit2WhetherFoundHereOrByTheServer) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      // Found by the command line before any call (as locally).
      {{"runs", "--state", "done"}, "--state \"done\" is not a run state"},
      {{"verify", "--job", "report", "--date", "2024-02-30"}, "is not a date"},
      // The API's largest page of events (it has no cursor).
      {{"events", "--limit", "1001"}, "--limit 1001 is out of range; use 1 to 1000 (the server answers at most that many at once)"},
      {{"runs", "--partition", "no such partition"},
       "--partition \"no such partition\" is not a partition id"},
      // Found by the server: a job it does not have.
      {{"verify", "--job", "nightly", "--date", "2024-02-29"}, "no job named \"nightly\""},
      {{"gaps", "--job", "nightly"}, "no job named \"nightly\""},
      // Not a URL.
      {{"status", "--server", "localhost:8377"}, "is not a server URL"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(Show(c.args));
    const bool has_server = std::find(c.args.begin(), c.args.end(), "--server") != c.args.end();
    const auto r = has_server ? Cli(ledger_->config, "", c.args) : Remote(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

// ---- actions: two identical ledgers, one through serve ------------------------------------------

class ServerCliActions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ClearServerEnvironment();
    local_ = new Ledger("local");
    remote_ = new Ledger("remote");
    if (remote_->serve.Start()) url_ = remote_->serve.url();
  }
  static void TearDownTestSuite() {
    delete remote_;
    delete local_;
  }
  void SetUp() override {
    ClearServerEnvironment();
    ASSERT_FALSE(url_.empty());
  }

  // Runs `args` (with --by alice) on the local ledger and through serve on
  // its twin; expects the same stdout, stderr and exit code, and returns
  // the remote result.
  static ProcessResult Both(std::vector<std::string> args, int expected_exit) {
    args.insert(args.end(), {"--by", "alice"});
    SCOPED_TRACE(Show(args));
    const ProcessResult local = Cli(local_->config, "", args);
    const ProcessResult remote = Cli(remote_->config, url_, args);
    EXPECT_EQ(local.exit_code, expected_exit) << local.err;
    EXPECT_EQ(remote.exit_code, expected_exit) << remote.err;
    EXPECT_EQ(remote.out, local.out);
    EXPECT_EQ(remote.err, local.err);
    if (expected_exit != 0) {
      EXPECT_NE(remote.err, "");
    }
    return remote;
  }
  static int64_t RunId(const std::string& partition, const std::string& date) {
    const auto r = Cli(remote_->config, url_,
                       {"runs", "--partition", partition, "--date", date, "--json"});
    const Json runs = Json::parse(r.out, nullptr, false)["runs"];
    EXPECT_EQ(runs.size(), 1u) << r.out << r.err;
    return runs.empty() ? 0 : runs[0]["id"].get<int64_t>();
  }
  // The newest event, read through the server.
  static Json LastEvent() {
    const auto r = Cli(remote_->config, url_, {"events", "--limit", "1", "--json"});
    const Json events = Json::parse(r.out, nullptr, false)["events"];
    EXPECT_EQ(events.size(), 1u) << r.out << r.err;
    return events.empty() ? Json() : events[0];
  }
  static void ExpectLastEvent(const std::string& type, const std::string& reason) {
    const Json e = LastEvent();
    EXPECT_EQ(e["type"], type) << e;
    EXPECT_EQ(e["actor"], "local") << e;  // the token acts, for --by
    EXPECT_EQ(e["on_behalf_of"], "alice") << e;
    EXPECT_EQ(e["reason"], reason) << e;
  }

  static inline Ledger* local_ = nullptr;
  static inline Ledger* remote_ = nullptr;  // the one serve runs on
  static inline std::string url_;
};

TEST_F(ServerCliActions, PauseAndResumeRecordTheActorAndAStateRefusalIsExit1) {
  auto r = Both({"pause", "--job", "report", "--reason", "quarter close"}, 0);
  EXPECT_EQ(r.out, "paused job report\n");
  ExpectLastEvent("paused", "quarter close");
  r = Both({"pause", "--job", "report", "--reason", "again"}, 1);
  EXPECT_NE(r.err.find("already paused"), std::string::npos) << r.err;
  r = Both({"resume", "--job", "report", "--reason", "closed"}, 0);
  EXPECT_EQ(r.out, "resumed job report\n");
  ExpectLastEvent("resumed", "closed");
  r = Both({"pause", "--all", "--reason", "migration"}, 0);
  r = Both({"resume", "--all", "--reason", "migrated"}, 0);
  EXPECT_EQ(r.out, "resumed everything\n");
  // --type and --actor filter alike through the server and locally; the
  // actor matches the name acted for (--by), not only the token's.
  for (const std::string& url : {std::string(), url_}) {
    const auto events = Cli(url.empty() ? local_->config : remote_->config, url,
                            {"events", "--type", "paused", "--actor", "alice", "--json"});
    ASSERT_EQ(events.exit_code, 0) << events.err;
    const Json paused = Json::parse(events.out)["events"];
    ASSERT_EQ(paused.size(), 2u) << events.out;
    EXPECT_EQ(paused[0]["reason"], "quarter close");
    EXPECT_EQ(paused[1]["reason"], "migration");
    const auto nobody = Cli(url.empty() ? local_->config : remote_->config, url,
                            {"events", "--actor", "mallory", "--json"});
    EXPECT_EQ(Json::parse(nobody.out)["events"].size(), 0u) << nobody.out << nobody.err;
  }
  // A job the server does not have is a usage error, as locally.
  r = Both({"pause", "--job", "nightly", "--reason", "x"}, 2);
}

TEST_F(ServerCliActions, RetryCancelResolveAndApproveMoveRunsAsLocally) {
  const std::string failed = std::to_string(RunId("globex", "2008-02-29"));
  auto r = Both({"retry", failed, "--reason", "input fixed"}, 0);
  EXPECT_EQ(r.out, "run " + failed + " queued for a new attempt\n");
  ExpectLastEvent("retry", "input fixed");
  r = Both({"retry", failed, "--reason", "again"}, 1);
  EXPECT_NE(r.err.find("only failed or unknown runs can be retried"), std::string::npos) << r.err;
  Both({"retry", "999999", "--reason", "x"}, 1);

  const std::string cancel = std::to_string(RunId("initech", "2008-02-29"));
  r = Both({"cancel", cancel, "--reason", "not needed"}, 0);
  EXPECT_EQ(r.out, "run " + cancel + " cancelled\n");
  ExpectLastEvent("cancel", "not needed");

  const std::string unknown = std::to_string(RunId("acme", "2016-02-29"));
  r = Both({"resolve", unknown, "--as", "succeeded", "--reason", "checked by hand", "--json"}, 0);
  EXPECT_EQ(Json::parse(r.out)["state"], "succeeded") << r.out;
  ExpectLastEvent("resolve", "checked by hand");
  const std::string in_doubt = std::to_string(RunId("globex", "2000-02-29"));
  r = Both({"resolve", in_doubt, "--effect", "fax-1", "--as", "committed", "--reason", "sent"}, 0);
  EXPECT_EQ(r.out, "effect \"fax-1\" of run " + in_doubt + " resolved as committed; run " +
                       in_doubt + " queued for a new attempt\n");
  Both({"resolve", in_doubt, "--as", "succeeded", "--reason", "x"}, 1);

  const std::string waiting = std::to_string(RunId("hooli", "2012-02-29"));
  r = Both({"approve", "--job", "report", "--run", waiting, "--reason", "old gap: do it"}, 0);
  EXPECT_EQ(r.out, "approved 1 run(s) of report\n");
  ExpectLastEvent("approve", "old gap: do it");
  r = Both({"approve", "--job", "report", "--reason", "more?"}, 1);
  EXPECT_NE(r.err.find("awaiting approval"), std::string::npos) << r.err;
}

TEST_F(ServerCliActions, RerunAndBackfillPreviewThenActWithYes) {
  // Preview only: nothing changes.
  auto r = Both({"rerun", "--job", "report", "--date", "2004-02-29", "--reason", "fixed"}, 0);
  EXPECT_NE(r.out.find("would queue 2 run(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing done"), std::string::npos) << r.out;
  r = Both({"rerun", "--job", "report", "--date", "2004-02-29", "--reason", "fixed", "--json"}, 0);
  const Json preview = Json::parse(r.out);
  ASSERT_TRUE(preview["preview_digest"].is_string()) << r.out;
  EXPECT_EQ(preview["would_queue"].size(), 2u);
  // A digest the ledger no longer matches: refused with the new preview.
  r = Both({"rerun", "--job", "report", "--date", "2004-02-29", "--reason", "fixed", "--yes",
            "--preview-digest", "0000"},
           1);
  EXPECT_NE(r.out.find("preview digest " + preview["preview_digest"].get<std::string>()),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("the ledger changed since the preview 0000"), std::string::npos) << r.err;
  // --yes with the preview's digest acts.
  r = Both({"rerun", "--job", "report", "--date", "2004-02-29", "--reason", "fixed", "--yes",
            "--preview-digest", preview["preview_digest"].get<std::string>(), "--json"},
           0);
  const Json done = Json::parse(r.out);
  EXPECT_EQ(done["queued"].size(), 2u) << r.out;
  ExpectLastEvent("rerun", "fixed");
  // Nothing left to rerun there: exit 1.
  r = Both({"rerun", "--job", "report", "--date", "2004-02-29", "--only", "failed", "--reason",
            "again", "--yes"},
           1);
  EXPECT_NE(r.err.find("nothing to queue"), std::string::npos) << r.err;

  // Backfill with --yes alone: the preview is fetched first, then confirmed.
  r = Both({"backfill", "--job", "report", "--from", "2024-02-29", "--to", "2024-02-29",
            "--reason", "outage"},
           0);
  EXPECT_NE(r.out.find("would queue 2 run(s)"), std::string::npos) << r.out;
  r = Both({"backfill", "--job", "report", "--from", "2024-02-29", "--to", "2024-02-29",
            "--reason", "outage", "--yes"},
           0);
  EXPECT_EQ(r.out.rfind("queued 2 run(s) of report (event ", 0), 0u) << r.out;
  ExpectLastEvent("backfill", "outage");
  Both({"backfill", "--job", "nightly", "--from", "2024-02-29", "--to", "2024-02-29", "--reason",
        "x"},
       2);
}

TEST_F(ServerCliActions, TriggerRefusesWhenNothingIsDueAsLocally) {
  const auto r = Both({"trigger", "--job", "report", "--reason", "now"}, 1);
  EXPECT_NE(r.err.find("nothing due yet"), std::string::npos) << r.err;
  Both({"trigger", "--job", "nightly", "--reason", "now"}, 2);
}

TEST_F(ServerCliActions, AStoreTheServerCannotUseIsExit3) {
  // Another connection holds the ledger's write lock: serve gives up after
  // the store's busy timeout and answers 503.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(remote_->dir.File("ledger.db").c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 30000);  // serve may be writing: wait for it
  const bool locked = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  ProcessResult r;
  if (locked) {
    r = Cli(remote_->config, url_, {"pause", "--job", "report", "--reason", "store busy"});
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  sqlite3_close(db);
  ASSERT_TRUE(locked);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("is unavailable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HTTP 503"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// With [[auth.token]] entries: what a token's role may do, and who acts.
TEST(ServerCliRoles, AReadTokenReadsButMayNotActAndTheTokenActsForTheOsUser) {
  ClearServerEnvironment();
  const std::string read_secret = "read-secret-0123456789abcdef";
  const std::string operate_secret = "operate-secret-0123456789abcdef";
  setenv("CL_TEST_CLI_READ", read_secret.c_str(), 1);
  setenv("CL_TEST_CLI_OPERATE", operate_secret.c_str(), 1);
  Ledger ledger("roles", R"(
[[auth.token]]
name = "dash"
role = "read"
secret_env = "CL_TEST_CLI_READ"

[[auth.token]]
name = "oncall"
role = "operate"
secret_env = "CL_TEST_CLI_OPERATE"
)");
  ASSERT_TRUE(ledger.serve.Start());
  const std::string url = ledger.serve.url();

  // With tokens configured serve keeps no token file: one must be given.
  auto r = Cli(ledger.config, url, {"status"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no API token"), std::string::npos) << r.err;

  setenv("CRONLEDGER_AUTH_TOKEN", read_secret.c_str(), 1);
  r = Cli(ledger.config, url, {"status"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Cli(ledger.config, url, {"pause", "--job", "report", "--reason", "x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the token from $CRONLEDGER_AUTH_TOKEN may not do this"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("role read"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(read_secret), std::string::npos) << r.err;

  setenv("CRONLEDGER_AUTH_TOKEN", operate_secret.c_str(), 1);
  r = Cli(ledger.config, url, {"pause", "--job", "report", "--reason", "audit"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Cli(ledger.config, url, {"events", "--limit", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json e = Json::parse(r.out)["events"][0];
  EXPECT_EQ(e["type"], "paused") << e;
  EXPECT_EQ(e["reason"], "audit") << e;
  // The token acts, and records the OS user who ran the command beside it
  // (--by's default): no name the caller gives replaces the token's.
  const passwd* pw = getpwuid(geteuid());
  ASSERT_NE(pw, nullptr);
  EXPECT_EQ(e["actor"], "oncall") << e;
  EXPECT_EQ(e["on_behalf_of"], std::string(pw->pw_name)) << e;
  r = Cli(ledger.config, url, {"resume", "--job", "report", "--reason", "audit", "--by", "alice"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Cli(ledger.config, url, {"events", "--limit", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ON_BEHALF_OF"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oncall"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("alice"), std::string::npos) << r.out;
  ClearServerEnvironment();
}

}  // namespace
}  // namespace cronledger
