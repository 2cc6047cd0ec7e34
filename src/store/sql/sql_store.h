// The ledger in SQL, written once for every engine behind sql::Db: SQLite
// (the embedded default, store/sqlite) and PostgreSQL (many nodes,
// store/postgres). The conformance suite in tests/store runs against both.
#ifndef CRONLEDGER_STORE_SQL_SQL_STORE_H_
#define CRONLEDGER_STORE_SQL_SQL_STORE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "store/sql/sql_db.h"
#include "store/store.h"

namespace cronledger::store {

// A numbered schema migration (the engine's dialect).
struct Migration {
  int number;
  const char* name;
  const char* sql;
};

// The first of `migrations` (numbered in order) up to `version`: what a
// release of that schema version applies (tests of rolling upgrades).
inline std::span<const Migration> MigrationsThrough(std::span<const Migration> migrations,
                                                    int version) {
  while (!migrations.empty() && migrations.back().number > version) {
    migrations = migrations.first(migrations.size() - 1);
  }
  return migrations;
}

// What CopyLedger copied: rows per table, in copy order, and the fencing
// sequence's last token in the target.
struct LedgerCopyReport {
  std::vector<std::pair<std::string, int64_t>> tables;
  int64_t last_token = 0;
};

// Thread-safe: calls are serialised on one connection. Several processes
// may share the database; the engine's write transactions (sql::Db::Begin)
// order their writes.
class SqlStore : public Store {
 public:
  Result<SchemaInfo> GetSchemaInfo() override;
  Result<Instant> LedgerNow(Instant local) override { return local; }

  Result<JobSyncResult> JobSync(const JobSyncParams& p) override;
  Result<std::vector<JobRecord>> JobList() override;
  Result<JobRecord> JobGet(std::string_view job) override;
  Result<std::vector<JobVersion>> JobVersionList(std::string_view job) override;

  Result<PartitionSyncResult> PartitionSync(const PartitionSyncParams& p) override;
  Result<std::vector<PartitionInterval>> PartitionHistory(std::string_view job) override;

  Result<PlanResult> RunPlan(const PlanParams& p) override;
  Result<ReleaseResult> RunRelease(const ReleaseParams& p) override;
  Result<ReleaseOutlook> RunReleaseOutlook(std::optional<Instant> now) override;
  Status JobSetPaused(const PauseParams& p) override;
  Result<bool> IsPausedAll() override;

  Result<std::vector<RunRecord>> RunList(const RunQuery& q) override;
  Result<RunRecord> RunGet(int64_t id) override;
  Status RunListByDate(const RunDateQuery& q, std::vector<RunRecord>* page) override;
  Result<std::vector<RunRecord>> RunListDue(std::optional<Instant> now, int limit) override;

  Status EventAppend(const EventRecord& e) override;
  Status EventAppendAll(const std::vector<EventRecord>& events) override;
  Result<std::vector<EventRecord>> EventList(const EventQuery& q) override;
  int64_t StaleWritesRejected() const override { return db_->Tallied(); }

  Result<JobStats> StatsGet(const StatsParams& p) override;
  Result<LedgerMetrics> MetricsGet(const LedgerMetricsParams& p) override;

  Result<std::vector<ClaimedRun>> RunClaim(const ClaimParams& p) override;
  Status RunHeartbeat(const HeartbeatParams& p) override;
  Status StepUpdate(const StepParams& p) override;
  Result<std::vector<Status>> RunFinishAttempts(const std::vector<FinishParams>& p) override;
  Result<std::vector<Status>> RunApplyWrites(const std::vector<WorkerWrite>& writes) override;
  Result<std::vector<ExpiredLease>> RunListExpiredLeases(std::optional<Instant> now, int limit) override;
  Result<RunLease> RunGetLease(int64_t run_id) override;
  Status RunRetry(const OperatorParams& p) override;
  Result<std::vector<AttemptRecord>> AttemptList(int64_t run_id) override;
  Result<std::vector<StepState>> StepList(int64_t run_id) override;

  // sql_store_effects.cc
  Result<EffectBeginResult> EffectBegin(const EffectBeginParams& p) override;
  Status EffectCommit(const EffectCommitParams& p) override;
  Status EffectFail(const EffectFailParams& p) override;
  Result<EffectResolveResult> EffectResolve(const EffectResolveParams& p) override;
  Status RunResolve(const RunResolveParams& p) override;
  Result<std::vector<EffectRecord>> EffectList(int64_t run_id) override;
  Result<EffectRecord> EffectGet(std::string_view job, std::string_view key) override;
  Result<Checkpoints> CheckpointGet(int64_t run_id) override;
  Status CheckpointSet(const CheckpointSetParams& p) override;
  // EffectBegin, EffectCommit, EffectFail and CheckpointSet are this call
  // with one op: one code path; one transaction, a SAVEPOINT per op after
  // the first.
  Status RunEffectBatch(EffectOpSource& source) override;
  using Store::RunEffectBatch;

  // sql_store_recovery.cc
  Result<QueueKeysResult> RunQueueKeys(const QueueKeysParams& p) override;
  Result<RequeueResult> RunRequeue(const RequeueParams& p) override;
  Result<std::vector<int64_t>> RunApprove(const ApproveParams& p) override;
  Status RunCancel(const OperatorParams& p) override;

  // sql_store_nodes.cc
  Status NodeHeartbeat(const NodeBeat& b) override;
  Status NodeStopped(const NodeBeat& b) override;
  Result<std::vector<NodeRecord>> NodeList() override;
  Result<bool> RoleHold(const RoleParams& p) override;
  Status RoleRelease(const std::string& role, const std::string& node) override;
  Status GrantPut(const DashboardGrant& g, Instant now, std::size_t max_sessions) override;
  Result<std::optional<DashboardGrant>> GrantGet(std::string_view digest, Instant now) override;
  Result<std::optional<DashboardGrant>> GrantTake(std::string_view digest, Instant now) override;
  Status GrantDelete(std::string_view digest) override;
  Result<PurgeResult> RunPurge(const PurgeParams& p) override;

  // `cronledger migrate-store`: copies every table of `from`'s ledger into
  // `to`, which must be empty (kFailedPrecondition otherwise), in one
  // transaction of `to`; continues the fencing sequence above every token
  // `from` issued; verifies the row counts before committing.
  static Result<LedgerCopyReport> CopyLedger(SqlStore& from, SqlStore& to);

  // Replaces the statement hook (tests).
  void SetStatementHook(sql::StatementHook hook);

 protected:
  explicit SqlStore(std::unique_ptr<sql::Db> db) : db_(std::move(db)) {}

  // Applies the migrations numbered above the database's version in one
  // write transaction (forward-only, so a crash leaves the previous schema
  // intact). A database migrated by a newer binary is used as is while
  // `schema_version` is at least its compatible_from (migrations are
  // additive); otherwise kFailedPrecondition naming `where`. `verify`, if
  // any, runs before the commit when a migration was applied; its error
  // rolls every one of them back.
  Status Migrate(std::span<const Migration> migrations, int schema_version,
                 int compatible_from, std::string_view where,
                 const std::function<Status()>& verify = nullptr);
  // What a read-only open checks instead, writing nothing: the database
  // holds a ledger (kFailedPrecondition for an empty one) whose schema is
  // neither older than `schema_version` (a read-only command does not
  // migrate) nor too new for it.
  Status RequireSchema(int schema_version, std::string_view where);
  // Schema 11: attempts.claimant and events.on_behalf_of.
  bool HasCallers() const { return schema_version_ >= 11; }
  // Schema 12: runs.due_at and runs.lane (the claim's order).
  bool HasLanes() const { return schema_version_ >= 12; }

  // After CopyLedger wrote explicit row ids: whatever the engine needs so
  // that new rows get ids above them (PostgreSQL's identity sequences).
  virtual Status AfterLedgerCopy() { return Status::Ok(); }

  sql::Db& db() { return *db_; }
  std::mutex& mutex() { return mu_; }

  // One instant per call (store.h). The instant of the write transaction
  // just begun: `given`; kInvalidArgument without one, since SQLite has no
  // clock of its own. PostgresStore answers with the database's clock read
  // in the round trip that began the transaction.
  virtual Result<Instant> TransactionNow(const std::optional<Instant>& given);
  // For one statement outside a write transaction: the instant's SQL,
  // `coalesce(?N, <the engine's clock>)`, constant within the statement,
  // with ?N bound to what StatementNow answers (BindOptional): the pinned
  // instant in ms, or none for the engine's own clock. SQLite has none:
  // its StatementNow is kInvalidArgument without a pin.
  std::string NowSql(int param) const;
  virtual Result<std::optional<int64_t>> StatementNow(const std::optional<Instant>& given);

  // A write call's frame: mutex() held for the whole call, one transaction
  // (rolled back unless committed) and the call's one instant.
  class WriteTransaction {
   public:
    explicit WriteTransaction(SqlStore& store) : lock_(store.mu_), tx_(*store.db_), store_(store) {}
    Status Begin(sql::WriteKind kind = sql::WriteKind::kSerial) { return tx_.Begin(kind); }
    // Begins, and answers the transaction's instant (TransactionNow).
    Result<Instant> Begin(const std::optional<Instant>& now,
                          sql::WriteKind kind = sql::WriteKind::kSerial) {
      if (Status s = tx_.Begin(kind); !s.ok()) return s;
      return store_.TransactionNow(now);
    }
    Status Commit() { return tx_.Commit(); }

   private:
    std::lock_guard<std::mutex> lock_;
    sql::Transaction tx_;
    SqlStore& store_;
  };

 protected:
  // The helpers below run inside the caller's transaction, with mutex()
  // held; PostgresStore's set-based claims and completions fall back to
  // them for the rare cases they do not batch.
  Status AppendEventLocked(const EventRecord& e);
  Status AppendEventLocked(EventRecord&& e);
  // While one is alive, AppendEventLocked holds the events it is given, and
  // Flush() inserts them in order, several rows per statement: a claim or a
  // group commit appends two events per run, and on SQLite a statement's
  // own cost is close to a row's. Flush before COMMIT; the destructor drops
  // what a failed transaction held.
  class HeldEvents {
   public:
    explicit HeldEvents(SqlStore& store) : store_(store) { store_.held_events_ = &held_; }
    HeldEvents(const HeldEvents&) = delete;
    HeldEvents& operator=(const HeldEvents&) = delete;
    ~HeldEvents() { store_.held_events_ = nullptr; }
    Status Flush() { return store_.FlushHeldEventsLocked(); }

   private:
    SqlStore& store_;
    std::vector<EventRecord> held_;
  };
  // Inserts `rows` rows of `columns` values each, several per statement.
  // `head` is "INSERT INTO t (a, b) VALUES "; `bind(s, first, i)` binds row
  // i's values from parameter `first` on.
  Status InsertRowsLocked(std::string_view head, int columns, std::size_t rows,
                          const std::function<void(sql::Stmt&, int, std::size_t)>& bind);
  // Marks the pending, unreleased runs among `ids` released; how many were.
  Result<int> ReleaseLocked(const std::vector<int64_t>& ids, Instant now);
  // Appends an action that puts `run_ids` back to work: each run's history
  // shows it (event_runs) and its next attempts link to it. Returns its id.
  Result<int64_t> AppendActionLocked(const EventRecord& e, std::span<const int64_t> run_ids);
  Result<std::vector<JobVersion>> VersionsLocked(std::string_view job);
  Result<std::optional<int64_t>> PlannedThroughLocked(std::string_view job);
  // Appends stale_write_rejected for a write by `token` to `run_id` and
  // returns the kStaleLease status to report.
  Status RejectStaleLocked(int64_t run_id, int64_t token, std::string_view write,
                           std::string_view node, Instant now);
  Result<std::vector<StepState>> StepsLocked(int64_t run_id);
  // Marks a pending run `skipped (overlap)`, waived, with its event.
  Status SkipForOverlapLocked(const RunRecord& run, std::string_view node, Instant now);
  // A retried attempt's step rows (a first attempt's are written by the
  // claim), with the first step not yet succeeded marked running.
  Result<std::vector<StepState>> ResumeStepsLocked(int64_t run_id, int attempt,
                                                   const std::vector<std::string>& names,
                                                   Instant now);
  // One fenced write inside the caller's transaction. The outer Result is a
  // database failure (the transaction must roll back); the inner Status is
  // the write's own answer (ok, kStaleLease, ...), already written.
  // A running run's row as a fence read found it, in this transaction.
  struct Fence {
    int64_t run_id = 0;
    int64_t token = 0;
    std::string job;
    std::string run_key;
    int attempt = 0;
    // Read for a write that ends the attempt: the keys of effects in doubt
    // (docs/effects.md, At the end of an attempt; empty when none), and whether
    // a step of the run is running after the writes so far.
    struct Ending {
      std::string doubted;  // found in doubt by this attempt, not settled
      std::string own;      // begun by this attempt, never settled
      bool step_running = false;
    };
    std::optional<Ending> ending;
  };
  struct FenceRead {
    bool ending = false;                 // also read Fence::Ending
    bool only_if_lease_expired = false;  // and the lease expired before `now`
    Instant now;
    std::string_view step;  // the step being written: not counted as running
  };
  // The run's fence if `token` is its current one, in one statement.
  Result<std::optional<Fence>> ReadFenceLocked(int64_t run_id, int64_t token,
                                               const FenceRead& how);
  struct Answer {
    Answer(Status s, std::optional<Fence> f = std::nullopt)  // NOLINT: implicit on purpose
        : status(std::move(s)), fence(std::move(f)) {}
    Status status;
    std::optional<Fence> fence;  // set when the write passed its fence
  };
  // `ending`: the attempt's end follows in this transaction (a worker's last
  // step result with its finish); the fence then also reads what the
  // finish needs, so that FinishLocked does not read it again.
  // `now` is the transaction's instant (TransactionNow), for this and the
  // other helpers that take one.
  Result<Answer> StepUpdateLocked(const StepParams& p, Instant now, bool ending = false);
  // `fenced`: what a fence read of the same run and token found earlier in
  // this transaction, when it was read for an ending.
  Result<Answer> FinishLocked(const FinishParams& p, Instant now, const Fence* fenced = nullptr);
  // One fenced write as its own transaction: commits when it applied, and
  // when it was refused as stale (its stale_write_rejected event stays).
  Status FencedWrite(const std::function<Result<Answer>()>& write);
  // docs/effects.md, At the end of an attempt: the finish `p` as the ledger
  // records it, given the key of an effect in doubt this attempt found and did
  // not settle (`doubted`), and of one it began and never settled (`own`);
  // empty when none. Either makes an ending run `unknown`.
  static void ApplyEffectsInDoubt(FinishParams& p, std::string doubted, std::string_view own);
  // The events a claim, a step's new state and an attempt's end append, in
  // order: the same whether written row by row or set-based.
  static EventRecord OverlapSkipEvent(const RunRecord& run, std::string_view node, Instant now);
  static std::vector<EventRecord> ClaimEvents(const ClaimedRun& c, std::string_view node,
                                              Instant now);
  static EventRecord StepEvent(const StepParams& p, Instant now, std::string_view job,
                               std::string_view run_key, int attempt);
  static std::vector<EventRecord> FinishEvents(const FinishParams& p, Instant now,
                                               std::string_view job, std::string_view run_key,
                                               int attempt);

 private:
  // Settles a started effect for EffectCommit / EffectFail, fenced
  // (sql_store_effects.cc).
  struct SettleParams;
  Result<Answer> EffectSettleLocked(const SettleParams& p);
  struct BeginAnswer {
    Status status;
    EffectBeginResult begun;  // when status is ok
  };
  Result<BeginAnswer> EffectBeginLocked(const EffectBeginParams& p, Instant now);
  Result<Answer> CheckpointSetLocked(const CheckpointSetParams& p, Instant now);
  // Applies one op inside the caller's transaction, answering it in place;
  // a non-ok Status is a database failure.
  Status EffectOpLocked(EffectOp& op);
  // RunEffectBatch's transaction, noting each lot taken from `source` in
  // `taken`; a non-ok Status is a database failure.
  Status EffectBatchLocked(EffectOpSource& source, std::vector<std::span<EffectOp>>& taken);

  std::mutex mu_;
  std::unique_ptr<sql::Db> db_;
  // One event, now, whatever is held.
  Status InsertEventLocked(const EventRecord& e);
  Status FlushHeldEventsLocked();
  std::vector<EventRecord>* held_events_ = nullptr;  // see HeldEvents
  // The schema this store writes and reads as (Migrate, RequireSchema): a
  // test acting as an earlier release leaves out the columns it lacks.
  int schema_version_ = 1 << 20;
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_SQL_SQL_STORE_H_
