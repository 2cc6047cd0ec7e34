#ifndef CRONLEDGER_STORE_OPEN_STORE_H_
#define CRONLEDGER_STORE_OPEN_STORE_H_

#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "store/store.h"

namespace cronledger::store {

// Opens the store named by server.store ("sqlite:/path" or a PostgreSQL
// URL). kUnavailable or
// kIOError when it cannot be reached, kFailedPrecondition when the database
// needs a newer cronledger, kInvalidArgument for an unsupported URL.
// With `create` false a store that does not exist yet is kUnavailable.
Result<std::unique_ptr<Store>> OpenStore(const config::ServerConfig& server, bool create = true);

// The store's URL as logs and messages may show it: without a password.
std::string RedactStoreUrl(std::string_view url);

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_OPEN_STORE_H_
