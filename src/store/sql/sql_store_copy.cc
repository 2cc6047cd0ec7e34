// SqlStore, whole-ledger copy: `cronledger migrate-store` (SQLite to
// PostgreSQL). Every table of the ledger, in foreign-key order, in one
// transaction of the target, then the counts compared.
#include <algorithm>

#include <fmt/format.h>

#include "store/sql/sql_store.h"
#include "store/sql/sql_util.h"

namespace cronledger::store {
namespace {

// Parents before children. schema_meta is the target's own (Open migrated
// it); the fencing row exists in both and is carried over by UPDATE.
constexpr std::string_view kCopiedTables[] = {
    "jobs",        "job_versions", "partitions", "occurrences",      "settings", "runs",
    "attempts",    "run_steps",    "events",     "event_runs",       "effects",  "effect_doubts",
    "checkpoints", "nodes",        "roles",      "dashboard_grants",
};

Result<int64_t> Count(sql::Db& db, std::string_view table) {
  ASSIGN_OR_RETURN(s, db.Prepare(fmt::format("SELECT count(*) FROM {}", table)));
  ASSIGN_OR_RETURN(row, s.Step());
  return row ? s.Int(0) : 0;
}

Result<int64_t> Single(sql::Db& db, std::string_view sql) {
  ASSIGN_OR_RETURN(s, db.Prepare(sql));
  ASSIGN_OR_RETURN(row, s.Step());
  return row && !s.IsNull(0) ? s.Int(0) : 0;
}

Status CopyTable(sql::Db& from, sql::Db& to, std::string_view table, int64_t* rows) {
  ASSIGN_OR_RETURN(read, from.Prepare(fmt::format("SELECT * FROM {}", table)));
  std::string insert;
  for (;;) {
    ASSIGN_OR_RETURN(row, read.Step());
    if (!row) return Status::Ok();
    const int n = read.ColumnCount();
    if (insert.empty()) {
      std::string columns;
      std::string values;
      for (int i = 0; i < n; ++i) {
        columns += fmt::format("{}{}", i ? ", " : "", read.ColumnName(i));
        values += fmt::format("{}?{}", i ? ", " : "", i + 1);
      }
      insert = fmt::format("INSERT INTO {} ({}) VALUES ({})", table, columns, values);
    }
    ASSIGN_OR_RETURN(write, to.Prepare(insert));
    for (int i = 0; i < n; ++i) {
      switch (read.TypeOf(i)) {
        case sql::ColumnType::kNull:
          write.Bind(i + 1, std::nullopt);
          break;
        case sql::ColumnType::kInt:
          write.Bind(i + 1, read.Int(i));
          break;
        case sql::ColumnType::kText:
          write.Bind(i + 1, read.TextView(i));
          break;
      }
    }
    RETURN_IF_ERROR(write.Run());
    ++*rows;
  }
}

}  // namespace

Result<LedgerCopyReport> SqlStore::CopyLedger(SqlStore& from, SqlStore& to) {
  std::scoped_lock lock(from.mu_, to.mu_);
  sql::Db& src = *from.db_;
  sql::Db& dst = *to.db_;
  for (const auto table : kCopiedTables) {
    ASSIGN_OR_RETURN(n, Count(dst, table));
    if (n > 0) {
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("the target ledger is not empty (table {} has {} row(s)); "
                                "migrate-store copies into a new, empty database only",
                                table, n));
    }
  }
  // The source is read in one transaction too, so that it is one instant's
  // ledger even if a `serve` still writes to it.
  sql::Transaction read(src);
  RETURN_IF_ERROR(read.Begin());
  sql::Transaction write(dst);
  RETURN_IF_ERROR(write.Begin());
  LedgerCopyReport report;
  for (const auto table : kCopiedTables) {
    int64_t rows = 0;
    if (Status s = CopyTable(src, dst, table, &rows); !s.ok()) {
      return Status(s.code(), fmt::format("copying table {}: {}", table, s.message()));
    }
    report.tables.emplace_back(std::string(table), rows);
  }
  // The fencing sequence continues above every token issued so far.
  ASSIGN_OR_RETURN(last_token, Single(src, "SELECT last_token FROM fencing WHERE id = 1"));
  ASSIGN_OR_RETURN(max_attempt, Single(src, "SELECT max(fencing_token) FROM attempts"));
  ASSIGN_OR_RETURN(max_lease, Single(src, "SELECT max(lease_token) FROM runs"));
  report.last_token = std::max({last_token, max_attempt, max_lease});
  {
    ASSIGN_OR_RETURN(s, dst.Prepare("UPDATE fencing SET last_token = ?1 WHERE id = 1"));
    s.Bind(1, report.last_token);
    RETURN_IF_ERROR(s.Run());
  }
  RETURN_IF_ERROR(to.AfterLedgerCopy());
  // Verified inside the target's transaction: a mismatch commits nothing.
  for (const auto& [table, rows] : report.tables) {
    ASSIGN_OR_RETURN(source_rows, Count(src, table));
    ASSIGN_OR_RETURN(target_rows, Count(dst, table));
    if (source_rows != rows || target_rows != rows) {
      return Status(StatusCode::kInternal,
                    fmt::format("table {}: {} row(s) read, {} in the source, {} in the target; "
                                "nothing was committed",
                                table, rows, source_rows, target_rows));
    }
  }
  RETURN_IF_ERROR(write.Commit());
  return report;
}

}  // namespace cronledger::store
