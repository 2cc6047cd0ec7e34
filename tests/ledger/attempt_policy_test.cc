#include "ledger/attempt_policy.h"

#include <gtest/gtest.h>

#include "cronledger/schedule.h"

namespace cronledger::ledger {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TimePoint At(const char* t) {
  return std::chrono::time_point_cast<milliseconds>(*ParseRfc3339(t));
}

TEST(ExitClasses, DefaultsAndOverrides) {
  EXPECT_EQ(ClassifyExit(0, {}, {}), EndClass::kSucceeded);
  EXPECT_EQ(ClassifyExit(75, {}, {}), EndClass::kRetryable);
  for (int code : {64, 65, 66, 77, 78}) EXPECT_EQ(ClassifyExit(code, {}, {}), EndClass::kPermanent);
  // The shell's "not executable" and "not found": a retry runs the same
  // missing program again.
  EXPECT_EQ(ClassifyExit(126, {}, {}), EndClass::kPermanent);
  EXPECT_EQ(ClassifyExit(127, {}, {}), EndClass::kPermanent);
  EXPECT_EQ(ClassifyExit(127, {127}, {}), EndClass::kRetryable);
  EXPECT_EQ(ClassifyExit(1, {}, {}), EndClass::kRetryable);
  EXPECT_EQ(ClassifyExit(65, {65}, {}), EndClass::kRetryable);
  EXPECT_EQ(ClassifyExit(1, {}, {1}), EndClass::kPermanent);
  EXPECT_EQ(ClassifyExit(0, {}, {0}), EndClass::kSucceeded);
}

TEST(ExitClasses, NamesRoundTrip) {
  for (auto c : {EndClass::kSucceeded, EndClass::kRetryable, EndClass::kPermanent,
                 EndClass::kTimeout, EndClass::kSignal, EndClass::kLeaseExpired,
                 EndClass::kSpawnFailed, EndClass::kInDoubt, EndClass::kStale}) {
    EXPECT_EQ(ParseEndClass(Name(c)), c);
  }
  EXPECT_EQ(Name(EndClass::kLeaseExpired), "lease_expired");
  EXPECT_TRUE(IsUncertain(EndClass::kTimeout));
  EXPECT_TRUE(IsUncertain(EndClass::kLeaseExpired));
  EXPECT_FALSE(IsUncertain(EndClass::kRetryable));
}

TEST(Backoff, FollowsTheFormula) {
  ledger::RetryPolicy p;
  p.initial_backoff = milliseconds{30000};
  p.multiplier = 2.0;
  p.max_backoff = milliseconds{600000};
  p.jitter = 0.0;
  EXPECT_EQ(Backoff(p, 1, 0.5), milliseconds{30000});
  EXPECT_EQ(Backoff(p, 2, 0.5), milliseconds{60000});
  EXPECT_EQ(Backoff(p, 3, 0.5), milliseconds{120000});
  EXPECT_EQ(Backoff(p, 10, 0.5), milliseconds{600000});  // capped
  p.jitter = 0.2;
  EXPECT_EQ(Backoff(p, 1, 0.0), milliseconds{24000});
  EXPECT_EQ(Backoff(p, 1, 0.5), milliseconds{30000});
  EXPECT_EQ(Backoff(p, 1, 0.999999), milliseconds{36000});
}

AttemptFacts Facts(EndClass end, int attempts, bool idempotent = false) {
  AttemptFacts f;
  f.end = end;
  f.step_idempotent = idempotent;
  f.budget_attempts = attempts;
  f.budget_started_at = At("2026-11-05T09:00:00Z");
  f.now = At("2026-11-05T09:01:00Z");
  return f;
}

TEST(DecideAfterAttempt, SucceededPermanentAndUnknown) {
  ledger::RetryPolicy p;
  EXPECT_EQ(DecideAfterAttempt(p, Facts(EndClass::kSucceeded, 1)).state, RunState::kSucceeded);
  const auto permanent = DecideAfterAttempt(p, Facts(EndClass::kPermanent, 1));
  EXPECT_EQ(permanent.state, RunState::kFailed);
  EXPECT_EQ(permanent.reason, "permanent failure: not retried");
  EXPECT_EQ(DecideAfterAttempt(p, Facts(EndClass::kSpawnFailed, 1)).state, RunState::kFailed);
  const auto unsafe = DecideAfterAttempt(p, Facts(EndClass::kTimeout, 1, false));
  EXPECT_EQ(unsafe.state, RunState::kUnknown);
  EXPECT_EQ(unsafe.reason, "timeout of a step that is not idempotent: it may have had its effect");
  EXPECT_EQ(DecideAfterAttempt(p, Facts(EndClass::kInDoubt, 1, true)).state, RunState::kUnknown);
}

TEST(DecideAfterAttempt, RetriesUntilTheBudgetIsSpent) {
  ledger::RetryPolicy p;
  p.max_attempts = 3;
  p.jitter = 0.0;
  const auto first = DecideAfterAttempt(p, Facts(EndClass::kRetryable, 1));
  EXPECT_EQ(first.state, RunState::kPending);
  EXPECT_EQ(first.next_attempt_at, At("2026-11-05T09:01:30Z"));
  EXPECT_EQ(first.reason, "retryable: attempt 2 of 3");
  // An uncertain end of an idempotent step is retried too.
  const auto lease = DecideAfterAttempt(p, Facts(EndClass::kLeaseExpired, 2, true));
  EXPECT_EQ(lease.state, RunState::kPending);
  EXPECT_EQ(lease.next_attempt_at, At("2026-11-05T09:02:00Z"));
  const auto exhausted = DecideAfterAttempt(p, Facts(EndClass::kRetryable, 3));
  EXPECT_EQ(exhausted.state, RunState::kFailed);
  EXPECT_EQ(exhausted.reason, "retries exhausted after 3 attempt(s) (last: retryable)");
}

TEST(DecideAfterAttempt, MaxRetryDurationCountsFromTheFirstStart) {
  ledger::RetryPolicy p;
  p.max_attempts = 100;
  p.jitter = 0.0;
  p.max_retry_duration = seconds{60};
  const auto d = DecideAfterAttempt(p, Facts(EndClass::kRetryable, 1));  // 09:01 + 30 s > 09:01
  EXPECT_EQ(d.state, RunState::kFailed);
  EXPECT_EQ(d.reason, "max_retry_duration exceeded (last: retryable)");
}

}  // namespace
}  // namespace cronledger::ledger
