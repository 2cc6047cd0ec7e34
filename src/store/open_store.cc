#include "store/open_store.h"

#include <fmt/format.h>

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
  return InvalidArgument(fmt::format("unsupported store \"{}\"; use sqlite:FILE", server.store));
}

}  // namespace cronledger::store
