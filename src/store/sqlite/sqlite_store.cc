#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

constexpr Migration kSqliteMigrations[] = {
#include "sqlite_migrations.inc"
};

// What migrations check before their commit, having run with foreign keys
// off: that every reference still finds its row.
Status CheckForeignKeys(sqlite::Db& d) {
  ASSIGN_OR_RETURN(s, d.Prepare("PRAGMA foreign_key_check"));
  ASSIGN_OR_RETURN(row, s.Step());
  if (!row) return Status::Ok();
  return Internal(fmt::format(
      "migrating the ledger broke a reference: table {} row {} refers to a missing row of {}",
      s.Text(0), s.Int(1), s.Text(2)));
}

}  // namespace

// Several processes may open a new file at once (two nodes, or a command
// run while serve starts). Switching a fresh file to WAL needs an exclusive
// lock, and SQLite reports a lock conflict there at once rather than through
// the busy handler, so opening is retried on kUnavailable for about the
// busy timeout.
Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const SqliteOptions& options) {
  constexpr auto kPause = std::chrono::milliseconds(50);
  const int tries = std::max<int>(1, static_cast<int>(options.busy_timeout / kPause));
  for (int i = 1;; ++i) {
    auto store = OpenOnce(options);
    const std::string message = store.status().message();
    const bool contended = !store.ok() && (message.find("locked") != std::string::npos ||
                                           message.find("busy") != std::string::npos);
    if (!contended || i >= tries) return store;
    std::this_thread::sleep_for(kPause);
  }
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::OpenOnce(const SqliteOptions& options) {
  ASSIGN_OR_RETURN(db,
                   sqlite::Db::Open(options.path, options.create_if_missing && !options.read_only));
  sqlite::Db* db_handle = db.get();
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db)));
  sqlite::Db& d = *db_handle;
  RETURN_IF_ERROR(d.Exec(fmt::format("PRAGMA busy_timeout = {}", options.busy_timeout.count())));
  const int version = options.schema_version > 0 ? options.schema_version : kSqliteSchemaVersion;
  if (options.read_only) {
    RETURN_IF_ERROR(store->RequireSchema(version, options.path));
    RETURN_IF_ERROR(d.Exec("PRAGMA foreign_keys = ON"));
    RETURN_IF_ERROR(d.Exec("PRAGMA query_only = ON"));
    d.SetStatementHook(options.statement_hook);
    return store;
  }
  // Only a file not yet in WAL mode needs the exclusive lock of the switch.
  bool wal = false;
  {
    ASSIGN_OR_RETURN(s, d.Prepare("PRAGMA journal_mode"));
    ASSIGN_OR_RETURN(row, s.Step());
    wal = row && s.Text(0) == "wal";
  }
  if (!wal) RETURN_IF_ERROR(d.Exec("PRAGMA journal_mode = WAL"));
  RETURN_IF_ERROR(d.Exec(options.synchronous_full ? "PRAGMA synchronous = FULL"
                                                  : "PRAGMA synchronous = NORMAL"));
  // Migrations run with foreign keys off: a table rebuilt to change a
  // CHECK (009) is dropped and replaced while other tables refer to it, as
  // SQLite's documentation does it. Before the commit, every reference is
  // checked instead.
  RETURN_IF_ERROR(d.Exec("PRAGMA foreign_keys = OFF"));
  RETURN_IF_ERROR(store->Migrate(MigrationsThrough(kSqliteMigrations, version), version,
                                  kSqliteCompatibleFrom, options.path,
                                  [&d] { return CheckForeignKeys(d); }));
  RETURN_IF_ERROR(d.Exec("PRAGMA foreign_keys = ON"));
  d.SetStatementHook(options.statement_hook);
  return store;
}

}  // namespace cronledger::store
