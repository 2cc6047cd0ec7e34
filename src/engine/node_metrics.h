// What one `serve` process counts for GET /metrics (docs/metrics.md): the
// node-local counters that the ledger does not hold. They start at zero
// with the process, as Prometheus counters do; what the ledger holds
// (attempts, recoveries) is counted from the store instead.
#ifndef CRONLEDGER_ENGINE_NODE_METRICS_H_
#define CRONLEDGER_ENGINE_NODE_METRICS_H_

#include <atomic>
#include <cstdint>
#include <optional>

#include "cronledger/clock.h"

namespace cronledger::engine {

class Dispatcher;
class StoreHealth;

}  // namespace cronledger::engine

namespace cronledger::store {
class Store;
}  // namespace cronledger::store

namespace cronledger::engine {

// Counted by the serve loop (engine/serve_loop.h).
struct NodeMetrics {
  std::atomic<int64_t> leases_expired{0};         // leases the reaper took back
  std::atomic<int64_t> deduplicated{0};           // occurrences planned onto an existing run key
  std::atomic<int64_t> planner_last_pass_ms{-1};  // Unix ms of the last good pass; -1: none
  // The ledger's clock minus this node's, as of the last pass (PostgreSQL:
  // the database's clock; 0 on SQLite): planner_last_pass_ms is on the
  // ledger's clock, and its age on this node is now + this minus it.
  std::atomic<int64_t> ledger_offset_ms{0};

  void PlannerPassed(Clock::TimePoint now);
};

// One reading of everything node-local, for the renderer.
struct NodeSnapshot {
  int64_t claims_claimed = 0;  // runs claimed
  int64_t claims_empty = 0;    // claim transactions that found nothing
  int64_t claims_error = 0;    // claim transactions that failed
  int64_t leases_expired = 0;
  int64_t stale_writes_rejected = 0;
  int64_t deduplicated = 0;
  int64_t executor_busy = 0;  // runs this node executes now
  int64_t executor_capacity = 0;
  std::optional<double> planner_last_pass_seconds;  // Unix time
  int64_t store_errors = 0;  // store calls that failed for want of the database
  bool store_up = true;      // the last store call reached the database
};

// `dispatcher`, `health` and `store` may be null (no claims, no executor;
// no store calls observed). Stale writes are counted by the store, which
// refuses them all (the executor's, steps' effects and checkpoints,
// external workers'); without it, the dispatcher's own.
NodeSnapshot Snapshot(const NodeMetrics& metrics, const Dispatcher* dispatcher, int max_workers,
                      const StoreHealth* health = nullptr, const store::Store* store = nullptr);

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_NODE_METRICS_H_
