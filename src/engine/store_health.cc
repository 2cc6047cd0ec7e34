#include "engine/store_health.h"

#include <spdlog/spdlog.h>

namespace cronledger::engine {

bool IsStoreFailure(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kIOError;
}

bool StoreHealth::Observe(const Status& s, std::string_view who, StoreCall call) {
  const bool failed = IsStoreFailure(s);
  if (failed) ++errors_;
  // The common case, a success while up, takes no lock; a read's success
  // says nothing about whether the store can be written again.
  if (!failed && (up_ || call == StoreCall::kRead)) return false;
  std::lock_guard lock(mu_);
  if (failed) {
    if (outage_errors_++ == 0) {
      up_ = false;
      spdlog::error("serve: the store is unavailable ({}: {}); retrying, work in flight is "
                    "re-checked when it is back",
                    who, s.ToString());
    }
    return true;
  }
  if (outage_errors_ > 0) {
    spdlog::warn("serve: the store is available again after {} failed call(s)", outage_errors_);
    outage_errors_ = 0;
  }
  up_ = true;
  return false;
}

}  // namespace cronledger::engine
