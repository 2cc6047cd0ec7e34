// Upgrading a SQLite ledger in use: migration 009 rebuilds the runs and
// run_steps tables (their state checks, spelled without IN lists). The rows,
// their ids, every reference to them and the checks must come through it.
#include <sqlite3.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/temp_dir.h"
#include "store/conformance.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::testing {
namespace {

using store::SqliteOptions;
using store::SqliteStore;

// A plain connection to the ledger file, as an operator's sqlite3 would be.
class RawLedger {
 public:
  explicit RawLedger(const std::string& path) { sqlite3_open(path.c_str(), &db_); }
  ~RawLedger() { sqlite3_close(db_); }
  // Every row of `sql`'s result, columns joined by '|'.
  std::vector<std::string> Rows(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::string row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        if (i > 0) row += '|';
        const auto* v = sqlite3_column_text(s, i);
        row += v ? reinterpret_cast<const char*>(v) : "NULL";
      }
      out.push_back(row);
    }
    sqlite3_finalize(s);
    return out;
  }
  // The error of `sql`, "" when it succeeded.
  std::string Error(const std::string& sql) {
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    std::string out = rc == SQLITE_OK ? "" : (message ? message : "error");
    sqlite3_free(message);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

std::unique_ptr<SqliteStore> OpenAt(const std::string& path, int schema_version) {
  SqliteOptions o;
  o.path = path;
  o.synchronous_full = false;
  o.schema_version = schema_version;
  auto s = SqliteStore::Open(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

store::ClaimRule Rule() {
  store::ClaimRule rule;
  rule.job = "j";
  rule.lease_ttl = std::chrono::minutes{5};
  rule.overlap = ledger::Overlap::kAllow;
  rule.steps = {"extract", "load"};
  return rule;
}

TEST(SqliteMigration, TheRebuiltTablesKeepEveryRowIdReferenceAndCheck) {
  TempDir dir;
  const std::string path = dir.File("ledger.db");
  const store::Instant now = InstantAt("2026-11-05T09:00:02Z");
  store::ClaimedRun running;  // claimed before the upgrade, finished after it
  {
    // A ledger of the previous release, in use: runs done, running and due.
    auto old = OpenAt(path, 8);
    ASSERT_NE(old, nullptr);
    PlanPartitionsDue(*old, 4);
    ASSERT_EQ(ReleasePartitionsDue(*old), 4);
    auto claimed = old->RunClaim({now, "n1", 2, {Rule()}});
    ASSERT_TRUE(claimed.ok() && claimed->size() == 2u);
    store::WorkerWrite w;
    w.step = store::StepParams{};
    w.step->run_id = claimed->at(0).run.id;
    w.step->token = claimed->at(0).token;
    w.step->step = "extract";
    w.step->state = ledger::StepStatus::kSucceeded;
    w.step->now = now;
    w.step->node = "n1";
    w.finish.emplace();
    w.finish->run_id = claimed->at(0).run.id;
    w.finish->token = claimed->at(0).token;
    w.finish->now = now;
    w.finish->node = "n1";
    w.finish->step = "extract";
    w.finish->exit_status = 1;
    w.finish->end_class = ledger::EndClass::kPermanent;
    w.finish->decision.state = ledger::RunState::kFailed;
    running = claimed->at(1);
    auto written = old->RunApplyWrites({w});
    ASSERT_TRUE(written.ok() && written->at(0).ok());
    EXPECT_EQ(old->GetSchemaInfo()->version, 8);
  }
  RawLedger raw(path);
  const std::string runs = "SELECT * FROM runs ORDER BY id";
  const std::string steps = "SELECT * FROM run_steps ORDER BY run_id, step";
  const std::vector<std::string> runs_before = raw.Rows(runs);
  const std::vector<std::string> steps_before = raw.Rows(steps);
  ASSERT_EQ(runs_before.size(), 4u);
  ASSERT_EQ(steps_before.size(), 4u);  // two steps of each claimed run

  auto s = OpenAt(path, 0);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->GetSchemaInfo()->version, store::kSqliteSchemaVersion);
  // Every row kept; schema 12 adds each run's due_at (its scheduled time,
  // the sixth column) and lane 0.
  std::vector<std::string> runs_after;
  for (const std::string& row : runs_before) {
    std::size_t at = 0;
    for (int i = 0; i < 5; ++i) at = row.find('|', at) + 1;
    runs_after.push_back(row + "|" + row.substr(at, row.find('|', at) - at) + "|0");
  }
  EXPECT_EQ(raw.Rows(runs), runs_after);
  EXPECT_EQ(raw.Rows(steps), steps_before);
  EXPECT_TRUE(raw.Rows("PRAGMA foreign_key_check").empty());
  // The checks are spelled without lists, and still refuse a state.
  for (const auto& sql : raw.Rows("SELECT sql FROM sqlite_schema WHERE tbl_name IN "
                                  "('runs', 'run_steps') AND sql IS NOT NULL")) {
    EXPECT_EQ(sql.find("state IN"), std::string::npos) << sql;
  }
  EXPECT_NE(raw.Error("UPDATE runs SET state = 'done' WHERE id = 1").find("CHECK"),
            std::string::npos);
  EXPECT_NE(raw.Error("UPDATE run_steps SET state = 'done'").find("CHECK"), std::string::npos);
  // Every index of runs is there again; retention finds finished runs by one.
  EXPECT_EQ(raw.Rows("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                     "tbl_name = 'runs' AND name NOT LIKE 'sqlite_autoindex%'"),
            std::vector<std::string>{"10"});

  // The ledger goes on where it was: the due runs are claimed, and the run
  // claimed before the upgrade is finished by its token.
  auto claimed = s->RunClaim({now, "n1", 5, {Rule()}});
  ASSERT_TRUE(claimed.ok());
  EXPECT_EQ(claimed->size(), 2u);
  store::FinishParams f;
  f.run_id = running.run.id;
  f.token = running.token;
  f.now = now;
  f.node = "n1";
  f.exit_status = 0;
  f.decision.state = ledger::RunState::kSucceeded;
  auto finished = s->RunFinishAttempts({f});
  ASSERT_TRUE(finished.ok());
  EXPECT_TRUE(finished->at(0).ok()) << finished->at(0).ToString();
  EXPECT_EQ(s->RunGet(running.run.id)->state, ledger::RunState::kSucceeded);
  s.reset();
  // A node of the previous release still opens it (additive).
  EXPECT_NE(OpenAt(path, 8), nullptr);
}

}  // namespace
}  // namespace cronledger::testing
