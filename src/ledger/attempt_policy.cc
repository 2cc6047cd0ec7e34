#include "ledger/attempt_policy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace cronledger::ledger {
namespace {

constexpr std::array<std::pair<EndClass, std::string_view>, 9> kEndClasses = {{
    {EndClass::kSucceeded, "succeeded"},
    {EndClass::kRetryable, "retryable"},
    {EndClass::kPermanent, "permanent"},
    {EndClass::kTimeout, "timeout"},
    {EndClass::kSignal, "signal"},
    {EndClass::kLeaseExpired, "lease_expired"},
    {EndClass::kSpawnFailed, "spawn_failed"},
    {EndClass::kInDoubt, "in_doubt"},
    {EndClass::kStale, "stale"},
}};

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::string_view Name(EndClass c) {
  for (const auto& [v, name] : kEndClasses) {
    if (v == c) return name;
  }
  return "invalid";
}

std::optional<EndClass> ParseEndClass(std::string_view s) {
  for (const auto& [v, name] : kEndClasses) {
    if (name == s) return v;
  }
  return std::nullopt;
}

bool IsUncertain(EndClass c) {
  return c == EndClass::kTimeout || c == EndClass::kSignal || c == EndClass::kLeaseExpired;
}

EndClass ClassifyExit(int exit_status, const std::vector<int>& retry_codes,
                      const std::vector<int>& fail_codes) {
  if (exit_status == 0) return EndClass::kSucceeded;
  if (Contains(retry_codes, exit_status)) return EndClass::kRetryable;
  if (Contains(fail_codes, exit_status)) return EndClass::kPermanent;
  switch (exit_status) {
    case 64:  // EX_USAGE
    case 65:  // EX_DATAERR
    case 66:  // EX_NOINPUT
    case 77:  // EX_NOPERM
    case 78:  // EX_CONFIG
    // The shell's "not executable" and "not found": retrying runs the same
    // missing program again.
    case 126:
    case 127:
      return EndClass::kPermanent;
    default:
      return EndClass::kRetryable;  // 75 (EX_TEMPFAIL) among them
  }
}

std::chrono::milliseconds Backoff(const ledger::RetryPolicy& policy, int n, double jitter_sample) {
  const double base = static_cast<double>(policy.initial_backoff.count()) *
                      std::pow(policy.multiplier, std::max(0, n - 1));
  const double capped = std::min(base, static_cast<double>(policy.max_backoff.count()));
  const double factor = 1.0 - policy.jitter + 2.0 * policy.jitter * jitter_sample;
  return std::chrono::milliseconds{static_cast<int64_t>(std::llround(capped * factor))};
}

AttemptDecision DecideAfterAttempt(const ledger::RetryPolicy& policy, const AttemptFacts& f) {
  AttemptDecision d;
  if (f.end == EndClass::kSucceeded) {
    d.state = RunState::kSucceeded;
    return d;
  }
  if (f.end == EndClass::kPermanent || f.end == EndClass::kSpawnFailed) {
    d.state = RunState::kFailed;
    d.reason = fmt::format("{} failure: not retried", Name(f.end));
    return d;
  }
  if (f.end == EndClass::kInDoubt || (IsUncertain(f.end) && !f.step_idempotent)) {
    d.state = RunState::kUnknown;
    d.reason = f.end == EndClass::kInDoubt
                   ? "an effect is in doubt"
                   : fmt::format("{} of a step that is not idempotent: it may have had its effect",
                                 Name(f.end));
    return d;
  }
  if (f.budget_attempts >= policy.max_attempts) {
    d.state = RunState::kFailed;
    d.reason = fmt::format("retries exhausted after {} attempt(s) (last: {})", f.budget_attempts,
                           Name(f.end));
    return d;
  }
  const auto next = f.now + Backoff(policy, f.budget_attempts, f.jitter_sample);
  if (next - f.budget_started_at > policy.max_retry_duration) {
    d.state = RunState::kFailed;
    d.reason = fmt::format("max_retry_duration exceeded (last: {})", Name(f.end));
    return d;
  }
  d.state = RunState::kPending;
  d.next_attempt_at = next;
  d.reason = fmt::format("{}: attempt {} of {}", Name(f.end), f.budget_attempts + 1,
                         policy.max_attempts);
  return d;
}

}  // namespace cronledger::ledger
