// Work that one node does for every node sharing the ledger (alerting, the
// gap scanner): done only while this node holds the store's role of that
// name (Store::RoleHold), which it renews at every pass. When the holder
// stops renewing (it died, or hangs), the first other node to pass after
// the lease ran out takes it over.
#ifndef CRONLEDGER_ENGINE_NODE_ROLE_H_
#define CRONLEDGER_ENGINE_NODE_ROLE_H_

#include <chrono>
#include <string>

#include "cronledger/clock.h"
#include "cronledger/status.h"
#include "store/store.h"

namespace cronledger::engine {

// Not thread-safe: one pass at a time.
class NodeRole {
 public:
  // `node` empty: held always, with no store (one node, tests). `every`:
  // how often the role's work passes; a renewal holds the role for three
  // passes, so that one slow pass does not hand it over.
  NodeRole(store::Store& store, std::string role, std::string node,
           std::chrono::milliseconds every);

  // Renews the role, or takes it when free or run out; whether this node
  // holds it now. Logs when that changes, and an error (the store is out of
  // reach: the caller does not know, and does none of the role's work).
  Result<bool> Hold(Clock::TimePoint now);
  // Gives the role up when this node holds it (a clean shutdown): another
  // node takes it at its next pass instead of after the lease. A failure
  // is logged; the lease then runs out as after a crash.
  void Release();
  // Whether this node held the role at its last Hold.
  bool held() const { return node_.empty() || held_; }

 private:
  store::Store& store_;
  std::string role_;
  std::string node_;
  std::chrono::milliseconds ttl_;
  bool held_ = false;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_NODE_ROLE_H_
