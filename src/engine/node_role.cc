#include "engine/node_role.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace cronledger::engine {

NodeRole::NodeRole(store::Store& store, std::string role, std::string node,
                   std::chrono::milliseconds every)
    : store_(store), role_(std::move(role)), node_(std::move(node)), ttl_(3 * every) {}

Result<bool> NodeRole::Hold(Clock::TimePoint now) {
  if (node_.empty()) return true;
  auto held = store_.RoleHold({role_, node_, store::ToInstant(now), ttl_});
  if (!held.ok()) {
    spdlog::error("roles: cannot tell which node is the {}: {}", role_,
                  held.status().ToString());
    return held.status();
  }
  if (*held && !held_) {
    spdlog::info("roles: this node is now the {} for every node on the store", role_);
  } else if (!*held && held_) {
    spdlog::info("roles: another node is the {} now; this one stands by", role_);
  }
  held_ = *held;
  return held_;
}

void NodeRole::Release() {
  if (node_.empty() || !held_) return;
  held_ = false;
  if (Status s = store_.RoleRelease(role_, node_); !s.ok()) {
    spdlog::warn("roles: could not give up the {} role ({}); another node takes it when its "
                 "lease runs out", role_, s.ToString());
    return;
  }
  spdlog::info("roles: this node gave up the {} role", role_);
}

}  // namespace cronledger::engine
