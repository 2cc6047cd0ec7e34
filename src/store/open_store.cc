#include "store/open_store.h"

#include <fmt/format.h>

#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::store {

Result<std::unique_ptr<Store>> OpenStore(const config::ServerConfig& server, bool create) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (server.store.rfind(kSqlite, 0) == 0) {
    SqliteOptions o;
    o.path = server.store.substr(kSqlite.size());
    o.synchronous_full = server.durability == config::Durability::kFull;
    o.create_if_missing = create;
    auto s = SqliteStore::Open(o);
    if (!s.ok()) return s.status();
    return std::unique_ptr<Store>(std::move(*s));
  }
  if (server.store.rfind("postgresql://", 0) == 0 || server.store.rfind("postgres://", 0) == 0) {
    // `create` is SQLite's: a PostgreSQL database is created by its
    // administrator, and migrating an empty one is how a cluster starts.
    PostgresOptions o;
    o.url = server.store;
    auto s = PostgresStore::Open(o);
    if (!s.ok()) return s.status();
    return std::unique_ptr<Store>(std::move(*s));
  }
  return InvalidArgument(
      fmt::format("unsupported store \"{}\"; use sqlite:FILE or postgresql://USER@HOST/DB",
                  postgres::RedactUrl(server.store)));
}

std::string RedactStoreUrl(std::string_view url) { return postgres::RedactUrl(url); }

}  // namespace cronledger::store
