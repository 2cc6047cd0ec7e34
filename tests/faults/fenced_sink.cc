// fenced_sink: a fencing external system for the fault harness.
//
//   fenced_sink --db FILE --init
//   fenced_sink --db FILE --key KEY --token N [--note TEXT]
//   fenced_sink --db FILE --check --key KEY
//
// Records one write for KEY into an SQLite file. The write is ACCEPTED only
// if N is >= every token already accepted for KEY (what an external system
// that fences on CRONLEDGER_FENCING_TOKEN does), else REFUSED. Both are
// recorded in `writes` (key, token, accepted 0/1, note), in one IMMEDIATE
// transaction, so concurrent writers are serialised by SQLite.
//
// Exit codes follow cronledger's classes so that a step calling the sink
// fails visibly and is never retried into a second delivery:
//   0  accepted
//   65 refused (EX_DATAERR: a permanent failure, the run ends failed)
//   64 usage error (EX_USAGE)
//   75 the database could not be used (EX_TEMPFAIL: retryable)
// --init creates the file and its table in WAL mode (tests call it before
// any step runs, so concurrent first writers never race on the schema).
//
// --check answers whether KEY was accepted, as an `effect run --reconcile`
// program does (through a script: reconcile programs get no arguments, the
// key is $CRONLEDGER_EFFECT_KEY): exit 0 and one line naming the accepted
// write when it was, 1 when it was not, 75 when the database cannot tell.
#include <sqlite3.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kAccepted = 0;
constexpr int kNotAccepted = 1;  // --check: no accepted write for the key
constexpr int kUsage = 64;
constexpr int kRefused = 65;
constexpr int kDbError = 75;

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS writes ("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL,"
    "  token INTEGER NOT NULL,"
    "  accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),"
    "  note TEXT NOT NULL DEFAULT ''"
    ");"
    "CREATE INDEX IF NOT EXISTS writes_key ON writes (key, accepted, token);";

int Usage(const char* why) {
  std::fprintf(stderr,
               "fenced_sink: %s\nusage: fenced_sink --db FILE --init\n"
               "       fenced_sink --db FILE --key KEY --token N [--note TEXT]\n"
               "       fenced_sink --db FILE --check --key KEY\n",
               why);
  return kUsage;
}

int DbError(sqlite3* db, const char* what) {
  std::fprintf(stderr, "fenced_sink: %s: %s\n", what, db ? sqlite3_errmsg(db) : "out of memory");
  if (db) sqlite3_close(db);
  return kDbError;
}

bool Exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db_path;
  std::string key;
  std::string note;
  std::string token_text;
  bool init = false;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    bool ok = true;
    if (arg == "--db") {
      ok = value(&db_path);
    } else if (arg == "--key") {
      ok = value(&key);
    } else if (arg == "--token") {
      ok = value(&token_text);
    } else if (arg == "--note") {
      ok = value(&note);
    } else if (arg == "--init") {
      init = true;
    } else if (arg == "--check") {
      check = true;
    } else {
      return Usage(("unknown argument " + arg).c_str());
    }
    if (!ok) return Usage((arg + " needs a value").c_str());
  }
  if (db_path.empty()) return Usage("--db is required");
  long long token = 0;
  if (init && check) return Usage("--init and --check exclude each other");
  if (check) {
    if (key.empty()) return Usage("--check needs --key (and not empty)");
  } else if (!init) {
    if (key.empty()) return Usage("--key is required (and not empty)");
    if (token_text.empty()) return Usage("--token is required (is CRONLEDGER_FENCING_TOKEN set?)");
    char* end = nullptr;
    errno = 0;
    token = std::strtoll(token_text.c_str(), &end, 10);
    if (errno != 0 || end == token_text.c_str() || *end != '\0' || token <= 0) {
      return Usage(("--token must be a positive integer, got \"" + token_text + "\"").c_str());
    }
  }

  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    return DbError(db, "open");
  }
  sqlite3_busy_timeout(db, 30000);
  // WAL is persistent: after --init this is a no-op that takes no lock.
  if (!Exec(db, "PRAGMA journal_mode = WAL") || !Exec(db, kSchema)) {
    return DbError(db, "schema");
  }
  if (init) {
    sqlite3_close(db);
    return kAccepted;
  }

  if (check) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT token, note FROM writes WHERE key = ? AND accepted = 1 "
                           "ORDER BY id LIMIT 1",
                           -1, &s, nullptr) != SQLITE_OK) {
      return DbError(db, "prepare check");
    }
    sqlite3_bind_text(s, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      sqlite3_finalize(s);
      return DbError(db, "check");
    }
    if (rc == SQLITE_ROW) {
      const unsigned char* note = sqlite3_column_text(s, 1);
      std::printf("fenced_sink: %s was accepted, token %lld (%s)\n", key.c_str(),
                  static_cast<long long>(sqlite3_column_int64(s, 0)),
                  note ? reinterpret_cast<const char*>(note) : "");
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return rc == SQLITE_ROW ? kAccepted : kNotAccepted;
  }

  if (!Exec(db, "BEGIN IMMEDIATE")) return DbError(db, "begin");
  bool accepted = true;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT max(token) FROM writes WHERE key = ? AND accepted = 1", -1,
                           &s, nullptr) != SQLITE_OK) {
      return DbError(db, "prepare select");
    }
    sqlite3_bind_text(s, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) != SQLITE_ROW) {
      sqlite3_finalize(s);
      return DbError(db, "select");
    }
    if (sqlite3_column_type(s, 0) != SQLITE_NULL) accepted = token >= sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO writes (key, token, accepted, note) VALUES (?, ?, ?, ?)",
                           -1, &s, nullptr) != SQLITE_OK) {
      return DbError(db, "prepare insert");
    }
    sqlite3_bind_text(s, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, token);
    sqlite3_bind_int(s, 3, accepted ? 1 : 0);
    sqlite3_bind_text(s, 4, note.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) return DbError(db, "insert");
  }
  if (!Exec(db, "COMMIT")) return DbError(db, "commit");
  sqlite3_close(db);
  std::printf("fenced_sink: %s %s token %lld\n", accepted ? "accepted" : "REFUSED", key.c_str(),
              token);
  return accepted ? kAccepted : kRefused;
}
