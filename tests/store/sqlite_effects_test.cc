// SQLite-specific effect tests: a failure injected at any statement of an
// effect's commit (with its checkpoint) leaves neither, and a version 3
// ledger gains the effect tables in place.
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <span>

#include <gtest/gtest.h>

#include "cronledger/schedule.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::store {
namespace {

Instant At(const std::string& rfc3339) {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(*ParseRfc3339(rfc3339));
}

class SqliteEffects : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cronledger-effects-XXXXXX";
    dir_ = mkdtemp(tmpl);
    Open();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Open() {
    store_.reset();
    SqliteOptions o;
    o.path = dir_ + "/ledger.db";
    o.synchronous_full = false;
    auto s = SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  // One claimed run of job "j", partition "a".
  ClaimedRun ClaimedRunOfJ() {
    EXPECT_TRUE(store_->JobSync({"j", R"({"schedule":"0 9 * * *"})", At("2026-11-01T00:00:00Z")})
                    .ok());
    PlanParams plan;
    plan.job = "j";
    PlannedOccurrence o;
    o.scheduled_at = *ParseRfc3339("2026-11-05T09:00:00Z");
    o.local_time = "2026-11-05T09:00:00Z";
    o.job_version = 1;
    o.tzdata = "2025b";
    o.runs.push_back({"a", "2026-11-05", "2026-11-05"});
    plan.occurrences = {o};
    plan.planned_through = o.scheduled_at;
    plan.now = At("2026-11-05T08:00:00Z");
    EXPECT_TRUE(store_->RunPlan(plan).ok());
    ReleaseParams r;
    r.job = "j";
    r.policy.misfire_grace = std::chrono::hours{24};
    r.now = At("2026-11-05T12:00:00Z");
    EXPECT_TRUE(store_->RunRelease(r).ok());
    ClaimRule rule;
    rule.job = "j";
    rule.steps = {"deliver"};
    auto claimed = store_->RunClaim({At("2026-11-05T12:00:00Z"), "n1", 1, {rule}});
    EXPECT_TRUE(claimed.ok() && claimed->size() == 1u);
    return claimed->at(0);
  }

  size_t EventCount(const std::string& type) {
    EventQuery q;
    q.job = "j";
    q.type = type;
    q.limit = 100000;
    return store_->EventList(q)->size();
  }

  std::string dir_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteEffects, AFailureBetweenTheEffectAndItsCheckpointLeavesNeither) {
  const ClaimedRun c = ClaimedRunOfJ();
  ASSERT_EQ(store_->EffectBegin({c.run.id, c.token, "item:1", "", At("2026-11-05T12:01:00Z"), "n1", ""})
                ->outcome,
            EffectBeginOutcome::kProceed);
  EffectCommitParams p;
  p.run_id = c.run.id;
  p.token = c.token;
  p.key = "item:1";
  p.exit_status = 0;
  p.result = "delivered";
  p.checkpoint = CheckpointWrite{ledger::CheckpointScope::kPartition, "1"};
  p.now = At("2026-11-05T12:02:00Z");
  p.node = "n1";

  const auto unchanged = [&](const std::string& when) {
    store_->SetStatementHook(nullptr);
    const auto e = store_->EffectGet("j", "item:1");
    ASSERT_TRUE(e.ok()) << when;
    EXPECT_EQ(e->state, ledger::EffectState::kStarted) << when;
    EXPECT_EQ(e->result, "") << when;
    const auto cp = store_->CheckpointGet(c.run.id);
    ASSERT_TRUE(cp.ok()) << when;
    EXPECT_FALSE(cp->partition.has_value()) << when;
    EXPECT_FALSE(cp->run.has_value()) << when;
    EXPECT_EQ(EventCount("effect_committed"), 0u) << when;
  };

  // The statement that writes the checkpoint fails after the effect's
  // UPDATE ran in the same transaction.
  bool effect_updated = false;
  store_->SetStatementHook([&](std::string_view sql) -> Status {
    if (sql.find("UPDATE effects SET state") != std::string_view::npos) effect_updated = true;
    if (sql.find("INSERT INTO checkpoints") != std::string_view::npos) {
      return Status(StatusCode::kIOError, "injected: disk full");
    }
    return Status::Ok();
  });
  const Status failed = store_->EffectCommit(p);
  EXPECT_EQ(failed.code(), StatusCode::kIOError) << failed.ToString();
  EXPECT_TRUE(effect_updated);
  unchanged("checkpoint write failed");

  // Any statement of the commit, COMMIT itself included.
  int statements = 0;
  for (int fail_at = 1;; ++fail_at) {
    ASSERT_LT(fail_at, 100) << "the commit never succeeded";
    int seen = 0;
    store_->SetStatementHook([&](std::string_view) -> Status {
      return ++seen == fail_at ? Status(StatusCode::kIOError, "injected") : Status::Ok();
    });
    const Status s = store_->EffectCommit(p);
    store_->SetStatementHook(nullptr);
    if (s.ok()) {
      statements = fail_at - 1;
      break;
    }
    EXPECT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
    unchanged("statement " + std::to_string(fail_at));
  }
  EXPECT_GE(statements, 5) << "begin, fence, load, update, checkpoint, event, commit";
  const auto e = store_->EffectGet("j", "item:1");
  EXPECT_EQ(e->state, ledger::EffectState::kCommitted);
  EXPECT_EQ(store_->CheckpointGet(c.run.id)->partition->value, "1");
  EXPECT_EQ(EventCount("effect_committed"), 1u);
}

// A batch the database fails to commit answers every op with the failure,
// whatever each op found, and leaves nothing of any of them (not even a stale
// op's stale_write_rejected event).
TEST_F(SqliteEffects, ABatchThatFailsToCommitAnswersEveryOpWithTheFailure) {
  const ClaimedRun c = ClaimedRunOfJ();
  const auto make = [&] {
    std::vector<EffectOp> ops;
    for (const char* key : {"k1", "k2"}) {
      ops.push_back({EffectBeginParams{c.run.id, c.token, key, "", At("2026-11-05T12:01:00Z"),
                                       "n1", ""},
                     {}, {}});
    }
    ops.push_back({EffectBeginParams{c.run.id, c.token + 1, "k3", "", At("2026-11-05T12:01:00Z"),
                                     "n1", ""},
                   {}, {}});
    ops.push_back({CheckpointSetParams{c.run.id, c.token, ledger::CheckpointScope::kRun, "9",
                                       At("2026-11-05T12:01:00Z"), "n1"},
                   {}, {}});
    ops.push_back({EffectBeginParams{c.run.id, c.token, "", "", At("2026-11-05T12:01:00Z"), "n1",
                                     ""},
                   {}, {}});
    return ops;
  };
  store_->SetStatementHook([](std::string_view sql) -> Status {
    return sql == "COMMIT" ? Status(StatusCode::kUnavailable, "injected: database is locked")
                           : Status::Ok();
  });
  // Handed over in two lots: the failure answers the ops of both.
  auto ops = make();
  struct TwoLots final : EffectOpSource {
    std::vector<EffectOp>& ops;
    int lot = 0;
    explicit TwoLots(std::vector<EffectOp>& o) : ops(o) {}
    std::span<EffectOp> Next() override {
      ++lot;
      if (lot == 1) return std::span(ops).first(2);
      if (lot == 2) return std::span(ops).subspan(2);
      return {};
    }
  } two_lots(ops);
  const Status failed = store_->RunEffectBatch(two_lots);
  store_->SetStatementHook(nullptr);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed.ToString();
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    EXPECT_EQ(ops[i].status.code(), StatusCode::kUnavailable) << i << ": " << ops[i].status.ToString();
  }
  EXPECT_EQ(ops.back().status.code(), StatusCode::kInvalidArgument) << "refused before the database";
  for (const char* key : {"k1", "k2", "k3"}) {
    EXPECT_EQ(store_->EffectGet("j", key).status().code(), StatusCode::kNotFound) << key;
  }
  EXPECT_FALSE(store_->CheckpointGet(c.run.id)->run.has_value());
  EXPECT_EQ(EventCount("effect_started"), 0u);
  EXPECT_EQ(EventCount("stale_write_rejected"), 0u);

  // The same batch again, with the database well.
  ops = make();
  ASSERT_TRUE(store_->RunEffectBatch(ops).ok());
  EXPECT_TRUE(ops[0].status.ok() && ops[1].status.ok() && ops[3].status.ok());
  EXPECT_EQ(ops[2].status.code(), StatusCode::kStaleLease);
  EXPECT_EQ(EventCount("effect_started"), 2u);
  EXPECT_EQ(EventCount("stale_write_rejected"), 1u);
}

TEST_F(SqliteEffects, AVersion3LedgerGainsTheEffectTablesInPlace) {
  const ClaimedRun c = ClaimedRunOfJ();
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/ledger.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE effect_doubts; DROP TABLE effects; DROP TABLE checkpoints; "
                         "DROP TABLE event_runs; ALTER TABLE runs DROP COLUMN action_event_id; "
                         "ALTER TABLE attempts DROP COLUMN action_event_id; "
                         "DROP TABLE nodes; DROP INDEX runs_updated; DROP TABLE roles; "
                         "DROP TABLE dashboard_grants; "
                         "ALTER TABLE attempts DROP COLUMN claimant; "
                         "ALTER TABLE events DROP COLUMN on_behalf_of; "
                         "UPDATE schema_meta SET version = 3",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Open();
  EXPECT_EQ(store_->GetSchemaInfo()->version, kSqliteSchemaVersion);
  EXPECT_EQ(store_->GetSchemaInfo()->compatible_from, 1);
  auto r = store_->EffectBegin({c.run.id, c.token, "k", "", At("2026-11-05T12:01:00Z"), "n1", ""});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcome, EffectBeginOutcome::kProceed);
}

}  // namespace
}  // namespace cronledger::store
