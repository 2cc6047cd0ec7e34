// What is PostgreSQL's own beyond the conformance suite: the database clock,
// LISTEN/NOTIFY, migrating nodes that start together, the SQL rewrite and
// keeping passwords out of messages. Against the test server (ctest's
// pg_server fixture).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/conformance.h"
#include "store/postgres/pg_db.h"
#include "store/postgres/postgres_store.h"
#include "store/store_factory.h"

namespace cronledger::testing {
namespace {

using store::PostgresOptions;
using store::PostgresStore;

void Admin(const std::string& sql) {
  PGconn* c = PQconnectdb(TestPostgresUrl().c_str());
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  PQclear(PQexec(c, sql.c_str()));
  PQfinish(c);
}

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(TestPostgresUrl().empty()) << "no PostgreSQL test server";
    static std::atomic<int> n{0};
    schema_ = "p_" + std::to_string(getpid()) + "_" + std::to_string(n++);
    Admin("CREATE SCHEMA " + schema_);
  }
  void TearDown() override { Admin("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE"); }

  std::unique_ptr<PostgresStore> Open(bool database_clock) {
    PostgresOptions o;
    o.url = TestPostgresSchemaUrl(schema_);
    o.database_clock = database_clock;
    auto s = PostgresStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  std::string schema_;
};

TEST_F(PostgresStoreTest, TheDatabaseClockDecidesWhateverNowACallerPasses) {
  auto s = Open(/*database_clock=*/true);
  ASSERT_NE(s, nullptr);
  const store::Instant long_ago = InstantAt("2000-01-01T00:00:00Z");
  const store::Instant before = *s->LedgerNow(long_ago);
  EXPECT_GT(before, InstantAt("2026-01-01T00:00:00Z"));  // the server's, not the caller's
  PlanPartitionsDue(*s, 1);
  store::ReleaseParams r;
  r.job = "j";
  r.policy.misfire_grace = std::chrono::hours{24 * 365 * 100};
  r.now = long_ago;  // in 2000 nothing of 2026 would be due; by the database's clock it is
  ASSERT_EQ(s->RunRelease(r)->released, 1);
  store::ClaimRule rule;
  rule.job = "j";
  rule.lease_ttl = std::chrono::minutes{5};
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"x"};
  auto claimed = s->RunClaim({long_ago, "n1", 1, {rule}});
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_EQ(claimed->size(), 1u);
  const store::Instant after = *s->LedgerNow(long_ago);
  EXPECT_GE(claimed->at(0).lease_expires_at, before + std::chrono::minutes{5});
  EXPECT_LE(claimed->at(0).lease_expires_at, after + std::chrono::minutes{5});
  // Nothing has expired by the database's clock, whatever the caller thinks.
  EXPECT_TRUE(s->RunListExpiredLeases(InstantAt("2100-01-01T00:00:00Z"), 10)->empty());
}

TEST_F(PostgresStoreTest, ANodesReleaseWakesAnotherNodesListener) {
  auto listening = Open(false);
  auto releasing = Open(false);
  ASSERT_NE(listening, nullptr);
  ASSERT_NE(releasing, nullptr);
  std::mutex mu;
  std::condition_variable cv;
  int wakes = 0;
  listening->WatchForWork([&] {
    std::lock_guard lock(mu);
    ++wakes;
    cv.notify_all();
  });
  // The listener wakes once when it (re)connects: notifications sent while
  // it was away would be lost.
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return wakes >= 1; }));
  }
  const int before = [&] {
    std::lock_guard lock(mu);
    return wakes;
  }();
  PlanPartitionsDue(*releasing, 2);
  ASSERT_EQ(ReleasePartitionsDue(*releasing), 2);
  std::unique_lock lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return wakes > before; }));
}

// A connection of the test's own, to hold the ledger's advisory locks as
// another node's transaction would, and to see who waits for them.
class LockHolder {
 public:
  explicit LockHolder(const std::string& url) : c_(PQconnectdb(url.c_str())) {}
  ~LockHolder() { PQfinish(c_); }
  bool Exec(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
  }
  // Connections named `app` (application_name) waiting for advisory lock `key`.
  int Waiting(const std::string& app, int64_t key) {
    return Count(fmt::format("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a "
                             "ON a.pid = l.pid WHERE a.application_name = '{}' AND "
                             "l.locktype = 'advisory' AND l.objid = {} AND NOT l.granted",
                             app, key));
  }
  // The one number `sql` answers; -1 on error.
  int Count(const std::string& sql) {
    PGresult* r = PQexec(c_, sql.c_str());
    const int n = PQresultStatus(r) == PGRES_TUPLES_OK ? std::atoi(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return n;
  }
  // Polls until `app` waits for `key`; false if it never does.
  bool SeesWaiting(const std::string& app, int64_t key) {
    for (int i = 0; i < 600; ++i) {
      if (Waiting(app, key) > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

 private:
  PGconn* c_;
};

// A database of the test's own, dropped with whatever is still connected.
class OwnDatabase {
 public:
  explicit OwnDatabase(std::string name) : name_(std::move(name)) {
    Admin("CREATE DATABASE " + name_);
  }
  ~OwnDatabase() { Admin("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)"); }
  std::string Url() const { return TestPostgresDatabaseUrl(name_); }

 private:
  std::string name_;
};

// Several nodes' group commits and one claim at a time write side by side
// (sql::WriteKind): a node's finished runs do not queue behind another
// node's claim. Claims still wait for each other, and whatever checks and
// then writes (here a pause) waits for both.
//
// In a database of its own: the advisory locks are the database's, so a
// test of another schema asking for the write lock exclusively while this
// one holds it shared would queue this test's shared requests behind its
// own, and the test would see that instead of what it checks.
TEST_F(PostgresStoreTest, WorkerWritesRunBesideAClaimWhileClaimsAndOthersWait) {
  const OwnDatabase database(schema_);
  const std::string url = database.Url();
  PostgresOptions o;
  o.url = url + (url.find('?') == std::string::npos ? "?" : "&") + "application_name=" + schema_;
  o.database_clock = false;
  auto opened = PostgresStore::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto& s = **opened;
  PlanPartitionsDue(s, 2);
  ASSERT_EQ(ReleasePartitionsDue(s), 2);
  store::ClaimRule rule;
  rule.job = "j";
  rule.lease_ttl = std::chrono::minutes{5};
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"x"};
  const store::Instant now = InstantAt("2026-11-05T09:00:02Z");
  auto claimed = s.RunClaim({now, "n1", 1, {rule}});
  ASSERT_TRUE(claimed.ok() && claimed->size() == 1u);
  const store::ClaimedRun run = claimed->at(0);

  // Opened first: opening takes the write lock (migrations).
  auto claimer = PostgresStore::Open(o);
  auto pauser = PostgresStore::Open(o);
  ASSERT_TRUE(claimer.ok() && pauser.ok());

  // Declared before the lock holder: destroyed after it has let go, should
  // an assertion end the test early.
  std::future<Result<std::vector<Status>>> written;
  std::future<Result<std::vector<store::ClaimedRun>>> claiming;
  std::future<Status> pausing;
  // Another node is inside a claim.
  LockHolder other(url);
  ASSERT_TRUE(other.Exec(fmt::format("BEGIN; SELECT pg_advisory_xact_lock_shared({}); "
                                     "SELECT pg_advisory_xact_lock({})",
                                     store::postgres::kWriteLockKey,
                                     store::postgres::kClaimLockKey)));
  store::WorkerWrite w;
  w.finish.emplace();
  w.finish->run_id = run.run.id;
  w.finish->token = run.token;
  w.finish->now = now;
  w.finish->node = "n1";
  w.finish->exit_status = 0;
  w.finish->decision.state = ledger::RunState::kSucceeded;
  written = std::async(std::launch::async, [&] { return s.RunApplyWrites({w}); });
  const bool wrote_beside = written.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  // A claim and a pause wait until the other node commits.
  claiming = std::async(std::launch::async, [&] {
    return (*claimer)->RunClaim({now, "n2", 1, {rule}});
  });
  const bool claim_waited = other.SeesWaiting(schema_, store::postgres::kClaimLockKey);
  pausing = std::async(std::launch::async, [&] {
    return (*pauser)->JobSetPaused({std::string("j"), true, "ops", "maintenance", now});
  });
  const bool pause_waited = other.SeesWaiting(schema_, store::postgres::kWriteLockKey);
  ASSERT_TRUE(other.Exec("COMMIT"));

  EXPECT_TRUE(wrote_beside) << "the group commit waited for another node's claim";
  auto results = written.get();
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_TRUE(results->at(0).ok()) << results->at(0).ToString();
  EXPECT_EQ(s.RunGet(run.run.id)->state, ledger::RunState::kSucceeded);
  EXPECT_TRUE(claim_waited) << "a claim ran beside another claim";
  EXPECT_TRUE(pause_waited) << "a pause ran beside a claim";
  auto second = claiming.get();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->size(), 1u);
  EXPECT_TRUE(pausing.get().ok());
}

// The database shows whose connections these are (pg_stat_activity), as
// "cronledger" unless the URL names them itself.
TEST_F(PostgresStoreTest, ConnectionsNameThemselvesToTheDatabase) {
  const OwnDatabase database(schema_);
  const std::string url = database.Url();
  const std::string sep = url.find('?') == std::string::npos ? "?" : "&";
  PostgresOptions o;
  o.url = url;
  auto plain = PostgresStore::Open(o);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  o.url = url + sep + "application_name=billing-node-1";
  auto named = PostgresStore::Open(o);
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  LockHolder admin(TestPostgresUrl());
  ASSERT_TRUE(admin.Exec("SELECT 1"));
  EXPECT_EQ(admin.Count(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' "
                                    "AND application_name = 'cronledger'",
                                    schema_)),
            1);
  EXPECT_EQ(admin.Count(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' "
                                    "AND application_name = 'billing-node-1'",
                                    schema_)),
            1);
}

TEST_F(PostgresStoreTest, NodesStartingTogetherMigrateOnce) {
  std::vector<std::thread> threads;
  std::vector<Status> opened(6);
  for (std::size_t i = 0; i < opened.size(); ++i) {
    threads.emplace_back([&, i] {
      PostgresOptions o;
      o.url = TestPostgresSchemaUrl(schema_);
      auto s = PostgresStore::Open(o);
      opened[i] = s.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& s : opened) EXPECT_TRUE(s.ok()) << s.ToString();
  auto s = Open(false);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->GetSchemaInfo()->version, store::kPostgresSchemaVersion);
}

// Rolling upgrades: a node of the previous release (schema 5) keeps working
// on a database a node of this release migrated, and a release that needs a
// newer schema than it has is refused.
TEST_F(PostgresStoreTest, TwoReleasesShareTheDatabaseDuringARollingUpgrade) {
  PostgresOptions previous;
  previous.url = TestPostgresSchemaUrl(schema_);
  previous.database_clock = false;
  previous.schema_version = 5;
  auto old_node = PostgresStore::Open(previous);
  ASSERT_TRUE(old_node.ok()) << old_node.status().ToString();
  EXPECT_EQ((*old_node)->GetSchemaInfo()->version, 5);
  PlanPartitionsDue(**old_node, 2);

  auto new_node = Open(false);  // migrates to this release's schema
  ASSERT_NE(new_node, nullptr);
  EXPECT_EQ(new_node->GetSchemaInfo()->version, store::kPostgresSchemaVersion);
  ASSERT_TRUE(new_node->NodeHeartbeat({"new", "0.2.0", "", InstantAt("2026-11-05T08:00:00Z"),
                                       InstantAt("2026-11-05T08:00:01Z")})
                  .ok());
  // The old node, restarted on the newer schema, still plans, releases and claims.
  old_node->reset();
  old_node = PostgresStore::Open(previous);
  ASSERT_TRUE(old_node.ok()) << old_node.status().ToString();
  EXPECT_EQ(ReleasePartitionsDue(**old_node), 2);
  store::ClaimRule rule;
  rule.job = "j";
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"x"};
  EXPECT_EQ((*old_node)->RunClaim({InstantAt("2026-11-05T09:00:02Z"), "old", 1, {rule}})->size(),
            1u);
  EXPECT_EQ(new_node->RunClaim({InstantAt("2026-11-05T09:00:02Z"), "new", 1, {rule}})->size(), 1u);

  // A later release that needs a newer schema from every node.
  Admin(fmt::format("UPDATE {}.schema_meta SET version = {}, compatible_from = {}", schema_,
                    store::kPostgresSchemaVersion + 1, store::kPostgresSchemaVersion + 1));
  old_node->reset();
  auto refused = PostgresStore::Open(previous);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("upgrade cronledger"), std::string::npos);
}

TEST_F(PostgresStoreTest, AnUnreachableServerIsUnavailableAndTheMessageHasNoPassword) {
  PostgresOptions o;
  o.url = "postgresql://cl:s3cret@127.0.0.1:1/cl";
  auto s = PostgresStore::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("cl:***@127.0.0.1:1"), std::string::npos)
      << s.status().message();
  // A URL libpq cannot read is quoted in libpq's own message.
  o.url = "postgresql://cl:s3cret@[::1/cl";
  auto unread = PostgresStore::Open(o);
  ASSERT_FALSE(unread.ok());
  EXPECT_EQ(unread.status().message().find("s3cret"), std::string::npos)
      << unread.status().message();
}

TEST(PostgresSql, ParametersAreRewrittenOutsideQuotesAndSqliteHintsDropped) {
  int n = 0;
  EXPECT_EQ(store::postgres::RewriteParameters(
                "SELECT * FROM runs WHERE a = ? AND b = ?3 AND c = ? AND d = '?' AND +job IN (?)",
                &n),
            "SELECT * FROM runs WHERE a = $1 AND b = $3 AND c = $4 AND d = '?' AND job IN ($5)");
  EXPECT_EQ(n, 5);
  EXPECT_EQ(store::postgres::RewriteParameters("SELECT attempts + 1, \"?\" FROM t", &n),
            "SELECT attempts + 1, \"?\" FROM t");
  EXPECT_EQ(n, 0);
}

TEST(PostgresSql, PasswordsAreRedacted) {
  using store::postgres::RedactUrl;
  EXPECT_EQ(RedactUrl("postgresql://cl:pw@db/cl"), "postgresql://cl:***@db/cl");
  EXPECT_EQ(RedactUrl("postgresql://cl@db/cl"), "postgresql://cl@db/cl");
  EXPECT_EQ(RedactUrl("postgresql://db/cl?password=pw&sslmode=require"),
            "postgresql://db/cl?password=***&sslmode=require");
  EXPECT_EQ(RedactUrl("host=db password=pw dbname=cl"), "host=db password=*** dbname=cl");
}

TEST(PostgresSql, SqlStatesMapToWhatCallersDoAboutThem) {
  using store::postgres::MapSqlState;
  EXPECT_EQ(MapSqlState("08006", "gone").code(), StatusCode::kUnavailable);
  EXPECT_EQ(MapSqlState("40001", "serialization").code(), StatusCode::kUnavailable);
  EXPECT_EQ(MapSqlState("57P01", "admin shutdown").code(), StatusCode::kUnavailable);
  EXPECT_EQ(MapSqlState("23505", "unique").code(), StatusCode::kConflict);
  EXPECT_EQ(MapSqlState("53100", "disk full").code(), StatusCode::kIOError);
  EXPECT_EQ(MapSqlState("42601", "syntax").code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace cronledger::testing
