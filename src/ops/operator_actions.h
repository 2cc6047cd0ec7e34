// The operator actions whose logic is more than one store call, shared by
// the command line (src/cli) and the HTTP API (OperatorApi), so that both
// do the same thing in the same transactions: pause/resume and trigger.
// (retry, resolve, cancel and approve are single store calls; backfill and
// rerun live in ops/impact_preview.h.)
#ifndef CRONLEDGER_OPS_OPERATOR_ACTIONS_H_
#define CRONLEDGER_OPS_OPERATOR_ACTIONS_H_

#include <optional>
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

// Which period a trigger runs: the latest due one (neither set), one
// business date (a `date`-keyed job), or one period (any job; a slot-keyed
// job's is its local occurrence time, as run keys show it).
struct TriggerTarget {
  std::optional<std::string> date;  // YYYY-MM-DD
  std::optional<std::string> period;
};

struct TriggerOutcome {
  enum class Kind {
    kDone,         // queued: result, period, run_keys
    kNothingDue,   // no occurrence due within the backfill horizon (no target)
    kNotExpected,  // the target is not an expected period that is due: `why`
    kExists,       // the period's keys have runs already: existing
  };
  Kind kind = Kind::kDone;
  std::string period;                 // of the occurrence
  std::vector<std::string> run_keys;  // its keys (kDone)
  std::vector<std::string> existing;  // "job/partition/period (state, run ID): what repeats it" (kExists)
  std::string next_at;                // kNothingDue: the next occurrence (RFC 3339), or ""
  std::string why;                    // kNotExpected
  // kDone: keys that were awaiting approval, approved by this trigger.
  int approved = 0;
  store::RequeueResult result;
};

// What the command line and the API say for kNothingDue, alike: why (a new
// job's earlier occurrences are not expected), and when something will be.
std::string NothingDueMessage(const std::string& job, bool some_partitions,
                              const TriggerOutcome& outcome);

// Queues the keys of one period of the job (the target's, else the latest
// due occurrence's within the backfill horizon; only `partitions` when not
// empty) as one `trigger` event, unless one of them has a run already
// (awaiting approval excepted: the trigger, with its reason, approves it).
// A target is any due period from the job's start (its start_date, else
// its first recorded occurrence) on, however old. kFailedPrecondition when
// a run appeared between the check and the write (nothing written);
// kInvalidArgument for a date on a slot-keyed job, or a malformed target.
Result<TriggerOutcome> Trigger(store::Store& store, const config::JobConfig& job,
                               const std::vector<std::string>& partitions, const Actor& who,
                               Clock::TimePoint now, const TriggerTarget& target = {});

}  // namespace cronledger::ops

#endif  // CRONLEDGER_OPS_OPERATOR_ACTIONS_H_
