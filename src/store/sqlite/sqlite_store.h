// The embedded default store: one SQLite file in WAL mode.
#ifndef CRONLEDGER_STORE_SQLITE_SQLITE_STORE_H_
#define CRONLEDGER_STORE_SQLITE_SQLITE_STORE_H_

#include <chrono>
#include <memory>
#include <string>

#include "store/sql/sql_store.h"
#include "store/sqlite/sqlite_db.h"

namespace cronledger::store {

struct SqliteOptions {
  std::string path;
  bool synchronous_full = true;  // durability = "full"; false: "normal"
  std::chrono::milliseconds busy_timeout{5000};
  // false: a missing file is kUnavailable instead of a new, empty ledger
  // (read-only commands must not invent one from a mistyped path).
  bool create_if_missing = true;
  // Read-only commands: nothing is ever written, not even the schema or
  // WAL mode (an empty or older file is refused instead, RequireSchema),
  // and the connection refuses writes (PRAGMA query_only). Implies
  // create_if_missing = false.
  bool read_only = false;
  // Fault injection for tests: runs before every SQL statement.
  sqlite::StatementHook statement_hook;
  // Tests: act as an older release would, migrating only this far (0: this
  // binary's kSqliteSchemaVersion).
  int schema_version = 0;
};

// The schema version this binary writes, and the oldest schema version a
// binary must have to use a database this binary has migrated.
inline constexpr int kSqliteSchemaVersion = 13;
inline constexpr int kSqliteCompatibleFrom = 1;

// Several processes may share the file; SQLite's locking and the busy
// timeout order their writes.
class SqliteStore final : public SqlStore {
 public:
  // Opens the file, applies pragmas and pending migrations in one
  // transaction. kFailedPrecondition when the database needs a newer
  // cronledger; kUnavailable / kIOError when it cannot be opened.
  static Result<std::unique_ptr<SqliteStore>> Open(const SqliteOptions& options);

  std::string_view Name() const override { return "sqlite"; }

 private:
  explicit SqliteStore(std::unique_ptr<sqlite::Db> db) : SqlStore(std::move(db)) {}
  static Result<std::unique_ptr<SqliteStore>> OpenOnce(const SqliteOptions& options);
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_SQLITE_SQLITE_STORE_H_
