#include "ledger/release_policy.h"

#include <algorithm>
#include <map>

namespace cronledger::ledger {

std::vector<ReleaseDecision> DecideRelease(std::vector<DueRun> due, const ReleasePolicy& policy,
                                           std::chrono::sys_seconds now) {
  std::vector<ReleaseDecision> out;
  if (policy.paused) {
    const bool skip = policy.on_pause == ledger::OnPause::kSkip;
    for (const DueRun& r : due) {
      if (skip) {
        out.push_back({r.id, ReleaseAction::kSkip, SkipReason::kPaused});
      } else if (!r.misfire_exempt) {
        out.push_back({r.id, ReleaseAction::kHold, SkipReason::kMisfired});
      }
    }
    return out;
  }
  const auto within_grace = [&](const DueRun& r) {
    return now - r.scheduled_at <= policy.misfire_grace;
  };
  std::map<std::string, std::vector<const DueRun*>> by_partition;
  for (const DueRun& r : due) {
    if (r.misfire_exempt) {
      out.push_back({r.id, ReleaseAction::kRelease, SkipReason::kMisfired});
    } else {
      by_partition[r.partition].push_back(&r);
    }
  }
  for (auto& [partition, runs] : by_partition) {
    std::sort(runs.begin(), runs.end(), [](const DueRun* a, const DueRun* b) {
      return a->scheduled_at != b->scheduled_at ? a->scheduled_at < b->scheduled_at
                                                : a->id < b->id;
    });
    const bool several = runs.size() > 1;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const DueRun& r = *runs[i];
      const bool newest = i + 1 == runs.size();
      if (several && policy.catchup == ledger::Catchup::kNone) {
        out.push_back({r.id, ReleaseAction::kSkip, SkipReason::kCatchupNone});
      } else if (several && policy.catchup == ledger::Catchup::kLatest && !newest) {
        out.push_back({r.id, ReleaseAction::kSkip, SkipReason::kCoalesced});
      } else if (within_grace(r)) {
        out.push_back({r.id, ReleaseAction::kRelease, SkipReason::kMisfired});
      } else {
        out.push_back({r.id, ReleaseAction::kSkip, SkipReason::kMisfired});
      }
    }
  }
  return out;
}

}  // namespace cronledger::ledger
