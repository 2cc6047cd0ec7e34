// The store for many nodes: one PostgreSQL database shared by every
// `serve`. The ledger's SQL is SqlStore's, the same as SQLite's; what is
// PostgreSQL's own is here and in pg_db: the connection, the advisory lock
// that orders writers, and the database clock.
#ifndef CRONLEDGER_STORE_POSTGRES_POSTGRES_STORE_H_
#define CRONLEDGER_STORE_POSTGRES_POSTGRES_STORE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/pg_db.h"
#include "store/sql/sql_store.h"

namespace cronledger::store {

struct PostgresOptions {
  std::string url;  // postgresql://user@host:port/db (libpq syntax)
  // Every ledger decision on the database server's clock (docs/architecture.md,
  // Time): the `now` a caller passes is replaced by the server's, so nodes
  // whose clocks disagree still agree on what is due and which lease expired.
  // Tests that pin time turn it off.
  bool database_clock = true;
  // Fault injection for tests: runs before every SQL statement.
  sql::StatementHook statement_hook;
  // Tests of rolling upgrades: act as the release whose schema version this
  // is (0: this binary's), applying no migration above it.
  int schema_version = 0;
};

// The same numbered migrations as SQLite, in PostgreSQL's spelling.
inline constexpr int kPostgresSchemaVersion = 10;
inline constexpr int kPostgresCompatibleFrom = 1;

class PostgresStore final : public SqlStore {
 public:
  // Connects and applies pending migrations in one transaction under the
  // write lock, so nodes starting together migrate once.
  // kFailedPrecondition when the database needs a newer cronledger;
  // kUnavailable when the server cannot be reached.
  static Result<std::unique_ptr<PostgresStore>> Open(const PostgresOptions& options);
  ~PostgresStore() override;

  std::string_view Name() const override { return "postgresql"; }

  // Each call that takes `now` reads the database clock first when
  // options.database_clock is set.
  Result<JobSyncResult> JobSync(const JobSyncParams& p) override;
  Result<PartitionSyncResult> PartitionSync(const PartitionSyncParams& p) override;
  Result<PlanResult> RunPlan(const PlanParams& p) override;
  Result<ReleaseResult> RunRelease(const ReleaseParams& p) override;
  Result<ReleaseOutlook> RunReleaseOutlook(Instant now) override;
  Status JobSetPaused(const PauseParams& p) override;
  Result<std::vector<RunRecord>> RunListDue(Instant now, int limit) override;
  Status EventAppend(const EventRecord& e) override;
  Status EventAppendAll(const std::vector<EventRecord>& events) override;
  Result<JobStats> StatsGet(const StatsParams& p) override;
  // Set-based (postgres_store_exec.cc): a batch in a few statements.
  Result<std::vector<ClaimedRun>> RunClaim(const ClaimParams& p) override;
  Status RunHeartbeat(const HeartbeatParams& p) override;
  Status StepUpdate(const StepParams& p) override;
  Result<std::vector<Status>> RunFinishAttempts(const std::vector<FinishParams>& p) override;
  // Set-based too.
  Result<std::vector<Status>> RunApplyWrites(const std::vector<WorkerWrite>& writes) override;
  Result<std::vector<ExpiredLease>> RunListExpiredLeases(Instant now, int limit) override;
  Status RunRetry(const OperatorParams& p) override;
  Result<EffectBeginResult> EffectBegin(const EffectBeginParams& p) override;
  Status EffectCommit(const EffectCommitParams& p) override;
  Status EffectFail(const EffectFailParams& p) override;
  Result<EffectResolveResult> EffectResolve(const EffectResolveParams& p) override;
  Status RunResolve(const RunResolveParams& p) override;
  Status CheckpointSet(const CheckpointSetParams& p) override;
  Result<QueueKeysResult> RunQueueKeys(const QueueKeysParams& p) override;
  Result<RequeueResult> RunRequeue(const RequeueParams& p) override;
  Result<std::vector<int64_t>> RunApprove(const ApproveParams& p) override;
  Status RunCancel(const OperatorParams& p) override;
  Status RunEffectBatch(EffectOpSource& source) override;
  using Store::RunEffectBatch;
  Result<Instant> LedgerNow(Instant local) override { return Now(local); }
  Status NodeHeartbeat(const NodeBeat& b) override;
  Status NodeStopped(const NodeBeat& b) override;
  Result<bool> RoleHold(const RoleParams& p) override;
  // LISTEN on a connection of its own, in a thread of its own.
  void WatchForWork(std::function<void()> wake) override;
  bool NotifiesWork() const override { return true; }
  bool WritesBesideClaims() const override { return true; }

 private:
  PostgresStore(std::unique_ptr<postgres::Db> db, std::string url, bool database_clock)
      : SqlStore(std::move(db)), url_(std::move(url)), database_clock_(database_clock) {}

  // After a call that may have made runs claimable: NOTIFY every node's
  // listener (after the commit, so that what they claim is there).
  void NotifyWork();
  void Listen(std::function<void()> wake);

  Status AfterLedgerCopy() override;

  // postgres_store_exec.cc: `events` in one statement, in order.
  Status AppendEventsLocked(const std::vector<EventRecord>& events);

  // `given`, or the database's clock when database_clock is set.
  Result<Instant> Now(Instant given);
  template <typename P>
  Result<P> OnDatabaseClock(const P& p);

  postgres::Db* pg_ = nullptr;
  std::string url_;
  bool database_clock_;
  std::atomic<bool> stopping_{false};
  std::thread listener_;
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_POSTGRES_POSTGRES_STORE_H_
