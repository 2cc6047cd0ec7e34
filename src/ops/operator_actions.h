// The operator actions whose logic is more than one store call, shared by
// the command line (src/cli) and the HTTP API (OperatorApi), so that both
// do the same thing in the same transactions: pause/resume and trigger.
// (retry, resolve, cancel and approve are single store calls; backfill and
// rerun live in ops/impact_preview.h.)
#ifndef CRONLEDGER_OPS_OPERATOR_ACTIONS_H_
#define CRONLEDGER_OPS_OPERATOR_ACTIONS_H_

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "cronledger/clock.h"
#include "cronledger/status.h"
#include "ops/actor_text.h"
#include "store/store.h"

namespace cronledger::ops {

// Pauses or resumes `job` (null: everything). A configured job serve has
// not recorded yet is recorded first (as serve would), so that it can be
// paused before it ever runs. kConflict when it is already in that state;
// resuming what is not paused says what is (the job's own flag and the
// global switch are separate), naming how to give a job (`job_hint`) and
// everything (`all_hint`) in the caller's words: "--job" and "--all" on
// the command line.
Status SetPaused(store::Store& store, const config::JobConfig* job, bool pause, const Actor& who,
                 store::Instant now, std::string_view job_hint = "--job",
                 std::string_view all_hint = "--all");

struct TriggerOutcome {
  enum class Kind {
    kDone,        // queued: result, period, run_keys
    kNothingDue,  // no occurrence due within the backfill horizon
    kExists,      // the latest due period has runs already: existing
  };
  Kind kind = Kind::kDone;
  std::string period;                 // of the latest due occurrence
  std::vector<std::string> run_keys;  // its keys (kDone)
  std::vector<std::string> existing;  // "job/partition/period (state, run ID): what repeats it" (kExists)
  std::string next_at;                // kNothingDue: the next occurrence (RFC 3339), or ""
  store::RequeueResult result;
};

// What the command line and the API say for kNothingDue, alike: why (a new
// job's earlier occurrences are not expected), and when something will be.
std::string NothingDueMessage(const std::string& job, bool some_partitions,
                              const TriggerOutcome& outcome);

// Queues the period of the job's latest due occurrence (within its backfill
// horizon; only `partitions` when not empty) as one `trigger` event, unless
// one of its keys has a run already. kFailedPrecondition when one appeared
// between the check and the write (nothing written).
Result<TriggerOutcome> Trigger(store::Store& store, const config::JobConfig& job,
                               const std::vector<std::string>& partitions, const Actor& who,
                               Clock::TimePoint now);

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_OPERATOR_ACTIONS_H_
