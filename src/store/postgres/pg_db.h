// The PostgreSQL engine behind the SQL store, over libpq: one connection,
// statements prepared on the server on first use, write transactions
// ordered across every node by advisory locks (serialised, or side by side
// where sql::WriteKind allows), and errors mapped to Status by SQLSTATE.
#ifndef CRONLEDGER_STORE_POSTGRES_PG_DB_H_
#define CRONLEDGER_STORE_POSTGRES_PG_DB_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cronledger/status.h"
#include "store/sql/sql_db.h"

struct pg_conn;
struct pg_result;

namespace cronledger::store::postgres {

// The key of the transaction-scoped advisory lock every write transaction
// takes first ("cldg"). kSerial writers take it exclusively: they are
// serialised across nodes as SQLite serialises them within a file, so each
// one's checks (concurrency limits, overlap, fencing) see every earlier
// write. Claims and worker writes take it shared, so they run side by side
// (sql::WriteKind says why that is safe); claims also take kClaimLockKey
// exclusively, one claim at a time. Every transaction takes kWriteLockKey
// before kClaimLockKey, and the rest of its locks after both: no cycle.
inline constexpr int64_t kWriteLockKey = 0x636c6467;
// ("cldc") Claims, one at a time across every node.
inline constexpr int64_t kClaimLockKey = 0x636c6463;

// `url` with any password replaced by "***": what logs and errors may show.
std::string RedactUrl(std::string_view url);

// Rewrites SQLite-style parameters (`?`, `?N`) as PostgreSQL's `$N`, and
// drops the `+` of SQLite's `+column` planner hint, outside quoted literals
// and identifiers; `count` gets the highest parameter number.
std::string RewriteParameters(std::string_view sql, int* count);

// Maps a SQLSTATE (and message) to a Status: connection failures,
// serialisation failures, deadlocks and shutdowns are kUnavailable;
// integrity violations kConflict; disk full and other resource or I/O
// failures kIOError; the rest kInternal.
Status MapSqlState(std::string_view sqlstate, std::string_view message);

class Db;

class Statement final : public sql::Statement {
 public:
  Statement(Db* db, std::string name, std::string text, int params);
  ~Statement() override;

  void BindInt(int i, int64_t v) override;
  void BindText(int i, std::string_view v) override;
  void BindNull(int i) override;
  Result<bool> Step() override;
  int64_t Int(int col) const override;
  std::string_view TextView(int col) const override;
  bool IsNull(int col) const override;
  int ColumnCount() const override;
  std::string_view ColumnName(int col) const override;
  sql::ColumnType TypeOf(int col) const override;
  void Reset() override;

  // The connection was reset: prepare again before the next use.
  void Forget() { prepared_ = false; }

 private:
  Status Execute();

  Db* db_;
  std::string name_;
  std::string text_;
  bool prepared_ = false;
  std::vector<std::optional<std::string>> values_;
  std::vector<unsigned int> types_;  // Oid; 0: let the server infer
  pg_result* result_ = nullptr;
  int rows_ = 0;
  int row_ = -1;
};

class Db final : public sql::Db {
 public:
  // Connects to `url` (a libpq connection URI or key=value string).
  // kUnavailable when the server cannot be reached or refuses.
  static Result<std::unique_ptr<Db>> Connect(const std::string& url);
  ~Db() override;

  Status Exec(std::string_view sql) override;
  Result<sql::Stmt> Prepare(std::string_view sql) override;
  Result<int64_t> LastInsertRowId() override;
  int Changes() const override { return changes_; }
  // Takes the write lock in the mode `kind` needs (kWriteLockKey), then
  // reads the server's clock (TransactionClockMs), in the one round trip.
  Status Begin(sql::WriteKind kind) override;
  Status Commit() override;
  void Rollback() override;
  std::string_view ClockSql() const override { return kStatementClockSql; }

  // The server's clock as the open transaction's Begin read it, in
  // milliseconds since the Unix epoch: clock_timestamp() once the write lock
  // was granted, not now() (the transaction's start), so that serialised
  // writers judge at instants in the order they write, whatever they waited
  // for the lock. Read once: every statement of the transaction uses it.
  int64_t TransactionClockMs() const { return transaction_clock_ms_; }

  // The database server's clock, in milliseconds since the Unix epoch: one
  // round trip of its own (Store::LedgerNow).
  Result<int64_t> NowMs();

  // A statement's instant: statement_timestamp() is constant within it, so
  // that every row of a read is judged at one instant.
  static constexpr std::string_view kStatementClockSql =
      "floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint";

  // For Statement: the connection, re-established first when it was lost.
  Result<pg_conn*> Connection();
  void SetChanges(int n) { changes_ = n; }
  bool in_transaction() const { return in_transaction_; }
  // A Status for a failed result (nullptr: the connection failed).
  Status Error(const pg_result* result) const;

 private:
  Db(pg_conn* conn, std::string url) : conn_(conn), url_(std::move(url)) {}
  // Runs a simple-protocol command and checks its result.
  Status Command(const char* sql);
  // Runs simple-protocol SQL whose last statement answers one bigint.
  Result<int64_t> SelectInt(const char* sql);
  static constexpr std::string_view kClockSql =
      "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

  pg_conn* conn_;
  std::string url_;
  int changes_ = 0;
  int next_name_ = 0;
  bool in_transaction_ = false;
  int64_t transaction_clock_ms_ = 0;
  struct SqlHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<Statement>, SqlHash, std::equal_to<>> cache_;
};

}  // namespace cronledger::store::postgres

#endif  // CRONLEDGER_STORE_POSTGRES_PG_DB_H_
