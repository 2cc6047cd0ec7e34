#include "store/postgres/pg_db.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace cronledger::store::postgres {
namespace {

constexpr unsigned int kInt8Oid = 20;
constexpr unsigned int kTextOid = 25;

bool IndeterminateType(const PGresult* r) {
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  return state != nullptr && std::string_view(state) == "42P18";
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  // postgresql://user:password@host/db
  const auto scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    const auto at = url.find('@', scheme + 3);
    const auto colon = url.find(':', scheme + 3);
    if (at != std::string_view::npos && colon != std::string_view::npos && colon < at) {
      return fmt::format("{}:***{}", url.substr(0, colon), url.substr(at));
    }
  }
  // key=value form, and password= in a URI's query
  std::string out(url);
  for (std::size_t pos = 0; (pos = out.find("password=", pos)) != std::string::npos;) {
    pos += 9;
    auto end = out.find_first_of(" &", pos);
    if (end == std::string::npos) end = out.size();
    out.replace(pos, end - pos, "***");
  }
  return out;
}

std::string RewriteParameters(std::string_view sql, int* count) {
  std::string out;
  out.reserve(sql.size() + 16);
  int highest = 0;
  char quote = 0;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote != 0) {
      out += c;
      if (c == quote) quote = 0;  // a doubled quote closes and reopens: same result
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c == '+' && i + 1 < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i + 1])) &&
        (i == 0 || sql[i - 1] == ' ' || sql[i - 1] == '(' || sql[i - 1] == ',')) {
      continue;  // `+column`: SQLite's way to keep an index out of a plan
    }
    if (c != '?') {
      out += c;
      continue;
    }
    std::size_t j = i + 1;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
    int n = 0;
    if (j > i + 1) {
      std::from_chars(sql.data() + i + 1, sql.data() + j, n);
    } else {
      n = highest + 1;  // SQLite: one more than the largest assigned so far
    }
    highest = std::max(highest, n);
    out += fmt::format("${}", n);
    i = j - 1;
  }
  if (count != nullptr) *count = highest;
  return out;
}

Status MapSqlState(std::string_view sqlstate, std::string_view message) {
  const std::string text =
      sqlstate.empty() ? fmt::format("postgresql: {}", message)
                       : fmt::format("postgresql: {} (SQLSTATE {})", message, sqlstate);
  const std::string_view cls = sqlstate.substr(0, std::min<std::size_t>(2, sqlstate.size()));
  if (sqlstate.empty() || cls == "08" || sqlstate == "40001" || sqlstate == "40P01" ||
      cls == "57") {
    return Status(StatusCode::kUnavailable, text);
  }
  if (cls == "23") return Status(StatusCode::kConflict, text);
  if (cls == "53" || cls == "58") return Status(StatusCode::kIOError, text);
  return Status(StatusCode::kInternal, text);
}

// ---- Statement ---------------------------------------------------------------

Statement::Statement(Db* db, std::string name, std::string text, int params)
    : db_(db), name_(std::move(name)), text_(std::move(text)),
      values_(static_cast<std::size_t>(params)), types_(static_cast<std::size_t>(params), 0) {}

Statement::~Statement() { PQclear(result_); }

void Statement::BindInt(int i, int64_t v) {
  values_[static_cast<std::size_t>(i - 1)] = std::to_string(v);
  if (!prepared_) types_[static_cast<std::size_t>(i - 1)] = kInt8Oid;
}
void Statement::BindText(int i, std::string_view v) {
  values_[static_cast<std::size_t>(i - 1)] = std::string(v);
  if (!prepared_) types_[static_cast<std::size_t>(i - 1)] = kTextOid;
}
void Statement::BindNull(int i) { values_[static_cast<std::size_t>(i - 1)].reset(); }

Status Statement::Execute() {
  auto conn = db_->Connection();
  if (!conn.ok()) return conn.status();
  if (!prepared_) {
    // Prepared with the types of the first use: integers as bigint, text as
    // text, and NULL inferred from where it appears.
    // A failed PREPARE would abort the transaction it runs in: guard the
    // first use of a statement with a savepoint (once per connection).
    const bool guarded = db_->in_transaction();
    if (guarded) PQclear(PQexec(*conn, "SAVEPOINT cl_prepare"));
    PGresult* r = PQprepare(*conn, name_.c_str(), text_.c_str(), static_cast<int>(types_.size()),
                            types_.data());
    bool ok = r != nullptr && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok && r != nullptr && IndeterminateType(r)) {
      // A NULL the server cannot place (`? IS NULL`): text, as SQLite sees it.
      if (guarded) PQclear(PQexec(*conn, "ROLLBACK TO SAVEPOINT cl_prepare"));
      for (auto& t : types_) t = t == 0 ? kTextOid : t;
      PQclear(r);
      r = PQprepare(*conn, name_.c_str(), text_.c_str(), static_cast<int>(types_.size()),
                    types_.data());
      ok = r != nullptr && PQresultStatus(r) == PGRES_COMMAND_OK;
    }
    if (guarded && ok) PQclear(PQexec(*conn, "RELEASE SAVEPOINT cl_prepare"));
    Status s = ok ? Status::Ok() : db_->Error(r);
    PQclear(r);
    if (!ok) return s;
    prepared_ = true;
  }
  std::vector<const char*> values(values_.size());
  for (std::size_t i = 0; i < values_.size(); ++i) {
    values[i] = values_[i] ? values_[i]->c_str() : nullptr;
  }
  result_ = PQexecPrepared(*conn, name_.c_str(), static_cast<int>(values.size()), values.data(),
                           nullptr, nullptr, 0);
  const ExecStatusType st = result_ ? PQresultStatus(result_) : PGRES_FATAL_ERROR;
  if (st == PGRES_TUPLES_OK) {
    rows_ = PQntuples(result_);
  } else if (st == PGRES_COMMAND_OK) {
    rows_ = 0;
  } else {
    Status s = db_->Error(result_);
    PQclear(result_);
    result_ = nullptr;
    return s;
  }
  const char* affected = PQcmdTuples(result_);
  int n = 0;
  if (affected != nullptr && *affected != '\0') std::from_chars(affected, affected + std::strlen(affected), n);
  db_->SetChanges(n);
  return Status::Ok();
}

Result<bool> Statement::Step() {
  if (result_ == nullptr) {
    if (Status s = Execute(); !s.ok()) return s;
    row_ = -1;
  }
  ++row_;
  return row_ < rows_;
}

int64_t Statement::Int(int col) const {
  const char* v = PQgetvalue(result_, row_, col);
  const int len = PQgetlength(result_, row_, col);
  if (len == 1 && (*v == 't' || *v == 'f')) return *v == 't' ? 1 : 0;  // a boolean
  int64_t n = 0;
  std::from_chars(v, v + len, n);
  return n;
}

std::string_view Statement::TextView(int col) const {
  return std::string_view(PQgetvalue(result_, row_, col),
                          static_cast<std::size_t>(PQgetlength(result_, row_, col)));
}

bool Statement::IsNull(int col) const { return PQgetisnull(result_, row_, col) != 0; }

int Statement::ColumnCount() const { return result_ ? PQnfields(result_) : 0; }
std::string_view Statement::ColumnName(int col) const { return PQfname(result_, col); }
sql::ColumnType Statement::TypeOf(int col) const {
  if (PQgetisnull(result_, row_, col) != 0) return sql::ColumnType::kNull;
  switch (PQftype(result_, col)) {
    case 20:  // int8
    case 21:  // int2
    case 23:  // int4
      return sql::ColumnType::kInt;
    default:
      return sql::ColumnType::kText;
  }
}

void Statement::Reset() {
  PQclear(result_);
  result_ = nullptr;
  rows_ = 0;
  row_ = -1;
  for (auto& v : values_) v.reset();
}

// ---- Db ------------------------------------------------------------------------

Result<std::unique_ptr<Db>> Db::Connect(const std::string& url) {
  // A default connect timeout, so that reconnecting to a database host that
  // is gone fails within seconds instead of the OS's minutes; the URL's own
  // connect_timeout, if any, comes later and wins. The name the database
  // shows for the connection (pg_stat_activity, its logs) is "cronledger"
  // unless the URL or PGAPPNAME names one.
  const char* keywords[] = {"connect_timeout", "fallback_application_name", "dbname", nullptr};
  const char* values[] = {"10", "cronledger", url.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    std::string message = conn ? PQerrorMessage(conn) : "out of memory";
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    PQfinish(conn);
    // libpq quotes the URL it could not read, password and all.
    const std::string redacted = RedactUrl(url);
    for (std::size_t at; !url.empty() && (at = message.find(url)) != std::string::npos;) {
      message.replace(at, url.size(), redacted);
    }
    return Status(StatusCode::kUnavailable,
                  fmt::format("postgresql: cannot connect to {}: {}", redacted, message));
  }
  // Notices (e.g. "there is no transaction in progress") are not errors.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Db>(new Db(conn, url));
}

Db::~Db() {
  cache_.clear();
  PQfinish(conn_);
}

Result<pg_conn*> Db::Connection() {
  if (PQstatus(conn_) == CONNECTION_OK) return conn_;
  if (in_transaction_) {
    // Never carry on outside the transaction the earlier statements were in.
    return Status(StatusCode::kUnavailable, "postgresql: the connection was lost");
  }
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("postgresql: cannot reconnect to {}: {}", RedactUrl(url_),
                              PQerrorMessage(conn_)));
  }
  for (auto& [sql, stmt] : cache_) stmt->Forget();
  return conn_;
}

Status Db::Error(const pg_result* result) const {
  if (result == nullptr) {
    return MapSqlState("", fmt::format("the connection failed: {}", PQerrorMessage(conn_)));
  }
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  std::string message = PQresultErrorMessage(result);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  if (message.empty()) message = PQerrorMessage(conn_);
  return MapSqlState(state ? state : "", message);
}

Status Db::Command(const char* sql) {
  auto conn = Connection();
  if (!conn.ok()) return conn.status();
  PGresult* r = PQexec(*conn, sql);
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  Status s = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? Status::Ok() : Error(r);
  PQclear(r);
  return s;
}

Status Db::Exec(std::string_view sql) {
  if (Status s = BeforeStatement(sql); !s.ok()) return s;
  return Command(std::string(sql).c_str());
}

Result<sql::Stmt> Db::Prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    int params = 0;
    std::string text = RewriteParameters(sql, &params);
    auto stmt = std::make_unique<Statement>(this, fmt::format("cl{}", ++next_name_),
                                            std::move(text), params);
    it = cache_.emplace(std::string(sql), std::move(stmt)).first;
  }
  return sql::Stmt(this, it->second.get(), it->first);
}

Result<int64_t> Db::LastInsertRowId() { return SelectInt("SELECT lastval()"); }

Result<int64_t> Db::SelectInt(const char* sql) {
  auto conn = Connection();
  if (!conn.ok()) return conn.status();
  PGresult* r = PQexec(*conn, sql);
  if (r == nullptr || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
    Status s = Error(r);
    PQclear(r);
    return s;
  }
  int64_t value = 0;
  const char* v = PQgetvalue(r, 0, 0);
  std::from_chars(v, v + PQgetlength(r, 0, 0), value);
  PQclear(r);
  return value;
}

Status Db::Begin(sql::WriteKind kind) {
  if (Status s = BeforeStatement("BEGIN"); !s.ok()) return s;
  std::string sql;
  switch (kind) {
    case sql::WriteKind::kSerial:
      sql = fmt::format("BEGIN; SELECT pg_advisory_xact_lock({})", kWriteLockKey);
      break;
    case sql::WriteKind::kClaim:
      sql = fmt::format("BEGIN; SELECT pg_advisory_xact_lock_shared({}); "
                        "SELECT pg_advisory_xact_lock({})",
                        kWriteLockKey, kClaimLockKey);
      break;
    case sql::WriteKind::kWorkerWrite:
      sql = fmt::format("BEGIN; SELECT pg_advisory_xact_lock_shared({})", kWriteLockKey);
      break;
  }
  // Last, after the locks: PQexec answers the last statement's result.
  sql += fmt::format("; SELECT {}", kClockSql);
  auto ms = SelectInt(sql.c_str());
  if (!ms.ok()) {
    Rollback();
    return ms.status();
  }
  transaction_clock_ms_ = *ms;
  in_transaction_ = true;
  return Status::Ok();
}

Status Db::Commit() {
  if (Status s = BeforeStatement("COMMIT"); !s.ok()) return s;
  auto conn = Connection();
  if (!conn.ok()) return conn.status();
  PGresult* r = PQexec(*conn, "COMMIT");
  const bool ok = r != nullptr && PQresultStatus(r) == PGRES_COMMAND_OK;
  Status s = Status::Ok();
  if (!ok) {
    s = Error(r);
    if (r == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      // The COMMIT may have reached the server: callers re-check what they
      // wrote instead of assuming either way.
      s = Status(StatusCode::kUnavailable,
                 fmt::format("postgresql: the connection was lost at COMMIT; the transaction's "
                             "outcome is unknown: {}", s.message()));
    }
  }
  PQclear(r);
  in_transaction_ = false;
  return s;
}

void Db::Rollback() {
  in_transaction_ = false;
  if (PQstatus(conn_) == CONNECTION_OK) PQclear(PQexec(conn_, "ROLLBACK"));
}

Result<int64_t> Db::NowMs() { return SelectInt(fmt::format("SELECT {}", kClockSql).c_str()); }

}  // namespace cronledger::store::postgres
