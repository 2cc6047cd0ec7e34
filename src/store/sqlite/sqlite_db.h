// A thin RAII layer over the SQLite C API: one connection, cached prepared
// statements, transactions, and errors mapped to Status.
#ifndef CRONLEDGER_STORE_SQLITE_SQLITE_DB_H_
#define CRONLEDGER_STORE_SQLITE_SQLITE_DB_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cronledger/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cronledger::store::sqlite {

// Maps an SQLite result code (and the connection's message) to a Status:
// busy/locked and cannot-open are kUnavailable, constraint violations
// kConflict, full/read-only/I/O errors kIOError, the rest kInternal.
Status MapSqliteError(int rc, std::string_view message);

// Called before every statement runs; a non-ok Status makes the statement
// fail with it instead (fault injection in tests).
using StatementHook = std::function<Status(std::string_view sql)>;

class Db;

// A prepared statement, reset and unbound when the handle goes out of scope.
class Stmt {
 public:
  // `sql` must outlive the Stmt (the Db's cache owns it).
  Stmt(Db* db, sqlite3_stmt* stmt, std::string_view sql) : db_(db), stmt_(stmt), sql_(sql) {}
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_), sql_(o.sql_) { o.stmt_ = nullptr; }
  ~Stmt();

  // 1-based parameter index.
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, std::string_view v);
  Stmt& Bind(int i, std::nullopt_t);
  Stmt& BindOptional(int i, const std::optional<int64_t>& v);
  Stmt& BindOptional(int i, const std::optional<std::string>& v);

  // Advances: true with a row, false when done.
  Result<bool> Step();
  // Runs to completion (no rows expected).
  Status Run();

  int64_t Int(int col) const;
  std::string Text(int col) const;
  // The column's text, valid until the next Step or column call.
  std::string_view TextView(int col) const;
  bool IsNull(int col) const;
  std::optional<int64_t> OptInt(int col) const;

 private:
  Db* db_;
  sqlite3_stmt* stmt_;
  std::string_view sql_;
  bool started_ = false;
};

class Db {
 public:
  // Opens the database file, creating it when missing if `create` is set.
  static Result<std::unique_ptr<Db>> Open(const std::string& path, bool create = true);
  ~Db();

  // Runs one or more statements without results (pragmas, DDL).
  Status Exec(std::string_view sql);
  // A cached prepared statement for `sql`.
  Result<Stmt> Prepare(std::string_view sql);

  int64_t LastInsertRowId() const;
  int Changes() const;

  void SetStatementHook(StatementHook hook) { hook_ = std::move(hook); }
  // Runs the hook, if any, for `sql`.
  Status BeforeStatement(std::string_view sql);

  Status Error(int rc) const;
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
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache_;
  StatementHook hook_;
};

// BEGIN IMMEDIATE on construction (so writers queue on the busy timeout
// rather than failing on upgrade), ROLLBACK unless Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Db& db) : db_(db) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Status Begin();
  Status Commit();

 private:
  Db& db_;
  bool open_ = false;
};

}  // namespace cronledger::store::sqlite

#endif  // CRONLEDGER_STORE_SQLITE_SQLITE_DB_H_
