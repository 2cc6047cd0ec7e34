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
  // Time): the `now` a caller passes is ignored and each call reads the
  // server's once, inside its own transaction (store.h, One instant per
  // call), so nodes whose clocks disagree still agree on what is due and
  // which lease expired. Off: a given `now` is used (tests pin time), a
  // missing one is the server's.
  bool database_clock = true;
  // Fault injection for tests: runs before every SQL statement.
  sql::StatementHook statement_hook;
  // Tests of rolling upgrades: act as the release whose schema version this
  // is (0: this binary's), applying no migration above it.
  int schema_version = 0;
  // Read-only commands: no migration (an empty or older database is
  // refused, RequireSchema) and every transaction read-only.
  bool read_only = false;
};

// The same numbered migrations as SQLite, in PostgreSQL's spelling.
inline constexpr int kPostgresSchemaVersion = 13;
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

  // These may make runs claimable (released, back to pending): each
  // NOTIFYs the other nodes' listeners when it succeeded.
  Result<ReleaseResult> RunRelease(const ReleaseParams& p) override;
  // Set-based (postgres_store_exec.cc): a batch in a few statements.
  Result<std::vector<ClaimedRun>> RunClaim(const ClaimParams& p) override;
  // Set-based too.
  Result<std::vector<Status>> RunApplyWrites(const std::vector<WorkerWrite>& writes) override;
  Status RunRetry(const OperatorParams& p) override;
  Result<EffectResolveResult> EffectResolve(const EffectResolveParams& p) override;
  Status RunResolve(const RunResolveParams& p) override;
  Result<QueueKeysResult> RunQueueKeys(const QueueKeysParams& p) override;
  Result<RequeueResult> RunRequeue(const RequeueParams& p) override;
  Result<std::vector<int64_t>> RunApprove(const ApproveParams& p) override;
  Result<Instant> LedgerNow(Instant local) override;
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

  // One instant per call: `given` when pinned, else the clock Begin read.
  Result<Instant> TransactionNow(const std::optional<Instant>& given) override;
  Result<std::optional<int64_t>> StatementNow(const std::optional<Instant>& given) override;

  postgres::Db* pg_ = nullptr;
  std::string url_;
  bool database_clock_;
  std::atomic<bool> stopping_{false};
  std::thread listener_;
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_POSTGRES_POSTGRES_STORE_H_
