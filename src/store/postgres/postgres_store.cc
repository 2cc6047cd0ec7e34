#include "store/postgres/postgres_store.h"

#include <libpq-fe.h>
#include <poll.h>

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers

constexpr const char* kWorkChannel = "cronledger_work";

constexpr Migration kPostgresMigrations[] = {
#include "postgres_migrations.inc"
};

}  // namespace

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const PostgresOptions& options) {
  ASSIGN_OR_RETURN(db, postgres::Db::Connect(options.url));
  postgres::Db* handle = db.get();
  std::unique_ptr<PostgresStore> store(
      new PostgresStore(std::move(db), options.url, options.database_clock));
  store->pg_ = handle;
  const int version = options.schema_version > 0 ? options.schema_version : kPostgresSchemaVersion;
  RETURN_IF_ERROR(store->Migrate(MigrationsThrough(kPostgresMigrations, version), version,
                                  kPostgresCompatibleFrom,
                                  postgres::RedactUrl(options.url)));
  handle->SetStatementHook(options.statement_hook);
  return store;
}

Status PostgresStore::AfterLedgerCopy() {
  // Identity columns do not advance for rows inserted with explicit ids.
  for (const char* table : {"runs", "events", "effects"}) {
    RETURN_IF_ERROR(db().Exec(fmt::format(
        "SELECT setval(pg_get_serial_sequence('{0}', 'id'), "
        "coalesce((SELECT max(id) FROM {0}), 0) + 1, false)",
        table)));
  }
  return Status::Ok();
}

Result<Instant> PostgresStore::Now(Instant given) {
  if (!database_clock_) return given;
  std::lock_guard lock(mutex());
  ASSIGN_OR_RETURN(ms, pg_->NowMs());
  return FromMs(ms);
}

template <typename P>
Result<P> PostgresStore::OnDatabaseClock(const P& p) {
  ASSIGN_OR_RETURN(now, Now(p.now));
  P q = p;
  q.now = now;
  return q;
}

#define CRONLEDGER_ON_DATABASE_CLOCK(Method, Params)   \
  auto PostgresStore::Method(const Params& p)->decltype(SqlStore::Method(p)) { \
    ASSIGN_OR_RETURN(q, OnDatabaseClock(p));           \
    return SqlStore::Method(q);                        \
  }

CRONLEDGER_ON_DATABASE_CLOCK(JobSync, JobSyncParams)
CRONLEDGER_ON_DATABASE_CLOCK(PartitionSync, PartitionSyncParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunPlan, PlanParams)
CRONLEDGER_ON_DATABASE_CLOCK(JobSetPaused, PauseParams)
CRONLEDGER_ON_DATABASE_CLOCK(StatsGet, StatsParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunHeartbeat, HeartbeatParams)
CRONLEDGER_ON_DATABASE_CLOCK(StepUpdate, StepParams)
CRONLEDGER_ON_DATABASE_CLOCK(EffectBegin, EffectBeginParams)
CRONLEDGER_ON_DATABASE_CLOCK(EffectCommit, EffectCommitParams)
CRONLEDGER_ON_DATABASE_CLOCK(EffectFail, EffectFailParams)
CRONLEDGER_ON_DATABASE_CLOCK(CheckpointSet, CheckpointSetParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunCancel, OperatorParams)
CRONLEDGER_ON_DATABASE_CLOCK(NodeHeartbeat, NodeBeat)
CRONLEDGER_ON_DATABASE_CLOCK(NodeStopped, NodeBeat)
CRONLEDGER_ON_DATABASE_CLOCK(RoleHold, RoleParams)

// The same, then NOTIFY when the call succeeded: it may have made runs
// claimable (released, back to pending).
#define CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY(Method, Params)                    \
  auto PostgresStore::Method(const Params& p)->decltype(SqlStore::Method(p)) { \
    ASSIGN_OR_RETURN(q, OnDatabaseClock(p));                                   \
    auto result = SqlStore::Method(q);                                         \
    if (result.ok()) NotifyWork();                                             \
    return result;                                                             \
  }

CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY(RunRetry, OperatorParams)
CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY(EffectResolve, EffectResolveParams)
CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY(RunResolve, RunResolveParams)
CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY(RunQueueKeys, QueueKeysParams)
CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY(RunRequeue, RequeueParams)
CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY(RunApprove, ApproveParams)

#undef CRONLEDGER_ON_DATABASE_CLOCK_NOTIFY
#undef CRONLEDGER_ON_DATABASE_CLOCK

Result<ReleaseResult> PostgresStore::RunRelease(const ReleaseParams& p) {
  ASSIGN_OR_RETURN(q, OnDatabaseClock(p));
  auto result = SqlStore::RunRelease(q);
  if (result.ok() && result->released > 0) NotifyWork();
  return result;
}

void PostgresStore::NotifyWork() {
  std::lock_guard lock(mutex());
  // Best effort: a lost notification costs one poll interval, not a run.
  (void)db().Exec(fmt::format("NOTIFY {}", kWorkChannel));
}

PostgresStore::~PostgresStore() {
  stopping_ = true;
  if (listener_.joinable()) listener_.join();
}

void PostgresStore::WatchForWork(std::function<void()> wake) {
  if (listener_.joinable()) return;
  listener_ = std::thread([this, wake = std::move(wake)] { Listen(wake); });
}

// One connection that only listens; reconnects with backoff (1 s doubling
// to 30 s) while the database is away, and wakes the caller after each
// reconnection too, since notifications sent meanwhile were lost.
void PostgresStore::Listen(std::function<void()> wake) {
  using std::chrono::milliseconds;
  milliseconds backoff{1000};
  while (!stopping_) {
    auto connected = postgres::Db::Connect(url_);
    if (!connected.ok()) {
      spdlog::warn("store: work listener cannot connect, retrying in {} ms: {}", backoff.count(),
                   connected.status().message());
      for (milliseconds waited{0}; waited < backoff && !stopping_; waited += milliseconds{100}) {
        std::this_thread::sleep_for(milliseconds{100});
      }
      backoff = std::min(backoff * 2, milliseconds{30000});
      continue;
    }
    std::unique_ptr<postgres::Db> db = std::move(*connected);
    if (Status s = db->Exec(fmt::format("LISTEN {}", kWorkChannel)); !s.ok()) continue;
    backoff = milliseconds{1000};
    wake();
    auto conn = db->Connection();
    if (!conn.ok()) continue;
    PGconn* c = *conn;
    while (!stopping_) {
      pollfd fd{PQsocket(c), POLLIN, 0};
      if (fd.fd < 0) break;
      if (poll(&fd, 1, 200) < 0) continue;
      if (PQconsumeInput(c) == 0) break;  // the connection is gone
      bool notified = false;
      while (PGnotify* n = PQnotifies(c)) {
        notified = true;
        PQfreemem(n);
      }
      if (notified) wake();
    }
  }
}

Result<ReleaseOutlook> PostgresStore::RunReleaseOutlook(Instant now) {
  ASSIGN_OR_RETURN(at, Now(now));
  return SqlStore::RunReleaseOutlook(at);
}

Result<std::vector<RunRecord>> PostgresStore::RunListDue(Instant now, int limit) {
  ASSIGN_OR_RETURN(at, Now(now));
  return SqlStore::RunListDue(at, limit);
}

Result<std::vector<ExpiredLease>> PostgresStore::RunListExpiredLeases(Instant now, int limit) {
  ASSIGN_OR_RETURN(at, Now(now));
  return SqlStore::RunListExpiredLeases(at, limit);
}

Status PostgresStore::EventAppend(const EventRecord& e) {
  ASSIGN_OR_RETURN(at, Now(e.at));
  EventRecord copy = e;
  copy.at = at;
  return SqlStore::EventAppend(copy);
}

Status PostgresStore::EventAppendAll(const std::vector<EventRecord>& events) {
  if (!database_clock_ || events.empty()) return SqlStore::EventAppendAll(events);
  ASSIGN_OR_RETURN(at, Now(events.front().at));
  std::vector<EventRecord> copy = events;
  for (auto& e : copy) e.at = at;
  return SqlStore::EventAppendAll(copy);
}

Result<std::vector<Status>> PostgresStore::RunFinishAttempts(const std::vector<FinishParams>& p) {
  if (!database_clock_ || p.empty()) return SqlStore::RunFinishAttempts(p);
  ASSIGN_OR_RETURN(at, Now(p.front().now));
  std::vector<FinishParams> copy = p;
  for (auto& f : copy) f.now = at;
  return SqlStore::RunFinishAttempts(copy);
}

// The ops are the caller's: each lot is stamped with the database's time as
// the store takes it, and answered in place as usual.
Status PostgresStore::RunEffectBatch(EffectOpSource& source) {
  if (!database_clock_) return SqlStore::RunEffectBatch(source);
  ASSIGN_OR_RETURN(at, Now(Instant{}));
  struct Stamped final : EffectOpSource {
    EffectOpSource* inner;
    Instant at;
    std::span<EffectOp> Next() override {
      std::span<EffectOp> lot = inner->Next();
      for (EffectOp& op : lot) std::visit([this](auto& r) { r.now = at; }, op.request);
      return lot;
    }
  } stamped;
  stamped.inner = &source;
  stamped.at = at;
  return SqlStore::RunEffectBatch(stamped);
}

}  // namespace cronledger::store
