#include "store/store_factory.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

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

}  // namespace

std::vector<StoreFactory> AllStoreFactories() {
  return {{"sqlite", [] { return std::make_unique<SqliteBackend>(); }}};
}

}  // namespace cronledger::testing
