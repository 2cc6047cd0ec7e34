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
  if (options.read_only) {
    RETURN_IF_ERROR(store->RequireSchema(version, postgres::RedactUrl(options.url)));
    RETURN_IF_ERROR(handle->Exec("SET default_transaction_read_only = on"));
  } else {
    RETURN_IF_ERROR(store->Migrate(MigrationsThrough(kPostgresMigrations, version), version,
                                   kPostgresCompatibleFrom, postgres::RedactUrl(options.url)));
  }
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

Result<Instant> PostgresStore::TransactionNow(const std::optional<Instant>& given) {
  if (given && !database_clock_) return *given;
  // Outside a transaction the reading would be an earlier one's.
  if (!pg_->in_transaction()) return Internal("the database clock read outside a transaction");
  return FromMs(pg_->TransactionClockMs());
}

Result<std::optional<int64_t>> PostgresStore::StatementNow(const std::optional<Instant>& given) {
  if (given && !database_clock_) return std::optional<int64_t>(Ms(*given));
  return std::optional<int64_t>();  // the statement's own clock (NowSql)
}

Result<Instant> PostgresStore::LedgerNow(Instant local) {
  if (!database_clock_) return local;
  std::lock_guard lock(mutex());
  ASSIGN_OR_RETURN(ms, pg_->NowMs());
  return FromMs(ms);
}

// After a call that may have made runs claimable, NOTIFY when it succeeded.
#define CRONLEDGER_NOTIFY_AFTER(Method, Params)                                \
  auto PostgresStore::Method(const Params& p)->decltype(SqlStore::Method(p)) { \
    auto result = SqlStore::Method(p);                                         \
    if (result.ok()) NotifyWork();                                             \
    return result;                                                             \
  }

CRONLEDGER_NOTIFY_AFTER(RunRetry, OperatorParams)
CRONLEDGER_NOTIFY_AFTER(EffectResolve, EffectResolveParams)
CRONLEDGER_NOTIFY_AFTER(RunResolve, RunResolveParams)
CRONLEDGER_NOTIFY_AFTER(RunQueueKeys, QueueKeysParams)
CRONLEDGER_NOTIFY_AFTER(RunRequeue, RequeueParams)
CRONLEDGER_NOTIFY_AFTER(RunApprove, ApproveParams)

#undef CRONLEDGER_NOTIFY_AFTER

Result<ReleaseResult> PostgresStore::RunRelease(const ReleaseParams& p) {
  auto result = SqlStore::RunRelease(p);
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

}  // namespace cronledger::store
