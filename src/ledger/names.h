// The stable lowercase names (docs/architecture.md): run states, skip reasons,
// step states, event types. They are stored, printed as JSON, logged and
// exported as metrics, so they never change once released; add new ones,
// never rename.
#ifndef CRONLEDGER_LEDGER_NAMES_H_
#define CRONLEDGER_LEDGER_NAMES_H_

#include <optional>
#include <string_view>

namespace cronledger::ledger {

// Who moves a run into each state, and out of it:
enum class RunState {
  kPending,           // planner, backfill, operator; out: claim, release skip, cancel
  kRunning,           // claim; out: the worker's finish or the reaper
  kSucceeded,         // the worker; out: rerun
  kFailed,            // the worker or reaper (dead letter); out: retry, rerun, cancel
  kUnknown,           // uncertain end of an unsafe step; out: resolve, retry, rerun, cancel
  kSkipped,           // the release pass (reason says why); out: backfill, rerun
  kAwaitingApproval,  // the gap scanner beyond auto_within; out: approve, cancel
  kCancelled,         // an operator; out: rerun
};

enum class SkipReason { kMisfired, kCoalesced, kCatchupNone, kOverlap, kPaused };

std::string_view Name(RunState s);
std::string_view Name(SkipReason r);
std::optional<RunState> ParseRunState(std::string_view s);
std::optional<SkipReason> ParseSkipReason(std::string_view s);

// A step's state within its run (run_steps.state): pending until an attempt
// starts it, running while one has it, then succeeded (a later attempt
// resumes after it) or failed (the attempt ended there).
enum class StepStatus { kPending, kRunning, kSucceeded, kFailed };

std::string_view Name(StepStatus s);
std::optional<StepStatus> ParseStepStatus(std::string_view s);

// Effect states (docs/effects.md): started -> committed
// (result stored) or failed (known not to have happened; a later begin
// does it again). A started effect whose attempt is over is *in doubt*.
enum class EffectState { kStarted, kCommitted, kFailed };
// Where a checkpoint (watermark) lives: the run's own, or the one its job's
// partition shares across runs.
enum class CheckpointScope { kRun, kPartition };

std::string_view Name(EffectState s);
std::string_view Name(CheckpointScope s);
std::optional<EffectState> ParseEffectState(std::string_view s);
std::optional<CheckpointScope> ParseCheckpointScope(std::string_view s);

// Skips that are on purpose (waived) rather than the system failing to run
// in time: every reason but misfired.
bool IsWaived(SkipReason r);

// Event types (docs/events.md).
namespace event {
inline constexpr std::string_view kPlanned = "planned";
inline constexpr std::string_view kDeduplicated = "deduplicated";
inline constexpr std::string_view kSkipped = "skipped";
inline constexpr std::string_view kPaused = "paused";
inline constexpr std::string_view kResumed = "resumed";
inline constexpr std::string_view kConfigChanged = "config_changed";
inline constexpr std::string_view kPartitionsChanged = "partitions_changed";
inline constexpr std::string_view kPartitionsFailed = "partitions_failed";
inline constexpr std::string_view kClaimed = "claimed";
inline constexpr std::string_view kStepStarted = "step_started";
inline constexpr std::string_view kStepSucceeded = "step_succeeded";
inline constexpr std::string_view kStepFailed = "step_failed";
inline constexpr std::string_view kSucceeded = "succeeded";
inline constexpr std::string_view kFailed = "failed";
inline constexpr std::string_view kUnknown = "unknown";
inline constexpr std::string_view kRetryScheduled = "retry_scheduled";
inline constexpr std::string_view kLeaseExpired = "lease_expired";
inline constexpr std::string_view kStaleWriteRejected = "stale_write_rejected";
inline constexpr std::string_view kRetry = "retry";
inline constexpr std::string_view kEffectStarted = "effect_started";
inline constexpr std::string_view kEffectCommitted = "effect_committed";
inline constexpr std::string_view kEffectFailed = "effect_failed";
inline constexpr std::string_view kEffectInDoubt = "effect_in_doubt";
inline constexpr std::string_view kEffectReconciled = "effect_reconciled";
inline constexpr std::string_view kResolve = "resolve";
inline constexpr std::string_view kGapFound = "gap_found";
inline constexpr std::string_view kBackfill = "backfill";
inline constexpr std::string_view kRerun = "rerun";
inline constexpr std::string_view kApprove = "approve";
inline constexpr std::string_view kCancel = "cancel";
inline constexpr std::string_view kTrigger = "trigger";
inline constexpr std::string_view kAlertSent = "alert_sent";
inline constexpr std::string_view kAlertResolved = "alert_resolved";

// Every type above: what `events --type` accepts (docs/events.md lists each).
inline constexpr std::string_view kAll[] = {kPlanned,
                                            kDeduplicated,
                                            kSkipped,
                                            kPaused,
                                            kResumed,
                                            kConfigChanged,
                                            kPartitionsChanged,
                                            kPartitionsFailed,
                                            kClaimed,
                                            kStepStarted,
                                            kStepSucceeded,
                                            kStepFailed,
                                            kSucceeded,
                                            kFailed,
                                            kUnknown,
                                            kRetryScheduled,
                                            kLeaseExpired,
                                            kStaleWriteRejected,
                                            kRetry,
                                            kEffectStarted,
                                            kEffectCommitted,
                                            kEffectFailed,
                                            kEffectInDoubt,
                                            kEffectReconciled,
                                            kResolve,
                                            kGapFound,
                                            kBackfill,
                                            kRerun,
                                            kApprove,
                                            kCancel,
                                            kTrigger,
                                            kAlertSent,
                                            kAlertResolved};
}  // namespace event

}  // namespace cronledger::ledger

#endif  // CRONLEDGER_LEDGER_NAMES_H_
