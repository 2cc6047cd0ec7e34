#include "engine/node_metrics.h"

#include <chrono>

#include "engine/dispatcher.h"
#include "engine/store_health.h"
#include "store/store.h"

namespace cronledger::engine {

void NodeMetrics::PlannerPassed(Clock::TimePoint now) {
  planner_last_pass_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
}

NodeSnapshot Snapshot(const NodeMetrics& metrics, const Dispatcher* dispatcher, int max_workers,
                      const StoreHealth* health, const store::Store* store) {
  NodeSnapshot s;
  if (health != nullptr) {
    s.store_errors = health->errors();
    s.store_up = health->up();
  }
  s.leases_expired = metrics.leases_expired;
  s.deduplicated = metrics.deduplicated;
  if (const int64_t ms = metrics.planner_last_pass_ms; ms >= 0) {
    s.planner_last_pass_seconds = static_cast<double>(ms) / 1000.0;
  }
  s.executor_capacity = max_workers;
  if (dispatcher != nullptr) {
    const DispatcherCounters& c = dispatcher->counters();
    s.claims_claimed = c.claimed;
    s.claims_empty = c.claim_empty;
    s.claims_error = c.claim_errors;
    s.stale_writes_rejected = c.stale_writes_rejected;
    s.executor_busy = dispatcher->Active();
  }
  if (store != nullptr) s.stale_writes_rejected = store->StaleWritesRejected();
  return s;
}

}  // namespace cronledger::engine
