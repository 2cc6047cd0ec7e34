#include "store/sqlite/sqlite_backup.h"

#include <sqlite3.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "store/sqlite/sqlite_db.h"

namespace cronledger::store {
namespace {

// Closes a connection on scope exit.
struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close(db); }
};

int64_t CountRows(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  int64_t n = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
    n = sqlite3_column_int64(s, 0);
  }
  sqlite3_finalize(s);
  return n;
}

}  // namespace

Result<SqliteBackupReport> BackupSqlite(const std::string& from, const std::string& to) {
  Connection src;
  if (int rc = sqlite3_open_v2(from.c_str(), &src.db, SQLITE_OPEN_READONLY, nullptr);
      rc != SQLITE_OK) {
    return sqlite::MapSqliteError(rc, fmt::format("cannot open {}: {}", from,
                                                  src.db ? sqlite3_errmsg(src.db) : "no memory"));
  }
  sqlite3_busy_timeout(src.db, 5000);
  const std::string partial = to + ".partial";
  std::filesystem::remove(partial);
  SqliteBackupReport report;
  {
    Connection dst;
    sqlite::CreateLedgerFile(partial);  // a copy of the ledger: its mode
    if (int rc = sqlite3_open(partial.c_str(), &dst.db); rc != SQLITE_OK) {
      return Status(StatusCode::kIOError, fmt::format("cannot write {}: {}", partial,
                                                      sqlite3_errstr(rc)));
    }
    sqlite3_backup* b = sqlite3_backup_init(dst.db, "main", src.db, "main");
    if (b == nullptr) {
      return Status(StatusCode::kIOError,
                    fmt::format("cannot back up to {}: {}", partial, sqlite3_errmsg(dst.db)));
    }
    // All pages in one step: one read transaction, one instant's ledger.
    int rc = sqlite3_backup_step(b, -1);
    report.pages = sqlite3_backup_pagecount(b);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
      std::filesystem::remove(partial);
      return sqlite::MapSqliteError(rc, fmt::format("backing up {} to {}", from, to));
    }
    // The copy is a standalone file: out of WAL mode, so no -wal file is
    // needed beside it.
    sqlite3_exec(dst.db, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr);
    // integrity_check, not quick_check: SQLite 3.40's quick_check (Debian
    // 12's) reports a NULL in a WITHOUT ROWID table whose key is not in
    // column order, such as event_runs, where there is none.
    sqlite3_stmt* check = nullptr;
    std::string verdict;
    if (sqlite3_prepare_v2(dst.db, "PRAGMA integrity_check(1)", -1, &check, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(check) == SQLITE_ROW) {
      verdict = reinterpret_cast<const char*>(sqlite3_column_text(check, 0));
    }
    sqlite3_finalize(check);
    if (verdict != "ok") {
      std::filesystem::remove(partial);
      return Status(StatusCode::kIOError,
                    fmt::format("the copy of {} failed its integrity check: {}", from, verdict));
    }
    report.runs = CountRows(dst.db, "SELECT count(*) FROM runs");
    report.events = CountRows(dst.db, "SELECT count(*) FROM events");
  }
  std::error_code ec;
  std::filesystem::rename(partial, to, ec);
  if (ec) {
    std::filesystem::remove(partial);
    return Status(StatusCode::kIOError, fmt::format("cannot write {}: {}", to, ec.message()));
  }
  report.bytes = static_cast<int64_t>(std::filesystem::file_size(to, ec));
  return report;
}

}  // namespace cronledger::store
