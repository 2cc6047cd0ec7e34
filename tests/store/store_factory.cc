#include "store/store_factory.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include <fmt/format.h>

#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::testing {
namespace {

class SqliteBackend final : public StoreBackend {
 public:
  SqliteBackend() {
    char tmpl[] = "/tmp/cronledger-store-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/ledger.db";
  }
  ~SqliteBackend() override { std::filesystem::remove_all(dir_); }

  std::string Name() const override { return "sqlite"; }

  Result<std::unique_ptr<store::Store>> Open() override {
    store::SqliteOptions o;
    o.path = path_;
    o.synchronous_full = false;  // tests do not need power-loss durability
    auto s = store::SqliteStore::Open(o);
    if (!s.ok()) return s.status();
    return std::unique_ptr<store::Store>(std::move(*s));
  }

  void SetCompatibleFrom(int v) override {
    sqlite3* db = nullptr;
    sqlite3_open(path_.c_str(), &db);
    const std::string sql = "UPDATE schema_meta SET compatible_from = " + std::to_string(v) +
                            ", version = max(version, " + std::to_string(v) + ")";
    sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }

 private:
  std::string dir_;
  std::string path_;
};

// Each test gets a schema of its own in the test server's database (a
// schema is created in milliseconds; a database in a few hundred).
class PostgresBackend final : public StoreBackend {
 public:
  explicit PostgresBackend(bool database_clock = false) : database_clock_(database_clock) {
    static std::atomic<int> counter{0};
    server_ = TestPostgresUrl();
    schema_ = fmt::format("t_{}_{}", getpid(), counter++);
    if (!server_.empty()) Admin(fmt::format("CREATE SCHEMA {}", schema_));
  }
  ~PostgresBackend() override {
    if (!server_.empty()) Admin(fmt::format("DROP SCHEMA {} CASCADE", schema_));
  }

  std::string Name() const override {
    return database_clock_ ? "postgresql_database_clock" : "postgresql";
  }

  Result<std::unique_ptr<store::Store>> Open() override {
    if (server_.empty()) {
      return Status(StatusCode::kUnavailable,
                    "no PostgreSQL test server: run the tests through ctest (its pg_server "
                    "fixture starts one) or set CRONLEDGER_TEST_PG_URL");
    }
    store::PostgresOptions o;
    o.url = Url();
    // The conformance suite pins time; the database-clock suite does not.
    o.database_clock = database_clock_;
    auto s = store::PostgresStore::Open(o);
    if (!s.ok()) return s.status();
    return std::unique_ptr<store::Store>(std::move(*s));
  }

  void SetCompatibleFrom(int v) override {
    Admin(fmt::format("UPDATE {0}.schema_meta SET compatible_from = {1}, "
                      "version = GREATEST(version, {1})",
                      schema_, v));
  }

  std::string Url() const { return TestPostgresSchemaUrl(schema_); }

 private:
  void Admin(const std::string& sql) {
    PGconn* c = PQconnectdb(server_.c_str());
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
    PGresult* r = PQexec(c, sql.c_str());
    PQclear(r);
    PQfinish(c);
  }

  bool database_clock_;
  std::string server_;
  std::string schema_;
};

}  // namespace

std::vector<StoreFactory> AllStoreFactories() {
  return {{"sqlite", [] { return std::make_unique<SqliteBackend>(); }},
          {"postgresql", [] { return std::make_unique<PostgresBackend>(); }}};
}

std::vector<StoreFactory> DatabaseClockFactories() {
  return {{"postgresql_database_clock",
           [] { return std::make_unique<PostgresBackend>(/*database_clock=*/true); }}};
}

}  // namespace cronledger::testing
