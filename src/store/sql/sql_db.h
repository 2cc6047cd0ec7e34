// The seam between the ledger's SQL (store/sql, written once) and a database
// engine (store/sqlite, store/postgres): a connection with cached prepared
// statements, transactions, and errors mapped to Status.
//
// The SQL the store writes is the common dialect of SQLite 3.40 and
// PostgreSQL 15: `?` and `?N` parameters (a backend rewrites them), INTEGER
// (64-bit) and TEXT values, ON CONFLICT upserts, partial indexes, and
// SQLite's `+column` hint (PostgreSQL's rewrite drops the `+`). Anything
// engine-specific (pragmas, locking, the database clock) stays in the
// backend.
#ifndef CRONLEDGER_STORE_SQL_SQL_DB_H_
#define CRONLEDGER_STORE_SQL_SQL_DB_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cronledger/status.h"

namespace cronledger::store::sql {

// Called before every statement runs; a non-ok Status makes the statement
// fail with it instead (fault injection in tests).
using StatementHook = std::function<Status(std::string_view sql)>;

// What a column of the current row holds.
enum class ColumnType { kNull, kInt, kText };

// What a write transaction may run beside (docs/deploy.md, "Writers side by
// side").
enum class WriteKind {
  // Serialised with every other write transaction of every node: what
  // checks the ledger and then writes (operator actions, planning, the
  // reaper, heartbeats, effects) sees every earlier write and no later one.
  kSerial,
  // A claim: serialised with every other claim and kSerial transaction, so
  // its concurrency and overlap checks count every claim before it. It may
  // run beside kWorkerWrite transactions: those only end leased runs, which
  // a claim never touches, and an end it does not see yet only makes its
  // counts higher than they are (it claims less, never more).
  kClaim,
  // A group commit of a node's fenced worker writes (step results, ends):
  // each row is written only where the run's current token is the writer's
  // (in the UPDATE's own WHERE, rechecked under the row lock), so such
  // transactions may run beside each other and beside one claim. The reaper
  // and operators, which take leases away, are kSerial: never beside them.
  kWorkerWrite,
};

// A backend's prepared statement, owned by its Db's cache. Parameters are
// 1-based, columns 0-based.
class Statement {
 public:
  virtual ~Statement() = default;
  virtual void BindInt(int i, int64_t v) = 0;
  virtual void BindText(int i, std::string_view v) = 0;
  // As BindText, without a copy where the backend can read `v` in place:
  // `v` must stay valid until the statement is reset.
  virtual void BindTextInPlace(int i, std::string_view v) { BindText(i, v); }
  virtual void BindNull(int i) = 0;
  // Advances: true with a row, false when done.
  virtual Result<bool> Step() = 0;
  virtual int64_t Int(int col) const = 0;
  // The column's text, valid until the next Step or Reset.
  virtual std::string_view TextView(int col) const = 0;
  virtual bool IsNull(int col) const = 0;
  // The result's shape, known once Step has returned a row (whole-ledger
  // copies read tables without naming their columns).
  virtual int ColumnCount() const = 0;
  virtual std::string_view ColumnName(int col) const = 0;
  virtual ColumnType TypeOf(int col) const = 0;
  // Back to unexecuted, with no parameters bound.
  virtual void Reset() = 0;
};

class Db;

// A prepared statement in use, reset and unbound when the handle goes out
// of scope.
class Stmt {
 public:
  // `sql` must outlive the Stmt (the Db's cache owns it).
  Stmt(Db* db, Statement* stmt, std::string_view sql) : db_(db), stmt_(stmt), sql_(sql) {}
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_), sql_(o.sql_), started_(o.started_) {
    o.stmt_ = nullptr;
  }
  ~Stmt() {
    if (stmt_ != nullptr) stmt_->Reset();
  }

  Stmt& Bind(int i, int64_t v) {
    stmt_->BindInt(i, v);
    return *this;
  }
  Stmt& Bind(int i, std::string_view v) {
    stmt_->BindText(i, v);
    return *this;
  }
  // Binds `v` without copying it (SQLite reads it in place; a copy and a
  // free per value, a tenth of a finish's cost): for values that outlive
  // this handle, which resets the statement and unbinds `v` when it goes.
  Stmt& BindInPlace(int i, std::string_view v) {
    stmt_->BindTextInPlace(i, v);
    return *this;
  }
  Stmt& Bind(int i, std::nullopt_t) {
    stmt_->BindNull(i);
    return *this;
  }
  Stmt& BindOptional(int i, const std::optional<int64_t>& v) {
    return v ? Bind(i, *v) : Bind(i, std::nullopt);
  }
  Stmt& BindOptional(int i, const std::optional<std::string>& v) {
    return v ? Bind(i, std::string_view(*v)) : Bind(i, std::nullopt);
  }

  // Advances: true with a row, false when done.
  Result<bool> Step();
  // Runs to completion (no rows expected).
  Status Run();

  int64_t Int(int col) const { return stmt_->Int(col); }
  std::string Text(int col) const { return std::string(stmt_->TextView(col)); }
  // The column's text, valid until the next Step or column call.
  std::string_view TextView(int col) const { return stmt_->TextView(col); }
  bool IsNull(int col) const { return stmt_->IsNull(col); }
  int ColumnCount() const { return stmt_->ColumnCount(); }
  std::string_view ColumnName(int col) const { return stmt_->ColumnName(col); }
  ColumnType TypeOf(int col) const { return stmt_->TypeOf(col); }
  std::optional<int64_t> OptInt(int col) const {
    if (IsNull(col)) return std::nullopt;
    return Int(col);
  }

 private:
  Db* db_;
  Statement* stmt_;
  std::string_view sql_;
  bool started_ = false;
};

class Db {
 public:
  virtual ~Db() = default;

  // Runs one or more statements without results (DDL, SAVEPOINT).
  virtual Status Exec(std::string_view sql) = 0;
  // A cached prepared statement for `sql`.
  virtual Result<Stmt> Prepare(std::string_view sql) = 0;

  // The id the last INSERT of this connection gave its row.
  virtual Result<int64_t> LastInsertRowId() = 0;
  // Rows changed by the last INSERT, UPDATE or DELETE that ran to its end.
  virtual int Changes() const = 0;

  // A write transaction. By default writers of one database are
  // serialised, as with SQLite's single writer, so that the store's checks
  // and writes are never interleaved with another writer's. An engine with
  // row locks (PostgreSQL) runs a claim (WriteKind::kClaim) and worker
  // writes (kWorkerWrite) side by side; SQLite serialises them all.
  virtual Status Begin(WriteKind kind = WriteKind::kSerial) = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;

  // The engine's clock as an SQL expression (milliseconds since the Unix
  // epoch, constant within one statement), for the store's
  // `coalesce(?, clock)`; "NULL" for an engine without one (SQLite: the
  // store pins every instant, store/sql/sql_store.h).
  virtual std::string_view ClockSql() const { return "NULL"; }

  void SetStatementHook(StatementHook hook) { hook_ = std::move(hook); }
  // Runs the hook, if any, for `sql`.
  Status BeforeStatement(std::string_view sql) { return hook_ ? hook_(sql) : Status::Ok(); }

  // A count of something written that is true only once it is committed
  // (the store's refused stale writes, for a metric): Tally() inside a
  // Transaction counts at its COMMIT and not at all if it rolls back;
  // outside one, at once. Tallied() may be read from any thread.
  void Tally() {
    if (in_transaction_) {
      ++uncommitted_tally_;
    } else {
      tally_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  int64_t Tallied() const { return tally_.load(std::memory_order_relaxed); }

 private:
  friend class Transaction;

  StatementHook hook_;
  bool in_transaction_ = false;
  int64_t uncommitted_tally_ = 0;
  std::atomic<int64_t> tally_{0};
};

// Begin() opens a write transaction; rolled back unless Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Db& db) : db_(db) {}
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (!open_) return;
    db_.Rollback();
    db_.in_transaction_ = false;
    db_.uncommitted_tally_ = 0;
  }

  Status Begin(WriteKind kind = WriteKind::kSerial) {
    if (Status s = db_.Begin(kind); !s.ok()) return s;
    open_ = true;
    db_.in_transaction_ = true;
    db_.uncommitted_tally_ = 0;
    return Status::Ok();
  }
  Status Commit() {
    if (Status s = db_.Commit(); !s.ok()) return s;
    open_ = false;
    db_.in_transaction_ = false;
    db_.tally_.fetch_add(std::exchange(db_.uncommitted_tally_, 0), std::memory_order_relaxed);
    return Status::Ok();
  }

 private:
  Db& db_;
  bool open_ = false;
};

inline Result<bool> Stmt::Step() {
  if (!started_) {
    started_ = true;
    if (Status s = db_->BeforeStatement(sql_); !s.ok()) return s;
  }
  return stmt_->Step();
}

inline Status Stmt::Run() {
  for (;;) {
    auto r = Step();
    if (!r.ok()) return r.status();
    if (!*r) return Status::Ok();
  }
}

}  // namespace cronledger::store::sql

#endif  // CRONLEDGER_STORE_SQL_SQL_DB_H_
