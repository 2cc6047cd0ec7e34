#ifndef CRONLEDGER_STORE_OPEN_STORE_H_
#define CRONLEDGER_STORE_OPEN_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "store/store.h"

namespace cronledger::store {

// Where a ledger is, as [server] names it: the store is opened from this and
// not from the configuration, which store/ does not know.
struct StoreLocation {
  std::string url;               // "sqlite:/path" or a PostgreSQL URL
  bool synchronous_full = true;  // SQLite: durability = "full"; false: "normal"
  // Read-only commands: nothing is written, not even a schema; a store
  // that does not exist, is empty or has an older schema is refused.
  bool read_only = false;
};

// Opens the store at `where`. kUnavailable or
// kIOError when it cannot be reached, kFailedPrecondition when the database
// needs a newer cronledger, kInvalidArgument for an unsupported URL.
// With `create` false a store that does not exist yet is kUnavailable.
Result<std::unique_ptr<Store>> OpenStore(const StoreLocation& where, bool create = true);

// The store's URL as logs and messages may show it: without a password.
std::string RedactStoreUrl(std::string_view url);

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_OPEN_STORE_H_
