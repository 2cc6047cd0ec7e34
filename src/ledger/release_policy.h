// Which due runs may be claimed, and which are skipped: misfire and
// catch-up (docs/ledger.md, Release), and pause. Pure logic; the store applies
// the decisions in one transaction.
#ifndef CRONLEDGER_LEDGER_RELEASE_POLICY_H_
#define CRONLEDGER_LEDGER_RELEASE_POLICY_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ledger/catchup.h"
#include "ledger/names.h"

namespace cronledger::ledger {

// A pending run whose scheduled time has come and that was never released.
struct DueRun {
  int64_t id = 0;
  std::string partition;
  std::chrono::sys_seconds scheduled_at;
  // Held through a pause, or queued by an operator or backfill: runs
  // whatever its age.
  bool misfire_exempt = false;
};

struct ReleasePolicy {
  std::chrono::seconds misfire_grace{3600};
  ledger::Catchup catchup = ledger::Catchup::kAll;
  ledger::OnPause on_pause = ledger::OnPause::kHold;
  bool paused = false;
};

enum class ReleaseAction {
  kRelease,  // claimable from now on
  kSkip,     // skipped with `reason`
  kHold,     // paused with on_pause = hold: stays pending, exempt from misfire
};

struct ReleaseDecision {
  int64_t id = 0;
  ReleaseAction action = ReleaseAction::kRelease;
  SkipReason reason = SkipReason::kMisfired;  // meaningful for kSkip only
  friend bool operator==(const ReleaseDecision&, const ReleaseDecision&) = default;
};

// Decides every run in `due` (any order).
//
// Paused: on_pause = skip skips each run (paused); hold holds it, which
// exempts it from misfire so it runs on resume whatever its age.
// Not paused: an exempt run is released. The others are grouped by
// partition; when several are overdue at once `catchup` decides first —
// all: each runs if within grace, else misfired; latest: the newest runs (or
// is misfired beyond grace) and the older ones are coalesced; none: all are
// catchup_none. A lone due run runs within grace, else is misfired.
// "Within grace" means now - scheduled_at <= misfire_grace.
std::vector<ReleaseDecision> DecideRelease(std::vector<DueRun> due, const ReleasePolicy& policy,
                                           std::chrono::sys_seconds now);

}  // namespace cronledger::ledger

#endif  // CRONLEDGER_LEDGER_RELEASE_POLICY_H_
