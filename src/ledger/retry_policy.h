// How often and how soon a run is tried again after an attempt that may be
// retried (docs/execution.md, Retries; the job's [job.retry] table): the
// input of ledger::DecideAfterAttempt and ledger::Backoff.
#ifndef CRONLEDGER_LEDGER_RETRY_POLICY_H_
#define CRONLEDGER_LEDGER_RETRY_POLICY_H_

#include <chrono>

namespace cronledger::ledger {

struct RetryPolicy {
  int max_attempts = 3;  // in one retry budget, the first attempt included
  std::chrono::milliseconds initial_backoff{30000};
  double multiplier = 2.0;
  std::chrono::milliseconds max_backoff{600000};
  double jitter = 0.2;  // the backoff varies by up to this fraction either way
  // No retry is scheduled later than this after the budget's first attempt.
  std::chrono::seconds max_retry_duration{6 * 3600};
};

}  // namespace cronledger::ledger

#endif  // CRONLEDGER_LEDGER_RETRY_POLICY_H_
