// The invariant checker must be able to fail: each violation it knows is
// injected here with direct SQLite inserts into a ledger built from the real
// migrations, and a clean ledger must report nothing. The fenced sink itself
// is exercised as the real binary (FENCED_SINK_BIN).
#include "faults/invariant_checker.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/subprocess.h"
#include "faults/scenario.h"
#include "source_dir.h"

namespace cronledger::faults {
namespace {

class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open " + path);
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  void Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(why + " in: " + sql);
    }
  }

 private:
  sqlite3* db_ = nullptr;
};

std::vector<std::string> Kinds(const std::vector<Violation>& vs) {
  std::vector<std::string> kinds;
  for (const auto& v : vs) kinds.push_back(v.kind + " " + v.run_key);
  return kinds;
}

class FaultInvariantChecker : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cronledger-checker-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    input_.ledger_db = dir_ + "/ledger.db";
    input_.sink_db = dir_ + "/sink.db";
    ledger_ = std::make_unique<Db>(input_.ledger_db);
    const std::string migrations =
        std::string(testing::kSourceDir) + "/src/store/sqlite/migrations/";
    ledger_->Exec(ReadFile(migrations + "001_ledger.sql"));
    ledger_->Exec(ReadFile(migrations + "002_attempts.sql"));
    ledger_->Exec(ReadFile(migrations + "003_partial_indexes.sql"));
    ledger_->Exec(ReadFile(migrations + "004_effects.sql"));
    ledger_->Exec("INSERT INTO jobs (name, created_at) VALUES ('tick', 0)");
    sink_ = std::make_unique<Db>(input_.sink_db);
    // The sink's schema, as fenced_sink --init creates it.
    const auto init = testing::RunProcess({FENCED_SINK_BIN, "--db", input_.sink_db, "--init"});
    ASSERT_EQ(init.exit_code, 0) << init.err;

    // A clean history: two runs, each delivered once; the first needed a
    // second attempt (its first lost the lease; the late write was refused).
    AddRun(1, "a", "succeeded");
    AddAttempt(1, 1, 10, true);
    AddAttempt(1, 2, 12, true);
    AddRun(2, "b", "succeeded");
    AddAttempt(2, 1, 11, true);
    AddWrite("tick/a/p", 12, true);
    AddWrite("tick/a/p", 10, false);
    AddWrite("tick/b/p", 11, true);
    // A run still running may have an open attempt; a pending one none.
    AddRun(3, "c", "running");
    AddAttempt(3, 1, 13, false);
    AddRun(4, "d", "pending");
    input_.expected_keys = {"tick/a/p", "tick/b/p"};
  }
  void TearDown() override {
    ledger_.reset();
    sink_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  void AddRun(int id, const std::string& partition, const std::string& state) {
    ledger_->Exec(
        "INSERT INTO runs (id, job, partition, period, business_date, scheduled_at, "
        "job_version, state, created_at, updated_at) VALUES (" +
        std::to_string(id) + ", 'tick', '" + partition + "', 'p', '2026-01-01', 0, 1, '" + state +
        "', 0, 0)");
  }
  void AddAttempt(int run, int number, int token, bool ended) {
    ledger_->Exec(
        "INSERT INTO attempts (run_id, number, fencing_token, node, started_at, "
        "ended_at) VALUES (" +
        std::to_string(run) + ", " + std::to_string(number) + ", " + std::to_string(token) +
        ", 'n1', 0, " + (ended ? "1" : "NULL") + ")");
  }
  void AddEffect(const std::string& key, const std::string& state) {
    ledger_->Exec(
        "INSERT INTO effects (job, key, state, run_id, run_key, started_attempt, started_token, "
        "started_at, updated_at) VALUES ('tick', '" +
        key + "', '" + state + "', 1, 'tick/a/p', 1, 10, 0, 0)");
  }
  void AddWrite(const std::string& key, int token, bool accepted) {
    sink_->Exec("INSERT INTO writes (key, token, accepted) VALUES ('" + key + "', " +
                std::to_string(token) + ", " + (accepted ? "1" : "0") + ")");
  }

  std::string dir_;
  CheckInput input_;
  std::unique_ptr<Db> ledger_;
  std::unique_ptr<Db> sink_;
};

TEST_F(FaultInvariantChecker, CleanLedgerReportsNothing) {
  const auto v = CheckInvariants(input_);
  EXPECT_TRUE(v.empty()) << Describe(v);
}

TEST_F(FaultInvariantChecker, ReportsAnInjectedDoubleDelivery) {
  AddWrite("tick/b/p", 14, true);  // a second accepted write, higher token
  const auto v = CheckInvariants(input_);
  ASSERT_EQ(Kinds(v), std::vector<std::string>{"delivered_twice tick/b/p"}) << Describe(v);
  EXPECT_NE(v[0].detail.find("tokens 11, 14"), std::string::npos) << v[0].detail;
}

TEST_F(FaultInvariantChecker, ReportsAnAppliedStaleWrite) {
  AddWrite("tick/a/p", 10, true);  // token 10 accepted after 12
  const auto v = CheckInvariants(input_);
  EXPECT_EQ(Kinds(v),
            (std::vector<std::string>{"delivered_twice tick/a/p", "stale_write_applied tick/a/p"}))
      << Describe(v);
}

TEST_F(FaultInvariantChecker, ReportsALostKey) {
  input_.expected_keys.push_back("tick/zz/p");  // never in the ledger
  AddRun(5, "e", "failed");
  input_.expected_keys.push_back("tick/e/p");  // in the ledger, not succeeded
  AddRun(6, "f", "succeeded");
  AddAttempt(6, 1, 15, true);
  input_.expected_keys.push_back("tick/f/p");  // succeeded, never delivered
  const auto v = CheckInvariants(input_);
  EXPECT_EQ(Kinds(v), (std::vector<std::string>{"missing tick/zz/p", "not_succeeded tick/e/p",
                                                "not_delivered tick/f/p"}))
      << Describe(v);
  // A scenario may allow keys not to finish.
  input_.allowed_unfinished = {"tick/zz/p", "tick/e/p", "tick/f/p"};
  EXPECT_TRUE(CheckInvariants(input_).empty());
}

// Steps that deliver items under their own keys (effect run): the items
// named are each accepted, no other key is, and the ledger's effects agree.
TEST_F(FaultInvariantChecker, ReportsItemsNotDeliveredOnceOrNotCommitted) {
  input_.runs_deliver_run_keys = false;
  input_.expected_deliveries = {"item-1", "item-2", "item-3", "tick/a/p", "tick/b/p"};
  input_.effects_job = "tick";
  AddWrite("item-1", 12, true);
  AddWrite("item-2", 12, true);
  AddWrite("item-3", 12, true);
  for (const char* key : {"item-1", "item-2", "item-3", "tick/a/p", "tick/b/p"}) {
    AddEffect(key, "committed");
  }
  auto v = CheckInvariants(input_);
  EXPECT_TRUE(v.empty()) << Describe(v);

  input_.expected_deliveries.push_back("item-4");  // never accepted, no effect
  AddWrite("item-5", 12, true);                    // accepted, not expected
  AddWrite("item-6", 12, false);                   // refused: not a delivery
  AddRun(8, "h", "succeeded");                     // delivered nothing under its run key
  input_.expected_keys.push_back("tick/h/p");
  v = CheckInvariants(input_);
  EXPECT_EQ(Kinds(v), (std::vector<std::string>{"undelivered item-4", "unexpected_delivery item-5",
                                                "effect_not_committed item-4"}))
      << Describe(v);

  // The sink and the ledger disagree: delivered, but the effect is in doubt.
  input_.expected_deliveries.pop_back();
  ledger_->Exec("UPDATE effects SET state = 'started' WHERE key = 'item-2'");
  v = CheckInvariants(input_);
  EXPECT_EQ(Kinds(v),
            (std::vector<std::string>{"unexpected_delivery item-5", "effect_not_committed item-2"}))
      << Describe(v);
  EXPECT_NE(v.back().detail.find("the effect is started"), std::string::npos) << v.back().detail;

  // With runs delivering their run keys (the default), tick/h/p is flagged.
  input_.runs_deliver_run_keys = true;
  v = CheckInvariants(input_);
  EXPECT_EQ(Kinds(v).front(), "not_delivered tick/h/p") << Describe(v);
}

TEST_F(FaultInvariantChecker, ReportsAnAttemptNotClosed) {
  AddRun(7, "g", "unknown");
  AddAttempt(7, 1, 16, false);
  const auto v = CheckInvariants(input_);
  ASSERT_EQ(Kinds(v), std::vector<std::string>{"attempt_not_closed tick/g/p"}) << Describe(v);
  EXPECT_NE(v[0].detail.find("run 7 is unknown but its attempt 1 (node n1) has no end"),
            std::string::npos)
      << v[0].detail;
}

TEST_F(FaultInvariantChecker, ReportsDuplicateRunRows) {
  // The real schema forbids it (UNIQUE (job, partition, period)); a ledger
  // without the constraint shows the checker would still see it.
  const std::string other = dir_ + "/other.db";
  {
    Db db(other);
    db.Exec(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, job TEXT, partition TEXT, period TEXT, "
        "state TEXT); CREATE TABLE attempts (run_id INTEGER, number INTEGER, node TEXT, "
        "ended_at INTEGER);"
        "INSERT INTO runs VALUES (1, 'tick', 'a', 'p', 'succeeded'), "
        "(2, 'tick', 'a', 'p', 'succeeded'), (3, 'tick', 'b', 'p', 'succeeded');");
  }
  input_.ledger_db = other;
  const auto v = CheckInvariants(input_);
  ASSERT_EQ(Kinds(v), std::vector<std::string>{"duplicate_run tick/a/p"}) << Describe(v);
}

TEST_F(FaultInvariantChecker, ReportsAnUnreadableDatabase) {
  input_.ledger_db = dir_ + "/absent.db";
  const auto v = CheckInvariants(input_);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].kind, "unreadable");
}

// The real sink: accepts a token at least as high as any accepted for the
// key (equal included: a step re-run under the same token), refuses lower
// ones with exit 65, records both; keys are independent.
TEST(FaultSink, AcceptsOnlyTokensAtLeastTheHighestAccepted) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "cronledger-sink-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string db = pattern + "/sink.db";
  auto write = [&](const std::string& key, const std::string& token) {
    return testing::RunProcess(
               {FENCED_SINK_BIN, "--db", db, "--key", key, "--token", token, "--note", "n"})
        .exit_code;
  };
  EXPECT_EQ(write("k", "5"), 0);
  EXPECT_EQ(write("k", "3"), 65);
  EXPECT_EQ(write("k", "5"), 0);
  EXPECT_EQ(write("k", "7"), 0);
  EXPECT_EQ(write("k", "6"), 65);
  EXPECT_EQ(write("other", "1"), 0);
  EXPECT_EQ(write("k", ""), 64);
  EXPECT_EQ(write("k", "x"), 64);
  EXPECT_EQ(testing::RunProcess({FENCED_SINK_BIN, "--db", db}).exit_code, 64);

  // Three accepted writes for k: the checker calls that a double delivery,
  // but no stale write was applied.
  CheckInput input;
  input.sink_db = db;
  input.ledger_db = pattern + "/ledger.db";
  {
    Db ledger(input.ledger_db);
    ledger.Exec(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, job TEXT, partition TEXT, period TEXT, state "
        "TEXT); CREATE TABLE attempts (run_id INTEGER, number INTEGER, node TEXT, ended_at "
        "INTEGER);");
  }
  const auto v = CheckInvariants(input);
  EXPECT_EQ(Kinds(v), std::vector<std::string>{"delivered_twice k"}) << Describe(v);
  EXPECT_NE(v.at(0).detail.find("3 accepted writes, tokens 5, 5, 7"), std::string::npos);
  std::error_code ignored;
  std::filesystem::remove_all(pattern, ignored);
}

// --check, what the reconcile programs of the effect scenarios run: 0 and
// the accepted write when the key was accepted, 1 when it never was (a
// refused write does not count), 64 without a key.
TEST(FaultSink, CheckAnswersWhetherAKeyWasAccepted) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "cronledger-sink-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string db = pattern + "/sink.db";
  ASSERT_EQ(testing::RunProcess({FENCED_SINK_BIN, "--db", db, "--init"}).exit_code, 0);
  auto check = [&](const std::string& key) {
    return testing::RunProcess({FENCED_SINK_BIN, "--db", db, "--check", "--key", key});
  };
  EXPECT_EQ(check("k").exit_code, 1);
  ASSERT_EQ(testing::RunProcess(
                {FENCED_SINK_BIN, "--db", db, "--key", "k", "--token", "5", "--note", "first"})
                .exit_code,
            0);
  ASSERT_EQ(
      testing::RunProcess({FENCED_SINK_BIN, "--db", db, "--key", "k", "--token", "3"}).exit_code,
      65);
  const auto found = check("k");
  EXPECT_EQ(found.exit_code, 0);
  EXPECT_EQ(found.out, "fenced_sink: k was accepted, token 5 (first)\n");
  EXPECT_EQ(check("other").exit_code, 1);
  EXPECT_EQ(testing::RunProcess({FENCED_SINK_BIN, "--db", db, "--check"}).exit_code, 64);
  std::error_code ignored;
  std::filesystem::remove_all(pattern, ignored);
}


// The scenarios' lost-key check must be able to fail too: it names each
// (partition, second) of an every-second span that has no run, from the
// schedule, not from what the ledger happens to hold.
TEST(FaultScenarioKit, LostSecondKeysNamesEverySecondWithoutARun) {
  Scenario sc;
  {
    Db ledger(sc.LedgerDb());
    const std::string migrations =
        std::string(testing::kSourceDir) + "/src/store/sqlite/migrations/";
    ledger.Exec(ReadFile(migrations + "001_ledger.sql"));
    ledger.Exec(ReadFile(migrations + "002_attempts.sql"));
    ledger.Exec("INSERT INTO jobs (name, created_at) VALUES ('tick', 0)");
    int id = 0;
    for (const int64_t at : {1000, 2000, 3000}) {
      for (const std::string p : {"a", "b"}) {
        if (p == "b" && at == 2000) continue;  // lost
        ledger.Exec("INSERT INTO runs (id, job, partition, period, business_date, scheduled_at, "
                    "job_version, state, created_at, updated_at) VALUES (" +
                    std::to_string(++id) + ", 'tick', '" + p + "', '" + std::to_string(at) +
                    "', '2026-01-01', " + std::to_string(at) + ", 1, 'succeeded', 0, 0)");
      }
    }
  }
  EXPECT_EQ(sc.LostSecondKeys("tick", {"a", "b"}, 1000, 3000),
            std::vector<std::string>{"tick/b at 2000"});
  EXPECT_EQ(sc.LostSecondKeys("tick", {"a", "b"}, 1000, 4000),
            (std::vector<std::string>{"tick/b at 2000", "tick/a at 4000", "tick/b at 4000"}));
  EXPECT_TRUE(sc.LostSecondKeys("tick", {"a"}, 1000, 3000).empty());
}

}  // namespace
}  // namespace cronledger::faults
