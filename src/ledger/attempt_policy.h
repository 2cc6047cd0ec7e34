// How an attempt's end decides what its run becomes: exit-code classes,
// uncertain ends, retries with backoff (docs/execution.md, Outcomes;
// docs/architecture.md, Run states). Pure logic.
#ifndef CRONLEDGER_LEDGER_ATTEMPT_POLICY_H_
#define CRONLEDGER_LEDGER_ATTEMPT_POLICY_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/retry_policy.h"
#include "ledger/names.h"

namespace cronledger::ledger {

enum class EndClass {
  kSucceeded,
  kRetryable,
  kPermanent,
  kTimeout,       // uncertain
  kSignal,        // uncertain
  kLeaseExpired,  // uncertain
  kSpawnFailed,   // permanent
  kInDoubt,       // an effect in doubt (effects issue)
  kStale,         // the worker lost its lease and was fenced off
};

std::string_view Name(EndClass c);
std::optional<EndClass> ParseEndClass(std::string_view s);

// An end after which the step may or may not have had its effect.
bool IsUncertain(EndClass c);

// 0 succeeded; 75 retryable; 64, 65, 66, 77, 78 permanent; any other
// non-zero retryable. `retry_codes` and `fail_codes` (per job) override.
EndClass ClassifyExit(int exit_status, const std::vector<int>& retry_codes,
                      const std::vector<int>& fail_codes);

using TimePoint = std::chrono::sys_time<std::chrono::milliseconds>;

// What the run becomes after an attempt.
struct AttemptDecision {
  RunState state = RunState::kPending;     // pending (retry), succeeded, failed, unknown
  std::optional<TimePoint> next_attempt_at;  // for a retry
  std::string reason;                        // why, in words, for failed/unknown/retry
};

struct AttemptFacts {
  EndClass end = EndClass::kSucceeded;
  bool step_idempotent = false;  // the step that was running when it ended
  int budget_attempts = 1;       // attempts so far in the retry budget, this one included
  TimePoint budget_started_at;   // the first of those attempts' start
  TimePoint now;
  double jitter_sample = 0.5;    // uniform in [0, 1): the random part of the backoff
};

// succeeded -> succeeded; permanent or spawn failure -> failed (the dead
// letter); an uncertain end of a step that is not idempotent -> unknown;
// otherwise a retry after the backoff, unless max_attempts or
// max_retry_duration is exhausted (-> failed).
AttemptDecision DecideAfterAttempt(const ledger::RetryPolicy& policy, const AttemptFacts& facts);

// The backoff before attempt n + 1 (n >= 1), jitter applied.
std::chrono::milliseconds Backoff(const ledger::RetryPolicy& policy, int n, double jitter_sample);

}  // namespace cronledger::ledger

#endif  // CRONLEDGER_LEDGER_ATTEMPT_POLICY_H_
