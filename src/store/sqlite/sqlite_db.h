// The SQLite engine behind the SQL store: one connection, cached prepared
// statements, BEGIN IMMEDIATE transactions, and errors mapped to Status.
#ifndef CRONLEDGER_STORE_SQLITE_SQLITE_DB_H_
#define CRONLEDGER_STORE_SQLITE_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cronledger/status.h"
#include "store/sql/sql_db.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cronledger::store::sqlite {

using StatementHook = sql::StatementHook;

// Maps an SQLite result code (and the connection's message) to a Status:
// busy/locked and cannot-open are kUnavailable, constraint violations
// kConflict, full/read-only/I/O errors kIOError, the rest kInternal.
Status MapSqliteError(int rc, std::string_view message);

class Db;

class Statement final : public sql::Statement {
 public:
  Statement(Db* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement() override;

  void BindInt(int i, int64_t v) override;
  void BindText(int i, std::string_view v) override;
  void BindTextInPlace(int i, std::string_view v) override;
  void BindNull(int i) override;
  Result<bool> Step() override;
  int64_t Int(int col) const override;
  std::string_view TextView(int col) const override;
  bool IsNull(int col) const override;
  int ColumnCount() const override;
  std::string_view ColumnName(int col) const override;
  sql::ColumnType TypeOf(int col) const override;
  void Reset() override;

 private:
  Db* db_;
  sqlite3_stmt* stmt_;
};

// The mode a ledger file is created with: the owner's, readable by its
// group (as attempt logs are), nobody else's. SQLite itself creates files
// 0644 and gives a database's -wal and -shm files the database's own mode,
// so creating the file first with this mode covers all three.
inline constexpr unsigned kLedgerFileMode = 0640;

// Creates `path` empty with kLedgerFileMode (less the umask) unless it
// exists; an empty file is an empty SQLite database. Errors are left to
// SQLite's open, which names them.
void CreateLedgerFile(const std::string& path);

class Db final : public sql::Db {
 public:
  // Opens the database file, creating it (CreateLedgerFile) when missing if
  // `create` is set.
  static Result<std::unique_ptr<Db>> Open(const std::string& path, bool create = true);
  ~Db() override;

  Status Exec(std::string_view sql) override;
  Result<sql::Stmt> Prepare(std::string_view sql) override;
  Result<int64_t> LastInsertRowId() override;
  int Changes() const override;
  // BEGIN IMMEDIATE: writers queue on the busy timeout rather than failing
  // when a read transaction would upgrade. SQLite has one writer: every
  // kind is serialised.
  Status Begin(sql::WriteKind) override { return Exec("BEGIN IMMEDIATE"); }
  Status Commit() override { return Exec("COMMIT"); }
  void Rollback() override;

  Status Error(int rc) const;
  // The main database's file ("" for an in-memory one).
  std::string Path() const;
  sqlite3* handle() const { return db_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  // Looked up by string_view: every statement execution goes through here,
  // and the SQL texts are long.
  struct SqlHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<Statement>, SqlHash, std::equal_to<>> cache_;
};

}  // namespace cronledger::store::sqlite

#endif  // CRONLEDGER_STORE_SQLITE_SQLITE_DB_H_
