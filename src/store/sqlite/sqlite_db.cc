#include "store/sqlite/sqlite_db.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace cronledger::store::sqlite {
namespace {

// SQLite says "unable to open database file" or "attempt to write a
// readonly database" and names neither the file nor why: when the ledger's
// folder cannot be written, say so, since that is what an operator fixes.
std::string WhyNotWritable(int rc, const std::string& path) {
  switch (rc & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_PERM:
      break;
    default:
      return "";
  }
  if (path.empty() || path == ":memory:") return "";
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0) {
    return fmt::format("; the file system holding {} is mounted read-only", dir);
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return fmt::format("; the folder {} is not writable: {}", dir, std::strerror(errno));
  }
  if (access(path.c_str(), F_OK) == 0 && access(path.c_str(), W_OK) != 0) {
    return fmt::format("; {} is not writable: {}", path, std::strerror(errno));
  }
  return "";
}

Status WithCause(Status s, int rc, const std::string& path) {
  const std::string why = WhyNotWritable(rc, path);
  if (why.empty()) return s;
  return Status(s.code(), s.message() + why);
}

}  // namespace

Status MapSqliteError(int rc, std::string_view message) {
  // SQLite's message is often its code's own words ("unable to open
  // database file"): said once, not twice.
  const std::string_view code_words = sqlite3_errstr(rc);
  const std::string text = message.find(code_words) == std::string_view::npos
                               ? fmt::format("sqlite: {} ({})", message, code_words)
                               : fmt::format("sqlite: {}", message);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
      return Status(StatusCode::kUnavailable, text);
    case SQLITE_CONSTRAINT:
      return Status(StatusCode::kConflict, text);
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return Status(StatusCode::kIOError, text);
    default:
      return Status(StatusCode::kInternal, text);
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::BindInt(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
// A default string_view's data() is null, which SQLite binds as NULL: text
// is text, empty or not.
void Statement::BindText(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data() != nullptr ? v.data() : "", static_cast<int>(v.size()),
                    SQLITE_TRANSIENT);
}
void Statement::BindTextInPlace(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data() != nullptr ? v.data() : "", static_cast<int>(v.size()),
                    SQLITE_STATIC);
}
void Statement::BindNull(int i) { sqlite3_bind_null(stmt_, i); }

Result<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc);
}

int64_t Statement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
std::string_view Statement::TextView(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string_view(reinterpret_cast<const char*>(p),
                              static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
           : std::string_view();
}
bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }
std::string_view Statement::ColumnName(int col) const { return sqlite3_column_name(stmt_, col); }
sql::ColumnType Statement::TypeOf(int col) const {
  switch (sqlite3_column_type(stmt_, col)) {
    case SQLITE_NULL:
      return sql::ColumnType::kNull;
    case SQLITE_INTEGER:
      return sql::ColumnType::kInt;
    default:
      return sql::ColumnType::kText;
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void CreateLedgerFile(const std::string& path) {
  // ":memory:" and "file:" URIs are SQLite's to interpret.
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) return;
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kLedgerFileMode);
  if (fd >= 0) close(fd);
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, bool create) {
  if (create) CreateLedgerFile(path);
  // SQLite's memory statistics take a process-wide mutex on every malloc
  // and free: a tenth of a claim's CPU, for counters nothing reads. Only
  // possible before SQLite initialises; later it is refused and harmless.
  static std::once_flag configured;
  std::call_once(configured, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  sqlite3* handle = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &handle,
      SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = handle ? sqlite3_errmsg(handle) : "out of memory";
    sqlite3_close(handle);
    return WithCause(MapSqliteError(rc, fmt::format("cannot open {}: {}", path, message)), rc,
                     path);
  }
  sqlite3_extended_result_codes(handle, 1);
  return std::unique_ptr<Db>(new Db(handle));
}

Db::~Db() {
  cache_.clear();  // finalizes every statement before the connection closes
  sqlite3_close(db_);
}

Status Db::Exec(std::string_view sql) {
  if (Status s = BeforeStatement(sql); !s.ok()) return s;
  const std::string text(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string message = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return WithCause(MapSqliteError(rc, message), rc, Path());
  }
  return Status::Ok();
}

Result<sql::Stmt> Db::Prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(rc);
    it = cache_.emplace(std::string(sql), std::make_unique<Statement>(this, stmt)).first;
  }
  return sql::Stmt(this, it->second.get(), it->first);
}

Result<int64_t> Db::LastInsertRowId() { return sqlite3_last_insert_rowid(db_); }
int Db::Changes() const { return sqlite3_changes(db_); }

Status Db::Error(int rc) const {
  return WithCause(MapSqliteError(rc, sqlite3_errmsg(db_)), rc, Path());
}

std::string Db::Path() const {
  const char* name = sqlite3_db_filename(db_, "main");
  return name ? name : "";
}

void Db::Rollback() { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

}  // namespace cronledger::store::sqlite
