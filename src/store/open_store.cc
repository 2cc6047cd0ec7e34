#include "store/open_store.h"

#include <fmt/format.h>

#include "store/postgres/postgres_store.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger::store {

Result<std::unique_ptr<Store>> OpenStore(const StoreLocation& where, bool create) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (where.url.rfind(kSqlite, 0) == 0) {
    SqliteOptions o;
    o.path = where.url.substr(kSqlite.size());
    o.synchronous_full = where.synchronous_full;
    o.create_if_missing = create;
    o.read_only = where.read_only;
    auto s = SqliteStore::Open(o);
    if (!s.ok()) return s.status();
    return std::unique_ptr<Store>(std::move(*s));
  }
  if (where.url.rfind("postgresql://", 0) == 0 || where.url.rfind("postgres://", 0) == 0) {
    // `create` is SQLite's: a PostgreSQL database is created by its
    // administrator, and migrating an empty one is how a cluster starts.
    PostgresOptions o;
    o.url = where.url;
    o.read_only = where.read_only;
    auto s = PostgresStore::Open(o);
    if (!s.ok()) return s.status();
    return std::unique_ptr<Store>(std::move(*s));
  }
  return InvalidArgument(
      fmt::format("unsupported store \"{}\"; use sqlite:FILE or postgresql://USER@HOST/DB",
                  postgres::RedactUrl(where.url)));
}

std::string RedactStoreUrl(std::string_view url) { return postgres::RedactUrl(url); }

}  // namespace cronledger::store
