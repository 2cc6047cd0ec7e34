// `cronledger backup` for SQLite: a consistent copy of a live ledger file.
#ifndef CRONLEDGER_STORE_SQLITE_SQLITE_BACKUP_H_
#define CRONLEDGER_STORE_SQLITE_SQLITE_BACKUP_H_

#include <cstdint>
#include <string>

#include "cronledger/status.h"

namespace cronledger::store {

struct SqliteBackupReport {
  int64_t pages = 0;
  int64_t bytes = 0;
  int64_t runs = 0;
  int64_t events = 0;
};

// Copies the database at `from` to `to` with SQLite's online backup API, in
// one read transaction (WAL: a running `serve` keeps writing meanwhile), into
// a temporary file beside `to` that is checked (PRAGMA integrity_check) and then
// renamed over `to`, so `to` is never a partial copy. kUnavailable when
// `from` cannot be opened; kIOError when `to` cannot be written.
Result<SqliteBackupReport> BackupSqlite(const std::string& from, const std::string& to);

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_SQLITE_SQLITE_BACKUP_H_
