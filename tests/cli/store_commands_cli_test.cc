// `cronledger backup`, `cronledger migrate-store` and the node list of
// `status`, run as real subprocesses against real SQLite files and the test
// PostgreSQL server (ctest's pg_server fixture).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/subprocess.h"
#include "common/temp_dir.h"
#include "cronledger/clock.h"
#include "cronledger/schedule.h"
#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_factory.h"

namespace cronledger {
namespace {

using Json = nlohmann::ordered_json;
using testing::Cronledger;
using TempDir = testing::TempDir;

store::Instant At(const std::string& rfc3339) {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(*ParseRfc3339(rfc3339));
}

std::string ConfigText(const std::string& store) {
  return R"([server]
listen = "127.0.0.1:0"
store = ")" + store + R"("

[[job]]
name = "deliver"
schedule = "0 9 * * *"
timezone = "UTC"

  [[job.step]]
  name = "send"
  command = ["/bin/true"]
)";
}

std::unique_ptr<store::SqliteStore> OpenSqlite(const std::string& path) {
  store::SqliteOptions o;
  o.path = path;
  o.synchronous_full = false;
  auto s = store::SqliteStore::Open(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

// Plans `count` runs of `job` (one partition each) for an occurrence
// `first` seconds after 09:00 on 2026-11-05, each with its `planned` event,
// in one transaction.
void PlanRuns(store::Store& s, const std::string& job, int first, int count) {
  store::PlannedOccurrence occ;
  occ.scheduled_at = *ParseRfc3339("2026-11-05T09:00:00Z") + std::chrono::seconds{first};
  occ.local_time = FormatUtc(occ.scheduled_at);
  occ.job_version = 1;
  occ.tzdata = "2025b";
  for (int i = first; i < first + count; ++i) {
    occ.runs.push_back({"p" + std::to_string(i), "2026-11-05", "2026-11-05"});
  }
  store::PlanParams plan;
  plan.job = job;
  plan.occurrences = {occ};
  plan.planned_through = occ.scheduled_at;
  plan.now = At("2026-11-05T08:00:00Z");
  auto r = s.RunPlan(plan);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

int64_t CountEvents(store::Store& s, const std::string& type) {
  store::EventQuery q;
  q.type = type;
  q.limit = 1000000;
  return static_cast<int64_t>(s.EventList(q)->size());
}

TEST(BackupCli, CopiesALedgerBeingWrittenToAsOneConsistentInstantThatOpensAgain) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  auto writer = OpenSqlite(dir.File("ledger.db"));
  ASSERT_TRUE(writer->JobSync({"deliver", R"({"schedule":"0 9 * * *"})",
                               At("2026-11-01T00:00:00Z")})
                  .ok());
  // Another connection keeps planning while the backup runs, as serve would.
  std::atomic<bool> stop{false};
  std::atomic<int> batches{0};
  std::thread busy([&] {
    for (int i = 0; !stop; ++i) {
      PlanRuns(*writer, "deliver", i * 20, 20);
      ++batches;
    }
  });
  while (batches < 3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto backed = Cronledger({"backup", "--config", config, "--to", dir.File("copy.db")});
  stop = true;
  busy.join();
  ASSERT_EQ(backed.exit_code, 0) << backed.err;
  EXPECT_NE(backed.out.find("backed up"), std::string::npos) << backed.out;
  EXPECT_FALSE(std::filesystem::exists(dir.File("copy.db.partial")));

  // The copy is one instant of the ledger: every run with its planned event.
  auto copy = OpenSqlite(dir.File("copy.db"));
  ASSERT_NE(copy, nullptr);
  store::RunQuery q;
  q.limit = 1000000;
  const auto runs = copy->RunList(q)->size();
  EXPECT_GE(runs, 60u);
  EXPECT_EQ(static_cast<int64_t>(runs), CountEvents(*copy, "planned"));
  copy.reset();

  // Restored in place of the ledger, the commands read it.
  TempDir restored;
  std::filesystem::copy_file(dir.File("copy.db"), restored.File("ledger.db"));
  const std::string restored_config =
      restored.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  const auto listed = Cronledger({"runs", "--config", restored_config, "--json", "--limit",
                                  "100000"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(Json::parse(listed.out)["runs"].size(), runs);
}

// An operator action lists the runs it covered (event_runs, a WITHOUT
// ROWID table whose key is not in column order). SQLite 3.40's
// `PRAGMA quick_check` reports a NULL in such a table where there is none,
// so a backup checked that way failed after the first retry or trigger.
TEST(BackupCli, ALedgerWithAnActionOverRunsPassesTheCopysCheck) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  {
    auto s = OpenSqlite(dir.File("ledger.db"));
    ASSERT_TRUE(s->JobSync({"deliver", R"({"schedule":"0 9 * * *"})", At("2026-11-01T00:00:00Z")})
                    .ok());
    PlanRuns(*s, "deliver", 0, 3);
  }
  // The row an action (retry, trigger, backfill...) writes for each run it
  // covers, here for the first planned run's event.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("ledger.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         "INSERT INTO event_runs (event_id, run_id) SELECT id, run_id FROM events "
                         "WHERE run_id IS NOT NULL ORDER BY id LIMIT 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_close(db);
  const auto backed = Cronledger({"backup", "--config", config, "--to", dir.File("copy.db")});
  EXPECT_EQ(backed.exit_code, 0) << backed.err;
  EXPECT_TRUE(std::filesystem::exists(dir.File("copy.db")));
}

TEST(BackupCli, RefusesWhatItCannotDoAndWritesNothing) {
  TempDir dir;
  const std::string pg = dir.Write("pg.toml", ConfigText("postgresql://cl@127.0.0.1:1/cl"));
  const auto refused = Cronledger({"backup", "--config", pg, "--to", dir.File("x.db")});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("pg_dump"), std::string::npos) << refused.err;
  const std::string missing = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  const auto none = Cronledger({"backup", "--config", missing, "--to", dir.File("x.db")});
  EXPECT_EQ(none.exit_code, 3) << none.err;
  EXPECT_FALSE(std::filesystem::exists(dir.File("x.db")));
  const auto nowhere = Cronledger({"backup", "--config", missing, "--to", dir.File("nope/x.db")});
  EXPECT_EQ(nowhere.exit_code, 2) << nowhere.err;
  EXPECT_EQ(nowhere.err, "cronledger backup: --to " + dir.File("nope/x.db") + ": no folder " +
                             dir.File("nope") + " (create it first)\n");
  EXPECT_FALSE(std::filesystem::exists(dir.File("nope")));
  // A folder is not a file to write, with or without its slash.
  for (const std::string& folder : {dir.path(), dir.path() + "/"}) {
    const auto into = Cronledger({"backup", "--config", missing, "--to", folder});
    EXPECT_EQ(into.exit_code, 2) << into.err;
    EXPECT_NE(into.err.find(" is a folder; name the file to write"), std::string::npos)
        << into.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("ledger.db")));
}

// A fresh schema of the test server for one migration target.
class PostgresTarget {
 public:
  PostgresTarget() : schema_("m_" + std::to_string(getpid()) + "_" + std::to_string(next_++)) {
    Admin("CREATE SCHEMA " + schema_);
  }
  ~PostgresTarget() { Admin("DROP SCHEMA " + schema_ + " CASCADE"); }
  std::string Url() const { return testing::TestPostgresSchemaUrl(schema_); }

 private:
  static void Admin(const std::string& sql) {
    PGconn* c = PQconnectdb(testing::TestPostgresUrl().c_str());
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
    PQclear(PQexec(c, sql.c_str()));
    PQfinish(c);
  }
  static inline int next_ = 0;
  std::string schema_;
};

TEST(MigrateStoreCli, CopiesEveryTableAndFencingContinuesAboveTheCopiedTokens) {
  ASSERT_FALSE(testing::TestPostgresUrl().empty()) << "no PostgreSQL test server";
  TempDir dir;
  auto src = OpenSqlite(dir.File("ledger.db"));
  ASSERT_TRUE(
      src->JobSync({"deliver", R"({"schedule":"0 9 * * *"})", At("2026-11-01T00:00:00Z")}).ok());
  PlanRuns(*src, "deliver", 0, 4);
  store::ReleaseParams rel;
  rel.job = "deliver";
  rel.policy.misfire_grace = std::chrono::hours{1};
  rel.now = At("2026-11-05T09:00:01Z");
  ASSERT_TRUE(src->RunRelease(rel).ok());
  store::ClaimRule rule;
  rule.job = "deliver";
  rule.overlap = ledger::Overlap::kAllow;
  rule.lease_ttl = std::chrono::minutes{5};
  rule.steps = {"send"};
  auto claimed = *src->RunClaim({At("2026-11-05T09:00:02Z"), "n1", 2, {rule}});
  ASSERT_EQ(claimed.size(), 2u);
  ASSERT_EQ(src->EffectBegin({claimed[0].run.id, claimed[0].token, "mail-1", "fp",
                              At("2026-11-05T09:00:03Z"), "n1", ""})
                ->outcome,
            store::EffectBeginOutcome::kProceed);
  store::CheckpointSetParams cp;
  cp.run_id = claimed[0].run.id;
  cp.token = claimed[0].token;
  cp.scope = ledger::CheckpointScope::kPartition;
  cp.value = "42";
  cp.now = At("2026-11-05T09:00:03Z");
  cp.node = "n1";
  ASSERT_TRUE(src->CheckpointSet(cp).ok());
  ASSERT_TRUE(src->JobSetPaused({"deliver", true, "ops", "maintenance",
                                 At("2026-11-05T09:00:04Z")})
                  .ok());
  ASSERT_TRUE(src->NodeHeartbeat({"n1", "0.1.0", "127.0.0.1:8377", At("2026-11-05T08:00:00Z"),
                                  At("2026-11-05T09:00:04Z")})
                  .ok());
  ASSERT_TRUE(*src->RoleHold({"alerter", "n1", At("2026-11-05T09:00:04Z")}));
  store::RunQuery all;
  all.limit = 1000;
  const auto runs_before = *src->RunList(all);
  store::EventQuery every;
  every.limit = 100000;
  const auto events_before = *src->EventList(every);
  src.reset();

  PostgresTarget target;
  const auto migrated =
      Cronledger({"migrate-store", "--from", "sqlite:" + dir.File("ledger.db"), "--to",
                  target.Url()});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.err;
  EXPECT_NE(migrated.out.find("counts verified"), std::string::npos) << migrated.out;
  EXPECT_NE(migrated.out.find("runs                    4 row(s)"), std::string::npos)
      << migrated.out;
  // Every table of the ledger is copied and counted: a table that a later
  // migration adds and migrate-store forgets fails here. (schema_meta is
  // the target's own; the fencing row is carried over by its token.)
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(dir.File("ledger.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
              SQLITE_OK);
    sqlite3_stmt* tables = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db,
                                 "SELECT name FROM sqlite_master WHERE type = 'table' AND name "
                                 "NOT IN ('schema_meta', 'fencing') AND name NOT LIKE 'sqlite_%'",
                                 -1, &tables, nullptr),
              SQLITE_OK);
    int count = 0;
    while (sqlite3_step(tables) == SQLITE_ROW) {
      const std::string table = reinterpret_cast<const char*>(sqlite3_column_text(tables, 0));
      ++count;
      EXPECT_NE(migrated.out.find("  " + table + " "), std::string::npos)
          << "table " << table << " was not copied:\n" << migrated.out;
    }
    sqlite3_finalize(tables);
    sqlite3_close(db);
    EXPECT_GE(count, 15);
  }

  store::PostgresOptions o;
  o.url = target.Url();
  o.database_clock = false;
  auto pg = store::PostgresStore::Open(o);
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  store::Store& dst = **pg;
  const auto runs_after = *dst.RunList(all);
  ASSERT_EQ(runs_after.size(), runs_before.size());
  for (std::size_t i = 0; i < runs_after.size(); ++i) {
    EXPECT_EQ(runs_after[i].id, runs_before[i].id);
    EXPECT_EQ(runs_after[i].RunKey(), runs_before[i].RunKey());
    EXPECT_EQ(runs_after[i].state, runs_before[i].state);
    EXPECT_EQ(runs_after[i].updated_at, runs_before[i].updated_at);
  }
  const auto events_after = *dst.EventList(every);
  ASSERT_EQ(events_after.size(), events_before.size());
  for (std::size_t i = 0; i < events_after.size(); ++i) {
    EXPECT_EQ(events_after[i].id, events_before[i].id);
    EXPECT_EQ(events_after[i].type, events_before[i].type);
    EXPECT_EQ(events_after[i].details, events_before[i].details);
  }
  EXPECT_TRUE(dst.JobGet("deliver")->paused);
  EXPECT_EQ(dst.JobGet("deliver")->pause_reason, "maintenance");
  EXPECT_EQ(dst.EffectGet("deliver", "mail-1")->state, ledger::EffectState::kStarted);
  EXPECT_EQ(dst.CheckpointGet(claimed[0].run.id)->partition->value, "42");
  EXPECT_EQ(dst.NodeList()->size(), 1u);
  EXPECT_FALSE(*dst.RoleHold({"alerter", "n2", At("2026-11-05T09:00:05Z")}))
      << "the alerter role's holder came along";
  EXPECT_EQ(dst.AttemptList(claimed[1].run.id)->size(), 1u);

  // The lease holders' tokens still fence after the move: the current one
  // writes, an older one is refused.
  EXPECT_TRUE(dst.RunHeartbeat({claimed[1].run.id, claimed[1].token, At("2026-11-05T09:01:00Z"),
                                std::chrono::minutes{5}, "n1"})
                  .ok());
  EXPECT_EQ(dst.RunHeartbeat({claimed[1].run.id, claimed[0].token, At("2026-11-05T09:01:00Z"),
                              std::chrono::minutes{5}, "n1"})
                .code(),
            StatusCode::kStaleLease);
  // New work gets tokens above every copied one, and new rows new ids.
  ASSERT_TRUE(dst.JobSetPaused({"deliver", false, "ops", "done", At("2026-11-05T09:02:00Z")}).ok());
  auto next = *dst.RunClaim({At("2026-11-05T09:02:01Z"), "n2", 1, {rule}});
  ASSERT_EQ(next.size(), 1u);
  EXPECT_GT(next[0].token, claimed[1].token);
  PlanRuns(dst, "deliver", 100, 1);
  EXPECT_GT(dst.RunList(all)->front().id, runs_before.front().id);

  // A second copy into the same database is refused and changes nothing.
  const auto again =
      Cronledger({"migrate-store", "--from", "sqlite:" + dir.File("ledger.db"), "--to",
                  target.Url()});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("not empty"), std::string::npos) << again.err;
  EXPECT_EQ(dst.RunList(all)->size(), runs_before.size() + 1);
}

// A ledger a node still writes to is not copied: what it writes after the
// copy would be lost. Checked before the target is reached (this one is
// not even listening).
TEST(MigrateStoreCli, RefusesALedgerANodeStillServes) {
  TempDir dir;
  auto src = OpenSqlite(dir.File("ledger.db"));
  // A beat ahead of any now this test runs at: alive.
  ASSERT_TRUE(src->NodeHeartbeat({"web-1", "0.1.0", "127.0.0.1:8377", At("2100-01-01T00:00:00Z"),
                                  At("2100-01-01T00:00:05Z")})
                  .ok());
  src.reset();
  const auto r = Cronledger({"migrate-store", "--from", "sqlite:" + dir.File("ledger.db"), "--to",
                             "postgresql://nobody@127.0.0.1:1/none"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("node web-1 is still serving this ledger (it beat at "
                       "2100-01-01T00:00:05Z and did not stop cleanly): stop every `cronledger "
                       "serve` on it first"),
            std::string::npos)
      << r.err;
  // Once it has stopped cleanly, nothing waits for it: the copy goes on
  // (here to a target that does not answer).
  src = OpenSqlite(dir.File("ledger.db"));
  ASSERT_TRUE(src->NodeStopped({"web-1", "0.1.0", "127.0.0.1:8377", At("2100-01-01T00:00:00Z"),
                                At("2100-01-01T00:00:06Z")})
                  .ok());
  src.reset();
  const auto stopped = Cronledger({"migrate-store", "--from", "sqlite:" + dir.File("ledger.db"),
                                   "--to", "postgresql://nobody@127.0.0.1:1/none"});
  EXPECT_EQ(stopped.exit_code, 3) << stopped.err;
  EXPECT_EQ(stopped.err.find("still serving"), std::string::npos) << stopped.err;
}

TEST(MigrateStoreCli, NamesWrongUrlsAsUsageErrors) {
  EXPECT_EQ(Cronledger({"migrate-store", "--from", "ledger.db", "--to", "postgresql://x/y"})
                .exit_code,
            2);
  EXPECT_EQ(Cronledger({"migrate-store", "--from", "sqlite:ledger.db", "--to", "sqlite:b.db"})
                .exit_code,
            2);
  // What libpq cannot read, or a URL without its database, is refused as
  // server.store is, never with the password in the message.
  const auto unread = Cronledger(
      {"migrate-store", "--from", "sqlite:ledger.db", "--to", "postgresql://u:pwX@[::1/db"});
  EXPECT_EQ(unread.exit_code, 2) << unread.err;
  EXPECT_EQ(unread.err.rfind("cronledger migrate-store: --to: the PostgreSQL URL cannot be read",
                             0),
            0u)
      << unread.err;
  EXPECT_EQ(unread.err.find("pwX"), std::string::npos) << unread.err;
  const auto no_db = Cronledger(
      {"migrate-store", "--from", "sqlite:ledger.db", "--to", "postgresql://u@127.0.0.1:1"});
  EXPECT_EQ(no_db.exit_code, 2) << no_db.err;
  EXPECT_EQ(no_db.err,
            "cronledger migrate-store: --to: the PostgreSQL URL names no database; use "
            "postgresql://USER@HOST/DB\n");
}

TEST(StatusCli, ListsTheNodesThatShareTheLedgerAndWhetherTheyAreAlive) {
  TempDir dir;
  const std::string config = dir.Write("cronledger.toml", ConfigText("sqlite:ledger.db"));
  auto s = OpenSqlite(dir.File("ledger.db"));
  // Beat long ago: known, not alive.
  ASSERT_TRUE(s->NodeHeartbeat({"web-1", "0.1.0", "127.0.0.1:8377", At("2026-01-01T00:00:00Z"),
                                At("2026-01-01T00:00:05Z")})
                  .ok());
  // It held a role then; its lease has long run out.
  ASSERT_TRUE(*s->RoleHold({"other", "web-1", At("2026-01-01T00:00:05Z")}));
  // Alive, and alerting for both.
  const store::Instant now = store::ToInstant(RealClock().Now());
  ASSERT_TRUE(s->NodeHeartbeat({"web-2", "0.1.0", "127.0.0.1:8378", now, now}).ok());
  ASSERT_TRUE(*s->RoleHold({"alerter", "web-2", now, std::chrono::hours{1}}));
  // Stopped cleanly a moment ago: not alive, however recent its last beat.
  ASSERT_TRUE(s->NodeHeartbeat({"web-3", "0.1.0", "127.0.0.1:8379", now, now}).ok());
  ASSERT_TRUE(s->NodeStopped({"web-3", "0.1.0", "127.0.0.1:8379", now, now}).ok());
  s.reset();
  const auto json = Cronledger({"status", "--config", config, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json doc = Json::parse(json.out);
  ASSERT_EQ(doc["nodes"].size(), 3u);
  EXPECT_EQ(doc["nodes"][2]["node"], "web-3");
  EXPECT_EQ(doc["nodes"][2]["alive"], false);
  EXPECT_EQ(doc["nodes"][0]["node"], "web-1");
  EXPECT_EQ(doc["nodes"][0]["alive"], false);
  EXPECT_EQ(doc["nodes"][0]["last_seen_at"], "2026-01-01T00:00:05Z");
  EXPECT_EQ(doc["nodes"][0]["roles"], Json::array());
  EXPECT_EQ(doc["nodes"][1]["node"], "web-2");
  EXPECT_EQ(doc["nodes"][1]["alive"], true);
  EXPECT_EQ(doc["nodes"][1]["roles"], Json::array({"alerter"}));
  const auto text = Cronledger({"status", "--config", config});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("web-1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ROLES"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("alerter"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace cronledger
