// The main loop of `serve`: plans, releases, reaps and prunes, and sleeps
// until the next of those falls due. An idle server wakes about once a
// second (the reaper, and anything planned or released elsewhere); a run
// falling due wakes it at that instant, and the dispatcher right after.
#ifndef CRONLEDGER_ENGINE_SERVE_LOOP_H_
#define CRONLEDGER_ENGINE_SERVE_LOOP_H_

#include <chrono>
#include <stop_token>

#include "config/config.h"
#include "cronledger/clock.h"
#include "engine/alerter.h"
#include "engine/dispatcher.h"
#include "engine/gap_watch.h"
#include "engine/heartbeat_pinger.h"
#include "engine/node_metrics.h"
#include "engine/planner.h"
#include "engine/reaper.h"
#include "engine/store_health.h"
#include "store/store.h"

namespace cronledger::engine {

struct ServeLoopOptions {
  // The longest sleep: how soon expired leases are reaped, and runs planned
  // or resumed by another process (another node, the CLI) are noticed.
  std::chrono::milliseconds max_sleep{1000};
  std::chrono::seconds prune_every{3600};
  // After releasing runs, planning waits this long so that it does not hold
  // the store while the dispatcher claims them.
  std::chrono::milliseconds plan_deferral{250};
  // The gap scanner, run when it is due (GapWatch::NextAt); none: no scans.
  GapWatch* gap_watch = nullptr;
  // Where the loop counts for GET /metrics (planner passes, reaped leases,
  // deduplicated occurrences); none: not counted.
  NodeMetrics* metrics = nullptr;
  // The alerter, run when it is due (Alerter::NextAt); none: no alerts.
  Alerter* alerter = nullptr;
  // Told of every successful planner pass ([server] heartbeat_url); none:
  // no heartbeat.
  HeartbeatPinger* heartbeat = nullptr;
  // The ledger: when set, each pass runs at the ledger's instant
  // (Store::LedgerNow: the database clock on PostgreSQL), this node says it
  // is alive in the node table every `node_beat_every`, and finished runs
  // past [server] retention are purged every `purge_every`. None: the
  // local clock, no node table, no purge.
  store::Store* store = nullptr;
  store::NodeBeat node;  // name, version, listen, started_at
  std::chrono::seconds node_beat_every{5};
  std::chrono::seconds purge_every{3600};
  // Told of every store call's result (outages, GET /metrics); none: not.
  StoreHealth* health = nullptr;
};

// A node not seen for this long is dropped from the node table by the
// retention pass: it stopped (or was renamed) for good, and status would
// otherwise list it for ever. A node that comes back beats itself back in.
// A day, as Nomad collects nodes that are down.
inline constexpr std::chrono::hours kForgetNodesAfter{24};

class ServeLoop {
 public:
  // Everything must outlive the loop.
  ServeLoop(const config::Config& config, Planner& planner, Reaper& reaper,
            Dispatcher& dispatcher, Clock& clock, ServeLoopOptions options = {});

  // Passes until `stop`.
  void Run(std::stop_token stop);

  // One pass at `now`; returns when the next one is needed.
  Clock::TimePoint PassOnce(Clock::TimePoint now);

 private:
  const config::Config& config_;
  Planner& planner_;
  Reaper& reaper_;
  Dispatcher& dispatcher_;
  Clock& clock_;
  ServeLoopOptions options_;
  // Purges finished runs past retention, a batch at a time, until none is
  // left or `stop_`.
  void PurgeOnce(Clock::TimePoint now);

  Clock::TimePoint next_prune_{};
  Clock::TimePoint next_node_beat_{};
  Clock::TimePoint next_purge_{};
  Clock::TimePoint plan_not_before_{};
  std::stop_token stop_;  // Run's: long passes (the gap watch's) end early on it
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_SERVE_LOOP_H_
