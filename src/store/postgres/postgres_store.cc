#include "store/postgres/postgres_store.h"

#include <fmt/format.h>

#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

using namespace sql_util;  // NOLINT: the store's own helpers

constexpr Migration kMigrations[] = {
#include "postgres_migrations.inc"
};

}  // namespace

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const PostgresOptions& options) {
  ASSIGN_OR_RETURN(db, postgres::Db::Connect(options.url));
  postgres::Db* handle = db.get();
  std::unique_ptr<PostgresStore> store(new PostgresStore(std::move(db), options.database_clock));
  store->pg_ = handle;
  RETURN_IF_ERROR(store->Migrate(kMigrations, kPostgresSchemaVersion, kPostgresCompatibleFrom,
                                  postgres::RedactUrl(options.url)));
  handle->SetStatementHook(options.statement_hook);
  return store;
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
CRONLEDGER_ON_DATABASE_CLOCK(RunRelease, ReleaseParams)
CRONLEDGER_ON_DATABASE_CLOCK(JobSetPaused, PauseParams)
CRONLEDGER_ON_DATABASE_CLOCK(StatsGet, StatsParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunClaim, ClaimParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunHeartbeat, HeartbeatParams)
CRONLEDGER_ON_DATABASE_CLOCK(StepUpdate, StepParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunRetry, OperatorParams)
CRONLEDGER_ON_DATABASE_CLOCK(EffectBegin, EffectBeginParams)
CRONLEDGER_ON_DATABASE_CLOCK(EffectCommit, EffectCommitParams)
CRONLEDGER_ON_DATABASE_CLOCK(EffectFail, EffectFailParams)
CRONLEDGER_ON_DATABASE_CLOCK(EffectResolve, EffectResolveParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunResolve, RunResolveParams)
CRONLEDGER_ON_DATABASE_CLOCK(CheckpointSet, CheckpointSetParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunQueueKeys, QueueKeysParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunRequeue, RequeueParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunApprove, ApproveParams)
CRONLEDGER_ON_DATABASE_CLOCK(RunCancel, OperatorParams)

#undef CRONLEDGER_ON_DATABASE_CLOCK

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

Result<std::vector<Status>> PostgresStore::RunApplyWrites(const std::vector<WorkerWrite>& writes) {
  if (!database_clock_ || writes.empty()) return SqlStore::RunApplyWrites(writes);
  ASSIGN_OR_RETURN(at, Now(Instant{}));
  std::vector<WorkerWrite> copy = writes;
  for (auto& w : copy) {
    if (w.step) w.step->now = at;
    if (w.finish) w.finish->now = at;
  }
  return SqlStore::RunApplyWrites(copy);
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
