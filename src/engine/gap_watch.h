// The gap scanner inside `serve` (docs/gaps.md): each pass
// finds the gaps that are new since the last one, records each as a
// gap_found event, and recovers never-planned and misfired ones — queued at
// once when younger than backfill.auto_within (a `backfill` event, actor
// `scanner`), else left awaiting_approval. Waived keys are never touched.
//
// Incremental: a pass looks at the business dates around what fell due
// since the previous pass (and what became stuck); the whole
// backfill.horizon is scanned on the first pass and then every
// `full_scan_every`, which catches anything older that changed.
#ifndef CRONLEDGER_ENGINE_GAP_WATCH_H_
#define CRONLEDGER_ENGINE_GAP_WATCH_H_

#include <chrono>
#include <map>
#include <set>
#include <stop_token>
#include <string>

#include "config/config.h"
#include "cronledger/clock.h"
#include "engine/gap_scanner.h"
#include "engine/node_role.h"
#include "store/store.h"

namespace cronledger::engine {

struct GapWatchOptions {
  std::chrono::seconds every{60};
  std::chrono::seconds full_scan_every{3600};
  // This node's name: with one, a pass scans only while this node holds the
  // store's `scanner` role (NodeRole), for three passes' time unless
  // renewed, so nodes sharing a ledger record each gap once. Empty: every
  // pass scans (one node, tests).
  std::string node;
};

struct GapWatchStats {
  int new_gaps = 0;
  int backfilled = 0;
  int awaiting_approval = 0;
};

// Not thread-safe: one pass at a time (the serve loop's thread).
class GapWatch {
 public:
  GapWatch(const config::Config& config, store::Store& store, GapWatchOptions options = {});

  // A pass when one is due (NextAt); the first error, after trying every job.
  // A stop request ends it between jobs or batches of gaps: what it has not
  // recorded yet is found again by the next pass (the first one after a
  // restart is a full one).
  Status ScanOnce(Clock::TimePoint now, GapWatchStats* stats = nullptr,
                  std::stop_token stop = {});
  Clock::TimePoint NextAt() const { return next_at_; }
  // At a clean shutdown, after the last pass: hands the role over at once.
  void ReleaseRole() { role_.Release(); }

 private:
  struct JobWatch {
    bool seeded = false;
    Clock::TimePoint last_pass{};
    Clock::TimePoint last_full{};
    std::set<std::string> reported;  // "run_key cause" already recorded as gap_found
  };
  Status ScanJob(const config::JobConfig& job, Clock::TimePoint now, JobWatch& w,
                 GapWatchStats* stats, std::stop_token stop);

  const config::Config& config_;
  store::Store& store_;
  GapWatchOptions options_;
  GapScanner scanner_;
  std::map<std::string, JobWatch> jobs_;
  Clock::TimePoint next_at_{};
  NodeRole role_;
};

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_GAP_WATCH_H_
